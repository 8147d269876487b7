//! Bindings for views, indexing (`__getitem__`/`__setitem__`/`__iter__`), the gather/scatter
//! family and joins. Argument conversion only: the logic is in `tensor::{view,index,join}`.

use super::convert::{
    extract_i64_seq, extract_index_int, extract_scalar, extract_shape_args, PyDType,
};
use super::numpy_interop::{from_numpy_any, is_ndarray};
use super::run;
use super::tensor::{extract_operand, size_object, tensor_from_data, to_tensor, Operand, PyTensor};
use crate::dtype::Category;
use crate::tensor::join;
use crate::tensor::{TensorIndex, TensorOrScalar};
use crate::{DType, Scalar, Tensor};
use pyo3::exceptions::{PyIndexError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyEllipsis, PyInt, PyList, PySequence, PySlice, PyString, PyTuple};

// ---------------------------------------------------------------------- argument helpers

/// Positional shape/dims (`f(2, 3)`, `f((2, 3))`) or the keyword form.
fn shape_args(
    args: &Bound<'_, PyTuple>,
    kw: Option<&Bound<'_, PyAny>>,
    name: &str,
) -> PyResult<Vec<i64>> {
    match kw {
        Some(k) if args.is_empty() => int_or_seq(k),
        Some(_) => Err(PyTypeError::new_err(format!(
            "{name} given both positionally and by keyword"
        ))),
        None => extract_shape_args(args),
    }
}

/// An int or a sequence of ints.
fn int_or_seq(obj: &Bound<'_, PyAny>) -> PyResult<Vec<i64>> {
    if let Ok(v) = extract_index_int(obj) {
        return Ok(vec![v]);
    }
    extract_i64_seq(obj)
}

fn py_tuple<'py>(py: Python<'py>, ts: Vec<Tensor>) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(py, ts.into_iter().map(PyTensor::from))
}

/// A sequence of tensor-likes.
fn tensor_list(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Tensor>> {
    if obj.cast::<PyTensor>().is_ok() {
        return Err(PyTypeError::new_err(
            "expected a sequence of Tensors, got a single Tensor",
        ));
    }
    let seq = obj
        .cast::<PySequence>()
        .map_err(|_| PyTypeError::new_err("expected a sequence of Tensors"))?;
    (0..seq.len()?)
        .map(|i| to_tensor(&seq.get_item(i)?))
        .collect()
}

/// `*tensors` or a single sequence of tensors.
fn varargs_tensors(args: &Bound<'_, PyTuple>) -> PyResult<Vec<Tensor>> {
    if args.len() == 1 {
        let a = args.get_item(0)?;
        if a.cast::<PyTensor>().is_err()
            && (a.cast::<PyList>().is_ok() || a.cast::<PyTuple>().is_ok())
        {
            return tensor_list(&a);
        }
    }
    args.iter().map(|a| to_tensor(&a)).collect()
}

/// A scalar fill value (a number or a 0-d tensor) for a tensor of `dtype`: as in PyTorch
/// (masked_fill, index_fill) a value the dtype cannot hold is an error ("value cannot be
/// converted to type uint8_t without overflow"), not wrapped.
fn fill_value(obj: &Bound<'_, PyAny>, op: &str, dtype: DType) -> PyResult<Scalar> {
    let v = match extract_operand(obj) {
        Some(Operand::Scalar(s)) => s,
        Some(Operand::Tensor(t)) if t.ndim() == 0 => t.item()?,
        Some(Operand::Tensor(t)) => {
            return Err(PyRuntimeError::new_err(format!(
            "{op} only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
            t.ndim()
        )))
        }
        None => {
            return Err(PyTypeError::new_err(format!(
                "{op}(): value must be a number or a 0-dimensional tensor"
            )))
        }
    };
    v.check_fits(dtype)?;
    Ok(v)
}

fn tensor_or_scalar(obj: &Bound<'_, PyAny>) -> PyResult<TensorOrScalar> {
    Ok(match extract_operand(obj) {
        Some(Operand::Tensor(t)) => TensorOrScalar::Tensor(t),
        Some(Operand::Scalar(s)) => TensorOrScalar::Scalar(s),
        None => TensorOrScalar::Tensor(tensor_from_data(obj, None)?),
    })
}

/// Copy `result` into `out` when given (shapes must agree), else return it.
fn with_out(
    py: Python<'_>,
    result: Tensor,
    out: Option<&Bound<'_, PyTensor>>,
) -> PyResult<Py<PyAny>> {
    match out {
        None => Ok(Py::new(py, PyTensor::from(result))?.into_any()),
        Some(o) => {
            let ot = o.borrow().inner.clone();
            if ot.shape() != result.shape() {
                return Err(PyRuntimeError::new_err(format!(
                    "out tensor has shape {:?} but the result has shape {:?} (resizing `out` is not supported)",
                    ot.shape(),
                    result.shape()
                )));
            }
            run(py, ot.numel(), || ot.copy_(&result))?;
            Ok(o.clone().into_any().unbind())
        }
    }
}

// ---------------------------------------------------------------------- index parsing

fn is_sequence_like(obj: &Bound<'_, PyAny>) -> bool {
    !obj.is_instance_of::<PyString>()
        && obj.cast::<PyTensor>().is_err()
        && (obj.cast::<PyList>().is_ok() || obj.cast::<PyTuple>().is_ok() || is_ndarray(obj))
}

/// PyTorch's rule: a short list that contains slices, None, Ellipsis, tensors or sequences is
/// read as a tuple of indices.
fn treat_sequence_as_tuple(obj: &Bound<'_, PyAny>) -> bool {
    let Ok(list) = obj.cast::<PyList>() else {
        return false;
    };
    if list.len() >= 32 {
        return false;
    }
    list.iter().any(|it| {
        it.is_none()
            || it.is_instance_of::<PyEllipsis>()
            || it.is_instance_of::<PySlice>()
            || it.cast::<PyTensor>().is_ok()
            || is_sequence_like(&it)
    })
}

fn bad_index(obj: &Bound<'_, PyAny>) -> PyErr {
    let name = obj
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_default();
    PyIndexError::new_err(format!(
        "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices (got {name})"
    ))
}

fn check_index_tensor(t: Tensor) -> PyResult<Tensor> {
    match t.dtype().category() {
        Category::Float if t.numel() == 0 => Ok(t.to_dtype(DType::I64)),
        Category::Float => Err(PyIndexError::new_err(
            "tensors used as indices must be long, int, byte or bool tensors",
        )),
        _ => Ok(t),
    }
}

fn slice_part(obj: &Bound<'_, PyAny>) -> PyResult<Option<i64>> {
    if obj.is_none() {
        Ok(None)
    } else {
        extract_index_int(obj).map(Some).map_err(|_| {
            PyTypeError::new_err(
                "slice indices must be integers or None or have an __index__ method",
            )
        })
    }
}

fn parse_one(obj: &Bound<'_, PyAny>) -> PyResult<TensorIndex> {
    if obj.is_none() {
        return Ok(TensorIndex::NewAxis);
    }
    if obj.is_instance_of::<PyEllipsis>() {
        return Ok(TensorIndex::Ellipsis);
    }
    if obj.is_instance_of::<PyBool>() {
        return Ok(TensorIndex::Bool(obj.extract()?));
    }
    if obj.is_instance_of::<PyInt>() {
        return obj
            .extract::<i64>()
            .map(TensorIndex::Int)
            .map_err(|_| PyIndexError::new_err("index is too large"));
    }
    if let Ok(s) = obj.cast::<PySlice>() {
        let start = slice_part(&s.getattr("start")?)?;
        let stop = slice_part(&s.getattr("stop")?)?;
        let step = slice_part(&s.getattr("step")?)?.unwrap_or(1);
        return Ok(TensorIndex::Slice { start, stop, step });
    }
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(TensorIndex::Tensor(check_index_tensor(
            t.borrow().inner.clone(),
        )?));
    }
    if is_ndarray(obj) {
        let t = from_numpy_any(obj).map_err(|_| bad_index(obj))?;
        return Ok(TensorIndex::Tensor(check_index_tensor(t)?));
    }
    if let Some(s) = extract_scalar(obj) {
        return match s {
            Scalar::Bool(b) => Ok(TensorIndex::Bool(b)),
            Scalar::Int(i) => Ok(TensorIndex::Int(i)),
            Scalar::Float(_) => Err(bad_index(obj)),
        };
    }
    if obj.is_instance_of::<PyString>() {
        return Err(bad_index(obj));
    }
    if obj.cast::<PySequence>().is_ok() {
        let t = tensor_from_data(obj, None).map_err(|_| bad_index(obj))?;
        return Ok(TensorIndex::Tensor(check_index_tensor(t)?));
    }
    // Objects with __index__ (e.g. custom integer types).
    if let Ok(i) = extract_index_int(obj) {
        return Ok(TensorIndex::Int(i));
    }
    Err(bad_index(obj))
}

/// A Python index (`t[...]` key) as a list of entries.
fn parse_index(obj: &Bound<'_, PyAny>) -> PyResult<Vec<TensorIndex>> {
    if let Ok(t) = obj.cast::<PyTuple>() {
        return t.iter().map(|i| parse_one(&i)).collect();
    }
    if treat_sequence_as_tuple(obj) {
        let l = obj.cast::<PyList>()?;
        return l.iter().map(|i| parse_one(&i)).collect();
    }
    Ok(vec![parse_one(obj)?])
}

/// `index_put_`-style indices: a tuple of tensors (None means a full slice).
fn parse_index_tensors(obj: &Bound<'_, PyAny>) -> PyResult<Vec<TensorIndex>> {
    let seq = obj
        .cast::<PySequence>()
        .map_err(|_| PyTypeError::new_err("indices must be a tuple of Tensors"))?;
    (0..seq.len()?)
        .map(|i| {
            let it = seq.get_item(i)?;
            if it.is_none() {
                Ok(TensorIndex::full())
            } else {
                Ok(TensorIndex::Tensor(check_index_tensor(to_tensor(&it)?)?))
            }
        })
        .collect()
}

/// PyTorch's rule for an advanced-index assignment: a tensor value must have the destination's
/// dtype (basic indexing casts, and so does a lone bool mask with a 0-d value, which PyTorch
/// runs as `masked_fill_`).
fn check_index_put_dtypes(t: &Tensor, idx: &[TensorIndex], value: &Tensor) -> PyResult<()> {
    if value.dtype() == t.dtype() {
        return Ok(());
    }
    let tensors: Vec<&Tensor> = idx
        .iter()
        .filter_map(|i| match i {
            TensorIndex::Tensor(x) => Some(x),
            _ => None,
        })
        .collect();
    let lone_mask_fill =
        tensors.len() == 1 && tensors[0].dtype() == DType::Bool && value.ndim() == 0;
    if tensors.is_empty() || lone_mask_fill {
        return Ok(());
    }
    Err(PyRuntimeError::new_err(format!(
        "Index put requires the source and destination dtypes match, got {} for the \
         destination and {} for the source.",
        t.dtype().torch_name(),
        value.dtype().torch_name()
    )))
}

/// The value of `t[...] = value` as a tensor of `t`'s dtype, and whether it was a Python
/// number (PyTorch writes a number as a fill).
fn setitem_value(value: &Bound<'_, PyAny>, dtype: DType) -> PyResult<(Tensor, bool)> {
    Ok(match extract_operand(value) {
        Some(Operand::Tensor(v)) => (v, false),
        Some(Operand::Scalar(s)) => {
            // As PyTorch: a number the dtype cannot hold is an error, not wrapped (`x[0] =
            // 1000` on int8). Half/bfloat16 are left unchecked: PyTorch checks them only when
            // the indexed region has more than one element, which is not known here.
            if !matches!(dtype, DType::F16 | DType::BF16) {
                s.check_fits(dtype)?;
            }
            (Tensor::scalar(s, dtype), true)
        }
        None => (tensor_from_data(value, Some(dtype))?, false),
    })
}

// ---------------------------------------------------------------------- Tensor methods

#[pymethods]
impl PyTensor {
    // ------------------------------------------------------------ views
    /// `view(*shape)`: same data, new shape (no copy; fails if strides don't allow it).
    /// `view(dtype)`: the same bytes as another dtype (no copy; see `Tensor::view_dtype`).
    #[pyo3(signature = (*args, size=None, dtype=None))]
    fn view(
        &self,
        args: &Bound<'_, PyTuple>,
        size: Option<&Bound<'_, PyAny>>,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let positional_dtype = match args.len() {
            1 => args.get_item(0)?.extract::<PyDType>().ok(),
            _ => None,
        };
        match (positional_dtype, dtype) {
            (Some(d), None) if size.is_none() => return Ok(self.inner.view_dtype(d.0)?.into()),
            (None, Some(d)) if args.is_empty() && size.is_none() => {
                let d = d.extract::<PyDType>().map_err(|_| {
                    PyTypeError::new_err(format!(
                        "view(): argument 'dtype' must be torch.dtype, not {}",
                        d.get_type().name().map(|n| n.to_string()).unwrap_or_default()
                    ))
                })?;
                return Ok(self.inner.view_dtype(d.0)?.into());
            }
            (None, None) => {}
            _ => {
                return Err(PyTypeError::new_err(
                    "view() received an invalid combination of arguments: expected (torch.dtype dtype) or (tuple of ints size)",
                ))
            }
        }
        let s = shape_args(args, size, "size")?;
        Ok(self.inner.view(&s)?.into())
    }
    /// `reshape(*shape)`: a view when possible, else a copy.
    #[pyo3(signature = (*args, shape=None))]
    fn reshape(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        shape: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let s = shape_args(args, shape, "shape")?;
        let t = &self.inner;
        Ok(run(py, t.numel(), || t.reshape(&s))?.into())
    }
    fn view_as(&self, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let s: Vec<i64> = other.inner.shape().iter().map(|&x| x as i64).collect();
        Ok(self.inner.view(&s)?.into())
    }
    fn reshape_as(&self, py: Python<'_>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let s: Vec<i64> = other.inner.shape().iter().map(|&x| x as i64).collect();
        let t = &self.inner;
        Ok(run(py, t.numel(), || t.reshape(&s))?.into())
    }
    #[pyo3(signature = (start_dim=0, end_dim=-1))]
    fn flatten(&self, py: Python<'_>, start_dim: i64, end_dim: i64) -> PyResult<PyTensor> {
        let t = &self.inner;
        Ok(run(py, t.numel(), || t.flatten(start_dim, end_dim))?.into())
    }
    fn unflatten(&self, dim: i64, sizes: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        Ok(self.inner.unflatten(dim, &int_or_seq(sizes)?)?.into())
    }
    #[pyo3(signature = (dim=None))]
    fn squeeze(&self, dim: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        let dims = match dim {
            None => None,
            Some(d) if d.is_none() => None,
            Some(d) => Some(int_or_seq(d)?),
        };
        Ok(self.inner.squeeze(dims.as_deref())?.into())
    }
    fn unsqueeze(&self, dim: i64) -> PyResult<PyTensor> {
        Ok(self.inner.unsqueeze(dim)?.into())
    }
    #[pyo3(signature = (*args, dims=None))]
    fn permute(
        &self,
        args: &Bound<'_, PyTuple>,
        dims: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        Ok(self.inner.permute(&shape_args(args, dims, "dims")?)?.into())
    }
    fn transpose(&self, dim0: i64, dim1: i64) -> PyResult<PyTensor> {
        Ok(self.inner.transpose(dim0, dim1)?.into())
    }
    fn swapaxes(&self, axis0: i64, axis1: i64) -> PyResult<PyTensor> {
        Ok(self.inner.swapaxes(axis0, axis1)?.into())
    }
    fn swapdims(&self, dim0: i64, dim1: i64) -> PyResult<PyTensor> {
        Ok(self.inner.swapaxes(dim0, dim1)?.into())
    }
    fn t(&self) -> PyResult<PyTensor> {
        Ok(self.inner.t()?.into())
    }
    #[getter(T)]
    fn t_property(&self) -> PyTensor {
        self.inner.reverse_dims().into()
    }
    #[getter(H)]
    fn h_property(&self) -> PyResult<PyTensor> {
        if !matches!(self.inner.ndim(), 0 | 2) {
            return Err(PyRuntimeError::new_err(format!(
                "tensor.H is only supported on matrices (2-D tensors). Got {}-D tensor.",
                self.inner.ndim()
            )));
        }
        Ok(self.inner.reverse_dims().into())
    }
    #[getter(mT)]
    fn mt_property(&self) -> PyResult<PyTensor> {
        Ok(self.inner.mt()?.into())
    }
    #[getter(mH)]
    fn mh_property(&self) -> PyResult<PyTensor> {
        Ok(self.inner.mt()?.into())
    }
    fn adjoint(&self) -> PyResult<PyTensor> {
        Ok(self.inner.mt()?.into())
    }
    #[pyo3(signature = (*args, size=None))]
    fn expand(
        &self,
        args: &Bound<'_, PyTuple>,
        size: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        Ok(self.inner.expand(&shape_args(args, size, "size")?)?.into())
    }
    fn expand_as(&self, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        Ok(self.inner.broadcast_to(other.inner.shape())?.into())
    }
    fn broadcast_to(&self, size: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let s = int_or_seq(size)?;
        Ok(self.inner.expand(&s)?.into())
    }
    fn narrow(&self, dim: i64, start: &Bound<'_, PyAny>, length: i64) -> PyResult<PyTensor> {
        Ok(self
            .inner
            .narrow(dim, extract_index_int(start)?, length)?
            .into())
    }
    fn select(&self, dim: i64, index: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        Ok(self.inner.select(dim, extract_index_int(index)?)?.into())
    }
    #[pyo3(signature = (dim=0))]
    fn unbind<'py>(&self, py: Python<'py>, dim: i64) -> PyResult<Bound<'py, PyTuple>> {
        py_tuple(py, self.inner.unbind(dim)?)
    }
    /// `Tensor.split(split_size, dim=0)`; `split_size_or_sections=` (torch.split's name) is
    /// accepted too.
    #[pyo3(signature = (split_size=None, dim=0, *, split_size_or_sections=None))]
    fn split<'py>(
        &self,
        py: Python<'py>,
        split_size: Option<&Bound<'py, PyAny>>,
        dim: i64,
        split_size_or_sections: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let Some(split_size_or_sections) = split_size.or(split_size_or_sections) else {
            return Err(PyTypeError::new_err(
                "split() missing 1 required positional argument: 'split_size'",
            ));
        };
        let parts = if let Ok(n) = extract_index_int(split_size_or_sections) {
            self.inner.split(n, dim)?
        } else {
            self.inner
                .split_with_sizes(&extract_i64_seq(split_size_or_sections)?, dim)?
        };
        py_tuple(py, parts)
    }
    #[pyo3(signature = (split_sizes, dim=0))]
    fn split_with_sizes<'py>(
        &self,
        py: Python<'py>,
        split_sizes: &Bound<'py, PyAny>,
        dim: i64,
    ) -> PyResult<Bound<'py, PyTuple>> {
        py_tuple(
            py,
            self.inner
                .split_with_sizes(&extract_i64_seq(split_sizes)?, dim)?,
        )
    }
    #[pyo3(signature = (chunks, dim=0))]
    fn chunk<'py>(&self, py: Python<'py>, chunks: i64, dim: i64) -> PyResult<Bound<'py, PyTuple>> {
        py_tuple(py, self.inner.chunk(chunks, dim)?)
    }
    #[pyo3(signature = (indices_or_sections, dim=0))]
    fn tensor_split<'py>(
        &self,
        py: Python<'py>,
        indices_or_sections: &Bound<'py, PyAny>,
        dim: i64,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let arg = indices_or_sections;
        let parts = if let Ok(t) = arg.cast::<PyTensor>() {
            let t = t.borrow().inner.clone();
            if t.ndim() == 0 {
                self.inner.tensor_split_sections(t.item()?.to_i64(), dim)?
            } else {
                let v = t.to_dtype(DType::I64).to_vec::<i64>()?;
                self.inner.tensor_split_indices(&v, dim)?
            }
        } else if let Ok(n) = extract_index_int(arg) {
            self.inner.tensor_split_sections(n, dim)?
        } else {
            self.inner
                .tensor_split_indices(&extract_i64_seq(arg)?, dim)?
        };
        py_tuple(py, parts)
    }
    fn movedim(
        &self,
        source: &Bound<'_, PyAny>,
        destination: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        Ok(self
            .inner
            .movedim(&int_or_seq(source)?, &int_or_seq(destination)?)?
            .into())
    }
    fn moveaxis(
        &self,
        source: &Bound<'_, PyAny>,
        destination: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        self.movedim(source, destination)
    }
    #[pyo3(signature = (offset=0, dim1=0, dim2=1))]
    fn diagonal(&self, offset: i64, dim1: i64, dim2: i64) -> PyResult<PyTensor> {
        Ok(self.inner.diagonal(offset, dim1, dim2)?.into())
    }
    #[pyo3(signature = (size, stride, storage_offset=None))]
    fn as_strided(
        &self,
        size: &Bound<'_, PyAny>,
        stride: &Bound<'_, PyAny>,
        storage_offset: Option<i64>,
    ) -> PyResult<PyTensor> {
        Ok(self
            .inner
            .as_strided(&int_or_seq(size)?, &int_or_seq(stride)?, storage_offset)?
            .into())
    }
    fn unfold(&self, dimension: i64, size: i64, step: i64) -> PyResult<PyTensor> {
        Ok(self.inner.unfold(dimension, size, step)?.into())
    }

    fn ravel(&self, py: Python<'_>) -> PyResult<PyTensor> {
        let t = &self.inner;
        Ok(run(py, t.numel(), || t.reshape(&[-1]))?.into())
    }

    // ------------------------------------------------------------ in-place view ops
    // These swap the Python object's view (same storage) like PyTorch's in-place
    // metadata ops (see `swap_view`).
    #[pyo3(signature = (dim=None))]
    fn squeeze_<'py>(
        slf: Bound<'py, Self>,
        dim: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        Self::swap_view(slf, "squeeze", |t| Ok(t.squeeze(dim)?.inner))
    }
    fn unsqueeze_(slf: Bound<'_, Self>, dim: i64) -> PyResult<Bound<'_, Self>> {
        Self::swap_view(slf, "unsqueeze", |t| Ok(t.inner.unsqueeze(dim)?))
    }
    fn transpose_(slf: Bound<'_, Self>, dim0: i64, dim1: i64) -> PyResult<Bound<'_, Self>> {
        Self::swap_view(slf, "transpose", |t| Ok(t.inner.transpose(dim0, dim1)?))
    }
    fn swapaxes_(slf: Bound<'_, Self>, axis0: i64, axis1: i64) -> PyResult<Bound<'_, Self>> {
        Self::transpose_(slf, axis0, axis1)
    }
    fn swapdims_(slf: Bound<'_, Self>, dim0: i64, dim1: i64) -> PyResult<Bound<'_, Self>> {
        Self::transpose_(slf, dim0, dim1)
    }
    fn t_(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        Self::swap_view(slf, "t", |t| Ok(t.inner.t()?))
    }
    #[pyo3(signature = (size, stride, storage_offset=None))]
    fn as_strided_<'py>(
        slf: Bound<'py, Self>,
        size: &Bound<'py, PyAny>,
        stride: &Bound<'py, PyAny>,
        storage_offset: Option<i64>,
    ) -> PyResult<Bound<'py, Self>> {
        Self::swap_view(slf, "as_strided", |t| {
            Ok(t.as_strided(size, stride, storage_offset)?.inner)
        })
    }

    /// `element in t`: whether any element equals `element`.
    fn __contains__(&self, py: Python<'_>, element: &Bound<'_, PyAny>) -> PyResult<bool> {
        let t = &self.inner;
        let eq = match extract_operand(element) {
            Some(Operand::Tensor(e)) => run(py, t.numel(), || t.binary(&e, crate::BinaryOp::Eq))?,
            Some(Operand::Scalar(s)) => run(py, t.numel(), || {
                t.binary_scalar(s, crate::BinaryOp::Eq, false)
            })?,
            None => {
                return Err(PyRuntimeError::new_err(format!(
                    "Tensor.__contains__ only supports Tensor or scalar, but you passed in a {}.",
                    element.get_type().name()?
                )))
            }
        };
        Ok(run(py, eq.numel(), || eq.nonzero())?.shape()[0] > 0)
    }

    // ------------------------------------------------------------ indexing
    fn __getitem__(&self, py: Python<'_>, index: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        // Fast path: a plain int.
        if index.is_instance_of::<PyInt>() && !index.is_instance_of::<PyBool>() {
            if let Ok(i) = index.extract::<i64>() {
                let t = &self.inner;
                if t.ndim() == 0 {
                    return Err(PyIndexError::new_err(
                        "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ to convert a 0-dim tensor to a number",
                    ));
                }
                return Ok(t.index(&[TensorIndex::Int(i)])?.into());
            }
        }
        let idx = parse_index(index)?;
        let t = &self.inner;
        Ok(run(py, t.numel(), || t.index(&idx))?.into())
    }
    fn __setitem__(
        &self,
        py: Python<'_>,
        index: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let idx = parse_index(index)?;
        let t = &self.inner;
        let (v, number) = setitem_value(value, t.dtype())?;
        check_index_put_dtypes(t, &idx, &v)?;
        if number {
            return run(py, t.numel(), || t.index_put_number_(&idx, &v));
        }
        run(py, t.numel(), || t.index_put_(&idx, &v, false))
    }
    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if self.inner.ndim() == 0 {
            return Err(PyTypeError::new_err("iteration over a 0-d tensor"));
        }
        let items = py_tuple(py, self.inner.unbind(0)?)?;
        Ok(items.try_iter()?.into_any())
    }
    #[pyo3(signature = (indices, values, accumulate=false))]
    fn index_put_<'py>(
        slf: Bound<'py, Self>,
        indices: &Bound<'py, PyAny>,
        values: &Bound<'py, PyAny>,
        accumulate: bool,
    ) -> PyResult<Bound<'py, Self>> {
        let t = slf.borrow().inner.clone();
        let idx = parse_index_tensors(indices)?;
        let (v, _) = setitem_value(values, t.dtype())?;
        check_index_put_dtypes(&t, &idx, &v)?;
        run(slf.py(), t.numel(), || t.index_put_(&idx, &v, accumulate))?;
        Ok(slf)
    }
    #[pyo3(signature = (indices, values, accumulate=false))]
    fn index_put(
        &self,
        py: Python<'_>,
        indices: &Bound<'_, PyAny>,
        values: &Bound<'_, PyAny>,
        accumulate: bool,
    ) -> PyResult<PyTensor> {
        let t = &self.inner;
        let idx = parse_index_tensors(indices)?;
        let (v, _) = setitem_value(values, t.dtype())?;
        Ok(run(py, t.numel(), || t.index_put(&idx, &v, accumulate))?.into())
    }

    // ------------------------------------------------------------ gather / scatter family
    fn index_select(
        &self,
        py: Python<'_>,
        dim: i64,
        index: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        let (t, i) = (&self.inner, to_tensor(index)?);
        Ok(run(py, t.numel(), || t.index_select(dim, &i))?.into())
    }
    #[pyo3(signature = (dim, index, *, sparse_grad=false))]
    fn gather(
        &self,
        py: Python<'_>,
        dim: i64,
        index: &Bound<'_, PyAny>,
        sparse_grad: bool,
    ) -> PyResult<PyTensor> {
        let _ = sparse_grad;
        let (t, i) = (&self.inner, to_tensor(index)?);
        Ok(run(py, i.numel(), || t.gather(dim, &i))?.into())
    }
    #[pyo3(signature = (dim, index, src=None, *, value=None, reduce=None))]
    fn scatter_<'py>(
        slf: Bound<'py, Self>,
        dim: i64,
        index: &Bound<'py, PyAny>,
        src: Option<&Bound<'py, PyAny>>,
        value: Option<&Bound<'py, PyAny>>,
        reduce: Option<&str>,
    ) -> PyResult<Bound<'py, Self>> {
        let t = slf.borrow().inner.clone();
        let out = scatter_impl(slf.py(), &t, dim, index, src, value, reduce, true)?;
        if !out.same_tensor(&t) {
            run(slf.py(), t.numel(), || t.copy_(&out))?;
        }
        Ok(slf)
    }
    #[pyo3(signature = (dim, index, src=None, *, value=None, reduce=None))]
    fn scatter(
        &self,
        py: Python<'_>,
        dim: i64,
        index: &Bound<'_, PyAny>,
        src: Option<&Bound<'_, PyAny>>,
        value: Option<&Bound<'_, PyAny>>,
        reduce: Option<&str>,
    ) -> PyResult<PyTensor> {
        Ok(scatter_impl(py, &self.inner, dim, index, src, value, reduce, false)?.into())
    }
    fn scatter_add_<'py>(
        slf: Bound<'py, Self>,
        dim: i64,
        index: &Bound<'py, PyAny>,
        src: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        let t = slf.borrow().inner.clone();
        let (i, s) = (to_tensor(index)?, to_tensor(src)?);
        run(slf.py(), i.numel(), || t.scatter_add_(dim, &i, &s))?;
        Ok(slf)
    }
    fn scatter_add(
        &self,
        py: Python<'_>,
        dim: i64,
        index: &Bound<'_, PyAny>,
        src: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        let t = &self.inner;
        let (i, s) = (to_tensor(index)?, to_tensor(src)?);
        Ok(run(py, t.numel(), || t.scatter_add(dim, &i, &s))?.into())
    }
    #[pyo3(signature = (dim, index, src, reduce, *, include_self=true))]
    fn scatter_reduce(
        &self,
        py: Python<'_>,
        dim: i64,
        index: &Bound<'_, PyAny>,
        src: &Bound<'_, PyAny>,
        reduce: &str,
        include_self: bool,
    ) -> PyResult<PyTensor> {
        let t = &self.inner;
        let (i, s) = (to_tensor(index)?, to_tensor(src)?);
        Ok(run(py, t.numel(), || {
            t.scatter_reduce(dim, &i, &s, reduce, include_self)
        })?
        .into())
    }
    #[pyo3(signature = (dim, index, src, reduce, *, include_self=true))]
    fn scatter_reduce_<'py>(
        slf: Bound<'py, Self>,
        dim: i64,
        index: &Bound<'py, PyAny>,
        src: &Bound<'py, PyAny>,
        reduce: &str,
        include_self: bool,
    ) -> PyResult<Bound<'py, Self>> {
        let t = slf.borrow().inner.clone();
        let (i, s) = (to_tensor(index)?, to_tensor(src)?);
        run(slf.py(), t.numel(), || {
            t.scatter_reduce_(dim, &i, &s, reduce, include_self)
        })?;
        Ok(slf)
    }
    #[pyo3(signature = (dim, index, source, *, alpha=None))]
    fn index_add_<'py>(
        slf: Bound<'py, Self>,
        dim: i64,
        index: &Bound<'py, PyAny>,
        source: &Bound<'py, PyAny>,
        alpha: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        let t = slf.borrow().inner.clone();
        let (i, s) = (to_tensor(index)?, to_tensor(source)?);
        let a = alpha_arg(alpha)?;
        run(slf.py(), s.numel(), || t.index_add_(dim, &i, &s, a))?;
        Ok(slf)
    }
    #[pyo3(signature = (dim, index, source, *, alpha=None))]
    fn index_add(
        &self,
        py: Python<'_>,
        dim: i64,
        index: &Bound<'_, PyAny>,
        source: &Bound<'_, PyAny>,
        alpha: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let t = &self.inner;
        let (i, s) = (to_tensor(index)?, to_tensor(source)?);
        let a = alpha_arg(alpha)?;
        Ok(run(py, t.numel(), || t.index_add(dim, &i, &s, a))?.into())
    }
    fn index_copy_<'py>(
        slf: Bound<'py, Self>,
        dim: i64,
        index: &Bound<'py, PyAny>,
        source: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        let t = slf.borrow().inner.clone();
        let (i, s) = (to_tensor(index)?, to_tensor(source)?);
        run(slf.py(), s.numel(), || t.index_copy_(dim, &i, &s))?;
        Ok(slf)
    }
    fn index_copy(
        &self,
        py: Python<'_>,
        dim: i64,
        index: &Bound<'_, PyAny>,
        source: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        let t = &self.inner;
        let (i, s) = (to_tensor(index)?, to_tensor(source)?);
        Ok(run(py, t.numel(), || t.index_copy(dim, &i, &s))?.into())
    }
    fn index_fill_<'py>(
        slf: Bound<'py, Self>,
        dim: i64,
        index: &Bound<'py, PyAny>,
        value: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        let t = slf.borrow().inner.clone();
        let i = to_tensor(index)?;
        let v = fill_value(value, "index_fill_", t.dtype())?;
        run(slf.py(), t.numel(), || t.index_fill_(dim, &i, v))?;
        Ok(slf)
    }
    fn index_fill(
        &self,
        py: Python<'_>,
        dim: i64,
        index: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        let t = &self.inner;
        let i = to_tensor(index)?;
        let v = fill_value(value, "index_fill", t.dtype())?;
        Ok(run(py, t.numel(), || t.index_fill(dim, &i, v))?.into())
    }
    fn masked_fill_<'py>(
        slf: Bound<'py, Self>,
        mask: &Bound<'py, PyAny>,
        value: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        let t = slf.borrow().inner.clone();
        let m = to_tensor(mask)?;
        let v = fill_value(value, "masked_fill_", t.dtype())?;
        run(slf.py(), t.numel(), || t.masked_fill_(&m, v))?;
        Ok(slf)
    }
    fn masked_fill(
        &self,
        py: Python<'_>,
        mask: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        let t = &self.inner;
        let m = to_tensor(mask)?;
        let v = fill_value(value, "masked_fill", t.dtype())?;
        Ok(run(py, t.numel(), || t.masked_fill(&m, v))?.into())
    }
    fn masked_select(&self, py: Python<'_>, mask: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let t = &self.inner;
        let m = to_tensor(mask)?;
        Ok(run(py, t.numel(), || t.masked_select(&m))?.into())
    }
    fn masked_scatter_<'py>(
        slf: Bound<'py, Self>,
        mask: &Bound<'py, PyAny>,
        source: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        let t = slf.borrow().inner.clone();
        let (m, s) = (to_tensor(mask)?, to_tensor(source)?);
        run(slf.py(), t.numel(), || t.masked_scatter_(&m, &s))?;
        Ok(slf)
    }
    fn masked_scatter(
        &self,
        py: Python<'_>,
        mask: &Bound<'_, PyAny>,
        source: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        let t = &self.inner;
        let (m, s) = (to_tensor(mask)?, to_tensor(source)?);
        Ok(run(py, t.numel(), || t.masked_scatter(&m, &s))?.into())
    }
    /// `x.where(condition, y)` is `where(condition, x, y)`.
    #[pyo3(name = "where")]
    fn where_method(
        &self,
        py: Python<'_>,
        condition: &Bound<'_, PyAny>,
        other: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        let c = to_tensor(condition)?;
        let x = TensorOrScalar::Tensor(self.inner.clone());
        let y = tensor_or_scalar(other)?;
        Ok(run(py, self.inner.numel(), || Tensor::where_cond(&c, &x, &y))?.into())
    }
    #[pyo3(signature = (*, as_tuple=false))]
    fn nonzero(&self, py: Python<'_>, as_tuple: bool) -> PyResult<Py<PyAny>> {
        let t = &self.inner;
        if as_tuple {
            let cols = run(py, t.numel(), || t.nonzero_columns())?;
            Ok(py_tuple(py, cols)?.into_any().unbind())
        } else {
            let r = run(py, t.numel(), || t.nonzero())?;
            Ok(Py::new(py, PyTensor::from(r))?.into_any())
        }
    }
    fn argwhere(&self, py: Python<'_>) -> PyResult<PyTensor> {
        let t = &self.inner;
        Ok(run(py, t.numel(), || t.nonzero())?.into())
    }
    fn take(&self, py: Python<'_>, index: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let (t, i) = (&self.inner, to_tensor(index)?);
        Ok(run(py, i.numel(), || t.take(&i))?.into())
    }
    #[pyo3(signature = (indices, dim=None))]
    fn take_along_dim(
        &self,
        py: Python<'_>,
        indices: &Bound<'_, PyAny>,
        dim: Option<i64>,
    ) -> PyResult<PyTensor> {
        let (t, i) = (&self.inner, to_tensor(indices)?);
        Ok(run(py, i.numel(), || t.take_along_dim(&i, dim))?.into())
    }
    #[pyo3(signature = (index, source, accumulate=false))]
    fn put_<'py>(
        slf: Bound<'py, Self>,
        index: &Bound<'py, PyAny>,
        source: &Bound<'py, PyAny>,
        accumulate: bool,
    ) -> PyResult<Bound<'py, Self>> {
        let t = slf.borrow().inner.clone();
        let (i, s) = (to_tensor(index)?, to_tensor(source)?);
        run(slf.py(), i.numel(), || t.put_(&i, &s, accumulate))?;
        Ok(slf)
    }
    #[pyo3(signature = (index, source, accumulate=false))]
    fn put(
        &self,
        py: Python<'_>,
        index: &Bound<'_, PyAny>,
        source: &Bound<'_, PyAny>,
        accumulate: bool,
    ) -> PyResult<PyTensor> {
        let t = &self.inner;
        let (i, s) = (to_tensor(index)?, to_tensor(source)?);
        Ok(run(py, t.numel(), || t.put(&i, &s, accumulate))?.into())
    }

    // ------------------------------------------------------------ rearranging
    #[pyo3(signature = (*args, dims=None))]
    fn flip(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        dims: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let d = shape_args(args, dims, "dims")?;
        let t = &self.inner;
        Ok(run(py, t.numel(), || t.flip(&d))?.into())
    }
    fn fliplr(&self, py: Python<'_>) -> PyResult<PyTensor> {
        let t = &self.inner;
        Ok(run(py, t.numel(), || t.fliplr())?.into())
    }
    fn flipud(&self, py: Python<'_>) -> PyResult<PyTensor> {
        let t = &self.inner;
        Ok(run(py, t.numel(), || t.flipud())?.into())
    }
    #[pyo3(signature = (shifts, dims=None))]
    fn roll(
        &self,
        py: Python<'_>,
        shifts: &Bound<'_, PyAny>,
        dims: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let s = int_or_seq(shifts)?;
        let d = match dims {
            None => vec![],
            Some(d) if d.is_none() => vec![],
            Some(d) => int_or_seq(d)?,
        };
        let t = &self.inner;
        Ok(run(py, t.numel(), || t.roll(&s, &d))?.into())
    }
    #[pyo3(signature = (*args, repeats=None))]
    fn repeat(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        repeats: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let s = shape_args(args, repeats, "repeats")?;
        let t = &self.inner;
        Ok(run(py, t.numel(), || t.repeat(&s))?.into())
    }
    #[pyo3(signature = (*args, dims=None))]
    fn tile(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        dims: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let d = shape_args(args, dims, "dims")?;
        let t = &self.inner;
        Ok(run(py, t.numel(), || t.tile(&d))?.into())
    }
    #[pyo3(signature = (repeats, dim=None, *, output_size=None))]
    fn repeat_interleave(
        &self,
        py: Python<'_>,
        repeats: &Bound<'_, PyAny>,
        dim: Option<i64>,
        output_size: Option<i64>,
    ) -> PyResult<PyTensor> {
        let r = repeats_arg(repeats)?;
        let t = &self.inner;
        let out = run(py, t.numel(), || t.repeat_interleave(&r, dim))?;
        check_output_size(&out, dim, output_size)?;
        Ok(out.into())
    }
    #[pyo3(signature = (diagonal=0))]
    fn tril(&self, py: Python<'_>, diagonal: i64) -> PyResult<PyTensor> {
        let t = &self.inner;
        Ok(run(py, t.numel(), || t.tril(diagonal))?.into())
    }
    #[pyo3(signature = (diagonal=0))]
    fn triu(&self, py: Python<'_>, diagonal: i64) -> PyResult<PyTensor> {
        let t = &self.inner;
        Ok(run(py, t.numel(), || t.triu(diagonal))?.into())
    }
    #[pyo3(signature = (diagonal=0))]
    fn tril_(slf: Bound<'_, Self>, diagonal: i64) -> PyResult<Bound<'_, Self>> {
        let t = slf.borrow().inner.clone();
        run(slf.py(), t.numel(), || t.tril_(diagonal))?;
        Ok(slf)
    }
    #[pyo3(signature = (diagonal=0))]
    fn triu_(slf: Bound<'_, Self>, diagonal: i64) -> PyResult<Bound<'_, Self>> {
        let t = slf.borrow().inner.clone();
        run(slf.py(), t.numel(), || t.triu_(diagonal))?;
        Ok(slf)
    }
    #[pyo3(signature = (diagonal=0))]
    fn diag(&self, py: Python<'_>, diagonal: i64) -> PyResult<PyTensor> {
        let t = &self.inner;
        Ok(run(py, t.numel(), || t.diag(diagonal))?.into())
    }
    #[pyo3(signature = (offset=0, dim1=-2, dim2=-1))]
    fn diag_embed(&self, py: Python<'_>, offset: i64, dim1: i64, dim2: i64) -> PyResult<PyTensor> {
        let t = &self.inner;
        Ok(run(py, t.numel(), || t.diag_embed(offset, dim1, dim2))?.into())
    }
}

fn alpha_arg(alpha: Option<&Bound<'_, PyAny>>) -> PyResult<Scalar> {
    match alpha {
        None => Ok(Scalar::Int(1)),
        Some(a) => extract_scalar(a).ok_or_else(|| PyTypeError::new_err("alpha must be a number")),
    }
}

fn repeats_arg(repeats: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    if let Ok(t) = repeats.cast::<PyTensor>() {
        return Ok(t.borrow().inner.clone());
    }
    if let Ok(n) = extract_index_int(repeats) {
        return Ok(Tensor::scalar(Scalar::Int(n), DType::I64));
    }
    let v = extract_i64_seq(repeats)?;
    let n = v.len();
    Ok(Tensor::from_vec(v, &[n])?)
}

fn check_output_size(out: &Tensor, dim: Option<i64>, output_size: Option<i64>) -> PyResult<()> {
    if let Some(n) = output_size {
        let got = match dim {
            None => out.numel(),
            Some(d) => out.size(d).unwrap_or(out.numel()),
        };
        if got as i64 != n {
            return Err(PyRuntimeError::new_err(format!(
                "repeat_interleave: allocated size does not match required size (output_size={n}, required {got})"
            )));
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn scatter_impl(
    py: Python<'_>,
    t: &Tensor,
    dim: i64,
    index: &Bound<'_, PyAny>,
    src: Option<&Bound<'_, PyAny>>,
    value: Option<&Bound<'_, PyAny>>,
    reduce: Option<&str>,
    in_place: bool,
) -> PyResult<Tensor> {
    let i = to_tensor(index)?;
    let arg = match (src, value) {
        (Some(s), None) | (None, Some(s)) => s,
        _ => {
            return Err(PyTypeError::new_err(
                "scatter() expects exactly one of `src` (a Tensor) or `value` (a number)",
            ))
        }
    };
    let s = match extract_operand(arg) {
        Some(Operand::Tensor(x)) => TensorOrScalar::Tensor(x),
        Some(Operand::Scalar(x)) => TensorOrScalar::Scalar(x),
        None => TensorOrScalar::Tensor(to_tensor(arg)?),
    };
    run(py, t.numel(), || {
        let out = t.clone();
        match reduce {
            None if in_place => out.scatter_(dim, &i, &s)?,
            None => return t.scatter(dim, &i, &s),
            Some(r) => {
                let src_t = match &s {
                    TensorOrScalar::Tensor(x) => x.clone(),
                    TensorOrScalar::Scalar(x) => {
                        Tensor::scalar(*x, t.dtype()).broadcast_to(i.shape())?
                    }
                };
                let red = match r {
                    "add" => "sum",
                    "multiply" => "prod",
                    _ => {
                        return Err(crate::Error::Runtime(format!(
                            "reduce argument must be either add or multiply, got {r}"
                        )))
                    }
                };
                return t.scatter_reduce(dim, &i, &src_t, red, true);
            }
        }
        Ok(out)
    })
}

// ---------------------------------------------------------------------- module functions

#[pyfunction]
#[pyo3(signature = (tensors, dim=None, *, axis=None, out=None))]
fn cat(
    py: Python<'_>,
    tensors: &Bound<'_, PyAny>,
    dim: Option<i64>,
    axis: Option<i64>,
    out: Option<&Bound<'_, PyTensor>>,
) -> PyResult<Py<PyAny>> {
    let ts = tensor_list(tensors)?;
    let d = dim.or(axis).unwrap_or(0);
    let n: usize = ts.iter().map(|t| t.numel()).sum();
    let r = run(py, n, || join::cat(&ts, d))?;
    with_out(py, r, out)
}

#[pyfunction]
#[pyo3(signature = (tensors, dim=0, *, out=None))]
fn stack(
    py: Python<'_>,
    tensors: &Bound<'_, PyAny>,
    dim: i64,
    out: Option<&Bound<'_, PyTensor>>,
) -> PyResult<Py<PyAny>> {
    let ts = tensor_list(tensors)?;
    let n: usize = ts.iter().map(|t| t.numel()).sum();
    let r = run(py, n, || join::stack(&ts, dim))?;
    with_out(py, r, out)
}

macro_rules! list_joins {
    ($($name:ident => $f:path;)*) => {
        $(
            #[pyfunction]
            #[pyo3(signature = (tensors, *, out=None))]
            fn $name(py: Python<'_>, tensors: &Bound<'_, PyAny>, out: Option<&Bound<'_, PyTensor>>) -> PyResult<Py<PyAny>> {
                let ts = tensor_list(tensors)?;
                let n: usize = ts.iter().map(|t| t.numel()).sum();
                let r = run(py, n, || $f(&ts))?;
                with_out(py, r, out)
            }
        )*
    };
}

list_joins! {
    hstack => join::hstack;
    vstack => join::vstack;
    dstack => join::dstack;
    column_stack => join::column_stack;
}

/// `where(condition, input, other)`, or `where(condition)` = `nonzero(condition, as_tuple=True)`.
#[pyfunction]
#[pyo3(name = "where", signature = (condition, input=None, other=None, *, out=None))]
fn where_fn(
    py: Python<'_>,
    condition: &Bound<'_, PyAny>,
    input: Option<&Bound<'_, PyAny>>,
    other: Option<&Bound<'_, PyAny>>,
    out: Option<&Bound<'_, PyTensor>>,
) -> PyResult<Py<PyAny>> {
    let c = to_tensor(condition)?;
    match (input, other) {
        (None, None) => {
            let cols = run(py, c.numel(), || c.nonzero_columns())?;
            Ok(py_tuple(py, cols)?.into_any().unbind())
        }
        (Some(x), Some(y)) => {
            let (x, y) = (tensor_or_scalar(x)?, tensor_or_scalar(y)?);
            let r = run(py, c.numel(), || Tensor::where_cond(&c, &x, &y))?;
            with_out(py, r, out)
        }
        _ => Err(PyTypeError::new_err(
            "where() expects either only `condition`, or `condition`, `input` and `other`",
        )),
    }
}

#[pyfunction]
#[pyo3(signature = (*tensors, indexing=None))]
fn meshgrid<'py>(
    py: Python<'py>,
    tensors: &Bound<'py, PyTuple>,
    indexing: Option<&str>,
) -> PyResult<Bound<'py, PyTuple>> {
    let ts = varargs_tensors(tensors)?;
    py_tuple(py, join::meshgrid(&ts, indexing.unwrap_or("ij"))?)
}

#[pyfunction]
#[pyo3(signature = (*tensors))]
fn broadcast_tensors<'py>(
    py: Python<'py>,
    tensors: &Bound<'py, PyTuple>,
) -> PyResult<Bound<'py, PyTuple>> {
    let ts = varargs_tensors(tensors)?;
    py_tuple(py, crate::tensor::broadcast_tensors(&ts)?)
}

#[pyfunction]
#[pyo3(signature = (*shapes))]
fn broadcast_shapes<'py>(
    py: Python<'py>,
    shapes: &Bound<'py, PyTuple>,
) -> PyResult<Bound<'py, PyAny>> {
    let mut dims: Vec<Vec<usize>> = Vec::new();
    for s in shapes.iter() {
        let v = int_or_seq(&s)?;
        if let Some(bad) = v.iter().find(|&&x| x < 0) {
            return Err(PyRuntimeError::new_err(format!(
                "Trying to create tensor with negative dimension {bad}: {v:?}"
            )));
        }
        dims.push(v.into_iter().map(|x| x as usize).collect());
    }
    let refs: Vec<&[usize]> = dims.iter().map(|d| d.as_slice()).collect();
    let out = crate::tensor::broadcast_shapes_all(&refs)?;
    size_object(py, &out)
}

fn atleast(
    py: Python<'_>,
    tensors: &Bound<'_, PyTuple>,
    f: impl Fn(&Tensor) -> crate::Result<Tensor>,
) -> PyResult<Py<PyAny>> {
    let single = tensors.len() == 1 && tensors.get_item(0)?.cast::<PyTensor>().is_ok();
    let ts = varargs_tensors(tensors)?;
    let outs: Vec<Tensor> = ts.iter().map(f).collect::<crate::Result<_>>()?;
    if single {
        let t = outs
            .into_iter()
            .next()
            .ok_or_else(|| PyValueError::new_err("no tensor"))?;
        return Ok(Py::new(py, PyTensor::from(t))?.into_any());
    }
    Ok(py_tuple(py, outs)?.into_any().unbind())
}

#[pyfunction]
#[pyo3(signature = (*tensors))]
fn atleast_1d(py: Python<'_>, tensors: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
    atleast(py, tensors, |t| t.atleast_1d())
}

#[pyfunction]
#[pyo3(signature = (*tensors))]
fn atleast_2d(py: Python<'_>, tensors: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
    atleast(py, tensors, |t| t.atleast_2d())
}

#[pyfunction]
#[pyo3(signature = (*tensors))]
fn atleast_3d(py: Python<'_>, tensors: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
    atleast(py, tensors, |t| t.atleast_3d())
}

/// `repeat_interleave(input, repeats, dim)`, or `repeat_interleave(repeats)`.
#[pyfunction]
#[pyo3(signature = (input, repeats=None, dim=None, *, output_size=None))]
fn repeat_interleave(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    repeats: Option<&Bound<'_, PyAny>>,
    dim: Option<i64>,
    output_size: Option<i64>,
) -> PyResult<PyTensor> {
    let x = to_tensor(input)?;
    let out = match repeats {
        None => run(py, x.numel(), || join::repeat_interleave_indices(&x))?,
        Some(r) => {
            let r = repeats_arg(r)?;
            run(py, x.numel(), || x.repeat_interleave(&r, dim))?
        }
    };
    check_output_size(
        &out,
        if repeats.is_none() { None } else { dim },
        output_size,
    )?;
    Ok(out.into())
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cat, m)?)?;
    m.add("concat", m.getattr("cat")?)?;
    m.add("concatenate", m.getattr("cat")?)?;
    m.add_function(wrap_pyfunction!(stack, m)?)?;
    m.add_function(wrap_pyfunction!(hstack, m)?)?;
    m.add_function(wrap_pyfunction!(vstack, m)?)?;
    m.add("row_stack", m.getattr("vstack")?)?;
    m.add_function(wrap_pyfunction!(dstack, m)?)?;
    m.add_function(wrap_pyfunction!(column_stack, m)?)?;
    m.add_function(wrap_pyfunction!(where_fn, m)?)?;
    m.add_function(wrap_pyfunction!(meshgrid, m)?)?;
    m.add_function(wrap_pyfunction!(broadcast_tensors, m)?)?;
    m.add_function(wrap_pyfunction!(broadcast_shapes, m)?)?;
    m.add_function(wrap_pyfunction!(atleast_1d, m)?)?;
    m.add_function(wrap_pyfunction!(atleast_2d, m)?)?;
    m.add_function(wrap_pyfunction!(atleast_3d, m)?)?;
    m.add_function(wrap_pyfunction!(repeat_interleave, m)?)?;
    Ok(())
}

impl PyTensor {
    /// Replace the Python tensor's data with the view `make_view` builds from it (the in-place
    /// view ops). A leaf that requires grad stays a leaf that requires grad under no_grad
    /// (the view itself would not require grad); with grad mode on PyTorch refuses the op.
    fn swap_view<'py>(
        slf: Bound<'py, Self>,
        op: &str,
        make_view: impl FnOnce(&PyTensor) -> PyResult<Tensor>,
    ) -> PyResult<Bound<'py, Self>> {
        let leaf_requiring_grad = {
            let t = &slf.borrow().inner;
            t.is_leaf() && t.requires_grad()
        };
        if leaf_requiring_grad && crate::is_grad_enabled() {
            return Err(crate::Error::Runtime(format!(
                "a leaf Variable that requires grad is being used in an in-place operation ({op}_)."
            ))
            .into());
        }
        let mut view = make_view(&slf.borrow())?;
        if leaf_requiring_grad {
            view = view.detach();
            view.set_requires_grad(true)?;
        }
        slf.borrow_mut().inner = view;
        Ok(slf)
    }
}
