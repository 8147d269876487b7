"""``torch.autograd.graph``: the classes of recorded autograd nodes, and hooks on the
tensors they save.

Every ``grad_fn`` is an instance of a class named after its op (``AddmmBackward0``,
``TanhBackward0``, ``AccumulateGrad``...), one class object per name, all subclasses of
:class:`Node`. Only ``AccumulateGrad`` has ``variable``: the leaf's own Python object.

``saved_tensors_hooks(pack_hook, unpack_hook)`` replaces every tensor an op saves for backward
by ``pack_hook(tensor)`` and gives backward ``unpack_hook(packed)`` instead (``save_on_cpu`` is
the pair that parks them in CPU memory). The pairs live on a per-thread stack in the Rust
core, which the native ops and ``autograd.Function`` both read.
"""

import threading

from ferrotorch import _C

__all__ = ["Node", "saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks"]

#: Base class of every ``grad_fn`` (``isinstance(t.grad_fn, Node)``).
Node = _C.Node

_classes = {}


def _accumulated_variable(self):
    """The leaf tensor this node accumulates gradients into."""
    return self._variable()


def _node_class(name):
    """The class of nodes named ``name`` (made on first use, then the same object)."""
    cls = _classes.get(name)
    if cls is None:
        ns = {"__slots__": (), "__module__": "ferrotorch.autograd.graph", "__qualname__": name}
        if name == "AccumulateGrad":
            ns["variable"] = property(_accumulated_variable)
        cls = type(name, (Node,), ns)
        _classes[name] = cls
    return cls


class _HookState(threading.local):
    def __init__(self):
        self.disabled_message = None


_state = _HookState()

#: This thread's innermost (pack_hook, unpack_hook), or None.
_current_saved_tensors_hooks = _C._current_saved_tensors_hooks


class saved_tensors_hooks:
    """Context manager: tensors saved for backward inside it are stored as
    ``pack_hook(tensor)`` and handed back to backward as ``unpack_hook(packed)``, which must
    return a tensor of the same size and dtype. Nested managers: the innermost pair wins."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if _state.disabled_message is not None:
            raise RuntimeError(_state.disabled_message)
        _C._push_saved_tensors_hooks(self.pack_hook, self.unpack_hook)
        return self

    def __exit__(self, *exc):
        _C._pop_saved_tensors_hooks()
        return False


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors wait for backward in CPU memory and go back to their device when backward
    reads them (``pin_memory`` copies them into pinned memory first)."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack_to_cpu(tensor):
            if not pin_memory:
                return tensor.device, tensor.cpu()
            return tensor.device, tensor.cpu().pin_memory()

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)

        super().__init__(pack_to_cpu, unpack_from_cpu)


class disable_saved_tensors_hooks:
    """Context manager (and decorator) under which entering ``saved_tensors_hooks`` raises a
    RuntimeError with ``error_message`` (hooks entered before it keep working)."""

    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        self._previous = _state.disabled_message
        _state.disabled_message = self.error_message
        return self

    def __exit__(self, *exc):
        _state.disabled_message = self._previous
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)

        return wrapper
