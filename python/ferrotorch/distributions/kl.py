"""``kl_divergence(p, q)`` with a registry of closed forms (``register_kl``), as
``torch.distributions.kl``."""

import math
import warnings

from ferrotorch import _C
from ferrotorch.distributions.binomial import Binomial
from ferrotorch.distributions.continuous import Exponential, Gumbel, Laplace, Normal, Uniform
from ferrotorch.distributions.continuous_extra import ContinuousBernoulli
from ferrotorch.distributions.discrete import Bernoulli, Categorical, OneHotCategorical
from ferrotorch.distributions.distribution import Distribution
from ferrotorch.distributions.exp_family import ExponentialFamily
from ferrotorch.distributions.gamma import Beta, Dirichlet, Gamma, Poisson
from ferrotorch.distributions.multivariate import (
    Independent,
    MultivariateNormal,
    _batch_mahalanobis,
)
from ferrotorch.distributions.multivariate_extra import (
    LowRankMultivariateNormal,
    _batch_lowrank_logdet,
    _batch_lowrank_mahalanobis,
    _batch_trace_XXT,
    _solve_tril,
)

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY = {}
_KL_MEMOIZE = {}  # (type_p, type_q) -> function found by _dispatch (None if none)


def register_kl(type_p, type_q):
    """Decorator registering ``fn(p, q)`` as the KL divergence of ``type_p`` from
    ``type_q`` (the most specific registered pair wins for subclasses)."""
    # torch's checks (a non-class fails inside issubclass with a TypeError)
    if not isinstance(type_p, type) and issubclass(type_p, Distribution):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not isinstance(type_q, type) and issubclass(type_q, Distribution):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fn):
        _KL_REGISTRY[type_p, type_q] = fn
        _KL_MEMOIZE.clear()
        return fn

    return decorator


def _dispatch(type_p, type_q):
    matches = [(super_p, super_q) for super_p, super_q in _KL_REGISTRY
               if issubclass(type_p, super_p) and issubclass(type_q, super_q)]
    if not matches:
        return None

    # The pair closest to (type_p, type_q) in the method resolution orders, preferring the
    # closer p (left) or the closer q (right); torch warns when the two disagree.
    def left(pair):
        return (type_p.__mro__.index(pair[0]), type_q.__mro__.index(pair[1]))

    left_p, left_q = min(matches, key=left)
    right_p, right_q = min(matches, key=lambda pair: left(pair)[::-1])
    left_fun = _KL_REGISTRY[left_p, left_q]
    if left_fun is not _KL_REGISTRY[right_p, right_q]:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
                      f"Please register_kl({left_p.__name__}, {right_q.__name__})",
                      RuntimeWarning, stacklevel=3)
    return left_fun


def kl_divergence(p, q):
    """``KL(p || q) = E_p[log p(x) - log q(x)]``, batched."""
    key = (type(p), type(q))
    if key not in _KL_MEMOIZE:
        _KL_MEMOIZE[key] = _dispatch(*key)
    fn = _KL_MEMOIZE[key]
    if fn is None:
        raise NotImplementedError(
            f"No KL(p || q) is implemented for p type {type(p).__name__} and q type "
            f"{type(q).__name__}"
        )
    return fn(p, q)


def _inf_like(t):
    return _C.full(tuple(t.shape), math.inf, dtype=t.dtype, device=t.device)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    from ferrotorch.nn import functional as F

    t1 = p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
    t1 = _C.where(q.probs == 0, _inf_like(t1), t1)
    t1 = _C.where(p.probs == 0, _C.zeros_like(t1), t1)
    t2 = (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits))
    t2 = _C.where(q.probs == 1, _inf_like(t2), t2)
    t2 = _C.where(p.probs == 1, _C.zeros_like(t2), t2)
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = _C.where(q.probs == 0, _inf_like(t), t)
    t = _C.where(p.probs == 0, _C.zeros_like(t), t)
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot_onehot(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    outside = (q.low > p.low) | (q.high < p.high)
    return _C.where(outside, _inf_like(result), result)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    rate_ratio = q.rate / p.rate
    return rate_ratio - 1 - rate_ratio.log()


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    t1 = -scale_ratio.log()
    t2 = loc_abs_diff / q.scale
    t3 = scale_ratio * (-loc_abs_diff / p.scale).exp()
    return t1 + t2 + t3 - 1


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    ct1 = p.scale / q.scale
    ct2 = q.loc / q.scale
    ct3 = p.loc / q.scale
    t1 = -ct1.log() - ct2 + ct3
    t2 = ct1 * 0.57721566490153286060
    t3 = (ct2 + (1 + ct1).lgamma() - ct3).exp()
    return t1 + t2 + t3 - (1 + 0.57721566490153286060)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different "
                         "event shapes cannot be computed")
    Lp, Lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    half_term1 = Lq.diagonal(0, -2, -1).log().sum(-1) - Lp.diagonal(0, -2, -1).log().sum(-1)
    n = p.event_shape[0]
    lead = _C.broadcast_shapes(tuple(Lq.shape[:-2]), tuple(Lp.shape[:-2]))
    from ferrotorch import linalg

    term2 = linalg.solve_triangular(Lq.expand(tuple(lead) + (n, n)),
                                    Lp.expand(tuple(lead) + (n, n)), upper=False)
    term2 = term2.pow(2).reshape(*term2.shape[:-2], -1).sum(-1)
    term3 = _batch_mahalanobis(Lq, q.loc - p.loc)
    return half_term1 + 0.5 * (term2 + term3 - n)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    result = kl_divergence(p.base_dist, q.base_dist)
    return p._sum_rightmost(result)


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = q.concentration.lgamma() - p.concentration.lgamma()
    t3 = (p.concentration - q.concentration) * p.concentration.digamma()
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    sum_p = p.concentration1 + p.concentration0
    sum_q = q.concentration1 + q.concentration0
    t1 = q.concentration1.lgamma() + q.concentration0.lgamma() + sum_p.lgamma()
    t2 = p.concentration1.lgamma() + p.concentration0.lgamma() + sum_q.lgamma()
    t3 = (p.concentration1 - q.concentration1) * p.concentration1.digamma()
    t4 = (p.concentration0 - q.concentration0) * p.concentration0.digamma()
    t5 = (sum_q - sum_p) * sum_p.digamma()
    return t1 - t2 + t3 + t4 + t5


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    sum_p = p.concentration.sum(-1)
    sum_q = q.concentration.sum(-1)
    t1 = sum_p.lgamma() - sum_q.lgamma()
    t2 = (p.concentration.lgamma() - q.concentration.lgamma()).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = p.concentration.digamma() - sum_p.digamma().unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError(
            "KL between Binomials where q.total_count > p.total_count is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p()
                          - (-q.probs).log1p())
    return _C.where(p.total_count > q.total_count, _inf_like(kl), kl)


@register_kl(Poisson, Binomial)
def _kl_poisson_infinity(p, q):
    return _inf_like(p.rate)


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    """The Bregman divergence of the log normalizer, between members of one family."""
    if type(p) is not type(q):
        # torch's message, with the indentation its line continuation leaves inside it
        raise NotImplementedError("The cross KL-divergence between different exponential "
                                  "families cannot" + " " * 29 + "be computed using Bregman "
                                  "divergences")
    from ferrotorch.autograd import enable_grad, grad

    with enable_grad():
        p_nparams = [t.detach().requires_grad_() for t in p._natural_params]
        lg_normal = p._log_normalizer(*p_nparams)
        gradients = grad(lg_normal.sum(), p_nparams, create_graph=True)
    q_nparams = q._natural_params
    result = q._log_normalizer(*q_nparams) - lg_normal
    batch_dims = len(_C.broadcast_shapes(tuple(p.batch_shape), tuple(q.batch_shape)))
    for pnp, qnp, g in zip(p_nparams, q_nparams, gradients):
        term = (qnp - pnp) * g
        # Sums each parameter's own event dims. (PyTorch sums len(event_shape) rightmost
        # dims of every parameter, which for a batched Wishart's scalar df sums over the
        # batch; the two agree whenever that does not happen.)
        if term.dim() > batch_dims:
            term = term.reshape(*term.shape[:batch_dims], -1).sum(-1)
        result = result - term
    return result


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli_continuous_bernoulli(p, q):
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._cont_bern_log_norm() + (-p.probs).log1p()
    t3 = -q._cont_bern_log_norm() - (-q.probs).log1p()
    return t1 + t2 + t3


def _lowrank_A(q):
    qWt_qDinv = q._unbroadcasted_cov_factor.mT / q._unbroadcasted_cov_diag.unsqueeze(-2)
    return _solve_tril(q._capacitance_tril, qWt_qDinv)


def _lowrank_logdet(d):
    return _batch_lowrank_logdet(d._unbroadcasted_cov_factor, d._unbroadcasted_cov_diag,
                                 d._capacitance_tril)


def _check_event_shapes(p, q, what):
    if p.event_shape != q.event_shape:
        raise ValueError(f"KL-divergence between two {what} with different event shapes "
                         "cannot be computed")


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrankmvn_lowrankmvn(p, q):
    _check_event_shapes(p, q, "Low Rank Multivariate Normals")
    term1 = _lowrank_logdet(q) - _lowrank_logdet(p)
    term3 = _batch_lowrank_mahalanobis(q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag,
                                       q.loc - p.loc, q._capacitance_tril)
    # inv(qcov) @ pcov = [inv(qD) - A.T @ A] @ (pD + pW @ pW.T)
    A = _lowrank_A(q)
    term21 = (p._unbroadcasted_cov_diag / q._unbroadcasted_cov_diag).sum(-1)
    term22 = _batch_trace_XXT(p._unbroadcasted_cov_factor
                              * q._unbroadcasted_cov_diag.rsqrt().unsqueeze(-1))
    term23 = _batch_trace_XXT(A * p._unbroadcasted_cov_diag.sqrt().unsqueeze(-2))
    term24 = _batch_trace_XXT(A @ p._unbroadcasted_cov_factor)
    term2 = term21 + term22 - term23 - term24
    return 0.5 * (term1 + term2 + term3 - p.event_shape[0])


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_mvn_lowrankmvn(p, q):
    _check_event_shapes(p, q, "(Low Rank) Multivariate Normals")
    Lp = p._unbroadcasted_scale_tril
    term1 = _lowrank_logdet(q) - 2 * Lp.diagonal(0, -2, -1).log().sum(-1)
    term3 = _batch_lowrank_mahalanobis(q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag,
                                       q.loc - p.loc, q._capacitance_tril)
    # inv(qcov) @ pcov = [inv(qD) - A.T @ A] @ p_tril @ p_tril.T
    A = _lowrank_A(q)
    term21 = _batch_trace_XXT(Lp * q._unbroadcasted_cov_diag.rsqrt().unsqueeze(-1))
    term22 = _batch_trace_XXT(A @ Lp)
    return 0.5 * (term1 + term21 - term22 + term3 - p.event_shape[0])


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrankmvn_mvn(p, q):
    _check_event_shapes(p, q, "(Low Rank) Multivariate Normals")
    Lq = q._unbroadcasted_scale_tril
    term1 = 2 * Lq.diagonal(0, -2, -1).log().sum(-1) - _lowrank_logdet(p)
    term3 = _batch_mahalanobis(Lq, q.loc - p.loc)
    # inv(qcov) @ pcov = inv(q_tril @ q_tril.T) @ (pW @ pW.T + pD)
    term21 = _batch_trace_XXT(_solve_tril(Lq, p._unbroadcasted_cov_factor))
    term22 = _batch_trace_XXT(_solve_tril(Lq, p._unbroadcasted_cov_diag.sqrt().diag_embed()))
    return 0.5 * (term1 + term21 + term22 + term3 - p.event_shape[0])


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_continuous_bernoulli(p, q):
    return (-p.entropy() - p.mean * q.logits - (-q.probs).log1p()
            - q._cont_bern_log_norm())


@register_kl(ContinuousBernoulli, Exponential)
def _kl_continuous_bernoulli_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_continuous_bernoulli_normal(p, q):
    t1 = -p.entropy()
    t2 = 0.5 * (math.log(2.0 * math.pi) + (q.loc / q.scale).pow(2)) + q.scale.log()
    t3 = (p.variance + p.mean.pow(2) - 2.0 * q.loc * p.mean) / (2.0 * q.scale.pow(2))
    return t1 + t2 + t3


@register_kl(ContinuousBernoulli, Uniform)
def _kl_continuous_bernoulli_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    outside = (q.low >= p.support.lower_bound) | (q.high <= p.support.upper_bound)
    return _C.where(outside, _inf_like(result), result)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_continuous_bernoulli(p, q):
    result = (-p.entropy() - p.mean * q.logits - (-q.probs).log1p()
              - q._cont_bern_log_norm())
    outside = (p.high >= q.support.upper_bound) | (p.low <= q.support.lower_bound)
    return _C.where(outside, _inf_like(result), result)


@register_kl(Exponential, ContinuousBernoulli)
def _kl_exponential_infinity(p, q):
    return _inf_like(p.rate)


@register_kl(Gamma, ContinuousBernoulli)
def _kl_gamma_infinity(p, q):
    return _inf_like(p.concentration)


@register_kl(Gumbel, ContinuousBernoulli)
@register_kl(Laplace, ContinuousBernoulli)
@register_kl(Normal, ContinuousBernoulli)
def _kl_loc_infinity(p, q):
    return _inf_like(p.loc)


def _register_transformed():
    """KL pairs for ``TransformedDistribution`` and the distributions built on it (defined
    here, after the imports they need, to keep the module import order acyclic)."""
    from ferrotorch.distributions.derived import HalfNormal, Pareto
    from ferrotorch.distributions.transformed_distribution import TransformedDistribution

    @register_kl(TransformedDistribution, TransformedDistribution)
    def _kl_transformed_transformed(p, q):
        if p.transforms != q.transforms:
            raise NotImplementedError
        if p.event_shape != q.event_shape:
            raise NotImplementedError
        return kl_divergence(p.base_dist, q.base_dist)

    @register_kl(HalfNormal, HalfNormal)
    def _kl_halfnormal_halfnormal(p, q):
        return _kl_normal_normal(p.base_dist, q.base_dist)

    @register_kl(Pareto, Pareto)
    def _kl_pareto_pareto(p, q):
        scale_ratio = p.scale / q.scale
        alpha_ratio = q.alpha / p.alpha
        result = q.alpha * scale_ratio.log() - alpha_ratio.log() + alpha_ratio - 1
        return _C.where(p.scale < q.scale, _inf_like(result), result)

    @register_kl(ContinuousBernoulli, Pareto)
    def _kl_continuous_bernoulli_infinity(p, q):
        return _inf_like(p.probs)

    @register_kl(Pareto, ContinuousBernoulli)
    def _kl_pareto_infinity(p, q):
        return _inf_like(p.scale)


_register_transformed()


_EULER_GAMMA = 0.57721566490153286060


def _inf_where(mask, result):
    """PyTorch writes ``result[mask] = inf``; ``where`` is the same without the in-place
    write (and keeps the gradient of the other elements)."""
    return _C.where(mask, _inf_like(result), result)


def _register_cross_family():
    """The closed forms PyTorch registers between different families (and the infinite ones
    where the support of ``p`` is not inside that of ``q``); torch/distributions/kl.py."""
    from ferrotorch import special
    from ferrotorch.distributions.continuous import Cauchy
    from ferrotorch.distributions.derived import Pareto
    from ferrotorch.distributions.gamma import Geometric

    def xlx(t):
        return special.xlogy(t, t)  # 0 at 0

    @register_kl(Geometric, Geometric)
    def _kl_geometric_geometric(p, q):
        return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits

    @register_kl(Cauchy, Cauchy)
    def _kl_cauchy_cauchy(p, q):
        t1 = ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log()
        return t1 - (4 * p.scale * q.scale).log()

    @register_kl(Bernoulli, Poisson)
    def _kl_bernoulli_poisson(p, q):
        return -p.entropy() - (p.probs * q.rate.log() - q.rate)

    @register_kl(Poisson, Bernoulli)
    def _kl_poisson_bernoulli(p, q):
        return _inf_like(p.rate)

    @register_kl(Beta, Pareto)
    def _kl_beta_infinity(p, q):
        return _inf_like(p.concentration1)

    @register_kl(Beta, Exponential)
    def _kl_beta_exponential(p, q):
        return (-p.entropy() - q.rate.log()
                + q.rate * (p.concentration1 / (p.concentration1 + p.concentration0)))

    @register_kl(Beta, Gamma)
    def _kl_beta_gamma(p, q):
        t1 = -p.entropy()
        t2 = q.concentration.lgamma() - q.concentration * q.rate.log()
        t3 = (q.concentration - 1) * (p.concentration1.digamma()
                                      - (p.concentration1 + p.concentration0).digamma())
        t4 = q.rate * p.concentration1 / (p.concentration1 + p.concentration0)
        return t1 + t2 - t3 + t4

    @register_kl(Beta, Normal)
    def _kl_beta_normal(p, q):
        e_beta = p.concentration1 / (p.concentration1 + p.concentration0)
        var_normal = q.scale.pow(2)
        t1 = -p.entropy()
        t2 = 0.5 * (var_normal * 2 * math.pi).log()
        t3 = (e_beta * (1 - e_beta) / (p.concentration1 + p.concentration0 + 1)
              + e_beta.pow(2)) * 0.5
        t4 = q.loc * e_beta
        t5 = q.loc.pow(2) * 0.5
        return t1 + t2 + (t3 - t4 + t5) / var_normal

    @register_kl(Beta, Uniform)
    def _kl_beta_uniform(p, q):
        result = -p.entropy() + (q.high - q.low).log()
        return _inf_where((q.low > p.support.lower_bound) | (q.high < p.support.upper_bound),
                          result)

    @register_kl(Exponential, Beta)
    @register_kl(Exponential, Pareto)
    @register_kl(Exponential, Uniform)
    def _kl_exponential_infinity(p, q):
        return _inf_like(p.rate)

    @register_kl(Exponential, Gamma)
    def _kl_exponential_gamma(p, q):
        ratio = q.rate / p.rate
        t1 = -q.concentration * ratio.log()
        return (t1 + ratio + q.concentration.lgamma() + q.concentration * _EULER_GAMMA
                - (1 + _EULER_GAMMA))

    @register_kl(Exponential, Gumbel)
    def _kl_exponential_gumbel(p, q):
        scale_rate_prod = p.rate * q.scale
        loc_scale_ratio = q.loc / q.scale
        t1 = scale_rate_prod.log() - 1
        t2 = loc_scale_ratio.exp() * scale_rate_prod / (scale_rate_prod + 1)
        t3 = scale_rate_prod.reciprocal()
        return t1 - loc_scale_ratio + t2 + t3

    @register_kl(Exponential, Normal)
    def _kl_exponential_normal(p, q):
        var_normal = q.scale.pow(2)
        rate_sqr = p.rate.pow(2)
        t1 = 0.5 * (rate_sqr * var_normal * 2 * math.pi).log()
        t2 = rate_sqr.reciprocal()
        t3 = q.loc / p.rate
        t4 = q.loc.pow(2) * 0.5
        return t1 - 1 + (t2 - t3 + t4) / var_normal

    @register_kl(Gamma, Beta)
    @register_kl(Gamma, Pareto)
    @register_kl(Gamma, Uniform)
    def _kl_gamma_infinity(p, q):
        return _inf_like(p.concentration)

    @register_kl(Gamma, Exponential)
    def _kl_gamma_exponential(p, q):
        return -p.entropy() - q.rate.log() + q.rate * p.concentration / p.rate

    @register_kl(Gamma, Gumbel)
    def _kl_gamma_gumbel(p, q):
        beta_scale_prod = p.rate * q.scale
        loc_scale_ratio = q.loc / q.scale
        t1 = ((p.concentration - 1) * p.concentration.digamma() - p.concentration.lgamma()
              - p.concentration)
        t2 = beta_scale_prod.log() + p.concentration / beta_scale_prod
        t3 = (loc_scale_ratio.exp() * (1 + beta_scale_prod.reciprocal()).pow(-p.concentration)
              - loc_scale_ratio)
        return t1 + t2 + t3

    @register_kl(Gamma, Normal)
    def _kl_gamma_normal(p, q):
        var_normal = q.scale.pow(2)
        beta_sqr = p.rate.pow(2)
        t1 = (0.5 * (beta_sqr * var_normal * 2 * math.pi).log() - p.concentration
              - p.concentration.lgamma())
        t2 = 0.5 * (p.concentration.pow(2) + p.concentration) / beta_sqr
        t3 = q.loc * p.concentration / p.rate
        t4 = 0.5 * q.loc.pow(2)
        return t1 + (p.concentration - 1) * p.concentration.digamma() + (t2 - t3 + t4) / var_normal

    @register_kl(Gumbel, Beta)
    @register_kl(Gumbel, Exponential)
    @register_kl(Gumbel, Gamma)
    @register_kl(Gumbel, Pareto)
    @register_kl(Gumbel, Uniform)
    def _kl_gumbel_infinity(p, q):
        return _inf_like(p.loc)

    @register_kl(Gumbel, Normal)
    def _kl_gumbel_normal(p, q):
        param_ratio = p.scale / q.scale
        t1 = (param_ratio / math.sqrt(2 * math.pi)).log()
        t2 = (math.pi * param_ratio * 0.5).pow(2) / 3
        t3 = ((p.loc + p.scale * _EULER_GAMMA - q.loc) / q.scale).pow(2) * 0.5
        return -t1 + t2 + t3 - (_EULER_GAMMA + 1)

    @register_kl(Laplace, Beta)
    @register_kl(Laplace, Exponential)
    @register_kl(Laplace, Gamma)
    @register_kl(Laplace, Pareto)
    @register_kl(Laplace, Uniform)
    def _kl_laplace_infinity(p, q):
        return _inf_like(p.loc)

    @register_kl(Laplace, Normal)
    def _kl_laplace_normal(p, q):
        var_normal = q.scale.pow(2)
        scale_sqr_var_ratio = p.scale.pow(2) / var_normal
        t1 = 0.5 * (2 * scale_sqr_var_ratio / math.pi).log()
        t2 = 0.5 * p.loc.pow(2)
        t3 = p.loc * q.loc
        t4 = 0.5 * q.loc.pow(2)
        return -t1 + scale_sqr_var_ratio + (t2 - t3 + t4) / var_normal - 1

    @register_kl(Normal, Beta)
    @register_kl(Normal, Exponential)
    @register_kl(Normal, Gamma)
    @register_kl(Normal, Pareto)
    @register_kl(Normal, Uniform)
    def _kl_normal_infinity(p, q):
        return _inf_like(p.loc)

    @register_kl(Normal, Gumbel)
    def _kl_normal_gumbel(p, q):
        mean_scale_ratio = p.loc / q.scale
        var_scale_sqr_ratio = (p.scale / q.scale).pow(2)
        loc_scale_ratio = q.loc / q.scale
        t1 = var_scale_sqr_ratio.log() * 0.5
        t2 = mean_scale_ratio - loc_scale_ratio
        t3 = (-mean_scale_ratio + 0.5 * var_scale_sqr_ratio + loc_scale_ratio).exp()
        return -t1 + t2 + t3 - (0.5 * (1 + math.log(2 * math.pi)))

    @register_kl(Normal, Laplace)
    def _kl_normal_laplace(p, q):
        loc_diff = p.loc - q.loc
        scale_ratio = p.scale / q.scale
        loc_diff_scale_ratio = loc_diff / p.scale
        t1 = scale_ratio.log()
        t2 = math.sqrt(2 / math.pi) * p.scale * (-0.5 * loc_diff_scale_ratio.pow(2)).exp()
        t3 = loc_diff * (math.sqrt(0.5) * loc_diff_scale_ratio).erf()
        return -t1 + (t2 + t3) / q.scale - (0.5 * (1 + math.log(0.5 * math.pi)))

    @register_kl(Pareto, Beta)
    @register_kl(Pareto, Uniform)
    def _kl_pareto_infinity_cross(p, q):
        return _inf_like(p.scale)

    @register_kl(Pareto, Exponential)
    def _kl_pareto_exponential(p, q):
        scale_rate_prod = p.scale * q.rate
        t1 = (p.alpha / scale_rate_prod).log()
        t2 = p.alpha.reciprocal()
        t3 = p.alpha * scale_rate_prod / (p.alpha - 1)
        return _inf_where(p.alpha <= 1, t1 - t2 + t3 - 1)

    @register_kl(Pareto, Gamma)
    def _kl_pareto_gamma(p, q):
        common_term = p.scale.log() + p.alpha.reciprocal()
        t1 = p.alpha.log() - common_term
        t2 = q.concentration.lgamma() - q.concentration * q.rate.log()
        t3 = (1 - q.concentration) * common_term
        t4 = q.rate * p.alpha * p.scale / (p.alpha - 1)
        return _inf_where(p.alpha <= 1, t1 + t2 + t3 + t4 - 1)

    @register_kl(Pareto, Normal)
    def _kl_pareto_normal(p, q):
        var_normal = 2 * q.scale.pow(2)
        common_term = p.scale / (p.alpha - 1)
        t1 = (math.sqrt(2 * math.pi) * q.scale * p.alpha / p.scale).log()
        t2 = p.alpha.reciprocal()
        t3 = p.alpha * common_term.pow(2) / (p.alpha - 2)
        t4 = (p.alpha * common_term - q.loc).pow(2)
        return _inf_where(p.alpha <= 2, t1 - t2 + (t3 + t4) / var_normal - 1)

    @register_kl(Uniform, Beta)
    def _kl_uniform_beta(p, q):
        common_term = p.high - p.low
        t1 = common_term.log()
        t2 = ((q.concentration1 - 1) * (xlx(p.high) - xlx(p.low) - common_term)
              / common_term)
        t3 = ((q.concentration0 - 1) * (xlx(1 - p.high) - xlx(1 - p.low) + common_term)
              / common_term)
        t4 = (q.concentration1.lgamma() + q.concentration0.lgamma()
              - (q.concentration1 + q.concentration0).lgamma())
        return _inf_where((p.high > q.support.upper_bound) | (p.low < q.support.lower_bound),
                          t3 + t4 - t1 - t2)

    @register_kl(Uniform, Exponential)
    def _kl_uniform_exponential(p, q):
        result = q.rate * (p.high + p.low) / 2 - ((p.high - p.low) * q.rate).log()
        return _inf_where(p.low < q.support.lower_bound, result)

    @register_kl(Uniform, Gamma)
    def _kl_uniform_gamma(p, q):
        common_term = p.high - p.low
        t1 = common_term.log()
        t2 = q.concentration.lgamma() - q.concentration * q.rate.log()
        t3 = ((1 - q.concentration) * (xlx(p.high) - xlx(p.low) - common_term)
              / common_term)
        t4 = q.rate * (p.high + p.low) / 2
        return _inf_where(p.low < q.support.lower_bound, -t1 + t2 + t3 + t4)

    @register_kl(Uniform, Gumbel)
    def _kl_uniform_gumbel(p, q):
        common_term = q.scale / (p.high - p.low)
        high_loc_diff = (p.high - q.loc) / q.scale
        low_loc_diff = (p.low - q.loc) / q.scale
        t1 = common_term.log() + 0.5 * (high_loc_diff + low_loc_diff)
        t2 = common_term * ((-high_loc_diff).exp() - (-low_loc_diff).exp())
        return t1 - t2

    @register_kl(Uniform, Normal)
    def _kl_uniform_normal(p, q):
        common_term = p.high - p.low
        t1 = (math.sqrt(math.pi * 2) * q.scale / common_term).log()
        t2 = common_term.pow(2) / 12
        t3 = ((p.high + p.low - 2 * q.loc) / 2).pow(2)
        return t1 + 0.5 * (t2 + t3) / q.scale.pow(2)

    @register_kl(Uniform, Pareto)
    def _kl_uniform_pareto(p, q):
        support_uniform = p.high - p.low
        t1 = (q.alpha * q.scale.pow(q.alpha) * support_uniform).log()
        t2 = (xlx(p.high) - xlx(p.low) - support_uniform) / support_uniform
        return _inf_where(p.low < q.support.lower_bound, t2 * (q.alpha + 1) - t1)


_register_cross_family()
