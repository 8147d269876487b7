//! Matrix multiplication kernels: `dst = dst_scale * dst + prod_scale * (lhs @ rhs)` over
//! strided operands, single or batched.
//!
//! f32/f64/f16 go through the `gemm` crate, which takes arbitrary row/column strides, so a
//! transposed or broadcast operand needs no copy. Note that `gemm`'s own argument names are the
//! reverse of BLAS's: its `alpha` scales the destination and its `beta` scales the product.
//! Integer dtypes use a simple cache-blocked loop with wrapping arithmetic (as PyTorch's CPU
//! integer matmul wraps). bf16 and bool are not handled here (the caller computes bf16 in f32;
//! bool is rejected before reaching a kernel).

use crate::Element;
use half::f16;
use rayon::prelude::*;

/// Where one matrix operand lives in its storage slice: element `(i, j)` of batch entry `b`
/// is at `offsets[b] + i * rs + j * cs`. Strides may be zero (broadcast).
#[derive(Debug, Clone, Copy)]
pub struct MatStrides {
    pub rs: usize,
    pub cs: usize,
}

/// Below this many multiply-adds per matrix, batches run in parallel across matrices
/// (each matrix single-threaded); above it, matrices run one after the other with `gemm`'s own
/// threading.
pub const SMALL_MATMUL_WORK: usize = 128 * 128 * 128;

/// Below this many multiply-adds, `gemm` is called without threads at all.
pub const GEMM_THREAD_WORK: usize = 48 * 48 * 48;

/// Element types with a matmul kernel.
pub trait MatmulElement: Element {
    /// One product `dst = dst_scale * dst + prod_scale * lhs @ rhs` (the destination read only
    /// when `read_dst`) on raw pointers.
    ///
    /// # Safety
    /// Every element `lhs + i*lrs + p*lcs` (i < m, p < k), `rhs + p*rrs + j*rcs` (p < k, j < n)
    /// must be readable, and every `dst + i*drs + j*dcs` writable, with distinct destination
    /// positions that alias neither input.
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm_raw(
        m: usize,
        n: usize,
        k: usize,
        dst: *mut Self,
        drs: usize,
        dcs: usize,
        read_dst: bool,
        lhs: *const Self,
        l: MatStrides,
        rhs: *const Self,
        r: MatStrides,
        dst_scale: Self,
        prod_scale: Self,
        threaded: bool,
    );
}

macro_rules! impl_gemm_float {
    ($t:ty) => {
        impl MatmulElement for $t {
            unsafe fn gemm_raw(
                m: usize,
                n: usize,
                k: usize,
                dst: *mut Self,
                drs: usize,
                dcs: usize,
                read_dst: bool,
                lhs: *const Self,
                l: MatStrides,
                rhs: *const Self,
                r: MatStrides,
                dst_scale: Self,
                prod_scale: Self,
                threaded: bool,
            ) {
                let par = if threaded && m.saturating_mul(n).saturating_mul(k) >= GEMM_THREAD_WORK {
                    gemm::Parallelism::Rayon(0)
                } else {
                    gemm::Parallelism::None
                };
                // `gemm` names: alpha scales dst, beta scales the product.
                gemm::gemm(
                    m,
                    n,
                    k,
                    dst,
                    dcs as isize,
                    drs as isize,
                    read_dst,
                    lhs,
                    l.cs as isize,
                    l.rs as isize,
                    rhs,
                    r.cs as isize,
                    r.rs as isize,
                    dst_scale,
                    prod_scale,
                    false,
                    false,
                    false,
                    par,
                );
            }
        }
    };
}
impl_gemm_float!(f32);
impl_gemm_float!(f64);
impl_gemm_float!(f16);

/// Cache-blocked integer kernel (wrapping arithmetic). Parallel over row blocks when large.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_int<T: Element>(
    m: usize,
    n: usize,
    k: usize,
    dst: *mut T,
    drs: usize,
    dcs: usize,
    read_dst: bool,
    lhs: *const T,
    l: MatStrides,
    rhs: *const T,
    r: MatStrides,
    dst_scale: T,
    prod_scale: T,
    threaded: bool,
) {
    const MB: usize = 64;
    const KB: usize = 256;
    let dst = SendPtr(dst);
    let (lhs, rhs) = (SendPtr(lhs as *mut T), SendPtr(rhs as *mut T));
    let row_block = move |i0: usize| {
        let i1 = (i0 + MB).min(m);
        // Accumulate one row block in a local buffer, k-blocked for locality.
        let mut acc = vec![T::zero(); (i1 - i0) * n];
        let mut p0 = 0;
        while p0 < k {
            let p1 = (p0 + KB).min(k);
            for i in i0..i1 {
                let row = &mut acc[(i - i0) * n..(i - i0 + 1) * n];
                for p in p0..p1 {
                    // SAFETY: i < m, p < k: in bounds by the caller's contract.
                    let a = unsafe { *lhs.get().add(i * l.rs + p * l.cs) };
                    if a.is_zero() {
                        continue;
                    }
                    let rp = unsafe { rhs.get().add(p * r.rs) };
                    for (j, o) in row.iter_mut().enumerate() {
                        // SAFETY: p < k, j < n.
                        let b = unsafe { *rp.add(j * r.cs) };
                        *o = o.add(a.mul(b));
                    }
                }
            }
            p0 = p1;
        }
        for i in i0..i1 {
            for j in 0..n {
                // SAFETY: i < m, j < n; row blocks are disjoint so threads never share a
                // destination element.
                let d = unsafe { &mut *dst.get().add(i * drs + j * dcs) };
                let v = prod_scale.mul(acc[(i - i0) * n + j]);
                *d = if read_dst {
                    dst_scale.mul(*d).add(v)
                } else {
                    v
                };
            }
        }
    };
    let blocks: Vec<usize> = (0..m).step_by(MB).collect();
    if threaded && m.saturating_mul(n).saturating_mul(k) >= GEMM_THREAD_WORK && blocks.len() > 1 {
        blocks.into_par_iter().for_each(row_block);
    } else {
        blocks.into_iter().for_each(row_block);
    }
}

macro_rules! impl_gemm_int {
    ($($t:ty),*) => {$(
        impl MatmulElement for $t {
            unsafe fn gemm_raw(
                m: usize,
                n: usize,
                k: usize,
                dst: *mut Self,
                drs: usize,
                dcs: usize,
                read_dst: bool,
                lhs: *const Self,
                l: MatStrides,
                rhs: *const Self,
                r: MatStrides,
                dst_scale: Self,
                prod_scale: Self,
                threaded: bool,
            ) {
                gemm_int(m, n, k, dst, drs, dcs, read_dst, lhs, l, rhs, r, dst_scale, prod_scale, threaded)
            }
        }
    )*};
}
impl_gemm_int!(u8, i8, i16, i32, i64);

/// A raw pointer that may cross threads (each thread touches disjoint elements).
#[derive(Clone, Copy)]
struct SendPtr<T>(*mut T);
// SAFETY: used only for disjoint writes / shared reads coordinated by the kernels here.
unsafe impl<T> Send for SendPtr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for SendPtr<T> {}
impl<T> SendPtr<T> {
    #[inline(always)]
    fn get(self) -> *mut T {
        self.0
    }
}

/// One batched product. `out` holds `a_offsets.len()` contiguous `m x n` row-major matrices;
/// entry `b` is `dst_scale * out[b] + prod_scale * A_b @ B_b` where `A_b` starts at
/// `a[a_offsets[b]]` with strides `la` and `B_b` at `b[b_offsets[b]]` with strides `lb`
/// (`out` is read only when `read_dst`). `k == 0` gives `dst_scale * out` (or zeros).
///
/// Panics (caught at the Python boundary) if an operand would be read out of bounds.
#[allow(clippy::too_many_arguments)]
pub fn matmul_batched<T: MatmulElement>(
    a: &[T],
    a_offsets: &[usize],
    la: MatStrides,
    b: &[T],
    b_offsets: &[usize],
    lb: MatStrides,
    m: usize,
    n: usize,
    k: usize,
    out: &mut [T],
    read_dst: bool,
    dst_scale: T,
    prod_scale: T,
) {
    let batch = a_offsets.len();
    assert_eq!(b_offsets.len(), batch, "matmul: batch offsets disagree");
    assert_eq!(out.len(), batch * m * n, "matmul: output size");
    if m == 0 || n == 0 || batch == 0 {
        return;
    }
    if k == 0 {
        for o in out.iter_mut() {
            *o = if read_dst {
                dst_scale.mul(*o)
            } else {
                T::zero()
            };
        }
        return;
    }
    // Bounds: the last element each operand reads must be inside its slice.
    let a_extent = (m - 1) * la.rs + (k - 1) * la.cs;
    let b_extent = (k - 1) * lb.rs + (n - 1) * lb.cs;
    for (&oa, &ob) in a_offsets.iter().zip(b_offsets) {
        assert!(oa + a_extent < a.len(), "matmul: lhs out of bounds");
        assert!(ob + b_extent < b.len(), "matmul: rhs out of bounds");
    }
    let one = |(bi, o): (usize, &mut [T]), threaded: bool| {
        // SAFETY: bounds checked above; `o` is a fresh, exclusively borrowed m x n block that
        // cannot alias the shared input slices.
        unsafe {
            T::gemm_raw(
                m,
                n,
                k,
                o.as_mut_ptr(),
                n,
                1,
                read_dst,
                a.as_ptr().add(a_offsets[bi]),
                la,
                b.as_ptr().add(b_offsets[bi]),
                lb,
                dst_scale,
                prod_scale,
                threaded,
            )
        }
    };
    let work = m.saturating_mul(n).saturating_mul(k);
    if batch > 1 && work < SMALL_MATMUL_WORK && rayon::current_num_threads() > 1 {
        out.par_chunks_mut(m * n)
            .enumerate()
            .with_min_len((GEMM_THREAD_WORK / work.max(1)).max(1))
            .for_each(|x| one(x, false));
    } else {
        out.chunks_mut(m * n).enumerate().for_each(|x| one(x, true));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(a: &[f64], b: &[f64], m: usize, n: usize, k: usize) -> Vec<f64> {
        let mut o = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                for p in 0..k {
                    o[i * n + j] += a[i * k + p] * b[p * n + j];
                }
            }
        }
        o
    }

    #[test]
    fn float_and_int_agree_with_naive() {
        let (m, n, k) = (7, 5, 9);
        let a: Vec<f64> = (0..m * k).map(|x| (x % 7) as f64 - 3.0).collect();
        let b: Vec<f64> = (0..k * n).map(|x| (x % 5) as f64 - 2.0).collect();
        let want = naive(&a, &b, m, n, k);
        let mut out = vec![0.0f64; m * n];
        let la = MatStrides { rs: k, cs: 1 };
        let lb = MatStrides { rs: n, cs: 1 };
        matmul_batched(
            &a,
            &[0],
            la,
            &b,
            &[0],
            lb,
            m,
            n,
            k,
            &mut out,
            false,
            0.0,
            1.0,
        );
        assert_eq!(out, want);
        let ai: Vec<i32> = a.iter().map(|&x| x as i32).collect();
        let bi: Vec<i32> = b.iter().map(|&x| x as i32).collect();
        let mut oi = vec![0i32; m * n];
        matmul_batched(&ai, &[0], la, &bi, &[0], lb, m, n, k, &mut oi, false, 0, 1);
        assert_eq!(oi, want.iter().map(|&x| x as i32).collect::<Vec<_>>());
    }

    #[test]
    fn transposed_operand_and_scales() {
        // A stored transposed (column-major), dst pre-filled: out = 2*out + 3*A@B.
        let (m, n, k) = (3, 4, 2);
        let a_rm: Vec<f32> = (0..m * k).map(|x| x as f32).collect();
        let mut a_cm = vec![0.0f32; m * k];
        for i in 0..m {
            for p in 0..k {
                a_cm[p * m + i] = a_rm[i * k + p];
            }
        }
        let b: Vec<f32> = (0..k * n).map(|x| x as f32 * 0.5).collect();
        let want = naive(
            &a_rm.iter().map(|&x| x as f64).collect::<Vec<_>>(),
            &b.iter().map(|&x| x as f64).collect::<Vec<_>>(),
            m,
            n,
            k,
        );
        let mut out = vec![1.0f32; m * n];
        matmul_batched(
            &a_cm,
            &[0],
            MatStrides { rs: 1, cs: m },
            &b,
            &[0],
            MatStrides { rs: n, cs: 1 },
            m,
            n,
            k,
            &mut out,
            true,
            2.0,
            3.0,
        );
        for (o, w) in out.iter().zip(want) {
            assert!((*o as f64 - (2.0 + 3.0 * w)).abs() < 1e-4);
        }
    }
}
