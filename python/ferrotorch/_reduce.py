"""Module-level reductions and sorting functions (``ferrotorch.sum(x, 0)``...): they forward
to the Tensor methods, which hold the PyTorch signatures. ``searchsorted`` and ``bucketize``
are native module functions.
"""

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
