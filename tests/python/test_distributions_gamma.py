"""Gamma-family distributions (Gamma, Chi2, Beta, Dirichlet, StudentT) and Poisson/Geometric:
incomplete gamma values, _standard_gamma sampling and its implicit-reparameterisation
gradient, log_prob/entropy against closed forms and numerical integration, sample moments,
and the KL closed forms."""

import math

import numpy as np
import pytest

import ferrotorch as ft
from ferrotorch import distributions as D
from ferrotorch.autograd import gradcheck

LGAMMA = np.vectorize(math.lgamma)
ERF = np.vectorize(math.erf)


def t(a, grad=False):
    return ft.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


@pytest.fixture(autouse=True)
def seed():
    ft.manual_seed(0)


# ------------------------------------------------------------------------ incomplete gamma


def test_gammainc_identities():
    x = np.array([0.01, 0.3, 1.0, 2.5, 7.0, 30.0])
    P = ft.special.gammainc
    np.testing.assert_allclose(P(t(np.ones_like(x)), t(x)).numpy(), 1 - np.exp(-x), rtol=1e-13)
    np.testing.assert_allclose(P(t(np.full_like(x, 0.5)), t(x)).numpy(), ERF(np.sqrt(x)),
                               rtol=1e-12)
    for n in (2, 3, 6):  # integer a: 1 - e^-x sum_{k<n} x^k / k!
        ref = 1 - np.exp(-x) * sum(x ** k / math.factorial(k) for k in range(n))
        np.testing.assert_allclose(P(t(np.full_like(x, n)), t(x)).numpy(), ref, rtol=1e-12,
                                   atol=1e-15)
        q = ft.special.gammaincc(t(np.full_like(x, n)), t(x)).numpy()
        np.testing.assert_allclose(q, np.exp(-x) * sum(x ** k / math.factorial(k)
                                                       for k in range(n)), rtol=1e-12)
    assert ft.igamma(t([2.0]), t([1.0])).dtype == ft.float64
    r32 = ft.igammac(ft.tensor([2.0]), ft.tensor([1.0]))
    assert r32.dtype == ft.float32 and abs(r32.item() - 2 * math.exp(-1)) < 1e-6
    edge = ft.special.gammainc(t([0.0, 0.0, 2.0, -1.0, 2.0]), t([1.0, 0.0, 0.0, 1.0, math.inf]))
    e = edge.numpy()
    assert e[0] == 1 and np.isnan(e[1]) and e[2] == 0 and np.isnan(e[3]) and e[4] == 1
    assert t([3.0]).igamma(t([2.0])).item() == pytest.approx(1 - 5 * math.exp(-2), rel=1e-13)


def test_gammainc_gradient_in_x_only():
    a, x = t([0.7, 2.0, 5.0]), t([0.4, 1.3, 6.0], grad=True)
    assert gradcheck(lambda x: ft.special.gammainc(a, x), (x,))
    assert gradcheck(lambda x: ft.special.gammaincc(a, x), (x,))
    with pytest.raises(RuntimeError, match="not implemented"):
        ft.special.gammainc(t([1.0], grad=True), t([1.0])).backward()


# ------------------------------------------------------------------------ _standard_gamma


@pytest.mark.parametrize("a", [0.2, 1.0, 4.5, 60.0])
def test_standard_gamma_moments(a):
    x = ft._standard_gamma(t(np.full(40000, a))).numpy()
    assert x.min() > 0
    np.testing.assert_allclose(x.mean(), a, rtol=0.03)
    np.testing.assert_allclose(x.var(), a, rtol=0.06)


def test_standard_gamma_seeded_and_dtypes():
    ft.manual_seed(3)
    a = ft._standard_gamma(ft.full((5,), 2.0))
    ft.manual_seed(3)
    b = ft._standard_gamma(ft.full((5,), 2.0))
    assert a.dtype == ft.float32 and a.tolist() == b.tolist()
    assert np.isnan(ft._standard_gamma(t([-1.0])).item())
    with pytest.raises((TypeError, RuntimeError)):
        ft._standard_gamma(ft.ones(3, dtype=ft.int64))


def quantile_derivative(a, x, h=1e-5):
    """dx/da holding P(a, x) fixed, by bisection on ferrotorch's gammainc (float64)."""
    u = ft.special.gammainc(t([a]), t([x])).item()

    def q(aa):
        lo, hi = 0.0, max(50.0, 10 * aa)
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if ft.special.gammainc(t([aa]), t([mid])).item() < u:
                lo = mid
            else:
                hi = mid
        return 0.5 * (lo + hi)

    return (q(a + h) - q(a - h)) / (2 * h)


def test_standard_gamma_gradient_is_the_implicit_reparameterisation():
    alpha = t([0.5, 2.0, 7.0], grad=True)
    x = ft._standard_gamma(alpha)
    x.sum().backward()
    for a, xi, g in zip([0.5, 2.0, 7.0], x.detach().numpy(), alpha.grad.numpy()):
        np.testing.assert_allclose(g, quantile_derivative(a, xi), rtol=1e-5)
    # E[dx/da] = dE[x]/da = 1.
    alpha = t(np.full(20000, 3.0), grad=True)
    ft._standard_gamma(alpha).sum().backward()
    np.testing.assert_allclose(alpha.grad.numpy().mean(), 1.0, rtol=0.02)


# ------------------------------------------------------------------------ distributions


def integrate(f, lo, hi, n=400001):
    x = np.linspace(lo, hi, n)
    return np.trapezoid(f(x), x)


def test_gamma():
    c, r = 2.5, 1.5
    d = D.Gamma(t([c]), t([r]))
    x = np.array([0.1, 0.9, 2.0, 5.0])
    ref = c * np.log(r) + (c - 1) * np.log(x) - r * x - math.lgamma(c)
    np.testing.assert_allclose(d.log_prob(t(x)).numpy(), ref, rtol=1e-12)
    pdf = lambda z: np.exp(d.log_prob(t(z)).numpy())  # noqa: E731
    np.testing.assert_allclose(d.cdf(t([2.0])).item(), integrate(pdf, 1e-12, 2.0), rtol=1e-6)
    H = integrate(lambda z: -pdf(z) * d.log_prob(t(z)).numpy(), 1e-9, 60.0)
    np.testing.assert_allclose(d.entropy().item(), H, rtol=1e-5)
    assert d.mean.item() == pytest.approx(c / r) and d.variance.item() == pytest.approx(c / r**2)
    s = d.sample((40000,)).numpy()
    np.testing.assert_allclose([s.mean(), s.var()], [c / r, c / r**2], rtol=0.04)
    conc, rate = t([2.5], grad=True), t([1.5], grad=True)
    ft.manual_seed(1)
    D.Gamma(conc, rate).rsample((20000,)).mean().backward()
    np.testing.assert_allclose([conc.grad.item(), rate.grad.item()], [1 / r, -c / r**2],
                               rtol=0.03)
    assert gradcheck(lambda c_, r_: D.Gamma(c_, r_).log_prob(t([0.5, 3.0])), (conc, rate))
    with pytest.raises(ValueError, match="concentration"):
        D.Gamma(t([-1.0]), t([1.0]))
    assert D.Gamma(1.0, 1.0).expand((3,)).sample().shape == (3,)


def test_chi2_and_student_t():
    chi = D.Chi2(t([4.0]))
    s = chi.sample((40000,)).numpy()
    np.testing.assert_allclose([s.mean(), s.var()], [4.0, 8.0], rtol=0.05)
    np.testing.assert_allclose(chi.df.item(), 4.0)
    df, loc, scale = 5.0, 0.5, 2.0
    st = D.StudentT(t([df]), t([loc]), t([scale]))
    x = np.array([-3.0, 0.0, 0.5, 4.0])
    y = (x - loc) / scale
    ref = (math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
           - math.log(scale) - (df + 1) / 2 * np.log1p(y**2 / df))
    np.testing.assert_allclose(st.log_prob(t(x)).numpy(), ref, rtol=1e-12)
    H = integrate(lambda z: -np.exp(st.log_prob(t(z)).numpy()) * st.log_prob(t(z)).numpy(),
                  -400, 400, 800001)
    np.testing.assert_allclose(st.entropy().item(), H, rtol=1e-4)
    s = st.sample((60000,)).numpy()
    np.testing.assert_allclose(np.median(s), loc, atol=0.04)
    np.testing.assert_allclose(st.variance.item(), scale**2 * df / (df - 2))
    v = D.StudentT(t([1.5, 0.8])).variance.numpy()
    assert v[0] == math.inf and np.isnan(v[1])
    dfs = t([5.0], grad=True)
    D.StudentT(dfs).rsample((10,)).sum().backward()
    assert dfs.grad is not None and np.isfinite(dfs.grad.item())


def test_beta_and_dirichlet():
    a, b = 2.0, 3.5
    beta = D.Beta(t([a]), t([b]))
    x = np.array([0.05, 0.3, 0.8])
    lbeta = math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    ref = (a - 1) * np.log(x) + (b - 1) * np.log1p(-x) - lbeta
    np.testing.assert_allclose(beta.log_prob(t(x)).numpy(), ref, rtol=1e-12)
    H = integrate(lambda z: -np.exp(beta.log_prob(t(z)).numpy()) * beta.log_prob(t(z)).numpy(),
                  1e-9, 1 - 1e-9)
    np.testing.assert_allclose(beta.entropy().item(), H, rtol=1e-5)
    s = beta.sample((40000,)).numpy()
    np.testing.assert_allclose([s.mean(), s.var()],
                               [a / (a + b), a * b / ((a + b) ** 2 * (a + b + 1))], rtol=0.03)
    ca, cb = t([a], grad=True), t([b], grad=True)
    D.Beta(ca, cb).rsample((30000,)).mean().backward()
    np.testing.assert_allclose([ca.grad.item(), cb.grad.item()],
                               [b / (a + b) ** 2, -a / (a + b) ** 2], rtol=0.05)
    conc = np.array([[1.5, 2.0, 0.7], [3.0, 1.0, 2.0]])
    dir_ = D.Dirichlet(t(conc))
    assert dir_.batch_shape == (2,) and dir_.event_shape == (3,)
    v = np.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]])
    ref = (((conc - 1) * np.log(v)).sum(-1) + LGAMMA(conc.sum(-1)) - LGAMMA(conc).sum(-1))
    np.testing.assert_allclose(dir_.log_prob(t(v)).numpy(), ref, rtol=1e-12)
    s = dir_.sample((30000,)).numpy()
    np.testing.assert_allclose(s.sum(-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(s.mean(0), conc / conc.sum(-1, keepdims=True), atol=0.01)
    # A 2-category Dirichlet is a Beta.
    two = D.Dirichlet(t([[a, b]]))
    np.testing.assert_allclose(two.entropy().item(), beta.entropy().item(), rtol=1e-12)
    np.testing.assert_allclose(two.log_prob(t([[0.3, 0.7]])).item(),
                               beta.log_prob(t([0.3])).item(), rtol=1e-12)


def test_poisson_and_geometric():
    rate = np.array([0.5, 3.0, 20.0])
    p = D.Poisson(t(rate))
    k = np.array([0.0, 2.0, 25.0])
    ref = k * np.log(rate) - rate - LGAMMA(k + 1)
    np.testing.assert_allclose(p.log_prob(t(k)).numpy(), ref, rtol=1e-12)
    s = p.sample((30000,)).numpy()
    assert np.all(s == np.floor(s))
    np.testing.assert_allclose(s.mean(0), rate, rtol=0.03)
    np.testing.assert_allclose(s.var(0), rate, rtol=0.06)
    assert ft.poisson(t([0.0])).item() == 0.0
    with pytest.raises(RuntimeError, match="non-negative"):
        ft.poisson(t([-1.0]))
    g = D.Geometric(probs=t([0.25, 1.0]))
    np.testing.assert_allclose(g.log_prob(t([2.0, 0.0])).numpy(),
                               [2 * math.log(0.75) + math.log(0.25), 0.0], rtol=1e-12)
    s = D.Geometric(probs=t([0.25])).sample((40000,)).numpy()
    np.testing.assert_allclose(s.mean(), 3.0, rtol=0.03)
    H = -sum(0.25 * 0.75**n * math.log(0.25 * 0.75**n) for n in range(400))
    np.testing.assert_allclose(D.Geometric(logits=t([math.log(1 / 3)])).entropy().item(), H,
                               rtol=1e-10)


def kl_integral(p, q, lo, hi):
    def f(z):
        lp, lq = p.log_prob(t(z)).numpy(), q.log_prob(t(z)).numpy()
        return np.exp(lp) * (lp - lq)

    return integrate(f, lo, hi)


def test_kl_closed_forms():
    p, q = D.Gamma(t(2.5), t(1.5)), D.Gamma(t(1.2), t(0.6))
    np.testing.assert_allclose(D.kl_divergence(p, q).item(), kl_integral(p, q, 1e-9, 80),
                               rtol=1e-5)
    p, q = D.Beta(t(2.0), t(3.5)), D.Beta(t(1.5), t(1.2))
    np.testing.assert_allclose(D.kl_divergence(p, q).item(),
                               kl_integral(p, q, 1e-9, 1 - 1e-9), rtol=1e-5)
    dp, dq = D.Dirichlet(t([2.0, 3.5])), D.Dirichlet(t([1.5, 1.2]))
    np.testing.assert_allclose(D.kl_divergence(dp, dq).item(), D.kl_divergence(p, q).item(),
                               rtol=1e-12)
    p, q = D.Poisson(t(3.0)), D.Poisson(t(5.0))
    k = np.arange(0, 200.0)
    lp, lq = p.log_prob(t(k)).numpy(), q.log_prob(t(k)).numpy()
    np.testing.assert_allclose(D.kl_divergence(p, q).item(), (np.exp(lp) * (lp - lq)).sum(),
                               rtol=1e-10)


def test_expand_keeps_parameters_and_cached_values_consistent():
    g = D.Geometric(probs=t([0.25, 0.5]))
    _ = g.logits  # cached by lazy_property
    e = g.expand((3, 2))
    assert e.batch_shape == (3, 2) and e.logits.shape == (3, 2) and e.probs.shape == (3, 2)
    np.testing.assert_allclose(e.log_prob(t([1.0, 1.0])).numpy(),
                               np.broadcast_to(g.log_prob(t([1.0, 1.0])).numpy(), (3, 2)))
    d = D.Dirichlet(t([1.0, 2.0, 3.0])).expand((4,))
    assert d.batch_shape == (4,) and d.event_shape == (3,) and d.sample().shape == (4, 3)
    u = D.Uniform(t(0.0), t(2.0)).expand((2,))
    assert u.sample((5,)).shape == (5, 2) and u.entropy().shape == (2,)
    n = D.Normal(t([0.0]), t([1.0])).expand((3, 1))
    assert n.batch_shape == (3, 1) and n.loc.shape == (3, 1)
