//! Python bindings for `crate::nn::rnn`: the fused pointwise parts of the LSTM and GRU cells,
//! `_C._lstm_cell_pointwise(gates, c)` and `_C._gru_cell_pointwise(igates, hgates, h)`.

use super::run;
use super::tensor::PyTensor;
use crate::nn::rnn;
use pyo3::prelude::*;

#[pyfunction]
#[pyo3(name = "_lstm_cell_pointwise")]
fn lstm_cell_pointwise(
    py: Python<'_>,
    gates: PyRef<'_, PyTensor>,
    c: PyRef<'_, PyTensor>,
) -> PyResult<(PyTensor, PyTensor)> {
    let (g, c) = (gates.inner.clone(), c.inner.clone());
    let (h, c) = run(py, g.numel(), || rnn::lstm_cell_pointwise(&g, &c))?;
    Ok((h.into(), c.into()))
}

#[pyfunction]
#[pyo3(name = "_gru_cell_pointwise")]
fn gru_cell_pointwise(
    py: Python<'_>,
    igates: PyRef<'_, PyTensor>,
    hgates: PyRef<'_, PyTensor>,
    h: PyRef<'_, PyTensor>,
) -> PyResult<PyTensor> {
    let (ig, hg, h) = (igates.inner.clone(), hgates.inner.clone(), h.inner.clone());
    let out = run(py, ig.numel(), || rnn::gru_cell_pointwise(&ig, &hg, &h))?;
    Ok(out.into())
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(lstm_cell_pointwise, m)?)?;
    m.add_function(wrap_pyfunction!(gru_cell_pointwise, m)?)?;
    Ok(())
}
