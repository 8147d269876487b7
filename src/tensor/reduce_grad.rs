//! Autograd for reductions, scans, softmax and sort-like ops: each public entry point runs the
//! kernel (`*_raw` in reduce.rs / sort.rs) with recording off and records one node whose
//! backward is written with public, differentiable Tensor ops (so `create_graph` works).

use super::reduce::reduce_mask;
use super::{BinaryOp, Tensor, UnaryOp};
pub(crate) use crate::autograd::formula::{add, div, mul, muls, sub};
use crate::autograd::Node;
use crate::autograd::{is_grad_enabled, needs_grad, record, record_saving, SavedTensor, Saves};
use crate::{no_grad, DType, Error, Result, Scalar};
use std::sync::{Arc, OnceLock, Weak};

/// Cast `g` to `dt` when it differs.
pub(crate) fn to_dt(g: Tensor, dt: DType) -> Result<Tensor> {
    if g.dtype() == dt {
        Ok(g)
    } else {
        g.cast(dt)
    }
}

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

/// A reduced tensor reshaped to keepdim form (no expansion).
fn keepdim_form(g: &Tensor, in_shape: &[usize], mask: &[bool]) -> Result<Tensor> {
    g.reshape(&keep_shape(in_shape, mask))
}

fn reduced_count(in_shape: &[usize], mask: &[bool]) -> usize {
    in_shape
        .iter()
        .zip(mask)
        .filter(|(_, &m)| m)
        .map(|(&s, _)| s)
        .product()
}

/// Record a one-input, one-output node when needed (its formula saved tensors).
fn record1(
    name: &'static str,
    x: &Tensor,
    out: &Tensor,
    f: impl Fn(&Tensor) -> Result<Tensor> + Send + 'static,
) {
    record1_saving(name, x, out, Saves::Tensors, f)
}

/// [`record1`] saying what the formula captured.
fn record1_saving(
    name: &'static str,
    x: &Tensor,
    out: &Tensor,
    saves: Saves,
    f: impl Fn(&Tensor) -> Result<Tensor> + Send + 'static,
) {
    if !needs_grad(&[x]) || !out.dtype().is_floating_point() || !x.dtype().is_floating_point() {
        return;
    }
    let dt = x.dtype();
    record_saving(
        name,
        &[x],
        &[out],
        saves,
        Box::new(move |grads| match &grads[0] {
            Some(g) => Ok(vec![Some(to_dt(f(g)?, dt)?)]),
            None => Ok(vec![None]),
        }),
    );
}

/// Record the node of an op returning (values, indices) whose gradient goes to the index
/// positions along `d` (indices in keepdim form, same shape as the keepdim values).
fn record_indexed(
    name: &'static str,
    x: &Tensor,
    vals: &Tensor,
    idx: &Tensor,
    d: usize,
    keep: Vec<i64>,
) {
    if !needs_grad(&[x]) || !x.dtype().is_floating_point() {
        return;
    }
    let in_shape = x.shape().to_vec();
    let idx_out = idx.clone();
    let idx = idx.detach();
    let dt = x.dtype();
    let nd = x.ndim();
    record(
        name,
        &[x],
        &[vals, &idx_out],
        Box::new(move |grads| {
            let Some(g) = &grads[0] else {
                return Ok(vec![None]);
            };
            if nd == 0 {
                return Ok(vec![Some(to_dt(g.reshape(&[])?, dt)?)]);
            }
            let gk = g.reshape(&keep)?;
            let ik = idx.reshape(&keep)?;
            let r = scatter_zeros(&gk, d, &ik, &in_shape)?;
            Ok(vec![Some(to_dt(r, dt)?)])
        }),
    );
}

/// Zeros of `shape` with `src` added at `index` along `d` (differentiable in `src`).
pub(crate) fn scatter_zeros(
    src: &Tensor,
    d: usize,
    index: &Tensor,
    shape: &[usize],
) -> Result<Tensor> {
    let z = Tensor::full_on(src.device(), shape, crate::Scalar::Int(0), src.dtype())?;
    no_grad(|| z.scatter_add_(d as i64, index, &src.contiguous()))?;
    if needs_grad(&[src]) {
        let index = index.clone();
        record(
            "ScatterAddBackward0",
            &[src],
            &[&z],
            Box::new(move |grads| match &grads[0] {
                Some(g) => Ok(vec![Some(gather_rec(g, d, &index)?)]),
                None => Ok(vec![None]),
            }),
        );
    }
    Ok(z)
}

/// `x.gather(d, index)` recorded (backward: scatter_add into zeros).
pub(crate) fn gather_rec(x: &Tensor, d: usize, index: &Tensor) -> Result<Tensor> {
    let out = no_grad(|| x.gather(d as i64, index))?;
    if needs_grad(&[x]) {
        let index = index.clone();
        let shape = x.shape().to_vec();
        record(
            "GatherBackward0",
            &[x],
            &[&out],
            Box::new(move |grads| match &grads[0] {
                Some(g) => Ok(vec![Some(scatter_zeros(g, d, &index, &shape)?)]),
                None => Ok(vec![None]),
            }),
        );
    }
    Ok(out)
}

/// Gradient of max/min-like reductions: `g` split evenly among the elements equal to the
/// result `y` (`g / count` where the mask holds, as PyTorch). With `nan_equal` a NaN result
/// goes to the NaN elements (PyTorch's `evenly_distribute_backward`: max(), min(), median());
/// without it (amax/amin's `scale_grad_by_count`) no element equals a NaN result, and the
/// gradient is NaN throughout.
pub(crate) fn evenly(
    g: &Tensor,
    x: &Tensor,
    y: &Tensor,
    in_shape: &[usize],
    mask: &[bool],
    nan_equal: bool,
) -> Result<Tensor> {
    let dt = x.dtype().compute_dtype();
    let yu = unreduce(y, in_shape, mask)?;
    let m = no_grad(|| {
        let eq = x.binary(&yu, BinaryOp::Eq)?;
        let eq = if nan_equal {
            let both_nan = x
                .unary(UnaryOp::IsNan)?
                .binary(&yu.unary(UnaryOp::IsNan)?, BinaryOp::LogicalAnd)?;
            eq.binary(&both_nan, BinaryOp::LogicalOr)?
        } else {
            eq
        };
        eq.cast(dt)
    })?;
    let dims: Vec<i64> = (0..mask.len())
        .filter(|&i| mask[i])
        .map(|i| i as i64)
        .collect();
    let cnt = no_grad(|| m.sum(Some(&dims), true, None))?;
    mul(&div(&unreduce(g, in_shape, mask)?, &cnt)?, &m)
}

/// The reversed cumulative sum along `d` (`out[i] = sum(g[i..])`), summed from the end as
/// PyTorch does: `total - cumsum + g` is the same in exact arithmetic but cancels, losing
/// every small term after a large one in float32.
pub(crate) fn rev_cumsum(g: &Tensor, d: i64) -> Result<Tensor> {
    g.flip(&[d])?.cumsum(d, None)?.flip(&[d])
}

impl Tensor {
    /// Sum over `dims` (all when `None`). Integer and bool inputs give int64 unless `dtype`
    /// says otherwise; `dtype` casts the input first, as in PyTorch.
    pub fn sum(&self, dims: Option<&[i64]>, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
        let out = no_grad(|| self.sum_raw(dims, keepdim, dtype))?;
        if needs_grad(&[self]) {
            let mask = reduce_mask(self.ndim(), dims)?;
            let s = self.shape().to_vec();
            let name = if dims.is_none() {
                "SumBackward0"
            } else {
                "SumBackward1"
            };
            record1_saving(name, self, &out, Saves::NoTensors, move |g| {
                unreduce(g, &s, &mask)
            });
        }
        Ok(out)
    }

    /// Mean over `dims`; floating-point input (or `dtype`) only, like PyTorch.
    pub fn mean(
        &self,
        dims: Option<&[i64]>,
        keepdim: bool,
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        let out = no_grad(|| self.mean_raw(dims, keepdim, dtype))?;
        if needs_grad(&[self]) {
            let mask = reduce_mask(self.ndim(), dims)?;
            let s = self.shape().to_vec();
            let n = reduced_count(&s, &mask) as f64;
            let name = if dims.is_none() {
                "MeanBackward0"
            } else {
                "MeanBackward1"
            };
            record1_saving(name, self, &out, Saves::NoTensors, move |g| {
                muls(&unreduce(g, &s, &mask)?, 1.0 / n)
            });
        }
        Ok(out)
    }

    /// Largest element as a 0-d tensor (NaN if any element is NaN).
    pub fn max_all(&self) -> Result<Tensor> {
        let out = no_grad(|| self.max_all_raw())?;
        self.record_extremum("MaxBackward1", None, false, &out)?;
        Ok(out)
    }

    /// Smallest element as a 0-d tensor (NaN if any element is NaN).
    pub fn min_all(&self) -> Result<Tensor> {
        let out = no_grad(|| self.min_all_raw())?;
        self.record_extremum("MinBackward1", None, false, &out)?;
        Ok(out)
    }

    /// Max over `dims` (all when `None`), NaN-propagating.
    pub fn amax(&self, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
        let out = no_grad(|| self.amax_raw(dims, keepdim))?;
        self.record_extremum("AmaxBackward0", dims, keepdim, &out)?;
        Ok(out)
    }

    /// Min over `dims` (all when `None`), NaN-propagating.
    pub fn amin(&self, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
        let out = no_grad(|| self.amin_raw(dims, keepdim))?;
        self.record_extremum("AminBackward0", dims, keepdim, &out)?;
        Ok(out)
    }

    fn record_extremum(
        &self,
        name: &'static str,
        dims: Option<&[i64]>,
        _keepdim: bool,
        out: &Tensor,
    ) -> Result<()> {
        if !needs_grad(&[self]) {
            return Ok(());
        }
        let mask = reduce_mask(self.ndim(), dims)?;
        let s = self.shape().to_vec();
        let saved = SavedTensor::new(self, name);
        let od = out.detach();
        // amax/amin compare with `==` only (a NaN result: NaN gradients); max(), min() and
        // median() send it to the NaN elements.
        let nan_equal = !matches!(name, "AmaxBackward0" | "AminBackward0");
        record1(name, self, out, move |g| {
            evenly(g, saved.get()?, &od, &s, &mask, nan_equal)
        });
        Ok(())
    }

    /// `max(dim)`: values and (first-occurrence) indices along `dim`.
    pub fn max_dim(&self, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let (v, i) = no_grad(|| self.max_dim_raw(dim, keepdim))?;
        self.record_dim_indexed("MaxBackward0", dim, &v, &i)?;
        Ok((v, i))
    }

    /// `min(dim)`: values and (first-occurrence) indices along `dim`.
    pub fn min_dim(&self, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let (v, i) = no_grad(|| self.min_dim_raw(dim, keepdim))?;
        self.record_dim_indexed("MinBackward0", dim, &v, &i)?;
        Ok((v, i))
    }

    /// Record a (values, indices) reduction over one dim (max/min/kthvalue/median/mode).
    pub(crate) fn record_dim_indexed(
        &self,
        name: &'static str,
        dim: i64,
        v: &Tensor,
        i: &Tensor,
    ) -> Result<()> {
        if !needs_grad(&[self]) {
            return Ok(());
        }
        let nd = self.ndim();
        let d = if nd == 0 { 0 } else { self.dim(dim)? };
        let mut keep: Vec<i64> = self.shape().iter().map(|&s| s as i64).collect();
        if nd > 0 {
            keep[d] = 1;
        }
        record_indexed(name, self, v, i, d, keep);
        Ok(())
    }

    /// Record a (values, indices) op whose outputs keep all dims (sort, topk).
    pub(crate) fn record_sorted(
        &self,
        name: &'static str,
        dim: i64,
        v: &Tensor,
        i: &Tensor,
    ) -> Result<()> {
        if !needs_grad(&[self]) {
            return Ok(());
        }
        let d = if self.ndim() == 0 { 0 } else { self.dim(dim)? };
        let keep: Vec<i64> = v.shape().iter().map(|&s| s as i64).collect();
        record_indexed(name, self, v, i, d, keep);
        Ok(())
    }

    /// Variance over `dims` with `correction` (1 = unbiased, Bessel's correction).
    pub fn var(&self, dims: Option<&[i64]>, correction: f64, keepdim: bool) -> Result<Tensor> {
        let out = no_grad(|| self.var_raw(dims, correction, keepdim))?;
        if needs_grad(&[self]) {
            let mask = reduce_mask(self.ndim(), dims)?;
            let s = self.shape().to_vec();
            let n = reduced_count(&s, &mask) as f64;
            let saved = SavedTensor::new(self, "VarBackward0");
            let dims_v: Vec<i64> = (0..mask.len())
                .filter(|&i| mask[i])
                .map(|i| i as i64)
                .collect();
            record1("VarBackward0", self, &out, move |g| {
                let x = saved.get()?;
                let c = sub(x, &x.mean(Some(&dims_v), true, None)?)?;
                let k = 2.0 / (n - correction);
                mul(&unreduce(g, &s, &mask)?, &muls(&c, k)?)
            });
        }
        Ok(out)
    }

    /// Standard deviation over `dims` with `correction`.
    pub fn std(&self, dims: Option<&[i64]>, correction: f64, keepdim: bool) -> Result<Tensor> {
        let out = no_grad(|| self.std_raw(dims, correction, keepdim))?;
        if needs_grad(&[self]) {
            let mask = reduce_mask(self.ndim(), dims)?;
            let s = self.shape().to_vec();
            let n = reduced_count(&s, &mask) as f64;
            let saved = SavedTensor::new(self, "StdBackward0");
            let od = SavedTensor::new(&out.detach(), "StdBackward0");
            let dims_v: Vec<i64> = (0..mask.len())
                .filter(|&i| mask[i])
                .map(|i| i as i64)
                .collect();
            record1("StdBackward0", self, &out, move |g| {
                let x = saved.get()?;
                let y = if is_grad_enabled() {
                    x.std(Some(&dims_v), correction, true)?
                } else {
                    keepdim_form(od.get()?, &s, &mask)?
                };
                let c = sub(x, &x.mean(Some(&dims_v), true, None)?)?;
                let den = muls(&y, n - correction)?;
                // 0 where the std is 0 (equal values: 0 / 0), as PyTorch's std_backward.
                let zero_std = y.binary_scalar(Scalar::Float(0.0), BinaryOp::Eq, false)?;
                let d = div(&c, &den)?.masked_fill(&zero_std, Scalar::Float(0.0))?;
                mul(&unreduce(g, &s, &mask)?, &d)
            });
        }
        Ok(out)
    }

    /// Vector p-norm over `dims` (all when `None`): p = 2 is also the Frobenius norm,
    /// `f64::INFINITY`/`NEG_INFINITY` give max/min |x|, 0 counts non-zeros.
    pub fn norm(
        &self,
        p: f64,
        dims: Option<&[i64]>,
        keepdim: bool,
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        let out = no_grad(|| self.norm_raw(p, dims, keepdim, dtype))?;
        self.record_norm(p, dims, keepdim, &out)?;
        Ok(out)
    }

    /// Record the node of a vector p-norm (`norm`, `linalg.vector_norm`), with PyTorch's
    /// `norm_backward`: no gradient for p = 0; for p < 1 (negative p too) zero elements get
    /// 0; for p > 1 an all-zero slice gets 0; for p = +-inf the gradient is split among the
    /// elements whose |x| is the norm, or NaN (whose sign, 0, then zeroes it).
    pub(crate) fn record_norm(
        &self,
        p: f64,
        dims: Option<&[i64]>,
        keepdim: bool,
        out: &Tensor,
    ) -> Result<()> {
        if !needs_grad(&[self])
            || !out.dtype().is_floating_point()
            || !self.dtype().is_floating_point()
        {
            return Ok(());
        }
        if p == 0.0 {
            // PyTorch returns an undefined gradient: the input's .grad stays None.
            record(
                "NormBackward1",
                &[self],
                &[out],
                Box::new(|_| Ok(vec![None])),
            );
            return Ok(());
        }
        let mask = reduce_mask(self.ndim(), dims)?;
        let s = self.shape().to_vec();
        let saved = SavedTensor::new(self, "NormBackward1");
        let od = SavedTensor::new(&out.detach(), "NormBackward1");
        let dims_v: Option<Vec<i64>> = dims.map(|d| d.to_vec());
        let odt = out.dtype();
        record1("NormBackward1", self, out, move |g| {
            let x = to_dt(saved.get()?.clone(), odt)?;
            let sign = x.unary(UnaryOp::Sign)?;
            let gu = unreduce(g, &s, &mask)?;
            if p == 1.0 {
                return mul(&sign, &gu);
            }
            let y = if is_grad_enabled() {
                x.norm(p, dims_v.as_deref(), keepdim, None)?
            } else {
                od.get()?.clone()
            };
            let ax = x.unary(UnaryOp::Abs)?;
            if p.is_infinite() {
                return mul(&sign, &evenly(g, &ax, &y, &s, &mask, true)?);
            }
            let yu = unreduce(&y, &s, &mask)?;
            let zero = Scalar::Float(0.0);
            let y_zero = yu.binary_scalar(zero, BinaryOp::Eq, false)?;
            if p == 2.0 {
                return mul(&gu, &div(&x, &yu)?.masked_fill(&y_zero, zero)?);
            }
            let pow = |t: &Tensor, e: f64| t.binary_scalar(Scalar::Float(e), BinaryOp::Pow, false);
            if p < 1.0 {
                // sgn(x) |x|^(p-1) (0 at x == 0) * g * y^(1-p)
                let x_zero = x.binary_scalar(zero, BinaryOp::Eq, false)?;
                let scaled = mul(&sign, &pow(&ax, p - 1.0)?)?.masked_fill(&x_zero, zero)?;
                return mul(&mul(&scaled, &gu)?, &pow(&yu, 1.0 - p)?);
            }
            // sgn(x) |x|^(p-1) (x |x|^(p-2) for p > 2) * g / y^(p-1) (0 where y == 0)
            let scaled = if p < 2.0 {
                mul(&sign, &pow(&ax, p - 1.0)?)?
            } else {
                mul(&x, &pow(&ax, p - 2.0)?)?
            };
            let scale = div(&gu, &pow(&yu, p - 1.0)?)?.masked_fill(&y_zero, zero)?;
            mul(&scaled, &scale)
        });
        Ok(())
    }

    /// `log(sum(exp(x)))` over `dims`, computed stably. Integers are promoted to the default
    /// float dtype.
    pub fn logsumexp(&self, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
        let out = no_grad(|| self.logsumexp_raw(dims, keepdim))?;
        if needs_grad(&[self]) {
            let mask = reduce_mask(self.ndim(), dims)?;
            let s = self.shape().to_vec();
            let saved = SavedTensor::new(self, "LogsumexpBackward0");
            let od = SavedTensor::new(&out.detach(), "LogsumexpBackward0");
            let dims_v: Option<Vec<i64>> = dims.map(|d| d.to_vec());
            record1("LogsumexpBackward0", self, &out, move |g| {
                let x = saved.get()?;
                let y = if is_grad_enabled() {
                    x.logsumexp(dims_v.as_deref(), keepdim)?
                } else {
                    od.get()?.clone()
                };
                let e = sub(x, &unreduce(&y, &s, &mask)?)?.unary(UnaryOp::Exp)?;
                mul(&unreduce(g, &s, &mask)?, &e)
            });
        }
        Ok(out)
    }

    /// Cumulative sum along `dim` (integers and bools give int64 unless `dtype` is given).
    pub fn cumsum(&self, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
        if dtype == Some(DType::Bool) {
            return Err(reject_bool("cumsum_out_cpu"));
        }
        let out = no_grad(|| self.cumsum_raw(dim, dtype))?;
        if needs_grad(&[self]) {
            let nd = self.ndim();
            record1_saving("CumsumBackward0", self, &out, Saves::NoTensors, move |g| {
                if nd == 0 {
                    return Ok(g.clone());
                }
                rev_cumsum(g, dim)
            });
        }
        Ok(out)
    }

    /// Softmax along `dim` (numerically stable; `dtype` casts the input first).
    pub fn softmax(&self, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
        let out = no_grad(|| self.softmax_raw(dim, dtype))?;
        self.record_softmax(dim, false, &out);
        Ok(out)
    }

    /// Log-softmax along `dim`.
    pub fn log_softmax(&self, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
        let out = no_grad(|| self.log_softmax_raw(dim, dtype))?;
        self.record_softmax(dim, true, &out);
        Ok(out)
    }

    fn record_softmax(&self, dim: i64, log: bool, out: &Tensor) {
        if !needs_grad(&[self]) {
            return;
        }
        let name = if log {
            "LogSoftmaxBackward0"
        } else {
            "SoftmaxBackward0"
        };
        // Only the result is saved, as PyTorch (half the memory of keeping the input too).
        // Under create_graph it is given back its place in the graph (this node, held weakly
        // to avoid a cycle), so double backward differentiates through it.
        let od = SavedTensor::new(&out.detach(), name);
        let this: Arc<OnceLock<Weak<Node>>> = Arc::default();
        let this_node = this.clone();
        let nd = self.ndim();
        record1(name, self, out, move |g| {
            if nd == 0 {
                return muls(g, 0.0);
            }
            let y = od.get()?;
            let y = match this_node.get().and_then(Weak::upgrade) {
                Some(node) if is_grad_enabled() => y.detach().with_grad_fn(node, 0),
                _ => y.clone(),
            };
            if log {
                let s = g.sum(Some(&[dim]), true, None)?;
                sub(g, &mul(&y.unary(UnaryOp::Exp)?, &s)?)
            } else {
                let gy = mul(g, &y)?;
                let s = gy.sum(Some(&[dim]), true, None)?;
                sub(&gy, &mul(&y, &s)?)
            }
        });
        if let Some(node) = out.grad_fn() {
            let _ = this.set(Arc::downgrade(&node));
        }
    }
}

// ---------------------------------------------------------------------- sort family

impl Tensor {
    /// Sort along `dim`; returns (values, indices). Ties keep their original order.
    pub fn sort(&self, dim: i64, descending: bool) -> Result<(Tensor, Tensor)> {
        let (v, i) = no_grad(|| self.sort_raw(dim, descending))?;
        self.record_sorted("SortBackward0", dim, &v, &i)?;
        Ok((v, i))
    }

    /// The `k` largest (or smallest) elements along `dim`, sorted, with their indices.
    pub fn topk(&self, k: i64, dim: i64, largest: bool) -> Result<(Tensor, Tensor)> {
        if self.dtype() == DType::Bool {
            return Err(Error::NotImplemented(
                "topk does not support bool dtypes on CPU".into(),
            ));
        }
        let (v, i) = no_grad(|| self.topk_raw(k, dim, largest))?;
        self.record_sorted("TopkBackward0", dim, &v, &i)?;
        Ok((v, i))
    }

    /// The `k`-th smallest element (1-based) along `dim` and its index.
    pub fn kthvalue(&self, k: i64, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
        if self.dtype() == DType::Bool {
            return Err(reject_bool("kthvalue_cpu"));
        }
        let (v, i) = no_grad(|| self.kthvalue_raw(k, dim, keepdim))?;
        self.record_dim_indexed("KthvalueBackward0", dim, &v, &i)?;
        Ok((v, i))
    }

    /// Lower median of all elements (NaN if any is NaN), as a 0-d tensor.
    pub fn median_all(&self) -> Result<Tensor> {
        if self.dtype() == DType::Bool {
            return Err(reject_bool("median_cpu"));
        }
        let out = no_grad(|| self.median_all_raw())?;
        self.record_extremum("MedianBackward0", None, false, &out)?;
        Ok(out)
    }

    /// Lower median along `dim` and its index.
    pub fn median_dim(&self, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
        if self.dtype() == DType::Bool {
            return Err(reject_bool("median_out"));
        }
        let (v, i) = no_grad(|| self.median_dim_raw(dim, keepdim))?;
        self.record_dim_indexed("MedianBackward1", dim, &v, &i)?;
        Ok((v, i))
    }

    /// Lower median of the non-NaN elements along `dim`, and its index.
    pub fn nanmedian_dim(&self, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
        if self.dtype() == DType::Bool {
            return Err(reject_bool("median_out"));
        }
        let (v, i) = no_grad(|| self.nanmedian_dim_raw(dim, keepdim))?;
        self.record_dim_indexed("NanmedianBackward1", dim, &v, &i)?;
        Ok((v, i))
    }

    /// Most frequent value along `dim` and the index of its last occurrence.
    pub fn mode(&self, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let (v, i) = no_grad(|| self.mode_raw(dim, keepdim))?;
        self.record_dim_indexed("ModeBackward0", dim, &v, &i)?;
        Ok((v, i))
    }
}

/// PyTorch's `"<kernel>" not implemented for 'Bool'` for ops with no bool kernel.
pub(super) fn reject_bool(kernel: &'static str) -> Error {
    Error::UnsupportedDType {
        op: kernel,
        dtype: DType::Bool,
    }
}
