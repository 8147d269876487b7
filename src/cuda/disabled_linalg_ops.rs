//! `linalg_ops` of a build without the `cuda` feature: no CUDA tensor can exist there, so
//! `available()` is false and the rest is never reached.

#![allow(dead_code)]

use crate::{Device, Error, Result, Tensor};

fn unavailable<T>() -> Result<T> {
    Err(Error::DeviceUnavailable(Device::Cuda(0)))
}

pub(crate) fn available() -> bool {
    false
}

pub(crate) fn host_infos(_info: &Tensor) -> Result<Vec<i32>> {
    unavailable()
}

pub(crate) fn cholesky(_a: &Tensor, _upper: bool) -> Result<(Tensor, Tensor)> {
    unavailable()
}

pub(crate) fn lu_factor(_a: &Tensor) -> Result<(Tensor, Tensor, Tensor)> {
    unavailable()
}

pub(crate) fn lu_for_det(_a: &Tensor) -> Result<(Tensor, Tensor)> {
    unavailable()
}

pub(crate) fn inv(_a: &Tensor) -> Result<(Tensor, Tensor)> {
    unavailable()
}

pub(crate) fn solve(_a: &Tensor, _b: &Tensor) -> Result<(Tensor, Tensor)> {
    unavailable()
}

pub(crate) fn solve_triangular(
    _a: &Tensor,
    _b: &Tensor,
    _upper: bool,
    _unit: bool,
) -> Result<Tensor> {
    unavailable()
}

pub(crate) fn qr(_a: &Tensor, _complete: bool, _want_q: bool) -> Result<(Tensor, Tensor)> {
    unavailable()
}

pub(crate) fn eigh(_a: &Tensor, _lower: bool, _vectors: bool) -> Result<(Tensor, Tensor, Tensor)> {
    unavailable()
}

pub(crate) fn svd(_a: &Tensor, _uv: Option<bool>) -> Result<(Tensor, Tensor, Tensor, Tensor)> {
    unavailable()
}

pub(crate) fn pivots_to_permutation(
    _pivots: &Tensor,
    _m: usize,
    _dtype: crate::DType,
) -> Result<Tensor> {
    unavailable()
}
