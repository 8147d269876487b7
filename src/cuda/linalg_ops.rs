//! Dense linear algebra on CUDA: LU, Cholesky, QR, symmetric eigen-decomposition and SVD
//! through cuSOLVER's dense API, triangular solves through cuBLAS, one matrix at a time across
//! the batch (as PyTorch does for large matrices).
//!
//! cuSOLVER is column-major and our tensors are row-major. A contiguous row-major matrix is the
//! column-major storage of its transpose, so each routine either works on the transpose when
//! that gives the answer directly (inverse, determinant, symmetric inputs, wide SVD: no
//! transposed copies) or makes a transposed copy first.
//!
//! Every routine takes `(..., rows, cols)` CUDA tensors of float32/float64 (the caller checked
//! dtypes and shapes) and returns new contiguous row-major tensors with the same batch dims.
//! The LAPACK `info` of each matrix comes back either as a device tensor (the `_ex` functions
//! return it without synchronising) or read on the host, where the caller has to raise.

use super::blas::trsm_right;
use super::compile::KernelFile;
use super::driver::{cublas_present, cusolver_present, DeviceState};
use super::dtype_suffix;
use super::launch::elementwise;
use super::ops::{
    band, clone, contiguous, dev_of, download, empty, full, launch, ordinal_of, upload,
};
use crate::{DType, Error, Result, Scalar, Tensor};
use cudarc::cusolver::sys as cs;
use cudarc::driver::PushKernelArg;
use std::sync::MutexGuard;

/// Batches of at least this many matrices of at most `SMALL_N` rows go to linalg.cu's
/// one-thread-per-matrix kernels: cuSOLVER/cuBLAS take a launch or more per matrix, which
/// dominates for small matrices (PyTorch switches to batched routines there too).
const SMALL_N: usize = 32;
const MIN_BATCH: usize = 32;

fn small_batch(n: usize, nb: usize) -> bool {
    n <= SMALL_N && nb >= MIN_BATCH
}

/// An owned cuSOLVER dense handle.
pub struct SolverHandle(cs::cusolverDnHandle_t);

// SAFETY: the handle is only used while the device's `solver` mutex is held.
unsafe impl Send for SolverHandle {}

impl Drop for SolverHandle {
    fn drop(&mut self) {
        // SAFETY: created by cusolverDnCreate and destroyed once.
        unsafe {
            let _ = cs::cusolverDnDestroy(self.0);
        }
    }
}

/// cuSOLVER and cuBLAS can be loaded: the linalg ops run on the device. Without them they take
/// the host fallback.
pub(crate) fn available() -> bool {
    cusolver_present() && cublas_present()
}

fn solver_err(what: &str, e: impl std::fmt::Debug) -> Error {
    Error::Runtime(format!("cuSOLVER error in {what}: {e:?}"))
}

/// The device's cuSOLVER handle (created on first use) bound to the current stream, held
/// under its mutex for the duration of a batch.
struct Solver<'a> {
    _guard: MutexGuard<'a, Option<SolverHandle>>,
    handle: cs::cusolverDnHandle_t,
    dtype: DType,
    ordinal: usize,
}

fn solver<'a>(dev: &'a DeviceState, t: &Tensor) -> Result<Solver<'a>> {
    dev.bind()?;
    let mut guard = dev.solver.lock().unwrap_or_else(|e| e.into_inner());
    if guard.is_none() {
        let mut h: cs::cusolverDnHandle_t = std::ptr::null_mut();
        // SAFETY: writes a new handle into `h`.
        unsafe { cs::cusolverDnCreate(&mut h) }
            .result()
            .map_err(|e| solver_err("cusolverDnCreate", e))?;
        *guard = Some(SolverHandle(h));
    }
    let handle = guard.as_ref().map(|h| h.0).unwrap_or(std::ptr::null_mut());
    // SAFETY: a live handle (under the mutex) and the device's live stream.
    unsafe { cs::cusolverDnSetStream(handle, dev.stream().cu_stream() as cs::cudaStream_t) }
        .result()
        .map_err(|e| solver_err("cusolverDnSetStream", e))?;
    match t.dtype() {
        DType::F32 | DType::F64 => {}
        other => {
            return Err(Error::Runtime(format!(
                "linalg on CUDA: unsupported dtype {}",
                other.torch_name()
            )))
        }
    }
    Ok(Solver {
        _guard: guard,
        handle,
        dtype: t.dtype(),
        ordinal: ordinal_of(t)?,
    })
}

/// Call the float32 (`$s`) or float64 (`$d`) cuSOLVER function with the same arguments
/// (pointer arguments are written `p as _`, so each branch casts to its own element type).
macro_rules! call {
    ($sv:expr, $s:ident | $d:ident ($($arg:expr),* $(,)?)) => {{
        // SAFETY: every caller passes the live handle of `$sv` and device pointers into
        // tensors it allocated or made contiguous for exactly these dimensions (leading
        // dimensions equal the row counts), of the solver's dtype; workspaces were sized by the
        // matching `_bufferSize` query.
        let status = unsafe {
            if $sv.dtype == DType::F32 {
                cs::$s($($arg),*)
            } else {
                cs::$d($($arg),*)
            }
        };
        status.result().map_err(|e| solver_err(stringify!($s), e))
    }};
}

/// Address of element `elems` of `t`'s data (its storage offset included).
fn at(t: &Tensor, elems: usize) -> Result<u64> {
    Ok(super::ops::ptr(t)? + ((t.storage_offset() + elems) * t.dtype().size()) as u64)
}

fn batch_of(t: &Tensor) -> (Vec<usize>, usize) {
    let bs = t.shape()[..t.ndim() - 2].to_vec();
    let nb = bs.iter().product();
    (bs, nb)
}

fn with_tail(mut batch: Vec<usize>, tail: &[usize]) -> Vec<usize> {
    batch.extend_from_slice(tail);
    batch
}

/// A contiguous copy with the last two dims transposed: the column-major storage of `t`'s
/// matrices, or, applied to a buffer of column-major matrices, their row-major form.
fn transposed_copy(t: &Tensor) -> Result<Tensor> {
    clone(&t.transpose(-2, -1)?)
}

/// A contiguous copy (the solvers write in place).
fn owned_copy(t: &Tensor) -> Result<Tensor> {
    clone(t)
}

/// Workspace of `lwork` elements of the solver's dtype.
fn workspace(sv: &Solver, lwork: i32) -> Result<Tensor> {
    empty(sv.ordinal, &[lwork.max(1) as usize], sv.dtype)
}

fn ints(sv: &Solver, shape: &[usize]) -> Result<Tensor> {
    empty(sv.ordinal, shape, DType::I32)
}

/// The per-matrix `info` values, read on the host (synchronises).
pub(crate) fn host_infos(info: &Tensor) -> Result<Vec<i32>> {
    download(info)?.to_vec::<i32>()
}

fn int(v: usize, what: &str) -> Result<i32> {
    i32::try_from(v).map_err(|_| {
        Error::Runtime(format!(
            "{what} on CUDA: size {v} exceeds cuSOLVER's int range"
        ))
    })
}

/// Identity matrices `(nb, n, n)` on the solver's device.
fn identities(sv: &Solver, nb: usize, n: usize) -> Result<Tensor> {
    let eye = upload(&Tensor::eye(n as i64, None, sv.dtype)?, sv.ordinal)?;
    clone(&eye.broadcast_to(&[nb, n, n])?)
}

// ------------------------------------------------------------------------------ Cholesky

/// `linalg.cholesky`: the lower factor `L` (`A = L L^T`), or `U = L^T` when `upper`, with the
/// other triangle zero, and each matrix's `info` (0, or the order of the first leading minor
/// that is not positive-definite).
pub(crate) fn cholesky(a: &Tensor, upper: bool) -> Result<(Tensor, Tensor)> {
    let dev = dev_of(a)?;
    let sv = solver(&dev, a)?;
    let n = a.shape()[a.ndim() - 1];
    let (bs, nb) = batch_of(a);
    // The row-major lower triangle is the column-major upper one: factor it as U^T U there,
    // and U (column-major) read row-major is L. Symmetric input, so no transpose is needed.
    let f = owned_copy(a)?;
    let info = ints(&sv, &bs)?;
    if n > 0 && nb > 0 {
        let uplo = if upper {
            cs::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER
        } else {
            cs::cublasFillMode_t::CUBLAS_FILL_MODE_UPPER
        };
        let ni = int(n, "linalg.cholesky")?;
        if small_batch(n, nb) {
            let (a, inf, nb64) = (at(&f, 0)?, at(&info, 0)?, nb as i64);
            let col_upper = (uplo == cs::cublasFillMode_t::CUBLAS_FILL_MODE_UPPER) as i32;
            let name = format!("cholesky_batched_{}", dtype_suffix(sv.dtype));
            launch!(dev, KernelFile::Linalg, name, elementwise(nb); a, inf, ni, col_upper, nb64)?;
            return Ok((band(&f, 0, !upper)?, info));
        }
        let mut lwork = 0i32;
        call!(
            sv,
            cusolverDnSpotrf_bufferSize
                | cusolverDnDpotrf_bufferSize(sv.handle, uplo, ni, at(&f, 0)? as _, ni, &mut lwork)
        )?;
        let work = workspace(&sv, lwork)?;
        for i in 0..nb {
            call!(
                sv,
                cusolverDnSpotrf
                    | cusolverDnDpotrf(
                        sv.handle,
                        uplo,
                        ni,
                        at(&f, i * n * n)? as _,
                        ni,
                        at(&work, 0)? as _,
                        lwork,
                        at(&info, i)? as _
                    )
            )?;
        }
    } else if nb > 0 {
        zero_infos(&info)?;
    }
    Ok((band(&f, 0, !upper)?, info))
}

fn zero_infos(info: &Tensor) -> Result<()> {
    let z = full(ordinal_of(info)?, info.shape(), Scalar::Int(0), DType::I32)?;
    super::ops::copy_into(info, &z)
}

// ------------------------------------------------------------------------------ LU

/// LU of each matrix's column-major storage in `f` (`rows x cols`, in place), LAPACK pivots
/// (1-based, `(nb, min)`) and infos.
fn getrf(sv: &Solver, f: &Tensor, rows: usize, cols: usize, nb: usize) -> Result<(Tensor, Tensor)> {
    let k = rows.min(cols);
    let piv = ints(sv, &[nb, k])?;
    let info = ints(sv, &[nb])?;
    if k == 0 {
        if nb > 0 {
            zero_infos(&info)?;
        }
        return Ok((piv, info));
    }
    let (ri, ci) = (int(rows, "linalg.lu")?, int(cols, "linalg.lu")?);
    if rows == cols && small_batch(rows, nb) {
        let dev = dev_of(f)?;
        let (a, p, inf, nb64) = (at(f, 0)?, at(&piv, 0)?, at(&info, 0)?, nb as i64);
        let name = format!("lu_batched_{}", dtype_suffix(sv.dtype));
        launch!(dev, KernelFile::Linalg, name, elementwise(nb); a, p, inf, ri, nb64)?;
        return Ok((piv, info));
    }
    let mut lwork = 0i32;
    call!(
        sv,
        cusolverDnSgetrf_bufferSize
            | cusolverDnDgetrf_bufferSize(sv.handle, ri, ci, at(f, 0)? as _, ri, &mut lwork)
    )?;
    let work = workspace(sv, lwork)?;
    for i in 0..nb {
        call!(
            sv,
            cusolverDnSgetrf
                | cusolverDnDgetrf(
                    sv.handle,
                    ri,
                    ci,
                    at(f, i * rows * cols)? as _,
                    ri,
                    at(&work, 0)? as _,
                    at(&piv, i * k)? as _,
                    at(&info, i)? as _
                )
        )?;
    }
    Ok((piv, info))
}

/// `linalg.lu_factor_ex`: the packed row-major `LU` (`..., m, n`), LAPACK's 1-based pivots
/// (`..., min(m, n)`, int32) and `info` (int32, batch shape), all on the device.
pub(crate) fn lu_factor(a: &Tensor) -> Result<(Tensor, Tensor, Tensor)> {
    let dev = dev_of(a)?;
    let sv = solver(&dev, a)?;
    let (m, n) = (a.shape()[a.ndim() - 2], a.shape()[a.ndim() - 1]);
    let (bs, nb) = batch_of(a);
    let f = transposed_copy(a)?;
    let (piv, info) = getrf(&sv, &f, m, n, nb)?;
    Ok((
        transposed_copy(&f)?,
        piv.reshape_contiguous(&with_tail(bs.clone(), &[m.min(n)])),
        info.reshape_contiguous(&bs),
    ))
}

/// The LU factors of the square matrices `a`'s transposes (same determinant: no transposed
/// copy) and their pivots `(..., n)`: what `det`/`slogdet` need.
pub(crate) fn lu_for_det(a: &Tensor) -> Result<(Tensor, Tensor)> {
    let dev = dev_of(a)?;
    let sv = solver(&dev, a)?;
    let n = a.shape()[a.ndim() - 1];
    let (bs, nb) = batch_of(a);
    let f = owned_copy(a)?;
    let (piv, _info) = getrf(&sv, &f, n, n, nb)?;
    Ok((f, piv.reshape_contiguous(&with_tail(bs, &[n]))))
}

/// `linalg.inv` and the infos of the LU factorisations (non-zero: singular).
pub(crate) fn inv(a: &Tensor) -> Result<(Tensor, Tensor)> {
    let dev = dev_of(a)?;
    let sv = solver(&dev, a)?;
    let n = a.shape()[a.ndim() - 1];
    let (bs, nb) = batch_of(a);
    // inv(A^T) of the column-major view is inv(A)^T, which read row-major is inv(A).
    let f = owned_copy(a)?;
    let (piv, info) = getrf(&sv, &f, n, n, nb)?;
    let x = identities(&sv, nb, n)?;
    getrs(&sv, false, &f, &piv, &x, n, n, nb)?;
    Ok((
        x.reshape_contiguous(&with_tail(bs.clone(), &[n, n])),
        info.reshape_contiguous(&bs),
    ))
}

/// Solve `op(M) X = B` with the LU factors of the column-major `M` in `f`; `b` holds the
/// column-major `n x k` right-hand sides (overwritten by `X`).
#[allow(clippy::too_many_arguments)]
fn getrs(
    sv: &Solver,
    transpose: bool,
    f: &Tensor,
    piv: &Tensor,
    b: &Tensor,
    n: usize,
    k: usize,
    nb: usize,
) -> Result<()> {
    if n == 0 || k == 0 {
        return Ok(());
    }
    let trans = if transpose {
        cs::cublasOperation_t::CUBLAS_OP_T
    } else {
        cs::cublasOperation_t::CUBLAS_OP_N
    };
    let (ni, ki) = (int(n, "linalg.solve")?, int(k, "linalg.solve")?);
    if small_batch(n, nb) {
        let dev = dev_of(f)?;
        let (lu, p, x, nb64) = (at(f, 0)?, at(piv, 0)?, at(b, 0)?, nb as i64);
        let tr = transpose as i32;
        let name = format!("lu_solve_batched_{}", dtype_suffix(sv.dtype));
        launch!(dev, KernelFile::Linalg, name, elementwise(nb * k); lu, p, x, ni, ki, tr, nb64)?;
        return Ok(());
    }
    let info = ints(sv, &[nb])?;
    for i in 0..nb {
        call!(
            sv,
            cusolverDnSgetrs
                | cusolverDnDgetrs(
                    sv.handle,
                    trans,
                    ni,
                    ki,
                    at(f, i * n * n)? as _,
                    ni,
                    at(piv, i * n)? as _,
                    at(b, i * n * k)? as _,
                    ni,
                    at(&info, i)? as _
                )
        )?;
    }
    Ok(())
}

/// `linalg.solve` for `a` (`..., n, n`) and `b` (`..., n, k`) with the same batch dims, and
/// the infos of the LU factorisations.
pub(crate) fn solve(a: &Tensor, b: &Tensor) -> Result<(Tensor, Tensor)> {
    let dev = dev_of(a)?;
    let sv = solver(&dev, a)?;
    let (n, k) = (b.shape()[b.ndim() - 2], b.shape()[b.ndim() - 1]);
    let (bs, nb) = batch_of(a);
    // Factor A^T (a's storage as is) and solve with its transpose, A.
    let f = owned_copy(a)?;
    let (piv, info) = getrf(&sv, &f, n, n, nb)?;
    let x = transposed_copy(b)?;
    getrs(&sv, true, &f, &piv, &x, n, k, nb)?;
    Ok((transposed_copy(&x)?, info.reshape_contiguous(&bs)))
}

// ------------------------------------------------------------------------------ triangular

/// `linalg.solve_triangular(A, B, upper, left=True, unitriangular)` for `a` (`..., n, n`) and
/// `b` (`..., n, k`) with the same batch dims. `A X = B` is `X^T A^T = B^T`, and the row-major
/// storage of `A` and `B` is the column-major storage of `A^T` and `B^T`: one right-side
/// `trsm` on the operands as they are (A's upper triangle is A^T's lower one).
pub(crate) fn solve_triangular(a: &Tensor, b: &Tensor, upper: bool, unit: bool) -> Result<Tensor> {
    let dev = dev_of(a)?;
    let n = a.shape()[a.ndim() - 1];
    let k = b.shape()[b.ndim() - 1];
    let (_, nb) = batch_of(a);
    let a = contiguous(a)?;
    let x = owned_copy(b)?;
    if small_batch(n, nb) && k > 0 {
        let (ap, xp, nb64) = (at(&a, 0)?, at(&x, 0)?, nb as i64);
        let (ki, ni) = (
            int(k, "linalg.solve_triangular")?,
            int(n, "linalg.solve_triangular")?,
        );
        let (lower, unit) = (upper as i32, unit as i32);
        let name = format!("trsm_right_batched_{}", dtype_suffix(a.dtype()));
        launch!(dev, KernelFile::Linalg, name, elementwise(nb * k); ap, xp, ki, ni, lower, unit, nb64)?;
        return Ok(x);
    }
    trsm_right(
        &dev,
        a.dtype(),
        k,
        n,
        upper,
        unit,
        at(&a, 0)?,
        at(&x, 0)?,
        nb,
    )?;
    Ok(x)
}

// ------------------------------------------------------------------------------ QR

/// `linalg.qr(A, mode)`: `Q` (`..., m, m` when `complete`, else `..., m, min(m, n)`; empty
/// `(0,)` without `want_q`) and `R` (`..., m or min(m, n), n`), by Householder reflections
/// (`geqrf`) and their accumulation (`orgqr`), as LAPACK: `R`'s diagonal may be negative.
pub(crate) fn qr(a: &Tensor, complete: bool, want_q: bool) -> Result<(Tensor, Tensor)> {
    let dev = dev_of(a)?;
    let sv = solver(&dev, a)?;
    let (m, n) = (a.shape()[a.ndim() - 2], a.shape()[a.ndim() - 1]);
    let kk = m.min(n);
    let (bs, nb) = batch_of(a);
    let f = transposed_copy(a)?; // (nb.., n, m): column-major m x n
    let tau = empty(sv.ordinal, &[nb.max(1), kk.max(1)], sv.dtype)?;
    if kk > 0 && nb > 0 {
        let (mi, ni) = (int(m, "linalg.qr")?, int(n, "linalg.qr")?);
        let mut lwork = 0i32;
        call!(
            sv,
            cusolverDnSgeqrf_bufferSize
                | cusolverDnDgeqrf_bufferSize(sv.handle, mi, ni, at(&f, 0)? as _, mi, &mut lwork)
        )?;
        let work = workspace(&sv, lwork)?;
        let info = ints(&sv, &[nb])?;
        for i in 0..nb {
            call!(
                sv,
                cusolverDnSgeqrf
                    | cusolverDnDgeqrf(
                        sv.handle,
                        mi,
                        ni,
                        at(&f, i * m * n)? as _,
                        mi,
                        at(&tau, i * kk)? as _,
                        at(&work, 0)? as _,
                        lwork,
                        at(&info, i)? as _
                    )
            )?;
        }
    }
    let rows = if complete { m } else { kk };
    // R: the upper triangle of the first `rows` rows (rows past n are zero anyway).
    let r = band(&f.transpose(-2, -1)?.narrow(-2, 0, rows as i64)?, 0, false)?;
    if !want_q {
        return Ok((empty(sv.ordinal, &[0], sv.dtype)?, r));
    }
    let qc = if complete { m } else { kk };
    // Q's column-major m x qc buffer starts with the kk reflectors; orgqr sets up the rest.
    let q = full(
        sv.ordinal,
        &with_tail(bs.clone(), &[qc, m]),
        Scalar::Int(0),
        sv.dtype,
    )?;
    if kk > 0 {
        q.narrow(-2, 0, kk as i64)?
            .copy_(&f.narrow(-2, 0, kk as i64)?)?;
    }
    if m > 0 && qc > 0 && nb > 0 {
        let (mi, qi, ki) = (
            int(m, "linalg.qr")?,
            int(qc, "linalg.qr")?,
            int(kk, "linalg.qr")?,
        );
        let mut lwork = 0i32;
        call!(
            sv,
            cusolverDnSorgqr_bufferSize
                | cusolverDnDorgqr_bufferSize(
                    sv.handle,
                    mi,
                    qi,
                    ki,
                    at(&q, 0)? as _,
                    mi,
                    at(&tau, 0)? as _,
                    &mut lwork
                )
        )?;
        let work = workspace(&sv, lwork)?;
        let info = ints(&sv, &[nb])?;
        for i in 0..nb {
            call!(
                sv,
                cusolverDnSorgqr
                    | cusolverDnDorgqr(
                        sv.handle,
                        mi,
                        qi,
                        ki,
                        at(&q, i * m * qc)? as _,
                        mi,
                        at(&tau, i * kk)? as _,
                        at(&work, 0)? as _,
                        lwork,
                        at(&info, i)? as _
                    )
            )?;
        }
    }
    Ok((transposed_copy(&q)?, r))
}

// ------------------------------------------------------------------------------ eigh

/// `linalg.eigh(A, UPLO)` (`lower`: read the lower triangle): eigenvalues ascending
/// (`..., n`), eigenvectors as columns (`..., n, n`; empty `(0,)` without `vectors`), and the
/// infos (non-zero: no convergence).
pub(crate) fn eigh(a: &Tensor, lower: bool, vectors: bool) -> Result<(Tensor, Tensor, Tensor)> {
    let dev = dev_of(a)?;
    let sv = solver(&dev, a)?;
    let n = a.shape()[a.ndim() - 1];
    let (bs, nb) = batch_of(a);
    // The symmetric matrix's storage is column-major too, with the triangles swapped.
    let f = owned_copy(a)?;
    let w = empty(sv.ordinal, &with_tail(bs.clone(), &[n]), sv.dtype)?;
    let info = ints(&sv, &bs)?;
    if n > 0 && nb > 0 {
        let jobz = if vectors {
            cs::cusolverEigMode_t::CUSOLVER_EIG_MODE_VECTOR
        } else {
            cs::cusolverEigMode_t::CUSOLVER_EIG_MODE_NOVECTOR
        };
        let uplo = if lower {
            cs::cublasFillMode_t::CUBLAS_FILL_MODE_UPPER
        } else {
            cs::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER
        };
        let ni = int(n, "linalg.eigh")?;
        if small_batch(n, nb) {
            syevj_batched(&sv, jobz, uplo, ni, &f, &w, &info, nb)?;
        } else {
            syevd(&sv, jobz, uplo, n, &f, &w, &info, nb)?;
        }
    } else if nb > 0 {
        zero_infos(&info)?;
    }
    let v = if vectors {
        // Eigenvectors are the column-major columns: read row-major they are V^T.
        transposed_copy(&f)?
    } else {
        empty(sv.ordinal, &[0], sv.dtype)?
    };
    Ok((w, v, info))
}

/// `syevd` on each of the `nb` matrices of `f` (in place; eigenvalues into `w`).
#[allow(clippy::too_many_arguments)]
fn syevd(
    sv: &Solver,
    jobz: cs::cusolverEigMode_t,
    uplo: cs::cublasFillMode_t,
    n: usize,
    f: &Tensor,
    w: &Tensor,
    info: &Tensor,
    nb: usize,
) -> Result<()> {
    let ni = int(n, "linalg.eigh")?;
    let mut lwork = 0i32;
    call!(
        sv,
        cusolverDnSsyevd_bufferSize
            | cusolverDnDsyevd_bufferSize(
                sv.handle,
                jobz,
                uplo,
                ni,
                at(f, 0)? as _,
                ni,
                at(w, 0)? as _,
                &mut lwork
            )
    )?;
    let work = workspace(sv, lwork)?;
    for i in 0..nb {
        call!(
            sv,
            cusolverDnSsyevd
                | cusolverDnDsyevd(
                    sv.handle,
                    jobz,
                    uplo,
                    ni,
                    at(f, i * n * n)? as _,
                    ni,
                    at(w, i * n)? as _,
                    at(&work, 0)? as _,
                    lwork,
                    at(info, i)? as _
                )
        )?;
    }
    Ok(())
}

// ------------------------------------------------------------------------------ SVD

/// An uninitialised `(batch.., rows, cols)` buffer for a factor the caller wants, else `None`.
fn factor_buffer(
    sv: &Solver,
    want: bool,
    batch: &[usize],
    [rows, cols]: [usize; 2],
) -> Result<Option<Tensor>> {
    want.then(|| {
        empty(
            sv.ordinal,
            &with_tail(batch.to_vec(), &[rows, cols]),
            sv.dtype,
        )
    })
    .transpose()
}

/// `linalg.svd(A, full_matrices)` (`uv` = `Some(full_matrices)`) or `svdvals` (`None`):
/// `(U, S, Vh, info)` with `S` descending; `U`/`Vh` are empty `(0,)` for `svdvals`.
///
/// cuSOLVER's `gesvd` needs at least as many rows as columns. A wide or square row-major
/// matrix is the column-major storage of its transpose, which has that shape, and the
/// factors of `A^T = U' S V'^T` give `U = V'` and `Vh = U'^T`, which read row-major are the
/// buffers as they come back: no copies. A tall matrix is transposed first.
pub(crate) fn svd(a: &Tensor, uv: Option<bool>) -> Result<(Tensor, Tensor, Tensor, Tensor)> {
    let dev = dev_of(a)?;
    let sv = solver(&dev, a)?;
    let (m, n) = (a.shape()[a.ndim() - 2], a.shape()[a.ndim() - 1]);
    let k = m.min(n);
    let (bs, nb) = batch_of(a);
    if k > 0 && m.max(n) <= SMALL_N && nb >= MIN_BATCH {
        return svd_jacobi_batched(&sv, a, uv);
    }
    let wide = n >= m;
    // The column-major problem: `rows x cols` with rows >= cols.
    let (rows, cols) = if wide { (n, m) } else { (m, n) };
    let f = if wide {
        owned_copy(a)?
    } else {
        transposed_copy(a)?
    };
    let s = empty(sv.ordinal, &with_tail(bs.clone(), &[k]), sv.dtype)?;
    let info = ints(&sv, &bs)?;
    let full_uv = uv == Some(true);
    // U' is rows x uc, V'^T is cols x cols (uc = rows when full, else cols).
    let uc = if full_uv { rows } else { cols };
    let want = uv.is_some();
    let u1 = factor_buffer(&sv, want, &bs, [uc, rows])?;
    let vt1 = factor_buffer(&sv, want, &bs, [cols, cols])?;
    if k > 0 && nb > 0 {
        let (ri, ci) = (int(rows, "linalg.svd")?, int(cols, "linalg.svd")?);
        let (jobu, jobvt) = match uv {
            Some(true) => (b'A', b'A'),
            Some(false) => (b'S', b'A'),
            None => (b'N', b'N'),
        };
        let mut lwork = 0i32;
        call!(
            sv,
            cusolverDnSgesvd_bufferSize
                | cusolverDnDgesvd_bufferSize(sv.handle, ri, ci, &mut lwork)
        )?;
        let work = workspace(&sv, lwork)?;
        let rwork = empty(sv.ordinal, &[cols.max(1)], sv.dtype)?;
        let ptr_of = |t: &Option<Tensor>, i: usize| -> Result<u64> {
            t.as_ref().map_or(Ok(0), |t| at(t, i))
        };
        for i in 0..nb {
            call!(
                sv,
                cusolverDnSgesvd
                    | cusolverDnDgesvd(
                        sv.handle,
                        jobu as i8,
                        jobvt as i8,
                        ri,
                        ci,
                        at(&f, i * m * n)? as _,
                        ri,
                        at(&s, i * k)? as _,
                        ptr_of(&u1, i * rows * uc)? as _,
                        ri,
                        ptr_of(&vt1, i * cols * cols)? as _,
                        ci,
                        at(&work, 0)? as _,
                        lwork,
                        at(&rwork, 0)? as _,
                        at(&info, i)? as _
                    )
            )?;
        }
    } else if nb > 0 {
        zero_infos(&info)?;
    }
    let (Some(u1), Some(vt1)) = (u1, vt1) else {
        let none = empty(sv.ordinal, &[0], sv.dtype)?;
        return Ok((none.clone(), s, none, info));
    };
    if k == 0 {
        // No singular values: PyTorch's (full) factors are identities, else empty.
        let eye = |r: usize, c: usize| -> Result<Tensor> {
            if r == c {
                identities(&sv, nb, r)
                    .map(|t| t.reshape_contiguous(&with_tail(bs.clone(), &[r, r])))
            } else {
                full(
                    sv.ordinal,
                    &with_tail(bs.clone(), &[r, c]),
                    Scalar::Int(0),
                    sv.dtype,
                )
            }
        };
        let (uc, vr) = if full_uv { (m, n) } else { (k, k) };
        return Ok((eye(m, uc)?, s, eye(vr, n)?, info));
    }
    if wide {
        // U = V' (vt1 read row-major); Vh = U'^T (u1 read row-major), rows of it: uc.
        Ok((vt1, s, u1, info))
    } else {
        Ok((transposed_copy(&u1)?, s, transposed_copy(&vt1)?, info))
    }
}

/// Owned Jacobi parameters (`syevjInfo_t` / `gesvdjInfo_t`), destroyed on drop.
struct JacobiParams<P: Copy> {
    params: P,
    destroy: unsafe fn(P) -> cs::cusolverStatus_t,
}

impl<P: Copy> Drop for JacobiParams<P> {
    fn drop(&mut self) {
        // SAFETY: created by the matching cusolverDnCreate*Info and destroyed once.
        unsafe {
            let _ = (self.destroy)(self.params);
        }
    }
}

fn syevj_params() -> Result<JacobiParams<cs::syevjInfo_t>> {
    let mut p: cs::syevjInfo_t = std::ptr::null_mut();
    // SAFETY: writes a new parameter object into `p`.
    unsafe { cs::cusolverDnCreateSyevjInfo(&mut p) }
        .result()
        .map_err(|e| solver_err("cusolverDnCreateSyevjInfo", e))?;
    Ok(JacobiParams {
        params: p,
        destroy: cs::cusolverDnDestroySyevjInfo,
    })
}

fn gesvdj_params() -> Result<JacobiParams<cs::gesvdjInfo_t>> {
    let mut p: cs::gesvdjInfo_t = std::ptr::null_mut();
    // SAFETY: writes a new parameter object into `p`.
    unsafe { cs::cusolverDnCreateGesvdjInfo(&mut p) }
        .result()
        .map_err(|e| solver_err("cusolverDnCreateGesvdjInfo", e))?;
    Ok(JacobiParams {
        params: p,
        destroy: cs::cusolverDnDestroyGesvdjInfo,
    })
}

/// `syevjBatched`: the symmetric eigen-decomposition of `nb` small matrices (n <= 32) in one
/// call, in place in `f` (eigenvalues ascending into `w`, one `info` per matrix).
#[allow(clippy::too_many_arguments)]
fn syevj_batched(
    sv: &Solver,
    jobz: cs::cusolverEigMode_t,
    uplo: cs::cublasFillMode_t,
    n: i32,
    f: &Tensor,
    w: &Tensor,
    info: &Tensor,
    nb: usize,
) -> Result<()> {
    let params = syevj_params()?;
    let nbi = int(nb, "linalg.eigh")?;
    let mut lwork = 0i32;
    call!(
        sv,
        cusolverDnSsyevjBatched_bufferSize
            | cusolverDnDsyevjBatched_bufferSize(
                sv.handle,
                jobz,
                uplo,
                n,
                at(f, 0)? as _,
                n,
                at(w, 0)? as _,
                &mut lwork,
                params.params,
                nbi
            )
    )?;
    let work = workspace(sv, lwork)?;
    call!(
        sv,
        cusolverDnSsyevjBatched
            | cusolverDnDsyevjBatched(
                sv.handle,
                jobz,
                uplo,
                n,
                at(f, 0)? as _,
                n,
                at(w, 0)? as _,
                at(&work, 0)? as _,
                lwork,
                at(info, 0)? as _,
                params.params,
                nbi
            )
    )
}

/// The SVD of a batch of small matrices (m, n <= 32) by `gesvdjBatched` in one call. The
/// row-major `A` is the column-major `A^T = U' S V'^T`, so `U = V'` and `Vh = U'^T`; cuSOLVER
/// returns full `U'` and `V'` (not transposed), and the reduced factors are their leading
/// columns / rows.
fn svd_jacobi_batched(
    sv: &Solver,
    a: &Tensor,
    uv: Option<bool>,
) -> Result<(Tensor, Tensor, Tensor, Tensor)> {
    let (m, n) = (a.shape()[a.ndim() - 2], a.shape()[a.ndim() - 1]);
    let k = m.min(n);
    let (bs, nb) = batch_of(a);
    let f = owned_copy(a)?; // column-major n x m
    let s = empty(sv.ordinal, &with_tail(bs.clone(), &[k]), sv.dtype)?;
    let info = ints(sv, &bs)?;
    let (ni, mi, nbi) = (
        int(n, "linalg.svd")?,
        int(m, "linalg.svd")?,
        int(nb, "linalg.svd")?,
    );
    let jobz = if uv.is_some() {
        cs::cusolverEigMode_t::CUSOLVER_EIG_MODE_VECTOR
    } else {
        cs::cusolverEigMode_t::CUSOLVER_EIG_MODE_NOVECTOR
    };
    let u1 = factor_buffer(sv, uv.is_some(), &bs, [n, n])?;
    let v1 = factor_buffer(sv, uv.is_some(), &bs, [m, m])?;
    let ptr_of = |t: &Option<Tensor>| -> Result<u64> { t.as_ref().map_or(Ok(0), |t| at(t, 0)) };
    let params = gesvdj_params()?;
    let mut lwork = 0i32;
    call!(
        sv,
        cusolverDnSgesvdjBatched_bufferSize
            | cusolverDnDgesvdjBatched_bufferSize(
                sv.handle,
                jobz,
                ni,
                mi,
                at(&f, 0)? as _,
                ni,
                at(&s, 0)? as _,
                ptr_of(&u1)? as _,
                ni,
                ptr_of(&v1)? as _,
                mi,
                &mut lwork,
                params.params,
                nbi
            )
    )?;
    let work = workspace(sv, lwork)?;
    call!(
        sv,
        cusolverDnSgesvdjBatched
            | cusolverDnDgesvdjBatched(
                sv.handle,
                jobz,
                ni,
                mi,
                at(&f, 0)? as _,
                ni,
                at(&s, 0)? as _,
                ptr_of(&u1)? as _,
                ni,
                ptr_of(&v1)? as _,
                mi,
                at(&work, 0)? as _,
                lwork,
                at(&info, 0)? as _,
                params.params,
                nbi
            )
    )?;
    let (Some(u1), Some(v1)) = (u1, v1) else {
        let none = empty(sv.ordinal, &[0], sv.dtype)?;
        return Ok((none.clone(), s, none, info));
    };
    // U = V' (column-major m x m: transpose to row-major); Vh = U'^T (U' read row-major).
    let u = transposed_copy(&v1)?;
    let vh = u1;
    if uv == Some(true) {
        return Ok((u, s, vh, info));
    }
    Ok((
        clone(&u.narrow(-1, 0, k as i64)?)?,
        s,
        clone(&vh.narrow(-2, 0, k as i64)?)?,
        info,
    ))
}

/// The permutation matrices `P` (`batch.., m, m`, dtype `dtype`) with `A = P L U` from
/// LAPACK's 1-based pivots (`batch.., k`, already checked to lie in 1..=m), built on the
/// device (one thread per matrix) instead of uploading them from the host.
pub(crate) fn pivots_to_permutation(pivots: &Tensor, m: usize, dtype: DType) -> Result<Tensor> {
    let k = pivots.shape()[pivots.ndim() - 1];
    let batch = &pivots.shape()[..pivots.ndim() - 1];
    let nb: usize = batch.iter().product();
    let ordinal = ordinal_of(pivots)?;
    let piv = contiguous(&super::ops::cast(pivots, DType::I32)?)?;
    let out = empty(ordinal, &with_tail(batch.to_vec(), &[m, m]), dtype)?;
    if nb == 0 || m == 0 {
        return Ok(out);
    }
    let perm = empty(ordinal, &[nb, m], DType::I32)?;
    let dev = dev_of(&out)?;
    let (pp, op, qp) = (at(&piv, 0)?, at(&out, 0)?, at(&perm, 0)?);
    let (mi, ki, nb64) = (int(m, "lu_unpack")?, int(k, "lu_unpack")?, nb as i64);
    let name = format!("lu_permutation_{}", dtype_suffix(dtype));
    launch!(dev, KernelFile::Linalg, name, elementwise(nb); pp, op, qp, mi, ki, nb64)?;
    Ok(out)
}
