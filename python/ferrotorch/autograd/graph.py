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

import contextlib
import functools
import threading
import weakref

from ferrotorch import _C

__all__ = ["Node", "saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks",
           "register_multi_grad_hook", "allow_mutation_on_saved_tensors", "increment_version"]

#: Base class of every ``grad_fn`` (``isinstance(t.grad_fn, Node)``).
Node = _C.Node

_classes = {}

#: Node name -> extra base class for the nodes of user-defined ``autograd.Function``s
#: (``autograd.function.BackwardCFunction``, registered when such a node is recorded).
_function_nodes = {}


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
        base = _function_nodes.get(name)
        cls = type(name, (Node,) if base is None else (base, Node), ns)
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


def _unpack_identity(x):
    return x


class disable_saved_tensors_hooks:
    """Context manager (and decorator) under which entering ``saved_tensors_hooks`` raises a
    RuntimeError with ``error_message``, and so does saving a tensor for backward while hooks
    entered before it are active (as PyTorch)."""

    def __init__(self, error_message):
        self.error_message = error_message

    def _refuse(self, tensor):
        raise RuntimeError(self.error_message)

    def __enter__(self):
        self._previous = _state.disabled_message
        _state.disabled_message = self.error_message
        # Outer hooks stay on the stack: an innermost pair that refuses stands in for them.
        self._pushed = _current_saved_tensors_hooks() is not None
        if self._pushed:
            _C._push_saved_tensors_hooks(self._refuse, _unpack_identity)
        return self

    def __exit__(self, *exc):
        if self._pushed:
            _C._pop_saved_tensors_hooks()
        _state.disabled_message = self._previous
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)

        return wrapper


def increment_version(tensor):
    """Bump the version counter of ``tensor`` (or of each tensor in an iterable), as an
    in-place change the library did not see would: autograd then refuses to use a saved copy
    of it. Inference tensors have no version counter and are left alone."""
    tensors = (tensor,) if isinstance(tensor, _C.Tensor) else tuple(tensor)
    prev = _C.is_grad_enabled()
    _C._set_grad_enabled(False)
    try:
        for t in tensors:
            if not t.is_inference():
                t.copy_(t)  # an in-place op that leaves the values as they are
    finally:
        _C._set_grad_enabled(prev)


class _MultiHandle:
    """The handle ``register_multi_grad_hook`` returns: removes every per-tensor hook."""

    __slots__ = ("handles",)

    def __init__(self, handles):
        self.handles = handles

    def remove(self):
        for handle in self.handles:
            handle.remove()

    def __getstate__(self):
        return self.handles

    def __setstate__(self, state):
        self.handles = state


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """Register ``fn`` to run once per backward pass over several tensors.

    ``mode="all"``: ``fn(grads)`` runs once the gradient of every tensor in ``tensors`` was
    computed, with the gradients in the order of ``tensors``; a pass that computes only some
    of them runs ``fn`` at its end with None for the others (PyTorch runs it as soon as the
    last gradient the pass will compute is ready: the same call, possibly a few nodes later).
    ``mode="any"``: ``fn(grad)`` runs with the first gradient computed among ``tensors``.
    A pass that computes none of them does not run ``fn``. Returns a handle whose
    ``remove()`` unregisters it.
    """
    supported_modes = ("all", "any")
    lock = threading.Lock()
    if mode not in supported_modes:
        raise ValueError(f"Expects mode to be one of {supported_modes} but got {mode}")
    tensors = tuple(tensors)
    for t in tensors:
        if not t.requires_grad:
            raise AssertionError("Expected gradient function to be set")
    n = len(tensors)
    # per backward pass (the engine's pass id): "all" keeps the gradients seen so far,
    # "any" only that the pass has fired
    passes = {}

    def end_of_pass(pass_id):
        with lock:
            buffer = passes.pop(pass_id, None)
        if mode == "all" and buffer is not None:
            fn([None if g is _PENDING else g for g in buffer])

    def start_pass(pass_id, init):
        passes[pass_id] = init
        _C._queue_callback(functools.partial(end_of_pass, pass_id))

    if mode == "all":
        def inner_hook(idx, grad):
            pass_id = _C._current_backward_pass_id()
            with lock:
                if pass_id not in passes:
                    start_pass(pass_id, [_PENDING] * n)
                buffer = passes[pass_id]
                buffer[idx] = grad
                if all(g is not _PENDING for g in buffer):
                    del passes[pass_id]
                else:
                    buffer = None
            if buffer is not None:
                fn(buffer)
    else:
        def inner_hook(idx, grad):
            pass_id = _C._current_backward_pass_id()
            with lock:
                first = pass_id not in passes
                if first:
                    start_pass(pass_id, True)
            if first:
                fn(grad)

    # (inner_hook returns None: the gradients pass on unchanged)
    handles = tuple(t.register_hook(functools.partial(inner_hook, i))
                    for i, t in enumerate(tensors))
    return _MultiHandle(handles)


class _Pending:
    """A gradient not computed (yet) in this pass; None once the pass ended without it."""


_PENDING = _Pending()


_allow_mutation_on_saved_tensors_enabled = False


class _Handle:
    pass


class _AllowMutationOnSavedContext:
    """What ``allow_mutation_on_saved_tensors`` keeps: for every saved tensor (by the handle
    autograd holds), the tensor with its version when saved, and a copy of its contents."""

    def __init__(self):
        self.original = weakref.WeakKeyDictionary()
        self.cloned = weakref.WeakKeyDictionary()

    def clear(self):
        self.cloned.clear()
        self.original.clear()


@contextlib.contextmanager
def allow_mutation_on_saved_tensors():
    """Context manager under which tensors saved for backward may be modified in place:
    backward sees their values from when they were saved. Forward and backward must both run
    inside it. PyTorch clones a saved tensor when it is about to be modified; here every saved
    tensor is copied when saved (same values, more memory), and the copy is used only when
    the tensor's version changed."""
    global _allow_mutation_on_saved_tensors_enabled

    ctx = _AllowMutationOnSavedContext()

    def pack_hook(tensor):
        handle = _Handle()
        ctx.original[handle] = (tensor, tensor._version)
        ctx.cloned[handle] = tensor.detach().clone()
        return handle

    def unpack_hook(handle):
        error_msg = ("Trying to backward outside of the 'allow_mutation_on_saved_tensors' "
                     "contextin which the graph was originally recorded.")
        if not _allow_mutation_on_saved_tensors_enabled or handle not in ctx.original:
            raise AssertionError(error_msg)
        tensor, version = ctx.original[handle]
        return tensor if tensor._version == version else ctx.cloned[handle]

    with saved_tensors_hooks(pack_hook, unpack_hook):
        try:
            if _allow_mutation_on_saved_tensors_enabled:
                raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
            _allow_mutation_on_saved_tensors_enabled = True
            yield ctx
        finally:
            ctx.clear()
            _allow_mutation_on_saved_tensors_enabled = False
