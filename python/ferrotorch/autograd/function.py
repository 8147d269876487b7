"""``autograd.Function``: user-defined ops with a Python forward and backward.

The forward runs with grad recording off; a node is then recorded in the Rust graph whose
backward calls ``cls.backward(ctx, *grad_outputs)``. Both styles of PyTorch are supported:
``forward(ctx, *args)``, or ``forward(*args)`` plus ``setup_context(ctx, inputs, output)``.
"""

import functools
import inspect

from ferrotorch import _C
from ferrotorch.autograd.grad_mode import no_grad
from ferrotorch.autograd.graph import _current_saved_tensors_hooks

Tensor = _C.Tensor


class FunctionCtx:
    """The ``ctx`` object passed to ``forward`` and ``backward``."""

    def __init__(self):
        self._saved = ()
        self._saved_versions = ()
        self._released = False
        self.needs_input_grad = ()
        self._dirty = ()
        self._non_differentiable = ()
        self.materialize_grads = True

    def save_for_backward(self, *tensors):
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError("save_for_backward can only save tensors or None")
        self._saved = tensors
        self._saved_versions = tuple(None if t is None else t._version for t in tensors)

    @property
    def saved_tensors(self):
        if self._released:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved "
                "tensors after they have already been freed). Specify retain_graph=True if you "
                "need to backward through the graph a second time."
            )
        saved = tuple(t.unpack() if isinstance(t, (_C._SavedOutput, _PackedSaved)) else t
                      for t in self._saved)
        for t, v in zip(saved, self._saved_versions):
            if t is not None and v is not None and t._version != v:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by "
                    f"an inplace operation: [{t.type()} {list(t.shape)}] is at version "
                    f"{t._version}; expected version {v} instead."
                )
        return saved

    def mark_dirty(self, *tensors):
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable = tensors

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)


class _PackedSaved:
    """A saved tensor that a ``saved_tensors_hooks`` pack hook replaced: unpacked on every
    read of ``ctx.saved_tensors``, as in PyTorch."""

    __slots__ = ("_unpack_hook", "_packed")

    def __init__(self, hooks, tensor):
        pack_hook, self._unpack_hook = hooks
        with no_grad():
            self._packed = pack_hook(tensor)

    def unpack(self):
        t = self._unpack_hook(self._packed)
        if not isinstance(t, Tensor):
            raise TypeError("Output of saved tensor unpack_hook expected to be a Tensor but got "
                            f"result of type {type(t).__name__}")
        return t


class _FunctionMeta(type):
    pass


class Function(metaclass=_FunctionMeta):
    """Subclass with ``@staticmethod forward(ctx, ...)`` and ``backward(ctx, *grads)``;
    call ``MyFunction.apply(...)``."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement the backward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """Override to use the ``forward(*args)`` style: saves what backward needs from the
        ``inputs`` (the arguments, defaults filled in) and the ``output`` of ``forward``."""
        raise NotImplementedError("setup_context is not implemented.")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = FunctionCtx()
        separate = cls.setup_context is not Function.setup_context
        if separate:
            # forward(*args) does not take ctx; setup_context sees every argument, the
            # defaults included (as PyTorch's bind_default_args)
            bound = inspect.signature(cls.forward).bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = bound.args, {}
        ctx.needs_input_grad = tuple(
            isinstance(a, Tensor) and a.requires_grad for a in args
        )
        with no_grad():
            if separate:
                outputs = cls.forward(*args)
                cls.setup_context(ctx, args, outputs)
            else:
                outputs = cls.forward(ctx, *args, **kwargs)
        is_tuple = isinstance(outputs, tuple)
        outs = list(outputs) if is_tuple else [outputs]
        if not (_C.is_grad_enabled() and any(ctx.needs_input_grad)):
            return outputs
        tensor_positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        inputs = [args[i] for i in tensor_positions]
        dirty = {id(t) for t in ctx._dirty}
        non_diff = {id(t) for t in ctx._non_differentiable}
        # An output that is an unmodified input gets a fresh alias so the input keeps its
        # own history (as PyTorch does).
        for k, o in enumerate(outs):
            if isinstance(o, Tensor) and id(o) not in dirty and any(o is i for i in inputs):
                outs[k] = o.view_as(o) if hasattr(o, "view_as") else o.detach()
        diff_idx = [
            k for k, o in enumerate(outs)
            if isinstance(o, Tensor) and id(o) not in non_diff and o.is_floating_point()
        ]
        diff_outputs = [outs[k] for k in diff_idx]
        shapes = [(o.shape, o.dtype, o.device) for o in diff_outputs]
        n_outs = len(outs)  # (the bridge must not hold the outputs: see _SavedOutput)

        def backward_bridge(grads):
            if ctx._released:
                _ = ctx.saved_tensors  # raises the "second time" error
            full = [None] * n_outs
            for k, g in zip(diff_idx, grads):
                full[k] = g
            if ctx.materialize_grads:
                for j, k in enumerate(diff_idx):
                    if full[k] is None:
                        shape, dtype, device = shapes[j]
                        full[k] = _C.zeros(shape, dtype=dtype, device=device)
            res = cls.backward(ctx, *full)
            if not isinstance(res, tuple):
                res = (res,)
            if len(res) < len(args):
                raise RuntimeError(
                    f"function {cls.__name__}Backward returned an incorrect number of gradients "
                    f"(expected {len(args)}, got {len(res)})"
                )
            return [res[i] for i in tensor_positions]

        node_name = getattr(cls, "_node_name", None) or cls.__name__ + "Backward"
        _C._record_function(node_name, backward_bridge, inputs, diff_outputs)
        hooks = _current_saved_tensors_hooks()
        if hooks is not None:
            # saved_tensors_hooks: keep what the pack hook returns (no version check then).
            ctx._saved = tuple(None if t is None else _PackedSaved(hooks, t) for t in ctx._saved)
            ctx._saved_versions = (None,) * len(ctx._saved)
        else:
            # Saved outputs (and dirty inputs, now outputs too) are kept without their new
            # history.
            ctx._saved = tuple(
                _C._SavedOutput(t) if t is not None and any(t is o for o in outs) else t
                for t in ctx._saved
            )
        if not is_tuple:
            return outs[0]
        return tuple(outs)


class _DelayedError(Function):
    """Identity whose backward raises: marks the outputs of a ``once_differentiable``
    backward, so that differentiating them again fails with PyTorch's message."""

    @staticmethod
    def forward(ctx, msg, *inputs):
        ctx.msg = msg
        outs = tuple(i.clone() for i in inputs)
        return outs if len(outs) > 1 else outs[0]

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(ctx.msg)


def once_differentiable(fn):
    """Decorator for a ``backward`` that is not itself differentiable: it runs under
    ``no_grad``, and when a double backward would go through it (grad mode on and a grad output
    requiring grad) its results raise on being differentiated again, as in PyTorch."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            outputs = fn(ctx, *args)
        if not _C.is_grad_enabled():
            return outputs
        if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            return outputs
        is_tuple = isinstance(outputs, tuple)
        outs = outputs if is_tuple else (outputs,)
        keep = [k for k, o in enumerate(outs) if isinstance(o, Tensor)
                and o.is_floating_point()]
        if not keep:
            return outputs
        fakes = [outs[k].detach().requires_grad_() for k in keep]
        wrapped = _DelayedError.apply(
            "trying to differentiate twice a function that was marked with "
            "@once_differentiable", *fakes)
        wrapped = wrapped if isinstance(wrapped, tuple) else (wrapped,)
        res = list(outs)
        for k, w in zip(keep, wrapped):
            res[k] = w
        return tuple(res) if is_tuple else res[0]

    return wrapper
