//! Autograd for indexing, gather/scatter, joining and rearranging ops.
//!
//! Ops that copy each output element from exactly one input element (advanced indexing,
//! `index_select`, `gather`, `take`, `flip`, `roll`, `repeat`, ...) share one backward: the
//! positions each output element came from are found by running the op on an int64
//! `arange` of the input's shape, and the gradient is scatter-added into zeros at those
//! positions. That backward is itself recorded (its own backward gathers again), so
//! `create_graph=True` works.

use super::{Tensor, TensorIndex, TensorOrScalar};
use crate::autograd::{is_grad_enabled, needs_grad, record};
use crate::{with_dtype, DType, Element, Error, Result, Scalar};
use std::sync::Arc;

/// Row-major input positions of the output elements.
type Pos = Arc<Vec<usize>>;

/// A gradient formula for one input of a recorded op.
pub(crate) type GradFn = Box<dyn Fn(&Tensor) -> Result<Tensor> + Send>;

fn shape_i64(s: &[usize]) -> Vec<i64> {
    s.iter().map(|&x| x as i64).collect()
}

/// Positions (row-major into `shape`) that the gather op `f` reads for each output element;
/// the probe lives on `device` (the input's), where `f`'s index tensors are.
fn positions_of(
    shape: &[usize],
    device: crate::Device,
    f: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<Pos> {
    let n: usize = shape.iter().product();
    let ar = Tensor::from_vec_unchecked((0..n as i64).collect::<Vec<i64>>(), shape);
    let ar = crate::cuda::ops::to_device(&ar, device)?;
    let p = crate::no_grad(|| f(&ar))?;
    Ok(Arc::new(
        p.to_vec::<i64>()?.into_iter().map(|x| x as usize).collect(),
    ))
}

fn gather_flat_raw(x: &Tensor, pos: &[usize], shape: &[usize]) -> Result<Tensor> {
    if x.device().is_cuda() {
        let xc = x.contiguous();
        let off = xc.storage_offset();
        let offsets = pos.iter().map(|&p| p + off).collect();
        return crate::cuda::index_ops::gather_offsets(&xc, offsets, shape);
    }
    Ok(with_dtype!(x.dtype(), T, {
        let v = x.to_vec::<T>()?;
        let out: Vec<T> = pos.iter().map(|&p| v[p]).collect();
        Tensor::from_vec_unchecked(out, shape)
    }))
}

fn scatter_add_flat_raw(g: &Tensor, pos: &[usize], shape: &[usize]) -> Result<Tensor> {
    if g.numel() != pos.len() {
        return Err(Error::Runtime(format!(
            "index backward: gradient of shape {:?} does not match the indexed result ({} elements)",
            g.shape(),
            pos.len()
        )));
    }
    if g.device().is_cuda() {
        let out = Tensor::full_on(g.device(), shape, Scalar::Int(0), g.dtype())?;
        crate::cuda::index_ops::scatter_offsets(&out, pos.to_vec(), g, true)?;
        return Ok(out);
    }
    let n: usize = shape.iter().product();
    Ok(with_dtype!(g.dtype(), T, {
        let v = g.to_vec::<T>()?;
        let mut out = vec![T::default(); n];
        for (&p, &x) in pos.iter().zip(&v) {
            out[p] = out[p].add(x);
        }
        Tensor::from_vec_unchecked(out, shape)
    }))
}

/// `x.flatten()[pos]` shaped `shape`, recorded (backward: [`scatter_add_flat`]).
fn gather_flat(name: &'static str, x: &Tensor, pos: Pos, shape: &[usize]) -> Result<Tensor> {
    let out = gather_flat_raw(x, &pos, shape)?;
    if needs_grad(&[x]) && out.dtype().is_floating_point() {
        let in_shape = x.shape().to_vec();
        record(
            name,
            &[x],
            &[&out],
            Box::new(move |grads| match &grads[0] {
                Some(g) => Ok(vec![Some(scatter_add_flat(g, pos.clone(), &in_shape)?)]),
                None => Ok(vec![None]),
            }),
        );
    }
    Ok(out)
}

/// Zeros of `shape` with `g`'s elements added at flat positions `pos`, recorded.
fn scatter_add_flat(g: &Tensor, pos: Pos, shape: &[usize]) -> Result<Tensor> {
    let out = scatter_add_flat_raw(g, &pos, shape)?;
    if needs_grad(&[g]) && out.dtype().is_floating_point() {
        let g_shape = g.shape().to_vec();
        record(
            "IndexPutBackward0",
            &[g],
            &[&out],
            Box::new(move |grads| match &grads[0] {
                Some(gg) => Ok(vec![Some(gather_flat(
                    "IndexBackward0",
                    gg,
                    pos.clone(),
                    &g_shape,
                )?)]),
                None => Ok(vec![None]),
            }),
        );
    }
    Ok(out)
}

/// `Some((dim, index))` when `idx` is full slices around exactly one 1-d int64/int32 tensor.
fn single_index_select(idx: &[TensorIndex]) -> Option<(i64, &Tensor)> {
    let mut found = None;
    for (d, i) in idx.iter().enumerate() {
        match i {
            TensorIndex::Slice {
                start: None,
                stop: None,
                step: 1,
            } => {}
            TensorIndex::Tensor(t)
                if found.is_none()
                    && t.ndim() == 1
                    && matches!(t.dtype(), DType::I64 | DType::I32) =>
            {
                found = Some((d as i64, t));
            }
            _ => return None,
        }
    }
    found
}

/// Zeros shaped like an indexed op's input, with the gradient's dtype and device.
fn zeros_for_grad(g: &Tensor, shape: &[usize]) -> Result<Tensor> {
    Tensor::full_on(g.device(), shape, Scalar::Int(0), g.dtype())
}

/// Record `out = input.index_select(dim, index)`: backward index-adds the gradient into zeros
/// (itself recorded, so its own backward selects again). Unlike the generic gather probe this
/// costs nothing in forward and O(index) plus the zeros in backward.
fn record_index_select(name: &'static str, input: &Tensor, dim: i64, index: &Tensor, out: &Tensor) {
    let (idx, shape) = (index.clone(), input.shape().to_vec());
    record_n(
        name,
        vec![(
            input,
            Box::new(move |g| zeros_for_grad(g, &shape)?.index_add(dim, &idx, g, Scalar::Int(1))),
        )],
        out,
    );
}

/// Record a pure gather op `out = f(input)` (each output element copies one input element).
pub(crate) fn record_gather(
    name: &'static str,
    input: &Tensor,
    out: Tensor,
    f: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    if needs_grad(&[input]) && out.dtype().is_floating_point() {
        let pos = positions_of(input.shape(), input.device(), f)?;
        let in_shape = input.shape().to_vec();
        record(
            name,
            &[input],
            &[&out],
            Box::new(move |grads| match &grads[0] {
                Some(g) => Ok(vec![Some(scatter_add_flat(g, pos.clone(), &in_shape)?)]),
                None => Ok(vec![None]),
            }),
        );
    }
    Ok(out)
}

/// Bring a gradient to an input's shape (summing broadcast dims, restoring dropped leading
/// size-1 dims) and dtype.
fn fit(g: Tensor, shape: &[usize], dtype: DType) -> Result<Tensor> {
    let mut g = g;
    if g.shape() != shape {
        let k = shape.len().saturating_sub(g.ndim());
        let target = if shape[..k].iter().all(|&s| s == 1) {
            &shape[k..]
        } else {
            shape
        };
        if g.shape() != target {
            g = g.sum_to_shape(target)?;
        }
        if g.shape() != shape {
            g = g.reshape(&shape_i64(shape))?;
        }
    }
    if g.dtype() != dtype {
        g = g.cast(dtype)?;
    }
    Ok(g)
}

/// Record an op with several inputs, each with its own gradient formula.
pub(crate) fn record_n(name: &'static str, ins: Vec<(&Tensor, GradFn)>, out: &Tensor) {
    let ts: Vec<&Tensor> = ins.iter().map(|(t, _)| *t).collect();
    if !(needs_grad(&ts) && out.dtype().is_floating_point()) {
        return;
    }
    let n = ins.len();
    let parts: Vec<(bool, Vec<usize>, DType, GradFn)> = ins
        .into_iter()
        .map(|(t, f)| {
            let need = t.requires_grad() && t.dtype().is_floating_point();
            (need, t.shape().to_vec(), t.dtype(), f)
        })
        .collect();
    record(
        name,
        &ts,
        &[out],
        Box::new(move |grads| {
            let Some(g) = &grads[0] else {
                return Ok(vec![None; n]);
            };
            parts
                .iter()
                .map(|(need, s, d, f)| {
                    if *need {
                        Ok(Some(fit(f(g)?, s, *d)?))
                    } else {
                        Ok(None)
                    }
                })
                .collect()
        }),
    );
}

fn zero() -> TensorOrScalar {
    TensorOrScalar::Scalar(Scalar::Int(0))
}

/// `g.gather(dim, index)` padded with zeros up to `shape` (scatter's `src` may be larger
/// than `index`).
fn gather_padded(g: &Tensor, dim: i64, index: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let r = g.gather(dim, index)?;
    if r.shape() == shape || r.ndim() != shape.len() {
        return Ok(r);
    }
    let sizes = r.shape().to_vec();
    let f: super::view::ViewFn = Arc::new(move |t: &Tensor| {
        let mut t = t.clone();
        for (k, &s) in sizes.iter().enumerate() {
            t = t.narrow(k as i64, 0, s as i64)?;
        }
        Ok(t)
    });
    super::view::embed_into_zeros(&r, shape, f)
}

impl Tensor {
    /// True when an in-place op on `self` with `others` must go through [`Tensor::inplace`].
    pub(crate) fn grad_inplace(&self, others: &[&Tensor]) -> bool {
        is_grad_enabled()
            && (self.requires_grad()
                || others.iter().any(|t| t.requires_grad())
                || self.view_base().is_some_and(|b| b.requires_grad()))
    }

    /// `self[idx]`: a view for basic indices, a copy when any advanced index is present.
    pub fn index(&self, idx: &[TensorIndex]) -> Result<Tensor> {
        let out = crate::no_grad(|| self.index_raw(idx))?;
        if !(needs_grad(&[self]) && out.dtype().is_floating_point()) {
            return Ok(out);
        }
        let advanced = idx.iter().any(|i| match i {
            TensorIndex::Tensor(t) => {
                t.ndim() > 0 || t.dtype() == DType::Bool || t.dtype() == DType::U8
            }
            TensorIndex::Bool(_) => true,
            _ => false,
        });
        if let Some((dim, index)) = single_index_select(idx) {
            // `x[:, ..., i]` with one 1-d int64/int32 index: an index_select along that dim,
            // once negative positions are wrapped (forward already checked the bounds).
            let size = self.shape()[dim as usize] as i64;
            let index =
                index.binary_scalar(Scalar::Int(size), crate::BinaryOp::Remainder, false)?;
            record_index_select("IndexBackward0", self, dim, &index, &out);
            return Ok(out);
        }
        if advanced || !out.shares_storage(self) {
            let idx = idx.to_vec();
            return record_gather("IndexBackward0", self, out, move |a| a.index_raw(&idx));
        }
        let name = if idx.iter().any(|i| matches!(i, TensorIndex::Slice { .. })) {
            "SliceBackward0"
        } else if idx
            .iter()
            .any(|i| matches!(i, TensorIndex::Int(_) | TensorIndex::Tensor(_)))
        {
            "SelectBackward0"
        } else {
            "AliasBackward0"
        };
        let idx = idx.to_vec();
        let f: super::view::ViewFn = Arc::new(move |t: &Tensor| t.index(&idx));
        Ok(super::view::record_partial_view(name, self, out, f))
    }

    /// Out of place `index_put`: a copy of `self` with `self[idx] = value` (or `+=`).
    pub fn index_put(
        &self,
        idx: &[TensorIndex],
        value: &Tensor,
        accumulate: bool,
    ) -> Result<Tensor> {
        let out = crate::no_grad(|| {
            let o = self.clone_data();
            o.index_put_raw(idx, value, accumulate)?;
            Ok::<_, Error>(o)
        })?;
        let (i1, i2) = (idx.to_vec(), idx.to_vec());
        let ga: GradFn = if accumulate {
            Box::new(|g| Ok(g.clone()))
        } else {
            Box::new(move |g| g.index_put(&i1, &Tensor::scalar(Scalar::Int(0), g.dtype()), false))
        };
        record_n(
            "IndexPutBackward0",
            vec![(self, ga), (value, Box::new(move |g| g.index(&i2)))],
            &out,
        );
        Ok(out)
    }

    /// `self[idx] = value` (`accumulate`: `+=`, summing repeated indices).
    pub fn index_put_(&self, idx: &[TensorIndex], value: &Tensor, accumulate: bool) -> Result<()> {
        self.index_put_checked_(idx, value, accumulate, true)
    }

    /// `self[idx] = number`: PyTorch (2.15) fills the indexed view (`fill_`), which may write
    /// a tensor whose elements overlap (an `expand`), unlike a tensor value (`copy_`).
    /// `value` is that number as a 0-d tensor of `self`'s dtype.
    pub fn index_put_number_(&self, idx: &[TensorIndex], value: &Tensor) -> Result<()> {
        self.index_put_checked_(idx, value, false, false)
    }

    fn index_put_checked_(
        &self,
        idx: &[TensorIndex],
        value: &Tensor,
        accumulate: bool,
        refuse_overlap: bool,
    ) -> Result<()> {
        if refuse_overlap && !accumulate && self.has_internal_overlap() {
            // With basic indices only this is PyTorch's `self[idx].copy_(value)`, refused when
            // that view overlaps itself; advanced indices (a copy, not a view) may write it.
            let view = crate::no_grad(|| self.index_raw(idx))?;
            if view.shares_storage(self) {
                view.check_inplace_overlap("copy")?;
            }
        }
        if self.grad_inplace(&[value]) {
            return self.inplace(&[value], "index_put", |me| {
                me.index_put(idx, value, accumulate)
            });
        }
        self.index_put_raw(idx, value, accumulate)
    }

    pub fn masked_fill(&self, mask: &Tensor, value: Scalar) -> Result<Tensor> {
        let out = crate::no_grad(|| self.masked_fill_raw(mask, value))?;
        let m = mask.clone();
        record_n(
            "MaskedFillBackward0",
            vec![(self, Box::new(move |g| g.masked_fill(&m, Scalar::Int(0))))],
            &out,
        );
        Ok(out)
    }

    /// In place: `self[mask] = value` with `mask` broadcast to `self`'s shape.
    pub fn masked_fill_(&self, mask: &Tensor, value: Scalar) -> Result<()> {
        if self.grad_inplace(&[]) {
            return self.inplace(&[], "masked_fill", |me| me.masked_fill(mask, value));
        }
        self.masked_fill_raw_(mask, value)
    }

    /// 1-d tensor of the elements where `mask` (broadcast with `self`) is true.
    pub fn masked_select(&self, mask: &Tensor) -> Result<Tensor> {
        let out = crate::no_grad(|| self.masked_select_raw(mask))?;
        record_gather("MaskedSelectBackward0", self, out, |a| {
            a.masked_select_raw(mask)
        })
    }

    pub fn masked_scatter(&self, mask: &Tensor, source: &Tensor) -> Result<Tensor> {
        let out = crate::no_grad(|| self.masked_scatter_raw(mask, source))?;
        let (m1, m2) = (mask.clone(), mask.clone());
        let src_n = source.numel();
        let src_shape = source.shape().to_vec();
        record_n(
            "MaskedScatterBackward0",
            vec![
                (self, Box::new(move |g| g.masked_fill(&m1, Scalar::Int(0)))),
                (
                    source,
                    Box::new(move |g| {
                        let s = g.masked_select(&m2)?;
                        let k = s.numel();
                        let full = if k < src_n {
                            let pad = Tensor::full_on(
                                g.device(),
                                &[src_n - k],
                                Scalar::Int(0),
                                g.dtype(),
                            )?;
                            super::join::cat(&[s, pad], 0)?
                        } else {
                            s
                        };
                        full.reshape(&shape_i64(&src_shape))
                    }),
                ),
            ],
            &out,
        );
        Ok(out)
    }

    pub fn masked_scatter_(&self, mask: &Tensor, source: &Tensor) -> Result<()> {
        self.check_inplace_overlap("masked_scatter")?;
        if self.grad_inplace(&[source]) {
            return self.inplace(&[source], "masked_scatter", |me| {
                me.masked_scatter(mask, source)
            });
        }
        self.masked_scatter_raw_(mask, source)
    }

    /// Elements at `index` along `dim` (a copy).
    pub fn index_select(&self, dim: i64, index: &Tensor) -> Result<Tensor> {
        let out = crate::no_grad(|| self.index_select_raw(dim, index))?;
        record_index_select("IndexSelectBackward0", self, dim, index, &out);
        Ok(out)
    }

    /// `out[i][j][k] = self[index[i][j][k]][j][k]` (for dim 0), out shaped like `index`.
    pub fn gather(&self, dim: i64, index: &Tensor) -> Result<Tensor> {
        let out = crate::no_grad(|| self.gather_raw(dim, index))?;
        let (idx, shape) = (index.clone(), self.shape().to_vec());
        // Backward scatter-adds into zeros (PyTorch's formula): O(index) work besides the
        // zeros, where the generic gather probe would walk the whole input.
        record_n(
            "GatherBackward0",
            vec![(
                self,
                Box::new(move |g| zeros_for_grad(g, &shape)?.scatter_add(dim, &idx, g)),
            )],
            &out,
        );
        Ok(out)
    }

    /// Elements at flat (row-major) positions `index` (negatives wrap); shaped like `index`.
    pub fn take(&self, index: &Tensor) -> Result<Tensor> {
        let out = crate::no_grad(|| self.take_raw(index))?;
        record_gather("TakeBackward0", self, out, |a| a.take_raw(index))
    }

    /// Out of place `scatter`: a copy of `self` with `src` written at `index` along `dim`.
    pub fn scatter(&self, dim: i64, index: &Tensor, src: &TensorOrScalar) -> Result<Tensor> {
        let out = crate::no_grad(|| {
            let o = self.clone_data();
            o.scatter_raw_(dim, index, src)?;
            Ok::<_, Error>(o)
        })?;
        let i1 = index.clone();
        let mut ins: Vec<(&Tensor, GradFn)> =
            vec![(self, Box::new(move |g| g.scatter(dim, &i1, &zero())))];
        if let TensorOrScalar::Tensor(s) = src {
            let i2 = index.clone();
            let shape = s.shape().to_vec();
            ins.push((s, Box::new(move |g| gather_padded(g, dim, &i2, &shape))));
        }
        record_n("ScatterBackward0", ins, &out);
        Ok(out)
    }

    /// In place: `self[index[i][j]][j] = src[i][j]` (for dim 0).
    pub fn scatter_(&self, dim: i64, index: &Tensor, src: &TensorOrScalar) -> Result<()> {
        let others: Vec<&Tensor> = match src {
            TensorOrScalar::Tensor(t) => vec![t],
            TensorOrScalar::Scalar(_) => vec![],
        };
        self.check_inplace_overlap("scatter")?;
        if self.grad_inplace(&others) {
            return self.inplace(&others, "scatter", |me| me.scatter(dim, index, src));
        }
        self.scatter_raw_(dim, index, src)
    }

    /// Out of place `scatter_add`.
    pub fn scatter_add(&self, dim: i64, index: &Tensor, src: &Tensor) -> Result<Tensor> {
        let out = crate::no_grad(|| {
            let o = self.clone_data();
            o.scatter_add_raw_(dim, index, src)?;
            Ok::<_, Error>(o)
        })?;
        let i2 = index.clone();
        let shape = src.shape().to_vec();
        record_n(
            "ScatterAddBackward0",
            vec![
                (self, Box::new(|g| Ok(g.clone()))),
                (src, Box::new(move |g| gather_padded(g, dim, &i2, &shape))),
            ],
            &out,
        );
        Ok(out)
    }

    /// In place: `self[index[i][j]][j] += src[i][j]` (for dim 0).
    pub fn scatter_add_(&self, dim: i64, index: &Tensor, src: &Tensor) -> Result<()> {
        self.check_inplace_overlap("scatter_add")?;
        if self.grad_inplace(&[src]) {
            return self.inplace(&[src], "scatter_add", |me| me.scatter_add(dim, index, src));
        }
        self.scatter_add_raw_(dim, index, src)
    }

    /// Out of place `index_add`.
    pub fn index_add(
        &self,
        dim: i64,
        index: &Tensor,
        source: &Tensor,
        alpha: Scalar,
    ) -> Result<Tensor> {
        let out = crate::no_grad(|| {
            let o = self.clone_data();
            o.index_add_raw_(dim, index, source, alpha)?;
            Ok::<_, Error>(o)
        })?;
        let i2 = index.clone();
        let unit = alpha.to_f64() == 1.0;
        record_n(
            "IndexAddBackward0",
            vec![
                (self, Box::new(|g| Ok(g.clone()))),
                (
                    source,
                    Box::new(move |g| {
                        let r = g.index_select(dim, &i2)?;
                        if unit {
                            Ok(r)
                        } else {
                            r.binary_scalar(alpha, crate::BinaryOp::Mul, false)
                        }
                    }),
                ),
            ],
            &out,
        );
        Ok(out)
    }

    /// In place: `self.select(dim, index[i]) += alpha * source.select(dim, i)`.
    pub fn index_add_(
        &self,
        dim: i64,
        index: &Tensor,
        source: &Tensor,
        alpha: Scalar,
    ) -> Result<()> {
        self.check_inplace_overlap("index_add")?;
        if self.grad_inplace(&[source]) {
            return self.inplace(&[source], "index_add", |me| {
                me.index_add(dim, index, source, alpha)
            });
        }
        self.index_add_raw_(dim, index, source, alpha)
    }

    /// Out of place `index_copy`.
    pub fn index_copy(&self, dim: i64, index: &Tensor, source: &Tensor) -> Result<Tensor> {
        let out = crate::no_grad(|| {
            let o = self.clone_data();
            o.index_copy_raw_(dim, index, source)?;
            Ok::<_, Error>(o)
        })?;
        let (i1, i2) = (index.clone(), index.clone());
        record_n(
            "IndexCopyBackward0",
            vec![
                (
                    self,
                    Box::new(move |g| g.index_fill(dim, &i1, Scalar::Int(0))),
                ),
                (source, Box::new(move |g| g.index_select(dim, &i2))),
            ],
            &out,
        );
        Ok(out)
    }

    /// In place: `self.select(dim, index[i]) = source.select(dim, i)`.
    pub fn index_copy_(&self, dim: i64, index: &Tensor, source: &Tensor) -> Result<()> {
        self.check_inplace_overlap("index_copy")?;
        if self.grad_inplace(&[source]) {
            return self.inplace(&[source], "index_copy", |me| {
                me.index_copy(dim, index, source)
            });
        }
        self.index_copy_raw_(dim, index, source)
    }

    /// Out of place `index_fill`.
    pub fn index_fill(&self, dim: i64, index: &Tensor, value: Scalar) -> Result<Tensor> {
        let out = crate::no_grad(|| {
            let o = self.clone_data();
            o.index_fill_raw_(dim, index, value)?;
            Ok::<_, Error>(o)
        })?;
        let i1 = index.clone();
        record_n(
            "IndexFillBackward0",
            vec![(
                self,
                Box::new(move |g| g.index_fill(dim, &i1, Scalar::Int(0))),
            )],
            &out,
        );
        Ok(out)
    }

    /// In place: `self.select(dim, i) = value` for every `i` in `index` (negatives wrap).
    pub fn index_fill_(&self, dim: i64, index: &Tensor, value: Scalar) -> Result<()> {
        if self.grad_inplace(&[]) {
            return self.inplace(&[], "index_fill", |me| me.index_fill(dim, index, value));
        }
        self.index_fill_raw_(dim, index, value)
    }

    /// Out of place `put`.
    pub fn put(&self, index: &Tensor, source: &Tensor, accumulate: bool) -> Result<Tensor> {
        let out = crate::no_grad(|| {
            let o = self.clone_data();
            o.put_raw_(index, source, accumulate)?;
            Ok::<_, Error>(o)
        })?;
        let (i1, i2) = (index.clone(), index.clone());
        let ga: GradFn = if accumulate {
            Box::new(|g| Ok(g.clone()))
        } else {
            Box::new(move |g| {
                let z = Tensor::full_on(g.device(), i1.shape(), Scalar::Int(0), g.dtype())?;
                g.put(&i1, &z, false)
            })
        };
        record_n(
            "PutBackward0",
            vec![(self, ga), (source, Box::new(move |g| g.take(&i2)))],
            &out,
        );
        Ok(out)
    }

    /// In place: `self.flatten()[index[i]] = source[i]` (or `+=` with `accumulate`).
    pub fn put_(&self, index: &Tensor, source: &Tensor, accumulate: bool) -> Result<()> {
        self.check_inplace_overlap("put")?;
        if self.grad_inplace(&[source]) {
            return self.inplace(&[source], "put", |me| me.put(index, source, accumulate));
        }
        self.put_raw_(index, source, accumulate)
    }

    /// `where(cond, x, y)`: elements of `x` where `cond`, else of `y` (broadcast, promoted).
    pub fn where_cond(cond: &Tensor, x: &TensorOrScalar, y: &TensorOrScalar) -> Result<Tensor> {
        let out = crate::no_grad(|| Tensor::where_raw(cond, x, y))?;
        let mut ins: Vec<(&Tensor, GradFn)> = Vec::new();
        if let TensorOrScalar::Tensor(t) = x {
            let c = cond.clone();
            ins.push((
                t,
                Box::new(move |g| {
                    Tensor::where_cond(&c, &TensorOrScalar::Tensor(g.clone()), &zero())
                }),
            ));
        }
        if let TensorOrScalar::Tensor(t) = y {
            let c = cond.clone();
            ins.push((
                t,
                Box::new(move |g| {
                    Tensor::where_cond(&c, &zero(), &TensorOrScalar::Tensor(g.clone()))
                }),
            ));
        }
        if !ins.is_empty() {
            record_n("WhereBackward0", ins, &out);
        }
        Ok(out)
    }
}
