//! The thread pool CPU kernels run on, resizable at run time (`torch.set_num_threads`).
//!
//! Rayon's global pool cannot be resized once built, so ferrotorch keeps its own pool behind
//! a lock and replaces it when the thread count changes. Kernels reach it through
//! [`install`]: inside, `rayon::current_num_threads()` and every parallel iterator use this
//! pool. The Python bindings run large kernels inside `install`; small kernels (which never
//! split work) run on the calling thread.

use crate::autograd::grad_mode;
use crate::{Error, Result};
use rayon::{ThreadPool, ThreadPoolBuilder};
use std::sync::{Arc, LazyLock, RwLock};

fn build(n: usize) -> Result<Arc<ThreadPool>> {
    ThreadPoolBuilder::new()
        .num_threads(n)
        .thread_name(|i| format!("ferrotorch-{i}"))
        .build()
        .map(Arc::new)
        .map_err(|e| Error::Runtime(format!("could not start {n} worker threads: {e}")))
}

/// Number of logical cores (the default thread count).
pub fn default_num_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

static POOL: LazyLock<RwLock<Option<Arc<ThreadPool>>>> = LazyLock::new(|| RwLock::new(None));

/// The current pool (built on first use with one thread per core).
pub fn pool() -> Result<Arc<ThreadPool>> {
    if let Some(p) = POOL.read().unwrap_or_else(|e| e.into_inner()).as_ref() {
        return Ok(p.clone());
    }
    let mut w = POOL.write().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = w.as_ref() {
        return Ok(p.clone());
    }
    let p = build(default_num_threads())?;
    *w = Some(p.clone());
    Ok(p)
}

/// Use `n` threads for CPU kernels from now on (`torch.set_num_threads`). Kernels already
/// running finish on the old pool.
pub fn set_num_threads(n: usize) -> Result<()> {
    if n == 0 {
        return Err(Error::Runtime(
            "set_num_threads expects a positive integer".into(),
        ));
    }
    if POOL
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .is_some_and(|p| p.current_num_threads() == n)
    {
        return Ok(());
    }
    let p = build(n)?;
    *POOL.write().unwrap_or_else(|e| e.into_inner()) = Some(p);
    Ok(())
}

/// Threads CPU kernels use (`torch.get_num_threads`).
pub fn get_num_threads() -> usize {
    match POOL.read().unwrap_or_else(|e| e.into_inner()).as_ref() {
        Some(p) => p.current_num_threads(),
        None => default_num_threads(),
    }
}

/// Run `f` on ferrotorch's pool (so its parallel iterators use the configured threads).
/// Already inside a pool worker, `f` just runs. Grad mode and inference mode are
/// thread-local, so the caller's modes travel with `f` onto the worker thread (otherwise an op
/// under `no_grad` would record a graph, or an optimizer's in-place update hit the leaf check).
pub fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    if rayon::current_thread_index().is_some() {
        return f();
    }
    let grad_enabled = grad_mode::is_grad_enabled();
    let inference = grad_mode::is_inference_mode_enabled();
    let with_callers_modes = move || {
        let _grad = grad_mode::GradModeGuard::new(grad_enabled);
        let _inference = grad_mode::InferenceModeGuard::new(inference);
        f()
    };
    match pool() {
        Ok(p) => p.install(with_callers_modes),
        Err(_) => with_callers_modes(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_get_install() {
        set_num_threads(3).unwrap();
        assert_eq!(get_num_threads(), 3);
        assert_eq!(install(rayon::current_num_threads), 3);
        assert!(set_num_threads(0).is_err());
        set_num_threads(default_num_threads()).unwrap();
        assert_eq!(get_num_threads(), default_num_threads());
    }

    #[test]
    fn install_carries_grad_mode() {
        crate::no_grad(|| assert!(!install(grad_mode::is_grad_enabled)));
        assert!(install(grad_mode::is_grad_enabled));
    }
}
