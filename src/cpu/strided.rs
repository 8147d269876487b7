//! Strided iteration: walk a range of a tensor's linear (row-major) positions and get the
//! storage offsets of one or more operands that share a shape. Adjacent dims are coalesced
//! first, so a contiguous operand becomes one long run and the inner loop is a plain slice
//! walk. Large outputs are split into chunks run on rayon's pool.
// Index loops over the N operands read more clearly than zipped iterators here.
#![allow(clippy::needless_range_loop)]

use crate::cpu::simd::with_avx2;
use crate::layout::{Dims, Layout};
use rayon::prelude::*;

/// Below this many elements, kernels stay on the calling thread.
pub const PAR_THRESHOLD: usize = 1 << 15;

/// Chunk length for parallel loops over `n` elements.
pub fn chunk_len(n: usize) -> usize {
    let threads = rayon::current_num_threads().max(1);
    (n / (threads * 4)).max(PAR_THRESHOLD / 2)
}

/// Shape and per-operand strides after merging dims that are contiguous for every operand.
pub struct Coalesced<const N: usize> {
    pub shape: Dims,
    pub strides: [Dims; N],
}

/// Merge adjacent dims `i, i+1` when every operand has `stride[i] == stride[i+1]*shape[i+1]`;
/// drop size-1 dims.
pub fn coalesce<const N: usize>(shape: &[usize], strides: [&[usize]; N]) -> Coalesced<N> {
    let mut out_shape: Dims = Dims::new();
    let mut out_strides: [Dims; N] = std::array::from_fn(|_| Dims::new());
    for d in 0..shape.len() {
        if shape[d] == 1 {
            continue;
        }
        let mergeable = !out_shape.is_empty()
            && (0..N).all(|k| *out_strides[k].last().unwrap() == strides[k][d] * shape[d]);
        if mergeable {
            *out_shape.last_mut().unwrap() *= shape[d];
            for k in 0..N {
                *out_strides[k].last_mut().unwrap() = strides[k][d];
            }
        } else {
            out_shape.push(shape[d]);
            for k in 0..N {
                out_strides[k].push(strides[k][d]);
            }
        }
    }
    if out_shape.is_empty() {
        out_shape.push(1);
        for s in out_strides.iter_mut() {
            s.push(0);
        }
    }
    Coalesced {
        shape: out_shape,
        strides: out_strides,
    }
}

impl<const N: usize> Coalesced<N> {
    /// Call `f(offsets, run_len, inner_strides)` for each run along the innermost dim that
    /// covers linear positions `[start, end)`. `base` is each operand's storage offset.
    #[inline]
    pub fn for_each_run(
        &self,
        base: [usize; N],
        start: usize,
        end: usize,
        mut f: impl FnMut([usize; N], usize, [usize; N]),
    ) {
        if start >= end {
            return;
        }
        let nd = self.shape.len();
        let inner = self.shape[nd - 1];
        let inner_strides: [usize; N] = std::array::from_fn(|k| self.strides[k][nd - 1]);
        // Multi-index of `start`.
        let mut idx: Dims = smallvec::smallvec![0; nd];
        let mut rem = start;
        for d in (0..nd).rev() {
            idx[d] = rem % self.shape[d];
            rem /= self.shape[d];
        }
        let mut offs: [usize; N] = std::array::from_fn(|k| {
            base[k]
                + idx
                    .iter()
                    .zip(self.strides[k].iter())
                    .map(|(i, s)| i * s)
                    .sum::<usize>()
        });
        let mut pos = start;
        while pos < end {
            let run = (inner - idx[nd - 1]).min(end - pos);
            f(offs, run, inner_strides);
            pos += run;
            if pos >= end {
                break;
            }
            // Advance to the start of the next inner run.
            for k in 0..N {
                offs[k] += run * inner_strides[k];
            }
            idx[nd - 1] += run;
            let mut d = nd - 1;
            while idx[d] == self.shape[d] && d > 0 {
                for k in 0..N {
                    offs[k] -= self.shape[d] * self.strides[k][d];
                    offs[k] += self.strides[k][d - 1];
                }
                idx[d] = 0;
                idx[d - 1] += 1;
                d -= 1;
            }
        }
    }
}

/// Storage offset of every element of `layout` in row-major order.
pub fn offsets(layout: &Layout) -> Vec<usize> {
    let n = layout.numel();
    let mut out = Vec::with_capacity(n);
    let c = coalesce(&layout.shape, [&layout.strides]);
    c.for_each_run([layout.offset], 0, n, |[o], len, [s]| {
        for i in 0..len {
            out.push(o + i * s);
        }
    });
    out
}

/// `out[i] = f(src[i])` over two equally long slices, parallel when large.
#[inline(always)]
fn map_contiguous<T: Copy + Send + Sync, U: Copy + Send + Sync>(
    out: &mut [U],
    src: &[T],
    f: &(impl Fn(T) -> U + Sync + Send),
) {
    let n = out.len();
    if n >= PAR_THRESHOLD {
        let cl = chunk_len(n);
        out.par_chunks_mut(cl)
            .zip(src.par_chunks(cl))
            .for_each(|(o, s)| map_slice(o, s, f));
    } else {
        map_slice(out, src, f);
    }
}

/// `out[i] = f(src[element i of layout])`, parallel for large tensors.
pub fn map1<T: Copy + Send + Sync, U: Copy + Send + Sync + Default + 'static>(
    src: &[T],
    layout: &Layout,
    f: impl Fn(T) -> U + Sync + Send,
) -> Vec<U> {
    let n = layout.numel();
    let mut out = crate::cpu::alloc::output_vec_for_overwrite::<U>(n);
    if n == 0 {
        return out;
    }
    if layout.is_contiguous() {
        map_contiguous(&mut out, &src[layout.offset..layout.offset + n], &f);
        return out;
    }
    let c = coalesce(&layout.shape, [&layout.strides]);
    if map_transposed(src, layout.offset, &c, &mut out, &f) {
        return out;
    }
    let run_chunk = |start: usize, o: &mut [U]| {
        let mut w = 0;
        c.for_each_run(
            [layout.offset],
            start,
            start + o.len(),
            |[off], len, [st]| {
                if st == 1 {
                    map_slice(&mut o[w..w + len], &src[off..off + len], &f);
                } else {
                    for i in 0..len {
                        o[w + i] = f(src[off + i * st]);
                    }
                }
                w += len;
            },
        );
    };
    for_each_chunk(&mut out, run_chunk);
    out
}

/// `out[i] = f(a[i], b[i])` where both layouts already have the output's (broadcast) shape.
pub fn map2<
    A: Copy + Send + Sync,
    B: Copy + Send + Sync,
    U: Copy + Send + Sync + Default + 'static,
>(
    a: &[A],
    la: &Layout,
    b: &[B],
    lb: &Layout,
    f: impl Fn(A, B) -> U + Sync + Send,
) -> Vec<U> {
    let n = la.numel();
    let mut out = crate::cpu::alloc::output_vec_for_overwrite::<U>(n);
    if n == 0 {
        return out;
    }
    if la.is_contiguous() && lb.is_contiguous() {
        let a = &a[la.offset..la.offset + n];
        let b = &b[lb.offset..lb.offset + n];
        if n >= PAR_THRESHOLD {
            let cl = chunk_len(n);
            out.par_chunks_mut(cl)
                .zip(a.par_chunks(cl).zip(b.par_chunks(cl)))
                .for_each(|(o, (a, b))| zip_slices(o, a, b, &f));
        } else {
            zip_slices(&mut out, a, b, &f);
        }
        return out;
    }
    // A contiguous tensor and a broadcast scalar (`x * 1.5`, `1 - x`): the one-input loop.
    // The closures that hold the scalar are `move`: one that borrowed it made LLVM reload
    // it every element (it could not prove the output stores leave it alone), and the loop
    // ran 2.5x slower than a same-shape `x * y`.
    let scalar = |l: &Layout| l.strides.iter().all(|&s| s == 0);
    if la.is_contiguous() && scalar(lb) {
        let y = b[lb.offset];
        let f = &f;
        map_contiguous(&mut out, &a[la.offset..la.offset + n], &move |x| f(x, y));
        return out;
    }
    if scalar(la) && lb.is_contiguous() {
        let x = a[la.offset];
        let f = &f;
        map_contiguous(&mut out, &b[lb.offset..lb.offset + n], &move |y| f(x, y));
        return out;
    }
    let c = coalesce(&la.shape, [&la.strides, &lb.strides]);
    let run_chunk = |start: usize, o: &mut [U]| {
        let mut w = 0;
        c.for_each_run(
            [la.offset, lb.offset],
            start,
            start + o.len(),
            |[oa, ob], len, [sa, sb]| {
                let o = &mut o[w..w + len];
                match (sa, sb) {
                    (1, 1) => zip_slices(o, &a[oa..oa + len], &b[ob..ob + len], &f),
                    (1, 0) => {
                        let y = b[ob];
                        let f = &f;
                        map_slice(o, &a[oa..oa + len], &move |x| f(x, y));
                    }
                    (0, 1) => {
                        let x = a[oa];
                        let f = &f;
                        map_slice(o, &b[ob..ob + len], &move |y| f(x, y));
                    }
                    _ => {
                        for (i, o) in o.iter_mut().enumerate() {
                            *o = f(a[oa + i * sa], b[ob + i * sb]);
                        }
                    }
                }
                w += len;
            },
        );
    };
    for_each_chunk(&mut out, run_chunk);
    out
}

/// `run_chunk(start, chunk)` over `out` cut into chunks (`start`: the chunk's first linear
/// position), in parallel when `out` is large.
pub fn for_each_chunk<U: Send>(out: &mut [U], run_chunk: impl Fn(usize, &mut [U]) + Sync) {
    let n = out.len();
    if n >= PAR_THRESHOLD {
        let cl = chunk_len(n);
        out.par_chunks_mut(cl)
            .enumerate()
            .for_each(|(ci, o)| run_chunk(ci * cl, o));
    } else {
        run_chunk(0, out);
    }
}

/// Side of the square tiles of [`map_transposed`]: 16x16 tiles ran a 4096^2 f32 transpose
/// about 3x faster than walking the source column by column (32 and 64 were slower: the
/// source lines of a tile must stay in L1 while its rows are written).
const TRANSPOSE_TILE: usize = 16;

/// The copy pattern of a transposed matrix (`x.t().contiguous()`, `permute(0, 2, 1)`): the
/// output's last dim walks the source with a stride while the dim before it is contiguous in
/// the source. Walking output rows reads one element per source cache line and evicts the
/// line before its neighbours are used; square tiles use each line fully. Returns false
/// (writing nothing) for other patterns.
fn map_transposed<T: Copy + Send + Sync, U: Copy + Send + Sync>(
    src: &[T],
    offset: usize,
    c: &Coalesced<1>,
    out: &mut [U],
    f: &(impl Fn(T) -> U + Sync),
) -> bool {
    const T: usize = TRANSPOSE_TILE;
    let nd = c.shape.len();
    if nd < 2 {
        return false;
    }
    let (rows, cols) = (c.shape[nd - 2], c.shape[nd - 1]);
    let col_stride = c.strides[0][nd - 1];
    if c.strides[0][nd - 2] != 1 || col_stride == 1 || rows < T || cols < T {
        return false;
    }
    let (outer_shape, outer_strides) = (&c.shape[..nd - 2], &c.strides[0][..nd - 2]);
    // Output rows r0.. of plane `p` (a band of at most T rows), tile by tile along the row.
    let band = |p: usize, r0: usize, o: &mut [U]| {
        let mut base = offset + r0;
        let mut rest = p;
        for k in (0..outer_shape.len()).rev() {
            base += (rest % outer_shape[k]) * outer_strides[k];
            rest /= outer_shape[k];
        }
        let band_rows = o.len() / cols;
        for c0 in (0..cols).step_by(T) {
            let c1 = (c0 + T).min(cols);
            for r in 0..band_rows {
                let row = &mut o[r * cols + c0..r * cols + c1];
                for (j, v) in row.iter_mut().enumerate() {
                    *v = f(src[base + r + (c0 + j) * col_stride]);
                }
            }
        }
    };
    let plane = rows * cols;
    let run_plane = |(p, pl): (usize, &mut [U])| {
        if plane >= PAR_THRESHOLD {
            pl.par_chunks_mut(T * cols)
                .enumerate()
                .for_each(|(b, o)| band(p, b * T, o));
        } else {
            pl.chunks_mut(T * cols)
                .enumerate()
                .for_each(|(b, o)| band(p, b * T, o));
        }
    };
    if out.len() >= PAR_THRESHOLD && plane < PAR_THRESHOLD {
        out.par_chunks_mut(plane).enumerate().for_each(run_plane);
    } else {
        out.chunks_mut(plane).enumerate().for_each(run_plane);
    }
    true
}

/// `out[i] = f(src[i])` over two equally long slices: the vectorisable inner loop.
#[inline(always)]
fn map_slice<T: Copy, U: Copy>(out: &mut [U], src: &[T], f: &impl Fn(T) -> U) {
    with_avx2(|| {
        for (o, &s) in out.iter_mut().zip(src) {
            *o = f(s);
        }
    })
}

/// `out[i] = f(a[i], b[i])` over three equally long slices.
#[inline(always)]
fn zip_slices<A: Copy, B: Copy, U: Copy>(out: &mut [U], a: &[A], b: &[B], f: &impl Fn(A, B) -> U) {
    with_avx2(|| {
        for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
            *o = f(x, y);
        }
    })
}

/// In place `dst[i] = f(dst[i])` over a contiguous destination, parallel when large.
pub fn update1<T: Copy + Send + Sync>(dst: &mut [T], f: impl Fn(T) -> T + Sync + Send) {
    let run = |d: &mut [T]| {
        with_avx2(|| {
            for v in d.iter_mut() {
                *v = f(*v);
            }
        })
    };
    for_each_chunk(dst, |_, d| run(d));
}

/// In place `dst[i] = f(dst[i], src[element i of ls])` over a contiguous destination; `ls`
/// already has the destination's (row-major) shape, broadcast applied. Parallel when large.
/// `src` must not alias `dst` (the borrow checker sees to it).
pub fn update2<T: Copy + Send + Sync, S: Copy + Send + Sync>(
    dst: &mut [T],
    src: &[S],
    ls: &Layout,
    f: impl Fn(T, S) -> T + Sync + Send,
) {
    let n = dst.len();
    debug_assert_eq!(n, ls.numel());
    if n == 0 {
        return;
    }
    let c = coalesce(&ls.shape, [&ls.strides]);
    let run_chunk = |start: usize, d: &mut [T]| {
        let mut w = 0;
        c.for_each_run([ls.offset], start, start + d.len(), |[os], len, [st]| {
            let d = &mut d[w..w + len];
            with_avx2(|| match st {
                1 => {
                    for (d, &y) in d.iter_mut().zip(&src[os..os + len]) {
                        *d = f(*d, y);
                    }
                }
                0 => {
                    let y = src[os];
                    for d in d.iter_mut() {
                        *d = f(*d, y);
                    }
                }
                _ => {
                    for (i, d) in d.iter_mut().enumerate() {
                        *d = f(*d, src[os + i * st]);
                    }
                }
            });
            w += len;
        });
    };
    for_each_chunk(dst, run_chunk);
}

/// In place: `dst[e] = f(dst[e], src[e])` for every element `e` of `ld`, where `ls` has
/// `ld`'s shape (broadcast already applied). Sequential for strided destinations.
pub fn zip_assign<T: Copy, S: Copy>(
    dst: &mut [T],
    ld: &Layout,
    src: &[S],
    ls: &Layout,
    f: impl Fn(T, S) -> T,
) {
    let n = ld.numel();
    if n == 0 {
        return;
    }
    let c = coalesce(&ld.shape, [&ld.strides, &ls.strides]);
    c.for_each_run([ld.offset, ls.offset], 0, n, |[od, os], len, [sd, ss]| {
        for i in 0..len {
            let d = &mut dst[od + i * sd];
            *d = f(*d, src[os + i * ss]);
        }
    });
}
