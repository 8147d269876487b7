//! Anomaly detection (`autograd.set_detect_anomaly`, PyTorch's semantics): while it is on,
//! the engine checks every gradient a backward formula returns for NaN, and each node records
//! where in the program it was created, so an error in backward reports the forward call that
//! made the failing node. Off by default (the checks cost a pass over every gradient).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

static ENABLED: AtomicBool = AtomicBool::new(false);
static CHECK_NAN: AtomicBool = AtomicBool::new(true);

/// Captures the caller's stack (the Python binding installs one), or None.
pub type CaptureFn = fn() -> Option<String>;
/// Reports an anomaly message without failing (the Python binding emits a UserWarning).
pub type ReportFn = fn(&str);

static CAPTURE: OnceLock<CaptureFn> = OnceLock::new();
static REPORT: OnceLock<ReportFn> = OnceLock::new();

/// Turn anomaly detection on or off; `check_nan` selects the NaN checks of gradients.
pub fn set_detect_anomaly(enabled: bool, check_nan: bool) {
    ENABLED.store(enabled, Ordering::Relaxed);
    CHECK_NAN.store(check_nan, Ordering::Relaxed);
}

pub fn is_anomaly_enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

pub fn is_anomaly_check_nan_enabled() -> bool {
    CHECK_NAN.load(Ordering::Relaxed)
}

/// Install the stack capture and the report functions (once; later calls are ignored).
pub fn set_hooks(capture: CaptureFn, report: ReportFn) {
    let _ = CAPTURE.set(capture);
    let _ = REPORT.set(report);
}

/// The creation trace of a new node: only recorded in anomaly mode.
pub(crate) fn capture_trace() -> Option<String> {
    if !is_anomaly_enabled() {
        return None;
    }
    CAPTURE.get().and_then(|f| f())
}

/// Report that `node_name` failed in backward, with the trace of its forward call.
pub(crate) fn report_failure(node_name: &str, trace: Option<&str>) {
    let Some(trace) = trace else { return };
    if let Some(report) = REPORT.get() {
        report(&format!(
            "Error detected in {node_name}. Traceback of forward call that caused the error:\n{trace}"
        ));
    }
}
