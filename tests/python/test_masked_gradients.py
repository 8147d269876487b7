"""Gradients that are masked or zero select rather than multiply, as PyTorch's
``threshold_backward`` / ``clamp_backward`` / ``zeros_like(grad)``: an infinite or NaN incoming
gradient where the op passes nothing gives 0, not NaN. (This is what keeps ``lp_pool`` finite
over an all-zero window, where ``pow(1/p)`` sends an infinite gradient back.)"""

import math

import numpy as np
import pytest

import ferrotorch as ft
from ferrotorch.nn import functional as F

INF, NAN = math.inf, math.nan


@pytest.mark.parametrize("dtype", [ft.float32, ft.float64, ft.float16])
@pytest.mark.parametrize("create_graph", [False, True])
def test_relu_masks_inf_and_nan(dtype, create_graph):
    x = ft.tensor([-1.0, 0.0, 2.0], dtype=dtype, requires_grad=True)
    g = ft.tensor([NAN, INF, 3.0], dtype=dtype)
    (gx,) = ft.autograd.grad(x.relu(), x, g, create_graph=create_graph)
    assert gx.tolist() == [0.0, 0.0, 3.0]


@pytest.mark.parametrize("bounds", ["numbers", "tensors"])
def test_clamp_masks_inf_and_nan(bounds):
    x = ft.tensor([-2.0, 0.5, 3.0], dtype=ft.float64, requires_grad=True)
    if bounds == "numbers":
        y = x.clamp(-1.0, 1.0)
    else:
        y = x.clamp(ft.tensor(-1.0, dtype=ft.float64), ft.tensor(1.0, dtype=ft.float64))
    y.backward(ft.tensor([NAN, 2.0, INF], dtype=ft.float64))
    assert x.grad.tolist() == [0.0, 2.0, 0.0]


@pytest.mark.parametrize("op", ["sign", "floor", "ceil", "round", "trunc"])
def test_piecewise_constant_ops_give_real_zeros(op):
    x = ft.tensor([-1.5, 0.0, 2.5], dtype=ft.float64, requires_grad=True)
    getattr(x, op)().backward(ft.tensor([INF, NAN, -INF], dtype=ft.float64))
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


def test_lp_pool_over_a_zero_window():
    x = ft.tensor([[[0.0, 0.0, 3.0, -4.0]]], dtype=ft.float64, requires_grad=True)
    y = F.lp_pool1d(x, 2, 2)
    np.testing.assert_allclose(y.detach().numpy(), [[[0.0, 5.0]]])
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[[0.0, 0.0, 0.6, -0.8]]], rtol=1e-15)


def test_matches_torch():
    torch = pytest.importorskip("torch")
    res = []
    for M in (torch, ft):
        x = M.tensor([0.0, 0.0, 1.0, -2.0, 0.5, 0.0], dtype=M.float64, requires_grad=True)
        y = (M.nn.functional.lp_pool1d(x.reshape(1, 1, 6), 2, 2).sum()
             + x.clamp(-1.0, 0.7).pow(0.5).nan_to_num(0.0).sum() + x.sign().sum())
        y.backward()
        res.append(x.grad.tolist())
    np.testing.assert_array_equal(res[1], res[0])
