"""CUDA sort/topk/kthvalue (sort.cu), scans (cumsum/cumprod/cummax/cummin), the unary kernels
added with them, all/any/count_nonzero and vector norms composed of device kernels, and the
host fallback for ops without a kernel. Each op runs on the GPU and on the CPU (tested against
NumPy elsewhere) and values, indices and gradients must agree; results must stay on the GPU.

Needs an NVIDIA GPU (`pytest -m cuda`); skipped otherwise, except the last tests, which check
the fallback API and the CPU results of the same cases against NumPy.
"""

import numpy as np
import pytest

import ferrotorch as torch

HAS_CUDA = torch.cuda.is_available()
NO_GPU_REASON = "no CUDA device: " + str(torch._C._cuda_unavailable_reason())

ALL_DTYPES = [
    torch.float32,
    torch.float64,
    torch.float16,
    torch.bfloat16,
    torch.int64,
    torch.int32,
    torch.int16,
    torch.int8,
    torch.uint8,
]


def npy(t):
    t = t.detach().cpu()
    return (t.float() if t.dtype in (torch.bfloat16, torch.float16) else t).numpy()


def data(shape, dtype, seed=0, ties=False):
    rng = np.random.default_rng(seed)
    if dtype.is_floating_point and not ties:
        a = rng.standard_normal(shape) * 10
    else:
        a = rng.integers(0, 7 if ties else 100, shape)
    return torch.from_numpy(np.asarray(a)).to(dtype)


def on_gpu(t):
    assert t.device.type == "cuda", t.device
    return t


# ----------------------------------------------------------------------------- sort family
SHAPES_DIMS = [
    ((7,), 0),
    ((4, 9), 1),
    ((4, 9), 0),
    ((3, 5, 6), 1),
    ((2, 3000), 1),
    ((2, 5000), -1),
    ((3, 0), 1),
    ((1, 1), 1),
    ((), 0),
]


@pytest.mark.cuda
@pytest.mark.skipif(not HAS_CUDA, reason=NO_GPU_REASON)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape,dim", SHAPES_DIMS)
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("ties", [False, True])
def test_sort_matches_cpu(dtype, shape, dim, descending, ties):
    x = data(shape, dtype, ties=ties)
    v, i = torch.sort(x, dim=dim, descending=descending)
    gv, gi = torch.sort(x.cuda(), dim=dim, descending=descending)
    np.testing.assert_array_equal(npy(on_gpu(gv)), npy(v))
    np.testing.assert_array_equal(npy(on_gpu(gi)), npy(i))  # stable: ties keep their order


@pytest.mark.cuda
@pytest.mark.skipif(not HAS_CUDA, reason=NO_GPU_REASON)
def test_sort_nan_and_noncontiguous():
    a = np.random.default_rng(1).standard_normal((6, 40)).astype(np.float32)
    a[a > 1.2] = np.nan
    x = torch.from_numpy(a)
    for xv, gv in [(x, x.cuda()), (x.t(), x.cuda().t()), (x[:, ::3], x.cuda()[:, ::3])]:
        for desc in (False, True):
            v, i = torch.sort(xv, 1, descending=desc)
            g, gi = torch.sort(gv, 1, descending=desc)
            np.testing.assert_array_equal(npy(g), npy(v))
            np.testing.assert_array_equal(npy(gi), npy(i))


@pytest.mark.cuda
@pytest.mark.skipif(not HAS_CUDA, reason=NO_GPU_REASON)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bfloat16])
def test_topk_kthvalue_argsort_msort(dtype):
    x = data((5, 33), dtype, seed=2, ties=True)
    g = x.cuda()
    for k in (1, 5, 33, 0):
        for largest in (True, False):
            v, i = x.topk(k, 1, largest=largest)
            gv, gi = g.topk(k, 1, largest=largest)
            np.testing.assert_array_equal(npy(on_gpu(gv)), npy(v))
            np.testing.assert_array_equal(npy(gi), npy(i))
    for k in (1, 17, 33):
        for keepdim in (False, True):
            v, i = x.kthvalue(k, 1, keepdim=keepdim)
            gv, gi = g.kthvalue(k, 1, keepdim=keepdim)
            np.testing.assert_array_equal(npy(on_gpu(gv)), npy(v))
            np.testing.assert_array_equal(npy(gi), npy(i))
    np.testing.assert_array_equal(
        npy(g.argsort(0, descending=True)), npy(x.argsort(0, descending=True))
    )
    np.testing.assert_array_equal(npy(torch.msort(g)), npy(torch.msort(x)))
    with pytest.raises(RuntimeError, match="out of range"):
        g.topk(34, 1)


@pytest.mark.cuda
@pytest.mark.skipif(not HAS_CUDA, reason=NO_GPU_REASON)
def test_sort_topk_gradients():
    x = data((4, 50), torch.float64, seed=3)
    for f in (lambda t: t.sort(1)[0], lambda t: t.topk(7, 1)[0], lambda t: t.kthvalue(3, 1)[0]):
        a = x.clone().requires_grad_()
        b = x.cuda().requires_grad_()
        w = torch.from_numpy(np.random.default_rng(4).standard_normal(f(a).shape))
        (f(a) * w).sum().backward()
        (f(b) * w.cuda()).sum().backward()
        np.testing.assert_allclose(npy(b.grad), npy(a.grad))


# ----------------------------------------------------------------------------- scans
@pytest.mark.cuda
@pytest.mark.skipif(not HAS_CUDA, reason=NO_GPU_REASON)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize(
    "shape,dim",
    [((7,), 0), ((4, 9), 1), ((4, 9), 0), ((3, 5, 6), 1), ((2, 1000), 1), ((3, 0), 1), ((), 0)],
)
def test_cumsum_cumprod_cummax_cummin(dtype, shape, dim):
    x = data(shape, dtype, seed=5, ties=True)
    if dtype.is_floating_point:
        x = x / 4  # keep products finite
    g = x.cuda()
    rtol = {torch.float16: 2e-2, torch.bfloat16: 5e-2, torch.float32: 1e-5}.get(dtype, 1e-12)
    for name in ("cumsum", "cumprod"):
        want, got = getattr(x, name)(dim), on_gpu(getattr(g, name)(dim))
        assert got.dtype == want.dtype and tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(npy(got), npy(want), rtol=rtol, atol=rtol)
    for name in ("cummax", "cummin"):
        (v, i), (gv, gi) = getattr(x, name)(dim), getattr(g, name)(dim)
        np.testing.assert_array_equal(npy(on_gpu(gv)), npy(v))
        np.testing.assert_array_equal(npy(gi), npy(i))


@pytest.mark.cuda
@pytest.mark.skipif(not HAS_CUDA, reason=NO_GPU_REASON)
def test_scans_long_rows_dtype_arg_and_grads():
    x = data((3, 70000), torch.float64, seed=6)
    np.testing.assert_allclose(npy(x.cuda().cumsum(1)), npy(x.cumsum(1)), rtol=1e-9, atol=1e-9)
    i = data((5, 6), torch.int32, seed=7)
    assert i.cuda().cumsum(1).dtype == torch.int64
    assert i.cuda().cumsum(1, dtype=torch.float32).dtype == torch.float32
    b = torch.tensor([[True, False, True]])
    np.testing.assert_array_equal(npy(b.cuda().cumsum(1)), npy(b.cumsum(1)))
    a = x[:, :50].clone().requires_grad_()
    c = x[:, :50].cuda().requires_grad_()
    for f in (lambda t: t.cumsum(1), lambda t: t.cumprod(1), lambda t: t.cummax(1)[0]):
        a.grad = c.grad = None
        f(a).pow(2).sum().backward()
        f(c).pow(2).sum().backward()
        np.testing.assert_allclose(npy(c.grad), npy(a.grad), rtol=1e-9, atol=1e-9)


# ----------------------------------------------------------------------------- unary, reductions
@pytest.mark.cuda
@pytest.mark.skipif(not HAS_CUDA, reason=NO_GPU_REASON)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_new_unary_kernels(dtype):
    a = np.array([-3.0, -0.5, 0.0, 0.3, 0.9, 2.5, np.inf, -np.inf, np.nan])
    x = torch.from_numpy(a).to(dtype)
    for name in ("asinh", "erfc", "isposinf", "isneginf", "square"):
        want, got = getattr(torch, name)(x), on_gpu(getattr(torch, name)(x.cuda()))
        np.testing.assert_allclose(npy(got), npy(want), rtol=2e-3, atol=1e-6)
    y = torch.from_numpy(np.array([1.0, 1.5, 4.0])).to(dtype)
    np.testing.assert_allclose(npy(torch.acosh(y.cuda())), npy(torch.acosh(y)), rtol=2e-3)
    z = torch.from_numpy(np.array([-0.9, 0.0, 0.5])).to(dtype)
    np.testing.assert_allclose(npy(torch.atanh(z.cuda())), npy(torch.atanh(z)), rtol=2e-3)


@pytest.mark.cuda
@pytest.mark.skipif(not HAS_CUDA, reason=NO_GPU_REASON)
def test_all_any_count_nonzero_and_norms():
    x = data((4, 5, 6), torch.int64, seed=8, ties=True)
    g = x.cuda()
    for dims in (None, 1, (0, 2)):
        kw = {} if dims is None else {"dim": dims}
        np.testing.assert_array_equal(
            npy(on_gpu(torch.count_nonzero(g, **kw))), npy(torch.count_nonzero(x, **kw))
        )
    for d in (0, 2):
        for keepdim in (False, True):
            for name in ("all", "any"):
                want = getattr(x, name)(d, keepdim=keepdim)
                got = on_gpu(getattr(g, name)(d, keepdim=keepdim))
                assert got.dtype == want.dtype == torch.bool
                np.testing.assert_array_equal(npy(got), npy(want))
    assert bool(g.all()) == bool(x.all()) and bool(g.any()) == bool(x.any())
    u = x.to(torch.uint8)
    assert u.cuda().all(1).dtype == torch.uint8
    f = data((4, 7), torch.float64, seed=9)
    for ord_ in (2, 1, 0, 3.5, float("inf"), float("-inf")):
        a = f.clone().requires_grad_()
        c = f.cuda().requires_grad_()
        want = torch.linalg.vector_norm(a, ord_, dim=1)
        got = on_gpu(torch.linalg.vector_norm(c, ord_, dim=1))
        np.testing.assert_allclose(npy(got), npy(want), rtol=1e-10)
        if ord_ != 0:
            want.sum().backward()
            got.sum().backward()
            np.testing.assert_allclose(npy(c.grad), npy(a.grad), rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(npy(f.cuda().norm(dim=1)), npy(f.norm(dim=1)), rtol=1e-10)


# ----------------------------------------------------------------------------- host fallback
@pytest.mark.cuda
@pytest.mark.skipif(not HAS_CUDA, reason=NO_GPU_REASON)
def test_host_fallback_keeps_results_on_the_device():
    f = data((5, 5), torch.float64, seed=10)
    a = f @ f.t() + torch.eye(5, dtype=torch.float64)
    g = a.cuda()
    cases = [
        (lambda t: torch.linalg.inv(t), "linalg.inv"),
        (lambda t: torch.linalg.det(t), "linalg.det"),
        (lambda t: torch.linalg.cholesky(t), "linalg.cholesky"),
        (lambda t: torch.tril(t, -1), "tril/triu"),
        (lambda t: torch.trace(t), "trace"),
        (lambda t: torch.hypot(t, t.t()), "hypot_cpu"),
        (lambda t: torch.unique(t.round(), dim=0), "unique_dim"),
        (lambda t: torch._C._cuda_host_fallback_probe(t), "fallback_probe"),
    ]
    for fn, _name in cases:
        np.testing.assert_allclose(npy(on_gpu(fn(g))), npy(fn(a)), rtol=1e-9, atol=1e-12)
    # (The probe is the only one of these left on the host fallback: the linalg ops,
    # unique(dim=), tril/triu, trace and hypot have device paths now.)
    assert "fallback_probe" in set(torch._C._cuda_host_fallback_ops())
    # Gradients flow through the fallback (the backward formulas run on the device).
    x = a.clone().requires_grad_()
    y = g.clone().requires_grad_()
    torch.linalg.inv(x).sum().backward()
    torch.linalg.inv(y).sum().backward()
    np.testing.assert_allclose(npy(y.grad), npy(x.grad), rtol=1e-8)
    # Mixed devices still fail clearly.
    with pytest.raises(RuntimeError, match="same device"):
        torch.hypot(g, a)
    # In-place ops write back into the device tensor.
    z = torch.zeros(4, 3).cuda()
    z.index_fill_(0, torch.tensor([1, 3]).cuda(), 2.0)
    np.testing.assert_array_equal(npy(z)[:, 0], [0, 2, 0, 2])


def test_host_fallback_api_without_gpu():
    ops = torch._C._cuda_host_fallback_ops()
    assert isinstance(ops, list) and all(isinstance(o, str) for o in ops)
    if not HAS_CUDA:
        assert ops == []
    # The probe is plain negation off the GPU (and lists nothing).
    assert torch._C._cuda_host_fallback_probe(torch.tensor([1.0, -2.0])).tolist() == [-1.0, 2.0]
    if not HAS_CUDA:
        assert torch._C._cuda_host_fallback_ops() == []


def test_cpu_cases_against_numpy():
    # The CPU side of the comparisons above, against NumPy (stable sort, scans).
    x = data((4, 9), torch.float64, seed=11, ties=True)
    a = npy(x)
    v, i = torch.sort(x, 1, stable=True)
    np.testing.assert_array_equal(npy(i), np.argsort(a, 1, kind="stable"))
    np.testing.assert_array_equal(npy(v), np.sort(a, 1))
    np.testing.assert_allclose(npy(x.cumsum(0)), np.cumsum(a, 0))
    np.testing.assert_allclose(npy(x.cumprod(1)), np.cumprod(a, 1))
    np.testing.assert_array_equal(npy(x.cummax(1)[0]), np.maximum.accumulate(a, 1))


@pytest.mark.cuda
@pytest.mark.skipif(not HAS_CUDA, reason=NO_GPU_REASON)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.int64])
def test_clamp_and_lerp_run_on_the_device(dtype):
    a = np.array([-3.0, -0.5, 0.0, 0.3, 2.5, np.nan])
    x = torch.from_numpy(a if dtype.is_floating_point else np.nan_to_num(a)).to(dtype)
    g = x.cuda()
    for kw in ({"min": -1}, {"max": 1}, {"min": -1, "max": 1}, {"min": 2, "max": 1}):
        np.testing.assert_array_equal(npy(on_gpu(g.clamp(**kw))), npy(x.clamp(**kw)))
    lo = torch.tensor([-1.0, 0.0, 0.0, 0.5, 0.0, 0.0]).to(dtype)
    np.testing.assert_array_equal(npy(g.clamp(min=lo.cuda())), npy(x.clamp(min=lo)))
    if dtype.is_floating_point:
        e = torch.from_numpy(np.linspace(-1, 1, 6)).to(dtype)
        for w in (0.25, 0.75):
            np.testing.assert_allclose(
                npy(on_gpu(torch.lerp(g, e.cuda(), w))), npy(torch.lerp(x, e, w)), rtol=1e-3
            )
        wt = torch.from_numpy(np.linspace(0, 1, 6)).to(dtype)
        np.testing.assert_allclose(
            npy(torch.lerp(g, e.cuda(), wt.cuda())), npy(torch.lerp(x, e, wt)), rtol=1e-3
        )
    assert "clamp" not in torch._C._cuda_host_fallback_ops()
    assert "lerp" not in torch._C._cuda_host_fallback_ops()
