//! One error type for the whole crate. Variants carry what went wrong (shapes, dtypes,
//! devices) so messages can name them; the Python layer maps each variant to the
//! exception class PyTorch would raise.

use crate::{DType, Device};
use std::fmt;

/// Every fallible operation in ferrotorch returns this error.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// Two shapes that had to agree (broadcast, matmul, cat...) did not. -> RuntimeError
    ShapeMismatch {
        op: &'static str,
        lhs: Vec<usize>,
        rhs: Vec<usize>,
        msg: String,
    },
    /// A shape argument is invalid on its own (view of wrong numel, negative size...). -> RuntimeError
    InvalidShape { op: &'static str, msg: String },
    /// The op does not support this dtype. -> NotImplementedError (a RuntimeError subclass), as
    /// PyTorch's "not implemented for 'Bool'"
    UnsupportedDType { op: &'static str, dtype: DType },
    /// Two dtypes that had to agree did not. -> RuntimeError
    DTypeMismatch {
        op: &'static str,
        expected: DType,
        got: DType,
    },
    /// Tensors on different devices met in one op. -> RuntimeError
    DeviceMismatch {
        op: &'static str,
        lhs: Device,
        rhs: Device,
    },
    /// The device is not available in this build / on this machine. -> RuntimeError
    DeviceUnavailable(Device),
    /// A dimension index outside `[-ndim, ndim)`. -> IndexError
    DimOutOfRange { dim: i64, ndim: usize },
    /// An index outside the size of a dimension. -> IndexError
    Index(String),
    /// An argument of the right type with a wrong value. -> ValueError
    Value(String),
    /// An argument of the wrong type. -> TypeError
    Type(String),
    /// Anything else PyTorch reports as a RuntimeError.
    Runtime(String),
    /// A case PyTorch itself leaves unimplemented (e.g. a derivative it does not define).
    /// -> NotImplementedError (a RuntimeError subclass)
    NotImplemented(String),
    /// An error raised by user code the engine called back (a hook, a custom backward): the
    /// Python layer re-raises the original exception, as PyTorch does.
    Callback(CallbackError),
}

/// The error of a user callback: its message, and the original error object (for Python, the
/// exception) kept opaque so the core needs no Python types.
#[derive(Clone)]
pub struct CallbackError {
    pub message: String,
    pub payload: std::sync::Arc<dyn std::any::Any + Send + Sync>,
}

impl fmt::Debug for CallbackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("CallbackError").field(&self.message).finish()
    }
}

impl PartialEq for CallbackError {
    fn eq(&self, other: &Self) -> bool {
        self.message == other.message && std::sync::Arc::ptr_eq(&self.payload, &other.payload)
    }
}

/// `Result<T, ferrotorch::Error>`.
pub type Result<T> = std::result::Result<T, Error>;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::ShapeMismatch { op, lhs, rhs, msg } => {
                write!(f, "{op}: {msg} (shapes {lhs:?} and {rhs:?})")
            }
            Error::InvalidShape { op, msg } => write!(f, "{op}: {msg}"),
            Error::UnsupportedDType { op, dtype } => {
                write!(f, "\"{op}\" not implemented for '{}'", dtype.torch_name())
            }
            Error::DTypeMismatch { op, expected, got } => write!(
                f,
                "{op}: expected dtype {} but got {}",
                expected.python_name(),
                got.python_name()
            ),
            Error::DeviceMismatch { op, lhs, rhs } => write!(
                f,
                "Expected all tensors to be on the same device, but found at least two devices, {lhs} and {rhs}! (when checking arguments for {op})"
            ),
            Error::DeviceUnavailable(d) => write!(
                f,
                "device {d} is not available: this build of ferrotorch has no CUDA backend or no CUDA device was found"
            ),
            Error::DimOutOfRange { dim, ndim } => {
                if *ndim == 0 {
                    write!(
                        f,
                        "Dimension specified as {dim} but tensor has no dimensions"
                    )
                } else {
                    write!(
                        f,
                        "Dimension out of range (expected to be in range of [{}, {}], but got {dim})",
                        -(*ndim as i64),
                        *ndim as i64 - 1
                    )
                }
            }
            Error::Index(m)
            | Error::Value(m)
            | Error::Type(m)
            | Error::Runtime(m)
            | Error::NotImplemented(m) => {
                f.write_str(m)
            }
            Error::Callback(c) => f.write_str(&c.message),
        }
    }
}

impl std::error::Error for Error {}

impl Error {
    pub(crate) fn shape(
        op: &'static str,
        lhs: &[usize],
        rhs: &[usize],
        msg: impl Into<String>,
    ) -> Self {
        Error::ShapeMismatch {
            op,
            lhs: lhs.to_vec(),
            rhs: rhs.to_vec(),
            msg: msg.into(),
        }
    }
    pub(crate) fn invalid(op: &'static str, msg: impl Into<String>) -> Self {
        Error::InvalidShape {
            op,
            msg: msg.into(),
        }
    }
}

/// Return early with a `Runtime` error built from a format string.
#[macro_export]
macro_rules! bail {
    ($($arg:tt)*) => { return Err($crate::Error::Runtime(format!($($arg)*))) };
}
