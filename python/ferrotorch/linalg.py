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
from ferrotorch._cuda_fallback import via_cpu as _via_cpu  # the decompositions are CPU-only

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
    return _out(_via_cpu(lambda a, b: _C._linalg_cross(a, b, dim), input, other), out)


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
    return _out(_via_cpu(lambda a, b: _C._linalg_solve(a, b, left), A, B), out)


def inv(A, *, out=None):
    """Inverse of a (batch of) square matrix; raises RuntimeError for singular input."""
    return _out(_via_cpu(_C._linalg_inv, A), out)


def det(A, *, out=None):
    """Determinant of a (batch of) square matrix."""
    return _out(_via_cpu(_C._linalg_det, A), out)


def slogdet(A, *, out=None):
    """``(sign, logabsdet)`` of the determinant."""
    return _out(_slogdet_result(*_via_cpu(_C._linalg_slogdet, A)), out)


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """Moore-Penrose pseudo-inverse via the SVD (or eigh when ``hermitian``)."""
    atol, rtol = _float_or_none(atol), _float_or_none(rtol)
    return _out(_via_cpu(lambda a: _C._linalg_pinv(a, atol, rtol, hermitian), A), out)


def lstsq(A, B, rcond=None, *, driver=None):
    """Least-squares solution of ``A X = B``. Returns ``(solution, residuals, rank,
    singular_values)``; which auxiliary outputs are filled depends on ``driver`` as in
    PyTorch (default ``'gelsy'``: rank only)."""
    rcond = _float_or_none(rcond)
    return _lstsq_result(*_via_cpu(lambda a, b: _C._linalg_lstsq(a, b, rcond, driver), A, B))


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """Number of singular values above ``max(atol, rtol * largest)`` (int64)."""
    atol, rtol = _float_or_none(atol), _float_or_none(rtol)
    return _out(_via_cpu(lambda a: _C._linalg_matrix_rank(a, atol, rtol, hermitian), A), out)


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
    return _out(_via_cpu(lambda a: _C._linalg_cholesky(a, upper), A), out)


def qr(A, mode="reduced", *, out=None):
    """QR decomposition; ``mode`` is ``'reduced'``, ``'complete'`` or ``'r'``."""
    return _out(_qr_result(*_via_cpu(lambda a: _C._linalg_qr(a, mode), A)), out)


def svd(A, full_matrices=True, *, driver=None, out=None):
    """``(U, S, Vh)`` with ``A = U diag(S) Vh``, ``S`` descending."""
    return _out(_svd_result(*_via_cpu(lambda a: _C._linalg_svd(a, full_matrices), A)), out)


def svdvals(A, *, driver=None, out=None):
    """Singular values, descending."""
    return _out(_via_cpu(_C._linalg_svdvals, A), out)


def eigh(A, UPLO="L", *, out=None):
    """Eigen-decomposition of a symmetric matrix: eigenvalues ascending, eigenvectors as
    columns. Only the ``UPLO`` triangle is read."""
    return _out(_eigh_result(*_via_cpu(lambda a: _C._linalg_eigh(a, UPLO, True), A)), out)


def eigvalsh(A, UPLO="L", *, out=None):
    """Eigenvalues (ascending) of a symmetric matrix."""
    return _out(_via_cpu(lambda a: _C._linalg_eigh(a, UPLO, False)[0], A), out)


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
    if ord == 0 or (ord < 0 and ord != -inf):
        return None
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


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """Vector ``ord``-norm over ``dim`` (all elements when ``None``)."""
    x = _cast(x, dtype)
    ord, dims = builtins.float(ord), _dims(dim)
    if x.is_cuda and x.is_floating_point():
        r = _composed_vector_norm(x, ord, dims, keepdim)
        if r is not None:
            return _out(r, out)
    return _out(_via_cpu(lambda t: _C._linalg_vector_norm(t, ord, dims, keepdim), x), out)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """Matrix norm: ``'fro'``, ``'nuc'``, ``inf``, ``-inf``, ``1``, ``-1``, ``2``, ``-2``."""
    A = _cast(A, dtype)
    if not isinstance(ord, str):
        ord = builtins.float(ord)
    d = tuple(dim)
    if len(d) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dim}")
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
    return _out(_via_cpu(lambda a: _C._linalg_matrix_norm(a, ord, d, keepdim), A), out)


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
    return _torch_slogdet_result(*_via_cpu(_C._linalg_slogdet, A))


def _torch_svd(input, some=True, compute_uv=True, *, out=None):
    """Deprecated ``torch.svd``: returns ``(U, S, V)`` (V, not Vh)."""

    def svd_(a):
        U, S, Vh = _C._linalg_svd(a, not some)
        if not compute_uv:
            U, Vh = _C.zeros_like(U), _C.zeros_like(Vh)
        return U, S, _mT(Vh)

    return _out(_torch_svd_result(*_via_cpu(svd_, input)), out)


def _torch_qr(input, some=True, *, out=None):
    """Deprecated ``torch.qr``."""
    mode = "reduced" if some else "complete"
    return _out(_torch_qr_result(*_via_cpu(lambda a: _C._linalg_qr(a, mode), input)), out)


def _cholesky_inverse(L, upper=False, *, out=None):
    """``torch.cholesky_inverse``: inverse of ``A`` from its Cholesky factor."""
    return _out(_via_cpu(lambda t: _C._linalg_inv(_mT(t) @ t if upper else t @ _mT(t)), L), out)


# Tensor methods whose PyTorch results are named tuples or have Python-level semantics.
Tensor.slogdet = lambda self: _torch_slogdet(self)
Tensor.norm = lambda self, p="fro", dim=None, keepdim=False, dtype=None: _torch_norm(
    self, p, dim, keepdim, dtype=dtype
)
Tensor.svd = lambda self, some=True, compute_uv=True: _torch_svd(self, some, compute_uv)
Tensor.qr = lambda self, some=True: _torch_qr(self, some)

