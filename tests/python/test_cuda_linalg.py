"""linalg decompositions on CUDA through cuSOLVER / cuBLAS (src/cuda/linalg_ops.rs): inv, det,
slogdet, logdet, solve, cholesky, solve_triangular, lu_factor, lu, qr, eigh/eigvalsh, svd/svdvals,
pinv, matrix_rank, and what is built on them.

Every result is compared with the CPU's (itself tested against NumPy and PyTorch elsewhere)
over square, batched, transposed, tall, wide, 1x1 and empty inputs in float32 and float64;
results stay on the device, no op goes through the host fallback, errors match the CPU's, and
gradients agree with the CPU's and pass gradcheck. Factors that are only defined up to signs
(SVD, eigenvectors) are compared after aligning column signs. Needs CUDA (`pytest -m cuda`;
the CPU emulator of tools/cuda_emu counts, with its stand-in cuSOLVER).
"""

import numpy as np
import pytest

import ferrotorch as torch

HAS_CUDA = torch.cuda.is_available()
pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device: "
                       + str(torch._C._cuda_unavailable_reason())),
]

la = torch.linalg
DTYPES = [torch.float32, torch.float64]
LINALG_OPS = {"linalg.inv", "linalg.det", "linalg.slogdet", "logdet", "linalg.solve",
              "linalg.cholesky", "linalg.solve_triangular", "linalg.lu_factor", "linalg.qr",
              "linalg.svd", "linalg.svdvals", "linalg.eigh", "linalg.pinv",
              "linalg.matrix_rank", "linalg.lstsq", "linalg.matrix_norm", "linalg.cross"}


def npy(t):
    return t.detach().cpu().numpy()


def tol(dtype):
    return 2e-4 if dtype == torch.float32 else 1e-9


def close(got, want, dtype=None, scale=1.0):
    assert got.device.type == "cuda", got.device
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert tuple(got.shape) == tuple(want.shape), (got.shape, want.shape)
    r = tol(dtype or want.dtype) * scale
    np.testing.assert_allclose(npy(got), npy(want), rtol=r, atol=r, equal_nan=True)


def no_host_fallback():
    used = set(torch._C._cuda_host_fallback_ops()) & LINALG_OPS
    assert not used, f"went through the host: {used}"


def rand(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    return torch.from_numpy(rng.standard_normal(shape)).to(dtype)


def spd(shape, dtype, seed):
    a = rand(shape, torch.float64, seed)
    n = shape[-1]
    return (a @ a.transpose(-2, -1) + n * torch.eye(n, dtype=torch.float64)).to(dtype)


def layouts(shape, dtype, seed):
    """(name, cpu tensor) over contiguous and transposed storage of the same values."""
    a = rand(shape, dtype, seed)
    yield "contiguous", a
    yield "transposed", a.transpose(-2, -1).contiguous().transpose(-2, -1)


SQUARE = [(1, 1), (3, 3), (5, 5), (2, 3, 4, 4), (0, 0), (0, 3, 3)]


# ------------------------------------------------------------------------------ LU family


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SQUARE)
def test_inv_det_slogdet_solve(dtype, shape):
    for _name, a in layouts(shape, dtype, 1):
        a = a + 3 * torch.eye(shape[-1], dtype=dtype)  # well conditioned
        g = a.cuda()
        close(la.inv(g), la.inv(a))
        close(la.det(g), la.det(a), scale=10)
        s, ld = la.slogdet(g)
        s0, ld0 = la.slogdet(a)
        close(s, s0)
        close(ld, ld0)
        close(torch.logdet(g), torch.logdet(a), scale=10)
        b = rand((*shape[:-1], 2), dtype, 2)
        close(la.solve(g, b.cuda()), la.solve(a, b), scale=10)
        bl = rand((*shape[:-2], 2, shape[-1]), dtype, 3)
        close(la.solve(g, bl.cuda(), left=False), la.solve(a, bl, left=False), scale=10)
        close(la.solve(g, b[..., 0].cuda()), la.solve(a, b[..., 0]), scale=10)
    no_host_fallback()


@pytest.mark.parametrize("dtype", DTYPES)
def test_det_signs_singular_and_negative(dtype):
    a = torch.tensor([[[0.0, 1.0], [1.0, 0.0]],  # one swap: det -1
                      [[1.0, 2.0], [2.0, 4.0]],  # singular
                      [[2.0, 0.0], [0.0, 3.0]],
                      [[0.0, 0.0], [0.0, 0.0]]], dtype=dtype)
    g = a.cuda()
    close(la.det(g), la.det(a))
    s, ld = la.slogdet(g)
    np.testing.assert_array_equal(npy(s), [-1, 0, 1, 0])
    assert np.isneginf(npy(ld)[1]) and np.isneginf(npy(ld)[3])
    ldt = npy(torch.logdet(g))
    assert np.isnan(ldt[0]) and np.isneginf(ldt[1]) and np.isclose(ldt[2], np.log(6))
    no_host_fallback()


def test_solve_broadcasts_and_vectors():
    a = rand((3, 1, 4, 4), torch.float64, 3) + 4 * torch.eye(4, dtype=torch.float64)
    b = rand((2, 4, 3), torch.float64, 4)
    close(la.solve(a.cuda(), b.cuda()), la.solve(a, b))
    v = rand((4,), torch.float64, 5)
    close(la.solve(a.cuda(), v.cuda()), la.solve(a, v))
    close(la.solve(a[0, 0].cuda(), v.cuda()), la.solve(a[0, 0], v))
    close(torch.linalg.matrix_power(a.cuda(), -2), torch.linalg.matrix_power(a, -2))
    close(la.tensorsolve(a[0, 0].cuda(), v.cuda()), la.tensorsolve(a[0, 0], v))
    no_host_fallback()


def test_errors_match_the_cpu():
    sing = torch.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=torch.float64)
    batch = torch.stack([torch.eye(2, dtype=torch.float64), sing])
    not_pd = torch.tensor([[1.0, 2.0], [2.0, 1.0]], dtype=torch.float64)
    cases = [
        (lambda t: la.inv(t), sing),
        (lambda t: la.inv(t), batch),
        (lambda t: la.solve(t, t), sing),
        (lambda t: la.cholesky(t), not_pd),
        (lambda t: la.cholesky(t), torch.stack([torch.eye(2, dtype=torch.float64), not_pd])),
        (lambda t: la.inv(t.int()), sing),
        (lambda t: la.inv(t.half()), sing),
        (lambda t: la.inv(t[0]), sing),
        (lambda t: la.det(t[:, :1].contiguous()), batch),
        (lambda t: la.cholesky(t, upper=True), not_pd),
    ]
    for fn, a in cases:
        with pytest.raises(RuntimeError) as cpu:
            fn(a)
        with pytest.raises(RuntimeError) as gpu:
            fn(a.cuda())
        assert str(gpu.value) == str(cpu.value)
    with pytest.raises(RuntimeError, match="same device"):
        la.solve(sing.cuda(), sing)
    with pytest.raises(RuntimeError, match="same device"):
        la.solve_triangular(sing.cuda(), sing, upper=True)
    # The _ex variants report instead of raising.
    L, info = la.cholesky_ex(not_pd.cuda())
    assert L.is_cuda and info.is_cuda and int(info) == 2
    _, info = la.inv_ex(sing.cuda())
    assert int(info) == 2


# ------------------------------------------------------------------------------ Cholesky, triangular


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (2, 3, 5, 5), (0, 0), (2, 0, 3, 3)])
def test_cholesky_and_triangular_solves(dtype, shape):
    a = spd(shape, dtype, 6)
    g = a.cuda()
    close(la.cholesky(g), la.cholesky(a))
    close(la.cholesky(g, upper=True), la.cholesky(a, upper=True))
    low = la.cholesky(a)
    b = rand((*shape[:-1], 3), dtype, 7)
    for upper in (False, True):
        t = low.transpose(-2, -1) if upper else low
        for unit in (False, True):
            close(la.solve_triangular(t.cuda(), b.cuda(), upper=upper, unitriangular=unit),
                  la.solve_triangular(t, b, upper=upper, unitriangular=unit), scale=10)
            bt = b.transpose(-2, -1).contiguous()
            close(la.solve_triangular(t.cuda(), bt.cuda(), upper=upper, left=False,
                                      unitriangular=unit),
                  la.solve_triangular(t, bt, upper=upper, left=False, unitriangular=unit),
                  scale=10)
    close(torch.cholesky_solve(b.cuda(), low.cuda()), torch.cholesky_solve(b, low), scale=10)
    close(torch.cholesky_inverse(low.cuda()), torch.cholesky_inverse(low), scale=10)
    no_host_fallback()


def test_triangular_solve_reads_only_its_triangle_and_broadcasts():
    a = rand((2, 1, 4, 4), torch.float64, 8) + 4 * torch.eye(4, dtype=torch.float64)
    b = rand((3, 4, 2), torch.float64, 9)
    for upper in (False, True):
        close(la.solve_triangular(a.cuda(), b.cuda(), upper=upper),
              la.solve_triangular(a, b, upper=upper))
    # A transposed (non-contiguous) triangular operand.
    at = a.transpose(-2, -1)
    close(la.solve_triangular(at.cuda(), b.cuda(), upper=True),
          la.solve_triangular(at, b, upper=True))
    no_host_fallback()


# ------------------------------------------------------------------------------ LU factor


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 3), (2, 4, 4), (1, 1), (0, 3)])
def test_lu_factor_and_lu(dtype, shape):
    for _name, a in layouts(shape, dtype, 10):
        g = a.cuda()
        lu, piv = la.lu_factor(g) if shape[-1] == shape[-2] else la.lu_factor_ex(g)[:2]
        lu0, piv0 = la.lu_factor(a) if shape[-1] == shape[-2] else la.lu_factor_ex(a)[:2]
        close(lu, lu0)
        assert piv.is_cuda and piv.dtype == torch.int32
        np.testing.assert_array_equal(npy(piv), npy(piv0))
        P, L, U = la.lu(g)
        P0, L0, U0 = la.lu(a)
        close(P, P0)
        close(L, L0)
        close(U, U0)
        if shape[-1] == shape[-2] and shape[-1] > 0:
            b = rand((*shape[:-1], 2), dtype, 11)
            close(la.lu_solve(lu, piv, b.cuda()), la.lu_solve(lu0, piv0, b), scale=100)
    _, _, info = la.lu_factor_ex(torch.zeros(3, 3, device="cuda", dtype=torch.float64))
    assert info.is_cuda and int(info) == 1
    no_host_fallback()


def test_lu_unpack_permutations_built_on_the_device():
    a = rand((40, 5, 5), torch.float64, 34)
    lu, piv = la.lu_factor(a)
    for p_ in (piv, piv[:3], piv[..., :2]):
        P, L, U = torch.lu_unpack(lu.cuda(), p_.cuda())
        P0, L0, U0 = torch.lu_unpack(lu, p_)
        close(P, P0)
        close(L, L0)
        close(U, U0)
    bad = piv.clone()
    bad[3, 1] = 9
    with pytest.raises(RuntimeError) as cpu:
        torch.lu_unpack(lu, bad)
    with pytest.raises(RuntimeError) as gpu:
        torch.lu_unpack(lu.cuda(), bad.cuda())
    assert str(gpu.value) == str(cpu.value)


# ------------------------------------------------------------------------------ QR


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (6, 3), (3, 6), (2, 5, 4), (1, 1), (0, 3), (3, 0)])
def test_qr_matches_the_cpu(dtype, shape):
    # CPU and cuSOLVER both follow LAPACK's Householder conventions, so Q and R agree as
    # they are, signs included.
    for _name, a in layouts(shape, dtype, 12):
        g = a.cuda()
        for mode in ("reduced", "complete", "r"):
            q, r = la.qr(g, mode=mode)
            q0, r0 = la.qr(a, mode=mode)
            close(q, q0, scale=10)
            close(r, r0, scale=10)
    q, r = la.qr(torch.eye(3, device="cuda"))
    np.testing.assert_allclose(npy(q), np.eye(3))
    np.testing.assert_allclose(npy(r), np.eye(3))
    no_host_fallback()


# ------------------------------------------------------------------------------ eigh, SVD


def align_columns(got, want):
    """`got` with each column's sign flipped to match `want`'s (eigen/singular vectors are
    defined up to sign)."""
    s = np.sign(np.sum(got * want, axis=-2, keepdims=True))
    s[s == 0] = 1
    return got * s, s


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (2, 3, 5, 5), (0, 0)])
def test_eigh(dtype, shape):
    a = spd(shape, dtype, 13) * 0.1
    a = a + torch.diag_embed(torch.arange(shape[-1], dtype=dtype))  # distinct eigenvalues
    g = a.cuda()
    for uplo in ("L", "U"):
        w, v = la.eigh(g, UPLO=uplo)
        w0, v0 = la.eigh(a, UPLO=uplo)
        close(w, w0, scale=10)
        got, _ = align_columns(npy(v), npy(v0))
        np.testing.assert_allclose(got, npy(v0), rtol=tol(dtype) * 100, atol=tol(dtype) * 100)
        close(la.eigvalsh(g, UPLO=uplo), la.eigvalsh(a, UPLO=uplo), scale=10)
    # Only the UPLO triangle is read.
    junk = torch.triu(rand(shape, dtype, 14), 1) if shape[-1] else a
    close(la.eigvalsh((torch.tril(a) + junk).cuda()), la.eigvalsh(torch.tril(a) + junk),
          scale=10)
    no_host_fallback()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (6, 3), (3, 6), (2, 5, 4), (2, 3, 5), (1, 1),
                                   (0, 3), (3, 0)])
def test_svd(dtype, shape):
    for _name, a in layouts(shape, dtype, 15):
        g = a.cuda()
        close(la.svdvals(g), la.svdvals(a), scale=10)
        for full in (False, True):
            u, s, vh = la.svd(g, full_matrices=full)
            u0, s0, vh0 = la.svd(a, full_matrices=full)
            for t, t0 in ((u, u0), (s, s0), (vh, vh0)):
                assert t.is_cuda and t.shape == t0.shape, (t.shape, t0.shape)
            close(s, s0, scale=10)
            k = min(shape[-2:])
            un, vn = npy(u), npy(vh)
            # A = U diag(S) Vh, and U / Vh have orthonormal columns / rows.
            rec = (un[..., :, :k] * npy(s)[..., None, :]) @ vn[..., :k, :]
            np.testing.assert_allclose(rec, npy(a), rtol=tol(dtype) * 10, atol=tol(dtype) * 10)
            eye_u = np.broadcast_to(np.eye(un.shape[-1]), un.shape[:-2] + (un.shape[-1],) * 2)
            np.testing.assert_allclose(np.swapaxes(un, -1, -2) @ un, eye_u,
                                       atol=tol(dtype) * 10)
            eye_v = np.broadcast_to(np.eye(vn.shape[-2]), vn.shape[:-2] + (vn.shape[-2],) * 2)
            np.testing.assert_allclose(vn @ np.swapaxes(vn, -1, -2), eye_v,
                                       atol=tol(dtype) * 10)
            # The first k columns agree with the CPU's up to sign.
            got, sign = align_columns(un[..., :, :k], npy(u0)[..., :, :k])
            np.testing.assert_allclose(got, npy(u0)[..., :, :k], atol=tol(dtype) * 100)
            np.testing.assert_allclose(vn[..., :k, :] * np.swapaxes(sign, -1, -2),
                                       npy(vh0)[..., :k, :], atol=tol(dtype) * 100)
    no_host_fallback()


@pytest.mark.parametrize("dtype", DTYPES)
def test_pinv_rank_norms_cond(dtype):
    a = rand((2, 5, 3), dtype, 16)
    low_rank = rand((5, 2), dtype, 17) @ rand((2, 4), dtype, 18)
    sym = spd((4, 4), dtype, 19)
    for t in (a, low_rank, a.transpose(-2, -1)):
        close(la.pinv(t.cuda()), la.pinv(t), scale=100)
        r = la.matrix_rank(t.cuda())
        assert r.is_cuda and r.dtype == torch.int64
        np.testing.assert_array_equal(npy(r), npy(la.matrix_rank(t)))
        for o in (2, -2, "nuc"):
            close(la.matrix_norm(t.cuda(), o), la.matrix_norm(t, o), scale=10)
    close(la.pinv(sym.cuda(), hermitian=True), la.pinv(sym, hermitian=True), scale=100)
    np.testing.assert_array_equal(npy(la.matrix_rank(low_rank.cuda(), atol=1e-3, rtol=0.0)),
                                  [2])
    assert int(la.matrix_rank(sym.cuda(), hermitian=True)) == 4
    close(la.cond(sym.cuda()), la.cond(sym), scale=100)
    close(torch.svd(a.cuda())[1], torch.svd(a)[1], scale=10)
    no_host_fallback()


@pytest.mark.parametrize("dtype", DTYPES)
def test_lstsq_gels_and_cross(dtype):
    # PyTorch's CUDA driver is gels (QR): the solution and, for m > n, the residuals; rank
    # and singular values stay empty.
    for m, n, k in ((6, 3, 2), (4, 4, 1), (5, 2, 3)):
        a = rand((2, m, n), dtype, 24)
        b = rand((2, m, k), dtype, 25)
        got = la.lstsq(a.cuda(), b.cuda())
        want = la.lstsq(a, b, driver="gels")
        close(got.solution, want.solution, scale=100)
        close(got.residuals, want.residuals, scale=100)
        assert got.rank.numel() == 0 and got.singular_values.numel() == 0
        close(la.lstsq(a.cuda(), b[..., 0].cuda()).solution, la.lstsq(a, b[..., 0]).solution,
              scale=100)
    # Other drivers (and underdetermined systems, which PyTorch's CUDA gels rejects) run on
    # the host copy rather than failing.
    u = rand((1, 4, 3), dtype, 26)
    v = rand((2, 4, 3), dtype, 27)
    close(la.cross(u.cuda(), v.cuda(), dim=-1), la.cross(u, v, dim=-1))
    for dim in (1, -2):
        close(torch.cross(v.transpose(1, 2).cuda(), v.transpose(1, 2).cuda().flip(1), dim=dim),
              torch.cross(v.transpose(1, 2), v.transpose(1, 2).flip(1), dim=dim))
    iu = (u * 10).long()
    close(la.cross(iu.cuda(), iu.flip(0).cuda()), la.cross(iu, iu.flip(0)))
    with pytest.raises(RuntimeError, match="same device"):
        la.cross(u.cuda(), v)
    no_host_fallback()
    x = u.cuda().requires_grad_()
    (la.cross(x, v.cuda()) ** 2).sum().backward()
    y = u.clone().requires_grad_()
    (la.cross(y, v) ** 2).sum().backward()
    close(x.grad, y.grad)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 3, 32, 33])
def test_many_small_matrices(dtype, n):
    # Batches of >= 32 matrices with n <= 32 go to linalg.cu's one-thread-per-matrix kernels
    # (n = 33 still to cuSOLVER): same results, pivots, infos and errors.
    nb = 40
    a = rand((nb, n, n), dtype, 30) + 2 * torch.eye(n, dtype=dtype)
    g = a.cuda()
    close(la.inv(g), la.inv(a), scale=100)
    close(la.det(g), la.det(a), scale=100)
    close(la.slogdet(g)[1], la.slogdet(a)[1], scale=100)
    b = rand((nb, n, 3), dtype, 31)
    close(la.solve(g, b.cuda()), la.solve(a, b), scale=100)
    lu, piv = la.lu_factor(g)
    lu0, piv0 = la.lu_factor(a)
    close(lu, lu0, scale=100)
    np.testing.assert_array_equal(npy(piv), npy(piv0))
    s = spd((nb, n, n), dtype, 32)
    for upper in (False, True):
        close(la.cholesky(s.cuda(), upper=upper), la.cholesky(s, upper=upper), scale=100)
        t = torch.triu(a) if upper else torch.tril(a)
        for unit in (False, True):
            close(la.solve_triangular(t.cuda(), b.cuda(), upper=upper, unitriangular=unit),
                  la.solve_triangular(t, b, upper=upper, unitriangular=unit), scale=100)
    # A singular and a non-positive-definite matrix in the batch: the CPU's errors.
    bad = a.clone()
    bad[7] = 0
    for fn, m in ((la.inv, bad), (la.cholesky, bad), (la.solve, bad)):
        args = (lambda t: (t, b.to(t.device))) if fn is la.solve else (lambda t: (t,))
        with pytest.raises(RuntimeError) as cpu:
            fn(*args(m))
        with pytest.raises(RuntimeError) as gpu:
            fn(*args(m.cuda()))
        assert str(gpu.value) == str(cpu.value)
    np.testing.assert_array_equal(npy(la.lu_factor_ex(bad.cuda())[2]),
                                  npy(la.lu_factor_ex(bad)[2]))
    x = g.clone().requires_grad_()
    la.det(x).sum().backward()
    y = a.clone().requires_grad_()
    la.det(y).sum().backward()
    close(x.grad, y.grad, scale=1000)
    # eigh and svd of many small matrices: cuSOLVER's batched Jacobi (syevj/gesvdjBatched).
    sym = s + torch.diag_embed(torch.arange(n, dtype=dtype)) * n  # distinct eigenvalues
    w, v = la.eigh(sym.cuda())
    w0, v0 = la.eigh(sym)
    close(w, w0, scale=1000)
    got, _ = align_columns(npy(v), npy(v0))
    np.testing.assert_allclose(got, npy(v0), atol=tol(dtype) * 1000)
    close(la.eigvalsh(sym.cuda()), la.eigvalsh(sym), scale=1000)
    for shape in ((nb, n, n), (nb, n, min(n + 2, 32)), (nb, min(n + 3, 32), n)):
        r = rand(shape, dtype, 33)
        close(la.svdvals(r.cuda()), la.svdvals(r), scale=100)
        for full in (False, True):
            u, sv, vh = la.svd(r.cuda(), full_matrices=full)
            u0, sv0, vh0 = la.svd(r, full_matrices=full)
            assert u.shape == u0.shape and vh.shape == vh0.shape
            k = sv.shape[-1]
            rec = (npy(u)[..., :k] * npy(sv)[..., None, :]) @ npy(vh)[..., :k, :]
            np.testing.assert_allclose(rec, npy(r), atol=tol(dtype) * 100)
            un = npy(u)
            np.testing.assert_allclose(np.swapaxes(un, -1, -2) @ un,
                                       np.broadcast_to(np.eye(un.shape[-1]), un.shape[:-2]
                                                       + (un.shape[-1],) * 2),
                                       atol=tol(dtype) * 100)
    no_host_fallback()


# ------------------------------------------------------------------------------ gradients


GRADS = {
    "inv": lambda a: la.inv(a).sum(),
    "det": lambda a: la.det(a).sum(),
    "slogdet": lambda a: la.slogdet(a)[1].sum(),
    "solve": lambda a: (la.solve(a, a[..., :2] * 2 + 1) ** 2).sum(),
    "cholesky": lambda a: la.cholesky(a @ a.transpose(-2, -1) + 4 * torch.eye(4, dtype=a.dtype,
                                                                                 device=a.device)
                                      ).sum(),
    "solve_triangular": lambda a: la.solve_triangular(
        a.triu() + 4 * torch.eye(4, dtype=a.dtype, device=a.device), a[..., :3],
        upper=True).sum(),
    "qr": lambda a: sum(t.sum() for t in la.qr(a)),
    "eigh": lambda a: (la.eigh(a + a.transpose(-2, -1))[0] ** 2).sum()
    + (la.eigh(a + a.transpose(-2, -1))[1] ** 2 * torch.arange(4.0, dtype=a.dtype,
                                                                 device=a.device)).sum(),
    "svdvals": lambda a: la.svdvals(a).sum(),
    "svd_uv": lambda a: (lambda u, s, vh: ((u * s.unsqueeze(-2)) @ vh).sum() + (u @ vh).abs().sum()
                         )(*la.svd(a, full_matrices=False)),
    "pinv": lambda a: la.pinv(a[..., :3]).sum(),
    "lu": lambda a: sum(t.sum() for t in la.lu(a)[1:]),
}


@pytest.mark.parametrize("name", list(GRADS))
def test_gradients_match_the_cpu(name):
    fn = GRADS[name]
    a = rand((2, 4, 4), torch.float64, 20) + 2 * torch.eye(4, dtype=torch.float64)
    x = a.clone().requires_grad_()
    y = a.cuda().requires_grad_()
    fn(x).backward()
    fn(y).backward()
    assert y.grad.is_cuda
    np.testing.assert_allclose(npy(y.grad), npy(x.grad), rtol=1e-7, atol=1e-9)
    no_host_fallback()


@pytest.mark.parametrize("name", ["inv", "det", "solve", "cholesky", "solve_triangular", "qr",
                                  "svdvals", "eigh"])
def test_gradcheck_on_the_device(name):
    a = rand((4, 4), torch.float64, 23) + 2 * torch.eye(4, dtype=torch.float64)
    x = a.cuda().requires_grad_()
    assert torch.autograd.gradcheck(GRADS[name], (x,), eps=1e-6, atol=1e-5)
