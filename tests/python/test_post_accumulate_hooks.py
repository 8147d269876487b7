"""Tensor.register_post_accumulate_grad_hook: called with the leaf itself after each
accumulation into .grad (the "optimizer step in backward" pattern)."""

import numpy as np
import pytest

import ferrotorch as ft
from ferrotorch import nn


def test_hook_sees_accumulated_grad_and_same_object():
    w = nn.Parameter(ft.tensor([1.0, 2.0, 3.0]))
    seen = []

    def hook(p):
        seen.append((p is w, p.grad.numpy().copy()))

    handle = w.register_post_accumulate_grad_hook(hook)
    (w * 2).sum().backward()
    (w * 3).sum().backward()
    assert [s[0] for s in seen] == [True, True]
    np.testing.assert_array_equal(seen[0][1], [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(seen[1][1], [5.0, 5.0, 5.0])  # accumulated
    handle.remove()
    (w * 3).sum().backward()
    assert len(seen) == 2


def test_optimizer_in_backward_matches_regular_step():
    ft.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)).double()
    reference = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)).double()
    reference.load_state_dict(model.state_dict())
    x = ft.from_numpy(np.random.default_rng(0).standard_normal((5, 4)))

    opts = {p: ft.optim.SGD([p], lr=0.1, momentum=0.9) for p in model.parameters()}

    def step(p):
        opts[p].step()
        opts[p].zero_grad()

    for p in model.parameters():
        p.register_post_accumulate_grad_hook(step)
    ref_opt = ft.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    for _ in range(3):
        model(x).pow(2).sum().backward()
        ref_opt.zero_grad()
        reference(x).pow(2).sum().backward()
        ref_opt.step()
    for p in model.parameters():
        assert p.grad is None  # zeroed inside the hook
    for a, b in zip(model.parameters(), reference.parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12)


def test_errors():
    x = ft.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="non-leaf"):
        (x * 2).register_post_accumulate_grad_hook(lambda p: None)
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        ft.ones(2).register_post_accumulate_grad_hook(lambda p: None)
    x.register_post_accumulate_grad_hook(lambda p: p)
    with pytest.raises(RuntimeError, match="should return None"):
        x.sum().backward()


def test_not_called_for_autograd_grad():
    """autograd.grad does not accumulate into .grad, so the hook does not run."""
    x = ft.ones(3, requires_grad=True)
    calls = []
    x.register_post_accumulate_grad_hook(lambda p: calls.append(1))
    ft.autograd.grad((x * x).sum(), x)
    assert calls == []
    (x * x).sum().backward()
    assert calls == [1]


def test_matches_torch():
    torch = pytest.importorskip("torch")
    out = []
    for M in (torch, ft):
        w = M.nn.Parameter(M.tensor([1.0, -2.0]))
        log = []
        w.register_post_accumulate_grad_hook(lambda p, log=log: log.append(p.grad.tolist()))
        (w ** 2).sum().backward()
        (w ** 3).sum().backward()
        out.append(log)
    assert out[0] == out[1]
