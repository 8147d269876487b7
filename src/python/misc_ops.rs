//! Bindings for the misc elementwise ops (clamp, lerp, nan_to_num, round(decimals), the
//! isnan family, hypot, copysign, fmod, xlogy, addcmul/addcdiv, div rounding modes, add/sub
//! alpha, float_power, logaddexp, sinc, deg2rad/rad2deg, heaviside, signbit, positive,
//! negative, gelu, softplus). Argument conversion only.

use super::convert::extract_scalar;
use super::run;
use super::tensor::{tensor_from_data, PyTensor};
use crate::tensor::TensorOrScalar;
use crate::{BinaryOp, Scalar, Tensor, UnaryOp};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

type Obj<'a, 'py> = Option<&'a Bound<'py, PyAny>>;

/// A tensor, a Python number, or tensor-like data (list, array) as a tensor.
fn operand(obj: &Bound<'_, PyAny>) -> PyResult<TensorOrScalar> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(TensorOrScalar::Tensor(t.borrow().inner.clone()));
    }
    if let Some(s) = extract_scalar(obj) {
        return Ok(TensorOrScalar::Scalar(s));
    }
    Ok(TensorOrScalar::Tensor(tensor_from_data(obj, None)?))
}

fn opt_operand(obj: Obj<'_, '_>) -> PyResult<Option<TensorOrScalar>> {
    match obj {
        Some(o) if !o.is_none() => Ok(Some(operand(o)?)),
        _ => Ok(None),
    }
}

fn tensor_arg(obj: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(t.borrow().inner.clone());
    }
    tensor_from_data(obj, None)
}

fn scalar_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Scalar> {
    if let Some(s) = extract_scalar(obj) {
        return Ok(s);
    }
    if let Ok(t) = obj.cast::<PyTensor>() {
        let t = &t.borrow().inner;
        if t.numel() == 1 {
            return Ok(t.item()?);
        }
    }
    Err(PyTypeError::new_err(format!(
        "{what} must be a number, got {}",
        obj.get_type().name()?
    )))
}

fn numel_of(a: &Tensor, b: &TensorOrScalar) -> usize {
    match b {
        TensorOrScalar::Tensor(t) => a.numel().max(t.numel()),
        TensorOrScalar::Scalar(_) => a.numel(),
    }
}

/// `add/sub(other, alpha=...)` and `div(other, rounding_mode=...)`: called by the
/// arithmetic methods in `tensor.rs` when one of these keywords is given.
pub(crate) fn binary_kw(
    py: Python<'_>,
    a: &Tensor,
    other: &Bound<'_, PyAny>,
    op: BinaryOp,
    alpha: Obj<'_, '_>,
    rounding_mode: Option<&str>,
    name: &str,
) -> PyResult<PyTensor> {
    let b = operand(other)?;
    let n = numel_of(a, &b);
    match op {
        BinaryOp::Add | BinaryOp::Sub if rounding_mode.is_none() => {
            let alpha = match alpha {
                Some(al) if !al.is_none() => scalar_arg(al, "alpha")?,
                _ => Scalar::Int(1),
            };
            Ok(run(py, n, || a.add_scaled(&b, alpha, op == BinaryOp::Sub))?.into())
        }
        BinaryOp::Div if alpha.is_none() => {
            Ok(run(py, n, || a.div_mode(&b, rounding_mode))?.into())
        }
        _ => Err(PyTypeError::new_err(format!(
            "{name}() got an unexpected keyword argument '{}'",
            if alpha.is_some() {
                "alpha"
            } else {
                "rounding_mode"
            }
        ))),
    }
}

/// In-place counterpart of [`binary_kw`].
pub(crate) fn binary_kw_(
    py: Python<'_>,
    a: &Tensor,
    other: &Bound<'_, PyAny>,
    op: BinaryOp,
    alpha: Obj<'_, '_>,
    rounding_mode: Option<&str>,
    name: &str,
) -> PyResult<()> {
    let b = operand(other)?;
    let n = numel_of(a, &b);
    match op {
        BinaryOp::Add | BinaryOp::Sub if rounding_mode.is_none() => {
            let alpha = match alpha {
                Some(al) if !al.is_none() => scalar_arg(al, "alpha")?,
                _ => Scalar::Int(1),
            };
            run(py, n, || a.add_scaled_(&b, alpha, op == BinaryOp::Sub))
        }
        BinaryOp::Div if alpha.is_none() => run(py, n, || a.div_mode_(&b, rounding_mode)),
        _ => Err(PyTypeError::new_err(format!(
            "{name}() got an unexpected keyword argument '{}'",
            if alpha.is_some() {
                "alpha"
            } else {
                "rounding_mode"
            }
        ))),
    }
}

/// Methods `f(other)` / `f_(other)` over a `TensorOrScalar` argument.
macro_rules! operand_methods {
    ($( $meth:ident, $imeth:ident => $f:ident; )*) => {
        #[pymethods]
        impl PyTensor {
            $(
                fn $meth(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
                    let (a, b) = (&self.inner, operand(other)?);
                    Ok(run(py, numel_of(a, &b), || a.$f(&b))?.into())
                }
                fn $imeth<'py>(slf: Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
                    let (a, b) = (slf.borrow().inner.clone(), operand(other)?);
                    let others: Vec<Tensor> = match &b {
                        TensorOrScalar::Tensor(t) => vec![t.clone()],
                        TensorOrScalar::Scalar(_) => vec![],
                    };
                    run(slf.py(), numel_of(&a, &b), || {
                        let others: Vec<&Tensor> = others.iter().collect();
                        a.apply_inplace(&others, stringify!($meth), |me| me.$f(&b))
                    })?;
                    Ok(slf)
                }
            )*
        }
    };
}

operand_methods! {
    hypot, hypot_ => hypot;
    copysign, copysign_ => copysign;
    fmod, fmod_ => fmod;
    xlogy, xlogy_ => xlogy;
    _special_zeta, _special_zeta_ => zeta;
    igamma, igamma_ => igamma;
    igammac, igammac_ => igammac;
}

#[pymethods]
impl PyTensor {
    fn logaddexp(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let (a, b) = (&self.inner, operand(other)?);
        Ok(run(py, numel_of(a, &b), || a.logaddexp(&b))?.into())
    }
    fn logaddexp2(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let (a, b) = (&self.inner, operand(other)?);
        Ok(run(py, numel_of(a, &b), || a.logaddexp2(&b))?.into())
    }
    fn float_power(&self, py: Python<'_>, exponent: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let (a, b) = (&self.inner, operand(exponent)?);
        Ok(run(py, numel_of(a, &b), || a.float_power(&b))?.into())
    }
    fn float_power_<'py>(
        slf: Bound<'py, Self>,
        exponent: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        let (a, b) = (slf.borrow().inner.clone(), operand(exponent)?);
        run(slf.py(), numel_of(&a, &b), || a.float_power_(&b))?;
        Ok(slf)
    }

    // ------------------------------------------------------------ clamp
    #[pyo3(signature = (min=None, max=None))]
    fn clamp(&self, py: Python<'_>, min: Obj<'_, '_>, max: Obj<'_, '_>) -> PyResult<PyTensor> {
        let (lo, hi) = (opt_operand(min)?, opt_operand(max)?);
        let t = &self.inner;
        Ok(run(py, t.numel(), || t.clamp(lo.as_ref(), hi.as_ref()))?.into())
    }
    #[pyo3(signature = (min=None, max=None))]
    fn clip(&self, py: Python<'_>, min: Obj<'_, '_>, max: Obj<'_, '_>) -> PyResult<PyTensor> {
        self.clamp(py, min, max)
    }
    #[pyo3(signature = (min=None, max=None))]
    fn clamp_<'py>(
        slf: Bound<'py, Self>,
        min: Obj<'_, 'py>,
        max: Obj<'_, 'py>,
    ) -> PyResult<Bound<'py, Self>> {
        let (lo, hi) = (opt_operand(min)?, opt_operand(max)?);
        let t = slf.borrow().inner.clone();
        run(slf.py(), t.numel(), || t.clamp_(lo.as_ref(), hi.as_ref()))?;
        Ok(slf)
    }
    #[pyo3(signature = (min=None, max=None))]
    fn clip_<'py>(
        slf: Bound<'py, Self>,
        min: Obj<'_, 'py>,
        max: Obj<'_, 'py>,
    ) -> PyResult<Bound<'py, Self>> {
        Self::clamp_(slf, min, max)
    }
    fn clamp_min(&self, py: Python<'_>, min: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.clamp(py, Some(min), None)
    }
    fn clamp_max(&self, py: Python<'_>, max: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.clamp(py, None, Some(max))
    }
    fn clamp_min_<'py>(
        slf: Bound<'py, Self>,
        min: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        Self::clamp_(slf, Some(min), None)
    }
    fn clamp_max_<'py>(
        slf: Bound<'py, Self>,
        max: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        Self::clamp_(slf, None, Some(max))
    }

    // ------------------------------------------------------------ lerp, addcmul, addcdiv
    fn lerp(
        &self,
        py: Python<'_>,
        end: &Bound<'_, PyAny>,
        weight: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        let (e, w) = (tensor_arg(end)?, operand(weight)?);
        let t = &self.inner;
        Ok(run(py, t.numel(), || t.lerp(&e, &w))?.into())
    }
    fn lerp_<'py>(
        slf: Bound<'py, Self>,
        end: &Bound<'py, PyAny>,
        weight: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        let (e, w) = (tensor_arg(end)?, operand(weight)?);
        let t = slf.borrow().inner.clone();
        run(slf.py(), t.numel(), || t.lerp_(&e, &w))?;
        Ok(slf)
    }
    #[pyo3(signature = (tensor1, tensor2, *, value=None))]
    fn addcmul(
        &self,
        py: Python<'_>,
        tensor1: &Bound<'_, PyAny>,
        tensor2: &Bound<'_, PyAny>,
        value: Obj<'_, '_>,
    ) -> PyResult<PyTensor> {
        self.addc_py(py, tensor1, tensor2, value, false)
    }
    #[pyo3(signature = (tensor1, tensor2, *, value=None))]
    fn addcdiv(
        &self,
        py: Python<'_>,
        tensor1: &Bound<'_, PyAny>,
        tensor2: &Bound<'_, PyAny>,
        value: Obj<'_, '_>,
    ) -> PyResult<PyTensor> {
        self.addc_py(py, tensor1, tensor2, value, true)
    }
    #[pyo3(signature = (tensor1, tensor2, *, value=None))]
    fn addcmul_<'py>(
        slf: Bound<'py, Self>,
        tensor1: &Bound<'py, PyAny>,
        tensor2: &Bound<'py, PyAny>,
        value: Obj<'_, 'py>,
    ) -> PyResult<Bound<'py, Self>> {
        Self::addc_inplace_py(slf, tensor1, tensor2, value, false)
    }
    #[pyo3(signature = (tensor1, tensor2, *, value=None))]
    fn addcdiv_<'py>(
        slf: Bound<'py, Self>,
        tensor1: &Bound<'py, PyAny>,
        tensor2: &Bound<'py, PyAny>,
        value: Obj<'_, 'py>,
    ) -> PyResult<Bound<'py, Self>> {
        Self::addc_inplace_py(slf, tensor1, tensor2, value, true)
    }

    // ------------------------------------------------------------ unary-like
    #[pyo3(signature = (nan=0.0, posinf=None, neginf=None))]
    fn nan_to_num(
        &self,
        py: Python<'_>,
        nan: f64,
        posinf: Option<f64>,
        neginf: Option<f64>,
    ) -> PyResult<PyTensor> {
        let t = &self.inner;
        Ok(run(py, t.numel(), || t.nan_to_num(nan, posinf, neginf))?.into())
    }
    #[pyo3(signature = (nan=0.0, posinf=None, neginf=None))]
    fn nan_to_num_(
        slf: Bound<'_, Self>,
        nan: f64,
        posinf: Option<f64>,
        neginf: Option<f64>,
    ) -> PyResult<Bound<'_, Self>> {
        let t = slf.borrow().inner.clone();
        run(slf.py(), t.numel(), || {
            t.apply_inplace(&[], "nan_to_num", |me| me.nan_to_num(nan, posinf, neginf))
        })?;
        Ok(slf)
    }
    #[pyo3(signature = (decimals=0))]
    fn round(&self, py: Python<'_>, decimals: i64) -> PyResult<PyTensor> {
        let t = &self.inner;
        Ok(run(py, t.numel(), || t.round_decimals(decimals))?.into())
    }
    #[pyo3(signature = (decimals=0))]
    fn round_(slf: Bound<'_, Self>, decimals: i64) -> PyResult<Bound<'_, Self>> {
        let t = slf.borrow().inner.clone();
        run(slf.py(), t.numel(), || {
            t.apply_inplace(&[], "round", |me| me.round_decimals(decimals))
        })?;
        Ok(slf)
    }
    fn signbit(&self, py: Python<'_>) -> PyResult<PyTensor> {
        let t = &self.inner;
        Ok(run(py, t.numel(), || t.signbit())?.into())
    }
    fn positive(&self) -> PyResult<PyTensor> {
        Ok(self.inner.positive()?.into())
    }
    fn negative_(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        let t = slf.borrow().inner.clone();
        run(slf.py(), t.numel(), || t.unary_(UnaryOp::Neg))?;
        Ok(slf)
    }
    fn heaviside(&self, py: Python<'_>, values: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let (t, v) = (&self.inner, tensor_arg(values)?);
        Ok(run(py, t.numel(), || t.heaviside(&v))?.into())
    }
    fn heaviside_<'py>(
        slf: Bound<'py, Self>,
        values: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        let (t, v) = (slf.borrow().inner.clone(), tensor_arg(values)?);
        run(slf.py(), t.numel(), || {
            t.apply_inplace(&[&v], "heaviside", |me| me.heaviside(&v))
        })?;
        Ok(slf)
    }

    // ------------------------------------------------------------ division aliases
    fn true_divide(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary_kw(
            py,
            &self.inner,
            other,
            BinaryOp::Div,
            None,
            None,
            "true_divide",
        )
    }
    fn true_divide_<'py>(
        slf: Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        let t = slf.borrow().inner.clone();
        binary_kw_(
            slf.py(),
            &t,
            other,
            BinaryOp::Div,
            None,
            None,
            "true_divide_",
        )?;
        Ok(slf)
    }
    #[pyo3(signature = (other, *, rounding_mode=None))]
    fn divide(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        rounding_mode: Option<String>,
    ) -> PyResult<PyTensor> {
        let rm = rounding_mode.as_deref();
        binary_kw(py, &self.inner, other, BinaryOp::Div, None, rm, "divide")
    }
    #[pyo3(signature = (other, *, rounding_mode=None))]
    fn divide_<'py>(
        slf: Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
        rounding_mode: Option<String>,
    ) -> PyResult<Bound<'py, Self>> {
        let t = slf.borrow().inner.clone();
        let rm = rounding_mode.as_deref();
        binary_kw_(slf.py(), &t, other, BinaryOp::Div, None, rm, "divide_")?;
        Ok(slf)
    }
    #[pyo3(signature = (other, *, alpha=None))]
    fn subtract(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        alpha: Obj<'_, '_>,
    ) -> PyResult<PyTensor> {
        binary_kw(
            py,
            &self.inner,
            other,
            BinaryOp::Sub,
            alpha,
            None,
            "subtract",
        )
    }
    #[pyo3(signature = (other, *, alpha=None))]
    fn subtract_<'py>(
        slf: Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
        alpha: Obj<'_, 'py>,
    ) -> PyResult<Bound<'py, Self>> {
        let t = slf.borrow().inner.clone();
        binary_kw_(slf.py(), &t, other, BinaryOp::Sub, alpha, None, "subtract_")?;
        Ok(slf)
    }
    fn multiply(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let (a, b) = (&self.inner, operand(other)?);
        Ok(run(py, numel_of(a, &b), || match &b {
            TensorOrScalar::Tensor(t) => a.binary(t, BinaryOp::Mul),
            TensorOrScalar::Scalar(s) => a.binary_scalar(*s, BinaryOp::Mul, false),
        })?
        .into())
    }
    fn multiply_<'py>(
        slf: Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        let (a, b) = (slf.borrow().inner.clone(), operand(other)?);
        run(slf.py(), numel_of(&a, &b), || match &b {
            TensorOrScalar::Tensor(t) => a.binary_(t, BinaryOp::Mul),
            TensorOrScalar::Scalar(s) => a.binary_scalar_(*s, BinaryOp::Mul),
        })?;
        Ok(slf)
    }
}

impl PyTensor {
    fn addc_py(
        &self,
        py: Python<'_>,
        tensor1: &Bound<'_, PyAny>,
        tensor2: &Bound<'_, PyAny>,
        value: Obj<'_, '_>,
        div: bool,
    ) -> PyResult<PyTensor> {
        let (t1, t2) = (tensor_arg(tensor1)?, tensor_arg(tensor2)?);
        let v = match value {
            Some(v) if !v.is_none() => scalar_arg(v, "value")?,
            _ => Scalar::Int(1),
        };
        let t = &self.inner;
        let n = t.numel().max(t1.numel()).max(t2.numel());
        Ok(run(py, n, || t.addc(&t1, &t2, v, div))?.into())
    }
    fn addc_inplace_py<'py>(
        slf: Bound<'py, Self>,
        tensor1: &Bound<'py, PyAny>,
        tensor2: &Bound<'py, PyAny>,
        value: Obj<'_, 'py>,
        div: bool,
    ) -> PyResult<Bound<'py, Self>> {
        let (t1, t2) = (tensor_arg(tensor1)?, tensor_arg(tensor2)?);
        let v = match value {
            Some(v) if !v.is_none() => scalar_arg(v, "value")?,
            _ => Scalar::Int(1),
        };
        let t = slf.borrow().inner.clone();
        run(slf.py(), t.numel(), || t.addc_(&t1, &t2, v, div))?;
        Ok(slf)
    }
}

/// Unary methods (and in-place forms) over a Tensor op returning a new tensor.
macro_rules! simple_unary {
    ($( $meth:ident, $imeth:ident => $f:ident; )*) => {
        #[pymethods]
        impl PyTensor {
            $(
                fn $meth(&self, py: Python<'_>) -> PyResult<PyTensor> {
                    let t = &self.inner;
                    Ok(run(py, t.numel(), || t.$f())?.into())
                }
                fn $imeth(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
                    let t = slf.borrow().inner.clone();
                    run(slf.py(), t.numel(), || {
                        t.apply_inplace(&[], stringify!($meth), |me| me.$f())
                    })?;
                    Ok(slf)
                }
            )*
        }
    };
}

simple_unary! {
    sinc, sinc_ => sinc;
    deg2rad, deg2rad_ => deg2rad;
    rad2deg, rad2deg_ => rad2deg;
}

/// Predicates returning bool tensors.
macro_rules! predicates {
    ($( $meth:ident => $op:expr; )*) => {
        #[pymethods]
        impl PyTensor {
            $(
                fn $meth(&self, py: Python<'_>) -> PyResult<PyTensor> {
                    let t = &self.inner;
                    Ok(run(py, t.numel(), || t.unary($op))?.into())
                }
            )*
        }
    };
}

predicates! {
    isnan => UnaryOp::IsNan;
    isinf => UnaryOp::IsInf;
    isfinite => UnaryOp::IsFinite;
    isposinf => UnaryOp::IsPosInf;
    isneginf => UnaryOp::IsNegInf;
}

/// `gelu(input, approximate='none')` (as `torch.nn.functional.gelu`).
#[pyfunction]
#[pyo3(signature = (input, approximate="none"))]
fn gelu(py: Python<'_>, input: PyRef<'_, PyTensor>, approximate: &str) -> PyResult<PyTensor> {
    let t = &input.inner;
    Ok(run(py, t.numel(), || t.gelu(approximate))?.into())
}

/// `softplus(input, beta=1, threshold=20)` (as `torch.nn.functional.softplus`).
#[pyfunction]
#[pyo3(signature = (input, beta=1.0, threshold=20.0))]
fn softplus(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    beta: f64,
    threshold: f64,
) -> PyResult<PyTensor> {
    let t = &input.inner;
    Ok(run(py, t.numel(), || t.softplus(beta, threshold))?.into())
}

/// `leaky_relu(input, negative_slope)` (one fused op; the in-place form copies back).
#[pyfunction]
fn leaky_relu(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    negative_slope: f64,
) -> PyResult<PyTensor> {
    let t = &input.inner;
    Ok(run(py, t.numel(), || t.leaky_relu(negative_slope))?.into())
}

/// `elu(input, alpha, scale, input_scale, celu)`: elu, selu (scale != 1) and celu
/// (`input_scale = 1 / alpha`, node CeluBackward0).
#[pyfunction]
#[pyo3(signature = (input, alpha, scale=1.0, input_scale=1.0, celu=false))]
fn elu(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    alpha: f64,
    scale: f64,
    input_scale: f64,
    celu: bool,
) -> PyResult<PyTensor> {
    let t = &input.inner;
    let p = crate::tensor::EluParams {
        alpha,
        scale,
        input_scale,
    };
    let node = if celu {
        "CeluBackward0"
    } else {
        "EluBackward0"
    };
    Ok(run(py, t.numel(), || t.elu(p, node))?.into())
}

#[pyfunction]
fn hardsigmoid(py: Python<'_>, input: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
    let t = &input.inner;
    Ok(run(py, t.numel(), || t.hardsigmoid())?.into())
}

#[pyfunction]
fn hardswish(py: Python<'_>, input: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
    let t = &input.inner;
    Ok(run(py, t.numel(), || t.hardswish())?.into())
}

#[pyfunction]
fn log_sigmoid(py: Python<'_>, input: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
    let t = &input.inner;
    Ok(run(py, t.numel(), || t.log_sigmoid())?.into())
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(gelu, m)?)?;
    m.add_function(wrap_pyfunction!(softplus, m)?)?;
    m.add_function(wrap_pyfunction!(leaky_relu, m)?)?;
    m.add_function(wrap_pyfunction!(elu, m)?)?;
    m.add_function(wrap_pyfunction!(hardsigmoid, m)?)?;
    m.add_function(wrap_pyfunction!(hardswish, m)?)?;
    m.add_function(wrap_pyfunction!(log_sigmoid, m)?)?;
    Ok(())
}
