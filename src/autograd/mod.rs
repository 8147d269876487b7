//! Reverse-mode automatic differentiation recorded at run time.
//!
//! Each differentiable op calls [`record`] after computing its result: one [`Node`] holding
//! the backward formula (written with Tensor ops, so it works under `create_graph`) and edges
//! to its inputs' nodes (or to an AccumulateGrad node for a leaf). [`engine::backward`] runs
//! the graph by dependency counting, without recursion.

pub mod anomaly;
pub mod engine;
pub(crate) mod formula;
pub mod grad_mode;
pub mod node;
pub mod saved;

pub use engine::{backward, current_pass_id, grad, queue_callback, FinalCallback};
pub use grad_mode::{is_grad_enabled, no_grad, set_grad_enabled, GradModeGuard};
pub use node::{
    BackwardFn, Edge, HookFn, Node, NodePostHookFn, NodePreHookFn, PostAccumulateHookFn,
};
pub use saved::{
    current_saved_tensors_hooks, pop_saved_tensors_hooks, push_saved_tensors_hooks,
    take_pending_save_error, SavedTensor, SavedTensorHooks, INFERENCE_SAVED_MSG,
};

use crate::cpu::strided;
use crate::layout::Layout;
use crate::{with_dtype, Element, Error, Result, Tensor};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

/// Autograd bookkeeping kept on every tensor.
#[derive(Default)]
pub struct AutogradMeta {
    /// Leaf flag set by the user (`requires_grad=True`).
    pub requires_grad: bool,
    pub grad: Option<Tensor>,
    /// The node that produced this tensor (None for leaves).
    pub grad_fn: Option<Arc<Node>>,
    /// Which output of `grad_fn` this tensor is.
    pub output_nr: usize,
    /// Cached AccumulateGrad node of a leaf (weak: the graph owns it).
    pub grad_accumulator: Weak<Node>,
    pub retains_grad: bool,
    /// Hooks on a leaf's gradient (non-leaf hooks live on the grad_fn node).
    pub hooks: Vec<(u64, HookFn)>,
    /// Hooks run after a gradient was accumulated into a leaf's `.grad`.
    pub post_accumulate_hooks: Vec<(u64, PostAccumulateHookFn)>,
    /// A view returned by an op that returns several views (split, chunk, unbind), or a view
    /// of one: in-place writes to it are refused under autograd, as in PyTorch.
    pub multi_output_view: bool,
}

static HOOK_ID: AtomicU64 = AtomicU64::new(1);

pub fn next_hook_id() -> u64 {
    HOOK_ID.fetch_add(1, Ordering::Relaxed)
}

/// True when an op on `inputs` must be recorded.
pub fn needs_grad(inputs: &[&Tensor]) -> bool {
    is_grad_enabled() && inputs.iter().any(|t| t.requires_grad())
}

/// The edge a gradient for `t` must follow: its grad_fn, its leaf accumulator, or None.
pub fn edge_of(t: &Tensor) -> Option<Edge> {
    let mut m = t.meta();
    if let Some(f) = &m.grad_fn {
        return Some(Edge {
            node: f.clone(),
            input_nr: m.output_nr,
        });
    }
    if !m.requires_grad {
        return None;
    }
    if let Some(acc) = m.grad_accumulator.upgrade() {
        return Some(Edge {
            node: acc,
            input_nr: 0,
        });
    }
    drop(m);
    let acc = Arc::new(Node::accumulate_grad(t.clone()));
    m = t.meta();
    m.grad_accumulator = Arc::downgrade(&acc);
    Some(Edge {
        node: acc,
        input_nr: 0,
    })
}

/// What a backward formula captured from the forward pass.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Saves {
    /// Tensors: they are freed after backward (without `retain_graph`), and a second
    /// backward through the node is an error.
    Tensors,
    /// Only shapes, dtypes, devices or scalars: the node may run backward again.
    NoTensors,
}

/// Record one node for an op with `inputs` -> `outputs`. Outputs that are not floating point
/// are left out of the graph. Call only when [`needs_grad`] is true.
pub fn record(name: &str, inputs: &[&Tensor], outputs: &[&Tensor], backward: BackwardFn) {
    record_saving(name, inputs, outputs, Saves::Tensors, backward)
}

/// [`record`] for a formula that says what it captured (see [`Saves`]).
pub fn record_saving(
    name: &str,
    inputs: &[&Tensor],
    outputs: &[&Tensor],
    saves: Saves,
    backward: BackwardFn,
) {
    let next = inputs.iter().map(|t| edge_of(t)).collect();
    let node = Node::new(name, next, outputs.len(), backward);
    let node = Arc::new(match saves {
        Saves::Tensors => node,
        Saves::NoTensors => node.reusable(),
    });
    for (i, o) in outputs.iter().enumerate() {
        if !o.dtype().is_floating_point() {
            continue;
        }
        let mut m = o.meta();
        m.grad_fn = Some(node.clone());
        m.output_nr = i;
    }
}

/// Convenience for the common one-output case: records when needed and returns `out`.
pub fn record_unary_output(
    name: &str,
    inputs: &[&Tensor],
    out: Tensor,
    backward: impl FnMut(&Tensor) -> Result<Vec<Option<Tensor>>> + Send + 'static,
) -> Tensor {
    if needs_grad(inputs) && out.dtype().is_floating_point() {
        let mut backward = backward;
        record(
            name,
            inputs,
            &[&out],
            Box::new(move |grads: &[Option<Tensor>]| match &grads[0] {
                Some(g) => backward(g),
                None => Ok(vec![None; 0]),
            }),
        );
    }
    out
}

impl Tensor {
    /// The node that produced this tensor.
    pub fn grad_fn(&self) -> Option<Arc<Node>> {
        self.meta().grad_fn.clone()
    }
    pub fn output_nr(&self) -> usize {
        self.meta().output_nr
    }
    /// A leaf: not produced by a recorded op.
    pub fn is_leaf(&self) -> bool {
        self.meta().grad_fn.is_none()
    }
    /// A new tensor sharing storage, outside the graph.
    pub fn detach(&self) -> Tensor {
        self.alias_detached()
    }
    /// This (detached) tensor as output `output_nr` of `node`: how a formula that saved its
    /// own output puts it back into the graph under `create_graph`.
    pub(crate) fn with_grad_fn(self, node: Arc<Node>, output_nr: usize) -> Tensor {
        {
            let mut m = self.meta();
            m.grad_fn = Some(node);
            m.output_nr = output_nr;
        }
        self
    }
    /// Cut this tensor out of the graph in place.
    pub fn detach_(&self) {
        let mut m = self.meta();
        m.grad_fn = None;
        m.requires_grad = false;
    }
    /// Keep `.grad` for a non-leaf after backward.
    pub fn retain_grad(&self) -> Result<()> {
        if self.is_leaf() {
            return Ok(());
        }
        if self.meta().retains_grad {
            return Ok(());
        }
        let (node, nr) = {
            let m = self.meta();
            (m.grad_fn.clone().expect("non-leaf"), m.output_nr)
        };
        let weak = Arc::downgrade(&self.0);
        node.add_retain_grad_hook(
            nr,
            Arc::new(move |g: &Tensor| {
                if let Some(t) = weak.upgrade() {
                    let t = Tensor(t);
                    let new = match t.grad() {
                        Some(old) => old.add_raw(g)?,
                        None => g.clone_data(),
                    };
                    t.set_grad(Some(new));
                }
                Ok(None)
            }),
        );
        self.meta().retains_grad = true;
        Ok(())
    }
    pub fn retains_grad(&self) -> bool {
        self.meta().retains_grad
    }
    /// Register a gradient hook; returns its id for removal.
    pub fn register_hook(&self, hook: HookFn) -> Result<u64> {
        if !self.requires_grad() {
            return Err(Error::Runtime(
                "cannot register a hook on a tensor that doesn't require gradient".into(),
            ));
        }
        let id = next_hook_id();
        let mut m = self.meta();
        match &m.grad_fn {
            Some(node) => node.add_pre_hook(id, m.output_nr, hook),
            None => m.hooks.push((id, hook)),
        }
        Ok(id)
    }
    /// Register a hook called with this leaf after each accumulation into its `.grad`
    /// (PyTorch's `register_post_accumulate_grad_hook`); returns its id for removal.
    pub fn register_post_accumulate_grad_hook(&self, hook: PostAccumulateHookFn) -> Result<u64> {
        if !self.requires_grad() {
            return Err(Error::Runtime(
                "cannot register a hook on a tensor that doesn't require gradient".into(),
            ));
        }
        let mut m = self.meta();
        if m.grad_fn.is_some() {
            return Err(Error::Runtime(
                "post accumulate grad hooks cannot be registered on non-leaf tensors".into(),
            ));
        }
        let id = next_hook_id();
        m.post_accumulate_hooks.push((id, hook));
        Ok(id)
    }

    pub fn remove_hook(&self, id: u64) -> bool {
        let mut m = self.meta();
        let before = m.hooks.len() + m.post_accumulate_hooks.len();
        m.hooks.retain(|(i, _)| *i != id);
        m.post_accumulate_hooks.retain(|(i, _)| *i != id);
        if m.hooks.len() + m.post_accumulate_hooks.len() != before {
            return true;
        }
        m.grad_fn
            .as_ref()
            .map(|n| n.remove_pre_hook(id))
            .unwrap_or(false)
    }

    /// `self + other` without recording (used to sum gradients).
    pub(crate) fn add_raw(&self, other: &Tensor) -> Result<Tensor> {
        let _g = GradModeGuard::new(false);
        self.binary(other, crate::BinaryOp::Add)
    }

    /// Sum `self` down to `shape` (undoing broadcasting). Records when grad mode is on.
    pub fn sum_to_shape(&self, shape: &[usize]) -> Result<Tensor> {
        if self.shape() == shape {
            return Ok(self.clone());
        }
        let out = sum_to_shape_raw(self, shape)?;
        let in_shape: Vec<usize> = self.shape().to_vec();
        Ok(record_unary_output(
            "SumToSizeBackward0",
            &[self],
            out,
            move |g| Ok(vec![Some(g.expand_to(&in_shape)?)]),
        ))
    }

    /// Broadcast to `shape` as a view. Records when grad mode is on.
    pub fn expand_to(&self, shape: &[usize]) -> Result<Tensor> {
        let shape_i: Vec<i64> = shape.iter().map(|&s| s as i64).collect();
        self.expand(&shape_i)
    }
}

/// Sum over the broadcast dims of `t` so that the result has `shape` (no recording).
fn sum_to_shape_raw(t: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let target = Layout::contiguous(shape);
    // The target viewed with t's shape: reduced dims get stride 0, so accumulating element by
    // element in t's order adds every broadcast copy into its single target slot.
    let lt = target.broadcast_to("sum_to_size", t.shape()).map_err(|_| {
        Error::shape(
            "sum_to_size",
            t.shape(),
            shape,
            "shape is not expandable to the gradient's shape",
        )
    })?;
    if t.device().is_cuda() {
        // A sum over the broadcast dims with the reduction kernels (keepdim, then the
        // leading dims dropped).
        let lead = t.ndim() - shape.len();
        let dims: Vec<i64> = (0..t.ndim())
            .filter(|&d| d < lead || (shape[d - lead] == 1 && t.shape()[d] != 1))
            .map(|d| d as i64)
            .collect();
        if dims.is_empty() {
            return Ok(t.reshape_contiguous(shape));
        }
        return Ok(t
            .sum_raw(Some(&dims), true, None)?
            .reshape_contiguous(shape));
    }
    let dt = t.dtype();
    let cd = dt.compute_dtype();
    let src = t.to_dtype(cd);
    let out = with_dtype!(cd, T, {
        let mut buf = vec![T::zero(); target.numel()];
        let s = src.storage_slice::<T>()?;
        strided::zip_assign(&mut buf, &lt, s, src.layout(), |o: T, x: T| o.add(x));
        Tensor::from_vec_unchecked(buf, shape)
    });
    Ok(out.to_dtype(dt))
}
