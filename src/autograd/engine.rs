//! The backward engine: count dependencies from the roots, then run nodes whose gradients
//! are complete, summing gradients that meet at one input. Iterative; no recursion.

use super::node::{Edge, Node};
use super::GradModeGuard;
use crate::{Error, Result, Tensor};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A function run once the backward pass that queued it has finished
/// (`Variable._execution_engine.queue_callback` in PyTorch).
pub type FinalCallback = Box<dyn FnOnce() -> Result<()> + Send>;

/// One running backward pass: its id and the callbacks queued for its end.
struct Pass {
    id: u64,
    callbacks: Vec<FinalCallback>,
}

thread_local! {
    /// The passes running on this thread, innermost last (a hook may start another pass).
    static PASSES: RefCell<Vec<Pass>> = const { RefCell::new(Vec::new()) };
}

static NEXT_PASS_ID: AtomicU64 = AtomicU64::new(1);

/// The id of the innermost backward pass running on this thread (hooks run on the pass's
/// thread), or `None` outside backward. Ids are unique for the life of the process.
pub fn current_pass_id() -> Option<u64> {
    PASSES.with(|p| p.borrow().last().map(|pass| pass.id))
}

/// Queue `callback` to run when the innermost backward pass on this thread ends (after its
/// last node, before `backward()`/`grad()` return), as PyTorch's `queue_callback`.
pub fn queue_callback(callback: FinalCallback) -> Result<()> {
    PASSES.with(|p| match p.borrow_mut().last_mut() {
        Some(pass) => {
            pass.callbacks.push(callback);
            Ok(())
        }
        None => Err(Error::Runtime(
            "Final callbacks can only be installed during backward pass.".into(),
        )),
    })
}

/// Registers a pass for the duration of `run_backward` (popped even if a node panics).
struct PassGuard;

impl PassGuard {
    fn enter() -> PassGuard {
        let id = NEXT_PASS_ID.fetch_add(1, Ordering::Relaxed);
        PASSES.with(|p| {
            p.borrow_mut().push(Pass {
                id,
                callbacks: Vec::new(),
            })
        });
        PassGuard
    }

    /// The callbacks queued so far (callbacks may queue more while they run).
    fn take_callbacks(&self) -> Vec<FinalCallback> {
        PASSES.with(|p| {
            p.borrow_mut()
                .last_mut()
                .map(|pass| std::mem::take(&mut pass.callbacks))
                .unwrap_or_default()
        })
    }
}

impl Drop for PassGuard {
    fn drop(&mut self) {
        PASSES.with(|p| p.borrow_mut().pop());
    }
}

type NodeKey = *const Node;

fn key(n: &Arc<Node>) -> NodeKey {
    Arc::as_ptr(n)
}

/// The edge a root tensor's gradient enters the graph through.
fn root_edge(t: &Tensor, what: &str) -> Result<Edge> {
    super::edge_of(t).ok_or_else(|| {
        Error::Runtime(format!(
            "element 0 of {what} does not require grad and does not have a grad_fn"
        ))
    })
}

/// Gradients requested by `autograd.grad`/`backward(inputs=...)`: the edge of each input.
struct Captures {
    targets: Vec<Option<Edge>>,
    grads: Vec<Option<Tensor>>,
}

impl Captures {
    fn offer(&mut self, node: &Arc<Node>, nr: usize, g: &Tensor) -> Result<()> {
        for (i, t) in self.targets.iter().enumerate() {
            if let Some(e) = t {
                if Arc::ptr_eq(&e.node, node) && e.input_nr == nr {
                    self.grads[i] = Some(match self.grads[i].take() {
                        Some(old) => old.add_raw(g)?,
                        None => g.clone(),
                    });
                }
            }
        }
        Ok(())
    }
}

/// Run backward from `roots` with their output gradients.
///
/// * `accumulate`: write leaves' `.grad` (Tensor.backward) or not (autograd.grad).
/// * `inputs`: if given, gradients are returned for these tensors and, when accumulating,
///   only these leaves are written.
fn run_backward(
    roots: &[Tensor],
    root_grads: Vec<Tensor>,
    retain_graph: bool,
    create_graph: bool,
    inputs: Option<&[Tensor]>,
    accumulate: bool,
) -> Result<Vec<Option<Tensor>>> {
    let pass = PassGuard::enter();
    let grads = run_graph(
        roots,
        root_grads,
        retain_graph,
        create_graph,
        inputs,
        accumulate,
    )?;
    // Final callbacks run only after a pass that succeeded (as PyTorch's graph task).
    loop {
        let callbacks = pass.take_callbacks();
        if callbacks.is_empty() {
            return Ok(grads);
        }
        for callback in callbacks {
            callback()?;
        }
    }
}

/// The body of [`run_backward`]: the dependency count and the node loop.
fn run_graph(
    roots: &[Tensor],
    root_grads: Vec<Tensor>,
    retain_graph: bool,
    create_graph: bool,
    inputs: Option<&[Tensor]>,
    accumulate: bool,
) -> Result<Vec<Option<Tensor>>> {
    let _mode = GradModeGuard::new(create_graph);
    let mut caps = Captures {
        targets: inputs
            .map(|ins| ins.iter().map(super::edge_of).collect())
            .unwrap_or_default(),
        grads: vec![None; inputs.map(|i| i.len()).unwrap_or(0)],
    };
    if let Some(ins) = inputs {
        for (i, t) in ins.iter().enumerate() {
            if caps.targets[i].is_none() {
                return Err(Error::Runtime(format!(
                    "One of the differentiated Tensors (input {i}, shape {:?}) does not require grad",
                    t.shape()
                )));
            }
        }
    }
    // Only leaves named in `inputs` get .grad when inputs are given.
    let allowed_leaves: Option<Vec<NodeKey>> = inputs.map(|_| {
        caps.targets
            .iter()
            .flatten()
            .filter(|e| e.node.is_accumulate_grad())
            .map(|e| key(&e.node))
            .collect()
    });

    // 1. Dependency counts over the reachable graph.
    let mut deps: HashMap<NodeKey, usize> = HashMap::new();
    let mut nodes: HashMap<NodeKey, Arc<Node>> = HashMap::new();
    let mut stack: Vec<Arc<Node>> = Vec::new();
    let mut root_edges = Vec::with_capacity(roots.len());
    for r in roots {
        let e = root_edge(r, "tensors")?;
        if nodes.insert(key(&e.node), e.node.clone()).is_none() {
            stack.push(e.node.clone());
        }
        root_edges.push(e);
    }
    while let Some(n) = stack.pop() {
        for e in n.next_edges().iter().flatten() {
            let k = key(&e.node);
            *deps.entry(k).or_insert(0) += 1;
            if nodes.insert(k, e.node.clone()).is_none() {
                stack.push(e.node.clone());
            }
        }
    }

    // 2. Seed the gradient buffers with the roots' gradients.
    let mut buffers: HashMap<NodeKey, Vec<Option<Tensor>>> = HashMap::new();
    fn add_to(
        buffers: &mut HashMap<NodeKey, Vec<Option<Tensor>>>,
        node: &Arc<Node>,
        nr: usize,
        g: Tensor,
    ) -> Result<()> {
        let buf = buffers
            .entry(key(node))
            .or_insert_with(|| vec![None; node.num_outputs()]);
        buf[nr] = Some(match buf[nr].take() {
            Some(old) => old.add_raw_or_record(&g)?,
            None => g,
        });
        Ok(())
    }
    for (e, g) in root_edges.iter().zip(root_grads) {
        add_to(&mut buffers, &e.node, e.input_nr, g)?;
    }

    // 3. Run nodes whose dependencies are satisfied.
    let mut ready: Vec<Arc<Node>> = Vec::new();
    for e in &root_edges {
        let k = key(&e.node);
        if deps.get(&k).copied().unwrap_or(0) == 0 && !ready.iter().any(|n| key(n) == k) {
            ready.push(e.node.clone());
        }
    }
    while let Some(node) = ready.pop() {
        let k = key(&node);
        let mut grads = buffers
            .remove(&k)
            .unwrap_or_else(|| vec![None; node.num_outputs()]);
        // Hooks on the node's outputs (non-leaf tensor hooks, retain_grad) may replace grads.
        for (nr, g) in grads.iter_mut().enumerate() {
            if let Some(gv) = g.as_ref() {
                let mut cur = gv.clone();
                for h in node.hooks_for(nr) {
                    if let Some(new) = h(&cur)? {
                        cur = new;
                    }
                }
                caps.offer(&node, nr, &cur)?;
                *g = Some(cur);
            }
        }
        // The node's own hooks (`grad_fn.register_prehook` / `register_hook`).
        let node_hooks = node.node_hooks();
        if let Some((pre, _)) = &node_hooks {
            for h in pre {
                if let Some(new) = h(&grads)? {
                    grads = new;
                }
            }
        }
        if let Some(leaf) = node.leaf() {
            let allowed = allowed_leaves
                .as_ref()
                .map(|a| a.contains(&k))
                .unwrap_or(true);
            let received = node_hooks.as_ref().map(|_| grads.clone());
            if accumulate && allowed {
                if let Some(g) = grads[0].take() {
                    accumulate_into_leaf(leaf, g, create_graph)?;
                }
            }
            // AccumulateGrad has no inputs: its hooks see an empty grad_inputs.
            if let (Some((_, post)), Some(received)) = (&node_hooks, received) {
                for h in post {
                    h(&[], &received)?;
                }
            }
            continue;
        }
        let mut input_grads = match node.apply(&grads, retain_graph) {
            Ok(g) => g,
            Err(e) => {
                super::anomaly::report_failure(node.name(), node.trace.as_deref());
                return Err(e);
            }
        };
        if let Some((_, post)) = &node_hooks {
            // One slot per input, as the hooks see them (formulas may return fewer).
            input_grads.resize(node.next_edges().len().max(input_grads.len()), None);
            for h in post {
                if let Some(new) = h(&input_grads, &grads)? {
                    input_grads = new;
                }
            }
        }
        drop(grads);
        if super::anomaly::is_anomaly_enabled() && super::anomaly::is_anomaly_check_nan_enabled() {
            check_no_nan(&node, &input_grads)?;
        }
        for (e, g) in node
            .next_edges()
            .iter()
            .zip(input_grads.into_iter().chain(std::iter::repeat(None)))
        {
            let Some(e) = e else { continue };
            let ek = key(&e.node);
            if let Some(g) = g {
                add_to(&mut buffers, &e.node, e.input_nr, g)?;
            }
            let d = deps.get_mut(&ek).expect("counted above");
            *d -= 1;
            if *d == 0 {
                ready.push(e.node.clone());
            }
        }
    }
    Ok(caps.grads)
}

/// Anomaly mode: a NaN in a gradient a node returned is an error naming the node (and, via
/// the report hook, the forward call that created it).
fn check_no_nan(node: &Node, grads: &[Option<Tensor>]) -> Result<()> {
    for (i, g) in grads.iter().enumerate() {
        let Some(g) = g else { continue };
        if !g.dtype().is_floating_point() || g.numel() == 0 {
            continue;
        }
        let has_nan = crate::no_grad(|| {
            g.unary(crate::UnaryOp::IsNan)?
                .any(None, false)?
                .is_nonzero_all()
        })?;
        if has_nan {
            super::anomaly::report_failure(node.name(), node.trace.as_deref());
            return Err(Error::Runtime(format!(
                "Function '{}' returned nan values in its {i}th output.",
                node.name()
            )));
        }
    }
    Ok(())
}

/// Add `g` into `leaf.grad` (or make it the gradient). `g` is taken by value so that a
/// gradient nobody else can see is adopted as the new `.grad` without a copy (PyTorch's
/// "steal the gradient" rule in AccumulateGrad).
fn accumulate_into_leaf(leaf: &Tensor, mut g: Tensor, create_graph: bool) -> Result<()> {
    let hooks: Vec<_> = leaf.meta().hooks.iter().map(|(_, h)| h.clone()).collect();
    for h in hooks {
        if let Some(new) = h(&g)? {
            g = new;
        }
    }
    if g.shape() != leaf.shape() {
        return Err(Error::shape(
            "backward",
            leaf.shape(),
            g.shape(),
            "gradient shape does not match the leaf's shape",
        ));
    }
    let new = match leaf.grad() {
        None => {
            if create_graph {
                g
            } else if g.is_exclusive_plain_buffer() && g.dtype() == leaf.dtype() {
                // Nothing else refers to this tensor or its storage (checked above), so it
                // becomes the gradient as is.
                g
            } else {
                // A fresh buffer: the incoming gradient may be shared with other leaves.
                g.detach().clone_data()
            }
        }
        Some(old) => {
            if create_graph {
                old.add_raw_or_record(&g)?
            } else {
                old.binary_(&g, crate::BinaryOp::Add)?;
                old
            }
        }
    };
    leaf.set_grad(Some(new));
    // Collected first: a hook may read or reset the leaf's `.grad` (its autograd lock).
    let post: Vec<_> = leaf
        .meta()
        .post_accumulate_hooks
        .iter()
        .map(|(_, h)| h.clone())
        .collect();
    for h in post {
        h(leaf)?;
    }
    Ok(())
}

impl Tensor {
    /// Sum of two gradients; recorded only under `create_graph` (grad mode on).
    fn add_raw_or_record(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(other, crate::BinaryOp::Add)
    }
}

fn default_grads(roots: &[Tensor], grads: Vec<Option<Tensor>>) -> Result<Vec<Tensor>> {
    roots
        .iter()
        .zip(grads.into_iter().chain(std::iter::repeat(None)))
        .map(|(r, g)| match g {
            Some(g) => {
                if g.shape() != r.shape() {
                    return Err(Error::shape(
                        "backward",
                        r.shape(),
                        g.shape(),
                        format!(
                            "Mismatch in shape: grad_output[0] has a shape of {:?} and output[0] has a shape of {:?}.",
                            g.shape(),
                            r.shape()
                        ),
                    ));
                }
                Ok(g)
            }
            None => {
                if r.numel() != 1 {
                    return Err(Error::Runtime("grad can be implicitly created only for scalar outputs".into()));
                }
                // On the root's device (a CPU 1 would not mix with CUDA gradients).
                Tensor::full_on(r.device(), r.shape(), crate::Scalar::Int(1), r.dtype())
            }
        })
        .collect()
}

/// Whether a backward pass from `roots` has enough work to be worth running on a pool thread
/// (one hand-off for the whole pass, instead of one per parallel kernel inside it): the roots
/// and the leaves it reaches hold at least `min_numel` elements, or the graph is large.
/// Small passes stay on the calling thread, where they pay no hand-off at all.
pub fn is_big_backward(roots: &[Tensor], min_numel: usize) -> bool {
    const MANY_NODES: usize = 256;
    let mut total: usize = roots.iter().map(Tensor::numel).sum();
    let mut seen = std::collections::HashSet::new();
    let mut stack: Vec<Arc<Node>> = roots.iter().filter_map(Tensor::grad_fn).collect();
    while let Some(node) = stack.pop() {
        if total >= min_numel || seen.len() > MANY_NODES {
            return true;
        }
        if !seen.insert(Arc::as_ptr(&node) as usize) {
            continue;
        }
        if let Some(leaf) = &node.leaf {
            total += leaf.numel();
        }
        stack.extend(node.next.iter().flatten().map(|e| e.node.clone()));
    }
    total >= min_numel
}

/// `Tensor.backward(gradient, retain_graph, create_graph, inputs)`.
pub fn backward(
    roots: &[Tensor],
    grads: Vec<Option<Tensor>>,
    retain_graph: Option<bool>,
    create_graph: bool,
    inputs: Option<&[Tensor]>,
) -> Result<()> {
    let gs = default_grads(roots, grads)?;
    let retain = retain_graph.unwrap_or(create_graph);
    run_backward(roots, gs, retain, create_graph, inputs, true)?;
    Ok(())
}

/// `autograd.grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused)`.
pub fn grad(
    outputs: &[Tensor],
    inputs: &[Tensor],
    grad_outputs: Vec<Option<Tensor>>,
    retain_graph: Option<bool>,
    create_graph: bool,
    allow_unused: bool,
) -> Result<Vec<Option<Tensor>>> {
    let gs = default_grads(outputs, grad_outputs)?;
    let retain = retain_graph.unwrap_or(create_graph);
    let res = run_backward(outputs, gs, retain, create_graph, Some(inputs), false)?;
    if !allow_unused {
        if let Some(i) = res.iter().position(|g| g.is_none()) {
            return Err(Error::Runtime(format!(
                "One of the differentiated Tensors (input {i}) appears to not have been used in the graph. Set allow_unused=True if this is the desired behavior."
            )));
        }
    }
    Ok(res)
}
