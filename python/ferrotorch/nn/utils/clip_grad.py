"""Gradient clipping: ``clip_grad_norm_`` and ``clip_grad_value_``."""

import math
import warnings

from ferrotorch import _C, linalg
from ferrotorch.autograd.grad_mode import no_grad

Tensor = _C.Tensor

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_"]


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The ``norm_type`` norm of the per-tensor ``norm_type`` norms of ``tensors`` (a 0-d
    tensor), as PyTorch: for p > 0 the norm of all elements viewed as one vector; ``inf`` /
    ``-inf`` the largest / smallest per-tensor norm, 0 the number of nonzero tensors."""
    if isinstance(tensors, Tensor):
        tensors = [tensors]
    tensors = list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return _C.tensor(0.0)
    with no_grad():
        norms = [linalg.vector_norm(t, norm_type) for t in tensors]
        total = linalg.vector_norm(_C.stack(norms), norm_type)
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
    ``max_norm`` (each is multiplied by ``min(max_norm / (total_norm + 1e-6), 1)``); returns
    the total norm before clipping."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    parameters = list(parameters)  # a generator is walked twice
    grads = _grads(parameters)
    if not grads:
        return _C.tensor(0.0)
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite)
    clip_grads_with_norm_(parameters, max_norm, total_norm)
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
