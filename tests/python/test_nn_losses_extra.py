"""The less common nn.functional losses and their modules vs NumPy references written from
PyTorch's documented formulas: poisson_nll_loss, gaussian_nll_loss, hinge_embedding_loss,
soft_margin_loss, multilabel_soft_margin_loss, multilabel_margin_loss, multi_margin_loss and
triplet_margin_with_distance_loss (values in float32/float64 for every reduction, float64
gradchecks, PyTorch's errors)."""

import math

import numpy as np
import pytest

import ferrotorch as ft
import ferrotorch.nn.functional as F
from ferrotorch import nn
from ferrotorch.autograd import gradcheck

RNG = np.random.default_rng(1234)
FLOATS = [(ft.float32, np.float32), (ft.float64, np.float64)]
TOL = {np.float32: dict(rtol=2e-5, atol=2e-6), np.float64: dict(rtol=1e-10, atol=1e-12)}
REDUCTIONS = ["none", "mean", "sum"]
SHAPES = [(), (7,), (3, 5), (2, 3, 4)]


def t(a, dtype=np.float64, grad=False):
    x = ft.from_numpy(np.array(a, dtype=dtype, order="C"))
    return x.requires_grad_() if grad else x


def idx(a):
    return ft.from_numpy(np.array(a, dtype=np.int64, order="C"))


def npy(x):
    return x.detach().numpy()


def reduce_np(loss, reduction):
    if reduction == "none":
        return loss
    return loss.mean() if reduction == "mean" else loss.sum()


def check(got, want, np_dtype):
    got = npy(got)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == np_dtype
    np.testing.assert_allclose(got.astype(np.float64), want, **TOL[np_dtype])


# ---------------------------------------------------------------------------- poisson_nll
def poisson_np(x, y, log_input=True, full=False, eps=1e-8, reduction="mean"):
    x, y = x.astype(np.float64), y.astype(np.float64)
    loss = np.exp(x) - y * x if log_input else x - y * np.log(x + eps)
    if full:
        ys = np.where(y > 1, y, 1.0)
        loss = loss + np.where(y > 1, ys * np.log(ys) - ys + 0.5 * np.log(2 * np.pi * ys), 0.0)
    return reduce_np(loss, reduction)


@pytest.mark.parametrize("ft_dtype,np_dtype", FLOATS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("log_input,full", [(True, False), (False, False), (True, True),
                                            (False, True)])
def test_poisson_nll_loss(ft_dtype, np_dtype, shape, reduction, log_input, full):
    x = RNG.standard_normal(shape).astype(np_dtype)
    if not log_input:
        x = np.abs(x) + np.asarray(0.1, np_dtype)
    y = (RNG.random(shape) * 4).astype(np_dtype)  # some <= 1, some > 1
    got = F.poisson_nll_loss(t(x, np_dtype), t(y, np_dtype), log_input=log_input, full=full,
                             reduction=reduction)
    check(got, poisson_np(x, y, log_input, full, reduction=reduction), np_dtype)
    mod = nn.PoissonNLLLoss(log_input=log_input, full=full, reduction=reduction)
    check(mod(t(x, np_dtype), t(y, np_dtype)), poisson_np(x, y, log_input, full,
                                                          reduction=reduction), np_dtype)


def test_poisson_nll_loss_eps_and_legacy_args():
    x = np.array([0.0, 0.5, 2.0])
    y = np.array([1.0, 3.0, 0.0])
    got = F.poisson_nll_loss(t(x), t(y), log_input=False, eps=0.25, reduction="none")
    check(got, poisson_np(x, y, False, eps=0.25, reduction="none"), np.float64)
    # size_average=False -> sum; reduce=False -> none (legacy arguments win).
    check(F.poisson_nll_loss(t(x), t(y), size_average=False), poisson_np(x, y, reduction="sum"),
          np.float64)
    check(F.poisson_nll_loss(t(x), t(y), reduce=False), poisson_np(x, y, reduction="none"),
          np.float64)
    assert nn.PoissonNLLLoss(size_average=False).reduction == "sum"


@pytest.mark.parametrize("log_input,full", [(True, True), (False, True), (False, False)])
def test_poisson_nll_loss_gradcheck(log_input, full):
    x = RNG.random((3, 4)) + 0.2
    y = RNG.random((3, 4)) * 4 + 0.05
    y[np.abs(y - 1) < 0.01] = 2.0  # the Stirling term jumps at target == 1
    xt, yt = t(x, grad=True), t(y, grad=True)
    assert gradcheck(lambda a, b: F.poisson_nll_loss(a, b, log_input=log_input, full=full),
                     (xt, yt))


def test_poisson_nll_loss_masked_stirling_has_finite_grad():
    # target 0 sits in the masked region: log(0) must not leak a nan into the gradient.
    y = t([0.0, 0.5, 3.0], grad=True)
    x = t([0.1, 0.2, 0.3], grad=True)
    F.poisson_nll_loss(x, y, full=True, reduction="sum").backward()
    np.testing.assert_allclose(npy(y.grad)[:2], -npy(x)[:2])
    np.testing.assert_allclose(npy(y.grad)[2], -0.3 + math.log(3.0) + 0.5 / 3.0)


def test_poisson_nll_loss_bad_reduction():
    with pytest.raises(ValueError, match="bad is not a valid value for reduction"):
        F.poisson_nll_loss(t([1.0]), t([1.0]), reduction="bad")


# ---------------------------------------------------------------------------- gaussian_nll
def gaussian_np(x, y, var, full=False, eps=1e-6, reduction="mean"):
    x, y, var = (np.asarray(a, dtype=np.float64) for a in (x, y, var))
    if var.shape != x.shape and x.shape[:-1] == var.shape:
        var = var[..., None]
    var = np.maximum(var, eps)
    loss = 0.5 * (np.log(var) + (x - y) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return reduce_np(loss, reduction)


@pytest.mark.parametrize("ft_dtype,np_dtype", FLOATS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("shape,var_shape", [
    ((4, 3), (4, 3)),        # heteroscedastic
    ((4, 3), (4,)),          # homoscedastic, last dim missing
    ((4, 3), (4, 1)),        # homoscedastic, last dim 1
    ((2, 3, 5), (2, 3)),
    ((2, 3, 5), (2, 3, 1)),
    ((6,), ()),              # unbatched, scalar variance
    ((6,), (1,)),
])
def test_gaussian_nll_loss(ft_dtype, np_dtype, reduction, full, shape, var_shape):
    x = RNG.standard_normal(shape).astype(np_dtype)
    y = RNG.standard_normal(shape).astype(np_dtype)
    var = (RNG.random(var_shape) + 0.05).astype(np_dtype)
    if var.size > 1:
        var.flat[0] = 1e-9  # below eps: clamped
    want = gaussian_np(x, y, var, full, reduction=reduction)
    got = F.gaussian_nll_loss(t(x, np_dtype), t(y, np_dtype), t(var, np_dtype), full=full,
                              reduction=reduction)
    check(got, want, np_dtype)
    mod = nn.GaussianNLLLoss(full=full, reduction=reduction)
    check(mod(t(x, np_dtype), t(y, np_dtype), t(var, np_dtype)), want, np_dtype)


def test_gaussian_nll_loss_float_var_and_eps():
    x, y = RNG.standard_normal((3, 2)), RNG.standard_normal((3, 2))
    check(F.gaussian_nll_loss(t(x), t(y), 0.7, reduction="none"),
          gaussian_np(x, y, np.full((3, 2), 0.7), reduction="none"), np.float64)
    check(F.gaussian_nll_loss(t(x), t(y), t(np.full((3, 2), 0.01)), eps=0.1),
          gaussian_np(x, y, np.full((3, 2), 0.1)), np.float64)


@pytest.mark.parametrize("var_shape", [(4, 3), (4,), (4, 1)])
def test_gaussian_nll_loss_gradcheck(var_shape):
    x, y = t(RNG.standard_normal((4, 3)), grad=True), t(RNG.standard_normal((4, 3)), grad=True)
    v = t(RNG.random(var_shape) + 0.1, grad=True)
    assert gradcheck(lambda a, b, c: F.gaussian_nll_loss(a, b, c, full=True), (x, y, v))


def test_gaussian_nll_loss_clamp_is_invisible_to_autograd():
    # PyTorch clamps a clone of var under no_grad: where var < eps the gradient is
    # d/dvar evaluated at eps and passed straight through (not zeroed).
    x, y = t([1.0, 2.0]), t([0.0, 0.0])
    var = t([1e-9, 4.0], grad=True)
    F.gaussian_nll_loss(x, y, var, eps=0.5, reduction="sum").backward()
    v = np.array([0.5, 4.0])
    d2 = np.array([1.0, 4.0])
    np.testing.assert_allclose(npy(var.grad), 0.5 * (1 / v - d2 / v ** 2))


def test_gaussian_nll_loss_errors():
    x, y = t(np.zeros((4, 3))), t(np.zeros((4, 3)))
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(x, y, t(np.ones((4, 2))))
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(x, y, t(np.ones((3,))))
    with pytest.raises(ValueError, match="var has negative entry/entries"):
        F.gaussian_nll_loss(x, y, t(-np.ones((4, 3))))
    with pytest.raises(ValueError, match="var has negative entry/entries"):
        F.gaussian_nll_loss(x, y, -1.0)
    with pytest.raises(ValueError, match="bad is not valid"):
        F.gaussian_nll_loss(x, y, t(np.ones((4, 3))), reduction="bad")


# ---------------------------------------------------------------------------- hinge_embedding
def hinge_np(x, y, margin=1.0, reduction="mean"):
    x = x.astype(np.float64)
    loss = np.where(y != 1, np.maximum(margin - x, 0), 0) + np.where(y != -1, x, 0)
    return reduce_np(loss, reduction)


@pytest.mark.parametrize("ft_dtype,np_dtype", FLOATS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin", [1.0, 0.3])
def test_hinge_embedding_loss(ft_dtype, np_dtype, shape, reduction, margin):
    x = RNG.standard_normal(shape).astype(np_dtype)
    y = RNG.choice([-1.0, 1.0], size=shape).astype(np_dtype)
    want = hinge_np(x, y, margin, reduction)
    check(F.hinge_embedding_loss(t(x, np_dtype), t(y, np_dtype), margin=margin,
                                 reduction=reduction), want, np_dtype)
    check(nn.HingeEmbeddingLoss(margin=margin, reduction=reduction)(t(x, np_dtype),
                                                                     t(y, np_dtype)),
          want, np_dtype)


def test_hinge_embedding_loss_other_targets_and_gradcheck():
    # A target that is neither 1 nor -1 takes both terms, as PyTorch's composition.
    x = np.array([0.2, -0.4, 2.0, 0.5])
    y = np.array([1.0, -1.0, -1.0, 0.0])
    check(F.hinge_embedding_loss(t(x), t(y), reduction="none"), hinge_np(x, y, 1.0, "none"),
          np.float64)
    xt = t(RNG.standard_normal((3, 4)), grad=True)
    yt = t(RNG.choice([-1.0, 1.0], size=(3, 4)))
    assert gradcheck(lambda a: F.hinge_embedding_loss(a, yt, margin=0.7), (xt,))
    with pytest.raises(ValueError, match="nope is not a valid value for reduction"):
        F.hinge_embedding_loss(xt, yt, reduction="nope")


# ---------------------------------------------------------------------------- soft_margin
@pytest.mark.parametrize("ft_dtype,np_dtype", FLOATS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_soft_margin_loss(ft_dtype, np_dtype, shape, reduction):
    x = RNG.standard_normal(shape).astype(np_dtype)
    y = RNG.choice([-1.0, 1.0], size=shape).astype(np_dtype)
    want = reduce_np(np.log1p(np.exp(-y.astype(np.float64) * x)), reduction)
    check(F.soft_margin_loss(t(x, np_dtype), t(y, np_dtype), reduction=reduction), want,
          np_dtype)
    check(nn.SoftMarginLoss(reduction=reduction)(t(x, np_dtype), t(y, np_dtype)), want,
          np_dtype)


def test_soft_margin_loss_gradcheck_and_errors():
    xt = t(RNG.standard_normal((3, 4)), grad=True)
    yt = t(RNG.choice([-1.0, 1.0], size=(3, 4)), grad=True)
    assert gradcheck(lambda a, b: F.soft_margin_loss(a, b), (xt, yt))
    assert nn.SoftMarginLoss(reduce=False).reduction == "none"
    with pytest.raises(ValueError, match="x is not a valid value for reduction"):
        F.soft_margin_loss(xt, yt, reduction="x")


# ---------------------------------------------------------------------------- multilabel_soft
def log_sigmoid_np(x):
    return np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x)))


def multilabel_soft_np(x, y, w=None, reduction="mean"):
    x, y = x.astype(np.float64), y.astype(np.float64)
    loss = -(y * log_sigmoid_np(x) + (1 - y) * log_sigmoid_np(-x))
    if w is not None:
        loss = loss * w
    loss = loss.sum(-1) / x.shape[-1]
    return reduce_np(loss, reduction)


@pytest.mark.parametrize("ft_dtype,np_dtype", FLOATS)
@pytest.mark.parametrize("shape", [(5,), (3, 5), (2, 3, 4)])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_multilabel_soft_margin_loss(ft_dtype, np_dtype, shape, reduction, weighted):
    x = (RNG.standard_normal(shape) * 4).astype(np_dtype)
    x.flat[0] = 40.0  # far in the tails: log-sigmoid must stay exact
    y = (RNG.random(shape) > 0.5).astype(np_dtype)
    w = (RNG.random(shape[-1]) + 0.5).astype(np_dtype) if weighted else None
    want = multilabel_soft_np(x, y, w, reduction)
    wt = t(w, np_dtype) if weighted else None
    check(F.multilabel_soft_margin_loss(t(x, np_dtype), t(y, np_dtype), weight=wt,
                                        reduction=reduction), want, np_dtype)
    mod = nn.MultiLabelSoftMarginLoss(weight=wt, reduction=reduction)
    check(mod(t(x, np_dtype), t(y, np_dtype)), want, np_dtype)


def test_multilabel_soft_margin_loss_gradcheck_and_errors():
    xt = t(RNG.standard_normal((3, 4)), grad=True)
    yt = t((RNG.random((3, 4)) > 0.5).astype(np.float64))
    w = t(RNG.random(4) + 0.5, grad=True)
    assert gradcheck(lambda a, c: F.multilabel_soft_margin_loss(a, yt, weight=c), (xt, w))
    with pytest.raises(ValueError, match="bad is not valid"):
        F.multilabel_soft_margin_loss(xt, yt, reduction="bad")


# ---------------------------------------------------------------------------- multilabel_margin
def multilabel_margin_np(x, y, reduction="mean"):
    """PyTorch's CPU loop: targets up to the first negative entry; repeated targets count
    once per listing."""
    x2 = np.atleast_2d(x.astype(np.float64))
    y2 = np.atleast_2d(y)
    n, c = x2.shape
    out = np.zeros(n)
    for s in range(n):
        targets = []
        for v in y2[s]:
            if v < 0:
                break
            targets.append(int(v))
        is_t = np.zeros(c, bool)
        is_t[targets] = True
        tot = 0.0
        for j in targets:
            for i in range(c):
                if not is_t[i]:
                    tot += max(0.0, 1 - (x2[s, j] - x2[s, i]))
        out[s] = tot / c
    if reduction == "none":
        return out if np.ndim(x) == 2 else out[0]
    return reduce_np(out, reduction)


def random_multilabel_targets(n, c):
    y = np.full((n, c), -1, dtype=np.int64)
    for s in range(n):
        k = RNG.integers(0, c + 1)
        y[s, :k] = RNG.choice(c, size=k, replace=False)
        if k < c:  # junk after the terminator is ignored
            y[s, k + 1:] = RNG.integers(-1, c, size=c - k - 1)
    return y


@pytest.mark.parametrize("ft_dtype,np_dtype", FLOATS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("batched", [False, True])
def test_multilabel_margin_loss(ft_dtype, np_dtype, reduction, batched):
    n, c = (6, 5) if batched else (1, 7)
    x = RNG.standard_normal((n, c)).astype(np_dtype)
    y = random_multilabel_targets(n, c)
    if not batched:
        x, y = x[0], y[0]
    want = multilabel_margin_np(x, y, reduction)
    got = F.multilabel_margin_loss(t(x, np_dtype), idx(y), reduction=reduction)
    check(got, want, np_dtype)
    check(nn.MultiLabelMarginLoss(reduction=reduction)(t(x, np_dtype), idx(y)), want, np_dtype)


def test_multilabel_margin_loss_docs_example_and_repeats():
    # The example of PyTorch's MultiLabelMarginLoss documentation.
    x = t([[0.1, 0.2, 0.4, 0.8]])
    y = idx([[3, 0, -1, 1]])
    np.testing.assert_allclose(npy(F.multilabel_margin_loss(x, y)), 0.85, rtol=1e-12)
    # A repeated target index is counted each time it is listed.
    xr = np.array([0.3, -0.2, 0.9])
    yr = np.array([0, 0, -1])
    check(F.multilabel_margin_loss(t(xr), idx(yr), reduction="none"),
          multilabel_margin_np(xr, yr, "none"), np.float64)


def test_multilabel_margin_loss_gradcheck():
    x = t(RNG.standard_normal((4, 5)), grad=True)
    y = idx(random_multilabel_targets(4, 5))
    assert gradcheck(lambda a: F.multilabel_margin_loss(a, y, reduction="sum"), (x,))
    x1 = t(RNG.standard_normal(5), grad=True)
    y1 = idx([2, 4, -1, 0, 0])
    assert gradcheck(lambda a: F.multilabel_margin_loss(a, y1), (x1,))


def test_multilabel_margin_loss_errors():
    x = t(np.zeros((2, 3)))
    with pytest.raises(RuntimeError, match="inconsistent target size"):
        F.multilabel_margin_loss(x, idx(np.zeros((2, 2), np.int64)))
    with pytest.raises(RuntimeError, match="inconsistent target size"):
        F.multilabel_margin_loss(t(np.zeros(3)), idx(np.zeros(2, np.int64)))
    with pytest.raises(RuntimeError, match="Expected non-empty vector or matrix"):
        F.multilabel_margin_loss(t(np.zeros((2, 3, 4))), idx(np.zeros((2, 3, 4), np.int64)))
    with pytest.raises(RuntimeError, match="Expected non-empty vector or matrix"):
        F.multilabel_margin_loss(t(np.zeros((2, 0))), idx(np.zeros((2, 0), np.int64)))
    with pytest.raises(RuntimeError, match="out of bounds"):
        F.multilabel_margin_loss(x, idx([[0, 3, -1], [1, -1, 0]]))
    with pytest.raises(RuntimeError, match="expected scalar type Long"):
        F.multilabel_margin_loss(x, t(np.zeros((2, 3))))
    with pytest.raises(ValueError, match="bad is not a valid value for reduction"):
        F.multilabel_margin_loss(x, idx(np.zeros((2, 3), np.int64)), reduction="bad")


# ---------------------------------------------------------------------------- multi_margin
def multi_margin_np(x, y, p=1, margin=1.0, w=None, reduction="mean"):
    x2 = np.atleast_2d(x.astype(np.float64))
    y1 = np.atleast_1d(y)
    n, c = x2.shape
    out = np.zeros(n)
    for s in range(n):
        tgt = int(y1[s])
        for i in range(c):
            if i == tgt:
                continue
            z = max(0.0, margin - x2[s, tgt] + x2[s, i]) ** p
            out[s] += z * (w[tgt] if w is not None else 1.0)
        out[s] /= c
    if reduction == "none":
        return out if np.ndim(y) > 0 else out[0]
    return reduce_np(out, reduction)


@pytest.mark.parametrize("ft_dtype,np_dtype", FLOATS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("margin", [1.0, 0.4])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("layout", ["batched", "vector_1d_target", "vector_0d_target"])
def test_multi_margin_loss(ft_dtype, np_dtype, reduction, p, margin, weighted, layout):
    n, c = 6, 5
    x = RNG.standard_normal((n, c)).astype(np_dtype)
    y = RNG.integers(0, c, size=n)
    if layout != "batched":
        x = x[0]
        y = y[:1] if layout == "vector_1d_target" else y[0]
    w = (RNG.random(c) + 0.5).astype(np_dtype) if weighted else None
    wt = t(w, np_dtype) if weighted else None
    want = multi_margin_np(x, y, p, margin, w, reduction)
    got = F.multi_margin_loss(t(x, np_dtype), idx(y), p=p, margin=margin, weight=wt,
                              reduction=reduction)
    check(got, want, np_dtype)
    mod = nn.MultiMarginLoss(p=p, margin=margin, weight=wt, reduction=reduction)
    check(mod(t(x, np_dtype), idx(y)), want, np_dtype)


def test_multi_margin_loss_docs_example():
    x = t([[0.1, 0.2, 0.4, 0.8]])
    np.testing.assert_allclose(npy(F.multi_margin_loss(x, idx([3]))), 0.325, rtol=1e-12)


@pytest.mark.parametrize("p", [1, 2])
def test_multi_margin_loss_gradcheck(p):
    x = t(RNG.standard_normal((4, 5)), grad=True)
    y = idx(RNG.integers(0, 5, size=4))
    w = t(RNG.random(5) + 0.5, grad=True)
    assert gradcheck(lambda a, b: F.multi_margin_loss(a, y, p=p, margin=0.8, weight=b), (x, w))


def test_multi_margin_loss_errors():
    x = t(np.zeros((2, 3)))
    y = idx([0, 1])
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        F.multi_margin_loss(x, y, p=3)
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        nn.MultiMarginLoss(p=3)
    with pytest.raises(ValueError, match="weight must be one-dimensional"):
        F.multi_margin_loss(x, y, weight=t(np.ones((1, 3))))
    with pytest.raises(ValueError, match="expected weight to be None or 1D tensor"):
        nn.MultiMarginLoss(weight=t(np.ones((1, 3))))
    with pytest.raises(RuntimeError, match="inconsistent weight size, expected 3"):
        F.multi_margin_loss(x, y, weight=t(np.ones(4)))
    with pytest.raises(RuntimeError, match="inconsistent target size, expected 2"):
        F.multi_margin_loss(x, idx([0, 1, 2]))
    with pytest.raises(RuntimeError, match="target out of range"):
        F.multi_margin_loss(x, idx([0, 3]))
    with pytest.raises(RuntimeError, match="Expected non-empty vector or matrix"):
        F.multi_margin_loss(t(np.zeros((2, 3, 1))), y)
    with pytest.raises(ValueError, match="bad is not a valid value for reduction"):
        F.multi_margin_loss(x, y, reduction="bad")


# ---------------------------------------------------------------------------- triplet w/ dist
def pairwise_np(a, b, p=2.0, eps=1e-6):
    return (np.abs(a - b + eps) ** p).sum(-1) ** (1 / p)


def triplet_np(a, p, n, dist=pairwise_np, margin=1.0, swap=False, reduction="mean"):
    a, p, n = (v.astype(np.float64) for v in (a, p, n))
    d_pos, d_neg = dist(a, p), dist(a, n)
    if swap:
        d_neg = np.minimum(d_neg, dist(p, n))
    return reduce_np(np.maximum(margin + d_pos - d_neg, 0), reduction)


def l1_dist(a, b):
    return (a - b).abs().sum(-1)


def l1_dist_np(a, b):
    return np.abs(a - b).sum(-1)


@pytest.mark.parametrize("ft_dtype,np_dtype", FLOATS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("shape", [(6,), (5, 4), (2, 3, 4)])
@pytest.mark.parametrize("custom", [False, True])
def test_triplet_margin_with_distance_loss(ft_dtype, np_dtype, reduction, swap, shape, custom):
    a, p, n = (RNG.standard_normal(shape).astype(np_dtype) for _ in range(3))
    dist, dist_np = (l1_dist, l1_dist_np) if custom else (None, pairwise_np)
    want = triplet_np(a, p, n, dist_np, 1.5, swap, reduction)
    got = F.triplet_margin_with_distance_loss(t(a, np_dtype), t(p, np_dtype), t(n, np_dtype),
                                              distance_function=dist, margin=1.5, swap=swap,
                                              reduction=reduction)
    check(got, want, np_dtype)
    mod = nn.TripletMarginWithDistanceLoss(distance_function=dist, margin=1.5, swap=swap,
                                           reduction=reduction)
    check(mod(t(a, np_dtype), t(p, np_dtype), t(n, np_dtype)), want, np_dtype)


def test_triplet_margin_with_distance_loss_matches_triplet_margin_loss():
    a, p, n = (t(RNG.standard_normal((5, 4))) for _ in range(3))
    np.testing.assert_allclose(npy(F.triplet_margin_with_distance_loss(a, p, n, swap=True)),
                               npy(F.triplet_margin_loss(a, p, n, swap=True)), rtol=1e-12)


@pytest.mark.parametrize("swap", [False, True])
def test_triplet_margin_with_distance_loss_gradcheck(swap):
    a, p, n = (t(RNG.standard_normal((4, 3)), grad=True) for _ in range(3))
    assert gradcheck(lambda x, y, z: F.triplet_margin_with_distance_loss(
        x, y, z, margin=2.0, swap=swap), (a, p, n))
    assert gradcheck(lambda x, y, z: F.triplet_margin_with_distance_loss(
        x, y, z, distance_function=lambda u, v: 1 - F.cosine_similarity(u, v), margin=0.5,
        swap=swap, reduction="sum"), (a, p, n))


def test_triplet_margin_with_distance_loss_errors():
    a = t(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="margin must be greater than 0, got 0"):
        F.triplet_margin_with_distance_loss(a, a, a, margin=0)
    with pytest.raises(ValueError, match="expected margin to be greater than 0, got -1.0"):
        nn.TripletMarginWithDistanceLoss(margin=-1.0)
    with pytest.raises(RuntimeError, match="anchor 2D, positive 1D, and negative 2D"):
        F.triplet_margin_with_distance_loss(a, t(np.zeros(3)), a)
    with pytest.raises(ValueError, match="bad is not a valid value for reduction"):
        F.triplet_margin_with_distance_loss(a, a, a, reduction="bad")


def test_losses_are_exported():
    for name in ["poisson_nll_loss", "gaussian_nll_loss", "hinge_embedding_loss",
                 "soft_margin_loss", "multilabel_soft_margin_loss", "multilabel_margin_loss",
                 "multi_margin_loss", "triplet_margin_with_distance_loss"]:
        assert name in F.__all__ and callable(getattr(F, name))
    for name in ["PoissonNLLLoss", "GaussianNLLLoss", "HingeEmbeddingLoss", "SoftMarginLoss",
                 "MultiLabelSoftMarginLoss", "MultiLabelMarginLoss", "MultiMarginLoss",
                 "TripletMarginWithDistanceLoss"]:
        assert issubclass(getattr(nn, name), nn.Module)
