//! Autograd bindings: backward/grad, grad_fn nodes, hooks, grad modes, and the bridge that
//! lets a Python `autograd.Function` be a node whose backward calls back into Python.

use super::guarded;
use super::tensor::PyTensor;
use crate::autograd::{self, Node};
use crate::{Error, Tensor};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyTuple, PyWeakrefReference};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A recorded op (`tensor.grad_fn`): the base class of the per-name node classes
/// (`AddmmBackward0`, `AccumulateGrad`, ...) made in `ferrotorch/autograd/graph.py`, which is
/// PyTorch's `torch.autograd.graph.Node`. A subclass is built from another node (`cls(node)`),
/// so every grad_fn object is an instance of its name's class holding the same Rust node.
#[pyclass(
    name = "Node",
    module = "ferrotorch.autograd.graph",
    subclass,
    frozen,
    weakref
)]
pub struct PyNode {
    pub node: Arc<Node>,
}

/// What the binding keeps with a Rust node: its `metadata` dict, and a weak reference to its
/// Python object so that `t.grad_fn is t.grad_fn` holds while that object lives (PyTorch).
/// Weak, because the object holds the node: a strong reference would be a cycle.
#[derive(Default)]
struct NodeBinding {
    metadata: std::sync::OnceLock<Py<PyDict>>,
    object: Mutex<Option<Py<PyWeakrefReference>>>,
}

fn binding_of(node: &Node) -> PyResult<&NodeBinding> {
    node.extra_or_init(|| Box::new(NodeBinding::default()))
        .downcast_ref::<NodeBinding>()
        .ok_or_else(|| PyRuntimeError::new_err("node binding data holds another type"))
}

/// The live Python object of a node, if one was made and is still referenced.
fn live_node_object<'py>(py: Python<'py>, binding: &NodeBinding) -> Option<Bound<'py, PyAny>> {
    let slot = binding.object.lock().unwrap_or_else(|e| e.into_inner());
    slot.as_ref().and_then(|w| w.bind(py).upgrade())
}

/// `ferrotorch.autograd.graph._node_class`: the (cached) Python class of a node name.
static NODE_CLASS_OF: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The Python object of `node`: an instance of the class named after it.
pub(crate) fn node_object(py: Python<'_>, node: Arc<Node>) -> PyResult<Bound<'_, PyAny>> {
    let class_of = NODE_CLASS_OF.get_or_try_init(py, || -> PyResult<_> {
        Ok(py
            .import("ferrotorch.autograd.graph")?
            .getattr("_node_class")?
            .unbind())
    })?;
    let binding = binding_of(&node)?;
    if let Some(obj) = live_node_object(py, binding) {
        return Ok(obj);
    }
    // Made without holding the lock: building the object runs Python code, which may let
    // another thread in.
    let cls = class_of.bind(py).call1((node.name(),))?;
    let handle = Bound::new(py, PyNode { node: node.clone() })?;
    let obj = cls.call1((handle,))?;
    let mut slot = binding.object.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(other) = slot.as_ref().and_then(|w| w.bind(py).upgrade()) {
        return Ok(other);
    }
    *slot = Some(PyWeakrefReference::new(&obj)?.unbind());
    Ok(obj)
}

#[pymethods]
impl PyNode {
    /// `cls(node)`: a node object of class `cls` for the same recorded op as `node`.
    #[new]
    fn py_new(node: PyRef<'_, PyNode>) -> PyNode {
        PyNode {
            node: node.node.clone(),
        }
    }
    fn name(&self) -> String {
        self.node.name().to_string()
    }
    /// Tuple of (node or None, input_nr) for each input, like PyTorch.
    #[getter]
    fn next_functions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let items: Vec<Bound<'py, PyAny>> = self
            .node
            .next_edges()
            .iter()
            .map(|e| -> PyResult<Bound<'py, PyAny>> {
                let (n, nr) = match e {
                    Some(e) => (node_object(py, e.node.clone())?, e.input_nr),
                    None => (py.None().into_bound(py), 0),
                };
                Ok(PyTuple::new(py, [n, nr.into_pyobject(py)?.into_any()])?.into_any())
            })
            .collect::<PyResult<_>>()?;
        PyTuple::new(py, items)
    }
    /// A dict kept with the node (PyTorch's `Node.metadata`): the same dict on every access.
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let binding = binding_of(&self.node)?;
        Ok(binding
            .metadata
            .get_or_init(|| PyDict::new(py).unbind())
            .bind(py)
            .clone())
    }
    /// For AccumulateGrad nodes (the `variable` property of that class): the leaf, as the
    /// Python object it was made `requires_grad` through when that is still alive.
    fn _variable<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        match self.node.leaf() {
            Some(t) => leaf_object(py, t).map(Some),
            None => Ok(None),
        }
    }
    /// `hook(grad_outputs) -> tuple | None`, run before the node computes its gradients.
    fn register_prehook(&self, hook: Py<PyAny>) -> PyNodeHookHandle {
        let n_out = self.node.num_outputs();
        let f: autograd::NodePreHookFn = Arc::new(move |grads: &[Option<Tensor>]| {
            Python::attach(|py| {
                let r = hook
                    .call1(py, (grads_tuple(py, grads)?,))
                    .map_err(|e| py_err_to_error(py, e))?;
                hook_result(py, &hook, r.bind(py), n_out)
            })
        });
        PyNodeHookHandle {
            id: self.node.add_node_pre_hook(f),
            node: self.node.clone(),
        }
    }
    /// `hook(grad_inputs, grad_outputs) -> tuple | None`, run after the node computed the
    /// gradients w.r.t. its inputs (it may replace them).
    fn register_hook(&self, hook: Py<PyAny>) -> PyNodeHookHandle {
        let n_in = self.node.next_edges().len();
        let f: autograd::NodePostHookFn = Arc::new(move |gi: &[Option<Tensor>], go| {
            Python::attach(|py| {
                let r = hook
                    .call1(py, (grads_tuple(py, gi)?, grads_tuple(py, go)?))
                    .map_err(|e| py_err_to_error(py, e))?;
                hook_result(py, &hook, r.bind(py), n_in)
            })
        });
        PyNodeHookHandle {
            id: self.node.add_node_post_hook(f),
            node: self.node.clone(),
        }
    }
    fn __repr__(&self) -> String {
        format!(
            "<{} object at {:p}>",
            self.node.name(),
            Arc::as_ptr(&self.node)
        )
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PyNode>()
            .map(|o| Arc::ptr_eq(&o.get().node, &self.node))
            .unwrap_or(false)
    }
    fn __hash__(&self) -> isize {
        Arc::as_ptr(&self.node) as isize
    }
}

/// Gradients as the Python tuple a node hook gets (None where no gradient).
fn grads_tuple<'py>(
    py: Python<'py>,
    grads: &[Option<Tensor>],
) -> crate::Result<Bound<'py, PyTuple>> {
    let items = grads
        .iter()
        .map(|g| match g {
            Some(g) => Bound::new(py, PyTensor::from(g.clone())).map(Bound::into_any),
            None => Ok(py.None().into_bound(py)),
        })
        .collect::<PyResult<Vec<_>>>()
        .map_err(|e| py_err_to_error(py, e))?;
    PyTuple::new(py, items).map_err(|e| py_err_to_error(py, e))
}

/// A node hook's return value: None (keep the gradients) or `expected` tensors / Nones.
fn hook_result(
    py: Python<'_>,
    hook: &Py<PyAny>,
    r: &Bound<'_, PyAny>,
    expected: usize,
) -> crate::Result<Option<Vec<Option<Tensor>>>> {
    if r.is_none() {
        return Ok(None);
    }
    if !(r.is_instance_of::<PyTuple>() || r.is_instance_of::<PyList>()) {
        let ty = r
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_default();
        return Err(Error::Type(format!(
            "expected tuple, but hook returned '{ty}'"
        )));
    }
    let items: Vec<Bound<'_, PyAny>> = r
        .try_iter()
        .and_then(|it| it.collect::<PyResult<_>>())
        .map_err(|e| py_err_to_error(py, e))?;
    if items.len() != expected {
        let name = hook
            .bind(py)
            .getattr("__name__")
            .and_then(|n| n.extract::<String>())
            .unwrap_or_else(|_| "<hook>".into());
        return Err(Error::Runtime(format!(
            "hook '{name}' has returned an incorrect number of values (got {}, but expected {expected})",
            items.len()
        )));
    }
    items
        .iter()
        .map(|x| opt_tensor(x).map_err(|e| py_err_to_error(py, e)))
        .collect::<crate::Result<_>>()
        .map(Some)
}

/// Handle returned by a node's `register_hook` / `register_prehook`.
#[pyclass(name = "RemovableHandle", module = "ferrotorch.utils.hooks")]
pub struct PyNodeHookHandle {
    node: Arc<Node>,
    id: u64,
}

#[pymethods]
impl PyNodeHookHandle {
    fn remove(&self) {
        self.node.remove_node_hook(self.id);
    }
}

/// Weak references to the Python objects of leaves made `requires_grad` from Python (keyed
/// by the tensor's address), so that `AccumulateGrad.variable` hands back the leaf's own
/// object (`fn.variable is param`, a Parameter stays a Parameter) as PyTorch does.
static LEAF_OBJECTS: Mutex<Option<LeafObjects>> = Mutex::new(None);

struct LeafObjects {
    map: HashMap<usize, Py<PyWeakrefReference>>,
    /// Size after the last sweep of dead entries: the next sweep runs when it doubled.
    swept: usize,
}

fn leaf_key(t: &Tensor) -> usize {
    Arc::as_ptr(&t.0) as usize
}

/// Remember `obj` as the Python object of its (leaf) tensor.
pub(crate) fn remember_leaf(obj: &Bound<'_, PyTensor>) -> PyResult<()> {
    let key = leaf_key(&obj.borrow().inner);
    let weak = PyWeakrefReference::new(obj)?.unbind();
    let mut guard = LEAF_OBJECTS.lock().unwrap_or_else(|e| e.into_inner());
    let objs = guard.get_or_insert_with(|| LeafObjects {
        map: HashMap::new(),
        swept: 0,
    });
    objs.map.insert(key, weak);
    if objs.map.len() > 2 * objs.swept + 64 {
        let py = obj.py();
        objs.map.retain(|_, w| w.bind(py).upgrade().is_some());
        objs.swept = objs.map.len();
    }
    Ok(())
}

/// The Python object of leaf `t`: the remembered one while it is alive and still holds `t`
/// (`.data = ...` swaps the tensor a Python object holds), else a new one (remembered).
fn leaf_object<'py>(py: Python<'py>, t: &Tensor) -> PyResult<Bound<'py, PyAny>> {
    let key = leaf_key(t);
    let known = {
        let guard = LEAF_OBJECTS.lock().unwrap_or_else(|e| e.into_inner());
        guard
            .as_ref()
            .and_then(|o| o.map.get(&key))
            .map(|w| w.clone_ref(py))
    };
    if let Some(obj) = known.and_then(|w| w.bind(py).upgrade()) {
        if let Ok(pt) = obj.cast::<PyTensor>() {
            if pt.borrow().inner.same_tensor(t) {
                return Ok(obj);
            }
        }
    }
    let obj = Bound::new(py, PyTensor::from(t.clone()))?;
    remember_leaf(&obj)?;
    Ok(obj.into_any())
}

/// Handle returned by `register_hook`; `remove()` unregisters the hook.
#[pyclass(name = "RemovableHandle", module = "ferrotorch.utils.hooks")]
pub struct PyHookHandle {
    tensor: Tensor,
    id: u64,
}

#[pymethods]
impl PyHookHandle {
    fn remove(&self) {
        self.tensor.remove_hook(self.id);
    }
}

/// A Python exception raised by a callback (hook, custom backward) as a core error that
/// carries the exception, so that it reaches the caller unchanged (type, message, traceback).
pub(crate) fn py_err_to_error(py: Python<'_>, e: PyErr) -> Error {
    let ty = e
        .get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_default();
    Error::Callback(crate::error::CallbackError {
        message: format!("{ty}: {}", e.value(py)),
        payload: std::sync::Arc::new(e),
    })
}

fn opt_tensor(obj: &Bound<'_, PyAny>) -> PyResult<Option<Tensor>> {
    if obj.is_none() {
        return Ok(None);
    }
    Ok(Some(super::tensor::to_tensor(obj)?))
}

fn tensors_of(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Tensor>> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(vec![t.borrow().inner.clone()]);
    }
    obj.try_iter()?
        .map(|x| Ok(x?.cast::<PyTensor>()?.borrow().inner.clone()))
        .collect()
}

fn opt_tensors_of(obj: Option<&Bound<'_, PyAny>>, n: usize) -> PyResult<Vec<Option<Tensor>>> {
    match obj {
        None => Ok(vec![None; n]),
        Some(o) if o.is_none() => Ok(vec![None; n]),
        Some(o) => {
            if o.cast::<PyTensor>().is_ok() {
                return Ok(vec![opt_tensor(o)?]);
            }
            o.try_iter()?.map(|x| opt_tensor(&x?)).collect()
        }
    }
}

#[pymethods]
impl PyTensor {
    #[pyo3(signature = (gradient=None, retain_graph=None, create_graph=false, inputs=None))]
    fn backward(
        &self,
        py: Python<'_>,
        gradient: Option<&Bound<'_, PyAny>>,
        retain_graph: Option<bool>,
        create_graph: bool,
        inputs: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let g = opt_tensors_of(gradient, 1)?;
        let ins = inputs.map(tensors_of).transpose()?;
        let root = self.inner.clone();
        // Kernel-heavy passes run on a pool thread (see `parallel::on_pool`); small ones on
        // this thread. Either way their parallel loops use the one kernel pool.
        let big = autograd::engine::is_big_backward(std::slice::from_ref(&root), super::POOL_NUMEL);
        let pass = move || {
            guarded(|| autograd::backward(&[root], g, retain_graph, create_graph, ins.as_deref()))
        };
        py.detach(|| {
            if big {
                crate::parallel::on_pool(pass)
            } else {
                crate::parallel::install(pass)
            }
        })
    }
    #[getter]
    fn grad_fn<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.inner
            .grad_fn()
            .map(|node| node_object(py, node))
            .transpose()
    }
    #[getter]
    fn is_leaf(&self) -> bool {
        self.inner.is_leaf()
    }
    fn detach(&self) -> PyTensor {
        self.inner.detach().into()
    }
    fn detach_(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf.borrow().inner.detach_();
        slf
    }
    fn retain_grad(&self) -> PyResult<()> {
        Ok(self.inner.retain_grad()?)
    }
    #[getter]
    fn retains_grad(&self) -> bool {
        self.inner.retains_grad()
    }
    #[getter]
    fn get_data(&self) -> PyTensor {
        self.inner.detach().into()
    }
    #[setter]
    fn set_data(slf: &Bound<'_, Self>, data: PyRef<'_, PyTensor>) -> PyResult<()> {
        // Swap in the new data; keep the leaf's requires_grad flag.
        let rg = {
            let mut me = slf.borrow_mut();
            let rg = me.inner.is_leaf() && me.inner.requires_grad();
            let t = data.inner.detach();
            t.set_requires_grad(rg)?;
            t.set_grad(me.inner.grad());
            me.inner = t;
            rg
        };
        if rg {
            remember_leaf(slf)?;
        }
        Ok(())
    }
    #[getter]
    fn _base(&self) -> Option<PyTensor> {
        self.inner.view_base().map(PyTensor::from)
    }
    fn _is_view(&self) -> bool {
        self.inner.view_base().is_some()
    }
    /// Register `hook(grad) -> Tensor | None`, called when this tensor's gradient is computed.
    fn register_hook(&self, hook: Py<PyAny>) -> PyResult<PyHookHandle> {
        let f: autograd::HookFn = Arc::new(move |g: &Tensor| {
            Python::attach(|py| {
                let r = hook
                    .call1(py, (PyTensor::from(g.clone()),))
                    .map_err(|e| py_err_to_error(py, e))?;
                let r = r.bind(py);
                if r.is_none() {
                    Ok(None)
                } else {
                    Ok(Some(
                        super::tensor::to_tensor(r).map_err(|e| py_err_to_error(py, e))?,
                    ))
                }
            })
        });
        let id = self.inner.register_hook(f)?;
        Ok(PyHookHandle {
            tensor: self.inner.clone(),
            id,
        })
    }
    /// Register `hook(tensor) -> None`, called with this leaf (the same Python object, e.g.
    /// the `nn.Parameter`) after a gradient was accumulated into its `.grad`.
    fn register_post_accumulate_grad_hook(
        slf: &Bound<'_, Self>,
        hook: Py<PyAny>,
    ) -> PyResult<PyHookHandle> {
        // A weak reference: the hook lives in the tensor's own bookkeeping, so a strong one
        // would keep the Python object alive forever.
        let weak: Py<PyAny> = pyo3::types::PyWeakrefReference::new(slf)?
            .into_any()
            .unbind();
        let f: autograd::PostAccumulateHookFn = Arc::new(move |_leaf: &Tensor| {
            Python::attach(|py| {
                let obj = weak.bind(py).call0().map_err(|e| py_err_to_error(py, e))?;
                if obj.is_none() {
                    return Ok(());
                }
                let r = hook.call1(py, (obj,)).map_err(|e| py_err_to_error(py, e))?;
                if !r.bind(py).is_none() {
                    return Err(Error::Runtime(
                        "Tensor post accumulate grad hooks should return None.".into(),
                    ));
                }
                Ok(())
            })
        });
        let inner = slf.borrow().inner.clone();
        let id = inner.register_post_accumulate_grad_hook(f)?;
        Ok(PyHookHandle { tensor: inner, id })
    }
}

/// `autograd.grad` core.
#[pyfunction]
#[pyo3(signature = (outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=false, allow_unused=false))]
fn _grad(
    py: Python<'_>,
    outputs: &Bound<'_, PyAny>,
    inputs: &Bound<'_, PyAny>,
    grad_outputs: Option<&Bound<'_, PyAny>>,
    retain_graph: Option<bool>,
    create_graph: bool,
    allow_unused: bool,
) -> PyResult<Vec<Option<PyTensor>>> {
    let outs = tensors_of(outputs)?;
    let ins = tensors_of(inputs)?;
    let gos = opt_tensors_of(grad_outputs, outs.len())?;
    let big = autograd::engine::is_big_backward(&outs, super::POOL_NUMEL);
    let pass = move || {
        guarded(|| autograd::grad(&outs, &ins, gos, retain_graph, create_graph, allow_unused))
    };
    let r = py.detach(|| {
        if big {
            crate::parallel::on_pool(pass)
        } else {
            crate::parallel::install(pass)
        }
    })?;
    Ok(r.into_iter().map(|g| g.map(PyTensor::from)).collect())
}

/// Record a node for a Python `autograd.Function`: `backward(grads)` receives one gradient
/// (or None) per output and returns one gradient (or None) per input.
#[pyfunction]
fn _record_function(
    name: String,
    backward: Py<PyAny>,
    inputs: &Bound<'_, PyList>,
    outputs: &Bound<'_, PyList>,
) -> PyResult<()> {
    let ins: Vec<Tensor> = inputs
        .iter()
        .map(|x| Ok(x.cast::<PyTensor>()?.borrow().inner.clone()))
        .collect::<PyResult<_>>()?;
    let outs: Vec<Tensor> = outputs
        .iter()
        .map(|x| Ok(x.cast::<PyTensor>()?.borrow().inner.clone()))
        .collect::<PyResult<_>>()?;
    let n_in = ins.len();
    let f: autograd::BackwardFn = Box::new(move |grads: &[Option<Tensor>]| {
        Python::attach(|py| {
            let gs: Vec<Py<PyAny>> = grads
                .iter()
                .map(|g| match g {
                    Some(g) => Py::new(py, PyTensor::from(g.clone())).map(|t| t.into_any()),
                    None => Ok(py.None()),
                })
                .collect::<PyResult<_>>()
                .map_err(|e| py_err_to_error(py, e))?;
            let r = backward
                .call1(py, (gs,))
                .map_err(|e| py_err_to_error(py, e))?;
            let r = r.bind(py);
            let mut out = Vec::with_capacity(n_in);
            for item in r.try_iter().map_err(|e| py_err_to_error(py, e))? {
                let item = item.map_err(|e| py_err_to_error(py, e))?;
                out.push(opt_tensor(&item).map_err(|e| py_err_to_error(py, e))?);
            }
            if out.len() != n_in {
                return Err(Error::Runtime(format!(
                    "function backward returned an incorrect number of gradients (expected {n_in}, got {})",
                    out.len()
                )));
            }
            Ok(out)
        })
    });
    let in_refs: Vec<&Tensor> = ins.iter().collect();
    let out_refs: Vec<&Tensor> = outs.iter().collect();
    for o in &outs {
        if o.is_leaf() && o.requires_grad() && ins.iter().any(|i| i.same_tensor(o)) {
            return Err(PyRuntimeError::new_err(
                "a leaf Variable that requires grad has been used in an in-place operation.",
            ));
        }
    }
    autograd::record(&name, &in_refs, &out_refs, f);
    Ok(())
}

/// A tensor an `autograd.Function` saved from its own outputs. Holding the output itself would
/// be a reference cycle (output -> its node -> the Python backward -> ctx -> output) that
/// neither Rust nor Python's collector can break, so the graph would never be freed. Like
/// PyTorch's SavedVariable, keep the data without history plus a weak link to the node, and
/// give the history back when backward unpacks it (the node is alive then).
#[pyclass(name = "_SavedOutput", module = "ferrotorch._C", frozen)]
struct PySavedOutput {
    data: Tensor,
    node: Option<std::sync::Weak<Node>>,
    output_nr: usize,
}

#[pymethods]
impl PySavedOutput {
    #[new]
    fn new(t: PyRef<'_, PyTensor>) -> Self {
        let t = &t.inner;
        PySavedOutput {
            data: t.detach(),
            node: t.grad_fn().map(|n| Arc::downgrade(&n)),
            output_nr: t.output_nr(),
        }
    }
    /// The saved tensor, with its history when its node still exists.
    fn unpack(&self) -> PyTensor {
        let t = self.data.detach();
        if let Some(node) = self.node.as_ref().and_then(|w| w.upgrade()) {
            let mut m = t.meta();
            m.grad_fn = Some(node);
            m.output_nr = self.output_nr;
            m.requires_grad = true;
        }
        t.into()
    }
}

#[pyfunction]
fn is_grad_enabled() -> bool {
    autograd::is_grad_enabled()
}

#[pyfunction]
fn _set_grad_enabled(enabled: bool) {
    autograd::set_grad_enabled(enabled)
}

#[pyfunction]
fn is_inference_mode_enabled() -> bool {
    autograd::grad_mode::is_inference_mode_enabled()
}

#[pyfunction]
fn _set_inference_mode(enabled: bool) {
    autograd::grad_mode::set_inference_mode(enabled)
}

/// `Variable._execution_engine.queue_callback(callback)`: run `callback()` when the current
/// backward pass ends. A Python exception it raises propagates out of `backward()`.
#[pyfunction]
fn _queue_callback(callback: Py<PyAny>) -> PyResult<()> {
    autograd::queue_callback(Box::new(move || {
        Python::attach(|py| {
            callback
                .call0(py)
                .map(|_| ())
                .map_err(|e| py_err_to_error(py, e))
        })
    }))?;
    Ok(())
}

/// The id of the backward pass running on this thread (None outside backward): hooks use it
/// to tell passes apart (`register_multi_grad_hook`).
#[pyfunction]
fn _current_backward_pass_id() -> Option<u64> {
    autograd::current_pass_id()
}

/// `autograd.set_detect_anomaly` core.
#[pyfunction]
#[pyo3(signature = (enabled, check_nan=true))]
fn _set_detect_anomaly(enabled: bool, check_nan: bool) {
    autograd::anomaly::set_detect_anomaly(enabled, check_nan);
}

#[pyfunction]
fn is_anomaly_enabled() -> bool {
    autograd::anomaly::is_anomaly_enabled()
}

#[pyfunction]
fn is_anomaly_check_nan_enabled() -> bool {
    autograd::anomaly::is_anomaly_check_nan_enabled()
}

/// Anomaly mode's record of where a node was made: the Python stack, as PyTorch shows it.
fn capture_python_stack() -> Option<String> {
    Python::attach(|py| {
        let frames = py
            .import("traceback")
            .ok()?
            .call_method0("format_stack")
            .ok()?;
        let lines: Vec<String> = frames.extract().ok()?;
        Some(lines.concat())
    })
}

/// Anomaly mode's report of a failing node: a UserWarning, as in PyTorch.
fn warn_anomaly(msg: &str) {
    Python::attach(|py| {
        let category = py.get_type::<pyo3::exceptions::PyUserWarning>();
        let text = std::ffi::CString::new(msg.replace('\0', " ")).unwrap_or_default();
        // A failed warning (e.g. warnings turned into errors) must not hide the real error.
        if let Err(e) = PyErr::warn(py, &category, &text, 1) {
            e.write_unraisable(py, None);
        }
    });
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    autograd::anomaly::set_hooks(capture_python_stack, warn_anomaly);
    m.add_function(wrap_pyfunction!(_set_detect_anomaly, m)?)?;
    m.add_function(wrap_pyfunction!(_queue_callback, m)?)?;
    m.add_function(wrap_pyfunction!(_current_backward_pass_id, m)?)?;
    m.add_function(wrap_pyfunction!(is_anomaly_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(is_anomaly_check_nan_enabled, m)?)?;
    m.add_class::<PyNode>()?;
    m.add_class::<PyHookHandle>()?;
    m.add_class::<PyNodeHookHandle>()?;
    m.add_class::<PySavedOutput>()?;
    m.add_function(wrap_pyfunction!(_grad, m)?)?;
    m.add_function(wrap_pyfunction!(_record_function, m)?)?;
    m.add_function(wrap_pyfunction!(is_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_set_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(is_inference_mode_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_set_inference_mode, m)?)?;
    Ok(())
}
