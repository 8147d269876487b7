"""Recurrent layers (RNN/LSTM/GRU and their cells) vs NumPy references with the same weights."""

import math
import warnings

import numpy as np
import pytest

import ferrotorch as ft
from ferrotorch import nn
from ferrotorch.autograd import gradcheck


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def np_params(m):
    return {k: v.detach().numpy().astype(np.float64) for k, v in m.named_parameters()}


# ---------------------------------------------------------------------------- references
def ref_cell(mode, x, h, c, w_ih, w_hh, b_ih, b_hh, w_hr=None):
    xw = x @ w_ih.T + (b_ih if b_ih is not None else 0)
    hw = h @ w_hh.T + (b_hh if b_hh is not None else 0)
    if mode == "RNN_TANH":
        return np.tanh(xw + hw), None
    if mode == "RNN_RELU":
        return np.maximum(xw + hw, 0), None
    if mode == "GRU":
        H = h.shape[-1]
        r = sigmoid(xw[..., :H] + hw[..., :H])
        z = sigmoid(xw[..., H:2 * H] + hw[..., H:2 * H])
        n = np.tanh(xw[..., 2 * H:] + r * hw[..., 2 * H:])
        return (1 - z) * n + z * h, None
    H = c.shape[-1]
    g = xw + hw
    i, f, gg, o = (g[..., k * H:(k + 1) * H] for k in range(4))
    c2 = sigmoid(f) * c + sigmoid(i) * np.tanh(gg)
    h2 = sigmoid(o) * np.tanh(c2)
    if w_hr is not None:
        h2 = h2 @ w_hr.T
    return h2, c2


def ref_rnn(m, x, hx=None):
    """NumPy forward of an RNN/LSTM/GRU module for a batched or unbatched input."""
    p = np_params(m)
    mode = m.mode
    D = 2 if m.bidirectional else 1
    unbatched = x.ndim == 2
    if unbatched:
        x = x[:, None] if not m.batch_first else x[None]
    if m.batch_first:
        x = x.transpose(1, 0, 2)
    T, B, _ = x.shape
    real_h = m.proj_size or m.hidden_size
    if hx is None:
        h0 = np.zeros((m.num_layers * D, B, real_h))
        c0 = np.zeros((m.num_layers * D, B, m.hidden_size))
    elif mode == "LSTM":
        h0, c0 = hx
        if unbatched:
            h0, c0 = h0[:, None], c0[:, None]
    else:
        h0, c0 = hx, None
        if unbatched:
            h0 = h0[:, None]
    hn, cn = [], []
    for layer in range(m.num_layers):
        outs = []
        for d in range(D):
            sfx = f"l{layer}" + ("_reverse" if d else "")
            idx = layer * D + d
            h = h0[idx]
            c = c0[idx] if mode == "LSTM" else None
            ys = [None] * T
            for t in (range(T - 1, -1, -1) if d else range(T)):
                h, c = ref_cell(mode, x[t], h, c, p[f"weight_ih_{sfx}"], p[f"weight_hh_{sfx}"],
                                p.get(f"bias_ih_{sfx}"), p.get(f"bias_hh_{sfx}"),
                                p.get(f"weight_hr_{sfx}"))
                ys[t] = h
            outs.append(np.stack(ys) if T else np.zeros((0, B, h.shape[-1])))
            hn.append(h)
            cn.append(c)
        x = np.concatenate(outs, 2)
    out = x.transpose(1, 0, 2) if m.batch_first else x
    hn = np.stack(hn)
    cn = np.stack(cn) if mode == "LSTM" else None
    if unbatched:
        out = out[0] if m.batch_first else out[:, 0]
        hn = hn[:, 0]
        cn = cn[:, 0] if cn is not None else None
    return out, hn, cn


MODULES = {"RNN": nn.RNN, "LSTM": nn.LSTM, "GRU": nn.GRU}


def run(m, x, hx=None):
    out, h = m(x, hx) if hx is not None else m(x)
    if isinstance(h, tuple):
        return out.detach().numpy(), h[0].detach().numpy(), h[1].detach().numpy()
    return out.detach().numpy(), h.detach().numpy(), None


# ---------------------------------------------------------------------------- layers
@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("num_layers,bidirectional,batch_first,bias", [
    (1, False, False, True), (2, False, True, True), (1, True, False, True),
    (2, True, True, False), (3, True, False, True),
])
def test_layer_matches_numpy(kind, num_layers, bidirectional, batch_first, bias):
    ft.manual_seed(0)
    rng = np.random.default_rng(num_layers + 2 * bidirectional)
    m = MODULES[kind](4, 5, num_layers, bias=bias, batch_first=batch_first,
                      bidirectional=bidirectional)
    T, B = int(rng.integers(1, 6)), int(rng.integers(1, 4))
    shape = (B, T, 4) if batch_first else (T, B, 4)
    x = rng.standard_normal(shape).astype(np.float32)
    got = run(m, ft.from_numpy(x))
    exp = ref_rnn(m, x.astype(np.float64))
    for g, e in zip(got, exp):
        if e is not None:
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_layer_with_initial_state_float64(kind):
    ft.manual_seed(1)
    rng = np.random.default_rng(1)
    m = MODULES[kind](3, 4, 2, bidirectional=True).double()
    x = rng.standard_normal((6, 2, 3))
    h0 = rng.standard_normal((4, 2, 4))
    if kind == "LSTM":
        c0 = rng.standard_normal((4, 2, 4))
        got = run(m, ft.from_numpy(x), (ft.from_numpy(h0), ft.from_numpy(c0)))
        exp = ref_rnn(m, x, (h0, c0))
    else:
        got = run(m, ft.from_numpy(x), ft.from_numpy(h0))
        exp = ref_rnn(m, x, h0)
    assert got[0].dtype == np.float64
    for g, e in zip(got, exp):
        if e is not None:
            np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_unbatched_input(kind, batch_first):
    ft.manual_seed(2)
    rng = np.random.default_rng(2)
    m = MODULES[kind](3, 4, 2, batch_first=batch_first, bidirectional=True).double()
    x = rng.standard_normal((5, 3))
    got = run(m, ft.from_numpy(x))
    exp = ref_rnn(m, x)
    assert got[0].shape == (5, 8) and got[1].shape == (4, 4)
    for g, e in zip(got, exp):
        if e is not None:
            np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)
    h0 = rng.standard_normal((4, 4))
    if kind == "LSTM":
        c0 = rng.standard_normal((4, 4))
        got = run(m, ft.from_numpy(x), (ft.from_numpy(h0), ft.from_numpy(c0)))
        exp = ref_rnn(m, x, (h0, c0))
    else:
        got = run(m, ft.from_numpy(x), ft.from_numpy(h0))
        exp = ref_rnn(m, x, h0)
    for g, e in zip(got, exp):
        if e is not None:
            np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)


def test_rnn_relu_and_lstm_proj():
    ft.manual_seed(3)
    rng = np.random.default_rng(3)
    m = nn.RNN(3, 4, 2, nonlinearity="relu").double()
    assert m.mode == "RNN_RELU"
    x = rng.standard_normal((4, 2, 3))
    for g, e in zip(run(m, ft.from_numpy(x)), ref_rnn(m, x)):
        if e is not None:
            np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)
    m = nn.RNN(3, 4, 1, "relu")  # positional nonlinearity as in PyTorch
    assert m.nonlinearity == "relu"
    m = nn.LSTM(3, 6, 2, proj_size=2, bidirectional=True).double()
    shapes = {k: tuple(v.shape) for k, v in m.named_parameters()}
    assert shapes["weight_ih_l0"] == (24, 3)
    assert shapes["weight_hh_l0"] == (24, 2)
    assert shapes["weight_hr_l0"] == (2, 6)
    assert shapes["weight_ih_l1_reverse"] == (24, 4)
    out, (h, c) = m(ft.from_numpy(x))
    assert tuple(out.shape) == (4, 2, 4) and tuple(h.shape) == (4, 2, 2)
    assert tuple(c.shape) == (4, 2, 6)
    exp = ref_rnn(m, x)
    np.testing.assert_allclose(out.detach().numpy(), exp[0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(h.detach().numpy(), exp[1], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(c.detach().numpy(), exp[2], rtol=1e-10, atol=1e-12)


def test_empty_sequence_and_empty_batch():
    m = nn.GRU(3, 4)
    out, h = m(ft.zeros(0, 2, 3))
    assert tuple(out.shape) == (0, 2, 4) and tuple(h.shape) == (1, 2, 4)
    assert not h.numpy().any()
    out, h = m(ft.zeros(5, 0, 3))
    assert tuple(out.shape) == (5, 0, 4) and tuple(h.shape) == (1, 0, 4)


def test_dropout_between_layers_only_in_training():
    ft.manual_seed(4)
    m = nn.LSTM(3, 8, 2, dropout=0.5)
    x = ft.randn(4, 2, 3)
    m.eval()
    a, _ = m(x)
    b, _ = m(x)
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    np.testing.assert_allclose(a.detach().numpy(), ref_rnn(m, x.numpy().astype(np.float64))[0],
                               rtol=1e-4, atol=1e-5)
    m.train()
    c, _ = m(x)
    assert not np.allclose(c.detach().numpy(), a.detach().numpy())
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.GRU(3, 4, 1, dropout=0.2)


# ---------------------------------------------------------------------------- cells
@pytest.mark.parametrize("kind", ["RNNCell", "LSTMCell", "GRUCell", "RNNCell-relu"])
@pytest.mark.parametrize("bias", [True, False])
def test_cells_match_numpy(kind, bias):
    ft.manual_seed(5)
    rng = np.random.default_rng(5)
    if kind == "RNNCell-relu":
        m, mode = nn.RNNCell(4, 3, bias=bias, nonlinearity="relu"), "RNN_RELU"
    else:
        m = getattr(nn, kind)(4, 3, bias=bias)
        mode = {"RNNCell": "RNN_TANH", "LSTMCell": "LSTM", "GRUCell": "GRU"}[kind]
    m = m.double()
    p = np_params(m)
    x = rng.standard_normal((2, 4))
    h = rng.standard_normal((2, 3))
    c = rng.standard_normal((2, 3))
    args = (p["weight_ih"], p["weight_hh"], p.get("bias_ih"), p.get("bias_hh"))
    eh, ec = ref_cell(mode, x, h, c, *args)
    if mode == "LSTM":
        gh, gc = m(ft.from_numpy(x), (ft.from_numpy(h), ft.from_numpy(c)))
        np.testing.assert_allclose(gc.detach().numpy(), ec, rtol=1e-10)
        # Unbatched and default state.
        uh, uc = m(ft.from_numpy(x[0]))
        zh, zc = ref_cell(mode, x[:1], np.zeros((1, 3)), np.zeros((1, 3)), *args)
        np.testing.assert_allclose(uh.detach().numpy(), zh[0], rtol=1e-10)
        np.testing.assert_allclose(uc.detach().numpy(), zc[0], rtol=1e-10)
    else:
        gh = m(ft.from_numpy(x), ft.from_numpy(h))
        uh = m(ft.from_numpy(x[0]), ft.from_numpy(h[0]))
        assert tuple(uh.shape) == (3,)
        np.testing.assert_allclose(uh.detach().numpy(), eh[0], rtol=1e-10)
        zh, _ = ref_cell(mode, x, np.zeros((2, 3)), None, *args)
        np.testing.assert_allclose(m(ft.from_numpy(x)).detach().numpy(), zh, rtol=1e-10)
    np.testing.assert_allclose(gh.detach().numpy(), eh, rtol=1e-10)


def test_cell_params_and_repr():
    m = nn.LSTMCell(10, 20)
    assert [(k, tuple(v.shape)) for k, v in m.named_parameters()] == [
        ("weight_ih", (80, 10)), ("weight_hh", (80, 20)), ("bias_ih", (80,)),
        ("bias_hh", (80,))]
    assert repr(m) == "LSTMCell(10, 20)"
    assert repr(nn.GRUCell(3, 4, bias=False)) == "GRUCell(3, 4, bias=False)"
    assert repr(nn.RNNCell(3, 4, nonlinearity="relu")) == "RNNCell(3, 4, nonlinearity=relu)"
    assert list(nn.GRUCell(3, 4, bias=False).state_dict()) == ["weight_ih", "weight_hh"]


# ---------------------------------------------------------------------------- gradcheck
@pytest.mark.parametrize("kind", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cell_gradcheck(kind):
    ft.manual_seed(6)
    m = getattr(nn, kind)(3, 2).double()
    x = ft.randn(2, 3, dtype=ft.float64, requires_grad=True)
    h = ft.randn(2, 2, dtype=ft.float64, requires_grad=True)
    params = list(m.parameters())
    if kind == "LSTMCell":
        c = ft.randn(2, 2, dtype=ft.float64, requires_grad=True)

        def f(x, h, c, *ps):
            return m(x, (h, c))

        assert gradcheck(f, (x, h, c, *params))
    else:
        def f(x, h, *ps):
            return m(x, h)

        assert gradcheck(f, (x, h, *params))


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_layer_gradcheck(kind):
    ft.manual_seed(7)
    m = MODULES[kind](2, 2, 2, bidirectional=True).double()
    x = ft.randn(3, 2, 2, dtype=ft.float64, requires_grad=True)
    params = list(m.parameters())

    def f(x, *ps):
        out, h = m(x)
        if isinstance(h, tuple):
            return out, h[0], h[1]
        return out, h

    assert gradcheck(f, (x, *params))


def test_lstm_grad_wrt_initial_state_and_proj():
    ft.manual_seed(8)
    m = nn.LSTM(2, 3, 1, proj_size=2, batch_first=True).double()
    x = ft.randn(2, 3, 2, dtype=ft.float64, requires_grad=True)
    h0 = ft.randn(1, 2, 2, dtype=ft.float64, requires_grad=True)
    c0 = ft.randn(1, 2, 3, dtype=ft.float64, requires_grad=True)

    def f(x, h0, c0, *ps):
        out, (h, c) = m(x, (h0, c0))
        return out, h, c

    assert gradcheck(f, (x, h0, c0, *m.parameters()))


# ---------------------------------------------------------------------------- module API
def test_state_dict_keys_like_pytorch():
    m = nn.LSTM(3, 4, 2, bidirectional=True, proj_size=2)
    assert list(m.state_dict()) == [
        "weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_hr_l0",
        "weight_ih_l0_reverse", "weight_hh_l0_reverse", "bias_ih_l0_reverse",
        "bias_hh_l0_reverse", "weight_hr_l0_reverse",
        "weight_ih_l1", "weight_hh_l1", "bias_ih_l1", "bias_hh_l1", "weight_hr_l1",
        "weight_ih_l1_reverse", "weight_hh_l1_reverse", "bias_ih_l1_reverse",
        "bias_hh_l1_reverse", "weight_hr_l1_reverse",
    ]
    assert list(nn.GRU(3, 4, bias=False).state_dict()) == ["weight_ih_l0", "weight_hh_l0"]
    g = nn.GRU(3, 4, 2)
    assert [tuple(w.shape) for w in g.all_weights[1]] == [(12, 4), (12, 4), (12,), (12,)]


def test_init_bounds_and_repr():
    ft.manual_seed(9)
    m = nn.GRU(5, 16, 2)
    bound = 1 / math.sqrt(16)
    for p in m.parameters():
        a = p.detach().numpy()
        assert a.min() >= -bound and a.max() <= bound
        assert a.std() > bound / 4
    assert repr(m) == "GRU(5, 16, num_layers=2)"
    assert repr(nn.LSTM(3, 4, batch_first=True, bidirectional=True, bias=False)) == \
        "LSTM(3, 4, bias=False, batch_first=True, bidirectional=True)"
    assert repr(nn.LSTM(3, 4, proj_size=2)) == "LSTM(3, 4, proj_size=2)"
    # as PyTorch: RNNBase's repr leaves the nonlinearity out (RNNCell's shows it)
    assert repr(nn.RNN(3, 4, nonlinearity="relu", dropout=0.5, num_layers=2)) == \
        "RNN(3, 4, num_layers=2, dropout=0.5)"


def test_load_state_dict_round_trip():
    ft.manual_seed(10)
    a = nn.LSTM(3, 4, 2)
    b = nn.LSTM(3, 4, 2)
    b.load_state_dict(a.state_dict())
    x = ft.randn(5, 2, 3)
    np.testing.assert_array_equal(a(x)[0].detach().numpy(), b(x)[0].detach().numpy())


def test_training_reduces_loss():
    ft.manual_seed(11)
    m = nn.GRU(1, 8, batch_first=True)
    head = nn.Linear(8, 1)
    opt = ft.optim.Adam(list(m.parameters()) + list(head.parameters()), lr=0.05)
    # Predict the running sum of the inputs.
    x = ft.randn(16, 6, 1)
    y = x.cumsum(1)
    losses = []
    for _ in range(60):
        opt.zero_grad()
        out, _ = m(x)
        loss = ((head(out) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.2 * losses[0]


# ---------------------------------------------------------------------------- errors
def test_errors():
    m = nn.LSTM(4, 3)
    with pytest.raises(RuntimeError, match=r"input.size\(-1\) must be equal to input_size. "
                                           r"Expected 4, got 5"):
        m(ft.randn(2, 3, 5))
    with pytest.raises(ValueError, match="LSTM: Expected input to be 2D or 3D, got 4D"):
        m(ft.randn(2, 3, 4, 1))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size \(1, 3, 3\), got "
                                           r"\[1, 2, 3\]"):
        m(ft.randn(2, 3, 4), (ft.zeros(1, 2, 3), ft.zeros(1, 3, 3)))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[1\] size"):
        m(ft.randn(2, 3, 4), (ft.zeros(1, 3, 3), ft.zeros(2, 3, 3)))
    with pytest.raises(RuntimeError, match="For batched 3-D input, hx and cx should also be "
                                           "3-D"):
        m(ft.randn(2, 3, 4), (ft.zeros(3, 3), ft.zeros(3, 3)))
    g = nn.GRU(4, 3)
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 3, 3\), got \[1, 3, 2\]"):
        g(ft.randn(2, 3, 4), ft.zeros(1, 3, 2))
    with pytest.raises(RuntimeError, match="For unbatched 2-D input, hx should also be 2-D"):
        g(ft.randn(2, 4), ft.zeros(1, 1, 3))
    with pytest.raises(ValueError, match="input must have the type"):
        g(ft.randn(2, 3, 4, dtype=ft.float64))
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="hidden_size must be greater than zero"):
        nn.GRU(3, 0)
    with pytest.raises(ValueError, match="num_layers must be greater than zero"):
        nn.GRU(3, 2, 0)
    with pytest.raises(TypeError, match="hidden_size should be of type int"):
        nn.GRU(3, 2.0)
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        nn.GRU(3, 2, 2, dropout=1.5)
    with pytest.raises(ValueError, match="Unknown nonlinearity"):
        nn.RNN(3, 2, nonlinearity="sigmoid")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM"):
            nn.GRU(3, 4, proj_size=2)
    c = nn.GRUCell(4, 3)
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 5 "
                                           "expected 4"):
        c(ft.randn(2, 5))
    with pytest.raises(RuntimeError, match="hidden has inconsistent hidden_size: got 2, "
                                           "expected 3"):
        c(ft.randn(2, 4), ft.randn(2, 2))
    with pytest.raises(RuntimeError, match="Input batch size 2 doesn't match hidden batch "
                                           "size 3"):
        c(ft.randn(2, 4), ft.randn(3, 3))
    with pytest.raises(ValueError, match="GRUCell: Expected input to be 1D or 2D, got 3D"):
        c(ft.randn(1, 2, 4))
    with pytest.raises(RuntimeError, match=r"Input batch size 2 doesn't match hidden\[1\]"):
        nn.LSTMCell(4, 3)(ft.randn(2, 4), (ft.randn(2, 3), ft.randn(1, 3)))


def test_compare_with_torch():
    torch = pytest.importorskip("torch")
    ft.manual_seed(12)
    m = nn.LSTM(3, 4, 2, bidirectional=True, batch_first=True)
    t = torch.nn.LSTM(3, 4, 2, bidirectional=True, batch_first=True)
    t.load_state_dict({k: torch.from_numpy(v.numpy()) for k, v in m.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((2, 5, 3)).astype(np.float32)
    np.testing.assert_allclose(m(ft.from_numpy(x))[0].detach().numpy(),
                               t(torch.from_numpy(x))[0].detach().numpy(), rtol=1e-4,
                               atol=1e-5)


def test_big_layers_initialise():
    # >= 16384-element weights (the in-place samplers use the kernel thread pool there).
    m = nn.LSTM(32, 100, batch_first=True)
    assert tuple(m.weight_ih_l0.shape) == (400, 32) and m.weight_hh_l0.requires_grad
    assert np.abs(m.weight_hh_l0.detach().numpy()).max() <= 0.1
    out, _ = m(ft.randn(2, 3, 32))
    assert tuple(out.shape) == (2, 3, 100)


# ---------------------------------------------------------------------------- packed
rnn_utils = nn.utils.rnn


def test_pack_pad_utilities():
    rng = np.random.default_rng(20)
    seqs = [rng.standard_normal((n, 2)) for n in (4, 2, 3)]
    padded = rnn_utils.pad_sequence([ft.from_numpy(s) for s in seqs])
    assert tuple(padded.shape) == (4, 3, 2)
    exp = np.zeros((4, 3, 2))
    for i, s in enumerate(seqs):
        exp[:len(s), i] = s
    np.testing.assert_array_equal(padded.numpy(), exp)
    bf = rnn_utils.pad_sequence([ft.from_numpy(s) for s in seqs], batch_first=True,
                                padding_value=-1.0, padding_side="left")
    assert bf.numpy()[1, 0, 0] == -1.0
    np.testing.assert_array_equal(bf.numpy()[1, 2:], seqs[1])

    packed = rnn_utils.pack_sequence([ft.from_numpy(s) for s in seqs], enforce_sorted=False)
    assert packed.batch_sizes.tolist() == [3, 3, 2, 1]
    assert packed.sorted_indices.tolist() == [0, 2, 1]
    assert packed.unsorted_indices.tolist() == [0, 2, 1]
    order = [0, 2, 1]
    exp_data = np.concatenate([np.stack([seqs[i][t] for i in order if len(seqs[i]) > t])
                               for t in range(4)])
    np.testing.assert_array_equal(packed.data.numpy(), exp_data)
    out, lengths = rnn_utils.pad_packed_sequence(packed, batch_first=True, total_length=5)
    assert lengths.tolist() == [4, 2, 3] and lengths.dtype == ft.int64
    assert tuple(out.shape) == (3, 5, 2)
    np.testing.assert_array_equal(out.numpy().transpose(1, 0, 2)[:4], exp)
    back = rnn_utils.unpack_sequence(packed)
    for a, b in zip(back, seqs):
        np.testing.assert_array_equal(a.numpy(), b)
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        rnn_utils.pack_padded_sequence(padded, [4, 2, 3])
    with pytest.raises(ValueError, match="Expected total_length to be at least"):
        rnn_utils.pad_packed_sequence(packed, total_length=3)
    p2 = rnn_utils.pack_padded_sequence(padded, ft.tensor([4, 2, 3]), enforce_sorted=False)
    np.testing.assert_array_equal(p2.data.numpy(), packed.data.numpy())


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_packed_input_matches_per_sequence_runs(kind, bidirectional):
    ft.manual_seed(21)
    rng = np.random.default_rng(21)
    m = MODULES[kind](3, 4, 2, bidirectional=bidirectional, batch_first=True).double()
    lengths = [3, 5, 1, 4]
    seqs = [rng.standard_normal((n, 3)) for n in lengths]
    padded = rnn_utils.pad_sequence([ft.from_numpy(s) for s in seqs], batch_first=True)
    packed = rnn_utils.pack_padded_sequence(padded, lengths, batch_first=True,
                                            enforce_sorted=False)
    D = 2 if bidirectional else 1
    h0 = rng.standard_normal((2 * D, 4, 4))
    c0 = rng.standard_normal((2 * D, 4, 4))
    hx = (ft.from_numpy(h0), ft.from_numpy(c0)) if kind == "LSTM" else ft.from_numpy(h0)
    out, h = m(packed, hx)
    assert isinstance(out, rnn_utils.PackedSequence)
    out_pad, out_len = rnn_utils.pad_packed_sequence(out, batch_first=True)
    assert out_len.tolist() == lengths
    out_pad = out_pad.detach().numpy()
    for i, s in enumerate(seqs):
        hi = (h0[:, i], c0[:, i]) if kind == "LSTM" else h0[:, i]
        eo, eh, ec = ref_rnn(m, s, hi)  # unbatched reference on the sequence alone
        np.testing.assert_allclose(out_pad[i, :len(s)], eo, rtol=1e-10, atol=1e-12)
        assert not out_pad[i, len(s):].any()
        hn = h[0] if kind == "LSTM" else h
        np.testing.assert_allclose(hn.detach().numpy()[:, i], eh, rtol=1e-10, atol=1e-12)
        if kind == "LSTM":
            np.testing.assert_allclose(h[1].detach().numpy()[:, i], ec, rtol=1e-10,
                                       atol=1e-12)


def test_packed_lstm_gradcheck():
    ft.manual_seed(22)
    m = nn.LSTM(2, 2, bidirectional=True).double()
    x = ft.randn(3, 2, 2, dtype=ft.float64, requires_grad=True)

    def f(x, *ps):
        packed = rnn_utils.pack_padded_sequence(x, [3, 2])
        out, (h, c) = m(packed)
        return out.data, h, c

    assert gradcheck(f, (x, *m.parameters()))


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_non_contiguous_input_and_state(kind):
    ft.manual_seed(23)
    rng = np.random.default_rng(23)
    m = MODULES[kind](3, 4, 1, bidirectional=True).double()
    xb = rng.standard_normal((2, 5, 6))
    x = ft.from_numpy(xb).transpose(0, 1)[:, :, ::2]  # (5, 2, 3), strided
    assert not x.is_contiguous()
    h0b = rng.standard_normal((2, 2, 4))
    h0 = ft.from_numpy(h0b).transpose(0, 1)  # (2, 2, 4) non-contiguous
    xe = xb.transpose(1, 0, 2)[:, :, ::2]
    h0e = h0b.transpose(1, 0, 2)
    if kind == "LSTM":
        got = run(m, x, (h0, h0))
        exp = ref_rnn(m, xe, (h0e, h0e))
    else:
        got = run(m, x, h0)
        exp = ref_rnn(m, xe, h0e)
    for g, e in zip(got, exp):
        if e is not None:
            np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)


def test_gradgradcheck_cell_and_layer():
    from ferrotorch.autograd import gradgradcheck

    ft.manual_seed(24)
    cell = nn.GRUCell(2, 2).double()
    x = ft.randn(2, 2, dtype=ft.float64, requires_grad=True)
    h = ft.randn(2, 2, dtype=ft.float64, requires_grad=True)
    assert gradgradcheck(lambda x, h: cell(x, h), (x, h))
    lstm = nn.LSTM(2, 2).double()
    xs = ft.randn(3, 1, 2, dtype=ft.float64, requires_grad=True)
    assert gradgradcheck(lambda xs: lstm(xs)[0], (xs,))
