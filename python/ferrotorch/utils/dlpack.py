"""``ferrotorch.utils.dlpack``: DLPack capsules, as ``torch.utils.dlpack``.

>>> import numpy as np
>>> import ferrotorch as torch
>>> t = torch.utils.dlpack.from_dlpack(np.arange(3.0))
>>> t.tolist()
[0.0, 1.0, 2.0]
"""

from ferrotorch._C import from_dlpack  # noqa: F401

__all__ = ["from_dlpack", "to_dlpack"]


def to_dlpack(tensor):
    """A DLPack capsule ("dltensor") sharing ``tensor``'s memory; consume it once with
    ``from_dlpack`` (here, in NumPy, PyTorch...)."""
    return tensor.__dlpack__()
