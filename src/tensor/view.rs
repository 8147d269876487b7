//! View ops: new layouts over the same storage, no data copied.

use super::Tensor;
use crate::autograd::{needs_grad, record};
use crate::layout::{infer_shape, normalize_dim, Dims, Layout};
use crate::{Error, Result};
use std::sync::Arc;

/// Re-applies a view op to another tensor of the input's shape (used by view backwards).
pub type ViewFn = Arc<dyn Fn(&Tensor) -> Result<Tensor> + Send + Sync>;

/// Record a view op's node: `backward` maps the output gradient to the input gradient.
pub(crate) fn record_view(
    name: &str,
    input: &Tensor,
    out: Tensor,
    backward: impl Fn(&Tensor) -> Result<Tensor> + Send + 'static,
) -> Tensor {
    if needs_grad(&[input]) && out.dtype().is_floating_point() {
        record(
            name,
            &[input],
            &[&out],
            Box::new(move |grads| match &grads[0] {
                Some(g) => Ok(vec![Some(backward(g)?)]),
                None => Ok(vec![None]),
            }),
        );
    }
    out
}

/// Gradient of a view that selects part of its input: zeros of the input's shape with the
/// gradient written into the viewed part. Differentiable (its backward re-applies the view).
pub fn embed_into_zeros(g: &Tensor, in_shape: &[usize], view_fn: ViewFn) -> Result<Tensor> {
    let z = Tensor::zeros(in_shape, g.dtype());
    crate::no_grad(|| view_fn(&z)?.copy_raw(g))?;
    if needs_grad(&[g]) {
        let f = view_fn.clone();
        record(
            "EmbedBackward0",
            &[g],
            &[&z],
            Box::new(move |grads| match &grads[0] {
                Some(gg) => Ok(vec![Some(f(gg)?)]),
                None => Ok(vec![None]),
            }),
        );
    }
    Ok(z)
}

/// Record a view that selects part of its input (narrow, select, diagonal...).
pub(crate) fn record_partial_view(
    name: &str,
    input: &Tensor,
    out: Tensor,
    view_fn: ViewFn,
) -> Tensor {
    let in_shape = input.shape().to_vec();
    record_view(name, input, out, move |g| {
        embed_into_zeros(g, &in_shape, view_fn.clone())
    })
}

fn shape_i64(s: &[usize]) -> Vec<i64> {
    s.iter().map(|&x| x as i64).collect()
}

impl Tensor {
    /// View with a new shape (one dim may be -1). Fails if the strides don't allow it.
    pub fn view(&self, shape: &[i64]) -> Result<Tensor> {
        let shape = infer_shape("view", shape, self.numel())?;
        match self.layout().view_strides(&shape) {
            Some(strides) => {
                let out = self.with_layout(Layout {
                    shape,
                    strides,
                    offset: self.storage_offset(),
                });
                let back = shape_i64(self.shape());
                Ok(record_view("ViewBackward0", self, out, move |g| g.reshape(&back)))
            }
            None => Err(Error::Runtime(format!(
                "view size is not compatible with input tensor's size and stride (size {:?}, stride {:?}): at least one dimension spans across two contiguous subspaces. Use .reshape(...) instead.",
                self.shape(),
                self.strides()
            ))),
        }
    }

    /// View when possible, else a contiguous copy with the new shape.
    pub fn reshape(&self, shape: &[i64]) -> Result<Tensor> {
        let dims = infer_shape("reshape", shape, self.numel())?;
        let out = match self.layout().view_strides(&dims) {
            Some(strides) => self.with_layout(Layout {
                shape: dims,
                strides,
                offset: self.storage_offset(),
            }),
            None => {
                let c = self.clone_data();
                c.with_layout(Layout::contiguous(&dims))
            }
        };
        let back = shape_i64(self.shape());
        Ok(record_view("ViewBackward0", self, out, move |g| {
            g.reshape(&back)
        }))
    }

    /// Reorder dims.
    pub fn permute(&self, dims: &[i64]) -> Result<Tensor> {
        let n = self.ndim();
        if dims.len() != n {
            return Err(Error::Runtime(format!(
                "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = {n} is not equal to len(dims) = {}",
                dims.len()
            )));
        }
        let mut seen = vec![false; n];
        let mut d: Dims = Dims::new();
        for &x in dims {
            let k = normalize_dim(x, n)?;
            if seen[k] {
                return Err(Error::Runtime(
                    "permute(): duplicate dims are not allowed.".into(),
                ));
            }
            seen[k] = true;
            d.push(k);
        }
        let out = self.with_layout(self.layout().permute(&d));
        let mut inverse = vec![0i64; n];
        for (i, &k) in d.iter().enumerate() {
            inverse[k] = i as i64;
        }
        Ok(record_view("PermuteBackward0", self, out, move |g| {
            g.permute(&inverse)
        }))
    }

    /// Swap two dims.
    pub fn transpose(&self, a: i64, b: i64) -> Result<Tensor> {
        if self.ndim() == 0 {
            return Ok(self.clone());
        }
        let (a, b) = (self.dim(a)?, self.dim(b)?);
        let out = self.with_layout(self.layout().transpose(a, b));
        Ok(record_view("TransposeBackward0", self, out, move |g| {
            g.transpose(a as i64, b as i64)
        }))
    }

    /// `t()`: transpose of a <= 2-d tensor.
    pub fn t(&self) -> Result<Tensor> {
        if self.ndim() > 2 {
            return Err(Error::Runtime(format!(
                "t() expects a tensor with <= 2 dimensions, but self is {}D",
                self.ndim()
            )));
        }
        if self.ndim() < 2 {
            return Ok(self.clone());
        }
        self.transpose(0, 1)
    }

    /// Broadcast to `shape` (-1 keeps a dim) without copying.
    pub fn expand(&self, shape: &[i64]) -> Result<Tensor> {
        let extra = shape.len().saturating_sub(self.ndim());
        let mut dims: Dims = Dims::new();
        for (i, &s) in shape.iter().enumerate() {
            if s == -1 {
                if i < extra {
                    return Err(Error::Runtime(format!(
                        "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension {i}"
                    )));
                }
                dims.push(self.shape()[i - extra]);
            } else if s < 0 {
                return Err(Error::Runtime(format!("expand: invalid size {s}")));
            } else {
                dims.push(s as usize);
            }
        }
        let out = self.with_layout(self.layout().broadcast_to("expand", &dims)?);
        let back = self.shape().to_vec();
        Ok(record_view("ExpandBackward0", self, out, move |g| {
            g.sum_to_shape(&back)
        }))
    }

    /// Broadcast to an exact shape.
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Tensor> {
        self.expand(&shape_i64(shape))
    }

    /// Insert a size-1 dim at `dim` (in `[-ndim-1, ndim]`).
    pub fn unsqueeze(&self, dim: i64) -> Result<Tensor> {
        let d = normalize_dim(dim, self.ndim() + 1)?;
        let out = self.with_layout(self.layout().unsqueeze(d));
        let back = shape_i64(self.shape());
        Ok(record_view("UnsqueezeBackward0", self, out, move |g| {
            g.reshape(&back)
        }))
    }

    /// Remove size-1 dims: all of them, or only those listed.
    pub fn squeeze(&self, dims: Option<&[i64]>) -> Result<Tensor> {
        let n = self.ndim();
        let mut drop = vec![false; n];
        match dims {
            None => {
                for (i, &s) in self.shape().iter().enumerate() {
                    drop[i] = s == 1;
                }
            }
            Some(ds) => {
                for &d in ds {
                    if n == 0 {
                        normalize_dim(d, 0)?;
                        continue;
                    }
                    let k = normalize_dim(d, n)?;
                    drop[k] = self.shape()[k] == 1;
                }
            }
        }
        let l = self.layout();
        let keep = |i: &usize| !drop[*i];
        let out = self.with_layout(Layout {
            shape: (0..n).filter(keep).map(|i| l.shape[i]).collect(),
            strides: (0..n).filter(keep).map(|i| l.strides[i]).collect(),
            offset: l.offset,
        });
        let back = shape_i64(self.shape());
        Ok(record_view("SqueezeBackward0", self, out, move |g| {
            g.reshape(&back)
        }))
    }

    /// `narrow(dim, start, length)`.
    pub fn narrow(&self, dim: i64, start: i64, length: i64) -> Result<Tensor> {
        if self.ndim() == 0 {
            return Err(Error::Runtime(
                "narrow() cannot be applied to a 0-dim tensor.".into(),
            ));
        }
        let d = self.dim(dim)?;
        let size = self.shape()[d] as i64;
        let start = if start < 0 { start + size } else { start };
        if start < 0 || start > size || length < 0 || start + length > size {
            return Err(Error::Index(format!(
                "start ({start}) + length ({length}) exceeds dimension size ({size})."
            )));
        }
        let out = self.with_layout(self.layout().narrow(d, start as usize, length as usize));
        let f: ViewFn = Arc::new(move |t: &Tensor| t.narrow(d as i64, start, length));
        Ok(record_partial_view("SliceBackward0", self, out, f))
    }

    /// Python-style slice `start:stop:step` along `dim` (bounds clamped; step > 0).
    pub fn slice(
        &self,
        dim: i64,
        start: Option<i64>,
        stop: Option<i64>,
        step: i64,
    ) -> Result<Tensor> {
        if step <= 0 {
            return Err(Error::Value("step must be greater than zero".into()));
        }
        let d = self.dim(dim)?;
        let size = self.shape()[d] as i64;
        let clamp = |v: i64| -> i64 {
            let v = if v < 0 { v + size } else { v };
            v.clamp(0, size)
        };
        let s = start.map(clamp).unwrap_or(0);
        let e = stop.map(clamp).unwrap_or(size);
        Ok(self.with_layout(
            self.layout()
                .slice(d, s as usize, e.max(s) as usize, step as usize),
        ))
    }

    /// Pick `index` along `dim`, removing that dim.
    pub fn select(&self, dim: i64, index: i64) -> Result<Tensor> {
        if self.ndim() == 0 {
            return Err(Error::Index(
                "select() cannot be applied to a 0-dim tensor.".into(),
            ));
        }
        let d = self.dim(dim)?;
        let size = self.shape()[d] as i64;
        let i = if index < 0 { index + size } else { index };
        if i < 0 || i >= size {
            return Err(Error::Index(format!(
                "index {index} is out of bounds for dimension {d} with size {size}"
            )));
        }
        let out = self.with_layout(self.layout().select(d, i as usize));
        let f: ViewFn = Arc::new(move |t: &Tensor| t.select(d as i64, i));
        Ok(record_partial_view("SelectBackward0", self, out, f))
    }

    /// Merge dims `start..=end` into one.
    pub fn flatten(&self, start: i64, end: i64) -> Result<Tensor> {
        if self.ndim() == 0 {
            return self.reshape(&[1]);
        }
        let (s, e) = (self.dim(start)?, self.dim(end)?);
        if s > e {
            return Err(Error::Runtime(
                "flatten() has invalid args: start_dim cannot come after end_dim".into(),
            ));
        }
        let mut shape: Vec<i64> = self.shape()[..s].iter().map(|&x| x as i64).collect();
        shape.push(self.shape()[s..=e].iter().product::<usize>() as i64);
        shape.extend(self.shape()[e + 1..].iter().map(|&x| x as i64));
        self.reshape(&shape)
    }
}
