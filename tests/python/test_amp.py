"""ferrotorch.amp: autocast dtype rules (low-precision and float32 op lists, nesting,
decorator, thread-locality, CUDA requests without CUDA), mixed-precision training reaching
float32 parameters, GradScaler's scaling/unscaling/skipping/growth and state_dict, the legacy
torch.cuda.amp spellings, and torch.compile running eagerly."""

import threading
import warnings

import numpy as np
import pytest

import ferrotorch as ft
import ferrotorch.nn.functional as F
from ferrotorch import nn


def test_cpu_autocast_casts_products_down_and_softmax_up():
    x, w = ft.randn(4, 8), ft.randn(3, 8)
    with ft.autocast("cpu"):
        assert ft.is_autocast_enabled("cpu") and not ft.is_autocast_enabled("cuda")
        y = F.linear(x, w)
        assert y.dtype == ft.bfloat16
        assert (x @ w.T).dtype == ft.bfloat16
        assert ft.matmul(x, w.T).dtype == ft.bfloat16 and x.mm(w.T).dtype == ft.bfloat16
        # PyTorch's CPU list keeps softmax in the input dtype (its CUDA list casts it up)
        assert F.softmax(y, dim=1).dtype == ft.bfloat16
        assert ft.mv(x, w[0]).dtype == ft.float32  # on CUDA's list only
        assert F.cross_entropy(y, ft.tensor([0, 1, 2, 0])).dtype == ft.float32
        z = F.conv2d(ft.randn(1, 2, 5, 5), ft.randn(3, 2, 3, 3))
        assert z.dtype == ft.bfloat16
        assert (x + 1).dtype == ft.float32  # ops on neither list keep their dtype
        np.testing.assert_allclose(y.float().numpy(), (x.numpy() @ w.numpy().T), rtol=0.02,
                                   atol=0.05)
        with ft.autocast("cpu", enabled=False):
            assert F.linear(x, w).dtype == ft.float32
        assert F.linear(x, w).dtype == ft.bfloat16
    assert F.linear(x, w).dtype == ft.float32 and not ft.is_autocast_enabled("cpu")
    with ft.autocast("cpu", dtype=ft.float16):
        assert (x @ w.T).dtype == ft.float16
        assert ft.amp.get_autocast_dtype("cpu") == ft.float16


def test_autocast_decorator_and_threads():
    @ft.autocast("cpu")
    def f(a):
        return a @ a

    assert f(ft.randn(3, 3)).dtype == ft.bfloat16
    seen = {}
    with ft.autocast("cpu"):
        t = threading.Thread(target=lambda: seen.setdefault("d", (ft.ones(2, 2) @ ft.ones(2, 2))
                                                           .dtype))
        t.start()
        t.join()
    assert seen["d"] == ft.float32  # autocast is thread-local


def test_autocast_errors_and_unavailable_cuda():
    with pytest.raises(RuntimeError, match="unsupported autocast device_type"):
        ft.autocast("tpu")
    with pytest.raises(ValueError, match="device_type"):
        ft.autocast(0)
    with pytest.warns(UserWarning, match="target dtype is not supported"):
        ac = ft.autocast("cpu", dtype=ft.float64)
    with ac:
        assert (ft.ones(2, 2) @ ft.ones(2, 2)).dtype == ft.float32
    if not ft.cuda.is_available():
        with pytest.warns(UserWarning, match="CUDA is not available"):
            with ft.autocast("cuda"):
                assert (ft.ones(2, 2) @ ft.ones(2, 2)).dtype == ft.float32
        with pytest.warns(FutureWarning):
            ft.cuda.amp.autocast(enabled=False)


def test_mixed_precision_training_updates_float32_parameters():
    ft.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = ft.optim.SGD(model.parameters(), lr=0.5)
    x = ft.randn(64, 4)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
    scaler = ft.amp.GradScaler("cpu", init_scale=128.0)
    losses = []
    for _ in range(60):
        opt.zero_grad()
        with ft.autocast("cpu"):
            out = model(x)
            assert out.dtype == ft.bfloat16
            loss = F.cross_entropy(out, y)
        assert loss.dtype == ft.float32
        scaler.scale(loss).backward()
        assert model[0].weight.grad.dtype == ft.float32
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())
    assert all(p.dtype == ft.float32 for p in model.parameters())
    assert losses[-1] < 0.4 * losses[0]


def test_grad_scaler_scaling_skipping_and_growth():
    p = nn.Parameter(ft.tensor([1.0, 2.0]))
    opt = ft.optim.SGD([p], lr=1.0)
    s = ft.amp.GradScaler("cpu", init_scale=8.0, growth_interval=2)
    loss = (p * ft.tensor([1.0, 3.0])).sum()
    scaled = s.scale(loss)
    assert scaled.item() == pytest.approx(8.0 * loss.item())
    scaled.backward()
    np.testing.assert_allclose(p.grad.numpy(), [8.0, 24.0])
    s.unscale_(opt)
    np.testing.assert_allclose(p.grad.numpy(), [1.0, 3.0])
    with pytest.raises(RuntimeError, match="already been called"):
        s.unscale_(opt)
    s.step(opt)
    np.testing.assert_allclose(p.detach().numpy(), [0.0, -1.0])
    s.update()
    assert s.get_scale() == 8.0
    # An inf gradient skips the step and backs the scale off.
    p.grad = ft.tensor([float("inf"), 1.0])
    before = p.detach().numpy().copy()
    assert s.step(opt) is None
    np.testing.assert_array_equal(p.detach().numpy(), before)
    s.update()
    assert s.get_scale() == 4.0
    # Two clean steps in a row (growth_interval=2) double it.
    for _ in range(2):
        p.grad = ft.tensor([0.5, 0.5])
        s.step(opt)
        s.update()
    assert s.get_scale() == 8.0
    with pytest.raises(RuntimeError, match="Closure"):
        s.step(opt, closure=lambda: None)
    sd = s.state_dict()
    s2 = ft.amp.GradScaler("cpu")
    s2.load_state_dict(sd)
    assert s2.get_scale() == 8.0 and s2.state_dict() == sd
    s.update(new_scale=2.0)
    assert s.get_scale() == 2.0
    with pytest.raises(ValueError, match="growth factor"):
        ft.amp.GradScaler("cpu", growth_factor=0.5)


def test_disabled_grad_scaler_passes_through():
    p = nn.Parameter(ft.tensor([1.0]))
    opt = ft.optim.SGD([p], lr=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = ft.cuda.amp.GradScaler() if not ft.cuda.is_available() else \
            ft.amp.GradScaler("cpu", enabled=False)
    assert not s.is_enabled() and s.get_scale() == 1.0 and s.state_dict() == {}
    loss = (p * 2).sum()
    assert s.scale(loss) is loss
    loss.backward()
    s.step(opt)
    s.update()
    assert p.item() == -1.0


def test_compile_runs_eagerly():
    model = nn.Linear(3, 2)
    assert ft.compile(model) is model
    f = ft.compile(lambda a: a * 2)
    assert f(ft.tensor([1.0])).item() == 2.0

    @ft.compile(mode="max-autotune")
    def g(a):
        return a + 1

    assert g(ft.tensor([1.0])).item() == 2.0
    with pytest.raises(RuntimeError, match="Unrecognized mode"):
        ft.compile(model, mode="fast")
    with pytest.raises(RuntimeError, match="callable"):
        ft.compile(3)
