//! Factory functions: filled and uninitialised tensors, ranges (`arange`, `linspace`,
//! `logspace`), the identity matrix and `empty_strided`. Shapes arrive as `i64` (as users
//! write them) and are validated here, so a negative size is an error rather than a panic,
//! and an allocation that cannot be satisfied is an error rather than an abort.

use super::Tensor;
use crate::layout::{Dims, Layout};
use crate::storage::{CpuStorage, Storage};
use crate::{with_dtype, DType, Element, Error, Result, Scalar};
use std::sync::Arc;

/// Validate a user-provided shape: no negative sizes, and a number of elements whose
/// byte size fits in memory addressing.
pub fn checked_shape(shape: &[i64]) -> Result<Dims> {
    if let Some(&neg) = shape.iter().find(|&&s| s < 0) {
        return Err(Error::Runtime(format!(
            "Trying to create tensor with negative dimension {neg}: {shape:?}"
        )));
    }
    let mut n: usize = 1;
    for &s in shape {
        n = n.checked_mul(s as usize).ok_or_else(|| too_big(shape))?;
    }
    if n.checked_mul(8).is_none_or(|b| b > isize::MAX as usize) {
        return Err(too_big(shape));
    }
    Ok(shape.iter().map(|&s| s as usize).collect())
}

fn too_big(shape: &[i64]) -> Error {
    Error::Runtime(format!(
        "Trying to create tensor with shape {shape:?}: the number of elements overflows"
    ))
}

/// Allocate `n` copies of `v`, reporting allocation failure as an error (not an abort).
pub(crate) fn try_filled<T: Element>(n: usize, v: T) -> Result<Vec<T>> {
    let mut out: Vec<T> = Vec::new();
    out.try_reserve_exact(n).map_err(|_| {
        Error::Runtime(format!(
            "DefaultCPUAllocator: not enough memory: you tried to allocate {} bytes.",
            n.saturating_mul(std::mem::size_of::<T>())
        ))
    })?;
    out.resize(n, v);
    Ok(out)
}

/// Collect `n` values from `f(i)` into a fresh vector (allocation failure is an error).
fn try_from_fn<T: Element>(n: usize, f: impl Fn(usize) -> T) -> Result<Vec<T>> {
    let mut out = try_filled(n, T::zero())?;
    for (i, o) in out.iter_mut().enumerate() {
        *o = f(i);
    }
    Ok(out)
}

/// Mantissa-based "is this value an integer type" helper for range arguments.
fn is_float_scalar(s: Scalar) -> bool {
    matches!(s, Scalar::Float(_))
}

impl Tensor {
    /// A tensor of `shape` (validated) filled with `value` converted to `dtype`.
    pub fn full_checked(shape: &[i64], value: Scalar, dtype: DType) -> Result<Tensor> {
        let dims = checked_shape(shape)?;
        let n = dims.iter().product();
        with_dtype!(dtype, T, {
            Ok(Tensor::from_vec_unchecked(
                try_filled(n, value.to_elem::<T>())?,
                &dims,
            ))
        })
    }

    /// `torch.arange(start, end, step)`: values `start + i * step` for `i` in
    /// `0..ceil((end - start) / step)`. The default dtype is int64 when every argument is
    /// an integer, else the default floating-point dtype.
    pub fn arange(
        start: Scalar,
        end: Scalar,
        step: Scalar,
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        let any_float = [start, end, step].into_iter().any(is_float_scalar);
        let dtype = dtype.unwrap_or(if any_float {
            crate::default_dtype()
        } else {
            DType::I64
        });
        if dtype == DType::Bool {
            return Err(Error::UnsupportedDType {
                op: "arange_cpu",
                dtype,
            });
        }
        let (s, e, st) = (start.to_f64(), end.to_f64(), step.to_f64());
        if !(s.is_finite() && e.is_finite()) {
            return Err(Error::Runtime(format!("unsupported range: {s} -> {e}")));
        }
        let int_dtype = !dtype.is_floating_point();
        // The checks and the length use the arguments as given (PyTorch 2.15); integer dtypes
        // then compute the values in int64 from the truncated start and step, so
        // `arange(-1.5, 1.5, 0.5, dtype=int64)` is six -1s, as in PyTorch.
        let (is, ie, ist) = (start.to_i64(), end.to_i64(), step.to_i64());
        if st == 0.0 || st.is_nan() {
            return Err(Error::Runtime("step must be nonzero".into()));
        }
        if !((st > 0.0 && e >= s) || (st < 0.0 && e <= s)) {
            return Err(Error::Runtime(
                "upper bound and lower bound inconsistent with step sign".into(),
            ));
        }
        // all-integer int64 ranges: exact integer arithmetic (doubles lose precision past 2^53)
        let size_d: f64 = if dtype == DType::I64 && !any_float {
            let (a, b, c) = (is as i128, ie as i128, ist as i128);
            let sgn = c.signum();
            ((b - a + c - sgn) / c) as f64
        } else {
            ((e - s) / st).ceil()
        };
        if !(0.0..(i64::MAX as f64)).contains(&size_d) {
            return Err(Error::Runtime(format!(
                "invalid size, possible overflow? (arange from {s} to {e} by {st})"
            )));
        }
        let n = size_d as usize;
        checked_shape(&[n as i64])?;
        with_dtype!(dtype, T, {
            let v = if int_dtype {
                try_from_fn(n, |i| {
                    T::from_i64(is.wrapping_add((i as i64).wrapping_mul(ist)))
                })?
            } else {
                try_from_fn(n, |i| T::from_f64(s + i as f64 * st))?
            };
            Ok(Tensor::from_vec_unchecked(v, &[n]))
        })
    }

    /// `torch.linspace(start, end, steps)`: `steps` evenly spaced values from `start` to
    /// `end` inclusive (the second half is computed from `end` backwards, as PyTorch does,
    /// so the last value is exactly `end`).
    pub fn linspace(start: Scalar, end: Scalar, steps: i64, dtype: DType) -> Result<Tensor> {
        let v = linspace_values(start, end, steps, dtype)?;
        let n = v.len();
        with_dtype!(dtype, T, {
            let out: Vec<T> = v.into_iter().map(T::from_f64).collect();
            Ok(Tensor::from_vec_unchecked(out, &[n]))
        })
    }

    /// `torch.logspace(start, end, steps, base)`: `base ** linspace(start, end, steps)`.
    pub fn logspace(
        start: Scalar,
        end: Scalar,
        steps: i64,
        base: f64,
        dtype: DType,
    ) -> Result<Tensor> {
        // Exponents are computed like linspace in double precision (integer dtypes do not
        // truncate the exponents: only the powers are converted).
        let compute = if dtype.is_floating_point() {
            dtype
        } else {
            DType::F64
        };
        let v = linspace_values(start, end, steps, compute)?;
        let n = v.len();
        with_dtype!(dtype, T, {
            let out: Vec<T> = v.into_iter().map(|x| T::from_f64(base.powf(x))).collect();
            Ok(Tensor::from_vec_unchecked(out, &[n]))
        })
    }

    /// `torch.eye(n, m)`: ones on the main diagonal of an `n x m` matrix (`m` defaults to `n`).
    pub fn eye(n: i64, m: Option<i64>, dtype: DType) -> Result<Tensor> {
        if n < 0 {
            return Err(Error::Runtime(format!(
                "n must be greater or equal to 0, got {n}"
            )));
        }
        let m = m.unwrap_or(n);
        if m < 0 {
            return Err(Error::Runtime(format!(
                "m must be greater or equal to 0, got {m}"
            )));
        }
        let t = Tensor::full_checked(&[n, m], Scalar::Int(0), dtype)?;
        let (n, m) = (n as usize, m as usize);
        with_dtype!(dtype, T, {
            // SAFETY: `t` was just created and is not shared with anyone.
            let s = unsafe { t.storage_slice_mut::<T>()? };
            for i in 0..n.min(m) {
                s[i * m + i] = T::one();
            }
        });
        Ok(t)
    }

    /// `torch.empty_strided(size, stride)`: a zero-filled tensor with the given strides
    /// (in elements), backed by a storage just large enough for them.
    pub fn empty_strided(shape: &[i64], strides: &[i64], dtype: DType) -> Result<Tensor> {
        if shape.len() != strides.len() {
            return Err(Error::Runtime(format!(
                "mismatch in length of strides and shape (shape has {} dims, strides {})",
                shape.len(),
                strides.len()
            )));
        }
        let dims = checked_shape(shape)?;
        if let Some(&neg) = strides.iter().find(|&&s| s < 0) {
            return Err(Error::Runtime(format!(
                "empty_strided: strides must be non-negative, got {neg} in {strides:?}"
            )));
        }
        let layout = Layout {
            shape: dims,
            strides: strides.iter().map(|&s| s as usize).collect(),
            offset: 0,
        };
        // Extent with overflow checks (strides are user input).
        let mut extent: usize = 1;
        if layout.shape.contains(&0) {
            extent = 0;
        } else {
            for (&s, &st) in layout.shape.iter().zip(&layout.strides) {
                extent = (s - 1)
                    .checked_mul(st)
                    .and_then(|x| x.checked_add(extent))
                    .ok_or_else(|| too_big(shape))?;
            }
        }
        checked_shape(&[extent as i64])?;
        let storage = with_dtype!(dtype, T, {
            CpuStorage::from_vec(try_filled(extent, T::zero())?)
        });
        Tensor::from_storage(Arc::new(Storage::cpu(storage)), layout)
    }
}

/// linspace's values as f64, computed in the arithmetic PyTorch uses for `dtype`: the
/// dtype itself for f32/f64 (f32 for f16/bf16), and doubles with the endpoints truncated to
/// integers for integer dtypes.
fn linspace_values(start: Scalar, end: Scalar, steps: i64, dtype: DType) -> Result<Vec<f64>> {
    if steps < 0 {
        return Err(Error::Runtime(
            "number of steps must be non-negative".into(),
        ));
    }
    checked_shape(&[steps])?;
    let n = steps as usize;
    let halfway = n / 2;
    if dtype == DType::F64 || !dtype.is_floating_point() {
        let (s, e) = if dtype.is_floating_point() {
            (start.to_f64(), end.to_f64())
        } else {
            (start.to_i64() as f64, end.to_i64() as f64)
        };
        if n == 1 {
            return Ok(vec![s]);
        }
        let step = (e - s) / (n as f64 - 1.0);
        // Fused multiply-adds, as PyTorch's kernel: bit-identical values (grids built from
        // linspace then agree to the last bit, which decides ties in nearest sampling).
        return try_from_fn(n, |i| {
            if i < halfway {
                step.mul_add(i as f64, s)
            } else {
                (-step).mul_add((n - i - 1) as f64, e)
            }
        });
    }
    let (s, e) = (start.to_f64() as f32, end.to_f64() as f32);
    if n == 1 {
        return Ok(vec![s as f64]);
    }
    let step = (e - s) / (n as f32 - 1.0);
    try_from_fn(n, |i| {
        (if i < halfway {
            step.mul_add(i as f32, s)
        } else {
            (-step).mul_add((n - i - 1) as f32, e)
        }) as f64
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arange_lengths_follow_pytorch() {
        let t = Tensor::arange(Scalar::Int(0), Scalar::Int(10), Scalar::Int(3), None).unwrap();
        assert_eq!(t.dtype(), DType::I64);
        assert_eq!(t.to_vec::<i64>().unwrap(), vec![0, 3, 6, 9]);
        let t = Tensor::arange(
            Scalar::Float(1.0),
            Scalar::Float(2.0),
            Scalar::Float(0.25),
            None,
        )
        .unwrap();
        assert_eq!(t.to_vec::<f32>().unwrap(), vec![1.0, 1.25, 1.5, 1.75]);
        let t = Tensor::arange(Scalar::Int(5), Scalar::Int(0), Scalar::Int(-2), None).unwrap();
        assert_eq!(t.to_vec::<i64>().unwrap(), vec![5, 3, 1]);
        assert!(Tensor::arange(Scalar::Int(0), Scalar::Int(5), Scalar::Int(0), None).is_err());
        assert!(Tensor::arange(Scalar::Int(0), Scalar::Int(5), Scalar::Int(-1), None).is_err());
    }

    #[test]
    fn linspace_hits_both_ends() {
        let t = Tensor::linspace(Scalar::Float(0.0), Scalar::Float(1.0), 5, DType::F64).unwrap();
        assert_eq!(t.to_vec::<f64>().unwrap(), vec![0.0, 0.25, 0.5, 0.75, 1.0]);
        let t = Tensor::linspace(Scalar::Int(0), Scalar::Int(1), 0, DType::F32).unwrap();
        assert_eq!(t.numel(), 0);
    }

    #[test]
    fn eye_and_empty_strided() {
        let t = Tensor::eye(2, Some(3), DType::I32).unwrap();
        assert_eq!(t.to_vec::<i32>().unwrap(), vec![1, 0, 0, 0, 1, 0]);
        let t = Tensor::empty_strided(&[2, 3], &[1, 2], DType::F32).unwrap();
        assert_eq!(t.strides(), &[1, 2]);
        assert_eq!(t.storage().len(), 6);
        assert!(Tensor::full_checked(&[-1, 2], Scalar::Int(0), DType::F32).is_err());
    }
}
