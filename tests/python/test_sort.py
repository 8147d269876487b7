"""Sorting, selection, unique, searching and counting against NumPy (and small Python
references where NumPy's conventions differ from PyTorch's)."""

import collections
import math

import numpy as np
import pytest

import ferrotorch as torch

ALL_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64",
              "float16", "bfloat16", "float32", "float64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]


def make(shape, dtype, seed=0, nan=False):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        a = rng.integers(0, 2, size=shape).astype(bool)
    elif dtype in FLOATS:
        a = rng.integers(-4, 5, size=shape).astype(np.float32) / 2  # many ties
        if nan and a.size:
            a.flat[rng.integers(0, a.size, size=max(1, a.size // 5))] = np.nan
    elif dtype == "uint8":
        a = rng.integers(0, 9, size=shape).astype(np.uint8)
    else:
        a = rng.integers(-4, 5, size=shape).astype(dtype)
    t = torch.tensor(a).to(getattr(torch, dtype))
    return t, ref(t)


def ref(t):
    if t.dtype.is_floating_point:
        return np.asarray(t.double().numpy())
    if t.dtype == torch.bool:
        return np.asarray(t.numpy())
    return np.asarray(t.long().numpy())


def key(v):
    """PyTorch/NumPy order: NaN after every number."""
    return (1, 0.0) if isinstance(v, float) and math.isnan(v) else (0, v)


def stable_order(line, descending):
    # Python's sort is stable, and stays stable with reverse=True.
    return sorted(range(len(line)), key=lambda i: key(line[i]), reverse=descending)


def sort_ref(a, axis, descending):
    a = np.moveaxis(a, axis, -1)
    idx = np.zeros(a.shape, np.int64)
    for pos in np.ndindex(a.shape[:-1]):
        idx[pos] = stable_order(a[pos].tolist(), descending)
    vals = np.take_along_axis(a, idx, -1)
    return np.moveaxis(vals, -1, axis), np.moveaxis(idx, -1, axis)


def assert_same(got, want):
    np.testing.assert_array_equal(ref(got), np.asarray(want))


# --------------------------------------------------------------------------- sort


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (9,), (3, 5), (2, 4, 3), (2, 0, 3)])
def test_sort_argsort(dtype, shape):
    t, a = make(shape, dtype, nan=True)
    for d in range(-len(shape), max(len(shape), 1)):
        for desc in (False, True):
            r = t.sort(d, descending=desc, stable=True)
            values, indices = r
            assert values.dtype == t.dtype and indices.dtype == torch.int64
            if shape:
                wv, wi = sort_ref(a, d, desc)
            else:
                wv, wi = a, np.int64(0)
            assert_same(r.values, wv)
            assert_same(r.indices, wi)
            assert_same(t.argsort(d, desc), wi)
            assert_same(torch.sort(t, dim=d, descending=desc).indices, wi)


def test_sort_nan_last_ascending_first_descending():
    t = torch.tensor([2.0, float("nan"), -1.0, float("inf"), float("nan"), -float("inf")])
    v, i = t.sort()
    assert i.tolist() == [5, 2, 0, 3, 1, 4]
    v, i = t.sort(descending=True)
    assert i.tolist() == [1, 4, 3, 0, 2, 5]
    assert math.isnan(v.tolist()[0])


def test_sort_noncontiguous_and_large():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((40, 300)).astype(np.float32)
    t = torch.from_numpy(a.T)  # strided lines
    v, i = t.sort(0)
    np.testing.assert_array_equal(ref(v), np.sort(a.T, 0))
    np.testing.assert_array_equal(ref(i), np.argsort(a.T, 0, kind="stable"))
    big = rng.integers(0, 1000, size=60_000)
    v, i = torch.tensor(big).sort()
    np.testing.assert_array_equal(ref(i), np.argsort(big, kind="stable"))
    assert torch.tensor(a).msort().tolist() == np.sort(a, 0).tolist()
    assert torch.msort(torch.tensor(a[:, :3])).tolist() == np.sort(a[:, :3], 0).tolist()


# --------------------------------------------------------------------------- topk / kthvalue


@pytest.mark.parametrize("dtype", ["uint8", "int32", "int64", "float16", "float32", "float64"])
def test_topk(dtype):
    t, a = make((4, 9), dtype, nan=True)
    for d in (0, 1, -1):
        n = a.shape[d]
        for k in (0, 1, 3, n):
            for largest in (True, False):
                r = t.topk(k, d, largest=largest)
                values, indices = r
                wv, _ = sort_ref(a, d, largest)
                want = np.take(wv, range(k), axis=d)
                assert_same(values, want)
                # Indices point at the returned values.
                np.testing.assert_array_equal(
                    np.take_along_axis(a, ref(indices), d), ref(values))
                for line in np.moveaxis(ref(indices), d, -1).reshape(-1, k) if k else []:
                    assert len(set(line.tolist())) == k  # distinct positions
    with pytest.raises(RuntimeError, match="k out of range"):
        t.topk(10, 1)
    with pytest.raises(RuntimeError, match="k out of range"):
        t.topk(-1)
    assert torch.topk(t, 2).values.shape == (4, 2)
    z = torch.tensor(5.0).topk(1)
    assert z.values.item() == 5.0 and z.indices.item() == 0


@pytest.mark.parametrize("dtype", ["int16", "int64", "float16", "float32", "float64"])
def test_kthvalue(dtype):
    t, a = make((5, 7), dtype, nan=True)
    for d in (0, 1, -1):
        n = a.shape[d]
        for k in (1, 3, n):
            for keepdim in (False, True):
                v, i = t.kthvalue(k, d, keepdim)
                wv, _ = sort_ref(a, d, False)
                want = np.take(wv, [k - 1], axis=d)
                if not keepdim:
                    want = np.squeeze(want, d)
                assert_same(v, want)
                ii = ref(i) if keepdim else np.expand_dims(ref(i), d)
                np.testing.assert_array_equal(
                    np.take_along_axis(a, ii, d), want if keepdim else np.expand_dims(want, d))
    with pytest.raises(RuntimeError, match="k out of range"):
        t.kthvalue(0)
    with pytest.raises(RuntimeError, match="k out of range"):
        t.kthvalue(8, 1)
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        torch.from_numpy(np.zeros((0,), np.float32)).kthvalue(1)


# --------------------------------------------------------------------------- median / mode


@pytest.mark.parametrize("dtype", ["uint8", "int32", "int64", "float16", "bfloat16", "float32",
                                   "float64"])
def test_median(dtype):
    t, a = make((5, 6), dtype)
    flat = np.sort(a.reshape(-1))
    assert t.median().item() == flat[(flat.size - 1) // 2]
    assert t.median().shape == () and t.median().dtype == t.dtype
    for d in (0, 1, -1):
        for keepdim in (False, True):
            r = t.median(d, keepdim)
            n = a.shape[d]
            wv, wi = sort_ref(a, d, False)
            want_v = np.take(wv, [(n - 1) // 2], axis=d)
            want_i = np.take(wi, [(n - 1) // 2], axis=d)
            if not keepdim:
                want_v, want_i = np.squeeze(want_v, d), np.squeeze(want_i, d)
            assert_same(r.values, want_v)
            assert_same(r.indices, want_i)  # ties broken by index, as PyTorch


def test_median_nan_and_nanmedian():
    a = np.array([[1.0, np.nan, 3.0, 2.0], [4.0, 1.0, 0.0, 5.0],
                  [np.nan, np.nan, np.nan, np.nan]], np.float32)
    t = torch.tensor(a)
    assert math.isnan(t.median().item())
    v, i = t.median(1)
    assert math.isnan(v.tolist()[0]) and i.tolist()[0] == 1  # first NaN
    assert v.tolist()[1] == 1.0 and i.tolist()[1] == 1
    assert t.nanmedian().item() == 2.0  # median of the 7 numbers
    v, i = t.nanmedian(1)
    assert v.tolist()[:2] == [2.0, 1.0] and i.tolist()[:2] == [3, 1]
    assert math.isnan(v.tolist()[2])
    # An empty input has median NaN (PyTorch; the lowest value for integers); an empty
    # reduced dim is an error.
    assert math.isnan(torch.from_numpy(np.zeros((0,), np.float32)).median().item())
    assert math.isnan(torch.zeros(0).nanmedian().item())
    assert torch.zeros(0, dtype=torch.int64).median().item() == -2**63
    with pytest.raises(IndexError, match=r"median\(\): Expected reduction dim 1 to have non-zero"):
        torch.from_numpy(np.zeros((2, 0), np.float32)).median(1)
    assert torch.tensor(7).median().item() == 7
    assert torch.median(torch.tensor([3.0, 1.0, 2.0, 4.0])).item() == 2.0


def mode_ref(line):
    c = collections.Counter(line)
    best = max(c.values())
    v = min(x for x, n in c.items() if n == best)
    return v, max(i for i, x in enumerate(line) if x == v)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "float32", "float64"])
def test_mode(dtype):
    t, a = make((4, 11), dtype)
    for d in (0, 1):
        v, i = t.mode(d)
        lines = np.moveaxis(a, d, -1)
        want = [mode_ref(line.tolist()) for line in lines]
        assert_same(v, [w[0] for w in want])
        assert_same(i, [w[1] for w in want])
    assert t.mode(1, keepdim=True).values.shape == (4, 1)
    with pytest.raises(IndexError):
        torch.from_numpy(np.zeros((2, 0), np.float32)).mode(1)


# --------------------------------------------------------------------------- unique


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (12,), (3, 5)])
def test_unique(dtype, shape):
    t, a = make(shape, dtype)
    u = t.unique()
    assert u.dtype == t.dtype
    assert_same(u, np.unique(a))
    u, inv, cnt = torch.unique(t, return_inverse=True, return_counts=True)
    wu, winv, wcnt = np.unique(a, return_inverse=True, return_counts=True)
    assert_same(u, wu)
    assert_same(inv, winv.reshape(a.shape))
    assert_same(cnt, wcnt)
    u, cnt = t.unique(sorted=False, return_counts=True)
    assert_same(cnt, wcnt)


def test_unique_nan_each_distinct():
    t = torch.tensor([1.0, float("nan"), 1.0, float("nan")])
    u, c = t.unique(return_counts=True)
    assert u.tolist()[0] == 1.0 and all(math.isnan(x) for x in u.tolist()[1:])
    assert c.tolist() == [2, 1, 1]


def test_unique_dim():
    a = np.array([[1, 2, 1, 2], [3, 4, 3, 0], [1, 2, 1, 2]], np.int64)
    t = torch.tensor(a)
    for d in (0, 1, -1):
        u, inv, cnt = t.unique(dim=d, return_inverse=True, return_counts=True)
        wu, winv, wcnt = np.unique(a, axis=d, return_inverse=True, return_counts=True)
        assert_same(u, wu)
        assert_same(inv, winv.reshape(-1))
        assert_same(cnt, wcnt)
    f = torch.from_numpy(np.ascontiguousarray(a.T).astype(np.float32).T)  # non-contiguous
    assert_same(f.unique(dim=1), np.unique(a, axis=1))


def unique_consecutive_ref(vals):
    out, inv, cnt = [], [], []
    for v in vals:
        if not out or out[-1] != v:
            out.append(v)
            cnt.append(0)
        cnt[-1] += 1
        inv.append(len(out) - 1)
    return out, inv, cnt


@pytest.mark.parametrize("dtype", ["bool", "int8", "int64", "float32"])
def test_unique_consecutive(dtype):
    t, a = make((3, 6), dtype)
    wu, winv, wcnt = unique_consecutive_ref(a.reshape(-1).tolist())
    u, inv, cnt = t.unique_consecutive(return_inverse=True, return_counts=True)
    assert_same(u, wu)
    assert_same(inv, np.array(winv).reshape(3, 6))
    assert_same(cnt, wcnt)
    assert_same(torch.unique_consecutive(t), wu)
    rows = torch.tensor(np.array([[1, 1], [1, 1], [2, 0], [1, 1]]))
    u, c = rows.unique_consecutive(dim=0, return_counts=True)
    assert u.tolist() == [[1, 1], [2, 0], [1, 1]] and c.tolist() == [2, 1, 1]


# --------------------------------------------------------------------------- searchsorted, bucketize


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
def test_searchsorted_1d(dtype):
    rng = np.random.default_rng(2)
    seq = np.sort(rng.integers(-10, 10, size=15)).astype(dtype)
    vals = rng.integers(-12, 12, size=(4, 6)).astype(dtype)
    for right in (False, True):
        side = "right" if right else "left"
        got = torch.searchsorted(torch.tensor(seq), torch.tensor(vals), right=right)
        assert got.dtype == torch.int64 and got.shape == (4, 6)
        assert_same(got, np.searchsorted(seq, vals, side=side))
        got = torch.searchsorted(torch.tensor(seq), torch.tensor(vals), side=side,
                                 out_int32=True)
        assert got.dtype == torch.int32
        assert_same(got, np.searchsorted(seq, vals, side=side))
        assert_same(torch.bucketize(torch.tensor(vals), torch.tensor(seq), right=right),
                    np.searchsorted(seq, vals, side=side))
    s = torch.searchsorted(torch.tensor(seq), 3)
    assert s.shape == () and s.item() == np.searchsorted(seq, 3)


def test_searchsorted_nd_sorter_nan_and_errors():
    seq = np.array([[1.0, 3.0, 5.0, np.nan], [0.0, 0.0, 2.0, 9.0]])
    vals = np.array([[3.0, 6.0, np.nan], [0.0, 1.0, 10.0]])
    got = torch.searchsorted(torch.tensor(seq), torch.tensor(vals))
    assert got.tolist() == [[1, 3, 3], [0, 2, 4]]
    got = torch.searchsorted(torch.tensor(seq), torch.tensor(vals), right=True)
    assert got.tolist() == [[2, 3, 4], [2, 2, 4]]
    unsorted = np.array([5.0, 1.0, 3.0])
    sorter = np.argsort(unsorted)
    got = torch.searchsorted(torch.tensor(unsorted), torch.tensor([2.0, 4.0]),
                             sorter=torch.tensor(sorter))
    assert got.tolist() == np.searchsorted(unsorted, [2.0, 4.0], sorter=sorter).tolist()
    with pytest.raises(RuntimeError, match="first N-1 dimensions"):
        torch.searchsorted(torch.tensor(seq), torch.tensor([[1.0], [2.0], [3.0]]))
    with pytest.raises(RuntimeError, match="side and right"):
        torch.searchsorted(torch.tensor(seq), torch.tensor(vals), side="left", right=True)
    with pytest.raises(RuntimeError, match="1 dimension"):
        torch.bucketize(torch.tensor([1.0]), torch.tensor(seq))
    out = torch.tensor(np.zeros((2, 3), np.int64))
    r = torch.searchsorted(torch.tensor(seq), torch.tensor(vals), out=out)
    assert r is out and out.tolist() == [[1, 3, 3], [0, 2, 4]]


# --------------------------------------------------------------------------- bincount, histc


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64"])
def test_bincount(dtype):
    a = np.random.default_rng(3).integers(0, 8, size=50).astype(dtype)
    t = torch.tensor(a)
    got = t.bincount()
    assert got.dtype == torch.int64
    assert_same(got, np.bincount(a))
    assert_same(torch.bincount(t, minlength=12), np.bincount(a, minlength=12))
    w = np.linspace(0, 1, 50)
    got = t.bincount(torch.tensor(w.astype(np.float32)))
    assert got.dtype == torch.float32
    np.testing.assert_allclose(ref(got), np.bincount(a, w), rtol=1e-6)
    got = t.bincount(weights=torch.tensor(w))
    assert got.dtype == torch.float64
    np.testing.assert_allclose(ref(got), np.bincount(a, w))
    assert torch.tensor(np.zeros(0, np.int64)).bincount().shape == (0,)
    assert torch.tensor(np.zeros(0, np.int64)).bincount(minlength=3).tolist() == [0, 0, 0]


def test_bincount_errors():
    with pytest.raises(RuntimeError, match="non-negative"):
        torch.tensor([1, -1]).bincount()
    with pytest.raises(RuntimeError, match="1-d"):
        torch.tensor([[1, 2]]).bincount()
    with pytest.raises(RuntimeError, match="not implemented for 'Float'"):
        torch.tensor([1.0]).bincount()
    with pytest.raises(RuntimeError, match="minlength"):
        torch.tensor([1]).bincount(minlength=-1)
    with pytest.raises(RuntimeError, match="same length"):
        torch.tensor([1, 2]).bincount(torch.tensor([1.0]))
    with pytest.raises(RuntimeError, match="allocate"):
        torch.tensor([2**62]).bincount()  # an error, not an abort


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_histc(dtype):
    rng = np.random.default_rng(4)
    # Values on a grid away from bin edges, so rounding cannot move one across an edge.
    a = (rng.integers(0, 40, size=300) + 0.5).astype(np.float32) / 4
    t = torch.tensor(a).to(getattr(torch, dtype))
    got = t.histc(10, 0, 10)
    assert got.dtype == t.dtype and got.shape == (10,)
    assert_same(got, np.histogram(a, 10, (0, 10))[0])
    got = torch.histc(t, bins=7)  # min == max == 0: the data's range
    assert_same(got, np.histogram(a, 7, (a.min(), a.max()))[0])
    got = t.histc(4, 2, 6)  # elements outside are ignored; the max edge is included
    assert got.sum().item() == ((a >= 2) & (a <= 6)).sum()


def test_histc_edges_and_errors():
    t = torch.tensor([1.0, 2.0, 2.0, 3.0])
    assert t.histc(2, 1, 3).tolist() == [1.0, 3.0]  # 3.0 goes in the last bin
    assert torch.tensor([5.0, 5.0]).histc(4).tolist() == [0.0, 0.0, 2.0, 0.0]  # [4, 6]
    assert torch.tensor([float("nan"), 1.0]).histc(2, 0, 2).tolist() == [0.0, 1.0]
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        torch.tensor([1, 2]).histc()
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        t.histc(0)
    with pytest.raises(RuntimeError, match="allocate"):
        t.histc(2**62)
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        t.histc(3, 5, 1)
    with pytest.raises(RuntimeError, match="not finite"):
        torch.tensor([1.0, float("inf")]).histc()


def test_against_torch_if_available():
    real = pytest.importorskip("torch")
    a = np.random.default_rng(0).integers(0, 5, size=(6, 8)).astype(np.float32)
    v, i = torch.tensor(a).sort(dim=1, stable=True)
    rv, ri = real.tensor(a).sort(dim=1, stable=True)  # PyTorch takes stable= with dim= only
    np.testing.assert_array_equal(ref(v), rv.numpy())
    np.testing.assert_array_equal(ref(i), ri.numpy())
    np.testing.assert_array_equal(ref(torch.tensor(a).median(1).indices),
                                  real.tensor(a).median(1).indices.numpy())
