"""Grad-mode context managers, usable as decorators too (thread-local, as in PyTorch)."""

import functools
import inspect
import sys
import threading

from ferrotorch import _C


class _DecoratorContextManager:
    """Lets a context manager class be used as ``@no_grad()`` (or ``@no_grad``) too."""

    def __call__(self, func):
        if inspect.isgeneratorfunction(func):
            return _wrap_generator(self.clone, func)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)

        return wrapper

    def clone(self):
        return self.__class__()


def _wrap_generator(ctx_factory, func):
    """A decorated generator function: the mode holds while the generator body runs (each
    resume), not while the caller consumes what it yields (as PyTorch's ``_wrap_generator``)."""

    @functools.wraps(func)
    def generator_context(*args, **kwargs):
        gen = func(*args, **kwargs)
        try:
            with ctx_factory():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with ctx_factory():
                        gen.close()
                    raise
                except BaseException:
                    with ctx_factory():
                        response = gen.throw(*sys.exc_info())
                else:
                    with ctx_factory():
                        response = gen.send(request)
        except StopIteration as e:
            return e.value

    return generator_context


class no_grad(_DecoratorContextManager):
    """Disable gradient recording inside the block."""

    def __new__(cls, func=None):
        # Support the bare ``@no_grad`` decorator form as well as ``@no_grad()``.
        if callable(func):
            return cls()(func)
        return super().__new__(cls)

    def __init__(self, func=None):
        self.prev = False

    def __enter__(self):
        self.prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev)
        return False


class enable_grad(_DecoratorContextManager):
    """Enable gradient recording inside the block (e.g. inside ``no_grad``)."""

    def __new__(cls, func=None):
        if callable(func):
            return cls()(func)
        return super().__new__(cls)

    def __init__(self, func=None):
        self.prev = False

    def __enter__(self):
        self.prev = _C.is_grad_enabled()
        _C._set_grad_enabled(True)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev)
        return False


def _check_bool(fn_name, value):
    """PyTorch's argument parser: a ``bool`` argument accepts only a Python bool."""
    if not isinstance(value, bool):
        t = type(value)
        name = t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
        raise TypeError(f"{fn_name}(): argument 'enabled' (position 1) must be bool, not {name}")


class set_grad_enabled(_DecoratorContextManager):
    """Set grad mode to ``mode``; takes effect immediately (like PyTorch) and is restored
    when used as a context manager. As a decorator (``@set_grad_enabled(False)``) it leaves the
    current mode alone and sets ``mode`` only while the function runs."""

    def __init__(self, mode):
        _check_bool("set_grad_enabled", mode)
        self.prev = _C.is_grad_enabled()
        self.mode = mode
        _C._set_grad_enabled(self.mode)

    def __call__(self, func):
        _C._set_grad_enabled(self.prev)
        return super().__call__(func)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev)
        return False

    def clone(self):
        return self.__class__(self.mode)


class inference_mode(_DecoratorContextManager):
    """Like ``no_grad`` (no recording); the tensors created inside are inference tensors
    (``Tensor.is_inference()``), which autograd may not save and which may not be updated
    in place outside the mode. ``inference_mode(False)`` creates normal tensors."""

    def __new__(cls, mode=True):
        if callable(mode):
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode=True):
        self.mode = bool(mode)
        self.prev = (True, False)

    def __enter__(self):
        self.prev = (_C.is_grad_enabled(), _C.is_inference_mode_enabled())
        # As c10::InferenceMode: grad mode is the opposite of the mode, so
        # ``inference_mode(False)`` turns recording on even inside ``no_grad``.
        _C._set_grad_enabled(not self.mode)
        _C._set_inference_mode(self.mode)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev[0])
        _C._set_inference_mode(self.prev[1])
        return False

    def clone(self):
        return self.__class__(self.mode)


class _MultithreadingState(threading.local):
    enabled = True


_multithreading = _MultithreadingState()


def is_multithreading_enabled():
    """Whether multithreaded backward is enabled (on this thread)."""
    return _multithreading.enabled


class set_multithreading_enabled(_DecoratorContextManager):
    """Enable or disable multithreaded backward (thread-local), as a function call, a context
    manager or a decorator. PyTorch runs backward on per-device worker threads unless this is
    off; ferrotorch's engine has no such threads, so only the setting is kept (results do not
    depend on it in either library)."""

    def __init__(self, mode):
        _check_bool("set_multithreading_enabled", mode)
        self.prev = _multithreading.enabled
        _multithreading.enabled = mode
        self.mode = mode

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _multithreading.enabled = self.prev

    def clone(self):
        return self.__class__(self.mode)


is_grad_enabled = _C.is_grad_enabled
is_inference_mode_enabled = _C.is_inference_mode_enabled
