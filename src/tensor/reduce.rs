//! Reductions (`sum`, `mean`, `max`, `var`, `norm`, `logsumexp`, `all`...), scans (`cumsum`,
//! `cummax`...) and `softmax`/`log_softmax`, with PyTorch's dtype rules: integer and bool
//! sums/products give int64, `mean`/`var`/`norm` need floating point, f16/bf16 are accumulated
//! in f32 or f64. Kernels are in `crate::cpu::reduce`; this file validates and dispatches.

use super::Tensor;
use crate::cpu::reduce::{self as k, Reducer, Scanner};
use crate::cuda::ops as cuda;
use crate::layout::dim_list_mask;
use crate::{with_dtype, with_float_dtype, DType, Element, Error, Result};

/// Flags for the dims a reduction removes: all of them for `None` or an empty list (as
/// PyTorch treats `dim=()`), else those listed (negative allowed, no repeats).
pub(crate) fn reduce_mask(ndim: usize, dims: Option<&[i64]>) -> Result<Vec<bool>> {
    match dims {
        None | Some([]) => Ok(vec![true; ndim]),
        Some(ds) => dim_list_mask(ds, ndim),
    }
}

/// The output shape of a reduction.
pub(crate) fn reduced_shape(shape: &[usize], mask: &[bool], keepdim: bool) -> Vec<usize> {
    shape
        .iter()
        .zip(mask)
        .filter_map(|(&s, &m)| match (m, keepdim) {
            (false, _) => Some(s),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect()
}

fn reduced_numel(shape: &[usize], mask: &[bool]) -> usize {
    shape
        .iter()
        .zip(mask)
        .filter(|(_, &m)| m)
        .map(|(&s, _)| s)
        .product()
}

fn run<T: Element, R: Reducer<T>>(t: &Tensor, mask: &[bool], r: &R) -> Result<Vec<R::Out>> {
    Ok(k::reduce(t.storage_slice::<T>()?, t.layout(), mask, r))
}

/// A tensor of `dtype` from f64 values.
fn from_f64s(v: Vec<f64>, shape: &[usize], dtype: DType) -> Tensor {
    with_dtype!(dtype, T, {
        Tensor::from_vec_unchecked(v.into_iter().map(T::from_f64).collect::<Vec<T>>(), shape)
    })
}

/// A tensor of `dtype` from i64 values.
fn from_i64s(v: Vec<i64>, shape: &[usize], dtype: DType) -> Tensor {
    if dtype == DType::I64 {
        return Tensor::from_vec_unchecked(v, shape);
    }
    with_dtype!(dtype, T, {
        Tensor::from_vec_unchecked(v.into_iter().map(T::from_i64).collect::<Vec<T>>(), shape)
    })
}

fn require_float(op: &str, t: &Tensor, what: &str) -> Result<()> {
    if t.dtype().is_floating_point() {
        Ok(())
    } else {
        Err(Error::NotImplemented(format!(
            "{op}: {what} floating point or complex dtype but got {}",
            t.dtype().torch_name()
        )))
    }
}

/// Error for an empty reduction without identity, as PyTorch's `zero_numel_check_dims`.
fn check_nonempty_dims(op: &str, t: &Tensor, mask: &[bool], dims_given: bool) -> Result<()> {
    if t.numel() != 0 {
        return Ok(());
    }
    if !dims_given {
        // (a RuntimeError in PyTorch; a named empty dim below is an IndexError)
        return Err(Error::Runtime(format!(
            "{op}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument."
        )));
    }
    for (d, (&s, &m)) in t.shape().iter().zip(mask).enumerate() {
        if m && s == 0 {
            return Err(Error::Index(format!(
                "{op}(): Expected reduction dim {d} to have non-zero size."
            )));
        }
    }
    Ok(())
}

fn dims_given(dims: Option<&[i64]>) -> bool {
    matches!(dims, Some(d) if !d.is_empty())
}

/// (variance, mean) of one output of the `Variance` reducer.
type VarMean = (f64, f64);

fn unzip<A, B>(v: Vec<(A, B)>) -> (Vec<A>, Vec<B>) {
    v.into_iter().unzip()
}

/// A contiguous tensor's elements as a slice (from its storage offset).
fn contiguous_slice<T: Element>(t: &Tensor) -> Result<&[T]> {
    if t.numel() == 0 {
        // (`Layout::is_contiguous` is false for some empty shapes; nothing to read anyway.)
        return Ok(&[]);
    }
    debug_assert!(t.is_contiguous());
    let off = t.storage_offset();
    Ok(&t.storage_slice::<T>()?[off..off + t.numel()])
}

/// Float sums (f64 results) of a tensor already in its compute dtype (f32 or f64).
fn float_sums(x: &Tensor, mask: &[bool]) -> Result<Vec<f64>> {
    match x.dtype() {
        DType::F32 => run::<f32, _>(x, mask, &k::SumF32),
        DType::F64 => run::<f64, _>(x, mask, &k::SumF64),
        d => Err(Error::UnsupportedDType {
            op: "sum",
            dtype: d,
        }),
    }
}

/// `dim` for ops that take exactly one (0-d tensors accept 0 and -1).
fn one_dim(t: &Tensor, dim: i64) -> Result<Vec<bool>> {
    reduce_mask(t.ndim(), Some(&[dim]))
}

impl Tensor {
    // ------------------------------------------------------------------ sum, mean, prod

    /// Sum over `dims` (all when `None`). Integer and bool inputs give int64 unless `dtype`
    /// says otherwise; `dtype` casts the input first, as in PyTorch.
    pub(crate) fn sum_raw(
        &self,
        dims: Option<&[i64]>,
        keepdim: bool,
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        let mask = reduce_mask(self.ndim(), dims)?;
        let shape = reduced_shape(self.shape(), &mask, keepdim);
        let out_dt = dtype.unwrap_or(if self.dtype().is_floating_point() {
            self.dtype()
        } else {
            DType::I64
        });
        if self.device().is_cuda() {
            let x = self.to_dtype(out_dt);
            return cuda::reduce(&x, &mask, keepdim, cuda::Reduction::Sum);
        }
        if out_dt.is_floating_point() {
            let x = self.to_dtype(out_dt).to_dtype(out_dt.compute_dtype());
            return Ok(from_f64s(float_sums(&x, &mask)?, &shape, out_dt));
        }
        let x = if self.dtype().is_floating_point() {
            self.to_dtype(out_dt)
        } else {
            self.clone()
        };
        let v = with_dtype!(x.dtype(), T, { run::<T, _>(&x, &mask, &k::SumInt)? });
        Ok(from_i64s(v, &shape, out_dt))
    }

    /// Mean over `dims`; floating-point input (or `dtype`) only, like PyTorch.
    pub(crate) fn mean_raw(
        &self,
        dims: Option<&[i64]>,
        keepdim: bool,
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        let out_dt = match dtype {
            Some(d) if !d.is_floating_point() => {
                return Err(Error::NotImplemented(format!(
                    "mean(): could not infer output dtype. Optional dtype must be either a floating point or complex dtype. Got: {}",
                    d.torch_name()
                )))
            }
            Some(d) => d,
            None if !self.dtype().is_floating_point() => {
                return Err(Error::NotImplemented(format!(
                    "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: {}",
                    self.dtype().torch_name()
                )))
            }
            None => self.dtype(),
        };
        let mask = reduce_mask(self.ndim(), dims)?;
        let shape = reduced_shape(self.shape(), &mask, keepdim);
        if self.device().is_cuda() {
            let x = self.to_dtype(out_dt);
            return cuda::reduce(&x, &mask, keepdim, cuda::Reduction::Mean);
        }
        let n = reduced_numel(self.shape(), &mask) as f64;
        let x = self.to_dtype(out_dt).to_dtype(out_dt.compute_dtype());
        let v = float_sums(&x, &mask)?.into_iter().map(|s| s / n).collect();
        Ok(from_f64s(v, &shape, out_dt))
    }

    /// Product over `dims`; integer and bool inputs give int64 unless `dtype` is given.
    pub(crate) fn prod_raw(
        &self,
        dims: Option<&[i64]>,
        keepdim: bool,
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        let mask = reduce_mask(self.ndim(), dims)?;
        let shape = reduced_shape(self.shape(), &mask, keepdim);
        let out_dt = dtype.unwrap_or(if self.dtype().is_floating_point() {
            self.dtype()
        } else {
            DType::I64
        });
        if self.device().is_cuda() {
            let x = self.to_dtype(out_dt);
            return cuda::reduce(&x, &mask, keepdim, cuda::Reduction::Prod);
        }
        let x = if out_dt.is_floating_point() || self.dtype().is_floating_point() {
            self.to_dtype(out_dt)
        } else {
            self.clone()
        };
        if out_dt.is_floating_point() {
            let v = with_dtype!(x.dtype(), T, { run::<T, _>(&x, &mask, &k::ProdFloat)? });
            return Ok(from_f64s(v, &shape, out_dt));
        }
        let v = with_dtype!(x.dtype(), T, { run::<T, _>(&x, &mask, &k::ProdInt)? });
        Ok(from_i64s(v, &shape, out_dt))
    }

    /// `self` (floating point) with NaN replaced by zero, and where the NaNs were: nansum and
    /// nanmean as ops that have CUDA kernels.
    fn nan_zeroed(&self) -> Result<(Tensor, Tensor)> {
        use super::index::TensorOrScalar;
        let nan = self.unary(super::UnaryOp::IsNan)?;
        let zeroed = Tensor::where_raw(
            &nan,
            &TensorOrScalar::Scalar(crate::Scalar::Int(0)),
            &TensorOrScalar::Tensor(self.clone()),
        )?;
        Ok((zeroed, nan))
    }

    /// Sum treating NaN as zero (`nansum`); same as `sum` for integers.
    pub(crate) fn nansum_raw(
        &self,
        dims: Option<&[i64]>,
        keepdim: bool,
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        let out_dt = dtype.unwrap_or(self.dtype());
        if !out_dt.is_floating_point() || !self.dtype().is_floating_point() {
            return self.sum(dims, keepdim, dtype);
        }
        if self.device().is_cuda() {
            let (zeroed, _) = self.to_dtype(out_dt).nan_zeroed()?;
            return zeroed.sum_raw(dims, keepdim, None);
        }
        let mask = reduce_mask(self.ndim(), dims)?;
        let shape = reduced_shape(self.shape(), &mask, keepdim);
        let x = self.to_dtype(out_dt);
        let v = with_dtype!(x.dtype(), T, { run::<T, _>(&x, &mask, &k::NanSum)? });
        Ok(from_f64s(v, &shape, out_dt))
    }

    /// Mean of the non-NaN elements (`nanmean`); floating point only.
    pub(crate) fn nanmean_raw(
        &self,
        dims: Option<&[i64]>,
        keepdim: bool,
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        let x = self.to_dtype(dtype.unwrap_or(self.dtype()));
        require_float("nanmean()", &x, "expected input to have")?;
        if x.device().is_cuda() {
            let (zeroed, nan) = x.nan_zeroed()?;
            let total = zeroed.sum_raw(dims, keepdim, None)?;
            let kept = nan
                .unary(super::UnaryOp::LogicalNot)?
                .to_dtype(x.dtype())
                .sum_raw(dims, keepdim, None)?;
            return total.binary(&kept, super::BinaryOp::Div);
        }
        let mask = reduce_mask(self.ndim(), dims)?;
        let shape = reduced_shape(self.shape(), &mask, keepdim);
        let v = with_dtype!(x.dtype(), T, { run::<T, _>(&x, &mask, &k::NanMean)? });
        Ok(from_f64s(v, &shape, x.dtype()))
    }

    // ------------------------------------------------------------------ max, min, arg*

    fn extremum_all<const MAX: bool>(&self) -> Result<Tensor> {
        if self.numel() == 0 {
            let op = if MAX { "max" } else { "min" };
            return Err(Error::Runtime(format!(
                "{op}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument."
            )));
        }
        let mask = vec![true; self.ndim()];
        if self.device().is_cuda() {
            let r = if MAX {
                cuda::Reduction::Max
            } else {
                cuda::Reduction::Min
            };
            return cuda::reduce(self, &mask, false, r);
        }
        Ok(with_dtype!(self.dtype(), T, {
            let v = run::<T, _>(self, &mask, &k::Extremum::<MAX>)?;
            Tensor::from_vec_unchecked(v, &[])
        }))
    }

    /// Largest element as a 0-d tensor (NaN if any element is NaN).
    pub(crate) fn max_all_raw(&self) -> Result<Tensor> {
        self.extremum_all::<true>()
    }

    /// Smallest element as a 0-d tensor (NaN if any element is NaN).
    pub(crate) fn min_all_raw(&self) -> Result<Tensor> {
        self.extremum_all::<false>()
    }

    fn arg_extremum_dim<const MAX: bool>(
        &self,
        mask: &[bool],
        keepdim: bool,
    ) -> Result<(Tensor, Tensor)> {
        let shape = reduced_shape(self.shape(), mask, keepdim);
        if self.device().is_cuda() {
            let d = mask.iter().position(|&m| m).unwrap_or(0);
            let r = if MAX {
                cuda::Reduction::Max
            } else {
                cuda::Reduction::Min
            };
            if self.ndim() == 0 {
                let idx = cuda::full_on(self, &[], crate::Scalar::Int(0), DType::I64)?;
                return Ok((self.clone_data(), idx));
            }
            if mask.iter().filter(|&&m| m).count() > 1 {
                // argmax/argmin over everything: the index into the flattened tensor.
                let flat = cuda::contiguous(self)?.reshape_contiguous(&[self.numel()]);
                let (v, i) = cuda::reduce_dim(&flat, 0, r)?;
                let i = i.ok_or_else(|| Error::Runtime("max/min: missing indices".into()))?;
                return Ok((v.reshape_contiguous(&shape), i.reshape_contiguous(&shape)));
            }
            let (v, i) = cuda::reduce_dim(self, d, r)?;
            let i = i.ok_or_else(|| Error::Runtime("max/min: missing indices".into()))?;
            return Ok((v.reshape_contiguous(&shape), i.reshape_contiguous(&shape)));
        }
        Ok(with_dtype!(self.dtype(), T, {
            let (v, i) = unzip(run::<T, _>(self, mask, &k::ArgExtremum::<MAX>)?);
            (
                Tensor::from_vec_unchecked(v, &shape),
                Tensor::from_vec_unchecked(i, &shape),
            )
        }))
    }

    /// `max(dim)`: values and (first-occurrence) indices along `dim`.
    pub(crate) fn max_dim_raw(&self, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let mask = one_dim(self, dim)?;
        check_nonempty_dims("max", self, &mask, true)?;
        self.arg_extremum_dim::<true>(&mask, keepdim)
    }

    /// `min(dim)`: values and (first-occurrence) indices along `dim`.
    pub(crate) fn min_dim_raw(&self, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let mask = one_dim(self, dim)?;
        check_nonempty_dims("min", self, &mask, true)?;
        self.arg_extremum_dim::<false>(&mask, keepdim)
    }

    fn amax_amin<const MAX: bool>(&self, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
        let op = if MAX { "amax" } else { "amin" };
        let mask = reduce_mask(self.ndim(), dims)?;
        check_nonempty_dims(op, self, &mask, dims_given(dims))?;
        let shape = reduced_shape(self.shape(), &mask, keepdim);
        if self.device().is_cuda() {
            let r = if MAX {
                cuda::Reduction::Max
            } else {
                cuda::Reduction::Min
            };
            return cuda::reduce(self, &mask, keepdim, r);
        }
        Ok(with_dtype!(self.dtype(), T, {
            Tensor::from_vec_unchecked(run::<T, _>(self, &mask, &k::Extremum::<MAX>)?, &shape)
        }))
    }

    /// Max over `dims` (all when `None`), NaN-propagating.
    pub(crate) fn amax_raw(&self, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
        self.amax_amin::<true>(dims, keepdim)
    }

    /// Min over `dims` (all when `None`), NaN-propagating.
    pub(crate) fn amin_raw(&self, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
        self.amax_amin::<false>(dims, keepdim)
    }

    fn argext<const MAX: bool>(&self, dim: Option<i64>, keepdim: bool) -> Result<Tensor> {
        let op = if MAX { "argmax" } else { "argmin" };
        if self.dtype() == DType::Bool {
            return Err(Error::UnsupportedDType {
                op: if MAX { "argmax_cpu" } else { "argmin_cpu" },
                dtype: DType::Bool,
            });
        }
        let mask = match dim {
            None => {
                if self.numel() == 0 {
                    return Err(Error::Index(format!(
                        "{op}(): Expected reduction dim to be specified for input.numel() == 0."
                    )));
                }
                vec![true; self.ndim()]
            }
            Some(d) => {
                let m = one_dim(self, d)?;
                check_nonempty_dims(op, self, &m, true)?;
                m
            }
        };
        Ok(self.arg_extremum_dim::<MAX>(&mask, keepdim)?.1)
    }

    /// Index of the first maximum along `dim`, or in the flattened tensor when `None`.
    pub fn argmax(&self, dim: Option<i64>, keepdim: bool) -> Result<Tensor> {
        self.argext::<true>(dim, keepdim)
    }

    /// Index of the first minimum along `dim`, or in the flattened tensor when `None`.
    pub fn argmin(&self, dim: Option<i64>, keepdim: bool) -> Result<Tensor> {
        self.argext::<false>(dim, keepdim)
    }

    /// `(min, max)` over `dim` (all when `None`).
    pub(crate) fn aminmax_raw(&self, dim: Option<i64>, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let mask = match dim {
            None => vec![true; self.ndim()],
            Some(d) => one_dim(self, d)?,
        };
        if self.numel() == 0 && (dim.is_none() || reduced_numel(self.shape(), &mask) == 0) {
            return Err(Error::Runtime(
                "aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity.".into(),
            ));
        }
        let shape = reduced_shape(self.shape(), &mask, keepdim);
        if self.device().is_cuda() {
            let (lo, hi) = (cuda::Reduction::Min, cuda::Reduction::Max);
            return Ok((
                cuda::reduce(self, &mask, keepdim, lo)?,
                cuda::reduce(self, &mask, keepdim, hi)?,
            ));
        }
        Ok(with_dtype!(self.dtype(), T, {
            let (lo, hi) = unzip(run::<T, _>(self, &mask, &k::MinMax)?);
            (
                Tensor::from_vec_unchecked(lo, &shape),
                Tensor::from_vec_unchecked(hi, &shape),
            )
        }))
    }

    // ------------------------------------------------------------------ var, std, norm

    /// `moments` on CUDA: (var or std, optional mean) from the `var` kernel.
    fn moments_cuda(
        &self,
        dims: Option<&[i64]>,
        correction: f64,
        keepdim: bool,
        take_sqrt: bool,
        want_mean: bool,
    ) -> Result<(Tensor, Option<Tensor>)> {
        if !self.dtype().is_floating_point() {
            return Err(Error::NotImplemented(
                "std and var only support floating point and complex dtypes".into(),
            ));
        }
        let mask = reduce_mask(self.ndim(), dims)?;
        crate::cuda::reduce_ops::var(self, &mask, correction, keepdim, take_sqrt, want_mean)
    }

    /// (var, mean) on CUDA, for `var_mean`/`std_mean`.
    fn moments_cuda_pair(
        &self,
        dims: Option<&[i64]>,
        correction: f64,
        keepdim: bool,
        take_sqrt: bool,
    ) -> Result<(Tensor, Tensor)> {
        let (v, m) = self.moments_cuda(dims, correction, keepdim, take_sqrt, true)?;
        let m = m.ok_or_else(|| Error::Runtime("var_mean: missing mean".into()))?;
        Ok((v, m))
    }

    fn moments(
        &self,
        dims: Option<&[i64]>,
        correction: f64,
        keepdim: bool,
    ) -> Result<(Vec<VarMean>, Vec<usize>)> {
        if !self.dtype().is_floating_point() {
            return Err(Error::NotImplemented(
                "std and var only support floating point and complex dtypes".into(),
            ));
        }
        let mask = reduce_mask(self.ndim(), dims)?;
        let shape = reduced_shape(self.shape(), &mask, keepdim);
        let r = k::Variance { correction };
        let v = with_dtype!(self.dtype(), T, { run::<T, _>(self, &mask, &r)? });
        Ok((v, shape))
    }

    /// Variance over `dims` with `correction` (1 = unbiased, Bessel's correction).
    pub(crate) fn var_raw(
        &self,
        dims: Option<&[i64]>,
        correction: f64,
        keepdim: bool,
    ) -> Result<Tensor> {
        if self.device().is_cuda() {
            return Ok(self
                .moments_cuda(dims, correction, keepdim, false, false)?
                .0);
        }
        let (v, shape) = self.moments(dims, correction, keepdim)?;
        Ok(from_f64s(
            v.into_iter().map(|m| m.0).collect(),
            &shape,
            self.dtype(),
        ))
    }

    /// Standard deviation over `dims` with `correction`.
    pub(crate) fn std_raw(
        &self,
        dims: Option<&[i64]>,
        correction: f64,
        keepdim: bool,
    ) -> Result<Tensor> {
        if self.device().is_cuda() {
            return Ok(self.moments_cuda(dims, correction, keepdim, true, false)?.0);
        }
        let (v, shape) = self.moments(dims, correction, keepdim)?;
        Ok(from_f64s(
            v.into_iter().map(|m| m.0.sqrt()).collect(),
            &shape,
            self.dtype(),
        ))
    }

    /// `(var, mean)` in one pass.
    pub(crate) fn var_mean_raw(
        &self,
        dims: Option<&[i64]>,
        correction: f64,
        keepdim: bool,
    ) -> Result<(Tensor, Tensor)> {
        if self.device().is_cuda() {
            return self.moments_cuda_pair(dims, correction, keepdim, false);
        }
        let (v, shape) = self.moments(dims, correction, keepdim)?;
        let (var, mean) = unzip(v);
        Ok((
            from_f64s(var, &shape, self.dtype()),
            from_f64s(mean, &shape, self.dtype()),
        ))
    }

    /// `(std, mean)` in one pass.
    pub(crate) fn std_mean_raw(
        &self,
        dims: Option<&[i64]>,
        correction: f64,
        keepdim: bool,
    ) -> Result<(Tensor, Tensor)> {
        if self.device().is_cuda() {
            return self.moments_cuda_pair(dims, correction, keepdim, true);
        }
        let (v, shape) = self.moments(dims, correction, keepdim)?;
        let (var, mean) = unzip(v);
        Ok((
            from_f64s(
                var.into_iter().map(f64::sqrt).collect(),
                &shape,
                self.dtype(),
            ),
            from_f64s(mean, &shape, self.dtype()),
        ))
    }

    /// Vector p-norm over `dims` (all when `None`): p = 2 is also the Frobenius norm,
    /// `f64::INFINITY`/`NEG_INFINITY` give max/min |x|, 0 counts non-zeros.
    pub(crate) fn norm_raw(
        &self,
        p: f64,
        dims: Option<&[i64]>,
        keepdim: bool,
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        let x = self.to_dtype(dtype.unwrap_or(self.dtype()));
        if !x.dtype().is_floating_point() {
            return Err(Error::Runtime(format!(
                "linalg.vector_norm: Expected a floating point or complex tensor as input. Got {}",
                x.dtype().torch_name()
            )));
        }
        let mask = reduce_mask(self.ndim(), dims)?;
        let shape = reduced_shape(self.shape(), &mask, keepdim);
        if p.is_infinite() && x.numel() == 0 && reduced_numel(x.shape(), &mask) == 0 {
            return Err(Error::Runtime(
                "linalg.vector_norm cannot compute the inf norm on an empty tensor because the operation does not have an identity".into(),
            ));
        }
        let v = with_dtype!(x.dtype(), T, {
            if p == 0.0 {
                run::<T, _>(&x, &mask, &k::Norm::<0> { p })?
            } else if p == 1.0 {
                run::<T, _>(&x, &mask, &k::Norm::<1> { p })?
            } else if p == 2.0 {
                run::<T, _>(&x, &mask, &k::Norm::<2> { p })?
            } else if p == f64::INFINITY {
                run::<T, _>(&x, &mask, &k::Norm::<3> { p })?
            } else if p == f64::NEG_INFINITY {
                run::<T, _>(&x, &mask, &k::Norm::<4> { p })?
            } else {
                run::<T, _>(&x, &mask, &k::Norm::<5> { p })?
            }
        });
        Ok(from_f64s(v, &shape, x.dtype()))
    }

    /// `log(sum(exp(x)))` over `dims`, computed stably. Integers are promoted to the default
    /// float dtype.
    pub(crate) fn logsumexp_raw(&self, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
        let x = if self.dtype().is_floating_point() {
            self.clone()
        } else {
            self.to_dtype(crate::default_dtype())
        };
        let mask = reduce_mask(self.ndim(), dims)?;
        if x.device().is_cuda() {
            return crate::cuda::reduce_ops::logsumexp(&x, &mask, keepdim);
        }
        let shape = reduced_shape(self.shape(), &mask, keepdim);
        let v = with_dtype!(x.dtype(), T, { run::<T, _>(&x, &mask, &k::LogSumExp)? });
        Ok(from_f64s(v, &shape, x.dtype()))
    }

    // ------------------------------------------------------------------ all, any, count

    fn all_any<const ALL: bool>(&self, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
        let mask = reduce_mask(self.ndim(), dims)?;
        let shape = reduced_shape(self.shape(), &mask, keepdim);
        if self.device().is_cuda() {
            // Count the non-zeros with CUDA kernels: all <=> count == size, any <=> count > 0.
            let size: usize = self
                .shape()
                .iter()
                .zip(&mask)
                .filter(|(_, &m)| m)
                .map(|(&n, _)| n)
                .product();
            let counts = self.nonzero_counts(dims, keepdim)?;
            let r = if ALL {
                counts.binary(
                    &Tensor::scalar(crate::Scalar::Int(size as i64), DType::I64),
                    super::BinaryOp::Eq,
                )?
            } else {
                counts.binary(
                    &Tensor::scalar(crate::Scalar::Int(0), DType::I64),
                    super::BinaryOp::Gt,
                )?
            };
            return Ok(if self.dtype() == DType::U8 {
                r.to_dtype(DType::U8)
            } else {
                r
            });
        }
        let v = with_dtype!(self.dtype(), T, {
            run::<T, _>(self, &mask, &k::AllAny::<ALL>)?
        });
        let out = Tensor::from_vec_unchecked(v, &shape);
        // PyTorch keeps uint8 for uint8 inputs.
        Ok(if self.dtype() == DType::U8 {
            out.to_dtype(DType::U8)
        } else {
            out
        })
    }

    /// Number of non-zero elements over `dims` (int64) with CUDA kernels.
    fn nonzero_counts(&self, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
        let zero = Tensor::scalar(crate::Scalar::Int(0), self.dtype());
        let nz = crate::autograd::no_grad(|| self.binary(&zero, super::BinaryOp::Ne))?;
        nz.to_dtype(DType::I64).sum_raw(dims, keepdim, None)
    }

    /// True where every element over `dims` is non-zero.
    pub fn all(&self, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
        self.all_any::<true>(dims, keepdim)
    }

    /// True where some element over `dims` is non-zero.
    pub fn any(&self, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
        self.all_any::<false>(dims, keepdim)
    }

    /// Number of non-zero elements over `dims` (int64).
    pub fn count_nonzero(&self, dims: Option<&[i64]>) -> Result<Tensor> {
        let mask = reduce_mask(self.ndim(), dims)?;
        if self.device().is_cuda() {
            return self.nonzero_counts(dims, false);
        }
        let shape = reduced_shape(self.shape(), &mask, false);
        let v = with_dtype!(self.dtype(), T, {
            run::<T, _>(self, &mask, &k::CountNonzero)?
        });
        Ok(Tensor::from_vec_unchecked(v, &shape))
    }

    // ------------------------------------------------------------------ scans

    /// Run a scan along `dim` over a contiguous copy (0-d tensors act as one element).
    fn scan_with<T: Element, S: Scanner<T>>(&self, dim: i64, s: &S) -> Result<Vec<S::Out>> {
        let d = self.dim(dim)?;
        let x = self.contiguous();
        let shape: Vec<usize> = if self.ndim() == 0 {
            vec![1]
        } else {
            self.shape().to_vec()
        };
        Ok(k::scan(contiguous_slice::<T>(&x)?, &shape, d, s))
    }

    fn cum<const PROD: bool>(&self, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
        let out_dt = dtype.unwrap_or(if self.dtype().is_floating_point() {
            self.dtype()
        } else {
            DType::I64
        });
        if self.device().is_cuda() {
            let d = self.dim(dim)?;
            if out_dt == DType::Bool {
                // Bool arithmetic: a running or (sum) / and (product), i.e. a non-zero int64 scan.
                let scan =
                    crate::cuda::reduce_ops::cumulative(&self.to_dtype(DType::I64), d, PROD)?;
                return Ok(scan.to_dtype(DType::Bool));
            }
            return crate::cuda::reduce_ops::cumulative(&self.to_dtype(out_dt), d, PROD);
        }
        if out_dt.is_floating_point() {
            let x = self.to_dtype(out_dt);
            return Ok(with_dtype!(x.dtype(), T, {
                let v = x.scan_with::<T, _>(dim, &k::CumFloat::<PROD>)?;
                Tensor::from_vec_unchecked(v, self.shape())
            }));
        }
        let x = if self.dtype().is_floating_point() {
            self.to_dtype(out_dt)
        } else {
            self.clone()
        };
        let v = with_dtype!(x.dtype(), T, {
            x.scan_with::<T, _>(dim, &k::CumInt::<PROD>)?
        });
        Ok(from_i64s(v, self.shape(), out_dt))
    }

    /// Cumulative sum along `dim` (integers and bools give int64 unless `dtype` is given).
    pub(crate) fn cumsum_raw(&self, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
        self.cum::<false>(dim, dtype)
    }

    /// Cumulative product along `dim`.
    pub(crate) fn cumprod_raw(&self, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
        self.cum::<true>(dim, dtype)
    }

    fn cum_extremum<const MAX: bool>(&self, dim: i64) -> Result<(Tensor, Tensor)> {
        if self.device().is_cuda() {
            let d = self.dim(dim)?;
            if self.dtype() == DType::Bool {
                let (v, i) =
                    crate::cuda::reduce_ops::cum_extremum(&self.to_dtype(DType::U8), d, MAX)?;
                return Ok((v.to_dtype(DType::Bool), i));
            }
            return crate::cuda::reduce_ops::cum_extremum(self, d, MAX);
        }
        Ok(with_dtype!(self.dtype(), T, {
            let (v, i) = unzip(self.scan_with::<T, _>(dim, &k::CumExtremum::<MAX>)?);
            (
                Tensor::from_vec_unchecked(v, self.shape()),
                Tensor::from_vec_unchecked(i, self.shape()),
            )
        }))
    }

    /// Running maximum along `dim` and the index where it was last attained.
    pub(crate) fn cummax_raw(&self, dim: i64) -> Result<(Tensor, Tensor)> {
        self.cum_extremum::<true>(dim)
    }

    /// Running minimum along `dim` and the index where it was last attained.
    pub(crate) fn cummin_raw(&self, dim: i64) -> Result<(Tensor, Tensor)> {
        self.cum_extremum::<false>(dim)
    }

    // ------------------------------------------------------------------ softmax

    fn softmax_impl(&self, dim: i64, dtype: Option<DType>, log: bool) -> Result<Tensor> {
        let x = self.to_dtype(dtype.unwrap_or(self.dtype()));
        if !x.dtype().is_floating_point() {
            return Err(Error::UnsupportedDType {
                op: if log {
                    "log_softmax_lastdim_kernel_impl"
                } else {
                    "softmax_lastdim_kernel_impl"
                },
                dtype: x.dtype(),
            });
        }
        let d = self.dim(dim)?;
        if x.device().is_cuda() {
            let x1 = if x.ndim() == 0 {
                x.reshape_contiguous(&[1])
            } else {
                x.clone()
            };
            let y = cuda::softmax(&x1, d, log)?;
            return Ok(y.reshape_contiguous(self.shape()));
        }
        let out_dt = x.dtype();
        let xc = x.to_dtype(out_dt.compute_dtype()).contiguous();
        let shape: Vec<usize> = if self.ndim() == 0 {
            vec![1]
        } else {
            self.shape().to_vec()
        };
        let out = with_float_dtype!(
            xc.dtype(),
            T,
            {
                let v = k::softmax(contiguous_slice::<T>(&xc)?, &shape, d, log);
                Tensor::from_vec_unchecked(v, self.shape())
            },
            unreachable!("compute dtype is f32 or f64")
        );
        Ok(out.to_dtype(out_dt))
    }

    /// Softmax along `dim` (numerically stable; `dtype` casts the input first).
    pub(crate) fn softmax_raw(&self, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
        self.softmax_impl(dim, dtype, false)
    }

    /// Log-softmax along `dim`.
    pub(crate) fn log_softmax_raw(&self, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
        self.softmax_impl(dim, dtype, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: Vec<f32>, shape: &[usize]) -> Tensor {
        Tensor::from_vec(v, shape).unwrap()
    }

    #[test]
    fn sum_dtypes_and_shapes() {
        let x = t((0..24).map(|i| i as f32).collect(), &[2, 3, 4]);
        let s = x.sum(Some(&[0, -1]), false, None).unwrap();
        assert_eq!(s.shape(), &[3]);
        assert_eq!(s.to_vec::<f32>().unwrap(), vec![60.0, 92.0, 124.0]);
        let s = x.sum(Some(&[1]), true, None).unwrap();
        assert_eq!(s.shape(), &[2, 1, 4]);
        let b = Tensor::from_vec(vec![true, false, true], &[3]).unwrap();
        let s = b.sum(None, false, None).unwrap();
        assert_eq!(s.dtype(), DType::I64);
        assert_eq!(s.to_vec::<i64>().unwrap(), vec![2]);
        assert!(x.sum(Some(&[0, 0]), false, None).is_err());
        assert!(x.sum(Some(&[3]), false, None).is_err());
        let e = t(vec![], &[0, 3]);
        assert_eq!(
            e.sum(None, false, None).unwrap().to_vec::<f32>().unwrap(),
            vec![0.0]
        );
    }

    #[test]
    fn mean_rejects_ints_and_max_of_empty_fails() {
        let i = Tensor::from_vec(vec![1i64, 2], &[2]).unwrap();
        assert!(matches!(
            i.mean(None, false, None),
            Err(Error::NotImplemented(_))
        ));
        let e = t(vec![], &[0]);
        assert!(matches!(e.max_all(), Err(Error::Runtime(_))));
        assert!(matches!(e.max_dim(0, false), Err(Error::Index(_))));
    }

    #[test]
    fn var_std_softmax_cumsum() {
        let x = t(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
        let v = x.var(None, 1.0, false).unwrap().to_vec::<f32>().unwrap()[0];
        assert!((v - 5.0 / 3.0).abs() < 1e-6);
        let s = x.softmax(0, None).unwrap().to_vec::<f32>().unwrap();
        assert!((s[0] + s[2] - 1.0).abs() < 1e-6);
        let c = x.cumsum(1, None).unwrap().to_vec::<f32>().unwrap();
        assert_eq!(c, vec![1.0, 3.0, 3.0, 7.0]);
        let a = x.argmax(None, false).unwrap().to_vec::<i64>().unwrap();
        assert_eq!(a, vec![3]);
    }
}
