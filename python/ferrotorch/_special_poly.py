"""The orthogonal polynomials and ``airy_ai`` of :mod:`ferrotorch.special`, with tensor ops.

Each polynomial follows PyTorch's kernel (``aten/src/ATen/native/Math.h``) branch by branch:
``n`` is truncated to an integer (a non-finite ``n`` counts as negative, as the C++ cast
gives ``INT64_MIN`` there); ``n < 0`` gives 0; the closed forms at ``|x| == 1`` (``x == 0``
or ``x == 1`` for the shifted Chebyshev polynomials); for large ``n`` and ``|x| < 1`` the
Chebyshev polynomials use their trigonometric forms (``T_n(x) = cos(n acos x)``...);
elsewhere the three-term recurrence.  The recurrence runs on all elements together, one
step per degree up to the largest ``n`` that needs it, and stops early once every element
still running is NaN (PyTorch's loop stops at NaN too).  The values are computed in the
result dtype (float32 or float64; like PyTorch, half, bfloat16 and complex raise
``NotImplementedError``).  Integer and bool inputs promote to the default float dtype.

``airy_ai`` is Cephes' ``airy`` (PyTorch's coefficients and ranges): the asymptotic
expansions below -2.09 and above 2.09, the Maclaurin series in between, 0 above 103.892 and
NaN at +-inf.

None of these is differentiable in PyTorch (its outputs never require grad: "element 0 of
tensors does not require grad"); here too the results are computed without autograd and
never require grad.
"""

import math
import warnings

from ferrotorch import _C
from ferrotorch._api_extra import _dtype_name
from ferrotorch.autograd.grad_mode import no_grad

Tensor = _C.Tensor

_INT64_LIMIT = 9.2233720368547758e18


def _check_dtype(dtype, kernel):
    if dtype not in (_C.float32, _C.float64):
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_dtype_name(dtype)}\'')


def _write_out(result, out):
    if out is None:
        return result
    if not isinstance(out, Tensor):
        raise TypeError(f"argument 'out' must be Tensor, not {type(out).__name__}")
    from ferrotorch._api_extra import can_cast

    if not can_cast(result.dtype, out.dtype):
        raise RuntimeError(f"result type {_dtype_name(result.dtype)} can't be cast to the "
                           f"desired output type {_dtype_name(out.dtype)}")
    if tuple(out.shape) != tuple(result.shape):
        if out.numel() != 0:
            warnings.warn(
                f"An output with one or more elements was resized since it had shape "
                f"{list(out.shape)}, which does not match the required output shape "
                f"{list(result.shape)}. This behavior is deprecated, and in a future PyTorch "
                "release outputs will not be resized unless they have zero elements. You can "
                "explicitly reuse an out tensor t by resizing it, inplace, to zero elements "
                "with t.resize_(0).", UserWarning, stacklevel=3)
        out.resize_(tuple(result.shape))
    out.copy_(result)
    return out


def _binary_args(name, x, n):
    """``x`` and ``n`` as broadcast tensors of the result dtype (PyTorch's promotion of a
    float binary op), on ``x``'s (or ``n``'s) device."""
    if not isinstance(x, Tensor) and not isinstance(n, Tensor):
        raise TypeError(f"special_{name}() received an invalid combination of arguments - got "
                        f"({type(x).__name__}, {type(n).__name__}), but expected one of:\n"
                        " * (Tensor x, Tensor n, *, Tensor out = None)\n"
                        " * (Scalar x, Tensor n, *, Tensor out = None)\n"
                        " * (Tensor x, Scalar n, *, Tensor out = None)")
    from ferrotorch._api_extra import result_type

    dtype = result_type(x, n)
    if not dtype.is_floating_point:
        dtype = _C.get_default_dtype()
    _check_dtype(dtype, f"{name}_cpu")
    device = x.device if isinstance(x, Tensor) else n.device
    x = x.detach().to(dtype) if isinstance(x, Tensor) else _C.full((), x, dtype=dtype,
                                                                    device=device)
    n = n.detach().to(dtype) if isinstance(n, Tensor) else _C.full((), n, dtype=dtype,
                                                                    device=device)
    x, n = _C.broadcast_tensors(x, n)
    return x.contiguous(), n.contiguous()


def _degree(n):
    """``n`` cast to an integer (still floating): truncated, with non-finite or out-of-range
    values mapped to -1 (the C++ cast of PyTorch gives INT64_MIN)."""
    bad = n.isnan() | (n.abs() >= _INT64_LIMIT)
    return _C.where(bad, _C.full((), -1.0, dtype=n.dtype, device=n.device), n.trunc())


def _const(value, like):
    return _C.full((), value, dtype=like.dtype, device=like.device)


def _sel(mask, value, other):
    """``where(mask, value, other)`` for a number or tensor ``value``."""
    if not isinstance(value, Tensor):
        value = _const(value, other)
    return _C.where(mask, value, other)


def _recurrence(n, p, q, step, first_k, need=None):
    """The value of a three-term recurrence at degree ``n`` (elementwise, for ``n >= 2``
    where ``need``): ``p``/``q`` are the degree-0/1 values, ``step(k, p, q)`` returns the
    next one; degree ``d`` is reached after ``d - 1`` steps with ``k = first_k, ...``.
    Elements whose ``n`` is below 2 keep ``q``; the loop ends at the largest ``n`` or when
    every unfinished element is NaN."""
    result = q
    if need is not None:
        n = _C.where(need, n, _const(0.0, n))
    if n.numel() == 0:
        return result
    top = n.max().item()
    degree = 2
    k = first_k
    while degree <= top:
        r = step(k, p, q)
        result = _C.where(n == degree, r, result)
        p, q = q, r
        degree += 1
        k += 1
        if degree % 8 == 0:
            running = n >= degree
            if not bool((running & ~q.isnan()).any()):
                result = _C.where(running, q, result)
                break
    return result


def _parity_sign(n, value):
    """``value`` for even ``n``, ``-value`` for odd."""
    even = n.remainder(2) == 0
    return _C.where(even, value, -value)


def _finish(name, x, n, out, compute):
    x, n = _binary_args(name, x, n)
    with no_grad():
        result = compute(x, _degree(n))
    return _write_out(result, out)


# ------------------------------------------------------------------ Chebyshev


def _chebyshev_recur(x, n, q1, need):
    """Chebyshev recurrence ``r = 2 x q - p`` from ``p = 1``, ``q = q1`` (run only as far
    as the elements in ``need`` require)."""
    one = _C.ones_like(x)
    two_x = x + x
    rec = _recurrence(n, one, q1, lambda k, p, q: two_x * q - p, 2, need)
    rec = _C.where(n == 1, q1, rec)
    return _C.where(n == 0, one, rec)


def _cheb_t(x, n, y, big, at_one, at_minus_one):
    # y: the polynomial argument (x or 2x - 1); at_one / at_minus_one: the masks of the
    # closed forms (y == 1 / y == -1); big: the degree above which |y| < 1 uses cos.
    trig = (n > big) & (y.abs() < 1)
    res = _chebyshev_recur(y, n, y, ~trig & ~at_one & ~at_minus_one)
    res = _C.where(trig, (n * y.acos()).cos(), res)
    res = _C.where(at_minus_one, _parity_sign(n, _C.ones_like(y)), res)
    res = _C.where(at_one, _C.ones_like(y), res)
    return _sel(n < 0, 0.0, res)


def _cheb_u(x, n, y, big, at_one, at_minus_one):
    trig = (n > big) & (y.abs() < 1)
    res = _chebyshev_recur(y, n, y + y, ~trig & ~at_one & ~at_minus_one)
    theta = _C.where(trig, y, _C.zeros_like(y)).acos()
    s = theta.sin()
    trig_val = _C.where(s != 0, ((n + 1) * theta).sin() / s,
                        (n + 1) * ((n + 1) * theta).cos() / y)
    res = _C.where(trig, trig_val, res)
    res = _C.where(at_minus_one, _parity_sign(n, n + 1), res)
    res = _C.where(at_one, n + 1, res)
    return _sel(n < 0, 0.0, res)


def _cheb_v(x, n, y, big, at_one, at_minus_one):
    trig = (n > big) & (y.abs() < 1)
    res = _chebyshev_recur(y, n, y + y - 1, ~trig & ~at_one & ~at_minus_one)
    theta = _C.where(trig, y, _C.zeros_like(y)).acos()
    closed = _parity_sign(n, n + n + 1)
    trig_val = _C.where((theta / 2).sin() != 1, ((n + 0.5) * theta).cos() / (theta / 2).cos(),
                        closed)
    res = _C.where(trig, trig_val, res)
    res = _C.where(at_minus_one, closed, res)
    res = _C.where(at_one, _C.ones_like(y), res)
    return _sel(n < 0, 0.0, res)


def _cheb_w(x, n, y, big, at_one, at_minus_one, shifted):
    trig = (n > big) & (y.abs() < 1)
    res = _chebyshev_recur(y, n, y + y + 1, ~trig & ~at_one & ~at_minus_one)
    theta = _C.where(trig, y, _C.zeros_like(y)).acos()
    odd_sign = _parity_sign(n, _C.ones_like(y))
    # PyTorch's fallback where cos(acos(y) / 2) == 1: the shifted form ignores the sign of y.
    fallback = odd_sign if shifted else _C.where(x > 0, n + n + 1, odd_sign)
    trig_val = _C.where((theta / 2).cos() != 1, ((n + 0.5) * theta).sin() / (theta / 2).sin(),
                        fallback)
    res = _C.where(trig, trig_val, res)
    res = _C.where(at_minus_one, odd_sign, res)
    res = _C.where(at_one, n + n + 1, res)
    return _sel(n < 0, 0.0, res)


def _plain(kind, big):
    def compute(x, n):
        at_one, at_minus_one = x == 1, x == -1
        if kind == "w":
            return _cheb_w(x, n, x, big, at_one, at_minus_one, False)
        return _KINDS[kind](x, n, x, big, at_one, at_minus_one)
    return compute


def _shifted(kind, big):
    def compute(x, n):
        y = x + x - 1
        at_one, at_zero = x == 1, x == 0
        if kind == "w":
            return _cheb_w(x, n, y, big, at_one, at_zero, True)
        return _KINDS[kind](x, n, y, big, at_one, at_zero)
    return compute


_KINDS = {"t": _cheb_t, "u": _cheb_u, "v": _cheb_v}


_MISSING = object()


def _positional(name, x, input, n=None, *, with_n=True):
    """PyTorch names the first argument ``x`` (the docs say ``input``): accept both."""
    if x is _MISSING:
        x = input
    elif input is not _MISSING:
        raise TypeError(f"special_{name}() got multiple values for argument 'x'")
    if x is _MISSING:
        raise TypeError(f"special_{name}() missing required argument 'x' (pos 1)")
    if with_n and n is _MISSING:
        raise TypeError(f"special_{name}() missing required argument 'n' (pos 2)")
    return x


def _make(name, compute, doc):
    def fn(x=_MISSING, n=_MISSING, *, out=None, input=_MISSING):
        x = _positional(name, x, input, n)
        return _finish(name, x, n, out, compute)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc + (" ``n`` is a tensor or a number, broadcast with ``input``; integer"
                        " inputs promote to the default float dtype. Not differentiable "
                        "(as in PyTorch).")
    return fn


chebyshev_polynomial_t = _make("chebyshev_polynomial_t", _plain("t", 6),
                               "Chebyshev polynomial of the first kind ``T_n(input)``.")
chebyshev_polynomial_u = _make("chebyshev_polynomial_u", _plain("u", 8),
                               "Chebyshev polynomial of the second kind ``U_n(input)``.")
chebyshev_polynomial_v = _make("chebyshev_polynomial_v", _plain("v", 8),
                               "Chebyshev polynomial of the third kind ``V_n(input)``.")
chebyshev_polynomial_w = _make("chebyshev_polynomial_w", _plain("w", 8),
                               "Chebyshev polynomial of the fourth kind ``W_n(input)``.")
shifted_chebyshev_polynomial_t = _make(
    "shifted_chebyshev_polynomial_t", _shifted("t", 6),
    "Shifted Chebyshev polynomial of the first kind ``T_n(2 input - 1)``.")
shifted_chebyshev_polynomial_u = _make(
    "shifted_chebyshev_polynomial_u", _shifted("u", 6),
    "Shifted Chebyshev polynomial of the second kind ``U_n(2 input - 1)``.")
shifted_chebyshev_polynomial_v = _make(
    "shifted_chebyshev_polynomial_v", _shifted("v", 6),
    "Shifted Chebyshev polynomial of the third kind ``V_n(2 input - 1)``.")
shifted_chebyshev_polynomial_w = _make(
    "shifted_chebyshev_polynomial_w", _shifted("w", 4),
    "Shifted Chebyshev polynomial of the fourth kind ``W_n(2 input - 1)``.")


# ------------------------------------------------------------------ Hermite, Laguerre, Legendre


def _hermite_h(x, n):
    one = _C.ones_like(x)
    two_x = x + x
    # PyTorch: r = 2x q - k p with k = 2, 4, ..., 2n - 2.
    rec = _recurrence(n, one, two_x, lambda k, p, q: two_x * q - (2 * k) * p, 1)
    rec = _C.where(n == 1, two_x, rec)
    rec = _C.where(n == 0, one, rec)
    return _sel(n < 0, 0.0, rec)


def _hermite_he(x, n):
    one = _C.ones_like(x)
    rec = _recurrence(n, one, x, lambda k, p, q: x * q - k * p, 1)
    rec = _C.where(n == 1, x, rec)
    rec = _C.where(n == 0, one, rec)
    return _sel(n < 0, 0.0, rec)


def _laguerre(x, n):
    one = _C.ones_like(x)
    q1 = 1 - x
    rec = _recurrence(n, one, q1, lambda k, p, q: (((k + k) + (1 - x)) * q - k * p) / (k + 1),
                      1, x != 0)
    rec = _C.where(n == 1, q1, rec)
    rec = _C.where((n == 0) | (x == 0), one, rec)
    return _sel(n < 0, 0.0, rec)


def _legendre(x, n):
    one = _C.ones_like(x)
    rec = _recurrence(n, one, x, lambda k, p, q: ((k + k + 1) * x * q - k * p) / (k + 1), 1,
                      x.abs() != 1)
    rec = _C.where(n == 1, x, rec)
    rec = _C.where(n == 0, one, rec)
    rec = _C.where(x == -1, _parity_sign(n, one), rec)
    rec = _C.where(x == 1, one, rec)
    return _sel(n < 0, 0.0, rec)


hermite_polynomial_h = _make("hermite_polynomial_h", _hermite_h,
                             "Physicists' Hermite polynomial ``H_n(input)``.")
hermite_polynomial_he = _make("hermite_polynomial_he", _hermite_he,
                              "Probabilists' Hermite polynomial ``He_n(input)``.")
laguerre_polynomial_l = _make("laguerre_polynomial_l", _laguerre,
                              "Laguerre polynomial ``L_n(input)``.")
legendre_polynomial_p = _make("legendre_polynomial_p", _legendre,
                              "Legendre polynomial ``P_n(input)``.")


# ------------------------------------------------------------------ Airy Ai

_AN = [3.46538101525629032477e-01, 1.20075952739645805542e+01, 7.62796053615234516538e+01,
       1.68089224934630576269e+02, 1.59756391350164413639e+02, 7.05360906840444183113e+01,
       1.40264691163389668864e+01, 9.99999999999999995305e-01]
_AD = [5.67594532638770212846e-01, 1.47562562584847203173e+01, 8.45138970141474626562e+01,
       1.77318088145400459522e+02, 1.64234692871529701831e+02, 7.14778400825575695274e+01,
       1.40959135607834029598e+01, 1.00000000000000000470e+00]
_AFN = [-1.31696323418331795333e-01, -6.26456544431912369773e-01, -6.93158036036933542233e-01,
        -2.79779981545119124951e-01, -4.91900132609500318020e-02, -4.06265923594885404393e-03,
        -1.59276496239262096340e-04, -2.77649108155232920844e-06, -1.67787698489114633780e-08]
_AFD = [1.33560420706553243746e+01, 3.26825032795224613948e+01, 2.67367040941499554804e+01,
        9.18707402907259625840e+00, 1.47529146771666414581e+00, 1.15687173795188044134e-01,
        4.40291641615211203805e-03, 7.54720348287414296618e-05, 4.51850092970580378464e-07]
_AGN = [1.97339932091685679179e-02, 3.91103029615688277255e-01, 1.06579897599595591108e+00,
        9.39169229816650230044e-01, 3.51465656105547619242e-01, 6.33888919628925490927e-02,
        5.85804113048388458567e-03, 2.82851600836737019778e-04, 6.98793669997260967291e-06,
        8.11789239554389293311e-08, 3.41551784765923618484e-10]
_AGD = [9.30892908077441974853e+00, 1.98352928718312140417e+01, 1.55646628932864612953e+01,
        5.47686069422975497931e+00, 9.54293611618961883998e-01, 8.64580826352392193095e-02,
        4.12656523824222607191e-03, 1.01259085116509135510e-04, 1.17166733214413521882e-06,
        4.91834570062930015649e-09]
_SQRT_1_PI = 5.64189583547756286948e-01
_C1 = 0.355028053887817239260
_C2 = 0.258819403792806798405


def _horner(coefs, z):
    acc = _C.zeros_like(z)
    for c in coefs:
        acc = acc * z + c
    return acc


def _airy_ai(x):
    zero = _C.zeros_like(x)
    # x < -2.09: the oscillating asymptotic form.
    neg = x < -2.09
    xn = _C.where(neg, x, _const(-4.0, x))
    zeta_n = -2.0 * xn * (-xn).sqrt() / 3.0
    z = 1.0 / zeta_n
    zz = z * z
    afn, afd = _horner(_AFN, zz), _horner(_AFD, zz)
    agn, agd = _horner(_AGN, zz), _horner(_AGD, zz)
    t = zeta_n + 0.25 * math.pi
    neg_val = (_SQRT_1_PI / (-xn).sqrt().sqrt()
               * (t.sin() * (1.0 + zz * afn / afd) - t.cos() * (z * agn / agd)))
    # x >= 2.09: the decaying asymptotic form.
    pos = x >= 2.09
    xp = _C.where(pos, x, _const(4.0, x))
    zeta_p = 2.0 * xp * xp.sqrt() / 3.0
    inv = 1.0 / zeta_p
    pos_val = (_SQRT_1_PI * (_horner(_AN, inv) / _horner(_AD, inv))
               / (2.0 * xp.sqrt().sqrt() * zeta_p.exp()))
    # |x| < 2.09: the Maclaurin series f - c g, summed while |m / f| > 2^-53.
    mid = ~neg & ~pos
    xm = _C.where(mid, x, zero)
    f = _C.ones_like(x)
    g = xm
    k = _C.ones_like(x)
    m = _C.ones_like(x)
    nn = xm
    z3 = xm * xm * xm
    active = mid & ~x.isnan()
    while bool(active.any()):
        m_new = m * z3
        k_new = k + 1.0
        m_new = m_new / k_new
        n_new = nn * z3
        k_new = k_new + 1.0
        n_new = n_new / k_new
        m_new = m_new / k_new
        f_new = f + m_new
        k_new = k_new + 1.0
        n_new = n_new / k_new
        g_new = g + n_new
        m = _C.where(active, m_new, m)
        nn = _C.where(active, n_new, nn)
        k = _C.where(active, k_new, k)
        f = _C.where(active, f_new, f)
        g = _C.where(active, g_new, g)
        active = active & ((m / f).abs() > 1.11022302462515654042e-16)
    mid_val = _C1 * f - _C2 * g
    result = _C.where(neg, neg_val, _C.where(pos, pos_val, mid_val))
    result = _C.where(x > 103.892, zero, result)
    result = _C.where(x.isnan() | x.isinf(), _const(math.nan, x), result)
    return result


def airy_ai(x=_MISSING, *, out=None, input=_MISSING):
    """The Airy function ``Ai(x)`` (Cephes, as PyTorch). Not differentiable (as in
    PyTorch)."""
    input = _positional("airy_ai", x, input, with_n=False)
    if not isinstance(input, Tensor):
        raise TypeError("special_airy_ai(): argument 'x' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    dtype = input.dtype
    if not dtype.is_floating_point:
        dtype = _C.get_default_dtype()
    _check_dtype(dtype, "airy_ai_cpu")
    with no_grad():
        result = _airy_ai(input.detach().to(dtype).contiguous())
    return _write_out(result, out)


__all__ = [
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
    "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
    "laguerre_polynomial_l", "legendre_polynomial_p", "airy_ai",
]
