//! Python bindings (`ferrotorch._C`): argument conversion and class wrappers only, no maths.

mod autograd;
mod convert;
mod creation;
mod cuda;
mod dlpack;
mod linalg;
mod misc_ops;
mod nn_conv;
mod nn_cuda;
mod nn_linear;
mod nn_norm;
mod nn_pool;
mod nn_rnn;
mod numpy_interop;
mod optim;
mod parallel;
mod random;
mod reduce;
mod saved_hooks;
mod tensor;
mod views;

pub use convert::{PyDType, PyDevice};
pub use tensor::PyTensor;

use crate::Error;
use pyo3::exceptions::{
    PyIndexError, PyNotImplementedError, PyRuntimeError, PyTypeError, PyValueError,
};
use pyo3::prelude::*;

impl From<Error> for PyErr {
    fn from(e: Error) -> PyErr {
        let msg = e.to_string();
        match e {
            Error::DimOutOfRange { .. } | Error::Index(_) => PyIndexError::new_err(msg),
            Error::Value(_) => PyValueError::new_err(msg),
            Error::Type(_) => PyTypeError::new_err(msg),
            // PyTorch's dtype-dispatch failures ("... not implemented for 'Long'") are
            // NotImplementedError, itself a RuntimeError subclass.
            Error::UnsupportedDType { .. } | Error::NotImplemented(_) => {
                PyNotImplementedError::new_err(msg)
            }
            Error::Callback(c) => match c.payload.downcast_ref::<PyErr>() {
                Some(original) => Python::attach(|py| original.clone_ref(py)),
                None => PyRuntimeError::new_err(msg),
            },
            _ => PyRuntimeError::new_err(msg),
        }
    }
}

/// Run `f`, turning a Rust panic into a Python RuntimeError instead of aborting.
pub(crate) fn guarded<T>(f: impl FnOnce() -> crate::Result<T>) -> PyResult<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => {
            // An op whose save for backward failed (an inference tensor, a pack hook) fails.
            if let Some(e) = crate::autograd::take_pending_save_error() {
                return Err(e.into());
            }
            r.map_err(PyErr::from)
        }
        Err(p) => {
            // A pending save error belongs to the op that panicked.
            let _ = crate::autograd::take_pending_save_error();
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            Err(PyRuntimeError::new_err(format!(
                "internal error in ferrotorch (please report): {msg}"
            )))
        }
    }
}

/// Elements above which a kernel runs with the GIL released.
pub(crate) const GIL_RELEASE_NUMEL: usize = 1 << 14;

/// Elements (or work) from which a kernel runs on the thread pool: below this, kernels do not
/// parallelise, and moving them to a pool thread costs more than it saves.
pub(crate) const POOL_NUMEL: usize = crate::cpu::strided::PAR_THRESHOLD;

/// Run a kernel: with the GIL released when `numel` is large, and panics caught.
pub(crate) fn run<T: Send>(
    py: Python<'_>,
    numel: usize,
    f: impl FnOnce() -> crate::Result<T> + Send,
) -> PyResult<T> {
    if numel >= POOL_NUMEL {
        // Big kernels run on ferrotorch's resizable pool (`set_num_threads`).
        py.detach(|| crate::parallel::install(|| guarded(f)))
    } else if numel >= GIL_RELEASE_NUMEL {
        // Mid-sized kernels do not split their work (below `PAR_THRESHOLD`): they run on the
        // calling thread, so they pay no hand-off to a pool thread and back.
        py.detach(|| guarded(f))
    } else {
        guarded(f)
    }
}

#[pymodule]
#[pyo3(name = "_C")]
fn ferrotorch_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Silence Rust's default panic message: panics become Python exceptions (see `guarded`).
    std::panic::set_hook(Box::new(|_| {}));
    // Build the kernel thread pool now (rayon's global pool, threads named ferrotorch-N).
    crate::parallel::get_num_threads();
    convert::register(m)?;
    tensor::register(m)?;
    numpy_interop::register(m)?;
    autograd::register(m)?;
    saved_hooks::register(m)?;
    m.add_function(wrap_pyfunction!(_test_panic, m)?)?;
    views::register(m)?;
    creation::register(m)?;
    random::register(m)?;
    parallel::register(m)?;
    dlpack::register(m)?;
    linalg::register(m)?;
    misc_ops::register(m)?;
    reduce::register(m)?;
    nn_conv::register(m)?;
    nn_norm::register(m)?;
    nn_pool::register(m)?;
    nn_rnn::register(m)?;
    optim::register(m)?;
    cuda::register(m)?;
    nn_linear::register(m)?;
    nn_cuda::register(m)?;
    Ok(())
}

/// Deliberately panics inside a guarded kernel call: lets tests check that a Rust panic
/// surfaces as a Python RuntimeError instead of aborting the interpreter.
#[pyfunction]
fn _test_panic(py: Python<'_>) -> PyResult<()> {
    run(py, 0, || -> crate::Result<()> {
        panic!("deliberate test panic")
    })
}
