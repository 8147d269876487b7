"""nn layers on CUDA tensors (the kernels of cuda_kernels/nn.cu launched from src/cuda/nn_ops.rs).

Every GPU test runs the same op on the CPU (tested against NumPy elsewhere) and on the GPU and
compares values and gradients: cross entropy / nll, convolutions, pooling, batch and layer
norm, embedding backward, and a few training steps of a small CNN. Without a GPU they skip.
"""

import numpy as np
import pytest

import ferrotorch as torch
import ferrotorch.nn.functional as F

HAS_CUDA = torch.cuda.is_available()
NO_GPU_REASON = "no CUDA device: " + str(torch._C._cuda_unavailable_reason())
needs_gpu = pytest.mark.skipif(not HAS_CUDA, reason=NO_GPU_REASON)
pytestmark = [pytest.mark.cuda, needs_gpu]

FLOATS = [torch.float32, torch.float64]
HALFS = [torch.float16, torch.bfloat16]


def cpu_np(t):
    t = t.detach().cpu()
    return (t.float() if t.dtype in (torch.bfloat16, torch.float16) else t).numpy()


def tol(dtype):
    if dtype == torch.float64:
        return {"rtol": 1e-10, "atol": 1e-10}
    if dtype == torch.float32:
        return {"rtol": 1e-4, "atol": 1e-5}
    if dtype == torch.float16:
        return {"rtol": 2e-2, "atol": 2e-2}
    return {"rtol": 8e-2, "atol": 8e-2}  # bfloat16


def rand(rng, shape, dtype, lo=-1.0, hi=1.0):
    return torch.from_numpy(rng.uniform(lo, hi, shape)).to(dtype)


def leaf(t, device):
    t = t.detach().to(device).clone()
    t.requires_grad_(True)
    return t


def compare(fn, inputs, dtype, grad_of=None, upstream_seed=1, **kw):
    """Run ``fn`` on CPU and GPU copies of ``inputs`` (CPU tensors, or None); compare the
    outputs and the gradients of ``sum(out * g)`` w.r.t. the inputs listed in ``grad_of``
    (all float inputs by default)."""
    t = dict(tol(dtype), **kw)
    if grad_of is None:
        grad_of = [i for i, x in enumerate(inputs) if x is not None and x.is_floating_point()]
    cpu = [None if x is None else (leaf(x, "cpu") if i in grad_of else x)
           for i, x in enumerate(inputs)]
    gpu = [None if x is None else (leaf(x, "cuda") if i in grad_of else x.cuda())
           for i, x in enumerate(inputs)]
    out_c = fn(*cpu)
    out_g = fn(*gpu)
    assert out_g.is_cuda and out_g.dtype == out_c.dtype and out_g.shape == out_c.shape
    np.testing.assert_allclose(cpu_np(out_g), cpu_np(out_c), **t)
    if grad_of:
        rng = np.random.default_rng(upstream_seed)
        up = torch.from_numpy(rng.uniform(-1, 1, tuple(out_c.shape))).to(out_c.dtype)
        (out_c * up).sum().backward()
        (out_g * up.cuda()).sum().backward()
        for i in grad_of:
            gc, gg = cpu[i].grad, gpu[i].grad
            assert gg is not None and gg.is_cuda, f"input {i} got no CUDA gradient"
            assert gg.shape == gc.shape and gg.dtype == gc.dtype
            np.testing.assert_allclose(cpu_np(gg), cpu_np(gc), **t)
    return out_c, out_g


# ----------------------------------------------------------------------------- cross entropy

@pytest.mark.parametrize("dtype", FLOATS + HALFS, ids=str)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_2d(dtype, reduction):
    rng = np.random.default_rng(0)
    x = rand(rng, (7, 5), dtype, -3, 3)
    t = torch.from_numpy(rng.integers(0, 5, 7))
    compare(lambda a, b: F.cross_entropy(a, b, reduction=reduction), [x, t], dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_spatial_weight_ignore_smoothing(dtype, reduction):
    rng = np.random.default_rng(1)
    x = rand(rng, (3, 4, 2, 5), dtype, -2, 2)  # (N, C, H, W): the class dim is not last
    tn = rng.integers(0, 4, (3, 2, 5))
    tn[0, 1, 2] = -100
    tn[2, 0, 0] = -100
    t = torch.from_numpy(tn)
    w = torch.from_numpy(rng.uniform(0.5, 2.0, 4)).to(dtype)
    for ls in (0.0, 0.2):
        compare(lambda a, b, c: F.cross_entropy(a, b, weight=c, reduction=reduction,
                                                label_smoothing=ls),  # noqa: B023
                [x, t, w], dtype, grad_of=[0])
    t1 = torch.from_numpy(np.where(tn == -100, 1, tn))
    compare(lambda a, b: F.cross_entropy(a, b, ignore_index=1, reduction=reduction), [x, t1], dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_cross_entropy_noncontiguous_unbatched_and_module(dtype):
    rng = np.random.default_rng(2)
    x = rand(rng, (6, 9), dtype, -2, 2)
    t = torch.from_numpy(rng.integers(0, 6, 9))
    # (9, 6) transposed view; stepped rows
    compare(lambda a, b: F.cross_entropy(a.t(), b), [x, t], dtype)
    compare(lambda a, b: F.cross_entropy(a.t()[::2], b[::2], label_smoothing=0.1), [x, t], dtype)
    # (N, C, L) whose class dim is strided
    compare(lambda a, b: F.cross_entropy(a.t().reshape(3, 3, 6).transpose(1, 2), b.reshape(3, 3)),
            [x, t], dtype)
    # unbatched (C,) logits with a 0-d target
    compare(lambda a, b: F.cross_entropy(a, b), [rand(rng, (5,), dtype), torch.tensor(3)], dtype)
    loss = torch.nn.CrossEntropyLoss(ignore_index=0)
    compare(lambda a, b: loss(a.t(), b), [x, t], dtype)


def test_cross_entropy_all_ignored_and_empty():
    x = torch.randn(3, 4)
    t = torch.full((3,), -100, dtype=torch.int64)
    got = F.cross_entropy(x.cuda(), t.cuda())
    assert np.isnan(got.item()) and np.isnan(F.cross_entropy(x, t).item())
    assert F.cross_entropy(x.cuda(), t.cuda(), reduction="sum").item() == 0.0
    e = F.cross_entropy(torch.zeros(0, 4, device="cuda"), torch.zeros(0, dtype=torch.int64,
                                                                      device="cuda"),
                        reduction="none")
    assert e.is_cuda and tuple(e.shape) == (0,)


def test_cross_entropy_errors():
    x = torch.randn(3, 4, device="cuda")
    with pytest.raises(IndexError, match="Target 4 is out of bounds"):
        F.cross_entropy(x, torch.tensor([0, 4, 1], device="cuda"))
    with pytest.raises(IndexError, match="out of bounds"):
        F.cross_entropy(x, torch.tensor([0, -3, 1], device="cuda"))
    with pytest.raises(RuntimeError, match="same device"):
        F.cross_entropy(x, torch.tensor([0, 1, 1]))
    with pytest.raises(RuntimeError, match="same device"):
        F.cross_entropy(x, torch.tensor([0, 1, 1], device="cuda"), weight=torch.ones(4))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_nll_loss_on_log_softmax(dtype):
    rng = np.random.default_rng(3)
    x = rand(rng, (5, 6), dtype, -2, 2)
    tn = rng.integers(0, 6, 5)
    tn[1] = -100
    t = torch.from_numpy(tn)
    w = torch.from_numpy(rng.uniform(0.5, 2.0, 6)).to(dtype)
    for red in ("mean", "sum", "none"):
        compare(lambda a, b, c: F.nll_loss(F.log_softmax(a, 1), b, weight=c, reduction=red),  # noqa: B023
                [x, t, w], dtype, grad_of=[0])


# ----------------------------------------------------------------------------- convolution

CONV_CASES = [
    # (N, C, H, W), (O, kh, kw), stride, padding, dilation, groups
    ((2, 3, 7, 6), (4, 3, 3), 1, 1, 1, 1),
    ((2, 4, 9, 8), (6, 3, 2), (2, 1), (1, 0), (1, 2), 2),
    ((1, 4, 6, 6), (4, 3, 3), 2, 1, 1, 4),  # depthwise
    ((3, 2, 5, 5), (3, 1, 1), 1, 0, 1, 1),  # pointwise
    ((2, 3, 5, 7), (2, 2, 3), 3, (0, 2), 2, 1),
    ((2, 3, 6, 6), (5, 3, 3), 1, "same", 2, 1),
]


@pytest.mark.parametrize("case", CONV_CASES, ids=[str(i) for i in range(len(CONV_CASES))])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d(case, dtype, bias):
    (n, c, h, w), (o, kh, kw), stride, padding, dilation, groups = case
    rng = np.random.default_rng(4)
    x = rand(rng, (n, c, h, w), dtype)
    wt = rand(rng, (o, c // groups, kh, kw), dtype)
    b = rand(rng, (o,), dtype) if bias else None
    compare(lambda a, ww, bb: F.conv2d(a, ww, bb, stride, padding, dilation, groups),
            [x, wt, b], dtype)


@pytest.mark.parametrize("dtype", HALFS, ids=str)
def test_conv2d_half(dtype):
    rng = np.random.default_rng(5)
    x = rand(rng, (2, 4, 6, 5), dtype)
    wt = rand(rng, (6, 2, 3, 3), dtype)
    b = rand(rng, (6,), dtype)
    compare(lambda a, ww, bb: F.conv2d(a, ww, bb, 1, 1, 1, 2), [x, wt, b], dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_conv2d_noncontiguous_unbatched_and_sum_grad(dtype):
    rng = np.random.default_rng(6)
    base = rand(rng, (2, 8, 6, 3), dtype)
    wbase = rand(rng, (3, 4, 2, 2), dtype)
    # input (2, 3, 3, 8) permuted and stepped, weight (4, 3, 2, 2) transposed
    compare(lambda a, ww: F.conv2d(a.permute(0, 3, 2, 1)[:, :, ::2], ww.transpose(0, 1), None, 1, 1),
            [base, wbase], dtype)
    x = base.permute(0, 3, 2, 1)[:, :, ::2]
    wt = wbase.transpose(0, 1)
    # unbatched input, gradient of sum() (an expanded constant)
    xc, xg = leaf(x[0], "cpu"), leaf(x[0], "cuda")
    wc, wg = leaf(wt, "cpu"), leaf(wt, "cuda")
    F.conv2d(xc, wc, padding=1).sum().backward()
    yg = F.conv2d(xg, wg, padding=1)
    assert yg.is_cuda and yg.ndim == 3
    yg.sum().backward()
    np.testing.assert_allclose(cpu_np(xg.grad), cpu_np(xc.grad), **tol(dtype))
    np.testing.assert_allclose(cpu_np(wg.grad), cpu_np(wc.grad), **tol(dtype))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_conv1d_and_transposed(dtype):
    rng = np.random.default_rng(7)
    x1 = rand(rng, (2, 4, 11), dtype)
    w1 = rand(rng, (6, 2, 3), dtype)
    b1 = rand(rng, (6,), dtype)
    compare(lambda a, ww, bb: F.conv1d(a, ww, bb, 2, 1, 2, 2), [x1, w1, b1], dtype)
    x2 = rand(rng, (2, 4, 5, 4), dtype)
    w2 = rand(rng, (4, 3, 3, 2), dtype)  # (C_in, C_out/groups, kh, kw)
    b2 = rand(rng, (3,), dtype)
    compare(lambda a, ww, bb: F.conv_transpose2d(a, ww, bb, 2, 1, 1), [x2, w2, b2], dtype)
    w3 = rand(rng, (4, 2, 3, 3), dtype)
    compare(lambda a, ww: F.conv_transpose2d(a, ww, None, 1, 0, 0, 2), [x2, w3], dtype)


def test_conv_modules_and_device_mismatch():
    torch.manual_seed(0)
    m = torch.nn.Conv2d(3, 5, 3, padding=1)
    x = torch.randn(2, 3, 8, 8)
    want = m(x)
    mg = torch.nn.Conv2d(3, 5, 3, padding=1)
    mg.load_state_dict(m.state_dict())
    mg = mg.cuda()
    got = mg(x.cuda())
    np.testing.assert_allclose(cpu_np(got), cpu_np(want), rtol=1e-4, atol=1e-5)
    with pytest.raises(RuntimeError, match="same device"):
        F.conv2d(x.cuda(), m.weight)
    with pytest.raises(RuntimeError, match="same device"):
        F.conv2d(x, mg.weight)


# ----------------------------------------------------------------------------- pooling

POOL_CASES = [
    # kernel, stride, padding, dilation, ceil_mode
    (2, None, 0, 1, False),
    (3, 2, 1, 1, False),
    (3, 2, 1, 1, True),
    ((2, 3), (1, 2), (1, 1), (2, 1), False),
    (3, 3, 0, 1, True),
]


@pytest.mark.parametrize("case", POOL_CASES, ids=[str(i) for i in range(len(POOL_CASES))])
@pytest.mark.parametrize("dtype", FLOATS + HALFS, ids=str)
def test_max_pool2d(case, dtype):
    k, s, p, d, ceil = case
    rng = np.random.default_rng(8)
    x = rand(rng, (2, 3, 9, 8), dtype)
    compare(lambda a: F.max_pool2d(a, k, s, p, d, ceil), [x], dtype)
    xg = x.cuda()
    vg, ig = F.max_pool2d(xg, k, s, p, d, ceil, return_indices=True)
    vc, ic = F.max_pool2d(x, k, s, p, d, ceil, return_indices=True)
    assert ig.dtype == torch.int64 and ig.is_cuda
    np.testing.assert_array_equal(ig.cpu().numpy(), ic.numpy())


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_max_pool_noncontiguous_1d_and_double_backward(dtype):
    rng = np.random.default_rng(9)
    base = rand(rng, (3, 7, 8, 2), dtype)
    nc = lambda a: a.permute(3, 0, 2, 1)  # noqa: E731  (2, 3, 8, 7), non-contiguous
    compare(lambda a: F.max_pool2d(nc(a), 2, 2), [base], dtype)
    compare(lambda a: F.max_pool1d(nc(a)[:, 0], 3, 2, 1), [base], dtype)
    compare(lambda a: F.max_pool2d(nc(a)[0], 3, 1, 1), [base], dtype)  # unbatched
    x = nc(base)
    # gradient of a gradient (the adjoint gathers at the saved indices)
    res = []
    for dev in ("cpu", "cuda"):
        a = leaf(x, dev)
        y = F.max_pool2d(a, 2, 2)
        (g,) = torch.autograd.grad((y * y).sum(), a, create_graph=True)
        (gg,) = torch.autograd.grad((g * g).sum(), a)
        res.append((cpu_np(g), cpu_np(gg)))
    np.testing.assert_allclose(res[1][0], res[0][0], **tol(dtype))
    np.testing.assert_allclose(res[1][1], res[0][1], **tol(dtype))


@pytest.mark.parametrize("dtype", FLOATS + HALFS, ids=str)
@pytest.mark.parametrize("cip", [True, False])
def test_avg_pool2d(dtype, cip):
    rng = np.random.default_rng(10)
    x = rand(rng, (2, 3, 9, 7), dtype)
    compare(lambda a: F.avg_pool2d(a, 3, 2, 1, False, cip), [x], dtype)
    compare(lambda a: F.avg_pool2d(a, (2, 3), (2, 2), (1, 1), True, cip), [x], dtype)
    compare(lambda a: F.avg_pool2d(a, 2, divisor_override=3), [x], dtype)
    compare(lambda a: F.avg_pool1d(a[:, 0], 3, 2, 1, True, cip), [x], dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_adaptive_pools(dtype):
    rng = np.random.default_rng(11)
    x = rand(rng, (2, 3, 8, 6), dtype)
    compare(lambda a: F.adaptive_avg_pool2d(a, (4, 3)), [x], dtype)
    compare(lambda a: F.adaptive_avg_pool2d(a, 1), [x], dtype)
    compare(lambda a: F.adaptive_max_pool2d(a, (2, 3)), [x], dtype)
    compare(lambda a: torch.nn.AdaptiveAvgPool2d((1, 1))(a.transpose(2, 3)), [x], dtype)
    # bins of different sizes (separable averaging matrices)
    compare(lambda a: F.adaptive_avg_pool2d(a, (3, 4)), [x], dtype)
    compare(lambda a: F.adaptive_avg_pool2d(a[0], (5, 7)), [x], dtype)
    compare(lambda a: F.adaptive_avg_pool1d(a[:, 0], 4), [x], dtype)
    # bins of different sizes: composed in Python on CUDA (see test_cuda_python_ops.py)
    compare(lambda a: F.adaptive_max_pool2d(a, (3, 4)), [x], dtype)


# ----------------------------------------------------------------------------- normalisation

@pytest.mark.parametrize("dtype", FLOATS + HALFS, ids=str)
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_train_and_running_stats(dtype, affine):
    rng = np.random.default_rng(12)
    x = rand(rng, (4, 3, 5, 2), dtype, -2, 3)
    w = rand(rng, (3,), dtype, 0.5, 1.5) if affine else None
    b = rand(rng, (3,), dtype) if affine else None
    rm_c, rv_c = torch.zeros(3, dtype=dtype), torch.ones(3, dtype=dtype)
    rm_g, rv_g = rm_c.cuda(), rv_c.cuda()

    def fn(a, ww, bb):
        rm, rv = (rm_g, rv_g) if a.is_cuda else (rm_c, rv_c)
        return F.batch_norm(a, rm, rv, ww, bb, training=True, momentum=0.3, eps=1e-5)

    compare(fn, [x, w, b], dtype)
    np.testing.assert_allclose(cpu_np(rm_g), cpu_np(rm_c), **tol(dtype))
    np.testing.assert_allclose(cpu_np(rv_g), cpu_np(rv_c), **tol(dtype))
    assert rm_g.is_cuda and rv_g.is_cuda


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_batch_norm_eval_noncontiguous_and_module(dtype):
    rng = np.random.default_rng(13)
    base = rand(rng, (3, 5, 4, 4), dtype)
    nc = lambda a: a.transpose(2, 3)[:, :, ::2]  # noqa: E731
    x = nc(base)
    rm = rand(rng, (5,), dtype)
    rv = rand(rng, (5,), dtype, 0.5, 2.0)
    w = rand(rng, (5,), dtype)
    b = rand(rng, (5,), dtype)

    def fn(a, ww, bb):
        dev = "cuda" if a.is_cuda else "cpu"
        return F.batch_norm(a, rm.to(dev), rv.to(dev), ww, bb, training=False, eps=1e-3)

    compare(lambda a, ww, bb: fn(nc(a), ww, bb), [base, w, b], dtype)
    # non-contiguous input in training mode, 1-d (N, C) input
    compare(lambda a, ww, bb: F.batch_norm(nc(a), None, None, ww, bb, training=True),
            [base, w, b], dtype)
    compare(lambda a: F.batch_norm(nc(a)[:, :, 0, 0], None, None, None, None, training=True),
            [base], dtype)
    torch.manual_seed(0)
    m = torch.nn.BatchNorm2d(5).to(dtype)
    mg = torch.nn.BatchNorm2d(5).to(dtype).cuda()
    for _ in range(2):
        xc = rand(rng, (4, 5, 3, 3), dtype)
        np.testing.assert_allclose(cpu_np(mg(xc.cuda())), cpu_np(m(xc)), **tol(dtype))
    np.testing.assert_allclose(cpu_np(mg.running_var), cpu_np(m.running_var), **tol(dtype))
    m.eval()
    mg.eval()
    np.testing.assert_allclose(cpu_np(mg(xc.cuda())), cpu_np(m(xc)), **tol(dtype))
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        F.batch_norm(torch.ones(1, 5, device="cuda"), None, None, training=True)
    with pytest.raises(RuntimeError, match="same device"):
        F.batch_norm(x.cuda(), rm, rv, training=False)


@pytest.mark.parametrize("dtype", FLOATS + HALFS, ids=str)
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm(dtype, affine):
    rng = np.random.default_rng(14)
    x = rand(rng, (3, 4, 6), dtype, -2, 2)
    w = rand(rng, (4, 6), dtype, 0.5, 1.5) if affine else None
    b = rand(rng, (4, 6), dtype) if affine else None
    compare(lambda a, ww, bb: F.layer_norm(a, (4, 6), ww, bb, 1e-5), [x, w, b], dtype)
    w1 = rand(rng, (3,), dtype) if affine else None
    compare(lambda a, ww: F.layer_norm(a.transpose(0, 2), (3,), ww), [x, w1], dtype)


def test_layer_norm_module_stats_and_errors():
    torch.manual_seed(0)
    m = torch.nn.LayerNorm(300)  # more columns than threads per block
    x = torch.randn(5, 300) * 3 + 1
    mg = torch.nn.LayerNorm(300).cuda()
    np.testing.assert_allclose(cpu_np(mg(x.cuda())), cpu_np(m(x)), rtol=1e-4, atol=1e-4)
    out, mean, rstd = torch._C.native_layer_norm(x.cuda(), [300], None, None, 1e-5)
    _, mean_c, rstd_c = torch._C.native_layer_norm(x, [300], None, None, 1e-5)
    assert tuple(mean.shape) == (5, 1) and mean.is_cuda
    np.testing.assert_allclose(cpu_np(mean), cpu_np(mean_c), rtol=1e-5)
    np.testing.assert_allclose(cpu_np(rstd), cpu_np(rstd_c), rtol=1e-4)
    with pytest.raises(RuntimeError, match="normalized_shape"):
        F.layer_norm(x.cuda(), (4,))

@pytest.mark.cuda
@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_rms_norm_forward_backward(dtype):
    dt = getattr(torch, dtype)
    x = torch.randn(6, 4, 300).to(dt)
    w = torch.randn(300).to(dt)
    tol = 3e-2 if dt == torch.bfloat16 else 1e-4
    for shape, weight in [((300,), w), ((4, 300), None)]:
        xc = x.clone().requires_grad_()
        xg = x.cuda().requires_grad_()
        wc = weight.clone().requires_grad_() if weight is not None else None
        wg = weight.cuda().requires_grad_() if weight is not None else None
        want = F.rms_norm(xc, shape, wc, eps=1e-6)
        got = F.rms_norm(xg, shape, wg, eps=1e-6)
        assert got.is_cuda and got.dtype == dt
        np.testing.assert_allclose(cpu_np(got), cpu_np(want), rtol=tol, atol=tol)
        gy = torch.randn(*x.shape).to(dt)
        (want * gy).sum().backward()
        (got * gy.cuda()).sum().backward()
        np.testing.assert_allclose(cpu_np(xg.grad), cpu_np(xc.grad), rtol=tol, atol=tol)
        if weight is not None:
            np.testing.assert_allclose(cpu_np(wg.grad), cpu_np(wc.grad), rtol=tol, atol=tol * 10)
    m = torch.nn.RMSNorm(300).cuda() if hasattr(torch.nn, "RMSNorm") else None
    if m is not None:
        assert m(x.cuda().float()).is_cuda


# ----------------------------------------------------------------------------- embedding

@pytest.mark.parametrize("dtype", FLOATS + [torch.float16], ids=str)
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_backward(dtype, padding_idx):
    rng = np.random.default_rng(15)
    w = rand(rng, (6, 5), dtype)
    ids = torch.tensor([[1, 2, 1], [5, 2, 0]])
    compare(lambda ww, i: F.embedding(i, ww, padding_idx=padding_idx), [w, ids], dtype)
    emb = torch.nn.Embedding(6, 5, padding_idx=padding_idx).cuda()
    emb(ids.cuda()).sum().backward()
    g = emb.weight.grad
    assert g.is_cuda
    counts = np.bincount(ids.numpy().ravel(), minlength=6).astype(np.float64)
    if padding_idx is not None:
        counts[padding_idx] = 0
    np.testing.assert_allclose(cpu_np(g), np.repeat(counts[:, None], 5, 1))


# ----------------------------------------------------------------------------- training

class SmallCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=2)
        self.ln = torch.nn.LayerNorm(8)
        self.fc = torch.nn.Linear(8, 5)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.avg_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(self.ln(x.flatten(1)))


def test_small_cnn_training_matches_cpu():
    torch.manual_seed(0)
    cpu = SmallCNN()
    gpu = SmallCNN()
    gpu.load_state_dict(cpu.state_dict())
    gpu = gpu.cuda()
    rng = np.random.default_rng(16)
    x = torch.from_numpy(rng.standard_normal((6, 3, 8, 8))).float()
    y = torch.from_numpy(rng.integers(0, 5, 6))
    xg, yg = x.cuda(), y.cuda()
    lr = 0.1
    losses = []
    for model, xx, yy in ((cpu, x, y), (gpu, xg, yg)):
        ls = []
        for _ in range(4):
            for p in model.parameters():
                p.grad = None
            loss = F.cross_entropy(model(xx), yy)
            loss.backward()
            with torch.no_grad():
                for p in model.parameters():
                    p.sub_(p.grad * lr)
            ls.append(loss.item())
        losses.append(ls)
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-4, atol=1e-5)
    assert losses[0][-1] < losses[0][0]
    for (name, pc), pg in zip(cpu.named_parameters(), gpu.parameters()):
        assert pg.is_cuda
        np.testing.assert_allclose(cpu_np(pg), cpu_np(pc), rtol=1e-3, atol=1e-4, err_msg=name)
    np.testing.assert_allclose(cpu_np(gpu.bn1.running_mean), cpu_np(cpu.bn1.running_mean),
                               rtol=1e-4, atol=1e-5)


@pytest.mark.cuda
@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("shape,groups", [((4, 6, 5, 3), 3), ((3, 8), 2), ((2, 4, 7), 4), ((0, 4, 3), 2)])
def test_group_norm_forward_backward(dtype, shape, groups):
    dt = getattr(torch, dtype)
    rng = np.random.default_rng(0)
    c = shape[1]
    x = torch.from_numpy(rng.standard_normal(shape) * 3 + 1).to(dt)
    w = torch.from_numpy(rng.standard_normal(c)).to(dt)
    b = torch.from_numpy(rng.standard_normal(c)).to(dt)
    tol = 2e-2 if dt == torch.float16 else 1e-4
    for affine in (True, False):
        leaves_c = [x.clone().requires_grad_()] + (
            [w.clone().requires_grad_(), b.clone().requires_grad_()] if affine else [None, None]
        )
        leaves_g = [x.cuda().requires_grad_()] + (
            [w.cuda().requires_grad_(), b.cuda().requires_grad_()] if affine else [None, None]
        )
        want = F.group_norm(leaves_c[0], groups, leaves_c[1], leaves_c[2])
        got = F.group_norm(leaves_g[0], groups, leaves_g[1], leaves_g[2])
        assert got.is_cuda and got.dtype == dt
        np.testing.assert_allclose(cpu_np(got), cpu_np(want), rtol=tol, atol=tol)
        gy = torch.from_numpy(rng.standard_normal(shape)).to(dt)
        (want * gy).sum().backward()
        (got * gy.cuda()).sum().backward()
        for lc, lg in zip(leaves_c, leaves_g):
            if lc is not None:
                np.testing.assert_allclose(cpu_np(lg.grad), cpu_np(lc.grad), rtol=tol, atol=tol * 5)
    m = torch.nn.GroupNorm(groups, c).to(dt)
    mg = torch.nn.GroupNorm(groups, c).to(dt).cuda()
    np.testing.assert_allclose(cpu_np(mg(x.cuda())), cpu_np(m(x)), rtol=tol, atol=tol)
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        F.group_norm(x.cuda(), 5 if c % 5 else 7)
    assert "group_norm" not in torch._C._cuda_host_fallback_ops()
