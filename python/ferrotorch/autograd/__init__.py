"""``ferrotorch.autograd``: reverse-mode automatic differentiation (engine in Rust)."""

import warnings
from collections.abc import Mapping as _Mapping

from ferrotorch import _C
from ferrotorch.autograd import functional  # noqa: F401
from ferrotorch.autograd.anomaly_mode import (  # noqa: F401
    detect_anomaly,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_detect_anomaly,
)
from ferrotorch.autograd.function import Function, FunctionCtx, once_differentiable  # noqa: F401
from ferrotorch.autograd.grad_mode import (  # noqa: F401
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    is_multithreading_enabled,
    no_grad,
    set_grad_enabled,
    set_multithreading_enabled,
)
from ferrotorch.autograd import graph  # noqa: F401
from ferrotorch.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: F401

Tensor = _C.Tensor


def _seq(x):
    if x is None:
        return None
    if isinstance(x, Tensor):
        return [x]
    return list(x)


def _inputs_tuple(inputs, fn_name):
    """``inputs`` of grad()/backward(): a Tensor, a sequence, or a plain dict (its values)."""
    if isinstance(inputs, Tensor):
        return (inputs,)
    if type(inputs) is dict:
        return tuple(inputs.values())
    if isinstance(inputs, _Mapping):
        raise TypeError(f"`inputs` argument to `{fn_name}()` must be a dict, not "
                        f"{type(inputs).__name__}. Other Mapping types are not supported.")
    return tuple(inputs)


def _make_grads(outputs, grads, is_grads_batched):
    """PyTorch's argument checks on ``grad_outputs`` (torch/autograd/__init__.py), made before
    the engine runs; a None for a scalar output that requires grad becomes ones."""
    new_grads = []
    for i, (out, g) in enumerate(zip(outputs, grads)):
        if not isinstance(out, Tensor):
            raise AssertionError("Expected output to be a torch.Tensor")
        if isinstance(g, Tensor):
            first = g if not is_grads_batched else g[0]
            if tuple(first.shape) != tuple(out.shape):
                grad_shape = g.shape if not is_grads_batched else g.shape[1:]
                if is_grads_batched:
                    raise RuntimeError(
                        "If `is_grads_batched=True`, we interpret the first dimension of each "
                        "grad_output as the batch dimension. The sizes of the remaining "
                        "dimensions are expected to match the shape of corresponding output, "
                        f"but a mismatch was detected: grad_output[{i}] has a shape of "
                        f"{grad_shape} and output[{i}] has a shape of {out.shape}. If you only "
                        "want some tensors in `grad_output` to be considered batched, consider "
                        "using vmap.")
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                                   f"{grad_shape} and output[{i}] has a shape of {out.shape}.")
            new_grads.append(g)
        elif g is None:
            if out.requires_grad:
                if out.numel() != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if not out.is_floating_point():
                    raise RuntimeError("grad can be implicitly created only for real scalar "
                                       f"outputs but got {out.dtype}")
                new_grads.append(_C.ones_like(out))
            else:
                new_grads.append(None)
        else:
            raise TypeError("gradients can be either Tensors or None, but got "
                            + type(g).__name__)
    return new_grads


def _check_engine_args(outputs, grads, inputs):
    """The checks the C++ engine makes before running (python_engine.cpp), with its messages."""
    if len(outputs) != len(grads):
        raise RuntimeError(f"got {len(outputs)} tensors and {len(grads)} gradients")
    for i, out in enumerate(outputs):
        if not out.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not "
                               "have a grad_fn")
    for x in inputs:
        if not isinstance(x, Tensor):
            raise RuntimeError("all inputs have to be Tensors or GradientEdges, but got "
                               + type(x).__name__)
        if not x.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Gradients of ``outputs`` with respect to ``inputs`` (``.grad`` fields untouched).
    ``inputs`` may be a dict (``dict(model.named_parameters())``): the result is then a dict
    with the same keys."""
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when "
                         "materialize_grads=True, but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outs = list(_seq(outputs))
    ins = _inputs_tuple(inputs, "grad")
    if len(ins) == 0:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to "
                      "True). To accumulate gradient for other parts of the graph, please use "
                      "torch.autograd.backward.", FutureWarning, stacklevel=2)
    gos = _seq(grad_outputs) or [None] * len(outs)
    gos = _make_grads(outs, gos, is_grads_batched)
    _check_engine_args(outs, gos, ins)
    if retain_graph is None:
        retain_graph = create_graph
    # The engine is asked for None on unused inputs; the error (if any) is raised here with
    # PyTorch's message.
    if is_grads_batched:
        res = _batched_grad(outs, ins, gos, retain_graph, create_graph)
    else:
        res = _C._grad(outs, list(ins), gos, retain_graph, create_graph, True)
    if not allow_unused:
        for i, g in enumerate(res):
            if g is None:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not "
                                   "have been used in the graph. Set allow_unused=True if "
                                   "this is the desired behavior.")
    if materialize_grads:
        res = [_C.zeros_like(x, requires_grad=create_graph) if g is None else g
               for g, x in zip(res, ins)]
    res = tuple(res)
    if type(inputs) is dict:
        return dict(zip(inputs.keys(), res))
    return res


def _batched_grad(outs, ins, gos, retain_graph, create_graph):
    """``is_grads_batched``: the first dim of every grad_output indexes independent
    vector-Jacobian products (PyTorch vmaps them; here they run one after another)."""
    if any(g is None for g in gos):
        raise RuntimeError("grad_outputs must be given (as tensors) when is_grads_batched=True")
    n = gos[0].shape[0]
    if any(g.shape[0] != n for g in gos):
        raise ValueError("vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {[g.shape[0] for g in gos]} for the mapped "
                         "dimension")
    per_sample = []
    for i in range(n):
        keep = retain_graph if i == n - 1 else True
        per_sample.append(_C._grad(outs, list(ins), [g[i] for g in gos], keep, create_graph,
                                   True))
    res = []
    for j, x in enumerate(ins):
        grads = [r[j] for r in per_sample]
        if all(g is None for g in grads):
            res.append(None)
        else:
            res.append(_C.stack([_C.zeros_like(x) if g is None else g for g in grads]))
    return res


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None):
    """``autograd.backward``: accumulate gradients of ``tensors`` into the leaves (only into
    ``inputs`` when given: a Tensor, a sequence or a dict of them)."""
    if grad_variables is not None:
        warnings.warn("`grad_variables` is deprecated. Use `grad_tensors` instead.",
                      FutureWarning, stacklevel=2)
        if grad_tensors is None:
            grad_tensors = grad_variables
        else:
            raise RuntimeError("`grad_tensors` and `grad_variables` (deprecated) arguments "
                               "both passed to `backward()`. Please only use `grad_tensors`.")
    if inputs is not None:
        inputs = list(_inputs_tuple(inputs, "backward"))
        if len(inputs) == 0:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
        for x in inputs:
            if isinstance(x, Tensor) and not x.requires_grad:
                # (the engine makes every input retain its gradient)
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    ts = _seq(tensors)
    gs = _seq(grad_tensors) or [None] * len(ts)
    gs = _make_grads(ts, gs, is_grads_batched=False)
    if len(ts) != len(gs):
        raise RuntimeError(f"got {len(ts)} tensors and {len(gs)} gradients")
    for k, (t, g) in enumerate(zip(ts, gs)):
        # Every pass but the last keeps the graph: the tensors may share it.
        keep = retain_graph if k == len(ts) - 1 else True
        t.backward(g, retain_graph=keep, create_graph=create_graph, inputs=inputs)


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, Tensor)


class _ExecutionEngine:
    """``Variable._execution_engine``: the backward engine's Python-facing calls."""

    @staticmethod
    def queue_callback(callback):
        """Run ``callback()`` once the backward pass now running has finished (call it from a
        hook); outside backward it raises PyTorch's RuntimeError."""
        _C._queue_callback(callback)

    @staticmethod
    def run_backward(tensors, grad_tensors, keep_graph, create_graph, inputs=(),
                     allow_unreachable=True, accumulate_grad=True):
        """PyTorch's low-level entry (``Variable._execution_engine.run_backward``)."""
        if accumulate_grad:
            backward(tensors, grad_tensors, keep_graph, create_graph,
                     inputs=list(inputs) or None)
            return ()
        return grad(tensors, inputs, grad_tensors, keep_graph, create_graph,
                    allow_unused=allow_unreachable)


class Variable(metaclass=_VariableMeta):
    """Legacy ``torch.autograd.Variable``: ``Variable(tensor, requires_grad=False)`` returns a
    plain Tensor, a detached alias of ``tensor`` (sharing its data) with ``requires_grad`` set;
    ``Variable()`` is an empty tensor. Every Tensor is an instance of ``Variable``."""

    def __new__(cls, data=None, requires_grad=False, volatile=False, _grad_fn=None, name=None):
        if volatile:
            import warnings
            warnings.warn("volatile was removed (Variable.volatile is always False)",
                          UserWarning, stacklevel=2)
        if data is None:
            var = _C.empty(0)
        elif isinstance(data, Tensor):
            var = data.detach()
        else:
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if requires_grad:
            var.requires_grad_(True)
        return var

    _execution_engine = _ExecutionEngine()


import types as _types  # noqa: E402

variable = _types.ModuleType("ferrotorch.autograd.variable",
                             "Legacy ``torch.autograd.variable``: holds ``Variable``.")
variable.Variable = Variable
import sys as _sys  # noqa: E402

_sys.modules.setdefault("ferrotorch.autograd.variable", variable)
