"""Pooling and resampling (nn.functional + modules) vs NumPy loop references: values,
indices, gradients (gradcheck in float64), module reprs and error messages."""

import math
import warnings

import numpy as np
import pytest

import ferrotorch as ft
import ferrotorch.nn.functional as F
from ferrotorch import nn
from ferrotorch.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(1234)


def t(a, dtype=np.float64, grad=False):
    x = ft.from_numpy(np.array(a, dtype=dtype, order="C"))
    return x.requires_grad_() if grad else x


def npy(x):
    return x.detach().numpy()


def distinct(shape, dtype=np.float64):
    """Random values without ties (max pooling argmax is unique, so gradients are smooth)."""
    n = int(np.prod(shape))
    return (RNG.permutation(n).astype(np.float64) / n * 4 - 2 + RNG.random(n) * 1e-3) \
        .reshape(shape).astype(dtype)


def tol(dtype):
    return dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------- references
def out_size(n, k, p, s, d, ceil):
    eff = d * (k - 1) + 1
    num = n + 2 * p - eff
    o = (-(-num // s) if ceil else num // s) + 1
    if ceil and (o - 1) * s >= n + p:
        o -= 1
    return o


def max_pool2d_ref(x, k, s, p, d, ceil):
    """x: (P, H, W) -> values, flat indices."""
    P, H, W = x.shape
    oh, ow = out_size(H, k[0], p[0], s[0], d[0], ceil), out_size(W, k[1], p[1], s[1], d[1], ceil)
    out = np.empty((P, oh, ow), x.dtype)
    idx = np.empty((P, oh, ow), np.int64)
    for pl in range(P):
        for i in range(oh):
            for j in range(ow):
                best, bi = -np.inf, -1
                for a in range(k[0]):
                    y = i * s[0] - p[0] + a * d[0]
                    if not 0 <= y < H:
                        continue
                    for b in range(k[1]):
                        xx = j * s[1] - p[1] + b * d[1]
                        if 0 <= xx < W and x[pl, y, xx] > best:
                            best, bi = x[pl, y, xx], y * W + xx
                out[pl, i, j], idx[pl, i, j] = best, bi
    return out, idx


def avg_pool2d_ref(x, k, s, p, ceil, cip, div):
    P, H, W = x.shape
    oh, ow = out_size(H, k[0], p[0], s[0], 1, ceil), out_size(W, k[1], p[1], s[1], 1, ceil)
    out = np.zeros((P, oh, ow), np.float64)
    for i in range(oh):
        for j in range(ow):
            h0, w0 = i * s[0] - p[0], j * s[1] - p[1]
            h1, w1 = min(h0 + k[0], H + p[0]), min(w0 + k[1], W + p[1])
            pool = (h1 - h0) * (w1 - w0)
            h0, w0, h1, w1 = max(h0, 0), max(w0, 0), min(h1, H), min(w1, W)
            if h0 >= h1 or w0 >= w1:
                continue
            d = div if div is not None else (pool if cip else (h1 - h0) * (w1 - w0))
            out[:, i, j] = x[:, h0:h1, w0:w1].astype(np.float64).sum(axis=(1, 2)) / d
    return out.astype(x.dtype)


def bins(n, o):
    return [(i * n // o, -(-(i + 1) * n // o)) for i in range(o)]


def adaptive_ref(x, oh, ow, mode):
    P, H, W = x.shape
    out = np.zeros((P, oh, ow), x.dtype)
    idx = np.zeros((P, oh, ow), np.int64)
    for i, (h0, h1) in enumerate(bins(H, oh)):
        for j, (w0, w1) in enumerate(bins(W, ow)):
            win = x[:, h0:h1, w0:w1].reshape(P, -1)
            if mode == "avg":
                out[:, i, j] = win.astype(np.float64).mean(axis=1)
            else:
                a = win.argmax(axis=1)
                out[:, i, j] = win[np.arange(P), a]
                idx[:, i, j] = (h0 + a // (w1 - w0)) * W + w0 + a % (w1 - w0)
    return out, idx


def nearest_src(n_in, n_out, scale, exact):
    """PyTorch's source indices, computed in float32 as its CPU kernels do ('nearest' keeps
    its legacy same-size / double-size shortcuts)."""
    o = np.arange(n_out)
    if not exact and n_out == n_in:
        return o
    if not exact and n_out == 2 * n_in:
        return o // 2
    s = np.float32(1.0 / scale) if scale else np.float32(n_in) / np.float32(n_out)
    if exact:
        src = np.floor(((o + 0.5) * np.float64(s)).astype(np.float32))
    else:
        src = np.floor(o.astype(np.float32) * s)
    return np.minimum(src.astype(np.int64), n_in - 1)


def linear_taps(n_in, n_out, align, scale):
    if n_in == n_out:
        o = np.arange(n_out)
        return o, o, np.ones(n_out), np.zeros(n_out)
    if align:
        ratio = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        real = ratio * np.arange(n_out)
    else:
        ratio = 1.0 / scale if scale else n_in / n_out
        real = np.maximum(ratio * (np.arange(n_out) + 0.5) - 0.5, 0.0)
    i0 = np.minimum(np.floor(real).astype(np.int64), n_in - 1)
    l1 = np.clip(real - i0, 0, 1)
    i1 = np.where(i0 < n_in - 1, i0 + 1, i0)
    return i0, i1, 1 - l1, l1


def bilinear_ref(x, oh, ow, align, sh=None, sw=None):
    """x: (N, C, H, W)."""
    h0, h1, lh0, lh1 = linear_taps(x.shape[2], oh, align, sh)
    w0, w1, lw0, lw1 = linear_taps(x.shape[3], ow, align, sw)
    xd = x.astype(np.float64)
    top = xd[:, :, h0][:, :, :, w0] * lw0 + xd[:, :, h0][:, :, :, w1] * lw1
    bot = xd[:, :, h1][:, :, :, w0] * lw0 + xd[:, :, h1][:, :, :, w1] * lw1
    return (top * lh0[:, None] + bot * lh1[:, None]).astype(x.dtype)


# ---------------------------------------------------------------------------- max pooling
def random_max2d_case():
    k = tuple(int(v) for v in RNG.integers(1, 4, 2))
    d = tuple(int(v) for v in RNG.integers(1, 3, 2))
    p = tuple(int(RNG.integers(0, kk // 2 + 1)) for kk in k)
    s = tuple(int(v) for v in RNG.integers(1, 4, 2))
    ceil = bool(RNG.integers(0, 2))
    H = int(RNG.integers(d[0] * (k[0] - 1) + 1, 9))
    W = int(RNG.integers(d[1] * (k[1] - 1) + 1, 9))
    return k, s, p, d, ceil, H, W


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_pool2d_random(dtype):
    for _ in range(25):
        k, s, p, d, ceil, H, W = random_max2d_case()
        x = distinct((2, 3, H, W), dtype)
        out, idx = F.max_pool2d(t(x, dtype), k, s, p, d, ceil_mode=ceil, return_indices=True)
        ref, ridx = max_pool2d_ref(x.reshape(6, H, W), k, s, p, d, ceil)
        np.testing.assert_array_equal(npy(out), ref.reshape(2, 3, *ref.shape[1:]))
        np.testing.assert_array_equal(npy(idx), ridx.reshape(2, 3, *ref.shape[1:]))
        assert idx.dtype == ft.int64 and out.dtype == t(x, dtype).dtype


def test_max_pool2d_defaults_unbatched_noncontiguous():
    x = distinct((5, 6, 3))  # (H, W, C) -> permuted to (C, H, W): non-contiguous, unbatched
    xt = t(x).permute(2, 0, 1)
    assert not xt.is_contiguous()
    out = F.max_pool2d(xt, 2)
    ref, _ = max_pool2d_ref(np.ascontiguousarray(x.transpose(2, 0, 1)), (2, 2), (2, 2),
                            (0, 0), (1, 1), False)
    np.testing.assert_array_equal(npy(out), ref)
    assert tuple(out.shape) == (3, 2, 3)
    # stepped slice of a batched input
    x = distinct((2, 2, 9, 8))
    out = F.max_pool2d(t(x)[:, :, ::2], (2, 3), stride=(1, 2), padding=(1, 1))
    ref, _ = max_pool2d_ref(np.ascontiguousarray(x[:, :, ::2]).reshape(4, 5, 8), (2, 3),
                            (1, 2), (1, 1), (1, 1), False)
    np.testing.assert_array_equal(npy(out), ref.reshape(2, 2, *ref.shape[1:]))
    # empty batch
    assert tuple(F.max_pool2d(t(np.zeros((0, 2, 4, 4))), 2).shape) == (0, 2, 2, 2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_pool1d_random(dtype):
    for _ in range(25):
        k, s, p, d, ceil, _, W = random_max2d_case()
        x = distinct((2, 3, W), dtype)
        out, idx = F.max_pool1d(t(x, dtype), k[1], s[1], p[1], d[1], ceil, return_indices=True)
        ref, ridx = max_pool2d_ref(x.reshape(6, 1, W), (1, k[1]), (1, s[1]), (0, p[1]),
                                   (1, d[1]), ceil)
        np.testing.assert_array_equal(npy(out), ref.reshape(2, 3, -1))
        np.testing.assert_array_equal(npy(idx), ridx.reshape(2, 3, -1))
    # unbatched (C, L) and the module
    x = distinct((3, 7))
    out = nn.MaxPool1d(3, stride=2)(t(x))
    ref, _ = max_pool2d_ref(x.reshape(3, 1, 7), (1, 3), (1, 2), (0, 0), (1, 1), False)
    np.testing.assert_array_equal(npy(out), ref.reshape(3, -1))


def test_max_pool_nan_propagates_and_half():
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    x[0, 0, 1, 0] = np.nan
    out, idx = F.max_pool2d(t(x, np.float32), 2, return_indices=True)
    assert np.isnan(npy(out)[0, 0, 0, 0]) and npy(idx)[0, 0, 0, 0] == 4
    xh = t(np.arange(16.0).reshape(1, 4, 4), np.float16)
    out = F.max_pool2d(xh, 2)
    assert out.dtype == ft.float16
    np.testing.assert_array_equal(npy(out).astype(np.float64), [[[5, 7], [13, 15]]])


def test_max_pool_int_dtype_rejected():
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        F.max_pool2d(ft.from_numpy(np.zeros((1, 4, 4), np.int64)), 2)


# ---------------------------------------------------------------------------- average pooling
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_avg_pool2d_random(dtype):
    for _ in range(30):
        k = tuple(int(v) for v in RNG.integers(1, 4, 2))
        p = tuple(int(RNG.integers(0, kk // 2 + 1)) for kk in k)
        s = tuple(int(v) for v in RNG.integers(1, 4, 2))
        ceil, cip = bool(RNG.integers(0, 2)), bool(RNG.integers(0, 2))
        div = [None, None, 3][int(RNG.integers(0, 3))]
        H, W = int(RNG.integers(k[0], 8)), int(RNG.integers(k[1], 8))
        x = RNG.standard_normal((2, 2, H, W)).astype(dtype)
        out = F.avg_pool2d(t(x, dtype), k, s, p, ceil, cip, div)
        ref = avg_pool2d_ref(x.reshape(4, H, W), k, s, p, ceil, cip, div)
        np.testing.assert_allclose(npy(out), ref.reshape(2, 2, *ref.shape[1:]), **tol(dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_avg_pool1d_random(dtype):
    for _ in range(30):
        k = int(RNG.integers(1, 5))
        p, s = int(RNG.integers(0, k // 2 + 1)), int(RNG.integers(1, 4))
        ceil, cip = bool(RNG.integers(0, 2)), bool(RNG.integers(0, 2))
        L = int(RNG.integers(k, 10))
        x = RNG.standard_normal((3, 2, L)).astype(dtype)
        out = F.avg_pool1d(t(x, dtype), k, s, p, ceil, cip)
        ref = avg_pool2d_ref(x.reshape(6, 1, L), (1, k), (1, s), (0, p), ceil, cip, None)
        np.testing.assert_allclose(npy(out), ref.reshape(3, 2, -1), **tol(dtype))


def test_avg_pool_unbatched_noncontiguous_module():
    x = RNG.standard_normal((6, 5, 2))
    xt = t(x).permute(2, 0, 1)
    out = nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False)(xt)
    ref = avg_pool2d_ref(np.ascontiguousarray(x.transpose(2, 0, 1)), (3, 3), (2, 2), (1, 1),
                         False, False, None)
    np.testing.assert_allclose(npy(out), ref, rtol=1e-12, atol=1e-13)
    out = nn.AvgPool1d(2)(t(x[:, :, 0]).t())  # (C=5, L=6), non-contiguous
    np.testing.assert_allclose(npy(out), x[:, :, 0].T.reshape(5, 3, 2).mean(-1), rtol=1e-12, atol=1e-13)


# ---------------------------------------------------------------------------- adaptive pooling
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adaptive_pools_random(dtype):
    for _ in range(20):
        H, W = int(RNG.integers(1, 9)), int(RNG.integers(1, 9))
        oh, ow = int(RNG.integers(1, 7)), int(RNG.integers(1, 7))
        x = distinct((2, 3, H, W), dtype)
        ref, _ = adaptive_ref(x.reshape(6, H, W), oh, ow, "avg")
        out = F.adaptive_avg_pool2d(t(x, dtype), (oh, ow))
        np.testing.assert_allclose(npy(out), ref.reshape(2, 3, oh, ow), **tol(dtype))
        ref, ridx = adaptive_ref(x.reshape(6, H, W), oh, ow, "max")
        out, idx = F.adaptive_max_pool2d(t(x, dtype), (oh, ow), return_indices=True)
        np.testing.assert_array_equal(npy(out), ref.reshape(2, 3, oh, ow))
        np.testing.assert_array_equal(npy(idx), ridx.reshape(2, 3, oh, ow))
        # 1-d on the last dim
        x1 = x[:, :, 0]
        ref, ridx = adaptive_ref(x1.reshape(6, 1, W), 1, ow, "avg")
        np.testing.assert_allclose(npy(F.adaptive_avg_pool1d(t(x1, dtype), ow)),
                                   ref.reshape(2, 3, ow), **tol(dtype))
        ref, ridx = adaptive_ref(x1.reshape(6, 1, W), 1, ow, "max")
        out, idx = F.adaptive_max_pool1d(t(x1, dtype), ow, return_indices=True)
        np.testing.assert_array_equal(npy(out), ref.reshape(2, 3, ow))
        np.testing.assert_array_equal(npy(idx), ridx.reshape(2, 3, ow))


def test_adaptive_none_unbatched_noncontiguous():
    x = distinct((7, 5, 3))
    xt = t(x).permute(2, 0, 1)  # (3, 7, 5) unbatched, non-contiguous
    out = nn.AdaptiveAvgPool2d((None, 2))(xt)
    ref, _ = adaptive_ref(np.ascontiguousarray(x.transpose(2, 0, 1)), 7, 2, "avg")
    np.testing.assert_allclose(npy(out), ref, rtol=1e-12, atol=1e-13)
    out = nn.AdaptiveMaxPool2d(3)(xt)
    ref, _ = adaptive_ref(np.ascontiguousarray(x.transpose(2, 0, 1)), 3, 3, "max")
    np.testing.assert_array_equal(npy(out), ref)
    out = nn.AdaptiveMaxPool1d(4, return_indices=True)(xt[0])
    assert isinstance(out, tuple) and tuple(out[0].shape) == (7, 4)
    out = nn.AdaptiveAvgPool1d(1)(xt[0])
    np.testing.assert_allclose(npy(out)[:, 0], x[:, :, 0].mean(axis=1), rtol=1e-12, atol=1e-13)


# ---------------------------------------------------------------------------- resampling
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_interpolate_nearest_random(dtype, mode):
    exact = mode == "nearest-exact"
    for _ in range(15):
        H, W = int(RNG.integers(1, 7)), int(RNG.integers(1, 7))
        x = RNG.standard_normal((2, 2, H, W)).astype(dtype)
        if RNG.integers(0, 2):
            oh, ow = int(RNG.integers(1, 12)), int(RNG.integers(1, 12))
            out = F.interpolate(t(x, dtype), size=(oh, ow), mode=mode)
            sh = sw = None
        else:
            sh, sw = float(RNG.choice([0.5, 1.7, 2.0, 2.5, 3.0])), float(RNG.choice([0.6, 1.3, 2]))
            oh, ow = math.floor(H * sh), math.floor(W * sw)
            if oh == 0 or ow == 0:
                continue
            out = F.interpolate(t(x, dtype), scale_factor=(sh, sw), mode=mode)
        rh, rw = nearest_src(H, oh, sh, exact), nearest_src(W, ow, sw, exact)
        np.testing.assert_array_equal(npy(out), x[:, :, rh][:, :, :, rw])
        # 1-d
        out = F.interpolate(t(x[:, :, 0], dtype), size=ow, mode=mode)
        np.testing.assert_array_equal(npy(out), x[:, :, 0][:, :, nearest_src(W, ow, None, exact)])


def test_nearest_index_rule_known_values():
    x = t(np.arange(3.0).reshape(1, 1, 3))
    np.testing.assert_array_equal(npy(F.interpolate(x, size=5)).ravel(), [0, 0, 1, 1, 2])
    np.testing.assert_array_equal(npy(F.interpolate(x, size=5, mode="nearest-exact")).ravel(),
                                  [0, 0, 1, 2, 2])
    np.testing.assert_array_equal(npy(F.interpolate(x, scale_factor=2)).ravel(),
                                  [0, 0, 1, 1, 2, 2])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_interpolate_linear_random(dtype):
    for _ in range(20):
        H, W = int(RNG.integers(1, 7)), int(RNG.integers(1, 7))
        align = bool(RNG.integers(0, 2))
        x = RNG.standard_normal((2, 3, H, W)).astype(dtype)
        if RNG.integers(0, 2):
            oh, ow = int(RNG.integers(1, 12)), int(RNG.integers(1, 12))
            out = F.interpolate(t(x, dtype), size=(oh, ow), mode="bilinear", align_corners=align)
            sh = sw = None
        else:
            sh, sw = float(RNG.choice([0.5, 1.7, 2.0, 3.0])), float(RNG.choice([0.6, 1.3, 2]))
            oh, ow = math.floor(H * sh), math.floor(W * sw)
            if oh == 0 or ow == 0:
                continue
            out = F.interpolate(t(x, dtype), scale_factor=(sh, sw), mode="bilinear",
                                align_corners=align)
        ref = bilinear_ref(x, oh, ow, align, None if align else sh, None if align else sw)
        np.testing.assert_allclose(npy(out), ref, **tol(dtype))
        x1 = x[:, :, 0]
        out = F.interpolate(t(x1, dtype), size=ow, mode="linear", align_corners=align)
        ref = bilinear_ref(x1[:, :, None], 1, ow, align)[:, :, 0]
        np.testing.assert_allclose(npy(out), ref, **tol(dtype))


def test_bilinear_known_values_and_recompute():
    x = t(np.array([[[[0.0, 1.0], [2.0, 3.0]]]]))
    out = npy(F.interpolate(x, size=(3, 3), mode="bilinear", align_corners=True))
    np.testing.assert_allclose(out[0, 0], [[0, 0.5, 1], [1, 1.5, 2], [2, 2.5, 3]])
    out = npy(F.interpolate(x, scale_factor=2, mode="bilinear"))  # align_corners=False
    np.testing.assert_allclose(out[0, 0, 0], [0, 0.25, 0.75, 1.0])
    # scale 1.7 on 5: output 8; the scale (not 5/8) sets the spacing unless recomputed
    x = RNG.standard_normal((1, 1, 5))
    a = npy(F.interpolate(t(x), scale_factor=1.7, mode="linear"))
    b = npy(F.interpolate(t(x), scale_factor=1.7, mode="linear", recompute_scale_factor=True))
    np.testing.assert_allclose(a, bilinear_ref(x[:, :, None], 1, 8, False, None, 1.7)[:, :, 0])
    np.testing.assert_allclose(b, bilinear_ref(x[:, :, None], 1, 8, False)[:, :, 0])
    assert not np.allclose(a, b)


def test_interpolate_noncontiguous_half_and_area():
    x = RNG.standard_normal((4, 5, 2, 3))  # permuted to (N=2, C=3, 4, 5)
    xt = t(x).permute(2, 3, 0, 1)
    ref = bilinear_ref(np.ascontiguousarray(x.transpose(2, 3, 0, 1)), 7, 3, False)
    np.testing.assert_allclose(npy(F.interpolate(xt, size=(7, 3), mode="bilinear")), ref,
                               rtol=1e-12, atol=1e-13)
    xh = t(x.transpose(2, 3, 0, 1), np.float16)
    out = F.interpolate(xh, scale_factor=2, mode="nearest")
    assert out.dtype == ft.float16 and tuple(out.shape) == (2, 3, 8, 10)
    out = F.interpolate(xt, size=(2, 2), mode="area")
    ref, _ = adaptive_ref(np.ascontiguousarray(x.transpose(2, 3, 0, 1)).reshape(6, 4, 5), 2, 2,
                          "avg")
    np.testing.assert_allclose(npy(out), ref.reshape(2, 3, 2, 2), rtol=1e-12, atol=1e-13)


def test_upsample_modules():
    x = RNG.standard_normal((1, 2, 3, 4))
    up = nn.Upsample(scale_factor=2, mode="nearest")
    np.testing.assert_array_equal(npy(up(t(x))), x.repeat(2, axis=2).repeat(2, axis=3))
    up = nn.UpsamplingBilinear2d(size=(5, 7))
    np.testing.assert_allclose(npy(up(t(x))), bilinear_ref(x, 5, 7, True), rtol=1e-12, atol=1e-13)
    up = nn.UpsamplingNearest2d(scale_factor=3)
    assert tuple(up(t(x)).shape) == (1, 2, 9, 12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(npy(F.upsample(t(x), size=(3, 4))), x)


# ---------------------------------------------------------------------------- pixel shuffle
def test_pixel_shuffle_roundtrip():
    x = RNG.standard_normal((2, 8, 3, 5))
    out = F.pixel_shuffle(t(x), 2)
    ref = x.reshape(2, 2, 2, 2, 3, 5).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 6, 10)
    np.testing.assert_array_equal(npy(out), ref)
    np.testing.assert_array_equal(npy(F.pixel_unshuffle(out, 2)), x)
    np.testing.assert_array_equal(npy(nn.PixelShuffle(2)(t(x[0]))), ref[0])  # unbatched
    np.testing.assert_array_equal(npy(nn.PixelUnshuffle(2)(out)), x)
    np.testing.assert_array_equal(npy(ft.pixel_unshuffle(ft.pixel_shuffle(t(x), 2), 2)), x)
    xx = t(x, grad=True)
    assert gradcheck(lambda a: F.pixel_shuffle(a, 2), (t(x[:, :, :2, :2], grad=True),))
    assert gradcheck(lambda a: F.pixel_unshuffle(a, 2), (t(x[:1, :2, :2, :4], grad=True),))
    F.pixel_shuffle(xx, 2).sum().backward()
    np.testing.assert_array_equal(npy(xx.grad), np.ones_like(x))


# ---------------------------------------------------------------------------- channel dropout
def test_channel_dropout():
    x = t(np.ones((4, 6, 5, 5)))
    out = npy(F.dropout2d(x, 0.5, training=True))
    per_channel = out.reshape(4, 6, -1)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2).all(-1))
    assert np.array_equal(npy(F.dropout2d(x, 0.5, training=False)), npy(x))
    out = npy(F.dropout1d(t(np.ones((6, 5))), 0.5))  # unbatched (C, L)
    assert np.all((out == 0).all(-1) | (out == 2).all(-1))
    out = npy(nn.Dropout3d(0.25)(t(np.ones((3, 2, 2, 2)))))  # unbatched (C, D, H, W)
    assert np.all(np.isin(out, [0.0, 4.0 / 3.0]))
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input"):
        F.dropout1d(t(np.ones((2, 2, 2, 2))))
    with pytest.raises(ValueError, match="dropout probability"):
        nn.Dropout2d(1.5)
    a = npy(F.alpha_dropout(t(np.ones((1000,))), 0.3, training=True))
    assert len(np.unique(a.round(6))) == 2
    assert repr(nn.Dropout2d()) == "Dropout2d(p=0.5, inplace=False)"


# ---------------------------------------------------------------------------- gradients
def test_gradcheck_max_pools():
    x = t(distinct((1, 2, 5, 6)), grad=True)
    assert gradcheck(lambda a: F.max_pool2d(a, 2), (x,))
    assert gradcheck(lambda a: F.max_pool2d(a, (3, 2), (2, 1), (1, 1), (1, 2), ceil_mode=True),
                     (x,))
    xt = t(distinct((6, 5)), grad=True)
    assert gradcheck(lambda a: F.max_pool2d(a.t().unsqueeze(0), 2, 1), (xt,))  # non-contig
    x1 = t(distinct((2, 2, 7)), grad=True)
    assert gradcheck(lambda a: F.max_pool1d(a, 3, 2, 1, ceil_mode=True), (x1,))
    assert gradcheck(lambda a: F.adaptive_max_pool2d(a, (2, 4)), (x,))
    assert gradcheck(lambda a: F.adaptive_max_pool1d(a, 3), (x1,))
    out = F.max_pool2d(x, 2)
    assert out.grad_fn.name() == "MaxPool2DWithIndicesBackward0"


def test_gradcheck_avg_pools():
    x = t(RNG.standard_normal((1, 2, 5, 6)), grad=True)
    assert gradcheck(lambda a: F.avg_pool2d(a, 3, 2, 1, ceil_mode=True,
                                            count_include_pad=False), (x,))
    assert gradcheck(lambda a: F.avg_pool2d(a, 2, 1, 1, divisor_override=3), (x,))
    assert gradcheck(lambda a: F.avg_pool1d(a[:, :, 0], 3, 2, 1), (x,))
    assert gradcheck(lambda a: F.adaptive_avg_pool2d(a, (3, 4)), (x,))
    assert gradcheck(lambda a: F.adaptive_avg_pool1d(a[0], 4), (x,))
    assert F.avg_pool2d(x, 2).grad_fn.name() == "AvgPool2DBackward0"


def test_gradcheck_resampling():
    x = t(RNG.standard_normal((1, 2, 3, 4)), grad=True)
    x1 = t(RNG.standard_normal((2, 1, 4)), grad=True)
    for mode in ["nearest", "nearest-exact"]:
        assert gradcheck(lambda a, m=mode: F.interpolate(a, size=(5, 7), mode=m), (x,))
        assert gradcheck(lambda a, m=mode: F.interpolate(a, scale_factor=0.7, mode=m), (x1,))
    for align in [False, True]:
        assert gradcheck(lambda a, al=align: F.interpolate(a, size=(5, 3), mode="bilinear",
                                                           align_corners=al), (x,))
        assert gradcheck(lambda a, al=align: F.interpolate(a, size=7, mode="linear",
                                                           align_corners=al), (x1,))
    xt = t(RNG.standard_normal((4, 3)), grad=True)
    assert gradcheck(lambda a: F.interpolate(a.t().reshape(1, 1, 3, 4), scale_factor=1.5,
                                             mode="bilinear"), (xt,))
    assert F.interpolate(x, scale_factor=2).grad_fn.name() == "UpsampleNearest2DBackward0"
    assert F.interpolate(x, scale_factor=2, mode="bilinear").grad_fn.name() == \
        "UpsampleBilinear2DBackward0"


def test_gradgradcheck():
    x = t(RNG.standard_normal((1, 2, 4, 5)), grad=True)
    assert gradgradcheck(lambda a: F.avg_pool2d(a, 2, 1, 1), (x,))
    assert gradgradcheck(lambda a: F.adaptive_avg_pool2d(a, 3), (x,))
    assert gradgradcheck(lambda a: F.interpolate(a, size=(3, 7), mode="bilinear"), (x,))
    assert gradgradcheck(lambda a: F.interpolate(a, size=(6, 3)), (x,))
    assert gradgradcheck(lambda a: F.interpolate(a[0], size=7, mode="linear",
                                                 align_corners=True), (x,))
    xd = t(distinct((1, 2, 4, 5)), grad=True)
    assert gradgradcheck(lambda a: F.max_pool2d(a, 2, 1), (xd,))
    assert gradgradcheck(lambda a: F.adaptive_max_pool2d(a, 2), (xd,))
    assert gradgradcheck(lambda a: F.max_pool1d(a[0], 2), (xd,))
    y = F.max_pool2d(xd, 2)
    v = t(np.ones(tuple(y.shape)), grad=True)
    (g,) = ft.autograd.grad(y, xd, v, create_graph=True)
    assert g.grad_fn.name() == "MaxPool2DWithIndicesBackwardBackward0"
    (gv,) = ft.autograd.grad(g.sum(), v)  # gathers ones at the argmaxes
    np.testing.assert_array_equal(npy(gv), np.ones(tuple(y.shape)))


def test_backward_float32_matches_numpy():
    x = distinct((1, 1, 4, 4), np.float32)
    xt = t(x, np.float32, grad=True)
    out, idx = F.max_pool2d(xt, 2, return_indices=True)
    out.sum().backward()
    g = np.zeros(16, np.float32)
    g[npy(idx).ravel()] = 1
    np.testing.assert_array_equal(npy(xt.grad).ravel(), g)


# ---------------------------------------------------------------------------- module reprs
def test_module_reprs():
    assert repr(nn.MaxPool2d(2)) == \
        "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
    assert repr(nn.MaxPool1d(3, 2, 1, ceil_mode=True)) == \
        "MaxPool1d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=True)"
    assert repr(nn.AvgPool1d(3)) == "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))"
    assert repr(nn.AvgPool2d((2, 3), padding=1)) == \
        "AvgPool2d(kernel_size=(2, 3), stride=(2, 3), padding=1)"
    assert repr(nn.AdaptiveAvgPool2d((5, 7))) == "AdaptiveAvgPool2d(output_size=(5, 7))"
    assert repr(nn.AdaptiveMaxPool1d(3)) == "AdaptiveMaxPool1d(output_size=3)"
    assert repr(nn.Upsample(scale_factor=2)) == "Upsample(scale_factor=2.0, mode='nearest')"
    assert repr(nn.Upsample(size=(3, 4), mode="bilinear")) == \
        "Upsample(size=(3, 4), mode='bilinear')"
    assert repr(nn.UpsamplingBilinear2d(scale_factor=2)) == \
        "UpsamplingBilinear2d(scale_factor=2.0, mode='bilinear')"
    assert repr(nn.PixelShuffle(3)) == "PixelShuffle(upscale_factor=3)"
    assert repr(nn.PixelUnshuffle(2)) == "PixelUnshuffle(downscale_factor=2)"
    assert len(nn.MaxPool2d(2).state_dict()) == 0


# ---------------------------------------------------------------------------- errors
def test_errors():
    x = t(np.zeros((1, 1, 4, 4)))
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel"):
        F.max_pool2d(x, 2, padding=2)
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        F.avg_pool2d(x, 3, padding=2)
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        F.max_pool1d(x[0], 2, padding=3)
    with pytest.raises(RuntimeError, match="Output size is too small"):
        F.max_pool2d(x, 5)
    with pytest.raises(RuntimeError, match="Output size is too small"):
        F.avg_pool1d(x[0], 6)
    with pytest.raises(RuntimeError, match="Expected 3D or 4D"):
        F.max_pool2d(x[0, 0], 2)
    with pytest.raises(RuntimeError, match="Expected 2D or 3D"):
        F.max_pool1d(x, 2)
    with pytest.raises(RuntimeError, match="stride should be greater than zero"):
        F.max_pool2d(x, 2, stride=0)
    with pytest.raises(RuntimeError, match="divisor must be not zero"):
        F.avg_pool2d(x, 2, divisor_override=0)
    with pytest.raises(RuntimeError, match="kernel_size must either be a single int"):
        F.max_pool2d(x, (2, 2, 2))
    with pytest.raises(RuntimeError, match="Expected 3D or 4D tensor"):
        F.adaptive_avg_pool2d(x[0, 0], 2)
    with pytest.raises(RuntimeError, match="non-zero size for non-batch dimensions"):
        F.adaptive_max_pool2d(t(np.zeros((1, 0, 3, 3))), 2)
    with pytest.raises(ValueError, match="either size or scale_factor should be defined"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="only one of size or scale_factor"):
        F.interpolate(x, size=2, scale_factor=2)
    with pytest.raises(ValueError, match="align_corners option can only be set"):
        F.interpolate(x, size=2, align_corners=True)
    with pytest.raises(NotImplementedError, match="Got 4D input, but linear mode needs 3D"):
        F.interpolate(x, size=2, mode="linear")
    with pytest.raises(NotImplementedError, match="bilinear mode needs 4D"):
        F.interpolate(x[0], size=2, mode="bilinear")
    with pytest.raises(ValueError, match="same number of spatial dimensions"):
        F.interpolate(x, size=(2, 2, 2))
    with pytest.raises(RuntimeError, match="Input and output sizes should be greater than 0"):
        F.interpolate(x, scale_factor=0.1)
    with pytest.raises(RuntimeError, match="divisible by the square of upscale_factor"):
        F.pixel_shuffle(t(np.zeros((1, 3, 2, 2))), 2)
    with pytest.raises(RuntimeError, match="height to be divisible by downscale_factor"):
        F.pixel_unshuffle(t(np.zeros((1, 1, 3, 2))), 2)


def test_max_pool_saved_grad_flow_through_1d_views():
    x = t(distinct((2, 8)), grad=True)
    out = F.max_pool1d(x, 2)
    out.sum().backward()
    assert npy(x.grad).sum() == 8 and set(np.unique(npy(x.grad))) <= {0.0, 1.0}


def test_compare_with_torch():
    torch = pytest.importorskip("torch")
    x = distinct((2, 3, 7, 6))
    for kw in [dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
               dict(kernel_size=(2, 3), dilation=(2, 1))]:
        a = F.max_pool2d(t(x), return_indices=True, **kw)
        b = torch.nn.functional.max_pool2d(torch.from_numpy(x), return_indices=True, **kw)
        np.testing.assert_array_equal(npy(a[0]), b[0].numpy())
        np.testing.assert_array_equal(npy(a[1]), b[1].numpy())
    for kw in [dict(scale_factor=1.7, mode="bilinear"), dict(size=(5, 9), mode="nearest"),
               dict(scale_factor=2.5, mode="nearest-exact"),
               dict(size=(3, 11), mode="bilinear", align_corners=True)]:
        a = F.interpolate(t(x), **kw)
        b = torch.nn.functional.interpolate(torch.from_numpy(x), **kw)
        np.testing.assert_allclose(npy(a), b.numpy(), rtol=1e-12, atol=1e-12)


def test_large_inputs_parallel_path_and_half_backward():
    x = RNG.standard_normal((4, 8, 64, 64))  # big enough to split planes over threads
    xt = t(x, grad=True)
    out = F.max_pool2d(xt, 2)
    np.testing.assert_array_equal(npy(out), x.reshape(4, 8, 32, 2, 32, 2).max(axis=(3, 5)))
    out.sum().backward()
    assert npy(xt.grad).sum() == out.numel()
    np.testing.assert_allclose(npy(F.avg_pool2d(t(x), 2)),
                               x.reshape(4, 8, 32, 2, 32, 2).mean(axis=(3, 5)), rtol=1e-12,
                               atol=1e-14)
    np.testing.assert_allclose(npy(F.adaptive_avg_pool2d(t(x), 1))[..., 0, 0],
                               x.mean(axis=(2, 3)), rtol=1e-10, atol=1e-14)
    np.testing.assert_array_equal(npy(F.interpolate(t(x), scale_factor=2)),
                                  x.repeat(2, axis=2).repeat(2, axis=3))
    xu = t(x, grad=True)
    F.interpolate(xu, scale_factor=2, mode="bilinear").sum().backward()
    np.testing.assert_allclose(npy(xu.grad), 4.0, rtol=1e-12, atol=1e-13)
    xh = t(x[:1, :2, :8, :8], np.float16, grad=True)
    F.avg_pool2d(xh, 2).sum().backward()
    assert xh.grad.dtype == ft.float16
    np.testing.assert_array_equal(npy(xh.grad).astype(np.float64), 0.25)
    # empty batch
    assert tuple(F.interpolate(t(np.zeros((0, 2, 3, 3))), size=(5, 5)).shape) == (0, 2, 5, 5)
    assert tuple(F.avg_pool2d(t(np.zeros((0, 2, 4, 4))), 2).shape) == (0, 2, 2, 2)
