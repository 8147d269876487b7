"""``autograd.Function``: user-defined ops with a Python forward and backward.

The forward runs with grad recording off; a node is then recorded in the Rust graph whose
backward calls ``cls.backward(ctx, *grad_outputs)``. Both styles of PyTorch are supported:
``forward(ctx, *args)``, or ``forward(*args)`` plus ``setup_context(ctx, inputs, output)``.
"""

import functools
import inspect
import warnings
import weakref

from ferrotorch import _C
from ferrotorch.autograd.grad_mode import no_grad
from ferrotorch.autograd.graph import (
    _current_saved_tensors_hooks,
    _function_nodes,
    increment_version,
)

Tensor = _C.Tensor

#: ``hash(grad_fn)`` (its node's address) -> ctx, for the nodes of user Functions while
#: their backward is alive.
_ctx_of_node = {}

_FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you "
    "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling "
    "backward."
)


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
        self._ran_backward = False

    def save_for_backward(self, *tensors):
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError("save_for_backward can only save variables, but argument "
                                f"{i} is of type {type(t).__name__}")
        self._saved = tensors
        self._saved_versions = tuple(None if t is None else t._version for t in tensors)

    @property
    def saved_tensors(self):
        if self._released:
            raise RuntimeError(_FREED_MESSAGE)
        saved = tuple(t.unpack() if isinstance(t, (_C._SavedOutput, _PackedSaved)) else t
                      for t in self._saved)
        for t, v in zip(saved, self._saved_versions):
            if t is not None and v is not None and t._version != v:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by "
                    f"an inplace operation: [{t.type()} {list(t.shape)}] is at version "
                    f"{t._version}; expected version {v} instead. Hint: enable anomaly "
                    "detection to find the operation that failed to compute its gradient, "
                    "with torch.autograd.set_detect_anomaly(True, check_nan=False)."
                )
        return saved

    @property
    def saved_variables(self):
        warnings.warn("'saved_variables' is deprecated; use 'saved_tensors'", DeprecationWarning,
                      stacklevel=2)
        return self.saved_tensors

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

    def __init__(self, *args, **kwargs):
        warnings.warn(f"{self.__class__} should not be instantiated. Methods on autograd "
                      "functions are all static, so you should invoke them on the class itself. "
                      "Instantiating an autograd function will raise an error in a future "
                      "version of PyTorch.", DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is "
                           "deprecated. Please use new-style autograd function with static "
                           "forward method. (Example: "
                           "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode "
                                  "AD.")

    # ``vjp`` and ``backward`` are aliases: a Function implements one of them.
    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")

    #: PyTorch's vmap calls the ``vmap`` staticmethod unless this is True; ``func.vmap`` here
    #: runs the Function once per sample, so neither is needed (kept for the API).
    generate_vmap_rule = False

    @staticmethod
    def vmap(info, in_dims, *args):
        raise NotImplementedError("To use autograd.Function with vmap, you must either override "
                                  "the vmap staticmethod or set generate_vmap_rule=True.")

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
        if ctx._dirty:
            # Inputs modified in place must be outputs; they get a new version (PyTorch).
            if any(not any(d is o for o in outs) for d in ctx._dirty):
                raise RuntimeError("Some elements marked as dirty during the forward method "
                                   "were not returned as output. The inputs that are modified "
                                   "inplace must all be outputs of the Function.")
            increment_version(ctx._dirty)
        # Saved tensors are checked against their versions after forward (PyTorch saves them
        # only once forward returned).
        ctx._saved_versions = tuple(None if t is None else t._version for t in ctx._saved)
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
        in_meta = [(tuple(i.shape), i.dtype) for i in inputs]
        n_outs = len(outs)  # (the bridge must not hold the outputs: see _SavedOutput)
        node_name = getattr(cls, "_node_name", None) or cls.__name__ + "Backward"

        def backward_bridge(grads):
            if ctx._released:
                _ = ctx.saved_tensors  # raises the "second time" error
            ctx._ran_backward = True
            if cls.backward is not Function.backward and cls.vjp is not Function.vjp:
                raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function "
                                   "is not allowed. You should only implement one of them.")
            user_fn = cls.vjp if cls.vjp is not Function.vjp else cls.backward
            full = [None] * n_outs
            for k, g in zip(diff_idx, grads):
                full[k] = g
            if ctx.materialize_grads:
                for j, k in enumerate(diff_idx):
                    if full[k] is None:
                        shape, dtype, device = shapes[j]
                        full[k] = _C.zeros(shape, dtype=dtype, device=device)
            res = user_fn(ctx, *full)
            return _validate_grads(node_name, res, len(args), tensor_positions, in_meta)

        _C._record_function(node_name, backward_bridge, inputs, diff_outputs)
        # The engine drops the bridge when a backward without retain_graph frees the node:
        # the ctx's saved tensors go with it.
        node_key = None
        if diff_outputs and not getattr(cls, "_node_name", None) \
                and not cls.__module__.startswith("ferrotorch."):
            # A user Function's grad_fn reads its attributes from the ctx (in PyTorch the
            # grad_fn *is* the ctx): saved_tensors, needs_input_grad, what forward stored.
            _function_nodes[node_name] = BackwardCFunction
            node_key = hash(diff_outputs[0].grad_fn)
            _ctx_of_node[node_key] = ctx
        weakref.finalize(backward_bridge, _bridge_freed, ctx, node_key)
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


def _bridge_freed(ctx, node_key):
    """The engine dropped a Function's backward: after a backward pass (not a garbage-collected
    graph) the saved tensors are freed, as PyTorch does."""
    if node_key is not None and _ctx_of_node.get(node_key) is ctx:
        del _ctx_of_node[node_key]
    if ctx._ran_backward:
        ctx._released = True
        ctx._saved = ()


def _validate_grads(node_name, res, n_args, tensor_positions, in_meta):
    """PyTorch's checks on what a custom backward returns (PyNode::apply, validate_outputs):
    one gradient per forward argument (extra trailing Nones allowed), Tensors or None for
    tensor arguments and None for the others; a gradient of a broadcast shape is summed to
    the input's shape and every gradient is cast to the input's dtype."""
    if not isinstance(res, tuple):
        res = (res,)
    if len(res) > n_args and all(r is None for r in res[n_args:]):
        res = res[:n_args]
    if len(res) != n_args:
        raise RuntimeError(f"function {node_name} returned an incorrect number of gradients "
                           f"(expected {n_args}, got {len(res)})")
    is_tensor_arg = set(tensor_positions)
    for i, g in enumerate(res):
        if i in is_tensor_arg:
            if g is not None and not isinstance(g, Tensor):
                raise RuntimeError(f"expected Variable or None (got {type(g).__name__})")
        elif g is not None:
            raise RuntimeError(f"function {node_name} returned a gradient different than None "
                               f"at position {i + 1}, but the corresponding forward input was "
                               "not a Variable")
    out = []
    for j, i in enumerate(tensor_positions):
        g = res[i]
        if g is not None:
            shape, dtype = in_meta[j]
            if tuple(g.shape) != shape:
                if not _expandable_to(shape, tuple(g.shape)):
                    raise RuntimeError(f"Function {node_name} returned an invalid gradient at "
                                       f"index {j} - got {list(g.shape)} but expected shape "
                                       f"compatible with {list(shape)}")
                g = g.sum_to_size(shape)
            if g.dtype != dtype:
                g = g.to(dtype)
        out.append(g)
    return out


def _expandable_to(shape, desired):
    """Whether ``shape`` broadcasts to ``desired`` (at::is_expandable_to)."""
    if len(shape) > len(desired):
        return False
    return all(s == d or s == 1 for s, d in zip(reversed(shape), reversed(desired)))


class BackwardCFunction:
    """Base class of the ``grad_fn`` of a user-defined Function's outputs
    (``isinstance(out.grad_fn, BackwardCFunction)``). Attributes a node does not have are read
    from the Function's ctx while the node holds it (until a backward frees it)."""

    __slots__ = ()

    def __getattr__(self, name):
        ctx = _ctx_of_node.get(hash(self))
        if ctx is None:
            if name == "saved_tensors":
                raise RuntimeError(_FREED_MESSAGE)
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        return getattr(ctx, name)


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
