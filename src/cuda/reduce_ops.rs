//! Reductions over several dims on CUDA with the `var` and `logsumexp` kernels of
//! `reduce.cu`, which reduce one dim of a contiguous tensor viewed as (outer, dim, inner).
//! The reduced dims are brought together first (free when they are adjacent in a contiguous
//! tensor, else a permuted contiguous copy with them last). Also the scans along one dim
//! (`cumsum`, `cumprod`, `cummax`, `cummin`) and the row sort of `sort.cu`.

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

/// (outer, size, inner) of `shape` around `dim` (a 0-d tensor is one element).
fn around(shape: &[usize], dim: usize) -> (usize, usize, usize) {
    if shape.is_empty() {
        return (1, 1, 1);
    }
    (
        shape[..dim].iter().product(),
        shape[dim],
        shape[dim + 1..].iter().product(),
    )
}

/// Inclusive cumulative sum (or product, with `prod`) of `t` along `dim`, in `t`'s dtype
/// (numeric dtypes; the caller casts to the result dtype first).
pub(crate) fn cumulative(t: &Tensor, dim: usize, prod: bool) -> Result<Tensor> {
    let (outer, size, inner) = around(t.shape(), dim);
    let out = empty(ordinal_of(t)?, t.shape(), t.dtype())?;
    if out.numel() == 0 {
        return Ok(out);
    }
    let x = contiguous(t)?;
    let dev = dev_of(&x)?;
    let (xp, op) = (data_ptr(&x)?, ptr(&out)?);
    let (o64, d64, i64_) = (outer as i64, size as i64, inner as i64);
    let kind = if prod { "cumprod" } else { "cumsum" };
    let name = format!("{kind}_{}", dtype_suffix(t.dtype()));
    launch!(dev, KernelFile::Reduce, name, cfg(outer, inner); xp, op, o64, d64, i64_)?;
    Ok(out)
}

/// Running maximum (or minimum) of `t` along `dim` and the index where it was last attained
/// (numeric dtypes).
pub(crate) fn cum_extremum(t: &Tensor, dim: usize, max: bool) -> Result<(Tensor, Tensor)> {
    let (outer, size, inner) = around(t.shape(), dim);
    let ordinal = ordinal_of(t)?;
    let values = empty(ordinal, t.shape(), t.dtype())?;
    let indices = empty(ordinal, t.shape(), crate::DType::I64)?;
    if values.numel() == 0 {
        return Ok((values, indices));
    }
    let x = contiguous(t)?;
    let dev = dev_of(&x)?;
    let (xp, vp, ip) = (data_ptr(&x)?, ptr(&values)?, ptr(&indices)?);
    let (o64, d64, i64_) = (outer as i64, size as i64, inner as i64);
    let kind = if max { "cummax" } else { "cummin" };
    let name = format!("{kind}_{}", dtype_suffix(t.dtype()));
    launch!(dev, KernelFile::Reduce, name, elementwise(outer * inner); xp, vp, ip, o64, d64, i64_)?;
    Ok((values, indices))
}

/// Rows up to this length sort in one block's shared memory (48 KiB for f64 keys).
const SORT_SMEM_MAX: usize = 4096;
/// Longer rows: the network's stages within chunks of this many elements run in shared
/// memory (`FT_SORT_CHUNK` in sort.cu; 32 KiB for f64 keys).
const SORT_CHUNK: usize = 2048;

/// Stable sort of every row of `t` viewed as `rows` rows of `n` elements (contiguous copy
/// first); returns contiguous (values, int64 indices) of the same shape. NaN sorts last
/// (first when `descending`). `n >= 2`.
pub(crate) fn sort_rows(
    t: &Tensor,
    rows: usize,
    n: usize,
    descending: bool,
) -> Result<(Tensor, Tensor)> {
    let dt = t.dtype();
    let ordinal = ordinal_of(t)?;
    let values = empty(ordinal, t.shape(), dt)?;
    let indices = empty(ordinal, t.shape(), crate::DType::I64)?;
    if rows == 0 {
        return Ok((values, indices));
    }
    let x = contiguous(t)?;
    let dev = dev_of(&x)?;
    let (xp, vp, ip) = (data_ptr(&x)?, ptr(&values)?, ptr(&indices)?);
    let (r64, n64) = (rows as i64, n as i64);
    let desc = i32::from(descending);
    let sfx = dtype_suffix(dt);
    let p = n.next_power_of_two();
    if p <= SORT_SMEM_MAX {
        let cfg = LaunchConfig {
            grid_dim: (rows.min(65535) as u32, 1, 1),
            block_dim: ((p / 2).min(1024) as u32, 1, 1),
            shared_mem_bytes: (p * (4 + dt.size())) as u32,
        };
        let p32 = p as i32;
        let name = format!("sort_rows_{sfx}");
        launch!(dev, KernelFile::Sort, name, cfg; xp, vp, ip, r64, n64, p32, desc)?;
        return Ok((values, indices));
    }
    // Longer rows: the network's stages one launch each, on padded scratch rows.
    let keys = empty(ordinal, &[rows, p], dt)?;
    let idx = empty(ordinal, &[rows, p], crate::DType::I64)?;
    let (kp, xip) = (ptr(&keys)?, ptr(&idx)?);
    let p64 = p as i64;
    let name = format!("sort_init_{sfx}");
    launch!(dev, KernelFile::Sort, name, elementwise(rows * p); xp, kp, xip, r64, n64, p64)?;
    // Stages whose pairs lie within SORT_CHUNK consecutive elements run in shared memory
    // (sort_block); the others are one global launch each (sort_step).
    let step = format!("sort_step_{sfx}");
    let block = format!("sort_block_{sfx}");
    let chunk = SORT_CHUNK as i64;
    let block_cfg = LaunchConfig {
        grid_dim: ((rows * p / SORT_CHUNK).min(65535) as u32, 1, 1),
        block_dim: ((SORT_CHUNK / 2) as u32, 1, 1),
        shared_mem_bytes: (SORT_CHUNK * (8 + dt.size())) as u32,
    };
    let (k_lo, j_hi) = (2i64, chunk / 2);
    launch!(dev, KernelFile::Sort, block, block_cfg; kp, xip, r64, n64, p64, k_lo, chunk, j_hi, desc)?;
    let mut k = 2 * chunk;
    while k <= p64 {
        let mut j = k / 2;
        while j >= chunk {
            launch!(dev, KernelFile::Sort, step, elementwise(rows * p / 2);
                kp, xip, r64, n64, p64, j, k, desc)?;
            j /= 2;
        }
        launch!(dev, KernelFile::Sort, block, block_cfg; kp, xip, r64, n64, p64, k, k, j_hi, desc)?;
        k *= 2;
    }
    let name = format!("sort_finish_{sfx}");
    launch!(dev, KernelFile::Sort, name, elementwise(rows * n); kp, xip, vp, ip, r64, n64, p64)?;
    Ok((values, indices))
}

/// For each of the `n` values, its insertion index into its row of `m` sorted boundaries
/// (`per_line` values per row; 0: a single row for all), as int64 of `shape`. `seq` and
/// `values` share a dtype.
pub(crate) fn searchsorted(
    seq: &Tensor,
    values: &Tensor,
    m: usize,
    per_line: usize,
    right: bool,
    shape: &[usize],
) -> Result<Tensor> {
    let out = empty(ordinal_of(values)?, shape, crate::DType::I64)?;
    let n = out.numel();
    if n == 0 {
        return Ok(out);
    }
    let (s, v) = (contiguous(seq)?, contiguous(values)?);
    let dev = dev_of(&v)?;
    let size = v.dtype().size() as u64;
    let sp = ptr(&s)? + s.storage_offset() as u64 * size;
    let vp = ptr(&v)? + v.storage_offset() as u64 * size;
    let o = ptr(&out)?;
    let (n64, m64, p64, right) = (n as i64, m as i64, per_line as i64, right as i32);
    let name = format!("searchsorted_{}", dtype_suffix(v.dtype()));
    launch!(dev, KernelFile::Sort, name, elementwise(n); sp, vp, o, n64, m64, p64, right)?;
    Ok(out)
}
