//! Indexing: `t[...]` with basic indices (views) and advanced indices (copies), index
//! assignment, and the gather/scatter family (`index_select`, `gather`, `scatter*`,
//! `index_add/copy/fill`, `masked_*`, `where`, `nonzero`, `take`, `put_`).

use super::host_fallback::cuda_via_host;
use super::Tensor;
use crate::cpu::gather::{self as kern, DimMap, Inner, Plan};
use crate::cpu::strided::{self, PAR_THRESHOLD};
use crate::dtype::Category;
use crate::layout::{broadcast_shapes, normalize_dim, Dims, Layout};
use crate::{with_dtype, DType, Element, Error, Result, ResultType, Scalar};
use rayon::prelude::*;

/// One entry of an index tuple (`t[i, a:b:c, None, ..., mask]`).
#[derive(Clone, Debug)]
pub enum TensorIndex {
    /// An integer: selects and removes the dim (negative counts from the end).
    Int(i64),
    /// A slice `start:stop:step` (bounds clamped like Python's; step > 0).
    Slice {
        start: Option<i64>,
        stop: Option<i64>,
        step: i64,
    },
    /// `None`: a new dim of size 1.
    NewAxis,
    /// `...`: as many full slices as needed.
    Ellipsis,
    /// A Python bool: a new dim indexed by `[0]` (True) or `[]` (False).
    Bool(bool),
    /// An integer tensor (advanced index) or a bool/uint8 mask.
    Tensor(Tensor),
}

impl TensorIndex {
    /// The full slice `:`.
    pub fn full() -> TensorIndex {
        TensorIndex::Slice {
            start: None,
            stop: None,
            step: 1,
        }
    }
}

/// A tensor or a Python-style scalar (scalars take part in type promotion weakly).
#[derive(Clone, Debug)]
pub enum TensorOrScalar {
    Tensor(Tensor),
    Scalar(Scalar),
}

impl TensorOrScalar {
    fn add_to(&self, r: ResultType) -> ResultType {
        match self {
            TensorOrScalar::Tensor(t) => r.tensor(t.dtype(), t.ndim()),
            TensorOrScalar::Scalar(s) => r.scalar(*s),
        }
    }
    fn to_tensor(&self, dtype: DType) -> Tensor {
        match self {
            TensorOrScalar::Tensor(t) => t.to_dtype(dtype),
            TensorOrScalar::Scalar(s) => Tensor::scalar(*s, dtype),
        }
    }
}

/// The reductions of `scatter_reduce`.
#[derive(Clone, Copy, PartialEq)]
enum R {
    Sum,
    Prod,
    Mean,
    Max,
    Min,
}

impl R {
    /// Fold `x` into the accumulated `cur` (amax/amin propagate NaN).
    #[inline]
    fn combine<T: Element>(self, cur: T, x: T) -> T {
        let is_nan = |v: T| v.partial_cmp(&v).is_none();
        match self {
            R::Sum | R::Mean => cur.add(x),
            R::Prod => cur.mul(x),
            R::Max | R::Min => {
                let better = (self == R::Max && x > cur) || (self == R::Min && x < cur);
                if !is_nan(cur) && (is_nan(x) || better) {
                    x
                } else {
                    cur
                }
            }
        }
    }
}

/// (lowest, highest) value of an integer dtype.
fn int_limits(dt: DType) -> (i64, i64) {
    match dt {
        DType::I32 => (i32::MIN.into(), i32::MAX.into()),
        DType::I16 => (i16::MIN.into(), i16::MAX.into()),
        DType::I8 => (i8::MIN.into(), i8::MAX.into()),
        DType::U8 => (0, u8::MAX.into()),
        _ => (i64::MIN, i64::MAX),
    }
}

/// An advanced index, applying to dims of the basic-indexed view.
enum Adv {
    /// An integer index tensor for one dim.
    Int(usize, Tensor),
    /// A bool mask over dims `dim..dim + shape.len()`: the row-major positions of its trues.
    Mask {
        dim: usize,
        shape: Dims,
        pos: Vec<usize>,
    },
}

impl Adv {
    /// As (dim, integer index tensor) pairs: a k-d mask becomes k coordinate tensors.
    fn into_int(self) -> Vec<(usize, Tensor)> {
        match self {
            Adv::Int(d, t) => vec![(d, t)],
            Adv::Mask { dim, shape, pos } => {
                let n = pos.len();
                let nd = shape.len();
                let coords = kern::unravel(&pos, &shape);
                (0..nd)
                    .map(|j| {
                        let col: Vec<i64> = (0..n).map(|i| coords[i * nd + j]).collect();
                        (dim + j, i64_tensor(col))
                    })
                    .collect()
            }
        }
    }
}

/// Basic indexing applied; advanced indices left to apply to `view`'s dims.
struct Prepared {
    view: Tensor,
    adv: Vec<Adv>,
}

fn is_mask_dtype(d: DType) -> bool {
    matches!(d, DType::Bool | DType::U8)
}

fn oob(index: i64, dim: usize, size: usize) -> Error {
    Error::Index(format!(
        "index {index} is out of bounds for dimension {dim} with size {size}"
    ))
}

/// Integer index values in row-major order (any integer dtype).
fn index_values(t: &Tensor, op: &str) -> Result<Vec<i64>> {
    if t.dtype().category() != Category::Int {
        return Err(Error::Runtime(format!(
            "{op}(): Expected dtype int64 for index, but got {}",
            t.dtype()
        )));
    }
    t.to_dtype(DType::I64).to_vec::<i64>()
}

/// Check `vals` against `size` (wrapping negatives when `wrap`) and convert to positions.
fn positions(
    vals: &[i64],
    size: usize,
    wrap: bool,
    err: impl Fn(i64) -> Error,
) -> Result<Vec<usize>> {
    check_bounds(vals, size, wrap, err)?;
    let s = size as i64;
    let conv = |&v: &i64| if v < 0 { (v + s) as usize } else { v as usize };
    Ok(if vals.len() >= PAR_THRESHOLD {
        vals.par_iter().map(conv).collect()
    } else {
        vals.iter().map(conv).collect()
    })
}

/// Fail with `err(v)` for the first `v` outside `[0, size)` (`[-size, size)` when `wrap`).
fn check_bounds(vals: &[i64], size: usize, wrap: bool, err: impl Fn(i64) -> Error) -> Result<()> {
    let s = size as i64;
    let bad = |v: &&i64| {
        let v = **v;
        if wrap {
            v < -s || v >= s
        } else {
            v < 0 || v >= s
        }
    };
    let first_bad = if vals.len() >= PAR_THRESHOLD {
        vals.par_iter().find_first(bad)
    } else {
        vals.iter().find(bad)
    };
    match first_bad {
        Some(&v) => Err(err(v)),
        None => Ok(()),
    }
}

/// Element offsets (into the storage) that `plan` reads or writes, in row-major order.
fn plan_offsets(plan: &Plan) -> Vec<usize> {
    let mut out = Vec::with_capacity(plan.numel());
    for &o in &plan.outer {
        match &plan.inner {
            Inner::Range { start, len } => out.extend(o + start..o + start + len),
            Inner::List(l) => out.extend(l.iter().map(|&k| o + k)),
        }
    }
    out
}

/// Index tuple entries with CUDA tensors brought to the host: a CUDA tensor is indexed with a
/// plan computed on the CPU (as PyTorch, which synchronises for masks).
fn host_indices(idx: &[TensorIndex]) -> Result<Vec<TensorIndex>> {
    idx.iter()
        .map(|i| match i {
            TensorIndex::Tensor(t) if t.device().is_cuda() => {
                Ok(TensorIndex::Tensor(crate::cuda::ops::download(t)?))
            }
            other => Ok(other.clone()),
        })
        .collect()
}

fn i64_tensor(v: Vec<i64>) -> Tensor {
    let n = v.len();
    Tensor::from_vec_unchecked(v, &[n])
}

impl Tensor {
    // ------------------------------------------------------------------ t[...]

    fn prepare_index(&self, idx: &[TensorIndex]) -> Result<Prepared> {
        let ndim = self.ndim();
        let mut consumed = 0usize;
        let mut ellipses = 0;
        for i in idx {
            match i {
                TensorIndex::Int(_) | TensorIndex::Slice { .. } => consumed += 1,
                TensorIndex::Tensor(t) => {
                    // Index tensors are int64/int32 (or byte/bool masks); a 0-d integer tensor of
                    // any width acts as a Python int.
                    let int_index = matches!(t.dtype(), DType::I64 | DType::I32)
                        || (t.ndim() == 0 && t.dtype().category() == Category::Int);
                    if is_mask_dtype(t.dtype()) {
                        consumed += t.ndim();
                    } else if int_index {
                        consumed += 1;
                    } else {
                        return Err(Error::Index(
                            "tensors used as indices must be long, int, byte or bool tensors"
                                .into(),
                        ));
                    }
                }
                TensorIndex::Ellipsis => ellipses += 1,
                TensorIndex::NewAxis | TensorIndex::Bool(_) => {}
            }
        }
        if ellipses > 1 {
            return Err(Error::Index(
                "an index can only have a single ellipsis ('...')".into(),
            ));
        }
        if consumed > ndim {
            return Err(Error::Index(format!(
                "too many indices for tensor of dimension {ndim}"
            )));
        }
        let mut l = self.layout().clone();
        let mut cur = 0usize; // dim of the view being built
        let mut orig = 0usize; // dim of `self` being indexed
        let mut adv: Vec<Adv> = Vec::new();
        for i in idx {
            match i {
                TensorIndex::Int(v) => {
                    let size = l.shape[cur];
                    let s = size as i64;
                    if *v < -s || *v >= s {
                        return Err(oob(*v, orig, size));
                    }
                    let p = if *v < 0 { v + s } else { *v } as usize;
                    l = l.select(cur, p);
                    orig += 1;
                }
                TensorIndex::Slice { start, stop, step } => {
                    if *step <= 0 {
                        return Err(Error::Value(if *step == 0 {
                            "slice step cannot be zero".into()
                        } else {
                            "step must be greater than zero".into()
                        }));
                    }
                    let size = l.shape[cur] as i64;
                    let clamp = |v: i64| -> i64 {
                        let v = if v < 0 { v + size } else { v };
                        v.clamp(0, size)
                    };
                    let s = start.map(clamp).unwrap_or(0);
                    let e = stop.map(clamp).unwrap_or(size);
                    l = l.slice(cur, s as usize, e.max(s) as usize, *step as usize);
                    cur += 1;
                    orig += 1;
                }
                TensorIndex::NewAxis => {
                    l = l.unsqueeze(cur);
                    cur += 1;
                }
                TensorIndex::Ellipsis => {
                    let skip = ndim - consumed;
                    cur += skip;
                    orig += skip;
                }
                TensorIndex::Bool(b) => {
                    l = l.unsqueeze(cur);
                    adv.push(Adv::Int(cur, i64_tensor(if *b { vec![0] } else { vec![] })));
                    cur += 1;
                }
                TensorIndex::Tensor(t) => {
                    if is_mask_dtype(t.dtype()) {
                        if t.ndim() == 0 {
                            let b = t.item()?.to_i64() != 0;
                            l = l.unsqueeze(cur);
                            adv.push(Adv::Int(cur, i64_tensor(if b { vec![0] } else { vec![] })));
                            cur += 1;
                            continue;
                        }
                        let k = t.ndim();
                        for j in 0..k {
                            if t.shape()[j] != l.shape[cur + j] {
                                return Err(Error::Index(format!(
                                    "The shape of the mask {:?} at index {j} does not match the shape of the indexed tensor {:?} at index {}",
                                    t.shape(),
                                    &l.shape[..],
                                    cur + j
                                )));
                            }
                        }
                        let (pos, shape) = t.nonzero_positions()?;
                        adv.push(Adv::Mask {
                            dim: cur,
                            shape,
                            pos,
                        });
                        cur += k;
                        orig += k;
                    } else if t.ndim() == 0 {
                        // A 0-d integer tensor behaves like a Python int (a view).
                        let v = t.item()?.to_i64();
                        let size = l.shape[cur];
                        let s = size as i64;
                        if v < -s || v >= s {
                            return Err(oob(v, orig, size));
                        }
                        l = l.select(cur, if v < 0 { v + s } else { v } as usize);
                        orig += 1;
                    } else {
                        adv.push(Adv::Int(cur, t.clone()));
                        cur += 1;
                        orig += 1;
                    }
                }
            }
        }
        Ok(Prepared {
            view: self.with_layout(l),
            adv,
        })
    }

    /// For advanced indices: the plan over `view` and the result shape.
    fn advanced_plan(view: &Tensor, adv: Vec<Adv>) -> Result<(Plan, Dims)> {
        let l = view.layout();
        // Fast paths for one index: a 1-d index (or mask) is an `index_select` along its
        // dim; a k-d mask maps its true positions straight to offsets.
        if adv.len() == 1 {
            match &adv[0] {
                Adv::Int(d, t) if t.ndim() == 1 => {
                    let size = l.shape[*d];
                    let vals = t.to_dtype(DType::I64).to_vec::<i64>()?;
                    let pos = positions(&vals, size, true, |v| oob(v, *d, size))?;
                    let mut maps = vec![DimMap::Id; l.ndim()];
                    maps[*d] = DimMap::Map(pos);
                    return Ok(Plan::from_maps(l, &maps));
                }
                Adv::Mask { dim, shape, pos } if shape.len() == 1 => {
                    let mut maps = vec![DimMap::Id; l.ndim()];
                    maps[*dim] = DimMap::Map(pos.clone());
                    return Ok(Plan::from_maps(l, &maps));
                }
                _ => {}
            }
        }
        let single_mask = adv.len() == 1 && matches!(adv[0], Adv::Mask { .. });
        let (dims, bshape, adv_off): (Vec<usize>, Dims, Vec<usize>) = if single_mask {
            let Some(Adv::Mask { dim, shape, pos }) = adv.into_iter().next() else {
                unreachable!("checked above")
            };
            // Offsets of the true positions within the masked dims of the view.
            let k = shape.len();
            let sub = Layout {
                shape: shape.clone(),
                strides: l.strides[dim..dim + k].into(),
                offset: 0,
            };
            let adv_off = kern::offsets_of_positions(&sub, &pos);
            let n = pos.len();
            ((dim..dim + k).collect(), smallvec::smallvec![n], adv_off)
        } else {
            let adv: Vec<(usize, Tensor)> = adv.into_iter().flat_map(Adv::into_int).collect();
            // Broadcast the index tensors.
            let mut bshape: Dims = Dims::new();
            for (_, t) in &adv {
                bshape = broadcast_shapes("index", &bshape, t.shape()).map_err(|_| {
                    let shapes: Vec<String> =
                        adv.iter().map(|(_, t)| format!("{:?}", t.shape())).collect();
                    Error::Index(format!(
                        "shape mismatch: indexing tensors could not be broadcast together with shapes {}",
                        shapes.join(", ")
                    ))
                })?;
            }
            let nb: usize = bshape.iter().product();
            let mut adv_off = vec![0usize; nb];
            for (d, t) in &adv {
                let t = t.to_dtype(DType::I64).broadcast_to(&bshape)?;
                let vals = t.to_vec::<i64>()?;
                let (size, st) = (l.shape[*d], l.strides[*d]);
                let pos = positions(&vals, size, true, |v| oob(v, *d, size))?;
                for (o, p) in adv_off.iter_mut().zip(pos) {
                    *o += p * st;
                }
            }
            (adv.iter().map(|(d, _)| *d).collect(), bshape, adv_off)
        };
        let nb = adv_off.len();
        let adjacent = dims.windows(2).all(|w| w[1] == w[0] + 1);
        let rest: Vec<usize> = (0..l.ndim()).filter(|d| !dims.contains(d)).collect();
        let (pre, post): (Vec<usize>, Vec<usize>) = if adjacent {
            rest.iter().partition(|&&d| d < dims[0])
        } else {
            (vec![], rest)
        };
        let pre_tables: Vec<Vec<usize>> = pre
            .iter()
            .map(|&d| (0..l.shape[d]).map(|i| i * l.strides[d]).collect())
            .collect();
        let pre_off = kern::cross_offsets(l.offset, &pre_tables);
        let outer = if let [p] = pre_off[..] {
            let mut o = adv_off;
            if p != 0 {
                o.iter_mut().for_each(|x| *x += p);
            }
            o
        } else {
            let mut outer = Vec::with_capacity(pre_off.len() * nb);
            for p in pre_off {
                outer.extend(adv_off.iter().map(|&a| p + a));
            }
            outer
        };
        let post_shape: Vec<usize> = post.iter().map(|&d| l.shape[d]).collect();
        let post_strides: Vec<usize> = post.iter().map(|&d| l.strides[d]).collect();
        let inner = Inner::from_dims(&post_shape, &post_strides);
        let mut shape: Dims = pre.iter().map(|&d| l.shape[d]).collect();
        shape.extend(bshape.iter().copied());
        shape.extend(post_shape);
        Ok((Plan { outer, inner }, shape))
    }

    /// `self[idx]`: a view for basic indices, a copy when any advanced index is present.
    pub(crate) fn index_raw(&self, idx: &[TensorIndex]) -> Result<Tensor> {
        let host;
        let idx = if self.device().is_cuda() {
            host = host_indices(idx)?;
            &host[..]
        } else {
            idx
        };
        let p = self.prepare_index(idx)?;
        if p.adv.is_empty() {
            return Ok(p.view);
        }
        let (plan, shape) = Self::advanced_plan(&p.view, p.adv)?;
        if self.device().is_cuda() {
            return crate::cuda::index_ops::gather_offsets(self, plan_offsets(&plan), &shape);
        }
        Ok(with_dtype!(self.dtype(), T, {
            let src = self.storage_slice::<T>()?;
            Tensor::from_vec_unchecked(kern::gather(src, &plan), &shape)
        }))
    }

    /// `self[idx] = value` (`accumulate`: `+=`, summing repeated indices).
    pub(crate) fn index_put_raw(
        &self,
        idx: &[TensorIndex],
        value: &Tensor,
        accumulate: bool,
    ) -> Result<()> {
        // `t[mask] = scalar` with a full-shape mask is a masked fill.
        if let [TensorIndex::Tensor(m)] = idx {
            if !accumulate
                && m.dtype() == DType::Bool
                && m.shape() == self.shape()
                && value.numel() == 1
                && self.ndim() > 0
            {
                return self.masked_fill_raw_(m, value.item()?);
            }
        }
        let host;
        let idx = if self.device().is_cuda() {
            host = host_indices(idx)?;
            &host[..]
        } else {
            idx
        };
        let p = self.prepare_index(idx)?;
        let basic = p.adv.is_empty();
        let planned = if basic {
            None
        } else {
            Some(Self::advanced_plan(&p.view, p.adv)?)
        };
        let shape: Dims = match &planned {
            Some((_, s)) => s.clone(),
            None => p.view.shape().into(),
        };
        // Leading size-1 dims of the value are dropped, as in PyTorch.
        let mut v = value.clone();
        while v.ndim() > shape.len() && v.shape()[0] == 1 {
            v = v.select(0, 0)?;
        }
        let v = v.broadcast_to(&shape).map_err(|_| {
            Error::Runtime(format!(
                "shape mismatch: value tensor of shape {:?} cannot be broadcast to indexing result of shape {:?}",
                value.shape(),
                &shape[..]
            ))
        })?;
        if basic && !accumulate {
            return p.view.copy_raw(&v);
        }
        let plan = match planned {
            Some((plan, _)) => plan,
            None => {
                let l = p.view.layout();
                Plan::from_maps(l, &vec![DimMap::Id; l.ndim()]).0
            }
        };
        if self.device().is_cuda() {
            let offsets = plan_offsets(&plan);
            return crate::cuda::index_ops::scatter_offsets(self, offsets, &v, accumulate);
        }
        let v = v.to_dtype(self.dtype());
        with_dtype!(self.dtype(), T, {
            let vals: Vec<T> = v.to_vec::<T>()?;
            // SAFETY: `vals` is an owned copy, so nothing else reads the storage while we write.
            let dst = unsafe { self.storage_slice_mut::<T>()? };
            if accumulate {
                kern::scatter(dst, &plan, &vals, |a: T, b: T| a.add(b));
            } else {
                kern::scatter(dst, &plan, &vals, |_, b: T| b);
            }
        });
        Ok(())
    }

    // ------------------------------------------------------------------ nonzero / masks

    /// Indices of non-zero elements as one int64 tensor per dim (0-d counts as 1-d).
    pub fn nonzero_columns(&self) -> Result<Vec<Tensor>> {
        let (pos, shape) = self.nonzero_positions()?;
        let shape: Dims = if shape.is_empty() {
            smallvec::smallvec![1]
        } else {
            shape
        };
        let n = pos.len();
        let nd = shape.len();
        let coords = kern::unravel(&pos, &shape);
        (0..nd)
            .map(|d| {
                let col: Vec<i64> = (0..n).map(|i| coords[i * nd + d]).collect();
                i64_tensor(col).to_device(self.device())
            })
            .collect()
    }

    fn nonzero_positions(&self) -> Result<(Vec<usize>, Dims)> {
        if self.device().is_cuda() {
            return crate::cuda::ops::download(self)?.nonzero_positions();
        }
        let flags: Vec<bool> = with_dtype!(self.dtype(), T, {
            let s = self.storage_slice::<T>()?;
            strided::map1(s, self.layout(), |x: T| !x.is_zero())
        });
        Ok((kern::true_positions(&flags), self.shape().into()))
    }

    /// `nonzero()`: an `(n, ndim)` int64 tensor of the coordinates of non-zero elements.
    pub fn nonzero(&self) -> Result<Tensor> {
        let (pos, shape) = self.nonzero_positions()?;
        let coords = kern::unravel(&pos, &shape);
        let out = Tensor::from_vec_unchecked(coords, &[pos.len(), shape.len()]);
        out.to_device(self.device())
    }

    fn check_bool_mask(mask: &Tensor, op: &str) -> Result<()> {
        if mask.dtype() != DType::Bool {
            return Err(Error::Runtime(format!(
                "{op} only supports boolean masks, but got mask with dtype {}",
                mask.dtype()
            )));
        }
        Ok(())
    }

    /// In place: `self[mask] = value` with `mask` broadcast to `self`'s shape.
    pub(crate) fn masked_fill_raw_(&self, mask: &Tensor, value: Scalar) -> Result<()> {
        Self::check_bool_mask(mask, "masked_fill_")?;
        let ml = mask
            .layout()
            .broadcast_to("masked_fill_", self.shape())
            .map_err(|_| {
                Error::Runtime(format!(
                    "masked_fill_: the shape of the mask {:?} must be broadcastable to the shape of the tensor {:?}",
                    mask.shape(),
                    self.shape()
                ))
            })?;
        let mask = if mask.shares_storage(self) {
            mask.clone_data()
        } else {
            mask.clone()
        };
        if self.device().is_cuda() {
            return crate::cuda::index_ops::masked_fill_(self, &mask, value);
        }
        with_dtype!(self.dtype(), T, {
            let v: T = value.to_elem();
            let m = mask.storage_slice::<bool>()?;
            // SAFETY: the mask does not alias our storage (copied above if it did).
            let d = unsafe { self.storage_slice_mut::<T>()? };
            strided::zip_assign(d, self.layout(), m, &ml, |x, m| if m { v } else { x });
        });
        Ok(())
    }

    /// `masked_fill`: broadcasts `self` and `mask` together.
    pub(crate) fn masked_fill_raw(&self, mask: &Tensor, value: Scalar) -> Result<Tensor> {
        Self::check_bool_mask(mask, "masked_fill")?;
        let shape = broadcast_shapes("masked_fill", self.shape(), mask.shape())?;
        let out = self.broadcast_to(&shape)?.clone_data();
        out.masked_fill_raw_(mask, value)?;
        Ok(out)
    }

    /// 1-d tensor of the elements where `mask` (broadcast with `self`) is true.
    pub(crate) fn masked_select_raw(&self, mask: &Tensor) -> Result<Tensor> {
        if mask.dtype() != DType::Bool {
            return Err(Error::Runtime(format!(
                "masked_select: expected BoolTensor for mask, got {}",
                mask.dtype()
            )));
        }
        let shape = broadcast_shapes("masked_select", self.shape(), mask.shape())?;
        let m = mask.broadcast_to(&shape)?;
        let x = self.broadcast_to(&shape)?;
        let flags = m.to_vec::<bool>()?;
        let pos = kern::true_positions(&flags);
        let xl = x.layout().clone();
        let offs = kern::offsets_of_positions(&xl, &pos);
        if self.device().is_cuda() {
            let n = offs.len();
            return crate::cuda::index_ops::gather_offsets(&x, offs, &[n]);
        }
        let plan = Plan {
            outer: offs,
            inner: Inner::Range { start: 0, len: 1 },
        };
        let n = pos.len();
        Ok(with_dtype!(self.dtype(), T, {
            let s = self.storage_slice::<T>()?;
            Tensor::from_vec_unchecked(kern::gather(s, &plan), &[n])
        }))
    }

    /// In place: the `true` positions of `mask` (broadcast to `self`) take consecutive
    /// elements of `source`.
    pub(crate) fn masked_scatter_raw_(&self, mask: &Tensor, source: &Tensor) -> Result<()> {
        Self::check_bool_mask(mask, "masked_scatter_")?;
        if source.dtype() != self.dtype() {
            return Err(Error::Runtime(format!(
                "masked_scatter_: expected self and source to have same dtypes but got {} and {}",
                self.dtype().torch_name(),
                source.dtype().torch_name()
            )));
        }
        let m = mask.broadcast_to(self.shape()).map_err(|_| {
            Error::Runtime(format!(
                "masked_scatter_: the shape of the mask {:?} must be broadcastable to the shape of the tensor {:?}",
                mask.shape(),
                self.shape()
            ))
        })?;
        let flags = m.to_vec::<bool>()?;
        let pos = kern::true_positions(&flags);
        if pos.len() > source.numel() {
            return Err(Error::Runtime(format!(
                "masked_scatter: expected source to have at least as many elements as ones in mask ({} < {})",
                source.numel(),
                pos.len()
            )));
        }
        let sl = self.layout().clone();
        if let Some(device) = super::host_fallback::cuda_device(&[self, mask, source]) {
            super::host_fallback::check_devices("masked_scatter_", device, &[self, mask, source])?;
            let vals = source.reshape(&[-1])?.narrow(0, 0, pos.len() as i64)?;
            let offsets = kern::offsets_of_positions(&sl, &pos);
            return crate::cuda::index_ops::scatter_offsets(self, offsets, &vals, false);
        }
        let plan = Plan {
            outer: kern::offsets_of_positions(&sl, &pos),
            inner: Inner::Range { start: 0, len: 1 },
        };
        with_dtype!(self.dtype(), T, {
            let vals = source.to_vec::<T>()?;
            // SAFETY: `vals` is an owned copy.
            let d = unsafe { self.storage_slice_mut::<T>()? };
            kern::scatter(d, &plan, &vals[..pos.len()], |_, v: T| v);
        });
        Ok(())
    }

    pub(crate) fn masked_scatter_raw(&self, mask: &Tensor, source: &Tensor) -> Result<Tensor> {
        let shape = broadcast_shapes("masked_scatter", self.shape(), mask.shape())?;
        let out = self.broadcast_to(&shape)?.clone_data();
        out.masked_scatter_raw_(mask, source)?;
        Ok(out)
    }

    // ------------------------------------------------------------------ index_* along a dim

    /// 1-d (or 0-d) index argument of the `index_*` family.
    fn dim_index(index: &Tensor, op: &str) -> Result<Vec<i64>> {
        if index.ndim() > 1 {
            return Err(Error::Index(format!(
                "{op}(): Index is supposed to be a vector"
            )));
        }
        if !matches!(index.dtype(), DType::I64 | DType::I32) {
            return Err(Error::Runtime(format!(
                "{op}(): Expected dtype int32/int64 for index but got: {}",
                index.dtype()
            )));
        }
        index_values(index, op)
    }

    /// The layout of `self` seen as at least 1-d.
    fn layout_1d(&self) -> Layout {
        if self.ndim() == 0 {
            let mut l = self.layout().clone();
            l.shape.push(1);
            l.strides.push(1);
            l
        } else {
            self.layout().clone()
        }
    }

    /// Elements at `index` along `dim` (a copy).
    pub(crate) fn index_select_raw(&self, dim: i64, index: &Tensor) -> Result<Tensor> {
        let d = normalize_dim(dim, self.ndim())?;
        let vals = Self::dim_index(index, "index_select")?;
        if self.ndim() == 0 && vals.len() != 1 {
            return Err(Error::Runtime(format!(
                "index_select(): Index to scalar can have only 1 value, got {} value(s)",
                vals.len()
            )));
        }
        let l = self.layout_1d();
        let pos = positions(&vals, l.shape[d], false, |_| {
            Error::Index("index out of range in self".into())
        })?;
        if self.device().is_cuda() {
            let r = crate::cuda::ops::index_select(&self.with_layout(l), d, index)?;
            return Ok(if self.ndim() == 0 {
                r.reshape_contiguous(&[])
            } else {
                r
            });
        }
        let mut maps = vec![DimMap::Id; l.ndim()];
        maps[d] = DimMap::Map(pos);
        let (plan, mut shape) = Plan::from_maps(&l, &maps);
        if self.ndim() == 0 {
            shape.clear();
        }
        Ok(with_dtype!(self.dtype(), T, {
            let s = self.storage_slice::<T>()?;
            Tensor::from_vec_unchecked(kern::gather(s, &plan), &shape)
        }))
    }

    /// Shared checks and plan of `index_add_`/`index_copy_`: writes of `source` into `self`.
    fn index_write_plan(
        &self,
        dim: i64,
        index: &Tensor,
        source: &Tensor,
        op: &str,
    ) -> Result<Plan> {
        let d = normalize_dim(dim, self.ndim())?;
        let vals = Self::dim_index(index, op)?;
        let l = self.layout_1d();
        let src_shape: Dims = if source.ndim() == 0 {
            smallvec::smallvec![1]
        } else {
            source.shape().into()
        };
        let ok = src_shape.len() == l.ndim()
            && (0..l.ndim()).all(|k| k == d || src_shape[k] == l.shape[k]);
        if !ok {
            return Err(Error::Runtime(format!(
                "{op}(): Source/destination tensor must have same slice shapes. Destination slice shape: {:?} at dimension {d} and source slice shape: {:?} at dimension {d}.",
                self.shape(),
                source.shape()
            )));
        }
        if vals.len() != src_shape[d] {
            return Err(Error::Index(format!(
                "{op}(): Number of indices ({}) should be equal to source.size(dim) ({})",
                vals.len(),
                src_shape[d]
            )));
        }
        let size = l.shape[d];
        let pos = positions(&vals, size, false, |v| {
            Error::Index(format!(
                "{op}(): index {v} is out of bounds for dimension {d} with size {size}"
            ))
        })?;
        let mut maps = vec![DimMap::Id; l.ndim()];
        maps[d] = DimMap::Map(pos);
        Ok(Plan::from_maps(&l, &maps).0)
    }

    /// In place: `self.select(dim, index[i]) += alpha * source.select(dim, i)`.
    pub(crate) fn index_add_raw_(
        &self,
        dim: i64,
        index: &Tensor,
        source: &Tensor,
        alpha: Scalar,
    ) -> Result<()> {
        if source.dtype() != self.dtype() {
            return Err(Error::Runtime(format!(
                "index_add_(): self ({}) and source ({}) must have the same scalar type",
                self.dtype().torch_name(),
                source.dtype().torch_name()
            )));
        }
        if !self.dtype().is_floating_point() && matches!(alpha, Scalar::Float(_)) {
            return Err(Error::Runtime(
                "For integral input tensors, argument alpha must not be a floating point number."
                    .into(),
            ));
        }
        let plan = self.index_write_plan(dim, index, source, "index_add_")?;
        if self.device().is_cuda() {
            let d = normalize_dim(dim, self.ndim())?;
            let idx = index.reshape_contiguous(&[index.numel()]);
            let (dl, src) = (self.layout_1d(), source.with_layout(source.layout_1d()));
            let a = alpha.to_f64();
            return crate::cuda::index_ops::index_add_(self, &dl, d, &idx, &src, a);
        }
        let src = source.to_dtype(self.dtype());
        with_dtype!(self.dtype(), T, {
            let vals = src.to_vec::<T>()?;
            let a: T = alpha.to_elem();
            let unit = alpha.to_f64() == 1.0;
            // SAFETY: `vals` is an owned copy.
            let dst = unsafe { self.storage_slice_mut::<T>()? };
            if unit {
                kern::scatter(dst, &plan, &vals, |x: T, v: T| x.add(v));
            } else {
                kern::scatter(dst, &plan, &vals, |x: T, v: T| x.add(v.mul(a)));
            }
        });
        Ok(())
    }

    /// In place: `self.select(dim, index[i]) = source.select(dim, i)`.
    pub(crate) fn index_copy_raw_(&self, dim: i64, index: &Tensor, source: &Tensor) -> Result<()> {
        if source.dtype() != self.dtype() {
            return Err(Error::Runtime(format!(
                "index_copy_(): self and source expected to have the same dtype, but got (self) {} and (source) {}",
                self.dtype().torch_name(),
                source.dtype().torch_name()
            )));
        }
        let plan = self.index_write_plan(dim, index, source, "index_copy_")?;
        if let Some(device) = super::host_fallback::cuda_device(&[self, index, source]) {
            super::host_fallback::check_devices("index_copy_", device, &[self, index, source])?;
            let offsets = plan_offsets(&plan);
            return crate::cuda::index_ops::scatter_offsets(self, offsets, source, false);
        }
        with_dtype!(self.dtype(), T, {
            let vals = source.to_vec::<T>()?;
            // SAFETY: `vals` is an owned copy.
            let dst = unsafe { self.storage_slice_mut::<T>()? };
            kern::scatter(dst, &plan, &vals, |_, v: T| v);
        });
        Ok(())
    }

    /// In place: `self.select(dim, i) = value` for every `i` in `index` (negatives wrap).
    pub(crate) fn index_fill_raw_(&self, dim: i64, index: &Tensor, value: Scalar) -> Result<()> {
        let d = normalize_dim(dim, self.ndim())?;
        let vals = Self::dim_index(index, "index_fill_")?;
        let l = self.layout_1d();
        let size = l.shape[d];
        let pos = positions(&vals, size, true, |v| {
            Error::Index(format!(
                "index {v} is out of bounds for dimension {d} with size {size}"
            ))
        })?;
        let mut maps = vec![DimMap::Id; l.ndim()];
        maps[d] = DimMap::Map(pos);
        let plan = Plan::from_maps(&l, &maps).0;
        if let Some(device) = super::host_fallback::cuda_device(&[self, index]) {
            super::host_fallback::check_devices("index_fill_", device, &[self, index])?;
            let offsets = plan_offsets(&plan);
            let vals = Tensor::scalar(value, self.dtype()).broadcast_to(&[offsets.len()])?;
            return crate::cuda::index_ops::scatter_offsets(self, offsets, &vals, false);
        }
        with_dtype!(self.dtype(), T, {
            let v: T = value.to_elem();
            // SAFETY: only constant values are written.
            let dst = unsafe { self.storage_slice_mut::<T>()? };
            kern::fill(dst, &plan, v);
        });
        Ok(())
    }

    // ------------------------------------------------------------------ gather / scatter

    /// Checks of gather/scatter: same ndim, index no larger than `other` apart from `dim`.
    /// Returns (dim, self layout seen as >= 1-d, index shape seen as >= 1-d).
    fn gather_checks(&self, dim: i64, index: &Tensor, op: &str) -> Result<(usize, Layout, Dims)> {
        let d = normalize_dim(dim, self.ndim())?;
        let l = self.layout_1d();
        let ishape: Dims = if index.ndim() == 0 {
            smallvec::smallvec![1]
        } else {
            index.shape().into()
        };
        if ishape.len() != l.ndim() && index.numel() > 0 {
            return Err(Error::Runtime(format!(
                "Index tensor must have the same number of dimensions as input tensor ({op})"
            )));
        }
        if index.numel() > 0 {
            for k in 0..l.ndim() {
                if k != d && ishape[k] > l.shape[k] {
                    return Err(Error::Runtime(format!(
                        "Size does not match at dimension {k} expected index {:?} to be no larger than self {:?} apart from dimension {d}",
                        index.shape(),
                        self.shape()
                    )));
                }
            }
        }
        Ok((d, l, ishape))
    }

    /// Offsets into `l` of the elements addressed by `(index values, dim)`, in index order.
    fn dim_offsets(l: &Layout, d: usize, ishape: &[usize], vals: &[i64]) -> Result<Vec<usize>> {
        let size = l.shape[d];
        // gather/scatter report bad indices as RuntimeError (PyTorch's TORCH_CHECK).
        let pos = positions(vals, size, false, |v| {
            Error::Runtime(oob(v, d, size).to_string())
        })?;
        let mut base_l = l.clone();
        base_l.shape = ishape.into();
        base_l.strides[d] = 0;
        let base = strided::offsets(&base_l);
        let st = l.strides[d];
        Ok(base.iter().zip(pos).map(|(&b, p)| b + p * st).collect())
    }

    /// `out[i][j][k] = self[index[i][j][k]][j][k]` (for dim 0), out shaped like `index`.
    pub(crate) fn gather_raw(&self, dim: i64, index: &Tensor) -> Result<Tensor> {
        let vals = index_values(index, "gather")?;
        let (d, l, ishape) = self.gather_checks(dim, index, "gather")?;
        if index.numel() == 0 {
            return Tensor::full_on(
                self.device(),
                index.shape(),
                crate::Scalar::Int(0),
                self.dtype(),
            );
        }
        let size = l.shape[d];
        check_bounds(&vals, size, false, |v| {
            Error::Runtime(oob(v, d, size).to_string())
        })?;
        if self.device().is_cuda() {
            let idx = index.reshape_contiguous(&ishape);
            let r = crate::cuda::ops::gather(&self.with_layout(l), d, &idx)?;
            return Ok(r.reshape_contiguous(index.shape()));
        }
        let mut base = l.clone();
        base.shape = ishape;
        base.strides[d] = 0;
        let st = l.strides[d];
        Ok(with_dtype!(self.dtype(), T, {
            let s = self.storage_slice::<T>()?;
            Tensor::from_vec_unchecked(kern::gather_along(s, &base, &vals, st), index.shape())
        }))
    }

    /// Plan and values (in index order) of a scatter of `src` into `self`.
    fn scatter_parts(
        &self,
        dim: i64,
        index: &Tensor,
        src: &Tensor,
        op: &str,
    ) -> Result<(Plan, Tensor)> {
        let vals = index_values(index, op)?;
        let (d, l, ishape) = self.gather_checks(dim, index, op)?;
        if index.numel() == 0 {
            return Ok((
                Plan {
                    outer: vec![],
                    inner: Inner::Range { start: 0, len: 1 },
                },
                Tensor::zeros(&[0], self.dtype()),
            ));
        }
        let sl = src.layout_1d();
        if sl.ndim() != ishape.len() || (0..sl.ndim()).any(|k| ishape[k] > sl.shape[k]) {
            return Err(Error::Runtime(format!(
                "Expected index {:?} to be no larger than src {:?} in any dimension ({op})",
                index.shape(),
                src.shape()
            )));
        }
        let offs = Self::dim_offsets(&l, d, &ishape, &vals)?;
        let mut src_l = sl;
        src_l.shape = ishape.clone();
        let src_vals = src.with_layout(src_l).to_dtype(self.dtype()).contiguous();
        Ok((
            Plan {
                outer: offs,
                inner: Inner::Range { start: 0, len: 1 },
            },
            src_vals,
        ))
    }

    /// `scatter_`/`scatter_add_` of a CUDA tensor: the CPU's checks (indices validated on the
    /// host), then one kernel launch over the index.
    fn scatter_cuda(
        &self,
        dim: i64,
        index: &Tensor,
        src: &Tensor,
        op: &str,
        add: bool,
    ) -> Result<()> {
        let vals = index_values(index, op)?;
        let (d, l, ishape) = self.gather_checks(dim, index, op)?;
        if index.numel() == 0 {
            return Ok(());
        }
        let sl = src.layout_1d();
        if sl.ndim() != ishape.len() || (0..sl.ndim()).any(|k| ishape[k] > sl.shape[k]) {
            return Err(Error::Runtime(format!(
                "Expected index {:?} to be no larger than src {:?} in any dimension ({op})",
                index.shape(),
                src.shape()
            )));
        }
        let size = l.shape[d];
        check_bounds(&vals, size, false, |v| {
            Error::Runtime(oob(v, d, size).to_string())
        })?;
        let idx = index.reshape_contiguous(&ishape);
        let mut src_l = sl;
        src_l.shape = ishape;
        let src_v = src.with_layout(src_l);
        crate::cuda::index_ops::scatter_(self, &l, d, &idx, &src_v, add)
    }

    /// In place: `self[index[i][j]][j] = src[i][j]` (for dim 0).
    pub(crate) fn scatter_raw_(
        &self,
        dim: i64,
        index: &Tensor,
        src: &TensorOrScalar,
    ) -> Result<()> {
        let src_t = match src {
            TensorOrScalar::Tensor(t) => {
                if t.dtype() != self.dtype() {
                    return Err(Error::Runtime(format!(
                        "scatter(): Expected self.dtype to be equal to src.dtype (got {} and {})",
                        self.dtype(),
                        t.dtype()
                    )));
                }
                t.clone()
            }
            TensorOrScalar::Scalar(s) => {
                s.check_fits(self.dtype())?;
                Tensor::scalar(*s, self.dtype()).broadcast_to(index.shape())?
            }
        };
        if self.device().is_cuda() {
            return self.scatter_cuda(dim, index, &src_t, "scatter", false);
        }
        let (plan, vals) = self.scatter_parts(dim, index, &src_t, "scatter")?;
        with_dtype!(self.dtype(), T, {
            let v = vals.to_vec::<T>()?;
            // SAFETY: `v` is an owned copy.
            let dst = unsafe { self.storage_slice_mut::<T>()? };
            kern::scatter(dst, &plan, &v, |_, x: T| x);
        });
        Ok(())
    }

    /// In place: `self[index[i][j]][j] += src[i][j]` (for dim 0).
    pub(crate) fn scatter_add_raw_(&self, dim: i64, index: &Tensor, src: &Tensor) -> Result<()> {
        if src.dtype() != self.dtype() {
            return Err(Error::Runtime(format!(
                "scatter_add(): Expected self.dtype to be equal to src.dtype (got {} and {})",
                self.dtype(),
                src.dtype()
            )));
        }
        if self.device().is_cuda() {
            return self.scatter_cuda(dim, index, src, "scatter_add", true);
        }
        let (plan, vals) = self.scatter_parts(dim, index, src, "scatter_add")?;
        with_dtype!(self.dtype(), T, {
            let v = vals.to_vec::<T>()?;
            // SAFETY: `v` is an owned copy.
            let dst = unsafe { self.storage_slice_mut::<T>()? };
            kern::scatter(dst, &plan, &v, |a: T, x: T| a.add(x));
        });
        Ok(())
    }

    /// `scatter_reduce` with `reduce` in sum/prod/mean/amax/amin (a new tensor).
    pub(crate) fn scatter_reduce_raw(
        &self,
        dim: i64,
        index: &Tensor,
        src: &Tensor,
        reduce: &str,
        include_self: bool,
    ) -> Result<Tensor> {
        let r = match reduce {
            "sum" => R::Sum,
            "prod" => R::Prod,
            "mean" => R::Mean,
            "amax" => R::Max,
            "amin" => R::Min,
            _ => {
                return Err(Error::Runtime(format!(
                    "reduce argument must be either sum, prod, mean, amax or amin, got {reduce}"
                )))
            }
        };
        if src.dtype() != self.dtype() {
            return Err(Error::Runtime(format!(
                "scatter_reduce(): Expected self.dtype to be equal to src.dtype (got {} and {})",
                self.dtype(),
                src.dtype()
            )));
        }
        if let Some(device) = super::host_fallback::cuda_device(&[self, index, src]) {
            super::host_fallback::check_devices("scatter_reduce", device, &[self, index, src])?;
            if self.dtype() != DType::Bool {
                return self.scatter_reduce_cuda(dim, index, src, r, include_self);
            }
        }
        cuda_via_host!("scatter_reduce", [self, index, src], |x, i, s| x
            .scatter_reduce_raw(dim, &i, &s, reduce, include_self));
        // Work on a contiguous copy, so storage offsets are element positions.
        let out = self.clone_data();
        let (plan, vals) = out.scatter_parts(dim, index, src, "scatter_reduce")?;
        let n = out.numel().max(1);
        with_dtype!(self.dtype(), T, {
            let v = vals.to_vec::<T>()?;
            // SAFETY: `out` is a fresh tensor owned here; `v` is an owned copy.
            let dst = unsafe { out.storage_slice_mut::<T>()? };
            let mut count = vec![0u32; n];
            for (&o, &x) in plan.outer.iter().zip(&v) {
                let first = count[o] == 0 && !include_self;
                count[o] += 1;
                dst[o] = if first { x } else { r.combine(dst[o], x) };
            }
            if r == R::Mean {
                for (o, &c) in count.iter().enumerate() {
                    if c == 0 {
                        continue;
                    }
                    let c = c as i64 + i64::from(include_self);
                    let cur = dst[o];
                    dst[o] = if T::IS_FLOAT {
                        T::from_f64(cur.to_f64() / c as f64)
                    } else {
                        T::from_i64(cur.to_i64().div_euclid(c))
                    };
                }
            }
        });
        Ok(out)
    }

    /// `scatter_reduce_raw` of a CUDA tensor (numeric dtypes): the CPU's plan of destination
    /// offsets, then atomic kernels. Without `include_self` the written positions start from
    /// the reduction's identity; mean divides by the per-position count afterwards.
    fn scatter_reduce_cuda(
        &self,
        dim: i64,
        index: &Tensor,
        src: &Tensor,
        r: R,
        include_self: bool,
    ) -> Result<Tensor> {
        use crate::cuda::index_ops::{combine_offsets, scatter_offsets};
        let dt = self.dtype();
        let out = self.clone_data();
        let (plan, vals) = out.scatter_parts(dim, index, src, "scatter_reduce")?;
        let offsets = plan.outer;
        let k = offsets.len();
        if k == 0 {
            return Ok(out);
        }
        let constant = |v: Scalar| Tensor::scalar(v, dt).broadcast_to(&[k]);
        if !include_self {
            let identity = match (r, dt.is_floating_point()) {
                (R::Sum | R::Mean, _) => Scalar::Int(0),
                (R::Prod, _) => Scalar::Int(1),
                (R::Max, true) => Scalar::Float(f64::NEG_INFINITY),
                (R::Min, true) => Scalar::Float(f64::INFINITY),
                (R::Max, false) => Scalar::Int(int_limits(dt).0),
                (R::Min, false) => Scalar::Int(int_limits(dt).1),
            };
            scatter_offsets(&out, offsets.clone(), &constant(identity)?, false)?;
        }
        match r {
            R::Sum => scatter_offsets(&out, offsets, &vals, true)?,
            R::Prod => combine_offsets(&out, offsets, &vals, "prod")?,
            R::Max => combine_offsets(&out, offsets, &vals, "amax")?,
            R::Min => combine_offsets(&out, offsets, &vals, "amin")?,
            R::Mean => {
                scatter_offsets(&out, offsets.clone(), &vals, true)?;
                // Elements per position (self counts once with include_self); positions that
                // received nothing divide by 1.
                let count = Tensor::full_on(
                    out.device(),
                    out.shape(),
                    Scalar::Int(include_self as i64),
                    DType::I64,
                )?;
                let ones = Tensor::scalar(Scalar::Int(1), DType::I64).broadcast_to(&[k])?;
                scatter_offsets(&count, offsets, &ones, true)?;
                let count = count.binary_scalar(Scalar::Int(1), super::BinaryOp::Maximum, false)?;
                return if dt.is_floating_point() {
                    out.binary(&count.to_dtype(dt), super::BinaryOp::Div)
                } else {
                    Ok(out
                        .to_dtype(DType::I64)
                        .binary(&count, super::BinaryOp::FloorDiv)?
                        .to_dtype(dt))
                };
            }
        }
        Ok(out)
    }

    // ------------------------------------------------------------------ where / take / put

    /// `where(cond, x, y)`: elements of `x` where `cond`, else of `y` (broadcast, promoted).
    pub(crate) fn where_raw(
        cond: &Tensor,
        x: &TensorOrScalar,
        y: &TensorOrScalar,
    ) -> Result<Tensor> {
        if cond.dtype() != DType::Bool {
            return Err(Error::Runtime(format!(
                "where expected condition to be a boolean tensor, but got a tensor with dtype {}",
                cond.dtype().torch_name()
            )));
        }
        let dtype = y.add_to(x.add_to(ResultType::new())).finish();
        // PyTorch converts a scalar operand to the result dtype as it fills a one-element
        // CPU tensor: an integer dtype (or float32) that cannot hold it is an error.
        for v in [x, y] {
            if let TensorOrScalar::Scalar(s) = v {
                s.check_fill(dtype, 1, true)?;
            }
        }
        let xt = x.to_tensor(dtype);
        let yt = y.to_tensor(dtype);
        // the result laid out like the inputs, as PyTorch's
        super::elementwise::in_inputs_layout("where", &[cond, &xt, &yt], |v| {
            Self::where_row_major(v[0], v[1], v[2], dtype)
        })
    }

    fn where_row_major(cond: &Tensor, xt: &Tensor, yt: &Tensor, dtype: DType) -> Result<Tensor> {
        let shape = broadcast_shapes("where", cond.shape(), xt.shape())?;
        let shape = broadcast_shapes("where", &shape, yt.shape())?;
        if cond.device().is_cuda() || xt.device().is_cuda() || yt.device().is_cuda() {
            return crate::cuda::ops::where_(cond, xt, yt, &shape);
        }
        let lc = cond.layout().broadcast_to("where", &shape)?;
        let lx = xt.layout().broadcast_to("where", &shape)?;
        let ly = yt.layout().broadcast_to("where", &shape)?;
        let c = cond.storage_slice::<bool>()?;
        Ok(with_dtype!(dtype, T, {
            let xs = xt.storage_slice::<T>()?;
            let ys = yt.storage_slice::<T>()?;
            let out = kern::map3(
                (c, &lc),
                (xs, &lx),
                (ys, &ly),
                |c, a: T, b: T| {
                    if c {
                        a
                    } else {
                        b
                    }
                },
            );
            Tensor::from_vec_unchecked(out, &shape)
        }))
    }

    /// Elements at flat (row-major) positions `index` (negatives wrap); shaped like `index`.
    pub(crate) fn take_raw(&self, index: &Tensor) -> Result<Tensor> {
        let vals = index_values(index, "take")?;
        let n = self.numel();
        let pos = positions(&vals, n, true, |v| {
            Error::Index(format!(
                "out of range: tried to access index {v} on a tensor of {n} elements."
            ))
        })?;
        if let Some(device) = super::host_fallback::cuda_device(&[self, index]) {
            // The positions were checked on the host (as PyTorch checks them, with a sync);
            // the gather itself is index_select on the flattened tensor.
            super::host_fallback::check_devices("take", device, &[self, index])?;
            let pos: Vec<i64> = pos.iter().map(|&p| p as i64).collect();
            let pos = Tensor::from_vec_unchecked(pos, &[vals.len()]).to_device(device)?;
            return self
                .reshape(&[-1])?
                .index_select_raw(0, &pos)?
                .reshape(&index.shape().iter().map(|&d| d as i64).collect::<Vec<_>>());
        }
        let l = self.layout().clone();
        let plan = Plan {
            outer: kern::offsets_of_positions(&l, &pos),
            inner: Inner::Range { start: 0, len: 1 },
        };
        Ok(with_dtype!(self.dtype(), T, {
            let s = self.storage_slice::<T>()?;
            Tensor::from_vec_unchecked(kern::gather(s, &plan), index.shape())
        }))
    }

    /// `take_along_dim`: gather along `dim` after broadcasting the other dims; with no dim,
    /// along the flattened tensor.
    pub fn take_along_dim(&self, indices: &Tensor, dim: Option<i64>) -> Result<Tensor> {
        match dim {
            None => self.reshape(&[-1])?.gather(0, &indices.reshape(&[-1])?),
            Some(dim) => {
                if self.ndim() != indices.ndim() {
                    return Err(Error::Runtime(format!(
                        "torch.take_along_dim(): input and indices should have the same number of dimensions, but got {} dimensions for input, and {} dimensions for indices",
                        self.ndim(),
                        indices.ndim()
                    )));
                }
                if indices.dtype().category() != Category::Int {
                    return Err(Error::Runtime(format!(
                        "torch.take_along_dim(): dtype of indices should be Long but got {}",
                        indices.dtype().torch_name()
                    )));
                }
                let d = normalize_dim(dim, self.ndim())?;
                if self.ndim() == 0 {
                    return self.gather(0, indices);
                }
                let mut s1: Dims = self.shape().into();
                let mut s2: Dims = indices.shape().into();
                s1[d] = 1;
                s2[d] = 1;
                let b = broadcast_shapes("take_along_dim", &s1, &s2)?;
                let mut se = b.clone();
                se[d] = self.shape()[d];
                let mut ie = b;
                ie[d] = indices.shape()[d];
                self.broadcast_to(&se)?
                    .gather(d as i64, &indices.broadcast_to(&ie)?)
            }
        }
    }

    /// In place: `self.flatten()[index[i]] = source[i]` (or `+=` with `accumulate`).
    pub(crate) fn put_raw_(&self, index: &Tensor, source: &Tensor, accumulate: bool) -> Result<()> {
        if source.dtype() != self.dtype() {
            return Err(Error::Runtime(format!(
                "put_(): self and source expected to have the same dtype, but got self.dtype = {} and source.dtype = {}",
                self.dtype().torch_name(),
                source.dtype().torch_name()
            )));
        }
        if index.numel() != source.numel() {
            return Err(Error::Runtime(format!(
                "put_(): Expected source and index to have the same number of elements, but got source.numel() = {}, index.numel() = {}",
                source.numel(),
                index.numel()
            )));
        }
        let vals = index_values(index, "put_")?;
        let n = self.numel();
        let pos = positions(&vals, n, true, |v| {
            Error::Index(format!(
                "out of range: tried to access index {v} on a tensor of {n} elements."
            ))
        })?;
        let l = self.layout().clone();
        if let Some(device) = super::host_fallback::cuda_device(&[self, index, source]) {
            super::host_fallback::check_devices("put_", device, &[self, index, source])?;
            let offsets = kern::offsets_of_positions(&l, &pos);
            let vals = source.reshape(&[-1])?;
            return crate::cuda::index_ops::scatter_offsets(self, offsets, &vals, accumulate);
        }
        let plan = Plan {
            outer: kern::offsets_of_positions(&l, &pos),
            inner: Inner::Range { start: 0, len: 1 },
        };
        with_dtype!(self.dtype(), T, {
            let v = source.to_vec::<T>()?;
            // SAFETY: `v` is an owned copy.
            let dst = unsafe { self.storage_slice_mut::<T>()? };
            if accumulate {
                kern::scatter(dst, &plan, &v, |a: T, x: T| a.add(x));
            } else {
                kern::scatter(dst, &plan, &v, |_, x: T| x);
            }
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: Vec<i64>, shape: &[usize]) -> Tensor {
        Tensor::from_vec(v, shape).unwrap()
    }

    #[test]
    fn basic_and_advanced() {
        let x = t((0..12).collect(), &[3, 4]);
        let r = x
            .index(&[TensorIndex::Int(1), TensorIndex::full()])
            .unwrap();
        assert!(r.shares_storage(&x));
        assert_eq!(r.to_vec::<i64>().unwrap(), vec![4, 5, 6, 7]);
        let i = t(vec![2, 0], &[2]);
        let r = x
            .index(&[TensorIndex::full(), TensorIndex::Tensor(i.clone())])
            .unwrap();
        assert_eq!(r.shape(), &[3, 2]);
        assert_eq!(r.to_vec::<i64>().unwrap(), vec![2, 0, 6, 4, 10, 8]);
        let err = x.index(&[TensorIndex::Int(5)]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "index 5 is out of bounds for dimension 0 with size 3"
        );
        x.index_put_(
            &[TensorIndex::Tensor(i)],
            &Tensor::scalar(Scalar::Int(-1), DType::I64),
            false,
        )
        .unwrap();
        assert_eq!(x.to_vec::<i64>().unwrap()[..4], [-1, -1, -1, -1]);
    }

    #[test]
    fn where_and_nonzero() {
        let c = Tensor::from_vec(vec![true, false, true], &[3]).unwrap();
        let r = Tensor::where_cond(
            &c,
            &TensorOrScalar::Scalar(Scalar::Float(1.5)),
            &TensorOrScalar::Tensor(t(vec![7, 8, 9], &[3])),
        )
        .unwrap();
        assert_eq!(r.dtype(), DType::F32);
        assert_eq!(r.to_vec::<f32>().unwrap(), vec![1.5, 8.0, 1.5]);
        let nz = c.nonzero().unwrap();
        assert_eq!(nz.shape(), &[2, 1]);
        assert_eq!(nz.to_vec::<i64>().unwrap(), vec![0, 2]);
    }
}
