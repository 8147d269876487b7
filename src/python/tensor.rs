//! The `Tensor` Python class: attributes, conversions, operators and elementwise methods.
//! Other method families live in sibling modules (`#[pymethods]` blocks may be split).

use super::convert::{
    extract_device, extract_dtype, extract_scalar, extract_shape_args, PyDType, PyDevice,
};
use super::{guarded, run};
use crate::dtype::Category;
use crate::{BinaryOp, DType, Device, Error, Scalar, Tensor, UnaryOp};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyFloat, PyInt, PyList, PySequence, PyString, PyTuple};

/// `ferrotorch.Tensor`.
#[pyclass(name = "Tensor", module = "ferrotorch", subclass, dict, weakref)]
pub struct PyTensor {
    pub inner: Tensor,
}

impl PyTensor {
    /// The value of a one-element tensor for `int()` / `float()`: PyTorch raises ValueError
    /// for other sizes (`item()` raises RuntimeError).
    fn single_element(&self) -> PyResult<crate::Scalar> {
        if self.inner.numel() != 1 {
            return Err(PyValueError::new_err(
                "only one element tensors can be converted to Python scalars",
            ));
        }
        Ok(self.inner.item()?)
    }
}

impl PyTensor {
    pub fn new(inner: Tensor) -> Self {
        PyTensor { inner }
    }
}

impl From<Tensor> for PyTensor {
    fn from(t: Tensor) -> Self {
        PyTensor { inner: t }
    }
}

static DTYPE_OBJECTS: PyOnceLock<Vec<Py<PyDType>>> = PyOnceLock::new();

/// The interned `ferrotorch.<dtype>` object (so `x.dtype is ferrotorch.float32` holds).
pub fn dtype_object(py: Python<'_>, d: DType) -> PyResult<Py<PyDType>> {
    let objs = DTYPE_OBJECTS.get_or_try_init(py, || -> PyResult<_> {
        DType::ALL
            .iter()
            .map(|&d| Py::new(py, PyDType(d)))
            .collect()
    })?;
    let i = DType::ALL
        .iter()
        .position(|&x| x == d)
        .expect("every dtype is in ALL");
    Ok(objs[i].clone_ref(py))
}

static SIZE_CLASS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// A `ferrotorch.Size` (a tuple subclass defined in Python) from dims.
pub fn size_object<'py>(py: Python<'py>, dims: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    let cls = SIZE_CLASS.get_or_try_init(py, || -> PyResult<_> {
        Ok(py.import("ferrotorch._size")?.getattr("Size")?.unbind())
    })?;
    cls.bind(py).call1((PyTuple::new(py, dims)?,))
}

/// A tensor argument or a Python scalar.
pub enum Operand {
    Tensor(Tensor),
    Scalar(Scalar),
}

pub fn extract_operand(obj: &Bound<'_, PyAny>) -> Option<Operand> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Some(Operand::Tensor(t.borrow().inner.clone()));
    }
    extract_scalar(obj).map(Operand::Scalar)
}

/// Any tensor-like argument (tensor, scalar, nested list, NumPy array) as a Tensor.
pub fn to_tensor(obj: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(t.borrow().inner.clone());
    }
    tensor_from_data(obj, None)
}

/// Nested Python data read as PyTorch's `internal_new_from_data` reads it: the shape, the
/// values, and the dtype inferred as `promote_types` over the leaves (a Python bool is bool,
/// an int int64, a float the default dtype; a NumPy scalar or array and a tensor have their
/// own dtype, so a list of float16 scalars or of float64 0-d tensors keeps that dtype).
struct Nested {
    shape: Vec<usize>,
    values: Vec<Scalar>,
    dtype: Option<DType>,
    /// A Python int beyond int64 (kept as a float): only a float or bool dtype can hold it.
    big_int: bool,
    /// What an integer dtype raises for a float leaf that is not a Python float (a float
    /// tensor, a NumPy float32 scalar): PyTorch reads those through `__index__`.
    not_index: Option<String>,
}

impl Nested {
    fn merge(&mut self, d: DType) {
        self.dtype = Some(match self.dtype {
            None => d,
            Some(o) => crate::promote_types(o, d),
        });
    }
    fn not_index(&mut self, msg: impl FnOnce() -> String) {
        if self.not_index.is_none() {
            self.not_index = Some(msg());
        }
    }
    fn leaf(&mut self, s: Scalar, depth: usize) -> PyResult<()> {
        if depth != self.shape.len() {
            return Err(PyValueError::new_err(
                "expected sequence of equal-length lists, found a number where a list was expected",
            ));
        }
        self.values.push(s);
        Ok(())
    }
    /// A sequence of length `n` at `depth`: the first one there fixes that dimension.
    fn enter(&mut self, n: usize, depth: usize) -> PyResult<()> {
        if depth == self.shape.len() {
            if !self.values.is_empty() {
                return Err(PyValueError::new_err(
                    "expected sequence of equal-length lists, found a list where a number was expected",
                ));
            }
            self.shape.push(n);
        } else if self.shape[depth] != n {
            return Err(PyValueError::new_err(format!(
                "expected sequence of length {} at dim {depth} (got {n})",
                self.shape[depth]
            )));
        }
        Ok(())
    }
    /// The row-major values `vals` of `shape` (a NumPy array, or a tensor where a list is
    /// expected), read like nested sequences.
    fn block(&mut self, shape: &[usize], vals: &[Scalar], depth: usize) -> PyResult<()> {
        match shape.split_first() {
            None => self.leaf(vals[0], depth),
            Some((&n, rest)) => {
                self.enter(n, depth)?;
                let step: usize = rest.iter().product();
                for i in 0..n {
                    self.block(rest, &vals[i * step..(i + 1) * step], depth + 1)?;
                }
                Ok(())
            }
        }
    }
}

/// The elements of `t` (row-major) as scalars of its category.
fn tensor_values(t: &Tensor) -> PyResult<Vec<Scalar>> {
    Ok(match t.dtype().category() {
        Category::Float => t.to_f64_vec().into_iter().map(Scalar::Float).collect(),
        Category::Int => t
            .to_dtype(DType::I64)
            .to_vec::<i64>()?
            .into_iter()
            .map(Scalar::Int)
            .collect(),
        Category::Bool => t.to_vec::<bool>()?.into_iter().map(Scalar::Bool).collect(),
    })
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_default()
}

fn walk(obj: &Bound<'_, PyAny>, depth: usize, acc: &mut Nested) -> PyResult<()> {
    if obj.is_exact_instance_of::<PyFloat>() {
        acc.merge(crate::default_dtype());
        return acc.leaf(Scalar::Float(obj.extract()?), depth);
    }
    if obj.is_instance_of::<PyBool>() {
        acc.merge(DType::Bool);
        return acc.leaf(Scalar::Bool(obj.extract()?), depth);
    }
    if obj.is_exact_instance_of::<PyInt>()
        || (obj.is_instance_of::<PyInt>() && !is_numpy_scalar(obj))
    {
        acc.merge(DType::I64);
        return match obj.extract::<i64>() {
            Ok(v) => acc.leaf(Scalar::Int(v), depth),
            Err(_) => {
                // PyTorch infers int64 and fails to unpack it, unless the dtype is a float.
                acc.big_int = true;
                acc.leaf(Scalar::Float(obj.extract()?), depth)
            }
        };
    }
    if is_numpy_scalar(obj) {
        let s = extract_scalar(obj).ok_or_else(|| could_not_infer(obj))?;
        let d = obj
            .getattr("dtype")
            .ok()
            .and_then(|d| extract_dtype(&d).ok())
            .unwrap_or(s.default_dtype());
        acc.merge(d);
        if matches!(s, Scalar::Float(_)) && !obj.is_instance_of::<PyFloat>() {
            acc.not_index(|| {
                format!(
                    "'numpy.{}' object cannot be interpreted as an integer",
                    type_name(obj)
                )
            });
        }
        return acc.leaf(s, depth);
    }
    if obj.is_instance_of::<PyFloat>() {
        acc.merge(crate::default_dtype());
        return acc.leaf(Scalar::Float(obj.extract()?), depth);
    }
    if let Ok(t) = obj.cast::<PyTensor>() {
        let t = t.borrow().inner.clone();
        acc.merge(t.dtype());
        if t.ndim() > 0 && depth < acc.shape.len() {
            // Where a list is expected PyTorch iterates over the tensor.
            return acc.block(t.shape(), &tensor_values(&t)?, depth);
        }
        if t.numel() != 1 {
            return Err(PyValueError::new_err(
                "only one element tensors can be converted to Python scalars",
            ));
        }
        if t.dtype().is_floating_point() {
            acc.not_index(|| {
                "only integer tensors of a single element can be converted to an index".into()
            });
        }
        return acc.leaf(t.item()?, depth);
    }
    if super::numpy_interop::is_ndarray(obj) {
        // A sequence to PyTorch, with the array's dtype.
        let t = super::numpy_interop::from_numpy_any(obj)?;
        if t.ndim() == 0 {
            return Err(PyTypeError::new_err("len() of unsized object"));
        }
        acc.merge(t.dtype());
        if t.dtype().is_floating_point() && t.dtype() != DType::F64 {
            acc.not_index(|| {
                format!(
                    "'numpy.{}' object cannot be interpreted as an integer",
                    t.dtype().python_name()
                )
            });
        }
        return acc.block(t.shape(), &tensor_values(&t)?, depth);
    }
    if obj.is_instance_of::<PyString>() {
        // A string inside a list is a sequence of strings without end.
        if depth > 0 {
            return Err(PyValueError::new_err("too many dimensions 'str'"));
        }
        return Err(PyTypeError::new_err("new(): invalid data type 'str'"));
    }
    if obj.is_instance_of::<PyBytes>() {
        return Err(PyTypeError::new_err("new(): invalid data type 'bytes'"));
    }
    let seq = obj.cast::<PySequence>().map_err(|_| could_not_infer(obj))?;
    let n = seq.len()?;
    acc.enter(n, depth)?;
    for i in 0..n {
        walk(&seq.get_item(i)?, depth + 1, acc)?;
    }
    Ok(())
}

fn could_not_infer(obj: &Bound<'_, PyAny>) -> PyErr {
    PyRuntimeError::new_err(format!("Could not infer dtype of {}", type_name(obj)))
}

/// `ferrotorch.tensor(data, dtype)`: always copies.
pub fn tensor_from_data(data: &Bound<'_, PyAny>, dtype: Option<DType>) -> PyResult<Tensor> {
    if let Ok(t) = data.cast::<PyTensor>() {
        let t = t.borrow().inner.clone();
        return Ok(t.to_dtype(dtype.unwrap_or(t.dtype())).clone_data());
    }
    if super::numpy_interop::is_ndarray(data) {
        let t = super::numpy_interop::from_numpy_any(data)?;
        return Ok(t.to_dtype(dtype.unwrap_or(t.dtype())).clone_data());
    }
    let mut acc = Nested {
        shape: vec![],
        values: vec![],
        dtype: None,
        big_int: false,
        not_index: None,
    };
    walk(data, 0, &mut acc)?;
    let target = dtype.unwrap_or(acc.dtype.unwrap_or_else(crate::default_dtype));
    let Nested { shape, values, .. } = acc;
    Ok(match target.category() {
        Category::Float => {
            let v: Vec<f64> = values.iter().map(|s| s.to_f64()).collect();
            Tensor::from_vec(v, &shape)?.to_dtype(target)
        }
        Category::Bool => {
            let v: Vec<bool> = values
                .iter()
                .map(|s| match *s {
                    Scalar::Bool(b) => b,
                    Scalar::Int(i) => i != 0,
                    Scalar::Float(f) => f != 0.0,
                })
                .collect();
            Tensor::from_vec(v, &shape)?
        }
        Category::Int => {
            // Each value is unpacked with PyTorch's overflow check (no wrapping, except a
            // negative int into uint8 down to -255).
            if acc.big_int {
                return Err(PyValueError::new_err("Overflow when unpacking long long"));
            }
            if let Some(msg) = acc.not_index {
                return Err(PyTypeError::new_err(msg));
            }
            if values.iter().any(|s| s.overflows(target)) {
                return Err(PyRuntimeError::new_err(format!(
                    "value cannot be converted to type {} without overflow",
                    target.python_name()
                )));
            }
            let v: Vec<i64> = values.iter().map(|s| s.to_i64()).collect();
            Tensor::from_vec(v, &shape)?.to_dtype(target)
        }
    })
}

/// A NumPy scalar (`np.float64(1.5)`, `np.int16(3)`...): not a plain Python number, and its
/// type lives in the `numpy` module.
fn is_numpy_scalar(data: &Bound<'_, PyAny>) -> bool {
    if data.is_exact_instance_of::<PyFloat>()
        || data.is_exact_instance_of::<PyInt>()
        || data.is_instance_of::<PyBool>()
        || super::numpy_interop::is_ndarray(data)
    {
        return false;
    }
    data.get_type()
        .module()
        .is_ok_and(|m| m.to_str().is_ok_and(|m| m == "numpy"))
}

/// Build a Python list (or scalar for 0-d) of the elements.
fn to_list<'py>(py: Python<'py>, t: &Tensor) -> PyResult<Bound<'py, PyAny>> {
    fn build<'py>(
        py: Python<'py>,
        shape: &[usize],
        vals: &mut dyn Iterator<Item = Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if shape.is_empty() {
            return Ok(vals.next().expect("enough values"));
        }
        let items: Vec<Bound<'py, PyAny>> = (0..shape[0])
            .map(|_| build(py, &shape[1..], vals))
            .collect::<PyResult<_>>()?;
        Ok(PyList::new(py, items)?.into_any())
    }
    let shape = t.shape().to_vec();
    match t.dtype().category() {
        Category::Float => {
            let v = t.to_f64_vec();
            let mut it = v.into_iter().map(|x| PyFloat::new(py, x).into_any());
            build(py, &shape, &mut it)
        }
        Category::Int => {
            let v = t.to_dtype(DType::I64).to_vec::<i64>()?;
            let mut it = v
                .into_iter()
                .map(|x| x.into_pyobject(py).expect("int").into_any());
            build(py, &shape, &mut it)
        }
        Category::Bool => {
            let v = t.to_vec::<bool>()?;
            let mut it = v
                .into_iter()
                .map(|x| PyBool::new(py, x).to_owned().into_any());
            build(py, &shape, &mut it)
        }
    }
}

pub fn scalar_to_py<'py>(py: Python<'py>, s: Scalar) -> PyResult<Bound<'py, PyAny>> {
    Ok(match s {
        Scalar::Bool(b) => PyBool::new(py, b).to_owned().into_any(),
        Scalar::Int(i) => i.into_pyobject(py)?.into_any(),
        Scalar::Float(f) => PyFloat::new(py, f).into_any(),
    })
}

fn binop(
    py: Python<'_>,
    a: &Tensor,
    other: &Bound<'_, PyAny>,
    op: BinaryOp,
    reversed: bool,
) -> PyResult<Option<PyTensor>> {
    let n = a.numel();
    match extract_operand(other) {
        Some(Operand::Tensor(b)) => {
            let (x, y) = if reversed {
                (b, a.clone())
            } else {
                (a.clone(), b)
            };
            let n = n.max(y.numel());
            Ok(Some(run(py, n, || x.binary(&y, op))?.into()))
        }
        Some(Operand::Scalar(s)) => Ok(Some(
            run(py, n, || a.binary_scalar(s, op, reversed))?.into(),
        )),
        None => {
            // Lists and arrays become tensors; anything else is NotImplemented.
            if other.is_instance_of::<PyList>() || super::numpy_interop::is_ndarray(other) {
                let b = tensor_from_data(other, None)?;
                let (x, y) = if reversed {
                    (b, a.clone())
                } else {
                    (a.clone(), b)
                };
                Ok(Some(run(py, n, || x.binary(&y, op))?.into()))
            } else {
                Ok(None)
            }
        }
    }
}

fn binop_inplace(
    py: Python<'_>,
    a: &Tensor,
    other: &Bound<'_, PyAny>,
    op: BinaryOp,
) -> PyResult<()> {
    let n = a.numel();
    match extract_operand(other) {
        Some(Operand::Tensor(b)) => run(py, n, || a.binary_(&b, op)),
        Some(Operand::Scalar(s)) => run(py, n, || a.binary_scalar_(s, op)),
        None => {
            let b = tensor_from_data(other, None)?;
            run(py, n, || a.binary_(&b, op))
        }
    }
}

fn not_implemented(py: Python<'_>, r: Option<PyTensor>) -> PyResult<Py<PyAny>> {
    match r {
        Some(t) => Ok(Py::new(py, t)?.into_any()),
        None => Ok(py.NotImplemented()),
    }
}

macro_rules! binary_dunders {
    ($( $name:ident, $rname:ident, $iname:ident, $meth:ident, $imeth:ident => $op:expr; )*) => {
        #[pymethods]
        impl PyTensor {
            $(
                fn $name(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                    not_implemented(py, binop(py, &self.inner, other, $op, false)?)
                }
                fn $rname(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                    not_implemented(py, binop(py, &self.inner, other, $op, true)?)
                }
                fn $iname(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
                    binop_inplace(py, &self.inner, other, $op)
                }
                // `alpha=` (add/sub) and `rounding_mode=` (div) are handled in misc_ops.rs.
                #[pyo3(signature = (other, *, alpha=None, rounding_mode=None))]
                fn $meth(&self, py: Python<'_>, other: &Bound<'_, PyAny>, alpha: Option<&Bound<'_, PyAny>>, rounding_mode: Option<String>) -> PyResult<PyTensor> {
                    if alpha.is_some() || rounding_mode.is_some() {
                        return super::misc_ops::binary_kw(py, &self.inner, other, $op, alpha, rounding_mode.as_deref(), stringify!($meth));
                    }
                    binop(py, &self.inner, other, $op, false)?.ok_or_else(|| {
                        PyTypeError::new_err(format!("{}(): argument 'other' must be Tensor or Number", stringify!($meth)))
                    })
                }
                #[pyo3(signature = (other, *, alpha=None, rounding_mode=None))]
                fn $imeth<'py>(slf: Bound<'py, Self>, other: &Bound<'py, PyAny>, alpha: Option<&Bound<'py, PyAny>>, rounding_mode: Option<String>) -> PyResult<Bound<'py, Self>> {
                    let t = slf.borrow().inner.clone();
                    if alpha.is_some() || rounding_mode.is_some() {
                        super::misc_ops::binary_kw_(slf.py(), &t, other, $op, alpha, rounding_mode.as_deref(), stringify!($imeth))?;
                        return Ok(slf);
                    }
                    binop_inplace(slf.py(), &t, other, $op)?;
                    Ok(slf)
                }
            )*
        }
    };
}

binary_dunders! {
    __add__, __radd__, __iadd__, add, add_ => BinaryOp::Add;
    __sub__, __rsub__, __isub__, sub, sub_ => BinaryOp::Sub;
    __mul__, __rmul__, __imul__, mul, mul_ => BinaryOp::Mul;
    __truediv__, __rtruediv__, __itruediv__, div, div_ => BinaryOp::Div;
    __floordiv__, __rfloordiv__, __ifloordiv__, floor_divide, floor_divide_ => BinaryOp::FloorDiv;
    __mod__, __rmod__, __imod__, remainder, remainder_ => BinaryOp::Remainder;
    __and__, __rand__, __iand__, bitwise_and, bitwise_and_ => BinaryOp::BitAnd;
    __or__, __ror__, __ior__, bitwise_or, bitwise_or_ => BinaryOp::BitOr;
    __xor__, __rxor__, __ixor__, bitwise_xor, bitwise_xor_ => BinaryOp::BitXor;
}

macro_rules! binary_methods {
    ($( $meth:ident => $op:expr; )*) => {
        #[pymethods]
        impl PyTensor {
            $(
                fn $meth(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
                    binop(py, &self.inner, other, $op, false)?.ok_or_else(|| {
                        PyTypeError::new_err(format!("{}(): argument 'other' must be Tensor or Number", stringify!($meth)))
                    })
                }
            )*
        }
    };
}

#[pymethods]
impl PyTensor {
    fn __pow__(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let _ = modulo;
        not_implemented(py, binop(py, &self.inner, other, BinaryOp::Pow, false)?)
    }
    fn __rpow__(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let _ = modulo;
        not_implemented(py, binop(py, &self.inner, other, BinaryOp::Pow, true)?)
    }
    fn __ipow__(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let _ = modulo;
        binop_inplace(py, &self.inner, other, BinaryOp::Pow)
    }
    fn pow_<'py>(slf: Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        let t = slf.borrow().inner.clone();
        binop_inplace(slf.py(), &t, other, BinaryOp::Pow)?;
        Ok(slf)
    }
}

binary_methods! {
    pow => BinaryOp::Pow;
    atan2 => BinaryOp::Atan2;
    maximum => BinaryOp::Maximum;
    minimum => BinaryOp::Minimum;
    eq => BinaryOp::Eq;
    ne => BinaryOp::Ne;
    lt => BinaryOp::Lt;
    le => BinaryOp::Le;
    gt => BinaryOp::Gt;
    ge => BinaryOp::Ge;
    logical_and => BinaryOp::LogicalAnd;
    logical_or => BinaryOp::LogicalOr;
    logical_xor => BinaryOp::LogicalXor;
}

macro_rules! unary_methods {
    ($( $meth:ident, $imeth:ident => $op:expr; )*) => {
        #[pymethods]
        impl PyTensor {
            $(
                fn $meth(&self, py: Python<'_>) -> PyResult<PyTensor> {
                    let t = &self.inner;
                    Ok(run(py, t.numel(), || t.unary($op))?.into())
                }
                fn $imeth(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
                    let t = slf.borrow().inner.clone();
                    run(slf.py(), t.numel(), || t.unary_($op))?;
                    Ok(slf)
                }
            )*
        }
    };
}

unary_methods! {
    neg, neg_ => UnaryOp::Neg;
    abs, abs_ => UnaryOp::Abs;
    sign, sign_ => UnaryOp::Sign;
    exp, exp_ => UnaryOp::Exp;
    exp2, exp2_ => UnaryOp::Exp2;
    expm1, expm1_ => UnaryOp::Expm1;
    log, log_ => UnaryOp::Log;
    log2, log2_ => UnaryOp::Log2;
    log10, log10_ => UnaryOp::Log10;
    log1p, log1p_ => UnaryOp::Log1p;
    sqrt, sqrt_ => UnaryOp::Sqrt;
    rsqrt, rsqrt_ => UnaryOp::Rsqrt;
    sin, sin_ => UnaryOp::Sin;
    cos, cos_ => UnaryOp::Cos;
    tan, tan_ => UnaryOp::Tan;
    asin, asin_ => UnaryOp::Asin;
    acos, acos_ => UnaryOp::Acos;
    atan, atan_ => UnaryOp::Atan;
    sinh, sinh_ => UnaryOp::Sinh;
    cosh, cosh_ => UnaryOp::Cosh;
    tanh, tanh_ => UnaryOp::Tanh;
    asinh, asinh_ => UnaryOp::Asinh;
    acosh, acosh_ => UnaryOp::Acosh;
    atanh, atanh_ => UnaryOp::Atanh;
    sigmoid, sigmoid_ => UnaryOp::Sigmoid;
    relu, relu_ => UnaryOp::Relu;
    silu, silu_ => UnaryOp::Silu;
    erf, erf_ => UnaryOp::Erf;
    erfc, erfc_ => UnaryOp::Erfc;
    erfinv, erfinv_ => UnaryOp::Erfinv;
    lgamma, lgamma_ => UnaryOp::Lgamma;
    digamma, digamma_ => UnaryOp::Digamma;
    _trigamma, _trigamma_ => UnaryOp::Trigamma;
    floor, floor_ => UnaryOp::Floor;
    ceil, ceil_ => UnaryOp::Ceil;
    trunc, trunc_ => UnaryOp::Trunc;
    frac, frac_ => UnaryOp::Frac;
    reciprocal, reciprocal_ => UnaryOp::Reciprocal;
    square, square_ => UnaryOp::Square;
    logical_not, logical_not_ => UnaryOp::LogicalNot;
    bitwise_not, bitwise_not_ => UnaryOp::BitNot;
}

#[pymethods]
impl PyTensor {
    #[new]
    #[pyo3(signature = (*args, dtype=None))]
    fn py_new(args: &Bound<'_, PyTuple>, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        // Tensor(data) copies data; Tensor(2, 3) makes an uninitialised (zeroed) float tensor.
        let dtype = dtype.map(extract_dtype).transpose()?;
        if args.len() == 1 && !args.get_item(0)?.is_instance_of::<PyInt>() {
            let d = dtype.or(Some(crate::default_dtype()));
            return Ok(tensor_from_data(&args.get_item(0)?, d)?.into());
        }
        let shape = extract_shape_args(args)?;
        let dims: Vec<usize> = shape.iter().map(|&s| s.max(0) as usize).collect();
        Ok(Tensor::zeros(&dims, dtype.unwrap_or(crate::default_dtype())).into())
    }

    // ------------------------------------------------------------ attributes
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        size_object(py, self.inner.shape())
    }
    #[pyo3(signature = (dim=None))]
    fn size<'py>(&self, py: Python<'py>, dim: Option<i64>) -> PyResult<Bound<'py, PyAny>> {
        match dim {
            None => size_object(py, self.inner.shape()),
            Some(d) => Ok(self.inner.size(d)?.into_pyobject(py)?.into_any()),
        }
    }
    #[pyo3(signature = (dim=None))]
    fn stride<'py>(&self, py: Python<'py>, dim: Option<i64>) -> PyResult<Bound<'py, PyAny>> {
        match dim {
            None => Ok(PyTuple::new(py, self.inner.strides())?.into_any()),
            Some(d) => Ok(self.inner.stride(d)?.into_pyobject(py)?.into_any()),
        }
    }
    fn storage_offset(&self) -> usize {
        self.inner.storage_offset()
    }
    fn dim(&self) -> usize {
        self.inner.ndim()
    }
    fn ndimension(&self) -> usize {
        self.inner.ndim()
    }
    #[getter]
    fn ndim(&self) -> usize {
        self.inner.ndim()
    }
    fn numel(&self) -> usize {
        self.inner.numel()
    }
    fn nelement(&self) -> usize {
        self.inner.numel()
    }
    fn element_size(&self) -> usize {
        self.inner.dtype().size()
    }
    #[getter]
    fn itemsize(&self) -> usize {
        self.inner.dtype().size()
    }
    #[getter]
    fn nbytes(&self) -> usize {
        self.inner.dtype().size() * self.inner.numel()
    }
    #[getter]
    fn dtype(&self, py: Python<'_>) -> PyResult<Py<PyDType>> {
        dtype_object(py, self.inner.dtype())
    }
    #[getter]
    fn device(&self) -> PyDevice {
        PyDevice(self.inner.device())
    }
    #[getter]
    fn is_cuda(&self) -> bool {
        self.inner.device().is_cuda()
    }
    #[getter]
    fn is_cpu(&self) -> bool {
        self.inner.device() == Device::Cpu
    }
    fn is_floating_point(&self) -> bool {
        self.inner.dtype().is_floating_point()
    }
    fn is_contiguous(&self) -> bool {
        self.inner.is_contiguous()
    }
    fn data_ptr(&self) -> usize {
        let t = &self.inner;
        self.untyped_storage_ptr() + t.storage_offset() * t.dtype().size()
    }
    fn untyped_storage_ptr(&self) -> usize {
        match self.inner.storage().data() {
            crate::storage::StorageData::Cpu(c) => c.as_ptr() as usize,
            crate::storage::StorageData::Cuda(c) => c.device_ptr() as usize,
        }
    }
    #[getter]
    fn _version(&self) -> u64 {
        self.inner.storage().version()
    }
    fn __len__(&self) -> PyResult<usize> {
        if self.inner.ndim() == 0 {
            return Err(PyTypeError::new_err("len() of a 0-d tensor"));
        }
        Ok(self.inner.shape()[0])
    }

    // ------------------------------------------------------------ autograd fields
    /// Created under `inference_mode` (or a view of such a tensor).
    fn is_inference(&self) -> bool {
        self.inner.is_inference()
    }
    #[getter]
    fn get_requires_grad(&self) -> bool {
        self.inner.requires_grad()
    }
    #[setter]
    fn set_requires_grad(slf: &Bound<'_, Self>, v: bool) -> PyResult<()> {
        slf.borrow().inner.set_requires_grad(v)?;
        if v {
            super::autograd::remember_leaf(slf)?;
        }
        Ok(())
    }
    #[pyo3(signature = (requires_grad=true))]
    fn requires_grad_(slf: Bound<'_, Self>, requires_grad: bool) -> PyResult<Bound<'_, Self>> {
        slf.borrow().inner.set_requires_grad(requires_grad)?;
        if requires_grad {
            // `grad_fn.variable` of the leaf's AccumulateGrad hands back this object.
            super::autograd::remember_leaf(&slf)?;
        }
        Ok(slf)
    }
    #[getter]
    fn get_grad(&self) -> Option<PyTensor> {
        self.inner.grad().map(PyTensor::from)
    }
    #[setter]
    fn set_grad(&self, g: Option<PyRef<'_, PyTensor>>) {
        self.inner.set_grad(g.map(|g| g.inner.clone()))
    }

    // ------------------------------------------------------------ conversion
    fn item<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        scalar_to_py(py, self.inner.item()?)
    }
    fn tolist<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_list(py, &self.inner)
    }
    fn __float__(&self) -> PyResult<f64> {
        Ok(self.single_element()?.to_f64())
    }
    fn __int__(&self) -> PyResult<i64> {
        Ok(self.single_element()?.to_i64())
    }
    fn __index__(&self) -> PyResult<i64> {
        if self.inner.dtype().category() != Category::Int || self.inner.numel() != 1 {
            return Err(PyTypeError::new_err(
                "only integer tensors of a single element can be converted to an index",
            ));
        }
        Ok(self.inner.item()?.to_i64())
    }
    fn __bool__(&self) -> PyResult<bool> {
        if self.inner.numel() != 1 {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
                "Boolean value of Tensor with more than one value is ambiguous (numel = {})",
                self.inner.numel()
            )));
        }
        Ok(self.inner.item()?.to_f64() != 0.0)
    }
    fn negative(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.neg(py)
    }
    fn __neg__(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.neg(py)
    }
    fn __pos__(&self) -> PyTensor {
        self.inner.clone().into()
    }
    fn __abs__(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.abs(py)
    }
    fn __invert__(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.bitwise_not(py)
    }
    fn __richcmp__(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        op: pyo3::basic::CompareOp,
    ) -> PyResult<Py<PyAny>> {
        use pyo3::basic::CompareOp::*;
        let bop = match op {
            Lt => BinaryOp::Lt,
            Le => BinaryOp::Le,
            Eq => BinaryOp::Eq,
            Ne => BinaryOp::Ne,
            Gt => BinaryOp::Gt,
            Ge => BinaryOp::Ge,
        };
        not_implemented(py, binop(py, &self.inner, other, bop, false)?)
    }
    fn __hash__(slf: &Bound<'_, Self>) -> isize {
        slf.as_ptr() as isize
    }

    /// `to(dtype)`, `to(device)`, `to(device, dtype)`, `to(other)`; copies only if needed.
    #[pyo3(signature = (*args, dtype=None, device=None, non_blocking=false, copy=false))]
    fn to(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        dtype: Option<&Bound<'_, PyAny>>,
        device: Option<&Bound<'_, PyAny>>,
        non_blocking: bool,
        copy: bool,
    ) -> PyResult<PyTensor> {
        let _ = non_blocking;
        let mut dt = dtype.map(extract_dtype).transpose()?;
        let mut dev = device.map(extract_device).transpose()?;
        for a in args.iter() {
            if let Ok(t) = a.cast::<PyTensor>() {
                let t = &t.borrow().inner;
                dt = Some(t.dtype());
                dev = Some(t.device());
            } else if let Ok(d) = extract_dtype(&a) {
                dt = Some(d);
            } else {
                dev = Some(extract_device(&a)?);
            }
        }
        let t = &self.inner;
        let out = run(py, t.numel(), || {
            let mut out = t.to_device(dev.unwrap_or(t.device()))?;
            if let Some(d) = dt {
                out = out.cast(d)?;
            }
            if copy && out.same_tensor(t) {
                out = out.contiguous_recorded();
            }
            Ok(out)
        })?;
        Ok(out.into())
    }
    #[pyo3(signature = (dtype=None))]
    fn r#type(&self, py: Python<'_>, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        match dtype {
            None => Ok(pyo3::types::PyString::new(
                py,
                &format!("ferrotorch.{}Tensor", self.inner.dtype().torch_name()),
            )
            .into_any()
            .unbind()),
            Some(d) => {
                let d = extract_dtype(d)?;
                Ok(Py::new(py, PyTensor::from(self.inner.cast(d)?))?.into_any())
            }
        }
    }
    fn float(&self) -> PyResult<PyTensor> {
        Ok(self.inner.cast(DType::F32)?.into())
    }
    fn double(&self) -> PyResult<PyTensor> {
        Ok(self.inner.cast(DType::F64)?.into())
    }
    fn half(&self) -> PyResult<PyTensor> {
        Ok(self.inner.cast(DType::F16)?.into())
    }
    fn bfloat16(&self) -> PyResult<PyTensor> {
        Ok(self.inner.cast(DType::BF16)?.into())
    }
    fn long(&self) -> PyResult<PyTensor> {
        Ok(self.inner.cast(DType::I64)?.into())
    }
    fn int(&self) -> PyResult<PyTensor> {
        Ok(self.inner.cast(DType::I32)?.into())
    }
    fn short(&self) -> PyResult<PyTensor> {
        Ok(self.inner.cast(DType::I16)?.into())
    }
    fn char(&self) -> PyResult<PyTensor> {
        Ok(self.inner.cast(DType::I8)?.into())
    }
    fn byte(&self) -> PyResult<PyTensor> {
        Ok(self.inner.cast(DType::U8)?.into())
    }
    fn bool(&self) -> PyResult<PyTensor> {
        Ok(self.inner.cast(DType::Bool)?.into())
    }
    fn cpu(&self) -> PyResult<PyTensor> {
        Ok(self.inner.to_device(Device::Cpu)?.into())
    }
    #[pyo3(signature = (device=None, non_blocking=false))]
    fn cuda(&self, device: Option<&Bound<'_, PyAny>>, non_blocking: bool) -> PyResult<PyTensor> {
        let _ = non_blocking;
        let d = match device {
            None => Device::Cuda(0),
            Some(d) => extract_device(d)?,
        };
        Ok(self.inner.to_device(d)?.into())
    }

    // ------------------------------------------------------------ copies
    fn contiguous(&self, py: Python<'_>) -> PyResult<PyTensor> {
        let t = &self.inner;
        if t.is_contiguous() {
            return Ok(t.clone().into());
        }
        Ok(run(py, t.numel(), || Ok(t.contiguous_recorded()))?.into())
    }
    #[pyo3(signature = (*, memory_format=None))]
    fn clone(
        &self,
        py: Python<'_>,
        memory_format: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let _ = memory_format;
        let t = &self.inner;
        Ok(run(py, t.numel(), || Ok(t.contiguous_recorded()))?.into())
    }
    #[pyo3(signature = (src, non_blocking=false))]
    fn copy_<'py>(
        slf: Bound<'py, Self>,
        src: &Bound<'py, PyAny>,
        non_blocking: bool,
    ) -> PyResult<Bound<'py, Self>> {
        let _ = non_blocking;
        let t = slf.borrow().inner.clone();
        let s = to_tensor(src)?;
        run(slf.py(), t.numel(), || t.copy_(&s))?;
        Ok(slf)
    }
    fn fill_<'py>(slf: Bound<'py, Self>, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        let t = slf.borrow().inner.clone();
        match extract_operand(value) {
            // A number must fit the dtype; a 0-d tensor is cast (wrapping), as in PyTorch.
            Some(Operand::Scalar(s)) => run(slf.py(), t.numel(), || t.fill_(s))?,
            Some(Operand::Tensor(v)) if v.ndim() == 0 => {
                let s = v.item()?;
                run(slf.py(), t.numel(), || t.fill_cast_(s))?
            }
            Some(Operand::Tensor(v)) => {
                return Err(Error::Runtime(format!(
                    "fill_ only supports 0-dimension value tensor but got tensor with {} \
                     dimensions.",
                    v.ndim()
                ))
                .into())
            }
            None => {
                return Err(PyTypeError::new_err(format!(
                    "fill_(): argument 'value' must be Number, not {}",
                    value.get_type().name()?
                )))
            }
        }
        Ok(slf)
    }
    fn zero_(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        let t = slf.borrow().inner.clone();
        run(slf.py(), t.numel(), || t.fill_(Scalar::Int(0)))?;
        Ok(slf)
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyTensor>()?;
    m.add_function(wrap_pyfunction!(tensor, m)?)?;
    m.add_function(wrap_pyfunction!(set_default_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(get_default_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(promote_types, m)?)?;
    let _ = guarded(|| Ok::<_, Error>(()));
    Ok(())
}

/// `ferrotorch.tensor(data, dtype=None, device=None, requires_grad=False)`.
#[pyfunction]
#[pyo3(signature = (data, *, dtype=None, device=None, requires_grad=false, pin_memory=false))]
fn tensor<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    dtype: Option<&Bound<'py, PyAny>>,
    device: Option<&Bound<'py, PyAny>>,
    requires_grad: bool,
    pin_memory: bool,
) -> PyResult<Bound<'py, PyTensor>> {
    let _ = pin_memory;
    let dtype = dtype.map(extract_dtype).transpose()?;
    let mut t = tensor_from_data(data, dtype)?;
    if let Some(d) = device {
        t = t.to_device(extract_device(d)?)?;
    }
    t.set_requires_grad(requires_grad)?;
    let obj = Bound::new(py, PyTensor::from(t))?;
    if requires_grad {
        super::autograd::remember_leaf(&obj)?;
    }
    Ok(obj)
}

#[pyfunction]
fn set_default_dtype(d: &Bound<'_, PyAny>) -> PyResult<()> {
    Ok(crate::set_default_dtype(extract_dtype(d)?)?)
}

#[pyfunction]
fn get_default_dtype(py: Python<'_>) -> PyResult<Py<PyDType>> {
    dtype_object(py, crate::default_dtype())
}

#[pyfunction]
fn promote_types(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
) -> PyResult<Py<PyDType>> {
    dtype_object(
        py,
        crate::promote_types(extract_dtype(a)?, extract_dtype(b)?),
    )
}
