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

import math

from ferrotorch import _C
from ferrotorch.autograd.function import Function

Tensor = _C.Tensor

_DTYPE_NAMES = {"float16": "Half", "bfloat16": "BFloat16", "float32": "Float",
                "float64": "Double", "int64": "Long", "int32": "Int", "int16": "Short",
                "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def _name(dtype):
    return _DTYPE_NAMES.get(str(dtype).rsplit(".", 1)[-1], str(dtype))


def _uniform(shape, generator):
    return _C.rand(shape, dtype=_C.float64, generator=generator)


def _inversion(n, q, mask, generator):
    """Counts of geometric waiting times fitting in ``n`` trials (for ``n * q < 10``)."""
    logq = _C.where(mask, q, 0.5).neg().log1p()
    shape = tuple(q.shape)
    geom_sum = _C.zeros_like(q)
    count = _C.zeros_like(q)
    active = mask
    while bool(active.any()):
        geom = (_uniform(shape, generator).log() / logq).ceil()
        geom_sum = geom_sum + _C.where(active, geom, 0.0)
        active = active & (geom_sum <= n)
        count = count + active.to(q.dtype)
    return count


def _btrs(n, q, mask, generator):
    """Hormann's (1993) BTRS for ``n * q >= 10``, ``q <= 1/2``."""
    from ferrotorch.distributions.binomial import _stirling_approx_tail

    n = _C.where(mask, n, 100.0)
    q = _C.where(mask, q, 0.5)
    shape = tuple(q.shape)
    stddev = (n * q * (1 - q)).sqrt()
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * q
    c = n * q + 0.5
    v_r = 0.92 - 4.2 / b
    r = q / (1 - q)
    alpha = (2.83 + 5.1 / b) * stddev
    m = ((n + 1) * q).floor()
    bound_m = ((m + 0.5) * ((m + 1) / (r * (n - m + 1))).log()
               + _stirling_approx_tail(m) + _stirling_approx_tail(n - m))
    result = _C.zeros_like(q)
    active = mask
    while bool(active.any()):
        u = _uniform(shape, generator) - 0.5
        v = _uniform(shape, generator)
        us = 0.5 - u.abs()
        k = ((2 * a / us + b) * u + c).floor()
        valid = (k >= 0) & (k <= n)
        kk = _C.where(valid, k, 0.0)
        box = (us >= 0.07) & (v <= v_r)
        log_v = (v * alpha / (a / (us * us) + b)).log()
        upper = (bound_m + (n + 1) * ((n - m + 1) / (n - kk + 1)).log()
                 + (kk + 0.5) * (r * (n - kk + 1) / (kk + 1)).log()
                 - _stirling_approx_tail(kk) - _stirling_approx_tail(n - kk))
        accept = active & valid & (box | (log_v <= upper))
        result = _C.where(accept, k, result)
        active = active & ~accept
    return result


def _sample(count, prob, generator):
    n, p = _C.broadcast_tensors(count.to(_C.float64), prob.to(_C.float64))
    n, p = n.contiguous(), p.contiguous()
    finite = n.isfinite()
    n = _C.where(finite, n, 0.0)
    flip = p > 0.5
    q = _C.where(flip, 1 - p, p)
    live = (n > 0) & (q > 0)
    use_btrs = live & (n * q >= 10)
    k = _C.where(use_btrs, _btrs(n, q, use_btrs, generator),
                 _inversion(n, q, live & ~use_btrs, generator))
    k = _C.where(flip & (n > 0), n - k, k)
    k = _C.where(p.isnan() | ~finite, math.nan, k)
    return k.to(count.dtype)


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
