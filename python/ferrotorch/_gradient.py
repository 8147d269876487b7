"""``torch.gradient``: the derivative of a sampled function along one or more dimensions by
second-order accurate central differences inside and first- or second-order one-sided
differences at the edges (``edge_order``), with unit, scalar, per-dimension or coordinate
spacing. Written with differentiable tensor ops, as PyTorch's, so autograd flows through."""

import builtins
import numbers

from ferrotorch import _C

Tensor = _C.Tensor

__all__ = ["gradient"]


def _wrap_dims(dims, ndim):
    wrapped = []
    for d in dims:
        if not -ndim <= d < builtins.max(ndim, 1):
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[{-ndim}, {ndim - 1}], but got {d})")
        d = d + ndim if d < 0 else d
        if d in wrapped:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        wrapped.append(d)
    return wrapped


def _pre_check(input, spacing_size, dims, edge_order):
    """PyTorch's pre_check_gradient (``dims`` None when ``dim`` was not given)."""
    if input.dtype == _C.uint8:
        raise NotImplementedError("torch.gradient does not support uint8 input.")
    if spacing_size is not None and dims is None and spacing_size != input.dim():
        raise RuntimeError(
            "torch.gradient expected spacing to be unspecified, a scalar, or a list of length "
            f"equal to 'self.dim() = {input.dim()}', since dim argument was not given, but "
            f"got a list of length {spacing_size}")
    if spacing_size is not None and dims is not None and spacing_size != len(dims):
        raise RuntimeError(
            "torch.gradient expected spacing to be unspecified, a scalar or it's spacing and "
            "dim arguments to have the same length, but got a spacing argument of length "
            f"{spacing_size} and a dim argument of length {len(dims)}.")
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    for d in (_wrap_dims(dims, input.dim()) if dims is not None else builtins.range(input.dim())):
        if input.shape[d] < edge_order + 1:
            raise RuntimeError(
                "torch.gradient expected each dimension size to be at least edge_order+1")


def _sl(x, d, start, stop=None):
    n = x.shape[d]
    start = start + n if start < 0 else start
    stop = n if stop is None else (stop + n if stop < 0 else stop)
    return x.narrow(d, start, stop - start)


def _with_scalar(f, d, h, edge_order):
    center = (_sl(f, d, 2) - _sl(f, d, 0, -2)) / h
    if edge_order == 1:
        prepend = (_sl(f, d, 1, 2) - _sl(f, d, 0, 1)) / h
        append = (_sl(f, d, -1) - _sl(f, d, -2, -1)) / h
    else:
        prepend = (-1.5 * _sl(f, d, 0, 1) + 2 * _sl(f, d, 1, 2) - 0.5 * _sl(f, d, 2, 3)) / h
        append = (0.5 * _sl(f, d, -3, -2) - 2 * _sl(f, d, -2, -1) + 1.5 * _sl(f, d, -1)) / h
    return _C.cat([prepend, center / 2, append], d)


def _with_coordinates(f, d, coords, edge_order):
    if f.device != coords.device:
        raise RuntimeError(f"torch.gradient expected each tensor to be on the same device, "
                           f"but got devices {f.device} and {coords.device}!")
    if coords.dim() != 1:
        raise RuntimeError(f"torch.gradient expected each element of spacing to have one "
                           f"dimension, but got an element with {coords.dim()} dimensions!")
    shape = [1] * f.dim()
    shape[d] = -1
    dx = coords[1:] - coords[:-1]
    dx1, dx2 = dx[:-1], dx[1:]
    a = (-dx2 / (dx1 * (dx1 + dx2))).reshape(shape)
    b = ((dx2 - dx1) / (dx1 * dx2)).reshape(shape)
    c = (dx1 / (dx2 * (dx1 + dx2))).reshape(shape)
    center = a * _sl(f, d, 0, -2) + b * _sl(f, d, 1, -1) + c * _sl(f, d, 2)
    if edge_order == 1:
        prepend = (_sl(f, d, 1, 2) - _sl(f, d, 0, 1)) / dx[0]
        append = (_sl(f, d, -1) - _sl(f, d, -2, -1)) / dx[-1]
    else:
        h0, h1 = dx[0], dx[1]
        a = -(2.0 * h0 + h1) / (h0 * (h0 + h1))
        b = (h0 + h1) / (h0 * h1)
        c = -h0 / (h1 * (h0 + h1))
        prepend = a * _sl(f, d, 0, 1) + b * _sl(f, d, 1, 2) + c * _sl(f, d, 2, 3)
        h1, h2 = dx[-2], dx[-1]  # the last two steps
        a = h2 / (h1 * (h2 + h1))
        b = -(h2 + h1) / (h2 * h1)
        c = (2 * h2 + h1) / (h2 * (h2 + h1))
        append = a * _sl(f, d, -3, -2) + b * _sl(f, d, -2, -1) + c * _sl(f, d, -1)
    return _C.cat([prepend, center, append], d)


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """Estimate the gradient of the function sampled by ``input`` along ``dim`` (every
    dimension by default); one tensor per dimension, in a tuple.

    ``spacing`` is a scalar (the step in every dimension), a list of scalars (one step per
    dimension) or a list of 1-D coordinate tensors (the sample positions along each
    dimension). Interior points use second-order central differences; the edges use
    one-sided differences of order ``edge_order`` (1 or 2)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"gradient(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    dims = None
    if dim is not None:
        dims = [dim] if isinstance(dim, numbers.Integral) else [builtins.int(d) for d in dim]
    if isinstance(spacing, Tensor) and spacing.dim() == 0:
        spacing = spacing.item()
    if isinstance(spacing, numbers.Number):
        scalar_given = spacing is not None
        steps = [spacing] * (len(dims) if dims is not None else input.dim())
        spacing_size = len(steps) if scalar_given else None
        coords = False
    else:
        if isinstance(spacing, Tensor):
            spacing = [spacing]
        steps = list(spacing)
        spacing_size = len(steps)
        coords = builtins.any(isinstance(s, Tensor) for s in steps)
        if coords and not builtins.all(isinstance(s, Tensor) for s in steps):
            raise TypeError("gradient(): spacing must be a scalar, a list of scalars or a "
                            "list of tensors")
    _pre_check(input, spacing_size, dims, edge_order)
    dims = _wrap_dims(dims, input.dim()) if dims is not None else list(builtins.range(
        input.dim()))
    if coords:
        return tuple(_with_coordinates(input, d, c, edge_order) for d, c in zip(dims, steps))
    return tuple(_with_scalar(input, d, h, edge_order) for d, h in zip(dims, steps))
