"""Distributions built on Gamma sampling: Gamma, Chi2, Beta, Dirichlet, StudentT; and the
discrete Poisson and Geometric. ``_standard_gamma`` draws Gamma(alpha, 1) samples in Rust
and differentiates them by implicit reparameterisation (``dx/dalpha = -(dP/dalpha) /
(dP/dx)`` at the sample's quantile), so ``rsample`` carries gradients to the concentration
as in PyTorch."""

import math

from ferrotorch import _C
from ferrotorch.autograd import Function
from ferrotorch.distributions import constraints
from ferrotorch.distributions.distribution import (
    _EMPTY_SIZE,
    _ExpandByAttributes,
    _standard_normal,
    broadcast_all,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)
from ferrotorch.distributions.exp_family import ExponentialFamily

__all__ = ["Gamma", "Chi2", "Beta", "Dirichlet", "StudentT", "Poisson", "Geometric"]


class _StandardGamma(Function):
    @staticmethod
    def forward(ctx, alpha):
        x = _C._standard_gamma_raw(alpha)
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    def backward(ctx, grad):
        alpha, x = ctx.saved_tensors
        return grad * _C._standard_gamma_grad(alpha, x)


def _standard_gamma(alpha):
    """``torch._standard_gamma``: Gamma(``alpha``, 1) samples, differentiable in ``alpha``."""
    return _StandardGamma.apply(alpha)


def _no_grad():
    from ferrotorch.autograd.grad_mode import no_grad

    return no_grad()


class Gamma(_ExpandByAttributes, ExponentialFamily):
    """Gamma distribution with shape ``concentration`` and inverse scale ``rate``."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    _mean_carrier_measure = 0

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return (x + 1).lgamma() + (x + 1) * (-y.reciprocal()).log()

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=_EMPTY_SIZE):
        shape = tuple(self._extended_shape(sample_shape))
        value = _standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        from ferrotorch._compare import finfo

        return value.clamp(min=finfo(value.dtype).tiny)

    def log_prob(self, value):
        # torch.as_tensor first, so a Python number is accepted here (unlike most log_probs).
        if not isinstance(value, _C.Tensor):
            value = _C.tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        value = _as_float(value, self.rate)
        c, r = self.concentration, self.rate
        return c.xlogy(r) + (c - 1).xlogy(value) - r * value - c.lgamma()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self.concentration.igamma(self.rate * value)

    def entropy(self):
        c = self.concentration
        return c - self.rate.log() + c.lgamma() + (1.0 - c) * c.digamma()


class Chi2(Gamma):
    """Chi-squared distribution with ``df`` degrees of freedom (Gamma(df / 2, 1 / 2))."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        (df,) = broadcast_all(df)
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    @property
    def df(self):
        return self.concentration * 2


class Dirichlet(_ExpandByAttributes, ExponentialFamily):
    """Dirichlet distribution over the simplex with ``concentration`` (``..., K``)."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - x.sum(-1).lgamma()

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:],
                         validate_args=validate_args)

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        cm1 = (self.concentration - 1).clamp(min=0.0)
        mode = cm1 / cm1.sum(-1, keepdim=True)
        mask = (self.concentration < 1).all(-1)
        if bool(mask.any()):
            from ferrotorch.nn import functional as F

            peak = F.one_hot(self.concentration.argmax(-1), cm1.shape[-1]).to(cm1.dtype)
            mode = _C.where(mask.unsqueeze(-1), peak, mode)
        return mode

    @property
    def variance(self):
        c0 = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (c0 - self.concentration) / (c0.pow(2) * (c0 + 1))

    def rsample(self, sample_shape=_EMPTY_SIZE):
        shape = tuple(self._extended_shape(sample_shape))
        g = _standard_gamma(self.concentration.expand(shape))
        x = g / g.sum(-1, keepdim=True)
        from ferrotorch._compare import finfo

        eps = finfo(x.dtype).tiny
        return x.clamp(min=eps, max=1 - finfo(x.dtype).eps)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return ((c - 1).xlogy(value).sum(-1) + c.sum(-1).lgamma() - c.lgamma().sum(-1))

    def entropy(self):
        c = self.concentration
        k = c.shape[-1]
        a0 = c.sum(-1)
        return (c.lgamma().sum(-1) - a0.lgamma() - (k - a0) * a0.digamma()
                - ((c - 1.0) * c.digamma()).sum(-1))


class Beta(_ExpandByAttributes, ExponentialFamily):
    """Beta distribution on [0, 1] with ``concentration1`` (alpha) and ``concentration0``
    (beta)."""

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    @property
    def _natural_params(self):
        return (self.concentration1, self.concentration0)

    def _log_normalizer(self, x, y):
        return x.lgamma() + y.lgamma() - (x + y).lgamma()

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        super().__init__(self.concentration1.shape, validate_args=validate_args)

    @property
    def _dirichlet(self):
        return Dirichlet(_C.stack([self.concentration1, self.concentration0], -1),
                         validate_args=False)

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=_EMPTY_SIZE):
        return self._dirichlet.rsample(sample_shape)[..., 0]

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = _as_float(value, self.concentration1)
        heads_tails = _C.stack([value, 1.0 - value], -1)
        return self._dirichlet.log_prob(heads_tails)

    def entropy(self):
        return self._dirichlet.entropy()


class StudentT(_ExpandByAttributes):
    """Student's t distribution with ``df`` degrees of freedom, ``loc`` and ``scale``."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        super().__init__(self.df.shape, validate_args=validate_args)

    @property
    def mean(self):
        m = self.loc.clone()
        return _C.where(self.df <= 1, _C.full((), math.nan, dtype=m.dtype, device=m.device), m)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        df = self.df
        var = self.scale.pow(2) * df / (df - 2)
        inf = _C.full((), math.inf, dtype=var.dtype, device=var.device)
        nan = _C.full((), math.nan, dtype=var.dtype, device=var.device)
        var = _C.where(df <= 2, inf, var)
        return _C.where(df <= 1, nan, var)

    def rsample(self, sample_shape=_EMPTY_SIZE):
        # X ~ Normal(0, 1), Z ~ Chi2(df): Y = X * rsqrt(Z / df) ~ StudentT(df).
        shape = tuple(self._extended_shape(sample_shape))
        x = _standard_normal(shape, self.df.dtype, self.df.device)
        z = Chi2(self.df, validate_args=False).rsample(sample_shape)
        return self.loc + self.scale * x * (z / self.df).rsqrt()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
             + (0.5 * self.df).lgamma() - (0.5 * (self.df + 1.0)).lgamma())
        return -0.5 * (self.df + 1.0) * (y.pow(2) / self.df).log1p() - z

    def entropy(self):
        df = self.df
        lbeta = (0.5 * df).lgamma() + math.lgamma(0.5) - (0.5 * (df + 1)).lgamma()
        return (self.scale.log() + 0.5 * (df + 1) * ((0.5 * (df + 1)).digamma()
                                                     - (0.5 * df).digamma())
                + 0.5 * df.log() + lbeta)


class Poisson(_ExpandByAttributes, ExponentialFamily):
    """Poisson distribution with ``rate``."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    @property
    def _natural_params(self):
        return (self.rate.log(),)

    def _log_normalizer(self, x):
        return x.exp()

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=_EMPTY_SIZE):
        shape = tuple(self._extended_shape(sample_shape))
        with _no_grad():
            return _C.poisson(self.rate.detach().expand(shape).contiguous())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = _as_float(value, self.rate)
        rate, value = broadcast_all(self.rate, value)
        return value.xlogy(rate) - rate - (value + 1).lgamma()


class Geometric(_ExpandByAttributes):
    """Number of failures before the first success, with success probability ``probs`` (or
    ``sigmoid(logits)``)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            shape = self.probs.shape
        else:
            (self.logits,) = broadcast_all(logits)
            shape = self.logits.shape
        super().__init__(shape, validate_args=validate_args)
        if self._validate_args and probs is not None:
            # probs = 0 passes unit_interval but has no geometric distribution.
            valid = self.probs > 0
            if not bool(valid.all()):
                raise ValueError(
                    "Expected parameter probs "
                    f"({type(self.probs).__name__} of shape {tuple(self.probs.shape)}) "
                    f"of distribution {self!r} "
                    f"to be positive but found invalid values:\n{self.probs.detach()[~valid]}")

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return _C.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=_EMPTY_SIZE):
        from ferrotorch._compare import finfo

        shape = tuple(self._extended_shape(sample_shape))
        with _no_grad():
            p = self.probs.detach()
            u = _C.rand(shape, dtype=p.dtype, device=p.device).clamp(min=finfo(p.dtype).tiny)
            return (u.log() / (-p).log1p()).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(_as_float(value, self.probs), self.probs)
        # value * log(1 - p) with 0 * log(0) = 0 (p = 1, value = 0).
        from ferrotorch.special import xlog1py

        return xlog1py(value, -probs) + probs.log()

    def entropy(self):
        from ferrotorch.nn import functional as F

        return F.binary_cross_entropy_with_logits(self.logits, self.probs,
                                                  reduction="none") / self.probs


def _as_float(value, like):
    return value if value.dtype.is_floating_point else value.to(like.dtype)
