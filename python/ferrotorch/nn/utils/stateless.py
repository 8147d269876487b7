"""``torch.nn.utils.stateless`` / ``torch.func.functional_call``: run a module with some of
its parameters and buffers temporarily replaced by given tensors."""

import warnings
from collections.abc import Sequence
from contextlib import contextmanager

from ferrotorch import _C

Tensor = _C.Tensor

__all__ = ["functional_call"]

_MISSING = object()


def _untie_named_tensors_map(module, parameters_and_buffers):
    all_named_tensors = {}
    all_named_tensors.update(module.named_parameters(remove_duplicate=False))
    all_named_tensors.update(module.named_buffers(remove_duplicate=False))

    tensor_to_tied_names = {}
    for name, tensor in all_named_tensors.items():
        tensor_to_tied_names.setdefault(id(tensor), set()).add(name)
    tied_names_map = {}
    for tied_names in tensor_to_tied_names.values():
        if len(tied_names) > 1:
            for tied_name in tied_names:
                tied_names_map[tied_name] = tied_names

    given_names = set(parameters_and_buffers.keys())
    given_for_tied = given_names.intersection(tied_names_map.keys())
    for given_name in given_for_tied:
        tied_names = tied_names_map[given_name]
        if (len(tied_names.intersection(given_for_tied)) > 1
                and len({id(parameters_and_buffers[n]) for n in tied_names
                         if n in given_names}) != 1):
            raise ValueError(
                f"functional_call got multiple values for keys {sorted(tied_names)}, "
                "which are tied. Consider using tie_weights=False"
            )
    untied = dict(parameters_and_buffers)
    for given_name in given_for_tied:
        for tied_name in tied_names_map[given_name]:
            untied[tied_name] = parameters_and_buffers[given_name]
    return untied


def _swap_tensor(module, name, tensor):
    """Put ``tensor`` at ``name`` (in ``_parameters``/``_buffers`` directly, so any tensor,
    also a non-leaf one, is accepted) and return what was there."""
    if tensor is not _MISSING and tensor is not None and not isinstance(tensor, Tensor):
        raise TypeError(f"{tensor} is not an instance of torch.Tensor")
    if name in module._parameters:
        orig = module._parameters[name]
        if tensor is _MISSING:
            del module._parameters[name]
        else:
            module._parameters[name] = tensor
    elif name in module._buffers:
        orig = module._buffers[name]
        if tensor is _MISSING:
            del module._buffers[name]
        else:
            module._buffers[name] = tensor
    else:
        orig = getattr(module, name) if hasattr(module, name) else _MISSING
        if orig is not _MISSING and not isinstance(orig, Tensor):
            raise TypeError(f"attribute `{name}`: {orig} is not an instance of torch.Tensor")
        if tensor is not _MISSING:
            setattr(module, name, tensor)
        elif hasattr(module, name):
            delattr(module, name)
    return orig


def _get_submodule_for(module, name):
    prefix, _, attr = name.rpartition(".")
    return module.get_submodule(prefix), attr


@contextmanager
def _reparametrize_module(module, parameters_and_buffers, tie_weights=False, strict=False):
    if tie_weights:
        untied = _untie_named_tensors_map(module, parameters_and_buffers)
    else:
        untied = parameters_and_buffers
    if strict:
        keys = {n for n, _ in module.named_parameters(remove_duplicate=False)}
        keys |= {n for n, _ in module.named_buffers(remove_duplicate=False)}
        missing_keys = sorted(keys - set(untied))
        unexpected_keys = sorted(set(untied) - keys)
        error_msgs = []
        if unexpected_keys:
            error_msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected_keys))}.")
        if missing_keys:
            error_msgs.append(f"Missing key(s): {', '.join(map(repr, missing_keys))}.")
        if error_msgs:
            raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(
                module._get_name(), "\n\t".join(error_msgs)))
    orig = {}
    try:
        for name, tensor in untied.items():
            sub, attr = _get_submodule_for(module, name)
            orig[name] = _swap_tensor(sub, attr, tensor)
        yield
    finally:
        new = {}
        for name, tensor in orig.items():
            sub, attr = _get_submodule_for(module, name)
            new[name] = _swap_tensor(sub, attr, tensor)
        parameters_and_buffers.update(
            {k: new[k] for k in parameters_and_buffers if k in new and new[k] is not _MISSING})


def _functional_call(module, parameters_and_buffers, args=None, kwargs=None, *,
                     tie_weights=True, strict=False):
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize_module(module, parameters_and_buffers, tie_weights=tie_weights,
                               strict=strict):
        return module(*args, **kwargs)


def _merge_dicts(parameter_and_buffer_dicts):
    if isinstance(parameter_and_buffer_dicts, dict):
        return parameter_and_buffer_dicts
    if isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError(
                "Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        counts = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated = [k for k, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of "
                             "functional call is ambiguous")
        return {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of "
                     f"dicts, but got {type(parameter_and_buffer_dicts)}")


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    r"""Call ``module(*args, **kwargs)`` with the parameters and buffers named in
    ``parameter_and_buffer_dicts`` (a dict, or a sequence of dicts with distinct keys)
    replaced by the given tensors for the duration of the call; the module is restored
    afterwards. Gradients flow to the given tensors.

    With ``tie_weights=True`` replacing one of several tied names (one tensor registered
    under several names) replaces them all; with ``strict=True`` the names must be exactly
    the module's parameters and buffers.

    This is ``torch.func.functional_call`` (ferrotorch has no ``func`` module, so it lives
    here; PyTorch's deprecated ``torch.nn.utils.stateless.functional_call`` is the same call
    with a ``FutureWarning``, see :func:`_deprecated_functional_call`).

    >>> import ferrotorch as torch
    >>> from ferrotorch.nn.utils.stateless import functional_call
    >>> m = torch.nn.Linear(2, 1)
    >>> w = {"weight": torch.ones(1, 2), "bias": torch.zeros(1)}
    >>> functional_call(m, w, (torch.tensor([[1.0, 2.0]]),))
    tensor([[3.]])
    """
    return _functional_call(module, _merge_dicts(parameter_and_buffer_dicts), args, kwargs,
                            tie_weights=tie_weights, strict=strict)


def _deprecated_functional_call(module, parameters_and_buffers, args=None, kwargs=None, *,
                                tie_weights=True, strict=False):
    warnings.warn(
        "This API is deprecated as of PyTorch 2.0 and will be removed in a future version of "
        "PyTorch. Please use torch.func.functional_call instead which is a drop-in "
        "replacement.", FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs,
                            tie_weights=tie_weights, strict=strict)
