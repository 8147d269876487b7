"""``ferrotorch.utils.checkpoint``: activation checkpointing, as ``torch.utils.checkpoint``.

:func:`checkpoint` runs ``function`` without recording a graph (its intermediate activations
are freed right away) and, during backward, runs it again with grad recording on and
backpropagates through that recomputation. With ``preserve_rng_state=True`` (the default) the
CPU random-number state is saved before the forward and restored for the recomputation, so
dropout masks are the same both times.

Differences from PyTorch:

* Both ``use_reentrant=True`` and ``use_reentrant=False`` use the same mechanism: an
  ``autograd.Function`` whose backward recomputes the forward and calls ``autograd.backward`` on
  it. Gradients of tensors that are not inputs of ``function`` (e.g. the parameters of a module
  it calls) are therefore *accumulated into their ``.grad``* during the outer backward, as in
  PyTorch's reentrant variant. With ``use_reentrant=False`` this also works when no input
  requires grad (a dummy input keeps the node in the graph), but, unlike PyTorch's
  non-reentrant variant, ``autograd.grad(..., inputs=params)`` through a checkpoint does not
  return those parameter gradients (it accumulates them into ``.grad``), and double backward
  through a checkpoint is not supported.
* With ``use_reentrant=True`` and no input requiring grad, the output does not require grad and
  a warning is given (as in PyTorch).
* Only the CPU generator's state is preserved (``ferrotorch.random.get_rng_state``).
* ``context_fn`` (non-reentrant only, as in PyTorch) gives the two context managers the forward
  and the recomputation run in; ``determinism_check`` and ``debug`` are accepted only with their
  default values.
"""

import contextlib
import functools
import warnings

from ferrotorch import _C
from ferrotorch.autograd.function import Function
from ferrotorch.autograd.grad_mode import enable_grad
from ferrotorch.random import fork_rng, get_rng_state, set_rng_state

Tensor = _C.Tensor

__all__ = ["checkpoint", "checkpoint_sequential", "noop_context_fn"]


def noop_context_fn():
    """The default ``context_fn``: two null contexts."""
    return contextlib.nullcontext(), contextlib.nullcontext()


class _InContexts:
    """Runs ``run`` in ``forward_context`` the first time (the checkpointed forward) and in
    ``recompute_context`` afterwards (the recomputation during backward)."""

    def __init__(self, run, forward_context, recompute_context):
        self.run, self.contexts = run, [forward_context, recompute_context]
        self.calls = 0

    def __call__(self, *args):
        ctx = self.contexts[min(self.calls, 1)]
        self.calls += 1
        with ctx:
            return self.run(*args)


def _detach_like(x):
    if not isinstance(x, Tensor):
        return x
    d = x.detach()
    if x.requires_grad:
        d.requires_grad_()
    return d


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
               determinism_check="default", debug=False, preserve_rng_state=True, **kwargs):
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
    if use_reentrant and (context_fn is not noop_context_fn or debug is not False):
        raise ValueError("Passing `context_fn` or `debug` is only supported when "
                         "use_reentrant=False.")
    run = functools.partial(function, **kwargs) if kwargs else function
    if context_fn is not noop_context_fn:
        run = _InContexts(run, *context_fn())
    if not _C.is_grad_enabled():
        return run(*args)
    needs = any(isinstance(a, Tensor) and a.requires_grad for a in args)
    if use_reentrant:
        if not needs:
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                          stacklevel=2)
        return CheckpointFunction.apply(run, preserve_rng_state, *args)
    if needs:
        return CheckpointFunction.apply(run, preserve_rng_state, *args)
    # Non-reentrant: keep a node in the graph so that captured tensors (parameters) still get
    # their gradients; the dummy input's own gradient is discarded.
    dummy = _C.zeros((), requires_grad=True)

    def run_with_dummy(_dummy, *a):
        return run(*a)

    return CheckpointFunction.apply(run_with_dummy, preserve_rng_state, dummy, *args)


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
