"""A round trip through the CPU for Python functions built on native ops that have CPU
kernels only (the linear-algebra decompositions, quantile's helpers): CUDA arguments are
copied to the CPU and the results back (``.cpu()`` / ``.to(device)`` are differentiable, so
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
