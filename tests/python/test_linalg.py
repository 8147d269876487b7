"""Products (matmul family, einsum, tensordot, kron, trace, cross) and ferrotorch.linalg,
checked against NumPy."""

import ferrotorch as torch
import numpy as np
import pytest

rng = np.random.default_rng(1234)

FLOAT_TOL = {np.float32: {"rtol": 1e-4, "atol": 1e-4}, np.float64: {"rtol": 1e-10, "atol": 1e-10}}


def rand(*shape, dtype=np.float64):
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-5, 6, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def T(a):
    """A ferrotorch tensor sharing `a`'s memory (keeps `a`'s strides)."""
    return torch.from_numpy(a)


def check(t, want, dtype=None):
    got = t.numpy()
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    dt = np.dtype(dtype or want.dtype).type
    if np.issubdtype(dt, np.integer) or dt is np.bool_:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, **FLOAT_TOL.get(dt, {"rtol": 1e-2, "atol": 1e-2}))


# ------------------------------------------------------------------------------- matmul

MATMUL_SHAPES = [
    ((3,), (3,)),
    ((2, 3), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3, 4)),
    ((5, 2, 3), (3, 4)),
    ((2, 3), (5, 3, 4)),
    ((2, 1, 2, 3), (3, 3, 4)),
    ((3,), (2, 3, 4)),
    ((2, 3, 4), (4,)),
    ((1, 2, 3), (4, 3, 2)),
    ((2, 0, 3), (3, 4)),
    ((2, 3, 0), (0, 4)),
    ((4, 0), (0, 5)),
    ((0,), (0,)),
    ((3, 1), (1, 3)),
]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32])
def test_matmul_shapes_dtypes(sa, sb, dtype):
    a, b = rand(*sa, dtype=dtype), rand(*sb, dtype=dtype)
    want = np.matmul(a, b)
    check(T(a) @ T(b), want)
    check(torch.matmul(T(a), T(b)), want)
    check(T(a).matmul(T(b)), want)


def _random_view(shape, dtype):
    """An array of `shape` that is, at random, contiguous, transposed in its last two dims,
    or a stepped slice of a larger array."""
    kind = rng.integers(3)
    if kind == 1 and len(shape) >= 2:
        return np.swapaxes(rand(*shape[:-2], shape[-1], shape[-2], dtype=dtype), -1, -2)
    if kind == 2 and len(shape) >= 1:
        return rand(*shape[:-1], 2 * shape[-1], dtype=dtype)[..., ::2]
    return rand(*shape, dtype=dtype)


@pytest.mark.parametrize("seed", range(40))
def test_matmul_random_shapes_and_strides(seed):
    r = np.random.default_rng(seed)
    m, k, n = (int(x) for x in r.integers(0, 7, size=3))
    nb = int(r.integers(0, 3))
    batch = [int(x) for x in r.integers(1, 4, size=nb)]
    ba = [b if r.random() < 0.7 else 1 for b in batch][int(r.integers(0, nb + 1)):]
    bb = [b if r.random() < 0.7 else 1 for b in batch][int(r.integers(0, nb + 1)):]
    sa = ba + [m, k] if r.random() < 0.85 else [k]
    sb = bb + [k, n] if r.random() < 0.85 else [k]
    dtype = [np.float32, np.float64, np.int64][seed % 3]
    a, b = _random_view(tuple(sa), dtype), _random_view(tuple(sb), dtype)
    check(T(a) @ T(b), np.matmul(a, b))


def test_matmul_k_zero_gives_zeros():
    r = T(np.ones((3, 0))) @ T(np.ones((0, 4)))
    np.testing.assert_array_equal(r.numpy(), np.zeros((3, 4)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16, np.int8, np.uint8])
def test_matmul_noncontiguous(dtype):
    a = rand(4, 3, dtype=dtype).T  # (3, 4) transposed view
    b = rand(10, 5, dtype=dtype)[::2]  # (5, 5) stepped rows
    b = b[:4]
    want = a @ b
    ta, tb = T(a), T(b)
    assert not ta.is_contiguous() and not tb.is_contiguous()
    check(ta @ tb, want)
    # Batched with permuted batch dims and a transposed matrix operand.
    x = np.transpose(rand(3, 2, 4, dtype=dtype), (1, 0, 2))  # (2, 3, 4)
    y = np.transpose(rand(2, 5, 4, dtype=dtype), (0, 2, 1))  # (2, 4, 5)
    check(T(x) @ T(y), np.matmul(x, y))
    # Broadcast (stride-0) operand.
    z = np.broadcast_to(rand(4, 5, dtype=dtype), (2, 4, 5))
    check(T(x) @ T(z), np.matmul(x, z))
    w = np.swapaxes(rand(2, 3, 5, dtype=dtype), 1, 2)  # (2, 5, 3)
    check(T(z) @ T(w), np.matmul(z, w))


def test_matmul_larger_sizes_threaded_paths():
    a, b = rand(130, 70, dtype=np.float32), rand(70, 90, dtype=np.float32)
    check(T(a) @ T(b), a @ b)
    a, b = rand(64, 8, 8), rand(64, 8, 8)  # many small matrices: parallel over batch
    check(T(a) @ T(b), a @ b)
    ai, bi = rand(70, 70, dtype=np.int64), rand(70, 70, dtype=np.int64)
    check(T(ai) @ T(bi), ai @ bi)
    # Folded (B*m, k) @ (k, n) path with a non-foldable (permuted) lhs for comparison.
    x = rand(4, 6, 5)
    w = rand(5, 3)
    check(T(x) @ T(w), x @ w)
    xp = np.transpose(rand(6, 4, 5), (1, 0, 2))
    check(T(xp) @ T(w), xp @ w)


def test_matmul_half_and_bfloat16():
    a, b = rand(5, 7, dtype=np.float16), rand(7, 3, dtype=np.float16)
    r = T(a) @ T(b)
    assert r.dtype == torch.float16
    np.testing.assert_allclose(
        r.numpy().astype(np.float32), a.astype(np.float32) @ b.astype(np.float32), rtol=1e-2, atol=2e-2
    )
    a32, b32 = rand(4, 6, dtype=np.float32), rand(6, 2, dtype=np.float32)
    rb = T(a32).bfloat16() @ T(b32).bfloat16()
    assert rb.dtype == torch.bfloat16
    np.testing.assert_allclose(rb.float().numpy(), a32 @ b32, rtol=5e-2, atol=5e-2)


def test_matmul_errors():
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"):
        T(rand(2, 3)) @ T(rand(4, 5))
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but got: float != double"):
        T(rand(2, 3, dtype=np.float32)) @ T(rand(3, 2))
    with pytest.raises(RuntimeError, match="both arguments to matmul need to be at least 1D"):
        torch.tensor(1.0) @ T(rand(2, 2))
    with pytest.raises(RuntimeError, match="inconsistent tensor size"):
        T(rand(3)) @ T(rand(4))
    with pytest.raises(RuntimeError, match="size mismatch"):
        T(rand(2, 3)) @ T(rand(4))
    with pytest.raises(RuntimeError, match="Expected size for first two dimensions of batch2"):
        T(rand(2, 3, 4)) @ T(rand(2, 5, 6))
    with pytest.raises(RuntimeError, match="must match the size"):
        T(rand(2, 3, 4)) @ T(rand(3, 4, 6))
    with pytest.raises(RuntimeError, match="not implemented for 'Bool'"):
        torch.tensor([[True]]) @ torch.tensor([[True]])
    with pytest.raises(TypeError):
        T(rand(2, 2)).matmul([[1.0, 2.0], [3.0, 4.0]])


def test_matmul_with_arrays_and_lists():
    a = rand(2, 2, dtype=np.float32)
    check(T(a) @ a, a @ a)
    check(a.tolist() @ T(a), a @ a)


# ------------------------------------------------------------------------------- mm family


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_mm_bmm_mv_dot(dtype):
    a, b = rand(3, 4, dtype=dtype), rand(4, 2, dtype=dtype)
    check(torch.mm(T(a), T(b)), a @ b)
    check(T(a).mm(T(b)), a @ b)
    x, y = rand(5, 3, 4, dtype=dtype), rand(5, 4, 2, dtype=dtype)
    check(torch.bmm(T(x), T(y)), np.matmul(x, y))
    v = rand(4, dtype=dtype)
    check(torch.mv(T(a), T(v)), a @ v)
    u, w = rand(6, dtype=dtype), rand(6, dtype=dtype)
    check(torch.dot(T(u), T(w)), np.dot(u, w))
    check(torch.vdot(T(u), T(w)), np.vdot(u, w))
    c = rand(2, 4, dtype=dtype)
    check(torch.inner(T(a), T(c)), np.inner(a, c))


def test_inner_outer_ger():
    a, b = rand(3, 4), rand(2, 5, 4)
    check(torch.inner(T(a), T(b)), np.inner(a, b))
    check(torch.inner(torch.tensor(2.0, dtype=torch.float64), T(a)), 2.0 * a)
    u, v = rand(3), rand(4)
    check(torch.outer(T(u), T(v)), np.outer(u, v))
    check(T(u).ger(T(v)), np.outer(u, v))
    # outer promotes like mul.
    r = torch.outer(torch.tensor([1, 2]), torch.tensor([0.5, 1.0]))
    assert r.dtype == torch.float32
    with pytest.raises(RuntimeError, match="inner\\(\\) the last dimension must match"):
        torch.inner(T(rand(2, 3)), T(rand(2, 4)))
    with pytest.raises(RuntimeError, match="outer: Expected 1-D argument"):
        torch.outer(T(rand(2, 2)), T(u))


def test_addmm_baddbmm_addmv():
    inp, m1, m2 = rand(4), rand(3, 5), rand(5, 4)
    check(torch.addmm(T(inp), T(m1), T(m2)), inp + m1 @ m2)
    check(torch.addmm(T(inp), T(m1), T(m2), beta=0.5, alpha=2.0), 0.5 * inp + 2.0 * (m1 @ m2))
    check(T(rand(3, 4)).addmm(T(m1.T.copy().T), T(m2), beta=0), m1 @ m2)
    # beta=0 ignores NaN in input.
    nan = np.full((3, 4), np.nan)
    check(torch.addmm(T(nan), T(m1), T(m2), beta=0), m1 @ m2)
    b1, b2, bi = rand(2, 3, 5), rand(2, 5, 4), rand(3, 1)
    check(torch.baddbmm(T(bi), T(b1), T(b2), beta=2, alpha=-1), 2 * bi - np.matmul(b1, b2))
    mv_in, mat, vec = rand(3), rand(3, 5), rand(5)
    check(torch.addmv(T(mv_in), T(mat), T(vec), alpha=3), mv_in + 3 * (mat @ vec))
    # Integer tensors with integer scalars; float scalars rejected.
    ii, ia, ib = rand(2, 2, dtype=np.int64), rand(2, 3, dtype=np.int64), rand(3, 2, dtype=np.int64)
    check(torch.addmm(T(ii), T(ia), T(ib), beta=2, alpha=3), 2 * ii + 3 * (ia @ ib))
    with pytest.raises(RuntimeError, match="must not be a floating point number"):
        torch.addmm(T(ii), T(ia), T(ib), alpha=0.5)
    with pytest.raises(RuntimeError, match="expand|must match"):
        torch.addmm(T(rand(5)), T(m1), T(m2))
    # k == 0: beta * input.
    check(torch.addmm(T(np.ones((2, 2))), T(np.ones((2, 0))), T(np.ones((0, 2))), beta=3), np.full((2, 2), 3.0))


def test_mm_family_errors():
    with pytest.raises(RuntimeError, match="self must be a matrix"):
        torch.mm(T(rand(3)), T(rand(3, 3)))
    with pytest.raises(RuntimeError, match="batch1 must be a 3D tensor"):
        torch.bmm(T(rand(3, 3)), T(rand(3, 3, 3)))
    with pytest.raises(RuntimeError, match="Expected size for first two dimensions of batch2 tensor to be: \\[2, 4\\] but got: \\[3, 4\\]"):
        torch.bmm(T(rand(2, 3, 4)), T(rand(3, 4, 5)))
    with pytest.raises(RuntimeError, match="1D tensors expected, but got 2D and 1D tensors"):
        torch.dot(T(rand(2, 2)), T(rand(2)))
    with pytest.raises(RuntimeError, match="dot : expected both vectors to have same dtype, but found Float and Double"):
        torch.dot(T(rand(2, dtype=np.float32)), T(rand(2)))
    with pytest.raises(RuntimeError, match="vector \\+ matrix @ vector expected"):
        torch.mv(T(rand(2, 2)), T(rand(2, 2)))


# ------------------------------------------------------------------------------- einsum

EINSUM_CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("ji", [(3, 4)]),
    ("ij->ji", [(3, 4)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("ij->", [(3, 4)]),
    ("ij->j", [(3, 4)]),
    ("i,i", [(5,), (5,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,j", [(3,), (4,)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("...ij,...jk", [(2, 3, 4), (4, 2)]),
    ("ijk,ikl->jl", [(2, 3, 4), (2, 4, 5)]),
    ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("ij,ij->", [(3, 4), (3, 4)]),
    ("iij->j", [(3, 3, 2)]),
    ("iji->j", [(3, 2, 3)]),
    ("abc,cd,de->abe", [(2, 3, 4), (4, 5), (5, 2)]),
    ("i,i,i->", [(4,), (4,), (4,)]),
    ("...i->...", [(2, 3, 4)]),
    ("...,...->...", [(2, 3), (3,)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("ij,kl->ijkl", [(2, 3), (4, 1)]),
    ("ab,ab,ab->a", [(3, 2), (3, 2), (3, 2)]),
    ("ij,jk->ik", [(3, 0), (0, 2)]),
    ("ij,jk->ik", [(0, 3), (3, 2)]),
    ("i,->i", [(3,), ()]),
    ("Ab,bC->AC", [(2, 3), (3, 4)]),
    ("ij,i->j", [(3, 4), (1,)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM_CASES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_einsum_vs_numpy(eq, shapes, dtype):
    ops = [rand(*s, dtype=dtype) for s in shapes]
    if eq == "ij,i->j":
        want = np.einsum("ij,i->j", ops[0], np.broadcast_to(ops[1], (3,)))
    else:
        want = np.einsum(eq, *ops)
    check(torch.einsum(eq, *[T(o) for o in ops]), want)


def test_einsum_int_list_noncontiguous_and_spaces():
    a, b = rand(4, 3, dtype=np.int64).T, rand(4, 5, dtype=np.int64)
    check(torch.einsum("ij, jk -> ik", [T(a), T(b)]), np.einsum("ij,jk->ik", a, b))
    x = rand(5, 5)[::2, ::2]
    check(torch.einsum("ii->i", T(x)), np.einsum("ii->i", x))
    # A pure permutation returns a view of the input.
    y = T(rand(2, 3))
    assert torch.einsum("ij->ji", y).storage_offset() == 0


def test_einsum_errors():
    a = T(rand(2, 3))
    with pytest.raises(RuntimeError, match="more operands were provided"):
        torch.einsum("ij", a, a)
    with pytest.raises(RuntimeError, match="fewer operands"):
        torch.einsum("ij,jk", a)
    with pytest.raises(RuntimeError, match="invalid subscript"):
        torch.einsum("i1", a)
    with pytest.raises(RuntimeError, match="does not match the number of dimensions"):
        torch.einsum("ijk", a)
    with pytest.raises(RuntimeError, match="does not appear in the equation"):
        torch.einsum("ij->k", a)
    with pytest.raises(RuntimeError, match="appears more than once in the output"):
        torch.einsum("ij->ii", a)
    with pytest.raises(RuntimeError, match="repeated for operand 0 but the sizes don't match"):
        torch.einsum("ii", a)
    with pytest.raises(RuntimeError, match="broadcast"):
        torch.einsum("ij,ij", a, T(rand(2, 4)))
    with pytest.raises(RuntimeError, match="not part of any ellipsis"):
        torch.einsum("..ij", a)
    with pytest.raises(RuntimeError, match="same dtype"):
        torch.einsum("ij,jk", a, T(rand(3, 2, dtype=np.float32)))


# ------------------------------------------------------------------------------- tensordot, kron, trace, cross


def test_tensordot():
    a, b = rand(3, 4, 5), rand(4, 5, 6)
    check(torch.tensordot(T(a), T(b), dims=2), np.tensordot(a, b, axes=2))
    check(torch.tensordot(T(a), T(b), dims=0), np.tensordot(a, b, axes=0))
    c = rand(5, 3, 2)
    check(torch.tensordot(T(a), T(c), dims=([0, 2], [1, 0])), np.tensordot(a, c, axes=([0, 2], [1, 0])))
    check(torch.tensordot(T(a), T(c), dims=([-1], [0])), np.tensordot(a, c, axes=([2], [0])))
    with pytest.raises(RuntimeError, match="contracted dimensions need to match"):
        torch.tensordot(T(a), T(c), dims=([0], [0]))


@pytest.mark.parametrize("sa,sb", [((2, 3), (4, 5)), ((3,), (2, 2)), ((2, 1, 3), (3, 2)), ((), (3,))])
def test_kron(sa, sb):
    a, b = rand(*sa), rand(*sb)
    check(torch.kron(T(np.asarray(a)), T(b)), np.kron(a, b))


def test_trace():
    a = rand(3, 5)
    check(torch.trace(T(a)), np.trace(a))
    check(torch.trace(T(a.T)), np.trace(a.T))
    ai = rand(4, 4, dtype=np.int32)
    r = torch.trace(T(ai))
    assert r.dtype == torch.int64 and r.item() == np.trace(ai)
    h = rand(3, 3, dtype=np.float16)
    assert torch.trace(T(h)).dtype == torch.float16
    with pytest.raises(RuntimeError, match="trace: expected a matrix"):
        torch.trace(T(rand(2, 2, 2)))


def test_cross():
    a, b = rand(4, 3), rand(4, 3)
    check(torch.cross(T(a), T(b), dim=1), np.cross(a, b))
    check(torch.linalg.cross(T(a), T(b)), np.cross(a, b))
    # Default dim: the first dim of size 3.
    x, y = rand(3, 5), rand(3, 5)
    check(torch.cross(T(x), T(y)), np.cross(x, y, axis=0))
    # Broadcasting and integers.
    p, q = rand(2, 1, 3, dtype=np.int64), rand(1, 4, 3, dtype=np.int64)
    check(torch.linalg.cross(T(p), T(q)), np.cross(p, q))
    with pytest.raises(RuntimeError, match="must have length 3"):
        torch.linalg.cross(T(rand(2, 4)), T(rand(2, 4)))
    with pytest.raises(RuntimeError, match="must have length 3"):
        torch.linalg.cross(torch.tensor(1.0), torch.tensor(2.0))
    with pytest.raises(RuntimeError, match="no dimension of size 3"):
        torch.cross(T(rand(2, 4)), T(rand(2, 4)))
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        torch.linalg.cross(T(rand(2, 3)), T(rand(3)))


# ------------------------------------------------------------------------------- linalg: solvers


def spd(*batch, n=4, dtype=np.float64):
    a = rand(*batch, n, n, dtype=dtype)
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_inv_det_slogdet(dtype):
    a = rand(3, 4, 4, dtype=dtype) + 4 * np.eye(4, dtype=dtype)
    check(torch.linalg.inv(T(a)), np.linalg.inv(a))
    check(torch.inverse(T(a)), np.linalg.inv(a))
    check(torch.linalg.det(T(a)), np.linalg.det(a))
    check(T(a).det(), np.linalg.det(a))
    s, la = torch.linalg.slogdet(T(a))
    ws, wla = np.linalg.slogdet(a)
    check(s, ws)
    check(la, wla)
    r = torch.slogdet(T(a))
    assert r.sign is r[0] and r.logabsdet is r[1]
    m = rand(5, 5, dtype=dtype)
    check(torch.logdet(T(m @ m.T)), np.log(np.linalg.det(m @ m.T)))
    # Non-contiguous input.
    check(torch.linalg.inv(T(a[0].T)), np.linalg.inv(a[0].T))


def test_det_special_cases():
    sing = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert torch.linalg.det(T(sing)).item() == 0.0
    s, la = torch.linalg.slogdet(T(sing))
    assert s.item() == 0.0 and la.item() == -np.inf
    neg = np.array([[0.0, 1.0], [1.0, 0.0]])
    assert np.isnan(torch.logdet(T(neg)).item())
    assert torch.linalg.det(T(np.zeros((0, 0)))).item() == 1.0
    check(torch.linalg.det(T(np.zeros((0, 3, 3)))), np.zeros((0,)))


def test_inv_errors():
    sing = np.array([[1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(RuntimeError, match="linalg.inv: The diagonal element 2 is zero"):
        torch.linalg.inv(T(sing))
    with pytest.raises(RuntimeError, match=r"\(Batch element 1\): The diagonal element 2 is zero"):
        torch.linalg.inv(T(np.stack([np.eye(2), sing])))
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as input. Got Long"):
        torch.linalg.inv(torch.tensor([[1, 0], [0, 1]]))
    with pytest.raises(RuntimeError, match="Low precision dtypes not supported. Got Half"):
        torch.linalg.inv(T(np.eye(2, dtype=np.float16)))
    with pytest.raises(RuntimeError, match="must be batches of square matrices, but they are 2 by 3 matrices"):
        torch.linalg.inv(T(rand(2, 3)))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        torch.linalg.det(T(rand(3)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_solve(dtype):
    a = rand(2, 4, 4, dtype=dtype) + 4 * np.eye(4, dtype=dtype)
    b = rand(2, 4, 3, dtype=dtype)
    check(torch.linalg.solve(T(a), T(b)), np.linalg.solve(a, b))
    # Vector right-hand sides, batched and unbatched.
    v = rand(2, 4, dtype=dtype)
    check(torch.linalg.solve(T(a), T(v)), np.linalg.solve(a, v[..., None])[..., 0])
    check(torch.linalg.solve(T(a[0]), T(v[0])), np.linalg.solve(a[0], v[0]))
    # Broadcast batch of B against a single A.
    bb = rand(3, 4, 2, dtype=dtype)
    check(torch.linalg.solve(T(a[0]), T(bb)), np.linalg.solve(a[0], bb))
    # left=False: X A = B.
    c = rand(3, 4, dtype=dtype)
    check(torch.linalg.solve(T(a[1]), T(c), left=False), c @ np.linalg.inv(a[1]))
    with pytest.raises(RuntimeError, match="singular"):
        torch.linalg.solve(T(np.zeros((2, 2), dtype=dtype)), T(np.ones((2,), dtype=dtype)))
    with pytest.raises(RuntimeError, match="Incompatible shapes"):
        torch.linalg.solve(T(a[0]), T(rand(5, 2, dtype=dtype)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cholesky(dtype):
    a = spd(3, n=5, dtype=dtype)
    L = torch.linalg.cholesky(T(a)).numpy()
    np.testing.assert_allclose(L, np.linalg.cholesky(a), **FLOAT_TOL[dtype])
    assert np.allclose(np.triu(L, 1), 0)
    U = torch.linalg.cholesky(T(a), upper=True).numpy()
    np.testing.assert_allclose(np.swapaxes(U, -1, -2) @ U, a, rtol=1e-4, atol=1e-3)
    check(torch.cholesky(T(a[0])), np.linalg.cholesky(a[0]))
    # Only the lower triangle is read.
    junk = a[0] + np.triu(np.full((5, 5), 100.0, dtype=dtype), 1)
    check(torch.linalg.cholesky(T(junk)), np.linalg.cholesky(a[0]))
    check(torch.cholesky_inverse(torch.linalg.cholesky(T(a[0]))), np.linalg.inv(a[0]))


def test_cholesky_errors():
    bad = np.array([[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(RuntimeError, match="linalg.cholesky: The factorization could not be completed because the input is not positive-definite \\(the leading minor of order 2 is not positive-definite\\)"):
        torch.linalg.cholesky(T(bad))
    with pytest.raises(RuntimeError, match="Batch element 1"):
        torch.linalg.cholesky(T(np.stack([np.eye(2), bad])))


# ------------------------------------------------------------------------------- linalg: factorizations


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 6, 4), (3, 0), (0, 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_qr(shape, dtype):
    a = rand(*shape, dtype=dtype)
    m, n = shape[-2:]
    k = min(m, n)
    tol = {"rtol": 1e-4, "atol": 1e-4} if dtype == np.float32 else {"rtol": 1e-10, "atol": 1e-10}
    for mode, qc, rr in [("reduced", k, k), ("complete", m, m)]:
        Q, R = torch.linalg.qr(T(a), mode=mode)
        Q, R = Q.numpy(), R.numpy()
        assert Q.shape == shape[:-2] + (m, qc) and R.shape == shape[:-2] + (rr, n)
        np.testing.assert_allclose(Q @ R, a, **tol)
        np.testing.assert_allclose(np.swapaxes(Q, -1, -2) @ Q, np.broadcast_to(np.eye(qc), Q.shape[:-2] + (qc, qc)), **tol)
        assert np.allclose(np.tril(R, -1), 0)
    Q, R = torch.linalg.qr(T(a), mode="r")
    assert Q.numel() == 0 and R.shape == shape[:-2] + (k, n)
    np.testing.assert_allclose(np.abs(R.numpy()), np.abs(np.linalg.qr(a, mode="r")), **tol)


def test_qr_rank_deficient_and_old_api():
    a = np.array([[1.0, 0.0, 2.0], [2.0, 0.0, 4.0], [3.0, 0.0, 6.0]])
    Q, R = torch.linalg.qr(T(a))
    np.testing.assert_allclose(Q.numpy() @ R.numpy(), a, atol=1e-12)
    assert np.all(np.isfinite(Q.numpy()))
    Q2, R2 = torch.qr(T(a))
    np.testing.assert_allclose(Q2.numpy() @ R2.numpy(), a, atol=1e-12)
    with pytest.raises(RuntimeError, match="unrecognized mode"):
        torch.linalg.qr(T(a), mode="bogus")


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 6, 4), (3, 0)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_svd(shape, dtype):
    a = rand(*shape, dtype=dtype)
    m, n = shape[-2:]
    k = min(m, n)
    tol = {"rtol": 1e-4, "atol": 1e-4} if dtype == np.float32 else {"rtol": 1e-9, "atol": 1e-9}
    U, S, Vh = torch.linalg.svd(T(a), full_matrices=False)
    U, S, Vh = U.numpy(), S.numpy(), Vh.numpy()
    assert U.shape == shape[:-2] + (m, k) and S.shape == shape[:-2] + (k,) and Vh.shape == shape[:-2] + (k, n)
    np.testing.assert_allclose((U * S[..., None, :]) @ Vh, a, **tol)
    np.testing.assert_allclose(S, np.linalg.svd(a, compute_uv=False), **tol)
    assert np.all(np.diff(S, axis=-1) <= 0)
    U, S, Vh = torch.linalg.svd(T(a))  # full_matrices=True by default
    U, Vh = U.numpy(), Vh.numpy()
    assert U.shape == shape[:-2] + (m, m) and Vh.shape == shape[:-2] + (n, n)
    np.testing.assert_allclose(np.swapaxes(U, -1, -2) @ U, np.broadcast_to(np.eye(m), U.shape), **tol)
    np.testing.assert_allclose(Vh @ np.swapaxes(Vh, -1, -2), np.broadcast_to(np.eye(n), Vh.shape), **tol)
    check(torch.linalg.svdvals(T(a)), np.linalg.svd(a, compute_uv=False))


def test_svd_old_api_and_nan():
    a = rand(4, 3)
    U, S, V = torch.svd(T(a))
    np.testing.assert_allclose(U.numpy() @ np.diag(S.numpy()) @ V.numpy().T, a, atol=1e-10)
    assert V.shape == (3, 3)
    with pytest.raises(RuntimeError, match="failed to converge"):
        torch.linalg.svd(T(np.full((2, 2), np.nan)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_eigh(dtype):
    a = rand(3, 5, 5, dtype=dtype)
    a = (a + np.swapaxes(a, -1, -2)) / 2
    w, V = torch.linalg.eigh(T(a))
    w, V = w.numpy(), V.numpy()
    tol = {"rtol": 1e-4, "atol": 1e-4} if dtype == np.float32 else {"rtol": 1e-9, "atol": 1e-9}
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a), **tol)
    assert np.all(np.diff(w, axis=-1) >= 0)
    np.testing.assert_allclose(a @ V, V * w[..., None, :], **tol)
    check(torch.linalg.eigvalsh(T(a)), np.linalg.eigvalsh(a))
    # UPLO selects the triangle that is read.
    b = np.triu(rand(4, 4, dtype=dtype))
    check(torch.linalg.eigvalsh(T(b), UPLO="U"), np.linalg.eigvalsh(b, UPLO="U"))
    check(torch.linalg.eigvalsh(T(b)), np.linalg.eigvalsh(b, UPLO="L"))
    r = torch.linalg.eigh(T(a[0]))
    assert r.eigenvalues.shape == (5,) and r.eigenvectors.shape == (5, 5)


# ------------------------------------------------------------------------------- lstsq, pinv, rank


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lstsq(dtype):
    a, b = rand(6, 3, dtype=dtype), rand(6, 2, dtype=dtype)
    x, res, rank, sv = np.linalg.lstsq(a, b, rcond=None)
    r = torch.linalg.lstsq(T(a), T(b))
    check(r.solution, x)
    assert r.residuals.numel() == 0  # gelsy (default) has no residuals
    assert r.rank.item() == rank and r.rank.dtype == torch.int64
    assert r.singular_values.numel() == 0
    r = torch.linalg.lstsq(T(a), T(b), driver="gelsd")
    check(r.residuals, res)
    check(r.singular_values, sv)
    # Underdetermined: minimum-norm solution.
    c, d = rand(2, 4, dtype=dtype), rand(2, 1, dtype=dtype)
    check(torch.linalg.lstsq(T(c), T(d)).solution, np.linalg.lstsq(c, d, rcond=None)[0])
    # Batched with broadcasting, vector rhs.
    ab = rand(3, 5, 2, dtype=dtype)
    v = rand(3, 5, dtype=dtype)
    want = np.stack([np.linalg.lstsq(ab[i], v[i], rcond=None)[0] for i in range(3)])
    check(torch.linalg.lstsq(T(ab), T(v)).solution, want)
    with pytest.raises(RuntimeError, match="driver"):
        torch.linalg.lstsq(T(a), T(b), driver="nope")


def test_pinv_matrix_rank():
    a = rand(5, 3) @ rand(3, 4)  # rank 3
    check(torch.linalg.pinv(T(a)), np.linalg.pinv(a))
    check(torch.pinverse(T(a)), np.linalg.pinv(a, rcond=1e-15))
    assert torch.linalg.matrix_rank(T(a)).item() == np.linalg.matrix_rank(a) == 3
    s = rand(4, 4)
    s = s + s.T
    check(torch.linalg.pinv(T(s), hermitian=True), np.linalg.pinv(s, hermitian=True))
    assert torch.linalg.matrix_rank(T(s), hermitian=True).item() == 4
    bat = np.stack([np.eye(3), np.diag([1.0, 1.0, 0.0]), np.zeros((3, 3))])
    check(torch.linalg.matrix_rank(T(bat)), np.array([3, 2, 0]))
    assert torch.linalg.matrix_rank(T(np.diag([1.0, 1e-3])), atol=1e-2).item() == 1
    assert torch.linalg.matrix_rank(T(np.diag([1.0, 1e-3])), rtol=1e-2).item() == 1


# ------------------------------------------------------------------------------- norms


@pytest.mark.parametrize("ord", [2, 1, 0, 3, 0.5, -1, np.inf, -np.inf])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_vector_norm(ord, dtype):
    x = rand(3, 4, 5, dtype=dtype)
    check(torch.linalg.vector_norm(T(x), ord), np.linalg.norm(x.ravel(), ord))
    check(torch.linalg.vector_norm(T(x), ord, dim=1), np.linalg.norm(x, ord, axis=1))
    want = np.linalg.norm(np.moveaxis(x, (0, 2), (1, 2)).reshape(4, -1), ord, axis=1)
    got = torch.linalg.vector_norm(T(x), ord, dim=(0, 2), keepdim=True)
    assert got.shape == (1, 4, 1)
    check(got, want.reshape(1, 4, 1))
    check(torch.linalg.vector_norm(T(x.transpose(2, 0, 1)), ord, dim=-1), np.linalg.norm(x.transpose(2, 0, 1), ord, axis=-1))


def test_vector_norm_misc():
    big = rng.standard_normal(100_000).astype(np.float32)
    check(torch.linalg.vector_norm(T(big)), np.linalg.norm(big))
    assert torch.linalg.vector_norm(T(np.zeros((0,)))).item() == 0.0
    h = torch.linalg.vector_norm(T(np.ones(4, dtype=np.float16)))
    assert h.dtype == torch.float16 and h.item() == 2.0
    check(torch.linalg.vector_norm(T(np.ones(3, dtype=np.float32)), dtype=torch.float64), np.float64(np.sqrt(3)))
    assert torch.linalg.vector_norm(torch.tensor(-3.0)).item() == 3.0
    with pytest.raises(RuntimeError, match="Expected a floating point"):
        torch.linalg.vector_norm(torch.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="empty tensor"):
        torch.linalg.vector_norm(T(np.zeros((0,))), np.inf)


@pytest.mark.parametrize("ord", ["fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf])
def test_matrix_norm(ord):
    a = rand(2, 4, 3)
    want = np.linalg.norm(a, ord, axis=(-2, -1))
    check(torch.linalg.matrix_norm(T(a), ord), want)
    check(torch.linalg.norm(T(a), ord, dim=(-2, -1)), want)
    got = torch.linalg.matrix_norm(T(a), ord, dim=(0, 2), keepdim=True)
    check(got, np.linalg.norm(a, ord, axis=(0, 2), keepdims=True))
    with pytest.raises(RuntimeError):
        torch.linalg.matrix_norm(T(a), 3)


def test_linalg_norm_and_torch_norm():
    a = rand(3, 4)
    check(torch.linalg.norm(T(a)), np.linalg.norm(a))
    check(torch.linalg.norm(T(a), "nuc"), np.linalg.norm(a, "nuc"))
    check(torch.linalg.norm(T(a), 1), np.linalg.norm(a, 1))
    check(torch.linalg.norm(T(a[0]), 3), np.linalg.norm(a[0], 3))
    check(torch.linalg.norm(T(a), dim=1), np.linalg.norm(a, axis=1))
    check(torch.norm(T(a)), np.linalg.norm(a))
    check(T(a).norm(1, dim=0), np.linalg.norm(a, 1, axis=0))
    check(T(a).norm(p="nuc"), np.linalg.norm(a, "nuc"))
    with pytest.raises(RuntimeError, match="must be 1D or 2D"):
        torch.linalg.norm(T(rand(2, 2, 2)), 2)


# ------------------------------------------------------------------------------- powers, chains


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, -1, -2])
def test_matrix_power(n):
    a = rand(2, 3, 3) + 3 * np.eye(3)
    check(torch.linalg.matrix_power(T(a), n), np.linalg.matrix_power(a, n))
    check(T(a).matrix_power(n), np.linalg.matrix_power(a, n))


def test_matrix_power_int_and_errors():
    a = rand(3, 3, dtype=np.int64)
    check(torch.matrix_power(T(a), 3), np.linalg.matrix_power(a, 3))
    with pytest.raises(RuntimeError, match="square"):
        torch.linalg.matrix_power(T(rand(2, 3)), 2)


def test_multi_dot():
    a, b, c, d = rand(10, 2), rand(2, 30), rand(30, 3), rand(3, 8)
    check(torch.linalg.multi_dot([T(a), T(b), T(c), T(d)]), np.linalg.multi_dot([a, b, c, d]))
    v, w = rand(10), rand(8)
    check(torch.linalg.multi_dot([T(v), T(a), T(b), T(c), T(d), T(w)]), np.linalg.multi_dot([v, a, b, c, d, w]))
    check(torch.linalg.multi_dot([T(v), T(a)]), v @ a)
    check(torch.chain_matmul(T(a), T(b), T(c)), a @ b @ c)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        torch.linalg.multi_dot([T(a), T(c)])
    with pytest.raises(RuntimeError, match="expected at least 2 tensors"):
        torch.linalg.multi_dot([T(a)])


def test_vecdot_and_linalg_matmul():
    x, y = rand(2, 3, 4), rand(3, 4)
    check(torch.linalg.vecdot(T(x), T(y)), np.sum(x * y, axis=-1))
    check(torch.linalg.vecdot(T(x), T(x), dim=1), np.sum(x * x, axis=1))
    check(torch.linalg.matmul(T(x), T(y.T.copy())), x @ y.T)


# ------------------------------------------------------------------------------- PyTorch parity (skipped here)


def test_against_pytorch():
    torch_ref = pytest.importorskip("torch")
    a, b = rand(3, 4, 5, dtype=np.float32), rand(5, 2, dtype=np.float32)
    np.testing.assert_allclose(
        (T(a) @ T(b)).numpy(), (torch_ref.from_numpy(a) @ torch_ref.from_numpy(b)).numpy(), rtol=1e-5
    )
    s = spd(2, n=3)
    np.testing.assert_allclose(
        torch.linalg.cholesky(T(s)).numpy(), torch_ref.linalg.cholesky(torch_ref.from_numpy(s)).numpy(), rtol=1e-8
    )
