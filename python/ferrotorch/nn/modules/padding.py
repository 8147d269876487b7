"""Padding layers (PyTorch's ``torch.nn.modules.padding``), wrappers over ``F.pad``: an int
pads every side of the last 1, 2 or 3 dims; a tuple is ``(left, right, top, bottom, ...)``."""

from ferrotorch.nn import functional as F
from ferrotorch.nn.modules.module import Module

__all__ = []


class _PadNd(Module):
    _mode = "constant"
    _n = 1

    def __init__(self, padding, value=0.0):
        super().__init__()
        if isinstance(padding, int):
            padding = (padding,) * (2 * self._n)
        padding = tuple(int(p) for p in padding)
        if len(padding) != 2 * self._n:
            raise ValueError(f"{type(self).__name__}: padding must be an int or a tuple of "
                             f"{2 * self._n} ints, got {padding}")
        self.padding = padding
        self.value = value

    def forward(self, input):
        if self._mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        if self._mode == "constant" and not type(self).__name__.startswith("Zero"):
            return f"padding={self.padding}, value={self.value}"
        return f"{self.padding}"


def _make(prefix, mode, n, with_value):
    name = f"{prefix}Pad{n}d"

    if with_value:
        def __init__(self, padding, value):
            _PadNd.__init__(self, padding, value)
    else:
        def __init__(self, padding):
            _PadNd.__init__(self, padding, 0.0)

    cls = type(name, (_PadNd,), {"_mode": mode, "_n": n, "__init__": __init__,
                                 "__doc__": f"Pads the last {n} dim(s) ({mode})."})
    cls.__module__ = __name__
    globals()[name] = cls
    __all__.append(name)


for _n in (1, 2, 3):
    _make("Zero", "constant", _n, False)
    _make("Constant", "constant", _n, True)
    _make("Reflection", "reflect", _n, False)
    _make("Replication", "replicate", _n, False)
    _make("Circular", "circular", _n, False)
