"""3-d layers (conv3d, max/avg/adaptive-avg pool3d), lp_pool1d/2d/3d and bicubic/trilinear
interpolation vs NumPy loop references: values, indices, gradients (gradcheck in float64),
module reprs/params/init and error types."""

import itertools
import math

import numpy as np
import pytest

import ferrotorch as ft
import ferrotorch.nn.functional as F
from ferrotorch import nn
from ferrotorch.autograd import gradcheck

from conv_reference import ref_conv_with_grads

RNG = np.random.default_rng(4321)


def t(a, dtype=np.float64, grad=False):
    x = ft.from_numpy(np.ascontiguousarray(np.asarray(a, dtype=dtype)))
    return x.requires_grad_() if grad else x


def npy(x):
    return x.detach().numpy()


def tol(dtype):
    return dict(rtol=2e-4, atol=2e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)


def noncontig(a, dtype):
    """``a`` as a non-contiguous ferrotorch tensor (a stepped slice of a bigger buffer)."""
    big = np.zeros((2 * a.shape[0],) + a.shape[1:], dtype=dtype)
    big[::2] = a
    x = t(big, dtype)[::2]
    assert not x.is_contiguous()
    return x


def trip(v):
    return tuple(v) if isinstance(v, (list, tuple)) else (v,) * 3


def out_size(n, k, p, s, d, ceil):
    num = n + 2 * p - d * (k - 1) - 1
    o = (-(-num // s) if ceil else num // s) + 1
    if ceil and (o - 1) * s >= n + p:
        o -= 1
    return o


# ---------------------------------------------------------------------------- references
def max_pool3d_ref(x, k, s, p, d, ceil):
    """x: (P, D, H, W) -> values and flat D*H*W indices (first maximum in scan order)."""
    P, D, H, W = x.shape
    osz = [out_size(n, k[i], p[i], s[i], d[i], ceil) for i, n in enumerate((D, H, W))]
    out = np.empty((P, *osz), x.dtype)
    idx = np.empty((P, *osz), np.int64)
    for pl in range(P):
        for o in itertools.product(*[range(v) for v in osz]):
            best, bi = -np.inf, -1
            for kk in itertools.product(*[range(v) for v in k]):
                z, y, xx = (o[i] * s[i] - p[i] + kk[i] * d[i] for i in range(3))
                if 0 <= z < D and 0 <= y < H and 0 <= xx < W and x[pl, z, y, xx] > best:
                    best, bi = x[pl, z, y, xx], (z * H + y) * W + xx
            out[(pl, *o)], idx[(pl, *o)] = best, bi
    return out, idx


def avg_pool3d_ref(x, k, s, p, ceil, cip, div):
    P, D, H, W = x.shape
    dims = (D, H, W)
    osz = [out_size(n, k[i], p[i], s[i], 1, ceil) for i, n in enumerate(dims)]
    out = np.zeros((P, *osz), np.float64)
    for o in itertools.product(*[range(v) for v in osz]):
        lo = [o[i] * s[i] - p[i] for i in range(3)]
        hi = [min(lo[i] + k[i], dims[i] + p[i]) for i in range(3)]
        pool = np.prod([hi[i] - lo[i] for i in range(3)])
        lo = [max(v, 0) for v in lo]
        hi = [min(hi[i], dims[i]) for i in range(3)]
        total = x[:, lo[0]:hi[0], lo[1]:hi[1], lo[2]:hi[2]].astype(np.float64).sum((1, 2, 3))
        if div is not None:
            divisor = div
        elif cip:
            divisor = pool
        else:
            divisor = np.prod([hi[i] - lo[i] for i in range(3)])
        out[(slice(None), *o)] = total / divisor
    return out


def adaptive_avg3d_ref(x, osz):
    P, D, H, W = x.shape
    out = np.zeros((P, *osz))
    for o in itertools.product(*[range(v) for v in osz]):
        sl = [slice((o[i] * n) // osz[i], -(-((o[i] + 1) * n) // osz[i]))
              for i, n in enumerate((D, H, W))]
        out[(slice(None), *o)] = x[(slice(None), *sl)].mean((1, 2, 3))
    return out


def lp_pool_ref(x, p, k, s, ceil):
    """x: (P, *spatial); (sum over each window of x^p)^(1/p) with PyTorch's output size."""
    nd = x.ndim - 1
    osz = [out_size(x.shape[1 + i], k[i], 0, s[i], 1, ceil) for i in range(nd)]
    out = np.zeros((x.shape[0], *osz))
    for o in itertools.product(*[range(v) for v in osz]):
        sl = tuple(slice(o[i] * s[i], min(o[i] * s[i] + k[i], x.shape[1 + i]))
                   for i in range(nd))
        win = x[(slice(None), *sl)].astype(np.float64) ** p
        avg = win.sum(axis=tuple(range(1, nd + 1))) / np.prod(
            [min(o[i] * s[i] + k[i], x.shape[1 + i]) - o[i] * s[i] for i in range(nd)])
        out[(slice(None), *o)] = (avg * np.prod(k)) ** (1.0 / p)
    return out


def cubic_weights(t_, a=-0.75):
    def c1(v):
        return ((a + 2) * v - (a + 3)) * v * v + 1

    def c2(v):
        return ((a * v - 5 * a) * v + 8 * a) * v - 4 * a
    return [c2(t_ + 1), c1(t_), c1(1 - t_), c2(2 - t_)]


def src_index(i, n_in, n_out, align, scale, cubic):
    if align:
        return (n_in - 1) / (n_out - 1) * i if n_out > 1 else 0.0
    r = 1.0 / scale if scale else n_in / n_out
    v = r * (i + 0.5) - 0.5
    return v if cubic else max(v, 0.0)


def bicubic_ref(x, osz, align, scales=(None, None)):
    N, C, H, W = x.shape
    out = np.zeros((N, C, *osz))
    for i in range(osz[0]):
        sy = src_index(i, H, osz[0], align, scales[0], True)
        y0 = min(math.floor(sy), H - 1)
        wy = cubic_weights(min(max(sy - y0, 0.0), 1.0))
        for j in range(osz[1]):
            sx = src_index(j, W, osz[1], align, scales[1], True)
            x0 = min(math.floor(sx), W - 1)
            wx = cubic_weights(min(max(sx - x0, 0.0), 1.0))
            acc = 0.0
            for a in range(4):
                yy = min(max(y0 - 1 + a, 0), H - 1)
                for b in range(4):
                    xx = min(max(x0 - 1 + b, 0), W - 1)
                    acc = acc + wy[a] * wx[b] * x[:, :, yy, xx]
            out[:, :, i, j] = acc
    return out


def trilinear_ref(x, osz, align):
    N, C = x.shape[:2]
    ins = x.shape[2:]
    out = np.zeros((N, C, *osz))
    for o in itertools.product(*[range(v) for v in osz]):
        corners = []
        for d in range(3):
            sv = src_index(o[d], ins[d], osz[d], align, None, False)
            i0 = int(math.floor(sv))
            i1 = i0 + (1 if i0 < ins[d] - 1 else 0)
            lam = sv - i0
            corners.append(((i0, 1 - lam), (i1, lam)))
        acc = 0.0
        for (a, wa), (b, wb), (c, wc) in itertools.product(*corners):
            acc = acc + wa * wb * wc * x[:, :, a, b, c]
        out[(slice(None), slice(None), *o)] = acc
    return out


# ---------------------------------------------------------------------------- conv3d
CONV_CASES = [
    dict(stride=1, padding=0, dilation=1, groups=1),
    dict(stride=2, padding=1, dilation=1, groups=1),
    dict(stride=(1, 2, 1), padding=(2, 0, 1), dilation=(2, 1, 1), groups=2),
    dict(stride=1, padding="same", dilation=(2, 1, 2), groups=1),
    dict(stride=1, padding="same", dilation=1, groups=2),
    dict(stride=(2, 1, 1), padding="valid", dilation=1, groups=4),
]


@pytest.mark.parametrize("kw", CONV_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv3d_values(kw, dtype):
    g = kw["groups"]
    x = RNG.standard_normal((2, 4, 5, 6, 5)).astype(dtype)
    w = RNG.standard_normal((4, 4 // g, 2, 3, 2)).astype(dtype)
    b = RNG.standard_normal(4).astype(dtype)
    ref, *_ = ref_conv_with_grads(x, w, b, None, **kw)
    out = F.conv3d(noncontig(x, dtype), t(w, dtype), t(b, dtype), **kw)
    assert out.dtype == (ft.float32 if dtype == np.float32 else ft.float64)
    np.testing.assert_allclose(npy(out), ref, **tol(dtype))
    # no bias, unbatched
    ref0, *_ = ref_conv_with_grads(x[:1], w, None, None, **kw)
    out0 = ft.conv3d(t(x[0], dtype), t(w, dtype), None, **kw)
    assert list(out0.shape) == list(ref0.shape[1:])
    np.testing.assert_allclose(npy(out0), ref0[0], **tol(dtype))


def test_conv3d_grads_vs_reference():
    kw = dict(stride=(2, 1, 1), padding=(1, 1, 0), dilation=(1, 2, 1), groups=2)
    x = RNG.standard_normal((2, 4, 5, 6, 4))
    w = RNG.standard_normal((6, 2, 3, 2, 2))
    b = RNG.standard_normal(6)
    ref, gx, gw, gb = ref_conv_with_grads(x, w, b, None, **kw)
    gy = RNG.standard_normal(ref.shape)
    ref, gx, gw, gb = ref_conv_with_grads(x, w, b, gy, **kw)
    xt, wt, bt = t(x, grad=True), t(w, grad=True), t(b, grad=True)
    out = F.conv3d(xt, wt, bt, **kw)
    out.backward(t(gy))
    np.testing.assert_allclose(npy(out), ref, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(npy(xt.grad), gx, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(npy(wt.grad), gw, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(npy(bt.grad), gb, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("kw", [dict(stride=2, padding=1), dict(padding="same", groups=2)])
def test_conv3d_gradcheck(kw):
    x = t(RNG.standard_normal((1, 2, 3, 4, 3)), grad=True)
    w = t(RNG.standard_normal((2, 2 // kw.get("groups", 1), 2, 2, 3)), grad=True)
    b = t(RNG.standard_normal(2), grad=True)
    assert gradcheck(lambda a, c, e: F.conv3d(a, c, e, **kw), (x, w, b))


def test_conv3d_empty_batch():
    out = F.conv3d(t(np.zeros((0, 2, 4, 4, 4))), t(np.ones((3, 2, 2, 2, 2))))
    assert list(out.shape) == [0, 3, 3, 3, 3]


def test_conv3d_errors():
    w = t(np.ones((3, 2, 2, 2, 2)))
    with pytest.raises(RuntimeError, match="Expected 4D"):
        F.conv3d(t(np.ones((1, 2, 4, 4))[0]), w)
    with pytest.raises(RuntimeError, match="to have 2 channels, but got 3 channels"):
        F.conv3d(t(np.ones((1, 3, 4, 4, 4))), w)
    with pytest.raises(RuntimeError, match="5-dimensional weight"):
        F.conv3d(t(np.ones((1, 2, 4, 4, 4))), t(np.ones((3, 2, 2, 2))))
    with pytest.raises(RuntimeError, match="Kernel size can't be greater"):
        F.conv3d(t(np.ones((1, 2, 1, 4, 4))), w)
    with pytest.raises(RuntimeError, match="strided"):
        F.conv3d(t(np.ones((1, 2, 4, 4, 4))), w, stride=2, padding="same")


@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate", "circular"])
def test_conv3d_module(mode):
    ft.manual_seed(0)
    m = nn.Conv3d(4, 6, (2, 3, 3), stride=(1, 2, 1), padding=1, groups=2, padding_mode=mode)
    assert list(m.weight.shape) == [6, 2, 2, 3, 3]
    assert list(m.bias.shape) == [6]
    bound = 1 / math.sqrt(2 * 2 * 3 * 3)
    assert float(m.weight.abs().max()) <= bound and float(m.bias.abs().max()) <= bound
    assert list(dict(m.state_dict()).keys()) == ["weight", "bias"]
    x = RNG.standard_normal((2, 4, 3, 5, 4))
    xp = x if mode == "zeros" else np.pad(
        x, [(0, 0), (0, 0)] + [(1, 1)] * 3,
        mode={"reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode])
    pad = 1 if mode == "zeros" else 0
    ref, *_ = ref_conv_with_grads(xp, npy(m.weight), npy(m.bias), None, stride=(1, 2, 1),
                                  padding=pad, groups=2)
    np.testing.assert_allclose(npy(m(t(x, np.float32))), ref, rtol=1e-4, atol=1e-4)
    extra = "" if mode == "zeros" else f", padding_mode={mode}"
    assert repr(m) == ("Conv3d(4, 6, kernel_size=(2, 3, 3), stride=(1, 2, 1), "
                       f"padding=(1, 1, 1), groups=2{extra})")


def test_conv3d_module_repr_and_dtype():
    m = nn.Conv3d(2, 3, 3, bias=False, dilation=2, padding="same", dtype=ft.float64)
    assert m.bias is None and m.weight.dtype == ft.float64
    assert repr(m) == ("Conv3d(2, 3, kernel_size=(3, 3, 3), stride=(1, 1, 1), padding=same, "
                       "dilation=(2, 2, 2), bias=False)")
    assert list(m(t(np.ones((1, 2, 5, 5, 5)))).shape) == [1, 3, 5, 5, 5]
    with pytest.raises(ValueError):
        nn.Conv3d(3, 4, 2, groups=2)


# ---------------------------------------------------------------------------- pools
POOL_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=(2, 3, 2), stride=(1, 2, 1), padding=(1, 1, 0)),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=(3, 2, 2), stride=(2, 1, 2), padding=(1, 0, 1), ceil_mode=True),
]


def distinct(shape, dtype):
    n = int(np.prod(shape))
    return (RNG.permutation(n) / n * 4 - 2).reshape(shape).astype(dtype)


@pytest.mark.parametrize("kw", POOL_CASES + [dict(kernel_size=2, dilation=(2, 1, 2)),
                                             dict(kernel_size=3, padding=1, dilation=2,
                                                  stride=1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_pool3d(kw, dtype):
    x = distinct((2, 3, 5, 6, 7), dtype)
    k = trip(kw["kernel_size"])
    s = trip(kw.get("stride", k))
    p, d = trip(kw.get("padding", 0)), trip(kw.get("dilation", 1))
    ref, ridx = max_pool3d_ref(x.reshape(6, 5, 6, 7), k, s, p, d, kw.get("ceil_mode", False))
    out, idx = F.max_pool3d(noncontig(x, dtype), return_indices=True, **kw)
    np.testing.assert_array_equal(npy(out).reshape(ref.shape), ref)
    np.testing.assert_array_equal(npy(idx).reshape(ref.shape), ridx)
    assert idx.dtype == ft.int64
    out3 = ft.max_pool3d(t(x[0], dtype), **kw)  # unbatched
    np.testing.assert_array_equal(npy(out3), ref[:3])
    m = nn.MaxPool3d(**kw)
    np.testing.assert_array_equal(npy(m(t(x, dtype))).reshape(ref.shape), ref)


def test_max_pool3d_ties_grad_goes_to_first():
    x = t(np.ones((1, 1, 2, 2, 2)), grad=True)
    F.max_pool3d(x, 2).sum().backward()
    g = np.zeros((1, 1, 2, 2, 2))
    g[0, 0, 0, 0, 0] = 1
    np.testing.assert_array_equal(npy(x.grad), g)


@pytest.mark.parametrize("kw", POOL_CASES[1:3])
def test_max_pool3d_gradcheck(kw):
    x = t(distinct((1, 2, 4, 5, 4), np.float64), grad=True)
    assert gradcheck(lambda a: F.max_pool3d(a, **kw), (x,))


@pytest.mark.parametrize("kw", POOL_CASES + [
    dict(kernel_size=(3, 2, 3), padding=1, count_include_pad=False, ceil_mode=True, stride=2),
    dict(kernel_size=2, padding=1, divisor_override=3),
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_avg_pool3d(kw, dtype):
    x = RNG.standard_normal((2, 2, 5, 6, 7)).astype(dtype)
    k = trip(kw["kernel_size"])
    s, p = trip(kw.get("stride", k)), trip(kw.get("padding", 0))
    ref = avg_pool3d_ref(x.reshape(4, 5, 6, 7), k, s, p, kw.get("ceil_mode", False),
                         kw.get("count_include_pad", True), kw.get("divisor_override"))
    out = F.avg_pool3d(noncontig(x, dtype), **kw)
    assert out.dtype == t(x, dtype).dtype
    np.testing.assert_allclose(npy(out).reshape(ref.shape), ref, **tol(dtype))
    np.testing.assert_allclose(npy(F.avg_pool3d(t(x[1], dtype), **kw)), ref[2:], **tol(dtype))
    m = nn.AvgPool3d(**kw)
    np.testing.assert_allclose(npy(m(t(x, dtype))).reshape(ref.shape), ref, **tol(dtype))


@pytest.mark.parametrize("kw", [POOL_CASES[2], dict(kernel_size=2, padding=1,
                                                     count_include_pad=False, stride=1)])
def test_avg_pool3d_gradcheck(kw):
    x = t(RNG.standard_normal((1, 2, 4, 3, 4)), grad=True)
    assert gradcheck(lambda a: F.avg_pool3d(a, **kw), (x,))


@pytest.mark.parametrize("osz", [(2, 3, 2), 3, (None, 2, 5), (1, 1, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adaptive_avg_pool3d(osz, dtype):
    x = RNG.standard_normal((2, 3, 5, 6, 7)).astype(dtype)
    o = trip(osz)
    o = tuple(x.shape[2 + i] if v is None else v for i, v in enumerate(o))
    ref = adaptive_avg3d_ref(x.reshape(6, 5, 6, 7), o)
    out = F.adaptive_avg_pool3d(noncontig(x, dtype), osz)
    np.testing.assert_allclose(npy(out).reshape(ref.shape), ref, **tol(dtype))
    np.testing.assert_allclose(npy(nn.AdaptiveAvgPool3d(osz)(t(x[0], dtype))), ref[:3],
                               **tol(dtype))
    # interpolate(mode='area') on 5-d input is adaptive average pooling
    np.testing.assert_allclose(npy(F.interpolate(t(x, dtype), size=o, mode="area"))
                               .reshape(ref.shape), ref, **tol(dtype))


def test_adaptive_avg_pool3d_gradcheck():
    x = t(RNG.standard_normal((1, 2, 5, 4, 3)), grad=True)
    assert gradcheck(lambda a: F.adaptive_avg_pool3d(a, (3, 2, 2)), (x,))


def test_pool3d_errors_and_repr():
    x = t(np.ones((1, 1, 4, 4, 4)))
    with pytest.raises(RuntimeError, match="4D or 5D"):
        F.max_pool3d(t(np.ones((4, 4, 4))), 2)
    with pytest.raises(RuntimeError, match="4D or 5D"):
        F.avg_pool3d(t(np.ones((4, 4, 4))), 2)
    with pytest.raises(RuntimeError, match="4D or 5D"):
        F.adaptive_avg_pool3d(t(np.ones((4, 4, 4))), 2)
    with pytest.raises(RuntimeError, match="pad should be smaller than or equal to half"):
        F.max_pool3d(x, 2, padding=2)
    with pytest.raises(RuntimeError, match="too small"):
        F.avg_pool3d(t(np.ones((1, 1, 1, 4, 4))), 2)
    with pytest.raises(RuntimeError, match="three ints"):
        F.max_pool3d(x, (2, 2))
    assert repr(nn.MaxPool3d(2, stride=1)) == (
        "MaxPool3d(kernel_size=2, stride=1, padding=0, dilation=1, ceil_mode=False)")
    assert repr(nn.AvgPool3d((2, 2, 3))) == (
        "AvgPool3d(kernel_size=(2, 2, 3), stride=(2, 2, 3), padding=0)")
    assert repr(nn.AdaptiveAvgPool3d((1, None, 2))) == (
        "AdaptiveAvgPool3d(output_size=(1, None, 2))")


# ---------------------------------------------------------------------------- lp pool
@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, 1.5])
@pytest.mark.parametrize("kw", [dict(kernel_size=3), dict(kernel_size=2, stride=1),
                                dict(kernel_size=3, stride=2, ceil_mode=True)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lp_pool(p, kw, dtype):
    x = (RNG.random((2, 3, 7, 8)) + 0.1).astype(dtype)
    k = kw["kernel_size"]
    s = kw.get("stride") or k
    ceil = kw.get("ceil_mode", False)
    ref1 = lp_pool_ref(x[:, :, 0].reshape(6, 8), p, (k,), (s,), ceil)
    out1 = F.lp_pool1d(noncontig(x[:, :, 0], dtype), p, **kw)
    np.testing.assert_allclose(npy(out1).reshape(ref1.shape), ref1, **tol(dtype))
    ref2 = lp_pool_ref(x.reshape(6, 7, 8), p, (k, k), (s, s), ceil)
    out2 = F.lp_pool2d(noncontig(x, dtype), p, **kw)
    np.testing.assert_allclose(npy(out2).reshape(ref2.shape), ref2, **tol(dtype))
    m = nn.LPPool2d(p, **kw)
    np.testing.assert_allclose(npy(m(t(x, dtype))).reshape(ref2.shape), ref2, **tol(dtype))
    x3 = x.reshape(2, 3, 7, 4, 2)[:, :, :, :, :]
    ref3 = lp_pool_ref(x3.reshape(6, 7, 4, 2), p, (k, 2, 1), (s, 1, 1), ceil)
    out3 = F.lp_pool3d(t(x3, dtype), p, (k, 2, 1), stride=(s, 1, 1), ceil_mode=ceil)
    np.testing.assert_allclose(npy(out3).reshape(ref3.shape), ref3, **tol(dtype))


def test_lp_pool_negative_even_power_and_repr():
    x = RNG.standard_normal((1, 2, 6, 6))
    ref = lp_pool_ref(x.reshape(2, 6, 6), 2.0, (2, 3), (2, 3), False)
    np.testing.assert_allclose(npy(F.lp_pool2d(t(x), 2, (2, 3))).reshape(ref.shape), ref,
                               rtol=1e-12)
    assert repr(nn.LPPool1d(2, 3)) == "LPPool1d(norm_type=2, kernel_size=3, stride=None, " \
        "ceil_mode=False)"
    assert repr(nn.LPPool2d(1.5, (2, 3), stride=2)) == (
        "LPPool2d(norm_type=1.5, kernel_size=(2, 3), stride=2, ceil_mode=False)")


@pytest.mark.parametrize("p", [2.0, 3.0])
def test_lp_pool_gradcheck(p):
    x = t(RNG.random((1, 2, 5, 6)) + 0.5, grad=True)
    assert gradcheck(lambda a: F.lp_pool2d(a, p, 2, stride=(1, 2)), (x,))
    y = t(RNG.random((2, 3, 7)) + 0.5, grad=True)
    assert gradcheck(lambda a: F.lp_pool1d(a, p, 3, stride=2, ceil_mode=True), (y,))


# ---------------------------------------------------------------------------- bicubic
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("args", [dict(size=(7, 9)), dict(size=(3, 2)), dict(size=(5, 1)),
                                  dict(scale_factor=2), dict(scale_factor=(1.5, 0.7)),
                                  dict(size=(5, 6))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bicubic(align, args, dtype):
    x = RNG.standard_normal((2, 3, 5, 6)).astype(dtype)
    if "size" in args:
        osz, scales = args["size"], (None, None)
    else:
        sf = trip(args["scale_factor"])[:2]
        osz = tuple(int(math.floor(n * f)) for n, f in zip((5, 6), sf))
        scales = sf
    ref = bicubic_ref(x.astype(np.float64), osz, align, scales)
    out = F.interpolate(noncontig(x, dtype), mode="bicubic", align_corners=align, **args)
    assert out.dtype == t(x, dtype).dtype and list(out.shape) == [2, 3, *osz]
    np.testing.assert_allclose(npy(out), ref, **tol(dtype))
    m = nn.Upsample(mode="bicubic", align_corners=align, **args)
    np.testing.assert_allclose(npy(m(t(x, dtype))), ref, **tol(dtype))


def test_bicubic_recompute_scale_and_identity():
    x = RNG.standard_normal((1, 2, 4, 5))
    out = F.interpolate(t(x), scale_factor=1.7, mode="bicubic", recompute_scale_factor=True)
    np.testing.assert_allclose(npy(out), bicubic_ref(x, (6, 8), False), rtol=1e-10,
                               atol=1e-10)
    np.testing.assert_allclose(npy(F.interpolate(t(x), size=(4, 5), mode="bicubic")), x,
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("align", [False, True])
def test_bicubic_gradcheck(align):
    x = t(RNG.standard_normal((1, 2, 4, 3)), grad=True)
    assert gradcheck(lambda a: F.interpolate(a, size=(6, 2), mode="bicubic",
                                             align_corners=align), (x,))


def test_interpolate_mode_dim_errors():
    with pytest.raises(NotImplementedError):
        F.interpolate(t(np.ones((1, 1, 4))), size=6, mode="bicubic")
    with pytest.raises(ValueError, match="Anti-alias"):
        F.interpolate(t(np.ones((1, 1, 4))), size=6, mode="bicubic", antialias=True)
    with pytest.raises(ValueError, match="same number of spatial"):
        F.interpolate(t(np.ones((1, 1, 4, 4))), size=(6, 6, 6), mode="bicubic")


# ---------------------------------------------------------------------------- trilinear
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("osz", [(5, 7, 3), (2, 2, 9)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_trilinear(align, osz, dtype):
    x = RNG.standard_normal((2, 2, 3, 4, 5)).astype(dtype)
    ref = trilinear_ref(x.astype(np.float64), osz, align)
    out = F.interpolate(noncontig(x, dtype), size=osz, mode="trilinear", align_corners=align)
    np.testing.assert_allclose(npy(out), ref, **tol(dtype))


def test_trilinear_gradcheck():
    x = t(RNG.standard_normal((1, 1, 3, 2, 3)), grad=True)
    assert gradcheck(lambda a: F.interpolate(a, size=(4, 3, 2), mode="trilinear"), (x,))


# ---------------------------------------------------------------------------- vs PyTorch
def test_against_torch():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 4, 5, 6, 7))
    w = RNG.standard_normal((6, 2, 2, 3, 2))
    b = RNG.standard_normal(6)
    tx, tw, tb = (torch.from_numpy(a) for a in (x, w, b))
    kw = dict(stride=(1, 2, 1), padding=(1, 0, 1), dilation=(2, 1, 1), groups=2)
    np.testing.assert_allclose(npy(F.conv3d(t(x), t(w), t(b), **kw)),
                               torch.nn.functional.conv3d(tx, tw, tb, **kw).numpy(),
                               rtol=1e-10, atol=1e-10)
    for fn, kw in [("max_pool3d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
                   ("avg_pool3d", dict(kernel_size=(2, 3, 3), stride=2, padding=1,
                                       ceil_mode=True, count_include_pad=False))]:
        np.testing.assert_allclose(npy(getattr(F, fn)(t(x), **kw)),
                                   getattr(torch.nn.functional, fn)(tx, **kw).numpy(),
                                   rtol=1e-10, atol=1e-10)
    x4 = RNG.standard_normal((2, 3, 5, 6))
    for align in (False, True):
        np.testing.assert_allclose(
            npy(F.interpolate(t(x4), scale_factor=(1.5, 0.7), mode="bicubic",
                              align_corners=align)),
            torch.nn.functional.interpolate(torch.from_numpy(x4), scale_factor=(1.5, 0.7),
                                            mode="bicubic", align_corners=align).numpy(),
            rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(npy(F.lp_pool2d(t(x4), 2.0, 2)),
                               torch.nn.functional.lp_pool2d(torch.from_numpy(x4), 2.0, 2)
                               .numpy(), rtol=1e-10, atol=1e-10)


def test_pools_empty_batch():
    x = t(np.zeros((0, 3, 4, 5, 6)))
    assert list(F.max_pool3d(x, 2).shape) == [0, 3, 2, 2, 3]
    assert list(F.max_pool3d(x, 2, return_indices=True)[1].shape) == [0, 3, 2, 2, 3]
    assert list(F.avg_pool3d(x, 2, padding=1).shape) == [0, 3, 3, 3, 4]
    assert list(F.adaptive_avg_pool3d(x, (1, 2, 3)).shape) == [0, 3, 1, 2, 3]
    assert list(F.interpolate(t(np.zeros((0, 2, 4, 4))), size=(5, 3), mode="bicubic")
                .shape) == [0, 2, 5, 3]
