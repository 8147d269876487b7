//! Zero-copy exchange with NumPy. In: the array's buffer becomes a CPU storage whose owner
//! keeps the array alive. Out: a NumPy array over our buffer whose `base` holds the storage.

use super::tensor::PyTensor;
use crate::layout::{Dims, Layout};
use crate::storage::{CpuStorage, Storage};
use crate::{DType, Tensor};
use numpy::npyffi::{self, NPY_TYPES, PY_ARRAY_API};
use numpy::{
    Element as NpElement, PyArrayDescr, PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use std::sync::Arc;

/// Holds a storage alive for as long as a NumPy array made from it exists.
#[pyclass(module = "ferrotorch._C", frozen)]
struct StorageOwner {
    _storage: Arc<Storage>,
}

/// Keeps a NumPy array alive for as long as a storage made from it exists.
struct ArrayOwner(#[allow(dead_code)] Py<PyAny>);

pub fn is_ndarray(obj: &Bound<'_, PyAny>) -> bool {
    obj.cast::<PyUntypedArray>().is_ok()
}

fn dtype_from_numpy(descr: &Bound<'_, PyArrayDescr>) -> PyResult<DType> {
    use pyo3::types::PyAnyMethods;
    // Decided from (kind, itemsize, byte order): no per-call descriptor lookups.
    let native = matches!(descr.byteorder(), b'=' | b'|')
        || (cfg!(target_endian = "little") && descr.byteorder() == b'<');
    let dt = match (descr.kind(), descr.itemsize()) {
        _ if !native => None,
        (b'b', 1) => Some(DType::Bool),
        (b'u', 1) => Some(DType::U8),
        (b'i', 1) => Some(DType::I8),
        (b'i', 2) => Some(DType::I16),
        (b'i', 4) => Some(DType::I32),
        (b'i', 8) => Some(DType::I64),
        (b'f', 2) => Some(DType::F16),
        (b'f', 4) => Some(DType::F32),
        (b'f', 8) => Some(DType::F64),
        _ => None,
    };
    if let Some(dt) = dt {
        return Ok(dt);
    }
    let name: String = descr.getattr("name")?.extract()?;
    Err(PyTypeError::new_err(format!(
        "can't convert np.ndarray of type numpy.{name}. The only supported types are: float64, float32, float16, int64, int32, int16, int8, uint8, and bool."
    )))
}

/// `ferrotorch.from_numpy(arr)`: share the array's memory.
pub fn from_numpy_any(obj: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    let arr = obj
        .cast::<PyUntypedArray>()
        .map_err(|_| PyTypeError::new_err("expected np.ndarray"))?;
    let dtype = dtype_from_numpy(&arr.dtype())?;
    let itemsize = dtype.size() as isize;
    let shape: Dims = arr.shape().iter().copied().collect();
    let mut strides: Dims = Dims::new();
    for (&s, &n) in arr.strides().iter().zip(arr.shape()) {
        if s < 0 && n > 1 {
            return Err(PyValueError::new_err(
                "At least one stride in the given numpy array is negative, and tensors with negative strides are not currently supported. (You can probably work around this by making a copy of your array  with array.copy().) ",
            ));
        }
        if s % itemsize != 0 {
            return Err(PyValueError::new_err(
                "given numpy array strides not a multiple of the element byte size. Copy the numpy array to reallocate the memory.",
            ));
        }
        strides.push(if n > 1 { (s / itemsize) as usize } else { 0 });
    }
    // SAFETY: `as_array_ptr` is a valid PyArrayObject for a live array.
    let (data, flags) = unsafe {
        let raw = arr.as_array_ptr();
        ((*raw).data as *mut u8, (*raw).flags)
    };
    let writable = flags & npyffi::NPY_ARRAY_WRITEABLE != 0;
    let layout = Layout {
        shape,
        strides,
        offset: 0,
    };
    let len = layout.storage_extent();
    // SAFETY: NumPy guarantees `data` spans every element the strides reach (`len`
    // elements from `data`), aligned for the dtype (checked in `from_foreign`); the array
    // is kept alive by the owner for as long as the storage lives.
    let storage = unsafe {
        CpuStorage::from_foreign(
            data,
            len,
            dtype,
            writable,
            Box::new(ArrayOwner(obj.clone().unbind())),
        )?
    };
    Ok(Tensor::from_storage(
        Arc::new(Storage::cpu(storage)),
        layout,
    )?)
}

/// A NumPy array viewing the tensor's memory (no copy).
pub fn to_numpy<'py>(py: Python<'py>, t: &Tensor) -> PyResult<Bound<'py, PyAny>> {
    let descr =
        match t.dtype() {
            DType::Bool => bool::get_dtype(py),
            DType::U8 => u8::get_dtype(py),
            DType::I8 => i8::get_dtype(py),
            DType::I16 => i16::get_dtype(py),
            DType::I32 => i32::get_dtype(py),
            DType::I64 => i64::get_dtype(py),
            DType::F16 => half::f16::get_dtype(py),
            DType::F32 => f32::get_dtype(py),
            DType::F64 => f64::get_dtype(py),
            DType::BF16 => return Err(PyTypeError::new_err(
                "Got unsupported ScalarType BFloat16 (NumPy has no bfloat16; call .float() first)",
            )),
        };
    if t.device() != crate::Device::Cpu {
        return Err(PyTypeError::new_err(format!(
            "can't convert {} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.",
            t.device()
        )));
    }
    let size = t.dtype().size() as isize;
    let mut dims: Vec<npyffi::npy_intp> =
        t.shape().iter().map(|&d| d as npyffi::npy_intp).collect();
    let mut strides: Vec<npyffi::npy_intp> =
        t.strides().iter().map(|&s| s as isize * size).collect();
    let cpu = t.storage().as_cpu();
    // SAFETY: offset is within the storage (layouts are validated when created).
    let data = unsafe { cpu.as_ptr().add(t.storage_offset() * t.dtype().size()) };
    let mut flags = npyffi::NPY_ARRAY_ALIGNED;
    if cpu.is_writable() {
        flags |= npyffi::NPY_ARRAY_WRITEABLE;
    }
    let owner = Py::new(
        py,
        StorageOwner {
            _storage: t.storage().clone(),
        },
    )?;
    // SAFETY: we pass a valid descr (stolen reference), dims/strides arrays of length ndim
    // and a data pointer that stays valid while `owner` (set as the array's base) is alive.
    unsafe {
        let subtype = PY_ARRAY_API.get_type_object(py, npyffi::NpyTypes::PyArray_Type);
        let ptr = PY_ARRAY_API.PyArray_NewFromDescr(
            py,
            subtype,
            descr.into_dtype_ptr(),
            dims.len() as i32,
            dims.as_mut_ptr(),
            strides.as_mut_ptr(),
            data as *mut std::ffi::c_void,
            flags,
            std::ptr::null_mut(),
        );
        if ptr.is_null() {
            return Err(PyErr::take(py)
                .unwrap_or_else(|| PyRuntimeError::new_err("numpy array creation failed")));
        }
        let arr = Bound::from_owned_ptr(py, ptr);
        if PY_ARRAY_API.PyArray_SetBaseObject(
            py,
            ptr as *mut npyffi::PyArrayObject,
            owner.into_ptr(),
        ) < 0
        {
            return Err(
                PyErr::take(py).unwrap_or_else(|| PyRuntimeError::new_err("numpy set base failed"))
            );
        }
        let _ = NPY_TYPES::NPY_FLOAT;
        Ok(arr)
    }
}

#[pymethods]
impl PyTensor {
    /// A NumPy array sharing this tensor's memory.
    #[pyo3(signature = (*, force=false))]
    fn numpy<'py>(&self, py: Python<'py>, force: bool) -> PyResult<Bound<'py, PyAny>> {
        let _ = force;
        if self.inner.requires_grad() && !force {
            return Err(PyRuntimeError::new_err(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.",
            ));
        }
        to_numpy(py, &self.inner)
    }
    #[pyo3(signature = (dtype=None, copy=None))]
    fn __array__<'py>(
        &self,
        py: Python<'py>,
        dtype: Option<&Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut a = to_numpy(py, &self.inner)?;
        if let Some(d) = dtype {
            a = a.call_method1("astype", (d,))?;
        } else if copy == Some(true) {
            a = a.call_method0("copy")?;
        }
        Ok(a)
    }
}

#[pyfunction]
fn from_numpy(obj: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    if !is_ndarray(obj) {
        return Err(PyTypeError::new_err(format!(
            "expected np.ndarray (got {})",
            obj.get_type().name()?
        )));
    }
    Ok(from_numpy_any(obj)?.into())
}

/// `as_tensor(data, dtype)`: shares memory with tensors and arrays when no conversion is needed.
#[pyfunction]
#[pyo3(signature = (data, dtype=None, device=None))]
fn as_tensor(
    data: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let dtype = dtype.map(super::convert::extract_dtype).transpose()?;
    let mut t = if let Ok(t) = data.cast::<PyTensor>() {
        t.borrow().inner.clone()
    } else if is_ndarray(data) && dtype_from_numpy(&data.cast::<PyUntypedArray>()?.dtype()).is_ok()
    {
        match from_numpy_any(data) {
            Ok(t) => t,
            Err(_) => super::tensor::tensor_from_data(data, None)?,
        }
    } else {
        super::tensor::tensor_from_data(data, dtype)?
    };
    if let Some(d) = dtype {
        t = t.to_dtype(d);
    }
    if let Some(d) = device {
        t = t.to_device(super::convert::extract_device(d)?)?;
    }
    Ok(t.into())
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<StorageOwner>()?;
    m.add_function(wrap_pyfunction!(from_numpy, m)?)?;
    m.add_function(wrap_pyfunction!(as_tensor, m)?)?;
    Ok(())
}
