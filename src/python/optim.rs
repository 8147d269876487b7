//! Python bindings for `crate::optim`: one fused in-place update per param group
//! (`_C._fused_sgd_`, `_C._fused_adam_`, ...), called by `ferrotorch.optim`.

use pyo3::prelude::*;

use super::run;
use super::tensor::PyTensor;
use crate::optim::{
    self, AdadeltaOptions, AdagradOptions, AdamOptions, RmspropOptions, SgdOptions,
};
use crate::Tensor;

fn tensors(list: Vec<PyRef<'_, PyTensor>>) -> Vec<Tensor> {
    list.iter().map(|t| t.inner.clone()).collect()
}

fn total_numel(ts: &[Tensor]) -> usize {
    ts.iter().map(|t| t.numel()).sum()
}

#[pyfunction]
#[pyo3(signature = (params, grads, momentum_buffers, fresh, *, lr, momentum, dampening,
                    weight_decay, nesterov, maximize))]
#[allow(clippy::too_many_arguments)]
fn _fused_sgd_(
    py: Python<'_>,
    params: Vec<PyRef<'_, PyTensor>>,
    grads: Vec<PyRef<'_, PyTensor>>,
    momentum_buffers: Vec<PyRef<'_, PyTensor>>,
    fresh: Vec<bool>,
    lr: f64,
    momentum: f64,
    dampening: f64,
    weight_decay: f64,
    nesterov: bool,
    maximize: bool,
) -> PyResult<()> {
    let (p, g, b) = (tensors(params), tensors(grads), tensors(momentum_buffers));
    let o = SgdOptions {
        lr,
        momentum,
        dampening,
        weight_decay,
        nesterov,
        maximize,
    };
    run(py, total_numel(&p), || {
        optim::sgd_step(&p, &g, &b, &fresh, &o)
    })
}

#[pyfunction]
#[pyo3(signature = (params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, *, lr, beta1,
                    beta2, eps, weight_decay, amsgrad, maximize, decoupled))]
#[allow(clippy::too_many_arguments)]
fn _fused_adam_(
    py: Python<'_>,
    params: Vec<PyRef<'_, PyTensor>>,
    grads: Vec<PyRef<'_, PyTensor>>,
    exp_avgs: Vec<PyRef<'_, PyTensor>>,
    exp_avg_sqs: Vec<PyRef<'_, PyTensor>>,
    max_exp_avg_sqs: Vec<PyRef<'_, PyTensor>>,
    steps: Vec<PyRef<'_, PyTensor>>,
    lr: f64,
    beta1: f64,
    beta2: f64,
    eps: f64,
    weight_decay: f64,
    amsgrad: bool,
    maximize: bool,
    decoupled: bool,
) -> PyResult<()> {
    let (p, g) = (tensors(params), tensors(grads));
    let (m, v, vmax, s) = (
        tensors(exp_avgs),
        tensors(exp_avg_sqs),
        tensors(max_exp_avg_sqs),
        tensors(steps),
    );
    let o = AdamOptions {
        lr,
        beta1,
        beta2,
        eps,
        weight_decay,
        amsgrad,
        maximize,
        decoupled,
    };
    run(py, total_numel(&p), || {
        optim::adam_step(&p, &g, &m, &v, &vmax, &s, &o)
    })
}

#[pyfunction]
#[pyo3(signature = (params, grads, square_avgs, momentum_buffers, grad_avgs, steps, *, lr, alpha,
                    eps, weight_decay, momentum, centered, maximize))]
#[allow(clippy::too_many_arguments)]
fn _fused_rmsprop_(
    py: Python<'_>,
    params: Vec<PyRef<'_, PyTensor>>,
    grads: Vec<PyRef<'_, PyTensor>>,
    square_avgs: Vec<PyRef<'_, PyTensor>>,
    momentum_buffers: Vec<PyRef<'_, PyTensor>>,
    grad_avgs: Vec<PyRef<'_, PyTensor>>,
    steps: Vec<PyRef<'_, PyTensor>>,
    lr: f64,
    alpha: f64,
    eps: f64,
    weight_decay: f64,
    momentum: f64,
    centered: bool,
    maximize: bool,
) -> PyResult<()> {
    let (p, g) = (tensors(params), tensors(grads));
    let (sq, buf, gavg, s) = (
        tensors(square_avgs),
        tensors(momentum_buffers),
        tensors(grad_avgs),
        tensors(steps),
    );
    let o = RmspropOptions {
        lr,
        alpha,
        eps,
        weight_decay,
        momentum,
        centered,
        maximize,
    };
    run(py, total_numel(&p), || {
        optim::rmsprop_step(&p, &g, &sq, &buf, &gavg, &s, &o)
    })
}

#[pyfunction]
#[pyo3(signature = (params, grads, sums, steps, *, lr, lr_decay, weight_decay, eps, maximize))]
#[allow(clippy::too_many_arguments)]
fn _fused_adagrad_(
    py: Python<'_>,
    params: Vec<PyRef<'_, PyTensor>>,
    grads: Vec<PyRef<'_, PyTensor>>,
    sums: Vec<PyRef<'_, PyTensor>>,
    steps: Vec<PyRef<'_, PyTensor>>,
    lr: f64,
    lr_decay: f64,
    weight_decay: f64,
    eps: f64,
    maximize: bool,
) -> PyResult<()> {
    let (p, g, sums, s) = (
        tensors(params),
        tensors(grads),
        tensors(sums),
        tensors(steps),
    );
    let o = AdagradOptions {
        lr,
        lr_decay,
        weight_decay,
        eps,
        maximize,
    };
    run(py, total_numel(&p), || {
        optim::adagrad_step(&p, &g, &sums, &s, &o)
    })
}

#[pyfunction]
#[pyo3(signature = (params, grads, square_avgs, acc_deltas, steps, *, lr, rho, eps, weight_decay,
                    maximize))]
#[allow(clippy::too_many_arguments)]
fn _fused_adadelta_(
    py: Python<'_>,
    params: Vec<PyRef<'_, PyTensor>>,
    grads: Vec<PyRef<'_, PyTensor>>,
    square_avgs: Vec<PyRef<'_, PyTensor>>,
    acc_deltas: Vec<PyRef<'_, PyTensor>>,
    steps: Vec<PyRef<'_, PyTensor>>,
    lr: f64,
    rho: f64,
    eps: f64,
    weight_decay: f64,
    maximize: bool,
) -> PyResult<()> {
    let (p, g) = (tensors(params), tensors(grads));
    let (sq, acc, s) = (tensors(square_avgs), tensors(acc_deltas), tensors(steps));
    let o = AdadeltaOptions {
        lr,
        rho,
        eps,
        weight_decay,
        maximize,
    };
    run(py, total_numel(&p), || {
        optim::adadelta_step(&p, &g, &sq, &acc, &s, &o)
    })
}

/// The fused optimizers' input gathering in one call: for the parameters of a group, the
/// ones that have a gradient and those gradients (made contiguous), or `None` when some
/// parameter needs the generic tensor-op path (not a float32/float64 CPU tensor or a float
/// CUDA tensor, a gradient on another device, a non-contiguous parameter, a gradient of another dtype or shape) or is not a tensor.
/// With `cuda`, float CUDA parameters (any float dtype) are accepted too.
#[pyfunction]
#[pyo3(signature = (params, cuda=false))]
#[allow(clippy::type_complexity)]
fn _fused_grads<'py>(
    params: &Bound<'py, PyAny>,
    cuda: bool,
) -> PyResult<Option<(Vec<Bound<'py, PyAny>>, Vec<PyTensor>)>> {
    use crate::{DType, Device};
    let mut ps = Vec::new();
    let mut gs = Vec::new();
    for item in params.try_iter()? {
        let item = item?;
        let Ok(t) = item.cast::<PyTensor>() else {
            return Ok(None);
        };
        let g = {
            let p = &t.borrow().inner;
            let Some(g) = p.grad() else { continue };
            // CPU: float32/float64 kernels; CUDA (optim.cu): every float dtype.
            let fused_dtype = match p.device() {
                Device::Cpu => matches!(p.dtype(), DType::F32 | DType::F64),
                Device::Cuda(_) => cuda && p.dtype().is_floating_point(),
            };
            if !fused_dtype
                || g.dtype() != p.dtype()
                || g.device() != p.device()
                || !p.is_contiguous()
                || g.shape() != p.shape()
            {
                return Ok(None);
            }
            g.contiguous()
        };
        ps.push(item);
        gs.push(PyTensor::from(g));
    }
    Ok(Some((ps, gs)))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_fused_grads, m)?)?;
    m.add_function(wrap_pyfunction!(_fused_sgd_, m)?)?;
    m.add_function(wrap_pyfunction!(_fused_adam_, m)?)?;
    m.add_function(wrap_pyfunction!(_fused_rmsprop_, m)?)?;
    m.add_function(wrap_pyfunction!(_fused_adagrad_, m)?)?;
    m.add_function(wrap_pyfunction!(_fused_adadelta_, m)?)?;
    Ok(())
}
