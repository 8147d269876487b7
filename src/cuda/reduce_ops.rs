//! Reductions over several dims on CUDA with the `var` and `logsumexp` kernels of
//! `reduce.cu`, which reduce one dim of a contiguous tensor viewed as (outer, dim, inner).
//! The reduced dims are brought together first (free when they are adjacent in a contiguous
//! tensor, else a permuted contiguous copy with them last).

use super::compile::KernelFile;
use super::dtype_suffix;
use super::launch::{elementwise, per_row};
use super::ops::{contiguous, dev_of, empty, full, launch, ordinal_of, ptr};
use crate::layout::Layout;
use crate::{Error, Result, Scalar, Tensor};
use cudarc::driver::{LaunchConfig, PushKernelArg};

/// `t` as a contiguous tensor viewed as (outer, size, inner), where `size` is the product of
/// the dims flagged in `mask` (an empty product is 1).
fn grouped(t: &Tensor, mask: &[bool]) -> Result<(Tensor, usize, usize, usize)> {
    let nd = t.ndim();
    let red: Vec<usize> = (0..nd).filter(|&d| mask[d]).collect();
    let shape = t.shape();
    let adjacent = red.windows(2).all(|w| w[1] == w[0] + 1);
    if adjacent {
        let x = contiguous(t)?;
        let (a, b) = match (red.first(), red.last()) {
            (Some(&a), Some(&b)) => (a, b + 1),
            _ => (nd, nd),
        };
        let outer = shape[..a].iter().product();
        let size = shape[a..b].iter().product();
        let inner = shape[b..].iter().product();
        return Ok((x, outer, size, inner));
    }
    // Kept dims first (in order), reduced dims last.
    let perm: Vec<usize> = (0..nd)
        .filter(|&d| !mask[d])
        .chain(red.iter().copied())
        .collect();
    let l = t.layout();
    let mut pl: Layout = l.clone();
    pl.shape = perm.iter().map(|&d| l.shape[d]).collect();
    pl.strides = perm.iter().map(|&d| l.strides[d]).collect();
    let x = contiguous(&t.with_layout(pl))?;
    let outer = (0..nd).filter(|&d| !mask[d]).map(|d| shape[d]).product();
    let size = red.iter().map(|&d| shape[d]).product();
    Ok((x, outer, size, 1))
}

fn reduced_shape(shape: &[usize], mask: &[bool], keepdim: bool) -> Vec<usize> {
    shape
        .iter()
        .zip(mask)
        .filter_map(|(&n, &m)| match (m, keepdim) {
            (false, _) => Some(n),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect()
}

fn cfg(outer: usize, inner: usize) -> LaunchConfig {
    if inner == 1 {
        per_row(outer)
    } else {
        elementwise(outer * inner)
    }
}

fn data_ptr(t: &Tensor) -> Result<u64> {
    Ok(ptr(t)? + (t.storage_offset() * t.dtype().size()) as u64)
}

fn check_float(op: &str, t: &Tensor) -> Result<()> {
    if !t.dtype().is_floating_point() {
        return Err(Error::Runtime(format!(
            "{op} on CUDA needs a floating point tensor, got {}",
            t.dtype().torch_name()
        )));
    }
    Ok(())
}

/// Variance (standard deviation with `take_sqrt`) over the dims flagged in `mask` with
/// `correction`, and the mean when `want_mean`; results have `t`'s float dtype.
pub(crate) fn var(
    t: &Tensor,
    mask: &[bool],
    correction: f64,
    keepdim: bool,
    take_sqrt: bool,
    want_mean: bool,
) -> Result<(Tensor, Option<Tensor>)> {
    check_float("var", t)?;
    let dt = t.dtype();
    let out_shape = reduced_shape(t.shape(), mask, keepdim);
    let ordinal = ordinal_of(t)?;
    let (x, outer, size, inner) = grouped(t, mask)?;
    if outer * inner == 0 || size == 0 {
        // Nothing to reduce into, or empty reductions: NaN (0 / 0), as on the CPU.
        let nan = Scalar::Float(f64::NAN);
        let v = full(ordinal, &out_shape, nan, dt)?;
        let m = want_mean
            .then(|| full(ordinal, &out_shape, nan, dt))
            .transpose()?;
        return Ok((v, m));
    }
    let out = empty(ordinal, &out_shape, dt)?;
    let mean = want_mean
        .then(|| empty(ordinal, &out_shape, dt))
        .transpose()?;
    let dev = dev_of(&x)?;
    let (xp, op) = (data_ptr(&x)?, ptr(&out)?);
    let mp: u64 = match &mean {
        Some(m) => ptr(m)?,
        None => 0,
    };
    let (o64, d64, i64_) = (outer as i64, size as i64, inner as i64);
    let sq = i32::from(take_sqrt);
    let name = format!("var_{}", dtype_suffix(dt));
    launch!(dev, KernelFile::Reduce, name, cfg(outer, inner);
        xp, op, mp, o64, d64, i64_, correction, sq)?;
    Ok((out, mean))
}

/// `log(sum(exp(x)))` over the dims flagged in `mask` (float `t`).
pub(crate) fn logsumexp(t: &Tensor, mask: &[bool], keepdim: bool) -> Result<Tensor> {
    check_float("logsumexp", t)?;
    let dt = t.dtype();
    let out_shape = reduced_shape(t.shape(), mask, keepdim);
    let ordinal = ordinal_of(t)?;
    let (x, outer, size, inner) = grouped(t, mask)?;
    if outer * inner == 0 || size == 0 {
        // An empty sum is 0, its log -inf.
        return full(ordinal, &out_shape, Scalar::Float(f64::NEG_INFINITY), dt);
    }
    let out = empty(ordinal, &out_shape, dt)?;
    let dev = dev_of(&x)?;
    let (xp, op) = (data_ptr(&x)?, ptr(&out)?);
    let (o64, d64, i64_) = (outer as i64, size as i64, inner as i64);
    let name = format!("logsumexp_{}", dtype_suffix(dt));
    launch!(dev, KernelFile::Reduce, name, cfg(outer, inner); xp, op, o64, d64, i64_)?;
    Ok(out)
}
