//! Bindings of `crate::cuda` for `ferrotorch.cuda` and `ferrotorch.backends`: device queries,
//! memory counters, streams and events. The Python package adds the PyTorch-shaped API.

use super::tensor::PyTensor;
use crate::cuda;
use pyo3::prelude::*;
use std::path::PathBuf;

#[pyfunction]
fn _cuda_is_available() -> bool {
    cuda::is_available()
}

#[pyfunction]
fn _cuda_device_count() -> usize {
    cuda::device_count()
}

/// The ops that had no CUDA kernel and ran on host copies so far in this process (see
/// `tensor::host_fallback`), sorted.
#[pyfunction]
fn _cuda_host_fallback_ops() -> Vec<&'static str> {
    crate::tensor::host_fallback::host_fallback_ops()
}

/// `-t` computed through the host fallback under the name "fallback_probe": lets tests check
/// the fallback itself (results back on the device, the op listed, the switch that turns it
/// off) without depending on which real ops still lack a device path.
#[pyfunction]
fn _cuda_host_fallback_probe(t: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
    use crate::tensor::host_fallback::{host, via_host};
    use crate::UnaryOp;
    let t = &t.inner;
    let r = if t.device().is_cuda() {
        via_host("fallback_probe", t.device(), || {
            host(t)?.unary(UnaryOp::Neg)
        })
    } else {
        t.unary(UnaryOp::Neg)
    };
    Ok(r?.into())
}

/// Why CUDA cannot be used (None when it can).
#[pyfunction]
fn _cuda_unavailable_reason() -> Option<String> {
    cuda::unavailable_reason()
}

#[pyfunction]
fn _cuda_get_device_name(device: usize) -> PyResult<String> {
    Ok(cuda::device_name(device)?)
}

#[pyfunction]
fn _cuda_get_device_capability(device: usize) -> PyResult<(i32, i32)> {
    Ok(cuda::device_capability(device)?)
}

#[pyfunction]
fn _cuda_synchronize(py: Python<'_>, device: usize) -> PyResult<()> {
    Ok(py.detach(|| cuda::synchronize(device))?)
}

/// (allocated, peak allocated, reserved) bytes of `device`.
#[pyfunction]
fn _cuda_memory_stats(device: usize) -> (usize, usize, usize) {
    let s = cuda::memory_stats(device);
    (s.allocated, s.peak_allocated, s.reserved)
}

#[pyfunction]
fn _cuda_reset_peak_memory_stats(device: usize) {
    cuda::reset_peak_memory_stats(device)
}

#[pyfunction]
fn _cuda_empty_cache(py: Python<'_>) {
    py.detach(cuda::empty_cache)
}

/// Directories of NVIDIA's libraries and headers found by the Python package (pip wheels).
#[pyfunction]
fn _cuda_set_search_paths(lib_dirs: Vec<PathBuf>, include_dirs: Vec<PathBuf>) {
    cuda::set_search_paths(lib_dirs, include_dirs)
}

/// Compile `cuda_kernels/<file>` with NVRTC for compute capability `arch` (no GPU needed)
/// and return the kernel names in the PTX.
#[pyfunction]
fn _cuda_compile_check(py: Python<'_>, file: String, arch: (i32, i32)) -> PyResult<Vec<String>> {
    Ok(py.detach(|| cuda::compile_check_file(&file, arch))?)
}

#[pyfunction]
fn _cuda_set_allow_tf32(allow: bool) {
    cuda::set_allow_tf32(allow)
}

#[pyfunction]
fn _cuda_allow_tf32() -> bool {
    cuda::allow_tf32()
}

/// A CUDA stream (wrapped by `ferrotorch.cuda.Stream`).
#[pyclass(name = "_CudaStream", module = "ferrotorch._C", frozen)]
pub struct PyCudaStream {
    inner: cuda::Stream,
}

#[pymethods]
impl PyCudaStream {
    /// A new stream on `device`.
    #[new]
    fn py_new(device: usize) -> PyResult<Self> {
        Ok(PyCudaStream {
            inner: cuda::Stream::new(device)?,
        })
    }
    #[staticmethod]
    fn current(device: usize) -> PyResult<Self> {
        Ok(PyCudaStream {
            inner: cuda::current_stream(device)?,
        })
    }
    #[staticmethod]
    fn default(device: usize) -> PyResult<Self> {
        Ok(PyCudaStream {
            inner: cuda::default_stream(device)?,
        })
    }
    /// Make this stream the calling thread's current stream of its device.
    fn make_current(&self) {
        cuda::set_current_stream(&self.inner)
    }
    #[getter]
    fn device_index(&self) -> usize {
        self.inner.ordinal()
    }
    #[getter]
    fn cuda_stream(&self) -> u64 {
        self.inner.handle()
    }
    fn synchronize(&self, py: Python<'_>) -> PyResult<()> {
        Ok(py.detach(|| self.inner.synchronize())?)
    }
    fn wait_stream(&self, other: &PyCudaStream) -> PyResult<()> {
        Ok(self.inner.wait_stream(&other.inner)?)
    }
    fn wait_event(&self, event: &PyCudaEvent) -> PyResult<()> {
        Ok(self.inner.wait_event(&event.inner)?)
    }
    fn query(&self) -> PyResult<bool> {
        Ok(self.inner.query()?)
    }
    fn same(&self, other: &PyCudaStream) -> bool {
        self.inner.ptr_eq(&other.inner)
    }
}

/// A CUDA event (wrapped by `ferrotorch.cuda.Event`).
#[pyclass(name = "_CudaEvent", module = "ferrotorch._C", frozen)]
pub struct PyCudaEvent {
    inner: cuda::Event,
}

#[pymethods]
impl PyCudaEvent {
    #[new]
    fn py_new(device: usize, enable_timing: bool) -> PyResult<Self> {
        Ok(PyCudaEvent {
            inner: cuda::Event::new(device, enable_timing)?,
        })
    }
    fn record(&self, stream: &PyCudaStream) -> PyResult<()> {
        Ok(self.inner.record(&stream.inner)?)
    }
    fn synchronize(&self, py: Python<'_>) -> PyResult<()> {
        Ok(py.detach(|| self.inner.synchronize())?)
    }
    fn query(&self) -> bool {
        self.inner.query()
    }
    fn elapsed_time(&self, end: &PyCudaEvent) -> PyResult<f32> {
        Ok(self.inner.elapsed_time(&end.inner)?)
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_cuda_is_available, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_device_count, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_unavailable_reason, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_host_fallback_ops, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_host_fallback_probe, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_get_device_name, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_get_device_capability, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_synchronize, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_memory_stats, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_reset_peak_memory_stats, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_empty_cache, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_set_search_paths, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_compile_check, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_set_allow_tf32, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_allow_tf32, m)?)?;
    m.add("_cuda_built", cfg!(feature = "cuda"))?;
    m.add_class::<PyCudaStream>()?;
    m.add_class::<PyCudaEvent>()?;
    Ok(())
}
