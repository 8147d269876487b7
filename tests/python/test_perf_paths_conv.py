"""The direct convolution kernels (phase-split padded input, register tiles): forward and all
three gradients vs a NumPy reference on shapes that exercise every tiling path (row widths that
are / are not multiples of the vector width, channel counts off the register-tile size, stride,
dilation, groups, 1x1 kernels, batch 1 and odd batches, non-contiguous inputs, the expanded
gradient of ``.sum()``), in float32 and float64, plus float64 gradchecks."""


import numpy as np
import pytest

import ferrotorch as ft
import ferrotorch.nn.functional as F
from ferrotorch import nn
from ferrotorch.autograd import gradcheck

from conv_reference import ref_conv_with_grads


@pytest.fixture
def rng():
    return np.random.default_rng(4321)


def tol(dtype):
    return dict(rtol=2e-4, atol=2e-4) if dtype == np.float32 else dict(rtol=1e-9, atol=1e-9)


def run_case(rng, dtype, n, c, o, size, k, sum_grad=False, bias=True, **kw):
    nd = len(size)
    x = rng.standard_normal((n, c, *size))
    w = rng.standard_normal((o, c // kw.get("groups", 1), *k)) * 0.3
    b = rng.standard_normal(o) if bias else None
    fx = ft.from_numpy(x.astype(dtype)).requires_grad_()
    fw = ft.from_numpy(w.astype(dtype)).requires_grad_()
    fb = ft.from_numpy(b.astype(dtype)).requires_grad_() if bias else None
    conv = F.conv1d if nd == 1 else F.conv2d
    y = conv(fx, fw, fb, **kw)
    if sum_grad:
        gy = np.ones(y.shape)
        y.sum().backward()
    else:
        gy = rng.standard_normal(y.shape)
        y.backward(ft.from_numpy(gy.astype(dtype)))
    want, gx, gw, gb = ref_conv_with_grads(x.astype(dtype), w.astype(dtype), b, gy, **kw)
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(y.detach().numpy(), want, **tol(dtype))
    np.testing.assert_allclose(fx.grad.numpy() / scale, gx / scale, **tol(dtype))
    gscale = max(1.0, float(np.abs(gw).max()))
    np.testing.assert_allclose(fw.grad.numpy() / gscale, gw / gscale, **tol(dtype))
    if bias:
        np.testing.assert_allclose(fb.grad.numpy() / gscale, gb / gscale, **tol(dtype))


CASES = [
    # the benchmark shape, scaled down in batch: rows a multiple of 16 (per-row tiles)
    dict(n=3, c=3, o=32, size=(32, 32), k=(3, 3), padding=1),
    # batch 1, odd widths (flattened tiles, padded gradient copy), channels off the tile size
    dict(n=1, c=5, o=7, size=(9, 11), k=(3, 3), padding=1),
    dict(n=5, c=2, o=6, size=(7, 7), k=(3, 3)),
    # stride 2, dilation, asymmetric kernel, 'same' padding
    dict(n=2, c=3, o=5, size=(13, 10), k=(3, 3), stride=2, padding=1),
    dict(n=2, c=4, o=9, size=(12, 17), k=(3, 2), stride=(2, 3), padding=(1, 0), dilation=(1, 2)),
    dict(n=3, c=2, o=4, size=(10, 8), k=(3, 3), padding="same", dilation=2),
    dict(n=2, c=3, o=4, size=(8, 9), k=(4, 2), padding="same"),
    # groups, depthwise
    dict(n=3, c=6, o=9, size=(8, 16), k=(3, 3), padding=1, groups=3),
    dict(n=2, c=8, o=8, size=(6, 7), k=(3, 3), padding=1, groups=8),
    # 1x1 kernels (gemm path), 1x1 with stride (direct path)
    dict(n=3, c=5, o=6, size=(6, 7), k=(1, 1)),
    dict(n=3, c=5, o=6, size=(7, 8), k=(1, 1), stride=2),
    # padding larger than the kernel extent (transposed direction falls back to col2im)
    dict(n=2, c=2, o=3, size=(5, 6), k=(2, 2), padding=2),
    # many channels (several register blocks, kernel rows not a multiple of the row block)
    dict(n=2, c=17, o=13, size=(5, 24), k=(3, 3), padding=1),
    # 1-d
    dict(n=3, c=4, o=5, size=(37,), k=(5,), padding=2),
    dict(n=2, c=4, o=6, size=(64,), k=(3,), stride=2, dilation=2, groups=2),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_forward_and_grads_vs_numpy(rng, dtype, case):
    run_case(rng, dtype, **case)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sum_backward_expanded_gradient(rng, dtype):
    run_case(rng, dtype, n=4, c=3, o=8, size=(16, 16), k=(3, 3), padding=1, sum_grad=True)
    run_case(rng, dtype, n=3, c=3, o=5, size=(7, 9), k=(3, 3), stride=2, sum_grad=True,
             bias=False)


def test_non_contiguous_input(rng):
    x = rng.standard_normal((6, 9, 3, 20))
    w = rng.standard_normal((8, 3, 3, 3))
    # permuted + stepped view: (N, C, H, W) = (3, 3, 9, 10) non-contiguous
    fx = ft.from_numpy(x).permute(2, 0, 1, 3)[:, ::2, :, ::2]
    xv = x.transpose(2, 0, 1, 3)[:, ::2, :, ::2]
    fw = ft.from_numpy(w).transpose(2, 3)
    wv = w.transpose(0, 1, 3, 2)
    y = F.conv2d(fx, fw, padding=1)
    want, *_ = ref_conv_with_grads(xv, wv, None, None, padding=1)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-10, atol=1e-10)


def test_conv_transpose_unit_stride_direct(rng):
    # conv_transpose2d with unit stride runs the direct kernel with the flipped weight; it is
    # the adjoint of conv2d: <conv(x), y> == <x, conv_transpose(y)>.
    for pad, dil, groups in [(0, 1, 1), (1, 1, 2), (2, 2, 1)]:
        x = rng.standard_normal((2, 4, 9, 13))
        w = rng.standard_normal((6, 4 // groups, 3, 3))
        y = F.conv2d(ft.from_numpy(x), ft.from_numpy(w), padding=pad, dilation=dil,
                     groups=groups)
        yv = rng.standard_normal(y.shape)
        xt = F.conv_transpose2d(ft.from_numpy(yv), ft.from_numpy(w), padding=pad,
                                dilation=dil, groups=groups)
        assert tuple(xt.shape) == x.shape
        np.testing.assert_allclose(float((y.numpy() * yv).sum()), float((x * xt.numpy()).sum()),
                                   rtol=1e-10)


@pytest.mark.parametrize("kw", [
    dict(padding=1),
    dict(stride=2, padding=1),
    dict(padding="same", dilation=2),
    dict(groups=2, padding=1),
    dict(stride=(2, 1), dilation=(1, 2)),
])
def test_gradcheck_direct_paths(rng, kw):
    groups = kw.get("groups", 1)
    x = ft.from_numpy(rng.standard_normal((3, 2 * groups, 6, 7))).requires_grad_()
    w = ft.from_numpy(rng.standard_normal((5 * groups, 2, 3, 3))).requires_grad_()
    b = ft.from_numpy(rng.standard_normal(5 * groups)).requires_grad_()
    assert gradcheck(lambda a, c, e: F.conv2d(a, c, e, **kw), (x, w, b))


def test_module_train_step_matches_reference(rng):
    m = nn.Conv2d(3, 32, 3, padding=1)
    x = rng.standard_normal((2, 3, 16, 16)).astype(np.float32)
    fx = ft.from_numpy(x).requires_grad_()
    m(fx).sum().backward()
    w = m.weight.detach().numpy()
    b = m.bias.detach().numpy()
    _, gx, gw, gb = ref_conv_with_grads(x, w, b, np.ones((2, 32, 16, 16)), padding=1)
    np.testing.assert_allclose(fx.grad.numpy(), gx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(m.weight.grad.numpy(), gw, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(m.bias.grad.numpy(), gb, rtol=1e-4, atol=1e-3)
