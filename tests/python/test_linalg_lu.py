"""Triangular solves, the LU family (lu_factor/lu/lu_unpack/lu_solve and their deprecated
torch.* forms), the *_ex variants, matrix_exp, cond, tensorinv/tensorsolve and linalg.vander:
values against NumPy (or identities where NumPy has no such function), float64 gradchecks
(gradgradchecks where the backward is itself differentiable) and PyTorch's errors."""

import numpy as np
import pytest

import ferrotorch as ft
from ferrotorch.autograd import gradcheck, gradgradcheck


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def t(a, dtype=np.float64, grad=False):
    return ft.tensor(np.asarray(a, dtype=dtype), requires_grad=grad)


def well_conditioned(rng, *shape):
    """Random matrices with a dominant diagonal (factorisations stay well conditioned)."""
    a = rng.standard_normal(shape)
    n = shape[-1]
    return a + 2 * n * np.eye(shape[-2], n)


def np_tri_solve(a, b, upper, left, unit):
    a = np.triu(a) if upper else np.tril(a)
    if unit:
        a = a - np.diag(np.diag(a)) + np.eye(a.shape[-1])
    return np.linalg.solve(a, b) if left else np.linalg.solve(a.T, b.T).T


# ------------------------------------------------------------------------ solve_triangular


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_solve_triangular_values(rng, upper, left, unit, dtype):
    a = well_conditioned(rng, 4, 4)
    b = rng.standard_normal((4, 3) if left else (3, 4))
    x = ft.linalg.solve_triangular(t(a, dtype), t(b, dtype), upper=upper, left=left,
                                   unitriangular=unit)
    assert x.dtype == (ft.float32 if dtype == np.float32 else ft.float64)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(x.numpy(), np_tri_solve(a, b, upper, left, unit), rtol=tol,
                               atol=tol)


def test_solve_triangular_broadcast_noncontiguous_and_empty(rng):
    a = well_conditioned(rng, 2, 1, 3, 3)
    b = rng.standard_normal((4, 3, 5))
    ta = t(a).transpose(-1, -2)  # non-contiguous: the upper triangle of a^T
    x = ft.linalg.solve_triangular(ta, t(b), upper=True)
    assert x.shape == (2, 4, 3, 5)
    ref = np.linalg.solve(np.triu(np.swapaxes(a, -1, -2)), b)
    np.testing.assert_allclose(x.numpy(), ref, rtol=1e-12, atol=1e-12)
    bs = t(rng.standard_normal((3, 8)))[:, ::2]  # stepped columns
    x = ft.linalg.solve_triangular(t(a[0, 0]), bs, upper=False)
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(np.tril(a[0, 0]), bs.numpy()),
                               rtol=1e-12)
    e = ft.linalg.solve_triangular(t(np.zeros((0, 3, 3))), t(np.zeros((0, 3, 2))), upper=True)
    assert e.shape == (0, 3, 2)
    e = ft.linalg.solve_triangular(t(a[0, 0]), t(np.zeros((3, 0))), upper=True)
    assert e.shape == (3, 0)


def test_solve_triangular_singular_gives_inf_not_error():
    a = t([[1.0, 2.0], [0.0, 0.0]])
    x = ft.linalg.solve_triangular(a, t([[1.0], [1.0]]), upper=True)
    assert not np.isfinite(x.numpy()).all()


def test_solve_triangular_errors():
    a = t(np.eye(3))
    with pytest.raises(RuntimeError, match="Incompatible shapes of A and B for the equation AX = B"):
        ft.linalg.solve_triangular(a, t(np.ones((2, 2))), upper=True)
    with pytest.raises(RuntimeError, match="XA = B"):
        ft.linalg.solve_triangular(a, t(np.ones((3, 2))), upper=True, left=False)
    with pytest.raises(RuntimeError, match="must have at least 2 dimensions"):
        ft.linalg.solve_triangular(a, t(np.ones(3)), upper=True)
    # torch 2.15 computes a mixed pair in A's dtype
    assert ft.linalg.solve_triangular(a, t(np.ones((3, 1)), np.float32), upper=True).dtype \
        == a.dtype
    with pytest.raises(RuntimeError, match="square"):
        ft.linalg.solve_triangular(t(np.ones((2, 3))), t(np.ones((2, 1))), upper=True)
    with pytest.raises(TypeError):
        ft.linalg.solve_triangular(a, t(np.ones((3, 1))))  # upper is required


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [True, False])
def test_solve_triangular_gradcheck(rng, upper, left, unit):
    a = t(well_conditioned(rng, 2, 3, 3), grad=True)
    b = t(rng.standard_normal((3, 2) if left else (2, 3)), grad=True)

    def f(a, b):
        return ft.linalg.solve_triangular(a, b, upper=upper, left=left, unitriangular=unit)

    assert gradcheck(f, (a, b))
    assert gradgradcheck(f, (a, b))
    x = f(a, b)
    assert x.grad_fn.name() == "LinalgSolveTriangularBackward0"
    x.sum().backward()
    # Only the triangle that was read gets a gradient.
    g = a.grad.numpy()
    outside = np.tril(g, -1) if upper else np.triu(g, 1)
    assert np.all(outside == 0)
    if unit:
        assert np.all(np.diagonal(g, 0, -2, -1) == 0)


# ------------------------------------------------------------------------ LU


def reconstruct(P, L, U):
    return P.numpy() @ L.numpy() @ U.numpy()


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 3), (2, 3, 3), (2, 1, 4, 2), (1, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lu_reconstructs(rng, shape, dtype):
    a = rng.standard_normal(shape)
    P, L, U = ft.linalg.lu(t(a, dtype))
    m, n = shape[-2:]
    k = min(m, n)
    assert P.shape == shape[:-2] + (m, m)
    assert L.shape == shape[:-2] + (m, k) and U.shape == shape[:-2] + (k, n)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(reconstruct(P, L, U), a, rtol=tol, atol=tol)
    Ln = L.numpy()
    np.testing.assert_array_equal(np.triu(Ln, 1), 0)
    np.testing.assert_array_equal(np.diagonal(Ln, 0, -2, -1), 1)
    np.testing.assert_array_equal(np.tril(U.numpy(), -1), 0)
    # Partial pivoting: every multiplier is at most 1 in magnitude.
    assert np.abs(Ln).max() <= 1 + 1e-6
    LU, piv = ft.linalg.lu_factor(t(a, dtype))
    assert piv.dtype == ft.int32 and piv.shape == shape[:-2] + (k,)
    assert piv.numpy().min() >= 1 and piv.numpy().max() <= m
    P2, L2, U2 = ft.lu_unpack(LU, piv)
    np.testing.assert_array_equal(P2.numpy(), P.numpy())
    np.testing.assert_allclose(L2.numpy(), Ln, rtol=tol, atol=tol)
    np.testing.assert_allclose(U2.numpy(), U.numpy(), rtol=tol, atol=tol)


def test_lu_pivots_match_lapack_convention():
    # Column 0's largest entry is in row 2: LAPACK swaps rows 1 and 3 (1-based) first.
    a = t([[1.0, 2.0, 3.0], [2.0, 1.0, 0.0], [4.0, 1.0, 1.0]])
    LU, piv = ft.linalg.lu_factor(a)
    assert piv.tolist()[0] == 3
    np.testing.assert_allclose(LU.numpy()[0], [4.0, 1.0, 1.0])


def test_lu_factor_singular_and_ex():
    a = t([[1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(RuntimeError, match=r"U\[2,2\] is zero"):
        ft.linalg.lu_factor(a)
    LU, piv, info = ft.linalg.lu_factor_ex(a)
    assert info.dtype == ft.int32 and info.item() == 2
    P, L, U = ft.linalg.lu(a)  # lu never raises
    np.testing.assert_allclose(reconstruct(P, L, U), a.numpy())
    batch = t(np.stack([np.eye(2), [[1.0, 2.0], [2.0, 4.0]]]))
    with pytest.raises(RuntimeError, match=r"\(Batch element 1\): U\[2,2\]"):
        ft.linalg.lu_factor(batch)
    with pytest.raises(RuntimeError, match="Batch element 1"):
        ft.linalg.lu_factor_ex(batch, check_errors=True)
    assert ft.linalg.lu_factor_ex(batch).info.tolist() == [0, 2]
    with pytest.raises(RuntimeError, match="without pivoting"):
        ft.linalg.lu(a, pivot=False)
    with pytest.raises(RuntimeError, match=r"Expected tensor with 2 or more dimensions. Got size: "
                                            r"\[2\] instead"):
        ft.linalg.lu_factor(t([1.0, 2.0]))
    with pytest.raises(NotImplementedError, match="\"lu_cpu\" not implemented for 'Long'"):
        ft.linalg.lu_factor(ft.ones(2, 2, dtype=ft.int64))


def test_deprecated_torch_lu_forms(rng):
    a = well_conditioned(rng, 3, 3)
    b = rng.standard_normal((3, 2))
    LU, piv = ft.lu(t(a))
    LU2, piv2, infos = ft.lu(t(a), get_infos=True)
    assert infos.item() == 0
    np.testing.assert_array_equal(LU.numpy(), LU2.numpy())
    x = ft.lu_solve(t(b), LU, piv)
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(a, b), rtol=1e-12)
    np.testing.assert_allclose(t(b).lu_solve(LU, piv).numpy(), x.numpy())
    LU3, _ = t(a).lu()
    np.testing.assert_array_equal(LU3.numpy(), LU.numpy())
    P, L, U = ft.lu_unpack(LU, piv, unpack_data=False)
    assert L.numel() == 0 and U.numel() == 0 and P.shape == (3, 3)
    with pytest.raises(RuntimeError, match="int32"):
        ft.lu_unpack(LU, piv.long())


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [True, False])
def test_lu_solve_values(rng, left, adjoint):
    a = rng.standard_normal((2, 4, 4))
    b = rng.standard_normal((2, 4, 3) if left else (2, 3, 4))
    LU, piv = ft.linalg.lu_factor(t(a))
    x = ft.linalg.lu_solve(LU, piv, t(b), left=left, adjoint=adjoint)
    op = np.swapaxes(a, -1, -2) if adjoint else a
    ref = np.linalg.solve(op, b) if left else np.swapaxes(
        np.linalg.solve(np.swapaxes(op, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
    np.testing.assert_allclose(x.numpy(), ref, rtol=1e-10, atol=1e-10)


def test_lu_solve_errors(rng):
    LU, piv = ft.linalg.lu_factor(t(rng.standard_normal((3, 4))))
    with pytest.raises(RuntimeError, match="square"):
        ft.linalg.lu_solve(LU, piv, t(np.ones((3, 1))))


@pytest.mark.parametrize("shape", [(3, 3), (2, 4), (4, 2), (2, 3, 3)])
def test_lu_gradcheck(rng, shape):
    a = t(rng.standard_normal(shape), grad=True)

    def factors(x):
        _, L, U = ft.linalg.lu(x)
        return L, U

    assert gradcheck(factors, (a,))
    assert gradcheck(lambda x: ft.linalg.lu_factor(x).LU, (a,))
    assert gradgradcheck(factors, (a,))
    assert ft.linalg.lu(a).L.grad_fn.name() == "LinalgLuBackward0"
    assert ft.linalg.lu_factor(a).LU.grad_fn.name() == "LinalgLuFactorExBackward0"


def test_lu_only_one_factor_used(rng):
    a = t(rng.standard_normal((3, 3)), grad=True)
    assert gradcheck(lambda x: ft.linalg.lu(x).U.sum(), (a,))
    assert gradcheck(lambda x: (ft.linalg.lu(x).L ** 2).sum(), (a,))


def test_lu_solve_gradcheck(rng):
    a = well_conditioned(rng, 3, 3)
    b = t(rng.standard_normal((3, 2)), grad=True)
    A = t(a, grad=True)

    def f(A, b):
        LU, piv = ft.linalg.lu_factor(A)
        return ft.linalg.lu_solve(LU, piv, b)

    assert gradcheck(f, (A, b))
    # The gradient equals that of solve: lu_solve(lu_factor(A), b) is A^{-1} b.
    f(A, b).sum().backward()
    ga = A.grad.numpy().copy()
    A.grad = None
    ft.linalg.solve(A, b).sum().backward()
    np.testing.assert_allclose(ga, A.grad.numpy(), rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------------ *_ex variants


def test_cholesky_ex(rng):
    m = rng.standard_normal((2, 3, 3))
    spd = m @ np.swapaxes(m, -1, -2) + 3 * np.eye(3)
    L, info = ft.linalg.cholesky_ex(t(spd))
    assert info.tolist() == [0, 0]
    np.testing.assert_allclose(L.numpy(), np.linalg.cholesky(spd), rtol=1e-12)
    bad = spd.copy()
    bad[1] = -np.eye(3)
    bad[1, 0, 0] = 1.0
    L, info = ft.linalg.cholesky_ex(t(bad))
    assert info.tolist() == [0, 2]
    np.testing.assert_allclose(L.numpy()[0], np.linalg.cholesky(spd[0]), rtol=1e-12)
    with pytest.raises(RuntimeError, match="order 2"):
        ft.linalg.cholesky_ex(t(bad), check_errors=True)


def test_inv_ex_and_solve_ex(rng):
    a = well_conditioned(rng, 2, 3, 3)
    inv, info = ft.linalg.inv_ex(t(a))
    assert info.tolist() == [0, 0] and info.dtype == ft.int32
    np.testing.assert_allclose(inv.numpy(), np.linalg.inv(a), rtol=1e-12)
    sing = a.copy()
    sing[1] = [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]
    inv, info = ft.linalg.inv_ex(t(sing))
    assert info.tolist()[0] == 0 and info.tolist()[1] > 0
    np.testing.assert_allclose(inv.numpy()[0], np.linalg.inv(a[0]), rtol=1e-12)
    with pytest.raises(RuntimeError):
        ft.linalg.inv_ex(t(sing), check_errors=True)
    b = rng.standard_normal((2, 3))
    x, info = ft.linalg.solve_ex(t(a), t(b))
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(a, b[..., None])[..., 0], rtol=1e-12)
    x, info = ft.linalg.solve_ex(t(sing), t(b))
    assert info.tolist()[1] > 0
    np.testing.assert_allclose(x.numpy()[0], np.linalg.solve(a[0], b[0]), rtol=1e-10)


# ------------------------------------------------------------------------ matrix_exp


def np_expm(a):
    """Reference: scaling and squaring with a long Taylor series, in float64."""
    s = max(0, int(np.ceil(np.log2(max(np.abs(a).sum(-2).max(), 1e-300) / 0.25))))
    x = a / 2.0**s
    term = np.broadcast_to(np.eye(a.shape[-1]), a.shape).copy()
    out = term.copy()
    for k in range(1, 30):
        term = term @ x / k
        out = out + term
    for _ in range(s):
        out = out @ out
    return out


@pytest.mark.parametrize("scale", [1e-3, 0.1, 0.5, 1.5, 4.0, 40.0])
def test_matrix_exp_values(rng, scale):
    a = rng.standard_normal((2, 4, 4)) * scale / 4
    r = ft.linalg.matrix_exp(t(a))
    np.testing.assert_allclose(r.numpy(), np_expm(a), rtol=1e-10, atol=1e-12)
    r32 = ft.matrix_exp(t(a, np.float32))
    assert r32.dtype == ft.float32
    np.testing.assert_allclose(r32.numpy(), np_expm(a), rtol=2e-4, atol=1e-5)


def test_matrix_exp_identities(rng):
    m = rng.standard_normal((3, 3))
    sym = m + m.T
    w, v = np.linalg.eigh(sym)
    np.testing.assert_allclose(ft.linalg.matrix_exp(t(sym)).numpy(), (v * np.exp(w)) @ v.T,
                               rtol=1e-10)
    np.testing.assert_allclose(t(sym).matrix_exp().numpy(), (v * np.exp(w)) @ v.T, rtol=1e-10)
    z = ft.linalg.matrix_exp(t(np.zeros((2, 2))))
    np.testing.assert_array_equal(z.numpy(), np.eye(2))
    assert ft.linalg.matrix_exp(t(np.zeros((0, 3, 3)))).shape == (0, 3, 3)
    with pytest.raises(RuntimeError, match="square"):
        ft.linalg.matrix_exp(t(np.zeros((2, 3))))


@pytest.mark.parametrize("scale", [0.01, 1.0, 10.0])
def test_matrix_exp_gradcheck(rng, scale):
    a = t(rng.standard_normal((3, 3)) * scale / 3, grad=True)
    assert gradcheck(ft.linalg.matrix_exp, (a,))


# ------------------------------------------------------------------------ cond, tensor*, vander


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", float("inf"), -float("inf"), 1, -1])
def test_cond(rng, p):
    a = rng.standard_normal((2, 3, 3))
    np.testing.assert_allclose(ft.linalg.cond(t(a), p).numpy(), np.linalg.cond(a, p),
                               rtol=1e-10)


def test_cond_singular_and_rectangular(rng):
    sing = t([[1.0, 2.0], [2.0, 4.0]])
    assert ft.linalg.cond(sing, 1).item() == float("inf")
    a = rng.standard_normal((4, 2))
    np.testing.assert_allclose(ft.linalg.cond(t(a)).item(), np.linalg.cond(a), rtol=1e-10)
    with pytest.raises(RuntimeError, match="square"):
        ft.linalg.cond(t(a), 1)


def test_tensorinv_tensorsolve(rng):
    a = rng.standard_normal((4, 6, 8, 3)) + 0.0
    a = a.reshape(24, 24) + 10 * np.eye(24)
    a = a.reshape(4, 6, 8, 3)
    np.testing.assert_allclose(ft.linalg.tensorinv(t(a), ind=2).numpy(),
                               np.linalg.tensorinv(a, ind=2), rtol=1e-10)
    b = rng.standard_normal((4, 6))
    np.testing.assert_allclose(ft.linalg.tensorsolve(t(a), t(b)).numpy(),
                               np.linalg.tensorsolve(a, b), rtol=1e-10)
    a2 = np.moveaxis(a, 3, 0)  # (3, 4, 6, 8): dims=(0,) moves the 3 back to the end
    np.testing.assert_allclose(ft.linalg.tensorsolve(t(a2), t(b), dims=(0,)).numpy(),
                               np.linalg.tensorsolve(a2, b, axes=(0,)), rtol=1e-10)
    with pytest.raises(RuntimeError, match="prod"):
        ft.linalg.tensorinv(t(np.ones((2, 3))), ind=1)


def test_vander_and_diagonal(rng):
    x = rng.standard_normal((2, 4))
    v = ft.linalg.vander(t(x))
    np.testing.assert_allclose(v.numpy(), np.stack([np.vander(r, increasing=True) for r in x]),
                               rtol=1e-12)
    assert ft.linalg.vander(t(x), N=6).shape == (2, 4, 6)
    assert gradcheck(lambda y: ft.linalg.vander(y, N=3), (t(x, grad=True),))
    with pytest.raises(RuntimeError, match="N must be greater than 1"):
        ft.linalg.vander(t(x), N=1)
    a = rng.standard_normal((2, 3, 4))
    np.testing.assert_array_equal(ft.linalg.diagonal(t(a), offset=1).numpy(),
                                  np.diagonal(a, 1, -2, -1))


def test_torch_triangular_solve(rng):
    a = well_conditioned(rng, 3, 3)
    b = rng.standard_normal((3, 2))
    x, cloned = ft.triangular_solve(t(b), t(a))
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(np.triu(a), b), rtol=1e-12)
    np.testing.assert_array_equal(cloned.numpy(), a)
    x, _ = t(b).triangular_solve(t(a), upper=False, transpose=True)
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(np.tril(a).T, b), rtol=1e-12)
