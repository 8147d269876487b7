"""Regression tests from a differential parity sweep of ``ferrotorch.optim`` against PyTorch.

The expected values are hard-coded (taken from PyTorch 2.15) or computed with NumPy, so the
tests run without torch; the ``*_vs_torch`` tests compare directly when torch is installed.
"""

import copy
import math
import warnings

import numpy as np
import pytest

import ferrotorch as ft
from ferrotorch.optim import lr_scheduler as S


def _sgd(lr=0.1, ngroups=2, **kw):
    ps = [ft.nn.Parameter(ft.zeros(2)) for _ in range(ngroups)]
    groups = [dict(params=[p], lr=lr * (i + 1)) for i, p in enumerate(ps)]
    return ft.optim.SGD(groups, lr=lr, momentum=0.9, **kw)


def _lrs(sched):
    return [float(v) for v in sched.get_last_lr()]


# --------------------------------------------------------------------------- optimizers

TENSOR_LR_OPTIMS = ["Adam", "AdamW", "Adamax", "NAdam", "RAdam", "Rprop", "ASGD"]


def _run_steps(name, lr, steps=4):
    p = ft.nn.Parameter(ft.tensor(np.array([1.0, -2.0, 3.0])))
    opt = getattr(ft.optim, name)([p], lr=lr)
    for _ in range(steps):
        opt.zero_grad()
        (p ** 3).sum().backward()
        opt.step()
    return p.detach().numpy(), opt


@pytest.mark.parametrize("name", TENSOR_LR_OPTIMS)
def test_tensor_lr_stays_a_tensor_in_param_groups(name):
    lr = ft.tensor(0.01, dtype=ft.float64)
    got, opt = _run_steps(name, lr)
    assert opt.param_groups[0]["lr"] is lr
    want, _ = _run_steps(name, 0.01)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # A scheduler fills the same tensor in place.
    sched = S.StepLR(opt, step_size=1, gamma=0.5)
    opt.step()
    sched.step()
    assert opt.param_groups[0]["lr"] is lr
    assert float(lr) == pytest.approx(0.005)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop",
                                  "Rprop", "ASGD", "Adagrad", "Adadelta", "Adafactor", "LBFGS"])
def test_tensor_lr_must_have_one_element(name):
    p = ft.nn.Parameter(ft.zeros(2))
    with pytest.raises(ValueError, match="^Tensor lr must be 1-element$"):
        getattr(ft.optim, name)([p], lr=ft.tensor([0.01, 0.02]))


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "Adagrad"])
def test_fused_flag_conflicts(name):
    p = ft.nn.Parameter(ft.zeros(2))
    cls = getattr(ft.optim, name)
    with pytest.raises(RuntimeError, match="^`fused` and `foreach` cannot be `True` together.$"):
        cls([p], lr=0.1, fused=True, foreach=True)
    with pytest.raises(RuntimeError, match="^`fused` does not support `differentiable`$"):
        cls([p], lr=0.1, fused=True, differentiable=True)
    cls([p], lr=0.1, fused=False, foreach=True)  # accepted


def test_adam_tensor_lr_with_foreach_rejected():
    p = ft.nn.Parameter(ft.zeros(2))
    with pytest.raises(ValueError, match="lr as a Tensor is not supported for "
                                         "capturable=False and foreach=True"):
        ft.optim.Adam([p], lr=ft.tensor(0.01), foreach=True)
    ft.optim.Adam([p], lr=ft.tensor(0.01), foreach=True, capturable=True)


def test_named_parameters():
    model = ft.nn.Linear(2, 1)
    opt = ft.optim.SGD(model.named_parameters(), lr=0.1, momentum=0.9)
    assert opt.param_groups[0]["param_names"] == ["weight", "bias"]
    assert opt.param_groups[0]["params"][0] is model.weight
    model(ft.ones(1, 2)).sum().backward()
    opt.step()
    sd = opt.state_dict()
    assert sd["param_groups"][0]["param_names"] == ["weight", "bias"]
    assert sd["param_groups"][0]["params"] == [0, 1]
    assert sorted(sd["state"]) == [0, 1]
    np.testing.assert_allclose(sd["state"][1]["momentum_buffer"].numpy(), [1.0])
    # Loading a dict without names keeps the optimizer's names.
    opt2 = ft.optim.SGD(model.named_parameters(), lr=0.5)
    sd_no_names = copy.deepcopy(sd)
    del sd_no_names["param_groups"][0]["param_names"]
    opt2.load_state_dict(sd_no_names)
    assert opt2.param_groups[0]["param_names"] == ["weight", "bias"]
    assert opt2.param_groups[0]["lr"] == 0.1
    with pytest.raises(ValueError, match="Some param names are missing"):
        ft.optim.SGD([("w", model.weight), model.bias], lr=0.1)
    with pytest.raises(ValueError, match="cannot add param group without names"):
        opt.add_param_group({"params": [ft.nn.Parameter(ft.zeros(1))]})


def test_set_of_params_warns():
    p = ft.nn.Parameter(ft.zeros(2))
    with pytest.warns(FutureWarning, match="ordering of tensors in sets will change"):
        ft.optim.SGD({p}, lr=0.1)
    with pytest.raises(TypeError, match="ordering of tensors in sets"):
        ft.optim.SGD([{"params": {p}}], lr=0.1)


def test_retains_grad_non_leaf_can_be_optimized():
    x = ft.ones(2, requires_grad=True)
    y = x * 2
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        ft.optim.SGD([y], lr=0.1)
    y.retain_grad()
    ft.optim.SGD([y], lr=0.1)


def test_state_dict_hooks():
    p = ft.nn.Parameter(ft.zeros(2))
    opt = ft.optim.SGD([p], lr=0.1)
    calls = []
    h1 = opt.register_state_dict_pre_hook(lambda o: calls.append("pre"))
    opt.register_state_dict_post_hook(lambda o, sd: calls.append("post"))
    opt.register_state_dict_post_hook(lambda o, sd: calls.append("post0"), prepend=True)
    sd = opt.state_dict()
    assert calls == ["pre", "post0", "post"]
    h1.remove()

    def replace_lr(o, sd):
        sd = copy.deepcopy(sd)
        sd["param_groups"][0]["lr"] = 0.25
        return sd

    opt.register_load_state_dict_pre_hook(replace_lr)
    opt.register_load_state_dict_post_hook(lambda o: calls.append("loaded"))
    calls.clear()
    opt.load_state_dict(sd)
    assert opt.param_groups[0]["lr"] == 0.25
    assert calls == ["loaded"]
    assert sd["param_groups"][0]["lr"] == 0.1  # the caller's dict is not modified


def test_load_state_dict_goes_through_setstate():
    p = ft.nn.Parameter(ft.zeros(2))
    opt = ft.optim.SGD([p], lr=0.1)
    sd = opt.state_dict()
    del sd["param_groups"][0]["nesterov"]  # an old state dict without the option
    opt2 = ft.optim.SGD([p], lr=0.1)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["nesterov"] is False
    adamw = ft.optim.AdamW([p])
    sd = adamw.state_dict()
    sd["param_groups"][0]["decoupled_weight_decay"] = False
    adamw.load_state_dict(sd)
    assert adamw.param_groups[0]["decoupled_weight_decay"] is True


# LBFGS(maximize=True, max_eval=6, strong_wolfe): PyTorch 2.15's values.
LBFGS_MAX_LOSSES = [-7.9551, -0.8692172476, -0.8678202719]
LBFGS_MAX_X = [0.4102474887, 0.41024096, 0.4102414872]


def _lbfgs_maximize(lib):
    x = lib.nn.Parameter(lib.tensor(np.array([1.5, -0.5, 0.3])))
    opt = lib.optim.LBFGS([x], lr=1, max_iter=10, max_eval=6, line_search_fn="strong_wolfe",
                          maximize=True)

    def closure():
        opt.zero_grad()
        loss = -((x - 1) ** 4).sum() - (x ** 2).sum()
        loss.backward()
        return loss

    losses = [float(opt.step(closure).detach()) for _ in range(3)]
    return losses, x.detach().numpy(), opt.state[x]["func_evals"], opt


def test_lbfgs_maximize_and_line_search_budget():
    losses, x, evals, opt = _lbfgs_maximize(ft)
    np.testing.assert_allclose(losses, LBFGS_MAX_LOSSES, rtol=1e-9)
    np.testing.assert_allclose(x, LBFGS_MAX_X, rtol=1e-8)
    # max_eval bounds the strong-Wolfe evaluations of each step (2 per step here).
    assert evals == 12
    assert opt.state_dict()["param_groups"][0]["maximize"] is True


def test_lbfgs_tensor_lr():
    def run(lr):
        x = ft.nn.Parameter(ft.tensor(np.array([1.5, -0.5, 0.3])))
        opt = ft.optim.LBFGS([x], lr=lr)

        def closure():
            opt.zero_grad()
            loss = ((x - 1) ** 4).sum() + (x ** 2).sum()
            loss.backward()
            return loss

        opt.step(closure)
        return x.detach().numpy()

    np.testing.assert_allclose(run(ft.tensor(0.5, dtype=ft.float64)), run(0.5), rtol=1e-12)


# --------------------------------------------------------------------------- schedulers

# (name, kwargs, lrs of group 0 after resuming with last_epoch=4, then 5 steps); PyTorch 2.15.
RESUME_CASES = [
    ("ExponentialLR", dict(gamma=0.9), [0.1 * 0.9 ** k for k in range(4, 10)]),
    ("MultiplicativeLR", dict(lr_lambda=lambda e: 0.9), [0.1 * 0.9 ** k for k in range(4, 10)]),
    ("LinearLR", dict(start_factor=0.5, total_iters=6),
     [0.1 / 1.2, 0.1 / 1.1] + [0.1 / 1.1] * 4),
    ("PolynomialLR", dict(total_iters=10), [0.06, 0.048, 0.036, 0.024, 0.012, 0.0]),
    ("CosineAnnealingLR", dict(T_max=7),
     [0.038873953302, 0.010224773787, 0.0, 0.004951556605, 0.018825509907, 0.038873953302]),
]


@pytest.mark.parametrize("name,kwargs,want", RESUME_CASES, ids=[c[0] for c in RESUME_CASES])
def test_resume_with_last_epoch_keeps_current_lr(name, kwargs, want):
    opt = _sgd()
    sched = getattr(S, name)(opt, **kwargs)
    for _ in range(4):
        opt.step()
        sched.step()
    resumed = getattr(S, name)(opt, last_epoch=4, **kwargs)
    got = [_lrs(resumed)[0]]
    for _ in range(5):
        opt.step()
        resumed.step()
        got.append(_lrs(resumed)[0])
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    assert "_is_initial" in resumed.state_dict()


def _record(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn()
    return [str(x.message) for x in w]


def test_scheduler_step_before_optimizer_step_warns():
    opt = _sgd()
    sched = S.StepLR(opt, 2)
    msgs = _record(sched.step)
    assert len(msgs) == 1 and msgs[0].startswith(
        "Detected call of `lr_scheduler.step()` before `optimizer.step()`.")
    opt = _sgd()
    sched = S.StepLR(opt, 2)
    opt.step()
    assert _record(sched.step) == []
    assert _record(sched.step) == []


def test_overridden_optimizer_step_warns():
    opt = _sgd()
    sched = S.ExponentialLR(opt, 0.9)
    opt.step = lambda closure=None: None
    msgs = _record(sched.step)
    assert len(msgs) == 1 and msgs[0].startswith(
        "Seems like `optimizer.step()` has been overridden")


def test_get_lr_outside_step_warns():
    opt = _sgd()
    sched = S.StepLR(opt, 2)
    opt.step()
    sched.step()
    msgs = _record(sched.get_lr)
    assert msgs == ["To get the last learning rate computed by the scheduler, please use "
                    "`get_last_lr()`."]
    swalr = ft.optim.swa_utils.SWALR(opt, swa_lr=0.05)
    assert len(_record(swalr.get_lr)) == 1


def test_reduce_lr_on_plateau_epoch_deprecation_and_new_groups():
    opt = _sgd()
    sched = S.ReduceLROnPlateau(opt, patience=0, factor=0.5, min_lr=0.01)
    msgs = _record(lambda: sched.step(1.0, 3))
    assert len(msgs) == 1 and msgs[0].startswith("The epoch parameter in `scheduler.step()`")
    assert sched.last_epoch == 3
    opt.add_param_group({"params": [ft.nn.Parameter(ft.zeros(1))], "lr": 0.04})
    sched.step(2.0)
    assert _lrs(sched) == pytest.approx([0.05, 0.1, 0.02])
    assert sched.min_lrs == [0.01] * 3
    opt = _sgd()
    sched = S.ReduceLROnPlateau(opt, patience=0, min_lr=[0.0, 0.0])
    sched.step(1.0)
    opt.add_param_group({"params": [ft.nn.Parameter(ft.zeros(1))]})
    with pytest.raises(RuntimeError, match="differs from when `ReduceLROnPlateau` was "
                                           "initialized"):
        sched.step(2.0)


def test_chained_and_sequential_checks():
    opt, other = _sgd(), _sgd()
    s1, s2 = S.StepLR(opt, 2), S.ExponentialLR(other, 0.9)
    with pytest.raises(ValueError, match="ChainedScheduler expects all schedulers to belong "
                                         "to the same optimizer"):
        S.ChainedScheduler([s1, s2])
    with pytest.raises(ValueError, match="SequentialLR expects all schedulers to belong to "
                                         "the same optimizer"):
        S.SequentialLR(opt, [s1, s2], milestones=[3])
    plateau = S.ReduceLROnPlateau(opt)
    with pytest.raises(ValueError, match="ChainedScheduler does not support "
                                         "`ReduceLROnPlateau`"):
        S.ChainedScheduler([plateau])
    with pytest.raises(ValueError, match="SequentialLR does not support `ReduceLROnPlateau`"):
        S.SequentialLR(opt, [plateau], milestones=[])


# SequentialLR redoes the initial step of the ChainedScheduler, which steps its schedulers
# before any optimizer.step() (PyTorch warns the same way).
@pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)`")
def test_sequential_of_chained_scheduler():
    p = ft.nn.Parameter(ft.zeros(1))
    opt = ft.optim.SGD([p], lr=1.0)
    chained = S.ChainedScheduler([S.ConstantLR(opt, factor=0.5, total_iters=2),
                                  S.ExponentialLR(opt, 0.9)])
    sched = S.SequentialLR(opt, [chained, S.LinearLR(opt, 0.1, total_iters=3)],
                           milestones=[3])
    got = []
    for _ in range(8):
        opt.step()
        sched.step()
        got.append(opt.param_groups[0]["lr"])
    np.testing.assert_allclose(got, [0.405, 0.729, 0.1, 0.4, 0.7, 1.0, 1.0, 1.0], rtol=1e-12)


def test_error_messages():
    opt = _sgd()
    with pytest.raises(KeyError, match="when resuming scheduler with last_epoch >= 0"):
        S.StepLR(opt, 2, last_epoch=3)
    with pytest.raises(ValueError, match=r"^max_lr must have the same length as "
                                         r"optimizer.param_groups. max_lr has 1 values, "
                                         r"param_groups has 2.$"):
        S.OneCycleLR(opt, [0.1], total_steps=5)
    with pytest.raises(ValueError, match="^max_momentum must have the same length"):
        S.OneCycleLR(opt, 0.1, total_steps=5, max_momentum=[0.9])


@pytest.mark.parametrize("make", [
    lambda opt: S.OneCycleLR(opt, max_lr=0.5, total_steps=10),
    lambda opt: S.CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=2),
    lambda opt: S.CosineAnnealingWarmRestarts(opt, T_0=3),
    lambda opt: S.ReduceLROnPlateau(opt, patience=0),
], ids=["OneCycleLR", "CyclicLR", "CosineAnnealingWarmRestarts", "ReduceLROnPlateau"])
def test_tensor_lr_filled_in_place(make):
    p = ft.nn.Parameter(ft.zeros(1))
    lr = ft.tensor(0.1)
    opt = ft.optim.SGD([p], lr=lr, momentum=0.9)
    sched = make(opt)
    for _ in range(3):
        opt.step()
        if isinstance(sched, S.ReduceLROnPlateau):
            sched.step(1.0)
        else:
            sched.step()
    assert opt.param_groups[0]["lr"] is lr
    last = sched.get_last_lr()[0]
    assert isinstance(last, ft.Tensor) and last is not lr
    assert float(last) == float(lr)


def test_swalr_state_dict_round_trip():
    opt = _sgd()
    sched = ft.optim.swa_utils.SWALR(opt, swa_lr=0.05, anneal_epochs=4,
                                     anneal_strategy="linear")
    sd = sched.state_dict()
    assert "anneal_func" not in sd and sd["_anneal_strategy"] == "linear"
    opt2 = _sgd()
    sched2 = ft.optim.swa_utils.SWALR(opt2, swa_lr=0.05, anneal_epochs=4)
    sched2.load_state_dict(sd)
    assert sched2.anneal_func(0.25) == 0.25
    got = []
    for _ in range(5):
        opt2.step()
        sched2.step()
        got.append(_lrs(sched2)[0])
    want = [0.05 * t + 0.1 * (1 - t) for t in (0.25, 0.5, 0.75, 1.0, 1.0)]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_cosine_annealing_warm_restarts_fractional_epochs():
    opt = _sgd()
    sched = S.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2, eta_min=0.01)
    got = []
    for i in range(12):
        opt.step()
        sched.step(i * 0.37)
        got.append(_lrs(sched)[0])
    want = []
    for i in range(12):
        e = i * 0.37
        n = int(math.log(e / 2 + 1, 2)) if e >= 2 else 0
        t_cur, t_i = e - 2 * (2 ** n - 1), 2 * 2 ** n
        want.append(0.01 + 0.09 * (1 + math.cos(math.pi * t_cur / t_i)) / 2)
    np.testing.assert_allclose(got, want, rtol=1e-12)


# --------------------------------------------------------------------------- vs torch

def _sched_lrs(lib, make, steps=25):
    ps = [lib.nn.Parameter(lib.zeros(2)) for _ in range(2)]
    opt = lib.optim.SGD([dict(params=[ps[0]], lr=0.1), dict(params=[ps[1]], lr=0.2)], lr=0.1,
                        momentum=0.9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sched = make(lib, opt)
        out = [[float(v) for v in sched.get_last_lr()]]
        for _ in range(steps):
            opt.step()
            sched.step()
            out.append([float(v) for v in sched.get_last_lr()] + [opt.param_groups[0]["momentum"]])
    return out


SCHED_MAKERS = {
    "resume_exponential": lambda L, o: (L.optim.lr_scheduler.ExponentialLR(o, 0.9),
                                        L.optim.lr_scheduler.ExponentialLR(o, 0.9,
                                                                           last_epoch=0))[1],
    "resume_cosine": lambda L, o: (L.optim.lr_scheduler.CosineAnnealingLR(o, 7),
                                   L.optim.lr_scheduler.CosineAnnealingLR(o, 7, last_epoch=3))[1],
    "onecycle_three_phase": lambda L, o: L.optim.lr_scheduler.OneCycleLR(
        o, max_lr=[0.5, 1.0], total_steps=25, three_phase=True, anneal_strategy="linear"),
    "cyclic_exp_range": lambda L, o: L.optim.lr_scheduler.CyclicLR(
        o, base_lr=0.01, max_lr=[0.1, 0.2], step_size_up=3, mode="exp_range", gamma=0.9),
    "sequential_nested": lambda L, o: L.optim.lr_scheduler.SequentialLR(
        o, [L.optim.lr_scheduler.ChainedScheduler([
            L.optim.lr_scheduler.ConstantLR(o, factor=0.5, total_iters=2),
            L.optim.lr_scheduler.ExponentialLR(o, 0.9)]),
            L.optim.lr_scheduler.PolynomialLR(o, total_iters=6, power=2.0)], milestones=[4]),
}


@pytest.mark.parametrize("key", list(SCHED_MAKERS))
def test_schedulers_vs_torch(key):
    torch = pytest.importorskip("torch")
    want = _sched_lrs(torch, SCHED_MAKERS[key])
    got = _sched_lrs(ft, SCHED_MAKERS[key])
    np.testing.assert_allclose(np.array(got[1:]), np.array(want[1:]), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-10)


def test_lbfgs_maximize_vs_torch():
    torch = pytest.importorskip("torch")
    a = _lbfgs_maximize(torch)
    b = _lbfgs_maximize(ft)
    np.testing.assert_allclose(b[0], a[0], rtol=1e-10)
    np.testing.assert_allclose(b[1], a[1], rtol=1e-10)
    assert a[2] == b[2]


@pytest.mark.parametrize("name", TENSOR_LR_OPTIMS)
def test_tensor_lr_vs_torch(name):
    torch = pytest.importorskip("torch")
    res = []
    for lib in (torch, ft):
        p = lib.nn.Parameter(lib.tensor(np.array([1.0, -2.0, 3.0])))
        opt = getattr(lib.optim, name)([p], lr=lib.tensor(0.01, dtype=lib.float64))
        for _ in range(4):
            opt.zero_grad()
            (p ** 3).sum().backward()
            opt.step()
        res.append((p.detach().numpy(), type(opt.param_groups[0]["lr"]).__name__))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-12)
    assert res[0][1] == res[1][1] == "Tensor"


def test_adam_betas_must_be_both_floats_or_both_tensors():
    p = [ft.nn.Parameter(ft.zeros(3))]
    with pytest.raises(ValueError, match="betas must be either both floats or both Tensors"):
        ft.optim.Adam(p, betas=(ft.tensor(0.9), 0.99))
    with pytest.raises(ValueError, match="betas must be either both floats or both Tensors"):
        ft.optim.AdamW(p, betas=(0.9, 0))
    with pytest.raises(ValueError, match=r"betas\[0\] as a Tensor is not supported"):
        ft.optim.Adam(p, betas=(ft.tensor(0.9), ft.tensor(0.99)), foreach=True)
    opt = ft.optim.Adam(p, betas=(ft.tensor(0.9), ft.tensor(0.99)))
    assert float(opt.param_groups[0]["betas"][1]) == pytest.approx(0.99)
