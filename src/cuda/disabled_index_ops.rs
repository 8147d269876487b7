//! `index_ops` of a build without the `cuda` feature: no CUDA tensor can exist there, so
//! these are never reached; they report that no device is available.

#![allow(dead_code)]

use crate::layout::Layout;
use crate::{Device, Error, Result, Scalar, Tensor};

fn unavailable() -> Error {
    Error::DeviceUnavailable(Device::Cuda(0))
}

pub(crate) fn scatter_(
    _dst: &Tensor,
    _dl: &Layout,
    _dim: usize,
    _index: &Tensor,
    _src: &Tensor,
    _add: bool,
) -> Result<()> {
    Err(unavailable())
}

pub(crate) fn index_add_(
    _dst: &Tensor,
    _dl: &Layout,
    _dim: usize,
    _index: &Tensor,
    _src: &Tensor,
    _alpha: f64,
) -> Result<()> {
    Err(unavailable())
}

pub(crate) fn masked_fill_(_dst: &Tensor, _mask: &Tensor, _value: Scalar) -> Result<()> {
    Err(unavailable())
}

pub(crate) fn gather_offsets(
    _src: &Tensor,
    _offsets: Vec<usize>,
    _shape: &[usize],
) -> Result<Tensor> {
    Err(unavailable())
}

pub(crate) fn scatter_offsets(
    _dst: &Tensor,
    _offsets: Vec<usize>,
    _values: &Tensor,
    _add: bool,
) -> Result<()> {
    Err(unavailable())
}
pub(crate) fn combine_offsets(
    _dst: &Tensor,
    _offsets: Vec<usize>,
    _values: &Tensor,
    _op: &str,
) -> Result<()> {
    Err(unavailable())
}
