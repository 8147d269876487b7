//! Autograd for the matrix products and linalg functions. Products are all built on one
//! kernel (`matmul_core`) which records a single node here; the public entry points (matmul,
//! mm, bmm, mv, dot, addmm, tensordot, einsum...) are compositions of recorded views and that
//! kernel, so they differentiate automatically.

use super::reduce_grad::to_dt;
use super::{BinaryOp, Tensor};
use crate::autograd::formula::{add, div, mul, muls, neg, sub};
use crate::autograd::{needs_grad, record, SavedTensor};
use crate::{no_grad, DType, Result, Scalar};

fn scale(t: Tensor, k: Scalar) -> Result<Tensor> {
    if k.to_f64() == 1.0 {
        Ok(t)
    } else {
        t.binary_scalar(k, BinaryOp::Mul, false)
    }
}

/// Record `out = beta * c + alpha * (a @ b)` (batch dims broadcast; `c` broadcast to out).
pub(crate) fn record_matmul(
    a: &Tensor,
    b: &Tensor,
    acc: Option<(&Tensor, Scalar, Scalar)>,
    out: &Tensor,
) {
    let mut inputs = vec![a, b];
    if let Some((c, _, _)) = acc {
        inputs.push(c);
    }
    if !out.dtype().is_floating_point() || !needs_grad(&inputs) {
        return;
    }
    let (na, nb) = (a.ndim(), b.ndim());
    let name = match (acc.is_some(), na.max(nb)) {
        (false, 2) => "MmBackward0",
        (false, 3) if na == nb => "BmmBackward0",
        (false, _) => "MatmulBackward0",
        (true, 2) => "AddmmBackward0",
        (true, _) => "BaddbmmBackward0",
    };
    let (need_a, need_b) = (a.requires_grad(), b.requires_grad());
    let need_c = acc.map(|(c, _, _)| c.requires_grad()).unwrap_or(false);
    let (beta, alpha) = acc
        .map(|(_, be, al)| (be, al))
        .unwrap_or((Scalar::Float(0.0), Scalar::Float(1.0)));
    let (sa, sb) = (a.shape().to_vec(), b.shape().to_vec());
    let (da, db) = (a.dtype(), b.dtype());
    let c_info = acc.map(|(c, _, _)| (c.shape().to_vec(), c.dtype()));
    let saved_a = SavedTensor::new(a, name);
    let saved_b = SavedTensor::new(b, name);
    record(
        name,
        &inputs,
        &[out],
        Box::new(move |grads| {
            let n_in = if c_info.is_some() { 3 } else { 2 };
            let Some(g) = &grads[0] else {
                return Ok(vec![None; n_in]);
            };
            let mut res = Vec::with_capacity(n_in);
            res.push(if need_a {
                let bt = saved_b.get()?.mt()?;
                let ga = scale(g.matmul(&bt)?, alpha)?.sum_to_shape(&sa)?;
                Some(to_dt(ga, da)?)
            } else {
                None
            });
            res.push(if need_b {
                let at = saved_a.get()?.mt()?;
                let gb = scale(at.matmul(g)?, alpha)?.sum_to_shape(&sb)?;
                Some(to_dt(gb, db)?)
            } else {
                None
            });
            if let Some((sc, dc)) = &c_info {
                res.push(if need_c {
                    let gc = if beta.to_f64() == 0.0 {
                        muls(g, 0.0)?
                    } else {
                        scale(g.clone(), beta)?
                    };
                    Some(to_dt(gc.sum_to_shape(sc)?, *dc)?)
                } else {
                    None
                });
            }
            Ok(res)
        }),
    );
}

/// Record `out = a @ x` (matrix `a`, vector `x`) as one node: `ga = g x^T`, `gx = a^T g`
/// (the latter a matrix-vector product on the transposed view, no copy of `a`).
pub(crate) fn record_mv(a: &Tensor, x: &Tensor, out: &Tensor) {
    if !out.dtype().is_floating_point() || !needs_grad(&[a, x]) {
        return;
    }
    let (need_a, need_x) = (a.requires_grad(), x.requires_grad());
    let saved_a = SavedTensor::new(a, "MvBackward0");
    let saved_x = SavedTensor::new(x, "MvBackward0");
    record(
        "MvBackward0",
        &[a, x],
        &[out],
        Box::new(move |grads| {
            let Some(g) = &grads[0] else {
                return Ok(vec![None, None]);
            };
            let ga = if need_a {
                let xr = saved_x.get()?.unsqueeze(0)?;
                Some(g.unsqueeze(1)?.binary(&xr, BinaryOp::Mul)?)
            } else {
                None
            };
            let gx = if need_x {
                Some(saved_a.get()?.mt()?.mv(g)?)
            } else {
                None
            };
            Ok(vec![ga, gx])
        }),
    );
}

/// Record `out = a . b` (two vectors) as one node: `ga = g b`, `gb = g a`.
pub(crate) fn record_dot(a: &Tensor, b: &Tensor, out: &Tensor) {
    if !out.dtype().is_floating_point() || !needs_grad(&[a, b]) {
        return;
    }
    let (need_a, need_b) = (a.requires_grad(), b.requires_grad());
    let saved_a = SavedTensor::new(a, "DotBackward0");
    let saved_b = SavedTensor::new(b, "DotBackward0");
    record(
        "DotBackward0",
        &[a, b],
        &[out],
        Box::new(move |grads| {
            let Some(g) = &grads[0] else {
                return Ok(vec![None, None]);
            };
            let ga = if need_a {
                Some(g.binary(saved_b.get()?, BinaryOp::Mul)?)
            } else {
                None
            };
            let gb = if need_b {
                Some(g.binary(saved_a.get()?, BinaryOp::Mul)?)
            } else {
                None
            };
            Ok(vec![ga, gb])
        }),
    );
}

// ---------------------------------------------------------------------- helpers

/// `t[..., None, None]`
/// The cofactor matrix `adj(A)^T` of square matrices, singular ones included: with
/// `A = U S Vh`, `adj(A)^T = det(U) det(Vh) U diag(prod_{j != i} s_j) Vh`.
fn cofactors_by_svd(a: &Tensor) -> Result<Tensor> {
    let (u, s, vh) = a.linalg_svd(false)?;
    let n = s.shape()[s.ndim() - 1] as i64;
    // Products of the singular values before and after each one (no division by zero).
    let exclusive = |t: &Tensor| -> Result<Tensor> {
        let ones = Tensor::full_on(
            t.device(),
            &[&t.shape()[..t.ndim() - 1], &[1]].concat(),
            Scalar::Float(1.0),
            t.dtype(),
        )?;
        let before = t.narrow(-1, 0, n - 1)?.cumprod(-1, None)?;
        super::join::cat(&[ones, before], -1)
    };
    let others = mul(&exclusive(&s)?, &exclusive(&s.flip(&[-1])?)?.flip(&[-1])?)?;
    let sign = no_grad(|| mul(&u.linalg_det()?, &vh.linalg_det()?))?;
    mul(
        &unsq2(&sign)?,
        &mul(&u, &others.unsqueeze(-2)?)?.matmul(&vh)?,
    )
}

fn unsq2(t: &Tensor) -> Result<Tensor> {
    t.unsqueeze(-1)?.unsqueeze(-1)
}
/// Constant `n x n` mask: 1 on the lower triangle (`diag_val` on the diagonal).
fn tril_mask(n: usize, diag_val: f64, dt: DType, lower: bool) -> Result<Tensor> {
    let mut v = vec![0.0f64; n * n];
    for i in 0..n {
        for j in 0..n {
            let keep = if lower { j < i } else { j > i };
            v[i * n + j] = if i == j {
                diag_val
            } else if keep {
                1.0
            } else {
                0.0
            };
        }
    }
    Ok(Tensor::from_vec(v, &[n, n])?.to_dtype(dt))
}
fn eye(n: usize, dt: DType) -> Result<Tensor> {
    let mut v = vec![0.0f64; n * n];
    for i in 0..n {
        v[i * n + i] = 1.0;
    }
    Ok(Tensor::from_vec(v, &[n, n])?.to_dtype(dt))
}
/// Batched diagonal matrices from vectors `(..., n)`.
fn diag_mat(v: &Tensor) -> Result<Tensor> {
    let n = v.shape()[v.ndim() - 1];
    mul(
        &v.unsqueeze(-1)?,
        &eye(n, v.dtype())?.to_device(v.device())?,
    )
}

fn grads_or_none(n: usize) -> Result<Vec<Option<Tensor>>> {
    Ok(vec![None; n])
}

impl Tensor {
    /// Sum of the main diagonal of a 2-d tensor (integer inputs give int64).
    pub fn trace(&self) -> Result<Tensor> {
        if self.dtype() == crate::DType::Bool {
            return Err(super::reduce_grad::reject_bool("trace"));
        }
        let out = no_grad(|| self.trace_raw())?;
        if needs_grad(&[self]) && self.dtype().is_floating_point() {
            let s = self.shape().to_vec();
            let dt = self.dtype();
            record(
                "TraceBackward0",
                &[self],
                &[&out],
                Box::new(move |grads| {
                    let Some(g) = &grads[0] else {
                        return grads_or_none(1);
                    };
                    let n = s[0].min(s[1]);
                    let mut v = vec![0.0f64; s[0] * s[1]];
                    for i in 0..n {
                        v[i * s[1] + i] = 1.0;
                    }
                    let m = Tensor::from_vec(v, &s)?
                        .to_dtype(dt)
                        .to_device(g.device())?;
                    Ok(vec![Some(mul(&m, g)?)])
                }),
            );
        }
        Ok(out)
    }

    /// `linalg.inv`.
    pub fn linalg_inv(&self) -> Result<Tensor> {
        let out = no_grad(|| self.linalg_inv_raw())?;
        if needs_grad(&[self]) {
            let saved = SavedTensor::new(self, "LinalgInvExBackward0");
            let od = SavedTensor::new(&out.detach(), "LinalgInvExBackward0");
            record(
                "LinalgInvExBackward0",
                &[self],
                &[&out],
                Box::new(move |grads| {
                    let Some(g) = &grads[0] else {
                        return grads_or_none(1);
                    };
                    let y = if crate::is_grad_enabled() {
                        saved.get()?.linalg_inv()?
                    } else {
                        od.get()?.clone()
                    };
                    let yt = y.mt()?;
                    Ok(vec![Some(neg(&yt.matmul(g)?.matmul(&yt)?)?)])
                }),
            );
        }
        Ok(out)
    }

    /// `linalg.det` (batched). Gradient: the cofactor matrix, `det A^{-T}` for non-singular
    /// inputs and from the SVD otherwise (as PyTorch, so singular matrices get gradients).
    pub fn linalg_det(&self) -> Result<Tensor> {
        let out = no_grad(|| self.linalg_det_raw())?;
        if needs_grad(&[self]) {
            let saved = SavedTensor::new(self, "LinalgDetBackward0");
            record(
                "LinalgDetBackward0",
                &[self],
                &[&out],
                Box::new(move |grads| {
                    let Some(g) = &grads[0] else {
                        return grads_or_none(1);
                    };
                    let a = saved.get()?;
                    let grad = match a.linalg_inv() {
                        Ok(inv) => mul(&unsq2(&mul(g, &a.linalg_det()?)?)?, &inv.mt()?)?,
                        Err(_) => mul(&unsq2(g)?, &cofactors_by_svd(a)?)?,
                    };
                    Ok(vec![Some(grad)])
                }),
            );
        }
        Ok(out)
    }

    /// `linalg.slogdet`: `(sign, log|det|)`; `log|det|` has gradient `A^{-T}`.
    pub fn linalg_slogdet(&self) -> Result<(Tensor, Tensor)> {
        let (s, l) = no_grad(|| self.linalg_slogdet_raw())?;
        if needs_grad(&[self]) {
            let saved = SavedTensor::new(self, "LinalgSlogdetBackward0");
            record(
                "LinalgSlogdetBackward0",
                &[self],
                &[&s, &l],
                Box::new(move |grads| {
                    let Some(g) = &grads[1] else {
                        return grads_or_none(1);
                    };
                    let it = saved.get()?.linalg_inv()?.mt()?;
                    Ok(vec![Some(mul(&unsq2(g)?, &it)?)])
                }),
            );
        }
        Ok((s, l))
    }

    /// `linalg.solve(A, B, left)`.
    pub fn linalg_solve(&self, b: &Tensor, left: bool) -> Result<Tensor> {
        let out = no_grad(|| self.linalg_solve_raw(b, left))?;
        if needs_grad(&[self, b]) {
            let vector = b.ndim() == 1
                || (b.ndim() + 1 == self.ndim() && b.shape() == &self.shape()[..self.ndim() - 1]);
            let (need_a, need_b) = (self.requires_grad(), b.requires_grad());
            let (sa, sb) = (self.shape().to_vec(), b.shape().to_vec());
            let saved_a = SavedTensor::new(self, "LinalgSolveExBackward0");
            let saved_b = SavedTensor::new(b, "LinalgSolveExBackward0");
            let od = SavedTensor::new(&out.detach(), "LinalgSolveExBackward0");
            record(
                "LinalgSolveExBackward0",
                &[self, b],
                &[&out],
                Box::new(move |grads| {
                    let Some(g) = &grads[0] else {
                        return grads_or_none(2);
                    };
                    let a = saved_a.get()?;
                    let x = if crate::is_grad_enabled() {
                        a.linalg_solve(saved_b.get()?, left)?
                    } else {
                        od.get()?.clone()
                    };
                    let (g, x) = if vector {
                        (g.unsqueeze(-1)?, x.unsqueeze(-1)?)
                    } else {
                        (g.clone(), x)
                    };
                    // left: A X = B -> gB = A^{-T} g, gA = -gB X^T
                    // right: X A = B -> gB = g A^{-T}, gA = -X^T gB
                    let gb = if left {
                        a.mt()?.linalg_solve(&g, true)?
                    } else {
                        a.mt()?.linalg_solve(&g, false)?
                    };
                    let ga = if need_a {
                        let r = if left {
                            neg(&gb.matmul(&x.mt()?)?)?
                        } else {
                            neg(&x.mt()?.matmul(&gb)?)?
                        };
                        Some(r.sum_to_shape(&sa)?)
                    } else {
                        None
                    };
                    let gbo = if need_b {
                        let r = if vector { gb.squeeze(Some(&[-1]))? } else { gb };
                        Some(r.sum_to_shape(&sb)?)
                    } else {
                        None
                    };
                    Ok(vec![ga, gbo])
                }),
            );
        }
        Ok(out)
    }

    /// `linalg.solve_triangular(A, B, upper, left, unitriangular)`.
    pub fn linalg_solve_triangular(
        &self,
        b: &Tensor,
        upper: bool,
        left: bool,
        unitriangular: bool,
    ) -> Result<Tensor> {
        let out = no_grad(|| self.linalg_solve_triangular_raw(b, upper, left, unitriangular))?;
        if needs_grad(&[self, b]) {
            const NAME: &str = "LinalgSolveTriangularBackward0";
            let (need_a, need_b) = (self.requires_grad(), b.requires_grad());
            let (sa, sb) = (self.shape().to_vec(), b.shape().to_vec());
            let saved_a = SavedTensor::new(self, NAME);
            let saved_b = SavedTensor::new(b, NAME);
            let od = SavedTensor::new(&out.detach(), NAME);
            record(
                NAME,
                &[self, b],
                &[&out],
                Box::new(move |grads| {
                    let Some(g) = &grads[0] else {
                        return grads_or_none(2);
                    };
                    let a = saved_a.get()?;
                    // gB = A^{-T} g (left) or g A^{-T} (right); A^T keeps the other triangle.
                    let gb = a
                        .mt()?
                        .linalg_solve_triangular(g, !upper, left, unitriangular)?;
                    let ga = if need_a {
                        let x = if crate::is_grad_enabled() {
                            a.linalg_solve_triangular(saved_b.get()?, upper, left, unitriangular)?
                        } else {
                            od.get()?.clone()
                        };
                        let full = if left {
                            gb.matmul(&x.mt()?)?
                        } else {
                            x.mt()?.matmul(&gb)?
                        };
                        // Only the triangle that was read (less a unit diagonal) gets gradient.
                        let skip = i64::from(unitriangular);
                        let tri = if upper {
                            full.triu(skip)?
                        } else {
                            full.tril(-skip)?
                        };
                        Some(neg(&tri)?.sum_to_shape(&sa)?)
                    } else {
                        None
                    };
                    let gbo = if need_b {
                        Some(gb.sum_to_shape(&sb)?)
                    } else {
                        None
                    };
                    Ok(vec![ga, gbo])
                }),
            );
        }
        Ok(out)
    }

    /// `linalg.lu(A)`: `(P, L, U)` with `A = P L U` (partial pivoting); `L` and `U` are
    /// differentiable.
    pub fn linalg_lu(&self) -> Result<(Tensor, Tensor, Tensor)> {
        let (p, l, u) = no_grad(|| {
            let (lu, piv, _) = self.linalg_lu_factor_raw()?;
            unpack_lu(&lu, &piv)
        })?;
        if needs_grad(&[self]) {
            let saved = SavedTensor::new(self, "LinalgLuBackward0");
            record(
                "LinalgLuBackward0",
                &[self],
                &[&l, &u],
                Box::new(move |grads| {
                    let (gl, gu) = (grads[0].clone(), grads.get(1).cloned().flatten());
                    if gl.is_none() && gu.is_none() {
                        return grads_or_none(1);
                    }
                    let (p, l, u) = saved.get()?.linalg_lu()?;
                    Ok(vec![Some(lu_backward(&p, &l, &u, gl, gu)?)])
                }),
            );
        }
        Ok((p, l, u))
    }

    /// `linalg.lu_factor_ex(A)`: `(LU, pivots, info)`, with `LU` differentiable.
    pub fn linalg_lu_factor(&self) -> Result<(Tensor, Tensor, Tensor)> {
        let (lu, piv, info) = no_grad(|| self.linalg_lu_factor_raw())?;
        if needs_grad(&[self]) {
            let saved = SavedTensor::new(self, "LinalgLuFactorExBackward0");
            record(
                "LinalgLuFactorExBackward0",
                &[self],
                &[&lu],
                Box::new(move |grads| {
                    let Some(g) = &grads[0] else {
                        return grads_or_none(1);
                    };
                    let (p, l, u) = saved.get()?.linalg_lu()?;
                    let k = l.shape()[l.ndim() - 1] as i64;
                    // LU packs L strictly below the diagonal and U on and above it.
                    let gl = g.tril(-1)?.narrow(-1, 0, k)?;
                    let gu = g.triu(0)?.narrow(-2, 0, k)?;
                    Ok(vec![Some(lu_backward(&p, &l, &u, Some(gl), Some(gu))?)])
                }),
            );
        }
        Ok((lu, piv, info))
    }

    /// `linalg.cholesky(A, upper)`.
    pub fn linalg_cholesky(&self, upper: bool) -> Result<Tensor> {
        let out = no_grad(|| self.linalg_cholesky_raw(upper))?;
        if needs_grad(&[self]) {
            let od = SavedTensor::new(&out.detach(), "LinalgCholeskyExBackward0");
            let saved = SavedTensor::new(self, "LinalgCholeskyExBackward0");
            record(
                "LinalgCholeskyExBackward0",
                &[self],
                &[&out],
                Box::new(move |grads| {
                    let Some(g) = &grads[0] else {
                        return grads_or_none(1);
                    };
                    let l = if crate::is_grad_enabled() {
                        saved.get()?.linalg_cholesky(false)?
                    } else if upper {
                        od.get()?.mt()?
                    } else {
                        od.get()?.clone()
                    };
                    let gl = if upper { g.mt()? } else { g.clone() };
                    let n = l.shape()[l.ndim() - 1];
                    // phi(L^T gL): lower triangle with the diagonal halved.
                    let p = mul(
                        &l.mt()?.matmul(&gl)?,
                        &tril_mask(n, 0.5, l.dtype(), true)?.to_device(l.device())?,
                    )?;
                    let li = l.linalg_inv()?;
                    let s = li.mt()?.matmul(&p)?.matmul(&li)?;
                    Ok(vec![Some(muls(&add(&s, &s.mt()?)?, 0.5)?)])
                }),
            );
        }
        Ok(out)
    }

    /// `linalg.eigh(A, UPLO)`; gradients assume distinct eigenvalues.
    pub fn linalg_eigh(&self, uplo: &str, vectors: bool) -> Result<(Tensor, Tensor)> {
        let (w, v) = no_grad(|| self.linalg_eigh_raw(uplo, vectors))?;
        if needs_grad(&[self]) {
            let saved = SavedTensor::new(self, "LinalgEighBackward0");
            let uplo_s = uplo.to_string();
            record(
                "LinalgEighBackward0",
                &[self],
                &[&w, &v],
                Box::new(move |grads| {
                    let (gw, gv) = (&grads[0], grads.get(1).cloned().flatten());
                    if gw.is_none() && gv.is_none() {
                        return grads_or_none(1);
                    }
                    let (w, v) = saved.get()?.linalg_eigh(&uplo_s, true)?;
                    let n = w.shape()[w.ndim() - 1];
                    let dt = w.dtype();
                    let mut inner = match &gv {
                        Some(gv) => {
                            let vg = v.mt()?.matmul(gv)?;
                            let skew = muls(&sub(&vg, &vg.mt()?)?, 0.5)?;
                            // E_ij = w_j - w_i, with 1 on the diagonal (skew has 0 there).
                            let e = sub(&w.unsqueeze(-2)?, &w.unsqueeze(-1)?)?;
                            let e = add(&e, &eye(n, dt)?.to_device(e.device())?)?;
                            div(&skew, &e)?
                        }
                        None => Tensor::full_on(w.device(), &[n, n], crate::Scalar::Int(0), dt)?,
                    };
                    if let Some(gw) = gw {
                        inner = add(&inner, &diag_mat(gw)?)?;
                    }
                    let ga = v.matmul(&inner)?.matmul(&v.mt()?)?;
                    Ok(vec![Some(ga)])
                }),
            );
        }
        Ok((w, v))
    }

    /// `linalg.qr(A, mode)`; gradients for `m >= n` with mode "reduced" (or "complete" when
    /// square).
    pub fn linalg_qr(&self, mode: &str) -> Result<(Tensor, Tensor)> {
        let (q, r) = no_grad(|| self.linalg_qr_raw(mode))?;
        if needs_grad(&[self]) {
            let saved = SavedTensor::new(self, "LinalgQrBackward0");
            let nd = self.ndim();
            let (m, n) = (self.shape()[nd - 2], self.shape()[nd - 1]);
            let ok = m >= n && (mode == "reduced" || m == n);
            record(
                "LinalgQrBackward0",
                &[self],
                &[&q, &r],
                Box::new(move |grads| {
                    let (gq, gr) = (grads[0].clone(), grads.get(1).cloned().flatten());
                    if gq.is_none() && gr.is_none() {
                        return grads_or_none(1);
                    }
                    if !ok {
                        return Err(crate::Error::Runtime(
                            "The derivative of linalg.qr is not implemented when mode='complete' and nrows > ncols, or when nrows < ncols".into(),
                        ));
                    }
                    let (q, r) = saved.get()?.linalg_qr("reduced")?;
                    let dt = q.dtype();
                    let zeros = |t: &Tensor| {
                        Tensor::full_on(t.device(), t.shape(), crate::Scalar::Int(0), dt)
                    };
                    let gq = gq.map_or_else(|| zeros(&q), Ok)?;
                    let gr = gr.map_or_else(|| zeros(&r), Ok)?;
                    // TensorFlow's QrGrad.
                    let qdq = q.mt()?.matmul(&gq)?;
                    let qdq_ = sub(&qdq, &qdq.mt()?)?;
                    let rdr = r.matmul(&gr.mt()?)?;
                    let rdr_ = sub(&rdr, &rdr.mt()?)?;
                    let tril = mul(
                        &add(&qdq_, &rdr_)?,
                        &tril_mask(n, 1.0, dt, true)?.to_device(qdq_.device())?,
                    )?;
                    let rit = r.linalg_inv()?.mt()?;
                    let ga = q.matmul(&add(&gr, &tril.matmul(&rit)?)?)?;
                    let gb = sub(&gq, &q.matmul(&qdq)?)?.matmul(&rit)?;
                    Ok(vec![Some(add(&ga, &gb)?)])
                }),
            );
        }
        Ok((q, r))
    }

    /// `linalg.svdvals`: singular values, descending. Gradient `U diag(g) Vh`.
    pub fn linalg_svdvals(&self) -> Result<Tensor> {
        let out = no_grad(|| self.linalg_svdvals_raw())?;
        if needs_grad(&[self]) {
            let saved = SavedTensor::new(self, "LinalgSvdBackward0");
            record(
                "LinalgSvdBackward0",
                &[self],
                &[&out],
                Box::new(move |grads| {
                    let Some(g) = &grads[0] else {
                        return grads_or_none(1);
                    };
                    let (u, _s, vh) = saved.get()?.linalg_svd(false)?;
                    Ok(vec![Some(u.matmul(&diag_mat(g)?)?.matmul(&vh)?)])
                }),
            );
        }
        Ok(out)
    }

    /// `linalg.svd(A, full_matrices)`: `(U, S, Vh)`. Gradients (reduced SVD, distinct
    /// singular values): PyTorch's svd_backward for real inputs.
    pub fn linalg_svd(&self, full_matrices: bool) -> Result<(Tensor, Tensor, Tensor)> {
        let (u, s, vh) = no_grad(|| self.linalg_svd_raw(full_matrices))?;
        if needs_grad(&[self]) {
            let saved = SavedTensor::new(self, "LinalgSvdBackward0");
            let nd = self.ndim();
            let (m, n) = (self.shape()[nd - 2], self.shape()[nd - 1]);
            record(
                "LinalgSvdBackward0",
                &[self],
                &[&u, &s, &vh],
                Box::new(move |grads| {
                    let gu = grads[0].clone();
                    let gs = grads.get(1).cloned().flatten();
                    let gvh = grads.get(2).cloned().flatten();
                    if gu.is_none() && gs.is_none() && gvh.is_none() {
                        return grads_or_none(1);
                    }
                    if full_matrices && m != n && (gu.is_some() || gvh.is_some()) {
                        return Err(crate::Error::Runtime(
                            "linalg_svd_backward: The singular vectors in the complete SVD are not well-defined. Use full_matrices=False".into(),
                        ));
                    }
                    let (u, s, vh) = saved.get()?.linalg_svd(false)?;
                    let k = m.min(n);
                    let dt = s.dtype();
                    let v = vh.mt()?;
                    let gu = match gu {
                        Some(g) if full_matrices => Some(g.narrow(-1, 0, k as i64)?),
                        x => x,
                    };
                    let gv = match gvh {
                        Some(g) if full_matrices => Some(g.narrow(-2, 0, k as i64)?.mt()?),
                        Some(g) => Some(g.mt()?),
                        None => None,
                    };
                    if gu.is_none() && gv.is_none() {
                        let gs = gs.map_or_else(
                            || Tensor::full_on(s.device(), s.shape(), crate::Scalar::Int(0), dt),
                            Ok,
                        )?;
                        return Ok(vec![Some(u.matmul(&diag_mat(&gs)?)?.matmul(&vh)?)]);
                    }
                    // Real case of PyTorch's svd_backward.
                    let ut_gu = match &gu {
                        Some(g) => u.mt()?.matmul(g)?,
                        None => Tensor::full_on(s.device(), &[k, k], crate::Scalar::Int(0), dt)?,
                    };
                    let vt_gv = match &gv {
                        Some(g) => v.mt()?.matmul(g)?,
                        None => Tensor::full_on(s.device(), &[k, k], crate::Scalar::Int(0), dt)?,
                    };
                    let s2 = mul(&s, &s)?;
                    // E_ij = s_j^2 - s_i^2, 1 on the diagonal.
                    let e = sub(&s2.unsqueeze(-2)?, &s2.unsqueeze(-1)?)?;
                    let e = add(&e, &eye(k, dt)?.to_device(e.device())?)?;
                    let sym_u = sub(&ut_gu, &ut_gu.mt()?)?; // skew(U^T gU) * 2
                    let sym_v = sub(&vt_gv, &vt_gv.mt()?)?;
                    let sc = s.unsqueeze(-1)?; // S as column
                    let sr = s.unsqueeze(-2)?; // S as row
                                               // gA core = (skew(UtgU) S + S skew(VtgV)) / E, with skew(X) = (X - X^T)/2 * 2
                    let mut core = div(&add(&mul(&sym_u, &sr)?, &mul(&sc, &sym_v)?)?, &e)?;
                    // zero the diagonal (E's diagonal is 1, numerator's diagonal is 0 already)
                    if let Some(gs) = &gs {
                        core = add(&core, &diag_mat(gs)?)?;
                    }
                    let mut ga = u.matmul(&core)?.matmul(&vh)?;
                    let inv_s = s.unary(crate::UnaryOp::Reciprocal)?;
                    if m > k {
                        if let Some(gu) = &gu {
                            // (I - U U^T) gU S^{-1} V^T
                            let proj = sub(gu, &u.matmul(&ut_gu)?)?;
                            let t = mul(&proj, &inv_s.unsqueeze(-2)?)?;
                            ga = add(&ga, &t.matmul(&vh)?)?;
                        }
                    }
                    if n > k {
                        if let Some(gv) = &gv {
                            // U S^{-1} gV^T (I - V V^T)
                            let proj = sub(gv, &v.matmul(&vt_gv)?)?;
                            let t = mul(&u, &inv_s.unsqueeze(-2)?)?;
                            ga = add(&ga, &t.matmul(&proj.mt()?)?)?;
                        }
                    }
                    Ok(vec![Some(ga)])
                }),
            );
        }
        Ok((u, s, vh))
    }

    /// `linalg.vector_norm(x, ord, dim, keepdim)`.
    pub fn linalg_vector_norm(
        &self,
        ord: f64,
        dims: Option<&[i64]>,
        keepdim: bool,
    ) -> Result<Tensor> {
        let out = no_grad(|| self.linalg_vector_norm_raw(ord, dims, keepdim))?;
        self.record_norm(ord, dims, keepdim, &out)?;
        Ok(out)
    }
}

impl Tensor {
    /// `linalg.lstsq(A, B)`. The solution is differentiable (a tall `A` through the normal
    /// equations, a wide one through its pseudo-inverse, as PyTorch); residuals, rank and
    /// singular values record nothing.
    pub fn linalg_lstsq(
        &self,
        b: &Tensor,
        rcond: Option<f64>,
        driver: Option<&str>,
    ) -> Result<super::Lstsq> {
        let r = no_grad(|| self.linalg_lstsq_raw(b, rcond, driver))?;
        if needs_grad(&[self, b]) && r.solution.dtype().is_floating_point() {
            let vector = b.ndim() + 1 == self.ndim();
            let nd = self.ndim();
            let (m, n) = (self.shape()[nd - 2], self.shape()[nd - 1]);
            let (need_a, need_b) = (self.requires_grad(), b.requires_grad());
            let (sa, sb) = (self.shape().to_vec(), b.shape().to_vec());
            let saved_a = SavedTensor::new(self, "LinalgLstsqBackward0");
            let saved_b = SavedTensor::new(b, "LinalgLstsqBackward0");
            let od = SavedTensor::new(&r.solution.detach(), "LinalgLstsqBackward0");
            record(
                "LinalgLstsqBackward0",
                &[self, b],
                &[&r.solution],
                Box::new(move |grads| {
                    let Some(g) = &grads[0] else {
                        return grads_or_none(2);
                    };
                    let a = saved_a.get()?;
                    let bm = saved_b.get()?;
                    let x = od.get()?.clone();
                    let (g, x, bm) = if vector {
                        (g.unsqueeze(-1)?, x.unsqueeze(-1)?, bm.unsqueeze(-1)?)
                    } else {
                        (g.clone(), x, bm.clone())
                    };
                    if m < n {
                        // the minimum-norm solution X = pinv(A) B (PyTorch's
                        // linalg_lstsq_backward, for every shape)
                        let p = a.linalg_pinv(None, None, false)?;
                        let ga = if need_a {
                            let gp = g.matmul(&bm.mt()?)?;
                            Some(super::grad_gaps::pinv_backward(&gp, &p, a)?.sum_to_shape(&sa)?)
                        } else {
                            None
                        };
                        let gb = if need_b {
                            let t = p.mt()?.matmul(&g)?;
                            let t = if vector { t.squeeze(Some(&[-1]))? } else { t };
                            Some(t.sum_to_shape(&sb)?)
                        } else {
                            None
                        };
                        return Ok(vec![ga, gb]);
                    }
                    let p = a.mt()?.matmul(a)?;
                    let z = p.linalg_solve(&g, true)?;
                    let ga = if need_a {
                        let res = sub(&bm, &a.matmul(&x)?)?;
                        let t = sub(&res.matmul(&z.mt()?)?, &a.matmul(&z)?.matmul(&x.mt()?)?)?;
                        Some(t.sum_to_shape(&sa)?)
                    } else {
                        None
                    };
                    let gb = if need_b {
                        let t = a.matmul(&z)?;
                        let t = if vector { t.squeeze(Some(&[-1]))? } else { t };
                        Some(t.sum_to_shape(&sb)?)
                    } else {
                        None
                    };
                    Ok(vec![ga, gb])
                }),
            );
        }
        Ok(r)
    }
}

/// `(P, L, U)` from a packed LU factorisation (`..., m, n`) and its pivots.
pub(crate) fn unpack_lu(lu: &Tensor, pivots: &Tensor) -> Result<(Tensor, Tensor, Tensor)> {
    let (m, n) = (lu.shape()[lu.ndim() - 2], lu.shape()[lu.ndim() - 1]);
    let k = m.min(n);
    let dt = lu.dtype();
    let unit = Tensor::eye(m as i64, Some(k as i64), dt)?.to_device(lu.device())?;
    let l = add(&lu.narrow(-1, 0, k as i64)?.tril(-1)?, &unit)?;
    let u = lu.narrow(-2, 0, k as i64)?.triu(0)?;
    let p = Tensor::lu_pivots_to_permutation(pivots, m, dt)?;
    Ok((p, l, u))
}

/// The gradient of `A = P L U` from those of `L` and `U` (either may be absent). Square case:
/// `gA = P L^{-T} [tril_{-1}(L^T gL) + triu(gU U^T)] U^{-T}`. A wide `A = P L [U1 U2]` folds
/// `U2 = L^{-1} P^T A2` into the square problem (`gA2 = P L^{-T} gU2`, `gL -= L^{-T} gU2 U2^T`),
/// and a tall `A` folds `L2 = P^T A2 U^{-1}` the same way.
fn lu_backward(
    p: &Tensor,
    l: &Tensor,
    u: &Tensor,
    gl: Option<Tensor>,
    gu: Option<Tensor>,
) -> Result<Tensor> {
    let (m, n) = (l.shape()[l.ndim() - 2], u.shape()[u.ndim() - 1]);
    let k = m.min(n) as i64;
    let zeros =
        |t: &Tensor| Tensor::full_on(t.device(), t.shape(), crate::Scalar::Int(0), t.dtype());
    let gl = match gl {
        Some(g) => g,
        None => zeros(l)?,
    };
    let gu = match gu {
        Some(g) => g,
        None => zeros(u)?,
    };
    // X U^T = rhs (U^T is lower) and L^T Y = rhs (L^T is unit upper).
    let right_ut =
        |rhs: &Tensor, u: &Tensor| u.mt()?.linalg_solve_triangular(rhs, false, false, false);
    let left_lt = |l: &Tensor, rhs: &Tensor| l.mt()?.linalg_solve_triangular(rhs, true, true, true);
    let gb = if m == n {
        let phi = add(
            &l.mt()?.matmul(&gl)?.tril(-1)?,
            &gu.matmul(&u.mt()?)?.triu(0)?,
        )?;
        left_lt(l, &right_ut(&phi, u)?)?
    } else if m < n {
        let (u1, u2) = (u.narrow(-1, 0, k)?, u.narrow(-1, k, n as i64 - k)?);
        let (gu1, gu2) = (gu.narrow(-1, 0, k)?, gu.narrow(-1, k, n as i64 - k)?);
        let phi = add(
            &sub(&l.mt()?.matmul(&gl)?, &gu2.matmul(&u2.mt()?)?)?.tril(-1)?,
            &gu1.matmul(&u1.mt()?)?.triu(0)?,
        )?;
        let rhs = super::join::cat(&[right_ut(&phi, &u1)?, gu2], -1)?;
        left_lt(l, &rhs)?
    } else {
        let (l1, l2) = (l.narrow(-2, 0, k)?, l.narrow(-2, k, m as i64 - k)?);
        let (gl1, gl2) = (gl.narrow(-2, 0, k)?, gl.narrow(-2, k, m as i64 - k)?);
        let phi = add(
            &l1.mt()?.matmul(&gl1)?.tril(-1)?,
            &sub(&gu.matmul(&u.mt()?)?, &l2.mt()?.matmul(&gl2)?)?.triu(0)?,
        )?;
        let lhs = super::join::cat(&[left_lt(&l1, &phi)?, gl2], -2)?;
        right_ut(&lhs, u)?
    };
    p.matmul(&gb)
}
