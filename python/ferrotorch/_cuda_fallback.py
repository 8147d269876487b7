"""Stand-ins for native ops that have CPU kernels only (``clamp``, ``all``/``any``, the sort
family, ``cumsum``, the linear-algebra kernels...), so that functions written in Python on top
of them also run on CUDA tensors: either an equivalent composition of ops that have CUDA
kernels, or a round trip through the CPU (``.cpu()`` / ``.to(device)`` are differentiable, so
gradients reach the CUDA inputs). CPU tensors always take the native op, unchanged."""

from ferrotorch import _C

Tensor = _C.Tensor


def cuda_device(*values):
    """The device of the first CUDA tensor among ``values`` (None when there is none)."""
    for v in values:
        if isinstance(v, Tensor) and v.is_cuda:
            return v.device
    return None


def to_device(result, device):
    """``result`` (a tensor, a tuple or named tuple of tensors, or anything else) with its
    tensors moved to ``device``."""
    if isinstance(result, Tensor):
        return result.to(device)
    if isinstance(result, tuple):
        moved = [to_device(r, device) for r in result]
        return type(result)(*moved) if hasattr(result, "_fields") else tuple(moved)
    if isinstance(result, list):
        return [to_device(r, device) for r in result]
    return result


def via_cpu(fn, *args):
    """``fn(*args)`` for CPU-only kernels: CUDA tensor arguments are copied to the CPU and the
    results copied back to the (first) CUDA argument's device; without CUDA arguments this is
    just ``fn(*args)``."""
    device = cuda_device(*args)
    if device is None:
        return fn(*args)
    cpu = [a.cpu() if isinstance(a, Tensor) else a for a in args]
    return to_device(fn(*cpu), device)


def _const(value, like):
    return _C.full((), value, dtype=like.dtype, device=like.device)


def clamp_where(x, min=None, max=None):  # noqa: A002 (the names of Tensor.clamp)
    """``x.clamp(min, max)`` (Python-number bounds) as ``where`` selections, which have CUDA
    kernels: the same values (NaN kept), gradient 1 inside the closed range, 0 outside."""
    out = x
    if min is not None:
        out = _C.where(out < min, _const(min, out), out)
    if max is not None:
        out = _C.where(out > max, _const(max, out), out)
    return out


def clamp(x, min=None, max=None):  # noqa: A002
    """``x.clamp(min, max)``: the native op on the CPU, :func:`clamp_where` on CUDA."""
    return x.clamp(min, max) if not x.is_cuda else clamp_where(x, min, max)


def clamp_min(x, min):  # noqa: A002
    return x.clamp_min(min) if not x.is_cuda else clamp(x, min, None)


def clamp_max(x, max):  # noqa: A002
    return x.clamp_max(max) if not x.is_cuda else clamp(x, None, max)


def all_true_counted(x):
    """``x.all()`` as "no element equal to zero" (a count: sums have CUDA kernels)."""
    return x.logical_not().sum() == 0


def any_true_counted(x, dim, keepdim=False):
    """``x.any(dim, keepdim)`` as "a positive count of non-zero elements"."""
    return x.logical_not().logical_not().sum(dim, keepdim=keepdim) > 0


def all_true(x):
    """``x.all()`` (a 0-d bool tensor): native on the CPU, counted on CUDA."""
    return x.all() if not x.is_cuda else all_true_counted(x)


def any_true(x, dim, keepdim=False):
    """``x.any(dim, keepdim)``: native on the CPU, counted on CUDA."""
    return x.any(dim, keepdim=keepdim) if not x.is_cuda else any_true_counted(x, dim, keepdim)
