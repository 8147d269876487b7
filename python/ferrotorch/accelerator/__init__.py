"""``torch.accelerator``: the device-generic view of the current accelerator, which in
ferrotorch is CUDA (built in); every call forwards to ``ferrotorch.cuda``."""

import ferrotorch
from ferrotorch import _C

__all__ = ["current_accelerator", "current_device_idx", "current_device_index",
           "current_stream", "device_count", "device_index", "empty_cache", "is_available",
           "max_memory_allocated", "max_memory_reserved", "memory_allocated", "memory_reserved",
           "memory_stats", "reset_peak_memory_stats", "set_device_idx", "set_device_index",
           "set_stream", "synchronize"]


def _cuda():
    return ferrotorch.cuda


def is_available():
    """True when the accelerator (CUDA) can be used."""
    return _cuda().is_available()


def current_accelerator(check_available=False):
    """``device('cuda')``, the build's accelerator; None when ``check_available`` and no GPU
    can be used."""
    if not _C._cuda_built or (check_available and not is_available()):
        return None
    return _C.device("cuda")


def device_count():
    """Number of accelerator devices (0 without one)."""
    return _cuda().device_count() if _C._cuda_built else 0


def current_device_index():
    """Index of the current accelerator device."""
    return _cuda().current_device()


current_device_idx = current_device_index


def set_device_index(device):
    """Select the current accelerator device (an int or a device)."""
    _cuda().set_device(device)


set_device_idx = set_device_index


class device_index:  # noqa: N801 (PyTorch's name)
    """Context manager selecting accelerator device ``device`` (None: no change)."""

    def __init__(self, device):
        self.idx = device
        self.prev_idx = -1

    def __enter__(self):
        if self.idx is not None:
            self.prev_idx = current_device_index()
            set_device_index(self.idx)

    def __exit__(self, *exc):
        if self.idx is not None:
            set_device_index(self.prev_idx)
        return False


def synchronize(device=None):
    """Wait for all work on the accelerator device to finish."""
    _cuda().synchronize(device)


def current_stream(device=None):
    return _cuda().current_stream(device)


def set_stream(stream):
    _cuda().set_stream(stream)


def empty_cache():
    _cuda().empty_cache()


def memory_stats(device_index=None):
    return _cuda().memory_stats(device_index)


def memory_allocated(device_index=None):
    return _cuda().memory_allocated(device_index)


def max_memory_allocated(device_index=None):
    return _cuda().max_memory_allocated(device_index)


def memory_reserved(device_index=None):
    return _cuda().memory_reserved(device_index)


def max_memory_reserved(device_index=None):
    return _cuda().max_memory_reserved(device_index)


def reset_peak_memory_stats(device_index=None):
    _cuda().reset_peak_memory_stats(device_index)
