"""Autograd of indexing, gather/scatter, joining and rearranging ops: float64 gradchecks
(non-contiguous inputs, negative dims, repeated indices, masks), gradgradchecks, and
in-place / __setitem__ history rebasing."""

import numpy as np
import pytest

import ferrotorch as ft
from ferrotorch.autograd import gradcheck, gradgradcheck


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def leaf(a, dtype=ft.float64):
    return ft.tensor(np.asarray(a), dtype=dtype, requires_grad=True)


def rand(rng, *shape):
    return leaf(rng.standard_normal(shape))


def idx(v):
    return ft.tensor(np.asarray(v), dtype=ft.int64)


def check(f, *inputs):
    assert gradcheck(f, inputs)


# ---------------------------------------------------------------------------- __getitem__


def test_getitem_basic(rng):
    x = rand(rng, 2, 3, 4)
    check(lambda t: t[:, ::2, 1:].sin(), x)
    check(lambda t: t[1], x)
    check(lambda t: t[-1, None, ..., 2], x)
    check(lambda t: t[..., 1:3], x)
    check(lambda t: t.transpose(0, 2)[1:, :, 0] * 2, x)
    y = x[0, 1:]
    assert y.grad_fn is not None
    y.backward(ft.ones_like(y))
    g = np.zeros((2, 3, 4))
    g[0, 1:] = 1
    np.testing.assert_allclose(x.grad.numpy(), g)


def test_getitem_advanced_accumulates(rng):
    x = rand(rng, 4, 3)
    i = idx([0, 2, 0, 0])
    y = x[i]
    assert y.grad_fn.name() == "IndexBackward0"
    y.backward(ft.ones_like(y))
    g = np.zeros((4, 3))
    g[0] = 3
    g[2] = 1
    np.testing.assert_allclose(x.grad.numpy(), g)
    check(lambda t: t[i], x)
    check(lambda t: t[:, idx([[2, 2], [0, 1]])], x)
    check(lambda t: t[idx([1, 3]), idx([-1, 0])], x)
    check(lambda t: t.t()[idx([2, 0, 2])], x)


def test_getitem_mask(rng):
    x = rand(rng, 3, 4)
    m = ft.tensor(rng.standard_normal((3, 4)) > 0)
    check(lambda t: t[m], x)
    m1 = ft.tensor(np.array([True, False, True]))
    check(lambda t: t[m1, 1:], x)
    x[m].backward(ft.ones(int(m.numpy().sum()), dtype=ft.float64))
    np.testing.assert_allclose(x.grad.numpy(), m.numpy().astype(float))


def test_getitem_gradgrad(rng):
    x = rand(rng, 3, 4)
    assert gradgradcheck(lambda t: t[1:, ::2] ** 2, (x,))
    assert gradgradcheck(lambda t: t[idx([0, 2, 2])] ** 2, (x,))


# ---------------------------------------------------------------------------- __setitem__


def test_setitem_non_leaf_flows_to_base_and_value():
    x = leaf([1.0, 2.0, 3.0])
    v = leaf([10.0])
    y = x * 1
    y[1:2] = v * 2
    y.backward(ft.tensor([1.0, 1.0, 1.0], dtype=ft.float64))
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 0.0, 1.0])
    np.testing.assert_allclose(v.grad.numpy(), [2.0])


def test_setitem_advanced_and_mask(rng):
    x = rand(rng, 4, 3)
    v = rand(rng, 2, 3)

    def f(t, w):
        y = t * 1
        y[idx([3, 1])] = w * 2
        return y

    check(f, x, v)

    def g(t):
        y = t * 2
        y[y > 1.5] = 0.0
        return y

    check(g, x)


def test_setitem_leaf_errors():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x[0] = 3.0


def test_index_put(rng):
    x = rand(rng, 4, 3)
    v = rand(rng, 2, 3)
    w = rand(rng, 3)
    check(lambda t, u: t.index_put((idx([0, 2]),), u), x, v)
    check(lambda t, u: t.index_put((idx([0, 0, 2]),), u, accumulate=True), x, w)
    check(lambda t, u: t.index_put((idx([1, 3]), idx([2, 0])), u[0, :2]), x, v)


# ---------------------------------------------------------------------------- gather family


def test_index_select(rng):
    x = rand(rng, 3, 4)
    i = idx([2, 0, 2])
    check(lambda t: t.index_select(1, i), x)
    check(lambda t: t.t().index_select(-1, i), x)
    check(lambda t: ft.index_select(t, 0, i), x)
    assert gradgradcheck(lambda t: t.index_select(0, i) ** 2, (x,))


@pytest.mark.parametrize("index_dtype", [ft.int64, ft.int32])
def test_index_select_backward_index_adds(rng, index_dtype):
    """index_select, x[i] and x[:, i] backward: the gradient is index-added into zeros, so
    repeated and negative indices accumulate (checked against NumPy's np.add.at)."""
    x_np = rng.standard_normal((5, 6, 3))
    pos = [4, -1, 0, 4, 2, -5]
    g_np = rng.standard_normal((5, 6, 3))
    for dim in (0, 1, 2):
        i = ft.tensor([p % x_np.shape[dim] for p in pos[: x_np.shape[dim] + 1]],
                      dtype=index_dtype)
        sel = [slice(None)] * 3
        sel[dim] = i.numpy()
        g = ft.tensor(np.ascontiguousarray(g_np[tuple(sel)]))
        expect = np.zeros_like(x_np)
        exp_view = np.moveaxis(expect, dim, 0)
        np.add.at(exp_view, i.numpy(), np.moveaxis(g.numpy(), dim, 0))
        for f in (lambda t, d=dim, i=i: t.index_select(d, i),
                  lambda t, d=dim, i=i: t[(slice(None),) * d + (i,)]):
            x = leaf(x_np)
            y = f(x)
            np.testing.assert_array_equal(y.detach().numpy(), x_np[tuple(sel)])
            y.backward(g)
            np.testing.assert_allclose(x.grad.numpy(), expect, rtol=1e-14, atol=1e-14)
    x = leaf(x_np)
    assert x[idx([1, -1])].grad_fn.name() == "IndexBackward0"
    assert x.index_select(0, idx([1])).grad_fn.name() == "IndexSelectBackward0"
    # Negative indices through __getitem__, non-contiguous input, double backward.
    check(lambda t: t[idx([-1, 0, -1])], x)
    check(lambda t: t.transpose(0, 2)[:, idx([2, 2, -6])], x)
    assert gradgradcheck(lambda t: t[:, idx([1, 1, 0])] ** 2, (x,))
    # A 0-d index keeps the dim (size 1); an empty index gives a zero gradient.
    check(lambda t: t.index_select(1, ft.tensor(3)), x)
    y = x.index_select(2, idx([]))
    assert y.shape == (5, 6, 0)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 0.0)


def test_gather_backward_scatter_adds(rng):
    x_np = rng.standard_normal((4, 5))
    i_np = rng.integers(0, 5, (3, 7))
    x = leaf(x_np)
    y = x.gather(1, ft.tensor(i_np))
    g_np = rng.standard_normal((3, 7))
    y.backward(ft.tensor(g_np))
    expect = np.zeros_like(x_np)
    for r in range(3):
        np.add.at(expect[r], i_np[r], g_np[r])
    np.testing.assert_allclose(x.grad.numpy(), expect, rtol=1e-14)
    assert y.grad_fn.name() == "GatherBackward0"
    assert gradgradcheck(lambda t: t.gather(0, idx([[3, 0], [3, 3]])) ** 2, (x,))


def test_gather_and_take(rng):
    x = rand(rng, 3, 4)
    i = idx([[0, 0, 3], [1, 1, 1]])
    check(lambda t: t.gather(1, i), x)
    check(lambda t: t.t().gather(-2, i), x)
    check(lambda t: t.take(idx([0, 11, -1, 0])), x)
    check(lambda t: t.take_along_dim(idx([[0], [3], [3]]), 1), x)
    check(lambda t: t.take_along_dim(idx([5, 5, 0])), x)
    y = x.gather(0, idx([[0, 0, 0, 0], [0, 0, 0, 0]]))
    y.backward(ft.ones_like(y))
    np.testing.assert_allclose(x.grad.numpy()[0], [2.0] * 4)
    np.testing.assert_allclose(x.grad.numpy()[1:], 0.0)


def test_scatter_family(rng):
    x = rand(rng, 3, 4)
    src = rand(rng, 3, 4)
    i = idx([[0, 1], [2, 0]])
    check(lambda t, s: t.scatter(1, i, s), x, src)
    check(lambda t, s: t.scatter_add(1, i, s), x, src)
    check(lambda t, s: t.t().scatter_add(0, i, s.t()), x, src)
    check(lambda t: t.scatter(0, i, 1.5), x)

    def inplace(t, s):
        y = t * 1
        y.scatter_add_(-1, i, s)
        return y

    check(inplace, x, src)


def test_index_add_copy_fill(rng):
    x = rand(rng, 4, 3)
    s = rand(rng, 3, 3)
    i = idx([1, 3, 1])
    check(lambda t, u: t.index_add(0, i, u), x, s)
    check(lambda t, u: t.index_add(0, i, u, alpha=-2.0), x, s)
    j = idx([2, 0, 1])
    check(lambda t, u: t.index_copy(0, j, u), x, s)
    check(lambda t: t.index_fill(1, idx([0, 2]), -1.0), x)

    def inplace(t, u):
        y = t * 1
        y.index_add_(0, i, u)
        y.index_fill_(1, idx([-1]), 0.0)
        return y

    check(inplace, x, s)


def test_masked_ops(rng):
    x = rand(rng, 3, 4)
    m = ft.tensor(rng.standard_normal((3, 4)) > 0)
    mb = ft.tensor(np.array([True, False, False, True]))
    check(lambda t: t.masked_fill(m, 2.0), x)
    check(lambda t: t.masked_fill(mb, 2.0), x)
    check(lambda t: t.masked_select(m), x)
    check(lambda t: t.t().masked_select(m.t()), x)
    check(lambda t: t[0].masked_select(mb.reshape(1, 4).expand(2, 4)), x)
    s = rand(rng, 12)
    check(lambda t, u: t.masked_scatter(m, u), x, s)

    def inplace(t):
        y = t * 1
        y.masked_fill_(m, 0.0)
        return y

    check(inplace, x)


def test_where(rng):
    x = rand(rng, 3, 4)
    y = rand(rng, 4)
    c = ft.tensor(rng.standard_normal((3, 4)) > 0)
    check(lambda a, b: ft.where(c, a, b), x, y)
    check(lambda a: ft.where(c, a, 0.5), x)
    check(lambda b: ft.where(c, 2.0, b), y)
    check(lambda a, b: a.where(c, b), x, y)
    assert gradgradcheck(lambda a, b: ft.where(c, a * a, b), (x, y))


# ---------------------------------------------------------------------------- joining


def test_cat_stack(rng):
    a = rand(rng, 2, 3)
    b = rand(rng, 2, 1)
    e = leaf(np.zeros(0))
    check(lambda p, q: ft.cat([p, q], -1), a, b)
    check(lambda p, q: ft.cat([p.t(), q.t(), e.reshape(0, 2)]), a, b)
    check(lambda p, q: ft.cat([p, e], 0), a, e)
    check(lambda p, q: ft.stack([p, q * 2], 1), a, a)
    check(lambda p, q: ft.hstack([p, q]), a, b)
    check(lambda p, q: ft.vstack([p, q.t()[:, :3].reshape(1, 2)[:, :1].expand(1, 3)]), a, b)
    check(lambda p: ft.dstack([p, p]), a)
    assert gradgradcheck(lambda p, q: ft.cat([p * p, q], 1), (a, b))


def test_split_chunk_unbind(rng):
    x = rand(rng, 5, 3)
    check(lambda t: ft.cat([p * (k + 1) for k, p in enumerate(t.split(2))]), x)
    check(lambda t: ft.cat([p * (k + 1) for k, p in enumerate(t.split([1, 2], -1))], -1), x)
    check(lambda t: ft.stack([p * (k + 1) for k, p in enumerate(t.chunk(3, 1))]), x)
    check(lambda t: ft.stack([p * (k + 1) for k, p in enumerate(t.unbind(1))]), x)
    check(lambda t: ft.cat([p * (k + 1) for k, p in enumerate(t.tensor_split(3))]), x)
    a, b = x.split(3)
    ft.cat([a, 2 * b]).backward(ft.ones(5, 3, dtype=ft.float64))
    np.testing.assert_allclose(x.grad.numpy()[:, 0], [1, 1, 1, 2, 2])


# ---------------------------------------------------------------------------- rearranging


def test_flip_roll_repeat(rng):
    x = rand(rng, 2, 3)
    check(lambda t: t.flip(0, -1), x)
    check(lambda t: t.t().flip(0), x)
    check(lambda t: t.fliplr(), x)
    check(lambda t: t.roll(1, -1), x)
    check(lambda t: t.roll(4), x)
    check(lambda t: t.roll((1, 2), (0, 1)), x)
    assert gradgradcheck(lambda t: t.flip(0).roll(-3) ** 2, (x,))
    check(lambda t: t.repeat(2, 1, 2), x)
    check(lambda t: t.tile((2,)), x)
    check(lambda t: t.repeat_interleave(2, dim=0), x)
    check(lambda t: t.repeat_interleave(idx([1, 0, 3]), dim=-1), x)
    check(lambda t: t.repeat_interleave(3), x)
    y = x.repeat(3, 1)
    y.backward(ft.ones_like(y))
    np.testing.assert_allclose(x.grad.numpy(), 3.0)


def test_triangles_and_diagonals(rng):
    x = rand(rng, 3, 4)
    v = rand(rng, 3)
    check(lambda t: t.tril(), x)
    check(lambda t: t.triu(1), x)
    check(lambda t: t.t().tril(-1), x)
    check(lambda t: t.diag(), x)
    check(lambda t: t.diag(1), x)
    check(lambda t: t.diag(-1), v)
    check(lambda t: t.diagonal(0, -1, 0), x)
    check(lambda t: t.diagonal(1), x)
    check(lambda t: t.diag_embed(), v)
    check(lambda t: t.diag_embed(1, 0, 1), x)

    def tril_inplace(t):
        y = t * 1
        y.tril_()
        return y

    check(tril_inplace, x)


def test_view_ops(rng):
    x = rand(rng, 2, 3, 4)
    check(lambda t: t.movedim(0, -1) * 2, x)
    check(lambda t: t.moveaxis((0, 1), (2, 0)).sin(), x)
    check(lambda t: t.T.exp(), x)
    check(lambda t: t.mT * 2, x)
    check(lambda t: t.swapaxes(0, 1) * 2, x)
    check(lambda t: t.unflatten(-1, (2, 2)) * 2, x)
    check(lambda t: t.unfold(2, 2, 1), x)
    check(lambda t: t.unfold(-2, 2, 2), x)
    check(lambda t: t.as_strided((3, 3), (1, 2), 1), x)
    check(lambda t: t.narrow(-1, 1, 2), x)
    y = x.unfold(2, 2, 1)
    y.backward(ft.ones_like(y))
    np.testing.assert_allclose(x.grad.numpy()[0, 0], [1, 2, 2, 1])


def test_no_grad_and_integer_outputs(rng):
    x = rand(rng, 3, 4)
    with ft.no_grad():
        assert not x[idx([0])].requires_grad
        assert not x.flip(0).requires_grad
    n = ft.tensor(np.arange(6).reshape(2, 3))
    assert not n[idx([1])].requires_grad
    assert x.argmax(1).grad_fn is None


def test_meshgrid(rng):
    a = rand(rng, 3)
    b = rand(rng, 2)
    check(
        lambda p, q: sum(g * (k + 1) for k, g in enumerate(ft.meshgrid(p, q, indexing="ij"))), a, b
    )
    check(
        lambda p, q: sum(g * (k + 1) for k, g in enumerate(ft.meshgrid(p, q, indexing="xy"))), a, b
    )
