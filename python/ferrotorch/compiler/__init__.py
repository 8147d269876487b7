"""``torch.compiler``: the compiler-facing helpers. ``ferrotorch.compile`` runs models
eagerly (no tracing), so code is never being compiled: ``is_compiling()`` is False, and the
markers that steer a tracer (``disable``, ``allow_in_graph``, ``assume_constant_result``...)
return what they are given."""

from ferrotorch._compile import compile  # noqa: F401,A004

__all__ = ["compile", "disable", "is_compiling", "is_dynamo_compiling", "is_exporting",
           "reset", "allow_in_graph", "assume_constant_result", "substitute_in_graph",
           "cudagraph_mark_step_begin"]


def is_compiling():
    """False: nothing is traced by ``ferrotorch.compile``."""
    return False


def is_dynamo_compiling():
    return False


def is_exporting():
    return False


def disable(fn=None, recursive=True, *, reason=None):
    """Exclude ``fn`` from compilation (as a decorator, with or without arguments); code
    always runs eagerly here, so ``fn`` is returned as is."""
    if fn is None:
        return lambda f: f
    return fn


def reset():
    """Clear compilation caches (there are none)."""


def allow_in_graph(fn):
    return fn


def assume_constant_result(fn):
    return fn


def substitute_in_graph(original_fn, *, can_constant_fold_through=False,
                        skip_signature_check=False):
    """Register a traceable substitute for ``original_fn``; a decorator returning the
    substitute unchanged (nothing is traced here)."""
    return lambda fn: fn


def cudagraph_mark_step_begin():
    """Mark the start of an iteration for CUDA-graph trees (none are recorded here)."""
