"""``ferrotorch.distributions``: probability distributions with sampling (reparameterised
where PyTorch's are), ``log_prob``, moments, entropy and ``kl_divergence``, following
``torch.distributions``. Everything is written with differentiable tensor ops, so gradients
flow through ``rsample``, ``log_prob`` and ``kl_divergence``. ``transforms`` and
``TransformedDistribution`` build further distributions by change of variables;
``biject_to``/``transform_to`` map unconstrained parameters onto constraints."""

from ferrotorch.distributions import constraints, transforms
from ferrotorch.distributions.binomial import Binomial, Multinomial, NegativeBinomial
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
from ferrotorch.distributions.continuous_extra import (
    ContinuousBernoulli,
    FisherSnedecor,
    GeneralizedPareto,
    InverseGamma,
    VonMises,
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
from ferrotorch.distributions.discrete import (
    Bernoulli,
    Categorical,
    OneHotCategorical,
    OneHotCategoricalStraightThrough,
)
from ferrotorch.distributions.distribution import Distribution
from ferrotorch.distributions.exp_family import ExponentialFamily
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
from ferrotorch.distributions.multivariate_extra import (
    LKJCholesky,
    LowRankMultivariateNormal,
    Wishart,
)
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
    "AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "CatTransform",
    "Categorical", "Cauchy", "Chi2", "ComposeTransform", "ContinuousBernoulli",
    "CorrCholeskyTransform", "CumulativeDistributionTransform", "Dirichlet", "Distribution",
    "ExpRelaxedCategorical", "ExpTransform", "Exponential", "ExponentialFamily",
    "FisherSnedecor", "Gamma", "GeneralizedPareto", "Geometric", "Gumbel", "HalfCauchy",
    "HalfNormal", "Independent", "IndependentTransform", "InverseGamma", "Kumaraswamy",
    "LKJCholesky", "Laplace", "LogNormal", "LogisticNormal", "LogitRelaxedBernoulli",
    "LowRankMultivariateNormal", "LowerCholeskyTransform", "MixtureSameFamily", "Multinomial",
    "MultivariateNormal", "NegativeBinomial", "Normal", "OneHotCategorical",
    "OneHotCategoricalStraightThrough", "Pareto", "Poisson", "PositiveDefiniteTransform",
    "PowerTransform", "RelaxedBernoulli", "RelaxedOneHotCategorical", "ReshapeTransform",
    "SigmoidTransform", "SoftmaxTransform", "SoftplusTransform", "StackTransform",
    "StickBreakingTransform", "StudentT", "TanhTransform", "Transform",
    "TransformedDistribution", "Uniform", "VonMises", "Weibull", "Wishart", "biject_to",
    "constraints", "identity_transform", "kl_divergence", "register_kl", "transform_to",
    "transforms",
]
