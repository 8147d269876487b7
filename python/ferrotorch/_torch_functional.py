"""The ``torch.*`` spellings of ``nn.functional`` ops and of ATen's ``native_*`` functions:
``torch.kl_div``, ``torch.binary_cross_entropy_with_logits`` & co. (int ``reduction`` enum),
``torch.embedding_bag`` (with its four outputs), ``torch.instance_norm``, ``torch.grid_sampler``,
``torch.affine_grid_generator``, ``torch.convolution``, ``torch.conv_tbc``,
``torch.native_dropout/_batch_norm/_group_norm/_channel_shuffle``, the RNN cell functions,
``torch.frobenius_norm/nuclear_norm/norm_except_dim``, ``torch.segment_reduce`` and the removed
``torch.matrix_rank``.

Signatures follow ATen's schemas (positional order, int enums). Each op is composed from
differentiable ferrotorch ops, so autograd flows through the result that PyTorch
differentiates; auxiliary outputs (saved statistics, masks, bag bookkeeping) carry no
history, as in PyTorch."""

import builtins
import math
import warnings

import ferrotorch as _ft
from ferrotorch import _C
from ferrotorch._export import exporter

Tensor = _C.Tensor

__all__ = []


_export = exporter(__all__)


def _F():  # noqa: N802
    return _ft.nn.functional


def _reduction(fn, reduction):
    """ATen's ``Reduction`` enum as ``nn.functional``'s string: 1 mean, 2 sum, anything else
    leaves the loss unreduced (as ``apply_loss_reduction``)."""
    if isinstance(reduction, bool) or not isinstance(reduction, int):
        raise TypeError(f"{fn}(): argument 'reduction' must be int, not "
                        f"{type(reduction).__name__}")
    return {1: "mean", 2: "sum"}.get(reduction, "none")


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


# ------------------------------------------------------------------ losses
# PyTorch's Python bindings of these ATen losses parse the schema default
# ``reduction=at::Reduction::Mean`` as 0, so an omitted ``reduction`` leaves the loss
# unreduced (``torch.kl_div(a, b)`` is elementwise); the defaults below reproduce that.


@_export
def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=0):
    """``torch.binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction)``
    with ATen's int ``reduction`` (0 none, 1 mean, 2 sum)."""
    r = _reduction("binary_cross_entropy_with_logits", reduction)
    return _F().binary_cross_entropy_with_logits(input, target, weight=weight, reduction=r,
                                                 pos_weight=pos_weight)


@_export
def kl_div(input, target, reduction=0, *, log_target=False):
    """``torch.kl_div``: pointwise ``target * (log target - input)``, reduced by the int
    ``reduction`` (plain mean over all elements; no ``batchmean`` warning, as ATen)."""
    r = _reduction("kl_div", reduction)
    loss = _F().kl_div(input, target, reduction="none", log_target=log_target)
    return _reduce(loss, r)


@_export
def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    r = _reduction("cosine_embedding_loss", reduction)
    return _F().cosine_embedding_loss(input1, input2, target, margin=margin, reduction=r)


@_export
def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    r = _reduction("margin_ranking_loss", reduction)
    return _F().margin_ranking_loss(input1, input2, target, margin=margin, reduction=r)


@_export
def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    r = _reduction("hinge_embedding_loss", reduction)
    return _F().hinge_embedding_loss(input, target, margin=margin, reduction=r)


@_export
def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    """``torch.poisson_nll_loss``: every argument is required, as in ATen."""
    r = _reduction("poisson_nll_loss", reduction)
    return _F().poisson_nll_loss(input, target, log_input=log_input, full=full, eps=eps,
                                 reduction=r)


@_export
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False,
                        reduction=0):
    r = _reduction("triplet_margin_loss", reduction)
    return _F().triplet_margin_loss(anchor, positive, negative, margin=margin, p=p, eps=eps,
                                    swap=swap, reduction=r)


@_export
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0,
             zero_infinity=False):
    """``torch.ctc_loss``; ``reduction=1`` divides each loss by its target length before the
    mean, as ``F.ctc_loss(reduction='mean')``."""
    r = _reduction("ctc_loss", reduction)
    return _F().ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=blank,
                         reduction=r, zero_infinity=zero_infinity)


# ------------------------------------------------------------------ embedding_bag
_BAG_MODES = {0: "sum", 1: "mean", 2: "max"}


@_export
def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """``torch.embedding_bag`` -> ``(output, offset2bag, bag_size, max_indices)``.

    ``output`` is ``F.embedding_bag``'s (differentiable w.r.t. ``weight`` and
    ``per_sample_weights``); the other three are the CPU kernel's bookkeeping: the bag of each
    index (empty on the float32 ``mode=0`` fast path), the non-padding count per bag (zeros
    for ``mode=0``) and, for ``mode=2``, the weight row that won each feature (for ``mode=1``
    the bag sizes again, zeros for ``mode=0``)."""
    if mode not in _BAG_MODES:
        raise RuntimeError("`mode` must be sum, mean, or max.")
    if not isinstance(offsets, Tensor):
        raise TypeError("embedding_bag(): argument 'offsets' (position 3) must be Tensor, not "
                        f"{type(offsets).__name__}")
    if indices.dim() != 1:
        raise ValueError(f"input has to be 1D Tensor, but got Tensor of dimension "
                         f"{indices.dim()}")
    num_rows = weight.shape[0]
    if padding_idx is not None and padding_idx < 0:
        padding_idx += num_rows
    out = _F().embedding_bag(indices, weight, offsets, scale_grad_by_freq=scale_grad_by_freq,
                             mode=_BAG_MODES[mode], sparse=sparse,
                             per_sample_weights=per_sample_weights,
                             include_last_offset=include_last_offset, padding_idx=padding_idx)
    idx = indices.long().tolist()
    starts = offsets.long().tolist()
    n = len(idx)
    nbags = len(starts) - 1 if include_last_offset else len(starts)
    # The last bag runs to the end of ``indices`` (also with ``include_last_offset``, whose
    # final offset the CPU kernel does not use as a bound).
    bounds = [(starts[b], starts[b + 1] if b + 1 < nbags else n) for b in range(nbags)]
    i64 = dict(dtype=_C.int64, device=weight.device)
    # The CPU kernel's fast path (sum of float32/16-bit rows, no padding_idx) leaves
    # offset2bag empty; every other case records the bag of each index.
    fast = weight.dtype in (_C.float32, _C.float16, _C.bfloat16)
    if mode == 0 and padding_idx is None and fast:
        offset2bag = _C.zeros(0, **i64)
    else:
        bag_of = [0] * n
        for b, (s, e) in enumerate(bounds):
            for i in range(s, e):
                bag_of[i] = b
        offset2bag = _C.tensor(bag_of, **i64) if n else _C.zeros(0, **i64)
    if mode == 0:  # one (unused) entry per offset, also the final one
        zeros = _C.zeros(len(starts), **i64)
        return out, offset2bag, zeros, zeros.clone()
    sizes = [builtins.sum(1 for i in range(s, e) if idx[i] != padding_idx) for s, e in bounds]
    bag_size = _C.tensor(sizes, **i64) if nbags else _C.zeros(0, **i64)
    if mode == 1:
        return out, offset2bag, bag_size, bag_size.clone()
    dim = weight.shape[1]
    rows = []
    with _ft.no_grad():
        for s, e in bounds:
            members = [idx[i] for i in range(s, e) if idx[i] != padding_idx]
            if not members:
                rows.append([0] * dim)
                continue
            sel = _C.tensor(members, **i64)
            win = weight.index_select(0, sel).argmax(0)  # first maximum, as the CPU kernel
            rows.append(sel.index_select(0, win).tolist())
    max_indices = _C.tensor(rows, **i64) if nbags else _C.zeros(0, dim, **i64)
    return out, offset2bag, bag_size, max_indices


# ------------------------------------------------------------------ normalization
@_export
def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
                  eps, cudnn_enabled):
    """``torch.instance_norm`` (ATen order: affine parameters before the running stats).
    ``cudnn_enabled`` only picks a backend in PyTorch and is ignored."""
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("Expected running_mean and running_var to be defined when "
                           "use_input_stats is false")
    return _F().instance_norm(input, running_mean, running_var, weight=weight, bias=bias,
                              use_input_stats=use_input_stats, momentum=momentum, eps=eps)


def _channel_stats(input, dims, eps):
    """Per-channel mean and ``1/sqrt(biased var + eps)`` over ``dims``, without history."""
    with _ft.no_grad():
        x = input.detach()
        if not x.dtype.is_floating_point:
            x = x.to(_C.get_default_dtype())
        mean = x.mean(dim=dims)
        var = ((x - x.mean(dim=dims, keepdim=True)) ** 2).mean(dim=dims)
        return mean.to(input.dtype), (var + eps).rsqrt().to(input.dtype)


@_export
def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """``torch.native_batch_norm`` -> ``(output, save_mean, save_invstd)``: the batch
    statistics when ``training`` (the running stats are updated in place), empty tensors in
    evaluation mode (as the CPU kernel)."""
    out = _F().batch_norm(input, running_mean, running_var, weight=weight, bias=bias,
                          training=training, momentum=momentum, eps=eps)
    if not training:
        empty = _C.zeros(0, dtype=input.dtype, device=input.device)
        return out, empty, empty.clone()
    dims = (0,) + tuple(range(2, input.dim()))
    mean, invstd = _channel_stats(input, dims, eps)
    return out, mean, invstd


@_export
def native_group_norm(input, weight, bias, N, C, HxW, group, eps):  # noqa: N803 (ATen names)
    """``torch.native_group_norm`` -> ``(output, mean, rstd)`` with ``mean``/``rstd`` of shape
    ``(N, group)``."""
    if input.numel() != N * C * HxW:
        raise RuntimeError("Expected X.numel() == N * C * HxW to be true, but got false.")
    if C % group != 0:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={group}")
    out = _F().group_norm(input, group, weight=weight, bias=bias, eps=eps)
    mean, rstd = _channel_stats(input.reshape(N, group, -1), (2,), eps)
    return out, mean, rstd


@_export
def native_channel_shuffle(input, groups):
    return _F().native_channel_shuffle(input, groups)


@_export
def native_dropout(input, p, train):
    """``torch.native_dropout(input, p, train)`` -> ``(output, mask)``; ``mask`` is a bool
    tensor of the kept elements (all True when not training; ``train=None`` means train)."""
    if train is None or train:
        if not 0 <= 1 - p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={1 - p}")
        if p == 1:
            mask = _C.zeros(tuple(input.shape), dtype=_C.bool, device=input.device)
            return input * mask.to(input.dtype), mask
        mask = _C.rand(tuple(input.shape), device=input.device) < (1 - p)
        return input * mask.to(input.dtype) * (1.0 / (1 - p)), mask
    return input.clone(), _C.ones(tuple(input.shape), dtype=_C.bool, device=input.device)


# ------------------------------------------------------------------ sampling grids
_INTERP = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


def _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners, dims=None):
    nd = input.dim()
    if dims is not None and (nd != dims or grid.dim() != dims):
        raise RuntimeError(f"grid_sampler(): expected {dims}D input and grid with same number "
                           f"of dimensions, but got input with sizes {list(input.shape)} and "
                           f"grid with sizes {list(grid.shape)}")
    if grid.dim() != nd or nd not in (4, 5):
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number "
                           f"of dimensions, but got input with sizes {list(input.shape)} and "
                           f"grid with sizes {list(grid.shape)}")
    if grid.shape[-1] != nd - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {nd - 2} in last "
                           f"dimension, but got grid with sizes {list(grid.shape)}")
    if interpolation_mode not in _INTERP:
        raise RuntimeError(f"grid_sampler(): expected interpolation_mode to be 0 (bilinear), "
                           f"1 (nearest) or 2 (bicubic), but got {interpolation_mode}")
    if padding_mode not in _PADDING:
        raise RuntimeError(f"grid_sampler(): expected padding_mode to be 0 (zeros), 1 (border) "
                           f"or 2 (reflection), but got {padding_mode}")
    return _F().grid_sample(input, grid, mode=_INTERP[interpolation_mode],
                            padding_mode=_PADDING[padding_mode],
                            align_corners=bool(align_corners))


@_export
def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """``torch.grid_sampler``: ``F.grid_sample`` with ATen's int modes (interpolation 0
    bilinear, 1 nearest, 2 bicubic; padding 0 zeros, 1 border, 2 reflection)."""
    return _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


@_export
def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    return _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners, 4)


@_export
def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    return _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners, 5)


@_export
def affine_grid_generator(theta, size, align_corners):
    return _F().affine_grid(theta, list(size), align_corners=bool(align_corners))


# ------------------------------------------------------------------ convolution
def _int_list(fn, name, pos, value, k):
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be tuple of ints, not "
                        f"{type(value).__name__}")
    value = [int(v) for v in value]
    if len(value) == 1:
        return value * k
    if len(value) != k:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {k} "
                           f"values to match the convolution dimensions, but got "
                           f"{name}={value}")
    return value


@_export
def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                groups):
    """``torch.convolution``: ATen's generic (transposed) convolution, dispatched to
    ``F.conv{1,2,3}d`` / ``F.conv_transpose{1,2,3}d`` by the weight's rank. The int-list
    arguments may hold one value for every spatial dimension."""
    k = weight.dim() - 2
    if k not in (1, 2, 3):
        raise RuntimeError(f"weight should have at least three dimensions and at most five, "
                           f"but got weight of size {list(weight.shape)}")
    if input.dim() != weight.dim():
        raise RuntimeError(f"Expected {weight.dim()}-dimensional input for {weight.dim()}-"
                           f"dimensional weight {list(weight.shape)}, but got {input.dim()}-"
                           f"dimensional input of size {list(input.shape)} instead")
    stride = _int_list("convolution", "stride", 4, stride, k)
    padding = _int_list("convolution", "padding", 5, padding, k)
    dilation = _int_list("convolution", "dilation", 6, dilation, k)
    output_padding = _int_list("convolution", "output_padding", 8, output_padding, k)
    F = _F()  # noqa: N806
    if transposed:
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[k - 1]
        return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)
    if builtins.any(output_padding):
        raise RuntimeError("output_padding is only supported for transposed convolutions")
    fn = (F.conv1d, F.conv2d, F.conv3d)[k - 1]
    return fn(input, weight, bias, stride, padding, dilation, groups)


@_export
def conv_tbc(input, weight, bias, pad=0):
    """``torch.conv_tbc``: a 1-D convolution over time-major input ``(T, B, C_in)`` with
    weight ``(K, C_in, C_out)`` and bias ``(C_out,)`` -> ``(T + 2*pad - K + 1, B, C_out)``."""
    if not isinstance(bias, Tensor):
        raise TypeError("conv_tbc(): argument 'bias' (position 3) must be Tensor, not "
                        f"{type(bias).__name__}")
    if input.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, "
                           "out_channels.")
    if bias.dim() != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    out = _F().conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, 1, pad)
    return out.permute(2, 0, 1)


# ------------------------------------------------------------------ RNN cells
def _check_cell(input, hx, w_ih, hidden):
    if input.dim() != 2:
        raise RuntimeError(f"Expected 2D input (batch x feature), but got {input.dim()}D input")
    if input.shape[1] != w_ih.shape[1]:
        raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected "
                           f"{w_ih.shape[1]}")
    for i, h in enumerate(hx):
        name = "hx" if len(hx) == 1 else f"hx[{i}]"
        if h.dim() != 2 or h.shape[0] != input.shape[0]:
            raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden{i} "
                               f"batch size {h.shape[0] if h.dim() else 0}")
        if h.shape[1] != hidden:
            raise RuntimeError(f"{name} has inconsistent hidden_size: got {h.shape[1]}, "
                               f"expected {hidden}")


def _gates(input, hx, w_ih, w_hh, b_ih, b_hh):
    g = input.matmul(w_ih.t()) + hx.matmul(w_hh.t())
    if b_ih is not None:
        g = g + b_ih
    if b_hh is not None:
        g = g + b_hh
    return g


@_export
def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """``tanh(input @ w_ih^T + b_ih + hx @ w_hh^T + b_hh)``."""
    _check_cell(input, (hx,), w_ih, w_hh.shape[1])
    return _gates(input, hx, w_ih, w_hh, b_ih, b_hh).tanh()


@_export
def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    _check_cell(input, (hx,), w_ih, w_hh.shape[1])
    return _gates(input, hx, w_ih, w_hh, b_ih, b_hh).relu()


@_export
def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step, ``hx = (h, c)``, gates ``i, f, g, o`` -> ``(h', c')``."""
    if len(hx) != 2:
        raise RuntimeError("lstm_cell expects two hidden states")
    h, c = hx
    _check_cell(input, (h, c), w_ih, w_hh.shape[1])
    i, f, g, o = _gates(input, h, w_ih, w_hh, b_ih, b_hh).chunk(4, 1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c.tanh(), c


@_export
def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step (gates ``r, z, n``; ``b_hh``'s ``n`` part sits inside ``r * (...)``)."""
    _check_cell(input, (hx,), w_ih, w_hh.shape[1])
    gi = input.matmul(w_ih.t())
    gh = hx.matmul(w_hh.t())
    if b_ih is not None:
        gi = gi + b_ih
    if b_hh is not None:
        gh = gh + b_hh
    i_r, i_z, i_n = gi.chunk(3, 1)
    h_r, h_z, h_n = gh.chunk(3, 1)
    r = (i_r + h_r).sigmoid()
    z = (i_z + h_z).sigmoid()
    n = (i_n + r * h_n).tanh()
    return n + z * (hx - n)


# ------------------------------------------------------------------ norms
def _deprecated_norm(name, replacement):
    warnings.warn(f"at::{name} is deprecated and it is just left for JIT compatibility. It will "
                  f"be removed in a future PyTorch release. Please use `{replacement}` instead",
                  UserWarning, stacklevel=3)


@_export
def frobenius_norm(input, dim, keepdim=False):
    """``torch.frobenius_norm(input, dim, keepdim=False)`` (deprecated in PyTorch):
    ``linalg.vector_norm(input, 2, dim, keepdim)`` over at most two dimensions."""
    _deprecated_norm("frobenius_norm", "linalg.vector_norm(A, 2., dim, keepdim)")
    dims = [dim] if isinstance(dim, int) else list(dim)
    if len(dims) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dims)} dimensions "
                           "instead.")
    return _ft.linalg.vector_norm(input, 2, dim=tuple(dims) if dims else None, keepdim=keepdim)


@_export
def nuclear_norm(input, dim=None, keepdim=False):
    """``torch.nuclear_norm(input, keepdim=False)`` over the last two dimensions, or
    ``torch.nuclear_norm(input, dim, keepdim=False)`` (deprecated in PyTorch): the sum of the
    singular values."""
    _deprecated_norm("nuclear_norm", "linalg.matrix_norm(A, 'nuc', dim, keepdim)")
    if isinstance(dim, bool):  # the (input, keepdim) overload
        dim, keepdim = None, dim
    if input.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    dim = (-2, -1) if dim is None else tuple(dim)
    return _ft.linalg.matrix_norm(input, "nuc", dim=dim, keepdim=keepdim)


@_export
def norm_except_dim(v, pow=2, dim=0):  # noqa: A002 (ATen's name)
    """The ``pow``-norm of ``v`` over every dimension but ``dim``, shaped to broadcast
    against ``v`` (``dim=-1``: the norm of the whole tensor), as weight normalisation uses."""
    if dim == -1:
        return _ft.linalg.vector_norm(v, pow)
    if not 0 <= dim < v.dim():
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-v.dim()}, {v.dim() - 1}], but got {dim})")
    shape = [1] * v.dim()
    shape[dim] = v.shape[dim]
    rows = v.movedim(dim, 0).reshape(v.shape[dim], -1)
    return _ft.linalg.vector_norm(rows, pow, dim=1).reshape(shape)


@_export
def matrix_rank(input, tol=None, symmetric=False, *, out=None):
    """Removed in PyTorch 1.9 (the name is kept and raises): use ``linalg.matrix_rank``."""
    raise RuntimeError("This function was deprecated since version 1.9 and is now removed.\n"
                       "Please use the `torch.linalg.matrix_rank` function instead. The "
                       "parameter 'symmetric' was renamed in `torch.linalg.matrix_rank()` to "
                       "'hermitian'.")


# ------------------------------------------------------------------ segment_reduce
_SEGMENT_OPS = {"sum", "prod", "mean", "max", "min", "amax", "amin"}


def _segment_1d(rows, lengths, reduce, initial):
    """Reduce consecutive segments of ``rows`` (segments along dim 0)."""
    out, start = [], 0
    for n in lengths:
        seg = rows.narrow(0, start, n)
        start += n
        out.append(_segment_one(seg, reduce, initial, rows))
    if not out:
        return rows.new_zeros((0,) + tuple(rows.shape[1:]))
    return _C.stack(out, 0)


def _segment_one(seg, reduce, initial, like):
    n = seg.shape[0]
    shape = tuple(like.shape[1:])
    if reduce in ("sum", "mean"):
        total = seg.sum(0) if n else like.new_zeros(shape)
        if initial is not None:
            total = total + initial
        if reduce == "sum":
            return total
        if n == 0:  # no elements: the initial value, else NaN
            return like.new_full(shape, math.nan if initial is None else float(initial))
        return total / n
    if reduce == "prod":
        r = seg.prod(0) if n else like.new_ones(shape)
        return r * initial if initial is not None else r
    big = reduce in ("max", "amax")
    if n == 0:
        fill = initial if initial is not None else (-math.inf if big else math.inf)
        return like.new_full(shape, float(fill))
    r = seg.amax(0) if big else seg.amin(0)
    if initial is not None:
        bound = like.new_full(shape, float(initial))
        r = r.maximum(bound) if big else r.minimum(bound)
    return r


@_export
def segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0,
                   unsafe=False, initial=None):
    """``torch.segment_reduce``: reduce consecutive segments of ``data`` along ``axis``
    (segments given by ``lengths`` or ``offsets``; ``reduce`` is sum, prod, mean, max/amax
    or min/amin). Empty segments give ``initial`` when set, else the op's identity (NaN for
    mean); with ``initial`` a mean averages ``initial`` into the sum but divides by the
    segment length, as PyTorch's kernel. Differentiable w.r.t. ``data``."""
    if reduce not in _SEGMENT_OPS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    if indices is not None and lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    if not data.dtype.is_floating_point:
        raise NotImplementedError(f'"_segment_reduce_cpu" not implemented for '
                                  f"'{str(data.dtype).split('.')[-1]}'")
    if lengths is None:
        lengths = offsets.narrow(-1, 1, offsets.shape[-1] - 1) - offsets.narrow(
            -1, 0, offsets.shape[-1] - 1)
    axis = axis % data.dim() if data.dim() else 0
    if lengths.dim() - 1 != axis:
        raise RuntimeError("segment_reduce(): Expected axis to be the last dimension of "
                           "lengths but got axis=" + str(axis))
    lens = lengths.long().reshape(-1, lengths.shape[-1]).tolist()
    if not unsafe:
        if builtins.any(n < 0 for row in lens for n in row):
            raise RuntimeError("lengths contains negative value!")
        if builtins.any(builtins.sum(row) != data.shape[axis] for row in lens):
            raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to "
                               "sum to data.size(lengths.dim()-1) when !unsafe.")
    lead = tuple(data.shape[:axis])
    moved = data.reshape((-1,) + tuple(data.shape[axis:])) if lead else data.unsqueeze(0)
    outs = [_segment_1d(moved[i], lens[i], reduce, initial) for i in range(len(lens))]
    return _C.stack(outs, 0).reshape(lead + tuple(outs[0].shape))
