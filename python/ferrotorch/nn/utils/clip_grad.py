"""Gradient clipping: ``clip_grad_norm_`` and ``clip_grad_value_``."""

import math
import warnings

from ferrotorch import _C
from ferrotorch.autograd.grad_mode import no_grad

Tensor = _C.Tensor


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The ``norm_type`` norm of all ``tensors`` viewed as one vector (a 0-d tensor)."""
    if isinstance(tensors, Tensor):
        tensors = [tensors]
    tensors = list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return _C.tensor(0.0)
    with no_grad():
        if norm_type == math.inf:
            norms = [t.abs().amax() for t in tensors]
            total = norms[0]
            for n in norms[1:]:
                total = total.maximum(n)
        else:
            total = None
            for t in tensors:
                s = t.abs().pow(norm_type).sum().to(_C.float64)
                total = s if total is None else total + s
            total = total.pow(1.0 / norm_type).to(tensors[0].dtype)
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the "
            "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`"
        )
    return total


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    r"""Scale the gradients in place so that their joint ``norm_type`` norm is at most
    ``max_norm``; returns the total norm before clipping."""
    grads = _grads(parameters)
    if not grads:
        return _C.tensor(0.0)
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite)
    clip_coef = float(max_norm) / (total_norm.item() + 1e-6)
    if clip_coef < 1.0:
        with no_grad():
            for g in grads:
                g.mul_(clip_coef)
    return total_norm


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                   foreach=None):
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    r"""Clamp every gradient element to ``[-clip_value, clip_value]`` in place."""
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            lo = _C.tensor(-clip_value, dtype=g.dtype, device=g.device)
            hi = _C.tensor(clip_value, dtype=g.dtype, device=g.device)
            g.copy_(g.maximum(lo).minimum(hi))


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    r"""Scale the gradients of ``parameters`` in place by ``max_norm / (total_norm + 1e-6)``,
    clamped to at most 1 (``total_norm`` from ``get_total_norm``); returns None."""
    grads = _grads(parameters)
    if not grads:
        return None
    if isinstance(total_norm, _C.Tensor):
        coef = (float(max_norm) / (total_norm.detach() + 1e-6)).clamp(max=1.0)
    else:
        coef = _C.tensor(min(float(max_norm) / (float(total_norm) + 1e-6), 1.0))
    with no_grad():
        for g in grads:
            g.mul_(coef.to(device=g.device, dtype=g.dtype))
    return None
