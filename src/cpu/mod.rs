//! CPU kernels. They know nothing about autograd or Python: slices and layouts in, `Vec`s out.

pub mod alloc;
pub mod gather;
pub mod linalg;
pub mod matmul;
pub mod reduce;
pub mod simd;
pub mod sort;
pub mod strided;
pub mod vmath;
