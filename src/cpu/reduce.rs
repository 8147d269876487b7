//! Reduction, scan and softmax kernels.
//!
//! A reduction splits the input's dims into *kept* dims (the output's) and *reduced* dims and
//! coalesces each group on its own. Then one of two loop orders runs, neither of which copies
//! or transposes the input:
//! - **rows**: every output folds its own reduced elements. When the innermost reduced dim has
//!   stride 1 (full reductions of contiguous tensors, reductions over the last dim) these are
//!   contiguous runs folded with several independent accumulator lanes so LLVM vectorizes them.
//!   Parallel over outputs, or over chunks of the reduced range when there are few outputs.
//! - **columns**: when the innermost *kept* dim has stride 1 but the reduced one does not (a sum
//!   over dim 0 of a contiguous matrix), a row vector of accumulators is updated with whole input
//!   rows, `acc[j] = step(acc[j], x[i, j])`, which also vectorizes. Parallel over tiles of the
//!   output row, and over chunks of the reduced range when there are few tiles.
//!
//! Reductions are described by a [`Reducer`]; scans (cumsum, cummax...) by a [`Scanner`].

use crate::cpu::alloc::output_vec_for_overwrite;
use crate::cpu::simd::with_avx2;
use crate::cpu::strided::{chunk_len, coalesce, Coalesced, PAR_THRESHOLD};
use crate::cpu::vmath::{exp_f32, exp_f32_with};
use crate::layout::{Dims, Layout};
use crate::{DType, Element, FloatElement};
use half::{bf16, f16};
use rayon::prelude::*;

/// A raw pointer that parallel tasks use to write *disjoint* elements of one output buffer.
#[derive(Clone, Copy)]
pub(crate) struct SyncPtr<T>(pub *mut T);
// SAFETY: a `SyncPtr` is only dereferenced at indices that exactly one task writes (each use
// documents why), and the buffer outlives the parallel loop that uses it.
unsafe impl<T: Send> Send for SyncPtr<T> {}
// SAFETY: see above.
unsafe impl<T: Send> Sync for SyncPtr<T> {}

impl<T> SyncPtr<T> {
    /// # Safety
    /// `i` must be in bounds of the buffer and written by no other task concurrently.
    #[inline(always)]
    pub(crate) unsafe fn write(self, i: usize, v: T) {
        // SAFETY: guaranteed by the caller.
        unsafe { self.0.add(i).write(v) }
    }
    /// # Safety
    /// `start..start + len` must be in bounds and touched by no other task concurrently.
    #[inline(always)]
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn slice<'a>(self, start: usize, len: usize) -> &'a mut [T] {
        // SAFETY: guaranteed by the caller.
        unsafe { std::slice::from_raw_parts_mut(self.0.add(start), len) }
    }
}

/// Element types with a smallest and largest value (the identities of max and min). NaN is
/// detected generically with `x != x`, which is constant-false for integers.
pub trait Bounded: Element {
    const LOWEST: Self;
    const HIGHEST: Self;
}

macro_rules! impl_bounded {
    ($($t:ty => $lo:expr, $hi:expr;)*) => {
        $(impl Bounded for $t {
            const LOWEST: Self = $lo;
            const HIGHEST: Self = $hi;
        })*
    };
}
impl_bounded! {
    bool => false, true;
    u8 => u8::MIN, u8::MAX;
    i8 => i8::MIN, i8::MAX;
    i16 => i16::MIN, i16::MAX;
    i32 => i32::MIN, i32::MAX;
    i64 => i64::MIN, i64::MAX;
    f16 => f16::NEG_INFINITY, f16::INFINITY;
    bf16 => bf16::NEG_INFINITY, bf16::INFINITY;
    f32 => f32::NEG_INFINITY, f32::INFINITY;
    f64 => f64::NEG_INFINITY, f64::INFINITY;
}

/// `x` is NaN (always false for non-float types).
#[inline(always)]
#[allow(clippy::eq_op)]
pub fn is_nan<T: PartialOrd>(x: T) -> bool {
    x != x
}

/// `a` comes after `b` for max-like ops: greater, or NaN where `b` is not (NaN is the largest).
#[inline(always)]
pub fn gt_nan<T: PartialOrd + Copy>(a: T, b: T) -> bool {
    a > b || (is_nan(a) && !is_nan(b))
}

/// `a` comes before `b` for min-like ops, with NaN winning like in `torch.min`.
#[inline(always)]
pub fn lt_nan<T: PartialOrd + Copy>(a: T, b: T) -> bool {
    a < b || (is_nan(a) && !is_nan(b))
}

// ------------------------------------------------------------------------------- reducers

/// A reduction: fold elements into an accumulator, merge partial accumulators of adjacent
/// ranges (earlier first), turn the final one into an output value.
pub trait Reducer<T: Copy>: Sync {
    type Acc: Copy + Send + Sync;
    type Out: Copy + Send + Sync + Default;
    fn init(&self) -> Self::Acc;
    /// Fold element `x`, the `i`-th of the reduced elements (row-major order).
    fn step(&self, acc: Self::Acc, x: T, i: usize) -> Self::Acc;
    /// Merge the result over a range `a` with the result over the range right after it.
    fn merge(&self, a: Self::Acc, b: Self::Acc) -> Self::Acc;
    /// The output for an accumulator over `n` elements.
    fn finish(&self, acc: Self::Acc, n: usize) -> Self::Out;
    /// Fold a contiguous run whose first element is the `i0`-th. Override with a lane-parallel
    /// version where the reduction is commutative.
    #[inline(always)]
    fn fold_slice(&self, acc: Self::Acc, xs: &[T], i0: usize) -> Self::Acc {
        let mut a = acc;
        for (k, &x) in xs.iter().enumerate() {
            a = self.step(a, x, i0 + k);
        }
        a
    }
}

/// Fold `xs` with `L` independent accumulators (a power of two), combined pairwise at the end.
/// Independent lanes let LLVM keep them in SIMD registers without reassociating anything.
#[inline(always)]
pub fn lanes_fold<T: Copy, A: Copy, const L: usize>(
    xs: &[T],
    init: A,
    step: impl Fn(A, T) -> A,
    merge: impl Fn(A, A) -> A,
) -> A {
    let mut lanes = [init; L];
    let mut chunks = xs.chunks_exact(L);
    for c in &mut chunks {
        for k in 0..L {
            lanes[k] = step(lanes[k], c[k]);
        }
    }
    // The pairwise merge lives in its own function behind `black_box`: when LLVM sees it next
    // to the main loop, its SLP vectorizer pairs lanes for the tree and then runs the whole
    // loop two lanes at a time (measured: f32 sums 2.5x and maxima 3-5x slower than full
    // vectors). Same arithmetic, same bits. `black_box` gets a copy: given `lanes` itself, the
    // array escapes and LLVM stores every lane to the stack on each pass of the main loop
    // (measured: f32 sum of 100k values 15 us instead of 5 us).
    let snapshot = lanes;
    let mut a = merge_lanes(std::hint::black_box(&snapshot), &merge);
    for &x in chunks.remainder() {
        a = step(a, x);
    }
    a
}

#[inline(never)]
fn merge_lanes<A: Copy, const L: usize>(lanes: &[A; L], merge: &impl Fn(A, A) -> A) -> A {
    let mut lanes = *lanes;
    let mut w = L;
    while w > 1 {
        w /= 2;
        for k in 0..w {
            lanes[k] = merge(lanes[k], lanes[k + w]);
        }
    }
    lanes[0]
}

/// Block length for float sums: within a block, lanes accumulate in the input precision;
/// block totals are added in f64. Each lane sums at most `SUM_BLOCK / lanes` values.
const SUM_BLOCK: usize = 4096;

/// Far-apart pieces of a long sum are read in one loop: several independent memory streams
/// per thread keep more loads in flight than one sequential walk (PyTorch's cascade sum reads
/// several rows at once for the same reason). Measured, 10M f32 on 2 threads: 880 -> 600 us.
const SUM_STREAMS: usize = 4;

/// Sum of `xs` in blocks of `SUM_BLOCK`: `L` lanes in the input precision inside a block,
/// block totals added in f64. The first `SUM_STREAMS * span` elements are read as
/// `SUM_STREAMS` interleaved streams (`span` elements each, whole blocks), the rest block by
/// block. The order of the additions depends only on `xs.len()`.
#[inline(always)]
fn blocked_sum<T, const L: usize>(xs: &[T]) -> f64
where
    T: Copy + Default + std::ops::Add<Output = T> + Into<f64>,
{
    const S: usize = SUM_STREAMS;
    let span = xs.len() / (S * SUM_BLOCK) * SUM_BLOCK;
    let mut total = 0.0f64;
    for off in (0..span).step_by(SUM_BLOCK) {
        let blocks: [&[T]; S] =
            std::array::from_fn(|s| &xs[s * span + off..s * span + off + SUM_BLOCK]);
        let mut lanes = [[T::default(); L]; S];
        for j in (0..SUM_BLOCK).step_by(L) {
            for s in 0..S {
                let v: &[T; L] = blocks[s][j..j + L].try_into().expect("L divides SUM_BLOCK");
                for k in 0..L {
                    lanes[s][k] = lanes[s][k] + v[k];
                }
            }
        }
        for lane in &lanes {
            // A copy behind black_box, as in `lanes_fold`: the lanes stay in registers.
            let snapshot = *lane;
            total += merge_lanes(std::hint::black_box(&snapshot), &|a: T, b: T| a + b).into();
        }
    }
    for blk in xs[S * span..].chunks(SUM_BLOCK) {
        total += lanes_fold::<T, T, L>(blk, T::default(), |a, x| a + x, |a, b| a + b).into();
    }
    total
}

/// Sum of f32 values: f32 lanes inside blocks, f64 across blocks (and in the column loop).
pub struct SumF32;
impl Reducer<f32> for SumF32 {
    type Acc = f64;
    type Out = f64;
    #[inline(always)]
    fn init(&self) -> f64 {
        0.0
    }
    #[inline(always)]
    fn step(&self, a: f64, x: f32, _: usize) -> f64 {
        a + x as f64
    }
    #[inline(always)]
    fn merge(&self, a: f64, b: f64) -> f64 {
        a + b
    }
    #[inline(always)]
    fn finish(&self, a: f64, _: usize) -> f64 {
        a
    }
    #[inline(always)]
    fn fold_slice(&self, acc: f64, xs: &[f32], _: usize) -> f64 {
        acc + blocked_sum::<f32, 16>(xs)
    }
}

/// Sum of f64 values with blocked lanes.
pub struct SumF64;
impl Reducer<f64> for SumF64 {
    type Acc = f64;
    type Out = f64;
    #[inline(always)]
    fn init(&self) -> f64 {
        0.0
    }
    #[inline(always)]
    fn step(&self, a: f64, x: f64, _: usize) -> f64 {
        a + x
    }
    #[inline(always)]
    fn merge(&self, a: f64, b: f64) -> f64 {
        a + b
    }
    #[inline(always)]
    fn finish(&self, a: f64, _: usize) -> f64 {
        a
    }
    #[inline(always)]
    fn fold_slice(&self, acc: f64, xs: &[f64], _: usize) -> f64 {
        acc + blocked_sum::<f64, 8>(xs)
    }
}

/// Sum of integers or bools into a wrapping i64 (PyTorch's int64 result).
pub struct SumInt;
impl<T: Element> Reducer<T> for SumInt {
    type Acc = i64;
    type Out = i64;
    #[inline(always)]
    fn init(&self) -> i64 {
        0
    }
    #[inline(always)]
    fn step(&self, a: i64, x: T, _: usize) -> i64 {
        a.wrapping_add(x.to_i64())
    }
    #[inline(always)]
    fn merge(&self, a: i64, b: i64) -> i64 {
        a.wrapping_add(b)
    }
    #[inline(always)]
    fn finish(&self, a: i64, _: usize) -> i64 {
        a
    }
    #[inline(always)]
    fn fold_slice(&self, acc: i64, xs: &[T], _: usize) -> i64 {
        acc.wrapping_add(lanes_fold::<T, i64, 16>(
            xs,
            0,
            |a, x| a.wrapping_add(x.to_i64()),
            |a, b| a.wrapping_add(b),
        ))
    }
}

/// Product of floats, accumulated in f64.
pub struct ProdFloat;
impl<T: Element> Reducer<T> for ProdFloat {
    type Acc = f64;
    type Out = f64;
    #[inline(always)]
    fn init(&self) -> f64 {
        1.0
    }
    #[inline(always)]
    fn step(&self, a: f64, x: T, _: usize) -> f64 {
        a * x.to_f64()
    }
    #[inline(always)]
    fn merge(&self, a: f64, b: f64) -> f64 {
        a * b
    }
    #[inline(always)]
    fn finish(&self, a: f64, _: usize) -> f64 {
        a
    }
    #[inline(always)]
    fn fold_slice(&self, acc: f64, xs: &[T], _: usize) -> f64 {
        acc * lanes_fold::<T, f64, 8>(xs, 1.0, |a, x| a * x.to_f64(), |a, b| a * b)
    }
}

/// Product of integers or bools into a wrapping i64.
pub struct ProdInt;
impl<T: Element> Reducer<T> for ProdInt {
    type Acc = i64;
    type Out = i64;
    #[inline(always)]
    fn init(&self) -> i64 {
        1
    }
    #[inline(always)]
    fn step(&self, a: i64, x: T, _: usize) -> i64 {
        a.wrapping_mul(x.to_i64())
    }
    #[inline(always)]
    fn merge(&self, a: i64, b: i64) -> i64 {
        a.wrapping_mul(b)
    }
    #[inline(always)]
    fn finish(&self, a: i64, _: usize) -> i64 {
        a
    }
}

/// Sum skipping NaNs (floats), in f64.
pub struct NanSum;
impl<T: Element> Reducer<T> for NanSum {
    type Acc = f64;
    type Out = f64;
    #[inline(always)]
    fn init(&self) -> f64 {
        0.0
    }
    #[inline(always)]
    fn step(&self, a: f64, x: T, _: usize) -> f64 {
        let v = x.to_f64();
        if is_nan(v) {
            a
        } else {
            a + v
        }
    }
    #[inline(always)]
    fn merge(&self, a: f64, b: f64) -> f64 {
        a + b
    }
    #[inline(always)]
    fn finish(&self, a: f64, _: usize) -> f64 {
        a
    }
    #[inline(always)]
    fn fold_slice(&self, acc: f64, xs: &[T], _: usize) -> f64 {
        acc + lanes_fold::<T, f64, 8>(
            xs,
            0.0,
            |a, x| {
                let v = x.to_f64();
                if is_nan(v) {
                    a
                } else {
                    a + v
                }
            },
            |a, b| a + b,
        )
    }
}

/// Mean of the non-NaN elements (NaN when there are none).
pub struct NanMean;
impl<T: Element> Reducer<T> for NanMean {
    type Acc = (f64, u64);
    type Out = f64;
    #[inline(always)]
    fn init(&self) -> (f64, u64) {
        (0.0, 0)
    }
    #[inline(always)]
    fn step(&self, a: (f64, u64), x: T, _: usize) -> (f64, u64) {
        let v = x.to_f64();
        if is_nan(v) {
            a
        } else {
            (a.0 + v, a.1 + 1)
        }
    }
    #[inline(always)]
    fn merge(&self, a: (f64, u64), b: (f64, u64)) -> (f64, u64) {
        (a.0 + b.0, a.1 + b.1)
    }
    #[inline(always)]
    fn finish(&self, a: (f64, u64), _: usize) -> f64 {
        a.0 / a.1 as f64
    }
}

/// Max (`MAX = true`) or min of the elements; NaN propagates.
pub struct Extremum<const MAX: bool>;
impl<T: Bounded, const MAX: bool> Reducer<T> for Extremum<MAX> {
    type Acc = T;
    type Out = T;
    #[inline(always)]
    fn init(&self) -> T {
        if MAX {
            T::LOWEST
        } else {
            T::HIGHEST
        }
    }
    #[inline(always)]
    fn step(&self, a: T, x: T, _: usize) -> T {
        if MAX {
            // `|` (not `||`): both sides are cheap, and a select vectorizes better.
            if (x > a) | is_nan(x) {
                x
            } else {
                a
            }
        } else if (x < a) | is_nan(x) {
            x
        } else {
            a
        }
    }
    #[inline(always)]
    fn merge(&self, a: T, b: T) -> T {
        <Self as Reducer<T>>::step(self, a, b, 0)
    }
    #[inline(always)]
    fn finish(&self, a: T, _: usize) -> T {
        a
    }
    #[inline(always)]
    fn fold_slice(&self, acc: T, xs: &[T], _: usize) -> T {
        let f = |a: T, x: T| <Self as Reducer<T>>::step(self, a, x, 0);
        f(acc, lanes_fold::<T, T, 16>(xs, self.init(), f, f))
    }
}

/// Min and max together (`aminmax`).
pub struct MinMax;
impl<T: Bounded> Reducer<T> for MinMax {
    type Acc = (T, T);
    type Out = (T, T);
    #[inline(always)]
    fn init(&self) -> (T, T) {
        (T::HIGHEST, T::LOWEST)
    }
    #[inline(always)]
    fn step(&self, a: (T, T), x: T, i: usize) -> (T, T) {
        (
            Reducer::<T>::step(&Extremum::<false>, a.0, x, i),
            Reducer::<T>::step(&Extremum::<true>, a.1, x, i),
        )
    }
    #[inline(always)]
    fn merge(&self, a: (T, T), b: (T, T)) -> (T, T) {
        (
            Reducer::<T>::merge(&Extremum::<false>, a.0, b.0),
            Reducer::<T>::merge(&Extremum::<true>, a.1, b.1),
        )
    }
    #[inline(always)]
    fn finish(&self, a: (T, T), _: usize) -> (T, T) {
        a
    }
    #[inline(always)]
    fn fold_slice(&self, acc: (T, T), xs: &[T], i0: usize) -> (T, T) {
        (
            Extremum::<false>.fold_slice(acc.0, xs, i0),
            Extremum::<true>.fold_slice(acc.1, xs, i0),
        )
    }
}

/// Value and index of the max (`MAX = true`) or min: the first occurrence wins ties, and the
/// first NaN wins over everything (as in PyTorch).
pub struct ArgExtremum<const MAX: bool>;
#[inline(always)]
fn better<T: Bounded, const MAX: bool>(a: T, b: T) -> bool {
    if MAX {
        gt_nan(a, b)
    } else {
        lt_nan(a, b)
    }
}
impl<T: Bounded, const MAX: bool> Reducer<T> for ArgExtremum<MAX> {
    /// (value, index); index -1 means "nothing seen yet".
    type Acc = (T, i64);
    type Out = (T, i64);
    #[inline(always)]
    fn init(&self) -> (T, i64) {
        (T::default(), -1)
    }
    #[inline(always)]
    fn step(&self, a: (T, i64), x: T, i: usize) -> (T, i64) {
        if a.1 < 0 || better::<T, MAX>(x, a.0) {
            (x, i as i64)
        } else {
            a
        }
    }
    #[inline(always)]
    fn merge(&self, a: (T, i64), b: (T, i64)) -> (T, i64) {
        if a.1 < 0 || (b.1 >= 0 && better::<T, MAX>(b.0, a.0)) {
            b
        } else {
            a
        }
    }
    #[inline(always)]
    fn finish(&self, a: (T, i64), _: usize) -> (T, i64) {
        (a.0, a.1.max(0))
    }
    /// Blocks: a vectorized (NaN-propagating) max of each block, and a search for the first
    /// position of that value only in blocks that beat the best so far. Same result as the
    /// element-by-element fold, at close to the cost of `amax`.
    #[inline(always)]
    fn fold_slice(&self, acc: (T, i64), xs: &[T], i0: usize) -> (T, i64) {
        const BLOCK: usize = 1024;
        let mut best = acc;
        for (b, blk) in xs.chunks(BLOCK).enumerate() {
            let m = Extremum::<MAX>.fold_slice(Reducer::<T>::init(&Extremum::<MAX>), blk, 0);
            if best.1 < 0 || better::<T, MAX>(m, best.0) {
                let pos = if is_nan(m) {
                    blk.iter().position(|&x| is_nan(x))
                } else {
                    blk.iter().position(|&x| x == m)
                };
                best = (m, (i0 + b * BLOCK + pos.unwrap_or(0)) as i64);
            }
        }
        best
    }
}

/// Welford/Chan accumulator for variance: count, mean, sum of squared deviations.
#[derive(Clone, Copy, Default, Debug)]
pub struct Moments {
    pub n: f64,
    pub mean: f64,
    pub m2: f64,
}

impl Moments {
    #[inline(always)]
    fn merge(a: Moments, b: Moments) -> Moments {
        if a.n == 0.0 {
            return b;
        }
        if b.n == 0.0 {
            return a;
        }
        let n = a.n + b.n;
        let d = b.mean - a.mean;
        Moments {
            n,
            mean: a.mean + d * (b.n / n),
            m2: a.m2 + b.m2 + d * d * (a.n * b.n / n),
        }
    }
}

/// Variance with `correction` (1 = unbiased). Output: (variance, mean).
pub struct Variance {
    pub correction: f64,
}
impl<T: Element> Reducer<T> for Variance {
    type Acc = Moments;
    type Out = (f64, f64);
    #[inline(always)]
    fn init(&self) -> Moments {
        Moments::default()
    }
    #[inline(always)]
    fn step(&self, a: Moments, x: T, _: usize) -> Moments {
        let x = x.to_f64();
        let n = a.n + 1.0;
        let d = x - a.mean;
        let mean = a.mean + d / n;
        Moments {
            n,
            mean,
            m2: a.m2 + d * (x - mean),
        }
    }
    #[inline(always)]
    fn merge(&self, a: Moments, b: Moments) -> Moments {
        Moments::merge(a, b)
    }
    #[inline(always)]
    fn finish(&self, a: Moments, _: usize) -> (f64, f64) {
        let mean = if a.n == 0.0 { f64::NAN } else { a.mean };
        let dof = (a.n - self.correction).max(0.0);
        (a.m2 / dof, mean)
    }
    /// Two passes over a contiguous run (exact mean first), then merged as one block.
    #[inline(always)]
    fn fold_slice(&self, acc: Moments, xs: &[T], _: usize) -> Moments {
        if xs.is_empty() {
            return acc;
        }
        let n = xs.len() as f64;
        let mean = lanes_fold::<T, f64, 8>(xs, 0.0, |a, x| a + x.to_f64(), |a, b| a + b) / n;
        let m2 = lanes_fold::<T, f64, 8>(
            xs,
            0.0,
            |a, x| {
                let d = x.to_f64() - mean;
                a + d * d
            },
            |a, b| a + b,
        );
        Moments::merge(acc, Moments { n, mean, m2 })
    }
}

/// Vector norms: `KIND` 0 = count of non-zeros, 1 = sum |x|, 2 = sqrt(sum x^2),
/// 3 = max |x|, 4 = min |x|, 5 = (sum |x|^p)^(1/p).
pub struct Norm<const KIND: u8> {
    pub p: f64,
}
impl<T: Element, const KIND: u8> Reducer<T> for Norm<KIND> {
    type Acc = f64;
    type Out = f64;
    #[inline(always)]
    fn init(&self) -> f64 {
        if KIND == 4 {
            f64::INFINITY
        } else {
            0.0
        }
    }
    #[inline(always)]
    fn step(&self, a: f64, x: T, _: usize) -> f64 {
        let v = x.to_f64();
        match KIND {
            0 => a + (v != 0.0) as u8 as f64,
            1 => a + v.abs(),
            2 => a + v * v,
            3 => {
                let v = v.abs();
                if v > a || is_nan(v) {
                    v
                } else {
                    a
                }
            }
            4 => {
                let v = v.abs();
                if v < a || is_nan(v) {
                    v
                } else {
                    a
                }
            }
            _ => a + v.abs().powf(self.p),
        }
    }
    #[inline(always)]
    fn merge(&self, a: f64, b: f64) -> f64 {
        match KIND {
            3 => {
                if b > a || is_nan(b) {
                    b
                } else {
                    a
                }
            }
            4 => {
                if b < a || is_nan(b) {
                    b
                } else {
                    a
                }
            }
            _ => a + b,
        }
    }
    #[inline(always)]
    fn finish(&self, a: f64, _: usize) -> f64 {
        match KIND {
            2 => a.sqrt(),
            5 => a.powf(1.0 / self.p),
            _ => a,
        }
    }
    #[inline(always)]
    fn fold_slice(&self, acc: f64, xs: &[T], _: usize) -> f64 {
        let f = |a, x| <Self as Reducer<T>>::step(self, a, x, 0);
        let m = |a, b| <Self as Reducer<T>>::merge(self, a, b);
        m(
            acc,
            lanes_fold::<T, f64, 8>(xs, <Self as Reducer<T>>::init(self), f, m),
        )
    }
}

/// `all` (`ALL = true`) or `any`: is every / some element non-zero.
pub struct AllAny<const ALL: bool>;
impl<T: Element, const ALL: bool> Reducer<T> for AllAny<ALL> {
    type Acc = bool;
    type Out = bool;
    #[inline(always)]
    fn init(&self) -> bool {
        ALL
    }
    #[inline(always)]
    fn step(&self, a: bool, x: T, _: usize) -> bool {
        if ALL {
            a && !x.is_zero()
        } else {
            a || !x.is_zero()
        }
    }
    #[inline(always)]
    fn merge(&self, a: bool, b: bool) -> bool {
        if ALL {
            a && b
        } else {
            a || b
        }
    }
    #[inline(always)]
    fn finish(&self, a: bool, _: usize) -> bool {
        a
    }
    #[inline(always)]
    fn fold_slice(&self, acc: bool, xs: &[T], _: usize) -> bool {
        if ALL {
            acc && xs.iter().all(|x| !x.is_zero())
        } else {
            acc || xs.iter().any(|x| !x.is_zero())
        }
    }
}

/// Number of non-zero elements.
pub struct CountNonzero;
impl<T: Element> Reducer<T> for CountNonzero {
    type Acc = i64;
    type Out = i64;
    #[inline(always)]
    fn init(&self) -> i64 {
        0
    }
    #[inline(always)]
    fn step(&self, a: i64, x: T, _: usize) -> i64 {
        a + (!x.is_zero()) as i64
    }
    #[inline(always)]
    fn merge(&self, a: i64, b: i64) -> i64 {
        a + b
    }
    #[inline(always)]
    fn finish(&self, a: i64, _: usize) -> i64 {
        a
    }
    #[inline(always)]
    fn fold_slice(&self, acc: i64, xs: &[T], _: usize) -> i64 {
        acc + lanes_fold::<T, i64, 16>(xs, 0, |a, x| a + (!x.is_zero()) as i64, |a, b| a + b)
    }
}

/// `log(sum(exp(x)))` in one pass: running max `m` and `s = sum(exp(x - m))`, rescaled when
/// the max grows. Infinite maxima are handled like PyTorch (all -inf -> -inf, any +inf -> inf).
pub struct LogSumExp;
impl LogSumExp {
    #[inline(always)]
    fn add(a: (f64, f64), m: f64, s: f64) -> (f64, f64) {
        // Combine (a.0, a.1) with a block of maximum m and scaled sum s.
        if is_nan(m) || is_nan(a.0) {
            return (f64::NAN, f64::NAN);
        }
        if m > a.0 {
            let scale = if a.0 == f64::NEG_INFINITY {
                0.0
            } else {
                (a.0 - m).exp()
            };
            (m, a.1 * scale + s)
        } else if m == a.0 {
            (m, a.1 + s)
        } else {
            let scale = if m == f64::NEG_INFINITY {
                0.0
            } else {
                (m - a.0).exp()
            };
            (a.0, a.1 + s * scale)
        }
    }
}
impl<T: Element> Reducer<T> for LogSumExp {
    type Acc = (f64, f64);
    type Out = f64;
    #[inline(always)]
    fn init(&self) -> (f64, f64) {
        (f64::NEG_INFINITY, 0.0)
    }
    #[inline(always)]
    fn step(&self, a: (f64, f64), x: T, _: usize) -> (f64, f64) {
        Self::add(a, x.to_f64(), 1.0)
    }
    #[inline(always)]
    fn merge(&self, a: (f64, f64), b: (f64, f64)) -> (f64, f64) {
        if b.1 == 0.0 && !is_nan(b.0) {
            return a;
        }
        Self::add(a, b.0, b.1)
    }
    #[inline(always)]
    fn finish(&self, a: (f64, f64), _: usize) -> f64 {
        if a.0.is_infinite() {
            return a.0;
        }
        a.0 + a.1.ln()
    }
    /// Two passes over a contiguous run: its max, then the sum of exp(x - max).
    #[inline(always)]
    fn fold_slice(&self, acc: (f64, f64), xs: &[T], _: usize) -> (f64, f64) {
        if xs.is_empty() {
            return acc;
        }
        let m = lanes_fold::<T, f64, 8>(
            xs,
            f64::NEG_INFINITY,
            |a, x| {
                let v = x.to_f64();
                if v > a || is_nan(v) {
                    v
                } else {
                    a
                }
            },
            |a, b| if b > a || is_nan(b) { b } else { a },
        );
        if is_nan(m) {
            return (f64::NAN, f64::NAN);
        }
        if m.is_infinite() {
            // All -inf (contributes nothing) or some +inf (the result is +inf).
            let cnt = xs.iter().filter(|x| x.to_f64() == m).count() as f64;
            return Self::add(acc, m, if m > 0.0 { cnt } else { 0.0 });
        }
        let s = if T::DTYPE == DType::F64 {
            lanes_fold::<T, f64, 8>(xs, 0.0, |a, x| a + (x.to_f64() - m).exp(), |a, b| a + b)
        } else {
            // f32 or narrower: the vectorizable f32 exp is exact enough, sums stay in f64.
            let e = |x: T| exp_f32((x.to_f64() - m) as f32) as f64;
            lanes_fold::<T, f64, 8>(xs, 0.0, |a, x| a + e(x), |a, b| a + b)
        };
        Self::add(acc, m, s)
    }
}

// ------------------------------------------------------------------------------- driver

/// How the reduced and kept dims of one input are walked.
struct Plan {
    kept: Coalesced<1>,
    red: Coalesced<1>,
    offset: usize,
    out_numel: usize,
    red_numel: usize,
}

impl Plan {
    fn new(layout: &Layout, reduce: &[bool]) -> Plan {
        let (mut ks, mut kst, mut rs, mut rst) =
            (Dims::new(), Dims::new(), Dims::new(), Dims::new());
        for ((&size, &stride), &r) in layout.shape.iter().zip(&layout.strides).zip(reduce) {
            if r {
                rs.push(size);
                rst.push(stride);
            } else {
                ks.push(size);
                kst.push(stride);
            }
        }
        Plan {
            kept: coalesce(&ks, [&kst]),
            red: coalesce(&rs, [&rst]),
            offset: layout.offset,
            out_numel: ks.iter().product(),
            red_numel: rs.iter().product(),
        }
    }

    /// Storage offset of the first element of output `o`.
    fn kept_base(&self, o: usize) -> usize {
        let mut base = self.offset;
        self.kept
            .for_each_run([self.offset], o, o + 1, |[b], _, _| base = b);
        base
    }
}

/// Fold reduced elements `start..end` of the output whose first element is at `base`.
#[inline]
fn fold_range<T: Copy, R: Reducer<T>>(
    r: &R,
    src: &[T],
    red: &Coalesced<1>,
    base: usize,
    start: usize,
    end: usize,
    acc: R::Acc,
) -> R::Acc {
    if red.shape.len() == 1 {
        let st = red.strides[0][0];
        if st == 1 {
            let xs = &src[base + start..base + end];
            return with_avx2(|| r.fold_slice(acc, xs, start));
        }
        let mut a = acc;
        for i in start..end {
            a = r.step(a, src[base + i * st], i);
        }
        return a;
    }
    let mut a = acc;
    let mut pos = start;
    red.for_each_run([base], start, end, |[o], len, [st]| {
        if st == 1 {
            let xs = &src[o..o + len];
            a = with_avx2(|| r.fold_slice(a, xs, pos));
        } else {
            for i in 0..len {
                a = r.step(a, src[o + i * st], pos + i);
            }
        }
        pos += len;
    });
    a
}

/// Reduce the dims of `layout` flagged in `reduce` (one flag per dim). The outputs come in
/// row-major order of the kept dims.
pub fn reduce<T: Copy + Send + Sync, R: Reducer<T>>(
    src: &[T],
    layout: &Layout,
    reduce: &[bool],
    r: &R,
) -> Vec<R::Out> {
    let p = Plan::new(layout, reduce);
    let (no, n) = (p.out_numel, p.red_numel);
    if no == 0 {
        return Vec::new();
    }
    if n == 0 {
        return vec![r.finish(r.init(), 0); no];
    }
    let kd = p.kept.shape.len();
    let k_inner = p.kept.shape[kd - 1];
    let k_stride = p.kept.strides[0][kd - 1];
    let r_stride = p.red.strides[0][p.red.shape.len() - 1];
    if r_stride != 1 && k_stride == 1 && k_inner > 1 && n > 1 {
        reduce_columns(src, &p, r)
    } else {
        reduce_rows(src, &p, r)
    }
}

fn reduce_rows<T: Copy + Send + Sync, R: Reducer<T>>(src: &[T], p: &Plan, r: &R) -> Vec<R::Out> {
    let (no, n) = (p.out_numel, p.red_numel);
    let mut out = vec![R::Out::default(); no];
    let total = no.saturating_mul(n);
    let threads = rayon::current_num_threads();
    let run_outputs = |o0: usize, out: &mut [R::Out]| {
        let mut w = 0;
        p.kept
            .for_each_run([p.offset], o0, o0 + out.len(), |[b], len, [st]| {
                for t in 0..len {
                    let acc = fold_range(r, src, &p.red, b + t * st, 0, n, r.init());
                    out[w] = r.finish(acc, n);
                    w += 1;
                }
            });
    };
    if total < PAR_THRESHOLD || threads == 1 {
        run_outputs(0, &mut out);
    } else if no >= 4 * threads || n < PAR_THRESHOLD {
        // Many outputs: each task takes a run of whole outputs.
        let per = (chunk_len(total) / n).max(1);
        out.par_chunks_mut(per)
            .enumerate()
            .for_each(|(c, o)| run_outputs(c * per, o));
    } else {
        // Few long outputs: split each one's reduced range, merge partials in order.
        let cl = chunk_len(n);
        let parts = n.div_ceil(cl);
        for (o, slot) in out.iter_mut().enumerate() {
            let base = p.kept_base(o);
            let partials: Vec<R::Acc> = (0..parts)
                .into_par_iter()
                .map(|k| {
                    let (s, e) = (k * cl, ((k + 1) * cl).min(n));
                    fold_range(r, src, &p.red, base, s, e, r.init())
                })
                .collect();
            let acc = partials.into_iter().fold(r.init(), |a, b| r.merge(a, b));
            *slot = r.finish(acc, n);
        }
    }
    out
}

/// Widest column tile of the column loops. Whole input rows are read when they fit: streaming
/// through memory is several times faster than reading row pieces with a stride, and the
/// accumulators (at most this many) still fit in L2. Parallelism comes from splitting the
/// reduced range instead.
const COL_TILE: usize = 16384;

/// Tile width for column loops that can only be split along columns (scans, softmax): whole
/// rows when there are enough blocks to share out, else narrower tiles so every thread works.
fn col_tile(outer: usize, inner: usize, total: usize) -> usize {
    let threads = rayon::current_num_threads();
    if total < PAR_THRESHOLD || threads == 1 || outer >= threads {
        return inner.clamp(1, COL_TILE);
    }
    // As few pieces per row as keep every thread busy: long pieces read faster.
    let per_outer = threads.div_ceil(outer);
    inner.div_ceil(per_outer).max(64).clamp(1, COL_TILE)
}

fn reduce_columns<T: Copy + Send + Sync, R: Reducer<T>>(src: &[T], p: &Plan, r: &R) -> Vec<R::Out> {
    let (no, n) = (p.out_numel, p.red_numel);
    let kd = p.kept.shape.len();
    let k = p.kept.shape[kd - 1];
    let groups = no / k;
    let mut out = vec![R::Out::default(); no];
    let total = no.saturating_mul(n);
    let threads = rayon::current_num_threads();
    let tiles_per_group = k.div_ceil(COL_TILE);
    let tasks = groups * tiles_per_group;
    // Split the reduced range too when there are too few tiles to keep every thread busy.
    let splits = if total >= PAR_THRESHOLD && tasks < 2 * threads && n >= 4 * threads {
        (2 * threads).min(n)
    } else {
        1
    };

    // Accumulate reduced positions `ns..ne` for columns `j0..j0 + acc.len()` of a group.
    let partial = |base: usize, j0: usize, ns: usize, ne: usize, acc: &mut [R::Acc]| {
        let jw = acc.len();
        let mut pos = ns;
        p.red.for_each_run([base + j0], ns, ne, |[ro], len, [rst]| {
            for t in 0..len {
                let off = ro + t * rst;
                let row = &src[off..off + jw];
                for (a, &x) in acc.iter_mut().zip(row) {
                    *a = r.step(*a, x, pos);
                }
                pos += 1;
            }
        });
    };
    let run_tile = |g: usize, j0: usize, o: &mut [R::Out]| {
        let base = p.kept_base(g * k);
        let jw = o.len();
        let acc = if splits > 1 {
            let parts: Vec<Vec<R::Acc>> = (0..splits)
                .into_par_iter()
                .map(|s| {
                    let mut acc = vec![r.init(); jw];
                    partial(base, j0, n * s / splits, n * (s + 1) / splits, &mut acc);
                    acc
                })
                .collect();
            let mut acc = vec![r.init(); jw];
            for part in parts {
                for (a, b) in acc.iter_mut().zip(part) {
                    *a = r.merge(*a, b);
                }
            }
            acc
        } else {
            let mut acc = vec![r.init(); jw];
            partial(base, j0, 0, n, &mut acc);
            acc
        };
        for (o, a) in o.iter_mut().zip(acc) {
            *o = r.finish(a, n);
        }
    };
    let run_group = |g: usize, row: &mut [R::Out]| {
        for (t, o) in row.chunks_mut(COL_TILE).enumerate() {
            run_tile(g, t * COL_TILE, o);
        }
    };
    if total < PAR_THRESHOLD || threads == 1 {
        for (g, row) in out.chunks_mut(k).enumerate() {
            run_group(g, row);
        }
    } else {
        out.par_chunks_mut(k).enumerate().for_each(|(g, row)| {
            row.par_chunks_mut(COL_TILE)
                .enumerate()
                .for_each(|(t, o)| run_tile(g, t * COL_TILE, o));
        });
    }
    out
}

// ------------------------------------------------------------------------------- scans

/// An inclusive scan along one dim: `out[i] = emit(fold(x[0..=i]))`.
pub trait Scanner<T: Copy>: Sync {
    type Acc: Copy + Send + Sync;
    type Out: Copy + Send + Sync + Default + 'static;
    fn init(&self) -> Self::Acc;
    fn step(&self, acc: Self::Acc, x: T, i: usize) -> Self::Acc;
    fn emit(&self, acc: Self::Acc) -> Self::Out;
}

/// Running sum (`PROD = false`) or product of floats, accumulated in f64 (PyTorch's CPU
/// accumulation type) and emitted in the input type.
pub struct CumFloat<const PROD: bool>;
impl<T: Element, const PROD: bool> Scanner<T> for CumFloat<PROD> {
    type Acc = f64;
    type Out = T;
    #[inline(always)]
    fn init(&self) -> f64 {
        PROD as u8 as f64
    }
    #[inline(always)]
    fn step(&self, a: f64, x: T, _: usize) -> f64 {
        if PROD {
            a * x.to_f64()
        } else {
            a + x.to_f64()
        }
    }
    #[inline(always)]
    fn emit(&self, a: f64) -> T {
        T::from_f64(a)
    }
}

/// Running sum (`PROD = false`) or product of integers, wrapping in i64.
pub struct CumInt<const PROD: bool>;
impl<T: Element, const PROD: bool> Scanner<T> for CumInt<PROD> {
    type Acc = i64;
    type Out = i64;
    #[inline(always)]
    fn init(&self) -> i64 {
        PROD as i64
    }
    #[inline(always)]
    fn step(&self, a: i64, x: T, _: usize) -> i64 {
        if PROD {
            a.wrapping_mul(x.to_i64())
        } else {
            a.wrapping_add(x.to_i64())
        }
    }
    #[inline(always)]
    fn emit(&self, a: i64) -> i64 {
        a
    }
}

/// Running max (`MAX = true`) or min with its index. Ties move the index to the later
/// element, and NaN sticks (each later NaN takes the index), as PyTorch's `cummax`.
pub struct CumExtremum<const MAX: bool>;
impl<T: Bounded, const MAX: bool> Scanner<T> for CumExtremum<MAX> {
    type Acc = (T, i64);
    type Out = (T, i64);
    #[inline(always)]
    fn init(&self) -> (T, i64) {
        (if MAX { T::LOWEST } else { T::HIGHEST }, 0)
    }
    #[inline(always)]
    fn step(&self, a: (T, i64), x: T, i: usize) -> (T, i64) {
        let take = is_nan(x) || (!is_nan(a.0) && if MAX { x >= a.0 } else { x <= a.0 });
        if take {
            (x, i as i64)
        } else {
            a
        }
    }
    #[inline(always)]
    fn emit(&self, a: (T, i64)) -> (T, i64) {
        a
    }
}

/// `(outer, n, inner)`: a contiguous tensor seen as lines of length `n` along one dim.
pub fn split_dims(shape: &[usize], dim: usize) -> (usize, usize, usize) {
    (
        shape[..dim].iter().product(),
        shape[dim],
        shape[dim + 1..].iter().product(),
    )
}

/// Inclusive scan along `dim` of a contiguous tensor with `shape`; the output is contiguous.
pub fn scan<T: Copy + Send + Sync, S: Scanner<T>>(
    src: &[T],
    shape: &[usize],
    dim: usize,
    s: &S,
) -> Vec<S::Out> {
    let (outer, n, inner) = split_dims(shape, dim);
    let total = outer * n * inner;
    // Every element is written below: a recycled buffer saves the page faults of a fresh one.
    let mut out = output_vec_for_overwrite::<S::Out>(total);
    if total == 0 {
        return out;
    }
    let par = total >= PAR_THRESHOLD && rayon::current_num_threads() > 1;
    if inner == 1 {
        let row = |x: &[T], o: &mut [S::Out]| {
            let mut a = s.init();
            for (i, (o, &x)) in o.iter_mut().zip(x).enumerate() {
                a = s.step(a, x, i);
                *o = s.emit(a);
            }
        };
        if par {
            let rows = (chunk_len(total) / n).max(1);
            out.par_chunks_mut(rows * n)
                .zip(src.par_chunks(rows * n))
                .for_each(|(o, x)| {
                    for (o, x) in o.chunks_mut(n).zip(x.chunks(n)) {
                        row(x, o);
                    }
                });
        } else {
            for (o, x) in out.chunks_mut(n).zip(src.chunks(n)) {
                row(x, o);
            }
        }
        return out;
    }
    // Column form: a vector of accumulators walks down the lines of one tile of columns.
    let tw = col_tile(outer, inner, total);
    let tiles = inner.div_ceil(tw);
    let ptr = SyncPtr(out.as_mut_ptr());
    let task = |t: usize| {
        let (o, tile) = (t / tiles, t % tiles);
        let j0 = tile * tw;
        let jw = tw.min(inner - j0);
        let mut acc = vec![s.init(); jw];
        for i in 0..n {
            let start = o * n * inner + i * inner + j0;
            let x = &src[start..start + jw];
            // SAFETY: task (o, tile) is the only one touching columns j0..j0+jw of block o.
            let y = unsafe { ptr.slice(start, jw) };
            for ((a, &x), y) in acc.iter_mut().zip(x).zip(y.iter_mut()) {
                *a = s.step(*a, x, i);
                *y = s.emit(*a);
            }
        }
    };
    if par {
        (0..outer * tiles).into_par_iter().for_each(task);
    } else {
        (0..outer * tiles).for_each(task);
    }
    out
}

// ------------------------------------------------------------------------------- softmax

/// Float types of the softmax kernels. `fexp::<FMA>` is the exp they use: branch-free (so
/// loops vectorize) for f32, with fused multiply-adds when `FMA` (only instantiated inside
/// functions compiled for AVX2 + FMA); `std`'s for f64.
pub trait SoftmaxFloat: FloatElement {
    fn fexp<const FMA: bool>(self) -> Self;
}
impl SoftmaxFloat for f32 {
    #[inline(always)]
    fn fexp<const FMA: bool>(self) -> f32 {
        exp_f32_with::<FMA>(self)
    }
}
impl SoftmaxFloat for f64 {
    #[inline(always)]
    fn fexp<const FMA: bool>(self) -> f64 {
        self.exp()
    }
}

#[inline(always)]
fn max_lanes<T: SoftmaxFloat>(x: &[T]) -> T {
    let f = |a: T, v: T| if v > a || is_nan(v) { v } else { a };
    lanes_fold::<T, T, 16>(x, T::neg_infinity(), f, f)
}

/// Softmax (or log-softmax) of one contiguous row.
#[inline(always)]
fn softmax_row<T: SoftmaxFloat, const FMA: bool>(x: &[T], y: &mut [T], log: bool) {
    let zero = <T as Element>::zero();
    let m = max_lanes(x);
    if log {
        let s = lanes_fold::<T, T, 16>(x, zero, |a, v| a + (v - m).fexp::<FMA>(), |a, b| a + b);
        // (x - m) - log(s): subtracting the max first keeps the bits of large inputs.
        let ls = s.ln();
        for (y, &v) in y.iter_mut().zip(x) {
            *y = (v - m) - ls;
        }
    } else {
        const L: usize = 16;
        let mut lanes = [zero; L];
        let (xc, xr) = x.as_chunks::<L>();
        let (yc, yr) = y.as_chunks_mut::<L>();
        for (yc, xc) in yc.iter_mut().zip(xc) {
            for k in 0..L {
                let e = (xc[k] - m).fexp::<FMA>();
                yc[k] = e;
                lanes[k] = lanes[k] + e;
            }
        }
        let mut s = lanes.iter().fold(zero, |a, &b| a + b);
        for (y, &v) in yr.iter_mut().zip(xr) {
            let e = (v - m).fexp::<FMA>();
            *y = e;
            s = s + e;
        }
        let inv = <T as Element>::one() / s;
        for y in y.iter_mut() {
            *y = *y * inv;
        }
    }
}

#[inline(always)]
fn softmax_rows<T: SoftmaxFloat, const FMA: bool>(x: &[T], y: &mut [T], n: usize, log: bool) {
    for (y, x) in y.chunks_mut(n).zip(x.chunks(n)) {
        softmax_row::<T, FMA>(x, y, log);
    }
}

/// One tile of the column form: columns `j0..j0 + jw` of block `o` of an `(outer, n, inner)`
/// tensor. Vectors of maxima and sums over the tile; no transposes.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn softmax_tile<T: SoftmaxFloat, const FMA: bool>(
    src: &[T],
    ptr: SyncPtr<T>,
    o: usize,
    n: usize,
    inner: usize,
    j0: usize,
    jw: usize,
    log: bool,
) {
    let row = |i: usize| o * n * inner + i * inner + j0;
    let mut m = vec![T::neg_infinity(); jw];
    for i in 0..n {
        for (m, &v) in m.iter_mut().zip(&src[row(i)..row(i) + jw]) {
            if v > *m || is_nan(v) {
                *m = v;
            }
        }
    }
    let mut s = vec![<T as Element>::zero(); jw];
    for i in 0..n {
        let x = &src[row(i)..row(i) + jw];
        // SAFETY: the caller gives each (o, tile) to one task; rows of other blocks and
        // columns of other tiles are disjoint from these.
        let y = unsafe { ptr.slice(row(i), jw) };
        for (((y, &v), &m), s) in y.iter_mut().zip(x).zip(&m).zip(s.iter_mut()) {
            let e = (v - m).fexp::<FMA>();
            *s = *s + e;
            if !log {
                *y = e;
            }
        }
    }
    for s in s.iter_mut() {
        *s = if log {
            s.ln()
        } else {
            <T as Element>::one() / *s
        };
    }
    for i in 0..n {
        let x = &src[row(i)..row(i) + jw];
        // SAFETY: as above.
        let y = unsafe { ptr.slice(row(i), jw) };
        for (((y, &v), &s), &m) in y.iter_mut().zip(x).zip(&s).zip(&m) {
            *y = if log { (v - m) - s } else { *y * s };
        }
    }
}

/// Whether this CPU can run the AVX2 + FMA versions of the kernels.
#[inline]
fn use_avx2_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// # Safety
/// The CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn softmax_rows_avx2<T: SoftmaxFloat>(x: &[T], y: &mut [T], n: usize, log: bool) {
    softmax_rows::<T, true>(x, y, n, log)
}

/// # Safety
/// The CPU must support AVX2 and FMA; `ptr` as for `softmax_tile`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn softmax_tile_avx2<T: SoftmaxFloat>(
    src: &[T],
    ptr: SyncPtr<T>,
    o: usize,
    n: usize,
    inner: usize,
    j0: usize,
    jw: usize,
    log: bool,
) {
    softmax_tile::<T, true>(src, ptr, o, n, inner, j0, jw, log)
}

/// Softmax (`log = false`) or log-softmax along `dim` of a contiguous tensor with `shape`.
pub fn softmax<T: SoftmaxFloat>(src: &[T], shape: &[usize], dim: usize, log: bool) -> Vec<T> {
    let (outer, n, inner) = split_dims(shape, dim);
    let total = outer * n * inner;
    // Every element is written below: a recycled buffer saves the page faults of a fresh one
    // (for a 16 MB result they cost more than the softmax itself).
    let mut out = output_vec_for_overwrite::<T>(total);
    if total == 0 {
        return out;
    }
    let avx2 = use_avx2_fma();
    let par = total >= PAR_THRESHOLD && rayon::current_num_threads() > 1;
    if inner == 1 {
        let rows = |x: &[T], y: &mut [T]| {
            #[cfg(target_arch = "x86_64")]
            if avx2 {
                // SAFETY: AVX2 and FMA were detected at run time.
                return unsafe { softmax_rows_avx2(x, y, n, log) };
            }
            softmax_rows::<T, false>(x, y, n, log)
        };
        if par {
            let per = (chunk_len(total) / n).max(1) * n;
            out.par_chunks_mut(per)
                .zip(src.par_chunks(per))
                .for_each(|(y, x)| rows(x, y));
        } else {
            rows(src, &mut out);
        }
        return out;
    }
    let tw = col_tile(outer, inner, total);
    let tiles = inner.div_ceil(tw);
    let ptr = SyncPtr(out.as_mut_ptr());
    let task = |t: usize| {
        let (o, tile) = (t / tiles, t % tiles);
        let j0 = tile * tw;
        let jw = tw.min(inner - j0);
        #[cfg(target_arch = "x86_64")]
        if avx2 {
            // SAFETY: AVX2 and FMA were detected at run time; task t alone owns tile (o, tile).
            return unsafe { softmax_tile_avx2(src, ptr, o, n, inner, j0, jw, log) };
        }
        softmax_tile::<T, false>(src, ptr, o, n, inner, j0, jw, log)
    };
    if par {
        (0..outer * tiles).into_par_iter().for_each(task);
    } else {
        (0..outer * tiles).for_each(task);
    }
    let _ = avx2;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mask(nd: usize, dims: &[usize]) -> Vec<bool> {
        (0..nd).map(|d| dims.contains(&d)).collect()
    }

    #[test]
    fn sum_rows_columns_and_strided() {
        // 3 x 4 x 5 tensor with values 0..60.
        let v: Vec<f32> = (0..60).map(|i| i as f32).collect();
        let l = Layout::contiguous(&[3, 4, 5]);
        let all = reduce(&v, &l, &mask(3, &[0, 1, 2]), &SumF32);
        assert_eq!(all, vec![1770.0]);
        // Last dim (rows).
        let last = reduce(&v, &l, &mask(3, &[2]), &SumF32);
        assert_eq!(last[0], 10.0);
        assert_eq!(last[11], (55..60).sum::<i32>() as f64);
        // First dim (columns).
        let first = reduce(&v, &l, &mask(3, &[0]), &SumF32);
        assert_eq!(first.len(), 20);
        assert_eq!(first[0], 0.0 + 20.0 + 40.0);
        assert_eq!(first[19], 19.0 + 39.0 + 59.0);
        // Middle dim.
        let mid = reduce(&v, &l, &mask(3, &[1]), &SumF32);
        assert_eq!(mid[0], 0.0 + 5.0 + 10.0 + 15.0);
        // Transposed view: sum over its last dim == sum over dim 0 of the original.
        let t = l.transpose(0, 2);
        let tl = reduce(&v, &t, &mask(3, &[2]), &SumF32);
        assert_eq!(tl[0], first[0]);
    }

    #[test]
    fn argmax_first_occurrence_and_nan() {
        let v = [1.0f32, 3.0, 3.0, 2.0];
        let l = Layout::contiguous(&[4]);
        let r = reduce(&v, &l, &[true], &ArgExtremum::<true>);
        assert_eq!(r, vec![(3.0, 1)]);
        let v = [1.0f32, f32::NAN, 5.0, f32::NAN];
        let r = reduce(&v, &l, &[true], &ArgExtremum::<false>);
        assert!(r[0].0.is_nan() && r[0].1 == 1);
    }

    #[test]
    fn large_parallel_sum_is_accurate() {
        let n = 1 << 20;
        let v: Vec<f32> = (0..n).map(|i| ((i % 1000) as f32) * 0.001).collect();
        let exact: f64 = v.iter().map(|&x| x as f64).sum();
        let got = reduce(&v, &Layout::contiguous(&[n]), &[true], &SumF32)[0];
        assert!((got - exact).abs() / exact < 1e-7);
        // Column sum of a tall matrix splits the reduced range across threads.
        let cols = reduce(
            &v,
            &Layout::contiguous(&[n / 4, 4]),
            &[true, false],
            &SumF32,
        );
        let exact0: f64 = v.iter().step_by(4).map(|&x| x as f64).sum();
        assert!((cols[0] - exact0).abs() / exact0 < 1e-7);
    }

    #[test]
    fn variance_two_pass_and_welford_agree() {
        let v: Vec<f64> = (0..1000)
            .map(|i| (i as f64 * 0.37).sin() * 10.0 + 5.0)
            .collect();
        let mean = v.iter().sum::<f64>() / 1000.0;
        let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / 999.0;
        let r = Variance { correction: 1.0 };
        let rows = reduce(&v, &Layout::contiguous(&[1000]), &[true], &r)[0];
        let cols = reduce(&v, &Layout::contiguous(&[1000, 1]), &[true, false], &r)[0];
        let strided = reduce(
            &v,
            &Layout::contiguous(&[500, 2]).transpose(0, 1),
            &[false, true],
            &r,
        );
        assert!((rows.0 - var).abs() < 1e-9 && (cols.0 - var).abs() < 1e-9);
        assert!((rows.1 - mean).abs() < 1e-12);
        assert_eq!(strided.len(), 2);
    }

    #[test]
    fn scans_and_softmax() {
        let v = [1i32, 2, 3, 4, 5, 6];
        assert_eq!(
            scan(&v, &[2, 3], 1, &CumInt::<false>),
            vec![1, 3, 6, 4, 9, 15]
        );
        assert_eq!(
            scan(&v, &[2, 3], 0, &CumInt::<false>),
            vec![1, 2, 3, 5, 7, 9]
        );
        let c = scan(&[1.0f32, 3.0, 3.0, 2.0], &[4], 0, &CumExtremum::<true>);
        assert_eq!(c.iter().map(|x| x.1).collect::<Vec<_>>(), vec![0, 1, 2, 2]);
        let x = [1.0f32, 2.0, 3.0, 1000.0, 1000.0, 1000.0];
        let s = softmax(&x, &[2, 3], 1, false);
        assert!((s[0] + s[1] + s[2] - 1.0).abs() < 1e-6);
        assert!((s[3] - 1.0 / 3.0).abs() < 1e-6);
        let cs = softmax(&x, &[2, 3], 0, false);
        assert!((cs[0] + cs[3] - 1.0).abs() < 1e-6);
        let ls = softmax(&x, &[2, 3], 1, true);
        assert!((ls[2] - s[2].ln()).abs() < 1e-5);
    }
}
