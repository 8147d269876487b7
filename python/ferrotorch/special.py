"""``torch.special``: the special functions, from the Rust kernels (gammaln, digamma,
trigamma, the Hurwitz zeta and through it polygamma of every order) or written with the
existing tensor ops (so autograd flows through them). The Bessel functions other than
``i0`` / ``i0e`` and ``erfcx`` are in :mod:`ferrotorch._special_bessel` (Cephes
approximations with tensor ops); the orthogonal polynomials (Chebyshev, shifted Chebyshev,
Hermite, Laguerre, Legendre) and ``airy_ai`` in :mod:`ferrotorch._special_poly`."""

import math

from ferrotorch import _C
from ferrotorch import _special_bessel as _sb
from ferrotorch._special_poly import (  # noqa: F401 (re-exported)
    airy_ai,
    chebyshev_polynomial_t,
    chebyshev_polynomial_u,
    chebyshev_polynomial_v,
    chebyshev_polynomial_w,
    hermite_polynomial_h,
    hermite_polynomial_he,
    laguerre_polynomial_l,
    legendre_polynomial_p,
    shifted_chebyshev_polynomial_t,
    shifted_chebyshev_polynomial_u,
    shifted_chebyshev_polynomial_v,
    shifted_chebyshev_polynomial_w,
)
from ferrotorch._compare import logit as _logit

Tensor = _C.Tensor

__all__ = [
    "expit", "logit", "erf", "erfc", "erfinv", "exp2", "expm1", "log1p", "logsumexp",
    "softmax", "log_softmax", "xlogy", "xlog1py", "sinc", "entr", "ndtr", "ndtri", "log_ndtr",
    "round", "i0", "i0e", "gammaln", "digamma", "psi", "polygamma", "multigammaln", "zeta",
    "gammainc", "gammaincc", "i1", "i1e", "erfcx", "bessel_j0", "bessel_j1", "bessel_y0",
    "bessel_y1", "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0",
    "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
    "spherical_bessel_j0", "airy_ai", "chebyshev_polynomial_t", "chebyshev_polynomial_u",
    "chebyshev_polynomial_v", "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
    "laguerre_polynomial_l", "legendre_polynomial_p",
]

_SQRT1_2 = math.sqrt(0.5)
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _tensor(x, like=None):
    """``x`` as a tensor; a number takes ``like``'s device (and its dtype when floating)."""
    if isinstance(x, Tensor):
        return x
    return _C.tensor(x, dtype=like.dtype if like is not None and like.is_floating_point()
                     else None, device=None if like is None else like.device)


def _floating(x):
    """The input as a floating tensor (integers and bools go to the default dtype)."""
    x = _tensor(x)
    return x if x.is_floating_point() else x.to(_C.get_default_dtype())


def _scalar(value, like):
    return _C.full((), value, dtype=like.dtype, device=like.device)


def _within(x, keep, bound):
    """``x`` where ``keep`` (or NaN), else the constant ``bound``: a branch's input restricted
    to its range. Unlike ``clamp``, whose gradient is 0 at the bound itself, the gradient
    flows wherever ``keep`` holds, bound included."""
    return _C.where(keep | x.isnan(), x, _scalar(bound, x))


def _out(result, out):
    if out is None:
        return result
    out.copy_(result)
    return out


def expit(input, *, out=None):
    """The logistic sigmoid ``1 / (1 + exp(-input))``."""
    return _out(_floating(input).sigmoid(), out)


def logit(input, eps=None, *, out=None):
    """``log(p / (1 - p))``, with ``p`` clamped to ``[eps, 1 - eps]`` when ``eps`` is given."""
    return _out(_logit(_floating(input), eps), out)


def erf(input, *, out=None):
    return _out(_tensor(input).erf(), out)


def erfc(input, *, out=None):
    return _out(_tensor(input).erfc(), out)


def erfinv(input, *, out=None):
    return _out(_tensor(input).erfinv(), out)


def exp2(input, *, out=None):
    return _out(_tensor(input).exp2(), out)


def expm1(input, *, out=None):
    return _out(_tensor(input).expm1(), out)


def log1p(input, *, out=None):
    return _out(_tensor(input).log1p(), out)


def sinc(input, *, out=None):
    """``sin(pi x) / (pi x)`` (1 at 0)."""
    return _out(_tensor(input).sinc(), out)


def round(input, *, decimals=0, out=None):  # noqa: A001 (PyTorch's name)
    """Round half to even, to ``decimals`` decimal places."""
    x = _tensor(input)
    if x.dtype == _C.bool:  # (integers raise in Tensor.round, as in PyTorch)
        raise NotImplementedError('"round_vml_cpu" not implemented for \'Bool\'')
    return _out(x.round(decimals=decimals), out)


def logsumexp(input, dim, keepdim=False, *, out=None):
    return _out(input.logsumexp(dim, keepdim=keepdim), out)


def softmax(input, dim, *, dtype=None):
    return input.softmax(dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    return input.log_softmax(dim, dtype=dtype)


_HALF_TYPES = {"float16": "Half", "bfloat16": "BFloat16"}


def _no_half(name, x):
    """PyTorch's error for the kernels it compiles for float32/float64 only."""
    half = _HALF_TYPES.get(str(x.dtype).rsplit(".", 1)[-1])
    if half:
        device = "cuda" if x.is_cuda else "cpu"
        raise NotImplementedError(f'"{name}_{device}" not implemented for \'{half}\'')


def _via_float32(fn, x):
    """``fn(x)`` for float16/bfloat16 ``x`` computed in float32 and rounded back once (as
    PyTorch's kernels do), not in the half type itself."""
    if str(x.dtype).rsplit(".", 1)[-1] in _HALF_TYPES:
        return fn(x.float()).to(x.dtype)
    return fn(x)


def _pair(input, other, kernel=None):
    """Both arguments as tensors of their promoted floating dtype (an integer promotion goes
    to the default dtype; with ``kernel``, PyTorch's error for integers instead)."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError("expected at least one of input and other to be a Tensor")
    from ferrotorch._api_extra import _dtype_name, result_type

    input = _tensor(input, other if isinstance(other, Tensor) else None)
    other = _tensor(other, input)
    dtype = result_type(input, other)
    if not dtype.is_floating_point:
        if kernel is not None:
            device = "cuda" if input.is_cuda else "cpu"
            raise NotImplementedError(
                f'"{kernel}_{device}" not implemented for \'{_dtype_name(dtype)}\'')
        dtype = _C.get_default_dtype()
    return input.to(dtype), other.to(dtype)


def xlogy(input, other, *, out=None):
    """``input * log(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN)."""
    input, other = _pair(input, other)
    return _out(input.xlogy(other), out)


def xlog1py(input, other, *, out=None):
    """``input * log1p(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN). The gradient
    for ``input`` is ``log1p(other)`` (0 where ``input`` is 0 and ``other <= -1``)."""
    x, y = _pair(input, other)
    zero_x = x == 0
    # Where x is 0, a pole (y <= -1) is never evaluated, so it gives no inf/NaN gradient.
    safe_y = _C.where(zero_x & (y <= -1), _scalar(0.0, y), y)
    log = safe_y.log1p()
    result = x * log
    result = _C.where(zero_x & log.isinf(), _scalar(0.0, result), result)
    return _out(result, out)


def entr(input, *, out=None):
    """Elementwise entropy ``-x ln x`` (0 at 0, -inf for negative x)."""
    x = _floating(input)
    positive = x > 0
    safe = _C.where(positive, x, _scalar(1.0, x))
    value = -safe * safe.log()
    zero = _scalar(0.0, x)
    other = _C.where(x == 0, zero, _C.where(x < 0, _scalar(-math.inf, x), x))  # NaN stays
    return _out(_C.where(positive, value, other), out)


def ndtr(input, *, out=None):
    """The standard normal CDF, ``erfc(-x / sqrt(2)) / 2`` (accurate in the lower tail)."""
    x = _floating(input)
    return _out((x * -_SQRT1_2).erfc() * 0.5, out)


def _normal_pdf(x):
    return (x.square() * -0.5 - _LOG_SQRT_2PI).exp()


def ndtri(input, *, out=None):
    """The inverse of :func:`ndtr` (the standard normal quantile function): -inf at 0, inf at
    1, NaN outside [0, 1]. Computed on the lower half ``q = min(p, 1 - p)``: a rational
    first guess (Abramowitz & Stegun 26.2.23), then Newton steps on ``ndtr(x) = q`` with
    ``ndtr`` from ``erfc`` (so tiny ``p`` keep their relative accuracy); the gradient is
    ``1 / pdf(x)``."""
    p = _floating(input)
    _no_half("ndtri", p)
    upper = p > 0.5
    q = _C.where(upper, 1 - p, p)
    valid = (q > 0) & (q <= 0.5)  # False for 0, NaN and out-of-range values
    q = _C.where(valid, q, _scalar(0.25, q))
    t = (q.log() * -2.0).sqrt()
    x = -(t - (2.515517 + t * (0.802853 + t * 0.010328))
          / (1 + t * (1.432788 + t * (0.189269 + t * 0.001308))))
    for _ in range(3):
        x = x - (ndtr(x) - q) / _normal_pdf(x)
    x = _C.where(upper, -x, x)
    # Exactly 0 at the median, as PyTorch (``x - x.detach()``: 0, with x's gradient).
    x = _C.where(p == 0.5, x - x.detach(), x)
    edge = _C.where(p == 0, _scalar(-math.inf, p),
                    _C.where(p == 1, _scalar(math.inf, p), _scalar(math.nan, p)))
    return _out(_C.where(valid, x, edge), out)


def log_ndtr(input, *, out=None):
    """``log(ndtr(x))``, accurate in both tails: ``log1p(-erfc(x / sqrt(2)) / 2)`` from -1 up,
    ``log(erfc(-x / sqrt(2)) / 2)`` below, and the asymptotic (Mills ratio) expansion
    ``-x^2/2 - log(-x) - log(sqrt(2 pi)) + log(1 - 1/x^2 + 3/x^4 - ...)`` far in the lower
    tail, where ``erfc`` would underflow."""
    x = _floating(input)
    _no_half("log_ndtr", x)
    far = 20.0 if x.dtype == _C.float64 else 10.0
    # Each branch sees its input clamped to its own range, so no branch produces inf/NaN
    # values or gradients that the selection would multiply by zero.
    hi = _within(x, x >= -1.0, -1.0)
    mid = x.clamp(-far, -1.0)
    lo = _within(x, x <= -far, -far)
    upper = (-(hi * _SQRT1_2).erfc() * 0.5).log1p()
    middle = ((mid * -_SQRT1_2).erfc() * 0.5).log()
    inv2 = lo.square().reciprocal()
    series = _scalar(1.0, x)
    term = _scalar(1.0, x)
    for k in range(1, 11):
        term = term * inv2 * -(2 * k - 1)
        series = series + term
    lower = lo.square() * -0.5 - (-lo).log() - _LOG_SQRT_2PI + series.log()
    result = _C.where(x >= -1.0, upper, _C.where(x > -far, middle, lower))
    result = _C.where(x.isnan(), x, result)
    return _out(result, out)


# i0: the power series sum (x^2/4)^k / (k!)^2 (positive terms, no cancellation) up to |x| = 30,
# the asymptotic expansion e^x / sqrt(2 pi x) * sum ((2k-1)!!)^2 / (k! (8x)^k) beyond.
_I0_TERMS = 60
_I0_SWITCH = 30.0


def _i0_parts(x):
    """(small, large, switch): the series value for |x| <= 30 and the asymptotic sum without
    its e^|x| / sqrt(2 pi |x|) factor for |x| > 30, each on a clamped copy of |x|."""
    a = x.abs()
    small = _within(a, a <= _I0_SWITCH, _I0_SWITCH)
    y = small.square() * 0.25
    # Nested as 1 + y/1^2 (1 + y/2^2 (1 + ...)): no tiny 1/(k!)^2 coefficients (float32).
    series = _scalar(1.0, x)
    for k in range(_I0_TERMS - 1, 0, -1):
        series = series * y * (1.0 / (k * k)) + 1.0
    large = _within(a, a > _I0_SWITCH, _I0_SWITCH)
    term = _scalar(1.0, x)
    asym = _scalar(1.0, x)
    for k in range(1, 20):
        term = term * ((2 * k - 1) ** 2 / (8.0 * k)) / large
        asym = asym + term
    return series, asym / (large * (2 * math.pi)).sqrt(), large, a <= _I0_SWITCH


def _i0(x):
    series, asym, large, small = _i0_parts(x)
    half = (large * 0.5).exp()  # e^x as e^(x/2) twice: finite up to x ~ 713
    return _C.where(small, series, half * (half * asym))


def _i0e(x):
    series, asym, _, small = _i0_parts(x)
    a = x.abs()
    scaled = series * (-_within(a, a <= _I0_SWITCH, _I0_SWITCH)).exp()
    return _C.where(small, scaled, asym)


def i0(input, *, out=None):
    """The modified Bessel function of the first kind of order 0."""
    return _out(_via_float32(_i0, _floating(input)), out)


def i0e(input, *, out=None):
    """The exponentially scaled ``i0``: ``exp(-|x|) * i0(x)``."""
    return _out(_via_float32(_i0e, _floating(input)), out)


Tensor.i0 = lambda self: i0(self)


def i1(input, *, out=None):
    """The modified Bessel function of the first kind of order 1 (differentiable)."""
    return _out(_via_float32(_sb.i1, _floating(input)), out)


def i1e(input, *, out=None):
    """The exponentially scaled ``i1``: ``exp(-|x|) * i1(x)`` (differentiable)."""
    return _out(_via_float32(_sb.i1e, _floating(input)), out)


def erfcx(input, *, out=None):
    """The scaled complementary error function ``exp(x^2) * erfc(x)`` (differentiable)."""
    x = _floating(input)
    _no_half("erfcx", x)
    return _out(_sb.erfcx(x), out)


_NOT_DIFFERENTIABLE = ("scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
                       "spherical_bessel_j0")


def _bessel(name, doc):
    impl = getattr(_sb, name)

    def fn(input, *, out=None):
        x = _floating(input)
        _no_half(name, x)  # float32/float64 kernels only in PyTorch
        return _out(impl(x), out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc + (" Not differentiable (as in PyTorch: the result does not require grad)."
                        if name in _NOT_DIFFERENTIABLE else " Differentiable, as in PyTorch.")
    return fn


bessel_j0 = _bessel("bessel_j0", "The Bessel function of the first kind of order 0.")
bessel_j1 = _bessel("bessel_j1", "The Bessel function of the first kind of order 1.")
bessel_y0 = _bessel("bessel_y0", "The Bessel function of the second kind of order 0 (NaN "
                    "below 0, -inf at 0).")
bessel_y1 = _bessel("bessel_y1", "The Bessel function of the second kind of order 1 (NaN "
                    "below 0, -inf at 0).")
modified_bessel_i0 = _bessel("modified_bessel_i0",
                             "The modified Bessel function of the first kind of order 0.")
modified_bessel_i1 = _bessel("modified_bessel_i1",
                             "The modified Bessel function of the first kind of order 1.")
modified_bessel_k0 = _bessel("modified_bessel_k0", "The modified Bessel function of the "
                             "second kind of order 0 (NaN below 0, inf at 0).")
modified_bessel_k1 = _bessel("modified_bessel_k1", "The modified Bessel function of the "
                             "second kind of order 1 (NaN below 0, inf at 0).")
scaled_modified_bessel_k0 = _bessel("scaled_modified_bessel_k0",
                                    "``exp(x) * modified_bessel_k0(x)``.")
scaled_modified_bessel_k1 = _bessel("scaled_modified_bessel_k1",
                                    "``exp(x) * modified_bessel_k1(x)``.")
spherical_bessel_j0 = _bessel("spherical_bessel_j0",
                              "The spherical Bessel function of the first kind of order 0, "
                              "``sin(x) / x``.")


def gammaln(input, *, out=None):
    """``ln |Gamma(input)|`` (``torch.lgamma``)."""
    return _out(_floating(input).lgamma(), out)


def digamma(input, *, out=None):
    """``psi(input) = d/dx ln Gamma(x)``: ``-inf`` at 0, NaN at the negative integers."""
    return _out(_floating(input).digamma(), out)


psi = digamma


def zeta(input, other, *, out=None):
    """The Hurwitz zeta function ``sum_{k>=0} (k + other) ** -input`` (the Riemann zeta at
    ``other = 1``): ``inf`` at ``input = 1``, NaN for ``input < 1``. Differentiable in
    ``other`` only, as in PyTorch."""
    input, other = _pair(input, other)
    _no_half("zeta", input)
    return _out(input._special_zeta(other), out)


def gammainc(input, other, *, out=None):
    """Regularised lower incomplete gamma ``P(input, other)``; differentiable in ``other``
    only, as in PyTorch."""
    input, other = _pair(input, other, "igamma")
    return _out(input.igamma(other), out)


def gammaincc(input, other, *, out=None):
    """Regularised upper incomplete gamma ``Q(input, other) = 1 - P(input, other)``."""
    input, other = _pair(input, other, "igammac")
    return _out(input.igammac(other), out)


def polygamma(n, input, *, out=None):
    """The ``n``-th derivative of the digamma function: digamma for n = 0, trigamma for
    n = 1, and ``(-1)^(n+1) n! zeta(n + 1, input)`` above (PyTorch's formula)."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not "
                        f"{type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    x = _floating(input)
    if n == 0:
        return _out(x.digamma(), out)
    if n == 1:
        return _out(x._trigamma(), out)
    order = _scalar(float(n + 1), x)
    scale = float(math.factorial(n)) if n <= 170 else math.inf  # n! overflows a double above 170
    result = order._special_zeta(x) * (scale if n % 2 else -scale)
    return _out(result, out)


def multigammaln(input, p, *, out=None):
    """The multivariate log-gamma of dimension ``p``:
    ``p (p - 1) / 4 ln(pi) + sum_{j<p} lgamma(input - j / 2)``. (Defined for elements above
    ``(p - 1) / 2``; like PyTorch 2.x, smaller ones are not rejected.)"""
    if isinstance(p, bool) or not isinstance(p, int):
        raise TypeError(f"multigammaln(): argument 'p' (position 2) must be int, not "
                        f"{type(p).__name__}")
    if _tensor(input).dtype == _C.bool:
        raise RuntimeError("The input tensor may not be a boolean tensor.")
    x = _floating(input)
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    j = _C.arange(p, dtype=x.dtype, device=x.device)
    total = (x.unsqueeze(-1) - j / 2).lgamma().sum(-1)
    return _out(total + p * (p - 1) / 4 * math.log(math.pi), out)


def _polygamma_method(self, n):
    return polygamma(n, self)


def _polygamma_inplace(self, n):
    return self.copy_(polygamma(n, self))


def _mvlgamma_method(self, p):
    return multigammaln(self, p)


Tensor.polygamma = _polygamma_method
Tensor.polygamma_ = _polygamma_inplace
Tensor.mvlgamma = _mvlgamma_method
