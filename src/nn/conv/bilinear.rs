//! The three kernels of a convolution as differentiable ops, for double backward.
//!
//! A convolution is bilinear in (input, weight), and so are the two halves of its backward:
//! with `S = small_from_big(big, W)`, `B = big_from_small(small, W)` and
//! `Wt = weight_from_both(big, small)` on one [`Geom`], the gradient of each map is made of
//! the other two on the same geometry:
//!
//! | op | grad w.r.t. its first operand | grad w.r.t. its second operand |
//! |---|---|---|
//! | `S(big, W)` | `B(gS, W)` | `Wt(big, gS)` |
//! | `B(small, W)` | `S(gB, W)` | `Wt(gB, small)` |
//! | `Wt(big, small)` | `B(small, gWt)` | `S(big, gWt)` |
//!
//! So `ConvolutionBackward0` under `create_graph=True` returns gradients built from these
//! ops, and gradients of any order follow (each recorded node is `ConvolutionBackwardBackward0`).

use super::{contiguous_in, conv_big, conv_small, conv_weight, elems, finish, DirectFloat, Geom};
use crate::autograd::{needs_grad, record, SavedTensor};
use crate::cpu::matmul::MatmulElement;
use crate::{no_grad, Error, FloatElement, Result, Tensor};
use std::sync::Arc;

/// One of the three bilinear maps of a convolution geometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ConvMap {
    /// `(big, weight) -> small` (a convolution's forward).
    Small,
    /// `(small, weight) -> big` (a transposed convolution's forward).
    Big,
    /// `(big, small) -> weight` (the weight gradient of both).
    Weight,
}

/// The shapes of the big side, the small side and the weight, as the caller's tensors have
/// them (with or without the batch dim).
#[derive(Debug)]
pub(super) struct ConvShapes {
    pub big: Vec<usize>,
    pub small: Vec<usize>,
    pub weight: Vec<usize>,
}

impl ConvShapes {
    fn of(&self, map: ConvMap) -> &[usize] {
        match map {
            ConvMap::Small => &self.small,
            ConvMap::Big => &self.big,
            ConvMap::Weight => &self.weight,
        }
    }
}

/// `map(a, b)`, recorded so that its own gradient is again made of these maps.
pub(super) fn apply(
    map: ConvMap,
    geom: Geom,
    shapes: &Arc<ConvShapes>,
    a: &Tensor,
    b: &Tensor,
) -> Result<Tensor> {
    let out = no_grad(|| apply_raw(map, &geom, shapes, a, b))?;
    if needs_grad(&[a, b]) {
        const NAME: &str = "ConvolutionBackwardBackward0";
        let (saved_a, saved_b) = (SavedTensor::new(a, NAME), SavedTensor::new(b, NAME));
        let (need_a, need_b) = (a.requires_grad(), b.requires_grad());
        let shapes = shapes.clone();
        record(
            NAME,
            &[a, b],
            &[&out],
            Box::new(move |grads| {
                let Some(g) = &grads[0] else {
                    return Ok(vec![None, None]);
                };
                let (sa, sb) = (saved_a.get()?, saved_b.get()?);
                use ConvMap::*;
                let (ga, gb) = match map {
                    Small => (
                        need_a.then(|| apply(Big, geom, &shapes, g, sb)),
                        need_b.then(|| apply(Weight, geom, &shapes, sa, g)),
                    ),
                    Big => (
                        need_a.then(|| apply(Small, geom, &shapes, g, sb)),
                        need_b.then(|| apply(Weight, geom, &shapes, g, sa)),
                    ),
                    Weight => (
                        need_a.then(|| apply(Big, geom, &shapes, sb, g)),
                        need_b.then(|| apply(Small, geom, &shapes, sa, g)),
                    ),
                };
                Ok(vec![ga.transpose()?, gb.transpose()?])
            }),
        );
    }
    Ok(out)
}

fn apply_raw(
    map: ConvMap,
    geom: &Geom,
    shapes: &ConvShapes,
    a: &Tensor,
    b: &Tensor,
) -> Result<Tensor> {
    if a.device() != b.device() {
        return Err(Error::DeviceMismatch {
            op: "convolution_backward",
            lhs: a.device(),
            rhs: b.device(),
        });
    }
    let dt = a.dtype();
    let shape = shapes.of(map);
    if a.device().is_cuda() {
        return apply_cuda(map, geom, shape, a, b);
    }
    crate::with_float_dtype!(
        dt.compute_dtype(),
        T,
        { apply_typed::<T>(map, geom, shape, a, b) },
        Err(Error::UnsupportedDType {
            op: "convolution_backward",
            dtype: dt
        })
    )
}

fn apply_typed<T: MatmulElement + FloatElement + DirectFloat>(
    map: ConvMap,
    geom: &Geom,
    shape: &[usize],
    a: &Tensor,
    b: &Tensor,
) -> Result<Tensor> {
    let (ac, bc) = (contiguous_in::<T>(a)?, contiguous_in::<T>(b)?);
    let (av, bv) = (elems::<T>(&ac)?, elems::<T>(&bc)?);
    let v = match map {
        ConvMap::Small => conv_small(geom, av, bv, None),
        ConvMap::Big => conv_big(geom, av, bv, None),
        ConvMap::Weight => conv_weight(geom, av, bv),
    };
    Ok(finish(v, shape, a.dtype()))
}

fn apply_cuda(
    map: ConvMap,
    geom: &Geom,
    shape: &[usize],
    a: &Tensor,
    b: &Tensor,
) -> Result<Tensor> {
    use crate::cuda::nn_ops as nn;
    let dt = a.dtype();
    let g = super::cuda_geom(geom);
    let (ac, bc) = (nn::contig(a, dt)?, nn::contig(b, dt)?);
    let out = match map {
        ConvMap::Small => nn::conv_small_from_big(&g, &ac, &bc, None)?,
        ConvMap::Big => nn::conv_big_from_small(&g, &ac, &bc, None)?,
        ConvMap::Weight => nn::conv_weight_from_both(&g, &ac, &bc)?,
    };
    Ok(out.reshape_contiguous(shape))
}
