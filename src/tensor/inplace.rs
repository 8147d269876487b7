//! In-place ops under autograd. An in-place op computes its result out of place from a
//! snapshot of `self` (so saved tensors keep the old values), writes it into `self`, and
//! "rebases" `self`'s history onto the new node. When `self` is a view, the base's history
//! is rebased too (PyTorch's CopySlices), so gradients flow to both.

use super::Tensor;
use crate::autograd::{needs_grad, record};
use crate::cpu::strided;
use crate::layout::Layout;
use crate::{with_dtype, Error, Result};

/// In-place ops PyTorch lets write into a tensor whose elements overlap: `fill_`/`zero_`, the
/// index writes `index_put_` (setitem with advanced indices), `masked_fill_` and `index_fill_`
/// (PyTorch warns that this is deprecated), and `tril_`/`triu_`.
const OVERLAP_ALLOWED: &[&str] = &[
    "fill",
    "index_put",
    "masked_fill",
    "index_fill",
    "tril",
    "triu",
];

impl Tensor {
    /// True when several elements are one memory location for sure: a dim of size > 1 with
    /// stride 0, as `expand` makes (PyTorch's `has_internal_overlap` == `MemOverlap::Yes`;
    /// partial overlaps such as `as_strided` windows are "too hard" there, and allowed).
    pub(crate) fn has_internal_overlap(&self) -> bool {
        let l = self.layout();
        l.numel() > 0
            && l.shape
                .iter()
                .zip(&l.strides)
                .any(|(&n, &s)| n > 1 && s == 0)
    }

    /// PyTorch's `assert_no_internal_overlap` for the tensor the in-place op `op` writes:
    /// refuse an overlapping one (see `has_internal_overlap`) unless PyTorch lets `op`
    /// write it.
    pub(crate) fn check_inplace_overlap(&self, op: &str) -> Result<()> {
        self.check_inference_inplace()?;
        if self.has_internal_overlap() && !OVERLAP_ALLOWED.contains(&op) {
            return Err(Error::Runtime(
                "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation."
                    .into(),
            ));
        }
        Ok(())
    }

    /// Run the in-place form of an op: `f` computes the new value from `self`.
    pub(crate) fn inplace(
        &self,
        others: &[&Tensor],
        op: &'static str,
        f: impl FnOnce(&Tensor) -> Result<Tensor>,
    ) -> Result<()> {
        self.check_inplace_overlap(op)?;
        let mut all: Vec<&Tensor> = vec![self];
        all.extend_from_slice(others);
        let base = self.view_base();
        let base_needs = base.as_ref().map(|b| b.requires_grad()).unwrap_or(false);
        let base_needs = crate::is_grad_enabled() && base_needs;
        if !(needs_grad(&all) || base_needs) {
            let result = crate::no_grad(|| f(self))?;
            return self.assign_result(result, op);
        }
        if self.is_leaf() && self.requires_grad() {
            return Err(Error::Runtime(format!(
                "a leaf Variable that requires grad is being used in an in-place operation ({op}_)."
            )));
        }
        if let Some(b) = &base {
            if b.is_leaf() && b.requires_grad() {
                return Err(Error::Runtime(format!(
                    "a view of a leaf Variable that requires grad is being used in an in-place operation ({op}_)."
                )));
            }
        }
        let (multi_output_view, made_by, output_nr) = {
            let m = self.meta();
            let name = m.grad_fn.as_ref().map(|f| f.name().to_string());
            (m.multi_output_view, name, m.output_nr)
        };
        if multi_output_view {
            let made_by = made_by.unwrap_or_default();
            let made_by = made_by.split("Backward").next().unwrap_or_default();
            return Err(Error::Runtime(format!(
                "Output {output_nr} of {made_by} is a view and is being modified inplace. This view is the output of a function that returns multiple views. Such functions do not allow the output views to be modified inplace. You should replace the inplace operation by an out-of-place one."
            )));
        }
        // Snapshot: same history as `self`, private copy of the data.
        let snap = self.clone_data();
        {
            let (gf, nr) = {
                let m = self.meta();
                (m.grad_fn.clone(), m.output_nr)
            };
            let mut sm = snap.meta();
            sm.grad_fn = gf;
            sm.output_nr = nr;
        }
        let result = f(&snap)?;
        self.assign_result(result.clone(), op)?;
        match base {
            Some(b) if b.requires_grad() || result.requires_grad() => self.rebase_view(&b, &result),
            _ => {
                let mut m = self.meta();
                m.grad_fn = result.grad_fn();
                m.output_nr = result.output_nr();
                Ok(())
            }
        }
    }

    /// Whether an in-place op may compute straight into `self`'s memory: a contiguous CPU
    /// tensor that autograd need not see (the same test as `inplace`'s no-grad branch),
    /// with no other operand sharing its storage or living on another device.
    pub(crate) fn writes_directly(&self, others: &[&Tensor]) -> bool {
        if self.device().is_cuda() || !self.is_contiguous() || self.numel() == 0 {
            return false;
        }
        if others
            .iter()
            .any(|o| o.device().is_cuda() || o.shares_storage(self))
        {
            return false;
        }
        if !crate::is_grad_enabled() {
            return true;
        }
        let mut all: Vec<&Tensor> = vec![self];
        all.extend_from_slice(others);
        let base_needs = self.view_base().is_some_and(|b| b.requires_grad());
        !(needs_grad(&all) || base_needs)
    }

    /// `self` (a view of `base`) was overwritten by `value`: give `base` a CopySlices node
    /// (gradient outside the view goes to the old base, inside it to `value`) and make `self`
    /// a view of the new base history.
    fn rebase_view(&self, base: &Tensor, value: &Tensor) -> Result<()> {
        if !base.is_contiguous() {
            return Err(Error::Runtime(
                "in-place modification of a view of a non-contiguous tensor that requires grad is not supported"
                    .into(),
            ));
        }
        let rel = Layout {
            shape: self.layout().shape.clone(),
            strides: self.layout().strides.clone(),
            offset: self.storage_offset() - base.storage_offset(),
        };
        let base_shape = base.shape().to_vec();
        let rel_for_view = rel.clone();
        let base_shape_for_view = base.shape().to_vec();
        let view_of = move |t: &Tensor| -> Tensor { t.contiguous().with_layout(rel.clone()) };
        let value_shape = self.shape().to_vec();
        let node_name = "CopySlices";
        // Inputs: the base's old history and the written value.
        let old_base = base.detach();
        {
            let (gf, nr, rg) = {
                let m = base.meta();
                (m.grad_fn.clone(), m.output_nr, m.requires_grad)
            };
            let mut om = old_base.meta();
            om.grad_fn = gf;
            om.output_nr = nr;
            om.requires_grad = rg;
        }
        let base_out = base.detach();
        record(
            node_name,
            &[&old_base, value],
            &[&base_out],
            Box::new(move |grads| {
                let Some(g) = &grads[0] else {
                    return Ok(vec![None, None]);
                };
                let g_base = g.clone_data();
                crate::no_grad(|| view_of(&g_base).fill_(crate::Scalar::Int(0)))?;
                let g_val = view_of(g).clone_data().sum_to_shape(&value_shape)?;
                let _ = &base_shape;
                Ok(vec![Some(g_base), Some(g_val)])
            }),
        );
        {
            let mut bm = base.meta();
            bm.grad_fn = base_out.grad_fn();
            bm.output_nr = 0;
        }
        // The view now derives from the new base history: its gradient is scattered into
        // the base's shape at the view's place (PyTorch's AsStridedBackward0).
        let place = rel_for_view;
        record(
            "AsStridedBackward0",
            &[base],
            &[self],
            Box::new(move |grads| {
                let Some(g) = &grads[0] else {
                    return Ok(vec![None]);
                };
                let gb = Tensor::full_on(
                    g.device(),
                    &base_shape_for_view,
                    crate::Scalar::Int(0),
                    g.dtype(),
                )?;
                crate::no_grad(|| gb.with_layout(place.clone()).copy_raw(g))?;
                Ok(vec![Some(gb)])
            }),
        );
        Ok(())
    }

    /// Copy `src` (broadcast to this shape, cast to this dtype) into `self` in place,
    /// recording the copy for autograd.
    pub fn copy_(&self, src: &Tensor) -> Result<()> {
        self.copy_as(src, "copy")
    }

    /// `copy_` on behalf of the in-place op `op` (`fill`, `tril`...), whose name decides
    /// whether an overlapping `self` is refused and appears in autograd's errors.
    pub(crate) fn copy_as(&self, src: &Tensor, op: &'static str) -> Result<()> {
        self.check_inplace_overlap(op)?;
        if !self.grad_inplace(&[src]) {
            // Nothing to record: write straight into our memory (one pass, no temporary).
            return self.copy_raw(src);
        }
        let shape: Vec<i64> = self.shape().iter().map(|&s| s as i64).collect();
        let dt = self.dtype();
        self.inplace(&[src], op, |me| {
            let v = src.cast(dt)?.expand(&shape)?;
            // A fresh tensor so the result does not alias `src`.
            let v = v.contiguous_recorded();
            if !(crate::is_grad_enabled() && me.requires_grad()) {
                return Ok(v);
            }
            // Overwriting a tensor with history keeps it in the graph (PyTorch's
            // CopyBackwards): zero gradient to the old values, the rest to `src`.
            let out = v.detach();
            record(
                "CopyBackwards",
                &[me, &v],
                &[&out],
                Box::new(|grads| {
                    let Some(g) = &grads[0] else {
                        return Ok(vec![None, None]);
                    };
                    let zero =
                        Tensor::full_on(g.device(), g.shape(), crate::Scalar::Int(0), g.dtype())?;
                    Ok(vec![Some(zero), Some(g.clone())])
                }),
            );
            Ok(out)
        })
    }

    /// `contiguous()` that keeps the autograd history (copies record CloneBackward).
    pub fn contiguous_recorded(&self) -> Tensor {
        let out = self.clone_data();
        if needs_grad(&[self]) {
            crate::autograd::record_saving(
                "CloneBackward0",
                &[self],
                &[&out],
                crate::autograd::Saves::NoTensors,
                Box::new(|grads| Ok(vec![grads[0].clone()])),
            );
        }
        out
    }

    /// Raw copy without autograd (`src` broadcast to our shape, cast to our dtype).
    pub(crate) fn copy_raw(&self, src: &Tensor) -> Result<()> {
        if self.device().is_cuda() {
            let src = if src.shares_storage(self) {
                src.clone_data()
            } else {
                src.clone()
            };
            self.storage().bump_version();
            return crate::cuda::ops::copy_into(self, &src);
        }
        let src = if src.device().is_cuda() {
            crate::cuda::ops::download(src)?
        } else {
            src.clone()
        };
        let src = src.to_dtype(self.dtype());
        let ls = src.layout().broadcast_to("copy_", self.shape())?;
        // Copy first if the source overlaps our storage, so reads never see our writes.
        let src = if src.shares_storage(self) {
            src.clone_data()
                .with_layout(Layout::contiguous(src.shape()).broadcast_to("copy_", self.shape())?)
        } else {
            src.with_layout(ls)
        };
        with_dtype!(self.dtype(), T, {
            let s = src.storage_slice::<T>()?;
            // SAFETY: `src` no longer aliases our storage (copied above if it did).
            let d = unsafe { self.storage_slice_mut::<T>()? };
            if self.is_contiguous() {
                // (An empty view's offset may lie past its empty storage: slice nothing.)
                let (off, n) = (self.storage_offset().min(d.len()), self.numel());
                strided::update2(&mut d[off..off + n], s, src.layout(), |_, x| x);
            } else {
                strided::zip_assign(d, self.layout(), s, src.layout(), |_, x| x);
            }
        });
        Ok(())
    }
}
