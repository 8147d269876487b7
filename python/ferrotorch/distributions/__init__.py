"""``ferrotorch.distributions``: probability distributions with sampling (reparameterised
where PyTorch's are), ``log_prob``, moments, entropy and ``kl_divergence``, following
``torch.distributions``. Everything is written with differentiable tensor ops, so gradients
flow through ``rsample``, ``log_prob`` and ``kl_divergence``. ``transforms`` and
``TransformedDistribution`` build further distributions by change of variables;
``biject_to``/``transform_to`` map unconstrained parameters onto constraints."""

from ferrotorch.distributions import constraints, transforms
from ferrotorch.distributions.constraint_registry import biject_to, transform_to
from ferrotorch.distributions.continuous import (
    Cauchy,
    Exponential,
    Gumbel,
    Laplace,
    LogNormal,
    Normal,
    Uniform,
)
from ferrotorch.distributions.derived import (
    ExpRelaxedCategorical,
    HalfCauchy,
    HalfNormal,
    Kumaraswamy,
    LogisticNormal,
    LogitRelaxedBernoulli,
    Pareto,
    RelaxedBernoulli,
    RelaxedOneHotCategorical,
    Weibull,
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
from ferrotorch.distributions.mixture import MixtureSameFamily
from ferrotorch.distributions.multivariate import Independent, MultivariateNormal
from ferrotorch.distributions.transformed_distribution import TransformedDistribution
from ferrotorch.distributions.transforms import (
    AbsTransform,
    AffineTransform,
    CatTransform,
    ComposeTransform,
    CorrCholeskyTransform,
    CumulativeDistributionTransform,
    ExpTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    PowerTransform,
    ReshapeTransform,
    SigmoidTransform,
    SoftmaxTransform,
    SoftplusTransform,
    StackTransform,
    StickBreakingTransform,
    TanhTransform,
    Transform,
    identity_transform,
)

__all__ = [
    "AbsTransform", "AffineTransform", "Bernoulli", "Beta", "CatTransform", "Categorical",
    "Cauchy", "Chi2", "ComposeTransform", "CorrCholeskyTransform",
    "CumulativeDistributionTransform", "Dirichlet", "Distribution", "ExpRelaxedCategorical",
    "ExpTransform", "Exponential", "Gamma", "Geometric", "Gumbel", "HalfCauchy", "HalfNormal",
    "Independent", "IndependentTransform", "Kumaraswamy", "Laplace", "LogNormal",
    "LogisticNormal", "LogitRelaxedBernoulli", "LowerCholeskyTransform", "MixtureSameFamily",
    "MultivariateNormal", "Normal", "OneHotCategorical", "Pareto", "Poisson",
    "PositiveDefiniteTransform",
    "PowerTransform", "RelaxedBernoulli", "RelaxedOneHotCategorical", "ReshapeTransform",
    "SigmoidTransform", "SoftmaxTransform", "SoftplusTransform", "StackTransform",
    "StickBreakingTransform", "StudentT", "TanhTransform", "Transform",
    "TransformedDistribution", "Uniform", "Weibull", "biject_to", "constraints",
    "identity_transform", "kl_divergence", "register_kl", "transform_to", "transforms",
]
