//! Fused optimiser steps on CUDA (`optim.cu`): one launch per parameter tensor updates the
//! parameter and its state buffers in place. `crate::optim` validates the tensors (same
//! device, dtype and shape, contiguous, no aliasing) before calling these.

use super::compile::KernelFile;
use super::dtype_suffix;
use super::launch::elementwise;
use super::ops::{dev_of, launch, ptr};
use crate::{Error, Result, Tensor};
use cudarc::driver::PushKernelArg;

/// Device pointer of the first element of a contiguous CUDA tensor.
fn data_ptr(t: &Tensor) -> Result<u64> {
    Ok(ptr(t)? + (t.storage_offset() * t.dtype().size()) as u64)
}

fn check_float(op: &str, p: &Tensor) -> Result<()> {
    if !p.dtype().is_floating_point() {
        return Err(Error::UnsupportedDType {
            op: if op == "sgd" {
                "fused sgd step"
            } else {
                "fused adam step"
            },
            dtype: p.dtype(),
        });
    }
    Ok(())
}

/// Hyper-parameters of one SGD launch (`sgd_step_<dt>`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SgdArgs {
    pub lr: f64,
    pub momentum: f64,
    pub dampening: f64,
    pub weight_decay: f64,
    pub nesterov: bool,
    pub maximize: bool,
    /// The momentum buffer is new: set it to the gradient instead of decaying it.
    pub first_step: bool,
}

/// SGD step of one parameter (all tensors contiguous, same dtype/shape/device; checked by
/// the caller). `buf` is the momentum buffer (None without momentum).
pub(crate) fn sgd_step(p: &Tensor, g: &Tensor, buf: Option<&Tensor>, a: &SgdArgs) -> Result<()> {
    check_float("sgd", p)?;
    let n = p.numel();
    if n == 0 {
        return Ok(());
    }
    let dev = dev_of(p)?;
    let (pp, gp) = (data_ptr(p)?, data_ptr(g)?);
    // A null momentum buffer tells the kernel to skip momentum (also when momentum == 0).
    let bp: u64 = match buf {
        Some(b) if a.momentum != 0.0 => data_ptr(b)?,
        _ => 0,
    };
    let n64 = n as i64;
    let (lr, mom, damp, wd) = (a.lr, a.momentum, a.dampening, a.weight_decay);
    let nesterov = i32::from(a.nesterov);
    let maximize = i32::from(a.maximize);
    let first = i32::from(a.first_step);
    let name = format!("sgd_step_{}", dtype_suffix(p.dtype()));
    launch!(dev, KernelFile::Optim, name, elementwise(n);
        pp, gp, bp, n64, lr, mom, damp, wd, nesterov, maximize, first)
}

/// Hyper-parameters of one Adam launch (`adam_step_<dt>`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct AdamArgs {
    pub lr: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
    pub weight_decay: f64,
    pub decoupled: bool,
    pub maximize: bool,
    /// `1 - beta1^step` and `1 - beta2^step` for this parameter's (already incremented) step.
    pub bias_correction1: f64,
    pub bias_correction2: f64,
}

/// Adam/AdamW step of one parameter; `vmax` (the max of second moments) enables AMSGrad.
pub(crate) fn adam_step(
    p: &Tensor,
    g: &Tensor,
    m: &Tensor,
    v: &Tensor,
    vmax: Option<&Tensor>,
    a: &AdamArgs,
) -> Result<()> {
    check_float("adam", p)?;
    let n = p.numel();
    if n == 0 {
        return Ok(());
    }
    let dev = dev_of(p)?;
    let (pp, gp, mp, vp) = (data_ptr(p)?, data_ptr(g)?, data_ptr(m)?, data_ptr(v)?);
    let vmp: u64 = match vmax {
        Some(t) => data_ptr(t)?,
        None => 0,
    };
    let n64 = n as i64;
    let (lr, b1, b2, eps, wd) = (a.lr, a.beta1, a.beta2, a.eps, a.weight_decay);
    let decoupled = i32::from(a.decoupled);
    let maximize = i32::from(a.maximize);
    let (bc1, bc2) = (a.bias_correction1, a.bias_correction2);
    let name = format!("adam_step_{}", dtype_suffix(p.dtype()));
    launch!(dev, KernelFile::Optim, name, elementwise(n);
        pp, gp, mp, vp, vmp, n64, lr, b1, b2, eps, wd, decoupled, maximize, bc1, bc2)
}
