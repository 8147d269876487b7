"""PyTorch's complex-number API on ferrotorch's real tensors (there is no complex dtype):
``real``/``conj``/``conj_physical``/``resolve_conj``/``resolve_neg`` return their input
itself, as PyTorch does for real dtypes; ``imag`` raises PyTorch's error; ``is_conj``/``is_neg``
are False; ``isreal`` is all True; ``angle`` is 0 where ``x >= 0``, pi where ``x < 0`` and
NaN where ``x`` is NaN (integer inputs give the default float dtype; its gradient is zero).
Installed as module functions and Tensor methods (``real``/``imag`` as properties)."""

import math

from ferrotorch import _C
from ferrotorch.autograd import Function

Tensor = _C.Tensor

__all__ = ["real", "imag", "conj", "conj_physical", "conj_physical_", "resolve_conj",
           "resolve_neg", "is_conj", "is_neg", "angle", "isreal"]

_IMAG_ERROR = "imag is not implemented for tensors with non-complex dtypes."


def _check_tensor(fn, input):
    if not isinstance(input, Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")


def real(input):
    """The real part: ``input`` itself for a real tensor."""
    _check_tensor("real", input)
    return input


def imag(input):
    """The imaginary part; real tensors have none (PyTorch's RuntimeError)."""
    _check_tensor("imag", input)
    raise RuntimeError(_IMAG_ERROR)


def conj(input):
    """The complex conjugate: ``input`` itself for a real tensor."""
    _check_tensor("conj", input)
    return input


def conj_physical(input, *, out=None):
    """The materialised complex conjugate: ``input`` itself for a real tensor."""
    _check_tensor("conj_physical", input)
    if out is not None:
        out.copy_(input)
        return out
    return input


def conj_physical_(input):
    """In-place complex conjugate: nothing to do for a real tensor."""
    _check_tensor("conj_physical_", input)
    return input


def resolve_conj(input):
    """``input`` itself: a real tensor never has the conjugate bit set."""
    _check_tensor("resolve_conj", input)
    return input


def resolve_neg(input):
    """``input`` itself: a real tensor never has the negative bit set."""
    _check_tensor("resolve_neg", input)
    return input


def is_conj(input):
    """False: real tensors have no conjugate bit."""
    _check_tensor("is_conj", input)
    return False


def is_neg(input):
    """False: real tensors have no negative bit."""
    _check_tensor("is_neg", input)
    return False


def isreal(input):
    """All True: every element of a real tensor is real."""
    _check_tensor("isreal", input)
    return _C.ones_like(input, dtype=_C.bool)


def _angle_values(x):
    zero = _C.zeros_like(x)
    out = _C.where(x < 0, _C.full_like(x, math.pi), zero)
    return _C.where(x != x, x, out)  # NaN stays NaN


class _Angle(Function):
    """``angle`` of a real tensor: piecewise constant, so its gradient is zero."""

    @staticmethod
    def forward(ctx, x):
        return _angle_values(x)

    @staticmethod
    def backward(ctx, grad):
        return _C.zeros_like(grad)


def angle(input, *, out=None):
    """The argument of each element: 0 for ``x >= 0``, pi for ``x < 0``, NaN for NaN."""
    _check_tensor("angle", input)
    x = input
    if not x.dtype.is_floating_point:
        x = x.to(_C.get_default_dtype())
    result = _Angle.apply(x) if x.requires_grad else _angle_values(x)
    if out is not None:
        out.copy_(result)
        return out
    return result


def _set_real(self, value):
    self.copy_(value)


def _imag_property(self, value=None):
    raise RuntimeError(_IMAG_ERROR)


def _install(name, value):
    if not hasattr(Tensor, name):
        setattr(Tensor, name, value)


_install("real", property(real, _set_real))
_install("imag", property(_imag_property, _imag_property))
_install("conj", conj)
_install("conj_physical", lambda self: conj_physical(self))
_install("conj_physical_", conj_physical_)
_install("resolve_conj", resolve_conj)
_install("resolve_neg", resolve_neg)
_install("is_conj", is_conj)
_install("is_neg", is_neg)
_install("isreal", isreal)
_install("angle", lambda self: angle(self))
