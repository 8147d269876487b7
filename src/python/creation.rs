//! Factory functions (`zeros`, `ones`, `full`, `empty`, their `_like` forms, `arange`,
//! `linspace`, `logspace`, `eye`, `empty_strided`, `scalar_tensor`) and the `Tensor.new_*`
//! methods. Argument conversion only; the work is in `tensor/creation.rs`.

use super::convert::{extract_device, extract_dtype, extract_i64_seq, extract_scalar};
use super::convert::{extract_index_int, extract_shape_args};
use super::run;
use super::tensor::{tensor_from_data, PyTensor};
use crate::{DType, Device, Error, Scalar, Tensor};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

type Obj<'a, 'py> = Option<&'a Bound<'py, PyAny>>;

/// The device of a `device=` argument (None means the CPU). Using CUDA when no device is
/// available is an error here, before any work.
pub(crate) fn check_device(device: Obj<'_, '_>) -> PyResult<Device> {
    check_device_or(device, Device::Cpu)
}

/// Like `check_device`, with `default` for None (the input's device, for `*_like`/`new_*`).
pub(crate) fn check_device_or(device: Obj<'_, '_>, default: Device) -> PyResult<Device> {
    let d = match device {
        Some(d) if !d.is_none() => extract_device(d)?,
        _ => return Ok(default),
    };
    if let Device::Cuda(n) = d {
        if n >= crate::cuda::device_count() {
            return Err(match crate::cuda::unavailable_reason() {
                Some(reason) => Error::Runtime(format!("device {d} is not available: {reason}")),
                None => Error::Runtime(format!(
                    "CUDA error: invalid device ordinal: {d} requested but {} device(s) found",
                    crate::cuda::device_count()
                )),
            }
            .into());
        }
    }
    Ok(d)
}

/// Move a freshly created CPU tensor to `target`, keeping it a leaf (`requires_grad` is set
/// on the moved tensor, as `torch.zeros(..., device='cuda', requires_grad=True)` is a leaf).
pub(crate) fn finish_on(t: Tensor, target: Device, requires_grad: bool) -> PyResult<PyTensor> {
    let t = t.to_device(target)?;
    finish(t, requires_grad)
}

/// Optional `dtype=` argument (None means "default").
pub(crate) fn opt_dtype(dtype: Obj<'_, '_>) -> PyResult<Option<DType>> {
    match dtype {
        Some(d) if !d.is_none() => Ok(Some(extract_dtype(d)?)),
        _ => Ok(None),
    }
}

/// Reject `layout=` values other than `torch.strided` / None.
fn check_layout(layout: Obj<'_, '_>) -> PyResult<()> {
    if let Some(l) = layout {
        if !l.is_none() {
            let s = l.str()?.to_string();
            if !s.ends_with("strided") {
                return Err(PyTypeError::new_err(format!(
                    "only the strided layout is supported, got {s}"
                )));
            }
        }
    }
    Ok(())
}

/// Set `requires_grad` on a freshly created tensor and wrap it.
pub(crate) fn finish(t: Tensor, requires_grad: bool) -> PyResult<PyTensor> {
    if requires_grad {
        t.set_requires_grad(true)?;
    }
    Ok(t.into())
}

/// Shape from `*size` or `size=`.
pub(crate) fn shape_from(args: &Bound<'_, PyTuple>, size: Obj<'_, '_>) -> PyResult<Vec<i64>> {
    match size {
        Some(s) if !s.is_none() => {
            if !args.is_empty() {
                return Err(PyTypeError::new_err(
                    "size given both positionally and as a keyword",
                ));
            }
            extract_i64_seq(s)
        }
        _ => extract_shape_args(args),
    }
}

/// A number argument: Python/NumPy scalar or one-element tensor.
pub(crate) fn number(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Scalar> {
    if let Some(s) = extract_scalar(obj) {
        return Ok(s);
    }
    if let Ok(t) = obj.cast::<PyTensor>() {
        let t = &t.borrow().inner;
        if t.numel() == 1 {
            return Ok(t.item()?);
        }
    }
    Err(PyTypeError::new_err(format!(
        "{what} must be a number, got {}",
        obj.get_type().name()?
    )))
}

fn filled(
    py: Python<'_>,
    shape: Vec<i64>,
    value: Scalar,
    dtype: DType,
    requires_grad: bool,
    target: Device,
) -> PyResult<PyTensor> {
    let n = shape
        .iter()
        .fold(1usize, |a, &s| a.saturating_mul(s.max(0) as usize));
    let t = match target {
        Device::Cpu => run(py, n, || Tensor::full_checked(&shape, value, dtype))?,
        Device::Cuda(_) => {
            if let Some(&bad) = shape.iter().find(|&&s| s < 0) {
                return Err(Error::Runtime(format!(
                    "Trying to create tensor with negative dimension {bad}: {shape:?}"
                ))
                .into());
            }
            let dims: Vec<usize> = shape.iter().map(|&s| s as usize).collect();
            run(py, 0, || Tensor::full_on(target, &dims, value, dtype))?
        }
    };
    // PyTorch fills the new tensor with `fill_`: a value the dtype cannot hold is an error
    // (checked once the shape is known to be valid, as there).
    value.check_fill(dtype, t.numel(), target == Device::Cpu)?;
    finish(t, requires_grad)
}

macro_rules! filled_factory {
    ($( $name:ident => $value:expr; )*) => {
        $(
            #[pyfunction]
            #[pyo3(signature = (*args, out=None, dtype=None, layout=None, device=None,
                                requires_grad=false, pin_memory=false, memory_format=None,
                                names=None, size=None))]
            #[allow(clippy::too_many_arguments)]
            fn $name(
                py: Python<'_>,
                args: &Bound<'_, PyTuple>,
                out: Obj<'_, '_>,
                dtype: Obj<'_, '_>,
                layout: Obj<'_, '_>,
                device: Obj<'_, '_>,
                requires_grad: bool,
                pin_memory: bool,
                memory_format: Obj<'_, '_>,
                names: Obj<'_, '_>,
                size: Obj<'_, '_>,
            ) -> PyResult<PyTensor> {
                let _ = (pin_memory, memory_format, names);
                check_layout(layout)?;
                let target = check_device(device)?;
                let shape = shape_from(args, size)?;
                let dtype = opt_dtype(dtype)?.unwrap_or(crate::default_dtype());
                let t = filled(py, shape, $value, dtype, requires_grad, target)?;
                write_out(out, t)
            }
        )*
    };
}

/// Honour `out=`: copy the result into the given tensor (which must have its shape).
fn write_out(out: Obj<'_, '_>, t: PyTensor) -> PyResult<PyTensor> {
    match out {
        Some(o) if !o.is_none() => {
            let o = o.cast::<PyTensor>()?.borrow().inner.clone();
            if o.shape() != t.inner.shape() {
                return Err(Error::shape(
                    "out",
                    o.shape(),
                    t.inner.shape(),
                    "out= tensor has the wrong shape (resizing is not supported)",
                )
                .into());
            }
            o.copy_(&t.inner)?;
            Ok(o.into())
        }
        _ => Ok(t),
    }
}

filled_factory! {
    zeros => Scalar::Int(0);
    ones => Scalar::Int(1);
    empty => Scalar::Int(0);
}

/// `full(size, fill_value)`: the dtype follows the fill value (bool, int64 or the default
/// float dtype) unless given.
#[pyfunction]
#[pyo3(signature = (size, fill_value, *, out=None, dtype=None, layout=None, device=None,
                    requires_grad=false, pin_memory=false))]
#[allow(clippy::too_many_arguments)]
fn full(
    py: Python<'_>,
    size: &Bound<'_, PyAny>,
    fill_value: &Bound<'_, PyAny>,
    out: Obj<'_, '_>,
    dtype: Obj<'_, '_>,
    layout: Obj<'_, '_>,
    device: Obj<'_, '_>,
    requires_grad: bool,
    pin_memory: bool,
) -> PyResult<PyTensor> {
    let _ = pin_memory;
    check_layout(layout)?;
    let target = check_device(device)?;
    let shape = extract_i64_seq(size)?;
    let v = number(fill_value, "fill_value")?;
    let dtype = opt_dtype(dtype)?.unwrap_or(v.default_dtype());
    let t = filled(py, shape, v, dtype, requires_grad, target)?;
    write_out(out, t)
}

macro_rules! like_factory {
    ($( $name:ident => $value:expr; )*) => {
        $(
            #[pyfunction]
            #[pyo3(signature = (input, *, dtype=None, layout=None, device=None,
                                requires_grad=false, memory_format=None))]
            fn $name(
                py: Python<'_>,
                input: PyRef<'_, PyTensor>,
                dtype: Obj<'_, '_>,
                layout: Obj<'_, '_>,
                device: Obj<'_, '_>,
                requires_grad: bool,
                memory_format: Obj<'_, '_>,
            ) -> PyResult<PyTensor> {
                let _ = memory_format;
                check_layout(layout)?;
                let target = check_device_or(device, input.inner.device())?;
                let t = &input.inner;
                let dtype = opt_dtype(dtype)?.unwrap_or(t.dtype());
                let shape: Vec<i64> = t.shape().iter().map(|&s| s as i64).collect();
                filled(py, shape, $value, dtype, requires_grad, target)
            }
        )*
    };
}

like_factory! {
    zeros_like => Scalar::Int(0);
    ones_like => Scalar::Int(1);
    empty_like => Scalar::Int(0);
}

#[pyfunction]
#[pyo3(signature = (input, fill_value, *, dtype=None, layout=None, device=None,
                    requires_grad=false, memory_format=None))]
#[allow(clippy::too_many_arguments)]
fn full_like(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    fill_value: &Bound<'_, PyAny>,
    dtype: Obj<'_, '_>,
    layout: Obj<'_, '_>,
    device: Obj<'_, '_>,
    requires_grad: bool,
    memory_format: Obj<'_, '_>,
) -> PyResult<PyTensor> {
    let _ = memory_format;
    check_layout(layout)?;
    let target = check_device_or(device, input.inner.device())?;
    let t = &input.inner;
    let v = number(fill_value, "fill_value")?;
    let dtype = opt_dtype(dtype)?.unwrap_or(t.dtype());
    let shape: Vec<i64> = t.shape().iter().map(|&s| s as i64).collect();
    filled(py, shape, v, dtype, requires_grad, target)
}

/// `arange(end)`, `arange(start, end)`, `arange(start, end, step)`.
#[pyfunction]
#[pyo3(signature = (start=None, end=None, step=None, *, out=None, dtype=None, layout=None,
                    device=None, requires_grad=false, pin_memory=false))]
#[allow(clippy::too_many_arguments)]
fn arange(
    py: Python<'_>,
    start: Obj<'_, '_>,
    end: Obj<'_, '_>,
    step: Obj<'_, '_>,
    out: Obj<'_, '_>,
    dtype: Obj<'_, '_>,
    layout: Obj<'_, '_>,
    device: Obj<'_, '_>,
    requires_grad: bool,
    pin_memory: bool,
) -> PyResult<PyTensor> {
    let _ = pin_memory;
    check_layout(layout)?;
    let target = check_device(device)?;
    // arange(end), arange(start, end[, step]) and arange(end=...) as PyTorch's overloads.
    let (start, end) = match (start.filter(|v| !v.is_none()), end.filter(|v| !v.is_none())) {
        (Some(s), Some(e)) => (number(s, "start")?, number(e, "end")?),
        (Some(e), None) | (None, Some(e)) => (Scalar::Int(0), number(e, "end")?),
        (None, None) => {
            return Err(PyTypeError::new_err(
                "arange() missing 1 required positional argument: \"end\"",
            ))
        }
    };
    let step = match step {
        Some(s) if !s.is_none() => number(s, "step")?,
        _ => Scalar::Int(1),
    };
    let dtype = opt_dtype(dtype)?;
    let t = run(py, 0, || Tensor::arange(start, end, step, dtype))?;
    write_out(out, finish_on(t, target, requires_grad)?)
}

#[pyfunction]
#[pyo3(signature = (start, end, steps, *, out=None, dtype=None, layout=None, device=None,
                    requires_grad=false))]
#[allow(clippy::too_many_arguments)]
fn linspace(
    py: Python<'_>,
    start: &Bound<'_, PyAny>,
    end: &Bound<'_, PyAny>,
    steps: &Bound<'_, PyAny>,
    out: Obj<'_, '_>,
    dtype: Obj<'_, '_>,
    layout: Obj<'_, '_>,
    device: Obj<'_, '_>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    check_layout(layout)?;
    let target = check_device(device)?;
    let (s, e) = (number(start, "start")?, number(end, "end")?);
    let steps = extract_index_int(steps)?;
    let dtype = opt_dtype(dtype)?.unwrap_or(crate::default_dtype());
    let t = run(py, 0, || Tensor::linspace(s, e, steps, dtype))?;
    write_out(out, finish_on(t, target, requires_grad)?)
}

#[pyfunction]
#[pyo3(signature = (start, end, steps, base=10.0, *, out=None, dtype=None, layout=None,
                    device=None, requires_grad=false))]
#[allow(clippy::too_many_arguments)]
fn logspace(
    py: Python<'_>,
    start: &Bound<'_, PyAny>,
    end: &Bound<'_, PyAny>,
    steps: &Bound<'_, PyAny>,
    base: f64,
    out: Obj<'_, '_>,
    dtype: Obj<'_, '_>,
    layout: Obj<'_, '_>,
    device: Obj<'_, '_>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    check_layout(layout)?;
    let target = check_device(device)?;
    let (s, e) = (number(start, "start")?, number(end, "end")?);
    let steps = extract_index_int(steps)?;
    let dtype = opt_dtype(dtype)?.unwrap_or(crate::default_dtype());
    let t = run(py, 0, || Tensor::logspace(s, e, steps, base, dtype))?;
    write_out(out, finish_on(t, target, requires_grad)?)
}

#[pyfunction]
#[pyo3(signature = (n, m=None, *, out=None, dtype=None, layout=None, device=None,
                    requires_grad=false, pin_memory=false))]
#[allow(clippy::too_many_arguments)]
fn eye(
    py: Python<'_>,
    n: &Bound<'_, PyAny>,
    m: Obj<'_, '_>,
    out: Obj<'_, '_>,
    dtype: Obj<'_, '_>,
    layout: Obj<'_, '_>,
    device: Obj<'_, '_>,
    requires_grad: bool,
    pin_memory: bool,
) -> PyResult<PyTensor> {
    let _ = pin_memory;
    check_layout(layout)?;
    let target = check_device(device)?;
    let n = extract_index_int(n)?;
    let m = match m {
        Some(m) if !m.is_none() => Some(extract_index_int(m)?),
        _ => None,
    };
    let dtype = opt_dtype(dtype)?.unwrap_or(crate::default_dtype());
    let numel = (n.max(0) as usize).saturating_mul(m.unwrap_or(n).max(0) as usize);
    let t = run(py, numel, || Tensor::eye(n, m, dtype))?;
    write_out(out, finish_on(t, target, requires_grad)?)
}

#[pyfunction]
#[pyo3(signature = (size, stride, *, dtype=None, layout=None, device=None,
                    requires_grad=false, pin_memory=false))]
#[allow(clippy::too_many_arguments)]
fn empty_strided(
    py: Python<'_>,
    size: &Bound<'_, PyAny>,
    stride: &Bound<'_, PyAny>,
    dtype: Obj<'_, '_>,
    layout: Obj<'_, '_>,
    device: Obj<'_, '_>,
    requires_grad: bool,
    pin_memory: bool,
) -> PyResult<PyTensor> {
    let _ = pin_memory;
    check_layout(layout)?;
    let target = check_device(device)?;
    let (size, stride) = (extract_i64_seq(size)?, extract_i64_seq(stride)?);
    let dtype = opt_dtype(dtype)?.unwrap_or(crate::default_dtype());
    let t = run(py, 0, || Tensor::empty_strided(&size, &stride, dtype))?;
    finish_on(t, target, requires_grad)
}

/// `scalar_tensor(s)`: a 0-d tensor of the default float dtype unless `dtype` is given.
#[pyfunction]
#[pyo3(signature = (s, *, dtype=None, layout=None, device=None, requires_grad=false,
                    pin_memory=false))]
fn scalar_tensor(
    s: &Bound<'_, PyAny>,
    dtype: Obj<'_, '_>,
    layout: Obj<'_, '_>,
    device: Obj<'_, '_>,
    requires_grad: bool,
    pin_memory: bool,
) -> PyResult<PyTensor> {
    let _ = pin_memory;
    check_layout(layout)?;
    let target = check_device(device)?;
    let v = number(s, "s")?;
    let dtype = opt_dtype(dtype)?.unwrap_or(crate::default_dtype());
    // Filled like a one-element CPU tensor in PyTorch (a value the dtype cannot hold is an
    // error, except that half / bfloat16 take it as inf).
    v.check_fill(dtype, 1, true)?;
    finish_on(Tensor::scalar(v, dtype), target, requires_grad)
}

#[pymethods]
impl PyTensor {
    #[pyo3(signature = (*args, dtype=None, device=None, requires_grad=false, layout=None,
                        pin_memory=false, size=None))]
    #[allow(clippy::too_many_arguments)]
    fn new_zeros(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        dtype: Obj<'_, '_>,
        device: Obj<'_, '_>,
        requires_grad: bool,
        layout: Obj<'_, '_>,
        pin_memory: bool,
        size: Obj<'_, '_>,
    ) -> PyResult<PyTensor> {
        let _ = pin_memory;
        self.new_filled(
            py,
            args,
            size,
            Scalar::Int(0),
            dtype,
            device,
            layout,
            requires_grad,
        )
    }
    #[pyo3(signature = (*args, dtype=None, device=None, requires_grad=false, layout=None,
                        pin_memory=false, size=None))]
    #[allow(clippy::too_many_arguments)]
    fn new_ones(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        dtype: Obj<'_, '_>,
        device: Obj<'_, '_>,
        requires_grad: bool,
        layout: Obj<'_, '_>,
        pin_memory: bool,
        size: Obj<'_, '_>,
    ) -> PyResult<PyTensor> {
        let _ = pin_memory;
        self.new_filled(
            py,
            args,
            size,
            Scalar::Int(1),
            dtype,
            device,
            layout,
            requires_grad,
        )
    }
    #[pyo3(signature = (*args, dtype=None, device=None, requires_grad=false, layout=None,
                        pin_memory=false, size=None))]
    #[allow(clippy::too_many_arguments)]
    fn new_empty(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        dtype: Obj<'_, '_>,
        device: Obj<'_, '_>,
        requires_grad: bool,
        layout: Obj<'_, '_>,
        pin_memory: bool,
        size: Obj<'_, '_>,
    ) -> PyResult<PyTensor> {
        let _ = pin_memory;
        self.new_filled(
            py,
            args,
            size,
            Scalar::Int(0),
            dtype,
            device,
            layout,
            requires_grad,
        )
    }
    #[pyo3(signature = (size, fill_value, *, dtype=None, device=None, requires_grad=false,
                        layout=None, pin_memory=false))]
    #[allow(clippy::too_many_arguments)]
    fn new_full(
        &self,
        py: Python<'_>,
        size: &Bound<'_, PyAny>,
        fill_value: &Bound<'_, PyAny>,
        dtype: Obj<'_, '_>,
        device: Obj<'_, '_>,
        requires_grad: bool,
        layout: Obj<'_, '_>,
        pin_memory: bool,
    ) -> PyResult<PyTensor> {
        let _ = pin_memory;
        check_layout(layout)?;
        let target = check_device_or(device, self.inner.device())?;
        let shape = extract_i64_seq(size)?;
        let v = number(fill_value, "fill_value")?;
        let dtype = opt_dtype(dtype)?.unwrap_or(self.inner.dtype());
        filled(py, shape, v, dtype, requires_grad, target)
    }
    #[pyo3(signature = (size, stride, *, dtype=None, device=None, requires_grad=false,
                        layout=None, pin_memory=false))]
    #[allow(clippy::too_many_arguments)]
    fn new_empty_strided(
        &self,
        py: Python<'_>,
        size: &Bound<'_, PyAny>,
        stride: &Bound<'_, PyAny>,
        dtype: Obj<'_, '_>,
        device: Obj<'_, '_>,
        requires_grad: bool,
        layout: Obj<'_, '_>,
        pin_memory: bool,
    ) -> PyResult<PyTensor> {
        let _ = pin_memory;
        check_layout(layout)?;
        let target = check_device_or(device, self.inner.device())?;
        let (size, stride) = (extract_i64_seq(size)?, extract_i64_seq(stride)?);
        let dtype = opt_dtype(dtype)?.unwrap_or(self.inner.dtype());
        let t = run(py, 0, || Tensor::empty_strided(&size, &stride, dtype))?;
        finish_on(t, target, requires_grad)
    }
    /// `new_tensor(data)`: a copy of `data` with this tensor's dtype unless given.
    #[pyo3(signature = (data, *, dtype=None, device=None, requires_grad=false, layout=None,
                        pin_memory=false))]
    #[allow(clippy::too_many_arguments)]
    fn new_tensor(
        &self,
        data: &Bound<'_, PyAny>,
        dtype: Obj<'_, '_>,
        device: Obj<'_, '_>,
        requires_grad: bool,
        layout: Obj<'_, '_>,
        pin_memory: bool,
    ) -> PyResult<PyTensor> {
        let _ = pin_memory;
        check_layout(layout)?;
        let target = check_device_or(device, self.inner.device())?;
        let dtype = opt_dtype(dtype)?.unwrap_or(self.inner.dtype());
        let t = tensor_from_data(data, Some(dtype))?;
        finish_on(t, target, requires_grad)
    }
}

impl PyTensor {
    #[allow(clippy::too_many_arguments)]
    fn new_filled(
        &self,
        py: Python<'_>,
        size: &Bound<'_, PyTuple>,
        size_kw: Obj<'_, '_>,
        value: Scalar,
        dtype: Obj<'_, '_>,
        device: Obj<'_, '_>,
        layout: Obj<'_, '_>,
        requires_grad: bool,
    ) -> PyResult<PyTensor> {
        check_layout(layout)?;
        let target = check_device_or(device, self.inner.device())?;
        let shape = shape_from(size, size_kw)?;
        let dtype = opt_dtype(dtype)?.unwrap_or(self.inner.dtype());
        filled(py, shape, value, dtype, requires_grad, target)
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(zeros, m)?)?;
    m.add_function(wrap_pyfunction!(ones, m)?)?;
    m.add_function(wrap_pyfunction!(empty, m)?)?;
    m.add_function(wrap_pyfunction!(full, m)?)?;
    m.add_function(wrap_pyfunction!(zeros_like, m)?)?;
    m.add_function(wrap_pyfunction!(ones_like, m)?)?;
    m.add_function(wrap_pyfunction!(empty_like, m)?)?;
    m.add_function(wrap_pyfunction!(full_like, m)?)?;
    m.add_function(wrap_pyfunction!(arange, m)?)?;
    m.add_function(wrap_pyfunction!(linspace, m)?)?;
    m.add_function(wrap_pyfunction!(logspace, m)?)?;
    m.add_function(wrap_pyfunction!(eye, m)?)?;
    m.add_function(wrap_pyfunction!(empty_strided, m)?)?;
    m.add_function(wrap_pyfunction!(scalar_tensor, m)?)?;
    Ok(())
}
