//! Backward formulas of the elementwise ops, written with Tensor ops so that they are
//! themselves differentiable (`create_graph=True`). Results are summed back over broadcast
//! dims and cast to each input's dtype.

use super::fused_grad::{both_precisions, fused_grad};
use super::{BinaryOp, Tensor, TensorOrScalar, UnaryOp};
use crate::autograd::formula::{add, adds, div, mul, muls, neg, rsubs, select, zeros_like};
use crate::autograd::Node;
use crate::autograd::{is_grad_enabled, needs_grad, record, record_saving, SavedTensor, Saves};
use crate::{Result, Scalar};
use std::sync::{Arc, OnceLock, Weak};

/// Gradient for an input: summed to its shape and cast to its dtype.
fn reduce_to(g: Tensor, like_shape: &[usize], like_dtype: crate::DType) -> Result<Tensor> {
    let g = g.sum_to_shape(like_shape)?;
    Ok(if g.dtype() != like_dtype {
        g.cast(like_dtype)?
    } else {
        g
    })
}

/// Record the node of `a (op) b` if needed.
pub(crate) fn record_binary(op: BinaryOp, a: &Tensor, b: &Tensor, out: &Tensor) {
    use BinaryOp::*;
    if !out.dtype().is_floating_point() || !needs_grad(&[a, b]) {
        return;
    }
    let name: &'static str = match op {
        Add => "AddBackward0",
        Sub => "SubBackward0",
        Mul => "MulBackward0",
        Div => "DivBackward0",
        Pow => "PowBackward1",
        Atan2 => "Atan2Backward0",
        Maximum => "MaximumBackward0",
        Minimum => "MinimumBackward0",
        Remainder => "RemainderBackward0",
        FloorDiv => "FloorDivideBackward0",
        _ => return, // comparisons, logical and bitwise ops have no gradient
    };
    let (need_a, need_b) = (a.requires_grad(), b.requires_grad());
    let (sa, sb) = (a.shape().to_vec(), b.shape().to_vec());
    let (da, db) = (a.dtype(), b.dtype());
    // Save only the operands the formulas below read (as PyTorch does), so that an in-place
    // write to an operand that is not needed (`h[:, 0] = h[:, 0] * 2`) does not poison
    // backward.
    let (keep_a, keep_b) = match op {
        Add | Sub => (false, false),
        Mul => (need_b, need_a),
        Div => (need_b, true),
        _ => (true, true),
    };
    let saved_a = keep_a.then(|| SavedTensor::new(a, name));
    let saved_b = keep_b.then(|| SavedTensor::new(b, name));
    // A wrapped Python scalar counts as a saved tensor too: PyTorch's `(x * 2)` saves it and
    // refuses a second backward, as it does here.
    let saves = if keep_a || keep_b {
        Saves::Tensors
    } else {
        Saves::NoTensors
    };
    record_saving(
        name,
        &[a, b],
        &[out],
        saves,
        Box::new(move |grads| {
            let Some(g) = &grads[0] else {
                return Ok(vec![None, None]);
            };
            // An operand that was not saved is never read below; `g` only fills its place.
            let x = saved_a
                .as_ref()
                .map(SavedTensor::get)
                .transpose()?
                .unwrap_or(g);
            let y = saved_b
                .as_ref()
                .map(SavedTensor::get)
                .transpose()?
                .unwrap_or(g);
            let (ga, gb): (Option<Tensor>, Option<Tensor>) = match op {
                Add => (Some(g.clone()), Some(g.clone())),
                Sub => (Some(g.clone()), need_b.then(|| neg(g)).transpose()?),
                Mul => (
                    need_a.then(|| mul(g, y)).transpose()?,
                    need_b.then(|| mul(g, x)).transpose()?,
                ),
                Div => (
                    need_a.then(|| div(g, y)).transpose()?,
                    need_b
                        .then(|| neg(&div(&mul(g, x)?, &mul(y, y)?)?))
                        .transpose()?,
                ),
                Pow => {
                    let ga = if need_a {
                        // d/dx x^y = y * x^(y-1), and 0 where y == 0 (as PyTorch: at x == 0
                        // the product would be 0 * inf)
                        let p = x.binary(&adds(y, -1.0)?, Pow)?;
                        let zero_exp = y.binary_scalar(Scalar::Float(0.0), BinaryOp::Eq, false)?;
                        let d = mul(y, &p)?.masked_fill(&zero_exp, Scalar::Float(0.0))?;
                        Some(mul(g, &d)?)
                    } else {
                        None
                    };
                    let gb = if need_b {
                        // d/dy x^y = x^y * ln x, taken as 0 where x == 0 and y >= 0.
                        let r = x.binary(y, Pow)?;
                        let t = mul(&r, &x.unary(UnaryOp::Log)?)?;
                        let zero_base = x
                            .binary_scalar(Scalar::Float(0.0), Eq, false)?
                            .binary(&y.binary_scalar(Scalar::Float(0.0), Ge, false)?, LogicalAnd)?;
                        let t = zero_where(&t, &zero_base)?;
                        Some(mul(g, &t)?)
                    } else {
                        None
                    };
                    (ga, gb)
                }
                Atan2 => {
                    // PyTorch's atan2_backward: g y / (x^2 + y^2) and -g x / (x^2 + y^2),
                    // through a reciprocal that is 0 where it overflows (at the origin).
                    let recip = add(&mul(x, x)?, &mul(y, y)?)?.unary(UnaryOp::Reciprocal)?;
                    let recip =
                        recip.masked_fill(&recip.unary(UnaryOp::IsInf)?, Scalar::Float(0.0))?;
                    (
                        need_a.then(|| mul(&mul(g, y)?, &recip)).transpose()?,
                        need_b
                            .then(|| mul(&mul(g, &neg(x)?)?, &recip))
                            .transpose()?,
                    )
                }
                Maximum | Minimum => {
                    // PyTorch's formula: the winner gets the gradient, ties split it evenly,
                    // and only a loser is masked out, so where an input is NaN (no order)
                    // both inputs get all of it.
                    let (a_loses, b_loses) = if op == Maximum { (Lt, Gt) } else { (Gt, Lt) };
                    let ties = x.binary(y, Eq)?;
                    let shared = Tensor::where_cond(
                        &ties,
                        &TensorOrScalar::Tensor(muls(g, 0.5)?),
                        &TensorOrScalar::Tensor(g.clone()),
                    )?;
                    let ga = need_a
                        .then(|| shared.masked_fill(&x.binary(y, a_loses)?, Scalar::Float(0.0)))
                        .transpose()?;
                    let gb = need_b
                        .then(|| shared.masked_fill(&x.binary(y, b_loses)?, Scalar::Float(0.0)))
                        .transpose()?;
                    (ga, gb)
                }
                Remainder => (
                    Some(g.clone()),
                    need_b
                        .then(|| neg(&mul(g, &x.binary(y, FloorDiv)?)?))
                        .transpose()?,
                ),
                _ => (Some(muls(g, 0.0)?), Some(muls(g, 0.0)?)),
            };
            Ok(vec![
                if need_a {
                    ga.map(|t| reduce_to(t, &sa, da)).transpose()?
                } else {
                    None
                },
                if need_b {
                    gb.map(|t| reduce_to(t, &sb, db)).transpose()?
                } else {
                    None
                },
            ])
        }),
    );
}

/// Record the node of a unary op if needed.
pub(crate) fn record_unary(op: UnaryOp, x: &Tensor, out: &Tensor) {
    use UnaryOp::*;
    if !out.dtype().is_floating_point() || !needs_grad(&[x]) {
        return;
    }
    if op == Neg {
        // -g needs nothing saved (so the node may run backward twice, as PyTorch's)
        let dx = x.dtype();
        record_saving(
            "NegBackward0",
            &[x],
            &[out],
            Saves::NoTensors,
            Box::new(move |grads| match &grads[0] {
                Some(g) => Ok(vec![Some(neg(g)?.cast(dx)?)]),
                None => Ok(vec![None]),
            }),
        );
        return;
    }
    let name: &'static str = match op {
        Abs => "AbsBackward0",
        Sign => "SignBackward0",
        Exp => "ExpBackward0",
        Exp2 => "Exp2Backward0",
        Expm1 => "Expm1Backward0",
        Log => "LogBackward0",
        Log2 => "Log2Backward0",
        Log10 => "Log10Backward0",
        Log1p => "Log1PBackward0",
        Sqrt => "SqrtBackward0",
        Rsqrt => "RsqrtBackward0",
        Sin => "SinBackward0",
        Cos => "CosBackward0",
        Tan => "TanBackward0",
        Asin => "AsinBackward0",
        Acos => "AcosBackward0",
        Atan => "AtanBackward0",
        Sinh => "SinhBackward0",
        Cosh => "CoshBackward0",
        Tanh => "TanhBackward0",
        Asinh => "AsinhBackward0",
        Acosh => "AcoshBackward0",
        Atanh => "AtanhBackward0",
        Sigmoid => "SigmoidBackward0",
        Relu => "ReluBackward0",
        Gelu | GeluTanh => "GeluBackward0",
        Silu => "SiluBackward0",
        Softplus => "SoftplusBackward0",
        Erf => "ErfBackward0",
        Erfc => "ErfcBackward0",
        Erfinv => "ErfinvBackward0",
        Lgamma => "LgammaBackward0",
        Digamma => "DigammaBackward0",
        Trigamma => "PolygammaBackward0",
        Floor => "FloorBackward0",
        Ceil => "CeilBackward0",
        Round => "RoundBackward0",
        Trunc => "TruncBackward0",
        Frac => "FracBackward0",
        Reciprocal => "ReciprocalBackward0",
        Square => "PowBackward0",
        _ => return,
    };
    if output_only_grad(op) {
        record_from_output(name, op, x, out);
        return;
    }
    let dx = x.dtype();
    let saved_x = SavedTensor::new(x, name);
    record(
        name,
        &[x],
        &[out],
        Box::new(move |grads| {
            let Some(g) = &grads[0] else {
                return Ok(vec![None]);
            };
            let x = saved_x.get()?;
            let u = |o: UnaryOp| x.unary(o);
            let gx = match op {
                Abs => mul(g, &u(Sign)?)?,
                Sign | Floor | Ceil | Round | Trunc => zeros_like(g)?,
                Log => div(g, x)?,
                Log2 => div(g, &muls(x, std::f64::consts::LN_2)?)?,
                Log10 => div(g, &muls(x, std::f64::consts::LN_10)?)?,
                Log1p => div(g, &adds(x, 1.0)?)?,
                Sin => mul(g, &u(Cos)?)?,
                Cos => neg(&mul(g, &u(Sin)?)?)?,
                Asin => div(g, &rsubs(&mul(x, x)?, 1.0)?.unary(Sqrt)?)?,
                Acos => neg(&div(g, &rsubs(&mul(x, x)?, 1.0)?.unary(Sqrt)?)?)?,
                Atan => div(g, &adds(&mul(x, x)?, 1.0)?)?,
                Sinh => mul(g, &u(Cosh)?)?,
                Cosh => mul(g, &u(Sinh)?)?,
                Asinh => div(g, &adds(&mul(x, x)?, 1.0)?.unary(Sqrt)?)?,
                Acosh => div(g, &adds(&mul(x, x)?, -1.0)?.unary(Sqrt)?)?,
                Atanh => div(g, &rsubs(&mul(x, x)?, 1.0)?)?,
                Relu => {
                    // PyTorch's threshold_backward: g where x > 0, else 0 (NaN x gives 0)
                    let (f, d) = both_precisions!(|g: T, x: T| if x > 0.0 { g } else { 0.0 });
                    match fused_grad(g, x, f, d) {
                        Some(r) => r?,
                        None => relu_backward_recorded(g, x)?,
                    }
                }
                Gelu => {
                    // d/dx x*Phi(x) = Phi(x) + x*phi(x)
                    let cdf = muls(
                        &adds(&muls(x, std::f64::consts::FRAC_1_SQRT_2)?.unary(Erf)?, 1.0)?,
                        0.5,
                    )?;
                    let pdf = muls(
                        &muls(&mul(x, x)?, -0.5)?.unary(Exp)?,
                        0.398_942_280_401_432_7,
                    )?;
                    mul(g, &add(&cdf, &mul(x, &pdf)?)?)?
                }
                GeluTanh => {
                    let k = (2.0 / std::f64::consts::PI).sqrt();
                    let x2 = mul(x, x)?;
                    let inner = muls(&add(x, &muls(&mul(&x2, x)?, 0.044715)?)?, k)?;
                    let t = inner.unary(Tanh)?;
                    let dinner = muls(&adds(&muls(&x2, 3.0 * 0.044715)?, 1.0)?, k)?;
                    let left = muls(&adds(&t, 1.0)?, 0.5)?;
                    let right = mul(&muls(x, 0.5)?, &mul(&rsubs(&mul(&t, &t)?, 1.0)?, &dinner)?)?;
                    mul(g, &add(&left, &right)?)?
                }
                Silu => {
                    let s = u(Sigmoid)?;
                    mul(g, &mul(&s, &adds(&mul(x, &rsubs(&s, 1.0)?)?, 1.0)?)?)?
                }
                Softplus => mul(g, &u(Sigmoid)?)?,
                Erf => mul(
                    g,
                    &muls(
                        &neg(&mul(x, x)?)?.unary(Exp)?,
                        std::f64::consts::FRAC_2_SQRT_PI,
                    )?,
                )?,
                Erfc => neg(&mul(
                    g,
                    &muls(
                        &neg(&mul(x, x)?)?.unary(Exp)?,
                        std::f64::consts::FRAC_2_SQRT_PI,
                    )?,
                )?)?,
                Frac => g.clone(),
                // sqrt(pi)/2 * exp(erfinv(x)^2): from x, as PyTorch (which saves only x)
                Erfinv => {
                    let y = u(Erfinv)?;
                    let d = muls(&mul(&y, &y)?.unary(Exp)?, std::f64::consts::PI.sqrt() / 2.0)?;
                    mul(g, &d)?
                }
                Lgamma => mul(g, &u(Digamma)?)?,
                Digamma => mul(g, &u(Trigamma)?)?,
                // ψ₂(x) = -2 ζ(3, x)
                Trigamma => mul(
                    g,
                    &muls(
                        &Tensor::scalar(Scalar::Float(3.0), x.dtype())
                            .to_device(x.device())?
                            .zeta(&TensorOrScalar::Tensor(x.clone()))?,
                        -2.0,
                    )?,
                )?,
                Square => mul(g, &muls(x, 2.0)?)?,
                _ => unreachable!("filtered above, or recorded by record_from_output"),
            };
            Ok(vec![Some(cast_to(gx, dx)?)])
        }),
    );
}

fn cast_to(t: Tensor, dtype: crate::DType) -> Result<Tensor> {
    if t.dtype() != dtype {
        t.cast(dtype)
    } else {
        Ok(t)
    }
}

/// Unary ops whose derivative is a function of their output alone (the ones PyTorch saves
/// only the result for).
fn output_only_grad(op: UnaryOp) -> bool {
    use UnaryOp::*;
    matches!(
        op,
        Exp | Exp2 | Expm1 | Sqrt | Rsqrt | Tan | Tanh | Sigmoid | Reciprocal
    )
}

/// Record an op of [`output_only_grad`]: only its output is saved, as in PyTorch, so an
/// in-place change of `x` afterwards breaks neither backward nor double backward. Under
/// `create_graph` the saved output is given back its place in the graph (this node as its
/// grad_fn, held weakly to avoid a cycle), so the second-order graph reaches `x` through this
/// node instead of recomputing the op from `x`.
fn record_from_output(name: &'static str, op: UnaryOp, x: &Tensor, out: &Tensor) {
    let dx = x.dtype();
    let saved_out = SavedTensor::new(&out.detach(), name);
    let this: Arc<OnceLock<Weak<Node>>> = Arc::default();
    let this_node = this.clone();
    record(
        name,
        &[x],
        &[out],
        Box::new(move |grads| {
            let Some(g) = &grads[0] else {
                return Ok(vec![None]);
            };
            let y = saved_out.get()?;
            let y = match this_node.get().and_then(Weak::upgrade) {
                Some(node) if is_grad_enabled() => y.detach().with_grad_fn(node, 0),
                _ => y.clone(),
            };
            let gx = grad_from_output(op, g, &y)?;
            Ok(vec![Some(cast_to(gx, dx)?)])
        }),
    );
    if let Some(node) = out.grad_fn() {
        let _ = this.set(Arc::downgrade(&node));
    }
}

/// The gradient of an [`output_only_grad`] op from its output `y`.
fn grad_from_output(op: UnaryOp, g: &Tensor, y: &Tensor) -> Result<Tensor> {
    use UnaryOp::*;
    let y2 = || mul(y, y);
    Ok(match op {
        Exp => mul(g, y)?,
        Exp2 => muls(&mul(g, y)?, std::f64::consts::LN_2)?,
        Expm1 => mul(g, &adds(y, 1.0)?)?,
        Sqrt => div(g, &muls(y, 2.0)?)?,
        Rsqrt => muls(&mul(g, &mul(y, &y2()?)?)?, -0.5)?,
        Tan => mul(g, &adds(&y2()?, 1.0)?)?,
        Tanh => mul(g, &rsubs(&y2()?, 1.0)?)?,
        Sigmoid => mul(g, &mul(y, &rsubs(y, 1.0)?)?)?,
        Reciprocal => neg(&mul(g, &y2()?)?)?,
        _ => unreachable!("only ops of output_only_grad"),
    })
}

/// `t` with zeros where `mask` is true (mask has t's shape). Differentiable in `t`.
fn zero_where(t: &Tensor, mask: &Tensor) -> Result<Tensor> {
    use crate::cpu::strided;
    if t.device().is_cuda() {
        // `where` has CUDA kernels and the same gradient (zero under the mask).
        use super::index::TensorOrScalar as TS;
        let mask = mask.to_device(t.device())?;
        return Tensor::where_cond(
            &mask,
            &TS::Scalar(Scalar::Float(0.0)),
            &TS::Tensor(t.clone()),
        );
    }
    let mask = mask.broadcast_to(t.shape())?;
    let cd = t.dtype().compute_dtype();
    let tc = t.to_dtype(cd);
    let out = crate::with_float_dtype!(
        cd,
        T,
        {
            let st = tc.storage_slice::<T>()?;
            let sm = mask.storage_slice::<bool>()?;
            let v = strided::map2(st, tc.layout(), sm, mask.layout(), |x: T, m: bool| {
                if m {
                    0.0 as T
                } else {
                    x
                }
            });
            Tensor::from_vec_unchecked(v, t.shape())
        },
        return Err(crate::Error::UnsupportedDType {
            op: "zero_where",
            dtype: t.dtype()
        })
    )
    .to_dtype(t.dtype());
    if needs_grad(&[t]) {
        let mask = mask.clone();
        record(
            "WhereBackward0",
            &[t],
            &[&out],
            Box::new(move |grads| match &grads[0] {
                Some(g) => Ok(vec![Some(zero_where(g, &mask)?)]),
                None => Ok(vec![None]),
            }),
        );
    }
    Ok(out)
}

impl Tensor {
    /// Convert to `dtype`, recording a node when a float tensor that requires grad is cast
    /// to another float dtype (`Tensor.to(dtype)` in PyTorch).
    pub fn cast(&self, dtype: crate::DType) -> Result<Tensor> {
        if dtype == self.dtype() {
            return Ok(self.clone());
        }
        let out = self.to_dtype(dtype);
        if dtype.is_floating_point() && needs_grad(&[self]) {
            let src = self.dtype();
            record_saving(
                "ToCopyBackward0",
                &[self],
                &[&out],
                Saves::NoTensors,
                Box::new(move |grads| match &grads[0] {
                    Some(g) => Ok(vec![Some(g.cast(src)?)]),
                    None => Ok(vec![None]),
                }),
            );
        }
        Ok(out)
    }
}

/// Record the copy of `x` to another device (`Tensor.to(device)`): the gradient goes back to
/// `x`'s device.
pub(crate) fn record_to_device(x: &Tensor, out: &Tensor) {
    if needs_grad(&[x]) {
        let src = x.device();
        record_saving(
            "ToCopyBackward0",
            &[x],
            &[out],
            Saves::NoTensors,
            Box::new(move |grads| match &grads[0] {
                Some(g) => Ok(vec![Some(g.to_device(src)?)]),
                None => Ok(vec![None]),
            }),
        );
    }
}

/// `g * (x > 0)` recorded as PyTorch's `threshold_backward` (see [`piecewise_constant_grad`]):
/// a selection, so an inf or NaN gradient where x <= 0 gives 0; under `create_graph` the
/// second-order graph still reaches `x` and parameters behind it get zeros (not `None`) as in
/// PyTorch, so optimizers treat them alike (weight decay, momentum).
fn relu_backward_recorded(g: &Tensor, x: &Tensor) -> Result<Tensor> {
    let mask = x.binary_scalar(Scalar::Float(0.0), BinaryOp::Gt, false)?;
    piecewise_constant_grad("ThresholdBackwardBackward0", g, x, move |t| {
        select(&mask, t)
    })
}

/// `apply(g)` for a gradient formula linear in `g` whose factor depends on `x` only through
/// comparisons (a piecewise-constant derivative), recorded as one node `name` that is
/// differentiable in `g` and, with a zero gradient, in `x` (as PyTorch's `*_backward` ops): under
/// `create_graph` the parameters behind `x` then get zeros, not None.
pub(super) fn piecewise_constant_grad(
    name: &'static str,
    g: &Tensor,
    x: &Tensor,
    apply: impl Fn(&Tensor) -> Result<Tensor> + Send + Sync + 'static,
) -> Result<Tensor> {
    let out = crate::no_grad(|| apply(g))?;
    if needs_grad(&[g, x]) {
        let (shape, dtype, device) = (x.shape().to_vec(), x.dtype(), x.device());
        record(
            name,
            &[g, x],
            &[&out],
            Box::new(move |grads| {
                let Some(gg) = &grads[0] else {
                    return Ok(vec![None, None]);
                };
                let zeros = Tensor::full_on(device, &shape, Scalar::Int(0), dtype)?;
                Ok(vec![Some(apply(gg)?), Some(zeros)])
            }),
        );
    }
    Ok(out)
}
