"""torch.quantile/nanquantile, cov/corrcoef, trapezoid/cumulative_trapezoid, cartesian_prod/
combinations, logcumsumexp and torch.special vs NumPy / math references, with float64
gradchecks and PyTorch's error messages."""

import itertools
import math
import warnings

import numpy as np
import pytest

import ferrotorch as torch
from ferrotorch.autograd import gradcheck, gradgradcheck

METHODS = ["linear", "lower", "higher", "midpoint", "nearest"]
FLOATS = [(torch.float32, np.float32, 1e-5), (torch.float64, np.float64, 1e-12)]
np_trapezoid = getattr(np, "trapezoid", None) or np.trapz


def leaf(a):
    return torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=True)


def close(t, expected, rtol=1e-12, atol=0.0):
    np.testing.assert_allclose(t.detach().numpy(), expected, rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------------- quantile

@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype,np_dtype,tol", FLOATS)
def test_quantile_matches_numpy(rng, method, dtype, np_dtype, tol):
    a = rng.standard_normal((3, 4, 5)).astype(np_dtype)
    a[0, 0, :2] = a[0, 0, 2]  # ties
    x = torch.tensor(a)
    ref = a.astype(np.float64)
    qs = [0.0, 0.13, 0.25, 0.5, 0.875, 1.0]
    for q in qs:
        close(torch.quantile(x, q, interpolation=method), np.quantile(ref, q, method=method),
              rtol=tol)
        for dim in (0, 1, -1):
            for keepdim in (False, True):
                got = x.quantile(q, dim, keepdim, interpolation=method)
                want = np.quantile(ref, q, axis=dim, keepdims=keepdim, method=method)
                assert tuple(got.shape) == want.shape and got.dtype == dtype
                close(got, want, rtol=tol, atol=tol)
    qt = torch.tensor(qs, dtype=dtype)
    got = torch.quantile(x, qt, dim=1, keepdim=True, interpolation=method)
    want = np.quantile(ref, np.array(qs, dtype=np_dtype), axis=1, keepdims=True, method=method)
    assert tuple(got.shape) == want.shape == (6, 3, 1, 5)  # q's dimension first
    close(got, want, rtol=tol, atol=tol)
    got = torch.quantile(x, qt, keepdim=True, interpolation=method)
    assert tuple(got.shape) == (6, 1, 1, 1)
    close(got.reshape(-1), np.quantile(ref, qs, method=method), rtol=tol, atol=tol)


def test_quantile_shapes_nan_and_nearest_ties():
    s = torch.tensor(2.5)
    assert torch.quantile(s, 0.3).item() == 2.5 and torch.quantile(s, 0.3, dim=0).shape == ()
    assert torch.quantile(s, 0.3, keepdim=True).shape == ()
    assert torch.quantile(torch.tensor([1.0]), torch.tensor([0.2, 0.8])).tolist() == [1.0, 1.0]
    # 0-d q gives no q dimension, a 1-element 1-d q keeps it.
    v = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
    assert torch.quantile(v, torch.tensor(0.5), dim=1).shape == (1,)
    assert torch.quantile(v, torch.tensor([0.5]), dim=1).shape == (1, 1)
    # nearest rounds half to even, as NumPy: rank 1.5 -> 2, rank 0.5 -> 0.
    assert torch.quantile(v, 0.5, interpolation="nearest").item() == 3.0
    assert torch.quantile(v, 1 / 6, interpolation="nearest").item() == 1.0
    nan = float("nan")
    x = torch.tensor([[1.0, nan, 3.0], [4.0, 5.0, 6.0], [nan, nan, nan]])
    got = torch.quantile(x, 0.5, dim=1)
    assert math.isnan(got[0].item()) and got[1].item() == 5.0 and math.isnan(got[2].item())
    assert math.isnan(torch.quantile(x, 0.0).item())


@pytest.mark.parametrize("method", METHODS)
def test_nanquantile_matches_numpy(rng, method):
    a = rng.standard_normal((4, 6))
    a[0, [1, 4]] = np.nan
    a[2, :] = np.nan
    a[3, 5] = np.nan
    x = torch.tensor(a)
    qs = np.array([0.0, 0.3, 0.5, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy on the all-NaN row
        want = np.nanquantile(a, qs, axis=1, method=method)
        want_all = np.nanquantile(a, 0.4, method=method)
    got = torch.nanquantile(x, torch.tensor(qs), dim=1, interpolation=method)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    assert np.isnan(got.numpy()[:, 2]).all()
    close(x.nanquantile(0.4, interpolation=method), want_all)
    # Without NaNs nanquantile is quantile.
    b = torch.tensor(rng.standard_normal(7))
    assert torch.nanquantile(b, 0.3).item() == torch.quantile(b, 0.3).item()


def test_quantile_gradcheck(rng):
    a = rng.standard_normal((3, 5))
    for method in ("linear", "midpoint", "lower"):
        assert gradcheck(lambda t, m=method: torch.quantile(t, 0.3, dim=1, interpolation=m),
                         (leaf(a),))
    q = torch.tensor([0.2, 0.65], dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda t, u: torch.quantile(t, u, dim=0), (leaf(a), q))
    b = a.copy()
    b[1, 2] = np.nan
    x = leaf(b)
    assert gradcheck(lambda t: torch.nanquantile(t, 0.7, dim=1), (x,))
    # The gradient goes to the two order statistics that are interpolated.
    x = leaf([4.0, 1.0, 3.0, 2.0])
    torch.quantile(x, 0.5).backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.5, 0.5]


def test_quantile_errors():
    x = torch.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"q must be in the range \[0, 1\] but got 1.5"):
        torch.quantile(x, 1.5)
    with pytest.raises(RuntimeError, match=r"q must be in the range \[0, 1\] but got -0.1"):
        torch.nanquantile(x, -0.1)
    with pytest.raises(RuntimeError, match=r"q values must be in the range \[0, 1\]"):
        torch.quantile(x, torch.tensor([0.5, 1.2]))
    with pytest.raises(RuntimeError, match="must be non-empty"):
        torch.quantile(torch.tensor([]), 0.5)
    with pytest.raises(RuntimeError, match="either float or double"):
        torch.quantile(torch.tensor([1, 2]), 0.5)
    with pytest.raises(RuntimeError, match="same dtype as the input"):
        torch.quantile(x, torch.tensor(0.5, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="scalar or 1D"):
        torch.quantile(x, torch.tensor([[0.5]]))
    with pytest.raises(RuntimeError, match="interpolation must be one of linear"):
        torch.quantile(x, 0.5, interpolation="cubic")
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.quantile(x, 0.5, dim=1)


# ----------------------------------------------------------------------------------- cov

@pytest.mark.parametrize("dtype,np_dtype,tol", FLOATS)
def test_cov_matches_numpy(rng, dtype, np_dtype, tol):
    a = rng.standard_normal((3, 7)).astype(np_dtype)
    x = torch.tensor(a)
    fw = rng.integers(0, 4, 7)
    fw[0] = 2
    aw = rng.random(7).astype(np_dtype) + 0.1
    for correction in (0, 1, 2):
        close(torch.cov(x, correction=correction), np.cov(a, ddof=correction), rtol=tol * 10)
        got = torch.cov(x, correction=correction, fweights=torch.tensor(fw),
                        aweights=torch.tensor(aw))
        close(got, np.cov(a.astype(np.float64), ddof=correction, fweights=fw, aweights=aw),
              rtol=tol * 10)
    close(x.cov(fweights=torch.tensor(fw)), np.cov(a, fweights=fw), rtol=tol * 10)
    close(torch.cov(x, aweights=torch.tensor(aw)), np.cov(a, aweights=aw), rtol=tol * 10)
    # One variable: a 0-d result; integer input gives the default dtype.
    one = torch.cov(x[0])
    assert one.shape == () and one.dtype == dtype
    close(one, np.cov(a[0]), rtol=tol * 10)
    ints = torch.cov(torch.tensor([[1, 4, 2], [0, 3, 3]]))
    assert ints.dtype == torch.float32
    close(ints, np.cov([[1, 4, 2], [0, 3, 3]]), rtol=1e-6)


def test_cov_degenerate_and_errors():
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        c = torch.cov(torch.tensor([[1.0], [2.0]]))
    assert np.isnan(c.numpy()).all() and c.shape == (2, 2)
    x = torch.ones(2, 3)
    with pytest.raises(RuntimeError, match="two or fewer dimensions"):
        torch.cov(torch.ones(2, 2, 2))
    with pytest.raises(RuntimeError, match="bool dtype is not supported"):
        torch.cov(torch.ones(2, 3, dtype=torch.bool))
    with pytest.raises(RuntimeError, match="fweights to have integral dtype"):
        torch.cov(x, fweights=torch.ones(3))
    with pytest.raises(RuntimeError, match="aweights to have floating point dtype"):
        torch.cov(x, aweights=torch.tensor([1, 1, 1]))
    with pytest.raises(RuntimeError, match="same numel as there are observations"):
        torch.cov(x, fweights=torch.tensor([1, 1]))
    with pytest.raises(RuntimeError, match="fweights cannot be negative"):
        torch.cov(x, fweights=torch.tensor([1, -1, 1]))
    with pytest.raises(RuntimeError, match="aweights cannot be negative"):
        torch.cov(x, aweights=torch.tensor([1.0, -1.0, 1.0]))
    with pytest.raises(RuntimeError, match="weights sum to zero"):
        torch.cov(x, fweights=torch.tensor([0, 0, 0]))
    with pytest.raises(RuntimeError, match="corrcoef\\(\\): expected input to have two"):
        torch.corrcoef(torch.ones(1, 1, 1))


@pytest.mark.parametrize("dtype,np_dtype,tol", FLOATS)
def test_corrcoef_matches_numpy(rng, dtype, np_dtype, tol):
    a = rng.standard_normal((4, 9)).astype(np_dtype)
    got = torch.corrcoef(torch.tensor(a))
    close(got, np.corrcoef(a), rtol=tol * 10, atol=tol * 10)
    assert got.dtype == dtype and (got.abs() <= 1).all().item()
    close(torch.tensor(a).corrcoef(), np.corrcoef(a), rtol=tol * 10, atol=tol * 10)
    assert torch.corrcoef(torch.tensor(a[0])).item() == 1.0
    assert math.isnan(torch.corrcoef(torch.ones(5)).item())  # zero variance


def test_cov_corrcoef_gradcheck(rng):
    a = rng.standard_normal((3, 6))
    w = torch.tensor(rng.random(6) + 0.5, requires_grad=True)
    fw = torch.tensor([1, 2, 1, 3, 1, 1])
    assert gradcheck(lambda t: torch.cov(t), (leaf(a),))
    assert gradcheck(lambda t, u: torch.cov(t, fweights=fw, aweights=u), (leaf(a), w))
    assert gradcheck(lambda t: torch.corrcoef(t), (leaf(a),))


# ----------------------------------------------------------------------------- trapezoid

@pytest.mark.parametrize("dtype,np_dtype,tol", FLOATS)
def test_trapezoid_matches_numpy(rng, dtype, np_dtype, tol):
    a = rng.standard_normal((3, 5, 4)).astype(np_dtype)
    y = torch.tensor(a)
    for dim in (0, 1, -1):
        close(torch.trapezoid(y, dim=dim), np_trapezoid(a, axis=dim), rtol=tol * 10, atol=tol)
        close(torch.trapz(y, dx=0.5, dim=dim), np_trapezoid(a, dx=0.5, axis=dim),
              rtol=tol * 10, atol=tol)
        xs = np.sort(rng.standard_normal(a.shape[dim])).astype(np_dtype)
        close(torch.trapezoid(y, torch.tensor(xs), dim=dim), np_trapezoid(a, xs, axis=dim),
              rtol=tol * 10, atol=tol)
        # cumulative: NumPy reference from the running sum of the trapezoids.
        d = np.diff(xs).reshape([-1 if i == dim % 3 else 1 for i in range(3)])
        lo = np.take(a, range(a.shape[dim] - 1), axis=dim)
        hi = np.take(a, range(1, a.shape[dim]), axis=dim)
        got = torch.cumulative_trapezoid(y, torch.tensor(xs), dim=dim)
        close(got, np.cumsum((lo + hi) * d / 2, axis=dim), rtol=tol * 10, atol=tol)
        close(torch.cumulative_trapezoid(y, dx=2.0, dim=dim), np.cumsum(lo + hi, axis=dim),
              rtol=tol * 10, atol=tol)
    # x with the same shape as y.
    xfull = np.cumsum(rng.random(a.shape), axis=1).astype(np_dtype)
    close(torch.trapezoid(y, torch.tensor(xfull), dim=1), np_trapezoid(a, xfull, axis=1),
          rtol=tol * 10, atol=tol)


def test_trapezoid_edges_and_errors():
    assert torch.trapezoid(torch.tensor([1, 2, 3])).item() == 4.0  # integers give floats
    assert torch.trapezoid(torch.zeros(2, 0)).tolist() == [0.0, 0.0]
    assert torch.trapezoid(torch.tensor([5.0])).item() == 0.0
    assert tuple(torch.cumulative_trapezoid(torch.zeros(3, 1)).shape) == (3, 0)
    assert tuple(torch.cumulative_trapezoid(torch.zeros(0)).shape) == (0,)
    y = torch.tensor([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="There must be one `x` value for each sample point"):
        torch.trapezoid(y, torch.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="cumulative_trapezoid: There must be one"):
        torch.cumulative_trapezoid(y, torch.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="bool is not supported"):
        torch.trapezoid(torch.tensor([True, False]))
    with pytest.raises(TypeError):
        torch.trapezoid(y, torch.tensor([1.0, 2.0, 3.0]), dx=1.0)
    with pytest.raises(IndexError):
        torch.trapezoid(torch.tensor(1.0))


def test_trapezoid_gradcheck(rng):
    y, x = leaf(rng.standard_normal((3, 5))), leaf(np.sort(rng.standard_normal(5)))
    assert gradcheck(lambda u, v: torch.trapezoid(u, v), (y, x))
    assert gradcheck(lambda u: torch.trapezoid(u, dx=0.3, dim=0), (y,))
    assert gradcheck(lambda u, v: torch.cumulative_trapezoid(u, v), (y, x))
    assert gradcheck(lambda u: torch.cumulative_trapezoid(u, dim=0), (y,))


# ----------------------------------------------------------------------------- combinatorics

def test_cartesian_prod_matches_itertools():
    a, b, c = torch.tensor([1, 2, 3]), torch.tensor([4, 5]), torch.tensor([6, 7])
    got = torch.cartesian_prod(a, b, c)
    assert got.tolist() == [list(p) for p in itertools.product([1, 2, 3], [4, 5], [6, 7])]
    assert torch.cartesian_prod(a).tolist() == [1, 2, 3]
    assert tuple(torch.cartesian_prod(a, torch.tensor([], dtype=torch.int64)).shape) == (0, 2)
    f = torch.tensor([0.5, 1.5], dtype=torch.float64)
    assert torch.cartesian_prod(f, f).dtype == torch.float64
    with pytest.raises(RuntimeError, match="Expect a 1D vector, but got shape"):
        torch.cartesian_prod(torch.ones(2, 2))
    x, y = leaf([1.0, 2.0]), leaf([3.0, 4.0, 5.0])
    assert gradcheck(lambda u, v: torch.cartesian_prod(u, v), (x, y))


@pytest.mark.parametrize("n", [0, 1, 4, 5])
@pytest.mark.parametrize("r", [0, 1, 2, 3])
def test_combinations_match_itertools(n, r):
    x = torch.arange(10, 10 + n)
    values = list(range(10, 10 + n))
    for with_replacement, fn in ((False, itertools.combinations),
                                 (True, itertools.combinations_with_replacement)):
        got = torch.combinations(x, r, with_replacement)
        if r == 0:
            assert tuple(got.shape) == (0,)
            continue
        want = [list(c) for c in fn(values, r)]
        assert tuple(got.shape) == (len(want), r) and got.tolist() == want


def test_combinations_errors_and_grad():
    with pytest.raises(RuntimeError, match="Expect a 1D vector"):
        torch.combinations(torch.ones(2, 2))
    with pytest.raises(RuntimeError, match="Expect a non-negative number, but got -1"):
        torch.combinations(torch.ones(3), -1)
    assert torch.combinations(torch.tensor([1.0, 2.0, 3.0])).tolist() == [[1, 2], [1, 3],
                                                                         [2, 3]]
    assert gradcheck(lambda t: torch.combinations(t, 3, with_replacement=True),
                     (leaf([1.0, 2.0, 3.0]),))


# ----------------------------------------------------------------------------- logcumsumexp

def _np_logcumsumexp(a, axis):
    return np.logaddexp.accumulate(a, axis=axis)


@pytest.mark.parametrize("dtype,np_dtype,tol", FLOATS)
def test_logcumsumexp_matches_numpy(rng, dtype, np_dtype, tol):
    for shape in [(1,), (7,), (3, 9), (2, 17, 3)]:
        a = (rng.standard_normal(shape) * 5).astype(np_dtype)
        for dim in range(-len(shape), len(shape)):
            got = torch.logcumsumexp(torch.tensor(a), dim)
            assert got.dtype == dtype and tuple(got.shape) == shape
            close(got, _np_logcumsumexp(a.astype(np.float64), dim), rtol=tol * 10, atol=tol)
    # Large and very different magnitudes: no overflow, no underflow to -inf.
    x = torch.tensor([0.0, 1000.0, -1000.0, 1000.0, -math.inf, 2.0], dtype=dtype)
    want = [0.0, 1000.0, 1000.0, 1000.0 + math.log(2.0), 1000.0 + math.log(2.0),
            1000.0 + math.log(2.0)]
    close(x.logcumsumexp(0), want, rtol=tol)
    assert torch.logcumsumexp(torch.tensor([-math.inf, -math.inf]), 0).tolist() == [-math.inf,
                                                                                   -math.inf]
    assert math.isnan(torch.logcumsumexp(torch.tensor([1.0, math.nan, 2.0]), 0)[2].item())
    assert torch.logcumsumexp(torch.tensor(3.0), 0).item() == 3.0
    assert tuple(torch.logcumsumexp(torch.zeros(2, 0), 1).shape) == (2, 0)
    with pytest.raises(IndexError):
        torch.logcumsumexp(torch.zeros(2), 1)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8, torch.bool])
def test_logcumsumexp_rejects_integer_input_as_pytorch(dtype):
    with pytest.raises(NotImplementedError, match="logcumsumexp_out_cpu\" not implemented for"):
        torch.ones(3, dtype=dtype).logcumsumexp(0)


def test_logcumsumexp_gradcheck(rng):
    x = leaf(rng.standard_normal((3, 6)) * 3)
    assert gradcheck(lambda t: torch.logcumsumexp(t, 1), (x,))
    assert gradcheck(lambda t: t.logcumsumexp(0), (x,))
    # -inf entries give finite gradients (not NaN): the limits, d out_k / d x_j =
    # softmax of the prefix k at j (out_0 = x_0 has slope 1 even at -inf).
    y = torch.tensor([-math.inf, 0.0, -math.inf], dtype=torch.float64, requires_grad=True)
    torch.logcumsumexp(y, 0).sum().backward()
    assert y.grad.tolist() == [1.0, 2.0, 0.0]


# ----------------------------------------------------------------------------- torch.special

def test_special_namespace():
    import ferrotorch.special as special_module

    assert torch.special is special_module
    for name in ("erfcx", "bessel_j0", "i1", "modified_bessel_k1"):
        assert name in torch.special.__all__  # see test_special_bessel.py


@pytest.mark.parametrize("dtype,np_dtype,tol", FLOATS)
def test_special_elementwise(rng, dtype, np_dtype, tol):
    sp = torch.special
    a = rng.standard_normal(50).astype(np_dtype)
    x = torch.tensor(a)
    r = a.astype(np.float64)
    close(sp.expit(x), 1 / (1 + np.exp(-r)), rtol=tol * 10)
    p = (rng.random(50) * 0.98 + 0.01).astype(np_dtype)
    close(sp.logit(torch.tensor(p)), np.log(p / (1 - p.astype(np.float64))), rtol=tol * 100)
    close(sp.logit(torch.tensor([0.0, 1.0], dtype=dtype), eps=0.25),
          [math.log(1 / 3), math.log(3)], rtol=tol * 10)
    close(sp.erf(x), [math.erf(v) for v in r], rtol=tol * 10, atol=tol)
    close(sp.erfc(x), [math.erfc(v) for v in r], rtol=tol * 10)
    close(sp.erfinv(sp.erf(x)), r, rtol=tol * 1e3, atol=tol * 1e3)
    close(sp.exp2(x), np.exp2(r), rtol=tol * 10)
    close(sp.expm1(x), np.expm1(r), rtol=tol * 10)
    close(sp.log1p(x.abs()), np.log1p(np.abs(r)), rtol=tol * 10)
    close(sp.sinc(x), np.sinc(r), rtol=tol * 100, atol=tol)
    close(sp.round(x * 10, decimals=1), np.round(r * 10, 1), rtol=tol * 10)
    assert sp.round(torch.tensor([0.5, 1.5, 2.5, -0.5], dtype=dtype)).tolist() == [0, 2, 2, 0]
    m = torch.tensor(a.reshape(5, 10))
    close(sp.logsumexp(m, 1), np.log(np.exp(r.reshape(5, 10)).sum(1)), rtol=tol * 10)
    close(sp.softmax(m, 0), np.exp(r.reshape(5, 10)) / np.exp(r.reshape(5, 10)).sum(0),
          rtol=tol * 10)
    assert sp.softmax(m, 1, dtype=torch.float64).dtype == torch.float64
    close(sp.log_softmax(m, 1), r.reshape(5, 10) - np.log(np.exp(r.reshape(5, 10)).sum(1,
          keepdims=True)), rtol=tol * 10, atol=tol * 10)


@pytest.mark.parametrize("dtype,np_dtype,tol", FLOATS)
def test_special_xlogy_xlog1py_entr(dtype, np_dtype, tol):
    sp = torch.special
    nan, inf = math.nan, math.inf
    x = torch.tensor([0.0, 0.0, 0.0, 2.0, 3.0, 0.0, -1.5], dtype=dtype)
    y = torch.tensor([0.0, -1.0, nan, 0.5, 4.0, inf, 2.0], dtype=dtype)
    got = sp.xlogy(x, y).tolist()
    assert got[:2] == [0.0, 0.0] and math.isnan(got[2])
    close(sp.xlogy(x, y)[3:5], [2 * math.log(0.5), 3 * math.log(4.0)], rtol=tol)
    got = sp.xlog1py(x, y).tolist()
    assert got[0] == 0.0 and got[1] == 0.0 and math.isnan(got[2]) and got[5] == 0.0
    close(sp.xlog1py(x, y)[[3, 4, 6]], [2 * math.log1p(0.5), 3 * math.log1p(4.0),
                                         -1.5 * math.log1p(2.0)], rtol=tol)
    assert sp.xlog1py(2.0, torch.tensor([1.0], dtype=dtype)).item() == pytest.approx(
        2 * math.log(2.0))
    assert sp.xlog1py(torch.tensor([3.0], dtype=dtype), 0.0).item() == 0.0
    e = sp.entr(torch.tensor([0.0, 0.5, 1.0, 2.0, -1.0, nan], dtype=dtype))
    close(e[:4], [0.0, -0.5 * math.log(0.5), 0.0, -2 * math.log(2.0)], rtol=tol, atol=tol)
    assert e[4].item() == -inf and math.isnan(e[5].item())


@pytest.mark.parametrize("dtype,np_dtype,tol", FLOATS)
def test_special_normal_distribution(dtype, np_dtype, tol):
    sp = torch.special
    xs = [-30.0, -8.0, -3.0, -1.0, -0.2, 0.0, 0.7, 2.5, 6.0]
    if dtype == torch.float32:
        xs = xs[1:]
    x = torch.tensor(xs, dtype=dtype)
    ndtr_ref = [0.5 * math.erfc(-v / math.sqrt(2)) for v in xs]
    close(sp.ndtr(x), ndtr_ref, rtol=tol * 100)
    log_ref = [math.log(v) if v < 0.5 else math.log1p(-0.5 * math.erfc(x / math.sqrt(2)))
               for v, x in zip(ndtr_ref, xs)]
    close(sp.log_ndtr(x), log_ref, rtol=tol * 100)
    # Far lower tail (erfc underflows there): the Mills-ratio expansion.
    far = [-40.0, -100.0, -1e3] if dtype == torch.float64 else [-12.0, -20.0, -100.0]
    want = [-v * v / 2 - math.log(-v) - 0.5 * math.log(2 * math.pi)
            + math.log(1 - 1 / v ** 2 + 3 / v ** 4 - 15 / v ** 6 + 105 / v ** 8) for v in far]
    close(sp.log_ndtr(torch.tensor(far, dtype=dtype)), want, rtol=tol * 10)
    # Upper tail: log(1 - tiny) without rounding to 0 too early.
    close(sp.log_ndtr(torch.tensor([5.0, 10.0], dtype=dtype)),
          [math.log1p(-0.5 * math.erfc(v / math.sqrt(2))) for v in (5.0, 10.0)],
          rtol=tol * 100)
    # ndtri inverts ndtr, keeping relative accuracy for tiny p.
    ps = [1e-30, 1e-12, 1e-4, 0.025, 0.3, 0.5, 0.8, 0.975, 0.9999]
    if dtype == torch.float32:
        ps = ps[1:]
    z = sp.ndtri(torch.tensor(ps, dtype=dtype)).numpy().astype(np.float64)
    back = [0.5 * math.erfc(-v / math.sqrt(2)) for v in z]
    np.testing.assert_allclose(back, ps, rtol=tol * 1e3)
    close(sp.ndtri(torch.tensor([0.975], dtype=dtype)), [1.959963984540054], rtol=tol * 10)
    edge = sp.ndtri(torch.tensor([0.0, 1.0, -0.5, 1.5, math.nan], dtype=dtype)).tolist()
    assert edge[:2] == [-math.inf, math.inf] and all(math.isnan(v) for v in edge[2:])
    assert abs(sp.ndtri(torch.tensor(0.5, dtype=dtype)).item()) < 1e-15


@pytest.mark.parametrize("dtype,np_dtype,tol", FLOATS)
def test_special_i0(rng, dtype, np_dtype, tol):
    sp = torch.special
    top = 700.0 if dtype == torch.float64 else 85.0
    a = np.concatenate([rng.standard_normal(20) * 5, np.linspace(-top, top, 41),
                        [0.0, 29.99, 30.0, 30.01]]).astype(np_dtype)
    got = sp.i0(torch.tensor(a))
    assert got.dtype == dtype
    close(got, np.i0(a.astype(np.float64)), rtol=tol * 100)
    close(torch.i0(torch.tensor(a)), np.i0(a.astype(np.float64)), rtol=tol * 100)
    close(torch.tensor(a).i0(), np.i0(a.astype(np.float64)), rtol=tol * 100)
    small = a[np.abs(a) < 80]
    close(sp.i0e(torch.tensor(small)), np.i0(small.astype(np.float64)) * np.exp(-np.abs(small)),
          rtol=tol * 100)
    # Large |x|: i0e -> 1 / sqrt(2 pi x) (1 + 1/(8x) + 9/(128 x^2) + ...).
    big = 1e4
    close(sp.i0e(torch.tensor([big, -big], dtype=dtype)),
          [(1 + 1 / (8 * big) + 9 / (128 * big ** 2)) / math.sqrt(2 * math.pi * big)] * 2,
          rtol=tol * 10)
    assert math.isnan(sp.i0(torch.tensor(math.nan, dtype=dtype)).item())


def test_special_gradcheck(rng):
    sp = torch.special
    a = rng.standard_normal((2, 5))
    assert gradcheck(sp.expit, (leaf(a),))
    assert gradcheck(sp.ndtr, (leaf(a * 3),))
    assert gradcheck(sp.log_ndtr, (leaf([-45.0, -25.0, -15.0, -3.0, -0.5, 0.4, 4.0]),))
    assert gradcheck(sp.ndtri, (leaf([1e-4, 0.01, 0.3, 0.5, 0.7, 0.99]),))
    assert gradcheck(sp.i0, (leaf([-40.0, -3.0, 0.0, 0.5, 12.0, 35.0]),), rtol=1e-6)
    assert gradcheck(sp.i0e, (leaf([-40.0, -3.0, 0.1, 0.5, 12.0, 35.0]),))
    assert gradcheck(sp.entr, (leaf(np.abs(a) + 0.1),))
    assert gradcheck(sp.xlog1py, (leaf(a), leaf(np.abs(a))))
    assert gradcheck(lambda t: sp.logit(t, eps=1e-6), (leaf(np.abs(a) / 4 + 0.1),))
    # At x == 0, xlog1py's gradient for x is log1p(y), for y is 0 (as PyTorch).
    x, y = leaf([0.0, 0.0]), leaf([1.0, -1.0])
    sp.xlog1py(x, y).sum().backward()
    assert x.grad.tolist() == [math.log(2.0), 0.0] and y.grad.tolist() == [0.0, 0.0]


# ------------------------------------------------------------- lgamma / digamma / polygamma

def _digamma_ref(x):
    """Central difference of math.lgamma in extended steps (reference only)."""
    h = 1e-6 * max(1.0, abs(x))
    return (math.lgamma(x + h) - math.lgamma(x - h)) / (2 * h)


@pytest.mark.parametrize("dtype,np_dtype,tol", FLOATS)
def test_lgamma_matches_math(rng, dtype, np_dtype, tol):
    a = np.concatenate([rng.uniform(-20, 30, 200), [0.5, 1.0, 2.0, 1e-8, 170.5, -0.5, -2.5]])
    a = a[np.abs(a - np.round(a)) > 1e-6].astype(np_dtype)  # away from the poles
    expect = np.array([math.lgamma(float(v)) for v in a])
    for t in (torch.tensor(a), torch.tensor(a)[::2], torch.tensor(a.reshape(-1, 1)).t()):
        ref = expect[::2] if t.shape == (len(a[::2]),) else expect.reshape(t.shape)
        close(t.lgamma(), ref, rtol=max(tol, 1e-13) * 10, atol=tol)
    close(torch.special.gammaln(torch.tensor(a)), expect, rtol=max(tol, 1e-13) * 10, atol=tol)
    assert torch.lgamma(torch.tensor(3)).item() == pytest.approx(math.log(2))  # int -> float
    assert torch.lgamma(torch.tensor(0.0)).item() == math.inf
    assert torch.tensor([]).lgamma().shape == (0,)
    x = torch.tensor(a.copy())
    x.lgamma_()
    close(x, expect, rtol=max(tol, 1e-13) * 10, atol=tol)


def test_digamma_and_trigamma_values():
    euler = 0.5772156649015329
    x = torch.tensor([1.0, 0.5, 2.0, 10.0, 37.25, -0.5, -3.7, 1e-3], dtype=torch.float64)
    d = torch.digamma(x).tolist()
    assert d[0] == pytest.approx(-euler, rel=1e-14)
    assert d[1] == pytest.approx(-euler - 2 * math.log(2), rel=1e-14)
    assert d[2] == pytest.approx(1 - euler, rel=1e-14)
    for v, got in zip(x.tolist(), d):
        assert got == pytest.approx(_digamma_ref(v), rel=1e-6, abs=1e-6)
    t = torch.polygamma(1, x).tolist()
    assert t[0] == pytest.approx(math.pi**2 / 6, rel=1e-14)
    assert t[1] == pytest.approx(math.pi**2 / 2, rel=1e-14)
    assert t[5] == pytest.approx(math.pi**2 / 2 + 4, rel=1e-13)
    # PyTorch's values at the poles.
    poles = torch.tensor([0.0, -0.0, -1.0, -4.0])
    assert torch.digamma(poles).tolist()[:2] == [-math.inf, math.inf]
    assert all(math.isnan(v) for v in torch.digamma(poles).tolist()[2:])
    assert torch.polygamma(1, poles).tolist() == [math.inf] * 4
    assert torch.special.psi is torch.special.digamma
    assert torch.special.polygamma(0, x).tolist() == d
    assert x.polygamma(1).tolist() == t
    f32 = torch.digamma(x.float())
    np.testing.assert_allclose(f32.numpy(), np.array(d, dtype=np.float32), rtol=2e-6, atol=1e-6)


def test_lgamma_digamma_gradients():
    x = leaf([0.3, 1.7, 4.2, 12.5, -2.3])
    assert gradcheck(torch.lgamma, (x,))
    assert gradcheck(torch.digamma, (x,))
    y = torch.lgamma(x)
    assert y.grad_fn.name() == "LgammaBackward0"
    (g,) = torch.autograd.grad(y.sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), torch.digamma(x.detach()).numpy(), rtol=1e-14)
    (h,) = torch.autograd.grad(g.sum(), x)  # second derivative: trigamma
    np.testing.assert_allclose(h.numpy(), torch.polygamma(1, x.detach()).numpy(), rtol=1e-14)
    # Third derivative: polygamma(1, x)'s gradient is polygamma(2, x) (through the zeta kernel).
    assert gradcheck(lambda t: torch.polygamma(1, t), (x,))
    assert gradgradcheck(lambda t: torch.polygamma(1, t), (x,))


def test_polygamma_and_multigammaln_arguments():
    x = torch.tensor([2.5, 3.0], dtype=torch.float64)
    with pytest.raises(RuntimeError, match="negative n"):
        torch.polygamma(-1, x)
    with pytest.raises(TypeError):
        torch.polygamma(1.0, x)
    # multigammaln(a, p) = p(p-1)/4 ln(pi) + sum_j lgamma(a - j/2)
    p = 3
    expect = [p * (p - 1) / 4 * math.log(math.pi) + sum(math.lgamma(a - j / 2) for j in range(p))
              for a in (2.5, 3.0)]
    np.testing.assert_allclose(torch.special.multigammaln(x, p).numpy(), expect, rtol=1e-14)
    np.testing.assert_allclose(torch.mvlgamma(x, p).numpy(), expect, rtol=1e-14)
    # torch 2.15 no longer checks the domain x > (p - 1) / 2 (values from torch 2.15)
    np.testing.assert_allclose(torch.special.multigammaln(torch.tensor([0.9]), 3).numpy(),
                               [4.9491], atol=1e-4)
    np.testing.assert_allclose(torch.mvlgamma(torch.tensor([0.4]), 2).numpy(), [3.7380], atol=1e-4)


# ------------------------------------------------------------------ Hurwitz zeta / polygamma

def _zeta_ref(x, q, terms=3000):
    """Reference only: an exactly rounded partial sum (math.fsum) plus the Euler-Maclaurin tail
    to the B4 term, cut at a different point than the kernel's."""
    a = q + terms
    tail = (a ** (1 - x) / (x - 1) + 0.5 * a ** -x + x * a ** (-x - 1) / 12
            - x * (x + 1) * (x + 2) * a ** (-x - 3) / 720)
    return math.fsum([(k + q) ** -x for k in range(terms)] + [tail])


def _polygamma_ref(n, x):
    return (-1) ** (n + 1) * math.factorial(n) * _zeta_ref(n + 1, x)


def test_zeta_known_values_and_domain():
    x = torch.tensor([2.0, 4.0, 3.0, 2.0, 1.0, 0.5, 2.0, 2.0, 3.0, 2.5], dtype=torch.float64)
    q = torch.tensor([1.0, 1.0, 1.0, 0.5, 2.0, 2.0, 0.0, -3.0, -0.5, -0.5], dtype=torch.float64)
    z = torch.special.zeta(x, q).tolist()
    assert z[0] == pytest.approx(math.pi**2 / 6, rel=1e-15)
    assert z[1] == pytest.approx(math.pi**4 / 90, rel=1e-15)
    assert z[2] == pytest.approx(1.2020569031595942, rel=1e-15)  # Apery's constant
    assert z[3] == pytest.approx(math.pi**2 / 2, rel=1e-15)
    assert z[4] == math.inf and math.isnan(z[5])  # the pole at x = 1, no value below
    assert z[6] == math.inf and z[7] == math.inf  # q a non-positive integer: a pole
    # Negative non-integer q: summed for integer x, NaN otherwise (Cephes, PyTorch).
    assert z[8] == pytest.approx(-8 + 1.2020569031595942 * 7, rel=1e-13)
    assert math.isnan(z[9])


@pytest.mark.parametrize("dtype,np_dtype,tol", FLOATS)
def test_zeta_matches_series_on_layouts(rng, dtype, np_dtype, tol):
    xs = rng.uniform(1.1, 12, 12)
    qs = rng.uniform(0.05, 30, 12)
    expect = np.array([[_zeta_ref(float(a), float(b)) for b in qs] for a in xs])
    xt = torch.tensor(xs.astype(np_dtype)).reshape(-1, 1)  # broadcast (12, 1) x (12,)
    qt = torch.tensor(qs.astype(np_dtype))
    rtol = max(tol, 1e-12) * 10
    close(torch.special.zeta(xt, qt), expect, rtol=rtol, atol=0)
    # Non-contiguous operands: a transposed q grid and a stepped slice of x.
    q_grid = torch.tensor(np.stack([qs] * 12).T.astype(np_dtype)).t()
    assert not q_grid.is_contiguous()
    close(torch.special.zeta(xt, q_grid), expect, rtol=rtol, atol=0)
    close(torch.special.zeta(xt[::2], qt), expect[::2], rtol=rtol, atol=0)
    # Numbers on either side, integer tensors promote to the default float dtype.
    close(torch.special.zeta(2, qt), [_zeta_ref(2.0, float(b)) for b in qs],
          rtol=rtol, atol=0)
    assert torch.special.zeta(torch.tensor([2, 4]), 1).dtype == torch.float32
    assert torch.special.zeta(torch.tensor([]), torch.tensor([])).shape == (0,)
    assert torch.special.zeta(torch.tensor(2.0), torch.tensor(1.0)).shape == ()


def test_polygamma_higher_orders():
    x = torch.tensor([0.25, 1.0, 2.5, 7.0, 40.0, -1.5], dtype=torch.float64)
    for n in (2, 3, 4, 7):
        got = torch.polygamma(n, x).tolist()
        for v, g in zip(x.tolist(), got):
            if v > 0:
                assert g == pytest.approx(_polygamma_ref(n, v), rel=1e-9), (n, v)
    # Reflection-free check at a negative non-integer: the recurrence psi_n(x) = psi_n(x+1)
    # - (-1)^n n! / x^(n+1) stepped up from 0.5.
    v = -1.5
    ref = -14 * 1.2020569031595942 - 2 / (-0.5) ** 3 - 2 / v**3  # psi_2(1/2) = -14 zeta(3)
    assert torch.polygamma(2, torch.tensor([v], dtype=torch.float64)).item() == pytest.approx(
        ref, rel=1e-12)
    assert torch.polygamma(2, torch.tensor([0.0, -2.0])).tolist() == [-math.inf, -math.inf]
    assert torch.polygamma(3, torch.tensor([0.0])).tolist() == [math.inf]
    # psi_2(1) = -2 zeta(3); the Tensor method and the special-module name agree.
    assert torch.special.polygamma(2, torch.tensor(1.0, dtype=torch.float64)).item() == \
        pytest.approx(-2 * 1.2020569031595942, rel=1e-15)
    assert x.polygamma(3).tolist() == torch.polygamma(3, x).tolist()
    y = x.clone()
    y.polygamma_(2)
    assert y.tolist() == torch.polygamma(2, x).tolist()
    f32 = torch.polygamma(2, x.float()[:5])
    np.testing.assert_allclose(f32.numpy(), torch.polygamma(2, x[:5]).numpy(), rtol=1e-5)


def test_zeta_and_polygamma_gradients():
    q = leaf([0.3, 1.7, 4.2, 12.5, -2.3])
    x = torch.tensor([2.0, 3.0, 2.5, 4.0, 3.0], dtype=torch.float64)
    assert gradcheck(lambda t: torch.special.zeta(x, t), (q,))
    assert gradgradcheck(lambda t: torch.special.zeta(x, t), (q,))
    assert gradcheck(lambda t: torch.polygamma(3, t), (q,))
    y = torch.special.zeta(x, q)
    assert y.grad_fn.name() == "SpecialZetaBackward0"
    (g,) = torch.autograd.grad(y.sum(), q)
    np.testing.assert_allclose(
        g.numpy(), (-x * torch.special.zeta(x + 1, q.detach())).numpy(), rtol=1e-14)
    xr = x.clone().requires_grad_()
    with pytest.raises(NotImplementedError, match="the derivative for 'zeta' is not implemented"):
        torch.special.zeta(xr, q.detach()).sum().backward()
