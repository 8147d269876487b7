//! Linear algebra on tensors: the matmul family (`matmul`, `mm`, `bmm`, `mv`, `dot`, `addmm`,
//! ...), `einsum`, `tensordot`, `kron`, `trace`, `cross`, and the `linalg_*` decompositions
//! (batched over leading dims). Products run through `cpu::matmul` with the operands' strides
//! passed straight through; decompositions run through `cpu::linalg` one matrix at a time, in
//! parallel across the batch.
//!
//! Like PyTorch, products do not promote dtypes: both operands must have the same dtype.

use super::host_fallback::cuda_via_host;
use super::linalg_device as device;
use super::Tensor;
use crate::cpu::linalg::{self as kern, DecompError, LinalgElement};
use crate::cpu::matmul::{matmul_batched, MatStrides, MatmulElement};
use crate::cpu::strided;
use crate::layout::{broadcast_shapes, normalize_dim, Dims, Layout};
use crate::{with_dtype, BinaryOp, DType, Element, Error, Result, Scalar};
use rayon::prelude::*;

/// The C++ type name PyTorch prints in "float != double" dtype-mismatch messages.
fn cpp_name(d: DType) -> &'static str {
    match d {
        DType::Bool => "bool",
        DType::U8 => "unsigned char",
        DType::I8 => "signed char",
        DType::I16 => "short int",
        DType::I32 => "int",
        DType::I64 => "long int",
        DType::F16 => "c10::Half",
        DType::BF16 => "c10::BFloat16",
        DType::F32 => "float",
        DType::F64 => "double",
    }
}

fn rt(msg: String) -> Error {
    Error::Runtime(msg)
}

fn check_same_dtype(a: &Tensor, b: &Tensor) -> Result<()> {
    if a.dtype() != b.dtype() {
        return Err(rt(format!(
            "expected m1 and m2 to have the same dtype, but got: {} != {}",
            cpp_name(a.dtype()),
            cpp_name(b.dtype())
        )));
    }
    Ok(())
}

fn shape_str(s: &[usize]) -> String {
    s.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join("x")
}

/// `out = beta * input + alpha * (a @ b)` for the add* variants.
#[derive(Clone)]
struct Acc {
    input: Tensor,
    beta: Scalar,
    alpha: Scalar,
}

fn is_zero_scalar(s: Scalar) -> bool {
    s.to_f64() == 0.0
}

/// Run `$body` with `$T` bound to an element type that has a matmul kernel.
macro_rules! with_matmul_dtype {
    ($dt:expr, $T:ident, $body:block) => {
        match $dt {
            DType::F32 => {
                type $T = f32;
                $body
            }
            DType::F64 => {
                type $T = f64;
                $body
            }
            DType::F16 => {
                type $T = half::f16;
                $body
            }
            DType::U8 => {
                type $T = u8;
                $body
            }
            DType::I8 => {
                type $T = i8;
                $body
            }
            DType::I16 => {
                type $T = i16;
                $body
            }
            DType::I32 => {
                type $T = i32;
                $body
            }
            DType::I64 => {
                type $T = i64;
                $body
            }
            d => {
                return Err(Error::UnsupportedDType {
                    op: "addmm_impl_cpu_",
                    dtype: d,
                })
            }
        }
    };
}

/// Storage offsets of every matrix of a batched operand (`l` has `>= 2` dims), broadcast to
/// the batch shape `batch`.
fn batch_offsets(l: &Layout, batch: &[usize]) -> Result<Vec<usize>> {
    let nd = l.ndim();
    let bl = Layout {
        shape: l.shape[..nd - 2].into(),
        strides: l.strides[..nd - 2].into(),
        offset: l.offset,
    }
    .broadcast_to("matmul", batch)?;
    if bl.numel() == 0 {
        return Ok(vec![]);
    }
    Ok(strided::offsets(&bl))
}

/// The shared batched product: `a` is `(*, m, k)`, `b` is `(*, k, n)` (both >= 2-d, the same
/// dtype, `k` already checked); batch dims broadcast. Returns a contiguous `(*, m, n)` tensor.
/// `matmul_core_raw` with recording off, then one autograd node (see linalg_grad.rs).
fn matmul_core(a: &Tensor, b: &Tensor, acc: Option<&Acc>) -> Result<Tensor> {
    let out = crate::no_grad(|| matmul_core_raw(a, b, acc))?;
    super::linalg_grad::record_matmul(a, b, acc.map(|c| (&c.input, c.beta, c.alpha)), &out);
    Ok(out)
}

fn matmul_core_raw(a: &Tensor, b: &Tensor, acc: Option<&Acc>) -> Result<Tensor> {
    if a.device().is_cuda() || b.device().is_cuda() {
        return matmul_cuda(a, b, acc);
    }
    let dt = a.dtype();
    if dt == DType::BF16 {
        let acc32 = acc.map(|c| Acc {
            input: c.input.to_dtype(DType::F32),
            beta: c.beta,
            alpha: c.alpha,
        });
        let r = matmul_core_raw(
            &a.to_dtype(DType::F32),
            &b.to_dtype(DType::F32),
            acc32.as_ref(),
        )?;
        return Ok(r.to_dtype(DType::BF16));
    }
    if let Some(c) = acc {
        if !dt.is_floating_point() {
            for (name, s) in [("alpha", c.alpha), ("beta", c.beta)] {
                if matches!(s, Scalar::Float(_)) {
                    return Err(rt(format!(
                        "For integral input tensors, argument {name} must not be a floating point number."
                    )));
                }
            }
        }
    }
    with_matmul_dtype!(dt, T, { matmul_typed::<T>(a, b, acc) })
}

/// cuBLAS product, then `beta * input + alpha * product` for the addmm family.
fn matmul_cuda(a: &Tensor, b: &Tensor, acc: Option<&Acc>) -> Result<Tensor> {
    let r = crate::cuda::ops::matmul(a, b)?;
    let Some(c) = acc else {
        return Ok(r);
    };
    let r = r.binary_scalar(c.alpha, BinaryOp::Mul, false)?;
    if is_zero_scalar(c.beta) {
        return Ok(r);
    }
    c.input
        .binary_scalar(c.beta, BinaryOp::Mul, false)?
        .binary(&r, BinaryOp::Add)
}

fn matmul_typed<T: MatmulElement>(a: &Tensor, b: &Tensor, acc: Option<&Acc>) -> Result<Tensor> {
    let (na, nb) = (a.ndim(), b.ndim());
    let (m, k) = (a.shape()[na - 2], a.shape()[na - 1]);
    let n = b.shape()[nb - 1];
    let batch = broadcast_shapes("matmul", &a.shape()[..na - 2], &b.shape()[..nb - 2])?;
    let mut out_shape = batch.clone();
    out_shape.push(m);
    out_shape.push(n);
    let numel: usize = out_shape.iter().product();
    let nbatch: usize = batch.iter().product();

    if let Some(c) = acc {
        let threaded = rayon::current_num_threads() > 1
            && numel.saturating_mul(k) >= crate::cpu::matmul::GEMM_THREAD_WORK;
        if threaded && !is_zero_scalar(c.beta) {
            // gemm's threaded kernels run measurably slower when they must also read the
            // destination (addmm 64x784x256 +15%, 512^3 +40%): form the product alone, then
            // add `beta * input` in one pass over the (much smaller than the work) output.
            let product_only = Acc {
                input: c.input.clone(),
                beta: Scalar::Int(0),
                alpha: c.alpha,
            };
            let prod = matmul_typed::<T>(a, b, Some(&product_only))?;
            let inp = c.input.to_dtype(T::DTYPE);
            let li = inp.layout().broadcast_to("addmm", &out_shape)?;
            let mut out = strided::map1(inp.storage_slice::<T>()?, &li, |x: T| x);
            let beta = c.beta.to_elem::<T>();
            for (o, &p) in out.iter_mut().zip(prod.storage_slice::<T>()?) {
                *o = beta.mul(*o).add(p);
            }
            return Ok(Tensor::from_vec_unchecked(out, &out_shape));
        }
    }
    let (mut out, read_dst, dst_scale, prod_scale) = match acc {
        Some(c) if !is_zero_scalar(c.beta) => {
            let inp = c.input.to_dtype(T::DTYPE);
            let li = inp.layout().broadcast_to("addmm", &out_shape)?;
            let v = strided::map1(inp.storage_slice::<T>()?, &li, |x: T| x);
            (v, true, c.beta.to_elem::<T>(), c.alpha.to_elem::<T>())
        }
        // gemm overwrites a destination it does not read: a recycled buffer spares the
        // fresh one's page faults and zeroing (a 2048^2 f32 product: 16 MB zeroed per call).
        Some(c) => (
            crate::cpu::alloc::output_vec_for_overwrite::<T>(numel),
            false,
            T::zero(),
            c.alpha.to_elem::<T>(),
        ),
        None => (
            crate::cpu::alloc::output_vec_for_overwrite::<T>(numel),
            false,
            T::zero(),
            T::one(),
        ),
    };
    if numel == 0 {
        return Ok(Tensor::from_vec_unchecked(out, &out_shape));
    }
    let (la, lb) = (a.layout(), b.layout());
    let sa = a.storage_slice::<T>()?;
    let sb = b.storage_slice::<T>()?;
    let ma = MatStrides {
        rs: la.strides[na - 2],
        cs: la.strides[na - 1],
    };
    let mb = MatStrides {
        rs: lb.strides[nb - 2],
        cs: lb.strides[nb - 1],
    };
    // Fold `(*, m, k) @ (k, n)` into one `(B*m, k) @ (k, n)` product when a's batch and row
    // dims collapse into one strided dim (always true for contiguous inputs).
    let b_batch: usize = b.shape()[..nb - 2].iter().product();
    if nbatch > 1 && b_batch == 1 && na > 2 {
        let rows_layout = Layout {
            shape: la.shape[..na - 1].into(),
            strides: la.strides[..na - 1].into(),
            offset: la.offset,
        };
        if let Some(st) = rows_layout.view_strides(&[nbatch * m]) {
            matmul_batched(
                sa,
                &[la.offset],
                MatStrides {
                    rs: st[0],
                    cs: ma.cs,
                },
                sb,
                &[lb.offset],
                mb,
                nbatch * m,
                n,
                k,
                &mut out,
                read_dst,
                dst_scale,
                prod_scale,
            );
            return Ok(Tensor::from_vec_unchecked(out, &out_shape));
        }
    }
    let oa = batch_offsets(la, &batch)?;
    let ob = batch_offsets(lb, &batch)?;
    matmul_batched(
        sa, &oa, ma, sb, &ob, mb, m, n, k, &mut out, read_dst, dst_scale, prod_scale,
    );
    Ok(Tensor::from_vec_unchecked(out, &out_shape))
}

/// PyTorch's "mm: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)" (`op`: the
/// product that failed: mm, addmm).
pub(crate) fn mm_shape_error(op: &str, a: &[usize], b: &[usize]) -> Error {
    rt(format!(
        "{op}: mat1 and mat2 shapes cannot be multiplied ({} and {})",
        shape_str(a),
        shape_str(b)
    ))
}

fn bmm_shape_error(bsz: usize, k: usize, got: &[usize]) -> Error {
    rt(format!(
        "Expected size for first two dimensions of batch2 tensor to be: [{bsz}, {k}] but got: [{}, {}].",
        got[0], got[1]
    ))
}

impl Tensor {
    // ================================================================ products

    /// `self @ other` with PyTorch's rules: 1-d x 1-d is a dot product, a 1-d operand is
    /// promoted to a matrix (and the added dim removed after), leading dims broadcast.
    pub fn matmul(&self, other: &Tensor) -> Result<Tensor> {
        let (da, db) = (self.ndim(), other.ndim());
        if da == 0 || db == 0 {
            return Err(rt(format!(
                "both arguments to matmul need to be at least 1D, but they are {da}D and {db}D"
            )));
        }
        match (da, db) {
            (1, 1) => return self.dot(other),
            (2, 1) => return self.mv(other),
            (1, 2) => return self.unsqueeze(0)?.mm(other)?.squeeze(Some(&[0])),
            (2, 2) => return self.mm(other),
            _ => {}
        }
        check_same_dtype(self, other)?;
        let a = if da == 1 {
            self.unsqueeze(0)?
        } else {
            self.clone()
        };
        let b = if db == 1 {
            other.unsqueeze(-1)?
        } else {
            other.clone()
        };
        let (na, nb) = (a.ndim(), b.ndim());
        let k = a.shape()[na - 1];
        if b.shape()[nb - 2] != k {
            if db == 2 {
                // PyTorch folds the batch into the rows of one mm, and says so
                let rows: usize = a.shape()[..na - 1].iter().product();
                return Err(mm_shape_error("mm", &[rows, k], other.shape()));
            }
            let batch = broadcast_shapes("matmul", &a.shape()[..na - 2], &b.shape()[..nb - 2])?;
            let bsz: usize = batch.iter().product();
            return Err(bmm_shape_error(bsz, k, &[bsz, b.shape()[nb - 2]]));
        }
        let mut r = matmul_core(&a, &b, None)?;
        if da == 1 {
            r = r.squeeze(Some(&[-2]))?;
        }
        if db == 1 {
            r = r.squeeze(Some(&[-1]))?;
        }
        Ok(r)
    }

    /// Matrix product of two 2-d tensors.
    pub fn mm(&self, mat2: &Tensor) -> Result<Tensor> {
        if self.ndim() != 2 {
            return Err(rt(format!(
                "self must be a matrix, got {}-D tensor",
                self.ndim()
            )));
        }
        if mat2.ndim() != 2 {
            return Err(rt(format!(
                "mat2 must be a matrix, got {}-D tensor",
                mat2.ndim()
            )));
        }
        check_same_dtype(self, mat2)?;
        if self.shape()[1] != mat2.shape()[0] {
            return Err(mm_shape_error("mm", self.shape(), mat2.shape()));
        }
        matmul_core(self, mat2, None)
    }

    /// Batched matrix product of two 3-d tensors with the same batch size.
    pub fn bmm(&self, mat2: &Tensor) -> Result<Tensor> {
        self.check_bmm(mat2)?;
        matmul_core(self, mat2, None)
    }

    fn check_bmm(&self, mat2: &Tensor) -> Result<()> {
        if self.ndim() != 3 {
            return Err(rt(format!(
                "batch1 must be a 3D tensor, got {}-D tensor",
                self.ndim()
            )));
        }
        if mat2.ndim() != 3 {
            return Err(rt(format!(
                "batch2 must be a 3D tensor, got {}-D tensor",
                mat2.ndim()
            )));
        }
        check_same_dtype(self, mat2)?;
        let (s, o) = (self.shape(), mat2.shape());
        if s[0] != o[0] || s[2] != o[1] {
            return Err(bmm_shape_error(s[0], s[2], o));
        }
        Ok(())
    }

    /// Matrix-vector product.
    pub fn mv(&self, vec: &Tensor) -> Result<Tensor> {
        self.check_mv(vec)?;
        // One recorded node (no unsqueeze/squeeze view nodes around it).
        let m = self.shape()[0] as i64;
        let out = crate::no_grad(|| -> Result<Tensor> {
            Ok(matmul_core_raw(self, &vec.unsqueeze(1)?, None)?
                .reshape(&[m])?
                .alias_detached())
        })?;
        super::linalg_grad::record_mv(self, vec, &out);
        Ok(out)
    }

    fn check_mv(&self, vec: &Tensor) -> Result<()> {
        if self.ndim() != 2 || vec.ndim() != 1 {
            return Err(rt(format!(
                "vector + matrix @ vector expected, got 1, {}, {}",
                self.ndim(),
                vec.ndim()
            )));
        }
        check_same_dtype(self, vec)?;
        if self.shape()[1] != vec.shape()[0] {
            return Err(rt(format!(
                "size mismatch, got input ({}), mat ({}), vec ({})",
                self.shape()[0],
                shape_str(self.shape()),
                vec.shape()[0]
            )));
        }
        Ok(())
    }

    fn check_dot(&self, other: &Tensor, op: &str) -> Result<()> {
        if self.ndim() != 1 || other.ndim() != 1 {
            return Err(rt(format!(
                "1D tensors expected, but got {}D and {}D tensors",
                self.ndim(),
                other.ndim()
            )));
        }
        if self.dtype() != other.dtype() {
            return Err(rt(format!(
                "{op} : expected both vectors to have same dtype, but found {} and {}",
                self.dtype().torch_name(),
                other.dtype().torch_name()
            )));
        }
        let (n, m) = (self.shape()[0], other.shape()[0]);
        if n != m {
            return Err(rt(format!(
                "inconsistent tensor size, expected tensor [{n}] and src [{m}] to have the same number of elements, but got {n} and {m} elements respectively"
            )));
        }
        Ok(())
    }

    /// Dot product of two 1-d tensors (0-d result).
    pub fn dot(&self, other: &Tensor) -> Result<Tensor> {
        self.check_dot(other, "dot")?;
        let out = crate::no_grad(|| -> Result<Tensor> {
            Ok(
                matmul_core_raw(&self.unsqueeze(0)?, &other.unsqueeze(1)?, None)?
                    .reshape(&[])?
                    .alias_detached(),
            )
        })?;
        super::linalg_grad::record_dot(self, other, &out);
        Ok(out)
    }

    /// `vdot`: the dot product with the first argument conjugated (same as `dot` for reals).
    pub fn vdot(&self, other: &Tensor) -> Result<Tensor> {
        self.check_dot(other, "vdot")?;
        self.dot(other)
    }

    /// Inner product over the last dim (a plain product if either operand is 0-d).
    pub fn inner(&self, other: &Tensor) -> Result<Tensor> {
        if self.ndim() == 0 || other.ndim() == 0 {
            return self.binary(other, BinaryOp::Mul);
        }
        let (ka, kb) = (
            self.shape()[self.ndim() - 1],
            other.shape()[other.ndim() - 1],
        );
        if ka != kb {
            return Err(rt(format!(
                "inner() the last dimension must match on both input tensors but got shapes {:?} and {:?}",
                self.shape(),
                other.shape()
            )));
        }
        self.tensordot(other, &[-1], &[-1])
    }

    /// Outer product of two 1-d tensors (with type promotion, like PyTorch).
    pub fn outer(&self, vec2: &Tensor) -> Result<Tensor> {
        for (name, t) in [("self", self), ("vec2", vec2)] {
            if t.ndim() != 1 {
                return Err(rt(format!(
                    "outer: Expected 1-D argument {name}, but got {}-D",
                    t.ndim()
                )));
            }
        }
        self.unsqueeze(1)?
            .binary(&vec2.unsqueeze(0)?, BinaryOp::Mul)
    }

    fn check_input_dtype(&self, mat: &Tensor) -> Result<()> {
        if self.dtype() != mat.dtype() {
            return Err(rt(format!(
                "self and mat2 must have the same dtype, but got {} and {}",
                self.dtype().torch_name(),
                mat.dtype().torch_name()
            )));
        }
        Ok(())
    }

    /// `beta * self + alpha * (mat1 @ mat2)`, `self` broadcast to the product's shape.
    pub fn addmm(
        &self,
        mat1: &Tensor,
        mat2: &Tensor,
        beta: Scalar,
        alpha: Scalar,
    ) -> Result<Tensor> {
        for (name, t) in [("mat1", mat1), ("mat2", mat2)] {
            if t.ndim() != 2 {
                return Err(rt(format!(
                    "{name} must be a matrix, got {}-D tensor",
                    t.ndim()
                )));
            }
        }
        check_same_dtype(mat1, mat2)?;
        self.check_input_dtype(mat1)?;
        if mat1.shape()[1] != mat2.shape()[0] {
            return Err(mm_shape_error("addmm", mat1.shape(), mat2.shape()));
        }
        let acc = Acc {
            input: self.clone(),
            beta,
            alpha,
        };
        matmul_core(mat1, mat2, Some(&acc))
    }

    /// `beta * self + alpha * bmm(batch1, batch2)`.
    pub fn baddbmm(
        &self,
        batch1: &Tensor,
        batch2: &Tensor,
        beta: Scalar,
        alpha: Scalar,
    ) -> Result<Tensor> {
        batch1.check_bmm(batch2)?;
        self.check_input_dtype(batch1)?;
        let acc = Acc {
            input: self.clone(),
            beta,
            alpha,
        };
        matmul_core(batch1, batch2, Some(&acc))
    }

    /// `beta * self + alpha * (mat @ vec)`.
    pub fn addmv(&self, mat: &Tensor, vec: &Tensor, beta: Scalar, alpha: Scalar) -> Result<Tensor> {
        mat.check_mv(vec)?;
        self.check_input_dtype(mat)?;
        if self.ndim() > 1 {
            return Err(rt(format!(
                "vector + matrix @ vector expected, got {}, 2, 1",
                self.ndim()
            )));
        }
        let acc = Acc {
            input: self.unsqueeze(-1)?,
            beta,
            alpha,
        };
        let r = matmul_core(mat, &vec.unsqueeze(1)?, Some(&acc))?;
        r.squeeze(Some(&[1]))
    }

    /// Contract `dims_a` of `self` with `dims_b` of `other` (pairwise, in order).
    pub fn tensordot(&self, other: &Tensor, dims_a: &[i64], dims_b: &[i64]) -> Result<Tensor> {
        if dims_a.len() != dims_b.len() {
            return Err(rt("both dimension lists should have same length".into()));
        }
        check_same_dtype(self, other)?;
        let (na, nb) = (self.ndim(), other.ndim());
        let mut ca = Vec::with_capacity(dims_a.len());
        let mut cb = Vec::with_capacity(dims_b.len());
        for (&x, &y) in dims_a.iter().zip(dims_b) {
            let (x, y) = (normalize_dim(x, na)?, normalize_dim(y, nb)?);
            if na == 0 || nb == 0 {
                return Err(Error::DimOutOfRange {
                    dim: if na == 0 { x as i64 } else { y as i64 },
                    ndim: 0,
                });
            }
            if ca.contains(&x) || cb.contains(&y) {
                return Err(rt(format!(
                    "dim {} appears multiple times in the list of dims",
                    if ca.contains(&x) { x } else { y }
                )));
            }
            let (sx, sy) = (self.shape()[x], other.shape()[y]);
            if sx != sy {
                return Err(rt(format!(
                    "contracted dimensions need to match, but first has size {sx} in dim {x} and second has size {sy} in dim {y}"
                )));
            }
            ca.push(x);
            cb.push(y);
        }
        let free_a: Vec<usize> = (0..na).filter(|d| !ca.contains(d)).collect();
        let free_b: Vec<usize> = (0..nb).filter(|d| !cb.contains(d)).collect();
        let ksz: usize = ca.iter().map(|&d| self.shape()[d]).product();
        let fa: Vec<usize> = free_a.iter().map(|&d| self.shape()[d]).collect();
        let fb: Vec<usize> = free_b.iter().map(|&d| other.shape()[d]).collect();
        let pa: Vec<i64> = free_a.iter().chain(&ca).map(|&d| d as i64).collect();
        let pb: Vec<i64> = cb.iter().chain(&free_b).map(|&d| d as i64).collect();
        let a2 = self
            .permute(&pa)?
            .reshape(&[fa.iter().product::<usize>() as i64, ksz as i64])?;
        let b2 = other
            .permute(&pb)?
            .reshape(&[ksz as i64, fb.iter().product::<usize>() as i64])?;
        let r = matmul_core(&a2, &b2, None)?;
        let shape: Vec<i64> = fa.iter().chain(&fb).map(|&s| s as i64).collect();
        r.reshape(&shape)
    }

    /// Kronecker product (with type promotion).
    pub fn kron(&self, other: &Tensor) -> Result<Tensor> {
        let nd = self.ndim().max(other.ndim());
        let pad = |t: &Tensor| -> Vec<usize> {
            let mut s = vec![1usize; nd - t.ndim()];
            s.extend_from_slice(t.shape());
            s
        };
        let (sa, sb) = (pad(self), pad(other));
        let ia: Vec<i64> = sa.iter().flat_map(|&s| [s as i64, 1]).collect();
        let ib: Vec<i64> = sb.iter().flat_map(|&s| [1, s as i64]).collect();
        let r = self
            .reshape(&ia)?
            .binary(&other.reshape(&ib)?, BinaryOp::Mul)?;
        let out: Vec<i64> = sa.iter().zip(&sb).map(|(&x, &y)| (x * y) as i64).collect();
        r.reshape(&out)
    }

    /// Sum of the main diagonal of a 2-d tensor (integer inputs give int64).
    pub(crate) fn trace_raw(&self) -> Result<Tensor> {
        if self.ndim() != 2 {
            return Err(rt(format!(
                "trace: expected a matrix, but got tensor with dim {}",
                self.ndim()
            )));
        }
        if self.device().is_cuda() {
            return self.diagonal(0, 0, 1)?.sum_raw(None, false, None);
        }
        let dt = self.dtype();
        let l = self.layout();
        let d = l.shape[0].min(l.shape[1]);
        let step = l.strides[0] + l.strides[1];
        if dt.is_floating_point() {
            let x = self.to_dtype(dt.compute_dtype());
            let lx = x.layout();
            let stepx = lx.strides[0] + lx.strides[1];
            let out = crate::with_float_dtype!(
                x.dtype(),
                T,
                {
                    let s = x.storage_slice::<T>()?;
                    let mut acc = T::zero();
                    for i in 0..d {
                        acc += s[lx.offset + i * stepx];
                    }
                    Tensor::scalar(Scalar::Float(Element::to_f64(acc)), dt)
                },
                unreachable!()
            );
            return Ok(out);
        }
        let total = with_dtype!(dt, T, {
            let s = self.storage_slice::<T>()?;
            (0..d).fold(0i64, |acc, i| {
                acc.wrapping_add(s[l.offset + i * step].to_i64())
            })
        });
        Ok(Tensor::scalar(Scalar::Int(total), DType::I64))
    }

    /// `torch.cross`: cross product along `dim`, or along the first dim of size 3 when `dim`
    /// is `None`.
    pub fn cross(&self, other: &Tensor, dim: Option<i64>) -> Result<Tensor> {
        let d = match dim {
            Some(d) => d,
            None => {
                let shape = broadcast_shapes("cross", self.shape(), other.shape())?;
                match shape.iter().position(|&s| s == 3) {
                    Some(p) => p as i64,
                    None => return Err(rt("no dimension of size 3 in input".into())),
                }
            }
        };
        self.linalg_cross(other, d)
    }

    /// `torch.linalg.cross`: cross product of 3-vectors along `dim` (inputs broadcast).
    pub(crate) fn linalg_cross_raw(&self, other: &Tensor, dim: i64) -> Result<Tensor> {
        if self.ndim() != other.ndim() {
            return Err(rt(
                "linalg.cross: inputs must have the same number of dimensions.".into(),
            ));
        }
        if self.dtype() != other.dtype() {
            return Err(rt(format!(
                "linalg.cross: expected input and other to have the same dtype, but got {} and {}",
                self.dtype().torch_name(),
                other.dtype().torch_name()
            )));
        }
        let dt = self.dtype();
        if dt == DType::Bool {
            return Err(Error::UnsupportedDType {
                op: "linalg_cross",
                dtype: dt,
            });
        }
        let shape = broadcast_shapes("linalg.cross", self.shape(), other.shape())?;
        if shape.is_empty() {
            return Err(rt(format!(
                "linalg.cross: inputs dimension {dim} must have length 3. Got 0-d tensors"
            )));
        }
        let d = normalize_dim(dim, shape.len())?;
        if self.shape()[d] != 3 || other.shape()[d] != 3 {
            return Err(rt(format!(
                "linalg.cross: inputs dimension {dim} must have length 3. Got {} and {}",
                self.shape()[d],
                other.shape()[d]
            )));
        }
        if self.device().is_cuda() || other.device().is_cuda() {
            return device::cross(self, other, &shape, d);
        }
        let cd = dt.compute_dtype();
        let nd = shape.len();
        // Move `d` last, broadcast, materialise rows of 3.
        let mut perm: Vec<i64> = (0..nd as i64).filter(|&x| x != d as i64).collect();
        perm.push(d as i64);
        let prep = |t: &Tensor| -> Result<Tensor> {
            t.to_dtype(cd)
                .broadcast_to(&shape)?
                .permute(&perm)
                .map(|x| x.contiguous())
        };
        let (a, b) = (prep(self)?, prep(other)?);
        let pshape: Vec<usize> = a.shape().to_vec();
        let out = with_dtype!(cd, T, {
            let (sa, sb) = (a.to_vec::<T>()?, b.to_vec::<T>()?);
            let mut o = vec![T::zero(); sa.len()];
            for ((o, x), y) in o.chunks_mut(3).zip(sa.chunks(3)).zip(sb.chunks(3)) {
                o[0] = x[1].mul(y[2]).sub(x[2].mul(y[1]));
                o[1] = x[2].mul(y[0]).sub(x[0].mul(y[2]));
                o[2] = x[0].mul(y[1]).sub(x[1].mul(y[0]));
            }
            Tensor::from_vec_unchecked(o, &pshape)
        });
        // Inverse permutation back to the broadcast shape.
        let mut inv = vec![0i64; nd];
        for (i, &p) in perm.iter().enumerate() {
            inv[p as usize] = i as i64;
        }
        Ok(out.permute(&inv)?.contiguous().to_dtype(dt))
    }

    // ================================================================ einsum

    /// Einstein summation over `operands` (`torch.einsum`): implicit or explicit output,
    /// repeated subscripts (diagonals), ellipsis broadcasting. Operands are contracted left
    /// to right, each step a batched matmul after permutes/reshapes.
    pub fn einsum(equation: &str, operands: &[Tensor]) -> Result<Tensor> {
        einsum_impl(equation, operands)
    }

    // ================================================================ matrix functions

    /// `matrix_power(n)`: repeated matmul (`n < 0` inverts first; `n == 0` gives identity).
    pub fn matrix_power(&self, n: i64) -> Result<Tensor> {
        let nd = self.ndim();
        if nd < 2 {
            return Err(rt(
                "linalg.matrix_power: The input tensor A must have at least 2 dimensions.".into(),
            ));
        }
        let (r, c) = (self.shape()[nd - 2], self.shape()[nd - 1]);
        if r != c {
            return Err(rt(format!(
                "linalg.matrix_power: A must be batches of square matrices, but they are {r} by {c} matrices"
            )));
        }
        if n == 0 {
            let eye = with_dtype!(self.dtype(), T, {
                let mut v = vec![T::zero(); r * r];
                for i in 0..r {
                    v[i * r + i] = T::one();
                }
                Tensor::from_vec_unchecked(v, &[r, r])
            });
            let eye = eye.to_device(self.device())?;
            return Ok(eye.broadcast_to(self.shape())?.contiguous());
        }
        let base = if n < 0 {
            self.linalg_inv()?
        } else {
            self.clone()
        };
        let mut e = n.unsigned_abs();
        let mut result: Option<Tensor> = None;
        let mut p = base;
        loop {
            if e & 1 == 1 {
                result = Some(match result {
                    None => p.clone(),
                    Some(r) => matmul_core(&r, &p, None)?,
                });
            }
            e >>= 1;
            if e == 0 {
                break;
            }
            p = matmul_core(&p, &p, None)?;
        }
        let r = result.unwrap_or_else(|| self.clone());
        // Return a fresh tensor even for n == 1 (PyTorch returns a copy).
        Ok(if r.same_tensor(self) {
            r.contiguous_recorded()
        } else {
            r
        })
    }

    /// `linalg.multi_dot`: chain product with an optimal multiplication order; the first and
    /// last operands may be 1-d.
    pub fn multi_dot(tensors: &[Tensor]) -> Result<Tensor> {
        let n = tensors.len();
        if n < 2 {
            return Err(rt(format!(
                "multi_dot(): expected at least 2 tensors but got {n}"
            )));
        }
        let dt = tensors[0].dtype();
        let mut mats = Vec::with_capacity(n);
        for (i, t) in tensors.iter().enumerate() {
            if t.dtype() != dt {
                return Err(rt(format!(
                    "multi_dot(): all tensors must have be the same dtype but tensor 0 is {} and tensor {i} is {}",
                    dt.torch_name(),
                    t.dtype().torch_name()
                )));
            }
            let m = if i == 0 {
                match t.ndim() {
                    1 => t.unsqueeze(0)?,
                    2 => t.clone(),
                    d => {
                        return Err(rt(format!(
                            "multi_dot(): the first tensor must be 1D or 2D but got {d}D"
                        )))
                    }
                }
            } else if i == n - 1 {
                match t.ndim() {
                    1 => t.unsqueeze(1)?,
                    2 => t.clone(),
                    d => {
                        return Err(rt(format!(
                            "multi_dot(): the last tensor must be 1D or 2D but got {d}D"
                        )))
                    }
                }
            } else if t.ndim() == 2 {
                t.clone()
            } else {
                return Err(rt(format!(
                    "multi_dot(): tensor {i} must be 2D but got {}D",
                    t.ndim()
                )));
            };
            mats.push(m);
        }
        for i in 0..n - 1 {
            let (a, b) = (mats[i].shape(), mats[i + 1].shape());
            if a[1] != b[0] {
                return Err(rt(format!(
                    "multi_dot(): tensors {i} and {} with shapes {} and {} cannot be multiplied",
                    i + 1,
                    shape_str(tensors[i].shape()),
                    shape_str(tensors[i + 1].shape())
                )));
            }
        }
        // Matrix-chain order (dynamic programming over dims p0..pn).
        let p: Vec<usize> = std::iter::once(mats[0].shape()[0])
            .chain(mats.iter().map(|m| m.shape()[1]))
            .collect();
        let mut cost = vec![vec![0u128; n]; n];
        let mut split = vec![vec![0usize; n]; n];
        for len in 1..n {
            for i in 0..n - len {
                let j = i + len;
                cost[i][j] = u128::MAX;
                for s in i..j {
                    let c = cost[i][s]
                        + cost[s + 1][j]
                        + (p[i] as u128) * (p[s + 1] as u128) * (p[j + 1] as u128);
                    if c < cost[i][j] {
                        cost[i][j] = c;
                        split[i][j] = s;
                    }
                }
            }
        }
        fn chain(mats: &[Tensor], split: &[Vec<usize>], i: usize, j: usize) -> Result<Tensor> {
            if i == j {
                return Ok(mats[i].clone());
            }
            let s = split[i][j];
            let l = chain(mats, split, i, s)?;
            let r = chain(mats, split, s + 1, j)?;
            matmul_core(&l, &r, None)
        }
        let mut r = chain(&mats, &split, 0, n - 1)?;
        if tensors[n - 1].ndim() == 1 {
            r = r.squeeze(Some(&[1]))?;
        }
        if tensors[0].ndim() == 1 {
            r = r.squeeze(Some(&[0]))?;
        }
        Ok(r)
    }
}

// ==================================================================== einsum internals

/// Label ids: 0..26 'A'..'Z', 26..52 'a'..'z', 52.. ellipsis dims.
const ELL: usize = 52;

fn label_char(l: usize) -> String {
    if l < 26 {
        ((b'A' + l as u8) as char).to_string()
    } else if l < ELL {
        ((b'a' + (l - 26) as u8) as char).to_string()
    } else {
        "...".into()
    }
}

/// Parse one term: `Some(label)` per letter, `None` for the ellipsis.
fn parse_term(term: &str, start: usize, what: &str) -> Result<Vec<Option<usize>>> {
    let b = term.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut seen_ell = false;
    while i < b.len() {
        let c = b[i];
        if c == b'.' {
            if !(i + 2 < b.len() && b[i + 1] == b'.' && b[i + 2] == b'.') {
                return Err(rt(format!(
                    "einsum(): found '.' for {what} that is not part of any ellipsis"
                )));
            }
            if seen_ell {
                return Err(rt(format!(
                    "einsum(): found '.' for {what} for which an ellipsis was already found"
                )));
            }
            seen_ell = true;
            out.push(None);
            i += 3;
            continue;
        }
        let l = match c {
            b'A'..=b'Z' => (c - b'A') as usize,
            b'a'..=b'z' => 26 + (c - b'a') as usize,
            _ => {
                return Err(rt(format!(
                    "einsum(): invalid subscript given at index {} in the equation string, subscripts must be in [a-zA-Z]",
                    start + i
                )))
            }
        };
        out.push(Some(l));
        i += 1;
    }
    Ok(out)
}

/// Sum `t` (labelled `labels`) over the labels in `which`; returns the reduced tensor and its
/// labels.
fn sum_labels(t: &Tensor, labels: &[usize], which: &[usize]) -> Result<(Tensor, Vec<usize>)> {
    if which.is_empty() {
        return Ok((t.clone(), labels.to_vec()));
    }
    let kept: Vec<usize> = (0..labels.len())
        .filter(|&i| !which.contains(&labels[i]))
        .collect();
    let summed: Vec<usize> = (0..labels.len())
        .filter(|&i| which.contains(&labels[i]))
        .collect();
    let perm: Vec<i64> = kept.iter().chain(&summed).map(|&d| d as i64).collect();
    let kshape: Vec<i64> = kept.iter().map(|&d| t.shape()[d] as i64).collect();
    let ssz: usize = summed.iter().map(|&d| t.shape()[d]).product();
    let ksz: i64 = kshape.iter().product();
    let x = t.permute(&perm)?.reshape(&[ksz, ssz as i64])?;
    let ones = Tensor::full_on(t.device(), &[ssz, 1], crate::Scalar::Int(1), t.dtype())?;
    let r = matmul_core(&x, &ones, None)?.reshape(&kshape)?;
    Ok((r, kept.iter().map(|&d| labels[d]).collect()))
}

fn einsum_impl(equation: &str, operands: &[Tensor]) -> Result<Tensor> {
    if operands.is_empty() {
        return Err(rt("einsum(): must provide at least one operand".into()));
    }
    let eq: String = equation.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, rhs) = match eq.find("->") {
        Some(p) => (&eq[..p], Some((&eq[p + 2..], p + 2))),
        None => (&eq[..], None),
    };
    let terms: Vec<&str> = lhs.split(',').collect();
    if terms.len() < operands.len() {
        return Err(rt(
            "einsum(): more operands were provided than specified in the equation".into(),
        ));
    }
    if terms.len() > operands.len() {
        return Err(rt(
            "einsum(): fewer operands were provided than specified in the equation".into(),
        ));
    }
    let dt = operands[0].dtype();
    for t in operands {
        if t.dtype() != dt {
            return Err(rt(format!(
                "einsum(): expected all operands to have the same dtype, but got {} and {}",
                cpp_name(dt),
                cpp_name(t.dtype())
            )));
        }
    }
    // Parse terms and expand ellipses.
    let mut parsed = Vec::with_capacity(terms.len());
    let mut pos = 0;
    for (i, term) in terms.iter().enumerate() {
        parsed.push(parse_term(term, pos, &format!("operand {i}"))?);
        pos += term.len() + 1;
    }
    let mut ell_dims = vec![0usize; operands.len()];
    for (i, (p, t)) in parsed.iter().zip(operands).enumerate() {
        let letters = p.iter().filter(|x| x.is_some()).count();
        let has_ell = p.len() != letters;
        if !has_ell && letters != t.ndim() {
            return Err(rt(format!(
                "einsum(): the number of subscripts in the equation ({letters}) does not match the number of dimensions ({}) for operand {i} and no ellipsis was given",
                t.ndim()
            )));
        }
        if has_ell && letters > t.ndim() {
            return Err(rt(format!(
                "einsum(): the number of subscripts in the equation ({letters}) is more than the number of dimensions ({}) for operand {i}",
                t.ndim()
            )));
        }
        ell_dims[i] = t.ndim() - letters;
    }
    let max_ell = ell_dims.iter().copied().max().unwrap_or(0);
    let mut labels: Vec<Vec<usize>> = Vec::with_capacity(operands.len());
    for (p, &e) in parsed.iter().zip(&ell_dims) {
        let mut l = Vec::new();
        for x in p {
            match x {
                Some(c) => l.push(*c),
                None => l.extend(ELL + max_ell - e..ELL + max_ell),
            }
        }
        labels.push(l);
    }
    // Output labels.
    let mut counts = [0usize; ELL];
    for l in &labels {
        for &x in l {
            if x < ELL {
                counts[x] += 1;
            }
        }
    }
    let out_labels: Vec<usize> = match rhs {
        Some((r, start)) => {
            let p = parse_term(r, start, "output")?;
            let mut out = Vec::new();
            for x in p {
                match x {
                    Some(c) => {
                        if out.contains(&c) {
                            return Err(rt(format!(
                                "einsum(): output subscript {} appears more than once in the output",
                                label_char(c)
                            )));
                        }
                        if counts[c] == 0 {
                            return Err(rt(format!(
                                "einsum(): output subscript {} does not appear in the equation for any input operand",
                                label_char(c)
                            )));
                        }
                        out.push(c);
                    }
                    None => out.extend(ELL..ELL + max_ell),
                }
            }
            out
        }
        None => (ELL..ELL + max_ell)
            .chain((0..ELL).filter(|&c| counts[c] == 1))
            .collect(),
    };
    // Sizes must agree (or broadcast from 1) across operands.
    let mut sizes: std::collections::HashMap<usize, (usize, usize)> = Default::default();
    for (i, (l, t)) in labels.iter().zip(operands).enumerate() {
        for (&x, &s) in l.iter().zip(t.shape()) {
            let e = sizes.entry(x).or_insert((s, i));
            if e.0 != s && e.0 != 1 && s != 1 && e.1 != i {
                return Err(rt(format!(
                    "einsum(): operands do not broadcast with remapped shapes [original->remapped]: subscript {} has size {} for operand {} but size {s} for operand {i}",
                    label_char(x),
                    e.0,
                    e.1
                )));
            }
            if e.0 == 1 {
                *e = (s, i);
            }
        }
    }
    // Diagonals for repeated labels within one operand.
    let mut ops: Vec<(Tensor, Vec<usize>)> = Vec::with_capacity(operands.len());
    for (i, (l, t)) in labels.iter().zip(operands).enumerate() {
        let mut uniq: Vec<usize> = Vec::new();
        let lay = t.layout();
        let mut shape = Dims::new();
        let mut strides = Dims::new();
        for (d, &x) in l.iter().enumerate() {
            if let Some(u) = uniq.iter().position(|&y| y == x) {
                if shape[u] != lay.shape[d] {
                    return Err(rt(format!(
                        "einsum(): subscript {} is repeated for operand {i} but the sizes don't match, {} != {}",
                        label_char(x),
                        shape[u],
                        lay.shape[d]
                    )));
                }
                strides[u] += lay.strides[d];
            } else {
                uniq.push(x);
                shape.push(lay.shape[d]);
                strides.push(lay.strides[d]);
            }
        }
        let view = if uniq.len() == l.len() {
            t.clone()
        } else {
            let v = t.with_layout(Layout {
                shape,
                strides,
                offset: lay.offset,
            });
            // Record the diagonal view for autograd: re-apply the same dim merge to a
            // tensor of t's shape (its own strides).
            let map: Vec<usize> = l
                .iter()
                .map(|x| uniq.iter().position(|y| y == x).unwrap_or(0))
                .collect();
            let nu = uniq.len();
            let f: super::view::ViewFn = std::sync::Arc::new(move |z: &Tensor| {
                let lz = z.layout();
                let mut sh = Dims::from_elem(0, nu);
                let mut st = Dims::from_elem(0, nu);
                for (d, &u) in map.iter().enumerate() {
                    sh[u] = lz.shape[d];
                    st[u] += lz.strides[d];
                }
                Ok(z.with_layout(Layout {
                    shape: sh,
                    strides: st,
                    offset: lz.offset,
                }))
            });
            super::view::record_partial_view("DiagonalBackward0", t, v, f)
        };
        ops.push((view, uniq));
    }
    // Sum out labels that appear in one operand only and not in the output.
    for i in 0..ops.len() {
        let which: Vec<usize> = ops[i]
            .1
            .iter()
            .copied()
            .filter(|x| {
                !out_labels.contains(x)
                    && ops
                        .iter()
                        .enumerate()
                        .all(|(j, o)| j == i || !o.1.contains(x))
            })
            .collect();
        if !which.is_empty() {
            ops[i] = sum_labels(&ops[i].0, &ops[i].1, &which)?;
        }
    }
    // Contract left to right.
    let mut it = ops.into_iter();
    let (mut cur, mut cur_l) = it.next().expect("at least one operand");
    let rest: Vec<(Tensor, Vec<usize>)> = it.collect();
    for (idx, (t2, l2)) in rest.iter().enumerate() {
        let needed = |x: usize| -> bool {
            out_labels.contains(&x) || rest[idx + 1..].iter().any(|(_, l)| l.contains(&x))
        };
        let (mut t1, mut l1) = (cur, cur_l);
        let (mut t2, mut l2) = (t2.clone(), l2.clone());
        // Labels only on one side that are not needed later: sum them out now.
        let s1: Vec<usize> = l1
            .iter()
            .copied()
            .filter(|x| !l2.contains(x) && !needed(*x))
            .collect();
        (t1, l1) = sum_labels(&t1, &l1, &s1)?;
        let s2: Vec<usize> = l2
            .iter()
            .copied()
            .filter(|x| !l1.contains(x) && !needed(*x))
            .collect();
        (t2, l2) = sum_labels(&t2, &l2, &s2)?;
        // Contracted labels where one side has size 1 (broadcast): sum the other side and drop
        // the size-1 dim.
        let contract_bc: Vec<usize> = l1
            .iter()
            .copied()
            .filter(|x| l2.contains(x) && !needed(*x))
            .filter(|x| {
                let s1 = t1.shape()[l1.iter().position(|y| y == x).unwrap_or(0)];
                let s2 = t2.shape()[l2.iter().position(|y| y == x).unwrap_or(0)];
                s1 != s2
            })
            .collect();
        for x in contract_bc {
            let p1 = l1.iter().position(|&y| y == x).unwrap_or(0);
            let p2 = l2.iter().position(|&y| y == x).unwrap_or(0);
            if t1.shape()[p1] == 1 {
                t1 = t1.select(p1 as i64, 0)?;
                l1.remove(p1);
                (t2, l2) = sum_labels(&t2, &l2, &[x])?;
            } else {
                t2 = t2.select(p2 as i64, 0)?;
                l2.remove(p2);
                (t1, l1) = sum_labels(&t1, &l1, &[x])?;
            }
        }
        let batch: Vec<usize> = l1
            .iter()
            .copied()
            .filter(|x| l2.contains(x) && needed(*x))
            .collect();
        let contract: Vec<usize> = l1
            .iter()
            .copied()
            .filter(|x| l2.contains(x) && !needed(*x))
            .collect();
        let left: Vec<usize> = l1.iter().copied().filter(|x| !l2.contains(x)).collect();
        let right: Vec<usize> = l2.iter().copied().filter(|x| !l1.contains(x)).collect();
        let pos = |l: &[usize], x: usize| l.iter().position(|&y| y == x).unwrap_or(0);
        let sz = |t: &Tensor, l: &[usize], x: usize| t.shape()[pos(l, x)];
        let perm1: Vec<i64> = batch
            .iter()
            .chain(&left)
            .chain(&contract)
            .map(|&x| pos(&l1, x) as i64)
            .collect();
        let perm2: Vec<i64> = batch
            .iter()
            .chain(&contract)
            .chain(&right)
            .map(|&x| pos(&l2, x) as i64)
            .collect();
        let ksz: usize = contract.iter().map(|&x| sz(&t1, &l1, x)).product();
        let lsz: Vec<usize> = left.iter().map(|&x| sz(&t1, &l1, x)).collect();
        let rsz: Vec<usize> = right.iter().map(|&x| sz(&t2, &l2, x)).collect();
        let mut shape1: Vec<i64> = batch.iter().map(|&x| sz(&t1, &l1, x) as i64).collect();
        let mut shape2: Vec<i64> = batch.iter().map(|&x| sz(&t2, &l2, x) as i64).collect();
        let bshape: Vec<i64> = batch
            .iter()
            .map(|&x| sz(&t1, &l1, x).max(sz(&t2, &l2, x)) as i64)
            .collect();
        shape1.push(lsz.iter().product::<usize>() as i64);
        shape1.push(ksz as i64);
        shape2.push(ksz as i64);
        shape2.push(rsz.iter().product::<usize>() as i64);
        let a = t1.permute(&perm1)?.reshape(&shape1)?;
        let b = t2.permute(&perm2)?.reshape(&shape2)?;
        let r = matmul_core(&a, &b, None)?;
        let mut rshape = bshape;
        rshape.extend(lsz.iter().chain(&rsz).map(|&s| s as i64));
        cur = r.reshape(&rshape)?;
        cur_l = batch.iter().chain(&left).chain(&right).copied().collect();
    }
    // Labels not in the output (possible with a single operand): sum them.
    let extra: Vec<usize> = cur_l
        .iter()
        .copied()
        .filter(|x| !out_labels.contains(x))
        .collect();
    (cur, cur_l) = sum_labels(&cur, &cur_l, &extra)?;
    let perm: Vec<i64> = out_labels
        .iter()
        .map(|x| cur_l.iter().position(|y| y == x).unwrap_or(0) as i64)
        .collect();
    cur.permute(&perm)
}

// ==================================================================== decompositions

fn linalg_dtype(t: &Tensor, op: &str) -> Result<DType> {
    match t.dtype() {
        d @ (DType::F32 | DType::F64) => Ok(d),
        d @ (DType::F16 | DType::BF16) => Err(rt(format!(
            "{op}: Low precision dtypes not supported. Got {}",
            d.torch_name()
        ))),
        d => Err(rt(format!(
            "{op}: Expected a floating point or complex tensor as input. Got {}",
            d.torch_name()
        ))),
    }
}

fn check_matrix(t: &Tensor, op: &str) -> Result<(usize, usize)> {
    let nd = t.ndim();
    if nd < 2 {
        return Err(rt(format!(
            "{op}: The input tensor A must have at least 2 dimensions."
        )));
    }
    Ok((t.shape()[nd - 2], t.shape()[nd - 1]))
}

fn check_square(t: &Tensor, op: &str) -> Result<usize> {
    let (m, n) = check_matrix(t, op)?;
    if m != n {
        return Err(rt(format!(
            "{op}: A must be batches of square matrices, but they are {m} by {n} matrices"
        )));
    }
    Ok(n)
}

fn batch_shape(t: &Tensor) -> Vec<usize> {
    t.shape()[..t.ndim() - 2].to_vec()
}

fn with_shape(mut batch: Vec<usize>, tail: &[usize]) -> Vec<usize> {
    batch.extend_from_slice(tail);
    batch
}

/// Run `f` on each `per`-element matrix of `data` (in parallel when batched) and collect
/// the results, or the first error tagged with its batch index.
fn par_batches<T: Sync, R: Send>(
    data: &[T],
    per: usize,
    batch: usize,
    f: impl Fn(&[T]) -> std::result::Result<R, DecompError> + Sync + Send,
) -> std::result::Result<Vec<R>, (usize, DecompError)> {
    let run = |i: usize| f(&data[i * per..(i + 1) * per]).map_err(|e| (i, e));
    if batch > 1 {
        (0..batch).into_par_iter().map(run).collect()
    } else {
        (0..batch).map(run).collect()
    }
}

pub(super) fn decomp_error(op: &str, batched: bool, (bi, e): (usize, DecompError)) -> Error {
    let prefix = if batched {
        format!("{op}: (Batch element {bi}): ")
    } else {
        format!("{op}: ")
    };
    let msg = match e {
        DecompError::Singular(i) => {
            if op == "linalg.solve" {
                return rt(
                    "torch.linalg.solve: The solver failed because the input matrix is singular."
                        .into(),
                );
            }
            format!("The diagonal element {i} is zero, the inversion could not be completed because the input matrix is singular.")
        }
        DecompError::NotPositiveDefinite(k) => format!(
            "The factorization could not be completed because the input is not positive-definite (the leading minor of order {k} is not positive-definite)."
        ),
        DecompError::NoConvergence => {
            if op.contains("eig") {
                "The algorithm failed to converge because the input matrix is ill-conditioned or has too many repeated eigenvalues.".to_string()
            } else {
                "The algorithm failed to converge because the input matrix is ill-conditioned or has too many repeated singular values.".to_string()
            }
        }
    };
    rt(prefix + &msg)
}

/// Contiguous data of a float tensor (`T` must be its dtype).
fn data<T: LinalgElement>(t: &Tensor) -> Result<Vec<T>> {
    t.to_vec::<T>()
}

fn flatten<T>(v: Vec<Vec<T>>) -> Vec<T> {
    v.into_iter().flatten().collect()
}

/// Run `$body` with `$T` bound to f32 or f64 (the caller checked the dtype).
macro_rules! with_linalg_dtype {
    ($dt:expr, $T:ident, $body:block) => {
        match $dt {
            DType::F32 => {
                type $T = f32;
                $body
            }
            _ => {
                type $T = f64;
                $body
            }
        }
    };
}

fn eps(dt: DType) -> f64 {
    if dt == DType::F32 {
        f32::EPSILON as f64
    } else {
        f64::EPSILON
    }
}

/// Options for `linalg.matrix_norm`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MatrixNormOrd {
    Fro,
    Nuc,
    P(f64),
}

/// The named results of `linalg.lstsq`.
pub struct Lstsq {
    pub solution: Tensor,
    pub residuals: Tensor,
    pub rank: Tensor,
    pub singular_values: Tensor,
}

impl Tensor {
    /// Swap the last two dims (`mT`); private so it cannot clash with the view ops' own.
    fn swap_last2(&self) -> Result<Tensor> {
        if self.ndim() < 2 {
            return Err(rt(format!(
                "tensor.mT is only supported on matrices or batches of matrices. Got {}-D tensor.",
                self.ndim()
            )));
        }
        self.transpose(-2, -1)
    }

    /// `linalg.inv`.
    pub(crate) fn linalg_inv_raw(&self) -> Result<Tensor> {
        let op = "linalg.inv";
        let dt = linalg_dtype(self, op)?;
        let n = check_square(self, op)?;
        if device::on_device(&[self]) {
            return device::inv(self);
        }
        cuda_via_host!("linalg.inv", [self], |a| a.linalg_inv_raw());
        let bs = batch_shape(self);
        let nb: usize = bs.iter().product();
        with_linalg_dtype!(dt, T, {
            let d = data::<T>(self)?;
            let r = par_batches(&d, n * n, nb, |a| kern::inv(a, n))
                .map_err(|e| decomp_error(op, !bs.is_empty(), e))?;
            Tensor::from_vec(flatten(r), &with_shape(bs, &[n, n]))
        })
    }

    /// `linalg.det` (batched).
    pub(crate) fn linalg_det_raw(&self) -> Result<Tensor> {
        let op = "linalg.det";
        let dt = linalg_dtype(self, op)?;
        let n = check_square(self, op)?;
        if device::on_device(&[self]) {
            return device::det(self);
        }
        cuda_via_host!("linalg.det", [self], |a| a.linalg_det_raw());
        let bs = batch_shape(self);
        let nb: usize = bs.iter().product();
        with_linalg_dtype!(dt, T, {
            let d = data::<T>(self)?;
            let r = par_batches(&d, n * n, nb, |a| Ok(kern::det(a, n)))
                .map_err(|e| decomp_error(op, false, e))?;
            Tensor::from_vec(r, &bs)
        })
    }

    /// `linalg.slogdet`: `(sign, log|det|)`.
    pub(crate) fn linalg_slogdet_raw(&self) -> Result<(Tensor, Tensor)> {
        let op = "linalg.slogdet";
        let dt = linalg_dtype(self, op)?;
        let n = check_square(self, op)?;
        if device::on_device(&[self]) {
            return device::slogdet(self);
        }
        cuda_via_host!("linalg.slogdet", [self], |a| a.linalg_slogdet_raw());
        let bs = batch_shape(self);
        let nb: usize = bs.iter().product();
        with_linalg_dtype!(dt, T, {
            let d = data::<T>(self)?;
            let r = par_batches(&d, n * n, nb, |a| Ok(kern::slogdet(a, n)))
                .map_err(|e| decomp_error(op, false, e))?;
            let (s, l): (Vec<T>, Vec<T>) = r.into_iter().unzip();
            Ok((Tensor::from_vec(s, &bs)?, Tensor::from_vec(l, &bs)?))
        })
    }

    /// `logdet`: `log(det)`, NaN for negative determinants, -inf for singular matrices.
    pub(crate) fn logdet_raw(&self) -> Result<Tensor> {
        if device::on_device(&[self]) {
            linalg_dtype(self, "logdet")?;
            check_square(self, "logdet")?;
            return device::logdet(self);
        }
        cuda_via_host!("logdet", [self], |a| a.logdet_raw());
        let (s, l) = self.linalg_slogdet()?;
        with_linalg_dtype!(self.dtype(), T, {
            let (s, l) = (s.to_vec::<T>()?, l.to_vec::<T>()?);
            let v: Vec<T> = s
                .iter()
                .zip(&l)
                .map(|(&s, &l)| if s < 0.0 { T::NAN } else { l })
                .collect();
            Tensor::from_vec(v, &batch_shape(self))
        })
    }

    /// `linalg.solve(A, B, left)`: `A X = B` (or `X A = B` when `!left`); `B` may be a
    /// (batch of) vector(s); batch dims broadcast.
    pub(crate) fn linalg_solve_raw(&self, b: &Tensor, left: bool) -> Result<Tensor> {
        if !device::on_device(&[self, b]) {
            cuda_via_host!("linalg.solve", [self, b], |a, b| a
                .linalg_solve_raw(&b, left));
        }
        let op = "linalg.solve";
        let dt = linalg_dtype(self, op)?;
        let n = check_square(self, op)?;
        if b.dtype() != dt {
            return Err(rt(format!(
                "linalg.solve: Expected A and B to have the same dtype, but found A of type {} and B of type {} instead",
                dt.torch_name(),
                b.dtype().torch_name()
            )));
        }
        let vector = b.ndim() == 1
            || (b.ndim() + 1 == self.ndim() && b.shape() == &self.shape()[..self.ndim() - 1]);
        if !left && !vector {
            return Ok(self
                .swap_last2()?
                .linalg_solve(&b.swap_last2()?, true)?
                .swap_last2()?
                .contiguous());
        }
        let a = if left {
            self.clone()
        } else {
            self.swap_last2()?
        };
        let bm = if vector { b.unsqueeze(-1)? } else { b.clone() };
        if bm.ndim() < 2 || bm.shape()[bm.ndim() - 2] != n {
            return Err(rt(format!(
                "linalg.solve: Incompatible shapes of A and B for the equation AX = B ({} and {})",
                shape_str(&self.shape()[self.ndim() - 2..]),
                shape_str(&bm.shape()[bm.ndim().saturating_sub(2)..])
            )));
        }
        let k = bm.shape()[bm.ndim() - 1];
        let bs = broadcast_shapes(op, &batch_shape(&a), &batch_shape(&bm))?.to_vec();
        let nb: usize = bs.iter().product();
        let a = a.broadcast_to(&with_shape(bs.clone(), &[n, n]))?;
        let bm = bm.broadcast_to(&with_shape(bs.clone(), &[n, k]))?;
        let r = if device::on_device(&[&a, &bm]) {
            device::solve(op, &a, &bm)?
        } else {
            with_linalg_dtype!(dt, T, {
                let ad = data::<T>(&a)?;
                let bd = data::<T>(&bm)?;
                let solve_one = |i: usize| {
                    let (a, b) = (
                        &ad[i * n * n..(i + 1) * n * n],
                        &bd[i * n * k..(i + 1) * n * k],
                    );
                    kern::solve(a, n, b, k).map_err(|e| (i, e))
                };
                let r = if nb > 1 {
                    (0..nb)
                        .into_par_iter()
                        .map(solve_one)
                        .collect::<std::result::Result<Vec<_>, _>>()
                } else {
                    (0..nb)
                        .map(solve_one)
                        .collect::<std::result::Result<Vec<_>, _>>()
                }
                .map_err(|e| decomp_error(op, !bs.is_empty(), e))?;
                Tensor::from_vec(flatten(r), &with_shape(bs.clone(), &[n, k]))?
            })
        };
        if vector {
            r.squeeze(Some(&[-1]))
        } else {
            Ok(r)
        }
    }

    /// `linalg.cholesky(A, upper)`.
    pub(crate) fn linalg_cholesky_raw(&self, upper: bool) -> Result<Tensor> {
        let op = "linalg.cholesky";
        let dt = linalg_dtype(self, op)?;
        let n = check_square(self, op)?;
        if device::on_device(&[self]) {
            return device::cholesky(self, upper);
        }
        cuda_via_host!("linalg.cholesky", [self], |a| a.linalg_cholesky_raw(upper));
        let bs = batch_shape(self);
        let nb: usize = bs.iter().product();
        with_linalg_dtype!(dt, T, {
            let d = data::<T>(self)?;
            let r = par_batches(&d, n * n, nb, |a| kern::cholesky(a, n, upper))
                .map_err(|e| decomp_error(op, !bs.is_empty(), e))?;
            Tensor::from_vec(flatten(r), &with_shape(bs, &[n, n]))
        })
    }

    /// `linalg.solve_triangular(A, B, upper, left, unitriangular)`: `A X = B` (or `X A = B`
    /// when `!left`) for triangular `A`, batch dims broadcast. Only `A`'s triangle is read.
    pub(crate) fn linalg_solve_triangular_raw(
        &self,
        b: &Tensor,
        upper: bool,
        left: bool,
        unitriangular: bool,
    ) -> Result<Tensor> {
        if !device::on_device(&[self, b]) {
            cuda_via_host!("linalg.solve_triangular", [self, b], |a, b| a
                .linalg_solve_triangular_raw(&b, upper, left, unitriangular));
        }
        let op = "linalg.solve_triangular";
        for (t, name) in [(self, "A"), (b, "B")] {
            if t.ndim() < 2 {
                return Err(rt(format!(
                    "{op}: The input tensor {name} must have at least 2 dimensions."
                )));
            }
        }
        let dt = linalg_dtype(self, op)?;
        let n = check_square(self, op)?;
        if b.dtype() != dt {
            return Err(rt(format!(
                "{op}: Expected A and B to have the same dtype, but found A of type {} and B of type {} instead",
                dt.torch_name(),
                b.dtype().torch_name()
            )));
        }
        let (br, bc) = (b.shape()[b.ndim() - 2], b.shape()[b.ndim() - 1]);
        if (left && br != n) || (!left && bc != n) {
            return Err(rt(format!(
                "{op}: Incompatible shapes of A and B for the equation {} ({n}x{n} and {br}x{bc})",
                if left { "AX = B" } else { "XA = B" }
            )));
        }
        if !left {
            // X A = B  <=>  A^T X^T = B^T, and A^T keeps the other triangle.
            return Ok(self
                .swap_last2()?
                .linalg_solve_triangular_raw(&b.swap_last2()?, !upper, true, unitriangular)?
                .swap_last2()?
                .contiguous());
        }
        let k = bc;
        let bs = broadcast_shapes(op, &batch_shape(self), &batch_shape(b))?.to_vec();
        let nb: usize = bs.iter().product();
        let a = self.broadcast_to(&with_shape(bs.clone(), &[n, n]))?;
        let bm = b.broadcast_to(&with_shape(bs.clone(), &[n, k]))?;
        if device::on_device(&[&a, &bm]) {
            return device::solve_triangular(&a, &bm, upper, unitriangular);
        }
        with_linalg_dtype!(dt, T, {
            let ad = data::<T>(&a)?;
            let bd = data::<T>(&bm)?;
            let solve = |i: usize| {
                kern::solve_triangular(
                    &ad[i * n * n..(i + 1) * n * n],
                    n,
                    &bd[i * n * k..(i + 1) * n * k],
                    k,
                    upper,
                    unitriangular,
                )
            };
            let r: Vec<Vec<T>> = if nb > 1 {
                (0..nb).into_par_iter().map(solve).collect()
            } else {
                (0..nb).map(solve).collect()
            };
            Tensor::from_vec(flatten(r), &with_shape(bs, &[n, k]))
        })
    }

    /// `linalg.lu_factor_ex(A)`: the packed `LU` (`..., m, n`), LAPACK's 1-based `pivots`
    /// (`..., min(m, n)`, int32) and `info` (batch shape, int32: 0, or the first zero pivot).
    pub(crate) fn linalg_lu_factor_raw(&self) -> Result<(Tensor, Tensor, Tensor)> {
        let op = "linalg.lu_factor";
        let dt = linalg_dtype(self, op)?;
        let (m, n) = check_matrix(self, op)?;
        if device::on_device(&[self]) {
            return device::lu_factor(self);
        }
        cuda_via_host!("linalg.lu_factor", [self], |a| a.linalg_lu_factor_raw());
        let bs = batch_shape(self);
        let nb: usize = bs.iter().product();
        with_linalg_dtype!(dt, T, {
            let d = data::<T>(self)?;
            let r = par_batches(&d, m * n, nb, |a| Ok(kern::lu_factor(a, m, n)))
                .map_err(|e| decomp_error(op, false, e))?;
            let (mut lu, mut piv, mut info) = (Vec::new(), Vec::new(), Vec::new());
            for f in r {
                lu.extend(f.lu);
                piv.extend(f.pivots);
                info.push(f.info);
            }
            Ok((
                Tensor::from_vec(lu, &with_shape(bs.clone(), &[m, n]))?,
                Tensor::from_vec(piv, &with_shape(bs.clone(), &[m.min(n)]))?,
                Tensor::from_vec(info, &bs)?,
            ))
        })
    }

    /// The permutation matrices `P` (`..., m, m`, dtype `dt`, on the pivots' device) for which
    /// `A = P L U`, from LAPACK-style 1-based `pivots` (`..., k`).
    pub fn lu_pivots_to_permutation(pivots: &Tensor, m: usize, dt: DType) -> Result<Tensor> {
        let op = "lu_unpack";
        if pivots.dtype().is_floating_point() || pivots.dtype() == DType::Bool {
            return Err(Error::Type(format!(
                "{op}: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype. Got {}",
                pivots.dtype().torch_name()
            )));
        }
        if pivots.ndim() == 0 {
            return Err(rt(format!(
                "{op}: LU_pivots must have at least one dimension"
            )));
        }
        let k = pivots.shape()[pivots.ndim() - 1];
        if k > m {
            return Err(rt(format!(
                "{op}: {k} pivots cannot describe a permutation of {m} rows"
            )));
        }
        let bs = pivots.shape()[..pivots.ndim() - 1].to_vec();
        let host = crate::no_grad(|| pivots.to_device(crate::Device::Cpu))?;
        let p = host.to_dtype(DType::I64).to_vec::<i64>()?;
        if let Some(bad) = p.iter().find(|&&v| v < 1 || v as usize > m) {
            return Err(rt(format!(
                "{op}: pivots must be between 1 and {m}, but got {bad}"
            )));
        }
        if pivots.device().is_cuda() && matches!(dt, DType::F32 | DType::F64) {
            // Checked above (reading k ints per matrix); the m x m matrices are built there.
            return crate::cuda::linalg_ops::pivots_to_permutation(pivots, m, dt);
        }
        let nb: usize = bs.iter().product();
        let mut out = vec![0.0f64; nb * m * m];
        for b in 0..nb {
            let piv = &p[b * k..(b + 1) * k];
            let mat = &mut out[b * m * m..(b + 1) * m * m];
            let piv32: Vec<i32> = piv.iter().map(|&v| v as i32).collect();
            for (i, r) in kern::pivots_to_permutation(&piv32, m)
                .into_iter()
                .enumerate()
            {
                mat[r * m + i] = 1.0;
            }
        }
        Tensor::from_vec(out, &with_shape(bs, &[m, m]))?
            .to_dtype(dt)
            .to_device(pivots.device())
    }

    /// `linalg.qr(A, mode)` with mode "reduced", "complete" or "r" (Q empty).
    pub(crate) fn linalg_qr_raw(&self, mode: &str) -> Result<(Tensor, Tensor)> {
        let op = "linalg.qr";
        let dt = linalg_dtype(self, op)?;
        let (m, n) = check_matrix(self, op)?;
        let (complete, want_q) = match mode {
            "reduced" => (false, true),
            "complete" => (true, true),
            "r" => (false, false),
            _ => {
                return Err(rt(format!(
                    "qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or 'complete'"
                )))
            }
        };
        if device::on_device(&[self]) {
            return device::qr(self, complete, want_q);
        }
        cuda_via_host!("linalg.qr", [self], |a| a.linalg_qr_raw(mode));
        let k = m.min(n);
        let bs = batch_shape(self);
        let nb: usize = bs.iter().product();
        with_linalg_dtype!(dt, T, {
            let d = data::<T>(self)?;
            let r = par_batches(&d, m * n, nb, |a| Ok(kern::qr(a, m, n, complete, want_q)))
                .map_err(|e| decomp_error(op, false, e))?;
            let (qs, rs): (Vec<Vec<T>>, Vec<Vec<T>>) = r.into_iter().unzip();
            let qc = if complete { m } else { k };
            let rr = if complete { m } else { k };
            let q = if want_q {
                Tensor::from_vec(flatten(qs), &with_shape(bs.clone(), &[m, qc]))?
            } else {
                Tensor::zeros(&[0], dt)
            };
            let r = Tensor::from_vec(flatten(rs), &with_shape(bs, &[rr, n]))?;
            Ok((q, r))
        })
    }

    /// `linalg.svd(A, full_matrices)`: `(U, S, Vh)` with `S` descending.
    pub(crate) fn linalg_svd_raw(&self, full_matrices: bool) -> Result<(Tensor, Tensor, Tensor)> {
        let op = "linalg.svd";
        let dt = linalg_dtype(self, op)?;
        let (m, n) = check_matrix(self, op)?;
        if device::on_device(&[self]) {
            return device::svd(self, Some(full_matrices));
        }
        cuda_via_host!("linalg.svd", [self], |a| a.linalg_svd_raw(full_matrices));
        let k = m.min(n);
        let bs = batch_shape(self);
        let nb: usize = bs.iter().product();
        with_linalg_dtype!(dt, T, {
            let d = data::<T>(self)?;
            let r = par_batches(&d, m * n, nb, |a| kern::svd(a, m, n, true, full_matrices))
                .map_err(|e| decomp_error(op, !bs.is_empty(), e))?;
            let (uc, vr) = if full_matrices { (m, n) } else { (k, k) };
            let mut u = Vec::with_capacity(nb * m * uc);
            let mut s = Vec::with_capacity(nb * k);
            let mut vh = Vec::with_capacity(nb * vr * n);
            for x in r {
                u.extend(x.u);
                s.extend(x.s);
                vh.extend(x.vh);
            }
            Ok((
                Tensor::from_vec(u, &with_shape(bs.clone(), &[m, uc]))?,
                Tensor::from_vec(s, &with_shape(bs.clone(), &[k]))?,
                Tensor::from_vec(vh, &with_shape(bs, &[vr, n]))?,
            ))
        })
    }

    /// `linalg.svdvals`: singular values, descending.
    pub(crate) fn linalg_svdvals_raw(&self) -> Result<Tensor> {
        let op = "linalg.svd";
        let dt = linalg_dtype(self, op)?;
        let (m, n) = check_matrix(self, op)?;
        if device::on_device(&[self]) {
            return Ok(device::svd(self, None)?.1);
        }
        cuda_via_host!("linalg.svdvals", [self], |a| a.linalg_svdvals_raw());
        let k = m.min(n);
        let bs = batch_shape(self);
        let nb: usize = bs.iter().product();
        with_linalg_dtype!(dt, T, {
            let d = data::<T>(self)?;
            let r = par_batches(&d, m * n, nb, |a| kern::svd(a, m, n, false, false))
                .map_err(|e| decomp_error(op, !bs.is_empty(), e))?;
            Tensor::from_vec(
                r.into_iter().flat_map(|x| x.s).collect(),
                &with_shape(bs, &[k]),
            )
        })
    }

    /// `linalg.eigh(A, UPLO)`: eigenvalues ascending and eigenvectors (as columns); with
    /// `vectors == false` the second tensor is empty.
    pub(crate) fn linalg_eigh_raw(&self, uplo: &str, vectors: bool) -> Result<(Tensor, Tensor)> {
        let op = if vectors {
            "linalg.eigh"
        } else {
            "linalg.eigvalsh"
        };
        let dt = linalg_dtype(self, op)?;
        let upper = match uplo {
            "L" | "l" => false,
            "U" | "u" => true,
            _ => {
                return Err(rt(format!(
                    "Expected UPLO argument to be 'L' or 'U', but got {uplo}"
                )))
            }
        };
        let n = check_square(self, op)?;
        if device::on_device(&[self]) {
            return device::eigh(op, self, upper, vectors);
        }
        cuda_via_host!("linalg.eigh", [self], |a| a.linalg_eigh_raw(uplo, vectors));
        let bs = batch_shape(self);
        let nb: usize = bs.iter().product();
        with_linalg_dtype!(dt, T, {
            let d = data::<T>(self)?;
            let r = par_batches(&d, n * n, nb, |a| kern::eigh(a, n, upper, vectors))
                .map_err(|e| decomp_error(op, !bs.is_empty(), e))?;
            let (w, v): (Vec<Vec<T>>, Vec<Vec<T>>) = r.into_iter().unzip();
            let w = Tensor::from_vec(flatten(w), &with_shape(bs.clone(), &[n]))?;
            let v = if vectors {
                Tensor::from_vec(flatten(v), &with_shape(bs, &[n, n]))?
            } else {
                Tensor::zeros(&[0], dt)
            };
            Ok((w, v))
        })
    }

    /// Tolerance defaults shared by `pinv` and `matrix_rank`.
    fn rank_tolerances(&self, atol: Option<f64>, rtol: Option<f64>) -> (f64, f64) {
        let (m, n) = (self.shape()[self.ndim() - 2], self.shape()[self.ndim() - 1]);
        let atol_v = atol.unwrap_or(0.0);
        let rtol_v = match rtol {
            Some(r) => r,
            None if atol_v > 0.0 => 0.0,
            None => eps(self.dtype()) * m.max(n) as f64,
        };
        (atol_v, rtol_v)
    }

    /// `linalg.pinv(A, atol, rtol, hermitian)`.
    pub(crate) fn linalg_pinv_raw(
        &self,
        atol: Option<f64>,
        rtol: Option<f64>,
        hermitian: bool,
    ) -> Result<Tensor> {
        let op = "linalg.pinv";
        let dt = linalg_dtype(self, op)?;
        let (m, n) = check_matrix(self, op)?;
        if hermitian && m != n {
            check_square(self, op)?;
        }
        let (atol, rtol) = self.rank_tolerances(atol, rtol);
        if device::on_device(&[self]) {
            return device::pinv(self, atol, rtol, hermitian);
        }
        cuda_via_host!("linalg.pinv", [self], |a| a.linalg_pinv_raw(
            Some(atol),
            Some(rtol),
            hermitian
        ));
        let bs = batch_shape(self);
        let nb: usize = bs.iter().product();
        with_linalg_dtype!(dt, T, {
            let d = data::<T>(self)?;
            let r = par_batches(&d, m * n, nb, |a| {
                kern::pinv(a, m, n, atol, rtol, hermitian)
            })
            .map_err(|e| decomp_error(op, !bs.is_empty(), e))?;
            Tensor::from_vec(flatten(r), &with_shape(bs, &[n, m]))
        })
    }

    /// `linalg.matrix_rank(A, atol, rtol, hermitian)` (int64).
    pub fn linalg_matrix_rank(
        &self,
        atol: Option<f64>,
        rtol: Option<f64>,
        hermitian: bool,
    ) -> Result<Tensor> {
        let op = "linalg.matrix_rank";
        linalg_dtype(self, op)?;
        let (m, n) = check_matrix(self, op)?;
        let (atol, rtol) = self.rank_tolerances(atol, rtol);
        if hermitian {
            check_square(self, op)?;
        }
        if device::on_device(&[self]) {
            return device::matrix_rank(self, atol, rtol, hermitian);
        }
        cuda_via_host!("linalg.matrix_rank", [self], |a| a.linalg_matrix_rank(
            Some(atol),
            Some(rtol),
            hermitian
        ));
        let s = if hermitian {
            self.linalg_eigh("L", false)?.0
        } else {
            self.linalg_svdvals()?
        };
        let k = if hermitian { n } else { m.min(n) };
        let v = s.to_f64_vec();
        let ranks: Vec<i64> = v
            .chunks(k.max(1))
            .take(batch_shape(self).iter().product())
            .map(|row| {
                let smax = row.iter().fold(0.0f64, |a, x| a.max(x.abs()));
                let tol = atol.max(rtol * smax);
                row.iter().filter(|x| x.abs() > tol).count() as i64
            })
            .collect();
        let bs = batch_shape(self);
        let ranks = if k == 0 {
            vec![0; bs.iter().product()]
        } else {
            ranks
        };
        Tensor::from_vec(ranks, &bs)
    }

    /// `linalg.lstsq(A, B, rcond, driver)`: minimum-norm least squares through the SVD. Which
    /// auxiliary outputs are filled follows PyTorch's per-driver rules (`gelsy` is the CPU
    /// default: rank only; `gelsd`/`gelss` add singular values; residuals for `m > n` and full
    /// rank, except for `gelsy`).
    pub(crate) fn linalg_lstsq_raw(
        &self,
        b: &Tensor,
        rcond: Option<f64>,
        driver: Option<&str>,
    ) -> Result<Lstsq> {
        let op = "torch.linalg.lstsq";
        let dt = linalg_dtype(self, "linalg.lstsq")?;
        // PyTorch's CUDA default (and only) driver is QR-based `gels`.
        let gels_on_device = device::on_device(&[self, b]) && matches!(driver, None | Some("gels"));
        let driver = driver.unwrap_or(if gels_on_device { "gels" } else { "gelsy" });
        if !["gels", "gelsy", "gelsd", "gelss"].contains(&driver) {
            return Err(rt(format!(
                "{op}: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)"
            )));
        }
        if b.dtype() != dt {
            return Err(rt(format!(
                "{op}: Expected input and other to have the same dtype, but got input's dtype {} and other's dtype {}",
                dt.torch_name(),
                b.dtype().torch_name()
            )));
        }
        let (m, n) = check_matrix(self, "linalg.lstsq")?;
        let vector = b.ndim() + 1 == self.ndim();
        let bm = if vector { b.unsqueeze(-1)? } else { b.clone() };
        if bm.ndim() < 2 || bm.shape()[bm.ndim() - 2] != m {
            return Err(rt(format!(
                "{op}: input.size(-2) should match other.size(-2)"
            )));
        }
        let k = bm.shape()[bm.ndim() - 1];
        let bs = broadcast_shapes("linalg.lstsq", &batch_shape(self), &batch_shape(&bm))?.to_vec();
        let nb: usize = bs.iter().product();
        let a = self.broadcast_to(&with_shape(bs.clone(), &[m, n]))?;
        let bm = bm.broadcast_to(&with_shape(bs.clone(), &[m, k]))?;
        if gels_on_device && m >= n {
            let (sol, residuals) = device::lstsq_gels(&a, &bm)?;
            let squeeze = |t: Tensor| {
                if vector {
                    t.squeeze(Some(&[-1]))
                } else {
                    Ok(t)
                }
            };
            let empty = |dt| Tensor::full_on(a.device(), &[0], Scalar::Int(0), dt);
            return Ok(Lstsq {
                solution: squeeze(sol)?,
                residuals: if m > n {
                    squeeze(residuals)?
                } else {
                    empty(dt)?
                },
                rank: empty(DType::I64)?,
                singular_values: empty(dt)?,
            });
        }
        cuda_via_host!("linalg.lstsq", [self, b], |a, b| a.linalg_lstsq_raw(
            &b,
            rcond,
            Some(driver)
        ));
        let rcond = rcond
            .filter(|&r| r >= 0.0)
            .unwrap_or(eps(dt) * m.max(n) as f64);
        let r = m.min(n);
        let (sol, ranks, svals) = with_linalg_dtype!(dt, T, {
            let ad = data::<T>(&a)?;
            let bd = data::<T>(&bm)?;
            let res = (0..nb)
                .into_par_iter()
                .map(|i| {
                    kern::lstsq(
                        &ad[i * m * n..(i + 1) * m * n],
                        m,
                        n,
                        &bd[i * m * k..(i + 1) * m * k],
                        k,
                        rcond,
                    )
                    .map_err(|e| (i, e))
                })
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(|e| decomp_error("linalg.lstsq", !bs.is_empty(), e))?;
            let mut x = Vec::with_capacity(nb * n * k);
            let mut ranks = Vec::with_capacity(nb);
            let mut sv = Vec::with_capacity(nb * r);
            for (xi, ri, si) in res {
                x.extend(xi);
                ranks.push(ri as i64);
                sv.extend(si);
            }
            (
                Tensor::from_vec(x, &with_shape(bs.clone(), &[n, k]))?,
                ranks,
                Tensor::from_vec(sv, &with_shape(bs.clone(), &[r]))?,
            )
        });
        let full_rank = ranks.iter().all(|&x| x as usize == n);
        let residuals = if m > n && driver != "gelsy" && (driver == "gels" || full_rank) {
            // ||A X - B||^2 per column.
            let diff = a.matmul(&sol)?.binary(&bm, BinaryOp::Sub)?;
            let sq = diff.binary(&diff, BinaryOp::Mul)?;
            let summed = sum_labels(&sq, &(0..sq.ndim()).collect::<Vec<_>>(), &[sq.ndim() - 2])?.0;
            if vector {
                summed.squeeze(Some(&[-1]))?
            } else {
                summed
            }
        } else {
            Tensor::zeros(&[0], dt)
        };
        let rank = if driver == "gels" {
            Tensor::zeros(&[0], DType::I64)
        } else {
            Tensor::from_vec(ranks, &bs)?
        };
        let singular_values = if driver == "gelsd" || driver == "gelss" {
            svals
        } else {
            Tensor::zeros(&[0], dt)
        };
        let solution = if vector {
            sol.squeeze(Some(&[-1]))?
        } else {
            sol
        };
        Ok(Lstsq {
            solution,
            residuals,
            rank,
            singular_values,
        })
    }

    /// `linalg.vector_norm(x, ord, dim, keepdim)` for float tensors (computed in f64, returned
    /// in the input dtype).
    pub(crate) fn linalg_vector_norm_raw(
        &self,
        ord: f64,
        dims: Option<&[i64]>,
        keepdim: bool,
    ) -> Result<Tensor> {
        let dt = self.dtype();
        if !dt.is_floating_point() {
            return Err(rt(format!(
                "linalg.vector_norm: Expected a floating point or complex tensor as input. Got {}",
                dt.torch_name()
            )));
        }
        let (x, outer, inner, out_shape) = reduce_layout(self, dims, keepdim)?;
        if inner == 0 && (ord < 0.0 || ord.is_infinite()) {
            return Err(rt(format!(
                "linalg.vector_norm cannot compute the {ord} norm on an empty tensor because the operation does not have an identity"
            )));
        }
        if self.device().is_cuda() {
            return crate::autograd::no_grad(|| self.vector_norm_on_device(ord, dims, keepdim));
        }
        let vals: Vec<f64> = with_dtype!(x.dtype(), T, {
            let s = x.to_vec::<T>()?;
            norm_rows(&s, outer, inner, |v: T| v.to_f64(), ord)
        });
        Ok(Tensor::from_vec(vals, &out_shape)?.to_dtype(dt))
    }

    /// `linalg.vector_norm` composed of device kernels (abs, powers, sums, max/min).
    fn vector_norm_on_device(
        &self,
        ord: f64,
        dims: Option<&[i64]>,
        keepdim: bool,
    ) -> Result<Tensor> {
        use super::{BinaryOp, UnaryOp};
        let dt = self.dtype();
        let a = self.unary(UnaryOp::Abs)?;
        let scalar = |v: f64| Tensor::scalar(crate::Scalar::Float(v), dt);
        if ord == f64::INFINITY {
            return a.amax_raw(dims, keepdim);
        }
        if ord == f64::NEG_INFINITY {
            return a.amin_raw(dims, keepdim);
        }
        if ord == 0.0 {
            return a
                .binary(&scalar(0.0), BinaryOp::Ne)?
                .to_dtype(dt)
                .sum_raw(dims, keepdim, None);
        }
        if ord == 1.0 {
            return a.sum_raw(dims, keepdim, None);
        }
        if ord == 2.0 {
            return a
                .binary(&a, BinaryOp::Mul)?
                .sum_raw(dims, keepdim, None)?
                .unary(UnaryOp::Sqrt);
        }
        a.binary(&scalar(ord), BinaryOp::Pow)?
            .sum_raw(dims, keepdim, None)?
            .binary(&scalar(1.0 / ord), BinaryOp::Pow)
    }

    /// `linalg.matrix_norm(A, ord, dim, keepdim)`.
    pub(crate) fn linalg_matrix_norm_raw(
        &self,
        ord: MatrixNormOrd,
        dims: (i64, i64),
        keepdim: bool,
    ) -> Result<Tensor> {
        let op = "linalg.matrix_norm";
        let dt = self.dtype();
        if !dt.is_floating_point() {
            return Err(rt(format!(
                "{op}: Expected a floating point or complex tensor as input. Got {}",
                dt.torch_name()
            )));
        }
        check_matrix(self, op)?;
        let nd = self.ndim();
        let (d0, d1) = (normalize_dim(dims.0, nd)?, normalize_dim(dims.1, nd)?);
        if d0 == d1 {
            return Err(rt(format!(
                "{op}: dims must be different. Got ({}, {})",
                dims.0, dims.1
            )));
        }
        if ord == MatrixNormOrd::Fro {
            return self.linalg_vector_norm(2.0, Some(&[d0 as i64, d1 as i64]), keepdim);
        }
        let p = match ord {
            MatrixNormOrd::P(p) => p,
            _ => 0.0,
        };
        if ord != MatrixNormOrd::Nuc
            && ![1.0, -1.0, 2.0, -2.0, f64::INFINITY, f64::NEG_INFINITY].contains(&p)
        {
            return Err(rt(format!("{op}: Order {p} not supported.")));
        }
        let mut perm: Vec<i64> = (0..nd as i64)
            .filter(|&d| d != d0 as i64 && d != d1 as i64)
            .collect();
        perm.extend([d0 as i64, d1 as i64]);
        let (r, c) = (self.shape()[d0], self.shape()[d1]);
        if (r == 0 || c == 0) && ord != MatrixNormOrd::Nuc {
            return Err(rt(format!(
                "{op}: Expected a non-empty tensor: the {p} norm of an empty matrix is not defined"
            )));
        }
        let mut shape: Vec<usize> = Vec::new();
        for d in 0..nd {
            if d == d0 || d == d1 {
                if keepdim {
                    shape.push(1);
                }
            } else {
                shape.push(self.shape()[d]);
            }
        }
        if device::on_device(&[self]) {
            let x = self.permute(&perm)?;
            let norm = device::matrix_norm(&x, ord == MatrixNormOrd::Nuc, p)?;
            let shape: Vec<i64> = shape.iter().map(|&s| s as i64).collect();
            return norm.reshape(&shape);
        }
        cuda_via_host!("linalg.matrix_norm", [self], |a| a
            .linalg_matrix_norm_raw(ord, dims, keepdim));
        let x = self.permute(&perm)?.to_dtype(DType::F64).contiguous();
        let vals: Vec<f64> = match ord {
            MatrixNormOrd::Nuc => x.linalg_svdvals()?.to_f64_vec(),
            _ if p.abs() == 2.0 => x.linalg_svdvals()?.to_f64_vec(),
            _ => x.to_vec::<f64>()?,
        };
        let nbm: usize = self.numel() / (r * c).max(1);
        let nbm = if self.numel() == 0 {
            perm[..nd - 2]
                .iter()
                .map(|&d| self.shape()[d as usize])
                .product()
        } else {
            nbm
        };
        let k = r.min(c);
        let out: Vec<f64> = (0..nbm)
            .map(|b| match ord {
                MatrixNormOrd::Nuc => vals[b * k..(b + 1) * k].iter().sum(),
                _ if p == 2.0 => vals[b * k],
                _ if p == -2.0 => vals[(b + 1) * k - 1],
                _ => {
                    let mat = &vals[b * r * c..(b + 1) * r * c];
                    if p.is_infinite() {
                        // Max/min over rows of the absolute row sums.
                        let it = (0..r)
                            .map(|i| mat[i * c..(i + 1) * c].iter().map(|v| v.abs()).sum::<f64>());
                        if p > 0.0 {
                            it.fold(f64::NEG_INFINITY, f64::max)
                        } else {
                            it.fold(f64::INFINITY, f64::min)
                        }
                    } else {
                        let it = (0..c).map(|j| (0..r).map(|i| mat[i * c + j].abs()).sum::<f64>());
                        if p > 0.0 {
                            it.fold(f64::NEG_INFINITY, f64::max)
                        } else {
                            it.fold(f64::INFINITY, f64::min)
                        }
                    }
                }
            })
            .collect();
        Ok(Tensor::from_vec(out, &shape)?.to_dtype(dt))
    }
}

/// Move the reduced `dims` (all when `None` or empty) last and materialise: returns the
/// contiguous tensor viewed as `[outer, inner]` rows, and the output shape.
fn reduce_layout(
    t: &Tensor,
    dims: Option<&[i64]>,
    keepdim: bool,
) -> Result<(Tensor, usize, usize, Vec<usize>)> {
    let nd = t.ndim();
    let red = match dims {
        Some(ds) if !ds.is_empty() => crate::layout::dim_list_mask(ds, nd)?,
        _ => vec![true; nd],
    };
    let kept: Vec<usize> = (0..nd).filter(|&d| !red[d]).collect();
    let reduced: Vec<usize> = (0..nd).filter(|&d| red[d]).collect();
    let perm: Vec<i64> = kept.iter().chain(&reduced).map(|&d| d as i64).collect();
    let outer: usize = kept.iter().map(|&d| t.shape()[d]).product();
    let inner: usize = reduced.iter().map(|&d| t.shape()[d]).product();
    let x = t.permute(&perm)?.contiguous();
    let out_shape: Vec<usize> = (0..nd)
        .filter_map(|d| {
            if !red[d] {
                Some(t.shape()[d])
            } else if keepdim {
                Some(1)
            } else {
                None
            }
        })
        .collect();
    Ok((x, outer, inner, out_shape))
}

/// p-norm of each of `outer` rows of `inner` elements (parallel over rows, or over chunks of
/// one long row).
fn norm_rows<T: Copy + Send + Sync>(
    s: &[T],
    outer: usize,
    inner: usize,
    f: impl Fn(T) -> f64 + Sync + Send,
    ord: f64,
) -> Vec<f64> {
    // Partial accumulation and combination per norm kind.
    let acc = |chunk: &[T]| -> f64 {
        if ord == f64::INFINITY {
            chunk.iter().fold(0.0f64, |a, &x| {
                let v = f(x).abs();
                if v.is_nan() || a.is_nan() {
                    f64::NAN
                } else {
                    a.max(v)
                }
            })
        } else if ord == f64::NEG_INFINITY {
            chunk.iter().fold(f64::INFINITY, |a, &x| {
                let v = f(x).abs();
                if v.is_nan() || a.is_nan() {
                    f64::NAN
                } else {
                    a.min(v)
                }
            })
        } else if ord == 0.0 {
            chunk.iter().filter(|&&x| f(x) != 0.0).count() as f64
        } else if ord == 1.0 {
            chunk.iter().map(|&x| f(x).abs()).sum()
        } else if ord == 2.0 {
            chunk
                .iter()
                .map(|&x| {
                    let v = f(x);
                    v * v
                })
                .sum()
        } else {
            chunk.iter().map(|&x| f(x).abs().powf(ord)).sum()
        }
    };
    let combine = |a: f64, b: f64| -> f64 {
        if ord == f64::INFINITY {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else {
                a.max(b)
            }
        } else if ord == f64::NEG_INFINITY {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else {
                a.min(b)
            }
        } else {
            a + b
        }
    };
    let finish = |v: f64| -> f64 {
        if ord.is_infinite() || ord == 0.0 || ord == 1.0 {
            v
        } else if ord == 2.0 {
            v.sqrt()
        } else {
            v.powf(1.0 / ord)
        }
    };
    if outer == 0 {
        return vec![];
    }
    if inner == 0 {
        return vec![0.0; outer];
    }
    if outer == 1 && inner >= strided::PAR_THRESHOLD {
        let cl = strided::chunk_len(inner);
        let parts: Vec<f64> = s[..inner].par_chunks(cl).map(acc).collect();
        let total = parts.into_iter().reduce(combine).unwrap_or(0.0);
        return vec![finish(total)];
    }
    if outer * inner >= strided::PAR_THRESHOLD {
        s.par_chunks(inner).map(|r| finish(acc(r))).collect()
    } else {
        s.chunks(inner).map(|r| finish(acc(r))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: Vec<f64>, shape: &[usize]) -> Tensor {
        Tensor::from_vec(v, shape).expect("valid shape")
    }

    #[test]
    fn batched_matmul_broadcasts_and_folds() {
        // (2, 2, 3) @ (3, 1): folded into one (4, 3) @ (3, 1) product.
        let a = t((0..12).map(f64::from).collect(), &[2, 2, 3]);
        let b = t(vec![1.0, 0.0, -1.0], &[3, 1]);
        let r = a.matmul(&b).unwrap();
        assert_eq!(r.shape(), &[2, 2, 1]);
        assert_eq!(r.to_vec::<f64>().unwrap(), vec![-2.0; 4]);
        // Transposed lhs (non-foldable view) gives the same numbers as its contiguous copy.
        let at = a.transpose(0, 1).unwrap();
        let r1 = at.matmul(&b).unwrap().to_vec::<f64>().unwrap();
        let r2 = at.contiguous().matmul(&b).unwrap().to_vec::<f64>().unwrap();
        assert_eq!(r1, r2);
    }

    #[test]
    fn einsum_trace_outer_and_errors() {
        let m = t(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
        let tr = Tensor::einsum("ii", std::slice::from_ref(&m)).unwrap();
        assert_eq!(tr.item().unwrap().to_f64(), 5.0);
        let v = t(vec![1.0, 2.0], &[2]);
        let o = Tensor::einsum("i,j->ij", &[v.clone(), v.clone()]).unwrap();
        assert_eq!(o.to_vec::<f64>().unwrap(), vec![1.0, 2.0, 2.0, 4.0]);
        assert!(Tensor::einsum("ij,jk", std::slice::from_ref(&m)).is_err());
        assert!(m.matmul(&t(vec![1.0; 3], &[3])).is_err());
    }

    #[test]
    fn decompositions_roundtrip() {
        let a = t(vec![4.0, 1.0, 1.0, 3.0], &[2, 2]);
        let inv = a.linalg_inv().unwrap();
        let eye = a.matmul(&inv).unwrap().to_vec::<f64>().unwrap();
        for (x, y) in eye.iter().zip([1.0, 0.0, 0.0, 1.0]) {
            assert!((x - y).abs() < 1e-12);
        }
        let l = a.linalg_cholesky(false).unwrap();
        let llt = l
            .matmul(&l.swap_last2().unwrap())
            .unwrap()
            .to_vec::<f64>()
            .unwrap();
        for (x, y) in llt.iter().zip([4.0, 1.0, 1.0, 3.0]) {
            assert!((x - y).abs() < 1e-12);
        }
        assert!((a.linalg_det().unwrap().item().unwrap().to_f64() - 11.0).abs() < 1e-12);
    }
}
