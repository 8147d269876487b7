"""CUDA paths outside nn: fused optimiser steps, random numbers drawn on the GPU, var/std/
logsumexp/argmax reductions, and the index writes (scatter, index_add, masked_fill, advanced
indexing). Every op runs on the GPU and on the CPU (tested against NumPy elsewhere) and the
results (values, gradients, optimiser trajectories) are compared. Random numbers are checked
statistically and for reproducibility under a seed (they need not equal the CPU stream).

Needs an NVIDIA GPU (`pytest -m cuda`); skipped otherwise, except the last test, which checks
that the fused optimiser path leaves CPU training unchanged.
"""

import copy
import math

import numpy as np
import pytest

import ferrotorch as torch
import ferrotorch.nn.functional as F
from ferrotorch import nn

HAS_CUDA = torch.cuda.is_available()
NO_GPU_REASON = "no CUDA device: " + str(torch._C._cuda_unavailable_reason())
needs_gpu = pytest.mark.skipif(not HAS_CUDA, reason=NO_GPU_REASON)
gpu = [pytest.mark.cuda, needs_gpu]

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def npy(t):
    t = t.detach().cpu()
    return (t.float() if t.dtype in (torch.bfloat16, torch.float16) else t).numpy()


def tol(dtype):
    return {torch.float16: 2e-2, torch.bfloat16: 5e-2, torch.float32: 2e-5}.get(dtype, 1e-10)


def close(got, want, dtype=None, rtol=None, atol=None):
    assert got.device.type == "cuda", got.device
    assert got.dtype == want.dtype and tuple(got.shape) == tuple(want.shape)
    r = rtol if rtol is not None else tol(dtype or want.dtype)
    np.testing.assert_allclose(npy(got), npy(want), rtol=r, atol=atol if atol is not None else r)


def layouts(shape, dtype=torch.float32, seed=0):
    """(name, cpu tensor, cuda tensor) with the same values: contiguous, transposed and
    stepped-slice views (the CUDA ones are views of CUDA storage)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    base = torch.from_numpy(a).to(dtype)
    out = [("contiguous", base, base.cuda())]
    if len(shape) >= 2:
        t = torch.from_numpy(np.ascontiguousarray(np.swapaxes(a, -1, -2))).to(dtype)
        out.append(("transposed", t.transpose(-1, -2), t.cuda().transpose(-1, -2)))
    big = torch.from_numpy(rng.standard_normal((shape[0] * 2,) + tuple(shape[1:]))).to(dtype)
    out.append(("stepped", big[::2], big.cuda()[::2]))
    return out


# ============================================================================ 1. optimisers

def _tiny_model(dtype=torch.float32):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3)).to(dtype)


def _train(model, opt, x, y, steps=20):
    for _ in range(steps):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
    return loss.item()


OPTIMS = {
    "sgd": lambda ps: torch.optim.SGD(ps, lr=0.1),
    "sgd_momentum": lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9),
    "sgd_nesterov_wd": lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True,
                                                  weight_decay=1e-2),
    "sgd_dampening_maximize": lambda ps: torch.optim.SGD(ps, lr=0.01, momentum=0.5,
                                                         dampening=0.3, maximize=True),
    "adam": lambda ps: torch.optim.Adam(ps, lr=1e-2),
    "adam_wd_maximize": lambda ps: torch.optim.Adam(ps, lr=1e-2, weight_decay=0.1,
                                                    maximize=True),
    "adam_amsgrad": lambda ps: torch.optim.Adam(ps, lr=1e-2, amsgrad=True),
    "adamw": lambda ps: torch.optim.AdamW(ps, lr=1e-2, weight_decay=0.1),
    "adamw_amsgrad": lambda ps: torch.optim.AdamW(ps, lr=1e-2, amsgrad=True, betas=(0.8, 0.9)),
    "sgd_unfused": lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, fused=False),
    "adam_unfused": lambda ps: torch.optim.Adam(ps, lr=1e-2, fused=False),
}


@pytest.mark.cuda
@needs_gpu
@pytest.mark.parametrize("name", list(OPTIMS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_optimizer_20_steps_match_cpu(name, dtype):
    cpu = _tiny_model(dtype)
    gpu_model = copy.deepcopy(cpu).cuda()
    rng = np.random.default_rng(1)
    x = torch.from_numpy(rng.standard_normal((16, 5))).to(dtype)
    y = torch.from_numpy(rng.standard_normal((16, 3))).to(dtype)
    opt_c = OPTIMS[name](cpu.parameters())
    opt_g = OPTIMS[name](gpu_model.parameters())
    loss_c = _train(cpu, opt_c, x, y)
    loss_g = _train(gpu_model, opt_g, x.cuda(), y.cuda())
    t = 2e-4 if dtype == torch.float32 else 1e-9
    assert loss_g == pytest.approx(loss_c, rel=t, abs=t)
    for pc, pg in zip(cpu.parameters(), gpu_model.parameters()):
        assert pg.is_cuda
        np.testing.assert_allclose(npy(pg), npy(pc), rtol=t, atol=t)
    # The parameters moved, and the state lives on the parameter's device.
    first = next(iter(gpu_model.parameters()))
    assert not np.allclose(npy(first), npy(next(iter(_tiny_model(dtype).parameters()))))
    for p in gpu_model.parameters():
        for k, v in opt_g.state[p].items():
            if isinstance(v, torch.Tensor) and k != "step":
                assert v.is_cuda and v.dtype == p.dtype and v.shape == p.shape, k
    for pc, pg in zip(cpu.parameters(), gpu_model.parameters()):
        for k, v in opt_c.state[pc].items():
            if isinstance(v, torch.Tensor):
                np.testing.assert_allclose(npy(opt_g.state[pg][k]), npy(v), rtol=t, atol=t)


@pytest.mark.cuda
@needs_gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("make", [lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
                                  lambda ps: torch.optim.AdamW(ps, lr=1e-2)],
                         ids=["sgd", "adamw"])
def test_fused_step_half_precision(dtype, make):
    """Half parameters: the kernel computes in float and stores in the parameter's dtype;
    compare one step against the float32 CPU step on the same (rounded) values."""
    rng = np.random.default_rng(2)
    p32 = torch.from_numpy(rng.standard_normal((7, 9)).astype(np.float32)).to(dtype).float()
    g32 = torch.from_numpy(rng.standard_normal((7, 9)).astype(np.float32)).to(dtype).float()
    pc = p32.clone().requires_grad_()
    pg = p32.to(dtype).cuda().requires_grad_()
    pc.grad, pg.grad = g32.clone(), g32.to(dtype).cuda()
    oc, og = make([pc]), make([pg])
    for _ in range(3):
        oc.step()
        og.step()
    assert pg.dtype == dtype and pg.is_cuda
    np.testing.assert_allclose(npy(pg), npy(pc), rtol=tol(dtype), atol=tol(dtype))
    for v in og.state[pg].values():
        if isinstance(v, torch.Tensor) and v.ndim > 0:
            assert v.is_cuda and v.dtype == dtype


@pytest.mark.cuda
@needs_gpu
def test_fused_step_noncontiguous_grad_and_param_views():
    rng = np.random.default_rng(3)
    w = torch.from_numpy(rng.standard_normal((4, 6))).float()
    gt = torch.from_numpy(rng.standard_normal((6, 4))).float()
    pc, pg = w.clone().requires_grad_(), w.cuda().requires_grad_()
    pc.grad, pg.grad = gt.t().contiguous(), gt.cuda().t()  # a transposed CUDA gradient
    oc = torch.optim.Adam([pc], lr=0.1)
    og = torch.optim.Adam([pg], lr=0.1)
    oc.step()
    og.step()
    close(pg.detach(), pc.detach())


@pytest.mark.cuda
@needs_gpu
def test_fused_kernel_rejects_state_on_another_device():
    p = torch.ones(3, device="cuda")
    g = torch.ones(3, device="cuda")
    with pytest.raises(RuntimeError, match="device"):
        torch._C._fused_sgd_([p], [g], [torch.zeros(3)], [True], lr=0.1, momentum=0.9,
                             dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False)
    with pytest.raises(RuntimeError, match="same shape|shape"):
        torch._C._fused_adam_([p], [torch.ones(4, device="cuda")], [torch.zeros_like(p)],
                              [torch.zeros_like(p)], [], [torch.tensor(0.0)], lr=0.1,
                              beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=0.0,
                              amsgrad=False, maximize=False, decoupled=False)


@pytest.mark.cuda
@needs_gpu
def test_other_optimizers_still_run_on_cuda():
    """RMSprop/Adagrad/Adadelta have no CUDA kernel: they take the tensor-op path."""
    for make in (lambda ps: torch.optim.RMSprop(ps, lr=1e-2, momentum=0.5),
                 lambda ps: torch.optim.Adagrad(ps, lr=1e-1),
                 lambda ps: torch.optim.Adadelta(ps, lr=1.0)):
        cpu = _tiny_model()
        g = copy.deepcopy(cpu).cuda()
        x, y = torch.ones(4, 5), torch.zeros(4, 3)
        _train(cpu, make(cpu.parameters()), x, y, steps=3)
        _train(g, make(g.parameters()), x.cuda(), y.cuda(), steps=3)
        for pc, pg in zip(cpu.parameters(), g.parameters()):
            np.testing.assert_allclose(npy(pg), npy(pc), rtol=1e-4, atol=1e-5)


@pytest.mark.cuda
@needs_gpu
def test_zero_grad_accumulation_and_clip_grad_norm():
    cpu = _tiny_model()
    g = copy.deepcopy(cpu).cuda()
    x = torch.from_numpy(np.random.default_rng(4).standard_normal((6, 5))).float()
    for model, xx in ((cpu, x), (g, x.cuda())):
        model(xx).sum().backward()
        model(xx * 2).sum().backward()  # accumulates into .grad
    for pc, pg in zip(cpu.parameters(), g.parameters()):
        assert pg.grad.is_cuda
        close(pg.grad, pc.grad, rtol=1e-5, atol=1e-5)
    nc = torch.nn.utils.clip_grad_norm_(cpu.parameters(), 0.5)
    ng = torch.nn.utils.clip_grad_norm_(g.parameters(), 0.5)
    assert ng.item() == pytest.approx(nc.item(), rel=1e-5)
    ninf = torch.nn.utils.clip_grad_norm_(g.parameters(), 10.0, norm_type=math.inf)
    assert ninf.item() == pytest.approx(
        max(np.abs(npy(p.grad)).max() for p in cpu.parameters()), rel=1e-5)
    for pc, pg in zip(cpu.parameters(), g.parameters()):
        close(pg.grad, pc.grad, rtol=1e-5, atol=1e-6)
    torch.nn.utils.clip_grad_value_(g.parameters(), 1e-3)
    assert all(np.abs(npy(p.grad)).max() <= 1e-3 + 1e-9 for p in g.parameters())
    opt = torch.optim.SGD(g.parameters(), lr=0.1)
    opt.zero_grad(set_to_none=False)
    for p in g.parameters():
        assert p.grad.is_cuda and not npy(p.grad).any()
    opt.zero_grad()
    assert all(p.grad is None for p in g.parameters())


# ============================================================================ 2. random

@pytest.mark.cuda
@needs_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_randn_moments_of_a_million(dtype):
    torch.manual_seed(123)
    z = torch.randn(1000, 1000, device="cuda", dtype=dtype)
    assert z.is_cuda and z.dtype == dtype and z.shape == (1000, 1000)
    a = npy(z).astype(np.float64).ravel()
    assert abs(a.mean()) < 5e-3 and abs(a.std() - 1) < 5e-3
    assert abs(((a - a.mean()) ** 3).mean()) < 0.02  # symmetric
    assert abs((a ** 4).mean() - 3) < 0.05  # normal kurtosis
    assert np.isfinite(a).all() and len(np.unique(a)) > 990_000
    # Standard-normal tail mass: P(|z| > 2) = 0.0455.
    assert abs((np.abs(a) > 2).mean() - 0.0455) < 2e-3


@pytest.mark.cuda
@needs_gpu
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_rand_range_and_moments(dtype):
    u = npy(torch.rand(1_000_000, device="cuda", dtype=dtype)).astype(np.float64)
    assert u.min() >= 0.0 and u.max() < 1.0
    # bf16 rounds draws near 1 up to 1.0, which the kernel maps to 0: a bias of ~2e-3.
    t = 5e-3 if dtype == torch.bfloat16 else 3e-3
    assert abs(u.mean() - 0.5) < t and abs(u.var() - 1 / 12) < t
    hist = np.histogram(u, bins=10, range=(0, 1))[0] / u.size
    assert np.abs(hist - 0.1).max() < (0.02 if dtype == torch.bfloat16 else 3e-3)


@pytest.mark.cuda
@needs_gpu
def test_manual_seed_reproducible_on_gpu():
    torch.manual_seed(7)
    a = torch.randn(1001, device="cuda")
    b = torch.rand(5, 7, device="cuda")
    torch.manual_seed(7)
    a2 = torch.randn(1001, device="cuda")
    b2 = torch.rand(5, 7, device="cuda")
    np.testing.assert_array_equal(npy(a), npy(a2))
    np.testing.assert_array_equal(npy(b), npy(b2))
    a3 = torch.randn(1001, device="cuda")  # the stream moves on
    assert not np.array_equal(npy(a), npy(a3))
    torch.manual_seed(8)
    assert not np.array_equal(npy(torch.randn(1001, device="cuda")), npy(a))
    torch.cuda.manual_seed(7)
    np.testing.assert_array_equal(npy(torch.randn(1001, device="cuda")), npy(a))
    # A Generator object, and get/set_rng_state.
    g = torch.Generator().manual_seed(5)
    x = torch.randn(64, device="cuda", generator=g)
    g.manual_seed(5)
    np.testing.assert_array_equal(npy(torch.randn(64, device="cuda", generator=g)), npy(x))
    state = torch.get_rng_state()
    c = torch.rand(33, device="cuda")
    torch.set_rng_state(state)
    np.testing.assert_array_equal(npy(torch.rand(33, device="cuda")), npy(c))
    # Odd sizes: the tail of a Philox block is written too (no stale values).
    for n in (1, 2, 3, 5, 4097):
        torch.manual_seed(1)
        r = npy(torch.rand(n, device="cuda", dtype=torch.float64))
        torch.manual_seed(1)
        r2 = npy(torch.rand(n, device="cuda", dtype=torch.float64))
        np.testing.assert_array_equal(r, r2)
        assert ((r >= 0) & (r < 1)).all()


@pytest.mark.cuda
@needs_gpu
def test_like_and_normal_factories_on_gpu():
    x = torch.zeros(300, 400, device="cuda", dtype=torch.float64)
    r = torch.rand_like(x)
    n = torch.randn_like(x)
    assert r.is_cuda and n.is_cuda and r.dtype == n.dtype == torch.float64
    assert abs(npy(n).mean()) < 0.01 and 0 <= npy(r).min() and npy(r).max() < 1
    m = torch.normal(3.0, 2.0, size=(500, 400), device="cuda")
    assert m.is_cuda and abs(npy(m).mean() - 3) < 0.02 and abs(npy(m).std() - 2) < 0.02
    mean = torch.full((400, 500), -1.0, device="cuda")
    t = torch.normal(mean, 0.5)
    assert t.is_cuda and abs(npy(t).mean() + 1) < 0.01 and abs(npy(t).std() - 0.5) < 0.01
    assert torch.randn(3, 4, device="cuda", requires_grad=True).is_leaf
    assert torch.rand(0, 3, device="cuda").shape == (0, 3)
    with pytest.raises(RuntimeError):
        torch.randn(3, device="cuda", dtype=torch.int64)


@pytest.mark.cuda
@needs_gpu
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_inplace_fills_on_gpu(dtype):
    base = torch.empty(1000, 600, device="cuda", dtype=dtype)
    v = base.t()  # non-contiguous destination
    v.uniform_(-2.0, 3.0)
    a = npy(base).astype(np.float64)
    assert a.min() >= -2 and a.max() < 3 and abs(a.mean() - 0.5) < 0.02
    base.normal_(5.0, 2.0)
    a = npy(base).astype(np.float64)
    assert abs(a.mean() - 5) < 0.02 and abs(a.std() - 2) < 0.02
    if dtype in (torch.float32, torch.float64):
        base.exponential_(4.0)
        a = npy(base)
        assert a.min() >= 0 and abs(a.mean() - 0.25) < 3e-3
        base.log_normal_(0.0, 0.5)
        a = npy(base)
        assert a.min() > 0 and abs(np.log(a).mean()) < 5e-3
    base[::2].bernoulli_(0.25)
    a = npy(base[::2])
    assert set(np.unique(a)) <= {0.0, 1.0} and abs(a.mean() - 0.25) < 5e-3


@pytest.mark.cuda
@needs_gpu
def test_bernoulli_frequencies():
    torch.manual_seed(0)
    p = torch.full((1_000_000,), 0.3, device="cuda")
    b = torch.bernoulli(p)
    assert b.is_cuda and b.dtype == p.dtype
    a = npy(b)
    assert set(np.unique(a)) <= {0.0, 1.0} and abs(a.mean() - 0.3) < 3e-3
    # Per-element probabilities, broadcast rows, exact 0 and 1.
    probs = torch.tensor([0.0, 0.1, 0.5, 0.9, 1.0], device="cuda").reshape(5, 1).expand(5, 200_000)
    out = torch.empty(5, 200_000, device="cuda").bernoulli_(probs)
    freq = npy(out).mean(axis=1)
    np.testing.assert_allclose(freq, [0.0, 0.1, 0.5, 0.9, 1.0], atol=5e-3)
    assert freq[0] == 0.0 and freq[-1] == 1.0
    ints = torch.zeros(100_000, dtype=torch.int64, device="cuda").bernoulli_(0.75)
    assert ints.dtype == torch.int64 and abs(npy(ints).mean() - 0.75) < 0.01
    bools = torch.zeros(100_000, dtype=torch.bool, device="cuda").bernoulli_(0.5)
    assert bools.dtype == torch.bool and abs(npy(bools).mean() - 0.5) < 0.01
    with pytest.raises(RuntimeError, match="p_in|bernoulli"):
        torch.bernoulli(torch.tensor([0.5, 1.5], device="cuda"))
    with pytest.raises(RuntimeError, match="bernoulli"):
        torch.zeros(3, device="cuda").bernoulli_(2.0)


@pytest.mark.cuda
@needs_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16], ids=str)
def test_dropout_training_on_gpu(dtype):
    torch.manual_seed(0)
    x = (torch.rand(400, 500, dtype=dtype) + 0.5).cuda().requires_grad_()
    y = F.dropout(x, 0.3, training=True)
    assert y.is_cuda and y.dtype == dtype
    a, xa = npy(y), npy(x)
    dropped = a == 0
    assert abs(dropped.mean() - 0.3) < 5e-3
    np.testing.assert_allclose(a[~dropped], xa[~dropped] / 0.7, rtol=tol(dtype))
    y.sum().backward()
    g = npy(x.grad)
    np.testing.assert_allclose(g[~dropped], 1 / 0.7, rtol=tol(dtype))
    assert (g[dropped] == 0).all()
    m = nn.Dropout(0.5).cuda()
    z = torch.ones(1000, 100, device="cuda")
    m.train()
    assert abs((npy(m(z)) == 0).mean() - 0.5) < 0.01
    m.eval()
    np.testing.assert_array_equal(npy(m(z)), npy(z))
    c = F.dropout2d(torch.ones(8, 300, 4, 4, device="cuda"), 0.4, training=True)
    per_channel = npy(c).reshape(8, 300, 16)
    assert (per_channel.min(-1) == per_channel.max(-1)).all()  # whole channels
    assert abs((per_channel[..., 0] == 0).mean() - 0.4) < 0.05
    torch.manual_seed(3)
    d1 = npy(F.dropout(torch.ones(64, device="cuda"), 0.5))
    torch.manual_seed(3)
    np.testing.assert_array_equal(npy(F.dropout(torch.ones(64, device="cuda"), 0.5)), d1)


# ============================================================================ 3. reductions

VAR_CASES = [(None, 1, False), (1, 1, False), (0, 0, True), ((0, 2), 1, False),
             ((-1,), 2, True), ((0, 1, 2), 0, False)]


@pytest.mark.cuda
@needs_gpu
@pytest.mark.parametrize("dim,correction,keepdim", VAR_CASES)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_var_std_match_cpu(dim, correction, keepdim, dtype):
    for _name, c, g in layouts((4, 5, 6), dtype):
        for op in ("var", "std"):
            want = getattr(c, op)(dim=dim, correction=correction, keepdim=keepdim)
            got = getattr(g, op)(dim=dim, correction=correction, keepdim=keepdim)
            close(got, want, dtype)
        for op in ("var_mean", "std_mean"):
            wv, wm = getattr(torch, op)(c, dim=dim, correction=correction, keepdim=keepdim)
            gv, gm = getattr(torch, op)(g, dim=dim, correction=correction, keepdim=keepdim)
            close(gv, wv, dtype)
            close(gm, wm, dtype)


@pytest.mark.cuda
@needs_gpu
def test_var_edge_cases():
    c = torch.randn(3, 1, 4)
    g = c.cuda()
    close(g.var(1), c.var(1))  # one element, correction 1: NaN
    assert np.isnan(npy(g.var(1))).all()
    close(g.var(1, correction=0), c.var(1, correction=0))
    close(g.var(0, unbiased=False), c.var(0, unbiased=False))
    e = torch.zeros(0, 3, device="cuda")
    close(e.var(0), torch.zeros(0, 3).var(0))
    close(e.var(1), torch.zeros(0, 3).var(1))
    close(torch.tensor(2.0, device="cuda").var(correction=0), torch.tensor(2.0).var(correction=0))
    big = torch.randn(3, 70000, dtype=torch.float64) * 10 + 1000  # many threads per row
    close(big.cuda().var(1), big.var(1), rtol=1e-9)
    close(big.cuda().std(0), big.std(0), rtol=1e-9)
    with pytest.raises(RuntimeError, match="floating point"):
        torch.ones(3, dtype=torch.int64, device="cuda").var()


@pytest.mark.cuda
@needs_gpu
@pytest.mark.parametrize("dim", [None, 0, 1, (0, 2), -1])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_var_std_gradients(dim, dtype):
    for _name, c, g in layouts((3, 4, 5), dtype, seed=5):
        c = c.detach().requires_grad_()
        g = g.detach().requires_grad_()
        for op in ("var", "std"):
            w = torch.randn(*getattr(c, op)(dim=dim).shape, dtype=dtype)
            (getattr(c, op)(dim=dim) * w).sum().backward()
            (getattr(g, op)(dim=dim) * w.cuda()).sum().backward()
            close(g.grad, c.grad)
            c.grad = None
            g.grad = None


@pytest.mark.cuda
@needs_gpu
@pytest.mark.parametrize("dim,keepdim", [(0, False), (1, True), ((0, 2), False), (-1, False),
                                         ((0, 1, 2), True)])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_logsumexp_matches_cpu(dim, keepdim, dtype):
    for _name, c, g in layouts((4, 5, 6), dtype, seed=6):
        close(torch.logsumexp(g * 30, dim, keepdim), torch.logsumexp(c * 30, dim, keepdim), dtype)
        if dtype in (torch.float32, torch.float64):
            cg = c.detach().requires_grad_()
            gg = g.detach().requires_grad_()
            torch.logsumexp(cg, dim, keepdim).sum().backward()
            torch.logsumexp(gg, dim, keepdim).sum().backward()
            close(gg.grad, cg.grad)


@pytest.mark.cuda
@needs_gpu
def test_logsumexp_infinities_and_ints():
    c = torch.tensor([[-math.inf, -math.inf], [1.0, -math.inf], [math.inf, 1.0], [0.0, 0.0]])
    close(c.cuda().logsumexp(1), c.logsumexp(1))
    i = torch.arange(12).reshape(3, 4)
    close(i.cuda().logsumexp(1), i.logsumexp(1))
    close(torch.zeros(0, 3, device="cuda").logsumexp(0), torch.zeros(0, 3).logsumexp(0))


@pytest.mark.cuda
@needs_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.int64,
                                   torch.int32, torch.uint8], ids=str)
def test_argmax_argmin_match_cpu(dtype):
    rng = np.random.default_rng(7)
    a = rng.integers(0, 5, (4, 5, 6))  # many ties: first index wins
    c = torch.from_numpy(a).to(dtype)
    for gv in (c.cuda(), c.cuda().transpose(0, 2).contiguous().transpose(0, 2)):
        for op in ("argmax", "argmin"):
            for dim, keepdim in ((None, False), (None, True), (0, False), (1, True), (-1, False)):
                want = getattr(c, op)(dim=dim, keepdim=keepdim)
                got = getattr(gv, op)(dim=dim, keepdim=keepdim)
                assert got.is_cuda and got.dtype == torch.int64
                assert tuple(got.shape) == tuple(want.shape), (op, dim, keepdim)
                np.testing.assert_array_equal(npy(got), npy(want))
    assert torch.tensor(3.0, device="cuda").argmax().item() == 0


# ============================================================================ 4. indexing

IDX_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
              torch.int32, torch.uint8, torch.bool]


def _vals(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    return torch.from_numpy(rng.integers(0, 7, shape)).to(dtype)


@pytest.mark.cuda
@needs_gpu
@pytest.mark.parametrize("dtype", IDX_DTYPES, ids=str)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_matches_cpu(dtype, dim):
    x = _vals((4, 5), dtype, 0)
    rng = np.random.default_rng(1)
    d = dim % 2
    # A permutation per column/row: no duplicate targets, so scatter is deterministic.
    if d == 0:
        idx = np.stack([rng.permutation(4)[:3] for _ in range(5)], 1)
    else:
        idx = np.stack([rng.permutation(5)[:3] for _ in range(4)], 0)[:3]
    idx = torch.from_numpy(idx)
    src = _vals((6, 6), dtype, 2)
    for s_c, s_g in ((src, src.cuda()), (src.t(), src.cuda().t())):
        close(x.cuda().scatter(dim, idx.cuda(), s_g), x.scatter(dim, idx, s_c))
        xg = x.cuda()
        xg.scatter_(dim, idx.cuda(), s_g)
        close(xg, x.clone().scatter_(dim, idx, s_c))
    close(x.cuda().scatter(dim, idx.cuda(), 3), x.scatter(dim, idx, 3))
    # Non-contiguous destination (in place through a transposed view).
    base = _vals((5, 4), dtype, 3)
    gb = base.cuda()
    gb.t().scatter_(dim, idx.cuda(), src.cuda())
    cb = base.clone()
    cb.t().scatter_(dim, idx, src)
    close(gb, cb)


@pytest.mark.cuda
@needs_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16,
                                   torch.int64, torch.int32], ids=str)
def test_scatter_add_and_index_add_match_cpu(dtype):
    x = _vals((4, 5), dtype, 0)
    idx = torch.tensor([[0, 1, 2, 3, 0], [3, 3, 3, 3, 3], [0, 0, 1, 1, 2]])  # duplicates add
    src = _vals((3, 5), dtype, 1)
    close(x.cuda().scatter_add(0, idx.cuda(), src.cuda()), x.scatter_add(0, idx, src))
    g = x.cuda()
    g.t().scatter_add_(1, idx.cuda().t().contiguous().t(), src.cuda())  # strided index
    c = x.clone()
    c.t().scatter_add_(1, idx.t().contiguous().t(), src)
    close(g, c)
    ii = torch.tensor([4, 0, 4, 2])
    s2 = _vals((4, 4), dtype, 2)
    close(x.cuda().index_add(1, ii.cuda(), s2.cuda()), x.index_add(1, ii, s2))
    i2, s3 = torch.tensor([3, 0]), _vals((2, 5), dtype, 4)
    close(x.cuda().index_add(0, i2.cuda(), s3.cuda().t().contiguous().t(), alpha=3),
          x.index_add(0, i2, s3, alpha=3))
    g = x.cuda()
    g.t().index_add_(0, ii.cuda(), s2.t().cuda())
    c = x.clone()
    c.t().index_add_(0, ii, s2.t())
    close(g, c)
    with pytest.raises(IndexError):
        x.cuda().index_add_(0, torch.tensor([9]).cuda(), _vals((1, 5), dtype, 5).cuda())
    with pytest.raises(RuntimeError, match="out of bounds|index"):
        x.cuda().scatter_add_(0, torch.tensor([[9]]).cuda(), src.cuda())


@pytest.mark.cuda
@needs_gpu
def test_scatter_index_add_gradients():
    rng = np.random.default_rng(9)
    x = torch.from_numpy(rng.standard_normal((4, 5)))
    src = torch.from_numpy(rng.standard_normal((3, 5)))
    idx = torch.tensor([[0, 1, 2, 3, 0], [3, 2, 1, 0, 3], [1, 0, 3, 2, 1]])
    for op in ("scatter", "scatter_add"):
        grads = []
        for dev in ("cpu", "cuda"):
            xx = x.to(dev).detach().requires_grad_()
            ss = src.to(dev).detach().requires_grad_()
            out = getattr(xx, op)(0, idx.to(dev), ss)
            (out * torch.arange(20.0, dtype=torch.float64).reshape(4, 5).to(dev)).sum().backward()
            grads.append((xx.grad, ss.grad))
        close(grads[1][0], grads[0][0])
        close(grads[1][1], grads[0][1])
    ii = torch.tensor([3, 1, 3])
    grads = []
    for dev in ("cpu", "cuda"):
        xx = x.to(dev).detach().requires_grad_()
        ss = src.to(dev).detach().requires_grad_()
        (xx.index_add(0, ii.to(dev), ss, alpha=2.0) ** 2).sum().backward()
        grads.append((xx.grad, ss.grad))
    close(grads[1][0], grads[0][0])
    close(grads[1][1], grads[0][1])


@pytest.mark.cuda
@needs_gpu
@pytest.mark.parametrize("dtype", IDX_DTYPES, ids=str)
def test_masked_fill_matches_cpu(dtype):
    x = _vals((4, 5), dtype, 0)
    m = torch.from_numpy(np.random.default_rng(1).random((4, 5)) > 0.5)
    row = torch.tensor([True, False, True, False, False])
    for mc in (m, row, m.t().contiguous().t()):
        close(x.cuda().masked_fill(mc.cuda(), 1), x.masked_fill(mc, 1))
        g = x.cuda()
        g.masked_fill_(mc.cuda(), 3)
        close(g, x.clone().masked_fill_(mc, 3))
    # Non-contiguous destinations and masks.
    close(x.cuda().t().masked_fill(m.t().cuda(), 1), x.t().masked_fill(m.t(), 1))
    g = x.cuda()
    g.t().masked_fill_(m.cuda().t(), 0)
    c = x.clone()
    c.t().masked_fill_(m.t(), 0)
    close(g, c)
    g = x.cuda()
    g[:, ::2].masked_fill_(row[::2].cuda(), 5)
    c = x.clone()
    c[:, ::2].masked_fill_(row[::2], 5)
    close(g, c)
    close(x.cuda().masked_fill(row.cuda(), torch.tensor(2)), x.masked_fill(row, torch.tensor(2)))
    close(x[0].cuda().masked_fill(m.cuda(), 1), x[0].masked_fill(m, 1))  # broadcasts self
    if dtype.is_floating_point:
        xf = x.float()
        close(xf.cuda().masked_fill(m.cuda(), float("-inf")), xf.masked_fill(m, float("-inf")))
    with pytest.raises(RuntimeError, match="bool"):
        x.cuda().masked_fill(m.cuda().to(torch.int64), 1)


@pytest.mark.cuda
@needs_gpu
def test_masked_fill_gradient():
    rng = np.random.default_rng(2)
    x = torch.from_numpy(rng.standard_normal((3, 4)))
    m = torch.from_numpy(rng.random((3, 4)) > 0.5)
    gs = []
    for dev in ("cpu", "cuda"):
        xx = x.to(dev).detach().requires_grad_()
        (xx.masked_fill(m.to(dev), 0.5) * xx).sum().backward()
        gs.append(xx.grad)
    close(gs[1], gs[0])


@pytest.mark.cuda
@needs_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bool], ids=str)
def test_advanced_indexing_get(dtype):
    x = _vals((5, 6, 4), dtype, 0)
    g = x.cuda()
    i = torch.tensor([4, 0, 2, 2])
    j = torch.tensor([[1, 5], [0, 0]])
    m = torch.from_numpy(np.random.default_rng(3).random((5, 6)) > 0.4)
    cases = [
        lambda t, d: t[i.to(d)],
        lambda t, d: t[:, j.to(d)],
        lambda t, d: t[i.to(d), i.to(d)],
        lambda t, d: t[1:, j.to(d), 2],
        lambda t, d: t[m.to(d)],
        lambda t, d: t[t.sum(-1) > 6] if dtype != torch.bool else t[m.to(d)],
        lambda t, d: t[-1, [0, 2, 5]],
        lambda t, d: t[[True, False, True, True, False]],
        lambda t, d: t.transpose(0, 1)[i.to(d) % 4],
    ]
    for k, f in enumerate(cases):
        want, got = f(x, "cpu"), f(g, "cuda")
        assert got.is_cuda, k
        close(got, want)


@pytest.mark.cuda
@needs_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64], ids=str)
def test_advanced_indexing_set(dtype):
    x = _vals((5, 6), dtype, 0)
    m = torch.from_numpy(np.random.default_rng(4).random((5, 6)) > 0.5)
    i = torch.tensor([3, 0, 4])
    setters = [
        lambda t, d: t.__setitem__(i.to(d), 7),
        lambda t, d: t.__setitem__(m.to(d), 9),
        lambda t, d: t.__setitem__(m.to(d), torch.arange(int(m.sum())).to(dtype).to(d)),
        lambda t, d: t.__setitem__((slice(None), i.to(d)), torch.ones(5, 3, dtype=dtype).to(d)),
        lambda t, d: t.__setitem__((i.to(d), i.to(d)), torch.tensor([1, 2, 3]).to(dtype).to(d)),
        lambda t, d: t.t().__setitem__(i.to(d), 5),
        lambda t, d: t.index_put_((i.to(d),), torch.ones(6, dtype=dtype).to(d), accumulate=True),
        lambda t, d: t.index_put_((torch.tensor([1, 1, 1]).to(d), torch.tensor([2, 2, 3]).to(d)),
                                  torch.tensor([1, 2, 4]).to(dtype).to(d), accumulate=True),
    ]
    for f in setters:
        c, g = x.clone(), x.cuda()
        f(c, "cpu")
        f(g, "cuda")
        close(g, c)


@pytest.mark.cuda
@needs_gpu
def test_advanced_indexing_gradients():
    rng = np.random.default_rng(5)
    x = torch.from_numpy(rng.standard_normal((5, 4)))
    m = torch.from_numpy(rng.random((5, 4)) > 0.5)
    i = torch.tensor([1, 1, 3])
    gs = []
    for dev in ("cpu", "cuda"):
        xx = x.to(dev).detach().requires_grad_()
        (xx[i.to(dev)] * 2).sum().backward()
        (xx[m.to(dev)] ** 2).sum().backward()
        gs.append(xx.grad)
    close(gs[1], gs[0])


@pytest.mark.cuda
@needs_gpu
def test_index_errors_are_clear():
    g = torch.zeros(3, 4, device="cuda")
    with pytest.raises(IndexError):
        g[torch.tensor([5], device="cuda")]
    with pytest.raises(IndexError):
        g[torch.ones(2, 4, dtype=torch.bool, device="cuda")]


# ============================================================================ no GPU needed

def test_fused_optimizer_path_unchanged_on_cpu():
    """The CUDA plumbing leaves the CPU fused path alone (reference: unfused tensor ops)."""
    x = torch.from_numpy(np.random.default_rng(0).standard_normal((8, 5))).float()
    y = torch.zeros(8, 3)
    for name in ("sgd_momentum", "adam", "adamw_amsgrad"):
        a, b = _tiny_model(), _tiny_model()
        fused = OPTIMS[name](a.parameters())
        make = OPTIMS[name]
        plain = make(b.parameters())
        for grp in plain.param_groups:
            grp["fused"] = False
        _train(a, fused, x, y, steps=5)
        _train(b, plain, x, y, steps=5)
        for pa, pb in zip(a.parameters(), b.parameters()):
            np.testing.assert_allclose(pa.detach().numpy(), pb.detach().numpy(), rtol=1e-5,
                                       atol=1e-6)
