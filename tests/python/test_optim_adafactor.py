"""``optim.Adafactor``: a hand-computed first step (NumPy), factored / unfactored state,
state_dict round trip, argument errors; with PyTorch installed, trajectories equal
``torch.optim.Adafactor``'s."""

import numpy as np
import pytest

import ferrotorch as torch
from ferrotorch.optim import Adafactor


def _np_adafactor_step(p, g, state, t, lr=1e-2, c=-0.8, eps1=None, eps2=1e-3, d=1.0, wd=0.0):
    eps1 = np.finfo(p.dtype).eps if eps1 is None else eps1
    b = t ** c
    rho = min(lr, 1 / t ** 0.5)
    alpha = max(eps2, np.sqrt(np.mean(p * p))) * rho
    p = p * (1 - lr * wd)
    if g.ndim > 1:
        state["R"] = state["R"] + b * (np.mean(g * g, axis=-1, keepdims=True) - state["R"])
        state["C"] = state["C"] + b * (np.mean(g * g, axis=-2, keepdims=True) - state["C"])
        v = (state["R"] @ state["C"]) / np.maximum(state["R"].mean(axis=-2, keepdims=True), eps1)
    else:
        state["v"] = state["v"] + b * (g * g - state["v"])
        v = state["v"]
    u = g / np.sqrt(np.maximum(v, eps1 * eps1))
    denom = max(1.0, np.sqrt(np.mean(u * u)) / d)
    return p - alpha / denom * u


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4)])
@pytest.mark.parametrize("kw", [{}, {"wd": 0.1, "lr": 0.3, "d": 1.2}])
def test_matches_numpy_reference(shape, kw):
    rng = np.random.default_rng(len(shape))
    p0 = rng.standard_normal(shape)
    state = {"v": np.zeros(shape)}
    if len(shape) > 1:
        state = {"R": np.zeros(shape[:-1] + (1,)), "C": np.zeros(shape[:-2] + (1, shape[-1]))}
    ref = p0
    p = torch.tensor(p0, requires_grad=True)
    opt = Adafactor([p], lr=kw.get("lr", 1e-2), d=kw.get("d", 1.0),
                    weight_decay=kw.get("wd", 0.0))
    for t in range(1, 5):
        g = rng.standard_normal(shape)
        ref = _np_adafactor_step(ref, g, state, t, **kw)
        p.grad = torch.tensor(g)
        opt.step()
        assert np.allclose(np.array(p.detach().tolist()), ref, atol=1e-12, rtol=0)
    st = opt.state[p]
    assert st["step"].item() == 4.0
    if len(shape) > 1:
        assert sorted(st) == ["col_var", "row_var", "step"]
        assert st["row_var"].shape == shape[:-1] + (1,)
        assert np.allclose(np.array(st["col_var"].tolist()), state["C"])
    else:
        assert sorted(st) == ["step", "variance"]


def test_hand_computed_first_step():
    p = torch.tensor([[3.0, 4.0], [0.0, 0.0]], dtype=torch.float64, requires_grad=True)
    p.grad = torch.tensor([[1.0, -1.0], [2.0, 0.0]], dtype=torch.float64)
    Adafactor([p], lr=0.1).step()
    # R = [1, 2], C = [2.5, 0.5], mean(R) = 1.5 -> v = [[5/3, 1/3], [10/3, 2/3]]
    v = np.array([[5 / 3, 1 / 3], [10 / 3, 2 / 3]])
    u = np.array([[1.0, -1.0], [2.0, 0.0]]) / np.sqrt(v)
    alpha = 2.5 * 0.1  # RMS(p) = 5 / 2, rho = min(lr, 1)
    denom = max(1.0, np.sqrt(np.mean(u * u)))
    expect = np.array([[3.0, 4.0], [0.0, 0.0]]) - alpha / denom * u
    assert np.allclose(np.array(p.detach().tolist()), expect, atol=1e-14)
    # maximize flips the gradient; a zero-valued parameter moves by eps2 * lr
    q = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    q.grad = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    Adafactor([q], lr=0.1, maximize=True).step()
    assert np.allclose(np.array(q.detach().tolist()), 1e-3 * 0.1 * np.array([1.0, -1.0, 1.0]))


def test_state_dict_round_trip_and_closure():
    rng = np.random.default_rng(0)
    a0, b0 = rng.standard_normal((3, 4)), rng.standard_normal(4)
    gs = [(rng.standard_normal((3, 4)), rng.standard_normal(4)) for _ in range(6)]

    def run(split):
        a = torch.tensor(a0, requires_grad=True)
        b = torch.tensor(b0, requires_grad=True)
        opt = Adafactor([a, b], lr=0.05, weight_decay=0.01)
        for i, (ga, gb) in enumerate(gs):
            if i == split:
                sd = opt.state_dict()
                opt = Adafactor([a, b], lr=0.05, weight_decay=0.01)
                opt.load_state_dict(sd)
            a.grad, b.grad = torch.tensor(ga), torch.tensor(gb)
            opt.step()
        return a.detach().tolist(), b.detach().tolist(), opt

    ra, rb, _ = run(None)
    sa, sb, opt = run(3)
    assert ra == sa and rb == sb
    sd = opt.state_dict()
    assert sd["param_groups"][0]["eps"] == (None, 1e-3)
    assert sd["param_groups"][0]["beta2_decay"] == -0.8 and sd["param_groups"][0]["d"] == 1.0
    assert sorted(sd["state"][1]) == ["step", "variance"]
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    opt = Adafactor([w])

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    assert opt.step(closure).item() == 5.0
    assert w.tolist() != [1.0, 2.0]


def test_argument_errors_and_groups():
    w = [torch.zeros(2, requires_grad=True)]
    for kw, msg in [({"lr": -1.0}, "Learning rate should be >= 0"),
                    ({"beta2_decay": 0.5}, "beta2_decay should be <= 0"),
                    ({"eps": (-1.0, 1e-3)}, "epsilon1 should be >= 0"),
                    ({"eps": (None, -1.0)}, "epsilon2 should be >= 0"),
                    ({"d": 0.5}, "Clipping threshold d should be >= 1"),
                    ({"weight_decay": -0.1}, "weight_decay should be >= 0")]:
        with pytest.raises(ValueError, match=msg):
            Adafactor(w, **kw)
    a = torch.zeros(2, requires_grad=True)
    b = torch.zeros(2, 2, requires_grad=True)
    opt = Adafactor([{"params": [a]}, {"params": [b], "lr": 0.5}])
    assert opt.param_groups[0]["lr"] == 1e-2 and opt.param_groups[1]["lr"] == 0.5
    with pytest.raises(ValueError, match="some parameters appear in more than one"):
        opt.add_param_group({"params": [a]})
    assert isinstance(torch.optim.Adafactor, type)


@pytest.mark.parametrize("kw", [{}, {"weight_decay": 0.1}, {"maximize": True},
                                {"lr": 0.5, "d": 1.5, "eps": (1e-20, 1e-2),
                                 "beta2_decay": -0.5}])
def test_matches_torch_trajectory(kw):
    real = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    shapes = [(5,), (4, 3), (2, 3, 4), ()]
    init = [rng.standard_normal(s) for s in shapes]
    tp = [real.tensor(a, requires_grad=True) for a in init]
    fp = [torch.tensor(a, requires_grad=True) for a in init]
    to, fo = real.optim.Adafactor(tp, **kw), Adafactor(fp, **kw)
    for _ in range(8):
        gs = [rng.standard_normal(s) for s in shapes]
        for p, g in zip(tp, gs):
            p.grad = real.tensor(g)
        for p, g in zip(fp, gs):
            p.grad = torch.tensor(g)
        to.step()
        fo.step()
        for a, b in zip(fp, tp):
            assert np.allclose(np.array(a.detach().tolist()), b.detach().numpy(), atol=1e-10,
                               rtol=0)
    ts, fs = to.state_dict()["state"], fo.state_dict()["state"]
    for i in range(len(shapes)):
        assert sorted(ts[i]) == sorted(fs[i])
        for k in ts[i]:
            assert np.allclose(np.array(fs[i][k].tolist()), ts[i][k].numpy(), atol=1e-10)
