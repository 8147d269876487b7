"""``skip_init``: build a module without running its parameter initialisation."""

import inspect
from contextlib import contextmanager

__all__ = ["skip_init"]

_INIT_FNS = ("uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_",
             "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
             "kaiming_normal_", "orthogonal_", "sparse_")


@contextmanager
def _no_init():
    from ferrotorch.nn import init
    saved = {}
    for name in _INIT_FNS:
        if hasattr(init, name):
            saved[name] = getattr(init, name)
            setattr(init, name, lambda tensor, *args, **kwargs: tensor)
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(init, name, fn)


def skip_init(module_cls, *args, **kwargs):
    r"""Instantiate ``module_cls(*args, **kwargs)`` leaving its parameters uninitialised
    (their values are whatever the allocation holds), for callers that overwrite them anyway.

    As in PyTorch the class must be an ``nn.Module`` accepting a ``device`` argument. PyTorch
    builds the module on the ``meta`` device and then allocates; without a meta device this
    builds it directly with the ``nn.init`` initialisers turned into no-ops.

    >>> import ferrotorch as torch
    >>> m = torch.nn.utils.skip_init(torch.nn.Linear, 5, 1)
    >>> m.weight.shape
    ferrotorch.Size([1, 5])
    """
    from ferrotorch.nn.modules.module import Module
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    kwargs["device"] = kwargs.pop("device", "cpu")
    with _no_init():
        return module_cls(*args, **kwargs)
