"""Householder products, Householder QR in LAPACK form and the Bunch-Kaufman LDL^T
factorisation, written with tensor ops (``torch.linalg.householder_product`` /
``torch.orgqr``, ``torch.geqrf``, ``torch.ormqr``, ``torch.linalg.ldl_factor[_ex]``,
``torch.linalg.ldl_solve``).

* ``householder_product(A, tau)``: ``H_1 ... H_k`` (first ``n`` columns), ``H_i = I - tau_i
  v_i v_i^T`` with ``v_i = (0, .., 0, 1, A[i+1:, i])``; applied to the identity in reverse
  order (LAPACK ``orgqr``), batched, one step per reflector. Differentiable through the tensor
  ops (PyTorch has a derivative too).
* ``geqrf(A)``: LAPACK ``geqr2`` (``dlarfg`` reflectors: ``beta = -sign(alpha) ||x||``,
  ``tau = (beta - alpha) / beta``), batched. Not differentiable (as in PyTorch: backward raises
  ``NotImplementedError``).
* ``ormqr(A, tau, C, left, transpose)``: ``Q C``, ``Q^T C``, ``C Q`` or ``C Q^T`` with the
  reflectors of ``geqrf``, without forming ``Q``; differentiable through the tensor ops.
* ``ldl_factor_ex(A)``: LAPACK ``sytf2`` with ``uplo='L'`` (Bunch-Kaufman partial pivoting,
  ``alpha = (1 + sqrt(17)) / 8``, 1x1 and 2x2 pivots): only the lower triangle of ``A`` is
  read, ``LD`` holds ``L`` (unit diagonal implied) and the blocks of ``D`` in its lower
  triangle with zeros above, ``pivots`` are LAPACK's 1-based ``ipiv`` (int32; a 2x2 block at
  ``k, k+1`` gives ``-p`` twice), ``info`` the first zero pivot (1-based, 0 if none). The
  column steps run on each matrix of a batch in turn (the pivot choices differ per matrix);
  the rank-1/rank-2 updates are tensor ops. Real (float32/float64) only, ferrotorch having no
  complex dtypes; ``hermitian=True`` is therefore the same factorisation. Not
  differentiable (as in PyTorch).
* ``ldl_solve(LD, pivots, B)``: LAPACK ``sytrs`` (``uplo='L'``), batch-broadcast.
"""

import math
from collections import namedtuple

from ferrotorch import _C
from ferrotorch._api_extra import _dtype_name as _name
from ferrotorch.autograd.function import Function
from ferrotorch.autograd.grad_mode import no_grad

Tensor = _C.Tensor

_geqrf_result = namedtuple("geqrf", ["a", "tau"])
_ldl_factor_result = namedtuple("linalg_ldl_factor", ["LD", "pivots"])
_ldl_factor_ex_result = namedtuple("linalg_ldl_factor_ex", ["LD", "pivots", "info"])

_ALPHA = (1.0 + math.sqrt(17.0)) / 8.0


def _out(result, out):
    if out is None:
        return result
    if isinstance(result, tuple):
        for o, r in zip(out, result):
            o.resize_(tuple(r.shape))
            o.copy_(r)
        return out
    out.resize_(tuple(result.shape))
    out.copy_(result)
    return out


def _apply_reflectors(A, tau, C, left, transpose):
    """``Q C`` (``left``) or ``C Q``, ``Q^T`` for ``transpose``, where ``Q = H_1 ... H_k`` is
    the product of the reflectors stored in ``A``'s columns and ``tau``."""
    m, k = A.shape[-2], tau.shape[-1] if tau.ndim else 0
    # Q C applies H_k first, Q^T C H_1 first; C Q applies H_1 first.
    forward = (left and transpose) or (not left and not transpose)
    for i in range(k) if forward else range(k - 1, -1, -1):
        v = _reflector(A, i, m).unsqueeze(-1)                   # (..., m, 1)
        t = tau[..., i].unsqueeze(-1).unsqueeze(-1)
        if left:
            C = C - t * v.matmul(v.transpose(-1, -2).matmul(C))
        else:
            C = C - t * C.matmul(v).matmul(v.transpose(-1, -2))
    return C


def _reflector(A, i, m):
    """``v_i`` of column ``i`` of ``A`` (``..., m``): 0 above row ``i``, 1 at ``i``, ``A``
    below."""
    rows = _C.arange(m, device=A.device)
    col = A[..., :, i]
    one = _C.ones((), dtype=A.dtype, device=A.device)
    zero = _C.zeros((), dtype=A.dtype, device=A.device)
    return _C.where(rows > i, col, _C.where(rows == i, one, zero))


def householder_product(A, tau, *, out=None):
    """The first ``n`` columns of ``H_1 H_2 ... H_k`` (``torch.linalg.householder_product``,
    ``torch.orgqr``)."""
    name = "torch.linalg.householder_product"
    if A.ndim < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    m, n = A.shape[-2], A.shape[-1]
    if m < n:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if tau.ndim < 1 or n < tau.shape[-1]:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    if tau.ndim != A.ndim - 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but "
                           f"got tau.ndim equal to {tau.ndim} and input.ndim is equal to "
                           f"{A.ndim}")
    if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"{name}: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], but got {list(tau.shape[:-1])}")
    if tau.dtype != A.dtype:
        raise RuntimeError(f"{name}: tau dtype {_name(tau.dtype)} does not match input dtype "
                           f"{_name(A.dtype)}")
    if A.dtype not in (_C.float32, _C.float64):
        raise NotImplementedError(f"\"orgqr_cpu\" not implemented for '{_name(A.dtype)}'")
    batch = tuple(A.shape[:-2])
    Q = _C.eye(m, n, dtype=A.dtype, device=A.device).expand(*batch, m, n)
    return _out(_apply_reflectors(A, tau, Q, left=True, transpose=False), out)


def orgqr(input, tau, *, out=None):
    """``torch.orgqr``: alias of :func:`householder_product`."""
    return householder_product(input, tau, out=out)


# ------------------------------------------------------------------ geqrf / ormqr


def _geqrf_impl(A):
    m, n = A.shape[-2], A.shape[-1]
    a = A.clone()
    taus = []
    zero = _C.zeros((), dtype=A.dtype, device=A.device)
    one = _C.ones((), dtype=A.dtype, device=A.device)
    for i in range(min(m, n)):
        alpha = a[..., i, i]
        if i == m - 1:  # dlarfg with n = 1: H = I
            taus.append(_C.zeros_like(alpha))
            continue
        x = a[..., i + 1:, i]
        xnorm = (x * x).sum(-1).sqrt()
        trivial = xnorm == 0
        beta = -(alpha * alpha + xnorm * xnorm).sqrt() * _C.where(alpha >= 0, one, -one)
        safe_beta = _C.where(trivial, one, beta)
        tau = _C.where(trivial, zero, (beta - alpha) / safe_beta)
        scale = _C.where(trivial, one, 1.0 / _C.where(trivial, one, alpha - beta))
        v_tail = x * scale.unsqueeze(-1)
        a[..., i + 1:, i] = v_tail
        a[..., i, i] = _C.where(trivial, alpha, beta)
        taus.append(tau)
        if i + 1 < n:
            ones = _C.ones(tuple(v_tail.shape[:-1]) + (1,), dtype=A.dtype, device=A.device)
            v = _C.cat([ones, v_tail], -1).unsqueeze(-1)            # (..., m - i, 1)
            sub = a[..., i:, i + 1:]
            w = v.transpose(-1, -2).matmul(sub)                     # (..., 1, n - i - 1)
            a[..., i:, i + 1:] = sub - tau.unsqueeze(-1).unsqueeze(-1) * v.matmul(w)
    if taus:
        tau = _C.stack(taus, -1)
    else:
        tau = _C.zeros(tuple(A.shape[:-2]) + (0,), dtype=A.dtype, device=A.device)
    return a, tau


class _Geqrf(Function):
    @staticmethod
    def forward(ctx, A):
        return _geqrf_impl(A.detach())

    @staticmethod
    def backward(ctx, grad_a, grad_tau):
        raise NotImplementedError("the derivative for 'geqrf' is not implemented.")


def geqrf(input, *, out=None):
    """QR in LAPACK's compact form (``torch.geqrf``): ``R`` on and above the diagonal of
    ``a``, the Householder vectors below it, their scales in ``tau``."""
    if input.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    if input.dtype not in (_C.float32, _C.float64):
        raise NotImplementedError(f"\"geqrf_cpu\" not implemented for '{_name(input.dtype)}'")
    if _C.is_grad_enabled() and input.requires_grad:
        a, tau = _Geqrf.apply(input)
    else:
        with no_grad():
            a, tau = _geqrf_impl(input)
    return _out(_geqrf_result(a, tau), out)


def ormqr(input, tau, other, left=True, transpose=False, *, out=None):
    """``Q other`` (``left``), ``other Q`` (not ``left``), with ``Q^T`` for ``transpose``,
    where ``Q`` is the product of ``geqrf``'s reflectors (``torch.ormqr``)."""
    name = "torch.ormqr"
    if input.ndim < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if other.ndim < 2:
        raise RuntimeError(f"{name}: other must have at least 2 dimensions.")
    m = input.shape[-2]
    k = tau.shape[-1] if tau.ndim else 0
    left_dim = -2 if left else -1
    if other.shape[left_dim] != m:
        raise RuntimeError(f"{name}: other.shape[{left_dim}] must be equal to "
                           "input.shape[-2]")
    if k > input.shape[-1]:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    if tau.ndim != input.ndim - 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but "
                           f"got tau.ndim equal to {tau.ndim} and input.ndim is equal to "
                           f"{input.ndim}")
    if tau.dtype != input.dtype or other.dtype != input.dtype:
        bad = tau.dtype if tau.dtype != input.dtype else other.dtype
        raise RuntimeError(f"{name}: Expected input and other/tau to have the same dtype, but "
                           f"input has dtype {_name(input.dtype)} and the other has "
                           f"{_name(bad)}")
    if input.dtype not in (_C.float32, _C.float64):
        raise NotImplementedError(f"\"ormqr_cpu\" not implemented for '{_name(input.dtype)}'")
    return _out(_apply_reflectors(input, tau, other, left, transpose), out)


# ------------------------------------------------------------------ LDL^T (Bunch-Kaufman)


def _symmetrize_lower(block):
    return block.tril() + block.tril(-1).transpose(-1, -2)


def _sytf2_lower(A):
    """One matrix: (LD, pivots list, info) by LAPACK's ``sytf2`` (``uplo='L'``)."""
    n = A.shape[-1]
    a = _symmetrize_lower(A.clone())
    piv = [0] * n
    info = 0
    k = 0
    while k < n:
        kstep = 1
        absakk = abs(a[k, k].item())
        if k < n - 1:
            col = a[k + 1:, k].abs()
            rel = int(col.argmax().item())
            imax = k + 1 + rel
            colmax = col[rel].item()
        else:
            imax, colmax = k, 0.0
        if max(absakk, colmax) == 0.0 or math.isnan(absakk):
            if info == 0:
                info = k + 1
            kp = k
        else:
            if absakk >= _ALPHA * colmax:
                kp = k
            else:
                row = a[imax, k:imax].abs()
                rowmax = row.max().item()
                if imax < n - 1:
                    rowmax = max(rowmax, a[imax + 1:, imax].abs().max().item())
                if absakk >= _ALPHA * colmax * (colmax / rowmax):
                    kp = k
                elif abs(a[imax, imax].item()) >= _ALPHA * rowmax:
                    kp = imax
                else:
                    kp = imax
                    kstep = 2
            kk = k + kstep - 1
            if kp != kk:
                # Symmetric interchange of rows/columns kk and kp of the trailing block.
                perm = list(range(n))
                perm[kk], perm[kp] = kp, kk
                idx = _C.tensor(perm[k:], dtype=_C.int64)
                sub = a[k:, k:].index_select(0, idx - k).index_select(1, idx - k)
                a[k:, k:] = sub
            if kstep == 1:
                if k < n - 1:
                    d11 = 1.0 / a[k, k].item()
                    x = a[k + 1:, k]
                    trail = a[k + 1:, k + 1:] + x.unsqueeze(1) * (x * -d11).unsqueeze(0)
                    a[k + 1:, k + 1:] = _symmetrize_lower(trail)
                    a[k + 1:, k] = x * d11
            elif k < n - 2:
                d21 = a[k + 1, k].item()
                d11 = a[k + 1, k + 1].item() / d21
                d22 = a[k, k].item() / d21
                t = 1.0 / (d11 * d22 - 1.0)
                d21 = t / d21
                c0 = a[k + 2:, k]
                c1 = a[k + 2:, k + 1]
                wk = (c0 * d11 - c1) * d21
                wkp1 = (c1 * d22 - c0) * d21
                trail = (a[k + 2:, k + 2:] - c0.unsqueeze(1) * wk.unsqueeze(0)
                         - c1.unsqueeze(1) * wkp1.unsqueeze(0))
                a[k + 2:, k + 2:] = _symmetrize_lower(trail)
                a[k + 2:, k] = wk
                a[k + 2:, k + 1] = wkp1
        if kstep == 1:
            piv[k] = kp + 1
        else:
            piv[k] = piv[k + 1] = -(kp + 1)
        k += kstep
    return a.tril(), piv, info


def _check_ldl_input(A, name):
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    if not A.is_floating_point():
        raise NotImplementedError(f"{name}: Expected a floating point or complex tensor as "
                                  f"input. Got {_name(A.dtype)}")
    if A.dtype not in (_C.float32, _C.float64):
        raise NotImplementedError(f"\"ldl_factor_cpu\" not implemented for '{_name(A.dtype)}'")


def _ldl_factor_impl(A):
    n = A.shape[-1]
    batch = tuple(A.shape[:-2])
    flat = A.detach().reshape(-1, n, n)
    lds, pivs, infos = [], [], []
    with no_grad():
        for b in range(flat.shape[0]):
            ld, piv, info = _sytf2_lower(flat[b])
            lds.append(ld)
            pivs.append(piv)
            infos.append(info)
    if lds:
        LD = _C.stack(lds, 0).reshape(*batch, n, n)
    else:
        LD = _C.zeros(batch + (n, n), dtype=A.dtype, device=A.device)
    pivots = _C.tensor(pivs, dtype=_C.int32).reshape(*batch, n) if pivs else \
        _C.zeros(batch + (n,), dtype=_C.int32)
    info = _C.tensor(infos, dtype=_C.int32).reshape(batch) if infos else \
        _C.zeros(batch, dtype=_C.int32)
    return LD, pivots, info


def _raise_ldl_info(info, name):
    if info.numel() and bool((info > 0).any()):
        flat = info.reshape(-1)
        idx = int((flat > 0).to(_C.int64).argmax().item())
        batch = f" (Batch element {idx})" if info.ndim else ""
        raise RuntimeError(f"{name}{batch}: The factorization could not be completed because "
                           f"the input is singular: D[{int(flat[idx].item()) - 1}, "
                           f"{int(flat[idx].item()) - 1}] is exactly zero.")


def ldl_factor_ex(A, *, hermitian=False, check_errors=False, out=None):
    """LAPACK ``sytrf`` (``uplo='L'``): ``(LD, pivots, info)`` (``torch.linalg.ldl_factor_ex``)."""
    name = "torch.linalg.ldl_factor_ex"
    _check_ldl_input(A, name)
    LD, pivots, info = _ldl_factor_impl(A)
    if check_errors:
        _raise_ldl_info(info, name)
    return _out(_ldl_factor_ex_result(LD, pivots, info), out)


def ldl_factor(A, *, hermitian=False, out=None):
    """``(LD, pivots)`` of the Bunch-Kaufman factorisation ``A = L D L^T``
    (``torch.linalg.ldl_factor``); raises where ``D`` has a zero pivot."""
    name = "torch.linalg.ldl_factor"
    _check_ldl_input(A, name + "_ex")  # (PyTorch checks the input in ldl_factor_ex)
    LD, pivots, info = _ldl_factor_impl(A)
    _raise_ldl_info(info, name)
    return _out(_ldl_factor_result(LD, pivots), out)


def _sytrs_lower(a, ipiv, b):
    """One system: ``A X = B`` from ``sytf2``'s ``(a, ipiv)`` (LAPACK ``sytrs``, lower)."""
    n = a.shape[-1]
    b = b.clone()

    def swap(i, j):
        if i != j:
            ri, rj = b[i].clone(), b[j].clone()
            b[i] = rj
            b[j] = ri

    k = 0
    while k < n:  # L D y = b
        if ipiv[k] > 0:
            swap(k, ipiv[k] - 1)
            if k < n - 1:
                b[k + 1:] = b[k + 1:] - a[k + 1:, k].unsqueeze(1) * b[k].unsqueeze(0)
            b[k] = b[k] / a[k, k]
            k += 1
        else:
            swap(k + 1, -ipiv[k] - 1)
            if k < n - 2:
                b[k + 2:] = b[k + 2:] - a[k + 2:, k].unsqueeze(1) * b[k].unsqueeze(0)
                b[k + 2:] = b[k + 2:] - a[k + 2:, k + 1].unsqueeze(1) * b[k + 1].unsqueeze(0)
            akm1k = a[k + 1, k]
            akm1 = a[k, k] / akm1k
            ak = a[k + 1, k + 1] / akm1k
            denom = akm1 * ak - 1
            bkm1 = b[k] / akm1k
            bk = b[k + 1] / akm1k
            b[k] = (ak * bkm1 - bk) / denom
            b[k + 1] = (akm1 * bk - bkm1) / denom
            k += 2
    k = n - 1
    while k >= 0:  # L^T x = y
        if ipiv[k] > 0:
            if k < n - 1:
                b[k] = b[k] - a[k + 1:, k].unsqueeze(0).matmul(b[k + 1:]).squeeze(0)
            swap(k, ipiv[k] - 1)
            k -= 1
        else:
            if k < n - 1:
                b[k] = b[k] - a[k + 1:, k].unsqueeze(0).matmul(b[k + 1:]).squeeze(0)
                b[k - 1] = b[k - 1] - a[k + 1:, k - 1].unsqueeze(0).matmul(b[k + 1:]).squeeze(0)
            swap(k, -ipiv[k] - 1)
            k -= 2
    return b


def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):
    """Solves ``A X = B`` from ``ldl_factor``'s ``(LD, pivots)`` (``torch.linalg.ldl_solve``),
    batch-broadcast."""
    name = "torch.linalg.ldl_solve"
    if LD.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor LD must have at least 2 dimensions.")
    if LD.shape[-1] != LD.shape[-2]:
        raise RuntimeError(f"{name}: LD must be batches of square matrices, but they are "
                           f"{LD.shape[-2]} by {LD.shape[-1]} matrices")
    if B.ndim < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-{max(B.ndim, 1)},"
                         f" {max(B.ndim, 1) - 1}], but got -2)")
    if B.dtype != LD.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{_name(B.dtype)} and A of type {_name(LD.dtype)} instead.")
    if pivots.is_floating_point() or pivots.dtype == _C.bool:
        raise RuntimeError(f"{name}: Expected pivots to be integers. Got {_name(pivots.dtype)}")
    n = LD.shape[-1]
    if B.shape[-2] != n:
        raise RuntimeError(f"Incompatible matrix sizes for {name}: each A matrix is {n} by "
                           f"{n} but each b matrix is {B.shape[-2]} by {B.shape[-1]}")
    if tuple(pivots.shape) != tuple(LD.shape[:-1]):
        raise RuntimeError(f"{name}: Expected LD.shape[:-1] and pivots.shape to be the same, "
                           f"but got pivots with shape {list(pivots.shape)} instead")
    batch = tuple(_C.broadcast_shapes(tuple(LD.shape[:-2]), tuple(B.shape[:-2])))
    k = B.shape[-1]
    LDb = LD.expand(*batch, n, n).reshape(-1, n, n)
    Pb = pivots.expand(*batch, n).reshape(-1, n)
    Bb = B.expand(*batch, n, k).reshape(-1, n, k)
    results = []
    for i in range(LDb.shape[0]):
        ipiv = [int(v) for v in Pb[i].tolist()]
        results.append(_sytrs_lower(LDb[i], ipiv, Bb[i]))
    if results:
        X = _C.stack(results, 0).reshape(*batch, n, k)
    else:
        X = _C.zeros(batch + (n, k), dtype=B.dtype, device=B.device)
    return _out(X, out)


def _geqrf_method(self):
    return geqrf(self)


def _orgqr_method(self, input2):
    return householder_product(self, input2)


def _ormqr_method(self, input2, input3, left=True, transpose=False):
    return ormqr(self, input2, input3, left, transpose)


Tensor.geqrf = _geqrf_method
Tensor.orgqr = _orgqr_method
Tensor.ormqr = _ormqr_method
