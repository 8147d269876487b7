"""Autograd of matrix products and linalg functions: float64 gradchecks, including
broadcast batch dims and non-contiguous inputs, and gradgradchecks for matmul."""

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


@pytest.mark.parametrize(
    "sa,sb",
    [
        ((3,), (3,)),
        ((2, 3), (3,)),
        ((3,), (3, 2)),
        ((2, 3), (3, 4)),
        ((2, 2, 3), (3, 4)),
        ((3,), (2, 3, 2)),
        ((2, 1, 2, 3), (3, 3, 2)),
        ((2, 2, 3), (2, 3, 2)),
        ((2, 3), (2, 3, 2)),
    ],
)
def test_matmul_shapes(rng, sa, sb):
    a, b = rand(rng, *sa), rand(rng, *sb)
    assert gradcheck(lambda x, y: x @ y, (a, b))
    out = a @ b
    out.backward(ft.ones_like(out))
    assert a.grad.shape == a.shape and b.grad.shape == b.shape


def test_matmul_grad_values_and_gradgrad(rng):
    an, bn = rng.standard_normal((2, 3)), rng.standard_normal((3, 4))
    a, b = leaf(an), leaf(bn)
    g = rng.standard_normal((2, 4))
    (a @ b).backward(ft.tensor(g))
    np.testing.assert_allclose(a.grad.numpy(), g @ bn.T, rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), an.T @ g, rtol=1e-12)
    assert gradgradcheck(lambda x, y: x @ y, (a, b))
    assert gradgradcheck(lambda x, y: (x @ y).tanh(), (rand(rng, 2, 2, 3), rand(rng, 3, 2)))
    assert (a @ b).grad_fn.name() == "MmBackward0"


def test_noncontiguous_and_named_products(rng):
    a = rand(rng, 3, 2)
    b = rand(rng, 4, 3)
    assert gradcheck(lambda x, y: x.t() @ y.t(), (a, b))
    assert gradcheck(lambda x, y: x.t().mm(y.t()), (a, b))
    m1, m2 = rand(rng, 2, 3, 4), rand(rng, 2, 4, 2)
    assert gradcheck(lambda x, y: x.bmm(y), (m1, m2))
    assert gradcheck(lambda x, y: x.transpose(1, 2).bmm(y.transpose(1, 2)),
                     (rand(rng, 2, 4, 3), rand(rng, 2, 2, 4)))
    v = rand(rng, 3)
    assert gradcheck(lambda x, y: x.mv(y), (rand(rng, 2, 3), v))
    assert gradcheck(lambda x, y: x.dot(y), (v, rand(rng, 3)))
    assert gradcheck(lambda x, y: ft.outer(x, y), (v, rand(rng, 2)))
    c = rand(rng, 4)
    assert gradcheck(lambda i, x, y: ft.addmm(i, x, y, beta=0.5, alpha=2.0),
                     (c, rand(rng, 2, 3), rand(rng, 3, 4)))
    assert gradcheck(lambda x, y: ft.tensordot(x, y, dims=([1, 2], [0, 1])),
                     (rand(rng, 2, 3, 4), rand(rng, 3, 4, 2)))
    assert gradcheck(lambda x, y: ft.einsum("bij,bjk->bik", x, y), (m1, m2))
    assert gradcheck(lambda x, y: ft.einsum("ij,j->i", x, y), (rand(rng, 2, 3), v))


def test_einsum_repeated_subscripts(rng):
    assert gradcheck(lambda x: ft.einsum("ii->i", x), (rand(rng, 3, 3),))
    assert gradcheck(lambda x, y: ft.einsum("bii,bi->b", x, y), (rand(rng, 2, 3, 3), rand(rng, 2, 3)))


def test_trace(rng):
    assert gradcheck(lambda t: t.trace(), (rand(rng, 3, 4),))
    assert gradcheck(lambda t: t.t().trace(), (rand(rng, 3, 3),))


def spd(rng, n, batch=()):
    a = rng.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def test_inv_det_slogdet_solve(rng):
    a = leaf(spd(rng, 3) + rng.standard_normal((3, 3)) * 0.3)
    assert gradcheck(lambda t: ft.linalg.inv(t), (a,))
    assert gradcheck(lambda t: ft.linalg.inv(t.t()), (a,))
    assert gradcheck(lambda t: ft.linalg.det(t), (a,))
    assert gradcheck(lambda t: ft.linalg.slogdet(t)[1], (a,))
    ab = leaf(spd(rng, 3, (2,)))
    assert gradcheck(lambda t: ft.linalg.det(t), (ab,))
    b = rand(rng, 3, 2)
    assert gradcheck(lambda x, y: ft.linalg.solve(x, y), (a, b))
    assert gradcheck(lambda x, y: ft.linalg.solve(x, y), (a, rand(rng, 3)))
    assert gradcheck(lambda x, y: ft.linalg.solve(x, y, left=False), (a, rand(rng, 2, 3)))


def test_cholesky_eigh_qr_svd(rng):
    a = leaf(spd(rng, 3))
    assert gradcheck(lambda t: ft.linalg.cholesky(t @ t.mT), (a,))
    assert gradcheck(lambda t: ft.linalg.eigh(t + t.mT)[0], (a,))
    # eigenvectors up to sign: use a sign-invariant function
    assert gradcheck(lambda t: ft.linalg.eigh(t + t.mT)[1].abs(), (a,))
    m = rand(rng, 4, 3)
    assert gradcheck(lambda t: ft.linalg.qr(t)[0], (m,))
    assert gradcheck(lambda t: ft.linalg.qr(t)[1], (m,))
    assert gradcheck(lambda t: ft.linalg.svdvals(t), (m,))


def test_matrix_norm_and_lstsq(rng):
    m = rand(rng, 4, 3)
    assert gradcheck(lambda t: ft.linalg.matrix_norm(t), (m,))
    assert gradcheck(lambda t: ft.linalg.vector_norm(t), (m,))
    assert gradcheck(lambda x, y: ft.linalg.lstsq(x, y).solution, (m, rand(rng, 4, 2)))
