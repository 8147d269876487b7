//! Data-movement kernels for indexing, gather/scatter, joins and flips.
//!
//! Most of these ops are "read (or write) element `r, k` of the output at storage offset
//! `outer[r] + inner[k]`": a [`Plan`]. `outer` enumerates the leading output dims (those that
//! are indexed, flipped, repeated...), `inner` the trailing dims that are plain strided walks
//! (often one contiguous run, copied with `copy_from_slice`). Gathers run on rayon's pool
//! when large; scatters are sequential because indices may repeat.

use super::strided::{self, PAR_THRESHOLD};
use crate::layout::{Dims, Layout};
use rayon::prelude::*;

/// The trailing part of a [`Plan`]: a contiguous run, or explicit relative offsets.
#[derive(Debug, Clone)]
pub enum Inner {
    /// Offsets `start..start + len`.
    Range { start: usize, len: usize },
    /// Explicit offsets.
    List(Vec<usize>),
}

impl Inner {
    pub fn len(&self) -> usize {
        match self {
            Inner::Range { len, .. } => *len,
            Inner::List(l) => l.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Relative offsets of a strided block (`shape`, `strides`), row-major.
    pub fn from_dims(shape: &[usize], strides: &[usize]) -> Inner {
        let l = Layout {
            shape: shape.into(),
            strides: strides.into(),
            offset: 0,
        };
        if l.is_contiguous() {
            Inner::Range {
                start: 0,
                len: l.numel(),
            }
        } else {
            Inner::List(strided::offsets(&l))
        }
    }
}

/// How each output dim picks positions in the source dim it maps to.
#[derive(Debug, Clone)]
pub enum DimMap {
    /// Output position `i` reads source position `i` (same size).
    Id,
    /// Output position `i` reads source position `map[i]` (pre-validated).
    Map(Vec<usize>),
}

/// Storage offsets of every element of an output, split as `outer x inner`.
#[derive(Debug, Clone)]
pub struct Plan {
    pub outer: Vec<usize>,
    pub inner: Inner,
}

/// All sums `base + t0[i0] + t1[i1] + ...` in row-major order.
pub fn cross_offsets(base: usize, tables: &[Vec<usize>]) -> Vec<usize> {
    let n: usize = tables.iter().map(|t| t.len()).product();
    let mut out = Vec::with_capacity(n);
    out.push(base);
    for t in tables {
        let mut next = Vec::with_capacity(out.len() * t.len());
        for &o in &out {
            next.extend(t.iter().map(|&x| o + x));
        }
        out = next;
    }
    out
}

impl Plan {
    pub fn numel(&self) -> usize {
        self.outer.len() * self.inner.len()
    }

    /// A plan reading `layout` through per-dim maps (`maps.len() == layout.ndim()`).
    /// Returns the plan and the output shape.
    pub fn from_maps(layout: &Layout, maps: &[DimMap]) -> (Plan, Dims) {
        let n = layout.ndim();
        debug_assert_eq!(maps.len(), n);
        let shape: Dims = maps
            .iter()
            .enumerate()
            .map(|(k, m)| match m {
                DimMap::Id => layout.shape[k],
                DimMap::Map(v) => v.len(),
            })
            .collect();
        let table = |k: usize| -> Vec<usize> {
            let st = layout.strides[k];
            match &maps[k] {
                DimMap::Id => (0..layout.shape[k]).map(|i| i * st).collect(),
                DimMap::Map(v) => v.iter().map(|&i| i * st).collect(),
            }
        };
        // Trailing identity dims form the inner block; if there are none, the last dim's
        // table is the inner list.
        let mut split = n;
        while split > 0 && matches!(maps[split - 1], DimMap::Id) {
            split -= 1;
        }
        if split == n && n > 0 {
            let tables: Vec<Vec<usize>> = (0..n - 1).map(table).collect();
            let outer = cross_offsets(layout.offset, &tables);
            return (
                Plan {
                    outer,
                    inner: Inner::List(table(n - 1)),
                },
                shape,
            );
        }
        let tables: Vec<Vec<usize>> = (0..split).map(table).collect();
        let outer = cross_offsets(layout.offset, &tables);
        let inner = Inner::from_dims(&layout.shape[split..], &layout.strides[split..]);
        (Plan { outer, inner }, shape)
    }
}

/// Gather `src` through `plan` into a new row-major buffer.
pub fn gather<T: Copy + Send + Sync + Default + 'static>(src: &[T], plan: &Plan) -> Vec<T> {
    let ni = plan.inner.len();
    let n = plan.numel();
    let mut out = crate::cpu::alloc::output_vec_for_overwrite::<T>(n);
    if n == 0 {
        return out;
    }
    if let Inner::Range { start, len: 1 } = plan.inner {
        // One element per row: a plain parallel gather.
        let one = |(o, &b): (&mut T, &usize)| *o = src[b + start];
        if n >= PAR_THRESHOLD {
            out.par_iter_mut()
                .zip(plan.outer.par_iter())
                .with_min_len(4096)
                .for_each(one);
        } else {
            out.iter_mut().zip(&plan.outer).for_each(one);
        }
        return out;
    }
    let fill = |o: &mut [T], base: usize| match &plan.inner {
        Inner::Range { start, len } => o.copy_from_slice(&src[base + start..base + start + len]),
        Inner::List(l) => {
            for (d, &k) in o.iter_mut().zip(l) {
                *d = src[base + k];
            }
        }
    };
    if n >= PAR_THRESHOLD {
        let min_rows = (PAR_THRESHOLD / 4 / ni).max(1);
        out.par_chunks_mut(ni)
            .zip(plan.outer.par_iter())
            .with_min_len(min_rows)
            .for_each(|(o, &b)| fill(o, b));
    } else {
        for (o, &b) in out.chunks_mut(ni).zip(&plan.outer) {
            fill(o, b);
        }
    }
    out
}

/// `out[i] = src[base_i + idx[i] * stride]`, where `base_i` is the storage offset of element
/// `i` of `base` (row-major) and `idx` holds pre-validated, non-negative indices in the same
/// order (the kernel of `gather`).
pub fn gather_along<T: Copy + Send + Sync + Default>(
    src: &[T],
    base: &Layout,
    idx: &[i64],
    stride: usize,
) -> Vec<T> {
    let n = base.numel();
    let mut out = crate::cpu::alloc::output_vec::<T>(n);
    if n == 0 {
        return out;
    }
    let c = strided::coalesce(&base.shape, [&base.strides]);
    let run_chunk = |start: usize, o: &mut [T]| {
        let mut w = 0;
        c.for_each_run([base.offset], start, start + o.len(), |[off], len, [s]| {
            let ix = &idx[start + w..start + w + len];
            for (i, (d, &k)) in o[w..w + len].iter_mut().zip(ix).enumerate() {
                *d = src[off + i * s + k as usize * stride];
            }
            w += len;
        });
    };
    if n >= PAR_THRESHOLD {
        let cl = strided::chunk_len(n);
        out.par_chunks_mut(cl)
            .enumerate()
            .for_each(|(ci, o)| run_chunk(ci * cl, o));
    } else {
        run_chunk(0, &mut out);
    }
    out
}

/// `dst[e] = f(dst[e], vals[i])` for the `i`-th element `e` of `plan` (row-major order).
/// Sequential, so repeated positions see each write in order (the last assignment wins).
pub fn scatter<T: Copy, V: Copy>(dst: &mut [T], plan: &Plan, vals: &[V], f: impl Fn(T, V) -> T) {
    let ni = plan.inner.len();
    if ni == 0 {
        return;
    }
    for (r, &base) in plan.outer.iter().enumerate() {
        let v = &vals[r * ni..(r + 1) * ni];
        match &plan.inner {
            Inner::Range { start, len } => {
                for (d, &x) in dst[base + start..base + start + len].iter_mut().zip(v) {
                    *d = f(*d, x);
                }
            }
            Inner::List(l) => {
                for (&k, &x) in l.iter().zip(v) {
                    let d = &mut dst[base + k];
                    *d = f(*d, x);
                }
            }
        }
    }
}

/// Write `value` at every element of `plan`.
pub fn fill<T: Copy>(dst: &mut [T], plan: &Plan, value: T) {
    if plan.inner.is_empty() {
        return;
    }
    for &base in &plan.outer {
        match &plan.inner {
            Inner::Range { start, len } => dst[base + start..base + start + len].fill(value),
            Inner::List(l) => {
                for &k in l {
                    dst[base + k] = value;
                }
            }
        }
    }
}

/// `out[i] = f(a[i], b[i], c[i])` where all three layouts have the output's shape.
pub fn map3<A, B, C, U>(
    a: (&[A], &Layout),
    b: (&[B], &Layout),
    c: (&[C], &Layout),
    f: impl Fn(A, B, C) -> U + Sync + Send,
) -> Vec<U>
where
    A: Copy + Send + Sync,
    B: Copy + Send + Sync,
    C: Copy + Send + Sync,
    U: Copy + Send + Sync + Default + 'static,
{
    let (la, lb, lc) = (a.1, b.1, c.1);
    let (a, b, c) = (a.0, b.0, c.0);
    let n = la.numel();
    // Every element is written below.
    let mut out = crate::cpu::alloc::output_vec_for_overwrite::<U>(n);
    if n == 0 {
        return out;
    }
    let co = strided::coalesce(&la.shape, [&la.strides, &lb.strides, &lc.strides]);
    let run_chunk = |start: usize, o: &mut [U]| {
        let mut w = 0;
        co.for_each_run(
            [la.offset, lb.offset, lc.offset],
            start,
            start + o.len(),
            |[oa, ob, oc], len, [sa, sb, sc]| {
                for (i, o) in o[w..w + len].iter_mut().enumerate() {
                    *o = f(a[oa + i * sa], b[ob + i * sb], c[oc + i * sc]);
                }
                w += len;
            },
        );
    };
    if n >= PAR_THRESHOLD {
        let cl = strided::chunk_len(n);
        out.par_chunks_mut(cl)
            .enumerate()
            .for_each(|(ci, o)| run_chunk(ci * cl, o));
    } else {
        run_chunk(0, &mut out);
    }
    out
}

/// Row-major positions of the `true` flags.
pub fn true_positions(flags: &[bool]) -> Vec<usize> {
    if flags.len() >= PAR_THRESHOLD {
        let cl = strided::chunk_len(flags.len());
        let parts: Vec<Vec<usize>> = flags
            .par_chunks(cl)
            .enumerate()
            .map(|(ci, c)| {
                c.iter()
                    .enumerate()
                    .filter(|(_, &f)| f)
                    .map(|(i, _)| ci * cl + i)
                    .collect()
            })
            .collect();
        parts.concat()
    } else {
        flags
            .iter()
            .enumerate()
            .filter(|(_, &f)| f)
            .map(|(i, _)| i)
            .collect()
    }
}

/// `(positions.len(), shape.len())` row-major coordinates of linear positions in `shape`.
pub fn unravel(positions: &[usize], shape: &[usize]) -> Vec<i64> {
    let nd = shape.len();
    let mut out = vec![0i64; positions.len() * nd];
    if nd == 0 || positions.is_empty() {
        return out;
    }
    let one = |o: &mut [i64], p: usize| {
        let mut rem = p;
        for d in (0..nd).rev() {
            o[d] = (rem % shape[d]) as i64;
            rem /= shape[d];
        }
    };
    if out.len() >= PAR_THRESHOLD {
        out.par_chunks_mut(nd)
            .zip(positions.par_iter())
            .with_min_len(1024)
            .for_each(|(o, &p)| one(o, p));
    } else {
        for (o, &p) in out.chunks_mut(nd).zip(positions) {
            one(o, p);
        }
    }
    out
}

/// Storage offset of the element at row-major position `pos` of `layout`.
pub fn offset_of(layout: &Layout, pos: usize) -> usize {
    let mut rem = pos;
    let mut off = layout.offset;
    for d in (0..layout.ndim()).rev() {
        let s = layout.shape[d];
        off += (rem % s) * layout.strides[d];
        rem /= s;
    }
    off
}

/// Storage offsets of the elements at row-major positions `pos` of `layout` (positions are
/// pre-validated; a contiguous layout just adds its offset).
pub fn offsets_of_positions(layout: &Layout, pos: &[usize]) -> Vec<usize> {
    let contiguous = layout.is_contiguous();
    let one = |&p: &usize| {
        if contiguous {
            layout.offset + p
        } else {
            offset_of(layout, p)
        }
    };
    if pos.len() >= PAR_THRESHOLD {
        pos.par_iter().with_min_len(4096).map(one).collect()
    } else {
        pos.iter().map(one).collect()
    }
}

/// Zero the part of each `rows x cols` matrix of a row-major buffer outside the band kept by
/// `tril`/`triu` with diagonal `k` (`lower`: keep `j <= i + k`; else keep `j >= i + k`).
pub fn band_zero<T: Copy + Send + Sync + Default>(
    data: &mut [T],
    rows: usize,
    cols: usize,
    k: i64,
    lower: bool,
) {
    if cols == 0 || rows == 0 {
        return;
    }
    let zero_row = |r: usize, row: &mut [T]| {
        let i = (r % rows) as i64;
        let c = cols as i64;
        let (lo, hi) = if lower {
            ((i + k + 1).clamp(0, c), c)
        } else {
            (0, (i + k).clamp(0, c))
        };
        row[lo as usize..hi as usize].fill(T::default());
    };
    if data.len() >= PAR_THRESHOLD {
        data.par_chunks_mut(cols)
            .enumerate()
            .with_min_len(64)
            .for_each(|(r, row)| zero_row(r, row));
    } else {
        for (r, row) in data.chunks_mut(cols).enumerate() {
            zero_row(r, row);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_flip_and_gather() {
        let l = Layout::contiguous(&[2, 3]);
        let src: Vec<i32> = (0..6).collect();
        let (p, shape) = Plan::from_maps(&l, &[DimMap::Map(vec![1, 0]), DimMap::Id]);
        assert_eq!(&shape[..], &[2, 3]);
        assert_eq!(gather(&src, &p), vec![3, 4, 5, 0, 1, 2]);
        let (p, _) = Plan::from_maps(&l, &[DimMap::Id, DimMap::Map(vec![2, 1, 0])]);
        assert_eq!(gather(&src, &p), vec![2, 1, 0, 5, 4, 3]);
        let mut dst = vec![0i32; 6];
        scatter(&mut dst, &p, &[1, 2, 3, 4, 5, 6], |_, v| v);
        assert_eq!(dst, vec![3, 2, 1, 6, 5, 4]);
    }

    #[test]
    fn unravel_and_band() {
        assert_eq!(unravel(&[0, 5], &[2, 3]), vec![0, 0, 1, 2]);
        let mut m: Vec<i32> = vec![1; 9];
        band_zero(&mut m, 3, 3, 0, true);
        assert_eq!(m, vec![1, 0, 0, 1, 1, 0, 1, 1, 1]);
        assert_eq!(true_positions(&[false, true, true]), vec![1, 2]);
    }
}
