"""Attention and transformer layers vs NumPy references with the same weights."""

import math

import numpy as np
import pytest

import ferrotorch as ft
import ferrotorch.nn.functional as F
from ferrotorch import nn
from ferrotorch.autograd import gradcheck

NEG_INF = -np.inf


def np_softmax(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp(x - m)
    return e / e.sum(axis=axis, keepdims=True)


def ref_sdpa(q, k, v, mask=None, is_causal=False, scale=None):
    L, S = q.shape[-2], k.shape[-2]
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if is_causal:
        s = np.where(np.tril(np.ones((L, S), bool)), s, NEG_INF)
    if mask is not None:
        s = np.where(mask, s, NEG_INF) if mask.dtype == bool else s + mask
    return np_softmax(s) @ v


def P(m):
    return {k: v.detach().numpy().astype(np.float64) for k, v in m.named_parameters()}


def T(a):
    return ft.from_numpy(np.ascontiguousarray(a))


# ---------------------------------------------------------------------------- SDPA
@pytest.mark.parametrize("shape", [((4, 3), (5, 3), (5, 2)), ((2, 4, 3), (2, 6, 3), (2, 6, 5)),
                                   ((2, 3, 1, 4), (2, 3, 7, 4), (2, 3, 7, 4)),
                                   ((0, 2, 3), (0, 4, 3), (0, 4, 3))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sdpa_matches_numpy(shape, dtype):
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal(s).astype(dtype) for s in shape)
    got = F.scaled_dot_product_attention(T(q), T(k), T(v)).numpy()
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, ref_sdpa(q, k, v), rtol=tol * 10, atol=tol)
    assert got.dtype == dtype


def test_sdpa_masks_causal_scale():
    rng = np.random.default_rng(1)
    q = rng.standard_normal((2, 3, 5, 4))
    k = rng.standard_normal((2, 3, 6, 4))
    v = rng.standard_normal((2, 3, 6, 4))
    bmask = rng.random((5, 6)) > 0.3
    bmask[:, 0] = True  # no fully masked rows
    fmask = rng.standard_normal((2, 1, 5, 6))
    np.testing.assert_allclose(
        F.scaled_dot_product_attention(T(q), T(k), T(v), attn_mask=T(bmask)).numpy(),
        ref_sdpa(q, k, v, bmask), rtol=1e-10)
    np.testing.assert_allclose(
        F.scaled_dot_product_attention(T(q), T(k), T(v), attn_mask=T(fmask)).numpy(),
        ref_sdpa(q, k, v, fmask), rtol=1e-10)
    np.testing.assert_allclose(
        F.scaled_dot_product_attention(T(q), T(k), T(v), is_causal=True).numpy(),
        ref_sdpa(q, k, v, is_causal=True), rtol=1e-10)
    np.testing.assert_allclose(
        F.scaled_dot_product_attention(T(q), T(k), T(v), scale=0.3).numpy(),
        ref_sdpa(q, k, v, scale=0.3), rtol=1e-10)
    # Non-contiguous inputs.
    qt = rng.standard_normal((2, 3, 4, 5)).transpose(0, 1, 3, 2)
    got = F.scaled_dot_product_attention(T(np.ascontiguousarray(qt.transpose(0, 1, 3, 2)))
                                         .transpose(-1, -2), T(k), T(v)).numpy()
    np.testing.assert_allclose(got, ref_sdpa(qt, k, v), rtol=1e-10)


def test_sdpa_gqa_and_dropout():
    rng = np.random.default_rng(2)
    q = rng.standard_normal((1, 4, 3, 2))
    k = rng.standard_normal((1, 2, 5, 2))
    v = rng.standard_normal((1, 2, 5, 2))
    got = F.scaled_dot_product_attention(T(q), T(k), T(v), enable_gqa=True).numpy()
    exp = ref_sdpa(q, np.repeat(k, 2, axis=1), np.repeat(v, 2, axis=1))
    np.testing.assert_allclose(got, exp, rtol=1e-10)
    ft.manual_seed(0)
    x = ft.ones(2, 8, 4)
    y = F.scaled_dot_product_attention(x, x, x, dropout_p=0.5).numpy()
    # Dropped probabilities are zero, kept ones are scaled by 2: outputs are 0..2 multiples.
    assert y.min() >= 0 and y.max() > 1.0 and not np.allclose(y, 1.0)


def test_sdpa_gradcheck():
    ft.manual_seed(1)
    q = ft.randn(2, 3, 2, dtype=ft.float64, requires_grad=True)
    k = ft.randn(2, 4, 2, dtype=ft.float64, requires_grad=True)
    v = ft.randn(2, 4, 3, dtype=ft.float64, requires_grad=True)
    m = ft.randn(3, 4, dtype=ft.float64, requires_grad=True)
    assert gradcheck(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
                     (q, k, v, m))
    assert gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                                    scale=0.7), (q, k, v))


def test_sdpa_errors():
    x = ft.randn(2, 3, 4)
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when "
                                           "is_causal=True"):
        F.scaled_dot_product_attention(x, x, x, attn_mask=ft.ones(3, 3, dtype=ft.bool),
                                       is_causal=True)
    with pytest.raises(RuntimeError, match="Expected query, key, and value to have the same "
                                           "dtype"):
        F.scaled_dot_product_attention(x, x.double(), x)


# ---------------------------------------------------------------------------- MHA reference
def ref_mha(m, query, key, value, key_padding_mask=None, attn_mask=None,
            average_attn_weights=True):
    """NumPy MHA on (N, L, E) batched inputs (converted from the module's layout by caller)."""
    p = P(m)
    E, H = m.embed_dim, m.num_heads
    hd = E // H
    if m._qkv_same_embed_dim:
        wq, wk, wv = np.split(p["in_proj_weight"], 3)
    else:
        wq, wk, wv = p["q_proj_weight"], p["k_proj_weight"], p["v_proj_weight"]
    bq = bk = bv = 0
    if "in_proj_bias" in p:
        bq, bk, bv = np.split(p["in_proj_bias"], 3)
    q = query @ wq.T + bq
    k = key @ wk.T + bk
    v = value @ wv.T + bv
    N, L, _ = q.shape
    S = k.shape[1]
    bias = np.zeros((N, H, L, S))
    if attn_mask is not None:
        am = np.where(attn_mask, NEG_INF, 0.0) if attn_mask.dtype == bool else attn_mask
        bias = bias + (am.reshape(N, H, L, S) if am.ndim == 3 else am)
    if key_padding_mask is not None:
        kp = np.where(key_padding_mask, NEG_INF, 0.0) if key_padding_mask.dtype == bool \
            else key_padding_mask
        bias = bias + kp[:, None, None, :]
    if m.bias_k is not None:
        k = np.concatenate([k, np.broadcast_to(p["bias_k"][0], (N, 1, E))], 1)
        v = np.concatenate([v, np.broadcast_to(p["bias_v"][0], (N, 1, E))], 1)
        bias = np.concatenate([bias, np.zeros((N, H, L, 1))], 3)
    if m.add_zero_attn:
        k = np.concatenate([k, np.zeros((N, 1, E))], 1)
        v = np.concatenate([v, np.zeros((N, 1, E))], 1)
        bias = np.concatenate([bias, np.zeros((N, H, L, 1))], 3)
    qh = q.reshape(N, L, H, hd).transpose(0, 2, 1, 3)
    kh = k.reshape(N, -1, H, hd).transpose(0, 2, 1, 3)
    vh = v.reshape(N, -1, H, hd).transpose(0, 2, 1, 3)
    w = np_softmax(qh @ kh.transpose(0, 1, 3, 2) / math.sqrt(hd) + bias)
    o = (w @ vh).transpose(0, 2, 1, 3).reshape(N, L, E)
    o = o @ p["out_proj.weight"].T + p.get("out_proj.bias", 0)
    return o, (w.mean(1) if average_attn_weights else w)


def run_mha(m, q, k, v, **kw):
    """Feed NumPy (N, L, E) arrays in the module's layout; return (N, L, E) output."""
    conv = (lambda a: a) if m.batch_first else (lambda a: a.transpose(1, 0, 2))
    out, w = m(T(conv(q)), T(conv(k)), T(conv(v)), **kw)
    out = out.detach().numpy()
    return conv(out), (None if w is None else w.detach().numpy())


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("heads", [1, 2, 4])
def test_mha_self_attention_matches_numpy(batch_first, need_weights, heads):
    ft.manual_seed(heads)
    rng = np.random.default_rng(heads)
    m = nn.MultiheadAttention(8, heads, batch_first=batch_first).double()
    with ft.no_grad():  # non-zero biases so they are checked too
        m.in_proj_bias.copy_(T(rng.standard_normal(24)))
        m.out_proj.bias.copy_(T(rng.standard_normal(8)))
    x = rng.standard_normal((3, 5, 8))
    out, w = run_mha(m, x, x, x, need_weights=need_weights)
    eo, ew = ref_mha(m, x, x, x)
    np.testing.assert_allclose(out, eo, rtol=1e-9, atol=1e-12)
    if need_weights:
        np.testing.assert_allclose(w, ew, rtol=1e-9, atol=1e-12)
    else:
        assert w is None


@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_masks_cross_attention(need_weights):
    ft.manual_seed(5)
    rng = np.random.default_rng(5)
    m = nn.MultiheadAttention(6, 3, batch_first=True).double()
    q = rng.standard_normal((2, 4, 6))
    kv = rng.standard_normal((2, 7, 6))
    kpm = np.zeros((2, 7), bool)
    kpm[0, 5:] = True
    kpm[1, 3:] = True
    am = rng.random((4, 7)) > 0.7
    am[:, 0] = False
    fm = rng.standard_normal((2 * 3, 4, 7))
    for kw, ref_kw in [
        ({"key_padding_mask": T(kpm)}, {"key_padding_mask": kpm}),
        ({"attn_mask": T(am)}, {"attn_mask": am}),
        ({"attn_mask": T(fm), "key_padding_mask": T(kpm)},
         {"attn_mask": fm, "key_padding_mask": kpm}),
        ({"attn_mask": T(am), "average_attn_weights": False},
         {"attn_mask": am, "average_attn_weights": False}),
    ]:
        out, w = run_mha(m, q, kv, kv, need_weights=need_weights, **kw)
        eo, ew = ref_mha(m, q, kv, kv, **ref_kw)
        np.testing.assert_allclose(out, eo, rtol=1e-9, atol=1e-12)
        if need_weights:
            np.testing.assert_allclose(w, ew, rtol=1e-9, atol=1e-12)


def test_mha_kdim_vdim_bias_kv_zero_attn_no_bias():
    ft.manual_seed(6)
    rng = np.random.default_rng(6)
    m = nn.MultiheadAttention(4, 2, kdim=3, vdim=5, add_bias_kv=True, add_zero_attn=True,
                              bias=False).double()
    assert list(m.state_dict()) == ["q_proj_weight", "k_proj_weight", "v_proj_weight",
                                    "bias_k", "bias_v", "out_proj.weight"]
    q = rng.standard_normal((2, 3, 4))
    k = rng.standard_normal((2, 6, 3))
    v = rng.standard_normal((2, 6, 5))
    kpm = np.zeros((2, 6), bool)
    kpm[1, 4:] = True
    out, w = run_mha(m, q, k, v, key_padding_mask=T(kpm))
    eo, ew = ref_mha(m, q, k, v, key_padding_mask=kpm)
    np.testing.assert_allclose(out, eo, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(w, ew, rtol=1e-9, atol=1e-12)
    assert w.shape == (2, 3, 8)


def test_mha_unbatched_and_causal_hint():
    ft.manual_seed(7)
    rng = np.random.default_rng(7)
    m = nn.MultiheadAttention(4, 2).double()
    x = rng.standard_normal((5, 4))
    out, w = m(T(x), T(x), T(x))
    eo, ew = ref_mha(m, x[None], x[None], x[None])
    assert tuple(out.shape) == (5, 4) and tuple(w.shape) == (5, 5)
    np.testing.assert_allclose(out.detach().numpy(), eo[0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(w.detach().numpy(), ew[0], rtol=1e-9, atol=1e-12)
    mask = nn.Transformer.generate_square_subsequent_mask(5, dtype=ft.float64)
    out, _ = m(T(x), T(x), T(x), attn_mask=mask, is_causal=True, need_weights=False)
    causal = np.triu(np.full((5, 5), NEG_INF), 1)
    eo, _ = ref_mha(m, x[None], x[None], x[None], attn_mask=causal)
    np.testing.assert_allclose(out.detach().numpy(), eo[0], rtol=1e-9, atol=1e-12)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        m(T(x), T(x), T(x), is_causal=True)


def test_mha_gradcheck():
    ft.manual_seed(8)
    m = nn.MultiheadAttention(4, 2, batch_first=True).double()
    x = ft.randn(2, 3, 4, dtype=ft.float64, requires_grad=True)
    kv = ft.randn(2, 2, 4, dtype=ft.float64, requires_grad=True)
    params = list(m.parameters())

    def f(x, kv, *ps):
        return m(x, kv, kv)

    assert gradcheck(f, (x, kv, *params))


def test_mha_module_api_and_errors():
    m = nn.MultiheadAttention(8, 2)
    assert list(m.state_dict()) == ["in_proj_weight", "in_proj_bias", "out_proj.weight",
                                    "out_proj.bias"]
    assert tuple(m.in_proj_weight.shape) == (24, 8)
    assert not m.in_proj_bias.detach().numpy().any()
    assert not m.out_proj.bias.detach().numpy().any()
    bound = math.sqrt(6 / (8 + 24))  # xavier_uniform on (3E, E)
    assert np.abs(m.in_proj_weight.detach().numpy()).max() <= bound
    assert repr(m) == ("MultiheadAttention(\n  (out_proj): NonDynamicallyQuantizableLinear("
                       "in_features=8, out_features=8, bias=True)\n)")
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(6, 4)
    with pytest.raises(ValueError, match="embed_dim and num_heads must be greater than 0"):
        nn.MultiheadAttention(0, 1)
    x = ft.randn(3, 2, 8)
    with pytest.raises(RuntimeError, match="The shape of the 2D attn_mask is"):
        m(x, x, x, attn_mask=ft.zeros(2, 2))
    with pytest.raises(AssertionError, match=r"Expected key_padded_mask.shape\[1\] to be 3, but got 4"):
        m(x, x, x, key_padding_mask=ft.zeros(2, 4, dtype=ft.bool))
    with pytest.raises(AssertionError, match="was expecting embedding dimension of 8"):
        m(ft.randn(3, 2, 4), ft.randn(3, 2, 4), ft.randn(3, 2, 4))
    with pytest.raises(AssertionError, match="only bool and floating types of attn_mask"):
        m(x, x, x, attn_mask=ft.zeros(3, 3, dtype=ft.int64))


# ---------------------------------------------------------------------------- transformer
def np_layer_norm(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def np_gelu(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def ref_encoder_layer(layer, x, src_mask=None, kpm=None, prefix=""):
    """x: (N, L, E)."""
    p = P(layer)
    act = np_gelu if layer.activation is F.gelu else (lambda a: np.maximum(a, 0))

    def sa(h):
        return ref_mha(layer.self_attn, h, h, h, key_padding_mask=kpm, attn_mask=src_mask)[0]

    def ff(h):
        return act(h @ p["linear1.weight"].T + p["linear1.bias"]) @ p["linear2.weight"].T + \
            p["linear2.bias"]

    def n1(h):
        return np_layer_norm(h, p["norm1.weight"], p["norm1.bias"])

    def n2(h):
        return np_layer_norm(h, p["norm2.weight"], p["norm2.bias"])

    if layer.norm_first:
        x = x + sa(n1(x))
        return x + ff(n2(x))
    x = n1(x + sa(x))
    return n2(x + ff(x))


def randomise_norms(module, rng):
    with ft.no_grad():
        for name, prm in module.named_parameters():
            if "norm" in name:
                prm.copy_(T(rng.standard_normal(tuple(prm.shape))))


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_encoder_layer_matches_numpy(norm_first, activation, batch_first):
    ft.manual_seed(9)
    rng = np.random.default_rng(9)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=activation,
                                       batch_first=batch_first, norm_first=norm_first).double()
    randomise_norms(layer, rng)
    x = rng.standard_normal((2, 5, 8))
    kpm = np.zeros((2, 5), bool)
    kpm[1, 3:] = True
    mask = np.triu(np.full((5, 5), NEG_INF), 1)
    xin = x if batch_first else x.transpose(1, 0, 2)
    got = layer(T(xin), src_mask=T(mask), src_key_padding_mask=T(kpm)).detach().numpy()
    if not batch_first:
        got = got.transpose(1, 0, 2)
    np.testing.assert_allclose(got, ref_encoder_layer(layer, x, mask, kpm), rtol=1e-9,
                               atol=1e-10)


def test_encoder_stack_and_final_norm():
    ft.manual_seed(10)
    rng = np.random.default_rng(10)
    layer = nn.TransformerEncoderLayer(8, 4, 16, dropout=0.0, batch_first=True)
    enc = nn.TransformerEncoder(layer, 3, norm=nn.modules.transformer._layer_norm(8, 1e-5,
                                                                                   True),
                                enable_nested_tensor=False).double()
    randomise_norms(enc, rng)
    # The layers are deep copies: distinct parameters.
    assert enc.layers[0].linear1.weight is not enc.layers[1].linear1.weight
    keys = list(enc.state_dict())
    assert keys[:2] == ["layers.0.self_attn.in_proj_weight", "layers.0.self_attn.in_proj_bias"]
    assert keys[-2:] == ["norm.weight", "norm.bias"]
    assert len(keys) == 3 * 12 + 2
    x = rng.standard_normal((2, 4, 8))
    got = enc(T(x)).detach().numpy()
    exp = x
    for lyr in enc.layers:
        exp = ref_encoder_layer(lyr, exp)
    p = P(enc)
    exp = np_layer_norm(exp, p["norm.weight"], p["norm.bias"])
    np.testing.assert_allclose(got, exp, rtol=1e-9, atol=1e-10)


def test_encoder_layer_gradcheck_and_dropout_modes():
    ft.manual_seed(11)
    layer = nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, batch_first=True).double()
    x = ft.randn(1, 3, 4, dtype=ft.float64, requires_grad=True)
    assert gradcheck(lambda x, *ps: layer(x), (x, *layer.parameters()))
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.5, batch_first=True)
    x = ft.randn(2, 5, 8)
    layer.eval()
    a = layer(x).detach().numpy()
    np.testing.assert_array_equal(a, layer(x).detach().numpy())
    layer.train()
    assert not np.allclose(layer(x).detach().numpy(), a)


def test_decoder_and_transformer():
    ft.manual_seed(12)
    rng = np.random.default_rng(12)
    model = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2,
                           dim_feedforward=16, dropout=0.0, batch_first=True).double()
    keys = list(model.state_dict())
    assert "decoder.layers.1.multihead_attn.in_proj_weight" in keys
    assert "decoder.layers.0.norm3.bias" in keys
    assert keys[-2:] == ["decoder.norm.weight", "decoder.norm.bias"]
    assert "encoder.norm.weight" in keys
    src = rng.standard_normal((2, 5, 8))
    tgt = rng.standard_normal((2, 4, 8))
    tgt_mask = nn.Transformer.generate_square_subsequent_mask(4, dtype=ft.float64)
    out = model(T(src), T(tgt), tgt_mask=tgt_mask, tgt_is_causal=True)
    assert tuple(out.shape) == (2, 4, 8)
    # NumPy reference of the decoder.
    p = P(model)
    mem = src
    for lyr in model.encoder.layers:
        mem = ref_encoder_layer(lyr, mem)
    mem = np_layer_norm(mem, p["encoder.norm.weight"], p["encoder.norm.bias"])
    x = tgt
    causal = np.triu(np.full((4, 4), NEG_INF), 1)
    for lyr in model.decoder.layers:
        q = P(lyr)
        x = np_layer_norm(x + ref_mha(lyr.self_attn, x, x, x, attn_mask=causal)[0],
                          q["norm1.weight"], q["norm1.bias"])
        x = np_layer_norm(x + ref_mha(lyr.multihead_attn, x, mem, mem)[0],
                          q["norm2.weight"], q["norm2.bias"])
        ff = np.maximum(x @ q["linear1.weight"].T + q["linear1.bias"], 0) @ \
            q["linear2.weight"].T + q["linear2.bias"]
        x = np_layer_norm(x + ff, q["norm3.weight"], q["norm3.bias"])
    x = np_layer_norm(x, p["decoder.norm.weight"], p["decoder.norm.bias"])
    np.testing.assert_allclose(out.detach().numpy(), x, rtol=1e-9, atol=1e-10)
    # Causality: changing a later target position does not change earlier outputs.
    tgt2 = tgt.copy()
    tgt2[:, 3] += 1.0
    out2 = model(T(src), T(tgt2), tgt_mask=tgt_mask).detach().numpy()
    np.testing.assert_allclose(out2[:, :3], out.detach().numpy()[:, :3], rtol=1e-9)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        model(T(src), T(tgt[:1]))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal "
                                           "to d_model"):
        model(T(src[..., :4]), T(tgt[..., :4]))
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(8, 2, 16, activation="tanh")


def test_layer_norm_functional():
    rng = np.random.default_rng(13)
    x = rng.standard_normal((3, 4, 5))
    w = rng.standard_normal(5)
    b = rng.standard_normal(5)
    np.testing.assert_allclose(F.layer_norm(T(x), (5,), T(w), T(b)).numpy(),
                               np_layer_norm(x, w, b), rtol=1e-9, atol=1e-12)
    got = F.layer_norm(T(x), (4, 5)).numpy()
    mu = x.mean((1, 2), keepdims=True)
    np.testing.assert_allclose(got, (x - mu) / np.sqrt(x.var((1, 2), keepdims=True) + 1e-5),
                               rtol=1e-9, atol=1e-12)
    with pytest.raises(RuntimeError, match="normalized_shape"):
        F.layer_norm(T(x), (4,))
    xt = ft.randn(2, 3, dtype=ft.float64, requires_grad=True)
    wt = ft.randn(3, dtype=ft.float64, requires_grad=True)
    assert gradcheck(lambda x, w: F.layer_norm(x, (3,), w), (xt, wt))


def test_compare_with_torch():
    torch = pytest.importorskip("torch")
    ft.manual_seed(14)
    m = nn.MultiheadAttention(8, 2, batch_first=True)
    t = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    t.load_state_dict({k: torch.from_numpy(v.numpy()) for k, v in m.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((2, 5, 8)).astype(np.float32)
    a = m(T(x), T(x), T(x))
    b = t(torch.from_numpy(x), torch.from_numpy(x), torch.from_numpy(x))
    np.testing.assert_allclose(a[0].detach().numpy(), b[0].detach().numpy(), rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(a[1].detach().numpy(), b[1].detach().numpy(), rtol=1e-4,
                               atol=1e-5)



def test_sdpa_gradgradcheck():
    from ferrotorch.autograd import gradgradcheck

    ft.manual_seed(15)
    q = ft.randn(1, 2, 2, dtype=ft.float64, requires_grad=True)
    k = ft.randn(1, 3, 2, dtype=ft.float64, requires_grad=True)
    v = ft.randn(1, 3, 2, dtype=ft.float64, requires_grad=True)
    assert gradgradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v), (q, k, v))
