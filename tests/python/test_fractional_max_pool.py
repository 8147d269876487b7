"""``F.fractional_max_pool2d/3d`` and ``nn.FractionalMaxPool2d/3d``: a NumPy loop reference
of PyTorch's CPU kernel, float64 gradchecks, module behaviour and PyTorch's errors; with
PyTorch installed, values, indices and gradients equal its for the same samples."""

import math

import numpy as np
import pytest

import ferrotorch as torch
import ferrotorch.nn as nn
import ferrotorch.nn.functional as F
from ferrotorch.autograd import gradcheck


def _np_intervals(sample, in_size, out_size, pool, ftype):
    seq = [0] * out_size
    if out_size > 1:
        alpha = ftype(ftype(in_size - pool) / ftype(out_size - 1))
        for i in range(out_size - 1):
            seq[i] = int(ftype(ftype(ftype(i) + sample) * alpha)) - int(ftype(sample * alpha))
    if out_size > 0:
        seq[-1] = in_size - pool
    return seq


def _np_fmp(x, ks, os_, samples, ftype):
    """PyTorch's CPU kernel, loop for loop (2-d: sample 0 -> W, 1 -> H; 3-d: T, H, W)."""
    nd = len(ks)
    n, c = x.shape[:2]
    sizes = x.shape[2:]
    out = np.zeros((n, c, *os_), dtype=x.dtype)
    idx = np.zeros((n, c, *os_), dtype=np.int64)
    for b in range(n):
        for p in range(c):
            smp = [ftype(v) for v in samples[b, p]]
            order = [1, 0] if nd == 2 else [0, 1, 2]
            seqs = [_np_intervals(smp[order[d]], sizes[d], os_[d], ks[d], ftype)
                    for d in range(nd)]
            plane = x[b, p].reshape(-1)
            for o in np.ndindex(*os_):
                starts = [seqs[d][o[d]] for d in range(nd)]
                best, bi = -math.inf, int(np.ravel_multi_index(starts, sizes))
                for k in np.ndindex(*ks):
                    j = int(np.ravel_multi_index([s + kk for s, kk in zip(starts, k)], sizes))
                    v = plane[j]
                    if v > best or np.isnan(v):
                        best, bi = v, j
                out[(b, p, *o)] = best
                idx[(b, p, *o)] = bi
    return out, idx


CASES = [
    (2, (2, 3, 9, 11), (2, 3), (4, 5)),
    (2, (1, 2, 10, 10), 3, 5),
    (2, (3, 1, 7, 6), (1, 2), (7, 3)),
    (3, (2, 2, 6, 7, 8), (2, 3, 2), (3, 2, 4)),
    (3, (1, 3, 5, 5, 5), 2, 3),
]


@pytest.mark.parametrize("nd,shape,ks,os_", CASES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matches_numpy_loop_reference(nd, shape, ks, os_, dtype):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape).astype(dtype)
    x[..., ::3] = np.round(x[..., ::3])  # some ties
    s = rng.random((shape[0], shape[1], nd)).astype(dtype)
    f = F.fractional_max_pool2d if nd == 2 else F.fractional_max_pool3d
    out, idx = f(torch.tensor(x), ks, os_, _random_samples=torch.tensor(s),
                 return_indices=True)
    ksn = (ks,) * nd if isinstance(ks, int) else ks
    osn = (os_,) * nd if isinstance(os_, int) else os_
    ftype = np.float32 if dtype == "float32" else np.float64
    ref, ridx = _np_fmp(x, ksn, osn, s, ftype)
    assert np.array_equal(np.array(idx.tolist()), ridx)
    assert np.array_equal(np.array(out.tolist(), dtype=dtype), ref)
    assert idx.dtype == torch.int64 and out.dtype == getattr(torch, dtype)


def test_large_float32_intervals_and_nan_rule():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 2, 2, 1500)).astype(np.float32)
    s = rng.random((1, 2, 2)).astype(np.float32)
    _, idx = F.fractional_max_pool2d(torch.tensor(x), (1, 4), (1, 611),
                                     _random_samples=torch.tensor(s), return_indices=True)
    _, ridx = _np_fmp(x, (1, 4), (1, 611), s, np.float32)
    assert np.array_equal(np.array(idx.tolist()), ridx)
    nan = float("nan")
    x = torch.tensor([[[1.0, nan, 3.0], [nan, 2.0, 0.0]]])
    out, idx = F.fractional_max_pool2d(x, 2, (1, 2), _random_samples=torch.zeros(1, 1, 2),
                                       return_indices=True)
    assert idx.tolist() == [[[3, 1]]] and all(math.isnan(v) for v in out.reshape(-1).tolist())


def test_unbatched_and_ratio_and_random_samples():
    x = torch.randn(3, 10, 12)
    s = torch.rand(1, 3, 2)
    a = F.fractional_max_pool2d(x, 2, output_ratio=(0.5, 0.5), _random_samples=s)
    b = F.fractional_max_pool2d(x.unsqueeze(0), 2, output_size=(5, 6), _random_samples=s)
    assert a.shape == (3, 5, 6) and a.tolist() == b[0].tolist()
    torch.manual_seed(0)
    y = torch.randn(2, 3, 6, 7, 8)
    out = F.fractional_max_pool3d(y, 2, output_ratio=0.5)
    assert out.shape == (2, 3, 3, 3, 4)
    torch.manual_seed(5)
    a = F.fractional_max_pool2d(x, 3, output_size=4)
    torch.manual_seed(5)
    b = F.fractional_max_pool2d(x, 3, output_size=4)
    assert a.tolist() == b.tolist()
    # every output is the max of some window
    out, idx = F.fractional_max_pool2d(x, 3, output_size=4, return_indices=True)
    assert out.tolist() == x.reshape(3, -1).gather(1, idx.reshape(3, -1)).reshape(3, 4, 4).tolist()
    empty = F.fractional_max_pool2d(torch.randn(0, 3, 6, 6), 2, output_size=3)
    assert empty.shape == (0, 3, 3, 3)


def _distinct(shape, seed):
    g = np.random.default_rng(seed)
    v = g.permutation(int(np.prod(shape))).astype(np.float64) / 7.0 - 3.0
    return torch.tensor(v.reshape(shape), requires_grad=True)


def test_gradcheck_2d_3d():
    x = _distinct((2, 2, 7, 6), 0)
    s = torch.rand(2, 2, 2, dtype=torch.float64)
    assert gradcheck(lambda t: F.fractional_max_pool2d(t, (2, 3), (4, 3), _random_samples=s),
                     (x,))
    y = _distinct((1, 2, 5, 6, 4), 1)
    s3 = torch.rand(1, 2, 3, dtype=torch.float64)
    assert gradcheck(lambda t: F.fractional_max_pool3d(t, 2, (3, 4, 2), _random_samples=s3),
                     (y,))
    # overlapping windows accumulate into the shared max
    z = torch.tensor([[[[0.0, 1.0, 0.0], [0.0, 0.0, 0.0]]]], requires_grad=True)
    F.fractional_max_pool2d(z, 2, (1, 2), _random_samples=torch.zeros(1, 1, 2)).sum().backward()
    assert z.grad.tolist() == [[[[0.0, 2.0, 0.0], [0.0, 0.0, 0.0]]]]


def test_modules():
    m = nn.FractionalMaxPool2d(3, output_ratio=0.5)
    assert repr(m) == "FractionalMaxPool2d()" and m.kernel_size == (3, 3)
    assert m.output_ratio == (0.5, 0.5) and m.output_size is None
    assert m(torch.randn(2, 3, 10, 12)).shape == (2, 3, 5, 6)
    s = torch.rand(2, 3, 3)
    m3 = nn.FractionalMaxPool3d(2, output_size=(3, 2, 3), return_indices=True,
                                _random_samples=s)
    assert repr(m3) == "FractionalMaxPool3d()" and "_random_samples" in m3.state_dict()
    x = torch.randn(2, 3, 6, 5, 7)
    out, idx = m3(x)
    ref = F.fractional_max_pool3d(x, 2, (3, 2, 3), _random_samples=s)
    assert out.tolist() == ref.tolist() and idx.shape == (2, 3, 3, 2, 3)
    assert list(nn.FractionalMaxPool2d(2, output_size=3).state_dict()) == []


def _raises(exc, match, fn):
    with pytest.raises(exc, match=match):
        fn()


def test_errors():
    x = torch.randn(2, 3, 7, 8)
    f2, f3 = F.fractional_max_pool2d, F.fractional_max_pool3d
    _raises(RuntimeError, "pool height 3 too large relative to input height 7",
            lambda: f2(x, 3, output_size=6))
    _raises(RuntimeError, "pool width 3 too large relative to input width 8",
            lambda: f2(x, 3, output_size=(5, 7)))
    _raises(RuntimeError, "output_size must either be a single Int or tuple of Ints",
            lambda: f2(x, 3, output_size=(5, 5, 5)))
    _raises(RuntimeError, "kernel_size must either be a single Int or tuple of Ints",
            lambda: f2(x, (3, 3, 3), output_size=(5, 5)))
    _raises(TypeError, "has no len", lambda: f2(x, 3, output_ratio=0.5))
    _raises(ValueError, "output_ratio to either be a single Int",
            lambda: f2(x, 3, output_ratio=(0.5, 0.5, 0.5)))
    _raises(ValueError, "requires specifying either an output_size or an output_ratio",
            lambda: f2(x, 3))
    _raises(RuntimeError, r"Expected 3D or 4D tensor, but got: \[1, 2, 3, 4, 5\]",
            lambda: f2(torch.randn(1, 2, 3, 4, 5), 2, output_size=2))
    _raises(RuntimeError, "non-zero size for non-batch dimensions",
            lambda: f2(torch.randn(2, 0, 7, 8), 3, output_size=2))
    _raises(RuntimeError, "size\\(0\\) no less then input batch size",
            lambda: f2(x, 3, output_size=2, _random_samples=torch.rand(1, 3, 2)))
    _raises(RuntimeError, "size\\(1\\) equals to input channel size",
            lambda: f2(x, 3, output_size=2, _random_samples=torch.rand(2, 2, 2)))
    _raises(RuntimeError, "size\\(2\\) equals to 2; got 3",
            lambda: f2(x, 3, output_size=2, _random_samples=torch.rand(2, 3, 3)))
    _raises(RuntimeError, "to have 3 dimensions, got 2",
            lambda: f2(x, 3, output_size=2, _random_samples=torch.rand(2, 3)))
    _raises(RuntimeError, "same dtype as input",
            lambda: f2(x, 3, output_size=2,
                       _random_samples=torch.rand(2, 3, 2, dtype=torch.float64)))
    y = torch.randn(2, 3, 5, 6, 7)
    _raises(RuntimeError, "pool time 3 too large relative to input time 5",
            lambda: f3(y, 3, output_size=(3, 3, 3)))
    _raises(RuntimeError, "pool height 3 too large relative to input height 6",
            lambda: f3(y, 3, output_size=(2, 4, 3)))
    _raises(RuntimeError, "pool width 3 too large relative to input width 7",
            lambda: f3(y, 3, output_size=(2, 3, 5)))
    _raises(RuntimeError, "tuple of three Ints", lambda: f3(y, 2, output_size=(3, 3)))
    _raises(RuntimeError, "Expected 4D or 5D tensor",
            lambda: f3(torch.randn(1, 2, 3, 4, 5, 6), 2, output_size=2))
    _raises(RuntimeError, "equals to 3; got 2",
            lambda: f3(y, 2, output_size=2, _random_samples=torch.rand(2, 3, 2)))
    _raises(ValueError, "kernel_size must be greater than 0",
            lambda: nn.FractionalMaxPool3d(0, output_size=2))
    _raises(ValueError, r"output_ratio must be between 0 and 1 \(got 1.5\)",
            lambda: nn.FractionalMaxPool2d(2, output_ratio=1.5))
    _raises(ValueError, "FractionalMaxPool2d requires specifying either an output size",
            lambda: nn.FractionalMaxPool2d(2))
    _raises(ValueError, "only one of output_size and output_ratio",
            lambda: nn.FractionalMaxPool3d(2, output_size=3, output_ratio=0.5))


@pytest.mark.parametrize("nd", [2, 3])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matches_torch(nd, dtype):
    real = pytest.importorskip("torch")
    rng = np.random.default_rng(11 + nd)
    for _ in range(12):
        n, c = int(rng.integers(1, 3)), int(rng.integers(1, 4))
        sizes = [int(rng.integers(4, 13)) for _ in range(nd)]
        ks = [int(rng.integers(1, 4)) for _ in range(nd)]
        os_ = [int(rng.integers(1, s - k + 2 - (nd == 3))) for s, k in zip(sizes, ks)]
        x = rng.standard_normal((n, c, *sizes)).astype(dtype)
        x[..., ::2] = np.round(x[..., ::2])
        s = rng.random((n, c, nd)).astype(dtype)
        g = rng.standard_normal((n, c, *os_)).astype(dtype)
        name = f"fractional_max_pool{nd}d"
        tx = real.tensor(x, requires_grad=True)
        to, ti = getattr(real.nn.functional, name)(tx, ks, os_, _random_samples=real.tensor(s),
                                                   return_indices=True)
        to.backward(real.tensor(g))
        fx = torch.tensor(x, requires_grad=True)
        fo, fi = getattr(F, name)(fx, ks, os_, _random_samples=torch.tensor(s),
                                  return_indices=True)
        fo.backward(torch.tensor(g))
        assert np.array_equal(np.array(fi.tolist()), ti.numpy())
        assert np.array_equal(np.array(fo.tolist(), dtype=dtype), to.detach().numpy())
        assert np.array_equal(np.array(fx.grad.tolist(), dtype=dtype), tx.grad.numpy())


def test_matches_torch_half_large():
    real = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    for _ in range(10):
        w = int(rng.integers(100, 3000))
        o = int(rng.integers(2, w - 3))
        k = int(rng.integers(1, w - o + 2))
        x = real.randn(1, 3, 1, w).half()
        s = real.rand(1, 3, 2).half()
        ti = real.nn.functional.fractional_max_pool2d(x, (1, k), (1, o), _random_samples=s,
                                                      return_indices=True)[1]
        fx = torch.tensor(x.float().numpy()).to(torch.float16)
        fs = torch.tensor(s.float().numpy()).to(torch.float16)
        fi = F.fractional_max_pool2d(fx, (1, k), (1, o), _random_samples=fs,
                                     return_indices=True)[1]
        assert np.array_equal(np.array(fi.tolist()), ti.numpy())
