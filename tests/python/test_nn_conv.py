"""Convolutions (conv1d/2d, conv_transpose1d/2d, unfold/fold) and the Conv modules vs a NumPy
reference (direct sums over kernel offsets), gradchecks, module behaviour and error messages."""

import itertools
import math

import numpy as np
import pytest

import ferrotorch as ft
import ferrotorch.nn.functional as F
from ferrotorch import nn
from ferrotorch.autograd import gradcheck

from conv_reference import _tup, ref_conv


def t(a, dtype=np.float64, grad=False):
    x = ft.from_numpy(np.ascontiguousarray(np.asarray(a, dtype=dtype)))
    return x.requires_grad_() if grad else x


def npy(x):
    return x.detach().numpy()


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


# ---------------------------------------------------------------------------- references
def ref_conv_t(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Direct transposed convolution: scatter every input element times the kernel."""
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    nd = x.ndim - 2
    k = w.shape[2:]
    s, p, op, d = (_tup(v, nd) for v in (stride, padding, output_padding, dilation))
    n, cin = x.shape[:2]
    cog = w.shape[1]
    cig = cin // groups
    insz = x.shape[2:]
    full = [(insz[i] - 1) * s[i] + d[i] * (k[i] - 1) + 1 + op[i] for i in range(nd)]
    out = np.zeros((n, cog * groups, *full))
    for idx in itertools.product(*[range(kk) for kk in k]):
        sl = tuple(slice(idx[i] * d[i], idx[i] * d[i] + s[i] * (insz[i] - 1) + 1, s[i])
                   for i in range(nd))
        for g in range(groups):
            wg = w[(slice(g * cig, (g + 1) * cig), slice(None)) + idx]
            contrib = np.einsum("nc...,co->no...", x[:, g * cig:(g + 1) * cig], wg)
            out[(slice(None), slice(g * cog, (g + 1) * cog)) + sl] += contrib
    crop = tuple(slice(p[i], full[i] - p[i]) for i in range(nd))
    out = out[(slice(None), slice(None)) + crop]
    if b is not None:
        out = out + np.asarray(b, np.float64).reshape((1, -1) + (1,) * nd)
    return out


def tol(dtype):
    return dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)


def random_conv_case(rng, nd, transposed):
    groups = int(rng.choice([1, 1, 2, 3]))
    cg = int(rng.integers(1, 4))
    og = int(rng.integers(1, 4))
    n = int(rng.integers(1, 4))
    k = tuple(int(v) for v in rng.integers(1, 4, size=nd))
    s = tuple(int(v) for v in rng.integers(1, 4, size=nd))
    d = tuple(int(v) for v in rng.integers(1, 3, size=nd))
    p = tuple(int(rng.integers(0, 3)) for _ in range(nd))
    if transposed:
        size = tuple(int(v) for v in rng.integers(1, 6, size=nd))
        p = tuple(min(p[i], (d[i] * (k[i] - 1)) // 2) for i in range(nd))
        op = tuple(int(rng.integers(0, max(s[i], d[i]))) for i in range(nd))
        x = rng.standard_normal((n, cg * groups, *size))
        w = rng.standard_normal((cg * groups, og, *k))
        b = rng.standard_normal(og * groups) if rng.random() < 0.6 else None
        return x, w, b, dict(stride=s, padding=p, output_padding=op, groups=groups, dilation=d)
    size = tuple(int(d[i] * (k[i] - 1) + 1 + rng.integers(0, 6)) for i in range(nd))
    x = rng.standard_normal((n, cg * groups, *size))
    w = rng.standard_normal((og * groups, cg, *k))
    b = rng.standard_normal(og * groups) if rng.random() < 0.6 else None
    return x, w, b, dict(stride=s, padding=p, dilation=d, groups=groups)


CONV = {1: F.conv1d, 2: F.conv2d}
CONV_T = {1: F.conv_transpose1d, 2: F.conv_transpose2d}


# ---------------------------------------------------------------------------- forward values
@pytest.mark.parametrize("nd", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv_random_combos(rng, nd, dtype):
    for _ in range(25):
        x, w, b, kw = random_conv_case(rng, nd, transposed=False)
        y = CONV[nd](t(x, dtype), t(w, dtype), None if b is None else t(b, dtype), **kw)
        assert y.dtype == (ft.float32 if dtype == np.float32 else ft.float64)
        np.testing.assert_allclose(npy(y), ref_conv(x.astype(dtype), w.astype(dtype), b, **kw),
                                   **tol(dtype))


@pytest.mark.parametrize("nd", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv_transpose_random_combos(rng, nd, dtype):
    for _ in range(25):
        x, w, b, kw = random_conv_case(rng, nd, transposed=True)
        y = CONV_T[nd](t(x, dtype), t(w, dtype), None if b is None else t(b, dtype), **kw)
        np.testing.assert_allclose(npy(y), ref_conv_t(x.astype(dtype), w.astype(dtype), b, **kw),
                                   **tol(dtype))


def test_conv2d_known_values_and_torch_names():
    x = ft.ones(1, 1, 3, 3)
    y = ft.conv2d(x, ft.ones(1, 1, 2, 2))
    assert y.tolist() == [[[[4.0, 4.0], [4.0, 4.0]]]]
    y = F.conv1d(t([[[1.0, 2.0, 3.0, 4.0]]]), t([[[1.0, -1.0]]]), padding=1)
    np.testing.assert_array_equal(npy(y), [[[-1.0, -1.0, -1.0, -1.0, 4.0]]])
    assert hasattr(ft, "conv_transpose2d") and hasattr(ft, "conv1d")


def test_pointwise_and_depthwise(rng):
    x = rng.standard_normal((2, 6, 5, 4))
    w1 = rng.standard_normal((4, 6, 1, 1))
    np.testing.assert_allclose(npy(F.conv2d(t(x), t(w1))), ref_conv(x, w1), rtol=1e-10)
    wd = rng.standard_normal((12, 1, 3, 3))
    np.testing.assert_allclose(npy(F.conv2d(t(x), t(wd), groups=6, padding=1)),
                               ref_conv(x, wd, groups=6, padding=1), rtol=1e-10, atol=1e-12)
    wt = rng.standard_normal((6, 3, 1, 1))
    np.testing.assert_allclose(npy(F.conv_transpose2d(t(x), t(wt))), ref_conv_t(x, wt),
                               rtol=1e-10)


def test_non_contiguous_input_and_weight(rng):
    x = rng.standard_normal((3, 4, 9, 7))
    w = rng.standard_normal((5, 4, 3, 2))
    # Input as a permuted view, weight as a stepped slice of a bigger tensor.
    xt = t(x.transpose(0, 2, 3, 1)).permute(0, 3, 1, 2)
    assert not xt.is_contiguous()
    big = np.zeros((10, 4, 3, 2))
    big[::2] = w
    wt = t(big)[::2]
    assert not wt.is_contiguous()
    b = rng.standard_normal(10)
    bt = t(b)[::2]
    y = F.conv2d(xt, wt, bt, stride=(2, 1), padding=(1, 0))
    np.testing.assert_allclose(npy(y), ref_conv(x, w, b[::2], stride=(2, 1), padding=(1, 0)),
                               rtol=1e-10, atol=1e-12)
    x1 = rng.standard_normal((7, 2, 3))
    x1t = t(x1).permute(1, 2, 0)  # (2, 3, 7) non-contiguous
    w1 = rng.standard_normal((4, 3, 2))
    w1t = t(w1.transpose(2, 1, 0).copy()).permute(2, 1, 0)
    y = F.conv1d(x1t, w1t, dilation=2)
    np.testing.assert_allclose(npy(y), ref_conv(x1.transpose(1, 2, 0), w1, dilation=2),
                               rtol=1e-10)
    yt = F.conv_transpose1d(x1t, t(rng.standard_normal((6, 3, 2)))[::2], stride=2)
    assert tuple(yt.shape) == (2, 3, 14)


def test_unbatched(rng):
    x = rng.standard_normal((3, 6, 5))
    w = rng.standard_normal((4, 3, 3, 3))
    y = F.conv2d(t(x), t(w), padding=1)
    assert tuple(y.shape) == (4, 6, 5)
    np.testing.assert_allclose(npy(y), ref_conv(x[None], w, padding=1)[0], rtol=1e-10)
    x1 = rng.standard_normal((3, 8))
    w1 = rng.standard_normal((2, 3, 3))
    np.testing.assert_allclose(npy(F.conv1d(t(x1), t(w1), stride=2)),
                               ref_conv(x1[None], w1, stride=2)[0], rtol=1e-10)
    wt = rng.standard_normal((3, 2, 2, 2))
    yt = F.conv_transpose2d(t(x), t(wt), stride=2)
    np.testing.assert_allclose(npy(yt), ref_conv_t(x[None], wt, stride=2)[0], rtol=1e-10)
    # gradients keep the unbatched shapes
    xg, wg = t(x, grad=True), t(w, grad=True)
    F.conv2d(xg, wg).sum().backward()
    assert tuple(xg.grad.shape) == (3, 6, 5) and tuple(wg.grad.shape) == (4, 3, 3, 3)


def test_batch_zero():
    x = ft.zeros(0, 3, 5, 5, requires_grad=True)
    w = ft.ones(4, 3, 3, 3, requires_grad=True)
    b = ft.ones(4, requires_grad=True)
    y = F.conv2d(x, w, b, padding=1)
    assert tuple(y.shape) == (0, 4, 5, 5)
    y.sum().backward()
    assert tuple(x.grad.shape) == (0, 3, 5, 5)
    np.testing.assert_array_equal(npy(w.grad), np.zeros((4, 3, 3, 3)))
    np.testing.assert_array_equal(npy(b.grad), np.zeros(4))
    yt = F.conv_transpose1d(ft.zeros(0, 4, 6), ft.ones(4, 2, 3), stride=2)
    assert tuple(yt.shape) == (0, 2, 13)


@pytest.mark.parametrize("nd", [1, 2])
def test_padding_same_and_valid(rng, nd):
    for k, d in [(3, 1), (4, 1), (2, 3), (5, 2), (4, 2)]:
        x = rng.standard_normal((2, 3) + (9,) * nd)
        w = rng.standard_normal((2, 3) + (k,) * nd)
        y = CONV[nd](t(x), t(w), padding="same", dilation=d)
        assert tuple(y.shape) == x.shape[:1] + (2,) + x.shape[2:]
        np.testing.assert_allclose(npy(y), ref_conv(x, w, padding="same", dilation=d),
                                   rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(npy(CONV[nd](t(x), t(w), padding="valid", dilation=d)),
                                   ref_conv(x, w, dilation=d), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", [ft.float16, ft.bfloat16])
def test_half_precision_computed_in_float32(rng, dtype):
    x = rng.standard_normal((2, 4, 6, 6)).astype(np.float32)
    w = rng.standard_normal((3, 4, 3, 3)).astype(np.float32)
    xh = t(x, np.float32).to(dtype)
    wh = t(w, np.float32).to(dtype)
    y = F.conv2d(xh, wh, padding=1)
    assert y.dtype == dtype
    ref = ref_conv(npy(xh.to(ft.float32)), npy(wh.to(ft.float32)), padding=1)
    np.testing.assert_allclose(npy(y.to(ft.float32)), ref, rtol=2e-2, atol=5e-2)
    yt = F.conv_transpose2d(xh, t(rng.standard_normal((4, 2, 2, 2)), np.float32).to(dtype))
    assert yt.dtype == dtype


def test_larger_image_parallel_path(rng):
    # Enough work to release the GIL and run images in parallel / threaded gemm.
    x = rng.standard_normal((5, 3, 20, 20)).astype(np.float32)
    w = rng.standard_normal((8, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    np.testing.assert_allclose(npy(F.conv2d(t(x, np.float32), t(w, np.float32),
                                            t(b, np.float32), padding=1)),
                               ref_conv(x, w, b, padding=1), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(npy(F.conv2d(t(x[:1], np.float32), t(w, np.float32),
                                            t(b, np.float32), stride=2)),
                               ref_conv(x[:1], w, b, stride=2), rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------------- gradients
GRAD_CASES_2D = [
    dict(),
    dict(stride=2, padding=1),
    dict(stride=(1, 2), padding=(0, 1), dilation=(2, 1)),
    dict(groups=2, padding=1),
    dict(padding="same", dilation=2),
]


@pytest.mark.parametrize("kw", GRAD_CASES_2D)
def test_gradcheck_conv2d(rng, kw):
    groups = kw.get("groups", 1)
    x = t(rng.standard_normal((2, 2 * groups, 5, 5)), grad=True)
    w = t(rng.standard_normal((2 * groups, 2, 3, 2)), grad=True)
    b = t(rng.standard_normal(2 * groups), grad=True)
    assert gradcheck(lambda a, c, e: F.conv2d(a, c, e, **kw), (x, w, b))


@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1, dilation=2), dict(groups=3)])
def test_gradcheck_conv1d(rng, kw):
    groups = kw.get("groups", 1)
    x = t(rng.standard_normal((2, 2 * groups, 7)), grad=True)
    w = t(rng.standard_normal((groups * 2, 2, 3)), grad=True)
    b = t(rng.standard_normal(groups * 2), grad=True)
    assert gradcheck(lambda a, c, e: F.conv1d(a, c, e, **kw), (x, w, b))
    assert gradcheck(lambda a, c: F.conv1d(a, c, **kw), (x, w))


@pytest.mark.parametrize("kw", [
    dict(),
    dict(stride=2, padding=1, output_padding=1),
    dict(stride=(2, 1), dilation=(1, 2), output_padding=(1, 1)),
    dict(groups=2, stride=2),
])
def test_gradcheck_conv_transpose2d(rng, kw):
    groups = kw.get("groups", 1)
    x = t(rng.standard_normal((2, 2 * groups, 3, 4)), grad=True)
    w = t(rng.standard_normal((2 * groups, 2, 3, 2)), grad=True)
    b = t(rng.standard_normal(2 * groups), grad=True)
    assert gradcheck(lambda a, c, e: F.conv_transpose2d(a, c, e, **kw), (x, w, b))


@pytest.mark.parametrize("kw", [dict(), dict(stride=3, padding=1, output_padding=2)])
def test_gradcheck_conv_transpose1d(rng, kw):
    x = t(rng.standard_normal((2, 3, 4)), grad=True)
    w = t(rng.standard_normal((3, 2, 3)), grad=True)
    b = t(rng.standard_normal(2), grad=True)
    assert gradcheck(lambda a, c, e: F.conv_transpose1d(a, c, e, **kw), (x, w, b))


def test_gradcheck_non_contiguous_leaves(rng):
    xb = t(rng.standard_normal((5, 2, 3, 6)), grad=True)
    wb = t(rng.standard_normal((3, 4, 3, 3)), grad=True)
    # transposed / permuted views of leaves
    assert gradcheck(lambda a, c: F.conv2d(a.permute(1, 2, 3, 0)[:, :, ::2], c.transpose(0, 1),
                                           padding=1), (xb, wb))


def test_grad_fn_and_partial_requires_grad(rng):
    x = t(rng.standard_normal((2, 3, 5, 5)))
    w = t(rng.standard_normal((4, 3, 3, 3)), grad=True)
    y = F.conv2d(x, w)
    assert y.grad_fn.name() == "ConvolutionBackward0"
    y.sum().backward()
    assert x.grad is None
    # d(sum)/dw[o, c, i, j] = sum over n and output positions of the input patch
    want = np.stack([np.array([[[x_np[:, c, i:i + 3, j:j + 3].sum() for j in range(3)]
                                for i in range(3)] for c in range(3)])
                     for x_np in [npy(x)]] * 4)
    np.testing.assert_allclose(npy(w.grad), want, rtol=1e-10)
    with ft.no_grad():
        assert F.conv2d(x, w).grad_fn is None
    # float32 training step works end to end
    m = nn.Conv2d(3, 4, 3, padding=1)
    m(ft.randn(2, 3, 6, 6)).sum().backward()
    assert tuple(m.weight.grad.shape) == (4, 3, 3, 3) and tuple(m.bias.grad.shape) == (4,)
    np.testing.assert_allclose(npy(m.bias.grad), np.full(4, 72.0), rtol=1e-5)


def test_inplace_modified_saved_input_errors(rng):
    x = t(rng.standard_normal((1, 2, 4, 4)), grad=True)
    h = x * 1.0
    w = t(rng.standard_normal((1, 2, 2, 2)), grad=True)
    y = F.conv2d(h, w)
    h.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


# ---------------------------------------------------------------------------- unfold / fold
def ref_unfold(x, k, d=(1, 1), p=(0, 0), s=(1, 1)):
    n, c = x.shape[:2]
    xp = np.pad(x, [(0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])])
    oh = (xp.shape[2] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (xp.shape[3] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.zeros((n, c, k[0], k[1], oh * ow))
    for i in range(k[0]):
        for j in range(k[1]):
            patch = xp[:, :, i * d[0]:i * d[0] + s[0] * (oh - 1) + 1:s[0],
                       j * d[1]:j * d[1] + s[1] * (ow - 1) + 1:s[1]]
            out[:, :, i, j] = patch.reshape(n, c, -1)
    return out.reshape(n, c * k[0] * k[1], oh * ow)


def test_unfold_fold(rng):
    x = rng.standard_normal((2, 3, 7, 6))
    for kw in [dict(kernel_size=2), dict(kernel_size=(3, 2), dilation=(1, 2), padding=1,
                                          stride=(2, 1))]:
        k = _tup(kw["kernel_size"], 2)
        ref = ref_unfold(x, k, _tup(kw.get("dilation", 1), 2), _tup(kw.get("padding", 0), 2),
                         _tup(kw.get("stride", 1), 2))
        u = F.unfold(t(x), **kw)
        np.testing.assert_allclose(npy(u), ref, rtol=1e-12)
        np.testing.assert_allclose(npy(nn.Unfold(**kw)(t(x))), ref, rtol=1e-12)
        # fold is the adjoint of unfold: <unfold(x), c> == <x, fold(c)>
        cols = rng.standard_normal(ref.shape)
        folded = F.fold(t(cols), output_size=(7, 6), **kw)
        assert tuple(folded.shape) == (2, 3, 7, 6)
        np.testing.assert_allclose((ref * cols).sum(), (x * npy(folded)).sum(), rtol=1e-10)
        np.testing.assert_allclose(npy(nn.Fold((7, 6), **kw)(t(cols))), npy(folded))
    # non-overlapping blocks: fold(unfold(x)) == x
    np.testing.assert_allclose(
        npy(F.fold(F.unfold(t(x[:, :, :6]), 2, stride=2), (6, 6), 2, stride=2)), x[:, :, :6])
    # unbatched
    assert tuple(F.unfold(t(x[0]), 3).shape) == (27, 20)
    assert tuple(F.fold(t(rng.standard_normal((27, 20))), (7, 6), 3).shape) == (3, 7, 6)
    xg = t(rng.standard_normal((1, 2, 4, 4)), grad=True)
    assert gradcheck(lambda a: F.unfold(a, 2, padding=1, stride=2), (xg,))
    with pytest.raises(RuntimeError, match="sliding blocks"):
        F.fold(t(rng.standard_normal((1, 12, 5))), (4, 4), 2)


# ---------------------------------------------------------------------------- modules
def test_conv2d_module_shapes_init_repr_state_dict():
    m = nn.Conv2d(3, 32, 3, padding=1)
    assert repr(m) == "Conv2d(3, 32, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))"
    assert tuple(m.weight.shape) == (32, 3, 3, 3) and tuple(m.bias.shape) == (32,)
    assert list(m.state_dict().keys()) == ["weight", "bias"]
    bound = 1 / math.sqrt(27)
    assert np.abs(npy(m.weight)).max() <= bound + 1e-7
    assert np.abs(npy(m.bias)).max() <= bound + 1e-7
    assert np.abs(npy(m.weight)).max() > 0.5 * bound  # not all zeros / tiny
    y = m(ft.randn(16, 3, 32, 32))
    assert tuple(y.shape) == (16, 32, 32, 32)
    x = ft.randn(2, 3, 8, 8)
    np.testing.assert_allclose(npy(m(x)), ref_conv(npy(x), npy(m.weight), npy(m.bias),
                                                   padding=1), rtol=1e-4, atol=1e-5)
    m2 = nn.Conv2d(4, 8, (3, 5), stride=(2, 1), padding=(1, 2), dilation=2, groups=2,
                   bias=False)
    assert repr(m2) == ("Conv2d(4, 8, kernel_size=(3, 5), stride=(2, 1), padding=(1, 2), "
                        "dilation=(2, 2), groups=2, bias=False)")
    assert list(m2.state_dict().keys()) == ["weight"] and m2.bias is None
    assert tuple(m2.weight.shape) == (8, 2, 3, 5)
    assert repr(nn.Conv2d(3, 4, 2)) == "Conv2d(3, 4, kernel_size=(2, 2), stride=(1, 1))"
    assert (repr(nn.Conv2d(3, 4, 3, padding="same"))
            == "Conv2d(3, 4, kernel_size=(3, 3), stride=(1, 1), padding=same)")
    m64 = nn.Conv2d(2, 2, 1, dtype=ft.float64)
    assert m64.weight.dtype == ft.float64


def test_conv1d_module():
    m = nn.Conv1d(16, 33, 3, stride=2)
    assert repr(m) == "Conv1d(16, 33, kernel_size=(3,), stride=(2,))"
    assert tuple(m(ft.randn(20, 16, 50)).shape) == (20, 33, 24)
    assert tuple(m(ft.randn(16, 50)).shape) == (33, 24)
    assert np.abs(npy(m.weight)).max() <= 1 / math.sqrt(48) + 1e-7
    for k, d in [(4, 1), (4, 3), (3, 2)]:
        ms = nn.Conv1d(2, 3, k, padding="same", dilation=d)
        x = ft.randn(1, 2, 10)
        y = ms(x)
        assert tuple(y.shape) == (1, 3, 10)
        np.testing.assert_allclose(npy(y), ref_conv(npy(x), npy(ms.weight), npy(ms.bias),
                                                    padding="same", dilation=d),
                                   rtol=1e-4, atol=1e-5)


def test_padding_same_module_even_kernel_2d():
    m = nn.Conv2d(2, 3, (4, 2), padding="same", dilation=(1, 3))
    x = ft.randn(2, 2, 7, 8)
    y = m(x)
    assert tuple(y.shape) == (2, 3, 7, 8)
    np.testing.assert_allclose(npy(y), ref_conv(npy(x), npy(m.weight), npy(m.bias),
                                                padding="same", dilation=(1, 3)),
                               rtol=1e-4, atol=1e-5)


def test_conv_transpose_modules():
    m = nn.ConvTranspose2d(16, 8, 3, stride=2, padding=1)
    assert repr(m) == "ConvTranspose2d(16, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))"
    assert tuple(m.weight.shape) == (16, 8, 3, 3) and tuple(m.bias.shape) == (8,)
    bound = 1 / math.sqrt(8 * 9)  # fan_in from weight.size(1)
    assert np.abs(npy(m.weight)).max() <= bound + 1e-7
    x = ft.randn(1, 16, 12, 12)
    assert tuple(m(x).shape) == (1, 8, 23, 23)
    assert tuple(m(x, output_size=[1, 8, 24, 24]).shape) == (1, 8, 24, 24)
    assert tuple(m(x, output_size=(24, 24)).shape) == (1, 8, 24, 24)
    y = m(x, output_size=(24, 24))
    np.testing.assert_allclose(npy(y), ref_conv_t(npy(x), npy(m.weight), npy(m.bias), 2, 1, 1),
                               rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="requested an output size of"):
        m(x, output_size=(30, 30))
    m1 = nn.ConvTranspose1d(4, 6, 3, stride=2, output_padding=1, groups=2, bias=False,
                            dilation=2)
    assert repr(m1) == ("ConvTranspose1d(4, 6, kernel_size=(3,), stride=(2,), dilation=(2,), "
                        "output_padding=(1,), groups=2, bias=False)")
    assert tuple(m1.weight.shape) == (4, 3, 3)
    assert tuple(m1(ft.randn(2, 4, 5)).shape) == (2, 6, 14)
    assert tuple(m1(ft.randn(4, 5)).shape) == (6, 14)
    assert list(nn.ConvTranspose2d(2, 3, 2).state_dict().keys()) == ["weight", "bias"]
    with pytest.raises(ValueError, match="zeros"):
        nn.ConvTranspose2d(2, 3, 2, padding_mode="reflect")


def test_module_argument_errors():
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        nn.Conv2d(4, 3, 3, groups=2)
    with pytest.raises(ValueError, match="groups must be a positive integer"):
        nn.Conv2d(4, 4, 3, groups=0)
    with pytest.raises(ValueError, match="Invalid padding string"):
        nn.Conv2d(4, 4, 3, padding="full")
    with pytest.raises(ValueError, match="strided convolutions"):
        nn.Conv2d(4, 4, 3, padding="same", stride=2)
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(4, 4, 3, padding_mode="mirror")


def test_padding_mode_via_f_pad():
    m = nn.Conv2d(2, 2, 3, padding=1, padding_mode="circular")
    assert repr(m).endswith("padding=(1, 1), padding_mode=circular)")
    x = ft.randn(1, 2, 5, 5)
    try:
        y = m(x)
    except NotImplementedError as e:  # F.pad without that mode on this branch
        assert "circular" in str(e)
    else:
        xn = npy(x)
        xp = np.pad(xn, [(0, 0), (0, 0), (1, 1), (1, 1)], mode="wrap")
        np.testing.assert_allclose(npy(y), ref_conv(xp, npy(m.weight), npy(m.bias)),
                                   rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------- errors
def test_error_messages():
    x = ft.zeros(16, 4, 32, 32)
    w = ft.zeros(32, 3, 3, 3)
    with pytest.raises(RuntimeError) as e:
        F.conv2d(x, w)
    assert str(e.value) == ("Given groups=1, weight of size [32, 3, 3, 3], expected "
                            "input[16, 4, 32, 32] to have 3 channels, but got 4 channels "
                            "instead")
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input "
                                           r"to conv2d, but got input of size: \[2, 3\]"):
        F.conv2d(ft.zeros(2, 3), w)
    with pytest.raises(RuntimeError, match="4-dimensional weight"):
        F.conv2d(ft.zeros(1, 3, 5, 5), ft.zeros(2, 3, 3))
    with pytest.raises(RuntimeError, match="expected bias to be 1-dimensional with 32 elements"):
        F.conv2d(ft.zeros(1, 3, 5, 5), w, ft.zeros(16))
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input"):
        F.conv2d(ft.zeros(1, 3, 2, 2), w)
    with pytest.raises(RuntimeError, match="expected weight to be divisible by 2"):
        F.conv2d(ft.zeros(1, 6, 5, 5), ft.zeros(3, 3, 3, 3), groups=2)
    with pytest.raises(RuntimeError, match="non-positive stride"):
        F.conv2d(ft.zeros(1, 3, 5, 5), w, stride=0)
    with pytest.raises(RuntimeError, match="negative padding"):
        F.conv2d(ft.zeros(1, 3, 5, 5), w, padding=-1)
    with pytest.raises(RuntimeError, match="dilation should be greater than zero"):
        F.conv1d(ft.zeros(1, 3, 5), ft.zeros(2, 3, 3), dilation=0)
    with pytest.raises(RuntimeError, match="non-positive groups"):
        F.conv1d(ft.zeros(1, 3, 5), ft.zeros(2, 3, 3), groups=0)
    with pytest.raises(RuntimeError, match="strided convolutions"):
        F.conv1d(ft.zeros(1, 3, 5), ft.zeros(2, 3, 3), padding="same", stride=2)
    with pytest.raises(RuntimeError, match="Invalid padding string"):
        F.conv1d(ft.zeros(1, 3, 5), ft.zeros(2, 3, 3), padding="full")
    with pytest.raises(RuntimeError, match="list of 2 values"):
        F.conv2d(ft.zeros(1, 3, 5, 5), w, stride=(1, 1, 1))
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        F.conv2d(ft.zeros(1, 3, 5, 5, dtype=ft.int64), ft.zeros(2, 3, 3, 3, dtype=ft.int64))
    with pytest.raises(RuntimeError, match="should be the same"):
        F.conv2d(ft.zeros(1, 3, 5, 5, dtype=ft.float64), ft.zeros(2, 3, 3, 3))
    with pytest.raises(RuntimeError, match="Given transposed=1, weight of size \\[4, 8, 3, 3\\], "
                                           "expected input\\[2, 5, 8, 8\\] to have 4 channels"):
        F.conv_transpose2d(ft.zeros(2, 5, 8, 8), ft.zeros(4, 8, 3, 3))
    with pytest.raises(RuntimeError, match="output padding must be smaller than either stride "
                                           "or dilation"):
        F.conv_transpose2d(ft.zeros(1, 4, 3, 3), ft.zeros(4, 2, 3, 3), output_padding=1)
    with pytest.raises(RuntimeError, match="Output size is too small"):
        F.conv_transpose1d(ft.zeros(1, 4, 1), ft.zeros(4, 2, 1), padding=1)
    with pytest.raises(TypeError):
        F.conv2d(ft.zeros(1, 3, 5, 5), w, stride="x")


def test_compare_with_torch(rng):
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((2, 4, 7, 6))
    w = rng.standard_normal((6, 2, 3, 2))
    b = rng.standard_normal(6)
    kw = dict(stride=(2, 1), padding=1, dilation=(1, 2), groups=2)
    want = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), torch.tensor(b), **kw)
    np.testing.assert_allclose(npy(F.conv2d(t(x), t(w), t(b), **kw)), want.numpy(), rtol=1e-10)
