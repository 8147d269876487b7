//! Graph nodes. A node holds its backward formula (with the tensors it saved) and edges to
//! the nodes of its inputs. Children own parents (strong `Arc`s point from outputs towards
//! inputs only), so a graph is freed with its last output. Dropping is iterative, so a chain
//! of 100,000 ops does not overflow the stack.

use crate::{Result, Tensor};
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// Backward formula: gradients w.r.t. each output (None where nothing flowed) in, gradients
/// w.r.t. each input (None where not needed) out.
pub type BackwardFn = Box<dyn FnMut(&[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> + Send>;

/// A gradient hook: may return a replacement gradient.
pub type HookFn = Arc<dyn Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync>;

/// A hook run on a leaf after a gradient was accumulated into its `.grad` (it gets the leaf).
pub type PostAccumulateHookFn = Arc<dyn Fn(&Tensor) -> Result<()> + Send + Sync>;

/// A node pre-hook (`grad_fn.register_prehook`): sees the gradients w.r.t. the node's
/// outputs before it runs and may replace them all.
pub type NodePreHookFn =
    Arc<dyn Fn(&[Option<Tensor>]) -> Result<Option<Vec<Option<Tensor>>>> + Send + Sync>;

/// A node hook (`grad_fn.register_hook`): sees the gradients the node computed for its inputs
/// and those it received, and may replace the former.
pub type NodePostHookFn = Arc<
    dyn Fn(&[Option<Tensor>], &[Option<Tensor>]) -> Result<Option<Vec<Option<Tensor>>>>
        + Send
        + Sync,
>;

/// Hooks registered on a node itself (made on first registration).
#[derive(Default)]
pub(crate) struct NodeHooks {
    pub(crate) pre: Vec<(u64, NodePreHookFn)>,
    pub(crate) post: Vec<(u64, NodePostHookFn)>,
}

/// Where a gradient goes: output `input_nr` of `node`.
#[derive(Clone)]
pub struct Edge {
    pub node: Arc<Node>,
    pub input_nr: usize,
}

static SEQ: AtomicU64 = AtomicU64::new(0);

/// Id of `retain_grad`'s hook (never handed out by `next_hook_id`, never removed).
const RETAIN_GRAD_HOOK_ID: u64 = u64::MAX;

pub struct Node {
    name: String,
    seq: u64,
    backward: Mutex<Option<BackwardFn>>,
    /// Set once the backward formula ran without `retain_graph` (its saved tensors are gone).
    released: Mutex<bool>,
    /// The formula holds no tensors saved from the forward pass (only shapes, dtypes,
    /// scalars), so it is kept after backward: PyTorch lets such a node run again without
    /// `retain_graph` (`y = x.sum(); y.backward(); y.backward()`).
    reusable: bool,
    pub(crate) next: Vec<Option<Edge>>,
    num_outputs: usize,
    pub(crate) pre_hooks: Mutex<Vec<(u64, usize, HookFn)>>,
    /// For AccumulateGrad nodes: the leaf that receives the gradient.
    pub(crate) leaf: Option<Tensor>,
    /// Where the node was created (anomaly mode only).
    pub(crate) trace: Option<String>,
    /// `register_prehook` / `register_hook` hooks; unset for almost every node, so that the
    /// engine's check is one atomic load.
    node_hooks: OnceLock<Mutex<NodeHooks>>,
    /// Data a binding keeps with the node (the Python `grad_fn.metadata` dict), made on
    /// first use.
    extra: OnceLock<Box<dyn Any + Send + Sync>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Node {
    pub fn new(
        name: impl Into<String>,
        next: Vec<Option<Edge>>,
        num_outputs: usize,
        backward: BackwardFn,
    ) -> Node {
        Node {
            name: name.into(),
            seq: SEQ.fetch_add(1, Ordering::Relaxed),
            backward: Mutex::new(Some(backward)),
            released: Mutex::new(false),
            reusable: false,
            next,
            num_outputs,
            pre_hooks: Mutex::new(Vec::new()),
            leaf: None,
            trace: super::anomaly::capture_trace(),
            node_hooks: OnceLock::new(),
            extra: OnceLock::new(),
        }
    }

    /// Mark the formula as holding no saved tensors (see `reusable`).
    pub(crate) fn reusable(mut self) -> Node {
        self.reusable = true;
        self
    }

    pub(crate) fn accumulate_grad(leaf: Tensor) -> Node {
        Node {
            name: "AccumulateGrad".into(),
            seq: SEQ.fetch_add(1, Ordering::Relaxed),
            backward: Mutex::new(None),
            released: Mutex::new(false),
            reusable: false,
            next: Vec::new(),
            num_outputs: 1,
            pre_hooks: Mutex::new(Vec::new()),
            leaf: Some(leaf),
            trace: None,
            node_hooks: OnceLock::new(),
            extra: OnceLock::new(),
        }
    }

    /// PyTorch-style name, e.g. "MulBackward0".
    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn seq(&self) -> u64 {
        self.seq
    }
    pub fn num_outputs(&self) -> usize {
        self.num_outputs
    }
    pub fn next_edges(&self) -> &[Option<Edge>] {
        &self.next
    }
    pub fn is_accumulate_grad(&self) -> bool {
        self.leaf.is_some()
    }
    pub fn leaf(&self) -> Option<&Tensor> {
        self.leaf.as_ref()
    }
    /// The data a binding keeps with this node, made by `init` on first use.
    pub fn extra_or_init(
        &self,
        init: impl FnOnce() -> Box<dyn Any + Send + Sync>,
    ) -> &(dyn Any + Send + Sync) {
        self.extra.get_or_init(init).as_ref()
    }

    /// Run the backward formula. Without `retain` the formula (and its saved tensors) is
    /// dropped afterwards, unless it saved none; calling again is PyTorch's "backward through
    /// the graph a second time" error.
    pub(crate) fn apply(
        &self,
        grads: &[Option<Tensor>],
        retain: bool,
    ) -> Result<Vec<Option<Tensor>>> {
        let mut slot = lock(&self.backward);
        let Some(f) = slot.as_mut() else {
            if *lock(&self.released) {
                return Err(crate::Error::Runtime(
                    "Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.".into(),
                ));
            }
            return Ok(vec![None; self.next.len()]);
        };
        let out = f(grads)?;
        if !retain && !self.reusable {
            let f = slot.take();
            *lock(&self.released) = true;
            drop(slot);
            defer_drop(Box::new(f));
        }
        Ok(out)
    }

    fn hooks_mut(&self) -> MutexGuard<'_, NodeHooks> {
        lock(self.node_hooks.get_or_init(Default::default))
    }
    /// Register a node pre-hook; returns its id for [`Node::remove_node_hook`].
    pub fn add_node_pre_hook(&self, hook: NodePreHookFn) -> u64 {
        let id = super::next_hook_id();
        self.hooks_mut().pre.push((id, hook));
        id
    }
    /// Register a node (post) hook; returns its id for [`Node::remove_node_hook`].
    pub fn add_node_post_hook(&self, hook: NodePostHookFn) -> u64 {
        let id = super::next_hook_id();
        self.hooks_mut().post.push((id, hook));
        id
    }
    pub fn remove_node_hook(&self, id: u64) -> bool {
        let Some(h) = self.node_hooks.get() else {
            return false;
        };
        let mut h = lock(h);
        let before = h.pre.len() + h.post.len();
        h.pre.retain(|(i, _)| *i != id);
        h.post.retain(|(i, _)| *i != id);
        h.pre.len() + h.post.len() != before
    }
    /// The node's own pre- and post-hooks, in registration order (empty for most nodes).
    pub(crate) fn node_hooks(&self) -> Option<(Vec<NodePreHookFn>, Vec<NodePostHookFn>)> {
        let h = lock(self.node_hooks.get()?);
        Some((
            h.pre.iter().map(|(_, f)| f.clone()).collect(),
            h.post.iter().map(|(_, f)| f.clone()).collect(),
        ))
    }

    pub fn add_pre_hook(&self, id: u64, output_nr: usize, hook: HookFn) {
        lock(&self.pre_hooks).push((id, output_nr, hook));
    }
    /// The hook that stores an output's gradient for `retain_grad`: it runs after every other
    /// hook on that output, whenever those were registered (PyTorch's order), so `.grad` is
    /// the gradient the hooks produced.
    pub fn add_retain_grad_hook(&self, output_nr: usize, hook: HookFn) {
        lock(&self.pre_hooks).push((RETAIN_GRAD_HOOK_ID, output_nr, hook));
    }
    pub fn remove_pre_hook(&self, id: u64) -> bool {
        let mut h = lock(&self.pre_hooks);
        let before = h.len();
        h.retain(|(i, _, _)| *i != id);
        h.len() != before
    }
    /// The hooks on output `output_nr` in the order they run: registration order, the
    /// `retain_grad` one last.
    pub(crate) fn hooks_for(&self, output_nr: usize) -> Vec<HookFn> {
        let hooks = lock(&self.pre_hooks);
        let on_output = || hooks.iter().filter(|(_, nr, _)| *nr == output_nr);
        on_output()
            .filter(|(id, _, _)| *id != RETAIN_GRAD_HOOK_ID)
            .chain(on_output().filter(|(id, _, _)| *id == RETAIN_GRAD_HOOK_ID))
            .map(|(_, _, h)| h.clone())
            .collect()
    }
}

thread_local! {
    static DROP_QUEUE: RefCell<Vec<Box<dyn Any>>> = const { RefCell::new(Vec::new()) };
    static DRAINING: Cell<bool> = const { Cell::new(false) };
}

/// Drop `item` without recursing: nested drops triggered by it are queued and run by the
/// outermost call in a loop.
fn defer_drop(item: Box<dyn Any>) {
    // If the thread-local is gone (thread exit), the item is simply dropped here.
    if DROP_QUEUE.try_with(|q| q.borrow_mut().push(item)).is_err() {
        return;
    }
    if DRAINING.try_with(|d| d.replace(true)).unwrap_or(true) {
        return; // an outer call is draining the queue
    }
    // Each pop's borrow ends before the item is dropped, so nested pushes are fine.
    while let Some(x) = DROP_QUEUE.try_with(|q| q.borrow_mut().pop()).ok().flatten() {
        drop(x);
    }
    let _ = DRAINING.try_with(|d| d.set(false));
}

impl Drop for Node {
    fn drop(&mut self) {
        let edges = std::mem::take(&mut self.next);
        let f = lock(&self.backward).take();
        let leaf = self.leaf.take();
        if edges.is_empty() && f.is_none() && leaf.is_none() {
            return;
        }
        defer_drop(Box::new((edges, f, leaf)));
    }
}
