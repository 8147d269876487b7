"""``Tensor.apply_(callable)``, ``Tensor.map_(other, callable)`` and ``Tensor.map2_(x, y,
callable)``: PyTorch's per-element Python callbacks on CPU tensors (torch/csrc/utils/
tensor_apply.cpp). Each element of ``self`` is visited in logical row-major order, the callable
gets Python scalars (``float``/``int``/``bool``), and its result is converted the way PyTorch's
``store_scalar`` converts it and written back into ``self``'s own memory, strided or not.

The elements are read and written one at a time through NumPy views that share the tensors'
memory, so the observable behaviour is PyTorch's also in the corner cases: ``map_`` with an
``other`` that overlaps ``self`` sees the values already written, an exception from the callable
leaves the elements before it written, and expanded (stride-0) tensors are written repeatedly.
As in PyTorch, the version counter is not bumped and tensors that require grad are refused
(whatever the grad mode)."""

import operator

import numpy as np

from ferrotorch import _C

Tensor = _C.Tensor

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint8": (0, 2**8 - 1),
}


def _dtype_name(t):
    return str(t.dtype).rsplit(".", 1)[-1]


def _unpack_double(obj):
    """``THPUtils_unpackDouble``: ``PyFloat_AsDouble`` (``__float__``, then ``__index__``)."""
    if isinstance(obj, float):
        return float(obj)
    to_float = getattr(type(obj), "__float__", None)
    if to_float is not None:
        value = to_float(obj)
        if not isinstance(value, float):
            raise TypeError(f"{type(obj).__name__}.__float__ returned non-float "
                            f"(type {type(value).__name__})")
        return float(value)
    if getattr(type(obj), "__index__", None) is not None:
        return float(operator.index(obj))  # OverflowError past a double, as PyTorch's
    raise TypeError(f"must be real number, not {type(obj).__name__}")


def _unpack_long(obj):
    """``THPUtils_unpackLong``: ``__index__`` into a C ``long long``."""
    value = operator.index(obj)
    if not -(2**63) <= value < 2**63:
        raise ValueError("Overflow when unpacking long long")
    return value


def _unpack_integral(obj, name):
    """``unpackIntegral<T>``: Python floats truncate toward zero (checked against the range);
    ints are checked too, except that an unsigned type takes negatives down to ``-max`` as
    their two's-complement wrap (c10::overflows)."""
    lo, hi = _INT_RANGES[name]
    if isinstance(obj, float):
        value = float(obj)
        if value != value or value < lo or value > hi:
            raise RuntimeError(f"value cannot be converted to type {name} without overflow")
        return int(value)
    value = _unpack_long(obj)
    if lo == 0 and value < 0:
        if -value > hi:
            raise RuntimeError(f"value cannot be converted to type {name} without overflow")
        return value & hi
    if value < lo or value > hi:
        raise RuntimeError(f"value cannot be converted to type {name} without overflow")
    return value


def _unpack_bool(obj):
    """``THPUtils_unpackNumberAsBool``: floats and complex by value, otherwise ``__index__``
    (an int past ``long long`` is True, as NumPy's)."""
    if isinstance(obj, float):
        return bool(obj)
    if isinstance(obj, complex):
        return not (obj.real == 0 and obj.imag == 0)
    return operator.index(obj) != 0


def _float_to_bf16_bits(value):
    """Round a double to bfloat16 as c10 does: to float32 first, then to nearest even."""
    bits = int(np.array([value], dtype=np.float32).view(np.uint32)[0])
    if (bits & 0x7F800000) == 0x7F800000 and (bits & 0x007FFFFF):
        return 0x7FC0  # NaN
    return ((bits + (((bits >> 16) & 1) + 0x7FFF)) >> 16) & 0xFFFF


def _bf16_bits_to_float(bits):
    return float(np.array([(int(bits) & 0xFFFF) << 16], dtype=np.uint32).view(np.float32)[0])


def _accessors(t):
    """(NumPy view sharing ``t``'s memory, load(element) -> Python scalar, store(value))."""
    name = _dtype_name(t)
    if name == "bfloat16":
        # NumPy has no bfloat16: work on the raw 16-bit patterns (same memory, same strides).
        return (t.view(_C.int16).numpy(), _bf16_bits_to_float,
                lambda obj: np.int16(np.uint16(_float_to_bf16_bits(_unpack_double(obj)))))
    if name in ("float16", "float32", "float64"):
        return t.numpy(), lambda v: float(v), _unpack_double
    if name == "bool":
        return t.numpy(), lambda v: bool(v), _unpack_bool
    return t.numpy(), lambda v: int(v), lambda obj: _unpack_integral(obj, name)


def _expand_check(self, other):
    """``expand_inplace(self, other)``'s checks with PyTorch's messages: ``other`` broadcasts
    to ``self``'s shape (``self`` itself never changes shape)."""
    target, shape = list(self.shape), list(other.shape)
    if len(shape) > len(target):
        raise RuntimeError(
            f"expand({other.type()}{{{shape}}}, size={target}): the number of sizes provided "
            f"({len(target)}) must be greater or equal to the number of dimensions in the "
            f"tensor ({len(shape)})")
    offset = len(target) - len(shape)
    for i in reversed(range(len(shape))):  # from the last dimension, as inferExpandGeometry
        size = shape[i]
        if size != 1 and size != target[offset + i]:
            raise RuntimeError(
                f"The expanded size of the tensor ({target[offset + i]}) must match the "
                f"existing size ({size}) at non-singleton dimension {offset + i}.  Target "
                f"sizes: {target}.  Tensor sizes: {shape}")


def _run(fn, self, others):
    """Visit ``self`` in logical row-major order, reading the (broadcast) others live."""
    if self.numel() == 0:
        return self
    out, load, store = _accessors(self)
    readers = []
    for o in others:
        arr, o_load, _ = _accessors(o)
        readers.append((np.broadcast_to(arr, out.shape), o_load))
    with np.errstate(over="ignore", invalid="ignore"):  # float32(1e300) is inf, as a C cast
        for idx in np.ndindex(*out.shape):
            args = [load(out[idx])]
            args.extend(o_load(arr[idx]) for arr, o_load in readers)
            out[idx] = store(fn(*args))
    return self


def _check_grad(name, *tensors):
    if any(t.requires_grad for t in tensors):
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use "
                           f"var.detach().{name}() instead.")


def _check_same_type(name, self, other, what):
    if other.dtype != self.dtype or other.device != self.device:
        raise TypeError(f"{name}: expected {self.type()} for {what} (got {other.type()})")


def _parse(name, params, args, kwargs):
    """PythonArgParser for ``name(Tensor ..., PyObject* callable)``."""
    if len(args) > len(params):
        raise TypeError(f"{name}() takes {len(params)} positional arguments but {len(args)} "
                        f"were given")
    values = dict(zip(params, args))
    for key, value in kwargs.items():
        if key not in params:
            raise TypeError(f"{name}() got an unexpected keyword argument '{key}'")
        if key in values:
            raise TypeError(f"{name}() got multiple values for argument '{key}'")
        values[key] = value
    missing = [p for p in params if p not in values]
    if missing:
        quoted = ", ".join(f'"{p}"' for p in missing)
        raise TypeError(f"{name}() missing {len(missing)} required positional arguments: "
                        f"{quoted}")
    for pos, key in enumerate(params[:-1], start=1):
        if not isinstance(values[key], Tensor):
            raise TypeError(f"{name}(): argument '{key}' (position {pos}) must be Tensor, not "
                            f"{type(values[key]).__name__}")
    return [values[p] for p in params]


def apply_(self, *args, **kwargs):
    """Replace every element ``v`` of this CPU tensor by ``callable(v)``, in place; returns
    ``self``. Slow (one Python call per element): for PyTorch's own use in tests and ad hoc
    code."""
    if kwargs:
        raise TypeError("TensorBase.apply_() takes no keyword arguments")
    if len(args) != 1:
        raise TypeError(f"TensorBase.apply_() takes exactly one argument ({len(args)} given)")
    _check_grad("apply_", self)
    if self.device.type != "cpu":
        raise TypeError("apply_ is only implemented on CPU tensors")
    return _run(args[0], self, [])


def map_(self, *args, **kwargs):
    """``self[i] = callable(self[i], other[i])`` for every element, ``other`` broadcast to
    ``self``'s shape; both tensors of the same type, on the CPU. Returns ``self``."""
    other, fn = _parse("map_", ("other", "callable"), args, kwargs)
    _check_grad("map_", self, other)
    _check_same_type("map_", self, other, "'other'")
    if self.device.type != "cpu":
        raise TypeError("map_ is only implemented on CPU tensors")
    _expand_check(self, other)
    return _run(fn, self, [other])


def map2_(self, *args, **kwargs):
    """``self[i] = callable(self[i], x[i], y[i])`` for every element, ``x`` and ``y``
    broadcast to ``self``'s shape; all three of the same type, on the CPU. Returns ``self``."""
    x, y, fn = _parse("map2_", ("x", "y", "callable"), args, kwargs)
    _check_grad("map2_", self, x, y)
    _check_same_type("map2_", self, x, "argument 'x'")
    _check_same_type("map2_", self, y, "argument 'y'")
    if self.device.type != "cpu":
        raise TypeError("map2_ is only implemented on CPU tensors")
    _expand_check(self, x)
    _expand_check(self, y)
    return _run(fn, self, [x, y])


def _install():
    for name, fn in (("apply_", apply_), ("map_", map_), ("map2_", map2_)):
        if not hasattr(Tensor, name):
            setattr(Tensor, name, fn)
