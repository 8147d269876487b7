"""Binomial, Multinomial, NegativeBinomial, ContinuousBernoulli, FisherSnedecor, InverseGamma,
VonMises, GeneralizedPareto, LowRankMultivariateNormal, Wishart, LKJCholesky,
OneHotCategoricalStraightThrough, ExponentialFamily and their KL divergences.

Every value is checked against a closed form or a numerical reference computed with numpy;
where PyTorch is importable it is also compared with ``torch.distributions`` (float64, to
rounding). Samples (ferrotorch's RNG is its own) are checked by shape, support and moments of
large seeded samples."""

import math

import numpy as np
import pytest

import ferrotorch as ft
from ferrotorch import distributions as D
from ferrotorch.autograd import gradcheck

try:
    import torch
    import torch.distributions as TD
except ImportError:  # the project venv has no torch: closed forms only
    torch = None
    TD = None

LGAMMA = np.vectorize(math.lgamma)


@pytest.fixture(autouse=True)
def seed():
    ft.manual_seed(0)


def t(a, grad=False, dtype=np.float64):
    return ft.tensor(np.asarray(a, dtype=dtype), requires_grad=grad)


def _conv(x, lib):
    if isinstance(x, np.ndarray):
        return lib.tensor(x)
    return x


def pair(name, *args, **kwargs):
    """``(ferrotorch distribution, torch distribution or None)`` built from numpy arrays
    and numbers."""
    f = getattr(D, name)(*[_conv(a, ft) for a in args],
                         **{k: _conv(v, ft) for k, v in kwargs.items()})
    if torch is None:
        return f, None
    tdist = getattr(TD, name)(*[_conv(a, torch) for a in args],
                              **{k: _conv(v, torch) for k, v in kwargs.items()})
    return f, tdist


def npy(x):
    return x.detach().numpy() if hasattr(x, "detach") else np.asarray(x)


def check(value, ref=None, tvalue=None, rtol=1e-10, atol=1e-12, trtol=1e-12):
    """``value`` against a numpy reference and (when torch is there) torch's value."""
    v = npy(value)
    if ref is not None:
        np.testing.assert_allclose(v, ref, rtol=rtol, atol=atol, equal_nan=True)
    if tvalue is not None and torch is not None:
        tv = tvalue() if callable(tvalue) else tvalue
        assert tuple(v.shape) == tuple(tv.shape)
        np.testing.assert_allclose(v, npy(tv), rtol=trtol, atol=1e-13, equal_nan=True)


def tcall(d, method, *args):
    """``getattr(d, method)(*args)`` on the torch side, with numpy args as torch tensors."""
    if d is None:
        return None
    return lambda: getattr(d, method)(*[_conv(a, torch) for a in args])


def tattr(d, name):
    return None if d is None else (lambda: getattr(d, name))


def moments(samples, mean, var, rtol=0.05, axis=0):
    s = npy(samples)
    np.testing.assert_allclose(s.mean(axis), mean, rtol=rtol, atol=rtol * np.sqrt(var).max())
    np.testing.assert_allclose(s.var(axis), var, rtol=2 * rtol, atol=1e-3)


def trapz(y, x):
    return ((y[..., 1:] + y[..., :-1]) * np.diff(x) / 2).sum(-1)


# ------------------------------------------------------------------------------ Binomial


def binom_logpmf(k, n, p):
    return (LGAMMA(n + 1) - LGAMMA(k + 1) - LGAMMA(n - k + 1) + k * np.log(p)
            + (n - k) * np.log1p(-p))


def test_binomial_values():
    n, p = np.array([3.0, 7.0, 10.0]), np.array([0.1, 0.5, 0.85])
    f, td = pair("Binomial", n, p)
    k = np.array([1.0, 4.0, 10.0])
    check(f.log_prob(t(k)), binom_logpmf(k, n, p), tcall(td, "log_prob", k))
    check(f.mean, n * p, tattr(td, "mean"))
    check(f.variance, n * p * (1 - p), tattr(td, "variance"))
    check(f.mode, np.minimum(np.floor((n + 1) * p), n), tattr(td, "mode"))
    assert f.batch_shape == (3,) and f.event_shape == ()
    # Logits form, number total_count; entropy by enumeration.
    logits = np.array([-1.5, 0.0, 2.0])
    f, td = pair("Binomial", 6, logits=logits)
    q = 1 / (1 + np.exp(-logits))
    ks = np.arange(7.0)[:, None]
    pm = np.exp(binom_logpmf(ks, 6.0, q))
    check(f.probs, q, tattr(td, "probs"))
    check(f.entropy(), -(pm * np.log(pm)).sum(0), tcall(td, "entropy"))
    support = f.enumerate_support()
    assert support.shape == (7, 3) and f.enumerate_support(False).shape == (7, 1)
    assert f.has_enumerate_support and not f.has_rsample
    assert f.support.check(t([0.0, 6.0, 7.0])).tolist() == [True, True, False]
    with pytest.raises(NotImplementedError, match="Inhomogeneous"):
        D.Binomial(t([2.0, 3.0]), t([0.5, 0.5])).entropy()


def test_binomial_validation_and_expand():
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        D.Binomial(3)
    with pytest.raises(ValueError, match="Expected parameter probs"):
        D.Binomial(3, t([1.5]), validate_args=True)
    with pytest.raises(ValueError, match="Expected parameter total_count"):
        D.Binomial(t([2.5]), t([0.5]), validate_args=True)
    with pytest.raises(ValueError, match="support"):
        D.Binomial(3, t([0.5]), validate_args=True).log_prob(t([4.0]))
    f = D.Binomial(t([[4.0], [9.0]]), t([0.2, 0.7]))
    assert f.batch_shape == (2, 2) and f.total_count.dtype == ft.float64
    e = f.expand((3, 2, 2))
    assert e.batch_shape == (3, 2, 2)
    np.testing.assert_allclose(npy(e.log_prob(t(2.0)))[1], npy(f.log_prob(t(2.0))))


def test_binomial_sample_and_gradient():
    n, p = np.array([[5.0, 40.0], [0.0, 12.0]]), np.array([0.3, 0.9])
    f = D.Binomial(t(n), t(p))
    s = f.sample((20000,))
    assert s.shape == (20000, 2, 2) and s.dtype == ft.float64
    sn = npy(s)
    assert (sn == np.round(sn)).all() and (sn >= 0).all() and (sn <= n).all()
    moments(s, n * p, n * p * (1 - p))
    probs = t([0.2, 0.6], grad=True)
    assert gradcheck(lambda q: D.Binomial(8, q).log_prob(t([3.0, 5.0])), (probs,))


@pytest.mark.parametrize("n,p", [(6, 0.3), (30, 0.4), (1000, 0.02), (45, 0.85)])
def test_binomial_sample_matches_pmf(n, p):
    # Inversion (n min(p, 1 - p) < 10) and BTRS (>= 10) regimes, and p > 1/2 by symmetry.
    s = npy(D.Binomial(float(n), t(p)).sample((100000,))).astype(int)
    ks = np.arange(n + 1.0)
    emp = np.bincount(s, minlength=n + 1) / s.size
    assert 0.5 * np.abs(emp - np.exp(binom_logpmf(ks, n, p))).sum() < 0.012


def test_binomial_sample_large_and_edge_counts():
    n = np.array([1e5, 0.0, 7.0, 7.0])
    p = np.array([0.37, 0.5, 0.0, 1.0])
    s = npy(D.Binomial(t(n), t(p)).sample((20000,)))
    moments(s[:, :1], n[:1] * p[:1], n[:1] * p[:1] * (1 - p[:1]), rtol=0.05)
    assert (s[:, 1:] == [0.0, 0.0, 7.0]).all()
    f32 = D.Binomial(ft.tensor([10.0]), ft.tensor([0.5])).sample((3,))
    assert f32.dtype == ft.float32 and f32.shape == (3, 1)


# ------------------------------------------------------------------------- Multinomial


def test_multinomial():
    probs = np.array([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])
    f, td = pair("Multinomial", 5, probs)
    x = np.array([[1.0, 2.0, 2.0], [0.0, 0.0, 5.0]])
    ref = LGAMMA(6) - LGAMMA(x + 1).sum(-1) + (x * np.log(probs)).sum(-1)
    check(f.log_prob(t(x)), ref, tcall(td, "log_prob", x))
    check(f.mean, 5 * probs, tattr(td, "mean"))
    check(f.variance, 5 * probs * (1 - probs), tattr(td, "variance"))
    # Entropy by enumerating every count vector.
    counts = np.array([(a, b, 5 - a - b) for a in range(6) for b in range(6 - a)], float)
    lp = LGAMMA(6) - LGAMMA(counts + 1).sum(-1)
    lp = lp[:, None] + (counts[:, None, :] * np.log(probs)).sum(-1)
    # torch's lgamma(n + 1) of an int64 n is float32: its entropy is off by ~1e-7.
    check(f.entropy(), -(np.exp(lp) * lp).sum(0), tcall(td, "entropy"), trtol=1e-6)
    assert f.batch_shape == (2,) and f.event_shape == (3,)
    s = f.sample((4000,))
    assert s.shape == (4000, 2, 3) and (npy(s).sum(-1) == 5).all()
    moments(s, 5 * probs, 5 * probs * (1 - probs))
    assert bool(f.support.check(s).all())
    e = f.expand((4, 2))
    assert e.batch_shape == (4, 2) and e.sample().shape == (4, 2, 3)
    np.testing.assert_allclose(npy(e.entropy())[0], npy(f.entropy()))
    with pytest.raises(NotImplementedError, match="inhomogeneous"):
        D.Multinomial(t([5.0]), t(probs))
    lg = D.Multinomial(3, logits=t([0.0, -math.inf, 1.0]))  # zero count on a zero probability
    assert np.isfinite(lg.log_prob(t([1.0, 0.0, 2.0])).item())


# ------------------------------------------------------------------- NegativeBinomial


def test_negative_binomial():
    r, logits = np.array([2.5, 4.0, 0.7]), np.array([0.3, -1.0, 1.2])
    f, td = pair("NegativeBinomial", r, logits=logits)
    p = 1 / (1 + np.exp(-logits))
    k = np.array([0.0, 3.0, 7.0])
    ref = LGAMMA(k + r) - LGAMMA(k + 1) - LGAMMA(r) + r * np.log1p(-p) + k * np.log(p)
    check(f.log_prob(t(k)), ref, tcall(td, "log_prob", k))
    mean, var = r * p / (1 - p), r * p / (1 - p) ** 2
    check(f.mean, mean, tattr(td, "mean"))
    check(f.variance, var, tattr(td, "variance"))
    check(f.mode, np.maximum(np.floor((r - 1) * p / (1 - p)), 0), tattr(td, "mode"))
    s = f.sample((40000,))
    assert s.shape == (40000, 3) and (npy(s) == np.round(npy(s))).all()
    moments(s, mean, var, rtol=0.06)
    assert gradcheck(lambda r_, lg: D.NegativeBinomial(r_, logits=lg).log_prob(t(k)),
                     (t(r, grad=True), t(logits, grad=True)))
    f2, td2 = pair("NegativeBinomial", 3.0, np.array([0.25, 0.6]))
    check(f2.log_prob(t([2.0, 0.0])), None, tcall(td2, "log_prob", np.array([2.0, 0.0])))
    with pytest.raises(ValueError, match="Expected parameter probs"):
        D.NegativeBinomial(2.0, t([1.0]), validate_args=True)
    assert D.NegativeBinomial(t([1.0, 2.0]), t([0.5, 0.5])).expand((3, 2)).batch_shape == (3, 2)


# ------------------------------------------------------------------ ContinuousBernoulli


def cb_log_norm(lam):
    lam = np.asarray(lam, float)
    out = np.full(lam.shape, math.log(2.0))
    m = np.abs(lam - 0.5) > 1e-9
    out[m] = np.log(2 * np.arctanh(1 - 2 * lam[m]) / (1 - 2 * lam[m]))
    return out


def test_continuous_bernoulli_values():
    lam = np.array([0.05, 0.3, 0.4995, 0.5, 0.7, 0.99])
    f, td = pair("ContinuousBernoulli", lam)
    x = np.array([0.1, 0.9, 0.5, 0.3, 0.99, 0.01])
    ref = cb_log_norm(lam) + x * np.log(lam) + (1 - x) * np.log1p(-lam)
    # Near 1/2 PyTorch uses a Taylor expansion: the closed form agrees to ~1e-9 there.
    check(f.log_prob(t(x)), ref, tcall(td, "log_prob", x), rtol=1e-8)
    grid = np.linspace(0, 1, 200001)
    dens = np.exp(cb_log_norm(lam)[:, None] + grid * np.log(lam)[:, None]
                  + (1 - grid) * np.log1p(-lam)[:, None])
    mean = trapz(dens * grid, grid)
    check(f.mean, mean, tattr(td, "mean"), rtol=1e-7)
    check(f.variance, trapz(dens * grid ** 2, grid) - mean ** 2, tattr(td, "variance"),
          rtol=1e-6)
    check(f.entropy(), -trapz(dens * np.log(dens), grid), tcall(td, "entropy"), rtol=1e-7)
    # Entropy through the Bregman divergence of the log normalizer (ExponentialFamily).
    check(D.ExponentialFamily.entropy(f), npy(f.entropy()), rtol=1e-9)
    cdf = npy(f.cdf(t(x)))
    ref_cdf = np.array([trapz(d[grid <= xi], grid[grid <= xi]) for d, xi in zip(dens, x)])
    unstable = np.abs(lam - 0.5) <= 1e-3  # where PyTorch's cdf is the uniform one
    ref_cdf[unstable] = x[unstable]
    check(cdf, ref_cdf, tcall(td, "cdf", x), rtol=1e-4, atol=1e-6)
    u = np.array([0.2, 0.5, 0.7, 0.1, 0.95, 0.6])
    check(f.cdf(f.icdf(t(u))), u, rtol=1e-9)
    check(f.icdf(t(u)), None, tcall(td, "icdf", u))
    assert f.cdf(t([0.0, 1.0, 0.0, 1.0, 0.0, 1.0])).tolist() == [0, 1, 0, 1, 0, 1]
    assert isinstance(f, D.ExponentialFamily) and f.has_rsample


def test_continuous_bernoulli_forms_sampling_grad():
    f = D.ContinuousBernoulli(0.3)
    assert f.batch_shape == () and f.sample((5,)).shape == (5,)
    with pytest.raises(ValueError, match="The parameter probs has invalid values"):
        D.ContinuousBernoulli(t([1.2]), validate_args=True)
    lg = t([-2.0, 0.5], grad=True)
    f = D.ContinuousBernoulli(logits=lg)
    s = f.rsample((30000,))
    assert s.shape == (30000, 2) and 0 <= npy(s).min() and npy(s).max() <= 1
    moments(s, npy(f.mean), npy(f.variance), rtol=0.03)
    s.mean().backward()
    assert lg.grad is not None and np.all(npy(lg.grad) > 0)
    assert gradcheck(lambda q: D.ContinuousBernoulli(q).log_prob(t([0.2, 0.8, 0.5])),
                     (t([0.2, 0.45, 0.9], grad=True),))
    e = D.ContinuousBernoulli(t([0.2, 0.6])).expand((3, 2))
    assert e.batch_shape == (3, 2) and e.entropy().shape == (3, 2)


# ------------------------------------------------------------- FisherSnedecor, InverseGamma


def test_fisher_snedecor():
    d1, d2 = np.array([1.0, 3.0, 6.0]), np.array([2.0, 5.0, 12.0])
    f, td = pair("FisherSnedecor", d1, d2)
    x = np.array([0.5, 1.0, 2.0])
    ref = (0.5 * d1 * np.log(d1 * x) + 0.5 * d2 * np.log(d2)
           - 0.5 * (d1 + d2) * np.log(d1 * x + d2) - np.log(x)
           - (LGAMMA(d1 / 2) + LGAMMA(d2 / 2) - LGAMMA((d1 + d2) / 2)))
    check(f.log_prob(t(x)), ref, tcall(td, "log_prob", x))
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(d2 > 2, d2 / (d2 - 2), np.nan)
        var = np.where(d2 > 4, 2 * d2 ** 2 * (d1 + d2 - 2) / (d1 * (d2 - 2) ** 2 * (d2 - 4)),
                       np.nan)
    check(f.mean, mean, tattr(td, "mean"))
    check(f.variance, var, tattr(td, "variance"))
    check(f.mode, np.where(d1 > 2, (d1 - 2) / d1 * d2 / (d2 + 2), np.nan), tattr(td, "mode"))
    df1 = t([5.0], grad=True)
    g = D.FisherSnedecor(df1, t([20.0]))
    s = g.rsample((60000,))
    assert s.shape == (60000, 1) and npy(s).min() > 0
    moments(s, [20 / 18], [2 * 400 * 23 / (5 * 18 ** 2 * 16)], rtol=0.05)
    s.mean().backward()
    assert df1.grad is not None
    assert D.FisherSnedecor(2.0, 3.0).batch_shape == ()
    assert D.FisherSnedecor(t([2.0]), t([3.0, 4.0])).expand((2, 2)).batch_shape == (2, 2)


def test_inverse_gamma():
    a, b = np.array([0.5, 2.5, 4.0]), np.array([1.0, 2.0, 0.5])
    f, td = pair("InverseGamma", a, b)
    x = np.array([0.5, 1.0, 2.0])
    ref = a * np.log(b) - LGAMMA(a) - (a + 1) * np.log(x) - b / x
    check(f.log_prob(t(x)), ref, tcall(td, "log_prob", x))
    check(f.mean, np.where(a > 1, b / (a - 1), np.inf), tattr(td, "mean"))
    check(f.variance, np.where(a > 2, b ** 2 / ((a - 1) ** 2 * (a - 2)), np.inf),
          tattr(td, "variance"))
    check(f.mode, b / (a + 1), tattr(td, "mode"))
    dig = np.array([float(npy(ft.special.digamma(t(v)))) for v in a])
    check(f.entropy(), a + np.log(b) + LGAMMA(a) - (1 + a) * dig, tcall(td, "entropy"))
    rate = t([3.0], grad=True)
    g = D.InverseGamma(t([6.0]), rate)
    s = g.rsample((60000,))
    moments(s, [3 / 5], [9 / (25 * 4)], rtol=0.04)
    s.sum().backward()
    assert rate.grad is not None
    assert f.expand((2, 3)).log_prob(t(x)).shape == (2, 3)


# ---------------------------------------------------------------------------- VonMises


def test_von_mises():
    loc, kappa = np.array([0.3, -2.0, 1.0]), np.array([0.5, 3.0, 10.0])
    f, td = pair("VonMises", loc, kappa)
    x = np.array([0.1, 2.0, -3.0])
    # PyTorch evaluates I0/I1 by polynomial approximations (relative error ~1e-7).
    ref = kappa * np.cos(x - loc) - np.log(2 * np.pi * np.i0(kappa))
    check(f.log_prob(t(x)), ref, tcall(td, "log_prob", x), rtol=1e-6)
    grid = np.linspace(-np.pi, np.pi, 20001)
    i1 = trapz(np.exp(kappa[:, None] * np.cos(grid)) * np.cos(grid), grid) / (2 * np.pi)
    check(f.variance, 1 - i1 / np.i0(kappa), tattr(td, "variance"), rtol=1e-5)
    check(f.mean, loc, tattr(td, "mean"))
    assert not f.has_rsample
    s = f.sample((30000,))
    sn = npy(s)
    assert s.shape == (30000, 3) and s.dtype == ft.float64
    assert sn.min() >= -np.pi and sn.max() < np.pi
    z = np.exp(1j * sn).mean(0)
    np.testing.assert_allclose(np.angle(z), loc, atol=0.03)
    np.testing.assert_allclose(1 - np.abs(z), npy(f.variance), rtol=0.03, atol=3e-3)
    s32 = D.VonMises(ft.tensor([0.0]), ft.tensor([1e-6])).sample((2000,))
    assert s32.dtype == ft.float32 and abs(float(npy(s32).std()) - np.pi / 3 ** 0.5) < 0.1
    e = f.expand((2, 3))
    assert e.batch_shape == (2, 3) and e.sample().shape == (2, 3)


# -------------------------------------------------------------------- GeneralizedPareto


def test_generalized_pareto():
    loc, scale, xi = np.array([0.0, 1.0, -1.0]), np.array([1.0, 2.0, 0.5]), np.array(
        [0.0, 0.3, -0.2])
    f = D.GeneralizedPareto(t(loc), t(scale), t(xi))
    x = np.array([0.5, 2.0, 0.0])
    z = (x - loc) / scale
    safe = np.where(xi == 0, 1.0, xi)
    ref = np.where(xi == 0, -z, -(1 / safe + 1) * np.log1p(safe * z)) - np.log(scale)
    sf = np.where(xi == 0, np.exp(-z), (1 + safe * z) ** (-1 / safe))
    check(f.log_prob(t(x)), ref)
    check(f.cdf(t(x)), 1 - sf)
    check(f.log_survival_function(t(x)), np.log(sf))
    u = np.array([0.1, 0.5, 0.9])
    check(f.cdf(f.icdf(t(u))), u)
    check(f.mean, loc + scale / (1 - xi))
    check(f.variance, scale ** 2 / ((1 - xi) ** 2 * (1 - 2 * xi)))
    check(f.entropy(), np.log(scale) + xi + 1)
    np.testing.assert_allclose(npy(f.support.upper_bound), [np.inf, np.inf, 1.5])
    heavy = D.GeneralizedPareto(0.0, 1.0, t([1.0, 0.6]))
    assert np.isnan(npy(heavy.mean)[0]) and np.isnan(npy(heavy.variance)).all()
    if torch is not None:  # torch's log_prob/cdf compare with a float32 zero: float32 only
        a32 = [np.asarray(a, np.float32) for a in (loc, scale, xi)]
        f32 = D.GeneralizedPareto(*[ft.tensor(a) for a in a32])
        t32 = TD.GeneralizedPareto(*[torch.tensor(a) for a in a32])
        x32 = x.astype(np.float32)
        for m in ("log_prob", "cdf", "log_survival_function"):
            np.testing.assert_allclose(npy(getattr(f32, m)(ft.tensor(x32))),
                                       getattr(t32, m)(torch.tensor(x32)).numpy(), rtol=1e-6)
        for m in ("mean", "variance", "mode"):
            np.testing.assert_allclose(npy(getattr(f32, m)), getattr(t32, m).numpy(), rtol=1e-6)
    sc = t([2.0], grad=True)
    g = D.GeneralizedPareto(t([1.0]), sc, t([0.2]))
    s = g.rsample((60000,))
    assert npy(s).min() >= 1.0
    moments(s, [1 + 2 / 0.8], [4 / (0.64 * 0.6)], rtol=0.06)
    s.mean().backward()
    assert sc.grad is not None
    assert f.expand((2, 3)).batch_shape == (2, 3)


# ----------------------------------------------------------- LowRankMultivariateNormal


def lowrank_params(seed=0, batch=(2,)):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=batch + (4,)), rng.normal(size=batch + (4, 2)),
            rng.uniform(0.5, 2.0, size=(4,)))


def test_lowrank_mvn_matches_dense():
    loc, W, d = lowrank_params()
    f, td = pair("LowRankMultivariateNormal", loc, W, d)
    cov = W @ np.swapaxes(W, -1, -2) + np.diag(d)
    dense = D.MultivariateNormal(t(loc), covariance_matrix=t(cov))
    x = np.random.default_rng(1).normal(size=(3, 2, 4))
    check(f.log_prob(t(x)), npy(dense.log_prob(t(x))), tcall(td, "log_prob", x))
    check(f.entropy(), npy(dense.entropy()), tcall(td, "entropy"))
    check(f.covariance_matrix, cov, tattr(td, "covariance_matrix"))
    check(f.precision_matrix, np.linalg.inv(cov), tattr(td, "precision_matrix"), rtol=1e-9)
    check(f.scale_tril, np.linalg.cholesky(cov), tattr(td, "scale_tril"), rtol=1e-9)
    check(f.variance, np.diagonal(cov, 0, -2, -1), tattr(td, "variance"))
    assert f.batch_shape == (2,) and f.event_shape == (4,)
    with pytest.raises(ValueError, match="cov_factor must be a batch of matrices"):
        D.LowRankMultivariateNormal(t(loc), t(W[..., :3, :]), t(d))
    with pytest.raises(ValueError, match="Incompatible batch shapes"):
        D.LowRankMultivariateNormal(t(np.zeros((3, 4))), t(W), t(d))
    e = f.expand((5, 2))
    assert e.batch_shape == (5, 2) and e.log_prob(t(x[0])).shape == (5, 2)


def test_lowrank_mvn_sampling_and_gradients():
    loc, W, d = lowrank_params(batch=())
    Wt = t(W, grad=True)
    f = D.LowRankMultivariateNormal(t(loc), Wt, t(d))
    s = f.rsample((40000,))
    assert s.shape == (40000, 4)
    np.testing.assert_allclose(npy(s).mean(0), loc, atol=0.05)
    np.testing.assert_allclose(np.cov(npy(s).T), W @ W.T + np.diag(d), atol=0.12)
    s.pow(2).mean().backward()
    assert Wt.grad is not None
    x = t(np.random.default_rng(2).normal(size=(3, 4)))
    assert gradcheck(lambda m, w, dd: D.LowRankMultivariateNormal(m, w, dd).log_prob(x),
                     (t(loc, grad=True), t(W, grad=True), t(d, grad=True)))


# ---------------------------------------------------------------------------- Wishart


def mvlgamma_np(a, p):
    return p * (p - 1) / 4 * math.log(math.pi) + sum(LGAMMA(a - j / 2) for j in range(p))


def wishart_params():
    rng = np.random.default_rng(3)
    A = rng.normal(size=(2, 3, 3))
    return np.array([4.5, 7.0]), A @ np.swapaxes(A, -1, -2) + np.eye(3)


def test_wishart_values():
    df, S = wishart_params()
    p = 3
    X = np.stack([np.eye(3) * 2 + 0.3, S[1] * 1.5])
    for kw, M in (("covariance_matrix", S), ("precision_matrix", np.linalg.inv(S)),
                  ("scale_tril", np.linalg.cholesky(S))):
        f, td = pair("Wishart", df, **{kw: M})
        ref = ((df - p - 1) / 2 * np.linalg.slogdet(X)[1]
               - np.trace(np.linalg.solve(S, X), axis1=-2, axis2=-1) / 2
               - df * p / 2 * math.log(2) - df / 2 * np.linalg.slogdet(S)[1]
               - mvlgamma_np(df / 2, p))
        check(f.log_prob(t(X)), ref, tcall(td, "log_prob", X), rtol=1e-9, trtol=1e-11)
        check(f.mean, df[:, None, None] * S, tattr(td, "mean"), rtol=1e-9)
        dv = np.diagonal(S, 0, -2, -1)
        check(f.variance, df[:, None, None] * (S ** 2 + dv[..., :, None] * dv[..., None, :]),
              tattr(td, "variance"), rtol=1e-9)
        check(f.mode, (df - p - 1)[:, None, None] * S, tattr(td, "mode"), rtol=1e-9)
        check(f.precision_matrix, np.linalg.inv(S), tattr(td, "precision_matrix"), rtol=1e-9)
        check(f.entropy(), None, tcall(td, "entropy"), trtol=1e-11)
    # The closed-form entropy equals the Bregman-divergence one of ExponentialFamily.
    check(D.ExponentialFamily.entropy(f), npy(f.entropy()), rtol=1e-10)
    assert np.isnan(npy(D.Wishart(3.5, covariance_matrix=t(S[0])).mode)).all()


def test_wishart_sampling_and_errors():
    df, S = wishart_params()
    f = D.Wishart(t(df), covariance_matrix=t(S))
    s = f.rsample((6000,))
    assert s.shape == (6000, 2, 3, 3) and bool(f.support.check(s).all())
    sn = npy(s)
    np.testing.assert_allclose(sn.mean(0), df[:, None, None] * S,
                               atol=0.06 * np.abs(df[:, None, None] * S).max())
    np.testing.assert_allclose(sn.var(0), npy(f.variance), rtol=0.15, atol=1.0)
    L = t(np.linalg.cholesky(S[0]), grad=True)
    D.Wishart(t(5.0), scale_tril=L).rsample((10,)).sum().backward()
    assert L.grad is not None
    with pytest.raises(ValueError, match="expected to be greater than ndim - 1 = 2"):
        D.Wishart(1.5, covariance_matrix=t(S[0]))
    with pytest.raises(AssertionError, match="Exactly one of"):
        D.Wishart(4.0, covariance_matrix=t(S[0]), scale_tril=t(S[0]))
    with pytest.warns(UserWarning, match="Low df"):
        D.Wishart(2.5, covariance_matrix=t(S[0]))
    e = f.expand((4, 2))
    assert e.batch_shape == (4, 2) and e.rsample().shape == (4, 2, 3, 3)
    X = t(S * 2.0)
    assert gradcheck(lambda lt: D.Wishart(t(df), scale_tril=lt.tril()).log_prob(X),
                     (t(np.linalg.cholesky(S), grad=True),))


# ------------------------------------------------------------------------- LKJCholesky


def lkj_logprob_np(L, eta, dim):
    diag = np.diagonal(L, 0, -2, -1)[..., 1:]
    order = 2 * (eta - 1)[..., None] + dim - np.arange(2, dim + 1)
    alpha = eta + 0.5 * (dim - 1)
    norm = (0.5 * (dim - 1) * math.log(math.pi) + mvlgamma_np(alpha - 0.5, dim - 1)
            - LGAMMA(alpha) * (dim - 1))
    return (order * np.log(diag)).sum(-1) - norm


def test_lkj_cholesky():
    eta = np.array([0.5, 1.0, 3.0])
    f, td = pair("LKJCholesky", 3, eta)
    assert f.batch_shape == (3,) and f.event_shape == (3, 3) and not f.has_rsample
    s = f.sample((5000,))
    assert s.shape == (5000, 3, 3, 3) and bool(f.support.check(s).all())
    L = npy(s[:2])
    check(f.log_prob(t(L)), lkj_logprob_np(L, eta, 3), tcall(td, "log_prob", L))
    # In dimension 2 the correlation r has density proportional to (1 - r^2)^(eta - 1),
    # a Beta(eta, eta) on [-1, 1]: variance 1 / (2 eta + 1).
    g = D.LKJCholesky(2, t(eta))
    r = npy(g.sample((40000,)))[..., 1, 0]
    np.testing.assert_allclose(r.var(0), 1 / (2 * eta + 1), rtol=0.05)
    np.testing.assert_allclose(r.mean(0), 0, atol=0.02)
    grid = np.linspace(-1 + 1e-9, 1 - 1e-9, 400001)
    Ls = np.zeros((grid.size, 2, 2))
    Ls[:, 0, 0], Ls[:, 1, 0], Ls[:, 1, 1] = 1, grid, np.sqrt(1 - grid ** 2)
    # Normalised over the Cholesky factor's free coordinate (density in r times dr/dr).
    lp = npy(D.LKJCholesky(2, t(2.0)).log_prob(t(Ls)))
    np.testing.assert_allclose(trapz(np.exp(lp), grid), 1.0, rtol=1e-4)
    with pytest.raises(ValueError, match="greater than or equal to 2"):
        D.LKJCholesky(1)
    e = f.expand((2, 3))
    assert e.batch_shape == (2, 3) and e.sample().shape == (2, 3, 3, 3)


# --------------------------------------------------------- OneHotCategoricalStraightThrough


def test_one_hot_straight_through():
    p = np.array([0.2, 0.3, 0.5])
    probs = t(p, grad=True)
    f = D.OneHotCategoricalStraightThrough(probs)
    assert f.has_rsample and isinstance(f, D.OneHotCategorical)
    s = f.rsample((5000,))
    assert s.shape == (5000, 3) and (npy(s).sum(-1) == 1).all()
    np.testing.assert_allclose(npy(s).mean(0), p, atol=0.02)
    w = t([1.0, 2.0, 3.0])
    (s[:4] * w).sum().backward()
    grad = npy(probs.grad)
    # d/dp of 4 <w, p / sum(p)>, the straight-through gradient.
    np.testing.assert_allclose(grad, 4 * (np.array([1, 2, 3]) - (p * [1, 2, 3]).sum()))
    if torch is not None:
        tp = torch.tensor(p, requires_grad=True)
        ts = TD.OneHotCategoricalStraightThrough(tp).rsample((4,))
        (ts * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).sum().backward()
        np.testing.assert_allclose(grad, tp.grad.numpy(), rtol=1e-12)


# ------------------------------------------------------------------------------ KL


def test_kl_binomial():
    p = D.Binomial(t([6.0, 6.0, 8.0]), t([0.2, 0.5, 0.7]))
    q = D.Binomial(t([6.0, 6.0, 6.0]), t([0.4, 0.5, 0.1]))
    kl = npy(D.kl_divergence(p, q))
    ks = np.arange(7.0)[:, None]
    lp = binom_logpmf(ks, 6.0, np.array([0.2, 0.5]))
    lq = binom_logpmf(ks, 6.0, np.array([0.4, 0.5]))
    np.testing.assert_allclose(kl[:2], (np.exp(lp) * (lp - lq)).sum(0), rtol=1e-12,
                               atol=1e-15)
    assert kl[2] == np.inf
    with pytest.raises(NotImplementedError, match="q.total_count > p.total_count"):
        D.kl_divergence(q, p)
    assert npy(D.kl_divergence(D.Poisson(t([1.0, 2.0])), q)).tolist() == [np.inf] * 2
    if torch is not None:
        tp = TD.Binomial(torch.tensor([6.0, 6.0, 8.0], dtype=torch.float64),
                         torch.tensor([0.2, 0.5, 0.7], dtype=torch.float64))
        tq = TD.Binomial(torch.tensor([6.0, 6.0, 6.0], dtype=torch.float64),
                         torch.tensor([0.4, 0.5, 0.1], dtype=torch.float64))
        np.testing.assert_allclose(kl, TD.kl_divergence(tp, tq).numpy(), rtol=1e-13)


def cb_grid_kl(p, q_logprob):
    grid = np.linspace(1e-9, 1 - 1e-9, 200001)
    lp = npy(p.log_prob(t(grid[:, None])))
    return trapz((np.exp(lp) * (lp - q_logprob(grid[:, None]))).T, grid)


def test_kl_continuous_bernoulli_pairs():
    lam_p, lam_q = np.array([0.2, 0.5, 0.9]), np.array([0.6, 0.3, 0.9])
    p, tp = pair("ContinuousBernoulli", lam_p)
    q, tq = pair("ContinuousBernoulli", lam_q)
    kl = D.kl_divergence(p, q)
    ref = cb_grid_kl(p, lambda x: npy(q.log_prob(t(x))))
    check(kl, ref, None if tp is None else (lambda: TD.kl_divergence(tp, tq)), rtol=1e-6,
          atol=1e-9)
    # The Bregman-divergence KL of ExponentialFamily gives the same values.
    from ferrotorch.distributions.kl import _kl_expfamily_expfamily

    check(_kl_expfamily_expfamily(p, q), npy(kl), rtol=1e-8, atol=1e-12)
    others = [("Normal", (np.array([0.3, 0.0, 1.0]), np.array([0.5, 1.0, 2.0]))),
              ("Exponential", (np.array([0.5, 2.0, 1.0]),)),
              ("Uniform", (np.array([-0.5, -1.0, 0.1]), np.array([1.5, 1.0, 2.0])))]
    for name, args in others:
        fq, tq2 = pair(name, *args)
        value = D.kl_divergence(p, fq)
        if name == "Uniform":  # PyTorch's rule: inf unless q.low < 0 and q.high > 1
            ref = np.where((args[0] >= 0) | (args[1] <= 1), np.inf,
                           -npy(p.entropy()) + np.log(args[1] - args[0]))
        else:
            ref = cb_grid_kl(p, lambda x, fq=fq: npy(fq.log_prob(t(x))))
        check(value, ref, None if tp is None else (lambda tq2=tq2: TD.kl_divergence(tp, tq2)),
              rtol=1e-6)
    beta, tbeta = pair("Beta", np.array([2.0, 1.5, 3.0]), np.array([3.0, 1.2, 1.5]))
    grid = np.linspace(1e-7, 1 - 1e-7, 400001)[:, None]
    lb = npy(beta.log_prob(t(grid)))
    ref = trapz((np.exp(lb) * (lb - npy(q.log_prob(t(grid))))).T, grid[:, 0])
    check(D.kl_divergence(beta, q), ref,
          None if tp is None else (lambda: TD.kl_divergence(tbeta, tq)), rtol=2e-4)
    u, tu = pair("Uniform", np.array([0.1, 0.2, 0.0]), np.array([0.7, 0.9, 0.5]))
    ref = np.array([np.nan, np.nan, np.inf])
    ku = npy(D.kl_divergence(u, q))
    assert ku[2] == np.inf and np.isfinite(ku[:2]).all()
    if tp is not None:
        np.testing.assert_allclose(ku, TD.kl_divergence(tu, tq).numpy(), rtol=1e-12)
    for other in (D.Normal(t([0.0] * 3), t([1.0] * 3)), D.Exponential(t([1.0] * 3)),
                  D.Gamma(t([1.0] * 3), t([1.0] * 3)), D.Laplace(t([0.0] * 3), t([1.0] * 3)),
                  D.Gumbel(t([0.0] * 3), t([1.0] * 3)), D.Pareto(t([1.0] * 3), t([2.0] * 3))):
        assert (npy(D.kl_divergence(other, q)) == np.inf).all()
    assert (npy(D.kl_divergence(p, D.Pareto(t([1.0] * 3), t([2.0] * 3)))) == np.inf).all()


def test_kl_lowrank_and_multivariate_normal():
    loc, W, d = lowrank_params(seed=4)
    loc2, W2, d2 = lowrank_params(seed=5)
    p, tp = pair("LowRankMultivariateNormal", loc, W, d)
    q, tq = pair("LowRankMultivariateNormal", loc2, W2, d2)

    def dense(dist):
        return D.MultivariateNormal(dist.loc, covariance_matrix=dist.covariance_matrix)

    cov2 = W2[0] @ W2[0].T + np.diag(d2)
    m, tm = pair("MultivariateNormal", loc2[0], covariance_matrix=cov2)
    for a, b, ta, tb in ((p, q, tp, tq), (p, m, tp, tm), (m, p, tm, tp)):
        a_dense = a if isinstance(a, D.MultivariateNormal) else dense(a)
        b_dense = b if isinstance(b, D.MultivariateNormal) else dense(b)
        check(D.kl_divergence(a, b), npy(D.kl_divergence(a_dense, b_dense)),
              None if ta is None else (lambda ta=ta, tb=tb: TD.kl_divergence(ta, tb)),
              rtol=1e-10, trtol=1e-11)
    wrong = D.MultivariateNormal(t(np.zeros(3)), covariance_matrix=t(np.eye(3)))
    with pytest.raises(ValueError, match="different event shapes"):
        D.kl_divergence(p, wrong)
    Wt = t(W, grad=True)
    D.kl_divergence(D.LowRankMultivariateNormal(t(loc), Wt, t(d)), q).sum().backward()
    assert Wt.grad is not None


def test_kl_wishart_exponential_family():
    df, S = wishart_params()
    p, tp = pair("Wishart", df, covariance_matrix=S)
    q, tq = pair("Wishart", df[::-1].copy() + 1, covariance_matrix=S[::-1].copy() * 0.7)
    kl = D.kl_divergence(p, q)
    # Closed form: KL = (nq/2)(logdet Sq - logdet Sp) + (np/2)(tr(Sq^-1 Sp) - p)
    #   + mvlgamma(nq/2) - mvlgamma(np/2) + ((np - nq)/2) mvdigamma(np/2).
    Sp, Sq, n_p, n_q = S, S[::-1] * 0.7, df, df[::-1] + 1
    dg = np.array([sum(float(npy(ft.special.digamma(t(v / 2 - j / 2)))) for j in range(3))
                   for v in n_p])
    ref = (n_q / 2 * (np.linalg.slogdet(Sq)[1] - np.linalg.slogdet(Sp)[1])
           + n_p / 2 * (np.trace(np.linalg.solve(Sq, Sp), axis1=-2, axis2=-1) - 3)
           + mvlgamma_np(n_q / 2, 3) - mvlgamma_np(n_p / 2, 3) + (n_p - n_q) / 2 * dg)
    check(kl, ref, rtol=1e-9)
    # Unbatched, PyTorch's Bregman KL agrees (batched, it sums df's term over the batch).
    p0, tp0 = pair("Wishart", df[0], covariance_matrix=Sp[0])
    q0, tq0 = pair("Wishart", n_q[0], covariance_matrix=Sq[0])
    check(D.kl_divergence(p0, q0), ref[0],
          None if tp is None else (lambda: TD.kl_divergence(tp0, tq0)), rtol=1e-9, trtol=1e-10)
    with pytest.raises(NotImplementedError, match="different exponential families"):
        D.kl_divergence(p, D.ContinuousBernoulli(t([0.3, 0.4])))
