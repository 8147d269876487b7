"""``ferrotorch.distributions``: probability distributions with sampling (reparameterised
where PyTorch's are), ``log_prob``, moments, entropy and ``kl_divergence``, following
``torch.distributions``. Everything is written with differentiable tensor ops, so gradients
flow through ``rsample``, ``log_prob`` and ``kl_divergence``. ``transforms`` and
``TransformedDistribution`` build further distributions by change of variables;
``biject_to``/``transform_to`` map unconstrained parameters onto constraints."""

import sys as _sys
import types as _types

from ferrotorch.distributions import constraints, transforms
from ferrotorch.distributions import utils  # noqa: F401 (torch.distributions.utils)
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

# torch.distributions has one submodule per distribution (``torch.distributions.normal``...);
# programs import from them (``from torch.distributions.normal import Normal``), so each is
# registered here as a module holding the same classes.
_SUBMODULES = {
    "bernoulli": ["Bernoulli"], "beta": ["Beta"], "categorical": ["Categorical"],
    "cauchy": ["Cauchy"], "chi2": ["Chi2"], "continuous_bernoulli": ["ContinuousBernoulli"],
    "dirichlet": ["Dirichlet"], "exponential": ["Exponential"],
    "fishersnedecor": ["FisherSnedecor"], "generalized_pareto": ["GeneralizedPareto"],
    "geometric": ["Geometric"], "gumbel": ["Gumbel"], "half_cauchy": ["HalfCauchy"],
    "half_normal": ["HalfNormal"], "independent": ["Independent"],
    "inverse_gamma": ["InverseGamma"], "kumaraswamy": ["Kumaraswamy"], "laplace": ["Laplace"],
    "lkj_cholesky": ["LKJCholesky"], "log_normal": ["LogNormal"],
    "logistic_normal": ["LogisticNormal"],
    "lowrank_multivariate_normal": ["LowRankMultivariateNormal"],
    "mixture_same_family": ["MixtureSameFamily"], "multinomial": ["Multinomial"],
    "multivariate_normal": ["MultivariateNormal"], "negative_binomial": ["NegativeBinomial"],
    "normal": ["Normal"],
    "one_hot_categorical": ["OneHotCategorical", "OneHotCategoricalStraightThrough"],
    "pareto": ["Pareto"], "poisson": ["Poisson"],
    "relaxed_bernoulli": ["LogitRelaxedBernoulli", "RelaxedBernoulli"],
    "relaxed_categorical": ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"],
    "studentT": ["StudentT"], "uniform": ["Uniform"], "von_mises": ["VonMises"],
    "weibull": ["Weibull"], "wishart": ["Wishart"],
}
for _name, _members in _SUBMODULES.items():
    _mod = _types.ModuleType(f"{__name__}.{_name}")
    _mod.__all__ = list(_members)
    for _member in _members:
        setattr(_mod, _member, globals()[_member])
    _sys.modules[_mod.__name__] = _mod
    globals()[_name] = _mod
del _name, _members, _mod, _member
