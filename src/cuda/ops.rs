//! Tensor ops on CUDA storage: transfers, fill/copy/cast, elementwise unary and binary ops
//! (with broadcasting), reductions along a dim, softmax, and matmul through cuBLAS.
//!
//! `Tensor` methods call these after validation, promotion and broadcasting (the same rules as
//! on the CPU); autograd records on top, so backward formulas run here too.

use super::blas::{gemm_batched, Operand};
use super::compile::KernelFile;
use super::driver::DeviceState;
use super::dtype_suffix;
use super::launch::{
    elementwise, joint_layouts, layout_of, per_row, unmerged_layout, StridedLayout,
};
use super::storage::CudaStorage;
pub(crate) use super::Reduction;
use crate::layout::Layout;
use crate::storage::{Storage, StorageData};
use crate::tensor::{BinaryOp, UnaryOp};
use crate::{with_dtype, DType, Device, Error, Result, Scalar, Tensor};
use cudarc::driver::{result, PushKernelArg};
use std::sync::Arc;

/// Launch `name` from `file` on the device's current stream with the given arguments (each a
/// local variable: the builder keeps references to them until the launch).
macro_rules! launch {
    ($dev:expr, $file:expr, $name:expr, $cfg:expr; $($arg:expr),* $(,)?) => {{
        let name: &str = &$name;
        let f = $dev.function($file, name)?;
        let stream = $dev.stream();
        let mut b = stream.launch_builder(&f);
        $( b.arg(&$arg); )*
        // SAFETY: the argument list matches the kernel's signature in cuda_kernels/ (see the
        // family table in cuda_kernels/README.md); every pointer is a live device buffer of the
        // size the kernel indexes (callers allocate outputs of `n` elements and describe
        // inputs with layouts that fit their storages).
        unsafe { b.launch($cfg) }
            .map(|_| ())
            .map_err(|e| Error::Runtime(format!("CUDA error: launching {name}: {e}")))
    }};
}
/// Shared with the other launcher modules of `src/cuda/` (nn, optimiser, random, indexing).
pub(crate) use launch;

/// The CUDA storage of `t`.
pub(crate) fn storage(t: &Tensor) -> Result<&CudaStorage> {
    match t.storage().data() {
        StorageData::Cuda(c) => Ok(c),
        StorageData::Cpu(_) => Err(Error::Runtime(format!(
            "expected a CUDA tensor but got a tensor on {}",
            t.device()
        ))),
    }
}

/// Base device pointer of `t`'s storage (kernels add the layout's offset themselves).
pub(crate) fn ptr(t: &Tensor) -> Result<u64> {
    Ok(storage(t)?.device_ptr())
}

pub(crate) fn ordinal_of(t: &Tensor) -> Result<usize> {
    match t.device() {
        Device::Cuda(n) => Ok(n),
        Device::Cpu => Err(Error::Runtime("expected a CUDA tensor".into())),
    }
}

pub(crate) fn dev_of(t: &Tensor) -> Result<Arc<DeviceState>> {
    Ok(storage(t)?.device_state().clone())
}

/// An uninitialised contiguous tensor on device `ordinal`.
pub(crate) fn empty(ordinal: usize, shape: &[usize], dtype: DType) -> Result<Tensor> {
    let numel: usize = shape.iter().product();
    let s = CudaStorage::alloc(ordinal, numel, dtype)?;
    Ok(Tensor::from_parts(
        Arc::new(Storage::cuda(s)),
        Layout::contiguous(shape),
        dtype,
    ))
}

// ------------------------------------------------------------------------------- transfers

/// Copy a CPU tensor to device `ordinal` (contiguous result).
pub(crate) fn upload(t: &Tensor, ordinal: usize) -> Result<Tensor> {
    let t = t.contiguous();
    let out = empty(ordinal, t.shape(), t.dtype())?;
    let n = t.numel();
    if n == 0 {
        return Ok(out);
    }
    let dev = dev_of(&out)?;
    dev.bind()?;
    let stream = dev.stream();
    let dst = ptr(&out)?;
    let off = t.storage_offset();
    with_dtype!(t.dtype(), T, {
        let src = &t.storage_slice::<T>()?[off..off + n];
        // SAFETY: `dst` holds `n` elements of T; `src` is `n` initialised host elements that
        // stay borrowed until the stream is synchronised below.
        unsafe { result::memcpy_htod_async(dst, src, stream.cu_stream()) }
            .map_err(|e| Error::Runtime(format!("CUDA error: copy to cuda:{ordinal}: {e}")))?;
        stream
            .synchronize()
            .map_err(|e| Error::Runtime(format!("CUDA error: copy to cuda:{ordinal}: {e}")))?;
    });
    Ok(out)
}

/// Copy a CUDA tensor to the host (contiguous result); waits for the device.
pub(crate) fn download(t: &Tensor) -> Result<Tensor> {
    let t = contiguous(t)?;
    let n = t.numel();
    let dev = dev_of(&t)?;
    dev.bind()?;
    let stream = dev.stream();
    let src = ptr(&t)? + (t.storage_offset() * t.dtype().size()) as u64;
    with_dtype!(t.dtype(), T, {
        let mut v: Vec<T> = Vec::with_capacity(n);
        if n > 0 {
            // SAFETY: the spare capacity holds `n` elements; the copy fills all of them before
            // `set_len` (the stream is synchronised first); `src` holds `n` elements of T.
            unsafe {
                let dst = std::slice::from_raw_parts_mut(v.as_mut_ptr(), n);
                result::memcpy_dtoh_async(dst, src, stream.cu_stream())
                    .map_err(|e| Error::Runtime(format!("CUDA error: copy to cpu: {e}")))?;
                stream
                    .synchronize()
                    .map_err(|e| Error::Runtime(format!("CUDA error: copy to cpu: {e}")))?;
                v.set_len(n);
            }
        }
        Ok(Tensor::from_vec_unchecked(v, t.shape()))
    })
}

/// Move `t` (on any device) to `device`.
pub(crate) fn to_device(t: &Tensor, device: Device) -> Result<Tensor> {
    match (t.device(), device) {
        (a, b) if a == b => Ok(t.clone()),
        (Device::Cpu, Device::Cuda(n)) => upload(t, n),
        (Device::Cuda(_), Device::Cpu) => download(t),
        // Between devices through the host (peer copies are a later optimisation).
        (Device::Cuda(_), Device::Cuda(n)) => upload(&download(t)?, n),
        _ => unreachable!("CPU to CPU is handled by the first arm"),
    }
}

// ------------------------------------------------------------------------------- fill, copy, cast

/// A contiguous tensor of `shape` filled with `value`.
pub(crate) fn full(ordinal: usize, shape: &[usize], value: Scalar, dtype: DType) -> Result<Tensor> {
    let out = empty(ordinal, shape, dtype)?;
    let n = out.numel();
    if n == 0 {
        return Ok(out);
    }
    let dev = dev_of(&out)?;
    let p = ptr(&out)?;
    let n64 = n as i64;
    with_dtype!(dtype, T, {
        let v: T = value.to_elem::<T>();
        launch!(dev, KernelFile::FillCopy, format!("fill_{}", dtype_suffix(dtype)), elementwise(n); p, n64, v)?;
    });
    Ok(out)
}

/// A contiguous tensor of `shape` filled with `value` on `like`'s device.
pub(crate) fn full_on(
    like: &Tensor,
    shape: &[usize],
    value: Scalar,
    dtype: DType,
) -> Result<Tensor> {
    full(ordinal_of(like)?, shape, value, dtype)
}

/// `t` if contiguous, else a contiguous copy on the same device.
pub(crate) fn contiguous(t: &Tensor) -> Result<Tensor> {
    if t.is_contiguous() {
        return Ok(t.clone());
    }
    clone(t)
}

/// Run a kernel of the `(const S* x, StridedLayout xl, D* out, long long n)` family (copy,
/// cast, unary) over `x` into a new contiguous tensor of `out_dtype`.
fn map_kernel(x: &Tensor, file: KernelFile, name: String, out_dtype: DType) -> Result<Tensor> {
    let out = empty(ordinal_of(x)?, x.shape(), out_dtype)?;
    let n = out.numel();
    if n == 0 {
        return Ok(out);
    }
    let dev = dev_of(x)?;
    let (xp, o) = (ptr(x)?, ptr(&out)?);
    let xl = layout_of(&name, x.layout())?;
    let n64 = n as i64;
    launch!(dev, file, name, elementwise(n); xp, xl, o, n64)?;
    Ok(out)
}

/// A contiguous copy of `t` (shares nothing).
pub(crate) fn clone(t: &Tensor) -> Result<Tensor> {
    let name = format!("copy_{}", dtype_suffix(t.dtype()));
    map_kernel(t, KernelFile::FillCopy, name, t.dtype())
}

/// `t` converted to `dtype` (contiguous).
pub(crate) fn cast(t: &Tensor, dtype: DType) -> Result<Tensor> {
    if dtype == t.dtype() {
        return Ok(t.clone());
    }
    let name = format!("cast_{}_{}", dtype_suffix(t.dtype()), dtype_suffix(dtype));
    map_kernel(t, KernelFile::Cast, name, dtype)
}

/// Bring an operand to `dst`'s device (0-d CPU tensors and same-device tensors only).
fn on_device_of(src: &Tensor, dst: &Tensor, op: &'static str) -> Result<Tensor> {
    if src.device() == dst.device() {
        return Ok(src.clone());
    }
    if src.device() == Device::Cpu && src.ndim() == 0 {
        return upload(src, ordinal_of(dst)?);
    }
    Err(Error::DeviceMismatch {
        op,
        lhs: dst.device(),
        rhs: src.device(),
    })
}

/// Write `src` (broadcast to `dst`'s shape, cast to its dtype) into the CUDA tensor `dst`.
/// A CPU `src` of any shape is uploaded first (`copy_` allows crossing devices).
pub(crate) fn copy_into(dst: &Tensor, src: &Tensor) -> Result<()> {
    let mut s = if src.device() == Device::Cpu {
        upload(src, ordinal_of(dst)?)?
    } else if src.device() != dst.device() {
        to_device(src, dst.device())?
    } else {
        src.clone()
    };
    if s.dtype() != dst.dtype() {
        s = cast(&s, dst.dtype())?;
    }
    let n = dst.numel();
    if n == 0 {
        return Ok(());
    }
    let sl = s.layout().broadcast_to("copy_", dst.shape())?;
    let [xl, ol] = joint_layouts::<2>(
        "copy_",
        dst.shape(),
        [
            (&sl.strides, sl.offset),
            (dst.strides(), dst.storage_offset()),
        ],
    )?;
    let dev = dev_of(dst)?;
    let (x, o) = (ptr(&s)?, ptr(dst)?);
    let n64 = n as i64;
    let name = format!("copy_into_{}", dtype_suffix(dst.dtype()));
    launch!(dev, KernelFile::FillCopy, name, elementwise(n); x, xl, o, ol, n64)
}

// ------------------------------------------------------------------------------- elementwise

/// The elementwise_unary.cu kernel of `op` (named like the op, except the tanh form of GELU),
/// or None when the file has none (those ops are composed or not available on CUDA yet).
fn float_unary_kernel(op: UnaryOp) -> Option<&'static str> {
    use UnaryOp::*;
    match op {
        GeluTanh => Some("gelu_tanh"),
        Square => None,
        _ => Some(op.name()),
    }
}

fn not_implemented(op: &str, t: &Tensor) -> Error {
    Error::Runtime(format!(
        "{op} is not implemented for CUDA tensors yet (got a {} tensor on {}); move it to the CPU with .cpu()",
        t.dtype().torch_name(),
        t.device()
    ))
}

/// Launch the unary kernel `name_<dtype of x>` writing `out_dtype`.
fn unary_kernel(x: &Tensor, name: &str, out_dtype: DType) -> Result<Tensor> {
    let full_name = format!("{name}_{}", dtype_suffix(x.dtype()));
    map_kernel(x, KernelFile::Unary, full_name, out_dtype)
}

/// A unary op with the CPU's dtype rules: integer inputs keep their dtype for
/// neg/abs/sign/relu/floor/ceil/round/trunc/square, the rest compute in the default float.
pub(crate) fn unary(t: &Tensor, op: UnaryOp) -> Result<Tensor> {
    use UnaryOp::*;
    let dt = t.dtype();
    match op {
        Square if dt == DType::Bool => return unary(&cast(t, DType::I64)?, Square),
        Square => return binary(t, t, BinaryOp::Mul, dt),
        IsNan | IsInf | IsFinite | IsPosInf | IsNegInf if !dt.is_floating_point() => {
            return full(
                ordinal_of(t)?,
                t.shape(),
                Scalar::Bool(matches!(op, IsFinite)),
                DType::Bool,
            )
        }
        IsNan | IsInf | IsFinite | IsPosInf | IsNegInf => {
            return unary_kernel(t, float_unary_kernel(op).unwrap_or("isnan"), DType::Bool)
        }
        LogicalNot => return unary_kernel(t, "logical_not", DType::Bool),
        BitNot => {
            if dt.is_floating_point() {
                return Err(Error::UnsupportedDType {
                    op: op.name(),
                    dtype: dt,
                });
            }
            return unary_kernel(t, "bitwise_not", dt);
        }
        _ => {}
    }
    let Some(name) = float_unary_kernel(op) else {
        return Err(not_implemented(op.name(), t));
    };
    if !dt.is_floating_point() {
        if matches!(op, Floor | Ceil | Round | Trunc) {
            return Ok(t.clone_data());
        }
        if matches!(op, Neg | Abs | Sign | Relu) {
            if dt == DType::Bool {
                if matches!(op, Abs | Relu | Sign) {
                    return Ok(t.clone_data()); // identities on {false, true}
                }
                return Err(Error::UnsupportedDType {
                    op: op.name(),
                    dtype: dt,
                });
            }
            return unary_kernel(t, name, dt);
        }
        return unary(&cast(t, crate::default_dtype())?, op);
    }
    unary_kernel(t, name, dt)
}

/// `a (op) b` with broadcasting: `common` is the promoted dtype of the inputs.
pub(crate) fn binary(a: &Tensor, b: &Tensor, op: BinaryOp, common: DType) -> Result<Tensor> {
    let (a, b) = if a.device().is_cuda() {
        (a.clone(), on_device_of(b, a, op.name())?)
    } else {
        (on_device_of(a, b, op.name())?, b.clone())
    };
    let (compute, out_dtype) = op.dtypes(common)?;
    let writes_bool = op.is_comparison() || op.is_logical();
    // The CPU computes f16/bf16 in f32; the kernels do that internally (load to float, round
    // on store), so they run on the storage dtype itself.
    let compute = if matches!(common, DType::F16 | DType::BF16) {
        common
    } else {
        compute
    };
    // An arithmetic kernel writes its input dtype: anything else would write past `out`.
    if !writes_bool && compute != out_dtype {
        return Err(Error::Runtime(format!(
            "{}: no CUDA kernel computes in {} and writes {}",
            op.name(),
            compute.torch_name(),
            out_dtype.torch_name()
        )));
    }
    if compute == DType::Bool && !(op.is_comparison() || op.is_logical() || op.is_bitwise()) {
        if matches!(
            op,
            BinaryOp::Add | BinaryOp::Mul | BinaryOp::Maximum | BinaryOp::Minimum
        ) {
            // bool + bool is logical or, bool * bool logical and (PyTorch).
            let alt = match op {
                BinaryOp::Add | BinaryOp::Maximum => BinaryOp::LogicalOr,
                _ => BinaryOp::LogicalAnd,
            };
            return binary(&a, &b, alt, common);
        }
        return Err(not_implemented(op.name(), &a));
    }
    launch_binary(&a, &b, op.name(), compute, out_dtype)
}

/// `a (kernel) b` for the binary kernels that have no `BinaryOp` (fmod, hypot, logaddexp...,
/// see elementwise_binary.cu): both operands already of the kernel's dtype (a 0-d CPU operand
/// is moved over); the result has that dtype too.
pub(crate) fn binary_named(a: &Tensor, b: &Tensor, kernel: &'static str) -> Result<Tensor> {
    let (a, b) = if a.device().is_cuda() {
        (a.clone(), on_device_of(b, a, kernel)?)
    } else {
        (on_device_of(a, b, kernel)?, b.clone())
    };
    let dt = a.dtype();
    launch_binary(&a, &b, kernel, dt, dt)
}

/// Broadcast `a` and `b`, cast them to `compute` and launch `<kernel>_<dtype>[_contig]`,
/// which writes `out_dtype`.
fn launch_binary(
    a: &Tensor,
    b: &Tensor,
    kernel: &'static str,
    compute: DType,
    out_dtype: DType,
) -> Result<Tensor> {
    let shape = crate::layout::broadcast_shapes(kernel, a.shape(), b.shape())?;
    let a = cast(a, compute)?;
    let b = cast(b, compute)?;
    let ordinal = ordinal_of(&a)?;
    let out = empty(ordinal, &shape, out_dtype)?;
    let n = out.numel();
    if n == 0 {
        return Ok(out);
    }
    let dev = dev_of(&a)?;
    let (ap, bp, o) = (ptr(&a)?, ptr(&b)?, ptr(&out)?);
    let n64 = n as i64;
    let sfx = dtype_suffix(compute);
    if a.is_contiguous()
        && b.is_contiguous()
        && a.shape() == shape.as_slice()
        && b.shape() == shape.as_slice()
    {
        // Same shape, both contiguous: offsets folded into the pointers.
        let ap = ap + (a.storage_offset() * compute.size()) as u64;
        let bp = bp + (b.storage_offset() * compute.size()) as u64;
        let name = format!("{kernel}_{sfx}_contig");
        // Threads by 16-byte packs when the kernel can vectorise (output as wide as input).
        let per_thread = if out_dtype.size() == compute.size() {
            16 / compute.size()
        } else {
            1
        };
        launch!(dev, KernelFile::Binary, name, elementwise(n.div_ceil(per_thread)); ap, bp, o, n64)?;
        return Ok(out);
    }
    let la = a.layout().broadcast_to(kernel, &shape)?;
    let lb = b.layout().broadcast_to(kernel, &shape)?;
    let [al, bl]: [StridedLayout; 2] = joint_layouts::<2>(
        kernel,
        &shape,
        [(&la.strides, la.offset), (&lb.strides, lb.offset)],
    )?;
    let name = format!("{kernel}_{sfx}");
    launch!(dev, KernelFile::Binary, name, elementwise(n); ap, al, bp, bl, o, n64)?;
    Ok(out)
}

/// tril (`lower`) / triu of the last two dims, diagonal offset `k` (a new contiguous tensor).
pub(crate) fn band(t: &Tensor, k: i64, lower: bool) -> Result<Tensor> {
    let nd = t.ndim();
    let (rows, cols) = (t.shape()[nd - 2] as i64, t.shape()[nd - 1] as i64);
    let out = empty(ordinal_of(t)?, t.shape(), t.dtype())?;
    let n = out.numel();
    if n == 0 {
        return Ok(out);
    }
    let dev = dev_of(t)?;
    let (xp, xl, o) = (ptr(t)?, layout_of("tril/triu", t.layout())?, ptr(&out)?);
    let (n64, lower) = (n as i64, lower as i32);
    let name = format!("band_{}", dtype_suffix(t.dtype()));
    launch!(dev, KernelFile::FillCopy, name, elementwise(n); xp, xl, o, n64, rows, cols, k, lower)?;
    Ok(out)
}

/// NaN, +inf and -inf of a float32/float64 tensor replaced by the given values.
pub(crate) fn nan_to_num(t: &Tensor, nan: f64, posinf: f64, neginf: f64) -> Result<Tensor> {
    let out = empty(ordinal_of(t)?, t.shape(), t.dtype())?;
    let n = out.numel();
    if n == 0 {
        return Ok(out);
    }
    let dev = dev_of(t)?;
    let (xp, xl, o) = (ptr(t)?, layout_of("nan_to_num", t.layout())?, ptr(&out)?);
    let n64 = n as i64;
    let name = format!("nan_to_num_{}", dtype_suffix(t.dtype()));
    launch!(dev, KernelFile::FillCopy, name, elementwise(n); xp, xl, o, n64, nan, posinf, neginf)?;
    Ok(out)
}

// ------------------------------------------------------------------------------- reductions

impl Reduction {
    fn kernel(self) -> &'static str {
        match self {
            Reduction::Sum => "sum",
            Reduction::Prod => "prod",
            Reduction::Mean => "mean",
            Reduction::Max => "max",
            Reduction::Min => "min",
        }
    }
}

fn outer_dim_inner(shape: &[usize], dim: usize) -> (usize, usize, usize) {
    let outer = shape[..dim].iter().product();
    let inner = shape[dim + 1..].iter().product();
    (outer, shape[dim], inner)
}

fn reduce_cfg(outer: usize, inner: usize) -> cudarc::driver::LaunchConfig {
    if inner == 1 {
        per_row(outer)
    } else {
        elementwise(outer * inner)
    }
}

/// Reduce dim `dim` of `t` (result without that dim); values and, for max/min, indices.
/// Sums and products of integer tensors are computed in int64, as PyTorch returns them.
pub(crate) fn reduce_dim(t: &Tensor, dim: usize, r: Reduction) -> Result<(Tensor, Option<Tensor>)> {
    let dt = t.dtype();
    if matches!(r, Reduction::Sum | Reduction::Prod) && !dt.is_floating_point() && dt != DType::I64
    {
        return reduce_dim(&cast(t, DType::I64)?, dim, r);
    }
    if r == Reduction::Mean && !dt.is_floating_point() {
        return Err(Error::NotImplemented(format!(
            "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: {}",
            dt.torch_name()
        )));
    }
    if dt == DType::Bool {
        if matches!(r, Reduction::Max | Reduction::Min) {
            // max/min of bools: of the same values as uint8.
            let (v, i) = reduce_dim(&cast(t, DType::U8)?, dim, r)?;
            return Ok((cast(&v, DType::Bool)?, i));
        }
        return Err(not_implemented(r.kernel(), t));
    }
    let x = contiguous(t)?;
    let (outer, size, inner) = outer_dim_inner(x.shape(), dim);
    let mut out_shape = x.shape().to_vec();
    out_shape.remove(dim);
    let ordinal = ordinal_of(&x)?;
    let values = empty(ordinal, &out_shape, dt)?;
    let indices = matches!(r, Reduction::Max | Reduction::Min)
        .then(|| empty(ordinal, &out_shape, DType::I64))
        .transpose()?;
    if values.numel() == 0 {
        return Ok((values, indices));
    }
    if size == 0 {
        if matches!(r, Reduction::Max | Reduction::Min) {
            return Err(Error::Runtime(format!(
                "{}(): Expected reduction dim {dim} to have non-zero size",
                r.kernel()
            )));
        }
        let v = match r {
            Reduction::Sum => Scalar::Int(0),
            Reduction::Prod => Scalar::Int(1),
            _ => Scalar::Float(f64::NAN),
        };
        return Ok((full(ordinal, &out_shape, v, dt)?, None));
    }
    let dev = dev_of(&x)?;
    let xp = ptr(&x)? + (x.storage_offset() * dt.size()) as u64;
    let vp = ptr(&values)?;
    let (o64, d64, i64_) = (outer as i64, size as i64, inner as i64);
    let name = format!("{}_{}", r.kernel(), dtype_suffix(dt));
    let cfg = reduce_cfg(outer, inner);
    match &indices {
        Some(idx) => {
            let ip = ptr(idx)?;
            launch!(dev, KernelFile::Reduce, name, cfg; xp, vp, ip, o64, d64, i64_)?;
        }
        None => launch!(dev, KernelFile::Reduce, name, cfg; xp, vp, o64, d64, i64_)?,
    }
    Ok((values, indices))
}

/// Reduce the dims flagged in `mask` (values only), optionally keeping them as size 1.
pub(crate) fn reduce(t: &Tensor, mask: &[bool], keepdim: bool, r: Reduction) -> Result<Tensor> {
    let half = matches!(t.dtype(), DType::F16 | DType::BF16);
    if half
        && matches!(r, Reduction::Sum | Reduction::Mean | Reduction::Prod)
        && mask.iter().filter(|&&m| m).count() > 1
    {
        // One dim at a time would round to 16 bits between the passes: keep float32
        // partial results and round once, as a single reduction does.
        let wide = reduce(&cast(t, DType::F32)?, mask, keepdim, r)?;
        return cast(&wide, t.dtype());
    }
    let mut x = t.clone();
    // Highest dim first, so lower dim indices stay valid.
    for d in (0..mask.len()).rev() {
        if mask[d] {
            x = reduce_dim(&x, d, r)?.0;
        }
    }
    if !mask.iter().any(|&m| m) && matches!(r, Reduction::Sum | Reduction::Prod) {
        // Nothing reduced: still PyTorch's result dtype.
        if !x.dtype().is_floating_point() {
            x = cast(&x, DType::I64)?;
        }
    }
    if keepdim {
        let shape: Vec<usize> = t
            .shape()
            .iter()
            .zip(mask)
            .map(|(&n, &m)| if m { 1 } else { n })
            .collect();
        x = x.reshape_contiguous(&shape);
    }
    Ok(x)
}

/// softmax / log_softmax along `dim` (float dtypes).
pub(crate) fn softmax(t: &Tensor, dim: usize, log: bool) -> Result<Tensor> {
    let dt = t.dtype();
    if !dt.is_floating_point() {
        return Err(not_implemented("softmax", t));
    }
    let x = contiguous(t)?;
    let out = empty(ordinal_of(&x)?, x.shape(), dt)?;
    if out.numel() == 0 {
        return Ok(out);
    }
    let (outer, size, inner) = outer_dim_inner(x.shape(), dim);
    let dev = dev_of(&x)?;
    let xp = ptr(&x)? + (x.storage_offset() * dt.size()) as u64;
    let yp = ptr(&out)?;
    let (o64, d64, i64_) = (outer as i64, size as i64, inner as i64);
    let kind = if log { "log_softmax" } else { "softmax" };
    let name = format!("{kind}_fwd_{}", dtype_suffix(dt));
    launch!(dev, KernelFile::Reduce, name, reduce_cfg(outer, inner); xp, yp, o64, d64, i64_)?;
    Ok(out)
}

// ------------------------------------------------------------------------------- matmul

/// How cuBLAS can read a (batch of) row-major matrix view without a copy, if it can.
fn blas_operand(t: &Tensor, batch_stride: i64) -> Option<Operand> {
    let n = t.ndim();
    let (rows, cols) = (t.shape()[n - 2], t.shape()[n - 1]);
    let (rs, cs) = (t.strides()[n - 2], t.strides()[n - 1]);
    let base = storage(t).ok()?.device_ptr() + (t.storage_offset() * t.dtype().size()) as u64;
    if cs == 1 || cols == 1 {
        let ld = if rows == 1 { cols.max(1) } else { rs };
        if ld >= cols.max(1) {
            return Some(Operand {
                ptr: base,
                transposed: false,
                ld: ld as i64,
                batch_stride,
            });
        }
    }
    if rs == 1 || rows == 1 {
        let ld = if cols == 1 { rows.max(1) } else { cs };
        if ld >= rows.max(1) {
            return Some(Operand {
                ptr: base,
                transposed: true,
                ld: ld as i64,
                batch_stride,
            });
        }
    }
    None
}

/// Batched row-major product of `a` (..., m, k) and `b` (..., k, n) with broadcast batch dims
/// (same dtype, same device); the result is contiguous (..., m, n).
pub(crate) fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.device() != b.device() {
        return Err(Error::DeviceMismatch {
            op: "matmul",
            lhs: a.device(),
            rhs: b.device(),
        });
    }
    let (na, nb) = (a.ndim(), b.ndim());
    let (m, k, n) = (a.shape()[na - 2], a.shape()[na - 1], b.shape()[nb - 1]);
    let batch =
        crate::layout::broadcast_shapes("matmul", &a.shape()[..na - 2], &b.shape()[..nb - 2])?;
    let nbatch: usize = batch.iter().product();
    let mut out_shape = batch.to_vec();
    out_shape.extend([m, n]);
    let ordinal = ordinal_of(a)?;
    if k == 0 {
        return full(ordinal, &out_shape, Scalar::Int(0), a.dtype());
    }
    let out = empty(ordinal, &out_shape, a.dtype())?;
    if out.numel() == 0 {
        return Ok(out);
    }
    // View each operand as (nbatch, rows, cols) with one batch stride (0 when broadcast); a
    // contiguous copy when its batch dims do not collapse or cuBLAS cannot read its matrices.
    let mut keep: Vec<Tensor> = Vec::new();
    let mut as_batched = |t: &Tensor, rows: usize, cols: usize| -> Result<Operand> {
        let mut full_shape = batch.to_vec();
        full_shape.extend([rows, cols]);
        let l = t.layout().broadcast_to("matmul", &full_shape)?;
        let nb = batch.len();
        let dims: Vec<(usize, usize)> = batch
            .iter()
            .zip(&l.strides[..nb])
            .filter(|(&size, _)| size != 1)
            .map(|(&size, &st)| (size, st))
            .collect();
        if dims.windows(2).all(|w| w[0].1 == w[1].1 * w[1].0) {
            let bs = dims.last().map(|&(_, st)| st).unwrap_or(0);
            let mut v = Layout::contiguous(&[nbatch, rows, cols]);
            v.strides = smallvec::smallvec![bs, l.strides[nb], l.strides[nb + 1]];
            v.offset = l.offset;
            if let Some(op) = blas_operand(&t.with_layout(v), bs as i64) {
                return Ok(op);
            }
        }
        let c = clone(&t.with_layout(l))?;
        let c3 = c.reshape_contiguous(&[nbatch, rows, cols]);
        let op = blas_operand(&c3, (rows * cols) as i64)
            .ok_or_else(|| Error::Runtime("matmul on CUDA: bad operand layout".into()))?;
        keep.push(c3);
        Ok(op)
    };
    let oa = as_batched(a, m, k)?;
    let ob = as_batched(b, k, n)?;
    let dev = dev_of(&out)?;
    gemm_batched(&dev, a.dtype(), m, n, k, oa, ob, ptr(&out)?, nbatch)?;
    drop(keep);
    Ok(out)
}

// ------------------------------------------------------------------------------- indexing, joins

/// `index` as int64 on `like`'s device.
fn index_on_device(index: &Tensor, like: &Tensor) -> Result<Tensor> {
    let i = if index.device() == like.device() {
        index.clone()
    } else if index.device() == Device::Cpu {
        upload(index, ordinal_of(like)?)?
    } else {
        return Err(Error::DeviceMismatch {
            op: "index",
            lhs: like.device(),
            rhs: index.device(),
        });
    };
    cast(&i, DType::I64)
}

/// `where(cond, x, y)` with `x`, `y` already of the result dtype; all broadcast to `shape`.
pub(crate) fn where_(cond: &Tensor, x: &Tensor, y: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let anchor = [cond, x, y]
        .into_iter()
        .find(|t| t.device().is_cuda())
        .ok_or_else(|| Error::Runtime("where: no CUDA operand".into()))?
        .clone();
    let c = on_device_of(cond, &anchor, "where")?;
    let a = on_device_of(x, &anchor, "where")?;
    let b = on_device_of(y, &anchor, "where")?;
    let dtype = a.dtype();
    let out = empty(ordinal_of(&anchor)?, shape, dtype)?;
    let n = out.numel();
    if n == 0 {
        return Ok(out);
    }
    let (lc, la, lb) = (
        c.layout().broadcast_to("where", shape)?,
        a.layout().broadcast_to("where", shape)?,
        b.layout().broadcast_to("where", shape)?,
    );
    let [cl, al, bl] = joint_layouts::<3>(
        "where",
        shape,
        [
            (&lc.strides, lc.offset),
            (&la.strides, la.offset),
            (&lb.strides, lb.offset),
        ],
    )?;
    let dev = dev_of(&anchor)?;
    let (cp, ap, bp, o) = (ptr(&c)?, ptr(&a)?, ptr(&b)?, ptr(&out)?);
    let n64 = n as i64;
    let name = format!("where_{}", dtype_suffix(dtype));
    launch!(dev, KernelFile::Index, name, elementwise(n); cp, cl, ap, al, bp, bl, o, n64)?;
    Ok(out)
}

/// Rows of `x` (at least 1-d) at `index` (validated by the caller) along `dim`.
pub(crate) fn index_select(x: &Tensor, dim: usize, index: &Tensor) -> Result<Tensor> {
    if x.ndim() > super::launch::MAX_DIMS {
        // More dims than a kernel layout holds: as (outer, size, inner) of a contiguous copy.
        let (outer, size, inner) = outer_dim_inner(x.shape(), dim);
        let x3 = contiguous(x)?.reshape_contiguous(&[outer, size, inner]);
        let r = index_select(&x3, 1, index)?;
        let mut shape = x.shape().to_vec();
        shape[dim] = r.shape()[1];
        return Ok(r.reshape_contiguous(&shape));
    }
    let idx = contiguous(&index_on_device(index, x)?)?;
    let nidx = idx.numel();
    let mut shape = x.shape().to_vec();
    shape[dim] = nidx;
    let out = empty(ordinal_of(x)?, &shape, x.dtype())?;
    let n = out.numel();
    if n == 0 {
        return Ok(out);
    }
    let xl = unmerged_layout("index_select", x.layout())?;
    let dev = dev_of(x)?;
    let (xp, o) = (ptr(x)?, ptr(&out)?);
    let ip = ptr(&idx)? + (idx.storage_offset() * 8) as u64;
    let (nidx64, dim32, n64) = (nidx as i64, dim as i32, n as i64);
    let name = format!("index_select_{}", dtype_suffix(x.dtype()));
    launch!(dev, KernelFile::Index, name, elementwise(n); xp, xl, ip, nidx64, o, dim32, n64)?;
    Ok(out)
}

/// `out[c] = x[c with c[dim] = index[c]]`, shaped like `index` (validated by the caller).
pub(crate) fn gather(x: &Tensor, dim: usize, index: &Tensor) -> Result<Tensor> {
    let idx = index_on_device(index, x)?;
    let out = empty(ordinal_of(x)?, idx.shape(), x.dtype())?;
    let n = out.numel();
    if n == 0 {
        return Ok(out);
    }
    let (xl, il) = (
        unmerged_layout("gather", x.layout())?,
        unmerged_layout("gather", idx.layout())?,
    );
    let dev = dev_of(x)?;
    let (xp, ip, o) = (ptr(x)?, ptr(&idx)?, ptr(&out)?);
    let (dim32, n64) = (dim as i32, n as i64);
    let name = format!("gather_{}", dtype_suffix(x.dtype()));
    launch!(dev, KernelFile::Index, name, elementwise(n); xp, xl, ip, il, o, dim32, n64)?;
    Ok(out)
}

/// Concatenate `srcs` (same dtype and device, shapes checked by the caller) along `dim`
/// into a new tensor of `shape`.
pub(crate) fn cat(srcs: &[Tensor], dim: usize, shape: &[usize]) -> Result<Tensor> {
    let first = &srcs[0];
    for t in srcs {
        if t.device() != first.device() {
            return Err(Error::DeviceMismatch {
                op: "cat",
                lhs: first.device(),
                rhs: t.device(),
            });
        }
    }
    let dtype = first.dtype();
    let out = empty(ordinal_of(first)?, shape, dtype)?;
    let inner: usize = shape[dim + 1..].iter().product();
    let out_cols = (shape[dim] * inner) as i64;
    let dev = dev_of(first)?;
    let o = ptr(&out)?;
    let name = format!("cat_copy_{}", dtype_suffix(dtype));
    let mut col_offset = 0i64;
    for t in srcs {
        let src_cols = (t.shape()[dim] * inner) as i64;
        let n = t.numel();
        if n > 0 {
            let sl = layout_of("cat", t.layout())?;
            let sp = ptr(t)?;
            let n64 = n as i64;
            launch!(dev, KernelFile::Index, name, elementwise(n); sp, sl, o, src_cols, out_cols, col_offset, n64)?;
        }
        col_offset += src_cols;
    }
    Ok(out)
}
