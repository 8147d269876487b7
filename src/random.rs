//! Random number generation: seeded generators and the sampling ops (`rand`, `randn`,
//! `randint`, `randperm`, `normal`, `bernoulli`, `multinomial` and the in-place
//! `uniform_`/`normal_`/`bernoulli_`/`random_`/`exponential_`/... methods).
//!
//! A [`Generator`]'s state is just `(seed, offset)`. Every sampling call takes the current
//! offset and bumps it by one; the call's numbers come from ChaCha streams (`rand`'s
//! `StdRng`) keyed by `(seed, offset, chunk)`, one stream per fixed-size chunk of the
//! output. So results depend only on the seed and the number of earlier calls — never on
//! the thread count — chunks can be generated in parallel, and the state can be saved and
//! restored exactly (`get_state`/`set_state` serialise the two numbers).

use crate::cuda::random_ops::{self as cuda_random, Dist};
use crate::dtype::Category;
use crate::layout::broadcast_shapes;
use crate::tensor::creation::{checked_shape, try_filled};
use crate::{
    with_dtype, BinaryOp, DType, Device, Element, Error, Result, ResultType, Scalar, Tensor,
    UnaryOp,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp1, StandardNormal};
use rayon::prelude::*;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

/// PyTorch's default seed for the CPU generator.
pub const DEFAULT_SEED: u64 = 67280421310721;

/// Elements drawn from one ChaCha stream; fixed so results do not depend on threads.
const RNG_CHUNK: usize = 1 << 14;

/// Bytes of a serialised generator state: seed and offset, little endian.
pub const STATE_SIZE: usize = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct GenState {
    seed: u64,
    offset: u64,
}

/// A seeded random number generator. Cloning gives another handle to the same state.
#[derive(Clone, Debug)]
pub struct Generator(Arc<Mutex<GenState>>);

/// Identifies one sampling call: the stream keys of its chunks derive from it.
#[derive(Debug, Clone, Copy)]
pub struct Key {
    seed: u64,
    offset: u64,
}

impl Key {
    /// The random stream for chunk `chunk` of this call.
    pub fn rng(self, chunk: u64) -> StdRng {
        let mut s = [0u8; 32];
        s[0..8].copy_from_slice(&self.seed.to_le_bytes());
        s[8..16].copy_from_slice(&self.offset.to_le_bytes());
        s[16..24].copy_from_slice(&chunk.to_le_bytes());
        s[24..32].copy_from_slice(b"ferrotch");
        StdRng::from_seed(s)
    }
}

static DEFAULT_GENERATOR: LazyLock<Generator> = LazyLock::new(|| Generator::new(DEFAULT_SEED));

impl Default for Generator {
    fn default() -> Self {
        Generator::new(DEFAULT_SEED)
    }
}

impl Generator {
    /// A new generator seeded with `seed`.
    pub fn new(seed: u64) -> Generator {
        Generator(Arc::new(Mutex::new(GenState { seed, offset: 0 })))
    }
    /// The process-wide default generator (used when no generator is passed).
    pub fn default_generator() -> Generator {
        DEFAULT_GENERATOR.clone()
    }
    fn lock(&self) -> MutexGuard<'_, GenState> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
    /// Reset to `seed` (`manual_seed`).
    pub fn manual_seed(&self, seed: u64) {
        *self.lock() = GenState { seed, offset: 0 };
    }
    /// Reseed from the operating system's entropy and return the new seed.
    pub fn seed(&self) -> u64 {
        // Keep seeds below 2^53 so they survive a round trip through a Python float.
        let s = rand::random::<u64>() >> 11;
        self.manual_seed(s);
        s
    }
    /// The seed this generator was last seeded with.
    pub fn initial_seed(&self) -> u64 {
        self.lock().seed
    }
    /// Serialised state (seed and offset).
    pub fn get_state(&self) -> Vec<u8> {
        let st = *self.lock();
        let mut v = Vec::with_capacity(STATE_SIZE);
        v.extend_from_slice(&st.seed.to_le_bytes());
        v.extend_from_slice(&st.offset.to_le_bytes());
        v
    }
    /// Restore a state produced by `get_state`.
    pub fn set_state(&self, state: &[u8]) -> Result<()> {
        if state.len() != STATE_SIZE {
            return Err(Error::Runtime(format!(
                "RNG state is wrong size: expected {STATE_SIZE} bytes, got {}",
                state.len()
            )));
        }
        let word = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&state[i..i + 8]);
            u64::from_le_bytes(b)
        };
        *self.lock() = GenState {
            seed: word(0),
            offset: word(8),
        };
        Ok(())
    }
    /// Reserve the next call's key.
    pub fn next_key(&self) -> Key {
        let mut st = self.lock();
        let k = Key {
            seed: st.seed,
            offset: st.offset,
        };
        st.offset = st.offset.wrapping_add(1);
        k
    }
    /// True when both handles share one state.
    pub fn same(&self, other: &Generator) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// Seed the default generator (`torch.manual_seed`) and return it.
pub fn manual_seed(seed: u64) -> Generator {
    let g = Generator::default_generator();
    g.manual_seed(seed);
    g
}

fn key_of(gen: Option<&Generator>) -> Key {
    match gen {
        Some(g) => g.next_key(),
        None => DEFAULT_GENERATOR.next_key(),
    }
}

/// Samples of `dist` drawn on `cuda:ordinal` by random.cu's Philox kernels, keyed by the next
/// key of `gen` (the same seed gives the same numbers, not the CPU stream's).
fn sample_cuda(
    ordinal: usize,
    shape: &[i64],
    dtype: DType,
    dist: Dist,
    gen: Option<&Generator>,
) -> Result<Tensor> {
    let dims = checked_shape(shape)?;
    let k = key_of(gen);
    cuda_random::sample(ordinal, &dims, dtype, dist, k.seed, k.offset)
}

/// Fill a fresh vector of `n` values, chunk `c` drawing from `key.rng(c)`.
fn sample_vec<T: Element>(
    n: usize,
    key: Key,
    f: impl Fn(&mut StdRng) -> T + Sync + Send,
) -> Result<Vec<T>> {
    let mut out = try_filled(n, T::zero())?;
    let fill = |(c, chunk): (usize, &mut [T])| {
        let mut rng = key.rng(c as u64);
        for o in chunk.iter_mut() {
            *o = f(&mut rng);
        }
    };
    if n >= 2 * RNG_CHUNK {
        out.par_chunks_mut(RNG_CHUNK).enumerate().for_each(fill);
    } else {
        out.chunks_mut(RNG_CHUNK).enumerate().for_each(fill);
    }
    Ok(out)
}

/// Mantissa digits: how many random bits a uniform [0, 1) sample of `dtype` gets.
fn digits(dtype: DType) -> u32 {
    match dtype {
        DType::F64 => 53,
        DType::F16 => 11,
        DType::BF16 => 8,
        _ => 24,
    }
}

/// Uniform on [0, 1) with `bits` random bits (exactly representable in the target dtype,
/// so rounding never produces 1).
#[inline]
fn unit(rng: &mut StdRng, bits: u32) -> f64 {
    (rng.gen::<u64>() >> (64 - bits)) as f64 * (-(bits as f64)).exp2()
}

/// Uniform integer in `[low, high)` (`high > low`, span up to 2^64).
#[inline]
fn int_in(rng: &mut StdRng, low: i128, high: i128) -> i128 {
    let span = high - low;
    if span > u64::MAX as i128 {
        low + rng.gen::<u64>() as i128
    } else {
        low + rng.gen_range(0..span as u64) as i128
    }
}

/// A tensor of `shape` and `dtype` whose elements are `f(rng)` converted from f64.
fn sample_f64(
    shape: &[i64],
    dtype: DType,
    key: Key,
    f: impl Fn(&mut StdRng) -> f64 + Sync + Send,
) -> Result<Tensor> {
    let dims = checked_shape(shape)?;
    let n = dims.iter().product();
    with_dtype!(dtype, T, {
        Ok(Tensor::from_vec_unchecked(
            sample_vec(n, key, |r| T::from_f64(f(r)))?,
            &dims,
        ))
    })
}

fn require_float(dtype: DType, op: &'static str) -> Result<()> {
    if !dtype.is_floating_point() {
        return Err(Error::UnsupportedDType { op, dtype });
    }
    Ok(())
}

fn shape_i64(t: &Tensor) -> Vec<i64> {
    t.shape().iter().map(|&s| s as i64).collect()
}

/// The range PyTorch's `random_()` uses without bounds: `[0, 2^digits]` for floats and
/// `[0, max]` for integers, as a half-open `[0, to)`.
fn default_random_to(dtype: DType) -> i128 {
    match dtype {
        DType::Bool => 2,
        DType::U8 => u8::MAX as i128 + 1,
        DType::I8 => i8::MAX as i128 + 1,
        DType::I16 => i16::MAX as i128 + 1,
        DType::I32 => i32::MAX as i128 + 1,
        DType::I64 => i64::MAX as i128 + 1,
        d => (1i128 << digits(d)) + 1,
    }
}

/// Check that integers `[from, to)` are representable in `dtype`.
fn check_int_range(op: &'static str, from: i128, to: i128, dtype: DType) -> Result<()> {
    if from >= to {
        return Err(Error::Runtime(format!(
            "{op} expects 'from' to be less than 'to', but got from={from} >= to={to}"
        )));
    }
    let (lo, hi): (i128, i128) = match dtype {
        DType::Bool => (0, 1),
        DType::U8 => (0, u8::MAX as i128),
        DType::I8 => (i8::MIN as i128, i8::MAX as i128),
        DType::I16 => (i16::MIN as i128, i16::MAX as i128),
        DType::I32 => (i32::MIN as i128, i32::MAX as i128),
        DType::I64 => (i64::MIN as i128, i64::MAX as i128),
        d => {
            let m = 1i128 << digits(d);
            (-m, m)
        }
    };
    if from < lo || from > hi {
        return Err(Error::Runtime(format!(
            "{op} expects 'from' to be in [{lo}, {hi}] for dtype {dtype}, but got from={from}"
        )));
    }
    if to - 1 > hi || to - 1 < lo {
        return Err(Error::Runtime(format!(
            "{op} expects 'to' - 1 to be in [{lo}, {hi}] for dtype {dtype}, but got to={to}"
        )));
    }
    Ok(())
}

// ----------------------------------------------------------------------------- factories

/// Uniform samples on `[0, 1)` (`torch.rand`).
pub fn rand(shape: &[i64], dtype: DType, gen: Option<&Generator>) -> Result<Tensor> {
    require_float(dtype, "check_uniform_bounds")?;
    let bits = digits(dtype);
    sample_f64(shape, dtype, key_of(gen), move |r| unit(r, bits))
}

/// `rand` drawn directly on `device` (on the GPU for CUDA).
pub fn rand_on(
    shape: &[i64],
    dtype: DType,
    device: Device,
    gen: Option<&Generator>,
) -> Result<Tensor> {
    match device {
        Device::Cpu => rand(shape, dtype, gen),
        Device::Cuda(n) => {
            require_float(dtype, "check_uniform_bounds")?;
            let dist = Dist::Uniform {
                low: 0.0,
                high: 1.0,
            };
            sample_cuda(n, shape, dtype, dist, gen)
        }
    }
}

/// `randn` drawn directly on `device` (on the GPU for CUDA).
pub fn randn_on(
    shape: &[i64],
    dtype: DType,
    device: Device,
    gen: Option<&Generator>,
) -> Result<Tensor> {
    match device {
        Device::Cpu => randn(shape, dtype, gen),
        _ => normal_on(0.0, 1.0, shape, dtype, device, gen),
    }
}

/// `normal(mean, std, size)` drawn directly on `device` (on the GPU for CUDA).
pub fn normal_on(
    mean: f64,
    std: f64,
    shape: &[i64],
    dtype: DType,
    device: Device,
    gen: Option<&Generator>,
) -> Result<Tensor> {
    match device {
        Device::Cpu => normal(mean, std, shape, dtype, gen),
        Device::Cuda(n) => {
            require_float(dtype, "normal_kernel_cpu")?;
            check_std(std)?;
            sample_cuda(n, shape, dtype, Dist::Normal { mean, std }, gen)
        }
    }
}

/// Standard normal samples (`torch.randn`).
pub fn randn(shape: &[i64], dtype: DType, gen: Option<&Generator>) -> Result<Tensor> {
    require_float(dtype, "normal_kernel_cpu")?;
    sample_f64(shape, dtype, key_of(gen), |r| StandardNormal.sample(r))
}

/// Uniform integers on `[low, high)` (`torch.randint`), stored as `dtype`.
pub fn randint(
    low: i64,
    high: i64,
    shape: &[i64],
    dtype: DType,
    gen: Option<&Generator>,
) -> Result<Tensor> {
    let (lo, hi) = (low as i128, high as i128);
    check_int_range("random_", lo, hi, dtype)?;
    let key = key_of(gen);
    let dims = checked_shape(shape)?;
    let n = dims.iter().product();
    with_dtype!(dtype, T, {
        Ok(Tensor::from_vec_unchecked(
            sample_vec(n, key, |r| T::from_i64(int_in(r, lo, hi) as i64))?,
            &dims,
        ))
    })
}

/// A random permutation of `0..n` (`torch.randperm`).
pub fn randperm(n: i64, dtype: DType, gen: Option<&Generator>) -> Result<Tensor> {
    if n < 0 {
        return Err(Error::Runtime(format!("n must be non-negative, got {n}")));
    }
    let fits = match dtype {
        DType::I64 => true,
        DType::F16 | DType::BF16 | DType::F32 | DType::F64 => {
            n as i128 <= (1i128 << digits(dtype)) + 1
        }
        d => check_int_range("randperm", 0, n.max(1) as i128, d).is_ok(),
    };
    if !fits {
        return Err(Error::Runtime(format!(
            "n is too large for result tensor type: '{}'",
            dtype.python_name()
        )));
    }
    let key = key_of(gen);
    let n = n as usize;
    let mut perm: Vec<i64> = try_filled(n, 0i64)?;
    for (i, p) in perm.iter_mut().enumerate() {
        *p = i as i64;
    }
    let mut rng = key.rng(0);
    for i in (1..n).rev() {
        let j = rng.gen_range(0..=i);
        perm.swap(i, j);
    }
    Ok(Tensor::from_vec_unchecked(perm, &[n]).to_dtype(dtype))
}

/// Normal samples with scalar mean and std (`torch.normal(mean, std, size)`).
pub fn normal(
    mean: f64,
    std: f64,
    shape: &[i64],
    dtype: DType,
    gen: Option<&Generator>,
) -> Result<Tensor> {
    require_float(dtype, "normal_kernel_cpu")?;
    check_std(std)?;
    sample_f64(shape, dtype, key_of(gen), move |r| {
        let z: f64 = StandardNormal.sample(r);
        mean + std * z
    })
}

fn check_std(std: f64) -> Result<()> {
    if std.is_nan() || std < 0.0 {
        return Err(Error::Runtime(format!(
            "normal expects std >= 0.0, but found std {std}"
        )));
    }
    Ok(())
}

/// A mean or std argument of `normal`: a tensor or a number.
#[derive(Clone)]
pub enum Param {
    Tensor(Tensor),
    Number(f64),
}

/// `torch.normal(mean, std)` where at least one of them is a tensor: elementwise
/// `mean + std * N(0, 1)`, broadcast; the result has the tensors' promoted dtype.
pub fn normal_tensor(mean: &Param, std: &Param, gen: Option<&Generator>) -> Result<Tensor> {
    let mut rt = ResultType::new();
    let mut shape: Vec<usize> = vec![];
    for p in [mean, std] {
        match p {
            Param::Tensor(t) => {
                rt = rt.tensor(t.dtype(), t.ndim());
                shape = broadcast_shapes("normal", &shape, t.shape())?.to_vec();
            }
            Param::Number(v) => rt = rt.scalar(Scalar::Float(*v)),
        }
    }
    let out = rt.finish();
    require_float(out, "normal_kernel_cpu")?;
    let as_f64 = |p: &Param| match p {
        Param::Tensor(t) => t.to_dtype(DType::F64),
        Param::Number(v) => Tensor::scalar(Scalar::Float(*v), DType::F64),
    };
    let (m, s) = (as_f64(mean), as_f64(std));
    if s.to_vec::<f64>()?.iter().any(|&v| v.is_nan() || v < 0.0) {
        return Err(Error::Runtime(
            "normal expects all elements of std >= 0.0".into(),
        ));
    }
    let shape: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    let cuda = [mean, std].into_iter().find_map(|p| match p {
        Param::Tensor(t) if t.device().is_cuda() => Some(t.device()),
        _ => None,
    });
    let z = match cuda {
        Some(d) => normal_on(0.0, 1.0, &shape, DType::F64, d, gen)?,
        None => sample_f64(&shape, DType::F64, key_of(gen), |r| {
            StandardNormal.sample(r)
        })?,
    };
    Ok(z.binary(&s, BinaryOp::Mul)?
        .binary(&m, BinaryOp::Add)?
        .to_dtype(out))
}

/// `torch.bernoulli(input)`: 1 with probability `input[i]` (float input), else 0; or, with
/// `p`, probability `p` everywhere. The result has the input's shape and dtype.
pub fn bernoulli(input: &Tensor, p: Option<f64>, gen: Option<&Generator>) -> Result<Tensor> {
    let out = match input.device() {
        Device::Cpu => Tensor::full_checked(&shape_i64(input), Scalar::Int(0), input.dtype())?,
        d => Tensor::full_on(d, input.shape(), Scalar::Int(0), input.dtype())?,
    };
    match p {
        Some(p) => out.bernoulli_scalar_(p, gen)?,
        None => {
            require_float(input.dtype(), "bernoulli_tensor_cpu_p_")?;
            out.bernoulli_tensor_(input, gen)?
        }
    }
    Ok(out)
}

/// Draw one `f64` per element of `params` (in order) with `draw(param, rng)`, from the chunked
/// streams of `gen`'s next key; the result has the parameters' shape, dtype and device.
fn sample_per_element(
    params: &Tensor,
    gen: Option<&Generator>,
    draw: impl Fn(f64, &mut StdRng) -> f64 + Sync,
) -> Result<Tensor> {
    let host = crate::no_grad(|| params.to_device(Device::Cpu))?;
    let p = host.to_dtype(DType::F64).contiguous().to_vec::<f64>()?;
    let key = key_of(gen);
    let mut out: Vec<f64> = try_filled(p.len(), 0.0)?;
    let fill = |(c, chunk): (usize, &mut [f64])| {
        let mut rng = key.rng(c as u64);
        let base = c * RNG_CHUNK;
        for (i, o) in chunk.iter_mut().enumerate() {
            *o = draw(p[base + i], &mut rng);
        }
    };
    if p.len() >= 2 * RNG_CHUNK {
        out.par_chunks_mut(RNG_CHUNK).enumerate().for_each(fill);
    } else {
        out.chunks_mut(RNG_CHUNK).enumerate().for_each(fill);
    }
    Tensor::from_vec(out, params.shape())?
        .to_dtype(params.dtype())
        .to_device(params.device())
}

/// `torch._standard_gamma(alpha)`: Gamma(alpha, 1) samples (Marsaglia-Tsang, `rand_distr`),
/// clamped below to the dtype's smallest normal number as PyTorch does so that ratios of
/// them (Beta, Dirichlet) stay finite; NaN for a negative or NaN `alpha`.
pub fn standard_gamma(alpha: &Tensor, gen: Option<&Generator>) -> Result<Tensor> {
    require_float(alpha.dtype(), "_standard_gamma")?;
    let tiny = match alpha.dtype() {
        DType::F64 => f64::MIN_POSITIVE,
        DType::F16 => 6.103_515_625e-5,
        _ => f32::MIN_POSITIVE as f64,
    };
    sample_per_element(alpha, gen, |a, rng| {
        if a.is_nan() || a < 0.0 {
            return f64::NAN;
        }
        match rand_distr::Gamma::new(a, 1.0) {
            Ok(d) if a > 0.0 => d.sample(rng).max(tiny),
            _ => tiny,
        }
    })
}

/// `torch.poisson(rates)`: Poisson counts (as floats of `rates`' dtype) with the given rates.
pub fn poisson(rates: &Tensor, gen: Option<&Generator>) -> Result<Tensor> {
    require_float(rates.dtype(), "poisson")?;
    let host = crate::no_grad(|| rates.to_device(Device::Cpu))?;
    if host
        .to_dtype(DType::F64)
        .to_vec::<f64>()?
        .iter()
        .any(|&r| r.is_nan() || r < 0.0)
    {
        return Err(Error::Runtime(
            "invalid Poisson rate, expected rate to be non-negative".into(),
        ));
    }
    sample_per_element(rates, gen, |r, rng| match rand_distr::Poisson::new(r) {
        Ok(d) => d.sample(rng),
        Err(_) => 0.0, // rate 0
    })
}

/// `torch.multinomial(input, num_samples, replacement)`: category indices drawn from the
/// (unnormalised) weights in each row of `input` (1-D or 2-D). Without replacement each
/// category is drawn at most once.
pub fn multinomial(
    input: &Tensor,
    num_samples: i64,
    replacement: bool,
    gen: Option<&Generator>,
) -> Result<Tensor> {
    if !input.dtype().is_floating_point() {
        return Err(Error::Runtime(format!(
            "multinomial only supports floating-point dtypes for input, got: {}",
            input.dtype().torch_name()
        )));
    }
    if input.ndim() == 0 || input.ndim() > 2 {
        return Err(Error::Runtime(format!(
            "prob_dist must be 1 or 2 dim, got {}",
            input.ndim()
        )));
    }
    if num_samples <= 0 {
        return Err(Error::Runtime("cannot sample n_sample <= 0 samples".into()));
    }
    let k = input.shape()[input.ndim() - 1];
    let n = num_samples as usize;
    if !replacement && n > k {
        return Err(Error::Runtime(
            "cannot sample n_sample > prob_dist.size(-1) samples without replacement".into(),
        ));
    }
    let rows = if input.ndim() == 2 {
        input.shape()[0]
    } else {
        1
    };
    let w = input.to_dtype(DType::F64).to_vec::<f64>()?;
    if w.iter().any(|&x| !x.is_finite() || x < 0.0) {
        return Err(Error::Runtime(
            "probability tensor contains either `inf`, `nan` or element < 0".into(),
        ));
    }
    for r in 0..rows {
        let row = &w[r * k..(r + 1) * k];
        if row.iter().sum::<f64>() <= 0.0 {
            return Err(Error::Runtime(
                "invalid multinomial distribution (sum of probabilities <= 0)".into(),
            ));
        }
        if !replacement && row.iter().filter(|&&x| x > 0.0).count() < n {
            return Err(Error::Runtime(
                "invalid multinomial distribution (with replacement=False, not enough non-negative category to sample)".into(),
            ));
        }
    }
    checked_shape(&[rows as i64, num_samples])?;
    let key = key_of(gen);
    let mut out: Vec<i64> = try_filled(rows * n, 0i64)?;
    let sample_row = |(r, o): (usize, &mut [i64])| {
        let row = &w[r * k..(r + 1) * k];
        let mut rng = key.rng(r as u64);
        if replacement {
            let mut cum = Vec::with_capacity(k);
            let mut acc = 0.0;
            for &x in row {
                acc += x;
                cum.push(acc);
            }
            let last_positive = row.iter().rposition(|&x| x > 0.0).unwrap_or(0);
            for o in o.iter_mut() {
                let x = unit(&mut rng, 53) * acc;
                // First category whose cumulative weight exceeds x (never a zero weight).
                let i = cum.partition_point(|&c| c <= x);
                *o = i.min(last_positive) as i64;
            }
        } else {
            // Exponential races: the n smallest of E_i / w_i are a draw without replacement.
            let mut keys: Vec<(f64, usize)> = row
                .iter()
                .enumerate()
                .filter(|(_, &x)| x > 0.0)
                .map(|(i, &x)| {
                    let e: f64 = Exp1.sample(&mut rng);
                    (e / x, i)
                })
                .collect();
            keys.sort_by(|a, b| a.0.total_cmp(&b.0));
            for (o, &(_, i)) in o.iter_mut().zip(&keys) {
                *o = i as i64;
            }
        }
    };
    if rows > 1 && rows * n >= RNG_CHUNK {
        out.par_chunks_mut(n).enumerate().for_each(sample_row);
    } else {
        out.chunks_mut(n).enumerate().for_each(sample_row);
    }
    let shape: Vec<usize> = if input.ndim() == 2 {
        vec![rows, n]
    } else {
        vec![n]
    };
    Ok(Tensor::from_vec_unchecked(out, &shape))
}

// ----------------------------------------------------------------------------- in place

impl Tensor {
    /// Overwrite every element with `f(rng)` converted from f64 (in row-major order).
    fn fill_random_f64(
        &self,
        key: Key,
        f: impl Fn(&mut StdRng) -> f64 + Sync + Send,
    ) -> Result<()> {
        let src = sample_f64(&shape_i64(self), self.dtype(), key, f)?;
        self.copy_(&src)
    }

    /// Overwrite this CUDA tensor with samples of `dist` drawn on its device.
    fn fill_cuda(&self, dist: Dist, gen: Option<&Generator>) -> Result<()> {
        let Device::Cuda(n) = self.device() else {
            return Err(Error::Runtime("fill_cuda: expected a CUDA tensor".into()));
        };
        // Floats are drawn in their own dtype; Bernoulli draws 0/1 in any dtype.
        let src = sample_cuda(n, &shape_i64(self), self.dtype(), dist, gen)?;
        self.copy_(&src)
    }

    /// `bernoulli_(p)` on a CUDA tensor: probabilities checked on the host, draws on the GPU.
    fn bernoulli_tensor_cuda_(&self, p: &Tensor, gen: Option<&Generator>) -> Result<()> {
        let p = if p.device() == self.device() {
            p.clone()
        } else {
            p.to_device(self.device())?.detach()
        };
        let pl = p.layout().broadcast_to("bernoulli_", self.shape())?;
        let probs = p.with_layout(pl);
        if probs.numel() > 0 {
            let lo = probs.min_all_raw()?.item()?.to_f64();
            let hi = probs.max_all_raw()?.item()?.to_f64();
            if !(0.0..=1.0).contains(&lo) || !(0.0..=1.0).contains(&hi) {
                return Err(Error::Runtime(
                    "Expected p_in >= 0 && p_in <= 1 to be true, but got false.".into(),
                ));
            }
        }
        let k = key_of(gen);
        let bits = cuda_random::bernoulli_tensor(&probs, k.seed, k.offset)?;
        self.copy_(&bits)
    }

    /// `uniform_(from, to)`: uniform samples on `[from, to)`.
    pub fn uniform_(&self, from: f64, to: f64, gen: Option<&Generator>) -> Result<()> {
        require_float(self.dtype(), "check_uniform_bounds")?;
        if from > to {
            return Err(Error::Runtime(format!(
                "uniform_ expects to return a [from, to) range, but found from={from} > to={to}"
            )));
        }
        if !(to - from).is_finite() {
            return Err(Error::Runtime(format!(
                "uniform_ expects to-from <= std::numeric_limits<{}>::max(), but found to={to} and from={from} which result in to-from to exceed the limit",
                self.dtype().python_name()
            )));
        }
        if self.device().is_cuda() {
            let dist = Dist::Uniform {
                low: from,
                high: to,
            };
            return self.fill_cuda(dist, gen);
        }
        let bits = digits(self.dtype());
        self.fill_random_f64(key_of(gen), move |r| from + (to - from) * unit(r, bits))
    }

    /// `normal_(mean, std)`.
    pub fn normal_(&self, mean: f64, std: f64, gen: Option<&Generator>) -> Result<()> {
        require_float(self.dtype(), "normal_kernel_cpu")?;
        check_std(std)?;
        if self.device().is_cuda() {
            return self.fill_cuda(Dist::Normal { mean, std }, gen);
        }
        self.fill_random_f64(key_of(gen), move |r| {
            let z: f64 = StandardNormal.sample(r);
            mean + std * z
        })
    }

    /// `log_normal_(mean, std)`: `exp(N(mean, std))`.
    pub fn log_normal_(&self, mean: f64, std: f64, gen: Option<&Generator>) -> Result<()> {
        require_float(self.dtype(), "log_normal_cpu")?;
        if std.is_nan() || std <= 0.0 {
            return Err(Error::Runtime(format!(
                "log_normal_ expects std > 0.0, but found std={std}"
            )));
        }
        if let Device::Cuda(n) = self.device() {
            let z = sample_cuda(
                n,
                &shape_i64(self),
                self.dtype(),
                Dist::Normal { mean, std },
                gen,
            )?;
            return self.copy_(&z.unary(UnaryOp::Exp)?);
        }
        self.fill_random_f64(key_of(gen), move |r| {
            let z: f64 = StandardNormal.sample(r);
            (mean + std * z).exp()
        })
    }

    /// `exponential_(lambd)`: samples of density `lambd * exp(-lambd x)`.
    pub fn exponential_(&self, lambd: f64, gen: Option<&Generator>) -> Result<()> {
        require_float(self.dtype(), "exponential_cpu")?;
        if lambd.is_nan() || lambd <= 0.0 {
            return Err(Error::Runtime(format!(
                "exponential_ expects lambda > 0.0, but found lambda={lambd}"
            )));
        }
        if let Device::Cuda(n) = self.device() {
            // -log(1 - u) / lambd with u uniform on [0, 1): 1 - u lies in (0, 1].
            let dist = Dist::Uniform {
                low: 0.0,
                high: 1.0,
            };
            let u = sample_cuda(n, &shape_i64(self), self.dtype(), dist, gen)?;
            let e = u
                .binary_scalar(Scalar::Float(-1.0), BinaryOp::Mul, false)?
                .unary(UnaryOp::Log1p)?
                .binary_scalar(Scalar::Float(-1.0 / lambd), BinaryOp::Mul, false)?;
            return self.copy_(&e);
        }
        self.fill_random_f64(key_of(gen), move |r| {
            let e: f64 = Exp1.sample(r);
            e / lambd
        })
    }

    /// `cauchy_(median, sigma)`.
    pub fn cauchy_(&self, median: f64, sigma: f64, gen: Option<&Generator>) -> Result<()> {
        require_float(self.dtype(), "cauchy_cpu")?;
        if sigma.is_nan() || sigma <= 0.0 {
            return Err(Error::Runtime(format!(
                "cauchy_ expects sigma > 0.0, but found sigma={sigma}"
            )));
        }
        self.fill_random_f64(key_of(gen), move |r| {
            median + sigma * (std::f64::consts::PI * (unit(r, 53) - 0.5)).tan()
        })
    }

    /// `geometric_(p)`: the number of Bernoulli(p) trials up to the first success.
    pub fn geometric_(&self, p: f64, gen: Option<&Generator>) -> Result<()> {
        if !(p > 0.0 && p < 1.0) {
            return Err(Error::Runtime(format!(
                "geometric_ expects p to be in (0, 1), but got p={p}"
            )));
        }
        self.fill_random_f64(key_of(gen), move |r| {
            let u = 1.0 - unit(r, 53); // (0, 1]
            (u.ln() / (-p).ln_1p()).ceil().max(1.0)
        })
    }

    /// `bernoulli_(p)` with a scalar probability.
    pub fn bernoulli_scalar_(&self, p: f64, gen: Option<&Generator>) -> Result<()> {
        if !(0.0..=1.0).contains(&p) {
            return Err(Error::Runtime(format!(
                "bernoulli_ expects p to be in [0, 1], but got p={p}"
            )));
        }
        if self.device().is_cuda() {
            return self.fill_cuda(Dist::Bernoulli { p }, gen);
        }
        self.fill_random_f64(key_of(gen), move |r| (unit(r, 53) < p) as i64 as f64)
    }

    /// `bernoulli_(p)` with a tensor of probabilities broadcastable to `self`.
    pub fn bernoulli_tensor_(&self, p: &Tensor, gen: Option<&Generator>) -> Result<()> {
        if self.device().is_cuda() {
            return self.bernoulli_tensor_cuda_(p, gen);
        }
        let pl = p.layout().broadcast_to("bernoulli_", self.shape())?;
        let probs = p.with_layout(pl).to_dtype(DType::F64).contiguous();
        let probs = probs.to_vec::<f64>()?;
        if probs.iter().any(|&x| !(0.0..=1.0).contains(&x)) {
            return Err(Error::Runtime(
                "Expected p_in >= 0 && p_in <= 1 to be true, but got false.".into(),
            ));
        }
        let key = key_of(gen);
        let n = probs.len();
        let mut bits: Vec<bool> = try_filled(n, false)?;
        let fill = |(c, chunk): (usize, &mut [bool])| {
            let mut rng = key.rng(c as u64);
            let base = c * RNG_CHUNK;
            for (i, o) in chunk.iter_mut().enumerate() {
                *o = unit(&mut rng, 53) < probs[base + i];
            }
        };
        if n >= 2 * RNG_CHUNK {
            bits.par_chunks_mut(RNG_CHUNK).enumerate().for_each(fill);
        } else {
            bits.chunks_mut(RNG_CHUNK).enumerate().for_each(fill);
        }
        self.copy_(&Tensor::from_vec_unchecked(bits, self.shape()))
    }

    /// `random_(from, to)`: uniform integers on `[from, to)`; `to = None` means the
    /// largest value of the dtype (`2^mantissa` for floats).
    pub fn random_(&self, from: i64, to: Option<i64>, gen: Option<&Generator>) -> Result<()> {
        let dt = self.dtype();
        let from = from as i128;
        let to = match to {
            Some(t) => t as i128,
            None => default_random_to(dt),
        };
        check_int_range("random_", from, to, dt)?;
        let key = key_of(gen);
        let dims: Vec<usize> = self.shape().to_vec();
        let n = self.numel();
        let src = with_dtype!(dt, T, {
            let v = if dt.category() == Category::Float {
                sample_vec(n, key, |r| T::from_f64(int_in(r, from, to) as f64))?
            } else {
                sample_vec(n, key, |r| T::from_i64(int_in(r, from, to) as i64))?
            };
            Tensor::from_vec_unchecked(v, &dims)
        });
        self.copy_(&src)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_numbers() {
        let g = Generator::new(7);
        let a = rand(&[100_000], DType::F32, Some(&g)).unwrap();
        let b = rand(&[5], DType::F32, Some(&g)).unwrap();
        g.manual_seed(7);
        assert_eq!(
            a.to_vec::<f32>().unwrap(),
            rand(&[100_000], DType::F32, Some(&g))
                .unwrap()
                .to_vec::<f32>()
                .unwrap()
        );
        let state = g.get_state();
        let c = randn(&[3], DType::F64, Some(&g)).unwrap();
        g.set_state(&state).unwrap();
        let d = randn(&[3], DType::F64, Some(&g)).unwrap();
        assert_eq!(c.to_vec::<f64>().unwrap(), d.to_vec::<f64>().unwrap());
        assert_ne!(
            b.to_vec::<f32>().unwrap(),
            rand(&[5], DType::F32, Some(&Generator::new(8)))
                .unwrap()
                .to_vec::<f32>()
                .unwrap()
        );
    }

    #[test]
    fn ranges_hold() {
        let g = Generator::new(1);
        let u = rand(&[10_000], DType::F16, Some(&g)).unwrap().to_f64_vec();
        assert!(u.iter().all(|&x| (0.0..1.0).contains(&x)));
        let r = randint(-3, 4, &[10_000], DType::I8, Some(&g))
            .unwrap()
            .to_f64_vec();
        assert!(r.iter().all(|&x| (-3.0..4.0).contains(&x)));
        let p = randperm(50, DType::I64, Some(&g)).unwrap();
        let mut v = p.to_vec::<i64>().unwrap();
        v.sort();
        assert_eq!(v, (0..50).collect::<Vec<_>>());
    }
}
