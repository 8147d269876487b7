"""End-to-end training: an MLP classifier and the PyTorch tutorial's polynomial fit."""

import math

import numpy as np
import pytest

import ferrotorch as ft
from ferrotorch import nn, optim
from ferrotorch.utils.data import DataLoader, TensorDataset

needs_stack = pytest.mark.skipif(
    not all(hasattr(ft.Tensor, n) for n in ("sum", "mean", "matmul", "log_softmax",
                                              "uniform_", "amax")) or not hasattr(ft, "arange"),
    reason="needs reductions, matmul, arange and in-place samplers (other branches)",
)


def two_moons(n, seed):
    rng = np.random.default_rng(seed)
    a = rng.uniform(0, math.pi, n // 2)
    b = rng.uniform(0, math.pi, n - n // 2)
    x = np.concatenate([np.stack([np.cos(a), np.sin(a)], 1),
                        np.stack([1 - np.cos(b), 0.5 - np.sin(b)], 1)])
    x += rng.normal(0, 0.1, x.shape)
    y = np.concatenate([np.zeros(n // 2), np.ones(n - n // 2)]).astype(np.int64)
    return x.astype(np.float32), y


def make_mlp():
    return nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 32), nn.ReLU(),
                         nn.Linear(32, 2))


def accuracy(model, x, y):
    with ft.no_grad():
        pred = model(ft.from_numpy(x)).numpy().argmax(1)
    return (pred == y).mean()


@needs_stack
@pytest.mark.parametrize("opt_name", ["sgd", "adam"])
def test_mlp_two_moons(opt_name):
    ft.manual_seed(0)
    x, y = two_moons(256, 0)
    model = make_mlp()
    if opt_name == "sgd":
        opt = optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
    else:
        opt = optim.Adam(model.parameters(), lr=0.02)
    loss_fn = nn.CrossEntropyLoss()
    loader = DataLoader(TensorDataset(ft.from_numpy(x), ft.from_numpy(y)), batch_size=64,
                        shuffle=True, generator=ft.Generator().manual_seed(0))
    losses = []
    for _epoch in range(25):
        for xb, yb in loader:
            opt.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            losses.append(loss.item())
    first, last = np.mean(losses[:4]), np.mean(losses[-4:])
    assert last < 0.25 * first, (first, last)
    assert accuracy(model, x, y) > 0.95
    xt, yt = two_moons(200, 1)
    assert accuracy(model, xt, yt) > 0.9


@needs_stack
def test_mlp_state_dict_transfer_preserves_predictions():
    ft.manual_seed(1)
    model = make_mlp()
    x = ft.from_numpy(two_moons(16, 2)[0])
    clone = make_mlp()
    clone.load_state_dict(model.state_dict())
    with ft.no_grad():
        np.testing.assert_array_equal(clone(x).numpy(), model(x).numpy())


def polynomial_data(n=200):
    x = np.linspace(-math.pi, math.pi, n)
    y = np.sin(x)
    p = np.stack([x, x ** 2, x ** 3], 1)
    return x, y, p


@needs_stack
def test_polynomial_fit_like_pytorch_tutorial():
    # As in PyTorch's "Learning PyTorch with examples": y = a + b x + c x^2 + d x^3 fitted to
    # sin(x) by Linear(3, 1) + Flatten(0, 1) and an MSE loss with reduction="sum".
    _, y, p = polynomial_data()
    xx = ft.from_numpy(p)
    yy = ft.from_numpy(y)
    model = nn.Sequential(nn.Linear(3, 1), nn.Flatten(0, 1)).double()
    loss_fn = nn.MSELoss(reduction="sum")
    opt = optim.RMSprop(model.parameters(), lr=1e-2)
    first = None
    for _ in range(400):
        loss = loss_fn(model(xx), yy)
        first = first if first is not None else loss.item()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.05 * first
    # LBFGS polishes to the least-squares optimum.
    lbfgs = optim.LBFGS(model.parameters(), lr=1, max_iter=100, history_size=20)

    def closure():
        lbfgs.zero_grad()
        out = loss_fn(model(xx), yy)
        out.backward()
        return out

    for _ in range(3):
        lbfgs.step(closure)
    design = np.concatenate([np.ones((len(y), 1)), p], 1)
    coef = np.linalg.lstsq(design, y, rcond=None)[0]
    lin = model[0]
    got = np.concatenate([lin.bias.detach().numpy(), lin.weight.detach().numpy()[0]])
    np.testing.assert_allclose(got, coef, rtol=1e-4, atol=1e-5)
