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
from ferrotorch._api_extra import _dtype_name as _aten_type_name
from ferrotorch import special as _special
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
    """A 0-d constant in ``like``'s dtype, on ``like``'s device."""
    return _C.tensor(value, dtype=like.dtype, device=like.device)


def _float_mask(cond, like):
    """A boolean tensor as 0/1 in ``like``'s dtype (a constant: no gradient flows through)."""
    return cond.to(like.dtype)


def _inplace_src(input, inplace):
    """What an ``inplace=True`` op computes from before its ``input.copy_(out)``: a clone
    when autograd records, so the copy does not overwrite a tensor the new graph saved (the
    backward would fail its version check); ``input`` itself otherwise."""
    if inplace and input.requires_grad and _C.is_grad_enabled():
        return input.clone()
    return input


# ---------------------------------------------------------------------------- activations
def relu(input, inplace=False):
    """max(x, 0)."""
    return input.relu_() if inplace else input.relu()


def relu_(input):
    return input.relu_()


def threshold(input, threshold, value, inplace=False):
    """``value`` where ``x <= threshold``, else ``x`` (NaN stays NaN, as in PyTorch)."""
    # Both numbers must fit the input's dtype (PyTorch's overflow check; no wrapping); the
    # value is cast to it, so integer input stays integer.
    _C.full((), threshold, dtype=input.dtype)
    fill = _C.full((), value, dtype=input.dtype, device=input.device)
    x = _inplace_src(input, inplace)
    out = _C.where(x <= threshold, fill, x)
    return input.copy_(out) if inplace else out


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """Clamp to ``[min_val, max_val]`` (gradient 0 outside the range)."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    x = _inplace_src(input, inplace)
    if not x.dtype.is_floating_point:
        # Integer input keeps its dtype, the bounds cast to it (PyTorch).
        min_val, max_val = int(min_val), int(max_val)
    out = x.clamp(min_val, max_val)
    if x.requires_grad and _C.is_grad_enabled():
        # PyTorch's gradient mask is strict (min_val < x < max_val): zero at the bounds,
        # where clamp would pass it and maximum/minimum would split it.
        out = _C.where((x > min_val) & (x < max_val), x, out.detach())
    if inplace:
        return input.copy_(out)
    return out


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x if x > 0 else negative_slope * x (one fused op; the gradient at 0 is the slope)."""
    out = _C.leaky_relu(_inplace_src(input, inplace), negative_slope)
    return input.copy_(out) if inplace else out


def prelu(input, weight):
    """x if x > 0 else weight * x, with ``weight`` (one value, or one per channel, dim 1)
    learnable. At 0 the input's gradient is ``weight``, as PyTorch."""
    if weight.numel() != 1:
        if input.ndim < 2 or input.shape[1] != weight.numel():
            raise RuntimeError(
                f"Mismatch of parameter numbers and input channel size. Found parameter "
                f"numbers = {weight.numel()} and channel size = "
                f"{input.shape[1] if input.ndim >= 2 else 1}.")
        weight = weight.reshape(-1, *([1] * (input.ndim - 2)))
    return _C.where(input > 0, input, input * weight)


def glu(input, dim=-1):
    """``a * sigmoid(b)`` where ``a``, ``b`` are the two halves of ``input`` along ``dim``."""
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    if input.shape[dim] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim % input.ndim} "
                           f"is size {input.shape[dim]}")
    a, b = input.chunk(2, dim)
    return a * b.sigmoid()


def elu(input, alpha=1.0, inplace=False):
    """x if x > 0 else alpha * (exp(x) - 1) (one fused op)."""
    out = _C.elu(_inplace_src(input, inplace), alpha)
    return input.copy_(out) if inplace else out


def selu(input, inplace=False):
    alpha = 1.6732632423543772848170429916717
    scale = 1.0507009873554804934193349852946
    out = _C.elu(_inplace_src(input, inplace), alpha, scale)
    return input.copy_(out) if inplace else out


def celu(input, alpha=1.0, inplace=False):
    out = _C.elu(_inplace_src(input, inplace), alpha, 1.0, 1.0 / alpha, celu=True)
    return input.copy_(out) if inplace else out


def gelu(input, approximate="none"):
    """x * Phi(x); ``approximate="tanh"`` uses the tanh approximation (one fused kernel)."""
    return _C.gelu(input, approximate)


def silu(input, inplace=False):
    """x * sigmoid(x), one fused kernel."""
    return input.silu_() if inplace else input.silu()


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta * x)) / beta, linear where ``beta * x > threshold`` (one fused op)."""
    return _C.softplus(input, beta, threshold)


def mish(input, inplace=False):
    """x * tanh(softplus(x))."""
    x = _inplace_src(input, inplace)
    out = x * softplus(x).tanh()
    return input.copy_(out) if inplace else out


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()


def logsigmoid(input):
    """log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)) (one fused op)."""
    return _C.log_sigmoid(input)


def softsign(input):
    return input / (input.abs() + 1)


def tanhshrink(input):
    return input - input.tanh()


def hardsigmoid(input, inplace=False):
    out = _C.hardsigmoid(_inplace_src(input, inplace))
    return input.copy_(out) if inplace else out


def hardswish(input, inplace=False):
    out = _C.hardswish(_inplace_src(input, inplace))
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
        u = _C.rand(*input.shape, dtype=input.dtype, device=input.device)
        keep = _float_mask(u >= p, input)
        out = _inplace_src(input, inplace) * keep * (1.0 / (1.0 - p))
    return input.copy_(out) if inplace else out


# ---------------------------------------------------------------------------- layers
def linear(input, weight, bias=None):
    """``input @ weight.T + bias`` (one fused product and autograd node for float inputs)."""
    return _C._linear(input, weight, bias)


def bilinear(input1, input2, weight, bias=None):
    """``y_k = x1 @ W_k @ x2 + b_k`` for ``weight`` of shape (out, in1, in2)."""
    # ATen's argument checks, in its order.
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and "
                           f"{input2.ndim}")
    for i in range(input1.ndim - 1):
        if input1.shape[i] != input2.shape[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: "
                               f"got {input1.shape[i]} and {input2.shape[i]}")
    for k, x in ((1, input1), (2, input2)):
        if x.shape[-1] != weight.shape[k]:
            raise RuntimeError(f"bilinear(): input{k} size does not match weight size: got "
                               f"{x.shape[-1]} but expected {weight.shape[k]}")
    if bias is not None and bias.shape[0] != weight.shape[0]:
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got "
                           f"{bias.shape[0]} but expected {weight.shape[0]}")
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
    def forward(ctx, weight, indices, padding_idx, scale_grad_by_freq=False):
        flat = indices.reshape(-1)
        ctx.save_for_backward(flat)
        ctx.num_weights = weight.shape[0]
        ctx.padding_idx = padding_idx
        ctx.scale_grad_by_freq = scale_grad_by_freq
        out = weight.index_select(0, flat)
        return out.reshape(*indices.shape, weight.shape[1])

    @staticmethod
    def backward(ctx, grad):
        (flat,) = ctx.saved_tensors
        g = grad.reshape(-1, grad.shape[-1])
        if ctx.scale_grad_by_freq:
            # Each row's gradient divided by how often its index occurs in the mini-batch.
            counts = _C.zeros(ctx.num_weights, dtype=g.dtype, device=g.device)
            counts = counts.index_add_(0, flat, _C.ones(flat.shape[0], dtype=g.dtype,
                                                        device=g.device))
            g = g / counts.index_select(0, flat).unsqueeze(1)
        if g.is_cuda:
            pad = -1 if ctx.padding_idx is None else ctx.padding_idx
            return _C._embedding_dense_backward(g, flat, ctx.num_weights, pad), None, None, None
        if ctx.padding_idx is not None:
            g = g * _float_mask(flat != ctx.padding_idx, g).unsqueeze(1)
        out = _C.zeros(ctx.num_weights, g.shape[1], dtype=g.dtype, device=g.device)
        return out.index_add_(0, flat, g), None, None, None


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
    if weight.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    if sparse:
        raise NotImplementedError("embedding: sparse gradients are not supported")
    if input.dtype not in (_C.int64, _C.int32):
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got {input.type()} instead (while checking arguments for "
            "embedding)"
        )
    return _Embedding.apply(weight, input.long(), padding_idx, bool(scale_grad_by_freq))


def _embedding_renorm_(weight, input, max_norm, norm_type):
    from ferrotorch.autograd.grad_mode import no_grad

    with no_grad():
        idx = input.reshape(-1).unique().to(weight.device)
        rows = weight.index_select(0, idx)
        norms = rows.abs().pow(norm_type).sum(1, keepdim=True).pow(1.0 / norm_type)
        scale = _C.where(norms > max_norm, max_norm / (norms + 1e-7), _scalar(1.0, norms))
        weight[idx] = rows * scale  # (index_put: index_copy_ has a CPU kernel only)


def one_hot(tensor, num_classes=-1):
    """Integer class indices -> int64 one-hot encoding along a new last dimension."""
    if tensor.dtype != _C.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if tensor.numel() == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(tensor.max().item()) + 1
    if tensor.numel():
        if int(tensor.min().item()) < 0:
            raise RuntimeError("Class values must be non-negative.")
        if int(tensor.max().item()) >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    classes = _C.arange(num_classes, device=tensor.device)
    return (tensor.unsqueeze(-1) == classes).long()


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``input / max(||input||_p, eps)`` along ``dim``."""
    # As PyTorch: vector_norm (zero gradient at a zero vector, where pow(1/p) would give
    # 0 * inf = nan) and clamp_min (which passes the gradient at the bound).
    from ferrotorch import linalg

    norm = linalg.vector_norm(input, p, dim, keepdim=True)
    res = input / norm.clamp_min(eps)
    if out is not None:
        out.copy_(res)
        return out
    return res


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """``sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps))`` along ``dim``: each norm is
    clamped on its own, and (as PyTorch, which clamps it in place under no_grad) the
    gradient flows through the norm as if unclamped, zero at a zero vector."""
    from ferrotorch import broadcast_tensors, linalg, result_type

    common = result_type(x1, x2)
    if not common.is_floating_point:
        raise RuntimeError("expected common dtype to be floating point, yet common dtype is "
                           f"{_aten_type_name(common)}")
    # Integral / bool operands are accepted and take the common floating dtype.
    x1, x2 = x1.to(common), x2.to(common)
    if tuple(x1.shape) != tuple(x2.shape):
        x1, x2 = broadcast_tensors(x1, x2)

    def clamped_norm(x):
        n = linalg.vector_norm(x, 2, dim, keepdim=True)
        return n + (n.clamp_min(eps) - n).detach()
    return ((x1 / clamped_norm(x1)) * (x2 / clamped_norm(x2))).sum(dim)


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean"):
    """``max(0, -y (x1 - x2) + margin)``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if input1.ndim != input2.ndim or input1.ndim != target.ndim:
        raise RuntimeError(
            "margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} ")
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0.0), reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean"):
    """``1 - cos(x1, x2)`` where ``y == 1``, ``max(0, cos(x1, x2) - margin)`` where
    ``y == -1`` (cosine along the last dim, with PyTorch's 1e-12 guard)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if target.ndim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if (input1.ndim, input2.ndim) != (target.ndim + 1,) * 2:
        raise RuntimeError(
            f"{target.ndim}D target tensor expects {target.ndim + 1}D input tensors, but found "
            f"inputs with sizes {list(input1.shape)} and {list(input2.shape)}.")
    eps = 1e-12
    prod = (input1 * input2).sum(-1)
    mag = ((input1 * input1).sum(-1) + eps) * ((input2 * input2).sum(-1) + eps)
    cos = prod / mag.sqrt()
    zeros = cos * 0
    pos = _C.where(target == 1, 1 - cos, zeros)
    neg = _C.where(target == -1, (cos - margin).clamp_min(0.0), zeros)
    return _reduce(pos + neg, reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with ``d`` the pairwise p-norm distance;
    ``swap`` uses ``min(d(a, n), d(p, n))`` for the negative distance."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number "
            f"of dimensions, but got: anchor {anchor.ndim}D, positive {positive.ndim}D, and "
            f"negative {negative.ndim}D inputs")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = d_neg.minimum(pairwise_distance(positive, negative, p, eps))
    return _reduce((margin + d_pos - d_neg).clamp_min(0.0), reduction)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """``||x1 - x2 + eps||_p`` over the last dim of the broadcast shape (ATen's formula, so
    ``p`` may be 0, inf, -inf or negative as in ``torch.norm``)."""
    from ferrotorch import linalg

    return linalg.vector_norm(x1 - x2 + eps, p, -1, keepdim=keepdim)


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
        out = _C.full(tuple(shape), value, dtype=input.dtype, device=input.device)
        out[tuple(dst)] = input[tuple(src)]
        ctx.in_shape = tuple(input.shape)
        ctx.src, ctx.dst = tuple(src), tuple(dst)
        return out

    @staticmethod
    def backward(ctx, grad):
        g = _C.zeros(*ctx.in_shape, dtype=grad.dtype, device=grad.device)
        g[ctx.src] = grad[ctx.dst]
        return g, None, None


def pad(input, pad, mode="constant", value=None):
    """Pad the last ``len(pad) // 2`` dimensions; ``pad = (left, right, top, bottom, ...)``
    starts from the last dimension. Modes: ``"constant"`` (negative padding crops),
    ``"reflect"``, ``"replicate"`` and ``"circular"`` (the last 1-3 dims of a batched or
    unbatched input, as PyTorch)."""
    pad = _int_pad_list(pad)
    if len(pad) % 2 != 0:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError("Padding length should be less than or equal to two times the "
                           f"input dimension but got padding length {len(pad)} and input of "
                           f"dimension {input.ndim}")
    if mode == "constant":
        return _ConstantPad.apply(input, pad, 0.0 if value is None else value)
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    return _index_pad(input, pad, mode)


def _int_pad_list(pad):
    """``pad`` as a tuple of ints; other entries (floats, bools) are PyTorch's TypeError."""
    out = []
    for i, p in enumerate(pad):
        if isinstance(p, bool) or not hasattr(p, "__index__"):
            raise TypeError("pad(): argument 'pad' (position 2) must be tuple of ints, but "
                            f"found element of type {type(p).__name__} at pos {i}")
        out.append(p.__index__())
    return tuple(out)


def _index_pad(input, pad, mode):
    """Reflect / replicate / circular padding as one ``index_select`` per padded dim (so
    autograd comes from ``index_select``'s backward)."""
    n_dims = len(pad) // 2
    if input.dim() not in (n_dims + 1, n_dims + 2):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {input.dim()}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    if mode != "circular":
        # ATen's check_valid_input: only a batch dim may be empty.
        first = 1 if input.dim() == n_dims + 2 else 0
        if any(d == 0 for d in input.shape[first:]):
            raise RuntimeError(
                f"Expected {n_dims + 1}D or {n_dims + 2}D (batch mode) tensor with possibly 0 "
                "batch size and other non-zero dimensions for input, but got: "
                f"{list(input.shape)}")
    out = input
    for k in range(n_dims):
        dim = input.dim() - 1 - k
        left, right = pad[2 * k], pad[2 * k + 1]
        n = input.shape[dim]
        if mode == "reflect" and (left >= n or right >= n):
            raise RuntimeError(
                f"Argument #4: Padding size should be less than the corresponding input "
                f"dimension, but got: padding ({left}, {right}) at dimension {dim} of input "
                f"{list(input.shape)}")
        # The source index of each output position (computed on the CPU: a few ints).
        if mode == "circular":
            if left > n or right > n:
                raise RuntimeError("Padding value causes wrapping around more than once.")
            # ATen crops the negative sides first, then wraps around what is left.
            lo, hi = max(-left, 0), max(-right, 0)
            m = n - lo - hi
            if m + max(left, 0) + max(right, 0) < 0 or (m <= 0 and (left > 0 or right > 0)):
                raise RuntimeError("Negative padding value is resulting in an empty dimension")
            j = _C.arange(-max(left, 0), m + max(right, 0))
            j = j.remainder(m) + lo if m > 0 else j
        else:
            j = _C.arange(-left, n + right)
            if mode == "reflect":
                j = j.abs()
                j = (n - 1) - ((n - 1) - j).abs()
            else:
                j = j.clamp(0, n - 1)
        out = out.index_select(dim, j.to(input.device))
    return out


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


def _weighted_reduce(loss, weight, input, reduction, by_weight):
    """PyTorch's reduction of an elementwise ``loss * weight``: ``weight`` must have the
    input's size; ``mean`` divides by ``sum(weight)`` (``by_weight``, mse / l1) or by the
    element count (huber)."""
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.sum() / weight.sum() if by_weight else loss.mean()
    raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', "
                     "'sum'.")


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """mean((input - target)^2); with ``weight``, ``sum(w d^2) / sum(w)``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_same_size(input, target, "mse_loss")
    d = input - target
    loss = d * d
    if weight is not None:
        return _weighted_reduce(loss, weight, input, reduction, True)
    return _reduce(loss, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """mean(|input - target|); with ``weight``, ``sum(w |d|) / sum(w)``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_same_size(input, target, "l1_loss")
    loss = (input - target).abs()
    if weight is not None:
        return _weighted_reduce(loss, weight, input, reduction, True)
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
        return _weighted_reduce(loss, weight, input, reduction, False)
    return _reduce(loss, reduction)


def _class_onehot(target, num_classes, class_dim, ndim, dtype):
    """One-hot of ``target`` laid out along ``class_dim`` of an ``ndim``-d input."""
    shape = [1] * ndim
    shape[class_dim] = num_classes
    classes = _C.arange(num_classes, device=target.device).reshape(shape)
    return (target.unsqueeze(class_dim) == classes).to(dtype)


def _weight_along(weight, class_dim, ndim):
    shape = [1] * ndim
    shape[class_dim] = weight.shape[0]
    return weight.reshape(shape)


def _check_nll_args(input, target, weight):
    """ATen's argument checks for class-index targets (``nll_loss_nd``, ``nll_loss2d``),
    in its order and with its messages."""
    if input.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.ndim})")
    if input.ndim != 1 and (target.ndim == 0 or input.shape[0] != target.shape[0]):
        raise ValueError(
            f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
            f"({target.shape[0] if target.ndim else 0})."
        )
    if target.dtype not in (_C.int64, _C.uint8):
        raise RuntimeError("expected target dtype to be Long or Byte, but got "
                           f"{_aten_type_name(target.dtype)}")
    num_classes = input.shape[0 if input.ndim == 1 else 1]
    if input.ndim <= 2:
        if target.ndim > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if weight is not None and (weight.ndim != 1 or weight.numel() != num_classes):
            raise RuntimeError(
                f"weight tensor should be defined either for all {num_classes} classes "
                f"or no classes but got weight tensor of shape: {list(weight.shape)}")
    else:
        want = [input.shape[0]] + list(input.shape[2:])
        if list(target.shape) != want:
            raise RuntimeError(f"Expected target size {want}, got {list(target.shape)}")
        if weight is not None and weight.numel() != num_classes:
            raise RuntimeError("weight tensor should be defined either for all or no classes")
        if target.dtype != _C.int64:  # the spatial kernel takes int64 only
            raise RuntimeError("expected scalar type Long but found "
                               f"{_aten_type_name(target.dtype)}")
    if weight is not None and weight.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {_aten_type_name(input.dtype)} but found "
                           f"{_aten_type_name(weight.dtype)}")


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """Negative log likelihood: ``-input[n, target[n]] * weight[target[n]]``; ``mean``
    divides by the total weight of the non-ignored targets."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_nll_args(input, target, weight)
    class_dim = 0 if input.ndim == 1 else 1
    num_classes = input.shape[class_dim]
    valid = target != ignore_index
    if target.numel():
        t_valid = _C.where(valid, target, _C.tensor(0, dtype=target.dtype, device=target.device))
        bad = (t_valid < 0).logical_or(t_valid >= num_classes)
        if int(bad.sum().item()) > 0:
            raise IndexError(f"Target {int(target.max().item())} is out of bounds.")
    onehot = _class_onehot(target, num_classes, class_dim, input.ndim, input.dtype)
    w = onehot * _float_mask(valid, input).unsqueeze(class_dim)
    if weight is not None:
        w = w * _weight_along(weight, class_dim, input.ndim)
    loss = -(input * w).sum(class_dim)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.sum() / w.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _fused_cross_entropy_ok(input, target, weight, reduction):
    """The fused kernel covers class-index (int64) targets of the matching shape."""
    if not hasattr(_C, "_cross_entropy") or reduction not in ("none", "mean", "sum"):
        return False
    if not input.is_floating_point() or target.dtype != _C.int64:
        return False
    if weight is not None and (weight.ndim != 1 or not weight.is_floating_point()):
        return False
    if input.ndim == 1:
        return target.ndim == 0
    if input.ndim < 2:
        return False
    want = (input.shape[0],) + tuple(input.shape[2:])
    return tuple(target.shape) == want


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """Cross entropy between ``log_softmax(input)`` over the class dimension (1, or 0 for
    unbatched input) and ``target``: class indices (with ``ignore_index``) or class
    probabilities of the same shape as ``input``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    # ATen checks only the upper bound; a negative value means no smoothing.
    if label_smoothing > 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    label_smoothing = max(label_smoothing, 0.0)
    class_dim = 0 if input.ndim == 1 else 1
    num_classes = input.shape[class_dim] if input.ndim else 1
    if tuple(target.shape) == tuple(input.shape):
        # Same shape: class probabilities (ATen decides by shape, not by dtype).
        if not target.is_floating_point():
            raise RuntimeError("Expected floating point type for target with class "
                               f"probabilities, got {_aten_type_name(target.dtype)}")
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        if weight is not None and (weight.ndim != 1 or weight.numel() != num_classes):
            raise RuntimeError(
                f"cross_entropy: weight tensor should be defined either for all {num_classes} "
                f"classes or no classes but got weight tensor of shape: {list(weight.shape)}")
        logp = log_softmax(input, class_dim)
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / num_classes
        prod = logp * target
        if weight is not None:
            prod = prod * _weight_along(weight, class_dim, input.ndim)
        loss = -prod.sum(class_dim)
        if reduction == "mean":
            n = input.numel() // num_classes if num_classes else 0
            return loss.sum() / n
        return _reduce(loss, reduction)

    _check_nll_args(input, target, weight)
    if _fused_cross_entropy_ok(input, target, weight, reduction):
        return _C._cross_entropy(input, target, weight, reduction, int(ignore_index),
                                 float(label_smoothing))
    logp = log_softmax(input, class_dim)
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
    if target.dtype != input.dtype:
        raise RuntimeError(f"Found dtype {_aten_type_name(target.dtype)} but expected "
                           f"{_aten_type_name(input.dtype)}")
    if input.numel():
        lo, hi = float(input.detach().min().item()), float(input.detach().max().item())
        if lo < 0 or hi > 1:
            raise RuntimeError("all elements of input should be between 0 and 1")
    return _reduce(_BinaryCrossEntropy.apply(input, target, weight), reduction)


class _BinaryCrossEntropy(Function):
    """Elementwise ``-w (y log x + (1 - y) log(1 - x))`` with PyTorch's backward,
    ``w (x - y) / max(x (1 - x), 1e-12)``: finite where ``x`` is exactly 0 or 1 (a sigmoid
    that saturated), where differentiating the clamped logs would give 0 * inf = nan."""

    @staticmethod
    def forward(ctx, input, target, weight):
        floor = _scalar(-100.0, input)
        log_x = input.log().maximum(floor)
        log_1mx = (-input).log1p().maximum(floor)
        ctx.save_for_backward(input, target, weight)
        loss = -(target * log_x + (1 - target) * log_1mx)
        return loss if weight is None else loss * weight

    @staticmethod
    def backward(ctx, grad):
        input, target, weight = ctx.saved_tensors
        if weight is not None:
            grad = grad * weight
        grad_input = grad_target = None
        if ctx.needs_input_grad[0]:
            denom = ((1 - input) * input).clamp_min(1e-12)
            grad_input = grad * (input - target) / denom
        if ctx.needs_input_grad[1]:
            floor = _scalar(-100.0, input)
            grad_target = grad * ((-input).log1p().maximum(floor) - input.log().maximum(floor))
        return grad_input, grad_target, None


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None):
    """BCE on ``sigmoid(input)`` computed stably:
    ``(1 - y) x - (1 + (pos_weight - 1) y) log_sigmoid(x)`` (the fused log_sigmoid keeps the
    gradient exact at 0, where it is ``sigmoid(0) - y``)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"Target size ({target.shape}) must be the same as input size ({input.shape})"
        )
    # PyTorch's formula fails on integral targets (bool: "-" of bools; ints: an in-place
    # float result into the integer target's dtype).
    if target.dtype == _C.bool:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if not target.is_floating_point() and input.is_floating_point():
        raise RuntimeError(f"result type {_aten_type_name(input.dtype)} can't be cast to the "
                           f"desired output type {_aten_type_name(target.dtype)}")
    log_sig_neg = -_C.log_sigmoid(input)
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
    legacy = size_average is not None or reduce is not None
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        # xlogy: 0 where target == 0, NaN where it is negative (ATen's formula).
        loss = _special.xlogy(target, target) - target * input
    if reduction == "batchmean":
        if input.ndim == 0:
            return loss.sum()
        return loss.sum() / input.shape[0]
    if reduction == "mean" and not legacy:
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support "
            "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
            "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
            "major release.",
            stacklevel=2,
        )
    return _reduce(loss, reduction)


# ---------------------------------------------------------------------------- attention
def _none_or_dtype(t):
    return None if t is None else t.dtype


def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """Bool masks (True = masked out) become float masks with ``-inf``; float masks pass."""
    if mask is None:
        return None
    if mask.dtype == _C.bool:
        zeros = _C.zeros(*mask.shape, dtype=target_type, device=mask.device)
        return zeros.masked_fill(mask, float("-inf"))
    if not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(
            f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same type "
            "for both instead.",
            stacklevel=3,
        )
    return mask


# C++ type names (``c10::typeMetaToScalarType`` names) that ATen's SDPA messages print.
_CPP_TYPE_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
                   "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int",
                   "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
                   "bool": "bool"}


def _cpp_type_name(dtype):
    name = str(dtype).rsplit(".", 1)[-1]
    return _CPP_TYPE_NAMES.get(name, name)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """``softmax(q @ k^T * scale + mask) @ v`` over the last two dimensions.

    ``attn_mask``: a bool mask (True = take part in attention) or a float mask added to the
    scores, broadcastable to ``(..., L, S)``; ``is_causal`` applies a lower-triangular mask;
    ``scale`` defaults to ``1 / sqrt(E)``; ``enable_gqa`` repeats the key/value heads (dim -3)
    to match the query heads. Written with tensor ops (the "math" backend)."""
    if query.dtype != key.dtype or query.dtype != value.dtype:
        raise RuntimeError(
            "Expected query, key, and value to have the same dtype, but got query.dtype: "
            f"{_cpp_type_name(query.dtype)} key.dtype: {_cpp_type_name(key.dtype)} and "
            f"value.dtype: {_cpp_type_name(value.dtype)} instead.")
    if (attn_mask is not None and attn_mask.dtype != _C.bool
            and not (attn_mask.is_floating_point() and attn_mask.dtype == query.dtype)):
        raise RuntimeError(
            "Expected attn_mask dtype to be bool or float or to match query dtype, but got "
            f"attn_mask.dtype: {_cpp_type_name(attn_mask.dtype)} and  query.dtype: "
            f"{_cpp_type_name(query.dtype)} instead.")
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError(
            "Expected query, key, and value to all be  at least 2 dimensional, but got "
            f"query.dim: {query.dim()} key.dim: {key.dim()} and value.dim: {value.dim()} "
            "instead.")
    L, S = query.size(-2), key.size(-2)
    if query.size(-1) != key.size(-1):
        raise RuntimeError(
            f"scaled_dot_product_attention: query ({list(query.shape)}) and key "
            f"({list(key.shape)}) must have the same embedding dimension")
    if key.size(-2) != value.size(-2):
        raise RuntimeError(
            f"scaled_dot_product_attention: key ({list(key.shape)}) and value "
            f"({list(value.shape)}) must have the same sequence length")
    scale_factor = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
    if enable_gqa and query.dim() >= 3:
        hq, hk, hv = query.size(-3), key.size(-3), value.size(-3)
        if hq % hk or hq % hv:
            raise RuntimeError(
                "Number of heads in key and value must divide the number of heads in query")
        if hk != hq:
            key = key.repeat_interleave(hq // hk, -3)
        if hv != hq:
            value = value.repeat_interleave(hq // hv, -3)
    scores = (query * scale_factor).matmul(key.transpose(-2, -1))
    neg_inf = _C.tensor(float("-inf"), dtype=scores.dtype, device=scores.device)
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not "
                               "be set when is_causal=True")
        # Lower triangle (key position <= query position), without tril (CPU-only).
        rows = _C.arange(L, device=scores.device).unsqueeze(1)
        causal = rows >= _C.arange(S, device=scores.device)
        scores = _C.where(causal, scores, neg_inf)
    if attn_mask is not None:
        if attn_mask.dtype == _C.bool:
            scores = _C.where(attn_mask, scores, neg_inf)
        else:
            scores = scores + attn_mask
    # PyTorch's _safe_softmax: a row masked out entirely attends to nothing (zeros, not NaN).
    # The dead rows' scores are replaced before the softmax too, so no NaN reaches backward.
    dead = (scores.detach() == float("-inf")).all(-1, keepdim=True)
    zero = _C.zeros((), dtype=scores.dtype, device=scores.device)
    attn = _C.where(dead, zero, _C.where(dead, zero, scores).softmax(-1))
    if dropout_p > 0.0:
        attn = dropout(attn, dropout_p, True)
    return attn.matmul(value)


def _in_projection_packed(q, k, v, w, b=None):
    """q/k/v projections with the packed ``(3E, E)`` weight (one matmul for self-attention)."""
    E = q.size(-1)
    if k is v:
        if q is k:
            proj = linear(q, w, b)
            return tuple(proj.chunk(3, -1))
        w_q, w_kv = w.split([E, 2 * E])
        b_q, b_kv = (None, None) if b is None else b.split([E, 2 * E])
        kv = linear(k, w_kv, b_kv).chunk(2, -1)
        return linear(q, w_q, b_q), kv[0], kv[1]
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    if query.dim() == 3:
        is_batched = True
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError(
                "For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError(
                "For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D "
                f"but found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError(
                "For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                f"found {attn_mask.dim()}-D tensor instead")
    elif query.dim() == 2:
        is_batched = False
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError(
                "For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError(
                "For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D "
                f"but found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError(
                    "For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or "
                    f"3-D but found {attn_mask.dim()}-D tensor instead")
            if attn_mask.dim() == 3:
                expected = (num_heads, query.shape[0], key.shape[0])
                if tuple(attn_mask.shape) != expected:
                    raise AssertionError(
                        f"Expected `attn_mask` shape to be {expected} but got "
                        f"{tuple(attn_mask.shape)}")
    else:
        raise AssertionError(
            f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D "
            "query tensor")
    return is_batched


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                                 dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """PyTorch's functional multi-head attention on sequence-first inputs ``(L, N, E)`` (or
    unbatched ``(L, E)``). Returns ``(attn_output, attn_weights or None)``; bool masks use
    True = NOT allowed to attend."""
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)

    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                       _none_or_dtype(attn_mask), "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError(
            "Need attn_mask if specifying the is_causal hint. You may use the Transformer "
            "module method `generate_square_subsequent_mask` to create this mask.")
    # With an explicit mask, ``is_causal`` is only a hint: the mask is applied as given.
    attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype,
                                check_other=False)
    if embed_dim != embed_dim_to_check:
        raise AssertionError(
            f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(
                f"key's sequence and batch dims {tuple(key.shape[:2])} do not match value's "
                f"{tuple(value.shape[:2])}")
    elif tuple(key.shape) != tuple(value.shape):
        raise AssertionError(
            f"key shape {tuple(key.shape)} does not match value shape {tuple(value.shape)}")

    # Input projections.
    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    else:
        if q_proj_weight is None or k_proj_weight is None or v_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is True but q_proj_weight, "
                                 "k_proj_weight or v_proj_weight is None")
        b_q = b_k = b_v = None
        if in_proj_bias is not None:
            b_q, b_k, b_v = in_proj_bias.chunk(3)
        q = linear(query, q_proj_weight, b_q)
        k = linear(key, k_proj_weight, b_k)
        v = linear(value, v_proj_weight, b_v)

    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(
                    f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                    f"{(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(
                    f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                    f"{(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")

    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key/value.")
        k = _C.cat([k, bias_k.expand(1, bsz, embed_dim)])
        v = _C.cat([v, bias_v.expand(1, bsz, embed_dim)])
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    elif bias_k is not None or bias_v is not None:
        raise AssertionError("bias_k and bias_v must both be given or both be None")

    # (L, N, E) -> (N * H, L, head_dim)
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    if static_k is None:
        k = k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        k = static_k
    if static_v is None:
        v = v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        v = static_v

    if add_zero_attn:
        k = _C.cat([k, _C.zeros(bsz * num_heads, 1, head_dim, dtype=k.dtype, device=k.device)], 1)
        v = _C.cat([v, _C.zeros(bsz * num_heads, 1, head_dim, dtype=v.dtype, device=v.device)], 1)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))

    src_len = k.size(1)
    if key_padding_mask is not None:
        for i, want in enumerate((bsz, src_len)):
            if key_padding_mask.shape[i] != want:
                raise AssertionError(f"Expected key_padded_mask.shape[{i}] to be {want}, but "
                                     f"got {key_padding_mask.shape[i]}")
        kpm = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(bsz, num_heads, 1, src_len)
        kpm = kpm.reshape(bsz * num_heads, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm

    if not training:
        dropout_p = 0.0

    if need_weights:
        scores = (q * math.sqrt(1.0 / head_dim)).matmul(k.transpose(-2, -1))
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = scores.softmax(-1)
        if dropout_p > 0.0:
            weights = dropout(weights, p=dropout_p)
        out = weights.matmul(v)  # (N * H, L, head_dim)
        out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
        weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(1)
        if not is_batched:
            out = out.squeeze(1)
            weights = weights.squeeze(0)
        return out, weights

    if attn_mask is not None:
        if attn_mask.size(0) == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.reshape(bsz, num_heads, -1, src_len)
    q = q.reshape(bsz, num_heads, tgt_len, head_dim)
    k = k.reshape(bsz, num_heads, src_len, head_dim)
    v = v.reshape(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, False)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
    if not is_batched:
        out = out.squeeze(1)
    return out, None


__all__ += ["scaled_dot_product_attention", "multi_head_attention_forward"]



# ---------------------------------------------------------------------------- pooling
def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """1-d max pooling over ``(N, C, L)`` or ``(C, L)``; returns ``(values, indices)``."""
    return _C.max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """1-d max pooling over ``(N, C, L)`` or ``(C, L)`` (``stride`` defaults to the kernel)."""
    if return_indices:
        return _C.max_pool1d_with_indices(input, kernel_size, stride, padding, dilation,
                                          ceil_mode)
    return _C.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """2-d max pooling; returns ``(values, indices)`` with int64 indices flat over ``H*W``."""
    return _C._max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """2-d max pooling over ``(N, C, H, W)`` or ``(C, H, W)``."""
    if return_indices:
        return _C._max_pool2d_with_indices(input, kernel_size, stride, padding, dilation,
                                           ceil_mode)
    return _C.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """1-d average pooling over ``(N, C, L)`` or ``(C, L)``."""
    return _C.avg_pool1d(input, kernel_size, stride, padding, ceil_mode, count_include_pad)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """2-d average pooling over ``(N, C, H, W)`` or ``(C, H, W)``."""
    return _C._avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                          divisor_override)


def _adaptive_size(output_size, input, n, name):
    """``output_size`` as ``n`` ints; ``None`` entries take the input's size (PyTorch's rule,
    which 1-d pooling lacks). A sequence must have exactly ``n`` entries, as in ATen."""
    if n == 1:
        if output_size is None:
            raise TypeError(f"{name}(): argument 'output_size' (position 2) must be tuple of "
                            "ints, not NoneType")
        sizes = list(output_size) if isinstance(output_size, (list, tuple)) else [output_size]
        if len(sizes) != 1:
            raise RuntimeError(f"{name}() argument 'output_size' should contain one int "
                               f"(got {len(sizes)})")
        return sizes
    if not isinstance(output_size, (list, tuple)):
        return [output_size] * n
    if len(output_size) != n:
        if name.startswith("adaptive_max"):
            raise RuntimeError(f"{name}(): internal error: output_size.size() must be {n}")
        raise RuntimeError(f"{name}: output_size must be {n}")
    in_sizes = input.shape[-n:] if input.ndim >= n else [None] * n
    return [in_sizes[i] if s is None else s for i, s in enumerate(output_size)]


def adaptive_avg_pool1d(input, output_size):
    """Average over PyTorch's adaptive bins ``[floor(i*L/out), ceil((i+1)*L/out))``."""
    sizes = _adaptive_size(output_size, input, 1, "adaptive_avg_pool1d")
    return _C.adaptive_avg_pool1d(input, sizes)


def adaptive_avg_pool2d(input, output_size):
    """2-d adaptive average pooling; ``None`` in ``output_size`` keeps that input size."""
    sizes = _adaptive_size(output_size, input, 2, "adaptive_avg_pool2d")
    return _C._adaptive_avg_pool2d(input, sizes)


def _adaptive_bins(in_size, out_size):
    """PyTorch's adaptive bins ``[floor(i*n/out), ceil((i+1)*n/out))`` as an ``(out, k)``
    table of input positions, ``k`` the largest bin; shorter bins repeat their last position
    (a repeat does not change a max, and comes after the original in scan order)."""
    starts = [i * in_size // out_size for i in range(out_size)]
    ends = [-(-(i + 1) * in_size // out_size) for i in range(out_size)]
    k = max(e - b for b, e in zip(starts, ends))
    return [[min(b + j, e - 1) for j in range(k)] for b, e in zip(starts, ends)], k


def _adaptive_max_pool2d_composed(input, output_size):
    """``adaptive_max_pool2d`` of ``(N, C, H, W)`` or ``(C, H, W)`` from ``index_select`` and
    a max over each (padded) bin: for CUDA inputs whose size is not a multiple of the output
    size, which the CUDA pooling kernel does not cover. Returns (values, flat H*W indices)."""
    oh, ow = output_size
    h, w = input.shape[-2], input.shape[-1]
    lead = list(input.shape[:-2])
    rows, kh = _adaptive_bins(h, oh)
    cols, kw = _adaptive_bins(w, ow)
    dev, nd = input.device, input.ndim
    ri = _C.tensor([r for bin_ in rows for r in bin_], dtype=_C.int64, device=dev)
    ci = _C.tensor([c for bin_ in cols for c in bin_], dtype=_C.int64, device=dev)
    x = input.index_select(nd - 2, ri).index_select(nd - 1, ci)  # (..., oh*kh, ow*kw)
    x = x.reshape(*lead, oh, kh, ow, kw).transpose(-3, -2).reshape(*lead, oh, ow, kh * kw)
    values, arg = x.max(-1)
    flat = [[[r * w + c for r in rows[i] for c in cols[j]] for j in range(ow)] for i in range(oh)]
    flat = _C.tensor(flat, dtype=_C.int64, device=dev).expand(*lead, oh, ow, kh * kw)
    return values, flat.gather(-1, arg.unsqueeze(-1)).squeeze(-1)


def _adaptive_max_pool2d(input, sizes):
    """(values, indices): the native kernel, or the composed one for CUDA inputs whose
    spatial size is not a multiple of the output size."""
    if (
        input.is_cuda
        and input.is_floating_point()
        and input.ndim in (3, 4)
        and all(isinstance(v, int) and v > 0 for v in sizes)
        and input.shape[-1] > 0
        and input.shape[-2] > 0
        and (input.shape[-2] % sizes[0] or input.shape[-1] % sizes[1])
    ):
        return _adaptive_max_pool2d_composed(input, sizes)
    return _C._adaptive_max_pool2d(input, sizes)


def _adaptive_max_pool1d(input, sizes):
    if (
        input.is_cuda
        and input.is_floating_point()
        and input.ndim in (2, 3)
        and isinstance(sizes[0], int)
        and sizes[0] > 0
        and input.shape[-1] > 0
        and input.shape[-1] % sizes[0]
    ):
        values, idx = _adaptive_max_pool2d_composed(input.unsqueeze(-2), [1, sizes[0]])
        return values.squeeze(-2), idx.squeeze(-2)
    return _C.adaptive_max_pool1d(input, sizes)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    sizes = _adaptive_size(output_size, input, 1, "adaptive_max_pool1d")
    return _adaptive_max_pool1d(input, sizes)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """1-d adaptive max pooling (``return_indices`` also returns the argmax positions)."""
    sizes = _adaptive_size(output_size, input, 1, "adaptive_max_pool1d")
    out = _adaptive_max_pool1d(input, sizes)
    return out if return_indices else out[0]


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    sizes = _adaptive_size(output_size, input, 2, "adaptive_max_pool2d")
    return _adaptive_max_pool2d(input, sizes)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """2-d adaptive max pooling (``return_indices`` also returns flat ``H*W`` indices)."""
    sizes = _adaptive_size(output_size, input, 2, "adaptive_max_pool2d")
    out = _adaptive_max_pool2d(input, sizes)
    return out if return_indices else out[0]


# ---------------------------------------------------------------------------- resampling
def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resample the spatial dims of ``(N, C, L)`` / ``(N, C, H, W)`` input with PyTorch's
    index rules. Modes: ``nearest``, ``nearest-exact``, ``linear`` (3-D), ``bilinear`` (4-D),
    ``area``, and with ``antialias=True`` (4-D) ``bilinear``, ``bicubic`` and ``lanczos``
    (see :mod:`ferrotorch.nn._antialias`). When ``scale_factor`` is given (and not
    recomputed) it also sets the source index spacing, exactly as in PyTorch."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating "
                             "modes: linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = input.ndim - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        scale_factors = None
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got "
                    f"input with spatial dimensions of {list(input.shape[2:])} and output size "
                    f"of {size}. Please provide input tensor in (N, C, d1, d2, ...,dK) format "
                    "and output size in (o1, o2, ...,oK) format.")
            output_size = [int(s) for s in size]
        else:
            output_size = [int(size)] * dim
    elif scale_factor is not None:
        output_size = None
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(
                    "Input and scale_factor must have the same number of spatial dimensions, "
                    f"but got input with spatial dimensions of {list(input.shape[2:])} and "
                    f"scale_factor of shape {scale_factor}. Please provide input tensor in "
                    "(N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format.")
            scale_factors = [float(s) for s in scale_factor]
        else:
            scale_factors = [float(scale_factor)] * dim
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True
    if output_size is None:
        output_size = [int(math.floor(float(input.shape[i + 2]) * scale_factors[i]))
                       for i in range(dim)]
        if recompute_scale_factor:
            scale_factors = None
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.ndim == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos "
                         "modes and requires a 4-D tensor as input")
    if input.ndim == 4 and mode == "lanczos":
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
    if antialias:
        from ferrotorch.nn._antialias import interpolate_aa

        return interpolate_aa(input, output_size, scale_factors, mode, align_corners)
    scales = scale_factors if scale_factors is not None else [None] * max(dim, 0)
    nd = input.ndim
    # The native kernels take floating input; uint8 nearest (which PyTorch supports) and
    # CUDA input go through the composed index_select path.
    if (input.is_cuda or input.dtype == _C.uint8) and _resample_composable(input, output_size,
                                                                           mode):
        return _resample_composed(input, output_size, scales, mode, align_corners)
    if nd == 3 and mode == "nearest":
        return _C._upsample_nearest1d(input, output_size, scales[0])
    if nd == 4 and mode == "nearest":
        return _C._upsample_nearest2d(input, output_size, scales[0], scales[1])
    if nd == 3 and mode == "nearest-exact":
        return _C._upsample_nearest_exact1d(input, output_size, scales[0])
    if nd == 4 and mode == "nearest-exact":
        return _C._upsample_nearest_exact2d(input, output_size, scales[0], scales[1])
    if nd == 3 and mode == "area":
        return adaptive_avg_pool1d(input, output_size)
    if nd == 4 and mode == "area":
        return adaptive_avg_pool2d(input, output_size)
    if nd == 3 and mode == "linear":
        return _C._upsample_linear1d(input, output_size, align_corners, scales[0])
    if nd == 4 and mode == "bilinear":
        return _C._upsample_bilinear2d(input, output_size, align_corners, scales[0], scales[1])
    if nd == 4 and mode == "bicubic":
        return _interp_separable(input, output_size, align_corners, scales, "cubic")
    if nd == 5 and mode == "trilinear":
        return _interp_separable(input, output_size, align_corners, scales, "linear")
    if nd == 5 and mode == "area":
        return adaptive_avg_pool3d(input, output_size)
    if nd == 5 and mode in ("nearest", "nearest-exact") and all(v > 0 for v in output_size):
        # One index_select per spatial dim, with the native kernels' source indices.
        return _resample_composed(input, output_size, scales, mode, align_corners)
    if nd == 3 and mode == "bilinear":
        raise NotImplementedError("Got 3D input, but bilinear mode needs 4D input")
    if nd == 3 and mode == "trilinear":
        raise NotImplementedError("Got 3D input, but trilinear mode needs 5D input")
    if nd == 4 and mode == "linear":
        raise NotImplementedError("Got 4D input, but linear mode needs 3D input")
    if nd == 4 and mode == "trilinear":
        raise NotImplementedError("Got 4D input, but trilinear mode needs 5D input")
    if nd == 5 and mode == "linear":
        raise NotImplementedError("Got 5D input, but linear mode needs 3D input")
    if nd == 5 and mode == "bilinear":
        raise NotImplementedError("Got 5D input, but bilinear mode needs 4D input")
    if nd == 5 and mode in ("nearest", "nearest-exact"):
        raise NotImplementedError(f"interpolate: mode '{mode}' with an empty 5D output is not "
                                  "implemented in ferrotorch")
    raise NotImplementedError(
        f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {nd}D) for the modes: "
        "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact "
        f"(got {mode})")


def _nearest_source(in_size, out_size, scale, exact, shortcuts=True):
    """Source index of each output index (PyTorch's nearest / nearest-exact rules, in float32
    as its kernels, the same as the native CPU kernel). ``shortcuts``: whether a same-size or
    double-size output copies / halves the index even when a ``scale`` says otherwise (the
    CPU kernel does so for 2-d input only; 1-d and 3-d use the scale)."""
    import numpy as np

    if scale is not None and scale > 0:
        s32 = np.float32(1.0 / scale)
    else:
        s32 = np.float32(in_size) / np.float32(out_size)
        shortcuts = True  # the same indices either way
    o = np.arange(out_size)
    if shortcuts and not exact and out_size == in_size:
        return o
    if shortcuts and not exact and out_size == 2 * in_size:
        return o >> 1
    if exact:
        src = np.floor(((o + 0.5) * np.float64(s32)).astype(np.float32))
    else:
        src = np.floor(o.astype(np.float32) * s32)
    return np.clip(src.astype(np.int64), 0, in_size - 1)


def _linear_taps(in_size, out_size, align_corners, scale, np_dtype):
    """``(i0, i1, l0, l1)``: the two source indices and weights of each output index for
    linear interpolation (PyTorch's ``area_pixel_compute_source_index``), in the compute
    dtype ``np_dtype``, the same as the native CPU kernel."""
    import numpy as np

    T = np_dtype
    o = np.arange(out_size)
    if out_size == in_size:
        return o, o, np.ones(out_size, T), np.zeros(out_size, T)
    if align_corners:
        ratio = T(in_size - 1) / T(out_size - 1) if out_size > 1 else T(0)
    elif scale is not None and scale > 0:
        ratio = T(1.0 / scale)
    else:
        ratio = T(in_size) / T(out_size)
    of = o.astype(T)
    real = ratio * of if align_corners else np.maximum(ratio * (of + T(0.5)) - T(0.5), T(0))
    i0 = np.clip(np.floor(real).astype(np.int64), 0, in_size - 1)
    l1 = np.clip(real - i0.astype(T), T(0), T(1)).astype(T)
    i1 = np.where(i0 + 1 < in_size, i0 + 1, i0)
    return i0, i1, (T(1) - l1).astype(T), l1


def _resample_composable(input, output_size, mode):
    """Whether the composed (index_select) resampling covers this call; anything else goes
    to the native kernel, which also raises the argument errors."""
    n = len(output_size)
    return (
        (input.is_floating_point()
         or (input.dtype == _C.uint8 and mode in ("nearest", "nearest-exact")))
        and input.ndim == n + 2
        and n in (1, 2)
        and mode in ("nearest", "nearest-exact", "linear", "bilinear")
        and (mode != "linear" or n == 1)
        and (mode != "bilinear" or n == 2)
        and all(v > 0 for v in output_size)
        and all(v > 0 for v in input.shape[2:])
    )


def _resample_composed(input, output_size, scales, mode, align_corners):
    """Nearest / linear / bilinear resampling as one ``index_select`` (nearest) or two
    (linear, with their weights) per spatial dim, so it runs wherever those ops do (the
    native kernels are CPU-only) and autograd comes from ``index_select``. Values and
    gradients are the native kernel's: the same source indices and weights, combined in
    the same order, in the same compute dtype (float32 for half types)."""
    import numpy as np

    dt = input.dtype
    x = input.float() if dt in (_C.float16, _C.bfloat16) else input
    np_dtype = np.float64 if x.dtype == _C.float64 else np.float32
    dev = input.device
    n = len(output_size)

    def index(v):
        return _C.tensor(v.tolist(), dtype=_C.int64, device=dev)

    # The last dim first: the native kernel mixes each row (w taps), then the rows (h taps).
    for k in reversed(range(n)):
        dim = x.ndim - n + k
        in_size, out_size, scale = x.shape[dim], output_size[k], scales[k]
        if mode in ("nearest", "nearest-exact"):
            src = _nearest_source(in_size, out_size, scale, mode == "nearest-exact", n == 2)
            x = x.index_select(dim, index(src))
            continue
        i0, i1, l0, l1 = _linear_taps(in_size, out_size, align_corners, scale, np_dtype)
        shape = [1] * x.ndim
        shape[dim] = out_size
        w0 = _C.tensor(l0.tolist(), dtype=x.dtype, device=dev).reshape(shape)
        w1 = _C.tensor(l1.tolist(), dtype=x.dtype, device=dev).reshape(shape)
        x = w0 * x.index_select(dim, index(i0)) + w1 * x.index_select(dim, index(i1))
    return x.to(dt) if x.dtype != dt else x


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of :func:`interpolate`."""
    warnings.warn("nn.functional.upsample is deprecated. Use nn.functional.interpolate "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(..., mode='nearest')``."""
    warnings.warn("nn.functional.upsample_nearest is deprecated. Use "
                  "nn.functional.interpolate instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(..., mode='bilinear', align_corners=True)``."""
    warnings.warn("nn.functional.upsample_bilinear is deprecated. Use "
                  "nn.functional.interpolate instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def pixel_shuffle(input, upscale_factor):
    """``(*, C*r*r, H, W) -> (*, C, H*r, W*r)`` (a reshape and a permute, differentiable)."""
    r = int(upscale_factor)
    if input.ndim < 3:
        raise RuntimeError("pixel_shuffle expects input to have at least 3 dimensions, but got "
                           f"input with {input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *batch, c, h, w = input.shape
    if c % (r * r) != 0:
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be "
                           "divisible by the square of upscale_factor, but input.size(-3)="
                           f"{c} is not divisible by {r * r}")
    n = len(batch)
    oc = c // (r * r)
    x = input.reshape(tuple(batch) + (oc, r, r, h, w))
    x = x.permute(tuple(range(n)) + (n, n + 3, n + 1, n + 4, n + 2))
    return x.reshape(tuple(batch) + (oc, h * r, w * r))


def pixel_unshuffle(input, downscale_factor):
    """``(*, C, H*r, W*r) -> (*, C*r*r, H, W)``, the inverse of :func:`pixel_shuffle`."""
    r = int(downscale_factor)
    if input.ndim < 3:
        raise RuntimeError("pixel_unshuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *batch, c, h, w = input.shape
    if h % r != 0:
        raise RuntimeError("pixel_unshuffle expects height to be divisible by downscale_factor, "
                           f"but input.size(-2)={h} is not divisible by {r}")
    if w % r != 0:
        raise RuntimeError("pixel_unshuffle expects width to be divisible by downscale_factor, "
                           f"but input.size(-1)={w} is not divisible by {r}")
    n = len(batch)
    x = input.reshape(tuple(batch) + (c, h // r, r, w // r, r))
    x = x.permute(tuple(range(n)) + (n, n + 2, n + 4, n + 1, n + 3))
    return x.reshape(tuple(batch) + (c * r * r, h // r, w // r))


# ---------------------------------------------------------------------------- channel dropout
def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _feature_dropout(input, p, training, inplace, alpha=False):
    """Drop whole channels: one Bernoulli draw per ``(N, C)`` entry, broadcast over the rest."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    mask_shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    x = _inplace_src(input, inplace)
    if alpha:
        out = _alpha_dropout_apply(x, p, mask_shape)
    elif p == 1.0:
        out = x * 0.0
    else:
        keep = _float_mask(_C.rand(*mask_shape, dtype=input.dtype, device=input.device) >= p, input)
        out = x * keep * (1.0 / (1.0 - p))
    return input.copy_(out) if inplace else out


def _alpha_dropout_apply(input, p, mask_shape):
    if p == 1.0:
        return input * 0.0
    alpha = 1.7580993408473766
    a = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    keep = _float_mask(_C.rand(*mask_shape, dtype=input.dtype, device=input.device) >= p, input)
    return input * (keep * a) + ((keep - 1.0) * (alpha * a) + alpha * a * p)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of ``(N, C, L)`` or ``(C, L)`` input with probability ``p``."""
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that "
            "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
            "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
            "inputs).")
    if input.ndim == 2:
        x = _inplace_src(input, inplace)
        out = _feature_dropout(x.unsqueeze(0), p, training, False).squeeze(0)
        return input.copy_(out) if inplace and training and p > 0 else out
    return _feature_dropout(input, p, training, inplace)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of ``(N, C, H, W)`` input (a 3-D input is treated as ``(N, C, L)``
    with a warning, as in PyTorch)."""
    _check_p(p)
    nd = input.ndim
    if nd not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {nd}-D input to dropout2d, which is deprecated and will "
            "result in an error in a future release. To retain the behavior and silence this "
            "warning, please use dropout instead. Note that dropout2d exists to provide "
            "channel-wise dropout on inputs with 2 spatial dimensions, a channel dimension, and "
            "an optional batch dimension (i.e. 3D or 4D inputs).", stacklevel=2)
    if nd == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C is "
            "the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2)
    return _feature_dropout(input, p, training, inplace)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input."""
    _check_p(p)
    nd = input.ndim
    if nd not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {nd}-D input to dropout3d, which is deprecated and will "
            "result in an error in a future release. To retain the behavior and silence this "
            "warning, please use dropout instead. Note that dropout3d exists to provide "
            "channel-wise dropout on inputs with 3 spatial dimensions, a channel dimension, and "
            "an optional batch dimension (i.e. 4D or 5D inputs).", stacklevel=2)
    if nd != 5:  # anything but 5-D is one unbatched sample, as in PyTorch
        x = _inplace_src(input, inplace)
        out = _feature_dropout(x.unsqueeze(0), p, training, False).squeeze(0)
        return input.copy_(out) if inplace and training and p > 0 else out
    return _feature_dropout(input, p, training, inplace)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout that keeps the mean and variance of SELU activations (PyTorch's formula)."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    out = _alpha_dropout_apply(_inplace_src(input, inplace), p, tuple(input.shape))
    return input.copy_(out) if inplace else out


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout of whole channels."""
    return _feature_dropout(input, p, training, inplace, alpha=True)


__all__ += [
    "max_pool1d", "max_pool2d", "max_pool1d_with_indices", "max_pool2d_with_indices",
    "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
    "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices", "interpolate", "upsample", "upsample_nearest",
    "upsample_bilinear", "pixel_shuffle", "pixel_unshuffle", "dropout1d", "dropout2d",
    "dropout3d", "alpha_dropout", "feature_alpha_dropout",
]
# ---------------------------------------------------------------------------- normalisation
def _verify_batch_size(size):
    size_prods = size[0]
    for i in range(len(size) - 2):
        size_prods *= size[i + 2]
    if size_prods == 1:
        raise ValueError(
            f"Expected more than 1 value per channel when training, got input size {size}"
        )


def _verify_spatial_size(size):
    size_prods = 1
    for i in range(2, len(size)):
        size_prods *= size[i]
    if size_prods == 1:
        raise ValueError(
            f"Expected more than 1 spatial element when training, got input size {size}"
        )


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Normalise each channel (dim 1) of an ``(N, C, *)`` input with the batch statistics
    (``training=True``; the running statistics, when given, are updated in place with
    ``momentum`` and the unbiased variance) or with the running statistics (evaluation)."""
    if training:
        _verify_batch_size(input.size())
    else:
        for name, t in (("running_mean", running_mean), ("running_var", running_var)):
            if t is None:
                raise RuntimeError(f"{name} must be defined in evaluation mode")
    if input.ndim >= 2:
        # ATen's per-channel size checks, in its order.
        c = input.shape[1]
        for name, t in (("running_mean", running_mean), ("running_var", running_var),
                        ("weight", weight), ("bias", bias)):
            if t is not None and t.numel() != c:
                raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")
    if (running_mean is None) != (running_var is None):
        raise ValueError("running_mean and running_var must either both be None or neither "
                         "be None")
    if momentum is None:
        momentum = 0.0
    return _C.batch_norm(input, weight, bias, running_mean, running_var, bool(training),
                         float(momentum), float(eps), True)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Normalise each channel of each sample separately (batch norm of the input seen as
    ``(1, N*C, *)``); running statistics, when given, receive the mean over the batch."""
    if use_input_stats:
        _verify_spatial_size(input.size())
    if input.ndim < 2:
        raise ValueError(f"instance_norm: expected at least 2D input (got {input.ndim}D input)")
    b, c = input.shape[0], input.shape[1]
    shape = [1, b * c] + list(input.shape[2:])
    weight_ = weight.repeat(b) if weight is not None else None
    bias_ = bias.repeat(b) if bias is not None else None
    rm_ = running_mean.repeat(b) if running_mean is not None else None
    rv_ = running_var.repeat(b) if running_var is not None else None
    out = batch_norm(input.contiguous().reshape(shape), rm_, rv_, weight_, bias_,
                     use_input_stats, momentum, eps)
    if use_input_stats:
        import ferrotorch

        with ferrotorch.no_grad():
            if running_mean is not None:
                running_mean.copy_(rm_.reshape(b, c).mean(0))
            if running_var is not None:
                running_var.copy_(rv_.reshape(b, c).mean(0))
    return out.reshape(list(input.shape))


def _shape_list(normalized_shape):
    if isinstance(normalized_shape, int):
        return [normalized_shape]
    return [int(d) for d in normalized_shape]


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the trailing ``normalized_shape`` dims, then ``* weight + bias``."""
    return _C.layer_norm(input, _shape_list(normalized_shape), weight, bias, float(eps))


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalise each group of ``C // num_groups`` channels of each sample, then apply a
    per-channel ``weight`` and ``bias``."""
    if input.ndim < 2:
        raise RuntimeError(
            f"Expected at least 2 dimensions for input tensor but received {input.ndim}"
        )
    if num_groups > 0 and input.shape[1] % num_groups == 0:
        _verify_batch_size(
            [input.shape[0] * input.shape[1] // num_groups, num_groups] + list(input.shape[2:])
        )
    return _C.group_norm(input, int(num_groups), weight, bias, float(eps), True)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """``x / sqrt(mean(x^2 over normalized_shape) + eps) * weight``; ``eps=None`` uses
    ``torch.finfo(input.dtype).eps``."""
    return _C.rms_norm(input, _shape_list(normalized_shape), weight,
                       None if eps is None else float(eps))


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """``x / (k + alpha * mean of x^2 over a window of `size` neighbouring channels)^beta``
    (windows zero-padded at the channel edges, divided by ``size`` as PyTorch)."""
    dim = input.ndim
    if dim < 3:
        raise ValueError(
            # PyTorch's message keeps the indentation of its source's line break.
            f"Expected 3D or higher dimensionality                          input (got {dim} "
            "dimensions)"
        )
    if input.numel() == 0:
        return input
    c = input.shape[1]
    sq = input * input
    padded = pad(sq, [0, 0] * (dim - 2) + [size // 2, (size - 1) // 2])
    acc = padded.narrow(1, 0, c)
    for j in range(1, size):
        acc = acc + padded.narrow(1, j, c)
    div = (acc * (alpha / size) + k).pow(beta)
    return input / div


__all__ += ["batch_norm", "instance_norm", "layer_norm", "group_norm", "rms_norm",
            "local_response_norm"]
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


def _patch_identity(channels, kernel_size, dtype, device):
    """Weight ``(C*kh*kw, 1, kh, kw)`` picking each kernel position of each channel: a grouped
    convolution with it is im2col (and the transposed one is col2im)."""
    kh, kw = kernel_size
    kk = kh * kw
    eye = _C.eye(kk, dtype=dtype).reshape(kk, 1, kh, kw)
    return (eye.repeat(channels, 1, 1, 1) if channels != 1 else eye).to(device)


def _im2col_pairs(**args):
    """``(h, w)`` pairs of im2col / col2im arguments with ATen's checks and messages: each
    an int or a sequence of exactly 2, then kernel, dilation, padding and stride in range."""
    pairs = {}
    for name, v in args.items():
        if isinstance(v, (list, tuple)):
            if len(v) != 2:
                raise RuntimeError(f"It is expected {name} equals to 2, but got size {len(v)}")
            pairs[name] = (int(v[0]), int(v[1]))
        else:
            pairs[name] = (int(v), int(v))
    checks = (("kernel_size", "kernel size should be greater than zero", "kernel", 1),
              ("dilation", "dilation should be greater than zero", "dilation", 1),
              ("padding", "padding should be non-negative", "pad", 0),
              ("stride", "stride should be greater than zero", "stride", 1))
    for name, msg, short, lo in checks:
        h, w = pairs[name]
        if h < lo or w < lo:
            raise RuntimeError(f"{msg}, but got {short}_height: {h} {short}_width: {w}")
    return pairs


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Extract sliding local blocks (im2col): ``(N, C, H, W)`` -> ``(N, C*kh*kw, L)`` (or
    unbatched ``(C, H, W)`` -> ``(C*kh*kw, L)``); differentiable."""
    a = _im2col_pairs(kernel_size=kernel_size, dilation=dilation, padding=padding,
                      stride=stride)
    k, d, p, s = a["kernel_size"], a["dilation"], a["padding"], a["stride"]
    # Only the batch dim may be empty.
    if input.ndim not in (3, 4) or 0 in input.shape[input.ndim - 3:]:
        raise RuntimeError(
            "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other "
            f"non-zero dimensions for input, but got: {list(input.shape)}")
    hw = input.shape[-2:]
    blocks = [(hw[i] + 2 * p[i] - (d[i] * (k[i] - 1) + 1)) // s[i] + 1 for i in range(2)]
    if blocks[0] < 1 or blocks[1] < 1:
        raise RuntimeError(
            f"Given input with spatial size ({hw[0]}, {hw[1]}), kernel_size={k}, "
            f"dilation={d}, padding={p}, calculated shape of the array of sliding blocks as "
            f"({blocks[0]}, {blocks[1]}), but its components must be at least one.")
    channels = input.shape[-3]
    weight = _patch_identity(channels, k, input.dtype, input.device)
    out = _C.conv2d(input, weight, None, s, p, d, channels)
    return out.flatten(-2)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Combine sliding local blocks into a tensor (col2im, summing overlaps): ``(N, C*kh*kw,
    L)`` -> ``(N, C, H, W)`` (or unbatched); the adjoint of :func:`unfold`."""
    a = _im2col_pairs(output_size=output_size, kernel_size=kernel_size, dilation=dilation,
                      padding=padding, stride=stride)
    osz, k, d, p, s = (a["output_size"], a["kernel_size"], a["dilation"], a["padding"],
                       a["stride"])
    # Only the batch dim may be empty.
    if input.ndim not in (2, 3) or 0 in input.shape[input.ndim - 2:]:
        raise RuntimeError(
            "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and "
            f"non-zero dimensions for input, but got: {list(input.shape)}")
    kk = k[0] * k[1]
    ck = input.shape[-2]
    if ck % kk != 0:
        raise RuntimeError(
            f"Expected size of input's dimension 1 to be divisible by the product of "
            f"kernel_size, but got input.size(1)={ck} and kernel_size={k}.")
    blocks = [(osz[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2)]
    head = (f"Given output_size={osz}, kernel_size={k}, dilation={d}, padding={p}, "
            f"stride={s}, ")
    if blocks[0] * blocks[1] != input.shape[-1]:
        raise RuntimeError(
            f"{head}expected size of input's dimension 2 to match the calculated number "
            f"of sliding blocks {blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, but got "
            f"input.size(2)={input.shape[-1]}.")
    if blocks[0] < 1 or blocks[1] < 1:
        raise RuntimeError(f"{head}calculated shape of the array of sliding blocks as "
                           f"({blocks[0]}, {blocks[1]}), which is invalid.")
    channels = ck // kk
    cols = input.reshape(*input.shape[:-1], blocks[0], blocks[1])
    weight = _patch_identity(channels, k, input.dtype, input.device)
    out_pad = [osz[i] - ((blocks[i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + 1)
               for i in range(2)]
    return _C.conv_transpose2d(cols, weight, None, s, p, tuple(out_pad), channels, d)


__all__ += ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "unfold", "fold"]


# ---------------------------------------------------------------------------- 3-d layers
# conv3d and the 3-d pools are composed from the 2-d kernels (depth folded into the batch or
# channel dim) plus a few ops along depth, so autograd comes from those ops.
def _triple(x, name, op):
    if isinstance(x, (list, tuple)):
        if len(x) == 1:
            return (int(x[0]),) * 3
        if len(x) != 3:
            raise RuntimeError(f"{op}: {name} must be an int or a tuple of three ints, "
                               f"got {tuple(x)}")
        return tuple(int(v) for v in x)
    return (int(x),) * 3


def _batched_3d_conv_input(name, input, weight):
    """Check a 3-d (transposed) convolution's ranks; return the 5-d input and whether a batch
    dim was added."""
    if input.ndim not in (4, 5):
        raise RuntimeError(f"Expected 4D (unbatched) or 5D (batched) input to {name}, but got "
                           f"input of size: {list(input.shape)}")
    if weight.ndim != 5:
        raise RuntimeError(f"Expected 5-dimensional weight for 5-dimensional input "
                           f"{list(input.shape)}, but got {weight.ndim}-dimensional weight "
                           f"of size {list(weight.shape)} instead")
    unbatched = input.ndim == 4
    return (input.unsqueeze(0) if unbatched else input), unbatched


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-d convolution over ``(N, C_in, D, H, W)`` (or unbatched ``(C_in, D, H, W)``) with
    ``weight`` of shape ``(C_out, C_in / groups, kD, kH, kW)``; ``padding`` may be an int, a
    triple, ``'valid'`` or ``'same'`` (stride 1 only). Computed as one 2-d convolution per
    depth tap (depth folded into the batch), accumulated."""
    x, unbatched = _batched_3d_conv_input("conv3d", input, weight)
    groups = int(groups)
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    n, c, d_in, h_in, w_in = x.shape
    o, cg, kd, kh, kw = weight.shape
    if c != cg * groups:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
            f"{list(x.shape)} to have {cg * groups} channels, but got {c} channels instead")
    if o % groups != 0:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by "
                           f"{groups} at dimension 0, but got weight of size "
                           f"{list(weight.shape)} instead")
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != o):
        raise RuntimeError(f"Given weight of size {list(weight.shape)}, expected bias to be "
                           f"1-dimensional with {o} elements, but got bias of size "
                           f"{list(bias.shape)} instead")
    s = _triple(stride, "stride", "conv3d")
    dil = _triple(dilation, "dilation", "conv3d")
    if any(v <= 0 for v in s):
        raise RuntimeError("non-positive stride is not supported")
    if any(v <= 0 for v in dil):
        raise RuntimeError("dilation should be greater than zero")
    if isinstance(padding, str):
        if padding == "valid":
            d_pad, hw_pad = (0, 0), (0, 0)
        elif padding == "same":
            if any(v != 1 for v in s):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            total = dil[0] * (kd - 1)
            d_pad, hw_pad = (total // 2, total - total // 2), "same"
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        p = _triple(padding, "padding", "conv3d")
        if any(v < 0 for v in p):
            raise RuntimeError("negative padding is not supported")
        d_pad, hw_pad = (p[0], p[0]), (p[1], p[2])
    if d_pad != (0, 0):
        x = pad(x, (0, 0, 0, 0, d_pad[0], d_pad[1]))
    d_padded = d_in + d_pad[0] + d_pad[1]
    span = dil[0] * (kd - 1) + 1
    if d_padded < span:
        raise RuntimeError(
            f"Calculated padded input size per channel: ({d_padded} x {h_in} x {w_in}). "
            f"Kernel size: ({span} x {kh} x {kw}). Kernel size can't be greater than actual "
            f"input size")
    d_out = (d_padded - span) // s[0] + 1
    hw_stride, hw_dil = (s[1], s[2]), (dil[1], dil[2])
    out = None
    for t in range(kd):
        start = t * dil[0]
        xs = x[:, :, start:start + s[0] * (d_out - 1) + 1:s[0]]
        xs = xs.transpose(1, 2).reshape(n * d_out, c, h_in, w_in)
        y = _C.conv2d(xs, weight[:, :, t], None, hw_stride, hw_pad, hw_dil, groups)
        out = y if out is None else out + y
    out = out.reshape(n, d_out, o, out.shape[-2], out.shape[-1]).transpose(1, 2)
    if bias is not None:
        out = out + bias.reshape(1, o, 1, 1, 1)
    else:
        out = out.contiguous()
    return out.squeeze(0) if unbatched else out


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """3-d transposed convolution with ``weight`` of shape ``(C_in, C_out / groups, kD, kH,
    kW)``: one 2-d transposed convolution per depth tap (depth folded into the batch), each
    spread to its output depths (input depth ``i`` lands on ``i * stride + tap * dilation``),
    summed, then cropped by the depth padding."""
    x, unbatched = _batched_3d_conv_input("conv_transpose3d", input, weight)
    groups = int(groups)
    n, c, d_in, h_in, w_in = x.shape
    cin, og, kd, kh, kw = weight.shape
    if c != cin:
        raise RuntimeError(
            f"Given transposed=1, weight of size {list(weight.shape)}, expected input"
            f"{list(x.shape)} to have {cin} channels, but got {c} channels instead")
    s = _triple(stride, "stride", "conv_transpose3d")
    p = _triple(padding, "padding", "conv_transpose3d")
    op = _triple(output_padding, "output_padding", "conv_transpose3d")
    dil = _triple(dilation, "dilation", "conv_transpose3d")
    if any(op[i] >= max(s[i], dil[i]) for i in range(3)):
        raise RuntimeError("output padding must be smaller than either stride or dilation, "
                           f"but got output_padding={op}, stride={s}, dilation={dil}")
    o = og * groups
    full = (d_in - 1) * s[0] + dil[0] * (kd - 1) + 1 + op[0]
    d_out = full - 2 * p[0]
    if d_out <= 0:
        raise RuntimeError(f"conv_transpose3d: the output depth ({d_out}) is too small")
    xs = x.transpose(1, 2).reshape(n * d_in, c, h_in, w_in)
    spread = (d_in - 1) * s[0] + 1
    out = None
    for t in range(kd):
        y = _C.conv_transpose2d(xs, weight[:, :, t], None, (s[1], s[2]), (p[1], p[2]),
                                (op[1], op[2]), groups, (dil[1], dil[2]))
        ho, wo = y.shape[-2], y.shape[-1]
        y = y.reshape(n, d_in, o, ho, wo)
        if s[0] > 1:  # zeros between the input depths
            z = _C.zeros(n, d_in, s[0] - 1, o, ho, wo, dtype=y.dtype, device=y.device)
            y = _C.cat([y.unsqueeze(2), z], 2).reshape(n, d_in * s[0], o, ho, wo)
            y = y.narrow(1, 0, spread)
        before = t * dil[0]
        y = pad(y, (0, 0, 0, 0, 0, 0, before, full - spread - before))
        out = y if out is None else out + y
    out = out.narrow(1, p[0], d_out).transpose(1, 2)
    if bias is not None:
        out = out + bias.reshape(1, o, 1, 1, 1)
    else:
        out = out.contiguous()
    return out.squeeze(0) if unbatched else out


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    """3-d adaptive max pooling with flat ``D*H*W`` argmax indices: the 2-d adaptive max pool
    over (H, W) at each depth, then the 1-d one over depth (max is separable; ties go to the
    first position in (d, h, w) order, as PyTorch's scan)."""
    if input.ndim not in (4, 5):
        raise RuntimeError(f"adaptive_max_pool3d(): Expected 4D or 5D tensor, but got "
                           f"{list(input.shape)}")
    od, oh, ow = _adaptive_size(output_size, input, 3, "adaptive_max_pool3d")
    lead = list(input.shape[:-3])
    depth, h_in, w_in = input.shape[-3:]
    y, ihw = _adaptive_max_pool2d(input.reshape(-1, depth, h_in, w_in), [oh, ow])
    y = y.reshape(-1, depth, oh * ow).transpose(1, 2)
    z, idd = _adaptive_max_pool1d(y, [od])  # (P, oh*ow, od)
    ihw = ihw.reshape(-1, depth, oh * ow).transpose(1, 2)
    hw = ihw.gather(2, idd)
    idx = idd * (h_in * w_in) + hw
    out = z.transpose(1, 2).reshape(*lead, od, oh, ow)
    return out, idx.transpose(1, 2).reshape(*lead, od, oh, ow)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """3-d adaptive max pooling (``return_indices`` also returns flat ``D*H*W`` indices)."""
    out, idx = adaptive_max_pool3d_with_indices(input, output_size)
    return (out, idx) if return_indices else out


__all__ += ["conv_transpose3d", "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices"]


def _pool3d_args(input, kernel_size, stride, padding, dilation, name):
    if input.ndim not in (4, 5):
        raise RuntimeError(f"{name}: Expected 4D or 5D tensor for input, but got "
                           f"{list(input.shape)}")
    k = _triple(kernel_size, "kernel_size", name)
    s = k if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) \
        else _triple(stride, "stride", name)
    p = _triple(padding, "padding", name)
    d = _triple(dilation, "dilation", name)
    if any(v <= 0 for v in k):
        raise RuntimeError(f"{name}: kernel size should be greater than zero, but got "
                           f"kT: {k[0]} kH: {k[1]} kW: {k[2]}")
    if any(v <= 0 for v in s):
        raise RuntimeError(f"{name}: stride should be greater than zero, but got "
                           f"dT: {s[0]} dH: {s[1]} dW: {s[2]}")
    if any(v <= 0 for v in d):
        raise RuntimeError(f"{name}: dilation should be greater than zero, but got "
                           f"dilationT: {d[0]} dilationH: {d[1]} dilationW: {d[2]}")
    if any(p[i] < 0 or p[i] > k[i] // 2 for i in range(3)):
        raise RuntimeError(f"{name}: pad should be smaller than or equal to half of kernel "
                           f"size, but got kT: {k[0]} kW: {k[2]} kH: {k[1]} padT: {p[0]} "
                           f"padW: {p[2]} padH: {p[1]}")
    return k, s, p, d


def _pool_out_size(n, k, p, s, d, ceil_mode):
    num = n + 2 * p - d * (k - 1) - 1
    out = (-(-num // s) if ceil_mode else num // s) + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def _pool3d_check_out(input, k, s, p, d, ceil_mode):
    sizes = list(input.shape[-3:])
    outs = [_pool_out_size(sizes[i], k[i], p[i], s[i], d[i], ceil_mode) for i in range(3)]
    if any(v < 1 for v in outs):
        raise RuntimeError(f"Given input size: ({'x'.join(str(v) for v in input.shape[-4:])}). "
                           f"Calculated output size: ({input.shape[-4]}x"
                           f"{'x'.join(str(v) for v in outs)}). Output size is too small")
    return outs


def _depth_windows(y, d_out, k, s, p, d, fill):
    """``y`` (P, D, ...): its depth windows as (P, d_out, ..., k), padded with ``fill``."""
    depth = y.shape[1]
    total = (d_out - 1) * s + d * (k - 1) + 1
    right = total - depth - p
    spec = [0, 0] * (y.ndim - 2) + [p, max(right, 0)]
    if p or right > 0:
        y = pad(y, spec, value=fill)
    if right < 0:
        y = y.narrow(1, 0, total)
    taps = [y.narrow(1, t * d, s * (d_out - 1) + 1)[:, ::s] for t in range(k)]
    if y.numel() == 0:  # (stacking empty tensors is not supported by the kernel)
        return _C.zeros(*taps[0].shape, k, dtype=y.dtype, device=y.device)
    return _C.stack(taps, -1)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """3-d max pooling; returns ``(values, indices)`` with int64 indices flat over
    ``D*H*W``."""
    k, s, p, d = _pool3d_args(input, kernel_size, stride, padding, dilation, "max_pool3d")
    d_out, h_out, w_out = _pool3d_check_out(input, k, s, p, d, ceil_mode)
    lead = list(input.shape[:-4]) + [input.shape[-4]]
    depth, h_in, w_in = input.shape[-3:]
    x = input.reshape(-1, depth, h_in, w_in)
    vals, idx = _C._max_pool2d_with_indices(x, k[1:], s[1:], p[1:], d[1:], ceil_mode)
    # The winning depth tap of each window (on detached values: indices carry no gradient).
    win = _depth_windows(vals.detach(), d_out, k[0], s[0], p[0], d[0], -math.inf)
    tap = win.argmax(-1)
    pos = _C.arange(d_out, device=input.device).reshape(1, d_out, 1, 1) * s[0] - p[0]
    dsrc = (tap * d[0] + pos).clamp(0, depth - 1)
    flat = dsrc * (h_in * w_in) + idx.gather(1, dsrc)
    out = vals.gather(1, dsrc)
    return out.reshape(*lead, d_out, h_out, w_out), flat.reshape(*lead, d_out, h_out, w_out)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """3-d max pooling over ``(N, C, D, H, W)`` or ``(C, D, H, W)``: the 2-d max pool over
    (H, W) with depth as channels, then a max over each depth window (the gradient goes to
    the first maximum, as PyTorch's)."""
    out, idx = max_pool3d_with_indices(input, kernel_size, stride, padding, dilation,
                                       ceil_mode)
    return (out, idx) if return_indices else out


def _avg_divisors(n, k, p, s, n_out, count_include_pad):
    """PyTorch's per-output divisor along one dim (the 3-d divisor is their product)."""
    out = []
    for i in range(n_out):
        start = i * s - p
        end = min(start + k, n + p)
        size = end - start
        start, end = max(start, 0), min(end, n)
        out.append(size if count_include_pad else end - start)
    return out


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """3-d average pooling over ``(N, C, D, H, W)`` or ``(C, D, H, W)``: the 2-d average
    pool over (H, W) with depth as channels, then the depth windows' sums over their depth
    divisors (PyTorch's divisor is a product of per-dim factors)."""
    k, s, p, _ = _pool3d_args(input, kernel_size, stride, padding, 1, "avg_pool3d")
    if divisor_override is not None and int(divisor_override) == 0:
        raise RuntimeError("divisor must be not zero")
    d_out, h_out, w_out = _pool3d_check_out(input, k, s, p, (1, 1, 1), ceil_mode)
    lead = list(input.shape[:-4]) + [input.shape[-4]]
    depth, h_in, w_in = input.shape[-3:]
    x = input.reshape(-1, depth, h_in, w_in)
    if divisor_override is not None:
        y = _C._avg_pool2d(x, k[1:], s[1:], p[1:], ceil_mode, count_include_pad, 1)
    else:
        y = _C._avg_pool2d(x, k[1:], s[1:], p[1:], ceil_mode, count_include_pad, None)
    total = _depth_windows(y, d_out, k[0], s[0], p[0], 1, 0.0).sum(-1)
    if divisor_override is not None:
        out = total / float(divisor_override)
    else:
        div = _avg_divisors(depth, k[0], p[0], s[0], d_out, count_include_pad)
        div = _C.tensor(div, dtype=total.dtype, device=total.device).reshape(1, d_out, 1, 1)
        out = total / div
    return out.reshape(*lead, d_out, h_out, w_out)


def adaptive_avg_pool3d(input, output_size):
    """3-d adaptive average pooling (``None`` in ``output_size`` keeps that input size): the
    2-d adaptive pool over (H, W), then the 1-d one over depth."""
    if input.ndim not in (4, 5):
        raise RuntimeError(f"adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got "
                           f"{list(input.shape)}")
    od, oh, ow = _adaptive_size(output_size, input, 3, "adaptive_avg_pool3d")
    lead = list(input.shape[:-4]) + [input.shape[-4]]
    depth, h_in, w_in = input.shape[-3:]
    y = _C._adaptive_avg_pool2d(input.reshape(-1, depth, h_in, w_in), [oh, ow])
    y = y.reshape(-1, depth, oh * ow).transpose(1, 2)
    z = _C.adaptive_avg_pool1d(y, [od])
    return z.transpose(1, 2).reshape(*lead, od, oh, ow)


def _lp_pool_special(norm_type, pool, input, kernel_size, stride, ceil_mode):
    """PyTorch's special norms: 0 is an error, +-inf is the max / min of ``|x|`` per window
    (``None`` for the other norms, which take the power-average formula)."""
    if isinstance(norm_type, (int, float)):
        if norm_type == 0:
            raise ValueError(f"norm_type must be a non-zero value, but got {norm_type}")
        if norm_type == math.inf:
            return pool(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -math.inf:
            return -pool(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    return None


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling: ``(sum over the window of x^p)^(1/p)`` (PyTorch's formula)."""
    special = _lp_pool_special(norm_type, max_pool1d, input, kernel_size, stride, ceil_mode)
    if special is not None:
        return special
    if stride is not None:
        out = avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        out = avg_pool1d(input.pow(norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
    k = kernel_size[0] if isinstance(kernel_size, (list, tuple)) else kernel_size
    return (out.sign() * relu(out.abs())).mul(k).pow(1.0 / norm_type)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """2-d power-average pooling: ``(sum over the window of x^p)^(1/p)``."""
    kw, kh = _conv_pair(kernel_size, "kernel_size")
    special = _lp_pool_special(norm_type, max_pool2d, input, kernel_size, stride, ceil_mode)
    if special is not None:
        return special
    if stride is not None:
        out = avg_pool2d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        out = avg_pool2d(input.pow(norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
    return (out.sign() * relu(out.abs())).mul(kw * kh).pow(1.0 / norm_type)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """3-d power-average pooling: ``(sum over the window of x^p)^(1/p)``."""
    kd, kw, kh = _triple(kernel_size, "kernel_size", "lp_pool3d")
    special = _lp_pool_special(norm_type, max_pool3d, input, kernel_size, stride, ceil_mode)
    if special is not None:
        return special
    if stride is not None:
        out = avg_pool3d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        out = avg_pool3d(input.pow(norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
    return (out.sign() * relu(out.abs())).mul(kd * kw * kh).pow(1.0 / norm_type)


# ---------------------------------------------------------------------------- fractional max pool
def _fmp_rounder(dtype):
    """Rounds float64 numpy arrays the way PyTorch's CPU kernel rounds its ``scalar_t``
    arithmetic (float32 ops; half / bfloat16 ops go through float32, then round)."""
    import numpy as np

    if dtype == _C.float64:
        return lambda a: np.asarray(a, dtype=np.float64)
    if dtype == _C.float16:
        return lambda a: (np.asarray(a, dtype=np.float64).astype(np.float32)
                          .astype(np.float16).astype(np.float64))

    if dtype == _C.bfloat16:
        def bf16(a):
            u = np.asarray(a, dtype=np.float64).astype(np.float32).view(np.uint32)
            u = ((u.astype(np.uint64) + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000)
            return u.astype(np.uint32).view(np.float32).astype(np.float64)
        return bf16
    return lambda a: np.asarray(a, dtype=np.float64).astype(np.float32).astype(np.float64)


def _fmp_intervals(samples, in_size, out_size, pool, rnd):
    """PyTorch's ``generate_intervals``: the window starts along one dim for each plane's
    sample (``samples``: float64 array of shape ``(P,)``); returns an int64 ``(P, out)``."""
    import numpy as np

    seq = np.zeros((samples.shape[0], out_size), dtype=np.int64)
    if out_size > 1:
        alpha = rnd(rnd(in_size - pool) / rnd(out_size - 1))
        i = np.arange(out_size - 1, dtype=np.float64)
        a = np.trunc(rnd(rnd(rnd(i)[None, :] + samples[:, None]) * alpha))
        b = np.trunc(rnd(samples * alpha))
        seq[:, :-1] = (a - b[:, None]).astype(np.int64)
    if out_size > 0:
        seq[:, -1] = in_size - pool
    return seq


def _fractional_max_pool(input, kernel_size, output_size, samples, nd):
    """Shared n-d (2 or 3) fractional max pool: ``(values, int64 indices)`` flat over the
    spatial dims of each plane, with PyTorch's checks, windows and tie / NaN rules. The
    windows are found on the host from the samples; the values are a ``gather`` of the
    input, so autograd routes each output's gradient to its max (accumulating)."""
    import numpy as np

    if samples is None:  # one uniform [0, 1) draw per plane and spatial dim
        n_batch = 1 if input.dim() == nd + 1 else input.size(0)
        samples = _C.rand(n_batch, input.size(-nd - 1), nd, dtype=input.dtype,
                          device=input.device)
    name = "fractional_max_pool2d" if nd == 2 else "fractional_max_pool3d"
    what = "tuple of Ints" if nd == 2 else "tuple of three Ints"
    ks = [int(kernel_size)] * nd if not isinstance(kernel_size, (list, tuple)) else \
        [int(k) for k in kernel_size]
    if len(ks) != nd:
        raise RuntimeError(f"{name}: kernel_size must either be a single Int or {what}")
    os_ = [int(output_size)] * nd if not isinstance(output_size, (list, tuple)) else \
        [int(o) for o in output_size]
    if len(os_) != nd:
        raise RuntimeError(f"{name}: output_size must either be a single Int or {what}")
    pre = "fractional_max_pool2d(): " if nd == 2 else "fractional_max_pool3d_out(): "
    ndims = input.ndim
    if ndims not in (nd + 1, nd + 2):
        raise RuntimeError(f"{pre}Expected {nd + 1}D or {nd + 2}D tensor, but got: "
                           f"{list(input.shape)}")
    for i in range(1, ndims):
        if input.shape[i] <= 0:
            raise RuntimeError(f"{pre}Expected input to have non-zero size for non-batch "
                               f"dimensions, but got{list(input.shape)} with dimension {i} "
                               "being empty.")
    batched = ndims == nd + 2
    x = input if batched else input.unsqueeze(0)
    n, c = x.shape[0], x.shape[1]
    sizes = list(x.shape[2:])
    labels = ["height", "width"] if nd == 2 else ["time", "height", "width"]
    for lab, o, k, s in zip(labels, os_, ks, sizes):
        ok = (o + k - 1 <= s) if nd == 2 else (o + k - 1 < s)
        if not ok:
            raise RuntimeError(f"{pre}pool {lab} {k} too large relative to input {lab} {s}")
    if samples.ndim != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {samples.ndim}")
    if samples.dtype != input.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if samples.shape[0] < n:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples.shape[1] != c:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples.shape[2] != nd:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {nd}; "
                           f"got {samples.shape[2]}.")
    dev = input.device
    rnd = _fmp_rounder(input.dtype)
    smp = np.asarray(samples[:n].detach().to(_C.float64).cpu().tolist(),
                     dtype=np.float64).reshape(n * c, nd)
    # PyTorch's 2-d kernel takes W from sample 0 and H from sample 1; the 3-d one T, H, W.
    order = [1, 0] if nd == 2 else [0, 1, 2]
    strides = [int(np.prod(sizes[d + 1:])) for d in range(nd)]
    plane = int(np.prod(sizes))
    base = _C.zeros(n * c, *([1] * (2 * nd)), dtype=_C.int64, device=dev)
    offs = _C.zeros(*([1] * (1 + 2 * nd)), dtype=_C.int64, device=dev)
    for d in range(nd):
        seq = _fmp_intervals(rnd(smp[:, order[d]]), sizes[d], os_[d], ks[d], rnd)
        if seq.size and (seq.min() < 0 or seq.max() + ks[d] > sizes[d]):
            raise RuntimeError(f"{name}: _random_samples give windows outside the input")
        shape = [n * c] + [1] * (2 * nd)
        shape[1 + d] = os_[d]
        start = _C.tensor(seq.tolist(), dtype=_C.int64, device=dev).reshape(shape)
        base = base + start * strides[d]
        kshape = [1] * (1 + 2 * nd)
        kshape[1 + nd + d] = ks[d]
        offs = offs + _C.arange(ks[d], device=dev).reshape(kshape) * strides[d]
    npos = int(np.prod(os_))
    kk = int(np.prod(ks))
    xf = x.reshape(n, c, plane)
    if kk == 0:  # no taps: PyTorch leaves -inf at the window start
        idx = base.expand(n * c, *os_, *([1] * nd)).reshape(n, c, npos)
        out = _C.full((n, c, npos), -math.inf, dtype=x.dtype, device=dev)
    else:
        flat = (base + offs).expand(n * c, *os_, *ks).reshape(n, c, npos, kk)
        win = xf.detach().gather(2, flat.reshape(n, c, npos * kk)).reshape(n, c, npos, kk)
        k = _C.arange(kk, device=dev)
        isn = win.isnan()
        last_nan = (isn.to(_C.int64) * (k + 1)).amax(-1) - 1
        eq = win == win.amax(-1, keepdim=True)
        first_max = kk - (eq.to(_C.int64) * (kk - k)).amax(-1)
        pos = _C.where(isn.any(-1), last_nan, first_max)
        idx = flat.gather(3, pos.unsqueeze(-1)).squeeze(-1)
        out = xf.gather(2, idx)
    out = out.reshape(n, c, *os_)
    idx = idx.reshape(n, c, *os_)
    if not batched:
        out, idx = out.squeeze(0), idx.squeeze(0)
    return out, idx


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """2-d fractional max pooling (Graham, 2014) over ``(N, C, H, W)`` or ``(C, H, W)``:
    ``kernel_size`` windows at pseudo-random starts generated from ``_random_samples``
    (``(N, C, 2)`` uniform ``[0, 1)``, drawn when ``None``) exactly as PyTorch's kernel
    does; returns ``(values, indices)`` with indices flat over ``H*W``."""
    if output_size is None and output_ratio is None:
        raise ValueError("fractional_max_pool2d requires specifying either an output_size "
                         "or an output_ratio")
    if output_size is None:
        if len(output_ratio) > 2:
            raise ValueError("fractional_max_pool2d requires output_ratio to either be a "
                             "single Int or tuple of Ints.")
        r = tuple(output_ratio)  # (a 1-tuple fails on r[1], as in PyTorch)
        output_size = [int(input.size(-2) * r[0]), int(input.size(-1) * r[1])]
    return _fractional_max_pool(input, kernel_size, output_size, _random_samples, 2)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """2-d fractional max pooling (see :func:`fractional_max_pool2d_with_indices`)."""
    out = fractional_max_pool2d_with_indices(input, kernel_size, output_size, output_ratio,
                                             return_indices, _random_samples)
    return out if return_indices else out[0]


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """3-d fractional max pooling over ``(N, C, T, H, W)`` or ``(C, T, H, W)``
    (``_random_samples``: ``(N, C, 3)``); returns ``(values, indices)`` with indices flat
    over ``T*H*W``."""
    if output_size is None and output_ratio is None:
        raise ValueError("fractional_max_pool3d requires specifying either an output_size "
                         "or an output_ratio")
    if output_size is None:
        r = tuple(output_ratio) if isinstance(output_ratio, (list, tuple)) else \
            (output_ratio,) * 3
        output_size = [int(input.size(-3) * r[0]), int(input.size(-2) * r[1]),
                       int(input.size(-1) * r[2])]
    return _fractional_max_pool(input, kernel_size, output_size, _random_samples, 3)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """3-d fractional max pooling (see :func:`fractional_max_pool3d_with_indices`)."""
    out = fractional_max_pool3d_with_indices(input, kernel_size, output_size, output_ratio,
                                             return_indices, _random_samples)
    return out if return_indices else out[0]


__all__ += ["fractional_max_pool2d", "fractional_max_pool2d_with_indices",
            "fractional_max_pool3d", "fractional_max_pool3d_with_indices"]


def _interp_source(in_size, out_size, align_corners, scale, cubic):
    """PyTorch's source coordinates (float64) of each output index along one dim."""
    import numpy as np
    i = np.arange(out_size, dtype=np.float64)
    if align_corners:
        ratio = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
        return ratio * i
    ratio = 1.0 / scale if (scale is not None and scale > 0) else in_size / out_size
    src = ratio * (i + 0.5) - 0.5
    return src if cubic else np.maximum(src, 0.0)


def _interp_matrix(in_size, out_size, align_corners, scale, mode, dtype, device):
    """The (out, in) matrix of 1-d linear or cubic interpolation (PyTorch's index rules,
    A = -0.75 cubic convolution with border clamping)."""
    import numpy as np
    mat = np.zeros((out_size, in_size), dtype=np.float64)
    rows = np.arange(out_size)
    if out_size > 0 and in_size > 0:
        src = _interp_source(in_size, out_size, align_corners, scale, mode == "cubic")
        if mode == "cubic":
            base = np.minimum(np.floor(src).astype(np.int64), in_size - 1)
            t = np.clip(src - base, 0.0, 1.0)
            a = -0.75

            def cc1(x):
                return ((a + 2) * x - (a + 3)) * x * x + 1

            def cc2(x):
                return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

            coeffs = [cc2(t + 1), cc1(t), cc1(1 - t), cc2(2 - t)]
            for j in range(4):
                np.add.at(mat, (rows, np.clip(base - 1 + j, 0, in_size - 1)), coeffs[j])
        elif out_size == in_size:
            mat[rows, rows] = 1.0  # linear modes copy a same-size dim, whatever the scale
        else:
            i0 = np.floor(src).astype(np.int64)
            i1 = i0 + (i0 < in_size - 1)
            lam1 = src - i0
            np.add.at(mat, (rows, i0), 1.0 - lam1)
            np.add.at(mat, (rows, i1), lam1)
    return _C.from_numpy(mat).to(device=device, dtype=dtype)


def _interp_separable(input, output_size, align_corners, scales, mode):
    """Interpolate the last ``len(output_size)`` dims with one matrix product per dim."""
    out = input
    nd = len(output_size)
    for k in range(nd):
        dim = input.ndim - nd + k
        mat = _interp_matrix(input.shape[dim], output_size[k], align_corners, scales[k],
                             mode, input.dtype, input.device)
        moved = out.movedim(dim, -1)
        out = (moved @ mat.t()).movedim(-1, dim)
    return out


__all__ += ["conv3d", "max_pool3d", "max_pool3d_with_indices", "avg_pool3d",
            "adaptive_avg_pool3d", "lp_pool1d", "lp_pool2d", "lp_pool3d"]


from ferrotorch.nn._functional_extra import (  # noqa: E402
    affine_grid,
    ctc_loss,
    embedding_bag,
    grid_sample,
    gumbel_softmax,
)

__all__ += ["gumbel_softmax", "embedding_bag", "affine_grid", "grid_sample", "ctc_loss"]

from ferrotorch.nn._functional_more import (  # noqa: E402
    celu_,
    channel_shuffle,
    elu_,
    gaussian_nll_loss,
    hardshrink,
    hardtanh_,
    hinge_embedding_loss,
    leaky_relu_,
    max_unpool1d,
    max_unpool2d,
    max_unpool3d,
    multi_margin_loss,
    multilabel_margin_loss,
    multilabel_soft_margin_loss,
    native_channel_shuffle,
    pdist,
    poisson_nll_loss,
    rrelu,
    rrelu_,
    selu_,
    soft_margin_loss,
    softshrink,
    threshold_,
    triplet_margin_with_distance_loss,
)

__all__ += [
    "poisson_nll_loss", "gaussian_nll_loss", "hinge_embedding_loss", "soft_margin_loss",
    "multilabel_soft_margin_loss", "multilabel_margin_loss", "multi_margin_loss",
    "triplet_margin_with_distance_loss", "hardshrink", "softshrink", "rrelu", "rrelu_",
    "threshold_", "hardtanh_", "elu_", "selu_", "celu_", "leaky_relu_", "max_unpool1d",
    "max_unpool2d", "max_unpool3d", "channel_shuffle", "native_channel_shuffle", "pdist",
]
