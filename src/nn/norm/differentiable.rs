//! Backward of the fused normalisations written with differentiable Tensor ops. The nodes
//! use it instead of the raw kernels under `create_graph=True`, so gradients of gradients
//! (gradient penalties, Hessian-vector products) flow through batch, layer, group and RMS
//! norm. The statistics are recomputed from the saved input as ops, so their own dependence
//! on the input is part of the graph.

use super::NormGrads;
use crate::autograd::formula::{adds, mul, sub};
use crate::tensor::UnaryOp;
use crate::{DType, Result, Tensor};

/// Where the statistics come from.
pub(super) enum Stats {
    /// The input's own statistics over the reduced dims (`rms`: no centring).
    Batch { eps: f64, rms: bool },
    /// Constants broadcastable to the input (batch norm's running statistics in evaluation).
    Fixed { mean: Tensor, rstd: Tensor },
}

/// The geometry of one normalisation.
pub(super) struct NormSpec {
    /// The view of the input the statistics are taken on (group norm: `(N, G, -1)`; the
    /// input's own shape otherwise) and the dims of that view they reduce.
    pub grouped: Vec<i64>,
    pub dims: Vec<i64>,
    /// The shape weight and bias broadcast as against the input (`(1, C, 1, ...)` for
    /// per-channel parameters, `normalized_shape` for layer norm) and their own shape.
    pub param_bshape: Vec<usize>,
    pub param_shape: Vec<usize>,
    pub stats: Stats,
}

fn cast_to(t: &Tensor, dt: DType) -> Result<Tensor> {
    if t.dtype() == dt {
        Ok(t.clone())
    } else {
        t.cast(dt)
    }
}

/// Gradients w.r.t. (input, weight, bias) of `y = xhat * weight + bias` for the output
/// gradient `grad`, each only where `need` says.
pub(super) fn norm_backward(
    spec: &NormSpec,
    grad: &Tensor,
    input: &Tensor,
    weight: Option<&Tensor>,
    need: [bool; 3],
) -> Result<NormGrads> {
    let in_dt = input.dtype();
    let wdt = weight.map_or(in_dt, |w| w.dtype());
    let cd = in_dt.compute_dtype();
    let x = cast_to(input, cd)?;
    let g = cast_to(grad, cd)?;
    let bshape: Vec<i64> = spec.param_bshape.iter().map(|&d| d as i64).collect();
    let gy = match weight {
        Some(w) => mul(&g, &cast_to(w, cd)?.reshape(&bshape)?)?,
        None => g.clone(),
    };
    let xs = x.reshape(&spec.grouped)?;
    let gys = gy.reshape(&spec.grouped)?;
    let dims = Some(spec.dims.as_slice());
    let mean_of = |t: &Tensor| t.mean(dims, true, None);
    let (xhat, gx) = match &spec.stats {
        Stats::Batch { eps, rms } => {
            let xc = if *rms {
                xs.clone()
            } else {
                sub(&xs, &mean_of(&xs)?)?
            };
            let rstd = adds(&mean_of(&mul(&xc, &xc)?)?, *eps)?.unary(UnaryOp::Rsqrt)?;
            let xhat = mul(&xc, &rstd)?;
            // dx = rstd * (gy - mean(gy) - xhat * mean(gy * xhat)), without mean(gy) for RMS.
            let mut inner = sub(&gys, &mul(&xhat, &mean_of(&mul(&gys, &xhat)?)?)?)?;
            if !*rms {
                inner = sub(&inner, &mean_of(&gys)?)?;
            }
            (xhat, mul(&rstd, &inner)?)
        }
        Stats::Fixed { mean, rstd } => {
            let (m, r) = (cast_to(mean, cd)?, cast_to(rstd, cd)?);
            (mul(&sub(&xs, &m)?, &r)?, mul(&gys, &r)?)
        }
    };
    let shape: Vec<i64> = input.shape().iter().map(|&d| d as i64).collect();
    let xhat = xhat.reshape(&shape)?;
    let param_shape: Vec<i64> = spec.param_shape.iter().map(|&d| d as i64).collect();
    let to_param = |t: Tensor| -> Result<Tensor> {
        cast_to(
            &t.sum_to_shape(&spec.param_bshape)?.reshape(&param_shape)?,
            wdt,
        )
    };
    let dx = need[0]
        .then(|| cast_to(&gx.reshape(&shape)?, in_dt))
        .transpose()?;
    let dw = need[1].then(|| to_param(mul(&g, &xhat)?)).transpose()?;
    let db = need[2].then(|| to_param(g.clone())).transpose()?;
    Ok((dx, dw, db))
}
