"""The default device of the factory functions: ``torch.set_default_device``,
``torch.get_default_device`` and ``with torch.device(...):``.

While a device other than the CPU is the default, the factory functions (``tensor``,
``zeros``, ``ones``, ``empty``, ``full``, ``rand``, ``randn``, ``randint``, ``arange``,
``linspace``, ``eye``, the window functions...; PyTorch's list) are replaced, in the
``ferrotorch`` namespace and in the native module (which ``nn`` uses to allocate parameters),
by wrappers that pass ``device=<default>`` when the call gives no device or ``device=None``.
With the CPU as the default (the initial state) the wrappers are swapped out, so the common
case calls the unwrapped functions. The ``*_like`` functions keep their input's device, as in
PyTorch. The setting is per thread, as PyTorch's; the wrappers are installed while any thread
has a non-CPU default.

Setting ``'cuda'`` without a GPU is allowed; the factory calls then raise the native
module's RuntimeError saying why CUDA cannot be used.
"""

import functools
import threading

from ferrotorch import _C

__all__ = ["set_default_device", "get_default_device"]

# PyTorch's torch.utils._device._device_constructors(), where ferrotorch has them.
_FACTORIES = (
    "tensor", "as_tensor", "asarray", "scalar_tensor", "empty", "empty_strided",
    "empty_permuted", "zeros", "ones", "full", "eye", "arange", "range", "linspace",
    "logspace", "rand", "randn", "randint", "randperm", "tril_indices", "triu_indices",
    "bartlett_window", "blackman_window", "hamming_window", "hann_window", "kaiser_window",
)

_LOCAL = threading.local()  # .default: None (the CPU) or a non-CPU _C.device; .stack
_swaps = None  # [(namespace, name, original, wrapper)], built on first use
_threads_with_default = 0  # threads whose default is not the CPU; wrappers installed while > 0
_lock = threading.Lock()


def _default():
    return getattr(_LOCAL, "default", None)


def _wrap(fn):
    @functools.wraps(fn)
    def with_default_device(*args, **kwargs):
        if kwargs.get("device") is None:
            default = getattr(_LOCAL, "default", None)
            if default is not None:
                kwargs["device"] = default
        return fn(*args, **kwargs)

    with_default_device.__wrapped_by_default_device__ = fn
    return with_default_device


def _build_swaps():
    import ferrotorch

    swaps = []
    for namespace in (ferrotorch, _C):
        for name in _FACTORIES:
            fn = getattr(namespace, name, None)
            if fn is not None:
                swaps.append((namespace, name, fn, _wrap(fn)))
    return swaps


def _install(on):
    global _swaps
    if _swaps is None:
        if not on:
            return
        _swaps = _build_swaps()
    for namespace, name, original, wrapper in _swaps:
        setattr(namespace, name, wrapper if on else original)


def _as_device(device):
    if isinstance(device, _C.device):
        return device
    if isinstance(device, int):  # PyTorch reads a bare index as that CUDA device
        return _C.device("cuda", device)
    return _C.device(device)


def set_default_device(device):
    """Make ``device`` the device the factory functions use when given no ``device``
    (``None`` resets it to the CPU). Nothing is checked until a tensor is created, as in
    PyTorch: with ``'cuda'`` and no GPU, the factory calls raise."""
    global _threads_with_default
    d = None if device is None else _as_device(device)
    if d is not None and d.type == "cpu":
        d = None
    was_set = _default() is not None
    _LOCAL.default = d
    if (d is not None) != was_set:
        with _lock:
            _threads_with_default += 1 if d is not None else -1
            if _threads_with_default == (1 if d is not None else 0):
                _install(d is not None)


def get_default_device():
    """The device the factory functions use by default (``cpu`` unless set); a CUDA
    default without an index reads as the current CUDA device, as PyTorch."""
    default = _default()
    if default is None:
        return _C.device("cpu")
    if default.index is None and default.type == "cuda":
        from ferrotorch import cuda

        return _C.device("cuda", cuda._current_device)
    return default


def _device_enter(self):
    stack = getattr(_LOCAL, "stack", None)
    if stack is None:
        stack = _LOCAL.stack = []
    stack.append(_default())
    set_default_device(self)
    return self


def _device_exit(self, exc_type, exc, tb):
    set_default_device(_LOCAL.stack.pop())
    return False


# `with torch.device('cuda'):` sets the default device for the block, as in PyTorch.
if not hasattr(_C.device, "__enter__"):
    _C.device.__enter__ = _device_enter
    _C.device.__exit__ = _device_exit
