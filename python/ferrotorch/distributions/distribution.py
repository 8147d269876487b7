"""The ``Distribution`` base class and shared helpers (``torch.distributions``)."""

import builtins
import math
import warnings

from ferrotorch import _C
from ferrotorch._size import Size
from ferrotorch.distributions import constraints

__all__ = ["Distribution"]

_EMPTY_SIZE = Size()  # the default sample/batch/event shape


def _is_number(x):
    # numbers.Number, as torch checks: bools are numbers too (Bernoulli(True) is valid).
    return isinstance(x, (builtins.int, builtins.float))


def broadcast_all(*values):
    """Broadcast tensors and numbers to one shape; numbers become tensors of the first
    tensor's dtype/device (float32 on the CPU if there is none)."""
    tensors = [v for v in values if isinstance(v, _C.Tensor)]
    for v in values:
        if not (isinstance(v, _C.Tensor) or _is_number(v)):
            raise ValueError("Input arguments must all be instances of Number, "
                             "ferrotorch.Tensor or objects implementing __torch_function__.")
    if tensors:
        like = tensors[0]
        dtype = like.dtype if like.dtype.is_floating_point else _C.get_default_dtype()
        device = like.device
    else:
        dtype, device = _C.get_default_dtype(), _C.device("cpu")
    as_t = [v if isinstance(v, _C.Tensor) else _C.tensor(builtins.float(v), dtype=dtype,
                                                          device=device) for v in values]
    shape = _C.broadcast_shapes(*[t.shape for t in as_t])
    return tuple(t.expand(shape) for t in as_t)


def logits_to_probs(logits, is_binary=False):
    return logits.sigmoid() if is_binary else logits.softmax(-1)


def clamp_probs(probs):
    eps = _finfo_eps(probs.dtype)
    return probs.clamp(eps, 1 - eps)


def probs_to_logits(probs, is_binary=False):
    p = clamp_probs(probs)
    return p.log() - (-p).log1p() if is_binary else p.log()


def _finfo_eps(dtype):
    from ferrotorch._compare import finfo

    return finfo(dtype).eps


class lazy_property:  # noqa: N801 (PyTorch's name)
    """A property computed on first access and cached on the instance (for parameters that
    can be given in two forms, like ``probs``/``logits``)."""

    def __init__(self, fn):
        self.wrapped = fn
        self.__doc__ = fn.__doc__

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def _standard_normal(shape, dtype, device):
    return _C.randn(tuple(shape), dtype=dtype, device=device)


def _uniform_open(shape, dtype, device):
    """Uniform samples in the open interval (0, 1) (logs of them stay finite)."""
    from ferrotorch._compare import finfo

    u = _C.rand(tuple(shape), dtype=dtype, device=device)
    return u.clamp(finfo(dtype).tiny, 1 - finfo(dtype).eps)


class Distribution:
    """Base class of probability distributions: shapes, validation and the sampling API."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__
    arg_constraints = {}
    support = None

    @staticmethod
    def set_default_validate_args(value):
        if value not in (True, False):
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=_EMPTY_SIZE, event_shape=_EMPTY_SIZE, validate_args=None):
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            for param, constraint in self.arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue
                if param not in self.__dict__ and isinstance(
                        getattr(type(self), param, None), lazy_property):
                    continue  # the other form of the parameter was given
                value = getattr(self, param)
                valid = constraint.check(value)
                if not bool(valid.all()):
                    raise ValueError(
                        f"Expected parameter {param} ({type(value).__name__} of shape "
                        f"{tuple(value.shape)}) of distribution {self!r} to satisfy the "
                        f"constraint {constraint!r}, but found invalid values:\n{value}"
                    )
        super().__init__()

    def expand(self, batch_shape, _instance=None):
        raise NotImplementedError

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    @property
    def mean(self):
        raise NotImplementedError

    @property
    def mode(self):
        raise NotImplementedError(f"{type(self)} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError

    @property
    def stddev(self):
        return self.variance.sqrt()

    def sample(self, sample_shape=_EMPTY_SIZE):
        """Draw samples of shape ``sample_shape + batch_shape + event_shape`` (no gradient)."""
        with _C_no_grad():
            return self.rsample(sample_shape)

    def sample_n(self, n):
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.",
                      FutureWarning, stacklevel=2)
        return self.sample(Size((n,)))

    def rsample(self, sample_shape=_EMPTY_SIZE):
        raise NotImplementedError

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def enumerate_support(self, expand=True):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def perplexity(self):
        return self.entropy().exp()

    def _extended_shape(self, sample_shape=_EMPTY_SIZE):
        if not isinstance(sample_shape, (tuple, list)):
            sample_shape = (sample_shape,)
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value):
        if not isinstance(value, _C.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = value.dim() - len(self._event_shape)
        if tuple(value.shape[event_dim_start:]) != tuple(self._event_shape):
            raise ValueError(
                f"The right-most size of value must match event_shape: {value.size()} "
                f"vs {self._event_shape}."
            )
        actual = tuple(value.shape)
        expected = tuple(self._batch_shape) + tuple(self._event_shape)
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(
                    f"Value is not broadcastable with batch_shape+event_shape: {Size(actual)} "
                    f"vs {Size(expected)}."
                )
        support = self.support
        if support is None or constraints.is_dependent(support):
            return
        if not bool(support.check(value).all()):
            raise ValueError(
                "Expected value argument "
                f"({type(value).__name__} of shape {tuple(value.shape)}) "
                f"to be within the support ({support!r}) of the distribution {self!r}, "
                f"but found invalid values:\n{value}"
            )

    def _get_checked_instance(self, cls, _instance=None):
        if cls is type(self):
            # A generic expand() passes type(self): check against the ferrotorch class the
            # instance derives from, so a user subclass with its own __init__ is caught.
            cls = next(c for c in cls.__mro__ if c.__module__.startswith(__package__))
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                "__init__ method must also define a custom .expand() method."
            )
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self):
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(
            f"{p}: {self.__dict__[p] if self.__dict__[p].numel() == 1 else self.__dict__[p].size()}"
            for p in names
        )
        return f"{type(self).__name__}({args})"


class _ExpandByAttributes(Distribution):
    """``expand`` for distributions whose tensor attributes (parameters, and derived values
    cached by ``lazy_property``) all have the batch shape as their leading dims."""

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(type(self), _instance)
        batch_shape = Size(batch_shape)
        n = len(self._batch_shape)
        for name, value in self.__dict__.items():
            if name in ("_batch_shape", "_event_shape"):
                continue
            if isinstance(value, _C.Tensor):
                value = value.expand(tuple(batch_shape) + tuple(value.shape[n:]))
            new.__dict__[name] = value
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new


def _C_no_grad():
    from ferrotorch.autograd.grad_mode import no_grad

    return no_grad()


_LOG_SQRT_2PI = math.log(math.sqrt(2 * math.pi))
