"""More of PyTorch's public surface, in Python on the native ops: the ``torch.*`` spellings of
``nn.functional`` ops (``torch.dropout``, ``torch.cosine_similarity``, ``torch.embedding``...),
``torch.<op>_`` in-place functions, the ``*_copy`` view copies, ``unravel_index``, ``rsub``,
``set_float32_matmul_precision``, ``typename``/``is_storage``/``is_same_size``, and Tensor
members: ``new``, ``to_dense``, the always-false ``is_sparse``/``is_meta``/... flags, and the
in-place ``cumsum_``/``cumprod_``/``logit_``/``i0_``/``mvlgamma_``.

Differentiable functions are composed from differentiable ops, so autograd flows through."""

import builtins
import numbers

import ferrotorch as _ft
from ferrotorch import _C
from ferrotorch._export import exporter

Tensor = _C.Tensor

__all__ = []


_export = exporter(__all__)


def _F():  # noqa: N802
    return _ft.nn.functional


# ------------------------------------------------------------------ torch.* functional ops
@_export
def dropout(input, p, train):
    """``torch.dropout(input, p, train)``."""
    return _F().dropout(input, p, train)


@_export
def dropout_(input, p, train):
    return _F().dropout(input, p, train, inplace=True)


@_export
def alpha_dropout(input, p, train):
    return _F().alpha_dropout(input, p, train)


@_export
def alpha_dropout_(input, p, train):
    return _F().alpha_dropout(input, p, train, inplace=True)


@_export
def feature_alpha_dropout(input, p, train):
    return _F().feature_alpha_dropout(input, p, train)


@_export
def feature_alpha_dropout_(input, p, train):
    return _F().feature_alpha_dropout(input, p, train, inplace=True)


def _feature_dropout_impl(input, p, train, inplace):
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if not 0 <= p <= 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not train or p == 0:
        return input
    shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    if p == 1:
        mask = _C.zeros(shape, dtype=input.dtype, device=input.device)
    else:
        keep = _C.rand(shape, device=input.device) >= p
        mask = keep.to(input.dtype) / (1.0 - p)
    return input.mul_(mask) if inplace else input * mask


@_export
def feature_dropout(input, p, train):
    """``torch.feature_dropout``: drops whole channels (dimension 1), scaling by 1/(1-p)."""
    return _feature_dropout_impl(input, p, train, False)


@_export
def feature_dropout_(input, p, train):
    return _feature_dropout_impl(input, p, train, True)


@_export
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    return _F().cosine_similarity(x1, x2, dim=dim, eps=eps)


@_export
def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return _F().pairwise_distance(x1, x2, p=p, eps=eps, keepdim=keepdim)


@_export
def pdist(input, p=2):
    return _F().pdist(input, p=p)


@_export
def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """``torch.embedding(weight, indices, ...)`` (note the argument order); ``padding_idx``
    -1 means none, as in the native op."""
    pad = None if padding_idx is None or padding_idx == -1 else padding_idx
    return _F().embedding(indices, weight, padding_idx=pad,
                          scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


@_export
def bilinear(input1, input2, weight, bias=None):
    return _F().bilinear(input1, input2, weight, bias)


@_export
def prelu(input, weight):
    return _F().prelu(input, weight)


@_export
def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return _F().rrelu(input, lower, upper, training)


@_export
def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return _F().rrelu(input, lower, upper, training, inplace=True)


@_export
def selu(input):
    return _F().selu(input)


@_export
def selu_(input):
    return _F().selu(input, inplace=True)


@_export
def celu(input, alpha=1.0):
    return _F().celu(input, alpha)


@_export
def celu_(input, alpha=1.0):
    return _F().celu(input, alpha, inplace=True)


@_export
def threshold(input, threshold, value):
    return _F().threshold(input, threshold, value)


@_export
def threshold_(input, threshold, value):
    return _F().threshold(input, threshold, value, inplace=True)


@_export
def relu_(input):
    return input.relu_()


@_export
def hardshrink(input, lambd=0.5):
    return _F().hardshrink(input, lambd)


@_export
def channel_shuffle(input, groups):
    return _F().channel_shuffle(input, groups)


@_export
def constant_pad_nd(input, pad, value=0):
    return _F().pad(input, tuple(pad), mode="constant", value=value)


@_export
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    return _F().conv_transpose3d(input, weight, bias, stride, padding, output_padding,
                                 groups, dilation)


# ------------------------------------------------------------------ small torch.* functions
@_export
def detach(input):
    return input.detach()


@_export
def detach_(input):
    return input.detach_()


@_export
def fill(input, value):
    """Out-of-place ``fill``: a tensor like ``input`` filled with ``value`` (a number or a
    0-dim tensor; differentiable with respect to a tensor ``value``)."""
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {value.dim()} dimensions.")
        return value.to(input.dtype).expand(tuple(input.shape)).clone(
            memory_format=_ft.contiguous_format)
    return _C.full_like(input, value)


@_export
def fill_(input, value):
    return input.fill_(value)


@_export
def zero_(input):
    return input.zero_()


@_export
def rsub(input, other, alpha=1):
    """``other - alpha * input``."""
    if not isinstance(input, Tensor):
        raise TypeError(f"rsub(): argument 'input' must be Tensor, not {type(input).__name__}")
    if alpha == 1:
        return _ft.sub(other, input) if isinstance(other, Tensor) else (-input).add(other)
    if isinstance(other, Tensor):
        return _ft.sub(other, input, alpha=alpha)
    return (input * (-alpha)).add(other)


@_export
def is_same_size(input, other):
    return tuple(input.shape) == tuple(other.shape)


@_export
def typename(obj):
    """``torch.typename``: ``'torch.FloatTensor'`` for a float32 CPU tensor (the legacy type
    name), else ``module.QualifiedName`` of the object (or of its class)."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    if module in ("", "builtins"):
        return qualname
    return f"{module}.{qualname}"


@_export
def is_storage(obj):
    return isinstance(obj, (_ft.TypedStorage, _ft.UntypedStorage))


@_export
def get_device(input):
    return input.get_device()


@_export
def unravel_index(indices, shape):
    """Convert flat indices into a tuple of coordinate tensors for ``shape`` (PyTorch's
    formula: ``indices // prod(shape[i+1:]) % shape[i]``, so out-of-range and negative
    indices wrap)."""
    if not isinstance(indices, Tensor):
        indices = _C.tensor(indices)
    if indices.dtype.is_floating_point or indices.dtype == _C.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    if isinstance(shape, numbers.Integral):
        shape = (shape,)
    shape = tuple(builtins.int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got " + str(shape))
    indices = indices.to(_C.int64)
    coefs, acc = [], 1
    for s in reversed(shape):
        coefs.append(acc)
        acc *= s
    coefs = coefs[::-1]
    dims = _C.tensor(list(shape), dtype=_C.int64, device=indices.device)
    cf = _C.tensor(coefs, dtype=_C.int64, device=indices.device)
    if not shape:
        return ()
    res = _ft.remainder(_ft.floor_divide(indices.unsqueeze(-1), cf), dims)
    return tuple(res.unbind(-1))


# float32 matmul precision: 'highest' unless TF32 is allowed (backends.cuda.matmul.allow_tf32),
# as in PyTorch, where the two settings are one.
_matmul_precision = ["high"]


@_export
def get_float32_matmul_precision():
    """``'highest'``, ``'high'`` or ``'medium'``; mirrors ``backends.cuda.matmul.allow_tf32``."""
    if not _ft.backends.cuda.matmul.allow_tf32:
        return "highest"
    return _matmul_precision[0]


@_export
def set_float32_matmul_precision(precision):
    """Set the internal precision of float32 matrix multiplications: ``'highest'`` (full
    float32), or ``'high'``/``'medium'`` (TF32 allowed on CUDA). CPU matmuls are always
    full precision, as PyTorch's."""
    if precision not in ("highest", "high", "medium"):
        import warnings
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      "setFloat32MatmulPrecision call has no effect.", stacklevel=2)
        return
    if precision != "highest":
        _matmul_precision[0] = precision
    _ft.backends.cuda.matmul.allow_tf32 = precision != "highest"


# ------------------------------------------------------------------ in-place torch.<op>_
_INPLACE = ("abs_ acos_ acosh_ asin_ asinh_ atan_ atanh_ arccos_ arccosh_ arcsin_ arcsinh_ "
            "arctan_ arctanh_ ceil_ clamp_ clamp_max_ clamp_min_ clip_ cos_ cosh_ deg2rad_ "
            "erf_ erfc_ exp2_ exp_ expm1_ fix_ floor_ frac_ gcd_ i0_ lcm_ ldexp_ log10_ log1p_ "
            "log2_ log_ logit_ nan_to_num_ neg_ negative_ rad2deg_ reciprocal_ round_ rsqrt_ "
            "sigmoid_ sin_ sinc_ sinh_ sqrt_ square_ tan_ tanh_ trunc_ xlogy_ addmv_ index_put_ "
            "resize_as_").split()


def _make_inplace_fn(name):
    def fn(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``torch.{name}(input, ...)``: ``input.{name}(...)``."
    return fn


# ------------------------------------------------------------------ *_copy view copies
def _contig_copy(t):
    return t.clone(memory_format=_ft.contiguous_format)


def _make_copy_fn(view_name):
    def fn(input, *args, out=None, **kwargs):
        r = getattr(_ft, view_name)(input, *args, **kwargs)
        if isinstance(r, (tuple, list)):
            return type(r)(_contig_copy(t) for t in r)
        r = _contig_copy(r)
        if out is not None:
            out.copy_(r)
            return out
        return r

    fn.__name__ = fn.__qualname__ = view_name + "_copy"
    fn.__doc__ = f"``torch.{view_name}_copy``: a contiguous copy of ``torch.{view_name}``."
    return fn


_VIEWS = ("alias", "as_strided", "diagonal", "expand", "permute", "select", "split",
          "split_with_sizes", "squeeze", "t", "transpose", "unbind", "unsqueeze", "view",
          "detach", "unfold")


def _view(input, *shape):
    return input.view(*shape)


def _expand(input, size, *, implicit=False):
    return input.expand(*size)


def _unfold(input, dimension, size, step):
    return input.unfold(dimension, size, step)


def _alias(input):
    return input.view_as(input)


def _split_with_sizes(input, split_sizes, dim=0):
    return input.split(list(split_sizes), dim)


@_export
def slice_copy(input, dim=0, start=None, end=None, step=1):
    """``torch.slice_copy``: a contiguous copy of ``input`` sliced along ``dim``."""
    idx = [builtins.slice(None)] * input.dim()
    idx[dim] = builtins.slice(start, end, step)
    return _contig_copy(input[tuple(idx)])


# ------------------------------------------------------------------ unsafe_* aliases
@_export
def unsafe_chunk(input, chunks, dim=0):
    return input.chunk(chunks, dim)


@_export
def unsafe_split(input, split_size, dim=0):
    return input.split(split_size, dim)


@_export
def unsafe_split_with_sizes(input, split_sizes, dim=0):
    return input.split(list(split_sizes), dim)


# ------------------------------------------------------------------ Tensor members
def _new(self, *args, device=None, dtype=None):
    """Legacy ``Tensor.new``: ``new()`` (empty), ``new(*sizes)``/``new(torch.Size)``
    (uninitialised), ``new(sequence)`` (data), ``new(tensor)`` (an alias of a tensor of the
    same dtype); the result has ``self``'s dtype and device."""
    if dtype is not None and dtype != self.dtype:
        raise TypeError("new() received an invalid combination of arguments - got dtype, "
                        "use new_empty/new_tensor instead")
    dev = self.device if device is None else device
    if not args:
        return _C.empty(0, dtype=self.dtype, device=dev)
    if len(args) == 1 and isinstance(args[0], Tensor):
        other = args[0]
        if other.dtype != self.dtype:
            raise TypeError(f"expected {self.type()} (got {other.type()})")
        return other.detach()
    if all(isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in args):
        return _C.empty(tuple(builtins.int(a) for a in args), dtype=self.dtype, device=dev)
    if len(args) == 1 and isinstance(args[0], _ft.Size):
        return _C.empty(tuple(args[0]), dtype=self.dtype, device=dev)
    if len(args) == 1:
        return _C.tensor(args[0], dtype=self.dtype, device=dev)
    raise TypeError("new() received an invalid combination of arguments")


def _false_flag(name):
    return property(lambda self: False, doc=f"``Tensor.{name}``: always False here (dense, "
                                            f"strided, non-quantized tensors only).")


def _cumop_(op):
    def fn(self, dim, *, dtype=None):
        if dtype is not None and dtype != self.dtype:
            raise RuntimeError(f"Bad in-place call: input tensor dtype {self.dtype} and output "
                               f"tensor dtype {dtype} should match")
        self.copy_(getattr(self, op)(dim))
        return self

    fn.__name__ = fn.__qualname__ = op + "_"
    return fn


def _logit_(self, eps=None):
    from ferrotorch._api_extra import _inplace_result  # float result: ints raise, as PyTorch

    return _inplace_result(self, self.logit(eps), "logit_")


def _i0_(self):
    from ferrotorch._api_extra import _inplace_result

    return _inplace_result(self, self.i0(), "i0_")


def _mvlgamma_(self, p):
    self.copy_(self.mvlgamma(p))
    return self


def _install():
    helpers = {"view": _view, "expand": _expand, "unfold": _unfold, "alias": _alias,
               "split_with_sizes": _split_with_sizes}
    for v in _VIEWS:
        name = v + "_copy"
        if hasattr(_ft, name):
            continue
        if v in helpers:
            setattr(_ft, "_view_" + v, helpers[v])
            fn = _make_copy_fn("_view_" + v)
            fn.__name__ = fn.__qualname__ = name
        elif hasattr(_ft, v):
            fn = _make_copy_fn(v)
        else:
            continue
        setattr(_ft, name, fn)
        __all__.append(name)

    members = {
        "new": _new,
        "to_dense": lambda self, dtype=None, *, masked_grad=None:
            self if dtype is None or dtype == self.dtype else self.to(dtype),
        "const_data_ptr": lambda self: self.data_ptr(),
        "is_same_size": lambda self, other: tuple(self.shape) == tuple(other.shape),
        "hardshrink": lambda self, lambd=0.5: _F().hardshrink(self, lambd),
        "prelu": lambda self, weight: _F().prelu(self, weight),
        "cholesky_inverse": lambda self, upper=False: _ft.cholesky_inverse(self, upper),
        "unsafe_chunk": lambda self, chunks, dim=0: self.chunk(chunks, dim),
        "unsafe_split": lambda self, split_size, dim=0: self.split(split_size, dim),
        "unsafe_split_with_sizes": lambda self, split_sizes, dim=0:
            self.split(list(split_sizes), dim),
        "cumsum_": _cumop_("cumsum"),
        "cumprod_": _cumop_("cumprod"),
        "logit_": _logit_,
        "i0_": _i0_,
        "mvlgamma_": _mvlgamma_,
    }
    for name, fn in members.items():
        if not hasattr(Tensor, name):
            setattr(Tensor, name, fn)
    for name in ("is_sparse", "is_sparse_csr", "is_quantized", "is_meta", "is_mkldnn",
                 "is_nested", "is_mps", "is_xpu", "is_ipu", "is_xla", "is_vulkan", "is_maia",
                 "is_mtia"):
        if not hasattr(Tensor, name):
            setattr(Tensor, name, _false_flag(name))
    for name in _INPLACE:
        if not hasattr(_ft, name) and hasattr(Tensor, name):
            setattr(_ft, name, _make_inplace_fn(name))
            __all__.append(name)


# ------------------------------------------------------------------ frombuffer
_NP_DTYPES = {"float32": "float32", "float64": "float64", "float16": "float16",
              "int64": "int64", "int32": "int32", "int16": "int16", "int8": "int8",
              "uint8": "uint8", "bool": "bool"}
_warned_readonly = [False]


@_export
def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor sharing memory with an object that implements the buffer protocol
    (``bytearray``, ``memoryview``, ``array.array``...): ``count`` elements of ``dtype`` from
    byte ``offset`` (``count=-1``: all the rest). Writes through either side are seen by the
    other."""
    import warnings

    import numpy as np
    try:
        view = memoryview(buffer)
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    name = str(dtype).rsplit(".", 1)[-1]
    if name not in _NP_DTYPES:
        raise TypeError(f"frombuffer: dtype {dtype} is not supported")
    npdt = np.dtype(_NP_DTYPES[name])
    length = view.nbytes
    elsize = npdt.itemsize
    if length <= 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if offset < 0 or offset >= length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({length} bytes) minus 1")
    if count < 0:
        if (length - offset) % elsize != 0:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} "
                             f"bytes) must be a multiple of element size ({elsize})")
        count = (length - offset) // elsize
    elif offset + count * elsize > length:
        raise ValueError(f"requested buffer length ({count} * {elsize} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length "
                         f"({length} bytes)")
    if view.readonly and not _warned_readonly[0]:
        _warned_readonly[0] = True
        warnings.warn("The given buffer is not writable, and PyTorch does not support "
                      "non-writable tensors. This means you can write to the underlying "
                      "(supposedly non-writable) buffer using the tensor. You may want to copy "
                      "the buffer to protect its data or make it writable before converting it "
                      "to a tensor. This type of warning will be suppressed for the rest of "
                      "this program.", UserWarning, stacklevel=2)
    arr = np.frombuffer(view.cast("B"), dtype=npdt, count=count, offset=offset)
    if view.readonly:
        arr.flags.writeable = False
    t = _C.from_numpy(arr)
    if requires_grad:
        t.requires_grad_(True)
    return t


# ------------------------------------------------------------------ index_reduce
_INDEX_REDUCE_OPS = ("prod", "mean", "amax", "amin")


def _index_reduce(self, dim, index, source, reduce, *, include_self=True):
    """``Tensor.index_reduce``: reduce the slices of ``source`` into ``self`` at positions
    ``index`` along ``dim`` with ``reduce`` (``prod``, ``mean``, ``amax``, ``amin``),
    including ``self``'s values unless ``include_self=False`` (a scatter_reduce)."""
    if reduce not in _INDEX_REDUCE_OPS:
        raise RuntimeError("index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    if index.dim() > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    nd = builtins.max(self.dim(), 1)
    d = dim % nd
    if source.dim() and source.shape[d] != index.numel():
        raise IndexError("index_reduce_(): Number of indices should be equal to "
                         "source.size(dim)")
    if self.dtype != source.dtype:
        from ferrotorch._api_extra import _dtype_name
        raise RuntimeError(f"index_reduce_(): self ({_dtype_name(self.dtype)}) and source "
                           f"({_dtype_name(source.dtype)}) must have the same scalar type")
    if source.dim() == 0:
        return self.scatter_reduce(d, index.reshape(()), source, reduce,
                                   include_self=include_self)
    view = [1] * source.dim()
    view[d] = -1
    idx = index.reshape(view).expand(*source.shape)
    return self.scatter_reduce(d, idx, source, reduce, include_self=include_self)


def _index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    self.copy_(_index_reduce(self, dim, index, source, reduce, include_self=include_self))
    return self


@_export
def index_reduce(input, dim, index, source, reduce, *, include_self=True, out=None):
    r = _index_reduce(input, dim, index, source, reduce, include_self=include_self)
    if out is not None:
        out.copy_(r)
        return out
    return r


if not hasattr(Tensor, "index_reduce"):
    Tensor.index_reduce = _index_reduce
    Tensor.index_reduce_ = _index_reduce_


# ------------------------------------------------------------------ randomized low-rank SVD/PCA
def _approximate_basis(A, q, niter=2, M=None):
    """Halko et al. (2009), algorithm 4.4: an orthonormal ``(..., m, q)`` basis approximating
    the range of ``A - M`` (PyTorch's ``get_approximate_basis``)."""
    niter = 2 if niter is None else niter
    dtype = A.dtype if A.is_floating_point() else _C.get_default_dtype()
    R = _C.randn(A.shape[-1], q, dtype=dtype, device=A.device)
    X = A.matmul(R)
    if M is not None:
        X = X - M.matmul(R)
    Q = _ft.linalg.qr(X).Q
    for _ in range(niter):
        X = A.mH.matmul(Q)
        if M is not None:
            X = X - M.mH.matmul(Q)
        Q = _ft.linalg.qr(X).Q
        X = A.matmul(Q)
        if M is not None:
            X = X - M.matmul(Q)
        Q = _ft.linalg.qr(X).Q
    return Q


@_export
def svd_lowrank(A, q=6, niter=2, M=None):
    """Randomized rank-``q`` SVD of ``A - M`` (``A`` of shape ``(..., m, n)``):
    ``(U, S, V)`` with ``A - M ≈ U diag(S) V^H`` (Halko et al., 2009; PyTorch's algorithm)."""
    q = 6 if q is None else q
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(tuple(A.shape))
    if m < n:
        A = A.mH
        if M is not None:
            M = M.mH
    Q = _approximate_basis(A, q, niter=niter, M=M)
    B = Q.mH.matmul(A)
    if M is not None:
        B = B - Q.mH.matmul(M)
    U, S, Vh = _ft.linalg.svd(B, full_matrices=False)
    V = Vh.mH
    U = Q.matmul(U)
    if m < n:
        U, V = V, U
    return U, S, V


@_export
def pca_lowrank(A, q=None, center=True, niter=2):
    """Randomized PCA of the rows of ``A`` (``(..., m, n)``): ``(U, S, V)`` of the (centred,
    when ``center``) matrix; ``V[:, :k]`` are the principal directions."""
    m, n = A.shape[-2:]
    if q is None:
        q = builtins.min(6, m, n)
    elif not (q >= 0 and q <= builtins.min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than "
                         f"min(m, n)={builtins.min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return svd_lowrank(A, q, niter=niter, M=None)
    C = A.mean(dim=(-2,), keepdim=True)
    return svd_lowrank(A - C, q, niter=niter, M=None)
