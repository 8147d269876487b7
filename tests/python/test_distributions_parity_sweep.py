"""Regression tests from a differential parity sweep of ``ferrotorch.distributions`` against
PyTorch.

The expected values are hard-coded (taken from PyTorch 2.15) or computed with NumPy/math, so
the tests run without torch; the ``*_vs_torch`` tests compare directly when torch is installed.
"""

import importlib
import math

import numpy as np
import pytest

import ferrotorch as ft
from ferrotorch.distributions import constraints as C
from ferrotorch.distributions import transforms as T

D = ft.distributions


def _np(t):
    return t.detach().numpy()


# --------------------------------------------------------------------------- messages


def test_shape_errors_print_sizes():
    with pytest.raises(ValueError, match=r"batch_shape\+event_shape: .*Size\(\[3\]\) vs "
                                         r".*Size\(\[2\]\)\.$"):
        D.Normal(ft.zeros(2), 1.0).log_prob(ft.zeros(3))
    with pytest.raises(ValueError, match=r"must match event_shape: .*Size\(\[2\]\) vs "
                                         r".*Size\(\[3\]\)\.$"):
        D.Dirichlet(ft.ones(3)).log_prob(ft.zeros(2))


def test_broadcast_all_error_message():
    with pytest.raises(ValueError) as e:
        D.Normal("a", 1.0)
    assert str(e.value) == ("Input arguments must all be instances of Number, ferrotorch.Tensor "
                            "or objects implementing __torch_function__.")


def test_bool_parameters_are_numbers():
    assert float(D.Bernoulli(True).probs) == 1.0
    d = D.Normal(True, 2.0)
    assert d.loc.dtype == ft.float32 and float(d.loc) == 1.0
    assert tuple(D.ContinuousBernoulli(probs=True, validate_args=False).batch_shape) == ()


def test_uniform_arg_constraints_depend_on_the_other_bound():
    u = D.Uniform(0.0, 1.0)
    assert repr(u.arg_constraints) == ("{'low': LessThan(upper_bound=1.0), "
                                       "'high': GreaterThan(lower_bound=0.0)}")
    with pytest.raises(ValueError) as e:
        D.Uniform(1.0, 0.0)
    assert str(e.value) == (
        "Expected parameter low (Tensor of shape ()) of distribution Uniform(low: 1.0, "
        "high: 0.0) to satisfy the constraint LessThan(upper_bound=0.0), but found invalid "
        "values:\n1.0")
    with pytest.raises(ValueError, match="Expected parameter low .* LessThan"):
        D.Uniform(ft.tensor([0.0, 2.0]), 1.0)
    D.Uniform(1.0, 0.0, validate_args=False)  # not checked


def test_geometric_probs_must_be_positive():
    with pytest.raises(ValueError) as e:
        D.Geometric(probs=ft.tensor([0.5, 0.0]))
    assert str(e.value).startswith(
        "Expected parameter probs (Tensor of shape (2,)) of distribution Geometric(probs: ")
    assert "to be positive but found invalid values:\ntensor([0.])" in str(e.value)
    D.Geometric(probs=0.0, validate_args=False)
    D.Geometric(logits=-50.0)  # only probs is checked


def test_multivariate_normal_matrix_dim_messages():
    loc = ft.zeros(2)
    with pytest.raises(ValueError, match=r"^covariance_matrix must be at least two-dim"):
        D.MultivariateNormal(loc, covariance_matrix=ft.ones(2))
    with pytest.raises(ValueError, match=r"^precision_matrix must be at least two-dim"):
        D.MultivariateNormal(loc, precision_matrix=ft.ones(2))
    with pytest.raises(ValueError, match=r"^scale_tril matrix must be at least two-dim"):
        D.MultivariateNormal(loc, scale_tril=ft.ones(2))


def test_gamma_log_prob_accepts_a_number():
    # torch.as_tensor(value) first: -> log(0.5) - 0.5 for Gamma(2, 1).
    got = D.Gamma(2.0, 1.0).log_prob(0.5)
    assert isinstance(got, ft.Tensor)
    assert float(got) == pytest.approx(math.log(0.5) - 0.5, rel=1e-6)
    got = D.Chi2(ft.tensor([1.0, 4.0])).log_prob(0.5)
    np.testing.assert_allclose(_np(got), [-0.8223649, -2.3294463], rtol=1e-5)
    with pytest.raises(ValueError, match="must be a Tensor"):
        D.Normal(0.0, 1.0).log_prob(0.5)  # the usual rule elsewhere


# --------------------------------------------------------------------------- constraints


def test_lower_triangular_constraint():
    c = C.lower_triangular
    assert repr(c) == "LowerTriangular()" and c.event_dim == 2 and not c.is_discrete
    x = ft.tensor([[[1.0, 0.0], [0.5, -2.0]], [[1.0, 2.0], [0.5, 2.0]]])
    assert _np(c.check(x)).tolist() == [True, False]


def test_independent_constraint_needs_enough_dims():
    assert type(C.real_vector).__name__ == "_IndependentConstraint"
    assert C.independent is type(C.real_vector)
    with pytest.raises(ValueError, match=r"^Expected value.dim\(\) >= 1 but got 0$"):
        C.real_vector.check(ft.tensor(1.5))
    with pytest.raises(ValueError, match=r"^Expected value.dim\(\) >= 2 but got 1$"):
        C.independent(C.real, 2).check(ft.zeros(3))
    assert _np(C.independent(C.positive, 1).check(ft.tensor([[1.0, 2.0], [1.0, -1.0]]))
               ).tolist() == [True, False]


def test_dependent_check_signature():
    with pytest.raises(ValueError, match="Cannot determine validity of dependent constraint"):
        C.dependent.check(ft.zeros(2))
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'x'"):
        C.dependent_property.check(ft.zeros(2))


def test_mixture_same_family_support():
    mix = D.MixtureSameFamily(D.Categorical(ft.tensor([0.3, 0.7])),
                              D.Independent(D.Normal(ft.zeros(2, 2), 1.0), 1))
    s = mix.support
    assert isinstance(s, C.MixtureSameFamilyConstraint)
    assert repr(s) == "MixtureSameFamilyConstraint(IndependentConstraint(Real(), 1))"
    assert s.event_dim == 1 and s.is_discrete is False
    x = ft.tensor([[0.0, 1.0], [float("nan"), 1.0]])
    assert _np(s.check(x)).tolist() == [True, False]
    with pytest.raises(AssertionError):
        C.MixtureSameFamilyConstraint(3)
    pois = D.MixtureSameFamily(D.Categorical(ft.tensor([0.3, 0.7])), D.Poisson(ft.ones(2)))
    assert pois.support.is_discrete
    assert _np(pois.support.check(ft.tensor([1.0, 1.5]))).tolist() == [True, False]


# --------------------------------------------------------------------------- exponential families

EXPFAM = [
    (lambda: D.Normal(ft.tensor([0.0, 1.0]), ft.tensor([1.0, 2.0])),
     [[0.0, 0.25], [-0.5, -0.125]], [0.9189385, 1.7370857]),
    (lambda: D.Exponential(ft.tensor([2.0])), [[-2.0]], [-0.6931472]),
    (lambda: D.Gamma(ft.tensor([2.0]), ft.tensor([3.0])), [[1.0], [-3.0]], [-2.1972246]),
    (lambda: D.Beta(ft.tensor([2.0]), ft.tensor([3.0])), [[2.0], [3.0]], [-2.4849067]),
    (lambda: D.Bernoulli(ft.tensor([0.3])), [[-0.8472979]], [0.3566749]),
    (lambda: D.Dirichlet(ft.tensor([1.0, 2.0, 3.0])), [[1.0, 2.0, 3.0]], -4.0943446),
    (lambda: D.Poisson(ft.tensor([2.0])), [[0.6931472]], [2.0]),
]


@pytest.mark.parametrize("make,nat,lognorm", EXPFAM)
def test_exponential_family_members(make, nat, lognorm):
    d = make()
    assert isinstance(d, D.ExponentialFamily)
    params = d._natural_params
    for p, want in zip(params, nat):
        np.testing.assert_allclose(_np(p), want, rtol=1e-5)
    np.testing.assert_allclose(_np(d._log_normalizer(*params)), lognorm, rtol=1e-5)


def test_exponential_family_entropy_matches_closed_form():
    for d in [D.Normal(ft.tensor([0.0, 1.0]), ft.tensor([1.0, 2.0])),
              D.Exponential(ft.tensor([2.0])), D.Gamma(ft.tensor([2.0]), ft.tensor([3.0])),
              D.Bernoulli(ft.tensor([0.3]))]:
        np.testing.assert_allclose(_np(D.ExponentialFamily.entropy(d)), _np(d.entropy()),
                                   rtol=1e-5)
    assert isinstance(D.Chi2(3.0), D.ExponentialFamily)
    with pytest.raises(NotImplementedError):
        D.Poisson(2.0).entropy()  # no _mean_carrier_measure, as in torch


def test_kl_across_exponential_families_message():
    with pytest.raises(NotImplementedError) as e:
        D.kl_divergence(D.Normal(0.0, 1.0), D.Poisson(1.0))
    assert str(e.value) == ("The cross KL-divergence between different exponential families "
                            "cannot" + " " * 29 + "be computed using Bregman divergences")
    with pytest.raises(NotImplementedError, match="No KL\\(p \\|\\| q\\) is implemented for "
                                                  "p type Cauchy and q type Normal"):
        D.kl_divergence(D.Cauchy(0.0, 1.0), D.Normal(0.0, 1.0))


def test_kl_registered_pairs_still_used():
    # Registered closed forms win over the exponential-family fallback.
    kl = D.kl_divergence(D.Normal(0.0, 1.0), D.Normal(1.0, 2.0))
    assert float(kl) == pytest.approx(math.log(2) + (1 + 1) / 8 - 0.5, rel=1e-6)
    kl = D.kl_divergence(D.Gamma(2.0, 1.0), D.Exponential(0.5))
    assert float(kl) == pytest.approx(0.11593151, rel=1e-5)  # torch 2.15


def test_register_kl_checks_and_ambiguity_warning():
    with pytest.raises(TypeError):
        D.register_kl(1, D.Normal)

    class A(D.Normal):
        pass

    class B(D.Normal):
        pass

    @D.register_kl(A, D.Normal)
    def _kl_a(p, q):
        return ft.tensor(1.0)

    @D.register_kl(D.Normal, B)
    def _kl_b(p, q):
        return ft.tensor(2.0)

    with pytest.warns(RuntimeWarning, match=r"^Ambiguous kl_divergence\(A, B\)\. Please "
                                            r"register_kl\(A, B\)$"):
        assert float(D.kl_divergence(A(0.0, 1.0), B(0.0, 1.0))) == 1.0  # the closer p wins
    assert float(D.kl_divergence(D.Normal(0.0, 1.0), B(0.0, 1.0))) == 2.0

    @D.register_kl(A, B)  # registering clears the memo of dispatched pairs
    def _kl_ab(p, q):
        return ft.tensor(3.0)

    assert float(D.kl_divergence(A(0.0, 1.0), B(0.0, 1.0))) == 3.0


def test_subclass_with_custom_init_must_define_expand():
    class MyNormal(D.Normal):
        def __init__(self, loc):
            super().__init__(loc, 1.0)

    with pytest.raises(NotImplementedError, match="^Subclass MyNormal of Normal that defines a "
                                                  "custom __init__ method must also define a "
                                                  r"custom \.expand\(\) method\.$"):
        MyNormal(ft.zeros(2)).expand((3, 2))

    class Plain(D.Normal):
        pass

    e = Plain(ft.zeros(2), 1.0).expand((3, 2))
    assert type(e) is Plain and tuple(e.batch_shape) == (3, 2)
    assert tuple(D.Chi2(ft.ones(2)).expand((3, 2)).batch_shape) == (3, 2)


def test_sample_n_future_warning_and_mixture_message():
    with pytest.warns(FutureWarning, match=r"^`sample_n\(n\)` will be deprecated\. Use "
                                           r"`sample\(\(n,\)\)` instead\.$"):
        assert tuple(D.Normal(0.0, 1.0).sample_n(3).shape) == (3,)
    with pytest.raises(ValueError, match="^The Component distribution needs to be an "
                                         "instance of torch.distributions.Distribution$"):
        D.MixtureSameFamily(D.Categorical(ft.ones(2)), "x")


# --------------------------------------------------------------------------- transforms & utils


def test_vec_to_tril_matrix_and_back():
    from ferrotorch.distributions.utils import tril_matrix_to_vec, vec_to_tril_matrix

    v = ft.arange(1.0, 7.0)
    np.testing.assert_array_equal(_np(vec_to_tril_matrix(v)),
                                  [[1, 0, 0], [2, 3, 0], [4, 5, 6]])
    np.testing.assert_array_equal(_np(vec_to_tril_matrix(v, -1)),
                                  [[0, 0, 0, 0], [1, 0, 0, 0], [2, 3, 0, 0], [4, 5, 6, 0]])
    m = ft.arange(9.0).reshape(3, 3)
    np.testing.assert_array_equal(_np(tril_matrix_to_vec(m)), [0, 3, 4, 6, 7, 8])
    np.testing.assert_array_equal(_np(tril_matrix_to_vec(m, -1)), [3, 6, 7])
    assert tuple(tril_matrix_to_vec(ft.zeros(1, 1), -1).shape) == (0,)
    assert tuple(vec_to_tril_matrix(ft.zeros(2, 0)).shape) == (2, 0, 0)
    with pytest.raises(ValueError, match="The size of last dimension is 2 which cannot be "
                                         "expressed as the lower triangular part"):
        vec_to_tril_matrix(ft.zeros(2))
    with pytest.raises(RuntimeError, match="shape mismatch"):
        vec_to_tril_matrix(ft.zeros(4))
    with pytest.raises(ValueError, match=r"diag \(3\) provided is outside \[-2, 1\]"):
        tril_matrix_to_vec(ft.zeros(2, 2), 3)


def test_vec_to_tril_matrix_with_upper_diagonal():
    from ferrotorch.distributions.utils import vec_to_tril_matrix

    # diag=1 keeps one superdiagonal: a full 2x2 from 4 entries, 1x1 from one.
    np.testing.assert_array_equal(_np(vec_to_tril_matrix(ft.arange(1.0, 5.0), 1)),
                                  [[1, 2], [3, 4]])
    np.testing.assert_array_equal(_np(vec_to_tril_matrix(ft.ones(1), 1)), [[1]])
    with pytest.raises(RuntimeError, match="shape mismatch"):
        vec_to_tril_matrix(ft.ones(2), 1)


def test_corr_cholesky_rejects_non_triangular_sizes():
    with pytest.raises(ValueError, match="The size of last dimension is 2"):
        T.CorrCholeskyTransform()(ft.tensor([0.5, -1.0]))
    y = T.CorrCholeskyTransform()(ft.tensor([0.5, -1.0, 2.0]))
    np.testing.assert_allclose(_np(y), [[1.0, 0.0, 0.0], [0.46211717, 0.88681883, 0.0],
                                        [-0.76159418, 0.62474215, 0.17225425]], rtol=1e-5)


def test_utils_module():
    from ferrotorch.distributions import utils

    assert ft.distributions.utils is utils
    assert utils.euler_constant == pytest.approx(0.5772156649015329)
    a, b = utils.broadcast_all(ft.zeros(2, 1), 1.0)
    assert tuple(a.shape) == tuple(b.shape) == (2, 1)
    np.testing.assert_allclose(_np(utils.probs_to_logits(ft.tensor([0.25]), is_binary=True)),
                               [math.log(1 / 3)], rtol=1e-6)
    np.testing.assert_allclose(_np(utils.logits_to_probs(ft.tensor([0.0, 0.0]))), [0.5, 0.5])
    assert utils.lazy_property is D.distribution.lazy_property


@pytest.mark.parametrize("mod,names", [
    ("normal", ["Normal"]), ("bernoulli", ["Bernoulli"]), ("multivariate_normal",
                                                            ["MultivariateNormal"]),
    ("one_hot_categorical", ["OneHotCategorical", "OneHotCategoricalStraightThrough"]),
    ("relaxed_categorical", ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]),
    ("relaxed_bernoulli", ["LogitRelaxedBernoulli", "RelaxedBernoulli"]),
    ("studentT", ["StudentT"]), ("von_mises", ["VonMises"]), ("lkj_cholesky", ["LKJCholesky"]),
])
def test_per_distribution_submodules(mod, names):
    m = importlib.import_module(f"ferrotorch.distributions.{mod}")
    assert getattr(ft.distributions, mod) is m
    for n in names:
        assert getattr(m, n) is getattr(D, n)


# --------------------------------------------------------------------------- sampling statistics

SAMPLED = [
    lambda: D.Normal(ft.tensor([0.0, 1.0]), ft.tensor([1.0, 2.0])),
    lambda: D.Gamma(ft.tensor([0.5, 3.0]), ft.tensor([2.0, 1.0])),
    lambda: D.Beta(ft.tensor([0.5, 2.0]), ft.tensor([1.0, 3.0])),
    lambda: D.Poisson(ft.tensor([0.5, 4.0])),
    lambda: D.Binomial(ft.tensor([3.0, 10.0]), ft.tensor([0.2, 0.5])),
    lambda: D.Geometric(ft.tensor([0.2, 0.7])),
    lambda: D.Laplace(ft.tensor([0.0, 1.0]), 2.0),
    lambda: D.Gumbel(ft.tensor([0.0, 1.0]), 2.0),
    lambda: D.Weibull(ft.tensor([1.0, 2.0]), ft.tensor([1.5, 3.0])),
    lambda: D.Kumaraswamy(ft.tensor([2.0, 0.5]), ft.tensor([3.0, 1.0])),
    lambda: D.ContinuousBernoulli(ft.tensor([0.2, 0.8])),
    lambda: D.NegativeBinomial(ft.tensor([3.0, 10.0]), ft.tensor([0.2, 0.5])),
    lambda: D.Dirichlet(ft.tensor([0.5, 1.0, 2.0])),
]


@pytest.mark.parametrize("make", SAMPLED)
def test_sample_moments_match_analytic(make):
    ft.manual_seed(0)
    d = make()
    s = _np(d.sample((20000,))).astype(np.float64)
    assert s.shape == (20000,) + tuple(d.batch_shape) + tuple(d.event_shape)
    var = _np(d.variance).astype(np.float64)
    np.testing.assert_allclose(s.mean(0), _np(d.mean), atol=0.05 * np.sqrt(var).max() + 0.01)
    np.testing.assert_allclose(s.var(0), var, rtol=0.1, atol=0.01)


# --------------------------------------------------------------------------- vs torch

_VS = {
    "Normal": dict(loc=[0.0, 1.0], scale=[1.0, 2.0]),
    "Uniform": dict(low=[0.0, -1.0], high=[1.0, 3.0]),
    "Gamma": dict(concentration=[0.5, 2.0], rate=[3.0, 1.0]),
    "Beta": dict(concentration1=[0.5, 2.0], concentration0=[1.0, 3.0]),
    "Geometric": dict(probs=[0.2, 1.0]),
    "Poisson": dict(rate=[0.5, 3.0]),
    "Dirichlet": dict(concentration=[[1.0, 2.0, 3.0], [0.5, 0.5, 4.0]]),
    "Bernoulli": dict(probs=[0.0, 0.3]),
    "Exponential": dict(rate=[0.5, 2.0]),
    "StudentT": dict(df=[0.5, 1.5, 3.0]),
}


@pytest.mark.parametrize("name", sorted(_VS))
def test_moments_and_exp_family_vs_torch(name):
    torch = pytest.importorskip("torch")
    kw = _VS[name]
    td = getattr(torch.distributions, name)(**{k: torch.tensor(v) for k, v in kw.items()})
    fd = getattr(D, name)(**{k: ft.tensor(v) for k, v in kw.items()})
    assert repr(td.arg_constraints) == repr(fd.arg_constraints)
    assert isinstance(fd, D.ExponentialFamily) == isinstance(td, torch.distributions.ExponentialFamily)
    for attr in ["mean", "mode", "variance", "stddev"]:
        np.testing.assert_allclose(_np(getattr(fd, attr)), getattr(td, attr).numpy(),
                                   rtol=1e-5, equal_nan=True)
    try:
        want = td.entropy().numpy()
    except NotImplementedError:  # Poisson: no closed form, in neither library
        with pytest.raises(NotImplementedError):
            fd.entropy()
    else:
        np.testing.assert_allclose(_np(fd.entropy()), want, rtol=1e-5)
    if isinstance(td, torch.distributions.ExponentialFamily):
        for a, b in zip(fd._natural_params, td._natural_params):
            np.testing.assert_allclose(_np(a), b.numpy(), rtol=1e-5)


def test_errors_vs_torch():
    torch = pytest.importorskip("torch")
    cases = [
        lambda M: M.distributions.Uniform(M.tensor([0.0, 2.0]), 1.0),
        lambda M: M.distributions.Geometric(M.tensor([0.5, 0.0])),
        lambda M: M.distributions.MultivariateNormal(M.zeros(2), M.ones(2)),
        lambda M: M.distributions.Normal(M.zeros(2), 1.0).log_prob(M.zeros(3)),
        lambda M: M.distributions.Dirichlet(M.ones(3)).log_prob(M.zeros(2)),
        lambda M: M.distributions.kl_divergence(M.distributions.Gamma(1.0, 1.0),
                                                M.distributions.Bernoulli(0.5)),
        lambda M: M.distributions.constraints.independent(
            M.distributions.constraints.real, 2).check(M.zeros(3)),
        lambda M: M.distributions.transforms.CorrCholeskyTransform()(M.zeros(4)),
    ]
    for case in cases:
        with pytest.raises(Exception) as te:
            case(torch)
        with pytest.raises(Exception) as fe:
            case(ft)
        assert type(fe.value).__name__ == type(te.value).__name__
        assert str(fe.value).replace("ferrotorch", "torch") == str(te.value)


def test_kl_values_vs_torch():
    torch = pytest.importorskip("torch")
    pairs = [
        ("Normal", dict(loc=[0.0, 1.0], scale=[1.0, 2.0]), "Normal",
         dict(loc=[1.0, -1.0], scale=[0.5, 3.0])),
        ("Beta", dict(concentration1=[2.0, 3.0], concentration0=[1.0, 2.0]), "Beta",
         dict(concentration1=[1.0, 0.5], concentration0=[2.0, 1.0])),
        ("Gamma", dict(concentration=[2.0, 3.0], rate=[1.0, 2.0]), "Exponential",
         dict(rate=[3.0, 0.5])),
        ("Dirichlet", dict(concentration=[1.0, 2.0, 3.0]), "Dirichlet",
         dict(concentration=[0.5, 2.0, 1.0])),
        ("Poisson", dict(rate=[1.0, 2.0]), "Poisson", dict(rate=[3.0, 0.5])),
        ("Bernoulli", dict(probs=[0.2, 0.7]), "Bernoulli", dict(probs=[0.5, 0.1])),
        ("Uniform", dict(low=[0.0, -1.0], high=[1.0, 2.0]), "Normal",
         dict(loc=[0.0, 1.0], scale=[1.0, 2.0])),
    ]
    for pn, pk, qn, qk in pairs:
        def mk(M, n, k):
            return getattr(M.distributions, n)(**{a: M.tensor(v) for a, v in k.items()})
        want = torch.distributions.kl_divergence(mk(torch, pn, pk), mk(torch, qn, qk))
        got = D.kl_divergence(mk(ft, pn, pk), mk(ft, qn, qk))
        np.testing.assert_allclose(_np(got), want.numpy(), rtol=1e-5)


def test_vec_to_tril_matrix_vs_torch():
    torch = pytest.importorskip("torch")
    from torch.distributions.utils import tril_matrix_to_vec as t_m2v
    from torch.distributions.utils import vec_to_tril_matrix as t_v2m

    from ferrotorch.distributions.utils import tril_matrix_to_vec, vec_to_tril_matrix

    for diag in (-2, -1, 0, 1):
        for k in range(11):
            v = np.arange(1, k + 1, dtype=np.float32).reshape(1, k)
            try:
                want = t_v2m(torch.tensor(v), diag).numpy()
            except (ValueError, RuntimeError) as e:
                with pytest.raises(type(e)):
                    vec_to_tril_matrix(ft.tensor(v), diag)
                continue
            np.testing.assert_array_equal(_np(vec_to_tril_matrix(ft.tensor(v), diag)), want)
        for n in range(1, 5):
            m = np.arange(n * n, dtype=np.float32).reshape(n, n)
            if -n <= diag < n:
                np.testing.assert_array_equal(_np(tril_matrix_to_vec(ft.tensor(m), diag)),
                                              t_m2v(torch.tensor(m), diag).numpy())
