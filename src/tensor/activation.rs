//! Activations with parameters (`leaky_relu`, the `elu` family, `hardsigmoid`, `hardswish`,
//! `log_sigmoid`): one fused pass on the CPU, a short chain of device kernels on CUDA, and one
//! autograd node saving only the input, with PyTorch's gradient at the kinks (leaky_relu
//! passes `negative_slope` at 0, elu takes its negative branch at 0, log_sigmoid's gradient
//! at 0 is 1/2). The backward formulas are tensor ops, so double backward works everywhere;
//! when the gradient need not be differentiable (no `create_graph`) the CPU computes it in one
//! fused pass over `(grad, input)` instead ([`super::fused_grad`]).

use super::elementwise::{map_one, record_misc};
use super::elementwise_grad::piecewise_constant_grad;
use super::fused_grad::{both_precisions, fused_grad};
use super::index::TensorOrScalar;
use super::Tensor;
use crate::autograd::formula::select;
use crate::cpu::vmath::VecMath;
use crate::{BinaryOp, DType, Error, Result, Scalar, UnaryOp};

/// The parameters of `elu`, `selu` and `celu`:
/// `scale * (x if x > 0 else alpha * (exp(x * input_scale) - 1))`.
#[derive(Clone, Copy, Debug)]
pub struct EluParams {
    pub alpha: f64,
    pub scale: f64,
    pub input_scale: f64,
}

fn ts(t: Tensor) -> TensorOrScalar {
    TensorOrScalar::Tensor(t)
}

fn num(v: f64) -> TensorOrScalar {
    TensorOrScalar::Scalar(Scalar::Float(v))
}

fn cmp(x: &Tensor, v: f64, op: BinaryOp) -> Result<Tensor> {
    x.binary_scalar(Scalar::Float(v), op, false)
}

fn scaled(x: &Tensor, k: f64) -> Result<Tensor> {
    x.binary_scalar(Scalar::Float(k), BinaryOp::Mul, false)
}

/// PyTorch's "<op>_cpu" / "<op>_cuda" error for a non-float input.
fn require_float(x: &Tensor, cpu: &'static str, cuda: &'static str) -> Result<()> {
    if x.dtype().is_floating_point() {
        return Ok(());
    }
    let op = if x.device().is_cuda() { cuda } else { cpu };
    Err(Error::UnsupportedDType {
        op,
        dtype: x.dtype(),
    })
}

/// `f` over every element in the compute dtype (f16/bf16 in f32), rounded back.
fn fused_cpu(
    x: &Tensor,
    op: &'static str,
    f32_fn: impl Fn(f32) -> f32 + Sync + Send,
    f64_fn: impl Fn(f64) -> f64 + Sync + Send,
) -> Result<Tensor> {
    let dt = x.dtype();
    let cd = dt.compute_dtype();
    let xc = x.to_dtype(cd);
    let out = match cd {
        DType::F64 => map_one(&xc, op, f64_fn)?,
        _ => map_one(&xc, op, f32_fn)?,
    };
    Ok(out.to_dtype(dt))
}

impl Tensor {
    /// `leaky_relu(negative_slope)`: `x if x > 0 else negative_slope * x`.
    pub fn leaky_relu(&self, negative_slope: f64) -> Result<Tensor> {
        require_float(self, "leaky_relu_cpu", "leaky_relu_cuda")?;
        let out = crate::no_grad(|| -> Result<Tensor> {
            if self.device().is_cuda() {
                let pos = cmp(self, 0.0, BinaryOp::Gt)?;
                return Tensor::where_cond(
                    &pos,
                    &ts(self.clone()),
                    &ts(scaled(self, negative_slope)?),
                );
            }
            let (f, d) = both_precisions!(|v: T| if v > 0.0 { v } else { v * negative_slope as T });
            fused_cpu(self, "leaky_relu", f, d)
        })?;
        record_misc("LeakyReluBackward0", &[self], &out, move |g, xs| {
            let (f, d) =
                both_precisions!(|g: T, x: T| if x > 0.0 { g } else { g * negative_slope as T });
            if let Some(gx) = fused_grad(g, &xs[0], f, d) {
                return Ok(vec![Some(gx?)]);
            }
            let pos = cmp(&xs[0], 0.0, BinaryOp::Gt)?;
            let gx = piecewise_constant_grad("LeakyReluBackwardBackward0", g, &xs[0], move |t| {
                Tensor::where_cond(&pos, &ts(t.clone()), &ts(scaled(t, negative_slope)?))
            })?;
            Ok(vec![Some(gx)])
        });
        Ok(out)
    }

    /// `elu` / `selu` / `celu` (see [`EluParams`]); `node` names the autograd node
    /// (`EluBackward0`, or `CeluBackward0` for celu, as PyTorch).
    pub fn elu(&self, p: EluParams, node: &'static str) -> Result<Tensor> {
        require_float(self, "elu_cpu", "elu_cuda")?;
        let EluParams {
            alpha,
            scale,
            input_scale,
        } = p;
        let out = crate::no_grad(|| -> Result<Tensor> {
            if self.device().is_cuda() {
                let pos = cmp(self, 0.0, BinaryOp::Gt)?;
                // exp of min(x, 0) only: the branch not taken must not overflow
                let neg_part = Tensor::where_cond(&pos, &num(0.0), &ts(self.clone()))?;
                let neg = scaled(
                    &scaled(&neg_part, input_scale)?.unary(UnaryOp::Expm1)?,
                    alpha * scale,
                )?;
                return Tensor::where_cond(&pos, &ts(scaled(self, scale)?), &ts(neg));
            }
            // Both branches computed, then selected, so the loop vectorises. The negative one
            // sees min(v, 0) (no overflow); it must not be a select on `v > 0` too, or the
            // compiler merges the two into a branch. NaN is put back at the end.
            let (f, d) = both_precisions!(|v: T| {
                let pos = v * scale as T;
                let neg = (v.min(0.0) * input_scale as T).vexpm1() * (alpha * scale) as T;
                let r = if v > 0.0 { pos } else { neg };
                if v.is_nan() {
                    v
                } else {
                    r
                }
            });
            fused_cpu(self, "elu", f, d)
        })?;
        record_misc(node, &[self], &out, move |g, xs| {
            let x = &xs[0];
            let (f, d) = both_precisions!(|g: T, x: T| {
                // min(x, 0) that keeps NaN (as the formula below), so exp cannot overflow
                let neg_part = if x > 0.0 { 0.0 } else { x };
                let neg =
                    g * ((neg_part * input_scale as T).vexp() * (scale * alpha * input_scale) as T);
                if x > 0.0 {
                    g * scale as T
                } else {
                    neg
                }
            });
            if let Some(gx) = fused_grad(g, x, f, d) {
                return Ok(vec![Some(gx?)]);
            }
            let pos = cmp(x, 0.0, BinaryOp::Gt)?;
            // d/dx = scale for x > 0, else scale * alpha * input_scale * exp(x * input_scale)
            // (exp of min(x, 0): the unused branch stays finite for double backward).
            let neg_part = Tensor::where_cond(&pos, &num(0.0), &ts(x.clone()))?;
            let slope = scaled(
                &scaled(&neg_part, input_scale)?.unary(UnaryOp::Exp)?,
                scale * alpha * input_scale,
            )?;
            let neg = g.binary(&slope, BinaryOp::Mul)?;
            let gx = Tensor::where_cond(&pos, &ts(scaled(g, scale)?), &ts(neg))?;
            Ok(vec![Some(gx)])
        });
        Ok(out)
    }

    /// `hardsigmoid`: `clamp(x / 6 + 1/2, 0, 1)`.
    pub fn hardsigmoid(&self) -> Result<Tensor> {
        require_float(self, "hardsigmoid_cpu", "hardsigmoid_cuda")?;
        let out = crate::no_grad(|| -> Result<Tensor> {
            if self.device().is_cuda() {
                let lin = scaled(self, 1.0 / 6.0)?.binary_scalar(
                    Scalar::Float(0.5),
                    BinaryOp::Add,
                    false,
                )?;
                return lin.clamp(Some(&num(0.0)), Some(&num(1.0)));
            }
            let (f, d) = both_precisions!(|v: T| (v / 6.0 + 0.5).clamp(0.0, 1.0));
            fused_cpu(self, "hardsigmoid", f, d)
        })?;
        record_misc("HardsigmoidBackward0", &[self], &out, |g, xs| {
            let x = &xs[0];
            // a selection: an inf/NaN gradient outside (-3, 3) still gives 0
            let (f, d) =
                both_precisions!(|g: T, x: T| if x > -3.0 && x < 3.0 { g / 6.0 } else { 0.0 });
            if let Some(gx) = fused_grad(g, x, f, d) {
                return Ok(vec![Some(gx?)]);
            }
            let inside = cmp(x, -3.0, BinaryOp::Gt)?
                .binary(&cmp(x, 3.0, BinaryOp::Lt)?, BinaryOp::LogicalAnd)?;
            let gx = piecewise_constant_grad("HardsigmoidBackwardBackward0", g, x, move |t| {
                select(&inside, &scaled(t, 1.0 / 6.0)?)
            })?;
            Ok(vec![Some(gx)])
        });
        Ok(out)
    }

    /// `hardswish`: `x * hardsigmoid(x)`.
    pub fn hardswish(&self) -> Result<Tensor> {
        require_float(self, "hardswish_cpu", "hardswish_cuda")?;
        let out = crate::no_grad(|| -> Result<Tensor> {
            if self.device().is_cuda() {
                return self.binary(&self.hardsigmoid()?, BinaryOp::Mul);
            }
            let (f, d) = both_precisions!(|v: T| v * (v / 6.0 + 0.5).clamp(0.0, 1.0));
            fused_cpu(self, "hardswish", f, d)
        })?;
        record_misc("HardswishBackward0", &[self], &out, |g, xs| {
            // 0 up to -3, x/3 + 1/2 strictly between -3 and 3, 1 from 3 on (PyTorch 2.15)
            let x = &xs[0];
            let (f, d) = both_precisions!(|g: T, x: T| if x <= -3.0 {
                0.0
            } else if x < 3.0 {
                g * (x / 3.0 + 0.5)
            } else {
                g
            });
            if let Some(gx) = fused_grad(g, x, f, d) {
                return Ok(vec![Some(gx?)]);
            }
            let mid = g.binary(
                &scaled(x, 1.0 / 3.0)?.binary_scalar(Scalar::Float(0.5), BinaryOp::Add, false)?,
                BinaryOp::Mul,
            )?;
            let upper = Tensor::where_cond(&cmp(x, 3.0, BinaryOp::Lt)?, &ts(mid), &ts(g.clone()))?;
            let gx = Tensor::where_cond(&cmp(x, -3.0, BinaryOp::Le)?, &num(0.0), &ts(upper))?;
            Ok(vec![Some(gx)])
        });
        Ok(out)
    }

    /// `log_sigmoid`: `log(1 / (1 + exp(-x))) = min(x, 0) - log1p(exp(-|x|))`.
    pub fn log_sigmoid(&self) -> Result<Tensor> {
        require_float(self, "log_sigmoid_cpu", "log_sigmoid_cuda")?;
        let out = crate::no_grad(|| -> Result<Tensor> {
            if self.device().is_cuda() {
                let tail = self
                    .unary(UnaryOp::Abs)?
                    .unary(UnaryOp::Neg)?
                    .unary(UnaryOp::Exp)?
                    .unary(UnaryOp::Log1p)?;
                let low = self.clamp(None, Some(&num(0.0)))?;
                return low.binary(&tail, BinaryOp::Sub);
            }
            let (f, d) = both_precisions!(|v: T| v.min(0.0) - (-v.abs()).vexp().vln1p());
            fused_cpu(self, "log_sigmoid", f, d)
        })?;
        record_misc("LogSigmoidBackward0", &[self], &out, |g, xs| {
            // d/dx = sigmoid(-x) = 1 - sigmoid(x) = 1 / (1 + exp(x))
            let (f, d) = both_precisions!(|g: T, x: T| g / (1.0 + x.vexp()));
            if let Some(gx) = fused_grad(g, &xs[0], f, d) {
                return Ok(vec![Some(gx?)]);
            }
            let s = xs[0].unary(UnaryOp::Neg)?.unary(UnaryOp::Sigmoid)?;
            Ok(vec![Some(g.binary(&s, BinaryOp::Mul)?)])
        });
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: Vec<f64>) -> Tensor {
        let n = v.len();
        Tensor::from_vec(v, &[n]).unwrap()
    }

    fn grad_of(f: impl Fn(&Tensor) -> Tensor, v: Vec<f64>) -> (Vec<f64>, Vec<f64>) {
        let x = t(v);
        x.set_requires_grad(true).unwrap();
        let y = f(&x);
        let s = y.sum(None, false, None).unwrap();
        crate::autograd::backward(&[s], vec![None], None, false, None).unwrap();
        (
            y.to_vec::<f64>().unwrap(),
            x.grad().unwrap().to_vec::<f64>().unwrap(),
        )
    }

    #[test]
    fn kinks_follow_pytorch() {
        let (y, g) = grad_of(|x| x.leaky_relu(0.1).unwrap(), vec![-2.0, 0.0, 3.0]);
        assert_eq!(y, vec![-0.2, 0.0, 3.0]);
        assert_eq!(g, vec![0.1, 0.1, 1.0]);
        let p = EluParams {
            alpha: 1.0,
            scale: 1.0,
            input_scale: 1.0,
        };
        let (y, g) = grad_of(|x| x.elu(p, "EluBackward0").unwrap(), vec![0.0, 2.0]);
        assert_eq!(y, vec![0.0, 2.0]);
        assert_eq!(g, vec![1.0, 1.0]);
        let (_, g) = grad_of(|x| x.log_sigmoid().unwrap(), vec![0.0]);
        assert_eq!(g, vec![0.5]);
        let (y, g) = grad_of(|x| x.hardswish().unwrap(), vec![-3.0, 3.0, 0.0]);
        assert_eq!(y, vec![0.0, 3.0, 0.0]);
        assert_eq!(g, vec![0.0, 1.0, 0.5]);
    }

    #[test]
    fn integers_are_refused() {
        let x = Tensor::from_vec(vec![1i64, 2], &[2]).unwrap();
        let e = x.leaky_relu(0.1).unwrap_err().to_string();
        assert_eq!(e, "\"leaky_relu_cpu\" not implemented for 'Long'");
    }
}
