"""The eager-mode part of ``torch.jit``: what model code calls while it runs as ordinary
Python, so that modules written to be TorchScript-compatible (``torch.jit.is_scripting()``
branches, ``@torch.jit.unused`` / ``@torch.jit.ignore`` / ``@torch.jit.export`` methods,
``torch.jit.annotate``, ``Final`` constants, ``torch.jit.isinstance`` refinements) run
unchanged. In eager PyTorch these are exactly what is here: the queries answer False, the
decorators tag the function and return it, ``annotate`` returns the value.

ferrotorch has no TorchScript compiler: ``torch.jit.script``, ``trace``, ``save``/``load``
and ``ScriptModule`` are not provided (use ``ferrotorch.compile``, which runs eagerly, and
``ferrotorch.save``)."""

import builtins
import collections
import collections.abc
import contextlib
import typing
import warnings
from types import UnionType
from typing import Final, Union, get_args, get_origin

__all__ = ["Attribute", "Final", "annotate", "export", "ignore", "is_scripting", "is_tracing",
           "isinstance", "script_if_tracing", "unused"]


class FunctionModifiers:
    """How TorchScript would treat a tagged function (recorded, as PyTorch does, in the
    function's ``_torchscript_modifier``)."""

    UNUSED = "unused (ignored and replaced with raising of an exception)"
    IGNORE = "ignore (leave as a call to Python, cannot be torch.jit.save'd)"
    EXPORT = "export (compile this function even if nothing calls it)"
    DEFAULT = "default (compile if called from an exported function / forward)"
    COPY_TO_SCRIPT_WRAPPER = (
        "if this method is not scripted, copy the python method onto the scripted model")
    _DROP = "_drop (function is fully ignored, declaration can be unscriptable)"


def is_scripting():
    """False: code runs eagerly (there is no TorchScript compilation here)."""
    return False


def is_tracing():
    """False: there is no ``torch.jit.trace`` here."""
    return False


def export(fn):
    """Marks a module method as a TorchScript entry point; eagerly, the method itself."""
    fn._torchscript_modifier = FunctionModifiers.EXPORT
    return fn


def unused(fn):
    """Marks a function (or a property) that TorchScript replaces by a raise; eagerly, the
    function itself."""
    if builtins.isinstance(fn, property):
        fn.fget._torchscript_modifier = FunctionModifiers.UNUSED
        if fn.fset:
            fn.fset._torchscript_modifier = FunctionModifiers.UNUSED
        return fn
    fn._torchscript_modifier = FunctionModifiers.UNUSED
    return fn


def ignore(drop=False, **kwargs):
    """``@ignore`` or ``@ignore(drop=...)``: TorchScript leaves the call to Python; eagerly,
    the function itself."""
    if callable(drop):
        drop._torchscript_modifier = FunctionModifiers.IGNORE
        return drop
    if not builtins.isinstance(drop, bool):
        raise RuntimeError(
            f"Argument to @torch.jit.ignore must be a bool or a function but got {drop}")
    drop_on_export = kwargs.pop("drop_on_export", None)
    if drop_on_export:
        warnings.warn("ignore(drop_on_export=True) has been deprecated. TorchScript will now "
                      "drop the function call on compilation. Use torch.jit.unused now. {}",
                      category=FutureWarning, stacklevel=2)
        drop = drop_on_export
    elif drop:
        warnings.warn("ignore(True) has been deprecated. TorchScript will now drop the "
                      "function call on compilation. Use torch.jit.unused now. {}",
                      category=FutureWarning, stacklevel=2)

    def decorator(fn):
        fn._torchscript_modifier = (FunctionModifiers.UNUSED if drop
                                    else FunctionModifiers.IGNORE)
        return fn

    return decorator


def annotate(the_type, the_value):
    """A type hint for the TorchScript compiler; eagerly, ``the_value``."""
    return the_value


# A typed attribute for a ScriptModule's ``__init__``; as in PyTorch with TorchScript enabled
# (its default), a plain ``(value, type)`` named tuple.
Attribute = collections.namedtuple("Attribute", ["value", "type"])


def script_if_tracing(fn):
    """Would script ``fn`` when called under tracing; there is no tracing, so ``fn``."""
    return fn


class _IgnoreContextManager(contextlib.AbstractContextManager):
    def __init__(self, **kwargs):
        pass

    def __exit__(self, exc_type, exc_value, traceback):
        pass


_RAW_TYPE_NAME = {dict: "dict", list: "list", tuple: "tuple", typing.Dict: "Dict",  # noqa: UP006
                  typing.List: "List", typing.Optional: "Optional",  # noqa: UP006
                  typing.Tuple: "Tuple"}  # noqa: UP006


def _check_args_exist(target_type):
    name = _RAW_TYPE_NAME.get(target_type)
    if name is None:
        return
    if name.endswith("ict"):
        raise RuntimeError(f"Attempted to use {name} without contained types. Please add "
                           f"contained type, e.g. {name}[int, int]")
    raise RuntimeError(f"Attempted to use {name} without a contained type. Please add a "
                       f"contained type, e.g. {name}[int]")


def _check_empty_container(obj):
    if obj == [] or obj == {} or obj == ():
        warnings.warn("The inner type of a container is lost when calling torch.jit.isinstance "
                      "in eager mode. For example, List[int] would become list and therefore "
                      "falsely return True for List[float] or List[str].", stacklevel=3)


def _matches(obj, target_type):
    if get_origin(target_type):
        return _container_matches(obj, target_type)
    return builtins.isinstance(obj, target_type)


def _container_matches(obj, target_type):
    origin = get_origin(target_type)
    _check_args_exist(target_type)
    if origin is None:
        return False
    args = get_args(target_type)
    if origin is list:
        _check_empty_container(obj)
        return builtins.isinstance(obj, list) and all(_matches(el, args[0]) for el in obj)
    if origin is dict:
        _check_empty_container(obj)
        return builtins.isinstance(obj, dict) and all(
            builtins.isinstance(k, args[0]) and _matches(v, args[1]) for k, v in obj.items())
    if origin is tuple:
        _check_empty_container(obj)
        return (builtins.isinstance(obj, tuple) and len(obj) == len(args)
                and all(_matches(el, t) for el, t in zip(obj, args)))
    if origin is Union or origin is UnionType:  # Optional[...] too
        if obj is None:
            return True
        for t in args:
            if get_origin(t):
                return _container_matches(obj, t)  # PyTorch's rule: the first container decides
            if builtins.isinstance(obj, t):
                return True
    return False


def isinstance(obj, target_type):  # noqa: A001 (torch.jit.isinstance)
    """``torch.jit.isinstance``: ``isinstance`` that also checks parameterised containers
    (``List[int]``, ``Dict[str, List[Tensor]]``, ``Optional[Tuple[int, str]]``) element by
    element, as PyTorch does in eager mode."""
    if builtins.isinstance(target_type, collections.abc.Container):
        if not builtins.isinstance(target_type, tuple):
            raise RuntimeError("The second argument to `torch.jit.isinstance` must be a type "
                               "or a tuple of types")
        return any(isinstance(obj, t) for t in target_type)
    if get_origin(target_type):
        return _container_matches(obj, target_type)
    _check_args_exist(target_type)
    return builtins.isinstance(obj, target_type)
