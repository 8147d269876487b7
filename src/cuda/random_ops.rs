//! Random numbers drawn on the device (`random.cu`, Philox4x32-10): uniform, normal and
//! Bernoulli samples written straight into CUDA memory. Keyed by the generator's
//! `(seed, offset)` (one offset per sampling call), so a seed gives the same numbers on every
//! run, independent of the launch configuration (not the CPU generator's stream).

use super::compile::KernelFile;
use super::dtype_suffix;
use super::launch::elementwise;
use super::ops::{cast, contiguous, dev_of, empty, launch, ordinal_of, ptr};
use crate::{DType, Error, Result, Tensor};
use cudarc::driver::PushKernelArg;

/// A distribution of `random.cu`.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Dist {
    /// U[low, high) (float dtypes).
    Uniform { low: f64, high: f64 },
    /// N(mean, std^2) (float dtypes).
    Normal { mean: f64, std: f64 },
    /// 1 with probability p, else 0 (every dtype).
    Bernoulli { p: f64 },
}

/// Device pointer of the first element of a contiguous CUDA tensor.
fn data_ptr(t: &Tensor) -> Result<u64> {
    Ok(ptr(t)? + (t.storage_offset() * t.dtype().size()) as u64)
}

/// Fill the contiguous CUDA tensor `out` with samples of `dist` for the generator key
/// `(seed, offset)`.
pub(crate) fn fill(out: &Tensor, dist: Dist, seed: u64, offset: u64) -> Result<()> {
    if !out.is_contiguous() {
        return Err(Error::Runtime(
            "random fill on CUDA: the output must be contiguous".into(),
        ));
    }
    let dt = out.dtype();
    let n = out.numel();
    if n == 0 {
        return Ok(());
    }
    if !matches!(dist, Dist::Bernoulli { .. }) && !dt.is_floating_point() {
        return Err(Error::UnsupportedDType {
            op: "uniform/normal on CUDA",
            dtype: dt,
        });
    }
    let dev = dev_of(out)?;
    let o = data_ptr(out)?;
    let n64 = n as i64;
    let sfx = dtype_suffix(dt);
    // One thread per Philox block: 4 outputs, or 2 for f64 uniform/normal (53-bit uniforms).
    let per_call = if dt == DType::F64 && !matches!(dist, Dist::Bernoulli { .. }) {
        2
    } else {
        4
    };
    let cfg = elementwise(n.div_ceil(per_call));
    match dist {
        Dist::Uniform { low, high } => {
            let name = format!("uniform_{sfx}");
            launch!(dev, KernelFile::Random, name, cfg; o, n64, seed, offset, low, high)
        }
        Dist::Normal { mean, std } => {
            let name = format!("normal_{sfx}");
            launch!(dev, KernelFile::Random, name, cfg; o, n64, seed, offset, mean, std)
        }
        Dist::Bernoulli { p } => {
            let name = format!("bernoulli_{sfx}");
            launch!(dev, KernelFile::Random, name, cfg; o, n64, seed, offset, p)
        }
    }
}

/// A new contiguous tensor of `shape` and `dtype` on `cuda:ordinal` filled from `dist`.
pub(crate) fn sample(
    ordinal: usize,
    shape: &[usize],
    dtype: DType,
    dist: Dist,
    seed: u64,
    offset: u64,
) -> Result<Tensor> {
    let out = empty(ordinal, shape, dtype)?;
    fill(&out, dist, seed, offset)?;
    Ok(out)
}

/// 1 where a uniform draw is below `p[i]` (probabilities already checked to lie in [0, 1]
/// and broadcast to the result's shape), else 0; the result is contiguous, of `p`'s float
/// dtype (float32 for other dtypes), on `p`'s device.
pub(crate) fn bernoulli_tensor(p: &Tensor, seed: u64, offset: u64) -> Result<Tensor> {
    let dt = if p.dtype().is_floating_point() {
        p.dtype()
    } else {
        DType::F32
    };
    let probs = contiguous(&cast(p, dt)?)?;
    let out = empty(ordinal_of(&probs)?, probs.shape(), dt)?;
    let n = out.numel();
    if n == 0 {
        return Ok(out);
    }
    let dev = dev_of(&probs)?;
    let (pp, o) = (data_ptr(&probs)?, data_ptr(&out)?);
    let n64 = n as i64;
    let name = format!("bernoulli_tensor_{}", dtype_suffix(dt));
    launch!(dev, KernelFile::Random, name, elementwise(n.div_ceil(4)); pp, o, n64, seed, offset)?;
    Ok(out)
}
