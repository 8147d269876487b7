"""PyTorch API surface written in Python on the native ops: NumPy-style aliases
(``absolute``, ``arccos``, ``greater``...), in-place comparisons (``Tensor.eq_``...),
``fmax``/``fmin``, the ``*split`` family, ``block_diag``, ``vander``, ``gcd``/``lcm``,
``ldexp``/``frexp``/``nextafter``, ``renorm``, dtype queries (``result_type``, ``can_cast``),
``asarray``, ``range``, ``histogram``, the ``*_scatter`` functions, the BLAS-style
``add*`` family, ``cholesky_solve``/``triangular_solve``, window functions, and a few
Tensor utilities (``resize_``, ``pin_memory``, ``share_memory_``...).

Everything that is differentiable in PyTorch is composed from differentiable native ops, so
autograd flows through it. Installed as module functions and, where PyTorch has them, as
Tensor methods."""

import builtins
import numbers
import warnings
import weakref

import numpy as np

from ferrotorch import _C
import ferrotorch as _ft  # the package, partly initialised: the native and earlier Python ops
from ferrotorch import return_types as _rt
from ferrotorch._window import (  # noqa: F401 (re-exported)
    bartlett_window,
    blackman_window,
    hamming_window,
    hann_window,
    kaiser_window,
)

Tensor = _C.Tensor

__all__ = [
    # aliases
    "absolute", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2", "arctanh",
    "fix", "sgn", "greater", "greater_equal", "less", "less_equal", "not_equal",
    # functions
    "fmax", "fmin", "hsplit", "vsplit", "dsplit", "block_diag", "diagflat", "vander",
    "gcd", "lcm", "bitwise_left_shift", "bitwise_right_shift", "ldexp", "frexp", "nextafter",
    "renorm", "result_type", "can_cast",
    "is_complex", "is_nonzero", "is_signed", "as_tensor", "asarray", "range", "histogram",
    "histogramdd",
    "select_scatter", "slice_scatter", "diagonal_scatter", "narrow_copy", "addbmm", "addr",
    "cholesky_solve", "triangular_solve",
    "hann_window", "hamming_window", "bartlett_window", "blackman_window", "kaiser_window",
    "get_num_interop_threads", "set_num_interop_threads",
]

for _name, _fields in (("histogram", ["hist", "bin_edges"]),
                       ("histogramdd", ["hist", "bin_edges"]),
                       ("frexp", ["mantissa", "exponent"]),
                       ("triangular_solve", ["solution", "cloned_coefficient"])):
    if not hasattr(_rt, _name):
        _rt._make(_name, _fields)


def _dtype_name(dtype):
    name = str(dtype).rsplit(".", 1)[-1]
    return {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
            "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
            "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble",
            "complex32": "ComplexHalf"}.get(name, name)


def _is_integral(dtype, include_bool=False):
    if dtype == _C.bool:
        return include_bool
    return not dtype.is_floating_point


def _out(result, out):
    """Write ``result`` into ``out``; an ``out`` of another shape is resized first, as
    PyTorch, which from Python works only within ``out``'s storage (see ``Tensor.resize_``)."""
    if out is None:
        return result
    if tuple(out.shape) != tuple(result.shape):
        _resize_(out, tuple(result.shape))
    out.copy_(result)
    return out


def _contiguous_strides(shape):
    strides, acc = [], 1
    for s in reversed(tuple(shape)):
        strides.append(acc)
        acc *= builtins.max(s, 1)
    return tuple(reversed(strides))


def _wrap_dim(dim, ndim):
    """PyTorch's maybe_wrap_dim (a 0-d tensor accepts dim 0 and -1)."""
    n = builtins.max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim % n


def _as_tensor_like(value, like):
    if isinstance(value, Tensor):
        return value
    return _C.tensor(value, device=like.device)


# ----------------------------------------------------------------------------- dtype queries

def _category(dtype):
    """0 bool, 1 integral, 2 floating."""
    if dtype == _C.bool:
        return 0
    return 2 if dtype.is_floating_point else 1


def _combine(higher, lower):
    """PyTorch's combine_categories: the higher-priority class wins unless the lower one is
    of a higher category."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.is_floating_point:
        return higher
    if higher == _C.bool or lower.is_floating_point:
        return _C.promote_types(higher, lower)
    return higher


def _result_type(*operands):
    dim_result = zero_result = wrapped_result = None

    def update(current, dtype):
        return dtype if current is None else _C.promote_types(current, dtype)

    for op in operands:
        if isinstance(op, Tensor):
            if op.ndim > 0:
                dim_result = update(dim_result, op.dtype)
            else:
                zero_result = update(zero_result, op.dtype)
        elif isinstance(op, builtins.bool):
            wrapped_result = update(wrapped_result, _C.bool)
        elif isinstance(op, numbers.Integral):
            wrapped_result = update(wrapped_result, _C.int64)
        elif isinstance(op, numbers.Real):
            wrapped_result = update(wrapped_result, _C.get_default_dtype())
        elif isinstance(op, numbers.Complex):
            raise RuntimeError("ferrotorch has no complex dtypes")
        else:
            raise TypeError(f"result_type() received an invalid combination of arguments - got "
                            f"({type(op).__name__})")
    return _combine(dim_result, _combine(zero_result, wrapped_result))


def result_type(tensor1, tensor2):
    """The dtype an arithmetic operation on ``tensor1`` and ``tensor2`` (tensors or Python
    numbers) would produce, by PyTorch's type-promotion rules (dimensioned tensors take
    priority over 0-d tensors, which take priority over Python numbers, within a category)."""
    return _result_type(tensor1, tensor2)


def can_cast(from_, to):
    """Whether a cast from ``from_`` to ``to`` is allowed by PyTorch's casting rules (no
    floating -> integral, no non-bool -> bool)."""
    if from_.is_floating_point and _is_integral(to):
        return False
    if from_ != _C.bool and to == _C.bool:
        return False
    return True


def is_complex(input):
    """Always False: ferrotorch has no complex dtypes."""
    if not isinstance(input, Tensor):
        raise TypeError(f"is_complex(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return False


def is_signed(input):
    """Whether ``input``'s dtype is a signed type (floating types included)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"is_signed(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return input.dtype.is_signed


def is_nonzero(input):
    """Whether the single element of ``input`` is nonzero."""
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return builtins.bool(input.item() != 0)


# ---------------------------------------------------------------------------- aliases

absolute = _ft.abs
arccos = _ft.acos
arccosh = _ft.acosh
arcsin = _ft.asin
arcsinh = _ft.asinh
arctan = _ft.atan
arctan2 = _ft.atan2
arctanh = _ft.atanh
fix = _ft.trunc
greater = _ft.gt
greater_equal = _ft.ge
less = _ft.lt
less_equal = _ft.le
not_equal = _ft.ne


def sgn(input, *, out=None):
    """``sign`` (ferrotorch has no complex tensors, for which ``sgn`` differs)."""
    return _out(_ft.sign(input), out)


def _inplace_result(self, result, name):
    """Write ``result`` (computed out of place) into ``self``, as PyTorch's in-place ops: the
    result must broadcast to self's shape and its dtype be castable to self's."""
    if not can_cast(result.dtype, self.dtype):
        raise RuntimeError(f"result type {_dtype_name(result.dtype)} can't be cast to the "
                           f"desired output type {_dtype_name(self.dtype)}")
    if tuple(result.shape) != tuple(self.shape):
        try:
            shape = _C.broadcast_shapes(tuple(result.shape), tuple(self.shape))
        except RuntimeError:
            shape = None
        if shape is None or tuple(shape) != tuple(self.shape):
            raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the "
                               f"broadcast shape {list(shape or result.shape)}")
    if self.requires_grad and not result.requires_grad and _ft.is_grad_enabled():
        # A result without history (a comparison): self keeps requiring grad, with a zero
        # gradient to its old value, as PyTorch (copy_ alone would drop the history).
        everywhere = _C.ones(tuple(self.shape), dtype=_C.bool, device=self.device)
        result = _C.where(everywhere, result.to(self.dtype), self)
    self.copy_(result)
    return self


def _make_compare_inplace(op, name):
    def method(self, other):
        other = _as_tensor_like(other, self) if not isinstance(other, Tensor) else other
        return _inplace_result(self, op(self, other), name)

    method.__name__ = name
    method.__qualname__ = f"Tensor.{name}"
    method.__doc__ = f"In-place :meth:`Tensor.{name[:-1]}`: the result cast to self's dtype."
    return method


def _atan2_(self, other):
    return _inplace_result(self, _ft.atan2(self, other), "atan2_")


def _logical_method(op, name):
    def method(self, other):
        return _inplace_result(self, op(self, other), name)

    method.__name__ = name
    method.__qualname__ = f"Tensor.{name}"
    return method


# ------------------------------------------------------------------------ fmax and fmin

def _nan_ignoring(input, other, keep):
    """fmax (``keep`` ">=") or fmin ("<="): where one operand is NaN the other is taken;
    elsewhere maximum / minimum, whose gradient splits ties evenly (PyTorch 2.15)."""
    dtype = _result_type(input, other)
    a, b = input.to(dtype), other.to(dtype)
    if not dtype.is_floating_point:
        take_a = a >= b if keep == ">=" else a <= b
        return _C.where(take_a, a, b)
    both = a.maximum(b) if keep == ">=" else a.minimum(b)
    return _C.where(b.isnan(), a, _C.where(a.isnan(), b, both))


def fmax(input, other, *, out=None):
    """Elementwise maximum ignoring NaN: where one operand is NaN, the other is taken (NaN
    only where both are). At ties the gradient is split evenly, as PyTorch."""
    if not isinstance(other, Tensor):
        raise TypeError("fmax(): argument 'other' (position 2) must be Tensor, not "
                        f"{type(other).__name__}")
    return _out(_nan_ignoring(input, other, ">="), out)


def fmin(input, other, *, out=None):
    """Elementwise minimum ignoring NaN (see :func:`fmax`)."""
    if not isinstance(other, Tensor):
        raise TypeError("fmin(): argument 'other' (position 2) must be Tensor, not "
                        f"{type(other).__name__}")
    return _out(_nan_ignoring(input, other, "<="), out)


# ------------------------------------------------------------------------- split family

def _split_family(name, input, indices_or_sections, min_dims, dim):
    if input.ndim < min_dims:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dims} dimension, "
                           f"but got a tensor with {input.ndim} dimensions!")
    if isinstance(indices_or_sections, numbers.Integral) and not isinstance(
            indices_or_sections, builtins.bool):
        sections = builtins.int(indices_or_sections)
        size = input.shape[dim]
        if sections == 0 or size % sections != 0:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the "
                               f"size of the dimension {size} is not divisible by the "
                               f"split_size {sections}!")
        return tuple(_ft.tensor_split(input, sections, dim))
    return tuple(_ft.tensor_split(input, list(indices_or_sections), dim))


def hsplit(input, indices_or_sections):
    """Split along dimension 1 (dimension 0 for a 1-d tensor), as ``numpy.hsplit``."""
    dim = 1 if input.ndim > 1 else 0
    return _split_family("hsplit", input, indices_or_sections, 1, dim)


def vsplit(input, indices_or_sections):
    """Split along dimension 0 (a tensor of at least 2 dimensions), as ``numpy.vsplit``."""
    return _split_family("vsplit", input, indices_or_sections, 2, 0)


def dsplit(input, indices_or_sections):
    """Split along dimension 2 (a tensor of at least 3 dimensions), as ``numpy.dsplit``."""
    return _split_family("dsplit", input, indices_or_sections, 3, 2)


# ------------------------------------------------------------------ matrix constructions

def block_diag(*tensors):
    """Block-diagonal matrix of the given 0-, 1- or 2-d tensors (a 0-d tensor is a 1x1 block,
    a 1-d tensor a single row); the dtype is the promoted dtype of all blocks."""
    if not tensors:
        return _C.empty((1, 0))
    blocks = []
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"block_diag(): argument 'tensors' must be tuple of Tensors, but "
                            f"found element of type {type(t).__name__} at pos {i}")
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {i} has {t.ndim} dimensions")
        blocks.append(t.reshape(1, 1) if t.ndim == 0 else t.reshape(1, -1) if t.ndim == 1
                      else t)
    dtype = _result_type(*[b for b in blocks])
    device = blocks[0].device
    total_cols = builtins.sum(b.shape[1] for b in blocks)
    rows, col = [], 0
    for b in blocks:
        r, c = b.shape
        parts = []
        if col:
            parts.append(_C.zeros((r, col), dtype=dtype, device=device))
        parts.append(b.to(dtype))
        if total_cols - col - c:
            parts.append(_C.zeros((r, total_cols - col - c), dtype=dtype, device=device))
        rows.append(_C.cat(parts, 1) if len(parts) > 1 else parts[0])
        col += c
    return _C.cat(rows, 0) if len(rows) > 1 else rows[0].clone()


def diagflat(input, offset=0):
    """2-d tensor with the flattened ``input`` on its ``offset``-th diagonal."""
    return _ft.diag(input.reshape(-1), offset)


def vander(x, N=None, increasing=False):
    """Vandermonde matrix: columns ``x**(N-1), ..., x**0`` (ascending powers with
    ``increasing``). Integer and bool inputs give int64."""
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dtype = _C.promote_types(x.dtype, _C.int64)
    rows = x.shape[0]
    if n == 0:
        return _C.empty((rows, 0), dtype=dtype, device=x.device)
    columns = [_C.ones((rows, 1), dtype=dtype, device=x.device)]
    if n > 1:
        xs = x.to(dtype).unsqueeze(1).expand(rows, n - 1)
        columns.append(_ft.cumprod(xs, 1))
    result = _C.cat(columns, 1) if len(columns) > 1 else columns[0]
    return result if increasing else result.flip(1)


# ------------------------------------------------------------------- integer-like functions

def _numpy_binary(name, fn, input, other, integral):
    if not isinstance(other, Tensor):
        raise TypeError(f"{name}(): argument 'other' (position 2) must be Tensor, not "
                        f"{type(other).__name__}")
    dtype = _result_type(input, other)
    if integral and not _is_integral(dtype):
        raise NotImplementedError(f'"{name}_cpu" not implemented for \'{_dtype_name(dtype)}\'')
    if not integral and dtype not in (_C.float32, _C.float64):
        raise NotImplementedError(f'"{name}_cpu" not implemented for \'{_dtype_name(dtype)}\'')
    device = input.device if input.ndim or not other.ndim else other.device
    a = input.detach().cpu().to(dtype).numpy()
    b = other.detach().cpu().to(dtype).numpy()
    result = _C.from_numpy(np.ascontiguousarray(fn(a, b)).astype(a.dtype, copy=False))
    return result.to(device)


def gcd(input, other, *, out=None):
    """Elementwise greatest common divisor (non-negative; ``gcd(0, 0) = 0``) of integer
    tensors."""
    return _out(_numpy_binary("gcd", np.gcd, input, other, True), out)


def lcm(input, other, *, out=None):
    """Elementwise least common multiple (non-negative) of integer tensors."""
    return _out(_numpy_binary("lcm", np.lcm, input, other, True), out)


def _shift(name, left, input, other):
    """``input << other`` / ``input >> other`` as PyTorch's CPU kernels: a shift by a negative
    amount or by the bit width or more gives 0 (left) or the sign fill (right)."""
    if not isinstance(input, Tensor):
        if not isinstance(other, Tensor):
            raise TypeError(f"{name}(): argument 'input' must be Tensor")
        input = _C.full((), input, dtype=_result_type(input, other), device=other.device)
    dtype = _result_type(input, other)
    if not _is_integral(dtype):
        raise NotImplementedError(f'"{name}_cpu" not implemented for \'{_dtype_name(dtype)}\'')
    if isinstance(other, Tensor):
        device = input.device if input.ndim or not other.ndim else other.device
        b = other.detach().cpu().to(dtype).numpy()
    else:
        device = input.device
        b = np.asarray(other).astype(_C.empty((), dtype=dtype).numpy().dtype)
    a = input.detach().cpu().to(dtype).numpy()
    bits = a.dtype.itemsize * 8
    bad = (b < 0) | (b >= bits)
    safe = np.where(bad, 0, b).astype(a.dtype)
    with np.errstate(over="ignore"):
        if left:
            r = np.where(bad, np.zeros((), a.dtype), np.left_shift(a, safe))
        else:
            fill = np.right_shift(a, np.asarray(bits - 1, a.dtype))
            r = np.where(bad, fill, np.right_shift(a, safe))
    result = _C.from_numpy(np.ascontiguousarray(r).astype(a.dtype, copy=False))
    return result.to(device)


def bitwise_left_shift(input, other, *, out=None):
    """Elementwise ``input << other`` of integer tensors (or an integer scalar)."""
    return _out(_shift("lshift", True, input, other), out)


def bitwise_right_shift(input, other, *, out=None):
    """Elementwise arithmetic ``input >> other`` of integer tensors (or an integer scalar)."""
    return _out(_shift("rshift", False, input, other), out)


def nextafter(input, other, *, out=None):
    """The next floating-point value after ``input`` towards ``other``, elementwise
    (float32 and float64)."""
    return _out(_numpy_binary("nextafter", np.nextafter, input, other, False), out)


def ldexp(input, other, *, out=None):
    """``input * 2**other`` (differentiable; integer inputs give a floating result)."""
    return _out(_ft.mul(input, _ft.pow(2.0, other)), out)


def frexp(input, *, out=None):
    """Decompose ``input`` into mantissa (in [0.5, 1) in magnitude) and int32 exponent with
    ``input = mantissa * 2**exponent``; returns ``(mantissa, exponent)``."""
    if not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    work = input.detach().cpu()
    if work.dtype == _C.bfloat16:
        work = work.float()
    mantissa, exponent = np.frexp(work.numpy())
    m = _C.from_numpy(np.ascontiguousarray(mantissa)).to(input.dtype).to(input.device)
    e = _C.from_numpy(np.ascontiguousarray(exponent).astype(np.int32)).to(input.device)
    if input.requires_grad and _C.is_grad_enabled():
        # PyTorch's derivative: d mantissa = d input / exponent.exp2() (2**e in float32,
        # as there), carried by a term that is zero where input is finite and is input
        # itself (exponent 0, mantissa = input) where it is not.
        # (Where that float32 2**e underflows to 0 PyTorch's gradient is inf; here it is 0.)
        finite = _ft.isfinite(input.detach())
        zero = _ft.zeros_like(m)
        scale = _ft.pow(2.0, e.float()).to(input.dtype)
        ok = finite & (scale > 0)
        scale = _ft.where(ok, scale, _ft.ones_like(scale))
        delta = input - _ft.where(finite, input.detach(), zero)
        m = _ft.where(ok, m + delta / scale, _ft.where(finite, m, delta))
    if out is not None:
        out[0].copy_(m)
        out[1].copy_(e)
        return _rt.frexp(out[0], out[1])
    return _rt.frexp(m, e)


# ----------------------------------------------------------------------------- renorm

def renorm(input, p, dim, maxnorm, *, out=None):
    """Each slice ``input.select(dim, i)`` whose ``p``-norm exceeds ``maxnorm`` is scaled to
    norm ``maxnorm`` (exactly, ``maxnorm / (norm + 1e-7)``); the others are unchanged."""
    from ferrotorch import linalg

    # PyTorch's order of checks; numbers print as C++ streams print them (-1, -1e+10).
    if input.ndim <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} "
                           "dimensions")
    if not p > 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if not maxnorm >= 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm:g}")
    if not input.dtype.is_floating_point:
        raise NotImplementedError("linalg.vector_norm: Expected a floating point or complex "
                                  f"tensor as input. Got {_dtype_name(input.dtype)}")
    dim = _wrap_dim(dim, input.ndim)
    others = tuple(d for d in builtins.range(input.ndim) if d != dim)
    norm = linalg.vector_norm(input, p, dim=others, keepdim=True)
    limit = _C.full((), builtins.float(maxnorm), dtype=norm.dtype, device=norm.device)
    factor = _C.where(norm > limit, limit / (norm + 1e-7), _C.ones_like(norm))
    return _out(input * factor, out)


def _renorm_(self, p, dim, maxnorm):
    return _inplace_result(self, renorm(self, p, dim, maxnorm), "renorm_")


# ------------------------------------------------------------------------- construction

def as_tensor(data, dtype=None, device=None):
    """``torch.as_tensor``: shares memory with tensors and NumPy arrays where no conversion is
    needed; a tensor already of the requested dtype and device is returned itself."""
    if (isinstance(data, Tensor) and (dtype is None or dtype == data.dtype)
            and (device is None or _C.device(device) == data.device)):
        return data
    return _C.as_tensor(data, dtype=dtype, device=device)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """Convert ``obj`` (a tensor, NumPy array, DLPack-capable object, sequence or scalar) to
    a tensor, sharing memory when no dtype/device conversion is needed and ``copy`` is not
    True; ``copy=False`` raises where a copy would be needed."""
    if isinstance(obj, Tensor):
        target_dtype = obj.dtype if dtype is None else dtype
        target_device = obj.device if device is None else _C.device(device)
        converts = target_dtype != obj.dtype or target_device != obj.device
        if copy is False and converts:
            raise ValueError(f"can't alias tensor from device '{obj.device}' with dtype "
                             f"{obj.dtype} as device '{target_device}' with dtype "
                             f"{target_dtype}: copy=False was requested")
        result = obj.to(device=target_device, dtype=target_dtype) if converts else obj
        if copy and result is obj:
            result = obj.clone()
    elif isinstance(obj, np.ndarray):
        if copy is False:
            result = _C.as_tensor(obj)
            if (dtype is not None and dtype != result.dtype) or (
                    device is not None and _C.device(device) != result.device):
                raise ValueError("can't alias NumPy array with the requested dtype/device: "
                                 "copy=False was requested")
        elif copy:
            result = _C.tensor(obj, dtype=dtype, device=device)
        else:
            result = _C.as_tensor(obj)
            if dtype is not None or device is not None:
                result = result.to(device=device or result.device, dtype=dtype or result.dtype)
    else:
        if copy is False and not hasattr(obj, "__dlpack__"):
            raise ValueError(f"can't alias a {type(obj).__name__} without copying: "
                             "copy=False was requested")
        if hasattr(obj, "__dlpack__"):
            result = _C.from_dlpack(obj)
            if copy:
                result = result.clone()
            if dtype is not None or device is not None:
                result = result.to(device=device or result.device, dtype=dtype or result.dtype)
        else:
            result = _C.tensor(obj, dtype=dtype, device=device)
    if requires_grad:
        result.requires_grad_(True)
    return result


def range(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
          requires_grad=False):
    """Deprecated ``torch.range``: ``floor((end - start) / step) + 1`` values from ``start``
    with ``end`` included, in the default dtype (floating) unless ``dtype`` is given."""
    if end is None:
        raise TypeError("range() missing 1 required positional arguments: \"end\"")
    warnings.warn("torch.range is deprecated and will be removed in a future release "
                  "because its behavior is inconsistent with Python's range builtin. Instead, "
                  "use torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    if dtype is None:
        dtype = _C.get_default_dtype()
    start, end, step = (builtins.float(v) if not isinstance(v, numbers.Integral) else v
                        for v in (start, end, step))
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if not ((step > 0 and end >= start) or (step < 0 and end <= start)):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    size = builtins.int((end - start) / step + 1)  # PyTorch's size, truncated
    values = _C.arange(size, dtype=_C.float64, device=device) * step + start
    result = values.to(dtype)
    if requires_grad:
        result.requires_grad_(True)
    return _out(result, out)


# ------------------------------------------------------------------------------ histogram

def _hist_check_dtype(input):
    if not input.dtype.is_floating_point or input.dtype in (_C.float16, _C.bfloat16):
        raise NotImplementedError(
            f'"histogramdd" not implemented for \'{_dtype_name(input.dtype)}\'')


def _hist_edges(data, bins, range, name):  # noqa: A002 (PyTorch's name)
    """The bin edges (one 1-d tensor per column of the 2-d ``data``), checked as PyTorch does.
    ``bins`` is a list of ints or a list of edge tensors; ``name`` names the caller in the
    "bins must be > 0" message, as PyTorch does."""
    ndim = data.shape[1]
    if all(isinstance(b, Tensor) for b in bins):
        if len(bins) != ndim:
            raise RuntimeError(f"torch.histogramdd: expected {ndim} sequences of bin edges for a "
                               f"{ndim}-dimensional histogram but got {len(bins)}")
        for d, b in enumerate(bins):
            if b.ndim != 1:
                raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, "
                                   f"but got {b.ndim} dimensions in the bins tensor for "
                                   f"dimension {d}")
            if b.numel() < 2:
                raise RuntimeError(f"{name}: bins must be > 0, but got {b.numel() - 1} for "
                                   f"dimension {d}")
            if b.dtype != data.dtype:
                raise RuntimeError(
                    f"torch.histogramdd: input tensor and bins tensors should have the same "
                    f"dtype, but got input with dtype {_ctype(data.dtype)} and bins for "
                    f"dimension {d} with dtype {_ctype(b.dtype)}")
        return [b.detach().contiguous() for b in bins]
    if len(bins) != ndim:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost "
                           "dimension of the input.")
    for d, b in enumerate(bins):
        if b <= 0:
            raise RuntimeError(f"{name}: bins must be > 0, but got {b} for dimension {d}")
    # PyTorch's default range is [0, 1] (the data's min and max when there is data).
    lo, hi = [0.0] * ndim, [1.0] * ndim
    if range is not None:
        if len(range) != 2 * ndim:
            raise RuntimeError(f"torch.histogramdd: for a {ndim}-dimensional histogram range "
                               f"should have {2 * ndim} elements, but got {len(range)}")
        lo = [builtins.float(v) for v in range[0::2]]
        hi = [builtins.float(v) for v in range[1::2]]
    elif data.shape[0] > 0:
        lo = [builtins.float(v) for v in data.amin(0).tolist()]
        hi = [builtins.float(v) for v in data.amax(0).tolist()]
    edges = []
    for d, b in enumerate(bins):
        if not (np.isfinite(lo[d]) and np.isfinite(hi[d])):
            raise RuntimeError(f"torch.histogramdd: dimension {d}'s range [{lo[d]:g}, "
                               f"{hi[d]:g}] is not finite")
        if lo[d] > hi[d]:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min "
                               f"{lo[d]:g} max {hi[d]:g} for dimension {d}")
        if lo[d] == hi[d]:  # NumPy's widening of an empty range
            lo[d], hi[d] = lo[d] - 0.5, hi[d] + 0.5
        edges.append(_C.linspace(lo[d], hi[d], b + 1, dtype=data.dtype, device=data.device))
    return edges


def _ctype(dtype):
    """The C++ name PyTorch's histogram messages give a dtype (float, double...)."""
    names = {"Float": "float", "Double": "double", "Long": "long int", "Int": "int",
             "Short": "short int", "Bool": "bool", "Half": "c10::Half",
             "BFloat16": "c10::BFloat16"}
    return names.get(_dtype_name(dtype), _dtype_name(dtype))


def _hist_count(data, edges, weight, density):
    """Counts of the rows of the 2-d ``data`` in the bins given by ``edges`` (one tensor per
    column). Each bin is half-open ``[e_i, e_{i+1})`` except the last, which is closed;
    rows outside (or NaN) are ignored."""
    sizes = [builtins.max(e.numel() - 1, 0) for e in edges]
    total = builtins.int(np.prod(sizes)) if sizes else 1
    hist = _C.zeros((total,), dtype=data.dtype, device=data.device)
    if total > 0 and data.shape[0] > 0:
        flat_index = None
        inside = None
        for d, e in enumerate(edges):
            col = data.select(1, d).contiguous()
            index = _ft.bucketize(col, e, right=True) - 1
            # The last edge belongs to the last bin.
            index = _C.where(col == e[-1], _C.full_like(index, sizes[d] - 1), index)
            ok = (col >= e[0]) & (col <= e[-1])
            inside = ok if inside is None else inside & ok
            stride = builtins.int(np.prod(sizes[d + 1:])) if d + 1 < len(sizes) else 1
            flat_index = index * stride if flat_index is None else flat_index + index * stride
        flat_index = _C.where(inside, flat_index, _C.zeros_like(flat_index))
        w = weight.detach().reshape(-1) if weight is not None else _C.ones_like(data.select(1, 0))
        w = _C.where(inside, w, _C.zeros_like(w))
        hist = hist.scatter_add(0, flat_index, w)
    hist = hist.reshape(*sizes)
    if density:
        volume = None
        for d, e in enumerate(edges):
            width = e.narrow(0, 1, sizes[d]) - e.narrow(0, 0, sizes[d])
            shape = [1] * len(sizes)
            shape[d] = sizes[d]
            width = width.reshape(*shape)
            volume = width if volume is None else volume * width
        hist = hist / (hist.sum() * volume)
    return hist


def _hist_check_weight(input, weight, shape):
    if weight is None:
        return
    if tuple(weight.shape) != tuple(shape):
        raise RuntimeError(
            "torch.histogramdd: if weight tensor is provided it should have the same shape as "
            "the input tensor excluding its innermost dimension, but got input with shape "
            f"{list(input.shape)} and weight with shape {list(weight.shape)}")
    if weight.dtype != input.dtype:
        raise RuntimeError(
            "torch.histogramdd: if weight tensor is provided, input tensor and weight tensor "
            f"should have the same dtype, but got input({_ctype(input.dtype)}), and "
            f"weight({_ctype(weight.dtype)})")


def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):  # noqa: A002
    """Histogram of the (flattened) ``input``: ``bins`` equal-width bins over ``range`` (the
    input's min and max by default), or the bin edges given as a 1-d tensor. Each bin is
    half-open ``[e_i, e_{i+1})`` except the last, which is closed; values outside are
    ignored. Returns ``(hist, bin_edges)``; ``weight`` weighs each element, ``density``
    normalises so that the histogram integrates to 1."""
    _hist_check_dtype(input)
    if isinstance(bins, Tensor) and range is not None:
        raise TypeError("histogram(): range cannot be given with a bins tensor")
    data = input.detach().reshape(-1, 1)
    if weight is not None:  # PyTorch flattens both: only the numbers of elements must agree
        weight = weight.reshape(-1)
        _hist_check_weight(data, weight, data.shape[:-1])
    bins_list = [bins] if isinstance(bins, Tensor) else [builtins.int(bins)]
    (edges,) = _hist_edges(data, bins_list, range, "torch.histogram()")
    hist = _hist_count(data, [edges], weight, density)
    if out is not None:
        out[0].copy_(hist)
        out[1].copy_(edges)
        return _rt.histogram(out[0], out[1])
    return _rt.histogram(hist, edges.clone() if isinstance(bins, Tensor) else edges)


def histogramdd(input, bins=10, *, range=None, weight=None, density=False):  # noqa: A002
    """D-dimensional histogram of the rows of ``input`` (shape ``(..., D)``): ``bins`` is an
    int (for every dimension), D ints, or D 1-d tensors of bin edges; ``range`` gives
    ``[min_0, max_0, min_1, max_1...]``. Returns ``(hist, bin_edges)``, ``bin_edges`` a tuple of
    D tensors."""
    if input.ndim < 2:
        if input.ndim == 0:
            raise IndexError("Dimension specified as -1 but tensor has no dimensions")
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    _hist_check_dtype(input)
    ndim = input.shape[-1]
    data = input.detach().reshape(-1, ndim)
    if isinstance(bins, numbers.Integral):
        bins = [builtins.int(bins)] * ndim
    else:
        bins = list(bins)
        if not all(isinstance(b, (Tensor, numbers.Integral)) for b in bins):
            raise TypeError("histogramdd(): bins must be an int, a sequence of ints or a "
                            "sequence of tensors")
    _hist_check_weight(input, weight, input.shape[:-1])
    edges = _hist_edges(data, bins, range, "torch.histogram()")
    hist = _hist_count(data, edges, weight, density)
    return _rt.histogramdd(hist, tuple(edges))


# ------------------------------------------------------------------------ scatter variants

def _check_src(src, slice_shape):
    if tuple(src.shape) != tuple(slice_shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(slice_shape)}")


def select_scatter(input, src, dim, index):
    """Copy of ``input`` with ``src`` embedded at ``index`` along ``dim`` (differentiable in
    both)."""
    out = input.clone()
    view = out.select(dim, index)
    _check_src(src, view.shape)
    view.copy_(src)
    return out


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """Copy of ``input`` with ``src`` embedded at ``input[..., start:end:step, ...]`` (the
    slice along ``dim``)."""
    dim = _wrap_dim(dim, input.ndim)
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    out = input.clone()
    view = out[(slice(None),) * dim + (slice(start, end, step),)]
    _check_src(src, view.shape)
    view.copy_(src)
    return out


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """Copy of ``input`` with ``src`` embedded on the diagonal ``input.diagonal(offset, dim1,
    dim2)``."""
    out = input.clone()
    view = out.diagonal(offset, dim1, dim2)
    _check_src(src, view.shape)
    view.copy_(src)
    return out


def narrow_copy(input, dim, start, length, *, out=None):
    """``input.narrow(dim, start, length)`` as a new (contiguous) tensor."""
    return _out(input.narrow(dim, start, length).clone(memory_format=_ft.contiguous_format), out)


def _sum_to_size(self, *size):
    if len(size) == 1 and not isinstance(size[0], numbers.Integral):
        size = tuple(size[0])
    size = tuple(builtins.int(s) for s in size)
    shape = tuple(self.shape)
    expandable = len(size) <= len(shape) and all(
        s == t or s == 1 for s, t in zip(reversed(size), reversed(shape)))
    if not expandable:
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    lead = len(shape) - len(size)
    dims = list(builtins.range(lead)) + [
        i for i in builtins.range(lead, len(shape)) if size[i - lead] == 1 and shape[i] != 1]
    if not dims:
        return self
    result = self.sum(dims, keepdim=True)
    return result.reshape(size) if lead else result


# ----------------------------------------------------------------------- fill_diagonal_

def _fill_diagonal_(self, fill_value, wrap=False):
    n = self.ndim
    if n < 2:
        raise RuntimeError("dimensions must larger than 1")
    height, width = self.shape[0], self.shape[1]
    if n > 2 and any(s != height for s in self.shape):
        raise RuntimeError("all dimensions of input must be of equal length")
    size = builtins.min(height, width)
    # Positions in the row-major flattening: the diagonal steps by the sum of the
    # contiguous strides; a tall 2-d matrix with ``wrap`` continues every width+1 elements.
    step = builtins.sum(_contiguous_strides(self.shape))
    count = size
    if wrap and n == 2 and height > width + 1:
        count = -(-self.numel() // (width + 1))
    if count == 0:
        return self
    positions = _C.arange(count, device=self.device) * step
    mask = _C.zeros((self.numel(),), dtype=_C.bool, device=self.device)
    mask = mask.index_fill(0, positions, True).reshape(self.shape)
    return self.masked_fill_(mask, fill_value)


# ------------------------------------------------------------------- BLAS-style add* ops

def _check_scalars(dtype, beta, alpha):
    if _is_integral(dtype, include_bool=True):
        for name, v in (("beta", beta), ("alpha", alpha)):
            if isinstance(v, builtins.float):
                raise RuntimeError(f"For integral input tensors, argument {name} must not be a "
                                   "floating point number.")


def _check_expandable(input, shape):
    """PyTorch's expand check of ``input`` against the (2-d) result shape."""
    sizes = tuple(input.shape)
    if len(sizes) > len(shape):
        raise RuntimeError(f"expand: the number of sizes provided ({len(shape)}) must be "
                           f"greater or equal to the number of dimensions in the tensor "
                           f"({len(sizes)})")
    for i in builtins.range(1, len(sizes) + 1):
        if sizes[-i] != 1 and sizes[-i] != shape[-i]:
            raise RuntimeError(f"The expanded size of the tensor ({shape[-i]}) must match the "
                               f"existing size ({sizes[-i]}) at non-singleton dimension "
                               f"{len(shape) - i}.  Target sizes: {list(shape)}.  Tensor "
                               f"sizes: {list(sizes)}")


def _axpby(input, product, beta, alpha):
    """``beta * input + alpha * product``; ``input`` is ignored (NaNs included) when
    ``beta`` is 0."""
    scaled = product if alpha == 1 else product * alpha
    if beta == 0:
        shape = _C.broadcast_shapes(tuple(input.shape), tuple(scaled.shape))
        return scaled.expand(*shape).contiguous() if tuple(shape) != tuple(scaled.shape) \
            else scaled
    return (input if beta == 1 else input * beta) + scaled


def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * sum_i batch1[i] @ batch2[i]``."""
    if batch1.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if batch2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    b, n, m = batch1.shape
    b2, m2, p = batch2.shape
    if b != b2:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got {b} and "
                           f"{b2}")
    if m != m2:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({n}x{m} and {m2}x{p})")
    _check_scalars(input.dtype, beta, alpha)
    # sum_i A_i B_i as one product: [A_0 ... A_{b-1}] (n x b*m) @ [B_0; ...; B_{b-1}].
    _check_expandable(input, (n, p))
    product = batch1.permute(1, 0, 2).reshape(n, b * m).matmul(batch2.reshape(b * m, p))
    return _out(_axpby(input, product, beta, alpha), out)


def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * outer(vec1, vec2)``."""
    if vec1.ndim != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1, but got {vec1.ndim}-D")
    if vec2.ndim != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec2, but got {vec2.ndim}-D")
    _check_scalars(_result_type(input, vec1, vec2), beta, alpha)
    _check_expandable(input, (vec1.shape[0], vec2.shape[0]))
    return _out(_axpby(input, _ft.outer(vec1, vec2), beta, alpha), out)


def _make_add_inplace(fn, name):
    def method(self, a, b, *, beta=1, alpha=1):
        return _inplace_result(self, fn(self, a, b, beta=beta, alpha=alpha), name)

    method.__name__ = name
    method.__qualname__ = f"Tensor.{name}"
    method.__doc__ = f"In-place ``{name[:-1]}`` (the result written into self)."
    return method


# ------------------------------------------------------------------- triangular systems

def _check_system(name, b, A, b_name, A_name):
    if b.ndim < 2:
        raise RuntimeError(f"{name}: {b_name} should have at least 2 dimensions, but has "
                           f"{b.ndim} dimensions instead")
    if A.ndim < 2:
        raise RuntimeError(f"{name}: {A_name} should have at least 2 dimensions, but has "
                           f"{A.ndim} dimensions instead")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    if A.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"{name}: Incompatible matrix sizes for {name}: each A matrix is "
                           f"{A.shape[-1]} by {A.shape[-1]} but each b matrix is "
                           f"{b.shape[-2]} by {b.shape[-1]}")
    if b.dtype != A.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but got b.dtype = "
                           f"{b.dtype} and A.dtype = {A.dtype}")
    if not b.dtype.is_floating_point:
        raise NotImplementedError(f'"{name}_cpu" not implemented for \'{_dtype_name(b.dtype)}\'')


def cholesky_solve(input, input2, upper=False, *, out=None):
    """Solve ``A X = input`` given the Cholesky factor ``input2`` of ``A`` (lower, ``A = L
    L^T``; upper with ``upper=True``, ``A = U^T U``). Only that triangle of the factor is
    read; batches broadcast. The gradient with respect to the factor is PyTorch's (that of
    ``A = L L^T`` with the full factor)."""
    from ferrotorch import linalg

    _check_system("cholesky_solve", input, input2, "b", "u")
    tri = input2.triu() if upper else input2.tril()
    # The triangle's values, the full factor's gradient (as PyTorch's backward).
    factor = tri.detach() + (input2 - input2.detach())
    if upper:
        y = linalg.solve(factor.mT, input)
        x = linalg.solve(factor, y)
    else:
        y = linalg.solve(factor, input)
        x = linalg.solve(factor.mT, y)
    return _out(x, out)


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """Solve ``A X = b`` for triangular ``A`` (``A^T X = b`` with ``transpose``; only the
    ``upper`` or lower triangle read, its diagonal taken as ones with ``unitriangular``).
    Returns ``(solution, cloned_coefficient)``, the latter a copy of ``A``."""
    from ferrotorch import linalg

    _check_system("triangular_solve", b, A, "b", "A")
    # op(A)'s triangle is the other one when transposed.
    solution = linalg.solve_triangular(A.mT if transpose else A, b, upper=upper != transpose,
                                       unitriangular=unitriangular)
    coefficient = A.clone()
    if out is not None:
        out[0].copy_(solution)
        out[1].copy_(coefficient)
        return _rt.triangular_solve(out[0], out[1])
    return _rt.triangular_solve(solution, coefficient)


# ------------------------------------------------------------------------- Tensor utilities

def _resize_(self, *sizes, memory_format=None):
    if len(sizes) == 1 and not isinstance(sizes[0], numbers.Integral):
        sizes = tuple(sizes[0])
    sizes = tuple(builtins.int(s) for s in sizes)
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(sizes)}: "
                           f"{list(sizes)}")
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    if tuple(self.shape) == sizes:
        return self  # the same shape keeps the strides, as PyTorch
    strides = _contiguous_strides(sizes)
    offset = self.storage_offset()
    needed = offset + 1 + builtins.sum((s - 1) * st for s, st in zip(sizes, strides))
    held = self.untyped_storage().nbytes() // self.element_size()
    if 0 not in sizes and needed > held:
        # PyTorch enlarges the storage in place; here the tensor moves to a larger one that
        # starts with the old elements (other views of the old storage keep it).
        grown = _C.zeros(needed, dtype=self.dtype, device=self.device)
        grown[:held] = self.as_strided((held,), (1,), 0)
        self.data = grown
    self.as_strided_(sizes, strides, offset)
    return self


def _resize_as_(self, the_template, *, memory_format=None):
    return _resize_(self, tuple(the_template.shape))


def _pin_memory(self, device=None):
    if self.is_cuda:
        raise RuntimeError(f"cannot pin '{self.type()}' only dense CPU tensors can be pinned")
    return self.clone()


_shared = {}


def _share_memory_(self):
    if not self.is_cuda:
        key = id(self)
        _shared[key] = weakref.ref(self, lambda _ref, key=key: _shared.pop(key, None))
    return self


def _is_shared(self):
    if self.is_cuda:
        return True
    ref = _shared.get(id(self))
    return ref is not None and ref() is self


_interop_threads = None


def get_num_interop_threads():
    """Number of threads used for inter-op parallelism (ferrotorch runs ops on one shared
    pool, so this is bookkeeping: the value set, else the intra-op thread count)."""
    return _interop_threads if _interop_threads is not None else _C.get_num_threads()


def set_num_interop_threads(num):
    """Set the inter-op thread count; as in PyTorch, only once."""
    global _interop_threads
    if not isinstance(num, numbers.Integral) or num <= 0:
        raise RuntimeError("Expected positive number of threads")
    if _interop_threads is not None:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work "
                           "has started or set_num_interop_threads called")
    _interop_threads = builtins.int(num)


# ------------------------------------------------------------------------ Tensor methods

def _install(name, fn):
    if not hasattr(Tensor, name):
        setattr(Tensor, name, fn)


def _shift_inplace(left):
    def op(self, other):
        result = _shift("lshift" if left else "rshift", left, self, other)
        return _inplace_result(self, result, "lshift" if left else "rshift")
    return op


_install("bitwise_left_shift", bitwise_left_shift)
_install("bitwise_right_shift", bitwise_right_shift)
_install("__lshift__", bitwise_left_shift)
_install("__rshift__", bitwise_right_shift)
_install("__rlshift__", lambda self, other: bitwise_left_shift(other, self))
_install("__rrshift__", lambda self, other: bitwise_right_shift(other, self))
_install("bitwise_left_shift_", _shift_inplace(True))
_install("bitwise_right_shift_", _shift_inplace(False))
_install("__ilshift__", _shift_inplace(True))
_install("__irshift__", _shift_inplace(False))

for _alias, _target in (
    ("absolute", "abs"), ("arccos", "acos"), ("arccosh", "acosh"), ("arcsin", "asin"),
    ("arcsinh", "asinh"), ("arctan", "atan"), ("arctan2", "atan2"), ("arctanh", "atanh"),
    ("fix", "trunc"), ("sgn", "sign"), ("greater", "gt"), ("greater_equal", "ge"),
    ("less", "lt"), ("less_equal", "le"), ("not_equal", "ne"),
):
    _install(_alias, getattr(Tensor, _target))
    if hasattr(Tensor, _target + "_"):
        _install(_alias + "_", getattr(Tensor, _target + "_"))

for _name, _op in (("eq_", _ft.eq), ("ne_", _ft.ne), ("lt_", _ft.lt), ("le_", _ft.le),
                   ("gt_", _ft.gt), ("ge_", _ft.ge)):
    _install(_name, _make_compare_inplace(_op, _name))
_install("atan2_", _atan2_)
for _name, _op in (("logical_xor_", _ft.logical_xor), ("logical_and_", _ft.logical_and),
                   ("logical_or_", _ft.logical_or)):
    _install(_name, _logical_method(_op, _name))
# Aliases of the in-place methods just installed.
for _alias, _target in (("greater_", "gt_"), ("greater_equal_", "ge_"), ("less_", "lt_"),
                        ("less_equal_", "le_"), ("not_equal_", "ne_"), ("arctan2_", "atan2_")):
    _install(_alias, getattr(Tensor, _target))

_install("fmax", fmax)
_install("fmin", fmin)
_install("hsplit", hsplit)
_install("vsplit", vsplit)
_install("dsplit", dsplit)
_install("diagflat", diagflat)
_install("gcd", gcd)
_install("lcm", lcm)
_install("gcd_", lambda self, other: _inplace_result(self, gcd(self, other), "gcd_"))
_install("lcm_", lambda self, other: _inplace_result(self, lcm(self, other), "lcm_"))
_install("ldexp", ldexp)
_install("ldexp_", lambda self, other: _inplace_result(self, ldexp(self, other), "ldexp_"))
_install("frexp", frexp)
_install("nextafter", nextafter)
_install("nextafter_",
         lambda self, other: _inplace_result(self, nextafter(self, other), "nextafter_"))
_install("renorm", renorm)
_install("renorm_", _renorm_)
_install("is_complex", lambda self: False)
_install("is_signed", lambda self: self.dtype.is_signed)
_install("is_nonzero", is_nonzero)
_install("histogram", histogram)
_install("select_scatter", select_scatter)
_install("slice_scatter", slice_scatter)
_install("diagonal_scatter", diagonal_scatter)
_install("narrow_copy", narrow_copy)
_install("sum_to_size", _sum_to_size)
_install("fill_diagonal_", _fill_diagonal_)
_install("addmm_", _make_add_inplace(_ft.addmm, "addmm_"))
_install("addmv_", _make_add_inplace(_ft.addmv, "addmv_"))
_install("baddbmm_", _make_add_inplace(_ft.baddbmm, "baddbmm_"))
_install("addbmm", addbmm)
_install("addbmm_", _make_add_inplace(addbmm, "addbmm_"))
_install("addr", addr)
_install("addr_", _make_add_inplace(addr, "addr_"))
_install("cholesky_solve", cholesky_solve)
_install("triangular_solve", triangular_solve)
_install("resize_", _resize_)
_install("resize_as_", _resize_as_)
_install("pin_memory", _pin_memory)
_install("share_memory_", _share_memory_)
_install("is_shared", _is_shared)
