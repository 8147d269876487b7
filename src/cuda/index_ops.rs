//! Index writes on CUDA (`index.cu`): `scatter_`/`scatter_add_`, `index_add_`,
//! `masked_fill_`, and advanced indexing (`t[idx]`, `t[mask]`, `t[idx] = v`) through lists of
//! element offsets computed on the host by the CPU indexing plan. `Tensor` validates indices
//! and shapes (with PyTorch's errors) before calling these; the kernels skip out-of-range
//! indices rather than fail.

use super::compile::KernelFile;
use super::dtype_suffix;
use super::launch::{elementwise, joint_layouts, unmerged_layout, StridedLayout};
use super::ops::{cast, contiguous, dev_of, empty, launch, ordinal_of, ptr, storage, upload};
use crate::layout::Layout;
use crate::{with_dtype, DType, Device, Error, Result, Scalar, Tensor};
use cudarc::driver::PushKernelArg;

/// A 1-d layout of `n` contiguous elements from `offset`.
fn flat(n: usize, offset: usize) -> StridedLayout {
    let mut l = StridedLayout {
        ndim: 1,
        offset: offset as i64,
        ..Default::default()
    };
    l.shape[0] = n as i64;
    l.strides[0] = 1;
    l
}

/// `t` on `like`'s CUDA device (uploaded when on the CPU).
fn on_device(t: &Tensor, like: &Tensor, op: &'static str) -> Result<Tensor> {
    match t.device() {
        d if d == like.device() => Ok(t.clone()),
        Device::Cpu => upload(t, ordinal_of(like)?),
        d => Err(Error::DeviceMismatch {
            op,
            lhs: like.device(),
            rhs: d,
        }),
    }
}

/// An int64 index tensor on `like`'s device.
fn index_on_device(index: &Tensor, like: &Tensor, op: &'static str) -> Result<Tensor> {
    cast(&on_device(index, like, op)?, DType::I64)
}

/// `dst.layout` (seen as `dl`) written in place: `dst[.., index[c] on dim, ..] = src[c]`
/// (`add`: `+=`, atomically), iterating over the index's shape. `index` and `src` are
/// already viewed with the index's shape (`src` may have zero strides for a scalar).
pub(crate) fn scatter_(
    dst: &Tensor,
    dl: &Layout,
    dim: usize,
    index: &Tensor,
    src: &Tensor,
    add: bool,
) -> Result<()> {
    let op = if add { "scatter_add_" } else { "scatter_" };
    let n = index.numel();
    if n == 0 {
        return Ok(());
    }
    let idx = index_on_device(index, dst, op)?;
    let src = cast(&on_device(src, dst, op)?, dst.dtype())?;
    let (sl, il, ol) = (
        unmerged_layout(op, src.layout())?,
        unmerged_layout(op, idx.layout())?,
        unmerged_layout(op, dl)?,
    );
    if sl.ndim != il.ndim || il.ndim != ol.ndim {
        return Err(Error::Runtime(format!(
            "{op}: index, source and destination must have the same number of dims"
        )));
    }
    let dev = dev_of(dst)?;
    let (sp, ip, op_) = (ptr(&src)?, ptr(&idx)?, ptr(dst)?);
    let (dim32, n64) = (dim as i32, n as i64);
    let kernel = if add { "scatter_add" } else { "scatter" };
    let name = format!("{kernel}_{}", dtype_suffix(dst.dtype()));
    dst.storage().bump_version();
    launch!(dev, KernelFile::Index, name, elementwise(n); sp, sl, ip, il, op_, ol, dim32, n64)
}

/// In place: `dst[.., index[k] on dim, ..] += alpha * src[.., k on dim, ..]` (atomic), with
/// `dst` seen as `dl`, `src` at least 1-d and `index` 1-d.
pub(crate) fn index_add_(
    dst: &Tensor,
    dl: &Layout,
    dim: usize,
    index: &Tensor,
    src: &Tensor,
    alpha: f64,
) -> Result<()> {
    let op = "index_add_";
    let n = src.numel();
    if n == 0 {
        return Ok(());
    }
    let idx = contiguous(&index_on_device(index, dst, op)?)?;
    let src = cast(&on_device(src, dst, op)?, dst.dtype())?;
    let (ol, sl) = (unmerged_layout(op, dl)?, unmerged_layout(op, src.layout())?);
    let dev = dev_of(dst)?;
    let (o, s) = (ptr(dst)?, ptr(&src)?);
    let ip = ptr(&idx)? + (idx.storage_offset() * 8) as u64;
    let (nidx, dim32, n64) = (idx.numel() as i64, dim as i32, n as i64);
    let name = format!("index_add_{}", dtype_suffix(dst.dtype()));
    dst.storage().bump_version();
    launch!(dev, KernelFile::Index, name, elementwise(n); o, ol, ip, nidx, s, sl, dim32, alpha, n64)
}

/// In place: `dst[mask] = value`, `mask` (bool) broadcast to `dst`'s shape (checked).
pub(crate) fn masked_fill_(dst: &Tensor, mask: &Tensor, value: Scalar) -> Result<()> {
    let op = "masked_fill_";
    let n = dst.numel();
    if n == 0 {
        return Ok(());
    }
    let mask = on_device(mask, dst, op)?;
    let ml = mask.layout().broadcast_to(op, dst.shape())?;
    let dt = dst.dtype();
    // A contiguous destination is both the kernel's input and output (each element is read
    // and written by the same thread); otherwise write a contiguous result and copy it in.
    let out = if dst.is_contiguous() {
        dst.clone()
    } else {
        empty(ordinal_of(dst)?, dst.shape(), dt)?
    };
    let [xl, mkl] = joint_layouts::<2>(
        op,
        dst.shape(),
        [
            (dst.strides(), dst.storage_offset()),
            (&ml.strides, ml.offset),
        ],
    )?;
    let dev = dev_of(dst)?;
    let (xp, mp) = (ptr(dst)?, ptr(&mask)?);
    let o = ptr(&out)? + (out.storage_offset() * dt.size()) as u64;
    let n64 = n as i64;
    let name = format!("masked_fill_{}", dtype_suffix(dt));
    dst.storage().bump_version();
    with_dtype!(dt, T, {
        let v: T = value.to_elem::<T>();
        launch!(dev, KernelFile::Index, name, elementwise(n); xp, xl, mp, mkl, v, o, n64)?;
    });
    if !dst.is_contiguous() {
        super::ops::copy_into(dst, &out)?;
    }
    Ok(())
}

/// Element offsets (into the storage) as an int64 tensor on `like`'s device.
fn offsets_tensor(offsets: Vec<usize>, like: &Tensor) -> Result<Tensor> {
    let n = offsets.len();
    let v: Vec<i64> = offsets.into_iter().map(|o| o as i64).collect();
    upload(&Tensor::from_vec(v, &[n])?, ordinal_of(like)?)
}

/// A new contiguous tensor of `shape` with the elements of `src`'s storage at `offsets`.
pub(crate) fn gather_offsets(src: &Tensor, offsets: Vec<usize>, shape: &[usize]) -> Result<Tensor> {
    let out = empty(ordinal_of(src)?, shape, src.dtype())?;
    let n = out.numel();
    if n == 0 {
        return Ok(out);
    }
    let idx = offsets_tensor(offsets, src)?;
    let (xl, il) = (flat(storage(src)?.len(), 0), flat(n, 0));
    let dev = dev_of(src)?;
    let (xp, ip, o) = (ptr(src)?, ptr(&idx)?, ptr(&out)?);
    let (dim32, n64) = (0i32, n as i64);
    let name = format!("gather_{}", dtype_suffix(src.dtype()));
    launch!(dev, KernelFile::Index, name, elementwise(n); xp, xl, ip, il, o, dim32, n64)?;
    Ok(out)
}

/// The `n` values written at `n` offsets of `dst`: on its device, in its dtype, contiguous.
fn offset_values(values: &Tensor, dst: &Tensor, n: usize, op: &'static str) -> Result<Tensor> {
    if values.numel() != n {
        return Err(Error::Runtime(format!(
            "{op}: {} values for {n} indexed elements",
            values.numel()
        )));
    }
    contiguous(&cast(&on_device(values, dst, op)?, dst.dtype())?)
}

/// In place: `dst.storage[offsets[i]] = values[i]` (`add`: `+=`, summing repeated offsets),
/// `values` in offset order (cast to `dst`'s dtype).
pub(crate) fn scatter_offsets(
    dst: &Tensor,
    offsets: Vec<usize>,
    values: &Tensor,
    add: bool,
) -> Result<()> {
    let n = offsets.len();
    if n == 0 {
        return Ok(());
    }
    let vals = offset_values(values, dst, n, "index_put_")?;
    let idx = offsets_tensor(offsets, dst)?;
    let (sl, il, ol) = (
        flat(n, vals.storage_offset()),
        flat(n, 0),
        flat(storage(dst)?.len(), 0),
    );
    let dev = dev_of(dst)?;
    let (sp, ip, o) = (ptr(&vals)?, ptr(&idx)?, ptr(dst)?);
    let (dim32, n64) = (0i32, n as i64);
    let kernel = if add { "scatter_add" } else { "scatter" };
    let name = format!("{kernel}_{}", dtype_suffix(dst.dtype()));
    dst.storage().bump_version();
    launch!(dev, KernelFile::Index, name, elementwise(n); sp, sl, ip, il, o, ol, dim32, n64)
}

/// In place: `dst.storage[offsets[i]] = op(dst.storage[offsets[i]], values[i])` for `op` in
/// "prod" / "amax" / "amin" (scatter_reduce), atomically, so repeated offsets combine;
/// `values` in offset order (cast to `dst`'s dtype).
pub(crate) fn combine_offsets(
    dst: &Tensor,
    offsets: Vec<usize>,
    values: &Tensor,
    op: &str,
) -> Result<()> {
    let n = offsets.len();
    if n == 0 {
        return Ok(());
    }
    let vals = offset_values(values, dst, n, "scatter_reduce")?;
    let idx = offsets_tensor(offsets, dst)?;
    let dev = dev_of(dst)?;
    let sp = ptr(&vals)? + (vals.storage_offset() * vals.dtype().size()) as u64;
    let (ip, o, n64) = (ptr(&idx)?, ptr(dst)?, n as i64);
    let name = format!("scatter_reduce_{op}_{}", dtype_suffix(dst.dtype()));
    dst.storage().bump_version();
    launch!(dev, KernelFile::Index, name, elementwise(n); o, ip, sp, n64)
}
