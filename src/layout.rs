//! Shape, strides (in elements) and offset. Every view op changes only a `Layout`; the
//! storage underneath is shared.

use crate::{Error, Result};
use smallvec::SmallVec;

/// Small inline vector for shapes and strides (most tensors have <= 6 dims).
pub type Dims = SmallVec<[usize; 6]>;

/// How a tensor's elements are found in its storage: element `(i0, i1, ...)` is at
/// `offset + sum(ik * strides[k])`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub shape: Dims,
    pub strides: Dims,
    pub offset: usize,
}

/// Row-major (C-order) strides of a shape.
pub fn contiguous_strides(shape: &[usize]) -> Dims {
    let mut strides: Dims = smallvec::smallvec![0; shape.len()];
    let mut acc = 1usize;
    for i in (0..shape.len()).rev() {
        strides[i] = acc;
        acc *= shape[i].max(1);
    }
    strides
}

/// Wrap a possibly negative dim into `[0, ndim)`.
pub fn normalize_dim(dim: i64, ndim: usize) -> Result<usize> {
    let n = ndim.max(1) as i64;
    let d = if dim < 0 { dim + n } else { dim };
    if d < 0 || d >= n {
        return Err(Error::DimOutOfRange { dim, ndim });
    }
    Ok(d as usize)
}

/// Flags for the dims listed in `dims` (negative allowed), refusing a dim listed twice, as
/// PyTorch's `dim_list_to_bitset`. A 0-d tensor accepts dim 0 / -1 (and has no flag to set).
pub fn dim_list_mask(dims: &[i64], ndim: usize) -> Result<Vec<bool>> {
    let mut seen = vec![false; ndim.max(1)];
    for &d in dims {
        let k = normalize_dim(d, ndim)?;
        if seen[k] {
            return Err(Error::Runtime(format!(
                "dim {k} appears multiple times in the list of dims"
            )));
        }
        seen[k] = true;
    }
    seen.truncate(ndim);
    Ok(seen)
}

/// Broadcast two shapes with NumPy/PyTorch rules.
pub fn broadcast_shapes(op: &'static str, a: &[usize], b: &[usize]) -> Result<Dims> {
    let n = a.len().max(b.len());
    let mut out: Dims = smallvec::smallvec![0; n];
    for i in 0..n {
        let da = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let db = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(Error::shape(
                op,
                a,
                b,
                format!(
                    "The size of tensor a ({da}) must match the size of tensor b ({db}) at non-singleton dimension {i}"
                ),
            ));
        };
    }
    Ok(out)
}

/// The memory order of an elementwise result, as PyTorch's TensorIterator chooses it
/// (`reorder_dimensions`): dims sorted by the operands' strides, the first operand deciding
/// first (broadcast dims, stride 0, abstain; equal strides put the smaller dim inner), so that
/// `x.t() * 2` or an op on a channels-last tensor keeps its input's layout. `layouts` are the
/// operands broadcast to `shape`. Returns the dims outermost first, or `None` when that order
/// is plain row-major.
pub fn elementwise_dim_order(shape: &[usize], layouts: &[&Layout]) -> Option<Dims> {
    let n = shape.len();
    if n < 2 || layouts.iter().all(|l| l.is_contiguous()) {
        return None;
    }
    // 1: dim a goes outside dim b; -1: inside; 0: undecided.
    let outer = |a: usize, b: usize| -> i32 {
        for l in layouts {
            let (sa, sb) = (l.strides[a], l.strides[b]);
            if sa == 0 || sb == 0 {
                continue;
            }
            if sa != sb {
                return if sa > sb { 1 } else { -1 };
            }
            if shape[a] > shape[b] {
                return 1;
            }
        }
        0
    };
    // Insertion sort from innermost to outermost, starting from row-major order, moving a dim
    // only on a decided comparison (PyTorch's algorithm, so ties keep their order).
    let mut inner_first: Dims = (0..n).rev().collect();
    for i in 1..n {
        let mut moving = i;
        for j in (0..i).rev() {
            match outer(inner_first[j], inner_first[moving]) {
                c if c > 0 => {
                    inner_first.swap(j, moving);
                    moving = j;
                }
                c if c < 0 => break,
                _ => {}
            }
        }
    }
    let order: Dims = inner_first.into_iter().rev().collect();
    (!order.iter().copied().eq(0..n)).then_some(order)
}

impl Layout {
    pub fn contiguous(shape: &[usize]) -> Layout {
        Layout {
            shape: shape.into(),
            strides: contiguous_strides(shape),
            offset: 0,
        }
    }
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }
    /// True when elements are laid out in row-major order without gaps (size-1 dims ignored).
    pub fn is_contiguous(&self) -> bool {
        if self.shape.contains(&0) {
            return true; // empty tensors are contiguous, as in PyTorch
        }
        let mut expected = 1usize;
        for i in (0..self.shape.len()).rev() {
            if self.shape[i] == 1 {
                continue;
            }
            if self.strides[i] != expected {
                return false;
            }
            expected *= self.shape[i];
        }
        true
    }
    /// Highest storage index touched + 1 (0 for empty tensors).
    pub fn storage_extent(&self) -> usize {
        if self.shape.contains(&0) {
            return 0;
        }
        self.offset
            + self
                .shape
                .iter()
                .zip(&self.strides)
                .map(|(&s, &st)| (s - 1) * st)
                .sum::<usize>()
            + 1
    }

    /// A view with this layout broadcast to `shape` (stride 0 on expanded dims).
    pub fn broadcast_to(&self, op: &'static str, shape: &[usize]) -> Result<Layout> {
        if shape.len() < self.ndim() {
            return Err(Error::shape(
                op,
                &self.shape,
                shape,
                "the number of sizes provided must be greater or equal to the number of dimensions in the tensor",
            ));
        }
        let extra = shape.len() - self.ndim();
        let mut strides: Dims = smallvec::smallvec![0; shape.len()];
        for i in 0..shape.len() {
            if i < extra {
                continue;
            }
            let (s, st) = (self.shape[i - extra], self.strides[i - extra]);
            if s == shape[i] {
                strides[i] = st;
            } else if s == 1 {
                strides[i] = 0;
            } else {
                return Err(Error::shape(
                    op,
                    &self.shape,
                    shape,
                    format!(
                        "The expanded size of the tensor ({}) must match the existing size ({s}) at non-singleton dimension {i}",
                        shape[i]
                    ),
                ));
            }
        }
        Ok(Layout {
            shape: shape.into(),
            strides,
            offset: self.offset,
        })
    }

    pub fn permute(&self, dims: &[usize]) -> Layout {
        Layout {
            shape: dims.iter().map(|&d| self.shape[d]).collect(),
            strides: dims.iter().map(|&d| self.strides[d]).collect(),
            offset: self.offset,
        }
    }

    pub fn transpose(&self, a: usize, b: usize) -> Layout {
        let mut l = self.clone();
        l.shape.swap(a, b);
        l.strides.swap(a, b);
        l
    }

    /// `narrow(dim, start, len)` with pre-validated arguments.
    pub fn narrow(&self, dim: usize, start: usize, len: usize) -> Layout {
        let mut l = self.clone();
        if len > 0 {
            l.offset += start * l.strides[dim];
        }
        l.shape[dim] = len;
        l
    }

    /// Slice `start..stop` by `step` (> 0) along `dim`, pre-validated and clamped.
    pub fn slice(&self, dim: usize, start: usize, stop: usize, step: usize) -> Layout {
        let mut l = self.clone();
        let len = if stop > start {
            (stop - start).div_ceil(step)
        } else {
            0
        };
        if len > 0 {
            l.offset += start * l.strides[dim];
        }
        l.shape[dim] = len;
        l.strides[dim] *= step;
        l
    }

    /// Remove `dim` by picking `index` (pre-validated).
    pub fn select(&self, dim: usize, index: usize) -> Layout {
        let mut l = self.clone();
        l.offset += index * l.strides[dim];
        l.shape.remove(dim);
        l.strides.remove(dim);
        l
    }

    pub fn unsqueeze(&self, dim: usize) -> Layout {
        let mut l = self.clone();
        let st = if dim < l.ndim() {
            l.strides[dim] * l.shape[dim]
        } else {
            1
        };
        l.shape.insert(dim, 1);
        l.strides.insert(dim, st);
        l
    }

    /// Strides for viewing this layout as `shape` without copying, if possible
    /// (PyTorch's `computeStride`): None when a copy is needed.
    pub fn view_strides(&self, shape: &[usize]) -> Option<Dims> {
        let old_numel = self.numel();
        if old_numel == 0 || self.ndim() == 0 {
            return Some(contiguous_strides(shape));
        }
        let mut new_strides: Dims = smallvec::smallvec![0; shape.len()];
        let mut view_d = shape.len() as isize - 1;
        // Walk old dims from the back, grouping runs that are contiguous among themselves.
        let mut chunk_base_stride = *self.strides.last().unwrap();
        let mut tensor_numel = 1usize;
        let mut view_numel = 1usize;
        for tensor_d in (0..self.ndim()).rev() {
            tensor_numel *= self.shape[tensor_d];
            let is_chunk_end = tensor_d == 0
                || (self.shape[tensor_d - 1] != 1
                    && self.strides[tensor_d - 1] != tensor_numel * chunk_base_stride);
            if is_chunk_end {
                while view_d >= 0 && (view_numel < tensor_numel || shape[view_d as usize] == 1) {
                    new_strides[view_d as usize] = view_numel * chunk_base_stride;
                    view_numel *= shape[view_d as usize];
                    view_d -= 1;
                }
                if view_numel != tensor_numel {
                    return None;
                }
                if tensor_d > 0 {
                    chunk_base_stride = self.strides[tensor_d - 1];
                    tensor_numel = 1;
                    view_numel = 1;
                }
            }
        }
        if view_d != -1 {
            return None;
        }
        Some(new_strides)
    }
}

/// Resolve a shape argument with at most one `-1` against `numel`.
pub fn infer_shape(op: &'static str, shape: &[i64], numel: usize) -> Result<Dims> {
    let mut infer = None;
    let mut known = 1usize;
    for (i, &s) in shape.iter().enumerate() {
        if s == -1 {
            if infer.is_some() {
                return Err(Error::invalid(op, "only one dimension can be inferred"));
            }
            infer = Some(i);
        } else if s < 0 {
            return Err(Error::invalid(op, format!("invalid shape dimension {s}")));
        } else {
            known *= s as usize;
        }
    }
    let mut out: Dims = shape.iter().map(|&s| s.max(0) as usize).collect();
    if let Some(i) = infer {
        if known == 0 || !numel.is_multiple_of(known) {
            return Err(Error::invalid(
                op,
                format!("shape '{shape:?}' is invalid for input of size {numel}"),
            ));
        }
        out[i] = numel / known;
    } else if known != numel {
        return Err(Error::invalid(
            op,
            format!("shape '{shape:?}' is invalid for input of size {numel}"),
        ));
    }
    Ok(out)
}
