"""``ferrotorch.linalg``: PyTorch's ``torch.linalg`` on ferrotorch tensors.

The numerics live in Rust (``nalgebra`` for SVD/eigh/LU, own Householder QR and Cholesky, the
``gemm`` crate for products); this module only gives the functions PyTorch's signatures and
named-tuple results. Decompositions support float32/float64 and batch over leading dims.
``householder_product`` and the LDL^T functions (``ldl_factor[_ex]``, ``ldl_solve``) are
written with tensor ops in :mod:`ferrotorch._linalg_householder`.

>>> import ferrotorch as torch
>>> A = torch.tensor([[4.0, 0.0], [0.0, 9.0]])
>>> torch.linalg.cholesky(A).tolist()
[[2.0, 0.0], [0.0, 3.0]]
"""

import builtins
import math
from collections import namedtuple

from ferrotorch import _C
from ferrotorch._linalg_householder import (  # noqa: F401 (re-exported)
    householder_product,
    ldl_factor,
    ldl_factor_ex,
    ldl_solve,
)

Tensor = _C.Tensor

__all__ = [
    "cholesky",
    "cholesky_ex",
    "cond",
    "cross",
    "det",
    "diagonal",
    "eigh",
    "eigvalsh",
    "inv",
    "inv_ex",
    "lstsq",
    "lu",
    "lu_factor",
    "lu_factor_ex",
    "lu_solve",
    "matmul",
    "matrix_exp",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "multi_dot",
    "norm",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "solve_ex",
    "solve_triangular",
    "svd",
    "svdvals",
    "tensorinv",
    "tensorsolve",
    "vander",
    "vecdot",
    "vector_norm",
    "householder_product",
    "ldl_factor",
    "ldl_factor_ex",
    "ldl_solve",
]

# Named results, like ``torch.return_types.*``.
_slogdet_result = namedtuple("linalg_slogdet", ["sign", "logabsdet"])
_qr_result = namedtuple("linalg_qr", ["Q", "R"])
_svd_result = namedtuple("linalg_svd", ["U", "S", "Vh"])
_eigh_result = namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])
_lstsq_result = namedtuple(
    "linalg_lstsq", ["solution", "residuals", "rank", "singular_values"]
)
_torch_slogdet_result = namedtuple("slogdet", ["sign", "logabsdet"])
_torch_svd_result = namedtuple("svd", ["U", "S", "V"])
_torch_qr_result = namedtuple("qr", ["Q", "R"])
_lu_factor_result = namedtuple("linalg_lu_factor", ["LU", "pivots"])
_lu_factor_ex_result = namedtuple("linalg_lu_factor_ex", ["LU", "pivots", "info"])
_lu_result = namedtuple("linalg_lu", ["P", "L", "U"])
_lu_unpack_result = namedtuple("lu_unpack", ["P", "L", "U"])
_lu_with_info_result = namedtuple("_lu_with_info", ["LU", "pivots", "info"])
_cholesky_ex_result = namedtuple("linalg_cholesky_ex", ["L", "info"])
_inv_ex_result = namedtuple("linalg_inv_ex", ["inverse", "info"])
_solve_ex_result = namedtuple("linalg_solve_ex", ["result", "info"])


def _out(result, out):
    """Copy ``result`` into ``out`` (a tensor or a tuple of tensors) when given."""
    if out is None:
        return result
    if isinstance(result, tuple):
        for o, r in zip(out, result):
            o.copy_(r)
        return out
    out.copy_(result)
    return out


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _swapdims(x, d0, d1):
    """A view of ``x`` with dims ``d0`` and ``d1`` swapped (through einsum, a pure permute)."""
    n = x.dim()
    if n == 0:
        return x
    d0, d1 = d0 % n, d1 % n
    src = list(_LETTERS[:n])
    dst = list(src)
    dst[d0], dst[d1] = dst[d1], dst[d0]
    return _C._einsum("".join(src) + "->" + "".join(dst), [x])


def _mT(x):
    return _swapdims(x, -2, -1)


def _cast(x, dtype):
    return x if dtype is None else x.to(dtype)


# ------------------------------------------------------------------------ products


def matmul(input, other, *, out=None):
    """Same as ``torch.matmul``."""
    return _out(input.matmul(other), out)


# ``caffe2::TypeMeta`` names, which ``multi_dot``'s dtype error prints.
_TYPEMETA_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
                   "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int",
                   "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
                   "bool": "bool"}


def multi_dot(tensors, *, out=None):
    """Product of a chain of matrices, multiplied in the cheapest order. The first and last
    tensors may be 1-D."""
    tensors = list(tensors)
    for i, t in enumerate(tensors[1:], 1):
        if isinstance(t, Tensor) and isinstance(tensors[0], Tensor) and t.dtype != tensors[0].dtype:
            def name(d):
                return _TYPEMETA_NAMES.get(str(d).rsplit(".", 1)[-1], str(d))
            raise RuntimeError(
                "multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                f"{name(tensors[0].dtype)} and tensor {i} {name(t.dtype)}")
    return _out(_C._linalg_multi_dot(tensors), out)


def _check_dim(dim, ndim):
    """PyTorch's IndexError for a ``dim`` outside ``[-ndim, ndim)`` (a 0-d tensor counts as
    1-d)."""
    n = builtins.max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")


def _broadcast_shape(a, b):
    """The broadcast of shapes ``a`` and ``b``, with PyTorch's error for a mismatch."""
    n = builtins.max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    for i, (p, q) in enumerate(zip(a, b)):
        if p != q and p != 1 and q != 1:
            raise RuntimeError(f"The size of tensor a ({p}) must match the size of tensor b "
                               f"({q}) at non-singleton dimension {i}")
    return tuple(q if p == 1 else p for p, q in zip(a, b))


def cross(input, other, *, dim=-1, out=None):
    """Cross product of 3-vectors along ``dim`` (inputs broadcast)."""
    if input.dim() == other.dim() > 0:
        _check_dim(dim, input.dim())
        # PyTorch checks the lengths along ``dim`` before broadcasting.
        if input.shape[dim] != 3 or other.shape[dim] != 3:
            raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. "
                               f"Got {input.shape[dim]} and {other.shape[dim]}")
    return _out(_C._linalg_cross(input, other, dim), out)


def vecdot(x, y, *, dim=-1, out=None):
    """Dot product of vectors along ``dim`` (inputs broadcast)."""
    for t in (x, y):
        _require_float_input(t, "linalg.vecdot")
    if x.dtype != y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found "
                           f"x of type {_dtype_name(x.dtype)} and y of type "
                           f"{_dtype_name(y.dtype)} instead")
    # The broadcast shape first: its error, and ``dim`` counted on it.
    shape = _broadcast_shape(tuple(x.shape), tuple(y.shape))
    _check_dim(dim, len(shape))
    x, y = x.expand(shape), y.expand(shape)
    x = _swapdims(x, dim, -1)
    y = _swapdims(y, dim, -1)
    return _out(_C._einsum("...i,...i->...", [x, y]), out)


def matrix_power(A, n, *, out=None):
    """``A`` to the integer power ``n`` (``n < 0`` inverts first)."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"linalg_matrix_power(): argument 'n' (position 2) must be int, not "
                        f"{type(n).__name__}")
    return _out(A.matrix_power(n), out)


# ------------------------------------------------------------------------ solvers, inverses


def _dtype_name(dtype):
    from ferrotorch._api_extra import _dtype_name as name

    return name(dtype)


def _not_implemented_for(kernel, A):
    """PyTorch's error for a dtype its CPU kernel is not compiled for (``float32``/``float64``
    only)."""
    if A.dtype not in (_C.float32, _C.float64) and not A.is_cuda:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_dtype_name(A.dtype)}\'')


def _first_failure(info):
    """Flat index of the first nonzero ``info`` (None when all are zero)."""
    flat = info.reshape(-1).tolist()
    return next((i for i, v in enumerate(flat) if v != 0), None)


def solve(A, B, *, left=True, out=None):
    """Solve ``A X = B`` (or ``X A = B`` with ``left=False``); batches broadcast."""
    try:
        X = _C._linalg_solve(A, B, left)
    except RuntimeError as e:
        msg = str(e)
        # PyTorch names the singular matrix of a batched ``A``.
        if "singular" in msg and A.dim() > 2 and "Batch element" not in msg:
            b = _first_failure(_C._linalg_lu_factor(A)[2])
            if b is not None:
                raise RuntimeError(msg.replace(": ", f": (Batch element {b}): ", 1)) from None
        raise
    return _out(X, out)


def inv(A, *, out=None):
    """Inverse of a (batch of) square matrix; raises RuntimeError for singular input."""
    return _out(_C._linalg_inv(A), out)


def det(A, *, out=None):
    """Determinant of a (batch of) square matrix."""
    return _out(_C._linalg_det(A), out)


def slogdet(A, *, out=None):
    """``(sign, logabsdet)`` of the determinant."""
    return _out(_slogdet_result(*_C._linalg_slogdet(A)), out)


def pinv(A, rcond=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """Moore-Penrose pseudo-inverse via the SVD (or eigh when ``hermitian``). ``rcond`` is
    PyTorch's older spelling of ``rtol`` (and excludes ``atol``/``rtol``)."""
    if rcond is not None:
        if atol is not None or rtol is not None:
            raise TypeError("linalg.pinv(): pass either rcond or atol/rtol, not both")
        rtol = rcond
    if A.dim() < 2 or A.dtype not in (_C.float32, _C.float64):
        shape = list(A.shape)
        raise RuntimeError(f"linalg.pinv({_dtype_name(A.dtype)}{{{shape}}}): expected a tensor "
                           "with 2 or more dimensions of float, double, cfloat or cdouble types")
    if _batched_tolerance(atol, rtol):
        return _out(_pinv_batched_tol(A, atol, rtol, hermitian), out)
    atol, rtol = _float_or_none(atol), _float_or_none(rtol)
    return _out(_C._linalg_pinv(A, atol, rtol, hermitian), out)


def _batched_tolerance(atol, rtol):
    """Whether a tolerance is a tensor of several values (one per matrix of the batch), which
    the Rust kernels (one float each) do not take."""
    return any(isinstance(t, Tensor) and t.numel() != 1 for t in (atol, rtol))


def _spectrum_and_tol(A, atol, rtol, hermitian):
    """The singular values (``|eigenvalues|`` when ``hermitian``) and the cut-off
    ``max(atol, rtol * largest)`` per matrix, shaped to broadcast against them. Defaults as
    PyTorch's: ``atol = 0``; ``rtol = eps * max(m, n)``, or 0 where a positive ``atol`` is
    given."""
    def as_tensor(t):
        return t if isinstance(t, Tensor) else _C.full((), builtins.float(t),
                                                        dtype=_C.float64, device=A.device)

    eps = 1.1920928955078125e-07 if A.dtype == _C.float32 else 2.220446049250313e-16
    default_rtol = as_tensor(eps * builtins.max(A.shape[-1], A.shape[-2]))
    zero = as_tensor(0.0)
    if rtol is None:
        rtol = default_rtol if atol is None else _C.where(as_tensor(atol) > 0, zero,
                                                            default_rtol)
    atol = zero if atol is None else as_tensor(atol)
    rtol = as_tensor(rtol)
    if hermitian:
        L, Q = eigh(A)
        S = L.abs()
        largest = S.amax(-1, keepdim=True) if S.shape[-1] else S.sum(-1, keepdim=True)
    else:
        U, S, Vh = svd(A, full_matrices=False)
        L, Q = None, (U, Vh)
        largest = S.narrow(-1, 0, 1) if S.shape[-1] else S.sum(-1, keepdim=True)
    largest = largest.to(_C.float64)
    tol = atol.unsqueeze(-1).maximum(rtol.unsqueeze(-1) * largest)
    return S, L, Q, tol


def _pinv_value(A, atol, rtol, hermitian):
    S, L, Q, tol = _spectrum_and_tol(A, atol, rtol, hermitian)
    keep = S.to(_C.float64) > tol
    zero = _C.zeros((), dtype=A.dtype, device=A.device)
    if hermitian:
        inv_s = _C.where(keep, L.reciprocal(), zero)
        return (Q * inv_s.unsqueeze(-2)) @ _mT(Q)
    U, Vh = Q
    inv_s = _C.where(keep, S.reciprocal(), zero)
    return (_mT(Vh) * inv_s.unsqueeze(-2)) @ _mT(U)


def _pinv_backward(grad, X, A):
    """PyTorch's ``pinv_backward``: the derivative of the pseudo-inverse ``X`` of ``A`` (at a
    fixed rank), for the general and the hermitian case alike."""
    Xh, gh = _mT(X), _mT(grad)
    if A.shape[-2] <= A.shape[-1]:
        K = gh @ X
        KXh = K @ Xh
        return -_mT(X @ K) + KXh - (A @ X) @ KXh + (Xh @ X) @ (gh - K @ A)
    K = X @ gh
    XhK = Xh @ K
    return -_mT(K @ X) + (gh - A @ K) @ X @ Xh + XhK - XhK @ X @ A


def _pinv_batched_tol(A, atol, rtol, hermitian):
    """``pinv`` with per-matrix tolerances; its gradient is PyTorch's explicit formula (not
    the one through the SVD/eigh, which differs for hermitian inputs)."""
    from ferrotorch.autograd import Function
    from ferrotorch.autograd.grad_mode import no_grad

    class _Pinv(Function):
        @staticmethod
        def forward(ctx, a):
            with no_grad():
                x = _pinv_value(a, atol, rtol, hermitian)
            ctx.save_for_backward(a, x)
            return x

        @staticmethod
        def backward(ctx, grad):
            a, x = ctx.saved_tensors
            return _pinv_backward(grad, x, a)

    return _Pinv.apply(A)


def _check_float_or_double(A):
    """The error of PyTorch's ``lstsq``/``matrix_rank`` for other dtypes."""
    if A.dtype not in (_C.float32, _C.float64):
        raise RuntimeError("This function doesn't handle types other than float and double")


def lstsq(A, B, rcond=None, *, driver=None):
    """Least-squares solution of ``A X = B``. Returns ``(solution, residuals, rank,
    singular_values)``; which auxiliary outputs are filled depends on ``driver`` as in
    PyTorch (default ``'gelsy'``: rank only)."""
    if A.dim() < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    _check_float_or_double(A)
    rcond = _float_or_none(rcond)
    vector = B.dim() == A.dim() - 1
    if vector and B.dim() >= 1 and A.shape[-2] != B.shape[-1]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-1)")
    solution, residuals, rank, sv = _C._linalg_lstsq(A, B, rcond, driver)
    # A vector ``B`` is solved as one column, whose residual keeps its dim (PyTorch's shape).
    if vector and residuals.dim() == A.dim() - 2 and residuals.numel() > 0:
        residuals = residuals.unsqueeze(-1)
    return _lstsq_result(solution, residuals, rank, sv)


def matrix_rank(A, tol=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """Number of singular values above ``max(atol, rtol * largest)`` (int64). The older
    ``tol`` argument is an ``atol`` with ``rtol = 0``."""
    if tol is not None:
        if atol is not None or rtol is not None:
            raise TypeError("linalg_matrix_rank(): pass either tol or atol/rtol, not both")
        atol, rtol = tol, 0.0
    if A.dim() < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at least "
                           "2 dimensions.")
    _check_float_or_double(A)
    if _batched_tolerance(atol, rtol):
        S, _, _, tol = _spectrum_and_tol(A.detach(), atol, rtol, hermitian)
        return _out((S.to(_C.float64) > tol).sum(-1), out)
    atol, rtol = _float_or_none(atol), _float_or_none(rtol)
    return _out(_C._linalg_matrix_rank(A, atol, rtol, hermitian), out)


def _float_or_none(x):
    if x is None:
        return None
    if isinstance(x, Tensor):  # (one value: several go through _spectrum_and_tol)
        return builtins.float(x.item())
    return builtins.float(x)


# ------------------------------------------------------------------------ decompositions


def cholesky(A, *, upper=False, out=None):
    """Cholesky factor ``L`` (``A = L L^T``), or ``U`` with ``upper=True``."""
    return _out(_C._linalg_cholesky(A, upper), out)


def qr(A, mode="reduced", *, out=None):
    """QR decomposition; ``mode`` is ``'reduced'``, ``'complete'`` or ``'r'``."""
    return _out(_qr_result(*_C._linalg_qr(A, mode)), out)


def _check_svd_driver(A, driver):
    """``driver=`` picks a cuSOLVER algorithm: PyTorch rejects it for CPU inputs (on CUDA it
    is accepted and the one SVD algorithm is used)."""
    if driver is not None and not A.is_cuda and A.numel() > 0:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on "
                           "CUDA inputs with cuSOLVER backend.")


def svd(A, full_matrices=True, *, driver=None, out=None):
    """``(U, S, Vh)`` with ``A = U diag(S) Vh``, ``S`` descending."""
    _check_svd_driver(A, driver)
    return _out(_svd_result(*_C._linalg_svd(A, full_matrices)), out)


def svdvals(A, *, driver=None, out=None):
    """Singular values, descending."""
    _check_svd_driver(A, driver)
    return _out(_C._linalg_svdvals(A), out)


def eigh(A, UPLO="L", *, out=None):
    """Eigen-decomposition of a symmetric matrix: eigenvalues ascending, eigenvectors as
    columns. Only the ``UPLO`` triangle is read."""
    if A.dim() >= 2:
        _not_implemented_for("linalg_eigh_cpu", A)
    return _out(_eigh_result(*_C._linalg_eigh(A, UPLO, True)), out)


def eigvalsh(A, UPLO="L", *, out=None):
    """Eigenvalues (ascending) of a symmetric matrix."""
    if A.dim() >= 2:
        _not_implemented_for("linalg_eigh_cpu", A)
    try:
        return _out(_C._linalg_eigh(A, UPLO, False)[0], out)
    except RuntimeError as e:  # PyTorch's errors name linalg.eigh, which eigvalsh calls
        msg = str(e)
        if msg.startswith("linalg.eigvalsh:"):
            raise type(e)("linalg.eigh:" + msg[len("linalg.eigvalsh:"):]) from None
        raise


# ------------------------------------------------------------------------ triangular systems, LU


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """Solve ``A X = B`` (``X A = B`` with ``left=False``) for triangular ``A``; only the
    ``upper`` (or lower) triangle of ``A`` is read, and ``unitriangular`` takes its diagonal
    as ones. Batches broadcast."""
    _not_implemented_for("triangular_solve_cpu", A)
    if B.dtype != A.dtype and A.is_floating_point():
        B = B.to(A.dtype)  # PyTorch computes (and returns) in A's dtype
    return _out(
        _C._linalg_solve_triangular(A, B, upper, left, unitriangular),
        out,
    )


def _check_pivot(name, pivot):
    if not pivot:
        # (linalg.lu reports it under lu_factor's name too, as PyTorch)
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")


def _check_lu_input(name, A):
    if A.dim() < 2:
        raise RuntimeError(f"{name}: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(A.shape)} instead")
    _not_implemented_for("lu_cpu", A)


def _check_lu_info(name, info, batched):
    """PyTorch's error for a singular ``U`` found by ``lu_factor``."""
    flat = info.reshape(-1)
    if not flat.numel() or not bool((flat != 0).any()):
        return
    bad = flat.tolist()
    b = next(i for i, v in enumerate(bad) if v != 0)
    where = f"(Batch element {b}): " if batched else ""
    raise RuntimeError(
        f"{name}: {where}U[{bad[b]},{bad[b]}] is zero and using it on lu_solve would result "
        "in a division by zero. If you still want to perform the factorization, consider "
        "calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)"
    )


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """``(LU, pivots, info)``: the LU factorisation with partial pivoting in LAPACK's packed
    form, 1-based int32 ``pivots`` and ``info`` (0, or the first zero pivot of ``U``)."""
    _check_pivot("linalg.lu_factor", pivot)
    _check_lu_input("torch.lu_factor", A)
    LU, pivots, info = _C._linalg_lu_factor(A)
    if check_errors:
        _check_lu_info("torch.linalg.lu_factor_ex", info, A.dim() > 2)
    return _out(_lu_factor_ex_result(LU, pivots, info), out)


def lu_factor(A, *, pivot=True, out=None):
    """``(LU, pivots)`` as ``lu_factor_ex``; raises RuntimeError when ``U`` is singular."""
    LU, pivots, info = lu_factor_ex(A, pivot=pivot)
    _check_lu_info("torch.linalg.lu_factor", info, A.dim() > 2)
    return _out(_lu_factor_result(LU, pivots), out)


def lu(A, *, pivot=True, out=None):
    """``(P, L, U)`` with ``A = P L U``: ``L`` unit lower (m x k), ``U`` upper (k x n)."""
    _check_pivot("linalg.lu", pivot)
    _check_lu_input("linalg.lu", A)
    return _out(_lu_result(*_C._linalg_lu(A)), out)


def _lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """``torch.lu_unpack``: ``(P, L, U)`` from a packed LU and its pivots (differentiable in
    ``LU_data``)."""
    if LU_data.dim() < 2:
        raise RuntimeError("torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(LU_data.shape)} instead")
    m, n = LU_data.shape[-2], LU_data.shape[-1]
    k = builtins.min(m, n)
    empty = _C.empty(0, dtype=LU_data.dtype, device=LU_data.device)
    L = U = P = empty
    if unpack_data:
        unit = _C.eye(m, k, dtype=LU_data.dtype, device=LU_data.device)
        L = LU_data.narrow(-1, 0, k).tril(-1) + unit
        U = LU_data.narrow(-2, 0, k).triu()
    if unpack_pivots:
        if LU_pivots.dtype != _C.int32:
            raise RuntimeError(
                "torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of "
                "torch.int32 dtype.\nNote: this function is intended to be used with the output "
                "produced by torch.linalg.lu_factor"
            )
        P = _C._lu_pivots_to_permutation(LU_pivots, m, LU_data.dtype)
    return _out(_lu_unpack_result(P, L, U), out)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """Solve ``A X = B`` from ``A``'s LU factorisation (``X A = B`` with ``left=False``,
    ``A^T`` in place of ``A`` with ``adjoint=True``). Differentiable in ``LU`` and ``B``."""
    # PyTorch's checks, in its order.
    _require_float_input(LU, "torch.linalg.lu_solve")
    if LU.dtype != B.dtype:
        raise RuntimeError(f"linalg.lu_solve: Expected LU and B to have the same dtype, but found "
                           f"LU of type {_dtype_name(LU.dtype)} and B of type "
                           f"{_dtype_name(B.dtype)} instead")
    if pivots.dtype != _C.int32:
        raise RuntimeError("linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32")
    _check_square("torch.linalg.lu_solve", LU)
    if B.dim() < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 dimensions.")
    n = LU.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and "
                           f"{B.shape[-2]}x{B.shape[-1]})")
    if pivots.dim() < 1 or pivots.shape[-1] != n:
        raise RuntimeError("linalg.lu_solve: Number of pivots per batch should be same as the "
                           "dimension of the matrix")
    if tuple(pivots.shape) != tuple(LU.shape[:-1]):
        raise RuntimeError("linalg.lu_solve: Expected LU.shape[:-1] and pivots.shape to be the "
                           f"same, but got pivots with shape {list(pivots.shape)} instead")
    P, L, U = _lu_unpack(LU, pivots)
    tri = solve_triangular
    if left and not adjoint:  # A = P L U
        X = tri(U, tri(L, _mT(P) @ B, upper=False, unitriangular=True), upper=True)
    elif left:  # A^T X = B with A^T = U^T L^T P^T
        X = P @ tri(_mT(L), tri(_mT(U), B, upper=False), upper=True, unitriangular=True)
    elif not adjoint:  # X P L U = B
        Y = tri(L, tri(U, B, upper=True, left=False), upper=False, left=False,
                unitriangular=True)
        X = Y @ _mT(P)
    else:  # X U^T L^T P^T = B
        Y = tri(_mT(L), B @ P, upper=True, left=False, unitriangular=True)
        X = tri(_mT(U), Y, upper=False, left=False)
    return _out(X, out)


def _torch_lu(A, pivot=True, get_infos=False, out=None):
    """Deprecated ``torch.lu``: ``(A_LU, pivots[, infos])``; never raises for singular
    input."""
    LU, pivots, info = lu_factor_ex(A, pivot=pivot)
    return _out(_lu_with_info_result(LU, pivots, info) if get_infos else (LU, pivots), out)


def _torch_lu_solve(b, LU_data, LU_pivots, *, out=None):
    """Deprecated ``torch.lu_solve(b, LU_data, LU_pivots)``."""
    return lu_solve(LU_data, LU_pivots, b, out=out)


# ------------------------------------------------------------------------ *_ex variants


def _zeros_info(A, n_batch_dims):
    return _C.zeros(tuple(A.shape[:n_batch_dims]), dtype=_C.int32, device=A.device)


def _renamed(e, old, new):
    """``e`` (a LinAlgError) with its message under the name of the ``*_ex`` function."""
    return LinAlgError(str(e).replace(old, new, 1))


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """``(L, info)``: ``info`` is 0, or the order of the first leading minor that is not
    positive-definite (then that matrix's ``L`` is left as zeros). With ``check_errors``
    the failure raises as ``cholesky`` does."""
    try:
        return _out(_cholesky_ex_result(cholesky(A, upper=upper), _zeros_info(A, A.dim() - 2)),
                    out)
    except LinAlgError as e:  # (other errors, such as a wrong shape or dtype, propagate)
        if check_errors:
            raise _renamed(e, "linalg.cholesky:", "linalg.cholesky_ex:") from None
    # Some matrix failed: factor the batch one matrix at a time to find which.
    n = A.shape[-1]
    flat = A.reshape(-1, n, n)
    Ls, infos = [], []
    for i in range(flat.shape[0]):
        try:
            Ls.append(cholesky(flat[i], upper=upper))
            infos.append(0)
        except RuntimeError as e:
            msg = str(e)
            order = msg.split("minor of order ")[-1].split(" ")[0] if "order" in msg else "1"
            Ls.append(_C.zeros_like(flat[i]))
            infos.append(builtins.int(order))
    L = _C.stack(Ls).reshape(A.shape)
    info = _C.tensor(infos, dtype=_C.int32, device=A.device).reshape(tuple(A.shape[:-2]))
    return _out(_cholesky_ex_result(L, info), out)


def inv_ex(A, *, check_errors=False, out=None):
    """``(inverse, info)``: ``info`` is 0, or the first zero pivot of ``A``'s LU (then that
    inverse holds inf/NaN, as LAPACK leaves it)."""
    try:
        return _out(_inv_ex_result(inv(A), _zeros_info(A, A.dim() - 2)), out)
    except LinAlgError as e:
        if check_errors:
            raise _renamed(e, "linalg.inv:", "linalg.inv_ex:") from None
    LU, pivots, info = lu_factor_ex(A)
    eye = _C.eye(A.shape[-1], dtype=A.dtype, device=A.device)
    return _out(_inv_ex_result(lu_solve(LU, pivots, eye.expand(A.shape)), info), out)


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """``(result, info)`` as ``inv_ex`` for ``solve``."""
    try:
        return _out(_solve_ex_result(solve(A, B, left=left), _zeros_info(A, A.dim() - 2)), out)
    except LinAlgError as e:
        if check_errors or B.dim() == 0:
            raise _renamed(e, "torch.linalg.solve:", "torch.linalg.solve_ex:") from None
    LU, pivots, info = lu_factor_ex(A)
    vector = B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    b = B.unsqueeze(-1) if vector else B
    X = lu_solve(LU, pivots, b, left=left)
    return _out(_solve_ex_result(X.squeeze(-1) if vector else X, info), out)


# ------------------------------------------------------------------------ matrix functions

# Pade approximants of exp (Higham, "The scaling and squaring method for the matrix
# exponential revisited", 2005): numerator coefficients and the 1-norm bound up to which
# each degree is accurate to double precision.
_PADE = {
    3: (1.495585217958292e-2, (120.0, 60.0, 12.0, 1.0)),
    5: (2.539398330063230e-1, (30240.0, 15120.0, 3360.0, 420.0, 30.0, 1.0)),
    7: (9.504178996162932e-1, (17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0,
                               56.0, 1.0)),
    9: (2.097847961257068, (17643225600.0, 8821612800.0, 2075673600.0, 302702400.0,
                            30270240.0, 2162160.0, 110880.0, 3960.0, 90.0, 1.0)),
}
_PADE13_THETA = 5.371920351148152
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
           40840800.0, 960960.0, 16380.0, 182.0, 1.0)


def matrix_exp(A):
    """Matrix exponential by scaling and squaring with a Pade approximant (the degree chosen
    from the largest 1-norm in the batch); differentiable, since it is built from products
    and one solve."""
    _check_square("linalg.matrix_exp", A)
    _require_float_input(A, "linalg.matrix_exp")
    if A.numel() == 0:
        return A.clone()
    n = A.shape[-1]
    # A matrix holding inf/NaN has an all-NaN exponential (as PyTorch's); the rest of the
    # batch is computed as usual.
    finite = A.detach().isfinite().reshape(tuple(A.shape[:-2]) + (n * n,)).all(-1)
    if not bool(finite.all()):
        mask = finite.reshape(tuple(finite.shape) + (1, 1))
        zero = _C.zeros((), dtype=A.dtype, device=A.device)
        nan = _C.full((), math.nan, dtype=A.dtype, device=A.device)
        return _C.where(mask, matrix_exp(_C.where(mask, A, zero)), nan)
    eye = _C.eye(n, dtype=A.dtype, device=A.device)
    norm = builtins.float(A.detach().abs().sum(-2).amax().item())
    for m, (theta, b) in _PADE.items():
        if norm <= theta:
            powers = [eye, A @ A]
            while len(powers) < (m + 1) // 2:
                powers.append(powers[-1] @ powers[1])
            U = A @ builtins.sum((b[2 * i + 1] * p for i, p in enumerate(powers)),
                                 start=_C.zeros_like(A))
            V = builtins.sum((b[2 * i] * p for i, p in enumerate(powers)),
                             start=_C.zeros_like(A))
            return solve(V - U, V + U)
    s = builtins.max(0, math.ceil(math.log2(norm / _PADE13_THETA)))
    A = A / (2.0 ** s)
    b = _PADE13
    A2 = A @ A
    A4 = A2 @ A2
    A6 = A4 @ A2
    U = A @ (A6 @ (b[13] * A6 + b[11] * A4 + b[9] * A2) + b[7] * A6 + b[5] * A4 + b[3] * A2
             + b[1] * eye)
    V = A6 @ (b[12] * A6 + b[10] * A4 + b[8] * A2) + b[6] * A6 + b[4] * A4 + b[2] * A2 \
        + b[0] * eye
    R = solve(V - U, V + U)
    for _ in range(s):
        R = R @ R
    return R


def _check_square(name, A):
    if A.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")


def _num(x):
    """A number as C++ streams print a double (``3``, ``0.5``, ``inf``)."""
    return str(builtins.int(x)) if builtins.float(x).is_integer() else str(x)


def cond(A, p=None, *, out=None):
    """Condition number of ``A`` in the ``p`` norm (2-norm via singular values by default;
    inf for singular matrices with the other norms, 0 for empty matrices)."""
    if A.dim() < 2:
        raise RuntimeError("linalg.cond: The input tensor must have at least 2 dimensions.")
    inf = builtins.float("inf")
    name = p if isinstance(p, str) or p is None else _num(p)
    if p not in ("fro", "nuc", None) and (isinstance(p, str) or builtins.abs(p) not in (1, 2, inf)):
        raise ValueError(f"linalg.cond got an invalid norm type: {name}")
    if A.numel() == 0:  # NumPy leaves it undefined; PyTorch returns 0
        return _out(_C.zeros(tuple(A.shape[:-2]), dtype=A.dtype, device=A.device), out)
    if p is None or p in (2, -2):
        s = svdvals(A)
        big, small = s[..., 0], s[..., -1]
        return _out(small / big if p == -2 else big / small, out)
    _check_square(f"linalg.cond(ord={name})", A)
    inverse, info = inv_ex(A)
    singular = info != 0
    # A singular matrix's inverse (inf/NaN) is replaced by zeros so that its norm (an SVD for
    # 'nuc') stays finite; the result is inf there.
    zero = _C.zeros((), dtype=A.dtype, device=A.device)
    inverse = _C.where(singular.reshape(tuple(info.shape) + (1, 1)), zero, inverse)
    r = matrix_norm(A, p) * matrix_norm(inverse, p)
    return _out(_C.where(singular, _C.full((), inf, dtype=r.dtype, device=r.device), r), out)


def _prod(xs):
    r = 1
    for x in xs:
        r *= x
    return r


def tensorinv(A, ind=2, *, out=None):
    """The tensor ``X`` with ``tensordot(A, X, ind)`` the identity: ``A.shape[:ind]`` and
    ``A.shape[ind:]`` must hold the same number of elements."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    if _prod(rows) != _prod(cols):
        raise RuntimeError(
            f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
            f"prod(self.shape[:ind]), but got {_prod(cols)} != {_prod(rows)}"
        )
    return _out(inv(A.reshape(_prod(rows), _prod(cols))).reshape(cols + rows), out)


def tensorsolve(A, B, dims=None, *, out=None):
    """The tensor ``X`` with ``tensordot(A, X, X.ndim) == B``; ``dims`` are moved to the end
    of ``A`` first."""
    if dims is not None:
        nd = A.dim()
        dims = [d % nd for d in dims]
        keep = [d for d in range(nd) if d not in dims]
        A = A.permute(*(keep + dims))
    rhs = _prod(B.shape)
    x_shape = tuple(A.shape[B.dim():])
    if _prod(A.shape[:B.dim()]) != rhs or _prod(x_shape) != rhs:
        raise RuntimeError(  # (PyTorch's message prints prod(other.shape) second)
            "Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
            f"prod(self.shape[:other.ndim]), but got {_prod(x_shape)} != {rhs}"
        )
    x = solve(A.reshape(rhs, rhs), B.reshape(rhs))
    return _out(x.reshape(x_shape), out)


def vander(x, *, N=None):
    """Vandermonde matrix with increasing powers: ``[x^0, x^1, ..., x^(N-1)]`` along a new
    last dim (``N`` defaults to ``x.shape[-1]``)."""
    if x.dtype == _C.bool:
        raise NotImplementedError("linalg.vander supports floating point, complex, and integer "
                                  "tensors, but got Bool")
    if x.dim() == 0:
        x = x.unsqueeze(-1)  # a scalar is one point, as in PyTorch
    if N is None:
        N = x.shape[-1]
    if N <= 1:
        raise RuntimeError("N must be greater than 1.")
    cols = [_C.ones_like(x)]
    for _ in range(1, N):
        cols.append(cols[-1] * x)
    return _C.stack(cols, -1)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """``A.diagonal(offset, dim1, dim2)``, with ``torch.linalg``'s matrix defaults."""
    return A.diagonal(offset, dim1, dim2)


# ------------------------------------------------------------------------ norms


def _dims(dim):
    if dim is None:
        return None
    if isinstance(dim, int):
        return [dim]
    return [int(d) for d in dim]


def _double_where_root(s, root):
    """``root(s)`` with 0 where ``s`` is 0, the root never seeing 0 (so its infinite slope
    there is never multiplied: the gradient is 0 where the norm is 0, as PyTorch's)."""
    zero = s == 0
    safe = _C.where(zero, _C.ones((), dtype=s.dtype, device=s.device), s)
    return _C.where(zero, _C.zeros((), dtype=s.dtype, device=s.device), root(safe))


def _composed_vector_norm(x, ord, dims, keepdim):
    """``vector_norm`` from elementwise ops and reductions that have CUDA kernels (the Rust
    norm kernel is CPU-only), with the gradients of PyTorch's norm (0 where the norm is 0,
    the inf-norm gradient shared evenly among the maxima). Returns None for the orders and
    shapes it does not cover (ord <= 0 except -inf, empty inputs, an empty ``dim`` list)."""
    if x.numel() == 0 or (dims is not None and len(dims) == 0):
        return None
    if dims is not None:
        n = builtins.max(x.dim(), 1)
        if any(not -n <= d < n for d in dims) or len({d % n for d in dims}) != len(dims):
            return None  # the CPU kernel raises PyTorch's error
    inf = builtins.float("inf")
    if ord == 0 or (ord < 1 and ord != -inf):
        return None  # (0 < ord < 1 too: the Rust node's gradient is 0 at zero elements)
    dt = x.dtype
    # Half types accumulate in float32 (the CPU kernel accumulates in float64).
    xf = x.float() if dt in (_C.float16, _C.bfloat16) else x
    if x.dim() == 0:
        r = xf.abs()  # the norm of one number, whatever the order
    else:
        d = list(range(x.dim())) if dims is None else dims
        a = xf.abs()
        if ord == inf:
            r = a.amax(d, keepdim=keepdim)
        elif ord == -inf:
            r = a.amin(d, keepdim=keepdim)
        elif ord == 1:
            r = a.sum(d, keepdim=keepdim)
        elif ord == 2:
            r = _double_where_root((xf * xf).sum(d, keepdim=keepdim), lambda s: s.sqrt())
        else:
            r = _double_where_root(a.pow(ord).sum(d, keepdim=keepdim), lambda s: s.pow(1.0 / ord))
    return r.to(dt) if r.dtype != dt else r


def _require_float_input(x, op):
    """PyTorch's NotImplementedError for a non-floating input (the norms check it before
    their ``dtype=`` cast, as PyTorch does)."""
    if not x.is_floating_point():
        raise NotImplementedError(f"{op}: Expected a floating point or complex tensor as "
                                  f"input. Got {_dtype_name(x.dtype)}")


def _check_norm_dtype(x, dtype, op):
    """PyTorch's checks of a norm's ``dtype=``: floating, and no narrower than the input's."""
    if dtype is None:
        return
    if not dtype.is_floating_point:
        raise RuntimeError(f"{op}: dtype should be floating point or complex, but got "
                           f"{_dtype_name(dtype)}")
    if _C.promote_types(x.dtype, dtype) != dtype:
        raise RuntimeError(f"{op}: the dtype of the input ({_dtype_name(x.dtype)}) should be "
                           f"convertible without narrowing to the specified dtype "
                           f"({_dtype_name(dtype)})")


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """Vector ``ord``-norm over ``dim`` (all elements when ``None``)."""
    if isinstance(ord, str):
        raise TypeError("linalg_vector_norm(): argument 'ord' (position 2) must be Number, "
                        "not str")
    _require_float_input(x, "linalg.vector_norm")
    _check_norm_dtype(x, dtype, "linalg.vector_norm")
    x = _cast(x, dtype)
    ord, dims = builtins.float(ord), _dims(dim)
    if x.numel() == 0 and (ord < 0 or ord == math.inf) and dims:
        for d in dims:  # (PyTorch's message, its missing space included)
            if -x.dim() <= d < x.dim() and x.shape[d] == 0:
                raise RuntimeError(f"linalg.vector_norm cannot compute the {_num(ord)} norm on "
                                   f"the dimension {d}because this dimension is empty and the "
                                   "operation does not have an identity")
    if x.is_cuda and x.is_floating_point():
        r = _composed_vector_norm(x, ord, dims, keepdim)
        if r is not None:
            return _out(r, out)
    return _out(_C._linalg_vector_norm(x, ord, dims, keepdim), out)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """Matrix norm: ``'fro'``, ``'nuc'``, ``inf``, ``-inf``, ``1``, ``-1``, ``2``, ``-2``."""
    if not isinstance(ord, str):
        ord = builtins.float(ord)
    # The order is checked first, as PyTorch does.
    if ord not in ("fro", "nuc") and (isinstance(ord, str)
                                      or builtins.abs(ord) not in (1, 2, math.inf)):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord if isinstance(ord, str) else _num(ord)}"
                           " not supported.")
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    _require_float_input(A, "linalg.matrix_norm")
    _check_norm_dtype(A, dtype, "linalg.matrix_norm")
    A = _cast(A, dtype)
    d = tuple(dim)
    if len(d) != 2:
        raise RuntimeError("linalg.matrix_norm: dim must be a 2-tuple. Got "
                           + " ".join(str(int(x)) for x in d))
    d = (int(d[0]), int(d[1]))
    if (
        ord == "fro"
        and A.is_cuda
        and A.is_floating_point()
        and A.dim() >= 2
        and -A.dim() <= min(d)
        and max(d) < A.dim()
        and d[0] % A.dim() != d[1] % A.dim()
    ):
        return _out(vector_norm(A, 2, d, keepdim), out)
    if A.numel() == 0 and not isinstance(ord, str):
        return _out(_empty_matrix_norm(A, ord, d, keepdim), out)
    return _out(_C._linalg_matrix_norm(A, ord, d, keepdim), out)


def _empty_matrix_norm(A, ord, d, keepdim):
    """A numeric-order norm of empty matrices as PyTorch gives it: 0 for the positive orders;
    for the negative ones a min over the reduced dims (``amin``'s IndexError where such a dim
    is empty, as every singular value dim is)."""
    for x in d:
        _check_dim(x, A.dim())
    d0, d1 = (x % A.dim() for x in d)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({d0}, {d1})")
    if ord == -2 and builtins.min(A.shape[d0], A.shape[d1]) == 0:
        # the smallest of no singular values
        raise IndexError("amin(): Expected reduction dim -1 to have non-zero size.")
    if ord > 0 or ord == -2:  # (-2 here: an empty batch of nonempty matrices)
        return A.abs().sum([d0, d1], keepdim=keepdim)  # zeros, still in A's graph
    if ord == -math.inf:  # the inf norm is the 1 norm of the transpose
        d0, d1 = d1, d0
    if not keepdim and d0 < d1:
        d1 -= 1
    return vector_norm(A, 1.0, d0, keepdim).amin(d1, keepdim=keepdim)


def norm(A, ord=None, dim=None, keepdim=False, *, out=None, dtype=None):
    """``torch.linalg.norm``: a matrix norm for a string ``ord``, or a numeric ``ord`` with two
    ``dim`` (or none and a 2-D input); otherwise a vector norm (``ord=None``: the 2-norm of
    all the ``dim``, which equals the Frobenius norm)."""
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None:
        if len(dim) not in (1, 2):
            raise RuntimeError("linalg.norm: If dim is specified, it must be of length 1 or 2. "
                               f"Got {list(dim)}")
    elif ord is not None and A.dim() not in (1, 2):
        raise RuntimeError("linalg.norm: If dim is not specified but ord is, the input must be "
                           f"1D or 2D. Got {A.dim()}D.")
    if isinstance(ord, str) or (ord is not None and (len(dim) == 2 if dim is not None
                                                     else A.dim() == 2)):
        return matrix_norm(A, ord, (0, 1) if dim is None else dim, keepdim, dtype=dtype,
                           out=out)
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype, out=out)


# ------------------------------------------------------------------------ top-level torch.*
# (installed into the ``ferrotorch`` namespace by ``__init__``)


def _einsum(equation, *operands):
    """``torch.einsum(equation, *operands)`` (operands may also be given as one list), or the
    sublist form ``einsum(op1, sublist1, op2, sublist2, ..., [sublist_out])``."""
    if not isinstance(equation, str):
        equation, operands = _einsum_sublist_equation((equation, *operands))
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise ValueError("einsum(): must specify the equation string and at least one operand, "
                         "or at least one operand and its subscripts list")
    for i, o in enumerate(operands):
        if not isinstance(o, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 1, but got "
                            f"{type(o).__name__}")
    return _C._einsum(equation, list(operands))


def _einsum_subscript(n):
    if n is Ellipsis:
        return "..."
    if 0 <= n < 26:
        return chr(ord("A") + n)
    if 26 <= n < 52:
        return chr(ord("a") + n - 26)
    raise ValueError(
        "einsum(): subscript in subscript list is not within the valid range [0, 52)"
    )


def _einsum_sublist_equation(args):
    """The equation and operands of ``einsum``'s sublist form (as PyTorch spells it)."""
    operands = args[0::2]
    sublists = args[1::2]
    out = None
    if len(args) % 2 == 1:  # a trailing output sublist
        operands, out = operands[:-1], operands[-1]
    equation = ",".join("".join(_einsum_subscript(n) for n in sub) for sub in sublists)
    if out is not None:
        equation += "->" + "".join(_einsum_subscript(n) for n in out)
    return equation, operands


def _tensordot(a, b, dims=2, out=None):
    """``torch.tensordot``: ``dims`` is an int (last/first dims) or a pair of dim lists."""
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > a.dim() or dims > b.dim():
            raise RuntimeError(
                f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}"
            )
        da = list(range(a.dim() - dims, a.dim()))
        db = list(range(dims))
    elif isinstance(dims, (list, tuple)):
        if len(dims) != 2:
            raise ValueError(f"tensordot expects dims to be a pair of lists of dims, got {dims}")
        da, db = (_tensordot_dims(d, name) for d, name in zip(dims, ("dims_self", "dims_other")))
    else:
        raise RuntimeError("tensordot expects dims to be int or tuple[list[int], list[int]] or "
                           f"list[list[int]] containing two lists, but got dims={dims}")
    return _out(_C._tensordot(a, b, da, db), out)


def _tensordot_dims(d, name):
    """One of tensordot's two dim lists: a sequence of ints (an int alone is rejected, as by
    PyTorch's argument parser)."""
    bad = [d] if not isinstance(d, (list, tuple)) else [
        i for i in d if not isinstance(i, int) or isinstance(i, bool)]
    if bad:
        raise TypeError(f"tensordot(): argument '{name}' must be tuple of ints, not "
                        f"{type(bad[0]).__name__}")
    return list(d)


def _chain_matmul(*matrices, out=None):
    """Deprecated ``torch.chain_matmul``: ``multi_dot`` of 2-D matrices."""
    if len(matrices) == 1:
        return _out(matrices[0].clone(), out)
    return multi_dot(matrices, out=out)


def _torch_norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """Deprecated ``torch.norm`` / ``Tensor.norm``."""
    if isinstance(dim, int):
        dim = (dim,)
    if p == "fro" and (dim is None or len(dim) <= 2):
        return vector_norm(input, 2, dim, keepdim, dtype=dtype, out=out)
    if p == "fro":  # over more than 2 dims: matrix_norm's error, as PyTorch
        return matrix_norm(input, "fro", dim, keepdim, dtype=dtype, out=out)
    if p == "nuc":  # over all dims when dim is None, as PyTorch: a 2-D input only
        return matrix_norm(input, "nuc", tuple(builtins.range(input.dim())) if dim is None
                           else dim, keepdim, dtype=dtype, out=out)
    if isinstance(p, str):  # another string: matrix_norm's error, as PyTorch
        return matrix_norm(input, p, (-2, -1) if dim is None else dim, keepdim, dtype=dtype,
                           out=out)
    if p is None:
        p = 2
    try:
        p = builtins.float(p)
    except (TypeError, ValueError):
        raise RuntimeError(f"norm(): unsupported norm type {p!r}") from None
    return vector_norm(input, p, dim, keepdim, dtype=dtype, out=out)


def _torch_slogdet(A):
    return _torch_slogdet_result(*_C._linalg_slogdet(A))


def _torch_svd(input, some=True, compute_uv=True, *, out=None):
    """Deprecated ``torch.svd``: returns ``(U, S, V)`` (V, not Vh)."""

    def svd_(a):
        if not compute_uv:  # zero U (m x m) and V (n x n), whatever ``some``
            m, n = a.shape[-2:] if a.dim() >= 2 else (0, 0)
            batch = tuple(a.shape[:-2])
            S = _C._linalg_svdvals(a)
            return (_C.zeros(batch + (m, m), dtype=S.dtype, device=a.device), S,
                    _C.zeros(batch + (n, n), dtype=S.dtype, device=a.device))
        U, S, Vh = _C._linalg_svd(a, not some)
        return U, S, _mT(Vh)

    return _out(_torch_svd_result(*svd_(input)), out)


def _torch_qr(input, some=True, *, out=None):
    """Deprecated ``torch.qr``."""
    mode = "reduced" if some else "complete"
    return _out(_torch_qr_result(*_C._linalg_qr(input, mode)), out)


def _cholesky_inverse(L, upper=False, *, out=None):
    """``torch.cholesky_inverse``: inverse of ``A`` from its Cholesky factor. Only the factor's
    triangle is read (the lower one, the upper one with ``upper=True``), as in PyTorch."""

    def inverse(t):
        t = t.triu() if upper else t.tril()
        return _C._linalg_inv(_mT(t) @ t if upper else t @ _mT(t))

    _check_square("cholesky_inverse", L)
    _not_implemented_for("cholesky_inverse_out_cpu", L)
    try:
        return _out(inverse(L), out)
    except RuntimeError as e:  # the singular-factor error, under this function's name
        raise type(e)(str(e).replace("linalg.inv:", "cholesky_inverse:", 1)) from None


# Tensor methods whose PyTorch results are named tuples or have Python-level semantics.
Tensor.slogdet = lambda self: _torch_slogdet(self)
Tensor.norm = lambda self, p="fro", dim=None, keepdim=False, dtype=None: _torch_norm(
    self, p, dim, keepdim, dtype=dtype
)
Tensor.svd = lambda self, some=True, compute_uv=True: _torch_svd(self, some, compute_uv)
Tensor.qr = lambda self, some=True: _torch_qr(self, some)
Tensor.lu = lambda self, pivot=True, get_infos=False: _torch_lu(self, pivot, get_infos)
Tensor.lu_solve = lambda self, LU_data, LU_pivots: _torch_lu_solve(self, LU_data, LU_pivots)
Tensor.matrix_exp = lambda self: matrix_exp(self)


# ------------------------------------------------------------------ LinAlgError
class LinAlgError(RuntimeError):
    """Raised by the ``linalg`` functions when a decomposition or solve fails on its input (a
    singular or non-positive-definite matrix, no convergence); a ``RuntimeError``, as
    PyTorch's ``torch.linalg.LinAlgError``."""


_LINALG_FAILURES = ("singular", "not positive-definite", "failed to converge",
                    "could not be completed", "did not converge")


def _raising_linalg_error(fn):
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (LinAlgError, NotImplementedError):
            raise
        except RuntimeError as e:
            msg = str(e)
            if any(s in msg for s in _LINALG_FAILURES):
                raise LinAlgError(msg) from None
            # PyTorch's dtype check for an integer input raises NotImplementedError.
            if "Expected a floating point or complex tensor as input" in msg:
                raise NotImplementedError(msg) from None
            raise

    return wrapper


def _install_linalg_errors():
    import ferrotorch as _ft
    g = globals()
    for name in ("solve", "inv", "cholesky", "lu_factor", "lu_solve", "solve_triangular",
                 "tensorinv", "tensorsolve", "svd", "svdvals", "eigh", "eigvalsh", "pinv",
                 "lstsq", "matrix_rank", "cond", "matrix_power", "det", "slogdet", "qr",
                 "lu", "multi_dot", "matrix_exp"):
        if callable(g.get(name)):
            g[name] = _raising_linalg_error(g[name])
    for name in ("inverse", "cholesky", "cholesky_inverse", "cholesky_solve", "lu", "lu_solve",
                 "svd", "triangular_solve", "det", "logdet", "slogdet", "pinverse"):
        if callable(getattr(_ft, name, None)):
            setattr(_ft, name, _raising_linalg_error(getattr(_ft, name)))
    for name in ("inverse", "cholesky", "cholesky_inverse", "cholesky_solve", "lu", "lu_solve",
                 "det", "logdet", "slogdet", "pinverse", "svd", "triangular_solve"):
        meth = getattr(_C.Tensor, name, None)
        if callable(meth):
            setattr(_C.Tensor, name, _raising_linalg_error(meth))


__all__.append("LinAlgError")
