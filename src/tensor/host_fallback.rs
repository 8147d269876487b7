//! Host fallback for ops that have no CUDA kernel yet.
//!
//! Such an op copies its CUDA operands to the host, runs the CPU kernel and copies the
//! results back to the operands' device, so a program that uses it on the GPU runs (slowly:
//! two transfers and a synchronisation) and its results stay on the device, instead of
//! stopping with "not implemented for CUDA". PyTorch's MPS backend has the same escape hatch
//! (`PYTORCH_ENABLE_MPS_FALLBACK`); here it is on by default because the aim is that PyTorch
//! programs run unchanged.
//!
//! `ferrotorch._C._cuda_host_fallback_ops()` lists the ops that took this path in the
//! process, and `FERROTORCH_CUDA_HOST_FALLBACK=0` turns the fallback off (the op then raises
//! the usual "not implemented for CUDA tensors yet" RuntimeError), for finding slow spots.
//!
//! Only the `*_raw` compute functions use it: autograd records the op around them as for
//! any other device, and the backward formulas run on the device.

use super::Tensor;
use crate::{Device, Error, Result};
use std::collections::BTreeSet;
use std::sync::{Mutex, OnceLock};

static USED: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());

fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        std::env::var("FERROTORCH_CUDA_HOST_FALLBACK").map_or(true, |v| v.trim() != "0")
    })
}

/// The ops that ran through the host fallback so far, sorted.
pub fn host_fallback_ops() -> Vec<&'static str> {
    USED.lock()
        .map(|s| s.iter().copied().collect())
        .unwrap_or_default()
}

/// Results that can be moved back to the device.
pub(crate) trait ToDevice: Sized {
    fn to_dev(self, device: Device) -> Result<Self>;
}

impl ToDevice for Tensor {
    fn to_dev(self, device: Device) -> Result<Self> {
        crate::cuda::ops::to_device(&self, device)
    }
}

impl<A: ToDevice, B: ToDevice> ToDevice for (A, B) {
    fn to_dev(self, device: Device) -> Result<Self> {
        Ok((self.0.to_dev(device)?, self.1.to_dev(device)?))
    }
}

impl<A: ToDevice, B: ToDevice, C: ToDevice> ToDevice for (A, B, C) {
    fn to_dev(self, device: Device) -> Result<Self> {
        Ok((
            self.0.to_dev(device)?,
            self.1.to_dev(device)?,
            self.2.to_dev(device)?,
        ))
    }
}

impl ToDevice for super::Lstsq {
    fn to_dev(self, device: Device) -> Result<Self> {
        Ok(super::Lstsq {
            solution: self.solution.to_dev(device)?,
            residuals: self.residuals.to_dev(device)?,
            rank: self.rank.to_dev(device)?,
            singular_values: self.singular_values.to_dev(device)?,
        })
    }
}

impl<A: ToDevice> ToDevice for Option<A> {
    fn to_dev(self, device: Device) -> Result<Self> {
        self.map(|a| a.to_dev(device)).transpose()
    }
}

impl<A: ToDevice> ToDevice for Vec<A> {
    fn to_dev(self, device: Device) -> Result<Self> {
        self.into_iter().map(|a| a.to_dev(device)).collect()
    }
}

impl ToDevice for super::Unique {
    fn to_dev(self, device: Device) -> Result<Self> {
        Ok(super::Unique {
            values: self.values.to_dev(device)?,
            inverse: self.inverse.to_dev(device)?,
            counts: self.counts.to_dev(device)?,
        })
    }
}

/// The CUDA device of the first CUDA tensor among `ts`, if any.
pub(crate) fn cuda_device(ts: &[&Tensor]) -> Option<Device> {
    ts.iter().map(|t| t.device()).find(|d| d.is_cuda())
}

/// A host copy of `t` (no autograd record: the fallback runs inside `*_raw` functions).
pub(crate) fn host(t: &Tensor) -> Result<Tensor> {
    crate::cuda::ops::to_device(t, Device::Cpu)
}

/// Every tensor of `ts` is on `device`, or is a 0-d CPU tensor (which mixes like a scalar).
pub(crate) fn check_devices(op: &'static str, device: Device, ts: &[&Tensor]) -> Result<()> {
    for t in ts {
        let d = t.device();
        if d != device && !(d == Device::Cpu && t.ndim() == 0) {
            return Err(Error::DeviceMismatch {
                op,
                lhs: device,
                rhs: d,
            });
        }
    }
    Ok(())
}

/// Run `cpu_op` (which must read host copies of the operands) and move its results to
/// `device`; or, with the fallback turned off, the usual error.
pub(crate) fn via_host<R: ToDevice>(
    op: &'static str,
    device: Device,
    cpu_op: impl FnOnce() -> Result<R>,
) -> Result<R> {
    if !enabled() {
        return Err(Error::Runtime(format!(
            "{op} is not implemented for CUDA tensors yet (tensor on {device}); move it to the CPU with .cpu(), or unset FERROTORCH_CUDA_HOST_FALLBACK to let ferrotorch do so"
        )));
    }
    if let Ok(mut used) = USED.lock() {
        used.insert(op);
    }
    cpu_op()?.to_dev(device)
}

/// The common shape of a fallback: when some of `operands` is on a CUDA device, check that
/// they agree, and run `cpu_op` on host copies of them (passed in the same order).
macro_rules! cuda_via_host {
    ($op:expr, [$($t:expr),+ $(,)?], |$($h:ident),+| $body:expr) => {
        if let Some(device) = $crate::tensor::host_fallback::cuda_device(&[$($t),+]) {
            $crate::tensor::host_fallback::check_devices($op, device, &[$($t),+])?;
            let ($($h,)+) = ($($crate::tensor::host_fallback::host($t)?,)+);
            return $crate::tensor::host_fallback::via_host($op, device, move || $body);
        }
    };
}
pub(crate) use cuda_via_host;
