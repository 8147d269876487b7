//! Python bindings for `crate::nn::conv`: `_C.conv1d`, `_C.conv2d`, `_C.conv_transpose1d`,
//! `_C.conv_transpose2d` with PyTorch's signatures.

use super::convert::extract_dims;
use super::run;
use super::tensor::PyTensor;
use crate::nn::conv::{convolution, ConvPadding, ConvParams};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::PyString;

/// An int or a sequence of ints (`stride`, `dilation`, ...).
fn int_or_seq(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<i64>> {
    match extract_dims(Some(obj)) {
        Ok(Some(v)) if !v.is_empty() => Ok(v),
        _ => Err(PyTypeError::new_err(format!(
            "{name} must be an int or a tuple of ints, got {}",
            obj.repr()?
        ))),
    }
}

fn padding_arg(obj: &Bound<'_, PyAny>) -> PyResult<ConvPadding> {
    if let Ok(s) = obj.cast::<PyString>() {
        return match s.to_str()? {
            "same" => Ok(ConvPadding::Same),
            "valid" => Ok(ConvPadding::Valid),
            other => Err(PyRuntimeError::new_err(format!(
                "Invalid padding string: '{other}'"
            ))),
        };
    }
    Ok(ConvPadding::Explicit(int_or_seq(obj, "padding")?))
}

#[allow(clippy::too_many_arguments)]
fn call(
    py: Python<'_>,
    input: &PyTensor,
    weight: &PyTensor,
    bias: Option<PyRef<'_, PyTensor>>,
    stride: &Bound<'_, PyAny>,
    padding: &Bound<'_, PyAny>,
    output_padding: Option<&Bound<'_, PyAny>>,
    dilation: &Bound<'_, PyAny>,
    groups: i64,
    transposed: bool,
    nd: usize,
) -> PyResult<PyTensor> {
    let params = ConvParams {
        stride: int_or_seq(stride, "stride")?,
        padding: padding_arg(padding)?,
        dilation: int_or_seq(dilation, "dilation")?,
        output_padding: match output_padding {
            Some(o) => int_or_seq(o, "output_padding")?,
            None => vec![0],
        },
        groups,
    };
    let (x, w) = (&input.inner, &weight.inner);
    let b = bias.as_ref().map(|b| b.inner.clone());
    let work = x.numel() + w.numel() * 8;
    let out = run(py, work, || {
        convolution(x, w, b.as_ref(), &params, transposed, nd)
    })?;
    Ok(out.into())
}

#[pyfunction]
#[pyo3(signature = (input, weight, bias=None, stride=None, padding=None, dilation=None, groups=1))]
#[allow(clippy::too_many_arguments)]
fn conv1d(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    weight: PyRef<'_, PyTensor>,
    bias: Option<PyRef<'_, PyTensor>>,
    stride: Option<Bound<'_, PyAny>>,
    padding: Option<Bound<'_, PyAny>>,
    dilation: Option<Bound<'_, PyAny>>,
    groups: i64,
) -> PyResult<PyTensor> {
    conv_common(
        py, &input, &weight, bias, stride, padding, None, dilation, groups, false, 1,
    )
}

#[pyfunction]
#[pyo3(signature = (input, weight, bias=None, stride=None, padding=None, dilation=None, groups=1))]
#[allow(clippy::too_many_arguments)]
fn conv2d(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    weight: PyRef<'_, PyTensor>,
    bias: Option<PyRef<'_, PyTensor>>,
    stride: Option<Bound<'_, PyAny>>,
    padding: Option<Bound<'_, PyAny>>,
    dilation: Option<Bound<'_, PyAny>>,
    groups: i64,
) -> PyResult<PyTensor> {
    conv_common(
        py, &input, &weight, bias, stride, padding, None, dilation, groups, false, 2,
    )
}

#[pyfunction]
#[pyo3(signature = (input, weight, bias=None, stride=None, padding=None, output_padding=None, groups=1, dilation=None))]
#[allow(clippy::too_many_arguments)]
fn conv_transpose1d(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    weight: PyRef<'_, PyTensor>,
    bias: Option<PyRef<'_, PyTensor>>,
    stride: Option<Bound<'_, PyAny>>,
    padding: Option<Bound<'_, PyAny>>,
    output_padding: Option<Bound<'_, PyAny>>,
    groups: i64,
    dilation: Option<Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    conv_common(
        py,
        &input,
        &weight,
        bias,
        stride,
        padding,
        output_padding,
        dilation,
        groups,
        true,
        1,
    )
}

#[pyfunction]
#[pyo3(signature = (input, weight, bias=None, stride=None, padding=None, output_padding=None, groups=1, dilation=None))]
#[allow(clippy::too_many_arguments)]
fn conv_transpose2d(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    weight: PyRef<'_, PyTensor>,
    bias: Option<PyRef<'_, PyTensor>>,
    stride: Option<Bound<'_, PyAny>>,
    padding: Option<Bound<'_, PyAny>>,
    output_padding: Option<Bound<'_, PyAny>>,
    groups: i64,
    dilation: Option<Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    conv_common(
        py,
        &input,
        &weight,
        bias,
        stride,
        padding,
        output_padding,
        dilation,
        groups,
        true,
        2,
    )
}

/// Fill in PyTorch's defaults (stride 1, padding 0, dilation 1) and call the kernel.
#[allow(clippy::too_many_arguments)]
fn conv_common(
    py: Python<'_>,
    input: &PyTensor,
    weight: &PyTensor,
    bias: Option<PyRef<'_, PyTensor>>,
    stride: Option<Bound<'_, PyAny>>,
    padding: Option<Bound<'_, PyAny>>,
    output_padding: Option<Bound<'_, PyAny>>,
    dilation: Option<Bound<'_, PyAny>>,
    groups: i64,
    transposed: bool,
    nd: usize,
) -> PyResult<PyTensor> {
    let one = 1i64.into_pyobject(py)?.into_any();
    let zero = 0i64.into_pyobject(py)?.into_any();
    call(
        py,
        input,
        weight,
        bias,
        stride.as_ref().unwrap_or(&one),
        padding.as_ref().unwrap_or(&zero),
        output_padding.as_ref(),
        dilation.as_ref().unwrap_or(&one),
        groups,
        transposed,
        nd,
    )
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(conv1d, m)?)?;
    m.add_function(wrap_pyfunction!(conv2d, m)?)?;
    m.add_function(wrap_pyfunction!(conv_transpose1d, m)?)?;
    m.add_function(wrap_pyfunction!(conv_transpose2d, m)?)?;
    Ok(())
}
