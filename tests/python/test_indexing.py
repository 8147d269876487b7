"""Indexing (`t[...]`, `t[...] = v`, iteration) and the gather/scatter family (index_select,
gather, scatter*, index_add/copy/fill, masked_*, where, nonzero, take, put_), compared
against NumPy, with hypothesis property tests for basic and advanced indexing."""

import math

import ferrotorch as ft
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

NP_DTYPES = [
    (ft.float32, np.float32),
    (ft.float64, np.float64),
    (ft.float16, np.float16),
    (ft.int64, np.int64),
    (ft.int32, np.int32),
    (ft.int16, np.int16),
    (ft.int8, np.int8),
    (ft.uint8, np.uint8),
    (ft.bool, np.bool_),
]
ALL_DTYPES = NP_DTYPES + [(ft.bfloat16, None)]


@pytest.fixture
def rng():
    return np.random.default_rng(4321)


def random_array(rng, shape, np_dtype):
    if np_dtype is None:
        np_dtype = np.float32
    if np_dtype == np.bool_:
        return rng.random(shape) > 0.5
    if np.issubdtype(np_dtype, np.integer):
        lo = 0 if np_dtype == np.uint8 else -9
        return rng.integers(lo, 10, size=shape).astype(np_dtype)
    return rng.standard_normal(shape).astype(np_dtype)


def as_np(t):
    if t.dtype == ft.bfloat16:
        return t.float().numpy()
    return t.numpy()


def make(a, ft_dtype):
    t = ft.tensor(a).to(ft_dtype)
    return t, as_np(t)


def variants(rng, shape, ft_dtype, np_dtype):
    """(name, numpy array, tensor): contiguous, transposed and stepped layouts."""
    a = random_array(rng, shape, np_dtype)
    t, a = make(a, ft_dtype)
    out = [("contiguous", a, t)]
    if len(shape) >= 2:
        tt, _ = make(np.ascontiguousarray(np.swapaxes(a, -1, -2)), ft_dtype)
        out.append(("transposed", a, tt.transpose(-1, -2)))
    if len(shape) >= 1:
        big = np.repeat(a, 2, axis=0)
        tb, _ = make(big, ft_dtype)
        out.append(("stepped", a, tb[::2]))
    return out


def check(t, expected, dtype=None):
    expected = np.asarray(expected)
    got = as_np(t)
    assert tuple(t.shape) == expected.shape
    nan = got.dtype.kind == "f" and expected.dtype.kind == "f"
    if not np.array_equal(got, expected, equal_nan=nan):
        np.testing.assert_array_equal(got, expected)
    if dtype is not None:
        assert t.dtype == dtype


def shares(a, b):
    return a.untyped_storage_ptr() == b.untyped_storage_ptr()


# ------------------------------------------------------------------------- __getitem__


@pytest.mark.parametrize("ft_dtype,np_dtype", ALL_DTYPES)
def test_getitem_basic_is_a_view(rng, ft_dtype, np_dtype):
    idxs = [0, -1, 2, (1, 2), (slice(None), 1), (slice(1, None), slice(None, None, 2)),
            (Ellipsis, 0), (None, 1, Ellipsis, None), (slice(-2, None), None, slice(None, -1, 3)),
            (slice(10, 20),), (slice(-10, 2),), (), Ellipsis, (1, 2, 3), (-3, Ellipsis, -4),
            (slice(None), slice(None), slice(1, 3))]
    for _, a, t in variants(rng, (3, 4, 5), ft_dtype, np_dtype):
        for idx in idxs:
            r = t[idx]
            check(r, a[idx], ft_dtype)
            assert shares(r, t), idx


@pytest.mark.parametrize("ft_dtype,np_dtype", ALL_DTYPES)
def test_getitem_advanced_is_a_copy(rng, ft_dtype, np_dtype):
    for _, a, t in variants(rng, (3, 4, 5), ft_dtype, np_dtype):
        m = a.astype(np.float32) > 0.3 if np_dtype is not np.bool_ else a
        idxs = [
            [0, 2],
            ([0, 2], [1, 3]),
            (slice(None), [3, -1, 0]),
            (Ellipsis, np.array([[0, 4], [1, 1]])),
            ([1], slice(None), [2]),             # separated: broadcast dims first
            (slice(None), [0, 1], [2, 3]),       # adjacent: stay in place
            (slice(None), np.array([[0], [1]]), np.array([0, 1, 2])),
            (m,),
            (m[:, :, 0],),
            (1, m[0]),
            (slice(None), m[0]),
            (m[:, :, 0], slice(1, 3)),
            (np.array([True, False, True]), [0, 1], slice(None)),
            ([True, False, True],),
            (np.array([], dtype=np.int64),),
            ([], slice(None)),
            (None, [0, 1], None),
            ([-1, -3], Ellipsis, [-5]),
        ]
        for idx in idxs:
            np_idx = idx
            if isinstance(idx, tuple):
                np_idx = tuple(np.array(i, dtype=np.int64) if isinstance(i, list) and not i else i
                               for i in idx)
            exp = a[np_idx]
            r = t[idx]
            check(r, exp, ft_dtype)
            assert not shares(r, t)
        # index containers: lists, NumPy arrays (int32/int64), int tensors, bool tensors
        for ind in ([2, 0], np.array([2, 0]), np.array([2, 0], np.int32), ft.tensor([2, 0]),
                    ft.tensor([2, 0], dtype=ft.int32)):
            check(t[ind], a[[2, 0]])
            check(t[:, ind], a[:, [2, 0]])
        with pytest.raises(IndexError, match="must be long, int, byte or bool"):
            t[ft.tensor([2, 0], dtype=ft.int16)]  # as PyTorch
        check(t[ft.tensor(m)], a[m])


def test_getitem_scalars_and_zero_dim():
    a = np.arange(12).reshape(3, 4)
    t = ft.tensor(a)
    r = t[ft.tensor(1)]  # 0-d int tensor: like an int, a view
    check(r, a[1])
    assert shares(r, t)
    check(t[np.int64(2)], a[2])
    check(t[np.int32(-1), np.int64(1)], a[-1, 1])
    check(t[True], a[True])
    check(t[False], a[False])
    check(t[np.bool_(True)], a[True])
    check(t[ft.tensor(True)], a[True])
    check(t[True, 1], a[True, 1])
    check(t[[0, 1], True], a[[0, 1], True])
    check(t[1, ft.tensor(2)], a[1, 2])
    check(t[ft.tensor([[0, 1]]), ft.tensor([[1], [2]])], a[[[0, 1]], [[1], [2]]])
    check(t[slice(ft.tensor(1), np.int64(3))], a[1:3])
    z = ft.tensor(5.0)
    check(z[()], np.array(5.0, np.float32))
    check(z[...], np.array(5.0, np.float32))
    check(z[None], np.array([5.0], np.float32))
    check(z[True], np.array([5.0], np.float32))
    check(z[False], np.zeros((0,), np.float32))
    with pytest.raises(IndexError, match="invalid index of a 0-dim tensor"):
        z[0]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 0"):
        z[0, ...]


def test_pytorch_specific_index_rules():
    b = np.arange(60).reshape(3, 4, 5)
    t = ft.tensor(b)
    # Ints are applied first (select), so they do not separate advanced indices (PyTorch).
    assert t[0, :, [0, 1]].shape == (4, 2)
    check(t[0, :, [0, 1]], b[0][:, [0, 1]])
    # A zero-width ellipsis does not separate advanced indices either.
    assert t[:, [0, 1], ..., [0, 1]].shape == (3, 2)
    # A short list holding sequences is read as a tuple of indices.
    check(t[[[0, 1], [1, 2]]], b[[0, 1], [1, 2]])
    check(t[[0, slice(None), 1]], b[0, :, 1])
    check(t[[0, 1]], b[[0, 1]])


def test_getitem_errors():
    t = ft.tensor(np.arange(12).reshape(3, 4))
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        t[5]
    with pytest.raises(IndexError, match="index -4 is out of bounds for dimension 0 with size 3"):
        t[-4]
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 1 with size 4"):
        t[0, 4]
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 1 with size 4"):
        t[:, 4]
    with pytest.raises(IndexError, match="out of bounds"):
        t[[0, 3]]
    with pytest.raises(IndexError, match="out of bounds"):
        t[:, ft.tensor([-5])]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        t[0, 0, 0]
    with pytest.raises(IndexError, match="single ellipsis"):
        t[..., ...]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        t[::-1]
    with pytest.raises(ValueError):
        t[::0]
    with pytest.raises(IndexError, match="only integers, slices"):
        t[1.5]
    with pytest.raises(IndexError, match="only integers, slices"):
        t["a"]
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool"):
        t[ft.tensor([0.0, 1.0])]
    with pytest.raises(IndexError, match="tensors used as indices"):
        t[[0.5, 1.0]]
    with pytest.raises(IndexError, match="The shape of the mask"):
        t[ft.tensor([True, False])]
    with pytest.raises(IndexError, match="shape mismatch"):
        t[[0, 1], [0, 1, 2]]
    with pytest.raises(TypeError):
        t[0:"a"]


def test_getitem_large_parallel(rng):
    a = rng.standard_normal((400, 300)).astype(np.float32)
    t = ft.tensor(a)
    m = a > 0.5
    check(t[ft.tensor(m)], a[m])
    idx = rng.integers(-400, 400, 3000)
    check(t[idx], a[idx])
    check(t[:, idx[:1000] % 300], a[:, idx[:1000] % 300])
    check(t.t()[idx[:1000] % 300, 1:], a.T[idx[:1000] % 300, 1:])
    t2 = ft.tensor(a.copy())
    t2[ft.tensor(m)] = 0.0
    a2 = a.copy()
    a2[m] = 0.0
    check(t2, a2)


# ------------------------------------------------------------------------- hypothesis


KINDS = ["int", "slice", "none", "ellipsis", "arr", "mask1", "mask2", "bool"]


def _adjacent(positions):
    return positions == list(range(positions[0], positions[-1] + 1))


@st.composite
def index_cases(draw):
    ndim = draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim)))
    kinds = draw(st.lists(st.sampled_from(KINDS), max_size=5))
    if kinds.count("ellipsis") > 1:
        first = kinds.index("ellipsis")
        kinds = [k for i, k in enumerate(kinds) if k != "ellipsis" or i == first]
    if kinds.count("bool") > 1:
        first = kinds.index("bool")
        kinds = [k for i, k in enumerate(kinds) if k != "bool" or i == first]
    seed = draw(st.integers(0, 2**32 - 1))
    container = draw(st.sampled_from(["np", "ft", "list"]))
    bshape = draw(st.sampled_from([(2,), (1,), (3,), (2, 1), (1, 3), (2, 3)]))
    rng = np.random.default_rng(seed)
    width = {"int": 1, "slice": 1, "arr": 1, "mask1": 1, "mask2": 2}
    consumed = sum(width.get(k, 0) for k in kinds)
    ell_width = max(ndim - consumed, 0)
    d = 0
    np_idx, ft_idx, entries = [], [], []
    for k in kinds:
        size = shape[d] if d < ndim else 1
        if k == "int":
            v = int(rng.integers(-size - (rng.random() < 0.1), size + (rng.random() < 0.1))) if size else 0
            np_idx.append(v)
            ft_idx.append([v, np.int64(v), ft.tensor(v)][int(rng.integers(3))])
            d += 1
        elif k == "slice":
            def bound(size=size):
                return None if rng.random() < 0.3 else int(rng.integers(-size - 2, size + 3))
            s = slice(bound(), bound(), [None, 1, 2, 3][int(rng.integers(4))])
            np_idx.append(s)
            ft_idx.append(s)
            d += 1
        elif k == "none":
            np_idx.append(None)
            ft_idx.append(None)
        elif k == "ellipsis":
            np_idx.append(Ellipsis)
            ft_idx.append(Ellipsis)
            d += ell_width
        elif k == "arr":
            sh = tuple(1 if rng.random() < 0.3 else s for s in bshape)
            sh = sh[int(rng.integers(len(sh))):] if rng.random() < 0.3 else sh
            vals = rng.integers(-size, size, sh) if size else rng.integers(-2, 2, sh)
            np_idx.append(vals)
            if container == "list" and vals.ndim == 1:
                ft_idx.append(vals.tolist())
            elif container == "ft":
                ft_idx.append(ft.tensor(vals).to(ft.int32 if rng.random() < 0.3 else ft.int64))
            else:
                ft_idx.append(vals.astype(np.int32) if rng.random() < 0.3 else vals)
            d += 1
        elif k in ("mask1", "mask2"):
            w = width[k]
            msh = tuple(shape[d + j] if d + j < ndim else 1 for j in range(w))
            m = rng.random(msh) < 0.5
            np_idx.append(m)
            if container == "list" and m.ndim == 1:
                ft_idx.append(m.tolist())
            elif container == "ft":
                ft_idx.append(ft.tensor(m))
            else:
                ft_idx.append(m)
            d += w
        else:
            b = bool(rng.random() < 0.7)
            np_idx.append(b)
            ft_idx.append(b if rng.random() < 0.5 else np.bool_(b))
        entries.append((k, ell_width if k == "ellipsis" else 0))
    return shape, entries, tuple(np_idx), tuple(ft_idx), seed


def _same_semantics(entries):
    """NumPy and PyTorch place advanced-index dims the same way unless ints (or zero-width
    ellipses) sit between advanced indices: PyTorch applies ints first as selects."""
    adv = {"arr", "mask1", "mask2", "bool"}
    if not any(k in adv for k, _ in entries):
        return True
    np_pos = [i for i, (k, _) in enumerate(entries) if k in adv or k == "int"]
    seq = [k for k, w in entries if k != "int" and not (k == "ellipsis" and w == 0)]
    t_pos = [i for i, k in enumerate(seq) if k in adv]
    return _adjacent(np_pos) == _adjacent(t_pos)


def _make_base(shape, seed):
    rng = np.random.default_rng(seed + 1)
    a = rng.integers(-50, 50, shape).astype(np.int64) if shape else np.array(int(rng.integers(9)))
    if len(shape) >= 2 and seed % 2:
        perm = list(range(len(shape)))[::-1]
        t = ft.tensor(np.ascontiguousarray(a.transpose(perm))).permute(perm)
    else:
        t = ft.tensor(a)
    return a, t


@settings(max_examples=250, deadline=None)
@given(index_cases())
def test_property_getitem_matches_numpy(case):
    shape, entries, np_idx, ft_idx, seed = case
    assume(_same_semantics(entries))
    a, t = _make_base(shape, seed)
    try:
        exp = a[np_idx]
    except IndexError:
        with pytest.raises(IndexError):
            t[ft_idx]
        return
    r = t[ft_idx]
    check(r, exp)
    advanced = any(k not in ("int", "slice", "none", "ellipsis") for k, _ in entries)
    if r.numel() and t.numel():  # empty buffers may all sit at the same dangling address
        assert shares(r, t) != advanced
    if len(ft_idx) == 1 and not isinstance(ft_idx[0], list):
        check(t[ft_idx[0]], exp)


@settings(max_examples=200, deadline=None)
@given(index_cases())
def test_property_setitem_matches_numpy(case):
    shape, entries, np_idx, ft_idx, seed = case
    assume(_same_semantics(entries))
    a, t = _make_base(shape, seed)
    try:
        target = a[np_idx]
    except IndexError:
        with pytest.raises(IndexError):
            t[ft_idx] = 1
        return
    # scalar
    a1 = a.copy()
    a1[np_idx] = 7
    t1 = ft.tensor(a) if seed % 3 else _make_base(shape, seed)[1]
    t1[ft_idx] = 7
    check(t1, a1)
    # array values of the indexed shape (skip when the index hits an element twice)
    pos = np.arange(a.size).reshape(a.shape)[np_idx]
    if np.unique(pos).size != np.size(pos):
        return
    vals = np.random.default_rng(seed).integers(100, 200, np.shape(target))
    a2 = a.copy()
    a2[np_idx] = vals
    t2 = _make_base(shape, seed)[1]
    t2[ft_idx] = ft.tensor(vals).to(t2.dtype)
    check(t2, a2)
    # broadcast along leading dims
    if np.ndim(target) >= 1:
        row = vals[(0,) * (np.ndim(target) - 1)] if np.size(vals) else vals.reshape(-1)[:0]
        if np.shape(target)[-1:] == row.shape[-1:]:
            a3 = a.copy()
            a3[np_idx] = row
            t3 = ft.tensor(a)
            t3[ft_idx] = ft.tensor(row).to(t3.dtype)
            check(t3, a3)


# ------------------------------------------------------------------------- __setitem__


@pytest.mark.parametrize("ft_dtype,np_dtype", ALL_DTYPES)
def test_setitem_values_and_casts(rng, ft_dtype, np_dtype):
    a = random_array(rng, (4, 5), np_dtype)
    for idx in [1, (slice(None), 2), (slice(1, None, 2), slice(None, 3)), (Ellipsis, -1),
                ([0, 3], [1, 2]), (a.astype(np.float32) > 0.5,), ([2, 0],), (None, 1, slice(1, 4))]:
        for value in [1, 0, True, 2.0]:
            t, e = make(a, ft_dtype)
            e = e.copy()
            e[idx] = np.array(value).astype(e.dtype)
            t[idx] = value
            check(t, e, ft_dtype)
        # tensor values are broadcast; basic indexing casts them to the destination dtype,
        # advanced indexing wants the destination's dtype (PyTorch's index_put rule)
        t, e = make(a, ft_dtype)
        e = e.copy()
        shape = np.shape(e[idx])
        v = random_array(rng, shape[-1:], np.float64)
        vt = ft.tensor(v).to(t.dtype)
        e[idx] = as_np(vt)
        advanced = any(isinstance(i, (list, np.ndarray)) for i in idx) if isinstance(
            idx, tuple) else False
        if advanced and t.dtype != ft.float64:
            with pytest.raises(RuntimeError, match="Index put requires the source and "
                                                   "destination dtypes match"):
                t[idx] = ft.tensor(v)
            t[idx] = vt
        else:
            t[idx] = ft.tensor(v)
        check(t, e)
    # writes through a non-contiguous view land in the base
    t, e = make(a, ft_dtype)
    e = e.copy()
    v = t.t()
    v[1:3, ::2] = 1
    e.T[1:3, ::2] = np.array(1).astype(e.dtype)
    check(t, e)


def test_setitem_sources_and_errors():
    t = ft.tensor(np.zeros((3, 4), np.int32))
    t[0] = [1, 2, 3, 4]
    t[1] = np.array([5, 6, 7, 8])
    t[2, 1:3] = ft.tensor([[9.7, -9.7]])  # leading 1 dims dropped, float -> int truncates
    check(t, np.array([[1, 2, 3, 4], [5, 6, 7, 8], [0, 9, -9, 0]], np.int32))
    t[t > 4] = -1
    t[ft.tensor([0, 0]), ft.tensor([0, 1])] = ft.tensor([10, 11], dtype=ft.int32)
    with pytest.raises(RuntimeError, match="got Int for the destination and Long for the"):
        t[ft.tensor([0, 0]), ft.tensor([0, 1])] = ft.tensor([10, 11])
    check(t, np.array([[10, 11, 3, 4], [-1, -1, -1, -1], [0, -1, -9, 0]], np.int32))
    f = ft.tensor(np.zeros(3, np.float32))
    f[1] = True
    f[2] = 2**40
    check(f, np.array([0, 1, 2**40], np.float32))
    with pytest.raises(RuntimeError, match="shape mismatch: value tensor of shape"):
        t[0] = ft.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match="cannot be broadcast to indexing result of shape"):
        t[[0, 1]] = ft.tensor([1, 2, 3], dtype=ft.int32)
    with pytest.raises(IndexError):
        t[3] = 1
    # overlapping source and destination behave like NumPy (source read first)
    a = np.arange(10)
    x = ft.tensor(a)
    x[1:] = x[:-1]
    a[1:] = a[:-1].copy()
    check(x, a)
    x = ft.tensor(np.arange(10))
    x[[1, 2, 3]] = x[[0, 1, 2]]
    check(x, np.array([0, 0, 1, 2, 4, 5, 6, 7, 8, 9]))
    z = ft.tensor(1.5)
    z[()] = 4
    assert z.item() == 4.0
    z[...] = ft.tensor(2.0)
    assert z.item() == 2.0


def test_index_put():
    a = np.zeros(5, np.float32)
    t = ft.tensor(a)
    idx = np.array([0, 2, 2, 4, 0])
    vals = np.array([1, 2, 3, 4, 5], np.float32)
    r = t.index_put_((ft.tensor(idx),), ft.tensor(vals), accumulate=True)
    assert r is t
    np.add.at(a, idx, vals)
    check(t, a)
    out = ft.index_put(t, (ft.tensor([1]),), ft.tensor(9.0))
    check(out, np.array([6, 9, 5, 0, 4], np.float32))
    check(t, a)
    m = ft.tensor(np.arange(6).reshape(2, 3))
    m.index_put_((None, ft.tensor([0, 2])), ft.tensor(-1))
    check(m, np.array([[-1, 1, -1], [-1, 4, -1]]))


def test_iter():
    a = np.arange(6).reshape(3, 2)
    t = ft.tensor(a)
    rows = list(t)
    assert len(rows) == 3
    for r, e in zip(rows, a):
        check(r, e)
    assert shares(rows[0], t)
    assert [x.item() for x in ft.tensor([1, 2, 3])] == [1, 2, 3]
    assert list(ft.tensor(np.zeros((0, 2)))) == []
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        iter(ft.tensor(1.0))
    a_, b_ = ft.tensor([4, 5])
    assert (a_.item(), b_.item()) == (4, 5)


# ------------------------------------------------------------------------- index_* family


@pytest.mark.parametrize("ft_dtype,np_dtype", ALL_DTYPES)
def test_index_select(rng, ft_dtype, np_dtype):
    for shape in [(5,), (3, 4), (2, 3, 4), (3, 0)]:
        for _, a, t in variants(rng, shape, ft_dtype, np_dtype):
            for d in range(-a.ndim, a.ndim):
                n = a.shape[d]
                for idx in ([], [0], list(range(n))[::-1], [n - 1] * 3) if n else ([],):
                    i = np.array(idx, dtype=np.int64)
                    check(t.index_select(d, ft.tensor(i)), np.take(a, i, axis=d), ft_dtype)
                    check(ft.index_select(t, d, ft.tensor(i).int()), np.take(a, i, axis=d))
    t = ft.tensor(np.arange(6).reshape(2, 3))
    with pytest.raises(IndexError, match="index out of range in self"):
        t.index_select(0, ft.tensor([2]))
    with pytest.raises(IndexError):
        t.index_select(0, ft.tensor([-1]))
    with pytest.raises(RuntimeError):
        t.index_select(0, ft.tensor([0.0]))
    with pytest.raises(IndexError):
        t.index_select(0, ft.tensor([[0]]))
    check(ft.tensor(7).index_select(0, ft.tensor([0])), np.array(7))


def _sub(a, ishape, d):
    return a[tuple(slice(None) if k == d else slice(0, ishape[k]) for k in range(a.ndim))]


def _unique_index(rng, ishape, n, d):
    """Index of `ishape` with distinct values along `d` (values < n)."""
    out = np.empty(ishape, np.int64)
    for pos in np.ndindex(*[s for k, s in enumerate(ishape) if k != d]):
        perm = rng.permutation(n)[: ishape[d]]
        sl = list(pos)
        sl.insert(d, slice(None))
        out[tuple(sl)] = perm
    return out


@pytest.mark.parametrize("ft_dtype,np_dtype", ALL_DTYPES)
def test_gather_scatter(rng, ft_dtype, np_dtype):
    for shape in [(5,), (3, 4), (2, 3, 4)]:
        for _, a, t in variants(rng, shape, ft_dtype, np_dtype):
            for d in range(a.ndim):
                ishape = tuple(int(rng.integers(1, s + 1)) if k != d else int(rng.integers(0, 6))
                               for k, s in enumerate(a.shape))
                idx = rng.integers(0, a.shape[d], ishape)
                check(t.gather(d, ft.tensor(idx)), np.take_along_axis(_sub(a, ishape, d), idx, d), ft_dtype)
                check(ft.gather(t, d - a.ndim, ft.tensor(idx)), np.take_along_axis(_sub(a, ishape, d), idx, d))
                if ishape[:d] + ishape[d + 1:] == a.shape[:d] + a.shape[d + 1:]:
                    check(t.take_along_dim(ft.tensor(idx), d), np.take_along_axis(a, idx, d))
                # scatter with distinct target positions
                sh = list(ishape)
                sh[d] = min(ishape[d], a.shape[d])
                uidx = _unique_index(rng, tuple(sh), a.shape[d], d)
                src, src_np = make(random_array(rng, tuple(sh), np_dtype), ft_dtype)
                exp = a.copy()
                np.put_along_axis(_sub(exp, sh, d), uidx, src_np, d)
                check(t.scatter(d, ft.tensor(uidx), src), exp, ft_dtype)
                check(ft.scatter(t, d, ft.tensor(uidx), src), exp)
                exp = a.copy()
                np.put_along_axis(_sub(exp, sh, d), uidx, np.array(1).astype(exp.dtype), d)
                check(t.scatter(d, ft.tensor(uidx), 1), exp)
                check(t.scatter(d, ft.tensor(uidx), value=1), exp)
                c, _ = make(a, ft_dtype)
                r = c.scatter_(d, ft.tensor(uidx), src)
                assert r is c
                exp = a.copy()
                np.put_along_axis(_sub(exp, sh, d), uidx, src_np, d)
                check(c, exp)
                # scatter_add with repeated targets
                if ft_dtype != ft.bool:
                    src, src_np = make(random_array(rng, ishape, np_dtype), ft_dtype)
                    exp = a.copy().astype(np.float64)
                    full = tuple(idx if k == d else np.indices(ishape)[k] for k in range(a.ndim))
                    np.add.at(exp, full, src_np.astype(np.float64))
                    got = t.scatter_add(d, ft.tensor(idx), src)
                    if np_dtype in (np.float16, None):
                        np.testing.assert_allclose(as_np(got).astype(np.float64), exp, rtol=2e-2, atol=5e-2)
                    elif np_dtype in (np.float32, np.float64):
                        np.testing.assert_allclose(as_np(got), exp, rtol=1e-6, atol=1e-6)
                    else:
                        check(got, exp.astype(a.dtype))


def test_gather_scatter_errors():
    t = ft.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 1 with size 3"):
        t.gather(1, ft.tensor([[5]]))
    with pytest.raises(RuntimeError, match="out of bounds"):
        t.gather(1, ft.tensor([[-1]]))
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        t.gather(1, ft.tensor([0]))
    with pytest.raises(RuntimeError, match="Size does not match"):
        t.gather(1, ft.tensor([[0], [0], [0]]))
    with pytest.raises(RuntimeError, match="int64"):
        t.gather(1, ft.tensor([[0.0]]))
    with pytest.raises(RuntimeError, match="dtype"):
        t.scatter(1, ft.tensor([[0]]), ft.tensor([[1]]))
    with pytest.raises(RuntimeError, match="no larger than src"):
        t.scatter(1, ft.tensor([[0, 1]]), ft.tensor([[1.0]]))
    with pytest.raises(IndexError):
        t.gather(2, ft.tensor([[0]]))
    assert t.gather(1, ft.tensor(np.zeros((2, 0), np.int64))).shape == (2, 0)


def _scatter_reduce_ref(a, d, idx, src, reduce, include_self):
    out = a.astype(np.float64).copy()
    groups = {}
    for pos in np.ndindex(*idx.shape):
        tgt = list(pos)
        tgt[d] = idx[pos]
        groups.setdefault(tuple(tgt), []).append(float(src[pos]))
    for tgt, vals in groups.items():
        vals = ([float(a[tgt])] if include_self else []) + vals
        if reduce == "sum":
            r = sum(vals)
        elif reduce == "prod":
            r = math.prod(vals)
        elif reduce == "amax":
            r = max(vals)
        elif reduce == "amin":
            r = min(vals)
        else:
            r = sum(vals) / len(vals)
            if not np.issubdtype(a.dtype, np.floating):
                r = sum(vals) // len(vals)  # integer mean rounds down (floor), as in PyTorch
        out[tgt] = r
    return out


@pytest.mark.parametrize("ft_dtype,np_dtype", [d for d in ALL_DTYPES if d[0] != ft.bool])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce(rng, ft_dtype, np_dtype, reduce):
    for shape, d in [((5,), 0), ((3, 4), 1), ((3, 4), 0), ((2, 3, 2), 1)]:
        a = rng.integers(0 if np_dtype == np.uint8 else -3, 4, shape).astype(np_dtype or np.float32)
        t, a = make(a, ft_dtype)
        ishape = tuple(s if k != d else 4 for k, s in enumerate(shape))
        idx = rng.integers(0, shape[d], ishape)
        src_a = rng.integers(0 if np_dtype == np.uint8 else -3, 4, ishape).astype(np_dtype or np.float32)
        src, src_a = make(src_a, ft_dtype)
        for include_self in (True, False):
            exp = _scatter_reduce_ref(a, d, idx, src_a, reduce, include_self)
            got = t.scatter_reduce(d, ft.tensor(idx), src, reduce, include_self=include_self)
            assert got.dtype == ft_dtype
            if np_dtype in (np.float16, None) or reduce == "mean" and np_dtype in (np.float32, np.float64):
                np.testing.assert_allclose(as_np(got).astype(np.float64), exp, rtol=1e-2, atol=1e-2)
            else:
                check(got, exp.astype(a.dtype))
            c, _ = make(a, ft_dtype)
            assert c.scatter_reduce_(d, ft.tensor(idx), src, reduce, include_self=include_self) is c
            np.testing.assert_array_equal(as_np(c), as_np(got))
    with pytest.raises(RuntimeError, match="reduce argument"):
        ft.tensor([1.0]).scatter_reduce(0, ft.tensor([0]), ft.tensor([1.0]), "max")


def test_scatter_reduce_nan_and_legacy_reduce():
    t = ft.tensor([0.0, 0.0])
    r = t.scatter_reduce(0, ft.tensor([0, 0, 1]), ft.tensor([1.0, float("nan"), 2.0]), "amax")
    assert math.isnan(r[0].item()) and r[1].item() == 2.0
    r = t.scatter(0, ft.tensor([0, 0]), ft.tensor([1.0, 2.0]), reduce="add")
    check(r, np.array([3.0, 0.0], np.float32))
    r = ft.tensor([2.0, 3.0]).scatter(0, ft.tensor([1, 1]), 2.0, reduce="multiply")
    check(r, np.array([2.0, 12.0], np.float32))


@pytest.mark.parametrize("ft_dtype,np_dtype", [d for d in ALL_DTYPES if d[0] != ft.bool])
def test_index_add_copy_fill(rng, ft_dtype, np_dtype):
    for shape in [(5,), (3, 4), (2, 3, 4)]:
        for _, a, t in variants(rng, shape, ft_dtype, np_dtype):
            for d in range(a.ndim):
                n = a.shape[d]
                idx = rng.integers(0, n, 4)
                sshape = list(a.shape)
                sshape[d] = 4
                src, src_np = make(random_array(rng, tuple(sshape), np_dtype), ft_dtype)
                for alpha in (1, 2):
                    exp = a.astype(np.float64).copy()
                    for i, j in enumerate(idx):
                        sl_o = (slice(None),) * d + (j,)
                        sl_i = (slice(None),) * d + (i,)
                        exp[sl_o] += alpha * src_np[sl_i].astype(np.float64)
                    got = t.index_add(d, ft.tensor(idx), src, alpha=alpha)
                    if np_dtype in (np.float16, None):
                        np.testing.assert_allclose(as_np(got).astype(np.float64), exp, rtol=2e-2, atol=5e-2)
                    elif np_dtype in (np.float32, np.float64):
                        np.testing.assert_allclose(as_np(got), exp.astype(a.dtype), rtol=1e-6, atol=1e-6)
                    else:
                        check(got, exp.astype(np.int64).astype(a.dtype))
                c, _ = make(a, ft_dtype)
                assert c.index_add_(d, ft.tensor(idx), src) is c
                # index_copy with distinct indices
                uidx = rng.permutation(n)[: min(n, 4)]
                sshape[d] = len(uidx)
                src, src_np = make(random_array(rng, tuple(sshape), np_dtype), ft_dtype)
                exp = a.copy()
                for i, j in enumerate(uidx):
                    exp[(slice(None),) * d + (j,)] = src_np[(slice(None),) * d + (i,)]
                check(t.index_copy(d, ft.tensor(uidx), src), exp, ft_dtype)
                check(ft.index_copy(t, d, ft.tensor(uidx), src), exp)
                # index_fill (negative indices wrap)
                fidx = np.array([0, -1])
                exp = a.copy()
                exp[(slice(None),) * d + (fidx,)] = np.array(3).astype(a.dtype)
                check(t.index_fill(d, ft.tensor(fidx), 3), exp, ft_dtype)
                check(t.index_fill(d, ft.tensor(fidx), ft.tensor(3)), exp)
                c, _ = make(a, ft_dtype)
                c.index_fill_(d, ft.tensor(fidx), 3)
                check(c, exp)
    t = ft.tensor(np.zeros((2, 3), np.float32))
    with pytest.raises(IndexError, match="Number of indices"):
        t.index_add(0, ft.tensor([0]), ft.tensor(np.ones((2, 3), np.float32)))
    with pytest.raises(RuntimeError, match="slice shape"):
        t.index_add(0, ft.tensor([0]), ft.tensor(np.ones((1, 2), np.float32)))
    with pytest.raises(IndexError, match="out of bounds"):
        t.index_copy(0, ft.tensor([2]), ft.tensor(np.ones((1, 3), np.float32)))
    with pytest.raises(RuntimeError, match="alpha must not be a floating point"):
        ft.tensor([1, 2]).index_add(0, ft.tensor([0]), ft.tensor([1]), alpha=0.5)
    with pytest.raises(RuntimeError, match="same dtype"):
        t.index_copy(0, ft.tensor([0]), ft.tensor(np.ones((1, 3))))


# ------------------------------------------------------------------------- masks


@pytest.mark.parametrize("ft_dtype,np_dtype", ALL_DTYPES)
def test_masked_fill_select_scatter(rng, ft_dtype, np_dtype):
    for shape, mshape in [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 4), (3, 1)), ((2, 3, 4), ()),
                          ((4,), (3, 4)), ((0, 2), (2,))]:
        for _, a, t in variants(rng, shape, ft_dtype, np_dtype):
            m = rng.random(mshape) < 0.5
            mt = ft.tensor(m)
            for v in (0, 1, True, 2.5):
                exp = np.where(m, np.array(v).astype(a.dtype), a)
                check(t.masked_fill(mt, v), exp, ft_dtype)
                check(ft.masked_fill(t, mt, ft.tensor(v)), exp)
            ab, mb = np.broadcast_arrays(a, m)
            check(t.masked_select(mt), ab[mb], ft_dtype)
            check(ft.masked_select(t, mt), ab[mb])
            src, src_np = make(random_array(rng, (30,), np_dtype), ft_dtype)
            exp = ab.copy()
            exp[mb] = src_np[: mb.sum()]
            check(t.masked_scatter(mt, src), exp, ft_dtype)
            if np.broadcast_shapes(a.shape, m.shape) == a.shape:
                c, e = make(a, ft_dtype)
                e = e.copy()
                assert c.masked_fill_(mt, 1) is c
                e[np.broadcast_to(m, a.shape)] = np.array(1).astype(e.dtype)
                check(c, e)
                c, _ = make(a, ft_dtype)
                assert c.masked_scatter_(mt, src) is c
                check(c, exp)
    t = ft.tensor(np.zeros((2, 3), np.float32))
    with pytest.raises(RuntimeError, match="boolean masks"):
        t.masked_fill(ft.tensor([1, 0, 1]), 1.0)
    with pytest.raises(RuntimeError, match="0-dimensional value tensor"):
        t.masked_fill(ft.tensor([True, False, True]), ft.tensor([1.0]))
    with pytest.raises(RuntimeError):
        t.masked_fill_(ft.tensor(np.ones((3, 3), bool)), 1.0)
    with pytest.raises(RuntimeError, match="at least as many elements"):
        t.masked_scatter(ft.tensor([True, True, True]), ft.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError):
        t.masked_select(ft.tensor([1, 0, 1]))


# ------------------------------------------------------------------------- where / nonzero


def test_where_promotion_and_values(rng):
    c = rng.random((3, 4)) < 0.5
    ct = ft.tensor(c)
    cases = [
        (ft.tensor(np.arange(12, dtype=np.int32).reshape(3, 4)), 2.5, ft.float32),
        (ft.tensor(np.arange(4, dtype=np.int32)), ft.tensor(np.arange(4, dtype=np.int64)), ft.int64),
        (1, 2, ft.int64),
        (1, 2.0, ft.float32),
        (ft.tensor(np.ones(4, np.float16)), 1.0, ft.float16),
        (ft.tensor(np.ones(4, np.float16)), ft.tensor(np.ones(4, np.float64)), ft.float64),
        (ft.tensor(np.ones(4, np.uint8)), ft.tensor(np.ones(4, np.int8)), ft.int16),
        (ft.tensor([True, False, True, False]), 3, ft.int64),
        (ft.tensor(np.ones(4, np.float16)), ft.tensor(2.0, dtype=ft.float64), ft.float16),
        (ft.tensor(np.ones(4, np.int16)), ft.tensor(2.0), ft.float32),
    ]
    for x, y, dt in cases:
        def npv(v):
            return as_np(v) if isinstance(v, ft.Tensor) else np.array(v)
        exp = np.where(c, npv(x), npv(y))
        got = ft.where(ct, x, y)
        assert got.dtype == dt
        np.testing.assert_array_equal(as_np(got), exp.astype(as_np(got).dtype))
        assert got.shape == exp.shape
        if isinstance(x, ft.Tensor):
            got2 = x.where(ct, y)
            np.testing.assert_array_equal(as_np(got2), as_np(got))
    with pytest.raises(RuntimeError, match="boolean"):
        ft.where(ft.tensor([1, 0]), 1.0, 2.0)
    with pytest.raises(RuntimeError):
        ft.where(ft.tensor([True, False]), ft.tensor([0.0] * 3), 1.0)


@pytest.mark.parametrize("ft_dtype,np_dtype", ALL_DTYPES)
def test_where_dtypes_layouts(rng, ft_dtype, np_dtype):
    for _, a, t in variants(rng, (3, 4), ft_dtype, np_dtype):
        for _, b, u in variants(rng, (3, 4), ft_dtype, np_dtype):
            c = rng.random((4,)) < 0.5
            check(ft.where(ft.tensor(c), t, u), np.where(c, a, b), ft_dtype)
    big = rng.standard_normal((300, 200)).astype(np.float32)
    c = big > 0
    check(ft.where(ft.tensor(c), ft.tensor(big), 0.0), np.where(c, big, 0.0).astype(np.float32))
    check(ft.where(ft.tensor(c).t(), ft.tensor(big).t(), ft.tensor(big[:1].T)), np.where(c.T, big.T, big[:1].T))


@pytest.mark.parametrize("ft_dtype,np_dtype", ALL_DTYPES)
def test_nonzero_argwhere(rng, ft_dtype, np_dtype):
    for shape in [(), (5,), (3, 4), (2, 0, 3), (2, 3, 4)]:
        for _, a, t in variants(rng, shape, ft_dtype, np_dtype):
            exp = np.argwhere(a)
            check(t.nonzero(), exp, ft.int64)
            check(ft.nonzero(t), exp)
            check(t.argwhere(), exp)
            check(ft.argwhere(t), exp)
            if a.ndim:
                got = t.nonzero(as_tuple=True)
                for g, e in zip(got, np.nonzero(a)):
                    check(g, e)
                for g, e in zip(ft.where(t != 0 if ft_dtype != ft.bool else t), np.nonzero(a)):
                    check(g, e)
    nz = ft.tensor(3).nonzero(as_tuple=True)
    assert len(nz) == 1 and nz[0].tolist() == [0]
    assert ft.tensor(0).nonzero(as_tuple=True)[0].tolist() == []
    big = rng.random((500, 300)) < 0.3
    check(ft.tensor(big).nonzero(), np.argwhere(big))


# ------------------------------------------------------------------------- take / put


@pytest.mark.parametrize("ft_dtype,np_dtype", ALL_DTYPES)
def test_take_put(rng, ft_dtype, np_dtype):
    for shape in [(), (5,), (3, 4), (2, 3, 4)]:
        for _, a, t in variants(rng, shape, ft_dtype, np_dtype):
            n = a.size
            for ishape in [(), (4,), (2, 3), (0,)]:
                idx = rng.integers(-n, n, ishape)
                check(t.take(ft.tensor(idx)), np.take(a, idx), ft_dtype)
                check(ft.take(t, ft.tensor(idx)), np.take(a, idx))
            idx = rng.permutation(n)[: min(n, 4)]
            src, src_np = make(random_array(rng, idx.shape, np_dtype), ft_dtype)
            exp = a.copy()
            np.put(exp, idx, src_np)
            check(t.put(ft.tensor(idx), src), exp, ft_dtype)
            c, _ = make(a, ft_dtype)
            if c.ndim == 2:
                c = c.t()
                exp = a.T.copy()
                np.put(exp, idx, src_np)
            assert c.put_(ft.tensor(idx), src) is c
            check(c, exp)
            if ft_dtype not in (ft.bool, ft.float16, ft.bfloat16):
                idx = rng.integers(-n, n, 6)
                src, src_np = make(random_array(rng, (6,), np_dtype), ft_dtype)
                exp = a.copy().reshape(-1)
                np.add.at(exp, idx, src_np)
                check(t.put(ft.tensor(idx), src, accumulate=True), exp.reshape(a.shape))
    t = ft.tensor(np.arange(6.0, dtype=np.float32))
    with pytest.raises(IndexError, match="out of range: tried to access index 10 on a tensor of 6 elements"):
        t.take(ft.tensor([10]))
    with pytest.raises(IndexError, match="out of range"):
        t.put_(ft.tensor([-7]), ft.tensor([1.0]))
    with pytest.raises(RuntimeError, match="same number of elements"):
        t.put_(ft.tensor([0, 1]), ft.tensor([1.0]))
    big = rng.standard_normal(100000).astype(np.float32)
    idx = rng.integers(-100000, 100000, 70000)
    check(ft.tensor(big).take(ft.tensor(idx)), big[idx])


def test_take_along_dim(rng):
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    t = ft.tensor(a)
    for d in range(3):
        idx = np.argsort(a, axis=d)
        check(t.take_along_dim(ft.tensor(idx), d), np.take_along_axis(a, idx, d))
        check(ft.take_along_dim(t, ft.tensor(idx), dim=d), np.take_along_axis(a, idx, d))
        sh = [1, 1, 1]
        sh[d] = 2
        idx = rng.integers(0, a.shape[d], sh)
        check(t.take_along_dim(ft.tensor(idx), d), np.take_along_axis(a, np.broadcast_to(idx, tuple(
            2 if k == d else a.shape[k] for k in range(3))), d))
    idx = rng.integers(0, a.size, (7,))
    check(t.take_along_dim(ft.tensor(idx)), np.take_along_axis(a, idx, None))
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        t.take_along_dim(ft.tensor([0]), 0)
