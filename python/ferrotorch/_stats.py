"""Statistics, integration and combinatorics functions (``torch.quantile``, ``torch.cov``,
``torch.trapezoid``, ``torch.cartesian_prod``, ``torch.logcumsumexp``...), written with the
native tensor ops so autograd flows through them, with PyTorch's signatures and messages.
Installed as module functions and, where PyTorch has them, as Tensor methods."""

import builtins
import itertools
import math
import warnings

from ferrotorch import _C

Tensor = _C.Tensor

__all__ = [
    "quantile", "nanquantile", "cov", "corrcoef", "trapezoid", "trapz", "cumulative_trapezoid",
    "cartesian_prod", "combinations", "logcumsumexp",
]

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _wrap_dim(dim, ndim):
    """PyTorch's maybe_wrap_dim (a 0-d tensor accepts dim 0 and -1)."""
    n = builtins.max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim % n


# ---------------------------------------------------------------------------------- quantile

def _quantile(input, q, dim, keepdim, interpolation, ignore_nan):
    if not isinstance(q, Tensor):
        q = builtins.float(q)
        if not 0 <= q <= 1:
            raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {q}")
        q = _C.tensor(q, dtype=input.dtype, device=input.device)
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError("quantile() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    wrapped = _wrap_dim(0 if dim is None else dim, input.ndim)
    if input.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if q.ndim > 1:
        raise RuntimeError("quantile() q must be a scalar or 1D tensor")
    if input.dtype not in (_C.float32, _C.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if q.dtype != input.dtype:
        raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
    if input.device != q.device:
        raise RuntimeError("quantile() q tensor must be on the same device as the input tensor")
    if not builtins.bool(((q >= 0) & (q <= 1)).all().item()):
        raise RuntimeError("quantile() q values must be in the range [0, 1]")

    # Output shape: q's length (if q is 1-d), then the reduced shape.
    if dim is not None and input.ndim > 0:
        out_shape = list(input.shape)
        if keepdim:
            out_shape[wrapped] = 1
        else:
            del out_shape[wrapped]
    else:
        out_shape = [1] * input.ndim if keepdim else []

    # The reduced dimension last, sorted (NaNs sort last).
    if dim is None:
        values = input.reshape(-1)
    elif wrapped == input.ndim - 1:
        values = input
    else:
        values = input.unsqueeze(-1).transpose(wrapped, -1)
    values = values.sort(-1)[0]
    n = values.shape[-1]
    values = values.reshape(*out_shape, n).unsqueeze(0)  # (1, *out_shape, n)
    # q as (Q, 1, ..., 1, 1) against values' (1, *out_shape, n).
    qs = q.reshape(-1, *([1] * (len(out_shape) + 1)))
    if ignore_nan:
        # Ranks among the non-NaN values; an all-NaN row gets rank 0 (a NaN).
        count = values.isnan().logical_not().sum(-1, keepdim=True).to(values.dtype)
        ranks = (qs * (count - 1)).clamp_min(0)
    else:
        # A row holding a NaN gets the last rank (a NaN).
        has_nan = values.isnan().any(-1, keepdim=True)
        last = _C.tensor(builtins.float(n - 1), dtype=values.dtype, device=values.device)
        ranks = _C.where(has_nan, last, qs * (n - 1))
    if interpolation == "lower":
        ranks = ranks.floor()
    elif interpolation == "higher":
        ranks = ranks.ceil()
    elif interpolation == "nearest":
        ranks = ranks.round()  # half to even, as PyTorch
    fixed = ranks.detach()  # the indices; the weight keeps q's gradient
    expanded = [qs.shape[0], *values.shape[1:-1], 1]
    values = values.expand(*expanded[:-1], n)
    below = fixed.floor().long().expand(*expanded)
    result = values.gather(-1, below)
    if interpolation in ("linear", "midpoint"):
        above = fixed.ceil().long().expand(*expanded)
        if interpolation == "midpoint":
            weights = _C.full(expanded, 0.5, dtype=values.dtype, device=values.device)
        else:
            weights = (ranks - fixed.floor()).expand(*expanded)
        result = result.lerp(values.gather(-1, above), weights)
    result = result.squeeze(-1)  # (Q, *out_shape)
    return result.squeeze(0) if q.ndim == 0 else result


def _quantile_any_device(input, q, dim, keepdim, interpolation, ignore_nan):
    """``_quantile`` on ``input``'s device (sort, gather and lerp all run there); a ``q``
    tensor must be on that device too, as PyTorch requires."""
    if input.is_cuda and isinstance(q, Tensor) and q.device != input.device:
        raise RuntimeError("quantile() q tensor must be on the same device as the input tensor")
    return _quantile(input, q, dim, keepdim, interpolation, ignore_nan)


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """The ``q``-th quantiles of ``input`` along ``dim`` (all elements when ``dim`` is None).
    ``q`` is a float or a 1-d tensor (its length becomes the first output dimension); a row
    holding a NaN gives NaN. ``interpolation`` is linear, lower, higher, midpoint or
    nearest, as NumPy's ``method``."""
    result = _quantile_any_device(input, q, dim, keepdim, interpolation, False)
    if out is not None:
        out.copy_(result)
        return out
    return result


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """:func:`quantile` ignoring NaNs (an all-NaN row gives NaN)."""
    result = _quantile_any_device(input, q, dim, keepdim, interpolation, True)
    if out is not None:
        out.copy_(result)
        return out
    return result


# ----------------------------------------------------------------------- cov and corrcoef

def cov(input, *, correction=1, fweights=None, aweights=None):
    """Covariance matrix of the variables in the rows of ``input`` (observations in the
    columns; a 1-d input is one variable), with integer frequency weights ``fweights`` and
    floating observation weights ``aweights``, as NumPy's ``np.cov(..., ddof=correction)``.
    Size-1 dimensions of the result are squeezed (one variable gives a 0-d tensor)."""
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.ndim} dimensions")
    if input.dtype == _C.bool:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    if not x.is_floating_point():
        x = x.to(_C.get_default_dtype())
    num_observations = x.shape[1]
    w = None
    if fweights is not None:
        if fweights.ndim > 1:
            raise RuntimeError(f"cov(): expected fweights to have one or fewer dimensions but "
                               f"got fweights with {fweights.ndim} dimensions")
        if fweights.is_floating_point() or fweights.dtype == _C.bool:
            raise RuntimeError(f"cov(): expected fweights to have integral dtype but got "
                               f"fweights with {_dtype_name(fweights.dtype)} dtype")
        if fweights.numel() != num_observations:
            raise RuntimeError(f"cov(): expected fweights to have the same numel as there are "
                               f"observations in the input but got {fweights.numel()} != "
                               f"{num_observations}")
        if num_observations > 0 and not builtins.bool((fweights.min() >= 0).item()):
            raise RuntimeError("cov(): fweights cannot be negative")
        w = fweights.reshape(-1)
    if aweights is not None:
        if aweights.ndim > 1:
            raise RuntimeError(f"cov(): expected aweights to have one or fewer dimensions but "
                               f"got aweights with {aweights.ndim} dimensions")
        if not aweights.is_floating_point():
            raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got "
                               f"aweights with {_dtype_name(aweights.dtype)} dtype")
        if aweights.numel() != num_observations:
            raise RuntimeError(f"cov(): expected aweights to have the same numel as there are "
                               f"observations in the input but got {aweights.numel()} != "
                               f"{num_observations}")
        if num_observations > 0 and not builtins.bool((aweights.min() >= 0).item()):
            raise RuntimeError("cov(): aweights cannot be negative")
        aw = aweights.reshape(-1)
        w = aw if w is None else w * aw
    if w is not None and not w.is_floating_point():
        w = w.to(x.dtype)
    if w is None:
        w_sum = _C.tensor(builtins.float(num_observations), dtype=x.dtype, device=x.device)
    else:
        w_sum = w.sum()
        if builtins.bool((w_sum == 0).item()):
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    avg = (x if w is None else x * w).sum(1) / w_sum
    if w is not None and aweights is not None and correction != 0:
        norm = w_sum - correction * (w * aw).sum() / w_sum
    else:
        norm = w_sum - correction
    if builtins.bool((norm <= 0).item()):
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=2)
        norm = norm * 0
    x = x - avg.unsqueeze(1)
    c = x.mm((x if w is None else x * w).t())
    return (c / norm).squeeze()


def _dtype_name(dtype):
    name = str(dtype).rsplit(".", 1)[-1]
    return {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
            "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
            "bool": "Bool"}.get(name, name)


def corrcoef(input):
    """Pearson correlation coefficients of the rows of ``input`` (``cov`` normalised by the
    standard deviations, clipped to [-1, 1])."""
    if input.ndim > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got "
                           f"an input with {input.ndim} dimensions")
    c = cov(input)
    if c.ndim == 0:
        return c / c  # nan for a zero / nan / inf variance, else 1
    stddev = c.diagonal().sqrt()
    c = c / stddev.reshape(-1, 1)
    c = c / stddev.reshape(1, -1)
    return c.clamp(-1, 1)


# ----------------------------------------------------------------------------- trapezoid

def _trapezoid_dx(x, y, dim, name):
    if x.dtype == _C.bool or y.dtype == _C.bool:
        raise RuntimeError(f"{name}: received a bool input for `x` or `y`, but bool is not "
                           f"supported")
    if x.ndim == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        shape = [1] * y.ndim
        shape[dim] = x.shape[0]
        x = x.reshape(shape)
    elif x.ndim < y.ndim:
        x = x.reshape(*([1] * (y.ndim - x.ndim)), *x.shape)
    length = x.shape[dim]
    return x.narrow(dim, 1, length - 1) - x.narrow(dim, 0, length - 1)


def _check_y(y, dim, name):
    if y.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    dim = _wrap_dim(dim, y.ndim)
    if y.dtype == _C.bool:
        raise RuntimeError(f"{name}: received a bool input for `y`, but bool is not supported")
    return dim


def _check_dx(dx, name):
    if isinstance(dx, (builtins.bool, complex)) or (
            isinstance(dx, Tensor) and (dx.dtype == _C.bool or dx.ndim != 0)):
        raise RuntimeError(f"{name}: Currently, we only support dx as a real number.")
    return builtins.float(dx)


def _halves(y, dim):
    length = y.shape[dim]
    return y.narrow(dim, 0, length - 1), y.narrow(dim, 1, length - 1)


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """Integral of ``y`` along ``dim`` by the trapezoid rule, with sample points ``x``
    (1-d, or broadcasting against ``y``) or a constant spacing ``dx`` (default 1)."""
    if x is not None and dx is not None:
        raise TypeError("trapezoid() received an invalid combination of arguments - got both "
                        "x and dx")
    dim = _check_y(y, dim, "trapezoid")
    if y.shape[dim] == 0:  # no samples: 0, as NumPy
        shape = list(y.shape)
        del shape[dim]
        return _C.zeros(shape, dtype=y.dtype, device=y.device)
    if x is not None:
        if not isinstance(x, Tensor):
            x = _C.tensor(x, device=y.device)
        d = _trapezoid_dx(x, y, dim, "trapezoid")
        left, right = _halves(y, dim)
        return ((left + right) * d).sum(dim) / 2.0
    dx = 1.0 if dx is None else _check_dx(dx, "trapezoid")
    ends = y.select(dim, 0) + y.select(dim, -1)
    if not y.is_floating_point():
        y, ends = y.to(_C.get_default_dtype()), ends.to(_C.get_default_dtype())
    return (y.sum(dim) - ends * 0.5) * dx


def trapz(y, x=None, *, dx=None, dim=-1):
    """Alias of :func:`trapezoid`."""
    return trapezoid(y, x, dx=dx, dim=dim)


def _cumsum(t, dim):
    """``t.cumsum(dim)`` (on the tensor's device)."""
    return t.cumsum(dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """Running trapezoid-rule integral of ``y`` along ``dim`` (one element fewer than ``y``
    there), with sample points ``x`` or a constant spacing ``dx`` (default 1)."""
    if x is not None and dx is not None:
        raise TypeError("cumulative_trapezoid() received an invalid combination of arguments "
                        "- got both x and dx")
    dim = _check_y(y, dim, "cumulative_trapezoid")
    if y.shape[dim] == 0:
        return y.to(_C.get_default_dtype()) if not y.is_floating_point() else y.clone()
    left, right = _halves(y, dim)
    if x is not None:
        if not isinstance(x, Tensor):
            x = _C.tensor(x, device=y.device)
        d = _trapezoid_dx(x, y, dim, "cumulative_trapezoid")
        return _cumsum((left + right) * d, dim) / 2.0
    dx = 1.0 if dx is None else _check_dx(dx, "cumulative_trapezoid")
    s = left + right
    if not s.is_floating_point():
        s = s.to(_C.get_default_dtype())
    return _cumsum(s * (dx / 2.0), dim)


# ----------------------------------------------------------------------------- combinatorics

def cartesian_prod(*tensors):
    """Cartesian product of 1-d tensors: (N1 * N2 * ..., len(tensors)), rows in
    ``itertools.product`` order (a single tensor is returned as is)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    if len(tensors) == 1:
        return tensors[0]
    grids = _C.meshgrid(*tensors, indexing="ij")
    return _C.stack([g.reshape(-1) for g in grids], 1)


def combinations(input, r=2, with_replacement=False):
    """The length-``r`` combinations of the elements of a 1-d tensor: (C, r), rows in
    ``itertools.combinations`` (or ``combinations_with_replacement``) order."""
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return _C.empty(0, dtype=input.dtype, device=input.device)
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    index = [i for combo in pick(range(input.shape[0]), r) for i in combo]
    rows = len(index) // r
    index = _C.tensor(index, dtype=_C.int64, device=input.device)
    return input.index_select(0, index).reshape(rows, r)


# ----------------------------------------------------------------------------- logcumsumexp

def _log_add_exp(a, b):
    """``log(exp(a) + exp(b))`` shifted by the (constant) larger of the two, so it never
    overflows; both -inf gives -inf with zero (not NaN) gradients."""
    m = _C.where(a > b, a, b).detach()
    m = _C.where(m.isfinite(), m, _C.zeros((), dtype=m.dtype, device=m.device))
    s = (a - m).exp() + (b - m).exp()
    empty = s == 0
    safe = _C.where(empty, _C.ones((), dtype=s.dtype, device=s.device), s)
    neg_inf = _C.full((), -math.inf, dtype=s.dtype, device=s.device)
    return _C.where(empty, neg_inf, m + safe.log())


def logcumsumexp(input, dim, *, out=None):
    """``log(cumsum(exp(input), dim))``, computed stably (a log-add-exp prefix scan, so no
    term overflows or underflows), with autograd."""
    dim = _wrap_dim(dim, input.ndim)
    if not input.is_floating_point():
        raise NotImplementedError(
            f"\"logcumsumexp_out_cpu\" not implemented for '{_dtype_name(input.dtype)}'")
    x = input
    if x.ndim == 0:
        result = x.clone()
    else:
        n = x.shape[dim]
        step = 1
        while step < n:  # Hillis-Steele scan: log2(n) passes
            shifted = _log_add_exp(x.narrow(dim, step, n - step), x.narrow(dim, 0, n - step))
            x = _C.cat([x.narrow(dim, 0, step), shifted], dim)
            step *= 2
        result = x if x is not input else x.clone()
    if out is not None:
        out.copy_(result)
        return out
    return result


Tensor.quantile = quantile
Tensor.nanquantile = nanquantile
Tensor.cov = cov
Tensor.corrcoef = corrcoef
Tensor.logcumsumexp = logcumsumexp
