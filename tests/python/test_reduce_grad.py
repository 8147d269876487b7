"""Autograd of reductions, scans, softmax and sort-like ops: float64 gradchecks (including
non-contiguous inputs, keepdim, negative dims) and gradgradchecks."""

import numpy as np
import pytest

import ferrotorch as ft
from ferrotorch.autograd import gradcheck, gradgradcheck


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def leaf(a):
    return ft.tensor(np.asarray(a, dtype=np.float64), requires_grad=True)


def rand(rng, *shape):
    return leaf(rng.standard_normal(shape))


def distinct(rng, *shape):
    """Values far apart (no ties), so max/sort-like ops are differentiable."""
    n = int(np.prod(shape))
    return leaf((rng.permutation(n) + rng.uniform(0.1, 0.4, n)).reshape(shape))


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dims", [None, (0,), (-1,), (0, 2)])
def test_sum_mean(rng, dims, keepdim):
    x = rand(rng, 2, 3, 4)
    if dims is None:
        assert gradcheck(lambda t: t.sum(), (x,))
        assert gradcheck(lambda t: t.mean(), (x,))
        assert x.sum().grad_fn.name() == "SumBackward0"
    else:
        assert gradcheck(lambda t: t.sum(dims, keepdim=keepdim), (x,))
        assert gradcheck(lambda t: t.mean(dims, keepdim=keepdim), (x,))
        assert gradcheck(lambda t: t.transpose(0, 2).sum(dims, keepdim=keepdim), (x,))


def test_sum_mean_values_and_gradgrad(rng):
    x = rand(rng, 3, 4)
    x.sum(1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.ones((3, 4)))
    x.grad = None
    x.mean().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full((3, 4), 1 / 12))
    assert gradgradcheck(lambda t: (t.sum(0) ** 2).sum(), (x,))
    assert gradgradcheck(lambda t: (t.mean(-1, keepdim=True) ** 3), (x,))
    z = leaf(2.5)
    assert gradcheck(lambda t: t.sum(), (z,))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_log_softmax(rng, dim):
    x = rand(rng, 3, 4, 2)
    assert gradcheck(lambda t: t.softmax(dim), (x,))
    assert gradcheck(lambda t: t.log_softmax(dim), (x,))
    assert gradcheck(lambda t: t.transpose(0, 1).softmax(dim), (x,))
    assert gradgradcheck(lambda t: t.softmax(dim), (x,))
    assert gradgradcheck(lambda t: t.log_softmax(dim), (x,))
    f = ft.nn.functional
    assert gradcheck(lambda t: f.softmax(t, dim=dim), (x,))
    assert gradcheck(lambda t: f.log_softmax(t, dim=dim), (x,))


def test_softmax_grad_values(rng):
    a = rng.standard_normal((2, 5))
    x = leaf(a)
    w = rng.standard_normal((2, 5))
    (x.softmax(1) * ft.tensor(w)).sum().backward()
    s = np.exp(a) / np.exp(a).sum(1, keepdims=True)
    expect = s * (w - (w * s).sum(1, keepdims=True))
    np.testing.assert_allclose(x.grad.numpy(), expect, rtol=1e-10)


@pytest.mark.parametrize("keepdim", [False, True])
def test_logsumexp(rng, keepdim):
    x = rand(rng, 2, 3, 4)
    assert gradcheck(lambda t: t.logsumexp(1, keepdim=keepdim), (x,))
    assert gradcheck(lambda t: t.logsumexp((0, -1), keepdim=keepdim), (x,))
    assert gradcheck(lambda t: t.t().logsumexp(0), (rand(rng, 3, 4),))


@pytest.mark.parametrize("keepdim", [False, True])
def test_amax_amin_max_min(rng, keepdim):
    x = distinct(rng, 2, 3, 4)
    assert gradcheck(lambda t: t.amax(1, keepdim=keepdim), (x,))
    assert gradcheck(lambda t: t.amin((0, -1), keepdim=keepdim), (x,))
    assert gradcheck(lambda t: t.max(), (x,))
    assert gradcheck(lambda t: t.min(), (x,))
    assert gradcheck(lambda t: t.max(1, keepdim=keepdim)[0], (x,))
    assert gradcheck(lambda t: t.min(-1, keepdim=keepdim).values, (x,))
    assert gradcheck(lambda t: t.transpose(0, 2).max(0)[0], (x,))


def test_max_ties_split_evenly_and_max_dim_to_index():
    x = leaf([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])
    x.amax(1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0, 0.5, 0.5], [0.5, 0.5, 0]])
    x.grad = None
    x.max().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0, 0.5, 0.5], [0, 0, 0]])
    x.grad = None
    v, i = x.max(1)
    v.sum().backward()
    expect = np.zeros((2, 3))
    for r, c in enumerate(i.tolist()):
        expect[r, c] = 1.0
    np.testing.assert_allclose(x.grad.numpy(), expect)


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("correction", [0, 1])
def test_var_std(rng, keepdim, correction):
    x = rand(rng, 3, 4)
    assert gradcheck(lambda t: t.var(1, correction=correction, keepdim=keepdim), (x,))
    assert gradcheck(lambda t: t.std(0, correction=correction, keepdim=keepdim), (x,))
    assert gradcheck(lambda t: t.var(), (x,))
    assert gradcheck(lambda t: t.t().std(-1), (x,))


def test_prod_cumsum_cumprod(rng):
    x = leaf(rng.uniform(0.5, 1.5, (2, 3, 4)))
    assert gradcheck(lambda t: t.prod(), (x,))
    assert gradcheck(lambda t: t.prod(1), (x,))
    assert gradcheck(lambda t: t.prod(-1, keepdim=True), (x,))
    assert gradcheck(lambda t: t.cumsum(1), (x,))
    assert gradcheck(lambda t: t.cumsum(-1), (x,))
    assert gradcheck(lambda t: t.transpose(0, 2).cumprod(0), (x,))
    assert gradcheck(lambda t: t.cumprod(-1), (x,))


@pytest.mark.parametrize("p", [2, 1, 3, float("inf")])
def test_norm(rng, p):
    x = distinct(rng, 3, 4) - 6.0
    x = ft.tensor(x.detach().numpy(), requires_grad=True)
    assert gradcheck(lambda t: t.norm(p), (x,))
    assert gradcheck(lambda t: t.norm(p, dim=1), (x,))
    assert gradcheck(lambda t: t.norm(p, dim=0, keepdim=True), (x,))
    assert gradcheck(lambda t: ft.linalg.vector_norm(t, p, dim=-1), (x,))


def test_norm_at_zero_is_finite():
    x = leaf([0.0, 0.0])
    x.norm().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 0.0])


def test_sort_topk_kthvalue_median(rng):
    x = distinct(rng, 3, 5)
    assert gradcheck(lambda t: t.sort(1)[0], (x,))
    assert gradcheck(lambda t: t.sort(0, descending=True)[0], (x,))
    assert gradcheck(lambda t: t.t().sort(-1).values, (x,))
    assert gradcheck(lambda t: t.topk(2, 1)[0], (x,))
    assert gradcheck(lambda t: t.topk(2, 0, largest=False)[0], (x,))
    assert gradcheck(lambda t: t.kthvalue(2, 1)[0], (x,))
    assert gradcheck(lambda t: t.kthvalue(2, 0, keepdim=True)[0], (x,))
    assert gradcheck(lambda t: t.median(), (x,))
    assert gradcheck(lambda t: t.median(1)[0], (x,))
    assert gradcheck(lambda t: t.median(-1, keepdim=True)[0], (x,))


def test_sort_grad_values():
    x = leaf([3.0, 1.0, 2.0])
    v, _ = x.sort()
    (v * ft.tensor([1.0, 10.0, 100.0], dtype=ft.float64)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [100.0, 1.0, 10.0])


def test_no_grad_records_nothing(rng):
    x = rand(rng, 2, 3)
    with ft.no_grad():
        assert x.sum().grad_fn is None and x.softmax(0).grad_fn is None
    assert x.sum().grad_fn is not None
    assert x.max(1)[1].grad_fn is None


def test_cumsum_cumprod_backward_keep_small_terms_after_large_ones():
    # The reversed cumulative sum of the gradient is summed from the end: a formula through
    # the total (total - cumsum + g) loses 1.0 next to 1e8 in float32.
    y = ft.tensor([1.0, 2.0, 3.0], requires_grad=True)
    ft.cumsum(y, 0).backward(ft.tensor([1e8, 1.0, 1.0]))
    assert y.grad.tolist() == [1e8, 2.0, 1.0]  # 1e8 + 2 rounds to 1e8 in float32
    # cumprod divides that sum by the input: a tiny input must not amplify a rounding error.
    x = ft.tensor([1.0, 0.6065306663513184, 1.0, 0.3678794503211975, 0.1353352665901184,
                   1e-10], requires_grad=True)
    g = ft.tensor([0.0, 0.0, 1.264241099357605, 2.593994140625, 4.0, 0.0])
    ft.cumprod(x, 0).backward(g)
    xd = x.detach().double().numpy()
    want = [sum(g[j].item() * np.prod(xd[:j + 1]) / xd[i] for j in range(i, 6))
            for i in range(6)]
    np.testing.assert_allclose(x.grad.double().numpy(), want, rtol=1e-5, atol=1e-6)
    assert x.grad[-1].item() == 0.0
