//! cuBLAS: one handle per device, batched GEMM for every float dtype.

use super::driver::{cublas_present, DeviceState};
use crate::{DType, Error, Result};
use cudarc::cublas::{result as cublas, sys};
use std::sync::atomic::{AtomicBool, Ordering};

/// `backends.cuda.matmul.allow_tf32` (off by default, as in PyTorch).
pub static ALLOW_TF32: AtomicBool = AtomicBool::new(false);

/// An owned cuBLAS handle.
pub struct BlasHandle(sys::cublasHandle_t);

// SAFETY: the handle is only used while the device's `blas` mutex is held.
unsafe impl Send for BlasHandle {}

impl Drop for BlasHandle {
    fn drop(&mut self) {
        // SAFETY: created by create_handle and dropped once.
        unsafe {
            let _ = cublas::destroy_handle(self.0);
        }
    }
}

/// One operand of a row-major product: a pointer, whether cuBLAS must transpose it, its
/// leading dimension and the distance between batch matrices (elements).
#[derive(Clone, Copy, Debug)]
pub struct Operand {
    pub ptr: u64,
    pub transposed: bool,
    pub ld: i64,
    pub batch_stride: i64,
}

fn blas_err(e: impl std::fmt::Debug) -> Error {
    Error::Runtime(format!("cuBLAS error: {e:?}"))
}

/// The device's cuBLAS handle (created on first use), bound to the current stream; the guard
/// keeps other threads off it until the caller is done.
fn lock_handle(
    dev: &DeviceState,
) -> Result<(
    std::sync::MutexGuard<'_, Option<BlasHandle>>,
    sys::cublasHandle_t,
)> {
    dev.bind()?;
    let mut guard = dev.blas.lock().unwrap_or_else(|e| e.into_inner());
    if guard.is_none() {
        *guard = Some(BlasHandle(cublas::create_handle().map_err(blas_err)?));
    }
    let handle = guard.as_ref().map(|h| h.0).unwrap_or(std::ptr::null_mut());
    // SAFETY: a live handle (held under the mutex) and the device's live stream.
    unsafe { cublas::set_stream(handle, dev.stream().cu_stream() as sys::cudaStream_t) }
        .map_err(blas_err)?;
    Ok((guard, handle))
}

/// Triangular solves `X A = B` for `batch` column-major pairs (cuBLAS `trsm`, right side, no
/// transpose): `A` is `n x n` (`lower` says which triangle is read; `unit`: ones assumed on the
/// diagonal), `B` is `m x n` and is overwritten by `X`. Matrices follow each other
/// contiguously (`a_ptr + i * n * n`, `b_ptr + i * m * n`). f32/f64 only.
#[allow(clippy::too_many_arguments)]
pub fn trsm_right(
    dev: &DeviceState,
    dtype: DType,
    m: usize,
    n: usize,
    lower: bool,
    unit: bool,
    a_ptr: u64,
    b_ptr: u64,
    batch: usize,
) -> Result<()> {
    if m == 0 || n == 0 || batch == 0 {
        return Ok(());
    }
    if m > i32::MAX as usize || n > i32::MAX as usize {
        return Err(Error::Runtime(format!(
            "linalg.solve_triangular on CUDA: sizes {m}x{n} exceed cuBLAS's int range"
        )));
    }
    let (_guard, handle) = lock_handle(dev)?;
    let side = sys::cublasSideMode_t::CUBLAS_SIDE_RIGHT;
    let uplo = if lower {
        sys::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER
    } else {
        sys::cublasFillMode_t::CUBLAS_FILL_MODE_UPPER
    };
    let trans = sys::cublasOperation_t::CUBLAS_OP_N;
    let diag = if unit {
        sys::cublasDiagType_t::CUBLAS_DIAG_UNIT
    } else {
        sys::cublasDiagType_t::CUBLAS_DIAG_NON_UNIT
    };
    let size = dtype.size() as u64;
    let (mi, ni) = (m as i32, n as i32);
    for i in 0..batch as u64 {
        let a = a_ptr + i * (n * n) as u64 * size;
        let b = b_ptr + i * (m * n) as u64 * size;
        // SAFETY: the handle is live under its mutex; `a` and `b` point at the caller's live
        // device matrices of n*n and m*n elements of `dtype` (leading dimensions n and m);
        // alpha is a host value read before the call returns (host pointer mode).
        let status = unsafe {
            match dtype {
                DType::F32 => {
                    let one = 1.0f32;
                    sys::cublasStrsm_v2(
                        handle,
                        side,
                        uplo,
                        trans,
                        diag,
                        mi,
                        ni,
                        &one,
                        a as *const f32,
                        ni,
                        b as *mut f32,
                        mi,
                    )
                }
                DType::F64 => {
                    let one = 1.0f64;
                    sys::cublasDtrsm_v2(
                        handle,
                        side,
                        uplo,
                        trans,
                        diag,
                        mi,
                        ni,
                        &one,
                        a as *const f64,
                        ni,
                        b as *mut f64,
                        mi,
                    )
                }
                other => {
                    return Err(Error::Runtime(format!(
                        "linalg.solve_triangular on CUDA: unsupported dtype {}",
                        other.torch_name()
                    )))
                }
            }
        };
        status.result().map_err(blas_err)?;
    }
    Ok(())
}

/// `c[i] = a[i] @ b[i]` for `batch` row-major matrices (m x k) @ (k x n) -> (m x n), c
/// contiguous. Row-major products are computed as the column-major product c^T = b^T a^T
/// (operands swapped), so no operand is copied.
#[allow(clippy::too_many_arguments)]
pub fn gemm_batched(
    dev: &DeviceState,
    dtype: DType,
    m: usize,
    n: usize,
    k: usize,
    a: Operand,
    b: Operand,
    c_ptr: u64,
    batch: usize,
) -> Result<()> {
    if !cublas_present() {
        return Err(Error::Runtime(
            "matmul on CUDA needs cuBLAS (libcublas.so), which was not found. Install the CUDA \
             toolkit or: pip install nvidia-cublas-cu12"
                .into(),
        ));
    }
    let too_big = |v: usize| v > i32::MAX as usize;
    if too_big(m) || too_big(n) || too_big(k) || too_big(batch) {
        return Err(Error::Runtime(format!(
            "matmul on CUDA: sizes m={m} n={n} k={k} batch={batch} exceed cuBLAS's int range"
        )));
    }
    let (data_type, compute) = match dtype {
        DType::F32 => (
            sys::cudaDataType::CUDA_R_32F,
            if ALLOW_TF32.load(Ordering::Relaxed) {
                sys::cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32
            } else {
                sys::cublasComputeType_t::CUBLAS_COMPUTE_32F
            },
        ),
        DType::F64 => (
            sys::cudaDataType::CUDA_R_64F,
            sys::cublasComputeType_t::CUBLAS_COMPUTE_64F,
        ),
        DType::F16 => (
            sys::cudaDataType::CUDA_R_16F,
            sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
        ),
        DType::BF16 => (
            sys::cudaDataType::CUDA_R_16BF,
            sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
        ),
        other => {
            return Err(Error::Runtime(format!(
                "\"addmm_cuda\" not implemented for '{}'",
                other.torch_name()
            )))
        }
    };
    let (_guard, handle) = lock_handle(dev)?;
    let op = |t: bool| {
        if t {
            sys::cublasOperation_t::CUBLAS_OP_T
        } else {
            sys::cublasOperation_t::CUBLAS_OP_N
        }
    };
    let (alpha64, beta64) = (1.0f64, 0.0f64);
    let (alpha32, beta32) = (1.0f32, 0.0f32);
    let (alpha, beta): (*const std::ffi::c_void, *const std::ffi::c_void) = if dtype == DType::F64 {
        (&alpha64 as *const f64 as _, &beta64 as *const f64 as _)
    } else {
        (&alpha32 as *const f32 as _, &beta32 as *const f32 as _)
    };
    // SAFETY: the handle is valid and used under the device's mutex; the pointers are live
    // device buffers the caller sized for these dims (operands swapped: column-major
    // c^T (n x m) = b^T (n x k) a^T (k x m)); alpha/beta outlive the call, which only
    // reads them before returning (host pointer mode).
    unsafe {
        if batch == 1 {
            // A single product through cublasGemmEx, as PyTorch's mm does (as a strided batch
            // of one, bf16 4096^2 ran at 0.89x PyTorch's rate on an H100).
            cublas::gemm_ex(
                handle,
                op(b.transposed),
                op(a.transposed),
                n as i32,
                m as i32,
                k as i32,
                alpha,
                b.ptr as *const std::ffi::c_void,
                data_type,
                b.ld as i32,
                a.ptr as *const std::ffi::c_void,
                data_type,
                a.ld as i32,
                beta,
                c_ptr as *mut std::ffi::c_void,
                data_type,
                n as i32,
                compute,
                sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
            .map_err(blas_err)?;
            return Ok(());
        }
        cublas::gemm_strided_batched_ex(
            handle,
            op(b.transposed),
            op(a.transposed),
            n as i32,
            m as i32,
            k as i32,
            alpha,
            b.ptr as *const std::ffi::c_void,
            data_type,
            b.ld as i32,
            b.batch_stride,
            a.ptr as *const std::ffi::c_void,
            data_type,
            a.ld as i32,
            a.batch_stride,
            beta,
            c_ptr as *mut std::ffi::c_void,
            data_type,
            n as i32,
            (m * n) as i64,
            batch as i32,
            compute,
            sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
        )
        .map_err(blas_err)?;
    }
    Ok(())
}
