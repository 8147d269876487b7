"""``kl_divergence`` between different families (Normal/Laplace, Uniform/Normal, Gamma/Gumbel,
Pareto/Exponential...), Geometric/Geometric and Cauchy/Cauchy: the closed forms PyTorch
registers. Checked by numerical integration of ``p(x) (log p(x) - log q(x))`` in float64, for
infinite values where the support of p is not inside q's, against PyTorch values and gradients
(when importable), and the registry must hold the same pairs as PyTorch's."""

import math

import numpy as np
import pytest

import ferrotorch as ft
from ferrotorch.distributions import kl as ft_kl


def _t(v, M=ft, grad=False):
    return M.tensor(v, dtype=M.float64, requires_grad=grad)


def _pairs(M, grad=False, with_params=False):
    """(label, p, q) with float64 parameters (requires_grad when asked); batched where the
    closed form has a support check, so that both branches are seen. With ``with_params``,
    each entry also carries the parameter tensors it was built from, in order."""
    D = M.distributions
    made = []

    def t(v):
        made.append(_t(v, M, grad))
        return made[-1]

    def pair(label, p, q):
        entry = (label, p, q, list(made)) if with_params else (label, p, q)
        made.clear()
        return entry

    return [pair(label, *thunk()) for label, thunk in [
        ("Normal-Laplace", lambda: (D.Normal(t(0.3), t(1.2)), D.Laplace(t(1.0), t(2.0)))),
        ("Normal-Gumbel", lambda: (D.Normal(t(0.5), t(0.8)), D.Gumbel(t(0.2), t(1.5)))),
        ("Laplace-Normal", lambda: (D.Laplace(t(0.5), t(0.8)), D.Normal(t(-0.2), t(1.5)))),
        ("Gumbel-Normal", lambda: (D.Gumbel(t(0.5), t(0.8)), D.Normal(t(-0.2), t(1.5)))),
        ("Uniform-Normal", lambda: (D.Uniform(t(-1.0), t(2.0)), D.Normal(t(0.3), t(1.1)))),
        ("Uniform-Gumbel", lambda: (D.Uniform(t(-1.0), t(2.0)), D.Gumbel(t(0.3), t(1.1)))),
        ("Uniform-Exponential", lambda: (D.Uniform(t([0.5, -1.0]), t([2.0, 1.0])), D.Exponential(t([1.3, 1.3])))),
        ("Uniform-Gamma", lambda: (D.Uniform(t([0.5, -1.0]), t([2.0, 1.0])), D.Gamma(t([2.0, 2.0]), t([1.5, 1.5])))),
        ("Uniform-Beta", lambda: (D.Uniform(t([0.2, 0.5]), t([0.7, 1.5])), D.Beta(t([2.0, 2.0]), t([3.0, 3.0])))),
        ("Uniform-Pareto", lambda: (D.Uniform(t([1.5, 0.5]), t([3.0, 3.0])), D.Pareto(t([1.0, 1.0]), t([2.5, 2.5])))),
        ("Exponential-Gamma", lambda: (D.Exponential(t(1.5)), D.Gamma(t(2.0), t(0.7)))),
        ("Exponential-Gumbel", lambda: (D.Exponential(t(1.5)), D.Gumbel(t(0.4), t(2.0)))),
        ("Exponential-Normal", lambda: (D.Exponential(t(1.5)), D.Normal(t(0.4), t(2.0)))),
        ("Gamma-Exponential", lambda: (D.Gamma(t(2.5), t(1.2)), D.Exponential(t(0.8)))),
        ("Gamma-Gumbel", lambda: (D.Gamma(t(2.5), t(1.2)), D.Gumbel(t(1.0), t(1.5)))),
        ("Gamma-Normal", lambda: (D.Gamma(t(2.5), t(1.2)), D.Normal(t(1.0), t(1.5)))),
        ("Beta-Exponential", lambda: (D.Beta(t(2.0), t(3.0)), D.Exponential(t(0.8)))),
        ("Beta-Gamma", lambda: (D.Beta(t(2.0), t(3.0)), D.Gamma(t(1.5), t(2.0)))),
        ("Beta-Normal", lambda: (D.Beta(t(2.0), t(3.0)), D.Normal(t(0.3), t(0.5)))),
        ("Beta-Uniform", lambda: (D.Beta(t([2.0, 2.0]), t([3.0, 3.0])), D.Uniform(t([0.0, 0.1]), t([1.0, 1.0])))),
        ("Pareto-Exponential", lambda: (D.Pareto(t([1.0, 1.0]), t([3.0, 0.9])), D.Exponential(t([0.5, 0.5])))),
        ("Pareto-Gamma", lambda: (D.Pareto(t([1.0, 1.0]), t([3.0, 0.9])), D.Gamma(t([2.0, 2.0]), t([0.5, 0.5])))),
        ("Pareto-Normal", lambda: (D.Pareto(t([1.0, 1.0]), t([3.5, 1.5])), D.Normal(t([2.0, 2.0]), t([1.0, 1.0])))),
        ("Geometric-Geometric", lambda: (D.Geometric(probs=t(0.3)), D.Geometric(probs=t(0.6)))),
        ("Cauchy-Cauchy", lambda: (D.Cauchy(t(0.3), t(1.2)), D.Cauchy(t(-0.5), t(0.4)))),
        ("Bernoulli-Poisson", lambda: (D.Bernoulli(probs=t(0.3)), D.Poisson(t(0.8)))),
        ("Poisson-Bernoulli", lambda: (D.Poisson(t(0.8)), D.Bernoulli(probs=t(0.3)))),
        ("Normal-Uniform", lambda: (D.Normal(t(0.0), t(1.0)), D.Uniform(t(-1.0), t(1.0)))),
        ("Laplace-Gamma", lambda: (D.Laplace(t(0.0), t(1.0)), D.Gamma(t(1.0), t(1.0)))),
        ("Gumbel-Pareto", lambda: (D.Gumbel(t(0.0), t(1.0)), D.Pareto(t(1.0), t(1.0)))),
        ("Exponential-Beta", lambda: (D.Exponential(t(1.0)), D.Beta(t(1.0), t(1.0)))),
        ("Gamma-Uniform", lambda: (D.Gamma(t(1.0), t(1.0)), D.Uniform(t(0.0), t(5.0)))),
        ("Pareto-Beta", lambda: (D.Pareto(t(1.0), t(2.0)), D.Beta(t(1.0), t(1.0)))),
        ("Beta-Pareto", lambda: (D.Beta(t(1.0), t(2.0)), D.Pareto(t(1.0), t(1.0)))),
    ]]


def _numeric_kl(p, q, lo, hi, n=400000):
    """KL(p || q) by the midpoint rule over [lo, hi] (p's support inside q's; the midpoints
    keep off the ends, where a density may be infinite). On a positive range the rule runs
    in log x (from e^-40 when lo is 0), which resolves log-singular integrands at 0 and long
    tails."""
    if lo >= 0:
        a, b = (math.log(lo) if lo > 0 else -40.0), math.log(hi)
        h = (b - a) / n
        x = np.exp(a + h * (np.arange(n) + 0.5))
        jac = x
    else:
        h = (hi - lo) / n
        x = lo + h * (np.arange(n) + 0.5)
        jac = 1.0
    xs = ft.tensor(x, dtype=ft.float64)
    lp, lq = p.log_prob(xs).numpy(), q.log_prob(xs).numpy()
    return np.sum(np.exp(lp) * (lp - lq) * jac) * h


@pytest.mark.parametrize("label,lo,hi", [
    ("Normal-Laplace", -12, 12), ("Normal-Gumbel", -10, 12), ("Laplace-Normal", -40, 40),
    ("Gumbel-Normal", -8, 40), ("Uniform-Normal", -1, 2), ("Uniform-Gumbel", -1, 2),
    ("Exponential-Gamma", 0, 40), ("Exponential-Gumbel", 0, 40), ("Exponential-Normal", 0, 40),
    ("Gamma-Exponential", 0, 60), ("Gamma-Gumbel", 0, 60), ("Gamma-Normal", 0, 60),
    ("Beta-Exponential", 0, 1), ("Beta-Gamma", 0, 1), ("Beta-Normal", 0, 1),
    ("Cauchy-Cauchy", -2e4, 2e4),
])
def test_closed_forms_match_numerical_integration(label, lo, hi):
    (_, p, q), = [c for c in _pairs(ft) if c[0] == label]
    got = ft.distributions.kl_divergence(p, q).numpy()
    want = np.array(_numeric_kl(p, q, lo, hi))
    tol = 2e-3 if label == "Cauchy-Cauchy" else 1e-5  # Cauchy's heavy tails, cut at 2e4
    np.testing.assert_allclose(got.ravel()[0] if got.ndim else got, np.ravel(want)[0],
                               rtol=tol, atol=tol)


def test_batched_forms_and_support_checks():
    pairs = {label: (p, q) for label, p, q in _pairs(ft)}

    def kl(label):
        return ft.distributions.kl_divergence(*pairs[label]).numpy()

    # Uniform on [0.5, 2] inside the Exponential's support; on [-1, 1] not
    u_exp = kl("Uniform-Exponential")
    assert math.isfinite(u_exp[0]) and u_exp[1] == math.inf
    p, q = ft.distributions.Uniform(_t(0.5), _t(2.0)), ft.distributions.Exponential(_t(1.3))
    assert u_exp[0] == pytest.approx(_numeric_kl(p, q, 0.5, 2.0), rel=1e-8)
    assert math.isfinite(kl("Uniform-Gamma")[0]) and kl("Uniform-Gamma")[1] == math.inf
    assert math.isfinite(kl("Uniform-Beta")[0]) and kl("Uniform-Beta")[1] == math.inf
    assert math.isfinite(kl("Uniform-Pareto")[0]) and kl("Uniform-Pareto")[1] == math.inf
    # Beta on [0, 1] inside Uniform(0, 1) but not Uniform(0.1, 1)
    b_u = kl("Beta-Uniform")
    assert b_u[0] == pytest.approx(-float(pairs["Beta-Uniform"][0].entropy()[0]), rel=1e-12)
    assert b_u[1] == math.inf
    # Pareto with alpha <= 1 has no mean: infinite against light-tailed q
    for label in ("Pareto-Exponential", "Pareto-Gamma"):
        v = kl(label)
        assert math.isfinite(v[0]) and v[1] == math.inf, label
    v = kl("Pareto-Normal")
    assert math.isfinite(v[0]) and v[1] == math.inf  # alpha = 1.5 <= 2: infinite variance
    p, q = (ft.distributions.Pareto(_t(1.0), _t(3.0)), ft.distributions.Exponential(_t(0.5)))
    assert kl("Pareto-Exponential")[0] == pytest.approx(_numeric_kl(p, q, 1.0, 1e5), rel=1e-8)
    for label in ("Normal-Uniform", "Laplace-Gamma", "Gumbel-Pareto", "Exponential-Beta",
                  "Gamma-Uniform", "Pareto-Beta", "Beta-Pareto", "Poisson-Bernoulli"):
        assert np.all(kl(label) == math.inf), label
    # discrete: Geometric on {0, 1, ...} and Bernoulli against Poisson, by summation
    k = np.arange(200)
    gp, gq = pairs["Geometric-Geometric"]
    lp, lq = (d.log_prob(ft.tensor(k, dtype=ft.float64)).numpy() for d in (gp, gq))
    assert float(kl("Geometric-Geometric")) == pytest.approx(np.sum(np.exp(lp) * (lp - lq)),
                                                             rel=1e-10)
    bp, pq = pairs["Bernoulli-Poisson"]
    lp = bp.log_prob(ft.tensor([0.0, 1.0], dtype=ft.float64)).numpy()
    lq = pq.log_prob(ft.tensor([0.0, 1.0], dtype=ft.float64)).numpy()
    assert float(kl("Bernoulli-Poisson")) == pytest.approx(np.sum(np.exp(lp) * (lp - lq)),
                                                           rel=1e-12)


def test_gradcheck_of_cross_family_forms():
    D = ft.distributions
    cases = [
        (lambda a, b, c, d: D.kl_divergence(D.Normal(a, b), D.Laplace(c, d)), [0.3, 1.2, 1.0, 2.0]),
        (lambda a, b, c, d: D.kl_divergence(D.Gamma(a, b), D.Gumbel(c, d)), [2.5, 1.2, 1.0, 1.5]),
        (lambda a, b, c, d: D.kl_divergence(D.Uniform(a, b), D.Beta(c, d)), [0.2, 0.7, 2.0, 3.0]),
        (lambda a, b, c, d: D.kl_divergence(D.Pareto(a, b), D.Normal(c, d)), [1.0, 3.5, 2.0, 1.0]),
    ]
    for fn, vals in cases:
        args = tuple(_t(v, grad=True) for v in vals)
        assert ft.autograd.gradcheck(fn, args)


def test_dispatch_errors_for_unregistered_pairs():
    D = ft.distributions
    with pytest.raises(NotImplementedError,
                       match="No KL\\(p \\|\\| q\\) is implemented for p type Laplace and q "
                             "type Gumbel"):
        D.kl_divergence(D.Laplace(_t(0.0), _t(1.0)), D.Gumbel(_t(0.0), _t(1.0)))


def test_registry_and_values_match_torch():
    torch = pytest.importorskip("torch")
    import torch.distributions.kl as pt_kl

    def names(reg, package):
        # (pairs other tests registered for their own classes are left out)
        return sorted(f"{p.__name__}-{q.__name__}" for p, q in reg
                      if p.__module__.startswith(package) and q.__module__.startswith(package))

    assert names(ft_kl._KL_REGISTRY, "ferrotorch.") == names(pt_kl._KL_REGISTRY, "torch.")
    for (label, p, q, params), (_, tp, tq, tparams) in zip(
            _pairs(ft, grad=True, with_params=True), _pairs(torch, grad=True, with_params=True)):
        ours = ft.distributions.kl_divergence(p, q)
        theirs = torch.distributions.kl_divergence(tp, tq)
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-10,
                                   atol=1e-12, err_msg=label)
        finite = np.isfinite(theirs.detach().numpy())
        if not finite.any() or not theirs.requires_grad:
            continue
        w = np.where(finite, 1.0, 0.0)
        g = ft.autograd.grad((ours * ft.tensor(w)).sum(), params, allow_unused=True)
        tg = torch.autograd.grad((theirs * torch.tensor(w)).sum(), tparams, allow_unused=True)
        for a, b in zip(g, tg):
            if b is None:
                assert a is None or float(a.abs().sum()) == 0.0, label
                continue
            # (PyTorch's float64 trigamma, in digamma's gradient, is off by ~1e-10: at 2.5
            # it gives 0.4903577562398 where pi^2/2 - 4 - 4/9 = 0.4903577561002.)
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-7, atol=1e-12,
                                       err_msg=label)
