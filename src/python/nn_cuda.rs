//! Python bindings of the CUDA-only nn helpers: `_C._embedding_dense_backward` (the dense
//! gradient of `F.embedding` for CUDA tensors, nn.cu's `embedding_bwd`).

use super::run;
use super::tensor::PyTensor;
use crate::{Error, Result};
use pyo3::prelude::*;

/// `grad_weight (num_weights, dim)`: the rows of `grad` `(n, dim)` summed at `indices`
/// `(n)` (int64); `padding_idx < 0` means none. CUDA tensors only (the CPU path of
/// `F.embedding` uses `index_add_`).
#[pyfunction]
fn _embedding_dense_backward(
    py: Python<'_>,
    grad: PyRef<'_, PyTensor>,
    indices: PyRef<'_, PyTensor>,
    num_weights: i64,
    padding_idx: i64,
) -> PyResult<PyTensor> {
    let (g, idx) = (grad.inner.clone(), indices.inner.clone());
    let num = usize::try_from(num_weights).map_err(|_| {
        Error::Runtime(format!(
            "embedding_backward: num_weights must be non-negative, got {num_weights}"
        ))
    })?;
    let r = run(py, g.numel(), || -> Result<crate::Tensor> {
        if !g.device().is_cuda() {
            return Err(Error::Runtime(
                "_embedding_dense_backward: expected a CUDA gradient".into(),
            ));
        }
        if idx.device() != g.device() {
            return Err(Error::DeviceMismatch {
                op: "embedding_backward",
                lhs: g.device(),
                rhs: idx.device(),
            });
        }
        crate::cuda::nn_ops::embedding_bwd(&g, &idx, num, padding_idx)
    })?;
    Ok(r.into())
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_embedding_dense_backward, m)?)?;
    Ok(())
}
