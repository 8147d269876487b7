"""``torch.nn.utils.parametrizations``: ``weight_norm``, ``spectral_norm`` and ``orthogonal``
built on :mod:`ferrotorch.nn.utils.parametrize` (PyTorch's
``torch/nn/utils/parametrizations.py``)."""

from enum import Enum, auto

from ferrotorch import _C
from ferrotorch.autograd.grad_mode import no_grad
from ferrotorch.nn import functional as F
from ferrotorch.nn.modules.module import Module
from ferrotorch.nn.utils import parametrize
from ferrotorch.nn.utils.weight_norm import _weight_norm, norm_except_dim

Tensor = _C.Tensor

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def _is_orthogonal(Q, eps=None):
    import ferrotorch
    n, k = Q.size(-2), Q.size(-1)
    Id = _C.eye(k, dtype=Q.dtype, device=Q.device)
    eps = 10.0 * n * ferrotorch.finfo(Q.dtype).eps
    return ferrotorch.allclose(Q.mH @ Q, Id, atol=eps)


def _make_orthogonal(A):
    r"""The Q factor of ``A = QR`` (A tall) normalised so that ``diag(R) >= 0``."""
    import ferrotorch
    Q, R = ferrotorch.linalg.qr(A)
    return Q * R.diagonal(dim1=-2, dim2=-1).sign().unsqueeze(-2)


def _householder_product(A, tau):
    r"""The first ``k`` columns of ``H_1 H_2 ... H_k`` with ``H_i = I - tau_i v_i v_i^T`` and
    ``v_i`` the ``i``-th column of ``A`` below the diagonal with a 1 on it
    (``torch.linalg.householder_product``), composed of differentiable matmuls (one rank-1
    update per reflector)."""
    n, k = A.size(-2), A.size(-1)
    eye = _C.eye(n, k, dtype=A.dtype, device=A.device)
    V = A.tril(-1) + eye
    Y = eye.expand(*A.shape[:-2], n, k) if A.dim() > 2 else eye
    for i in reversed(range(k)):
        v = V[..., :, i:i + 1]
        Y = Y - (tau[..., i:i + 1].unsqueeze(-1) * v) @ (v.mT @ Y)
    return Y


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        if getattr(weight.dtype, "is_complex", False) and orthogonal_map == _OrthMaps.householder:
            raise ValueError(
                "The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        # X is now tall (n >= k)
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                # Embed into a square matrix
                zeros = X.new_zeros(n, n - k)
                if X.dim() > 2:
                    zeros = zeros.expand(*X.shape[:-2], n, n - k)
                X = _C.cat([X, zeros], dim=-1)
            A = X - X.mH
            import ferrotorch

            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = ferrotorch.linalg.matrix_exp(A)
            else:
                # The Cayley retraction (I + A/2)(I - A/2)^{-1}
                Id = _C.eye(n, dtype=A.dtype, device=A.device)
                Q = ferrotorch.linalg.solve(Id - 0.5 * A, Id + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _householder_product(A, tau)
            # The diagonal of X holds the signs (+-1); it is not differentiated through
            # (PyTorch casts it with .int()).
            Q = Q * X.diagonal(dim1=-2, dim2=-1).detach().trunc().unsqueeze(-2)
        if hasattr(self, "base") and self.base is not None:
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q):
        with no_grad():
            if tuple(Q.shape) != tuple(self.shape):
                raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                                 f"Got a tensor of shape {Q.shape}.")
            Q_init = Q
            n, k = Q.size(-2), Q.size(-1)
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if not hasattr(self, "base"):
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential or the Cayley "
                        "parametrizations when use_trivialization=False.")
                A, tau = _geqrf(Q)
                # The signs of diag(R) on the diagonal (+1 where LAPACK skipped a reflection)
                d = A.diagonal(dim1=-2, dim2=-1).sign()
                d = _C.where(tau == 0.0, -d, d)
                eye = _C.eye(n, k, dtype=A.dtype, device=A.device)
                A = A * (1 - eye) + eye * d.unsqueeze(-2)
                return A.mT if transpose else A
            if n == k:
                if not _is_orthogonal(Q):
                    Q = _make_orthogonal(Q)
                else:
                    Q = Q.clone()
            else:
                # Complete Q into a full n x n orthogonal matrix
                N = _C.randn(*(tuple(Q.shape[:-2]) + (n, n - k)), dtype=Q.dtype,
                             device=Q.device)
                Q = _C.cat([Q, N], dim=-1)
                Q = _make_orthogonal(Q)
            self.base = Q
            # -Id, so that householder(zeros) == eye (the diagonal carries the signs)
            neg_Id = _C.zeros_like(Q_init) - _C.eye(Q_init.size(-2), Q_init.size(-1),
                                                    dtype=Q_init.dtype, device=Q_init.device)
            return neg_Id


def _geqrf(A):
    r"""LAPACK's ``geqrf`` for one tall matrix (``A = QR`` in Householder form): ``R`` on and
    above the diagonal, the reflectors below it, and ``tau``. One reflection per column."""
    if A.dim() != 2:
        raise NotImplementedError("orthogonal(use_trivialization=False) supports one matrix, "
                                  "not batches, here")
    A = A.clone()
    n, k = A.shape
    taus = []
    for j in range(k):
        x = A[j:, j]
        alpha = x[0].item()
        xnorm = x[1:].norm().item() if n - j > 1 else 0.0
        if xnorm == 0.0:
            taus.append(0.0)
            continue
        beta = -((alpha ** 2 + xnorm ** 2) ** 0.5) * (1.0 if alpha >= 0 else -1.0)
        tau = (beta - alpha) / beta
        v = x / (alpha - beta)
        v[0] = 1.0
        sub = A[j:, j:]
        sub -= tau * v.unsqueeze(1) @ (v.unsqueeze(0) @ sub)
        A[j, j] = beta
        A[j + 1:, j] = v[1:]
        taus.append(tau)
    return A, _C.tensor(taus, dtype=A.dtype, device=A.device)


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    r"""Constrain the matrix (or batch of matrices) ``module.<name>`` to be orthogonal
    (``Q^T Q = I`` for tall, ``Q Q^T = I`` for wide matrices).

    ``orthogonal_map`` is ``"matrix_exp"`` (default for square matrices), ``"cayley"`` or
    ``"householder"`` (default otherwise). With ``use_trivialization=True`` (default) the
    weight is ``base @ map(X)`` with ``base`` an orthogonal buffer set on assignment.
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError("Expected a matrix or batch of matrices. "
                         f"Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = ("matrix_exp" if weight.size(-2) == weight.size(-1)
                          or getattr(weight.dtype, "is_complex", False) else "householder")
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        if dim is None:
            dim = -1
        self.dim = dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        weight_g = norm_except_dim(weight, 2, self.dim)
        weight_v = weight
        return weight_g, weight_v


def weight_norm(module, name="weight", dim=0):
    r"""Reparametrize ``module.<name>`` as ``g * v / ||v||`` (norm over every dimension but
    ``dim``; ``dim=None`` for the whole tensor). ``g`` is
    ``module.parametrizations.<name>.original0`` and ``v`` is ``original1``. State dicts of the
    legacy :func:`ferrotorch.nn.utils.weight_norm` (``<name>_g``, ``<name>_v``) still load.

    >>> import ferrotorch as torch
    >>> m = torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(20, 40))
    >>> m.parametrizations.weight.original0.size(), m.parametrizations.weight.original1.size()
    (ferrotorch.Size([40, 1]), ferrotorch.Size([40, 20]))
    """
    _wn = _WeightNorm(dim)
    parametrize.register_parametrization(module, name, _wn, unsafe=True)

    def _weight_norm_compat_hook(state_dict, prefix, local_metadata, strict, missing_keys,
                                 unexpected_keys, error_msgs):
        g_key = f"{prefix}{name}_g"
        v_key = f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            original0 = state_dict.pop(g_key)
            original1 = state_dict.pop(v_key)
            state_dict[f"{prefix}parametrizations.{name}.original0"] = original0
            state_dict[f"{prefix}parametrizations.{name}.original1"] = original1

    module._register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but "
                             f"got n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            # For ndim == 1 nothing needs approximating (see forward)
            self.n_power_iterations = n_power_iterations
            with no_grad():
                weight_mat = self._reshape_weight_to_matrix(weight.detach())
                h, w = weight_mat.size()
                u = weight_mat.new_empty(h).normal_(0, 1)
                v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            # Start from reasonable u, v: 15 power-method steps
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        assert weight.ndim > 1
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat, n_power_iterations):
        assert weight_mat.ndim > 1
        with no_grad():
            weight_mat = weight_mat.detach()
            for _ in range(n_power_iterations):
                # u^T W v approximates the largest singular value when u and v approximate
                # the first left and right singular vectors.
                F.normalize(weight_mat.mv(self._v), dim=0, eps=self.eps, out=self._u)
                F.normalize(weight_mat.mH.mv(self._u), dim=0, eps=self.eps, out=self._v)

    def forward(self, weight):
        if weight.ndim == 1:
            # Exact: the spectral norm of a vector is its 2-norm
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        # The buffers change in place at every training forward: use copies in the graph
        u = self._u.clone()
        v = self._v.clone()
        sigma = u.vdot(weight_mat.mv(v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    r"""Divide ``module.<name>`` by its spectral norm (largest singular value of the weight as
    a matrix with dimension ``dim`` first), estimated by power iteration: the buffers
    ``_u``/``_v`` of ``module.parametrizations.<name>[0]`` get ``n_power_iterations`` steps
    per access in training mode (15 at registration) and are frozen in eval mode. ``dim``
    defaults to 1 for the ``ConvTranspose`` modules and 0 otherwise.

    >>> import ferrotorch as torch
    >>> m = torch.nn.utils.parametrizations.spectral_norm(torch.nn.Linear(20, 40))
    >>> m.parametrizations.weight.original.size()
    ferrotorch.Size([40, 20])
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        from ferrotorch.nn.utils.spectral_norm import _is_conv_transpose
        dim = 1 if _is_conv_transpose(module) else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
