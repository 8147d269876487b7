"""nn.functional and the layer/loss modules vs NumPy formulas (values and gradients)."""

import math

import numpy as np
import pytest

import ferrotorch as ft
import ferrotorch.nn.functional as F
from ferrotorch import nn

needs_sum = pytest.mark.skipif(not hasattr(ft.Tensor, "sum"),
                               reason="needs Tensor.sum/mean (reductions branch)")
needs_softmax = pytest.mark.skipif(not hasattr(ft.Tensor, "log_softmax"),
                                   reason="needs Tensor.softmax/log_softmax (reductions branch)")
needs_rand = pytest.mark.skipif(not hasattr(ft, "rand"), reason="needs rand (creation branch)")
needs_arange = pytest.mark.skipif(not hasattr(ft, "arange"),
                                  reason="needs arange (creation branch)")
needs_zeros = pytest.mark.skipif(not hasattr(ft, "zeros") or not hasattr(ft, "full"),
                                 reason="needs zeros/full (creation branch)")

RNG = np.random.default_rng(0)


def t(a, dtype=np.float64, grad=False):
    x = ft.from_numpy(np.array(a, dtype=dtype, order="C"))
    return x.requires_grad_() if grad else x


def npy(x):
    return x.detach().numpy()


# ---------------------------------------------------------------------------- activations
X = RNG.standard_normal((3, 4)) * 3
X[0, 0] = 25.0  # exercises the softplus threshold / large inputs
X[0, 1] = -30.0


def softplus_np(x, beta=1.0, threshold=20.0):
    z = beta * x
    return np.where(z > threshold, x, np.log1p(np.exp(np.minimum(z, 50))) / beta)


ACTIVATIONS = [
    (nn.ReLU(), lambda x: np.maximum(x, 0)),
    (nn.LeakyReLU(0.2), lambda x: np.where(x >= 0, x, 0.2 * x)),
    (nn.ELU(alpha=0.7), lambda x: np.where(x > 0, x, 0.7 * (np.exp(np.minimum(x, 0)) - 1))),
    (nn.GELU(), lambda x: 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))),
    (nn.GELU(approximate="tanh"),
     lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))),
    (nn.SiLU(), lambda x: x / (1 + np.exp(-x))),
    (nn.Mish(), lambda x: x * np.tanh(softplus_np(x))),
    (nn.Tanh(), np.tanh),
    (nn.Sigmoid(), lambda x: 1 / (1 + np.exp(-x))),
    (nn.Softplus(), softplus_np),
    (nn.Softplus(beta=2.0, threshold=5.0), lambda x: softplus_np(x, 2.0, 5.0)),
    (nn.Hardtanh(-0.5, 2.0), lambda x: np.clip(x, -0.5, 2.0)),
    (nn.ReLU6(), lambda x: np.clip(x, 0, 6)),
    (nn.SELU(), lambda x: 1.0507009873554805 * np.where(
        x > 0, x, 1.6732632423543772 * (np.exp(np.minimum(x, 0)) - 1))),
    (nn.LogSigmoid(), lambda x: -softplus_np(-x)),
    (nn.Hardsigmoid(), lambda x: np.clip(x / 6 + 0.5, 0, 1)),
    (nn.Hardswish(), lambda x: x * np.clip(x / 6 + 0.5, 0, 1)),
    (nn.Softsign(), lambda x: x / (1 + np.abs(x))),
]


@pytest.mark.parametrize("module,ref", ACTIVATIONS, ids=lambda v: repr(v)[:30])
def test_activation_values_and_grads(module, ref):
    x = t(X, grad=True)
    y = module(x)
    np.testing.assert_allclose(npy(y), ref(X), rtol=1e-7, atol=1e-10)
    y.backward(t(np.ones_like(X)))
    # numeric derivative away from kinks
    h = 1e-6
    num = (ref(X + h) - ref(X - h)) / (2 * h)
    mask = np.abs(X) > 1e-3
    for k in (-0.5, 2.0, 6.0, 3.0, -3.0):
        mask &= np.abs(X - k) > 1e-3
    np.testing.assert_allclose(x.grad.numpy()[mask], num[mask], rtol=1e-4, atol=1e-6)


def test_activation_float32_and_inplace():
    x = t([-1.0, 0.5], np.float32)
    assert F.relu(x).dtype == ft.float32
    F.leaky_relu(x, 0.1, inplace=True)
    np.testing.assert_allclose(x.numpy(), [-0.1, 0.5], rtol=1e-6)
    y = t([-2.0, 0.25, 3.0], np.float32)
    F.hardtanh(y, inplace=True)
    np.testing.assert_allclose(y.numpy(), [-1.0, 0.25, 1.0])
    with pytest.raises(ValueError):
        F.hardtanh(y, 2.0, 1.0)
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        F.gelu(y, approximate="fast")


@needs_softmax
def test_softmax_log_softmax_modules():
    x = RNG.standard_normal((2, 3, 4)) * 10
    for dim in (0, 1, 2, -1):
        e = np.exp(x - x.max(dim, keepdims=True))
        sm = e / e.sum(dim, keepdims=True)
        np.testing.assert_allclose(npy(nn.Softmax(dim)(t(x))), sm, rtol=1e-10)
        np.testing.assert_allclose(npy(nn.LogSoftmax(dim)(t(x))), np.log(sm), rtol=1e-10,
                                   atol=1e-12)
        np.testing.assert_allclose(npy(F.softmin(t(x), dim)), (lambda e2: e2 / e2.sum(
            dim, keepdims=True))(np.exp(-x + x.min(dim, keepdims=True))), rtol=1e-10)
    xt = t(x, grad=True)
    g = RNG.standard_normal(x.shape)
    F.log_softmax(xt, 1).backward(t(g))
    sm = np.exp(x) / np.exp(x).sum(1, keepdims=True)
    np.testing.assert_allclose(xt.grad.numpy(), g - sm * g.sum(1, keepdims=True), rtol=1e-8,
                               atol=1e-12)
    xt = t(x, grad=True)
    F.softmax(xt, -1).backward(t(g))
    sm = np.exp(x) / np.exp(x).sum(-1, keepdims=True)
    np.testing.assert_allclose(xt.grad.numpy(), sm * (g - (g * sm).sum(-1, keepdims=True)),
                               rtol=1e-8, atol=1e-12)
    with pytest.warns(UserWarning, match="Implicit dimension"):
        F.softmax(t(x[0]))


# ---------------------------------------------------------------------------- dropout
@needs_rand
def test_dropout_train_eval():
    ft.manual_seed(0)
    x = t(np.ones((100, 100)), np.float32)
    d = nn.Dropout(0.3)
    y = npy(d(x))
    kept = y != 0
    assert 0.6 < kept.mean() < 0.8
    np.testing.assert_allclose(y[kept], 1 / 0.7, rtol=1e-6)
    d.eval()
    assert d(x) is x
    assert F.dropout(x, 0.5, training=False) is x
    np.testing.assert_array_equal(npy(F.dropout(x, 1.0)), 0)
    xg = t(np.ones(50), grad=True)
    out = F.dropout(xg, 0.5)
    out.backward(t(np.ones(50)))
    np.testing.assert_allclose(xg.grad.numpy(), npy(out))  # grad = mask / (1 - p)
    with pytest.raises(ValueError):
        nn.Dropout(1.5)


# ---------------------------------------------------------------------------- shape layers
def test_flatten_unflatten_identity():
    x = t(RNG.standard_normal((2, 3, 4, 5)))
    assert nn.Flatten()(x).shape == (2, 60)
    assert nn.Flatten(0, 2)(x).shape == (24, 5)
    assert nn.Unflatten(1, (3, 1))(t(np.zeros((2, 3)))).shape == (2, 3, 1)
    assert nn.Identity(54, unused="x")(x) is x


@needs_arange
def test_one_hot():
    idx = t([[0, 2], [1, 0]], np.int64)
    oh = F.one_hot(idx, 4)
    assert oh.dtype == ft.int64 and oh.shape == (2, 2, 4)
    np.testing.assert_array_equal(oh.numpy(), np.eye(4, dtype=np.int64)[[[0, 2], [1, 0]]])
    assert F.one_hot(t([0, 3], np.int64)).shape == (2, 4)
    with pytest.raises(RuntimeError):
        F.one_hot(t([0, 5], np.int64), 3)


@needs_sum
def test_normalize_and_cosine_similarity():
    x = RNG.standard_normal((4, 3))
    np.testing.assert_allclose(npy(F.normalize(t(x))),
                               x / np.linalg.norm(x, axis=1, keepdims=True), rtol=1e-10)
    np.testing.assert_allclose(npy(F.normalize(t(x), p=1, dim=0)),
                               x / np.abs(x).sum(0, keepdims=True), rtol=1e-10)
    z = F.normalize(t(np.zeros((2, 3))))
    np.testing.assert_array_equal(npy(z), 0)
    y = RNG.standard_normal((4, 3))
    cs = (x * y).sum(1) / (np.linalg.norm(x, axis=1) * np.linalg.norm(y, axis=1))
    np.testing.assert_allclose(npy(F.cosine_similarity(t(x), t(y))), cs, rtol=1e-10)


@needs_zeros
def test_pad_constant():
    x = RNG.standard_normal((2, 3, 4))
    out = F.pad(t(x), (1, 2), value=-1.0)
    np.testing.assert_array_equal(npy(out), np.pad(x, ((0, 0), (0, 0), (1, 2)),
                                                   constant_values=-1.0))
    out = F.pad(t(x), (0, 1, 2, 0))
    np.testing.assert_array_equal(npy(out), np.pad(x, ((0, 0), (2, 0), (0, 1))))
    out = F.pad(t(x), (-1, 1))  # negative padding crops
    np.testing.assert_array_equal(npy(out), np.pad(x[..., 1:], ((0, 0), (0, 0), (0, 1))))
    xg = t(x, grad=True)
    F.pad(xg, (1, 1, 1, 1)).backward(t(np.ones((2, 5, 6))))
    np.testing.assert_array_equal(xg.grad.numpy(), np.ones_like(x))
    with pytest.raises(RuntimeError, match="divisible by 2"):
        F.pad(t(x), (1,))
    with pytest.raises(NotImplementedError):
        F.pad(t(x), (1, 1), mode="symmetric")


# ---------------------------------------------------------------------------- embedding
@needs_zeros
def test_embedding_forward_backward_padding_idx():
    emb = nn.Embedding(6, 3, padding_idx=1)
    assert emb.weight.shape == (6, 3)
    np.testing.assert_array_equal(npy(emb.weight)[1], 0)
    idx = t([[0, 1, 5], [5, 5, 2]], np.int64)
    out = emb(idx)
    w = npy(emb.weight)
    np.testing.assert_array_equal(npy(out), w[[[0, 1, 5], [5, 5, 2]]])
    out.backward(t(np.ones((2, 3, 3)), np.float32))
    g = emb.weight.grad.numpy()
    np.testing.assert_array_equal(g[:, 0], [1, 0, 1, 0, 0, 3])  # padding row gets none
    assert repr(emb) == "Embedding(6, 3, padding_idx=1)"
    pre = nn.Embedding.from_pretrained(t([[1.0, 2.0], [3.0, 4.0]]))
    assert not pre.weight.requires_grad
    np.testing.assert_array_equal(npy(pre(t([1], np.int64))), [[3.0, 4.0]])
    with pytest.raises(RuntimeError, match="Long, Int"):
        emb(t([0.0]))
    with pytest.raises(AssertionError):
        nn.Embedding(3, 2, padding_idx=3)
    np.testing.assert_array_equal(
        npy(F.embedding(t([2, 0], np.int64), t([[1.0], [2.0], [3.0]]))), [[3.0], [1.0]])


# ---------------------------------------------------------------------------- losses
def reduce_np(loss, reduction):
    return {"none": loss, "mean": loss.mean(), "sum": loss.sum()}[reduction]


RED = ["none", "mean", "sum"]


def check_loss(module, inp, target, want, rtol=1e-10, target_dtype=np.float64):
    got = npy(module(t(inp), t(target, target_dtype)))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-12)


@needs_sum
@pytest.mark.parametrize("reduction", RED)
def test_regression_losses(reduction):
    a = RNG.standard_normal((4, 5)) * 2
    b = RNG.standard_normal((4, 5)) * 2
    d = a - b
    check_loss(nn.MSELoss(reduction=reduction), a, b, reduce_np(d ** 2, reduction))
    check_loss(nn.L1Loss(reduction=reduction), a, b, reduce_np(np.abs(d), reduction))
    for beta in (1.0, 0.5):
        ad = np.abs(d)
        sl1 = np.where(ad < beta, 0.5 * ad ** 2 / beta, ad - 0.5 * beta)
        check_loss(nn.SmoothL1Loss(reduction=reduction, beta=beta), a, b,
                   reduce_np(sl1, reduction))
    for delta in (1.0, 0.7):
        ad = np.abs(d)
        hub = np.where(ad < delta, 0.5 * ad ** 2, delta * (ad - 0.5 * delta))
        check_loss(nn.HuberLoss(reduction=reduction, delta=delta), a, b,
                   reduce_np(hub, reduction))


@needs_sum
def test_regression_loss_grads_and_errors():
    a = RNG.standard_normal((3, 2))
    b = RNG.standard_normal((3, 2))
    x = t(a, grad=True)
    F.mse_loss(x, t(b)).backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * (a - b) / a.size, rtol=1e-10)
    x = t(a, grad=True)
    F.smooth_l1_loss(x, t(b), reduction="sum").backward()
    d = a - b
    np.testing.assert_allclose(x.grad.numpy(), np.where(np.abs(d) < 1, d, np.sign(d)),
                               rtol=1e-10)
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        F.mse_loss(t(a), t(b), reduction="avg")
    with pytest.warns(UserWarning, match="target size"):
        F.l1_loss(t(a), t(b[:1]))
    assert F.mse_loss(t(a), t(b), size_average=False).item() == pytest.approx(
        ((a - b) ** 2).sum())


def log_softmax_np(x, axis=1):
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


def ce_np(x, y, weight=None, ignore_index=-100, reduction="mean", ls=0.0):
    """Reference cross entropy for (N, C) or (N, C, d) logits and class-index targets."""
    if x.ndim > 2:  # move classes last and flatten
        c = x.shape[1]
        x2 = np.moveaxis(x, 1, -1).reshape(-1, c)
        out = ce_np(x2, y.reshape(-1), weight, ignore_index, "none" if reduction == "none"
                    else reduction, ls)
        return out.reshape(y.shape) if reduction == "none" else out
    n, c = x.shape
    lp = log_softmax_np(x)
    w = np.ones(c) if weight is None else weight
    valid = y != ignore_index
    ys = np.where(valid, y, 0)
    wt = w[ys] * valid
    nll = -lp[np.arange(n), ys] * wt
    smooth = -(lp * w).sum(1) * valid
    if reduction == "none":
        return (1 - ls) * nll + ls / c * smooth
    if reduction == "sum":
        return (1 - ls) * nll.sum() + ls / c * smooth.sum()
    return (1 - ls) * nll.sum() / wt.sum() + ls / c * smooth.sum() / (
        wt.sum() if weight is not None else valid.sum())


@needs_softmax
@needs_sum
@needs_arange
@pytest.mark.parametrize("reduction", RED)
@pytest.mark.parametrize("use_weight", [False, True])
@pytest.mark.parametrize("ls", [0.0, 0.2])
def test_cross_entropy_class_indices(reduction, use_weight, ls):
    x = RNG.standard_normal((6, 4)) * 3
    y = np.array([0, 3, 1, -100, 2, 3])
    w = np.array([0.5, 1.0, 2.0, 1.5]) if use_weight else None
    mod = nn.CrossEntropyLoss(weight=None if w is None else t(w), reduction=reduction,
                              label_smoothing=ls)
    check_loss(mod, x, y, ce_np(x, y, w, -100, reduction, ls), rtol=1e-9,
               target_dtype=np.int64)
    # ignore_index other than the default, and K-dimensional input (N, C, d)
    y2 = np.array([0, 3, 1, 2, 2, 3])
    got = F.cross_entropy(t(x), t(y2, np.int64), ignore_index=2, reduction=reduction,
                          label_smoothing=ls, weight=None if w is None else t(w))
    np.testing.assert_allclose(npy(got), ce_np(x, y2, w, 2, reduction, ls), rtol=1e-9)
    xk = RNG.standard_normal((2, 4, 3))
    yk = np.array([[0, 1, 3], [2, 2, 0]])
    got = F.cross_entropy(t(xk), t(yk, np.int64), reduction=reduction, label_smoothing=ls,
                          weight=None if w is None else t(w))
    np.testing.assert_allclose(npy(got), ce_np(xk, yk, w, -100, reduction, ls), rtol=1e-9)


@needs_softmax
@needs_sum
@needs_arange
def test_cross_entropy_grad_stability_and_unbatched():
    x = np.array([[1000.0, 0.0, -1000.0], [0.0, 1.0, 2.0]])
    y = np.array([2, 0])
    xt = t(x, grad=True)
    loss = F.cross_entropy(xt, t(y, np.int64))
    assert np.isfinite(loss.item())
    np.testing.assert_allclose(loss.item(), ce_np(x, y), rtol=1e-10)
    loss.backward()
    sm = np.exp(log_softmax_np(x))
    onehot = np.eye(3)[y]
    np.testing.assert_allclose(xt.grad.numpy(), (sm - onehot) / 2, rtol=1e-8, atol=1e-12)
    # unbatched (C,) input with a 0-d target
    v = RNG.standard_normal(5)
    got = F.cross_entropy(t(v), t(3, np.int64))
    np.testing.assert_allclose(got.item(), -log_softmax_np(v[None])[0, 3], rtol=1e-10)
    with pytest.raises(IndexError):
        F.cross_entropy(t(x), t([0, 7], np.int64))


@needs_softmax
@needs_sum
@pytest.mark.parametrize("reduction", RED)
def test_cross_entropy_probabilities(reduction):
    x = RNG.standard_normal((5, 4))
    p = np.abs(RNG.standard_normal((5, 4)))
    p /= p.sum(1, keepdims=True)
    w = np.array([1.0, 2.0, 0.5, 1.0])
    for ls in (0.0, 0.1):
        tgt = p * (1 - ls) + ls / 4
        want = -(log_softmax_np(x) * tgt * w).sum(1)
        want = want.mean() if reduction == "mean" else reduce_np(want, reduction)
        got = F.cross_entropy(t(x), t(p), weight=t(w), reduction=reduction,
                              label_smoothing=ls)
        np.testing.assert_allclose(npy(got), want, rtol=1e-10)


@needs_sum
@needs_arange
@pytest.mark.parametrize("reduction", RED)
def test_nll_loss(reduction):
    lp = log_softmax_np(RNG.standard_normal((5, 3)))
    y = np.array([0, 2, 1, 1, 2])
    w = np.array([1.0, 3.0, 0.5])
    per = -lp[np.arange(5), y] * w[y]
    want = per.sum() / w[y].sum() if reduction == "mean" else reduce_np(per, reduction)
    check_loss(nn.NLLLoss(weight=t(w), reduction=reduction), lp, y, want,
               target_dtype=np.int64)
    with pytest.raises(ValueError, match="batch_size"):
        F.nll_loss(t(lp), t([0, 1], np.int64))


@needs_sum
@pytest.mark.parametrize("reduction", RED)
def test_binary_cross_entropy(reduction):
    p = 1 / (1 + np.exp(-RNG.standard_normal((4, 3))))
    p[0, 0] = 0.0  # log clamped at -100
    y = (RNG.random((4, 3)) > 0.5).astype(np.float64)
    y[0, 0] = 1.0
    w = RNG.random((4, 3))
    per = -(y * np.maximum(np.log(np.maximum(p, 1e-300)), -100)
            + (1 - y) * np.maximum(np.log1p(-p), -100)) * w
    check_loss(nn.BCELoss(weight=t(w), reduction=reduction), p, y, reduce_np(per, reduction))
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(t([1.5]), t([1.0]))
    with pytest.raises(ValueError, match="target size"):
        F.binary_cross_entropy(t([0.5, 0.5]), t([1.0]))


def test_binary_cross_entropy_grad_at_saturated_probabilities():
    # A sigmoid that rounded to exactly 0 or 1: PyTorch's gradient is
    # w (x - y) / max(x (1 - x), 1e-12), finite (differentiating the clamped logs gave nan).
    p = t([0.0, 1.0, 0.0, 1.0, 0.25, 1e-30], grad=True)
    y = t([0.0, 1.0, 1.0, 0.0, 1.0, 1.0])
    w = t([1.0, 1.0, 1.0, 2.0, 1.0, 1.0])
    loss = F.binary_cross_entropy(p, y, weight=w, reduction="none")
    np.testing.assert_allclose(loss.detach().numpy(),
                               [0, 0, 100, 200, -math.log(0.25), -math.log(1e-30)])
    loss.sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), [0, 0, -1e12, 2e12, -4.0, -1e12], rtol=1e-12)
    # target gradient: w (log(1 - x) - log(x)), logs clamped at -100
    p = t([0.0, 0.5, 0.75])
    y = t([0.5, 0.5, 0.5], grad=True)
    F.binary_cross_entropy(p, y, reduction="sum").backward()
    np.testing.assert_allclose(y.grad.numpy(), [100.0, 0.0, math.log(0.25) - math.log(0.75)])


def test_glu_prelu_and_metric_losses():
    x = RNG.standard_normal((3, 4))
    np.testing.assert_allclose(F.glu(t(x)).numpy(), x[:, :2] / (1 + np.exp(-x[:, 2:])))
    np.testing.assert_allclose(nn.GLU(dim=0)(t(x[:2])).numpy(), x[:1] / (1 + np.exp(-x[1:2])))
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        F.glu(t(x), dim=0)
    img = RNG.standard_normal((2, 3, 2, 2))
    prelu = nn.PReLU(3)
    assert prelu.weight.shape == (3,) and prelu.weight.tolist() == [0.25] * 3
    with ft.no_grad():
        prelu.weight.copy_(ft.tensor([0.1, 0.2, 0.3]))
    a = np.array([0.1, 0.2, 0.3]).reshape(1, 3, 1, 1)
    out = prelu(t(img, np.float32))
    np.testing.assert_allclose(out.detach().numpy(), np.where(img > 0, img, a * img),
                               rtol=1e-6)
    out.sum().backward()
    np.testing.assert_allclose(prelu.weight.grad.numpy(),
                               np.minimum(img, 0).sum(axis=(0, 2, 3)), rtol=1e-5)
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers"):
        F.prelu(t(img), t([0.1, 0.2]))

    x1, x2 = RNG.standard_normal(5), RNG.standard_normal(5)
    y = np.array([1.0, -1.0, 1.0, -1.0, 1.0])
    np.testing.assert_allclose(nn.MarginRankingLoss(margin=0.3)(t(x1), t(x2), t(y)).item(),
                               np.maximum(0, -y * (x1 - x2) + 0.3).mean())
    a, b = RNG.standard_normal((5, 4)), RNG.standard_normal((5, 4))
    cos = (a * b).sum(1) / np.sqrt(((a * a).sum(1) + 1e-12) * ((b * b).sum(1) + 1e-12))
    want = np.where(y == 1, 1 - cos, np.maximum(0, cos - 0.1))
    got = nn.CosineEmbeddingLoss(margin=0.1, reduction="none")(t(a), t(b), t(y, np.int64))
    np.testing.assert_allclose(got.numpy(), want)
    n = RNG.standard_normal((5, 4))

    def d(u, v):
        return np.sqrt(((u - v + 1e-6) ** 2).sum(1))

    want = np.maximum(d(a, b) - np.minimum(d(a, n), d(b, n)) + 1.0, 0).sum()
    got = F.triplet_margin_loss(t(a), t(b), t(n), swap=True, reduction="sum")
    np.testing.assert_allclose(got.item(), want)
    np.testing.assert_allclose(nn.PairwiseDistance()(t(a), t(b)).numpy(), d(a, b))
    np.testing.assert_allclose(nn.CosineSimilarity(dim=1)(t(a), t(b)).numpy(), cos, rtol=1e-9)


def test_padding_modules():
    x = ft.arange(12.0).reshape(1, 1, 3, 4)
    for mod, mode in [(nn.ReflectionPad2d(1), "reflect"), (nn.ReplicationPad2d((1, 0, 2, 1)),
                                                           "edge"),
                      (nn.ZeroPad2d((0, 2, 1, 0)), "constant"), (nn.CircularPad2d(1), "wrap")]:
        pads = mod.padding
        np_pad = [(0, 0), (0, 0), (pads[2], pads[3]), (pads[0], pads[1])]
        np.testing.assert_array_equal(mod(x).numpy(), np.pad(x.numpy(), np_pad, mode=mode))
    got = nn.ConstantPad1d((2, 1), 3.5)(ft.ones(1, 2))
    assert got.tolist() == [[3.5, 3.5, 1.0, 1.0, 3.5]]
    assert repr(nn.ReflectionPad2d(1)) == "ReflectionPad2d((1, 1, 1, 1))"
    assert repr(nn.ConstantPad1d(2, 3.5)) == "ConstantPad1d(padding=(2, 2), value=3.5)"
    assert nn.ZeroPad3d(1)(ft.ones(1, 1, 1, 1, 1)).shape == (1, 1, 3, 3, 3)
    with pytest.raises(ValueError, match="padding must be"):
        nn.ReflectionPad2d((1, 1))


@needs_sum
@pytest.mark.parametrize("reduction", RED)
def test_bce_with_logits_pos_weight_and_stability(reduction):
    x = RNG.standard_normal((4, 3)) * 4
    x[0, 0], x[0, 1] = 200.0, -200.0
    y = (RNG.random((4, 3)) > 0.5).astype(np.float64)
    pw = np.array([1.0, 2.0, 0.5])
    w = RNG.random((4, 3))
    log_sig = -np.logaddexp(0, -x)
    log_1msig = -np.logaddexp(0, x)
    per = -(pw * y * log_sig + (1 - y) * log_1msig) * w
    mod = nn.BCEWithLogitsLoss(weight=t(w), pos_weight=t(pw), reduction=reduction)
    check_loss(mod, x, y, reduce_np(per, reduction), rtol=1e-9)
    xt = t(x, grad=True)
    F.binary_cross_entropy_with_logits(xt, t(y), reduction="sum").backward()
    sig = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(xt.grad.numpy(), sig - y, rtol=1e-8, atol=1e-12)


@needs_sum
@pytest.mark.parametrize("reduction", RED + ["batchmean"])
def test_kl_div(reduction):
    lp = log_softmax_np(RNG.standard_normal((3, 4)))
    q = np.exp(log_softmax_np(RNG.standard_normal((3, 4))))
    q[0, 0] = 0.0
    per = np.where(q > 0, q * (np.log(np.where(q > 0, q, 1)) - lp), 0.0)
    want = per.sum() / 3 if reduction == "batchmean" else reduce_np(per, reduction)
    if reduction == "mean":
        with pytest.warns(UserWarning, match="batchmean"):
            got = F.kl_div(t(lp), t(q), reduction=reduction)
    else:
        got = F.kl_div(t(lp), t(q), reduction=reduction)
    np.testing.assert_allclose(npy(got), want, rtol=1e-10, atol=1e-14)
    lq = np.log(np.exp(log_softmax_np(RNG.standard_normal((3, 4)))))
    got = nn.KLDivLoss(reduction="sum", log_target=True)(t(lp), t(lq))
    np.testing.assert_allclose(got.item(), (np.exp(lq) * (lq - lp)).sum(), rtol=1e-10)


# ---------------------------------------------------------------------------- nn.init / utils
def test_init_functions():
    w = t(np.zeros((50, 40)), np.float32)
    assert nn.init.calculate_gain("relu") == math.sqrt(2)
    assert nn.init.calculate_gain("leaky_relu", 0.2) == math.sqrt(2 / 1.04)
    assert nn.init.calculate_gain("tanh") == 5 / 3
    with pytest.raises(ValueError):
        nn.init.calculate_gain("bogus")
    assert nn.init._calculate_fan_in_and_fan_out(t(np.zeros((3, 4, 5)))) == (20, 15)
    with pytest.raises(ValueError):
        nn.init._calculate_fan_in_and_fan_out(t(np.zeros(3)))
    nn.init.constant_(w, 0.3)
    np.testing.assert_allclose(w.numpy(), 0.3, rtol=1e-6)
    nn.init.ones_(w)
    assert w.numpy().min() == 1.0
    nn.init.zeros_(w)
    assert w.numpy().max() == 0.0
    nn.init.eye_(w)
    np.testing.assert_array_equal(w.numpy(), np.eye(50, 40))
    q = t(np.zeros((6, 4)))
    nn.init.orthogonal_(q, gain=2.0)
    np.testing.assert_allclose(q.numpy().T @ q.numpy(), 4 * np.eye(4), atol=1e-10)
    p = nn.Parameter(t(np.zeros((4, 4))))
    nn.init.zeros_(p)  # works on leaves requiring grad (no_grad inside)
    assert p.requires_grad and p.grad_fn is None
    # the deprecated spellings without the underscore still work, with PyTorch's FutureWarning
    with pytest.warns(FutureWarning, match=r"^`nn.init.eye` is now deprecated in favor of "
                                           r"`nn.init.eye_`.$"):
        nn.init.eye(w)
    np.testing.assert_array_equal(w.numpy(), np.eye(50, 40))
    k = t(np.zeros((2, 2, 3)))
    with pytest.warns(FutureWarning, match="`nn.init.dirac` is now deprecated"):
        nn.init.dirac(k)
    np.testing.assert_array_equal(k.numpy()[:, :, 1], np.eye(2))
    with pytest.warns(FutureWarning, match="`nn.init.constant` is now deprecated"):
        nn.init.constant(w, 0.5)
    assert w.numpy().min() == 0.5
    assert callable(nn.init.sparse)


@pytest.mark.skipif(not hasattr(ft.Tensor, "uniform_") or not hasattr(ft.Tensor, "normal_"),
                    reason="needs uniform_/normal_ (creation branch)")
def test_random_init_statistics():
    ft.manual_seed(0)
    w = t(np.zeros((200, 300)), np.float32)
    nn.init.uniform_(w, -2.0, 3.0)
    a = w.numpy()
    assert a.min() >= -2.0 and a.max() <= 3.0 and abs(a.mean() - 0.5) < 0.05
    nn.init.normal_(w, 1.0, 2.0)
    assert abs(w.numpy().mean() - 1.0) < 0.05 and abs(w.numpy().std() - 2.0) < 0.05
    nn.init.xavier_uniform_(w)
    bound = math.sqrt(6 / 500)
    assert np.abs(w.numpy()).max() <= bound + 1e-6
    assert abs(w.numpy().std() - bound / math.sqrt(3)) < 0.01 * bound * 5
    nn.init.xavier_normal_(w, gain=2.0)
    assert abs(w.numpy().std() - 2 * math.sqrt(2 / 500)) < 0.01
    nn.init.kaiming_uniform_(w, a=math.sqrt(5))
    assert np.abs(w.numpy()).max() <= 1 / math.sqrt(300) + 1e-6
    nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    assert abs(w.numpy().std() - math.sqrt(2 / 200)) < 0.005
    nn.init.trunc_normal_(w, mean=0.0, std=1.0, a=-0.5, b=1.0)
    assert w.numpy().min() >= -0.5 and w.numpy().max() <= 1.0
    assert abs(w.numpy().mean() - 0.2) < 0.05  # a skewed truncation moves the mean


@needs_sum
def test_clip_grad_norm_and_value():
    a = nn.Parameter(t(np.zeros(3)))
    b = nn.Parameter(t(np.zeros(2)))
    a.grad = t([3.0, 0.0, 0.0])
    b.grad = t([0.0, 4.0])
    total = nn.utils.clip_grad_norm_([a, b], max_norm=1.0)
    assert total.item() == pytest.approx(5.0)
    np.testing.assert_allclose(a.grad.numpy(), [0.6, 0, 0], rtol=1e-5)
    np.testing.assert_allclose(b.grad.numpy(), [0, 0.8], rtol=1e-5)
    total = nn.utils.clip_grad_norm_([a, b], max_norm=10.0)
    assert total.item() == pytest.approx(1.0, rel=1e-5)
    np.testing.assert_allclose(a.grad.numpy(), [0.6, 0, 0], rtol=1e-5)
    a.grad = t([3.0, -7.0, 1.0])
    tot = nn.utils.clip_grad_norm_(a, 1.0, norm_type=float("inf"))
    assert tot.item() == 7.0
    np.testing.assert_allclose(a.grad.numpy(), [3 / 7, -1.0, 1 / 7], rtol=1e-5)
    nn.utils.clip_grad_value_([a, b], 0.1)
    np.testing.assert_allclose(a.grad.numpy(), [0.1, -0.1, 0.1], rtol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), [0.0, 0.1], rtol=1e-6)
    a.grad = t([3.0, -7.0, 0.05])
    nn.utils.clip_grad_value_(a, 0.5)
    np.testing.assert_allclose(a.grad.numpy(), [0.5, -0.5, 0.05])


def test_parameters_vector_roundtrip():
    ps = [nn.Parameter(t(np.arange(6.0).reshape(2, 3))), nn.Parameter(t([7.0, 8.0]))]
    v = nn.utils.parameters_to_vector(ps)
    np.testing.assert_array_equal(npy(v), [0, 1, 2, 3, 4, 5, 7, 8])
    nn.utils.vector_to_parameters(t(np.arange(8.0) * 10), ps)
    np.testing.assert_array_equal(npy(ps[0]), np.arange(6.0).reshape(2, 3) * 10)
    np.testing.assert_array_equal(npy(ps[1]), [60.0, 70.0])
    with pytest.raises(TypeError):
        nn.utils.vector_to_parameters([1.0], ps)


# ---------------------------------------------------------------------------- native grads
@needs_sum
def test_native_sum_mean_grads():
    x = RNG.standard_normal((2, 3, 4))
    for dim, keepdim in [(None, False), (1, False), (1, True), ([0, 2], False),
                         ((0, 2), True), (-1, False)]:
        xt = t(x, grad=True)
        out = xt.sum(dim, keepdim=keepdim) if dim is not None else xt.sum()
        axis = None if dim is None else tuple(dim) if isinstance(dim, (list, tuple)) else dim
        np.testing.assert_allclose(npy(out), x.sum(axis=axis, keepdims=keepdim), rtol=1e-12)
        g = RNG.standard_normal(tuple(out.shape))
        out.backward(t(g))
        want = np.broadcast_to(np.expand_dims(g, axis) if (axis is not None and not keepdim)
                               else g, x.shape)
        np.testing.assert_allclose(xt.grad.numpy(), want, rtol=1e-12)
        xt = t(x, grad=True)
        m = xt.mean(dim, keepdim=keepdim) if dim is not None else xt.mean()
        np.testing.assert_allclose(npy(m), x.mean(axis=axis, keepdims=keepdim), rtol=1e-12)
        m.backward(t(np.ones(tuple(m.shape))))
        np.testing.assert_allclose(xt.grad.numpy(), np.full(x.shape, m.numel() / x.size),
                                   rtol=1e-12)


@pytest.mark.skipif(not hasattr(ft.Tensor, "matmul") or not hasattr(ft.Tensor, "sum"),
                    reason="needs matmul and sum (linalg/reductions branches)")
def test_native_matmul_broadcast_grads():
    for sa, sb in [((3, 4), (4, 2)), ((5, 3, 4), (4, 2)), ((2, 1, 3, 4), (5, 4, 2)),
                   ((4,), (4, 2)), ((3, 4), (4,)), ((4,), (4,))]:
        a, b = RNG.standard_normal(sa), RNG.standard_normal(sb)
        at, bt = t(a, grad=True), t(b, grad=True)
        out = at.matmul(bt)
        np.testing.assert_allclose(npy(out), a @ b, rtol=1e-12)
        g = RNG.standard_normal(np.shape(a @ b))
        out.backward(t(g))
        # numeric reference via the bilinear identity d(sum(g * (a @ b)))
        ga = np.zeros_like(a)
        gb = np.zeros_like(b)
        for idx in np.ndindex(a.shape):
            e = np.zeros_like(a)
            e[idx] = 1
            ga[idx] = np.sum(g * (e @ b))
        for idx in np.ndindex(b.shape):
            e = np.zeros_like(b)
            e[idx] = 1
            gb[idx] = np.sum(g * (a @ e))
        np.testing.assert_allclose(at.grad.numpy(), ga, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(bt.grad.numpy(), gb, rtol=1e-10, atol=1e-12)


@needs_sum
def test_losses_noncontiguous_float32_and_empty():
    a = RNG.standard_normal((5, 4)).astype(np.float32)
    b = RNG.standard_normal((4, 5)).astype(np.float32)
    at, bt = ft.from_numpy(a), ft.from_numpy(b).t()  # transposed view
    got = F.mse_loss(at, bt)
    assert got.dtype == ft.float32
    np.testing.assert_allclose(got.item(), ((a - b.T) ** 2).mean(), rtol=1e-5)
    got = F.l1_loss(at[::2], bt[::2], reduction="sum")  # stepped slices
    np.testing.assert_allclose(got.item(), np.abs(a[::2] - b.T[::2]).sum(), rtol=1e-5)
    empty = t(np.zeros((0, 3)))
    assert F.mse_loss(empty, empty, reduction="sum").item() == 0.0
    assert math.isnan(F.mse_loss(empty, empty).item())
    assert F.mse_loss(empty, empty, reduction="none").shape == (0, 3)


@pytest.mark.skipif(not hasattr(ft.Tensor, "matmul"), reason="needs matmul (linalg branch)")
def test_linear_functional_noncontiguous_and_0d_batch():
    x = RNG.standard_normal((4, 3))
    w = RNG.standard_normal((2, 3))
    b = RNG.standard_normal(2)
    xt = t(x.T.copy()).t()  # non-contiguous view with x's values
    np.testing.assert_allclose(npy(F.linear(xt, t(w), t(b))), x @ w.T + b, rtol=1e-12)
    np.testing.assert_allclose(npy(F.linear(t(x[0]), t(w))), x[0] @ w.T, rtol=1e-12)
    assert F.linear(t(np.zeros((0, 3))), t(w), t(b)).shape == (0, 2)


@pytest.mark.parametrize("module,ref", ACTIVATIONS, ids=lambda v: repr(v)[:30])
def test_activation_noncontiguous_0d_empty_float32(module, ref):
    base = X.T.astype(np.float32).copy()
    xt = ft.from_numpy(base).t()  # non-contiguous view holding X
    np.testing.assert_allclose(npy(module(xt)), ref(X.astype(np.float32)), rtol=2e-5,
                               atol=1e-6)
    xs = ft.from_numpy(base)[::2]  # stepped slice
    np.testing.assert_allclose(npy(module(xs)), ref(base[::2]), rtol=2e-5, atol=1e-6)
    zero_d = module(t(0.7))
    assert zero_d.shape == () and zero_d.dtype == ft.float64
    np.testing.assert_allclose(zero_d.item(), ref(np.array(0.7)), rtol=1e-7)
    assert module(t(np.zeros((0, 3)))).shape == (0, 3)
    assert module(xt).dtype == ft.float32


# ---------------------------------------------------------------------------- pad modes
@pytest.mark.parametrize("mode,np_mode", [("reflect", "reflect"), ("replicate", "edge"),
                                          ("circular", "wrap")])
@pytest.mark.parametrize("shape,pad", [((2, 5), (2, 3)), ((1, 2, 4), (0, 3)),
                                       ((2, 3, 4, 5), (1, 2, 3, 0)), ((3, 4, 5), (2, 2, 1, 3)),
                                       ((1, 1, 3, 4, 5), (1, 1, 2, 0, 2, 2))])
def test_pad_modes_match_numpy(mode, np_mode, shape, pad):
    x = RNG.standard_normal(shape)
    widths = [(0, 0)] * len(shape)
    for k in range(len(pad) // 2):
        widths[len(shape) - 1 - k] = (pad[2 * k], pad[2 * k + 1])
    want = np.pad(x, widths, mode=np_mode)
    got = F.pad(t(x), pad, mode=mode)
    np.testing.assert_allclose(npy(got), want, rtol=1e-12)
    xt = t(x, grad=True)
    assert ft.autograd.gradcheck(lambda a: F.pad(a, pad, mode=mode), (xt,))


def test_pad_mode_errors_and_conv_padding_modes():
    with pytest.raises(RuntimeError, match="Padding size should be less than"):
        F.pad(ft.zeros(1, 2, 3), (3, 0), mode="reflect")
    with pytest.raises(RuntimeError, match="wrapping around more than once"):
        F.pad(ft.zeros(1, 2, 3), (4, 0), mode="circular")
    with pytest.raises(NotImplementedError, match="Padding size 2 is not supported for 1D input"):
        F.pad(ft.zeros(5), (1, 1), mode="replicate")
    with pytest.raises(NotImplementedError):
        F.pad(ft.zeros(1, 5), (1, 1), mode="bogus")
    x = RNG.standard_normal((2, 3, 6, 7))
    for mode, np_mode in [("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")]:
        conv = nn.Conv2d(3, 4, 3, padding=1, padding_mode=mode).double()
        padded = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)], mode=np_mode)
        ref = F.conv2d(t(padded), conv.weight, conv.bias)
        np.testing.assert_allclose(npy(conv(t(x))), npy(ref), rtol=1e-10, atol=1e-12)
