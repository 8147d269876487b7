"""``ferrotorch.distributions``: probability distributions with sampling (reparameterised
where PyTorch's are), ``log_prob``, moments, entropy and ``kl_divergence``, following
``torch.distributions``. Everything is written with differentiable tensor ops, so gradients
flow through ``rsample``, ``log_prob`` and ``kl_divergence``."""

from ferrotorch.distributions import constraints
from ferrotorch.distributions.continuous import (
    Cauchy,
    Exponential,
    Gumbel,
    Laplace,
    LogNormal,
    Normal,
    Uniform,
)
from ferrotorch.distributions.discrete import Bernoulli, Categorical, OneHotCategorical
from ferrotorch.distributions.distribution import Distribution
from ferrotorch.distributions.gamma import (
    Beta,
    Chi2,
    Dirichlet,
    Gamma,
    Geometric,
    Poisson,
    StudentT,
)
from ferrotorch.distributions.kl import kl_divergence, register_kl
from ferrotorch.distributions.multivariate import Independent, MultivariateNormal

__all__ = [
    "Bernoulli", "Beta", "Categorical", "Cauchy", "Chi2", "Dirichlet", "Distribution",
    "Exponential", "Gamma", "Geometric", "Gumbel", "Poisson", "StudentT",
    "Independent", "Laplace", "LogNormal", "MultivariateNormal", "Normal",
    "OneHotCategorical", "Uniform", "constraints", "kl_divergence", "register_kl",
]
