//! Small differentiable helpers so backward formulas read like maths. Each is one public
//! Tensor op, so a formula written with them is itself recorded under `create_graph=True`.

use crate::tensor::{BinaryOp, UnaryOp};
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
