"""API gaps: torch.* spellings of ATen functional ops (int reduction enums, native_* ops, RNN
cells, convolution, grid sampler, segment_reduce...), the autocast state functions, runtime
flags (is_inference, warn_always, get_device_module, has_*), torch.version / torch.storage,
and Tensor members (output_nr, set_, is_set_to, resize, nonzero_static, as_strided_scatter,
record_stream, volatile)."""

import math
import warnings

import numpy as np
import pytest

import ferrotorch as torch
import ferrotorch.nn.functional as F
from ferrotorch.autograd import gradcheck


def arr(t):
    return t.detach().numpy()


def d64(*shape, seed=0):
    torch.manual_seed(seed)
    return torch.randn(*shape, dtype=torch.float64)


def real_torch():
    return pytest.importorskip("torch")


def to_t(rt, x):
    return rt.tensor(arr(x))


# ------------------------------------------------------------------ losses with int reduction
def test_loss_reduction_enum_and_default():
    x = torch.tensor([0.5, -1.0])
    y = torch.tensor([1.0, 0.0])
    sp = np.log1p(np.exp(-np.abs([0.5, -1.0]))) + np.maximum([0.5, -1.0], 0)
    expect = sp - np.array([0.5, -1.0]) * [1.0, 0.0]
    # PyTorch's binding leaves the loss unreduced when reduction is omitted
    np.testing.assert_allclose(arr(torch.binary_cross_entropy_with_logits(x, y)), expect,
                               rtol=1e-5)
    np.testing.assert_allclose(arr(torch.binary_cross_entropy_with_logits(x, y, None, None, 1)),
                               expect.mean(), rtol=1e-5)
    np.testing.assert_allclose(arr(torch.binary_cross_entropy_with_logits(x, y, reduction=2)),
                               expect.sum(), rtol=1e-5)
    np.testing.assert_allclose(arr(torch.binary_cross_entropy_with_logits(x, y, reduction=3)),
                               expect, rtol=1e-5)
    with pytest.raises(TypeError, match="reduction"):
        torch.binary_cross_entropy_with_logits(x, y, reduction="sum")


def test_kl_div_int_reduction_no_batchmean_warning():
    inp = torch.tensor([-1.0, -2.0])
    tgt = torch.tensor([0.3, 0.7])
    pointwise = np.array([0.3, 0.7]) * (np.log([0.3, 0.7]) - np.array([-1.0, -2.0]))
    np.testing.assert_allclose(arr(torch.kl_div(inp, tgt)), pointwise, rtol=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(arr(torch.kl_div(inp, tgt, 1)), pointwise.mean(), rtol=1e-5)
    lt = torch.log(tgt)
    np.testing.assert_allclose(arr(torch.kl_div(inp, lt, 2, log_target=True)), pointwise.sum(),
                               rtol=1e-5)
    with pytest.raises(TypeError):
        torch.kl_div(inp, lt, 2, True)  # log_target is keyword-only


def test_other_losses_values():
    a = torch.tensor([1.0, 2.0])
    b = torch.tensor([2.0, 1.0])
    t = torch.tensor([1.0, 1.0])
    np.testing.assert_allclose(arr(torch.margin_ranking_loss(a, b, t)), [1.0, 0.0])
    np.testing.assert_allclose(arr(torch.margin_ranking_loss(a, b, t, 0.5, 2)), 1.5)
    np.testing.assert_allclose(arr(torch.hinge_embedding_loss(torch.tensor([0.5, 1.0]),
                                                              torch.tensor([1.0, -1.0]))),
                               [0.5, 0.0])
    np.testing.assert_allclose(arr(torch.hinge_embedding_loss(torch.tensor([0.5, 1.0]),
                                                              torch.tensor([1.0, -1.0]), 1.0, 1)),
                               0.25)
    np.testing.assert_allclose(arr(torch.cosine_embedding_loss(
        torch.ones(2, 3), torch.ones(2, 3), torch.tensor([1, -1]))), [0.0, 1.0], atol=1e-6)
    np.testing.assert_allclose(arr(torch.triplet_margin_loss(
        torch.ones(2, 3), torch.zeros(2, 3), torch.ones(2, 3))), [1 + math.sqrt(3)] * 2,
        rtol=1e-5)
    li = torch.tensor([0.5, 1.0])
    tg = torch.tensor([1.0, 2.0])
    expect = np.exp([0.5, 1.0]) - np.array([1.0, 2.0]) * [0.5, 1.0]
    np.testing.assert_allclose(arr(torch.poisson_nll_loss(li, tg, True, False, 1e-8, 1)),
                               expect.mean(), rtol=1e-5)
    with pytest.raises(TypeError):
        torch.poisson_nll_loss(li, tg, True, False, 1e-8)  # every argument is required


def test_ctc_loss_reductions():
    torch.manual_seed(0)
    lp = torch.randn(5, 2, 3).log_softmax(2)
    tg = torch.tensor([[1, 2], [1, 1]])
    none = torch.ctc_loss(lp, tg, [5, 4], [2, 1])
    np.testing.assert_allclose(arr(none), arr(F.ctc_loss(lp, tg, [5, 4], [2, 1],
                                                         reduction="none")), rtol=1e-6)
    np.testing.assert_allclose(arr(torch.ctc_loss(lp, tg, [5, 4], [2, 1], 0, 1)),
                               (arr(none) / [2, 1]).mean(), rtol=1e-5)
    np.testing.assert_allclose(arr(torch.ctc_loss(lp, tg, torch.tensor([5, 4]),
                                                  torch.tensor([2, 1]), 0, 2)),
                               arr(none).sum(), rtol=1e-5)


def test_losses_gradcheck():
    x = d64(3).requires_grad_()
    y = torch.tensor([1.0, 0.0, 1.0], dtype=torch.float64)
    assert gradcheck(lambda a: torch.binary_cross_entropy_with_logits(a, y, None, None, 1), (x,))
    p = torch.tensor([0.2, 0.3, 0.5], dtype=torch.float64)
    assert gradcheck(lambda a: torch.kl_div(a, p, 2), (x,))


def test_losses_match_torch():
    rt = real_torch()
    x, y = d64(4), d64(4, seed=1).sigmoid()
    for r in (0, 1, 2):
        np.testing.assert_allclose(
            arr(torch.binary_cross_entropy_with_logits(x, y, None, None, r)),
            rt.binary_cross_entropy_with_logits(to_t(rt, x), to_t(rt, y), None, None, r).numpy(),
            rtol=1e-10)
        np.testing.assert_allclose(arr(torch.kl_div(x, y, r)),
                                   rt.kl_div(to_t(rt, x), to_t(rt, y), r).numpy(), rtol=1e-10)
    np.testing.assert_allclose(arr(torch.kl_div(x, y)), rt.kl_div(to_t(rt, x), to_t(rt, y)).numpy(),
                               rtol=1e-10)


# ------------------------------------------------------------------ embedding_bag
def test_embedding_bag_outputs():
    w = torch.arange(10.0).reshape(5, 2)
    idx = torch.tensor([0, 2, 1, 4, 3])
    off = torch.tensor([0, 2])
    out, o2b, size, mx = torch.embedding_bag(w, idx, off)
    np.testing.assert_allclose(arr(out), [[4, 6], [16, 19]])
    assert o2b.numel() == 0 and size.tolist() == [0, 0] and mx.tolist() == [0, 0]
    # float64 takes the kernel's general path, which records each index's bag
    assert torch.embedding_bag(w.double(), idx, off)[1].tolist() == [0, 0, 1, 1, 1]
    out, o2b, size, mx = torch.embedding_bag(w, idx, off, False, 1)
    np.testing.assert_allclose(arr(out), [[2, 3], [16 / 3, 19 / 3]], rtol=1e-6)
    assert o2b.tolist() == [0, 0, 1, 1, 1] and size.tolist() == [2, 3] and mx.tolist() == [2, 3]
    out, o2b, size, mx = torch.embedding_bag(w, idx, torch.tensor([0, 2, 2]), False, 2)
    np.testing.assert_allclose(arr(out), [[4, 5], [0, 0], [8, 9]])
    assert o2b.tolist() == [0, 0, 2, 2, 2] and size.tolist() == [2, 0, 3]
    assert mx.tolist() == [[2, 2], [0, 0], [4, 4]]
    out, o2b, size, mx = torch.embedding_bag(w, idx, off, False, 1, False, None, False, 2)
    np.testing.assert_allclose(arr(out), [[0, 1], [16 / 3, 19 / 3]], rtol=1e-6)
    assert size.tolist() == [1, 3]
    out, *_ = torch.embedding_bag(w, idx, torch.tensor([0, 2, 5]), False, 0, False, None, True)
    np.testing.assert_allclose(arr(out), [[4, 6], [16, 19]])
    # include_last_offset: the last bag still runs to the end of indices, as the CPU kernel
    out, o2b, size, _ = torch.embedding_bag(w, idx, torch.tensor([0, 2, 4]), False, 1, False,
                                            None, True)
    np.testing.assert_allclose(arr(out), [[2, 3], [16 / 3, 19 / 3]], rtol=1e-6)
    assert o2b.tolist() == [0, 0, 1, 1, 1] and size.tolist() == [2, 3]
    with pytest.raises(RuntimeError, match="mode"):
        torch.embedding_bag(w, idx, off, False, 3)
    with pytest.raises(TypeError):
        torch.embedding_bag(w, idx, None)


def test_embedding_bag_grad_and_torch():
    w = d64(5, 3).requires_grad_()
    idx = torch.tensor([0, 2, 1, 4, 3, 3])
    off = torch.tensor([0, 2, 4])
    psw = d64(6, seed=2).requires_grad_()
    assert gradcheck(lambda a, s: torch.embedding_bag(a, idx, off, False, 0, False, s)[0],
                     (w, psw))
    rt = real_torch()
    for mode in (0, 1, 2):
        mine = torch.embedding_bag(w, idx, off, False, mode)
        ref = rt.embedding_bag(to_t(rt, w), rt.tensor(idx.tolist()), rt.tensor(off.tolist()),
                               False, mode)
        for m, r in zip(mine, ref):
            np.testing.assert_allclose(arr(m), r.numpy(), rtol=1e-12)


# ------------------------------------------------------------------ normalization
def test_instance_norm_updates_running_stats():
    x = torch.arange(8.0).reshape(1, 2, 4)
    rm, rv = torch.zeros(2), torch.ones(2)
    out = torch.instance_norm(x, None, None, rm, rv, True, 0.1, 1e-5, False)
    row = (np.arange(4) - 1.5) / np.sqrt(1.25 + 1e-5)
    np.testing.assert_allclose(arr(out), np.stack([row, row])[None], rtol=1e-5)
    np.testing.assert_allclose(arr(rm), [0.15, 0.55], rtol=1e-6)
    np.testing.assert_allclose(arr(rv), [0.9 + 0.1 * 5 / 3] * 2, rtol=1e-6)
    with pytest.raises(RuntimeError, match="running_mean"):
        torch.instance_norm(x, None, None, None, None, False, 0.1, 1e-5, False)


def test_native_batch_norm():
    x = torch.arange(24.0).reshape(2, 3, 4)
    out, mean, invstd = torch.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5)
    xn = arr(x)
    m = xn.mean((0, 2))
    v = xn.var((0, 2))
    np.testing.assert_allclose(arr(mean), m, rtol=1e-6)
    np.testing.assert_allclose(arr(invstd), 1 / np.sqrt(v + 1e-5), rtol=1e-5)
    np.testing.assert_allclose(arr(out), (xn - m[:, None]) / np.sqrt(v[:, None] + 1e-5),
                               rtol=1e-4, atol=1e-5)
    out, mean, invstd = torch.native_batch_norm(x, None, None, torch.zeros(3), torch.ones(3),
                                                False, 0.1, 1e-5)
    assert mean.shape == (0,) and invstd.shape == (0,)
    np.testing.assert_allclose(arr(out), xn / np.sqrt(1 + 1e-5), rtol=1e-5)
    w = d64(3).requires_grad_()
    xd = d64(2, 3, 4, seed=3).requires_grad_()
    assert gradcheck(lambda a, b: torch.native_batch_norm(a, b, None, None, None, True, 0.1,
                                                          1e-5)[0], (xd, w))


def test_native_group_norm():
    x = torch.arange(24.0).reshape(2, 3, 4)
    out, mean, rstd = torch.native_group_norm(x, None, None, 2, 3, 4, 3, 1e-5)
    np.testing.assert_allclose(arr(mean), arr(x).mean(2), rtol=1e-6)
    np.testing.assert_allclose(arr(rstd), np.full((2, 3), 1 / np.sqrt(1.25 + 1e-5)), rtol=1e-5)
    np.testing.assert_allclose(arr(out), arr(F.group_norm(x, 3)), rtol=1e-6)
    with pytest.raises(RuntimeError, match="N \\* C \\* HxW"):
        torch.native_group_norm(x, None, None, 2, 3, 5, 3, 1e-5)


def test_native_channel_shuffle_and_dropout():
    x = torch.arange(8.0).reshape(1, 4, 2)
    np.testing.assert_allclose(arr(torch.native_channel_shuffle(x, 2))[0],
                               [[0, 1], [4, 5], [2, 3], [6, 7]])
    y = torch.arange(12.0).reshape(3, 4) + 1
    out, mask = torch.native_dropout(y, 0.5, False)
    np.testing.assert_allclose(arr(out), arr(y))
    assert mask.dtype == torch.bool and bool(mask.all())
    out, mask = torch.native_dropout(y, 1.0, True)
    assert not bool(mask.any()) and float(out.abs().sum()) == 0
    torch.manual_seed(0)
    out, mask = torch.native_dropout(y, 0.5, None)
    np.testing.assert_allclose(arr(out), np.where(arr(mask), arr(y) * 2, 0))
    with pytest.raises(RuntimeError, match="bernoulli_"):
        torch.native_dropout(y, 1.5, True)


# ------------------------------------------------------------------ grids and convolution
def test_grid_sampler_int_modes():
    inp = torch.arange(16.0).reshape(1, 1, 4, 4)
    g = torch.tensor([[[[-1.0, -1.0], [0.5, 0.2]], [[0.3, 0.9], [1.0, 1.0]]]])
    np.testing.assert_allclose(arr(torch.grid_sampler(inp, g, 0, 0, False))[0, 0],
                               [[0.0, 10.1], [9.87, 3.75]], rtol=1e-5)
    np.testing.assert_allclose(arr(torch.grid_sampler(inp, g, 1, 1, True))[0, 0],
                               [[0, 10], [14, 15]])
    np.testing.assert_allclose(arr(torch.grid_sampler_2d(inp, g, 2, 2, False)),
                               arr(F.grid_sample(inp, g, "bicubic", "reflection", False)))
    with pytest.raises(RuntimeError, match="5D input"):
        torch.grid_sampler_3d(inp, g, 0, 0, False)
    with pytest.raises(RuntimeError, match="interpolation_mode"):
        torch.grid_sampler(inp, g, 3, 0, False)
    vol = torch.arange(8.0).reshape(1, 1, 2, 2, 2)
    np.testing.assert_allclose(arr(torch.grid_sampler_3d(vol, torch.zeros(1, 1, 1, 1, 3), 0, 0,
                                                         True)).ravel(), [3.5])
    th = d64(1, 2, 3).requires_grad_()
    assert gradcheck(lambda t: torch.affine_grid_generator(t, [1, 1, 2, 3], False), (th,))
    np.testing.assert_allclose(
        arr(torch.affine_grid_generator(torch.tensor([[[1.0, 0, 0], [0, 1, 0]]]), [1, 1, 2, 3],
                                        False))[0],
        [[[-2 / 3, -0.5], [0, -0.5], [2 / 3, -0.5]], [[-2 / 3, 0.5], [0, 0.5], [2 / 3, 0.5]]],
        rtol=1e-6, atol=1e-7)


def test_convolution_dispatch():
    x = torch.arange(16.0).reshape(1, 1, 4, 4)
    w = torch.ones(1, 1, 2, 2)
    out = torch.convolution(x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
    np.testing.assert_allclose(arr(out)[0, 0], [[10, 14, 18], [26, 30, 34], [42, 46, 50]])
    np.testing.assert_allclose(arr(torch.convolution(x, w, None, [1], [0], [1], False, [0], 1)),
                               arr(out))
    tr = torch.convolution(x, w, None, [2, 2], [1, 1], [1, 1], True, [1, 1], 1)
    np.testing.assert_allclose(arr(tr), arr(F.conv_transpose2d(x, w, None, 2, 1, 1)))
    assert tr.shape == (1, 1, 7, 7)
    x1 = torch.arange(16.0).reshape(1, 1, 16)
    o1 = torch.convolution(x1, torch.ones(1, 1, 4), torch.ones(1), [1], [0], [1], False, [0], 1)
    np.testing.assert_allclose(arr(o1).ravel(), np.convolve(np.arange(16.0), np.ones(4),
                                                           "valid") + 1)
    with pytest.raises(TypeError, match="tuple of ints"):
        torch.convolution(x, w, None, 1, 0, 1, False, 0, 1)
    with pytest.raises(RuntimeError, match="4-dimensional input"):
        torch.convolution(x[0], w, None, [1], [0], [1], False, [0], 1)
    xd, wd = d64(1, 2, 5).requires_grad_(), d64(3, 2, 2, seed=1).requires_grad_()
    assert gradcheck(lambda a, b: torch.convolution(a, b, None, [2], [1], [1], False, [0], 1),
                     (xd, wd))


def test_conv_tbc():
    torch.manual_seed(0)
    x = torch.randn(6, 2, 3, dtype=torch.float64)
    w = torch.randn(3, 3, 4, dtype=torch.float64)
    b = torch.randn(4, dtype=torch.float64)
    out = torch.conv_tbc(x, w, b, 1)
    xp = np.pad(arr(x), ((1, 1), (0, 0), (0, 0)))
    ref = np.stack([sum(xp[t + k] @ arr(w)[k] for k in range(3)) for t in range(6)]) + arr(b)
    np.testing.assert_allclose(arr(out), ref, rtol=1e-10)
    assert torch.conv_tbc(x, w, b).shape == (4, 2, 4)
    with pytest.raises(TypeError):
        torch.conv_tbc(x, w, None)
    assert gradcheck(lambda a, c: torch.conv_tbc(a, c, b, 1),
                     (x[:4].clone().requires_grad_(), w.clone().requires_grad_()))
    rt = real_torch()
    np.testing.assert_allclose(arr(out), rt.conv_tbc(to_t(rt, x), to_t(rt, w), to_t(rt, b),
                                                     1).numpy(), rtol=1e-10)


# ------------------------------------------------------------------ RNN cells
def _cell_params(k, seed=0):
    torch.manual_seed(seed)
    return [torch.randn(*s, dtype=torch.float64) * 0.5 for s in
            ((2, 3), (2, 4), (k * 4, 3), (k * 4, 4), (k * 4,), (k * 4,))]


def test_rnn_cells_values():
    x, h, wi, wh, bi, bh = _cell_params(1)
    X, H, WI, WH, BI, BH = map(arr, (x, h, wi, wh, bi, bh))
    pre = X @ WI.T + BI + H @ WH.T + BH
    np.testing.assert_allclose(arr(torch.rnn_tanh_cell(x, h, wi, wh, bi, bh)), np.tanh(pre))
    np.testing.assert_allclose(arr(torch.rnn_relu_cell(x, h, wi, wh, bi, bh)),
                               np.maximum(pre, 0))
    np.testing.assert_allclose(arr(torch.rnn_tanh_cell(x, h, wi, wh)),
                               np.tanh(X @ WI.T + H @ WH.T))
    x, h, wi, wh, bi, bh = _cell_params(4)
    c = h * 0.3
    X, H, C, WI, WH, BI, BH = map(arr, (x, h, c, wi, wh, bi, bh))
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    gi, gf, gg, go = np.split(X @ WI.T + BI + H @ WH.T + BH, 4, 1)
    c2 = sig(gf) * C + sig(gi) * np.tanh(gg)
    hy, cy = torch.lstm_cell(x, (h, c), wi, wh, bi, bh)
    np.testing.assert_allclose(arr(cy), c2, rtol=1e-12)
    np.testing.assert_allclose(arr(hy), sig(go) * np.tanh(c2), rtol=1e-12)
    x, h, wi, wh, bi, bh = _cell_params(3)
    wi, wh, bi, bh = wi[:12], wh[:12], bi[:12], bh[:12]
    X, H, WI, WH, BI, BH = map(arr, (x, h, wi, wh, bi, bh))
    ir, iz, inn = np.split(X @ WI.T + BI, 3, 1)
    hr, hz, hn = np.split(H @ WH.T + BH, 3, 1)
    r, z = sig(ir + hr), sig(iz + hz)
    n = np.tanh(inn + r * hn)
    np.testing.assert_allclose(arr(torch.gru_cell(x, h, wi, wh, bi, bh)), (1 - z) * n + z * H,
                               rtol=1e-12)


def test_rnn_cells_errors_and_grad():
    x, h, wi, wh, bi, bh = _cell_params(1)
    with pytest.raises(RuntimeError, match="2D input"):
        torch.rnn_tanh_cell(x[0], h[0], wi, wh)
    with pytest.raises(RuntimeError, match="inconsistent input_size"):
        torch.rnn_tanh_cell(torch.ones(2, 5, dtype=torch.float64), h, wi, wh)
    x, h, wi, wh, bi, bh = _cell_params(3)
    args = [t[:12].clone().requires_grad_() if t.shape[0] == 16 else t.clone().requires_grad_()
            for t in (x, h, wi, wh, bi, bh)]
    assert gradcheck(torch.gru_cell, tuple(args))
    x, h, wi, wh, bi, bh = _cell_params(4)
    assert gradcheck(lambda a, b, c, d: torch.lstm_cell(a, (b, b * 0.5), c, d, bi, bh),
                     tuple(t.clone().requires_grad_() for t in (x, h, wi, wh)))


def test_rnn_cells_match_torch():
    rt = real_torch()
    x, h, wi, wh, bi, bh = _cell_params(4)
    hy, cy = torch.lstm_cell(x, [h, h], wi, wh, bi, None)
    rh, rc = rt.lstm_cell(*(to_t(rt, t) for t in (x,)), [to_t(rt, h)] * 2, to_t(rt, wi),
                          to_t(rt, wh), to_t(rt, bi), None)
    np.testing.assert_allclose(arr(hy), rh.numpy(), rtol=1e-12)
    np.testing.assert_allclose(arr(cy), rc.numpy(), rtol=1e-12)


# ------------------------------------------------------------------ norms
def test_frobenius_nuclear_norm_except_dim():
    x = torch.arange(12.0).reshape(3, 4)
    xn = arr(x)
    with pytest.warns(UserWarning, match="deprecated"):
        np.testing.assert_allclose(arr(torch.frobenius_norm(x, [0])),
                                   np.linalg.norm(xn, axis=0), rtol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(arr(torch.frobenius_norm(x, (0, 1), True)),
                                   [[np.linalg.norm(xn)]], rtol=1e-6)
        np.testing.assert_allclose(arr(torch.frobenius_norm(x, 1)),
                                   np.linalg.norm(xn, axis=1), rtol=1e-6)
        with pytest.raises(RuntimeError, match="at most 2"):
            torch.frobenius_norm(x, [0, 1, 1])
        with pytest.raises(TypeError):
            torch.frobenius_norm(x)
        nuc = np.linalg.svd(xn, compute_uv=False).sum()
        np.testing.assert_allclose(arr(torch.nuclear_norm(x)), nuc, rtol=1e-5)
        assert torch.nuclear_norm(x, True).shape == (1, 1)
        np.testing.assert_allclose(arr(torch.nuclear_norm(x, [1, 0], keepdim=True)), [[nuc]],
                                   rtol=1e-5)
        b = d64(2, 3, 3)
        np.testing.assert_allclose(arr(torch.nuclear_norm(b)),
                                   np.linalg.svd(arr(b), compute_uv=False).sum(-1), rtol=1e-10)
        with pytest.raises(RuntimeError, match="at least 2"):
            torch.nuclear_norm(torch.ones(3))
    np.testing.assert_allclose(arr(torch.norm_except_dim(x)),
                               np.linalg.norm(xn, axis=1, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(arr(torch.norm_except_dim(x, 2, 1)),
                               np.linalg.norm(xn, axis=0, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(arr(torch.norm_except_dim(x, 3, -1)),
                               (np.abs(xn) ** 3).sum() ** (1 / 3), rtol=1e-5)
    np.testing.assert_allclose(arr(torch.norm_except_dim(torch.tensor([-1.0, 0.0, 2.0]), 2, 0)),
                               [1, 0, 2])
    assert torch.norm_except_dim(torch.ones(2, 3, 4), 2, 1).shape == (1, 3, 1)
    v = d64(3, 4).requires_grad_()
    assert gradcheck(lambda a: torch.norm_except_dim(a, 2, 0), (v,))
    with pytest.raises(RuntimeError, match="linalg.matrix_rank"):
        torch.matrix_rank(x)


def test_segment_reduce():
    data = torch.arange(6.0)
    lengths = torch.tensor([2, 0, 4])
    cases = {"sum": [1, 0, 14], "max": [1, -math.inf, 5], "min": [0, math.inf, 2],
             "prod": [0, 1, 120]}
    for op, expect in cases.items():
        np.testing.assert_allclose(arr(torch.segment_reduce(data, op, lengths=lengths)), expect)
    mean = arr(torch.segment_reduce(data, "mean", lengths=lengths))
    np.testing.assert_allclose(mean[[0, 2]], [0.5, 3.5])
    assert math.isnan(mean[1])
    np.testing.assert_allclose(arr(torch.segment_reduce(data, "mean", lengths=lengths,
                                                        initial=7)), [4, 7, 5.25])
    np.testing.assert_allclose(arr(torch.segment_reduce(data, "sum",
                                                        offsets=torch.tensor([0, 2, 2, 6]))),
                               [1, 0, 14])
    np.testing.assert_allclose(arr(torch.segment_reduce(
        torch.arange(12.0).reshape(2, 6), "sum", lengths=torch.tensor([[2, 4], [3, 3]]),
        axis=1)), [[1, 14], [21, 30]])
    np.testing.assert_allclose(arr(torch.segment_reduce(
        torch.arange(6.0).reshape(3, 2), "sum", lengths=torch.tensor([1, 2]))), [[0, 1], [6, 8]])
    with pytest.raises(RuntimeError, match="reduce argument"):
        torch.segment_reduce(data, "foo", lengths=lengths)
    with pytest.raises(RuntimeError, match="sum to"):
        torch.segment_reduce(data, "sum", lengths=torch.tensor([2, 3]))
    with pytest.raises(RuntimeError, match="lengths or offsets"):
        torch.segment_reduce(data, "sum")
    d = d64(6).requires_grad_()
    assert gradcheck(lambda a: torch.segment_reduce(a, "mean", lengths=torch.tensor([2, 1, 3])),
                     (d,))


# ------------------------------------------------------------------ autocast state
def test_autocast_dtype_state():
    assert torch.get_autocast_dtype("cpu") == torch.bfloat16
    assert torch.get_autocast_dtype("cuda") == torch.float16
    assert torch.get_autocast_dtype("xla") == torch.bfloat16
    assert torch.get_autocast_dtype("mps") == torch.float16
    with pytest.raises(RuntimeError, match="device type"):
        torch.get_autocast_dtype("foo")
    try:
        torch.set_autocast_dtype("cpu", torch.float16)
        assert torch.get_autocast_dtype("cpu") == torch.float16
        assert torch.amp.get_autocast_dtype("cpu") == torch.float16
        with torch.autocast("cpu"):  # dtype=None takes the set dtype
            assert torch.get_autocast_dtype("cpu") == torch.float16
            assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.float16
            torch.set_autocast_dtype("cpu", torch.bfloat16)
            assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.bfloat16
        assert torch.get_autocast_dtype("cpu") == torch.float16  # restored on exit
        with pytest.warns(DeprecationWarning):
            assert torch.get_autocast_cpu_dtype() == torch.float16
        with pytest.warns(DeprecationWarning):
            torch.set_autocast_gpu_dtype(torch.bfloat16)
        with pytest.warns(DeprecationWarning):
            assert torch.get_autocast_gpu_dtype() == torch.bfloat16
    finally:
        torch.set_autocast_dtype("cpu", torch.bfloat16)
        torch.set_autocast_dtype("cuda", torch.float16)


def test_autocast_enabled_state_drives_ops():
    a = torch.ones(2, 2)
    assert not torch.is_autocast_enabled("cpu") and not torch.is_autocast_enabled()
    try:
        torch.set_autocast_enabled("cpu", True)
        assert torch.is_autocast_enabled("cpu")
        assert (a @ a).dtype == torch.bfloat16
        with torch.autocast("cpu", enabled=False):
            assert not torch.is_autocast_enabled("cpu")
            assert (a @ a).dtype == torch.float32
        assert (a @ a).dtype == torch.bfloat16  # still on after the nested region
    finally:
        torch.set_autocast_enabled("cpu", False)
    assert (a @ a).dtype == torch.float32
    with torch.autocast("cpu"):
        torch.set_autocast_enabled("cpu", False)
        assert (a @ a).dtype == torch.float32
    assert not torch.is_autocast_enabled("cpu")
    with pytest.warns(DeprecationWarning):
        torch.set_autocast_cpu_enabled(True)
    with pytest.warns(DeprecationWarning):
        assert torch.is_autocast_cpu_enabled()
    torch.set_autocast_enabled("cpu", False)
    torch.set_autocast_enabled("xla", True)
    assert torch.is_autocast_enabled("xla")
    torch.set_autocast_enabled("xla", False)
    with pytest.raises(TypeError, match="bool"):
        torch.set_autocast_enabled("cpu", 1)
    with pytest.raises(RuntimeError, match="device type"):
        torch.set_autocast_enabled("foo", True)


def test_autocast_cache_and_nesting():
    assert torch.is_autocast_cache_enabled()
    with torch.autocast("cpu", cache_enabled=False):
        assert not torch.is_autocast_cache_enabled()
    assert torch.is_autocast_cache_enabled()
    torch.set_autocast_cache_enabled(False)
    assert not torch.is_autocast_cache_enabled()
    torch.set_autocast_cache_enabled(True)
    assert torch.clear_autocast_cache() is None
    assert torch.autocast_increment_nesting() == 1
    with torch.autocast("cpu"):
        assert torch.autocast_increment_nesting() == 3
        assert torch.autocast_decrement_nesting() == 2
    assert torch.autocast_decrement_nesting() == 0


def test_autocast_state_matches_torch():
    rt = real_torch()
    for dev in ("cpu", "cuda", "xla", "hpu", "mps", "xpu"):
        assert str(torch.get_autocast_dtype(dev)).split(".")[-1] == \
            str(rt.get_autocast_dtype(dev)).split(".")[-1]


# ------------------------------------------------------------------ runtime flags
def test_runtime_flags():
    assert torch.is_inference(torch.ones(2)) is False
    with torch.inference_mode():
        t = torch.ones(2)
    assert torch.is_inference(t) is True
    with pytest.raises(TypeError):
        torch.is_inference(3)
    assert torch.is_warn_always_enabled() is False
    torch.set_warn_always(True)
    assert torch.is_warn_always_enabled() is True
    torch.set_warn_always(False)
    assert torch.set_flush_denormal(True) is False
    assert torch.init_num_threads() is None
    assert torch.is_vulkan_available() is False
    assert torch.compiled_with_cxx11_abi() is True
    assert torch.has_lapack is True and torch.has_mkl is False
    assert torch.has_openmp is False and torch.has_spectral is False
    assert torch.get_device_module("cpu") is torch.cpu
    assert torch.get_device_module(torch.device("cuda:0")) is torch.cuda
    assert torch.get_device_module("cuda:1") is torch.cuda
    with pytest.raises(RuntimeError, match="device type"):
        torch.get_device_module("foo")
    with pytest.raises(RuntimeError, match="corresponding module"):
        torch.get_device_module("mps")


def test_version_and_storage_modules():
    assert torch.version.__version__ == torch.__version__
    assert torch.version.debug is False and torch.version.hip is None
    assert torch.version.cuda in (None, "12.9")
    assert torch.storage.UntypedStorage is type(torch.ones(1).untyped_storage())


# ------------------------------------------------------------------ Tensor members
def test_output_nr_and_name():
    x = torch.randn(6, requires_grad=True)
    assert x.output_nr == 0 and torch.ones(2).output_nr == 0
    assert [c.output_nr for c in x.chunk(3)] == [0, 1, 2]
    u, s, v = torch.linalg.svd(torch.randn(3, 3, requires_grad=True))
    assert (u.output_nr, s.output_nr, v.output_nr) == (0, 1, 2)
    with torch.no_grad():
        assert x.chunk(3)[1].output_nr == 0
    assert torch.ones(2).name is None


def test_set_and_is_set_to():
    s = torch.arange(6.0)
    t = torch.ones(3)
    assert t.set_(s) is t
    assert t.is_set_to(s) and s.is_set_to(t) and t.data_ptr() == s.data_ptr()
    s[0] = 9.0
    assert t[0].item() == 9.0  # shares memory
    t = torch.ones(3)
    t.set_(s, 1, (2, 2), (1, 2))
    np.testing.assert_allclose(arr(t), [[1, 3], [2, 4]])
    assert t.storage_offset() == 1 and not t.is_set_to(s)
    t.set_(s, 2, (3,))
    np.testing.assert_allclose(arr(t), [2, 3, 4])
    t.set_()
    assert t.shape == (0,)
    t.set_(s[2:].untyped_storage())
    np.testing.assert_allclose(arr(t), [9, 1, 2, 3, 4, 5])
    t.set_(s.untyped_storage(), 2, (2,))
    np.testing.assert_allclose(arr(t), [2, 3])
    with pytest.raises(RuntimeError, match="leaf Variable"):
        torch.ones(3, requires_grad=True).set_(s)
    with pytest.raises(RuntimeError, match="Could not set"):
        torch.ones(3).set_(s.int())
    p = torch.ones(3, requires_grad=True)
    with torch.no_grad():
        p.set_(s)
    assert p.requires_grad and p.is_set_to(s)


def test_resize_out_of_place():
    x = torch.arange(6.0, requires_grad=True)
    with pytest.warns(UserWarning, match="non-inplace resize"):
        y = x.resize(2, 3)
    assert y.shape == (2, 3) and x.shape == (6,)
    y.sum().backward()
    np.testing.assert_allclose(arr(x.grad), np.ones(6))
    with pytest.warns(UserWarning, match="resize_as"):
        assert x.resize_as(torch.ones(3, 2)).shape == (3, 2)
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="preserving the number"):
        torch.ones(2).resize(3)


def test_nonzero_static():
    x = torch.tensor([0, 3, 0, 5])
    assert x.nonzero_static(size=3).tolist() == [[1], [3], [-1]]
    assert x.nonzero_static(size=1).tolist() == [[1]]
    m = torch.tensor([[0, 3], [1, 0]])
    assert torch.nonzero_static(m, size=4, fill_value=-7).tolist() == \
        [[0, 1], [1, 0], [-7, -7], [-7, -7]]
    assert torch.nonzero_static(m, size=0).shape == (0, 2)
    assert torch.nonzero_static(torch.tensor(2.0), size=2).shape == (2, 0)
    assert m.t().nonzero_static(size=2).tolist() == [[0, 1], [1, 0]]  # non-contiguous
    with pytest.raises(RuntimeError, match="non-negative"):
        torch.nonzero_static(x, size=-1)
    with pytest.raises(TypeError):
        torch.nonzero_static(x, 2)


def test_as_strided_scatter():
    a = torch.zeros(6)
    np.testing.assert_allclose(arr(torch.as_strided_scatter(a, torch.tensor([1.0, 2.0]), (2,),
                                                            (2,), 1)), [0, 1, 0, 2, 0, 0])
    np.testing.assert_allclose(arr(a.as_strided_scatter(torch.tensor([1.0, 2.0]), (2,), (2,))),
                               [1, 0, 2, 0, 0, 0])
    assert float(a.abs().sum()) == 0  # out of place
    nc = torch.zeros(3, 4)[:, 1:]
    out = nc.as_strided_scatter(torch.ones(2), (2,), (1,), 0)
    np.testing.assert_allclose(arr(out), [[1, 1, 0], [0, 0, 0], [0, 0, 0]])
    # a dense transposed input keeps its layout: offsets count in its memory order
    base = torch.arange(6.0).reshape(2, 3).t()
    out = torch.as_strided_scatter(base, torch.tensor([-1.0, -2.0]), (2,), (1,), 2)
    np.testing.assert_allclose(arr(out), [[0, -2], [1, 4], [-1, 5]])
    with pytest.raises(RuntimeError, match="size equal"):
        torch.as_strided_scatter(a, torch.tensor([1.0, 2.0, 3.0]), (2,), (2,), 1)
    x = d64(2, 3).requires_grad_()
    src = d64(2, 2, seed=1).requires_grad_()
    assert gradcheck(lambda p, q: torch.as_strided_scatter(p, q, (2, 2), (3, 1), 1), (x, src))
    assert gradcheck(lambda p, q: torch.as_strided_scatter(p.t(), q, (2, 2), (1, 2), 1),
                     (x, src))
    y = torch.arange(6.0)
    assert torch.as_strided_(y, (2,), (2,), 1) is y
    np.testing.assert_allclose(arr(y), [1, 3])


def test_record_stream_volatile_reinforce():
    with pytest.raises(NotImplementedError, match="CPU"):
        torch.ones(2).record_stream(None)
    with pytest.warns(UserWarning, match="volatile"):
        assert torch.ones(2).volatile is False
    with pytest.raises(RuntimeError, match="reinforce"):
        torch.ones(2).reinforce(1.0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_record_stream_cuda_keeps_memory_until_stream_done():
    from ferrotorch import _tensor_members as tm

    s = torch.cuda.Stream()
    x = torch.ones(1024, device="cuda")
    with torch.cuda.stream(s):
        y = x * 2
    y.record_stream(s)
    del y
    assert len(tm._pending) >= 1
    s.synchronize()
    torch.ones(1, device="cuda").record_stream(s)
    assert all(not e.query() for e, _ in tm._pending)
