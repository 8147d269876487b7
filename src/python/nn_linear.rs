//! Python binding for the fused `linear` (`crate::nn::linear`): `_C._linear(input, weight,
//! bias=None)`, called by `torch.nn.functional.linear`.

use pyo3::prelude::*;

use super::run;
use super::tensor::PyTensor;

/// `input @ weight.T + bias` with one autograd node (see `crate::nn::linear`).
#[pyfunction]
#[pyo3(signature = (input, weight, bias=None))]
fn _linear(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    weight: PyRef<'_, PyTensor>,
    bias: Option<PyRef<'_, PyTensor>>,
) -> PyResult<PyTensor> {
    let (x, w) = (&input.inner, &weight.inner);
    let b = bias.as_ref().map(|b| &b.inner);
    // Work of the product (rows * in * out), so the GIL is released only when it pays.
    let rows = x.numel() / x.shape().last().copied().unwrap_or(1).max(1);
    let work = rows.saturating_mul(w.numel());
    Ok(run(py, work, || crate::nn::linear::linear(x, w, b))?.into())
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_linear, m)?)?;
    Ok(())
}
