"""Memory formats: ``torch.memory_format`` and its four values (``contiguous_format``,
``channels_last``, ``channels_last_3d``, ``preserve_format``), ``torch.layout``/``strided``,
and the ``memory_format=`` argument of ``Tensor.contiguous``/``is_contiguous``/``to``/``clone``,
the ``*_like`` factories and ``torch.empty``; also ``torch.empty_permuted``.

A channels-last tensor is a strided view: ``x.permute(0, 2, 3, 1).contiguous()`` permuted back
has PyTorch's NHWC strides exactly (size-0 dimensions count as 1, as in PyTorch). Everything
that reads a strided tensor therefore works on it unchanged, and autograd flows through the
permutes. Native ops return row-major results where PyTorch would propagate the input's
format; the values are the same."""

import ferrotorch as _ft
from ferrotorch import _C

Tensor = _C.Tensor

__all__ = ["memory_format", "contiguous_format", "channels_last", "channels_last_3d",
           "preserve_format", "layout", "strided", "empty_permuted"]


class _NamedConstant:
    """A named torch constant: prints as ``torch.<name>`` and pickles by name."""

    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return "torch." + self._name

    def __reduce__(self):
        return (_lookup, (self._name,))


class memory_format(_NamedConstant):  # noqa: N801 (PyTorch's name)
    """A memory format (``torch.memory_format``); its four instances are module constants."""

    __slots__ = ()


class layout(_NamedConstant):  # noqa: N801 (PyTorch's name)
    """A tensor layout (``torch.layout``); ``torch.strided`` is the only one here."""

    __slots__ = ()


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")
strided = layout("strided")

# Public as ``ferrotorch.memory_format``/``ferrotorch.layout`` (PyTorch: ``torch.memory_format``).
memory_format.__module__ = layout.__module__ = "ferrotorch"

_BY_NAME = {"contiguous_format": contiguous_format, "channels_last": channels_last,
            "channels_last_3d": channels_last_3d, "preserve_format": preserve_format,
            "strided": strided}


def _lookup(name):
    return _BY_NAME[name]


# ------------------------------------------------------------------ stride predicates
_ORDER = {4: (1, 3, 2, 0), 5: (1, 4, 3, 2, 0)}


def _check_format(fmt):
    if fmt is not None and not isinstance(fmt, memory_format):
        raise TypeError(f"memory_format must be torch.memory_format, not {type(fmt).__name__}")


def _rank_check(t, fmt):
    if fmt is channels_last and t.dim() != 4:
        raise RuntimeError("required rank 4 tensor to use channels_last format")
    if fmt is channels_last_3d and t.dim() != 5:
        raise RuntimeError("required rank 5 tensor to use channels_last_3d format")


def _is_cl_contiguous(sizes, strides):
    """PyTorch's ``compute_channels_last_contiguous_{2,3}d``."""
    order = _ORDER.get(len(sizes))
    if order is None:
        return False
    expected = 1
    for d in order:
        if sizes[d] != 1:
            if strides[d] != expected:
                return False
            expected *= sizes[d]
    return True


def _strides_like_cl(sizes, strides):
    """PyTorch's ``is_channels_last_strides_{2,3}d_s{4,5}`` (``suggest_memory_format``)."""
    order = _ORDER.get(len(sizes))
    if order is None or strides[1] == 0:
        return False
    lo = 0
    for d in order:
        if sizes[d] == 0 or strides[d] < lo:
            return False
        if d == 0 and lo == strides[1]:
            return False
        lo = strides[d]
        if sizes[d] > 1:
            lo *= sizes[d]
    return True


def _non_overlapping_and_dense(sizes, strides):
    n = len(sizes)
    if n == 1:
        return sizes[0] < 2 or strides[0] == 1
    perm = sorted(range(n), key=lambda d: (sizes[d] < 2, strides[d] if sizes[d] >= 2 else 0))
    need = 1
    for d in perm:
        if sizes[d] < 2:
            return True
        if strides[d] != need:
            return False
        need *= sizes[d]
    return True


def _suggest(t):
    sizes, strides = tuple(t.shape), t.stride()
    if _strides_like_cl(sizes, strides):
        return channels_last if len(sizes) == 4 else channels_last_3d
    return contiguous_format


# ------------------------------------------------------------------ re-striding copies
def _inverse(perm):
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return tuple(inv)


def _format_strides(sizes, fmt):
    """PyTorch's strides for ``sizes`` in ``fmt`` (size-0 dimensions count as 1)."""
    n = len(sizes)
    strides, acc = [0] * n, 1
    for d in (range(n - 1, -1, -1) if fmt is contiguous_format else _ORDER[n]):
        strides[d] = acc
        acc *= max(sizes[d], 1)
    return tuple(strides)


def _to_format(t, fmt, force_copy):
    """``t``'s values laid out in ``fmt`` (contiguous or channels-last) with PyTorch's exact
    strides: a new tensor when ``force_copy``, else ``t`` itself when it already is in that
    format (``is_contiguous(memory_format=fmt)``)."""
    sizes = tuple(t.shape)
    if fmt is contiguous_format:
        if not force_copy:
            return _orig_contiguous(t)
        out = _orig_clone(t)
        target = _format_strides(sizes, fmt)
        return out if out.stride() == target else out.as_strided(sizes, target)
    _rank_check(t, fmt)
    if not force_copy and _is_cl_contiguous(sizes, t.stride()):
        return t
    return _with_strides(t, sizes, _format_strides(sizes, fmt))


def _with_strides(t, sizes, strides):
    """A copy of ``t`` (same shape) whose strides are exactly ``strides``, which describe a
    non-overlapping dense layout."""
    n = len(sizes)
    if not n:
        return _orig_clone(t)
    perm = sorted(range(n), key=lambda d: -strides[d])  # outermost first; ties keep order
    buf = _orig_clone(t.permute(*perm))
    out = buf.permute(*_inverse(perm))
    if out.stride() != tuple(strides):  # size-1 dimensions: set their strides exactly
        out = buf.as_strided(tuple(sizes), tuple(strides))
    return out


def _preserve_copy(t):
    """``clone(memory_format=torch.preserve_format)``: same strides when ``t`` is dense and
    non-overlapping, else the suggested format (channels-last or contiguous)."""
    if _orig_is_contiguous(t):
        out = _orig_clone(t)
        strides = t.stride()
        return out if out.stride() == strides else out.as_strided(tuple(t.shape), strides)
    sizes, strides = tuple(t.shape), t.stride()
    if _non_overlapping_and_dense(sizes, strides):
        return _with_strides(t, sizes, strides)
    return _to_format(t, _suggest(t), True)


def _like_layout(result, src, fmt):
    """Lay ``result`` (fresh, contiguous, ``src``'s shape) out as ``*_like(src, fmt)`` would."""
    _check_format(fmt)
    if fmt is None or fmt is preserve_format:
        sizes, strides = tuple(src.shape), src.stride()
        if _orig_is_contiguous(src):
            return result if result.stride() == strides else result.as_strided(sizes, strides)
        if _non_overlapping_and_dense(sizes, strides):
            return _with_strides(result, sizes, strides)
        fmt = _suggest(src)
        if fmt is contiguous_format:
            return result
    elif fmt is contiguous_format:
        return result
    _rank_check(src, fmt)
    return _to_format(result, fmt, False)


# ------------------------------------------------------------------ Tensor methods
_orig_contiguous = Tensor.contiguous
_orig_is_contiguous = Tensor.is_contiguous
_orig_clone = Tensor.clone
_orig_to = Tensor.to


def _contiguous(self, memory_format=contiguous_format):
    if memory_format is contiguous_format or memory_format is preserve_format:
        return _orig_contiguous(self)
    _check_format(memory_format)
    return _to_format(self, memory_format, False)


def _is_contiguous(self, memory_format=contiguous_format):
    if memory_format is contiguous_format or memory_format is preserve_format:
        return _orig_is_contiguous(self)
    _check_format(memory_format)
    return _is_cl_contiguous(tuple(self.shape), self.stride())


def _clone(self, *, memory_format=preserve_format):
    _check_format(memory_format)
    if memory_format is preserve_format:
        return _preserve_copy(self)
    return _to_format(self, memory_format, True)


def clone(input, *, memory_format=preserve_format):
    """``torch.clone``: a copy; ``preserve_format`` (the default) keeps dense strides."""
    return _clone(input, memory_format=memory_format)


def _to(self, *args, memory_format=None, **kwargs):
    if (args or kwargs) and memory_format in (None, preserve_format) \
            and not _orig_is_contiguous(self):
        sizes, strides = tuple(self.shape), self.stride()
        if _non_overlapping_and_dense(sizes, strides):
            # Convert the input's dense permutation (a contiguous view) and permute back: one
            # pass that lands in the input's strides, instead of a row-major conversion
            # followed by a re-striding copy.
            perm = sorted(range(len(sizes)), key=lambda d: -strides[d])
            view = self.permute(*perm)
            conv = _orig_to(view, *args, **kwargs)
            if conv is view or _is_alias(conv, view):
                return self  # no conversion: PyTorch returns the tensor itself
            out = conv.permute(*_inverse(perm))
            # (strides of size-1 dims can still differ: re-stride the contiguous result, the
            # view of it that as_strided can differentiate)
            return out if out.stride() == strides else conv.as_strided(sizes, strides)
    out = _orig_to(self, *args, **kwargs) if args or kwargs else self
    if out is not self and _is_alias(out, self):
        out = self  # no conversion: PyTorch returns the tensor itself
    if memory_format is None or memory_format is preserve_format:
        _check_format(memory_format)
        if out is self or _orig_is_contiguous(self) or not _orig_is_contiguous(out):
            return out
        sizes, strides = tuple(self.shape), self.stride()
        if _non_overlapping_and_dense(sizes, strides):
            return _with_strides(out, sizes, strides)
        fmt = _suggest(self)
        return out if fmt is contiguous_format else _to_format(out, fmt, False)
    _check_format(memory_format)
    if memory_format is contiguous_format:
        return _orig_contiguous(out)
    return _to_format(out, memory_format, False)


def _is_alias(a, b):
    """Whether ``a`` is a plain alias of ``b``: same memory, dtype, device, shape, strides."""
    return (a.dtype == b.dtype and a.device == b.device and a.data_ptr() == b.data_ptr()
            and a.shape == b.shape and a.stride() == b.stride()
            and a.storage_offset() == b.storage_offset()
            and a.requires_grad == b.requires_grad and a.numel() > 0)


def _dim_order(self, *, ambiguity_check=False):
    """``Tensor.dim_order()``: the dimensions from outermost to innermost by stride."""
    strides = self.stride()
    return tuple(sorted(range(self.dim()), key=lambda d: -strides[d]))


_orig_cuda = Tensor.cuda
_orig_cpu = Tensor.cpu


def _moved(self, move, memory_format):
    """``move(t)`` (the native ``.cuda``/``.cpu``), laid out as PyTorch's copy to another device
    is: ``preserve_format`` keeps the strides of a dense non-contiguous input (a transposed
    tensor stays transposed), as ``to()`` does."""
    if memory_format is None or memory_format is preserve_format:
        _check_format(memory_format)
        if _orig_is_contiguous(self):
            return move(self)
        sizes, strides = tuple(self.shape), self.stride()
        if _non_overlapping_and_dense(sizes, strides):
            # Move the dense permutation (a contiguous view) and permute back: one copy that
            # lands in the input's strides.
            perm = sorted(range(len(sizes)), key=lambda d: -strides[d])
            view = self.permute(*perm)
            moved = move(view)
            if moved is view:
                return self  # already there: PyTorch returns the tensor itself
            out = moved.permute(*_inverse(perm))
            return out if out.stride() == strides else moved.as_strided(sizes, strides)
        out = move(self)
        fmt = _suggest(self)
        return out if fmt is contiguous_format or out is self else _to_format(out, fmt, False)
    _check_format(memory_format)
    out = move(self)
    if memory_format is contiguous_format:
        return _orig_contiguous(out)
    return _to_format(out, memory_format, False)


def _cuda(self, device=None, non_blocking=False, memory_format=preserve_format):
    """``Tensor.cuda()``: a copy on the GPU (``self`` when already there); ``preserve_format``
    (the default) keeps dense strides."""
    return _moved(self, lambda t: _orig_cuda(t, device, non_blocking), memory_format)


def _cpu(self, memory_format=preserve_format):
    """``Tensor.cpu()``: a copy in CPU memory (``self`` when already there);
    ``preserve_format`` (the default) keeps dense strides."""
    return _moved(self, _orig_cpu, memory_format)


Tensor.contiguous = _contiguous
Tensor.is_contiguous = _is_contiguous
Tensor.clone = _clone
Tensor.to = _to
Tensor.cuda = _cuda
Tensor.cpu = _cpu
Tensor.dim_order = _dim_order
Tensor.layout = property(lambda self: strided, doc="The tensor's layout: ``torch.strided``.")

for _n, _f in (("contiguous", _contiguous), ("is_contiguous", _is_contiguous),
               ("clone", _clone), ("to", _to), ("cuda", _cuda), ("cpu", _cpu)):
    _f.__name__ = _f.__qualname__ = _n


def _make_cast(name, dtype):
    native = getattr(Tensor, name)

    def cast(self, memory_format=preserve_format):
        if memory_format is preserve_format:
            if self.dtype == dtype:
                return self
            if _orig_is_contiguous(self):
                return native(self)
        return _to(self, dtype, memory_format=memory_format)

    cast.__name__ = cast.__qualname__ = name
    cast.__doc__ = (f"``Tensor.{name}()``: ``self.to({dtype})``, keeping dense strides "
                    "(``self`` itself when it has that dtype already).")
    return cast


# Tensor.float() & co.: through ``to``, for its memory_format (preserve: a transposed input
# stays transposed, as in PyTorch) and for returning ``self`` when nothing converts.
for _n, _d in (("float", _C.float32), ("double", _C.float64), ("half", _C.float16),
               ("bfloat16", _C.bfloat16), ("long", _C.int64), ("int", _C.int32),
               ("short", _C.int16), ("char", _C.int8), ("byte", _C.uint8), ("bool", _C.bool)):
    setattr(Tensor, _n, _make_cast(_n, _d))


# ------------------------------------------------------------------ factories
def _wrap_like(name):
    native = getattr(_C, name)

    def like(input, *args, memory_format=preserve_format, **kwargs):
        out = native(input, *args, **kwargs)
        if (memory_format is preserve_format and _orig_is_contiguous(input)
                and out.stride() == input.stride()):
            return out
        return _like_layout(out, input, memory_format)

    like.__name__ = like.__qualname__ = name
    like.__doc__ = f"``torch.{name}``, with ``memory_format=`` (default ``preserve_format``)."
    return like


_LIKE = ("empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like",
         "randint_like")
for _n in _LIKE:
    if hasattr(_C, _n):
        globals()[_n] = _wrap_like(_n)
        __all__.append(_n)
__all__.append("clone")

_native_empty = _C.empty


def empty(*size, memory_format=contiguous_format, **kwargs):
    """``torch.empty`` with ``memory_format=`` (``contiguous_format``, ``channels_last``,
    ``channels_last_3d``)."""
    out = _native_empty(*size, **kwargs)
    if memory_format is contiguous_format:
        return out
    _check_format(memory_format)
    if memory_format is preserve_format:
        raise RuntimeError("preserve_format is not supported by empty")
    return _to_format(out, memory_format, False)


empty.__name__ = empty.__qualname__ = "empty"
__all__.append("empty")


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    """``torch.empty_permuted``: an uninitialised tensor of shape ``size`` whose dimensions
    are laid out in memory in the order ``physical_layout`` (outermost first)."""
    size, phys = tuple(size), tuple(physical_layout)
    if sorted(phys) != list(range(len(size))):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the "
                           f"physical_layout; or physical_layout is not a permutation: "
                           f"{list(phys)}")
    kw = {"dtype": dtype, "device": device}
    buf = _native_empty(*[size[p] for p in phys], **{k: v for k, v in kw.items()
                                                       if v is not None})
    out = buf.permute(*_inverse(phys)) if size else buf
    if requires_grad:
        out.requires_grad_(True)
    return out


def _install():
    """Replace the native ``torch.*`` entries (called from the package ``__init__``)."""
    for name in __all__:
        setattr(_ft, name, globals()[name])
