"""``interpolate(..., antialias=True)`` (bilinear / bicubic / lanczos on 4-D input).

Without PyTorch: a loop-form NumPy reference of the antialiased filter (written apart from
the implementation), constant images, gradcheck and the error cases. With PyTorch
installed: values and gradients against ``torch.nn.functional.interpolate``.

PyTorch's CPU kernel (2.13) gives wrong values when the output width is 1 while the height
changes (each column of the output repeats one input value); those shapes are left out of
the comparisons with torch and checked against the reference instead.

A dim whose size does not change is copied by PyTorch's forward even when a scale factor
(``floor(n * s) == n``, ``s != 1``) would move the sample centres, but its backward then
applies the scaled weights to that dim all the same, so it is not the adjoint of its forward.
Ferrotorch's forward follows PyTorch and its gradient is the true one (the adjoint); the
gradients are compared with torch's everywhere else."""

import math

import numpy as np
import pytest

import ferrotorch as ft
import ferrotorch.nn.functional as F
from ferrotorch.autograd import gradcheck

# ----------------------------------------------------------------- the NumPy reference

_SUPPORT = {"bilinear": 1.0, "bicubic": 2.0, "lanczos": 3.0}


def _filter(mode, x):
    x = abs(x)
    if mode == "bilinear":
        return 1.0 - x if x < 1.0 else 0.0
    if mode == "bicubic":  # Keys, a = -0.5
        a = -0.5
        if x < 1.0:
            return (a + 2) * x ** 3 - (a + 3) * x ** 2 + 1
        if x < 2.0:
            return a * x ** 3 - 5 * a * x ** 2 + 8 * a * x - 4 * a
        return 0.0
    if x == 0.0:
        return 1.0
    if x < 3.0:
        return 3.0 * math.sin(math.pi * x) * math.sin(math.pi * x / 3) / (math.pi * x) ** 2
    return 0.0


def _ref_weights(n_in, n_out, mode, align_corners, scale_factor):
    """(n_out, n_in) weights, one output pixel at a time."""
    if n_in == n_out:
        return np.eye(n_in)  # an unchanged dim is not resampled, whatever the scale factor
    w = np.zeros((n_out, n_in))
    if align_corners:
        scale = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    elif scale_factor:
        scale = 1.0 / scale_factor
    else:
        scale = n_in / n_out
    stretch = max(scale, 1.0)
    support = _SUPPORT[mode] * stretch
    for i in range(n_out):
        center = scale * (i + 0.5)
        lo = max(int(math.floor(center - support + 0.5)), 0)
        hi = min(int(center + support + 0.5), n_in)
        total = 0.0
        for j in range(lo, hi):
            w[i, j] = _filter(mode, (j - center + 0.5) / stretch)
            total += w[i, j]
        if total != 0.0:
            w[i] /= total
    return w


def _reference(x, size, mode, align_corners=False, scale_factor=(None, None)):
    """Apply the weights pixel by pixel: out[..., i, k] = sum wh[i, j] ww[k, l] x[..., j, l]."""
    wh = _ref_weights(x.shape[2], size[0], mode, align_corners, scale_factor[0])
    ww = _ref_weights(x.shape[3], size[1], mode, align_corners, scale_factor[1])
    out = np.zeros(x.shape[:2] + tuple(size))
    for i in range(size[0]):
        for k in range(size[1]):
            out[:, :, i, k] = np.einsum("ncjl,j,l->nc", x, wh[i], ww[k])
    return out


def _run(x, mode, align_corners=False, **kw):
    return F.interpolate(ft.from_numpy(x), mode=mode, antialias=True,
                         align_corners=None if mode == "lanczos" else align_corners, **kw)


CASES = [
    # (input HxW, keyword arguments)
    ((9, 11), dict(size=(4, 5))),
    ((16, 7), dict(size=(5, 3))),
    ((6, 6), dict(size=(13, 9))),
    ((5, 8), dict(size=(5, 3))),
    ((12, 10), dict(scale_factor=0.37)),
    ((7, 13), dict(scale_factor=(0.6, 1.7))),
    ((8, 9), dict(scale_factor=(2.3, 0.45), recompute_scale_factor=True)),
    ((20, 3), dict(size=(3, 8))),
    ((2, 2), dict(size=(1, 1))),
    ((9, 1), dict(size=(4, 1))),
    ((8, 4), dict(scale_factor=(2.42, 1.044))),  # the width stays 4: not resampled
]


def _out_size(shape, kw):
    if "size" in kw:
        return kw["size"]
    sf = kw["scale_factor"]
    sf = sf if isinstance(sf, tuple) else (sf, sf)
    return tuple(int(math.floor(n * s)) for n, s in zip(shape, sf))


def _ref_scales(kw):
    if "size" in kw or kw.get("recompute_scale_factor"):
        return (None, None)
    sf = kw["scale_factor"]
    return sf if isinstance(sf, tuple) else (sf, sf)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "lanczos"])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("case", CASES)
def test_matches_numpy_reference(mode, align_corners, case):
    if mode == "lanczos" and align_corners:
        pytest.skip("lanczos refuses align_corners=True")
    shape, kw = case
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3) + shape)
    expected = _reference(x, _out_size(shape, kw), mode, align_corners, _ref_scales(kw))
    out = _run(x, mode, align_corners, **kw)
    assert out.dtype == ft.float64
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-12)
    out32 = _run(x.astype(np.float32), mode, align_corners, **kw)
    assert out32.dtype == ft.float32
    np.testing.assert_allclose(out32.numpy(), expected, rtol=1e-5, atol=2e-5)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "lanczos"])
@pytest.mark.parametrize("size", [(3, 4), (17, 23), (7, 2), (1, 1)])
def test_constant_image_stays_constant(mode, size):
    x = np.full((1, 2, 8, 11), 3.25)
    out = _run(x, mode, size=size).numpy()
    np.testing.assert_allclose(out, np.full((1, 2) + size, 3.25), rtol=1e-13)


def test_unchanged_dim_is_copied():
    # A dim whose size does not change is not resampled, even with a scale factor
    # (floor(5 * 1.1) = 5), as in PyTorch.
    x = np.random.default_rng(1).standard_normal((1, 1, 5, 7))
    out = _run(x, "bicubic", scale_factor=1.1).numpy()
    np.testing.assert_array_equal(out, x)
    out = _run(x, "bilinear", scale_factor=(0.5, 1.1)).numpy()
    expected = _reference(x, (2, 7), "bilinear", scale_factor=(0.5, 1.1))
    np.testing.assert_allclose(out, expected, rtol=1e-12)


def test_upsampling_bilinear_is_plain_bilinear():
    # When upsampling, the tent filter is not stretched: the plain bilinear kernel
    # (align_corners=False) gives the same values.
    x = np.random.default_rng(2).standard_normal((2, 3, 4, 5))
    aa = _run(x, "bilinear", size=(9, 13)).numpy()
    plain = F.interpolate(ft.from_numpy(x), size=(9, 13), mode="bilinear",
                          align_corners=False).numpy()
    np.testing.assert_allclose(aa, plain, rtol=1e-12, atol=1e-12)


def test_downsampling_averages_over_the_scaled_support():
    # 8 -> 2 with the tent stretched by 4: output 0 weighs pixels 0..5 with 4, 3.5..., from
    # center 2 (the weights (j - 2 + 0.5) / 4 -> 1 - |.|, normalised).
    x = np.arange(8.0).reshape(1, 1, 1, 8).repeat(2, axis=2)
    out = _run(x, "bilinear", size=(2, 2)).numpy()[0, 0, 0]
    w = np.array([1 - abs(j - 1.5) / 4 for j in range(6)])
    np.testing.assert_allclose(out[0], (w * np.arange(6)).sum() / w.sum(), rtol=1e-13)
    np.testing.assert_allclose(out[0] + out[1], 7.0, rtol=1e-13)  # symmetric


def test_output_width_one():
    # Resizing a column equals resizing two identical columns (PyTorch's CPU kernel gets
    # this shape wrong; see the module docstring).
    x = np.random.default_rng(3).standard_normal((2, 3, 7, 1))
    one = _run(x, "bicubic", size=(4, 1)).numpy()
    two = _run(np.repeat(x, 2, axis=3), "bicubic", size=(4, 2)).numpy()
    np.testing.assert_allclose(one[..., 0], two[..., 0], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "lanczos"])
@pytest.mark.parametrize("size", [(3, 2), (7, 9), (2, 8)])
def test_gradcheck(mode, size):
    x = ft.from_numpy(np.random.default_rng(4).standard_normal((1, 2, 5, 4)))
    x.requires_grad_(True)
    assert gradcheck(lambda t: F.interpolate(t, size=size, mode=mode, antialias=True), (x,))


def test_backward_is_the_transposed_weights():
    rng = np.random.default_rng(5)
    x = ft.from_numpy(rng.standard_normal((1, 1, 9, 6)))
    x.requires_grad_(True)
    g = rng.standard_normal((1, 1, 4, 3))
    F.interpolate(x, size=(4, 3), mode="bicubic", antialias=True).backward(ft.from_numpy(g))
    wh = _ref_weights(9, 4, "bicubic", False, None)
    ww = _ref_weights(6, 3, "bicubic", False, None)
    np.testing.assert_allclose(x.grad.numpy()[0, 0], wh.T @ g[0, 0] @ ww, rtol=1e-12,
                               atol=1e-12)


def test_gradient_with_an_unchanged_dim():
    # The gradient is the adjoint of the forward, the unchanged width included.
    rng = np.random.default_rng(8)
    x = ft.from_numpy(rng.standard_normal((1, 2, 8, 4)))
    x.requires_grad_(True)
    out = F.interpolate(x, scale_factor=(0.45, 1.1), mode="bicubic", antialias=True)
    assert tuple(out.shape) == (1, 2, 3, 4)
    g = rng.standard_normal((1, 2, 3, 4))
    out.backward(ft.from_numpy(g))
    wh = _ref_weights(8, 3, "bicubic", False, 0.45)
    np.testing.assert_allclose(x.grad.numpy(), np.einsum("ij,ncik->ncjk", wh, g), rtol=1e-12,
                               atol=1e-12)
    assert gradcheck(lambda t: F.interpolate(t, scale_factor=(0.45, 1.1), mode="bicubic",
                                             antialias=True), (x,))


def test_non_contiguous_and_empty_batch():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 3, 8, 6))
    t = ft.from_numpy(np.ascontiguousarray(x.transpose(0, 1, 3, 2))).transpose(2, 3)
    out = F.interpolate(t, size=(3, 4), mode="bilinear", antialias=True)
    np.testing.assert_allclose(out.numpy(), _reference(x, (3, 4), "bilinear"), rtol=1e-12,
                               atol=1e-12)
    empty = F.interpolate(ft.zeros(0, 3, 8, 6), size=(3, 4), mode="bicubic", antialias=True)
    assert tuple(empty.shape) == (0, 3, 3, 4)


@pytest.mark.cuda
@pytest.mark.skipif(not ft.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_cuda_matches_cpu(mode):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 3, 11, 9))
    g = rng.standard_normal((2, 3, 4, 5))
    results = []
    for device in ("cpu", "cuda"):
        t = ft.from_numpy(x).to(device)
        t.requires_grad_(True)
        out = F.interpolate(t, size=(4, 5), mode=mode, antialias=True)
        assert out.device.type == device
        out.backward(ft.from_numpy(g).to(device))
        results.append((out.detach().cpu().numpy(), t.grad.cpu().numpy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_errors():
    x = ft.zeros(1, 1, 5, 5)
    msg = "Anti-alias option is restricted"
    for mode in ("nearest", "area", "nearest-exact"):
        with pytest.raises(ValueError, match=msg):
            F.interpolate(x, size=3, mode=mode, antialias=True)
    with pytest.raises(ValueError, match=msg):
        F.interpolate(ft.zeros(1, 1, 5), size=3, mode="bilinear", antialias=True)
    with pytest.raises(ValueError, match=msg):
        F.interpolate(ft.zeros(1, 1, 5, 5, 5), size=3, mode="bicubic", antialias=True)
    with pytest.raises(ValueError, match=msg):
        F.interpolate(ft.zeros(1, 1, 5), size=3, mode="linear", antialias=True)
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        F.interpolate(ft.zeros(1, 1, 5, 5, dtype=ft.int64), size=3, mode="bilinear",
                      antialias=True)
    with pytest.raises(RuntimeError, match="sizes should be greater than 0"):
        F.interpolate(x, size=0, mode="bilinear", antialias=True)
    with pytest.raises(RuntimeError, match="sizes should be greater than 0"):
        F.interpolate(ft.zeros(1, 1, 0, 5), size=3, mode="bicubic", antialias=True)
    with pytest.raises(ValueError, match="requires antialias=True"):
        F.interpolate(x, size=3, mode="lanczos")
    with pytest.raises(ValueError, match="does not support align_corners=True"):
        F.interpolate(x, size=3, mode="lanczos", antialias=True, align_corners=True)


# ------------------------------------------------------------------------ against PyTorch


def _torch_cases():
    rng = np.random.default_rng(7)
    cases = []
    while len(cases) < 60:
        h, w = (int(v) for v in rng.integers(1, 24, 2))
        mode = ("bilinear", "bicubic", "lanczos")[len(cases) % 3]
        ac = bool(rng.integers(2)) and mode != "lanczos"
        if rng.integers(2):
            kw = dict(size=tuple(int(v) for v in rng.integers(1, 30, 2)))
        else:
            kw = dict(scale_factor=tuple(float(v) for v in rng.uniform(0.15, 3.0, 2)))
            if rng.integers(3) == 0:
                kw["recompute_scale_factor"] = True
        oh, ow = _out_size((h, w), kw)
        if oh < 1 or ow < 1 or (ow == 1 and oh != h):
            continue
        cases.append(((h, w), mode, ac, kw))
    return cases


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", _torch_cases())
def test_matches_torch(case, dtype):
    torch = pytest.importorskip("torch")
    (h, w), mode, ac, kw = case
    rng = np.random.default_rng(h * 100 + w)
    x = rng.standard_normal((2, 3, h, w)).astype(dtype)
    ac_arg = None if mode == "lanczos" else ac
    tx = torch.from_numpy(x.copy()).requires_grad_(True)
    fx = ft.from_numpy(x.copy())
    fx.requires_grad_(True)
    t = torch.nn.functional.interpolate(tx, mode=mode, align_corners=ac_arg, antialias=True,
                                        **kw)
    f = F.interpolate(fx, mode=mode, align_corners=ac_arg, antialias=True, **kw)
    assert tuple(f.shape) == tuple(t.shape)
    assert f.dtype == getattr(ft, dtype)
    tol = dict(rtol=1e-12, atol=1e-12) if dtype == "float64" else dict(rtol=2e-5, atol=1e-5)
    np.testing.assert_allclose(f.detach().numpy(), t.detach().numpy(), **tol)
    if "scale_factor" in kw and not kw.get("recompute_scale_factor") and (
        t.shape[2] == h or t.shape[3] == w
    ):
        return  # PyTorch's backward resamples the unchanged dim (see the module docstring)
    g = rng.standard_normal(tuple(t.shape)).astype(dtype)
    t.backward(torch.from_numpy(g))
    f.backward(ft.from_numpy(g))
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), **tol)


@pytest.mark.parametrize("kw", [dict(mode="nearest"), dict(mode="area"),
                                dict(mode="bilinear", ndim=3), dict(mode="bicubic", ndim=5),
                                dict(mode="bilinear", dtype="int64"),
                                dict(mode="bilinear", size=0)])
def test_errors_match_torch(kw):
    torch = pytest.importorskip("torch")
    kw = dict(kw)
    shape = (1, 1) + (5,) * (kw.pop("ndim", 4) - 2)
    dtype = kw.pop("dtype", "float32")
    size = kw.pop("size", 3)
    with pytest.raises(Exception) as t_err:
        torch.nn.functional.interpolate(torch.zeros(shape, dtype=getattr(torch, dtype)),
                                        size=size, antialias=True, **kw)
    with pytest.raises(Exception) as f_err:
        F.interpolate(ft.zeros(*shape, dtype=getattr(ft, dtype)), size=size, antialias=True,
                      **kw)
    assert type(f_err.value) is type(t_err.value)
    assert str(f_err.value) == str(t_err.value)
