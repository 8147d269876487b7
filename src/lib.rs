//! # ferrotorch
//!
//! A PyTorch-style tensor engine: strided tensors with zero-copy views, broadcasting and type
//! promotion, rayon-parallel CPU kernels. Usable as a plain Rust crate; with the `python`
//! feature it is also the native module `ferrotorch._C`.
//!
//! ```
//! use ferrotorch::{Tensor, DType, BinaryOp};
//! let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
//! let b = Tensor::ones(&[2], DType::F32);
//! let c = a.binary(&b, BinaryOp::Add).unwrap(); // broadcasts [2] over [2, 2]
//! assert_eq!(c.to_vec::<f32>().unwrap(), vec![2.0, 3.0, 4.0, 5.0]);
//! ```

// Kernels are written once per element type via `with_dtype!`, which also instantiates them
// for `bool`; order comparisons on bool are intended there.
#![allow(clippy::bool_comparison)]

pub mod autograd;
pub mod cpu;
pub mod cuda;
pub mod device;
pub mod dtype;
pub mod error;
pub mod layout;
pub mod math;
pub mod nn;
pub mod optim;
pub mod parallel;
pub mod random;
pub mod storage;
pub mod tensor;

#[cfg(feature = "python")]
pub mod python;

pub use autograd::grad_mode::{is_grad_enabled, no_grad, set_grad_enabled};
pub use device::Device;
pub use dtype::{promote_types, DType, Element, FloatElement, ResultType, Scalar};
pub use error::{Error, Result};
pub use layout::Layout;
pub use random::{manual_seed, Generator};
pub use tensor::{BinaryOp, Tensor, UnaryOp};

use std::sync::atomic::{AtomicU8, Ordering};

static DEFAULT_DTYPE: AtomicU8 = AtomicU8::new(0);

/// The dtype of floating-point tensors made from Python floats (float32 unless changed).
pub fn default_dtype() -> DType {
    match DEFAULT_DTYPE.load(Ordering::Relaxed) {
        1 => DType::F64,
        2 => DType::F16,
        3 => DType::BF16,
        _ => DType::F32,
    }
}

/// Change the default floating-point dtype (`torch.set_default_dtype`).
pub fn set_default_dtype(d: DType) -> Result<()> {
    let code = match d {
        DType::F32 => 0,
        DType::F64 => 1,
        DType::F16 => 2,
        DType::BF16 => 3,
        _ => {
            return Err(Error::Type(format!(
                "only floating-point types are supported as the default type (got {d})"
            )))
        }
    };
    DEFAULT_DTYPE.store(code, Ordering::Relaxed);
    Ok(())
}
