"""Fused LSTM/GRU cell pointwise kernels (`_C._lstm_cell_pointwise`, `_C._gru_cell_pointwise`)
vs NumPy and vs the composed tensor-op formulas (values and gradients)."""

import numpy as np
import pytest

import ferrotorch as ft
from ferrotorch import _C, nn
from ferrotorch.autograd import gradcheck
from ferrotorch.nn.modules import rnn as rnn_mod

RNG = np.random.default_rng(4321)

FLOATS = [(ft.float32, np.float32, 1e-5), (ft.float64, np.float64, 1e-12)]
SHAPES = [(0, 3), (1, 1), (3, 0), (4, 5), (7, 16), (2, 33)]


def T(a, grad=False):
    x = ft.from_numpy(np.ascontiguousarray(a))
    return x.requires_grad_() if grad else x


def N(x):
    return x.detach().numpy()


def rand(*shape, dtype=np.float64):
    return (RNG.standard_normal(shape) * 1.5).astype(dtype)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# ------------------------------------------------------------------------ references
def np_lstm(g, c):
    H = c.shape[1]
    i, f, gg, o = (g[:, k * H:(k + 1) * H] for k in range(4))
    c2 = sigmoid(f) * c + sigmoid(i) * np.tanh(gg)
    return sigmoid(o) * np.tanh(c2), c2


def np_gru(ig, hg, h):
    H = h.shape[1]
    r = sigmoid(ig[:, :H] + hg[:, :H])
    z = sigmoid(ig[:, H:2 * H] + hg[:, H:2 * H])
    n = np.tanh(ig[:, 2 * H:] + r * hg[:, 2 * H:])
    return (1 - z) * n + z * h


def composed_lstm(gates, c):
    i, f, g, o = gates.chunk(4, -1)
    c2 = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c2.tanh(), c2


def composed_gru(ig, hg, h):
    i_r, i_z, i_n = ig.chunk(3, -1)
    h_r, h_z, h_n = hg.chunk(3, -1)
    r = (i_r + h_r).sigmoid()
    z = (i_z + h_z).sigmoid()
    n = (i_n + r * h_n).tanh()
    return n + z * (h - n)


def leaf(shape, dt, layout):
    """A leaf and a function making the (B, W) operand seen by the op from it: the leaf
    itself, a transpose of a (W, B) leaf, or a stepped slice of a (B, 2W) leaf."""
    B, W = shape
    if layout == "transposed":
        return T(rand(W, B, dtype=dt), grad=True), lambda t: t.t()
    if layout == "stepped":
        return T(rand(B, 2 * W, dtype=dt), grad=True), lambda t: t[:, ::2]
    return T(rand(B, W, dtype=dt), grad=True), lambda t: t


def grads_of(outs, leaves, weights):
    for lf in leaves:
        lf.grad = None
    loss = None
    for o, w in zip(outs, weights):
        if w is not None:
            term = (o * T(w)).sum()
            loss = term if loss is None else loss + term
    loss.backward()
    return [np.zeros(tuple(lf.shape)) if lf.grad is None else lf.grad.numpy() for lf in leaves]


LAYOUTS = [("contiguous", "contiguous"), ("transposed", "stepped"), ("stepped", "transposed")]


# ------------------------------------------------------------------------------- LSTM
@pytest.mark.parametrize("ftdt,npdt,tol", FLOATS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("layouts", LAYOUTS)
def test_lstm_values_and_grads(ftdt, npdt, tol, shape, layouts):
    B, H = shape
    lg, vg = leaf((B, 4 * H), npdt, layouts[0])
    lc, vc = leaf((B, H), npdt, layouts[1])
    gates, c = vg(lg), vc(lc)
    h2, c2 = _C._lstm_cell_pointwise(gates, c)
    assert h2.dtype == ftdt and c2.dtype == ftdt
    assert tuple(h2.shape) == (B, H) and tuple(c2.shape) == (B, H)
    eh, ec = np_lstm(N(gates).astype(np.float64), N(c).astype(np.float64))
    np.testing.assert_allclose(N(h2), eh, rtol=tol, atol=tol)
    np.testing.assert_allclose(N(c2), ec, rtol=tol, atol=tol)
    if B * H == 0:
        return
    wh, wc = rand(B, H, dtype=npdt), rand(B, H, dtype=npdt)
    for weights in [(wh, wc), (wh, None), (None, wc)]:
        got = grads_of(_C._lstm_cell_pointwise(vg(lg), vc(lc)), [lg, lc], weights)
        want = grads_of(composed_lstm(vg(lg), vc(lc)), [lg, lc], weights)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=10 * tol, atol=10 * tol)


def test_lstm_grad_fn_and_no_grad():
    g = T(rand(2, 12), grad=True)
    c = T(rand(2, 3), grad=True)
    h2, c2 = _C._lstm_cell_pointwise(g, c)
    assert h2.grad_fn.name() == "ThnnFusedLstmCellBackward0"
    assert c2.grad_fn is h2.grad_fn or c2.grad_fn.name() == "ThnnFusedLstmCellBackward0"
    with ft.no_grad():
        h3, c3 = _C._lstm_cell_pointwise(g, c)
    assert h3.grad_fn is None and c3.grad_fn is None and not h3.requires_grad
    # Only one input requiring grad: the other gets no gradient.
    g2 = T(rand(2, 12))
    h4, _ = _C._lstm_cell_pointwise(g2, c)
    h4.sum().backward()
    assert g2.grad is None and c.grad is not None


def test_lstm_gradcheck():
    g = T(rand(3, 8), grad=True)
    c = T(rand(3, 2), grad=True)
    assert gradcheck(lambda a, b: _C._lstm_cell_pointwise(a, b), (g, c))
    gt = T(rand(8, 3), grad=True)
    cs = T(rand(3, 4), grad=True)
    assert gradcheck(lambda a, b: _C._lstm_cell_pointwise(a.t(), b[:, ::2]), (gt, cs))
    # Only c' used (h' gets no gradient) and only h' used.
    assert gradcheck(lambda a, b: _C._lstm_cell_pointwise(a, b)[1], (g, c))
    assert gradcheck(lambda a, b: _C._lstm_cell_pointwise(a, b)[0], (g, c))


# -------------------------------------------------------------------------------- GRU
@pytest.mark.parametrize("ftdt,npdt,tol", FLOATS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("layouts", LAYOUTS)
def test_gru_values_and_grads(ftdt, npdt, tol, shape, layouts):
    B, H = shape
    li, vi = leaf((B, 3 * H), npdt, layouts[0])
    lh, vh = leaf((B, 3 * H), npdt, layouts[1])
    lx, vx = leaf((B, H), npdt, layouts[0])
    ig, hg, h = vi(li), vh(lh), vx(lx)
    y = _C._gru_cell_pointwise(ig, hg, h)
    assert y.dtype == ftdt and tuple(y.shape) == (B, H)
    e = np_gru(N(ig).astype(np.float64), N(hg).astype(np.float64), N(h).astype(np.float64))
    np.testing.assert_allclose(N(y), e, rtol=tol, atol=tol)
    if B * H == 0:
        return
    w = rand(B, H, dtype=npdt)
    got = grads_of([_C._gru_cell_pointwise(vi(li), vh(lh), vx(lx))], [li, lh, lx], [w])
    want = grads_of([composed_gru(vi(li), vh(lh), vx(lx))], [li, lh, lx], [w])
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=10 * tol, atol=10 * tol)


def test_gru_grad_fn_and_gradcheck():
    ig = T(rand(3, 6), grad=True)
    hg = T(rand(3, 6), grad=True)
    h = T(rand(3, 2), grad=True)
    y = _C._gru_cell_pointwise(ig, hg, h)
    assert y.grad_fn.name() == "ThnnFusedGruCellBackward0"
    with ft.no_grad():
        assert _C._gru_cell_pointwise(ig, hg, h).grad_fn is None
    assert gradcheck(lambda a, b, c: _C._gru_cell_pointwise(a, b, c), (ig, hg, h))
    igt = T(rand(6, 3), grad=True)
    hs = T(rand(3, 4), grad=True)
    assert gradcheck(lambda a, b, c: _C._gru_cell_pointwise(a.t(), b, c[:, ::2]), (igt, hg, hs))
    # Gradients only for the inputs that require them.
    hn = T(rand(3, 2))
    _C._gru_cell_pointwise(ig, T(rand(3, 6)), hn).sum().backward()
    assert hn.grad is None and ig.grad is not None


def test_gradgradcheck():
    from ferrotorch.autograd import gradgradcheck

    g = T(rand(2, 8), grad=True)
    c = T(rand(2, 2), grad=True)
    assert gradgradcheck(lambda a, b: _C._lstm_cell_pointwise(a, b), (g, c))
    assert gradgradcheck(lambda a, b: _C._lstm_cell_pointwise(a, b)[1], (g, c))
    ig = T(rand(2, 6), grad=True)
    hg = T(rand(2, 6), grad=True)
    h = T(rand(2, 2), grad=True)
    assert gradgradcheck(lambda a, b, x: _C._gru_cell_pointwise(a, b, x), (ig, hg, h))


# --------------------------------------------------------------------------- dtypes
def test_half_dtypes():
    g, c = rand(3, 8, dtype=np.float32), rand(3, 2, dtype=np.float32)
    ig, hg, h = rand(3, 6, dtype=np.float32), rand(3, 6, dtype=np.float32), rand(3, 2,
                                                                                dtype=np.float32)
    for dt in (ft.float16, ft.bfloat16):
        gh, ch = T(g).to(dt).requires_grad_(), T(c).to(dt).requires_grad_()
        h2, c2 = _C._lstm_cell_pointwise(gh, ch)
        assert h2.dtype == dt and c2.dtype == dt
        eh, ec = np_lstm(gh.detach().float().numpy(), ch.detach().float().numpy())
        np.testing.assert_allclose(h2.detach().float().numpy(), eh, rtol=2e-2, atol=2e-2)
        np.testing.assert_allclose(c2.detach().float().numpy(), ec, rtol=2e-2, atol=2e-2)
        (h2.float().sum() + c2.float().sum()).backward()
        assert gh.grad.dtype == dt and ch.grad.dtype == dt
        y = _C._gru_cell_pointwise(T(ig).to(dt), T(hg).to(dt), T(h).to(dt))
        assert y.dtype == dt
        e = np_gru(T(ig).to(dt).float().numpy(), T(hg).to(dt).float().numpy(),
                   T(h).to(dt).float().numpy())
        np.testing.assert_allclose(y.float().numpy(), e, rtol=2e-2, atol=2e-2)


# --------------------------------------------------------------------------- errors
def test_errors():
    g, c = T(rand(2, 8)), T(rand(2, 2))
    with pytest.raises(RuntimeError, match=r"expected gates of shape \[2, 8\]"):
        _C._lstm_cell_pointwise(T(rand(2, 7)), c)
    with pytest.raises(RuntimeError, match=r"expected gates of shape"):
        _C._lstm_cell_pointwise(T(rand(3, 8)), c)
    with pytest.raises(RuntimeError, match="expected c to be 2-D"):
        _C._lstm_cell_pointwise(g, T(rand(2, 2, 1)))
    with pytest.raises(RuntimeError, match="expected gates to be 2-D"):
        _C._lstm_cell_pointwise(T(rand(8)), c)
    with pytest.raises(RuntimeError, match="same dtype"):
        _C._lstm_cell_pointwise(g, T(rand(2, 2, dtype=np.float32)))
    with pytest.raises(RuntimeError, match="lstm_cell_pointwise"):
        _C._lstm_cell_pointwise(T(np.ones((2, 8), np.int64)), T(np.ones((2, 2), np.int64)))
    ig, hg, h = T(rand(2, 6)), T(rand(2, 6)), T(rand(2, 2))
    with pytest.raises(RuntimeError, match=r"expected hidden_gates of shape \[2, 6\]"):
        _C._gru_cell_pointwise(ig, T(rand(2, 5)), h)
    with pytest.raises(RuntimeError, match=r"expected input_gates of shape \[2, 6\]"):
        _C._gru_cell_pointwise(T(rand(1, 6)), hg, h)
    with pytest.raises(RuntimeError, match="expected h to be 2-D"):
        _C._gru_cell_pointwise(ig, hg, T(rand(2)))
    with pytest.raises(RuntimeError, match="same dtype"):
        _C._gru_cell_pointwise(ig, hg, T(rand(2, 2, dtype=np.float32)))


# ---------------------------------------------------------------- layers: fused == composed
def flat(out):
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in flat(o)]
    return [out]


def run_module(m, x, fused, monkeypatch):
    monkeypatch.setattr(rnn_mod, "_FUSED", fused)
    for p in m.parameters():
        p.grad = None
    x = x.detach().requires_grad_()
    outs = flat(m(x))
    loss = sum((o * o).sum() for o in outs)
    loss.backward()
    return [N(o) for o in outs] + [x.grad.numpy()] + [p.grad.numpy() for p in m.parameters()]


@pytest.mark.parametrize("kind", ["LSTM", "LSTM-proj", "GRU", "LSTMCell", "GRUCell"])
def test_layers_fused_match_composed(kind, monkeypatch):
    ft.manual_seed(0)
    if kind == "LSTM":
        m, x = nn.LSTM(3, 5, 2, bidirectional=True).double(), T(rand(4, 2, 3))
    elif kind == "LSTM-proj":
        m, x = nn.LSTM(3, 5, proj_size=2).double(), T(rand(4, 2, 3))
    elif kind == "GRU":
        m, x = nn.GRU(3, 5, 2, bias=False).double(), T(rand(4, 2, 3))
    elif kind == "LSTMCell":
        m, x = nn.LSTMCell(3, 5).double(), T(rand(2, 3))
    else:
        m, x = nn.GRUCell(3, 5).double(), T(rand(2, 3))
    fused = run_module(m, x, True, monkeypatch)
    composed = run_module(m, x, False, monkeypatch)
    assert len(fused) == len(composed)
    for a, b in zip(fused, composed):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_layer_uses_fused_node():
    m = nn.LSTMCell(3, 4)
    h, c = m(T(rand(2, 3, dtype=np.float32)))
    assert h.grad_fn.name() == "ThnnFusedLstmCellBackward0"
    g = nn.GRUCell(3, 4)
    assert g(T(rand(2, 3, dtype=np.float32))).grad_fn.name() == "ThnnFusedGruCellBackward0"
