"""``ferrotorch.utils.checkpoint``: activation checkpointing, as ``torch.utils.checkpoint``.

:func:`checkpoint` computes ``function`` without keeping the tensors its ops save for backward
and recomputes them during backward. With ``preserve_rng_state=True`` (the default) the CPU
random-number state is saved before the forward and restored for the recomputation, so dropout
masks are the same both times.

* ``use_reentrant=False`` (PyTorch's recommended variant) works as PyTorch's: the forward is
  recorded as usual but under ``saved_tensors_hooks`` that keep only a placeholder for every
  saved tensor; the first backward that needs one reruns ``function`` (with grad recording on)
  to get them back. Gradients reach every tensor the graph reaches (captured parameters too,
  with ``autograd.grad`` or ``backward``), and double backward works.
* ``use_reentrant=True``: an ``autograd.Function`` whose backward recomputes the forward and
  calls ``autograd.backward`` on it (PyTorch's reentrant variant): gradients of tensors that are
  not inputs of ``function`` are accumulated into their ``.grad``. With no input requiring grad
  the output does not require grad and a warning is given (as in PyTorch).

Differences from PyTorch: only the CPU generator's state is preserved
(``ferrotorch.random.get_rng_state``); the recomputation always runs ``function`` to its end
(no early stop); ``debug`` and the use of ``.grad()`` with the reentrant variant are not checked.
"""

import contextlib
import functools
import warnings

from ferrotorch import _C
from ferrotorch.autograd.function import Function
from ferrotorch.autograd.grad_mode import enable_grad
from ferrotorch.autograd.graph import saved_tensors_hooks
from ferrotorch.random import fork_rng, get_rng_state, set_rng_state

Tensor = _C.Tensor

__all__ = ["checkpoint", "checkpoint_sequential", "noop_context_fn", "CheckpointError",
           "detach_variable", "check_backward_validity"]


class CheckpointError(RuntimeError):
    """Raised when the recomputation does not save what the original forward saved."""


def detach_variable(inputs):
    """Detached copies of the tensors in the tuple ``inputs``, keeping ``requires_grad``."""
    if not isinstance(inputs, tuple):
        raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    out = []
    for inp in inputs:
        if not isinstance(inp, Tensor):
            out.append(inp)
            continue
        x = inp.detach()
        x.requires_grad_(inp.requires_grad)
        out.append(x)
    return tuple(out)


def check_backward_validity(inputs):
    """Warn when no tensor in ``inputs`` requires grad."""
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=2)


def noop_context_fn():
    """The default ``context_fn``: two null contexts."""
    return contextlib.nullcontext(), contextlib.nullcontext()


class CheckpointFunction(Function):
    """The autograd node of :func:`checkpoint`: ``apply(run_function, preserve_rng_state,
    *args)``."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            ctx.fwd_cpu_state = get_rng_state()
        ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.inputs = [None if isinstance(a, Tensor) else a for a in args]
        ctx.save_for_backward(*[args[i] for i in ctx.tensor_indices])
        ctx.requires = [isinstance(a, Tensor) and a.requires_grad for a in args]
        return run_function(*args)

    @staticmethod
    def backward(ctx, *grad_outputs):
        from ferrotorch.autograd import backward as _backward

        saved = ctx.saved_tensors
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, saved):
            d = t.detach()
            if ctx.requires[i]:
                d.requires_grad_()
            inputs[i] = d
        with fork_rng(enabled=ctx.preserve_rng_state):
            if ctx.preserve_rng_state:
                set_rng_state(ctx.fwd_cpu_state)
            with enable_grad():
                outputs = ctx.run_function(*inputs)
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [(o, g) for o, g in zip(outs, grad_outputs)
                 if isinstance(o, Tensor) and o.requires_grad and g is not None]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not "
                               "necessary")
        _backward([o for o, _ in pairs], [g for _, g in pairs])
        grads = tuple(x.grad if isinstance(x, Tensor) and ctx.requires[i] else None
                      for i, x in enumerate(inputs))
        return (None, None) + grads


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn,
               determinism_check="default", debug=False, preserve_rng_state=True,
               early_stop=True, respect_saved_tensors_hooks=None, **kwargs):
    """Checkpoint a model or part of a model: ``function(*args, **kwargs)`` is computed without
    keeping its activations, and recomputed during backward.

    Tensor outputs that depend on inputs requiring grad (or, with ``use_reentrant=False``, on
    tensors captured by ``function`` such as module parameters) get a ``grad_fn``; non-tensor
    arguments and outputs are passed through unchanged. Gradients of inputs that do not require
    grad are ``None``.
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
            "In version 2.5 we will raise an exception if use_reentrant is not passed. "
            "use_reentrant=False is recommended, but if you need to preserve the current "
            "default behavior, you can pass use_reentrant=True. Refer to docs for more details "
            "on the differences between the two variants.",
            stacklevel=2,
        )
        use_reentrant = True
    if use_reentrant and kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if context_fn is None:
        context_fn = noop_context_fn
    if use_reentrant and (context_fn is not noop_context_fn or debug is not False
                          or respect_saved_tensors_hooks is not None):
        raise ValueError("Passing `context_fn`, `debug`, or `respect_saved_tensors_hooks` is "
                         "only supported when use_reentrant=False.")
    run = functools.partial(function, **kwargs) if kwargs else function
    if use_reentrant:
        if not _C.is_grad_enabled():
            return run(*args)
        check_backward_validity(args)
        return CheckpointFunction.apply(run, preserve_rng_state, *args)
    if determinism_check not in ("default", "none"):
        raise ValueError("determinism_check should be one of ['default', 'none'], but got "
                         f"{determinism_check}")
    forward_context, recompute_context = context_fn()
    frame = _Frame(run, args, get_rng_state() if preserve_rng_state else None,
                   recompute_context, determinism_check)
    with forward_context:
        if not _C.is_grad_enabled():
            return run(*args)
        with saved_tensors_hooks(frame.pack, frame.unpack):
            return run(*args)


class _Frame:
    """One non-reentrant checkpointed call: its forward saves placeholders (indices) instead
    of tensors; the first unpack of a backward reruns the function and hands out the tensors
    it saves, in the same order."""

    def __init__(self, run, args, rng_state, recompute_context, determinism_check):
        self.run, self.args, self.rng_state = run, args, rng_state
        self.recompute_context = recompute_context
        self.check = determinism_check != "none"
        self.metadata = []  # (shape, dtype, device) of each tensor the forward saved
        self.recomputed = {}  # index -> recomputed tensor, until backward takes it

    @staticmethod
    def _meta(t):
        return {"shape": tuple(t.shape), "dtype": t.dtype, "device": t.device}

    def pack(self, t):
        self.metadata.append(self._meta(t))
        return len(self.metadata) - 1

    def unpack(self, index):
        if index not in self.recomputed:
            self._recompute()
        return self.recomputed.pop(index)

    def _recompute(self):
        got = []

        def pack(t):
            if len(got) >= len(self.metadata):
                raise CheckpointError("torch.utils.checkpoint: trying to save more tensors "
                                      "during recomputation than during the original forward "
                                      "pass.")
            got.append(t.detach())  # backward gives it the original forward's history back
            return None

        def unpack(_):
            raise CheckpointError("torch.utils.checkpoint: the graph of the recomputation is "
                                  "not differentiable")

        state = self.rng_state
        with fork_rng(enabled=state is not None):
            if state is not None:
                set_rng_state(state)
            with enable_grad(), self.recompute_context, saved_tensors_hooks(pack, unpack):
                self.run(*self.args)
        if len(got) != len(self.metadata):
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the "
                "original forward and recomputation.\nNumber of tensors saved during forward: "
                f"{len(self.metadata)}\nNumber of tensors saved during recomputation: "
                f"{len(got)}.")
        if self.check:
            mismatched = ""
            for idx, (meta, t) in enumerate(zip(self.metadata, got)):
                if meta != self._meta(t):
                    mismatched += (f"tensor at position {idx}:\nsaved metadata: {meta}\n"
                                   f"recomputed metadata: {self._meta(t)}\n")
            if mismatched:
                raise CheckpointError(
                    "torch.utils.checkpoint: Recomputed values for the following tensors have "
                    f"different metadata than during the forward pass.\n{mismatched}.")
        self.recomputed = dict(enumerate(got))


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):  # noqa: A002
    """Checkpoint a sequential model: ``functions`` (an ``nn.Sequential`` or a list of modules /
    functions) is split into ``segments`` chunks; every chunk but the last runs under
    :func:`checkpoint`. ``preserve_rng_state`` may be given as a keyword."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be "
            "passed explicitly. In version 2.5 we will raise an exception if use_reentrant is "
            "not passed. use_reentrant=False is recommended, but if you need to preserve the "
            "current default behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.",
            stacklevel=2,
        )
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x

        return forward

    from ferrotorch.nn import Sequential

    if isinstance(functions, Sequential):
        functions = list(functions.children())
    else:
        functions = list(functions)
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input,  # noqa: A001
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
