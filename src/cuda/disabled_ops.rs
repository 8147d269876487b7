//! The CUDA op entry points of a build without the `cuda` feature. No CUDA tensor can exist
//! there (`CudaStorage` is uninhabited), so only transfers to a CUDA device are ever reached:
//! they report that the device is unavailable.

#![allow(dead_code)]

pub(crate) use super::Reduction;
use crate::tensor::{BinaryOp, UnaryOp};
use crate::{DType, Device, Error, Result, Scalar, Tensor};

fn unavailable(ordinal: usize) -> Error {
    Error::DeviceUnavailable(Device::Cuda(ordinal))
}

pub(crate) fn empty(ordinal: usize, _shape: &[usize], _dtype: DType) -> Result<Tensor> {
    Err(unavailable(ordinal))
}
pub(crate) fn upload(_t: &Tensor, ordinal: usize) -> Result<Tensor> {
    Err(unavailable(ordinal))
}
pub(crate) fn download(_t: &Tensor) -> Result<Tensor> {
    Err(unavailable(0))
}
pub(crate) fn to_device(t: &Tensor, device: Device) -> Result<Tensor> {
    if device == t.device() {
        return Ok(t.clone());
    }
    Err(Error::DeviceUnavailable(device))
}
pub(crate) fn full(ordinal: usize, _shape: &[usize], _v: Scalar, _dtype: DType) -> Result<Tensor> {
    Err(unavailable(ordinal))
}
pub(crate) fn full_on(
    _like: &Tensor,
    _shape: &[usize],
    _v: Scalar,
    _dtype: DType,
) -> Result<Tensor> {
    Err(unavailable(0))
}
pub(crate) fn contiguous(_t: &Tensor) -> Result<Tensor> {
    Err(unavailable(0))
}
pub(crate) fn clone(_t: &Tensor) -> Result<Tensor> {
    Err(unavailable(0))
}
pub(crate) fn cast(_t: &Tensor, _dtype: DType) -> Result<Tensor> {
    Err(unavailable(0))
}
pub(crate) fn copy_into(_dst: &Tensor, _src: &Tensor) -> Result<()> {
    Err(unavailable(0))
}
pub(crate) fn unary(_t: &Tensor, _op: UnaryOp) -> Result<Tensor> {
    Err(unavailable(0))
}
pub(crate) fn binary(_a: &Tensor, _b: &Tensor, _op: BinaryOp, _common: DType) -> Result<Tensor> {
    Err(unavailable(0))
}
pub(crate) fn binary_named(_a: &Tensor, _b: &Tensor, _kernel: &'static str) -> Result<Tensor> {
    Err(unavailable(0))
}
pub(crate) fn band(_t: &Tensor, _k: i64, _lower: bool) -> Result<Tensor> {
    Err(unavailable(0))
}
pub(crate) fn nan_to_num(_t: &Tensor, _nan: f64, _posinf: f64, _neginf: f64) -> Result<Tensor> {
    Err(unavailable(0))
}
pub(crate) fn reduce_dim(
    _t: &Tensor,
    _dim: usize,
    _r: Reduction,
) -> Result<(Tensor, Option<Tensor>)> {
    Err(unavailable(0))
}
pub(crate) fn reduce(_t: &Tensor, _mask: &[bool], _keepdim: bool, _r: Reduction) -> Result<Tensor> {
    Err(unavailable(0))
}
pub(crate) fn softmax(_t: &Tensor, _dim: usize, _log: bool) -> Result<Tensor> {
    Err(unavailable(0))
}
pub(crate) fn matmul(_a: &Tensor, _b: &Tensor) -> Result<Tensor> {
    Err(unavailable(0))
}
pub(crate) fn where_(_c: &Tensor, _x: &Tensor, _y: &Tensor, _shape: &[usize]) -> Result<Tensor> {
    Err(unavailable(0))
}
pub(crate) fn index_select(_x: &Tensor, _dim: usize, _index: &Tensor) -> Result<Tensor> {
    Err(unavailable(0))
}
pub(crate) fn gather(_x: &Tensor, _dim: usize, _index: &Tensor) -> Result<Tensor> {
    Err(unavailable(0))
}
pub(crate) fn cat(_srcs: &[Tensor], _dim: usize, _shape: &[usize]) -> Result<Tensor> {
    Err(unavailable(0))
}
