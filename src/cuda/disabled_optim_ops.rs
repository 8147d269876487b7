//! `optim_ops` of a build without the `cuda` feature: no CUDA tensor can exist there, so
//! these are never reached; they report that no device is available.

#![allow(dead_code)]

use crate::{Device, Error, Result, Tensor};

#[derive(Clone, Copy, Debug)]
pub(crate) struct SgdArgs {
    pub lr: f64,
    pub momentum: f64,
    pub dampening: f64,
    pub weight_decay: f64,
    pub nesterov: bool,
    pub maximize: bool,
    pub first_step: bool,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct AdamArgs {
    pub lr: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
    pub weight_decay: f64,
    pub decoupled: bool,
    pub maximize: bool,
    pub bias_correction1: f64,
    pub bias_correction2: f64,
}

pub(crate) fn sgd_step(_p: &Tensor, _g: &Tensor, _b: Option<&Tensor>, _a: &SgdArgs) -> Result<()> {
    Err(Error::DeviceUnavailable(Device::Cuda(0)))
}

pub(crate) fn adam_step(
    _p: &Tensor,
    _g: &Tensor,
    _m: &Tensor,
    _v: &Tensor,
    _vmax: Option<&Tensor>,
    _a: &AdamArgs,
) -> Result<()> {
    Err(Error::DeviceUnavailable(Device::Cuda(0)))
}
