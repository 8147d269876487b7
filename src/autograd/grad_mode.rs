//! Thread-local grad mode (`no_grad`, `enable_grad`, `set_grad_enabled`, `inference_mode`).

use std::cell::Cell;

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

pub fn is_inference_mode_enabled() -> bool {
    INFERENCE_MODE.with(|g| g.get())
}

pub fn set_inference_mode(enabled: bool) {
    INFERENCE_MODE.with(|g| g.set(enabled));
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
