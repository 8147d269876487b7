"""Regression tests from a differential parity sweep of ``ferrotorch.linalg`` and
``ferrotorch.special`` against PyTorch.

The expected values are hard-coded (taken from PyTorch 2.15) or computed with NumPy, so the
tests run without torch; the ``*_vs_torch`` tests compare directly when torch is installed.
"""

import math

import numpy as np
import pytest

import ferrotorch as ft

LA = ft.linalg


def _t(a, dtype=ft.float64):
    return ft.tensor(np.asarray(a, dtype=np.float64), dtype=dtype)


def _np(t):
    return np.array(t.detach().tolist(), dtype=np.float64).reshape(tuple(t.shape))


# --------------------------------------------------------------------------- linalg: values


@pytest.mark.parametrize("p", [None, 2, -2, 1, -1, math.inf, -math.inf, "fro", "nuc"])
def test_cond_of_empty_matrices_is_zero(p):
    r = LA.cond(ft.zeros(2, 0, 0, dtype=ft.float64), p)
    assert r.shape == (2,) and r.dtype == ft.float64
    assert r.tolist() == [0.0, 0.0]
    assert LA.cond(ft.zeros(0, 0), p).shape == ()


@pytest.mark.parametrize("p", [1, -1, math.inf, "fro", "nuc"])
def test_cond_of_singular_matrix_is_inf(p):
    A = _t([[[1.0, 0.0], [0.0, 0.0]], [[2.0, 1.0], [1.0, 3.0]]])
    r = LA.cond(A, p)
    assert math.isinf(r[0].item())
    want = np.linalg.cond(_np(A)[1], p)
    np.testing.assert_allclose(r[1].item(), want, rtol=1e-12)


def test_cond_argument_errors():
    with pytest.raises(RuntimeError, match=r"^linalg.cond: The input tensor must have at least 2 "
                                           r"dimensions.$"):
        LA.cond(ft.ones(3), 1)
    with pytest.raises(ValueError, match="^linalg.cond got an invalid norm type: 3$"):
        LA.cond(ft.ones(3, 3), 3)
    with pytest.raises(ValueError, match="^linalg.cond got an invalid norm type: bad$"):
        LA.cond(ft.ones(3, 3), "bad")
    with pytest.raises(RuntimeError, match=r"^linalg.cond\(ord=fro\): A must be batches of square "
                                           r"matrices, but they are 2 by 3 matrices$"):
        LA.cond(ft.ones(2, 3), "fro")


def test_lstsq_vector_rhs_keeps_residual_dim():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 3)), rng.standard_normal(5)
    x, res, rank, sv = LA.lstsq(_t(a), _t(b), driver="gelsd")
    want_x, want_res, _, want_sv = np.linalg.lstsq(a, b, rcond=None)
    assert x.shape == (3,) and res.shape == (1,) and rank.shape == ()
    np.testing.assert_allclose(_np(x), want_x, rtol=1e-10)
    np.testing.assert_allclose(_np(res), want_res, rtol=1e-10)
    np.testing.assert_allclose(_np(sv), want_sv, rtol=1e-10)
    batched = LA.lstsq(_t(np.stack([a, a])), _t(np.stack([b, b])), driver="gelsd")
    assert [tuple(t.shape) for t in batched] == [(2, 3), (2, 1), (2,), (2, 3)]
    # gelsy (the default) computes no residuals: still empty.
    assert LA.lstsq(_t(a), _t(b)).residuals.shape == (0,)


def test_lstsq_errors():
    with pytest.raises(RuntimeError, match="^torch.linalg.lstsq: input must have at least 2 "
                                           "dimensions.$"):
        LA.lstsq(ft.ones(3), ft.ones(3))
    with pytest.raises(RuntimeError, match=r"^torch.linalg.lstsq: input.size\(-2\) should match "
                                           r"other.size\(-1\)$"):
        LA.lstsq(ft.ones(3, 3), ft.ones(2))
    with pytest.raises(RuntimeError, match="^This function doesn't handle types other than float "
                                           "and double$"):
        LA.lstsq(ft.ones(3, 3, dtype=ft.int64), ft.ones(3, 1, dtype=ft.int64))


def test_matrix_rank_tol_argument():
    A = _t([[3.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.2]])
    assert LA.matrix_rank(A, 0.5).item() == 2
    assert LA.matrix_rank(A, tol=2.0, hermitian=True).item() == 1
    assert LA.matrix_rank(A, atol=0.1).item() == 3
    with pytest.raises(TypeError):
        LA.matrix_rank(A, 0.5, atol=1.0)
    with pytest.raises(RuntimeError, match="^torch.linalg.matrix_rank: The input tensor input must "
                                           "have at least 2 dimensions.$"):
        LA.matrix_rank(ft.ones(3))


def _rotated(diags):
    Q, _ = np.linalg.qr(np.random.default_rng(1).standard_normal((3, 3)))
    return np.stack([Q @ np.diag(d) @ Q.T for d in diags]), Q


@pytest.mark.parametrize("hermitian", [False, True])
def test_pinv_and_matrix_rank_take_per_matrix_tolerances(hermitian):
    A, Q = _rotated([[3.0, 1.0, 0.2], [5.0, 2.0, 0.5]])
    atol = ft.tensor([0.5, 3.0], dtype=ft.float64)
    want = np.stack([Q @ np.diag(d) @ Q.T for d in ([1 / 3, 1.0, 0.0], [0.2, 0.0, 0.0])])
    np.testing.assert_allclose(_np(LA.pinv(_t(A), atol=atol, hermitian=hermitian)), want,
                               atol=1e-12)
    assert LA.matrix_rank(_t(A), atol=atol, hermitian=hermitian).tolist() == [2, 1]
    # rtol per matrix (relative to the largest singular value); tol= is atol with rtol = 0
    rtol = ft.tensor([0.01, 0.2], dtype=ft.float64)
    assert LA.matrix_rank(_t(A), rtol=rtol, hermitian=hermitian).tolist() == [3, 2]
    assert LA.matrix_rank(_t(A), atol, hermitian).tolist() == [2, 1]
    # broadcast against a batch
    r = LA.matrix_rank(_t(np.stack([A, A])), atol=ft.tensor([[0.1], [4.0]], dtype=ft.float64))
    assert r.tolist() == [[3, 3], [0, 1]]


def test_pinv_tensor_tolerance_gradient_vs_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    B = rng.standard_normal((2, 4, 3))
    S = B[:, :3] @ B[:, :3].transpose(0, 2, 1)
    W = np.cos(np.arange(24.0))
    for X, herm in ((B, False), (S, True)):
        grads = []
        for m in (torch, ft):
            a = m.tensor(X, requires_grad=True)
            r = m.linalg.pinv(a, atol=m.tensor([0.1, 0.2], dtype=m.float64), hermitian=herm)
            w = m.tensor(W[:r.numel()].reshape(tuple(r.shape)))
            grads.append(np.array(m.autograd.grad((r * w).sum(), a)[0].tolist()))
        np.testing.assert_allclose(grads[1], grads[0], atol=1e-10)


def test_svd_driver_is_cuda_only():
    msg = (r"^torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
           r"cuSOLVER backend.$")
    with pytest.raises(RuntimeError, match=msg):
        LA.svd(ft.ones(3, 2), driver="gesvd")
    with pytest.raises(RuntimeError, match=msg):
        LA.svdvals(ft.ones(3, 2), driver="gesvd")
    assert LA.svd(ft.ones(0, 3), driver="gesvd").S.shape == (0,)  # empty: no check, as PyTorch


def test_torch_svd_without_uv_returns_square_zero_factors():
    U, S, V = ft.svd(_t(np.ones((2, 4, 3))), compute_uv=False)
    assert U.shape == (2, 4, 4) and V.shape == (2, 3, 3) and S.shape == (2, 3)
    assert not _np(U).any() and not _np(V).any()
    np.testing.assert_allclose(_np(S)[:, 0], [math.sqrt(12)] * 2, rtol=1e-12)


def test_torch_lu_get_infos_named_tuple():
    r = ft.lu(_t(np.eye(3)), get_infos=True)
    assert type(r).__name__ == "_lu_with_info" and r._fields == ("LU", "pivots", "info")
    assert type(ft.lu(_t(np.eye(3)))) is tuple


def test_solve_triangular_computes_in_a_dtype():
    A = _t([[2.0, 1.0], [0.0, 4.0]], ft.float32)
    X = LA.solve_triangular(A, _t([[1.0], [2.0]]), upper=True)
    assert X.dtype == ft.float32
    np.testing.assert_allclose(_np(X), [[0.25], [0.5]])
    X = LA.solve_triangular(_t([[2.0, 1.0], [0.0, 4.0]]), ft.ones(2, 1, dtype=ft.int64),
                            upper=True)
    assert X.dtype == ft.float64
    np.testing.assert_allclose(_np(X), [[0.375], [0.25]])


def test_vander_scalar_and_errors():
    np.testing.assert_allclose(_np(LA.vander(_t([2.0, 3.0]), N=3)), [[1, 2, 4], [1, 3, 9]])
    with pytest.raises(RuntimeError, match=r"^N must be greater than 1.$"):
        LA.vander(_t([2.0, 3.0]), N=1)
    with pytest.raises(RuntimeError, match=r"^N must be greater than 1.$"):
        LA.vander(_t(2.0))  # a scalar is one point
    assert LA.vander(_t(2.0), N=3).tolist() == [[1.0, 2.0, 4.0]]
    with pytest.raises(NotImplementedError, match="but got Bool$"):
        LA.vander(ft.tensor([True, False]))


def test_vecdot_checks():
    x = _t([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    np.testing.assert_allclose(_np(LA.vecdot(x, x, dim=0)), [17.0, 29.0, 45.0])
    with pytest.raises(IndexError, match=r"^Dimension out of range \(expected to be in range of "
                                         r"\[-2, 1\], but got 2\)$"):
        LA.vecdot(x, x, dim=2)
    with pytest.raises(RuntimeError, match=r"^The size of tensor a \(2\) must match the size of "
                                           r"tensor b \(3\) at non-singleton dimension 0$"):
        LA.vecdot(x, ft.ones(3, 3, dtype=ft.float64), dim=0)
    with pytest.raises(NotImplementedError, match="^linalg.vecdot: Expected a floating point or "
                                                  "complex tensor as input. Got Int$"):
        LA.vecdot(ft.ones(2, dtype=ft.int32), ft.ones(2, dtype=ft.int32))
    with pytest.raises(RuntimeError, match="^linalg.vecdot: Expected x and y to have the same "
                                           "dtype, but found x of type Float and y of type Double "
                                           "instead$"):
        LA.vecdot(ft.ones(2), ft.ones(2, dtype=ft.float64))


def test_cross_length_checked_before_broadcast():
    with pytest.raises(RuntimeError, match="^linalg.cross: inputs dimension -1 must have length 3. "
                                           "Got 3 and 2$"):
        LA.cross(ft.ones(2, 3), ft.ones(2, 2))
    with pytest.raises(IndexError, match="^Dimension out of range"):
        LA.cross(ft.ones(2, 3), ft.ones(2, 3), dim=2)
    np.testing.assert_allclose(_np(LA.cross(_t([[1, 0, 0]]), _t([[0, 1, 0]]))), [[0, 0, 1]])


# --------------------------------------------------------------------------- linalg: errors


@pytest.mark.parametrize("name, msg", [
    ("det", "linalg.det: Expected a floating point or complex tensor as input. Got Long"),
    ("inv", "linalg.inv: Expected a floating point or complex tensor as input. Got Long"),
    ("slogdet", "linalg.slogdet: Expected a floating point or complex tensor as input. Got Long"),
    ("matrix_exp", "linalg.matrix_exp: Expected a floating point or complex tensor as input. "
                   "Got Long"),
    ("svdvals", "linalg.svd: Expected a floating point or complex tensor as input. Got Long"),
    ("cholesky", "linalg.cholesky: Expected a floating point or complex tensor as input. Got Long"),
    ("cholesky_ex", "linalg.cholesky: Expected a floating point or complex tensor as input. "
                    "Got Long"),
    ("inv_ex", "linalg.inv: Expected a floating point or complex tensor as input. Got Long"),
    ("qr", "linalg.qr: Expected a floating point or complex tensor as input. Got Long"),
    ("eigh", "\"linalg_eigh_cpu\" not implemented for 'Long'"),
    ("eigvalsh", "\"linalg_eigh_cpu\" not implemented for 'Long'"),
    ("lu_factor", "\"lu_cpu\" not implemented for 'Long'"),
    ("lu", "\"lu_cpu\" not implemented for 'Long'"),
    ("matrix_norm", "linalg.matrix_norm: Expected a floating point or complex tensor as input. "
                    "Got Long"),
    ("cond", "linalg.svd: Expected a floating point or complex tensor as input. Got Long"),
])
def test_integer_input_raises_not_implemented(name, msg):
    with pytest.raises(NotImplementedError) as e:
        getattr(LA, name)(ft.tensor([[2, 1], [1, 3]]))
    assert str(e.value) == msg


def test_integer_input_errors_of_other_functions():
    I2 = ft.tensor([[2, 1], [1, 3]])
    with pytest.raises(NotImplementedError, match="^linalg.solve: Expected a floating point"):
        LA.solve_ex(I2, I2)
    with pytest.raises(NotImplementedError, match="^\"triangular_solve_cpu\" not implemented for "
                                                  "'Long'$"):
        LA.solve_triangular(I2, I2, upper=True)
    with pytest.raises(NotImplementedError, match="^linalg.det: Expected a floating point"):
        ft.det(I2)
    with pytest.raises(NotImplementedError, match="^\"cholesky_inverse_out_cpu\" not implemented"):
        ft.cholesky_inverse(I2)
    with pytest.raises(RuntimeError, match=r"^linalg.pinv\(Long\{\[2, 2\]\}\): expected a tensor "
                                           r"with 2 or more dimensions of float, double, cfloat or "
                                           r"cdouble types$"):
        LA.pinv(I2)
    with pytest.raises(RuntimeError, match=r"^linalg.pinv\(Double\{\[3\]\}\)"):
        LA.pinv(_t([1.0, 2.0, 3.0]))


def test_ex_functions_check_errors_name_themselves():
    Zb = _t(np.stack([np.eye(2), np.zeros((2, 2))]))
    with pytest.raises(LA.LinAlgError, match=r"^linalg.cholesky_ex: \(Batch element 1\): The "
                                             r"factorization could not be completed"):
        LA.cholesky_ex(Zb, check_errors=True)
    with pytest.raises(LA.LinAlgError, match=r"^linalg.inv_ex: \(Batch element 1\): The diagonal "
                                             r"element 1 is zero"):
        LA.inv_ex(Zb, check_errors=True)
    with pytest.raises(LA.LinAlgError, match=r"^torch.linalg.solve_ex: \(Batch element 1\): The "
                                             r"solver failed because the input matrix is "
                                             r"singular.$"):
        LA.solve_ex(Zb, ft.ones(2, 2, 1, dtype=ft.float64), check_errors=True)
    # Without check_errors the failure is reported in info.
    assert LA.solve_ex(Zb, ft.ones(2, 2, 1, dtype=ft.float64)).info.tolist() == [0, 1]
    assert LA.inv_ex(Zb).info.tolist() == [0, 1]
    assert LA.cholesky_ex(Zb).info.tolist() == [0, 1]


def test_ex_functions_propagate_shape_and_dtype_errors():
    with pytest.raises(RuntimeError, match=r"^linalg.solve: Incompatible shapes of A and B"):
        LA.solve_ex(_t(np.eye(3)), _t(np.ones((2, 1))))
    with pytest.raises(RuntimeError, match="^linalg.solve: Expected A and B to have the same "
                                           "dtype"):
        LA.solve_ex(_t(np.eye(2)), _t(np.ones((2, 1)), ft.float32))


def test_solve_names_the_singular_batch_element():
    A = _t(np.stack([np.eye(2), np.zeros((2, 2)), np.eye(2)]))
    with pytest.raises(LA.LinAlgError, match=r"^torch.linalg.solve: \(Batch element 1\): The "
                                             r"solver failed because the input matrix is "
                                             r"singular.$"):
        LA.solve(A, ft.ones(3, 2, 1, dtype=ft.float64))
    with pytest.raises(LA.LinAlgError, match=r"^torch.linalg.solve: The solver failed"):
        LA.solve(ft.zeros(2, 2, dtype=ft.float64), ft.ones(4, 3, 2, 1, dtype=ft.float64))


def test_dimension_and_shape_messages():
    cases = [
        (lambda: LA.lu_factor(ft.ones(3)),
         "torch.lu_factor: Expected tensor with 2 or more dimensions. Got size: [3] instead"),
        (lambda: LA.lu(ft.ones(())),
         "linalg.lu: Expected tensor with 2 or more dimensions. Got size: [] instead"),
        (lambda: LA.lu(ft.eye(2), pivot=False),
         "linalg.lu_factor: LU without pivoting is not implemented on the CPU"),
        (lambda: LA.matrix_exp(ft.ones(3)),
         "linalg.matrix_exp: The input tensor A must have at least 2 dimensions."),
        (lambda: LA.matrix_exp(ft.ones(2, 3)),
         "linalg.matrix_exp: A must be batches of square matrices, but they are 2 by 3 matrices"),
        (lambda: LA.eigvalsh(ft.ones(2, 3)),
         "linalg.eigh: A must be batches of square matrices, but they are 2 by 3 matrices"),
        (lambda: LA.eigvalsh(ft.ones(3)),
         "linalg.eigh: The input tensor A must have at least 2 dimensions."),
        (lambda: LA.tensorsolve(ft.ones(2, 2), ft.ones(2, 1)),
         "Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
         "prod(self.shape[:other.ndim]), but got 1 != 2"),
        (lambda: LA.matrix_norm(ft.ones(3, 3), dim=(0,)),
         "linalg.matrix_norm: dim must be a 2-tuple. Got 0"),
        (lambda: ft.norm(ft.ones(2, 2, 2), p="fro", dim=(0, 1, 2)),
         "linalg.matrix_norm: dim must be a 2-tuple. Got 0 1 2"),
        (lambda: ft.lu_unpack(*LA.lu_factor(ft.eye(2))[:1], ft.ones(2, dtype=ft.int64)),
         "torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype."
         "\nNote: this function is intended to be used with the output produced by "
         "torch.linalg.lu_factor"),
        (lambda: ft.cholesky_inverse(ft.ones(4, 3)),
         "cholesky_inverse: A must be batches of square matrices, but they are 4 by 3 matrices"),
        (lambda: ft.cholesky_inverse(ft.zeros(2, 2)),
         "cholesky_inverse: The diagonal element 1 is zero, the inversion could not be completed "
         "because the input matrix is singular."),
    ]
    for fn, msg in cases:
        with pytest.raises(RuntimeError) as e:
            fn()
        assert str(e.value) == msg


def test_matrix_power_and_multi_dot_argument_errors():
    with pytest.raises(TypeError, match=r"^linalg_matrix_power\(\): argument 'n' \(position 2\) "
                                        r"must be int, not float$"):
        LA.matrix_power(ft.eye(2), 2.0)
    with pytest.raises(RuntimeError, match=r"^multi_dot\(\): all tensors must have be the same "
                                           r"dtype but tensor 0 is long int and tensor 1 float$"):
        LA.multi_dot([ft.eye(2, dtype=ft.int64), ft.eye(2)])
    with pytest.raises(RuntimeError, match=r"^multi_dot\(\): all tensors must have be the same "
                                           r"dtype but tensor 0 is float and tensor 1 double$"):
        LA.multi_dot([ft.eye(2), ft.eye(2, dtype=ft.float64)])


def test_norm_order_and_dtype_checks():
    A = ft.ones(2, 3, 4)
    with pytest.raises(RuntimeError, match="^linalg.matrix_norm: Order 3 not supported.$"):
        LA.matrix_norm(A, 3, dim=(1, 1))  # the order is checked before the dims
    with pytest.raises(RuntimeError, match="^linalg.matrix_norm: Order bad not supported.$"):
        ft.norm(A, p="bad")
    with pytest.raises(RuntimeError, match="^linalg.matrix_norm: The input tensor A must have at "
                                           "least 2 dimensions.$"):
        LA.norm(ft.ones(4), "nuc", dim=0)
    with pytest.raises(RuntimeError, match=r"^linalg.vector_norm: the dtype of the input \(Float\) "
                                           r"should be convertible without narrowing to the "
                                           r"specified dtype \(Half\)$"):
        LA.vector_norm(A, dtype=ft.float16)
    with pytest.raises(RuntimeError, match=r"^linalg.matrix_norm: the dtype of the input "
                                           r"\(Double\)"):
        LA.matrix_norm(ft.ones(2, 2, dtype=ft.float64), dtype=ft.float32)
    with pytest.raises(TypeError, match=r"^linalg_vector_norm\(\): argument 'ord' \(position 2\) "
                                        r"must be Number, not str$"):
        LA.vector_norm(A, "fro")
    r = LA.vector_norm(A, dtype=ft.float64)
    assert r.dtype == ft.float64 and r.item() == pytest.approx(math.sqrt(24))


def test_lu_solve_argument_checks():
    A = _t([[[4.0, 1.0], [2.0, 3.0]]] * 2)
    LU, piv = LA.lu_factor(A)
    cases = [
        (lambda: LA.lu_solve(LU, piv, ft.ones(2, dtype=ft.float64)),
         "linalg.lu_solve: The input tensor B must have at least 2 dimensions."),
        (lambda: LA.lu_solve(LU, piv.long(), ft.ones(2, 2, 1, dtype=ft.float64)),
         "linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32"),
        (lambda: LA.lu_solve(LU, piv, ft.ones(2, 2, 1)),
         "linalg.lu_solve: Expected LU and B to have the same dtype, but found LU of type Double "
         "and B of type Float instead"),
        (lambda: LA.lu_solve(LU, piv, ft.ones(2, 3, 1, dtype=ft.float64)),
         "linalg.lu_solve: Incompatible shapes of A and B for the equation AX = B (2x2 and 3x1)"),
        (lambda: LA.lu_solve(_t(np.ones((3, 2))), piv[0], _t(np.ones((3, 1)))),
         "torch.linalg.lu_solve: A must be batches of square matrices, but they are 3 by 2 "
         "matrices"),
        (lambda: ft.lu_unpack(_t([1.0, 2.0]), piv[0]),
         "torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: [2] instead"),
        (lambda: LA.ldl_factor(ft.ones(5, 3)),
         "torch.linalg.ldl_factor_ex: A must be batches of square matrices, but they are 5 by 3 "
         "matrices"),
    ]
    for fn, msg in cases:
        with pytest.raises(RuntimeError) as e:
            fn()
        assert str(e.value) == msg
    # the valid call: A X = B
    X = LA.lu_solve(LU, piv, _t([[[1.0], [2.0]]] * 2))
    np.testing.assert_allclose(_np(X), [[[0.1], [0.6]]] * 2, rtol=1e-12)


def test_matrix_exp_non_finite_matrix_does_not_spoil_the_batch():
    A = _t([[[math.nan, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 2.0]],
            [[math.inf, 0.0], [0.0, 1.0]]])
    r = _np(LA.matrix_exp(A))
    assert np.isnan(r[0]).all() and np.isnan(r[2]).all()
    np.testing.assert_allclose(r[1], np.diag([math.e, math.e ** 2]), rtol=1e-14, atol=1e-300)


def test_matrix_norm_of_empty_matrices():
    for ord_ in (1, 2, math.inf):  # positive orders: 0
        r = LA.matrix_norm(ft.zeros(2, 0, 4, dtype=ft.float64), ord_)
        assert r.shape == (2,) and r.tolist() == [0.0, 0.0]
    assert LA.matrix_norm(ft.zeros(3, 0), 1, keepdim=True).shape == (1, 1)
    assert LA.matrix_norm(ft.zeros(3, 0), -math.inf).item() == 0.0  # min over the 3 rows
    with pytest.raises(IndexError, match=r"^amin\(\): Expected reduction dim 0 to have non-zero "
                                         r"size.$"):
        LA.matrix_norm(ft.zeros(3, 0), -1)
    with pytest.raises(IndexError, match=r"^amin\(\): Expected reduction dim -1"):
        LA.matrix_norm(ft.zeros(2, 0, 4), -2)
    assert LA.matrix_norm(ft.zeros(0, 2, 3), -2).shape == (0,)


def test_linalg_norm_dispatch_and_checks():
    with pytest.raises(RuntimeError, match=r"^linalg.norm: If dim is specified, it must be of "
                                           r"length 1 or 2. Got \[0, 1, 2\]$"):
        LA.norm(ft.ones(2, 2, 2), dim=(0, 1, 2))
    # ord=None over two dims is the vector 2-norm: dims are checked as a vector norm's.
    with pytest.raises(IndexError, match="^Dimension out of range"):
        LA.norm(ft.ones(4), dim=(0, 1))
    assert LA.norm(_t(np.ones((2, 3, 4))), dim=(0, 2)).tolist() == [math.sqrt(8)] * 3
    assert LA.norm(ft.ones(3, 4), "nuc", dim=(1, 0), keepdim=True).shape == (1, 1)
    with pytest.raises(RuntimeError, match="^linalg.vector_norm cannot compute the inf norm on the "
                                           "dimension -1because this dimension is empty"):
        LA.vector_norm(ft.zeros(2, 0), math.inf, dim=-1)


def test_linalg_errors_vs_torch():
    torch = pytest.importorskip("torch")

    def err(mod, fn):
        try:
            fn(mod)
        except Exception as e:  # noqa: BLE001 (any error is compared)
            return type(e).__name__.lstrip("_"), str(e)
        return None

    cases = [
        lambda m: m.linalg.det(m.ones(2, 2, dtype=m.int64)),
        lambda m: m.linalg.cond(m.ones(3), 1),
        lambda m: m.linalg.lstsq(m.ones(3, 3), m.ones(2)),
        lambda m: m.linalg.svd(m.ones(3, 2), driver="gesvd"),
        lambda m: m.linalg.vecdot(m.ones(2, 3), m.ones(3, 3), dim=0),
        lambda m: m.linalg.solve(m.zeros(3, 2, 2), m.ones(3, 2, 1)),
        lambda m: m.linalg.inv_ex(m.zeros(2, 2, 2), check_errors=True),
        lambda m: m.linalg.pinv(m.ones(3)),
        lambda m: m.linalg.lu(m.ones(3)),
    ]
    for case in cases:
        assert err(ft, case) == err(torch, case)


# --------------------------------------------------------------------------- special

SP = ft.special


def _grad(fn, values, dtype=ft.float64):
    x = ft.tensor(values, dtype=dtype, requires_grad=True)
    return ft.autograd.grad(fn(x).sum(), x)[0].tolist()


def test_multigammaln_has_no_domain_check():
    # PyTorch 2.x evaluates the formula for every element (no "> (p-1)/2" check).
    got = SP.multigammaln(_t([0.4, 1.0, -3.0]), 2).tolist()
    np.testing.assert_allclose(got[:2], [3.7380040933552725, 1.1447298858494002], rtol=1e-13)
    assert got[2] == math.inf
    np.testing.assert_allclose(ft.mvlgamma(_t([0.4]), 2).tolist(), [3.7380040933552725],
                               rtol=1e-13)


def test_multigammaln_argument_errors():
    with pytest.raises(RuntimeError, match="^p has to be greater than or equal to 1$"):
        SP.multigammaln(_t([3.0]), 0)
    with pytest.raises(RuntimeError, match="^The input tensor may not be a boolean tensor.$"):
        SP.multigammaln(ft.tensor([True]), 1)
    with pytest.raises(TypeError, match=r"argument 'p' \(position 2\) must be int, not float$"):
        SP.multigammaln(_t([3.0]), 2.0)
    with pytest.raises(TypeError, match=r"argument 'n' \(position 1\) must be int, not float$"):
        SP.polygamma(1.0, _t([3.0]))


def test_ndtri_median_is_exactly_zero_with_gradient():
    assert SP.ndtri(_t([0.5])).tolist() == [0.0]
    assert SP.ndtri(ft.tensor([0.5])).tolist() == [0.0]
    np.testing.assert_allclose(_grad(SP.ndtri, [0.5]), [math.sqrt(2 * math.pi)], rtol=1e-12)


def test_branch_switch_points_keep_their_gradient():
    # log_ndtr switches formulas at -1 and -20 (float64) / -10 (float32); i0/i0e at |x| = 30.
    np.testing.assert_allclose(_grad(SP.log_ndtr, [-20.0, -10.0, -1.0]),
                               [20.049753068528464, 10.098093233962576, 1.525135276160982],
                               rtol=1e-9)
    np.testing.assert_allclose(_grad(SP.log_ndtr, [-10.0], ft.float32), [10.098093], rtol=1e-5)
    np.testing.assert_allclose(_grad(SP.i0, [30.0, -30.0]),
                               [768532038938.9569, -768532038938.9569], rtol=1e-10)
    np.testing.assert_allclose(_grad(SP.i0e, [30.0, -30.0]),
                               [-0.0012296158835897464, 0.0012296158835897464], rtol=1e-8)


def test_nan_propagates_through_i0_i0e():
    for fn in (SP.i0, SP.i0e):
        r = fn(_t([math.nan, 1.0])).tolist()
        assert math.isnan(r[0]) and not math.isnan(r[1])


def test_round_rejects_bool():
    with pytest.raises(NotImplementedError, match="^\"round_vml_cpu\" not implemented for "
                                                  "'Bool'$"):
        SP.round(ft.tensor([True]))


def test_two_argument_functions_promote_like_pytorch():
    a = ft.tensor([2, 3], dtype=ft.int32)
    b = ft.tensor([2.5, 3.0], dtype=ft.float16)
    for fn in (SP.xlogy, SP.xlog1py, SP.gammainc, SP.gammaincc):
        assert fn(a, b).dtype == ft.float16
    np.testing.assert_allclose(SP.xlogy(a, b).float().tolist(), [1.8330, 3.2969], rtol=1e-3)
    assert SP.xlogy(a, a).dtype == ft.float32  # integers go to the default dtype
    assert SP.zeta(ft.tensor([2]), ft.tensor([1])).dtype == ft.float32
    with pytest.raises(NotImplementedError, match="^\"igamma_cpu\" not implemented for 'Long'$"):
        SP.gammainc(ft.tensor([2]), ft.tensor([1]))
    with pytest.raises(NotImplementedError, match="^\"igammac_cpu\" not implemented for "
                                                  "'Long'$"):
        SP.gammaincc(ft.tensor([2]), ft.tensor([1]))
    # broadcasting
    r = SP.xlogy(_t([[1.0], [2.0]]), _t([1.0, math.e]))
    np.testing.assert_allclose(_np(r), [[0.0, 1.0], [0.0, 2.0]], atol=1e-15)


@pytest.mark.parametrize("name", ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1",
                                  "modified_bessel_i0", "modified_bessel_i1",
                                  "modified_bessel_k0", "modified_bessel_k1",
                                  "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
                                  "spherical_bessel_j0", "erfcx", "ndtri", "log_ndtr"])
@pytest.mark.parametrize("dtype, dname", [(ft.float16, "Half"), (ft.bfloat16, "BFloat16")])
def test_float32_float64_only_kernels_reject_half(name, dtype, dname):
    with pytest.raises(NotImplementedError) as e:
        getattr(SP, name)(ft.tensor([0.5, 2.0], dtype=dtype))
    assert str(e.value) == f"\"{name}_cpu\" not implemented for '{dname}'"


def test_zeta_rejects_half():
    with pytest.raises(NotImplementedError, match="^\"zeta_cpu\" not implemented for 'Half'$"):
        SP.zeta(ft.tensor([2.0], dtype=ft.float16), ft.tensor([1.0], dtype=ft.float16))


def test_half_bessel_i_computed_in_float32():
    x16 = [0.25, 0.5, 2.0]
    cases = [(SP.i1, ft.bfloat16, [0.1259765625, 0.2578125, 1.59375]),
             (SP.i0, ft.float16, [1.015625, 1.0634765625, 2.279296875]),
             (SP.i0e, ft.bfloat16, [0.79296875, 0.64453125, 0.30859375]),
             (SP.i1e, ft.float16, [0.09808349609375, 0.1563720703125, 0.2152099609375])]
    for fn, dtype, want in cases:
        r = fn(ft.tensor(x16, dtype=dtype))
        assert r.dtype == dtype
        assert r.float().tolist() == want


def test_special_vs_torch():
    torch = pytest.importorskip("torch")
    x = np.array([-3.5, -1.0, -0.5, 0.0, 0.5, 1.0, 2.5, 10.0, 30.0, math.inf, math.nan])
    for name in ["i0", "i0e", "i1", "i1e", "erfcx", "log_ndtr", "ndtr", "gammaln", "entr",
                 "modified_bessel_k0", "scaled_modified_bessel_k1"]:
        want = getattr(torch.special, name)(torch.tensor(x)).numpy()
        got = _np(getattr(SP, name)(_t(x)))
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-300, equal_nan=True)
    p = np.array([0.0, 1e-300, 0.01, 0.3, 0.5, 0.9, 1.0])
    np.testing.assert_allclose(_np(SP.ndtri(_t(p))), torch.special.ndtri(torch.tensor(p)).numpy(),
                               rtol=1e-10, atol=1e-300)
    for n in range(4):
        q = np.array([0.1, 0.5, 1.5, 7.0])
        np.testing.assert_allclose(_np(SP.polygamma(n, _t(q))),
                                   torch.special.polygamma(n, torch.tensor(q)).numpy(),
                                   rtol=1e-8)  # (PyTorch's trigamma is good to ~5e-10)


def test_quantile_interpolation_message():
    with pytest.raises(RuntimeError, match="^quantile\\(\\) interpolation must be one of linear, "
                                           "lower, higher, midpoint or nearest, but got bad$"):
        ft.quantile(ft.ones(3), 0.5, interpolation="bad")
