"""``torch.compile``: ferrotorch has no graph compiler. ``compile`` checks its arguments and
returns the model or function unchanged, so it runs eagerly and gives exactly the results
``torch.compile`` promises to preserve (only without the speed-up)."""

__all__ = ["compile"]

_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None,  # noqa: A001
            options=None, disable=False):
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    if mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: "
                           f"{', '.join(m for m in _MODES if m)}")
    if model is None:
        def decorate(fn):
            return compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                           mode=mode, options=options, disable=disable)

        return decorate
    if not callable(model):
        raise RuntimeError("torch.compile() expects a callable (a function or an nn.Module)")
    return model
