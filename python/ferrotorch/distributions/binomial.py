"""Count distributions built on Bernoulli trials: Binomial, Multinomial and NegativeBinomial
(``torch.distributions.binomial``/``multinomial``/``negative_binomial``)."""

import math

from ferrotorch import _C
from ferrotorch._size import Size
from ferrotorch.distributions import constraints
from ferrotorch.distributions.discrete import Categorical
from ferrotorch.distributions.distribution import (
    _EMPTY_SIZE,
    Distribution,
    broadcast_all,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)
from ferrotorch.distributions.gamma import Gamma
from ferrotorch.nn import functional as F

__all__ = ["Binomial", "Multinomial", "NegativeBinomial"]

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _stirling_approx_tail(k):
    """``log(k!) - [(k + 1/2) log(k + 1) - (k + 1) + log(2 pi) / 2]``: exact for small ``k``,
    its asymptotic series beyond (where the exact difference cancels badly)."""
    exact = (k + 1).lgamma() - (k + 0.5) * (k + 1).log() + (k + 1) - _HALF_LOG_2PI
    kp1sq = (k + 1).pow(2)
    series = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
    return _C.where(k <= 9, exact, series)


def _uniform(q, generator):
    return _C.rand(tuple(q.shape), dtype=q.dtype, device=q.device, generator=generator)


def _binomial_inversion(n, q, mask, generator=None):
    """Counts of geometric waiting times fitting in ``n`` trials (for ``n * q < 10``): all
    elements step together until each has overshot ``n``."""
    logq = _C.where(mask, q, 0.5).neg().log1p()
    geom_sum = _C.zeros_like(q)
    count = _C.zeros_like(q)
    active = mask
    while bool(active.any()):
        geom = (_uniform(q, generator).log() / logq).ceil()
        geom_sum = geom_sum + _C.where(active, geom, 0.0)
        active = active & (geom_sum <= n)
        count = count + active.to(q.dtype)
    return count


def _btrs(n, q, mask, generator=None):
    """Hormann's (1993) transformed rejection with squeeze (BTRS), as PyTorch's sampler, for
    ``n * q >= 10``, ``q <= 1/2``; every element draws until it accepts."""
    n = _C.where(mask, n, 100.0)
    q = _C.where(mask, q, 0.5)
    stddev = (n * q * (1 - q)).sqrt()
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * q
    c = n * q + 0.5
    v_r = 0.92 - 4.2 / b
    r = q / (1 - q)
    alpha = (2.83 + 5.1 / b) * stddev
    m = ((n + 1) * q).floor()
    bound_m = ((m + 0.5) * ((m + 1) / (r * (n - m + 1))).log()
               + _stirling_approx_tail(m) + _stirling_approx_tail(n - m))
    result = _C.zeros_like(q)
    active = mask
    while bool(active.any()):
        u = _uniform(q, generator) - 0.5
        v = _uniform(q, generator)
        us = 0.5 - u.abs()
        k = ((2 * a / us + b) * u + c).floor()
        valid = (k >= 0) & (k <= n)
        kk = _C.where(valid, k, 0.0)
        box = (us >= 0.07) & (v <= v_r)
        log_v = (v * alpha / (a / (us * us) + b)).log()
        upper = (bound_m + (n + 1) * ((n - m + 1) / (n - kk + 1)).log()
                 + (kk + 0.5) * (r * (n - kk + 1) / (kk + 1)).log()
                 - _stirling_approx_tail(kk) - _stirling_approx_tail(n - kk))
        accept = active & valid & (box | (log_v <= upper))
        result = _C.where(accept, k, result)
        active = active & ~accept
    return result


def _binomial(n, p, generator=None):
    """Binomial(``n``, ``p``) samples (``torch.binomial``; ``n``, ``p`` of one shape),
    computed in float64: BTRS where ``n * min(p, 1 - p) >= 10``, inversion elsewhere;
    vectorised rejection loops. A NaN ``p`` or a non-finite ``n`` gives NaN."""
    dtype = p.dtype
    n, p = n.to(_C.float64).contiguous(), p.to(_C.float64).contiguous()
    finite = n.isfinite()
    n = _C.where(finite, n, 0.0)
    flip = p > 0.5
    q = _C.where(flip, 1 - p, p)
    live = (n > 0) & (q > 0)
    use_btrs = live & (n * q >= 10)
    k = _C.where(use_btrs, _btrs(n, q, use_btrs, generator),
                 _binomial_inversion(n, q, live & ~use_btrs, generator))
    k = _C.where(flip & (n > 0), n - k, k)
    k = _C.where(p.isnan() | ~finite, math.nan, k)
    return k.to(dtype)


def _clamp_by_zero(x):
    # clamp(min=0) whose gradient at 0 is 1/2, as PyTorch's.
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


def _no_grad():
    from ferrotorch.autograd.grad_mode import no_grad

    return no_grad()


class _CountWithProbs(Distribution):
    """Shared construction and ``expand`` for ``total_count`` with ``probs`` or ``logits``."""

    def _init_counts(self, total_count, probs, logits, validate_args):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.to(self.probs.dtype)
            self._param = self.probs
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.to(self.logits.dtype)
            self._param = self.logits
        Distribution.__init__(self, self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(type(self), _instance)
        batch_shape = Size(batch_shape)
        new.total_count = self.total_count.expand(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.shape


class Binomial(_CountWithProbs):
    """Number of successes in ``total_count`` Bernoulli trials with success probability
    ``probs`` (or ``sigmoid(logits)``)."""

    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        self._init_counts(total_count, probs, logits, validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=_EMPTY_SIZE):
        shape = tuple(self._extended_shape(sample_shape))
        with _no_grad():
            n = self.total_count.detach().expand(shape)
            p = self.probs.detach().expand(shape)
            return _binomial(n, p)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        n = self.total_count
        log_factorial_n = (n + 1).lgamma()
        log_factorial_k = (value + 1).lgamma()
        log_factorial_nmk = (n - value + 1).lgamma()
        normalize_term = (n * _clamp_by_zero(self.logits)
                          + n * (-self.logits.abs()).exp().log1p() - log_factorial_n)
        return value * self.logits - log_factorial_k - log_factorial_nmk - normalize_term

    def entropy(self):
        total_count = int(self.total_count.max().item())
        if not self.total_count.min().item() == total_count:
            raise NotImplementedError("Inhomogeneous total count not supported by `entropy`.")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(log_prob.exp() * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        total_count = int(self.total_count.max().item())
        if not self.total_count.min().item() == total_count:
            raise NotImplementedError(
                "Inhomogeneous total count not supported by `enumerate_support`.")
        values = _C.arange(1 + total_count, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((1 + total_count,) + tuple(self._batch_shape))
        return values


class Multinomial(Distribution):
    """Counts of each of ``K`` categories (the last dim of ``probs``/``logits``, normalised)
    in ``total_count`` draws."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = Size(batch_shape)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        new._binomial = Binomial(total_count=self.total_count, probs=new.probs)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def param_shape(self):
        return self._categorical.param_shape

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=_EMPTY_SIZE):
        if not isinstance(sample_shape, (tuple, list)):
            sample_shape = (sample_shape,)
        shape = tuple(self._extended_shape(sample_shape))
        with _no_grad():
            counts = _C.zeros(shape, dtype=_C.int64, device=self.probs.device)
            if self.total_count:
                samples = self._categorical.sample((self.total_count,) + tuple(sample_shape))
                samples = samples.movedim(0, -1)
                counts = counts.scatter_add(-1, samples, _C.ones_like(samples))
            return counts.to(self.probs.dtype)

    def entropy(self):
        n = self.total_count
        term1 = n * self._categorical.entropy() - math.lgamma(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = self._binomial.log_prob(support).exp()
        weights = (support + 1).lgamma()
        term2 = (binomial_probs * weights).sum(0).sum(-1)
        return term1 + term2

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_factorial_n = (value.sum(-1) + 1).lgamma()
        log_factorial_xs = (value + 1).lgamma().sum(-1)
        logits = logits.masked_fill((value == 0) & (logits == -math.inf), 0.0)
        log_powers = (logits * value).sum(-1)
        return log_factorial_n - log_factorial_xs + log_powers


class NegativeBinomial(_CountWithProbs):
    """Number of successes before ``total_count`` failures, with success probability
    ``probs`` (or ``sigmoid(logits)``); ``total_count`` may be any non-negative real."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        self._init_counts(total_count, probs, logits, validate_args)

    @property
    def mean(self):
        return self.total_count * self.logits.exp()

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / (-self.logits).sigmoid()

    @lazy_property
    def _gamma(self):
        return Gamma(concentration=self.total_count, rate=(-self.logits).exp(),
                     validate_args=False)

    def sample(self, sample_shape=_EMPTY_SIZE):
        with _no_grad():
            rate = self._gamma.sample(sample_shape=sample_shape)
            return _C.poisson(rate.contiguous())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        n = self.total_count
        log_unnormalized_prob = n * F.logsigmoid(-self.logits) + value * F.logsigmoid(self.logits)
        log_normalization = -(n + value).lgamma() + (1.0 + value).lgamma() + n.lgamma()
        log_normalization = log_normalization.masked_fill(n + value == 0.0, 0.0)
        return log_unnormalized_prob - log_normalization
