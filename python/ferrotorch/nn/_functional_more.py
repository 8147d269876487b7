"""Still more of ``torch.nn.functional``, composed from ferrotorch tensor ops so autograd runs
through them: the margin / likelihood losses PyTorch has beyond the common ones
(``poisson_nll_loss``, ``gaussian_nll_loss``, ``hinge_embedding_loss``, ``soft_margin_loss``,
``multilabel_soft_margin_loss``, ``multilabel_margin_loss``, ``multi_margin_loss``,
``triplet_margin_with_distance_loss``), the shrink / randomized activations
(``hardshrink``, ``softshrink``, ``rrelu``) and the in-place functional activations,
``max_unpool1d/2d/3d``, ``channel_shuffle`` and ``pdist``. They are re-exported by
:mod:`ferrotorch.nn.functional`.

>>> import ferrotorch as torch
>>> import ferrotorch.nn.functional as F
>>> F.softshrink(torch.tensor([-2.0, 0.1, 3.0]), 0.5).tolist()
[-1.5, 0.0, 2.5]
"""

import math

from ferrotorch import _C
from ferrotorch._compare import finfo as _finfo
from ferrotorch.nn.functional import (
    _float_mask,
    _inplace_src,
    _legacy_reduction,
    _reduce,
    celu,
    elu,
    hardtanh,
    leaky_relu,
    pairwise_distance,
    selu,
    threshold as _threshold,
)

__all__ = [
    "poisson_nll_loss", "gaussian_nll_loss", "hinge_embedding_loss", "soft_margin_loss",
    "multilabel_soft_margin_loss", "multilabel_margin_loss", "multi_margin_loss",
    "triplet_margin_with_distance_loss", "hardshrink", "softshrink", "rrelu", "rrelu_",
    "threshold_", "hardtanh_", "elu_", "selu_", "celu_", "leaky_relu_", "max_unpool1d",
    "max_unpool2d", "max_unpool3d", "channel_shuffle", "native_channel_shuffle", "pdist",
]

_REDUCTIONS = ("none", "mean", "sum")

# ATen's names of the scalar types, as its error messages print them.
_ATEN_TYPE_NAMES = {
    "float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
    "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
    "bool": "Bool",
}


def _aten_type_name(dtype):
    name = str(dtype).rsplit(".", 1)[-1]
    return _ATEN_TYPE_NAMES.get(name, name)


def _check_reduction(reduction, message="{} is not a valid value for reduction"):
    if reduction not in _REDUCTIONS:
        raise ValueError(message.format(reduction))


def _sizes(t):
    return list(t.shape)


def _check_long_target(target):
    if target.is_floating_point() or target.dtype == _C.bool:
        raise RuntimeError(f"expected scalar type Long but found {_aten_type_name(target.dtype)}")


def _log_sigmoid(x):
    """``log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|))`` (the fused op: exact for every ``x``,
    with the gradient ``sigmoid(-x)`` exact at 0 too)."""
    return _C.log_sigmoid(x)


# ---------------------------------------------------------------------------- losses
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    r"""Poisson negative log likelihood: ``exp(input) - target * input`` when ``log_input``
    (the input is the log of the rate), else ``input - target * log(input + eps)``; ``full``
    adds the Stirling approximation ``target log(target) - target + 0.5 log(2 pi target)``
    for ``target > 1``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        keep = _float_mask(target > 1, target)
        safe = target * keep + (1 - keep)  # 1 where masked, so every log below is finite
        stirling = safe * safe.log() - safe + (safe * (2 * math.pi)).log() * 0.5
        loss = loss + stirling * keep
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    r"""Gaussian negative log likelihood ``0.5 (log(max(var, eps)) + (input - target)^2 /
    max(var, eps))`` (+ ``0.5 log(2 pi)`` when ``full``). ``var`` is a float, the input's
    shape (heteroscedastic), or that shape with the last dim 1 or missing (homoscedastic).
    The clamp to ``eps`` is invisible to autograd, as PyTorch's ``no_grad`` ``clamp_``."""
    if isinstance(var, (int, float)) and not isinstance(var, bool):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = _C.ones_like(input) * float(var)
    elif var.numel() and bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    in_shape, var_shape = tuple(input.shape), tuple(var.shape)
    if var_shape != in_shape:
        if in_shape[:-1] == var_shape:
            var = var.unsqueeze(-1)
        elif in_shape[:-1] == var_shape[:-1] and var_shape[-1] == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    _check_reduction(reduction, "{} is not valid")
    # Clamped values with the identity gradient: c + (var - var) is exactly c.
    clamped = var.detach().clamp_min(eps)
    var = clamped + (var - var.detach())
    d = input - target
    loss = (var.log() + d * d / var) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    r"""``input`` where ``target == 1``, ``max(0, margin - input)`` where ``target == -1``
    (PyTorch's composition: a target that is neither takes both terms)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    zeros = _C.zeros_like(input)
    margin_clamp = (margin - input).clamp_min(0.0)
    output_margin = _C.where(target != 1, margin_clamp, zeros)
    output_self = _C.where(target != -1, input, zeros)
    return _reduce(output_margin + output_self, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    r"""Two-class logistic loss ``log(1 + exp(-target * input))`` (PyTorch's expression, so
    its overflow to ``inf`` for ``-target * input`` past ~88 in float32 too)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    return _reduce((-input * target).exp().log1p(), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    r"""Multi-label one-versus-all logistic loss, averaged over the classes (last dim):
    ``-mean_c(w_c (y_c log sigmoid(x_c) + (1 - y_c) log sigmoid(-x_c)))``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction, "{} is not valid")
    loss = -(target * _log_sigmoid(input) + (1 - target) * _log_sigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    num_classes = input.shape[class_dim]
    loss = loss.sum(class_dim) / num_classes
    return _reduce(loss, reduction)


def _margin_input_check(input):
    ndim = input.ndim
    if not ((ndim == 2 and input.shape[1] != 0) or (ndim == 1 and input.shape[0] != 0)
            or ndim == 0):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {_sizes(input)}")


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    r"""Multi-class multi-classification hinge loss: for each sample,
    ``sum_{j in targets} sum_{i not in targets} max(0, 1 - (x[j] - x[i])) / C``. ``target``
    has the input's shape and lists class indices, ended by the first negative entry."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _margin_input_check(input)
    ndim = input.ndim
    if ndim <= 1:
        nframe, dim = 1, (1 if ndim == 0 else input.shape[0])
        ok = target.ndim <= 1 and target.numel() == dim
    else:
        nframe, dim = input.shape
        ok = target.ndim == 2 and tuple(target.shape) == (nframe, dim)
    if not ok:
        raise RuntimeError(f"inconsistent target size: {_sizes(target)} for input of size: "
                           f"{_sizes(input)}")
    _check_long_target(target)
    x = input.reshape(nframe, dim)
    y = target.reshape(nframe, dim)
    # Entries before the first negative one are the sample's targets.
    valid = (y >= 0).to(_C.int64).cumprod(1) > 0
    if y.numel() and bool(valid.logical_and(y >= dim).any()):
        raise RuntimeError(f"multilabel_margin_loss: target index is out of bounds for "
                           f"{dim} classes")
    classes = _C.arange(dim, device=y.device).reshape(1, 1, dim)
    onehot = (y.unsqueeze(2) == classes).logical_and(valid.unsqueeze(2))  # (N, K, C)
    # How often each class is listed (PyTorch's loop counts a repeated target each time).
    count = onehot.to(input.dtype).sum(1)
    not_target = _float_mask(count == 0, input)
    z = 1 - x.unsqueeze(2) + x.unsqueeze(1)  # [n, j, i] = 1 - x[j] + x[i]
    hinge = z.relu() * count.unsqueeze(2) * not_target.unsqueeze(1)
    loss = hinge.sum((1, 2)) / dim
    if reduction == "none":
        return loss.reshape(()) if target.ndim <= 1 else loss
    return _reduce(loss, reduction)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    r"""Multi-class hinge loss: for each sample,
    ``sum_{i != y} w[y] max(0, margin - x[y] + x[i])^p / C`` with ``p`` 1 or 2."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    _margin_input_check(input)
    ndim = input.ndim
    nframe = 1 if ndim <= 1 else input.shape[0]
    dim = 1 if ndim == 0 else input.shape[-1]
    if not (target.ndim <= 1 and target.numel() == nframe):
        raise RuntimeError(f"inconsistent target size, expected {nframe} but got "
                           f"{_sizes(target)}")
    if weight is not None and not (weight.ndim <= 1 and weight.numel() == dim):
        raise RuntimeError(f"inconsistent weight size, expected {dim} but got "
                           f"{_sizes(weight)}")
    _check_long_target(target)
    y = target.reshape(nframe, 1)
    if nframe and bool(((y < 0).logical_or(y >= dim)).any()):
        raise RuntimeError("target out of range")
    x = input.reshape(nframe, dim)
    z = margin - x.gather(1, y) + x
    h = z.relu()
    if p == 2:
        h = h * h
    classes = _C.arange(dim, device=y.device).reshape(1, dim)
    h = h * _float_mask(classes != y, input)
    if weight is not None:
        h = h * weight.index_select(0, y.reshape(-1)).reshape(nframe, 1)
    loss = h.sum(1) / dim
    if reduction == "none":
        return loss if target.ndim > 0 else loss.reshape(())
    return _reduce(loss, reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    r"""``max(d(a, p) - d(a, n) + margin, 0)`` with a custom ``distance_function``
    (default: ``pairwise_distance``); ``swap`` uses ``min(d(a, n), d(p, n))``."""
    _check_reduction(reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a_dim, p_dim, n_dim = anchor.ndim, positive.ndim, negative.ndim
    if not (a_dim == p_dim and p_dim == n_dim):
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number "
            f"of dimensions, but got: anchor {a_dim}D, positive {p_dim}D, and negative "
            f"{n_dim}D inputs")
    if distance_function is None:
        distance_function = pairwise_distance
    dist_pos = distance_function(anchor, positive)
    dist_neg = distance_function(anchor, negative)
    if swap:
        dist_neg = dist_neg.minimum(distance_function(positive, negative))
    loss = (margin + dist_pos - dist_neg).clamp_min(0.0)
    return _reduce(loss, reduction)


# ---------------------------------------------------------------------------- activations
def hardshrink(input, lambd=0.5):
    r"""``x`` where ``|x| > lambd``, else 0."""
    return input * _float_mask(input.abs() > lambd, input)


def softshrink(input, lambd=0.5):
    r"""``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0."""
    if input.is_floating_point():
        hi = _finfo(input.dtype).max
        if not 0 <= lambd <= hi:
            # ATen prints the numbers as C++ streams do (6 significant digits).
            raise RuntimeError(f"lambda must be in range [0, {hi:g}] for input dtype "
                               f"{_aten_type_name(input.dtype)}, but found {lambd:g}")
    return (input - lambd).relu() - (-input - lambd).relu()


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    r"""Randomized leaky ReLU: in training each non-positive element is scaled by its own
    slope drawn from ``U(lower, upper)`` (the default generator, so ``manual_seed``
    reproduces it); in evaluation by the fixed slope ``(lower + upper) / 2``."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if training:
        noise = _C.rand(*input.shape, dtype=input.dtype, device=input.device)
        noise = noise * (upper - lower) + lower
        pos = _float_mask(input > 0, input)
        out = _inplace_src(input, inplace) * (pos + (1 - pos) * noise)
    else:
        out = leaky_relu(_inplace_src(input, inplace), (lower + upper) / 2)
    return input.copy_(out) if inplace else out


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, inplace=True)


def threshold_(input, threshold, value):
    return _threshold(input, threshold, value, inplace=True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def elu_(input, alpha=1.0):
    return elu(input, alpha, inplace=True)


def selu_(input):
    return selu(input, inplace=True)


def celu_(input, alpha=1.0):
    return celu(input, alpha, inplace=True)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, inplace=True)


# ---------------------------------------------------------------------------- max_unpool
def _ntuple(x, n):
    if isinstance(x, (list, tuple)):
        return tuple(x)
    return (x,) * n


def _unpool_output_size(input, kernel_size, stride, padding, output_size):
    input_size = tuple(input.shape)
    nk = len(kernel_size)
    default_size = [(input_size[-nk + d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d]
                    for d in range(nk)]
    if output_size is None:
        return default_size
    if len(output_size) == nk + 2:
        output_size = output_size[2:]
    if len(output_size) != nk:
        raise ValueError(
            f"output_size should be a sequence containing {nk} or {nk + 2} elements, but it "
            f"has a length of '{len(output_size)}'")
    for d in range(nk):
        min_size = default_size[d] - stride[d]
        max_size = default_size[d] + stride[d]
        if not (min_size < output_size[d] < max_size):
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between '
                             f"{min_size} and {max_size})")
    return [int(s) for s in output_size]


def _unpool_checks(input, indices, n, name):
    for i in range(1, input.ndim):
        if input.shape[i] <= 0:
            raise RuntimeError(
                f"{name}: Expected input to have non-zero size for non-batch dimensions, but "
                f"got {_sizes(input)} with dimension {i} being empty.")


def _unpool_scatter(input, indices, out_spatial):
    """Scatter each value of ``input`` to its flat ``indices`` position in a zero output of
    spatial size ``out_spatial`` (the scatter's backward is the gather of PyTorch's)."""
    n = len(out_spatial)
    lead = tuple(input.shape[:-n])
    in_numel = math.prod(input.shape[-n:])
    out_numel = math.prod(out_spatial)
    x = input.reshape(-1, in_numel)
    idx = indices.reshape(-1, in_numel)
    if idx.numel():
        bad = (idx < 0).logical_or(idx >= out_numel)
        if bool(bad.any()):
            first = int(idx.masked_select(bad)[0].item())
            size = "x".join(str(s) for s in out_spatial)
            raise RuntimeError(
                f"Found an invalid max index: {first} (output volumes are of size {size}")
    out = _C.zeros(x.shape[0], out_numel, dtype=input.dtype, device=input.device)
    out = out.scatter(1, idx.to(input.device), x)
    return out.reshape(*lead, *out_spatial)


def _max_unpool2d(input, indices, output_size):
    if indices.dtype != _C.int64:
        raise RuntimeError("elements in indices should be type int64 but got: "
                           f"{_aten_type_name(indices.dtype)}")
    if len(output_size) != 2:
        raise RuntimeError("There should be exactly two elements (height, width) in "
                           f"output_size, but got {len(output_size)} elements.")
    if input.ndim not in (3, 4):
        raise RuntimeError("Input to max_unpooling2d should be a 3d or 4d Tensor, but got a "
                           f"tensor with {input.ndim} dimensions.")
    if tuple(input.shape) != tuple(indices.shape):
        raise RuntimeError(
            f"Expected shape of indices to be same as that of the input tensor "
            f"({_sizes(input)}) but got indices tensor with shape: {_sizes(indices)}")
    _unpool_checks(input, indices, 2, "max_unpooling2d_forward_out_cpu()")
    return _unpool_scatter(input, indices, tuple(output_size))


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    r"""Partial inverse of ``max_pool1d``: every value goes back to the position its index
    names (as ``max_pool1d(..., return_indices=True)`` returns them), zeros elsewhere."""
    kernel_size = _ntuple(kernel_size, 1)
    stride = _ntuple(stride, 1) if stride is not None else kernel_size
    padding = _ntuple(padding, 1)
    output_size = _unpool_output_size(input, kernel_size, stride, padding, output_size)
    output_size = list(output_size) + [1]
    out = _max_unpool2d(input.unsqueeze(-1), indices.unsqueeze(-1), output_size)
    return out.squeeze(-1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    r"""Partial inverse of ``max_pool2d``: every value goes back to the position its index
    (flat over ``H*W``) names, zeros elsewhere."""
    kernel_size = _ntuple(kernel_size, 2)
    stride = _ntuple(stride, 2) if stride is not None else kernel_size
    padding = _ntuple(padding, 2)
    output_size = _unpool_output_size(input, kernel_size, stride, padding, output_size)
    return _max_unpool2d(input, indices, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    r"""Partial inverse of ``max_pool3d``: every value goes back to the position its index
    (flat over ``D*H*W``) names, zeros elsewhere."""
    kernel_size = _ntuple(kernel_size, 3)
    stride = _ntuple(stride, 3) if stride is not None else kernel_size
    padding = _ntuple(padding, 3)
    output_size = _unpool_output_size(input, kernel_size, stride, padding, output_size)
    if indices.dtype != _C.int64:
        raise RuntimeError("elements in indices should be type int64")
    if input.ndim not in (4, 5):
        raise RuntimeError("Input to max_unpooling3d should be a 4d or 5d Tensor, but got a "
                           f"tensor with {input.ndim} dimensions.")
    if len(output_size) != 3:
        raise RuntimeError("There should be exactly three elements (depth, height, width) in "
                           f"output_size, but got {len(output_size)} elements.")
    if len(stride) != 3:
        raise RuntimeError("There should be exactly three elements (depth, height, width) in "
                           f"stride, but got: {len(stride)} elements.")
    if len(padding) != 3:
        raise RuntimeError("There should be exactly three elements (depth, height, width) in "
                           f"padding, but got: {len(padding)} elements.")
    if tuple(input.shape) != tuple(indices.shape):
        raise RuntimeError(
            f"Expected shape of indices to be same as that of the input tensor "
            f"({_sizes(input)}) but got indices tensor with shape: {_sizes(indices)}")
    _unpool_checks(input, indices, 3, "max_unpooling3d_forward_out_cpu()")
    if not all(s > 0 for s in stride):
        raise RuntimeError(f"strides should be greater than zero, but got stride: {list(stride)}")
    return _unpool_scatter(input, indices, tuple(output_size))


# ---------------------------------------------------------------------------- misc
def channel_shuffle(input, groups):
    r"""Split the channels (dim 1) into ``groups`` groups and interleave them:
    ``(N, g * k, *) -> (N, k * g, *)`` by a reshape / transpose."""
    if input.dim() <= 2:
        raise RuntimeError("channel_shuffle expects input to have at least 3 dimensions, but "
                           f"got input with sizes {_sizes(input)}")
    if groups <= 0:
        raise RuntimeError("Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    b, c = input.shape[0], input.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    rest = tuple(input.shape[2:])
    x = input.reshape(b, groups, c // groups, *rest).transpose(1, 2)
    return x.reshape(*input.shape)


native_channel_shuffle = channel_shuffle


def _norm_last(d, p):
    """The p-norm of ``d`` over its last dim, with PyTorch's ``pdist`` gradient conventions:
    0 where the distance (or, for ``p < 1``, a difference) is 0 instead of 0 * inf."""
    if p == 0:
        # A count: no gradient (the zero term keeps the result on the graph, as PyTorch's).
        return _float_mask(d != 0, d).sum(-1) + (d * 0).sum(-1)
    if math.isinf(p):
        return d.abs().amax(-1)
    a = d.abs()
    if p == 1:
        return a.sum(-1)
    if p == 2:
        s = (d * d).sum(-1)
        nz = _float_mask(s > 0, s)
        return (s + (1 - nz)).sqrt() * nz
    if p < 1:
        nza = _float_mask(a > 0, a)
        ap = (a + (1 - nza)).pow(p) * nza
    else:
        ap = a.pow(p)
    s = ap.sum(-1)
    nz = _float_mask(s > 0, s)
    return (s + (1 - nz)).pow(1.0 / p) * nz


def pdist(input, p=2):
    r"""The p-norm distance between every pair of rows of an ``(N, M)`` input: the upper
    triangle (``i < j``, row-major) of the distance matrix, shape ``(N (N - 1) / 2,)``."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if not input.is_floating_point():
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    import numpy as np

    # (Two separate index tensors: a row of an empty (2, 0) index tensor is a view at
    # offset 1 of an empty storage, which index_select rejects.)
    rows, cols = (_C.tensor(np.ascontiguousarray(v, dtype=np.int64), device=input.device)
                  for v in np.triu_indices(n, 1))
    diff = input.index_select(0, rows) - input.index_select(0, cols)
    return _norm_last(diff, p)

