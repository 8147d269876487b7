"""ferrotorch.distributions: log_prob/cdf/icdf/entropy/moments against closed forms written
in NumPy, sample statistics, rsample gradients, shapes (batch, event, expand), validation
errors, and kl_divergence against numerical integration or Monte Carlo."""

import math

import numpy as np
import pytest

import ferrotorch as ft
from ferrotorch import distributions as D
from ferrotorch.autograd import gradcheck


def t(a, grad=False):
    return ft.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


@pytest.fixture(autouse=True)
def seed():
    ft.manual_seed(0)


X = np.array([-2.5, -0.3, 0.0, 0.7, 3.1])
ERF = np.vectorize(math.erf)


def normal_logpdf(x, m, s):
    return -((x - m) ** 2) / (2 * s * s) - np.log(s) - 0.5 * np.log(2 * np.pi)


CASES = {
    "Normal": (lambda: D.Normal(t([0.3]), t([1.7])), X,
               lambda x: normal_logpdf(x, 0.3, 1.7),
               lambda x: 0.5 * (1 + ERF((x - 0.3) / (1.7 * np.sqrt(2)))),
               0.3, 1.7 ** 2, 0.5 + 0.5 * np.log(2 * np.pi) + np.log(1.7)),
    "Laplace": (lambda: D.Laplace(t([0.3]), t([1.7])), X,
                lambda x: -np.log(2 * 1.7) - np.abs(x - 0.3) / 1.7,
                lambda x: np.where(x < 0.3, 0.5 * np.exp((x - 0.3) / 1.7),
                                   1 - 0.5 * np.exp(-(x - 0.3) / 1.7)),
                0.3, 2 * 1.7 ** 2, 1 + np.log(2 * 1.7)),
    "Cauchy": (lambda: D.Cauchy(t([0.3]), t([1.7])), X,
               lambda x: -np.log(np.pi * 1.7 * (1 + ((x - 0.3) / 1.7) ** 2)),
               lambda x: np.arctan((x - 0.3) / 1.7) / np.pi + 0.5,
               np.nan, np.inf, np.log(4 * np.pi * 1.7)),
    "Gumbel": (lambda: D.Gumbel(t([0.3]), t([1.7])), X,
               lambda x: -((x - 0.3) / 1.7 + np.exp(-(x - 0.3) / 1.7)) - np.log(1.7),
               lambda x: np.exp(-np.exp(-(x - 0.3) / 1.7)),
               0.3 + 1.7 * np.euler_gamma, np.pi ** 2 / 6 * 1.7 ** 2,
               np.log(1.7) + 1 + np.euler_gamma),
    "Exponential": (lambda: D.Exponential(t([1.5])), np.abs(X),
                    lambda x: np.log(1.5) - 1.5 * x, lambda x: 1 - np.exp(-1.5 * x),
                    1 / 1.5, 1 / 1.5 ** 2, 1 - np.log(1.5)),
    "Uniform": (lambda: D.Uniform(t([-3.0]), t([4.0])), X,
                lambda x: np.full_like(x, -np.log(7.0)), lambda x: (x + 3) / 7,
                0.5, 49 / 12, np.log(7.0)),
    "LogNormal": (lambda: D.LogNormal(t([0.3]), t([0.6])), np.abs(X) + 0.1,
                  lambda x: normal_logpdf(np.log(x), 0.3, 0.6) - np.log(x),
                  lambda x: 0.5 * (1 + ERF((np.log(x) - 0.3) / (0.6 * np.sqrt(2)))),
                  np.exp(0.3 + 0.18), (np.exp(0.36) - 1) * np.exp(0.6 + 0.36),
                  0.5 + 0.5 * np.log(2 * np.pi) + np.log(0.6) + 0.3),
}


@pytest.mark.parametrize("name", list(CASES))
def test_univariate_closed_forms(name):
    make, x, logpdf, cdf, mean, var, entropy = CASES[name]
    d = make()
    lp = d.log_prob(t(x)).numpy()
    np.testing.assert_allclose(lp, logpdf(x), rtol=1e-12, atol=1e-12)
    c = d.cdf(t(x)).numpy()
    np.testing.assert_allclose(c, cdf(x), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(d.icdf(t(c[1:4])).numpy(), x[1:4], rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(d.mean.numpy(), [mean], rtol=1e-12)
    np.testing.assert_allclose(d.variance.numpy(), [var], rtol=1e-12)
    np.testing.assert_allclose(d.entropy().numpy(), [entropy], rtol=1e-12)
    s = d.sample((20000,))
    assert s.shape == (20000, 1) and not s.requires_grad
    sn = s.numpy()[:, 0]
    # The empirical CDF matches at a few quantiles (Kolmogorov-style, loose bound).
    for q in (0.1, 0.5, 0.9):
        xq = d.icdf(t([q])).item()
        assert abs((sn <= xq).mean() - q) < 0.02


@pytest.mark.parametrize("name", ["Normal", "Laplace", "Cauchy", "Gumbel", "LogNormal"])
def test_rsample_is_differentiable(name):
    cls = getattr(D, name)

    def f(loc, scale):
        ft.manual_seed(3)
        return cls(loc, scale).rsample((4,))

    loc, scale = t([0.2, -0.1], grad=True), t([0.9, 1.3], grad=True)
    assert gradcheck(f, (loc, scale))
    assert gradcheck(lambda m, s: cls(m, s).log_prob(t([[0.5, 1.5]])), (loc, scale))


def test_rsample_gradient_values_normal():
    loc, scale = t([1.0], grad=True), t([2.0], grad=True)
    ft.manual_seed(5)
    x = D.Normal(loc, scale).rsample((1000,))
    x.sum().backward()
    assert loc.grad.item() == 1000.0
    ft.manual_seed(5)
    eps = ft.randn((1000, 1), dtype=ft.float64)
    np.testing.assert_allclose(scale.grad.item(), eps.sum().item(), rtol=1e-12)


def test_broadcasting_shapes_and_expand():
    d = D.Normal(ft.zeros(3, 1), ft.ones(4))
    assert d.batch_shape == (3, 4) and d.event_shape == ()
    assert d.sample().shape == (3, 4)
    assert d.sample((2, 5)).shape == (2, 5, 3, 4)
    assert d.log_prob(ft.zeros(4)).shape == (3, 4)
    e = D.Normal(0.0, 1.0).expand((2, 3))
    assert e.batch_shape == (2, 3) and e.sample().shape == (2, 3)
    scalar = D.Normal(0.0, 1.0)
    assert scalar.batch_shape == () and scalar.sample().shape == ()
    assert scalar.loc.dtype == ft.float32


def test_validation_errors():
    with pytest.raises(ValueError, match="Expected parameter scale"):
        D.Normal(t([0.0]), t([-1.0]))
    D.Normal(t([0.0]), t([-1.0]), validate_args=False)  # no check
    with pytest.raises(ValueError, match="support"):
        D.Exponential(t([1.0])).log_prob(t([-1.0]))
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        D.Bernoulli()
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        D.Categorical(probs=t([0.5, 0.5]), logits=t([0.0, 0.0]))
    with pytest.raises(ValueError, match="Expected parameter low"):
        D.Uniform(t([1.0]), t([0.0]))
    with pytest.raises(ValueError, match="Exactly one"):
        D.MultivariateNormal(t([0.0, 0.0]))
    with pytest.raises(ValueError, match="broadcastable"):
        D.Normal(ft.zeros(3), ft.ones(3)).log_prob(ft.zeros(4))


def test_bernoulli():
    p = np.array([0.1, 0.5, 0.9])
    for d in (D.Bernoulli(probs=t(p)), D.Bernoulli(logits=t(np.log(p / (1 - p))))):
        v = np.array([1.0, 0.0, 1.0])
        np.testing.assert_allclose(d.log_prob(t(v)).numpy(),
                                   v * np.log(p) + (1 - v) * np.log(1 - p), rtol=1e-10)
        np.testing.assert_allclose(d.entropy().numpy(),
                                   -(p * np.log(p) + (1 - p) * np.log(1 - p)), rtol=1e-10)
        np.testing.assert_allclose(d.mean.numpy(), p, rtol=1e-12)
        np.testing.assert_allclose(d.variance.numpy(), p * (1 - p), rtol=1e-12)
    m = D.Bernoulli(probs=t(p)).mode.numpy()
    assert m[0] == 0 and np.isnan(m[1]) and m[2] == 1
    s = D.Bernoulli(probs=t(p)).sample((20000,)).numpy()
    np.testing.assert_allclose(s.mean(0), p, atol=0.02)
    assert D.Bernoulli(probs=t(p)).enumerate_support().shape == (2, 3)
    logits = t([0.3, -1.2], grad=True)
    assert gradcheck(lambda lg: D.Bernoulli(logits=lg).log_prob(t([1.0, 0.0])), (logits,))


def test_categorical_and_one_hot():
    probs = np.array([[0.2, 0.3, 0.5], [0.7, 0.2, 0.1]])
    d = D.Categorical(probs=t(probs * 3))  # unnormalised probs are normalised
    np.testing.assert_allclose(d.probs.numpy(), probs, rtol=1e-12)
    v = np.array([2, 0])
    np.testing.assert_allclose(d.log_prob(ft.tensor(v)).numpy(),
                               np.log(probs[[0, 1], v]), rtol=1e-12)
    assert d.log_prob(ft.tensor([[0], [1]])).shape == (2, 2)  # broadcast against batch
    np.testing.assert_allclose(d.entropy().numpy(), -(probs * np.log(probs)).sum(-1),
                               rtol=1e-12)
    assert d.mode.tolist() == [2, 0]
    s = d.sample((30000,))
    assert s.shape == (30000, 2) and s.dtype == ft.int64
    freq = np.stack([(s.numpy()[:, i, None] == np.arange(3)).mean(0) for i in range(2)])
    np.testing.assert_allclose(freq, probs, atol=0.015)
    dl = D.Categorical(logits=t(np.log(probs) + 4.0))
    np.testing.assert_allclose(dl.probs.numpy(), probs, rtol=1e-12)
    assert d.enumerate_support().shape == (3, 2)
    oh = D.OneHotCategorical(probs=t(probs))
    assert oh.event_shape == (3,) and oh.batch_shape == (2,)
    so = oh.sample((5,))
    assert so.shape == (5, 2, 3) and bool((so.sum(-1) == 1).all())
    np.testing.assert_allclose(oh.log_prob(t([[0, 0, 1], [1, 0, 0]])).numpy(),
                               np.log([0.5, 0.7]), rtol=1e-12)
    logits = t(np.log(probs), grad=True)
    assert gradcheck(lambda lg: D.Categorical(logits=lg).log_prob(ft.tensor([1, 2])), (logits,))
    assert gradcheck(lambda lg: D.Categorical(logits=lg).entropy(), (logits,))


def mvn_params(rng, n=3):
    a = rng.standard_normal((n, n))
    return rng.standard_normal(n), a @ a.T + n * np.eye(n)


def test_multivariate_normal_three_parameterisations():
    rng = np.random.default_rng(1)
    mu, cov = mvn_params(rng)
    x = rng.standard_normal((4, 3))
    diff = x - mu
    ref = -0.5 * (3 * np.log(2 * np.pi) + np.linalg.slogdet(cov)[1]
                  + np.einsum("bi,ij,bj->b", diff, np.linalg.inv(cov), diff))
    L = np.linalg.cholesky(cov)
    for d in (D.MultivariateNormal(t(mu), covariance_matrix=t(cov)),
              D.MultivariateNormal(t(mu), precision_matrix=t(np.linalg.inv(cov))),
              D.MultivariateNormal(t(mu), scale_tril=t(L))):
        assert d.batch_shape == () and d.event_shape == (3,)
        np.testing.assert_allclose(d.log_prob(t(x)).numpy(), ref, rtol=1e-10)
        np.testing.assert_allclose(d.covariance_matrix.numpy(), cov, rtol=1e-10)
        np.testing.assert_allclose(d.precision_matrix.numpy(), np.linalg.inv(cov), rtol=1e-9)
        np.testing.assert_allclose(d.scale_tril.numpy(), L, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(d.variance.numpy(), np.diag(cov), rtol=1e-10)
        np.testing.assert_allclose(
            d.entropy().item(), 0.5 * (3 * (1 + np.log(2 * np.pi)) + np.linalg.slogdet(cov)[1]),
            rtol=1e-12)
    s = D.MultivariateNormal(t(mu), covariance_matrix=t(cov)).sample((40000,)).numpy()
    np.testing.assert_allclose(s.mean(0), mu, atol=0.06)
    np.testing.assert_allclose(np.cov(s.T), cov, rtol=0.05, atol=0.08)
    batched = D.MultivariateNormal(ft.zeros(2, 3, dtype=ft.float64), covariance_matrix=t(cov))
    assert batched.batch_shape == (2,) and batched.rsample((5,)).shape == (5, 2, 3)
    loc = t(mu, grad=True)
    Lt = t(L, grad=True)
    assert gradcheck(lambda m, lt: D.MultivariateNormal(m, scale_tril=lt.tril()).log_prob(t(x)),
                     (loc, Lt))


def test_independent():
    base = D.Normal(ft.zeros(2, 3, dtype=ft.float64), ft.ones(2, 3, dtype=ft.float64))
    ind = D.Independent(base, 1)
    assert ind.batch_shape == (2,) and ind.event_shape == (3,)
    x = t(np.arange(6.0).reshape(2, 3) / 5)
    np.testing.assert_allclose(ind.log_prob(x).numpy(), base.log_prob(x).numpy().sum(-1),
                               rtol=1e-12)
    np.testing.assert_allclose(ind.entropy().numpy(), base.entropy().numpy().sum(-1))
    assert ind.rsample((4,)).shape == (4, 2, 3) and ind.has_rsample
    with pytest.raises(ValueError, match="reinterpreted_batch_ndims"):
        D.Independent(base, 3)


def kl_numeric(p, q, lo, hi, n=400001):
    x = np.linspace(lo, hi, n)
    lp = p.log_prob(t(x)).numpy()
    lq = q.log_prob(t(x)).numpy()
    return np.trapezoid(np.exp(lp) * (lp - lq), x)


@pytest.mark.parametrize("p,q,lo,hi", [
    (lambda: D.Normal(t(0.3), t(1.2)), lambda: D.Normal(t(-0.4), t(0.7)), -15, 15),
    (lambda: D.Laplace(t(0.3), t(1.2)), lambda: D.Laplace(t(-0.4), t(0.7)), -40, 40),
    (lambda: D.Gumbel(t(0.3), t(1.2)), lambda: D.Gumbel(t(-0.4), t(0.7)), -8, 40),
    (lambda: D.Exponential(t(1.3)), lambda: D.Exponential(t(0.4)), 0, 60),
])
def test_kl_closed_forms_match_integration(p, q, lo, hi):
    p, q = p(), q()
    np.testing.assert_allclose(D.kl_divergence(p, q).item(), kl_numeric(p, q, lo, hi),
                               rtol=1e-5)


def test_kl_discrete_uniform_mvn_independent():
    pp, qq = np.array([0.2, 0.3, 0.5]), np.array([0.4, 0.4, 0.2])
    kl = D.kl_divergence(D.Categorical(probs=t(pp)), D.Categorical(probs=t(qq))).item()
    np.testing.assert_allclose(kl, (pp * np.log(pp / qq)).sum(), rtol=1e-12)
    kl = D.kl_divergence(D.OneHotCategorical(probs=t(pp)), D.OneHotCategorical(probs=t(qq)))
    np.testing.assert_allclose(kl.item(), (pp * np.log(pp / qq)).sum(), rtol=1e-12)
    b = D.kl_divergence(D.Bernoulli(probs=t([0.3, 0.0])), D.Bernoulli(probs=t([0.6, 0.5])))
    np.testing.assert_allclose(b.numpy(), [0.3 * np.log(0.5) + 0.7 * np.log(0.7 / 0.4),
                                           np.log(2.0)], rtol=1e-10)
    inf = D.kl_divergence(D.Bernoulli(probs=t([0.3])), D.Bernoulli(probs=t([0.0])))
    assert inf.item() == math.inf
    u = D.kl_divergence(D.Uniform(t([0.0, 0.0]), t([1.0, 1.0])),
                        D.Uniform(t([-1.0, 0.5]), t([2.0, 2.0]))).numpy()
    np.testing.assert_allclose(u[0], np.log(3.0))
    assert u[1] == math.inf
    rng = np.random.default_rng(2)
    m1, c1 = mvn_params(rng)
    m2, c2 = mvn_params(rng)
    ref = 0.5 * (np.trace(np.linalg.inv(c2) @ c1) + (m2 - m1) @ np.linalg.inv(c2) @ (m2 - m1)
                 - 3 + np.linalg.slogdet(c2)[1] - np.linalg.slogdet(c1)[1])
    kl = D.kl_divergence(D.MultivariateNormal(t(m1), covariance_matrix=t(c1)),
                         D.MultivariateNormal(t(m2), covariance_matrix=t(c2)))
    np.testing.assert_allclose(kl.item(), ref, rtol=1e-10)
    p = D.Independent(D.Normal(t([0.0, 1.0]), t([1.0, 2.0])), 1)
    q = D.Independent(D.Normal(t([1.0, 0.0]), t([2.0, 1.0])), 1)
    ref = sum(D.kl_divergence(D.Normal(t(a), t(b)), D.Normal(t(c), t(d))).item()
              for a, b, c, d in [(0.0, 1.0, 1.0, 2.0), (1.0, 2.0, 0.0, 1.0)])
    np.testing.assert_allclose(D.kl_divergence(p, q).item(), ref, rtol=1e-12)
    with pytest.raises(NotImplementedError, match="No KL"):
        D.kl_divergence(D.Laplace(0.0, 1.0), D.Gumbel(0.0, 1.0))  # PyTorch has none either


def test_register_kl_and_vae_style_gradient():
    class MyNormal(D.Normal):
        pass

    # Subclasses use the registered parent closed form...
    assert D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(0.0, 1.0)).item() == 0.0

    # ...until a more specific one is registered.
    @D.register_kl(MyNormal, D.Normal)
    def _kl(p, q):
        return ft.tensor(42.0)

    assert D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(0.0, 1.0)).item() == 42.0
    mu, log_sigma = t([0.5, -0.2], grad=True), t([0.1, 0.3], grad=True)
    kl = D.kl_divergence(D.Normal(mu, log_sigma.exp()), D.Normal(0.0, 1.0)).sum()
    kl.backward()
    np.testing.assert_allclose(mu.grad.numpy(), [0.5, -0.2], rtol=1e-12)
    s2 = np.exp(2 * np.array([0.1, 0.3]))
    np.testing.assert_allclose(log_sigma.grad.numpy(), s2 - 1, rtol=1e-12)
