"""Comparison and small utility functions that everyday PyTorch code reaches for
(``torch.allclose``, ``torch.equal``, ``torch.isclose``, ``x.type_as(y)``, ``torch.finfo``,
``torch.diff``, ``torch.cdist``...), written with the native tensor ops. Installed as module
functions and, where PyTorch has them, as Tensor methods."""

import builtins

from ferrotorch import _C

Tensor = _C.Tensor

__all__ = [
    "isclose", "allclose", "equal", "is_tensor", "is_floating_point", "numel", "clone",
    "finfo", "iinfo", "diff", "dist", "cdist", "isin", "triu_indices", "tril_indices", "logit",
    "rot90",
]


def _type_name(dtype):
    """PyTorch's scalar-type name of ``dtype`` (Float, Long...), as its messages give it."""
    from ferrotorch._api_extra import _dtype_name
    return _dtype_name(dtype)


def _as_tensor_like(value, like):
    """``value`` as a tensor of ``like``'s dtype on its device (tensors pass unchanged)."""
    if isinstance(value, Tensor):
        return value
    return _C.tensor(value, dtype=like.dtype, device=like.device)


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``|input - other| <= atol + rtol * |other|`` elementwise (a bool tensor); equal values,
    infinities included, are close; NaNs only with ``equal_nan``."""
    other = _as_tensor_like(other, input)  # (a number is accepted, as a tensor like input)
    if input.dtype != other.dtype:
        raise RuntimeError(f"{_type_name(input.dtype)} did not match {_type_name(other.dtype)}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    a, b = input.detach(), other.detach()
    close = a == b
    if rtol == 0 and atol == 0:
        return close
    if equal_nan and a.is_floating_point():
        close = close | (a.isnan() & b.isnan())
    if a.dtype == _C.bool:  # PyTorch compares bools as numbers of the default dtype
        a, b = a.to(_C.get_default_dtype()), b.to(_C.get_default_dtype())
    elif not a.is_floating_point():
        a, b = a.double(), b.double()
    allowed = b.abs() * rtol + atol
    within = ((a - b).abs() <= allowed) & a.isfinite() & b.isfinite()
    return close | within


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``isclose(...).all()`` as a Python bool."""
    return builtins.bool(isclose(input, other, rtol, atol, equal_nan).all().item())


def equal(input, other):
    """True if both tensors have the same shape and elements (NaN is never equal)."""
    if tuple(input.shape) != tuple(other.shape):
        return False
    return builtins.bool((input.detach() == other.detach()).all().item())


def is_tensor(obj):
    return isinstance(obj, Tensor)


def is_floating_point(input):
    return input.is_floating_point()


def numel(input):
    return input.numel()


def clone(input, *, memory_format=None):
    return input.clone()


class finfo:  # noqa: N801 (PyTorch's name)
    """Machine limits of a floating dtype: ``bits``, ``eps``, ``max``, ``min``, ``tiny``
    (= ``smallest_normal``), ``resolution``."""

    _TABLE = {
        "float16": (16, 2.0 ** -10, 65504.0, 2.0 ** -14, 0.001),
        "bfloat16": (16, 2.0 ** -7, 3.3895313892515355e38, 2.0 ** -126, 0.01),
        "float32": (32, 2.0 ** -23, 3.4028234663852886e38, 2.0 ** -126, 1e-06),
        "float64": (64, 2.0 ** -52, 1.7976931348623157e308, 2.0 ** -1022, 1e-15),
    }

    def __init__(self, type=None):
        if type is None:
            type = _C.get_default_dtype()
        name = str(type).rsplit(".", 1)[-1]
        if name not in self._TABLE:  # (sic: PyTorch's message names the class, not type)
            raise TypeError("torch.finfo() requires a floating point input type. Use "
                            "torch.iinfo to handle 'torch.finfo'")
        self.dtype = name
        self.bits, self.eps, self.max, self.tiny, self.resolution = self._TABLE[name]
        self.min = -self.max
        self.smallest_normal = self.tiny

    def __eq__(self, other):  # equal per dtype, as PyTorch's (which are not singletons)
        return isinstance(other, finfo) and self.dtype == other.dtype

    def __hash__(self):
        return hash(("finfo", self.dtype))

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")


class iinfo:  # noqa: N801 (PyTorch's name)
    """Limits of an integer dtype: ``bits``, ``min``, ``max``."""

    _TABLE = {"uint8": (8, 0, 255), "int8": (8, -128, 127), "int16": (16, -2 ** 15, 2 ** 15 - 1),
              "int32": (32, -2 ** 31, 2 ** 31 - 1), "int64": (64, -2 ** 63, 2 ** 63 - 1)}

    def __init__(self, type):
        name = str(type).rsplit(".", 1)[-1]
        if name == "bool":
            raise TypeError(f"{type} is not supported by torch.iinfo")
        if name not in self._TABLE:  # (sic: PyTorch's message names the class, not type)
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo "
                            "to handle 'torch.iinfo'")
        self.dtype = name
        self.bits, self.min, self.max = self._TABLE[name]

    def __eq__(self, other):
        return isinstance(other, iinfo) and self.dtype == other.dtype

    def __hash__(self):
        return hash(("iinfo", self.dtype))

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


def _diff_operand(t, input, dim):
    """Check ``prepend`` / ``append`` as PyTorch does: same number of dims as ``input`` and
    the same sizes except along ``dim``. (A Python number, which PyTorch refuses, stands for a
    size-1 slice along ``dim``.)"""
    if not isinstance(t, Tensor):
        t = _as_tensor_like(t, input)
        shape = list(input.shape)
        shape[dim] = 1
        return t.expand(*shape)
    if t.ndim != input.ndim:
        raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    for i in range(t.ndim):
        if i != dim and t.shape[i] != input.shape[i]:
            raise RuntimeError(
                "diff expects the shape of tensor to prepend or append to match that of input "
                f"except along the differencing dimension; input.size({i}) = {input.shape[i]}, "
                f"but got tensor.size({i}) = {t.shape[i]}")
    return t


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """n-th forward difference along ``dim`` (``!=`` for bool tensors), after concatenating
    ``prepend`` / ``append``."""
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    if n == 0 and prepend is None and append is None:
        return input.clone()  # PyTorch neither checks ``dim`` nor shares storage here
    dim = _wrap_dim(dim, input.ndim)
    if prepend is not None or append is not None:
        parts = [_diff_operand(t, input, dim) if t is not input else t
                 for t in (prepend, input, append) if t is not None]
        input = _C.cat(parts, dim)
    for _ in range(n):
        length = input.shape[dim]
        if length == 0:
            break
        hi, lo = input.narrow(dim, 1, length - 1), input.narrow(dim, 0, length - 1)
        input = hi != lo if input.dtype == _C.bool else hi - lo
    return input


def _wrap_dim(dim, ndim):
    """``dim`` in ``[0, ndim)``, with PyTorch's IndexError when it is out of range."""
    from ferrotorch._api_extra import _wrap_dim
    return _wrap_dim(dim, ndim)


def dist(input, other, p=2):
    """p-norm of ``input - other`` (a 0-d tensor)."""
    from ferrotorch.linalg import vector_norm
    diff = input - other
    if not diff.is_floating_point():
        raise NotImplementedError("norm(): input dtype should be either floating point or "
                                  f"complex. Got {_type_name(diff.dtype)} instead.")
    return vector_norm(diff, p)


def cdist(x1, x2, p=2.0, compute_mode=None):
    """Pairwise p-norm distances between the rows of ``x1`` (..., P, M) and ``x2``
    (..., R, M): shape (..., P, R). The gradient where two rows coincide is 0, as in
    PyTorch."""
    for name, x in (("X1", x1), ("X2", x2)):
        if not x.is_floating_point():
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                               f"{_type_name(x.dtype)}")
    if x1.ndim < 2 or x2.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    d = x1.unsqueeze(-2) - x2.unsqueeze(-3)  # (..., P, R, M)
    if p == float("inf"):
        return d.abs().amax(-1)
    if p == 0:
        return (d != 0).to(x1.dtype).sum(-1)
    s = d.square().sum(-1) if p == 2 else d.abs().pow(p).sum(-1)
    zero = s == 0
    # Double where: the root never sees 0, so its infinite slope there is never multiplied.
    safe = _C.where(zero, _C.tensor(1.0, dtype=s.dtype, device=s.device), s)
    root = safe.sqrt() if p == 2 else safe.pow(1.0 / p)
    return _C.where(zero, _C.tensor(0.0, dtype=s.dtype, device=s.device), root)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element of ``elements`` is in ``test_elements`` (a bool tensor)."""
    if not isinstance(elements, Tensor):
        elements = _C.tensor(
            elements, device=test_elements.device if isinstance(test_elements, Tensor) else None
        )
    test = _as_tensor_like(test_elements, elements).reshape(-1)
    hit = (elements.unsqueeze(-1) == test).any(-1)
    return hit.logical_not() if invert else hit


def _tri_indices(row, col, offset, upper, dtype, device):
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")  # sic: PyTorch's message
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    if dtype is not None and dtype not in (_C.int64, _C.int32):
        name = "triu_indices" if upper else "tril_indices"
        raise NotImplementedError(f'"{name}" not implemented for \'{_type_name(dtype)}\'')
    rows, cols = [], []
    for i in range(row):
        for j in range(col):
            if (j - i >= offset) if upper else (j - i <= offset):
                rows.append(i)
                cols.append(j)
    return _C.tensor(
        [rows, cols], dtype=_C.int64 if dtype is None else dtype, device=device
    ).reshape(2, -1)


def triu_indices(row, col, offset=0, *, dtype=None, device="cpu", layout=None):
    """Indices (2, N) of the upper triangle of a ``row`` x ``col`` matrix, row-major."""
    return _tri_indices(row, col, offset, True, dtype, device)


def tril_indices(row, col, offset=0, *, dtype=None, device="cpu", layout=None):
    """Indices (2, N) of the lower triangle of a ``row`` x ``col`` matrix, row-major."""
    return _tri_indices(row, col, offset, False, dtype, device)


def logit(input, eps=None):
    """``log(p / (1 - p))``, with ``p`` clamped to ``[eps, 1 - eps]`` when ``eps`` is given.
    Integer and bool inputs are computed in the default float dtype (not in their own)."""
    if not input.is_floating_point():
        input = input.to(_C.get_default_dtype())
    if eps is not None:
        input = input.clamp(eps, 1.0 - eps)
    return (input / (1 - input)).log()


def rot90(input, k=1, dims=(0, 1)):
    """Rotate by 90 degrees ``k`` times in the plane of ``dims`` (from the first towards the
    second)."""
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    d0, d1 = dims
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    if d0 % input.ndim == d1 % input.ndim:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    k %= 4
    if k == 1:
        return input.flip(d1).transpose(d0, d1)
    if k == 2:
        return input.flip(d0, d1)
    if k == 3:
        return input.flip(d0).transpose(d0, d1)
    return input.clone()


def _tensor_format(self, spec):
    # A 0-d tensor formats as its Python number, as in PyTorch (f"{loss:.4f}").
    if self.ndim == 0:
        return self.item().__format__(spec)
    return object.__format__(self, spec)


def _get_device(self):
    return self.device.index if self.is_cuda else -1


Tensor.isclose = isclose
Tensor.allclose = allclose
Tensor.equal = equal
Tensor.diff = diff
Tensor.dist = dist
Tensor.logit = logit
Tensor.rot90 = rot90
Tensor.type_as = lambda self, other: self.to(other)
Tensor.get_device = _get_device
Tensor.is_pinned = lambda self, device=None: False
Tensor.__format__ = _tensor_format
