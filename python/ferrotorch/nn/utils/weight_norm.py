"""Legacy hook-based weight normalisation (PyTorch's ``torch/nn/utils/weight_norm.py``):
``weight = g * v / ||v||``, with ``weight_g`` and ``weight_v`` the parameters and ``weight``
recomputed by a forward pre-hook. New code should use
:func:`ferrotorch.nn.utils.parametrizations.weight_norm`."""

import warnings

from ferrotorch.nn.parameter import Parameter, UninitializedParameter

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]


def norm_except_dim(v, pow=2, dim=0):
    r"""The ``pow``-norm of ``v`` over every dimension but ``dim``, keeping ``v``'s number of
    dimensions (size 1 except at ``dim``); ``dim=-1`` means the norm of the whole tensor (as
    ``torch.norm_except_dim``)."""
    if dim == -1:
        return v.norm(pow)
    if dim == 0:
        output_size = [1] * v.dim()
        output_size[0] = v.size(0)
        return v.contiguous().view(v.size(0), -1).norm(pow, 1).view(*output_size)
    if dim == v.dim() - 1:
        output_size = [1] * v.dim()
        output_size[-1] = v.size(-1)
        return v.contiguous().view(-1, v.size(-1)).norm(pow, 0).view(*output_size)
    return norm_except_dim(v.transpose(0, dim), pow, 0).transpose(0, dim)


def _weight_norm(v, g, dim=0):
    r"""``v * (g / norm_except_dim(v, 2, dim))`` (``torch._weight_norm``)."""
    return v * (g / norm_except_dim(v, 2, dim))


class WeightNorm:
    name: str
    dim: int

    def __init__(self, name, dim):
        if dim is None:
            dim = -1
        self.name = name
        self.dim = dim

    def compute_weight(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return _weight_norm(v, g, self.dim)

    @staticmethod
    def apply(module, name, dim):
        warnings.warn(
            "torch.nn.utils.weight_norm is deprecated in favor of "
            "torch.nn.utils.parametrizations.weight_norm.", FutureWarning, stacklevel=3)
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError("Cannot register two weight_norm hooks on the same "
                                   f"parameter {name}")
        if dim is None:
            dim = -1
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if isinstance(weight, UninitializedParameter):
            raise ValueError(
                "The module passed to `WeightNorm` can't have uninitialized parameters. "
                "Make sure to run the dummy forward before applying weight normalization")
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, dim).data))
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    r"""Reparametrize ``module.<name>`` as ``g * v / ||v||`` (norm over every dimension but
    ``dim``; ``dim=None`` for the whole tensor), with the parameters ``<name>_g`` (the norms)
    and ``<name>_v`` (the direction). ``<name>`` is recomputed before every forward.

    >>> import ferrotorch as torch
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     m = torch.nn.utils.weight_norm(torch.nn.Linear(20, 40), name="weight")
    >>> m.weight_g.size(), m.weight_v.size()
    (ferrotorch.Size([40, 1]), ferrotorch.Size([40, 20]))
    """
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    r"""Undo :func:`weight_norm`: ``<name>`` becomes a plain parameter again (with its current
    value)."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
