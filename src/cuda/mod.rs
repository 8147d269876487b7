//! The CUDA backend: devices, kernel compilation (NVRTC), a caching allocator, cuBLAS, and
//! the tensor ops that run on the GPU.
//!
//! Everything CUDA is loaded at run time (cudarc's `dynamic-loading`), so a build with the
//! `cuda` feature needs no CUDA toolkit and imports on machines without a GPU, where
//! [`is_available`] is false and moving a tensor to `cuda` is a clear error. Without the
//! feature the same API exists and reports that no device is available.

use crate::DType;

#[cfg(feature = "cuda")]
mod allocator;
#[cfg(feature = "cuda")]
mod blas;
#[cfg(feature = "cuda")]
mod compile;
#[cfg(feature = "cuda")]
mod driver;
#[cfg(feature = "cuda")]
mod launch;
#[cfg(feature = "cuda")]
pub(crate) mod nn_ops;
#[cfg(feature = "cuda")]
pub(crate) mod ops;
#[cfg(feature = "cuda")]
mod storage;

#[cfg(feature = "cuda")]
pub use compile::{compile_check, compile_check_file, KernelFile};
#[cfg(feature = "cuda")]
pub use driver::{
    current_stream, default_stream, device_capability, device_count, device_name, empty_cache,
    is_available, memory_stats, reset_peak_memory_stats, set_current_stream, set_search_paths,
    synchronize, unavailable_reason, Event, Stream,
};
#[cfg(feature = "cuda")]
pub use storage::CudaStorage;

/// `backends.cuda.matmul.allow_tf32`: let cuBLAS use TF32 tensor cores for float32 matmul.
#[cfg(feature = "cuda")]
pub fn set_allow_tf32(allow: bool) {
    blas::ALLOW_TF32.store(allow, std::sync::atomic::Ordering::Relaxed);
}
#[cfg(feature = "cuda")]
pub fn allow_tf32() -> bool {
    blas::ALLOW_TF32.load(std::sync::atomic::Ordering::Relaxed)
}

#[cfg(not(feature = "cuda"))]
mod disabled;
#[cfg(not(feature = "cuda"))]
#[path = "disabled_nn_ops.rs"]
pub(crate) mod nn_ops;
#[cfg(not(feature = "cuda"))]
#[path = "disabled_ops.rs"]
pub(crate) mod ops;
#[cfg(not(feature = "cuda"))]
pub use disabled::*;

// Launchers of optim.cu, random.cu, the var/logsumexp reductions and the index writes.
#[cfg(feature = "cuda")]
pub(crate) mod index_ops;
#[cfg(not(feature = "cuda"))]
#[path = "disabled_index_ops.rs"]
pub(crate) mod index_ops;
#[cfg(feature = "cuda")]
pub(crate) mod optim_ops;
#[cfg(not(feature = "cuda"))]
#[path = "disabled_optim_ops.rs"]
pub(crate) mod optim_ops;
#[cfg(feature = "cuda")]
pub(crate) mod random_ops;
#[cfg(not(feature = "cuda"))]
#[path = "disabled_random_ops.rs"]
pub(crate) mod random_ops;
#[cfg(feature = "cuda")]
pub(crate) mod reduce_ops;
// cuSOLVER/cuBLAS-backed decompositions (LU, Cholesky, QR, eigh, SVD, triangular solves).
#[cfg(feature = "cuda")]
pub(crate) mod linalg_ops;
#[cfg(not(feature = "cuda"))]
#[path = "disabled_linalg_ops.rs"]
pub(crate) mod linalg_ops;
#[cfg(not(feature = "cuda"))]
#[path = "disabled_reduce_ops.rs"]
pub(crate) mod reduce_ops;

/// Memory counters of one device, in bytes (PyTorch's `memory_allocated`,
/// `max_memory_allocated`, `memory_reserved`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryStats {
    /// Bytes held by live tensors (rounded up to the allocator's block sizes).
    pub allocated: usize,
    /// The highest `allocated` since start or the last reset.
    pub peak_allocated: usize,
    /// Bytes obtained from the driver: allocated plus cached free blocks.
    pub reserved: usize,
}

/// Reductions along one dim of a contiguous tensor viewed as (outer, dim, inner).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reduction {
    Sum,
    Prod,
    Mean,
    Max,
    Min,
}

/// Suffix of a dtype in kernel names (`add_f32`, `cast_i64_bf16`).
pub fn dtype_suffix(d: DType) -> &'static str {
    match d {
        DType::F32 => "f32",
        DType::F64 => "f64",
        DType::F16 => "f16",
        DType::BF16 => "bf16",
        DType::I64 => "i64",
        DType::I32 => "i32",
        DType::I16 => "i16",
        DType::I8 => "i8",
        DType::U8 => "u8",
        DType::Bool => "bool",
    }
}
