//! The thread pool CPU kernels run on, resizable at run time (`torch.set_num_threads`).
//!
//! By default kernels use rayon's global pool, which ferrotorch builds on first use (one
//! thread per core, named `ferrotorch-N`): a kernel runs on the calling thread and only its
//! parallel loops hand work to the pool, so small ops and the autograd engine's bookkeeping
//! pay no thread hop. Every parallel loop lands on that one pool, wherever it is called from
//! (forward, backward, optimizer). Rayon's global pool cannot be resized, so
//! `set_num_threads(n)` with another count builds a separate pool, and [`install`] runs
//! kernels inside it until the count is set back.

use crate::autograd::grad_mode;
use crate::{Error, Result};
use rayon::{ThreadPool, ThreadPoolBuilder};
use std::sync::{Arc, LazyLock, OnceLock, RwLock};

fn thread_name(i: usize) -> String {
    format!("ferrotorch-{i}")
}

fn build(n: usize) -> Result<Arc<ThreadPool>> {
    ThreadPoolBuilder::new()
        .num_threads(n)
        .thread_name(thread_name)
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

/// Threads of rayon's global pool, fixed when it is built.
static GLOBAL_THREADS: OnceLock<usize> = OnceLock::new();

/// Build rayon's global pool with ferrotorch's thread names (once). If rayon already built
/// its default one (a Rust program that used rayon first), kernels use that.
fn global_num_threads() -> usize {
    *GLOBAL_THREADS.get_or_init(|| {
        let n = default_num_threads();
        let built = ThreadPoolBuilder::new()
            .num_threads(n)
            .thread_name(thread_name)
            .build_global();
        match built {
            Ok(()) => n,
            Err(_) => rayon::current_num_threads(),
        }
    })
}

/// The pool for a thread count other than the global pool's (`None`: use the global pool).
static CUSTOM: LazyLock<RwLock<Option<Arc<ThreadPool>>>> = LazyLock::new(|| RwLock::new(None));

fn custom_pool() -> Option<Arc<ThreadPool>> {
    CUSTOM.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Use `n` threads for CPU kernels from now on (`torch.set_num_threads`). Kernels already
/// running finish on the old pool.
pub fn set_num_threads(n: usize) -> Result<()> {
    if n == 0 {
        return Err(Error::Runtime(
            "set_num_threads expects a positive integer".into(),
        ));
    }
    if n == get_num_threads() {
        return Ok(());
    }
    let p = if n == global_num_threads() {
        None
    } else {
        Some(build(n)?)
    };
    *CUSTOM.write().unwrap_or_else(|e| e.into_inner()) = p;
    Ok(())
}

/// Threads CPU kernels use (`torch.get_num_threads`).
pub fn get_num_threads() -> usize {
    match custom_pool() {
        Some(p) => p.current_num_threads(),
        None => global_num_threads(),
    }
}

/// Run `f` so that its parallel loops use the configured threads: on the calling thread
/// with the global pool (the default), inside the separate pool after `set_num_threads`
/// changed the count. Already inside a pool worker, `f` just runs. Grad mode and inference
/// mode are thread-local, so the caller's modes travel with `f` onto a worker thread
/// (otherwise an op under `no_grad` would record a graph, or an optimizer's in-place update
/// hit the leaf check).
pub fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    if rayon::current_thread_index().is_none() && custom_pool().is_none() {
        global_num_threads(); // make sure the global pool is ours before a kernel uses it
        return f();
    }
    on_pool(f)
}

/// Run `f` on a thread of the kernel pool (the global pool, or the one `set_num_threads`
/// built), carrying the caller's grad modes. Worth it for a long sequence of kernels (a
/// backward pass): their parallel loops then start from a pool thread, so the calling thread
/// is not woken and put back to sleep around each one.
pub fn on_pool<R: Send>(f: impl FnOnce() -> R + Send) -> R {
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
    match custom_pool() {
        Some(pool) => pool.install(with_callers_modes),
        None => {
            global_num_threads();
            // `scope` called from outside the pool runs its body on a pool thread.
            rayon::scope(|_| with_callers_modes())
        }
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
    fn on_pool_runs_on_a_worker_with_the_callers_modes() {
        assert!(on_pool(|| rayon::current_thread_index().is_some()));
        crate::no_grad(|| assert!(!on_pool(grad_mode::is_grad_enabled)));
        assert!(on_pool(grad_mode::is_grad_enabled));
    }

    #[test]
    fn install_carries_grad_mode() {
        crate::no_grad(|| assert!(!install(grad_mode::is_grad_enabled)));
        assert!(install(grad_mode::is_grad_enabled));
    }
}
