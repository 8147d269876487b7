//! View ops: new layouts over the same storage, no data copied.

use super::Tensor;
use crate::autograd::{needs_grad, record_saving, Saves};
use crate::layout::{dim_list_mask, infer_shape, normalize_dim, Dims, Layout};
use crate::{DType, Error, Result};
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
        let multi_output_view = input.meta().multi_output_view;
        out.meta().multi_output_view = multi_output_view;
        record_saving(
            name,
            &[input],
            &[&out],
            Saves::NoTensors,
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
    let z = Tensor::full_on(g.device(), in_shape, crate::Scalar::Int(0), g.dtype())?;
    crate::no_grad(|| view_fn(&z)?.copy_raw(g))?;
    if needs_grad(&[g]) {
        let f = view_fn.clone();
        record_saving(
            "EmbedBackward0",
            &[g],
            &[&z],
            Saves::NoTensors,
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

/// Record ONE node for an op returning several views of `input` along dim `d` (split,
/// unbind, chunk): its backward joins the pieces' gradients (zeros for pieces that got none)
/// with `cat` (or `stack` for unbind), so they are combined in one accumulation.
fn record_pieces(name: &str, input: &Tensor, pieces: &[Tensor], d: usize, stacked: bool) {
    if pieces.is_empty() || !needs_grad(&[input]) || !input.dtype().is_floating_point() {
        return;
    }
    let shapes: Vec<Vec<usize>> = pieces.iter().map(|p| p.shape().to_vec()).collect();
    let dt = input.dtype();
    let dev = input.device();
    let outs: Vec<&Tensor> = pieces.iter().collect();
    record_saving(
        name,
        &[input],
        &outs,
        Saves::NoTensors,
        Box::new(move |grads| {
            if grads.iter().all(|g| g.is_none()) {
                return Ok(vec![None]);
            }
            let gs: Vec<Tensor> = grads
                .iter()
                .zip(&shapes)
                .map(|(g, s)| match g {
                    Some(g) if g.dtype() == dt => Ok(g.clone()),
                    Some(g) => g.cast(dt),
                    None => Tensor::full_on(dev, s, crate::Scalar::Int(0), dt),
                })
                .collect::<Result<_>>()?;
            let r = if stacked {
                super::join::stack(&gs, d as i64)?
            } else {
                super::join::cat(&gs, d as i64)?
            };
            Ok(vec![Some(r)])
        }),
    );
    // PyTorch refuses in-place writes to these views (and to views of them) under autograd:
    // the one node could not rebase the history of a single piece.
    for p in pieces {
        p.meta().multi_output_view = true;
    }
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

    /// `view(dtype)`: the same bytes seen as elements of `dtype`, zero-copy (the storage is
    /// shared, so writes through either tensor are seen through the other, and so is the
    /// version counter). PyTorch's rules: with the same element size the layout is kept;
    /// otherwise the last dim must have stride 1 and is scaled by the size ratio, as are the
    /// other strides and the offset, which must divide evenly when the elements grow. As in
    /// PyTorch the result is not differentiable (it never requires grad) and is no view for
    /// autograd (`._base` is None).
    ///
    /// A `bool` must be the byte 0 or 1, so viewing other bytes as bool first checks every
    /// byte of the storage and refuses others (PyTorch reads them as an invalid bool).
    pub fn view_dtype(&self, dtype: DType) -> Result<Tensor> {
        let from = self.dtype();
        let (a, b) = (from.size(), dtype.size());
        let l = self.layout();
        let fail = |what: String, got: Option<usize>| {
            Error::Runtime(format!(
                "{what} to view {} as {} (different element sizes){}",
                from.torch_name(),
                dtype.torch_name(),
                got.map(|g| format!(", but got {g}")).unwrap_or_default()
            ))
        };
        let mut layout = l.clone();
        if a != b {
            let Some(last) = l.ndim().checked_sub(1) else {
                return Err(fail("self.dim() cannot be 0".into(), None));
            };
            if l.strides[last] != 1 {
                return Err(fail(
                    "self.stride(-1) must be 1".into(),
                    Some(l.strides[last]),
                ));
            }
            if a > b {
                let r = a / b;
                layout.strides[..last].iter_mut().for_each(|s| *s *= r);
                layout.shape[last] *= r;
                layout.offset *= r;
            } else {
                let r = b / a;
                let must = |what: &str, v: usize| {
                    if v.is_multiple_of(r) {
                        Ok(())
                    } else {
                        Err(fail(format!("{what} must be divisible by {r}"), Some(v)))
                    }
                };
                must("self.size(-1)", l.shape[last])?;
                must("self.storage_offset()", l.offset)?;
                for (i, &s) in l.strides[..last].iter().enumerate() {
                    must(&format!("self.stride({i})"), s)?;
                }
                layout.strides[..last].iter_mut().for_each(|s| *s /= r);
                layout.shape[last] /= r;
                layout.offset /= r;
            }
        }
        if dtype == from {
            return Ok(Tensor::from_parts(self.storage().clone(), layout, dtype));
        }
        let storage = Arc::new(self.storage().reinterpret(dtype)?);
        if dtype == DType::Bool {
            // Every byte of the storage: `as_strided` on the result could reach any of them.
            let bytes = Arc::new(self.storage().reinterpret(DType::U8)?);
            let n = bytes.len();
            if n > 0 {
                let all = Tensor::from_parts(bytes, Layout::contiguous(&[n]), DType::U8);
                if crate::no_grad(|| all.max_all_raw())?.item()?.to_i64() > 1 {
                    return Err(Error::Runtime(format!(
                        "cannot view {} as Bool: the memory holds bytes other than 0 and 1, which are not valid bools (compare with 0 instead: `t != 0`)",
                        from.torch_name()
                    )));
                }
            }
        }
        Tensor::from_storage(storage, layout)
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
        self.transpose_named(a, b, "TransposeBackward0")
    }

    /// `transpose` recorded under `name` (`t()` is PyTorch's TBackward0).
    fn transpose_named(&self, a: i64, b: i64, name: &'static str) -> Result<Tensor> {
        if self.ndim() == 0 {
            return Ok(self.clone());
        }
        let (a, b) = (self.dim(a)?, self.dim(b)?);
        let out = self.with_layout(self.layout().transpose(a, b));
        Ok(record_view(name, self, out, move |g| {
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
        self.transpose_named(0, 1, "TBackward0")
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
                let listed = dim_list_mask(ds, n)?;
                for (k, &l) in listed.iter().enumerate() {
                    drop[k] = l && self.shape()[k] == 1;
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
        if start < -size || start > size {
            return Err(Error::Index(format!(
                "start out of range (expected to be in range of [{}, {size}], but got {start})",
                -size
            )));
        }
        let start = if start < 0 { start + size } else { start };
        if length < 0 || start + length > size {
            return Err(Error::Runtime(format!(
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
        let out =
            self.with_layout(
                self.layout()
                    .slice(d, s as usize, e.max(s) as usize, step as usize),
            );
        let f: ViewFn = Arc::new(move |t: &Tensor| t.slice(d as i64, Some(s), Some(e), step));
        Ok(record_partial_view("SliceBackward0", self, out, f))
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

// -------------------------------------------------------------------- more view ops

impl Tensor {
    /// Alias of [`Tensor::transpose`] (NumPy's name).
    pub fn swapaxes(&self, a: i64, b: i64) -> Result<Tensor> {
        self.transpose(a, b)
    }

    /// `T`: all dims reversed (a plain transpose for matrices).
    pub fn reverse_dims(&self) -> Tensor {
        let l = self.layout();
        let dims: Dims = (0..self.ndim()).rev().collect();
        let out = self.with_layout(l.permute(&dims));
        record_view("PermuteBackward0", self, out, |g| Ok(g.reverse_dims()))
    }

    /// `mT`: swap the last two dims of a (batch of) matrix.
    pub fn mt(&self) -> Result<Tensor> {
        if self.ndim() < 2 {
            return Err(Error::Runtime(format!(
                "tensor.mT is only supported on matrices or batches of matrices. Got {}-D tensor.",
                self.ndim()
            )));
        }
        self.transpose(-2, -1)
    }

    /// Split `dim` into `sizes` (one entry may be -1).
    pub fn unflatten(&self, dim: i64, sizes: &[i64]) -> Result<Tensor> {
        if sizes.is_empty() {
            return Err(Error::Runtime("unflatten: sizes must be non-empty".into()));
        }
        let d = self.dim(dim)?;
        let size = self.shape()[d];
        let inner = infer_shape("unflatten", sizes, size).map_err(|_| {
            Error::Runtime(format!(
                "unflatten: Provided sizes {sizes:?} don't multiply up to the size of dim {dim} ({size}) in the input tensor"
            ))
        })?;
        let mut shape = shape_i64(&self.shape()[..d]);
        shape.extend(inner.iter().map(|&x| x as i64));
        shape.extend(shape_i64(&self.shape()[d + 1..]));
        self.view(&shape)
    }

    /// Move dims `src` to positions `dst` (other dims keep their order).
    pub fn movedim(&self, src: &[i64], dst: &[i64]) -> Result<Tensor> {
        let n = self.ndim();
        if src.len() != dst.len() {
            return Err(Error::Runtime(format!(
                "movedim: Invalid source or destination dims: source ({src:?} dims) should contain the same number of dims as destination ({dst:?} dims)"
            )));
        }
        let norm = |v: &[i64], what: &str| -> Result<Vec<usize>> {
            let mut seen = vec![false; n.max(1)];
            let mut out = Vec::with_capacity(v.len());
            for &x in v {
                let k = normalize_dim(x, n)?;
                if seen[k] {
                    return Err(Error::Runtime(format!(
                        "movedim: repeated dim in `{what}` ({v:?})"
                    )));
                }
                seen[k] = true;
                out.push(k);
            }
            Ok(out)
        };
        let s = norm(src, "source")?;
        let d = norm(dst, "destination")?;
        if n == 0 {
            return Ok(self.clone());
        }
        let mut order: Vec<Option<usize>> = vec![None; n];
        for (&si, &di) in s.iter().zip(&d) {
            order[di] = Some(si);
        }
        let mut rest = (0..n).filter(|i| !s.contains(i));
        let perm: Dims = order
            .into_iter()
            .map(|o| o.or_else(|| rest.next()).unwrap_or(0))
            .collect();
        let out = self.with_layout(self.layout().permute(&perm));
        let mut inverse = vec![0i64; n];
        for (i, &k) in perm.iter().enumerate() {
            inverse[k] = i as i64;
        }
        Ok(record_view("PermuteBackward0", self, out, move |g| {
            g.permute(&inverse)
        }))
    }

    /// The diagonal `offset` of the planes spanned by `dim1` and `dim2`, as a new last dim.
    pub fn diagonal(&self, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
        let n = self.ndim();
        let (a, b) = (normalize_dim(dim1, n)?, normalize_dim(dim2, n)?);
        if n < 2 {
            return Err(Error::Runtime(format!(
                "diagonal requires a tensor with at least 2 dimensions, got {n}"
            )));
        }
        if a == b {
            return Err(Error::Runtime(format!(
                "diagonal dimensions cannot be identical {dim1}, {dim2}"
            )));
        }
        let l = self.layout();
        let (na, nb) = (l.shape[a] as i64, l.shape[b] as i64);
        let mut off = l.offset;
        let len = if offset >= 0 {
            let len = na.min(nb - offset).max(0);
            if len > 0 {
                off += offset as usize * l.strides[b];
            }
            len
        } else {
            let len = (na + offset).min(nb).max(0);
            if len > 0 {
                off += (-offset) as usize * l.strides[a];
            }
            len
        };
        let mut shape = Dims::new();
        let mut strides = Dims::new();
        for i in 0..n {
            if i != a && i != b {
                shape.push(l.shape[i]);
                strides.push(l.strides[i]);
            }
        }
        shape.push(len as usize);
        strides.push(l.strides[a] + l.strides[b]);
        let out = self.with_layout(Layout {
            shape,
            strides,
            offset: off,
        });
        let f: ViewFn = Arc::new(move |t: &Tensor| t.diagonal(offset, a as i64, b as i64));
        Ok(record_partial_view("DiagonalBackward0", self, out, f))
    }

    /// A view with explicit sizes, strides and storage offset (default: this tensor's).
    pub fn as_strided(&self, size: &[i64], stride: &[i64], offset: Option<i64>) -> Result<Tensor> {
        if size.len() != stride.len() {
            return Err(Error::Runtime(format!(
                "mismatch in length of strides and shape ({} and {})",
                stride.len(),
                size.len()
            )));
        }
        if let Some(s) = size.iter().find(|&&s| s < 0) {
            return Err(Error::Runtime(format!(
                "as_strided: Negative sizes are not supported, got size {s}"
            )));
        }
        if stride.iter().any(|&s| s < 0) {
            return Err(Error::Runtime(format!(
                "as_strided: Negative strides are not supported at the moment, got strides: {stride:?}"
            )));
        }
        let off = offset.unwrap_or(self.storage_offset() as i64);
        if off < 0 {
            return Err(Error::Runtime(format!(
                "Tensor: invalid storage offset {off}"
            )));
        }
        let layout = Layout {
            shape: size.iter().map(|&s| s as usize).collect(),
            strides: stride.iter().map(|&s| s as usize).collect(),
            offset: off as usize,
        };
        let need = layout.storage_extent();
        let have = self.storage().len();
        if need > have {
            let isz = self.dtype().size();
            return Err(Error::Runtime(format!(
                "setStorage: sizes {size:?}, strides {stride:?}, storage offset {off}, and itemsize {isz} requiring a storage size of {} are out of bounds for storage of size {}",
                need * isz,
                have * isz
            )));
        }
        let out = self.with_layout(layout);
        if !(needs_grad(&[self]) && out.dtype().is_floating_point()) {
            return Ok(out);
        }
        let base = self.storage_offset() as i64;
        if !self.is_contiguous() || off < base {
            return Err(Error::Runtime(
                "as_strided: gradients are only supported for a contiguous input and a view inside it"
                    .into(),
            ));
        }
        let (size, stride) = (size.to_vec(), stride.to_vec());
        super::index_grad::record_gather("AsStridedBackward0", self, out, move |a| {
            a.as_strided(&size, &stride, Some(off - base))
        })
    }

    /// Sliding windows of `size` every `step` along `dim`, as a new last dim.
    pub fn unfold(&self, dim: i64, size: i64, step: i64) -> Result<Tensor> {
        let l = self.layout();
        let d = normalize_dim(dim, self.ndim())?;
        let dim_size = if self.ndim() == 0 {
            1
        } else {
            l.shape[d] as i64
        };
        if size < 0 || size > dim_size {
            return Err(Error::Runtime(format!(
                "maximum size for tensor at dimension {d} is {dim_size} but size is {size}"
            )));
        }
        if step <= 0 {
            return Err(Error::Runtime(format!("step is {step} but must be > 0")));
        }
        if self.ndim() == 0 {
            return Ok(self.with_layout(Layout {
                shape: smallvec::smallvec![size as usize],
                strides: smallvec::smallvec![1],
                offset: l.offset,
            }));
        }
        let mut out = l.clone();
        let count = (dim_size - size) / step + 1;
        out.shape[d] = count as usize;
        out.strides[d] = l.strides[d] * step as usize;
        out.shape.push(size as usize);
        out.strides.push(l.strides[d]);
        let out = self.with_layout(out);
        super::index_grad::record_gather("UnfoldBackward0", self, out, |a| {
            a.unfold(dim, size, step)
        })
    }

    /// All slices along `dim` (the dim removed).
    pub fn unbind(&self, dim: i64) -> Result<Vec<Tensor>> {
        if self.ndim() == 0 {
            return Err(Error::Index(
                "Dimension specified as 0 but tensor has no dimensions".into(),
            ));
        }
        let d = self.dim(dim)?;
        let pieces = crate::no_grad(|| {
            (0..self.shape()[d])
                .map(|i| self.select(d as i64, i as i64))
                .collect::<Result<Vec<_>>>()
        })?;
        record_pieces("UnbindBackward0", self, &pieces, d, true);
        Ok(pieces)
    }

    /// Pieces of `split_size` along `dim` (the last may be smaller).
    pub fn split(&self, split_size: i64, dim: i64) -> Result<Vec<Tensor>> {
        if self.ndim() == 0 {
            return Err(Error::Runtime(
                "split expects at least a 1-dimensional tensor".into(),
            ));
        }
        let d = self.dim(dim)?;
        let size = self.shape()[d] as i64;
        if split_size < 0 {
            return Err(Error::Runtime(format!(
                "split expects split_size be non-negative, but got split_size={split_size}"
            )));
        }
        if split_size == 0 && size != 0 {
            return Err(Error::Runtime(format!(
                "split_size can only be 0 if dimension size is 0, but got dimension size of {size}"
            )));
        }
        let num = if split_size == 0 {
            1
        } else {
            ((size + split_size - 1) / split_size).max(1)
        };
        let pieces = crate::no_grad(|| {
            (0..num)
                .map(|i| {
                    let start = i * split_size;
                    let len = split_size.min(size - start);
                    self.narrow(d as i64, start, len)
                })
                .collect::<Result<Vec<_>>>()
        })?;
        record_pieces("SplitBackward0", self, &pieces, d, false);
        Ok(pieces)
    }

    /// Pieces with the given sizes along `dim` (they must add up to its size).
    pub fn split_with_sizes(&self, sizes: &[i64], dim: i64) -> Result<Vec<Tensor>> {
        if self.ndim() == 0 {
            return Err(Error::Runtime(
                "split expects at least a 1-dimensional tensor".into(),
            ));
        }
        let d = self.dim(dim)?;
        let size = self.shape()[d] as i64;
        if sizes.iter().any(|&s| s < 0) || sizes.iter().sum::<i64>() != size {
            return Err(Error::Runtime(format!(
                "split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's size at dimension {d}), but got split_sizes={sizes:?}"
            )));
        }
        let mut start = 0i64;
        let pieces = crate::no_grad(|| {
            sizes
                .iter()
                .map(|&s| {
                    let t = self.narrow(d as i64, start, s);
                    start += s;
                    t
                })
                .collect::<Result<Vec<_>>>()
        })?;
        record_pieces("SplitWithSizesBackward0", self, &pieces, d, false);
        Ok(pieces)
    }

    /// `chunks` nearly equal pieces along `dim` (fewer when the size doesn't allow).
    pub fn chunk(&self, chunks: i64, dim: i64) -> Result<Vec<Tensor>> {
        if self.ndim() == 0 {
            return Err(Error::Runtime(
                "chunk expects at least a 1-dimensional tensor".into(),
            ));
        }
        if chunks <= 0 {
            return Err(Error::Runtime(format!(
                "chunk expects `chunks` to be greater than 0, got: {chunks}"
            )));
        }
        let d = self.dim(dim)?;
        let size = self.shape()[d] as i64;
        let split_size = (size + chunks - 1) / chunks;
        if split_size == 0 && size == 0 {
            let sizes = vec![0i64; chunks as usize];
            return self.split_with_sizes(&sizes, dim);
        }
        self.split(split_size, dim)
    }

    /// `tensor_split` by a number of sections: sizes differ by at most one.
    pub fn tensor_split_sections(&self, sections: i64, dim: i64) -> Result<Vec<Tensor>> {
        if self.ndim() == 0 {
            return Err(Error::Runtime(
                "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims".into(),
            ));
        }
        if sections <= 0 {
            return Err(Error::Runtime(format!(
                "number of sections must be larger than 0, got {sections}"
            )));
        }
        let d = self.dim(dim)?;
        let size = self.shape()[d] as i64;
        let (q, r) = (size / sections, size % sections);
        let sizes: Vec<i64> = (0..sections).map(|i| q + i64::from(i < r)).collect();
        self.split_with_sizes(&sizes, dim)
    }

    /// `tensor_split` at the given indices (clamped, as in NumPy's `array_split`).
    pub fn tensor_split_indices(&self, indices: &[i64], dim: i64) -> Result<Vec<Tensor>> {
        if self.ndim() == 0 {
            return Err(Error::Runtime(
                "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims".into(),
            ));
        }
        let d = self.dim(dim)?;
        let size = self.shape()[d] as i64;
        let mut out = Vec::with_capacity(indices.len() + 1);
        let mut start = 0i64;
        for &i in indices.iter().chain(std::iter::once(&size)) {
            let i = if i < 0 {
                (i + size).max(0)
            } else {
                i.min(size)
            };
            let s = start.min(size);
            let len = (i - s).max(0);
            out.push(self.narrow(d as i64, s, len)?);
            start = i;
        }
        Ok(out)
    }
}

/// Broadcast any number of shapes together.
pub fn broadcast_shapes_all(shapes: &[&[usize]]) -> Result<Dims> {
    let mut out: Dims = Dims::new();
    for s in shapes {
        out = crate::layout::broadcast_shapes("broadcast_shapes", &out, s).map_err(|_| {
            Error::Runtime("Shape mismatch: objects cannot be broadcast to a single shape".into())
        })?;
    }
    Ok(out)
}

/// Views of `tensors` expanded to their common broadcast shape.
pub fn broadcast_tensors(tensors: &[Tensor]) -> Result<Vec<Tensor>> {
    let shapes: Vec<&[usize]> = tensors.iter().map(|t| t.shape()).collect();
    let shape = broadcast_shapes_all(&shapes)?;
    tensors.iter().map(|t| t.broadcast_to(&shape)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(n: i64, shape: &[usize]) -> Tensor {
        Tensor::from_vec((0..n).collect::<Vec<i64>>(), shape).unwrap()
    }

    #[test]
    fn view_family() {
        let x = t(24, &[2, 3, 4]);
        assert_eq!(x.unflatten(2, &[2, -1]).unwrap().shape(), &[2, 3, 2, 2]);
        assert_eq!(x.movedim(&[0], &[2]).unwrap().shape(), &[3, 4, 2]);
        let d = x.diagonal(1, 1, 2).unwrap();
        assert_eq!(d.shape(), &[2, 3]);
        assert_eq!(d.to_vec::<i64>().unwrap(), vec![1, 6, 11, 13, 18, 23]);
        let u = t(5, &[5]).unfold(0, 2, 2).unwrap();
        assert_eq!(u.to_vec::<i64>().unwrap(), vec![0, 1, 2, 3]);
        let parts = t(5, &[5]).chunk(2, 0).unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[1].to_vec::<i64>().unwrap(), vec![3, 4]);
        let s = t(7, &[7]).tensor_split_indices(&[5, 2], 0).unwrap();
        assert_eq!(
            s.iter().map(|p| p.numel()).collect::<Vec<_>>(),
            vec![5, 0, 5]
        );
        assert!(x.as_strided(&[5, 5], &[5, 1], None).is_err());
        let b = broadcast_tensors(&[t(3, &[3, 1]), t(2, &[2])]).unwrap();
        assert_eq!(b[1].shape(), &[3, 2]);
        assert_eq!(b[1].strides(), &[0, 1]);
    }
}
