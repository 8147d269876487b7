"""``torch.cpu``: the CPU device module (the same interface as ``torch.cuda``) and the legacy
``torch.cpu.amp`` spellings."""

import contextlib

from ferrotorch.cpu import amp  # noqa: F401

__all__ = ["amp", "current_device", "device_count", "is_available", "is_initialized",
           "set_device", "stream", "synchronize", "current_stream"]


def is_available():
    """Always True."""
    return True


def is_initialized():
    return True


def device_count():
    """The CPU counts as one device."""
    return 1


def current_device():
    return "cpu"


def set_device(device):
    """Accepted for interface compatibility; there is one CPU device."""


def synchronize(device=None):
    """CPU ops complete before they return: nothing to wait for."""


class Stream:
    """The CPU's (only, synchronous) stream."""

    def __init__(self, priority=-1):
        pass

    def wait_stream(self, stream):
        pass

    def synchronize(self):
        pass


_current = Stream()


def current_stream(device=None):
    return _current


@contextlib.contextmanager
def stream(stream):
    yield
