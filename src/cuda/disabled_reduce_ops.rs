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

pub(crate) fn cumulative(_t: &Tensor, _dim: usize, _prod: bool) -> Result<Tensor> {
    Err(Error::DeviceUnavailable(Device::Cuda(0)))
}

pub(crate) fn cum_extremum(_t: &Tensor, _dim: usize, _max: bool) -> Result<(Tensor, Tensor)> {
    Err(Error::DeviceUnavailable(Device::Cuda(0)))
}

pub(crate) fn sort_rows(
    _t: &Tensor,
    _rows: usize,
    _n: usize,
    _descending: bool,
) -> Result<(Tensor, Tensor)> {
    Err(Error::DeviceUnavailable(Device::Cuda(0)))
}
pub(crate) fn searchsorted(
    _seq: &Tensor,
    _values: &Tensor,
    _m: usize,
    _per_line: usize,
    _right: bool,
    _shape: &[usize],
) -> Result<Tensor> {
    Err(Error::DeviceUnavailable(Device::Cuda(0)))
}
