"""Ops that used to reach CUDA through the host fallback and now run as device kernels or as
compositions of device ops: fmod, div(rounding_mode), hypot, copysign, xlogy, logaddexp(2),
heaviside, nan_to_num, tril/triu, trace, nansum/nanmean and take.

Each runs on the GPU and on the CPU (tested against NumPy elsewhere) over contiguous,
transposed, broadcast, 0-d and empty inputs in every dtype the op accepts; values and
gradients must agree and the op must not have gone through the host
(`_C._cuda_host_fallback_ops()`). Needs CUDA (`pytest -m cuda`; the CPU emulator of
tools/cuda_emu counts).
"""

import numpy as np
import pytest

import ferrotorch as torch

HAS_CUDA = torch.cuda.is_available()
pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device: "
                       + str(torch._C._cuda_unavailable_reason())),
]

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8]


def npy(t):
    t = t.detach().cpu()
    return (t.float() if t.dtype in (torch.bfloat16, torch.float16) else t).numpy()


def tol(dtype):
    return {torch.float16: 2e-3, torch.bfloat16: 1e-2, torch.float32: 1e-6}.get(dtype, 1e-12)


def same(got, want):
    assert got.device.type == "cuda", got.device
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert tuple(got.shape) == tuple(want.shape)
    r = tol(want.dtype)
    np.testing.assert_allclose(npy(got), npy(want), rtol=r, atol=r, equal_nan=True)


def not_via_host(*names):
    used = set(torch._C._cuda_host_fallback_ops())
    assert not used & set(names), f"went through the host: {used & set(names)}"


def values(shape, dtype, seed, special=True):
    rng = np.random.default_rng(seed)
    if dtype in INTS:
        lo = 0 if dtype == torch.uint8 else -20
        return torch.from_numpy(np.asarray(rng.integers(lo, 20, shape))).to(dtype)
    a = rng.standard_normal(shape) * 3
    if special and a.size >= 6:
        flat = a.reshape(-1)
        flat[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.5]
    return torch.from_numpy(np.asarray(a)).to(dtype)


# (a, b) pairs: same shape, transposed, broadcast, 0-d, empty.
def pairs(dtype, seed=0):
    a = values((4, 6), dtype, seed)
    b = values((4, 6), dtype, seed + 1)
    yield "contiguous", a, b
    yield "transposed", values((6, 4), dtype, seed).t(), b
    yield "broadcast", a, values((6,), dtype, seed + 2)
    yield "zero_d", a, values((), dtype, seed + 3, special=False)
    yield "empty", values((0, 6), dtype, seed), values((1, 6), dtype, seed + 4)


BINARY = {
    "hypot": (torch.hypot, [torch.float32, torch.float64, torch.float16, torch.bfloat16]),
    "copysign": (torch.copysign, FLOATS + INTS),
    "xlogy": (torch.xlogy, FLOATS + INTS),
    "logaddexp": (torch.logaddexp, FLOATS),
    "logaddexp2": (torch.logaddexp2, FLOATS),
    "heaviside": (torch.heaviside, FLOATS + INTS + [torch.bool]),
    "fmod": (torch.fmod, FLOATS),
    "div_trunc": (lambda a, b: torch.div(a, b, rounding_mode="trunc"), FLOATS),
    "div_floor": (lambda a, b: torch.div(a, b, rounding_mode="floor"), FLOATS),
}


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_kernels_match_cpu(name):
    fn, dtypes = BINARY[name]
    for dtype in dtypes:
        for case, a, b in pairs(dtype):
            if dtype == torch.bool:
                a, b = a != 0, b != 0
            want = fn(a, b)
            got = fn(a.cuda() if case != "zero_d" else a.cuda(), b.cuda())
            same(got, want)
    not_via_host("hypot_cpu", "logaddexp_cpu", "logaddexp2_cpu", "copysign", "xlogy",
                 "heaviside", "fmod", "div")


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("mode", ["fmod", "trunc", "floor"])
def test_integer_division_family_matches_cpu(dtype, mode):
    rng = np.random.default_rng(3)
    lo = 0 if dtype == torch.uint8 else -50
    a = torch.from_numpy(rng.integers(lo, 50, (5, 7))).to(dtype)
    b = torch.from_numpy(rng.integers(1, 9, (7,))).to(dtype)
    if dtype != torch.uint8:
        b = b * torch.tensor([1, -1, 1, -1, 1, -1, 1], dtype=dtype)

    def fn(x, y):
        if mode == "fmod":
            return torch.fmod(x, y)
        return torch.div(x, y, rounding_mode=mode)

    same(fn(a.cuda(), b.cuda()), fn(a, b))
    same(fn(a.t().cuda(), 3), fn(a.t(), 3))  # a Python scalar divisor
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        fn(a.cuda(), torch.zeros(7, dtype=dtype).cuda())
    not_via_host("fmod", "div")


def test_most_negative_integer_divided_by_minus_one_wraps():
    a = torch.tensor([-(2**63), 7, -7], dtype=torch.int64)
    b = torch.tensor([-1, -1, 2], dtype=torch.int64)
    for fn, last in ((lambda x, y: torch.div(x, y, rounding_mode="trunc"), -3),
                     (lambda x, y: torch.div(x, y, rounding_mode="floor"), -4),
                     (lambda x, y: x // y, -4)):
        assert fn(a.cuda(), b.cuda()).cpu().tolist() == [-(2**63), -7, last]
    assert torch.fmod(a.cuda(), b.cuda()).cpu().tolist() == [0, 0, -1]


@pytest.mark.parametrize("name", ["hypot", "copysign", "xlogy", "logaddexp", "logaddexp2",
                                  "fmod", "remainder"])
def test_binary_gradients_match_cpu(name):
    rng = np.random.default_rng(5)
    a0 = rng.standard_normal((3, 5)) + (3.0 if name == "xlogy" else 0.0)
    b0 = np.abs(rng.standard_normal((5,))) + 0.5
    fn = getattr(torch, name)
    grads = {}
    for dev in ("cpu", "cuda"):
        a = torch.tensor(a0, device=dev, requires_grad=True)
        b = torch.tensor(b0, device=dev, requires_grad=True)
        (fn(a, b) * torch.arange(15.0, dtype=torch.float64, device=dev).view(3, 5)).sum().backward()
        grads[dev] = (a.grad, b.grad)
    for g_cpu, g_gpu in zip(grads["cpu"], grads["cuda"]):
        same(g_gpu, g_cpu)


@pytest.mark.parametrize("dtype", FLOATS)
def test_nan_to_num_matches_cpu(dtype):
    x = values((5, 8), dtype, 7)
    for kw in ({}, {"nan": 1.0, "posinf": 2.0, "neginf": -3.0}, {"nan": -1.5}):
        same(torch.nan_to_num(x.cuda(), **kw), torch.nan_to_num(x, **kw))
        same(torch.nan_to_num(x.t().cuda(), **kw), torch.nan_to_num(x.t(), **kw))
    same(torch.nan_to_num(x[:0].cuda()), torch.nan_to_num(x[:0]))
    same(torch.nan_to_num(torch.tensor(float("nan"), dtype=dtype).cuda()),
         torch.nan_to_num(torch.tensor(float("nan"), dtype=dtype)))
    i = values((3, 3), torch.int32, 1)
    same(torch.nan_to_num(i.cuda()), torch.nan_to_num(i))
    not_via_host("nan_to_num")


@pytest.mark.parametrize("dtype", FLOATS + INTS + [torch.bool])
@pytest.mark.parametrize("k", [-2, -1, 0, 1, 3, 9])
def test_tril_triu_match_cpu(dtype, k):
    x = values((2, 3, 5, 6), dtype, 11, special=False)
    if dtype == torch.bool:
        x = x != 0
    for view in (x, x.transpose(-1, -2), x[:, 1:, ::2], x[0, 0]):
        same(torch.tril(view.cuda(), k), torch.tril(view, k))
        same(torch.triu(view.cuda(), k), torch.triu(view, k))
    same(torch.tril(x[:, :, :0].cuda(), k), torch.tril(x[:, :, :0], k))
    not_via_host("tril/triu")


def test_tril_triu_gradient_and_attention_mask():
    x = torch.randn(4, 4, dtype=torch.float64, requires_grad=True)
    xg = x.detach().cuda().requires_grad_()
    (torch.tril(x, -1) * 2 + torch.triu(x, 2)).sum().backward()
    (torch.tril(xg, -1) * 2 + torch.triu(xg, 2)).sum().backward()
    same(xg.grad, x.grad)
    mask = torch.ones(5, 5, device="cuda").tril().bool()
    scores = torch.zeros(5, 5, device="cuda").masked_fill(~mask, float("-inf")).softmax(-1)
    np.testing.assert_allclose(npy(scores)[4], [0.2] * 5, rtol=1e-6)
    assert npy(scores)[0].tolist() == [1, 0, 0, 0, 0]


@pytest.mark.parametrize("dtype", FLOATS + [torch.int64, torch.int32])
def test_trace_matches_cpu(dtype):
    for shape in [(4, 4), (3, 6), (6, 2), (0, 3)]:
        x = values(shape, dtype, 13, special=False)
        same(torch.trace(x.cuda()), torch.trace(x))
        same(torch.trace(x.t().cuda()), torch.trace(x.t()))
    x = torch.randn(4, 5, dtype=torch.float64, requires_grad=True)
    xg = x.detach().cuda().requires_grad_()
    torch.trace(x).backward()
    torch.trace(xg).backward()
    same(xg.grad, x.grad)
    with pytest.raises(RuntimeError, match="expected a matrix"):
        torch.trace(torch.ones(3, device="cuda"))
    not_via_host("trace")


@pytest.mark.parametrize("dtype", FLOATS)
def test_nansum_nanmean_match_cpu(dtype):
    x = values((4, 5, 6), dtype, 17)
    x = x.masked_fill(x.isinf(), 1.0)  # infinities would make the sums NaN/inf alike
    g = x.cuda()
    for dims, keep in [(None, False), ((1,), False), ((0, 2), True), ((-1,), True)]:
        kw = {} if dims is None else {"dim": dims, "keepdim": keep}
        same(torch.nansum(g, **kw), torch.nansum(x, **kw))
        same(torch.nanmean(g, **kw), torch.nanmean(x, **kw))
        same(torch.nansum(g.transpose(0, 2), **kw), torch.nansum(x.transpose(0, 2), **kw))
    allnan = torch.full((3,), float("nan"), dtype=dtype)
    same(torch.nanmean(allnan.cuda()), torch.nanmean(allnan))  # NaN: no element counted
    same(torch.nansum(allnan.cuda()), torch.nansum(allnan))  # 0
    i = values((3, 4), torch.int64, 2)
    same(torch.nansum(i.cuda(), dim=1), torch.nansum(i, dim=1))
    not_via_host("nansum", "nanmean")


def test_nansum_nanmean_gradients():
    a = np.array([[1.0, np.nan, 2.0], [np.nan, np.nan, 3.0]])
    grads = {}
    for dev in ("cpu", "cuda"):
        x = torch.tensor(a, device=dev, requires_grad=True)
        (torch.nansum(x, 1) * torch.tensor([1.0, 2.0], dtype=torch.float64, device=dev)
         ).sum().backward()
        y = torch.tensor(a, device=dev, requires_grad=True)
        torch.nanmean(y, 0).sum().backward()
        grads[dev] = (x.grad, y.grad)
    for want, got in zip(grads["cpu"], grads["cuda"]):
        same(got, want)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool])
def test_take_matches_cpu(dtype):
    x = values((4, 5), dtype, 19, special=False)
    if dtype == torch.bool:
        x = x != 0
    idx = torch.tensor([[0, 19, -1], [7, -20, 3]])
    same(torch.take(x.cuda(), idx.cuda()), torch.take(x, idx))
    same(torch.take(x.t().cuda(), idx.cuda()), torch.take(x.t(), idx))
    same(torch.take(x.cuda(), idx[:, :0].cuda()), torch.take(x, idx[:, :0]))
    with pytest.raises(IndexError, match="out of range"):
        torch.take(x.cuda(), torch.tensor([20]).cuda())
    with pytest.raises(RuntimeError, match="same device|Expected all tensors"):
        torch.take(x.cuda(), torch.tensor([1, 2]))
    not_via_host("take")


def test_take_gradient():
    a = np.arange(12.0).reshape(3, 4)
    grads = {}
    for dev in ("cpu", "cuda"):
        x = torch.tensor(a, device=dev, requires_grad=True)
        (torch.take(x, torch.tensor([0, 5, 5, -1], device=dev)) ** 2).sum().backward()
        grads[dev] = x.grad
    same(grads["cuda"], grads["cpu"])


def _targets(dtype):
    """(cpu, cuda) pairs of destinations: contiguous, transposed view, stepped view."""
    base = values((5, 6), dtype, 23, special=False)
    if dtype == torch.bool:
        base = base != 0
    for make in (lambda t: t, lambda t: t.t(), lambda t: t[::2]):
        cpu = base.clone()
        gpu = base.cuda()
        yield make(cpu), make(gpu), cpu, gpu


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int64,
                                   torch.int8, torch.bool])
def test_index_copy_fill_put_masked_scatter_match_cpu(dtype):
    for view_c, view_g, base_c, base_g in _targets(dtype):
        rows = view_c.shape[0]
        idx = torch.tensor([rows - 1, 0])
        src = values((2, view_c.shape[1]), dtype, 29, special=False)
        if dtype == torch.bool:
            src = src != 0
        view_c.index_copy_(0, idx, src)
        view_g.index_copy_(0, idx.cuda(), src.cuda())
        same(base_g, base_c)
        view_c.index_fill_(1, torch.tensor([1, -1]), 1)
        view_g.index_fill_(1, torch.tensor([1, -1]).cuda(), 1)
        same(base_g, base_c)
        flat_idx = torch.tensor([0, 3, -1, 3])
        vals = src.reshape(-1)[:4]
        view_c.put_(flat_idx, vals, accumulate=dtype != torch.bool)
        view_g.put_(flat_idx.cuda(), vals.cuda(), accumulate=dtype != torch.bool)
        same(base_g, base_c)
        mask = torch.from_numpy(np.random.default_rng(31).random(view_c.shape[1]) < 0.5)
        view_c.masked_scatter_(mask, src.reshape(-1).flip(0).repeat(3))
        view_g.masked_scatter_(mask.cuda(), src.reshape(-1).flip(0).repeat(3).cuda())
        same(base_g, base_c)
    not_via_host("index_copy", "index_fill", "put_", "masked_scatter")


def test_index_write_errors_on_cuda():
    x = torch.zeros(3, 4, device="cuda")
    with pytest.raises(IndexError):
        x.index_fill_(0, torch.tensor([3]).cuda(), 1.0)
    with pytest.raises(IndexError, match="out of range"):
        x.put_(torch.tensor([12]).cuda(), torch.ones(1).cuda())
    with pytest.raises(RuntimeError, match="at least as many elements"):
        x.masked_scatter_(torch.ones(3, 4, dtype=torch.bool).cuda(), torch.ones(5).cuda())
    with pytest.raises(RuntimeError, match="same slice shapes"):
        x.index_copy_(0, torch.tensor([0]).cuda(), torch.ones(1, 3).cuda())


def test_index_write_gradients_match_cpu():
    grads = {}
    for dev in ("cpu", "cuda"):
        x = torch.arange(12.0, dtype=torch.float64, device=dev).view(3, 4).requires_grad_()
        s = torch.full((2, 4), 2.0, dtype=torch.float64, device=dev, requires_grad=True)
        m = torch.tensor([True, False, True, True], device=dev)
        y = x * 1
        y = y.index_copy(0, torch.tensor([2, 0], device=dev), s)
        y = y.masked_scatter(m, s.repeat(2, 1).flip(0) * 3)
        y = y.index_fill(1, torch.tensor([1], device=dev), 0.5)
        (y * torch.arange(12.0, dtype=torch.float64, device=dev).view(3, 4)).sum().backward()
        grads[dev] = (x.grad, s.grad)
    for want, got in zip(grads["cpu"], grads["cuda"]):
        same(got, want)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.int64,
                                   torch.int16, torch.uint8])
def test_median_nanmedian_match_cpu(dtype):
    rng = np.random.default_rng(37)
    a = rng.integers(0, 6, (4, 7)).astype(np.float64)  # many ties: indices must agree too
    if dtype.is_floating_point:
        a[1, 3] = np.nan
        a[2, :] = np.nan
        a[3, 0] = np.nan
        a[3, 5] = np.nan
    x = torch.from_numpy(a).to(dtype)
    g = x.cuda()
    fns = [torch.median] + ([torch.nanmedian] if dtype.is_floating_point else [])
    for fn in fns:
        same(fn(g), fn(x))
        same(fn(g.t()), fn(x.t()))
        for dim in (0, 1, -1):
            for keep in (False, True):
                vg, ig = fn(g, dim, keepdim=keep)
                vc, ic = fn(x, dim, keepdim=keep)
                same(vg, vc)
                same(ig, ic)
        vg, ig = fn(g[1], 0)
        vc, ic = fn(x[1], 0)
        same(vg, vc)
        same(ig, ic)
    same(torch.median(g[0, 0]), torch.median(x[0, 0]))  # 0-d
    same(torch.median(g[0, 0], 0)[0], torch.median(x[0, 0], 0)[0])
    same(torch.median(g[:0]), torch.median(x[:0]))  # empty: NaN / lowest value
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        torch.median(g[:0], 0)
    not_via_host("median")


def test_median_gradient_matches_cpu():
    a = np.array([[3.0, 1.0, 2.0, 2.0], [0.5, -1.0, 4.0, 8.0]])
    grads = {}
    for dev in ("cpu", "cuda"):
        x = torch.tensor(a, device=dev, requires_grad=True)
        (torch.median(x, 1)[0] * torch.tensor([1.0, 3.0], dtype=torch.float64, device=dev)
         ).sum().backward()
        y = torch.tensor(a, device=dev, requires_grad=True)
        torch.median(y).backward()
        grads[dev] = (x.grad, y.grad)
    for want, got in zip(grads["cpu"], grads["cuda"]):
        same(got, want)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int64,
                                   torch.uint8, torch.bool])
def test_unique_matches_cpu(dtype):
    rng = np.random.default_rng(41)
    a = rng.integers(0, 5, (3, 8)).astype(np.float64)
    if dtype.is_floating_point:
        a[0, 2] = a[2, 5] = np.nan  # each NaN is its own value
    x = torch.from_numpy(a).to(dtype) if dtype != torch.bool else torch.from_numpy(a > 2)
    g = x.cuda()
    for view_c, view_g in ((x, g), (x.t(), g.t()), (x[1], g[1]), (x[0, 0], g[0, 0]),
                           (x[:0], g[:0])):
        for kw in ({}, {"return_inverse": True}, {"return_counts": True},
                   {"return_inverse": True, "return_counts": True}):
            got, want = torch.unique(view_g, **kw), torch.unique(view_c, **kw)
            for gg, ww in zip(got if kw else [got], want if kw else [want]):
                same(gg, ww)
            got = torch.unique_consecutive(view_g, **kw)
            want = torch.unique_consecutive(view_c, **kw)
            for gg, ww in zip(got if kw else [got], want if kw else [want]):
                same(gg, ww)
    v, inv = torch.unique(g[1], dim=0, return_inverse=True)
    vc, invc = torch.unique(x[1], dim=0, return_inverse=True)
    same(v, vc)
    same(inv, invc)
    not_via_host("unique")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.uint8,
                                   torch.bool])
def test_unique_along_a_dim_matches_cpu(dtype):
    # Slices along `dim` in lexicographic order (NaN last, NaN slices all distinct), with
    # duplicates, on contiguous and transposed storage, 3-D and consecutive variants.
    rng = np.random.default_rng(47)
    a = rng.integers(0, 2, (7, 3, 2)).astype(np.float64)
    a[4] = a[1]
    a[6] = a[1]
    if dtype.is_floating_point:
        a[2, 0, 0] = a[5, 0, 0] = np.nan
        a[5] = a[2]
    x = torch.from_numpy(a).to(dtype) if dtype != torch.bool else torch.from_numpy(a > 0)
    g = x.cuda()
    for view_c, view_g in ((x, g), (x.transpose(0, 2), g.transpose(0, 2)),
                           (x[:, 0], g[:, 0]), (x[:, :, 0].t(), g[:, :, 0].t())):
        for d in range(view_c.dim()):
            for kw in ({}, {"return_inverse": True, "return_counts": True}):
                for fn in (torch.unique, torch.unique_consecutive):
                    got, want = fn(view_g, dim=d, **kw), fn(view_c, dim=d, **kw)
                    for gg, ww in zip(got if kw else [got], want if kw else [want]):
                        same(gg, ww)
    not_via_host("unique_dim")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16,
                                   torch.int64, torch.int32, torch.int16, torch.int8,
                                   torch.uint8])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_matches_cpu(dtype, reduce, include_self):
    rng = np.random.default_rng(43)
    lo = 1 if dtype == torch.uint8 else -3
    base = torch.from_numpy(rng.integers(lo, 4, (4, 5))).to(dtype)
    src = torch.from_numpy(rng.integers(lo, 4, (6, 5))).to(dtype)
    if dtype.is_floating_point and reduce in ("amax", "amin"):
        src[2, 1] = float("nan")  # NaN wins, as on the CPU
    idx = torch.from_numpy(rng.integers(0, 3, (6, 5)))  # row 3 never written; repeats
    for d, (b, s, i) in enumerate([(base, src, idx), (base.t(), src.t(), idx.t())]):
        want = b.scatter_reduce(d, i, s, reduce, include_self=include_self)
        got = b.cuda().scatter_reduce(d, i.cuda(), s.cuda(), reduce, include_self=include_self)
        same(got, want)
    want = base.scatter_reduce(0, idx[:2, :3], src, reduce, include_self=include_self)
    got = base.cuda().scatter_reduce(0, idx[:2, :3].cuda(), src.cuda(), reduce,
                                     include_self=include_self)
    same(got, want)
    not_via_host("scatter_reduce")


def test_scatter_reduce_gradients_match_cpu():
    rng = np.random.default_rng(47)
    a, s0 = rng.standard_normal((3, 4)), rng.standard_normal((5, 4))
    idx = torch.from_numpy(rng.integers(0, 3, (5, 4)))
    for reduce in ("sum", "mean", "amax", "prod"):
        grads = {}
        for dev in ("cpu", "cuda"):
            x = torch.tensor(a, device=dev, requires_grad=True)
            s = torch.tensor(s0, device=dev, requires_grad=True)
            y = x.scatter_reduce(0, idx.to(dev), s, reduce, include_self=reduce != "amax")
            (y * torch.arange(12.0, dtype=torch.float64, device=dev).view(3, 4)).sum().backward()
            grads[dev] = (x.grad, s.grad)
        for want, got in zip(grads["cpu"], grads["cuda"]):
            same(got, want)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.int64,
                                   torch.uint8])
def test_searchsorted_bucketize_match_cpu(dtype):
    rng = np.random.default_rng(53)
    seq = torch.from_numpy(np.sort(rng.integers(0, 20, (3, 9)), axis=1).astype(np.float64))
    vals = torch.from_numpy(rng.integers(-2, 23, (3, 5)).astype(np.float64))
    if dtype.is_floating_point:
        seq[1, -2:] = float("nan")  # NaN sorts last
        vals[0, 0] = float("nan")
    seq, vals = seq.to(dtype), vals.to(dtype)
    for right in (False, True):
        for s, v in ((seq, vals), (seq[0], vals), (seq[2], vals[1]), (seq[1], vals[0, 0])):
            same(torch.searchsorted(s.cuda(), v.cuda(), right=right),
                 torch.searchsorted(s, v, right=right))
        same(torch.searchsorted(seq.cuda(), vals.cuda(), right=right, out_int32=True),
             torch.searchsorted(seq, vals, right=right, out_int32=True))
        same(torch.bucketize(vals.cuda(), seq[0].cuda(), right=right),
             torch.bucketize(vals, seq[0], right=right))
    perm = torch.from_numpy(np.stack([rng.permutation(9) for _ in range(3)]))
    shuffled = seq.gather(1, perm)
    sorter = perm.argsort(1)
    same(torch.searchsorted(shuffled.cuda(), vals.cuda(), sorter=sorter.cuda()),
         torch.searchsorted(shuffled, vals, sorter=sorter))
    with pytest.raises(RuntimeError, match="sorter index out of range"):
        torch.searchsorted(shuffled.cuda(), vals.cuda(), sorter=(sorter + 9).cuda())
    not_via_host("searchsorted")


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8])
def test_bincount_matches_cpu(dtype):
    x = torch.tensor([0, 3, 3, 1, 7, 3], dtype=dtype)
    w32 = torch.tensor([0.5, 1, 2, 3, 4, 5], dtype=torch.float32)
    same(torch.bincount(x.cuda()), torch.bincount(x))
    same(torch.bincount(x.cuda(), minlength=12), torch.bincount(x, minlength=12))
    same(torch.bincount(x.cuda(), weights=w32.cuda()), torch.bincount(x, weights=w32))
    same(torch.bincount(x.cuda(), weights=w32.double().cuda()),
         torch.bincount(x, weights=w32.double()))
    same(torch.bincount(x[:0].cuda()), torch.bincount(x[:0]))
    if dtype != torch.uint8:
        with pytest.raises(RuntimeError, match="non-negative"):
            torch.bincount(torch.tensor([1, -1], dtype=dtype).cuda())
    not_via_host("bincount")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_histc_matches_cpu(dtype):
    rng = np.random.default_rng(59)
    x = torch.from_numpy(rng.standard_normal(200) * 3).to(dtype)
    for bins, lo, hi in ((10, 0, 0), (7, -2, 2), (1, -1, 1), (13, -3.3, 4.1)):
        same(torch.histc(x.cuda(), bins, lo, hi), torch.histc(x, bins, lo, hi))
    edges = torch.tensor([-2.0, 2.0, 0.0, 1.999, -2.0001], dtype=dtype)
    same(torch.histc(edges.cuda(), 4, -2, 2), torch.histc(edges, 4, -2, 2))
    not_via_host("histc")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.int64,
                                   torch.int32, torch.uint8, torch.bool])
def test_mode_matches_cpu(dtype):
    rng = np.random.default_rng(41)
    a = rng.integers(0, 4, (5, 9)).astype(np.float64)  # many ties: values and indices agree
    if dtype.is_floating_point:
        a[1, :4] = np.nan  # NaNs never equal each other: each is its own run
        a[2, :] = np.nan
    x = torch.from_numpy(a).to(dtype)
    g = x.cuda()
    for t, c in ((g, x), (g.t(), x.t())):
        for dim in (0, 1, -1):
            for keep in (False, True):
                vg, ig = torch.mode(t, dim, keepdim=keep)
                vc, ic = torch.mode(c, dim, keepdim=keep)
                same(vg, vc)
                same(ig, ic)
    same(torch.mode(g[:, :1], 1)[1], torch.mode(x[:, :1], 1)[1])  # runs of one element
    same(torch.mode(g[0])[0], torch.mode(x[0])[0])
    with pytest.raises(IndexError, match="non-zero size"):
        torch.mode(g[:, :0], 1)
    not_via_host("mode")


def test_bool_cumulative_ops_match_cpu():
    x = torch.from_numpy(np.random.default_rng(43).integers(0, 2, (4, 6)).astype(bool))
    g = x.cuda()
    for fn in (lambda t: t.cumsum(1), lambda t: t.cumprod(0), lambda t: t.cummax(1)[0],
               lambda t: t.cummin(0)[1],
               lambda t: t.cumprod(1, dtype=torch.bool), lambda t: t.t().cummax(0)[1]):
        same(fn(g), fn(x))
    for t in (x, g):  # no bool cumsum kernel (torch 2.15's CPU error on both devices)
        with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
            t.cumsum(1, dtype=torch.bool)
    not_via_host("cumsum/cumprod", "cummax/cummin")


SPECIAL = {
    "zeta": (torch.special.zeta, "special_zeta"),
    "igamma": (torch.igamma, "igamma"),
    "igammac": (torch.igammac, "igammac"),
    "gammaincc": (torch.special.gammaincc, "igammac"),
    "standard_gamma_grad": (torch._C._standard_gamma_grad, "_standard_gamma_grad"),
}


@pytest.mark.parametrize("name", list(SPECIAL))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.int64])
def test_special_function_kernels_match_cpu(name, dtype):
    fn, host_name = SPECIAL[name]
    if name == "standard_gamma_grad" and not dtype.is_floating_point:
        return  # floats only, as PyTorch
    rng = np.random.default_rng(45)
    # Both arguments over their interesting ranges: the series and continued-fraction sides
    # of the incomplete gamma, zeta's direct sum and tail, poles, negatives and specials.
    a = rng.uniform(0.0, 12.0, (6, 8))
    a[0, :6] = [0.0, np.inf, np.nan, -1.0, 1.0, 0.5]
    b = rng.uniform(0.0, 15.0, (6, 8))
    b[1, :6] = [0.0, np.inf, np.nan, -2.0, -2.5, 1e-3]
    x = torch.from_numpy(a).to(dtype) if dtype.is_floating_point else torch.from_numpy(
        np.round(a)).to(dtype)
    y = torch.from_numpy(b).to(dtype) if dtype.is_floating_point else torch.from_numpy(
        np.round(b)).to(dtype)
    for u, v in ((x, y), (x.t(), y.t()), (x, y[0]), (x[:0], y[:0])):
        try:
            want = fn(u, v)
        except NotImplementedError:  # half zeta, integer igamma: refused on both devices
            with pytest.raises(NotImplementedError):
                fn(u.cuda(), v.cuda())
            return
        got = fn(u.cuda(), v.cuda())
        assert got.device.type == "cuda" and got.dtype == want.dtype
        r = {torch.float16: 2e-3, torch.float32: 1e-6}.get(want.dtype, 1e-12)
        if name == "standard_gamma_grad":
            r = max(r, 1e-8)  # a central difference: lgamma's last bits (libm vs CUDA) show
        np.testing.assert_allclose(npy(got), npy(want), rtol=r, atol=r * 1e-3, equal_nan=True)
    not_via_host(host_name)


def test_special_function_gradients_match_cpu():
    a = torch.tensor([2.5, 3.0, 1.5, 7.0], dtype=torch.float64)
    q = torch.tensor([0.5, 2.0, 4.0, 1.25], dtype=torch.float64)
    grads = []
    for dev in ("cpu", "cuda"):
        qq = q.clone().to(dev).requires_grad_()
        xx = q.clone().to(dev).requires_grad_()
        (torch.special.zeta(a.to(dev), qq).sum() + torch.igamma(a.to(dev), xx).sum()
         + torch.igammac(a.to(dev), xx * 2).sum()).backward()
        grads.append((npy(qq.grad), npy(xx.grad)))
    for got, want in zip(grads[1], grads[0]):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    not_via_host("special_zeta", "igamma", "igammac")
