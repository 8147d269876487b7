"""Optimizers vs hand-written NumPy updates; optimizer state dicts; LR schedulers vs closed
forms."""

import math
import pickle

import numpy as np
import pytest

import ferrotorch as ft
from ferrotorch import nn, optim
from ferrotorch.optim import lr_scheduler

needs_sum = pytest.mark.skipif(not hasattr(ft.Tensor, "sum"),
                               reason="needs Tensor.sum (reductions branch)")
needs_max = pytest.mark.skipif(not hasattr(ft.Tensor, "max"),
                               reason="needs Tensor.max (reductions branch)")

RNG = np.random.default_rng(1234)
P0 = [RNG.standard_normal((3, 2)), RNG.standard_normal(4)]
TARGET = [RNG.standard_normal((3, 2)), RNG.standard_normal(4)]


def grad_fn(params):
    """Gradient of sum((p - target)^2 * (1 + p^2)/2): nonlinear so momentum etc. matter."""
    return [(p - tg) * (1 + p * p) + (p - tg) ** 2 * p for p, tg in zip(params, TARGET)]


def run_ft(make_opt, steps=6, dtype=np.float64):
    params = [nn.Parameter(ft.from_numpy(p.astype(dtype).copy())) for p in P0]
    opt = make_opt(params)
    for _ in range(steps):
        cur = [p.detach().numpy().copy() for p in params]
        for p, g in zip(params, grad_fn(cur)):
            p.grad = ft.from_numpy(g.astype(dtype))
        opt.step()
    return [p.detach().numpy() for p in params], opt


def run_np(update, steps=6):
    params = [p.copy() for p in P0]
    state = [dict() for _ in params]
    for _ in range(steps):
        grads = grad_fn(params)
        for i, (p, g) in enumerate(zip(params, grads)):
            params[i] = update(p, g, state[i])
    return params


def check(make_opt, update, steps=6, rtol=1e-9):
    got, opt = run_ft(make_opt, steps)
    want = run_np(update, steps)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-12)
    return opt


# ---------------------------------------------------------------------------- SGD
@pytest.mark.parametrize("momentum,dampening,nesterov,wd,maximize", [
    (0.0, 0.0, False, 0.0, False),
    (0.9, 0.0, False, 0.0, False),
    (0.9, 0.0, True, 0.0, False),
    (0.8, 0.3, False, 0.1, False),
    (0.9, 0.0, True, 0.05, True),
])
def test_sgd(momentum, dampening, nesterov, wd, maximize):
    lr = 0.05

    def update(p, g, st):
        g = -g if maximize else g
        g = g + wd * p
        if momentum:
            if "buf" not in st:
                st["buf"] = g.copy()
            else:
                st["buf"] = momentum * st["buf"] + (1 - dampening) * g
            g = g + momentum * st["buf"] if nesterov else st["buf"]
        return p - lr * g

    opt = check(lambda ps: optim.SGD(ps, lr=lr, momentum=momentum, dampening=dampening,
                                     nesterov=nesterov, weight_decay=wd, maximize=maximize),
                update)
    if momentum:
        assert "momentum_buffer" in opt.state[opt.param_groups[0]["params"][0]]


def test_sgd_invalid_args():
    p = [nn.Parameter(ft.tensor([1.0]))]
    with pytest.raises(ValueError, match="Invalid learning rate"):
        optim.SGD(p, lr=-1)
    with pytest.raises(ValueError, match="Nesterov"):
        optim.SGD(p, lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError):
        optim.SGD(ft.tensor([1.0]), lr=0.1)


# ---------------------------------------------------------------------------- Adam family
def adam_update(lr, betas, eps, wd, amsgrad, decoupled, maximize=False):
    b1, b2 = betas

    def update(p, g, st):
        g = -g if maximize else g
        st.setdefault("t", 0)
        st["t"] += 1
        st.setdefault("m", np.zeros_like(p))
        st.setdefault("v", np.zeros_like(p))
        st.setdefault("vmax", np.zeros_like(p))
        if wd:
            if decoupled:
                p = p * (1 - lr * wd)
            else:
                g = g + wd * p
        st["m"] = b1 * st["m"] + (1 - b1) * g
        st["v"] = b2 * st["v"] + (1 - b2) * g * g
        t = st["t"]
        v = st["v"]
        if amsgrad:
            st["vmax"] = np.maximum(st["vmax"], v)
            v = st["vmax"]
        denom = np.sqrt(v) / math.sqrt(1 - b2 ** t) + eps
        return p - lr / (1 - b1 ** t) * st["m"] / denom

    return update


@pytest.mark.parametrize("wd,amsgrad,maximize", [(0.0, False, False), (0.1, False, False),
                                                 (0.0, True, False), (0.05, True, True)])
def test_adam(wd, amsgrad, maximize):
    opt = check(lambda ps: optim.Adam(ps, lr=0.01, betas=(0.8, 0.95), eps=1e-6,
                                      weight_decay=wd, amsgrad=amsgrad, maximize=maximize),
                adam_update(0.01, (0.8, 0.95), 1e-6, wd, amsgrad, False, maximize))
    st = opt.state[opt.param_groups[0]["params"][0]]
    assert st["step"].item() == 6.0
    assert ("max_exp_avg_sq" in st) == amsgrad


@pytest.mark.parametrize("amsgrad", [False, True])
def test_adamw(amsgrad):
    check(lambda ps: optim.AdamW(ps, lr=0.02, weight_decay=0.1, amsgrad=amsgrad),
          adam_update(0.02, (0.9, 0.999), 1e-8, 0.1, amsgrad, True))


# ---------------------------------------------------------------------------- others
@pytest.mark.parametrize("momentum,centered,wd", [(0.0, False, 0.0), (0.9, False, 0.1),
                                                  (0.0, True, 0.0), (0.5, True, 0.05)])
def test_rmsprop(momentum, centered, wd):
    lr, alpha, eps = 0.01, 0.9, 1e-8

    def update(p, g, st):
        g = g + wd * p
        st.setdefault("sq", np.zeros_like(p))
        st.setdefault("ga", np.zeros_like(p))
        st.setdefault("buf", np.zeros_like(p))
        st["sq"] = alpha * st["sq"] + (1 - alpha) * g * g
        if centered:
            st["ga"] = alpha * st["ga"] + (1 - alpha) * g
            avg = np.sqrt(st["sq"] - st["ga"] ** 2) + eps
        else:
            avg = np.sqrt(st["sq"]) + eps
        if momentum:
            st["buf"] = momentum * st["buf"] + g / avg
            return p - lr * st["buf"]
        return p - lr * g / avg

    check(lambda ps: optim.RMSprop(ps, lr=lr, alpha=alpha, eps=eps, momentum=momentum,
                                   centered=centered, weight_decay=wd), update)


@pytest.mark.parametrize("lr_decay,wd,init_acc", [(0.0, 0.0, 0.0), (0.1, 0.05, 0.5)])
def test_adagrad(lr_decay, wd, init_acc):
    lr, eps = 0.1, 1e-10

    def update(p, g, st):
        st.setdefault("t", 0)
        st["t"] += 1
        st.setdefault("sum", np.full_like(p, init_acc))
        g = g + wd * p
        clr = lr / (1 + (st["t"] - 1) * lr_decay)
        st["sum"] = st["sum"] + g * g
        return p - clr * g / (np.sqrt(st["sum"]) + eps)

    check(lambda ps: optim.Adagrad(ps, lr=lr, lr_decay=lr_decay, weight_decay=wd,
                                   initial_accumulator_value=init_acc), update)


@pytest.mark.parametrize("wd", [0.0, 0.1])
def test_adadelta(wd):
    lr, rho, eps = 0.5, 0.9, 1e-6

    def update(p, g, st):
        g = g + wd * p
        st.setdefault("sq", np.zeros_like(p))
        st.setdefault("acc", np.zeros_like(p))
        st["sq"] = rho * st["sq"] + (1 - rho) * g * g
        delta = np.sqrt(st["acc"] + eps) / np.sqrt(st["sq"] + eps) * g
        st["acc"] = rho * st["acc"] + (1 - rho) * delta * delta
        return p - lr * delta

    check(lambda ps: optim.Adadelta(ps, lr=lr, rho=rho, weight_decay=wd), update)


def test_float32_params_and_none_grads_skipped():
    p = nn.Parameter(ft.tensor([1.0, 2.0]))
    q = nn.Parameter(ft.tensor([5.0]))
    opt = optim.Adam([p, q], lr=0.1)
    p.grad = ft.tensor([1.0, -1.0])
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), [0.9, 2.1], rtol=1e-5)
    assert q.detach().numpy()[0] == 5.0 and len(opt.state[q]) == 0
    assert p.dtype == ft.float32 and p.is_leaf and p.requires_grad


# ---------------------------------------------------------------------------- base class
def test_param_groups_defaults_and_add_param_group():
    a = nn.Parameter(ft.tensor([1.0]))
    b = nn.Parameter(ft.tensor([2.0]))
    c = nn.Parameter(ft.tensor([3.0]))
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.1, momentum=0.9)
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[1]["lr"] == 0.5
    assert opt.param_groups[1]["momentum"] == 0.9
    opt.add_param_group({"params": [c], "momentum": 0.0})
    assert opt.param_groups[2]["lr"] == 0.1 and opt.param_groups[2]["momentum"] == 0.0
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})
    for p in (a, b, c):
        p.grad = ft.tensor([1.0])
    opt.step()
    np.testing.assert_allclose([a.item(), b.item(), c.item()], [0.9, 1.5, 2.9], rtol=1e-6)
    opt.zero_grad()
    assert a.grad is None
    a.grad = ft.tensor([3.0])
    opt.zero_grad(set_to_none=False)
    assert a.grad.item() == 0.0
    assert "Parameter Group 1" in repr(opt)
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([a * 2], lr=0.1)


def test_optimizer_state_dict_roundtrip():
    def make():
        ps = [nn.Parameter(ft.from_numpy(p.copy())) for p in P0]
        return ps, optim.Adam([{"params": [ps[0]]}, {"params": [ps[1]], "lr": 0.005}],
                              lr=0.01)

    ps, opt = make()
    for _ in range(3):
        for p, g in zip(ps, grad_fn([p.detach().numpy() for p in ps])):
            p.grad = ft.from_numpy(g)
        opt.step()
    sd = opt.state_dict()
    assert sorted(sd["state"]) == [0, 1]
    assert sd["param_groups"][0]["params"] == [0] and sd["param_groups"][1]["params"] == [1]
    assert sd["param_groups"][1]["lr"] == 0.005
    assert set(sd["state"][0]) == {"step", "exp_avg", "exp_avg_sq"}
    sd = pickle.loads(pickle.dumps(sd))

    ps2, opt2 = make()
    for p2, p in zip(ps2, ps):
        with ft.no_grad():
            p2.copy_(p)
    opt2.load_state_dict(sd)
    assert opt2.state[ps2[0]]["step"].item() == 3.0
    assert opt2.state[ps2[0]]["exp_avg"] is not sd["state"][0]["exp_avg"]  # deep-copied
    for _ in range(2):
        for group in (ps, ps2):
            for p, g in zip(group, grad_fn([p.detach().numpy() for p in group])):
                p.grad = ft.from_numpy(g)
        opt.step()
        opt2.step()
    for p, p2 in zip(ps, ps2):
        np.testing.assert_allclose(p2.detach().numpy(), p.detach().numpy(), rtol=1e-12)
    bad = opt.state_dict()
    bad["param_groups"] = bad["param_groups"][:1]
    with pytest.raises(ValueError, match="different number of parameter groups"):
        opt2.load_state_dict(bad)


def test_step_closure_and_hooks():
    p = nn.Parameter(ft.tensor([1.0]))
    opt = optim.SGD([p], lr=0.1)
    seen = []
    opt.register_step_pre_hook(lambda o, a, k: seen.append("pre"))
    h = opt.register_step_post_hook(lambda o, a, k: seen.append("post"))

    def closure():
        p.grad = ft.tensor([2.0])
        return 42.0

    assert opt.step(closure) == 42.0
    assert seen == ["pre", "post"]
    np.testing.assert_allclose(p.item(), 0.8, rtol=1e-6)
    h.remove()
    opt.step(closure)
    assert seen == ["pre", "post", "pre"]


@needs_sum
@needs_max
def test_lbfgs_quadratic():
    rng = np.random.default_rng(0)
    m = rng.standard_normal((5, 5))
    a = m @ m.T + 5 * np.eye(5)
    b = rng.standard_normal(5)
    x = nn.Parameter(ft.zeros(5, dtype=ft.float64))
    at, bt = ft.from_numpy(a), ft.from_numpy(b)
    opt = optim.LBFGS([x], lr=1, max_iter=50, history_size=10, tolerance_grad=1e-12,
                      tolerance_change=1e-15)

    def closure():
        opt.zero_grad()
        # f(x) = 0.5 x^T A x - b^T x; gradient set by hand so only elementwise ops + sum
        # are needed.
        xv = x.detach()
        g = (at * xv.unsqueeze(0)).sum(1) - bt
        x.grad = g
        return float(0.5 * (xv * (g - bt)).sum().item())

    for _ in range(3):
        opt.step(closure)
    np.testing.assert_allclose(x.detach().numpy(), np.linalg.solve(a, b), rtol=1e-5,
                               atol=1e-7)


# ---------------------------------------------------------------------------- schedulers
def make_opt(lr=1.0, n=1):
    ps = [nn.Parameter(ft.tensor([0.0])) for _ in range(n)]
    return optim.SGD([{"params": [p]} for p in ps], lr=lr, momentum=0.9)


def run_sched(sched, opt, steps):
    lrs = [sched.get_last_lr()[0]]
    for _ in range(steps):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr()[0])
        assert opt.param_groups[0]["lr"] == lrs[-1]
    return lrs


def test_step_and_multistep_and_exponential():
    opt = make_opt(0.1)
    lrs = run_sched(lr_scheduler.StepLR(opt, step_size=3, gamma=0.5), opt, 10)
    np.testing.assert_allclose(lrs, [0.1 * 0.5 ** (e // 3) for e in range(11)])
    opt = make_opt(0.1)
    lrs = run_sched(lr_scheduler.MultiStepLR(opt, milestones=[2, 5, 5, 8], gamma=0.1), opt,
                    10)
    import bisect

    np.testing.assert_allclose(
        lrs, [0.1 * 0.1 ** bisect.bisect_right([2, 5, 5, 8], e) for e in range(11)])
    opt = make_opt(0.1)
    lrs = run_sched(lr_scheduler.ExponentialLR(opt, gamma=0.9), opt, 10)
    np.testing.assert_allclose(lrs, [0.1 * 0.9 ** e for e in range(11)])


def test_cosine_annealing_closed_form():
    opt = make_opt(0.1)
    sched = lr_scheduler.CosineAnnealingLR(opt, T_max=10, eta_min=0.001)
    lrs = run_sched(sched, opt, 25)
    want = [0.001 + (0.1 - 0.001) * (1 + math.cos(math.pi * e / 10)) / 2 for e in range(26)]
    np.testing.assert_allclose(lrs, want, rtol=1e-9, atol=1e-12)


def test_lambda_linear_constant_polynomial():
    opt = make_opt(0.2)
    lrs = run_sched(lr_scheduler.LambdaLR(opt, lambda e: 1.0 / (e + 1)), opt, 5)
    np.testing.assert_allclose(lrs, [0.2 / (e + 1) for e in range(6)])
    opt = make_opt(0.2)
    lrs = run_sched(lr_scheduler.LinearLR(opt, start_factor=0.25, end_factor=1.0,
                                          total_iters=4), opt, 7)
    want = [0.2 * (0.25 + 0.75 * min(e, 4) / 4) for e in range(8)]
    np.testing.assert_allclose(lrs, want, rtol=1e-12)
    opt = make_opt(0.2)
    lrs = run_sched(lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=3), opt, 5)
    np.testing.assert_allclose(lrs, [0.1, 0.1, 0.1, 0.2, 0.2, 0.2])
    opt = make_opt(0.2)
    lrs = run_sched(lr_scheduler.PolynomialLR(opt, total_iters=4, power=2.0), opt, 6)
    np.testing.assert_allclose(lrs, [0.2 * (1 - min(e, 4) / 4) ** 2 for e in range(7)],
                               atol=1e-15)


def test_one_cycle():
    opt = make_opt(0.1)
    total, max_lr = 20, 1.0
    sched = lr_scheduler.OneCycleLR(opt, max_lr=max_lr, total_steps=total, pct_start=0.25)
    lrs = [sched.get_last_lr()[0]]
    moms = [opt.param_groups[0]["momentum"]]
    for _ in range(total - 1):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr()[0])
        moms.append(opt.param_groups[0]["momentum"])
    init, min_lr = max_lr / 25, max_lr / 25 / 1e4
    end1 = 0.25 * total - 1

    def cos_anneal(start, end, pct):
        return end + (start - end) / 2 * (math.cos(math.pi * pct) + 1)

    want, want_m = [], []
    for s in range(total):
        if s <= end1:
            pct = s / end1
            want.append(cos_anneal(init, max_lr, pct))
            want_m.append(cos_anneal(0.95, 0.85, pct))
        else:
            pct = (s - end1) / (total - 1 - end1)
            want.append(cos_anneal(max_lr, min_lr, pct))
            want_m.append(cos_anneal(0.85, 0.95, pct))
    np.testing.assert_allclose(lrs, want, rtol=1e-12)
    np.testing.assert_allclose(moms, want_m, rtol=1e-12)
    opt.step()
    sched.step()
    with pytest.raises(ValueError, match="Tried to step"):
        opt.step()
        sched.step()
    adam = optim.Adam([nn.Parameter(ft.tensor([0.0]))], lr=0.1)
    lr_scheduler.OneCycleLR(adam, max_lr=0.5, total_steps=10, anneal_strategy="linear")
    assert adam.param_groups[0]["betas"][0] == 0.95


def test_sequential_lr():
    opt = make_opt(1.0)
    warm = lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=3)
    decay = lr_scheduler.ExponentialLR(opt, gamma=0.5)
    sched = lr_scheduler.SequentialLR(opt, [warm, decay], milestones=[3])
    lrs = run_sched(sched, opt, 6)
    np.testing.assert_allclose(lrs, [0.1, 0.4, 0.7, 1.0, 0.5, 0.25, 0.125], rtol=1e-12)
    sd = sched.state_dict()
    assert "optimizer" not in sd and len(sd["_schedulers"]) == 2


def test_reduce_lr_on_plateau():
    opt = make_opt(1.0)
    sched = lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=2,
                                           cooldown=1, min_lr=0.1)
    metrics = [10, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9]
    lrs = []
    for m in metrics:
        sched.step(m)
        lrs.append(sched.get_last_lr()[0])
    # 9 is the best at epoch 1; three bad epochs then a reduction; one cooldown epoch.
    assert lrs == [1.0] * 4 + [0.5] * 4 + [0.25] * 4 + [0.125] * 3
    for _ in range(10):
        sched.step(9)
    assert sched.get_last_lr()[0] == 0.1  # min_lr
    opt = make_opt(1.0)
    sched = lr_scheduler.ReduceLROnPlateau(opt, mode="max", patience=0, factor=0.1,
                                           threshold=0.1, threshold_mode="abs")
    sched.step(1.0)
    sched.step(1.05)  # not better by > 0.1 in abs mode
    assert sched.get_last_lr()[0] == pytest.approx(0.1)


def test_scheduler_state_dict_roundtrip_and_chaining():
    opt = make_opt(1.0)
    s = lr_scheduler.StepLR(opt, step_size=2, gamma=0.1)
    for _ in range(3):
        opt.step()
        s.step()
    sd = s.state_dict()
    assert sd["last_epoch"] == 3 and "optimizer" not in sd
    opt2 = make_opt(1.0)
    s2 = lr_scheduler.StepLR(opt2, step_size=5, gamma=0.5)
    s2.load_state_dict(sd)
    assert s2.step_size == 2 and s2.last_epoch == 3
    # Two chained schedulers multiply.
    opt = make_opt(1.0)
    a = lr_scheduler.ExponentialLR(opt, gamma=0.9)
    b = lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    for _ in range(4):
        opt.step()
        a.step()
        b.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(0.9 ** 4 * 0.25)
    opt = make_opt(1.0)
    ch = lr_scheduler.ChainedScheduler([lr_scheduler.ExponentialLR(opt, gamma=0.9),
                                        lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)])
    for _ in range(4):
        opt.step()
        ch.step()
    assert ch.get_last_lr()[0] == pytest.approx(0.9 ** 4 * 0.25)
    with pytest.raises(TypeError):
        lr_scheduler.StepLR(object(), step_size=1)


def test_optimizer_subclass_custom_step():
    class Clipped(optim.SGD):
        """A user optimizer that clamps gradients then defers to SGD."""

        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p.grad = p.grad.maximum(ft.tensor(-1.0)).minimum(ft.tensor(1.0))
            return super().step(closure)

    p = nn.Parameter(ft.tensor([0.0, 0.0]))
    opt = Clipped([p], lr=0.5)
    calls = []
    opt.register_step_pre_hook(lambda o, a, k: calls.append(1))
    p.grad = ft.tensor([10.0, -0.5])
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), [-0.5, 0.25])
    assert calls == [1]
    assert isinstance(opt, optim.Optimizer)


@needs_sum
@needs_max
def test_lbfgs_strong_wolfe_rosenbrock():
    x = nn.Parameter(ft.tensor([-1.5, 2.0], dtype=ft.float64))
    opt = optim.LBFGS([x], lr=1, max_iter=200, line_search_fn="strong_wolfe",
                      tolerance_grad=1e-10, tolerance_change=1e-14)

    def closure():
        opt.zero_grad()
        a, b = x.detach().numpy()
        # Rosenbrock gradient by hand (elementwise maths only).
        x.grad = ft.tensor([-2 * (1 - a) - 400 * a * (b - a * a), 200 * (b - a * a)],
                           dtype=ft.float64)
        return (1 - a) ** 2 + 100 * (b - a * a) ** 2

    for _ in range(3):
        opt.step(closure)
    np.testing.assert_allclose(x.detach().numpy(), [1.0, 1.0], rtol=1e-6)
    assert opt.state[x]["func_evals"] < 300
    with pytest.raises(RuntimeError, match="strong_wolfe"):
        optim.LBFGS([x], line_search_fn="backtracking")


def test_optimizer_pickle_roundtrip():
    p = nn.Parameter(ft.tensor([1.0, 2.0]))
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    p.grad = ft.tensor([1.0, 1.0])
    opt.step()
    opt2 = pickle.loads(pickle.dumps(opt))
    q = opt2.param_groups[0]["params"][0]
    np.testing.assert_allclose(opt2.state[q]["momentum_buffer"].numpy(), [1.0, 1.0])
    q.grad = ft.tensor([1.0, 1.0])
    opt2.step()
    np.testing.assert_allclose(q.detach().numpy(), [0.71, 1.71], rtol=1e-6)


# ---------------------------------------------------------------- fused Rust steps
# Each optimizer updates a float32/float64 group with one fused Rust call; fused=False (and
# differentiable=True, half precision) takes the generic tensor-op path. Both must agree.
FUSED_CASES = [
    (optim.SGD, dict(lr=0.1)),
    (optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    (optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True)),
    (optim.Adam, dict(lr=0.01, weight_decay=0.1)),
    (optim.Adam, dict(lr=0.01, amsgrad=True, maximize=True)),
    (optim.AdamW, dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    (optim.RMSprop, dict(lr=0.01)),
    (optim.RMSprop, dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1)),
    (optim.RMSprop, dict(lr=0.01, centered=True, maximize=True)),
    (optim.Adagrad, dict(lr=0.1, lr_decay=0.01, weight_decay=0.1,
                         initial_accumulator_value=0.5)),
    (optim.Adadelta, dict(lr=1.0, rho=0.8, weight_decay=0.1, maximize=True)),
]


def _run_steps(cls, kw, dtype, shapes, steps=4, transposed_grads=False):
    rng = np.random.default_rng(7)
    p0 = [rng.standard_normal(s) for s in shapes]
    grads = [[rng.standard_normal(s) for s in shapes] for _ in range(steps)]
    params = [nn.Parameter(ft.tensor(p, dtype=dtype)) for p in p0]
    opt = cls(params, **kw)
    for g_step in grads:
        for p, g in zip(params, g_step):
            if transposed_grads and g.ndim == 2:
                p.grad = ft.tensor(np.ascontiguousarray(g.T), dtype=dtype).t()
            else:
                p.grad = ft.tensor(g, dtype=dtype)
        opt.step()
    return [p.detach().to(ft.float64).numpy() for p in params], opt


@pytest.mark.parametrize("cls,kw", FUSED_CASES)
@pytest.mark.parametrize("dtype", [ft.float32, ft.float64])
def test_fused_step_matches_generic_path(cls, kw, dtype):
    shapes = [(3, 5), (7,), (), (0, 2), (300, 120)]  # the last one takes the parallel path
    fused, opt = _run_steps(cls, kw, dtype, shapes, transposed_grads=True)
    generic, _ = _run_steps(cls, dict(kw, differentiable=True), dtype, shapes)
    tol = 1e-5 if dtype == ft.float32 else 1e-12
    for a, b in zip(fused, generic):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
    state = opt.state[opt.param_groups[0]["params"][0]]
    if "step" in state:
        assert state["step"].item() == 4
    for value in state.values():
        if isinstance(value, ft.Tensor) and value.dim() > 0:
            assert value.dtype == dtype


def test_fused_adam_state_dict_round_trip_continues_identically():
    shapes = [(4, 3), (3,)]
    a, opt_a = _run_steps(optim.Adam, dict(lr=0.05), ft.float32, shapes, steps=2)
    params_b = [nn.Parameter(ft.tensor(x, dtype=ft.float32)) for x in a]
    opt_b = optim.Adam(params_b, lr=0.05)
    opt_b.load_state_dict(opt_a.state_dict())
    g = [ft.ones(s) for s in shapes]
    for p, gg in zip(opt_a.param_groups[0]["params"], g):
        p.grad = gg.clone()
    for p, gg in zip(params_b, g):
        p.grad = gg.clone()
    opt_a.step()
    opt_b.step()
    for pa, pb in zip(opt_a.param_groups[0]["params"], params_b):
        np.testing.assert_allclose(pa.detach().numpy(), pb.detach().numpy(), rtol=1e-6)


def test_half_precision_params_take_generic_path():
    p = nn.Parameter(ft.ones(3, dtype=ft.float16))
    opt = optim.Adam([p], lr=0.1)
    p.grad = ft.ones(3, dtype=ft.float16)
    opt.step()
    np.testing.assert_allclose(p.detach().float().numpy(), [0.9] * 3, rtol=1e-3)


def test_step_on_large_parameters_under_no_grad_pool_threads():
    # Large kernels run on worker threads: grad mode must travel with them, otherwise the
    # in-place update of a leaf that requires grad is refused.
    m = nn.Linear(512, 256)
    opt = optim.SGD(m.parameters(), lr=0.1, momentum=0.9, fused=False)
    m(ft.randn(4, 512)).sum().backward()
    before = m.weight.detach().clone()
    opt.step()
    assert not np.allclose(m.weight.detach().numpy(), before.numpy())
    x = ft.randn(300, 300, requires_grad=True)
    with ft.no_grad():
        y = x * 2
    assert not y.requires_grad and y.grad_fn is None


@pytest.mark.parametrize("cls,name", [(optim.SGD, "_fused_sgd_"), (optim.Adam, "_fused_adam_"),
                                      (optim.RMSprop, "_fused_rmsprop_"),
                                      (optim.Adagrad, "_fused_adagrad_"),
                                      (optim.Adadelta, "_fused_adadelta_")])
def test_float_groups_use_one_fused_call_per_group(monkeypatch, cls, name):
    from ferrotorch import _C

    calls = []
    real = getattr(_C, name)
    monkeypatch.setattr(_C, name, lambda *a, **k: (calls.append(len(a[0])), real(*a, **k)))
    params = [nn.Parameter(ft.ones(3, 2)), nn.Parameter(ft.ones(4)), nn.Parameter(ft.ones(5))]
    opt = cls([{"params": params[:2]}, {"params": params[2:]}], lr=0.1)
    for p in params:
        p.grad = ft.ones_like(p)
    opt.step()
    assert calls == [2, 1]
