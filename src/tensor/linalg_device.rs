//! The CUDA side of the `linalg_*` decompositions: cuSOLVER/cuBLAS through
//! `cuda::linalg_ops`, plus what PyTorch builds on top of them (determinants from the LU
//! factors, the pseudo-inverse and rank from the SVD or eigen-decomposition) composed of
//! device ops, and PyTorch's errors from the LAPACK `info` values.
//!
//! The `linalg_*_raw` functions call these after validating their arguments, when an operand
//! is on CUDA and cuSOLVER can be loaded (else they take the host fallback).

use super::host_fallback::check_devices;
use super::linalg::decomp_error;
use super::{BinaryOp, Tensor, TensorOrScalar, UnaryOp};
use crate::cpu::linalg::DecompError;
use crate::cuda::linalg_ops as dev;
use crate::{no_grad, DType, Result, Scalar};

/// Whether the decomposition of `ts` runs on the device.
pub(super) fn on_device(ts: &[&Tensor]) -> bool {
    ts.iter().any(|t| t.device().is_cuda()) && dev::available()
}

/// PyTorch's error for the first matrix whose `info` is non-zero.
fn raise_infos(
    op: &str,
    batched: bool,
    info: &Tensor,
    err: impl Fn(usize) -> DecompError,
) -> Result<()> {
    if info.numel() == 0 {
        return Ok(());
    }
    let infos = dev::host_infos(info)?;
    match infos.iter().position(|&v| v != 0) {
        Some(bi) => Err(decomp_error(op, batched, (bi, err(infos[bi] as usize)))),
        None => Ok(()),
    }
}

fn batched(t: &Tensor) -> bool {
    t.ndim() > 2
}

pub(super) fn inv(a: &Tensor) -> Result<Tensor> {
    let (x, info) = dev::inv(a)?;
    raise_infos("linalg.inv", batched(a), &info, DecompError::Singular)?;
    Ok(x)
}

pub(super) fn cholesky(a: &Tensor, upper: bool) -> Result<Tensor> {
    let (l, info) = dev::cholesky(a, upper)?;
    raise_infos(
        "linalg.cholesky",
        batched(a),
        &info,
        DecompError::NotPositiveDefinite,
    )?;
    Ok(l)
}

/// `a` (`..., n, n`) and `b` (`..., n, k`), batch dims already broadcast to the same shape.
pub(super) fn solve(op: &'static str, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    check_devices(op, a.device(), &[b])?;
    let (x, info) = dev::solve(a, b)?;
    raise_infos(op, batched(a), &info, DecompError::Singular)?;
    Ok(x)
}

pub(super) fn solve_triangular(
    a: &Tensor,
    b: &Tensor,
    upper: bool,
    unitriangular: bool,
) -> Result<Tensor> {
    check_devices("linalg.solve_triangular", a.device(), &[b])?;
    dev::solve_triangular(a, b, upper, unitriangular)
}

pub(super) fn lu_factor(a: &Tensor) -> Result<(Tensor, Tensor, Tensor)> {
    dev::lu_factor(a)
}

/// The LU factors' diagonal (`..., n`) and the permutation's sign (`...`, as `a`'s dtype).
fn lu_diagonal_and_sign(a: &Tensor) -> Result<(Tensor, Tensor)> {
    let n = a.shape()[a.ndim() - 1];
    let (f, piv) = dev::lu_for_det(a)?;
    let diag = f.diagonal(0, -2, -1)?;
    // Each pivot that is not its own row is one swap: sign = 1 - 2 * (swaps mod 2).
    let rows = Tensor::arange(
        Scalar::Int(1),
        Scalar::Int(n as i64 + 1),
        Scalar::Int(1),
        Some(DType::I32),
    )?
    .to_device(a.device())?;
    let swaps = piv
        .binary(&rows, BinaryOp::Ne)?
        .sum(Some(&[-1]), false, Some(DType::I64))?;
    let odd = swaps.binary_scalar(Scalar::Int(2), BinaryOp::Remainder, false)?;
    let sign = odd
        .binary_scalar(Scalar::Int(-2), BinaryOp::Mul, false)?
        .binary_scalar(Scalar::Int(1), BinaryOp::Add, false)?
        .to_dtype(a.dtype());
    Ok((diag, sign))
}

pub(super) fn det(a: &Tensor) -> Result<Tensor> {
    no_grad(|| {
        let (diag, sign) = lu_diagonal_and_sign(a)?;
        diag.prod(Some(&[-1]), false, None)?
            .binary(&sign, BinaryOp::Mul)
    })
}

pub(super) fn slogdet(a: &Tensor) -> Result<(Tensor, Tensor)> {
    no_grad(|| {
        let (diag, sign) = lu_diagonal_and_sign(a)?;
        let s = diag
            .unary(UnaryOp::Sign)?
            .prod(Some(&[-1]), false, None)?
            .binary(&sign, BinaryOp::Mul)?;
        let l = diag
            .unary(UnaryOp::Abs)?
            .unary(UnaryOp::Log)?
            .sum(Some(&[-1]), false, None)?;
        Ok((s, l))
    })
}

/// `log(det)`: NaN for negative determinants (and -inf for singular matrices, from log 0).
pub(super) fn logdet(a: &Tensor) -> Result<Tensor> {
    let (s, l) = slogdet(a)?;
    no_grad(|| {
        let negative = s.binary_scalar(Scalar::Int(0), BinaryOp::Lt, false)?;
        Tensor::where_cond(
            &negative,
            &TensorOrScalar::Scalar(Scalar::Float(f64::NAN)),
            &TensorOrScalar::Tensor(l),
        )
    })
}

pub(super) fn qr(a: &Tensor, complete: bool, want_q: bool) -> Result<(Tensor, Tensor)> {
    dev::qr(a, complete, want_q)
}

pub(super) fn eigh(op: &str, a: &Tensor, upper: bool, vectors: bool) -> Result<(Tensor, Tensor)> {
    let (w, v, info) = dev::eigh(a, !upper, vectors)?;
    raise_infos(op, batched(a), &info, |_| DecompError::NoConvergence)?;
    Ok((w, v))
}

/// `(U, S, Vh)` (`full_matrices`), or only `S` (`uv == None`, the others empty).
pub(super) fn svd(a: &Tensor, uv: Option<bool>) -> Result<(Tensor, Tensor, Tensor)> {
    let (u, s, vh, info) = dev::svd(a, uv)?;
    raise_infos("linalg.svd", batched(a), &info, |_| {
        DecompError::NoConvergence
    })?;
    Ok((u, s, vh))
}

/// Entries of `values` (`..., k`) above `max(atol, rtol * max|values|)` per matrix.
fn above_tolerance(values: &Tensor, atol: f64, rtol: f64) -> Result<Tensor> {
    let tol = values
        .unary(UnaryOp::Abs)?
        .amax(Some(&[-1]), true)?
        .binary_scalar(Scalar::Float(rtol), BinaryOp::Mul, false)?
        .binary_scalar(Scalar::Float(atol), BinaryOp::Maximum, false)?;
    values.unary(UnaryOp::Abs)?.binary(&tol, BinaryOp::Gt)
}

/// `linalg.pinv` from the SVD (or the eigen-decomposition when `hermitian`): reciprocals of
/// the values above the tolerance, zero for the others.
pub(super) fn pinv(a: &Tensor, atol: f64, rtol: f64, hermitian: bool) -> Result<Tensor> {
    no_grad(|| {
        let invert = |values: &Tensor| -> Result<Tensor> {
            let keep = above_tolerance(values, atol, rtol)?;
            let inv = values.unary(UnaryOp::Reciprocal)?;
            Tensor::where_cond(
                &keep,
                &TensorOrScalar::Tensor(inv),
                &TensorOrScalar::Scalar(Scalar::Float(0.0)),
            )
        };
        if hermitian {
            // A = V diag(w) V^T, so pinv = V diag(1/w) V^T.
            let (w, v) = eigh("linalg.pinv", a, false, true)?;
            let scaled = v.binary(&invert(&w)?.unsqueeze(-2)?, BinaryOp::Mul)?;
            return scaled.matmul(&v.transpose(-2, -1)?);
        }
        // A = U diag(s) Vh, so pinv = Vh^T diag(1/s) U^T.
        let (u, s, vh) = svd(a, Some(false))?;
        let scaled = vh
            .transpose(-2, -1)?
            .binary(&invert(&s)?.unsqueeze(-2)?, BinaryOp::Mul)?;
        scaled.matmul(&u.transpose(-2, -1)?)
    })
}

/// `linalg.matrix_rank` (int64): how many singular values (or |eigenvalues|) exceed the
/// tolerance.
pub(super) fn matrix_rank(a: &Tensor, atol: f64, rtol: f64, hermitian: bool) -> Result<Tensor> {
    no_grad(|| {
        let values = if hermitian {
            eigh("linalg.matrix_rank", a, false, false)?.0
        } else {
            svd(a, None)?.1
        };
        if values.shape()[values.ndim() - 1] == 0 {
            return Tensor::full_on(
                a.device(),
                &a.shape()[..a.ndim() - 2],
                Scalar::Int(0),
                DType::I64,
            );
        }
        above_tolerance(&values, atol, rtol)?.sum(Some(&[-1]), false, Some(DType::I64))
    })
}

/// `linalg.lstsq` with the `gels` driver for `m >= n` (`a`: `..., m, n`, `b`: `..., m, k`, batch
/// dims equal): `X = R^-1 Q^T B` from the reduced QR, and the squared residual norms per
/// column (`..., k`; meaningful when `m > n`).
pub(super) fn lstsq_gels(a: &Tensor, b: &Tensor) -> Result<(Tensor, Tensor)> {
    check_devices("linalg.lstsq", a.device(), &[b])?;
    no_grad(|| {
        let (q, r) = dev::qr(a, false, true)?;
        let qtb = q.transpose(-2, -1)?.matmul(b)?;
        let x = dev::solve_triangular(&r, &qtb, true, false)?;
        let diff = a.matmul(&x)?.binary(b, BinaryOp::Sub)?;
        let residuals = diff
            .binary(&diff, BinaryOp::Mul)?
            .sum(Some(&[-2]), false, None)?;
        Ok((x, residuals))
    })
}

/// `linalg.cross` along `dim` of the broadcast `shape`, from slices of the operands: three
/// fused products of device tensors instead of a host round trip.
pub(super) fn cross(a: &Tensor, b: &Tensor, shape: &[usize], dim: usize) -> Result<Tensor> {
    let device = if a.device().is_cuda() {
        a.device()
    } else {
        b.device()
    };
    check_devices("linalg.cross", device, &[a, b])?;
    no_grad(|| {
        let (a, b) = (a.broadcast_to(shape)?, b.broadcast_to(shape)?);
        let d = dim as i64;
        let part = |t: &Tensor, i: i64| t.narrow(d, i, 1);
        let term = |i: i64, j: i64| -> Result<Tensor> {
            part(&a, i)?.binary(&part(&b, j)?, BinaryOp::Mul)?.binary(
                &part(&a, j)?.binary(&part(&b, i)?, BinaryOp::Mul)?,
                BinaryOp::Sub,
            )
        };
        super::join::cat(&[term(1, 2)?, term(2, 0)?, term(0, 1)?], d)
    })
}

/// `linalg.matrix_norm` of the last two dims of `x` for the nuclear norm (`nuclear`) or
/// `ord` in ±1, ±2, ±inf: singular values for the spectral ones, absolute column (1) or row
/// (inf) sums otherwise. Returns the batch shape; the caller reshapes for `keepdim`.
pub(super) fn matrix_norm(x: &Tensor, nuclear: bool, ord: f64) -> Result<Tensor> {
    no_grad(|| {
        if nuclear || ord.abs() == 2.0 {
            let s = svd(x, None)?.1;
            if nuclear {
                return s.sum(Some(&[-1]), false, None);
            }
            let k = s.shape()[s.ndim() - 1] as i64;
            let at = if ord > 0.0 { 0 } else { k - 1 };
            return s.narrow(-1, at, 1)?.squeeze(Some(&[-1]));
        }
        let sum_over = if ord.is_infinite() { -1 } else { -2 };
        let sums = x.unary(UnaryOp::Abs)?.sum(Some(&[sum_over]), false, None)?;
        if ord > 0.0 {
            sums.amax(Some(&[-1]), false)
        } else {
            sums.amin(Some(&[-1]), false)
        }
    })
}
