//! Python bindings for `crate::nn::pool`: PyTorch's argument forms (an int or a tuple per
//! spatial argument, `stride=None`/`[]` meaning the kernel size); the work is in the kernels.

use super::convert::{extract_i64_seq, extract_index_int};
use super::run;
use super::tensor::PyTensor;
use crate::nn::pool::{self, AvgPool2dParams, MaxPool2dParams, NearestMode};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// An int, or a sequence of 1 or `n` ints, as `n` ints.
fn ints(op: &str, name: &str, obj: &Bound<'_, PyAny>, n: usize) -> PyResult<Vec<i64>> {
    if let Ok(v) = extract_index_int(obj) {
        return Ok(vec![v; n]);
    }
    let v = extract_i64_seq(obj)?;
    match v.len() {
        1 => Ok(vec![v[0]; n]),
        k if k == n => Ok(v),
        _ => Err(PyRuntimeError::new_err(if n == 1 {
            format!("{op}: {name} must be a single int, or a tuple of one int")
        } else {
            format!("{op}: {name} must either be a single int, or a tuple of {n} ints")
        })),
    }
}

/// Like [`ints`], with a missing value (None or an empty sequence) giving `default`.
fn ints_or(
    op: &str,
    name: &str,
    obj: Option<&Bound<'_, PyAny>>,
    n: usize,
    default: &[i64],
) -> PyResult<Vec<i64>> {
    match obj {
        None => Ok(default.to_vec()),
        Some(o) if o.is_none() => Ok(default.to_vec()),
        Some(o) => {
            if extract_index_int(o).is_err() && extract_i64_seq(o)?.is_empty() {
                return Ok(default.to_vec());
            }
            ints(op, name, o, n)
        }
    }
}

fn pair(v: &[i64]) -> [i64; 2] {
    [v[0], v[1]]
}

fn max2d_params(
    op: &str,
    kernel_size: &Bound<'_, PyAny>,
    stride: Option<&Bound<'_, PyAny>>,
    padding: Option<&Bound<'_, PyAny>>,
    dilation: Option<&Bound<'_, PyAny>>,
    ceil_mode: bool,
) -> PyResult<MaxPool2dParams> {
    let k = ints(op, "kernel_size", kernel_size, 2)?;
    Ok(MaxPool2dParams {
        kernel_size: pair(&k),
        stride: pair(&ints_or(op, "stride", stride, 2, &k)?),
        padding: pair(&ints_or(op, "padding", padding, 2, &[0, 0])?),
        dilation: pair(&ints_or(op, "dilation", dilation, 2, &[1, 1])?),
        ceil_mode,
    })
}

type Max1dArgs = (i64, i64, i64, i64);

fn max1d_params(
    op: &str,
    kernel_size: &Bound<'_, PyAny>,
    stride: Option<&Bound<'_, PyAny>>,
    padding: Option<&Bound<'_, PyAny>>,
    dilation: Option<&Bound<'_, PyAny>>,
) -> PyResult<Max1dArgs> {
    let k = ints(op, "kernel_size", kernel_size, 1)?[0];
    Ok((
        k,
        ints_or(op, "stride", stride, 1, &[k])?[0],
        ints_or(op, "padding", padding, 1, &[0])?[0],
        ints_or(op, "dilation", dilation, 1, &[1])?[0],
    ))
}

#[pyfunction]
#[pyo3(signature = (input, kernel_size, stride=None, padding=None, dilation=None, ceil_mode=false))]
fn max_pool2d(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    kernel_size: &Bound<'_, PyAny>,
    stride: Option<&Bound<'_, PyAny>>,
    padding: Option<&Bound<'_, PyAny>>,
    dilation: Option<&Bound<'_, PyAny>>,
    ceil_mode: bool,
) -> PyResult<PyTensor> {
    let p = max2d_params(
        "max_pool2d",
        kernel_size,
        stride,
        padding,
        dilation,
        ceil_mode,
    )?;
    let x = &input.inner;
    Ok(run(py, x.numel(), || pool::max_pool2d(x, &p))?.into())
}

#[pyfunction]
#[pyo3(signature = (input, kernel_size, stride=None, padding=None, dilation=None, ceil_mode=false))]
fn _max_pool2d_with_indices(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    kernel_size: &Bound<'_, PyAny>,
    stride: Option<&Bound<'_, PyAny>>,
    padding: Option<&Bound<'_, PyAny>>,
    dilation: Option<&Bound<'_, PyAny>>,
    ceil_mode: bool,
) -> PyResult<(PyTensor, PyTensor)> {
    let p = max2d_params(
        "max_pool2d_with_indices",
        kernel_size,
        stride,
        padding,
        dilation,
        ceil_mode,
    )?;
    let x = &input.inner;
    let (o, i) = run(py, x.numel(), || pool::max_pool2d_with_indices(x, &p))?;
    Ok((o.into(), i.into()))
}

#[pyfunction]
#[pyo3(signature = (input, kernel_size, stride=None, padding=None, dilation=None, ceil_mode=false))]
fn max_pool1d(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    kernel_size: &Bound<'_, PyAny>,
    stride: Option<&Bound<'_, PyAny>>,
    padding: Option<&Bound<'_, PyAny>>,
    dilation: Option<&Bound<'_, PyAny>>,
    ceil_mode: bool,
) -> PyResult<PyTensor> {
    let (k, s, p, d) = max1d_params("max_pool1d", kernel_size, stride, padding, dilation)?;
    let x = &input.inner;
    Ok(run(py, x.numel(), || pool::max_pool1d(x, k, s, p, d, ceil_mode))?.into())
}

#[pyfunction]
#[pyo3(signature = (input, kernel_size, stride=None, padding=None, dilation=None, ceil_mode=false))]
fn max_pool1d_with_indices(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    kernel_size: &Bound<'_, PyAny>,
    stride: Option<&Bound<'_, PyAny>>,
    padding: Option<&Bound<'_, PyAny>>,
    dilation: Option<&Bound<'_, PyAny>>,
    ceil_mode: bool,
) -> PyResult<(PyTensor, PyTensor)> {
    let (k, s, p, d) = max1d_params(
        "max_pool1d_with_indices",
        kernel_size,
        stride,
        padding,
        dilation,
    )?;
    let x = &input.inner;
    let (o, i) = run(py, x.numel(), || {
        pool::max_pool1d_with_indices(x, k, s, p, d, ceil_mode)
    })?;
    Ok((o.into(), i.into()))
}

#[pyfunction]
#[pyo3(signature = (input, kernel_size, stride=None, padding=None, ceil_mode=false, count_include_pad=true))]
fn avg_pool1d(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    kernel_size: &Bound<'_, PyAny>,
    stride: Option<&Bound<'_, PyAny>>,
    padding: Option<&Bound<'_, PyAny>>,
    ceil_mode: bool,
    count_include_pad: bool,
) -> PyResult<PyTensor> {
    let op = "avg_pool1d";
    let k = ints(op, "kernel_size", kernel_size, 1)?[0];
    let s = ints_or(op, "stride", stride, 1, &[k])?[0];
    let p = ints_or(op, "padding", padding, 1, &[0])?[0];
    let x = &input.inner;
    Ok(run(py, x.numel(), || {
        pool::avg_pool1d(x, k, s, p, ceil_mode, count_include_pad)
    })?
    .into())
}

#[pyfunction]
#[pyo3(signature = (input, kernel_size, stride=None, padding=None, ceil_mode=false, count_include_pad=true, divisor_override=None))]
#[allow(clippy::too_many_arguments)]
fn _avg_pool2d(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    kernel_size: &Bound<'_, PyAny>,
    stride: Option<&Bound<'_, PyAny>>,
    padding: Option<&Bound<'_, PyAny>>,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> PyResult<PyTensor> {
    let op = "avg_pool2d";
    let k = ints(op, "kernel_size", kernel_size, 2)?;
    let p = AvgPool2dParams {
        kernel_size: pair(&k),
        stride: pair(&ints_or(op, "stride", stride, 2, &k)?),
        padding: pair(&ints_or(op, "padding", padding, 2, &[0, 0])?),
        ceil_mode,
        count_include_pad,
        divisor_override,
    };
    let x = &input.inner;
    Ok(run(py, x.numel(), || pool::avg_pool2d(x, &p))?.into())
}

#[pyfunction]
fn adaptive_avg_pool1d(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    output_size: &Bound<'_, PyAny>,
) -> PyResult<PyTensor> {
    let o = ints("adaptive_avg_pool1d", "output_size", output_size, 1)?[0];
    let x = &input.inner;
    Ok(run(py, x.numel(), || pool::adaptive_avg_pool1d(x, o))?.into())
}

#[pyfunction]
fn _adaptive_avg_pool2d(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    output_size: &Bound<'_, PyAny>,
) -> PyResult<PyTensor> {
    let o = ints("adaptive_avg_pool2d", "output_size", output_size, 2)?;
    let x = &input.inner;
    Ok(run(py, x.numel(), || pool::adaptive_avg_pool2d(x, pair(&o)))?.into())
}

#[pyfunction]
fn adaptive_max_pool1d(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    output_size: &Bound<'_, PyAny>,
) -> PyResult<(PyTensor, PyTensor)> {
    let o = ints("adaptive_max_pool1d", "output_size", output_size, 1)?[0];
    let x = &input.inner;
    let (v, i) = run(py, x.numel(), || pool::adaptive_max_pool1d(x, o))?;
    Ok((v.into(), i.into()))
}

#[pyfunction]
fn _adaptive_max_pool2d(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    output_size: &Bound<'_, PyAny>,
) -> PyResult<(PyTensor, PyTensor)> {
    let o = ints("adaptive_max_pool2d", "output_size", output_size, 2)?;
    let x = &input.inner;
    let (v, i) = run(py, x.numel(), || pool::adaptive_max_pool2d(x, pair(&o)))?;
    Ok((v.into(), i.into()))
}

fn out_numel(x: &crate::Tensor, out: &[i64]) -> usize {
    x.shape().iter().take(2).product::<usize>()
        * out.iter().map(|&v| v.max(0) as usize).product::<usize>()
}

#[pyfunction]
#[pyo3(signature = (input, output_size, scales=None))]
fn _upsample_nearest1d(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    output_size: &Bound<'_, PyAny>,
    scales: Option<f64>,
) -> PyResult<PyTensor> {
    let o = ints("upsample_nearest1d", "output_size", output_size, 1)?;
    let x = &input.inner;
    Ok(run(py, out_numel(x, &o), || {
        pool::upsample_nearest1d(x, o[0], scales, NearestMode::Nearest)
    })?
    .into())
}

#[pyfunction]
#[pyo3(signature = (input, output_size, scales=None))]
fn _upsample_nearest_exact1d(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    output_size: &Bound<'_, PyAny>,
    scales: Option<f64>,
) -> PyResult<PyTensor> {
    let o = ints("_upsample_nearest_exact1d", "output_size", output_size, 1)?;
    let x = &input.inner;
    Ok(run(py, out_numel(x, &o), || {
        pool::upsample_nearest1d(x, o[0], scales, NearestMode::Exact)
    })?
    .into())
}

#[pyfunction]
#[pyo3(signature = (input, output_size, scales_h=None, scales_w=None))]
fn _upsample_nearest2d(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    output_size: &Bound<'_, PyAny>,
    scales_h: Option<f64>,
    scales_w: Option<f64>,
) -> PyResult<PyTensor> {
    let o = ints("upsample_nearest2d", "output_size", output_size, 2)?;
    let x = &input.inner;
    Ok(run(py, out_numel(x, &o), || {
        pool::upsample_nearest2d(x, pair(&o), [scales_h, scales_w], NearestMode::Nearest)
    })?
    .into())
}

#[pyfunction]
#[pyo3(signature = (input, output_size, scales_h=None, scales_w=None))]
fn _upsample_nearest_exact2d(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    output_size: &Bound<'_, PyAny>,
    scales_h: Option<f64>,
    scales_w: Option<f64>,
) -> PyResult<PyTensor> {
    let o = ints("_upsample_nearest_exact2d", "output_size", output_size, 2)?;
    let x = &input.inner;
    Ok(run(py, out_numel(x, &o), || {
        pool::upsample_nearest2d(x, pair(&o), [scales_h, scales_w], NearestMode::Exact)
    })?
    .into())
}

#[pyfunction]
#[pyo3(signature = (input, output_size, align_corners, scales=None))]
fn _upsample_linear1d(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    output_size: &Bound<'_, PyAny>,
    align_corners: bool,
    scales: Option<f64>,
) -> PyResult<PyTensor> {
    let o = ints("upsample_linear1d", "output_size", output_size, 1)?;
    let x = &input.inner;
    Ok(run(py, out_numel(x, &o), || {
        pool::upsample_linear1d(x, o[0], align_corners, scales)
    })?
    .into())
}

#[pyfunction]
#[pyo3(signature = (input, output_size, align_corners, scales_h=None, scales_w=None))]
fn _upsample_bilinear2d(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    output_size: &Bound<'_, PyAny>,
    align_corners: bool,
    scales_h: Option<f64>,
    scales_w: Option<f64>,
) -> PyResult<PyTensor> {
    let o = ints("upsample_bilinear2d", "output_size", output_size, 2)?;
    let x = &input.inner;
    Ok(run(py, out_numel(x, &o), || {
        pool::upsample_bilinear2d(x, pair(&o), align_corners, [scales_h, scales_w])
    })?
    .into())
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(max_pool1d, m)?)?;
    m.add_function(wrap_pyfunction!(max_pool1d_with_indices, m)?)?;
    m.add_function(wrap_pyfunction!(max_pool2d, m)?)?;
    m.add_function(wrap_pyfunction!(_max_pool2d_with_indices, m)?)?;
    m.add_function(wrap_pyfunction!(avg_pool1d, m)?)?;
    m.add_function(wrap_pyfunction!(_avg_pool2d, m)?)?;
    m.add_function(wrap_pyfunction!(adaptive_avg_pool1d, m)?)?;
    m.add_function(wrap_pyfunction!(_adaptive_avg_pool2d, m)?)?;
    m.add_function(wrap_pyfunction!(adaptive_max_pool1d, m)?)?;
    m.add_function(wrap_pyfunction!(_adaptive_max_pool2d, m)?)?;
    m.add_function(wrap_pyfunction!(_upsample_nearest1d, m)?)?;
    m.add_function(wrap_pyfunction!(_upsample_nearest_exact1d, m)?)?;
    m.add_function(wrap_pyfunction!(_upsample_nearest2d, m)?)?;
    m.add_function(wrap_pyfunction!(_upsample_nearest_exact2d, m)?)?;
    m.add_function(wrap_pyfunction!(_upsample_linear1d, m)?)?;
    m.add_function(wrap_pyfunction!(_upsample_bilinear2d, m)?)?;
    Ok(())
}
