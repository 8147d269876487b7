//! Joining and rearranging: `cat`, `stack` (+ h/v/d/column variants), `flip`, `roll`,
//! `repeat`, `repeat_interleave`, `tile`, `meshgrid`, `tril`/`triu`, `diag`, `diag_embed`.

use super::Tensor;
use crate::cpu::gather::{self as kern, DimMap, Plan};
use crate::cpu::strided::PAR_THRESHOLD;
use crate::dtype::Category;
use crate::layout::{normalize_dim, Dims, Layout};
use crate::{promote_types, with_dtype, DType, Error, Result};
use rayon::prelude::*;

/// `cat`: join along an existing dim, promoting dtypes; 1-d empty tensors are skipped.
pub fn cat(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    let out = crate::no_grad(|| cat_raw(tensors, dim))?;
    let refs: Vec<&Tensor> = tensors.iter().collect();
    if !(crate::autograd::needs_grad(&refs) && out.dtype().is_floating_point()) {
        return Ok(out);
    }
    // Where each input landed along the cat dim (None: skipped 1-d empty input).
    let mut pieces: Vec<Option<(i64, i64)>> = Vec::with_capacity(tensors.len());
    let mut start = 0i64;
    let d = normalize_dim(dim, out.ndim()).unwrap_or(0) as i64;
    for t in tensors {
        if t.ndim() == 1 && t.numel() == 0 {
            pieces.push(None);
            continue;
        }
        let len = t.shape()[d as usize] as i64;
        pieces.push(Some((start, len)));
        start += len;
    }
    let meta: Vec<(bool, DType)> = tensors
        .iter()
        .map(|t| {
            (
                t.requires_grad() && t.dtype().is_floating_point(),
                t.dtype(),
            )
        })
        .collect();
    crate::autograd::record_saving(
        "CatBackward0",
        &refs,
        &[&out],
        crate::autograd::Saves::NoTensors,
        Box::new(move |grads| {
            let Some(g) = &grads[0] else {
                return Ok(vec![None; meta.len()]);
            };
            pieces
                .iter()
                .zip(&meta)
                .map(|(p, &(need, dt))| {
                    if !need {
                        return Ok(None);
                    }
                    let r = match p {
                        Some((s, l)) => g.narrow(d, *s, *l)?,
                        None => {
                            Tensor::full_on(g.device(), &[0], crate::Scalar::Int(0), g.dtype())?
                        }
                    };
                    Ok(Some(if r.dtype() != dt { r.cast(dt)? } else { r }))
                })
                .collect()
        }),
    );
    Ok(out)
}

fn cat_raw(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    if tensors.is_empty() {
        // PyTorch raises ValueError here.
        return Err(Error::Value(
            "torch.cat(): expected a non-empty list of Tensors".into(),
        ));
    }
    let dtype = tensors
        .iter()
        .map(|t| t.dtype())
        .reduce(promote_types)
        .unwrap_or(DType::F32);
    for (i, t) in tensors.iter().enumerate() {
        if t.ndim() == 0 {
            return Err(Error::Runtime(format!(
                "zero-dimensional tensor (at position {i}) cannot be concatenated"
            )));
        }
    }
    let skip = |t: &Tensor| t.ndim() == 1 && t.numel() == 0;
    let parts: Vec<(usize, &Tensor)> = tensors
        .iter()
        .enumerate()
        .filter(|(_, t)| !skip(t))
        .collect();
    let Some(&(_, first)) = parts.first() else {
        let device = tensors.first().map_or(crate::Device::Cpu, |t| t.device());
        return Tensor::full_on(device, &[0], crate::Scalar::Int(0), dtype);
    };
    let nd = first.ndim();
    let d = normalize_dim(dim, nd)?;
    let mut shape: Dims = first.shape().into();
    shape[d] = 0;
    for &(i, t) in &parts {
        if t.ndim() != nd {
            return Err(Error::Runtime(format!(
                "Tensors must have same number of dimensions: got {nd} and {}",
                t.ndim()
            )));
        }
        for k in 0..nd {
            if k != d && t.shape()[k] != first.shape()[k] {
                return Err(Error::Runtime(format!(
                    "Sizes of tensors must match except in dimension {d}. Expected size {} but got size {} for tensor number {i} in the list.",
                    first.shape()[k],
                    t.shape()[k]
                )));
            }
        }
        shape[d] += t.shape()[d];
    }
    let outer: usize = shape[..d].iter().product();
    let inner: usize = shape[d + 1..].iter().product();
    let row = shape[d] * inner;
    let srcs: Vec<Tensor> = parts
        .iter()
        .map(|(_, t)| t.to_dtype(dtype).contiguous())
        .collect();
    if srcs.iter().any(|t| t.device().is_cuda()) {
        return crate::cuda::ops::cat(&srcs, d, &shape);
    }
    let widths: Vec<usize> = srcs.iter().map(|t| t.shape()[d] * inner).collect();
    let numel = outer * row;
    Ok(with_dtype!(dtype, T, {
        let slices: Vec<&[T]> = srcs
            .iter()
            .map(|t| {
                if t.numel() == 0 {
                    // An empty view may carry an offset past its (empty) storage.
                    return Ok(&[][..]);
                }
                let s = t.storage_slice::<T>()?;
                Ok(&s[t.storage_offset()..t.storage_offset() + t.numel()])
            })
            .collect::<Result<_>>()?;
        // Every element is copied in below.
        let mut out = crate::cpu::alloc::output_vec_for_overwrite::<T>(numel);
        if numel > 0 {
            let fill_row = |r: usize, o: &mut [T]| {
                let mut w = 0;
                for (s, &wd) in slices.iter().zip(&widths) {
                    o[w..w + wd].copy_from_slice(&s[r * wd..(r + 1) * wd]);
                    w += wd;
                }
            };
            if outer == 1 {
                // One row: copy each input into its own disjoint piece in parallel.
                let mut pieces: Vec<&mut [T]> = Vec::with_capacity(slices.len());
                let mut rest: &mut [T] = &mut out;
                for &wd in &widths {
                    let (a, b) = rest.split_at_mut(wd);
                    pieces.push(a);
                    rest = b;
                }
                if numel >= PAR_THRESHOLD {
                    pieces
                        .into_par_iter()
                        .zip(slices.par_iter())
                        .for_each(|(o, s)| o.copy_from_slice(s));
                } else {
                    for (o, s) in pieces.into_iter().zip(&slices) {
                        o.copy_from_slice(s);
                    }
                }
            } else if numel >= PAR_THRESHOLD {
                out.par_chunks_mut(row)
                    .enumerate()
                    .with_min_len((PAR_THRESHOLD / 4 / row).max(1))
                    .for_each(|(r, o)| fill_row(r, o));
            } else {
                for (r, o) in out.chunks_mut(row).enumerate() {
                    fill_row(r, o);
                }
            }
        }
        Tensor::from_vec_unchecked(out, &shape)
    }))
}

/// `stack`: join along a new dim; all tensors must have the same shape.
pub fn stack(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    let Some(first) = tensors.first() else {
        return Err(Error::Runtime(
            "stack expects a non-empty TensorList".into(),
        ));
    };
    for (i, t) in tensors.iter().enumerate() {
        if t.shape() != first.shape() {
            return Err(Error::Runtime(format!(
                "stack expects each tensor to be equal size, but got {:?} at entry 0 and {:?} at entry {i}",
                first.shape(),
                t.shape()
            )));
        }
    }
    let d = normalize_dim(dim, first.ndim() + 1)? as i64;
    let parts: Vec<Tensor> = tensors
        .iter()
        .map(|t| t.unsqueeze(d))
        .collect::<Result<_>>()?;
    cat(&parts, d)
}

fn atleast(t: &Tensor, n: usize) -> Result<Tensor> {
    Ok(match (n, t.ndim()) {
        (_, k) if k >= n => t.clone(),
        (1, 0) => t.reshape(&[1])?,
        (2, 0) => t.reshape(&[1, 1])?,
        (2, 1) => t.unsqueeze(0)?,
        (3, 0) => t.reshape(&[1, 1, 1])?,
        (3, 1) => t.unsqueeze(0)?.unsqueeze(2)?,
        (3, 2) => t.unsqueeze(2)?,
        _ => t.clone(),
    })
}

impl Tensor {
    pub fn atleast_1d(&self) -> Result<Tensor> {
        atleast(self, 1)
    }
    pub fn atleast_2d(&self) -> Result<Tensor> {
        atleast(self, 2)
    }
    pub fn atleast_3d(&self) -> Result<Tensor> {
        atleast(self, 3)
    }
}

fn map_all(ts: &[Tensor], f: impl Fn(&Tensor) -> Result<Tensor>) -> Result<Vec<Tensor>> {
    ts.iter().map(f).collect()
}

/// `hstack`: along dim 1 (dim 0 for 1-d inputs).
pub fn hstack(tensors: &[Tensor]) -> Result<Tensor> {
    let ts = map_all(tensors, |t| t.atleast_1d())?;
    let dim = if ts.first().map(|t| t.ndim() == 1).unwrap_or(true) {
        0
    } else {
        1
    };
    cat(&ts, dim)
}

/// `vstack`: along dim 0 of the inputs seen as at least 2-d.
pub fn vstack(tensors: &[Tensor]) -> Result<Tensor> {
    cat(&map_all(tensors, |t| t.atleast_2d())?, 0)
}

/// `dstack`: along dim 2 of the inputs seen as at least 3-d.
pub fn dstack(tensors: &[Tensor]) -> Result<Tensor> {
    cat(&map_all(tensors, |t| t.atleast_3d())?, 2)
}

/// `column_stack`: 0-d/1-d inputs become columns, then join along dim 1.
pub fn column_stack(tensors: &[Tensor]) -> Result<Tensor> {
    let ts = map_all(tensors, |t| {
        if t.ndim() <= 1 {
            t.reshape(&[t.numel() as i64, 1])
        } else {
            Ok(t.clone())
        }
    })?;
    cat(&ts, 1)
}

/// `meshgrid(..., indexing)`: expanded views, `'ij'` (matrix) or `'xy'` (Cartesian).
pub fn meshgrid(tensors: &[Tensor], indexing: &str) -> Result<Vec<Tensor>> {
    let xy = match indexing {
        "ij" => false,
        "xy" => true,
        _ => {
            return Err(Error::Runtime(format!(
                "torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}"
            )))
        }
    };
    if tensors.is_empty() {
        return Err(Error::Runtime(
            "torch.meshgrid: Expected at least one tensor".into(),
        ));
    }
    for t in tensors {
        if t.ndim() > 1 {
            return Err(Error::Runtime(format!(
                "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {}D",
                t.ndim()
            )));
        }
        if t.dtype() != tensors[0].dtype() {
            return Err(Error::Runtime(
                "torch.meshgrid: Expected all tensors in the tensor list to have the same dtype"
                    .into(),
            ));
        }
    }
    let n = tensors.len();
    let pos = |i: usize| -> usize {
        if xy && n >= 2 && i < 2 {
            1 - i
        } else {
            i
        }
    };
    let mut shape: Dims = smallvec::smallvec![0; n];
    for (i, t) in tensors.iter().enumerate() {
        shape[pos(i)] = t.numel();
    }
    let full: Vec<i64> = shape.iter().map(|&s| s as i64).collect();
    tensors
        .iter()
        .enumerate()
        .map(|(i, t)| {
            // A reshape to size 1 everywhere but its own dim, then an expand: both views,
            // both recorded for autograd.
            let mut one = vec![1i64; n];
            one[pos(i)] = t.numel() as i64;
            t.reshape(&one)?.expand(&full)
        })
        .collect()
}

/// `repeat_interleave(repeats)` with only a tensor: each index `i` repeated `repeats[i]` times.
pub fn repeat_interleave_indices(repeats: &Tensor) -> Result<Tensor> {
    let r = repeat_counts(repeats, None)?;
    let mut out = Vec::with_capacity(r.iter().sum());
    for (i, &k) in r.iter().enumerate() {
        out.extend(std::iter::repeat_n(i as i64, k));
    }
    let n = out.len();
    Tensor::from_vec_unchecked(out, &[n]).to_device(repeats.device())
}

/// Validated repeat counts (1-d integer tensor, non-negative; length `n` if given).
fn repeat_counts(repeats: &Tensor, n: Option<usize>) -> Result<Vec<usize>> {
    if repeats.dtype().category() != Category::Int {
        return Err(Error::Runtime(format!(
            "repeat_interleave: repeats has to be Long or Int tensor, got {}",
            repeats.dtype().torch_name()
        )));
    }
    if repeats.ndim() > 1 {
        return Err(Error::Runtime(
            "repeat_interleave: repeats must be 0-dim or 1-dim tensor".into(),
        ));
    }
    let v = repeats.to_dtype(DType::I64).to_vec::<i64>()?;
    if v.iter().any(|&x| x < 0) {
        return Err(Error::Runtime(
            "repeat_interleave: repeats can not be negative".into(),
        ));
    }
    let v: Vec<usize> = match n {
        Some(n) if v.len() == 1 => vec![v[0] as usize; n],
        Some(n) if v.len() != n => {
            return Err(Error::Runtime(format!(
                "repeats must have the same size as input along dim, but got repeats.size(0) = {} and input.size(0) = {n}",
                v.len()
            )))
        }
        _ => v.into_iter().map(|x| x as usize).collect(),
    };
    Ok(v)
}

impl Tensor {
    /// Gather `self` through per-dim maps into a new tensor.
    pub(crate) fn gather_maps(&self, layout: &Layout, maps: &[DimMap]) -> Result<Tensor> {
        if self.device().is_cuda() {
            // One index_select per remapped dim (flip, roll, repeat, tile are a few dims).
            let mut t = self.with_layout(layout.clone());
            let mut selected = false;
            for (d, m) in maps.iter().enumerate() {
                if let DimMap::Map(pos) = m {
                    let idx: Vec<i64> = pos.iter().map(|&p| p as i64).collect();
                    let n = idx.len();
                    let idx = Tensor::from_vec_unchecked(idx, &[n]);
                    t = crate::cuda::ops::index_select(&t, d, &idx)?;
                    selected = true;
                }
            }
            return if selected {
                Ok(t)
            } else {
                crate::cuda::ops::clone(&t)
            };
        }
        let (plan, shape): (Plan, Dims) = Plan::from_maps(layout, maps);
        Ok(with_dtype!(self.dtype(), T, {
            let s = self.storage_slice::<T>()?;
            Tensor::from_vec_unchecked(kern::gather(s, &plan), &shape)
        }))
    }

    /// Reverse the order of elements along `dims`.
    pub(crate) fn flip_raw(&self, dims: &[i64]) -> Result<Tensor> {
        let flip = crate::layout::dim_list_mask(dims, self.ndim())?;
        let maps: Vec<DimMap> = flip
            .iter()
            .zip(self.shape())
            .map(|(&f, &size)| {
                if f {
                    DimMap::Map((0..size).rev().collect())
                } else {
                    DimMap::Id
                }
            })
            .collect();
        self.gather_maps(self.layout(), &maps)
    }

    /// Flip left-right (dim 1).
    pub fn fliplr(&self) -> Result<Tensor> {
        if self.ndim() < 2 {
            return Err(Error::Runtime("Input must be >= 2-d.".into()));
        }
        self.flip(&[1])
    }

    /// Flip up-down (dim 0).
    pub fn flipud(&self) -> Result<Tensor> {
        if self.ndim() < 1 {
            return Err(Error::Runtime("Input must be >= 1-d.".into()));
        }
        self.flip(&[0])
    }

    /// Rotate elements along `dims` by `shifts` (flattened when `dims` is empty).
    pub(crate) fn roll_raw(&self, shifts: &[i64], dims: &[i64]) -> Result<Tensor> {
        if dims.is_empty() {
            if shifts.len() != 1 {
                return Err(Error::Runtime(format!(
                    "shifts and dimensions must align. shifts: {}, dims:0",
                    shifts.len()
                )));
            }
            let flat = self.reshape(&[-1])?;
            let shape: Vec<i64> = self.shape().iter().map(|&s| s as i64).collect();
            return flat.roll_raw(shifts, &[0])?.view(&shape);
        }
        if shifts.len() != dims.len() {
            return Err(Error::Runtime(format!(
                "shifts and dimensions must align. shifts: {}, dims:{}",
                shifts.len(),
                dims.len()
            )));
        }
        let n = self.ndim();
        let mut total = vec![0i64; n.max(1)];
        for (&s, &d) in shifts.iter().zip(dims) {
            total[normalize_dim(d, n)?] += s;
        }
        if n == 0 {
            return Ok(self.clone_data());
        }
        let maps: Vec<DimMap> = (0..n)
            .map(|k| {
                let size = self.shape()[k] as i64;
                if total[k] == 0 || size == 0 {
                    DimMap::Id
                } else {
                    let s = total[k].rem_euclid(size);
                    DimMap::Map(
                        (0..size)
                            .map(|i| (i - s).rem_euclid(size) as usize)
                            .collect(),
                    )
                }
            })
            .collect();
        self.gather_maps(self.layout(), &maps)
    }

    /// `repeat(*sizes)`: tile the tensor `sizes[k]` times along each dim.
    pub(crate) fn repeat_raw(&self, sizes: &[i64]) -> Result<Tensor> {
        let n = self.ndim();
        if sizes.len() < n {
            return Err(Error::Runtime(
                "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor".into(),
            ));
        }
        if let Some(s) = sizes.iter().find(|&&s| s < 0) {
            return Err(Error::Runtime(format!(
                "Trying to create tensor with negative dimension {s}: {sizes:?}"
            )));
        }
        let extra = sizes.len() - n;
        let l = self.layout();
        let mut pl = Layout {
            shape: smallvec::smallvec![1; extra],
            strides: smallvec::smallvec![0; extra],
            offset: l.offset,
        };
        pl.shape.extend(l.shape.iter().copied());
        pl.strides.extend(l.strides.iter().copied());
        let maps: Vec<DimMap> = sizes
            .iter()
            .enumerate()
            .map(|(k, &r)| {
                let s = pl.shape[k];
                if r == 1 {
                    DimMap::Id
                } else {
                    DimMap::Map((0..s * r as usize).map(|i| i % s).collect())
                }
            })
            .collect();
        self.gather_maps(&pl, &maps)
    }

    /// `tile(dims)`: like `repeat`, with missing leading dims of `dims` taken as 1.
    pub fn tile(&self, dims: &[i64]) -> Result<Tensor> {
        let mut d = vec![1i64; self.ndim().saturating_sub(dims.len())];
        d.extend_from_slice(dims);
        self.repeat(&d)
    }

    /// Repeat each element `repeats` times along `dim` (flattened when `dim` is None).
    pub(crate) fn repeat_interleave_raw(
        &self,
        repeats: &Tensor,
        dim: Option<i64>,
    ) -> Result<Tensor> {
        let (src, d) = match dim {
            None => (self.reshape(&[-1])?, 0usize),
            Some(d) => {
                if self.ndim() == 0 {
                    (self.reshape(&[-1])?, normalize_dim(d, 0)?)
                } else {
                    (self.clone(), self.dim(d)?)
                }
            }
        };
        let size = src.shape()[d];
        let counts = repeat_counts(repeats, Some(size))?;
        let mut map = Vec::with_capacity(counts.iter().sum());
        for (i, &k) in counts.iter().enumerate() {
            map.extend(std::iter::repeat_n(i, k));
        }
        let mut maps = vec![DimMap::Id; src.ndim()];
        maps[d] = DimMap::Map(map);
        src.gather_maps(src.layout(), &maps)
    }

    fn band(&self, k: i64, lower: bool, op: &str) -> Result<Tensor> {
        if self.ndim() < 2 {
            return Err(Error::Runtime(format!(
                "{op}: input tensor must have at least 2 dimensions"
            )));
        }
        if self.device().is_cuda() {
            return crate::cuda::ops::band(self, k, lower);
        }
        let rows = self.shape()[self.ndim() - 2];
        let cols = self.shape()[self.ndim() - 1];
        let out = self.clone_data();
        with_dtype!(self.dtype(), T, {
            // SAFETY: `out` is a fresh tensor owned here.
            let d = unsafe { out.storage_slice_mut::<T>()? };
            kern::band_zero(d, rows, cols, k, lower);
        });
        Ok(out)
    }

    /// Lower triangle of the last two dims (elements with `j - i <= diagonal`).
    pub fn tril(&self, diagonal: i64) -> Result<Tensor> {
        let out = self.band(diagonal, true, "tril")?;
        Ok(crate::autograd::record_unary_output(
            "TrilBackward0",
            &[self],
            out,
            move |g| Ok(vec![Some(g.tril(diagonal)?)]),
        ))
    }

    /// Upper triangle of the last two dims (elements with `j - i >= diagonal`).
    pub fn triu(&self, diagonal: i64) -> Result<Tensor> {
        let out = self.band(diagonal, false, "triu")?;
        Ok(crate::autograd::record_unary_output(
            "TriuBackward0",
            &[self],
            out,
            move |g| Ok(vec![Some(g.triu(diagonal)?)]),
        ))
    }

    pub fn tril_(&self, diagonal: i64) -> Result<()> {
        let r = self.tril(diagonal)?;
        self.copy_as(&r, "tril")
    }

    pub fn triu_(&self, diagonal: i64) -> Result<()> {
        let r = self.triu(diagonal)?;
        self.copy_as(&r, "triu")
    }

    /// `diag`: a 1-d tensor becomes a matrix with it on diagonal `k`; a matrix gives a copy of
    /// its diagonal `k`.
    pub(crate) fn diag_raw(&self, k: i64) -> Result<Tensor> {
        match self.ndim() {
            1 => {
                let n = self.numel() + k.unsigned_abs() as usize;
                let out =
                    Tensor::full_on(self.device(), &[n, n], crate::Scalar::Int(0), self.dtype())?;
                out.diagonal(k, 0, 1)?.copy_(self)?;
                Ok(out)
            }
            2 => Ok(self.diagonal(k, 0, 1)?.clone_data()),
            n => Err(Error::Runtime(format!(
                "diag(): Supports 1D or 2D tensors. Got {n}D"
            ))),
        }
    }

    /// `diag_embed`: the last dim becomes the diagonal `offset` of planes (`dim1`, `dim2`) of
    /// a new tensor with one more dim.
    pub(crate) fn diag_embed_raw(&self, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
        let n = self.ndim() + 1;
        let (a, b) = (normalize_dim(dim1, n)?, normalize_dim(dim2, n)?);
        if a == b {
            return Err(Error::Runtime(format!(
                "diagonal dimensions cannot be identical {dim1}, {dim2}"
            )));
        }
        let last = self.shape().last().copied().unwrap_or(1);
        let m = last + offset.unsigned_abs() as usize;
        let batch: Vec<usize> = if self.ndim() == 0 {
            vec![]
        } else {
            self.shape()[..self.ndim() - 1].to_vec()
        };
        let mut it = batch.iter();
        let shape: Vec<usize> = (0..n)
            .map(|i| {
                if i == a || i == b {
                    m
                } else {
                    *it.next().unwrap_or(&1)
                }
            })
            .collect();
        let out = Tensor::full_on(self.device(), &shape, crate::Scalar::Int(0), self.dtype())?;
        out.diagonal(offset, a as i64, b as i64)?.copy_(self)?;
        Ok(out)
    }
}

// ---------------------------------------------------------------------- autograd wrappers

impl Tensor {
    /// Reverse the order of elements along `dims`.
    pub fn flip(&self, dims: &[i64]) -> Result<Tensor> {
        let out = crate::no_grad(|| self.flip_raw(dims))?;
        // Backward flips the gradient back (a permutation is its own inverse here).
        let d = dims.to_vec();
        super::index_grad::record_n(
            "FlipBackward0",
            vec![(self, Box::new(move |g| g.flip(&d)))],
            &out,
        );
        Ok(out)
    }

    /// Rotate elements along `dims` by `shifts` (flattened when `dims` is empty).
    pub fn roll(&self, shifts: &[i64], dims: &[i64]) -> Result<Tensor> {
        let out = crate::no_grad(|| self.roll_raw(shifts, dims))?;
        // Backward rolls the gradient back by the opposite shifts.
        let (back, d) = (
            shifts.iter().map(|s| -s).collect::<Vec<i64>>(),
            dims.to_vec(),
        );
        super::index_grad::record_n(
            "RollBackward0",
            vec![(self, Box::new(move |g| g.roll(&back, &d)))],
            &out,
        );
        Ok(out)
    }

    /// `repeat(*sizes)`: tile the tensor `sizes[k]` times along each dim.
    pub fn repeat(&self, sizes: &[i64]) -> Result<Tensor> {
        let out = crate::no_grad(|| self.repeat_raw(sizes))?;
        super::index_grad::record_gather("RepeatBackward0", self, out, |a| a.repeat_raw(sizes))
    }

    /// Repeat each element `repeats` times along `dim` (flattened when `dim` is None).
    pub fn repeat_interleave(&self, repeats: &Tensor, dim: Option<i64>) -> Result<Tensor> {
        let out = crate::no_grad(|| self.repeat_interleave_raw(repeats, dim))?;
        super::index_grad::record_gather("RepeatInterleaveBackward0", self, out, |a| {
            a.repeat_interleave_raw(repeats, dim)
        })
    }

    /// `diag`: a 1-d tensor becomes a matrix with it on diagonal `k`; a matrix gives a copy of
    /// its diagonal `k`.
    pub fn diag(&self, k: i64) -> Result<Tensor> {
        let out = crate::no_grad(|| self.diag_raw(k))?;
        let one_d = self.ndim() == 1;
        let in_shape = self.shape().to_vec();
        Ok(crate::autograd::record_unary_output(
            "DiagBackward0",
            &[self],
            out,
            move |g| {
                Ok(vec![Some(if one_d {
                    g.diagonal(k, 0, 1)?.contiguous_recorded()
                } else {
                    let f: super::view::ViewFn =
                        std::sync::Arc::new(move |t: &Tensor| t.diagonal(k, 0, 1));
                    super::view::embed_into_zeros(g, &in_shape, f)?
                })])
            },
        ))
    }

    /// `diag_embed`: the last dim becomes the diagonal `offset` of planes (`dim1`, `dim2`) of
    /// a new tensor with one more dim.
    pub fn diag_embed(&self, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
        let out = crate::no_grad(|| self.diag_embed_raw(offset, dim1, dim2))?;
        let n = self.ndim() + 1;
        let (a, b) = (
            normalize_dim(dim1, n)? as i64,
            normalize_dim(dim2, n)? as i64,
        );
        let shape: Vec<i64> = self.shape().iter().map(|&s| s as i64).collect();
        Ok(crate::autograd::record_unary_output(
            "DiagEmbedBackward0",
            &[self],
            out,
            move |g| Ok(vec![Some(g.diagonal(offset, a, b)?.reshape(&shape)?)]),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: Vec<i64>, shape: &[usize]) -> Tensor {
        Tensor::from_vec(v, shape).unwrap()
    }

    #[test]
    fn cat_promotes_and_skips_empty() {
        let a = t(vec![1, 2, 3, 4], &[2, 2]);
        let b = Tensor::from_vec(vec![0.5f32, 1.5], &[2, 1]).unwrap();
        let e = Tensor::zeros(&[0], DType::I8);
        let c = cat(&[a.clone(), e, b], 1).unwrap();
        assert_eq!(c.dtype(), DType::F32);
        assert_eq!(c.shape(), &[2, 3]);
        assert_eq!(
            c.to_vec::<f32>().unwrap(),
            vec![1.0, 2.0, 0.5, 3.0, 4.0, 1.5]
        );
        assert!(cat(&[a.clone(), t(vec![1, 2, 3], &[1, 3])], 0).is_err());
        let s = stack(&[a.clone(), a.clone()], -1).unwrap();
        assert_eq!(s.shape(), &[2, 2, 2]);
        assert_eq!(s.to_vec::<i64>().unwrap(), vec![1, 1, 2, 2, 3, 3, 4, 4]);
    }

    #[test]
    fn rearrangements() {
        let a = t((0..6).collect(), &[2, 3]);
        assert_eq!(
            a.flip(&[1]).unwrap().to_vec::<i64>().unwrap(),
            vec![2, 1, 0, 5, 4, 3]
        );
        assert_eq!(
            a.roll(&[1], &[]).unwrap().to_vec::<i64>().unwrap(),
            vec![5, 0, 1, 2, 3, 4]
        );
        let r = a.repeat(&[1, 2]).unwrap();
        assert_eq!(r.shape(), &[2, 6]);
        assert_eq!(r.to_vec::<i64>().unwrap()[..6], [0, 1, 2, 0, 1, 2]);
        assert_eq!(
            a.tril(0).unwrap().to_vec::<i64>().unwrap(),
            vec![0, 0, 0, 3, 4, 0]
        );
        assert_eq!(
            a.triu(1).unwrap().to_vec::<i64>().unwrap(),
            vec![0, 1, 2, 0, 0, 5]
        );
        let d = t(vec![1, 2], &[2]).diag_embed(1, -2, -1).unwrap();
        assert_eq!(d.to_vec::<i64>().unwrap(), vec![0, 1, 0, 0, 0, 2, 0, 0, 0]);
        let ri = a
            .repeat_interleave(&Tensor::scalar(crate::Scalar::Int(2), DType::I64), Some(0))
            .unwrap();
        assert_eq!(ri.shape(), &[4, 3]);
    }
}
