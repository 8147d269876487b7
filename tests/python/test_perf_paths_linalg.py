"""Fast paths of the matrix products: matrix-vector kernels (row-major, transposed and
strided matrices, serial and parallel splits), their dispatch from matmul/mm/mv/dot/addmv and
batched products with one output row or column, and the single-node autograd of mv/dot and
`x ** 2`. Everything is compared with NumPy."""

import numpy as np
import pytest

import ferrotorch as torch
from ferrotorch.autograd import gradcheck, gradgradcheck

rng = np.random.default_rng(77)

TOL = {
    np.float32: {"rtol": 2e-4, "atol": 2e-4},
    np.float64: {"rtol": 1e-10, "atol": 1e-10},
}


def rand(*shape, dtype=np.float64):
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-5, 6, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def T(a):
    return torch.from_numpy(a)


def check(t, want, scale=1.0):
    got = t.numpy()
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    if np.issubdtype(want.dtype, np.integer):
        np.testing.assert_array_equal(got, want)
        return
    tol = dict(TOL[want.dtype.type])
    tol["atol"] *= scale
    np.testing.assert_allclose(got, want, **tol)


def view(a, kind):
    """`a`'s values as a contiguous, transposed-storage or stepped (non-contiguous) array."""
    if kind == "contig":
        return np.ascontiguousarray(a)
    if kind == "transposed":  # same values, column-major storage
        return np.asfortranarray(a) if a.ndim == 2 else a
    if kind == "stepped":
        big = np.zeros(tuple(2 * s for s in a.shape), dtype=a.dtype)
        sl = tuple(slice(None, None, 2) for _ in a.shape)
        big[sl] = a
        return big[sl]
    raise ValueError(kind)


KINDS = ["contig", "transposed", "stepped"]

# (m, k): small (serial) and large enough for every parallel split of the kernels:
# rows split, few long rows (k split), transposed matrix split by columns or along k.
MV_SIZES = [(1, 1), (1, 7), (7, 1), (5, 33), (40, 17), (3, 70000), (300, 300), (1200, 80),
            (100, 1000), (2, 40000)]


@pytest.mark.parametrize("m,k", MV_SIZES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mv_all_layouts(m, k, dtype):
    a0, x0 = rand(m, k, dtype=dtype), rand(k, dtype=dtype)
    want = a0.astype(np.float64) @ x0.astype(np.float64)
    scale = np.sqrt(k)
    for ka in KINDS:
        for kx in ["contig", "stepped"]:
            a, x = view(a0, ka), view(x0, kx)
            check(T(a) @ T(x), want.astype(dtype), scale)
            check(torch.mv(T(a), T(x)), want.astype(dtype), scale)
    # The transpose of a row-major matrix: the vector-matrix product of the backward pass.
    at = rand(k, m, dtype=dtype)
    want_t = at.T.astype(np.float64) @ x0.astype(np.float64)
    check(T(at).t() @ T(x0), want_t.astype(dtype), scale)
    check(T(x0) @ T(at), want_t.astype(dtype), scale)


@pytest.mark.parametrize("m,k", [(1, 5), (4, 9), (700, 120), (60, 2000)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_single_row_or_column_products(m, k, dtype):
    """2-d products with one output column (n == 1) or one output row (m == 1)."""
    a0, b0 = rand(m, k, dtype=dtype), rand(k, 1, dtype=dtype)
    scale = np.sqrt(k)
    for ka in KINDS:
        for kb in KINDS:
            a, b = view(a0, ka), view(b0, kb)
            check(T(a) @ T(b), a0 @ b0, scale)
            check(T(b).t() @ T(a).t(), (a0 @ b0).T, scale)  # one row
            check(torch.mm(T(b.T), T(a.T)), b0.T @ a0.T, scale)
    r0 = rand(1, k, dtype=dtype)
    check(T(r0) @ T(a0.T), r0 @ a0.T, scale)
    check(T(r0) @ T(np.asfortranarray(a0.T)), r0 @ a0.T, scale)
    check(T(r0)[:, ::1] @ T(view(a0, "stepped")).t(), r0 @ a0.T, scale)


@pytest.mark.parametrize("n", [0, 1, 5, 100000])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_dot_sizes_and_strides(n, dtype):
    u, w = rand(n, dtype=dtype), rand(n, dtype=dtype)
    want = np.dot(u.astype(np.float64), w.astype(np.float64))
    scale = np.sqrt(max(n, 1))
    for ku in ["contig", "stepped"]:
        for kw in ["contig", "stepped"]:
            a, b = view(u, ku), view(w, kw)
            got = torch.dot(T(a), T(b))
            assert got.shape == ()
            if dtype == np.int64:
                assert got.item() == int(np.dot(u, w))
            else:
                check(got, np.asarray(want, dtype=dtype), scale)
            if n:
                check(T(a) @ T(b), np.asarray(np.dot(u, w), dtype=dtype), scale)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int16, np.int8, np.uint8])
def test_matrix_vector_integer_dtypes(dtype):
    a, x = rand(6, 5, dtype=dtype), rand(5, dtype=dtype)
    want = (a.astype(np.int64) @ x.astype(np.int64)).astype(dtype)  # wraps like PyTorch
    check(T(a) @ T(x), want)
    check(torch.mv(T(a.T.copy().T), T(x)), want)
    check(T(x) @ T(a.T), want)
    check(T(a) @ T(x[:, None]), want[:, None])


def test_matrix_vector_half_dtypes():
    a, x = rand(40, 30, dtype=np.float32), rand(30, dtype=np.float32)
    want = a @ x
    for dt in [torch.float16, torch.bfloat16]:
        r = T(a).to(dt) @ T(x).to(dt)
        assert r.dtype == dt
        np.testing.assert_allclose(r.float().numpy(), want, rtol=5e-2, atol=0.3)
        r = T(x).to(dt) @ T(a.T).to(dt)
        np.testing.assert_allclose(r.float().numpy(), want, rtol=5e-2, atol=0.3)
        r = torch.mv(T(a).to(dt).t().t(), T(x).to(dt))
        np.testing.assert_allclose(r.float().numpy(), want, rtol=5e-2, atol=0.3)


def test_empty_matrix_vector():
    check(T(rand(0, 3)) @ T(rand(3)), np.zeros(0))
    check(T(rand(3, 0)) @ T(rand(0)), np.zeros(3))
    check(T(rand(0)) @ T(rand(0, 4)), np.zeros(4))
    check(T(rand(2, 0, 3)) @ T(rand(3)), np.zeros((2, 0)))
    check(T(rand(2, 4, 0)) @ T(rand(0, 1)), np.zeros((2, 4, 1)))
    check(torch.mv(T(rand(5, 0, dtype=np.float32)), T(rand(0, dtype=np.float32))),
          np.zeros(5, dtype=np.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batched_matrix_vector_broadcasting(dtype):
    x = rand(3, 1, 4, 5, dtype=dtype)
    v = rand(5, dtype=dtype)
    check(T(x) @ T(v), x @ v, 3)
    check(T(v[:4]) @ T(x), v[:4] @ x, 3)
    c = rand(2, 5, 1, dtype=dtype)
    check(T(x) @ T(c), np.matmul(x, c), 3)
    r = rand(2, 1, 4, dtype=dtype)
    check(T(r) @ T(x), np.matmul(r, x), 3)
    # Transposed batch members, broadcast (stride-0) vector operand, big batch (parallel).
    xt = np.swapaxes(rand(6, 5, 4, dtype=dtype), 1, 2)
    cb = np.broadcast_to(rand(5, 1, dtype=dtype), (6, 5, 1))
    check(T(xt) @ T(cb), np.matmul(xt, cb), 3)
    big = rand(300, 50, 40, dtype=dtype)
    w = rand(40, 1, dtype=dtype)
    check(T(big) @ T(w), big @ w, 10)
    bb = rand(300, 50, 1, dtype=dtype)
    check(T(big).transpose(1, 2) @ T(bb), np.matmul(np.swapaxes(big, 1, 2), bb), 10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_addmv_addmm_scales_on_vector_paths(dtype):
    a, x, c = rand(300, 400, dtype=dtype), rand(400, dtype=dtype), rand(300, dtype=dtype)
    scale = 20
    check(torch.addmv(T(c), T(a), T(x), beta=0.5, alpha=2.0), 0.5 * c + 2.0 * (a @ x), scale)
    check(torch.addmv(T(c), T(a.T.copy()).t(), T(x), beta=0.0, alpha=-1.0), -(a @ x), scale)
    check(torch.addmv(T(c), T(a), T(x)), c + a @ x, scale)
    c2 = rand(300, 1, dtype=dtype)
    check(torch.addmm(T(c2), T(a), T(x[:, None]), beta=2.0, alpha=3.0),
          2.0 * c2 + 3.0 * (a @ x[:, None]), scale)
    r = rand(1, 300, dtype=dtype)
    check(torch.addmm(T(rand(1, 400, dtype=dtype)) * 0, T(r), T(a), alpha=0.5), 0.5 * (r @ a), scale)


def test_mv_dot_autograd_single_node_and_values():
    an, xn, gn = rand(7, 5), rand(5), rand(7)
    a = torch.tensor(an, requires_grad=True)
    x = torch.tensor(xn, requires_grad=True)
    y = a @ x
    assert y.grad_fn.name() == "MvBackward0"
    assert torch.mv(a, x).grad_fn.name() == "MvBackward0"
    y.backward(torch.tensor(gn))
    np.testing.assert_allclose(a.grad.numpy(), np.outer(gn, xn), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), an.T @ gn, rtol=1e-12)
    u = torch.tensor(xn, requires_grad=True)
    w = torch.tensor(rand(5))
    d = u @ w
    assert d.grad_fn.name() == "DotBackward0"
    (d * 3).backward()
    np.testing.assert_allclose(u.grad.numpy(), 3 * w.numpy(), rtol=1e-12)
    assert w.grad is None
    # Only the matrix needs a gradient / only the vector does.
    a2 = torch.tensor(an, requires_grad=True)
    (a2 @ torch.tensor(xn)).sum().backward()
    np.testing.assert_allclose(a2.grad.numpy(), np.outer(np.ones(7), xn), rtol=1e-12)
    x2 = torch.tensor(xn, requires_grad=True)
    (torch.tensor(an) @ x2).sum().backward()
    np.testing.assert_allclose(x2.grad.numpy(), an.sum(0), rtol=1e-12)


def test_mv_dot_gradcheck_noncontiguous():
    def leaf(a):
        return torch.tensor(a, requires_grad=True)

    a, x = leaf(rand(5, 4)), leaf(rand(10))
    assert gradcheck(lambda m, v: m.t().mv(v[::2]), (a, x))
    assert gradcheck(lambda m, v: m @ v, (leaf(rand(3, 4)), leaf(rand(4))))
    assert gradcheck(lambda m, v: v @ m, (leaf(rand(3, 4)), leaf(rand(3))))
    assert gradcheck(lambda m, v: (m @ v[:, None]).sum(1), (leaf(rand(3, 4)), leaf(rand(4))))
    assert gradcheck(lambda m, v: v[None, :] @ m.t(), (leaf(rand(3, 4)), leaf(rand(4))))
    assert gradcheck(lambda u, v: u[::2].dot(v), (leaf(rand(6)), leaf(rand(3))))
    assert gradcheck(lambda b, v: b @ v, (leaf(rand(2, 3, 4)), leaf(rand(4))))
    assert gradcheck(lambda c, m, v: torch.addmv(c, m, v, beta=0.5, alpha=2.0),
                     (leaf(rand(3)), leaf(rand(3, 4)), leaf(rand(4))))
    assert gradgradcheck(lambda m, v: m.mv(v), (leaf(rand(3, 4)), leaf(rand(4))))
    assert gradgradcheck(lambda u, v: u.dot(v), (leaf(rand(4)), leaf(rand(4))))
    # Large enough for the parallel kernels in the backward pass (A^T g on a transposed view).
    an, xn = rand(400, 300), rand(300)
    a, x = leaf(an), leaf(xn)
    yn = rand(400)
    ((torch.tensor(yn) - a @ x) ** 2).sum().backward()
    r = yn - an @ xn
    np.testing.assert_allclose(x.grad.numpy(), -2 * an.T @ r, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(a.grad.numpy(), -2 * np.outer(r, xn), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_square_power_scalar(dtype):
    xn = rand(4, 3, dtype=dtype)
    x = T(xn)
    for e in [2, 2.0]:
        r = x ** e
        assert r.dtype == x.dtype
        np.testing.assert_allclose(r.numpy().astype(np.float64), xn.astype(np.float64) ** 2,
                                   rtol=1e-3 if dtype == np.float16 else 1e-6)
    xi = T(rand(4, dtype=np.int64))
    np.testing.assert_array_equal((xi ** 2).numpy(), xi.numpy() ** 2)
    assert (xi ** 2).dtype == torch.int64
    assert (xi ** 2.0).dtype == torch.float32
    x = torch.tensor(rand(5), requires_grad=True)
    y = x ** 2
    assert y.grad_fn.name() == "PowBackward0"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy(), rtol=1e-12)
    assert gradgradcheck(lambda t: t ** 2, (torch.tensor(rand(3), requires_grad=True),))
    assert gradcheck(lambda t: t[::2] ** 2.0, (torch.tensor(rand(6), requires_grad=True),))
    assert gradcheck(lambda t: t ** 3, (torch.tensor(rand(3), requires_grad=True),))
    # 2 ** x is not the square.
    np.testing.assert_allclose((2 ** T(xn.astype(np.float64))).numpy(), 2.0 ** xn.astype(np.float64))


def test_sub_backward_only_needed_side():
    a = torch.tensor(rand(4), requires_grad=True)
    b = torch.tensor(rand(4))
    (b - a).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), -np.ones(4))
    a.grad = None
    (a - b).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.ones(4))
    assert b.grad is None
    assert gradcheck(lambda u, v: u - v, (torch.tensor(rand(3), requires_grad=True),
                                          torch.tensor(rand(2, 3), requires_grad=True)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("threads", [1, 2])
def test_addmm_large_products_every_input_shape(dtype, threads):
    # Products big enough for the threaded gemm form the product first and add the input
    # after; the one-thread run reads the destination inside gemm. Both must agree with NumPy.
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        m, k, n = 64, 90, 70
        a, b = rand(m, k, dtype=dtype), rand(k, n, dtype=dtype)
        scales = (2, 3) if dtype == np.int64 else (0.5, -2.0)
        beta, alpha = scales
        for inp in (rand(n, dtype=dtype), rand(m, 1, dtype=dtype), rand(m, n, dtype=dtype)):
            want = beta * inp + alpha * (a @ b)
            check(torch.addmm(T(inp), T(a), T(b), beta=beta, alpha=alpha), want, scale=20)
            # Transposed operands (strided gemm reads) and the default scales.
            got = torch.addmm(T(inp), T(a.T.copy()).t(), T(b.T.copy()).t())
            check(got, inp + a @ b, scale=20)
        batch1, batch2 = rand(3, m, k, dtype=dtype), rand(3, k, n, dtype=dtype)
        bi = rand(m, n, dtype=dtype)
        check(torch.baddbmm(T(bi), T(batch1), T(batch2), beta=beta, alpha=alpha),
              beta * bi + alpha * np.matmul(batch1, batch2), scale=20)
    finally:
        torch.set_num_threads(old)
