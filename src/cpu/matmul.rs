//! Matrix multiplication kernels: `dst = dst_scale * dst + prod_scale * (lhs @ rhs)` over
//! strided operands, single or batched.
//!
//! f32/f64/f16 go through the `gemm` crate, which takes arbitrary row/column strides, so a
//! transposed or broadcast operand needs no copy. Note that `gemm`'s own argument names are the
//! reverse of BLAS's: its `alpha` scales the destination and its `beta` scales the product.
//! Integer dtypes use a simple cache-blocked loop with wrapping arithmetic (as PyTorch's CPU
//! integer matmul wraps). bf16 and bool are not handled here (the caller computes bf16 in f32;
//! bool is rejected before reaching a kernel).

use crate::{Element, FloatElement};
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

    /// A matrix-vector product `y = dst_scale * y + prod_scale * A x` (`A` is `m x k` with
    /// strides `l`, `x` has stride `xs`, `y` is contiguous of length `m`) if this type has a
    /// dedicated kernel; returns `false` (touching nothing) when it has not.
    ///
    /// # Safety
    /// Every `a + i*l.rs + p*l.cs` (i < m, p < k) and `x + p*xs` (p < k) must be readable.
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemv_raw(
        _m: usize,
        _k: usize,
        _y: &mut [Self],
        _read_dst: bool,
        _a: *const Self,
        _l: MatStrides,
        _x: *const Self,
        _xs: usize,
        _dst_scale: Self,
        _prod_scale: Self,
        _threaded: bool,
    ) -> bool {
        false
    }
}

macro_rules! impl_gemm_float {
    ($t:ty $(, $gemv:ident)?) => {
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
            $(
            unsafe fn gemv_raw(
                m: usize,
                k: usize,
                y: &mut [Self],
                read_dst: bool,
                a: *const Self,
                l: MatStrides,
                x: *const Self,
                xs: usize,
                dst_scale: Self,
                prod_scale: Self,
                threaded: bool,
            ) -> bool {
                // SAFETY: forwarded contract.
                unsafe { $gemv(m, k, y, read_dst, a, l, x, xs, dst_scale, prod_scale, threaded) };
                true
            }
            )?
        }
    };
}
impl_gemm_float!(f32, gemv_float);
impl_gemm_float!(f64, gemv_float);
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

// ------------------------------------------------------------------ matrix-vector products

/// Multiply-adds below which a matrix-vector product runs on the calling thread.
pub const GEMV_PAR_WORK: usize = 1 << 16;

/// Dot product with independent lane accumulators (vectorisable without reassociation).
#[inline(always)]
fn dot_lanes<T: FloatElement>(a: &[T], b: &[T]) -> T {
    const L: usize = 16;
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [<T as Element>::zero(); L];
    let (ca, cb) = (a.chunks_exact(L), b.chunks_exact(L));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for l in 0..L {
            acc[l] = acc[l] + x[l] * y[l];
        }
    }
    let mut tail = <T as Element>::zero();
    for (x, y) in ra.iter().zip(rb) {
        tail = tail + *x * *y;
    }
    let mut w = L;
    while w > 1 {
        w /= 2;
        for l in 0..w {
            acc[l] = acc[l] + acc[l + w];
        }
    }
    acc[0] + tail
}

/// `out[i] = row_i . x` for rows `a + i * rs` of `x.len()` contiguous elements.
///
/// # Safety
/// Every row `a + i * rs .. + x.len()` (i < out.len()) must be readable.
#[inline(always)]
unsafe fn dot_rows_body<T: FloatElement>(a: *const T, rs: usize, x: &[T], out: &mut [T]) {
    let k = x.len();
    for (i, o) in out.iter_mut().enumerate() {
        // SAFETY: row i is readable by the caller's contract.
        let row = unsafe { std::slice::from_raw_parts(a.add(i * rs), k) };
        *o = dot_lanes(row, x);
    }
}

/// `acc[i] += sum_p x[p] * a[p * cs + i]` (columns of the product contiguous in storage).
///
/// # Safety
/// Every segment `a + p * cs .. + acc.len()` (p < x.len()) must be readable.
#[inline(always)]
unsafe fn axpy_rows_body<T: FloatElement>(a: *const T, cs: usize, x: &[T], acc: &mut [T]) {
    let m = acc.len();
    // SAFETY (all `from_raw_parts` below): segment p is readable by the caller's contract.
    let seg = |p: usize| unsafe { std::slice::from_raw_parts(a.add(p * cs), m) };
    let mut p = 0;
    while p + 4 <= x.len() {
        let (r0, r1, r2, r3) = (seg(p), seg(p + 1), seg(p + 2), seg(p + 3));
        let (x0, x1, x2, x3) = (x[p], x[p + 1], x[p + 2], x[p + 3]);
        for i in 0..m {
            acc[i] = acc[i] + x0 * r0[i] + x1 * r1[i] + x2 * r2[i] + x3 * r3[i];
        }
        p += 4;
    }
    while p < x.len() {
        let (r0, x0) = (seg(p), x[p]);
        for i in 0..m {
            acc[i] = acc[i] + x0 * r0[i];
        }
        p += 1;
    }
}

/// The inner loops, compiled twice: for the build's baseline target and with AVX2 (picked at
/// run time), since these loops are the whole cost of a matrix-vector product.
trait GemvLoops: FloatElement {
    /// # Safety
    /// As `dot_rows_body`.
    unsafe fn dot_rows(a: *const Self, rs: usize, x: &[Self], out: &mut [Self]) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            #[target_feature(enable = "avx2")]
            unsafe fn avx2<T: FloatElement>(a: *const T, rs: usize, x: &[T], out: &mut [T]) {
                // SAFETY: forwarded contract.
                unsafe { dot_rows_body(a, rs, x, out) }
            }
            // SAFETY: AVX2 is present; forwarded contract.
            return unsafe { avx2(a, rs, x, out) };
        }
        // SAFETY: forwarded contract.
        unsafe { dot_rows_body(a, rs, x, out) }
    }
    /// # Safety
    /// As `axpy_rows_body`.
    unsafe fn axpy_rows(a: *const Self, cs: usize, x: &[Self], acc: &mut [Self]) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            #[target_feature(enable = "avx2")]
            unsafe fn avx2<T: FloatElement>(a: *const T, cs: usize, x: &[T], acc: &mut [T]) {
                // SAFETY: forwarded contract.
                unsafe { axpy_rows_body(a, cs, x, acc) }
            }
            // SAFETY: AVX2 is present; forwarded contract.
            return unsafe { avx2(a, cs, x, acc) };
        }
        // SAFETY: forwarded contract.
        unsafe { axpy_rows_body(a, cs, x, acc) }
    }
}
impl GemvLoops for f32 {}
impl GemvLoops for f64 {}

/// Sum of equally long partial vectors into `out`.
fn sum_parts<T: FloatElement>(parts: Vec<Vec<T>>, out: &mut [T]) {
    out.iter_mut().for_each(|o| *o = <T as Element>::zero());
    for p in parts {
        for (o, v) in out.iter_mut().zip(p) {
            *o = *o + v;
        }
    }
}

/// `y = dst_scale * y + prod_scale * A x` for an `m x k` matrix `A` (strides `l`, any) and a
/// vector `x` (stride `xs`), `y` contiguous of length `m`. Row-major `A` runs as row dot
/// products, column-major `A` (e.g. the transpose of a row-major matrix) as a sweep of scaled
/// rows of storage, both in parallel and reading `A` once without copying it; other strides take
/// a plain strided loop.
///
/// # Safety
/// Every `a + i*l.rs + p*l.cs` (i < m, p < k) and `x + p*xs` (p < k) must be readable, and
/// `y` must not alias them.
#[allow(clippy::too_many_arguments)]
unsafe fn gemv_float<T: GemvLoops>(
    m: usize,
    k: usize,
    y: &mut [T],
    read_dst: bool,
    a: *const T,
    l: MatStrides,
    x: *const T,
    xs: usize,
    dst_scale: T,
    prod_scale: T,
    threaded: bool,
) {
    debug_assert_eq!(y.len(), m);
    let xbuf: Vec<T>;
    let xv: &[T] = if xs == 1 {
        // SAFETY: x[0..k] readable by the contract.
        unsafe { std::slice::from_raw_parts(x, k) }
    } else {
        // SAFETY: x + p*xs readable for p < k.
        xbuf = (0..k).map(|p| unsafe { *x.add(p * xs) }).collect();
        &xbuf
    };
    let threads = if threaded && m.saturating_mul(k) >= GEMV_PAR_WORK {
        rayon::current_num_threads().max(1)
    } else {
        1
    };
    // Products land in `y` directly unless the old `y` is needed.
    let mut tmp = if read_dst {
        vec![<T as Element>::zero(); m]
    } else {
        vec![]
    };
    let prod: &mut [T] = if read_dst { &mut tmp } else { &mut *y };
    let ap = SendPtr(a as *mut T);
    if l.cs == 1 {
        // Row-major: one dot product per row.
        if threads > 1 && m >= 2 * threads {
            let rows = m.div_ceil(threads * 2);
            prod.par_chunks_mut(rows).enumerate().for_each(|(c, o)| {
                // SAFETY: rows c*rows.. are in range (o has at most m - c*rows rows).
                unsafe { T::dot_rows(ap.get().add(c * rows * l.rs), l.rs, xv, o) }
            });
        } else if threads > 1 {
            // Few long rows: split the dot products along k.
            let span = k.div_ceil(threads);
            let parts: Vec<Vec<T>> = (0..k.div_ceil(span))
                .into_par_iter()
                .map(|c| {
                    let p0 = c * span;
                    let p1 = (p0 + span).min(k);
                    let mut acc = vec![<T as Element>::zero(); m];
                    // SAFETY: columns p0..p1 of every row are in range.
                    unsafe { T::dot_rows(ap.get().add(p0), l.rs, &xv[p0..p1], &mut acc) };
                    acc
                })
                .collect();
            sum_parts(parts, prod);
        } else {
            // SAFETY: rows 0..m readable.
            unsafe { T::dot_rows(a, l.rs, xv, prod) }
        }
    } else if l.rs == 1 {
        // Column-major (a transposed row-major matrix): sweep its storage rows.
        if threads > 1 && m >= 256 * threads {
            let cols = m.div_ceil(threads);
            prod.par_chunks_mut(cols).enumerate().for_each(|(c, o)| {
                o.iter_mut().for_each(|v| *v = <T as Element>::zero());
                // SAFETY: entries c*cols..c*cols+o.len() of every storage row are in range.
                unsafe { T::axpy_rows(ap.get().add(c * cols), l.cs, xv, o) }
            });
        } else if threads > 1 {
            let span = k.div_ceil(threads);
            let parts: Vec<Vec<T>> = (0..k.div_ceil(span))
                .into_par_iter()
                .map(|c| {
                    let p0 = c * span;
                    let p1 = (p0 + span).min(k);
                    let mut acc = vec![<T as Element>::zero(); m];
                    // SAFETY: storage rows p0..p1 are in range.
                    unsafe { T::axpy_rows(ap.get().add(p0 * l.cs), l.cs, &xv[p0..p1], &mut acc) };
                    acc
                })
                .collect();
            sum_parts(parts, prod);
        } else {
            prod.iter_mut().for_each(|v| *v = <T as Element>::zero());
            // SAFETY: storage rows 0..k readable.
            unsafe { T::axpy_rows(a, l.cs, xv, prod) }
        }
    } else {
        // General strides.
        let body = |(i, o): (usize, &mut T)| {
            let mut s = <T as Element>::zero();
            for (p, &xp) in xv.iter().enumerate() {
                // SAFETY: i < m, p < k.
                s = s + unsafe { *ap.get().add(i * l.rs + p * l.cs) } * xp;
            }
            *o = s;
        };
        if threads > 1 {
            prod.par_iter_mut()
                .enumerate()
                .with_min_len(m.div_ceil(threads * 2))
                .for_each(body);
        } else {
            prod.iter_mut().enumerate().for_each(body);
        }
    }
    if read_dst {
        for (o, v) in y.iter_mut().zip(tmp) {
            *o = dst_scale * *o + prod_scale * v;
        }
    } else if prod_scale != <T as Element>::one() {
        y.iter_mut().for_each(|o| *o = prod_scale * *o);
    }
}

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

/// A product the `gemm` crate runs much faster with a column-major destination: few rows
/// (a batch of at most 64) against many columns, a row-major lhs and a column-major rhs
/// (`x @ w.t()`, what Linear computes). Measured on 2 cores, release build, f32: 64x784 @
/// 784x256 238 -> 164 us, 32x1024 @ 1024x1024 817 -> 391 us before the transpose; with
/// m >= n, or m = 128, the row-major destination was as fast or faster.
fn wide_short_product(m: usize, n: usize, k: usize, la: MatStrides, lb: MatStrides) -> bool {
    la.cs == 1
        && lb.rs == 1
        && m > 1
        && m <= 64
        && n >= 2 * m
        && m.saturating_mul(n).saturating_mul(k) >= GEMM_THREAD_WORK
}

/// `dst` (cols x rows, row-major) = the transpose of `src` (rows x cols, row-major), in
/// cache-sized tiles.
fn transpose_into<T: Copy>(src: &[T], rows: usize, cols: usize, dst: &mut [T]) {
    const TILE: usize = 32;
    for i0 in (0..rows).step_by(TILE) {
        for j0 in (0..cols).step_by(TILE) {
            for i in i0..(i0 + TILE).min(rows) {
                for j in j0..(j0 + TILE).min(cols) {
                    dst[j * rows + i] = src[i * cols + j];
                }
            }
        }
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
            let (pa, pb) = (a.as_ptr().add(a_offsets[bi]), b.as_ptr().add(b_offsets[bi]));
            // One output column (or row): a matrix-vector product. For a single row, `B^T`
            // is the matrix and the row of `A` the vector; a 1 x 1 product takes whichever
            // operand is contiguous as the "matrix".
            if n == 1 && (m > 1 || la.cs == 1 || lb.rs != 1) {
                if T::gemv_raw(
                    m, k, o, read_dst, pa, la, pb, lb.rs, dst_scale, prod_scale, threaded,
                ) {
                    return;
                }
            } else if m == 1 {
                let bt = MatStrides {
                    rs: lb.cs,
                    cs: lb.rs,
                };
                if T::gemv_raw(
                    n, k, o, read_dst, pb, bt, pa, la.cs, dst_scale, prod_scale, threaded,
                ) {
                    return;
                }
            }
            if threaded && wide_short_product(m, n, k, la, lb) {
                // Computed column-major, then transposed into the row-major output: `gemm`
                // splits such a product badly across threads when written row-major.
                let mut tmp = vec![T::zero(); m * n];
                if read_dst {
                    transpose_into(o, m, n, &mut tmp);
                }
                T::gemm_raw(
                    m,
                    n,
                    k,
                    tmp.as_mut_ptr(),
                    1,
                    m,
                    read_dst,
                    pa,
                    la,
                    pb,
                    lb,
                    dst_scale,
                    prod_scale,
                    threaded,
                );
                transpose_into(&tmp, n, m, o);
                return;
            }
            T::gemm_raw(
                m,
                n,
                k,
                o.as_mut_ptr(),
                n,
                1,
                read_dst,
                pa,
                la,
                pb,
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
    fn wide_short_product_through_the_column_major_path() {
        // x (m x k, row-major) @ w.t() (k x n, column-major), m small and n wide: the path
        // that computes column-major and transposes; with and without reading dst.
        for &(m, n, k) in &[(64, 256, 16), (33, 130, 40), (2, 700, 100)] {
            assert!(wide_short_product(
                m,
                n,
                k,
                MatStrides { rs: k, cs: 1 },
                MatStrides { rs: 1, cs: k }
            ));
            let a: Vec<f64> = (0..m * k).map(|x| ((x * 7) % 11) as f64 - 5.0).collect();
            let w: Vec<f64> = (0..n * k).map(|x| ((x * 3) % 13) as f64 - 6.0).collect();
            let mut b_rm = vec![0.0; k * n];
            for j in 0..n {
                for p in 0..k {
                    b_rm[p * n + j] = w[j * k + p];
                }
            }
            let prod = naive(&a, &b_rm, m, n, k);
            let init: Vec<f64> = (0..m * n).map(|x| (x % 5) as f64).collect();
            for read_dst in [false, true] {
                let mut out = init.clone();
                matmul_batched(
                    &a,
                    &[0],
                    MatStrides { rs: k, cs: 1 },
                    &w,
                    &[0],
                    MatStrides { rs: 1, cs: k },
                    m,
                    n,
                    k,
                    &mut out,
                    read_dst,
                    2.0,
                    3.0,
                );
                let want: Vec<f64> = (0..m * n)
                    .map(|i| if read_dst { 2.0 * init[i] } else { 0.0 } + 3.0 * prod[i])
                    .collect();
                assert_eq!(out, want, "m={m} n={n} k={k} read_dst={read_dst}");
            }
        }
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

    #[test]
    fn matrix_vector_layouts_and_splits() {
        // (m, k) covering serial, row-split, k-split and column-split paths.
        for &(m, k) in &[
            (1, 9),
            (9, 1),
            (5, 37),
            (300, 300),
            (3, 70000),
            (1200, 80),
            (100, 1000),
        ] {
            let a: Vec<f64> = (0..m * k).map(|x| ((x * 7) % 11) as f64 - 5.0).collect();
            let x: Vec<f64> = (0..k).map(|p| ((p * 3) % 5) as f64 - 2.0).collect();
            let want = naive(&a, &x, m, 1, k);
            // Row-major A, column-major A (same values), A stored with doubled strides.
            let mut a_cm = vec![0.0; m * k];
            let mut a_st = vec![0.0; 4 * m * k];
            for i in 0..m {
                for p in 0..k {
                    a_cm[p * m + i] = a[i * k + p];
                    a_st[2 * i * 2 * k + 2 * p] = a[i * k + p];
                }
            }
            let layouts = [
                (&a, MatStrides { rs: k, cs: 1 }),
                (&a_cm, MatStrides { rs: 1, cs: m }),
                (&a_st, MatStrides { rs: 4 * k, cs: 2 }),
            ];
            for (buf, l) in layouts {
                for read_dst in [false, true] {
                    let mut y = vec![1.0f64; m];
                    matmul_batched(
                        buf,
                        &[0],
                        l,
                        &x,
                        &[0],
                        MatStrides { rs: 1, cs: 1 },
                        m,
                        1,
                        k,
                        &mut y,
                        read_dst,
                        0.5,
                        2.0,
                    );
                    for (o, w) in y.iter().zip(&want) {
                        let w = if read_dst { 0.5 + 2.0 * w } else { 2.0 * w };
                        assert!((o - w).abs() < 1e-9, "{m}x{k} {l:?}: {o} vs {w}");
                    }
                    // The same product as one row: x^T A^T.
                    let mut r = vec![0.0f32; m];
                    let bf: Vec<f32> = buf.iter().map(|&v| v as f32).collect();
                    let xf: Vec<f32> = x.iter().map(|&v| v as f32).collect();
                    matmul_batched(
                        &xf,
                        &[0],
                        MatStrides { rs: k, cs: 1 },
                        &bf,
                        &[0],
                        MatStrides { rs: l.cs, cs: l.rs },
                        1,
                        m,
                        k,
                        &mut r,
                        false,
                        0.0,
                        1.0,
                    );
                    for (o, w) in r.iter().zip(&want) {
                        assert!((*o as f64 - w).abs() < 1e-3 * (1.0 + w.abs()), "{o} vs {w}");
                    }
                }
            }
        }
    }
}
