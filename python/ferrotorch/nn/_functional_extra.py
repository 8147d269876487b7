"""More of ``torch.nn.functional``, composed from ferrotorch tensor ops so autograd runs
through them: ``gumbel_softmax``, ``embedding_bag``, ``affine_grid``, ``grid_sample`` and
``ctc_loss``. They are re-exported by :mod:`ferrotorch.nn.functional`.
"""

import itertools
import math
import warnings

from ferrotorch import _C
from ferrotorch._api_extra import _dtype_name as _aten_type_name

Tensor = _C.Tensor

__all__ = ["gumbel_softmax", "embedding_bag", "affine_grid", "grid_sample", "ctc_loss"]

_NEG_INF = float("-inf")


def _const(value, like):
    """A 0-d constant in ``like``'s dtype and device."""
    return _C.tensor(value, dtype=like.dtype, device=like.device)


# ---------------------------------------------------------------------------- gumbel_softmax
def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    r"""Samples from the Gumbel-Softmax distribution: ``softmax((logits + g) / tau)`` with
    ``g ~ Gumbel(0, 1)``. With ``hard=True`` the result is the one-hot of its argmax in the
    forward pass, while gradients are those of the soft sample (straight-through:
    ``y_hard - y_soft.detach() + y_soft``)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    gumbels = -_C.empty_like(logits).exponential_().log()  # ~Gumbel(0, 1)
    gumbels = (logits + gumbels) / tau  # ~Gumbel(logits, tau)
    y_soft = gumbels.softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = _C.zeros_like(logits).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


# ---------------------------------------------------------------------------- embedding_bag
def _check_index_dtype(t, arg, name):
    if t.dtype not in (_C.int64, _C.int32):
        raise RuntimeError(
            f"Expected tensor for argument #{arg} '{name}' to have one of the following scalar "
            f"types: Long, Int; but got {t.type()} instead (while checking arguments for "
            "embedding_bag)"
        )


def embedding_bag(
    input,
    weight,
    offsets=None,
    max_norm=None,
    norm_type=2,
    scale_grad_by_freq=False,
    mode="mean",
    sparse=False,
    per_sample_weights=None,
    include_last_offset=False,
    padding_idx=None,
):
    r"""Sums, means or maxes of bags of embedding rows, without building the intermediate
    ``(num_indices, embedding_dim)`` lookup per bag.

    ``input`` is either 2-D ``(B, N)`` (``B`` bags of ``N`` indices; ``offsets`` must be
    ``None``) or 1-D with ``offsets`` giving the start of each bag (``include_last_offset``:
    ``offsets`` has one more element, the end of the last bag). Empty bags give zeros. Entries
    equal to ``padding_idx`` are left out of their bag (and of ``mean``'s count).
    ``per_sample_weights`` (same shape as ``input``) scale each row, ``mode='sum'`` only.
    Returns ``(B, embedding_dim)``."""
    from ferrotorch.nn import functional as F

    if weight.dtype == _C.int64 and input.is_floating_point():
        warnings.warn(
            "Argument order of nn.functional.embedding_bag was changed. Usage "
            "`embedding_bag(weight, input, ...)` is deprecated, and should now be "
            "`embedding_bag(input, weight, ...)`.",
            stacklevel=2,
        )
        weight, input = input, weight
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(
            f"embedding_bag: If per_sample_weights ({tuple(per_sample_weights.shape)}) is not "
            f"None, then it must have the same shape as the input ({tuple(input.shape)})"
        )
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.ndim}")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(
                "if input is 2D, then offsets has to be None, as input is treated is a "
                "mini-batch of fixed length sequences. However, found offsets of type "
                f"{type(offsets)}"
            )
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(
            f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}"
        )
    if mode == "max":
        if scale_grad_by_freq:
            raise ValueError("max mode does not support scaling the gradient by the frequency")
        if sparse:
            raise ValueError("max mode does not support sparse weights")
    elif mode not in ("sum", "mean"):
        raise ValueError("mode has to be one of sum, mean or max")
    if max_norm is not None:
        F._embedding_renorm_(weight, input, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
            "GitHub."
        )
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding_bag: scale_grad_by_freq and sparse are not supported")
    _check_index_dtype(input, 2, "indices")
    if offsets is not None:
        _check_index_dtype(offsets, 3, "offsets")
    num_weights, dim = weight.shape
    if padding_idx is not None:
        if not -num_weights <= padding_idx < num_weights:
            raise RuntimeError(
                f"padding_idx must be within the number of embeddings, -{num_weights} through "
                f"{num_weights - 1}, but got {padding_idx}"
            )
        padding_idx = padding_idx % num_weights
    if per_sample_weights is not None and per_sample_weights.dtype != weight.dtype:
        raise RuntimeError(
            f"embedding_bag: expected per_sample_weights to have dtype {weight.dtype}, "
            f"but got {per_sample_weights.dtype}"
        )

    dev = weight.device
    bag_len = None
    if input.ndim == 2:
        # B bags of N: the same as 1-D input with offsets 0, N, 2N, ... (PyTorch 2.13 gives B
        # bags with include_last_offset=True too: the end marker is appended, not a row).
        num_rows, row_len = input.shape
        offsets = _C.arange(num_rows + int(include_last_offset), device=dev) * row_len
        bag_len = row_len  # one block of full bags
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    indices = input.long()
    offsets = offsets.long()
    n_off = offsets.shape[0]
    if include_last_offset and n_off < 1:
        raise RuntimeError("include_last_offset: number of offset should be at least 1")
    if n_off > 0:
        first, last = int(offsets[0].item()), int(offsets[-1].item())
        if first != 0:
            raise RuntimeError(
                "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to "
                f"start from position 0. However, got {first}"
            )
        if last > indices.shape[0]:
            raise RuntimeError(
                f"offsets[-1] can not be greater than input's length {indices.shape[0]} but "
                f"got offsets[-1] of {last}"
            )
    if include_last_offset:
        # The last offset only marks the end: as in PyTorch (CPU), the last bag runs to the
        # end of the input even when that offset is smaller than the input's length.
        starts = offsets[:-1]
    else:
        starts = offsets
    num_bags = starts.shape[0]
    if num_bags == 0:
        indices = indices[:0]
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights[:0]
    # bag[i]: the bag of indices[i] (the last start <= i), one searchsorted for all.
    pos = _C.arange(indices.shape[0], device=dev)
    bag = _C.searchsorted(starts.contiguous(), pos, right=True) - 1

    n = indices.shape[0]
    if n:
        lo, hi = int(indices.min().item()), int(indices.max().item())
        if lo < 0 or hi >= num_weights:
            raise IndexError(
                "embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be "
                f"{lo if lo < 0 else hi}"
            )
    rows = F.embedding(indices, weight)  # (n, dim); its backward is one dense kernel
    valid = None if padding_idx is None else (indices != padding_idx)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.unsqueeze(1)
    if valid is not None:
        fill = _NEG_INF if mode == "max" else 0.0
        rows = _C.where(valid.unsqueeze(1), rows, _const(fill, rows))
    # bags of one length (2-D input): a reshape instead of a scatter
    fixed = bag_len is not None and bag_len > 0 and num_bags * bag_len == n
    if mode in ("sum", "mean"):
        if fixed:
            out = rows.reshape(num_bags, bag_len, dim).sum(1)
        else:
            out = _C.zeros(num_bags, dim, dtype=weight.dtype, device=dev).index_add(0, bag, rows)
        if mode == "mean":
            ones = _C.ones(n, dtype=weight.dtype, device=dev)
            if valid is not None:
                ones = valid.to(weight.dtype)
            if fixed:
                count = ones.reshape(num_bags, bag_len).sum(1)
            else:
                count = _C.zeros(num_bags, dtype=weight.dtype, device=dev).index_add(0, bag, ones)
            out = out / count.clamp(min=1.0).unsqueeze(1)
        return out
    # max: the rows as a (bags, longest bag, dim) block padded with -inf (padding entries
    # are -inf already), then one max over the bag axis; empty bags give zeros.
    if fixed:
        block = rows.reshape(num_bags, bag_len, dim)
    else:
        count = _C.zeros(num_bags, dtype=_C.int64, device=dev)
        if n:
            count = count.index_add(0, bag, _C.ones(n, dtype=_C.int64, device=dev))
        longest = int(count.max().item()) if num_bags else 0
        if longest == 0:
            return _C.zeros(num_bags, dim, dtype=weight.dtype, device=dev).index_add(
                0, bag, rows * 0.0
            )
        slot = _C.arange(n, device=dev) - starts.index_select(0, bag)
        block = _C.full((num_bags, longest, dim), _NEG_INF, dtype=weight.dtype, device=dev)
        block = block.index_put((bag, slot), rows)
    best = block.max(1)[0]
    return _C.where(best == _NEG_INF, _const(0.0, best), best)


# ---------------------------------------------------------------------------- affine_grid
def _warn_align_corners():
    warnings.warn(
        "Default grid_sample and affine_grid behavior has changed to align_corners=False since "
        "1.3.0. Please specify align_corners=True if the old behavior is desired. See the "
        "documentation of grid_sample for details.",
        stacklevel=3,
    )


def _linspace_from_neg_one(num_steps, align_corners, like):
    if num_steps <= 1:
        return _C.zeros(1, dtype=like.dtype, device=like.device)
    r = _C.linspace(-1.0, 1.0, num_steps, dtype=like.dtype, device=like.device)
    if not align_corners:
        r = r * ((num_steps - 1) / num_steps)
    return r


def affine_grid(theta, size, align_corners=None):
    r"""The sampling grid (``(N, H, W, 2)`` or ``(N, D, H, W, 3)``, coordinates in
    ``[-1, 1]``) of the affine maps ``theta`` (``(N, 2, 3)`` or ``(N, 3, 4)``) for an output of
    ``size`` ``(N, C, H, W)`` or ``(N, C, D, H, W)``; for use with :func:`grid_sample`."""
    if align_corners is None:
        _warn_align_corners()
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    given, size = size, [int(s) for s in size]  # messages print the size as given
    if len(size) == 4:
        if theta.ndim != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(
                f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {given}. "
                f"Got {theta.shape}."
            )
        spatial = size[-2:]
    elif len(size) == 5:
        if theta.ndim != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(
                f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {given}. "
                f"Got {theta.shape}."
            )
        spatial = size[-3:]
    else:
        raise NotImplementedError(
            "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
            f"respectively. Got size {given}."
        )
    if align_corners and min(spatial) == 1:
        warnings.warn(
            "Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
            "align_corners=True. This is not an issue for standard usage.",
            stacklevel=2,
        )
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {given}")
    n = size[0]
    if theta.shape[0] != n:
        # (ATen's message from the batched matmul of the base grid and theta.)
        k = len(size) - 1
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{n}, {k}] but got: [{theta.shape[0]}, {k}].")
    # base[..., k] is the coordinate along the k-th grid axis: x (W), y (H), z (D), then 1.
    nd = len(spatial)
    axes = [_linspace_from_neg_one(s, align_corners, theta) for s in reversed(spatial)]
    cols = []
    for k, ax in enumerate(axes):  # x varies along the last spatial dim, z along the first
        shape = [1] * nd
        shape[nd - 1 - k] = ax.shape[0]
        cols.append(ax.reshape(shape).expand(*spatial))
    cols.append(_C.ones(*spatial, dtype=theta.dtype, device=theta.device))
    base = _C.stack(cols, -1).reshape(1, -1, nd + 1)  # (1, prod(spatial), nd + 1)
    grid = base.matmul(theta.transpose(1, 2))  # (N, prod(spatial), nd)
    return grid.reshape(n, *spatial, nd)


# ---------------------------------------------------------------------------- grid_sample
def _grid_unnormalize(coord, size, align_corners):
    if align_corners:  # [-1, 1] -> [0, size - 1]
        return (coord + 1) * ((size - 1) / 2)
    return ((coord + 1) * size - 1) / 2  # [-1, 1] -> [-0.5, size - 0.5]


def _reflect_coordinates(coord, twice_low, twice_high):
    """Reflects ``coord`` by the borders ``twice_low / 2`` and ``twice_high / 2`` until it
    falls between them (differentiable: slope +-1)."""
    if twice_low == twice_high:  # a size-1 axis (align_corners=True): always 0
        return _C.zeros_like(coord)
    lo = twice_low / 2
    span = (twice_high - twice_low) / 2
    c = (coord - lo).abs()
    extra = c.fmod(span)
    flips = (c.detach() / span).floor()
    even = flips.fmod(2.0) == 0
    return _C.where(even, extra + lo, (span + lo) - extra)


def _compute_source(coord, size, padding_mode, align_corners):
    """Unnormalised source coordinate along one axis, after the padding rule; non-finite or
    huge coordinates become -100 (out of bounds) as in PyTorch."""
    coord = _grid_unnormalize(coord, size, align_corners)
    coord = _apply_padding(coord, size, padding_mode, align_corners)
    return _safe_coord(coord)


def _apply_padding(coord, size, padding_mode, align_corners):
    if padding_mode == "border":
        coord = coord.clamp(0.0, size - 1.0)
    elif padding_mode == "reflection":
        if align_corners:
            coord = _reflect_coordinates(coord, 0, 2 * (size - 1))
        else:
            coord = _reflect_coordinates(coord, -1, 2 * size - 1)
        coord = coord.clamp(0.0, size - 1.0)
    return coord


def _safe_coord(coord):
    ok = coord.isfinite().logical_and(coord.detach().abs() < 2.0**31 - 2)
    return _C.where(ok, coord, _const(-100.0, coord))


def _gather_taps(flat, strides, sizes, taps):
    """``flat`` (N, C, prod(sizes)); ``taps``: per spatial dim an integer-valued float tensor
    (N, P). Returns the values (N, C, P) and the in-bounds mask (N, P)."""
    n, c = flat.shape[0], flat.shape[1]
    inb = None
    lin = None
    for t, size, stride in zip(taps, sizes, strides):
        ok = (t >= 0).logical_and(t <= size - 1)
        inb = ok if inb is None else inb.logical_and(ok)
        term = t.clamp(0.0, size - 1.0).long() * stride
        lin = term if lin is None else lin + term
    p = lin.shape[1]
    vals = flat.gather(2, lin.unsqueeze(1).expand(n, c, p))
    return vals, inb


def _cubic_coeffs(t):
    a = -0.75

    def cc1(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def cc2(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [cc2(t + 1.0), cc1(t), cc1(1.0 - t), cc2(2.0 - t)]


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    r"""Samples ``input`` (``(N, C, H, W)`` or ``(N, C, D, H, W)``) at the locations ``grid``
    (``(N, Ho, Wo, 2)`` or ``(N, Do, Ho, Wo, 3)``, ``x, y[, z]`` in ``[-1, 1]``).

    ``mode``: ``'bilinear'`` (trilinear for 5-D), ``'nearest'`` or ``'bicubic'`` (tricubic
    for 5-D);
    ``padding_mode``: ``'zeros'``, ``'border'`` or ``'reflection'``. Differentiable with respect
    to ``input`` and (except ``'nearest'``) ``grid``; each corner is one gather over all output
    points."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(
            "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or "
            f"'bicubic', but got: '{mode}'"
        )
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(
            "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
            f"'reflection', but got: '{padding_mode}'"
        )
    if align_corners is None:
        _warn_align_corners()
        align_corners = False
    # ATen's checks, in its order: batch, grid's last dim, empty spatial dims, rank, dtype.
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(
            "grid_sampler(): expected grid and input to have same batch size, but got input "
            f"with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}"
        )
    nd = input.ndim - 2
    if grid.shape[-1] != nd:
        raise RuntimeError(
            f"grid_sampler(): expected grid to have size {nd} in last dimension, but got grid "
            f"with sizes {list(grid.shape)}"
        )
    for i in range(2, input.ndim):
        if input.shape[i] <= 0:
            raise RuntimeError(
                "grid_sampler(): expected input to have non-empty spatial dimensions, but "
                f"input has sizes {list(input.shape)} with dimension {i} being empty"
            )
    if input.ndim != grid.ndim or input.ndim not in (4, 5):
        want = 4 if input.ndim == 4 else 5
        raise RuntimeError(
            f"grid_sampler(): expected {want}D input and grid with same number of dimensions, "
            f"but got input with sizes {list(input.shape)} and grid with sizes "
            f"{list(grid.shape)}"
        )
    if input.dtype != grid.dtype:
        raise RuntimeError(f"expected scalar type {_aten_type_name(input.dtype)} but found "
                           f"{_aten_type_name(grid.dtype)}")
    if not input.is_floating_point():
        raise RuntimeError(f"grid_sampler(): expected a floating point input, got {input.dtype}")

    n, c = input.shape[0], input.shape[1]
    sizes = list(input.shape[2:])  # (D,) H, W
    out_spatial = list(grid.shape[1:-1])
    strides = [math.prod(sizes[k + 1 :]) for k in range(nd)]
    flat = input.reshape(n, c, math.prod(sizes))
    # coordinate along spatial dim k of the input (order D, H, W) is grid[..., nd - 1 - k]
    g = grid.reshape(n, math.prod(out_spatial), nd)
    raw = [g[:, :, nd - 1 - k] for k in range(nd)]
    if mode == "bicubic":
        coords = [_grid_unnormalize(r, s, align_corners) for r, s in zip(raw, sizes)]
        coords = [_safe_coord(x) for x in coords]
        base = [x.detach().floor() for x in coords]
        coeffs = [_cubic_coeffs(x - b) for x, b in zip(coords, base)]
        # the 4 integer taps per axis, each through the padding rule (as get_value_bounded)
        taps = [
            [
                _apply_padding(b + (k - 1), s, padding_mode, align_corners).detach().trunc()
                for k in range(4)
            ]
            for b, s in zip(base, sizes)
        ]
        out = None
        # One term per combination of taps ((D,) H, W): bicubic, or tricubic for 5-D input.
        for ks in itertools.product(range(4), repeat=nd):
            vals, inb = _gather_taps(flat, strides, sizes, [taps[a][k] for a, k in enumerate(ks)])
            w = math.prod(coeffs[a][k] for a, k in enumerate(ks))
            w = _C.where(inb, w, _const(0.0, coords[0]))
            term = vals * w.unsqueeze(1)
            out = term if out is None else out + term
        return out.reshape(n, c, *out_spatial)

    coords = [_compute_source(r, s, padding_mode, align_corners) for r, s in zip(raw, sizes)]
    if mode == "nearest":
        taps = [x.detach().round() for x in coords]
        vals, inb = _gather_taps(flat, strides, sizes, taps)
        out = _C.where(inb.unsqueeze(1), vals, _const(0.0, vals))
        if grid.requires_grad:
            # piecewise constant in the grid: connect it with a zero gradient, so that
            # grid.grad is zeros (as in PyTorch) rather than None; coords are finite here
            zero = None
            for x in coords:
                z = (x - x.detach()) * 0.0
                zero = z if zero is None else zero + z
            out = out + zero.unsqueeze(1)
        return out.reshape(n, c, *out_spatial)

    base = [x.detach().floor() for x in coords]
    frac = [x - b for x, b in zip(coords, base)]  # gradient to the grid flows through here
    out = None
    for corner in itertools.product((0, 1), repeat=nd):
        taps = [b + k for b, k in zip(base, corner)]
        vals, inb = _gather_taps(flat, strides, sizes, taps)
        w = None
        for f, k in zip(frac, corner):
            wk = f if k else 1.0 - f
            w = wk if w is None else w * wk
        w = _C.where(inb, w, _const(0.0, w))
        term = vals * w.unsqueeze(1)
        out = term if out is None else out + term
    return out.reshape(n, c, *out_spatial)


# ---------------------------------------------------------------------------- ctc_loss
def _lengths_list(lengths, name):
    if isinstance(lengths, Tensor):
        if lengths.is_floating_point() or lengths.dtype == _C.bool:
            raise RuntimeError(f"{name} must be integral")
        return [int(v) for v in lengths.reshape(-1).tolist()]
    if isinstance(lengths, int):
        return [int(lengths)]
    return [int(v) for v in lengths]


def _logsumexp_safe(terms):
    """log(sum(exp(t))) of same-shape tensors: -inf where all are -inf, with gradients that
    stay finite (zero) through such entries (no inf - inf, no log(0) in the backward)."""
    m = terms[0].detach()
    for t in terms[1:]:
        m = m.maximum(t.detach())
    dead = m == _NEG_INF
    m0 = _C.where(dead, _const(0.0, m), m)
    s = None
    for t in terms:
        e = (t - m0).exp()
        s = e if s is None else s + e
    # s >= 1 (the largest term) unless every term is -inf; there s = 0 becomes 1 and m = -inf
    return (s + dead.to(s.dtype)).log() + m


def _ctc_dims_error(got, arg, name, expected):
    return RuntimeError(
        f"Expected {expected}-dimensional tensor, but got {got}-dimensional tensor for argument "
        f"#{arg} '{name}' (while checking arguments for ctc_loss_allocate_outputs)"
    )


def ctc_loss(
    log_probs,
    targets,
    input_lengths,
    target_lengths,
    blank=0,
    reduction="mean",
    zero_infinity=False,
):
    r"""Connectionist Temporal Classification loss: ``-log p(target | log_probs)`` summed
    over all alignments, by the alpha (forward) recursion in log space, vectorised over the
    batch and the extended-label axis (a loop over time steps only); gradients come from
    autograd through the recursion.

    ``log_probs``: ``(T, N, C)`` or unbatched ``(T, C)`` log-probabilities (e.g. from
    ``log_softmax``); ``targets``: padded ``(N, S)`` or concatenated ``(sum(target_lengths),)``
    class indices (not ``blank``); ``input_lengths`` / ``target_lengths``: ``(N,)`` tensors,
    lists or ints. ``reduction='mean'`` divides each loss by its target length (at least 1)
    and averages over the batch; ``zero_infinity`` replaces infinite losses (impossible
    alignments) and their gradients by zero.

    Note: the gradient is the exact derivative with respect to ``log_probs``. PyTorch's
    kernel returns it plus ``exp(log_probs) * grad`` (a term that cancels once propagated
    through ``log_softmax``, so gradients with respect to the logits agree)."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    batched = log_probs.ndim == 3
    lp = log_probs if batched else log_probs.unsqueeze(1)
    if lp.ndim != 3:
        raise _ctc_dims_error(lp.ndim, 1, "log_probs", 3)
    if not lp.is_floating_point():
        raise RuntimeError(f"ctc_loss: expected a floating point log_probs, got {lp.dtype}")
    if not 1 <= targets.ndim <= 2:
        raise RuntimeError(
            f"Expected 1 to 2 dimensions, but got {targets.ndim}-dimensional tensor for "
            "argument #2 'targets' (while checking arguments for ctc_loss_allocate_outputs)"
        )
    if targets.is_floating_point():
        raise RuntimeError(f"ctc_loss: expected integer targets, got {targets.dtype}")
    in_lens = _lengths_list(input_lengths, "input_lengths")
    tg_lens = _lengths_list(target_lengths, "target_lengths")
    if lp.numel() == 0:
        raise RuntimeError("log_probs tensor must not be empty")
    t_max, n, num_labels = lp.shape
    if not 0 <= blank < num_labels:
        raise RuntimeError("blank must be in label range")
    if len(in_lens) != n:
        raise RuntimeError("input_lengths must be of size batch_size")
    if len(tg_lens) != n:
        raise RuntimeError("target_lengths must be of size batch_size")
    for v in tg_lens:
        if v < 0:
            raise RuntimeError(
                f"Expected target_lengths to have value at least 0, but got value {v} (while "
                "checking arguments for ctc_loss_allocate_outputs)"
            )
    l_max = max(tg_lens)
    if targets.ndim == 1:
        if targets.shape[0] != sum(tg_lens):
            raise RuntimeError(
                f"Expected tensor to have size {sum(tg_lens)} at dimension 0, but got size "
                f"{targets.shape[0]} for argument #2 'targets' (while checking arguments for "
                "ctc_loss_allocate_outputs)"
            )
    else:
        if targets.shape[0] != n:
            raise RuntimeError(
                f"Expected tensor to have size {n} at dimension 0, but got size "
                f"{targets.shape[0]} for argument #2 'targets' (while checking arguments for "
                "ctc_loss_allocate_outputs)"
            )
        if targets.shape[1] < l_max:
            raise RuntimeError(
                f"Expected tensor to have size at least {l_max} at dimension 1, but got size "
                f"{targets.shape[1]} for argument #2 'targets' (while checking arguments for "
                "ctc_loss_allocate_outputs)"
            )
    for v in in_lens:
        if v < 0:
            raise RuntimeError(
                f"Expected input_lengths to have value at least 0, but got value {v} (while "
                "checking arguments for ctc_loss_allocate_outputs)"
            )
        if v > t_max:
            raise RuntimeError(
                f"Expected input_lengths to have value at most {t_max}, but got value {v} "
                "(while checking arguments for ctc_loss_allocate_outputs)"
            )

    dev = lp.device
    tl = _C.tensor(tg_lens, dtype=_C.int64, device=dev)  # (N,)
    il = _C.tensor(in_lens, dtype=_C.int64, device=dev)
    # padded targets (N, l_max); entries past each target length are set to blank
    j = _C.arange(l_max, device=dev).unsqueeze(0)
    in_target = j < tl.unsqueeze(1)
    if targets.ndim == 1:
        starts = tl.cumsum(0) - tl
        idx = _C.where(in_target, starts.unsqueeze(1) + j, _C.tensor(0, device=dev))
        flat = targets.long().reshape(-1)
        tg = flat[idx.reshape(-1)].reshape(n, l_max) if l_max else idx
    else:
        tg = targets.long()[:, :l_max]
    tg = _C.where(in_target, tg, _C.tensor(blank, device=dev))
    if l_max:
        lo, hi = int(tg.min().item()), int(tg.max().item())
        if lo < 0 or hi >= num_labels:
            raise IndexError(
                f"ctc_loss: target {lo if lo < 0 else hi} is out of bounds for {num_labels} classes"
            )
    # extended labels l' = (blank, t1, blank, t2, ..., t_L, blank): (N, S), S = 2 l_max + 1
    s_len = 2 * l_max + 1
    blanks = _C.full((n, 1), blank, dtype=_C.int64, device=dev)
    ext = _C.stack([blanks.expand(n, l_max), tg], 2).reshape(n, 2 * l_max)
    ext = _C.cat([ext, blanks], 1)
    # the skip s-2 -> s is allowed where l'[s] != l'[s-2] (non-blank, differs from the last)
    skip = _C.zeros(n, s_len, dtype=_C.bool, device=dev)
    if s_len > 2:
        skip = _C.cat([skip[:, :2], ext[:, 2:] != ext[:, :-2]], 1)
    emit = lp.gather(2, ext.unsqueeze(0).expand(t_max, n, s_len))  # (T, N, S)

    s_idx = _C.arange(s_len, device=dev).unsqueeze(0)
    neg = _const(_NEG_INF, lp)
    start = (s_idx == 0).logical_or((s_idx == 1).logical_and(tl.unsqueeze(1) > 0))
    # one unbind node: indexing emit[t] at every step would back-propagate T full-size
    # (T, N, S) gradients (quadratic in T)
    emits = emit.unbind(0)
    alpha = _C.where(start, emits[0], neg)  # (N, S)
    skip_add = _C.where(skip, _const(0.0, lp), neg)  # 0 where the skip is allowed, else -inf
    neg2 = _C.full((n, 2), _NEG_INF, dtype=lp.dtype, device=dev)
    alphas = [alpha]
    for t in range(1, max(in_lens, default=0)):
        # alpha_t[s] = logsumexp(alpha[s], alpha[s-1], alpha[s-2] if skip[s]) + emit[t, s]
        ap = _C.cat([neg2, alpha], 1)
        alpha = _logsumexp_safe([alpha, ap[:, 1:-1], ap[:, :-2] + skip_add]) + emits[t]
        alphas.append(alpha)
    # each sequence's alphas at its last frame, T_n - 1
    alpha_all = _C.stack(alphas, 0)  # (T', N, S)
    t_last = (il - 1).clamp(min=0).clamp(max=len(alphas) - 1)
    alpha = alpha_all.gather(0, t_last.reshape(1, n, 1).expand(1, n, s_len)).squeeze(0)
    # log-likelihood: logsumexp of alpha[T_n - 1] at s = 2 L_n and s = 2 L_n - 1 (if L_n > 0)
    last = alpha.gather(1, (2 * tl).unsqueeze(1)).squeeze(1)
    prev = alpha.gather(1, (2 * tl - 1).clamp(min=0).unsqueeze(1)).squeeze(1)
    prev = _C.where(tl > 0, prev, neg)
    loss = -_logsumexp_safe([last, prev])
    # no input frames: the empty alignment matches only an empty target
    empty_val = _C.where(tl == 0, _const(0.0, lp), _const(math.inf, lp))
    loss = _C.where(il == 0, empty_val, loss)
    if zero_infinity:
        loss = _C.where(loss == math.inf, _const(0.0, loss), loss)
    if reduction == "mean":
        return (loss / tl.to(loss.dtype).clamp(min=1.0)).mean()
    if reduction == "sum":
        return loss.sum()
    return loss if batched else loss.squeeze(0)
