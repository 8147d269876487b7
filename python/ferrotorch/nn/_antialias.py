"""Anti-aliased resampling for ``interpolate(..., antialias=True)``: PyTorch's
``_upsample_bilinear2d_aa`` / ``_upsample_bicubic2d_aa`` / ``_upsample_lanczos2d_aa``.

The kernels are separable: along each spatial dim, output index ``i`` mixes the input indices
``[xmin, xmin + xsize)`` around the centre ``scale * (i + 0.5)`` (``scale`` = input / output
size, or ``1 / scale_factor``, or ``(in - 1) / (out - 1)`` with ``align_corners``), with
weights ``filter((j - center + 0.5) * invscale)`` normalised to sum to one. When downsampling
(``scale >= 1``) the filter is stretched by ``scale`` (its support becomes ``support * scale``
and its argument is divided by ``scale``): that is the anti-aliasing. When upsampling the
filter keeps its size, so bilinear matches the plain (``align_corners=False``) bilinear
kernel, while bicubic uses PIL's ``a = -0.5`` cubic and differs from plain bicubic
(``a = -0.75``). A dim whose size does not change is copied as it is (PyTorch skips it, even
with a ``scale_factor`` that would move the centres).

Each dim's weights form a small ``(out, in)`` matrix built on the host with NumPy, in the
kernel's compute dtype; it is applied with a matrix product, so autograd, dtypes and the
device follow from ``matmul``. The gradient is the adjoint of this forward; PyTorch's
backward differs in one corner: with a ``scale_factor`` that leaves a dim's size unchanged
(``floor(n * s) == n``, ``s != 1``) its forward copies that dim but its backward resamples it.

PyTorch's CPU forward also gets an output width of 1 wrong when the height changes (every
output row repeats one value); here that shape is resampled like any other.
"""

import math

import numpy as np

from ferrotorch import _C

# interp_size (the filter's support is interp_size / 2 when not stretched)
_INTERP_SIZE = {"bilinear": 2, "bicubic": 4, "lanczos": 6}


def _bilinear_filter(x):
    x = np.abs(x)
    return np.where(x < 1, 1 - x, 0).astype(x.dtype)


def _bicubic_filter(x):
    # Keys' cubic convolution with a = -0.5 (PIL's choice, used by the antialiased kernel).
    a = -0.5
    x = np.abs(x)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.where(x < 1, near, np.where(x < 2, far, 0)).astype(x.dtype)


def _lanczos_filter(x):
    # Lanczos-3 windowed sinc: sinc(x) sinc(x / 3) on |x| < 3 (np.sinc is sin(pi x)/(pi x)).
    x = np.abs(x)
    return np.where(x < 3, np.sinc(x) * np.sinc(x / 3), 0).astype(x.dtype)


_FILTERS = {"bilinear": _bilinear_filter, "bicubic": _bicubic_filter,
            "lanczos": _lanczos_filter}


def _scale(in_size, out_size, align_corners, scale_factor, T):
    """PyTorch's ``area_pixel_compute_scale`` in the compute dtype ``T``."""
    if align_corners:
        return T(in_size - 1) / T(out_size - 1) if out_size > 1 else T(0)
    if scale_factor is not None and scale_factor > 0:
        return T(1.0 / scale_factor)
    return T(in_size) / T(out_size)


def aa_weights(in_size, out_size, align_corners, scale_factor, mode, np_dtype=np.float64):
    """The ``(out_size, in_size)`` NumPy matrix of the antialiased 1-d resampling, in
    ``np_dtype``."""
    T = np_dtype
    interp = _INTERP_SIZE[mode]
    scale = _scale(in_size, out_size, align_corners, scale_factor, T)
    if scale >= 1.0:
        support = T(interp * 0.5 * float(scale))
        invscale = T(1.0 / float(scale))
    else:
        support = T(interp * 0.5)
        invscale = T(1.0)
    max_size = int(math.ceil(float(support))) * 2 + 1
    i = np.arange(out_size)
    center = (float(scale) * (i + 0.5)).astype(T)
    # (center -+ support) in the compute dtype, + 0.5 in double, as the C++ expression.
    lo = (center - support).astype(np.float64) + 0.5
    hi = (center + support).astype(np.float64) + 0.5
    # static_cast<int64_t> truncates; with the max against 0 that is a floor.
    xmin = np.maximum(np.floor(lo), 0).astype(np.int64)
    xmax = np.minimum(np.trunc(hi).astype(np.int64), in_size)
    xsize = np.clip(xmax - xmin, 0, max_size)
    j = np.arange(max_size)
    src = xmin[:, None] + j[None, :]  # (out, max_size)
    valid = j[None, :] < xsize[:, None]
    arg = (((src.astype(T) - center[:, None]).astype(np.float64) + 0.5)
           * float(invscale)).astype(T)
    w = np.where(valid, _FILTERS[mode](arg), T(0)).astype(T)
    total = w.sum(axis=1, dtype=T)
    w = np.where(total[:, None] != 0, w / np.where(total == 0, T(1), total)[:, None], w)
    mat = np.zeros((out_size, in_size), dtype=T)
    rows = np.broadcast_to(i[:, None], src.shape)
    keep = valid & (src < in_size)
    np.add.at(mat, (rows[keep], src[keep]), w[keep])
    return mat.astype(T)


def _check(input, output_size, mode):
    dt = input.dtype
    if dt not in (_C.float32, _C.float64) and not (
        input.is_cuda and dt in (_C.float16, _C.bfloat16)
    ):
        name = {_C.float16: "Half", _C.bfloat16: "BFloat16", _C.uint8: "Byte",
                _C.int64: "Long", _C.int32: "Int"}.get(dt, str(dt))
        raise NotImplementedError(f'"compute_index_ranges_weights" not implemented for '
                                  f"'{name}'")
    if len(output_size) != 2:
        raise RuntimeError(f"It is expected output_size equals to 2, but got size "
                           f"{len(output_size)}")
    in_h, in_w = input.shape[2], input.shape[3]
    out_h, out_w = output_size
    if not (in_h > 0 and in_w > 0 and out_h > 0 and out_w > 0):
        raise RuntimeError(
            "Input and output sizes should be greater than 0, but got input "
            f"(H: {in_h}, W: {in_w}) output (H: {out_h}, W: {out_w})")


def interpolate_aa(input, output_size, scale_factors, mode, align_corners):
    """Antialiased ``bilinear`` / ``bicubic`` / ``lanczos`` resampling of a 4-D input to
    ``output_size`` (``scale_factors``: the per-dim scale factors PyTorch's kernel receives,
    or None)."""
    output_size = [int(s) for s in output_size]
    _check(input, output_size, mode)
    scales = list(scale_factors) if scale_factors is not None else [None, None]
    half = input.dtype in (_C.float16, _C.bfloat16)
    x = input.float() if half else input
    np_dtype = np.float64 if x.dtype == _C.float64 else np.float32

    def matrix(k):
        mat = aa_weights(x.shape[2 + k], output_size[k], align_corners, scales[k], mode,
                         np_dtype)
        return _C.from_numpy(np.ascontiguousarray(mat)).to(device=x.device, dtype=x.dtype)

    # The width first, then the height (the CPU kernel's order); unchanged dims are skipped.
    if output_size[1] != x.shape[3]:
        x = x @ matrix(1).t()
    if output_size[0] != x.shape[2]:
        x = matrix(0) @ x
    if x is input:
        x = input.clone()
    return x.to(input.dtype) if half else x
