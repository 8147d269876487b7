"""More univariate continuous distributions: ContinuousBernoulli (an ExponentialFamily),
FisherSnedecor, InverseGamma, VonMises and GeneralizedPareto, following
``torch.distributions``."""

import math

from ferrotorch import _C
from ferrotorch._size import Size
from ferrotorch.distributions import constraints
from ferrotorch.distributions.distribution import (
    _EMPTY_SIZE,
    Distribution,
    _is_number,
    broadcast_all,
    clamp_probs,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)
from ferrotorch.distributions.exp_family import ExponentialFamily
from ferrotorch.distributions.gamma import Gamma
from ferrotorch.distributions.transformed_distribution import TransformedDistribution
from ferrotorch.distributions.transforms import PowerTransform
from ferrotorch.nn import functional as F

__all__ = ["ContinuousBernoulli", "FisherSnedecor", "InverseGamma", "VonMises",
           "GeneralizedPareto"]


def _full_like(t, value):
    return _C.full(tuple(t.shape), value, dtype=t.dtype, device=t.device)


def _no_grad():
    from ferrotorch.autograd.grad_mode import no_grad

    return no_grad()


class ContinuousBernoulli(ExponentialFamily):
    """The continuous Bernoulli on [0, 1]: density proportional to
    ``probs**x * (1 - probs)**(1 - x)`` (Loaiza-Ganem and Cunningham, 2019). Near
    ``probs = 0.5`` (within ``lims``) Taylor expansions replace the unstable closed forms."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = _is_number(probs)
            (self.probs,) = broadcast_all(probs)
            # Validated before clamping (the clamped values always pass).
            if validate_args is not None and not bool(
                    self.arg_constraints["probs"].check(self.probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
        else:
            is_scalar = _is_number(logits)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        batch_shape = Size() if is_scalar else self._param.shape
        self._lims = lims
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        new._lims = self._lims
        batch_shape = Size(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _outside_unstable_region(self):
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        return _C.where(self._outside_unstable_region(), self.probs,
                        self._lims[0] * _C.ones_like(self.probs))

    def _cont_bern_log_norm(self):
        """The log normalizing constant, as a function of ``probs``."""
        cut_probs = self._cut_probs()
        below_half = _C.where(cut_probs <= 0.5, cut_probs, _C.zeros_like(cut_probs))
        above_half = _C.where(cut_probs >= 0.5, cut_probs, _C.ones_like(cut_probs))
        log_norm = ((-cut_probs).log1p() - cut_probs.log()).abs().log() - _C.where(
            cut_probs <= 0.5, (-2.0 * below_half).log1p(), (2.0 * above_half - 1.0).log())
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return _C.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut_probs = self._cut_probs()
        mus = cut_probs / (2.0 * cut_probs - 1.0) + 1.0 / (
            (-cut_probs).log1p() - cut_probs.log())
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return _C.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        return self.variance.sqrt()

    @property
    def variance(self):
        cut_probs = self._cut_probs()
        variances = cut_probs * (cut_probs - 1.0) / (1.0 - 2.0 * cut_probs).pow(2) + 1.0 / (
            (-cut_probs).log1p() - cut_probs.log()).pow(2)
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return _C.where(self._outside_unstable_region(), variances, taylor)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self):
        return self._param.shape

    def sample(self, sample_shape=_EMPTY_SIZE):
        shape = tuple(self._extended_shape(sample_shape))
        u = _C.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        with _no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape=_EMPTY_SIZE):
        shape = tuple(self._extended_shape(sample_shape))
        u = _C.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return (-F.binary_cross_entropy_with_logits(logits, value, reduction="none")
                + self._cont_bern_log_norm())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        cut_probs = self._cut_probs()
        cdfs = (cut_probs.pow(value) * (1.0 - cut_probs).pow(1.0 - value) + cut_probs
                - 1.0) / (2.0 * cut_probs - 1.0)
        unbounded_cdfs = _C.where(self._outside_unstable_region(), cdfs, value)
        return _C.where(value <= 0.0, _C.zeros_like(value),
                        _C.where(value >= 1.0, _C.ones_like(value), unbounded_cdfs))

    def icdf(self, value):
        cut_probs = self._cut_probs()
        return _C.where(
            self._outside_unstable_region(),
            ((-cut_probs + value * (2.0 * cut_probs - 1.0)).log1p() - (-cut_probs).log1p())
            / (cut_probs.log() - (-cut_probs).log1p()),
            value)

    def entropy(self):
        log_probs0 = (-self.probs).log1p()
        log_probs1 = self.probs.log()
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        """The log normalizing constant, as a function of the natural parameter."""
        out_unst_reg = (x <= self._lims[0] - 0.5) | (x > self._lims[1] - 0.5)
        cut_nat_params = _C.where(out_unst_reg, x, (self._lims[0] - 0.5) * _C.ones_like(x))
        log_norm = cut_nat_params.expm1().abs().log() - cut_nat_params.abs().log()
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return _C.where(out_unst_reg, log_norm, taylor)


class FisherSnedecor(Distribution):
    """Fisher-Snedecor (F) distribution with ``df1`` and ``df2`` degrees of freedom."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        batch_shape = Size() if _is_number(df1) and _is_number(df2) else self.df1.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(FisherSnedecor, _instance)
        batch_shape = Size(batch_shape)
        new.df1 = self.df1.expand(batch_shape)
        new.df2 = self.df2.expand(batch_shape)
        new._gamma1 = self._gamma1.expand(batch_shape)
        new._gamma2 = self._gamma2.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        df2 = _C.where(self.df2 <= 2, _full_like(self.df2, math.nan), self.df2)
        return df2 / (df2 - 2)

    @property
    def mode(self):
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return _C.where(self.df1 <= 2, _full_like(mode, math.nan), mode)

    @property
    def variance(self):
        df2 = _C.where(self.df2 <= 4, _full_like(self.df2, math.nan), self.df2)
        return 2 * df2.pow(2) * (self.df1 + df2 - 2) / (self.df1 * (df2 - 2).pow(2) * (df2 - 4))

    def rsample(self, sample_shape=_EMPTY_SIZE):
        from ferrotorch._compare import finfo

        shape = tuple(self._extended_shape(sample_shape))
        x1 = self._gamma1.rsample(sample_shape).reshape(shape)
        x2 = self._gamma2.rsample(sample_shape).reshape(shape)
        tiny = finfo(x2.dtype).tiny
        return (x1 / x2.clamp(min=tiny)).clamp(min=tiny)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        ct1 = self.df1 * 0.5
        ct2 = self.df2 * 0.5
        ct3 = self.df1 / self.df2
        t1 = (ct1 + ct2).lgamma() - ct1.lgamma() - ct2.lgamma()
        t2 = ct1 * ct3.log() + (ct1 - 1) * value.log()
        t3 = (ct1 + ct2) * (ct3 * value).log1p()
        return t1 + t2 - t3


class InverseGamma(TransformedDistribution):
    """``1 / X`` for ``X ~ Gamma(concentration, rate)``."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        base_dist = Gamma(concentration, rate, validate_args=validate_args)
        neg_one = -_C.ones((), dtype=base_dist.rate.dtype, device=base_dist.rate.device)
        super().__init__(base_dist, PowerTransform(neg_one), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(InverseGamma, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def concentration(self):
        return self.base_dist.concentration

    @property
    def rate(self):
        return self.base_dist.rate

    @property
    def mean(self):
        result = self.rate / (self.concentration - 1)
        return _C.where(self.concentration > 1, result, _full_like(result, math.inf))

    @property
    def mode(self):
        return self.rate / (self.concentration + 1)

    @property
    def variance(self):
        c = self.concentration
        result = self.rate.pow(2) / ((c - 1).pow(2) * (c - 2))
        return _C.where(c > 2, result, _full_like(result, math.inf))

    def entropy(self):
        c = self.concentration
        return c + self.rate.log() + c.lgamma() - (1 + c) * c.digamma()


# PyTorch's polynomial approximations (Abramowitz and Stegun 9.8.1-9.8.4) of the modified
# Bessel functions I0 and I1, used for VonMises so its values match PyTorch's.
_I0_COEF_SMALL = [1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.360768e-1, 0.45813e-2]
_I0_COEF_LARGE = [0.39894228, 0.1328592e-1, 0.225319e-2, -0.157565e-2, 0.916281e-2,
                  -0.2057706e-1, 0.2635537e-1, -0.1647633e-1, 0.392377e-2]
_I1_COEF_SMALL = [0.5, 0.87890594, 0.51498869, 0.15084934, 0.2658733e-1, 0.301532e-2,
                  0.32411e-3]
_I1_COEF_LARGE = [0.39894228, -0.3988024e-1, -0.362018e-2, 0.163801e-2, -0.1031555e-1,
                  0.2282967e-1, -0.2895312e-1, 0.1787654e-1, -0.420059e-2]
_COEF_SMALL = [_I0_COEF_SMALL, _I1_COEF_SMALL]
_COEF_LARGE = [_I0_COEF_LARGE, _I1_COEF_LARGE]


def _eval_poly(y, coef):
    coef = list(coef)
    result = coef.pop()
    while coef:
        result = coef.pop() + y * result
    return result


def _log_modified_bessel_fn(x, order=0):
    """``log(I_order(x))`` for ``x > 0`` and ``order`` 0 or 1."""
    if order not in (0, 1):
        raise AssertionError(f"order must be 0 or 1, got {order}")
    y = (x / 3.75).pow(2)
    small = _eval_poly(y, _COEF_SMALL[order])
    if order == 1:
        small = x.abs() * small
    small = small.log()
    y = 3.75 / x
    large = x - 0.5 * x.log() + _eval_poly(y, _COEF_LARGE[order]).log()
    return _C.where(x < 3.75, small, large)


def _rejection_sample(loc, concentration, proposal_r, x):
    """Best and Fisher's (1979) rejection sampler, on all elements at once until every
    element has accepted a proposal."""
    done = _C.zeros(tuple(x.shape), dtype=_C.bool, device=loc.device)
    while not bool(done.all()):
        u = _C.rand((3,) + tuple(x.shape), dtype=loc.dtype, device=loc.device)
        u1, u2, u3 = u[0], u[1], u[2]
        z = (math.pi * u1).cos()
        f = (1 + proposal_r * z) / (proposal_r + z)
        c = concentration * (proposal_r - f)
        accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
        if bool(accept.any()):
            x = _C.where(accept, (u3 - 0.5).sign() * f.acos(), x)
            done = done | accept
    return (x + math.pi + loc).remainder(2 * math.pi) - math.pi


class VonMises(Distribution):
    """The von Mises (circular normal) distribution on angles, with ``loc`` and
    ``concentration``; samples lie in [-pi, pi)."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, Size(), validate_args)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.concentration * (value - self.loc).cos()
        return (log_prob - math.log(2 * math.pi)
                - _log_modified_bessel_fn(self.concentration, order=0))

    @lazy_property
    def _loc(self):
        return self.loc.to(_C.float64)

    @lazy_property
    def _concentration(self):
        return self.concentration.to(_C.float64)

    @lazy_property
    def _proposal_r(self):
        kappa = self._concentration
        tau = 1 + (1 + 4 * kappa.pow(2)).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
        proposal_r = (1 + rho.pow(2)) / (2 * rho)
        # second-order Taylor expansion around 0 for small kappa
        proposal_r_taylor = 1 / kappa + kappa
        return _C.where(kappa < 1e-5, proposal_r_taylor, proposal_r)

    def sample(self, sample_shape=_EMPTY_SIZE):
        shape = tuple(self._extended_shape(sample_shape))
        with _no_grad():
            loc, conc, r = (self._loc.detach(), self._concentration.detach(),
                            self._proposal_r.detach())
            x = _C.zeros(shape, dtype=_C.float64, device=self.loc.device)
            return _rejection_sample(loc, conc, r, x).to(self.loc.dtype)

    def expand(self, batch_shape, _instance=None):
        validate_args = self.__dict__.get("_validate_args")
        loc = self.loc.expand(tuple(batch_shape))
        concentration = self.concentration.expand(tuple(batch_shape))
        return type(self)(loc, concentration, validate_args=validate_args)

    @property
    def mean(self):
        """The circular mean."""
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        """The circular variance."""
        return 1 - (_log_modified_bessel_fn(self.concentration, order=1)
                    - _log_modified_bessel_fn(self.concentration, order=0)).exp()


class GeneralizedPareto(Distribution):
    """Generalized Pareto distribution with ``loc``, ``scale`` and ``concentration`` (the
    tail index; 0 gives the exponential distribution shifted by ``loc``)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        if _is_number(loc) and _is_number(scale) and _is_number(concentration):
            batch_shape = Size()
        else:
            batch_shape = self.loc.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(GeneralizedPareto, _instance)
        batch_shape = Size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _eq_zero_and_safe(self):
        conc = self.concentration
        eq_zero = conc.isclose(_C.zeros_like(conc))
        return eq_zero, _C.where(eq_zero, _C.ones_like(conc), conc)

    def rsample(self, sample_shape=_EMPTY_SIZE):
        shape = tuple(self._extended_shape(sample_shape))
        u = _C.rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe_conc = self._eq_zero_and_safe()
        y = 1 / safe_conc + _C.ones_like(z)
        where_nonzero = _C.where(y == 0, y, y * (safe_conc * z).log1p())
        return -self.scale.log() - _C.where(eq_zero, z, where_nonzero)

    def log_survival_function(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe_conc = self._eq_zero_and_safe()
        where_nonzero = -(safe_conc * z).log1p() / safe_conc
        return _C.where(eq_zero, -z, where_nonzero)

    def log_cdf(self, value):
        return (-self.log_survival_function(value).exp()).log1p()

    def cdf(self, value):
        return self.log_cdf(value).exp()

    def icdf(self, value):
        eq_zero, safe_conc = self._eq_zero_and_safe()
        logu = (-value).log1p()
        where_nonzero = self.loc + self.scale / safe_conc * (-safe_conc * logu).expm1()
        where_zero = self.loc - self.scale * logu
        return _C.where(eq_zero, where_zero, where_nonzero)

    def _z(self, x):
        return (x - self.loc) / self.scale

    @property
    def mean(self):
        valid = self.concentration < 1
        safe_conc = _C.where(valid, self.concentration, 0.5)
        result = self.loc + self.scale / (1 - safe_conc)
        return _C.where(valid, result, math.nan)

    @property
    def variance(self):
        valid = self.concentration < 0.5
        safe_conc = _C.where(valid, self.concentration, 0.25)
        result = self.scale.pow(2) / ((1 - safe_conc).pow(2) * (1 - 2 * safe_conc))
        return _C.where(valid, result, math.nan)

    def entropy(self):
        ans = self.scale.log() + self.concentration + 1
        return ans.expand(tuple(self._batch_shape))

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        lower = self.loc
        upper = _C.where(self.concentration < 0, lower - self.scale / self.concentration,
                         math.inf)
        return constraints.interval(lower, upper)
