"""``ferrotorch.utils.hooks`` (as ``torch.utils.hooks``): the handle every ``register_*_hook``
returns, and the marker for hooks that must not be pickled."""

from ferrotorch.nn.modules.module import RemovableHandle

__all__ = ["RemovableHandle", "unserializable_hook"]


def unserializable_hook(f):
    """Mark ``f`` as a hook that serialization skips (PyTorch's ``__torch_unserializable__``)."""
    f.__torch_unserializable__ = True
    return f
