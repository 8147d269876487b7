//! Launchers of `cuda_kernels/nn.cu`: cross entropy, convolution (im2col / col2im + cuBLAS),
//! pooling, batch and layer norm, embedding backward.
//!
//! These are raw kernels (no autograd): `crate::nn::{loss, conv, pool, norm}` validate the
//! arguments exactly as on the CPU, call these when the input is a CUDA tensor, and record
//! the same autograd nodes, whose backward closures dispatch here again.
//!
//! Every kernel of nn.cu takes contiguous buffers (plain pointers, no layouts): callers pass
//! contiguous tensors (`contig`), and pointers are taken with `cptr` (storage base plus the
//! tensor's offset). Saved statistics are `A` = f32 for f32/f16/bf16 inputs, f64 for f64.

use super::compile::KernelFile;
use super::dtype_suffix;
use super::launch::{elementwise, per_row};
use super::ops::{
    binary, cast, cat, contiguous, dev_of, empty, full, launch, matmul, ordinal_of, ptr, reduce,
    reduce_dim, Reduction,
};
use crate::layout::Layout;
use crate::tensor::BinaryOp;
use crate::{DType, Error, Result, Scalar, Tensor};
use cudarc::driver::{DeviceRepr, PushKernelArg};

/// Convolution / pooling geometry (`struct Window2d` of nn.cu, 14 x i64 by value): input
/// `(n, c, h, w)`, kernel, stride, padding (before), dilation, output size `(oh, ow)`.
#[repr(C)]
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

// SAFETY: plain old data with the same C layout as `struct Window2d` in nn.cu (14 long longs).
unsafe impl DeviceRepr for Window2d {}

const _: () = assert!(std::mem::size_of::<Window2d>() == 14 * 8);

impl Window2d {
    fn in_numel(&self) -> usize {
        (self.n * self.c * self.h * self.w) as usize
    }
    fn out_numel(&self) -> usize {
        (self.n * self.c * self.oh * self.ow) as usize
    }
    fn col_rows(&self) -> usize {
        (self.c * self.kh * self.kw) as usize
    }
    fn out_plane(&self) -> usize {
        (self.oh * self.ow) as usize
    }
}

/// A convolution between a "big" side (`win.n, win.c, win.h, win.w`: the input of a
/// convolution, the output of a transposed one) and a "small" side (`win.n, o, win.oh,
/// win.ow`), with `groups`; the weight is `(o, c / groups, kh, kw)` (see `crate::nn::conv`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ConvGeom {
    pub win: Window2d,
    pub o: usize,
    pub groups: usize,
}

impl ConvGeom {
    fn n(&self) -> usize {
        self.win.n as usize
    }
    fn c(&self) -> usize {
        self.win.c as usize
    }
    fn og(&self) -> usize {
        self.o / self.groups
    }
    /// Rows of one group's column matrix.
    fn rows(&self) -> usize {
        self.win.col_rows() / self.groups
    }
    fn pointwise(&self) -> bool {
        let w = &self.win;
        w.kh == 1
            && w.kw == 1
            && w.sh == 1
            && w.sw == 1
            && w.ph == 0
            && w.pw == 0
            && w.oh == w.h
            && w.ow == w.w
    }
}

// ------------------------------------------------------------------------------- helpers

fn nn_name(kernel: &str, dt: DType) -> String {
    format!("{kernel}_{}", dtype_suffix(dt))
}

fn check_float(op: &'static str, t: &Tensor) -> Result<()> {
    if !t.dtype().is_floating_point() {
        return Err(Error::UnsupportedDType {
            op,
            dtype: t.dtype(),
        });
    }
    Ok(())
}

/// dtype of the saved statistics (`A` in nn.cu).
pub(crate) fn acc_dtype(dt: DType) -> DType {
    if dt == DType::F64 {
        DType::F64
    } else {
        DType::F32
    }
}

/// Device pointer of the first element of a contiguous CUDA tensor.
fn cptr(t: &Tensor) -> Result<u64> {
    debug_assert!(t.is_contiguous());
    Ok(ptr(t)? + (t.storage_offset() * t.dtype().size()) as u64)
}

/// Optional contiguous tensor's pointer, or a null device pointer.
fn optr(t: Option<&Tensor>) -> Result<u64> {
    match t {
        Some(t) => cptr(t),
        None => Ok(0),
    }
}

/// `t` converted to `dt`, contiguous, on the GPU.
pub(crate) fn contig(t: &Tensor, dt: DType) -> Result<Tensor> {
    contiguous(&cast(t, dt)?)
}

/// A view of `t`'s storage with the given shape, strides and offset (elements).
fn view(t: &Tensor, shape: &[usize], strides: &[usize], offset: usize) -> Tensor {
    let mut l = Layout::contiguous(shape);
    l.strides = strides.iter().copied().collect();
    l.offset = offset;
    t.with_layout(l)
}

/// A contiguous tensor's elements viewed with another shape (same numel).
fn reshaped(t: &Tensor, shape: &[usize]) -> Tensor {
    debug_assert!(t.is_contiguous());
    debug_assert_eq!(shape.iter().product::<usize>(), t.numel());
    let mut l = Layout::contiguous(shape);
    l.offset = t.storage_offset();
    t.with_layout(l)
}

fn zeros(like: &Tensor, shape: &[usize], dt: DType) -> Result<Tensor> {
    full(ordinal_of(like)?, shape, Scalar::Int(0), dt)
}

// ------------------------------------------------------------------------------- cross entropy

/// Per row of `x` `(R, C)` (contiguous float) against int64 `target` `(R)` (contiguous),
/// with optional class `weight` `(C)` (contiguous, `x`'s dtype): `(loss, row_weight, lse)`,
/// each `(R)` in the accumulation dtype. Targets outside `[0, C)` or equal to
/// `ignore_index` give loss 0 and row weight 0 (the caller validates them first).
pub(crate) fn cross_entropy_fwd(
    x: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
    label_smoothing: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    check_float("cross_entropy", x)?;
    let (r, c) = (x.shape()[0], x.shape()[1]);
    let ad = acc_dtype(x.dtype());
    let ord = ordinal_of(x)?;
    let loss = empty(ord, &[r], ad)?;
    let row_weight = empty(ord, &[r], ad)?;
    let lse = empty(ord, &[r], ad)?;
    if r == 0 || c == 0 {
        return Ok((loss, row_weight, lse));
    }
    let dev = dev_of(x)?;
    let (xp, tp, wp) = (cptr(x)?, cptr(target)?, optr(weight)?);
    let (lp, rwp, ep) = (ptr(&loss)?, ptr(&row_weight)?, ptr(&lse)?);
    let (n64, c64) = (r as i64, c as i64);
    let name = nn_name("cross_entropy_fwd", x.dtype());
    launch!(dev, KernelFile::Nn, name, per_row(r);
        xp, tp, wp, lp, rwp, ep, n64, c64, ignore_index, label_smoothing)?;
    Ok((loss, row_weight, lse))
}

/// Gradient w.r.t. the logits `(R, C)`: row `i` scaled by `grad_rows[i]` (`(R)`, contiguous,
/// `x`'s dtype). `lse` comes from [`cross_entropy_fwd`].
pub(crate) fn cross_entropy_bwd(
    x: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    lse: &Tensor,
    grad_rows: &Tensor,
    ignore_index: i64,
    label_smoothing: f64,
) -> Result<Tensor> {
    let (r, c) = (x.shape()[0], x.shape()[1]);
    let gx = empty(ordinal_of(x)?, &[r, c], x.dtype())?;
    if r == 0 || c == 0 {
        return Ok(gx);
    }
    let dev = dev_of(x)?;
    let (xp, tp, wp) = (cptr(x)?, cptr(target)?, optr(weight)?);
    let (ep, gp, op) = (cptr(lse)?, cptr(grad_rows)?, ptr(&gx)?);
    let scale = 1.0f64;
    let (n64, c64) = (r as i64, c as i64);
    let name = nn_name("cross_entropy_bwd", x.dtype());
    launch!(dev, KernelFile::Nn, name, per_row(r);
        xp, tp, wp, ep, gp, scale, op, n64, c64, ignore_index, label_smoothing)?;
    Ok(gx)
}

/// Number of entries of int64 `target` that are neither `ignore_index` nor in `[0, c)`
/// (one small reduction and a copy of one value to the host).
pub(crate) fn count_bad_targets(target: &Tensor, c: usize, ignore_index: i64) -> Result<i64> {
    if target.numel() == 0 {
        return Ok(0);
    }
    let s = |v: i64| Tensor::scalar(Scalar::Int(v), DType::I64);
    let ne = binary(target, &s(ignore_index), BinaryOp::Ne, DType::I64)?;
    let lt = binary(target, &s(0), BinaryOp::Lt, DType::I64)?;
    let ge = binary(target, &s(c as i64), BinaryOp::Ge, DType::I64)?;
    let oob = binary(&lt, &ge, BinaryOp::LogicalOr, DType::Bool)?;
    let bad = binary(&ne, &oob, BinaryOp::LogicalAnd, DType::Bool)?;
    let bad = cast(&bad, DType::I64)?;
    let mask = vec![true; bad.ndim()];
    let n = reduce(&bad, &mask, false, Reduction::Sum)?;
    Ok(n.item()?.to_i64())
}

// ------------------------------------------------------------------------------- convolution

fn im2col(x: &Tensor, win: &Window2d) -> Result<Tensor> {
    let (n, rows, l) = (win.n as usize, win.col_rows(), win.out_plane());
    let col = empty(ordinal_of(x)?, &[n, rows, l], x.dtype())?;
    let total = col.numel();
    if total == 0 {
        return Ok(col);
    }
    let dev = dev_of(x)?;
    let (xp, cp) = (cptr(x)?, ptr(&col)?);
    let p = *win;
    launch!(dev, KernelFile::Nn, nn_name("im2col", x.dtype()), elementwise(total); xp, p, cp)?;
    Ok(col)
}

fn col2im(col: &Tensor, win: &Window2d) -> Result<Tensor> {
    let shape = [
        win.n as usize,
        win.c as usize,
        win.h as usize,
        win.w as usize,
    ];
    let x = empty(ordinal_of(col)?, &shape, col.dtype())?;
    let total = x.numel();
    if total == 0 {
        return Ok(x);
    }
    if col.numel() == 0 {
        return zeros(col, &shape, col.dtype());
    }
    let dev = dev_of(col)?;
    let (cp, xp) = (cptr(col)?, ptr(&x)?);
    let p = *win;
    launch!(dev, KernelFile::Nn, nn_name("col2im", col.dtype()), elementwise(total); cp, p, xp)?;
    Ok(x)
}

/// Column matrices of the big side, `(n, c*kh*kw, oh*ow)` (the big side itself when the
/// kernel is pointwise).
fn columns(g: &ConvGeom, big: &Tensor) -> Result<Tensor> {
    if g.pointwise() {
        Ok(reshaped(big, &[g.n(), g.c(), g.win.out_plane()]))
    } else {
        im2col(big, &g.win)
    }
}

/// Concatenate per-group results along `dim` (one group: the tensor itself).
fn join_groups(parts: Vec<Tensor>, dim: usize) -> Result<Tensor> {
    if parts.len() == 1 {
        return Ok(parts.into_iter().next().expect("one part"));
    }
    let mut shape = parts[0].shape().to_vec();
    shape[dim] = parts.iter().map(|p| p.shape()[dim]).sum();
    cat(&parts, dim, &shape)
}

/// `small[n, g] = W_g @ im2col(big[n, g]) (+ bias)`: `big` `(n, c, h, w)` and `weight`
/// `(o, c/groups, kh, kw)` contiguous, same float dtype; returns `(n, o, oh*ow)` contiguous.
pub(crate) fn conv_small_from_big(
    g: &ConvGeom,
    big: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
) -> Result<Tensor> {
    check_float("convolution", big)?;
    let (n, og, rows, l) = (g.n(), g.og(), g.rows(), g.win.out_plane());
    let krows = g.win.col_rows();
    let col = columns(g, big)?;
    let mut parts = Vec::with_capacity(g.groups);
    for gi in 0..g.groups {
        let wg = view(
            weight,
            &[og, rows],
            &[rows, 1],
            weight.storage_offset() + gi * og * rows,
        );
        let cg = view(
            &col,
            &[n, rows, l],
            &[krows * l, l, 1],
            col.storage_offset() + gi * rows * l,
        );
        parts.push(matmul(&wg, &cg)?);
    }
    let out = join_groups(parts, 1)?;
    match bias {
        Some(b) => {
            let bv = view(b, &[1, g.o, 1], &[0, 1, 0], b.storage_offset());
            binary(&out, &bv, BinaryOp::Add, out.dtype())
        }
        None => Ok(out),
    }
}

/// `big[n, g] = col2im(W_g^T @ small[n, g]) (+ bias)`: `small` `(n, o, oh, ow)` contiguous;
/// returns `(n, c, h, w)` contiguous.
pub(crate) fn conv_big_from_small(
    g: &ConvGeom,
    small: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
) -> Result<Tensor> {
    check_float("convolution", small)?;
    let (n, og, rows, l) = (g.n(), g.og(), g.rows(), g.win.out_plane());
    let mut parts = Vec::with_capacity(g.groups);
    for gi in 0..g.groups {
        // W_g^T: (rows, og) with strides (1, rows).
        let wt = view(
            weight,
            &[rows, og],
            &[1, rows],
            weight.storage_offset() + gi * og * rows,
        );
        let sg = view(
            small,
            &[n, og, l],
            &[g.o * l, l, 1],
            small.storage_offset() + gi * og * l,
        );
        parts.push(matmul(&wt, &sg)?);
    }
    let col = join_groups(parts, 1)?;
    let out = if g.pointwise() {
        reshaped(&col, &[n, g.c(), g.win.h as usize, g.win.w as usize])
    } else {
        col2im(&col, &g.win)?
    };
    match bias {
        Some(b) => {
            let bv = view(b, &[1, g.c(), 1, 1], &[0, 1, 0, 0], b.storage_offset());
            binary(&out, &bv, BinaryOp::Add, out.dtype())
        }
        None => Ok(out),
    }
}

/// `gW_g = sum_n small[n, g] @ im2col(big[n, g])^T`; returns `(o, c/groups * kh * kw)`.
pub(crate) fn conv_weight_from_both(g: &ConvGeom, big: &Tensor, small: &Tensor) -> Result<Tensor> {
    let (n, og, rows, l) = (g.n(), g.og(), g.rows(), g.win.out_plane());
    let krows = g.win.col_rows();
    if n == 0 || l == 0 {
        return zeros(big, &[g.o, rows], big.dtype());
    }
    let col = columns(g, big)?;
    let mut parts = Vec::with_capacity(g.groups);
    for gi in 0..g.groups {
        let sg = view(
            small,
            &[n, og, l],
            &[g.o * l, l, 1],
            small.storage_offset() + gi * og * l,
        );
        // im2col(big[n, g])^T: (n, l, rows) with strides (krows * l, 1, l).
        let ct = view(
            &col,
            &[n, l, rows],
            &[krows * l, 1, l],
            col.storage_offset() + gi * rows * l,
        );
        let per_image = matmul(&sg, &ct)?; // (n, og, rows)
        let summed = if n == 1 {
            reshaped(&per_image, &[og, rows])
        } else {
            reduce_dim(&per_image, 0, Reduction::Sum)?.0
        };
        parts.push(summed);
    }
    join_groups(parts, 0)
}

/// Sum of `(n, ch, spatial)` over `n` and `spatial` (the bias gradient), `(ch)`.
pub(crate) fn channel_sums(t: &Tensor, n: usize, ch: usize, spatial: usize) -> Result<Tensor> {
    if n == 0 || spatial == 0 {
        return zeros(t, &[ch], t.dtype());
    }
    let t3 = reshaped(&contiguous(t)?, &[n, ch, spatial]);
    reduce(&t3, &[true, false, true], false, Reduction::Sum)
}

// ------------------------------------------------------------------------------- pooling

/// Max pool over `x` `(planes, h, w)` (contiguous float; `win.n * win.c` planes): values and
/// int64 indices (flat over `h*w`), both `(planes * oh * ow)` contiguous.
pub(crate) fn max_pool2d_fwd(x: &Tensor, win: &Window2d) -> Result<(Tensor, Tensor)> {
    check_float("max_pool2d", x)?;
    let ord = ordinal_of(x)?;
    let total = win.out_numel();
    let y = empty(ord, &[total], x.dtype())?;
    let idx = empty(ord, &[total], DType::I64)?;
    if total == 0 {
        return Ok((y, idx));
    }
    let dev = dev_of(x)?;
    let (xp, yp, ip) = (cptr(x)?, ptr(&y)?, ptr(&idx)?);
    let p = *win;
    launch!(dev, KernelFile::Nn, nn_name("max_pool2d_fwd", x.dtype()), elementwise(total);
        xp, p, yp, ip)?;
    Ok((y, idx))
}

/// Gradient of a max pool: `gy` and `indices` `(planes * oh * ow)` contiguous; returns
/// `(planes * h * w)`.
pub(crate) fn max_pool2d_bwd(gy: &Tensor, indices: &Tensor, win: &Window2d) -> Result<Tensor> {
    let total = win.in_numel();
    let gx = empty(ordinal_of(gy)?, &[total], gy.dtype())?;
    if total == 0 {
        return Ok(gx);
    }
    if win.out_numel() == 0 {
        return zeros(gy, &[total], gy.dtype());
    }
    let dev = dev_of(gy)?;
    let (gp, ip, xp) = (cptr(gy)?, cptr(indices)?, ptr(&gx)?);
    let p = *win;
    launch!(dev, KernelFile::Nn, nn_name("max_pool2d_bwd", gy.dtype()), elementwise(total);
        gp, ip, p, xp)?;
    Ok(gx)
}

/// Average pool (dilation 1): `x` `(planes, h, w)` contiguous -> `(planes * oh * ow)`.
pub(crate) fn avg_pool2d_fwd(
    x: &Tensor,
    win: &Window2d,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> Result<Tensor> {
    check_float("avg_pool2d", x)?;
    let total = win.out_numel();
    let y = empty(ordinal_of(x)?, &[total], x.dtype())?;
    if total == 0 {
        return Ok(y);
    }
    let dev = dev_of(x)?;
    let (xp, yp) = (cptr(x)?, ptr(&y)?);
    let p = *win;
    let cip = count_include_pad as i32;
    let div = divisor_override.unwrap_or(0);
    launch!(dev, KernelFile::Nn, nn_name("avg_pool2d_fwd", x.dtype()), elementwise(total);
        xp, p, yp, cip, div)?;
    Ok(y)
}

/// Adjoint of [`avg_pool2d_fwd`]: `gy` `(planes * oh * ow)` -> `(planes * h * w)`.
pub(crate) fn avg_pool2d_bwd(
    gy: &Tensor,
    win: &Window2d,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> Result<Tensor> {
    let total = win.in_numel();
    let gx = empty(ordinal_of(gy)?, &[total], gy.dtype())?;
    if total == 0 {
        return Ok(gx);
    }
    if win.out_numel() == 0 {
        return zeros(gy, &[total], gy.dtype());
    }
    let dev = dev_of(gy)?;
    let (gp, xp) = (cptr(gy)?, ptr(&gx)?);
    let p = *win;
    let cip = count_include_pad as i32;
    let div = divisor_override.unwrap_or(0);
    launch!(dev, KernelFile::Nn, nn_name("avg_pool2d_bwd", gy.dtype()), elementwise(total);
        gp, p, xp, cip, div)?;
    Ok(gx)
}

/// `out[p, o] = x[p, idx[p, o]]` for `x` `(planes, hw)` and `idx` `(planes, ohw)`.
pub(crate) fn gather_planes(x: &Tensor, idx: &Tensor, planes: usize) -> Result<Tensor> {
    let x2 = reshaped(&contiguous(x)?, &[planes, x.numel() / planes.max(1)]);
    let i2 = reshaped(&contiguous(idx)?, &[planes, idx.numel() / planes.max(1)]);
    super::ops::gather(&x2, 1, &i2)
}

// ------------------------------------------------------------------------------- batch norm

/// Training statistics per channel of `x` `(n, c, s)` (contiguous float): `(mean, invstd)`
/// in the accumulation dtype; running statistics (contiguous, `x`'s dtype) updated in place.
#[allow(clippy::too_many_arguments)]
pub(crate) fn batch_norm_stats(
    x: &Tensor,
    n: usize,
    c: usize,
    s: usize,
    eps: f64,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    momentum: f64,
) -> Result<(Tensor, Tensor)> {
    check_float("batch_norm", x)?;
    let ad = acc_dtype(x.dtype());
    let ord = ordinal_of(x)?;
    let mean = empty(ord, &[c], ad)?;
    let invstd = empty(ord, &[c], ad)?;
    if c == 0 {
        return Ok((mean, invstd));
    }
    let dev = dev_of(x)?;
    let (xp, mp, ip) = (cptr(x)?, ptr(&mean)?, ptr(&invstd)?);
    let (rmp, rvp) = (optr(running_mean)?, optr(running_var)?);
    let (n64, c64, s64) = (n as i64, c as i64, s as i64);
    launch!(dev, KernelFile::Nn, nn_name("batch_norm_stats", x.dtype()), per_row(c);
        xp, n64, c64, s64, eps, mp, ip, rmp, rvp, momentum)?;
    Ok((mean, invstd))
}

/// `y = (x - mean[c]) * invstd[c] * weight[c] + bias[c]` over `x` `(n, c, s)` contiguous;
/// `mean`/`invstd` `(c)` in the accumulation dtype, `weight`/`bias` `(c)` in `x`'s dtype.
#[allow(clippy::too_many_arguments)]
pub(crate) fn batch_norm_apply(
    x: &Tensor,
    mean: &Tensor,
    invstd: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    n: usize,
    c: usize,
    s: usize,
) -> Result<Tensor> {
    let y = empty(ordinal_of(x)?, x.shape(), x.dtype())?;
    let total = y.numel();
    if total == 0 {
        return Ok(y);
    }
    let dev = dev_of(x)?;
    let (xp, mp, ip, yp) = (cptr(x)?, cptr(mean)?, cptr(invstd)?, ptr(&y)?);
    let (wp, bp) = (optr(weight)?, optr(bias)?);
    let (n64, c64, s64) = (n as i64, c as i64, s as i64);
    launch!(dev, KernelFile::Nn, nn_name("batch_norm_apply", x.dtype()), elementwise(total);
        xp, mp, ip, wp, bp, yp, n64, c64, s64)?;
    Ok(y)
}

/// Training-mode batch-norm backward; each of (grad_input, grad_weight, grad_bias) only
/// where `need` says (`(c)` gradients in `x`'s dtype).
#[allow(clippy::too_many_arguments)]
pub(crate) fn batch_norm_bwd(
    x: &Tensor,
    gy: &Tensor,
    mean: &Tensor,
    invstd: &Tensor,
    weight: Option<&Tensor>,
    need: [bool; 3],
    n: usize,
    c: usize,
    s: usize,
) -> Result<[Option<Tensor>; 3]> {
    let ord = ordinal_of(x)?;
    let dt = x.dtype();
    let gx = need[0].then(|| empty(ord, x.shape(), dt)).transpose()?;
    let gw = need[1].then(|| empty(ord, &[c], dt)).transpose()?;
    let gb = need[2].then(|| empty(ord, &[c], dt)).transpose()?;
    if c == 0 || !need.iter().any(|&b| b) {
        return Ok([gx, gw, gb]);
    }
    if n * s == 0 {
        let z = |t: Option<Tensor>| t.map(|t| zeros(x, t.shape(), dt)).transpose();
        return Ok([gx, z(gw)?, z(gb)?]);
    }
    let dev = dev_of(x)?;
    let (xp, gp, mp, ip) = (cptr(x)?, cptr(gy)?, cptr(mean)?, cptr(invstd)?);
    let wp = optr(weight)?;
    let (gxp, gwp, gbp) = (optr(gx.as_ref())?, optr(gw.as_ref())?, optr(gb.as_ref())?);
    let (n64, c64, s64) = (n as i64, c as i64, s as i64);
    launch!(dev, KernelFile::Nn, nn_name("batch_norm_bwd", dt), per_row(c);
        xp, gp, mp, ip, wp, gxp, gwp, gbp, n64, c64, s64)?;
    Ok([gx, gw, gb])
}

// ------------------------------------------------------------------------------- layer norm

/// Layer norm of the rows of `x` `(rows, cols)` (contiguous float) with optional `(cols)`
/// weight and bias in `x`'s dtype: `(y, mean, rstd)`, statistics `(rows)` in the
/// accumulation dtype.
pub(crate) fn layer_norm_fwd(
    x: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    rows: usize,
    cols: usize,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    check_float("layer_norm", x)?;
    let ord = ordinal_of(x)?;
    let ad = acc_dtype(x.dtype());
    let y = empty(ord, x.shape(), x.dtype())?;
    if cols == 0 {
        let nan = Scalar::Float(f64::NAN);
        return Ok((
            y,
            full(ord, &[rows], nan, ad)?,
            full(ord, &[rows], nan, ad)?,
        ));
    }
    let mean = empty(ord, &[rows], ad)?;
    let rstd = empty(ord, &[rows], ad)?;
    if rows == 0 {
        return Ok((y, mean, rstd));
    }
    let dev = dev_of(x)?;
    let (xp, wp, bp, yp) = (cptr(x)?, optr(weight)?, optr(bias)?, ptr(&y)?);
    let (mp, rp) = (ptr(&mean)?, ptr(&rstd)?);
    let (r64, c64) = (rows as i64, cols as i64);
    launch!(dev, KernelFile::Nn, nn_name("layer_norm_fwd", x.dtype()), per_row(rows);
        xp, wp, bp, yp, mp, rp, r64, c64, eps)?;
    Ok((y, mean, rstd))
}

/// Layer-norm backward: (grad_input, grad_weight, grad_bias) where `need` says.
#[allow(clippy::too_many_arguments)]
pub(crate) fn layer_norm_bwd(
    x: &Tensor,
    gy: &Tensor,
    mean: &Tensor,
    rstd: &Tensor,
    weight: Option<&Tensor>,
    need: [bool; 3],
    rows: usize,
    cols: usize,
) -> Result<[Option<Tensor>; 3]> {
    let ord = ordinal_of(x)?;
    let dt = x.dtype();
    let gx = need[0].then(|| empty(ord, x.shape(), dt)).transpose()?;
    let gw = need[1].then(|| empty(ord, &[cols], dt)).transpose()?;
    let gb = need[2].then(|| empty(ord, &[cols], dt)).transpose()?;
    if cols == 0 {
        return Ok([gx, gw, gb]);
    }
    if rows == 0 {
        let z = |t: Option<Tensor>| t.map(|t| zeros(x, t.shape(), dt)).transpose();
        return Ok([gx, z(gw)?, z(gb)?]);
    }
    let dev = dev_of(x)?;
    let (xp, gp, mp, rp) = (cptr(x)?, cptr(gy)?, cptr(mean)?, cptr(rstd)?);
    let (r64, c64) = (rows as i64, cols as i64);
    if let Some(gx) = &gx {
        let (wp, gxp) = (optr(weight)?, ptr(gx)?);
        launch!(dev, KernelFile::Nn, nn_name("layer_norm_bwd", dt), per_row(rows);
            xp, gp, mp, rp, wp, gxp, r64, c64)?;
    }
    if gw.is_some() || gb.is_some() {
        let (gwp, gbp) = (optr(gw.as_ref())?, optr(gb.as_ref())?);
        launch!(dev, KernelFile::Nn, nn_name("layer_norm_bwd_params", dt), elementwise(cols);
            xp, gp, mp, rp, gwp, gbp, r64, c64)?;
    }
    Ok([gx, gw, gb])
}

/// RMS-norm forward over rows of a contiguous `x` (rows, cols): (y, rstd in the
/// accumulation dtype).
pub(crate) fn rms_norm_fwd(
    x: &Tensor,
    weight: Option<&Tensor>,
    rows: usize,
    cols: usize,
    eps: f64,
) -> Result<(Tensor, Tensor)> {
    check_float("rms_norm", x)?;
    let ord = ordinal_of(x)?;
    let ad = acc_dtype(x.dtype());
    let y = empty(ord, x.shape(), x.dtype())?;
    if cols == 0 {
        return Ok((y, full(ord, &[rows], Scalar::Float(f64::NAN), ad)?));
    }
    let rstd = empty(ord, &[rows], ad)?;
    if rows == 0 {
        return Ok((y, rstd));
    }
    let dev = dev_of(x)?;
    let (xp, wp, yp, rp) = (cptr(x)?, optr(weight)?, ptr(&y)?, ptr(&rstd)?);
    let (r64, c64) = (rows as i64, cols as i64);
    launch!(dev, KernelFile::Nn, nn_name("rms_norm_fwd", x.dtype()), per_row(rows);
        xp, wp, yp, rp, r64, c64, eps)?;
    Ok((y, rstd))
}

/// RMS-norm backward: (grad_input, grad_weight) where `need` says (`need[2]`, the bias, is
/// ignored: there is none).
#[allow(clippy::too_many_arguments)]
pub(crate) fn rms_norm_bwd(
    x: &Tensor,
    gy: &Tensor,
    rstd: &Tensor,
    weight: Option<&Tensor>,
    need: [bool; 3],
    rows: usize,
    cols: usize,
) -> Result<[Option<Tensor>; 3]> {
    let ord = ordinal_of(x)?;
    let dt = x.dtype();
    let gx = need[0].then(|| empty(ord, x.shape(), dt)).transpose()?;
    let gw = need[1].then(|| empty(ord, &[cols], dt)).transpose()?;
    if cols == 0 {
        return Ok([gx, gw, None]);
    }
    if rows == 0 {
        return Ok([gx, gw.map(|t| zeros(x, t.shape(), dt)).transpose()?, None]);
    }
    let dev = dev_of(x)?;
    let (xp, gp, rp) = (cptr(x)?, cptr(gy)?, cptr(rstd)?);
    let (r64, c64) = (rows as i64, cols as i64);
    if let Some(gx) = &gx {
        let (wp, gxp) = (optr(weight)?, ptr(gx)?);
        launch!(dev, KernelFile::Nn, nn_name("rms_norm_bwd", dt), per_row(rows);
            xp, gp, rp, wp, gxp, r64, c64)?;
    }
    if let Some(gw) = &gw {
        // sum over rows of gy * x * rstd: layer norm's parameter kernel with a zero mean.
        let mean = zeros(x, &[rows], acc_dtype(dt))?;
        let (mp, gwp, gbp) = (ptr(&mean)?, ptr(gw)?, 0u64);
        launch!(dev, KernelFile::Nn, nn_name("layer_norm_bwd_params", dt), elementwise(cols);
            xp, gp, mp, rp, gwp, gbp, r64, c64)?;
    }
    Ok([gx, gw, None])
}

// ------------------------------------------------------------------------------- embedding

/// Dense gradient of an embedding: `gweight (num_embeddings, dim)` = sum of the rows of
/// `gy` `(n_idx, dim)` at `indices` `(n_idx)` (int64); the row `padding_idx` (when >= 0) and
/// out-of-range indices get nothing.
pub(crate) fn embedding_bwd(
    gy: &Tensor,
    indices: &Tensor,
    num_embeddings: usize,
    padding_idx: i64,
) -> Result<Tensor> {
    check_float("embedding_backward", gy)?;
    let n_idx = indices.numel();
    let dim = if gy.ndim() == 0 {
        1
    } else {
        gy.shape()[gy.ndim() - 1]
    };
    if gy.numel() != n_idx * dim {
        return Err(Error::Runtime(format!(
            "embedding_backward: expected a gradient of {n_idx} rows of {dim}, got shape {:?}",
            gy.shape()
        )));
    }
    let dt = gy.dtype();
    let gw = zeros(gy, &[num_embeddings, dim], dt)?;
    let total = n_idx * dim;
    if total == 0 || num_embeddings == 0 {
        return Ok(gw);
    }
    let g = contiguous(gy)?;
    let idx = contig(&super::ops::to_device(indices, gy.device())?, DType::I64)?;
    let dev = dev_of(gy)?;
    let (ip, gp, wp) = (cptr(&idx)?, cptr(&g)?, ptr(&gw)?);
    let (n64, d64, e64) = (n_idx as i64, dim as i64, num_embeddings as i64);
    launch!(dev, KernelFile::Nn, nn_name("embedding_bwd", dt), elementwise(total);
        ip, n64, gp, d64, wp, e64, padding_idx)?;
    Ok(gw)
}
