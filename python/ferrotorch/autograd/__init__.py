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
    res = _C._grad(outs, ins, gos, retain_graph, create_graph, allow_unused)
    if materialize_grads:
        res = [_C.zeros_like(x) if g is None else g for g, x in zip(res, ins)]
    res = tuple(res)
    return res if not single_input else res


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             inputs=None):
    """``autograd.backward``: accumulate gradients of ``tensors`` into the leaves."""
    ts = _seq(tensors)
    gs = _seq(grad_tensors) or [None] * len(ts)
    for t, g in zip(ts, gs):
        t.backward(g, retain_graph=True if len(ts) > 1 else retain_graph,
                   create_graph=create_graph, inputs=inputs)
