"""Reductions, scans and softmax against NumPy: every dtype, 0-d/empty/non-contiguous inputs,
keepdim, several and negative dims, ties, NaN, large magnitudes."""

import math

import numpy as np
import pytest

import ferrotorch as torch

# NumPy warns about empty means / zero degrees of freedom in the reference results.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

ALL_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64",
              "float16", "bfloat16", "float32", "float64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
INTS = ["bool", "uint8", "int8", "int16", "int32", "int64"]
SHAPES = [(), (0,), (7,), (3, 4), (2, 3, 5), (2, 0, 3), (4, 1, 6)]
RTOL = {"float16": 2e-2, "bfloat16": 5e-2, "float32": 1e-5, "float64": 1e-12}


def make(shape, dtype, seed=0, low=-5, high=6):
    """A tensor of `dtype` and the float64/int64 NumPy array of exactly its values."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        a = rng.integers(0, 2, size=shape).astype(bool)
    elif dtype in FLOATS:
        a = rng.standard_normal(shape).astype(np.float32)
    elif dtype == "uint8":
        a = rng.integers(0, high + 5, size=shape).astype(np.uint8)
    else:
        a = rng.integers(low, high, size=shape).astype(dtype)
    t = torch.tensor(a).to(getattr(torch, dtype))
    return t, ref(t)


def ref(t):
    """The values of a tensor as a float64 (floats) / int64 / bool NumPy array."""
    if t.dtype.is_floating_point:
        return np.asarray(t.double().numpy())
    if t.dtype == torch.bool:
        return np.asarray(t.numpy())
    return np.asarray(t.long().numpy())


def dim_cases(ndim):
    cases = [None, ()]
    for d in range(ndim):
        cases += [d, d - ndim]
    if ndim >= 2:
        cases += [(0, -1), (-1, 0)]
    if ndim >= 3:
        cases += [(0, 2), (1, 2)]
    return cases


def np_axis(dim):
    if dim is None or dim == ():
        return None
    return dim


def check(got, want, dtype=None, rtol=None, atol=0.0):
    got_np = ref(got)
    want = np.asarray(want)
    assert got_np.shape == want.shape, (got_np.shape, want.shape)
    if rtol is None:
        rtol = RTOL.get(dtype, 0)
    if rtol:
        np.testing.assert_allclose(got_np, want, rtol=rtol, atol=atol or rtol)
    else:
        np.testing.assert_array_equal(got_np, want)


# --------------------------------------------------------------------------- sum, prod, mean


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_sum_every_dtype_shape_and_dim(dtype, shape):
    t, a = make(shape, dtype)
    for dim in dim_cases(len(shape)):
        for keepdim in (False, True):
            got = t.sum(dim, keepdim) if dim is not None else t.sum(keepdim=keepdim)
            want = np.sum(a, axis=np_axis(dim), keepdims=keepdim,
                          dtype=np.float64 if dtype in FLOATS else np.int64)
            expected_dtype = getattr(torch, dtype) if dtype in FLOATS else torch.int64
            assert got.dtype == expected_dtype
            check(got, want, dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_prod(dtype):
    rng = np.random.default_rng(1)
    if dtype in FLOATS:
        a = rng.uniform(0.5, 1.5, size=(3, 4, 5)).astype(np.float32)
        t = torch.tensor(a).to(getattr(torch, dtype))
        a = ref(t)
    else:
        t, a = make((3, 4, 5), dtype)
    for dim in [None, 0, 1, -1]:
        for keepdim in (False, True):
            got = t.prod(dim, keepdim) if dim is not None else t.prod()
            want = np.prod(a, axis=dim, keepdims=keepdim and dim is not None,
                           dtype=np.float64 if dtype in FLOATS else np.int64)
            check(got, want, dtype)
    assert t.prod().dtype == (getattr(torch, dtype) if dtype in FLOATS else torch.int64)


def test_prod_empty_is_one_and_int_wraps_like_numpy():
    assert torch.from_numpy(np.zeros((0, 3), np.float32)).prod().item() == 1.0
    big = np.array([3**20, 3**20, 7], dtype=np.int64)
    with np.errstate(over="ignore"):
        assert torch.tensor(big).prod().item() == int(np.prod(big))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", SHAPES)
def test_mean(dtype, shape):
    t, a = make(shape, dtype)
    for dim in dim_cases(len(shape)):
        for keepdim in (False, True):
            got = t.mean(dim, keepdim) if dim is not None else t.mean()
            with np.errstate(invalid="ignore", divide="ignore"):
                import warnings
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    want = np.mean(a, axis=np_axis(dim),
                                   keepdims=keepdim and dim is not None)
            assert got.dtype == getattr(torch, dtype)
            check(got, want, dtype)


@pytest.mark.parametrize("dtype", INTS)
def test_mean_of_integers_raises_but_dtype_works(dtype):
    t, a = make((3, 4), dtype)
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype"):
        t.mean()
    with pytest.raises(RuntimeError, match="could not infer output dtype"):
        t.mean(dtype=torch.int64)
    got = t.mean(1, dtype=torch.float64)
    assert got.dtype == torch.float64
    check(got, a.astype(np.float64).mean(1), rtol=1e-12)


def test_sum_dtype_argument_casts_input():
    t = torch.tensor(np.array([[1.7, 2.6], [-1.5, 4.2]], np.float32))
    assert t.sum(dtype=torch.float64).dtype == torch.float64
    # int dtype: the input is truncated first, like PyTorch.
    assert t.sum(dtype=torch.int32).item() == 1 + 2 - 1 + 4
    assert t.sum(dtype=torch.int32).dtype == torch.int32
    i8 = torch.tensor(np.array([100, 100, 100], np.int8))
    assert i8.sum().item() == 300  # int64 accumulation, no wrap
    assert i8.sum(dtype=torch.int8).item() == np.int8(300 - 256)
    assert torch.tensor([True, True]).sum(dtype=torch.float32).item() == 2.0


def test_sum_of_empty_is_zero_and_0d():
    e = torch.from_numpy(np.zeros((0,), np.float32))
    assert e.sum().item() == 0.0
    assert e.sum().shape == ()
    z = torch.tensor(3.5)
    assert z.sum().item() == 3.5
    assert z.sum(0).item() == 3.5
    assert z.sum(-1, keepdim=True).shape == ()
    with pytest.raises(IndexError):
        z.sum(1)


def test_large_sums_are_accurate_on_every_path():
    rng = np.random.default_rng(5)
    a = (rng.random(1_200_001) * 1000).astype(np.float32)  # full reduction, parallel
    exact = a.astype(np.float64).sum()
    assert abs(torch.tensor(a).sum().item() - exact) / exact < 1e-6
    m = a[:1_050_000].reshape(150_000, 7)  # column path, reduced range split
    got = torch.from_numpy(m).sum(0)
    np.testing.assert_allclose(ref(got), m.astype(np.float64).sum(0), rtol=1e-6)
    m3 = a[:400_000].reshape(50, 1000, 8)  # middle dim
    np.testing.assert_allclose(ref(torch.from_numpy(m3).sum(1)),
                               m3.astype(np.float64).sum(1), rtol=1e-6)
    rows = a[:1_200_000].reshape(3, 400_000)  # few long rows
    np.testing.assert_allclose(ref(torch.from_numpy(rows).sum(1)),
                               rows.astype(np.float64).sum(1), rtol=1e-6)
    mean = torch.from_numpy(a[:1_000_000].reshape(1000, 1000)).mean(0)
    np.testing.assert_allclose(ref(mean), a[:1_000_000].reshape(1000, 1000).mean(0,
                               dtype=np.float64), rtol=1e-6)


def noncontiguous_views():
    """Non-contiguous NumPy views, imported zero-copy (the tensors keep the strides)."""
    rng = np.random.default_rng(3)
    base = rng.standard_normal((6, 8, 5)).astype(np.float32)
    return [
        base.transpose(2, 0, 1),
        base[::2],
        base[:, 1::3, ::2],
        base[1].T,
        base[:, 3, :],
        np.broadcast_to(base[0, 0], (4, 5)),
    ]


@pytest.mark.parametrize("k", range(6))
def test_noncontiguous_inputs(k):
    a = noncontiguous_views()[k]
    t = torch.from_numpy(a)
    a64 = a.astype(np.float64)
    nd = a.ndim
    for dim in [None, 0, -1, (0, nd - 1)]:
        ax = dim
        s = t.sum(dim) if dim is not None else t.sum()
        np.testing.assert_allclose(ref(s), a64.sum(axis=ax), rtol=1e-5, atol=1e-5)
        m = t.amax(dim) if dim is not None else t.amax()
        np.testing.assert_array_equal(ref(m), a64.max(axis=ax))
        v = t.var(dim) if dim is not None else t.var()
        np.testing.assert_allclose(ref(v), a64.var(axis=ax, ddof=1), rtol=1e-5)
        n = t.norm(dim=dim)
        np.testing.assert_allclose(ref(n), np.sqrt((a64 ** 2).sum(axis=ax)), rtol=1e-5)
        lse = t.logsumexp(dim)
        np.testing.assert_allclose(ref(lse), np.log(np.exp(a64).sum(axis=ax)), rtol=1e-5)
    for d in range(nd):
        np.testing.assert_array_equal(ref(t.argmax(d)), a.argmax(d))
        np.testing.assert_allclose(ref(t.cumsum(d)), np.cumsum(a64, d), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(ref(t.softmax(d)), softmax_ref(a64, d), rtol=1e-5, atol=1e-7)
        np.testing.assert_array_equal(ref(t.all(d)), np.all(a, d))
    assert t.argmax().item() == a.argmax()
    assert t.count_nonzero().item() == np.count_nonzero(a)


# --------------------------------------------------------------------------- max / min / arg


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(), (7,), (3, 4), (2, 3, 5), (4, 1, 6)])
def test_max_min_amax_argmax(dtype, shape):
    t, a = make(shape, dtype, low=-3, high=3)  # small range: many ties
    check(t.max(), a.max())
    check(t.min(), a.min())
    assert t.max().dtype == t.dtype
    for d in range(-len(shape), max(len(shape), 1)):
        for keepdim in (False, True):
            r = t.max(d, keepdim)
            assert isinstance(r, tuple) and len(r) == 2
            values, indices = r
            assert values is r.values and indices is r.indices
            check(r.values, np.max(a, axis=d if shape else None, keepdims=keepdim and bool(shape)))
            if dtype != "bool":
                want_i = np.argmax(a, axis=d) if shape else np.int64(0)
                if keepdim and shape:
                    want_i = np.expand_dims(want_i, d)
                check(r.indices, want_i)
                check(t.min(d, keepdim).indices,
                      np.expand_dims(np.argmin(a, axis=d), d) if keepdim and shape
                      else (np.argmin(a, axis=d) if shape else np.int64(0)))
                check(t.argmax(d, keepdim), want_i)
    for dim in dim_cases(len(shape)):
        check(t.amax(dim) if dim is not None else t.amax(), np.max(a, axis=np_axis(dim)))
        check(t.amin(dim, True) if dim is not None else t.amin(keepdim=True),
              np.min(a, axis=np_axis(dim), keepdims=True))
    if dtype != "bool":
        assert t.argmax().item() == np.argmax(a)
        assert t.argmin().item() == np.argmin(a)
        assert t.argmax().dtype == torch.int64


def test_argmax_ties_pick_first_occurrence():
    a = np.array([[1, 7, 7, 3], [5, 5, 5, 5], [0, 2, 9, 9]], np.int32)
    t = torch.tensor(a)
    np.testing.assert_array_equal(ref(t.argmax(1)), [1, 0, 2])
    np.testing.assert_array_equal(ref(t.argmin(0)), [2, 2, 1, 0])
    np.testing.assert_array_equal(ref(t.max(1).indices), [1, 0, 2])
    assert t.argmax().item() == 10
    # Ties on the column path (reduction over dim 0) too.
    big = np.zeros((1000, 40), np.float32)
    big[10] = 1.0
    big[500] = 1.0
    np.testing.assert_array_equal(ref(torch.tensor(big).argmax(0)), np.full(40, 10))


def test_argmax_long_rows_ties_and_nan_across_blocks():
    a = np.zeros(5000, np.float32)
    a[3000] = a[4000] = 2.0
    a[10] = -1.0
    t = torch.tensor(a)
    assert t.argmax().item() == 3000 and t.max(0).indices.item() == 3000
    assert t.argmin().item() == 10
    a[4500] = np.nan
    a[4700] = np.nan
    t = torch.tensor(a)
    assert t.argmax().item() == 4500 and t.argmin().item() == 4500
    inc = np.arange(300_000, dtype=np.float64)  # every block improves on the last
    assert torch.tensor(inc).argmax().item() == 299_999
    rows = np.tile(a, (3, 1))
    np.testing.assert_array_equal(ref(torch.tensor(rows).argmax(1)), [4500] * 3)


def test_argmax_keepdim_without_dim_and_bool_error():
    t = torch.tensor(np.arange(6.0).reshape(2, 3))
    assert t.argmax(keepdim=True).shape == (1, 1)
    with pytest.raises(RuntimeError, match="Bool"):
        torch.tensor([True, False]).argmax()


def test_max_min_nan_propagation():
    a = np.array([[1.0, np.nan, 3.0, np.nan], [2.0, 5.0, -1.0, 0.0]], np.float32)
    t = torch.tensor(a)
    assert math.isnan(t.max().item()) and math.isnan(t.min().item())
    v, i = t.max(1)
    assert math.isnan(v.tolist()[0]) and v.tolist()[1] == 5.0
    assert i.tolist() == [1, 1]  # first NaN wins
    v, i = t.min(1)
    assert math.isnan(v.tolist()[0]) and i.tolist() == [1, 2]
    np.testing.assert_array_equal(ref(t.argmax(1)), np.argmax(a, 1))
    np.testing.assert_array_equal(ref(t.amax(0)), np.max(a, 0))
    assert t.argmin().item() == 1


def test_max_with_other_tensor_is_elementwise():
    a = torch.tensor([1.0, 5.0, 3.0])
    b = torch.tensor([4.0, 2.0, 6.0])
    assert a.max(b).tolist() == [4.0, 5.0, 6.0]
    assert torch.min(a, b).tolist() == [1.0, 2.0, 3.0]
    assert torch.max(a).item() == 5.0


def test_max_of_empty_errors_like_pytorch():
    e = torch.from_numpy(np.zeros((0,), np.float32))
    with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
        e.max()
    with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
        e.min()
    with pytest.raises(IndexError, match="argmax"):  # PyTorch: IndexError for arg* only
        e.argmax()
    with pytest.raises(RuntimeError, match="amax"):  # (not an IndexError, as PyTorch)
        e.amax()
    m = torch.from_numpy(np.zeros((0, 3), np.float32))
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        m.max(0)
    with pytest.raises(IndexError):
        m.amax(0)
    with pytest.raises(IndexError):
        m.argmax(0)
    v, i = m.max(1)
    assert v.shape == (0,) and i.shape == (0,)
    assert m.amax(1).shape == (0,)
    with pytest.raises(RuntimeError, match="aminmax"):
        e.aminmax()


@pytest.mark.parametrize("dtype", ["uint8", "int16", "float16", "float32", "float64"])
def test_aminmax(dtype):
    t, a = make((3, 5), dtype)
    r = t.aminmax()
    assert r.min.item() == a.min() and r.max.item() == a.max()
    lo, hi = t.aminmax(dim=1, keepdim=True)
    check(lo, a.min(1, keepdims=True))
    check(hi, a.max(1, keepdims=True))
    lo, hi = torch.aminmax(t, dim=0)
    check(lo, a.min(0))


# --------------------------------------------------------------------------- var / std


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 5), (4, 1, 6)])
def test_var_std(dtype, shape):
    t, a = make(shape, dtype)
    for dim in dim_cases(len(shape)):
        for correction in (0, 1, 2):
            ax = np_axis(dim)
            kw = dict(correction=correction)
            got = t.var(dim, **kw) if dim is not None else t.var(**kw)
            assert got.dtype == getattr(torch, dtype)
            check(got, np.var(a, axis=ax, ddof=correction), dtype)
            got = t.std(dim=dim, keepdim=True, **kw)
            check(got, np.std(a, axis=ax, ddof=correction, keepdims=True), dtype)


def test_var_argument_forms():
    a = np.random.default_rng(2).standard_normal((4, 6))
    t = torch.tensor(a)
    np.testing.assert_allclose(ref(t.var()), a.var(ddof=1))
    np.testing.assert_allclose(ref(t.var(False)), a.var(ddof=0))  # var(unbiased)
    np.testing.assert_allclose(ref(t.var(1)), a.var(1, ddof=1))  # var(dim)
    np.testing.assert_allclose(ref(t.var(1, False)), a.var(1, ddof=0))  # var(dim, unbiased)
    np.testing.assert_allclose(ref(t.var(0, True, True)), a.var(0, ddof=1, keepdims=True))
    np.testing.assert_allclose(ref(t.var(dim=(0, 1), unbiased=False)), a.var(ddof=0))
    np.testing.assert_allclose(ref(t.std(1, correction=0)), a.std(1))
    np.testing.assert_allclose(ref(torch.std(t, 0)), a.std(0, ddof=1))
    v, m = torch.var_mean(t, 1, keepdim=True)
    np.testing.assert_allclose(ref(v), a.var(1, ddof=1, keepdims=True))
    np.testing.assert_allclose(ref(m), a.mean(1, keepdims=True))
    s, m = torch.std_mean(t, correction=0)
    np.testing.assert_allclose(ref(s), a.std())
    np.testing.assert_allclose(ref(m), a.mean())


def test_var_edge_cases():
    with pytest.raises(RuntimeError, match="floating point"):
        torch.tensor([1, 2, 3]).var()
    assert math.isnan(torch.tensor([2.0]).var().item())  # n - correction = 0
    assert torch.tensor([2.0]).var(correction=0).item() == 0.0
    assert math.isnan(torch.from_numpy(np.zeros(0, np.float32)).var().item())
    # Large offset: Welford/two-pass stay accurate where naive sum-of-squares would not.
    a = 1e8 + np.random.default_rng(0).standard_normal(10_000)
    np.testing.assert_allclose(ref(torch.tensor(a).var()), a.var(ddof=1), rtol=1e-9)
    col = np.ascontiguousarray(np.stack([a, a * 2], 1))
    np.testing.assert_allclose(ref(torch.tensor(col).var(0)), col.var(0, ddof=1), rtol=1e-7)


# --------------------------------------------------------------------------- norm, logsumexp


@pytest.mark.parametrize("p", [1, 2, 3, 0.5, 0, math.inf, -math.inf, "fro", None])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_norm(p, dtype):
    t, a = make((3, 4, 5), dtype)
    pp = 2 if p in ("fro", None) else p
    for dim in [None, 0, -1, (1, 2)]:
        x = np.abs(a)
        ax = dim
        if pp == math.inf:
            want = x.max(axis=ax)
        elif pp == -math.inf:
            want = x.min(axis=ax)
        elif pp == 0:
            want = (x != 0).sum(axis=ax).astype(np.float64)
        else:
            want = (x ** pp).sum(axis=ax) ** (1 / pp)
        got = t.norm(p, dim) if p is not None else t.norm(dim=dim)
        assert got.dtype == getattr(torch, dtype)
        check(got, want, dtype, rtol=2e-3 if dtype == "float16" else 1e-5)
    got = torch.norm(t, pp, 1, keepdim=True)
    assert got.shape == (3, 1, 5)


def test_norm_errors_and_dtype():
    with pytest.raises(RuntimeError, match="floating point"):
        torch.tensor([1, 2]).norm()
    with pytest.raises(RuntimeError, match="floating point"):  # dtype= doesn't help (PyTorch)
        torch.tensor([3, 4]).norm(dtype=torch.float64)
    assert torch.tensor([3.0, 4.0]).norm(dtype=torch.float64).item() == 5.0
    with pytest.raises(RuntimeError):
        torch.from_numpy(np.zeros(0, np.float32)).norm(math.inf)
    assert torch.from_numpy(np.zeros(0, np.float32)).norm().item() == 0.0


def lse_ref(a, axis=None, keepdims=False):
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


@pytest.mark.parametrize("dtype", FLOATS)
def test_logsumexp(dtype):
    t, a = make((3, 4, 5), dtype)
    for dim in [None, 0, -1, (0, 2)]:
        for keepdim in (False, True):
            got = t.logsumexp(dim, keepdim)
            check(got, lse_ref(a, dim, keepdim), dtype)


def test_logsumexp_large_and_infinite_inputs():
    a = np.array([[1000.0, 1000.0, -1000.0], [-1e30, -1e30, -1e30],
                  [-np.inf, -np.inf, -np.inf], [np.inf, 1.0, 2.0], [-np.inf, 0.0, 0.0]])
    for dt in (np.float32, np.float64):
        t = torch.tensor(a.astype(dt))
        got = ref(t.logsumexp(1))
        np.testing.assert_allclose(got[0], 1000 + math.log(2), rtol=1e-6)
        np.testing.assert_allclose(got[1], -1e30 + math.log(3), rtol=1e-6)
        assert got[2] == -math.inf and got[3] == math.inf
        np.testing.assert_allclose(got[4], math.log(2), rtol=1e-6)
        # Column path (dim 0 of the transpose-free layout) gives the same.
        got0 = ref(torch.tensor(np.ascontiguousarray(a.T.astype(dt))).logsumexp(0))
        np.testing.assert_allclose(got0, got, rtol=1e-6)
    nan = torch.tensor([1.0, float("nan")]).logsumexp(0)
    assert math.isnan(nan.item())
    i = torch.tensor([1, 2, 3]).logsumexp(0)
    assert i.dtype == torch.float32
    np.testing.assert_allclose(i.item(), lse_ref(np.array([1.0, 2, 3])), rtol=1e-6)


# --------------------------------------------------------------------------- softmax


def softmax_ref(a, axis):
    if a.size == 0:
        return a.copy()
    m = np.max(a, axis=axis, keepdims=True)
    e = np.exp(a - m)
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(), (7,), (3, 4), (2, 3, 5), (4, 1, 6), (2, 0, 3), (3, 1000)])
def test_softmax_log_softmax(dtype, shape):
    t, a = make(shape, dtype)
    for d in range(-len(shape), max(len(shape), 1)):
        want = softmax_ref(a, d if shape else None)
        got = t.softmax(d)
        assert got.dtype == t.dtype and got.shape == t.shape
        check(got, want, dtype, atol=1e-6 if dtype in ("float32", "float64") else None)
        with np.errstate(divide="ignore"):
            check(t.log_softmax(d), np.log(want), dtype,
                  atol=1e-5 if dtype == "float32" else None)
        check(torch.softmax(t, d), want, dtype,
              atol=1e-6 if dtype in ("float32", "float64") else None)


def test_softmax_large_inputs_and_masks():
    a = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1001.0, -1002.0],
                  [0.0, -np.inf, 1.0], [88.0, 89.0, 90.0], [-103.0, -50.0, 0.0]])
    for dt in (np.float32, np.float64):
        t = torch.tensor(a.astype(dt))
        s = ref(t.softmax(1))
        want = softmax_ref(a, 1)
        np.testing.assert_allclose(s, want, rtol=1e-5, atol=1e-30)
        assert s[2, 1] == 0.0
        ls = ref(t.log_softmax(-1))
        with np.errstate(divide="ignore"):
            np.testing.assert_allclose(ls, a - lse_ref(a, 1, True), rtol=1e-5)
        # dim 0 (column kernel) on the transpose.
        s0 = ref(torch.tensor(np.ascontiguousarray(a.T.astype(dt))).softmax(0))
        np.testing.assert_allclose(s0, want.T, rtol=1e-5, atol=1e-30)
    allinf = torch.tensor([[-math.inf, -math.inf]]).softmax(1)
    assert all(math.isnan(v) for v in allinf.tolist()[0])
    nan = torch.tensor([1.0, float("nan"), 2.0]).softmax(0).tolist()
    assert all(math.isnan(v) for v in nan)


def test_softmax_dtype_argument_and_integer_error():
    i = torch.tensor([[1, 2, 3]])
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        i.softmax(1)
    s = i.softmax(1, dtype=torch.float64)
    assert s.dtype == torch.float64
    np.testing.assert_allclose(ref(s), softmax_ref(np.array([[1.0, 2, 3]]), 1))
    f = torch.tensor([[1.0, 2.0]]).log_softmax(1, torch.float64)
    assert f.dtype == torch.float64
    with pytest.raises(IndexError):
        torch.tensor([1.0, 2.0]).softmax(1)


def test_softmax_big_rows_parallel():
    a = np.random.default_rng(9).standard_normal((128, 512)).astype(np.float32) * 10
    t = torch.tensor(a)
    np.testing.assert_allclose(ref(t.softmax(-1)), softmax_ref(a.astype(np.float64), 1),
                               rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(ref(t.softmax(0)), softmax_ref(a.astype(np.float64), 0),
                               rtol=1e-5, atol=1e-9)


# --------------------------------------------------------------------------- scans


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(), (7,), (3, 4), (2, 3, 5), (2, 0, 3)])
def test_cumsum_cumprod(dtype, shape):
    t, a = make(shape, dtype, low=-2, high=3)
    for d in range(-len(shape), max(len(shape), 1)):
        ax = d if shape else None
        want_dt = np.float64 if dtype in FLOATS else np.int64
        got = t.cumsum(d)
        assert got.dtype == (t.dtype if dtype in FLOATS else torch.int64)
        assert got.shape == t.shape
        check(got, np.cumsum(a, axis=ax, dtype=want_dt).reshape(a.shape), dtype)
        got = torch.cumprod(t, d)
        check(got, np.cumprod(a, axis=ax, dtype=want_dt).reshape(a.shape), dtype)


def test_cumsum_dtype_argument():
    t = torch.tensor([100, 100, 100], dtype=torch.int8)
    assert t.cumsum(0).tolist() == [100, 200, 300]
    assert t.cumsum(0, dtype=torch.float32).dtype == torch.float32
    assert t.cumsum(0, dtype=torch.int8).tolist() == [100, -56, 44]
    f = torch.tensor([0.5, 1.5]).cumsum(0, dtype=torch.float64)
    assert f.dtype == torch.float64 and f.tolist() == [0.5, 2.0]


def cum_ref(a, axis, mx):
    """Reference cummax/cummin along axis: ties take the later index, NaN sticks."""
    a = np.moveaxis(a, axis, -1)
    vals = np.empty_like(a)
    idx = np.zeros(a.shape, np.int64)
    for pos in np.ndindex(a.shape[:-1]):
        best, bi = None, 0
        for i, x in enumerate(a[pos]):
            if best is None or np.isnan(x) or (
                    not np.isnan(best) and (x >= best if mx else x <= best)):
                best, bi = x, i
            vals[pos + (i,)] = best
            idx[pos + (i,)] = bi
    return np.moveaxis(vals, -1, axis), np.moveaxis(idx, -1, axis)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "float16", "float32", "float64"])
def test_cummax_cummin(dtype):
    t, a = make((3, 6), dtype, low=-2, high=2)
    for d in (0, 1, -1):
        for mx, fn in ((True, t.cummax), (False, t.cummin)):
            r = fn(d)
            values, indices = r
            wv, wi = cum_ref(a, d, mx)
            check(r.values, wv)
            check(indices, wi)
            assert values.dtype == t.dtype and indices.dtype == torch.int64


def test_cummax_nan():
    a = np.array([1.0, np.nan, 3.0, np.nan, 0.0], np.float32)
    v, i = torch.tensor(a).cummax(0)
    wv, wi = cum_ref(a, 0, True)
    np.testing.assert_array_equal(ref(v), wv)
    assert i.tolist() == wi.tolist() == [0, 1, 1, 3, 3]


def test_cumsum_noncontiguous_and_large():
    a = np.random.default_rng(4).standard_normal((300, 200)).astype(np.float32)
    t = torch.from_numpy(a.T)
    np.testing.assert_allclose(ref(t.cumsum(0)), np.cumsum(a.T.astype(np.float64), 0),
                               rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(ref(t.cumsum(1)), np.cumsum(a.T.astype(np.float64), 1),
                               rtol=1e-5, atol=1e-4)


# --------------------------------------------------------------------------- all / any / count


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_all_any_count_nonzero(dtype, shape):
    t, a = make(shape, dtype, low=0, high=3)
    out_dt = torch.uint8 if dtype == "uint8" else torch.bool
    for dim in dim_cases(len(shape)):
        ax = np_axis(dim)
        for keepdim in (False, True):
            kd = keepdim and dim is not None
            got = t.all(dim, keepdim) if dim is not None else t.all()
            assert got.dtype == out_dt
            check(got.bool(), np.all(a, axis=ax, keepdims=kd))
            got = t.any(dim, keepdim) if dim is not None else t.any()
            check(got.bool(), np.any(a, axis=ax, keepdims=kd))
        got = t.count_nonzero(dim) if dim is not None else t.count_nonzero()
        assert got.dtype == torch.int64
        check(got, np.count_nonzero(a, axis=ax))


def test_all_any_nan_is_true():
    t = torch.tensor([float("nan"), 1.0])
    assert t.all().item() is True
    assert torch.tensor([0.0, -0.0]).any().item() is False
    assert torch.any(torch.tensor([[0, 0], [0, 1]]), 0).tolist() == [False, True]


# --------------------------------------------------------------------------- nansum / nanmean


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_nansum_nanmean(dtype):
    rng = np.random.default_rng(6)
    a = rng.standard_normal((4, 5)).astype(np.float32)
    a[rng.random((4, 5)) < 0.3] = np.nan
    a[2] = np.nan
    t = torch.tensor(a).to(getattr(torch, dtype))
    a = ref(t)
    for dim in [None, 0, 1, (0, 1)]:
        check(t.nansum(dim) if dim is not None else t.nansum(), np.nansum(a, axis=dim), dtype)
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = np.nanmean(a, axis=dim)
        got = t.nanmean(dim) if dim is not None else t.nanmean()
        check(got, want, dtype)
    assert torch.nansum(t, 1, keepdim=True).shape == (4, 1)


def test_nansum_int_and_nanmean_int_error():
    t = torch.tensor([[1, 2], [3, 4]])
    assert t.nansum().item() == 10 and t.nansum().dtype == torch.int64
    with pytest.raises(RuntimeError, match="nanmean"):
        t.nanmean()


# --------------------------------------------------------------------------- API surface


def test_dim_errors():
    t = torch.tensor(np.ones((2, 3), np.float32))
    with pytest.raises(IndexError, match="Dimension out of range"):
        t.sum(2)
    with pytest.raises(IndexError):
        t.amax(-3)
    with pytest.raises(RuntimeError, match="appears multiple times"):
        t.sum((0, -2))
    with pytest.raises(TypeError):
        t.sum("a")


def test_module_functions_and_out():
    a = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    t = torch.tensor(a)
    assert torch.sum(t, 0).tolist() == a.sum(0).tolist()
    assert torch.mean(t, dim=1, keepdim=True).shape == (3, 1)
    assert torch.amax(t, (0, 1)).item() == 11.0
    assert torch.max(t, 1).indices.tolist() == [3, 3, 3]
    assert torch.argmin(t).item() == 0
    assert torch.cumsum(t, dim=1).tolist()[0] == [0.0, 1.0, 3.0, 6.0]
    assert torch.logsumexp(t, 1).shape == (3,)
    assert torch.all(t).item() is False
    assert torch.count_nonzero(t, (0, 1)).item() == 11
    out = torch.tensor(np.zeros(4, np.float32))
    r = torch.sum(t, 0, out=out)
    assert r is out and out.tolist() == a.sum(0).tolist()
    assert torch.sum([1, 2, 3]).item() == 6  # non-tensor input


def test_return_types_repr():
    r = torch.tensor([[1.0, 3.0]]).max(1)
    assert repr(r).startswith("ferrotorch.return_types.max(")
    assert type(r) is torch.return_types.max
    assert isinstance(r, tuple) and r._fields == ("values", "indices")
    assert torch.tensor([1.0]).aminmax()._fields == ("min", "max")


def test_against_torch_if_available():
    real = pytest.importorskip("torch")
    a = np.random.default_rng(0).standard_normal((5, 7)).astype(np.float32)
    for name in ["sum", "mean", "amax", "logsumexp", "var", "std"]:
        ours = getattr(torch.tensor(a), name)(1)
        theirs = getattr(real.tensor(a), name)(1)
        np.testing.assert_allclose(ref(ours), theirs.double().numpy(), rtol=1e-5)
    np.testing.assert_allclose(ref(torch.tensor(a).softmax(0)),
                               real.tensor(a).softmax(0).numpy(), rtol=1e-5, atol=1e-7)
