//! Storage: a flat, typed buffer shared by every view of it (through `Arc`), with a version
//! counter that in-place writes bump (autograd uses it to detect modified saved tensors).
//!
//! CPU storage is a raw pointer plus an owner that keeps the memory alive: either a `Vec<T>`
//! we allocated, or a foreign object (a NumPy array, a DLPack capsule) for zero-copy imports.

use crate::{DType, Device, Element, Error, Result};
use std::any::Any;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Keeps the memory behind a `CpuStorage` alive.
type Owner = Box<dyn Any + Send + Sync>;

/// A CPU buffer of `len` elements of `dtype`.
pub struct CpuStorage {
    ptr: NonNull<u8>,
    len: usize,
    dtype: DType,
    writable: bool,
    _owner: Owner,
}

// SAFETY: the buffer is plain old data owned by `_owner`, which is itself Send + Sync. Like
// PyTorch, concurrent writes through aliasing views are the caller's responsibility; all
// kernels inside ferrotorch write only to freshly allocated outputs or to the tensor an
// in-place op was called on.
unsafe impl Send for CpuStorage {}
// SAFETY: see above.
unsafe impl Sync for CpuStorage {}

/// The owner of a buffer we allocated: when the storage goes, the buffer goes back to the
/// recycling pool (big ones only; see `cpu::alloc`).
struct Recycled<T: Element>(Vec<T>);

impl<T: Element> Drop for Recycled<T> {
    fn drop(&mut self) {
        crate::cpu::alloc::recycle(std::mem::take(&mut self.0));
    }
}

impl CpuStorage {
    pub fn from_vec<T: Element>(mut v: Vec<T>) -> Self {
        let len = v.len();
        // SAFETY: a Vec's pointer is never null (dangling but aligned when empty).
        let ptr = unsafe { NonNull::new_unchecked(v.as_mut_ptr() as *mut u8) };
        CpuStorage {
            ptr,
            len,
            dtype: T::DTYPE,
            writable: true,
            _owner: Box::new(Recycled(v)),
        }
    }

    /// Wrap foreign memory.
    ///
    /// # Safety
    /// `ptr` must point to `len` properly aligned, initialised elements of `dtype` that stay
    /// valid (and are not freed) for as long as `owner` is alive.
    pub unsafe fn from_foreign(
        ptr: *mut u8,
        len: usize,
        dtype: DType,
        writable: bool,
        owner: Owner,
    ) -> Result<Self> {
        let ptr = NonNull::new(ptr).unwrap_or(NonNull::dangling());
        if !(ptr.as_ptr() as usize).is_multiple_of(dtype.size()) {
            return Err(Error::Runtime(format!(
                "cannot share memory that is not aligned for {dtype}"
            )));
        }
        Ok(CpuStorage {
            ptr,
            len,
            dtype,
            writable,
            _owner: owner,
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    pub fn is_writable(&self) -> bool {
        self.writable
    }
    /// True when the memory is a `Vec` allocated by ferrotorch (not foreign memory such as a
    /// NumPy array or a DLPack capsule that someone else may also be using).
    pub fn owns_vec(&self) -> bool {
        crate::with_dtype!(self.dtype, T, { self._owner.is::<Recycled<T>>() })
    }
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// View the whole buffer as `&[T]`.
    pub fn as_slice<T: Element>(&self) -> &[T] {
        assert_eq!(T::DTYPE, self.dtype, "storage dtype mismatch");
        if self.len == 0 {
            return &[];
        }
        // SAFETY: dtype checked above; ptr/len describe initialised, aligned elements kept
        // alive by `_owner` for the lifetime of `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr() as *const T, self.len) }
    }

    /// View the whole buffer as `&mut [T]` through a shared reference.
    ///
    /// # Safety
    /// The caller must ensure no other live reference reads or writes the elements it
    /// writes (the same contract as PyTorch's in-place ops on aliasing views).
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn as_mut_slice<T: Element>(&self) -> &mut [T] {
        assert_eq!(T::DTYPE, self.dtype, "storage dtype mismatch");
        if self.len == 0 {
            return &mut [];
        }
        std::slice::from_raw_parts_mut(self.ptr.as_ptr() as *mut T, self.len)
    }
}

/// Where the bytes of a storage live.
pub enum StorageData {
    Cpu(CpuStorage),
    /// Device memory (uninhabited in builds without the `cuda` feature).
    Cuda(crate::cuda::CudaStorage),
}

/// A storage shared by all views of it.
pub struct Storage {
    data: StorageData,
    version: AtomicU64,
    /// For a reinterpretation of another storage's bytes as another dtype
    /// (`Tensor.view(dtype)`): the storage that owns the memory. It is kept alive by this
    /// one, its version counter is this one's (a write through either is seen by autograd
    /// through both), and tensors over either share memory.
    alias_of: Option<Arc<Storage>>,
}

impl Storage {
    pub fn cpu(s: CpuStorage) -> Self {
        Storage {
            data: StorageData::Cpu(s),
            version: AtomicU64::new(0),
            alias_of: None,
        }
    }
    pub fn cuda(s: crate::cuda::CudaStorage) -> Self {
        Storage {
            data: StorageData::Cuda(s),
            version: AtomicU64::new(0),
            alias_of: None,
        }
    }

    /// The storage that owns this one's memory: itself, or the one it reinterprets.
    pub fn root(self: &Arc<Storage>) -> &Arc<Storage> {
        self.alias_of.as_ref().unwrap_or(self)
    }

    /// The same bytes seen as elements of `dtype` (`Tensor.view(dtype)`), zero-copy: a
    /// storage over this one's memory that keeps it alive and shares its version counter.
    /// Trailing bytes that do not fill a whole element of `dtype` are left out. A `Bool`
    /// reinterpretation of other bytes needs every byte to be 0 or 1 (the only valid bools);
    /// the caller checks that (see `Tensor::view_dtype`).
    pub(crate) fn reinterpret(self: &Arc<Storage>, dtype: DType) -> Result<Storage> {
        let root = self.root().clone();
        let len = self.len() * self.dtype().size() / dtype.size();
        let data = match &self.data {
            StorageData::Cpu(_) if len == 0 => {
                // Nothing to share (and an empty buffer's dangling pointer may not be
                // aligned for `dtype`).
                crate::with_dtype!(dtype, T, {
                    StorageData::Cpu(CpuStorage::from_vec(Vec::<T>::new()))
                })
            }
            StorageData::Cpu(c) => {
                let owner: Owner = Box::new(root.clone());
                // SAFETY: the memory holds `len * dtype.size()` initialised bytes (within the
                // source's buffer), kept alive by `owner`; every bit pattern is a valid value
                // of the numeric dtypes, and the caller checks the bytes for `Bool`.
                // `from_foreign` checks the alignment.
                StorageData::Cpu(unsafe {
                    CpuStorage::from_foreign(c.as_ptr(), len, dtype, c.is_writable(), owner)?
                })
            }
            StorageData::Cuda(c) => {
                let owner: Owner = Box::new(root.clone());
                // SAFETY: as above; the device memory stays allocated while `owner` lives.
                StorageData::Cuda(unsafe {
                    crate::cuda::CudaStorage::from_foreign(
                        c.ordinal(),
                        c.device_ptr(),
                        len,
                        dtype,
                        owner,
                    )?
                })
            }
        };
        Ok(Storage {
            data,
            version: AtomicU64::new(0),
            alias_of: Some(root),
        })
    }
    pub fn device(&self) -> Device {
        match &self.data {
            StorageData::Cpu(_) => Device::Cpu,
            StorageData::Cuda(c) => Device::Cuda(c.ordinal()),
        }
    }
    pub fn dtype(&self) -> DType {
        match &self.data {
            StorageData::Cpu(c) => c.dtype(),
            StorageData::Cuda(c) => c.dtype(),
        }
    }
    pub fn len(&self) -> usize {
        match &self.data {
            StorageData::Cpu(c) => c.len(),
            StorageData::Cuda(c) => c.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn data(&self) -> &StorageData {
        &self.data
    }
    /// The CPU buffer, or an error naming the device.
    pub fn try_cpu(&self) -> Result<&CpuStorage> {
        match &self.data {
            StorageData::Cpu(c) => Ok(c),
            StorageData::Cuda(c) => Err(Error::Runtime(format!(
                "this operation is not implemented for CUDA tensors yet (tensor on cuda:{}); move it to the CPU with .cpu()",
                c.ordinal()
            ))),
        }
    }
    /// The CPU buffer. Panics (caught at the Python boundary and raised as RuntimeError) for
    /// device storage: callers that can meet CUDA tensors use `try_cpu`.
    pub fn as_cpu(&self) -> &CpuStorage {
        match self.try_cpu() {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        }
    }
    /// Current version (bumped by every in-place write).
    pub fn version(&self) -> u64 {
        match &self.alias_of {
            Some(root) => root.version(),
            None => self.version.load(Ordering::Acquire),
        }
    }
    pub fn bump_version(&self) {
        match &self.alias_of {
            Some(root) => root.bump_version(),
            None => {
                self.version.fetch_add(1, Ordering::AcqRel);
            }
        }
    }
}
