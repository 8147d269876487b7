"""Views (view/reshape/permute/expand/narrow/split/diagonal/as_strided/unfold...), memory
sharing through views, and the joining/rearranging ops (cat/stack/flip/roll/repeat/tile/
meshgrid/tril/triu/diag), all compared against NumPy."""

import ferrotorch as ft
import numpy as np
import pytest
from hypothesis import given, settings
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
# bfloat16 has no NumPy dtype: its values are compared through float32.
ALL_DTYPES = NP_DTYPES + [(ft.bfloat16, None)]


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def random_array(rng, shape, np_dtype):
    if np_dtype is None:
        np_dtype = np.float32
    if np_dtype == np.bool_:
        return rng.random(shape) > 0.5
    if np.issubdtype(np_dtype, np.integer):
        lo = 0 if np_dtype == np.uint8 else -9
        return rng.integers(lo, 10, size=shape).astype(np_dtype)
    return rng.standard_normal(shape).astype(np_dtype)


def make(a, ft_dtype):
    """A tensor of `ft_dtype` from `a`, and the NumPy array it holds exactly."""
    t = ft.tensor(a).to(ft_dtype)
    return t, as_np(t)


def as_np(t):
    if t.dtype == ft.bfloat16:
        return t.float().numpy()
    return t.numpy()


def variants(rng, shape, ft_dtype, np_dtype):
    """(name, numpy array, tensor with the same values): contiguous, transposed, stepped
    slice, and broadcast (stride 0) layouts."""
    a = random_array(rng, shape, np_dtype)
    t, a = make(a, ft_dtype)
    out = [("contiguous", a, t)]
    if len(shape) >= 2:
        tt, _ = make(np.ascontiguousarray(np.swapaxes(a, -1, -2)), ft_dtype)
        out.append(("transposed", a, tt.transpose(-1, -2)))
    if len(shape) >= 1:
        big = np.concatenate([a, a], axis=0)
        big[::2] = a
        big[1::2] = a
        tb, _ = make(big, ft_dtype)
        out.append(("stepped", a, tb[::2]))
        if shape[0] >= 1:
            row, _ = make(a[:1], ft_dtype)
            out.append(("broadcast", np.broadcast_to(a[:1], shape), row.expand(*shape)))
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


def zeros(*shape, dtype=None):
    """Local stand-in for ``ft.zeros`` (creation ops are tested elsewhere)."""
    t = ft.tensor(np.zeros(shape, np.float32))
    return t.to(dtype) if dtype is not None else t


SHAPES = [(), (0,), (5,), (3, 4), (2, 0, 3), (2, 3, 4), (1, 3, 1, 2)]


# ------------------------------------------------------------------------- view family


@pytest.mark.parametrize("ft_dtype,np_dtype", ALL_DTYPES)
def test_view_and_reshape(rng, ft_dtype, np_dtype):
    for shape in SHAPES:
        n = int(np.prod(shape))
        for name, a, t in variants(rng, shape, ft_dtype, np_dtype):
            for new in [(n,), (-1,), (1, n), (n, 1, 1)] + ([(2, -1)] if n % 2 == 0 and n else []):
                check(t.reshape(*new), a.reshape(new), ft_dtype)
                check(t.reshape(new), a.reshape(new))
                check(ft.reshape(t, new), a.reshape(new))
                if name == "contiguous":
                    v = t.view(*new)
                    check(v, a.reshape(new))
                    assert v.data_ptr() == t.data_ptr()
            check(t.reshape_as(zeros(n)), a.reshape(n))
            if t.is_contiguous():
                check(t.view_as(zeros(n)), a.reshape(n))


def test_view_errors_and_stride_compatibility():
    x = ft.tensor(np.arange(12).reshape(3, 4))
    xt = x.t()
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        xt.view(12)
    # A view that keeps the transposed dims apart is possible.
    check(xt.view(2, 2, 3), np.arange(12).reshape(3, 4).T.reshape(2, 2, 3))
    r = xt.reshape(12)  # needs a copy
    check(r, np.arange(12).reshape(3, 4).T.reshape(12))
    with pytest.raises(RuntimeError, match="invalid for input of size 12"):
        x.view(5, -1)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        x.reshape(-1, -1)
    with pytest.raises(RuntimeError):
        x.view(7)


@pytest.mark.parametrize("ft_dtype,np_dtype", ALL_DTYPES)
def test_flatten_unflatten_squeeze_unsqueeze(rng, ft_dtype, np_dtype):
    for shape in SHAPES:
        for _, a, t in variants(rng, shape, ft_dtype, np_dtype):
            check(t.flatten(), a.reshape(-1))
            check(ft.flatten(t), a.reshape(-1))
            if a.ndim >= 2:
                check(t.flatten(1), a.reshape(a.shape[0], -1))
                check(t.flatten(0, -2), a.reshape((-1,) + a.shape[-1:]))
                check(t.flatten(start_dim=-2, end_dim=-1), a.reshape(a.shape[:-2] + (-1,)))
            check(t.squeeze(), np.squeeze(a))
            check(ft.squeeze(t), np.squeeze(a))
            for d in range(-a.ndim, a.ndim):
                exp = np.squeeze(a, d) if a.shape[d] == 1 else a
                check(t.squeeze(d), exp)
            if a.ndim:
                ones = tuple(i for i in range(a.ndim) if a.shape[i] == 1)
                check(t.squeeze(tuple(range(a.ndim))), np.squeeze(a, ones) if ones else a)
            for d in range(-a.ndim - 1, a.ndim + 1):
                check(t.unsqueeze(d), np.expand_dims(a, d))
                check(ft.unsqueeze(t, d), np.expand_dims(a, d))
            if a.ndim >= 1 and a.shape[0] == 6 or a.shape[:1] == (4,):
                n = a.shape[0]
                check(t.unflatten(0, (2, -1)), a.reshape((2, n // 2) + a.shape[1:]))
    x = ft.tensor(np.arange(24).reshape(4, 6))
    check(x.unflatten(1, (2, 3)), np.arange(24).reshape(4, 2, 3))
    check(x.unflatten(-1, [3, -1]), np.arange(24).reshape(4, 3, 2))
    check(ft.unflatten(x, 0, (2, 2)), np.arange(24).reshape(2, 2, 6))
    with pytest.raises(RuntimeError, match="don't multiply up"):
        x.unflatten(1, (4, 2))
    with pytest.raises(IndexError):
        x.squeeze(2)
    with pytest.raises(IndexError):
        x.unsqueeze(3)
    with pytest.raises(RuntimeError):
        x.flatten(1, 0)
    assert ft.tensor(5).flatten().shape == (1,)


@pytest.mark.parametrize("ft_dtype,np_dtype", ALL_DTYPES)
def test_permute_transpose_t(rng, ft_dtype, np_dtype):
    for shape in [(), (4,), (3, 4), (2, 3, 4), (2, 1, 3, 2)]:
        for _, a, t in variants(rng, shape, ft_dtype, np_dtype):
            perm = tuple(rng.permutation(a.ndim).tolist())
            check(t.permute(*perm), np.transpose(a, perm))
            check(t.permute(perm), np.transpose(a, perm))
            check(ft.permute(t, perm), np.transpose(a, perm))
            check(t.permute(dims=perm), np.transpose(a, perm))
            check(t.T, a.T)
            if a.ndim >= 2:
                check(t.transpose(0, -1), np.swapaxes(a, 0, -1))
                check(t.swapaxes(0, 1), np.swapaxes(a, 0, 1))
                check(t.swapdims(-1, -2), np.swapaxes(a, -1, -2))
                check(ft.transpose(t, 0, 1), np.swapaxes(a, 0, 1))
                check(t.mT, np.swapaxes(a, -1, -2))
                check(t.mH, np.swapaxes(a, -1, -2))
            if a.ndim <= 2:
                check(t.t(), a.T)
                check(ft.t(t), a.T)
            else:
                with pytest.raises(RuntimeError, match="<= 2 dimensions"):
                    t.t()
            if a.ndim in (0, 2):
                check(t.H, a.T)
            else:
                with pytest.raises(RuntimeError, match="tensor.H"):
                    _ = t.H
    x = zeros(2, 3)
    with pytest.raises(RuntimeError, match="duplicate"):
        x.permute(0, 0)
    with pytest.raises(RuntimeError):
        x.permute(0)
    with pytest.raises(IndexError):
        x.transpose(0, 2)
    with pytest.raises(RuntimeError, match="mT"):
        _ = zeros(3).mT


@pytest.mark.parametrize("ft_dtype,np_dtype", ALL_DTYPES)
def test_expand_broadcast_to(rng, ft_dtype, np_dtype):
    a = random_array(rng, (3, 1), np_dtype)
    t, a = make(a, ft_dtype)
    check(t.expand(2, 3, 4), np.broadcast_to(a, (2, 3, 4)))
    check(t.expand((2, 3, 4)), np.broadcast_to(a, (2, 3, 4)))
    check(t.expand(-1, 5), np.broadcast_to(a, (3, 5)))
    check(t.broadcast_to((2, 3, 4)), np.broadcast_to(a, (2, 3, 4)))
    check(ft.broadcast_to(t, (3, 2)), np.broadcast_to(a, (3, 2)))
    check(t.expand_as(zeros(4, 3, 2)), np.broadcast_to(a, (4, 3, 2)))
    e = t.expand(3, 4)
    assert e.stride() == (t.stride(0), 0)
    check(ft.tensor(7).expand(2, 2), np.full((2, 2), 7))
    with pytest.raises(RuntimeError, match="must match the existing size"):
        t.expand(4, 4)
    with pytest.raises(RuntimeError):
        t.expand(3)
    with pytest.raises(RuntimeError):
        t.expand(-1, -1, 2)


@pytest.mark.parametrize("ft_dtype,np_dtype", ALL_DTYPES)
def test_narrow_select_unbind(rng, ft_dtype, np_dtype):
    for shape in [(5,), (3, 4), (2, 3, 4), (0, 3)]:
        for _, a, t in variants(rng, shape, ft_dtype, np_dtype):
            for d in range(a.ndim):
                n = a.shape[d]
                for start in range(-n, n + 1) if n else [0]:
                    s = start % n if (n and start < 0) else start
                    for length in range(n - s + 1):
                        sl = [slice(None)] * a.ndim
                        sl[d] = slice(s, s + length)
                        check(t.narrow(d, start, length), a[tuple(sl)])
                for i in range(-n, n):
                    check(t.select(d, i), np.take(a, i, axis=d))
                parts = t.unbind(d)
                assert isinstance(parts, tuple) and len(parts) == n
                for i, p in enumerate(parts):
                    check(p, np.take(a, i, axis=d))
                check(ft.narrow(t, d, 0, n), a)
            assert len(ft.unbind(t)) == a.shape[0]
    x = zeros(3, 4)
    with pytest.raises(RuntimeError, match="exceeds dimension size"):
        x.narrow(0, 2, 2)
    with pytest.raises(IndexError, match="out of bounds"):
        x.select(1, 4)
    with pytest.raises(IndexError):
        x.narrow(2, 0, 1)
    with pytest.raises(IndexError):
        ft.tensor(1.0).unbind()
    check(x.narrow(0, ft.tensor(1), 2), np.zeros((2, 4), np.float32))


def _split_expected(a, sizes, d):
    idx = np.cumsum(sizes)[:-1]
    return np.split(a, idx, axis=d)


@pytest.mark.parametrize("ft_dtype,np_dtype", ALL_DTYPES[::3])
def test_split_chunk_tensor_split(rng, ft_dtype, np_dtype):
    for shape in [(7,), (6, 4), (2, 5, 3), (0, 2)]:
        for _, a, t in variants(rng, shape, ft_dtype, np_dtype):
            for d in range(-a.ndim, a.ndim):
                n = a.shape[d]
                for size in ([1, 2, 3, n + 1] if n else [0, 1]):
                    k = max(-(-n // size), 1) if size else 1
                    sizes = [size] * (k - 1) + [n - size * (k - 1)]
                    got = t.split(size, d)
                    exp = _split_expected(a, sizes, d)
                    assert len(got) == len(exp)
                    for g, e in zip(got, exp):
                        check(g, e)
                    assert len(ft.split(t, size, dim=d)) == len(exp)
                if n >= 3:
                    sizes = [1, n - 3, 2]
                    for g, e in zip(t.split(sizes, d), _split_expected(a, sizes, d)):
                        check(g, e)
                    for g, e in zip(t.split_with_sizes(sizes, d), _split_expected(a, sizes, d)):
                        check(g, e)
                for chunks in [1, 2, 3, 5]:
                    cs = -(-n // chunks)
                    if n == 0:
                        sizes = [0] * chunks
                    else:
                        k = -(-n // cs)
                        sizes = [cs] * (k - 1) + [n - cs * (k - 1)]
                    got = t.chunk(chunks, d)
                    assert [g.shape[d] for g in got] == sizes
                    for g, e in zip(got, _split_expected(a, sizes, d)):
                        check(g, e)
                    got = t.tensor_split(chunks, d)
                    exp = np.array_split(a, chunks, axis=d)
                    assert len(got) == len(exp)
                    for g, e in zip(got, exp):
                        check(g, e)
                for idx in ([1, 3], [2], [3, 1], [-1], [0, 10]):
                    got = t.tensor_split(idx, dim=d)
                    exp = np.array_split(a, idx, axis=d)
                    for g, e in zip(got, exp):
                        check(g, e)
                    got = ft.tensor_split(t, ft.tensor(idx), d)
                    assert len(got) == len(exp)
    x = zeros(4, 2)
    with pytest.raises(RuntimeError, match="split_with_sizes expects split_sizes to sum"):
        x.split([1, 2])
    with pytest.raises(RuntimeError, match="chunk expects"):
        x.chunk(0)
    with pytest.raises(RuntimeError, match="split_size can only be 0"):
        x.split(0)
    with pytest.raises(RuntimeError):
        ft.tensor(1.0).split(1)


@pytest.mark.parametrize("ft_dtype,np_dtype", ALL_DTYPES[::2])
def test_movedim(rng, ft_dtype, np_dtype):
    for shape in [(2, 3, 4), (2, 3, 4, 5), (3,)]:
        for _, a, t in variants(rng, shape, ft_dtype, np_dtype):
            nd = a.ndim
            for _ in range(6):
                k = rng.integers(1, nd + 1)
                src = rng.choice(nd, k, replace=False).tolist()
                dst = rng.choice(nd, k, replace=False).tolist()
                src = [s - nd if rng.random() < 0.3 else s for s in src]
                check(t.movedim(src, dst), np.moveaxis(a, src, dst))
                check(ft.moveaxis(t, src, dst), np.moveaxis(a, src, dst))
            check(t.movedim(0, -1), np.moveaxis(a, 0, -1))
    with pytest.raises(RuntimeError, match="repeated dim"):
        zeros(2, 3).movedim([0, 0], [0, 1])
    with pytest.raises(RuntimeError):
        zeros(2, 3).movedim([0], [0, 1])


@pytest.mark.parametrize("ft_dtype,np_dtype", ALL_DTYPES)
def test_diagonal(rng, ft_dtype, np_dtype):
    for shape in [(3, 4), (4, 3), (2, 3, 4), (0, 3), (3, 3)]:
        for _, a, t in variants(rng, shape, ft_dtype, np_dtype):
            for off in range(-4, 5):
                for d1, d2 in [(0, 1), (1, 0), (-1, 0), (0, -1)]:
                    check(t.diagonal(off, d1, d2), np.diagonal(a, off, d1, d2))
                check(ft.diagonal(t, offset=off), np.diagonal(a, off))
    with pytest.raises(RuntimeError, match="cannot be identical"):
        zeros(3, 3).diagonal(0, 1, 1)
    # diagonal is a view
    x = zeros(3, 3)
    x.diagonal().fill_(1)
    check(x, np.eye(3, dtype=np.float32))


def test_as_strided():
    base = np.arange(20, dtype=np.float32)
    x = ft.tensor(base)
    for size, stride, off in [((3, 3), (1, 1), 0), ((2, 5), (5, 1), 3), ((4,), (4,), 2),
                              ((2, 2, 2), (6, 2, 1), 1), ((0, 3), (1, 1), 0), ((), (), 7)]:
        t = x.as_strided(size, stride, off)
        exp = np.lib.stride_tricks.as_strided(base[off:], size, [s * 4 for s in stride])
        check(t, exp)
        check(ft.as_strided(x, size, stride, off), exp)
        assert t.stride() == tuple(stride) and t.storage_offset() == off
    y = x[2:]
    check(y.as_strided((2,), (3,)), np.array([2, 5], np.float32))  # default offset is y's
    with pytest.raises(RuntimeError, match="out of bounds for storage"):
        x.as_strided((5, 5), (5, 1))
    with pytest.raises(RuntimeError):
        x.as_strided((2,), (-1,))
    with pytest.raises(RuntimeError):
        x.as_strided((2, 2), (1,))
    v = x.as_strided((2, 2), (10, 1), 0)
    v.fill_(-1)
    assert x[0].item() == -1 and x[11].item() == -1 and x[2].item() == 2


@pytest.mark.parametrize("ft_dtype,np_dtype", ALL_DTYPES[::2])
def test_unfold(rng, ft_dtype, np_dtype):
    for shape in [(7,), (5, 6), (2, 3, 4)]:
        for _, a, t in variants(rng, shape, ft_dtype, np_dtype):
            for d in range(a.ndim):
                n = a.shape[d]
                for size in range(n + 1):
                    for step in (1, 2, 3):
                        win = np.lib.stride_tricks.sliding_window_view(a, size, axis=d)
                        sl = [slice(None)] * win.ndim
                        sl[d] = slice(None, None, step)
                        check(t.unfold(d, size, step), win[tuple(sl)])
    x = zeros(3, 4)
    with pytest.raises(RuntimeError, match="maximum size"):
        x.unfold(0, 4, 1)
    with pytest.raises(RuntimeError, match="step"):
        x.unfold(0, 1, 0)
    assert ft.tensor(3.0).unfold(0, 1, 1).shape == (1,)


# ------------------------------------------------------------------------- memory sharing


def test_views_share_memory_with_base():
    def fresh():
        return ft.tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4))

    writers = {
        "view": lambda x: x.view(6, 4)[1],
        "reshape": lambda x: x.reshape(-1)[4:8],
        "flatten": lambda x: x.flatten()[4:8],
        "unflatten": lambda x: x.unflatten(2, (2, 2))[0, 1],
        "squeeze": lambda x: x.unsqueeze(0).squeeze(0)[0, 1],
        "unsqueeze": lambda x: x.unsqueeze(1)[0, 0, 1],
        "permute": lambda x: x.permute(2, 0, 1)[:, 0, 1],
        "transpose": lambda x: x.transpose(0, 2)[:, 1, 0],
        "swapaxes": lambda x: x.swapaxes(1, 2)[0, :, 1],
        "T": lambda x: x.T[:, 1, 0],
        "mT": lambda x: x.mT[0, :, 1],
        "expand": lambda x: x[0, 1].expand(3, 4)[0],
        "narrow": lambda x: x.narrow(1, 1, 1)[0, 0],
        "select": lambda x: x.select(1, 1)[0],
        "unbind": lambda x: x.unbind(1)[1][0],
        "split": lambda x: x.split(1, dim=1)[1][0, 0],
        "chunk": lambda x: x.chunk(3, dim=1)[1][0, 0],
        "tensor_split": lambda x: x.tensor_split(3, dim=1)[1][0, 0],
        "movedim": lambda x: x.movedim(0, 2)[1, :, 0],
        "as_strided": lambda x: x.as_strided((4,), (1,), 4),
        "unfold": lambda x: x.unfold(2, 4, 4)[0, 1, 0],
        "getitem": lambda x: x[0, 1],
        "getitem_slice": lambda x: x[0, 1:2, ::1][0],
        "getitem_none": lambda x: x[None, 0, ..., None][0, 1, :, 0],
        "view_as": lambda x: x.view_as(zeros(2, 12))[0, 4:8],
    }
    for name, w in writers.items():
        x = fresh()
        v = w(x)
        assert v.shape == (4,) or v.numel() == 4, name
        v.fill_(-1)
        exp = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
        exp[0, 1] = -1
        np.testing.assert_array_equal(x.numpy(), exp, err_msg=name)
    # In-place ops through views, and views of views.
    x = fresh()
    d = x[1].diagonal()
    d.add_(100)
    assert x[1, 0, 0].item() == 112 and x[1, 2, 2].item() == 122
    x = fresh()
    x[:, ::2][..., 1:3] = 0
    exp = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    exp[:, ::2][..., 1:3] = 0
    np.testing.assert_array_equal(x.numpy(), exp)
    # Writing to the base is visible in the view.
    x = fresh()
    v = x.permute(2, 1, 0)
    x.fill_(3)
    assert np.sum(v.numpy()) == 72.0


def test_advanced_results_and_joins_do_not_share_memory():
    x = ft.tensor(np.arange(12.0).reshape(3, 4))
    for r in [x[[0, 1]], x[x > 3], x.flip(0), ft.cat([x, x]), x.repeat(1, 1), x.gather(0, ft.tensor([[0]])),
              x.index_select(0, ft.tensor([1])), x.diag(), x.tril(), x.roll(1)]:
        r.fill_(-5)
    np.testing.assert_array_equal(x.numpy(), np.arange(12.0).reshape(3, 4))
    # reshape of a non-viewable tensor copies; of a contiguous one shares.
    assert x.reshape(12).data_ptr() == x.data_ptr()
    c = x.t().reshape(12)
    c.fill_(0)
    assert x.numpy().sum() == 66


# ------------------------------------------------------------------------- broadcasting


def test_broadcast_tensors_and_shapes():
    a = ft.tensor(np.arange(3.0).reshape(3, 1))
    b = ft.tensor(np.arange(4, dtype=np.int32))
    x, y = ft.broadcast_tensors(a, b)
    ex, ey = np.broadcast_arrays(np.arange(3.0).reshape(3, 1), np.arange(4, dtype=np.int32))
    check(x, ex)
    check(y, ey)
    assert x.dtype == ft.float64 and y.dtype == ft.int32
    assert x.stride(1) == 0 and y.stride(0) == 0
    assert ft.broadcast_shapes((2, 1), (3,), 1, ()) == (2, 3)
    assert ft.broadcast_shapes() == ()
    assert isinstance(ft.broadcast_shapes((1,), (4,)), ft.Size)
    with pytest.raises(RuntimeError, match="Shape mismatch"):
        ft.broadcast_shapes((2,), (3,))
    with pytest.raises(RuntimeError):
        ft.broadcast_tensors(zeros(2), zeros(3))
    (z,) = ft.broadcast_tensors(zeros(2))
    assert z.shape == (2,)


shape_st = st.lists(st.integers(0, 4), min_size=0, max_size=4)


@settings(max_examples=150, deadline=None)
@given(shape_st, shape_st, st.data())
def test_property_broadcasting(s1, s2, data):
    # Make s2 broadcast-compatible with s1 on some dims, incompatible on others.
    s2 = list(s2)
    for i in range(1, min(len(s1), len(s2)) + 1):
        choice = data.draw(st.sampled_from(["same", "one", "keep"]))
        if choice == "same":
            s2[-i] = s1[-i]
        elif choice == "one":
            s2[-i] = 1
    try:
        exp = np.broadcast_shapes(tuple(s1), tuple(s2))
    except ValueError:
        with pytest.raises(RuntimeError):
            ft.broadcast_shapes(s1, s2)
        with pytest.raises(RuntimeError):
            ft.broadcast_tensors(zeros(*s1), zeros(*s2))
        with pytest.raises(RuntimeError):
            zeros(*s1) + zeros(*s2)
        return
    assert ft.broadcast_shapes(s1, s2) == exp
    a = np.arange(int(np.prod(s1)), dtype=np.int64).reshape(s1)
    b = np.arange(int(np.prod(s2)), dtype=np.int64).reshape(s2)
    x, y = ft.broadcast_tensors(ft.tensor(a), ft.tensor(b))
    ea, eb = np.broadcast_arrays(a, b)
    check(x, ea)
    check(y, eb)
    check(ft.tensor(a).expand(*exp), np.broadcast_to(a, exp))
    check(ft.tensor(a) + ft.tensor(b), a + b)


# ------------------------------------------------------------------------- cat / stack


@pytest.mark.parametrize("ft_dtype,np_dtype", ALL_DTYPES)
def test_cat_stack_values(rng, ft_dtype, np_dtype):
    for shape in [(3,), (2, 3), (2, 3, 4), (0, 3), (2, 0)]:
        for d in range(-len(shape), len(shape)):
            parts = []
            for k, (_, a, t) in enumerate(variants(rng, shape, ft_dtype, np_dtype)):
                sh = list(shape)
                sh[d] = k + shape[d]
                b = random_array(rng, sh, np_dtype)
                tb, b = make(b, ft_dtype)
                parts += [(a, t), (b, tb)]
            arrs = [p[0] for p in parts]
            ts = [p[1] for p in parts]
            check(ft.cat(ts, d), np.concatenate(arrs, d), ft_dtype)
            check(ft.cat(ts, dim=d), np.concatenate(arrs, d))
            check(ft.concat(tuple(ts), d), np.concatenate(arrs, d))
            check(ft.concatenate(ts, axis=d), np.concatenate(arrs, d))
        same = variants(rng, shape, ft_dtype, np_dtype)
        for d in range(-len(shape) - 1, len(shape) + 1):
            check(ft.stack([v[2] for v in same], d), np.stack([v[1] for v in same], d), ft_dtype)
    # 0-d inputs can be stacked
    check(ft.stack([ft.tensor(1), ft.tensor(2)]), np.array([1, 2]))


def test_cat_large_parallel(rng):
    a = rng.standard_normal((300, 257)).astype(np.float32)
    b = rng.standard_normal((300, 3)).astype(np.float32)
    ta, tb = ft.tensor(a), ft.tensor(b)
    check(ft.cat([ta, tb], 1), np.concatenate([a, b], 1))
    check(ft.cat([ta, ta.flip(0)], 0), np.concatenate([a, a[::-1]], 0))
    check(ft.cat([ta.t(), ta.t()], 1), np.concatenate([a.T, a.T], 1))


def test_cat_promotion_and_skipping():
    i32 = ft.tensor([1, 2], dtype=ft.int32)
    f16 = ft.tensor([0.5], dtype=ft.float16)
    u8 = ft.tensor([200], dtype=ft.uint8)
    i8 = ft.tensor([-1], dtype=ft.int8)
    b = ft.tensor([True])
    assert ft.cat([i32, f16]).dtype == ft.float16
    assert ft.cat([u8, i8]).dtype == ft.int16
    check(ft.cat([u8, i8]), np.array([200, -1], np.int16))
    assert ft.cat([b, i32]).dtype == ft.int32
    assert ft.cat([ft.tensor([1.0], dtype=ft.float16), ft.tensor([1.0], dtype=ft.bfloat16)]).dtype == ft.float32
    assert ft.stack([i32, i32.double()]).dtype == ft.float64
    # Empty 1-d tensors are skipped whatever the other shapes are.
    x = ft.tensor(np.arange(6).reshape(2, 3))
    check(ft.cat([ft.tensor([]), x, ft.tensor([])], 1), np.arange(6).reshape(2, 3).astype(np.float32))
    check(ft.cat([x, ft.tensor([], dtype=ft.int64)]), np.arange(6).reshape(2, 3))
    assert ft.cat([ft.tensor([]), ft.tensor([])]).shape == (0,)
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 0"):
        ft.cat([x, zeros(2, 2)])
    with pytest.raises(RuntimeError, match="zero-dimensional"):
        ft.cat([ft.tensor(1.0), ft.tensor(2.0)])
    with pytest.raises(ValueError, match="non-empty"):
        ft.cat([])
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        ft.cat([x, zeros(3)])
    with pytest.raises(IndexError):
        ft.cat([x, x], 2)
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        ft.stack([zeros(2), zeros(3)])
    with pytest.raises(RuntimeError, match="non-empty"):
        ft.stack([])
    with pytest.raises(TypeError):
        ft.cat(x)
    out = zeros(4, 3, dtype=ft.int64)
    r = ft.cat([x, x], out=out)
    assert r is out
    check(out, np.concatenate([np.arange(6).reshape(2, 3)] * 2))


@pytest.mark.parametrize("ft_dtype,np_dtype", ALL_DTYPES[::2])
def test_hstack_vstack_dstack_column_stack(rng, ft_dtype, np_dtype):
    for shapes in [[(), ()], [(3,), (2,)], [(2, 3), (2, 1)], [(2, 3, 1), (2, 1, 1)]]:
        arrs, ts = [], []
        for s in shapes:
            t, a = make(random_array(rng, s, np_dtype), ft_dtype)
            arrs.append(a)
            ts.append(t)
        check(ft.hstack(ts), np.hstack(arrs), ft_dtype)
    for shapes in [[(), ()], [(3,), (3,)], [(2, 3), (1, 3)], [(2, 3, 2), (1, 3, 2)]]:
        arrs, ts = [], []
        for s in shapes:
            t, a = make(random_array(rng, s, np_dtype), ft_dtype)
            arrs.append(a)
            ts.append(t)
        check(ft.vstack(ts), np.vstack(arrs))
        check(ft.row_stack(ts), np.vstack(arrs))
    for shapes in [[(), ()], [(3,), (3,)], [(2, 3), (2, 3)], [(2, 3, 2), (2, 3, 1)]]:
        arrs, ts = [], []
        for s in shapes:
            t, a = make(random_array(rng, s, np_dtype), ft_dtype)
            arrs.append(a)
            ts.append(t)
        check(ft.dstack(ts), np.dstack(arrs))
    for shapes in [[(3,), (3,)], [(3,), (3, 2)], [(), ()]]:
        arrs, ts = [], []
        for s in shapes:
            t, a = make(random_array(rng, s, np_dtype), ft_dtype)
            arrs.append(a)
            ts.append(t)
        check(ft.column_stack(ts), np.column_stack(arrs))
    assert ft.atleast_1d(ft.tensor(1.0)).shape == (1,)
    assert ft.atleast_2d(ft.tensor([1.0])).shape == (1, 1)
    assert [t.shape for t in ft.atleast_3d(zeros(2), zeros(2, 3))] == [(1, 2, 1), (2, 3, 1)]


# ------------------------------------------------------------------------- rearranging


@pytest.mark.parametrize("ft_dtype,np_dtype", ALL_DTYPES)
def test_flip_roll(rng, ft_dtype, np_dtype):
    for shape in [(), (5,), (3, 4), (2, 3, 4), (0, 2)]:
        for _, a, t in variants(rng, shape, ft_dtype, np_dtype):
            nd = a.ndim
            for dims in [(), (0,), (-1,), (0, -1), tuple(range(nd))]:
                if nd == 0 and dims or len({d % max(nd, 1) for d in dims}) != len(dims):
                    continue
                check(t.flip(dims), np.flip(a, dims) if dims else a, ft_dtype)
                check(ft.flip(t, dims), np.flip(a, dims) if dims else a)
                if dims:
                    check(t.flip(*dims), np.flip(a, dims))
            if nd >= 2:
                check(t.fliplr(), np.fliplr(a))
                check(ft.fliplr(t), np.fliplr(a))
            if nd >= 1:
                check(t.flipud(), np.flipud(a))
            for shift in [0, 1, -2, 7]:
                check(t.roll(shift), np.roll(a, shift))
                if nd >= 1:
                    check(t.roll(shift, 0), np.roll(a, shift, 0))
                if nd >= 2:
                    check(t.roll((shift, 1), (1, -1)), np.roll(a, (shift, 1), (1, -1)))
                    check(ft.roll(t, [shift, -3], dims=[0, 1]), np.roll(a, (shift, -3), (0, 1)))
    with pytest.raises(RuntimeError, match="appears multiple times"):
        zeros(2, 3).flip(0, 0)
    with pytest.raises(RuntimeError, match="Input must be >= 2-d"):
        zeros(3).fliplr()
    with pytest.raises(RuntimeError, match="Input must be >= 1-d"):
        ft.tensor(1.0).flipud()
    with pytest.raises(RuntimeError, match="shifts and dimensions must align"):
        zeros(2, 3).roll((1, 2), 0)
    a = rng.standard_normal((200, 300)).astype(np.float32)  # parallel path
    check(ft.tensor(a).flip(1), a[:, ::-1])
    check(ft.tensor(a).t().roll(5, 0), np.roll(a.T, 5, 0))


@pytest.mark.parametrize("ft_dtype,np_dtype", ALL_DTYPES)
def test_repeat_tile(rng, ft_dtype, np_dtype):
    for shape in [(), (3,), (2, 3), (0, 2)]:
        for _, a, t in variants(rng, shape, ft_dtype, np_dtype):
            nd = a.ndim
            for reps in [(2,) * nd, (1,) * nd, (2, 3) + (1,) * nd, (0,) + (2,) * nd, (3,) + (1,) * nd]:
                if not reps:
                    continue
                check(t.repeat(*reps), np.tile(a, reps), ft_dtype)
                check(t.repeat(reps), np.tile(a, reps))
            for reps in [(2,), (2, 1), (1, 2, 2), ()]:
                check(t.tile(reps), np.tile(a, reps) if reps else a)
                check(ft.tile(t, reps), np.tile(a, reps) if reps else a)
            if nd:
                check(t.tile(2), np.tile(a, 2))
    with pytest.raises(RuntimeError, match="Number of dimensions of repeat dims"):
        zeros(2, 3).repeat(2)
    with pytest.raises(RuntimeError):
        zeros(2).repeat(-1)


@pytest.mark.parametrize("ft_dtype,np_dtype", ALL_DTYPES)
def test_repeat_interleave(rng, ft_dtype, np_dtype):
    for shape in [(), (4,), (3, 2), (2, 0)]:
        for _, a, t in variants(rng, shape, ft_dtype, np_dtype):
            check(t.repeat_interleave(2), np.repeat(a, 2), ft_dtype)
            check(ft.repeat_interleave(t, 3), np.repeat(a, 3))
            check(t.repeat_interleave(0), np.repeat(a, 0))
            for d in range(-a.ndim, a.ndim):
                n = a.shape[d]
                check(t.repeat_interleave(2, dim=d), np.repeat(a, 2, axis=d))
                reps = rng.integers(0, 3, n)
                check(t.repeat_interleave(ft.tensor(reps), d), np.repeat(a, reps, axis=d))
                check(t.repeat_interleave(ft.tensor([2]), d), np.repeat(a, 2, axis=d))
                check(t.repeat_interleave(ft.tensor(2), d), np.repeat(a, 2, axis=d))
    check(ft.repeat_interleave(ft.tensor([1, 0, 3])), np.array([0, 2, 2, 2]))
    assert ft.repeat_interleave(ft.tensor([2, 1]), output_size=3).tolist() == [0, 0, 1]
    with pytest.raises(RuntimeError, match="repeats must have the same size"):
        zeros(3).repeat_interleave(ft.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="negative"):
        zeros(3).repeat_interleave(-1)
    with pytest.raises(RuntimeError):
        zeros(3).repeat_interleave(ft.tensor([1.0, 2.0, 3.0]))


@pytest.mark.parametrize("ft_dtype,np_dtype", ALL_DTYPES[::3])
def test_meshgrid(rng, ft_dtype, np_dtype):
    arrs = [random_array(rng, (n,), np_dtype) for n in (2, 3, 4)]
    ts = []
    for i, a in enumerate(arrs):
        t, arrs[i] = make(a, ft_dtype)
        ts.append(t)
    for indexing in ("ij", "xy"):
        for k in (1, 2, 3):
            got = ft.meshgrid(*ts[:k], indexing=indexing)
            exp = np.meshgrid(*arrs[:k], indexing=indexing)
            assert len(got) == k
            for g, e in zip(got, exp):
                check(g, e, ft_dtype)
            got = ft.meshgrid(ts[:k], indexing=indexing)
            for g, e in zip(got, exp):
                check(g, e)
    g = ft.meshgrid(ts[0], ts[1])  # default 'ij'
    check(g[0], np.meshgrid(arrs[0], arrs[1], indexing="ij")[0])
    assert g[0].stride(1) == 0  # expanded views
    with pytest.raises(RuntimeError, match="0D or 1D"):
        ft.meshgrid(zeros(2, 2))
    with pytest.raises(RuntimeError, match="indexing"):
        ft.meshgrid(ts[0], indexing="xx")


@pytest.mark.parametrize("ft_dtype,np_dtype", ALL_DTYPES)
def test_tril_triu(rng, ft_dtype, np_dtype):
    for shape in [(3, 4), (4, 3), (2, 3, 3), (0, 2), (2, 1, 5)]:
        for _, a, t in variants(rng, shape, ft_dtype, np_dtype):
            for k in range(-5, 6):
                check(t.tril(k), np.tril(a, k), ft_dtype)
                check(t.triu(k), np.triu(a, k), ft_dtype)
                check(ft.tril(t, k), np.tril(a, k))
                check(ft.triu(t, diagonal=k), np.triu(a, k))
    a = random_array(rng, (4, 5), np_dtype)
    for k in (-1, 0, 2):
        t, a2 = make(a, ft_dtype)
        base = t
        v = base.t()
        r = v.tril_(k)
        assert r is v
        check(base, np.tril(a2.T, k).T)
        t, a2 = make(a, ft_dtype)
        t.triu_(k)
        check(t, np.triu(a2, k))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        zeros(3).tril()
    big = rng.standard_normal((3, 150, 150)).astype(np.float32)
    check(ft.tensor(big).triu(1), np.triu(big, 1))


@pytest.mark.parametrize("ft_dtype,np_dtype", ALL_DTYPES)
def test_diag_diag_embed(rng, ft_dtype, np_dtype):
    for shape in [(4,), (0,), (3, 4), (4, 3)]:
        for _, a, t in variants(rng, shape, ft_dtype, np_dtype):
            for k in range(-3, 4):
                check(t.diag(k), np.diag(a, k), ft_dtype)
                check(ft.diag(t, k), np.diag(a, k))
    for shape in [(3,), (2, 3), (2, 2, 3)]:
        for _, a, t in variants(rng, shape, ft_dtype, np_dtype):
            for off in (-1, 0, 2):
                for d1, d2 in [(-2, -1), (0, -1), (-1, 0), (0, 1)]:
                    got = t.diag_embed(off, d1, d2)
                    n = a.shape[-1] + abs(off)
                    nd = a.ndim + 1
                    p1, p2 = d1 % nd, d2 % nd
                    # expected: batch of diag matrices, then move the two new dims into place
                    exp = np.zeros(a.shape[:-1] + (n, n), dtype=a.dtype)
                    for idx in np.ndindex(a.shape[:-1]):
                        exp[idx] = np.diag(a[idx], off)
                    exp = np.moveaxis(exp, (-2, -1), (p1, p2))
                    check(got, exp, ft_dtype)
                    check(ft.diag_embed(t, off, d1, d2), exp)
    with pytest.raises(RuntimeError, match="1D or 2D"):
        zeros(2, 2, 2).diag()
    with pytest.raises(RuntimeError, match="cannot be identical"):
        zeros(3).diag_embed(0, 0, 0)


def test_in_place_view_ops_and_ravel():
    a = np.arange(6).reshape(2, 3)
    x = ft.tensor(a)
    ptr = x.data_ptr()
    assert x.t_() is x
    check(x, a.T)
    x.unsqueeze_(1)
    assert x.shape == (3, 1, 2)
    x.squeeze_()
    assert x.shape == (3, 2)
    x.transpose_(0, 1)
    check(x, a)
    x.swapaxes_(0, 1)
    x.swapdims_(0, 1)
    x.as_strided_((3,), (2,), 0)
    check(x, np.array([0, 2, 4]))
    assert x.data_ptr() == ptr
    y = ft.tensor(a).t()
    check(y.ravel(), a.T.ravel())
    check(ft.ravel(ft.tensor(a)), a.ravel())
    z = ft.tensor(a)
    assert z.ravel().data_ptr() == z.data_ptr()


def test_contains():
    x = ft.tensor([[1, 2], [3, 4]])
    assert 3 in x and 7 not in x
    assert ft.tensor(2) in x and 2.0 in x
    assert ft.tensor([3, 4]) in x
    with pytest.raises(RuntimeError, match="__contains__"):
        _ = "a" in x


def test_cat_stack_sort_of_empty_views_with_offsets():
    # An empty view can carry a storage offset past its (empty) storage.
    y = ft.zeros(0, 3, 4, 4)
    a = y.narrow(1, 1, 1)[:, ::2]
    assert ft.stack([a, a], -1).shape == (0, 1, 4, 4, 2)
    assert ft.cat([a, a], 1).shape == (0, 2, 4, 4)
    assert ft.sort(a, 0).values.shape == (0, 1, 4, 4)
