"""``ferrotorch.nn.functional``: stateless layers, activations and losses (PyTorch's
``torch.nn.functional``), written with tensor ops so autograd differentiates them.

>>> import ferrotorch as torch
>>> import ferrotorch.nn.functional as F
>>> F.relu(torch.tensor([-1.0, 2.0])).tolist()
[0.0, 2.0]
"""

import math
import warnings

from ferrotorch import _C
from ferrotorch.autograd import Function

Tensor = _C.Tensor

__all__ = [
    "relu", "relu_", "relu6", "leaky_relu", "elu", "selu", "celu", "gelu", "silu", "mish",
    "softplus", "hardtanh", "hardsigmoid", "hardswish", "sigmoid", "tanh", "softmax",
    "log_softmax", "softmin", "logsigmoid", "softsign", "tanhshrink", "threshold", "dropout",
    "linear", "bilinear", "embedding", "one_hot", "normalize", "pad", "mse_loss", "l1_loss",
    "smooth_l1_loss", "huber_loss", "cross_entropy", "nll_loss", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "kl_div", "cosine_similarity", "pairwise_distance",
]


def _scalar(value, like):
    return _C.tensor(value, dtype=like.dtype)


def _float_mask(cond, like):
    """A boolean tensor as 0/1 in ``like``'s dtype (a constant: no gradient flows through)."""
    return cond.to(like.dtype)


# ---------------------------------------------------------------------------- activations
def relu(input, inplace=False):
    """max(x, 0)."""
    return input.relu_() if inplace else input.relu()


def relu_(input):
    return input.relu_()


def threshold(input, threshold, value, inplace=False):
    keep = _float_mask(input > threshold, input)
    out = input * keep + (1 - keep) * value
    return input.copy_(out) if inplace else out


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """Clamp to ``[min_val, max_val]`` (gradient 0 outside the range)."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    out = input.maximum(_scalar(min_val, input)).minimum(_scalar(max_val, input))
    if inplace:
        return input.copy_(out)
    return out


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x if x >= 0 else negative_slope * x."""
    out = input.relu() - (-input).relu() * negative_slope
    return input.copy_(out) if inplace else out


def elu(input, alpha=1.0, inplace=False):
    """x if x > 0 else alpha * (exp(x) - 1)."""
    neg = (input.minimum(_scalar(0.0, input)).exp() - 1) * alpha
    out = input.relu() + neg
    return input.copy_(out) if inplace else out


def selu(input, inplace=False):
    alpha = 1.6732632423543772848170429916717
    scale = 1.0507009873554804934193349852946
    out = elu(input, alpha) * scale
    return input.copy_(out) if inplace else out


def celu(input, alpha=1.0, inplace=False):
    out = input.relu() + ((input.minimum(_scalar(0.0, input)) / alpha).exp() - 1) * alpha
    return input.copy_(out) if inplace else out


def gelu(input, approximate="none"):
    """x * Phi(x); ``approximate="tanh"`` uses the tanh approximation."""
    if approximate == "tanh":
        inner = (input + input * input * input * 0.044715) * math.sqrt(2.0 / math.pi)
        return input * 0.5 * (inner.tanh() + 1)
    if approximate != "none":
        raise ValueError(f"approximate argument must be either none or tanh, got {approximate}")
    return input * 0.5 * ((input * (1.0 / math.sqrt(2.0))).erf() + 1)


def silu(input, inplace=False):
    """x * sigmoid(x)."""
    out = input * input.sigmoid()
    return input.copy_(out) if inplace else out


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta * x)) / beta, computed stably (linear above ``threshold``)."""
    z = input * beta if beta != 1 else input
    out = (-z.abs()).exp().log1p() + z.relu()
    lin = _float_mask(z > threshold, input)
    out = out * (1 - lin) + z * lin
    return out / beta if beta != 1 else out


def mish(input, inplace=False):
    """x * tanh(softplus(x))."""
    out = input * softplus(input).tanh()
    return input.copy_(out) if inplace else out


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()


def logsigmoid(input):
    """log(sigmoid(x)) = -softplus(-x), computed stably."""
    return -softplus(-input)


def softsign(input):
    return input / (input.abs() + 1)


def tanhshrink(input):
    return input - input.tanh()


def hardsigmoid(input, inplace=False):
    out = hardtanh(input / 6 + 0.5, 0.0, 1.0)
    return input.copy_(out) if inplace else out


def hardswish(input, inplace=False):
    out = input * hardsigmoid(input)
    return input.copy_(out) if inplace else out


def _get_softmax_dim(name, ndim):
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
        "dim=X as an argument.",
        stacklevel=3,
    )
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum(exp(x)) along ``dim``."""
    if dim is None:
        dim = _get_softmax_dim("softmax", input.ndim)
    if dtype is not None:
        input = input.to(dtype)
    return input.softmax(dim)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("softmin", input.ndim)
    return softmax(-input, dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """x - logsumexp(x) along ``dim`` (stable)."""
    if dim is None:
        dim = _get_softmax_dim("log_softmax", input.ndim)
    if dtype is not None:
        input = input.to(dtype)
    return input.log_softmax(dim)


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero elements with probability ``p`` and scale the rest by ``1/(1-p)`` (training only)."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        out = input * 0.0
    else:
        keep = _float_mask(_C.rand(*input.shape, dtype=input.dtype) >= p, input)
        out = input * keep * (1.0 / (1.0 - p))
    return input.copy_(out) if inplace else out


# ---------------------------------------------------------------------------- layers
def linear(input, weight, bias=None):
    """``input @ weight.T + bias``."""
    out = input.matmul(weight.t())
    if bias is not None:
        out = out + bias
    return out


def bilinear(input1, input2, weight, bias=None):
    """``y_k = x1 @ W_k @ x2 + b_k`` for ``weight`` of shape (out, in1, in2)."""
    # (N, in1) x (out, in1, in2) -> (out, N, in2); then multiply by x2 and sum over in2.
    lead = input1.shape[:-1]
    x1 = input1.reshape(-1, input1.shape[-1])
    x2 = input2.reshape(-1, input2.shape[-1])
    tmp = x1.unsqueeze(0).matmul(weight)  # (out, N, in2)
    out = (tmp * x2.unsqueeze(0)).sum(-1).t()  # (N, out)
    if bias is not None:
        out = out + bias
    return out.reshape(*lead, weight.shape[0])


class _Embedding(Function):
    @staticmethod
    def forward(ctx, weight, indices, padding_idx):
        flat = indices.reshape(-1)
        ctx.save_for_backward(flat)
        ctx.num_weights = weight.shape[0]
        ctx.padding_idx = padding_idx
        out = weight.index_select(0, flat)
        return out.reshape(*indices.shape, weight.shape[1])

    @staticmethod
    def backward(ctx, grad):
        (flat,) = ctx.saved_tensors
        g = grad.reshape(-1, grad.shape[-1])
        if ctx.padding_idx is not None:
            g = g * _float_mask(flat != ctx.padding_idx, g).unsqueeze(1)
        out = _C.zeros(ctx.num_weights, g.shape[1], dtype=g.dtype)
        return out.index_add_(0, flat, g), None, None


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` selected by the integer tensor ``input``; the row at
    ``padding_idx`` receives no gradient."""
    if padding_idx is not None:
        if padding_idx < 0:
            if padding_idx < -weight.shape[0]:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = weight.shape[0] + padding_idx
        elif padding_idx >= weight.shape[0]:
            raise AssertionError("Padding_idx must be within num_embeddings")
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding: scale_grad_by_freq and sparse are not supported")
    if input.dtype not in (_C.int64, _C.int32):
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got {input.type()} instead"
        )
    return _Embedding.apply(weight, input.long(), padding_idx)


def _embedding_renorm_(weight, input, max_norm, norm_type):
    from ferrotorch.autograd.grad_mode import no_grad

    with no_grad():
        idx = input.reshape(-1).unique() if hasattr(input, "unique") else input.reshape(-1)
        rows = weight.index_select(0, idx)
        norms = rows.abs().pow(norm_type).sum(1, keepdim=True).pow(1.0 / norm_type)
        scale = _C.where(norms > max_norm, max_norm / (norms + 1e-7), _scalar(1.0, norms))
        weight.index_copy_(0, idx, rows * scale)


def one_hot(tensor, num_classes=-1):
    """Integer class indices -> int64 one-hot encoding along a new last dimension."""
    if tensor.dtype != _C.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if tensor.numel() == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(tensor.max().item()) + 1
    if tensor.numel() and (int(tensor.min().item()) < 0 or
                           int(tensor.max().item()) >= num_classes):
        raise RuntimeError("Class values must be smaller than num_classes.")
    classes = _C.arange(num_classes)
    return (tensor.unsqueeze(-1) == classes).long()


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``input / max(||input||_p, eps)`` along ``dim``."""
    norm = input.abs().pow(p).sum(dim, keepdim=True).pow(1.0 / p)
    denom = norm.maximum(_scalar(eps, norm))
    res = input / denom
    if out is not None:
        out.copy_(res)
        return out
    return res


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    n1 = (x1 * x1).sum(dim).sqrt()
    n2 = (x2 * x2).sum(dim).sqrt()
    return (x1 * x2).sum(dim) / (n1 * n2).maximum(_scalar(eps, n1))


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    d = (x1 - x2 + eps).abs().pow(p)
    return d.sum(-1, keepdim=keepdim).pow(1.0 / p)


class _ConstantPad(Function):
    @staticmethod
    def forward(ctx, input, pad, value):
        ndim = input.ndim
        shape = list(input.shape)
        src = [slice(None)] * ndim
        dst = [slice(None)] * ndim
        for i in range(len(pad) // 2):
            d = ndim - 1 - i
            lo, hi = pad[2 * i], pad[2 * i + 1]
            new = shape[d] + lo + hi
            if new < 0:
                raise RuntimeError(
                    f"The input size {shape[d]}, plus negative padding {lo} and {hi} resulted "
                    f"in a negative output size, which is invalid. Check dimension {d} of "
                    "your input."
                )
            src[d] = slice(max(-lo, 0), shape[d] - max(-hi, 0))
            dst[d] = slice(max(lo, 0), new - max(hi, 0))
            shape[d] = new
        out = _C.full(tuple(shape), value, dtype=input.dtype)
        out[tuple(dst)] = input[tuple(src)]
        ctx.in_shape = tuple(input.shape)
        ctx.src, ctx.dst = tuple(src), tuple(dst)
        return out

    @staticmethod
    def backward(ctx, grad):
        g = _C.zeros(*ctx.in_shape, dtype=grad.dtype)
        g[ctx.src] = grad[ctx.dst]
        return g, None, None


def pad(input, pad, mode="constant", value=None):
    """Pad the last ``len(pad) // 2`` dimensions; ``pad = (left, right, top, bottom, ...)``
    starts from the last dimension. Only ``mode="constant"`` is implemented (negative
    padding crops)."""
    if len(pad) % 2 != 0:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError("Padding length should be less than or equal to two times the "
                           "input dimension")
    if mode != "constant":
        raise NotImplementedError(f"pad: mode '{mode}' is not implemented (only 'constant')")
    return _ConstantPad.apply(input, tuple(int(p) for p in pad), 0.0 if value is None else value)


# ---------------------------------------------------------------------------- losses
def _reduce(loss, reduction):
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _legacy_reduction(size_average, reduce, reduction):
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _check_same_size(input, target, name):
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}). This will likely lead to incorrect results due to "
            "broadcasting. Please ensure they have the same size.",
            stacklevel=3,
        )


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """mean((input - target)^2)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_same_size(input, target, "mse_loss")
    d = input - target
    loss = d * d
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """mean(|input - target|)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_same_size(input, target, "l1_loss")
    loss = (input - target).abs()
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean",
                   beta=1.0):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_same_size(input, target, "smooth_l1_loss")
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    d = (input - target).abs()
    if beta == 0.0:
        return _reduce(d, reduction)
    quad = _float_mask(d.detach() < beta, d)
    loss = quad * (d * d * (0.5 / beta)) + (1 - quad) * (d - 0.5 * beta)
    return _reduce(loss, reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta)."""
    _check_same_size(input, target, "huber_loss")
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    d = (input - target).abs()
    quad = _float_mask(d.detach() < delta, d)
    loss = quad * (d * d * 0.5) + (1 - quad) * ((d - 0.5 * delta) * delta)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def _class_onehot(target, num_classes, class_dim, ndim, dtype):
    """One-hot of ``target`` laid out along ``class_dim`` of an ``ndim``-d input."""
    shape = [1] * ndim
    shape[class_dim] = num_classes
    classes = _C.arange(num_classes).reshape(shape)
    return (target.unsqueeze(class_dim) == classes).to(dtype)


def _weight_along(weight, class_dim, ndim):
    shape = [1] * ndim
    shape[class_dim] = weight.shape[0]
    return weight.reshape(shape)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """Negative log likelihood: ``-input[n, target[n]] * weight[target[n]]``; ``mean``
    divides by the total weight of the non-ignored targets."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if input.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.ndim})")
    class_dim = 0 if input.ndim == 1 else 1
    if input.ndim >= 2 and target.shape[0] != input.shape[0]:
        raise ValueError(
            f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
            f"({target.shape[0]})."
        )
    if target.is_floating_point():
        raise RuntimeError("expected scalar type Long but found " + str(target.dtype))
    num_classes = input.shape[class_dim]
    valid = target != ignore_index
    if target.numel():
        t_valid = _C.where(valid, target, _C.tensor(0, dtype=target.dtype))
        bad = (t_valid < 0).logical_or(t_valid >= num_classes)
        if bool(bad.any().item()):
            raise IndexError(f"Target {int(target.max().item())} is out of bounds.")
    onehot = _class_onehot(target, num_classes, class_dim, input.ndim, input.dtype)
    w = onehot * _float_mask(valid, input).unsqueeze(class_dim)
    if weight is not None:
        w = w * _weight_along(weight.to(input.dtype), class_dim, input.ndim)
    loss = -(input * w).sum(class_dim)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.sum() / w.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """Cross entropy between ``log_softmax(input)`` over the class dimension (1, or 0 for
    unbatched input) and ``target``: class indices (with ``ignore_index``) or class
    probabilities of the same shape as ``input``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = 0 if input.ndim == 1 else 1
    num_classes = input.shape[class_dim]
    logp = log_softmax(input, class_dim)
    if target.is_floating_point():
        # Class probabilities.
        if tuple(target.shape) != tuple(input.shape):
            raise RuntimeError(
                f"Expected target size {list(input.shape)}, got {list(target.shape)}"
            )
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / num_classes
        prod = logp * target
        if weight is not None:
            prod = prod * _weight_along(weight.to(input.dtype), class_dim, input.ndim)
        loss = -prod.sum(class_dim)
        if reduction == "mean":
            n = input.numel() // num_classes if num_classes else 0
            return loss.sum() / n
        return _reduce(loss, reduction)

    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing == 0.0:
        return nll
    valid = _float_mask(target != ignore_index, input)
    lw = logp
    if weight is not None:
        lw = logp * _weight_along(weight.to(input.dtype), class_dim, input.ndim)
    smooth = -lw.sum(class_dim) * valid
    if reduction == "none":
        ret = smooth
    elif reduction == "sum":
        ret = smooth.sum()
    else:
        if weight is not None:
            onehot = _class_onehot(target, num_classes, class_dim, input.ndim, input.dtype)
            wsum = (onehot * _weight_along(weight.to(input.dtype), class_dim, input.ndim))
            denom = (wsum.sum(class_dim) * valid).sum()
        else:
            denom = valid.sum()
        ret = smooth.sum() / denom
    return nll * (1 - label_smoothing) + ret * (label_smoothing / num_classes)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """-w (y log x + (1 - y) log(1 - x)), with each log clamped to >= -100 as in PyTorch."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}) is deprecated. Please ensure they have the same size."
        )
    if input.numel():
        lo, hi = float(input.detach().min().item()), float(input.detach().max().item())
        if lo < 0 or hi > 1:
            raise RuntimeError("all elements of input should be between 0 and 1")
    floor = _scalar(-100.0, input)
    log_x = input.log().maximum(floor)
    log_1mx = (-input).log1p().maximum(floor)
    loss = -(target * log_x + (1 - target) * log_1mx)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None):
    """BCE on ``sigmoid(input)`` computed stably:
    ``(1 - y) x + (1 + (pos_weight - 1) y) (log(1 + exp(-|x|)) + max(-x, 0))``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"Target size ({target.shape}) must be the same as input size ({input.shape})"
        )
    log_sig_neg = (-input.abs()).exp().log1p() + (-input).relu()  # = -log(sigmoid(x))
    if pos_weight is not None:
        log_weight = (pos_weight - 1) * target + 1
        loss = (1 - target) * input + log_weight * log_sig_neg
    else:
        loss = (1 - target) * input + log_sig_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Pointwise KL divergence ``target * (log(target) - input)`` with ``input`` given as
    log-probabilities (``0 log 0 = 0``); ``reduction="batchmean"`` divides the sum by the
    batch size."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        safe = target + _float_mask(target <= 0, target)  # log(1) = 0 where target == 0
        loss = target * safe.log() - target * input
    if reduction == "batchmean":
        if input.ndim == 0:
            return loss.sum()
        return loss.sum() / input.shape[0]
    if reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support "
            "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
            "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
            "major release.",
            stacklevel=2,
        )
    return _reduce(loss, reduction)


# ---------------------------------------------------------------------------- convolutions
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-d convolution over ``(N, C_in, L)`` (or unbatched ``(C_in, L)``) with ``weight`` of
    shape ``(C_out, C_in / groups, K)``; ``padding`` may be an int, a 1-tuple, ``'valid'`` or
    ``'same'`` (stride 1 only)."""
    return _C.conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-d convolution over ``(N, C_in, H, W)`` (or unbatched ``(C_in, H, W)``) with
    ``weight`` of shape ``(C_out, C_in / groups, kH, kW)``; ``padding`` may be an int, a pair,
    ``'valid'`` or ``'same'`` (stride 1 only).

    >>> import ferrotorch as torch
    >>> import ferrotorch.nn.functional as F
    >>> F.conv2d(torch.ones(1, 1, 3, 3), torch.ones(1, 1, 2, 2)).tolist()
    [[[[4.0, 4.0], [4.0, 4.0]]]]
    """
    return _C.conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """1-d transposed convolution ("deconvolution") with ``weight`` of shape
    ``(C_in, C_out / groups, K)``: the gradient of :func:`conv1d` w.r.t. its input."""
    return _C.conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups,
                               dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """2-d transposed convolution ("deconvolution") with ``weight`` of shape
    ``(C_in, C_out / groups, kH, kW)``: the gradient of :func:`conv2d` w.r.t. its input."""
    return _C.conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups,
                               dilation)


def _conv_pair(x, name):
    if isinstance(x, (list, tuple)):
        if len(x) == 1:
            return (int(x[0]), int(x[0]))
        if len(x) != 2:
            raise RuntimeError(f"{name} must be an int or a pair of ints, got {tuple(x)}")
        return (int(x[0]), int(x[1]))
    return (int(x), int(x))


def _patch_identity(channels, kernel_size, dtype):
    """Weight ``(C*kh*kw, 1, kh, kw)`` picking each kernel position of each channel: a grouped
    convolution with it is im2col (and the transposed one is col2im)."""
    kh, kw = kernel_size
    kk = kh * kw
    eye = _C.eye(kk, dtype=dtype).reshape(kk, 1, kh, kw)
    return eye.repeat(channels, 1, 1, 1) if channels != 1 else eye


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Extract sliding local blocks (im2col): ``(N, C, H, W)`` -> ``(N, C*kh*kw, L)`` (or
    unbatched ``(C, H, W)`` -> ``(C*kh*kw, L)``); differentiable."""
    if input.ndim not in (3, 4):
        raise NotImplementedError(
            f"Input Error: Only 3D or 4D input Tensors are supported (got {input.ndim}D)")
    k = _conv_pair(kernel_size, "kernel_size")
    channels = input.shape[-3]
    weight = _patch_identity(channels, k, input.dtype)
    out = _C.conv2d(input, weight, None, _conv_pair(stride, "stride"),
                    _conv_pair(padding, "padding"), _conv_pair(dilation, "dilation"), channels)
    return out.flatten(-2)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Combine sliding local blocks into a tensor (col2im, summing overlaps): ``(N, C*kh*kw,
    L)`` -> ``(N, C, H, W)`` (or unbatched); the adjoint of :func:`unfold`."""
    if input.ndim not in (2, 3):
        raise NotImplementedError(
            f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported "
            f"(got {input.ndim}D)")
    osz = _conv_pair(output_size, "output_size")
    k = _conv_pair(kernel_size, "kernel_size")
    d = _conv_pair(dilation, "dilation")
    p = _conv_pair(padding, "padding")
    s = _conv_pair(stride, "stride")
    kk = k[0] * k[1]
    ck = input.shape[-2]
    if ck % kk != 0:
        raise RuntimeError(
            f"Expected size of input's dimension 1 to be divisible by the product of "
            f"kernel_size, but got input.size(1)={ck} and kernel_size={k}")
    blocks = [(osz[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2)]
    if blocks[0] < 1 or blocks[1] < 1 or blocks[0] * blocks[1] != input.shape[-1]:
        raise RuntimeError(
            f"Given output_size={osz}, kernel_size={k}, dilation={d}, padding={p}, "
            f"stride={s}, expected size of input's dimension 2 to match the calculated number "
            f"of sliding blocks {blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, but got "
            f"input.size(2)={input.shape[-1]}.")
    channels = ck // kk
    cols = input.reshape(*input.shape[:-1], blocks[0], blocks[1])
    weight = _patch_identity(channels, k, input.dtype)
    out_pad = [osz[i] - ((blocks[i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + 1)
               for i in range(2)]
    return _C.conv_transpose2d(cols, weight, None, s, p, tuple(out_pad), channels, d)


__all__ += ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "unfold", "fold"]
