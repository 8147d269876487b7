"""ferrotorch.cuda: CUDA devices, memory counters, streams and events (PyTorch's torch.cuda).

The native module finds the NVIDIA driver, NVRTC and cuBLAS at run time, so the same wheel
works with and without a GPU: without one, ``is_available()`` is False and moving a tensor to
``'cuda'`` raises a RuntimeError that says why.

>>> import ferrotorch as torch
>>> device = "cuda" if torch.cuda.is_available() else "cpu"
>>> torch.ones(2, device=device).sum().item()
2.0
"""

import contextlib
import glob
import os
import sys

from ferrotorch import _C


def _nvidia_wheel_dirs():
    """Library and include directories of NVIDIA's pip wheels (nvidia-*-cu12) on sys.path."""
    lib_dirs, include_dirs = [], []
    for base in sys.path:
        root = os.path.join(base or ".", "nvidia")
        if not os.path.isdir(root):
            continue
        lib_dirs += sorted(glob.glob(os.path.join(root, "*", "lib")))
        include_dirs += sorted(glob.glob(os.path.join(root, "*", "include")))
    return lib_dirs, include_dirs


_C._cuda_set_search_paths(*_nvidia_wheel_dirs())

_current_device = 0
_seed = None


def _index(device):
    """A device index from None (the current device), an int, 'cuda:N' or a device."""
    if device is None:
        return _current_device
    if isinstance(device, int):
        return device
    d = _C.device(device) if isinstance(device, str) else device
    if d.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {d}")
    return _current_device if d.index is None else d.index


def is_available():
    """True when an NVIDIA GPU and its driver can be used."""
    return _C._cuda_is_available()


def device_count():
    """Number of CUDA devices (0 without a GPU or driver)."""
    return _C._cuda_device_count()


def is_initialized():
    return is_available()


def init():
    """Initialise CUDA (a RuntimeError saying why when it cannot be used)."""
    if not is_available():
        raise RuntimeError(f"CUDA is not available: {_C._cuda_unavailable_reason()}")


def _lazy_check(device=None):
    idx = _index(device)
    if not is_available():
        raise RuntimeError(f"CUDA is not available: {_C._cuda_unavailable_reason()}")
    return idx


def current_device():
    """Index of the current device."""
    _lazy_check()
    return _current_device


def set_device(device):
    """Select the current device (ints, 'cuda:N' or devices)."""
    global _current_device
    idx = _index(device)
    if idx < 0:
        return
    if idx >= device_count():
        raise RuntimeError(
            f"CUDA error: invalid device ordinal {idx} ({device_count()} device(s) found)")
    _current_device = idx


class device:
    """Context manager that changes the current device."""

    def __init__(self, device):
        self.idx = -1 if device is None else _index(device)
        self.prev = -1

    def __enter__(self):
        if self.idx >= 0:
            self.prev = _current_device
            set_device(self.idx)

    def __exit__(self, *exc):
        if self.prev >= 0:
            set_device(self.prev)
        return False


def get_device_name(device=None):
    return _C._cuda_get_device_name(_lazy_check(device))


def get_device_capability(device=None):
    return _C._cuda_get_device_capability(_lazy_check(device))


def synchronize(device=None):
    """Wait for all queued work on the device."""
    _C._cuda_synchronize(_lazy_check(device))


def manual_seed(seed):
    """Seed CUDA random numbers. ferrotorch's default generator keys both the CPU streams and
    the GPU's Philox kernels (its seed and call counter), so this seeds that generator."""
    global _seed
    _seed = int(seed)
    if is_available():
        _C.manual_seed(_seed)


def manual_seed_all(seed):
    manual_seed(seed)


def seed():
    import random as _random

    manual_seed(_random.randrange(2**63))


def seed_all():
    seed()


def initial_seed():
    return _C.initial_seed() if _seed is None else _seed


# ---------------------------------------------------------------------------- memory


def memory_allocated(device=None):
    """Bytes held by tensors on the device (allocator block sizes)."""
    return _C._cuda_memory_stats(_index(device))[0]


def max_memory_allocated(device=None):
    return _C._cuda_memory_stats(_index(device))[1]


def memory_reserved(device=None):
    """Bytes obtained from the driver: allocated plus cached free blocks."""
    return _C._cuda_memory_stats(_index(device))[2]


def max_memory_reserved(device=None):
    return memory_reserved(device)


def reset_peak_memory_stats(device=None):
    _C._cuda_reset_peak_memory_stats(_index(device))


def reset_max_memory_allocated(device=None):
    reset_peak_memory_stats(device)


def empty_cache():
    """Give cached free blocks back to the driver."""
    _C._cuda_empty_cache()


def memory_stats(device=None):
    a, peak, r = _C._cuda_memory_stats(_index(device))
    return {
        "allocated_bytes.all.current": a,
        "allocated_bytes.all.peak": peak,
        "reserved_bytes.all.current": r,
    }


# ---------------------------------------------------------------------------- streams, events


class Stream:
    """A CUDA stream: work queued on it runs in order (``torch.cuda.Stream``)."""

    def __init__(self, device=None, priority=0, _native=None):
        self._native = _native if _native is not None else _C._CudaStream(_lazy_check(device))
        self.priority = priority

    @property
    def device(self):
        return _C.device("cuda", self._native.device_index)

    @property
    def cuda_stream(self):
        return self._native.cuda_stream

    def synchronize(self):
        self._native.synchronize()

    def query(self):
        return self._native.query()

    def wait_stream(self, stream):
        self._native.wait_stream(stream._native)

    def wait_event(self, event):
        self._native.wait_event(event._native)

    def record_event(self, event=None):
        event = Event() if event is None else event
        event.record(self)
        return event

    def __eq__(self, other):
        return isinstance(other, Stream) and self._native.same(other._native)

    def __hash__(self):
        return hash((self._native.device_index, self.cuda_stream))

    def __repr__(self):
        return f"<ferrotorch.cuda.Stream device={self.device} cuda_stream={self.cuda_stream:#x}>"


def current_stream(device=None):
    return Stream(_native=_C._CudaStream.current(_lazy_check(device)))


def default_stream(device=None):
    return Stream(_native=_C._CudaStream.default(_lazy_check(device)))


def set_stream(stream):
    if stream is not None:
        stream._native.make_current()


@contextlib.contextmanager
def stream(stream):
    """Queue work on ``stream`` inside the block (``with torch.cuda.stream(s):``)."""
    if stream is None:
        yield
        return
    prev = current_stream(stream._native.device_index)
    stream._native.make_current()
    try:
        yield
    finally:
        prev._native.make_current()


class Event:
    """A CUDA event: marks a point in a stream, for timing and ordering."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self._native = _C._CudaEvent(_lazy_check(), bool(enable_timing))
        self.enable_timing = enable_timing

    def record(self, stream=None):
        self._native.record((stream or current_stream())._native)

    def wait(self, stream=None):
        (stream or current_stream()).wait_event(self)

    def query(self):
        return self._native.query()

    def synchronize(self):
        self._native.synchronize()

    def elapsed_time(self, end_event):
        """Milliseconds from this event to ``end_event`` (both recorded, with timing)."""
        return self._native.elapsed_time(end_event._native)


__all__ = [
    "Event", "Stream", "current_device", "current_stream", "default_stream", "device",
    "device_count", "empty_cache", "get_device_capability", "get_device_name", "init",
    "initial_seed", "is_available", "is_initialized", "manual_seed", "manual_seed_all",
    "max_memory_allocated", "max_memory_reserved", "memory_allocated", "memory_reserved",
    "memory_stats", "reset_max_memory_allocated", "reset_peak_memory_stats", "seed", "seed_all",
    "set_device", "set_stream", "stream", "synchronize",
]


# torch.cuda.FloatTensor & co. (legacy typed-tensor constructors on the CUDA device)
from ferrotorch._legacy_tensor import CUDA_TYPES as _CUDA_TYPES  # noqa: E402

globals().update(_CUDA_TYPES)
