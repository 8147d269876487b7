"""``ferrotorch.autograd``: reverse-mode automatic differentiation (engine in Rust)."""

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
    no_grad,
    set_grad_enabled,
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


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Gradients of ``outputs`` with respect to ``inputs`` (``.grad`` fields untouched)."""
    outs = _seq(outputs)
    ins = _seq(inputs)
    single_input = isinstance(inputs, Tensor)
    if allow_unused is None:
        allow_unused = materialize_grads
    gos = _seq(grad_outputs)
    if is_grads_batched:
        res = _batched_grad(outs, ins, gos, retain_graph, create_graph, allow_unused)
    else:
        res = _C._grad(outs, ins, gos, retain_graph, create_graph, allow_unused)
    if materialize_grads:
        res = [_C.zeros_like(x) if g is None else g for g, x in zip(res, ins)]
    res = tuple(res)
    return res if not single_input else res


def _batched_grad(outs, ins, gos, retain_graph, create_graph, allow_unused):
    """``is_grads_batched``: the first dim of every grad_output indexes independent
    vector-Jacobian products (PyTorch vmaps them; here they run one after another)."""
    if gos is None or any(g is None for g in gos):
        raise RuntimeError("grad_outputs must be given (as tensors) when is_grads_batched=True")
    n = gos[0].shape[0] if gos[0].dim() else 0
    if any(g.dim() == 0 or g.shape[0] != n for g in gos):
        raise RuntimeError("is_grads_batched=True: every grad_output needs the same leading "
                           "batch dim")
    per_sample = []
    for i in range(n):
        keep = retain_graph if i == n - 1 else True
        per_sample.append(_C._grad(outs, ins, [g[i] for g in gos], keep, create_graph,
                                   allow_unused))
    res = []
    for j, x in enumerate(ins):
        grads = [r[j] for r in per_sample]
        if all(g is None for g in grads):
            res.append(None)
        else:
            res.append(_C.stack([_C.zeros_like(x) if g is None else g for g in grads]))
    return res


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             inputs=None):
    """``autograd.backward``: accumulate gradients of ``tensors`` into the leaves."""
    ts = _seq(tensors)
    gs = _seq(grad_tensors) or [None] * len(ts)
    for t, g in zip(ts, gs):
        t.backward(g, retain_graph=True if len(ts) > 1 else retain_graph,
                   create_graph=create_graph, inputs=inputs)


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, Tensor)


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


import types as _types  # noqa: E402

variable = _types.ModuleType("ferrotorch.autograd.variable",
                             "Legacy ``torch.autograd.variable``: holds ``Variable``.")
variable.Variable = Variable
import sys as _sys  # noqa: E402

_sys.modules.setdefault("ferrotorch.autograd.variable", variable)
