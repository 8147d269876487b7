//! Finding the driver and the devices: run-time library loading, one lazily created state per
//! device (context, kernel modules, allocator, cuBLAS handle), streams and events.

use super::allocator::CachingAllocator;
use super::compile::KernelFile;
use super::MemoryStats;
use crate::{Error, Result};
use cudarc::driver::{result, CudaContext, CudaFunction, CudaModule, CudaStream};
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

// ------------------------------------------------------------------------------- library search

/// Directories the Python package found (NVIDIA's pip wheels: `nvidia/*/lib`, `*/include`).
#[derive(Default)]
struct SearchPaths {
    lib_dirs: Vec<PathBuf>,
    include_dirs: Vec<PathBuf>,
}

static SEARCH_PATHS: Mutex<SearchPaths> = Mutex::new(SearchPaths {
    lib_dirs: Vec::new(),
    include_dirs: Vec::new(),
});

/// Tell the backend where NVIDIA's libraries and headers may live besides the system paths
/// (the Python package passes the directories of NVIDIA's pip wheels). Call before first use.
pub fn set_search_paths(lib_dirs: Vec<PathBuf>, include_dirs: Vec<PathBuf>) {
    let mut p = SEARCH_PATHS.lock().unwrap_or_else(|e| e.into_inner());
    p.lib_dirs = lib_dirs;
    p.include_dirs = include_dirs;
}

pub(crate) fn include_dirs() -> Vec<PathBuf> {
    let p = SEARCH_PATHS.lock().unwrap_or_else(|e| e.into_inner());
    p.include_dirs.clone()
}

/// Libraries preloaded from the search directories, in dependency order. cudarc opens them
/// by soname (`libnvrtc.so.12`, ...), and the dynamic loader answers such a request with an
/// already loaded library of that soname, so preloading by full path makes pip wheels work
/// without `LD_LIBRARY_PATH`.
const PRELOAD_PREFIXES: [&str; 7] = [
    "libnvrtc-builtins.so",
    "libnvrtc.so",
    "libcublasLt.so",
    "libcublas.so",
    "libnvJitLink.so",
    "libcusparse.so",
    "libcusolver.so",
];

fn preload_libraries() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let dirs = SEARCH_PATHS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .lib_dirs
            .clone();
        for prefix in PRELOAD_PREFIXES {
            for dir in &dirs {
                let Ok(entries) = std::fs::read_dir(dir) else {
                    continue;
                };
                let mut names: Vec<PathBuf> = entries
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| {
                        p.file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n.starts_with(prefix))
                    })
                    .collect();
                names.sort();
                for path in names {
                    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else {
                        continue;
                    };
                    // SAFETY: dlopen of a library file; a failure returns null, which we
                    // ignore (cudarc then searches the system paths and reports what it
                    // could not find). The handle is never closed: the library stays loaded.
                    unsafe {
                        libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL);
                    }
                }
            }
        }
    });
}

/// NVRTC can be loaded (a system CUDA toolkit or NVIDIA's pip wheel).
pub(crate) fn nvrtc_present() -> bool {
    preload_libraries();
    // SAFETY: only probes with dlopen.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// cuBLAS can be loaded.
pub(crate) fn cublas_present() -> bool {
    preload_libraries();
    // SAFETY: only probes with dlopen.
    unsafe { cudarc::cublas::sys::is_culib_present() }
}

/// cuSOLVER can be loaded (probed once: the linalg ops ask on every call).
pub(crate) fn cusolver_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    *PRESENT.get_or_init(|| {
        preload_libraries();
        // SAFETY: only probes with dlopen.
        unsafe { cudarc::cusolver::sys::is_culib_present() }
    })
}

// ------------------------------------------------------------------------------- the driver

/// The number of devices, or why CUDA cannot be used. Probed once.
fn driver_status() -> &'static std::result::Result<usize, String> {
    static STATUS: OnceLock<std::result::Result<usize, String>> = OnceLock::new();
    STATUS.get_or_init(|| {
        preload_libraries();
        // SAFETY: only probes with dlopen; cudarc panics if asked to use a missing library,
        // so every driver call below is guarded by this check.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err("no NVIDIA driver was found (libcuda.so could not be loaded)".into());
        }
        result::init().map_err(|e| format!("the NVIDIA driver failed to initialise ({e})"))?;
        let n = result::device::get_count()
            .map_err(|e| format!("the NVIDIA driver could not count devices ({e})"))?;
        if n <= 0 {
            return Err("the NVIDIA driver reports no CUDA device".into());
        }
        Ok(n as usize)
    })
}

/// True when a CUDA device can be used.
pub fn is_available() -> bool {
    driver_status().is_ok()
}

/// Number of CUDA devices (0 when CUDA is unavailable).
pub fn device_count() -> usize {
    *driver_status().as_ref().unwrap_or(&0)
}

/// Why CUDA cannot be used, or None when it can.
pub fn unavailable_reason() -> Option<String> {
    driver_status().as_ref().err().cloned()
}

/// Everything ferrotorch keeps per device.
pub(crate) struct DeviceState {
    pub ordinal: usize,
    pub ctx: Arc<CudaContext>,
    pub default_stream: Arc<CudaStream>,
    /// Compute capability (major, minor): kernels are compiled for it.
    pub arch: (i32, i32),
    modules: Mutex<HashMap<KernelFile, Arc<CudaModule>>>,
    functions: Mutex<HashMap<String, CudaFunction>>,
    pub allocator: Mutex<CachingAllocator>,
    pub blas: Mutex<Option<super::blas::BlasHandle>>,
    pub solver: Mutex<Option<super::linalg_ops::SolverHandle>>,
}

fn cuda_err(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Runtime(format!("CUDA error: {what}: {e}"))
}

/// The state of device `ordinal`, created on first use.
pub(crate) fn device(ordinal: usize) -> Result<Arc<DeviceState>> {
    type Slot = OnceLock<std::result::Result<Arc<DeviceState>, String>>;
    static DEVICES: OnceLock<Vec<Slot>> = OnceLock::new();
    let count = match driver_status() {
        Ok(n) => *n,
        Err(reason) => {
            return Err(Error::Runtime(format!(
                "device cuda:{ordinal} is not available: {reason}"
            )))
        }
    };
    if ordinal >= count {
        return Err(Error::Runtime(format!(
            "CUDA error: invalid device ordinal: cuda:{ordinal} requested but {count} device(s) found"
        )));
    }
    let slots = DEVICES.get_or_init(|| (0..count).map(|_| OnceLock::new()).collect());
    slots[ordinal]
        .get_or_init(|| init_device(ordinal).map_err(|e| e.to_string()))
        .clone()
        .map_err(Error::Runtime)
}

fn init_device(ordinal: usize) -> Result<Arc<DeviceState>> {
    let ctx = CudaContext::new(ordinal).map_err(|e| cuda_err("creating the context", e))?;
    // We order work with one stream per device (and explicit events), not with cudarc's
    // per-buffer event tracking, which we do not use.
    // SAFETY: no cudarc-managed buffers (CudaSlice) exist in ferrotorch.
    unsafe { ctx.disable_event_tracking() };
    let arch = ctx
        .compute_capability()
        .map_err(|e| cuda_err("reading the compute capability", e))?;
    let default_stream = ctx.default_stream();
    Ok(Arc::new(DeviceState {
        ordinal,
        ctx,
        default_stream,
        arch,
        modules: Mutex::new(HashMap::new()),
        functions: Mutex::new(HashMap::new()),
        allocator: Mutex::new(CachingAllocator::default()),
        blas: Mutex::new(None),
        solver: Mutex::new(None),
    }))
}

impl DeviceState {
    /// Make this device's context current on the calling thread.
    pub fn bind(&self) -> Result<()> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| cuda_err("binding the context", e))
    }

    /// The stream work is queued on: the thread's current stream for this device.
    pub fn stream(&self) -> Arc<CudaStream> {
        CURRENT_STREAMS.with(|m| {
            m.borrow()
                .get(&self.ordinal)
                .cloned()
                .unwrap_or_else(|| self.default_stream.clone())
        })
    }

    /// Kernel `name` from `file`, compiling the file on first use (NVRTC, cached on disk).
    pub fn function(&self, file: KernelFile, name: &str) -> Result<CudaFunction> {
        if let Some(f) = self.lock_functions().get(name) {
            return Ok(f.clone());
        }
        let module = self.module(file)?;
        let f = module
            .load_function(name)
            .map_err(|e| cuda_err(&format!("kernel {name} not found in {}", file.name()), e))?;
        self.lock_functions().insert(name.to_string(), f.clone());
        Ok(f)
    }

    fn lock_functions(&self) -> std::sync::MutexGuard<'_, HashMap<String, CudaFunction>> {
        self.functions.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn module(&self, file: KernelFile) -> Result<Arc<CudaModule>> {
        let mut modules = self.modules.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = modules.get(&file) {
            return Ok(m.clone());
        }
        let ptx = super::compile::ptx_for(file, self.arch)?;
        let m = self
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_src(ptx))
            .map_err(|e| cuda_err(&format!("loading the module of {}", file.name()), e))?;
        modules.insert(file, m.clone());
        Ok(m)
    }

    pub fn lock_allocator(&self) -> std::sync::MutexGuard<'_, CachingAllocator> {
        self.allocator.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Name of device `ordinal` (e.g. "NVIDIA H100 80GB HBM3").
pub fn device_name(ordinal: usize) -> Result<String> {
    device(ordinal)?
        .ctx
        .name()
        .map_err(|e| cuda_err("reading the device name", e))
}

/// Compute capability (major, minor) of device `ordinal`.
pub fn device_capability(ordinal: usize) -> Result<(i32, i32)> {
    Ok(device(ordinal)?.arch)
}

/// Wait until all work queued on device `ordinal` has finished.
pub fn synchronize(ordinal: usize) -> Result<()> {
    let d = device(ordinal)?;
    d.ctx.synchronize().map_err(|e| cuda_err("synchronize", e))
}

/// Allocator counters of device `ordinal` (zeros when it was never used).
pub fn memory_stats(ordinal: usize) -> MemoryStats {
    if !is_available() || ordinal >= device_count() {
        return MemoryStats::default();
    }
    match device(ordinal) {
        Ok(d) => d.lock_allocator().stats(),
        Err(_) => MemoryStats::default(),
    }
}

pub fn reset_peak_memory_stats(ordinal: usize) {
    if let Ok(d) = device(ordinal) {
        d.lock_allocator().reset_peak();
    }
}

/// Return the cached free blocks of every device to the driver.
pub fn empty_cache() {
    for i in 0..device_count() {
        if let Ok(d) = device(i) {
            if d.bind().is_ok() {
                d.lock_allocator().release_cached();
            }
        }
    }
}

// ------------------------------------------------------------------------------- streams, events

thread_local! {
    /// Per-thread current stream of each device (absent: the default stream), as in PyTorch.
    static CURRENT_STREAMS: RefCell<HashMap<usize, Arc<CudaStream>>> = RefCell::new(HashMap::new());
}

/// A CUDA stream of one device (`ferrotorch.cuda.Stream`).
#[derive(Clone)]
pub struct Stream {
    ordinal: usize,
    inner: Arc<CudaStream>,
}

impl Stream {
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }
    /// A new stream on device `ordinal`.
    pub fn new(ordinal: usize) -> Result<Stream> {
        let d = device(ordinal)?;
        let inner = d
            .ctx
            .new_stream()
            .map_err(|e| cuda_err("creating a stream", e))?;
        Ok(Stream { ordinal, inner })
    }
    /// Block the host until the stream's queued work is done.
    pub fn synchronize(&self) -> Result<()> {
        self.inner
            .synchronize()
            .map_err(|e| cuda_err("stream synchronize", e))
    }
    /// Make future work on this stream wait for the work queued so far on `other`.
    pub fn wait_stream(&self, other: &Stream) -> Result<()> {
        self.inner
            .join(&other.inner)
            .map_err(|e| cuda_err("stream wait", e))
    }
    /// Make future work on this stream wait for `event`.
    pub fn wait_event(&self, event: &Event) -> Result<()> {
        self.inner
            .wait(&event.inner)
            .map_err(|e| cuda_err("stream wait event", e))
    }
    /// True when all queued work has finished.
    pub fn query(&self) -> Result<bool> {
        let ev = Event::new(self.ordinal, false)?;
        ev.record(self)?;
        Ok(ev.inner.is_complete())
    }
    /// The raw `CUstream` handle as an integer (`cuda_stream` in PyTorch).
    pub fn handle(&self) -> u64 {
        self.inner.cu_stream() as u64
    }
    pub fn ptr_eq(&self, other: &Stream) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

/// The thread's current stream of device `ordinal`.
pub fn current_stream(ordinal: usize) -> Result<Stream> {
    let d = device(ordinal)?;
    Ok(Stream {
        ordinal,
        inner: d.stream(),
    })
}

/// The default stream of device `ordinal`.
pub fn default_stream(ordinal: usize) -> Result<Stream> {
    let d = device(ordinal)?;
    Ok(Stream {
        ordinal,
        inner: d.default_stream.clone(),
    })
}

/// Make `stream` the calling thread's current stream of its device.
pub fn set_current_stream(stream: &Stream) {
    CURRENT_STREAMS.with(|m| {
        m.borrow_mut().insert(stream.ordinal, stream.inner.clone());
    });
}

/// A CUDA event (`ferrotorch.cuda.Event`), for timing and cross-stream ordering.
pub struct Event {
    inner: cudarc::driver::CudaEvent,
}

impl Event {
    pub fn new(ordinal: usize, enable_timing: bool) -> Result<Event> {
        use cudarc::driver::sys::CUevent_flags;
        let d = device(ordinal)?;
        let flags = if enable_timing {
            CUevent_flags::CU_EVENT_DEFAULT
        } else {
            CUevent_flags::CU_EVENT_DISABLE_TIMING
        };
        let inner = d
            .ctx
            .new_event(Some(flags))
            .map_err(|e| cuda_err("creating an event", e))?;
        Ok(Event { inner })
    }
    pub fn record(&self, stream: &Stream) -> Result<()> {
        self.inner
            .record(&stream.inner)
            .map_err(|e| cuda_err("event record", e))
    }
    pub fn synchronize(&self) -> Result<()> {
        self.inner
            .synchronize()
            .map_err(|e| cuda_err("event synchronize", e))
    }
    pub fn query(&self) -> bool {
        self.inner.is_complete()
    }
    /// Milliseconds between `self` and the later event `end` (both recorded, with timing).
    pub fn elapsed_time(&self, end: &Event) -> Result<f32> {
        self.inner
            .elapsed_ms(&end.inner)
            .map_err(|e| cuda_err("event elapsed_time", e))
    }
}
