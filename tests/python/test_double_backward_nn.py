"""Double backward (create_graph=True) through the fused nn kernels: convolutions, batch /
layer / group / RMS norm and cross entropy. Second derivatives are checked against finite
differences of the first (gradgradcheck, float64); a WGAN-GP step checks the use case."""

import numpy as np
import pytest

import ferrotorch as ft
import ferrotorch.nn.functional as F
from ferrotorch import nn
from ferrotorch.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(4321)


def t(shape, grad=True, scale=1.0):
    x = ft.from_numpy(RNG.standard_normal(shape) * scale)
    return x.requires_grad_() if grad else x


def npy(x):
    return x.detach().numpy()


# ----------------------------------------------------------------------------- convolutions

CONV2D = [
    dict(),
    dict(stride=2, padding=1),
    dict(padding=(1, 0), dilation=(1, 2)),
    dict(groups=2, stride=(1, 2)),
    dict(padding="same"),
]


@pytest.mark.parametrize("kw", CONV2D, ids=[str(k) for k in CONV2D])
def test_conv2d_gradgrad(kw):
    x, w, b = t((2, 4, 5, 6)), t((6, 4 // kw.get("groups", 1), 3, 2)), t((6,))
    assert gradgradcheck(lambda x, w, b: F.conv2d(x, w, b, **kw), (x, w, b))


def test_conv1d_and_unbatched_gradgrad():
    x, w, b = t((2, 3, 7)), t((4, 3, 3)), t((4,))
    assert gradgradcheck(lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1), (x, w, b))
    xu = t((3, 5, 4))
    assert gradgradcheck(lambda x, w: F.conv2d(x, w, padding=1), (xu, t((2, 3, 2, 2))))


@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1, output_padding=1),
                                dict(groups=2, dilation=2)])
def test_conv_transpose2d_gradgrad(kw):
    x, w, b = t((2, 4, 3, 4)), t((4, 3, 2, 3)), t((3 * kw.get("groups", 1),))
    assert gradgradcheck(lambda x, w, b: F.conv_transpose2d(x, w, b, **kw), (x, w, b))


def test_conv3d_gradgrad():
    x, w = t((1, 2, 3, 4, 3)), t((2, 2, 2, 2, 2))
    assert gradgradcheck(lambda x, w: F.conv3d(x, w, padding=1), (x, w))


def test_conv_third_order():
    """The double-backward ops are themselves differentiable (any order)."""
    w = t((3, 2, 2, 2))

    def first(x):
        (g,) = ft.autograd.grad((F.conv2d(x, w) ** 2).sum(), x, create_graph=True)
        return g

    assert gradgradcheck(first, (t((1, 2, 4, 4)),))


def test_conv_graph_names_and_first_order_unchanged():
    x, w = t((2, 3, 5, 5)), t((4, 3, 3, 3))
    y = F.conv2d(x, w)
    gx, gw = ft.autograd.grad(y.sum() * 1.0, (x, w), create_graph=True)
    assert gx.grad_fn.name() == "ConvolutionBackwardBackward0"
    assert gw.grad_fn.name() == "ConvolutionBackwardBackward0"
    # Without create_graph the raw kernels run and the gradients carry no history, with
    # the same values.
    gx0, gw0 = ft.autograd.grad(F.conv2d(x, w).sum(), (x, w))
    assert gx0.grad_fn is None and not gx0.requires_grad
    np.testing.assert_allclose(npy(gx0), npy(gx), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(npy(gw0), npy(gw), rtol=1e-12, atol=1e-12)


# ----------------------------------------------------------------------------- norms

def test_layer_norm_gradgrad():
    x, w, b = t((3, 4, 5)), t((4, 5)), t((4, 5))
    assert gradgradcheck(lambda x, w, b: F.layer_norm(x, (4, 5), w, b), (x, w, b))
    assert gradgradcheck(lambda x: F.layer_norm(x, (5,)), (t((2, 5)),))


def test_rms_norm_gradgrad():
    x, w = t((3, 6)), t((6,))
    assert gradgradcheck(lambda x, w: F.rms_norm(x, (6,), w, eps=1e-5), (x, w))


@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 5), (2, 3, 2, 3)])
def test_batch_norm_train_gradgrad(shape):
    x, w, b = t(shape), t((3,)), t((3,))
    assert gradgradcheck(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
                         (x, w, b))


def test_batch_norm_eval_gradgrad():
    rm = ft.from_numpy(RNG.standard_normal(3))
    rv = ft.from_numpy(RNG.uniform(0.5, 2.0, 3))
    x, w, b = t((4, 3, 5)), t((3,)), t((3,))
    assert gradgradcheck(lambda x, w, b: F.batch_norm(x, rm, rv, w, b, training=False),
                         (x, w, b))


def test_group_and_instance_norm_gradgrad():
    x, w, b = t((2, 6, 4)), t((6,)), t((6,))
    assert gradgradcheck(lambda x, w, b: F.group_norm(x, 3, w, b), (x, w, b))
    assert gradgradcheck(lambda x: F.group_norm(x, 2), (t((2, 4, 2, 3)),))
    assert gradgradcheck(lambda x: F.instance_norm(x), (t((2, 3, 5)),))


def test_norm_modules_second_order_nonzero():
    """Before double backward worked the Hessian-vector product came back as zero."""
    m = nn.LayerNorm(5).double()
    x = t((4, 5))
    (g,) = ft.autograd.grad((m(x) ** 3).sum(), x, create_graph=True)
    (h,) = ft.autograd.grad((g ** 2).sum(), x)
    assert np.abs(npy(h)).max() > 1e-3


# ----------------------------------------------------------------------------- cross entropy

CE = [
    dict(),
    dict(reduction="sum"),
    dict(reduction="none"),
    dict(label_smoothing=0.2),
    dict(ignore_index=1),
    dict(weight=True, label_smoothing=0.1),
    dict(weight=True, ignore_index=2, reduction="mean"),
]


@pytest.mark.parametrize("kw", CE, ids=[str(k) for k in CE])
def test_cross_entropy_gradgrad(kw):
    kw = dict(kw)
    if kw.pop("weight", False):
        kw["weight"] = ft.from_numpy(RNG.uniform(0.5, 2.0, 4))
    x = t((5, 4))
    target = ft.from_numpy(np.array([0, 1, 3, 2, 1]))
    assert gradgradcheck(lambda x: F.cross_entropy(x, target, **kw), (x,))


def test_cross_entropy_spatial_and_unbatched_gradgrad():
    x = t((2, 3, 4))
    target = ft.from_numpy(np.array([[0, 2, 1, 1], [2, 2, 0, 1]]))
    assert gradgradcheck(lambda x: F.cross_entropy(x, target, label_smoothing=0.3), (x,))
    xu = t((4,))
    assert gradgradcheck(lambda x: F.cross_entropy(x, ft.tensor(2)), (xu,))


def test_cross_entropy_create_graph_matches_first_order():
    x = t((6, 5))
    target = ft.from_numpy(np.array([0, 4, 3, 1, 1, 2]))
    kw = dict(weight=ft.from_numpy(RNG.uniform(0.5, 2.0, 5)), label_smoothing=0.25,
              ignore_index=3)
    (g1,) = ft.autograd.grad(F.cross_entropy(x, target, **kw), x, create_graph=True)
    (g0,) = ft.autograd.grad(F.cross_entropy(x, target, **kw), x)
    assert g1.requires_grad and g0.grad_fn is None
    np.testing.assert_allclose(npy(g1), npy(g0), rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(npy(g1)[2], 0.0)  # the ignored row


# ----------------------------------------------------------------------------- use case

def test_wgan_gp_step_matches_finite_differences():
    """A WGAN-GP critic (conv + layer norm + linear): the gradient penalty's gradient
    w.r.t. the critic's parameters is checked against finite differences."""
    ft.manual_seed(0)
    critic = nn.Sequential(nn.Conv2d(1, 3, 3, padding=1), nn.GroupNorm(3, 3), nn.LeakyReLU(0.2),
                           nn.Flatten(), nn.LayerNorm(3 * 4 * 4), nn.Linear(3 * 4 * 4, 1)).double()
    real = t((2, 1, 4, 4), grad=False)
    fake = t((2, 1, 4, 4), grad=False)
    alpha = ft.from_numpy(RNG.uniform(size=(2, 1, 1, 1)))
    params = list(critic.parameters())

    def penalty(*ps):
        inter = (alpha * real + (1 - alpha) * fake).requires_grad_()
        # Functional evaluation so that ps are the differentiated inputs.
        h = F.conv2d(inter, ps[0], ps[1], padding=1)
        h = F.group_norm(h, 3, ps[2], ps[3])
        h = F.leaky_relu(h, 0.2).flatten(1)
        h = F.layer_norm(h, (48,), ps[4], ps[5])
        out = F.linear(h, ps[6], ps[7])
        (g,) = ft.autograd.grad(out.sum(), inter, create_graph=True)
        return ((g.flatten(1).norm(dim=1) - 1) ** 2).mean()

    ps = tuple(p.detach().clone().requires_grad_() for p in params)
    assert gradcheck(penalty, ps)
    # And a real optimisation step through the module API changes every parameter.
    opt = ft.optim.Adam(critic.parameters(), lr=1e-2)
    inter = (alpha * real + (1 - alpha) * fake).requires_grad_()
    (g,) = ft.autograd.grad(critic(inter).sum(), inter, create_graph=True)
    gp = ((g.flatten(1).norm(dim=1) - 1) ** 2).mean()
    loss = critic(fake).mean() - critic(real).mean() + 10 * gp
    before = [npy(p).copy() for p in critic.parameters()]
    opt.zero_grad()
    loss.backward()
    for p in critic.parameters():
        assert p.grad is not None
    # The conv bias (cancelled by the per-channel group norm) and the biases after the last
    # normalisation (they shift both critic scores alike; the penalty does not see them) get
    # zero gradients, as in PyTorch; everything else learns.
    learning = (0, 2, 3, 4, 6)
    for i in learning:
        assert np.abs(npy(params[i].grad)).max() > 1e-6, i
    np.testing.assert_allclose(npy(params[1].grad), 0.0, atol=1e-12)
    opt.step()
    for i in learning:
        assert not np.allclose(before[i], npy(params[i])), i
