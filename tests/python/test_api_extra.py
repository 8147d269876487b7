"""The Python API extras (_api_extra.py / _window.py) against NumPy references: aliases,
in-place comparisons, fmax/fmin, the split family, block_diag/diagflat/vander, gcd/lcm,
ldexp/frexp/nextafter, renorm, dtype queries, asarray, range, histogram, the *_scatter
functions, the add* family, cholesky_solve/triangular_solve, windows and Tensor utilities;
float64 gradchecks for the differentiable ones and PyTorch's error messages."""

import warnings

import numpy as np
import pytest

import ferrotorch as torch
from conftest import layouts, random_array
from ferrotorch.autograd import gradcheck

F64 = torch.float64


def leaf(a):
    return torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=True)


def close(t, expected, rtol=1e-6, atol=1e-7):
    np.testing.assert_allclose(t.detach().numpy(), expected, rtol=rtol, atol=atol)


def exact(t, expected):
    np.testing.assert_array_equal(t.numpy(), expected)


# ----------------------------------------------------------------------------- aliases

UNARY_ALIASES = [("absolute", "abs", np.abs, -2, 2), ("arccos", "acos", np.arccos, -0.9, 0.9),
                 ("arcsin", "asin", np.arcsin, -0.9, 0.9), ("arctan", "atan", np.arctan, -3, 3),
                 ("arcsinh", "asinh", np.arcsinh, -3, 3), ("arccosh", "acosh", np.arccosh, 1.1, 4),
                 ("arctanh", "atanh", np.arctanh, -0.9, 0.9), ("fix", "trunc", np.fix, -5, 5),
                 ("sgn", "sign", np.sign, -2, 2)]


@pytest.mark.parametrize("alias,target,ref,lo,hi", UNARY_ALIASES)
@pytest.mark.parametrize("np_dtype", [np.float32, np.float64])
def test_unary_aliases(rng, alias, target, ref, lo, hi, np_dtype):
    a = rng.uniform(lo, hi, (3, 4)).astype(np_dtype)
    if alias == "sgn":
        a[0, 0] = 0
    x = torch.tensor(a)
    for result in (getattr(torch, alias)(x), getattr(x, alias)()):
        assert result.dtype == x.dtype
        close(result, ref(a), rtol=1e-5)
    y = x.clone()
    assert getattr(y, alias + "_")() is y
    close(y, ref(a), rtol=1e-5)
    # 0-d and empty
    close(getattr(torch, alias)(torch.tensor(a[1, 1])), ref(a[1, 1]), rtol=1e-5)
    assert getattr(torch, alias)(torch.empty(0, 3)).shape == (0, 3)


def test_unary_alias_gradient_matches_target():
    assert gradcheck(torch.arcsin, (leaf([0.1, -0.4, 0.7]),))
    assert gradcheck(lambda t: t.arccosh(), (leaf([1.5, 2.0, 3.0]),))


@pytest.mark.parametrize("alias,ref", [("greater", np.greater), ("greater_equal", np.greater_equal),
                                       ("less", np.less), ("less_equal", np.less_equal),
                                       ("not_equal", np.not_equal)])
def test_comparison_aliases(rng, alias, ref):
    a = rng.integers(0, 3, (4, 5)).astype(np.float32)
    b = rng.integers(0, 3, (5,)).astype(np.float32)
    x, y = torch.tensor(a), torch.tensor(b)
    for result in (getattr(torch, alias)(x, y), getattr(x, alias)(y)):
        assert result.dtype == torch.bool
        exact(result, ref(a, b))
    exact(getattr(torch, alias)(x, 1.0), ref(a, 1.0))
    z = x.clone()
    getattr(z, alias + "_")(y)
    exact(z, ref(a, b).astype(np.float32))


def test_arctan2_alias(rng):
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4,))
    close(torch.arctan2(torch.tensor(a), torch.tensor(b)), np.arctan2(a, b), rtol=1e-12)
    close(torch.tensor(a).arctan2(torch.tensor(b)), np.arctan2(a, b), rtol=1e-12)
    x = torch.tensor(a)
    assert x.atan2_(torch.tensor(b)) is x
    close(x, np.arctan2(a, b), rtol=1e-12)
    y = torch.tensor(a)
    y.arctan2_(torch.tensor(b))
    close(y, np.arctan2(a, b), rtol=1e-12)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        torch.tensor([1, 2]).atan2_(torch.tensor([1, 1]))


def test_existing_arithmetic_aliases():
    x, y = torch.tensor([6.0, -4.0]), torch.tensor([2.0, 8.0])
    exact(torch.negative(x), [-6.0, 4.0])
    exact(torch.multiply(x, y), [12.0, -32.0])
    exact(torch.divide(x, y), [3.0, -0.5])
    exact(torch.subtract(x, y), [4.0, -12.0])
    exact(torch.true_divide(x, y), [3.0, -0.5])


# ------------------------------------------------------------------ in-place comparisons

@pytest.mark.parametrize("name,ref", [("eq_", np.equal), ("ne_", np.not_equal),
                                      ("lt_", np.less), ("le_", np.less_equal),
                                      ("gt_", np.greater), ("ge_", np.greater_equal)])
@pytest.mark.parametrize("np_dtype", [np.float32, np.float64, np.int64, np.int32, np.uint8])
def test_inplace_comparisons(rng, name, ref, np_dtype):
    a = random_array(rng, (3, 4), np_dtype) % 3
    b = random_array(rng, (4,), np_dtype) % 3
    x = torch.tensor(a)
    result = getattr(x, name)(torch.tensor(b))
    assert result is x
    assert x.dtype == torch.tensor(a).dtype  # self's dtype kept
    exact(x, ref(a, b).astype(np_dtype))
    # scalar other
    z = torch.tensor(a)
    getattr(z, name)(1)
    exact(z, ref(a, 1).astype(np_dtype))


def test_inplace_comparison_on_non_contiguous_view(rng):
    a = rng.integers(0, 3, (4, 3)).astype(np.float64)
    base = torch.tensor(a.copy())
    view = base.t()
    view.ge_(torch.tensor([1.0, 1.0, 1.0, 1.0]))
    exact(base, (a >= 1).astype(np.float64))


def test_inplace_comparison_keeps_history():
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a * 2
    b.gt_(3.0)
    assert b.requires_grad
    exact(b.detach(), [0.0, 1.0, 1.0])
    (b * 5).sum().backward()
    exact(a.grad, [0.0, 0.0, 0.0])  # comparisons have a zero gradient, as PyTorch
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        torch.ones(2, requires_grad=True).eq_(torch.ones(2))


def test_inplace_comparison_shape_error():
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        torch.zeros(3).eq_(torch.zeros(2, 3))


@pytest.mark.parametrize("name,ref", [("logical_xor_", np.logical_xor),
                                      ("logical_and_", np.logical_and),
                                      ("logical_or_", np.logical_or)])
def test_inplace_logical(rng, name, ref):
    a = rng.integers(0, 2, (3, 4)).astype(np.float32) * 2.5
    b = rng.integers(0, 2, (3, 4)).astype(np.int64)
    x = torch.tensor(a)
    assert getattr(x, name)(torch.tensor(b)) is x
    exact(x, ref(a, b).astype(np.float32))
    y = torch.tensor(a > 0)
    getattr(y, name)(torch.tensor(b))
    assert y.dtype == torch.bool
    exact(y, ref(a > 0, b))


# --------------------------------------------------------------------------- fmax / fmin

@pytest.mark.parametrize("fn,ref", [("fmax", np.fmax), ("fmin", np.fmin)])
@pytest.mark.parametrize("np_dtype", [np.float32, np.float64])
def test_fmax_fmin_nan(rng, fn, ref, np_dtype):
    a = rng.standard_normal((5, 6)).astype(np_dtype)
    b = rng.standard_normal((6,)).astype(np_dtype)
    a[0, :3] = np.nan
    b[1] = np.nan
    b[4] = a[2, 4]  # a tie
    for _, arr, t in layouts(rng, (5, 6), np_dtype):  # NaNs of other only
        got = getattr(torch, fn)(t, torch.tensor(b))
        np.testing.assert_array_equal(got.numpy(), ref(arr, b))
    x = torch.tensor(a)
    np.testing.assert_array_equal(getattr(x, fn)(torch.tensor(b)).numpy(), ref(a, b))


@pytest.mark.parametrize("fn,ref", [("fmax", np.fmax), ("fmin", np.fmin)])
def test_fmax_fmin_dtypes(rng, fn, ref):
    a = rng.integers(-5, 5, (4,)).astype(np.int32)
    b = rng.standard_normal((4,)).astype(np.float32)
    got = getattr(torch, fn)(torch.tensor(a), torch.tensor(b))
    assert got.dtype == torch.float32
    close(got, ref(a, b).astype(np.float32))
    ints = getattr(torch, fn)(torch.tensor(a), torch.tensor(a[::-1].copy().astype(np.int64)))
    assert ints.dtype == torch.int64
    exact(ints, ref(a, a[::-1]))
    empty = getattr(torch, fn)(torch.empty(0), torch.empty(0))
    assert empty.shape == (0,)
    zero_d = getattr(torch, fn)(torch.tensor(float("nan")), torch.tensor(1.0))
    assert zero_d.shape == () and zero_d.item() == 1.0


def test_fmax_fmin_grad():
    a = leaf([[1.0, 5.0, -2.0], [0.5, 3.0, 7.0]])
    b = leaf([2.0, 4.0, -3.0])
    assert gradcheck(torch.fmax, (a, b))
    assert gradcheck(torch.fmin, (a, b))
    # NaN in other: the gradient goes to input; ties are split evenly (PyTorch 2.15)
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = torch.tensor([float("nan"), 2.0, 4.0], requires_grad=True)
    torch.fmax(x, y).sum().backward()
    exact(x.grad, [1.0, 0.5, 0.0])
    exact(y.grad, [0.0, 0.5, 1.0])


def test_fmax_requires_tensor():
    with pytest.raises(TypeError, match="must be Tensor"):
        torch.fmax(torch.ones(2), 1.0)


# --------------------------------------------------------------------------- split family

@pytest.mark.parametrize("fn,ndim", [("hsplit", 1), ("hsplit", 2), ("vsplit", 2),
                                     ("dsplit", 3), ("hsplit", 3)])
@pytest.mark.parametrize("how", [2, [1, 3], [0, 5]])
def test_split_family(rng, fn, ndim, how):
    shape = (4, 6, 4)[:ndim]
    for _, a, t in layouts(rng, shape, np.float32):
        got = getattr(torch, fn)(t, how)
        ref = getattr(np, fn)(a, how)
        assert isinstance(got, tuple) and len(got) == len(ref)
        for g, r in zip(got, ref):
            exact(g, r)
        for g, r in zip(getattr(t, fn)(how), ref):
            exact(g, r)


def test_split_family_errors():
    with pytest.raises(RuntimeError, match="torch.hsplit attempted to split along dimension "
                                           "1, but the size of the dimension 4 is not "
                                           "divisible by the split_size 3!"):
        torch.hsplit(torch.zeros(2, 4), 3)
    with pytest.raises(RuntimeError, match="torch.vsplit requires a tensor with at least 2 "
                                           "dimension, but got a tensor with 1 dimensions!"):
        torch.vsplit(torch.zeros(4), 2)
    with pytest.raises(RuntimeError, match="torch.dsplit requires a tensor with at least 3"):
        torch.dsplit(torch.zeros(2, 4), 2)
    with pytest.raises(RuntimeError, match="torch.hsplit requires a tensor with at least 1"):
        torch.hsplit(torch.tensor(1.0), 1)
    with pytest.raises(RuntimeError, match="split_size 0"):
        torch.vsplit(torch.zeros(2, 4), 0)


def test_split_family_grad():
    x = leaf(np.arange(24.0).reshape(4, 6))
    assert gradcheck(lambda t: torch.hsplit(t, [2, 5])[1] * 2, (x,))


# ------------------------------------------------------------------ block_diag, diagflat

def np_block_diag(*arrays):
    arrays = [np.atleast_2d(a) for a in arrays]
    rows = sum(a.shape[0] for a in arrays)
    cols = sum(a.shape[1] for a in arrays)
    out = np.zeros((rows, cols), dtype=np.result_type(*arrays))
    r = c = 0
    for a in arrays:
        out[r:r + a.shape[0], c:c + a.shape[1]] = a
        r, c = r + a.shape[0], c + a.shape[1]
    return out


def test_block_diag(rng):
    a = rng.standard_normal((2, 3)).astype(np.float32)
    b = rng.standard_normal((3,)).astype(np.float32)
    c = np.float32(7.0)
    d = rng.integers(0, 5, (2, 2)).astype(np.int64)
    e = np.zeros((0, 2), np.float32)
    got = torch.block_diag(torch.tensor(a), torch.tensor(b), torch.tensor(c),
                           torch.tensor(d), torch.tensor(e))
    assert got.dtype == torch.float32
    exact(got, np_block_diag(a, b, c, d.astype(np.float32), e))
    ints = torch.block_diag(torch.tensor(d), torch.tensor(d.astype(np.int32)))
    assert ints.dtype == torch.int64
    exact(ints, np_block_diag(d, d))
    t = torch.tensor(a.T.copy()).t()  # non-contiguous
    exact(torch.block_diag(t, torch.tensor(a)), np_block_diag(a, a))
    single = torch.block_diag(torch.tensor(a))
    exact(single, a)
    empty = torch.block_diag()
    assert empty.shape == (1, 0)


def test_block_diag_grad_and_errors():
    assert gradcheck(lambda a, b, c: torch.block_diag(a, b, c),
                     (leaf(np.ones((2, 3))), leaf([1.0, 2.0]), leaf(3.0)))
    with pytest.raises(RuntimeError, match="torch.block_diag: Input tensors must have 2 or "
                                           "fewer dimensions. Input 1 has 3 dimensions"):
        torch.block_diag(torch.ones(2), torch.ones(1, 1, 1))


@pytest.mark.parametrize("offset", [0, 1, -2])
def test_diagflat(rng, offset):
    a = rng.standard_normal((2, 3))
    exact(torch.diagflat(torch.tensor(a), offset), np.diagflat(a, offset))
    exact(torch.tensor(a).diagflat(offset), np.diagflat(a, offset))
    exact(torch.diagflat(torch.tensor(5), offset), np.diagflat(5, offset))
    assert gradcheck(lambda t: torch.diagflat(t, offset), (leaf(a),))


@pytest.mark.parametrize("n", [None, 0, 1, 4])
@pytest.mark.parametrize("increasing", [False, True])
def test_vander(rng, n, increasing):
    a = rng.integers(-3, 4, (5,))
    got = torch.vander(torch.tensor(a), N=n, increasing=increasing)
    assert got.dtype == torch.int64
    exact(got, np.vander(a, N=n, increasing=increasing))
    f = rng.standard_normal(4).astype(np.float32)
    gotf = torch.vander(torch.tensor(f), n, increasing)
    assert gotf.dtype == torch.float32
    close(gotf, np.vander(f, N=n, increasing=increasing), rtol=1e-5)
    b = torch.vander(torch.tensor([True, False]), 3)
    assert b.dtype == torch.int64
    exact(b, np.vander(np.array([1, 0]), 3))


def test_vander_grad_and_errors():
    assert gradcheck(lambda t: torch.vander(t, 4), (leaf([0.5, -1.5, 2.0]),))
    with pytest.raises(RuntimeError, match="x must be a one-dimensional tensor."):
        torch.vander(torch.ones(2, 2))
    with pytest.raises(RuntimeError, match="N must be non-negative."):
        torch.vander(torch.ones(2), -1)


# ------------------------------------------------------------------------- gcd / lcm

@pytest.mark.parametrize("np_dtype", [np.int64, np.int32, np.int16, np.int8, np.uint8])
def test_gcd_lcm(rng, np_dtype):
    lo = 0 if np_dtype == np.uint8 else -11
    a = rng.integers(lo, 12, (4, 5)).astype(np_dtype)
    b = rng.integers(lo, 12, (5,)).astype(np_dtype)
    a[0, 0] = b[0] = 0
    x, y = torch.tensor(a), torch.tensor(b)
    for got, ref in ((torch.gcd(x, y), np.gcd(a, b)), (x.gcd(y), np.gcd(a, b)),
                     (torch.lcm(x, y), np.lcm(a, b)), (x.lcm(y), np.lcm(a, b))):
        assert got.dtype == x.dtype
        exact(got, ref)
    z = x.clone()
    assert z.gcd_(y) is z
    exact(z, np.gcd(a, b))
    z = x.clone()
    z.lcm_(y)
    exact(z, np.lcm(a, b))
    t = torch.tensor(a.T.copy()).t()
    exact(torch.gcd(t, y), np.gcd(a, b))


def test_gcd_promotion_and_errors():
    got = torch.gcd(torch.tensor([12, 18], dtype=torch.int32), torch.tensor([8, 12]))
    assert got.dtype == torch.int64
    exact(got, [4, 6])
    zero_d = torch.gcd(torch.tensor([12, 18], dtype=torch.int32), torch.tensor(8))
    assert zero_d.dtype == torch.int32
    assert torch.gcd(torch.tensor(0), torch.tensor(0)).item() == 0
    assert torch.gcd(torch.empty(0, dtype=torch.int64), torch.empty(0, dtype=torch.int64)).shape \
        == (0,)
    with pytest.raises(RuntimeError, match="\"gcd_cpu\" not implemented for 'Float'"):
        torch.gcd(torch.ones(2), torch.ones(2))
    with pytest.raises(RuntimeError, match="\"lcm_cpu\" not implemented for 'Double'"):
        torch.lcm(torch.ones(2, dtype=F64), torch.ones(2, dtype=torch.int64))


# ------------------------------------------------------------- ldexp / frexp / nextafter

def test_ldexp(rng):
    m = rng.standard_normal((3, 4))
    e = rng.integers(-4, 5, (4,))
    got = torch.ldexp(torch.tensor(m), torch.tensor(e))
    assert got.dtype == F64
    close(got, np.ldexp(m, e), rtol=1e-15)
    f = torch.ldexp(torch.tensor(m.astype(np.float32)), torch.tensor(e))
    assert f.dtype == torch.float32
    close(f, np.ldexp(m.astype(np.float32), e), rtol=1e-6)
    i = torch.ldexp(torch.tensor([1, 3]), torch.tensor([2, 1]))
    assert i.dtype == torch.float32
    exact(i, [4.0, 6.0])
    x = torch.tensor(m)
    assert x.ldexp_(torch.tensor(e)) is x
    close(x, np.ldexp(m, e), rtol=1e-15)
    close(torch.tensor(m).ldexp(torch.tensor(e)), np.ldexp(m, e), rtol=1e-15)
    assert gradcheck(lambda t: torch.ldexp(t, torch.tensor(e)), (leaf(m),))


@pytest.mark.parametrize("np_dtype", [np.float32, np.float64, np.float16])
def test_frexp(rng, np_dtype):
    a = (rng.standard_normal((3, 5)) * 100).astype(np_dtype)
    a[0, 0], a[0, 1], a[0, 2] = 0, np.inf, -np.inf
    for _, arr, t in layouts(rng, (3, 5), np_dtype):
        mantissa, exponent = torch.frexp(t)
        ref_m, ref_e = np.frexp(arr)
        assert mantissa.dtype == t.dtype and exponent.dtype == torch.int32
        exact(mantissa, ref_m)
        exact(exponent, ref_e)
    res = torch.tensor(a).frexp()
    exact(res.mantissa, np.frexp(a)[0])
    exact(res.exponent, np.frexp(a)[1])
    zero_d = torch.frexp(torch.tensor(np_dtype(12.0)))
    assert zero_d.mantissa.item() == 0.75 and zero_d.exponent.item() == 4


def test_frexp_error():
    with pytest.raises(RuntimeError, match=r"torch.frexp\(\) only supports floating-point"):
        torch.frexp(torch.tensor([1, 2]))


@pytest.mark.parametrize("np_dtype", [np.float32, np.float64])
def test_nextafter(rng, np_dtype):
    a = rng.standard_normal((3, 4)).astype(np_dtype)
    b = rng.standard_normal((4,)).astype(np_dtype)
    a[0, 0] = b[0] = 1.0
    a[1, 1] = 0.0
    got = torch.nextafter(torch.tensor(a), torch.tensor(b))
    assert got.dtype == torch.tensor(a).dtype
    exact(got, np.nextafter(a, b))
    x = torch.tensor(a)
    assert x.nextafter_(torch.tensor(b)) is x
    exact(x, np.nextafter(a, b))
    exact(torch.tensor(a).nextafter(torch.tensor(b)), np.nextafter(a, b))


def test_nextafter_error():
    with pytest.raises(RuntimeError, match="\"nextafter_cpu\" not implemented for 'Long'"):
        torch.nextafter(torch.tensor([1]), torch.tensor([2]))


# ------------------------------------------------------------------------------ renorm

def np_renorm(a, p, dim, maxnorm):
    axes = tuple(d for d in range(a.ndim) if d != dim % a.ndim)
    norm = np.sum(np.abs(a) ** p, axis=axes, keepdims=True) ** (1.0 / p)
    factor = np.where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)
    return a * factor


@pytest.mark.parametrize("p,dim,maxnorm", [(2, 0, 1.0), (1, 1, 2.0), (3.5, -1, 0.5),
                                           (2, 2, 100.0)])
def test_renorm(rng, p, dim, maxnorm):
    for _, a, t in layouts(rng, (3, 4, 5), np.float64):
        close(torch.renorm(t, p, dim, maxnorm), np_renorm(a, p, dim, maxnorm), rtol=1e-12)
        close(t.renorm(p, dim, maxnorm), np_renorm(a, p, dim, maxnorm), rtol=1e-12)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    x = torch.tensor(a)
    assert x.renorm_(2, 0, 0.5) is x
    close(x, np_renorm(a.astype(np.float64), 2, 0, 0.5), rtol=1e-5)


def test_renorm_grad_and_errors(rng):
    a = rng.standard_normal((3, 4))
    assert gradcheck(lambda t: torch.renorm(t, 2, 0, 1.0), (leaf(a),))
    assert gradcheck(lambda t: torch.renorm(t, 1.5, 1, 0.8), (leaf(a),))
    with pytest.raises(RuntimeError, match="renorm: expected maxnorm to be >= 0 but got -1"):
        torch.renorm(torch.ones(2, 2), 2, 0, -1)
    with pytest.raises(RuntimeError, match="renorm: non-positive-norm not supported"):
        torch.renorm(torch.ones(2, 2), 0, 0, 1)
    with pytest.raises(RuntimeError, match="renorm: input needs at least 2 dimensions, got 1"):
        torch.renorm(torch.ones(2), 2, 0, 1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.renorm(torch.ones(2, 2), 2, 2, 1)


# ----------------------------------------------------------------------- dtype queries

def test_result_type():
    t = torch.tensor
    assert torch.result_type(t([1, 2]), 1.0) == torch.float32
    assert torch.result_type(t([1, 2], dtype=torch.int32), 5) == torch.int32
    assert torch.result_type(t([1, 2], dtype=torch.int32), t(5)) == torch.int32
    assert torch.result_type(t([1, 2], dtype=torch.int32), t([5])) == torch.int64
    assert torch.result_type(t(1.0, dtype=F64), t([1, 2])) == F64
    assert torch.result_type(t(1.0, dtype=F64), t([1.0])) == torch.float32
    assert torch.result_type(t([True]), 2) == torch.int64
    assert torch.result_type(t([True]), True) == torch.bool
    assert torch.result_type(t([1], dtype=torch.uint8), t(1, dtype=torch.int8)) == torch.uint8
    assert torch.result_type(t([1], dtype=torch.uint8), t([1], dtype=torch.int8)) == torch.int16
    assert torch.result_type(t([1.0], dtype=torch.float16), 2.5) == torch.float16
    assert torch.result_type(2, 3.0) == torch.float32
    assert torch.result_type(2, 3) == torch.int64


def test_can_cast_and_promote_types():
    assert torch.can_cast(torch.float64, torch.float32)
    assert not torch.can_cast(torch.float32, torch.int32)
    assert torch.can_cast(torch.int64, torch.float16)
    assert not torch.can_cast(torch.int32, torch.bool)
    assert torch.can_cast(torch.bool, torch.uint8)
    assert torch.can_cast(torch.uint8, torch.int8)
    assert torch.promote_types(torch.uint8, torch.int8) == torch.int16


def test_is_complex_signed_nonzero():
    x = torch.ones(2)
    assert torch.is_complex(x) is False and x.is_complex() is False
    assert torch.is_signed(x) and torch.tensor([1]).is_signed()
    assert not torch.is_signed(torch.tensor([1], dtype=torch.uint8))
    assert not torch.tensor([True]).is_signed()
    assert torch.is_nonzero(torch.tensor([1.5])) is True
    assert torch.is_nonzero(torch.tensor(0)) is False
    assert torch.tensor([[False]]).is_nonzero() is False
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with no values is ambiguous"):
        torch.is_nonzero(torch.empty(0))
    with pytest.raises(RuntimeError, match="with more than one value is ambiguous"):
        torch.is_nonzero(torch.ones(2))
    with pytest.raises(TypeError):
        torch.is_complex(1.0)


# ------------------------------------------------------------------- asarray and range

def test_asarray_shares_and_copies():
    a = np.arange(6.0).reshape(2, 3)
    t = torch.asarray(a)
    assert t.dtype == F64
    a[0, 0] = 42
    assert t[0, 0].item() == 42  # shared
    c = torch.asarray(a, copy=True)
    a[0, 1] = -1
    assert c[0, 1].item() == 1.0
    x = torch.ones(3)
    assert torch.asarray(x) is x
    y = torch.asarray(x, copy=True)
    assert y is not x
    y.add_(1)
    exact(x, [1.0, 1.0, 1.0])
    z = torch.asarray(x, dtype=F64)
    assert z.dtype == F64
    exact(z, [1.0, 1.0, 1.0])
    with pytest.raises(ValueError):
        torch.asarray(x, dtype=F64, copy=False)
    with pytest.raises(ValueError):
        torch.asarray([1, 2], copy=False)
    lst = torch.asarray([[1, 2], [3, 4]])
    assert lst.dtype == torch.int64
    exact(lst, [[1, 2], [3, 4]])
    f = torch.asarray([1.5, 2.0], requires_grad=True)
    assert f.dtype == torch.float32 and f.requires_grad
    assert torch.asarray(3.0).shape == ()
    assert torch.asarray([1, 2], dtype=torch.float64).dtype == F64


@pytest.mark.parametrize("args,ref", [((1, 4), [1.0, 2.0, 3.0, 4.0]),
                                      ((0, 1, 0.25), [0.0, 0.25, 0.5, 0.75, 1.0]),
                                      ((0, 3), [0.0, 1.0, 2.0, 3.0]),
                                      ((5, 1, -2), [5.0, 3.0, 1.0]),
                                      ((0, 1, 0.3), [0.0, 0.3, 0.6, 0.9]),
                                      ((2, 2), [2.0]),
                                      ((0, 0.9, 0.3), [0.0, 0.3, 0.6, 0.9])])
def test_range(args, ref):
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        got = torch.range(*args)
    assert got.dtype == torch.float32
    close(got, ref, rtol=1e-6)


def test_range_dtype_and_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = torch.range(1, 3, dtype=torch.int64)
        assert got.dtype == torch.int64
        exact(got, [1, 2, 3])
        assert torch.range(0, 1, 0.5, dtype=F64).dtype == F64
        with pytest.raises(TypeError, match="end"):
            torch.range(3)
        with pytest.raises(RuntimeError, match="step must be nonzero"):
            torch.range(0, 1, 0)
        with pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent with "
                                               "step sign"):
            torch.range(3, 1)
    assert builtins_range_unaffected()


def builtins_range_unaffected():
    return list(range(3)) == [0, 1, 2]


# ---------------------------------------------------------------------------- histogram

@pytest.mark.parametrize("np_dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bins", [1, 5, 13])
def test_histogram_int_bins(rng, np_dtype, bins):
    a = rng.standard_normal((4, 25)).astype(np_dtype)
    for _, arr, t in layouts(rng, (4, 25), np_dtype):
        hist, edges = torch.histogram(t, bins)
        ref_hist, ref_edges = np.histogram(arr, bins)
        assert hist.dtype == t.dtype and edges.dtype == t.dtype
        close(edges, ref_edges, rtol=1e-5, atol=1e-6)
        exact(hist, ref_hist.astype(np_dtype))
    w = rng.random((4, 25)).astype(np_dtype)
    res = torch.tensor(a).histogram(bins, range=(-1.0, 1.5), weight=torch.tensor(w),
                                    density=True)
    ref_hist, ref_edges = np.histogram(a, bins, range=(-1.0, 1.5), weights=w, density=True)
    close(res.hist, ref_hist, rtol=1e-4)
    close(res.bin_edges, ref_edges, rtol=1e-6)


def test_histogram_tensor_bins_and_edges(rng):
    a = np.array([0.0, 1.0, 1.0, 2.5, 3.0, 4.0, -1.0, np.nan])
    edges = np.array([0.0, 1.0, 2.5, 3.0])
    hist, got_edges = torch.histogram(torch.tensor(a), torch.tensor(edges))
    exact(hist, [1.0, 2.0, 2.0])  # last bin closed, values outside and NaN ignored
    exact(got_edges, edges)
    ref = np.histogram(a[~np.isnan(a)], edges)[0]
    exact(hist, ref.astype(np.float64))
    dens = torch.histogram(torch.tensor(a), torch.tensor(edges), density=True).hist
    close(dens, np.histogram(a[~np.isnan(a)], edges, density=True)[0], rtol=1e-12)


def test_histogram_degenerate_and_errors():
    hist, edges = torch.histogram(torch.tensor([2.0, 2.0]), 2)
    exact(edges, [1.5, 2.0, 2.5])
    exact(hist, [0.0, 2.0])
    hist, edges = torch.histogram(torch.empty(0), 3)
    exact(hist, [0.0, 0.0, 0.0])
    close(edges, np.linspace(0.0, 1.0, 4))  # torch 2.15: an empty input spans [0, 1]
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        torch.histogram(torch.ones(3), 0)
    with pytest.raises(RuntimeError, match="min should not exceed max"):
        torch.histogram(torch.ones(3), 2, range=(1.0, 0.0))
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        torch.histogram(torch.tensor([1, 2]), 2)
    with pytest.raises(RuntimeError, match="same dtype"):
        torch.histogram(torch.ones(3), torch.tensor([0.0, 1.0], dtype=F64))


def test_histc_still_available():
    exact(torch.histc(torch.tensor([1.0, 2.0, 1.0]), bins=4, min=0, max=3),
          [0.0, 2.0, 1.0, 0.0])


# --------------------------------------------------------------------- scatter variants

@pytest.mark.parametrize("dim,index", [(0, 1), (1, -1), (2, 0)])
def test_select_scatter(rng, dim, index):
    a = rng.standard_normal((3, 4, 5))
    shape = list(a.shape)
    del shape[dim]
    s = rng.standard_normal(shape)
    ref = a.copy()
    np.moveaxis(ref, dim, 0)[index] = s
    for _, arr, t in layouts(rng, (3, 4, 5), np.float64):
        ref2 = arr.copy()
        np.moveaxis(ref2, dim, 0)[index] = s
        exact(torch.select_scatter(t, torch.tensor(s), dim, index), ref2)
    exact(torch.tensor(a).select_scatter(torch.tensor(s), dim, index), ref)
    assert gradcheck(lambda x, y: torch.select_scatter(x, y, dim, index), (leaf(a), leaf(s)))


@pytest.mark.parametrize("dim,start,end,step", [(0, None, None, 1), (1, 1, 4, 2),
                                                (1, -3, None, 1), (0, 0, 2, 1), (1, 2, 2, 1)])
def test_slice_scatter(rng, dim, start, end, step):
    a = rng.standard_normal((3, 5))
    idx = (slice(None),) * dim + (slice(start, end, step),)
    s = rng.standard_normal(a[idx].shape)
    ref = a.copy()
    ref[idx] = s
    exact(torch.slice_scatter(torch.tensor(a), torch.tensor(s), dim, start, end, step), ref)
    exact(torch.tensor(a).slice_scatter(torch.tensor(s), dim, start, end, step), ref)
    t = torch.tensor(a.T.copy()).t()
    exact(torch.slice_scatter(t, torch.tensor(s), dim=dim, start=start, end=end, step=step), ref)
    if s.size:
        assert gradcheck(lambda x, y: torch.slice_scatter(x, y, dim, start, end, step),
                         (leaf(a), leaf(s)))


@pytest.mark.parametrize("offset,dim1,dim2", [(0, 0, 1), (1, 0, 1), (-1, 1, 2), (2, 2, 0)])
def test_diagonal_scatter(rng, offset, dim1, dim2):
    a = rng.standard_normal((3, 4, 5))
    view_shape = np.diagonal(a, offset, dim1, dim2).shape
    s = rng.standard_normal(view_shape)
    ref = a.copy()
    moved = np.moveaxis(ref, (dim1, dim2), (-2, -1))  # a writable view of ref
    k = np.arange(view_shape[-1])
    moved[..., k + max(-offset, 0), k + max(offset, 0)] = s
    got = torch.diagonal_scatter(torch.tensor(a), torch.tensor(s), offset, dim1, dim2)
    exact(got, ref)
    exact(torch.tensor(a).diagonal_scatter(torch.tensor(s), offset, dim1, dim2), ref)
    exact(torch.diagonal(got, offset, dim1, dim2), s)
    assert gradcheck(lambda x, y: torch.diagonal_scatter(x, y, offset, dim1, dim2),
                     (leaf(a), leaf(s)))


def test_scatter_variant_errors():
    with pytest.raises(RuntimeError, match=r"expected src to have a size equal to the slice of "
                                           r"self. src size = \[3\], slice size = \[4\]"):
        torch.select_scatter(torch.zeros(3, 4), torch.zeros(3), 0, 0)
    with pytest.raises(RuntimeError, match="expected src to have a size equal"):
        torch.slice_scatter(torch.zeros(3, 4), torch.zeros(3, 3), 1, 0, 2)
    with pytest.raises(RuntimeError, match="expected src to have a size equal"):
        torch.diagonal_scatter(torch.zeros(3, 4), torch.zeros(4))


def test_narrow_copy(rng):
    a = rng.standard_normal((4, 6))
    for _, arr, t in layouts(rng, (4, 6), np.float64):
        got = torch.narrow_copy(t, 1, 2, 3)
        assert got.is_contiguous()
        exact(got, arr[:, 2:5])
    x = torch.tensor(a)
    c = x.narrow_copy(0, 1, 2)
    c.fill_(0)
    exact(x, a)  # a copy, not a view


def test_sum_to_size(rng):
    a = rng.standard_normal((2, 3, 4))
    x = torch.tensor(a)
    close(x.sum_to_size(3, 1), a.sum(axis=0).sum(axis=1, keepdims=True), rtol=1e-12)
    close(x.sum_to_size((1, 3, 4)), a.sum(axis=0, keepdims=True), rtol=1e-12)
    close(x.sum_to_size([4]), a.sum(axis=(0, 1)), rtol=1e-12)
    assert x.sum_to_size(2, 3, 4) is x
    assert gradcheck(lambda t: t.sum_to_size(1, 4), (leaf(a),))
    with pytest.raises(RuntimeError, match=r"size \{\[5\]\} is not expandable to size "
                                           r"\{\[2, 3, 4\]\}."):
        x.sum_to_size(5)


@pytest.mark.parametrize("shape,wrap", [((3, 3), False), ((5, 3), False), ((7, 3), True),
                                        ((3, 5), True), ((4, 4, 4), False), ((4, 1), True),
                                        ((10, 3), True)])
def test_fill_diagonal_(shape, wrap):
    a = np.zeros(shape)
    np.fill_diagonal(a, 2.5, wrap=wrap)
    x = torch.zeros(*shape)
    assert x.fill_diagonal_(2.5, wrap=wrap) is x
    exact(x, a.astype(np.float32))


def test_fill_diagonal_errors_and_grad():
    with pytest.raises(RuntimeError, match="dimensions must larger than 1"):
        torch.zeros(3).fill_diagonal_(1)
    with pytest.raises(RuntimeError, match="all dimensions of input must be of equal length"):
        torch.zeros(2, 2, 3).fill_diagonal_(1)
    x = leaf(np.ones((3, 3)))
    y = x * 2
    y.fill_diagonal_(0)
    y.sum().backward()
    exact(x.grad, 2 * (1 - np.eye(3)))


# ------------------------------------------------------------------------ add* family

@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2.0), (0, 1.5)])
def test_addbmm_addr(rng, beta, alpha):
    inp = rng.standard_normal((3, 4))
    b1, b2 = rng.standard_normal((5, 3, 2)), rng.standard_normal((5, 2, 4))
    ref = beta * inp + alpha * np.einsum("bij,bjk->ik", b1, b2)
    got = torch.addbmm(torch.tensor(inp), torch.tensor(b1), torch.tensor(b2), beta=beta,
                       alpha=alpha)
    close(got, ref, rtol=1e-12)
    close(torch.tensor(inp).addbmm(torch.tensor(b1), torch.tensor(b2), beta=beta, alpha=alpha),
          ref, rtol=1e-12)
    x = torch.tensor(inp)
    assert x.addbmm_(torch.tensor(b1), torch.tensor(b2), beta=beta, alpha=alpha) is x
    close(x, ref, rtol=1e-12)
    # broadcast input, non-contiguous batches
    got_b = torch.addbmm(torch.tensor(inp[0]), torch.tensor(b1).transpose(1, 2).transpose(1, 2),
                         torch.tensor(b2), beta=beta, alpha=alpha)
    close(got_b, beta * inp[0] + alpha * np.einsum("bij,bjk->ik", b1, b2), rtol=1e-12)

    v1, v2 = rng.standard_normal(3), rng.standard_normal(4)
    ref_r = beta * inp + alpha * np.outer(v1, v2)
    close(torch.addr(torch.tensor(inp), torch.tensor(v1), torch.tensor(v2), beta=beta,
                     alpha=alpha), ref_r, rtol=1e-12)
    y = torch.tensor(inp)
    assert y.addr_(torch.tensor(v1), torch.tensor(v2), beta=beta, alpha=alpha) is y
    close(y, ref_r, rtol=1e-12)


def test_add_family_beta_zero_ignores_nan():
    nan = torch.full((2, 2), float("nan"))
    got = torch.addr(nan, torch.ones(2), torch.ones(2), beta=0)
    exact(got, np.ones((2, 2), np.float32))
    got = torch.addbmm(nan, torch.ones(3, 2, 1), torch.ones(3, 1, 2), beta=0)
    exact(got, np.full((2, 2), 3.0, np.float32))


def test_add_family_ints_and_errors():
    got = torch.addr(torch.ones(2, 2, dtype=torch.int64), torch.tensor([1, 2]),
                     torch.tensor([3, 4]), beta=2, alpha=3)
    assert got.dtype == torch.int64
    exact(got, 2 + 3 * np.outer([1, 2], [3, 4]))
    with pytest.raises(RuntimeError, match="For integral input tensors, argument beta must not "
                                           "be a floating point number."):
        torch.addr(torch.ones(2, 2, dtype=torch.int64), torch.tensor([1, 2]),
                   torch.tensor([3, 4]), beta=0.5)
    with pytest.raises(RuntimeError, match="addr: Expected 1-D argument vec1, but got 2-D"):
        torch.addr(torch.ones(2, 2), torch.ones(2, 1), torch.ones(2))
    with pytest.raises(RuntimeError, match="batch1 must be a 3D tensor"):
        torch.addbmm(torch.ones(2, 2), torch.ones(2, 2), torch.ones(1, 2, 2))
    with pytest.raises(RuntimeError, match="batch1 and batch2 must have same number of batches"):
        torch.addbmm(torch.ones(2, 2), torch.ones(2, 2, 2), torch.ones(1, 2, 2))
    with pytest.raises(RuntimeError, match="Incompatible matrix sizes for bmm"):
        torch.addbmm(torch.ones(2, 2), torch.ones(1, 2, 3), torch.ones(1, 2, 2))
    with pytest.raises(RuntimeError, match="The expanded size of the tensor"):
        torch.addr(torch.ones(3, 3), torch.ones(2), torch.ones(3))


def test_add_family_grad(rng):
    assert gradcheck(lambda i, a, b: torch.addr(i, a, b, beta=0.5, alpha=2.0),
                     (leaf(rng.standard_normal((2, 3))), leaf(rng.standard_normal(2)),
                      leaf(rng.standard_normal(3))))
    assert gradcheck(lambda i, a, b: torch.addbmm(i, a, b, beta=1.5, alpha=-0.5),
                     (leaf(rng.standard_normal(3)), leaf(rng.standard_normal((4, 2, 5))),
                      leaf(rng.standard_normal((4, 5, 3)))))


@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2.0)])
def test_native_add_inplace_methods(rng, beta, alpha):
    inp = rng.standard_normal((3, 4))
    m1, m2 = rng.standard_normal((3, 2)), rng.standard_normal((2, 4))
    x = torch.tensor(inp)
    assert x.addmm_(torch.tensor(m1), torch.tensor(m2), beta=beta, alpha=alpha) is x
    close(x, beta * inp + alpha * m1 @ m2, rtol=1e-12)
    v = rng.standard_normal(4)
    y = torch.tensor(inp[:, 0].copy())
    y.addmv_(torch.tensor(inp), torch.tensor(v), beta=beta, alpha=alpha)
    close(y, beta * inp[:, 0] + alpha * inp @ v, rtol=1e-12)
    b = rng.standard_normal((2, 3, 4))
    b1, b2 = rng.standard_normal((2, 3, 5)), rng.standard_normal((2, 5, 4))
    z = torch.tensor(b)
    z.baddbmm_(torch.tensor(b1), torch.tensor(b2), beta=beta, alpha=alpha)
    close(z, beta * b + alpha * b1 @ b2, rtol=1e-12)
    with pytest.raises(RuntimeError):
        torch.ones(3).addmm_(torch.ones(3, 2), torch.ones(2, 4))


# ---------------------------------------------------------------- triangular systems

def spd(rng, n, batch=()):
    a = rng.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("batch", [(), (2,)])
def test_cholesky_solve(rng, upper, batch):
    A = spd(rng, 4, batch)
    B = rng.standard_normal(batch + (4, 3))
    L = np.linalg.cholesky(A)
    factor = np.swapaxes(L, -1, -2) if upper else L
    expected = np.linalg.solve(A, B)
    got = torch.cholesky_solve(torch.tensor(B), torch.tensor(factor), upper)
    close(got, expected, rtol=1e-10, atol=1e-12)
    close(torch.tensor(B).cholesky_solve(torch.tensor(factor), upper=upper), expected,
          rtol=1e-10, atol=1e-12)
    # only the factor's triangle is read
    junk = factor + (np.tril(np.ones((4, 4)), -1) if upper else np.triu(np.ones((4, 4)), 1))
    close(torch.cholesky_solve(torch.tensor(B), torch.tensor(junk), upper=upper), expected,
          rtol=1e-10, atol=1e-12)
    f32 = torch.cholesky_solve(torch.tensor(B.astype(np.float32)),
                               torch.tensor(factor.astype(np.float32)), upper)
    assert f32.dtype == torch.float32
    close(f32, expected, rtol=1e-3, atol=1e-4)


def test_cholesky_solve_broadcast_and_grad(rng):
    A = spd(rng, 3)
    L = np.linalg.cholesky(A)
    B = rng.standard_normal((2, 3, 2))
    close(torch.cholesky_solve(torch.tensor(B), torch.tensor(L)), np.linalg.solve(A, B),
          rtol=1e-10)
    assert gradcheck(lambda b, f: torch.cholesky_solve(b, f.tril()),
                     (leaf(rng.standard_normal((3, 2))), leaf(L)))
    assert gradcheck(lambda b, f: torch.cholesky_solve(b, f.triu(), upper=True),
                     (leaf(rng.standard_normal((2, 3, 2))), leaf(L.T.copy())))


def test_cholesky_solve_errors():
    with pytest.raises(RuntimeError, match="b should have at least 2 dimensions, but has 1"):
        torch.cholesky_solve(torch.ones(3), torch.eye(3))
    with pytest.raises(RuntimeError, match="u should have at least 2 dimensions"):
        torch.cholesky_solve(torch.ones(3, 1), torch.ones(3))
    with pytest.raises(RuntimeError, match="Expected b and A to have the same dtype"):
        torch.cholesky_solve(torch.ones(3, 1), torch.eye(3, dtype=F64))


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("unitriangular", [False, True])
def test_triangular_solve(rng, upper, transpose, unitriangular):
    A = rng.standard_normal((2, 4, 4)) + 4 * np.eye(4)
    B = rng.standard_normal((2, 4, 3))
    T = np.triu(A) if upper else np.tril(A)
    if unitriangular:
        T = np.triu(A, 1) if upper else np.tril(A, -1)
        T = T + np.eye(4)
    M = np.swapaxes(T, -1, -2) if transpose else T
    expected = np.linalg.solve(M, B)
    res = torch.triangular_solve(torch.tensor(B), torch.tensor(A), upper=upper,
                                 transpose=transpose, unitriangular=unitriangular)
    close(res.solution, expected, rtol=1e-10, atol=1e-12)
    exact(res.cloned_coefficient, A)  # the full coefficient, copied
    sol, coeff = torch.tensor(B).triangular_solve(torch.tensor(A), upper, transpose,
                                                  unitriangular)
    close(sol, expected, rtol=1e-10, atol=1e-12)
    assert gradcheck(lambda b, a: torch.triangular_solve(b, a, upper, transpose,
                                                         unitriangular)[0],
                     (leaf(B[0]), leaf(A[0])))


def test_triangular_solve_errors():
    with pytest.raises(RuntimeError, match="A must be batches of square matrices"):
        torch.triangular_solve(torch.ones(2, 1), torch.ones(2, 3))
    with pytest.raises(RuntimeError, match="Incompatible matrix sizes"):
        torch.triangular_solve(torch.ones(3, 1), torch.eye(2))


# ---------------------------------------------------------------------------- windows

def np_windows(name, n, periodic, **kw):
    m = n + 1 if periodic else n
    if name == "hann_window":
        w = np.hanning(m)
    elif name == "hamming_window":
        alpha, beta = kw.get("alpha", 0.54), kw.get("beta", 0.46)
        k = np.arange(m)
        w = alpha - beta * np.cos(2 * np.pi * k / (m - 1)) if m > 1 else np.ones(m)
    elif name == "bartlett_window":
        w = np.bartlett(m)
    elif name == "blackman_window":
        w = np.blackman(m)
    else:
        w = np.kaiser(m, kw.get("beta", 12.0))
    return w[:n] if periodic else w


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "bartlett_window",
                                  "blackman_window", "kaiser_window"])
@pytest.mark.parametrize("n", [0, 1, 2, 5, 8, 33])
@pytest.mark.parametrize("periodic", [True, False])
def test_windows(name, n, periodic):
    fn = getattr(torch, name)
    w64 = fn(n, periodic, dtype=F64)
    assert w64.dtype == F64 and w64.shape == (n,)
    ref = np.ones(n) if n == 1 else np_windows(name, n, periodic)
    close(w64, ref, rtol=1e-10, atol=1e-12)
    w = fn(n, periodic=periodic)
    assert w.dtype == torch.float32
    close(w, ref, rtol=1e-5, atol=1e-6)
    assert fn(n).shape == (n,)


def test_window_parameters_and_errors():
    close(torch.hamming_window(7, False, alpha=0.6, beta=0.3, dtype=F64),
          np_windows("hamming_window", 7, False, alpha=0.6, beta=0.3), rtol=1e-12)
    close(torch.kaiser_window(9, False, beta=5.0, dtype=F64), np.kaiser(9, 5.0), rtol=1e-10)
    close(torch.kaiser_window(9, beta=3.0, dtype=F64), np.kaiser(10, 3.0)[:9], rtol=1e-10)
    h = torch.hann_window(4, dtype=torch.float16)
    assert h.dtype == torch.float16
    close(h.float(), np.hanning(5)[:4], rtol=1e-3, atol=1e-3)
    w = torch.hann_window(4, requires_grad=True)
    assert w.requires_grad and w.is_leaf
    with pytest.raises(RuntimeError, match="hann_window expects floating point dtypes"):
        torch.hann_window(4, dtype=torch.int64)
    with pytest.raises(RuntimeError, match="kaiser_window requires non-negative window_length, "
                                           "got window_length=-1"):
        torch.kaiser_window(-1)


# ----------------------------------------------------------------------- Tensor utilities

def test_resize_shrink_and_regrow():
    x = torch.arange(6.0)
    assert x.resize_(2, 2) is x
    assert x.shape == (2, 2)
    exact(x, [[0.0, 1.0], [2.0, 3.0]])
    x.resize_((3, 2))  # back within the original storage
    exact(x, [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]])
    x.resize_(0)
    assert x.shape == (0,)
    t = torch.arange(6.0).reshape(2, 3).t()
    assert t.resize_(3, 2) is t and t.stride() == (1, 3)  # same shape: strides kept
    y = torch.arange(6.0)
    y.resize_as_(torch.empty(3, 2))
    assert y.shape == (3, 2)
    exact(y, np.arange(6.0).reshape(3, 2))
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        torch.ones(3, requires_grad=True).resize_(2)


def test_resize_grows_the_storage():
    for dtype in (torch.float32, torch.int64, torch.bool, torch.float16):
        x = torch.arange(6).to(dtype)
        assert x.resize_(4, 4) is x
        assert x.shape == (4, 4) and x.stride() == (4, 1) and x.dtype == dtype
        exact(x.reshape(-1)[:6], np.arange(6).astype(bool if dtype == torch.bool else float))
        x[3, 3] = 1  # the new elements are real storage
        assert x.untyped_storage().nbytes() == 16 * x.element_size()
    # A view grows from its storage offset; the tensor it came from keeps the old storage.
    base = torch.tensor([1.0, 2.0, 3.0])
    v = base[1:]
    v.resize_(2, 3)
    assert v.storage_offset() == 1
    exact(v[0, :2], [2.0, 3.0])
    exact(base, [1.0, 2.0, 3.0])
    e = torch.empty(0)
    e.resize_(3)
    assert e.shape == (3,)


def test_out_argument():
    out = torch.empty(2)
    got = torch.fmax(torch.tensor([1.0, 5.0]), torch.tensor([3.0, 2.0]), out=out)
    assert got is out
    exact(out, [3.0, 5.0])
    big = torch.zeros(2, 3)  # resized (shrunk) to the result's shape, as PyTorch
    torch.addr(torch.zeros(2, 2), torch.ones(2), torch.ones(2), out=big)
    assert big.shape == (2, 2)
    exact(big, np.ones((2, 2), np.float32))
    grown = torch.empty(0)  # grown past its storage (ferrotorch/_out.py), as PyTorch
    assert torch.fmax(torch.ones(3), torch.ones(3), out=grown) is grown
    exact(grown, [1.0, 1.0, 1.0])


def test_pin_and_share_memory():
    x = torch.arange(3.0)
    p = x.pin_memory()
    assert p is not x and not p.is_pinned()
    exact(p, [0.0, 1.0, 2.0])
    assert not x.is_shared()
    assert x.share_memory_() is x
    assert x.is_shared()
    assert not torch.arange(3.0).is_shared()


def test_interop_threads():
    n = torch.get_num_interop_threads()
    assert isinstance(n, int) and n >= 1
    with pytest.raises(RuntimeError, match="Expected positive number of threads"):
        torch.set_num_interop_threads(0)

