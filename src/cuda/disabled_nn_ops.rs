//! The nn launchers of a build without the `cuda` feature (see `nn_ops.rs`): same
//! signatures; no CUDA tensor can exist there, so they are never reached.

#![allow(dead_code, clippy::too_many_arguments)]

use crate::{DType, Device, Error, Result, Tensor};

fn unavailable<T>() -> Result<T> {
    Err(Error::DeviceUnavailable(Device::Cuda(0)))
}

/// Mirror of `nn_ops::Window2d`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Window2d {
    pub n: i64,
    pub c: i64,
    pub h: i64,
    pub w: i64,
    pub kh: i64,
    pub kw: i64,
    pub sh: i64,
    pub sw: i64,
    pub ph: i64,
    pub pw: i64,
    pub dh: i64,
    pub dw: i64,
    pub oh: i64,
    pub ow: i64,
}

/// Mirror of `nn_ops::ConvGeom`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ConvGeom {
    pub win: Window2d,
    pub o: usize,
    pub groups: usize,
}

pub(crate) fn acc_dtype(dt: DType) -> DType {
    if dt == DType::F64 {
        DType::F64
    } else {
        DType::F32
    }
}
pub(crate) fn contig(_t: &Tensor, _dt: DType) -> Result<Tensor> {
    unavailable()
}
pub(crate) fn cross_entropy_fwd(
    _x: &Tensor,
    _target: &Tensor,
    _weight: Option<&Tensor>,
    _ignore_index: i64,
    _label_smoothing: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    unavailable()
}
pub(crate) fn cross_entropy_bwd(
    _x: &Tensor,
    _target: &Tensor,
    _weight: Option<&Tensor>,
    _lse: &Tensor,
    _grad_rows: &Tensor,
    _ignore_index: i64,
    _label_smoothing: f64,
) -> Result<Tensor> {
    unavailable()
}
pub(crate) fn count_bad_targets(_target: &Tensor, _c: usize, _ignore_index: i64) -> Result<i64> {
    unavailable()
}
pub(crate) fn conv_small_from_big(
    _g: &ConvGeom,
    _big: &Tensor,
    _weight: &Tensor,
    _bias: Option<&Tensor>,
) -> Result<Tensor> {
    unavailable()
}
pub(crate) fn conv_big_from_small(
    _g: &ConvGeom,
    _small: &Tensor,
    _weight: &Tensor,
    _bias: Option<&Tensor>,
) -> Result<Tensor> {
    unavailable()
}
pub(crate) fn conv_weight_from_both(
    _g: &ConvGeom,
    _big: &Tensor,
    _small: &Tensor,
) -> Result<Tensor> {
    unavailable()
}
pub(crate) fn channel_sums(_t: &Tensor, _n: usize, _ch: usize, _spatial: usize) -> Result<Tensor> {
    unavailable()
}
pub(crate) fn max_pool2d_fwd(_x: &Tensor, _win: &Window2d) -> Result<(Tensor, Tensor)> {
    unavailable()
}
pub(crate) fn max_pool2d_bwd(_gy: &Tensor, _indices: &Tensor, _win: &Window2d) -> Result<Tensor> {
    unavailable()
}
pub(crate) fn avg_pool2d_fwd(
    _x: &Tensor,
    _win: &Window2d,
    _count_include_pad: bool,
    _divisor_override: Option<i64>,
) -> Result<Tensor> {
    unavailable()
}
pub(crate) fn avg_pool2d_bwd(
    _gy: &Tensor,
    _win: &Window2d,
    _count_include_pad: bool,
    _divisor_override: Option<i64>,
) -> Result<Tensor> {
    unavailable()
}
pub(crate) fn gather_planes(_x: &Tensor, _idx: &Tensor, _planes: usize) -> Result<Tensor> {
    unavailable()
}
pub(crate) fn batch_norm_stats(
    _x: &Tensor,
    _n: usize,
    _c: usize,
    _s: usize,
    _eps: f64,
    _running_mean: Option<&Tensor>,
    _running_var: Option<&Tensor>,
    _momentum: f64,
) -> Result<(Tensor, Tensor)> {
    unavailable()
}
pub(crate) fn batch_norm_apply(
    _x: &Tensor,
    _mean: &Tensor,
    _invstd: &Tensor,
    _weight: Option<&Tensor>,
    _bias: Option<&Tensor>,
    _n: usize,
    _c: usize,
    _s: usize,
) -> Result<Tensor> {
    unavailable()
}
pub(crate) fn batch_norm_bwd(
    _x: &Tensor,
    _gy: &Tensor,
    _mean: &Tensor,
    _invstd: &Tensor,
    _weight: Option<&Tensor>,
    _need: [bool; 3],
    _n: usize,
    _c: usize,
    _s: usize,
) -> Result<[Option<Tensor>; 3]> {
    unavailable()
}
pub(crate) fn layer_norm_fwd(
    _x: &Tensor,
    _weight: Option<&Tensor>,
    _bias: Option<&Tensor>,
    _rows: usize,
    _cols: usize,
    _eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    unavailable()
}
pub(crate) fn layer_norm_bwd(
    _x: &Tensor,
    _gy: &Tensor,
    _mean: &Tensor,
    _rstd: &Tensor,
    _weight: Option<&Tensor>,
    _need: [bool; 3],
    _rows: usize,
    _cols: usize,
) -> Result<[Option<Tensor>; 3]> {
    unavailable()
}
pub(crate) fn rms_norm_fwd(
    _x: &Tensor,
    _weight: Option<&Tensor>,
    _rows: usize,
    _cols: usize,
    _eps: f64,
) -> Result<(Tensor, Tensor)> {
    unavailable()
}
pub(crate) fn rms_norm_bwd(
    _x: &Tensor,
    _gy: &Tensor,
    _rstd: &Tensor,
    _weight: Option<&Tensor>,
    _need: [bool; 3],
    _rows: usize,
    _cols: usize,
) -> Result<[Option<Tensor>; 3]> {
    unavailable()
}
pub(crate) fn embedding_bwd(
    _gy: &Tensor,
    _indices: &Tensor,
    _num_embeddings: usize,
    _padding_idx: i64,
) -> Result<Tensor> {
    unavailable()
}
