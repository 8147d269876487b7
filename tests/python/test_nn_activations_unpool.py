"""hardshrink / softshrink / rrelu / Softmax2d, the in-place functional activations,
max_unpool1d/2d/3d, channel_shuffle and pdist vs NumPy references (float32 and float64),
with float64 gradchecks and PyTorch's errors."""

import numpy as np
import pytest

import ferrotorch as ft
import ferrotorch.nn.functional as F
from ferrotorch import nn
from ferrotorch.autograd import gradcheck

RNG = np.random.default_rng(4321)
FLOATS = [(ft.float32, np.float32), (ft.float64, np.float64)]
TOL = {np.float32: dict(rtol=2e-5, atol=2e-6), np.float64: dict(rtol=1e-10, atol=1e-12)}


def t(a, dtype=np.float64, grad=False):
    x = ft.from_numpy(np.array(a, dtype=dtype, order="C"))
    return x.requires_grad_() if grad else x


def idx(a):
    return ft.from_numpy(np.array(a, dtype=np.int64, order="C"))


def npy(x):
    return x.detach().numpy()


def check(got, want, np_dtype):
    got = npy(got)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == np_dtype
    np.testing.assert_allclose(got.astype(np.float64), want, **TOL[np_dtype])


def away_from(x, points, gap=1e-3):
    """Nudge entries of ``x`` off the kinks at ``points`` (for finite differences)."""
    x = x.copy()
    for p in points:
        near = np.abs(x - p) < gap
        x[near] += 10 * gap
    return x


# ---------------------------------------------------------------------------- shrink
def hardshrink_np(x, lambd):
    return np.where(np.abs(x) > lambd, x, 0)


def softshrink_np(x, lambd):
    return np.where(x > lambd, x - lambd, np.where(x < -lambd, x + lambd, 0))


@pytest.mark.parametrize("ft_dtype,np_dtype", FLOATS)
@pytest.mark.parametrize("shape", [(), (7,), (3, 4), (2, 3, 4)])
@pytest.mark.parametrize("lambd", [0.5, 0.0, 1.3])
def test_shrink_values(ft_dtype, np_dtype, shape, lambd):
    x = (RNG.standard_normal(shape) * 2).astype(np_dtype)
    if x.size >= 3:
        x.flat[0], x.flat[1], x.flat[2] = lambd, -lambd, 0.0  # exactly on the thresholds
    check(F.hardshrink(t(x, np_dtype), lambd), hardshrink_np(x, lambd), np_dtype)
    check(F.softshrink(t(x, np_dtype), lambd), softshrink_np(x, lambd), np_dtype)
    check(nn.Hardshrink(lambd)(t(x, np_dtype)), hardshrink_np(x, lambd), np_dtype)
    check(nn.Softshrink(lambd)(t(x, np_dtype)), softshrink_np(x, lambd), np_dtype)


def test_shrink_gradients():
    x = away_from(RNG.standard_normal((3, 5)) * 2, [0.5, -0.5])
    xt = t(x, grad=True)
    assert gradcheck(lambda a: F.hardshrink(a, 0.5), (xt,))
    assert gradcheck(lambda a: F.softshrink(a, 0.5), (xt,))
    # On the thresholds the gradient is 0, as PyTorch's backward (|x| <= lambd -> 0).
    xb = t([0.5, -0.5, 0.7, -0.2], grad=True)
    F.softshrink(xb, 0.5).sum().backward()
    np.testing.assert_array_equal(npy(xb.grad), [0.0, 0.0, 1.0, 0.0])
    xb = t([0.5, -0.5, 0.7, -0.2], grad=True)
    F.hardshrink(xb, 0.5).sum().backward()
    np.testing.assert_array_equal(npy(xb.grad), [0.0, 0.0, 1.0, 0.0])


def test_shrink_errors_and_repr():
    with pytest.raises(RuntimeError, match=r"lambda must be in range \[0, 1.79769e\+308\] for "
                                           "input dtype Double, but found -0.5"):
        F.softshrink(t([1.0]), -0.5)
    assert repr(nn.Softshrink(0.25)) == "Softshrink(0.25)"
    assert repr(nn.Hardshrink()) == "Hardshrink(0.5)"


# ---------------------------------------------------------------------------- rrelu
@pytest.mark.parametrize("ft_dtype,np_dtype", FLOATS)
def test_rrelu_eval_is_leaky_relu_with_mean_slope(ft_dtype, np_dtype):
    x = RNG.standard_normal((4, 5)).astype(np_dtype)
    slope = (0.1 + 0.3) / 2
    want = np.where(x >= 0, x, slope * x.astype(np.float64))
    check(F.rrelu(t(x, np_dtype), 0.1, 0.3), want, np_dtype)
    check(F.rrelu(t(x, np_dtype), 0.1, 0.3, training=False), want, np_dtype)
    m = nn.RReLU(0.1, 0.3).eval()
    check(m(t(x, np_dtype)), want, np_dtype)
    check(F.rrelu(t(x, np_dtype)), np.where(x >= 0, x, (1 / 8 + 1 / 3) / 2 * x), np_dtype)


@pytest.mark.parametrize("ft_dtype,np_dtype", FLOATS)
def test_rrelu_training_draws_seeded_slopes_in_range(ft_dtype, np_dtype):
    x = RNG.standard_normal((6, 50)).astype(np_dtype)
    lower, upper = 0.2, 0.45
    ft.manual_seed(11)
    xt = t(x, np_dtype, grad=True)
    out = F.rrelu(xt, lower, upper, training=True)
    y = npy(out)
    pos = x > 0
    np.testing.assert_array_equal(y[pos], x[pos])
    slopes = y[~pos] / x[~pos]
    tol = 1e-6 if np_dtype == np.float32 else 1e-12
    assert slopes.min() >= lower - tol and slopes.max() <= upper + tol
    assert np.unique(np.round(slopes, 5)).size > 10  # one draw per element, not one slope
    # The gradient is the slope that was drawn (1 on the positive side).
    out.sum().backward()
    g = npy(xt.grad)
    np.testing.assert_array_equal(g[pos], 1.0)
    np.testing.assert_allclose(g[~pos], slopes, rtol=1e-5 if np_dtype == np.float32 else 1e-12)
    # The same seed gives the same slopes; the module uses them in training mode.
    ft.manual_seed(11)
    np.testing.assert_array_equal(npy(F.rrelu(t(x, np_dtype), lower, upper, training=True)), y)
    ft.manual_seed(11)
    m = nn.RReLU(lower, upper).train()
    np.testing.assert_array_equal(npy(m(t(x, np_dtype))), y)


def test_rrelu_inplace_and_errors():
    x = RNG.standard_normal(20)
    xt = t(x)
    res = F.rrelu_(xt, 0.1, 0.3)
    assert res is xt
    np.testing.assert_allclose(npy(xt), np.where(x >= 0, x, 0.2 * x), rtol=1e-12)
    ft.manual_seed(3)
    xt = t(x)
    F.rrelu(xt, training=True, inplace=True)
    assert (npy(xt)[x < 0] != x[x < 0]).all()
    with pytest.raises(RuntimeError, match="Lower bound should be less than or equal to the "
                                           "upper bound"):
        F.rrelu(t(x), 0.5, 0.1)
    assert repr(nn.RReLU(0.1, 0.3, inplace=True)) == "RReLU(lower=0.1, upper=0.3, inplace=True)"


def test_rrelu_gradcheck_eval():
    x = away_from(RNG.standard_normal((3, 4)), [0.0])
    assert gradcheck(lambda a: F.rrelu(a, 0.1, 0.4), (t(x, grad=True),))


# ---------------------------------------------------------------------------- in-place forms
INPLACE = [
    ("threshold_", lambda x: F.threshold_(x, 0.3, -2.0),
     lambda x: np.where(x > 0.3, x, -2.0)),
    ("hardtanh_", lambda x: F.hardtanh_(x, -0.5, 0.8), lambda x: np.clip(x, -0.5, 0.8)),
    ("elu_", lambda x: F.elu_(x, 0.7), lambda x: np.where(x > 0, x, 0.7 * np.expm1(x))),
    ("selu_", F.selu_, lambda x: 1.0507009873554805 * np.where(
        x > 0, x, 1.6732632423543772 * np.expm1(x))),
    ("celu_", lambda x: F.celu_(x, 1.5), lambda x: np.where(x > 0, x, 1.5 * np.expm1(x / 1.5))),
    ("leaky_relu_", lambda x: F.leaky_relu_(x, 0.2), lambda x: np.where(x >= 0, x, 0.2 * x)),
    ("rrelu_", lambda x: F.rrelu_(x, 0.1, 0.3), lambda x: np.where(x >= 0, x, 0.2 * x)),
]


@pytest.mark.parametrize("name,fn,ref", INPLACE, ids=[n for n, _, _ in INPLACE])
@pytest.mark.parametrize("ft_dtype,np_dtype", FLOATS)
def test_inplace_functional_forms(name, fn, ref, ft_dtype, np_dtype):
    assert name in F.__all__
    x = away_from((RNG.standard_normal((3, 4)) * 2).astype(np_dtype), [0.0, 0.3, -0.5, 0.8])
    xt = t(x, np_dtype)
    res = fn(xt)
    assert res is xt  # written in place
    check(xt, ref(x.astype(np.float64)), np_dtype)


@pytest.mark.parametrize("name,fn,ref", INPLACE, ids=[n for n, _, _ in INPLACE])
def test_inplace_functional_forms_autograd(name, fn, ref):
    # In place on a non-leaf that requires grad: the gradient flows back to the leaf.
    x = away_from(RNG.standard_normal((3, 4)) * 2, [0.0, 0.3, -0.5, 0.8])
    assert gradcheck(lambda a: fn(a * 1.0), (t(x, grad=True),))
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        fn(t(x, grad=True))


# ---------------------------------------------------------------------------- Softmax2d
@pytest.mark.parametrize("ft_dtype,np_dtype", FLOATS)
@pytest.mark.parametrize("shape", [(3, 4, 5), (2, 3, 4, 5)])
def test_softmax2d(ft_dtype, np_dtype, shape):
    x = RNG.standard_normal(shape).astype(np_dtype)
    e = np.exp(x.astype(np.float64) - x.max(-3, keepdims=True))
    check(nn.Softmax2d()(t(x, np_dtype)), e / e.sum(-3, keepdims=True), np_dtype)


def test_softmax2d_gradcheck_and_errors():
    assert gradcheck(lambda a: nn.Softmax2d()(a), (t(RNG.standard_normal((2, 3, 2, 2)),
                                                    grad=True),))
    with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D, got 2D "
                                         "instead"):
        nn.Softmax2d()(t(np.zeros((3, 4))))


# ---------------------------------------------------------------------------- max_unpool
def unpool_np(vals, indices, out_spatial):
    n = len(out_spatial)
    lead = vals.shape[:-n]
    v = vals.reshape(-1, int(np.prod(vals.shape[-n:])))
    ix = indices.reshape(v.shape)
    out = np.zeros((v.shape[0], int(np.prod(out_spatial))), dtype=np.float64)
    for r in range(v.shape[0]):
        out[r, ix[r]] = v[r]
    return out.reshape(*lead, *out_spatial)


POOL_CASES = [
    # (dims, input shape, kernel, stride, padding, output_size)
    (1, (2, 3, 8), 2, None, 0, None),
    (1, (3, 9), 3, 2, 1, None),             # unbatched, overlapping windows
    (1, (2, 2, 9), 2, None, 0, [9]),        # the odd tail restored by output_size
    (2, (2, 3, 6, 6), 2, None, 0, None),
    (2, (3, 7, 5), (3, 2), (2, 1), (1, 0), None),
    (2, (1, 2, 5, 5), 2, None, 0, (1, 2, 5, 5)),  # output_size with the (N, C) prefix
    (3, (1, 2, 4, 4, 4), 2, None, 0, None),
    (3, (2, 5, 6, 4), (2, 3, 2), (2, 3, 2), 0, (5, 6, 5)),
]


def pool_and_unpool(dims, x, kernel, stride, padding, output_size):
    pool = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[dims]
    unpool = {1: F.max_unpool1d, 2: F.max_unpool2d, 3: F.max_unpool3d}[dims]
    vals, ind = pool(x, kernel, stride, padding, return_indices=True)
    return vals, ind, unpool(vals, ind, kernel, stride, padding, output_size)


@pytest.mark.parametrize("ft_dtype,np_dtype", FLOATS)
@pytest.mark.parametrize("case", POOL_CASES, ids=lambda c: f"{c[0]}d-{c[1]}")
def test_max_unpool_values(ft_dtype, np_dtype, case):
    dims, shape, kernel, stride, padding, output_size = case
    x = RNG.standard_normal(shape).astype(np_dtype)
    vals, ind, out = pool_and_unpool(dims, t(x, np_dtype), kernel, stride, padding,
                                     output_size)
    if output_size is None:
        k = kernel if isinstance(kernel, tuple) else (kernel,) * dims
        s = stride if stride is not None else k
        s = s if isinstance(s, tuple) else (s,) * dims
        p = padding if isinstance(padding, tuple) else (padding,) * dims
        vs = vals.shape[-dims:]
        out_spatial = tuple((vs[d] - 1) * s[d] + k[d] - 2 * p[d] for d in range(dims))
    else:
        out_spatial = tuple(output_size[-dims:])
    want = unpool_np(npy(vals).astype(np.float64), npy(ind), out_spatial)
    check(out, want, np_dtype)
    # Each kept value sits where it came from: unpool(pool(x)) agrees with x there.
    if out_spatial == tuple(shape[-dims:]):
        kept = want != 0
        np.testing.assert_array_equal(npy(out)[kept], x[kept])
    # The module gives the same result.
    mod = {1: nn.MaxUnpool1d, 2: nn.MaxUnpool2d, 3: nn.MaxUnpool3d}[dims](kernel, stride,
                                                                          padding)
    np.testing.assert_array_equal(npy(mod(vals, ind, output_size)), npy(out))


@pytest.mark.parametrize("case", POOL_CASES, ids=lambda c: f"{c[0]}d-{c[1]}")
def test_max_unpool_gradcheck(case):
    dims, shape, kernel, stride, padding, output_size = case
    x = RNG.standard_normal(shape)
    vals, ind, _ = pool_and_unpool(dims, t(x), kernel, stride, padding, output_size)
    unpool = {1: F.max_unpool1d, 2: F.max_unpool2d, 3: F.max_unpool3d}[dims]
    v = t(npy(vals), grad=True)
    flat = npy(ind).reshape(-1, int(np.prod(ind.shape[-dims:])))
    if all(np.unique(r).size == r.size for r in flat):
        assert gradcheck(lambda a: unpool(a, ind, kernel, stride, padding, output_size), (v,))
    else:
        # Overlapping windows picked one position twice: only one write survives, so finite
        # differences disagree; the backward is PyTorch's, a gather of the output gradient.
        out = unpool(v, ind, kernel, stride, padding, output_size)
        up = RNG.standard_normal(tuple(out.shape))
        out.backward(t(up))
        want = np.take_along_axis(up.reshape(flat.shape[0], -1), flat, 1)
        np.testing.assert_allclose(npy(v.grad).reshape(flat.shape), want, rtol=1e-12)


def test_max_unpool_explicit_values_and_repr():
    # The example of PyTorch's MaxUnpool2d documentation.
    x = t([[[[1.0, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12], [13, 14, 15, 16]]]])
    vals, ind = F.max_pool2d(x, 2, 2, return_indices=True)
    np.testing.assert_array_equal(npy(ind), [[[[5, 7], [13, 15]]]])
    np.testing.assert_array_equal(
        npy(nn.MaxUnpool2d(2, stride=2)(vals, ind)),
        [[[[0.0, 0, 0, 0], [0, 6, 0, 8], [0, 0, 0, 0], [0, 14, 0, 16]]]])
    out = nn.MaxUnpool2d(2, stride=2)(vals, ind, output_size=(1, 1, 5, 5))
    np.testing.assert_array_equal(
        npy(out), [[[[0.0, 0, 0, 0, 0], [6, 0, 8, 0, 0], [0, 0, 0, 14, 0], [16, 0, 0, 0, 0],
                     [0, 0, 0, 0, 0]]]])
    assert repr(nn.MaxUnpool1d(2)) == "MaxUnpool1d(kernel_size=(2,), stride=(2,), padding=(0,))"
    assert repr(nn.MaxUnpool3d(2, 1)) == ("MaxUnpool3d(kernel_size=(2, 2, 2), stride=(1, 1, 1), "
                                          "padding=(0, 0, 0))")


def test_max_unpool_errors():
    v = t(np.ones((1, 1, 2, 2)))
    i = idx(np.zeros((1, 1, 2, 2), np.int64))
    with pytest.raises(ValueError, match="output_size should be a sequence containing 2 or 4 "
                                         "elements, but it has a length of '3'"):
        F.max_unpool2d(v, i, 2, output_size=(1, 4, 4))
    with pytest.raises(ValueError, match=r"invalid output_size .*\(dim 0 must be between 2 "
                                         "and 6\\)"):
        F.max_unpool2d(v, i, 2, output_size=(6, 4))
    with pytest.raises(RuntimeError, match="elements in indices should be type int64 but got: "
                                           "Double"):
        F.max_unpool2d(v, t(np.zeros((1, 1, 2, 2))), 2)
    with pytest.raises(RuntimeError, match="Expected shape of indices to be same as that of the "
                                           "input tensor"):
        F.max_unpool2d(v, idx(np.zeros((1, 1, 2, 1), np.int64)), 2)
    with pytest.raises(RuntimeError, match="Found an invalid max index: 16 \\(output volumes "
                                           "are of size 4x4"):
        F.max_unpool2d(v, idx(np.full((1, 1, 2, 2), 16, np.int64)), 2)
    with pytest.raises(RuntimeError, match="Found an invalid max index: -1"):
        F.max_unpool1d(t(np.ones((1, 3))), idx([[0, -1, 2]]), 2)
    with pytest.raises(RuntimeError, match="Input to max_unpooling2d should be a 3d or 4d "
                                           "Tensor, but got a tensor with 2 dimensions"):
        F.max_unpool2d(t(np.ones((2, 2))), idx(np.zeros((2, 2), np.int64)), 2)
    with pytest.raises(RuntimeError, match="Input to max_unpooling3d should be a 4d or 5d "
                                           "Tensor, but got a tensor with 3 dimensions"):
        F.max_unpool3d(t(np.ones((2, 2, 2))), idx(np.zeros((2, 2, 2), np.int64)), 2)
    with pytest.raises(RuntimeError, match="elements in indices should be type int64"):
        F.max_unpool3d(t(np.ones((1, 2, 2, 2))), t(np.zeros((1, 2, 2, 2))), 2)
    with pytest.raises(RuntimeError, match="Expected input to have non-zero size for non-batch "
                                           "dimensions"):
        F.max_unpool2d(t(np.ones((1, 0, 2, 2))), idx(np.zeros((1, 0, 2, 2), np.int64)), 2)


# ---------------------------------------------------------------------------- channel_shuffle
def channel_shuffle_np(x, g):
    b, c = x.shape[:2]
    return x.reshape(b, g, c // g, *x.shape[2:]).swapaxes(1, 2).reshape(x.shape)


@pytest.mark.parametrize("ft_dtype,np_dtype", FLOATS)
@pytest.mark.parametrize("shape,groups", [((2, 6, 5), 3), ((2, 6, 3, 4), 2), ((1, 8, 2, 2, 3), 4),
                                          ((3, 4, 2), 1), ((2, 4, 3), 4), ((0, 6, 2), 3)])
def test_channel_shuffle(ft_dtype, np_dtype, shape, groups):
    x = RNG.standard_normal(shape).astype(np_dtype)
    want = channel_shuffle_np(x, groups)
    check(F.channel_shuffle(t(x, np_dtype), groups), want, np_dtype)
    check(F.native_channel_shuffle(t(x, np_dtype), groups), want, np_dtype)
    check(nn.ChannelShuffle(groups)(t(x, np_dtype)), want, np_dtype)


def test_channel_shuffle_explicit_gradcheck_and_errors():
    x = t(np.arange(4.0).reshape(1, 4, 1))
    np.testing.assert_array_equal(npy(F.channel_shuffle(x, 2)).ravel(), [0.0, 2.0, 1.0, 3.0])
    assert gradcheck(lambda a: F.channel_shuffle(a, 3),
                     (t(RNG.standard_normal((2, 6, 2, 2)), grad=True),))
    with pytest.raises(RuntimeError, match="channel_shuffle expects input to have at least 3 "
                                           "dimensions, but got input with sizes \\[2, 6\\]"):
        F.channel_shuffle(t(np.zeros((2, 6))), 2)
    with pytest.raises(RuntimeError, match="Number of groups to divide channels in must be "
                                           "positive. Value of groups:0"):
        F.channel_shuffle(t(np.zeros((2, 6, 1))), 0)
    with pytest.raises(RuntimeError, match="Number of channels must be divisible by groups. Got "
                                           "6 channels and 4 groups."):
        F.channel_shuffle(t(np.zeros((2, 6, 1))), 4)
    assert repr(nn.ChannelShuffle(3)) == "ChannelShuffle(groups=3)"


# ---------------------------------------------------------------------------- pdist
def pdist_np(x, p):
    n = x.shape[0]
    out = []
    for i in range(n):
        for j in range(i + 1, n):
            d = x[i].astype(np.float64) - x[j]
            if p == 0:
                out.append(float(np.count_nonzero(d)))
            elif np.isinf(p):
                out.append(np.abs(d).max())
            else:
                out.append((np.abs(d) ** p).sum() ** (1 / p))
    return np.array(out, dtype=np.float64)


P_VALUES = [0, 0.5, 1, 1.5, 2, 3, float("inf")]


@pytest.mark.parametrize("ft_dtype,np_dtype", FLOATS)
@pytest.mark.parametrize("p", P_VALUES)
@pytest.mark.parametrize("shape", [(5, 3), (2, 7), (1, 4), (0, 3), (6, 1)])
def test_pdist_values(ft_dtype, np_dtype, p, shape):
    x = RNG.standard_normal(shape).astype(np_dtype)
    if shape[0] >= 4:
        x[3] = x[1]  # a zero distance
    check(F.pdist(t(x, np_dtype), p), pdist_np(x, p), np_dtype)


def test_pdist_default_p_matches_pairwise_matrix():
    x = RNG.standard_normal((6, 4))
    d = np.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))
    np.testing.assert_allclose(npy(F.pdist(t(x))), d[np.triu_indices(6, 1)], rtol=1e-12)


@pytest.mark.parametrize("p", [0.5, 1, 1.5, 2, 3, float("inf")])
def test_pdist_gradcheck(p):
    x = t(RNG.standard_normal((5, 3)), grad=True)
    assert gradcheck(lambda a: F.pdist(a, p), (x,))


@pytest.mark.parametrize("p", [0, 0.5, 1, 1.5, 2, 3])
def test_pdist_zero_distance_has_zero_grad(p):
    # Duplicate rows: PyTorch's backward gives 0 where the distance is 0 (not nan).
    x = RNG.standard_normal((3, 4))
    x[2] = x[0]
    xt = t(x, grad=True)
    F.pdist(xt, p).sum().backward()
    g = npy(xt.grad)
    assert np.isfinite(g).all()
    if p == 0:
        np.testing.assert_array_equal(g, 0.0)
    else:
        # Only the (0, 1) and (1, 2) pairs contribute; pair (0, 2) adds nothing.
        x1 = np.delete(x, 2, 0)
        x1t = t(x1, grad=True)
        F.pdist(x1t, p).sum().backward()
        np.testing.assert_allclose(g[0], npy(x1t.grad)[0], rtol=1e-12)
        np.testing.assert_allclose(g[0] + g[2], 2 * npy(x1t.grad)[0], rtol=1e-12)


def test_pdist_errors():
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors, got: 3D"):
        F.pdist(t(np.zeros((2, 2, 2))))
    with pytest.raises(RuntimeError, match="pdist only supports floating-point dtypes"):
        F.pdist(idx(np.zeros((2, 2), np.int64)))
    with pytest.raises(RuntimeError, match="pdist only supports non-negative p values"):
        F.pdist(t(np.zeros((2, 2))), -1)


def test_exports():
    for name in ["hardshrink", "softshrink", "rrelu", "rrelu_", "threshold_", "hardtanh_",
                 "elu_", "selu_", "celu_", "leaky_relu_", "max_unpool1d", "max_unpool2d",
                 "max_unpool3d", "channel_shuffle", "pdist"]:
        assert name in F.__all__ and callable(getattr(F, name))
    for name in ["Hardshrink", "Softshrink", "RReLU", "Softmax2d", "MaxUnpool1d",
                 "MaxUnpool2d", "MaxUnpool3d", "ChannelShuffle"]:
        assert issubclass(getattr(nn, name), nn.Module)
