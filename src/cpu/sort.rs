//! Sorting and searching kernels: per-line sort/select (sort, topk, kthvalue, median, mode),
//! binary search (searchsorted), counting (bincount, histc). Ordering follows PyTorch and
//! NumPy: NaN sorts after every number (as the largest value), and NaNs compare equal.

use crate::cpu::reduce::{is_nan, SyncPtr};
use crate::cpu::strided::{chunk_len, coalesce, PAR_THRESHOLD};
use crate::layout::{Dims, Layout};
use rayon::prelude::*;
use std::cmp::Ordering;

/// Total order with NaN last (NaNs equal to each other).
#[inline(always)]
pub fn cmp_nan_last<T: PartialOrd + Copy>(a: T, b: T) -> Ordering {
    match a.partial_cmp(&b) {
        Some(o) => o,
        None => is_nan(a).cmp(&is_nan(b)),
    }
}

/// `a < b` in the NaN-last order.
#[inline(always)]
pub fn lt_nan_last<T: PartialOrd + Copy>(a: T, b: T) -> bool {
    a < b || (!is_nan(a) && is_nan(b))
}

/// Ascending (value, index) order: ties broken by index, which makes unstable sorts and
/// selections produce exactly what a stable sort would.
#[inline(always)]
pub fn cmp_pair_asc<T: PartialOrd + Copy>(a: &(T, i64), b: &(T, i64)) -> Ordering {
    cmp_nan_last(a.0, b.0).then(a.1.cmp(&b.1))
}

/// Descending by value, ties by ascending index (a stable descending sort).
#[inline(always)]
pub fn cmp_pair_desc<T: PartialOrd + Copy>(a: &(T, i64), b: &(T, i64)) -> Ordering {
    cmp_nan_last(b.0, a.0).then(a.1.cmp(&b.1))
}

/// For every line of `layout` along `dim` (in row-major order of the other dims), call
/// `f(line, out_a, out_b)`, where `line` holds the line's `(value, position)` pairs and the
/// two output slices have length `m`. Outputs are laid out contiguously as the input's shape
/// with `dim` resized to `m`.
pub fn line_map<T, A, B, F>(
    src: &[T],
    layout: &Layout,
    dim: usize,
    m: usize,
    f: F,
) -> (Vec<A>, Vec<B>)
where
    T: Copy + Send + Sync,
    A: Copy + Send + Sync + Default,
    B: Copy + Send + Sync + Default,
    F: Fn(&mut Vec<(T, i64)>, &mut [A], &mut [B]) + Sync,
{
    let shape = &layout.shape;
    let n = shape[dim];
    let inner: usize = shape[dim + 1..].iter().product();
    let (mut ks, mut kst) = (Dims::new(), Dims::new());
    for d in 0..shape.len() {
        if d != dim {
            ks.push(shape[d]);
            kst.push(layout.strides[d]);
        }
    }
    let lines: usize = ks.iter().product();
    let mut out_a = vec![A::default(); lines * m];
    let mut out_b = vec![B::default(); lines * m];
    if lines == 0 || m == 0 {
        return (out_a, out_b);
    }
    let kept = coalesce(&ks, [&kst]);
    let st = layout.strides[dim];
    let (pa, pb) = (SyncPtr(out_a.as_mut_ptr()), SyncPtr(out_b.as_mut_ptr()));
    let run = |l0: usize, l1: usize| {
        let mut line: Vec<(T, i64)> = Vec::with_capacity(n);
        let mut a = vec![A::default(); m];
        let mut b = vec![B::default(); m];
        let mut l = l0;
        kept.for_each_run([layout.offset], l0, l1, |[off], len, [kst]| {
            for t in 0..len {
                let base = off + t * kst;
                line.clear();
                line.extend((0..n).map(|p| (src[base + p * st], p as i64)));
                f(&mut line, &mut a, &mut b);
                let (o, i) = (l / inner, l % inner);
                for p in 0..m {
                    let idx = o * m * inner + p * inner + i;
                    // SAFETY: (line l, position p) -> idx is injective and below lines * m;
                    // each line belongs to exactly one task.
                    unsafe {
                        pa.write(idx, a[p]);
                        pb.write(idx, b[p]);
                    }
                }
                l += 1;
            }
        });
    };
    let work = lines.saturating_mul(n.max(1));
    if work >= PAR_THRESHOLD && rayon::current_num_threads() > 1 {
        let per = (chunk_len(work) / n.max(1)).clamp(1, lines);
        (0..lines.div_ceil(per))
            .into_par_iter()
            .for_each(|c| run(c * per, ((c + 1) * per).min(lines)));
    } else {
        run(0, lines);
    }
    (out_a, out_b)
}

/// Sort a line in place by (value, index), ascending or descending.
#[inline]
pub fn sort_line<T: PartialOrd + Copy>(line: &mut [(T, i64)], descending: bool) {
    if descending {
        line.sort_unstable_by(cmp_pair_desc);
    } else {
        line.sort_unstable_by(cmp_pair_asc);
    }
}

/// Index of the first element of `seq` (sorted ascending, NaN last) that is `>= v`
/// (`right = false`) or `> v` (`right = true`). `get(i)` reads the i-th sorted element.
#[inline]
pub fn search<T: PartialOrd + Copy>(
    len: usize,
    get: impl Fn(usize) -> T,
    v: T,
    right: bool,
) -> usize {
    let (mut lo, mut hi) = (0usize, len);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let e = get(mid);
        let go_right = if right {
            !lt_nan_last(v, e)
        } else {
            lt_nan_last(e, v)
        };
        if go_right {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_order() {
        let mut v = vec![
            (3.0f32, 0),
            (f32::NAN, 1),
            (1.0, 2),
            (3.0, 3),
            (f32::NAN, 4),
        ];
        sort_line(&mut v, false);
        let idx: Vec<i64> = v.iter().map(|p| p.1).collect();
        assert_eq!(idx, vec![2, 0, 3, 1, 4]);
        sort_line(&mut v, true);
        let idx: Vec<i64> = v.iter().map(|p| p.1).collect();
        assert_eq!(idx, vec![1, 4, 0, 3, 2]);
    }

    #[test]
    fn lines_along_middle_dim() {
        // shape [2, 3, 2]: sort along dim 1, descending.
        let v: Vec<i32> = vec![1, 6, 5, 2, 3, 4, 9, 7, 8, 8, 7, 9];
        let l = Layout::contiguous(&[2, 3, 2]);
        let (vals, idx) = line_map(&v, &l, 1, 3, |line, a: &mut [i32], b: &mut [i64]| {
            sort_line(line, true);
            for (p, &(x, i)) in line.iter().enumerate() {
                a[p] = x;
                b[p] = i;
            }
        });
        assert_eq!(vals, vec![5, 6, 3, 4, 1, 2, 9, 9, 8, 8, 7, 7]);
        assert_eq!(idx, vec![1, 0, 2, 2, 0, 1, 0, 2, 1, 1, 2, 0]);
    }

    #[test]
    fn searching() {
        let s = [1.0f64, 2.0, 2.0, 3.0, f64::NAN];
        let get = |i: usize| s[i];
        assert_eq!(search(5, get, 2.0, false), 1);
        assert_eq!(search(5, get, 2.0, true), 3);
        assert_eq!(search(5, get, 0.0, false), 0);
        assert_eq!(search(5, get, 9.0, false), 4);
        assert_eq!(search(5, get, f64::NAN, false), 4);
        assert_eq!(search(5, get, f64::NAN, true), 5);
    }
}
