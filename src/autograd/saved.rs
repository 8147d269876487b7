//! Tensors a backward formula saves from the forward pass ([`SavedTensor`]), and the
//! pack/unpack hooks that may stand in for them until backward (PyTorch's
//! `torch.autograd.graph.saved_tensors_hooks`: keep activations on the CPU, in half
//! precision, on disk...).
//!
//! Hooks are a per-thread stack: a tensor saved while the stack is non-empty is handed to the
//! top pair's `pack`, and the formula sees `unpack(packed)` when backward first reads it. A
//! global count of pushed pairs lets the common case (no hooks anywhere) skip the
//! thread-local read.

use super::{edge_of, grad_mode, is_grad_enabled, no_grad, Edge};
use crate::{Error, Result, Tensor};
use std::any::Any;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// What a pack hook made of a saved tensor.
pub type Packed = Box<dyn Any + Send + Sync>;

/// A pack/unpack pair (`saved_tensors_hooks(pack_hook, unpack_hook)`).
pub trait SavedTensorHooks: Send + Sync {
    /// Called when an op saves `t` for backward (with grad recording off).
    fn pack(&self, t: &Tensor) -> Result<Packed>;
    /// Called when backward first reads the saved tensor.
    fn unpack(&self, packed: &Packed) -> Result<Tensor>;
    /// The pair itself, so a binding can find its own hooks on the stack.
    fn as_any(&self) -> &dyn Any;
}

/// Pairs pushed on all threads together (0: no thread has hooks).
static HOOKS_PUSHED: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static HOOKS: RefCell<Vec<Arc<dyn SavedTensorHooks>>> = const { RefCell::new(Vec::new()) };
}

/// Make `hooks` this thread's innermost pair.
pub fn push_saved_tensors_hooks(hooks: Arc<dyn SavedTensorHooks>) {
    HOOKS.with(|s| s.borrow_mut().push(hooks));
    HOOKS_PUSHED.fetch_add(1, Ordering::SeqCst);
}

/// Remove this thread's innermost pair; false when there was none.
pub fn pop_saved_tensors_hooks() -> bool {
    let popped = HOOKS.with(|s| s.borrow_mut().pop()).is_some();
    if popped {
        HOOKS_PUSHED.fetch_sub(1, Ordering::SeqCst);
    }
    popped
}

/// This thread's innermost pair, if any.
pub fn current_saved_tensors_hooks() -> Option<Arc<dyn SavedTensorHooks>> {
    if HOOKS_PUSHED.load(Ordering::Relaxed) == 0 {
        return None;
    }
    HOOKS.with(|s| s.borrow().last().cloned())
}

/// PyTorch's error for an inference tensor saved for backward.
pub const INFERENCE_SAVED_MSG: &str = "Inference tensors cannot be saved for backward. Please do not use Tensors created in inference mode in computation tracked by autograd. To work around this, you can make a clone to get a normal tensor and use it in autograd, or use `torch.no_grad()` instead of `torch.inference_mode()`.";

/// An error raised while saving a tensor (an inference tensor, a failing pack hook). The
/// recording functions return nothing (changing that touches every op), so the op finishes
/// and its caller reports the error instead of the result: [`take_pending_save_error`],
/// called by the Python bindings after each op. The global flag lets that check skip the
/// thread-local read.
static PENDING_ANY: AtomicBool = AtomicBool::new(false);
thread_local! {
    static PENDING: RefCell<Option<Error>> = const { RefCell::new(None) };
}

fn set_pending(e: Error) {
    PENDING.with(|p| {
        let mut p = p.borrow_mut();
        // The first error of an op is the one to report.
        if p.is_none() {
            *p = Some(e);
        }
    });
    PENDING_ANY.store(true, Ordering::Relaxed);
}

/// The pending save error of this thread's last op, if any (cleared by the call).
pub fn take_pending_save_error() -> Option<Error> {
    if !PENDING_ANY.load(Ordering::Relaxed) {
        return None;
    }
    PENDING.with(|p| p.borrow_mut().take())
}

/// A tensor saved for backward.
pub struct SavedTensor {
    data: Saved,
    node_name: &'static str,
}

enum Saved {
    /// The tensor, with its storage version at save time so that a later in-place
    /// modification is detected.
    Plain { tensor: Tensor, version: u64 },
    /// What a pack hook returned, unpacked on first use. `edge` is where the tensor sat in
    /// the graph: the unpacked tensor takes its place there under `create_graph`, as the
    /// original would have.
    Packed {
        hooks: Arc<dyn SavedTensorHooks>,
        packed: Packed,
        edge: Option<Edge>,
        unpacked: OnceLock<Tensor>,
    },
}

impl SavedTensor {
    pub fn new(t: &Tensor, node_name: &'static str) -> Self {
        // In inference mode nothing is meant to be recorded (PyTorch records nothing there
        // even under enable_grad), so only a save outside it is an error.
        if t.is_inference() && !grad_mode::is_inference_mode_enabled() {
            set_pending(Error::Runtime(INFERENCE_SAVED_MSG.into()));
        }
        if let Some(hooks) = current_saved_tensors_hooks() {
            // Grad recording off: whatever the hook computes is not part of the graph (and
            // cannot save tensors of its own, which would call the hook again).
            match no_grad(|| hooks.pack(t)) {
                Ok(packed) => {
                    let edge = if t.requires_grad() { edge_of(t) } else { None };
                    return SavedTensor {
                        data: Saved::Packed {
                            hooks,
                            packed,
                            edge,
                            unpacked: OnceLock::new(),
                        },
                        node_name,
                    };
                }
                Err(e) => set_pending(e),
            }
        }
        SavedTensor {
            data: Saved::Plain {
                tensor: t.clone(),
                version: t.storage().version(),
            },
            node_name,
        }
    }

    /// The saved tensor, or PyTorch's in-place modification error. A packed tensor is
    /// unpacked on the first call (an unpack hook's error is returned).
    pub fn get(&self) -> Result<&Tensor> {
        match &self.data {
            Saved::Plain { tensor, version } => {
                let now = tensor.storage().version();
                if now != *version {
                    return Err(Error::Runtime(format!(
                        "one of the variables needed for gradient computation has been modified by an inplace operation: [{} {:?}], which is used by {}, is at version {now}; expected version {version} instead. Hint: the operation that failed was an in-place op on a tensor saved for backward; use an out-of-place op or .clone() first.",
                        tensor.dtype().torch_name(),
                        tensor.shape(),
                        self.node_name,
                    )));
                }
                Ok(tensor)
            }
            Saved::Packed {
                hooks,
                packed,
                edge,
                unpacked,
            } => {
                if let Some(t) = unpacked.get() {
                    return Ok(t);
                }
                let t = hooks.unpack(packed)?;
                let t = match edge {
                    Some(e) if is_grad_enabled() => {
                        t.detach().with_grad_fn(e.node.clone(), e.input_nr)
                    }
                    _ => t,
                };
                Ok(unpacked.get_or_init(|| t))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Packs a tensor as an f64 copy and counts the calls.
    struct CopyHooks {
        packs: AtomicUsize,
        unpacks: AtomicUsize,
    }

    impl SavedTensorHooks for CopyHooks {
        fn pack(&self, t: &Tensor) -> Result<Packed> {
            self.packs.fetch_add(1, Ordering::SeqCst);
            Ok(Box::new(t.to_vec::<f64>()?))
        }
        fn unpack(&self, packed: &Packed) -> Result<Tensor> {
            self.unpacks.fetch_add(1, Ordering::SeqCst);
            let v = packed.downcast_ref::<Vec<f64>>().expect("packed by pack");
            Tensor::from_vec(v.clone(), &[v.len()])
        }
        fn as_any(&self) -> &dyn Any {
            self
        }
    }

    #[test]
    fn hooks_pack_and_unpack_saved_tensors() {
        let hooks = Arc::new(CopyHooks {
            packs: AtomicUsize::new(0),
            unpacks: AtomicUsize::new(0),
        });
        let x = Tensor::from_vec(vec![1.0f64, -2.0, 3.0], &[3]).unwrap();
        x.set_requires_grad(true).unwrap();
        push_saved_tensors_hooks(hooks.clone());
        let y = x.binary(&x, crate::BinaryOp::Mul).unwrap(); // saves x twice
        assert!(pop_saved_tensors_hooks());
        assert!(!pop_saved_tensors_hooks());
        assert_eq!(hooks.packs.load(Ordering::SeqCst), 2);
        let s = y.sum(None, false, None).unwrap();
        crate::autograd::backward(&[s], vec![None], None, false, None).unwrap();
        assert_eq!(hooks.unpacks.load(Ordering::SeqCst), 2);
        assert_eq!(
            x.grad().unwrap().to_vec::<f64>().unwrap(),
            vec![2.0, -4.0, 6.0]
        );
    }
}
