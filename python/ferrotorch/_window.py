"""Window functions (``torch.hann_window``, ``hamming_window``, ``bartlett_window``,
``blackman_window``, ``kaiser_window``) with PyTorch's signatures, checks and formulas
(computed in the requested dtype, as PyTorch does)."""

import math

from ferrotorch import _C

__all__ = ["hann_window", "hamming_window", "bartlett_window", "blackman_window",
           "kaiser_window"]


def _check(name, window_length, dtype):
    if dtype is None:
        dtype = _C.get_default_dtype()
    if not dtype.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dtype}")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={window_length}")
    return dtype


def _finish(window, requires_grad):
    if requires_grad:
        window.requires_grad_(True)
    return window


def _trivial(window_length, dtype, device, requires_grad):
    """The empty and the one-point window, or None."""
    if window_length == 0:
        return _finish(_C.empty((0,), dtype=dtype, device=device), requires_grad)
    if window_length == 1:
        return _finish(_C.ones((1,), dtype=dtype, device=device), requires_grad)
    return None


def _cosine_sum(window_length, periodic, coeffs, dtype, device):
    """``sum_k (-1)^k c_k cos(2 pi k n / (N - 1))`` over the points ``n`` of a length-N
    window (N one longer and the last point dropped when ``periodic``)."""
    n = window_length + 1 if periodic else window_length
    phase = _C.arange(n, dtype=dtype, device=device) * (2 * math.pi / (n - 1))
    window = _C.full((n,), coeffs[0], dtype=dtype, device=device)
    for k, c in enumerate(coeffs[1:], 1):
        term = (phase * k).cos() * c
        window = window - term if k % 2 else window + term
    return window.narrow(0, 0, window_length) if periodic else window


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   layout=None, device=None, pin_memory=False, requires_grad=False):
    """Hamming window ``alpha - beta cos(2 pi n / (N - 1))``; ``periodic`` gives the window
    of length N+1 without its last point (for spectral analysis)."""
    dtype = _check("hamming_window", window_length, dtype)
    trivial = _trivial(window_length, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    window = _cosine_sum(window_length, periodic, (alpha, beta), dtype, device)
    return _finish(window, requires_grad)


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                pin_memory=False, requires_grad=False):
    """Hann window ``0.5 - 0.5 cos(2 pi n / (N - 1))``."""
    dtype = _check("hann_window", window_length, dtype)
    trivial = _trivial(window_length, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    window = _cosine_sum(window_length, periodic, (0.5, 0.5), dtype, device)
    return _finish(window, requires_grad)


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory=False, requires_grad=False):
    """Blackman window ``0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))``."""
    dtype = _check("blackman_window", window_length, dtype)
    trivial = _trivial(window_length, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    # PyTorch's order of operations (it shows in float16 / bfloat16 roundings).
    n = window_length + 1 if periodic else window_length
    phase = _C.arange(n, dtype=dtype, device=device) * (math.pi / (n - 1))
    window = (phase * 4).cos() * 0.08 - (phase * 2).cos() * 0.5 + 0.42
    window = window.narrow(0, 0, window_length) if periodic else window
    return _finish(window, requires_grad)


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory=False, requires_grad=False):
    """Bartlett (triangular) window ``1 - |2n / (N - 1) - 1|``."""
    dtype = _check("bartlett_window", window_length, dtype)
    trivial = _trivial(window_length, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    n = window_length + 1 if periodic else window_length
    ramp = _C.arange(n, dtype=dtype, device=device) * (2.0 / (n - 1))
    first = (n - 1) // 2 + 1  # PyTorch's split: the rising half, then 2 - x
    window = _C.cat([ramp.narrow(0, 0, first), 2.0 - ramp.narrow(0, first, n - first)])
    window = window.narrow(0, 0, window_length) if periodic else window
    return _finish(window.contiguous(), requires_grad)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None,
                  device=None, pin_memory=False, requires_grad=False):
    """Kaiser window ``I0(beta sqrt(1 - ((n - a) / a)^2)) / I0(beta)``, ``a = (N - 1) / 2``."""
    dtype = _check("kaiser_window", window_length, dtype)
    trivial = _trivial(window_length, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    from ferrotorch import special

    n = window_length + 1 if periodic else window_length
    work = dtype if dtype in (_C.float32, _C.float64) else _C.float32
    alpha = (n - 1) / 2.0
    ratio = (_C.arange(n, dtype=work, device=device) - alpha) / alpha
    arg = (1 - ratio * ratio).clamp_min(0).sqrt() * beta
    i0_beta = special.i0(_C.tensor(float(beta), dtype=work, device=device))
    window = (special.i0(arg) / i0_beta).to(dtype)
    window = window.narrow(0, 0, window_length).contiguous() if periodic else window
    return _finish(window, requires_grad)
