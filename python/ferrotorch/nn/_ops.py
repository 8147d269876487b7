"""Differentiable building blocks used by ``nn.functional`` and the losses.

Each helper calls the native op. Where the native op does not (yet) record an autograd node,
the helper wraps it in an :class:`~ferrotorch.autograd.Function` whose backward is written with
tensor ops; which path is taken is decided once per op by a tiny probe, so the fallbacks switch
themselves off as native backward formulas land.
"""

import functools

from ferrotorch import _C
from ferrotorch.autograd import Function

Tensor = _C.Tensor


@functools.lru_cache(maxsize=None)
def native_has_grad(name):
    """True when ``Tensor.<name>`` records an autograd node (probed on a tiny tensor)."""
    probes = {
        "sum": lambda x: x.sum(1),
        "mean": lambda x: x.mean(1),
        "matmul": lambda x: x.matmul(x.t()),
        "softmax": lambda x: x.softmax(1),
        "log_softmax": lambda x: x.log_softmax(1),
        "logsumexp": lambda x: x.logsumexp(1),
        "index_select": lambda x: x.index_select(0, _C.tensor([0])),
        "amax": lambda x: x.amax(1),
    }
    x = _C.tensor([[1.0, 2.0], [3.0, 4.0]]).requires_grad_()
    try:
        return bool(probes[name](x).requires_grad)
    except Exception:  # noqa: BLE001 (missing op or unsupported: use the fallback)
        return False


def _dims(dim, ndim):
    if dim is None:
        return list(range(ndim))
    if isinstance(dim, int):
        dim = [dim]
    return sorted(d % ndim if ndim else 0 for d in dim)


def _unsqueeze_to(grad, shape, dims, keepdim):
    """Reshape a reduced gradient so that it broadcasts against ``shape``."""
    if not keepdim:
        for d in dims:
            if len(shape):
                grad = grad.unsqueeze(d)
    return grad.expand(*shape) if len(shape) else grad


class _Sum(Function):
    @staticmethod
    def forward(ctx, x, dim, keepdim):
        ctx.shape = tuple(x.shape)
        ctx.dims = _dims(dim, x.ndim)
        ctx.keepdim = keepdim
        return x.sum() if dim is None else x.sum(dim, keepdim=keepdim)

    @staticmethod
    def backward(ctx, g):
        if ctx.dims and not ctx.keepdim and g.ndim == 0 and len(ctx.shape):
            g = g.reshape([1] * len(ctx.shape))
            return g.expand(*ctx.shape), None, None
        return _unsqueeze_to(g, ctx.shape, ctx.dims, ctx.keepdim), None, None


def sum(x, dim=None, keepdim=False):
    if native_has_grad("sum") or not x.requires_grad:
        return x.sum() if dim is None else x.sum(dim, keepdim=keepdim)
    return _Sum.apply(x, dim, keepdim)


def mean(x, dim=None, keepdim=False):
    if native_has_grad("mean") or not x.requires_grad:
        return x.mean() if dim is None else x.mean(dim, keepdim=keepdim)
    n = 1
    for d in _dims(dim, x.ndim):
        n *= x.shape[d] if x.ndim else 1
    return sum(x, dim, keepdim) / max(n, 1) if n else sum(x, dim, keepdim) / 0.0


def amax(x, dim, keepdim=False):
    """Max along ``dim``; used only as a stabilising shift, so no gradient is needed."""
    return x.detach().amax(dim, keepdim=keepdim)


class _MatMul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a.matmul(b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        ga = gb = None
        if a.ndim == 1 or b.ndim == 1:
            a2 = a.unsqueeze(0) if a.ndim == 1 else a
            b2 = b.unsqueeze(-1) if b.ndim == 1 else b
            if a.ndim == 1 and b.ndim == 1:
                g2 = g.reshape(1, 1)
            elif a.ndim == 1:
                g2 = g.unsqueeze(-2)
            else:
                g2 = g.unsqueeze(-1)
        else:
            a2, b2, g2 = a, b, g
        if ctx.needs_input_grad[0]:
            ga = _sum_to(g2.matmul(b2.transpose(-1, -2)), tuple(a2.shape))
            ga = ga.reshape(a.shape)
        if ctx.needs_input_grad[1]:
            gb = _sum_to(a2.transpose(-1, -2).matmul(g2), tuple(b2.shape))
            gb = gb.reshape(b.shape)
        return ga, gb


def _sum_to(t, shape):
    """Sum ``t`` down to ``shape`` (undo broadcasting)."""
    if tuple(t.shape) == tuple(shape):
        return t
    lead = t.ndim - len(shape)
    if lead > 0:
        t = t.sum(list(range(lead)))
    dims = [i for i, s in enumerate(shape) if s == 1 and t.shape[i] != 1]
    if dims:
        t = t.sum(dims, keepdim=True)
    return t


def matmul(a, b):
    if native_has_grad("matmul") or not (a.requires_grad or b.requires_grad):
        return a.matmul(b)
    return _MatMul.apply(a, b)


class _Softmax(Function):
    @staticmethod
    def forward(ctx, x, dim):
        y = x.softmax(dim)
        ctx.save_for_backward(y)
        ctx.dim = dim
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return y * (g - (g * y).sum(ctx.dim, keepdim=True)), None


class _LogSoftmax(Function):
    @staticmethod
    def forward(ctx, x, dim):
        y = x.log_softmax(dim)
        ctx.save_for_backward(y)
        ctx.dim = dim
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g - y.exp() * g.sum(ctx.dim, keepdim=True), None


class _LogSumExp(Function):
    @staticmethod
    def forward(ctx, x, dim, keepdim):
        y = x.logsumexp(dim, keepdim=True)
        ctx.save_for_backward(x, y)
        ctx.dim = dim
        return y if keepdim else y.squeeze(dim)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        if g.ndim < x.ndim:
            g = g.unsqueeze(ctx.dim)
        return g * (x - y).exp(), None, None


def softmax(x, dim):
    if native_has_grad("softmax") or not x.requires_grad:
        return x.softmax(dim)
    return _Softmax.apply(x, dim)


def log_softmax(x, dim):
    if native_has_grad("log_softmax") or not x.requires_grad:
        return x.log_softmax(dim)
    return _LogSoftmax.apply(x, dim)


def logsumexp(x, dim, keepdim=False):
    if native_has_grad("logsumexp") or not x.requires_grad:
        return x.logsumexp(dim, keepdim=keepdim)
    return _LogSumExp.apply(x, dim, keepdim)


class _IndexSelect0(Function):
    @staticmethod
    def forward(ctx, weight, index):
        ctx.num = weight.shape[0]
        ctx.save_for_backward(index)
        return weight.index_select(0, index)

    @staticmethod
    def backward(ctx, g):
        (index,) = ctx.saved_tensors
        out = _C.zeros((ctx.num,) + tuple(g.shape[1:]), dtype=g.dtype)
        return out.index_add_(0, index, g), None


def index_select0(weight, index):
    """``weight.index_select(0, index)`` (``index`` 1-d), differentiable in ``weight``."""
    if native_has_grad("index_select") or not weight.requires_grad:
        return weight.index_select(0, index)
    return _IndexSelect0.apply(weight, index)


def full_like(x, value, dtype=None):
    return _C.full(tuple(x.shape), value, dtype=dtype or x.dtype)


def clamp(x, min=None, max=None):
    """Differentiable clamp built from ``where`` (gradient 1 inside the range, 0 outside)."""
    if hasattr(x, "clamp") and native_has_grad_clamp():
        return x.clamp(min, max)
    if min is not None:
        x = _C.where(x < min, _C.tensor(min, dtype=x.dtype), x)
    if max is not None:
        x = _C.where(x > max, _C.tensor(max, dtype=x.dtype), x)
    return x


@functools.lru_cache(maxsize=None)
def native_has_grad_clamp():
    x = _C.tensor([1.0, 2.0]).requires_grad_()
    try:
        return bool(x.clamp(0.0, 1.5).requires_grad)
    except Exception:  # noqa: BLE001
        return False
