"""``Optimizer``: the base class (PyTorch's ``torch/optim/optimizer.py``).

``param_groups`` is a list of dicts, each with a ``"params"`` list and its hyper-parameters
(missing ones are filled from ``defaults``); ``state`` maps each parameter to a dict of
per-parameter buffers (momentum, moments, step...). ``state_dict()`` replaces parameters by
integer ids so it can be saved and loaded into an optimizer over equivalent parameters.
"""

import functools
import warnings
from collections import OrderedDict, defaultdict
from copy import deepcopy
from itertools import chain

from ferrotorch import _C
from ferrotorch.autograd.grad_mode import no_grad

Tensor = _C.Tensor

__all__ = ["Optimizer", "required"]


class _RequiredParameter:
    """Marks a required hyper-parameter without a default."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def _use_grad_for_differentiable(func):
    """Run ``step`` under ``no_grad`` (the updates are in place and not recorded)."""

    @functools.wraps(func)
    def _use_grad(self, *args, **kwargs):
        with no_grad():
            return func(self, *args, **kwargs)

    return _use_grad


class Optimizer:
    r"""Base class for optimizers.

    ``params`` is an iterable of tensors, or of dicts defining parameter groups
    (``[{"params": ..., "lr": ...}, ...]``); ``defaults`` holds the default hyper-parameters.
    Subclasses implement ``step(closure=None)``.
    """

    def __init__(self, params, defaults):
        self.defaults = defaults
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        self._optimizer_state_dict_pre_hooks = OrderedDict()
        self._optimizer_state_dict_post_hooks = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks = OrderedDict()
        self._optimizer_load_state_dict_post_hooks = OrderedDict()
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                f"dicts, but got {type(params).__name__}"
            )
        if isinstance(params, set):
            warnings.warn(
                "optimizer parameters need to be organized in ordered collections, but the "
                "ordering of tensors in sets will change between runs. Please use a list "
                "instead. This will be an error in a future release.",
                FutureWarning,
                stacklevel=2,
            )
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state,
                "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.__dict__.setdefault("_optimizer_step_pre_hooks", OrderedDict())
        self.__dict__.setdefault("_optimizer_step_post_hooks", OrderedDict())
        self.__dict__.setdefault("_optimizer_state_dict_pre_hooks", OrderedDict())
        self.__dict__.setdefault("_optimizer_state_dict_post_hooks", OrderedDict())
        self.__dict__.setdefault("_optimizer_load_state_dict_pre_hooks", OrderedDict())
        self.__dict__.setdefault("_optimizer_load_state_dict_post_hooks", OrderedDict())

    def __repr__(self):
        format_string = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            format_string += "\n"
            format_string += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    format_string += f"    {key}: {group[key]}\n"
        format_string += ")"
        return format_string

    def add_param_group(self, param_group):
        r"""Add a group of parameters (a dict with ``"params"`` and optional options).

        ``"params"`` may hold ``(name, tensor)`` pairs (e.g. ``model.named_parameters()``):
        the names go to the group's ``"param_names"``."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the "
                "ordering of tensors in sets will change between runs. Please use a list "
                "instead."
            )
        else:
            param_group["params"] = list(params)
        names = [p[0] for p in param_group["params"] if isinstance(p, tuple)]
        if names:
            if len(names) != len(param_group["params"]):
                raise ValueError("all optimizer params should be with/without names. Some param "
                                 "names are missing")
            param_group["params"] = [p[1] for p in param_group["params"]]
            param_group["param_names"] = names
        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + type(param).__name__)
            if (not self.defaults.get("differentiable", None)
                    and not (param.is_leaf or param.retains_grad)):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(
                    f"parameter group didn't specify a value of required optimization "
                    f"parameter {name}"
                )
            param_group.setdefault(name, default)
        param_ids = [id(p) for p in param_group["params"]]
        if len(param_ids) != len(set(param_ids)):
            import warnings

            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in future, "
                "this will cause an error; see github.com/pytorch/pytorch/issues/40967 for "
                "more information",
                stacklevel=3,
            )
        param_set = set()
        for group in self.param_groups:
            param_set.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                current = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {current} to the optimizer")
        if param_set & set(param_ids):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none=True):
        r"""Reset the gradients of all optimized parameters (to ``None`` by default)."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    if set_to_none:
                        p.grad = None
                    else:
                        g = p.grad
                        if g.grad_fn is not None:
                            g = g.detach()
                        else:
                            g.requires_grad_(False)
                        g.zero_()
                        p.grad = g

    def step(self, closure=None):
        r"""Perform one optimization step (``closure`` re-evaluates the model and returns the
        loss)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ state dict
    def state_dict(self):
        r"""``{"state": {param_id: {...}}, "param_groups": [{..., "params": [ids]}]}`` with
        parameters numbered in the order they appear across groups."""
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        param_mappings = {}
        start_index = 0

        def pack_group(group):
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start_index):
                if id(p) not in param_mappings:
                    param_mappings[id(p)] = i
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(param_mappings[id(k)] if isinstance(k, Tensor) else k): v
                        for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": param_groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            hook_result = post_hook(self, state_dict)
            if hook_result is not None:
                state_dict = hook_result
        return state_dict

    @staticmethod
    def _process_value_according_to_param_policy(param, value, param_id, param_groups, key=None):
        if key == "step":
            return value
        if param.is_floating_point():
            return value.to(param.dtype)
        return value

    def load_state_dict(self, state_dict):
        r"""Load optimizer state produced by :meth:`state_dict` (deep-copied; tensors are cast
        to their parameter's dtype, except ``step``)."""
        state_dict = state_dict.copy()
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            hook_result = pre_hook(self, state_dict)
            if hook_result is not None:
                state_dict = hook_result
        state_dict = deepcopy(state_dict)
        groups = self.param_groups
        saved_groups = state_dict["param_groups"]
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        param_lens = (len(g["params"]) for g in groups)
        saved_lens = (len(g["params"]) for g in saved_groups)
        if any(p_len != s_len for p_len, s_len in zip(param_lens, saved_lens)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of "
                "optimizer's group"
            )
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def _cast(param, value, param_id=None, param_groups=None, key=None):
            if isinstance(value, Tensor):
                return Optimizer._process_value_according_to_param_policy(
                    param, value, param_id, param_groups, key)
            if isinstance(value, dict):
                return {k: _cast(param, v, param_id, param_groups, key=k)
                        for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(_cast(param, v, param_id, param_groups) for v in value)
            return value

        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = _cast(param, v, param_id=k,
                                     param_groups=state_dict["param_groups"])
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        # Through __setstate__, as PyTorch: subclasses fill options missing from old dicts.
        self.__setstate__({"state": state, "param_groups": param_groups})
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)

    # ------------------------------------------------------------------ hooks
    def register_step_pre_hook(self, hook):
        from ferrotorch.nn.modules.module import RemovableHandle

        handle = RemovableHandle(self._optimizer_step_pre_hooks)
        self._optimizer_step_pre_hooks[handle.id] = hook
        return handle

    def register_step_post_hook(self, hook):
        from ferrotorch.nn.modules.module import RemovableHandle

        handle = RemovableHandle(self._optimizer_step_post_hooks)
        self._optimizer_step_post_hooks[handle.id] = hook
        return handle

    def _register_hook(self, hooks, hook, prepend):
        from ferrotorch.nn.modules.module import RemovableHandle

        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_state_dict_pre_hook(self, hook, prepend=False):
        r"""``hook(optimizer)`` runs before :meth:`state_dict` builds the dict."""
        return self._register_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        r"""``hook(optimizer, state_dict)`` runs on the dict :meth:`state_dict` returns (a
        returned dict replaces it)."""
        return self._register_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        r"""``hook(optimizer, state_dict)`` runs before :meth:`load_state_dict` (a returned
        dict is loaded instead)."""
        return self._register_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        r"""``hook(optimizer)`` runs after :meth:`load_state_dict`."""
        return self._register_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_hooked", False):
            @functools.wraps(step)
            def hooked_step(self, *args, **kw):
                # A subclass's step calling super().step() runs the hooks only once.
                if self.__dict__.get("_in_hooked_step"):
                    return step(self, *args, **kw)
                self._in_hooked_step = True
                try:
                    for hook in list(self._optimizer_step_pre_hooks.values()):
                        res = hook(self, args, kw)
                        if res is not None:
                            args, kw = res
                    out = step(self, *args, **kw)
                    for hook in list(self._optimizer_step_post_hooks.values()):
                        hook(self, args, kw)
                finally:
                    self._in_hooked_step = False
                return out

            hooked_step._hooked = True
            cls.step = hooked_step


def _check_tensor_lr(lr):
    """A tensor ``lr`` must hold one element (it stays a tensor in ``param_groups``, as in
    PyTorch; the steps read its value)."""
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")


def _check_fused(fused, foreach, differentiable):
    """PyTorch's ``fused=True`` checks (SGD, Adam, AdamW, Adagrad)."""
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


def _check_adam_hyperparameters(lr, eps, betas, weight_decay):
    """PyTorch's checks for the Adam family; returns ``lr`` (a tensor lr is kept)."""
    _check_tensor_lr(lr)
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")
    return lr


def _closure_loss(closure):
    """The loss from a step's ``closure``, evaluated with grad enabled (None without one)."""
    if closure is None:
        return None
    from ferrotorch.autograd.grad_mode import enable_grad

    with enable_grad():
        return closure()


def _to_scalar(x):
    return x.item() if isinstance(x, Tensor) else x


def _zeros_like(p):
    """A zero tensor shaped like ``p`` (no autograd)."""
    return _C.zeros_like(p).detach()


_FUSED_DTYPES = (_C.float32, _C.float64)


def _fused_inputs(group, cuda=False):
    """The group's parameters that have gradients and those gradients, ready for a fused
    Rust step (one call updates the whole group), or ``None`` when the group needs the
    generic tensor-op path: half precision on the CPU, CUDA parameters unless ``cuda``
    (the optimizer has a CUDA kernel: SGD, Adam, AdamW), parameters and gradients on
    different devices, ``differentiable=True`` or ``fused=False``."""
    if group.get("differentiable") or group.get("fused") is False:
        return None
    # One Rust call checks every parameter (float32/float64 CPU or, with `cuda`, any float
    # CUDA tensor; contiguous, gradient of the same dtype, shape and device) and gathers the
    # gradients (made contiguous).
    return _C._fused_grads(group["params"], cuda=cuda)
