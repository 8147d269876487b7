//! One-pass CPU gradients: `grad_input = f(grad_output, input)` computed in a single fused
//! loop instead of a chain of tensor ops. Used by the backward of pointwise ops (relu,
//! softplus, the parametrised activations) when the gradient need not itself be
//! differentiable; the tensor-op formula still runs under `create_graph`, on CUDA and for
//! f16/bf16, so double backward keeps working everywhere.

use super::Tensor;
use crate::{DType, Result};

/// The gradient `f(g, x)` in one pass on the CPU, when it need not be differentiable (no
/// `create_graph`) and `g` and `x` share shape and a float32/float64 dtype. `None`: use the
/// tensor-op formula (differentiable, every device and dtype).
pub(super) fn fused_grad(
    g: &Tensor,
    x: &Tensor,
    f32_fn: impl Fn(f32, f32) -> f32 + Sync + Send,
    f64_fn: impl Fn(f64, f64) -> f64 + Sync + Send,
) -> Option<Result<Tensor>> {
    fn typed<T: crate::Element>(
        g: &Tensor,
        x: &Tensor,
        f: impl Fn(T, T) -> T + Sync + Send,
    ) -> Result<Tensor> {
        // An expanded scalar gradient (`y.sum().backward()`) is written out first: map2's
        // broadcast-scalar loop runs a closure with captured parameters (softplus's beta)
        // one element at a time, the two-slice loop vectorises (softplus backward of 10M
        // f32: 48 -> 16 ms with the extra pass).
        let expanded = g.numel() > 1 && g.layout().strides.iter().all(|&s| s == 0);
        let g = if expanded { g.clone_data() } else { g.clone() };
        let (gs, xs) = (g.storage_slice::<T>()?, x.storage_slice::<T>()?);
        let out = crate::cpu::strided::map2(gs, g.layout(), xs, x.layout(), f);
        Ok(Tensor::from_vec_unchecked(out, x.shape()))
    }
    if crate::autograd::is_grad_enabled()
        || g.dtype() != x.dtype()
        || g.shape() != x.shape()
        || g.device().is_cuda()
        || x.device().is_cuda()
    {
        return None;
    }
    match x.dtype() {
        DType::F32 => Some(typed(g, x, f32_fn)),
        DType::F64 => Some(typed(g, x, f64_fn)),
        _ => None,
    }
}

/// The same closure for f32 and f64 from one generic body: `(f32 closure, f64 closure)`,
/// with `T` naming the element type inside the body.
macro_rules! both_precisions {
    (|$g:ident: T, $v:ident: T| $body:expr) => {
        (
            {
                type T = f32;
                move |$g: T, $v: T| -> T { $body }
            },
            {
                type T = f64;
                move |$g: T, $v: T| -> T { $body }
            },
        )
    };
    (|$v:ident: T| $body:expr) => {
        (
            {
                type T = f32;
                move |$v: T| -> T { $body }
            },
            {
                type T = f64;
                move |$v: T| -> T { $body }
            },
        )
    };
}
pub(super) use both_precisions;
