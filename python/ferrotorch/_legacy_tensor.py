"""PyTorch's legacy typed tensor classes (``torch.FloatTensor``, ``torch.LongTensor``, ...,
``torch.cuda.FloatTensor``) and ``Tensor.type`` with a type name or class.

Each class is a constructor (``FloatTensor([1, 2])`` copies data, ``FloatTensor(2, 3)`` makes an
uninitialised tensor of that size, ``FloatTensor()`` an empty one) and an ``isinstance`` check on
dtype and device; instances are ordinary :class:`ferrotorch.Tensor` objects."""

import numbers

from ferrotorch import _C

Tensor = _C.Tensor

_NAMES = {
    "FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16",
    "BFloat16Tensor": "bfloat16", "ByteTensor": "uint8", "CharTensor": "int8",
    "ShortTensor": "int16", "IntTensor": "int32", "LongTensor": "int64", "BoolTensor": "bool",
}


class _LegacyTensorMeta(type):
    def __instancecheck__(cls, obj):
        return (isinstance(obj, Tensor) and obj.dtype == cls.dtype
                and obj.device.type == cls._device_type)

    def __call__(cls, *args, device=None):
        dev = cls._device_type if device is None else device
        if len(args) == 1 and isinstance(args[0], Tensor):
            src = args[0]
            if src.dtype != cls.dtype:
                raise TypeError(f"expected {cls.dtype} (got {src.dtype})")
            return src.view_as(src)  # an alias of the same storage (as PyTorch)
        if all(isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in args):
            return _C.empty(*[int(a) for a in args] if args else (0,), dtype=cls.dtype,
                            device=dev)
        if len(args) == 1 and isinstance(args[0], (tuple, list)) and type(args[0]).__name__ \
                == "Size":
            return _C.empty(*args[0], dtype=cls.dtype, device=dev)
        if len(args) == 1:
            return _C.tensor(args[0], dtype=cls.dtype, device=dev)
        raise TypeError(f"{cls.__name__}(): invalid arguments {args}")

    def __repr__(cls):
        return f"<class '{cls.__module__}.{cls.__name__}'>"


def _make(name, dtype_name, device_type, module):
    return _LegacyTensorMeta(name, (), {"dtype": getattr(_C, dtype_name),
                                        "_device_type": device_type, "__module__": module,
                                        "is_cuda": device_type == "cuda"})


CPU_TYPES = {n: _make(n, d, "cpu", "ferrotorch") for n, d in _NAMES.items()}
CUDA_TYPES = {n: _make(n, d, "cuda", "ferrotorch.cuda") for n, d in _NAMES.items()}


def _resolve(t):
    """``(dtype, device_type)`` for a legacy class or a type name such as
    ``'torch.cuda.LongTensor'``; ``None`` for anything else."""
    if isinstance(t, _LegacyTensorMeta):
        return t.dtype, t._device_type
    if isinstance(t, str):
        parts = t.split(".")
        if len(parts) >= 2 and parts[0] in ("torch", "ferrotorch") and parts[-1] in _NAMES:
            if parts[1:-1] == ["cuda"]:
                return getattr(_C, _NAMES[parts[-1]]), "cuda"
            if len(parts) == 2:
                return getattr(_C, _NAMES[parts[-1]]), "cpu"
        raise ValueError(f"invalid type: '{t}'")
    return None


_native_type = Tensor.type


def _type(self, dtype=None, non_blocking=False, **kwargs):
    """``Tensor.type()``: the type name; ``Tensor.type(t)``: a copy converted to ``t`` (a dtype,
    a legacy class such as ``ferrotorch.FloatTensor``, or a name such as
    ``'torch.cuda.FloatTensor'``), or ``self`` when it already is of that type."""
    resolved = _resolve(dtype) if dtype is not None else None
    if resolved is None:
        return _native_type(self, dtype, **kwargs) if dtype is not None else _native_type(self)
    dt, device_type = resolved
    if self.dtype == dt and self.device.type == device_type:
        return self
    return self.to(device=device_type, dtype=dt, non_blocking=non_blocking)


Tensor.type = _type


_default_from_tensor_type = [False]  # whether the default device is CUDA because of a type


def set_default_tensor_type(t):
    """Deprecated ``torch.set_default_tensor_type``: ``t`` (a floating legacy class such as
    ``torch.DoubleTensor``/``torch.cuda.FloatTensor`` or its name) sets the default dtype and,
    for a CUDA type, makes factories create CUDA tensors."""
    import warnings

    import ferrotorch
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
                  UserWarning, stacklevel=2)
    if isinstance(t, str):
        try:
            resolved = _resolve(t)
        except ValueError:
            raise ModuleNotFoundError(f"No module named '{t.rsplit('.', 1)[0]}'") from None
    else:
        resolved = _resolve(t)
        if resolved is None:
            raise TypeError("invalid type object: only floating-point types are supported as "
                            "the default type")
    dt, device_type = resolved
    if not dt.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _C.set_default_dtype(dt)
    if device_type == "cuda":
        ferrotorch.set_default_device("cuda")
        _default_from_tensor_type[0] = True
    elif _default_from_tensor_type[0]:
        ferrotorch.set_default_device(None)
        _default_from_tensor_type[0] = False
