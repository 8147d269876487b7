"""Self-test of the emulator's fake cuSOLVER (libcusolver.so) and cuBLAS trsm against numpy.

Builds only the two libraries (with build.py's flags) into a temp dir and calls them through
ctypes; "device pointers" are numpy buffers, as in the emulator. Matrices live column-major in
buffers with a leading dimension larger than the row count, and the padding and the triangle a
routine must not read are filled with garbage/NaN, so reading or writing outside the matrix
shows. Run:  .venv/bin/python -m pytest -q tools/cuda_emu/test_fake_linalg.py
"""

import ctypes
import importlib.util
import itertools
from ctypes import byref, c_byte, c_double, c_int, c_void_p
from pathlib import Path

import numpy as np
import pytest

EMU = Path(__file__).resolve().parent
SUCCESS, NOT_INITIALIZED, INVALID = 0, 1, 3
CUBLAS_INVALID = 7
LOWER, UPPER = 0, 1
PAD = 2  # lda = rows + PAD
DTYPES = [np.float32, np.float64]
PREFIX = {np.float32: "S", np.float64: "D"}


def tol(dtype):
    return 2e-4 if dtype == np.float32 else 1e-11


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("ft_emu_build", EMU / "build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    out = tmp_path_factory.mktemp("cuda_emu")
    solver = ctypes.CDLL(str(build.link_lib(out, "libcusolver.so", [EMU / "libcusolver.cpp"])))
    blas = ctypes.CDLL(str(build.link_lib(out, "libcublas.so", [EMU / "libcublas.cpp"])))
    return solver, blas


@pytest.fixture(scope="module")
def handle(libs):
    h = c_void_p()
    assert libs[0].cusolverDnCreate(byref(h)) == SUCCESS
    assert libs[0].cusolverDnSetStream(h, None) == SUCCESS
    yield h
    assert libs[0].cusolverDnDestroy(h) == SUCCESS


def p(a):
    return None if a is None else a.ctypes.data_as(c_void_p)


def dev(mat, dtype, lda=None, fill=np.nan):
    """mat in a column-major buffer of leading dimension lda, padding rows set to `fill`."""
    rows, cols = mat.shape
    lda = max(1, rows + PAD) if lda is None else lda
    buf = np.full((lda, cols), fill, dtype=dtype, order="F")
    buf[:rows] = mat
    return buf


def fn(lib, dtype, name):
    return getattr(lib, f"cusolverDn{PREFIX[dtype]}{name}")


def lwork_of(solver, dtype, name, *args):
    lw = c_int(-1)
    assert fn(solver, dtype, name + "_bufferSize")(*args, byref(lw)) == SUCCESS
    assert lw.value >= 1
    return lw.value


def work_buf(dtype, lw):
    return np.zeros(lw, dtype=dtype)


def rand(rng, *shape):
    return rng.standard_normal(shape)


# ---- potrf ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("uplo", [LOWER, UPPER])
@pytest.mark.parametrize("n", [0, 1, 2, 5, 9])
def test_potrf(libs, handle, dtype, uplo, n):
    solver, _ = libs
    rng = np.random.default_rng(n + 10 * uplo)
    x = rand(rng, n, n)
    a = (x @ x.T + n * np.eye(n)).astype(dtype)
    buf = dev(a, dtype)
    other = np.tril(np.ones((n, n)), -1) if uplo == UPPER else np.triu(np.ones((n, n)), 1)
    buf[:n][other.astype(bool)] = 123.0  # the triangle that must be left alone
    before = buf.copy()
    lda = buf.shape[0]
    lw = lwork_of(solver, dtype, "potrf", handle, uplo, n, p(buf), lda)
    work, info = work_buf(dtype, lw), np.full(1, -7, np.int32)
    assert fn(solver, dtype, "potrf")(handle, uplo, n, p(buf), lda, p(work), lw, p(info)) == 0
    assert info[0] == 0
    assert np.isnan(work).all()
    L = np.linalg.cholesky(a.astype(np.float64))
    got = buf[:n]
    if uplo == LOWER:
        np.testing.assert_allclose(np.tril(got), L, rtol=tol(dtype), atol=tol(dtype))
    else:
        np.testing.assert_allclose(np.triu(got), L.T, rtol=tol(dtype), atol=tol(dtype))
    mask = np.zeros_like(buf, dtype=bool)
    mask[:n][other.astype(bool)] = True
    mask[n:] = True
    np.testing.assert_array_equal(buf[mask], before[mask])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("uplo", [LOWER, UPPER])
def test_potrf_not_pd_and_bad_args(libs, handle, dtype, uplo):
    solver, _ = libs
    rng = np.random.default_rng(3)
    x = rand(rng, 5, 5)
    a = x @ x.T + 5 * np.eye(5)
    a[2, 2] = -10.0  # leading minors 1, 2 are fine, minor 3 is not
    buf = dev(a, dtype)
    lw = lwork_of(solver, dtype, "potrf", handle, uplo, 5, p(buf), buf.shape[0])
    work, info = work_buf(dtype, lw), np.zeros(1, np.int32)
    potrf = fn(solver, dtype, "potrf")
    assert potrf(handle, uplo, 5, p(buf), buf.shape[0], p(work), lw, p(info)) == SUCCESS
    assert info[0] == 3
    assert potrf(handle, uplo, 5, p(buf), 4, p(work), lw, p(info)) == INVALID  # lda < n
    assert potrf(handle, uplo, -1, p(buf), 5, p(work), lw, p(info)) == INVALID
    assert potrf(handle, uplo, 5, p(buf), 7, p(work), lw - 1, p(info)) == INVALID  # small Lwork
    assert potrf(handle, 2, 5, p(buf), 7, p(work), lw, p(info)) == INVALID
    assert potrf(None, uplo, 5, p(buf), 7, p(work), lw, p(info)) == NOT_INITIALIZED


# ---- getrf / getrs ----------------------------------------------------------------------

def ref_getrf(a, pivot=True):
    """LAPACK dgetf2 in float64, operation for operation like the emulator."""
    a = a.astype(np.float64).copy()
    m, n = a.shape
    ipiv, info = [], 0
    for j in range(min(m, n)):
        piv = j + int(np.argmax(np.abs(a[j:, j]))) if pivot else j
        ipiv.append(piv + 1)
        if a[piv, j] != 0:
            a[[j, piv]] = a[[piv, j]]
            a[j + 1:, j] *= 1.0 / a[j, j]
        elif info == 0:
            info = j + 1
        a[j + 1:, j + 1:] -= np.outer(a[j + 1:, j], a[j, j + 1:])
    return a, np.array(ipiv, dtype=np.int32), info


def run_getrf(solver, handle, dtype, a, pivot=True):
    m, n = a.shape
    buf = dev(a, dtype)
    lda = buf.shape[0]
    lw = lwork_of(solver, dtype, "getrf", handle, m, n, p(buf), lda)
    work = work_buf(dtype, lw)
    ipiv = np.full(max(1, min(m, n)), -5, np.int32)
    info = np.full(1, -7, np.int32)
    st = fn(solver, dtype, "getrf")(handle, m, n, p(buf), lda, p(work),
                                    p(ipiv) if pivot else None, p(info))
    assert st == SUCCESS
    assert np.isnan(work).all()
    assert np.isnan(buf[m:]).all()  # padding untouched
    return buf, ipiv[:min(m, n)], int(info[0])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(0, 0), (1, 1), (4, 4), (6, 3), (3, 6), (7, 7), (0, 3)])
def test_getrf(libs, handle, dtype, shape):
    solver, _ = libs
    m, n = shape
    a = rand(np.random.default_rng(m * 7 + n), m, n).astype(dtype)
    buf, ipiv, info = run_getrf(solver, handle, dtype, a)
    ref, ref_ipiv, ref_info = ref_getrf(a)
    assert info == ref_info == 0
    np.testing.assert_array_equal(ipiv, ref_ipiv)
    lu = buf[:m].astype(np.float64)
    np.testing.assert_allclose(lu, ref.astype(dtype), rtol=tol(dtype), atol=tol(dtype))
    k = min(m, n)
    L = np.tril(lu[:, :k], -1) + np.eye(m, k)
    U = np.triu(lu[:k])
    pa = a.astype(np.float64).copy()
    for i, piv in enumerate(ipiv):
        pa[[i, piv - 1]] = pa[[piv - 1, i]]
    np.testing.assert_allclose(L @ U, pa, rtol=tol(dtype) * 10, atol=tol(dtype) * 10)


@pytest.mark.parametrize("dtype", DTYPES)
def test_getrf_singular_and_nopivot(libs, handle, dtype):
    solver, _ = libs
    a = np.array([[1.0, 2.0, 0.0], [2.0, 4.0, 0.0], [3.0, 1.0, 0.0]])
    buf, ipiv, info = run_getrf(solver, handle, dtype, a)
    ref, ref_ipiv, ref_info = ref_getrf(a)
    assert info == ref_info == 3  # column 3 is zero; the factorisation still completes
    np.testing.assert_array_equal(ipiv, ref_ipiv)
    np.testing.assert_allclose(buf[:3], ref, rtol=tol(dtype))
    ties = np.array([[1.0, 2.0, 3.0], [-1.0, 1.0, 0.0], [1.0, -1.0, 1.0], [0.5, 4.0, 2.0]])
    _, ipiv, _ = run_getrf(solver, handle, dtype, ties)
    np.testing.assert_array_equal(ipiv, ref_getrf(ties)[1])  # first of equal magnitudes
    assert list(ipiv[:2]) == [1, 2]  # |1| three times, then |3| three times
    b2 = np.array([[1.0, 2.0], [2.0, 4.0]])
    _, _, info = run_getrf(solver, handle, dtype, b2)
    assert info == 2
    a = rand(np.random.default_rng(5), 5, 4) + 4 * np.eye(5, 4)
    buf, _, info = run_getrf(solver, handle, dtype, a, pivot=False)
    ref, _, _ = ref_getrf(a, pivot=False)
    assert info == 0
    np.testing.assert_allclose(buf[:5], ref, rtol=tol(dtype), atol=tol(dtype))
    buf = dev(a, dtype)
    info = np.zeros(1, np.int32)
    ipiv = np.zeros(4, np.int32)
    work = work_buf(dtype, 1000)
    assert fn(solver, dtype, "getrf")(handle, 5, 4, p(buf), 4, p(work), p(ipiv), p(info)) == INVALID


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("trans", [0, 1, 2])
@pytest.mark.parametrize("n,nrhs", [(0, 2), (1, 1), (4, 3), (7, 1), (3, 0)])
def test_getrs(libs, handle, dtype, trans, n, nrhs):
    solver, _ = libs
    rng = np.random.default_rng(n * 3 + nrhs + trans)
    a = (rand(rng, n, n) + 2 * np.eye(n)).astype(dtype)
    lu, ipiv, info = run_getrf(solver, handle, dtype, a)
    assert info == 0
    b = rand(rng, n, nrhs).astype(dtype)
    bbuf = dev(b, dtype, lda=n + 3)
    info = np.full(1, -7, np.int32)
    ipiv_buf = ipiv if n else np.zeros(1, np.int32)
    st = fn(solver, dtype, "getrs")(handle, trans, n, nrhs, p(lu), lu.shape[0], p(ipiv_buf),
                                    p(bbuf), bbuf.shape[0], p(info))
    assert st == SUCCESS and info[0] == 0
    op = a.astype(np.float64) if trans == 0 else a.astype(np.float64).T
    x = np.linalg.solve(op, b.astype(np.float64)) if n else b
    np.testing.assert_allclose(bbuf[:n], x, rtol=tol(dtype) * 20, atol=tol(dtype) * 20)
    assert np.isnan(bbuf[n:]).all()
    assert fn(solver, dtype, "getrs")(handle, trans, n, nrhs, p(lu), max(1, n) - 1 or -1,
                                      p(ipiv_buf), p(bbuf), bbuf.shape[0], p(info)) == INVALID


# ---- geqrf / orgqr ----------------------------------------------------------------------

def ref_geqr2(a):
    """LAPACK dgeqr2 (dlarfg + dlarf) in float64."""
    a = a.astype(np.float64).copy()
    m, n = a.shape
    tau = np.zeros(min(m, n))
    for i in range(min(m, n)):
        alpha, x = a[i, i], a[i + 1:, i]
        xnorm = np.linalg.norm(x)
        if xnorm == 0:
            continue
        beta = -np.copysign(np.hypot(alpha, xnorm), 1.0 if alpha >= 0 else -1.0)
        tau[i] = (beta - alpha) / beta
        a[i + 1:, i] = x / (alpha - beta)
        a[i, i] = beta
        v = np.concatenate([[1.0], a[i + 1:, i]])
        c = a[i:, i + 1:]
        c -= tau[i] * np.outer(v, v @ c)
    return a, tau


def reflector_product(a, tau, m):
    """H(0) H(1) ... H(k-1) as an m x m matrix."""
    q = np.eye(m)
    for i in range(len(tau)):
        v = np.zeros(m)
        v[i] = 1.0
        v[i + 1:] = a[i + 1:, i]
        q = q @ (np.eye(m) - tau[i] * np.outer(v, v))
    return q


def run_geqrf(solver, handle, dtype, a):
    m, n = a.shape
    buf = dev(a, dtype)
    lda = buf.shape[0]
    lw = lwork_of(solver, dtype, "geqrf", handle, m, n, p(buf), lda)
    work = work_buf(dtype, lw)
    tau = np.full(max(1, min(m, n)) + 1, 99.0, dtype=dtype)
    info = np.full(1, -7, np.int32)
    geqrf = fn(solver, dtype, "geqrf")
    assert geqrf(handle, m, n, p(buf), lda, p(tau), p(work), lw, p(info)) == SUCCESS
    assert info[0] == 0 and np.isnan(work).all() and np.isnan(buf[m:]).all()
    assert tau[min(m, n)] == 99.0  # tau has exactly min(m, n) entries
    if m > 0:
        assert geqrf(handle, m, n, p(buf), m - 1, p(tau), p(work), lw, p(info)) == INVALID
    assert geqrf(handle, m, n, p(buf), lda, p(tau), p(work), lw - 1, p(info)) == INVALID
    return buf, tau[:min(m, n)]


def run_orgqr(solver, handle, dtype, qbuf, m, n, k, tau):
    lda = qbuf.shape[0]
    lw = lwork_of(solver, dtype, "orgqr", handle, m, n, k, p(qbuf), lda, p(tau))
    work = work_buf(dtype, lw)
    info = np.full(1, -7, np.int32)
    st = fn(solver, dtype, "orgqr")(handle, m, n, k, p(qbuf), lda, p(tau), p(work), lw, p(info))
    assert st == SUCCESS and info[0] == 0 and np.isnan(work).all()
    return qbuf[:m, :n].astype(np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(0, 0), (1, 1), (5, 3), (3, 5), (6, 6), (8, 2), (4, 0)])
def test_geqrf_orgqr(libs, handle, dtype, shape):
    solver, _ = libs
    m, n = shape
    k = min(m, n)
    a = rand(np.random.default_rng(m * 11 + n), m, n).astype(dtype)
    buf, tau = run_geqrf(solver, handle, dtype, a)
    ref, ref_tau = ref_geqr2(a)
    t = tol(dtype) * 10
    np.testing.assert_allclose(tau, ref_tau, rtol=t, atol=t)
    np.testing.assert_allclose(buf[:m], ref, rtol=t, atol=t)
    assert ((tau == 0) | ((tau >= 1 - t) & (tau <= 2 + t))).all()  # LAPACK: 1 <= tau <= 2
    if k > 0:  # numpy's mode="raw" is LAPACK dgeqrf itself (A transposed)
        h, lapack_tau = np.linalg.qr(a.astype(np.float64), mode="raw")
        np.testing.assert_allclose(buf[:m], h.T, rtol=t, atol=t)
        np.testing.assert_allclose(tau, lapack_tau, rtol=t, atol=t)
    R = np.triu(buf[:k].astype(np.float64))
    q_np, r_np = np.linalg.qr(a.astype(np.float64))
    signs = np.sign(np.diag(R)) * np.sign(np.diag(r_np))
    np.testing.assert_allclose(R, signs[:, None] * r_np, rtol=t, atol=t)
    # Q (m x k) from orgqr; columns past n of a wide input are not needed.
    qbuf = np.asfortranarray(buf[:, :k].copy())
    Q = run_orgqr(solver, handle, dtype, qbuf, m, k, k, tau)
    np.testing.assert_allclose(Q.T @ Q, np.eye(k), atol=t)
    np.testing.assert_allclose(Q @ R, a, rtol=t * 10, atol=t * 10)
    np.testing.assert_allclose(Q, q_np * signs[None, :], rtol=t, atol=t)
    if m > 0:
        assert np.isnan(qbuf[m:]).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_orgqr_more_columns_than_reflectors(libs, handle, dtype):
    solver, _ = libs
    m, n, k = 7, 5, 2
    a = rand(np.random.default_rng(9), m, k)
    buf, tau = run_geqrf(solver, handle, dtype, a.astype(dtype))
    qbuf = dev(np.zeros((m, n)), dtype)
    qbuf[:m, :k] = buf[:m, :k]
    qbuf[:m, k:] = 55.0  # ignored: these columns start as unit vectors
    Q = run_orgqr(solver, handle, dtype, qbuf, m, n, k, tau)
    full = reflector_product(buf[:m].astype(np.float64), tau.astype(np.float64), m)
    t = tol(dtype) * 10
    np.testing.assert_allclose(Q, full[:, :n], rtol=t, atol=t)
    np.testing.assert_allclose(Q.T @ Q, np.eye(n), atol=t)
    info, work = np.zeros(1, np.int32), work_buf(dtype, 1000)
    orgqr = fn(solver, dtype, "orgqr")
    assert orgqr(handle, 3, 5, 2, p(qbuf), 9, p(tau), p(work), 1000, p(info)) == INVALID  # n > m
    assert orgqr(handle, 7, 5, 6, p(qbuf), 9, p(tau), p(work), 1000, p(info)) == INVALID  # k > n


# ---- syevd ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("uplo", [LOWER, UPPER])
@pytest.mark.parametrize("jobz", [0, 1])
@pytest.mark.parametrize("n", [0, 1, 2, 5, 12])
def test_syevd(libs, handle, dtype, uplo, jobz, n):
    solver, _ = libs
    rng = np.random.default_rng(n + 100 * uplo)
    x = rand(rng, n, n)
    a = ((x + x.T) / 2).astype(dtype)
    if n == 5:  # a repeated eigenvalue
        q, _ = np.linalg.qr(x)
        a = (q @ np.diag([1.0, 1.0, 2.0, -3.0, 2.0]) @ q.T).astype(dtype)
    buf = dev(a, dtype)
    ones = np.ones((n, n), bool)
    other = np.triu(ones, 1) if uplo == LOWER else np.tril(ones, -1)
    buf[:n][other] = np.nan  # not read
    lda = buf.shape[0]
    w = np.full(n + 1, 77.0, dtype=dtype)
    lw = lwork_of(solver, dtype, "syevd", handle, jobz, uplo, n, p(buf), lda, p(w))
    work, info = work_buf(dtype, lw), np.full(1, -7, np.int32)
    st = fn(solver, dtype, "syevd")(handle, jobz, uplo, n, p(buf), lda, p(w), p(work), lw, p(info))
    assert st == SUCCESS and info[0] == 0 and np.isnan(work).all() and w[n] == 77.0
    ref = np.linalg.eigvalsh(a.astype(np.float64))
    t = tol(dtype) * 10
    np.testing.assert_allclose(w[:n], ref, rtol=t, atol=t)
    assert (np.diff(w[:n]) >= 0).all()
    if jobz == 1:
        V = buf[:n].astype(np.float64)
        np.testing.assert_allclose(V.T @ V, np.eye(n), atol=t)
        np.testing.assert_allclose(a @ V, V * w[:n], atol=t * 10)
    assert np.isnan(buf[n:]).all()
    assert fn(solver, dtype, "syevd")(handle, jobz, uplo, n, p(buf), n - 1, p(w), p(work), lw,
                                      p(info)) == INVALID


# ---- gesvd ------------------------------------------------------------------------------

def run_gesvd(solver, handle, dtype, a, jobu, jobvt):
    m, n = a.shape
    buf = dev(a, dtype)
    lw = lwork_of(solver, dtype, "gesvd", handle, m, n)
    ucols = m if jobu == "A" else n
    u = dev(np.zeros((m, ucols)), dtype, lda=m + 1)
    vt = dev(np.zeros((n, n)), dtype, lda=n + 1)
    u[:m] = np.nan
    vt[:n] = np.nan
    s = np.full(n + 1, 77.0, dtype=dtype)
    work, rwork = work_buf(dtype, lw), np.zeros(max(1, n), dtype)
    info = np.full(1, -7, np.int32)
    st = fn(solver, dtype, "gesvd")(handle, c_byte(ord(jobu)), c_byte(ord(jobvt)), m, n, p(buf),
                                    buf.shape[0], p(s), p(u), u.shape[0], p(vt), vt.shape[0],
                                    p(work), lw, p(rwork), p(info))
    assert st == SUCCESS and info[0] == 0 and np.isnan(work).all() and s[n] == 77.0
    assert np.isnan(u[m:]).all() and np.isnan(vt[n:]).all()
    return s[:n].astype(np.float64), u[:m].astype(np.float64), vt[:n].astype(np.float64)


def check_svd(a, s, U, VT, jobu, jobvt, t):
    m, n = a.shape
    a = a.astype(np.float64)
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=t, atol=t)
    assert (s >= 0).all() and (np.diff(s) <= 0).all()
    if jobu != "N":
        np.testing.assert_allclose(U.T @ U, np.eye(U.shape[1]), atol=t)
        # U[:, :n]^T A = diag(s) V^T, so its rows have norms s
        np.testing.assert_allclose(np.linalg.norm(U[:, :n].T @ a, axis=1), s, atol=t * 10)
    if jobvt != "N":
        np.testing.assert_allclose(VT @ VT.T, np.eye(n), atol=t)
        np.testing.assert_allclose(np.linalg.norm(a @ VT.T, axis=0), s, atol=t * 10)
    if jobu != "N" and jobvt != "N":
        np.testing.assert_allclose((U[:, :n] * s) @ VT, a, atol=t * 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(0, 0), (1, 1), (5, 3), (6, 6), (7, 1), (4, 0)])
def test_gesvd(libs, handle, dtype, shape):
    solver, _ = libs
    a = rand(np.random.default_rng(sum(shape)), *shape).astype(dtype)
    for jobu, jobvt in itertools.product("ASN", repeat=2):
        s, U, VT = run_gesvd(solver, handle, dtype, a, jobu, jobvt)
        check_svd(a, s, U, VT, jobu, jobvt, tol(dtype) * 10)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gesvd_rank_deficient(libs, handle, dtype):
    solver, _ = libs
    rng = np.random.default_rng(1)
    rank1 = np.outer(rand(rng, 6), rand(rng, 4))
    for a in (rank1, np.zeros((5, 3)), np.eye(4, 2)):
        a = a.astype(dtype)
        for jobu, jobvt in [("A", "A"), ("S", "S"), ("A", "N")]:
            s, U, VT = run_gesvd(solver, handle, dtype, a, jobu, jobvt)
            check_svd(a, s, U, VT, jobu, jobvt, tol(dtype) * 10)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gesvd_bad_args(libs, handle, dtype):
    solver, _ = libs
    buf = np.zeros(100, dtype)
    work, info = work_buf(dtype, 10000), np.zeros(1, np.int32)
    gesvd = fn(solver, dtype, "gesvd")

    def call(jobu, jobvt, m, n, lda, ldu, ldvt, lw=10000):
        return gesvd(handle, c_byte(ord(jobu)), c_byte(ord(jobvt)), m, n, p(buf), lda, p(buf),
                     p(buf), ldu, p(buf), ldvt, p(work), lw, None, p(info))

    assert call("A", "A", 3, 5, 3, 3, 5) == INVALID  # m < n is not supported
    assert call("O", "N", 5, 3, 5, 5, 3) == INVALID
    assert call("N", "O", 5, 3, 5, 5, 3) == INVALID
    assert call("A", "A", 5, 3, 4, 5, 3) == INVALID  # lda < m
    assert call("A", "A", 5, 3, 5, 4, 3) == INVALID  # ldu < m
    assert call("A", "A", 5, 3, 5, 5, 2) == INVALID  # ldvt < n
    assert call("A", "A", 5, 3, 5, 5, 3, lw=1) == INVALID
    assert call("N", "N", 5, 3, 5, 1, 1) == SUCCESS  # ldu/ldvt unused
    a = np.asfortranarray(rand(np.random.default_rng(2), 5, 3))
    s = np.zeros(3)
    # jobu = jobvt = 'N': U and VT are not referenced (NULL is fine)
    assert fn(solver, np.float64, "gesvd")(handle, c_byte(ord("N")), c_byte(ord("N")), 5, 3, p(a),
                                          5, p(s), None, 1, None, 1, p(work.astype(np.float64)),
                                          10000, None, p(info)) == SUCCESS
    np.testing.assert_allclose(s, np.linalg.svd(rand(np.random.default_rng(2), 5, 3),
                                                compute_uv=False), rtol=1e-12)


def test_handles(libs):
    solver, _ = libs
    h = c_void_p()
    assert solver.cusolverDnCreate(byref(h)) == SUCCESS
    assert solver.cusolverDnDestroy(h) == SUCCESS
    lw = c_int()
    assert solver.cusolverDnDpotrf_bufferSize(h, 0, 3, None, 3, byref(lw)) == NOT_INITIALIZED
    assert solver.cusolverDnDestroy(h) == NOT_INITIALIZED
    assert solver.cusolverDnSetStream(None, None) == NOT_INITIALIZED


# ---- trsm -------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("side,uplo,trans,diag",
                         list(itertools.product([0, 1], [0, 1], [0, 1, 2], [0, 1])))
def test_trsm(libs, dtype, side, uplo, trans, diag):
    _, blas = libs
    m, n = 5, 3
    k = m if side == 0 else n
    rng = np.random.default_rng(side * 8 + uplo * 4 + trans + diag)
    a = rand(rng, k, k) + 4 * np.eye(k)
    tri = np.tril(a) if uplo == 0 else np.triu(a)
    abuf = dev(a, dtype, lda=k + 2)
    unread = np.triu(np.ones((k, k), bool), 1) if uplo == 0 else np.tril(np.ones((k, k), bool), -1)
    if diag == 1:
        unread |= np.eye(k, dtype=bool)
        tri[np.diag_indices(k)] = 1.0
    abuf[:k][unread] = np.nan
    b = rand(rng, m, n).astype(dtype)
    bbuf = dev(b, dtype, lda=m + 1)
    alpha = np.array([-1.5], dtype=dtype)
    f = blas.cublasStrsm_v2 if dtype == np.float32 else blas.cublasDtrsm_v2
    st = f(None, side, uplo, trans, diag, m, n, p(alpha), p(abuf), abuf.shape[0], p(bbuf),
           bbuf.shape[0])
    assert st == 0
    op = tri.astype(dtype).astype(np.float64)
    op = op if trans == 0 else op.T
    rhs = -1.5 * b.astype(np.float64)
    x = np.linalg.solve(op, rhs) if side == 0 else np.linalg.solve(op.T, rhs.T).T
    np.testing.assert_allclose(bbuf[:m], x, rtol=tol(dtype) * 10, atol=tol(dtype) * 10)
    assert np.isnan(bbuf[m:]).all()
    args = (None, side, uplo, trans, diag, m, n, p(alpha), p(abuf))
    assert f(*args, k - 1, p(bbuf), m + 1) == CUBLAS_INVALID
    assert f(*args, k + 2, p(bbuf), m - 1) == CUBLAS_INVALID
    assert f(None, side, uplo, trans, diag, 0, n, p(alpha), p(abuf), k + 2, p(bbuf), 1) == 0


def test_trsm_alpha_zero_and_zero_diagonal(libs):
    _, blas = libs
    a = np.asfortranarray(np.array([[0.0, 0.0], [1.0, 2.0]]))
    b = np.asfortranarray(np.array([[np.nan, 1.0], [2.0, 3.0]]))
    zero, one = np.zeros(1), np.ones(1)
    assert blas.cublasDtrsm_v2(None, 0, 0, 0, 0, 2, 2, p(zero), p(a), 2, p(b), 2) == 0
    np.testing.assert_array_equal(b, 0.0)  # B = 0 without reading B or A
    b[:] = [[1.0, 0.0], [2.0, 3.0]]
    assert blas.cublasDtrsm_v2(None, 0, 0, 0, 0, 2, 2, p(one), p(a), 2, p(b), 2) == 0
    assert np.isinf(b[0, 0]) and not np.isfinite(b[:, 1]).all()  # IEEE division, no error


@pytest.mark.parametrize("dtype", DTYPES)
def test_geqrf_zero_columns_below_diagonal(libs, handle, dtype):
    solver, _ = libs
    a = np.triu(rand(np.random.default_rng(4), 5, 3)) * np.array([1.0, -1.0, 1.0])
    a[3, 2] = 0.25  # only the last column has something below its diagonal
    buf, tau = run_geqrf(solver, handle, dtype, a.astype(dtype))
    h, lapack_tau = np.linalg.qr(a, mode="raw")
    assert tau[0] == 0 and tau[1] == 0 and tau[2] != 0  # dlarfg: H = I when x is already zero
    np.testing.assert_allclose(tau, lapack_tau, rtol=tol(dtype))
    np.testing.assert_allclose(buf[:5], h.T, rtol=tol(dtype), atol=tol(dtype))


# ---- syevjBatched / gesvdjBatched -------------------------------------------------------

def jacobi_info(solver, kind, tol=None, sweeps=None):
    """A fresh syevjInfo_t / gesvdjInfo_t (kind "Syevj" / "Gesvdj") with optional settings."""
    q = c_void_p()
    assert getattr(solver, f"cusolverDnCreate{kind}Info")(byref(q)) == SUCCESS
    x = kind.lower()
    if tol is not None:
        assert getattr(solver, f"cusolverDnX{x}SetTolerance")(q, c_double(tol)) == SUCCESS
    if sweeps is not None:
        assert getattr(solver, f"cusolverDnX{x}SetMaxSweeps")(q, sweeps) == SUCCESS
    assert getattr(solver, f"cusolverDnX{x}SetSortEig")(q, 1) == SUCCESS
    return q


@pytest.fixture(scope="module")
def jparams(libs):
    solver = libs[0]
    q = {k: jacobi_info(solver, k) for k in ("Syevj", "Gesvdj")}
    yield q
    for k, v in q.items():
        assert getattr(solver, f"cusolverDnDestroy{k}Info")(v) == SUCCESS


def batch_buf(mats, dtype, ld, cols):
    """Matrices (rows x cols each) in one buffer, matrix i at offset i*ld*cols, column-major,
    padding rows NaN. Returns the buffer (batch, cols, ld) and a view getter."""
    buf = np.full((max(1, len(mats)), cols, ld), np.nan, dtype=dtype)
    for i, a in enumerate(mats):
        buf[i].T[:a.shape[0]] = a
    return buf


def sym_batch(rng, n, batch):
    """Symmetric test matrices: random, repeated eigenvalues, rank-deficient, zero."""
    mats = []
    for i in range(batch):
        x = rand(rng, n, n)
        if i % 4 == 1:
            q, _ = np.linalg.qr(x)
            a = q @ np.diag(np.round(rand(rng, n))) @ q.T  # many repeated eigenvalues
        elif i % 4 == 2:
            y = x[:, :max(1, n // 3)]
            a = y @ y.T  # rank n // 3
        elif i % 4 == 3 and i > 30:
            a = np.zeros((n, n))
        else:
            a = (x + x.T) / 2
        mats.append(a)
    return mats


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("uplo", [LOWER, UPPER])
@pytest.mark.parametrize("jobz", [0, 1])
@pytest.mark.parametrize("n", [1, 3, 32])
@pytest.mark.parametrize("batch", [0, 1, 40])
def test_syevj_batched(libs, handle, jparams, dtype, uplo, jobz, n, batch):
    solver, _ = libs
    rng = np.random.default_rng(n * 7 + batch + 3 * uplo)
    mats = [a.astype(dtype) for a in sym_batch(rng, n, batch)]
    lda = n + PAD
    buf = batch_buf(mats, dtype, lda, n)
    ones = np.ones((n, n), bool)
    other = np.triu(ones, 1) if uplo == LOWER else np.tril(ones, -1)
    for i in range(batch):
        buf[i].T[:n][other] = np.nan  # not read
    w = np.full(batch * n + 1, 77.0, dtype=dtype)
    q = jparams["Syevj"]
    lw = c_int(-1)  # (params and batchSize come after lwork: not lwork_of)
    assert fn(solver, dtype, "syevjBatched_bufferSize")(handle, jobz, uplo, n, p(buf), lda, p(w),
                                                        byref(lw), q, batch) == SUCCESS
    assert lw.value >= 1
    lw = lw.value
    work, info = work_buf(dtype, lw), np.full(batch + 1, -7, np.int32)
    st = fn(solver, dtype, "syevjBatched")(handle, jobz, uplo, n, p(buf), lda, p(w), p(work), lw,
                                           p(info), q, batch)
    assert st == SUCCESS and np.isnan(work).all() and w[batch * n] == 77.0
    assert (info[:batch] == 0).all() and info[batch] == -7
    t = tol(dtype) * 10
    for i, a in enumerate(mats):
        a = a.astype(np.float64)
        wi = w[i * n:(i + 1) * n].astype(np.float64)
        scale = max(1.0, np.abs(a).max())
        np.testing.assert_allclose(wi, np.linalg.eigvalsh(a), atol=t * scale)
        assert (np.diff(wi) >= 0).all()
        got = buf[i].T
        assert np.isnan(got[n:]).all()  # padding neither read nor written
        if jobz == 1:
            V = got[:n].astype(np.float64)
            np.testing.assert_allclose(V.T @ V, np.eye(n), atol=t)
            np.testing.assert_allclose(a @ V, V * wi, atol=t * 10 * scale)
        else:
            assert np.isnan(got[:n]).all()  # read triangle destroyed, the other was NaN


def svd_batch(rng, m, n, batch):
    mats = []
    for i in range(batch):
        a = rand(rng, m, n)
        if i % 4 == 1:
            a = np.outer(rand(rng, m), rand(rng, n))  # rank 1
        elif i % 4 == 2:
            k = max(1, min(m, n) // 2)
            a = rand(rng, m, k) @ rand(rng, k, n)  # rank min(m, n) // 2
        elif i % 4 == 3 and i > 30:
            a = np.zeros((m, n))
        mats.append(a)
    return mats


def gesvdj_lwork(solver, dtype, handle, jobz, m, n, a, lda, s, u, ldu, v, ldv, q, batch):
    lw = c_int(-1)
    assert fn(solver, dtype, "gesvdjBatched_bufferSize")(
        handle, jobz, m, n, p(a), lda, p(s), p(u), ldu, p(v), ldv, byref(lw), q, batch) == SUCCESS
    assert lw.value >= 1
    return lw.value


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("jobz", [0, 1])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (32, 32), (1, 7)])
@pytest.mark.parametrize("batch", [0, 1, 40])
def test_gesvdj_batched(libs, handle, jparams, dtype, jobz, shape, batch):
    solver, _ = libs
    m, n = shape
    k = min(m, n)
    rng = np.random.default_rng(m * 13 + n + batch)
    mats = [a.astype(dtype) for a in svd_batch(rng, m, n, batch)]
    lda, ldu, ldv = m + PAD, m + 1, n + 3
    a_buf = batch_buf(mats, dtype, lda, n)
    u = np.full((max(1, batch), m, ldu), np.nan, dtype) if jobz else None
    v = np.full((max(1, batch), n, ldv), np.nan, dtype) if jobz else None
    if not jobz:
        ldu = ldv = 1  # not referenced
    s = np.full(batch * k + 1, 77.0, dtype=dtype)
    q = jparams["Gesvdj"]
    lw = gesvdj_lwork(solver, dtype, handle, jobz, m, n, a_buf, lda, s, u, ldu, v, ldv, q, batch)
    work, info = work_buf(dtype, lw), np.full(batch + 1, -7, np.int32)
    st = fn(solver, dtype, "gesvdjBatched")(handle, jobz, m, n, p(a_buf), lda, p(s), p(u), ldu,
                                            p(v), ldv, p(work), lw, p(info), q, batch)
    assert st == SUCCESS and np.isnan(work).all() and s[batch * k] == 77.0
    assert (info[:batch] == 0).all() and info[batch] == -7
    t = tol(dtype) * 10
    for i, a in enumerate(mats):
        a = a.astype(np.float64)
        si = s[i * k:(i + 1) * k].astype(np.float64)
        scale = max(1.0, np.abs(a).max())
        np.testing.assert_allclose(si, np.linalg.svd(a, compute_uv=False), atol=t * scale)
        assert (si >= 0).all() and (np.diff(si) <= 0).all()
        assert np.isnan(a_buf[i].T).all()  # A destroyed, padding stays NaN
        if jobz:
            U, V = u[i].T, v[i].T
            assert np.isnan(U[m:]).all() and np.isnan(V[n:]).all()
            U, V = U[:m].astype(np.float64), V[:n].astype(np.float64)
            np.testing.assert_allclose(U.T @ U, np.eye(m), atol=t)
            np.testing.assert_allclose(V.T @ V, np.eye(n), atol=t)
            np.testing.assert_allclose((U[:, :k] * si) @ V[:, :k].T, a, atol=t * 10 * scale)


@pytest.mark.parametrize("dtype", DTYPES)
def test_jacobi_batched_not_converged(libs, handle, dtype):
    solver, _ = libs
    n = 32
    rng = np.random.default_rng(8)
    x = rand(rng, n, n)
    mats = [(x + x.T) / 2, np.diag(np.arange(n, dtype=np.float64)), x.T @ x]
    one = jacobi_info(solver, "Syevj", sweeps=1)
    loose = jacobi_info(solver, "Syevj", tol=1e-2, sweeps=6)  # 5 needed
    for q, want in [(one, [n + 1, 0, n + 1]), (loose, [0, 0, 0])]:
        buf = batch_buf([m.astype(dtype) for m in mats], dtype, n, n)
        w = np.zeros(3 * n, dtype)
        lw = c_int()
        assert fn(solver, dtype, "syevjBatched_bufferSize")(handle, 1, LOWER, n, p(buf), n, p(w),
                                                            byref(lw), q, 3) == SUCCESS
        work, info = work_buf(dtype, lw.value), np.full(3, -7, np.int32)
        assert fn(solver, dtype, "syevjBatched")(handle, 1, LOWER, n, p(buf), n, p(w), p(work),
                                                 lw.value, p(info), q, 3) == SUCCESS
        assert list(info) == want
        np.testing.assert_array_equal(w[n:2 * n], np.arange(n))  # already diagonal
    perm = np.eye(n)[rng.permutation(n)] * (1.0 + np.arange(n))  # exactly orthogonal columns
    mats = [x, np.diag(np.arange(n, dtype=np.float64)), perm]
    one = jacobi_info(solver, "Gesvdj", sweeps=1)
    for jobz in (0, 1):
        buf = batch_buf([m.astype(dtype) for m in mats], dtype, n, n)
        s, u, v = np.zeros(3 * n, dtype), np.zeros(3 * n * n, dtype), np.zeros(3 * n * n, dtype)
        lw = gesvdj_lwork(solver, dtype, handle, jobz, n, n, buf, n, s, u, n, v, n, one, 3)
        work, info = work_buf(dtype, lw), np.full(3, -7, np.int32)
        assert fn(solver, dtype, "gesvdjBatched")(handle, jobz, n, n, p(buf), n, p(s), p(u), n,
                                                  p(v), n, p(work), lw, p(info), one, 3) == SUCCESS
        assert list(info) == [n + 1, 0, 0]  # orthogonal columns need no rotation
        np.testing.assert_array_equal(s[n:2 * n], np.arange(n)[::-1])


@pytest.mark.parametrize("dtype", DTYPES)
def test_jacobi_batched_bad_args(libs, handle, jparams, dtype):
    solver, _ = libs
    qs, qg = jparams["Syevj"], jparams["Gesvdj"]
    buf = np.zeros(40 * 40 * 3, dtype)
    work, info = work_buf(dtype, 1 << 16), np.zeros(3, np.int32)
    lw = c_int()
    syevj, sbuf = fn(solver, dtype, "syevjBatched"), fn(solver, dtype, "syevjBatched_bufferSize")

    def ev(n, lda, q, batch=2, lwork=1 << 16, uplo=LOWER, jobz=1, h=handle):
        st = syevj(h, jobz, uplo, n, p(buf), lda, p(buf), p(work), lwork, p(info), q, batch)
        bst = sbuf(h, jobz, uplo, n, p(buf), lda, p(buf), byref(lw), q, batch)
        assert bst == st or st == INVALID  # bufferSize does not see lwork
        return st

    assert ev(32, 32, qs) == SUCCESS
    assert ev(33, 33, qs) == INVALID  # n <= 32 only
    assert ev(5, 4, qs) == INVALID  # lda < n
    assert ev(0, 0, qs) == INVALID  # lda < 1
    assert ev(5, 5, None) == INVALID
    assert ev(5, 5, qg) == INVALID  # a gesvdjInfo_t is not a syevjInfo_t
    assert ev(5, 5, qs, batch=-1) == INVALID
    assert ev(5, 5, qs, uplo=2) == INVALID
    assert ev(5, 5, qs, jobz=2) == INVALID
    assert ev(5, 5, qs, h=None) == NOT_INITIALIZED
    assert sbuf(handle, 1, LOWER, 5, p(buf), 5, p(buf), byref(lw), qs, 2) == SUCCESS
    assert ev(5, 5, qs, lwork=lw.value - 1) == INVALID
    gesvdj = fn(solver, dtype, "gesvdjBatched")
    gbuf = fn(solver, dtype, "gesvdjBatched_bufferSize")

    def sv(m, n, lda, ldu, ldv, q, batch=2, lwork=1 << 16, jobz=1, h=handle):
        st = gesvdj(h, jobz, m, n, p(buf), lda, p(buf), p(buf), ldu, p(buf), ldv, p(work), lwork,
                    p(info), q, batch)
        bst = gbuf(h, jobz, m, n, p(buf), lda, p(buf), p(buf), ldu, p(buf), ldv, byref(lw), q,
                   batch)
        assert bst == st or st == INVALID
        return st

    assert sv(32, 32, 32, 32, 32, qg) == SUCCESS
    assert sv(33, 3, 33, 33, 3, qg) == INVALID
    assert sv(3, 33, 3, 3, 33, qg) == INVALID
    assert sv(5, 3, 4, 5, 3, qg) == INVALID  # lda < m
    assert sv(5, 3, 5, 4, 3, qg) == INVALID  # ldu < m
    assert sv(5, 3, 5, 5, 2, qg) == INVALID  # ldv < n
    assert sv(5, 3, 5, 1, 1, qg, jobz=0) == SUCCESS  # U, V not referenced
    assert sv(5, 3, 5, 5, 3, None) == INVALID
    assert sv(5, 3, 5, 5, 3, qs) == INVALID
    assert sv(5, 3, 5, 5, 3, qg, batch=-1) == INVALID
    assert sv(5, 3, 5, 5, 3, qg, h=None) == NOT_INITIALIZED
    assert gbuf(handle, 1, 5, 3, p(buf), 5, p(buf), p(buf), 5, p(buf), 3, byref(lw), qg,
                2) == SUCCESS
    assert sv(5, 3, 5, 5, 3, qg, lwork=lw.value - 1) == INVALID


def test_jacobi_info_objects(libs):
    solver = libs[0]
    for kind in ("Syevj", "Gesvdj"):
        x = kind.lower()
        q = jacobi_info(solver, kind, tol=1e-6, sweeps=7)
        assert getattr(solver, f"cusolverDnX{x}SetMaxSweeps")(q, 0) == INVALID
        assert getattr(solver, f"cusolverDnX{x}SetTolerance")(q, c_double(-1.0)) == INVALID
        assert getattr(solver, f"cusolverDnX{x}SetSortEig")(None, 1) == INVALID
        assert getattr(solver, f"cusolverDnDestroy{kind}Info")(q) == SUCCESS
        assert getattr(solver, f"cusolverDnDestroy{kind}Info")(q) == INVALID
        assert getattr(solver, f"cusolverDnX{x}SetMaxSweeps")(q, 5) == INVALID
        assert getattr(solver, f"cusolverDnCreate{kind}Info")(None) == INVALID
