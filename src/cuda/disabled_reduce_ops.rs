//! `reduce_ops` of a build without the `cuda` feature: no CUDA tensor can exist there, so
//! these are never reached; they report that no device is available.

#![allow(dead_code)]

use crate::{Device, Error, Result, Tensor};

pub(crate) fn var(
    _t: &Tensor,
    _mask: &[bool],
    _correction: f64,
    _keepdim: bool,
    _take_sqrt: bool,
    _want_mean: bool,
) -> Result<(Tensor, Option<Tensor>)> {
    Err(Error::DeviceUnavailable(Device::Cuda(0)))
}

pub(crate) fn logsumexp(_t: &Tensor, _mask: &[bool], _keepdim: bool) -> Result<Tensor> {
    Err(Error::DeviceUnavailable(Device::Cuda(0)))
}
