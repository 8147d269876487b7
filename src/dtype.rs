//! Element types: the `DType` enum, the `Element` trait every kernel is generic over,
//! PyTorch's type-promotion rules, and the one dispatch macro (`with_dtype!`) that turns a
//! runtime `DType` into a compile-time element type.

use crate::{Error, Result};
use half::{bf16, f16};
use std::fmt::Debug;

/// The element type of a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    Bool,
    U8,
    I8,
    I16,
    I32,
    I64,
    F16,
    BF16,
    F32,
    F64,
}

/// Bool < integer < floating point: the categories of type promotion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Category {
    Bool,
    Int,
    Float,
}

impl DType {
    pub const ALL: [DType; 10] = [
        DType::Bool,
        DType::U8,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
    ];

    /// Size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            DType::Bool | DType::U8 | DType::I8 => 1,
            DType::I16 | DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::F32 => 4,
            DType::I64 | DType::F64 => 8,
        }
    }
    pub fn is_floating_point(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }
    pub fn is_signed(self) -> bool {
        !matches!(self, DType::Bool | DType::U8)
    }
    pub fn category(self) -> Category {
        match self {
            DType::Bool => Category::Bool,
            d if d.is_floating_point() => Category::Float,
            _ => Category::Int,
        }
    }
    /// The name PyTorch prints, e.g. `torch.float32` -> "float32".
    pub fn python_name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "uint8",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }
    /// The lowest and highest value of an integer dtype (bool: 0 and 1).
    pub fn int_range(self) -> (i64, i64) {
        match self {
            DType::Bool => (0, 1),
            DType::U8 => (0, u8::MAX as i64),
            DType::I8 => (i8::MIN as i64, i8::MAX as i64),
            DType::I16 => (i16::MIN as i64, i16::MAX as i64),
            DType::I32 => (i32::MIN as i64, i32::MAX as i64),
            DType::I64 => (i64::MIN, i64::MAX),
            _ => panic!("int_range of the floating-point dtype {self:?}"),
        }
    }
    /// The C++ scalar-type name PyTorch uses in "not implemented for 'Bool'" messages.
    pub fn torch_name(self) -> &'static str {
        match self {
            DType::Bool => "Bool",
            DType::U8 => "Byte",
            DType::I8 => "Char",
            DType::I16 => "Short",
            DType::I32 => "Int",
            DType::I64 => "Long",
            DType::F16 => "Half",
            DType::BF16 => "BFloat16",
            DType::F32 => "Float",
            DType::F64 => "Double",
        }
    }
    /// The C++ element type PyTorch names in "value cannot be converted to type int8_t
    /// without overflow".
    pub fn c_name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "uint8_t",
            DType::I8 => "int8_t",
            DType::I16 => "int16_t",
            DType::I32 => "int",
            DType::I64 => "int64_t",
            DType::F16 => "c10::Half",
            DType::BF16 => "c10::BFloat16",
            DType::F32 => "float",
            DType::F64 => "double",
        }
    }
    /// Parse a dtype name ("float32", "float", "int64", "long", ...).
    pub fn parse(s: &str) -> Result<DType> {
        Ok(match s {
            "bool" => DType::Bool,
            "uint8" => DType::U8,
            "int8" => DType::I8,
            "int16" | "short" => DType::I16,
            "int32" | "int" => DType::I32,
            "int64" | "long" => DType::I64,
            "float16" | "half" => DType::F16,
            "bfloat16" => DType::BF16,
            "float32" | "float" => DType::F32,
            "float64" | "double" => DType::F64,
            _ => return Err(Error::Type(format!("unknown dtype '{s}'"))),
        })
    }
    /// The dtype kernels compute in: f16/bf16 are computed in f32 on the CPU.
    pub fn compute_dtype(self) -> DType {
        match self {
            DType::F16 | DType::BF16 => DType::F32,
            d => d,
        }
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.python_name())
    }
}

/// PyTorch's `promote_types` for two tensor dtypes.
pub fn promote_types(a: DType, b: DType) -> DType {
    use DType::*;
    if a == b {
        return a;
    }
    match (a.category(), b.category()) {
        (Category::Float, Category::Float) => {
            if matches!((a, b), (F16, BF16) | (BF16, F16)) {
                F32
            } else {
                a.max(b)
            }
        }
        (Category::Float, _) => a,
        (_, Category::Float) => b,
        (Category::Bool, _) => b,
        (_, Category::Bool) => a,
        _ => {
            // Both integers. uint8 with a signed type needs a wider signed type.
            match (a, b) {
                (U8, I8) | (I8, U8) => I16,
                (U8, x) | (x, U8) => x,
                _ => a.max(b),
            }
        }
    }
}

/// A Python-style scalar: weakly typed in promotion (it only decides the category).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    Bool(bool),
    Int(i64),
    Float(f64),
}

impl Scalar {
    pub fn category(self) -> Category {
        match self {
            Scalar::Bool(_) => Category::Bool,
            Scalar::Int(_) => Category::Int,
            Scalar::Float(_) => Category::Float,
        }
    }
    pub fn to_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => b as i64 as f64,
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) => f,
        }
    }
    pub fn to_i64(self) -> i64 {
        match self {
            Scalar::Bool(b) => b as i64,
            Scalar::Int(i) => i,
            Scalar::Float(f) => f as i64,
        }
    }
    /// The dtype a tensor made from this scalar alone gets (`torch.tensor(3.0)`).
    pub fn default_dtype(self) -> DType {
        match self {
            Scalar::Bool(_) => DType::Bool,
            Scalar::Int(_) => DType::I64,
            Scalar::Float(_) => crate::default_dtype(),
        }
    }
    /// Does the value overflow `dtype`? PyTorch's `c10::overflows`, which `checked_convert`
    /// (every `Scalar.to<T>()`: fill_, full, pow's exponent, where's scalar...) applies:
    /// an integer must lie in the range, except that a negative one may wrap into an
    /// unsigned type down to `-max` (`uint8` takes -1 as 255, not -256); a float must be
    /// finite with its truncation in range for an integer type (NaN and inf overflow), in
    /// range or inf/NaN for a float type. Bool takes anything, and so does a bool value.
    pub fn overflows(self, dtype: DType) -> bool {
        let (lo, hi) = match dtype {
            DType::Bool => return false,
            DType::U8 => (0.0, 255.0),
            DType::I8 => (-128.0, 127.0),
            DType::I16 => (-32768.0, 32767.0),
            DType::I32 => (i32::MIN as f64, i32::MAX as f64),
            DType::I64 => (i64::MIN as f64, i64::MAX as f64),
            DType::F16 => (-65504.0, 65504.0),
            DType::BF16 => (-f64::from(bf16::MAX), f64::from(bf16::MAX)),
            DType::F32 => (-f64::from(f32::MAX), f64::from(f32::MAX)),
            DType::F64 => return false,
        };
        match self {
            Scalar::Bool(_) => false,
            Scalar::Int(v) => {
                let x = v as f64;
                if dtype == DType::U8 {
                    x > hi || x < -hi
                } else {
                    x < lo || x > hi
                }
            }
            Scalar::Float(x) => {
                if dtype.is_floating_point() {
                    x.is_finite() && (x < lo || x > hi)
                } else {
                    // Converted by truncation, so what must fit is the truncated value:
                    // 127.9 becomes int8 127, -0.5 does not become uint8 (PyTorch 2.15).
                    x.is_nan() || x < lo || x >= hi + 1.0
                }
            }
        }
    }
    /// `Err` (PyTorch's RuntimeError "value cannot be converted to type int8_t without
    /// overflow") when the value overflows `dtype`: the conversion of a Python number to a
    /// tensor's dtype in fill_/full/new_full/where/pow (where PyTorch does not wrap).
    pub fn check_fits(self, dtype: DType) -> Result<()> {
        if self.overflows(dtype) {
            return Err(Error::Runtime(format!(
                "value cannot be converted to type {} without overflow",
                dtype.c_name()
            )));
        }
        Ok(())
    }
    /// [`Scalar::check_fits`] as PyTorch's `fill_` applies it: a CPU tensor of one element
    /// is filled through a path that converts half / bfloat16 values unchecked (1e10 becomes
    /// inf there, while a larger tensor refuses it).
    pub fn check_fill(self, dtype: DType, numel: usize, on_cpu: bool) -> Result<()> {
        if on_cpu && numel == 1 && matches!(dtype, DType::F16 | DType::BF16) {
            return Ok(());
        }
        self.check_fits(dtype)
    }
    /// Convert to an element type with PyTorch's casting rules.
    pub fn to_elem<T: Element>(self) -> T {
        match self {
            Scalar::Bool(b) => T::from_i64(b as i64),
            Scalar::Int(i) => T::from_i64(i),
            Scalar::Float(f) => T::from_f64(f),
        }
    }
}

impl From<f64> for Scalar {
    fn from(v: f64) -> Self {
        Scalar::Float(v)
    }
}
impl From<f32> for Scalar {
    fn from(v: f32) -> Self {
        Scalar::Float(v as f64)
    }
}
impl From<i64> for Scalar {
    fn from(v: i64) -> Self {
        Scalar::Int(v)
    }
}
impl From<i32> for Scalar {
    fn from(v: i32) -> Self {
        Scalar::Int(v as i64)
    }
}
impl From<bool> for Scalar {
    fn from(v: bool) -> Self {
        Scalar::Bool(v)
    }
}

/// PyTorch's result-type computation: tensors with dims outrank 0-d tensors, which outrank
/// Python scalars; a lower-ranked operand only matters if its category is higher.
#[derive(Debug, Clone, Copy, Default)]
pub struct ResultType {
    dim_result: Option<DType>,
    zero_dim_result: Option<DType>,
    scalar_result: Option<DType>,
}

impl ResultType {
    pub fn new() -> Self {
        Self::default()
    }
    fn merge(slot: &mut Option<DType>, d: DType) {
        *slot = Some(match *slot {
            None => d,
            Some(o) => promote_types(o, d),
        });
    }
    /// Add a tensor operand of dtype `d` with `ndim` dimensions.
    pub fn tensor(mut self, d: DType, ndim: usize) -> Self {
        if ndim == 0 {
            Self::merge(&mut self.zero_dim_result, d);
        } else {
            Self::merge(&mut self.dim_result, d);
        }
        self
    }
    /// Add a Python scalar operand.
    pub fn scalar(mut self, s: Scalar) -> Self {
        let d = match s {
            Scalar::Bool(_) => DType::Bool,
            Scalar::Int(_) => DType::I64,
            Scalar::Float(_) => crate::default_dtype(),
        };
        Self::merge(&mut self.scalar_result, d);
        self
    }
    pub fn finish(self) -> DType {
        let combine = |higher: Option<DType>, lower: Option<DType>| -> Option<DType> {
            match (higher, lower) {
                (None, l) => l,
                (h, None) => h,
                (Some(h), Some(l)) => {
                    if l.category() > h.category() {
                        Some(promote_types(h, l))
                    } else {
                        Some(h)
                    }
                }
            }
        };
        let r = combine(self.dim_result, self.zero_dim_result);
        combine(r, self.scalar_result).unwrap_or(DType::F32)
    }
}

/// The element trait every CPU kernel is generic over. Arithmetic on integers wraps (as in
/// PyTorch); bool arithmetic is logical.
pub trait Element: Copy + Send + Sync + Debug + PartialOrd + Default + 'static {
    const DTYPE: DType;
    const IS_FLOAT: bool;
    fn to_f64(self) -> f64;
    fn to_i64(self) -> i64;
    fn from_f64(v: f64) -> Self;
    fn from_i64(v: i64) -> Self;
    fn zero() -> Self;
    fn one() -> Self;
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    /// Division for this type (truncating for ints; callers check for zero divisors).
    fn div(self, o: Self) -> Self;
    fn is_zero(self) -> bool {
        self == Self::zero()
    }
    /// Convert between element types with PyTorch's casting rules.
    #[inline(always)]
    fn cast<D: Element>(self) -> D {
        if Self::IS_FLOAT || D::IS_FLOAT {
            D::from_f64(self.to_f64())
        } else {
            D::from_i64(self.to_i64())
        }
    }
}

macro_rules! impl_int_element {
    ($t:ty, $dt:expr) => {
        impl Element for $t {
            const DTYPE: DType = $dt;
            const IS_FLOAT: bool = false;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                self as i64
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                // Float -> int truncates toward zero; out-of-range wraps through i64 like C.
                v as i64 as $t
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn zero() -> Self {
                0
            }
            #[inline(always)]
            fn one() -> Self {
                1
            }
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                self.wrapping_sub(o)
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
            #[inline(always)]
            fn div(self, o: Self) -> Self {
                if o == 0 {
                    0
                } else {
                    self.wrapping_div(o)
                }
            }
        }
    };
}
impl_int_element!(u8, DType::U8);
impl_int_element!(i8, DType::I8);
impl_int_element!(i16, DType::I16);
impl_int_element!(i32, DType::I32);
impl_int_element!(i64, DType::I64);

macro_rules! impl_float_element {
    ($t:ty, $dt:expr, $to:expr, $from:expr) => {
        impl Element for $t {
            const DTYPE: DType = $dt;
            const IS_FLOAT: bool = true;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                $to(self)
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                $to(self) as i64
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                $from(v)
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                $from(v as f64)
            }
            #[inline(always)]
            fn zero() -> Self {
                $from(0.0)
            }
            #[inline(always)]
            fn one() -> Self {
                $from(1.0)
            }
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self + o
            }
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                self - o
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self * o
            }
            #[inline(always)]
            fn div(self, o: Self) -> Self {
                self / o
            }
        }
    };
}
impl_float_element!(f32, DType::F32, |x: f32| x as f64, |v: f64| v as f32);
impl_float_element!(f64, DType::F64, |x: f64| x, |v: f64| v);
impl_float_element!(f16, DType::F16, |x: f16| x.to_f64(), f16::from_f64);
impl_float_element!(bf16, DType::BF16, |x: bf16| x.to_f64(), bf16::from_f64);

impl Element for bool {
    const DTYPE: DType = DType::Bool;
    const IS_FLOAT: bool = false;
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as i64 as f64
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self as i64
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        v != 0
    }
    fn zero() -> Self {
        false
    }
    fn one() -> Self {
        true
    }
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        self | o
    }
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        self ^ o
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        self & o
    }
    #[inline(always)]
    fn div(self, o: Self) -> Self {
        self & o
    }
}

/// Floating-point element types computed natively (f16/bf16 are upcast to f32 first).
pub trait FloatElement: Element + num_traits::Float + crate::cpu::vmath::VecMath {}
impl FloatElement for f32 {}
impl FloatElement for f64 {}

/// Run `$body` with `$T` bound to the element type of `$dt` (all ten dtypes).
#[macro_export]
macro_rules! with_dtype {
    ($dt:expr, $T:ident, $body:block) => {
        match $dt {
            $crate::DType::Bool => {
                type $T = bool;
                $body
            }
            $crate::DType::U8 => {
                type $T = u8;
                $body
            }
            $crate::DType::I8 => {
                type $T = i8;
                $body
            }
            $crate::DType::I16 => {
                type $T = i16;
                $body
            }
            $crate::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::DType::F16 => {
                type $T = half::f16;
                $body
            }
            $crate::DType::BF16 => {
                type $T = half::bf16;
                $body
            }
            $crate::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::DType::F64 => {
                type $T = f64;
                $body
            }
        }
    };
}

/// Run `$body` with `$T` bound to a natively computed float type (f32 or f64). Callers upcast
/// f16/bf16 to f32 before (see `DType::compute_dtype`); any other dtype runs `$else`.
#[macro_export]
macro_rules! with_float_dtype {
    ($dt:expr, $T:ident, $body:block, $else:expr) => {
        match $dt {
            $crate::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::DType::F64 => {
                type $T = f64;
                $body
            }
            _ => $else,
        }
    };
}

/// `v` as C++'s `std::ostream` prints a double (`%g`: six significant digits, exponent form
/// below 1e-4 or from 1e6 on), for messages that quote PyTorch's text ("9.22337e+18").
pub fn cpp_g(v: f64) -> String {
    if !v.is_finite() {
        return if v.is_nan() {
            "nan".into()
        } else if v > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    if v == 0.0 {
        return "0".into();
    }
    // the exponent after rounding to six significant digits
    let sci = format!("{v:.5e}");
    let (mantissa, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("{:e} exponent is an integer");
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    } else {
        trim(&format!("{v:.*}", (5 - exp) as usize))
    }
}

#[cfg(test)]
mod tests {
    use super::cpp_g;

    #[test]
    fn cpp_g_matches_ostream() {
        let cases = [
            (9.223372036854776e18, "9.22337e+18"),
            (300.0, "300"),
            (-1.0, "-1"),
            (2.5, "2.5"),
            (0.1, "0.1"),
            (1e-5, "1e-05"),
            (123456.7, "123457"),
            (1234567.0, "1.23457e+06"),
            (1.79769e308, "1.79769e+308"),
            (f64::NEG_INFINITY, "-inf"),
        ];
        for (v, want) in cases {
            assert_eq!(cpp_g(v), want, "{v}");
        }
    }
}
