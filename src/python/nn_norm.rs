//! Python bindings for `crate::nn::norm`: `_C.batch_norm`, `_C.layer_norm`, `_C.group_norm`,
//! `_C.rms_norm` (PyTorch's top-level argument orders), `_C.native_layer_norm`, and the
//! fused `_C._cross_entropy` (`crate::nn::loss`).

use super::convert::{extract_dims, extract_i64_seq};
use super::run;
use super::tensor::PyTensor;
use crate::nn::norm;
use crate::Tensor;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

fn opt(t: &Option<PyRef<'_, PyTensor>>) -> Option<Tensor> {
    t.as_ref().map(|t| t.inner.clone())
}

/// `normalized_shape`: an int or a sequence of non-negative ints.
fn normalized_shape(obj: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
    let dims = match extract_dims(Some(obj))? {
        Some(d) => d,
        None => extract_i64_seq(obj)?,
    };
    dims.into_iter()
        .map(|d| {
            usize::try_from(d).map_err(|_| {
                PyRuntimeError::new_err(format!(
                    "normalized_shape must contain non-negative sizes, got {d}"
                ))
            })
        })
        .collect()
}

#[pyfunction]
#[pyo3(signature = (input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled=true))]
#[allow(clippy::too_many_arguments)]
fn batch_norm(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    weight: Option<PyRef<'_, PyTensor>>,
    bias: Option<PyRef<'_, PyTensor>>,
    running_mean: Option<PyRef<'_, PyTensor>>,
    running_var: Option<PyRef<'_, PyTensor>>,
    training: bool,
    momentum: f64,
    eps: f64,
    cudnn_enabled: bool,
) -> PyResult<PyTensor> {
    let _ = cudnn_enabled;
    let x = input.inner.clone();
    let (w, b, rm, rv) = (
        opt(&weight),
        opt(&bias),
        opt(&running_mean),
        opt(&running_var),
    );
    let r = run(py, x.numel(), || {
        norm::batch_norm(
            &x,
            rm.as_ref(),
            rv.as_ref(),
            w.as_ref(),
            b.as_ref(),
            training,
            momentum,
            eps,
        )
    })?;
    Ok(r.output.into())
}

#[pyfunction]
#[pyo3(signature = (input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=true))]
fn layer_norm(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    normalized_shape: &Bound<'_, PyAny>,
    weight: Option<PyRef<'_, PyTensor>>,
    bias: Option<PyRef<'_, PyTensor>>,
    eps: f64,
    cudnn_enable: bool,
) -> PyResult<PyTensor> {
    let _ = cudnn_enable;
    let ns = self::normalized_shape(normalized_shape)?;
    let x = input.inner.clone();
    let (w, b) = (opt(&weight), opt(&bias));
    let r = run(py, x.numel(), || {
        norm::layer_norm(&x, &ns, w.as_ref(), b.as_ref(), eps)
    })?;
    Ok(r.output.into())
}

/// `(output, mean, rstd)` as `torch.native_layer_norm`.
#[pyfunction]
fn native_layer_norm(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    normalized_shape: &Bound<'_, PyAny>,
    weight: Option<PyRef<'_, PyTensor>>,
    bias: Option<PyRef<'_, PyTensor>>,
    eps: f64,
) -> PyResult<(PyTensor, PyTensor, PyTensor)> {
    let ns = self::normalized_shape(normalized_shape)?;
    let x = input.inner.clone();
    let (w, b) = (opt(&weight), opt(&bias));
    let r = run(py, x.numel(), || {
        norm::layer_norm(&x, &ns, w.as_ref(), b.as_ref(), eps)
    })?;
    Ok((r.output.into(), r.mean.into(), r.rstd.into()))
}

#[pyfunction]
#[pyo3(signature = (input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=true))]
fn group_norm(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    num_groups: i64,
    weight: Option<PyRef<'_, PyTensor>>,
    bias: Option<PyRef<'_, PyTensor>>,
    eps: f64,
    cudnn_enabled: bool,
) -> PyResult<PyTensor> {
    let _ = cudnn_enabled;
    let x = input.inner.clone();
    let g = usize::try_from(num_groups).unwrap_or(0);
    let (w, b) = (opt(&weight), opt(&bias));
    let r = run(py, x.numel(), || {
        norm::group_norm(&x, g, w.as_ref(), b.as_ref(), eps)
    })?;
    Ok(r.output.into())
}

#[pyfunction]
#[pyo3(signature = (input, normalized_shape, weight=None, eps=None))]
fn rms_norm(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    normalized_shape: &Bound<'_, PyAny>,
    weight: Option<PyRef<'_, PyTensor>>,
    eps: Option<f64>,
) -> PyResult<PyTensor> {
    let ns = self::normalized_shape(normalized_shape)?;
    let x = input.inner.clone();
    let w = opt(&weight);
    let r = run(py, x.numel(), || norm::rms_norm(&x, &ns, w.as_ref(), eps))?;
    Ok(r.output.into())
}

/// Fused cross entropy with int64 class-index targets (`F.cross_entropy`'s common case).
#[pyfunction]
#[pyo3(signature = (input, target, weight=None, reduction="mean", ignore_index=-100, label_smoothing=0.0))]
fn _cross_entropy(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    target: PyRef<'_, PyTensor>,
    weight: Option<PyRef<'_, PyTensor>>,
    reduction: &str,
    ignore_index: i64,
    label_smoothing: f64,
) -> PyResult<PyTensor> {
    let red = crate::nn::loss::Reduction::parse(reduction)?;
    let (x, t, w) = (input.inner.clone(), target.inner.clone(), opt(&weight));
    let r = run(py, x.numel(), || {
        crate::nn::loss::cross_entropy(&x, &t, w.as_ref(), red, ignore_index, label_smoothing)
    })?;
    Ok(r.into())
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(batch_norm, m)?)?;
    m.add_function(wrap_pyfunction!(layer_norm, m)?)?;
    m.add_function(wrap_pyfunction!(native_layer_norm, m)?)?;
    m.add_function(wrap_pyfunction!(group_norm, m)?)?;
    m.add_function(wrap_pyfunction!(rms_norm, m)?)?;
    m.add_function(wrap_pyfunction!(_cross_entropy, m)?)?;
    Ok(())
}
