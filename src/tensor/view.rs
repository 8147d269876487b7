//! View ops: new layouts over the same storage, no data copied.

use super::Tensor;
use crate::layout::{infer_shape, normalize_dim, Dims, Layout};
use crate::{Error, Result};

impl Tensor {
    /// View with a new shape (one dim may be -1). Fails if the strides don't allow it.
    pub fn view(&self, shape: &[i64]) -> Result<Tensor> {
        let shape = infer_shape("view", shape, self.numel())?;
        match self.layout().view_strides(&shape) {
            Some(strides) => Ok(self.with_layout(Layout {
                shape,
                strides,
                offset: self.storage_offset(),
            })),
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
        match self.layout().view_strides(&dims) {
            Some(strides) => Ok(self.with_layout(Layout {
                shape: dims,
                strides,
                offset: self.storage_offset(),
            })),
            None => {
                let c = self.clone_data();
                Ok(c.with_layout(Layout::contiguous(&dims)))
            }
        }
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
        Ok(self.with_layout(self.layout().permute(&d)))
    }

    /// Swap two dims.
    pub fn transpose(&self, a: i64, b: i64) -> Result<Tensor> {
        if self.ndim() == 0 {
            return Ok(self.clone());
        }
        let (a, b) = (self.dim(a)?, self.dim(b)?);
        Ok(self.with_layout(self.layout().transpose(a, b)))
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
        Ok(self.with_layout(self.layout().broadcast_to("expand", &dims)?))
    }

    /// Broadcast to an exact shape.
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Tensor> {
        Ok(self.with_layout(self.layout().broadcast_to("broadcast_to", shape)?))
    }

    /// Insert a size-1 dim at `dim` (in `[-ndim-1, ndim]`).
    pub fn unsqueeze(&self, dim: i64) -> Result<Tensor> {
        let d = normalize_dim(dim, self.ndim() + 1)?;
        Ok(self.with_layout(self.layout().unsqueeze(d)))
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
        Ok(self.with_layout(Layout {
            shape: (0..n).filter(keep).map(|i| l.shape[i]).collect(),
            strides: (0..n).filter(keep).map(|i| l.strides[i]).collect(),
            offset: l.offset,
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
        Ok(self.with_layout(self.layout().narrow(d, start as usize, length as usize)))
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
        Ok(self.with_layout(self.layout().select(d, i as usize)))
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
