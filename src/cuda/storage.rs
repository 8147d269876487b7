//! `CudaStorage`: a device buffer from the caching allocator, returned to it on drop, or
//! memory another library owns (DLPack import), released through its owner on drop.

use super::driver::{device, DeviceState};
use crate::{DType, Error, Result};
use cudarc::driver::sys::CUdeviceptr;
use std::any::Any;
use std::sync::Arc;

/// `len` elements of `dtype` on one CUDA device.
pub struct CudaStorage {
    ptr: CUdeviceptr,
    /// Size of the allocator block (rounded up); 0 for foreign memory.
    block_bytes: usize,
    len: usize,
    dtype: DType,
    device: Arc<DeviceState>,
    /// Keeps foreign memory alive (its drop releases it to its producer); None for blocks of
    /// our allocator.
    foreign: Option<Box<dyn Any + Send + Sync>>,
}

impl CudaStorage {
    /// Uninitialised storage for `len` elements of `dtype` on device `ordinal`.
    pub(crate) fn alloc(ordinal: usize, len: usize, dtype: DType) -> Result<CudaStorage> {
        let device = device(ordinal)?;
        device.bind()?;
        let bytes = len * dtype.size();
        let (ptr, block_bytes) = device.lock_allocator().alloc(bytes).map_err(|e| {
            let stats = device.lock_allocator().stats();
            Error::Runtime(format!(
                "CUDA out of memory. Tried to allocate {bytes} bytes on cuda:{ordinal} \
                 ({} bytes allocated by ferrotorch, {} reserved): {e}",
                stats.allocated, stats.reserved
            ))
        })?;
        Ok(CudaStorage {
            ptr,
            block_bytes,
            len,
            dtype,
            device,
            foreign: None,
        })
    }

    /// Storage over memory another library allocated on device `ordinal` (DLPack import).
    ///
    /// # Safety
    /// `ptr` must address `len` elements of `dtype` on that device, valid until `owner` is
    /// dropped.
    pub unsafe fn from_foreign(
        ordinal: usize,
        ptr: CUdeviceptr,
        len: usize,
        dtype: DType,
        owner: Box<dyn Any + Send + Sync>,
    ) -> Result<CudaStorage> {
        let device = device(ordinal)?;
        Ok(CudaStorage {
            ptr,
            block_bytes: 0,
            len,
            dtype,
            device,
            foreign: Some(owner),
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
    pub fn ordinal(&self) -> usize {
        self.device.ordinal
    }
    /// The device address of element 0.
    pub fn device_ptr(&self) -> CUdeviceptr {
        self.ptr
    }
    pub(crate) fn device_state(&self) -> &Arc<DeviceState> {
        &self.device
    }
}

impl Drop for CudaStorage {
    fn drop(&mut self) {
        if self.foreign.is_some() {
            return; // the owner, dropped next, hands the memory back to its producer
        }
        self.device
            .lock_allocator()
            .free(self.ptr, self.block_bytes);
    }
}
