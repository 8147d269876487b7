//! Python bindings of reductions, scans, softmax, sorting and searching: argument parsing
//! in PyTorch's signatures only; the work is in `Tensor` methods.

use super::convert::{extract_dims, extract_dtype, extract_index_int, extract_scalar};
use super::run;
use super::tensor::{to_tensor, PyTensor};
use crate::{BinaryOp, DType, Tensor};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyString, PyTuple};

fn opt_dtype(d: Option<&Bound<'_, PyAny>>) -> PyResult<Option<DType>> {
    match d {
        Some(d) if !d.is_none() => Ok(Some(extract_dtype(d)?)),
        _ => Ok(None),
    }
}

fn opt_int(d: Option<&Bound<'_, PyAny>>) -> PyResult<Option<i64>> {
    match d {
        Some(d) if !d.is_none() => Ok(Some(extract_index_int(d)?)),
        _ => Ok(None),
    }
}

fn tensor_obj(py: Python<'_>, t: Tensor) -> PyResult<Py<PyAny>> {
    Ok(Py::new(py, PyTensor::from(t))?.into_any())
}

/// A `ferrotorch.return_types.<name>` (a named tuple) of two tensors.
fn return_type(py: Python<'_>, name: &str, a: Tensor, b: Tensor) -> PyResult<Py<PyAny>> {
    let cls = py.import("ferrotorch.return_types")?.getattr(name)?;
    Ok(cls.call1((PyTensor::from(a), PyTensor::from(b)))?.unbind())
}

/// Parse `var`/`std` arguments: `(dim=None, *, correction=1, keepdim=False)`,
/// `(dim, unbiased, keepdim)` or `(unbiased)`, positionally or by keyword.
fn var_args(
    args: &Bound<'_, PyTuple>,
    dim: Option<&Bound<'_, PyAny>>,
    unbiased: Option<bool>,
    keepdim: Option<bool>,
    correction: Option<&Bound<'_, PyAny>>,
) -> PyResult<(Option<Vec<i64>>, f64, bool)> {
    let mut dims = extract_dims(dim)?;
    let (mut unb, mut keep) = (unbiased, keepdim);
    let n = args.len();
    if n > 3 {
        return Err(PyTypeError::new_err("var(): too many positional arguments"));
    }
    for (i, a) in args.iter().enumerate() {
        match i {
            0 if a.is_instance_of::<PyBool>() && n == 1 => unb = Some(a.extract()?),
            0 => {
                if dim.is_some() {
                    return Err(PyTypeError::new_err("var(): got multiple values for 'dim'"));
                }
                dims = extract_dims(Some(&a))?;
            }
            1 => unb = Some(a.extract()?),
            _ => keep = Some(a.extract()?),
        }
    }
    let corr = match (correction, unb) {
        (Some(c), None) if !c.is_none() => match extract_scalar(c) {
            Some(s) => s.to_f64(),
            None => return Err(PyTypeError::new_err("correction must be a number")),
        },
        (Some(c), Some(_)) if !c.is_none() => {
            return Err(PyRuntimeError::new_err(
                "Cannot specify both unbiased and correction",
            ))
        }
        (_, Some(u)) => u as u8 as f64,
        _ => 1.0,
    };
    Ok((dims, corr, keep.unwrap_or(false)))
}

/// `p` of `norm`: a number (inf allowed), `'fro'` (= 2 for vectors) or None (= 2).
fn norm_p(p: Option<&Bound<'_, PyAny>>) -> PyResult<f64> {
    let Some(p) = p else { return Ok(2.0) };
    if p.is_none() {
        return Ok(2.0);
    }
    if let Ok(s) = p.cast::<PyString>() {
        return match s.to_str()? {
            "fro" => Ok(2.0),
            "nuc" => Err(PyRuntimeError::new_err(
                "norm(): the nuclear norm is a matrix norm; use ferrotorch.linalg.matrix_norm",
            )),
            other => Err(PyRuntimeError::new_err(format!(
                "norm(): invalid norm type '{other}'"
            ))),
        };
    }
    extract_scalar(p)
        .map(|s| s.to_f64())
        .ok_or_else(|| PyTypeError::new_err("norm(): p must be a number or 'fro'"))
}

#[pymethods]
impl PyTensor {
    // ------------------------------------------------------------ sum, mean, prod
    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None))]
    fn sum(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let (dims, dt, t) = (extract_dims(dim)?, opt_dtype(dtype)?, &self.inner);
        Ok(run(py, t.numel(), || t.sum(dims.as_deref(), keepdim, dt))?.into())
    }

    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None))]
    fn mean(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let (dims, dt, t) = (extract_dims(dim)?, opt_dtype(dtype)?, &self.inner);
        Ok(run(py, t.numel(), || t.mean(dims.as_deref(), keepdim, dt))?.into())
    }

    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None))]
    fn prod(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let (dims, dt, t) = (extract_dims(dim)?, opt_dtype(dtype)?, &self.inner);
        Ok(run(py, t.numel(), || t.prod(dims.as_deref(), keepdim, dt))?.into())
    }

    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None))]
    fn nansum(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let (dims, dt, t) = (extract_dims(dim)?, opt_dtype(dtype)?, &self.inner);
        Ok(run(py, t.numel(), || t.nansum(dims.as_deref(), keepdim, dt))?.into())
    }

    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None))]
    fn nanmean(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let (dims, dt, t) = (extract_dims(dim)?, opt_dtype(dtype)?, &self.inner);
        Ok(run(py, t.numel(), || t.nanmean(dims.as_deref(), keepdim, dt))?.into())
    }

    // ------------------------------------------------------------ max, min, arg*
    /// `max()`, `max(dim, keepdim=False)` -> (values, indices), or `max(other)` (elementwise).
    #[pyo3(signature = (dim=None, keepdim=false, *, other=None))]
    fn max(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        other: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        // `other=` names the elementwise form's tensor (`torch.max(x, other=y)`).
        self.max_min::<true>(py, other.or(dim), keepdim)
    }

    /// `min()`, `min(dim, keepdim=False)` -> (values, indices), or `min(other)` (elementwise).
    #[pyo3(signature = (dim=None, keepdim=false, *, other=None))]
    fn min(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        other: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        // `other=` names the elementwise form's tensor (`torch.min(x, other=y)`).
        self.max_min::<false>(py, other.or(dim), keepdim)
    }

    #[pyo3(signature = (dim=None, keepdim=false))]
    fn amax(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        let (dims, t) = (extract_dims(dim)?, &self.inner);
        Ok(run(py, t.numel(), || t.amax(dims.as_deref(), keepdim))?.into())
    }

    #[pyo3(signature = (dim=None, keepdim=false))]
    fn amin(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        let (dims, t) = (extract_dims(dim)?, &self.inner);
        Ok(run(py, t.numel(), || t.amin(dims.as_deref(), keepdim))?.into())
    }

    #[pyo3(signature = (dim=None, keepdim=false))]
    fn argmax(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        let (d, t) = (opt_int(dim)?, &self.inner);
        Ok(run(py, t.numel(), || t.argmax(d, keepdim))?.into())
    }

    #[pyo3(signature = (dim=None, keepdim=false))]
    fn argmin(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        let (d, t) = (opt_int(dim)?, &self.inner);
        Ok(run(py, t.numel(), || t.argmin(d, keepdim))?.into())
    }

    #[pyo3(signature = (*, dim=None, keepdim=false))]
    fn aminmax(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<Py<PyAny>> {
        let (d, t) = (opt_int(dim)?, &self.inner);
        let (lo, hi) = run(py, t.numel(), || t.aminmax(d, keepdim))?;
        return_type(py, "aminmax", lo, hi)
    }

    // ------------------------------------------------------------ var, std, norm
    #[pyo3(signature = (*args, dim=None, unbiased=None, keepdim=None, correction=None))]
    fn var(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        dim: Option<&Bound<'_, PyAny>>,
        unbiased: Option<bool>,
        keepdim: Option<bool>,
        correction: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let (dims, c, k) = var_args(args, dim, unbiased, keepdim, correction)?;
        let t = &self.inner;
        Ok(run(py, t.numel(), || t.var(dims.as_deref(), c, k))?.into())
    }

    #[pyo3(signature = (*args, dim=None, unbiased=None, keepdim=None, correction=None))]
    fn std(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        dim: Option<&Bound<'_, PyAny>>,
        unbiased: Option<bool>,
        keepdim: Option<bool>,
        correction: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let (dims, c, k) = var_args(args, dim, unbiased, keepdim, correction)?;
        let t = &self.inner;
        Ok(run(py, t.numel(), || t.std(dims.as_deref(), c, k))?.into())
    }

    #[pyo3(signature = (*args, dim=None, unbiased=None, keepdim=None, correction=None))]
    fn var_mean(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        dim: Option<&Bound<'_, PyAny>>,
        unbiased: Option<bool>,
        keepdim: Option<bool>,
        correction: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<(PyTensor, PyTensor)> {
        let (dims, c, k) = var_args(args, dim, unbiased, keepdim, correction)?;
        let t = &self.inner;
        let (v, m) = run(py, t.numel(), || t.var_mean(dims.as_deref(), c, k))?;
        Ok((v.into(), m.into()))
    }

    #[pyo3(signature = (*args, dim=None, unbiased=None, keepdim=None, correction=None))]
    fn std_mean(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        dim: Option<&Bound<'_, PyAny>>,
        unbiased: Option<bool>,
        keepdim: Option<bool>,
        correction: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<(PyTensor, PyTensor)> {
        let (dims, c, k) = var_args(args, dim, unbiased, keepdim, correction)?;
        let t = &self.inner;
        let (s, m) = run(py, t.numel(), || t.std_mean(dims.as_deref(), c, k))?;
        Ok((s.into(), m.into()))
    }

    #[pyo3(signature = (p=None, dim=None, keepdim=false, dtype=None))]
    fn norm(
        &self,
        py: Python<'_>,
        p: Option<&Bound<'_, PyAny>>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let (p, dims, dt, t) = (
            norm_p(p)?,
            extract_dims(dim)?,
            opt_dtype(dtype)?,
            &self.inner,
        );
        Ok(run(py, t.numel(), || t.norm(p, dims.as_deref(), keepdim, dt))?.into())
    }

    #[pyo3(signature = (dim=None, keepdim=false))]
    fn logsumexp(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        let (dims, t) = (extract_dims(dim)?, &self.inner);
        Ok(run(py, t.numel(), || t.logsumexp(dims.as_deref(), keepdim))?.into())
    }

    // ------------------------------------------------------------ softmax
    #[pyo3(signature = (dim, dtype=None))]
    fn softmax(
        &self,
        py: Python<'_>,
        dim: &Bound<'_, PyAny>,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let (d, dt, t) = (extract_index_int(dim)?, opt_dtype(dtype)?, &self.inner);
        Ok(run(py, t.numel(), || t.softmax(d, dt))?.into())
    }

    #[pyo3(signature = (dim, dtype=None))]
    fn log_softmax(
        &self,
        py: Python<'_>,
        dim: &Bound<'_, PyAny>,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let (d, dt, t) = (extract_index_int(dim)?, opt_dtype(dtype)?, &self.inner);
        Ok(run(py, t.numel(), || t.log_softmax(d, dt))?.into())
    }

    // ------------------------------------------------------------ scans
    #[pyo3(signature = (dim, *, dtype=None))]
    fn cumsum(
        &self,
        py: Python<'_>,
        dim: &Bound<'_, PyAny>,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let (d, dt, t) = (extract_index_int(dim)?, opt_dtype(dtype)?, &self.inner);
        Ok(run(py, t.numel(), || t.cumsum(d, dt))?.into())
    }

    #[pyo3(signature = (dim, *, dtype=None))]
    fn cumprod(
        &self,
        py: Python<'_>,
        dim: &Bound<'_, PyAny>,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let (d, dt, t) = (extract_index_int(dim)?, opt_dtype(dtype)?, &self.inner);
        Ok(run(py, t.numel(), || t.cumprod(d, dt))?.into())
    }

    fn cummax(&self, py: Python<'_>, dim: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let (d, t) = (extract_index_int(dim)?, &self.inner);
        let (v, i) = run(py, t.numel(), || t.cummax(d))?;
        return_type(py, "cummax", v, i)
    }

    fn cummin(&self, py: Python<'_>, dim: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let (d, t) = (extract_index_int(dim)?, &self.inner);
        let (v, i) = run(py, t.numel(), || t.cummin(d))?;
        return_type(py, "cummin", v, i)
    }

    // ------------------------------------------------------------ all, any, count
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn all(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        let (dims, t) = (extract_dims(dim)?, &self.inner);
        Ok(run(py, t.numel(), || t.all(dims.as_deref(), keepdim))?.into())
    }

    #[pyo3(signature = (dim=None, keepdim=false))]
    fn any(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        let (dims, t) = (extract_dims(dim)?, &self.inner);
        Ok(run(py, t.numel(), || t.any(dims.as_deref(), keepdim))?.into())
    }

    #[pyo3(signature = (dim=None))]
    fn count_nonzero(&self, py: Python<'_>, dim: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        let (dims, t) = (extract_dims(dim)?, &self.inner);
        Ok(run(py, t.numel(), || t.count_nonzero(dims.as_deref()))?.into())
    }

    // ------------------------------------------------------------ sorting
    #[pyo3(signature = (dim=-1, descending=false, *, stable=None))]
    fn sort(
        &self,
        py: Python<'_>,
        dim: i64,
        descending: bool,
        stable: Option<bool>,
    ) -> PyResult<Py<PyAny>> {
        // Sorting is always stable here, so `stable` needs no special handling.
        let _ = stable;
        let t = &self.inner;
        let (v, i) = run(py, t.numel(), || t.sort(dim, descending))?;
        return_type(py, "sort", v, i)
    }

    #[pyo3(signature = (dim=-1, descending=false, *, stable=None))]
    fn argsort(
        &self,
        py: Python<'_>,
        dim: i64,
        descending: bool,
        stable: Option<bool>,
    ) -> PyResult<PyTensor> {
        let _ = stable;
        let t = &self.inner;
        Ok(run(py, t.numel(), || t.argsort(dim, descending))?.into())
    }

    fn msort(&self, py: Python<'_>) -> PyResult<PyTensor> {
        let t = &self.inner;
        Ok(run(py, t.numel(), || t.msort())?.into())
    }

    #[pyo3(signature = (k, dim=-1, largest=true, sorted=true))]
    fn topk(
        &self,
        py: Python<'_>,
        k: i64,
        dim: i64,
        largest: bool,
        sorted: bool,
    ) -> PyResult<Py<PyAny>> {
        // Results are always sorted (allowed when `sorted=False`).
        let _ = sorted;
        let t = &self.inner;
        let (v, i) = run(py, t.numel(), || t.topk(k, dim, largest))?;
        return_type(py, "topk", v, i)
    }

    #[pyo3(signature = (k, dim=-1, keepdim=false))]
    fn kthvalue(&self, py: Python<'_>, k: i64, dim: i64, keepdim: bool) -> PyResult<Py<PyAny>> {
        let t = &self.inner;
        let (v, i) = run(py, t.numel(), || t.kthvalue(k, dim, keepdim))?;
        return_type(py, "kthvalue", v, i)
    }

    /// `median()` -> 0-d tensor; `median(dim, keepdim=False)` -> (values, indices).
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn median(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<Py<PyAny>> {
        let t = &self.inner;
        match opt_int(dim)? {
            None => tensor_obj(py, run(py, t.numel(), || t.median_all())?),
            Some(d) => {
                let (v, i) = run(py, t.numel(), || t.median_dim(d, keepdim))?;
                return_type(py, "median", v, i)
            }
        }
    }

    #[pyo3(signature = (dim=None, keepdim=false))]
    fn nanmedian(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<Py<PyAny>> {
        let t = &self.inner;
        match opt_int(dim)? {
            None => tensor_obj(py, run(py, t.numel(), || t.nanmedian_all())?),
            Some(d) => {
                let (v, i) = run(py, t.numel(), || t.nanmedian_dim(d, keepdim))?;
                return_type(py, "nanmedian", v, i)
            }
        }
    }

    #[pyo3(signature = (dim=-1, keepdim=false))]
    fn mode(&self, py: Python<'_>, dim: i64, keepdim: bool) -> PyResult<Py<PyAny>> {
        let t = &self.inner;
        let (v, i) = run(py, t.numel(), || t.mode(dim, keepdim))?;
        return_type(py, "mode", v, i)
    }

    /// `unique(sorted=True, return_inverse=False, return_counts=False, dim=None)`: the values
    /// are always sorted (also allowed for `sorted=False`).
    #[pyo3(signature = (sorted=true, return_inverse=false, return_counts=false, dim=None))]
    fn unique(
        &self,
        py: Python<'_>,
        sorted: bool,
        return_inverse: bool,
        return_counts: bool,
        dim: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let _ = sorted;
        let (d, t) = (opt_int(dim)?, &self.inner);
        let u = run(py, t.numel(), || t.unique(return_inverse, return_counts, d))?;
        unique_result(py, u)
    }

    #[pyo3(signature = (return_inverse=false, return_counts=false, dim=None))]
    fn unique_consecutive(
        &self,
        py: Python<'_>,
        return_inverse: bool,
        return_counts: bool,
        dim: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let (d, t) = (opt_int(dim)?, &self.inner);
        let u = run(py, t.numel(), || {
            t.unique_consecutive(return_inverse, return_counts, d)
        })?;
        unique_result(py, u)
    }

    // ------------------------------------------------------------ counting
    #[pyo3(signature = (weights=None, minlength=0))]
    fn bincount(
        &self,
        py: Python<'_>,
        weights: Option<&Bound<'_, PyAny>>,
        minlength: i64,
    ) -> PyResult<PyTensor> {
        let w = match weights {
            Some(w) if !w.is_none() => Some(to_tensor(w)?),
            _ => None,
        };
        let t = &self.inner;
        Ok(run(py, t.numel(), || t.bincount(w.as_ref(), minlength))?.into())
    }

    #[pyo3(signature = (bins=100, min=0.0, max=0.0))]
    fn histc(&self, py: Python<'_>, bins: i64, min: f64, max: f64) -> PyResult<PyTensor> {
        let t = &self.inner;
        Ok(run(py, t.numel(), || t.histc(bins, min, max))?.into())
    }
}

impl PyTensor {
    fn max_min<const MAX: bool>(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<Py<PyAny>> {
        let t = &self.inner;
        let name = if MAX { "max" } else { "min" };
        match dim {
            Some(o) if o.cast::<PyTensor>().is_ok() => {
                let other = o.cast::<PyTensor>()?.borrow().inner.clone();
                let op = if MAX {
                    BinaryOp::Maximum
                } else {
                    BinaryOp::Minimum
                };
                let n = t.numel().max(other.numel());
                tensor_obj(py, run(py, n, || t.binary(&other, op))?)
            }
            Some(o) if !o.is_none() => {
                let d = extract_index_int(o)?;
                let (v, i) = run(py, t.numel(), || {
                    if MAX {
                        t.max_dim(d, keepdim)
                    } else {
                        t.min_dim(d, keepdim)
                    }
                })?;
                return_type(py, name, v, i)
            }
            _ => {
                let r = run(
                    py,
                    t.numel(),
                    || if MAX { t.max_all() } else { t.min_all() },
                )?;
                tensor_obj(py, r)
            }
        }
    }
}

/// `unique` returns a tensor, or a tuple when inverse indices or counts are asked for.
fn unique_result(py: Python<'_>, u: crate::tensor::Unique) -> PyResult<Py<PyAny>> {
    if u.inverse.is_none() && u.counts.is_none() {
        return tensor_obj(py, u.values);
    }
    let mut items = vec![tensor_obj(py, u.values)?];
    if let Some(i) = u.inverse {
        items.push(tensor_obj(py, i)?);
    }
    if let Some(c) = u.counts {
        items.push(tensor_obj(py, c)?);
    }
    Ok(PyTuple::new(py, items)?.into_any().unbind())
}

/// `searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
/// sorter=None)`.
#[pyfunction]
#[pyo3(signature = (sorted_sequence, input, *, out_int32=false, right=false, side=None, sorter=None, out=None))]
#[allow(clippy::too_many_arguments)]
fn searchsorted(
    py: Python<'_>,
    sorted_sequence: &Bound<'_, PyAny>,
    input: &Bound<'_, PyAny>,
    out_int32: bool,
    right: bool,
    side: Option<&str>,
    sorter: Option<&Bound<'_, PyAny>>,
    out: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let seq = to_tensor(sorted_sequence)?;
    let values = to_tensor(input)?;
    let right = match side {
        None => right,
        Some("left") if right => {
            return Err(PyRuntimeError::new_err(
                "torch.searchsorted(): side and right can't be set to opposites, got side of left while right was True",
            ))
        }
        Some("left") => false,
        Some("right") => true,
        Some(s) => {
            return Err(PyRuntimeError::new_err(format!(
                "torch.searchsorted(): side can only be 'left' or 'right' but got {s}"
            )))
        }
    };
    let sorter = match sorter {
        Some(s) if !s.is_none() => Some(to_tensor(s)?),
        _ => None,
    };
    let r = run(py, values.numel(), || {
        seq.searchsorted(&values, right, out_int32, sorter.as_ref())
    })?;
    write_out(py, r, out)
}

/// `bucketize(input, boundaries, *, out_int32=False, right=False)`.
#[pyfunction]
#[pyo3(signature = (input, boundaries, *, out_int32=false, right=false, out=None))]
fn bucketize(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    boundaries: &Bound<'_, PyAny>,
    out_int32: bool,
    right: bool,
    out: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let x = to_tensor(input)?;
    let b = to_tensor(boundaries)?;
    let r = run(py, x.numel(), || x.bucketize(&b, right, out_int32))?;
    write_out(py, r, out)
}

fn write_out(py: Python<'_>, r: Tensor, out: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
    match out {
        Some(o) if !o.is_none() => {
            let t = o.cast::<PyTensor>()?.borrow().inner.clone();
            t.copy_(&r)?;
            Ok(o.clone().unbind())
        }
        _ => tensor_obj(py, r),
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(searchsorted, m)?)?;
    m.add_function(wrap_pyfunction!(bucketize, m)?)?;
    Ok(())
}
