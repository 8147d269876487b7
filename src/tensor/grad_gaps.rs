//! Autograd for ops that were missing a node or had a formula that breaks on special inputs:
//! zero-safe `prod`/`cumprod`, `scatter_reduce`, `nansum`/`nanmean`, `var_mean`/`std_mean`,
//! `cummax`/`cummin`, `logdet`, `linalg.pinv` and the non-Frobenius `linalg.matrix_norm`s.
//! Each public entry point runs the kernel (`*_raw`) with recording off and records one node
//! whose backward uses public, differentiable Tensor ops (so `create_graph` works).

use super::index::TensorOrScalar;
use super::index_grad::{record_n, GradFn};
use super::join::cat;
use super::linalg::MatrixNormOrd;
use super::reduce::reduce_mask;
use super::reduce_grad::{add, div, evenly, mul, muls, sub, to_dt};
use super::view::{embed_into_zeros, ViewFn};
use super::{BinaryOp, Tensor, UnaryOp};
use crate::autograd::{is_grad_enabled, needs_grad, record, SavedTensor};
use crate::{no_grad, DType, Error, Result, Scalar};
use std::sync::Arc;

fn keep_shape(in_shape: &[usize], mask: &[bool]) -> Vec<i64> {
    in_shape
        .iter()
        .zip(mask)
        .map(|(&s, &m)| if m { 1 } else { s as i64 })
        .collect()
}

/// A reduced tensor (keepdim or not) broadcast back to `in_shape`.
fn unreduce(g: &Tensor, in_shape: &[usize], mask: &[bool]) -> Result<Tensor> {
    g.reshape(&keep_shape(in_shape, mask))?.expand_to(in_shape)
}

fn mask_dims(mask: &[bool]) -> Vec<i64> {
    (0..mask.len())
        .filter(|&i| mask[i])
        .map(|i| i as i64)
        .collect()
}

fn reduced_count(in_shape: &[usize], mask: &[bool]) -> usize {
    in_shape
        .iter()
        .zip(mask)
        .filter(|(_, &m)| m)
        .map(|(&s, _)| s)
        .product()
}

/// 1.0 where `op(a, b)` holds, else 0.0, in `dt` (a constant: no history).
fn cmp_mask(a: &Tensor, b: &Tensor, op: BinaryOp, dt: DType) -> Result<Tensor> {
    no_grad(|| a.binary(b, op)?.cast(dt))
}

/// 1.0 where `x` is not NaN, else 0.0 (a constant).
fn not_nan(x: &Tensor) -> Result<Tensor> {
    cmp_mask(x, x, BinaryOp::Eq, x.dtype())
}

fn has_zero(x: &Tensor) -> bool {
    x.to_f64_vec().contains(&0.0)
}

/// `t` narrowed to the leading `shape` in every dim (a recorded view); `t` when equal.
fn narrow_to(t: &Tensor, shape: &[usize]) -> Result<Tensor> {
    if t.shape() == shape || t.ndim() != shape.len() {
        return Ok(t.clone());
    }
    let mut r = t.clone();
    for (k, &s) in shape.iter().enumerate() {
        r = r.narrow(k as i64, 0, s as i64)?;
    }
    Ok(r)
}

/// `r` padded with zeros up to `shape` (inverse of [`narrow_to`], differentiable).
fn pad_to(r: &Tensor, shape: &[usize]) -> Result<Tensor> {
    if r.shape() == shape || r.ndim() != shape.len() {
        return Ok(r.clone());
    }
    let sizes = r.shape().to_vec();
    let f: ViewFn = Arc::new(move |t: &Tensor| narrow_to(t, &sizes));
    embed_into_zeros(r, shape, f)
}

/// For `x` of shape `(..., n)` (`n >= 1`): `prod_{j<i} x_j * prod_{j>i} x_j` along the last
/// dim, the derivative of the product, exact when `x` has zeros.
fn exclusive_prods(x: &Tensor) -> Result<Tensor> {
    let nd = x.ndim();
    let n = x.shape()[nd - 1] as i64;
    let mut os = x.shape().to_vec();
    os[nd - 1] = 1;
    let ones = Tensor::full_on(x.device(), &os, crate::Scalar::Int(1), x.dtype())?;
    let left = cat(&[ones.clone(), x.narrow(-1, 0, n - 1)?], -1)?.cumprod(-1, None)?;
    let rev = x.narrow(-1, 1, n - 1)?.flip(&[-1])?;
    let right = cat(&[ones, rev], -1)?.cumprod(-1, None)?.flip(&[-1])?;
    mul(&left, &right)
}

/// Gradient of `prod` over `mask` when the input has zeros: the reduced dims are moved last
/// and flattened, and [`exclusive_prods`] gives each element's cofactor.
fn prod_backward_zeros(g: &Tensor, x: &Tensor, mask: &[bool]) -> Result<Tensor> {
    let nd = x.ndim();
    let mut perm: Vec<i64> = (0..nd).filter(|&d| !mask[d]).map(|d| d as i64).collect();
    let kept: Vec<i64> = perm.iter().map(|&d| x.shape()[d as usize] as i64).collect();
    perm.extend(mask_dims(mask));
    let xp = x.permute(&perm)?;
    let pshape: Vec<i64> = xp.shape().iter().map(|&s| s as i64).collect();
    let mut flat = kept.clone();
    flat.push(-1);
    let xr = xp.reshape(&flat)?;
    let mut gshape = kept;
    gshape.push(1);
    let gk = g.reshape(&gshape)?;
    let r = mul(&gk, &exclusive_prods(&to_dt(xr, g.dtype())?)?)?.reshape(&pshape)?;
    let mut inv = vec![0i64; nd];
    for (i, &p) in perm.iter().enumerate() {
        inv[p as usize] = i as i64;
    }
    r.permute(&inv)
}

/// Gradient of `cumprod` along `d` when the input has zeros (PyTorch's O(n^2) formula): for
/// each k, `sum_{i>=k} g_i prod_{j<=i, j!=k} x_j`.
fn cumprod_backward_zeros(g: &Tensor, x: &Tensor, d: usize) -> Result<Tensor> {
    let n = x.shape()[d] as i64;
    let di = d as i64;
    let mut os = x.shape().to_vec();
    os[d] = 1;
    let ones = Tensor::full_on(x.device(), &os, crate::Scalar::Int(1), x.dtype())?;
    let mut terms = Vec::with_capacity(n as usize);
    for k in 0..n {
        let omitted = if k < n - 1 {
            let right = x.narrow(di, k + 1, n - k - 1)?.cumprod(di, None)?;
            cat(&[ones.clone(), right], di)?
        } else {
            ones.clone()
        };
        let mut t = mul(&g.narrow(di, k, n - k)?, &omitted)?.sum(Some(&[di]), true, None)?;
        if k > 0 {
            t = mul(&t, &x.narrow(di, 0, k)?.prod(Some(&[di]), true, None)?)?;
        }
        terms.push(t);
    }
    cat(&terms, di)
}

impl Tensor {
    /// Product over `dims`; integer and bool inputs give int64 unless `dtype` is given.
    /// Gradient: `g * prod / x` without zeros, exclusive products otherwise (exact).
    pub fn prod(
        &self,
        dims: Option<&[i64]>,
        keepdim: bool,
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        let out = no_grad(|| self.prod_raw(dims, keepdim, dtype))?;
        if needs_grad(&[self])
            && self.dtype().is_floating_point()
            && out.dtype().is_floating_point()
        {
            let mask = reduce_mask(self.ndim(), dims)?;
            let s = self.shape().to_vec();
            let saved = SavedTensor::new(self, "ProdBackward0");
            let od = SavedTensor::new(&out.detach(), "ProdBackward0");
            let dims_v: Option<Vec<i64>> = dims.map(|d| d.to_vec());
            let dt = self.dtype();
            record(
                "ProdBackward0",
                &[self],
                &[&out],
                Box::new(move |grads| {
                    let Some(g) = &grads[0] else {
                        return Ok(vec![None]);
                    };
                    let x = saved.get()?;
                    let r = if x.numel() == 0 {
                        unreduce(g, &s, &mask)?
                    } else if x.ndim() == 0 {
                        g.reshape(&[])?
                    } else if !has_zero(x) {
                        let y = if is_grad_enabled() {
                            x.prod(dims_v.as_deref(), keepdim, dtype)?
                        } else {
                            od.get()?.clone()
                        };
                        let gy = mul(&unreduce(g, &s, &mask)?, &unreduce(&y, &s, &mask)?)?;
                        div(&gy, &to_dt(x.clone(), gy.dtype())?)?
                    } else {
                        prod_backward_zeros(g, x, &mask)?
                    };
                    Ok(vec![Some(to_dt(r, dt)?)])
                }),
            );
        }
        Ok(out)
    }

    /// Cumulative product along `dim`. Gradient exact also when the input has zeros.
    pub fn cumprod(&self, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
        let out = no_grad(|| self.cumprod_raw(dim, dtype))?;
        if needs_grad(&[self])
            && self.dtype().is_floating_point()
            && out.dtype().is_floating_point()
        {
            let nd = self.ndim();
            let saved = SavedTensor::new(self, "CumprodBackward0");
            let od = SavedTensor::new(&out.detach(), "CumprodBackward0");
            let dt = self.dtype();
            let d = if nd == 0 { 0 } else { self.dim(dim)? };
            record(
                "CumprodBackward0",
                &[self],
                &[&out],
                Box::new(move |grads| {
                    let Some(g) = &grads[0] else {
                        return Ok(vec![None]);
                    };
                    let x = saved.get()?;
                    if nd == 0 || x.numel() <= 1 || x.shape()[d] == 1 {
                        return Ok(vec![Some(to_dt(g.clone(), dt)?)]);
                    }
                    let xc = to_dt(x.clone(), g.dtype())?;
                    let r = if !has_zero(x) {
                        let y = if is_grad_enabled() {
                            x.cumprod(dim, dtype)?
                        } else {
                            od.get()?.clone()
                        };
                        let rc = crate::tensor::reduce_grad::rev_cumsum(&mul(g, &y)?, dim)?;
                        div(&rc, &xc)?
                    } else {
                        cumprod_backward_zeros(g, &xc, d)?
                    };
                    Ok(vec![Some(to_dt(r, dt)?)])
                }),
            );
        }
        Ok(out)
    }

    /// Sum treating NaN as zero (`nansum`); same as `sum` for integers.
    pub fn nansum(
        &self,
        dims: Option<&[i64]>,
        keepdim: bool,
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        let out = no_grad(|| self.nansum_raw(dims, keepdim, dtype))?;
        if needs_grad(&[self])
            && self.dtype().is_floating_point()
            && out.dtype().is_floating_point()
        {
            let mask = reduce_mask(self.ndim(), dims)?;
            let s = self.shape().to_vec();
            let m = not_nan(self)?;
            let dt = self.dtype();
            record1("NansumBackward0", self, &out, move |g| {
                to_dt(mul(&unreduce(g, &s, &mask)?, &m)?, dt)
            });
        }
        Ok(out)
    }

    /// Mean of the non-NaN elements (`nanmean`); floating point only.
    pub fn nanmean(
        &self,
        dims: Option<&[i64]>,
        keepdim: bool,
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        let out = no_grad(|| self.nanmean_raw(dims, keepdim, dtype))?;
        if needs_grad(&[self]) && self.dtype().is_floating_point() {
            let mask = reduce_mask(self.ndim(), dims)?;
            let s = self.shape().to_vec();
            let m = not_nan(self)?;
            let dims_v = mask_dims(&mask);
            let cnt = no_grad(|| m.sum(Some(&dims_v), true, None))?;
            let w = no_grad(|| div(&m, &cnt))?;
            let dt = self.dtype();
            record1("NanmeanBackward0", self, &out, move |g| {
                to_dt(mul(&unreduce(g, &s, &mask)?, &w)?, dt)
            });
        }
        Ok(out)
    }

    /// `(var, mean)` in one pass; one node for both outputs.
    pub fn var_mean(
        &self,
        dims: Option<&[i64]>,
        correction: f64,
        keepdim: bool,
    ) -> Result<(Tensor, Tensor)> {
        moments_dtype_check(self, "var_mean")?;
        let (v, m) = no_grad(|| self.var_mean_raw(dims, correction, keepdim))?;
        self.record_moments("VarMeanBackward0", dims, correction, false, &v, &m)?;
        Ok((v, m))
    }

    /// `(std, mean)` in one pass; one node for both outputs.
    pub fn std_mean(
        &self,
        dims: Option<&[i64]>,
        correction: f64,
        keepdim: bool,
    ) -> Result<(Tensor, Tensor)> {
        moments_dtype_check(self, "std_mean")?;
        let (v, m) = no_grad(|| self.std_mean_raw(dims, correction, keepdim))?;
        self.record_moments("StdMeanBackward0", dims, correction, true, &v, &m)?;
        Ok((v, m))
    }

    fn record_moments(
        &self,
        name: &'static str,
        dims: Option<&[i64]>,
        correction: f64,
        is_std: bool,
        v: &Tensor,
        m: &Tensor,
    ) -> Result<()> {
        if !(needs_grad(&[self]) && self.dtype().is_floating_point()) {
            return Ok(());
        }
        let mask = reduce_mask(self.ndim(), dims)?;
        let s = self.shape().to_vec();
        let n = reduced_count(&s, &mask) as f64;
        let saved = SavedTensor::new(self, name);
        let od = SavedTensor::new(&v.detach(), name);
        let dims_v = mask_dims(&mask);
        let dt = self.dtype();
        record(
            name,
            &[self],
            &[v, m],
            Box::new(move |grads| {
                let (gv, gm) = (&grads[0], grads.get(1).and_then(|g| g.as_ref()));
                if gv.is_none() && gm.is_none() {
                    return Ok(vec![None]);
                }
                let x = saved.get()?;
                let mut acc: Option<Tensor> = None;
                if let Some(gv) = gv {
                    let c = sub(x, &x.mean(Some(&dims_v), true, None)?)?;
                    let r = if is_std {
                        let y = if is_grad_enabled() {
                            x.std(Some(&dims_v), correction, true)?
                        } else {
                            od.get()?.reshape(&keep_shape(&s, &mask))?
                        };
                        mul(
                            &unreduce(gv, &s, &mask)?,
                            &div(&c, &muls(&y, n - correction)?)?,
                        )?
                    } else {
                        mul(
                            &unreduce(gv, &s, &mask)?,
                            &muls(&c, 2.0 / (n - correction))?,
                        )?
                    };
                    acc = Some(r);
                }
                if let Some(gm) = gm {
                    let r = muls(&unreduce(gm, &s, &mask)?, 1.0 / n)?;
                    acc = Some(match acc {
                        Some(a) => add(&a, &r)?,
                        None => r,
                    });
                }
                Ok(vec![acc.map(|a| to_dt(a, dt)).transpose()?])
            }),
        );
        Ok(())
    }

    /// Running maximum along `dim` and the index where it was last attained.
    pub fn cummax(&self, dim: i64) -> Result<(Tensor, Tensor)> {
        let (v, i) = no_grad(|| self.cummax_raw(dim))?;
        self.record_sorted("CummaxBackward0", dim, &v, &i)?;
        Ok((v, i))
    }

    /// Running minimum along `dim` and the index where it was last attained.
    pub fn cummin(&self, dim: i64) -> Result<(Tensor, Tensor)> {
        let (v, i) = no_grad(|| self.cummin_raw(dim))?;
        self.record_sorted("CumminBackward0", dim, &v, &i)?;
        Ok((v, i))
    }

    /// `logdet`: `log(det)`, NaN for negative determinants, -inf for singular matrices.
    /// Gradient `g A^{-T}`.
    pub fn logdet(&self) -> Result<Tensor> {
        let out = no_grad(|| self.logdet_raw())?;
        if needs_grad(&[self]) && out.dtype().is_floating_point() {
            let saved = SavedTensor::new(self, "LogdetBackward0");
            record(
                "LogdetBackward0",
                &[self],
                &[&out],
                Box::new(move |grads| {
                    let Some(g) = &grads[0] else {
                        return Ok(vec![None]);
                    };
                    let it = saved.get()?.linalg_inv()?.mt()?;
                    let gk = g.unsqueeze(-1)?.unsqueeze(-1)?;
                    Ok(vec![Some(mul(&gk, &it)?)])
                }),
            );
        }
        Ok(out)
    }

    /// `linalg.pinv(A, atol, rtol, hermitian)`: Moore-Penrose pseudo-inverse. Gradient:
    /// PyTorch's pinv_backward (valid where the rank is locally constant).
    pub fn linalg_pinv(
        &self,
        atol: Option<f64>,
        rtol: Option<f64>,
        hermitian: bool,
    ) -> Result<Tensor> {
        let out = no_grad(|| self.linalg_pinv_raw(atol, rtol, hermitian))?;
        if needs_grad(&[self]) && out.dtype().is_floating_point() {
            let saved = SavedTensor::new(self, "LinalgPinvBackward0");
            let od = SavedTensor::new(&out.detach(), "LinalgPinvBackward0");
            record(
                "LinalgPinvBackward0",
                &[self],
                &[&out],
                Box::new(move |grads| {
                    let Some(g) = &grads[0] else {
                        return Ok(vec![None]);
                    };
                    let a = saved.get()?;
                    let p = if is_grad_enabled() {
                        a.linalg_pinv(atol, rtol, hermitian)?
                    } else {
                        od.get()?.clone()
                    };
                    Ok(vec![Some(pinv_backward(g, &p, a)?)])
                }),
            );
        }
        Ok(out)
    }

    /// `linalg.matrix_norm(A, ord, dim, keepdim)`. Under autograd the non-Frobenius orders
    /// are composed from differentiable ops (svdvals for 2/-2/nuc, abs/sum/amax for 1/inf).
    pub fn linalg_matrix_norm(
        &self,
        ord: MatrixNormOrd,
        dims: (i64, i64),
        keepdim: bool,
    ) -> Result<Tensor> {
        if ord == MatrixNormOrd::Fro || !needs_grad(&[self]) {
            return self.linalg_matrix_norm_raw(ord, dims, keepdim);
        }
        // Validates the arguments (and gives PyTorch's errors).
        let raw = no_grad(|| self.linalg_matrix_norm_raw(ord, dims, keepdim))?;
        let nd = self.ndim();
        let (d0, d1) = (self.dim(dims.0)?, self.dim(dims.1)?);
        let mut perm: Vec<i64> = (0..nd)
            .filter(|&d| d != d0 && d != d1)
            .map(|d| d as i64)
            .collect();
        perm.extend([d0 as i64, d1 as i64]);
        let x = self.permute(&perm)?;
        let ext = |t: &Tensor, max: bool| {
            if max {
                t.amax(Some(&[-1]), false)
            } else {
                t.amin(Some(&[-1]), false)
            }
        };
        let r = match ord {
            MatrixNormOrd::Nuc => x.linalg_svdvals()?.sum(Some(&[-1]), false, None)?,
            MatrixNormOrd::P(p) if p.abs() == 2.0 => ext(&x.linalg_svdvals()?, p > 0.0)?,
            MatrixNormOrd::P(p) => {
                let a = x.unary(UnaryOp::Abs)?;
                // 1/-1: max/min column sum; inf/-inf: max/min row sum.
                let sums = if p.is_infinite() {
                    a.sum(Some(&[-1]), false, None)?
                } else {
                    a.sum(Some(&[-2]), false, None)?
                };
                ext(&sums, p > 0.0)?
            }
            MatrixNormOrd::Fro => unreachable!("handled above"),
        };
        let r = if keepdim {
            let (lo, hi) = (d0.min(d1), d0.max(d1));
            r.unsqueeze(lo as i64)?.unsqueeze(hi as i64)?
        } else {
            r
        };
        if r.shape() != raw.shape() {
            return Err(Error::Runtime(format!(
                "linalg.matrix_norm: internal shape mismatch {:?} vs {:?}",
                r.shape(),
                raw.shape()
            )));
        }
        to_dt(r, raw.dtype())
    }

    /// `scatter_reduce` with `reduce` in sum/prod/mean/amax/amin (a new tensor).
    /// Gradients follow PyTorch's scatter_reduce_backward (amax/amin split ties evenly).
    pub fn scatter_reduce(
        &self,
        dim: i64,
        index: &Tensor,
        src: &Tensor,
        reduce: &str,
        include_self: bool,
    ) -> Result<Tensor> {
        let out = no_grad(|| self.scatter_reduce_raw(dim, index, src, reduce, include_self))?;
        if !(needs_grad(&[self, src]) && out.dtype().is_floating_point()) {
            return Ok(out);
        }
        let saved_self = SavedTensor::new(self, "ScatterReduceBackward0");
        let saved_src = SavedTensor::new(src, "ScatterReduceBackward0");
        let od = SavedTensor::new(&out.detach(), "ScatterReduceBackward0");
        let index = index.clone();
        let reduce = reduce.to_string();
        let (need_self, need_src) = (self.requires_grad(), src.requires_grad());
        let src_shape = src.shape().to_vec();
        record(
            "ScatterReduceBackward0",
            &[self, src],
            &[&out],
            Box::new(move |grads| {
                let Some(g) = &grads[0] else {
                    return Ok(vec![None, None]);
                };
                let x = saved_self.get()?;
                let s_full = saved_src.get()?;
                let s = narrow_to(s_full, index.shape())?;
                let dt = x.dtype();
                let zero = TensorOrScalar::Scalar(Scalar::Int(0));
                let (gself, gsrc) = match reduce.as_str() {
                    "sum" => (g.clone(), g.gather(dim, &index)?),
                    "mean" => {
                        let n = no_grad(|| {
                            let base = if include_self {
                                Tensor::ones(x.shape(), dt)
                            } else {
                                Tensor::zeros(x.shape(), dt)
                            }
                            .to_device(x.device())?;
                            let ones =
                                Tensor::full_on(s.device(), s.shape(), crate::Scalar::Int(1), dt)?;
                            let n = base.scatter_add(dim, &index, &ones)?;
                            let z = cmp_mask(&n, &Tensor::zeros(&[], dt), BinaryOp::Eq, dt)?;
                            add(&n, &z)
                        })?;
                        let gn = div(g, &n)?;
                        let gs = gn.gather(dim, &index)?;
                        (gn, gs)
                    }
                    "amax" | "amin" => {
                        let y = od.get()?.clone();
                        let value = no_grad(|| y.gather(dim, &index))?;
                        let mut self_is = cmp_mask(x, &y, BinaryOp::Eq, dt)?;
                        if !include_self {
                            self_is = no_grad(|| self_is.scatter(dim, &index, &zero))?;
                        }
                        let src_is = cmp_mask(&s, &value, BinaryOp::Eq, dt)?;
                        let cnt = no_grad(|| self_is.scatter_add(dim, &index, &src_is))?;
                        let gd = div(g, &cnt)?;
                        let gs = mul(&src_is, &gd.gather(dim, &index)?)?;
                        (mul(&self_is, &gd)?, gs)
                    }
                    "prod" => scatter_prod_backward(g, x, &s, &index, dim, include_self, &od)?,
                    r => {
                        return Err(Error::Runtime(format!(
                            "scatter_reduce backward: unknown reduce {r}"
                        )))
                    }
                };
                let gself = if !include_self {
                    gself.scatter(dim, &index, &zero)?
                } else {
                    gself
                };
                Ok(vec![
                    if need_self { Some(gself) } else { None },
                    if need_src {
                        Some(pad_to(&gsrc, &src_shape)?)
                    } else {
                        None
                    },
                ])
            }),
        );
        Ok(out)
    }
}

/// PyTorch's scatter_reduce(prod) backward: exact with zeros in `self` and with at most one
/// zero of `src` per target (more zeros give a zero gradient, which is also exact).
fn scatter_prod_backward(
    g: &Tensor,
    x: &Tensor,
    s: &Tensor,
    index: &Tensor,
    dim: i64,
    include_self: bool,
    od: &SavedTensor,
) -> Result<(Tensor, Tensor)> {
    let dt = x.dtype();
    let z0 = Tensor::zeros(&[], dt);
    let self_zero = no_grad(|| x.binary(&z0, BinaryOp::Eq))?;
    let masked_self = x.masked_fill(&self_zero, Scalar::Int(1))?;
    let msr = masked_self.scatter_reduce(dim, index, s, "prod", include_self)?;
    let gself = div(&mul(g, &msr)?, &masked_self)?;
    let src_zero = no_grad(|| s.binary(&z0, BinaryOp::Eq))?;
    let src_zero_f = no_grad(|| src_zero.cast(dt))?;
    let nz = no_grad(|| {
        Tensor::full_on(x.device(), x.shape(), crate::Scalar::Int(0), dt)?
            .scatter_add(dim, index, &src_zero_f)?
            .gather(dim, index)
    })?;
    let one = Tensor::ones(&[], dt);
    let single =
        no_grad(|| src_zero.binary(&nz.binary(&one, BinaryOp::Eq)?, BinaryOp::LogicalAnd))?;
    let masked_src = s.masked_fill(&single, Scalar::Int(1))?;
    let msrc_res = x.scatter_reduce(dim, index, &masked_src, "prod", include_self)?;
    let y = if is_grad_enabled() {
        x.scatter_reduce(dim, index, s, "prod", include_self)?
    } else {
        od.get()?.clone()
    };
    let a = mul(g, &msrc_res)?.gather(dim, index)?;
    let b = div(
        &mul(g, &y)?.gather(dim, index)?,
        &s.masked_fill(&src_zero, Scalar::Int(1))?,
    )?;
    let gsrc = Tensor::where_cond(
        &single,
        &TensorOrScalar::Tensor(a),
        &TensorOrScalar::Tensor(b),
    )?;
    Ok((gself, gsrc))
}

/// Record a one-input, one-output node when needed.
fn record1(
    name: &'static str,
    x: &Tensor,
    out: &Tensor,
    f: impl Fn(&Tensor) -> Result<Tensor> + Send + 'static,
) {
    if !needs_grad(&[x]) || !out.dtype().is_floating_point() {
        return;
    }
    record(
        name,
        &[x],
        &[out],
        Box::new(move |grads| match &grads[0] {
            Some(g) => Ok(vec![Some(f(g)?)]),
            None => Ok(vec![None]),
        }),
    );
}

impl Tensor {
    /// `(min, max)` over `dim` (all elements when `None`); one node for both outputs, each
    /// gradient split evenly among tied elements (NaN throughout a slice whose result is
    /// NaN, as amax/amin and PyTorch).
    pub fn aminmax(&self, dim: Option<i64>, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let (lo, hi) = no_grad(|| self.aminmax_raw(dim, keepdim))?;
        if needs_grad(&[self]) && self.dtype().is_floating_point() {
            let dims: Option<Vec<i64>> = dim.map(|d| vec![d]);
            let mask = reduce_mask(self.ndim(), dims.as_deref())?;
            let s = self.shape().to_vec();
            let saved = SavedTensor::new(self, "AminmaxBackward0");
            let (lo_d, hi_d) = (lo.detach(), hi.detach());
            record(
                "AminmaxBackward0",
                &[self],
                &[&lo, &hi],
                Box::new(move |grads| {
                    let x = saved.get()?;
                    let mut acc: Option<Tensor> = None;
                    for (g, y) in [(&grads[0], &lo_d), (&grads[1], &hi_d)] {
                        if let Some(g) = g {
                            let r = evenly(g, x, y, &s, &mask, false)?;
                            acc = Some(match acc {
                                Some(a) => add(&a, &r)?,
                                None => r,
                            });
                        }
                    }
                    Ok(vec![acc])
                }),
            );
        }
        Ok((lo, hi))
    }

    /// Lower median of the non-NaN elements as a 0-d tensor (gradient split among ties).
    pub fn nanmedian_all(&self) -> Result<Tensor> {
        if self.dtype() == DType::Bool {
            return Err(super::reduce_grad::reject_bool("median_cpu"));
        }
        let out = no_grad(|| self.nanmedian_all_raw())?;
        if needs_grad(&[self]) && self.dtype().is_floating_point() {
            let mask = vec![true; self.ndim()];
            let s = self.shape().to_vec();
            let saved = SavedTensor::new(self, "NanmedianBackward0");
            let od = out.detach();
            record1("NanmedianBackward0", self, &out, move |g| {
                evenly(g, saved.get()?, &od, &s, &mask, true)
            });
        }
        Ok(out)
    }

    /// `torch.linalg.cross`: cross product of 3-vectors along `dim` (inputs broadcast).
    /// Gradients: `other x g` for `self`, `g x self` for `other`.
    pub fn linalg_cross(&self, other: &Tensor, dim: i64) -> Result<Tensor> {
        let out = no_grad(|| self.linalg_cross_raw(other, dim))?;
        if needs_grad(&[self, other]) && out.dtype().is_floating_point() {
            let sa = SavedTensor::new(self, "LinalgCrossBackward0");
            let sb = SavedTensor::new(other, "LinalgCrossBackward0");
            let ga: GradFn = Box::new(move |g| sb.get()?.linalg_cross(g, dim));
            let gb: GradFn = Box::new(move |g| g.linalg_cross(sa.get()?, dim));
            record_n("LinalgCrossBackward0", vec![(self, ga), (other, gb)], &out);
        }
        Ok(out)
    }
}

impl Tensor {
    /// In-place `scatter_reduce` (recorded through [`Tensor::inplace`], so the saved `self`
    /// is a snapshot of the old values).
    pub fn scatter_reduce_(
        &self,
        dim: i64,
        index: &Tensor,
        src: &Tensor,
        reduce: &str,
        include_self: bool,
    ) -> Result<()> {
        self.check_inplace_overlap("scatter_reduce")?;
        if self.grad_inplace(&[src]) {
            return self.inplace(&[src], "scatter_reduce", |me| {
                me.scatter_reduce(dim, index, src, reduce, include_self)
            });
        }
        let r = no_grad(|| self.scatter_reduce_raw(dim, index, src, reduce, include_self))?;
        self.copy_raw(&r)
    }
}

/// PyTorch's dtype check of `var_mean` / `std_mean`, which names the op.
fn moments_dtype_check(t: &Tensor, op: &str) -> Result<()> {
    if t.dtype().is_floating_point() {
        return Ok(());
    }
    Err(crate::Error::NotImplemented(format!(
        "{op} only support floating point and complex dtypes"
    )))
}

/// PyTorch's `pinv_backward`: the gradient for `a` from the gradient `g` of its
/// pseudo-inverse `p` (valid where the rank is locally constant; tensor ops, so it is itself
/// differentiable). Also the gradient of a wide `linalg.lstsq`, whose solution is `p @ B`.
pub(super) fn pinv_backward(g: &Tensor, p: &Tensor, a: &Tensor) -> Result<Tensor> {
    let nd = a.ndim();
    let (m, n) = (a.shape()[nd - 2], a.shape()[nd - 1]);
    let ph = p.mt()?;
    let gh = g.mt()?;
    if m <= n {
        let k = gh.matmul(p)?;
        let kph = k.matmul(&ph)?;
        let t1 = p.matmul(&k)?.mt()?;
        let t3 = a.matmul(p)?.matmul(&kph)?;
        let t4 = ph.matmul(p)?.matmul(&sub(&gh, &k.matmul(a)?)?)?;
        add(&sub(&sub(&kph, &t1)?, &t3)?, &t4)
    } else {
        let k = p.matmul(&gh)?;
        let phk = ph.matmul(&k)?;
        let t1 = k.matmul(p)?.mt()?;
        let t2 = sub(&gh, &a.matmul(&k)?)?.matmul(p)?.matmul(&ph)?;
        let t4 = phk.matmul(p)?.matmul(a)?;
        sub(&add(&sub(&t2, &t1)?, &phk)?, &t4)
    }
}
