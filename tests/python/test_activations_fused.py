"""The fused activations (leaky_relu, elu / selu / celu, softplus, logsigmoid, hardsigmoid,
hardswish, prelu) against NumPy in float64, on every float dtype and layout; PyTorch's
gradient at the kinks (exactly 0, and the hard* breakpoints); gradcheck and gradgradcheck;
one autograd node saving one tensor; PyTorch's errors for integer inputs; and the same
numbers as PyTorch where it is installed."""

import math

import numpy as np
import pytest

import ferrotorch as ft
from ferrotorch.autograd import gradcheck, gradgradcheck
from ferrotorch.nn import functional as F

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _np_softplus(x, beta=1.0, threshold=20.0):
    bx = beta * x
    with np.errstate(over="ignore"):
        soft = np.log1p(np.exp(np.minimum(bx, threshold))) / beta
    return np.where(bx > threshold, x, soft)


def _np_elu(x, alpha=1.0, scale=1.0, input_scale=1.0):
    return scale * np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0) * input_scale))


# name -> (the call on module m: ferrotorch or torch, NumPy reference, autograd node)
CASES = {
    "leaky_relu": (lambda m, x: m.nn.functional.leaky_relu(x, 0.2),
                   lambda x: np.where(x > 0, x, 0.2 * x), "LeakyReluBackward0"),
    "elu": (lambda m, x: m.nn.functional.elu(x, 0.7), lambda x: _np_elu(x, 0.7),
            "EluBackward0"),
    "selu": (lambda m, x: m.nn.functional.selu(x),
             lambda x: _np_elu(x, SELU_ALPHA, SELU_SCALE), "EluBackward0"),
    "celu": (lambda m, x: m.nn.functional.celu(x, 1.5),
             lambda x: _np_elu(x, 1.5, 1.0, 1 / 1.5), "CeluBackward0"),
    "softplus": (lambda m, x: m.nn.functional.softplus(x), _np_softplus, "SoftplusBackward0"),
    "softplus_beta": (lambda m, x: m.nn.functional.softplus(x, beta=2.0, threshold=3.0),
                      lambda x: _np_softplus(x, 2.0, 3.0), "SoftplusBackward0"),
    "logsigmoid": (lambda m, x: m.nn.functional.logsigmoid(x),
                   lambda x: -_np_softplus(-x), "LogSigmoidBackward0"),
    "hardsigmoid": (lambda m, x: m.nn.functional.hardsigmoid(x),
                    lambda x: np.clip(x / 6 + 0.5, 0, 1), "HardsigmoidBackward0"),
    "hardswish": (lambda m, x: m.nn.functional.hardswish(x),
                  lambda x: x * np.clip(x / 6 + 0.5, 0, 1), "HardswishBackward0"),
}

# PyTorch's gradient at the kinks (read off PyTorch 2.15).
KINKS = np.array([0.0, -0.0, -3.0, 3.0, 1.5, -1.0])
KINK_GRADS = {
    "leaky_relu": [0.2, 0.2, 0.2, 1.0, 1.0, 0.2],
    "elu": [0.7, 0.7, 0.7 * math.exp(-3), 1.0, 1.0, 0.7 * math.exp(-1)],
    "selu": [SELU_SCALE * SELU_ALPHA, SELU_SCALE * SELU_ALPHA,
             SELU_SCALE * SELU_ALPHA * math.exp(-3), SELU_SCALE, SELU_SCALE,
             SELU_SCALE * SELU_ALPHA * math.exp(-1)],
    "celu": [1.0, 1.0, math.exp(-2), 1.0, 1.0, math.exp(-1 / 1.5)],
    "softplus": [0.5, 0.5, 1 / (1 + math.exp(3)), 1 / (1 + math.exp(-3)),
                 1 / (1 + math.exp(-1.5)), 1 / (1 + math.exp(1))],
    # (beta * 1.5 == threshold: still the soft branch, the test is strict)
    "softplus_beta": [0.5, 0.5, 1 / (1 + math.exp(6)), 1.0, 1 / (1 + math.exp(-3)),
                      1 / (1 + math.exp(2))],
    "logsigmoid": [0.5, 0.5, 1 / (1 + math.exp(-3)), 1 / (1 + math.exp(3)),
                   1 / (1 + math.exp(1.5)), 1 / (1 + math.exp(-1))],
    "hardsigmoid": [1 / 6, 1 / 6, 0.0, 0.0, 1 / 6, 1 / 6],
    "hardswish": [0.5, 0.5, 0.0, 1.0, 1.0, 1 / 6],
}


def _rand(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape) * 4


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("dtype,tol", [(ft.float64, 1e-13), (ft.float32, 2e-6),
                                       (ft.float16, 2e-3), (ft.bfloat16, 1.6e-2)])
def test_values_against_numpy(name, dtype, tol):
    f, ref, _ = CASES[name]
    x = _rand((5, 7))
    x[0, :6] = KINKS
    xt = ft.tensor(x).to(dtype)
    xs = xt.to(ft.float64).numpy()  # the inputs as the dtype holds them
    got = f(ft, xt)
    assert got.dtype == dtype and tuple(got.shape) == (5, 7)
    np.testing.assert_allclose(got.to(ft.float64).numpy(), ref(xs), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", list(CASES))
def test_layouts_empty_and_0d(name):
    f, ref, _ = CASES[name]
    x = _rand((6, 8), seed=1)
    xt = ft.tensor(x)
    # transposed and stepped views
    np.testing.assert_allclose(f(ft, xt.t()).numpy(), ref(x.T), rtol=1e-13)
    np.testing.assert_allclose(f(ft, xt[::2, 1::3]).numpy(), ref(x[::2, 1::3]), rtol=1e-13)
    # expanded (stride 0)
    row = ft.tensor(x[0])
    np.testing.assert_allclose(f(ft, row.expand(3, 8)).numpy(), ref(np.broadcast_to(x[0], (3, 8))),
                               rtol=1e-13)
    assert tuple(f(ft, ft.zeros(0, 3)).shape) == (0, 3)
    z = f(ft, ft.tensor(-1.25, dtype=ft.float64))
    assert z.ndim == 0
    np.testing.assert_allclose(z.item(), ref(np.array(-1.25)), rtol=1e-13)
    # special values
    sp = np.array([np.nan, np.inf, -np.inf, 1e300, -1e300, 1e-310])
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(f(ft, ft.tensor(sp)).numpy(), ref(sp), rtol=1e-13)


@pytest.mark.parametrize("name", list(CASES))
def test_gradients_at_the_kinks(name):
    f, _, node = CASES[name]
    x = ft.tensor(KINKS, requires_grad=True)
    y = f(ft, x)
    assert y.grad_fn.name() == node
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), KINK_GRADS[name], rtol=1e-14, atol=1e-300)


@pytest.mark.parametrize("name", list(CASES))
def test_gradcheck_and_gradgradcheck(name):
    f, _, _ = CASES[name]
    # away from the kinks, where finite differences are meaningful
    x = ft.tensor([-5.3, -2.2, -0.7, 0.4, 1.1, 2.6, 4.8, 25.0], dtype=ft.float64,
                  requires_grad=True)
    assert gradcheck(lambda t: f(ft, t), (x,))
    assert gradgradcheck(lambda t: f(ft, t), (x,))


@pytest.mark.parametrize("name", list(CASES))
def test_one_tensor_is_saved(name):
    f, _, _ = CASES[name]
    saved = []
    x = ft.tensor([1.0, -2.0], requires_grad=True)
    with ft.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        f(ft, x)
    assert len(saved) == 1 and saved[0].shape == (2,)


@pytest.mark.parametrize("name,op", [
    ("leaky_relu", "leaky_relu_cpu"), ("elu", "elu_cpu"), ("selu", "elu_cpu"),
    ("celu", "elu_cpu"), ("softplus", "softplus_cpu"), ("logsigmoid", "log_sigmoid_cpu"),
    ("hardsigmoid", "hardsigmoid_cpu"), ("hardswish", "hardswish_cpu")])
def test_integer_inputs_are_refused(name, op):
    with pytest.raises(NotImplementedError, match=f'"{op}" not implemented for \'Long\''):
        getattr(F, name)(ft.tensor([1, -2]))


@pytest.mark.parametrize("name", ["leaky_relu", "elu", "selu", "celu", "hardsigmoid",
                                  "hardswish"])
def test_inplace_forms(name):
    x = ft.tensor(_rand((3, 4), seed=3))
    expect = getattr(F, name)(x)
    y = x.clone()
    assert getattr(F, name)(y, inplace=True) is y
    np.testing.assert_array_equal(y.numpy(), expect.numpy())


def test_prelu_gradient_at_zero_is_the_weight():
    x = ft.tensor([[0.0, -1.0, 2.0]], requires_grad=True)
    w = ft.tensor([0.25], requires_grad=True)
    y = F.prelu(x, w)
    assert y.tolist() == [[0.0, -0.25, 2.0]]
    y.sum().backward()
    assert x.grad.tolist() == [[0.25, 0.25, 1.0]]
    assert w.grad.tolist() == [-1.0]


def test_modules_use_the_fused_ops():
    x = ft.tensor([0.0, -1.0], requires_grad=True)
    for mod, node in [(ft.nn.LeakyReLU(), "LeakyReluBackward0"), (ft.nn.ELU(), "EluBackward0"),
                      (ft.nn.SELU(), "EluBackward0"), (ft.nn.CELU(), "CeluBackward0"),
                      (ft.nn.Softplus(), "SoftplusBackward0"),
                      (ft.nn.LogSigmoid(), "LogSigmoidBackward0"),
                      (ft.nn.Hardsigmoid(), "HardsigmoidBackward0"),
                      (ft.nn.Hardswish(), "HardswishBackward0")]:
        assert mod(x).grad_fn.name() == node, mod


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name):
    torch = pytest.importorskip("torch")
    f, _, node = CASES[name]
    x = np.concatenate([_rand(200, seed=4), KINKS, [30.0, -30.0]])
    for dt, tol in [(np.float64, 1e-13), (np.float32, 3e-6)]:
        fx = ft.from_numpy(x.astype(dt)).requires_grad_()
        tx = torch.from_numpy(x.astype(dt)).requires_grad_()
        fy, ty = f(ft, fx), f(torch, tx)
        assert ty.grad_fn.name() == node
        np.testing.assert_allclose(fy.detach().numpy(), ty.detach().numpy(), rtol=tol,
                                   atol=tol)
        g = np.random.default_rng(5).standard_normal(x.shape).astype(dt)
        fy.backward(ft.from_numpy(g))
        ty.backward(torch.from_numpy(g))
        # (PyTorch's float64 hardsigmoid backward multiplies by 1/6 rounded to float32)
        gtol = 1e-7 if name == "hardsigmoid" else tol
        np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=gtol, atol=gtol)


@pytest.mark.cuda
@pytest.mark.skipif(not ft.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("name", list(CASES))
def test_cuda_matches_cpu(name):
    f, _, node = CASES[name]
    x = np.concatenate([_rand(64, seed=6), KINKS, [30.0, -30.0]])
    for dtype, tol in [(ft.float64, 1e-12), (ft.float32, 2e-6)]:
        c = ft.tensor(x, dtype=dtype, requires_grad=True)
        g = ft.tensor(x, dtype=dtype, device="cuda", requires_grad=True)
        yc, yg = f(ft, c), f(ft, g)
        assert yg.device.type == "cuda" and yg.grad_fn.name() == node
        np.testing.assert_allclose(yg.detach().cpu().numpy(), yc.detach().numpy(), rtol=tol,
                                   atol=tol)
        yc.sum().backward()
        yg.sum().backward()
        np.testing.assert_allclose(g.grad.cpu().numpy(), c.grad.numpy(), rtol=tol, atol=tol)
    with pytest.raises(NotImplementedError, match="_cuda\" not implemented"):
        f(ft, ft.ones(2, dtype=ft.int64, device="cuda"))


@pytest.mark.parametrize("name", ["leaky_relu", "hardsigmoid"])
def test_double_backward_reaches_parameters_with_zeros(name):
    # piecewise-constant derivatives: the second-order graph still reaches b (zeros, not
    # None), as PyTorch's *_backward ops do
    f = CASES[name][0]
    x = ft.tensor(_rand((4, 2), seed=7), requires_grad=True)
    w = ft.tensor(_rand((3, 2), seed=8), requires_grad=True)
    b = ft.zeros(3, dtype=ft.float64, requires_grad=True)
    (g,) = ft.autograd.grad(f(ft, x @ w.T + b).sum(), x, create_graph=True)
    assert g.grad_fn is not None
    g.pow(2).sum().backward()
    assert b.grad is not None and b.grad.tolist() == [0.0, 0.0, 0.0]
    assert w.grad is not None


def test_bce_with_logits_gradient_at_zero():
    # d/dx = (sigmoid(x) - y) * weight term: exactly 0 at x = 0, y = 1/2
    x = ft.tensor([0.0, 0.0, 2.0], dtype=ft.float64, requires_grad=True)
    y = ft.tensor([0.5, 1.0, 0.0], dtype=ft.float64)
    F.binary_cross_entropy_with_logits(x, y, reduction="sum").backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, -0.5, 1 / (1 + math.exp(-2))], rtol=1e-14)
    x.grad = None
    pw = ft.tensor([3.0, 3.0, 3.0], dtype=ft.float64)
    F.binary_cross_entropy_with_logits(x, y, pos_weight=pw, reduction="sum").backward()
    # (1 - y) - (1 + 2 y) sigmoid(-x)
    np.testing.assert_allclose(x.grad.numpy(), [0.5 - 2 * 0.5, 0.0 - 3 * 0.5,
                                                1 - 1 / (1 + math.exp(2))], rtol=1e-14)


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("dtype", [ft.float32, ft.float64])
def test_fused_backward_equals_the_differentiable_formula(name, dtype):
    # Without create_graph the CPU computes the gradient in one fused pass; with it, the
    # tensor-op formula runs. Both must agree everywhere, kinks, NaN, inf and expanded
    # gradients included.
    fn = CASES[name][0]
    special = [0.0, -0.0, -3.0, 3.0, 1.5, -1.0, 50.0, -50.0, 1e4, -1e4, math.inf, -math.inf,
               math.nan]
    xv = np.concatenate([_rand(200, seed=3), special])
    gv = np.concatenate([_rand(xv.size - 3, seed=4), [math.inf, math.nan, -math.inf]])
    x = ft.tensor(xv, dtype=dtype, requires_grad=True)
    grads = [ft.tensor(gv, dtype=dtype), ft.ones(()).to(dtype).expand(xv.size)]
    tol = 1e-6 if dtype == ft.float32 else 1e-13
    for g in grads:
        (fused,) = ft.autograd.grad(fn(ft, x), x, g)
        (formula,) = ft.autograd.grad(fn(ft, x), x, g, create_graph=True)
        np.testing.assert_allclose(fused.numpy(), formula.detach().numpy(), rtol=tol, atol=tol,
                                   equal_nan=True)
