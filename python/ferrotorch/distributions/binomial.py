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

_TRIALS_PER_CHUNK = 1 << 22  # bounds the Bernoulli draws held at once by Binomial.sample


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
        # Sums of Bernoulli trials, drawn in chunks of trials (every element draws
        # max(total_count) trials; those past its own total_count are masked out).
        shape = tuple(self._extended_shape(sample_shape))
        with _no_grad():
            n = self.total_count.detach().expand(shape)
            p = self.probs.detach().expand(shape)
            counts = _C.zeros(shape, dtype=p.dtype, device=p.device)
            numel = counts.numel()
            trials = int(n.max().item()) if numel else 0
            step = max(1, _TRIALS_PER_CHUNK // max(numel, 1))
            for start in range(0, trials, step):
                k = min(step, trials - start)
                index = _C.arange(start, start + k, dtype=p.dtype, device=p.device)
                index = index.reshape((k,) + (1,) * len(shape))
                u = _C.rand((k,) + shape, dtype=p.dtype, device=p.device)
                hits = (u < p) & (index < n)
                counts = counts + hits.to(p.dtype).sum(0)
            return counts

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
