//! DLPack exchange (zero-copy) with NumPy, PyTorch, JAX, CuPy...: `Tensor.__dlpack__`,
//! `Tensor.__dlpack_device__` and `from_dlpack`.
//!
//! Export: a `DLManagedTensor` (or, when the consumer asks for DLPack >= 1.0, a
//! `DLManagedTensorVersioned`) is boxed together with the `Arc<Storage>` it points into and
//! its shape/stride arrays; its deleter drops that box. It travels in a PyCapsule named
//! "dltensor" ("dltensor_versioned"); a consumer renames the capsule to "used_dltensor" and
//! calls the deleter when done, and if nobody consumes it the capsule's destructor does.
//!
//! Import: the capsule is renamed (consumed) and its memory wrapped in a `CpuStorage` whose
//! owner calls the producer's deleter when the last view of it is dropped.

use super::creation::check_device;
use super::tensor::PyTensor;
use crate::layout::{Dims, Layout};
use crate::storage::{CpuStorage, Storage};
use crate::{DType, Device, Error, Tensor};
use pyo3::exceptions::{PyBufferError, PyRuntimeError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyTuple};
use std::ffi::{c_void, CStr};
use std::sync::Arc;

// ----------------------------------------------------------------------------- the ABI

/// `kDLCPU`.
const DL_CPU: i32 = 1;
/// `kDLCUDA`.
const DL_CUDA: i32 = 2;
/// `kDLCUDAHost` (pinned host memory: ordinary CPU memory for us).
const DL_CUDA_HOST: i32 = 3;

const DL_INT: u8 = 0;
const DL_UINT: u8 = 1;
const DL_FLOAT: u8 = 2;
const DL_BFLOAT: u8 = 4;
const DL_BOOL: u8 = 6;

/// `DLPACK_FLAG_BITMASK_READ_ONLY`.
const FLAG_READ_ONLY: u64 = 1;
/// `DLPACK_FLAG_BITMASK_IS_COPIED`.
const FLAG_IS_COPIED: u64 = 1 << 1;

const NAME: &CStr = c"dltensor";
const USED_NAME: &CStr = c"used_dltensor";
const NAME_V: &CStr = c"dltensor_versioned";
const USED_NAME_V: &CStr = c"used_dltensor_versioned";

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DLDevice {
    pub device_type: i32,
    pub device_id: i32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DLDataType {
    pub code: u8,
    pub bits: u8,
    pub lanes: u16,
}

#[repr(C)]
#[derive(Debug)]
pub struct DLTensor {
    pub data: *mut c_void,
    pub device: DLDevice,
    pub ndim: i32,
    pub dtype: DLDataType,
    pub shape: *mut i64,
    pub strides: *mut i64,
    pub byte_offset: u64,
}

#[repr(C)]
pub struct DLManagedTensor {
    pub dl_tensor: DLTensor,
    pub manager_ctx: *mut c_void,
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DLPackVersion {
    pub major: u32,
    pub minor: u32,
}

#[repr(C)]
pub struct DLManagedTensorVersioned {
    pub version: DLPackVersion,
    pub manager_ctx: *mut c_void,
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    pub flags: u64,
    pub dl_tensor: DLTensor,
}

fn dl_dtype(d: DType) -> DLDataType {
    let (code, bits) = match d {
        DType::Bool => (DL_BOOL, 8),
        DType::U8 => (DL_UINT, 8),
        DType::I8 => (DL_INT, 8),
        DType::I16 => (DL_INT, 16),
        DType::I32 => (DL_INT, 32),
        DType::I64 => (DL_INT, 64),
        DType::F16 => (DL_FLOAT, 16),
        DType::BF16 => (DL_BFLOAT, 16),
        DType::F32 => (DL_FLOAT, 32),
        DType::F64 => (DL_FLOAT, 64),
    };
    DLDataType {
        code,
        bits,
        lanes: 1,
    }
}

fn from_dl_dtype(t: DLDataType) -> Result<DType, Error> {
    if t.lanes != 1 {
        return Err(Error::Runtime(format!(
            "from_dlpack: vector dtypes (lanes={}) are not supported",
            t.lanes
        )));
    }
    Ok(match (t.code, t.bits) {
        (DL_BOOL, 8) => DType::Bool,
        (DL_UINT, 8) => DType::U8,
        (DL_INT, 8) => DType::I8,
        (DL_INT, 16) => DType::I16,
        (DL_INT, 32) => DType::I32,
        (DL_INT, 64) => DType::I64,
        (DL_FLOAT, 16) => DType::F16,
        (DL_BFLOAT, 16) => DType::BF16,
        (DL_FLOAT, 32) => DType::F32,
        (DL_FLOAT, 64) => DType::F64,
        (code, bits) => {
            let kind = match code {
                DL_INT => "kDLInt",
                DL_UINT => "kDLUInt",
                DL_FLOAT => "kDLFloat",
                DL_BFLOAT => "kDLBfloat",
                DL_BOOL => "kDLBool",
                5 => "kDLComplex",
                _ => "unknown type code",
            };
            return Err(Error::Runtime(format!(
                "from_dlpack: unsupported dtype {kind} with {bits} bits"
            )));
        }
    })
}

// ----------------------------------------------------------------------------- export

/// What a capsule's `manager_ctx` owns: the managed struct itself (first, so a pointer to
/// it is a pointer to the whole box), the shape/stride arrays it points to, and the storage.
#[repr(C)]
struct ExportCtx<M> {
    managed: M,
    _shape: Vec<i64>,
    _strides: Vec<i64>,
    _storage: Arc<Storage>,
}

/// # Safety
/// `m` must be null or a pointer produced by `export` for the unversioned struct, not yet
/// deleted.
unsafe extern "C" fn delete_legacy(m: *mut DLManagedTensor) {
    if !m.is_null() {
        // SAFETY: `m` is the first field of a leaked `Box<ExportCtx<DLManagedTensor>>`.
        drop(unsafe { Box::from_raw(m as *mut ExportCtx<DLManagedTensor>) });
    }
}

/// # Safety
/// As `delete_legacy`, for the versioned struct.
unsafe extern "C" fn delete_versioned(m: *mut DLManagedTensorVersioned) {
    if !m.is_null() {
        // SAFETY: `m` is the first field of a leaked `Box<ExportCtx<...Versioned>>`.
        drop(unsafe { Box::from_raw(m as *mut ExportCtx<DLManagedTensorVersioned>) });
    }
}

/// Frees an unconsumed capsule's tensor (a consumer renames the capsule when it takes it).
///
/// # Safety
/// `cap` must be a live capsule.
unsafe fn free_unconsumed(cap: *mut ffi::PyObject) {
    // SAFETY: IsValid never raises; GetPointer does not raise when the name matches; the
    // pointer of a valid capsule with our name is a managed tensor of the matching kind.
    unsafe {
        if ffi::PyCapsule_IsValid(cap, NAME.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(cap, NAME.as_ptr()) as *mut DLManagedTensor;
            if let Some(d) = m.as_ref().and_then(|m| m.deleter) {
                d(m);
            }
        } else if ffi::PyCapsule_IsValid(cap, NAME_V.as_ptr()) == 1 {
            let m =
                ffi::PyCapsule_GetPointer(cap, NAME_V.as_ptr()) as *mut DLManagedTensorVersioned;
            if let Some(d) = m.as_ref().and_then(|m| m.deleter) {
                d(m);
            }
        }
    }
}

/// The capsules' destructor. CPython calls it with the GIL held; telling pyo3 so (via
/// `try_attach`, cheap here) makes Python objects the storage owns be released right away
/// rather than at the next pyo3 call. During interpreter shutdown it frees without pyo3.
unsafe extern "C" fn capsule_destructor(cap: *mut ffi::PyObject) {
    // SAFETY: CPython passes the live capsule being destroyed.
    if Python::try_attach(|_| unsafe { free_unconsumed(cap) }).is_none() {
        // SAFETY: as above.
        unsafe { free_unconsumed(cap) }
    }
}

fn dl_tensor(t: &Tensor, shape: &mut [i64], strides: &mut [i64]) -> DLTensor {
    let base: *mut u8 = match t.storage().data() {
        crate::storage::StorageData::Cpu(c) => c.as_ptr(),
        crate::storage::StorageData::Cuda(c) => c.device_ptr() as *mut u8,
    };
    // SAFETY: the offset lies inside the storage (layouts are validated on creation); for
    // an empty tensor the pointer is not dereferenced by anyone. A device address is only
    // offset here, never dereferenced on the host.
    let data = unsafe { base.add(t.storage_offset() * t.dtype().size()) };
    DLTensor {
        data: data as *mut c_void,
        device: match t.device() {
            Device::Cpu => DLDevice {
                device_type: DL_CPU,
                device_id: 0,
            },
            Device::Cuda(n) => DLDevice {
                device_type: DL_CUDA,
                device_id: n as i32,
            },
        },
        ndim: t.ndim() as i32,
        dtype: dl_dtype(t.dtype()),
        shape: shape.as_mut_ptr(),
        strides: strides.as_mut_ptr(),
        byte_offset: 0,
    }
}

/// A PyCapsule holding `t` as a DLPack tensor (versioned when `versioned`).
fn export<'py>(
    py: Python<'py>,
    t: &Tensor,
    versioned: bool,
    copied: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let mut shape: Vec<i64> = t.shape().iter().map(|&s| s as i64).collect();
    let mut strides: Vec<i64> = t.strides().iter().map(|&s| s as i64).collect();
    let read_only = t
        .storage()
        .try_cpu()
        .map(|c| !c.is_writable())
        .unwrap_or(false);
    let dl = dl_tensor(t, &mut shape, &mut strides);
    let (ptr, name, destructor): (*mut c_void, &CStr, Option<ffi::PyCapsule_Destructor>) =
        if versioned {
            let mut flags = 0;
            if read_only {
                flags |= FLAG_READ_ONLY;
            }
            if copied {
                flags |= FLAG_IS_COPIED;
            }
            let ctx = Box::new(ExportCtx {
                managed: DLManagedTensorVersioned {
                    version: DLPackVersion { major: 1, minor: 0 },
                    manager_ctx: std::ptr::null_mut(),
                    deleter: Some(delete_versioned),
                    flags,
                    dl_tensor: dl,
                },
                _shape: shape,
                _strides: strides,
                _storage: t.storage().clone(),
            });
            let raw = Box::into_raw(ctx);
            // SAFETY: `raw` is a valid, uniquely owned pointer we just leaked.
            unsafe { (*raw).managed.manager_ctx = raw as *mut c_void };
            (raw as *mut c_void, NAME_V, Some(capsule_destructor))
        } else {
            if read_only {
                return Err(PyBufferError::new_err(
                "Cannot export a read-only tensor with DLPack < 1.0 (it cannot signal read-only memory); pass max_version=(1, 0)",
            ));
            }
            let ctx = Box::new(ExportCtx {
                managed: DLManagedTensor {
                    dl_tensor: dl,
                    manager_ctx: std::ptr::null_mut(),
                    deleter: Some(delete_legacy),
                },
                _shape: shape,
                _strides: strides,
                _storage: t.storage().clone(),
            });
            let raw = Box::into_raw(ctx);
            // SAFETY: as above.
            unsafe { (*raw).managed.manager_ctx = raw as *mut c_void };
            (raw as *mut c_void, NAME, Some(capsule_destructor))
        };
    // SAFETY: `ptr` is non-null and owned by the capsule from here on (its destructor or a
    // consumer frees it); `name` is a 'static C string as PyCapsule requires.
    unsafe {
        let cap = ffi::PyCapsule_New(ptr, name.as_ptr(), destructor);
        if cap.is_null() {
            // The capsule was not created: free the context ourselves.
            if versioned {
                delete_versioned(ptr as *mut DLManagedTensorVersioned);
            } else {
                delete_legacy(ptr as *mut DLManagedTensor);
            }
            return Err(
                PyErr::take(py).unwrap_or_else(|| PyRuntimeError::new_err("PyCapsule_New failed"))
            );
        }
        Ok(Bound::from_owned_ptr(py, cap))
    }
}

fn parse_version(max_version: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
    match max_version {
        Some(v) if !v.is_none() => {
            let t = v.cast::<PyTuple>().map_err(|_| {
                PyTypeError::new_err("max_version must be a tuple (major, minor) or None")
            })?;
            let major: i64 = t.get_item(0)?.extract()?;
            Ok(major >= 1)
        }
        _ => Ok(false),
    }
}

#[pymethods]
impl PyTensor {
    /// Export this tensor as a DLPack capsule (no copy unless `copy=True`).
    #[pyo3(signature = (stream=None, *, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        stream: Option<&Bound<'py, PyAny>>,
        max_version: Option<&Bound<'py, PyAny>>,
        dl_device: Option<&Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if let Some(s) = stream {
            if !s.is_none() && s.extract::<i64>().is_err() {
                return Err(PyTypeError::new_err("stream must be None or an int"));
            }
        }
        if let Some(d) = dl_device {
            if !d.is_none() {
                let (ty, id): (i32, i32) = d.extract()?;
                let own = match self.inner.device() {
                    Device::Cpu => (DL_CPU, 0),
                    Device::Cuda(n) => (DL_CUDA, n as i32),
                };
                if (ty, id) != own {
                    return Err(PyBufferError::new_err(format!(
                        "__dlpack__: cannot export a tensor on {} to device ({ty}, {id}) without a copy across devices",
                        self.inner.device()
                    )));
                }
            }
        }
        if self.inner.requires_grad() {
            return Err(PyRuntimeError::new_err(
                "Can't export tensors that require gradient, use tensor.detach()",
            ));
        }
        if let Device::Cuda(n) = self.inner.device() {
            // The consumer may read on any stream: finish our queued work first.
            crate::cuda::synchronize(n)?;
        }
        let versioned = parse_version(max_version)?;
        let copied = copy == Some(true);
        let t = if copied {
            self.inner.clone_data()
        } else {
            self.inner.clone()
        };
        export(py, &t, versioned, copied)
    }

    /// `(device_type, device_id)`: `(1, 0)` (kDLCPU) for CPU tensors.
    fn __dlpack_device__(&self) -> (i32, i32) {
        match self.inner.device() {
            Device::Cpu => (DL_CPU, 0),
            Device::Cuda(n) => (DL_CUDA, n as i32),
        }
    }
}

// ----------------------------------------------------------------------------- import

/// The producer's managed tensor, released (its deleter called) when the storage dies.
enum Managed {
    Legacy(*mut DLManagedTensor),
    Versioned(*mut DLManagedTensorVersioned),
}

struct DlpackOwner(Managed);

// SAFETY: DLPack requires deleters to be callable from any thread (NumPy's and PyTorch's
// take the GIL themselves); the pointer is used for nothing else.
unsafe impl Send for DlpackOwner {}
// SAFETY: see above; the owner is never accessed through a shared reference.
unsafe impl Sync for DlpackOwner {}

impl Drop for DlpackOwner {
    fn drop(&mut self) {
        // SAFETY: we consumed the capsule, so we own exactly one call of the deleter.
        unsafe {
            match self.0 {
                Managed::Legacy(m) => {
                    if let Some(d) = (*m).deleter {
                        d(m)
                    }
                }
                Managed::Versioned(m) => {
                    if let Some(d) = (*m).deleter {
                        d(m)
                    }
                }
            }
        }
    }
}

/// Consume a "dltensor" / "dltensor_versioned" capsule into a tensor sharing its memory.
fn import_capsule(cap: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    let raw = cap.as_ptr();
    let invalid = || {
        PyRuntimeError::new_err(
            "from_dlpack received an invalid capsule. Note that DLTensor capsules can be consumed only once, so you might have already constructed a tensor from it once.",
        )
    };
    // SAFETY: `raw` is a live capsule (checked by the caller); IsValid never raises.
    let versioned = unsafe {
        if ffi::PyCapsule_IsValid(raw, NAME.as_ptr()) == 1 {
            false
        } else if ffi::PyCapsule_IsValid(raw, NAME_V.as_ptr()) == 1 {
            true
        } else {
            return Err(invalid());
        }
    };
    let name = if versioned { NAME_V } else { NAME };
    // SAFETY: the name matches, so GetPointer returns the producer's non-null pointer.
    let ptr = unsafe { ffi::PyCapsule_GetPointer(raw, name.as_ptr()) };
    if ptr.is_null() {
        return Err(invalid());
    }
    // SAFETY: a valid capsule of this name holds a live managed tensor of this kind.
    let (dl, writable): (&DLTensor, bool) = unsafe {
        if versioned {
            let m = &*(ptr as *const DLManagedTensorVersioned);
            if m.version.major != 1 {
                return Err(PyBufferError::new_err(format!(
                    "from_dlpack: unsupported DLPack version {}.{} (this build reads 1.x)",
                    m.version.major, m.version.minor
                )));
            }
            (&m.dl_tensor, m.flags & FLAG_READ_ONLY == 0)
        } else {
            (&(*(ptr as *const DLManagedTensor)).dl_tensor, true)
        }
    };
    let cuda_ordinal = match dl.device.device_type {
        DL_CPU | DL_CUDA_HOST => None,
        DL_CUDA => {
            let n = dl.device.device_id.max(0) as usize;
            if !crate::cuda::is_available() || n >= crate::cuda::device_count() {
                return Err(Error::DeviceUnavailable(Device::Cuda(n)).into());
            }
            Some(n)
        }
        other => {
            return Err(PyBufferError::new_err(format!(
                "from_dlpack: unsupported device type {other} (only CPU and CUDA memory can be imported)"
            )))
        }
    };
    let dtype = from_dl_dtype(dl.dtype)?;
    if dl.ndim < 0 {
        return Err(PyBufferError::new_err("from_dlpack: negative ndim"));
    }
    let ndim = dl.ndim as usize;
    // SAFETY: DLPack guarantees `shape` (and `strides` unless null) hold `ndim` values.
    let (shape, strides): (Vec<i64>, Option<Vec<i64>>) = unsafe {
        let shape = if ndim == 0 {
            vec![]
        } else {
            std::slice::from_raw_parts(dl.shape, ndim).to_vec()
        };
        let strides = if ndim == 0 || dl.strides.is_null() {
            None
        } else {
            Some(std::slice::from_raw_parts(dl.strides, ndim).to_vec())
        };
        (shape, strides)
    };
    if shape.iter().any(|&s| s < 0) {
        return Err(PyBufferError::new_err(
            "from_dlpack: negative dimension size",
        ));
    }
    let dims: Dims = shape.iter().map(|&s| s as usize).collect();
    let strides: Dims = match strides {
        None => crate::layout::contiguous_strides(&dims),
        Some(st) => {
            let mut out = Dims::new();
            for (&s, &n) in st.iter().zip(&dims) {
                if s < 0 && n > 1 {
                    return Err(PyBufferError::new_err(
                        "from_dlpack: tensors with negative strides are not supported",
                    ));
                }
                out.push(if n > 1 { s as usize } else { 0 });
            }
            out
        }
    };
    let layout = Layout {
        shape: dims,
        strides,
        offset: 0,
    };
    let numel = layout.numel();
    // SAFETY: `data + byte_offset` is where element 0 lives (DLPack's definition).
    let data = unsafe { (dl.data as *mut u8).add(dl.byte_offset as usize) };
    if numel > 0 && !(data as usize).is_multiple_of(dtype.size()) {
        return Err(PyBufferError::new_err(format!(
            "from_dlpack: the data pointer is not aligned for {dtype}"
        )));
    }
    let len = layout.storage_extent();
    // Consume the capsule: from here on we (the owner below) call the deleter exactly once.
    let used = if versioned { USED_NAME_V } else { USED_NAME };
    // SAFETY: `raw` is a valid capsule; the new name is a 'static C string.
    if unsafe { ffi::PyCapsule_SetName(raw, used.as_ptr()) } != 0 {
        return Err(PyErr::take(cap.py()).unwrap_or_else(invalid));
    }
    let owner = DlpackOwner(if versioned {
        Managed::Versioned(ptr as *mut DLManagedTensorVersioned)
    } else {
        Managed::Legacy(ptr as *mut DLManagedTensor)
    });
    // Empty tensors may come with a null or unaligned pointer: use an aligned dangling one
    // (nothing is ever read through it, the storage has length 0).
    let data = if numel == 0 {
        std::ptr::NonNull::<u64>::dangling().as_ptr() as *mut u8
    } else {
        data
    };
    if let Some(n) = cuda_ordinal {
        // The producer's queued writes must land before our kernels read: the capsule was
        // asked for without stream handshake (stream=-1), so wait for the whole device.
        crate::cuda::synchronize(n)?;
        // SAFETY: as below, for memory of device `n` (only kernels and copies on that
        // device use the pointer).
        let storage = unsafe {
            crate::cuda::CudaStorage::from_foreign(n, data as u64, len, dtype, Box::new(owner))?
        };
        return Ok(Tensor::from_storage(
            Arc::new(Storage::cuda(storage)),
            layout,
        )?);
    }
    // SAFETY: the producer guarantees the memory spans every element the strides reach
    // (`len` elements from `data`) and stays valid until its deleter runs, which happens
    // when `owner` (kept by the storage) is dropped.
    let storage = unsafe { CpuStorage::from_foreign(data, len, dtype, writable, Box::new(owner))? };
    Ok(Tensor::from_storage(
        Arc::new(Storage::cpu(storage)),
        layout,
    )?)
}

/// `from_dlpack(obj)`: a tensor sharing memory with any object that has `__dlpack__`
/// (NumPy arrays, PyTorch tensors...) or with a DLPack capsule.
#[pyfunction]
pub fn from_dlpack(ext: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    if let Ok(t) = ext.cast::<PyTensor>() {
        // Our own tensor: a new (detached) view of the same storage.
        let t = &t.borrow().inner;
        return Ok(t.with_layout(t.layout().clone()).into());
    }
    if ext.is_instance_of::<PyCapsule>() {
        return Ok(import_capsule(ext)?.into());
    }
    if !ext.hasattr("__dlpack__")? {
        return Err(PyTypeError::new_err(format!(
            "from_dlpack: expected an object with __dlpack__ or a DLPack capsule, got {}",
            ext.get_type().name()?
        )));
    }
    let mut on_cuda = false;
    if ext.hasattr("__dlpack_device__")? {
        let (ty, id): (i32, i32) = ext.call_method0("__dlpack_device__")?.extract()?;
        match ty {
            DL_CPU | DL_CUDA_HOST => {}
            DL_CUDA => {
                check_device(Some(
                    &pyo3::types::PyString::new(ext.py(), &format!("cuda:{}", id.max(0)))
                        .into_any(),
                ))?;
                on_cuda = true;
            }
            _ => {
                return Err(PyBufferError::new_err(format!(
                    "from_dlpack: unsupported device type {ty} (only CPU and CUDA memory can be imported)"
                )))
            }
        }
    }
    let py = ext.py();
    let kwargs = pyo3::types::PyDict::new(py);
    kwargs.set_item("max_version", (1, 0))?;
    if on_cuda {
        // No stream handshake: the import synchronises the device instead.
        kwargs.set_item("stream", -1)?;
    }
    let cap = match ext.call_method("__dlpack__", (), Some(&kwargs)) {
        Ok(c) => c,
        Err(e) if e.is_instance_of::<PyTypeError>(py) => ext.call_method0("__dlpack__")?,
        Err(e) => return Err(e),
    };
    if !cap.is_instance_of::<PyCapsule>() {
        return Err(PyTypeError::new_err("__dlpack__ did not return a capsule"));
    }
    Ok(import_capsule(&cap)?.into())
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(from_dlpack, m)?)?;
    Ok(())
}
