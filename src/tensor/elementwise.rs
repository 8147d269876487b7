//! Elementwise ops with broadcasting and PyTorch's type promotion. Python scalars are weakly
//! typed (they only raise the category). f16/bf16 are computed in f32 and rounded back.

use super::Tensor;
use crate::autograd::no_grad;
use crate::cpu::strided;
use crate::dtype::{Category, ResultType};
use crate::layout::broadcast_shapes;
use crate::{with_dtype, with_float_dtype, DType, Element, Error, FloatElement, Result, Scalar};

/// Binary elementwise operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Remainder,
    Pow,
    Atan2,
    Maximum,
    Minimum,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    LogicalAnd,
    LogicalOr,
    LogicalXor,
    BitAnd,
    BitOr,
    BitXor,
}

impl BinaryOp {
    pub fn name(self) -> &'static str {
        use BinaryOp::*;
        match self {
            Add => "add",
            Sub => "sub",
            Mul => "mul",
            Div => "div",
            FloorDiv => "floor_divide",
            Remainder => "remainder",
            Pow => "pow",
            Atan2 => "atan2",
            Maximum => "maximum",
            Minimum => "minimum",
            Eq => "eq",
            Ne => "ne",
            Lt => "lt",
            Le => "le",
            Gt => "gt",
            Ge => "ge",
            LogicalAnd => "logical_and",
            LogicalOr => "logical_or",
            LogicalXor => "logical_xor",
            BitAnd => "bitwise_and",
            BitOr => "bitwise_or",
            BitXor => "bitwise_xor",
        }
    }
    fn is_comparison(self) -> bool {
        use BinaryOp::*;
        matches!(self, Eq | Ne | Lt | Le | Gt | Ge)
    }
    fn is_logical(self) -> bool {
        use BinaryOp::*;
        matches!(self, LogicalAnd | LogicalOr | LogicalXor)
    }
    fn is_bitwise(self) -> bool {
        use BinaryOp::*;
        matches!(self, BitAnd | BitOr | BitXor)
    }
    /// Ops whose result is floating point even for integer inputs.
    fn promotes_int_to_float(self) -> bool {
        matches!(self, BinaryOp::Div | BinaryOp::Atan2)
    }

    /// (dtype the kernel computes in, dtype of the result) for promoted input dtype `common`.
    fn dtypes(self, common: DType) -> Result<(DType, DType)> {
        if self.is_comparison() {
            return Ok((common.compute_dtype(), DType::Bool));
        }
        if self.is_logical() {
            return Ok((common.compute_dtype(), DType::Bool));
        }
        if self.is_bitwise() {
            if common.is_floating_point() {
                return Err(Error::UnsupportedDType {
                    op: self.name(),
                    dtype: common,
                });
            }
            return Ok((common, common));
        }
        let out = if self.promotes_int_to_float() && !common.is_floating_point() {
            crate::default_dtype()
        } else {
            common
        };
        if out == DType::Bool && matches!(self, BinaryOp::Sub) {
            return Err(Error::Runtime(
                "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.".into(),
            ));
        }
        if out == DType::Bool
            && matches!(
                self,
                BinaryOp::FloorDiv | BinaryOp::Remainder | BinaryOp::Pow
            )
        {
            return Err(Error::UnsupportedDType {
                op: self.name(),
                dtype: out,
            });
        }
        Ok((out.compute_dtype(), out))
    }
}

/// Unary elementwise operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    Neg,
    Abs,
    Sign,
    Exp,
    Exp2,
    Expm1,
    Log,
    Log2,
    Log10,
    Log1p,
    Sqrt,
    Rsqrt,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Asinh,
    Acosh,
    Atanh,
    Sigmoid,
    Relu,
    Gelu,
    GeluTanh,
    Silu,
    Softplus,
    Erf,
    Erfc,
    Erfinv,
    Floor,
    Ceil,
    Round,
    Trunc,
    Frac,
    Reciprocal,
    Square,
    LogicalNot,
    BitNot,
    IsNan,
    IsInf,
    IsFinite,
    IsPosInf,
    IsNegInf,
}

impl UnaryOp {
    pub fn name(self) -> &'static str {
        use UnaryOp::*;
        match self {
            Neg => "neg",
            Abs => "abs",
            Sign => "sign",
            Exp => "exp",
            Exp2 => "exp2",
            Expm1 => "expm1",
            Log => "log",
            Log2 => "log2",
            Log10 => "log10",
            Log1p => "log1p",
            Sqrt => "sqrt",
            Rsqrt => "rsqrt",
            Sin => "sin",
            Cos => "cos",
            Tan => "tan",
            Asin => "asin",
            Acos => "acos",
            Atan => "atan",
            Sinh => "sinh",
            Cosh => "cosh",
            Tanh => "tanh",
            Asinh => "asinh",
            Acosh => "acosh",
            Atanh => "atanh",
            Sigmoid => "sigmoid",
            Relu => "relu",
            Gelu => "gelu",
            GeluTanh => "gelu",
            Silu => "silu",
            Softplus => "softplus",
            Erf => "erf",
            Erfc => "erfc",
            Erfinv => "erfinv",
            Floor => "floor",
            Ceil => "ceil",
            Round => "round",
            Trunc => "trunc",
            Frac => "frac",
            Reciprocal => "reciprocal",
            Square => "square",
            LogicalNot => "logical_not",
            BitNot => "bitwise_not",
            IsNan => "isnan",
            IsInf => "isinf",
            IsFinite => "isfinite",
            IsPosInf => "isposinf",
            IsNegInf => "isneginf",
        }
    }
}

/// Float maths for one element; `None` for ops that are not float->float.
#[inline(always)]
fn float_unary<T: FloatElement>(op: UnaryOp, x: T) -> T {
    use UnaryOp::*;
    let f = |v: f64| <T as Element>::from_f64(v);
    let zero = f(0.0);
    let one = f(1.0);
    match op {
        Neg => -x,
        Abs => x.abs(),
        Sign => {
            if x > zero {
                one
            } else if x < zero {
                -one
            } else {
                x * zero
            }
        }
        Exp => x.exp(),
        Exp2 => x.exp2(),
        Expm1 => x.exp_m1(),
        Log => x.ln(),
        Log2 => x.log2(),
        Log10 => x.log10(),
        Log1p => x.ln_1p(),
        Sqrt => x.sqrt(),
        Rsqrt => x.sqrt().recip(),
        Sin => x.sin(),
        Cos => x.cos(),
        Tan => x.tan(),
        Asin => x.asin(),
        Acos => x.acos(),
        Atan => x.atan(),
        Sinh => x.sinh(),
        Cosh => x.cosh(),
        Tanh => x.tanh(),
        Asinh => x.asinh(),
        Acosh => x.acosh(),
        Atanh => x.atanh(),
        Sigmoid => one / (one + (-x).exp()),
        Relu => {
            if x > zero || x.is_nan() {
                x
            } else {
                zero
            }
        }
        Gelu => {
            x * f(0.5)
                * (one
                    + <T as Element>::from_f64(crate::math::erf(
                        Element::to_f64(x) / std::f64::consts::SQRT_2,
                    )))
        }
        GeluTanh => {
            let k = f((2.0 / std::f64::consts::PI).sqrt());
            f(0.5) * x * (one + (k * (x + f(0.044715) * x * x * x)).tanh())
        }
        Silu => x / (one + (-x).exp()),
        Softplus => {
            // log(1 + exp(x)), linear above the threshold 20 as in PyTorch.
            if x > f(20.0) {
                x
            } else {
                x.exp().ln_1p()
            }
        }
        Erf => f(crate::math::erf(Element::to_f64(x))),
        Erfc => f(crate::math::erfc(Element::to_f64(x))),
        Erfinv => f(crate::math::erfinv(Element::to_f64(x))),
        Floor => x.floor(),
        Ceil => x.ceil(),
        Round => {
            // Round half to even, as PyTorch and NumPy do.
            let r = x.round();
            if (x - x.trunc()).abs() == f(0.5) {
                f(2.0) * (x / f(2.0)).round()
            } else {
                r
            }
        }
        Trunc => x.trunc(),
        Frac => x - x.trunc(),
        Reciprocal => x.recip(),
        Square => x * x,
        LogicalNot | BitNot | IsNan | IsInf | IsFinite | IsPosInf | IsNegInf => {
            unreachable!("not a float->float op")
        }
    }
}

impl Tensor {
    fn check_same_device(&self, other: &Tensor, op: &'static str) -> Result<()> {
        if self.device() != other.device() {
            return Err(Error::DeviceMismatch {
                op,
                lhs: self.device(),
                rhs: other.device(),
            });
        }
        Ok(())
    }

    /// `self (op) other` with broadcasting and type promotion.
    pub fn binary(&self, other: &Tensor, op: BinaryOp) -> Result<Tensor> {
        self.check_same_device(other, op.name())?;
        let common = ResultType::new()
            .tensor(self.dtype(), self.ndim())
            .tensor(other.dtype(), other.ndim())
            .finish();
        let out = no_grad(|| binary_kernel(self, other, op, common))?;
        super::elementwise_grad::record_binary(op, self, other, &out);
        Ok(out)
    }

    /// `self (op) scalar`, or `scalar (op) self` when `reversed`.
    pub fn binary_scalar(&self, s: Scalar, op: BinaryOp, reversed: bool) -> Result<Tensor> {
        let common = ResultType::new()
            .tensor(self.dtype(), self.ndim())
            .scalar(s)
            .finish();
        let st = Tensor::scalar(s, common);
        let (a, b) = if reversed { (&st, self) } else { (self, &st) };
        let out = no_grad(|| binary_kernel(a, b, op, common))?;
        super::elementwise_grad::record_binary(op, a, b, &out);
        Ok(out)
    }

    /// In place `self = self (op) other`. The result dtype must be castable to `self`'s
    /// dtype under PyTorch's rules (no float result into an integer tensor).
    pub fn binary_(&self, other: &Tensor, op: BinaryOp) -> Result<()> {
        self.inplace(&[other], op.name(), |me| me.binary(other, op))
    }

    pub fn binary_scalar_(&self, s: Scalar, op: BinaryOp) -> Result<()> {
        self.inplace(&[], op.name(), |me| me.binary_scalar(s, op, false))
    }

    /// Write an op's result into `self` (checking PyTorch's in-place cast rule).
    pub(crate) fn assign_result(&self, result: Tensor, op: &'static str) -> Result<()> {
        if result.dtype().category() > self.dtype().category() {
            return Err(Error::Runtime(format!(
                "result type {} can't be cast to the desired output type {} (in-place {op})",
                result.dtype().torch_name(),
                self.dtype().torch_name()
            )));
        }
        if result.shape() != self.shape() {
            return Err(Error::shape(
                op,
                self.shape(),
                result.shape(),
                format!(
                    "output with shape {:?} doesn't match the broadcast shape {:?}",
                    self.shape(),
                    result.shape()
                ),
            ));
        }
        self.copy_raw(&result)
    }

    /// Apply a unary op.
    pub fn unary(&self, op: UnaryOp) -> Result<Tensor> {
        let out = no_grad(|| self.unary_raw(op))?;
        super::elementwise_grad::record_unary(op, self, &out);
        Ok(out)
    }

    fn unary_raw(&self, op: UnaryOp) -> Result<Tensor> {
        use UnaryOp::*;
        let dt = self.dtype();
        match op {
            IsNan | IsInf | IsFinite | IsPosInf | IsNegInf => {
                if !dt.is_floating_point() {
                    let v = matches!(op, IsFinite);
                    return Ok(Tensor::full(self.shape(), Scalar::Bool(v), DType::Bool));
                }
                let x = self.to_dtype(dt.compute_dtype());
                return with_float_dtype!(
                    x.dtype(),
                    T,
                    {
                        let s = x.storage_slice::<T>()?;
                        let out = strided::map1(s, x.layout(), |v: T| match op {
                            IsNan => v.is_nan(),
                            IsInf => v.is_infinite(),
                            IsFinite => v.is_finite(),
                            IsPosInf => v.is_infinite() && v > T::zero(),
                            _ => v.is_infinite() && v < T::zero(),
                        });
                        Ok(Tensor::from_vec_unchecked(out, self.shape()))
                    },
                    unreachable!()
                );
            }
            LogicalNot => {
                return with_dtype!(dt, T, {
                    let s = self.storage_slice::<T>()?;
                    let out = strided::map1(s, self.layout(), |v: T| v.is_zero());
                    Ok(Tensor::from_vec_unchecked(out, self.shape()))
                });
            }
            BitNot => {
                return match dt {
                    DType::Bool => self.unary_raw(LogicalNot),
                    DType::U8 => int_map(self, |v: u8| !v),
                    DType::I8 => int_map(self, |v: i8| !v),
                    DType::I16 => int_map(self, |v: i16| !v),
                    DType::I32 => int_map(self, |v: i32| !v),
                    DType::I64 => int_map(self, |v: i64| !v),
                    _ => Err(Error::UnsupportedDType {
                        op: op.name(),
                        dtype: dt,
                    }),
                };
            }
            _ => {}
        }
        // Integer inputs: some ops keep the integer dtype, the rest compute in float.
        if !dt.is_floating_point() {
            let keeps_int = matches!(
                op,
                Neg | Abs | Sign | Floor | Ceil | Round | Trunc | Square | Relu
            );
            if keeps_int {
                if dt == DType::Bool && matches!(op, Neg | Sign | Square) {
                    return Err(Error::UnsupportedDType {
                        op: op.name(),
                        dtype: dt,
                    });
                }
                return with_dtype!(dt, T, {
                    let s = self.storage_slice::<T>()?;
                    let out = strided::map1(s, self.layout(), |v: T| {
                        let z = T::zero();
                        match op {
                            Neg => z.sub(v),
                            Abs => {
                                if v < z {
                                    z.sub(v)
                                } else {
                                    v
                                }
                            }
                            Sign => {
                                if v > z {
                                    T::one()
                                } else if v < z {
                                    z.sub(T::one())
                                } else {
                                    z
                                }
                            }
                            Square => v.mul(v),
                            Relu => {
                                if v > z {
                                    v
                                } else {
                                    z
                                }
                            }
                            _ => v,
                        }
                    });
                    Ok(Tensor::from_vec_unchecked(out, self.shape()))
                });
            }
            return self.to_dtype(crate::default_dtype()).unary_raw(op);
        }
        let cd = dt.compute_dtype();
        let x = self.to_dtype(cd);
        let out = with_float_dtype!(
            cd,
            T,
            {
                let s = x.storage_slice::<T>()?;
                Tensor::from_vec_unchecked(
                    strided::map1(s, x.layout(), |v: T| float_unary(op, v)),
                    self.shape(),
                )
            },
            unreachable!()
        );
        Ok(out.to_dtype(dt))
    }

    /// Apply a unary op in place.
    pub fn unary_(&self, op: UnaryOp) -> Result<()> {
        self.inplace(&[], op.name(), |me| me.unary(op))
    }
}

fn int_map<T: Element>(t: &Tensor, f: impl Fn(T) -> T + Sync + Send) -> Result<Tensor> {
    let s = t.storage_slice::<T>()?;
    Ok(Tensor::from_vec_unchecked(
        strided::map1(s, t.layout(), f),
        t.shape(),
    ))
}

/// The shared binary kernel: cast both operands to the compute dtype, broadcast, map.
fn binary_kernel(a: &Tensor, b: &Tensor, op: BinaryOp, common: DType) -> Result<Tensor> {
    let (compute, out_dtype) = op.dtypes(common)?;
    let shape = broadcast_shapes(op.name(), a.shape(), b.shape())?;
    let a = a.to_dtype(compute);
    let b = b.to_dtype(compute);
    let la = a.layout().broadcast_to(op.name(), &shape)?;
    let lb = b.layout().broadcast_to(op.name(), &shape)?;
    use BinaryOp::*;
    macro_rules! run {
        ($T:ty, $f:expr) => {{
            let sa = a.storage_slice::<$T>()?;
            let sb = b.storage_slice::<$T>()?;
            Tensor::from_vec_unchecked(strided::map2(sa, &la, sb, &lb, $f), &shape)
        }};
    }
    let out = if op.is_comparison() || op.is_logical() {
        with_dtype!(compute, T, {
            match op {
                Eq => run!(T, |x: T, y: T| x == y),
                Ne => run!(T, |x: T, y: T| x != y),
                Lt => run!(T, |x: T, y: T| x < y),
                Le => run!(T, |x: T, y: T| x <= y),
                Gt => run!(T, |x: T, y: T| x > y),
                Ge => run!(T, |x: T, y: T| x >= y),
                LogicalAnd => run!(T, |x: T, y: T| !x.is_zero() && !y.is_zero()),
                LogicalOr => run!(T, |x: T, y: T| !x.is_zero() || !y.is_zero()),
                _ => run!(T, |x: T, y: T| x.is_zero() != y.is_zero()),
            }
        })
    } else if op.is_bitwise() {
        macro_rules! bit {
            ($T:ty) => {
                match op {
                    BitAnd => run!($T, |x: $T, y: $T| x & y),
                    BitOr => run!($T, |x: $T, y: $T| x | y),
                    _ => run!($T, |x: $T, y: $T| x ^ y),
                }
            };
        }
        match compute {
            DType::Bool => bit!(bool),
            DType::U8 => bit!(u8),
            DType::I8 => bit!(i8),
            DType::I16 => bit!(i16),
            DType::I32 => bit!(i32),
            DType::I64 => bit!(i64),
            _ => unreachable!("checked in dtypes()"),
        }
    } else if compute.category() == Category::Float {
        with_float_dtype!(
            compute,
            T,
            {
                match op {
                    Add => run!(T, |x: T, y: T| x + y),
                    Sub => run!(T, |x: T, y: T| x - y),
                    Mul => run!(T, |x: T, y: T| x * y),
                    Div => run!(T, |x: T, y: T| x / y),
                    FloorDiv => run!(T, |x: T, y: T| (x / y).floor()),
                    Remainder => run!(T, |x: T, y: T| {
                        let r = x % y;
                        if r != 0.0 as T && ((r < 0.0 as T) != (y < 0.0 as T)) {
                            r + y
                        } else {
                            r
                        }
                    }),
                    Pow => run!(T, |x: T, y: T| x.powf(y)),
                    Atan2 => run!(T, |x: T, y: T| x.atan2(y)),
                    Maximum => run!(T, |x: T, y: T| if x.is_nan() || x > y {
                        x
                    } else {
                        y // also propagates a NaN in y
                    }),
                    Minimum => run!(T, |x: T, y: T| if x.is_nan() || x < y {
                        x
                    } else {
                        y // also propagates a NaN in y
                    }),
                    _ => unreachable!(),
                }
            },
            unreachable!()
        )
    } else {
        // Integer (and bool) arithmetic.
        if matches!(op, FloorDiv | Remainder) && !b.is_nonzero_all()? {
            return Err(Error::Runtime("ZeroDivisionError".into()));
        }
        with_dtype!(compute, T, {
            match op {
                Add => run!(T, |x: T, y: T| x.add(y)),
                Sub => run!(T, |x: T, y: T| x.sub(y)),
                Mul => run!(T, |x: T, y: T| x.mul(y)),
                FloorDiv => run!(T, |x: T, y: T| {
                    let (xi, yi) = (x.to_i64(), y.to_i64());
                    T::from_i64(
                        xi.div_euclid(yi)
                            - if yi < 0 && xi.rem_euclid(yi) != 0 {
                                1
                            } else {
                                0
                            },
                    )
                }),
                Remainder => run!(T, |x: T, y: T| {
                    let (xi, yi) = (x.to_i64(), y.to_i64());
                    let r = xi % yi;
                    T::from_i64(if r != 0 && ((r < 0) != (yi < 0)) {
                        r + yi
                    } else {
                        r
                    })
                }),
                Pow => run!(T, |x: T, y: T| T::from_i64(int_pow(x.to_i64(), y.to_i64()))),
                Maximum => run!(T, |x: T, y: T| if x > y { x } else { y }),
                Minimum => run!(T, |x: T, y: T| if x < y { x } else { y }),
                _ => unreachable!(),
            }
        })
    };
    Ok(out.to_dtype(out_dtype))
}

fn int_pow(base: i64, exp: i64) -> i64 {
    if exp < 0 {
        return match base {
            1 => 1,
            -1 => {
                if exp % 2 == 0 {
                    1
                } else {
                    -1
                }
            }
            _ => 0,
        };
    }
    base.wrapping_pow(exp.min(u32::MAX as i64) as u32)
}

impl Tensor {
    /// True when no element is zero.
    pub fn is_nonzero_all(&self) -> Result<bool> {
        with_dtype!(self.dtype(), T, {
            let s = self.storage_slice::<T>()?;
            Ok(crate::cpu::strided::offsets(self.layout())
                .into_iter()
                .all(|o| !s[o].is_zero()))
        })
    }
}
