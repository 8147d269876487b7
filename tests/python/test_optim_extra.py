"""Adamax, NAdam, RAdam, Rprop and ASGD vs NumPy re-implementations of PyTorch's documented
pseudo-code; their state dicts and errors. CyclicLR and CosineAnnealingWarmRestarts vs closed
forms. ``optim.swa_utils`` (AveragedModel, SWALR, update_bn) vs hand computations."""

import copy
import math
import pickle
import warnings

import numpy as np
import pytest

import ferrotorch as ft
from ferrotorch import nn, optim
from ferrotorch.optim import lr_scheduler, swa_utils

SHAPES = [(3, 4), (5,), (2, 3, 2), ()]
STEPS = 10


def make_problem(seed, steps=STEPS, zero_frac=0.0):
    """Random initial parameters and per-step random gradient parts (optionally with exact
    zeros, which exercise Rprop's sign == 0 branch)."""
    rng = np.random.default_rng(seed)
    p0 = [rng.standard_normal(s) for s in SHAPES]
    gs = []
    for _ in range(steps):
        step_g = []
        for s in SHAPES:
            g = rng.standard_normal(s)
            if zero_frac:
                g = np.where(rng.random(s) < zero_frac, 0.0, g)
            step_g.append(np.asarray(g, dtype=np.float64))
        gs.append(step_g)
    return p0, gs


def grad_of(g_rand, p, coupling):
    """Gradient seen at a step: the random part plus ``coupling * p`` so that the trajectory
    depends on the parameters."""
    return g_rand + coupling * p


def run_ft(make_opt, p0, gs, coupling, dtype=ft.float64, start=0, stop=None, params=None,
           opt=None):
    if params is None:
        params = [nn.Parameter(ft.tensor(p.copy(), dtype=dtype)) for p in p0]
    if opt is None:
        opt = make_opt(params)
    for t in range(start, len(gs) if stop is None else stop):
        for p, g in zip(params, gs[t]):
            cur = p.detach().numpy().astype(np.float64)
            p.grad = ft.tensor(grad_of(g, cur, coupling), dtype=dtype)
        opt.step()
    return params, opt


def run_np(update, p0, gs, coupling):
    params = [p.copy() for p in p0]
    states = [dict() for _ in params]
    for t, step_g in enumerate(gs, start=1):
        for i, g in enumerate(step_g):
            params[i] = update(params[i], grad_of(g, params[i], coupling), states[i], t)
    return params, states


def assert_trajectory(make_opt, update, seed=0, coupling=0.3, zero_frac=0.0, rtol=1e-9):
    p0, gs = make_problem(seed, zero_frac=zero_frac)
    params, opt = run_ft(make_opt, p0, gs, coupling)
    want, states = run_np(update, p0, gs, coupling)
    for p, w in zip(params, want):
        got = p.detach().numpy()
        assert got.shape == w.shape
        np.testing.assert_allclose(got, w, rtol=rtol, atol=1e-10)
    return params, opt, states, p0


def f32(x):
    """A Python float rounded to float32 (the default dtype of PyTorch's scalar state)."""
    return float(np.float32(x))


def moved(params, p0):
    return all(not np.allclose(p.detach().numpy(), q) for p, q in zip(params, p0))


# ============================================================================ Adamax
@pytest.mark.parametrize("wd,maximize,betas", [
    (0.0, False, (0.9, 0.999)),
    (0.1, False, (0.9, 0.999)),
    (0.05, True, (0.8, 0.95)),
])
def test_adamax_matches_pseudocode(wd, maximize, betas):
    lr, eps = 0.02, 1e-8
    b1, b2 = betas

    def update(p, g, st, t):
        g = -g if maximize else g
        if wd:
            g = g + wd * p
        st["m"] = b1 * st.get("m", 0.0) + (1 - b1) * g
        st["u"] = np.maximum(b2 * st.get("u", np.zeros_like(p)), np.abs(g) + eps)
        return p - lr * st["m"] / ((1 - b1 ** t) * st["u"])

    params, opt, states, p0 = assert_trajectory(
        lambda ps: optim.Adamax(ps, lr=lr, betas=betas, weight_decay=wd, maximize=maximize),
        update)
    assert moved(params, p0)
    for p, st in zip(params, states):
        s = opt.state[p]
        assert s["step"].item() == STEPS
        np.testing.assert_allclose(s["exp_avg"].numpy(), st["m"], rtol=1e-6, atol=1e-12)
        np.testing.assert_allclose(s["exp_inf"].numpy(), st["u"], rtol=1e-6, atol=1e-12)


def test_adamax_defaults():
    p = nn.Parameter(ft.zeros(2))
    opt = optim.Adamax([p])
    d = opt.defaults
    assert d["lr"] == 2e-3 and d["betas"] == (0.9, 0.999) and d["eps"] == 1e-8
    assert d["weight_decay"] == 0 and d["maximize"] is False and d["foreach"] is None
    assert d["differentiable"] is False and d["capturable"] is False


# ============================================================================ NAdam
@pytest.mark.parametrize("wd,decoupled,maximize,psi", [
    (0.0, False, False, 4e-3),
    (0.1, False, False, 4e-3),
    (0.1, True, False, 4e-3),
    (0.05, True, True, 0.05),
    (0.0, False, True, 0.0),
])
def test_nadam_matches_pseudocode(wd, decoupled, maximize, psi):
    lr, b1, b2, eps = 0.01, 0.9, 0.99, 1e-8

    def update(p, g, st, t):
        g = -g if maximize else g
        if wd:
            if decoupled:
                p = p - lr * wd * p
            else:
                g = g + wd * p
        mu_t = b1 * (1 - 0.5 * 0.96 ** (t * psi))
        mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * psi))
        # PyTorch keeps the product of the mu in a scalar tensor of the default dtype
        # (float32), multiplied in float32
        prod = float(np.float32(st.get("prod", 1.0)) * np.float32(mu_t))
        st["prod"] = prod
        st["m"] = b1 * st.get("m", 0.0) + (1 - b1) * g
        st["v"] = b2 * st.get("v", 0.0) + (1 - b2) * g * g
        m_hat = mu_next * st["m"] / (1 - prod * mu_next) + (1 - mu_t) * g / (1 - prod)
        v_hat = st["v"] / (1 - b2 ** t)
        return p - lr * m_hat / (np.sqrt(v_hat) + eps)

    params, opt, states, p0 = assert_trajectory(
        lambda ps: optim.NAdam(ps, lr=lr, betas=(b1, b2), weight_decay=wd,
                               momentum_decay=psi, decoupled_weight_decay=decoupled,
                               maximize=maximize),
        update)
    assert moved(params, p0)
    for p, st in zip(params, states):
        s = opt.state[p]
        assert s["step"].item() == STEPS
        # mu_product is a default-dtype (float32) scalar tensor, as in PyTorch
        np.testing.assert_allclose(s["mu_product"].item(), st["prod"], rtol=1e-6)
        np.testing.assert_allclose(s["exp_avg_sq"].numpy(), st["v"], rtol=1e-6, atol=1e-12)


def test_nadam_defaults():
    p = nn.Parameter(ft.zeros(2))
    d = optim.NAdam([p]).defaults
    assert d["lr"] == 2e-3 and d["betas"] == (0.9, 0.999) and d["eps"] == 1e-8
    assert d["momentum_decay"] == 4e-3 and d["decoupled_weight_decay"] is False
    assert d["weight_decay"] == 0 and d["maximize"] is False


# ============================================================================ RAdam
@pytest.mark.parametrize("wd,decoupled,maximize,betas", [
    (0.0, False, False, (0.9, 0.999)),     # rho_t > 5 only from step 6 on
    (0.1, False, False, (0.9, 0.9)),       # rectified from step 1... (rho_inf = 19)
    (0.1, True, False, (0.9, 0.999)),
    (0.05, True, True, (0.8, 0.95)),
])
def test_radam_matches_pseudocode(wd, decoupled, maximize, betas):
    lr, eps = 0.01, 1e-8
    b1, b2 = betas
    rho_inf = 2 / (1 - b2) - 1
    branches = set()

    def update(p, g, st, t):
        g = -g if maximize else g
        if wd:
            if decoupled:
                p = p - lr * wd * p
            else:
                g = g + wd * p
        st["m"] = b1 * st.get("m", 0.0) + (1 - b1) * g
        st["v"] = b2 * st.get("v", 0.0) + (1 - b2) * g * g
        m_hat = st["m"] / (1 - b1 ** t)
        rho_t = rho_inf - 2 * t * b2 ** t / (1 - b2 ** t)
        if rho_t > 5:
            branches.add("rect")
            l_t = np.sqrt(1 - b2 ** t) / (np.sqrt(st["v"]) + eps)
            r_t = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf
                            / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            return p - lr * m_hat * r_t * l_t
        branches.add("sgd")
        return p - lr * m_hat

    params, opt, _, p0 = assert_trajectory(
        lambda ps: optim.RAdam(ps, lr=lr, betas=betas, weight_decay=wd,
                               decoupled_weight_decay=decoupled, maximize=maximize),
        update)
    assert moved(params, p0)
    if betas[1] == 0.999:
        assert branches == {"rect", "sgd"}   # both branches ran within the 10 steps
    assert opt.state[params[0]]["step"].item() == STEPS


def test_radam_defaults():
    p = nn.Parameter(ft.zeros(2))
    d = optim.RAdam([p]).defaults
    assert d["lr"] == 1e-3 and d["betas"] == (0.9, 0.999) and d["eps"] == 1e-8
    assert d["decoupled_weight_decay"] is False and d["weight_decay"] == 0


# ============================================================================ Rprop
@pytest.mark.parametrize("maximize,etas,step_sizes,coupling", [
    (False, (0.5, 1.2), (1e-6, 50), 0.0),
    (True, (0.5, 1.2), (1e-6, 50), 0.0),
    (False, (0.3, 1.5), (2e-3, 0.03), 0.0),     # the clamps bind
    (False, (0.5, 1.2), (1e-6, 50), 0.8),
])
def test_rprop_matches_pseudocode(maximize, etas, step_sizes, coupling):
    lr = 0.01
    em, ep = etas
    smin, smax = step_sizes
    seen = []

    def update(p, g, st, t):
        g = -g if maximize else g
        prev = st.get("prev", np.zeros_like(p))
        eta = st.get("eta", np.full_like(p, lr))
        prod = g * prev
        eta = np.where(prod > 0, np.minimum(eta * ep, smax),
                       np.where(prod < 0, np.maximum(eta * em, smin), eta))
        g = np.where(prod < 0, 0.0, g)
        st["prev"], st["eta"] = g, eta
        seen.extend(np.ravel(eta))
        return p - eta * np.sign(g)

    p0, gs = make_problem(3, zero_frac=0.2)
    params, opt = run_ft(lambda ps: optim.Rprop(ps, lr=lr, etas=etas, step_sizes=step_sizes,
                                               maximize=maximize), p0, gs, coupling)
    want, states = run_np(update, p0, gs, coupling)
    for p, w, st in zip(params, want, states):
        np.testing.assert_allclose(p.detach().numpy(), w, rtol=1e-6, atol=1e-12)
        np.testing.assert_allclose(opt.state[p]["step_size"].numpy(), st["eta"], rtol=1e-6)
        np.testing.assert_array_equal(opt.state[p]["prev"].numpy(), st["prev"])
    assert moved(params, p0)
    # every branch was taken somewhere
    eta = np.array(seen)
    assert (eta > lr).any() and (eta < lr).any()
    if smin == 2e-3:
        assert np.isclose(eta, smax).any() and np.isclose(eta, smin).any()


def test_rprop_defaults():
    p = nn.Parameter(ft.zeros(2))
    d = optim.Rprop([p]).defaults
    assert d["lr"] == 1e-2 and d["etas"] == (0.5, 1.2) and d["step_sizes"] == (1e-6, 50)
    assert d["maximize"] is False


# ============================================================================ ASGD
@pytest.mark.parametrize("wd,maximize,lambd,alpha,t0", [
    (0.0, False, 1e-4, 0.75, 1e6),      # the defaults: ax just follows p
    (0.0, False, 0.05, 0.75, 3.0),      # averaging starts after step 4
    (0.1, False, 0.01, 0.5, 2.0),
    (0.05, True, 0.02, 0.9, 0.0),
])
def test_asgd_matches_pseudocode(wd, maximize, lambd, alpha, t0):
    lr = 0.05

    def update(p, g, st, t):
        g = -g if maximize else g
        if wd:
            g = g + wd * p
        # PyTorch keeps eta and mu in scalar tensors of the default dtype (float32)
        eta = st.get("eta", f32(lr))
        mu = st.get("mu", 1.0)
        p = p * (1 - lambd * eta) - eta * g
        ax = st.get("ax", np.zeros_like(p))
        st["ax"] = p.copy() if mu == 1 else ax + mu * (p - ax)
        st["eta"] = f32(lr / (1 + lambd * lr * t) ** alpha)
        st["mu"] = f32(1 / max(1, t - t0))
        return p

    params, opt, states, p0 = assert_trajectory(
        lambda ps: optim.ASGD(ps, lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=wd,
                              maximize=maximize),
        update)
    assert moved(params, p0)
    for p, st in zip(params, states):
        s = opt.state[p]
        np.testing.assert_allclose(s["ax"].numpy(), st["ax"], rtol=1e-6, atol=1e-10)
        np.testing.assert_allclose(s["eta"].item(), st["eta"], rtol=1e-6)
        np.testing.assert_allclose(s["mu"].item(), st["mu"], rtol=1e-6)
        if t0 < STEPS - 1:
            assert not np.allclose(s["ax"].numpy(), p.detach().numpy())   # really averaged


def test_asgd_defaults():
    p = nn.Parameter(ft.zeros(2))
    d = optim.ASGD([p]).defaults
    assert d["lr"] == 1e-2 and d["lambd"] == 1e-4 and d["alpha"] == 0.75
    assert d["t0"] == 1e6 and d["weight_decay"] == 0 and d["maximize"] is False


# ============================================================================ common
ALL_OPTS = [
    ("Adamax", lambda ps: optim.Adamax(ps, lr=0.02, weight_decay=0.1)),
    ("NAdam", lambda ps: optim.NAdam(ps, lr=0.02, weight_decay=0.1,
                                     decoupled_weight_decay=True)),
    ("RAdam", lambda ps: optim.RAdam(ps, lr=0.02, betas=(0.9, 0.99), weight_decay=0.1)),
    ("Rprop", lambda ps: optim.Rprop(ps, lr=0.02)),
    ("ASGD", lambda ps: optim.ASGD(ps, lr=0.02, lambd=0.01, t0=2.0, weight_decay=0.1)),
]


@pytest.mark.parametrize("name,make", ALL_OPTS, ids=[n for n, _ in ALL_OPTS])
@pytest.mark.parametrize("via_pickle", [False, True])
def test_state_dict_round_trip_continues_identically(name, make, via_pickle):
    p0, gs = make_problem(11, zero_frac=0.1)
    params, opt = run_ft(make, p0, gs, 0.3, stop=5)
    sd = opt.state_dict()
    assert sorted(sd["state"]) == list(range(len(SHAPES)))
    assert sd["param_groups"][0]["params"] == list(range(len(SHAPES)))
    if via_pickle:
        sd = pickle.loads(pickle.dumps(sd))
    else:
        sd = copy.deepcopy(sd)
    params2 = [nn.Parameter(p.detach().clone()) for p in params]
    opt2 = make(params2)
    opt2.load_state_dict(sd)
    for p, q in zip(params, params2):
        assert set(opt.state[p]) == set(opt2.state[q])
        assert opt2.state[q]["step"].item() == 5
    run_ft(make, p0, gs, 0.3, start=5, params=params, opt=opt)
    run_ft(make, p0, gs, 0.3, start=5, params=params2, opt=opt2)
    for p, q in zip(params, params2):
        # NAdam's mu_product and ASGD's eta/mu are float32 scalars in the original and come
        # back in the parameter dtype (as PyTorch casts them), hence the tolerance.
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-7,
                                   atol=1e-12)
    # the continued run equals an uninterrupted one
    full, _ = run_ft(make, p0, gs, 0.3)
    for p, f in zip(params2, full):
        np.testing.assert_allclose(p.detach().numpy(), f.detach().numpy(), rtol=1e-7,
                                   atol=1e-12)


@pytest.mark.parametrize("name,make", ALL_OPTS, ids=[n for n, _ in ALL_OPTS])
def test_float32_params_follow_float64_run(name, make):
    p0, gs = make_problem(5)
    p32, _ = run_ft(make, p0, gs, 0.3, dtype=ft.float32)
    p64, _ = run_ft(make, p0, gs, 0.3, dtype=ft.float64)
    for a, b in zip(p32, p64):
        assert a.dtype == ft.float32
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-4,
                                   atol=1e-5)


@pytest.mark.parametrize("name,make", ALL_OPTS, ids=[n for n, _ in ALL_OPTS])
def test_none_grads_skipped_and_groups(name, make):
    a = nn.Parameter(ft.tensor([1.0, -2.0], dtype=ft.float64))
    b = nn.Parameter(ft.tensor([0.5, 0.25], dtype=ft.float64))
    opt = make([a, b])
    a.grad = ft.tensor([0.3, -0.4], dtype=ft.float64)
    opt.step()
    assert b not in opt.state or len(opt.state[b]) == 0
    np.testing.assert_array_equal(b.detach().numpy(), [0.5, 0.25])
    assert not np.allclose(a.detach().numpy(), [1.0, -2.0])
    # per-group hyper-parameters: lr=0 leaves the group's parameter unchanged (ASGD's
    # lambd decay and decoupled weight decay also scale with lr)
    c = nn.Parameter(ft.tensor([1.0, 2.0], dtype=ft.float64))
    d = nn.Parameter(ft.tensor([1.0, 2.0], dtype=ft.float64))
    opt = make([{"params": [c]}, {"params": [d], "lr": 0.0}])
    assert opt.param_groups[1]["lr"] == 0.0
    for _ in range(3):
        c.grad = ft.tensor([0.5, -0.5], dtype=ft.float64)
        d.grad = ft.tensor([0.5, -0.5], dtype=ft.float64)
        opt.step()
    if name == "Rprop":
        # the step sizes start at lr = 0 but are clamped up to step_sizes[0] = 1e-6
        np.testing.assert_allclose(np.abs(d.detach().numpy() - [1.0, 2.0]),
                                   1e-6 * (1 + 1.2 + 1.44),
                                   rtol=1e-6)
    else:
        np.testing.assert_array_equal(d.detach().numpy(), [1.0, 2.0])
    assert not np.allclose(c.detach().numpy(), [1.0, 2.0])


@pytest.mark.parametrize("name,make", ALL_OPTS, ids=[n for n, _ in ALL_OPTS])
def test_step_closure_returns_loss(name, make):
    w = nn.Parameter(ft.tensor([1.0, -1.0], dtype=ft.float64))
    opt = make([w])

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert loss.item() == pytest.approx(2.0)
    assert not np.allclose(w.detach().numpy(), [1.0, -1.0])


def test_training_reduces_loss_with_each_optimizer():
    rng = np.random.default_rng(0)
    x = ft.tensor(rng.standard_normal((32, 3)), dtype=ft.float32)
    y = ft.tensor(rng.standard_normal((32, 1)), dtype=ft.float32)
    for make in [lambda ps: optim.Adamax(ps, lr=0.05), lambda ps: optim.NAdam(ps, lr=0.05),
                 lambda ps: optim.RAdam(ps, lr=0.05), lambda ps: optim.Rprop(ps),
                 lambda ps: optim.ASGD(ps, lr=0.05)]:
        ft.manual_seed(0)
        model = nn.Linear(3, 1)
        opt = make(model.parameters())
        losses = []
        for _ in range(30):
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        assert losses[-1] < 0.8 * losses[0]


@pytest.mark.parametrize("make,msg", [
    (lambda p: optim.Adamax(p, lr=-1), "Invalid learning rate: -1"),
    (lambda p: optim.Adamax(p, eps=-1), "Invalid epsilon value: -1"),
    (lambda p: optim.Adamax(p, betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
    (lambda p: optim.Adamax(p, betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    (lambda p: optim.Adamax(p, weight_decay=-1), "Invalid weight_decay value: -1"),
    (lambda p: optim.NAdam(p, lr=-1), "Invalid learning rate: -1"),
    (lambda p: optim.NAdam(p, eps=-1e-3), "Invalid epsilon value: -0.001"),
    (lambda p: optim.NAdam(p, betas=(0.9, 1.0)), "Invalid beta parameter at index 1: 1.0"),
    (lambda p: optim.NAdam(p, weight_decay=-2), "Invalid weight_decay value: -2"),
    (lambda p: optim.NAdam(p, momentum_decay=-1), "Invalid momentum_decay value: -1"),
    (lambda p: optim.RAdam(p, lr=-0.5), "Invalid learning rate: -0.5"),
    (lambda p: optim.RAdam(p, betas=(-0.1, 0.9)), "Invalid beta parameter at index 0: -0.1"),
    (lambda p: optim.RAdam(p, weight_decay=-1), "Invalid weight_decay value: -1"),
    (lambda p: optim.Rprop(p, lr=-1), "Invalid learning rate: -1"),
    (lambda p: optim.Rprop(p, etas=(1.2, 0.5)), "Invalid eta values: 1.2, 0.5"),
    (lambda p: optim.Rprop(p, etas=(0.0, 1.2)), "Invalid eta values: 0.0, 1.2"),
    (lambda p: optim.ASGD(p, lr=-1), "Invalid learning rate: -1"),
    (lambda p: optim.ASGD(p, weight_decay=-1), "Invalid weight_decay value: -1"),
])
def test_invalid_hyperparameters(make, msg):
    p = nn.Parameter(ft.zeros(2))
    with pytest.raises(ValueError) as e:
        make([p])
    assert str(e.value) == msg


def test_empty_params_and_kwargs_accepted():
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        optim.NAdam([])
    p = nn.Parameter(ft.zeros(2))
    optim.Adamax([p], foreach=None, maximize=True, differentiable=False, capturable=False)
    optim.NAdam([p], foreach=None, capturable=False, differentiable=False)
    optim.RAdam([p], foreach=False, capturable=False, differentiable=False)
    optim.Rprop([p], foreach=None, capturable=False, differentiable=False)
    optim.ASGD([p], foreach=None, capturable=False, differentiable=False)


# ============================================================================ CyclicLR
def _sgd(lrs=(0.1,), momentum=0.9):
    groups = [{"params": [nn.Parameter(ft.zeros(2))], "lr": lr} for lr in lrs]
    return optim.SGD(groups, lr=lrs[0], momentum=momentum)


def _cyclic_closed_form(i, base, top, up, down, mode, gamma=1.0):
    """The lr (and the fraction of the way up, scale) at iteration ``i``: linear up over
    ``up`` iterations, down over ``down``."""
    total = up + down
    pos = i % total
    frac = pos / up if pos <= up else 1 - (pos - up) / down
    cycle = i // total + 1
    scale = {"triangular": 1.0, "triangular2": 0.5 ** (cycle - 1),
             "exp_range": gamma ** i}[mode]
    return base + (top - base) * frac * scale, frac * scale


@pytest.mark.parametrize("mode,up,down,gamma", [
    ("triangular", 4, None, 1.0),
    ("triangular2", 5, 3, 1.0),
    ("exp_range", 3, 6, 0.97),
    ("triangular", 7, 2, 1.0),
])
def test_cyclic_lr_matches_closed_form(mode, up, down, gamma):
    opt = _sgd()
    sched = lr_scheduler.CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=up,
                                  step_size_down=down, mode=mode, gamma=gamma,
                                  base_momentum=0.8, max_momentum=0.95)
    dn = up if down is None else down
    for i in range(60):
        want, frac = _cyclic_closed_form(i, 0.01, 0.1, up, dn, mode, gamma)
        assert opt.param_groups[0]["lr"] == pytest.approx(want, rel=1e-12, abs=1e-15)
        assert sched.get_last_lr() == [opt.param_groups[0]["lr"]]
        assert opt.param_groups[0]["momentum"] == pytest.approx(0.95 - 0.15 * frac,
                                                                rel=1e-12)
        opt.step()
        sched.step()
    assert opt.param_groups[0]["max_momentum"] == 0.95
    assert opt.param_groups[0]["base_momentum"] == 0.8


def test_cyclic_lr_beta1_groups_and_custom_scale_fn():
    ps = [nn.Parameter(ft.zeros(2)), nn.Parameter(ft.zeros(3))]
    opt = optim.Adam([{"params": [ps[0]]}, {"params": [ps[1]]}], lr=1.0, betas=(0.5, 0.99))
    fn = lambda x: 1.0 / (1.0 + 0.1 * x)  # noqa: E731
    sched = lr_scheduler.CyclicLR(opt, base_lr=[0.001, 0.002], max_lr=(0.01, 0.05),
                                  step_size_up=3, scale_fn=fn, scale_mode="iterations",
                                  base_momentum=[0.85, 0.8], max_momentum=0.9)
    for i in range(25):
        for g, (b, t, bm) in zip(opt.param_groups, [(0.001, 0.01, 0.85), (0.002, 0.05, 0.8)]):
            pos = i % 6
            frac = pos / 3 if pos <= 3 else 1 - (pos - 3) / 3
            assert g["lr"] == pytest.approx(b + (t - b) * frac * fn(i), rel=1e-12)
            assert g["betas"][0] == pytest.approx(0.9 - (0.9 - bm) * frac * fn(i), rel=1e-12)
            assert g["betas"][1] == 0.99
        sched.step()


def test_cyclic_lr_scale_mode_cycle_custom_and_state_dict():
    class Halve:
        def __init__(self):
            self.base = 0.5

        def __call__(self, x):
            return self.base ** (x - 1)

    opt = _sgd()
    sched = lr_scheduler.CyclicLR(opt, 0.0, 1.0, step_size_up=2, scale_fn=Halve(),
                                  cycle_momentum=False)
    lrs = []
    for _ in range(12):
        lrs.append(opt.param_groups[0]["lr"])
        sched.step()
    np.testing.assert_allclose(lrs, [0, 0.5, 1, 0.5, 0, 0.25, 0.5, 0.25, 0, 0.125, 0.25, 0.125],
                               atol=1e-15)
    assert opt.param_groups[0]["momentum"] == 0.9   # untouched without cycle_momentum
    sd = sched.state_dict()
    assert sd["_scale_fn_custom"] == {"base": 0.5}
    assert "_scale_fn_ref" not in sd
    sd = pickle.loads(pickle.dumps(sd))
    opt2 = _sgd()
    fn2 = Halve()
    fn2.base = 0.0
    sched2 = lr_scheduler.CyclicLR(opt2, 0.0, 1.0, step_size_up=2, scale_fn=fn2,
                                   cycle_momentum=False)
    sched2.load_state_dict(sd)
    assert fn2.base == 0.5 and sched2.last_epoch == 12
    for _ in range(5):
        sched.step()
        sched2.step()
        assert sched2.get_last_lr() == sched.get_last_lr()


def test_cyclic_lr_builtin_modes_state_dict_round_trip():
    opt = _sgd()
    sched = lr_scheduler.CyclicLR(opt, 0.01, 0.1, step_size_up=3, mode="exp_range",
                                  gamma=0.9)
    for _ in range(7):
        sched.step()
    sd = sched.state_dict()
    assert sd["_scale_fn_custom"] is None
    opt2 = _sgd()
    sched2 = lr_scheduler.CyclicLR(opt2, 0.01, 0.1, step_size_up=3, mode="exp_range",
                                   gamma=0.9)
    sched2.load_state_dict(sd)
    for _ in range(10):
        sched.step()
        sched2.step()
        assert sched2.get_last_lr() == sched.get_last_lr()
        assert opt2.param_groups[0]["momentum"] == opt.param_groups[0]["momentum"]
    want, _ = _cyclic_closed_form(17, 0.01, 0.1, 3, 3, "exp_range", 0.9)
    assert sched2.get_last_lr()[0] == pytest.approx(want, rel=1e-12)


def test_cyclic_lr_errors():
    with pytest.raises(ValueError, match="mode is invalid and scale_fn is None"):
        lr_scheduler.CyclicLR(_sgd(), 0.01, 0.1, mode="sawtooth")
    p = nn.Parameter(ft.zeros(2))
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1 with "
                                         "`cycle_momentum` option enabled"):
        lr_scheduler.CyclicLR(optim.Adagrad([p]), 0.01, 0.1)
    lr_scheduler.CyclicLR(optim.Adagrad([p]), 0.01, 0.1, cycle_momentum=False)
    with pytest.raises(ValueError) as e:
        lr_scheduler.CyclicLR(_sgd((0.1, 0.2)), [0.01], 0.1)
    assert str(e.value) == ("base_lr must have the same length as optimizer.param_groups. "
                            "base_lr has 1 values, param_groups has 2.")
    with pytest.raises(TypeError, match="is not an Optimizer"):
        lr_scheduler.CyclicLR(object(), 0.01, 0.1)


# ============================================================================ SGDR
def _sgdr_closed_form(epoch, base, eta_min, t0, t_mult):
    start, period = 0.0, t0
    while epoch >= start + period:
        start += period
        period *= t_mult
    t_cur = epoch - start
    return eta_min + (base - eta_min) * (1 + math.cos(math.pi * t_cur / period)) / 2


@pytest.mark.parametrize("t0,t_mult,eta_min", [(5, 1, 0.0), (3, 2, 0.001), (2, 3, 0.01)])
def test_cosine_warm_restarts_integer_steps(t0, t_mult, eta_min):
    opt = _sgd((0.1, 0.3))
    sched = lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=t0, T_mult=t_mult,
                                                     eta_min=eta_min)
    restarts = 0
    for epoch in range(70):
        for g, base in zip(opt.param_groups, (0.1, 0.3)):
            assert g["lr"] == pytest.approx(_sgdr_closed_form(epoch, base, eta_min, t0, t_mult),
                                            rel=1e-12, abs=1e-15)
        restarts += opt.param_groups[0]["lr"] == pytest.approx(0.1)
        assert sched.last_epoch == epoch
        opt.step()
        sched.step()
    assert restarts >= 3


@pytest.mark.parametrize("t0,t_mult", [(4, 1), (3, 2)])
def test_cosine_warm_restarts_fractional_epochs(t0, t_mult):
    opt = _sgd()
    sched = lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=t0, T_mult=t_mult,
                                                     eta_min=0.002)
    iters = 7
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # no deprecation warning for step(epoch), as PyTorch
        for epoch in range(20):
            for i in range(iters):
                e = epoch + i / iters
                sched.step(e)
                assert opt.param_groups[0]["lr"] == pytest.approx(
                    _sgdr_closed_form(e, 0.1, 0.002, t0, t_mult), rel=1e-9, abs=1e-15)
                assert sched.last_epoch == epoch
    # jumping back before T_0 resets the period
    sched.step(1.5)
    assert sched.T_i == t0 and sched.T_cur == 1.5
    assert opt.param_groups[0]["lr"] == pytest.approx(
        0.002 + 0.098 * (1 + math.cos(math.pi * 1.5 / t0)) / 2)


def test_cosine_warm_restarts_state_dict_and_errors():
    opt = _sgd()
    sched = lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2)
    for _ in range(5):
        sched.step()
    sd = pickle.loads(pickle.dumps(sched.state_dict()))
    assert sd["T_i"] == 6 and sd["T_cur"] == 2
    opt2 = _sgd()
    sched2 = lr_scheduler.CosineAnnealingWarmRestarts(opt2, T_0=3, T_mult=2)
    sched2.load_state_dict(sd)
    for _ in range(12):
        sched.step()
        sched2.step()
        assert sched2.get_last_lr() == sched.get_last_lr()
    with pytest.raises(ValueError, match="Expected positive integer T_0, but got 0"):
        lr_scheduler.CosineAnnealingWarmRestarts(_sgd(), T_0=0)
    with pytest.raises(ValueError, match="Expected positive integer T_0, but got 2.5"):
        lr_scheduler.CosineAnnealingWarmRestarts(_sgd(), T_0=2.5)
    with pytest.raises(ValueError, match="Expected integer T_mult >= 1, but got 0"):
        lr_scheduler.CosineAnnealingWarmRestarts(_sgd(), T_0=2, T_mult=0)
    with pytest.raises(ValueError, match="Expected float or int eta_min"):
        lr_scheduler.CosineAnnealingWarmRestarts(_sgd(), T_0=2, eta_min="0")
    with pytest.raises(ValueError, match="Expected non-negative epoch, but got -1"):
        sched.step(-1)


def test_other_schedulers_closed_forms():
    # ConstantLR / PolynomialLR / MultiplicativeLR / ChainedScheduler already existed; check
    # them against their closed forms over many steps
    opt = _sgd()
    s = lr_scheduler.ConstantLR(opt, factor=0.25, total_iters=4)
    for e in range(10):
        assert opt.param_groups[0]["lr"] == pytest.approx(0.1 * (0.25 if e < 4 else 1.0))
        s.step()
    opt = _sgd()
    s = lr_scheduler.PolynomialLR(opt, total_iters=6, power=2.0)
    for e in range(10):
        assert opt.param_groups[0]["lr"] == pytest.approx(
            0.1 * (1 - min(e, 6) / 6) ** 2, abs=1e-15)
        s.step()
    opt = _sgd()
    s = lr_scheduler.MultiplicativeLR(opt, lambda e: 0.9 if e % 2 else 0.5)
    want = 0.1
    for e in range(10):
        if e > 0:
            want *= 0.9 if e % 2 else 0.5
        assert opt.param_groups[0]["lr"] == pytest.approx(want, rel=1e-12)
        s.step()
    opt = _sgd()
    s = lr_scheduler.ChainedScheduler([lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=3),
                                       lr_scheduler.ExponentialLR(opt, gamma=0.9)])
    for e in range(10):
        assert opt.param_groups[0]["lr"] == pytest.approx(
            0.1 * (0.5 if e < 3 else 1.0) * 0.9 ** e, rel=1e-12)
        s.step()


# ============================================================================ swa_utils
def _net(seed=0):
    ft.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.ReLU(), nn.Linear(3, 2),
                         nn.BatchNorm1d(2)).double()


def _perturb(model, rng):
    """Move every parameter and buffer of ``model`` to new random values (a stand-in for
    training steps); return NumPy snapshots of the parameters and the buffers."""
    with ft.no_grad():
        for p in model.parameters():
            p.copy_(ft.tensor(rng.standard_normal(tuple(p.shape))))
        for b in model.buffers():
            if b.is_floating_point():
                b.copy_(ft.tensor(rng.random(tuple(b.shape)) + 0.5))
            else:
                b.fill_(int(rng.integers(0, 50)))
    return ([p.detach().numpy().copy() for p in model.parameters()],
            [b.detach().numpy().copy() for b in model.buffers()])


def test_averaged_model_swa_running_mean():
    rng = np.random.default_rng(0)
    model = _net()
    swa = swa_utils.AveragedModel(model)
    assert isinstance(swa, nn.Module) and int(swa.n_averaged) == 0
    assert swa.n_averaged.dtype == ft.int64
    assert list(swa.state_dict())[:3] == ["n_averaged", "module.0.weight", "module.0.bias"]
    # a deep copy: its parameters are distinct tensors
    assert all(a is not b for a, b in zip(swa.parameters(), model.parameters()))
    snaps, bufs = [], None
    for k in range(6):
        params, bufs = _perturb(model, rng)
        snaps.append(params)
        swa.update_parameters(model)
        assert int(swa.n_averaged) == k + 1
        for i, p in enumerate(swa.module.parameters()):
            want = np.mean([s[i] for s in snaps], axis=0)
            np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-12, atol=1e-14)
            assert p.requires_grad
        # without use_buffers the buffers follow the latest model
        for b, want in zip(swa.module.buffers(), bufs):
            np.testing.assert_array_equal(b.detach().numpy(), want)
    # forward runs the averaged copy
    x = ft.tensor(rng.standard_normal((5, 4)))
    swa.eval()
    model.eval()
    with ft.no_grad():
        for p, q in zip(model.parameters(), swa.module.parameters()):
            p.copy_(q)
    np.testing.assert_allclose(swa(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-12)
    # state_dict round trip
    swa2 = swa_utils.AveragedModel(_net(1))
    swa2.load_state_dict(swa.state_dict())
    assert int(swa2.n_averaged) == 6
    for a, b in zip(swa2.parameters(), swa.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


@pytest.mark.parametrize("kind", ["multi", "single"])
def test_averaged_model_ema(kind):
    rng = np.random.default_rng(1)
    decay = 0.8 if kind == "single" else 0.9
    model = _net()
    if kind == "multi":
        swa = swa_utils.AveragedModel(model,
                                      multi_avg_fn=swa_utils.get_ema_multi_avg_fn(decay))
    else:
        swa = swa_utils.AveragedModel(model, avg_fn=swa_utils.get_ema_avg_fn(decay))
    ema = None
    for _ in range(5):
        params, _ = _perturb(model, rng)
        ema = params if ema is None else [decay * e + (1 - decay) * p
                                          for e, p in zip(ema, params)]
        swa.update_parameters(model)
    for p, want in zip(swa.module.parameters(), ema):
        np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-12, atol=1e-14)
    assert int(swa.n_averaged) == 5


def test_averaged_model_use_buffers_and_custom_avg_fn():
    rng = np.random.default_rng(2)
    model = _net()
    swa = swa_utils.AveragedModel(model, use_buffers=True)
    p_snaps, b_snaps = [], []
    for _ in range(4):
        params, bufs = _perturb(model, rng)
        p_snaps.append(params)
        b_snaps.append(bufs)
        swa.update_parameters(model)
    for i, p in enumerate(swa.module.parameters()):
        np.testing.assert_allclose(p.detach().numpy(),
                                   np.mean([s[i] for s in p_snaps], axis=0), rtol=1e-12)
    for i, b in enumerate(swa.module.buffers()):
        if b.is_floating_point():
            np.testing.assert_allclose(b.detach().numpy(),
                                       np.mean([s[i] for s in b_snaps], axis=0), rtol=1e-12)
        else:
            # integer buffers: avg + (cur - avg) / (n + 1), truncated back to int64
            avg = b_snaps[0][i]
            for n, s in enumerate(b_snaps[1:], start=1):
                avg = np.trunc(avg + (s[i] - avg) / (n + 1)).astype(np.int64)
            np.testing.assert_array_equal(b.detach().numpy(), avg)
    # a custom avg_fn gets the current average, the model's value and n_averaged
    seen = []

    def keep_max(avg, cur, n):
        seen.append(int(n))
        return ft.maximum(avg, cur)

    model = _net()
    swa = swa_utils.AveragedModel(model, avg_fn=keep_max)
    snaps = []
    for _ in range(3):
        snaps.append(_perturb(model, rng)[0])
        swa.update_parameters(model)
    for i, p in enumerate(swa.module.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(),
                                      np.max([s[i] for s in snaps], axis=0))
    n_params = len(list(model.parameters()))
    assert seen == [1] * n_params + [2] * n_params
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        swa_utils.AveragedModel(model, avg_fn=keep_max,
                                multi_avg_fn=swa_utils.get_swa_multi_avg_fn())


def test_swa_multi_avg_fn_and_avg_fns_directly():
    a = [ft.tensor([1.0, 2.0], dtype=ft.float64), ft.tensor([4.0], dtype=ft.float64)]
    b = [ft.tensor([3.0, 6.0], dtype=ft.float64), ft.tensor([0.0], dtype=ft.float64)]
    swa_utils.get_swa_multi_avg_fn()(a, b, ft.tensor(3))
    np.testing.assert_allclose(a[0].numpy(), [1.5, 3.0])
    np.testing.assert_allclose(a[1].numpy(), [3.0])
    out = swa_utils.get_swa_avg_fn()(ft.tensor([1.0]), ft.tensor([5.0]), ft.tensor(1))
    np.testing.assert_allclose(out.numpy(), [3.0])
    out = swa_utils.get_ema_avg_fn(0.75)(ft.tensor([4.0]), ft.tensor([8.0]), 7)
    np.testing.assert_allclose(out.numpy(), [5.0])


def _bn_ref(h, gamma, beta, eps=1e-5):
    mean = h.mean(axis=0)
    var_b = h.var(axis=0)
    out = (h - mean) / np.sqrt(var_b + eps) * gamma + beta
    return out, mean, h.var(axis=0, ddof=1)


@pytest.mark.parametrize("tuples", [True, False])
def test_update_bn_recomputes_running_stats(tuples):
    rng = np.random.default_rng(3)
    model = _net()
    _perturb(model, rng)        # garbage running stats and random weights
    bn1, bn2 = model[1], model[4]
    bn1.momentum = 0.3
    model.eval()
    xs = [rng.standard_normal((n, 4)) for n in (8, 5, 11, 6)]
    loader = [(ft.tensor(x), ft.tensor(np.zeros(len(x)))) if tuples else ft.tensor(x)
              for x in xs]
    swa_utils.update_bn(loader, model)
    assert bn1.momentum == 0.3 and bn2.momentum == 0.1
    assert model.training is False
    w1, b1 = model[0].weight.detach().numpy(), model[0].bias.detach().numpy()
    g1, be1 = bn1.weight.detach().numpy(), bn1.bias.detach().numpy()
    w2, b2 = model[3].weight.detach().numpy(), model[3].bias.detach().numpy()
    g2, be2 = bn2.weight.detach().numpy(), bn2.bias.detach().numpy()
    stats1, stats2 = [], []
    for x in xs:
        out1, m1, v1 = _bn_ref(x @ w1.T + b1, g1, be1)
        _, m2, v2 = _bn_ref(np.maximum(out1, 0) @ w2.T + b2, g2, be2)
        stats1.append((m1, v1))
        stats2.append((m2, v2))
    for bn, stats in ((bn1, stats1), (bn2, stats2)):
        # momentum=None: cumulative (equal-weight) averages of the batch statistics
        np.testing.assert_allclose(bn.running_mean.numpy(),
                                   np.mean([m for m, _ in stats], axis=0), rtol=1e-10)
        np.testing.assert_allclose(bn.running_var.numpy(),
                                   np.mean([v for _, v in stats], axis=0), rtol=1e-10)
        assert int(bn.num_batches_tracked) == len(xs)


def test_update_bn_on_averaged_model_and_without_bn():
    rng = np.random.default_rng(4)
    model = _net()
    swa = swa_utils.AveragedModel(model)
    swa.update_parameters(model)
    xs = [ft.tensor(rng.standard_normal((6, 4))) for _ in range(3)]
    swa.train()
    swa_utils.update_bn(xs, swa)
    assert swa.training is True
    bn = swa.module[1]
    w, b = swa.module[0].weight.detach().numpy(), swa.module[0].bias.detach().numpy()
    means = [(x.numpy() @ w.T + b).mean(axis=0) for x in xs]
    np.testing.assert_allclose(bn.running_mean.numpy(), np.mean(means, axis=0), rtol=1e-10)

    def never():
        raise AssertionError("the loader is not read when there is no BatchNorm")
        yield

    swa_utils.update_bn(never(), nn.Linear(2, 2))


@pytest.mark.parametrize("strategy,anneal_epochs", [("cos", 5), ("linear", 4), ("cos", 0),
                                                    ("linear", 1)])
def test_swalr_matches_closed_form(strategy, anneal_epochs):
    opt = _sgd((0.5, 0.2))
    sched = swa_utils.SWALR(opt, swa_lr=[0.05, 0.01], anneal_epochs=anneal_epochs,
                            anneal_strategy=strategy)
    assert [g["swa_lr"] for g in opt.param_groups] == [0.05, 0.01]
    for k in range(12):
        t = 1.0 if anneal_epochs == 0 else min(1.0, k / anneal_epochs)
        alpha = (1 - math.cos(math.pi * t)) / 2 if strategy == "cos" else t
        for g, lr0, swa_lr in zip(opt.param_groups, (0.5, 0.2), (0.05, 0.01)):
            assert g["lr"] == pytest.approx(swa_lr * alpha + lr0 * (1 - alpha), rel=1e-12)
        opt.step()
        sched.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(0.05)


def test_swalr_after_another_schedule_and_errors():
    # the usual recipe: a cosine schedule, then SWALR from wherever the lr got to
    opt = _sgd()
    cos = lr_scheduler.CosineAnnealingLR(opt, T_max=10)
    for _ in range(4):
        cos.step()
    lr_start = opt.param_groups[0]["lr"]
    swa_sched = swa_utils.SWALR(opt, swa_lr=0.02, anneal_epochs=3, anneal_strategy="linear")
    lrs = []
    for _ in range(5):
        swa_sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    want = [0.02 * min(1, k / 3) + lr_start * (1 - min(1, k / 3)) for k in range(1, 6)]
    np.testing.assert_allclose(lrs, want, rtol=1e-12)
    with pytest.raises(ValueError) as e:
        swa_utils.SWALR(_sgd(), swa_lr=0.1, anneal_strategy="exp")
    assert str(e.value) == ("anneal_strategy must be one of 'cos' or 'linear', instead got "
                            "exp")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0, "
                                         "got -1"):
        swa_utils.SWALR(_sgd(), swa_lr=0.1, anneal_epochs=-1)
    with pytest.raises(ValueError, match="swa_lr must have the same length"):
        swa_utils.SWALR(_sgd(), swa_lr=[0.1, 0.2])


def test_exports():
    for name in ["Adamax", "NAdam", "RAdam", "Rprop", "ASGD"]:
        assert issubclass(getattr(optim, name), optim.Optimizer)
    for name in ["CyclicLR", "CosineAnnealingWarmRestarts", "ConstantLR", "PolynomialLR",
                 "MultiplicativeLR", "ChainedScheduler"]:
        assert name in lr_scheduler.__all__
        assert issubclass(getattr(lr_scheduler, name), lr_scheduler.LRScheduler)
    assert optim.swa_utils is swa_utils
    assert set(swa_utils.__all__) == {"AveragedModel", "update_bn", "SWALR",
                                      "get_ema_multi_avg_fn", "get_swa_multi_avg_fn",
                                      "get_ema_avg_fn", "get_swa_avg_fn"}
    assert issubclass(swa_utils.SWALR, lr_scheduler.LRScheduler)
