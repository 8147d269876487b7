"""``ferrotorch.special``: i1, i1e, erfcx and the bessel_* / modified_bessel_* family.

Without PyTorch: against references computed here in high precision (``decimal``, 40+
digits) from the defining power series (A&S 9.1.10-11, 9.6.10-11) and, for ``erfcx``, the
``erf`` series or the Laplace continued fraction; the special values; gradcheck of the
differentiable ones. With PyTorch installed: random inputs over wide ranges against
``torch.special``.

PyTorch's ``bessel_j0/j1/y0/y1`` evaluate Cephes' monic denominators (``p1evl``) without
their leading 1, which costs them up to ~1e-6 absolute accuracy between 3 and 10; ferrotorch
follows Cephes (the references below agree to ~1e-15), so those four are compared with
PyTorch to 2e-6 absolute only."""

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest

import ferrotorch as ft
import ferrotorch.special as S
from ferrotorch.autograd import gradcheck

PI = Decimal("3.14159265358979323846264338327950288419716939937510582097494459")
EULER = Decimal("0.57721566490153286060651209008240243104215933593992359880576723")


# ------------------------------------------------------------- high-precision references
def _prec(x):
    # enough digits for the cancellation of series terms as large as e^|x|
    return 45 + int(abs(x) * 0.9)


def _series(x, n, alternating, weight=lambda k: 1):
    """sum_k (+-1)^k weight(k) (x/2)^(2k+n) / (k! (k+n)!)."""
    half = Decimal(x) / 2
    q = half * half
    term = half ** n / math.factorial(n)
    total = Decimal(0)
    k = 0
    while True:
        contrib = term * weight(k)
        total += -contrib if (alternating and k % 2) else contrib
        if k > 10 and abs(term) < Decimal(10) ** (-_prec(x)) * (1 + abs(total)):
            return total
        k += 1
        term = term * q / (k * (k + n))


def _harmonic(k):
    return sum((Decimal(1) / j for j in range(1, k + 1)), Decimal(0))


def _psi1(k):  # digamma(k + 1)
    return _harmonic(k) - EULER


def ref(name, x):
    """High-precision value of ``name`` at the float ``x`` (a float)."""
    with localcontext() as ctx:
        # (erfcx's continued fraction has no cancellation; the series need more digits)
        ctx.prec = 60 if name == "erfcx" else _prec(x)
        d = Decimal(x)
        if name == "bessel_j0":
            v = _series(x, 0, True)
        elif name == "bessel_j1":
            v = _series(x, 1, True)
        elif name in ("modified_bessel_i0", "i0"):
            v = _series(x, 0, False)
        elif name in ("modified_bessel_i1", "i1"):
            v = _series(x, 1, False)
        elif name == "i1e":
            v = _series(x, 1, False) * (-abs(d)).exp()
        elif name == "bessel_y0":
            log = (d / 2).ln() + EULER
            v = 2 / PI * (log * _series(x, 0, True)
                          + _series(x, 0, True, lambda k: -_harmonic(k)))
        elif name == "bessel_y1":
            v = (-2 / (PI * d) + 2 / PI * (d / 2).ln() * _series(x, 1, True)
                 - _series(x, 1, True, lambda k: _psi1(k) + _psi1(k + 1)) / PI)
        elif name in ("modified_bessel_k0", "scaled_modified_bessel_k0"):
            v = (-((d / 2).ln() + EULER) * _series(x, 0, False)
                 + _series(x, 0, False, _harmonic))
            if name.startswith("scaled"):
                v *= d.exp()
        elif name in ("modified_bessel_k1", "scaled_modified_bessel_k1"):
            v = (1 / d + (d / 2).ln() * _series(x, 1, False)
                 - _series(x, 1, False, lambda k: _psi1(k) + _psi1(k + 1)) / 2)
            if name.startswith("scaled"):
                v *= d.exp()
        elif name == "spherical_bessel_j0":
            v = _series(x, 0, True, lambda k: Decimal(2) ** (2 * k) * math.factorial(k) ** 2
                        / math.factorial(2 * k + 1))
        elif name == "erfcx":
            v = _erfcx_ref(d)
        else:
            raise KeyError(name)
        return float(v)


def _erfcx_ref(d):
    if d < 0:
        return 2 * (d * d).exp() - _erfcx_ref(-d)
    if d > 6:
        # erfc(x) e^(x^2) = 1/sqrt(pi) 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))
        tail = d
        for k in range(400, 0, -1):
            tail = d + Decimal(k) / 2 / tail
        return 1 / (PI.sqrt() * tail)
    # erf(x) = 2/sqrt(pi) sum (-1)^k x^(2k+1) / (k! (2k+1))
    total, term, k = Decimal(0), d, 0
    while abs(term) > Decimal(10) ** -80:
        total += term / (2 * k + 1)
        k += 1
        term = -term * d * d / k
    erf = 2 / PI.sqrt() * total
    return (d * d).exp() * (1 - erf)


POSITIVE = [1e-3, 0.1, 0.5, 1.0, 2.0, 2.5, 3.0, 4.9, 5.0, 5.1, 6.0, 7.9, 8.0, 8.1, 10.0,
            15.0, 25.0, 40.0]
EVERYWHERE = sorted(POSITIVE + [-v for v in POSITIVE])

CASES = {
    "i1": EVERYWHERE,
    "i1e": EVERYWHERE,
    "modified_bessel_i0": EVERYWHERE,
    "modified_bessel_i1": EVERYWHERE,
    "bessel_j0": EVERYWHERE,
    "bessel_j1": EVERYWHERE,
    "bessel_y0": POSITIVE,
    "bessel_y1": POSITIVE,
    "modified_bessel_k0": POSITIVE,
    "modified_bessel_k1": POSITIVE,
    "scaled_modified_bessel_k0": POSITIVE,
    "scaled_modified_bessel_k1": POSITIVE,
    "spherical_bessel_j0": EVERYWHERE,
    "erfcx": EVERYWHERE + [-26.0, 60.0, 1e3, 1e6],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_against_high_precision_series(name):
    xs = CASES[name]
    expected = np.array([ref(name, x) for x in xs])
    got = getattr(S, name)(ft.tensor(xs, dtype=ft.float64)).numpy()
    # relative accuracy, or absolute near the zeros of the oscillating functions
    np.testing.assert_allclose(got, expected, rtol=2e-14, atol=2e-16)
    xs32 = [float(np.float32(x)) for x in xs]
    expected = np.array([ref(name, x) for x in xs32])  # at the float32-rounded points
    got32 = getattr(S, name)(ft.tensor(xs32, dtype=ft.float32)).numpy()
    assert got32.dtype == np.float32
    fin = np.abs(expected) < 3e38
    np.testing.assert_allclose(got32[fin], expected[fin], rtol=2e-6, atol=5e-7)


def test_reference_sanity():
    # the references themselves against values known independently
    assert abs(ref("modified_bessel_i0", 1.7) - float(np.i0(1.7))) < 1e-15
    assert abs(ref("bessel_j0", 2.404825557695773)) < 1e-15  # the first zero of J0
    assert abs(ref("bessel_j1", 3.8317059702075125)) < 1e-15  # the first zero of J1
    assert abs(ref("spherical_bessel_j0", 2.0) - math.sin(2.0) / 2.0) < 1e-16
    assert abs(ref("erfcx", 0.7) - math.exp(0.49) * math.erfc(0.7)) < 1e-15
    # Wronskian J1 Y0 - J0 Y1 = 2 / (pi x)
    x = 3.3
    w = ref("bessel_j1", x) * ref("bessel_y0", x) - ref("bessel_j0", x) * ref("bessel_y1", x)
    assert abs(w - 2 / (math.pi * x)) < 1e-15
    # Wronskian I0 K1 + I1 K0 = 1 / x
    w = (ref("modified_bessel_i0", x) * ref("modified_bessel_k1", x)
         + ref("modified_bessel_i1", x) * ref("modified_bessel_k0", x))
    assert abs(w - 1 / x) < 1e-15


INF, NAN = math.inf, math.nan
# (name, [(x, expected)]) with PyTorch's special values
SPECIAL = {
    "i1": [(0.0, 0.0), (INF, NAN), (-INF, NAN), (NAN, NAN)],
    "i1e": [(0.0, 0.0), (INF, 0.0), (-INF, -0.0), (NAN, NAN)],
    "erfcx": [(0.0, 1.0), (INF, 0.0), (-INF, INF), (-30.0, INF), (NAN, NAN)],
    "bessel_j0": [(0.0, 1.0), (INF, NAN), (NAN, NAN)],
    "bessel_j1": [(0.0, 0.0), (-INF, NAN), (NAN, NAN)],
    "bessel_y0": [(0.0, -INF), (-1.0, NAN), (INF, NAN), (NAN, NAN)],
    "bessel_y1": [(0.0, -INF), (-1.0, NAN), (NAN, NAN)],
    "modified_bessel_i0": [(0.0, 1.0), (INF, NAN), (NAN, NAN)],
    "modified_bessel_i1": [(0.0, 0.0), (INF, NAN), (NAN, NAN)],
    "modified_bessel_k0": [(0.0, INF), (-1.0, NAN), (INF, 0.0), (-INF, NAN), (NAN, NAN)],
    "modified_bessel_k1": [(0.0, INF), (-1.0, NAN), (INF, 0.0), (NAN, NAN)],
    "scaled_modified_bessel_k0": [(0.0, INF), (-1.0, NAN), (INF, 0.0), (NAN, NAN)],
    "scaled_modified_bessel_k1": [(0.0, INF), (-2.0, NAN), (INF, 0.0), (NAN, NAN)],
    "spherical_bessel_j0": [(0.0, 1.0), (INF, 0.0), (-INF, 0.0), (NAN, NAN)],
}


@pytest.mark.parametrize("name", sorted(SPECIAL))
@pytest.mark.parametrize("dtype", [ft.float32, ft.float64])
def test_special_values(name, dtype):
    xs, expected = zip(*SPECIAL[name])
    got = getattr(S, name)(ft.tensor(list(xs), dtype=dtype)).numpy()
    # (float32 sums give modified_bessel_i0(0) = 1 - 2^-24, in PyTorch too)
    np.testing.assert_allclose(got, np.array(expected, dtype=got.dtype), rtol=1e-7, atol=0)


@pytest.mark.parametrize("name", sorted(CASES))
def test_dtypes_and_out(name):
    fn = getattr(S, name)
    assert fn(ft.tensor([1, 2])).dtype == ft.float32  # integers: the default dtype
    x = ft.tensor([0.5, 1.5], dtype=ft.float64)
    out = ft.empty(2, dtype=ft.float64)
    assert fn(x, out=out) is out
    np.testing.assert_array_equal(out.numpy(), fn(x).numpy())
    assert tuple(fn(ft.zeros(2, 0, 3)).shape) == (2, 0, 3)


@pytest.mark.parametrize("name", ["i1", "i1e", "erfcx"])
def test_gradcheck(name):
    x = ft.tensor([-12.0, -3.0, -0.4, 0.3, 1.0, 7.5, 8.5, 20.0], dtype=ft.float64,
                  requires_grad=True)
    assert gradcheck(getattr(S, name), (x,))


def test_gradients_known_values():
    x = ft.tensor([0.0, 0.5, -2.0], dtype=ft.float64, requires_grad=True)
    S.i1(x).sum().backward()
    # d/dx I1 = I0 - I1 / x, and 1/2 at 0
    expect = [0.5] + [float(np.i0(v)) - ref("i1", v) / v for v in (0.5, -2.0)]
    np.testing.assert_allclose(x.grad.numpy(), expect, rtol=1e-14)
    x = ft.tensor([0.0, 0.5, -2.0], dtype=ft.float64, requires_grad=True)
    S.erfcx(x).sum().backward()
    expect = [2 * v * ref("erfcx", v) - 2 / math.sqrt(math.pi) for v in (0.0, 0.5, -2.0)]
    np.testing.assert_allclose(x.grad.numpy(), expect, rtol=1e-14)


DIFFERENTIABLE_BESSEL = ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1",
                         "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0",
                         "modified_bessel_k1"]


@pytest.mark.parametrize("name", [n for n in sorted(CASES)
                                  if n not in ("i1", "i1e", "erfcx", *DIFFERENTIABLE_BESSEL)])
def test_bessel_family_is_not_differentiable(name):
    x = ft.tensor([0.5, 2.0], dtype=ft.float64, requires_grad=True)
    assert not getattr(S, name)(x).requires_grad


@pytest.mark.parametrize("name", DIFFERENTIABLE_BESSEL)
def test_bessel_gradcheck(name):
    # y and k are defined for x > 0 only
    pts = [0.3, 1.0, 2.5, 7.5, 8.5, 20.0]
    if not name.startswith(("bessel_y", "modified_bessel_k")):
        pts += [-12.0, -3.0, -0.4]
    x = ft.tensor(pts, dtype=ft.float64, requires_grad=True)
    assert gradcheck(getattr(S, name), (x,))
    assert ft.autograd.gradgradcheck(getattr(S, name), (x,))
    node = "Special" + "".join(w.capitalize() for w in name.split("_")) + "Backward0"
    assert getattr(S, name)(x).grad_fn.name() == node  # PyTorch's names


def test_bessel_gradients_at_zero_follow_torch():
    x = ft.tensor([0.0], dtype=ft.float64, requires_grad=True)
    got = {}
    for name in DIFFERENTIABLE_BESSEL:
        x.grad = None
        getattr(S, name)(x).sum().backward()
        got[name] = x.grad.item()
    assert got == {"bessel_j0": 0.0, "bessel_j1": 0.5, "bessel_y0": math.inf,
                   "bessel_y1": math.inf, "modified_bessel_i0": 0.0, "modified_bessel_i1": 0.5,
                   "modified_bessel_k0": -math.inf, "modified_bessel_k1": -math.inf}


@pytest.mark.cuda
@pytest.mark.skipif(not ft.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("name", sorted(CASES))
def test_cuda_matches_cpu(name):
    x = np.linspace(-30, 30, 101)
    cpu = getattr(S, name)(ft.from_numpy(x)).numpy()
    gpu = getattr(S, name)(ft.from_numpy(x).to("cuda"))
    assert gpu.device.type == "cuda"
    np.testing.assert_allclose(gpu.cpu().numpy(), cpu, rtol=1e-12, atol=1e-300)


# ------------------------------------------------------------------------ against PyTorch
def _wide_inputs(dtype):
    rng = np.random.default_rng(11)
    x = np.concatenate([
        rng.uniform(-10, 10, 1000), rng.uniform(-100, 100, 300), rng.uniform(-800, 800, 100),
        10 ** rng.uniform(-8, 3, 200), -(10 ** rng.uniform(-8, 3, 200)),
        [0.0, -0.0, INF, -INF, NAN, 2.0, 5.0, 8.0, -5.0, -8.0, 1e-5, 0.5, -0.5, 26.0, -26.0],
    ])
    return x.astype(dtype)


_LOOSE = {"bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1"}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(name, dtype):
    torch = pytest.importorskip("torch")
    x = _wide_inputs(dtype)
    expected = getattr(torch.special, name)(torch.from_numpy(x)).numpy()
    got = getattr(S, name)(ft.from_numpy(x)).numpy()
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(expected))
    fin = np.isfinite(expected)
    np.testing.assert_array_equal(np.sign(got[~fin & ~np.isnan(got)]),
                                  np.sign(expected[~fin & ~np.isnan(got)]))
    if name in _LOOSE:
        tol = dict(rtol=1e-6, atol=2e-6)
    elif dtype == "float64":
        tol = dict(rtol=1e-12 if name == "erfcx" else 5e-15, atol=1e-300)
    else:
        tol = dict(rtol=1e-5 if name == "erfcx" else 2e-6, atol=1e-30)
    np.testing.assert_allclose(got[fin], expected[fin], **tol)


@pytest.mark.parametrize("name", ["i1", "i1e", "erfcx", *DIFFERENTIABLE_BESSEL])
def test_gradients_match_torch(name):
    torch = pytest.importorskip("torch")
    if not getattr(torch.special, name)(torch.ones(1, requires_grad=True)).requires_grad:
        pytest.skip("this PyTorch does not differentiate it (before 2.15)")
    rng = np.random.default_rng(12)
    x = np.concatenate([rng.uniform(-20, 20, 200), [0.0, 8.0, -8.0]])
    tx = torch.from_numpy(x.copy()).requires_grad_(True)
    getattr(torch.special, name)(tx).sum().backward()
    fx = ft.from_numpy(x.copy())
    fx.requires_grad_(True)
    getattr(S, name)(fx).sum().backward()
    tol = dict(rtol=1e-6, atol=2e-6) if name in _LOOSE else dict(rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), **tol)


@pytest.mark.parametrize("name", [n for n in sorted(CASES) if n not in ("i1", "i1e", "erfcx")])
def test_differentiability_matches_torch(name):
    torch = pytest.importorskip("torch")
    t = getattr(torch.special, name)(torch.tensor([0.5], requires_grad=True))
    f = getattr(S, name)(ft.tensor([0.5], requires_grad=True))
    assert f.requires_grad == t.requires_grad
