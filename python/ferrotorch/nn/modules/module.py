"""``nn.Module``: the base class of every layer, following PyTorch's ``torch/nn/modules/module.py``.

Parameters, buffers and submodules are registered by plain attribute assignment (``__setattr__``)
and live in three ordered dicts; everything else (``parameters()``, ``state_dict()``, ``to()``...)
walks those dicts recursively.
"""

import functools
import itertools
import warnings
import weakref
from collections import OrderedDict, namedtuple

import ferrotorch
from ferrotorch import _C
from ferrotorch.nn.parameter import Buffer, Parameter

Tensor = _C.Tensor

__all__ = ["Module", "RemovableHandle", "register_module_forward_pre_hook",
           "register_module_forward_hook", "register_module_backward_hook",
           "register_module_full_backward_hook", "register_module_full_backward_pre_hook",
           "register_module_buffer_registration_hook",
           "register_module_module_registration_hook",
           "register_module_parameter_registration_hook"]


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class RemovableHandle:
    """Handle returned by the ``register_*_hook`` methods; ``handle.remove()`` unregisters."""

    _next_id = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle._next_id
        RemovableHandle._next_id += 1
        # ``extra_dict``: one dict or a list of dicts the id is also removed from (as PyTorch).
        if extra_dict is None:
            extra_dict = []
        elif isinstance(extra_dict, dict):
            extra_dict = [extra_dict]
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extra_dict)

    def remove(self):
        hooks_dict = self.hooks_dict_ref()
        if hooks_dict is not None and self.id in hooks_dict:
            del hooks_dict[self.id]
        for ref in self.extra_dict_ref:
            extra = ref()
            if extra is not None and self.id in extra:
                del extra[self.id]

    def __enter__(self):
        return self

    def __exit__(self, *args):
        self.remove()


def _typename(obj):
    """``torch.typename`` (legacy tensor type names, qualified class names), as PyTorch's
    assignment errors print it."""
    from ferrotorch._api_gaps3 import typename

    return typename(obj)


def _addindent(s_, num_spaces):
    s = s_.split("\n")
    if len(s) == 1:
        return s_
    first = s.pop(0)
    s = [(num_spaces * " ") + line for line in s]
    return first + "\n" + "\n".join(s)


# Hooks registered for every module (register_module_forward_hook & co.).
_global_buffer_registration_hooks = OrderedDict()
_global_module_registration_hooks = OrderedDict()
_global_parameter_registration_hooks = OrderedDict()
_global_backward_pre_hooks = OrderedDict()
_global_backward_hooks = OrderedDict()
_global_is_full_backward_hook = None
_global_forward_pre_hooks = OrderedDict()
_global_forward_hooks = OrderedDict()
_global_forward_hooks_with_kwargs = OrderedDict()
_global_forward_hooks_always_called = OrderedDict()


def _global_hook(hooks, hook, extra=None):
    handle = RemovableHandle(hooks, extra_dict=extra)
    hooks[handle.id] = hook
    return handle


def register_module_buffer_registration_hook(hook):
    """``hook(module, name, buffer)`` runs whenever any module registers a buffer; a non-None
    return value is registered instead."""
    return _global_hook(_global_buffer_registration_hooks, hook)


def register_module_module_registration_hook(hook):
    """``hook(module, name, submodule)`` runs whenever any module registers a submodule; a
    non-None return value is registered instead."""
    return _global_hook(_global_module_registration_hooks, hook)


def register_module_parameter_registration_hook(hook):
    """``hook(module, name, param)`` runs whenever any module registers a parameter; a
    non-None return value is registered instead."""
    return _global_hook(_global_parameter_registration_hooks, hook)


def register_module_forward_pre_hook(hook):
    """A forward pre-hook ``hook(module, args)`` common to all modules."""
    return _global_hook(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    """A forward hook ``hook(module, args, output)`` (``hook(module, args, kwargs, output)``
    with ``with_kwargs``) common to all modules; ``always_call`` runs it even when forward
    raises."""
    handle = _global_hook(_global_forward_hooks, hook,
                          [_global_forward_hooks_always_called,
                           _global_forward_hooks_with_kwargs])
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle


def _set_global_full_backward(full):
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is (not full):
        raise RuntimeError(
            "Cannot use both regular backward hooks and full backward hooks as a global "
            "Module hook. Please use only one of them.")
    _global_is_full_backward_hook = full


def register_module_backward_hook(hook):
    """Deprecated non-full backward hook common to all modules (see
    :meth:`Module.register_backward_hook`)."""
    _set_global_full_backward(False)
    return _global_hook(_global_backward_hooks, hook)


def register_module_full_backward_pre_hook(hook):
    """``hook(module, grad_output)`` common to all modules, run before their full backward
    hooks."""
    return _global_hook(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook):
    """``hook(module, grad_input, grad_output)`` common to all modules (run before the
    modules' own full backward hooks)."""
    _set_global_full_backward(True)
    return _global_hook(_global_backward_hooks, hook)


_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


class Module:
    r"""Base class for all neural network modules.

    Subclasses call ``super().__init__()`` first, assign layers/parameters as attributes, and
    define ``forward``:

    >>> import ferrotorch as torch
    >>> class Model(torch.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc = torch.nn.Linear(3, 2)
    ...     def forward(self, x):
    ...         return self.fc(x).relu()
    >>> [name for name, _ in Model().named_parameters()]
    ['fc.weight', 'fc.bias']
    """

    dump_patches = False
    _version = 1
    training: bool
    call_super_init = False

    def __init__(self, *args, **kwargs):
        if not self.call_super_init and kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword "
                            f"argument '{next(iter(kwargs))}'")
        if not self.call_super_init and args:
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but "
                            f"{len(args) + 1} were given")
        # object.__setattr__ avoids our own __setattr__ before the dicts exist.
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_forward_hooks", OrderedDict())
        object.__setattr__(self, "_forward_hooks_with_kwargs", OrderedDict())
        object.__setattr__(self, "_forward_hooks_always_called", OrderedDict())
        object.__setattr__(self, "_is_full_backward_hook", None)
        object.__setattr__(self, "_forward_pre_hooks", OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks_with_kwargs", OrderedDict())
        object.__setattr__(self, "_backward_hooks", OrderedDict())
        object.__setattr__(self, "_backward_pre_hooks", OrderedDict())
        object.__setattr__(self, "_state_dict_hooks", OrderedDict())
        object.__setattr__(self, "_state_dict_pre_hooks", OrderedDict())
        object.__setattr__(self, "_load_state_dict_pre_hooks", OrderedDict())
        object.__setattr__(self, "_load_state_dict_post_hooks", OrderedDict())
        if self.call_super_init:
            # cooperative multiple inheritance: the next class in the MRO gets the arguments
            super().__init__(*args, **kwargs)

    def forward(self, *input):
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function'
        )

    # ------------------------------------------------------------------ registration
    def register_buffer(self, name, tensor, persistent=True):
        """Add a buffer (a tensor that is state but not a parameter, e.g. running statistics).
        Non-persistent buffers are left out of ``state_dict``."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                "(torch Tensor or None required)"
            )
        if isinstance(tensor, Buffer):
            tensor = tensor.data
        for hook in _global_buffer_registration_hooks.values():
            output = hook(self, name, tensor)
            if output is not None:
                tensor = output
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        """Add a parameter (a :class:`Parameter` or ``None``) under ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError('parameter name can\'t contain "."')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
        elif not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                "(torch.nn.Parameter or None required)"
            )
        elif param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                "created explicitly. To express '{name}' as a function of another Tensor, compute "
                "the value in the forward() method."
            )
        else:
            for hook in _global_parameter_registration_hooks.values():
                output = hook(self, name, param)
                if output is not None:
                    param = output
            self._parameters[name] = param

    def add_module(self, name, module):
        """Add a child module under ``name`` (accessible as an attribute)."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {type(name).__name__}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        for hook in _global_module_registration_hooks.values():
            output = hook(self, name, module)
            if output is not None:
                module = output
        self._modules[name] = module

    def register_module(self, name, module):
        """Alias for :meth:`add_module`."""
        self.add_module(name, module)

    def get_submodule(self, target):
        """The submodule at dotted path ``target`` (``""`` is ``self``)."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def set_submodule(self, target, module, strict=False):
        """Put ``module`` at dotted path ``target``: replaces the submodule there, or adds it to
        an existing parent (with ``strict=True`` only replaces), as PyTorch's."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        atoms = target.split(".")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent = self if len(atoms) == 1 else self.get_submodule(".".join(atoms[:-1]))
        if strict and not hasattr(parent, atoms[-1]):
            raise AttributeError(f"{parent._get_name()} has no attribute `{atoms[-1]}`")
        if hasattr(parent, atoms[-1]) and not isinstance(getattr(parent, atoms[-1]), Module):
            raise AttributeError(f"`{atoms[-1]}` is not an nn.Module")
        setattr(parent, atoms[-1], module)

    def get_parameter(self, target):
        """The parameter at dotted path ``target``."""
        module_path, _, param_name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, param_name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{param_name}`")
        param = getattr(mod, param_name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{param_name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target):
        """The buffer at dotted path ``target``."""
        module_path, _, buffer_name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, buffer_name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{buffer_name}`")
        if buffer_name not in mod._buffers:
            raise AttributeError(f"`{buffer_name}` is not a buffer")
        return getattr(mod, buffer_name)

    # ------------------------------------------------------------------ attribute protocol
    def __getattr__(self, name):
        # Only called when normal lookup fails: look in the registries.
        d = self.__dict__
        if "_parameters" in d and name in d["_parameters"]:
            return d["_parameters"][name]
        if "_buffers" in d and name in d["_buffers"]:
            return d["_buffers"][name]
        if "_modules" in d and name in d["_modules"]:
            return d["_modules"][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        def remove_from(*dicts_or_sets):
            for d in dicts_or_sets:
                if name in d:
                    if isinstance(d, dict):
                        del d[name]
                    else:
                        d.discard(name)

        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(self.__dict__, self._buffers, self._modules,
                        self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{_typename(value)}' as parameter '{name}' "
                    "(torch.nn.Parameter or None expected)"
                )
            self.register_parameter(name, value)
        else:
            modules = self.__dict__.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(self.__dict__, self._parameters, self._buffers,
                            self._non_persistent_buffers_set)
                for hook in _global_module_registration_hooks.values():
                    output = hook(self, name, value)
                    if output is not None:
                        value = output
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(
                        f"cannot assign '{_typename(value)}' as child module '{name}' "
                        "(torch.nn.Module or None expected)"
                    )
                for hook in _global_module_registration_hooks.values():
                    output = hook(self, name, value)
                    if output is not None:
                        value = output
                modules[name] = value
            else:
                buffers = self.__dict__.get("_buffers")
                if isinstance(value, Buffer) or (buffers is not None and name in buffers):
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(
                            f"cannot assign '{_typename(value)}' as buffer '{name}' "
                            "(torch.nn.Buffer, torch.Tensor or None expected)"
                        )
                    if isinstance(value, Buffer):
                        persistent = value.persistent
                    else:
                        persistent = name not in self._non_persistent_buffers_set
                    remove_from(self.__dict__, self._parameters, self._modules)
                    self.register_buffer(name, value, persistent)
                else:
                    object.__setattr__(self, name, value)

    def __delattr__(self, name):
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        keys = list(super().__dir__())
        keys += list(self._parameters) + list(self._buffers) + list(self._modules)
        return sorted(k for k in set(keys) if not k[0].isdigit())

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in ("_state_dict_pre_hooks", "_load_state_dict_post_hooks",
                     "_forward_hooks_always_called"):
            self.__dict__.setdefault(name, OrderedDict())  # pickled before these existed
        self.__dict__.setdefault("_is_full_backward_hook", None)

    # ------------------------------------------------------------------ iteration
    def _named_members(self, get_members_fn, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = (
            self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
            if recurse else [(prefix, self)]
        )
        for module_prefix, module in modules:
            for k, v in get_members_fn(module):
                if v is None or id(v) in memo:
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                name = module_prefix + ("." if module_prefix else "") + k
                yield name, v

    def parameters(self, recurse=True):
        """Iterator over the module's parameters (each shared parameter once)."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """Iterator over ``(name, parameter)`` pairs, names dotted like ``"fc.weight"``."""
        yield from self._named_members(
            lambda module: module._parameters.items(),
            prefix=prefix, recurse=recurse, remove_duplicate=remove_duplicate,
        )

    def buffers(self, recurse=True):
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(
            lambda module: module._buffers.items(),
            prefix=prefix, recurse=recurse, remove_duplicate=remove_duplicate,
        )

    def children(self):
        for _, module in self.named_children():
            yield module

    def named_children(self):
        memo = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def modules(self):
        for _, module in self.named_modules():
            yield module

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """Iterator over all modules in the tree (``self`` first, with name ``prefix``)."""
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            submodule_prefix = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, submodule_prefix, remove_duplicate)

    # ------------------------------------------------------------------ modes
    def train(self, mode=True):
        """Set training mode (``self.training``) on this module and all descendants."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        """Evaluation mode: same as ``self.train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Reset the gradients of all parameters (to ``None`` by default, else zero them)."""
        for p in self.parameters():
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

    # ------------------------------------------------------------------ conversion
    def _apply(self, fn, recurse=True):
        """Apply ``fn`` to every parameter, gradient and buffer, in place (``param.data``
        is replaced so the Parameter objects, and optimizers holding them, stay valid)."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        for param in self._parameters.values():
            if param is None:
                continue
            with ferrotorch.no_grad():
                param_applied = fn(param)
            if param_applied is not param:
                param.data = param_applied.detach()
            if param.grad is not None:
                with ferrotorch.no_grad():
                    grad_applied = fn(param.grad)
                if grad_applied is not param.grad:
                    param.grad = grad_applied
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def apply(self, fn):
        """Call ``fn(module)`` on every submodule (children first) and on ``self``."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def to(self, *args, **kwargs):
        """``module.to(dtype)``, ``module.to(device)``, ``module.to(device, dtype)`` or
        ``module.to(tensor)``: converts floating-point parameters and buffers in place."""
        device, dtype = None, kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        kwargs.pop("copy", None)
        memory_format = kwargs.pop("memory_format", None)
        if kwargs:
            raise TypeError(f"to() got unexpected keyword arguments {list(kwargs)}")
        for a in args:
            if isinstance(a, _C.dtype):
                dtype = a
            elif isinstance(a, Tensor):
                device, dtype = a.device, a.dtype
            elif isinstance(a, (str, _C.device)):
                device = a
            elif isinstance(a, bool):
                continue
            else:
                raise TypeError(f"to() received an invalid argument: {a!r}")
        if dtype is not None and not (dtype.is_floating_point
                                      or getattr(dtype, "is_complex", False)):
            raise TypeError(
                "nn.Module.to only accepts floating point or complex dtypes, but got desired "
                f"dtype={dtype}"
            )

        def convert(t):
            if device is not None and str(t.device) != str(_C.device(device)):
                t = t.to(device)
            if dtype is not None and t.is_floating_point() and t.dtype != dtype:
                t = t.to(dtype)
            if memory_format is not None and t.dim() in (4, 5):
                t = t.to(memory_format=memory_format)  # 4-D/5-D tensors only, as PyTorch
            return t

        return self._apply(convert)

    def to_empty(self, *, device, recurse=True):
        """Moves the parameters and buffers to ``device`` without copying their values: each
        becomes ``empty_like`` on that device (for modules built on the meta device or to be
        filled by ``load_state_dict``)."""
        return self._apply(lambda t: _C.empty_like(t, device=device), recurse=recurse)

    def cpu(self):
        return self._apply(lambda t: t.cpu())

    def share_memory(self):
        """``share_memory_()`` on every parameter and buffer; returns ``self``."""
        return self._apply(lambda t: t.share_memory_())

    def compile(self, *args, **kwargs):
        """PyTorch's in-place ``Module.compile``: ``ferrotorch.compile`` runs eagerly, so this
        only checks the arguments and the module keeps being called as before."""
        ferrotorch.compile(self._call_impl, *args, **kwargs)

    def cuda(self, device=None):
        return self._apply(lambda t: t.cuda() if device is None else t.cuda(device))

    def type(self, dst_type):
        """Cast all parameters and buffers to ``dst_type`` (a dtype)."""
        return self._apply(lambda t: t.to(dst_type))

    def float(self):
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self):
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self):
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self):
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    # ------------------------------------------------------------------ state dict
    def get_extra_state(self):
        """Extra (non-tensor) state for ``state_dict``, stored under ``prefix + "_extra_state"``
        when a subclass overrides this (and ``set_extra_state`` to load it back)."""
        raise RuntimeError(
            "Reached a code path in Module.get_extra_state() that should never be called. "
            "Please file an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-"
            "report.yml to report this bug.")

    def set_extra_state(self, state):
        """Restore the extra state returned by ``get_extra_state`` (subclasses override both)."""
        raise RuntimeError(
            "Reached a code path in Module.set_extra_state() that should never be called. "
            "Please file an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-"
            "report.yml to report this bug.")

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """An ``OrderedDict`` of parameters and persistent buffers, keyed by dotted names.
        Values are detached (sharing storage) unless ``keep_vars=True``."""
        if args:  # the deprecated positional form (destination, prefix, keep_vars)
            destination = args[0]
            if len(args) > 1:
                prefix = args[1]
            if len(args) > 2:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = dict(version=self._version)
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self.__dict__.get("_state_dict_pre_hooks", {}).values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, local_metadata)
            if getattr(hook, "_from_public_api", False):
                if result is not None:
                    raise RuntimeError("state_dict post-hook must return None")
            elif result is not None:
                destination = result
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        persistent_buffers = {
            k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set
        }
        local_state = {k: v for k, v in itertools.chain(self._parameters.items(),
                                                          persistent_buffers.items())
                       if v is not None}
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            input_param = state_dict[key]
            if not isinstance(input_param, Tensor):
                error_msgs.append(
                    f'While copying the parameter named "{key}", expected torch.Tensor or '
                    f"Tensor-like object from checkpoint but received {type(input_param)}"
                )
                continue
            if tuple(input_param.shape) != tuple(param.shape):
                error_msgs.append(
                    f"size mismatch for {key}: copying a param with shape "
                    f"{input_param.shape} from checkpoint, the shape in current model is "
                    f"{param.shape}."
                )
                continue
            if local_metadata.get("assign_to_params_buffers", False):
                # assign=True: take the checkpoint's tensor itself (keeping requires_grad).
                if isinstance(param, Parameter):
                    if not isinstance(input_param, Parameter):
                        input_param = Parameter(input_param, requires_grad=param.requires_grad)
                    else:
                        input_param.requires_grad_(param.requires_grad)
                setattr(self, name, input_param)
                continue
            try:
                with ferrotorch.no_grad():
                    param.copy_(input_param)
            except Exception as ex:  # noqa: BLE001 (reported like PyTorch)
                error_msgs.append(
                    f'While copying the parameter named "{key}", whose dimensions in the model '
                    f"are {param.shape} and whose dimensions in the checkpoint are "
                    f"{input_param.shape}, an exception occurred : {ex.args}."
                )
        extra_state_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra_state_key in state_dict:
                self.set_extra_state(state_dict[extra_state_key])
            elif strict:
                missing_keys.append(extra_state_key)
        elif strict and extra_state_key in state_dict:
            unexpected_keys.append(extra_state_key)
        if strict:
            for key in state_dict.keys():
                if key.startswith(prefix) and key != extra_state_key:
                    input_name = key[len(prefix):].split(".", 1)
                    if input_name[0] not in self._modules and input_name[0] not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy parameters and buffers from ``state_dict`` into this module (in place).

        Returns ``(missing_keys, unexpected_keys)``; with ``strict=True`` any mismatch raises a
        ``RuntimeError`` listing them. Shape mismatches always raise. With ``assign=True`` the
        checkpoint's tensors replace the module's (no copy)."""
        if not isinstance(state_dict, dict):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys, unexpected_keys, error_msgs = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata

        def load(module, local_state_dict, prefix=""):
            local_metadata = {} if metadata is None else metadata.get(prefix[:-1], {})
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            for hook in module._load_state_dict_pre_hooks.values():
                hook(local_state_dict, prefix, local_metadata, True, missing_keys,
                     unexpected_keys, error_msgs)
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True,
                                         missing_keys, unexpected_keys, error_msgs)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    child_state_dict = {k: v for k, v in local_state_dict.items()
                                        if k.startswith(child_prefix)}
                    load(child, child_state_dict, child_prefix)
            incompatible_keys = _IncompatibleKeys(missing_keys, unexpected_keys)
            for hook in module.__dict__.get("_load_state_dict_post_hooks", {}).values():
                if hook(module, incompatible_keys) is not None:
                    raise AssertionError(
                        "Hooks registered with ``register_load_state_dict_post_hook`` are not "
                        "expected to return new values, if incompatible_keys need to be "
                        "modified, it should be done inplace.")

        load(self, state_dict)
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing_keys)))
        if error_msgs:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                self.__class__.__name__, "\n\t".join(error_msgs)))
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    def _register_state_dict_hook(self, hook):
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = (
            functools.partial(hook, self) if with_module else hook)
        return handle

    def register_state_dict_pre_hook(self, hook):
        """``hook(module, prefix, keep_vars)`` runs before ``state_dict`` collects this
        module's entries."""
        handle = RemovableHandle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[handle.id] = hook
        return handle

    def register_state_dict_post_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata)`` runs after ``state_dict``
        collected this module's entries; it edits ``state_dict`` in place (returns None)."""

        def post_hook(module, state_dict, prefix, local_metadata):
            return hook(module, state_dict, prefix, local_metadata)

        post_hook._from_public_api = True
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = post_hook
        return handle

    def register_load_state_dict_pre_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` runs before this module loads its entries."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def register_load_state_dict_post_hook(self, hook):
        """``hook(module, incompatible_keys)`` runs after this module (and its children)
        loaded; it may edit ``incompatible_keys.missing_keys`` / ``unexpected_keys`` in place
        before ``strict`` checks them."""
        handle = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[handle.id] = hook
        return handle

    # ------------------------------------------------------------------ hooks and __call__
    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """``hook(module, args)`` (or ``hook(module, args, kwargs)`` with ``with_kwargs``) runs
        before ``forward``; a non-None return value replaces the arguments."""
        handle = RemovableHandle(self._forward_pre_hooks,
                                 extra_dict=self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False,
                              always_call=False):
        """``hook(module, args, output)`` runs after ``forward``; a non-None return value
        replaces the output. With ``always_call`` it also runs (with ``output=None``) when
        ``forward`` raises."""
        handle = RemovableHandle(self._forward_hooks,
                                 extra_dict=[self._forward_hooks_with_kwargs,
                                             self._forward_hooks_always_called])
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def _set_full_backward(self, full):
        if self._is_full_backward_hook is (not full):
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks "
                               "on a single Module. Please use only one of them.")
        self._is_full_backward_hook = full

    def register_backward_hook(self, hook):
        """Deprecated: ``hook(module, grad_input, grad_output)`` registered on the ``grad_fn``
        of the module's (first) output, so ``grad_input`` are the gradients of that last
        operation's inputs. Use :meth:`register_full_backward_hook`."""
        self._set_full_backward(False)
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        return handle

    def register_full_backward_hook(self, hook, prepend=False):
        """``hook(module, grad_input, grad_output)`` runs when the gradients with respect to
        the module's tensor inputs are computed. ``grad_input`` may be replaced by returning a
        tuple."""
        self._set_full_backward(True)
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """``hook(module, grad_output)`` runs when the gradients with respect to the module's
        outputs are computed; returning a tuple replaces ``grad_output``."""
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def _get_backward_hooks(self):
        """(full, non-full) backward hooks: the global ones first, as PyTorch."""
        full, non_full = [], []
        if _global_is_full_backward_hook is True:
            full += _global_backward_hooks.values()
        elif _global_is_full_backward_hook is False:
            non_full += _global_backward_hooks.values()
        if self._is_full_backward_hook is True:
            full += self._backward_hooks.values()
        elif self._is_full_backward_hook is False:
            non_full += self._backward_hooks.values()
        return full, non_full

    def _call_impl(self, *args, **kwargs):
        forward_call = self.forward
        if not (self._forward_hooks or self._forward_pre_hooks or self._backward_hooks
                or self._backward_pre_hooks or _global_forward_hooks
                or _global_forward_pre_hooks or _global_backward_hooks
                or _global_backward_pre_hooks):
            return forward_call(*args, **kwargs)

        result = None
        called_always_called_hooks = set()
        always_called = self.__dict__.get("_forward_hooks_always_called", {})

        def inner():
            nonlocal result, args, kwargs
            full_backward_hooks, non_full_backward_hooks = [], []
            backward_pre_hooks = [*_global_backward_pre_hooks.values(),
                                  *self._backward_pre_hooks.values()]
            if self._backward_hooks or _global_backward_hooks:
                full_backward_hooks, non_full_backward_hooks = self._get_backward_hooks()

            for hook_id, hook in itertools.chain(_global_forward_pre_hooks.items(),
                                                 self._forward_pre_hooks.items()):
                if hook_id in self._forward_pre_hooks_with_kwargs:
                    hook_result = hook(self, args, kwargs)
                    if hook_result is not None:
                        if not (isinstance(hook_result, tuple) and len(hook_result) == 2):
                            raise RuntimeError(
                                "forward pre-hook must return None or a tuple of (new_args, "
                                f"new_kwargs), but got {hook_result}."
                            )
                        args, kwargs = hook_result
                else:
                    hook_result = hook(self, args)
                    if hook_result is not None:
                        args = hook_result if isinstance(hook_result, tuple) else (hook_result,)

            bw = None
            if full_backward_hooks or backward_pre_hooks:
                bw = _BackwardHook(self, full_backward_hooks, backward_pre_hooks)
                args = bw.setup_input_hook(args)

            result = forward_call(*args, **kwargs)

            for hook_id, hook in itertools.chain(_global_forward_hooks.items(),
                                                 self._forward_hooks.items()):
                if hook_id in always_called or hook_id in _global_forward_hooks_always_called:
                    called_always_called_hooks.add(hook_id)
                if (hook_id in self._forward_hooks_with_kwargs
                        or hook_id in _global_forward_hooks_with_kwargs):
                    hook_result = hook(self, args, kwargs, result)
                else:
                    hook_result = hook(self, args, result)
                if hook_result is not None:
                    result = hook_result

            if bw is not None:
                if not isinstance(result, (Tensor, tuple)):
                    warnings.warn("For backward hooks to be called, module output should be a "
                                  "Tensor or a tuple of Tensors but received "
                                  f"{type(result)}", stacklevel=3)
                result = bw.setup_output_hook(result)

            if non_full_backward_hooks:
                var = result
                while not isinstance(var, Tensor):
                    if isinstance(var, dict):
                        var = next(v for v in var.values() if isinstance(v, Tensor))
                    else:
                        var = var[0]
                if var.grad_fn is not None:
                    for hook in non_full_backward_hooks:
                        wrapped = functools.update_wrapper(functools.partial(hook, self), hook)
                        var.grad_fn.register_hook(wrapped)
            return result

        try:
            return inner()
        except Exception:
            # forward hooks registered with always_call=True run even when forward raised
            # (global ones first, as in the normal path)
            for hook_id, hook in itertools.chain(_global_forward_hooks.items(),
                                                 self._forward_hooks.items()):
                is_global = hook_id in _global_forward_hooks_always_called
                if not (is_global or hook_id in always_called):
                    continue
                if hook_id in called_always_called_hooks:
                    continue
                try:
                    if (hook_id in self._forward_hooks_with_kwargs
                            or hook_id in _global_forward_hooks_with_kwargs):
                        hook_result = hook(self, args, kwargs, result)
                    else:
                        hook_result = hook(self, args, result)
                    if hook_result is not None:
                        result = hook_result
                except Exception as e:  # noqa: BLE001 (silenced, as PyTorch)
                    kind = "global module forward hook" if is_global else "module forward hook"
                    warnings.warn(f"{kind} with ``always_call=True`` raised an exception that "
                                  f"was silenced as another error was raised in forward: "
                                  f"{str(e)}", stacklevel=2)
            raise

    __call__ = _call_impl

    # ------------------------------------------------------------------ repr
    def extra_repr(self):
        """Extra information shown in the module's repr (override in subclasses)."""
        return ""

    def _get_name(self):
        return self.__class__.__name__

    def __repr__(self):
        extra_lines = []
        extra_repr = self.extra_repr()
        if extra_repr:
            extra_lines = extra_repr.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            mod_str = _addindent(repr(module), 2)
            child_lines.append("(" + key + "): " + mod_str)
        lines = extra_lines + child_lines
        main_str = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main_str += extra_lines[0]
            else:
                main_str += "\n  " + "\n  ".join(lines) + "\n"
        main_str += ")"
        return main_str


class _BackwardHook:
    """Implements full backward hooks as PyTorch's ``torch.utils.hooks.BackwardHook``: the
    module's tensor inputs and outputs are routed through identity ``autograd.Function``s so
    their gradients can be observed (and replaced) when backward reaches them.
    ``grad_input``/``grad_output`` have one entry per positional argument/output: None for
    non-tensors (and for unused outputs), zeros for tensors that do not require grad."""

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs = None
        self.n_inputs = -1
        self.input_tensors_index = None
        self.n_outputs = -1
        self.output_tensors_index = None

    @staticmethod
    def _pack_with_none(indices, values, size):
        res = [None] * size
        for idx, val in zip(indices, values):
            res[idx] = val
        return tuple(res)

    def _apply_on_tensors(self, args, on_backward, materialize):
        from ferrotorch.autograd import Function

        idx = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        tensors = [args[i] for i in idx]
        if not (any(t.requires_grad for t in tensors) and ferrotorch.is_grad_enabled()):
            return args, None

        class BackwardHookFunction(Function):
            @staticmethod
            def forward(ctx, *ts):
                outs = tuple(t.view_as(t) for t in ts)
                ctx.mark_non_differentiable(*[o for t, o in zip(ts, outs)
                                              if not t.requires_grad])
                ctx.set_materialize_grads(materialize)
                ctx.shapes = [(t.shape, t.dtype, t.device) for t in ts]
                return outs

            @staticmethod
            def backward(ctx, *grads):
                grads = tuple(
                    _C.zeros(shape, dtype=dtype, device=device) if g is None and materialize
                    else g for g, (shape, dtype, device) in zip(grads, ctx.shapes))
                return on_backward(grads)

        new = BackwardHookFunction.apply(*tensors)
        new = new if isinstance(new, tuple) else (new,)
        out = list(args)
        for i, t in zip(idx, new):
            out[i] = t
        return tuple(out), idx

    def setup_input_hook(self, args):
        def on_input_grads(grads):
            if self.grad_outputs is None:
                return grads  # reached without passing through the outputs (double backward)
            res = self._pack_with_none(self.input_tensors_index, grads, self.n_inputs)
            for hook in self.user_hooks:
                out = hook(self.module, res, self.grad_outputs)
                if out is None:
                    continue
                if len(out) != len(res):
                    raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                       f"got {len(out)}, but expected {len(res)}")
                res = out
            self.grad_outputs = None
            return tuple(res[i] for i in self.input_tensors_index)

        res, self.input_tensors_index = self._apply_on_tensors(args, on_input_grads, True)
        self.n_inputs = len(args)
        return res

    def setup_output_hook(self, result):
        def on_output_grads(grads):
            self.grad_outputs = self._pack_with_none(self.output_tensors_index, grads,
                                                     self.n_outputs)
            expected_len = len(self.grad_outputs)
            for hook in self.user_pre_hooks:
                out = hook(self.module, self.grad_outputs)
                if out is None:
                    continue
                if len(out) != expected_len:
                    raise RuntimeError("Backward pre hook returned an invalid number of "
                                       f"grad_output, got {len(out)}, but expected "
                                       f"{expected_len}")
                self.grad_outputs = tuple(out)
            local_grad_outputs = self.grad_outputs
            if self.input_tensors_index is None:
                # No input requires grad: the full hooks run now, with grad_input all None.
                if self.user_hooks:
                    warnings.warn(
                        "Full backward hook is firing when gradients are computed with respect "
                        "to module outputs since no inputs require gradients. See "
                        "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html#torch"
                        ".nn.Module.register_full_backward_hook for more details.",
                        stacklevel=2)
                    grad_inputs = (None,) * self.n_inputs
                    for hook in self.user_hooks:
                        res = hook(self.module, grad_inputs, self.grad_outputs)
                        if res is not None and not (isinstance(res, tuple)
                                                    and all(el is None for el in res)):
                            raise RuntimeError(
                                "Backward hook for Modules where no input requires gradient "
                                "should always return None or None for all gradients.")
                self.grad_outputs = None
            return tuple(local_grad_outputs[i] for i in self.output_tensors_index)

        single = not isinstance(result, tuple)
        outs = (result,) if single else result
        res, self.output_tensors_index = self._apply_on_tensors(outs, on_output_grads, False)
        self.n_outputs = len(outs)
        return res[0] if single else res
