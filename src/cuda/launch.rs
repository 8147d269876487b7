//! Kernel-launch helpers: the `StridedLayout` argument (mirrors `common.cuh`) and the launch
//! shapes of cuda_kernels/README.md.

use crate::cpu::strided::coalesce;
use crate::{Error, Result};
use cudarc::driver::{DeviceRepr, LaunchConfig};

/// Most dims a kernel accepts (`FT_MAX_DIMS`).
pub const MAX_DIMS: usize = 8;

/// A tensor's shape, strides and offset in elements, passed by value (144 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct StridedLayout {
    pub ndim: i32,
    pub shape: [i64; MAX_DIMS],
    pub strides: [i64; MAX_DIMS],
    pub offset: i64,
}

// SAFETY: plain old data with the same C layout as `struct StridedLayout` in common.cuh.
unsafe impl DeviceRepr for StridedLayout {}

const _: () = assert!(std::mem::size_of::<StridedLayout>() == 144);

impl StridedLayout {
    fn build(op: &str, shape: &[usize], strides: &[usize], offset: usize) -> Result<Self> {
        if shape.len() > MAX_DIMS {
            return Err(Error::Runtime(format!(
                "{op}: CUDA kernels take at most {MAX_DIMS} non-mergeable dims, got a view with shape {shape:?} and strides {strides:?}; call .contiguous() first"
            )));
        }
        let mut l = StridedLayout {
            ndim: shape.len() as i32,
            offset: offset as i64,
            ..Default::default()
        };
        for (d, (&n, &s)) in shape.iter().zip(strides).enumerate() {
            l.shape[d] = n as i64;
            l.strides[d] = s as i64;
        }
        Ok(l)
    }
}

/// Layouts of `N` tensors iterated together over `shape` (inputs already broadcast to it),
/// with mergeable dims merged so that most views fit in `MAX_DIMS`.
pub fn joint_layouts<const N: usize>(
    op: &str,
    shape: &[usize],
    layouts: [(&[usize], usize); N],
) -> Result<[StridedLayout; N]> {
    let strides: [&[usize]; N] = std::array::from_fn(|k| layouts[k].0);
    let c = coalesce::<N>(shape, strides);
    let mut out = [StridedLayout::default(); N];
    for k in 0..N {
        out[k] = StridedLayout::build(op, &c.shape, &c.strides[k], layouts[k].1)?;
    }
    Ok(out)
}

/// The layout of one tensor (merged).
pub fn layout_of(op: &str, l: &crate::Layout) -> Result<StridedLayout> {
    Ok(joint_layouts::<1>(op, &l.shape, [(&l.strides, l.offset)])?[0])
}

/// The unmerged layout of `l`: kernels that address dims by number (indexing) need every
/// dim as it is.
pub fn unmerged_layout(op: &str, l: &crate::Layout) -> Result<StridedLayout> {
    if l.ndim() > MAX_DIMS {
        return Err(Error::Runtime(format!(
            "{op}: CUDA index kernels take at most {MAX_DIMS} dims, got {}",
            l.ndim()
        )));
    }
    StridedLayout::build(op, &l.shape, &l.strides, l.offset)
}

/// Elementwise kernels: 256 threads, a grid-stride loop over at most 65535 * 4 blocks.
pub fn elementwise(n: usize) -> LaunchConfig {
    let blocks = n.div_ceil(256).clamp(1, 65535 * 4);
    LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Block-per-row kernels: one block of 256 threads per row, at most 65535 blocks.
pub fn per_row(rows: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (rows.clamp(1, 65535) as u32, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    }
}
