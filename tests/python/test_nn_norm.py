"""Normalisation layers (batch/instance/layer/group/RMS/local response norm) vs NumPy:
values, running statistics, gradients (gradcheck), modules and error messages."""

import numpy as np
import pytest

import ferrotorch as ft
import ferrotorch.nn.functional as F
from ferrotorch import nn
from ferrotorch.autograd import gradcheck

RNG = np.random.default_rng(1234)

FLOATS = [(ft.float32, np.float32, 1e-5), (ft.float64, np.float64, 1e-11)]


def T(a, grad=False):
    x = ft.from_numpy(np.ascontiguousarray(a))
    return x.requires_grad_() if grad else x


def N(x):
    return x.detach().numpy() if x.requires_grad else x.numpy()


def rand(*shape, dtype=np.float64, scale=1.0, shift=0.0):
    return (RNG.standard_normal(shape) * scale + shift).astype(dtype)


# ------------------------------------------------------------------------ NumPy references
def np_batch_norm(x, rm, rv, w, b, training, momentum, eps):
    c = x.shape[1]
    axes = (0,) + tuple(range(2, x.ndim))
    shape = [1, c] + [1] * (x.ndim - 2)
    x64 = x.astype(np.float64)
    if training:
        mean = x64.mean(axes)
        var = x64.var(axes)
        n = x.size // c
        if rm is not None:
            rm = (1 - momentum) * rm + momentum * mean
            rv = (1 - momentum) * rv + momentum * var * n / (n - 1)
    else:
        mean, var = rm.astype(np.float64), rv.astype(np.float64)
    y = (x64 - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    if w is not None:
        y = y * w.reshape(shape)
    if b is not None:
        y = y + b.reshape(shape)
    return y, rm, rv


def np_layer_norm(x, k, w, b, eps):
    axes = tuple(range(x.ndim - k, x.ndim))
    x64 = x.astype(np.float64)
    y = (x64 - x64.mean(axes, keepdims=True)) / np.sqrt(x64.var(axes, keepdims=True) + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


def np_group_norm(x, g, w, b, eps):
    n, c = x.shape[:2]
    xg = x.astype(np.float64).reshape(n, g, -1)
    y = (xg - xg.mean(-1, keepdims=True)) / np.sqrt(xg.var(-1, keepdims=True) + eps)
    y = y.reshape(x.shape)
    shape = [1, c] + [1] * (x.ndim - 2)
    if w is not None:
        y = y * w.reshape(shape)
    if b is not None:
        y = y + b.reshape(shape)
    return y


def np_rms_norm(x, k, w, eps):
    axes = tuple(range(x.ndim - k, x.ndim))
    x64 = x.astype(np.float64)
    y = x64 / np.sqrt((x64 * x64).mean(axes, keepdims=True) + eps)
    return y * w if w is not None else y


# ------------------------------------------------------------------------------ batch norm
@pytest.mark.parametrize("dt,npdt,tol", FLOATS)
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5), (3, 2, 4, 3), (2, 2, 2, 3, 2)])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_training_matches_numpy(dt, npdt, tol, shape, affine):
    c = shape[1]
    x = rand(*shape, dtype=npdt, scale=2.0, shift=3.0)
    w = rand(c, dtype=npdt) if affine else None
    b = rand(c, dtype=npdt) if affine else None
    rm = rand(c, dtype=npdt)
    rv = np.abs(rand(c, dtype=npdt)) + 0.5
    trm, trv = T(rm.copy()), T(rv.copy())
    y = F.batch_norm(T(x), trm, trv, None if w is None else T(w), None if b is None else T(b),
                     training=True, momentum=0.2, eps=1e-5)
    ey, erm, erv = np_batch_norm(x, rm, rv, w, b, True, 0.2, 1e-5)
    assert y.dtype == dt and tuple(y.shape) == shape
    np.testing.assert_allclose(N(y), ey, rtol=tol * 10, atol=tol * 10)
    np.testing.assert_allclose(N(trm), erm, rtol=tol, atol=tol)
    np.testing.assert_allclose(N(trv), erv, rtol=tol, atol=tol)


@pytest.mark.parametrize("dt,npdt,tol", FLOATS)
def test_batch_norm_eval_uses_running_stats(dt, npdt, tol):
    x = rand(5, 4, 3, dtype=npdt)
    rm, rv = rand(4, dtype=npdt), np.abs(rand(4, dtype=npdt)) + 0.1
    w, b = rand(4, dtype=npdt), rand(4, dtype=npdt)
    trm, trv = T(rm.copy()), T(rv.copy())
    y = F.batch_norm(T(x), trm, trv, T(w), T(b), training=False, eps=1e-3)
    ey, _, _ = np_batch_norm(x, rm, rv, w, b, False, 0.1, 1e-3)
    np.testing.assert_allclose(N(y), ey, rtol=tol * 10, atol=tol * 10)
    np.testing.assert_array_equal(N(trm), rm)
    np.testing.assert_array_equal(N(trv), rv)


def test_batch_norm_non_contiguous_and_no_running_stats():
    base = rand(6, 8, 5)
    xv = T(base)[::2].transpose(0, 1)  # (8, 3, 5), not contiguous
    assert not xv.is_contiguous()
    arr = base[::2].transpose(1, 0, 2)
    y = F.batch_norm(xv, None, None, training=True)
    ey, _, _ = np_batch_norm(arr, None, None, None, None, True, 0.1, 1e-5)
    np.testing.assert_allclose(N(y), ey, rtol=1e-10, atol=1e-10)


def test_batch_norm_large_offsets_accurate():
    x = rand(64, 3, 50, dtype=np.float32, scale=1e-2, shift=1e3)
    y = F.batch_norm(T(x), None, None, training=True)
    ey, _, _ = np_batch_norm(x, None, None, None, None, True, 0.1, 1e-5)
    np.testing.assert_allclose(N(y), ey, rtol=0, atol=2e-3)


def test_batch_norm_half_dtypes():
    x = rand(4, 3, 5, dtype=np.float32)
    for dt in (ft.float16, ft.bfloat16):
        xh = T(x).to(dt)
        y = F.batch_norm(xh, None, None, training=True)
        assert y.dtype == dt
        ey, _, _ = np_batch_norm(xh.float().numpy(), None, None, None, None, True, 0.1, 1e-5)
        np.testing.assert_allclose(y.float().numpy(), ey, rtol=2e-2, atol=2e-2)


def test_batch_norm_empty_batch():
    x = T(np.zeros((0, 3, 4)))
    rm = T(np.zeros(3))
    y = F.batch_norm(x, rm, T(np.ones(3)), training=True)
    assert tuple(y.shape) == (0, 3, 4)
    np.testing.assert_array_equal(N(rm), np.zeros(3))


def test_batch_norm_errors():
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        F.batch_norm(T(rand(1, 4)), None, None, training=True)
    with pytest.raises(RuntimeError, match="running_mean should contain 4 elements not 3"):
        F.batch_norm(T(rand(2, 4)), T(np.zeros(3)), T(np.ones(4)), training=True)
    with pytest.raises(RuntimeError, match="weight should contain 4 elements not 5"):
        F.batch_norm(T(rand(2, 4)), None, None, T(np.ones(5)), training=True)
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        F.batch_norm(ft.from_numpy(np.ones((2, 3), dtype=np.int64)), None, None, training=True)
    # eval with a batch of one is fine
    F.batch_norm(T(rand(1, 4)), T(np.zeros(4)), T(np.ones(4)), training=False)


def test_batch_norm_module_running_stats_over_steps():
    for momentum in (0.1, None):
        m = nn.BatchNorm2d(3, momentum=momentum).double()
        rm, rv = np.zeros(3), np.ones(3)
        for step in range(1, 5):
            x = rand(4, 3, 2, 2, shift=step)
            y = m(T(x))
            factor = 1.0 / step if momentum is None else momentum
            ey, rm, rv = np_batch_norm(x, rm, rv, np.ones(3), np.zeros(3), True, factor, 1e-5)
            np.testing.assert_allclose(N(y), ey, rtol=1e-10, atol=1e-10)
            np.testing.assert_allclose(m.running_mean.numpy(), rm, rtol=1e-12)
            np.testing.assert_allclose(m.running_var.numpy(), rv, rtol=1e-12)
            assert m.num_batches_tracked.item() == step
            assert m.num_batches_tracked.dtype == ft.int64
        m.eval()
        x = rand(2, 3, 2, 2)
        ey, _, _ = np_batch_norm(x, rm, rv, None, None, False, 0.0, 1e-5)
        np.testing.assert_allclose(N(m(T(x))), ey, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(m.running_mean.numpy(), rm)
        assert m.num_batches_tracked.item() == 4
        m.reset_running_stats()
        np.testing.assert_array_equal(m.running_mean.numpy(), np.zeros(3))
        np.testing.assert_array_equal(m.running_var.numpy(), np.ones(3))
        assert m.num_batches_tracked.item() == 0


def test_batch_norm_module_no_tracking_and_eval():
    m = nn.BatchNorm1d(4, affine=False, track_running_stats=False)
    assert m.running_mean is None and m.weight is None
    assert list(m.state_dict().keys()) == []
    m.eval()  # still uses batch statistics
    x = rand(5, 4, dtype=np.float32)
    ey, _, _ = np_batch_norm(x, None, None, None, None, True, 0.1, 1e-5)
    np.testing.assert_allclose(N(m(T(x))), ey, rtol=1e-5, atol=1e-5)


def test_batch_norm_module_repr_state_dict_and_checks():
    m = nn.BatchNorm2d(16)
    assert repr(m) == ("BatchNorm2d(16, eps=1e-05, momentum=0.1, affine=True, bias=True, "
                       "track_running_stats=True)")
    assert list(m.state_dict().keys()) == [
        "weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    assert m.weight.dtype == ft.float32
    np.testing.assert_array_equal(m.weight.detach().numpy(), np.ones(16))
    np.testing.assert_array_equal(m.bias.detach().numpy(), np.zeros(16))
    assert repr(nn.BatchNorm1d(3, momentum=None, affine=False)) == (
        "BatchNorm1d(3, eps=1e-05, momentum=None, affine=False, bias=False, "
        "track_running_stats=True)")
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        nn.BatchNorm1d(3)(T(rand(2, 3, 4, 4, dtype=np.float32)))
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        nn.BatchNorm2d(3)(T(rand(2, 3, 4, dtype=np.float32)))
    with pytest.raises(ValueError, match=r"expected 5D input \(got 4D input\)"):
        nn.BatchNorm3d(3)(T(rand(2, 3, 4, 4, dtype=np.float32)))
    # A state dict without num_batches_tracked still loads when its metadata has no version
    # (or version < 2), as PyTorch's old checkpoints; with version 2 the key is missing.
    sd = m.state_dict()
    del sd["num_batches_tracked"]
    m2 = nn.BatchNorm2d(16)
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: '
                                           '"num_batches_tracked"'):
        m2.load_state_dict(sd)
    m2.load_state_dict(dict(sd))
    sd._metadata[""]["version"] = 1
    m2.load_state_dict(sd)


def test_batch_norm_module_trains():
    m = nn.BatchNorm1d(3).double()
    x = T(rand(8, 3))
    (m(x) * T(rand(8, 3))).sum().backward()
    assert m.weight.grad is not None and tuple(m.weight.grad.shape) == (3,)
    assert m.bias.grad is not None


# --------------------------------------------------------------------------- instance norm
@pytest.mark.parametrize("shape", [(2, 3, 5), (3, 2, 4, 3)])
def test_instance_norm_matches_numpy(shape):
    x = rand(*shape)
    n, c = shape[:2]
    w, b = rand(c), rand(c)
    rm, rv = np.zeros(c), np.ones(c)
    trm, trv = T(rm.copy()), T(rv.copy())
    y = F.instance_norm(T(x), trm, trv, T(w), T(b), use_input_stats=True, momentum=0.3)
    xr = x.reshape(1, n * c, *shape[2:])
    ey, erm, erv = np_batch_norm(xr, np.tile(rm, n), np.tile(rv, n), np.tile(w, n),
                                 np.tile(b, n), True, 0.3, 1e-5)
    np.testing.assert_allclose(N(y), ey.reshape(shape), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(N(trm), erm.reshape(n, c).mean(0), rtol=1e-12)
    np.testing.assert_allclose(N(trv), erv.reshape(n, c).mean(0), rtol=1e-12)


def test_instance_norm_modules():
    m = nn.InstanceNorm2d(3)
    assert repr(m) == (
        "InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=False, bias=False, "
        "track_running_stats=False)")
    x = rand(2, 3, 4, 4, dtype=np.float32)
    ey = np_group_norm(x, 3, None, None, 1e-5)
    np.testing.assert_allclose(N(m(T(x))), ey, rtol=1e-5, atol=1e-5)
    # unbatched input
    np.testing.assert_allclose(N(m(T(x[0]))), ey[0], rtol=1e-5, atol=1e-5)
    m1 = nn.InstanceNorm1d(4, affine=True, track_running_stats=True).double()
    assert list(m1.state_dict().keys()) == [
        "weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    xs = rand(3, 4, 6)
    m1(T(xs))
    np.testing.assert_allclose(m1.running_mean.numpy(), 0.1 * xs.mean((0, 2)), rtol=1e-10)
    m1.eval()
    y = m1(T(xs))
    ey, _, _ = np_batch_norm(xs, m1.running_mean.numpy(), m1.running_var.numpy(), None, None,
                             False, 0.0, 1e-5)
    np.testing.assert_allclose(N(y), ey, rtol=1e-10, atol=1e-10)
    with pytest.raises(ValueError, match=r"expected 3D or 4D input \(got 2D input\)"):
        m(T(rand(2, 3)))
    with pytest.raises(ValueError, match="Expected more than 1 spatial element when training"):
        F.instance_norm(T(rand(2, 3, 1)))


# ------------------------------------------------------------------------------ layer norm
@pytest.mark.parametrize("dt,npdt,tol", FLOATS)
@pytest.mark.parametrize("shape,k", [((4, 7), 1), ((2, 3, 5), 2), ((3, 4), 2), ((5,), 1),
                                     ((2, 1, 3, 4), 1)])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_matches_numpy(dt, npdt, tol, shape, k, affine):
    x = rand(*shape, dtype=npdt, scale=3.0, shift=-2.0)
    ns = shape[len(shape) - k:]
    w = rand(*ns, dtype=npdt) if affine else None
    b = rand(*ns, dtype=npdt) if affine else None
    y = F.layer_norm(T(x), ns, None if w is None else T(w), None if b is None else T(b))
    assert y.dtype == dt
    np.testing.assert_allclose(N(y), np_layer_norm(x, k, w, b, 1e-5), rtol=tol * 10,
                               atol=tol * 10)


def test_layer_norm_non_contiguous_int_shape_and_native():
    base = rand(6, 5)
    x = T(base).t()  # (5, 6)
    y = F.layer_norm(x, 6, eps=1e-3)
    np.testing.assert_allclose(N(y), np_layer_norm(base.T, 1, None, None, 1e-3), rtol=1e-10,
                               atol=1e-10)
    out, mean, rstd = ft._C.native_layer_norm(T(base), [5], None, None, 1e-5)
    assert tuple(mean.shape) == (6, 1) and tuple(rstd.shape) == (6, 1)
    np.testing.assert_allclose(mean.numpy()[:, 0], base.mean(1), rtol=1e-12)
    np.testing.assert_allclose(rstd.numpy()[:, 0], 1 / np.sqrt(base.var(1) + 1e-5), rtol=1e-12)
    empty = F.layer_norm(T(np.zeros((0, 4))), [4])
    assert tuple(empty.shape) == (0, 4)


def test_layer_norm_errors():
    with pytest.raises(RuntimeError, match=(
            r"Given normalized_shape=\[5\], expected input with shape \[\*, 5\], "
            r"but got input of size\[2, 3\]")):
        F.layer_norm(T(rand(2, 3)), [5])
    with pytest.raises(RuntimeError, match="Expected weight to be of same shape as normalized_shape"):
        F.layer_norm(T(rand(2, 3)), [3], T(np.ones(4)))


def test_layer_norm_module():
    m = nn.LayerNorm(10)
    assert repr(m) == "LayerNorm((10,), eps=1e-05, elementwise_affine=True, bias=True)"
    assert list(m.state_dict().keys()) == ["weight", "bias"]
    m2 = nn.LayerNorm([3, 4], bias=False)
    assert m2.bias is None and list(m2.state_dict().keys()) == ["weight"]
    assert repr(nn.LayerNorm((3, 4), elementwise_affine=False)) == (
        "LayerNorm((3, 4), eps=1e-05, elementwise_affine=False, bias=False)")
    x = rand(2, 3, 4, dtype=np.float32)
    np.testing.assert_allclose(N(m2(T(x))), np_layer_norm(x, 2, None, None, 1e-5), rtol=1e-5,
                               atol=1e-5)


# ------------------------------------------------------------------------------ group norm
@pytest.mark.parametrize("dt,npdt,tol", FLOATS)
@pytest.mark.parametrize("shape,g", [((2, 6, 5), 3), ((3, 4), 2), ((2, 4, 3, 3), 1),
                                     ((1, 6, 2, 2), 6), ((2, 4, 2, 1, 3), 2)])
def test_group_norm_matches_numpy(dt, npdt, tol, shape, g):
    c = shape[1]
    x = rand(*shape, dtype=npdt, scale=2.0, shift=1.0)
    w, b = rand(c, dtype=npdt), rand(c, dtype=npdt)
    y = F.group_norm(T(x), g, T(w), T(b), eps=1e-4)
    np.testing.assert_allclose(N(y), np_group_norm(x, g, w, b, 1e-4), rtol=tol * 10,
                               atol=tol * 10)
    y = F.group_norm(T(x), g)
    np.testing.assert_allclose(N(y), np_group_norm(x, g, None, None, 1e-5), rtol=tol * 10,
                               atol=tol * 10)


def test_group_norm_non_contiguous_and_errors():
    base = rand(4, 6, 3)
    x = T(base).permute(2, 1, 0)  # (3, 6, 4)
    np.testing.assert_allclose(N(F.group_norm(x, 2)),
                               np_group_norm(base.transpose(2, 1, 0), 2, None, None, 1e-5),
                               rtol=1e-10, atol=1e-10)
    with pytest.raises(RuntimeError, match=(
            "Expected number of channels in input to be divisible by num_groups")):
        F.group_norm(T(rand(2, 5)), 2)
    with pytest.raises(RuntimeError, match="Expected weight to be a vector of size equal"):
        F.group_norm(T(rand(2, 6)), 2, T(np.ones(4)))
    with pytest.raises(RuntimeError, match="Expected at least 2 dimensions"):
        F.group_norm(T(rand(6)), 2)
    with pytest.raises(ValueError, match=r"num_channels \(6\) must be divisible by num_groups \(4\)"):
        nn.GroupNorm(4, 6)


def test_group_norm_module():
    m = nn.GroupNorm(2, 6)
    assert repr(m) == "GroupNorm(2, 6, eps=1e-05, affine=True, bias=True)"
    assert list(m.state_dict().keys()) == ["weight", "bias"]
    x = rand(3, 6, 4, dtype=np.float32)
    np.testing.assert_allclose(N(m(T(x))), np_group_norm(x, 2, None, None, 1e-5), rtol=1e-5,
                               atol=1e-5)


# -------------------------------------------------------------------------------- RMS norm
@pytest.mark.parametrize("dt,npdt,tol", FLOATS)
@pytest.mark.parametrize("shape,k", [((4, 7), 1), ((2, 3, 5), 2)])
def test_rms_norm_matches_numpy(dt, npdt, tol, shape, k):
    x = rand(*shape, dtype=npdt)
    ns = shape[len(shape) - k:]
    w = rand(*ns, dtype=npdt)
    y = F.rms_norm(T(x), ns, T(w), eps=1e-6)
    np.testing.assert_allclose(N(y), np_rms_norm(x, k, w, 1e-6), rtol=tol * 10, atol=tol * 10)
    # eps=None -> finfo(dtype).eps
    y = F.rms_norm(T(x), ns)
    np.testing.assert_allclose(N(y), np_rms_norm(x, k, None, np.finfo(npdt).eps),
                               rtol=tol * 10, atol=tol * 10)


def test_rms_norm_module():
    m = nn.RMSNorm([4])
    assert repr(m) == "RMSNorm((4,), eps=None, elementwise_affine=True)"
    assert list(m.state_dict().keys()) == ["weight"]
    x = rand(3, 4, dtype=np.float32)
    np.testing.assert_allclose(N(m(T(x))), np_rms_norm(x, 1, None, np.finfo(np.float32).eps),
                               rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------- local response norm
def np_lrn(x, size, alpha, beta, k):
    c = x.shape[1]
    sq = x * x
    pad = [(0, 0)] * x.ndim
    pad[1] = (size // 2, (size - 1) // 2)
    sp = np.pad(sq, pad)
    acc = sum(sp[:, j:j + c] for j in range(size))
    return x / (k + alpha * acc / size) ** beta


def test_local_response_norm():
    x = rand(2, 5, 3, 2)
    for size in (1, 2, 3, 4):
        y = F.local_response_norm(T(x), size, alpha=0.1, beta=0.6, k=2.0)
        np.testing.assert_allclose(N(y), np_lrn(x, size, 0.1, 0.6, 2.0), rtol=1e-12)
    m = nn.LocalResponseNorm(2)
    assert repr(m) == "LocalResponseNorm(2, alpha=0.0001, beta=0.75, k=1.0)"
    with pytest.raises(ValueError, match=r"Expected 3D or higher dimensionality\s+input \(got 2 dimensions\)"):
        F.local_response_norm(T(rand(2, 3)), 2)
    xg = T(rand(2, 4, 3), grad=True)
    assert gradcheck(lambda a: F.local_response_norm(a, 3, alpha=0.5, beta=0.7), (xg,))


# ------------------------------------------------------------------------------- gradients
def test_batch_norm_gradcheck_training():
    x = T(rand(3, 2, 4), grad=True)
    w = T(rand(2), grad=True)
    b = T(rand(2), grad=True)
    assert gradcheck(lambda a, ww, bb: F.batch_norm(a, None, None, ww, bb, training=True),
                     (x, w, b))
    y = F.batch_norm(x, None, None, w, b, training=True)
    assert y.grad_fn.name() == "NativeBatchNormBackward0"


def test_batch_norm_gradcheck_training_with_running_stats_and_2d():
    x = T(rand(5, 3), grad=True)
    w = T(rand(3), grad=True)

    def f(a, ww):
        rm, rv = T(np.zeros(3)), T(np.ones(3))
        return F.batch_norm(a, rm, rv, ww, None, training=True, momentum=0.3)

    assert gradcheck(f, (x, w))


def test_batch_norm_gradcheck_eval_and_non_contiguous():
    base = T(rand(4, 3, 2), grad=True)
    w = T(rand(3), grad=True)
    b = T(rand(3), grad=True)
    rm, rv = T(rand(3)), T(np.abs(rand(3)) + 0.5)
    assert gradcheck(lambda a, ww, bb: F.batch_norm(a, rm, rv, ww, bb, training=False),
                     (base, w, b))
    assert gradcheck(lambda a: F.batch_norm(a.transpose(0, 2), None, None, training=True),
                     (T(rand(3, 2, 4), grad=True),))


def test_layer_norm_gradcheck():
    x = T(rand(3, 2, 4), grad=True)
    w = T(rand(2, 4), grad=True)
    b = T(rand(2, 4), grad=True)
    assert gradcheck(lambda a, ww, bb: F.layer_norm(a, [2, 4], ww, bb), (x, w, b))
    assert gradcheck(lambda a: F.layer_norm(a.t(), [3]), (T(rand(3, 5), grad=True),))
    assert F.layer_norm(x, [4]).grad_fn.name() == "NativeLayerNormBackward0"
    # only the weight needs a gradient
    wq = T(rand(4), grad=True)
    xc = T(rand(2, 4))
    assert gradcheck(lambda ww: F.layer_norm(xc, [4], ww), (wq,))


def test_group_norm_gradcheck():
    x = T(rand(2, 4, 3), grad=True)
    w = T(rand(4), grad=True)
    b = T(rand(4), grad=True)
    assert gradcheck(lambda a, ww, bb: F.group_norm(a, 2, ww, bb), (x, w, b))
    assert gradcheck(lambda a: F.group_norm(a.transpose(2, 3), 3),
                     (T(rand(2, 3, 2, 3), grad=True),))
    assert F.group_norm(x, 2).grad_fn.name() == "NativeGroupNormBackward0"


def test_rms_norm_and_instance_norm_gradcheck():
    x = T(rand(3, 5), grad=True)
    w = T(rand(5), grad=True)
    assert gradcheck(lambda a, ww: F.rms_norm(a, [5], ww, 1e-3), (x, w))
    assert gradcheck(lambda a: F.rms_norm(a, [3, 5]), (T(rand(2, 3, 5), grad=True),))
    xi = T(rand(2, 3, 4), grad=True)
    wi = T(rand(3), grad=True)
    bi = T(rand(3), grad=True)
    assert gradcheck(lambda a, ww, bb: F.instance_norm(a, weight=ww, bias=bb), (xi, wi, bi))


def test_grad_float32_matches_float64():
    x = rand(4, 3, 5)
    g = rand(4, 3, 5)
    outs = []
    for npdt in (np.float32, np.float64):
        xt = T(x.astype(npdt), grad=True)
        w = T(np.linspace(0.5, 1.5, 3).astype(npdt), grad=True)
        (F.batch_norm(xt, None, None, w, None, training=True) * T(g.astype(npdt))).sum().backward()
        outs.append((xt.grad.numpy(), w.grad.numpy()))
        assert xt.grad.dtype == xt.dtype
    np.testing.assert_allclose(outs[0][0], outs[1][0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=1e-4, atol=1e-5)


def test_torch_comparison():
    torch = pytest.importorskip("torch")
    x = rand(4, 3, 5)
    w, b = rand(3), rand(3)
    ours = F.group_norm(T(x), 3, T(w), T(b))
    ref = torch.nn.functional.group_norm(torch.from_numpy(x), 3, torch.from_numpy(w),
                                         torch.from_numpy(b))
    np.testing.assert_allclose(N(ours), ref.numpy(), rtol=1e-10, atol=1e-10)


# ------------------------------------------------------------------ fused cross entropy
def _ce_python(monkeypatch, *args, **kwargs):
    with monkeypatch.context() as m:
        m.setattr(F, "_fused_cross_entropy_ok", lambda *a: False)
        return F.cross_entropy(*args, **kwargs)


@pytest.mark.parametrize("shape", [(5, 4), (3, 4, 2), (2, 3, 2, 3), (4,)])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ls", [0.0, 0.2])
def test_fused_cross_entropy_matches_python_path(monkeypatch, shape, reduction, weighted, ls):
    c = shape[0] if len(shape) == 1 else shape[1]
    tshape = () if len(shape) == 1 else (shape[0],) + shape[2:]
    x = rand(*shape, scale=2.0)
    tgt = RNG.integers(0, c, size=tshape).astype(np.int64)
    if len(shape) > 1:
        tgt.flat[0] = 1  # ignored below
    else:
        tgt = np.array(2, dtype=np.int64)
    w = np.abs(rand(c)) + 0.1 if weighted else None
    res = []
    gout = rand(*(tshape if reduction == "none" else ()))
    for fused in (True, False):
        xt = T(x, grad=True)
        args = (xt, ft.from_numpy(np.array(tgt)))
        kw = dict(weight=None if w is None else T(w), reduction=reduction, ignore_index=1,
                  label_smoothing=ls)
        out = F.cross_entropy(*args, **kw) if fused else _ce_python(monkeypatch, *args, **kw)
        if fused:
            assert out.grad_fn.name() == "CrossEntropyLossBackward0"
        (out * T(gout)).sum().backward()
        res.append((N(out), xt.grad.numpy()))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-9, atol=1e-12)


def test_fused_cross_entropy_float32_noncontig_gradcheck_and_errors(monkeypatch):
    base = rand(4, 6, dtype=np.float32)
    x = T(base).t()  # (6, 4), not contiguous
    tgt = ft.from_numpy(RNG.integers(0, 4, size=6).astype(np.int64))
    ours = F.cross_entropy(x, tgt)
    ref = _ce_python(monkeypatch, x, tgt)
    assert ours.dtype == ft.float32
    np.testing.assert_allclose(ours.item(), ref.item(), rtol=1e-5)
    xg = T(rand(3, 4, 2), grad=True)
    tg = ft.from_numpy(np.array([[0, 3], [2, -100], [1, 1]], dtype=np.int64))
    w = T(np.abs(rand(4)) + 0.1)
    assert gradcheck(lambda a: F.cross_entropy(a, tg, weight=w, label_smoothing=0.1), (xg,))
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        F.cross_entropy(T(rand(2, 4)), ft.from_numpy(np.array([0, 7], dtype=np.int64)))
    # everything ignored: mean is nan as in PyTorch
    allign = F.cross_entropy(T(rand(2, 3)), ft.from_numpy(np.array([-100, -100])))
    assert np.isnan(allign.item())


def test_large_inputs_take_the_parallel_paths(monkeypatch):
    # Sizes above PAR_THRESHOLD (2**15 elements) so rayon splits the work.
    x = rand(8, 4, 48, 48, dtype=np.float32, shift=0.5)
    ey, _, _ = np_batch_norm(x, None, None, None, None, True, 0.1, 1e-5)
    np.testing.assert_allclose(N(F.batch_norm(T(x), None, None, training=True)), ey,
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(N(F.group_norm(T(x), 2)), np_group_norm(x, 2, None, None, 1e-5),
                               rtol=1e-4, atol=1e-4)
    xl = rand(600, 128)
    wl = rand(128)
    xt = T(xl, grad=True)
    wt = T(wl, grad=True)
    y = F.layer_norm(xt, [128], wt)
    np.testing.assert_allclose(N(y), np_layer_norm(xl, 1, wl, None, 1e-5), rtol=1e-10,
                               atol=1e-10)
    g = rand(600, 128)
    (y * T(g)).sum().backward()
    xhat = np_layer_norm(xl, 1, None, None, 1e-5)
    np.testing.assert_allclose(wt.grad.numpy(), (g * xhat).sum(0), rtol=1e-9, atol=1e-9)
    gw = g * wl
    rstd = 1 / np.sqrt(xl.var(1, keepdims=True) + 1e-5)
    edx = rstd * (gw - gw.mean(1, keepdims=True) - xhat * (gw * xhat).mean(1, keepdims=True))
    np.testing.assert_allclose(xt.grad.numpy(), edx, rtol=1e-9, atol=1e-9)
    logits = T(rand(1000, 40))
    tg = ft.from_numpy(RNG.integers(0, 40, size=1000).astype(np.int64))
    np.testing.assert_allclose(F.cross_entropy(logits, tg).item(),
                               _ce_python(monkeypatch, logits, tg).item(), rtol=1e-12)


def test_norm_layers_bias_false():
    # PyTorch 2.13's keyword-only ``bias``: a learnable scale without a shift
    x = ft.randn(4, 6, 3, 3, dtype=ft.float64)
    for m, ref in [
        (nn.BatchNorm2d(6, bias=False, dtype=ft.float64),
         lambda m: F.batch_norm(x, None, None, m.weight, None, True)),
        (nn.InstanceNorm2d(6, affine=True, bias=False, dtype=ft.float64),
         lambda m: F.instance_norm(x, weight=m.weight, bias=None)),
        (nn.GroupNorm(3, 6, bias=False, dtype=ft.float64),
         lambda m: F.group_norm(x, 3, m.weight, None)),
    ]:
        assert [n for n, _ in m.named_parameters()] == ["weight"]
        assert m.bias is None and "bias=False" in repr(m)
        with ft.no_grad():
            m.weight.uniform_(0.5, 1.5)
        assert ft.allclose(m(x), ref(m))
    assert "affine=False, bias=False" in repr(nn.BatchNorm1d(3, affine=False))
    with pytest.warns(UserWarning, match="Lazy modules"):
        lazy = nn.LazyBatchNorm1d(bias=False)
    lazy(ft.randn(5, 3))
    assert type(lazy) is nn.BatchNorm1d and lazy.bias is None and lazy.weight.shape == (3,)
