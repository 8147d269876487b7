"""gumbel_softmax, embedding_bag / nn.EmbeddingBag, affine_grid, grid_sample and
ctc_loss / nn.CTCLoss: values against NumPy references written here, float64 gradchecks,
error messages, and (when PyTorch is installed) comparisons with torch."""

import itertools
import math
import warnings

import numpy as np
import pytest

import ferrotorch as ft
import ferrotorch.nn.functional as F
from ferrotorch import nn
from ferrotorch.autograd import gradcheck

RNG = np.random.default_rng(1234)


def T(a, dtype=np.float64, grad=False):
    x = ft.from_numpy(np.array(a, dtype=dtype, order="C"))
    return x.requires_grad_() if grad else x


def L(a):
    return ft.from_numpy(np.array(a, dtype=np.int64))


def N(x):
    return x.detach().numpy()


def np_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# ============================================================================ gumbel_softmax
@pytest.mark.parametrize("dim", [-1, 0, 1])
@pytest.mark.parametrize("tau", [1.0, 0.3])
def test_gumbel_softmax_values_match_seeded_noise(dim, tau):
    logits = RNG.standard_normal((3, 5, 4))
    x = T(logits)
    ft.manual_seed(7)
    e = N(ft.empty_like(x).exponential_())
    ref = np_softmax((logits - np.log(e)) / tau, dim)
    ft.manual_seed(7)
    soft = F.gumbel_softmax(x, tau=tau, dim=dim)
    np.testing.assert_allclose(N(soft), ref, rtol=1e-12, atol=1e-14)
    ft.manual_seed(7)
    hard = N(F.gumbel_softmax(x, tau=tau, hard=True, dim=dim))
    onehot = (
        np.arange(ref.shape[dim]).reshape([-1 if d == dim % 3 else 1 for d in range(3)])
        == np.expand_dims(ref.argmax(dim), dim)
    ).astype(np.float64)
    np.testing.assert_allclose(hard, onehot, atol=1e-12)
    np.testing.assert_allclose(hard.sum(dim), 1.0, atol=1e-12)


def test_gumbel_softmax_hard_samples_follow_softmax():
    # Gumbel-max: argmax(logits + g) ~ Categorical(softmax(logits))
    logits = np.array([0.5, -1.0, 1.5, 0.0])
    x = T(np.broadcast_to(logits, (40000, 4)))
    ft.manual_seed(3)
    freq = N(F.gumbel_softmax(x, tau=0.7, hard=True)).mean(0)
    np.testing.assert_allclose(freq, np_softmax(logits, 0), atol=0.012)


def test_gumbel_softmax_float32_and_eps_warning():
    x = ft.randn(2, 6)
    y = F.gumbel_softmax(x)
    assert y.dtype == ft.float32
    np.testing.assert_allclose(N(y).sum(-1), 1.0, rtol=1e-5)
    with pytest.warns(UserWarning, match="`eps` parameter is deprecated"):
        F.gumbel_softmax(x, eps=1e-5)


def test_gumbel_softmax_gradcheck_and_straight_through():
    x = T(RNG.standard_normal((2, 5)), grad=True)

    def soft(a):
        ft.manual_seed(11)
        return F.gumbel_softmax(a, tau=0.8)

    assert gradcheck(soft, (x,))
    w = T(RNG.standard_normal((2, 5)))
    grads = []
    for hard in (False, True):
        xg = T(N(x), grad=True)
        ft.manual_seed(11)
        (F.gumbel_softmax(xg, tau=0.8, hard=hard) * w).sum().backward()
        grads.append(N(xg.grad))
    # straight-through: the hard sample has the soft sample's gradient
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12, atol=1e-14)
    assert np.abs(grads[0]).max() > 1e-3


# ============================================================================ embedding_bag
def bag_ref(idx, w, offsets, mode, psw=None, include_last_offset=False, padding_idx=None):
    idx = np.asarray(idx)
    n = len(idx)
    offsets = list(offsets)
    if include_last_offset:
        # The last offset only marks the end; the last bag runs to the end (PyTorch's CPU).
        starts, ends = offsets[:-1], offsets[1:-1] + [n]
    else:
        starts, ends = offsets, offsets[1:] + [n]
    out = np.zeros((len(starts), w.shape[1]))
    for b, (s, e) in enumerate(zip(starts, ends)):
        sel = [i for i in range(s, e) if padding_idx is None or idx[i] != padding_idx]
        if not sel:
            continue
        rows = w[idx[sel]]
        if psw is not None:
            rows = rows * np.asarray(psw)[sel][:, None]
        out[b] = {"sum": rows.sum(0), "mean": rows.mean(0), "max": rows.max(0)}[mode]
    return out


W = RNG.standard_normal((7, 3))
IDX = np.array([1, 2, 4, 5, 4, 3, 2, 6, 0, 2])
OFFS = [0, 3, 3, 7, 10]  # bag 1 is empty, the last bag is empty too (starts at the end)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 2, -5])
def test_embedding_bag_1d_offsets(mode, padding_idx):
    out = F.embedding_bag(L(IDX), T(W), L(OFFS), mode=mode, padding_idx=padding_idx)
    pad = None if padding_idx is None else padding_idx % 7
    ref = bag_ref(IDX, W, OFFS, mode, padding_idx=pad)
    assert tuple(out.shape) == (5, 3)
    np.testing.assert_allclose(N(out), ref, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(N(out)[[1, 4]], 0.0)  # empty bags give zeros


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_include_last_offset(mode):
    offs = [0, 3, 3, 7]  # 3 bags; the last one runs on past the end marker to the end
    out = F.embedding_bag(L(IDX), T(W), L(offs), mode=mode, include_last_offset=True)
    ref = bag_ref(IDX, W, offs, mode, include_last_offset=True)
    np.testing.assert_allclose(N(out), ref, rtol=1e-12)
    # 2-D input: one bag per row whatever include_last_offset says (PyTorch 2.13)
    idx2 = RNG.integers(0, 7, size=(4, 3))
    out2 = F.embedding_bag(L(idx2), T(W), mode=mode, include_last_offset=True)
    ref2 = bag_ref(idx2.ravel(), W, [0, 3, 6, 9, 12], mode, include_last_offset=True)
    np.testing.assert_allclose(N(out2), ref2, rtol=1e-12)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_2d_matches_reduction(mode):
    idx = RNG.integers(0, 7, size=(4, 5))
    out = F.embedding_bag(L(idx), T(W), mode=mode)
    rows = W[idx]
    ref = {"sum": rows.sum(1), "mean": rows.mean(1), "max": rows.max(1)}[mode]
    np.testing.assert_allclose(N(out), ref, rtol=1e-12)
    # int32 indices work too
    out32 = F.embedding_bag(ft.from_numpy(idx.astype(np.int32)), T(W), mode=mode)
    np.testing.assert_allclose(N(out32), ref, rtol=1e-12)
    # padding entries left out of fixed-length bags (row 0 is all padding)
    idx[0] = 3
    idx[1, :2] = 3
    out = F.embedding_bag(L(idx), T(W), mode=mode, padding_idx=3)
    ref = bag_ref(idx.ravel(), W, [0, 5, 10, 15], mode, padding_idx=3)
    np.testing.assert_allclose(N(out), ref, rtol=1e-12)
    np.testing.assert_array_equal(N(out)[0], 0.0)


def test_embedding_bag_per_sample_weights_and_float32():
    psw = RNG.standard_normal(len(IDX))
    out = F.embedding_bag(
        L(IDX), T(W), L(OFFS), mode="sum", per_sample_weights=T(psw), padding_idx=4
    )
    np.testing.assert_allclose(N(out), bag_ref(IDX, W, OFFS, "sum", psw, padding_idx=4), rtol=1e-12)
    idx = RNG.integers(0, 7, size=(3, 4))
    p2 = RNG.standard_normal((3, 4)).astype(np.float32)
    out = F.embedding_bag(
        L(idx), T(W, np.float32), mode="sum", per_sample_weights=T(p2, np.float32)
    )
    assert out.dtype == ft.float32
    np.testing.assert_allclose(N(out), (W[idx] * p2[..., None]).sum(1), rtol=1e-5, atol=1e-6)


def test_embedding_bag_empty_input_and_no_bags():
    w = T(W, grad=True)
    out = F.embedding_bag(L([]), w, L([0, 0, 0]), mode="mean")
    np.testing.assert_array_equal(N(out), np.zeros((3, 3)))
    out.sum().backward()
    np.testing.assert_array_equal(N(w.grad), 0.0)
    for mode in ("sum", "max"):
        np.testing.assert_array_equal(
            N(F.embedding_bag(L([]), T(W), L([0, 0]), mode=mode)), np.zeros((2, 3))
        )
    assert tuple(F.embedding_bag(L([1, 2]), T(W), L([]), mode="sum").shape) == (0, 3)
    # every entry padding: zeros for max and mean
    for mode in ("mean", "max", "sum"):
        o = F.embedding_bag(L([3, 3, 1]), T(W), L([0, 2]), mode=mode, padding_idx=3)
        np.testing.assert_array_equal(N(o)[0], 0.0)
        np.testing.assert_allclose(N(o)[1], W[1], rtol=1e-12)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_gradcheck(mode):
    w = T(RNG.standard_normal((7, 3)), grad=True)
    assert gradcheck(lambda a: F.embedding_bag(L(IDX), a, L(OFFS), mode=mode, padding_idx=2), (w,))
    assert gradcheck(lambda a: F.embedding_bag(L(IDX.reshape(2, 5)), a, mode=mode), (w,))


def test_embedding_bag_gradients_values():
    w = T(W, grad=True)
    g = RNG.standard_normal((5, 3))
    (F.embedding_bag(L(IDX), w, L(OFFS), mode="mean", padding_idx=2) * T(g)).sum().backward()
    ref = np.zeros_like(W)
    for b, (s, e) in enumerate(zip(OFFS, OFFS[1:] + [len(IDX)])):
        sel = [i for i in range(s, e) if IDX[i] != 2]
        for i in sel:
            ref[IDX[i]] += g[b] / len(sel)
    np.testing.assert_allclose(N(w.grad), ref, rtol=1e-12)
    assert np.all(N(w.grad)[2] == 0)  # padding row gets no gradient
    # max: the gradient goes to the arg-max row of each bag, per column
    w2 = T(W, grad=True)
    F.embedding_bag(L(IDX), w2, L(OFFS), mode="max").sum().backward()
    ref = np.zeros_like(W)
    for s, e in zip(OFFS, OFFS[1:] + [len(IDX)]):
        if e > s:
            rows = IDX[s:e]
            am = W[rows].argmax(0)
            for d in range(3):
                ref[rows[am[d]], d] += 1
    np.testing.assert_allclose(N(w2.grad), ref)


def test_embedding_bag_per_sample_weights_gradcheck():
    w = T(RNG.standard_normal((7, 3)), grad=True)
    p = T(RNG.standard_normal(len(IDX)), grad=True)
    assert gradcheck(
        lambda a, b: F.embedding_bag(
            L(IDX), a, L(OFFS), mode="sum", per_sample_weights=b, padding_idx=4
        ),
        (w, p),
    )
    F.embedding_bag(
        L(IDX), w, L(OFFS), mode="sum", per_sample_weights=p, padding_idx=4
    ).sum().backward()
    np.testing.assert_array_equal(N(p.grad)[IDX == 4], 0.0)  # left out of their bags
    np.testing.assert_allclose(N(p.grad)[IDX != 4], N(w).sum(1)[IDX[IDX != 4]], rtol=1e-12)


def test_embedding_bag_max_norm_renormalises_rows():
    w = T(W * 3)
    F.embedding_bag(L([0, 1]), w, L([0]), max_norm=1.0)
    norms = np.linalg.norm(N(w), axis=1)
    assert np.all(norms[:2] <= 1.0 + 1e-6)
    np.testing.assert_allclose(norms[2:], np.linalg.norm(W[2:] * 3, axis=1))


def test_embedding_bag_errors():
    w = T(W)
    with pytest.raises(
        ValueError, match="input has to be 1D or 2D Tensor, but got Tensor of dimension 3"
    ):
        F.embedding_bag(L(np.zeros((2, 2, 2))), w)
    with pytest.raises(ValueError, match="if input is 2D, then offsets has to be None"):
        F.embedding_bag(L([[1, 2]]), w, L([0]))
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        F.embedding_bag(L([1, 2]), w)
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor"):
        F.embedding_bag(L([1, 2]), w, L([[0]]))
    with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
        F.embedding_bag(L([1, 2]), w, L([0]), mode="min")
    with pytest.raises(ValueError, match="max mode does not support scaling the gradient"):
        F.embedding_bag(L([1, 2]), w, L([0]), mode="max", scale_grad_by_freq=True)
    with pytest.raises(
        ValueError, match="weight has to be a 2D Tensor, but got Tensor of dimension 1"
    ):
        F.embedding_bag(L([1, 2]), T([1.0, 2.0]), L([0]))
    with pytest.raises(
        NotImplementedError,
        match="per_sample_weights is only supported for mode='sum' \\(got mode='mean'\\)",
    ):
        F.embedding_bag(L([1, 2]), w, L([0]), per_sample_weights=T([1.0, 2.0]))
    with pytest.raises(ValueError, match="then it must have the same shape as the input"):
        F.embedding_bag(L([1, 2]), w, L([0]), mode="sum", per_sample_weights=T([1.0]))
    with pytest.raises(
        RuntimeError,
        match="Expected tensor for argument #2 'indices' to have "
        "one of the following scalar types: Long, Int",
    ):
        F.embedding_bag(T([1.0, 2.0]), w, L([0]))
    with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0"):
        F.embedding_bag(L([1, 2]), w, L([1]))
    with pytest.raises(
        RuntimeError,
        match="offsets\\[-1\\] can not be greater than input's "
        "length 2 but got offsets\\[-1\\] of 3",
    ):
        F.embedding_bag(L([1, 2]), w, L([0, 3]))
    with pytest.raises(IndexError, match="found idx to be 7"):
        F.embedding_bag(L([1, 7]), w, L([0]))
    with pytest.raises(
        RuntimeError,
        match="padding_idx must be within the number of embeddings, -7 through 6, but got 7",
    ):
        F.embedding_bag(L([1, 2]), w, L([0]), padding_idx=7)
    with pytest.raises(
        RuntimeError, match="include_last_offset: number of offset should be at least 1"
    ):
        F.embedding_bag(L([1, 2]), w, L([]), include_last_offset=True)


def test_embedding_bag_module():
    ft.manual_seed(0)
    m = nn.EmbeddingBag(10, 3, mode="sum", padding_idx=2)
    assert repr(m) == "EmbeddingBag(10, 3, mode='sum', padding_idx=2)"
    assert np.all(N(m.weight)[2] == 0)
    wt = N(m.weight).copy()
    idx = np.array([2, 2, 2, 2, 4, 3, 2, 9])
    out = m(L(idx), L([0, 4]))
    np.testing.assert_allclose(N(out), bag_ref(idx, wt, [0, 4], "sum", padding_idx=2), rtol=1e-6)
    np.testing.assert_array_equal(N(out)[0], 0.0)
    assert [n for n, _ in m.named_parameters()] == ["weight"]
    assert nn.EmbeddingBag(5, 2, padding_idx=-1).padding_idx == 4
    with pytest.raises(AssertionError, match="padding_idx must be within num_embeddings"):
        nn.EmbeddingBag(5, 2, padding_idx=5)
    # a step of SGD moves only the rows that were used (not the padding row)
    opt = ft.optim.SGD(m.parameters(), lr=0.1)
    m(L(idx), L([0, 4])).pow(2).sum().backward()
    opt.step()
    moved = np.any(N(m.weight) != wt, axis=1)
    np.testing.assert_array_equal(np.nonzero(moved)[0], [3, 4, 9])

    pre = T([[1, 2.3, 3], [4, 5.1, 6.3]], np.float32)
    e = nn.EmbeddingBag.from_pretrained(pre)
    np.testing.assert_allclose(N(e(L([[1, 0]]))), [[2.5, 3.7, 4.65]], rtol=1e-6)
    assert not e.weight.requires_grad
    e2 = nn.EmbeddingBag.from_pretrained(pre, freeze=False, mode="max")
    assert e2.weight.requires_grad and e2.mode == "max"
    np.testing.assert_allclose(N(e2(L([[1, 0]]))), [[4, 5.1, 6.3]], rtol=1e-6)
    with pytest.raises(
        AssertionError, match="Embeddings parameter is expected to be 2-dimensional"
    ):
        nn.EmbeddingBag.from_pretrained(T([1.0, 2.0]))
    ps = T(RNG.standard_normal(8), np.float32)
    np.testing.assert_allclose(
        N(m(L(idx), L([0, 4]), per_sample_weights=ps)),
        bag_ref(idx, N(m.weight), [0, 4], "sum", N(ps), padding_idx=2),
        rtol=1e-5,
        atol=1e-6,
    )


# ============================================================================ affine_grid
def affine_grid_ref(theta, size, align_corners):
    def lin(n):
        if n <= 1:
            return np.zeros(1)
        r = np.linspace(-1, 1, n)
        return r if align_corners else r * (n - 1) / n

    if len(size) == 4:
        _, _, h, w = size
        ys, xs = np.meshgrid(lin(h), lin(w), indexing="ij")
        base = np.stack([xs, ys, np.ones_like(xs)], -1)  # (H, W, 3)
        return np.einsum("hwk,njk->nhwj", base, theta)
    _, _, d, h, w = size
    zs, ys, xs = np.meshgrid(lin(d), lin(h), lin(w), indexing="ij")
    base = np.stack([xs, ys, zs, np.ones_like(xs)], -1)
    return np.einsum("dhwk,njk->ndhwj", base, theta)


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 1, 1, 3), (2, 2, 3, 4, 2)])
def test_affine_grid_values_and_gradcheck(align_corners, size):
    shape = (2, 2, 3) if len(size) == 4 else (2, 3, 4)
    theta = RNG.standard_normal(shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the unit-size notice
        out = F.affine_grid(T(theta), size, align_corners=align_corners)
        np.testing.assert_allclose(
            N(out), affine_grid_ref(theta, size, align_corners), rtol=1e-12, atol=1e-14
        )
        assert gradcheck(
            lambda t: F.affine_grid(t, size, align_corners=align_corners), (T(theta, grad=True),)
        )


def test_affine_grid_errors_and_warnings():
    th = T(np.zeros((1, 2, 3)))
    with pytest.warns(
        UserWarning,
        match="Default grid_sample and affine_grid behavior has changed to align_corners=False",
    ):
        g = F.affine_grid(th, (1, 1, 2, 2))
    np.testing.assert_allclose(N(g), affine_grid_ref(np.zeros((1, 2, 3)), (1, 1, 2, 2), False))
    with pytest.raises(ValueError, match="Expected theta to have floating point type"):
        F.affine_grid(L(np.zeros((1, 2, 3))), (1, 1, 2, 2), align_corners=False)
    with pytest.raises(
        ValueError, match="Expected a batch of 2D affine matrices of shape Nx2x3 for size"
    ):
        F.affine_grid(T(np.zeros((1, 3, 4))), (1, 1, 2, 2), align_corners=False)
    with pytest.raises(
        ValueError, match="Expected a batch of 3D affine matrices of shape Nx3x4 for size"
    ):
        F.affine_grid(th, (1, 1, 2, 2, 2), align_corners=False)
    with pytest.raises(NotImplementedError, match="affine_grid only supports 4D and 5D sizes"):
        F.affine_grid(th, (1, 1, 2), align_corners=False)
    with pytest.raises(ValueError, match="Expected non-zero, positive output size"):
        F.affine_grid(th, (1, 1, 0, 2), align_corners=False)
    with pytest.warns(UserWarning, match="affine_grid behavior has changed for unit-size"):
        F.affine_grid(th, (1, 1, 1, 2), align_corners=True)


# ============================================================================ grid_sample
def _unnorm(c, size, ac):
    return (c + 1) / 2 * (size - 1) if ac else ((c + 1) * size - 1) / 2


def _reflect(x, twice_low, twice_high):
    if twice_low == twice_high:
        return 0.0
    mn = twice_low / 2
    span = (twice_high - twice_low) / 2
    x = abs(x - mn)
    extra = math.fmod(x, span)
    flips = int(math.floor(x / span))
    return extra + mn if flips % 2 == 0 else span - extra + mn


def _pad_coord(x, size, padding_mode, ac):
    if padding_mode == "border":
        x = min(size - 1.0, max(x, 0.0))
    elif padding_mode == "reflection":
        x = _reflect(x, 0, 2 * (size - 1)) if ac else _reflect(x, -1, 2 * size - 1)
        x = min(size - 1.0, max(x, 0.0))
    if not math.isfinite(x) or abs(x) > 2**31 - 2:
        x = -100.0
    return x


def _cubic(t):
    a = -0.75

    def c1(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def c2(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [c2(t + 1), c1(t), c1(1 - t), c2(2 - t)]


def grid_sample_ref(inp, grid, mode, padding_mode, ac):
    """PyTorch's CPU grid sampler, point by point (4-D and 5-D)."""
    nd = inp.ndim - 2
    n, c = inp.shape[:2]
    sizes = inp.shape[2:]
    out_sp = grid.shape[1:-1]
    out = np.zeros((n, c) + out_sp)
    for b in range(n):
        for pt in itertools.product(*[range(s) for s in out_sp]):
            g = grid[(b,) + pt]
            raw = [g[nd - 1 - k] for k in range(nd)]  # along (D,) H, W
            if mode == "bicubic":
                x = [_unnorm(r, s, ac) for r, s in zip(raw, sizes)]
                base = [math.floor(v) for v in x]
                co = [_cubic(v - bv) for v, bv in zip(x, base)]
                acc = np.zeros(c)
                for i in range(4):
                    for j in range(4):
                        yy = int(_pad_coord(base[0] - 1 + i, sizes[0], padding_mode, ac))
                        xx = int(_pad_coord(base[1] - 1 + j, sizes[1], padding_mode, ac))
                        if 0 <= yy < sizes[0] and 0 <= xx < sizes[1]:
                            acc += inp[b, :, yy, xx] * co[0][i] * co[1][j]
                out[(b, slice(None)) + pt] = acc
                continue
            x = [_pad_coord(_unnorm(r, s, ac), s, padding_mode, ac) for r, s in zip(raw, sizes)]
            if mode == "nearest":
                q = [int(np.rint(v)) for v in x]
                if all(0 <= qi < s for qi, s in zip(q, sizes)):
                    out[(b, slice(None)) + pt] = inp[(b, slice(None)) + tuple(q)]
                continue
            base = [math.floor(v) for v in x]
            acc = np.zeros(c)
            for corner in itertools.product((0, 1), repeat=nd):
                q = [bv + k for bv, k in zip(base, corner)]
                wgt = 1.0
                for v, bv, k in zip(x, base, corner):
                    wgt *= (v - bv) if k else (1 - (v - bv))
                if all(0 <= qi < s for qi, s in zip(q, sizes)):
                    acc += wgt * inp[(b, slice(None)) + tuple(q)]
            out[(b, slice(None)) + pt] = acc
    return out


MODES = ["bilinear", "nearest", "bicubic"]
PADS = ["zeros", "border", "reflection"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("padding_mode", PADS)
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_4d_values(mode, padding_mode, align_corners):
    inp = RNG.standard_normal((2, 3, 4, 5))
    grid = RNG.uniform(-1.7, 1.7, size=(2, 3, 6, 2))  # many points outside [-1, 1]
    grid[0, 0, 0] = [-1.0, 1.0]  # exact corners
    grid[1, 2, 5] = [1.0, -1.0]
    grid[0, 1, 1] = [3.9, -5.2]  # far out (several reflections)
    out = F.grid_sample(
        T(inp), T(grid), mode=mode, padding_mode=padding_mode, align_corners=align_corners
    )
    assert tuple(out.shape) == (2, 3, 3, 6)
    ref = grid_sample_ref(inp, grid, mode, padding_mode, align_corners)
    np.testing.assert_allclose(N(out), ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", PADS)
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_5d_values(mode, padding_mode, align_corners):
    inp = RNG.standard_normal((2, 2, 3, 4, 3))
    grid = RNG.uniform(-1.5, 1.5, size=(2, 2, 3, 2, 3))
    out = F.grid_sample(
        T(inp), T(grid), mode=mode, padding_mode=padding_mode, align_corners=align_corners
    )
    assert tuple(out.shape) == (2, 2, 2, 3, 2)
    ref = grid_sample_ref(inp, grid, mode, padding_mode, align_corners)
    np.testing.assert_allclose(N(out), ref, rtol=1e-10, atol=1e-12)


def test_grid_sample_out_of_range_and_nonfinite_points():
    inp = RNG.standard_normal((1, 2, 3, 3))
    grid = np.array([[[[5.0, 5.0], [-3.0, 0.0], [np.inf, 0.0], [np.nan, 0.2], [1e40, 0.0]]]])
    out = N(F.grid_sample(T(inp), T(grid), align_corners=False))
    np.testing.assert_array_equal(out, 0.0)  # zeros padding: nothing to sample
    # border padding clamps finite far points to the edge
    out = N(F.grid_sample(T(inp), T(grid[:, :, :2]), padding_mode="border", align_corners=True))
    np.testing.assert_allclose(out[0, :, 0, 0], inp[0, :, 2, 2])
    np.testing.assert_allclose(out[0, :, 0, 1], inp[0, :, 1, 0])
    # half a pixel beyond the border (align_corners=False) blends with zeros
    g = np.array([[[[-1.0, 0.0]]]])
    o = N(F.grid_sample(T(inp), T(g), align_corners=False))
    np.testing.assert_allclose(o[0, :, 0, 0], 0.5 * inp[0, :, 1, 0])


def test_grid_sample_empty_batch_and_grid():
    for mode in MODES:
        x = T(RNG.standard_normal((2, 3, 4, 4)), grad=True)
        out = F.grid_sample(x, T(np.zeros((2, 0, 5, 2))), mode=mode, align_corners=False)
        assert tuple(out.shape) == (2, 3, 0, 5)
        out.sum().backward()
        np.testing.assert_array_equal(N(x.grad), 0.0)
        out = F.grid_sample(
            T(np.zeros((0, 3, 4, 4))), T(np.zeros((0, 2, 2, 2))), mode=mode, align_corners=True
        )
        assert tuple(out.shape) == (0, 3, 2, 2)
    out = F.grid_sample(
        T(np.zeros((0, 1, 2, 2, 2))), T(np.zeros((0, 1, 2, 1, 3))), align_corners=False
    )
    assert tuple(out.shape) == (0, 1, 1, 2, 1)


@pytest.mark.parametrize("align_corners", [False, True])
def test_identity_affine_grid_sample_reproduces_input(align_corners):
    inp = RNG.standard_normal((2, 3, 5, 4))
    theta = np.tile(np.array([[1.0, 0, 0], [0, 1, 0]]), (2, 1, 1))
    grid = F.affine_grid(T(theta), (2, 3, 5, 4), align_corners=align_corners)
    for mode in MODES:
        out = F.grid_sample(T(inp), grid, mode=mode, align_corners=align_corners)
        np.testing.assert_allclose(N(out), inp, rtol=1e-10, atol=1e-12)
    # a horizontal flip
    theta[:, 0, 0] = -1
    grid = F.affine_grid(T(theta), (2, 3, 5, 4), align_corners=align_corners)
    out = F.grid_sample(T(inp), grid, align_corners=align_corners)
    np.testing.assert_allclose(N(out), inp[..., ::-1], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("padding_mode", PADS)
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_gradcheck(mode, padding_mode, align_corners):
    inp = T(RNG.standard_normal((1, 2, 3, 4)), grad=True)
    grid = T(RNG.uniform(-1.3, 1.3, size=(1, 2, 3, 2)), grad=True)
    assert gradcheck(
        lambda a, g: F.grid_sample(
            a, g, mode=mode, padding_mode=padding_mode, align_corners=align_corners
        ),
        (inp, grid),
    )


@pytest.mark.parametrize("padding_mode", PADS)
def test_grid_sample_5d_gradcheck(padding_mode):
    inp = T(RNG.standard_normal((1, 2, 2, 3, 3)), grad=True)
    grid = T(RNG.uniform(-1.3, 1.3, size=(1, 2, 1, 2, 3)), grad=True)
    assert gradcheck(
        lambda a, g: F.grid_sample(a, g, padding_mode=padding_mode, align_corners=False),
        (inp, grid),
    )


def test_grid_sample_nearest_gradients():
    inp = T(RNG.standard_normal((1, 2, 3, 4)), grad=True)
    grid = T(RNG.uniform(-1.2, 1.2, size=(1, 3, 3, 2)), grad=True)
    assert gradcheck(lambda a: F.grid_sample(a, grid, mode="nearest", align_corners=False), (inp,))
    F.grid_sample(inp, grid, mode="nearest", align_corners=False).sum().backward()
    np.testing.assert_array_equal(N(grid.grad), 0.0)  # piecewise constant in the grid


def test_grid_sample_gradient_values_bilinear():
    # d out / d x of bilinear sampling on a linear ramp is the ramp's slope (in grid units)
    inp = np.broadcast_to(np.arange(5.0), (1, 1, 4, 5)).copy()
    grid = T(RNG.uniform(-0.7, 0.7, size=(1, 2, 3, 2)), grad=True)
    F.grid_sample(T(inp), grid, align_corners=True).sum().backward()
    np.testing.assert_allclose(N(grid.grad)[..., 0], 2.0, rtol=1e-12)  # (W - 1) / 2
    np.testing.assert_allclose(N(grid.grad)[..., 1], 0.0, atol=1e-12)


def test_grid_sample_float32_and_errors():
    inp = ft.randn(1, 2, 3, 3)
    grid = ft.rand(1, 2, 2, 2) * 2 - 1
    out = F.grid_sample(inp, grid, align_corners=False)
    assert out.dtype == ft.float32
    ref = grid_sample_ref(
        N(inp).astype(np.float64), N(grid).astype(np.float64), "bilinear", "zeros", False
    )
    np.testing.assert_allclose(N(out), ref, rtol=1e-5, atol=1e-6)
    with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior"):
        F.grid_sample(inp, grid)
    with pytest.raises(
        ValueError,
        match="expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: 'linear'",
    ):
        F.grid_sample(inp, grid, mode="linear", align_corners=False)
    with pytest.raises(
        ValueError,
        match="expected padding_mode to be 'zeros', 'border', or 'reflection', but got: 'wrap'",
    ):
        F.grid_sample(inp, grid, padding_mode="wrap", align_corners=False)
    with pytest.raises(RuntimeError, match="expected grid to have size 1 in last dimension"):
        F.grid_sample(inp[0], grid[0], align_corners=False)
    with pytest.raises(
        RuntimeError, match="expected 4D input and grid with same number of dimensions"
    ):
        F.grid_sample(inp, grid.unsqueeze(1), align_corners=False)
    with pytest.raises(RuntimeError, match="expected grid to have size 2 in last dimension"):
        F.grid_sample(inp, ft.zeros(1, 2, 2, 3), align_corners=False)
    with pytest.raises(RuntimeError, match="expected grid and input to have same batch size"):
        F.grid_sample(inp, ft.zeros(2, 2, 2, 2), align_corners=False)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        F.grid_sample(inp, grid.double(), align_corners=False)
    with pytest.raises(RuntimeError, match="expected input to have non-empty spatial dimensions"):
        F.grid_sample(ft.zeros(1, 2, 0, 3), grid, align_corners=False)
    # torch 2.15 samples 5-D input tricubically (values: test_nn_functional_parity_sweep.py)
    out = F.grid_sample(
        ft.ones(1, 1, 2, 2, 2), ft.zeros(1, 1, 1, 1, 3), mode="bicubic", align_corners=False
    )
    assert tuple(out.shape) == (1, 1, 1, 1, 1)


# ============================================================================ ctc_loss
def _lse(*xs):
    m = max(xs)
    if m == -np.inf:
        return -np.inf
    return m + math.log(sum(math.exp(x - m) for x in xs))


def ctc_ref_single(lp, target, blank):
    """-log p(target | lp) for lp (T, C) by the alpha recursion (Graves et al. 2006)."""
    t_len = lp.shape[0]
    if t_len == 0:
        return 0.0 if len(target) == 0 else np.inf
    ext = [blank]
    for ch in target:
        ext += [int(ch), blank]
    s_len = len(ext)
    alpha = np.full(s_len, -np.inf)
    alpha[0] = lp[0, blank]
    if s_len > 1:
        alpha[1] = lp[0, ext[1]]
    for t in range(1, t_len):
        new = np.full(s_len, -np.inf)
        for s in range(s_len):
            terms = [alpha[s]]
            if s >= 1:
                terms.append(alpha[s - 1])
            if s >= 2 and ext[s] != blank and ext[s] != ext[s - 2]:
                terms.append(alpha[s - 2])
            new[s] = _lse(*terms) + lp[t, ext[s]]
        alpha = new
    ll = alpha[-1] if s_len == 1 else _lse(alpha[-1], alpha[-2])
    return -ll


def ctc_brute_force(lp, target, blank):
    """-log of the summed probability of every alignment that collapses to ``target``."""
    t_len, c = lp.shape
    total = 0.0
    for path in itertools.product(range(c), repeat=t_len):
        out = []
        prev = None
        for p in path:
            if p != prev and p != blank:
                out.append(p)
            prev = p
        if out == list(target):
            total += math.exp(sum(lp[t, p] for t, p in enumerate(path)))
    return -math.log(total) if total > 0 else np.inf


def ctc_ref(lp, targets, in_lens, tg_lens, blank=0, reduction="mean", zero_infinity=False):
    """lp (T, N, C); targets padded (N, S) or concatenated 1-D."""
    losses = []
    pos = 0
    for b, (il, tl) in enumerate(zip(in_lens, tg_lens)):
        if targets.ndim == 2:
            tgt = targets[b, :tl]
        else:
            tgt = targets[pos : pos + tl]
            pos += tl
        v = ctc_ref_single(lp[:il, b], tgt, blank)
        if zero_infinity and v == np.inf:
            v = 0.0
        losses.append(v)
    losses = np.array(losses)
    if reduction == "mean":
        return (losses / np.maximum(np.array(tg_lens), 1)).mean()
    if reduction == "sum":
        return losses.sum()
    return losses


def log_softmax_np(x, axis=-1):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def test_ctc_reference_matches_brute_force():
    lp = log_softmax_np(RNG.standard_normal((4, 3)))
    for target in ([1], [1, 2], [2, 2], [], [1, 1, 2]):
        np.testing.assert_allclose(
            ctc_ref_single(lp, target, 0), ctc_brute_force(lp, target, 0), rtol=1e-12
        )
    np.testing.assert_allclose(
        ctc_ref_single(lp, [0, 2], 1), ctc_brute_force(lp, [0, 2], 1), rtol=1e-12
    )


CTC_T, CTC_N, CTC_C = 7, 4, 5
CTC_LP = log_softmax_np(RNG.standard_normal((CTC_T, CTC_N, CTC_C)))
CTC_TARGETS = np.array([[1, 2, 2, 3], [4, 4, 0, 0], [3, 1, 2, 0], [2, 0, 0, 0]])
CTC_TLENS = [4, 2, 3, 0]  # repeated labels, an empty target
CTC_ILENS = [7, 5, 6, 3]


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_ctc_loss_padded_targets(reduction):
    out = F.ctc_loss(T(CTC_LP), L(CTC_TARGETS), L(CTC_ILENS), L(CTC_TLENS), reduction=reduction)
    ref = ctc_ref(CTC_LP, CTC_TARGETS, CTC_ILENS, CTC_TLENS, reduction=reduction)
    np.testing.assert_allclose(N(out), ref, rtol=1e-12)
    if reduction == "none":
        assert tuple(out.shape) == (CTC_N,)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_ctc_loss_concatenated_targets_and_list_lengths(reduction):
    concat = np.concatenate([CTC_TARGETS[b, :tl] for b, tl in enumerate(CTC_TLENS)])
    out = F.ctc_loss(T(CTC_LP), L(concat), CTC_ILENS, tuple(CTC_TLENS), reduction=reduction)
    ref = ctc_ref(CTC_LP, CTC_TARGETS, CTC_ILENS, CTC_TLENS, reduction=reduction)
    np.testing.assert_allclose(N(out), ref, rtol=1e-12)
    # int32 targets and lengths
    out32 = F.ctc_loss(
        T(CTC_LP),
        ft.from_numpy(concat.astype(np.int32)),
        ft.from_numpy(np.array(CTC_ILENS, dtype=np.int32)),
        ft.from_numpy(np.array(CTC_TLENS, dtype=np.int32)),
        reduction=reduction,
    )
    np.testing.assert_allclose(N(out32), ref, rtol=1e-12)


def test_ctc_loss_single_frame_and_empty_targets():
    lp = log_softmax_np(RNG.standard_normal((1, 3, 4)))
    out = F.ctc_loss(T(lp), L([[2], [0], [3]]), [1, 1, 1], [1, 0, 1], reduction="none")
    np.testing.assert_allclose(N(out), [-lp[0, 0, 2], -lp[0, 1, 0], -lp[0, 2, 3]], rtol=1e-12)
    # all targets empty: the loss is -sum_t log p(blank)
    out = F.ctc_loss(T(CTC_LP), L(np.zeros((4, 0))), CTC_ILENS, [0, 0, 0, 0], reduction="none")
    ref = [-CTC_LP[:il, b, 0].sum() for b, il in enumerate(CTC_ILENS)]
    np.testing.assert_allclose(N(out), ref, rtol=1e-12)
    out = F.ctc_loss(T(CTC_LP), L(np.zeros(0)), CTC_ILENS, [0, 0, 0, 0], reduction="sum")
    np.testing.assert_allclose(out.item(), sum(ref), rtol=1e-12)


def test_ctc_loss_blank_not_zero():
    tg = np.array([[0, 1, 1], [3, 2, 0]])
    out = F.ctc_loss(T(CTC_LP[:, :2]), L(tg), [7, 6], [3, 2], blank=4, reduction="none")
    ref = ctc_ref(CTC_LP[:, :2], tg, [7, 6], [3, 2], blank=4, reduction="none")
    np.testing.assert_allclose(N(out), ref, rtol=1e-12)


def test_ctc_loss_unbatched():
    lp = CTC_LP[:, 0]
    for reduction in ("none", "mean", "sum"):
        out = F.ctc_loss(T(lp), L([1, 2, 2, 3]), 7, 4, reduction=reduction)
        assert out.ndim == 0
        v = ctc_ref_single(lp, [1, 2, 2, 3], 0)
        np.testing.assert_allclose(out.item(), v / 4 if reduction == "mean" else v, rtol=1e-12)
    out = F.ctc_loss(T(lp), L([1, 2]), L(5), L(2), reduction="none")
    np.testing.assert_allclose(out.item(), ctc_ref_single(lp[:5], [1, 2], 0), rtol=1e-12)


def test_ctc_loss_impossible_alignment_and_zero_infinity():
    # [1, 1] needs 3 frames (1, blank, 1); 2 frames cannot emit it. No frames: only ''.
    lp = CTC_LP[:, :3]
    tg = np.array([[1, 1], [2, 0], [1, 2]])
    il, tl = [2, 0, 0], [2, 0, 2]
    out = F.ctc_loss(T(lp), L(tg), il, tl, reduction="none")
    assert np.isinf(N(out)[0]) and N(out)[0] > 0
    assert N(out)[1] == 0.0 and np.isinf(N(out)[2])
    x = T(lp, grad=True)
    out = F.ctc_loss(x, L(tg), [2, 5, 0], tl, reduction="none", zero_infinity=True)
    ref = ctc_ref(lp, tg, [2, 5, 0], tl, reduction="none", zero_infinity=True)
    np.testing.assert_allclose(N(out), ref, rtol=1e-12)
    assert N(out)[0] == 0.0 and N(out)[2] == 0.0
    out.sum().backward()
    gx = N(x.grad)
    assert np.all(np.isfinite(gx))
    np.testing.assert_array_equal(gx[:, [0, 2]], 0.0)  # infinite losses give no gradient
    assert np.abs(gx[:, 1]).max() > 0
    # mean with zero_infinity: the zeroed loss still counts in the average
    m = F.ctc_loss(T(lp), L(tg), [2, 5, 0], tl, zero_infinity=True)
    np.testing.assert_allclose(
        m.item(), ctc_ref(lp, tg, [2, 5, 0], tl, zero_infinity=True), rtol=1e-12
    )


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_ctc_loss_gradcheck(reduction):
    lp = T(CTC_LP[:, :3], grad=True)
    assert gradcheck(
        lambda a: F.ctc_loss(
            a, L(CTC_TARGETS[:3]), CTC_ILENS[:3], CTC_TLENS[:3], reduction=reduction
        ),
        (lp,),
    )
    logits = T(RNG.standard_normal((5, 2, 4)), grad=True)
    concat = L([1, 3, 3, 2])
    assert gradcheck(
        lambda z: F.ctc_loss(
            z.log_softmax(2), concat, [5, 4], [3, 1], blank=0, reduction=reduction
        ),
        (logits,),
    )


def test_ctc_loss_gradient_is_occupancy():
    # d loss / d log_probs[t, n, c] = -(posterior occupancy of label c at time t): summing over
    # c gives -1 for t < input_length and 0 after
    x = T(CTC_LP, grad=True)
    F.ctc_loss(x, L(CTC_TARGETS), CTC_ILENS, CTC_TLENS, reduction="sum").backward()
    gsum = N(x.grad).sum(2)
    for b, il in enumerate(CTC_ILENS):
        np.testing.assert_allclose(gsum[:il, b], -1.0, rtol=1e-10)
        np.testing.assert_array_equal(gsum[il:, b], 0.0)
    assert np.all(N(x.grad) <= 1e-15)


def test_ctc_loss_float32_and_module():
    lp32 = CTC_LP.astype(np.float32)
    m = nn.CTCLoss()
    assert m.blank == 0 and m.reduction == "mean" and not m.zero_infinity
    out = m(T(lp32, np.float32), L(CTC_TARGETS), L(CTC_ILENS), L(CTC_TLENS))
    assert out.dtype == ft.float32
    np.testing.assert_allclose(
        out.item(), ctc_ref(CTC_LP, CTC_TARGETS, CTC_ILENS, CTC_TLENS), rtol=1e-5
    )
    m = nn.CTCLoss(blank=4, reduction="sum", zero_infinity=True)
    tg = np.array([[0, 0, 0], [1, 2, 0]])
    out = m(T(CTC_LP[:, :2]), L(tg), [2, 7], [3, 2])
    np.testing.assert_allclose(
        out.item(),
        ctc_ref(CTC_LP[:, :2], tg, [2, 7], [3, 2], blank=4, reduction="sum", zero_infinity=True),
        rtol=1e-12,
    )


def test_ctc_loss_training_reduces_loss():
    ft.manual_seed(0)
    logits = T(RNG.standard_normal((8, 2, 4)) * 0.1, grad=True)
    opt = ft.optim.Adam([logits], lr=0.1)
    tg = L([[1, 2, 3], [3, 3, 0]])
    losses = []
    for _ in range(30):
        opt.zero_grad()
        loss = F.ctc_loss(logits.log_softmax(2), tg, [8, 8], [3, 2])
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.25 * losses[0]


def test_ctc_loss_errors():
    lp = T(CTC_LP)
    tg, il, tl = L(CTC_TARGETS), CTC_ILENS, CTC_TLENS
    with pytest.raises(ValueError, match="bad is not a valid value for reduction"):
        F.ctc_loss(lp, tg, il, tl, reduction="bad")
    with pytest.raises(
        RuntimeError,
        match="Expected 3-dimensional tensor, but got "
        "5-dimensional tensor for argument #1 'log_probs'",
    ):
        F.ctc_loss(lp.unsqueeze(0), tg, il, tl)
    with pytest.raises(
        RuntimeError,
        match="Expected 3-dimensional tensor, but got "
        "2-dimensional tensor for argument #1 'log_probs'",
    ):
        F.ctc_loss(lp[0, 0], tg, il, tl)
    with pytest.raises(RuntimeError, match="blank must be in label range"):
        F.ctc_loss(lp, tg, il, tl, blank=5)
    with pytest.raises(RuntimeError, match="input_lengths must be of size batch_size"):
        F.ctc_loss(lp, tg, il[:3], tl)
    with pytest.raises(RuntimeError, match="target_lengths must be of size batch_size"):
        F.ctc_loss(lp, tg, il, tl + [1])
    with pytest.raises(
        RuntimeError, match="Expected input_lengths to have value at most 7, but got value 8"
    ):
        F.ctc_loss(lp, tg, [8, 1, 1, 1], tl)
    with pytest.raises(RuntimeError, match="Expected target_lengths to have value at least 0"):
        F.ctc_loss(lp, tg, il, [1, 1, 1, -1])
    with pytest.raises(
        RuntimeError,
        match="Expected tensor to have size at least 5 at "
        "dimension 1, but got size 4 for argument #2",
    ):
        F.ctc_loss(lp, tg, il, [5, 1, 1, 1])
    with pytest.raises(
        RuntimeError,
        match="Expected tensor to have size 9 at dimension 0, but "
        "got size 8 for argument #2 'targets'",
    ):
        F.ctc_loss(lp, L(np.ones(8)), il, tl)
    with pytest.raises(
        RuntimeError,
        match="Expected 1 to 2 dimensions, but got 3-dimensional tensor for argument #2 'targets'",
    ):
        F.ctc_loss(lp, L(np.ones((4, 4, 1))), il, tl)
    with pytest.raises(RuntimeError, match="input_lengths must be integral"):
        F.ctc_loss(lp, tg, T(il), L(tl))
    with pytest.raises(RuntimeError, match="target_lengths must be integral"):
        F.ctc_loss(lp, tg, L(il), T(tl))
    with pytest.raises(IndexError, match="target 9 is out of bounds"):
        F.ctc_loss(lp, L([[9, 1, 1, 1]] * 4), il, [1, 1, 1, 1])


# ============================================================================ vs PyTorch
def test_torch_comparison_embedding_bag_and_gumbel():
    torch = pytest.importorskip("torch")
    for mode in ("sum", "mean", "max"):
        for pad in (None, 2):
            ours = F.embedding_bag(L(IDX), T(W), L(OFFS), mode=mode, padding_idx=pad)
            ref = torch.nn.functional.embedding_bag(
                torch.from_numpy(IDX),
                torch.from_numpy(W),
                torch.tensor(OFFS),
                mode=mode,
                padding_idx=pad,
            )
            np.testing.assert_allclose(N(ours), ref.numpy(), rtol=1e-12)
    w_t = torch.from_numpy(W.copy()).requires_grad_()
    psw = RNG.standard_normal(len(IDX))
    p_t = torch.from_numpy(psw.copy()).requires_grad_()
    torch.nn.functional.embedding_bag(
        torch.from_numpy(IDX),
        w_t,
        torch.tensor(OFFS[:-1] + [7]),
        mode="sum",
        per_sample_weights=p_t,
        include_last_offset=True,
    ).sum().backward()
    w = T(W, grad=True)
    p = T(psw, grad=True)
    F.embedding_bag(
        L(IDX), w, L(OFFS[:-1] + [7]), mode="sum", per_sample_weights=p, include_last_offset=True
    ).sum().backward()
    np.testing.assert_allclose(N(w.grad), w_t.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(N(p.grad), p_t.grad.numpy(), rtol=1e-12)


def test_torch_comparison_grid_sample():
    torch = pytest.importorskip("torch")
    inp = RNG.standard_normal((2, 3, 4, 5))
    grid = RNG.uniform(-1.4, 1.4, size=(2, 3, 4, 2))
    g_out = RNG.standard_normal((2, 3, 3, 4))
    for mode, pad, ac in itertools.product(MODES, PADS, (False, True)):
        a = T(inp, grad=True)
        g = T(grid, grad=True)
        out = F.grid_sample(a, g, mode=mode, padding_mode=pad, align_corners=ac)
        (out * T(g_out)).sum().backward()
        at = torch.from_numpy(inp.copy()).requires_grad_()
        gt = torch.from_numpy(grid.copy()).requires_grad_()
        ref = torch.nn.functional.grid_sample(at, gt, mode=mode, padding_mode=pad, align_corners=ac)
        (ref * torch.from_numpy(g_out)).sum().backward()
        np.testing.assert_allclose(N(out), ref.detach().numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(N(a.grad), at.grad.numpy(), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(N(g.grad), gt.grad.numpy(), rtol=1e-9, atol=1e-10)
    theta = RNG.standard_normal((2, 2, 3))
    for ac in (False, True):
        np.testing.assert_allclose(
            N(F.affine_grid(T(theta), (2, 3, 4, 5), align_corners=ac)),
            torch.nn.functional.affine_grid(
                torch.from_numpy(theta), (2, 3, 4, 5), align_corners=ac
            ).numpy(),
            rtol=1e-12,
        )


def test_torch_comparison_ctc_loss():
    torch = pytest.importorskip("torch")
    logits = RNG.standard_normal((CTC_T, CTC_N, CTC_C))
    for reduction in ("none", "mean", "sum"):
        z = T(logits, grad=True)
        out = F.ctc_loss(
            z.log_softmax(2), L(CTC_TARGETS), CTC_ILENS, CTC_TLENS, reduction=reduction
        )
        out.sum().backward()
        zt = torch.from_numpy(logits.copy()).requires_grad_()
        ref = torch.nn.functional.ctc_loss(
            zt.log_softmax(2),
            torch.from_numpy(CTC_TARGETS),
            torch.tensor(CTC_ILENS),
            torch.tensor(CTC_TLENS),
            reduction=reduction,
        )
        ref.sum().backward()
        np.testing.assert_allclose(N(out), ref.detach().numpy(), rtol=1e-10)
        # gradients agree with respect to the logits (see the ctc_loss docstring)
        np.testing.assert_allclose(N(z.grad), zt.grad.numpy(), rtol=1e-8, atol=1e-10)
