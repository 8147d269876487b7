//! Sorting, selection and searching: `sort`, `argsort`, `topk`, `kthvalue`, `median`,
//! `nanmedian`, `mode`, `unique`, `unique_consecutive`, `searchsorted`, `bucketize`,
//! `bincount`, `histc`. NaN sorts as the largest value, as in PyTorch. Kernels live in
//! `crate::cpu::sort`.

use super::host_fallback::cuda_via_host;
use super::Tensor;
use crate::cpu::reduce::is_nan;
use crate::cpu::sort::{cmp_nan_last, cmp_pair_asc, cmp_pair_desc, line_map, search, sort_line};
use crate::cpu::strided::PAR_THRESHOLD;
use crate::layout::Layout;
use crate::{promote_types, with_dtype, DType, Element, Error, Result, Scalar};
use rayon::prelude::*;
use std::cmp::Ordering;

/// Result of `unique`/`unique_consecutive`: values, then inverse indices and counts when asked.
pub struct Unique {
    pub values: Tensor,
    pub inverse: Option<Tensor>,
    pub counts: Option<Tensor>,
}

/// Shape with dim `d` set to `m`, or removed when `m` is `None`.
fn with_dim(shape: &[usize], d: usize, m: Option<usize>) -> Vec<usize> {
    let mut s = shape.to_vec();
    match m {
        Some(m) => s[d] = m,
        None => {
            s.remove(d);
        }
    }
    s
}

impl Tensor {
    /// 0-d tensors act as one-element vectors for the line ops; returns the view and the
    /// normalised dim.
    fn as_lines(&self, dim: i64) -> Result<(Tensor, usize)> {
        let d = self.dim(dim)?;
        if self.ndim() == 0 {
            return Ok((self.with_layout(Layout::contiguous(&[1])), 0));
        }
        Ok((self.clone(), d))
    }

    /// Sort along `dim`; returns (values, indices). Ties keep their original order, so the
    /// result is the stable sort whether or not `stable` was asked for.
    pub(crate) fn sort_raw(&self, dim: i64, descending: bool) -> Result<(Tensor, Tensor)> {
        if self.device().is_cuda() {
            return self.sort_cuda(dim, descending);
        }
        let (x, d) = self.as_lines(dim)?;
        let n = x.shape()[d];
        let (v, i) = with_dtype!(x.dtype(), T, {
            let (v, i) = line_map(
                x.storage_slice::<T>()?,
                x.layout(),
                d,
                n,
                |line, a: &mut [T], b: &mut [i64]| {
                    sort_line(line, descending);
                    for (p, &(val, idx)) in line.iter().enumerate() {
                        a[p] = val;
                        b[p] = idx;
                    }
                },
            );
            (
                Tensor::from_vec_unchecked(v, self.shape()),
                Tensor::from_vec_unchecked(i, self.shape()),
            )
        });
        Ok((v, i))
    }

    /// `sort_raw` of a CUDA tensor: `sort.cu` on the rows of a copy with `dim` last.
    fn sort_cuda(&self, dim: i64, descending: bool) -> Result<(Tensor, Tensor)> {
        let (x, d) = self.as_lines(dim)?;
        let n = x.shape()[d];
        if n <= 1 || x.numel() == 0 {
            let zeros =
                crate::cuda::ops::full_on(self, self.shape(), crate::Scalar::Int(0), DType::I64)?;
            return Ok((self.clone_data(), zeros));
        }
        let last = x.ndim() as i64 - 1;
        let xt = x.transpose(d as i64, last)?;
        let rows = x.numel() / n;
        let (v, i) = crate::cuda::reduce_ops::sort_rows(&xt, rows, n, descending)?;
        let back = |t: Tensor| -> Result<Tensor> {
            let t = t
                .reshape_contiguous(xt.shape())
                .transpose(d as i64, last)?
                .contiguous();
            Ok(t.reshape_contiguous(self.shape()))
        };
        Ok((back(v)?, back(i)?))
    }

    /// Indices that sort along `dim`.
    pub fn argsort(&self, dim: i64, descending: bool) -> Result<Tensor> {
        Ok(self.sort(dim, descending)?.1)
    }

    /// Sort along dim 0 (values only).
    pub fn msort(&self) -> Result<Tensor> {
        Ok(self.sort(0, false)?.0)
    }

    /// The `k` largest (or smallest) elements along `dim`, sorted, with their indices.
    pub(crate) fn topk_raw(&self, k: i64, dim: i64, largest: bool) -> Result<(Tensor, Tensor)> {
        let (x, d) = self.as_lines(dim)?;
        let n = x.shape()[d];
        if k < 0 || k as usize > n {
            return Err(Error::Runtime("selected index k out of range".into()));
        }
        if self.device().is_cuda() {
            // The first k of the rows sorted the wanted way.
            let (v, i) = self.sort_cuda(dim, largest)?;
            let first = |t: Tensor| -> Result<Tensor> {
                Ok(if self.ndim() == 0 {
                    t
                } else {
                    t.narrow(d as i64, 0, k)?.contiguous()
                })
            };
            return Ok((first(v)?, first(i)?));
        }
        let k = k as usize;
        let shape = if self.ndim() == 0 {
            vec![]
        } else {
            with_dim(self.shape(), d, Some(k))
        };
        Ok(with_dtype!(x.dtype(), T, {
            let (v, i) = line_map(
                x.storage_slice::<T>()?,
                x.layout(),
                d,
                k,
                |line, a: &mut [T], b: &mut [i64]| {
                    let cmp = if largest {
                        cmp_pair_desc::<T>
                    } else {
                        cmp_pair_asc::<T>
                    };
                    if k < line.len() {
                        line.select_nth_unstable_by(k - 1, cmp);
                    }
                    line[..k].sort_unstable_by(cmp);
                    for (p, &(val, idx)) in line[..k].iter().enumerate() {
                        a[p] = val;
                        b[p] = idx;
                    }
                },
            );
            (
                Tensor::from_vec_unchecked(v, &shape),
                Tensor::from_vec_unchecked(i, &shape),
            )
        }))
    }

    /// Run a one-result-per-line selection; output drops `dim` unless `keepdim`.
    fn select_per_line<T: Element>(
        &self,
        x: &Tensor,
        d: usize,
        keepdim: bool,
        f: impl Fn(&mut Vec<(T, i64)>) -> (T, i64) + Sync,
    ) -> Result<(Tensor, Tensor)> {
        let (v, i) = line_map(
            x.storage_slice::<T>()?,
            x.layout(),
            d,
            1,
            |line, a: &mut [T], b: &mut [i64]| {
                let (val, idx) = f(line);
                a[0] = val;
                b[0] = idx;
            },
        );
        let shape = if self.ndim() == 0 {
            vec![]
        } else {
            with_dim(self.shape(), d, if keepdim { Some(1) } else { None })
        };
        Ok((
            Tensor::from_vec_unchecked(v, &shape),
            Tensor::from_vec_unchecked(i, &shape),
        ))
    }

    /// The `k`-th smallest element (1-based) along `dim` and its index.
    pub(crate) fn kthvalue_raw(&self, k: i64, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let (x, d) = self.as_lines(dim)?;
        let n = x.shape()[d];
        if n == 0 {
            return Err(Error::Index(format!(
                "kthvalue(): Expected reduction dim {d} to have non-zero size."
            )));
        }
        if self.numel() == 0 {
            return Err(Error::Runtime(
                "cannot perform reduction function kthvalue on tensor with no elements because the operation does not have an identity".into(),
            ));
        }
        if k < 1 || k as usize > n {
            return Err(Error::Runtime(format!(
                "kthvalue(): selected number k out of range for dimension {d}"
            )));
        }
        if self.device().is_cuda() {
            // Column k - 1 of the rows sorted ascending ((value, index) order, as below).
            let (v, i) = self.sort_cuda(dim, false)?;
            let pick = |t: Tensor| -> Result<Tensor> {
                if self.ndim() == 0 {
                    return Ok(t);
                }
                let c = t.narrow(d as i64, k - 1, 1)?.contiguous();
                Ok(if keepdim {
                    c
                } else {
                    c.squeeze(Some(&[d as i64]))?
                })
            };
            return Ok((pick(v)?, pick(i)?));
        }
        let k = k as usize;
        with_dtype!(x.dtype(), T, {
            self.select_per_line::<T>(&x, d, keepdim, |line| {
                line.select_nth_unstable_by(k - 1, cmp_pair_asc);
                line[k - 1]
            })
        })
    }

    fn median_impl(
        &self,
        dim: Option<i64>,
        keepdim: bool,
        ignore_nan: bool,
    ) -> Result<(Tensor, Tensor)> {
        match dim {
            None => {
                if self.numel() == 0 {
                    // PyTorch: NaN for floats, the dtype's lowest value otherwise, index 0.
                    let v = match self.dtype() {
                        DType::I64 => Scalar::Int(i64::MIN),
                        DType::I32 => Scalar::Int(i32::MIN.into()),
                        DType::I16 => Scalar::Int(i16::MIN.into()),
                        DType::I8 => Scalar::Int(i8::MIN.into()),
                        DType::U8 | DType::Bool => Scalar::Int(0),
                        _ => Scalar::Float(f64::NAN),
                    };
                    return Ok((
                        Tensor::full_on(self.device(), &[], v, self.dtype())?,
                        Tensor::full_on(self.device(), &[], Scalar::Int(0), DType::I64)?,
                    ));
                }
                let flat = self.reshape(&[-1])?;
                if self.device().is_cuda() {
                    let (v, i) = flat.median_cuda(0, false, ignore_nan)?;
                    return Ok((v.reshape(&[])?, i.reshape(&[])?));
                }
                with_dtype!(self.dtype(), T, {
                    let (v, i) = flat
                        .select_per_line::<T>(&flat, 0, false, |l| median_of_line(l, ignore_nan))?;
                    Ok((v.with_layout(Layout::contiguous(&[])), i))
                })
            }
            Some(dim) => {
                let (x, d) = self.as_lines(dim)?;
                if x.shape()[d] == 0 {
                    // (PyTorch names median() for nanmedian too)
                    return Err(Error::Index(format!(
                        "median(): Expected reduction dim {d} to have non-zero size."
                    )));
                }
                if x.device().is_cuda() {
                    let (v, i) = x.median_cuda(d, keepdim, ignore_nan)?;
                    if self.ndim() == 0 {
                        return Ok((v.reshape(&[])?, i.reshape(&[])?));
                    }
                    return Ok((v, i));
                }
                with_dtype!(x.dtype(), T, {
                    self.select_per_line::<T>(&x, d, keepdim, |l| median_of_line(l, ignore_nan))
                })
            }
        }
    }

    /// `median_impl` along `d` of a CUDA tensor (at least 1-d, lines not empty), from ops with
    /// CUDA kernels: a stable sort of each line, then a gather at the median's position, or
    /// at the first NaN's (NaN sorts last) when the line has one and NaN is not ignored.
    fn median_cuda(&self, d: usize, keepdim: bool, ignore_nan: bool) -> Result<(Tensor, Tensor)> {
        use super::index::TensorOrScalar;
        let n = self.shape()[d] as i64;
        let (vals, idx) = self.sort_raw(d as i64, false)?;
        let mut line_shape: Vec<i64> = self.shape().iter().map(|&s| s as i64).collect();
        line_shape[d] = 1;
        let pos = if self.dtype().is_floating_point() {
            let nans = self.unary(super::UnaryOp::IsNan)?.sum_raw(
                Some(&[d as i64]),
                true,
                Some(DType::I64),
            )?;
            if ignore_nan {
                // (valid - 1) / 2 over the non-NaN elements; 0 (a NaN) when there are none.
                let valid_minus_one =
                    nans.binary_scalar(Scalar::Int(n - 1), super::BinaryOp::Sub, true)?;
                valid_minus_one
                    .binary_scalar(Scalar::Int(0), super::BinaryOp::Maximum, false)?
                    .binary_scalar(Scalar::Int(2), super::BinaryOp::FloorDiv, false)?
            } else {
                let first_nan = nans.binary_scalar(Scalar::Int(n), super::BinaryOp::Sub, true)?;
                let has_nan = nans.binary_scalar(Scalar::Int(0), super::BinaryOp::Gt, false)?;
                Tensor::where_raw(
                    &has_nan,
                    &TensorOrScalar::Tensor(first_nan),
                    &TensorOrScalar::Scalar(Scalar::Int((n - 1) / 2)),
                )?
            }
        } else {
            let line_shape: Vec<usize> = line_shape.iter().map(|&s| s as usize).collect();
            Tensor::full_on(
                self.device(),
                &line_shape,
                Scalar::Int((n - 1) / 2),
                DType::I64,
            )?
        };
        let (v, i) = (
            vals.gather_raw(d as i64, &pos)?,
            idx.gather_raw(d as i64, &pos)?,
        );
        if keepdim {
            return Ok((v, i));
        }
        let dims = [d as i64];
        Ok((v.squeeze(Some(&dims))?, i.squeeze(Some(&dims))?))
    }

    /// `mode` along `d` on the device, as the CPU's: after a stable sort, equal values form
    /// runs (NaNs are never equal, so each is its own run); the mode is the first longest run
    /// (the smallest such value) and its index the last of the run (the largest original
    /// index of that value).
    fn mode_cuda(&self, d: usize, keepdim: bool) -> Result<(Tensor, Tensor)> {
        use super::index::TensorOrScalar as TS;
        use super::BinaryOp::{Ne, Sub};
        let n = self.shape()[d] as i64;
        let di = d as i64;
        let (sv, si) = self.sort_raw(di, false)?;
        // Positions 0..n along d, shaped to broadcast against the sorted lines.
        let mut pshape = vec![1i64; self.ndim()];
        pshape[d] = n;
        let pos = Tensor::arange(
            Scalar::Int(0),
            Scalar::Int(n),
            Scalar::Int(1),
            Some(DType::I64),
        )?
        .to_device(self.device())?
        .reshape(&pshape)?;
        let differs = sv
            .narrow(di, 0, n - 1)?
            .binary(&sv.narrow(di, 1, n - 1)?, Ne)?;
        let mut edge_shape = self.shape().to_vec();
        edge_shape[d] = 1;
        let edge = Tensor::full_on(self.device(), &edge_shape, Scalar::Bool(true), DType::Bool)?;
        let starts = super::join::cat(&[edge.clone(), differs.clone()], di)?;
        let ends = super::join::cat(&[differs, edge], di)?;
        let zero = TS::Scalar(Scalar::Int(0));
        let run_start = Tensor::where_raw(&starts, &TS::Tensor(pos.clone()), &zero)?
            .cummax_raw(di)?
            .0;
        let run_len = pos.binary(&run_start, Sub)?;
        let score = Tensor::where_raw(&ends, &TS::Tensor(run_len), &TS::Scalar(Scalar::Int(-1)))?;
        let best = score.argmax(Some(di), true)?;
        let (v, i) = (sv.gather_raw(di, &best)?, si.gather_raw(di, &best)?);
        if keepdim {
            return Ok((v, i));
        }
        let dims = [di];
        Ok((v.squeeze(Some(&dims))?, i.squeeze(Some(&dims))?))
    }

    /// Lower median of all elements (NaN if any is NaN), as a 0-d tensor.
    pub(crate) fn median_all_raw(&self) -> Result<Tensor> {
        Ok(self.median_impl(None, false, false)?.0)
    }

    /// Lower median along `dim` and its index (NaN and its first index if the line has NaN).
    pub(crate) fn median_dim_raw(&self, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
        self.median_impl(Some(dim), keepdim, false)
    }

    /// Lower median of the non-NaN elements.
    pub(crate) fn nanmedian_all_raw(&self) -> Result<Tensor> {
        Ok(self.median_impl(None, false, true)?.0)
    }

    /// Lower median of the non-NaN elements along `dim`, and its index.
    pub(crate) fn nanmedian_dim_raw(&self, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
        self.median_impl(Some(dim), keepdim, true)
    }

    /// Most frequent value along `dim` (the smallest on ties) and the index of its last
    /// occurrence.
    pub(crate) fn mode_raw(&self, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let (x, d) = self.as_lines(dim)?;
        if x.shape()[d] == 0 {
            return Err(Error::Index(format!(
                "mode(): Expected reduction dim {d} to have non-zero size."
            )));
        }
        if self.device().is_cuda() {
            if self.ndim() == 0 {
                // One element: itself, at index 0.
                let index = Tensor::full_on(self.device(), &[], Scalar::Int(0), DType::I64)?;
                return Ok((self.contiguous(), index));
            }
            return self.mode_cuda(d, keepdim);
        }
        with_dtype!(x.dtype(), T, {
            self.select_per_line::<T>(&x, d, keepdim, |line| {
                line.sort_unstable_by(cmp_pair_asc);
                let (mut best, mut best_n, mut run) = (line[0], 0usize, 0usize);
                for i in 0..line.len() {
                    run += 1;
                    #[allow(clippy::eq_op)]
                    let end = i + 1 == line.len() || line[i].0 != line[i + 1].0;
                    if end {
                        if run > best_n {
                            best = line[i];
                            best_n = run;
                        }
                        run = 0;
                    }
                }
                best
            })
        })
    }

    // ------------------------------------------------------------------ unique

    /// Sorted unique elements of the flattened tensor (or unique slices along `dim`), with
    /// inverse indices and counts when asked. NaNs are all distinct, as in PyTorch.
    pub fn unique(
        &self,
        return_inverse: bool,
        return_counts: bool,
        dim: Option<i64>,
    ) -> Result<Unique> {
        self.unique_impl(false, return_inverse, return_counts, dim)
    }

    /// Collapse runs of equal consecutive elements (or slices along `dim`).
    pub fn unique_consecutive(
        &self,
        return_inverse: bool,
        return_counts: bool,
        dim: Option<i64>,
    ) -> Result<Unique> {
        self.unique_impl(true, return_inverse, return_counts, dim)
    }

    fn unique_impl(
        &self,
        consecutive: bool,
        return_inverse: bool,
        return_counts: bool,
        dim: Option<i64>,
    ) -> Result<Unique> {
        if self.device().is_cuda() {
            // (With at most one dim, `unique(dim=0)` is the elementwise unique.)
            let d = match dim {
                Some(d) if self.ndim() > 1 => Some(self.dim(d)?),
                Some(d) => {
                    self.dim(d)?;
                    None
                }
                None => None,
            };
            // Slices of no elements: the host's rules for them (nothing to copy).
            if d.is_none() || self.numel() > 0 {
                return self.unique_cuda(consecutive, return_inverse, return_counts, d);
            }
        }
        cuda_via_host!("unique_dim", [self], |x| x.unique_impl(
            consecutive,
            return_inverse,
            return_counts,
            dim
        ));
        let dim = match dim {
            Some(d) => Some(self.dim(d)?),
            None => None,
        };
        // View the data as `rows` rows of `width` elements: slices along `dim`, or single
        // elements of the flattened tensor.
        let (x, rows, width) = match dim {
            Some(d) if self.ndim() > 0 => {
                let mut perm: Vec<i64> = vec![d as i64];
                perm.extend((0..self.ndim() as i64).filter(|&i| i != d as i64));
                let x = self.permute(&perm)?.contiguous();
                let rows = self.shape()[d];
                let width = self.numel().checked_div(rows).unwrap_or(0);
                (x, rows, width)
            }
            _ => (self.contiguous(), self.numel(), 1),
        };
        with_dtype!(self.dtype(), T, {
            let off = x.storage_offset();
            let data: &[T] = if x.numel() == 0 {
                &[] // an empty view may carry an offset past its storage
            } else {
                &x.storage_slice::<T>()?[off..off + x.numel()]
            };
            let row = |r: usize| &data[r * width..(r + 1) * width];
            let cmp_rows = |a: usize, b: usize| -> Ordering {
                for (&p, &q) in row(a).iter().zip(row(b)) {
                    match cmp_nan_last(p, q) {
                        Ordering::Equal => continue,
                        o => return o,
                    }
                }
                Ordering::Equal
            };
            #[allow(clippy::eq_op)]
            let eq_rows = |a: usize, b: usize| row(a).iter().zip(row(b)).all(|(p, q)| p == q);
            // Order of rows: sorted (ties by position) or as they come.
            let mut order: Vec<usize> = (0..rows).collect();
            if !consecutive {
                let c = |a: &usize, b: &usize| cmp_rows(*a, *b).then(a.cmp(b));
                if rows * width.max(1) >= PAR_THRESHOLD {
                    order.par_sort_unstable_by(c);
                } else {
                    order.sort_unstable_by(c);
                }
            }
            let mut firsts: Vec<usize> = Vec::new();
            let mut counts: Vec<i64> = Vec::new();
            let mut inverse = vec![0i64; rows];
            for (p, &r) in order.iter().enumerate() {
                if p == 0 || !eq_rows(order[p - 1], r) {
                    firsts.push(r);
                    counts.push(0);
                }
                *counts.last_mut().expect("pushed above") += 1;
                inverse[r] = firsts.len() as i64 - 1;
            }
            let u = firsts.len();
            let mut vals: Vec<T> = Vec::with_capacity(u * width);
            for &r in &firsts {
                vals.extend_from_slice(row(r));
            }
            let values = match dim {
                Some(d) if self.ndim() > 0 => {
                    // Rows back to slices along `dim`.
                    let mut shape = self.shape().to_vec();
                    shape.remove(d);
                    shape.insert(0, u);
                    let t = Tensor::from_vec_unchecked(vals, &shape);
                    let mut perm: Vec<i64> = (1..self.ndim() as i64).collect();
                    perm.insert(d, 0);
                    t.permute(&perm)?.contiguous()
                }
                _ => Tensor::from_vec_unchecked(vals, &[u]),
            };
            let inv_shape: Vec<usize> = match dim {
                Some(_) if self.ndim() > 0 => vec![rows],
                Some(_) => vec![],
                None => self.shape().to_vec(),
            };
            Ok(Unique {
                values,
                inverse: return_inverse.then(|| Tensor::from_vec_unchecked(inverse, &inv_shape)),
                counts: return_counts.then(|| Tensor::from_vec_unchecked(counts, &[u])),
            })
        })
    }

    /// `unique_impl` of a CUDA tensor over its elements: sort on the device (unless
    /// `consecutive`), compare neighbours, and read back only where the runs start (the
    /// output's size must be known on the host, as in PyTorch). NaNs are all distinct, as on
    /// the CPU.
    /// `unique` on the device, elementwise (`dim == None`) or of the slices along `dim`:
    /// the data as `n` rows of `width` elements, ordered by stable sorts (one per column, the
    /// last first, so rows end up in lexicographic order with ties by position, NaN last, as
    /// on the CPU), runs of equal rows (NaNs never equal) found by comparing neighbours.
    /// Reads back only where runs start, which fixes the output's size.
    fn unique_cuda(
        &self,
        consecutive: bool,
        return_inverse: bool,
        return_counts: bool,
        dim: Option<usize>,
    ) -> Result<Unique> {
        use super::BinaryOp::Ne;
        let device = self.device();
        // Rows: the slices along `dim` moved first, or single elements.
        let (rows, back_perm) = match dim {
            Some(d) => {
                let mut perm: Vec<i64> = vec![d as i64];
                perm.extend((0..self.ndim() as i64).filter(|&i| i != d as i64));
                let n = self.shape()[d] as i64;
                let moved = self.permute(&perm)?;
                let mut back: Vec<i64> = (1..self.ndim() as i64).collect();
                back.insert(d, 0);
                (
                    moved.reshape(&[n, -1])?,
                    Some((moved.shape().to_vec(), back)),
                )
            }
            None => (self.reshape(&[-1, 1])?, None),
        };
        let (n, width) = (rows.shape()[0], rows.shape()[1]);
        let mut order: Option<Tensor> = None;
        if !consecutive && n > 1 {
            for c in (0..width as i64).rev() {
                let column = rows.narrow(1, c, 1)?.reshape(&[-1])?;
                let keys = match &order {
                    Some(o) => column.index_select_raw(0, o)?,
                    None => column,
                };
                let (_, idx) = keys.sort_raw(0, false)?;
                order = Some(match &order {
                    Some(o) => o.index_select_raw(0, &idx)?,
                    None => idx,
                });
            }
        }
        let sorted = match &order {
            Some(o) => rows.index_select_raw(0, o)?,
            None => rows.clone(),
        };
        // new_run[i]: sorted row i + 1 starts a new run.
        let m = n.saturating_sub(1) as i64;
        let new_run = if n > 1 && width > 0 {
            sorted
                .narrow(0, 1, m)?
                .binary(&sorted.narrow(0, 0, m)?, Ne)?
                .any(Some(&[1]), false)?
        } else {
            Tensor::full_on(device, &[m as usize], Scalar::Bool(false), DType::Bool)?
        };
        let flags = new_run.to_vec::<bool>()?;
        let mut starts: Vec<i64> = if n > 0 { vec![0] } else { vec![] };
        starts.extend(
            flags
                .iter()
                .enumerate()
                .filter(|(_, &f)| f)
                .map(|(i, _)| i as i64 + 1),
        );
        let u = starts.len();
        let to_dev = |v: Vec<i64>| Tensor::from_vec_unchecked(v, &[u]).to_device(device);
        let unique_rows = sorted.index_select_raw(0, &to_dev(starts.clone())?)?;
        let values = match &back_perm {
            Some((moved_shape, back)) => {
                let mut shape: Vec<i64> = moved_shape.iter().map(|&d| d as i64).collect();
                shape[0] = u as i64;
                unique_rows.reshape(&shape)?.permute(back)?.contiguous()
            }
            None => unique_rows.reshape(&[-1])?,
        };
        let inverse = if return_inverse {
            // Run number of each sorted row: 0, then the running count of new runs.
            let group = Tensor::full_on(device, &[n], Scalar::Int(0), DType::I64)?;
            if n > 1 {
                let runs = new_run.to_dtype(DType::I64).cumsum_raw(0, None)?;
                group.narrow(0, 1, m)?.copy_raw(&runs)?;
            }
            let inv = match order {
                None => group,
                Some(p) => {
                    let inv = Tensor::full_on(device, &[n], Scalar::Int(0), DType::I64)?;
                    inv.scatter_raw_(0, &p, &super::index::TensorOrScalar::Tensor(group))?;
                    inv
                }
            };
            Some(match dim {
                Some(_) => inv,
                None => {
                    let shape: Vec<i64> = self.shape().iter().map(|&d| d as i64).collect();
                    inv.reshape(&shape)?
                }
            })
        } else {
            None
        };
        let counts = if return_counts {
            let ends = starts
                .iter()
                .skip(1)
                .copied()
                .chain(std::iter::once(n as i64));
            Some(to_dev(ends.zip(&starts).map(|(e, &b)| e - b).collect())?)
        } else {
            None
        };
        Ok(Unique {
            values,
            inverse,
            counts,
        })
    }

    // ------------------------------------------------------------------ searching, counting

    /// For each element of `values`, the index where it would be inserted into the sorted
    /// last dim of `self` (1-D, or with leading dims matching `values`). `sorter` holds
    /// indices that sort `self` when it is not sorted itself.
    pub fn searchsorted(
        &self,
        values: &Tensor,
        right: bool,
        out_int32: bool,
        sorter: Option<&Tensor>,
    ) -> Result<Tensor> {
        if let Some(s) = sorter {
            let well_formed =
                self.ndim() > 0 && s.shape() == self.shape() && s.dtype() == DType::I64;
            if let (Some(device), true) = (
                super::host_fallback::cuda_device(&[self, values, s]),
                well_formed && promote_types(self.dtype(), values.dtype()) != DType::Bool,
            ) {
                // Search the boundaries put in order by `sorter` (checked on the host first).
                super::host_fallback::check_devices("searchsorted", device, &[self, values, s])?;
                let m = self.shape()[self.ndim() - 1] as i64;
                if s.to_vec::<i64>()?.iter().any(|&i| i < 0 || i >= m) {
                    return Err(Error::Runtime(
                        "torch.searchsorted(): sorter index out of range".into(),
                    ));
                }
                let sorted = self.gather_raw(self.ndim() as i64 - 1, s)?;
                return sorted.searchsorted(values, right, out_int32, None);
            }
            cuda_via_host!("searchsorted", [self, values, s], |x, v, s| x.searchsorted(
                &v,
                right,
                out_int32,
                Some(&s)
            ));
        }
        // On CUDA without a sorter: the checks below, then the searchsorted kernel.
        let cuda = super::host_fallback::cuda_device(&[self, values]);
        if promote_types(self.dtype(), values.dtype()) == DType::Bool {
            // (no bool kernel)
            cuda_via_host!("searchsorted", [self, values], |x, v| x
                .searchsorted(&v, right, out_int32, None));
        } else if let Some(device) = cuda {
            super::host_fallback::check_devices("searchsorted", device, &[self, values])?;
        }
        let seq = self;
        if seq.ndim() == 0 {
            return Err(Error::Runtime(
                "torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 dimension".into(),
            ));
        }
        let nd = seq.ndim();
        if nd > 1 && (values.ndim() != nd || seq.shape()[..nd - 1] != values.shape()[..nd - 1]) {
            return Err(Error::Runtime(format!(
                "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor and input value tensor must match, but we got boundaries tensor {:?} and input value tensor {:?}",
                seq.shape(),
                values.shape()
            )));
        }
        let m = seq.shape()[nd - 1];
        let sorter = match sorter {
            None => None,
            Some(s) => {
                if s.shape() != seq.shape() {
                    return Err(Error::Runtime(format!(
                        "torch.searchsorted(): boundary and sorter must have the same size, but got boundary tensor {:?}and got sorter tensor {:?}",
                        seq.shape(),
                        s.shape()
                    )));
                }
                if s.dtype() != DType::I64 {
                    return Err(Error::Runtime(format!(
                        "torch.searchsorted(): sorter must be a tensor of long dtype but got dtype {}",
                        s.dtype().torch_name()
                    )));
                }
                let v = s.to_vec::<i64>()?;
                if v.iter().any(|&i| i < 0 || i as usize >= m) {
                    return Err(Error::Runtime(
                        "torch.searchsorted(): sorter index out of range".into(),
                    ));
                }
                Some(v)
            }
        };
        let common = promote_types(seq.dtype(), values.dtype());
        let per_line = if nd == 1 {
            values.numel()
        } else {
            values.shape()[nd - 1]
        };
        if let Some(device) = cuda {
            let out = crate::cuda::reduce_ops::searchsorted(
                &seq.to_dtype(common).to_device(device)?,
                &values.to_dtype(common).to_device(device)?,
                m,
                if nd == 1 { 0 } else { per_line },
                right,
                values.shape(),
            )?;
            return Ok(if out_int32 {
                out.to_dtype(DType::I32)
            } else {
                out
            });
        }
        let idx: Vec<i64> = with_dtype!(common, T, {
            let s = seq.to_dtype(common).to_vec::<T>()?;
            let v = values.to_dtype(common).to_vec::<T>()?;
            let find = |j: usize| -> i64 {
                let l = if nd == 1 { 0 } else { j / per_line.max(1) };
                let base = l * m;
                let r = match &sorter {
                    None => search(m, |i| s[base + i], v[j], right),
                    Some(so) => search(m, |i| s[base + so[base + i] as usize], v[j], right),
                };
                r as i64
            };
            if v.len() * (usize::BITS - m.leading_zeros()) as usize >= PAR_THRESHOLD {
                (0..v.len()).into_par_iter().map(find).collect()
            } else {
                (0..v.len()).map(find).collect()
            }
        });
        let out = Tensor::from_vec_unchecked(idx, values.shape());
        Ok(if out_int32 {
            out.to_dtype(DType::I32)
        } else {
            out
        })
    }

    /// Bucket index of each element of `self` given sorted 1-D `boundaries`.
    pub fn bucketize(&self, boundaries: &Tensor, right: bool, out_int32: bool) -> Result<Tensor> {
        if boundaries.ndim() != 1 {
            return Err(Error::Runtime(format!(
                "boundaries tensor must be 1 dimension, but got dim({})",
                boundaries.ndim()
            )));
        }
        boundaries.searchsorted(self, right, out_int32, None)
    }

    /// Count occurrences of each non-negative integer (optionally weighted).
    pub fn bincount(&self, weights: Option<&Tensor>, minlength: i64) -> Result<Tensor> {
        if let Some(device) = super::host_fallback::cuda_device(&[self]) {
            let w: Vec<&Tensor> = weights.into_iter().collect();
            super::host_fallback::check_devices("bincount", device, &[&[self], &w[..]].concat())?;
        }
        if self.dtype().is_floating_point() || self.dtype() == DType::Bool {
            return Err(Error::UnsupportedDType {
                op: "bincount_cpu",
                dtype: self.dtype(),
            });
        }
        if minlength < 0 {
            return Err(Error::Runtime("minlength should be >= 0".into()));
        }
        if self.ndim() != 1 {
            return Err(Error::Runtime(
                "bincount only supports 1-d non-negative integral inputs.".into(),
            ));
        }
        if let Some(w) = weights {
            if w.ndim() != 1 || w.numel() != self.numel() {
                return Err(Error::Runtime(
                    "weights should be 1-d and have the same length as input".into(),
                ));
            }
        }
        let x = self.to_dtype(DType::I64).to_vec::<i64>()?;
        if x.iter().any(|&v| v < 0) {
            return Err(Error::Runtime(
                "bincount only supports 1-d non-negative integral inputs.".into(),
            ));
        }
        let len = (x.iter().copied().max().map_or(0, |m| m as usize + 1)).max(minlength as usize);
        if self.device().is_cuda() {
            // The values were read back for the length (as PyTorch does); the counting is
            // atomic adds on the device.
            let out_dt = match weights {
                None => DType::I64,
                Some(w) if w.dtype() == DType::F32 => DType::F32,
                Some(_) => DType::F64,
            };
            let out = Tensor::full_on(self.device(), &[len], crate::Scalar::Int(0), out_dt)?;
            let ones = Tensor::scalar(Scalar::Int(1), out_dt).broadcast_to(&[x.len()])?;
            let offsets: Vec<usize> = x.iter().map(|&v| v as usize).collect();
            let vals = weights.map_or(ones, |w| w.to_dtype(out_dt));
            crate::cuda::index_ops::scatter_offsets(&out, offsets, &vals, true)?;
            return Ok(out);
        }
        match weights {
            None => {
                let mut c: Vec<i64> = zeroed(len)?;
                for &v in &x {
                    c[v as usize] += 1;
                }
                Ok(Tensor::from_vec_unchecked(c, &[len]))
            }
            Some(w) => {
                let out_dt = if w.dtype() == DType::F32 {
                    DType::F32
                } else {
                    DType::F64
                };
                let wv = w.to_f64_vec();
                let mut c: Vec<f64> = zeroed(len)?;
                for (&v, &wt) in x.iter().zip(&wv) {
                    c[v as usize] += wt;
                }
                Ok(Tensor::from_vec_unchecked(c, &[len]).to_dtype(out_dt))
            }
        }
    }

    /// Histogram with `bins` equal-width bins over `[min, max]` (the data's range when
    /// `min == max`); elements outside are ignored.
    pub fn histc(&self, bins: i64, min: f64, max: f64) -> Result<Tensor> {
        if !self.dtype().is_floating_point() {
            return Err(Error::UnsupportedDType {
                op: "histogram_cpu",
                dtype: self.dtype(),
            });
        }
        if bins <= 0 {
            return Err(Error::Runtime(format!(
                "torch.histc(): bins must be > 0, but got {bins} for dimension 0"
            )));
        }
        let (mut lo, mut hi) = (min, max);
        if lo == hi && self.numel() > 0 {
            let (a, b) = self.aminmax(None, false)?;
            lo = a.item()?.to_f64();
            hi = b.item()?.to_f64();
        }
        if lo == hi {
            lo -= 1.0;
            hi += 1.0;
        }
        if !(lo.is_finite() && hi.is_finite()) {
            return Err(Error::Runtime(format!(
                "torch.histc: range of [{lo}, {hi}] is not finite"
            )));
        }
        if lo >= hi {
            return Err(Error::Runtime(
                "torch.histc: max must be larger than min".into(),
            ));
        }
        let nb = bins as usize;
        // Fail cleanly (not abort) when the histogram cannot be allocated; one per chunk.
        drop(zeroed::<f64>(nb.saturating_mul(2))?);
        let cd = self.dtype().compute_dtype();
        let x = self.to_dtype(cd);
        if x.device().is_cuda() {
            return x.histc_cuda(nb, lo, hi, self.dtype());
        }
        let counts: Vec<f64> = crate::with_float_dtype!(
            cd,
            T,
            {
                let v = x.to_vec::<T>()?;
                let (l, r) = (lo as T, hi as T);
                let count = |acc: &mut Vec<f64>, e: T| {
                    if e >= l && e <= r {
                        let mut pos = ((e - l) * (nb as T) / (r - l)) as usize;
                        if pos >= nb {
                            pos = nb - 1;
                        }
                        acc[pos] += 1.0;
                    }
                };
                if v.len() >= PAR_THRESHOLD {
                    v.par_chunks(PAR_THRESHOLD)
                        .map(|c| {
                            let mut acc = vec![0f64; nb];
                            c.iter().for_each(|&e| count(&mut acc, e));
                            acc
                        })
                        .reduce(
                            || vec![0f64; nb],
                            |mut a, b| {
                                a.iter_mut().zip(b).for_each(|(a, b)| *a += b);
                                a
                            },
                        )
                } else {
                    let mut acc = vec![0f64; nb];
                    v.iter().for_each(|&e| count(&mut acc, e));
                    acc
                }
            },
            unreachable!("compute dtype is f32 or f64")
        );
        Ok(Tensor::from_vec_unchecked(counts, &[nb]).to_dtype(self.dtype()))
    }
}

impl Tensor {
    /// `histc` of a float32/float64 CUDA tensor over [lo, hi] (checked): each element's bin
    /// computed on the device with the CPU's formula in the same dtype, `(e - lo) * bins /
    /// (hi - lo)` truncated (the top edge goes to the last bin), then counted by atomic adds
    /// into a float64 histogram, returned as `out_dt`.
    fn histc_cuda(&self, nb: usize, lo: f64, hi: f64, out_dt: DType) -> Result<Tensor> {
        use super::BinaryOp as B;
        // lo, hi and their difference rounded to the compute dtype, as the CPU's `as T`.
        let (l, r) = if self.dtype() == DType::F32 {
            (lo as f32 as f64, hi as f32 as f64)
        } else {
            (lo, hi)
        };
        let width = if self.dtype() == DType::F32 {
            (r as f32 - l as f32) as f64
        } else {
            r - l
        };
        let f = |v: f64| Scalar::Float(v);
        let inside = self
            .binary_scalar(f(l), B::Ge, false)?
            .binary(&self.binary_scalar(f(r), B::Le, false)?, B::LogicalAnd)?;
        let pos = self
            .binary_scalar(f(l), B::Sub, false)?
            .binary_scalar(f(nb as f64), B::Mul, false)?
            .binary_scalar(f(width), B::Div, false)?
            .masked_select_raw(&inside)?
            .to_dtype(DType::I64)
            .binary_scalar(Scalar::Int(nb as i64 - 1), B::Minimum, false)?;
        let counts = Tensor::full_on(self.device(), &[nb], crate::Scalar::Int(0), DType::F64)?;
        let ones = Tensor::scalar(Scalar::Int(1), DType::F64)
            .to_device(self.device())?
            .broadcast_to(pos.shape())?;
        counts.scatter_add_raw_(0, &pos, &ones)?;
        Ok(counts.to_dtype(out_dt))
    }
}

/// A zero-filled vector, or a RuntimeError (instead of an abort) when it cannot be allocated.
fn zeroed<T: Clone + Default>(len: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| {
        Error::Runtime(format!(
            "can't allocate memory: you tried to allocate {} bytes",
            len.saturating_mul(std::mem::size_of::<T>())
        ))
    })?;
    v.resize(len, T::default());
    Ok(v)
}

/// Median of one line (lower median; with NaN: the first NaN for `median`, or the median of
/// the non-NaN values for `nanmedian`). Ties are broken by index as PyTorch's nth_element.
fn median_of_line<T: PartialOrd + Copy>(line: &mut [(T, i64)], ignore_nan: bool) -> (T, i64) {
    if !ignore_nan {
        if let Some(&p) = line.iter().find(|p| is_nan(p.0)) {
            return p;
        }
        let k = (line.len() - 1) / 2;
        line.select_nth_unstable_by(k, cmp_pair_asc);
        return line[k];
    }
    let nans = line.iter().filter(|p| is_nan(p.0)).count();
    let k = (line.len() - nans).saturating_sub(1) / 2;
    line.select_nth_unstable_by(k, cmp_pair_asc);
    line[k]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sort_topk_median_unique() {
        let x = Tensor::from_vec(vec![3.0f32, 1.0, f32::NAN, 2.0, 1.0], &[5]).unwrap();
        let (v, i) = x.sort(0, false).unwrap();
        let v = v.to_vec::<f32>().unwrap();
        assert_eq!(&v[..4], &[1.0, 1.0, 2.0, 3.0]);
        assert!(v[4].is_nan());
        assert_eq!(i.to_vec::<i64>().unwrap(), vec![1, 4, 3, 0, 2]);
        let (tv, ti) = x.topk(2, 0, false).unwrap();
        assert_eq!(tv.to_vec::<f32>().unwrap(), vec![1.0, 1.0]);
        assert_eq!(ti.to_vec::<i64>().unwrap(), vec![1, 4]);
        assert!(x.median_all().unwrap().to_vec::<f32>().unwrap()[0].is_nan());
        assert_eq!(
            x.nanmedian_all().unwrap().to_vec::<f32>().unwrap(),
            vec![1.0]
        );
        let u = Tensor::from_vec(vec![2i64, 1, 2, 3, 1], &[5])
            .unwrap()
            .unique(true, true, None)
            .unwrap();
        assert_eq!(u.values.to_vec::<i64>().unwrap(), vec![1, 2, 3]);
        assert_eq!(
            u.inverse.unwrap().to_vec::<i64>().unwrap(),
            vec![1, 0, 1, 2, 0]
        );
        assert_eq!(u.counts.unwrap().to_vec::<i64>().unwrap(), vec![2, 2, 1]);
    }

    #[test]
    fn search_and_count() {
        let b = Tensor::from_vec(vec![1.0f64, 3.0, 5.0], &[3]).unwrap();
        let v = Tensor::from_vec(vec![0.0f64, 3.0, 6.0], &[3]).unwrap();
        let l = b.searchsorted(&v, false, false, None).unwrap();
        assert_eq!(l.to_vec::<i64>().unwrap(), vec![0, 1, 3]);
        let r = b.searchsorted(&v, true, false, None).unwrap();
        assert_eq!(r.to_vec::<i64>().unwrap(), vec![0, 2, 3]);
        let c = Tensor::from_vec(vec![0i64, 2, 2], &[3])
            .unwrap()
            .bincount(None, 5)
            .unwrap();
        assert_eq!(c.to_vec::<i64>().unwrap(), vec![1, 0, 2, 0, 0]);
        let h = Tensor::from_vec(vec![0.0f32, 0.5, 1.0, 2.0], &[4])
            .unwrap()
            .histc(2, 0.0, 1.0)
            .unwrap();
        assert_eq!(h.to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
    }
}
