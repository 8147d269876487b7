"""Functions written in Python (nn.functional, nn modules, statistics, special functions,
linalg wrappers) on CUDA tensors.

They used to build helper tensors (masks, index tables, zeros, constants) on the CPU, or to
return the CPU result of a CPU-only native kernel. Every test runs the same call on CPU and
CUDA copies of the inputs and checks that the CUDA result is on the GPU and equals the CPU one
(which the other test files check against NumPy), and that the gradients agree. Without a GPU
they skip.
"""

import math

import numpy as np
import pytest

import ferrotorch as torch
import ferrotorch.nn as nn
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


def rand(rng, shape, dtype=torch.float64, lo=-1.0, hi=1.0):
    return torch.from_numpy(rng.uniform(lo, hi, shape)).to(dtype)


def leaf(t, device):
    t = t.detach().to(device).clone()
    t.requires_grad_(True)
    return t


def tensors_of(out):
    """The tensors of a result: a tensor, or (nested) tuples / lists / named tuples."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in tensors_of(o)]
    return []


def check_same(out_g, out_c, **t):
    """Every tensor of the CUDA result is on the GPU, with the CPU result's dtype, shape and
    values."""
    gs, cs = tensors_of(out_g), tensors_of(out_c)
    assert len(gs) == len(cs) and cs
    for g, c in zip(gs, cs):
        assert g.is_cuda, f"a result is on {g.device}, not on the GPU"
        assert g.dtype == c.dtype and tuple(g.shape) == tuple(c.shape)
        if g.dtype == torch.bool or not g.is_floating_point():
            np.testing.assert_array_equal(cpu_np(g), cpu_np(c))
        else:
            np.testing.assert_allclose(cpu_np(g), cpu_np(c), **t)


def compare(fn, inputs, dtype=torch.float64, grad_of=None, upstream_seed=1, fn_gpu=None, **kw):
    """Run ``fn`` on CPU and CUDA copies of ``inputs`` (CPU tensors, or other values passed
    as they are; ``fn_gpu``, when given, runs on the CUDA copies instead of ``fn``); compare
    the results (a tensor or tuples of tensors) and the gradients of ``sum(out_k * g_k)``
    over the floating outputs w.r.t. the inputs listed in ``grad_of`` (all floating tensor
    inputs by default, none with ``grad_of=[]``)."""
    t = dict(tol(dtype), **kw)
    is_t = [isinstance(x, torch.Tensor) for x in inputs]
    if grad_of is None:
        grad_of = [i for i, x in enumerate(inputs) if is_t[i] and x.is_floating_point()]
    cpu = [leaf(x, "cpu") if i in grad_of else x for i, x in enumerate(inputs)]
    gpu = [
        leaf(x, "cuda") if i in grad_of else (x.cuda() if is_t[i] else x)
        for i, x in enumerate(inputs)
    ]
    out_c = fn(*cpu)
    out_g = (fn if fn_gpu is None else fn_gpu)(*gpu)
    check_same(out_g, out_c, **t)
    if grad_of:
        rng = np.random.default_rng(upstream_seed)
        loss_c = loss_g = 0
        for c, g in zip(tensors_of(out_c), tensors_of(out_g)):
            if c.is_floating_point() and c.requires_grad:
                up = torch.from_numpy(rng.uniform(-1, 1, tuple(c.shape))).to(c.dtype)
                loss_c = loss_c + (c * up).sum()
                loss_g = loss_g + (g * up.cuda()).sum()
        loss_c.backward()
        loss_g.backward()
        for i in grad_of:
            gc, gg = cpu[i].grad, gpu[i].grad
            assert gg is not None and gg.is_cuda, f"input {i} got no CUDA gradient"
            assert gg.shape == gc.shape and gg.dtype == gc.dtype
            np.testing.assert_allclose(cpu_np(gg), cpu_np(gc), **t)
    return out_c, out_g


def ints(rng, shape, high, dtype=torch.int64):
    return torch.from_numpy(rng.integers(0, high, shape)).to(dtype)


# ----------------------------------------------------------------------------- normalisation


@pytest.mark.parametrize("dtype", FLOATS + [torch.float16], ids=str)
def test_local_response_norm(dtype):
    rng = np.random.default_rng(0)
    x = rand(rng, (2, 6, 4, 5), dtype)
    compare(lambda a: F.local_response_norm(a, 3), [x], dtype)
    compare(lambda a: F.local_response_norm(a, 4, alpha=1e-2, beta=0.5, k=2.0), [x], dtype)
    compare(lambda a: F.local_response_norm(a[:, :, 0], 2), [x], dtype)  # 3-D, strided
    compare(lambda a: nn.LocalResponseNorm(5)(a.unsqueeze(2)), [x], dtype)  # 5-D


# ----------------------------------------------------------------------------- 3-d pools


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_max_pool3d(dtype):
    rng = np.random.default_rng(1)
    x = rand(rng, (1, 2, 4, 4, 4), dtype)
    compare(lambda a: F.max_pool3d(a, 2), [x], dtype)
    y = rand(rng, (2, 3, 5, 6, 7), dtype)
    compare(lambda a: F.max_pool3d(a, 3, 2, 1), [y], dtype)
    compare(lambda a: F.max_pool3d(a, (2, 3, 2), (1, 2, 2), (1, 1, 0), (2, 1, 1), True), [y], dtype)
    compare(lambda a: F.max_pool3d(a[0], 2, return_indices=True), [y], dtype)  # unbatched
    compare(lambda a: nn.MaxPool3d(2, 1)(a.transpose(2, 4)), [y], dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("cip", [True, False])
def test_avg_pool3d(dtype, cip):
    rng = np.random.default_rng(2)
    x = rand(rng, (1, 2, 4, 4, 4), dtype)
    compare(lambda a: F.avg_pool3d(a, 2, count_include_pad=cip), [x], dtype)
    y = rand(rng, (2, 3, 5, 6, 7), dtype)
    compare(lambda a: F.avg_pool3d(a, 3, 2, 1, count_include_pad=cip), [y], dtype)
    compare(lambda a: F.avg_pool3d(a, (3, 2, 2), 2, 1, True, cip), [y], dtype)
    compare(lambda a: F.avg_pool3d(a[0], 2, divisor_override=3), [y], dtype)
    compare(lambda a: F.lp_pool3d(a.abs() + 0.1, 2.0, 2), [y], dtype)
    compare(lambda a: F.adaptive_avg_pool3d(a, (2, 3, 3)), [y], dtype)


def test_conv3d_with_depth_padding():
    rng = np.random.default_rng(3)
    x = rand(rng, (2, 2, 4, 5, 5))
    w = rand(rng, (3, 2, 3, 2, 2))
    b = rand(rng, (3,))
    compare(lambda a, ww, bb: F.conv3d(a, ww, bb, padding=1), [x, w, b])
    compare(lambda a, ww: F.conv3d(a, ww, padding="same"), [x, w])


# ----------------------------------------------------------------------------- unfold / fold


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_unfold_fold(dtype):
    rng = np.random.default_rng(4)
    x = rand(rng, (2, 3, 5, 6), dtype)
    compare(lambda a: F.unfold(a, 2), [x], dtype)
    compare(lambda a: F.unfold(a, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)), [x], dtype)
    compare(lambda a: F.unfold(a[0], 3), [x], dtype)  # unbatched
    compare(lambda a: nn.Unfold(2, stride=2)(a), [x], dtype)
    cols = rand(rng, (2, 8, 4), dtype)  # C=2, 2x2 kernel, 2x2 blocks of a 3x3 output
    compare(lambda a: F.fold(a, (3, 3), 2), [cols], dtype)
    compare(lambda a: F.fold(a[1], (3, 3), 2), [cols], dtype)  # unbatched
    cols2 = rand(rng, (1, 12, 12), dtype)  # C=3, 2x2 kernel, stride 2, padding 1 of 5x7
    compare(lambda a: F.fold(a, (5, 7), 2, padding=1, stride=2), [cols2], dtype)


# ----------------------------------------------------------------------------- one_hot


def test_one_hot():
    rng = np.random.default_rng(5)
    i = ints(rng, (3, 4), 5)
    compare(lambda a: F.one_hot(a, 5), [i])
    compare(lambda a: F.one_hot(a), [i])
    compare(lambda a: F.one_hot(a[:, 1], 7), [i])
    e = F.one_hot(torch.zeros(0, dtype=torch.int64, device="cuda"), 3)
    assert e.is_cuda and tuple(e.shape) == (0, 3)


# ----------------------------------------------------------------------------- attention


@pytest.mark.parametrize("dtype", FLOATS + [torch.float16], ids=str)
def test_scaled_dot_product_attention(dtype):
    rng = np.random.default_rng(6)
    q = rand(rng, (2, 3, 4, 8), dtype)
    k = rand(rng, (2, 3, 6, 8), dtype)
    v = rand(rng, (2, 3, 6, 5), dtype)
    sdpa = F.scaled_dot_product_attention
    compare(lambda a, b, c: sdpa(a, b, c, is_causal=True), [q, k, v], dtype)
    compare(lambda a, b, c: sdpa(a, b, c, is_causal=True), [q, q, q], dtype)  # L == S
    mask = torch.from_numpy(rng.random((4, 6)) > 0.3)
    mask[:, 0] = True  # every query attends to something
    compare(lambda a, b, c, m: sdpa(a, b, c, attn_mask=m), [q, k, v, mask], dtype)
    fmask = rand(rng, (1, 3, 4, 6), dtype)
    compare(
        lambda a, b, c, m: sdpa(a, b, c, attn_mask=m, scale=0.3),
        [q, k, v, fmask],
        dtype,
        grad_of=[0, 1, 2],
    )
    kg = rand(rng, (2, 1, 6, 8), dtype)
    vg = rand(rng, (2, 1, 6, 5), dtype)
    compare(lambda a, b, c: sdpa(a, b, c, is_causal=True, enable_gqa=True), [q, kg, vg], dtype)


@pytest.mark.parametrize("need_weights", [True, False])
def test_multihead_attention_masks_and_zero_attn(need_weights):
    rng = np.random.default_rng(7)
    m = nn.MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True).double()
    mg = nn.MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True).double()
    mg.load_state_dict(m.state_dict())
    mg.to("cuda")
    q = rand(rng, (5, 3, 8))
    kpm = torch.from_numpy(rng.random((3, 4)) > 0.7)
    kpm[:, 0] = False
    am = torch.from_numpy(rng.random((5, 4)) > 0.8)
    am[:, 0] = False
    mask = nn.Transformer.generate_square_subsequent_mask(5, device="cuda", dtype=torch.float64)
    assert mask.is_cuda
    np.testing.assert_array_equal(
        cpu_np(mask), cpu_np(nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64))
    )

    def run(module, x, k, pad, attn):
        return module(x, k, k, key_padding_mask=pad, attn_mask=attn, need_weights=need_weights)

    kv = rand(rng, (4, 3, 8))
    xc, xg = leaf(q, "cpu"), leaf(q, "cuda")
    out_c = run(m, xc, kv, kpm, am)
    out_g = run(mg, xg, kv.cuda(), kpm.cuda(), am.cuda())
    check_same(
        [o for o in out_g if o is not None],
        [o for o in out_c if o is not None],
        **tol(torch.float64),
    )
    out_c[0].sum().backward()
    out_g[0].sum().backward()
    np.testing.assert_allclose(cpu_np(xg.grad), cpu_np(xc.grad), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(
        cpu_np(mg.in_proj_weight.grad), cpu_np(m.in_proj_weight.grad), rtol=1e-10, atol=1e-10
    )
    y_c = m(
        xc.detach(),
        xc.detach(),
        xc.detach(),
        attn_mask=mask.cpu(),
        is_causal=True,
        need_weights=need_weights,
    )
    y_g = mg(
        xg.detach(),
        xg.detach(),
        xg.detach(),
        attn_mask=mask,
        is_causal=True,
        need_weights=need_weights,
    )
    check_same(y_g[0], y_c[0], **tol(torch.float64))


# ----------------------------------------------------------------------------- recurrent layers


def module_pair(make, dtype=torch.float64):
    """A module on the CPU and a copy with the same parameters moved by ``.to('cuda')``."""
    m = make().to(dtype)
    mg = make().to(dtype)
    mg.load_state_dict(m.state_dict())
    mg.to("cuda")
    return m, mg


def check_param_grads(m, mg, dtype):
    for (name, p), (_, pg) in zip(m.named_parameters(), mg.named_parameters()):
        assert pg.is_cuda and pg.grad is not None and pg.grad.is_cuda, name
        np.testing.assert_allclose(cpu_np(pg.grad), cpu_np(p.grad), err_msg=name, **tol(dtype))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_recurrent_modules_moved_to_cuda(dtype, kind):
    rng = np.random.default_rng(8)
    cls = getattr(nn, kind)
    for kwargs in ({}, {"num_layers": 2, "bidirectional": True}, {"batch_first": True}):
        m, mg = module_pair(lambda: cls(3, 4, **kwargs), dtype)  # noqa: B023
        x = rand(rng, (5, 2, 3), dtype)
        compare(m, [x], dtype, fn_gpu=mg)
        check_param_grads(m, mg, dtype)
    # unbatched input, and an explicit initial state
    m, mg = module_pair(lambda: cls(3, 4, num_layers=2), dtype)
    x = rand(rng, (5, 3), dtype)
    compare(m, [x], dtype, fn_gpu=mg)
    h0 = rand(rng, (2, 2, 4), dtype)
    x = rand(rng, (5, 2, 3), dtype)
    if kind == "LSTM":
        c0 = rand(rng, (2, 2, 4), dtype)
        compare(
            lambda a, h, c: m(a, (h, c)), [x, h0, c0], dtype, fn_gpu=lambda a, h, c: mg(a, (h, c))
        )
    else:
        compare(m, [x, h0], dtype, fn_gpu=mg)


def test_lstm_projection_and_cells():
    rng = np.random.default_rng(9)
    m, mg = module_pair(lambda: nn.LSTM(3, 5, proj_size=2, num_layers=2))
    x = rand(rng, (4, 2, 3))
    compare(m, [x], fn_gpu=mg)
    check_param_grads(m, mg, torch.float64)
    for cls in (nn.LSTMCell, nn.GRUCell, nn.RNNCell):
        c, cg = module_pair(lambda: cls(3, 4))  # noqa: B023
        compare(c, [x[0]], fn_gpu=cg)
        compare(c, [x[0, 0]], fn_gpu=cg)  # unbatched
        check_param_grads(c, cg, torch.float64)


def test_packed_sequences_on_cuda():
    from ferrotorch.nn.utils.rnn import (
        pack_padded_sequence,
        pack_sequence,
        pad_packed_sequence,
        pad_sequence,
    )

    rng = np.random.default_rng(10)
    m, mg = module_pair(lambda: nn.LSTM(3, 4, bidirectional=True))
    x = rand(rng, (5, 3, 3))
    lengths = [2, 5, 3]

    def run(module, a):
        packed = pack_padded_sequence(a, lengths, enforce_sorted=False)
        assert packed.is_cuda == a.is_cuda
        if module is mg:
            assert packed.sorted_indices.is_cuda and not packed.batch_sizes.is_cuda
        out, (h, c) = module(packed)
        padded, lens = pad_packed_sequence(out, total_length=6)
        assert not lens.is_cuda  # the lengths stay on the CPU, as PyTorch's
        np.testing.assert_array_equal(lens.numpy(), lengths)
        return padded, h, c

    compare(lambda a: run(m, a), [x], fn_gpu=lambda a: run(mg, a))
    check_param_grads(m, mg, torch.float64)
    seqs = [rand(rng, (n, 2)) for n in (3, 1, 4)]
    compare(lambda a, b, c: pad_sequence([a, b, c], batch_first=True, padding_value=-1.0), seqs)
    compare(lambda a, b, c: pad_packed_sequence(pack_sequence([a, b, c], False))[0], seqs)
    p = pack_sequence([s.cuda() for s in seqs], enforce_sorted=False)
    assert p.is_cuda and p.cpu().data.device.type == "cpu" and not p.cpu().is_cuda
    assert p.cpu().sorted_indices.device.type == "cpu"
    assert p.cpu().cuda().is_cuda and p.cpu().cuda().sorted_indices.is_cuda


# ----------------------------------------------------------------------------- statistics


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile(dtype, interpolation):
    rng = np.random.default_rng(11)
    x = rand(rng, (4, 9), dtype)
    kw = {"interpolation": interpolation}
    compare(lambda a: torch.quantile(a, 0.3, dim=1, **kw), [x], dtype)
    compare(lambda a: a.quantile(0.75, dim=0, keepdim=True, **kw), [x], dtype)
    compare(lambda a: torch.quantile(a, 0.5, **kw), [x], dtype)
    q = torch.tensor([0.1, 0.5, 0.9], dtype=dtype)
    # q gets a gradient through the linear weights only
    compare(
        lambda a, qq: torch.quantile(a, qq, dim=1, **kw),
        [x, q],
        dtype,
        grad_of=[0, 1] if interpolation == "linear" else [0],
    )
    xn = x.clone()
    xn[1, 2] = math.nan
    compare(lambda a: torch.nanquantile(a, 0.4, dim=1, **kw), [xn], dtype, equal_nan=True)
    compare(lambda a: torch.quantile(a, 0.4, dim=1, **kw), [xn], dtype, grad_of=[], equal_nan=True)
    with pytest.raises(RuntimeError, match="same device"):
        torch.quantile(x.cuda(), q)


def test_cov_corrcoef_trapezoid_combinations_logcumsumexp():
    rng = np.random.default_rng(12)
    x = rand(rng, (3, 7))
    fw = ints(rng, (7,), 4) + 1
    aw = rand(rng, (7,), lo=0.1, hi=1.0)
    compare(lambda a: torch.cov(a), [x])
    compare(lambda a, f, w: torch.cov(a, fweights=f, aweights=w, correction=0), [x, fw, aw])
    # (values only: the clip at +-1 makes the diagonal's gradient depend on the last ulp)
    compare(lambda a: torch.corrcoef(a), [x], grad_of=[])
    xs = [0.0, 0.5, 1.5, 2.0, 3.5, 4.0, 6.0]
    compare(lambda a: torch.trapezoid(a, xs), [x])
    compare(lambda a: torch.trapezoid(a, dx=0.5, dim=0), [x])
    compare(lambda a: torch.trapezoid(a[:, :0]), [x], grad_of=[])
    compare(lambda a: torch.cumulative_trapezoid(a, xs), [x])
    compare(lambda a: torch.cumulative_trapezoid(a, dx=2.0, dim=0), [x])
    compare(lambda a: torch.combinations(a[0], 2), [x])
    compare(lambda a: torch.combinations(a[0, :4], 3, with_replacement=True), [x])
    compare(lambda a: torch.combinations(a[0], 0), [x], grad_of=[])
    compare(lambda a: torch.logcumsumexp(a * 30, 1), [x])
    compare(lambda a: a.logcumsumexp(0), [x])


def test_special_functions():
    rng = np.random.default_rng(13)
    x = rand(rng, (11,), lo=-3, hi=3)
    x[0] = 0.0
    p = rand(rng, (11,), lo=0.01, hi=0.99)
    sp = torch.special
    compare(lambda a, b: sp.xlog1py(a, b), [x, p])
    compare(lambda a: sp.entr(a), [p])
    compare(lambda a: sp.entr(a), [x], grad_of=[])  # -inf for negatives
    compare(lambda a: sp.ndtri(a), [p])
    compare(lambda a: sp.log_ndtr(a * 10), [x])
    compare(lambda a: sp.i0(a * 15), [x])
    compare(lambda a: sp.i0e(a * 15), [x])
    compare(lambda a: torch.i0(a), [x])
    compare(lambda a: sp.multigammaln(a.abs() + 2, 3), [x])
    compare(lambda a: torch.mvlgamma(a.abs() + 2, 2), [x])
    compare(lambda a: sp.logit(a, eps=0.2), [p])
    compare(lambda a: sp.xlog1py(a, 0.5), [x])  # a number for other: on the input's device
    compare(lambda a: sp.multigammaln(a.abs() + 0.3, 3), [x])  # no domain check (torch 2.15)


def test_compare_helpers():
    rng = np.random.default_rng(14)
    x = rand(rng, (4, 5))
    y = x + 1e-9
    xg, yg = x.cuda(), y.cuda()
    assert torch.allclose(xg, yg) and not torch.allclose(xg, yg + 1)
    assert torch.equal(xg, xg.clone()) and not torch.equal(xg, yg)
    assert xg.allclose(yg) and xg.equal(xg)
    compare(lambda a: torch.isclose(a, 0.5, atol=0.3), [x], grad_of=[])
    i = ints(rng, (6,), 5)
    compare(lambda a: torch.isin(a, [1, 3]), [i])
    compare(lambda a, b: torch.isin(a, b, invert=True), [i, i[:2]])
    compare(lambda a, b: torch.cdist(a, b), [x, rand(rng, (3, 5))])
    compare(lambda a, b: torch.cdist(a, b, p=1.0), [x, x[:2]])
    compare(lambda a: torch.diff(a, dim=1, prepend=0.5, append=a[:, :1]), [x])
    compare(lambda a: torch.logit(a.sigmoid(), eps=0.3), [x])
    t = torch.triu_indices(4, 5, 1, device="cuda")
    assert t.is_cuda
    np.testing.assert_array_equal(cpu_np(t), cpu_np(torch.triu_indices(4, 5, 1)))
    assert torch.tril_indices(3, 3, device="cuda").is_cuda


# ----------------------------------------------------------------------------- norms


@pytest.mark.parametrize("dtype", FLOATS + HALFS, ids=str)
def test_norms(dtype):
    rng = np.random.default_rng(15)
    x = rand(rng, (4, 9), dtype)
    x[1] = 0.0  # a zero row: the gradient there is 0, not nan
    inf = float("inf")
    compare(lambda a: a.norm(dim=1), [x], dtype)
    compare(lambda a: torch.norm(a), [x], dtype)
    compare(lambda a: torch.norm(a, p=1, dim=0, keepdim=True), [x], dtype)
    compare(lambda a: torch.norm(a, 3, dim=(0, 1)), [x], dtype)
    for o in (2, 1, 3, 0.5, inf, -inf):
        compare(lambda a: torch.linalg.vector_norm(a, o, dim=1), [x], dtype)  # noqa: B023
        compare(
            lambda a: torch.linalg.vector_norm(a.t(), o, dim=(0,), keepdim=True),  # noqa: B023
            [x],
            dtype,
        )
    # through the CPU; no gradient (PyTorch's norm_backward leaves it undefined for p = 0)
    compare(lambda a: torch.linalg.vector_norm(a, 0, dim=1), [x], dtype, grad_of=[])
    compare(lambda a: torch.linalg.vector_norm(a, -2), [x], dtype)
    compare(lambda a: torch.linalg.vector_norm(a[0, 0]), [x], dtype)  # 0-d
    compare(lambda a: torch.linalg.norm(a), [x], dtype)
    compare(lambda a: torch.linalg.matrix_norm(a), [x], dtype)
    compare(lambda a: torch.dist(a, a.flip(1)), [x], dtype)
    if dtype in FLOATS:
        for o in ("nuc", 2, -2, 1, inf):
            compare(lambda a: torch.linalg.matrix_norm(a, o), [x + 0.5], dtype)  # noqa: B023
        compare(lambda a: torch.linalg.norm(a, "fro", dim=(1, 0), keepdim=True), [x], dtype)
        compare(
            lambda a: torch.linalg.vector_norm(a, dtype=torch.float64), [x.float()], torch.float64
        )
    with pytest.raises(RuntimeError, match="floating point"):
        torch.linalg.vector_norm(torch.ones(3, dtype=torch.int64, device="cuda"))


# ----------------------------------------------------------------------------- counting


def test_bincount_histc_count_nonzero_searchsorted():
    rng = np.random.default_rng(16)
    i = ints(rng, (30,), 6)
    w = rand(rng, (30,))
    compare(lambda a: torch.bincount(a), [i])
    compare(lambda a: a.bincount(minlength=9), [i])
    compare(lambda a, ww: torch.bincount(a, ww), [i, w], grad_of=[])
    compare(lambda a: torch.histc(a, 5), [w], grad_of=[])
    compare(lambda a: a.histc(4, -0.5, 0.5), [w], grad_of=[])
    x = rand(rng, (4, 6))
    x[x.abs() < 0.4] = 0.0
    compare(lambda a: torch.count_nonzero(a), [x], grad_of=[])
    compare(lambda a: torch.count_nonzero(a, dim=1), [x], grad_of=[])
    compare(lambda a: a.count_nonzero((0, 1)), [x], grad_of=[])
    compare(lambda a: (a > 0).count_nonzero(0), [x], grad_of=[])
    seq = torch.sort(rand(rng, (10,)))[0]
    v = rand(rng, (3, 4))
    compare(lambda s, vv: torch.searchsorted(s, vv), [seq, v], grad_of=[])
    compare(
        lambda s, vv: torch.searchsorted(s, vv, right=True, out_int32=True), [seq, v], grad_of=[]
    )
    compare(lambda vv, s: torch.bucketize(vv, s), [v, seq], grad_of=[])


# ----------------------------------------------------------------------------- resampling


@pytest.mark.parametrize("dtype", FLOATS + HALFS, ids=str)
def test_interpolate(dtype):
    rng = np.random.default_rng(17)
    x1 = rand(rng, (2, 3, 5), dtype)
    x2 = rand(rng, (2, 3, 5, 7), dtype)
    cases = [
        (x1, {"size": 9, "mode": "nearest"}),
        (x1, {"scale_factor": 2, "mode": "nearest"}),
        (x1, {"size": 3, "mode": "nearest-exact"}),
        (x1, {"size": 8, "mode": "linear"}),
        (x1, {"scale_factor": 1.5, "mode": "linear", "align_corners": True}),
        (x2, {"size": (9, 4), "mode": "nearest"}),
        (x2, {"scale_factor": 1.7, "mode": "nearest"}),
        (x2, {"scale_factor": (0.6, 2.3), "mode": "nearest-exact"}),
        (x2, {"size": (9, 4), "mode": "bilinear"}),
        (x2, {"scale_factor": 1.7, "mode": "bilinear"}),
        (x2, {"size": (3, 11), "mode": "bilinear", "align_corners": True}),
        (x2, {"size": (5, 7), "mode": "bilinear"}),  # the identity
        (x2, {"size": (4, 4), "mode": "bicubic"}),
        (x2, {"size": (3, 5), "mode": "area"}),
    ]
    for x, kw in cases:
        compare(lambda a: F.interpolate(a, **kw), [x], dtype)  # noqa: B023
    compare(lambda a: F.interpolate(a.transpose(2, 3), size=(6, 6), mode="bilinear"), [x2], dtype)
    compare(lambda a: nn.Upsample(scale_factor=2, mode="nearest")(a), [x2], dtype)
    compare(lambda a: nn.UpsamplingBilinear2d(size=(7, 3))(a), [x2], dtype)
    if dtype in FLOATS:
        x3 = rand(rng, (1, 2, 3, 4, 4), dtype)
        compare(lambda a: F.interpolate(a, scale_factor=2, mode="trilinear"), [x3], dtype)


@pytest.mark.parametrize("dtype", FLOATS + [torch.float16], ids=str)
def test_adaptive_max_pool_uneven_bins(dtype):
    rng = np.random.default_rng(18)
    x = rand(rng, (2, 3, 7, 9), dtype)
    compare(lambda a: F.adaptive_max_pool2d(a, (3, 4)), [x], dtype)
    compare(lambda a: F.adaptive_max_pool2d(a, (3, 4), return_indices=True), [x], dtype)
    compare(lambda a: F.adaptive_max_pool2d(a[0], (5, 2), return_indices=True), [x], dtype)
    compare(lambda a: F.adaptive_max_pool2d(a.transpose(2, 3), (4, None)), [x], dtype)
    compare(lambda a: nn.AdaptiveMaxPool2d((2, 5))(a), [x], dtype)
    compare(lambda a: F.adaptive_max_pool1d(a[:, :, 0], 4, return_indices=True), [x], dtype)
    compare(lambda a: F.adaptive_max_pool1d(a[0, :, 1], 2), [x], dtype)
    compare(lambda a: F.adaptive_max_pool2d(a, (7, 3), return_indices=True), [x], dtype)


# ----------------------------------------------------------------------------- padding, losses


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_pad_and_scalar_helpers(dtype):
    rng = np.random.default_rng(19)
    x = rand(rng, (2, 3, 5), dtype)
    compare(lambda a: F.pad(a, (1, 2, 0, 1), value=1.5), [x], dtype)
    compare(lambda a: F.pad(a, (-1, 2)), [x], dtype)
    for mode in ("reflect", "replicate", "circular"):
        compare(lambda a: F.pad(a, (2, 1), mode=mode), [x], dtype)  # noqa: B023
        compare(lambda a: F.pad(a.unsqueeze(0), (1, 2, 2, 1), mode=mode), [x], dtype)  # noqa: B023
    compare(lambda a: F.hardtanh(a * 2), [x], dtype)
    compare(lambda a: F.relu6(a * 8), [x], dtype)
    compare(lambda a: F.elu(a), [x], dtype)
    compare(lambda a: F.celu(a, 0.5), [x], dtype)
    compare(lambda a: F.normalize(a, dim=2), [x], dtype)
    compare(lambda a, b: F.cosine_similarity(a, b, dim=2), [x, x.flip(2)], dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_losses(dtype):
    rng = np.random.default_rng(20)
    x = rand(rng, (6, 4), dtype)
    t = ints(rng, (6,), 4)
    t[2] = -100
    compare(lambda a, b: F.nll_loss(a.log_softmax(1), b), [x, t], dtype)
    compare(lambda a, b: F.nll_loss(a.log_softmax(1), b, reduction="none"), [x, t], dtype)
    p = rand(rng, (6, 4), dtype, 0.05, 0.95)
    y = rand(rng, (6, 4), dtype, 0.0, 1.0)
    compare(lambda a, b: F.binary_cross_entropy(a, b), [p, y], dtype)
    s = torch.from_numpy(np.where(rng.random(6) > 0.5, 1.0, -1.0)).to(dtype)
    compare(
        lambda a, b, c: F.margin_ranking_loss(a, b, c, margin=0.2),
        [x[:, 0], x[:, 1], s],
        dtype,
        grad_of=[0, 1],
    )
    compare(
        lambda a, b, c: F.cosine_embedding_loss(a, b, c, margin=0.1),
        [x, x.flip(0), s],
        dtype,
        grad_of=[0, 1],
    )
    compare(
        lambda a, b, c: F.triplet_margin_loss(a, b, c, swap=True), [x, x.flip(0), x * 0.5], dtype
    )


def test_embedding_max_norm():
    rng = np.random.default_rng(21)
    w = rand(rng, (6, 3), lo=-3, hi=3)
    i = ints(rng, (2, 4), 6)
    wc, wg = w.clone(), w.cuda()
    out_c = F.embedding(i, wc, max_norm=1.0)
    out_g = F.embedding(i.cuda(), wg, max_norm=1.0)
    check_same(out_g, out_c, rtol=1e-10, atol=1e-10)
    check_same(wg, wc, rtol=1e-10, atol=1e-10)  # renormalised rows, in place


# ----------------------------------------------------------------------------- linalg wrappers


def test_linalg_decompositions_on_the_device():
    rng = np.random.default_rng(22)
    a = rand(rng, (3, 4, 4))
    spd = a @ a.transpose(-1, -2) + torch.eye(4, dtype=torch.float64)
    b = rand(rng, (3, 4, 2))
    la = torch.linalg
    compare(lambda m: la.inv(m), [spd])
    compare(lambda m: la.det(m), [a])
    compare(lambda m: la.slogdet(m), [a])
    compare(lambda m, r: la.solve(m, r), [spd, b])
    compare(lambda m: la.cholesky(m), [spd])
    compare(lambda m: la.qr(m), [a])
    # Eigen/singular vectors are defined up to sign (cuSOLVER and the CPU may pick either):
    # compare the values, the reconstructions and the vectors' magnitudes.
    compare(lambda m: (lambda w, v: (w, (v * w.unsqueeze(-2)) @ v.mT, v.abs()))(*la.eigh(m)),
            [spd], grad_of=[])
    compare(lambda m: la.eigvalsh(m), [spd])
    compare(lambda m: la.svdvals(m), [a])
    compare(lambda m: (lambda u, s, vh: (s, (u * s.unsqueeze(-2)) @ vh, u.abs(), vh.abs()))(
        *la.svd(m, full_matrices=False)), [a], grad_of=[])
    compare(lambda m: la.pinv(m), [a])
    compare(lambda m, r: la.lstsq(m, r).solution, [spd, b])
    compare(lambda m: la.matrix_rank(m), [a], grad_of=[])
    compare(lambda u, v: la.cross(u, v), [a[..., :3], rand(rng, (3, 4, 3))])
    compare(lambda m: torch.svd(m, compute_uv=False), [a], grad_of=[])
    compare(lambda m: torch.slogdet(m), [a])
    compare(lambda m: torch.cholesky_inverse(la.cholesky(m)), [spd])


# ----------------------------------------------------------------------------- module helpers


def test_modules_created_on_cuda_and_autograd_helpers():
    emb = nn.Embedding(5, 3, device="cuda")
    assert emb.weight.is_cuda
    bn = nn.BatchNorm2d(3, device="cuda")
    assert bn.weight.is_cuda and bn.running_var.is_cuda and bn.num_batches_tracked.is_cuda
    assert nn.PReLU(3, device="cuda").weight.is_cuda
    assert nn.LayerNorm(4, device="cuda").weight.is_cuda
    assert nn.LSTM(2, 3, device="cuda").weight_hh_l0.is_cuda
    assert nn.Conv2d(1, 2, 3, device="cuda").weight.is_cuda

    class TwoOut(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            assert g2.is_cuda  # the unused output's zero gradient is made on its device
            return g1 * 2 + g2 * 3

    x = torch.ones(3, device="cuda", requires_grad=True)
    TwoOut.apply(x)[0].sum().backward()
    assert x.grad.is_cuda
    np.testing.assert_array_equal(cpu_np(x.grad), [2.0, 2.0, 2.0])
    g = [torch.full((3,), 2.0, device="cuda"), torch.full((2,), -3.0, device="cuda")]
    ps = [
        torch.zeros(3, device="cuda", requires_grad=True),
        torch.zeros(2, device="cuda", requires_grad=True),
    ]
    for p, gg in zip(ps, g):
        p.grad = gg
    nn.utils.clip_grad_value_(ps, 1.0)
    assert all(p.grad.is_cuda for p in ps)
    np.testing.assert_array_equal(cpu_np(ps[1].grad), [-1.0, -1.0])
    jac = torch.autograd.functional.jacobian(lambda a: a * 2, torch.ones(2, device="cuda"))
    assert jac.is_cuda and tuple(jac.shape) == (2, 2)
    with pytest.raises(RuntimeError, match="stack expects a non-empty TensorList"):
        # an empty output: PyTorch's row loop stacks nothing and raises this
        torch.autograd.functional.jacobian(lambda a: a[:0] * 2, torch.ones(2, device="cuda"))


def test_deepcopy_pickle_and_save_of_cuda_tensors(tmp_path):
    import copy
    import pickle

    x = torch.randn(3, 2, device="cuda", requires_grad=True)
    for y in (copy.deepcopy(x), pickle.loads(pickle.dumps(x))):
        assert y.is_cuda and y.requires_grad and y.is_leaf
        np.testing.assert_array_equal(cpu_np(y), cpu_np(x))
    b = copy.deepcopy(torch.ones(2, dtype=torch.bfloat16, device="cuda"))
    assert b.is_cuda and b.dtype == torch.bfloat16
    bn = copy.deepcopy(nn.BatchNorm1d(3).to("cuda"))  # buffers are plain tensors
    assert bn.running_mean.is_cuda and bn.num_batches_tracked.is_cuda and bn.weight.is_cuda
    bn.train()
    assert bn(torch.randn(4, 3, device="cuda")).is_cuda
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, device="cuda")
    enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)  # deep-copies the layer
    assert all(p.is_cuda for p in enc.parameters())
    ref = copy.deepcopy(enc).to("cpu")
    src = torch.randn(5, 3, 8, dtype=torch.float32)
    check_same(enc(src.cuda()), ref(src), rtol=1e-4, atol=1e-5)
    path = tmp_path / "cuda_state.pt"
    torch.save(enc.state_dict(), str(path))
    loaded = torch.load(str(path))
    assert all(v.device.type == "cuda" for v in loaded.values())  # saved device, as PyTorch
    for k, v in enc.state_dict().items():
        np.testing.assert_array_equal(loaded[k].cpu().numpy(), cpu_np(v), err_msg=k)
