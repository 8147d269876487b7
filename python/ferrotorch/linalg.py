"""``ferrotorch.linalg``: PyTorch's ``torch.linalg`` on ferrotorch tensors.

The numerics live in Rust (``nalgebra`` for SVD/eigh/LU, own Householder QR and Cholesky, the
``gemm`` crate for products); this module only gives the functions PyTorch's signatures and
named-tuple results. Decompositions support float32/float64 and batch over leading dims.

>>> import ferrotorch as torch
>>> A = torch.tensor([[4.0, 0.0], [0.0, 9.0]])
>>> torch.linalg.cholesky(A).tolist()
[[2.0, 0.0], [0.0, 3.0]]
"""

import builtins
from collections import namedtuple

from ferrotorch import _C

Tensor = _C.Tensor

__all__ = [
    "cholesky",
    "cross",
    "det",
    "eigh",
    "eigvalsh",
    "inv",
    "lstsq",
    "matmul",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "multi_dot",
    "norm",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "vecdot",
    "vector_norm",
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


def _as_tensor(x):
    return x if isinstance(x, Tensor) else _C.tensor(x)


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


def multi_dot(tensors, *, out=None):
    """Product of a chain of matrices, multiplied in the cheapest order. The first and last
    tensors may be 1-D."""
    return _out(_C._linalg_multi_dot(list(tensors)), out)


def cross(input, other, *, dim=-1, out=None):
    """Cross product of 3-vectors along ``dim`` (inputs broadcast)."""
    return _out(_C._linalg_cross(input, other, dim), out)


def vecdot(x, y, *, dim=-1, out=None):
    """Dot product of vectors along ``dim`` (inputs broadcast)."""
    x = _swapdims(x, dim, -1)
    y = _swapdims(y, dim, -1)
    return _out(_C._einsum("...i,...i->...", [x, y]), out)


def matrix_power(A, n, *, out=None):
    """``A`` to the integer power ``n`` (``n < 0`` inverts first)."""
    return _out(A.matrix_power(n), out)


# ------------------------------------------------------------------------ solvers, inverses


def solve(A, B, *, left=True, out=None):
    """Solve ``A X = B`` (or ``X A = B`` with ``left=False``); batches broadcast."""
    return _out(_C._linalg_solve(A, B, left), out)


def inv(A, *, out=None):
    """Inverse of a (batch of) square matrix; raises RuntimeError for singular input."""
    return _out(_C._linalg_inv(A), out)


def det(A, *, out=None):
    """Determinant of a (batch of) square matrix."""
    return _out(_C._linalg_det(A), out)


def slogdet(A, *, out=None):
    """``(sign, logabsdet)`` of the determinant."""
    return _out(_slogdet_result(*_C._linalg_slogdet(A)), out)


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """Moore-Penrose pseudo-inverse via the SVD (or eigh when ``hermitian``)."""
    return _out(_C._linalg_pinv(A, _float_or_none(atol), _float_or_none(rtol), hermitian), out)


def lstsq(A, B, rcond=None, *, driver=None):
    """Least-squares solution of ``A X = B``. Returns ``(solution, residuals, rank,
    singular_values)``; which auxiliary outputs are filled depends on ``driver`` as in
    PyTorch (default ``'gelsy'``: rank only)."""
    return _lstsq_result(*_C._linalg_lstsq(A, B, _float_or_none(rcond), driver))


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """Number of singular values above ``max(atol, rtol * largest)`` (int64)."""
    return _out(
        _C._linalg_matrix_rank(A, _float_or_none(atol), _float_or_none(rtol), hermitian),
        out,
    )


def _float_or_none(x):
    if x is None:
        return None
    if isinstance(x, Tensor):
        if x.numel() != 1:
            raise NotImplementedError(
                "ferrotorch.linalg: tensor-valued tolerances are not supported; pass a float"
            )
        return builtins.float(x.item())
    return builtins.float(x)


# ------------------------------------------------------------------------ decompositions


def cholesky(A, *, upper=False, out=None):
    """Cholesky factor ``L`` (``A = L L^T``), or ``U`` with ``upper=True``."""
    return _out(_C._linalg_cholesky(A, upper), out)


def qr(A, mode="reduced", *, out=None):
    """QR decomposition; ``mode`` is ``'reduced'``, ``'complete'`` or ``'r'``."""
    return _out(_qr_result(*_C._linalg_qr(A, mode)), out)


def svd(A, full_matrices=True, *, driver=None, out=None):
    """``(U, S, Vh)`` with ``A = U diag(S) Vh``, ``S`` descending."""
    return _out(_svd_result(*_C._linalg_svd(A, full_matrices)), out)


def svdvals(A, *, driver=None, out=None):
    """Singular values, descending."""
    return _out(_C._linalg_svdvals(A), out)


def eigh(A, UPLO="L", *, out=None):
    """Eigen-decomposition of a symmetric matrix: eigenvalues ascending, eigenvectors as
    columns. Only the ``UPLO`` triangle is read."""
    return _out(_eigh_result(*_C._linalg_eigh(A, UPLO, True)), out)


def eigvalsh(A, UPLO="L", *, out=None):
    """Eigenvalues (ascending) of a symmetric matrix."""
    return _out(_C._linalg_eigh(A, UPLO, False)[0], out)


# ------------------------------------------------------------------------ norms


def _dims(dim):
    if dim is None:
        return None
    if isinstance(dim, int):
        return [dim]
    return [int(d) for d in dim]


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """Vector ``ord``-norm over ``dim`` (all elements when ``None``)."""
    x = _cast(x, dtype)
    return _out(_C._linalg_vector_norm(x, builtins.float(ord), _dims(dim), keepdim), out)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """Matrix norm: ``'fro'``, ``'nuc'``, ``inf``, ``-inf``, ``1``, ``-1``, ``2``, ``-2``."""
    A = _cast(A, dtype)
    if not isinstance(ord, str):
        ord = builtins.float(ord)
    d = tuple(dim)
    if len(d) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dim}")
    return _out(_C._linalg_matrix_norm(A, ord, (int(d[0]), int(d[1])), keepdim), out)


def norm(A, ord=None, dim=None, keepdim=False, *, out=None, dtype=None):
    """``torch.linalg.norm``: a vector or matrix norm depending on ``ord`` and ``dim``."""
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None:
        if len(dim) == 1:
            return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype, out=out)
        return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype, out=out)
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype, out=out)
    if A.dim() == 1:
        return vector_norm(A, ord, None, keepdim, dtype=dtype, out=out)
    if A.dim() == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype, out=out)
    raise RuntimeError(
        f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
        f"Got {A.dim()}D."
    )


# ------------------------------------------------------------------------ top-level torch.*
# (installed into the ``ferrotorch`` namespace by ``__init__``)


def _einsum(equation, *operands):
    """``torch.einsum(equation, *operands)`` (operands may also be given as one list)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    return _C._einsum(equation, [_as_tensor(o) for o in operands])


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
    else:
        if len(dims) != 2:
            raise TypeError("tensordot expects dims to be an int or a pair of lists of dims")
        da, db = dims
        da = [da] if isinstance(da, int) else [int(d) for d in da]
        db = [db] if isinstance(db, int) else [int(d) for d in db]
    return _out(_C._tensordot(a, b, da, db), out)


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
    if p == "nuc":
        return matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim,
                           dtype=dtype, out=out)
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
    U, S, Vh = _C._linalg_svd(input, not some)
    if not compute_uv:
        U = _C.Tensor(*U.shape).to(U.dtype)
        Vh = _C.Tensor(*Vh.shape).to(Vh.dtype)
    return _out(_torch_svd_result(U, S, _mT(Vh)), out)


def _torch_qr(input, some=True, *, out=None):
    """Deprecated ``torch.qr``."""
    return _out(_torch_qr_result(*_C._linalg_qr(input, "reduced" if some else "complete")), out)


def _cholesky_inverse(L, upper=False, *, out=None):
    """``torch.cholesky_inverse``: inverse of ``A`` from its Cholesky factor."""
    A = _mT(L) @ L if upper else L @ _mT(L)
    return _out(_C._linalg_inv(A), out)


# Tensor methods whose PyTorch results are named tuples or have Python-level semantics.
Tensor.slogdet = lambda self: _torch_slogdet(self)
Tensor.norm = lambda self, p="fro", dim=None, keepdim=False, dtype=None: _torch_norm(
    self, p, dim, keepdim, dtype=dtype
)
Tensor.svd = lambda self, some=True, compute_uv=True: _torch_svd(self, some, compute_uv)
Tensor.qr = lambda self, some=True: _torch_qr(self, some)

