//! Where a tensor's storage lives.

use crate::{Error, Result};
use std::fmt;

/// A device: the CPU, or CUDA device number `n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Device {
    #[default]
    Cpu,
    Cuda(usize),
}

impl Device {
    /// Parse `"cpu"`, `"cuda"`, `"cuda:1"`.
    pub fn parse(s: &str) -> Result<Device> {
        let s = s.trim();
        match s {
            "cpu" => Ok(Device::Cpu),
            "cuda" => Ok(Device::Cuda(0)),
            _ => {
                if let Some(n) = s.strip_prefix("cuda:") {
                    n.parse::<usize>()
                        .map(Device::Cuda)
                        .map_err(|_| Error::Runtime(format!("Invalid device string: '{s}'")))
                } else if let Some(n) = s.strip_prefix("cpu:") {
                    match n.parse::<usize>() {
                        Ok(0) => Ok(Device::Cpu),
                        _ => Err(Error::Runtime(format!("Invalid device string: '{s}'"))),
                    }
                } else {
                    Err(Error::Runtime(format!(
                        "Expected one of cpu, cuda device type at start of device string: {s}"
                    )))
                }
            }
        }
    }
    /// "cpu" or "cuda".
    pub fn type_name(&self) -> &'static str {
        match self {
            Device::Cpu => "cpu",
            Device::Cuda(_) => "cuda",
        }
    }
    pub fn index(&self) -> Option<usize> {
        match self {
            Device::Cpu => None,
            Device::Cuda(n) => Some(*n),
        }
    }
    pub fn is_cuda(&self) -> bool {
        matches!(self, Device::Cuda(_))
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
            Device::Cuda(n) => write!(f, "cuda:{n}"),
        }
    }
}
