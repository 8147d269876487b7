//! `random_ops` of a build without the `cuda` feature: no CUDA tensor can exist there, so
//! these are never reached; they report that no device is available.

#![allow(dead_code)]

use crate::{DType, Device, Error, Result, Tensor};

#[derive(Clone, Copy, Debug)]
pub(crate) enum Dist {
    Uniform { low: f64, high: f64 },
    Normal { mean: f64, std: f64 },
    Bernoulli { p: f64 },
}

pub(crate) fn fill(_out: &Tensor, _dist: Dist, _seed: u64, _offset: u64) -> Result<()> {
    Err(Error::DeviceUnavailable(Device::Cuda(0)))
}

pub(crate) fn sample(
    ordinal: usize,
    _shape: &[usize],
    _dtype: DType,
    _dist: Dist,
    _seed: u64,
    _offset: u64,
) -> Result<Tensor> {
    Err(Error::DeviceUnavailable(Device::Cuda(ordinal)))
}

pub(crate) fn bernoulli_tensor(_p: &Tensor, _seed: u64, _offset: u64) -> Result<Tensor> {
    Err(Error::DeviceUnavailable(Device::Cuda(0)))
}
