//! Thread-local grad mode (`no_grad`, `enable_grad`, `set_grad_enabled`, `inference_mode`).

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
    static INFERENCE_MODE: Cell<bool> = const { Cell::new(false) };
}

/// Whether ops record autograd nodes on this thread.
pub fn is_grad_enabled() -> bool {
    GRAD_ENABLED.with(|g| g.get())
}

pub fn set_grad_enabled(enabled: bool) {
    GRAD_ENABLED.with(|g| g.set(enabled));
}

/// How many threads have inference mode on. Every new tensor asks whether it is made in
/// inference mode; while no thread is, that is this one load instead of a thread-local read
/// (which in the Python extension, a dlopen'ed library, goes through `__tls_get_addr`).
static INFERENCE_THREADS: AtomicUsize = AtomicUsize::new(0);

pub fn is_inference_mode_enabled() -> bool {
    INFERENCE_THREADS.load(Ordering::Relaxed) != 0 && INFERENCE_MODE.with(|g| g.get())
}

pub fn set_inference_mode(enabled: bool) {
    let prev = INFERENCE_MODE.with(|g| g.replace(enabled));
    match (prev, enabled) {
        (false, true) => INFERENCE_THREADS.fetch_add(1, Ordering::Relaxed),
        (true, false) => INFERENCE_THREADS.fetch_sub(1, Ordering::Relaxed),
        _ => 0,
    };
}

/// Sets grad mode for its lifetime and restores the previous mode on drop.
pub struct GradModeGuard {
    prev: bool,
}

impl GradModeGuard {
    pub fn new(enabled: bool) -> Self {
        let prev = is_grad_enabled();
        set_grad_enabled(enabled);
        GradModeGuard { prev }
    }
}

impl Drop for GradModeGuard {
    fn drop(&mut self) {
        set_grad_enabled(self.prev);
    }
}

/// Sets inference mode for its lifetime and restores the previous mode on drop.
pub struct InferenceModeGuard {
    prev: bool,
}

impl InferenceModeGuard {
    pub fn new(enabled: bool) -> Self {
        let prev = is_inference_mode_enabled();
        set_inference_mode(enabled);
        InferenceModeGuard { prev }
    }
}

impl Drop for InferenceModeGuard {
    fn drop(&mut self) {
        set_inference_mode(self.prev);
    }
}

/// Run `f` with gradient recording off (`torch.no_grad()`).
pub fn no_grad<T>(f: impl FnOnce() -> T) -> T {
    let _g = GradModeGuard::new(false);
    f()
}
