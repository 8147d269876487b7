"""The orthogonal polynomials and airy_ai of ferrotorch.special, SobolEngine, binomial, and
householder_product / geqrf / ormqr / ldl_factor / ldl_solve.

Reference values: NumPy recurrences written from PyTorch's formulas, numbers hard-coded from
PyTorch 2.15 / SciPy; the comparisons with PyTorch itself skip where it is not installed."""

import math
import warnings

import numpy as np
import pytest

import ferrotorch as ft
from ferrotorch import _special_poly as sp
from ferrotorch._binomial import binomial
from ferrotorch._linalg_householder import geqrf, householder_product, orgqr, ormqr
from ferrotorch.quasirandom import SobolEngine

POLYS = [
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
    "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
    "laguerre_polynomial_l", "legendre_polynomial_p",
]


# ------------------------------------------------------------------ NumPy references


def _recur(x, n, q1, step):
    """Value at integer degree n >= 0 of p0 = 1, p1 = q1, p_{d} = step(d - 1, p, q)."""
    p, q = np.ones_like(x), q1
    if n == 0:
        return p
    for k in range(1, n):
        p, q = q, step(k, p, q)
    return q


def ref_poly(name, x, n):
    """PyTorch's value (its branches) for float64 scalar x and float n."""
    if not math.isfinite(n):
        return 0.0
    n = int(n)
    if n < 0:
        return 0.0
    x = float(x)
    shifted = name.startswith("shifted")
    kind = name.split("_")[-1]
    if name.startswith("chebyshev") or shifted:
        y = 2 * x - 1 if shifted else x
        one, minus_one = (x == 1, x == 0) if shifted else (x == 1, x == -1)
        odd = n % 2
        big = {"t": 6, "u": 6 if shifted else 8, "v": 6 if shifted else 8,
               "w": 4 if shifted else 8}[kind]
        if kind == "t":
            if one:
                return 1.0
            if minus_one:
                return -1.0 if odd else 1.0
            if n > big and abs(y) < 1:
                return math.cos(n * math.acos(y))
            q1 = y
        elif kind == "u":
            if one:
                return n + 1.0
            if minus_one:
                return -(n + 1.0) if odd else n + 1.0
            if n > big and abs(y) < 1:
                th = math.acos(y)
                return math.sin((n + 1) * th) / math.sin(th)
            q1 = 2 * y
        elif kind == "v":
            if one:
                return 1.0
            if minus_one:
                return -(2 * n + 1.0) if odd else 2 * n + 1.0
            if n > big and abs(y) < 1:
                th = math.acos(y)
                return math.cos((n + 0.5) * th) / math.cos(th / 2)
            q1 = 2 * y - 1
        else:
            if one:
                return 2 * n + 1.0
            if minus_one:
                return -1.0 if odd else 1.0
            if n > big and abs(y) < 1:
                th = math.acos(y)
                return math.sin((n + 0.5) * th) / math.sin(th / 2)
            q1 = 2 * y + 1
        return float(_recur(np.float64(y), n, np.float64(q1), lambda k, p, q: 2 * y * q - p))
    if name == "hermite_polynomial_h":
        return float(_recur(np.float64(x), n, np.float64(2 * x),
                            lambda k, p, q: 2 * x * q - 2 * k * p))
    if name == "hermite_polynomial_he":
        return float(_recur(np.float64(x), n, np.float64(x), lambda k, p, q: x * q - k * p))
    if name == "laguerre_polynomial_l":
        if x == 0:
            return 1.0
        return float(_recur(np.float64(x), n, np.float64(1 - x),
                            lambda k, p, q: ((2 * k + 1 - x) * q - k * p) / (k + 1)))
    if x == 1:
        return 1.0
    if x == -1:
        return -1.0 if n % 2 else 1.0
    return float(_recur(np.float64(x), n, np.float64(x),
                        lambda k, p, q: ((2 * k + 1) * x * q - k * p) / (k + 1)))


XS = [-3.0, -1.5, -1.0, -0.999, -0.7, -0.5, -0.1, 0.0, 0.1, 0.25, 0.3, 0.5, 0.75, 0.9,
      0.9999, 1.0, 1.2, 2.5]
NS = list(range(-2, 56)) + [2.5, 7.9, -0.5]


@pytest.mark.parametrize("name", POLYS)
def test_poly_grid_float64(name):
    x = np.repeat(np.array(XS)[:, None], len(NS), 1)
    n = np.repeat(np.array(NS, dtype=np.float64)[None, :], len(XS), 0)
    got = getattr(sp, name)(ft.tensor(x), ft.tensor(n))
    assert got.dtype == ft.float64 and tuple(got.shape) == x.shape
    ref = np.vectorize(lambda a, b: ref_poly(name, a, b))(x, n)
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", POLYS)
def test_poly_float32(name):
    x = np.array([-0.7, -0.3, 0.0, 0.2, 0.45, 0.8, 1.0, 1.1], dtype=np.float32)
    for n in [0, 1, 2, 3, 5, 9, 12]:
        got = getattr(sp, name)(ft.tensor(x), n)
        assert got.dtype == ft.float32
        ref = np.array([ref_poly(name, float(a), n) for a in x])
        np.testing.assert_allclose(got.numpy(), ref, rtol=1e-4, atol=1e-4)


def test_poly_known_values():
    x = ft.tensor([0.5], dtype=ft.float64)
    assert sp.chebyshev_polynomial_t(x, 3).item() == pytest.approx(-1.0)
    assert sp.chebyshev_polynomial_u(x, 2).item() == pytest.approx(0.0, abs=1e-15)
    assert sp.chebyshev_polynomial_v(x, 1).item() == pytest.approx(0.0)
    assert sp.chebyshev_polynomial_w(x, 1).item() == pytest.approx(2.0)
    assert sp.hermite_polynomial_h(x, 3).item() == pytest.approx(-5.0)      # 8x^3 - 12x
    assert sp.hermite_polynomial_he(ft.tensor(2.0), 3).item() == pytest.approx(2.0)
    assert sp.laguerre_polynomial_l(ft.tensor(1.0), 2).item() == pytest.approx(-0.5)
    assert sp.legendre_polynomial_p(x, 2).item() == pytest.approx(-0.125)
    assert sp.shifted_chebyshev_polynomial_t(ft.tensor(0.75), 2).item() == pytest.approx(-0.5)
    # The large-n trigonometric branch.
    assert sp.chebyshev_polynomial_t(ft.tensor(0.3, dtype=ft.float64), 50).item() == \
        pytest.approx(math.cos(50 * math.acos(0.3)), rel=1e-12)
    # Outside [-1, 1] the recurrence: T_10(2.5) = cosh(10 acosh 2.5).
    assert sp.chebyshev_polynomial_t(ft.tensor(2.5, dtype=ft.float64), 10).item() == \
        pytest.approx(math.cosh(10 * math.acosh(2.5)), rel=1e-12)


def test_poly_special_n():
    x = ft.tensor([0.5, 0.5, 0.5, 0.5, -1.0, 1.0])
    n = ft.tensor([-1.0, math.nan, math.inf, -math.inf, 3.0, 3.0])
    assert sp.chebyshev_polynomial_t(x, n).tolist() == [0.0, 0.0, 0.0, 0.0, -1.0, 1.0]
    assert sp.chebyshev_polynomial_u(x, n).tolist() == [0.0, 0.0, 0.0, 0.0, -4.0, 4.0]
    assert sp.legendre_polynomial_p(ft.tensor([-1.0, -1.0]), ft.tensor([1.0, 2.0])).tolist() \
        == [-1.0, 1.0]
    # n truncates toward zero: 2.9 -> 2, -0.5 -> 0.
    assert sp.legendre_polynomial_p(ft.tensor(0.5), 2.9).item() == pytest.approx(-0.125)
    assert sp.hermite_polynomial_h(ft.tensor(0.5), -0.5).item() == 1.0
    # NaN x propagates; a huge n with |x| < 1 stays on the trigonometric branch (no loop).
    assert math.isnan(sp.chebyshev_polynomial_t(ft.tensor(math.nan), 4).item())
    big = sp.chebyshev_polynomial_t(ft.tensor([0.5, 0.3], dtype=ft.float64), 1e12)
    np.testing.assert_allclose(big.numpy(), [math.cos(1e12 * math.acos(0.5)),
                                             math.cos(1e12 * math.acos(0.3))], rtol=1e-6)
    # Overflowing recurrences end in NaN, as PyTorch's.
    assert math.isnan(sp.hermite_polynomial_h(ft.tensor(0.5), 100000).item())


def test_poly_dtypes_and_shapes():
    f = sp.chebyshev_polynomial_t
    assert f(ft.tensor([1, 2]), ft.tensor([3])).dtype == ft.float32
    assert f(ft.tensor([1, 2]), ft.tensor([3])).tolist() == [1.0, 26.0]
    assert f(ft.tensor([True, False]), 3).tolist() == [1.0, 0.0]
    assert f(ft.tensor([0.5, 2.0]), ft.tensor(3.0, dtype=ft.float64)).dtype == ft.float32
    assert f(ft.tensor([0.5, 2.0]), ft.tensor([3.0], dtype=ft.float64)).dtype == ft.float64
    assert f(0.5, ft.tensor([3, 4])).tolist() == [-1.0, -0.5]
    assert f(ft.tensor([0.5], dtype=ft.float64), 3).dtype == ft.float64
    # Broadcasting (3, 1) with (4,), non-contiguous inputs, 0-d and empty tensors.
    x = ft.arange(12.0).reshape(3, 4).t() / 10
    assert not x.is_contiguous()
    got = sp.legendre_polynomial_p(x, ft.arange(4.0)[:, None])
    ref = np.vectorize(lambda a, b: ref_poly("legendre_polynomial_p", a, b))(
        x.numpy().astype(np.float64), np.arange(4.0)[:, None])
    assert tuple(got.shape) == (4, 3)
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-5, atol=1e-6)
    got = sp.hermite_polynomial_he(ft.tensor([[0.5], [2.0]]), ft.tensor([2.0, 3.0]))
    np.testing.assert_allclose(got.numpy(), [[-0.75, -1.375], [3.0, 2.0]], rtol=1e-6)
    zero_d = f(ft.tensor(0.3), ft.tensor(3))
    assert zero_d.shape == () and zero_d.item() == pytest.approx(-0.792, rel=1e-6)
    assert tuple(f(ft.empty(0, 3), 3).shape) == (0, 3)
    assert tuple(sp.airy_ai(ft.empty(0)).shape) == (0,)


def test_poly_errors_and_grad():
    f = sp.chebyshev_polynomial_t
    with pytest.raises(TypeError):
        f(0.5, 3)
    with pytest.raises(NotImplementedError):
        f(ft.tensor([0.5], dtype=ft.float16), 3)
    with pytest.raises(RuntimeError):
        f(ft.ones(2, 3), ft.ones(4))
    with pytest.raises(RuntimeError, match="can't be cast"):
        f(ft.tensor([0.5, 2.0]), 3, out=ft.empty(2, dtype=ft.int64))
    with pytest.raises(TypeError):
        sp.airy_ai(1.0)
    with pytest.raises(TypeError):
        f(ft.tensor([0.5]))
    # PyTorch's keyword is x (its docs say input): both work.
    assert f(x=ft.tensor([0.5]), n=3).tolist() == [-1.0]
    assert f(input=ft.tensor([0.5]), n=3).tolist() == [-1.0]
    assert sp.airy_ai(x=ft.tensor([0.0])).item() == pytest.approx(0.3550280538878172)
    out = ft.empty(2, dtype=ft.float64)
    assert f(ft.tensor([0.5, 2.0]), 3, out=out) is out
    assert out.tolist() == [-1.0, 26.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = ft.empty(5)
        f(ft.tensor([0.5, 2.0]), 3, out=out)
    assert out.tolist() == [-1.0, 26.0]
    # Not differentiable, as in PyTorch: the result does not require grad.
    x = ft.tensor([0.5, 0.3], requires_grad=True)
    for name in POLYS:
        assert not getattr(sp, name)(x, 3).requires_grad
    assert not sp.airy_ai(x).requires_grad


def test_special_namespace_exports():
    import ferrotorch.special as S

    for name in POLYS + ["airy_ai"]:
        assert getattr(S, name) is getattr(sp, name)
        assert name in S.__all__


AIRY_X = [-20.0, -5.0, -2.5, -1.0, 0.0, 0.5, 1.0, 2.5, 5.0, 10.0]
# PyTorch 2.15 (Cephes) values; SciPy agrees to ~1e-15 except at -2.5 (Cephes: ~2e-7).
AIRY_TORCH = [-0.17640612707798525, 0.35076100902415286, -0.11232483666261353,
              0.5355608832923521, 0.3550280538878172, 0.23169360648083345,
              0.13529241631288144, 0.015725923380470484, 0.00010834442813607433,
              1.1047532552898654e-10]


def test_airy_ai_values():
    got = sp.airy_ai(ft.tensor(AIRY_X, dtype=ft.float64))
    np.testing.assert_allclose(got.numpy(), AIRY_TORCH, rtol=1e-12)
    got32 = sp.airy_ai(ft.tensor(AIRY_X))
    assert got32.dtype == ft.float32
    np.testing.assert_allclose(got32.numpy(), AIRY_TORCH, rtol=1e-4, atol=1e-7)
    special = sp.airy_ai(ft.tensor([104.0, 200.0, math.nan, math.inf, -math.inf])).tolist()
    assert special[:2] == [0.0, 0.0] and all(math.isnan(v) for v in special[2:])
    assert sp.airy_ai(ft.tensor([1, 2])).dtype == ft.float32
    assert sp.airy_ai(ft.tensor([1, 2])).tolist() == pytest.approx(
        [0.13529241631288144, 0.03492413042327437], rel=1e-5)


# ------------------------------------------------------------------ SobolEngine


def test_sobol_unscrambled_values():
    eng = SobolEngine(3)
    pts = eng.draw(5)
    assert pts.dtype == ft.float32 and tuple(pts.shape) == (5, 3)
    assert pts.tolist() == [[0.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.75, 0.25, 0.25],
                            [0.25, 0.75, 0.75], [0.375, 0.375, 0.625]]
    assert eng.draw(3, dtype=ft.float64).tolist() == [
        [0.875, 0.875, 0.125], [0.625, 0.125, 0.875], [0.125, 0.625, 0.375]]
    assert eng.num_generated == 8
    state = SobolEngine(8).sobolstate[:, :4].tolist()
    assert state == [[536870912, 268435456, 134217728, 67108864],
                     [536870912, 805306368, 671088640, 1006632960],
                     [536870912, 805306368, 402653184, 603979776],
                     [536870912, 805306368, 134217728, 335544320],
                     [536870912, 268435456, 134217728, 738197504],
                     [536870912, 268435456, 402653184, 201326592],
                     [536870912, 805306368, 671088640, 872415232],
                     [536870912, 268435456, 671088640, 335544320]]
    eng = SobolEngine(5).fast_forward(100)
    assert eng.draw(4, dtype=ft.float64).tolist() == [
        [0.4140625, 0.2578125, 0.7734375, 0.7265625, 0.8828125],
        [0.9140625, 0.7578125, 0.2734375, 0.2265625, 0.3828125],
        [0.6640625, 0.0078125, 0.5234375, 0.9765625, 0.1328125],
        [0.1640625, 0.5078125, 0.0234375, 0.4765625, 0.6328125]]
    # The last dimensions of the shipped table.
    eng = SobolEngine(1111).fast_forward(7)
    assert eng.draw(2, dtype=ft.float64)[:, -3:].tolist() == [[0.875, 0.125, 0.625],
                                                             [0.8125, 0.0625, 0.3125]]


def test_sobol_draw_consistency():
    full = SobolEngine(6).draw(40, dtype=ft.float64)
    eng = SobolEngine(6)
    parts = [eng.draw(1, dtype=ft.float64), eng.draw(7, dtype=ft.float64),
             eng.draw(0, dtype=ft.float64), eng.draw(12, dtype=ft.float64)]
    eng.fast_forward(5)
    parts.append(eng.draw(15, dtype=ft.float64))
    got = ft.cat(parts[:4] + [parts[4]], 0).numpy()
    ref = full.numpy()
    np.testing.assert_array_equal(got[:20], ref[:20])
    np.testing.assert_array_equal(got[20:], ref[25:])
    eng.reset()
    assert eng.num_generated == 0
    np.testing.assert_array_equal(eng.draw(10, dtype=ft.float64).numpy(), ref[:10])
    eng.reset()
    np.testing.assert_array_equal(eng.draw_base2(3, dtype=ft.float64).numpy(), ref[:8])
    np.testing.assert_array_equal(eng.draw_base2(3, dtype=ft.float64).numpy(), ref[8:16])
    with pytest.raises(ValueError, match="power of 2"):
        eng.draw_base2(2)
    out = ft.empty(0)
    res = SobolEngine(6).draw(4, out=out)
    assert res is out and out.numpy().tolist() == ref[:4].astype(np.float32).tolist()
    # Stratification: every dyadic interval of length 1/16 holds 1/16 of 2^8 points.
    pts = SobolEngine(10).draw(256, dtype=ft.float64).numpy()
    counts = np.stack([np.histogram(pts[:, d], bins=16, range=(0, 1))[0] for d in range(10)])
    assert (counts == 16).all()


def test_sobol_scrambled():
    a = SobolEngine(5, scramble=True, seed=7).draw(512)
    b = SobolEngine(5, scramble=True, seed=7).draw(512)
    c = SobolEngine(5, scramble=True, seed=8).draw(512)
    assert ft.equal(a, b) and not ft.equal(a, c)
    pts = a.numpy()
    assert pts.min() >= 0 and pts.max() < 1
    counts = np.stack([np.histogram(pts[:, d], bins=32, range=(0, 1))[0] for d in range(5)])
    assert (counts == 16).all()   # scrambling keeps the (t, m, s)-net balance
    assert abs(pts.mean() - 0.5) < 0.01
    assert not (pts[0] == 0).all()
    eng = SobolEngine(3, scramble=True, seed=1)
    first = eng.draw(4)
    eng.reset()
    assert ft.equal(eng.draw(4), first)
    assert repr(eng) == "SobolEngine(dimension=3, scramble=True, seed=1)"


def test_sobol_errors():
    with pytest.raises(ValueError, match="non-negative"):
        SobolEngine(2).draw(-1)
    with pytest.raises(ValueError, match=r"\[1, 21201\]"):
        SobolEngine(0)
    with pytest.raises(ValueError):
        SobolEngine(21202)
    with pytest.raises(NotImplementedError, match="1111"):
        SobolEngine(1112)


# ------------------------------------------------------------------ binomial


@pytest.mark.parametrize("n,p", [(5.0, 0.3), (30.0, 0.5), (1000.0, 0.01), (1000.0, 0.97),
                                 (100000.0, 0.4), (7.0, 0.95)])
def test_binomial_moments(n, p):
    g = ft.Generator()
    g.manual_seed(1234)
    size = 100000
    s = binomial(ft.full((size,), n, dtype=ft.float64), ft.full((size,), p, dtype=ft.float64),
                 generator=g)
    assert s.dtype == ft.float64
    vals = s.numpy()
    assert (vals == np.round(vals)).all() and vals.min() >= 0 and vals.max() <= n
    mean, var = n * p, n * p * (1 - p)
    assert abs(vals.mean() - mean) < 5 * math.sqrt(var / size)
    assert abs(vals.var() / var - 1) < 0.03
    if n <= 30:   # the whole pmf
        freq = np.bincount(vals.astype(np.int64), minlength=int(n) + 1) / size
        pmf = np.array([math.comb(int(n), k) * p ** k * (1 - p) ** (n - k)
                        for k in range(int(n) + 1)])
        assert np.abs(freq - pmf).max() < 0.006


def test_binomial_rules():
    g = ft.Generator()
    g.manual_seed(0)
    a = binomial(ft.full((6,), 50.0), ft.full((6,), 0.3), generator=g)
    g.manual_seed(0)
    b = binomial(ft.full((6,), 50.0), ft.full((6,), 0.3), generator=g)
    assert ft.equal(a, b) and a.dtype == ft.float32
    r = binomial(ft.tensor([[10.0], [20.0]]), ft.tensor([0.5, 0.1]))
    assert tuple(r.shape) == (2, 2)
    r = binomial(ft.tensor([10.0, -20.0, 5.0, 5.0, 5.0, 0.0]),
                 ft.tensor([0.5, 0.2, -0.1, 1.5, math.nan, 1.0]))
    vals = r.tolist()
    assert vals[1:4] == [0.0, 0.0, 5.0] and math.isnan(vals[4]) and vals[5] == 0.0
    assert tuple(binomial(ft.empty(0), ft.empty(0)).shape) == (0,)
    with pytest.raises(ValueError, match="floating-point"):
        binomial(ft.tensor([10, 20]), ft.tensor([0.5, 0.2]))
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        binomial(ft.tensor([10.0]), ft.tensor([0.5], dtype=ft.float64))
    with pytest.raises(TypeError):
        binomial(ft.tensor([10.0]), 0.5)
    with pytest.raises(NotImplementedError):
        binomial(ft.tensor([10.0], dtype=ft.float16), ft.tensor([0.5], dtype=ft.float16))
    x = ft.tensor([10.0, 20.0], requires_grad=True)
    r = binomial(x, ft.tensor([0.5, 0.2]))
    with pytest.raises(RuntimeError, match="derivative for 'binomial' is not implemented"):
        r.sum().backward()


def test_distribution_binomial_sample_moments():
    ft.manual_seed(5)
    d = ft.distributions.Binomial(total_count=ft.tensor([20.0, 400.0]),
                                  probs=ft.tensor([0.3, 0.6]))
    s = d.sample((20000,)).numpy()
    np.testing.assert_allclose(s.mean(0), [6.0, 240.0], rtol=0.02)
    np.testing.assert_allclose(s.var(0), [4.2, 96.0], rtol=0.06)


# ------------------------------------------------------------------ Householder / LDL


def _np_householder(A, tau, full=False):
    m, n = A.shape
    Q = np.eye(m)
    for i in range(len(tau)):
        v = np.zeros(m)
        v[i] = 1
        v[i + 1:] = A[i + 1:, i]
        Q = Q @ (np.eye(m) - tau[i] * np.outer(v, v))
    return Q if full else Q[:, :n]


def test_householder_product():
    rng = np.random.default_rng(0)
    for shape, k in [((4, 3), 2), ((5, 5), 5), ((6, 2), 2), ((3, 3), 0)]:
        A, tau = rng.standard_normal(shape), rng.standard_normal(k)
        got = householder_product(ft.tensor(A), ft.tensor(tau))
        np.testing.assert_allclose(got.numpy(), _np_householder(A, tau), atol=1e-12)
    A, tau = rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 3))
    got = orgqr(ft.tensor(A), ft.tensor(tau)).numpy()
    for b in range(2):
        np.testing.assert_allclose(got[b], _np_householder(A[b], tau[b]), atol=1e-12)
    At = ft.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    tt = ft.tensor(rng.standard_normal(2), requires_grad=True)
    householder_product(At, tt).sum().backward()
    assert At.grad is not None and tt.grad is not None
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        householder_product(ft.randn(3), ft.randn(1))
    with pytest.raises(RuntimeError, match="greater than or equal to input.shape"):
        householder_product(ft.randn(2, 3), ft.randn(2))
    with pytest.raises(RuntimeError, match="tau.shape"):
        householder_product(ft.randn(4, 3), ft.randn(4))
    with pytest.raises(RuntimeError, match="dtype"):
        householder_product(ft.randn(4, 3), ft.randn(2, dtype=ft.float64))


def test_geqrf_ormqr():
    rng = np.random.default_rng(1)
    for shape in [(5, 3), (3, 5), (4, 4), (2, 4, 3)]:
        A = rng.standard_normal(shape)
        a, tau = geqrf(ft.tensor(A))
        m, n = shape[-2:]
        k = min(m, n)
        an, tn = a.numpy().reshape(-1, m, n), tau.numpy().reshape(-1, k)
        for b in range(an.shape[0]):
            Q = _np_householder(an[b], tn[b], full=True)
            R = np.triu(an[b])
            np.testing.assert_allclose(Q @ R, A.reshape(-1, m, n)[b], atol=1e-12)
            np.testing.assert_allclose(Q.T @ Q, np.eye(m), atol=1e-12)
            C = rng.standard_normal((m, 2))
            got = ormqr(a.reshape(-1, m, n)[b], tau.reshape(-1, k)[b], ft.tensor(C)).numpy()
            np.testing.assert_allclose(got, Q @ C, atol=1e-12)
            got = ormqr(a.reshape(-1, m, n)[b], tau.reshape(-1, k)[b], ft.tensor(C),
                        transpose=True).numpy()
            np.testing.assert_allclose(got, Q.T @ C, atol=1e-12)
            got = ormqr(a.reshape(-1, m, n)[b], tau.reshape(-1, k)[b], ft.tensor(C.T),
                        left=False).numpy()
            np.testing.assert_allclose(got, C.T @ Q, atol=1e-12)
    a, tau = geqrf(ft.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
    # PyTorch 2.15: a[0] = (-5.9161, -7.4374), tau = (1.1690, 1.1131).
    np.testing.assert_allclose(tau.numpy(), [1.1690, 1.1131], atol=1e-4)
    np.testing.assert_allclose(a.numpy()[0], [-5.9161, -7.4374], atol=1e-4)
    np.testing.assert_allclose(a.numpy()[1:, 0], [0.4338, 0.7230], atol=1e-4)
    x = ft.randn(4, 3, requires_grad=True)
    with pytest.raises(NotImplementedError, match="geqrf"):
        geqrf(x).a.sum().backward()
    with pytest.raises(RuntimeError, match="other.shape"):
        ormqr(a, tau, ft.randn(4, 2))


def _ldl_reconstruct(LD, piv):
    """A from LAPACK's sytrf (lower) output: A = P1 L1 P2 L2 ... D ... (product form)."""
    n = LD.shape[0]
    D = np.zeros((n, n))
    M = np.eye(n)
    k = 0
    while k < n:
        if piv[k] > 0:
            p, step = piv[k] - 1, 1
        else:
            p, step = -piv[k] - 1, 2
        P = np.eye(n)
        kk = k + step - 1
        P[[kk, p]] = P[[p, kk]]
        L = np.eye(n)
        L[k + step:, k:k + step] = LD[k + step:, k:k + step]
        D[k:k + step, k:k + step] = LD[k:k + step, k:k + step]
        if step == 2:
            D[k, k + 1] = D[k + 1, k]
        M = M @ P @ L
        k += step
    return M @ D @ M.T


def test_ldl_factor_values_and_solve():
    A = np.array([[1.0, 2, 3, 4], [2, -1, 0, 5], [3, 0, 0.5, -2], [4, 5, -2, 0.25]])
    LD, piv = ft.linalg.ldl_factor(ft.tensor(A))
    assert piv.dtype == ft.int32 and piv.tolist() == [-4, -4, 3, 4]
    np.testing.assert_allclose(LD.numpy(), [
        [1.0, 0.0, 0.0, 0.0], [4.0, 0.25, 0.0, 0.0],
        [-0.5555555555555556, 0.8888888888888888, 3.9444444444444446, 0.0],
        [1.2380952380952381, 0.19047619047619047, -0.8450704225352113, -7.245472837022133]],
        rtol=1e-13)
    np.testing.assert_allclose(_ldl_reconstruct(LD.numpy(), piv.tolist()), A, atol=1e-12)
    B = np.arange(8.0).reshape(4, 2)
    X = ft.linalg.ldl_solve(LD, piv, ft.tensor(B)).numpy()
    np.testing.assert_allclose(A @ X, B, atol=1e-12)
    rng = np.random.default_rng(2)
    for n in [1, 2, 5, 9]:
        for dtype, tol in [(np.float64, 1e-10), (np.float32, 1e-3)]:
            M = rng.standard_normal((3, n, n)).astype(dtype)
            res = ft.linalg.ldl_factor_ex(ft.tensor(M))
            assert res.info.tolist() == [0, 0, 0] and res.LD.dtype == ft.tensor(M).dtype
            Bt = rng.standard_normal((n, 2)).astype(dtype)
            X = ft.linalg.ldl_solve(res.LD, res.pivots, ft.tensor(Bt)).numpy()
            for b in range(3):
                sym = np.tril(M[b]) + np.tril(M[b], -1).T   # only the lower triangle is read
                np.testing.assert_allclose(
                    _ldl_reconstruct(res.LD.numpy()[b].astype(np.float64),
                                     res.pivots.numpy()[b].tolist()), sym,
                    atol=tol * 10)
                np.testing.assert_allclose(sym @ X[b], Bt, atol=tol * 10 * n)
                assert (np.triu(res.LD.numpy()[b], 1) == 0).all()


def test_ldl_special_and_errors():
    res = ft.linalg.ldl_factor_ex(ft.zeros(3, 3))
    assert res.pivots.tolist() == [1, 2, 3] and res.info.item() == 1
    assert res.info.dtype == ft.int32 and res.info.shape == ()
    res = ft.linalg.ldl_factor_ex(ft.tensor([[0.0, 1.0], [1.0, 0.0]]))
    assert res.LD.tolist() == [[0.0, 0.0], [1.0, 0.0]] and res.pivots.tolist() == [-2, -2]
    with pytest.raises(RuntimeError):
        ft.linalg.ldl_factor(ft.zeros(3, 3))
    with pytest.raises(RuntimeError):
        ft.linalg.ldl_factor_ex(ft.zeros(3, 3), check_errors=True)
    with pytest.raises(RuntimeError, match="square"):
        ft.linalg.ldl_factor(ft.randn(3, 4))
    with pytest.raises(RuntimeError, match="at least 2"):
        ft.linalg.ldl_factor(ft.randn(3))
    with pytest.raises(NotImplementedError):
        ft.linalg.ldl_factor(ft.ones(3, 3, dtype=ft.int32))
    LD, piv = ft.linalg.ldl_factor(ft.eye(4) * 2)
    with pytest.raises(RuntimeError, match="Incompatible"):
        ft.linalg.ldl_solve(LD, piv, ft.randn(3, 2))
    with pytest.raises(IndexError):
        ft.linalg.ldl_solve(LD, piv, ft.randn(4))
    with pytest.raises(RuntimeError, match="same dtype"):
        ft.linalg.ldl_solve(LD, piv, ft.randn(4, 2, dtype=ft.float64))
    X = ft.linalg.ldl_solve(LD, piv, ft.ones(2, 4, 3))
    assert tuple(X.shape) == (2, 4, 3) and np.allclose(X.numpy(), 0.5)


# ------------------------------------------------------------------ against PyTorch


def test_against_torch_polys_airy():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.uniform(-1.5, 1.5, 200), [-1, 0, 1, 0.5, -0.5]])
    n = rng.integers(-2, 40, x.shape).astype(np.float64)
    for name in POLYS:
        t = getattr(torch.special, name)(torch.tensor(x), torch.tensor(n)).numpy()
        f = getattr(sp, name)(ft.tensor(x), ft.tensor(n)).numpy()
        np.testing.assert_allclose(f, t, rtol=1e-8, atol=1e-10, err_msg=name)
    xa = np.linspace(-12, 12, 301)
    np.testing.assert_allclose(sp.airy_ai(ft.tensor(xa)).numpy(),
                               torch.special.airy_ai(torch.tensor(xa)).numpy(),
                               rtol=1e-10, atol=1e-300)


def test_against_torch_sobol():
    torch = pytest.importorskip("torch")
    for dim in [1, 7, 300]:
        a, b = torch.quasirandom.SobolEngine(dim), SobolEngine(dim)
        np.testing.assert_array_equal(a.sobolstate.numpy(), b.sobolstate.numpy())
        for n in [1, 9, 33]:
            np.testing.assert_array_equal(a.draw(n).numpy(), b.draw(n).numpy())
        a.fast_forward(17)
        b.fast_forward(17)
        np.testing.assert_array_equal(a.draw(5, dtype=torch.float64).numpy(),
                                      b.draw(5, dtype=ft.float64).numpy())


def test_against_torch_linalg():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    for n in [3, 6, 12]:
        A = rng.standard_normal((2, n, n))
        t = torch.linalg.ldl_factor_ex(torch.tensor(A))
        f = ft.linalg.ldl_factor_ex(ft.tensor(A))
        np.testing.assert_array_equal(f.pivots.numpy(), t.pivots.numpy())
        np.testing.assert_allclose(f.LD.numpy(), t.LD.numpy(), rtol=1e-9, atol=1e-12)
        B = rng.standard_normal((n, 2))
        np.testing.assert_allclose(
            ft.linalg.ldl_solve(f.LD, f.pivots, ft.tensor(B)).numpy(),
            torch.linalg.ldl_solve(t.LD, t.pivots, torch.tensor(B)).numpy(), rtol=1e-8)
        ta, ttau = torch.geqrf(torch.tensor(A))
        fa, ftau = geqrf(ft.tensor(A))
        np.testing.assert_allclose(fa.numpy(), ta.numpy(), atol=1e-10)
        np.testing.assert_allclose(ftau.numpy(), ttau.numpy(), atol=1e-10)
        np.testing.assert_allclose(householder_product(fa, ftau).numpy(),
                                   torch.linalg.householder_product(ta, ttau).numpy(),
                                   atol=1e-10)
    A = rng.standard_normal((5, 3))
    tau = rng.standard_normal(3)
    At = torch.tensor(A, requires_grad=True)
    tt = torch.tensor(tau, requires_grad=True)
    (torch.linalg.householder_product(At, tt) ** 2 * torch.arange(15.0).reshape(5, 3)).sum() \
        .backward()
    Af = ft.tensor(A, requires_grad=True)
    tf = ft.tensor(tau, requires_grad=True)
    (householder_product(Af, tf) ** 2 * ft.arange(15.0).reshape(5, 3)).sum().backward()
    np.testing.assert_allclose(Af.grad.numpy(), At.grad.numpy(), atol=1e-10)
    np.testing.assert_allclose(tf.grad.numpy(), tt.grad.numpy(), atol=1e-10)
