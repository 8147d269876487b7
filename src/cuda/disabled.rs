//! The CUDA API of a build without the `cuda` feature: no device is ever available.

use super::MemoryStats;
use crate::{Device, Error, Result};

/// Uninhabited: without the `cuda` feature no CUDA storage can exist.
pub enum CudaStorage {}

impl CudaStorage {
    pub fn len(&self) -> usize {
        match *self {}
    }
    pub fn is_empty(&self) -> bool {
        match *self {}
    }
    pub fn dtype(&self) -> crate::DType {
        match *self {}
    }
    pub fn ordinal(&self) -> usize {
        match *self {}
    }
    pub fn device_ptr(&self) -> u64 {
        match *self {}
    }
    /// No device exists without the feature.
    ///
    /// # Safety
    /// Nothing is dereferenced; the signature mirrors the real backend's.
    pub unsafe fn from_foreign(
        ordinal: usize,
        _ptr: u64,
        _len: usize,
        _dtype: crate::DType,
        _owner: Box<dyn std::any::Any + Send + Sync>,
    ) -> Result<CudaStorage> {
        Err(unavailable(ordinal))
    }
}

pub fn is_available() -> bool {
    false
}
pub fn device_count() -> usize {
    0
}
/// Why CUDA cannot be used.
pub fn unavailable_reason() -> Option<String> {
    Some("this build of ferrotorch has no CUDA backend (built without the `cuda` feature)".into())
}
fn unavailable(ordinal: usize) -> Error {
    Error::DeviceUnavailable(Device::Cuda(ordinal))
}
pub fn device_name(ordinal: usize) -> Result<String> {
    Err(unavailable(ordinal))
}
pub fn device_capability(ordinal: usize) -> Result<(i32, i32)> {
    Err(unavailable(ordinal))
}
pub fn synchronize(ordinal: usize) -> Result<()> {
    Err(unavailable(ordinal))
}
pub fn memory_stats(_ordinal: usize) -> MemoryStats {
    MemoryStats::default()
}
pub fn reset_peak_memory_stats(_ordinal: usize) {}
pub fn empty_cache() {}
pub fn set_search_paths(
    _lib_dirs: Vec<std::path::PathBuf>,
    _include_dirs: Vec<std::path::PathBuf>,
) {
}

/// Compile one kernel file with NVRTC (needs the `cuda` feature).
pub fn compile_check_file(_file: &str, _arch: (i32, i32)) -> Result<Vec<String>> {
    Err(Error::Runtime(
        "this build of ferrotorch has no CUDA backend (built without the `cuda` feature)".into(),
    ))
}

pub fn set_allow_tf32(_allow: bool) {}
pub fn allow_tf32() -> bool {
    false
}

/// Uninhabited: no stream exists without the `cuda` feature.
pub enum Stream {}
/// Uninhabited: no event exists without the `cuda` feature.
pub enum Event {}

impl Stream {
    pub fn new(ordinal: usize) -> Result<Stream> {
        Err(unavailable(ordinal))
    }
    pub fn ordinal(&self) -> usize {
        match *self {}
    }
    pub fn synchronize(&self) -> Result<()> {
        match *self {}
    }
    pub fn wait_stream(&self, _other: &Stream) -> Result<()> {
        match *self {}
    }
    pub fn wait_event(&self, _event: &Event) -> Result<()> {
        match *self {}
    }
    pub fn query(&self) -> Result<bool> {
        match *self {}
    }
    pub fn handle(&self) -> u64 {
        match *self {}
    }
    pub fn ptr_eq(&self, _other: &Stream) -> bool {
        match *self {}
    }
}

impl Event {
    pub fn new(ordinal: usize, _enable_timing: bool) -> Result<Event> {
        Err(unavailable(ordinal))
    }
    pub fn record(&self, _stream: &Stream) -> Result<()> {
        match *self {}
    }
    pub fn synchronize(&self) -> Result<()> {
        match *self {}
    }
    pub fn query(&self) -> bool {
        match *self {}
    }
    pub fn elapsed_time(&self, _end: &Event) -> Result<f32> {
        match *self {}
    }
}

pub fn current_stream(ordinal: usize) -> Result<Stream> {
    Err(unavailable(ordinal))
}
pub fn default_stream(ordinal: usize) -> Result<Stream> {
    Err(unavailable(ordinal))
}
pub fn set_current_stream(stream: &Stream) {
    match *stream {}
}
