//! Small differentiable helpers so backward formulas read like maths. Each is one public
//! Tensor op, so a formula written with them is itself recorded under `create_graph=True`.

use crate::tensor::{BinaryOp, TensorOrScalar, UnaryOp};
use crate::{Result, Scalar, Tensor};

pub(crate) fn mul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.binary(b, BinaryOp::Mul)
}
pub(crate) fn div(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.binary(b, BinaryOp::Div)
}
pub(crate) fn add(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.binary(b, BinaryOp::Add)
}
pub(crate) fn sub(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.binary(b, BinaryOp::Sub)
}
/// `a * k`
pub(crate) fn muls(a: &Tensor, k: f64) -> Result<Tensor> {
    a.binary_scalar(Scalar::Float(k), BinaryOp::Mul, false)
}
/// `a + k`
pub(crate) fn adds(a: &Tensor, k: f64) -> Result<Tensor> {
    a.binary_scalar(Scalar::Float(k), BinaryOp::Add, false)
}
/// `k - a`
pub(crate) fn rsubs(a: &Tensor, k: f64) -> Result<Tensor> {
    a.binary_scalar(Scalar::Float(k), BinaryOp::Sub, true)
}
pub(crate) fn neg(a: &Tensor) -> Result<Tensor> {
    a.unary(UnaryOp::Neg)
}
/// `g` where `mask`, else 0: a selection, as PyTorch's masked gradients (threshold_backward,
/// clamp_backward), so an infinite or NaN `g` outside the mask gives 0, not NaN.
pub(crate) fn select(mask: &Tensor, g: &Tensor) -> Result<Tensor> {
    Tensor::where_cond(
        mask,
        &TensorOrScalar::Tensor(g.clone()),
        &TensorOrScalar::Scalar(Scalar::Int(0)),
    )
}
/// Real zeros shaped like `g` (PyTorch's `zeros_like(grad)` for ops whose gradient is zero
/// almost everywhere: not `g * 0`, which turns an inf or NaN `g` into NaN).
pub(crate) fn zeros_like(g: &Tensor) -> Result<Tensor> {
    Tensor::full_on(g.device(), g.shape(), Scalar::Int(0), g.dtype())
}
