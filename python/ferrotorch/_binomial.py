"""``torch.binomial(count, prob, generator=None)``: Binomial(``count``, ``prob``) samples.

PyTorch's sampler (``aten/src/ATen/native/Distributions.h``): with ``q = min(prob, 1 - prob)``,
Hormann's BTRS transformed rejection where ``count * q >= 10``, the geometric-sum inversion
elsewhere; the count of the flipped probability is subtracted from ``count``. Both run on all
elements at once (vectorised rejection loops: every element draws until it accepts), in
float64, and the samples are cast back to the input dtype. Special values as PyTorch's:
``count <= 0`` or ``prob <= 0`` gives 0, ``prob >= 1`` gives ``count``, a NaN ``prob`` gives
NaN (and a non-finite ``count``, on which PyTorch never returns, gives NaN here).

Dtype rules as PyTorch's: ``count`` must be a floating tensor (``ValueError``), ``prob`` a
tensor of the same dtype (``RuntimeError``); float16/bfloat16 raise ``NotImplementedError``
(PyTorch's CPU kernel has neither). The result has the broadcast shape. Not differentiable:
as in PyTorch, a result computed from inputs requiring grad has a ``grad_fn`` whose backward
raises "the derivative for 'binomial' is not implemented."
"""

from ferrotorch import _C
from ferrotorch._api_extra import _dtype_name as _name
from ferrotorch.autograd.function import Function

Tensor = _C.Tensor



def _sample(count, prob, generator):
    # the sampler of distributions.Binomial, on the broadcast pair
    from ferrotorch.distributions.binomial import _binomial

    n, p = _C.broadcast_tensors(count, prob)
    return _binomial(n, p, generator)


class _NoGradBinomial(Function):
    @staticmethod
    def forward(ctx, count, prob, generator):
        return _sample(count.detach(), prob.detach(), generator)

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("the derivative for 'binomial' is not implemented.")


def binomial(count, prob, generator=None):
    """Samples of Binomial(``count``, ``prob``) (elementwise, broadcast), as
    ``torch.binomial``."""
    if not isinstance(count, Tensor):
        raise TypeError(f"binomial(): argument 'count' (position 1) must be Tensor, not "
                        f"{type(count).__name__}")
    if not isinstance(prob, Tensor):
        raise TypeError(f"binomial(): argument 'prob' (position 2) must be Tensor, not "
                        f"{type(prob).__name__}")
    if not count.is_floating_point():
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: "
                         f"{_name(count.dtype)}")
    if prob.dtype != count.dtype:
        raise RuntimeError(f"Found dtype {_name(prob.dtype)} but expected {_name(count.dtype)}")
    if count.dtype not in (_C.float32, _C.float64):
        raise NotImplementedError(f"\"binomial_cpu\" not implemented for '{_name(count.dtype)}'")
    if _C.is_grad_enabled() and (count.requires_grad or prob.requires_grad):
        return _NoGradBinomial.apply(count, prob, generator)
    return _sample(count, prob, generator)
