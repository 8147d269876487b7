//! Conversions between Python objects and ferrotorch values: dtype and device objects,
//! scalars, shape arguments, nested sequences.

use crate::{DType, Device, Scalar};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyList, PySequence, PyTuple};

/// `ferrotorch.dtype`: one interned object per dtype, compared by identity like PyTorch's.
#[pyclass(
    name = "dtype",
    module = "ferrotorch",
    frozen,
    eq,
    hash,
    from_py_object
)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PyDType(pub DType);

#[pymethods]
impl PyDType {
    fn __repr__(&self) -> String {
        format!("ferrotorch.{}", self.0.python_name())
    }
    #[getter]
    fn is_floating_point(&self) -> bool {
        self.0.is_floating_point()
    }
    #[getter]
    fn is_signed(&self) -> bool {
        self.0.is_signed()
    }
    #[getter]
    fn itemsize(&self) -> usize {
        self.0.size()
    }
    /// Pickled by name: `ferrotorch.float64` (the interned object comes back).
    fn __reduce__(&self) -> &'static str {
        self.0.python_name()
    }
}

/// `ferrotorch.device("cuda:0")`.
#[pyclass(
    name = "device",
    module = "ferrotorch",
    frozen,
    eq,
    hash,
    from_py_object
)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PyDevice(pub Device);

#[pymethods]
impl PyDevice {
    #[new]
    #[pyo3(signature = (spec, index=None))]
    fn new(spec: &Bound<'_, PyAny>, index: Option<usize>) -> PyResult<Self> {
        if let Ok(d) = spec.extract::<PyDevice>() {
            return Ok(d);
        }
        if let Ok(n) = spec.extract::<usize>() {
            return Ok(PyDevice(Device::Cuda(n)));
        }
        let s: String = spec.extract()?;
        let d = Device::parse(&s)?;
        Ok(PyDevice(match (d, index) {
            (Device::Cuda(_), Some(i)) => Device::Cuda(i),
            (d, _) => d,
        }))
    }
    #[getter(r#type)]
    fn type_(&self) -> &'static str {
        self.0.type_name()
    }
    #[getter]
    fn index(&self) -> Option<usize> {
        self.0.index()
    }
    fn __repr__(&self) -> String {
        match self.0 {
            Device::Cpu => "device(type='cpu')".into(),
            Device::Cuda(n) => format!("device(type='cuda', index={n})"),
        }
    }
    fn __str__(&self) -> String {
        self.0.to_string()
    }
    /// Pickled as `device("cuda:0")`.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> (Bound<'py, pyo3::types::PyType>, (String,)) {
        (slf.get_type(), (slf.get().0.to_string(),))
    }
}

/// Accept a `ferrotorch.dtype`, a NumPy dtype/type, or a name string.
pub fn extract_dtype(obj: &Bound<'_, PyAny>) -> PyResult<DType> {
    if let Ok(d) = obj.extract::<PyDType>() {
        return Ok(d.0);
    }
    if let Ok(s) = obj.extract::<String>() {
        return Ok(DType::parse(&s)?);
    }
    let py = obj.py();
    // Python builtins: float -> default float, int -> int64, bool -> bool.
    if obj.is(py.get_type::<PyFloat>().as_any()) {
        return Ok(crate::default_dtype());
    }
    if obj.is(py.get_type::<PyBool>().as_any()) {
        return Ok(DType::Bool);
    }
    if obj.is(py.get_type::<PyInt>().as_any()) {
        return Ok(DType::I64);
    }
    // NumPy dtypes and scalar types: go through numpy.dtype(obj).name.
    if let Ok(np) = py.import("numpy") {
        if let Ok(d) = np.getattr("dtype").and_then(|f| f.call1((obj,))) {
            let name: String = d.getattr("name")?.extract()?;
            if let Ok(dt) = DType::parse(&name) {
                return Ok(dt);
            }
        }
    }
    Err(PyTypeError::new_err(format!(
        "dtype must be a ferrotorch.dtype, got {}",
        obj.repr()?
    )))
}

pub fn extract_device(obj: &Bound<'_, PyAny>) -> PyResult<Device> {
    if let Ok(d) = obj.extract::<PyDevice>() {
        return Ok(d.0);
    }
    if let Ok(n) = obj.extract::<usize>() {
        return Ok(Device::Cuda(n));
    }
    let s: String = obj.extract()?;
    Ok(Device::parse(&s)?)
}

/// A Python bool/int/float (or NumPy scalar) as a weakly typed `Scalar`.
pub fn extract_scalar(obj: &Bound<'_, PyAny>) -> Option<Scalar> {
    if obj.is_instance_of::<PyBool>() {
        return obj.extract::<bool>().ok().map(Scalar::Bool);
    }
    if obj.is_instance_of::<PyInt>() {
        return obj.extract::<i64>().ok().map(Scalar::Int);
    }
    if obj.is_instance_of::<PyFloat>() {
        return obj.extract::<f64>().ok().map(Scalar::Float);
    }
    // NumPy scalars (np.float32(1.5), np.int64(2)...) are not ndarrays but have `.item()`.
    if !super::numpy_interop::is_ndarray(obj) && obj.hasattr("dtype").unwrap_or(false) {
        if let Ok(item) = obj.call_method0("item") {
            if !item.is(obj) {
                return extract_scalar(&item);
            }
        }
    }
    None
}

/// Shape arguments as PyTorch accepts them: `f(2, 3)`, `f((2, 3))`, `f([2, 3])`, `f(Size)`.
pub fn extract_shape_args(args: &Bound<'_, PyTuple>) -> PyResult<Vec<i64>> {
    if args.len() == 1 {
        let a = args.get_item(0)?;
        if !a.is_instance_of::<PyInt>() {
            // A lone argument with `__index__` (a 0-d or one-element integer tensor, a NumPy
            // integer or 0-d integer array) is one size, as in PyTorch's int-list parsing.
            if a.cast::<PyTuple>().is_err() && a.cast::<PyList>().is_err() {
                if let Ok(v) = a.call_method0("__index__").and_then(|v| v.extract::<i64>()) {
                    return Ok(vec![v]);
                }
            }
            return extract_i64_seq(&a);
        }
    }
    args.iter().map(|a| extract_index_int(&a)).collect()
}

/// An integer argument (Python int, NumPy int, or 1-element integer tensor via __index__).
pub fn extract_index_int(obj: &Bound<'_, PyAny>) -> PyResult<i64> {
    if obj.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err("expected an integer, got bool"));
    }
    match obj.extract::<i64>() {
        Ok(v) => Ok(v),
        Err(_) => obj
            .call_method0("__index__")
            .and_then(|v| v.extract::<i64>())
            .map_err(|_| {
                PyTypeError::new_err(format!(
                    "expected an integer, got {}",
                    obj.get_type()
                        .name()
                        .map(|n| n.to_string())
                        .unwrap_or_default()
                ))
            }),
    }
}

pub fn extract_i64_seq(obj: &Bound<'_, PyAny>) -> PyResult<Vec<i64>> {
    if let Ok(t) = obj.cast::<PyTuple>() {
        return t.iter().map(|a| extract_index_int(&a)).collect();
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return l.iter().map(|a| extract_index_int(&a)).collect();
    }
    if let Ok(s) = obj.cast::<PySequence>() {
        let n = s.len()?;
        return (0..n).map(|i| extract_index_int(&s.get_item(i)?)).collect();
    }
    Err(PyTypeError::new_err(format!(
        "expected a sequence of integers, got {}",
        obj.get_type().name()?
    )))
}

/// Dims argument: an int, a sequence of ints, or None.
#[allow(dead_code)] // for the reduction bindings
pub fn extract_dims(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<i64>>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => {
            if let Ok(v) = extract_index_int(o) {
                Ok(Some(vec![v]))
            } else {
                Ok(Some(extract_i64_seq(o)?))
            }
        }
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyDType>()?;
    m.add_class::<PyDevice>()?;
    for d in DType::ALL {
        m.add(d.python_name(), super::tensor::dtype_object(m.py(), d)?)?;
    }
    Ok(())
}
