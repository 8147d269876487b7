"""Module-level reductions and sorting functions (``ferrotorch.sum(x, 0)``...): they forward
to the Tensor methods, which hold the PyTorch signatures. ``searchsorted`` and ``bucketize``
wrap the native module functions (results on the input's device).
"""

from ferrotorch import _C
from ferrotorch._functions import _forward

_NAMES = """
sum mean prod nansum nanmean max min amax amin argmax argmin aminmax
var std var_mean std_mean norm logsumexp softmax log_softmax
cumsum cumprod cummax cummin all any count_nonzero
sort argsort msort topk kthvalue median nanmedian mode unique unique_consecutive
bincount histc
""".split()

__all__ = list(_NAMES)

for _name in _NAMES:
    globals()[_name] = _forward(_name)


# ---------------------------------------------------------------- CUDA inputs of CPU kernels
# bincount, histc, searchsorted, bucketize and count_nonzero run on the input's device (the
# Rust ops have CUDA paths); these wrappers give them PyTorch's Python signatures.
Tensor = _C.Tensor


_native_bincount = Tensor.bincount
_native_histc = Tensor.histc
_native_count_nonzero = Tensor.count_nonzero


def _bincount(self, weights=None, minlength=0):
    """Occurrences of each non-negative integer of a 1-d tensor (weighted by ``weights``)."""
    return _native_bincount(self, weights, minlength)


def _histc(self, bins=100, min=0.0, max=0.0):  # noqa: A002 (PyTorch's names)
    """Histogram of the values in ``bins`` equal bins between ``min`` and ``max`` (the data's
    range when both are 0)."""
    return _native_histc(self, bins, min, max)


def _count_nonzero(self, dim=None):
    """Number of non-zero elements over ``dim`` (all dims when None), as int64."""
    return _native_count_nonzero(self, dim)


Tensor.bincount = _bincount
Tensor.histc = _histc
Tensor.count_nonzero = _count_nonzero


def searchsorted(
    sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None, out=None
):
    """Indices where the elements of ``input`` would be inserted into ``sorted_sequence``
    (along its last dimension) to keep it sorted."""
    kw = {"out_int32": out_int32, "right": right, "side": side}
    return _C.searchsorted(sorted_sequence, input, sorter=sorter, out=out, **kw)


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """Index of the bucket of each element of ``input`` given sorted 1-d ``boundaries``."""
    kw = {"out_int32": out_int32, "right": right}
    return _C.bucketize(input, boundaries, out=out, **kw)


__all__ += ["searchsorted", "bucketize"]
