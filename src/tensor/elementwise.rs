//! Elementwise ops with broadcasting and PyTorch's type promotion. Python scalars are weakly
//! typed (they only raise the category). f16/bf16 are computed in f32 and rounded back.

use super::host_fallback::cuda_via_host;
use super::Tensor;
use crate::autograd::no_grad;
use crate::cpu::strided;
use crate::cpu::vmath::VecMath;
use crate::dtype::{Category, ResultType};
use crate::layout::broadcast_shapes;
use crate::{
    with_dtype, with_float_dtype, DType, Device, Element, Error, FloatElement, Result, Scalar,
};

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
    pub(crate) fn is_comparison(self) -> bool {
        use BinaryOp::*;
        matches!(self, Eq | Ne | Lt | Le | Gt | Ge)
    }
    pub(crate) fn is_logical(self) -> bool {
        use BinaryOp::*;
        matches!(self, LogicalAnd | LogicalOr | LogicalXor)
    }
    pub(crate) fn is_bitwise(self) -> bool {
        use BinaryOp::*;
        matches!(self, BitAnd | BitOr | BitXor)
    }
    /// Ops whose result is floating point even for integer inputs.
    fn promotes_int_to_float(self) -> bool {
        matches!(self, BinaryOp::Div | BinaryOp::Atan2)
    }

    /// (dtype the kernel computes in, dtype of the result) for promoted input dtype `common`.
    pub(crate) fn dtypes(self, common: DType) -> Result<(DType, DType)> {
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
            return Err(Error::NotImplemented(
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
    Lgamma,
    Digamma,
    /// `polygamma(1, x)`.
    Trigamma,
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
            Lgamma => "lgamma",
            Digamma => "digamma",
            Trigamma => "trigamma",
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

/// `$m!(closure)` with the float closure for binary `$op` on element type `$T`: one
/// monomorphised loop per op (no per-element dispatch), so the simple ones vectorise.
macro_rules! float_binary_fn {
    ($op:expr, $T:ty, $m:ident) => {{
        use BinaryOp::*;
        match $op {
            Add => $m!($T, |x: $T, y: $T| x + y),
            Sub => $m!($T, |x: $T, y: $T| x - y),
            Mul => $m!($T, |x: $T, y: $T| x * y),
            Div => $m!($T, |x: $T, y: $T| x / y),
            FloorDiv => $m!($T, div_floor_float::<$T>),
            Remainder => $m!($T, |x: $T, y: $T| {
                let r = x % y;
                if r != 0.0 as $T && ((r < 0.0 as $T) != (y < 0.0 as $T)) {
                    r + y
                } else {
                    r
                }
            }),
            Pow => $m!($T, |x: $T, y: $T| x.powf(y)),
            Atan2 => $m!($T, |x: $T, y: $T| x.atan2(y)),
            Maximum => $m!($T, |x: $T, y: $T| if x.is_nan() || x > y {
                x
            } else {
                y // also propagates a NaN in y
            }),
            Minimum => $m!($T, |x: $T, y: $T| if x.is_nan() || x < y {
                x
            } else {
                y // also propagates a NaN in y
            }),
            _ => unreachable!("{:?} is not float arithmetic", $op),
        }
    }};
}

/// `$m!(closure)` with the float closure for unary `$op` on element type `$T`. The cheap,
/// vectorisable ops get a loop of their own (the op is a constant inside it, so
/// `float_unary`'s dispatch folds away); the libm-bound rest share one loop.
macro_rules! float_unary_fn {
    ($op:expr, $T:ty, $m:ident) => {{
        use UnaryOp::*;
        match $op {
            Neg => $m!(|v: $T| float_unary(Neg, v)),
            Abs => $m!(|v: $T| float_unary(Abs, v)),
            Sign => $m!(|v: $T| float_unary(Sign, v)),
            Sqrt => $m!(|v: $T| float_unary(Sqrt, v)),
            Rsqrt => $m!(|v: $T| float_unary(Rsqrt, v)),
            Reciprocal => $m!(|v: $T| float_unary(Reciprocal, v)),
            Square => $m!(|v: $T| float_unary(Square, v)),
            Relu => $m!(|v: $T| float_unary(Relu, v)),
            Floor => $m!(|v: $T| float_unary(Floor, v)),
            Ceil => $m!(|v: $T| float_unary(Ceil, v)),
            Trunc => $m!(|v: $T| float_unary(Trunc, v)),
            Frac => $m!(|v: $T| float_unary(Frac, v)),
            Round => $m!(|v: $T| float_unary(Round, v)),
            // The vectorisable transcendental ones (see `cpu::vmath`).
            Exp => $m!(|v: $T| float_unary(Exp, v)),
            Expm1 => $m!(|v: $T| float_unary(Expm1, v)),
            Log => $m!(|v: $T| float_unary(Log, v)),
            Log1p => $m!(|v: $T| float_unary(Log1p, v)),
            Tanh => $m!(|v: $T| float_unary(Tanh, v)),
            Sigmoid => $m!(|v: $T| float_unary(Sigmoid, v)),
            Silu => $m!(|v: $T| float_unary(Silu, v)),
            Gelu => $m!(|v: $T| float_unary(Gelu, v)),
            GeluTanh => $m!(|v: $T| float_unary(GeluTanh, v)),
            op => $m!(|v: $T| float_unary(op, v)),
        }
    }};
}

/// PyTorch refuses `-` on bool tensors (and bool scalars), pointing at the logical ops.
fn check_bool_subtraction(op: BinaryOp, lhs_bool: bool, rhs_bool: bool) -> Result<()> {
    if op != BinaryOp::Sub || !(lhs_bool || rhs_bool) {
        return Ok(());
    }
    Err(Error::NotImplemented(if lhs_bool && rhs_bool {
        "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or \
         `logical_xor()` operator instead."
            .into()
    } else {
        "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying \
         to invert a mask, use the `~` or `logical_not()` operator instead."
            .into()
    }))
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
        // NaN and -0.0 give +0, as PyTorch's `(0 < x) - (x < 0)`.
        Sign => {
            if x > zero {
                one
            } else if x < zero {
                -one
            } else {
                zero
            }
        }
        Exp => x.vexp(),
        Exp2 => x.exp2(),
        Expm1 => x.vexpm1(),
        Log => x.vln(),
        Log2 => x.log2(),
        Log10 => x.log10(),
        Log1p => x.vln1p(),
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
        Tanh => x.vtanh(),
        Asinh => x.asinh(),
        Acosh => x.acosh(),
        Atanh => x.atanh(),
        Sigmoid => one / (one + (-x).vexp()),
        Relu => {
            if x > zero || x.is_nan() {
                x
            } else {
                zero
            }
        }
        Gelu => x.vgelu(),
        GeluTanh => {
            let k = f((2.0 / std::f64::consts::PI).sqrt());
            f(0.5) * x * (one + (k * (x + f(0.044715) * x * x * x)).vtanh())
        }
        Silu => x / (one + (-x).vexp()),
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
        Lgamma => f(crate::math::lgamma(Element::to_f64(x))),
        Digamma => f(crate::math::digamma(Element::to_f64(x))),
        Trigamma => f(crate::math::trigamma(Element::to_f64(x))),
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
    /// PyTorch's device rule for two operands: the same device, except that a 0-d CPU tensor
    /// mixes with a tensor on any device (like a Python scalar).
    fn check_same_device(&self, other: &Tensor, op: &'static str) -> Result<()> {
        let cpu_scalar = |t: &Tensor| t.device() == Device::Cpu && t.ndim() == 0;
        if self.device() != other.device() && !cpu_scalar(self) && !cpu_scalar(other) {
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
        check_bool_subtraction(
            op,
            self.dtype() == DType::Bool,
            other.dtype() == DType::Bool,
        )?;
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
        check_bool_subtraction(
            op,
            self.dtype() == DType::Bool,
            matches!(s, Scalar::Bool(_)),
        )?;
        if op == BinaryOp::Pow && !reversed {
            if !self.dtype().is_floating_point() && matches!(s, Scalar::Int(v) if v < 0) {
                return Err(Error::Runtime(
                    "Integers to negative integer powers are not allowed.".into(),
                ));
            }
            // The exponent is converted to an integer or half/bfloat16 dtype with PyTorch's
            // overflow check (float32/64 kernels take it as a double).
            let common = ResultType::new()
                .tensor(self.dtype(), self.ndim())
                .scalar(s)
                .finish();
            if !matches!(common, DType::F32 | DType::F64) {
                s.check_fits(common)?;
            }
            // PyTorch computes `x ** 0.5` as sqrt (pow(-0., .5) = -0., pow(-inf, .5) = nan,
            // where IEEE pow gives +0. and inf); the node stays PowBackward0.
            if self.dtype().is_floating_point() && matches!(s, Scalar::Float(v) if v == 0.5) {
                let st = Tensor::scalar(s, self.dtype());
                let out = no_grad(|| self.unary(UnaryOp::Sqrt))?;
                super::elementwise_grad::record_binary(op, self, &st, &out);
                return Ok(out);
            }
        }
        // A bool tensor to a bool power stays bool (PyTorch's pow with a 0 or 1 exponent
        // fills ones or copies, for every dtype).
        if op == BinaryOp::Pow && !reversed && self.dtype() == DType::Bool {
            if let Scalar::Bool(e) = s {
                return Ok(if e {
                    self.clone_data()
                } else {
                    Tensor::full_on(self.device(), self.shape(), Scalar::Bool(true), DType::Bool)?
                });
            }
        }
        // `x ** 2` on a float tensor is `x * x` (PowBackward0 `2 x g`), not a `powf` per element.
        if op == BinaryOp::Pow
            && !reversed
            && self.dtype().is_floating_point()
            && matches!(s, Scalar::Float(_) | Scalar::Int(_))
            && s.to_f64() == 2.0
        {
            return self.unary(UnaryOp::Square);
        }
        let common = ResultType::new()
            .tensor(self.dtype(), self.ndim())
            .scalar(s)
            .finish();
        // Ops that turn integers into floats see the scalar's own value (int8 / 300 is
        // 300.0, not 300 wrapped to int8), as PyTorch does.
        let st_dtype = if op.promotes_int_to_float() && !common.is_floating_point() {
            op.dtypes(common)?.0
        } else {
            common
        };
        let st = Tensor::scalar(s, st_dtype);
        let (a, b) = if reversed { (&st, self) } else { (self, &st) };
        let out = no_grad(|| binary_kernel(a, b, op, common))?;
        super::elementwise_grad::record_binary(op, a, b, &out);
        Ok(out)
    }

    /// In place `self = self (op) other`. The result dtype must be castable to `self`'s
    /// dtype under PyTorch's rules (no float result into an integer tensor).
    pub fn binary_(&self, other: &Tensor, op: BinaryOp) -> Result<()> {
        if self.writes_directly(&[other]) {
            let common = ResultType::new()
                .tensor(self.dtype(), self.ndim())
                .tensor(other.dtype(), other.ndim())
                .finish();
            if self.binary_into_self(other, op, common)? {
                return Ok(());
            }
        }
        self.inplace(&[other], op.name(), |me| me.binary(other, op))
    }

    pub fn binary_scalar_(&self, s: Scalar, op: BinaryOp) -> Result<()> {
        if self.writes_directly(&[]) && matches!(s, Scalar::Float(_) | Scalar::Int(_)) {
            let common = ResultType::new()
                .tensor(self.dtype(), self.ndim())
                .scalar(s)
                .finish();
            if self.binary_into_self(&Tensor::scalar(s, common), op, common)? {
                return Ok(());
            }
        }
        self.inplace(&[], op.name(), |me| me.binary_scalar(s, op, false))
    }

    /// `self = self (op) other` computed straight into `self`'s memory, for float32/64
    /// arithmetic whose result has `self`'s dtype and shape. `Ok(false)`: not such a case
    /// (the caller takes the general path, which also reports any error).
    fn binary_into_self(&self, other: &Tensor, op: BinaryOp, common: DType) -> Result<bool> {
        let dt = self.dtype();
        if !matches!(dt, DType::F32 | DType::F64) || op.is_comparison() || op.is_logical() {
            return Ok(false);
        }
        match op.dtypes(common) {
            Ok((compute, out)) if compute == dt && out == dt => {}
            _ => return Ok(false),
        }
        // Convert first: a cast copies a strided operand into a contiguous one, so the layout
        // to read must be the converted tensor's (reading the old strides ran off the end).
        let other = other.to_dtype(dt);
        let Ok(lb) = other.layout().broadcast_to(op.name(), self.shape()) else {
            return Ok(false);
        };
        let n = self.numel();
        let off = self.storage_offset();
        with_float_dtype!(
            dt,
            T,
            {
                let src = other.storage_slice::<T>()?;
                // SAFETY: `writes_directly` checked that no operand shares `self`'s storage
                // (`other.to_dtype` of a different storage is a different storage too).
                let dst = unsafe { &mut self.storage_slice_mut::<T>()?[off..off + n] };
                macro_rules! update {
                    ($T2:ty, $f:expr) => {
                        strided::update2(dst, src, &lb, $f)
                    };
                }
                float_binary_fn!(op, T, update);
            },
            unreachable!()
        );
        Ok(true)
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
        if op == UnaryOp::Silu {
            // PyTorch has no integer silu (sigmoid and the rest promote to float).
            require_float(self.dtype(), "silu_cpu")?;
        }
        if op == UnaryOp::Relu && self.dtype() == DType::Bool {
            return Err(Error::NotImplemented(
                "Boolean inputs not supported for relu".into(),
            ));
        }
        let out = no_grad(|| self.unary_raw(op))?;
        super::elementwise_grad::record_unary(op, self, &out);
        Ok(out)
    }

    fn unary_raw(&self, op: UnaryOp) -> Result<Tensor> {
        in_inputs_layout(op.name(), &[self], |x| x[0].unary_row_major(op))
    }

    fn unary_row_major(&self, op: UnaryOp) -> Result<Tensor> {
        if self.device().is_cuda() {
            return crate::cuda::ops::unary(self, op);
        }
        use UnaryOp::*;
        let dt = self.dtype();
        match op {
            // ReLU on f32/f64 with its own monomorphised closure (no per-element dispatch on
            // the op), so the loop vectorises. NaN passes through, as in `float_unary`.
            Relu if matches!(dt, DType::F32 | DType::F64) => {
                return with_float_dtype!(
                    dt,
                    T,
                    {
                        let s = self.storage_slice::<T>()?;
                        let out = strided::map1(s, self.layout(), |v: T| {
                            let zero = <T as Element>::zero();
                            if v > zero || v.is_nan() {
                                v
                            } else {
                                zero
                            }
                        });
                        Ok(Tensor::from_vec_unchecked(out, self.shape()))
                    },
                    unreachable!()
                );
            }
            IsNan | IsInf | IsFinite | IsPosInf | IsNegInf => {
                if !dt.is_floating_point() {
                    let v = matches!(op, IsFinite);
                    return Tensor::full_on(
                        self.device(),
                        self.shape(),
                        Scalar::Bool(v),
                        DType::Bool,
                    );
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
                if dt == DType::Bool {
                    match op {
                        // PyTorch: sign of a bool is itself, its square an int64 (x * x).
                        Sign => return Ok(self.clone_data()),
                        Square => return self.to_dtype(DType::I64).unary_raw(Square),
                        Neg => {
                            return Err(Error::Runtime(
                                "Negation, the `-` operator, on a bool tensor is not supported. \
                                 If you are trying to invert a mask, use the `~` or \
                                 `logical_not()` operator instead."
                                    .into(),
                            ))
                        }
                        _ => {}
                    }
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
                macro_rules! map {
                    ($f:expr) => {
                        strided::map1(s, x.layout(), $f)
                    };
                }
                Tensor::from_vec_unchecked(float_unary_fn!(op, T, map), self.shape())
            },
            unreachable!()
        );
        Ok(out.to_dtype(dt))
    }

    /// Apply a unary op in place.
    pub fn unary_(&self, op: UnaryOp) -> Result<()> {
        let float_to_float = !matches!(
            op,
            UnaryOp::LogicalNot
                | UnaryOp::BitNot
                | UnaryOp::IsNan
                | UnaryOp::IsInf
                | UnaryOp::IsFinite
                | UnaryOp::IsPosInf
                | UnaryOp::IsNegInf
        );
        if float_to_float && self.writes_directly(&[]) {
            let (n, off) = (self.numel(), self.storage_offset());
            let done = with_float_dtype!(
                self.dtype(),
                T,
                {
                    // SAFETY: `writes_directly`: a contiguous CPU tensor and no other operand.
                    let dst = unsafe { &mut self.storage_slice_mut::<T>()?[off..off + n] };
                    macro_rules! update {
                        ($f:expr) => {
                            strided::update1(dst, $f)
                        };
                    }
                    float_unary_fn!(op, T, update);
                    true
                },
                false
            );
            if done {
                return Ok(());
            }
        }
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
/// Run an elementwise kernel (which writes a row-major result) so that the result is laid out
/// like the inputs, as in PyTorch (see [`crate::layout::elementwise_dim_order`]): the inputs
/// are viewed in that dim order, the kernel runs on the views (contiguous ones where the
/// inputs are dense), and its result is viewed back. 0-d inputs are passed as they are.
pub(crate) fn in_inputs_layout(
    op: &'static str,
    inputs: &[&Tensor],
    kernel: impl FnOnce(&[&Tensor]) -> Result<Tensor>,
) -> Result<Tensor> {
    let mut layouts = Vec::new();
    let mut order = None;
    // Row-major inputs give a row-major result (PyTorch's fast path): the common case costs
    // one contiguity check per input.
    if !inputs.iter().all(|t| t.ndim() < 2 || t.is_contiguous()) {
        let shape = inputs.iter().try_fold(crate::layout::Dims::new(), |s, t| {
            broadcast_shapes(op, &s, t.shape())
        })?;
        for t in inputs {
            layouts.push(match t.ndim() {
                0 => None,
                _ => Some(t.layout().broadcast_to(op, &shape)?),
            });
        }
        let refs: Vec<&crate::layout::Layout> = layouts.iter().flatten().collect();
        order = crate::layout::elementwise_dim_order(&shape, &refs);
    }
    let Some(order) = order else {
        return kernel(inputs);
    };
    let viewed: Vec<Tensor> = inputs
        .iter()
        .zip(layouts)
        .map(|(t, l)| match l {
            Some(l) => t.with_layout(l.permute(&order)),
            None => (*t).clone(),
        })
        .collect();
    let out = kernel(&viewed.iter().collect::<Vec<_>>())?;
    let mut back = vec![0usize; order.len()];
    for (i, &d) in order.iter().enumerate() {
        back[d] = i;
    }
    Ok(Tensor::from_parts(
        out.storage().clone(),
        out.layout().permute(&back),
        out.dtype(),
    ))
}

fn binary_kernel(a: &Tensor, b: &Tensor, op: BinaryOp, common: DType) -> Result<Tensor> {
    in_inputs_layout(op.name(), &[a, b], |ab| {
        binary_kernel_row_major(ab[0], ab[1], op, common)
    })
}

fn binary_kernel_row_major(a: &Tensor, b: &Tensor, op: BinaryOp, common: DType) -> Result<Tensor> {
    if a.device().is_cuda() || b.device().is_cuda() {
        return crate::cuda::ops::binary(a, b, op, common);
    }
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
        with_float_dtype!(compute, T, { float_binary_fn!(op, T, run) }, unreachable!())
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
        if self.device().is_cuda() {
            // One count on the device and a single number back (a synchronisation, as the
            // CUDA integer-division check is in PyTorch too).
            let n = self.count_nonzero(None)?.item()?;
            return Ok(matches!(n, crate::Scalar::Int(k) if k as usize == self.numel()));
        }
        with_dtype!(self.dtype(), T, {
            let s = self.storage_slice::<T>()?;
            Ok(crate::cpu::strided::offsets(self.layout())
                .into_iter()
                .all(|o| !s[o].is_zero()))
        })
    }
}

// =============================================================================================
// Misc elementwise ops: clamp, lerp, nan_to_num, gelu, softplus, round(decimals), hypot,
// copysign, fmod, xlogy, addcmul/addcdiv, add/sub with alpha, div with rounding modes,
// float_power, logaddexp, sinc, deg2rad/rad2deg, heaviside, signbit, positive.

use crate::layout::Layout;

use super::fused_grad::{both_precisions, fused_grad};
use super::index::TensorOrScalar;

/// Add a tensor-or-scalar operand to a result-type computation.
fn add_operand(rt: ResultType, x: &TensorOrScalar) -> ResultType {
    match x {
        TensorOrScalar::Tensor(t) => rt.tensor(t.dtype(), t.ndim()),
        TensorOrScalar::Scalar(s) => rt.scalar(*s),
    }
}

/// A tensor-or-scalar operand as a tensor of `dtype` (a scalar becomes a 0-d tensor).
fn operand_tensor(x: &TensorOrScalar, dtype: DType) -> Tensor {
    match x {
        TensorOrScalar::Tensor(t) => t.to_dtype(dtype),
        TensorOrScalar::Scalar(s) => Tensor::scalar(*s, dtype),
    }
}

/// `kernel` of cuda_kernels/elementwise_binary.cu on `a` and `b` (same dtype) when either is a
/// CUDA tensor; `None` on the CPU.
fn cuda_binary(a: &Tensor, b: &Tensor, kernel: &'static str) -> Result<Option<Tensor>> {
    if a.device().is_cuda() || b.device().is_cuda() {
        in_inputs_layout(kernel, &[a, b], |ab| {
            crate::cuda::ops::binary_named(ab[0], ab[1], kernel)
        })
        .map(Some)
    } else {
        Ok(None)
    }
}

/// Broadcast `a` and `b` (both of element type `T`) and map them elementwise (the result laid
/// out like the inputs).
fn zip_map<T: Element, U: Element>(
    a: &Tensor,
    b: &Tensor,
    op: &'static str,
    f: impl Fn(T, T) -> U + Sync + Send,
) -> Result<Tensor> {
    in_inputs_layout(op, &[a, b], |ab| zip_map_row_major(ab[0], ab[1], op, f))
}

fn zip_map_row_major<T: Element, U: Element>(
    a: &Tensor,
    b: &Tensor,
    op: &'static str,
    f: impl Fn(T, T) -> U + Sync + Send,
) -> Result<Tensor> {
    cuda_via_host!(op, [a, b], |a, b| zip_map(&a, &b, op, f));
    let shape = broadcast_shapes(op, a.shape(), b.shape())?;
    let la = a.layout().broadcast_to(op, &shape)?;
    let lb = b.layout().broadcast_to(op, &shape)?;
    let (sa, sb) = (a.storage_slice::<T>()?, b.storage_slice::<T>()?);
    Ok(Tensor::from_vec_unchecked(
        strided::map2(sa, &la, sb, &lb, f),
        &shape,
    ))
}

/// Map one tensor of element type `T` (the result laid out like it).
pub(super) fn map_one<T: Element, U: Element>(
    a: &Tensor,
    op: &'static str,
    f: impl Fn(T) -> U + Sync + Send,
) -> Result<Tensor> {
    in_inputs_layout(op, &[a], |x| map_one_row_major(x[0], op, f))
}

fn map_one_row_major<T: Element, U: Element>(
    a: &Tensor,
    op: &'static str,
    f: impl Fn(T) -> U + Sync + Send,
) -> Result<Tensor> {
    cuda_via_host!(op, [a], |a| map_one(&a, op, f));
    let s = a.storage_slice::<T>()?;
    Ok(Tensor::from_vec_unchecked(
        strided::map1(s, a.layout(), f),
        a.shape(),
    ))
}

/// A number bound of an integer clamp, as PyTorch 2.15 treats it: one beyond the dtype's
/// range on its own side (a min below the lowest value, a max above the highest) bounds
/// nothing and is dropped; one beyond the other side is an error.
fn int_clamp_bound(
    bound: Option<&TensorOrScalar>,
    dtype: DType,
    is_min: bool,
) -> Result<Option<&TensorOrScalar>> {
    let Some(TensorOrScalar::Scalar(s)) = bound else {
        return Ok(bound);
    };
    let (lo, hi) = dtype.int_range();
    let v = s.to_f64();
    let (below, above) = (v < lo as f64, v > hi as f64);
    if (is_min && below) || (!is_min && above) {
        return Ok(None);
    }
    if below || above {
        let shown = match s {
            Scalar::Int(i) => i.to_string(),
            _ => crate::dtype::cpp_g(v),
        };
        return Err(Error::Runtime(format!(
            "Clamp {} value {shown} is outside the representable range of {}",
            if is_min { "min" } else { "max" },
            dtype.torch_name()
        )));
    }
    Ok(bound)
}

/// `out[i] = f(a[i], b[i], c[i])` over layouts that already have the output's shape.
fn map3<A: Copy + Send + Sync, U: Copy + Send + Sync + Default + 'static>(
    (a, la): (&[A], &Layout),
    (b, lb): (&[A], &Layout),
    (c, lc): (&[A], &Layout),
    f: impl Fn(A, A, A) -> U + Sync + Send,
) -> Vec<U> {
    let n = la.numel();
    let mut out = crate::cpu::alloc::output_vec_for_overwrite::<U>(n);
    if n == 0 {
        return out;
    }
    let co = strided::coalesce(&la.shape, [&la.strides, &lb.strides, &lc.strides]);
    let run_chunk = |start: usize, o: &mut [U]| {
        let mut w = 0;
        co.for_each_run(
            [la.offset, lb.offset, lc.offset],
            start,
            start + o.len(),
            |[oa, ob, oc], len, [sa, sb, sc]| {
                for (i, o) in o[w..w + len].iter_mut().enumerate() {
                    *o = f(a[oa + i * sa], b[ob + i * sb], c[oc + i * sc]);
                }
                w += len;
            },
        );
    };
    strided::for_each_chunk(&mut out, run_chunk);
    out
}

/// Broadcast three tensors of element type `T` and map them elementwise.
fn zip3_map<T: Element, U: Element>(
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    op: &'static str,
    f: impl Fn(T, T, T) -> U + Sync + Send,
) -> Result<Tensor> {
    in_inputs_layout(op, &[a, b, c], |abc| {
        zip3_map_row_major(abc[0], abc[1], abc[2], op, f)
    })
}

fn zip3_map_row_major<T: Element, U: Element>(
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    op: &'static str,
    f: impl Fn(T, T, T) -> U + Sync + Send,
) -> Result<Tensor> {
    cuda_via_host!(op, [a, b, c], |a, b, c| zip3_map(&a, &b, &c, op, f));
    let shape = broadcast_shapes(op, a.shape(), b.shape())?;
    let shape = broadcast_shapes(op, &shape, c.shape())?;
    let la = a.layout().broadcast_to(op, &shape)?;
    let lb = b.layout().broadcast_to(op, &shape)?;
    let lc = c.layout().broadcast_to(op, &shape)?;
    let out = map3(
        (a.storage_slice::<T>()?, &la),
        (b.storage_slice::<T>()?, &lb),
        (c.storage_slice::<T>()?, &lc),
        f,
    );
    Ok(Tensor::from_vec_unchecked(out, &shape))
}

/// `lerp` from broadcasting kernels (for CUDA tensors): `a + w (b - a)` where `|w| < 0.5`,
/// else `b - (b - a)(1 - w)`, as the CPU loop computes it.
fn lerp_on_device(a: &Tensor, b: &Tensor, w: &Tensor) -> Result<Tensor> {
    let d = b.binary(a, BinaryOp::Sub)?;
    let one = Tensor::scalar(Scalar::Float(1.0), w.dtype());
    let half = Tensor::scalar(Scalar::Float(0.5), w.dtype());
    let near_a = a.binary(&w.binary(&d, BinaryOp::Mul)?, BinaryOp::Add)?;
    let near_b = b.binary(
        &d.binary(&one.binary(w, BinaryOp::Sub)?, BinaryOp::Mul)?,
        BinaryOp::Sub,
    )?;
    let small = w.unary(UnaryOp::Abs)?.binary(&half, BinaryOp::Lt)?;
    Tensor::where_raw(
        &small,
        &TensorOrScalar::Tensor(near_a),
        &TensorOrScalar::Tensor(near_b),
    )
}

fn require_float(dtype: DType, op: &'static str) -> Result<()> {
    if !dtype.is_floating_point() {
        return Err(Error::UnsupportedDType { op, dtype });
    }
    Ok(())
}

/// The float dtype an op that always returns floats gives for `common` (ints -> default).
fn float_result(common: DType) -> DType {
    if common.is_floating_point() {
        common
    } else {
        crate::default_dtype()
    }
}

/// PyTorch's floor division for floats (`div_floor_floating`): exact where `floor(a / b)`
/// is not (e.g. `1.0 // 0.1 == 9.0`), IEEE results for a zero divisor.
#[inline]
pub(crate) fn div_floor_float<T: FloatElement>(a: T, b: T) -> T {
    let zero = <T as Element>::zero();
    let one = <T as Element>::one();
    if b == zero {
        return a / b;
    }
    let m = a % b;
    let mut div = (a - m) / b;
    if m != zero && ((b < zero) != (m < zero)) {
        div = div - one;
    }
    if div != zero {
        let mut fd = div.floor();
        if div - fd > <T as Element>::from_f64(0.5) {
            fd = fd + one;
        }
        fd
    } else {
        zero.copysign(a / b)
    }
}

/// Integer floor division (`b != 0`).
#[inline]
fn int_div_floor(a: i64, b: i64) -> i64 {
    let q = a.wrapping_div(b);
    if (a % b != 0) && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

fn zero_division() -> Error {
    Error::Runtime("ZeroDivisionError".into())
}

impl Tensor {
    /// Promoted dtype of `self` with `other`.
    fn promoted_with(&self, other: &TensorOrScalar) -> DType {
        add_operand(ResultType::new().tensor(self.dtype(), self.ndim()), other).finish()
    }

    // ------------------------------------------------------------------ clamp

    /// `clamp(min, max)`: `min(max(self, min), max)` with either bound optional, scalar or
    /// tensor; dtypes promote (an integer tensor clamped by a float becomes float). NaNs
    /// propagate.
    #[allow(clippy::bool_comparison)] // the generic body is also instantiated for bool
    fn clamp_raw(
        &self,
        min: Option<&TensorOrScalar>,
        max: Option<&TensorOrScalar>,
    ) -> Result<Tensor> {
        if min.is_none() && max.is_none() {
            return Err(Error::Runtime(
                "torch.clamp: At least one of 'min' or 'max' must not be None".into(),
            ));
        }
        let mut rt = ResultType::new().tensor(self.dtype(), self.ndim());
        for b in [min, max].into_iter().flatten() {
            rt = add_operand(rt, b);
        }
        // A bool result is computed for one tensor bound (PyTorch's maximum/minimum: logical
        // or/and); PyTorch's clamp kernels for scalar or two bounds have no bool version.
        let out = rt.finish();
        let one_tensor_bound = matches!(
            (min, max),
            (Some(TensorOrScalar::Tensor(_)), None) | (None, Some(TensorOrScalar::Tensor(_)))
        );
        if out == DType::Bool && !one_tensor_bound {
            return Err(Error::UnsupportedDType {
                op: "clamp",
                dtype: out,
            });
        }
        let (min, max) = if out.is_floating_point() || out == DType::Bool {
            (min, max)
        } else {
            let (min, max) = (
                int_clamp_bound(min, out, true)?,
                int_clamp_bound(max, out, false)?,
            );
            if min.is_none() && max.is_none() {
                // both bounds lie beyond the dtype's range on their own side
                return Ok(self.to_dtype(out).clone_data());
            }
            (min, max)
        };
        for b in [min, max].into_iter().flatten() {
            if let TensorOrScalar::Scalar(s) = b {
                s.check_fits(out)?;
            }
        }
        let cd = out.compute_dtype();
        let mut r = self.to_dtype(cd);
        for (b, is_min) in [(min, true), (max, false)] {
            let Some(b) = b else { continue };
            let bt = operand_tensor(b, cd);
            if r.device().is_cuda() {
                // maximum/minimum kernels: the same NaN propagation as the loops below.
                let op = if is_min {
                    BinaryOp::Maximum
                } else {
                    BinaryOp::Minimum
                };
                r = r.binary(&bt, op)?;
                continue;
            }
            r = if cd.is_floating_point() {
                with_float_dtype!(
                    cd,
                    T,
                    {
                        zip_map(&r, &bt, "clamp", |x: T, y: T| {
                            if x.is_nan() || y.is_nan() {
                                T::NAN
                            } else if (x < y) == is_min {
                                y
                            } else {
                                x
                            }
                        })?
                    },
                    unreachable!()
                )
            } else {
                with_dtype!(cd, T, {
                    zip_map(
                        &r,
                        &bt,
                        "clamp",
                        |x: T, y: T| {
                            if (x < y) == is_min {
                                y
                            } else {
                                x
                            }
                        },
                    )?
                })
            };
        }
        Ok(r.to_dtype(out))
    }

    /// In-place `clamp_`: computed in the promoted dtype, then written back into `self`,
    /// which PyTorch allows when the promoted dtype's category is not higher (an int8 tensor
    /// clamped by an int64 bound, not by a float one).
    pub fn clamp_(&self, min: Option<&TensorOrScalar>, max: Option<&TensorOrScalar>) -> Result<()> {
        let others = operand_tensors(&[min, max]);
        let others: Vec<&Tensor> = others.iter().collect();
        self.inplace(&others, "clamp", |me| {
            let r = me.clamp(min, max)?;
            if r.dtype().category() > me.dtype().category() {
                return Err(Error::Runtime(format!(
                    "result type {} can't be cast to the desired output type {}",
                    r.dtype().torch_name(),
                    me.dtype().torch_name()
                )));
            }
            Ok(r)
        })
    }

    // ------------------------------------------------------------------ lerp

    /// `lerp(end, weight)`: `self + weight * (end - self)` (computed from `end` when
    /// `|weight| >= 0.5`, as PyTorch does). Floating point only; `end` must have `self`'s
    /// dtype, and so must a tensor `weight` unless it is 0-d. The three then promote as
    /// usual (a 0-d weight counts only where its category is higher or all are 0-d).
    fn lerp_raw(&self, end: &Tensor, weight: &TensorOrScalar) -> Result<Tensor> {
        let dt = self.dtype();
        require_float(dt, "lerp_kernel_scalar")?;
        if end.dtype() != dt {
            return Err(Error::Runtime(format!(
                "expected dtype {dt} for `end` but got dtype {}",
                end.dtype()
            )));
        }
        let mut out = dt;
        if let TensorOrScalar::Tensor(w) = weight {
            if w.dtype() != dt && w.ndim() != 0 {
                return Err(Error::Runtime(format!(
                    "expected dtype {dt} for `weight` but got dtype {}",
                    w.dtype()
                )));
            }
            out = ResultType::new()
                .tensor(dt, self.ndim())
                .tensor(dt, end.ndim())
                .tensor(w.dtype(), w.ndim())
                .finish();
        }
        let dt = out;
        let cd = dt.compute_dtype();
        let (a, b, w) = (
            self.to_dtype(cd),
            end.to_dtype(cd),
            operand_tensor(weight, cd),
        );
        if a.device().is_cuda() || b.device().is_cuda() {
            return lerp_on_device(&a, &b, &w).map(|r| r.to_dtype(dt));
        }
        let r = with_float_dtype!(
            cd,
            T,
            {
                zip3_map(&a, &b, &w, "lerp", |s: T, e: T, w: T| {
                    if w.abs() < 0.5 {
                        s + w * (e - s)
                    } else {
                        e - (e - s) * (1.0 - w)
                    }
                })?
            },
            unreachable!()
        );
        Ok(r.to_dtype(dt))
    }

    // ------------------------------------------------------------------ unary-like

    /// `nan_to_num(nan, posinf, neginf)`: replace NaN and infinities (defaults: 0 and the
    /// dtype's largest/lowest finite values). Integer and bool tensors are copied.
    fn nan_to_num_raw(&self, nan: f64, posinf: Option<f64>, neginf: Option<f64>) -> Result<Tensor> {
        let dt = self.dtype();
        if !dt.is_floating_point() {
            return Ok(self.clone_data());
        }
        let (max, lowest) = match dt {
            DType::F16 => (half::f16::MAX.to_f64(), half::f16::MIN.to_f64()),
            DType::BF16 => (half::bf16::MAX.to_f64(), half::bf16::MIN.to_f64()),
            DType::F32 => (f32::MAX as f64, f32::MIN as f64),
            _ => (f64::MAX, f64::MIN),
        };
        let (pinf, ninf) = (posinf.unwrap_or(max), neginf.unwrap_or(lowest));
        let cd = dt.compute_dtype();
        let x = self.to_dtype(cd);
        if x.device().is_cuda() {
            let r = in_inputs_layout("nan_to_num", &[&x], |x| {
                crate::cuda::ops::nan_to_num(x[0], nan, pinf, ninf)
            })?;
            return Ok(r.to_dtype(dt));
        }
        let r = with_float_dtype!(
            cd,
            T,
            {
                let (n, p, m) = (nan as T, pinf as T, ninf as T);
                map_one(&x, "nan_to_num", move |v: T| {
                    if v.is_nan() {
                        n
                    } else if v == T::INFINITY {
                        p
                    } else if v == T::NEG_INFINITY {
                        m
                    } else {
                        v
                    }
                })?
            },
            unreachable!()
        );
        Ok(r.to_dtype(dt))
    }

    /// `gelu(approximate)`: "none" (erf form) or "tanh". Floating point only.
    pub fn gelu(&self, approximate: &str) -> Result<Tensor> {
        let op = match approximate {
            "none" => UnaryOp::Gelu,
            "tanh" => UnaryOp::GeluTanh,
            _ => {
                return Err(Error::Runtime(
                    "approximate argument must be either none or tanh.".into(),
                ))
            }
        };
        require_float(self.dtype(), "GeluKernelImpl")?;
        self.unary(op)
    }

    /// `softplus(beta, threshold)`: `log(1 + exp(beta x)) / beta`, linear where
    /// `beta x > threshold`. Floating point only.
    fn softplus_raw(&self, beta: f64, threshold: f64) -> Result<Tensor> {
        let dt = self.dtype();
        let on_cuda = self.device().is_cuda();
        require_float(
            dt,
            if on_cuda {
                "softplus_cuda"
            } else {
                "softplus_cpu"
            },
        )?;
        if on_cuda {
            // Device kernels; the exp of the linear region's elements is never taken, so
            // nothing overflows.
            return no_grad(|| -> Result<Tensor> {
                let bx = self.binary_scalar(Scalar::Float(beta), BinaryOp::Mul, false)?;
                let linear = bx.binary_scalar(Scalar::Float(threshold), BinaryOp::Gt, false)?;
                let zero = TensorOrScalar::Scalar(Scalar::Float(0.0));
                let safe = Tensor::where_cond(&linear, &zero, &TensorOrScalar::Tensor(bx))?;
                let soft = safe
                    .unary(UnaryOp::Exp)?
                    .unary(UnaryOp::Log1p)?
                    .binary_scalar(Scalar::Float(beta), BinaryOp::Div, false)?;
                Tensor::where_cond(
                    &linear,
                    &TensorOrScalar::Tensor(self.clone()),
                    &TensorOrScalar::Tensor(soft),
                )
            });
        }
        let cd = dt.compute_dtype();
        let x = self.to_dtype(cd);
        let r = with_float_dtype!(
            cd,
            T,
            {
                let (b, th) = (beta as T, threshold as T);
                map_one(&x, "softplus", move |v: T| {
                    if v * b > th {
                        v
                    } else {
                        (v * b).vexp().vln1p() / b
                    }
                })?
            },
            unreachable!()
        );
        Ok(r.to_dtype(dt))
    }

    /// `round(decimals)`: round half to even at `10^-decimals` (decimals may be negative).
    fn round_decimals_raw(&self, decimals: i64) -> Result<Tensor> {
        if decimals == 0 {
            return self.unary(UnaryOp::Round);
        }
        let dt = self.dtype();
        require_float(dt, "round_decimals")?;
        let cd = dt.compute_dtype();
        let x = self.to_dtype(cd);
        let neg = decimals < 0;
        let p = 10f64.powi(decimals.unsigned_abs().min(400) as i32);
        let r = with_float_dtype!(
            cd,
            T,
            {
                let p = p as T;
                map_one(&x, "round_decimals", move |v: T| {
                    if neg {
                        (v / p).round_ties_even() * p
                    } else {
                        (v * p).round_ties_even() / p
                    }
                })?
            },
            unreachable!()
        );
        Ok(r.to_dtype(dt))
    }

    /// `sinc(x) = sin(pi x) / (pi x)`, 1 at 0. Integers compute in the default float dtype.
    fn sinc_raw(&self) -> Result<Tensor> {
        self.float_map("sinc", |v: f64| {
            if v == 0.0 {
                1.0
            } else {
                let p = std::f64::consts::PI * v;
                p.sin() / p
            }
        })
    }

    /// Degrees to radians (integers compute in the default float dtype).
    fn deg2rad_raw(&self) -> Result<Tensor> {
        self.float_map("deg2rad", |v: f64| v * (std::f64::consts::PI / 180.0))
    }

    /// Radians to degrees (integers compute in the default float dtype).
    fn rad2deg_raw(&self) -> Result<Tensor> {
        self.float_map("rad2deg", |v: f64| v * (180.0 / std::f64::consts::PI))
    }

    /// A float -> float map computed in f64 for f64 tensors and f32 otherwise (via f64 per
    /// element, rounded once); integer inputs give the default float dtype.
    #[allow(clippy::unnecessary_cast)] // `as f64` is a no-op only in the f64 instantiation
    fn float_map(&self, op: &'static str, f: impl Fn(f64) -> f64 + Sync + Send) -> Result<Tensor> {
        let out = float_result(self.dtype());
        let cd = out.compute_dtype();
        let x = self.to_dtype(cd);
        let r = with_float_dtype!(
            cd,
            T,
            { map_one(&x, op, |v: T| f(v as f64) as T)? },
            unreachable!()
        );
        Ok(r.to_dtype(out))
    }

    /// True where the sign bit is set (`-0.0` and negative NaNs included).
    #[allow(clippy::bool_comparison)] // the generic body is also instantiated for bool
    pub fn signbit(&self) -> Result<Tensor> {
        let dt = self.dtype();
        if dt.is_floating_point() {
            let x = self.to_dtype(dt.compute_dtype());
            return with_float_dtype!(
                x.dtype(),
                T,
                { map_one(&x, "signbit", |v: T| v.is_sign_negative()) },
                unreachable!()
            );
        }
        with_dtype!(dt, T, { map_one(self, "signbit", |v: T| v < T::zero()) })
    }

    /// `positive()`: the tensor itself (not defined for bool).
    pub fn positive(&self) -> Result<Tensor> {
        if self.dtype() == DType::Bool {
            return Err(Error::Runtime(
                "The `+` operator, on a bool tensor is not supported.".into(),
            ));
        }
        Ok(self.clone())
    }

    // ------------------------------------------------------------------ binary

    /// A binary float op on the promoted dtype. `int_to_float` promotes integer results to
    /// the default float dtype; otherwise integer inputs are an error.
    fn float_binary(
        &self,
        other: &TensorOrScalar,
        op: &'static str,
        int_to_float: bool,
        f32_op: impl Fn(f32, f32) -> f32 + Sync + Send,
        f64_op: impl Fn(f64, f64) -> f64 + Sync + Send,
    ) -> Result<Tensor> {
        let common = self.promoted_with(other);
        let out = if int_to_float {
            float_result(common)
        } else {
            require_float(common, op)?;
            common
        };
        let cd = out.compute_dtype();
        let (a, b) = (self.to_dtype(cd), operand_tensor(other, cd));
        let kernel = match op {
            "hypot_cpu" => Some("hypot"),
            "logaddexp_cpu" => Some("logaddexp"),
            "logaddexp2_cpu" => Some("logaddexp2"),
            "copysign" => Some("copysign"),
            "xlogy" => Some("xlogy"),
            "special_zeta" => Some("zeta"),
            "igamma" => Some("igamma"),
            "igammac" => Some("igammac"),
            "_standard_gamma_grad" => Some("standard_gamma_grad"),
            _ => None,
        };
        if let Some(r) = kernel
            .map(|k| cuda_binary(&a, &b, k))
            .transpose()?
            .flatten()
        {
            return Ok(r.to_dtype(out));
        }
        let r = match cd {
            DType::F64 => zip_map(&a, &b, op, f64_op)?,
            _ => zip_map(&a, &b, op, f32_op)?,
        };
        Ok(r.to_dtype(out))
    }

    /// `hypot(other) = sqrt(self^2 + other^2)`. Floating point only.
    fn hypot_raw(&self, other: &TensorOrScalar) -> Result<Tensor> {
        self.float_binary(other, "hypot_cpu", false, f32::hypot, f64::hypot)
    }

    /// Hurwitz zeta `ζ(self, other)` (`torch.special.zeta`); integers give floats.
    fn zeta_raw(&self, other: &TensorOrScalar) -> Result<Tensor> {
        self.float_binary(
            other,
            "special_zeta",
            true,
            |x, q| crate::math::hurwitz_zeta(x as f64, q as f64) as f32,
            crate::math::hurwitz_zeta,
        )
    }

    /// Regularised lower incomplete gamma `P(self, other)` (`torch.igamma`).
    fn igamma_raw(&self, other: &TensorOrScalar) -> Result<Tensor> {
        self.float_binary(
            other,
            "igamma",
            true,
            |a, x| crate::math::gammainc(a as f64, x as f64) as f32,
            crate::math::gammainc,
        )
    }

    /// Regularised upper incomplete gamma `Q(self, other)` (`torch.igammac`).
    fn igammac_raw(&self, other: &TensorOrScalar) -> Result<Tensor> {
        self.float_binary(
            other,
            "igammac",
            true,
            |a, x| crate::math::gammaincc(a as f64, x as f64) as f32,
            crate::math::gammaincc,
        )
    }

    /// `d x / d self` for Gamma(`self`, 1) samples `other` at a fixed quantile (the implicit
    /// reparameterisation gradient of `torch._standard_gamma`). Not differentiable.
    pub fn standard_gamma_grad(&self, samples: &Tensor) -> Result<Tensor> {
        self.float_binary(
            &TensorOrScalar::Tensor(samples.clone()),
            "_standard_gamma_grad",
            true,
            |a, x| crate::math::standard_gamma_grad(a as f64, x as f64) as f32,
            crate::math::standard_gamma_grad,
        )
    }

    /// `copysign(other)`: magnitude of `self`, sign of `other` (integers give floats).
    fn copysign_raw(&self, other: &TensorOrScalar) -> Result<Tensor> {
        self.float_binary(other, "copysign", true, f32::copysign, f64::copysign)
    }

    /// `xlogy(other) = self * log(other)`, 0 where `self == 0` (unless `other` is NaN).
    fn xlogy_raw(&self, other: &TensorOrScalar) -> Result<Tensor> {
        fn xlogy<T: num_traits::Float>(x: T, y: T) -> T {
            if y.is_nan() {
                T::nan()
            } else if x == T::zero() {
                T::zero()
            } else {
                x * y.ln()
            }
        }
        self.float_binary(other, "xlogy", true, xlogy::<f32>, xlogy::<f64>)
    }

    /// `logaddexp(other) = log(exp(self) + exp(other))`, computed stably. Floats only.
    fn logaddexp_raw(&self, other: &TensorOrScalar) -> Result<Tensor> {
        fn lae<T: num_traits::Float>(a: T, b: T) -> T {
            if a.is_infinite() && a == b {
                a
            } else {
                let m = a.max(b);
                m + (-(a - b).abs()).exp().ln_1p()
            }
        }
        self.float_binary(other, "logaddexp_cpu", false, lae::<f32>, lae::<f64>)
    }

    /// `logaddexp2(other) = log2(2^self + 2^other)`. Floats only.
    fn logaddexp2_raw(&self, other: &TensorOrScalar) -> Result<Tensor> {
        fn lae2<T: num_traits::Float + num_traits::FloatConst>(a: T, b: T) -> T {
            if a.is_infinite() && a == b {
                a
            } else {
                let m = a.max(b);
                m + (-(a - b).abs()).exp2().ln_1p() / T::LN_2()
            }
        }
        fn lae2_32(a: f32, b: f32) -> f32 {
            lae2(a, b)
        }
        fn lae2_64(a: f64, b: f64) -> f64 {
            lae2(a, b)
        }
        self.float_binary(other, "logaddexp2_cpu", false, lae2_32, lae2_64)
    }

    /// `float_power(exponent)`: `self ** exponent` in double precision (result float64).
    fn float_power_raw(&self, exponent: &TensorOrScalar) -> Result<Tensor> {
        let a = self.to_dtype(DType::F64);
        let b = operand_tensor(exponent, DType::F64);
        zip_map(&a, &b, "float_power", |x: f64, y: f64| x.powf(y))
    }

    /// `float_power_`: only for float64 tensors (the result type is always float64).
    pub fn float_power_(&self, exponent: &TensorOrScalar) -> Result<()> {
        if self.dtype() != DType::F64 {
            return Err(Error::Runtime(format!(
                "the base given to float_power_ has dtype {} but the operation's result requires dtype Double",
                self.dtype().torch_name()
            )));
        }
        let others = operand_tensors(&[Some(exponent)]);
        let others: Vec<&Tensor> = others.iter().collect();
        self.inplace(&others, "float_power", |me| me.float_power(exponent))
    }

    /// `fmod(other)`: remainder with the sign of the dividend (C's `fmod`). Integer division
    /// by zero is an error.
    fn fmod_raw(&self, other: &TensorOrScalar) -> Result<Tensor> {
        let out = self.promoted_with(other);
        if out == DType::Bool {
            return Err(Error::UnsupportedDType {
                op: "fmod_cpu",
                dtype: out,
            });
        }
        let cd = out.compute_dtype();
        let (a, b) = (self.to_dtype(cd), operand_tensor(other, cd));
        if !cd.is_floating_point() && !b.is_nonzero_all()? {
            return Err(zero_division());
        }
        if let Some(r) = cuda_binary(&a, &b, "fmod")? {
            return Ok(r.to_dtype(out));
        }
        let r = if cd.is_floating_point() {
            with_float_dtype!(
                cd,
                T,
                { zip_map(&a, &b, "fmod", |x: T, y: T| x % y)? },
                unreachable!()
            )
        } else {
            with_dtype!(cd, T, {
                zip_map(&a, &b, "fmod", |x: T, y: T| {
                    T::from_i64(x.to_i64().checked_rem(y.to_i64()).unwrap_or(0))
                })?
            })
        };
        Ok(r.to_dtype(out))
    }

    /// `heaviside(values)`: 0 where `self < 0`, `values` where `self == 0`, 1 where
    /// `self > 0`. Both must have the same dtype.
    #[allow(clippy::bool_comparison)] // the generic body is also instantiated for bool
    pub fn heaviside(&self, values: &Tensor) -> Result<Tensor> {
        if values.dtype() != self.dtype() {
            return Err(Error::Runtime(
                "heaviside is not yet implemented for tensors with different dtypes".into(),
            ));
        }
        let dt = self.dtype();
        let cd = dt.compute_dtype();
        let (a, b) = (self.to_dtype(cd), values.to_dtype(cd));
        if let Some(r) = cuda_binary(&a, &b, "heaviside")? {
            return Ok(r.to_dtype(dt));
        }
        let r = with_dtype!(cd, T, {
            zip_map(&a, &b, "heaviside", |x: T, v: T| {
                if x == T::zero() {
                    v
                } else if x > T::zero() {
                    T::one()
                } else {
                    T::zero()
                }
            })?
        });
        Ok(r.to_dtype(dt))
    }

    /// `div(other, rounding_mode)`: `None` is true division, `"trunc"` rounds toward zero
    /// and `"floor"` toward negative infinity; the rounding modes keep integer dtypes.
    fn div_mode_raw(&self, other: &TensorOrScalar, rounding_mode: Option<&str>) -> Result<Tensor> {
        let floor = match rounding_mode {
            None => {
                return match other {
                    TensorOrScalar::Tensor(t) => self.binary(t, BinaryOp::Div),
                    TensorOrScalar::Scalar(s) => self.binary_scalar(*s, BinaryOp::Div, false),
                }
            }
            Some("trunc") => false,
            Some("floor") => true,
            Some(m) => {
                return Err(Error::Runtime(format!(
                "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{m}'"
            )))
            }
        };
        let out = self.promoted_with(other);
        let op = if floor {
            "div_floor_cpu"
        } else {
            "div_trunc_cpu"
        };
        if out == DType::Bool {
            return Err(Error::UnsupportedDType { op, dtype: out });
        }
        let cd = out.compute_dtype();
        let (a, b) = (self.to_dtype(cd), operand_tensor(other, cd));
        if !cd.is_floating_point() && !b.is_nonzero_all()? {
            return Err(zero_division());
        }
        let kernel = if floor { "floor_divide" } else { "div_trunc" };
        if let Some(r) = cuda_binary(&a, &b, kernel)? {
            return Ok(r.to_dtype(out));
        }
        let r = if cd.is_floating_point() {
            with_float_dtype!(
                cd,
                T,
                {
                    if floor {
                        zip_map(&a, &b, "div", div_floor_float::<T>)?
                    } else {
                        zip_map(&a, &b, "div", |x: T, y: T| (x / y).trunc())?
                    }
                },
                unreachable!()
            )
        } else {
            with_dtype!(cd, T, {
                zip_map(&a, &b, "div", |x: T, y: T| {
                    let (xi, yi) = (x.to_i64(), y.to_i64());
                    T::from_i64(if floor {
                        int_div_floor(xi, yi)
                    } else {
                        xi.wrapping_div(yi)
                    })
                })?
            })
        };
        Ok(r.to_dtype(out))
    }

    /// In-place `div_(other, rounding_mode)`.
    pub fn div_mode_(&self, other: &TensorOrScalar, rounding_mode: Option<&str>) -> Result<()> {
        let others = operand_tensors(&[Some(other)]);
        let others: Vec<&Tensor> = others.iter().collect();
        self.inplace(&others, "div", |me| me.div_mode(other, rounding_mode))
    }

    /// `add(other, alpha)` / `sub(other, alpha)`: `self ± alpha * other` in one rounding.
    fn add_scaled_raw(
        &self,
        other: &TensorOrScalar,
        alpha: Scalar,
        subtract: bool,
    ) -> Result<Tensor> {
        let op = if subtract {
            BinaryOp::Sub
        } else {
            BinaryOp::Add
        };
        let out = self.promoted_with(other);
        if matches!(alpha, Scalar::Bool(_)) && out != DType::Bool {
            return Err(Error::Runtime(
                "Boolean alpha only supported for Boolean results.".into(),
            ));
        }
        if !out.is_floating_point() && matches!(alpha, Scalar::Float(_)) {
            return Err(Error::Runtime(
                "For integral input tensors, argument alpha must not be a floating point number."
                    .into(),
            ));
        }
        // PyTorch converts alpha to the result type with its overflow check (int8 alpha=300
        // and half alpha=1e6 are errors, not wrapped or inf).
        alpha.check_fits(out)?;
        // Validates dtypes (e.g. bool subtraction) with the plain op's rules.
        let (cd, _) = op.dtypes(out)?;
        let (a, b) = (self.to_dtype(cd), operand_tensor(other, cd));
        let r = if cd.is_floating_point() {
            with_float_dtype!(
                cd,
                T,
                {
                    let al = alpha.to_f64() as T;
                    if subtract {
                        zip_map(&a, &b, op.name(), move |x: T, y: T| x - al * y)?
                    } else {
                        zip_map(&a, &b, op.name(), move |x: T, y: T| x + al * y)?
                    }
                },
                unreachable!()
            )
        } else {
            with_dtype!(cd, T, {
                let al: T = alpha.to_elem();
                if subtract {
                    zip_map(&a, &b, op.name(), move |x: T, y: T| x.sub(al.mul(y)))?
                } else {
                    zip_map(&a, &b, op.name(), move |x: T, y: T| x.add(al.mul(y)))?
                }
            })
        };
        Ok(r.to_dtype(out))
    }

    /// In-place `add_(other, alpha)` / `sub_(other, alpha)`.
    pub fn add_scaled_(&self, other: &TensorOrScalar, alpha: Scalar, subtract: bool) -> Result<()> {
        let others = operand_tensors(&[Some(other)]);
        let others: Vec<&Tensor> = others.iter().collect();
        let name = if subtract { "sub" } else { "add" };
        self.inplace(&others, name, |me| me.add_scaled(other, alpha, subtract))
    }

    /// `addcmul(t1, t2, value)`: `self + value * t1 * t2`; `addcdiv`: `self + value * t1 / t2`
    /// (integer `t1`/`t2` are refused for addcdiv, as in PyTorch).
    fn addc_raw(&self, t1: &Tensor, t2: &Tensor, value: Scalar, div: bool) -> Result<Tensor> {
        let op = if div { "addcdiv" } else { "addcmul" };
        if div && !t1.dtype().is_floating_point() && !t2.dtype().is_floating_point() {
            return Err(Error::Runtime(
                "Integer division with addcdiv is no longer supported, and in a future release addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), for all dtypes.".into(),
            ));
        }
        let out = ResultType::new()
            .tensor(self.dtype(), self.ndim())
            .tensor(t1.dtype(), t1.ndim())
            .tensor(t2.dtype(), t2.ndim())
            .finish();
        if !out.is_floating_point() && matches!(value, Scalar::Float(_)) {
            return Err(Error::Runtime(format!(
                "{op}: for integral input tensors, argument value must not be a floating point number."
            )));
        }
        // Checked against the type the kernel computes in (float for half/bfloat16 inputs),
        // as PyTorch does.
        value.check_fits(out.compute_dtype())?;
        let cd = out.compute_dtype();
        let (a, b, c) = (self.to_dtype(cd), t1.to_dtype(cd), t2.to_dtype(cd));
        let r = if cd.is_floating_point() {
            with_float_dtype!(
                cd,
                T,
                {
                    let v = value.to_f64() as T;
                    if div {
                        zip3_map(&a, &b, &c, op, move |s: T, x: T, y: T| s + v * x / y)?
                    } else {
                        zip3_map(&a, &b, &c, op, move |s: T, x: T, y: T| s + v * x * y)?
                    }
                },
                unreachable!()
            )
        } else {
            with_dtype!(cd, T, {
                let v: T = value.to_elem();
                zip3_map(&a, &b, &c, op, move |s: T, x: T, y: T| {
                    s.add(v.mul(x.mul(y)))
                })?
            })
        };
        Ok(r.to_dtype(out))
    }

    /// In-place `addcmul_` / `addcdiv_`.
    pub fn addc_(&self, t1: &Tensor, t2: &Tensor, value: Scalar, div: bool) -> Result<()> {
        let name = if div { "addcdiv" } else { "addcmul" };
        self.inplace(&[t1, t2], name, |me| me.addc(t1, t2, value, div))
    }

    /// In-place `lerp_`.
    pub fn lerp_(&self, end: &Tensor, weight: &TensorOrScalar) -> Result<()> {
        let mut others = vec![end.clone()];
        others.extend(operand_tensors(&[Some(weight)]));
        let others: Vec<&Tensor> = others.iter().collect();
        self.inplace(&others, "lerp", |me| me.lerp(end, weight))
    }

    /// Run `f` as an in-place op on `self` (PyTorch's cast rule, autograd history rebased):
    /// `f` computes the new value from `self`; `others` are its other tensor inputs.
    pub fn apply_inplace(
        &self,
        others: &[&Tensor],
        op: &'static str,
        f: impl FnOnce(&Tensor) -> Result<Tensor>,
    ) -> Result<()> {
        self.inplace(others, op, f)
    }
}

// ---------------------------------------------------------------------------------------------
// Autograd of the misc ops: each public op runs its kernel (`*_raw`) and records one node whose
// backward formula is written with Tensor ops (so it is differentiable under create_graph).

use crate::autograd::{needs_grad, record, SavedTensor};

/// The tensors among optional tensor-or-scalar operands (the ones gradients can reach).
fn operand_tensors(xs: &[Option<&TensorOrScalar>]) -> Vec<Tensor> {
    xs.iter()
        .flatten()
        .filter_map(|x| match x {
            TensorOrScalar::Tensor(t) => Some(t.clone()),
            TensorOrScalar::Scalar(_) => None,
        })
        .collect()
}

/// Record `out`'s node. `backward(g, inputs)` returns one optional gradient per input, in any
/// float dtype and broadcast shape: they are summed to each input's shape and cast to its
/// dtype here; inputs that need no gradient get None.
pub(super) fn record_misc(
    name: &'static str,
    inputs: &[&Tensor],
    out: &Tensor,
    backward: impl Fn(&Tensor, &[Tensor]) -> Result<Vec<Option<Tensor>>> + Send + 'static,
) {
    if !out.dtype().is_floating_point() || !needs_grad(inputs) {
        return;
    }
    let saved: Vec<SavedTensor> = inputs.iter().map(|t| SavedTensor::new(t, name)).collect();
    let meta: Vec<(Vec<usize>, DType, bool)> = inputs
        .iter()
        .map(|t| {
            let need = t.requires_grad() && t.dtype().is_floating_point();
            (t.shape().to_vec(), t.dtype(), need)
        })
        .collect();
    record(
        name,
        inputs,
        &[out],
        Box::new(move |grads| {
            let Some(g) = &grads[0] else {
                return Ok(vec![None; meta.len()]);
            };
            let xs = saved
                .iter()
                .map(|s| s.get().cloned())
                .collect::<Result<Vec<_>>>()?;
            let gs = backward(g, &xs)?;
            gs.into_iter()
                .zip(&meta)
                .map(|(gi, (shape, dt, need))| match gi {
                    Some(t) if *need => {
                        let t = t.sum_to_shape(shape)?;
                        Ok(Some(if t.dtype() != *dt { t.cast(*dt)? } else { t }))
                    }
                    _ => Ok(None),
                })
                .collect()
        }),
    );
}

// Formula helpers (recording Tensor ops).
fn gmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.binary(b, BinaryOp::Mul)
}
fn gdiv(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.binary(b, BinaryOp::Div)
}
fn gsub(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.binary(b, BinaryOp::Sub)
}
fn gadd(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.binary(b, BinaryOp::Add)
}
fn gmuls(a: &Tensor, k: f64) -> Result<Tensor> {
    a.binary_scalar(Scalar::Float(k), BinaryOp::Mul, false)
}
/// `k - a`
fn grsubs(a: &Tensor, k: f64) -> Result<Tensor> {
    a.binary_scalar(Scalar::Float(k), BinaryOp::Sub, true)
}
fn gcmp(a: &Tensor, b: &TensorOrScalar, op: BinaryOp) -> Result<Tensor> {
    match b {
        TensorOrScalar::Tensor(t) => a.binary(t, op),
        TensorOrScalar::Scalar(s) => a.binary_scalar(*s, op, false),
    }
}
use crate::autograd::formula::{select as gselect, zeros_like as gzero};

/// A tensor-or-scalar operand captured by a backward closure: scalars by value, tensors by
/// their position among the node's inputs.
#[derive(Clone, Copy)]
enum Slot {
    Scalar(Scalar),
    Input(usize),
}

impl Slot {
    fn get(self, xs: &[Tensor]) -> TensorOrScalar {
        match self {
            Slot::Scalar(s) => TensorOrScalar::Scalar(s),
            Slot::Input(i) => TensorOrScalar::Tensor(xs[i].clone()),
        }
    }
}

/// Inputs list `[self, tensor operands...]` and the slots of `operands` in it.
fn slots<'a>(
    first: &'a Tensor,
    operands: &[Option<&'a TensorOrScalar>],
) -> (Vec<&'a Tensor>, Vec<Option<Slot>>) {
    let mut inputs = vec![first];
    let mut out = vec![];
    for o in operands {
        out.push(o.map(|o| match o {
            TensorOrScalar::Tensor(t) => {
                inputs.push(t);
                Slot::Input(inputs.len() - 1)
            }
            TensorOrScalar::Scalar(s) => Slot::Scalar(*s),
        }));
    }
    (inputs, out)
}

impl Tensor {
    /// `clamp(min, max)`: `min(max(self, min), max)` with either bound optional, scalar or
    /// tensor; dtypes promote (an integer tensor clamped by a float becomes float). NaNs
    /// propagate. Differentiable in `self` and in tensor bounds.
    pub fn clamp(
        &self,
        min: Option<&TensorOrScalar>,
        max: Option<&TensorOrScalar>,
    ) -> Result<Tensor> {
        let out = self.clamp_raw(min, max)?;
        let (inputs, sl) = slots(self, &[min, max]);
        let (lo, hi) = (sl[0], sl[1]);
        // PyTorch (2.15): the gradient passes strictly inside the bounds; where `self` equals
        // a tensor bound it is split evenly between the two (as maximum/minimum split ties),
        // where it equals a number bound it stops.
        record_misc("ClampBackward1", &inputs, &out, move |g, xs| {
            let x = &xs[0];
            let mut gx = g.clone();
            let mut grads = vec![None; xs.len()];
            for (b, inside, outside) in [
                (lo, BinaryOp::Gt, BinaryOp::Lt),
                (hi, BinaryOp::Lt, BinaryOp::Gt),
            ] {
                let Some(b) = b else { continue };
                let bv = b.get(xs);
                let passed = gselect(&gcmp(x, &bv, inside)?, &gx)?;
                gx = match b {
                    Slot::Scalar(_) => passed,
                    Slot::Input(i) => {
                        let tie = gcmp(x, &bv, BinaryOp::Eq)?;
                        let g_tie = gmuls(&gselect(&tie, g)?, 0.5)?;
                        grads[i] = Some(gadd(&gselect(&gcmp(x, &bv, outside)?, g)?, &g_tie)?);
                        gadd(&passed, &gmuls(&gselect(&tie, &gx)?, 0.5)?)?
                    }
                };
            }
            grads[0] = Some(gx);
            Ok(grads)
        });
        Ok(out)
    }

    /// `lerp(end, weight)`: `self + weight * (end - self)` (computed from `end` when
    /// `|weight| >= 0.5`, as PyTorch does). Floating point only; `end` (and a tensor
    /// `weight`) must have `self`'s dtype.
    pub fn lerp(&self, end: &Tensor, weight: &TensorOrScalar) -> Result<Tensor> {
        let out = self.lerp_raw(end, weight)?;
        let end_op = TensorOrScalar::Tensor(end.clone());
        let (inputs, sl) = slots(self, &[Some(&end_op), Some(weight)]);
        let w = sl[1].expect("weight given");
        record_misc("LerpBackward1", &inputs, &out, move |g, xs| {
            let (s, e) = (&xs[0], &xs[1]);
            let mut grads = vec![None; xs.len()];
            match w {
                Slot::Scalar(ws) => {
                    let wv = ws.to_f64();
                    grads[0] = Some(gmuls(g, 1.0 - wv)?);
                    grads[1] = Some(gmuls(g, wv)?);
                }
                Slot::Input(i) => {
                    let wt = &xs[i];
                    grads[0] = Some(gmul(g, &grsubs(wt, 1.0)?)?);
                    grads[1] = Some(gmul(g, wt)?);
                    grads[i] = Some(gmul(g, &gsub(e, s)?)?);
                }
            }
            Ok(grads)
        });
        Ok(out)
    }

    /// `nan_to_num(nan, posinf, neginf)`: replace NaN and infinities (defaults: 0 and the
    /// dtype's largest/lowest finite values). Integer and bool tensors are copied.
    pub fn nan_to_num(&self, nan: f64, posinf: Option<f64>, neginf: Option<f64>) -> Result<Tensor> {
        let out = self.nan_to_num_raw(nan, posinf, neginf)?;
        record_misc("NanToNumBackward0", &[self], &out, |g, xs| {
            Ok(vec![Some(gmul(g, &xs[0].unary(UnaryOp::IsFinite)?)?)])
        });
        Ok(out)
    }

    /// `softplus(beta, threshold)`: `log(1 + exp(beta x)) / beta`, linear where
    /// `beta x > threshold`. Floating point only.
    pub fn softplus(&self, beta: f64, threshold: f64) -> Result<Tensor> {
        let out = self.softplus_raw(beta, threshold)?;
        record_misc("SoftplusBackward0", &[self], &out, move |g, xs| {
            // d/dx = sigmoid(beta x) = 1 / (1 + exp(-beta x)), 1 in the linear region
            let (f, d) = both_precisions!(|g: T, x: T| {
                let bx = x * beta as T;
                // both sides computed, then selected: a branch around the exp kept the
                // loop scalar (slower than the op chain it replaces)
                let smooth = g / (1.0 + (-bx).vexp());
                if bx > threshold as T {
                    g
                } else {
                    smooth
                }
            });
            if let Some(gx) = fused_grad(g, &xs[0], f, d) {
                return Ok(vec![Some(gx?)]);
            }
            let bx = gmuls(&xs[0], beta)?;
            let s = bx.unary(UnaryOp::Sigmoid)?;
            let linear = bx.binary_scalar(Scalar::Float(threshold), BinaryOp::Gt, false)?;
            let d = gadd(&s, &gmul(&linear, &grsubs(&s, 1.0)?)?)?;
            Ok(vec![Some(gmul(g, &d)?)])
        });
        Ok(out)
    }

    /// `round(decimals)`: round half to even at `10^-decimals` (decimals may be negative).
    pub fn round_decimals(&self, decimals: i64) -> Result<Tensor> {
        if decimals == 0 {
            return self.unary(UnaryOp::Round);
        }
        let out = self.round_decimals_raw(decimals)?;
        record_misc("RoundBackward1", &[self], &out, |g, _| {
            Ok(vec![Some(gzero(g)?)])
        });
        Ok(out)
    }

    /// `sinc(x) = sin(pi x) / (pi x)`, 1 at 0. Integers compute in the default float dtype.
    pub fn sinc(&self) -> Result<Tensor> {
        let out = self.sinc_raw()?;
        record_misc("SincBackward0", &[self], &out, |g, xs| {
            // d/dx sinc(x) = (cos(pi x) - sinc(x)) / x, and 0 at x = 0.
            let x = &xs[0];
            let nz = x.binary_scalar(Scalar::Float(0.0), BinaryOp::Ne, false)?;
            let safe = gadd(
                x,
                &x.binary_scalar(Scalar::Float(0.0), BinaryOp::Eq, false)?,
            )?;
            let c = gmuls(x, std::f64::consts::PI)?.unary(UnaryOp::Cos)?;
            let d = gdiv(&gsub(&c, &x.sinc()?)?, &safe)?;
            Ok(vec![Some(gmul(g, &gmul(&d, &nz)?)?)])
        });
        Ok(out)
    }

    /// Degrees to radians (integers compute in the default float dtype).
    pub fn deg2rad(&self) -> Result<Tensor> {
        let out = self.deg2rad_raw()?;
        record_misc("Deg2RadBackward0", &[self], &out, |g, _| {
            Ok(vec![Some(gmuls(g, std::f64::consts::PI / 180.0)?)])
        });
        Ok(out)
    }

    /// Radians to degrees (integers compute in the default float dtype).
    pub fn rad2deg(&self) -> Result<Tensor> {
        let out = self.rad2deg_raw()?;
        record_misc("Rad2DegBackward0", &[self], &out, |g, _| {
            Ok(vec![Some(gmuls(g, 180.0 / std::f64::consts::PI)?)])
        });
        Ok(out)
    }

    /// `hypot(other) = sqrt(self^2 + other^2)`. Floating point only.
    pub fn hypot(&self, other: &TensorOrScalar) -> Result<Tensor> {
        let out = self.hypot_raw(other)?;
        self.record_binary_misc("HypotBackward0", other, &out, |g, a, b| {
            let r = gadd(&gmul(a, a)?, &gmul(b, b)?)?.unary(UnaryOp::Sqrt)?;
            Ok((Some(gdiv(&gmul(g, a)?, &r)?), Some(gdiv(&gmul(g, b)?, &r)?)))
        });
        Ok(out)
    }

    /// Hurwitz zeta `ζ(self, other) = Σ_k (k + other)^(-self)` (`torch.special.zeta`).
    /// Differentiable in `other` (`∂/∂q ζ(x, q) = -x ζ(x + 1, q)`, itself differentiable, so
    /// polygamma of every order has gradients); like PyTorch, not in `self`.
    pub fn zeta(&self, other: &TensorOrScalar) -> Result<Tensor> {
        let out = self.zeta_raw(other)?;
        let self_needs_grad = self.requires_grad();
        self.record_binary_misc("SpecialZetaBackward0", other, &out, move |g, x, q| {
            if self_needs_grad {
                return Err(crate::Error::NotImplemented(
                    "the derivative for 'zeta' is not implemented (only the second argument, \
                     q, is differentiable)"
                        .into(),
                ));
            }
            let x1 = x.binary_scalar(Scalar::Float(1.0), BinaryOp::Add, false)?;
            let dq = gmul(x, &x1.zeta(&TensorOrScalar::Tensor(q.clone()))?)?;
            Ok((None, Some(gmuls(&gmul(g, &dq)?, -1.0)?)))
        });
        Ok(out)
    }

    /// `igamma(other)`: `P(self, other)`; differentiable in `other` only, as in PyTorch
    /// (`∂P/∂x = x^(a-1) e^-x / Γ(a)`).
    pub fn igamma(&self, other: &TensorOrScalar) -> Result<Tensor> {
        let out = self.igamma_raw(other)?;
        self.record_incomplete_gamma("IgammaBackward0", other, &out, 1.0);
        Ok(out)
    }

    /// `igammac(other)`: `Q(self, other) = 1 - P(self, other)`; differentiable in `other`.
    pub fn igammac(&self, other: &TensorOrScalar) -> Result<Tensor> {
        let out = self.igammac_raw(other)?;
        self.record_incomplete_gamma("IgammacBackward0", other, &out, -1.0);
        Ok(out)
    }

    fn record_incomplete_gamma(
        &self,
        name: &'static str,
        other: &TensorOrScalar,
        out: &Tensor,
        sign: f64,
    ) {
        let self_needs_grad = self.requires_grad();
        self.record_binary_misc(name, other, out, move |g, a, x| {
            if self_needs_grad {
                return Err(crate::Error::NotImplemented(format!(
                    "the derivative for '{}: input' is not implemented.",
                    if sign > 0.0 { "igamma" } else { "igammac" }
                )));
            }
            // exp((a - 1) log x - x - lgamma(a)), with xlogy so that a = 1, x = 0 gives e^0.
            let am1 = a.binary_scalar(Scalar::Float(1.0), BinaryOp::Sub, false)?;
            let log_density = gsub(
                &gsub(&am1.xlogy(&TensorOrScalar::Tensor(x.clone()))?, x)?,
                &a.unary(UnaryOp::Lgamma)?,
            )?;
            let dx = gmuls(&gmul(g, &log_density.unary(UnaryOp::Exp)?)?, sign)?;
            Ok((None, Some(dx)))
        });
    }

    /// `copysign(other)`: magnitude of `self`, sign of `other` (integers give floats).
    pub fn copysign(&self, other: &TensorOrScalar) -> Result<Tensor> {
        let out = self.copysign_raw(other)?;
        self.record_binary_misc("CopysignBackward0", other, &out, |g, a, b| {
            // d/da |a| sign(b) = sign(a) sign(b) (0 at a = 0); no gradient for `other`.
            let sb = Tensor::full_on(b.device(), b.shape(), crate::Scalar::Int(1), DType::F64)?
                .copysign_raw(&TensorOrScalar::Tensor(b.clone()))?;
            Ok((
                Some(gmul(g, &gmul(&a.unary(UnaryOp::Sign)?, &sb)?)?),
                Some(gzero(g)?),
            ))
        });
        Ok(out)
    }

    /// `xlogy(other) = self * log(other)`, 0 where `self == 0` (unless `other` is NaN).
    pub fn xlogy(&self, other: &TensorOrScalar) -> Result<Tensor> {
        let out = self.xlogy_raw(other)?;
        self.record_binary_misc("XlogyBackward0", other, &out, |g, a, b| {
            // PyTorch's formula: xlogy(g, b), so log(b) also at a == 0 (the one-sided
            // derivative), but 0 where a == 0 and b <= 0 (log(b) undefined there).
            let ga = g.xlogy(&TensorOrScalar::Tensor(b.clone()))?;
            let undefined = a
                .binary_scalar(Scalar::Float(0.0), BinaryOp::Eq, false)?
                .binary(
                    &b.binary_scalar(Scalar::Float(0.0), BinaryOp::Le, false)?,
                    BinaryOp::LogicalAnd,
                )?;
            let ga = Tensor::where_cond(
                &undefined,
                &TensorOrScalar::Scalar(Scalar::Float(0.0)),
                &TensorOrScalar::Tensor(ga),
            )?;
            Ok((Some(ga), Some(gdiv(&gmul(g, a)?, b)?)))
        });
        Ok(out)
    }

    /// `logaddexp(other) = log(exp(self) + exp(other))`, computed stably. Floats only.
    pub fn logaddexp(&self, other: &TensorOrScalar) -> Result<Tensor> {
        let out = self.logaddexp_raw(other)?;
        self.record_binary_misc("LogaddexpBackward0", other, &out, |g, a, b| {
            let d = gsub(a, b)?;
            let ga = gmul(g, &d.unary(UnaryOp::Sigmoid)?)?;
            let gb = gmul(g, &d.unary(UnaryOp::Neg)?.unary(UnaryOp::Sigmoid)?)?;
            Ok((Some(ga), Some(gb)))
        });
        Ok(out)
    }

    /// `logaddexp2(other) = log2(2^self + 2^other)`. Floats only.
    pub fn logaddexp2(&self, other: &TensorOrScalar) -> Result<Tensor> {
        let out = self.logaddexp2_raw(other)?;
        self.record_binary_misc("Logaddexp2Backward0", other, &out, |g, a, b| {
            let d = gmuls(&gsub(a, b)?, std::f64::consts::LN_2)?;
            let ga = gmul(g, &d.unary(UnaryOp::Sigmoid)?)?;
            let gb = gmul(g, &d.unary(UnaryOp::Neg)?.unary(UnaryOp::Sigmoid)?)?;
            Ok((Some(ga), Some(gb)))
        });
        Ok(out)
    }

    /// `float_power(exponent)`: `self ** exponent` in double precision (result float64).
    pub fn float_power(&self, exponent: &TensorOrScalar) -> Result<Tensor> {
        let out = self.float_power_raw(exponent)?;
        self.record_binary_misc("PowBackward1", exponent, &out, |g, a, b| {
            let (a, b) = (a.cast(DType::F64)?, b.cast(DType::F64)?);
            let ga = gmul(
                g,
                &gmul(
                    &b,
                    &a.binary(
                        &b.binary_scalar(Scalar::Float(1.0), BinaryOp::Sub, false)?,
                        BinaryOp::Pow,
                    )?,
                )?,
            )?;
            let gb = gmul(
                g,
                &gmul(&a.binary(&b, BinaryOp::Pow)?, &a.unary(UnaryOp::Log)?)?,
            )?;
            Ok((Some(ga), Some(gb)))
        });
        Ok(out)
    }

    /// `fmod(other)`: remainder with the sign of the dividend (C's `fmod`). Integer division
    /// by zero is an error.
    pub fn fmod(&self, other: &TensorOrScalar) -> Result<Tensor> {
        let out = self.fmod_raw(other)?;
        self.record_binary_misc("FmodBackward1", other, &out, |g, a, b| {
            let q = a.div_mode_raw(&TensorOrScalar::Tensor(b.clone()), Some("trunc"))?;
            Ok((Some(g.clone()), Some(gmul(g, &q)?.unary(UnaryOp::Neg)?)))
        });
        Ok(out)
    }

    /// `div(other, rounding_mode)`: `None` is true division, `"trunc"` rounds toward zero
    /// and `"floor"` toward negative infinity; the rounding modes keep integer dtypes (and
    /// have zero gradient, as in PyTorch).
    pub fn div_mode(&self, other: &TensorOrScalar, rounding_mode: Option<&str>) -> Result<Tensor> {
        let out = self.div_mode_raw(other, rounding_mode)?;
        if rounding_mode.is_some() {
            self.record_binary_misc("DivBackward2", other, &out, |g, _, _| {
                Ok((Some(gzero(g)?), Some(gzero(g)?)))
            });
        }
        Ok(out)
    }

    /// `add(other, alpha)` / `sub(other, alpha)`: `self ± alpha * other` in one rounding.
    pub fn add_scaled(
        &self,
        other: &TensorOrScalar,
        alpha: Scalar,
        subtract: bool,
    ) -> Result<Tensor> {
        let out = self.add_scaled_raw(other, alpha, subtract)?;
        let k = if subtract {
            -alpha.to_f64()
        } else {
            alpha.to_f64()
        };
        let name = if subtract {
            "SubBackward0"
        } else {
            "AddBackward0"
        };
        self.record_binary_misc(name, other, &out, move |g, _, _| {
            Ok((Some(g.clone()), Some(gmuls(g, k)?)))
        });
        Ok(out)
    }

    /// `addcmul(t1, t2, value)`: `self + value * t1 * t2`; `addcdiv`: `self + value * t1 / t2`
    /// (integer `t1`/`t2` are refused for addcdiv, as in PyTorch).
    pub fn addc(&self, t1: &Tensor, t2: &Tensor, value: Scalar, div: bool) -> Result<Tensor> {
        let out = self.addc_raw(t1, t2, value, div)?;
        let v = value.to_f64();
        let name = if div {
            "AddcdivBackward0"
        } else {
            "AddcmulBackward0"
        };
        record_misc(name, &[self, t1, t2], &out, move |g, xs| {
            let (x, y) = (&xs[1], &xs[2]);
            let gv = gmuls(g, v)?;
            let (g1, g2) = if div {
                let g1 = gdiv(&gv, y)?;
                let g2 = gdiv(&gmul(&gv, x)?, &gmul(y, y)?)?.unary(UnaryOp::Neg)?;
                (g1, g2)
            } else {
                (gmul(&gv, y)?, gmul(&gv, x)?)
            };
            Ok(vec![Some(g.clone()), Some(g1), Some(g2)])
        });
        Ok(out)
    }

    /// Record a binary misc op's node; `f(g, a, b)` gets `other` as a tensor (a scalar as a
    /// 0-d float64 tensor) and returns the gradients of `self` and `other`.
    fn record_binary_misc(
        &self,
        name: &'static str,
        other: &TensorOrScalar,
        out: &Tensor,
        f: impl Fn(&Tensor, &Tensor, &Tensor) -> Result<(Option<Tensor>, Option<Tensor>)>
            + Send
            + 'static,
    ) {
        let b = match other {
            TensorOrScalar::Tensor(t) => t.clone(),
            TensorOrScalar::Scalar(s) => Tensor::scalar(*s, DType::F64),
        };
        record_misc(name, &[self, &b], out, move |g, xs| {
            let (ga, gb) = f(g, &xs[0], &xs[1])?;
            Ok(vec![ga, gb])
        });
    }
}
