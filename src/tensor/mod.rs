//! `Tensor`: a cheap handle (`Arc`) to a storage plus a layout. Op methods are thin:
//! validate -> promote/broadcast -> run a CPU kernel -> wrap the result.

mod activation;
pub mod creation;
mod elementwise;
mod elementwise_grad;
mod fused_grad;
mod grad_gaps;
pub(crate) mod host_fallback;
pub use host_fallback::host_fallback_ops;
mod index;
mod index_grad;
mod inplace;
pub mod join;
pub(crate) mod linalg;
mod linalg_device;
mod linalg_grad;
mod reduce;
mod reduce_grad;
mod sort;
mod view;

pub use activation::EluParams;
pub use elementwise::{BinaryOp, UnaryOp};
pub use index::{TensorIndex, TensorOrScalar};
pub use linalg::{Lstsq, MatrixNormOrd};
pub use sort::Unique;
pub use view::{broadcast_shapes_all, broadcast_tensors};

use crate::cpu::strided;
use crate::layout::Layout;
use crate::storage::{CpuStorage, Storage};
use crate::{with_dtype, DType, Device, Element, Error, Result, Scalar};
use std::sync::{Arc, Mutex, MutexGuard};

pub use crate::autograd::AutogradMeta;

pub struct TensorImpl {
    storage: Arc<Storage>,
    layout: Layout,
    dtype: DType,
    meta: Mutex<AutogradMeta>,
    /// For views: the tensor whose storage this one views (PyTorch's `._base`).
    base: Option<Tensor>,
    /// Created under `inference_mode` (PyTorch's inference tensors), or a view of such a
    /// tensor: it may not be saved for backward, nor updated in place outside the mode.
    inference: bool,
}

/// An n-dimensional strided array. Cloning a `Tensor` clones a handle, not the data.
#[derive(Clone)]
pub struct Tensor(pub(crate) Arc<TensorImpl>);

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Tensor(shape={:?}, dtype={}, device={})",
            self.shape(),
            self.dtype(),
            self.device()
        )
    }
}

impl Tensor {
    // ---------------------------------------------------------------- construction

    pub(crate) fn from_parts(storage: Arc<Storage>, layout: Layout, dtype: DType) -> Tensor {
        Tensor(Arc::new(TensorImpl {
            storage,
            layout,
            dtype,
            meta: Mutex::new(AutogradMeta::default()),
            base: None,
            inference: crate::autograd::grad_mode::is_inference_mode_enabled(),
        }))
    }

    /// A new contiguous tensor owning `data`, with `shape`.
    pub fn from_vec<T: Element>(data: Vec<T>, shape: &[usize]) -> Result<Tensor> {
        let numel: usize = shape.iter().product();
        if numel != data.len() {
            return Err(Error::invalid(
                "from_vec",
                format!(
                    "shape {shape:?} needs {numel} elements but {} were given",
                    data.len()
                ),
            ));
        }
        Ok(Self::from_vec_unchecked(data, shape))
    }

    pub(crate) fn from_vec_unchecked<T: Element>(data: Vec<T>, shape: &[usize]) -> Tensor {
        debug_assert_eq!(shape.iter().product::<usize>(), data.len());
        Tensor::from_parts(
            Arc::new(Storage::cpu(CpuStorage::from_vec(data))),
            Layout::contiguous(shape),
            T::DTYPE,
        )
    }

    /// A 0-d tensor holding `value` converted to `dtype`.
    pub fn scalar(value: Scalar, dtype: DType) -> Tensor {
        with_dtype!(dtype, T, {
            Tensor::from_vec_unchecked(vec![value.to_elem::<T>()], &[])
        })
    }

    /// A tensor of `shape` filled with `value`.
    pub fn full(shape: &[usize], value: Scalar, dtype: DType) -> Tensor {
        let n = shape.iter().product();
        with_dtype!(dtype, T, {
            Tensor::from_vec_unchecked(vec![value.to_elem::<T>(); n], shape)
        })
    }

    /// A tensor of `shape` filled with `value` on `device`.
    pub fn full_on(device: Device, shape: &[usize], value: Scalar, dtype: DType) -> Result<Tensor> {
        match device {
            Device::Cpu => Ok(Tensor::full(shape, value, dtype)),
            Device::Cuda(n) => crate::cuda::ops::full(n, shape, value, dtype),
        }
    }

    pub fn zeros(shape: &[usize], dtype: DType) -> Tensor {
        Tensor::full(shape, Scalar::Int(0), dtype)
    }

    pub fn ones(shape: &[usize], dtype: DType) -> Tensor {
        Tensor::full(shape, Scalar::Int(1), dtype)
    }

    /// Wrap a storage with a layout (for zero-copy imports). Checks that the layout fits.
    pub fn from_storage(storage: Arc<Storage>, layout: Layout) -> Result<Tensor> {
        if layout.storage_extent() > storage.len() {
            return Err(Error::Runtime(format!(
                "layout with shape {:?}, strides {:?} and offset {} does not fit a storage of {} elements",
                layout.shape,
                layout.strides,
                layout.offset,
                storage.len()
            )));
        }
        let dtype = storage.dtype();
        Ok(Tensor::from_parts(storage, layout, dtype))
    }

    /// A view of the same storage with another layout.
    pub(crate) fn with_layout(&self, layout: Layout) -> Tensor {
        Tensor(Arc::new(TensorImpl {
            storage: self.0.storage.clone(),
            layout,
            dtype: self.0.dtype,
            meta: Mutex::new(AutogradMeta::default()),
            base: Some(self.0.base.clone().unwrap_or_else(|| self.clone())),
            // A view is an inference tensor exactly when its base is (a view of a normal
            // tensor taken in inference mode stays normal, as in PyTorch).
            inference: self.0.inference,
        }))
    }

    /// A tensor sharing storage and layout but no autograd history and no view base.
    pub(crate) fn alias_detached(&self) -> Tensor {
        Tensor(Arc::new(TensorImpl {
            storage: self.0.storage.clone(),
            layout: self.0.layout.clone(),
            dtype: self.0.dtype,
            meta: Mutex::new(AutogradMeta::default()),
            base: None,
            inference: self.0.inference,
        }))
    }

    /// PyTorch's `is_inference()`: created in inference mode, or a view of such a tensor.
    pub fn is_inference(&self) -> bool {
        self.0.inference
    }

    /// PyTorch's refusal to update an inference tensor in place outside inference mode.
    pub(crate) fn check_inference_inplace(&self) -> Result<()> {
        if self.0.inference && !crate::autograd::grad_mode::is_inference_mode_enabled() {
            return Err(Error::Runtime(
                "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to get a normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for more details.".into(),
            ));
        }
        Ok(())
    }

    /// True when this handle is the only reference to the tensor, the tensor is not a view
    /// and has no autograd history, and it alone uses its whole storage (contiguous, offset 0,
    /// no other tensor, no foreign owner such as a NumPy array, writable). Such a tensor can
    /// be adopted (e.g. as a leaf's `.grad`) without a copy: nobody can observe the aliasing.
    pub(crate) fn is_exclusive_plain_buffer(&self) -> bool {
        let imp = &self.0;
        if Arc::strong_count(imp) != 1 || Arc::weak_count(imp) != 0 || imp.base.is_some() {
            return false;
        }
        if Arc::strong_count(&imp.storage) != 1 || Arc::weak_count(&imp.storage) != 0 {
            return false;
        }
        // Device buffers always come from our allocator; CPU ones may be foreign.
        let (owned, len) = match imp.storage.data() {
            crate::storage::StorageData::Cpu(c) => (c.is_writable() && c.owns_vec(), c.len()),
            crate::storage::StorageData::Cuda(c) => (true, c.len()),
        };
        if !owned {
            return false;
        }
        let l = &imp.layout;
        if l.offset != 0 || !l.is_contiguous() || l.numel() != len {
            return false;
        }
        let m = self.meta();
        m.grad_fn.is_none() && !m.requires_grad && m.grad.is_none() && m.hooks.is_empty()
    }

    /// The tensor this one is a view of (`._base`), if any.
    pub fn view_base(&self) -> Option<Tensor> {
        self.0.base.clone()
    }

    // ---------------------------------------------------------------- attributes

    pub fn shape(&self) -> &[usize] {
        &self.0.layout.shape
    }
    pub fn strides(&self) -> &[usize] {
        &self.0.layout.strides
    }
    pub fn storage_offset(&self) -> usize {
        self.0.layout.offset
    }
    pub fn layout(&self) -> &Layout {
        &self.0.layout
    }
    pub fn dtype(&self) -> DType {
        self.0.dtype
    }
    pub fn device(&self) -> Device {
        self.0.storage.device()
    }
    pub fn ndim(&self) -> usize {
        self.0.layout.ndim()
    }
    pub fn numel(&self) -> usize {
        self.0.layout.numel()
    }
    pub fn is_contiguous(&self) -> bool {
        self.0.layout.is_contiguous()
    }
    pub fn storage(&self) -> &Arc<Storage> {
        &self.0.storage
    }
    /// True when both tensors are views of one storage (or of reinterpretations of one
    /// storage's bytes as other dtypes, `view(dtype)`).
    pub fn shares_storage(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(self.0.storage.root(), other.0.storage.root())
    }
    /// Identity of the tensor object (two clones of a handle compare equal).
    pub fn same_tensor(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
    /// Size of dim `dim` (negative counts from the end).
    pub fn size(&self, dim: i64) -> Result<usize> {
        Ok(self.shape()[self.existing_dim(dim)?])
    }
    /// The stride of dim `dim` (negative counts from the end).
    pub fn stride(&self, dim: i64) -> Result<usize> {
        Ok(self.strides()[self.existing_dim(dim)?])
    }
    /// [`Tensor::dim`] for ops that index the shape: a 0-d tensor has no dim 0 to read
    /// (PyTorch's "Dimension specified as 0 but tensor has no dimensions").
    fn existing_dim(&self, dim: i64) -> Result<usize> {
        if self.ndim() == 0 {
            return Err(Error::DimOutOfRange { dim, ndim: 0 });
        }
        self.dim(dim)
    }
    /// Normalise a possibly negative dim index.
    pub fn dim(&self, dim: i64) -> Result<usize> {
        crate::layout::normalize_dim(dim, self.ndim())
    }

    pub(crate) fn meta(&self) -> MutexGuard<'_, AutogradMeta> {
        self.0.meta.lock().unwrap_or_else(|e| e.into_inner())
    }
    /// True for leaves marked `requires_grad` and for every output of a recorded op.
    pub fn requires_grad(&self) -> bool {
        let m = self.meta();
        m.requires_grad || m.grad_fn.is_some()
    }
    /// Mark this tensor as requiring a gradient (floating-point tensors only).
    pub fn set_requires_grad(&self, requires_grad: bool) -> Result<()> {
        if requires_grad && !self.dtype().is_floating_point() {
            return Err(Error::Runtime(format!(
                "only Tensors of floating point dtype can require gradients (got {})",
                self.dtype()
            )));
        }
        if requires_grad
            && self.0.inference
            && !crate::autograd::grad_mode::is_inference_mode_enabled()
        {
            return Err(Error::Runtime(
                "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.".into(),
            ));
        }
        let mut m = self.meta();
        if m.grad_fn.is_some() {
            if !requires_grad {
                return Err(Error::Runtime(
                    "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().".into(),
                ));
            }
            return Ok(());
        }
        m.requires_grad = requires_grad;
        Ok(())
    }
    pub fn grad(&self) -> Option<Tensor> {
        self.meta().grad.clone()
    }
    pub fn set_grad(&self, grad: Option<Tensor>) {
        self.meta().grad = grad;
    }

    // ---------------------------------------------------------------- data access

    /// The CPU storage's whole buffer as `&[T]` (index it with `layout()`).
    pub fn storage_slice<T: Element>(&self) -> Result<&[T]> {
        if T::DTYPE != self.dtype() {
            return Err(Error::DTypeMismatch {
                op: "storage_slice",
                expected: T::DTYPE,
                got: self.dtype(),
            });
        }
        Ok(self.0.storage.try_cpu()?.as_slice::<T>())
    }

    /// The CPU buffer for writing through. In-place ops go through here (it bumps the
    /// version counter and refuses read-only foreign memory).
    ///
    /// # Safety
    /// No other reference into this storage may be alive while the slice is used, other
    /// than through the same element positions the caller is rewriting.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn storage_slice_mut<T: Element>(&self) -> Result<&mut [T]> {
        let cpu = self.0.storage.try_cpu()?;
        if !cpu.is_writable() {
            return Err(Error::Runtime(
                "cannot write to a tensor that shares memory with a read-only buffer".into(),
            ));
        }
        self.check_inference_inplace()?;
        self.0.storage.bump_version();
        Ok(cpu.as_mut_slice::<T>())
    }

    /// The elements in row-major order as a `Vec<T>` (T must be the tensor's dtype).
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if self.device().is_cuda() {
            return crate::cuda::ops::download(self)?.to_vec();
        }
        let s = self.storage_slice::<T>()?;
        let l = self.layout();
        if l.numel() == 0 {
            // An empty view may keep an offset past the end of its (empty) storage.
            return Ok(Vec::new());
        }
        if l.is_contiguous() {
            return Ok(s[l.offset..l.offset + l.numel()].to_vec());
        }
        Ok(strided::map1(s, l, |x| x))
    }

    /// The elements converted to f64 in row-major order.
    pub fn to_f64_vec(&self) -> Vec<f64> {
        if self.device().is_cuda() {
            return cuda_result(crate::cuda::ops::download(self)).to_f64_vec();
        }
        with_dtype!(self.dtype(), T, {
            let s = self
                .storage_slice::<T>()
                .expect("dtype checked by dispatch");
            strided::map1(s, self.layout(), |x: T| x.to_f64())
        })
    }

    /// The single element of a one-element tensor, as a Python-style scalar.
    pub fn item(&self) -> Result<Scalar> {
        if self.numel() != 1 {
            return Err(Error::Runtime(format!(
                "a Tensor with {} elements cannot be converted to Scalar",
                self.numel()
            )));
        }
        if self.device().is_cuda() {
            return crate::cuda::ops::download(self)?.item();
        }
        let off = self.layout().offset;
        Ok(with_dtype!(self.dtype(), T, {
            let v: T = self.storage_slice::<T>()?[off];
            match self.dtype().category() {
                crate::dtype::Category::Float => Scalar::Float(v.to_f64()),
                crate::dtype::Category::Int => Scalar::Int(v.to_i64()),
                crate::dtype::Category::Bool => Scalar::Bool(v.to_i64() != 0),
            }
        }))
    }

    // ---------------------------------------------------------------- copies and casts

    /// This tensor if contiguous, else a contiguous copy.
    pub fn contiguous(&self) -> Tensor {
        if self.is_contiguous() {
            return self.clone();
        }
        self.clone_data()
    }

    /// A contiguous copy that shares nothing with `self` (`Tensor.clone()` in PyTorch).
    pub fn clone_data(&self) -> Tensor {
        if self.device().is_cuda() {
            return cuda_result(crate::cuda::ops::clone(self));
        }
        with_dtype!(self.dtype(), T, {
            let s = self
                .storage_slice::<T>()
                .expect("dtype checked by dispatch");
            Tensor::from_vec_unchecked(strided::map1(s, self.layout(), |x: T| x), self.shape())
        })
    }

    /// This tensor's elements (copied first if not contiguous) viewed with `shape`, which
    /// must have the same number of elements. No autograd record: for kernels' results.
    pub(crate) fn reshape_contiguous(&self, shape: &[usize]) -> Tensor {
        let t = self.contiguous();
        debug_assert_eq!(shape.iter().product::<usize>(), t.numel());
        let mut l = Layout::contiguous(shape);
        l.offset = t.storage_offset();
        Tensor::from_parts(t.0.storage.clone(), l, t.dtype())
    }

    /// Convert to `dtype` (returns `self` when it already has that dtype).
    pub fn to_dtype(&self, dtype: DType) -> Tensor {
        if dtype == self.dtype() {
            return self.clone();
        }
        if self.device().is_cuda() {
            return cuda_result(crate::cuda::ops::cast(self, dtype));
        }
        with_dtype!(self.dtype(), S, {
            let s = self
                .storage_slice::<S>()
                .expect("dtype checked by dispatch");
            with_dtype!(dtype, D, {
                Tensor::from_vec_unchecked(
                    strided::map1(s, self.layout(), |x: S| x.cast::<D>()),
                    self.shape(),
                )
            })
        })
    }

    /// Move to `device` (a copy unless the tensor is already there).
    pub fn to_device(&self, device: Device) -> Result<Tensor> {
        if device == self.device() {
            return Ok(self.clone());
        }
        let out = crate::cuda::ops::to_device(self, device)?;
        elementwise_grad::record_to_device(self, &out);
        Ok(out)
    }

    /// Fill every element with the number `value` in place. As in PyTorch, a value the
    /// dtype cannot hold is an error ("value cannot be converted to type int8_t without
    /// overflow"), not wrapped: see [`Scalar::check_fill`].
    pub fn fill_(&self, value: Scalar) -> Result<()> {
        value.check_fill(self.dtype(), self.numel(), self.device() == Device::Cpu)?;
        self.fill_cast_(value)
    }

    /// Fill every element with `value` converted like a tensor cast (integers wrap, floats
    /// beyond the range become inf): `fill_` with a 0-d tensor value.
    pub fn fill_cast_(&self, value: Scalar) -> Result<()> {
        let src = Tensor::scalar(value, self.dtype());
        self.copy_as(&src, "fill")
    }
}

/// Unwrap the result of a CUDA kernel in an infallible method (`clone_data`, `to_dtype`):
/// a failure there (out of memory, a lost device) panics, and the panic is raised as a
/// Python RuntimeError carrying the message.
fn cuda_result(r: Result<Tensor>) -> Tensor {
    r.unwrap_or_else(|e| panic!("{e}"))
}
