# ruff: noqa: B007  (loop variables named as in the tutorials)
"""A sixth set of end-to-end programs written the way experienced PyTorch users write them (see
test_e2e_programs.py .. test_e2e_programs5.py for the others, which this set does not repeat):
a MobileNetV3 inverted-residual block (depthwise and dilated grouped convolutions, Hardswish,
squeeze-and-excitation with Hardsigmoid), BatchNorm/Dropout behaviour across train/eval and
no_grad (cumulative running averages, track_running_stats=False), optimizer param_groups edited
mid-training (add_param_group, lr/weight-decay edits, freezing), a SAC-style tanh-squashed
Gaussian policy on torch.distributions, second-order MAML with torch.func.functional_call, a
physics-informed network trained on an ODE residual (autograd.grad with create_graph), Gaussian
process regression through a Cholesky factorisation in float64, a Kim-style text CNN, mixup with
soft targets, entropic optimal transport (Sinkhorn in the log domain), a BPR matrix-factorisation
recommender with Adagrad, multi-label metrics computed with tensors, a sliding-window causal-conv
forecaster fed through Tensor.unfold, evolution strategies over parameters_to_vector, a neural
ODE integrated with RK4, an augmentation pipeline (padding modes, flips, rolls, resizing,
fold/unfold), PCA/whitening/least squares with a LoRA adapter, an LSTM with proj_size feeding
LSTMCell/GRUCell decoders, calibration and robust statistics (bucketize, index_reduce, histc,
LBFGS temperature scaling, kthvalue, nanmedian, quantile, cummax), a padded transformer
classifier with a [CLS] token, conv-BatchNorm fusion surgery with set_submodule, the
optimizer-in-backward pattern (post-accumulate-grad hooks), RNG-state replay for recomputation,
and data cleaning with Tensor.apply_/map_/map2_.

Each program is written once as a function of the module ``M`` (``ferrotorch`` or ``torch``), so
the very same code runs under both; randomness comes from NumPy so that both libraries see the
same data. The plain tests run the program under ferrotorch and check real outcomes; the
``*_matches_torch`` tests (skipped without PyTorch) run it again under PyTorch starting from
ferrotorch's initial weights and compare losses, gradients and outputs."""

import math

import numpy as np
import pytest

import ferrotorch


def _torch():
    return pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _torch_one_thread():
    """PyTorch's intra-op thread pool makes these small programs 20-50x slower on a busy
    2-core machine; one thread (restored afterwards) does not change what is compared."""
    try:
        import torch
    except ImportError:
        yield
        return
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def _np(t):
    return np.array(t.detach().cpu().numpy(), copy=True)


def _sd_np(model):
    return {k: _np(v) for k, v in model.state_dict().items()}


def _start(model, M, init):
    """Load ``init`` (a NumPy state dict, from the other library's run) when given, and return
    the model's starting state as NumPy, so that a second run can begin from the same weights."""
    if init is not None:
        model.load_state_dict({k: M.from_numpy(v.copy()) for k, v in init.items()})
    return _sd_np(model)


def _compare(ft_res, pt_res, rtol=1e-5, atol=1e-6, skip=("init",)):
    assert set(ft_res) == set(pt_res)
    for key in ft_res:
        if key in skip:
            continue
        a, b = ft_res[key], pt_res[key]
        a = _np(a) if hasattr(a, "detach") else np.asarray(a)
        b = _np(b) if hasattr(b, "detach") else np.asarray(b)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=key)


def _grads(model):
    return {n: _np(p.grad) for n, p in model.named_parameters() if p.grad is not None}


def _flat(d, prefix):
    return {f"{prefix}.{k}": v for k, v in d.items()}


# ---------------------------------------------------------------------------- (a)
def mobilenet_v3(M, init=None, steps=4):
    """A MobileNetV3-style net: stem with ReLU6, an inverted-residual block (1x1 expand,
    depthwise 3x3, squeeze-and-excitation, 1x1 project, residual), a dilated grouped conv and
    a linear head; trained a few SGD-momentum steps on a fixed batch."""
    nn, F = M.nn, M.nn.functional

    class SqueezeExcite(nn.Module):
        def __init__(self, c, r=4):
            super().__init__()
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc1 = nn.Conv2d(c, c // r, 1)
            self.fc2 = nn.Conv2d(c // r, c, 1)

        def forward(self, x):
            s = F.relu(self.fc1(self.pool(x)))
            return x * F.hardsigmoid(self.fc2(s))

    class InvertedResidual(nn.Module):
        def __init__(self, c, expand=2):
            super().__init__()
            h = c * expand
            self.block = nn.Sequential(
                nn.Conv2d(c, h, 1, bias=False), nn.BatchNorm2d(h), nn.Hardswish(),
                nn.Conv2d(h, h, 3, padding=1, groups=h, bias=False), nn.BatchNorm2d(h),
                nn.Hardswish(), SqueezeExcite(h),
                nn.Conv2d(h, c, 1, bias=False), nn.BatchNorm2d(c))

        def forward(self, x):
            return x + self.block(x)

    M.manual_seed(0)
    net = nn.Sequential(
        nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU6(),
        InvertedResidual(8),
        nn.Conv2d(8, 16, 3, padding=2, dilation=2, groups=4), nn.Hardswish(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.0), nn.Linear(16, 4))
    res = {"init": _start(net, M, init)}
    rng = np.random.default_rng(1)
    x = M.from_numpy(rng.standard_normal((6, 3, 12, 12)).astype(np.float32))
    y = M.from_numpy(rng.integers(0, 4, 6))
    opt = M.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-4)
    losses = []
    for step in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        if step == 0:
            res.update(_flat(_grads(net), "grad0"))
        opt.step()
        losses.append(loss.item())
    net.eval()
    with M.no_grad():
        res["eval_logits"] = net(x)
    res["losses"] = losses
    res["running_var"] = net[3].block[1].running_var
    return res


def test_mobilenet_v3_block_trains():
    res = mobilenet_v3(ferrotorch, steps=20)
    assert res["losses"][-1] < 0.5 * res["losses"][0]
    assert res["eval_logits"].shape == (6, 4)
    # depthwise conv: one 3x3 filter per channel
    assert res["init"]["3.block.3.weight"].shape == (16, 1, 3, 3)
    assert res["init"]["4.weight"].shape == (16, 2, 3, 3)  # groups=4: 8 / 4 input channels each


def test_mobilenet_v3_matches_torch():
    torch = _torch()
    ft_res = mobilenet_v3(ferrotorch)
    pt_res = mobilenet_v3(torch, init=ft_res["init"])
    _compare(ft_res, pt_res, rtol=2e-4, atol=2e-5)


# ---------------------------------------------------------------------------- (b)
def norm_dropout_modes(M, init=None):
    """BatchNorm and Dropout across train/eval/no_grad: cumulative running averages
    (momentum=None), track_running_stats=False (batch statistics even in eval), running stats
    untouched in eval, num_batches_tracked, Dropout an identity in eval and under F.dropout(
    training=False), and p=1 dropping everything."""
    nn, F = M.nn, M.nn.functional
    M.manual_seed(0)
    bn_cum = nn.BatchNorm1d(3, momentum=None)
    bn_free = nn.BatchNorm1d(3, track_running_stats=False, affine=False)
    bn_2d = nn.BatchNorm2d(2, momentum=0.3, eps=1e-3)
    res = {}
    rng = np.random.default_rng(2)
    batches = [M.from_numpy(rng.standard_normal((5, 3)).astype(np.float32) * (i + 1) + i)
               for i in range(3)]
    for b in batches:
        bn_cum(b)
    res["cum_mean"] = bn_cum.running_mean
    res["cum_var"] = bn_cum.running_var
    res["tracked"] = bn_cum.num_batches_tracked
    bn_cum.eval()
    before = bn_cum.running_mean.clone()
    res["cum_eval_out"] = bn_cum(batches[0])
    res["eval_untouched"] = float(M.equal(before, bn_cum.running_mean))
    bn_free.eval()
    res["free_eval_out"] = bn_free(batches[1])  # batch statistics: no running stats to use
    res["free_has_stats"] = float(bn_free.running_mean is None)
    img = M.from_numpy(rng.standard_normal((4, 2, 3, 3)).astype(np.float32))
    with M.no_grad():
        res["bn2d_train_nograd"] = bn_2d(img)  # train mode still updates stats under no_grad
    res["bn2d_mean"] = bn_2d.running_mean
    res["bn2d_var"] = bn_2d.running_var
    drop = nn.Dropout(0.5)
    drop.eval()
    res["dropout_eval_identity"] = float(M.equal(drop(img), img))
    res["f_dropout_off"] = float(M.equal(F.dropout(img, 0.9, training=False), img))
    res["p1_zero"] = float((F.dropout(img, 1.0) == 0).all())
    x = img.clone().requires_grad_()
    F.dropout(x, 1.0).sum().backward()
    res["p1_grad"] = x.grad
    return res


def test_batchnorm_dropout_train_eval_modes():
    res = norm_dropout_modes(ferrotorch)
    rng = np.random.default_rng(2)
    batches = [rng.standard_normal((5, 3)).astype(np.float32) * (i + 1) + i for i in range(3)]
    np.testing.assert_allclose(_np(res["cum_mean"]), np.mean([b.mean(0) for b in batches], 0),
                               rtol=1e-5)
    np.testing.assert_allclose(_np(res["cum_var"]),
                               np.mean([b.var(0, ddof=1) for b in batches], 0), rtol=1e-5)
    assert int(res["tracked"]) == 3
    assert res["eval_untouched"] == 1.0 and res["free_has_stats"] == 1.0
    b1 = batches[1]
    np.testing.assert_allclose(_np(res["free_eval_out"]),
                               (b1 - b1.mean(0)) / np.sqrt(b1.var(0) + 1e-5), rtol=1e-4,
                               atol=1e-5)
    assert res["dropout_eval_identity"] == res["f_dropout_off"] == res["p1_zero"] == 1.0
    assert float(res["p1_grad"].abs().sum()) == 0.0


def test_batchnorm_dropout_modes_match_torch():
    torch = _torch()
    _compare(norm_dropout_modes(ferrotorch), norm_dropout_modes(torch), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------- (c)
def param_group_edits(M, init=None, steps=12):
    """Fine-tuning where the optimizer is edited mid-training: the head starts alone, the
    backbone joins through ``add_param_group`` with its own lr, the lr of every group is cut by
    hand, weight decay switched off for one group, and a layer frozen (its grad set to None);
    AdamW with amsgrad. The optimizer state (exp_avg) is read back as users do."""
    nn, F = M.nn, M.nn.functional
    M.manual_seed(0)
    backbone = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh())
    head = nn.Linear(8, 2)
    model = nn.Sequential(backbone, head)
    res = {"init": _start(model, M, init)}
    rng = np.random.default_rng(3)
    x = M.from_numpy(rng.standard_normal((16, 4)).astype(np.float32))
    y = M.from_numpy(rng.standard_normal((16, 2)).astype(np.float32))
    opt = M.optim.AdamW(head.parameters(), lr=0.05, weight_decay=0.1, amsgrad=True)
    losses, lrs = [], []
    for step in range(steps):
        if step == 3:
            opt.add_param_group({"params": backbone.parameters(), "lr": 0.01,
                                 "weight_decay": 0.0})
        if step == 6:
            for group in opt.param_groups:
                group["lr"] *= 0.5
            opt.param_groups[0]["weight_decay"] = 0.0
        if step == 8:
            for p in backbone[0].parameters():
                p.requires_grad_(False)
        opt.zero_grad(set_to_none=True)
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        lrs.append([g["lr"] for g in opt.param_groups] + [0.0] * (2 - len(opt.param_groups)))
    res["losses"] = losses
    res["lrs"] = lrs
    res["exp_avg_head"] = opt.state[head.weight]["exp_avg"]
    res["max_exp_avg_sq"] = opt.state[backbone[2].weight]["max_exp_avg_sq"]
    res["frozen_grad_none"] = float(backbone[0].weight.grad is None)
    res["final"] = M.nn.utils.parameters_to_vector(model.parameters())
    res["n_groups"] = len(opt.param_groups)
    res["group_keys"] = float(set(opt.param_groups[1]) >= {"params", "lr", "betas", "eps",
                                                           "weight_decay", "amsgrad"})
    return res


def test_param_group_edits_mid_training():
    res = param_group_edits(ferrotorch)
    assert res["n_groups"] == 2 and res["group_keys"] == 1.0
    assert res["lrs"][0] == [0.05, 0.0] and res["lrs"][3] == [0.05, 0.01]
    assert res["lrs"][-1] == [0.025, 0.005]
    assert res["frozen_grad_none"] == 1.0
    assert res["losses"][-1] < res["losses"][0]
    # the frozen layer kept the values it had when frozen; the others moved on
    init = res["init"]
    final = _np(res["final"])
    assert not np.allclose(final[:32], init["0.0.weight"].ravel())


def test_param_group_edits_match_torch():
    torch = _torch()
    ft_res = param_group_edits(ferrotorch)
    pt_res = param_group_edits(torch, init=ft_res["init"])
    _compare(ft_res, pt_res, rtol=2e-5, atol=1e-6)


# ---------------------------------------------------------------------------- (d)
def squashed_gaussian_policy(M, init=None, steps=5):
    """The SAC actor update: a Gaussian head, ``rsample`` through a tanh squashing, the log-prob
    correction written by hand and through ``TransformedDistribution(TanhTransform)``, an
    entropy-regularised objective against a fixed critic, and ``kl_divergence`` to a prior used
    as a trust-region penalty; the noise comes from NumPy (``loc + scale * eps``)."""
    nn, D = M.nn, M.distributions
    M.manual_seed(0)
    actor = nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 4))
    critic_w = M.tensor([[1.0, -0.5], [0.3, 0.8]])
    res = {"init": _start(actor, M, init)}
    rng = np.random.default_rng(4)
    obs = M.from_numpy(rng.standard_normal((8, 3)).astype(np.float32))
    log_alpha = M.zeros(1, requires_grad=True)
    opt = M.optim.Adam(list(actor.parameters()) + [log_alpha], lr=0.01)
    prior = D.Normal(M.zeros(2), M.ones(2))
    hist = []
    for step in range(steps):
        eps = M.from_numpy(rng.standard_normal((8, 2)).astype(np.float32))
        mu, log_std = actor(obs).chunk(2, dim=-1)
        std = log_std.clamp(-5, 2).exp()
        base = D.Normal(mu, std)
        u = mu + std * eps  # what base.rsample() computes, with our noise
        a = M.tanh(u)
        logp = (base.log_prob(u) - M.log(1 - a.pow(2) + 1e-6)).sum(-1)
        squashed = D.TransformedDistribution(base, [D.transforms.TanhTransform(cache_size=1)])
        logp_td = squashed.log_prob(a).sum(-1)
        q = -((a @ critic_w - 0.3) ** 2).sum(-1)
        alpha = log_alpha.exp()
        kl = D.kl_divergence(D.Independent(base, 1), D.Independent(prior, 1)).mean()
        loss = (alpha.detach() * logp - q).mean() + 0.01 * kl
        alpha_loss = -(log_alpha * (logp.detach() - 2.0)).mean()
        opt.zero_grad()
        (loss + alpha_loss).backward()
        if step == 0:
            res.update(_flat(_grads(actor), "grad0"))
            res["alpha_grad0"] = log_alpha.grad.clone()
            res["logp0"] = logp
            res["logp_td0"] = logp_td
            res["entropy0"] = base.entropy().sum(-1)
        opt.step()
        hist.append([loss.item(), alpha_loss.item(), kl.item()])
    res["hist"] = hist
    res["log_alpha"] = log_alpha
    return res


def test_sac_squashed_gaussian_policy():
    res = squashed_gaussian_policy(ferrotorch, steps=30)
    # the hand-written tanh correction and TanhTransform agree (up to the 1e-6 guard)
    np.testing.assert_allclose(_np(res["logp0"]), _np(res["logp_td0"]), rtol=1e-3, atol=1e-3)
    hist = np.array(res["hist"])
    assert hist[-1, 0] < hist[0, 0]
    assert np.all(hist[:, 2] >= 0)  # a KL divergence
    # the temperature moves toward the target entropy: log_alpha's gradient is logp - target
    assert float(res["alpha_grad0"]) == pytest.approx(-(_np(res["logp0"]) - 2.0).mean(),
                                                      rel=1e-5)


def test_sac_squashed_gaussian_matches_torch():
    torch = _torch()
    ft_res = squashed_gaussian_policy(ferrotorch)
    pt_res = squashed_gaussian_policy(torch, init=ft_res["init"])
    _compare(ft_res, pt_res, rtol=2e-4, atol=2e-5)


# ---------------------------------------------------------------------------- (e)
def maml_sine(M, init=None, meta_steps=3, inner_steps=2):
    """Second-order MAML on sine regression with ``torch.func.functional_call``: the inner loop
    takes gradient steps on a dict of fast weights with ``create_graph=True``, the outer loss on
    the query set backpropagates through them into the meta-parameters."""
    nn, F = M.nn, M.nn.functional
    M.manual_seed(0)
    net = nn.Sequential(nn.Linear(1, 20), nn.Tanh(), nn.Linear(20, 20), nn.Tanh(),
                        nn.Linear(20, 1))
    res = {"init": _start(net, M, init)}
    meta_opt = M.optim.Adam(net.parameters(), lr=0.01)
    rng = np.random.default_rng(5)
    inner_lr = 0.1
    hist = []
    for meta_step in range(meta_steps):
        meta_opt.zero_grad()
        outer_total = 0.0
        for task in range(2):
            amp_, phase = rng.uniform(0.5, 2.0), rng.uniform(0, math.pi)
            xs = rng.uniform(-3, 3, (2, 10, 1)).astype(np.float32)
            ys = (amp_ * np.sin(xs + phase)).astype(np.float32)
            x_s, x_q = M.from_numpy(xs[0]), M.from_numpy(xs[1])
            y_s, y_q = M.from_numpy(ys[0]), M.from_numpy(ys[1])
            fast = dict(net.named_parameters())
            for _ in range(inner_steps):
                inner = F.mse_loss(M.func.functional_call(net, fast, (x_s,)), y_s)
                grads = M.autograd.grad(inner, list(fast.values()), create_graph=True)
                fast = {n: w - inner_lr * g for (n, w), g in zip(fast.items(), grads)}
            outer = F.mse_loss(M.func.functional_call(net, fast, (x_q,)), y_q)
            (outer / 2).backward()
            outer_total += outer.item() / 2
        if meta_step == 0:
            res.update(_flat(_grads(net), "meta_grad0"))
        meta_opt.step()
        hist.append(outer_total)
    res["hist"] = hist
    return res


def test_maml_second_order_meta_gradient():
    M = ferrotorch
    res = maml_sine(M, meta_steps=1)
    # the meta-gradient differs from the first-order one (it flows through the inner grads)
    fo = maml_first_order_grad(M, res["init"])
    diff = max(np.abs(res[f"meta_grad0.{k}"] - v).max() for k, v in fo.items())
    assert diff > 1e-4
    assert all(np.isfinite(v).all() for k, v in res.items() if k.startswith("meta_grad0"))


def maml_first_order_grad(M, init):
    """The same first meta-step with the inner gradients detached (FOMAML)."""
    F = M.nn.functional
    net = M.nn.Sequential(M.nn.Linear(1, 20), M.nn.Tanh(), M.nn.Linear(20, 20), M.nn.Tanh(),
                          M.nn.Linear(20, 1))
    _start(net, M, init)
    rng = np.random.default_rng(5)
    for task in range(2):
        amp_, phase = rng.uniform(0.5, 2.0), rng.uniform(0, math.pi)
        xs = rng.uniform(-3, 3, (2, 10, 1)).astype(np.float32)
        ys = (amp_ * np.sin(xs + phase)).astype(np.float32)
        fast = dict(net.named_parameters())
        for _ in range(2):
            inner = F.mse_loss(M.func.functional_call(net, fast, (M.from_numpy(xs[0]),)),
                               M.from_numpy(ys[0]))
            grads = M.autograd.grad(inner, list(fast.values()))
            fast = {n: w - 0.1 * g for (n, w), g in zip(fast.items(), grads)}
        outer = F.mse_loss(M.func.functional_call(net, fast, (M.from_numpy(xs[1]),)),
                           M.from_numpy(ys[1]))
        (outer / 2).backward()
    return _grads(net)


def test_maml_matches_torch():
    torch = _torch()
    ft_res = maml_sine(ferrotorch)
    pt_res = maml_sine(torch, init=ft_res["init"])
    _compare(ft_res, pt_res, rtol=2e-4, atol=2e-6)


# ---------------------------------------------------------------------------- (f)
def pinn_oscillator(M, init=None, steps=60):
    """A physics-informed network for u'' + u = 0, u(0) = 0, u'(0) = 1 (solution sin x):
    derivatives of the network with respect to its input by ``autograd.grad`` with
    ``create_graph=True`` (twice), the residual and boundary terms trained with Adam."""
    nn = M.nn
    M.manual_seed(0)
    net = nn.Sequential(nn.Linear(1, 24), nn.Tanh(), nn.Linear(24, 24), nn.Tanh(),
                        nn.Linear(24, 1))
    res = {"init": _start(net, M, init)}
    x = M.linspace(0, math.pi, 32).unsqueeze(1).requires_grad_(True)
    x0 = M.zeros(1, 1, requires_grad=True)
    opt = M.optim.Adam(net.parameters(), lr=0.01)
    losses = []
    for step in range(steps):
        opt.zero_grad()
        u = net(x)
        du = M.autograd.grad(u, x, grad_outputs=M.ones_like(u), create_graph=True)[0]
        d2u = M.autograd.grad(du, x, grad_outputs=M.ones_like(du), create_graph=True)[0]
        u0 = net(x0)
        du0 = M.autograd.grad(u0.sum(), x0, create_graph=True)[0]
        loss = (d2u + u).pow(2).mean() + u0.pow(2).sum() + (du0 - 1).pow(2).sum()
        loss.backward()
        if step == 0:
            res.update(_flat(_grads(net), "grad0"))
            res["d2u0"] = d2u
        opt.step()
        losses.append(loss.item())
    res["losses"] = losses
    with M.no_grad():
        res["u"] = net(M.linspace(0, math.pi, 7).unsqueeze(1))
    return res


def test_pinn_learns_the_oscillator():
    res = pinn_oscillator(ferrotorch, steps=400)
    assert res["losses"][-1] < 0.02 * res["losses"][0]
    u = _np(res["u"]).ravel()
    np.testing.assert_allclose(u, np.sin(np.linspace(0, math.pi, 7)), atol=0.15)


def test_pinn_second_derivative_and_grads_match_torch():
    torch = _torch()
    ft_res = pinn_oscillator(ferrotorch, steps=5)
    pt_res = pinn_oscillator(torch, init=ft_res["init"], steps=5)
    _compare(ft_res, pt_res, rtol=5e-4, atol=5e-6)


# ---------------------------------------------------------------------------- (g)
def gp_regression(M, steps=25):
    """Exact Gaussian-process regression in float64: an RBF kernel from ``cdist``, the
    marginal likelihood through ``linalg.cholesky``/``cholesky_solve`` and the log-determinant
    from the factor's diagonal, hyperparameters (log length scale, log variance, log noise)
    fitted with Adam, then the posterior mean and variance with ``linalg.solve_triangular``."""
    rng = np.random.default_rng(6)
    xs = np.sort(rng.uniform(-3, 3, 20))[:, None]
    ys = np.sin(2 * xs[:, 0]) + 0.1 * rng.standard_normal(20)
    X, y = M.from_numpy(xs), M.from_numpy(ys)
    Xs = M.linspace(-3, 3, 9, dtype=M.float64).unsqueeze(1)
    params = M.zeros(3, dtype=M.float64, requires_grad=True)  # log ell, log sf2, log sn2

    def kernel(a, b, p):
        return p[1].exp() * M.exp(-0.5 * M.cdist(a, b).pow(2) / p[0].exp().pow(2))

    def nll(p):
        K = kernel(X, X, p) + (p[2].exp() + 1e-6) * M.eye(len(X), dtype=M.float64)
        L = M.linalg.cholesky(K)
        alpha = M.cholesky_solve(y.unsqueeze(1), L)
        return (0.5 * (y.unsqueeze(1) * alpha).sum() + L.diagonal().log().sum()
                + 0.5 * len(X) * math.log(2 * math.pi))

    opt = M.optim.Adam([params], lr=0.1)
    hist = []
    for step in range(steps):
        opt.zero_grad()
        loss = nll(params)
        loss.backward()
        if step == 0:
            grad0 = params.grad.clone()
        opt.step()
        hist.append(loss.item())
    with M.no_grad():
        K = kernel(X, X, params) + (params[2].exp() + 1e-6) * M.eye(len(X), dtype=M.float64)
        L = M.linalg.cholesky(K)
        Ks = kernel(X, Xs, params)
        alpha = M.cholesky_solve(y.unsqueeze(1), L)
        mean = (Ks.T @ alpha).squeeze(1)
        v = M.linalg.solve_triangular(L, Ks, upper=False)
        var = params[1].exp() - v.pow(2).sum(0)
    return {"hist": hist, "grad0": grad0, "params": params, "mean": mean, "var": var,
            "nll_fn": nll}


def test_gp_regression_fits_and_gradchecks():
    M = ferrotorch
    res = gp_regression(M, steps=60)
    assert res["hist"][-1] < res["hist"][0] - 5
    xs = np.linspace(-3, 3, 9)
    np.testing.assert_allclose(_np(res["mean"]), np.sin(2 * xs), atol=0.35)
    assert (_np(res["var"]) > 0).all()
    p = M.tensor([0.1, -0.2, -1.0], dtype=M.float64, requires_grad=True)
    assert M.autograd.gradcheck(res["nll_fn"], (p,))


def test_gp_regression_matches_torch():
    torch = _torch()
    ft_res = gp_regression(ferrotorch)
    pt_res = gp_regression(torch)
    _compare(ft_res, pt_res, rtol=1e-8, atol=1e-10, skip=("nll_fn",))


# ---------------------------------------------------------------------------- (h)
def text_cnn(M, init=None, steps=6):
    """Kim's sentence CNN: an embedding with ``padding_idx``, parallel Conv1d filters of widths
    2/3/4 over time, max-over-time pooling, dropout and cross-entropy with label smoothing and
    class weights; Adam with gradient-norm clipping."""
    nn, F = M.nn, M.nn.functional

    class TextCNN(nn.Module):
        def __init__(self, vocab=30, dim=12, n_filters=6, widths=(2, 3, 4), n_classes=3):
            super().__init__()
            self.embed = nn.Embedding(vocab, dim, padding_idx=0)
            self.convs = nn.ModuleList(nn.Conv1d(dim, n_filters, w) for w in widths)
            self.drop = nn.Dropout(0.0)
            self.fc = nn.Linear(n_filters * len(widths), n_classes)

        def forward(self, tokens):
            e = self.embed(tokens).transpose(1, 2)  # (B, dim, T)
            pooled = [F.relu(conv(e)).amax(dim=2) for conv in self.convs]
            return self.fc(self.drop(M.cat(pooled, dim=1)))

    M.manual_seed(0)
    model = TextCNN()
    res = {"init": _start(model, M, init)}
    rng = np.random.default_rng(7)
    lengths = rng.integers(4, 11, 12)
    tokens = np.zeros((12, 10), dtype=np.int64)
    labels = rng.integers(0, 3, 12)
    for i, n in enumerate(lengths):
        # the class is carried by a marker token (1, 2 or 3) somewhere in the sentence
        tokens[i, :n] = rng.integers(4, 30, n)
        tokens[i, rng.integers(0, n)] = labels[i] + 1
    x, y = M.from_numpy(tokens), M.from_numpy(labels)
    crit = nn.CrossEntropyLoss(weight=M.tensor([1.0, 2.0, 1.5]), label_smoothing=0.1)
    opt = M.optim.Adam(model.parameters(), lr=0.02)
    losses = []
    for step in range(steps):
        opt.zero_grad()
        loss = crit(model(x), y)
        loss.backward()
        if step == 0:
            res.update(_flat(_grads(model), "grad0"))
        res["norm"] = nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        opt.step()
        losses.append(loss.item())
    res["losses"] = losses
    res["pad_row"] = model.embed.weight[0]
    model.eval()
    with M.no_grad():
        res["acc"] = (model(x).argmax(1) == y).float().mean()
    return res


def test_text_cnn_learns_marker_tokens():
    res = text_cnn(ferrotorch, steps=40)
    assert res["losses"][-1] < 0.5 * res["losses"][0]
    assert float(res["acc"]) == 1.0
    assert float(res["pad_row"].abs().sum()) == 0.0  # padding_idx row never trained
    assert res["grad0.embed.weight"][0].tolist() == [0.0] * 12


def test_text_cnn_matches_torch():
    torch = _torch()
    ft_res = text_cnn(ferrotorch)
    pt_res = text_cnn(torch, init=ft_res["init"])
    _compare(ft_res, pt_res, rtol=2e-4, atol=2e-6)


# ---------------------------------------------------------------------------- (i)
def mixup_soft_targets(M, init=None, steps=5):
    """Mixup: pairs of examples blended with a Beta-distributed weight (drawn in NumPy), the
    loss with soft (probability) targets in ``cross_entropy`` next to the usual two-term form,
    plus label smoothing on the probability targets and KL-divergence to the soft targets."""
    nn, F = M.nn, M.nn.functional
    M.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 4))
    res = {"init": _start(model, M, init)}
    rng = np.random.default_rng(8)
    opt = M.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    hist = []
    for step in range(steps):
        x = M.from_numpy(rng.standard_normal((10, 5)).astype(np.float32))
        y = M.from_numpy(rng.integers(0, 4, 10))
        lam = float(rng.beta(0.4, 0.4))
        perm = M.from_numpy(rng.permutation(10))
        mixed = lam * x + (1 - lam) * x[perm]
        soft = lam * F.one_hot(y, 4).float() + (1 - lam) * F.one_hot(y[perm], 4).float()
        logits = model(mixed)
        loss = F.cross_entropy(logits, soft)
        two_term = lam * F.cross_entropy(logits, y) + (1 - lam) * F.cross_entropy(logits, y[perm])
        smoothed = F.cross_entropy(logits, soft, label_smoothing=0.2)
        kl = F.kl_div(F.log_softmax(logits, -1), soft, reduction="batchmean")
        opt.zero_grad()
        loss.backward()
        if step == 0:
            res.update(_flat(_grads(model), "grad0"))
        opt.step()
        hist.append([loss.item(), two_term.item(), smoothed.item(), kl.item()])
    res["hist"] = hist
    return res


def test_mixup_soft_target_losses():
    hist = np.array(mixup_soft_targets(ferrotorch)["hist"])
    np.testing.assert_allclose(hist[:, 0], hist[:, 1], rtol=1e-5)  # linear in the target
    assert np.all(hist[:, 3] >= -1e-6)
    assert np.all(hist[:, 2] != hist[:, 0])


def test_mixup_matches_torch():
    torch = _torch()
    ft_res = mixup_soft_targets(ferrotorch)
    pt_res = mixup_soft_targets(torch, init=ft_res["init"])
    _compare(ft_res, pt_res, rtol=1e-4, atol=1e-6)


# ---------------------------------------------------------------------------- (j)
def sinkhorn(M, a_np, b_np, xs, ys, eps=0.5, iters=100):
    """Entropic optimal transport between two point clouds, Sinkhorn iterations in the log
    domain (``logsumexp``); returns the transport cost and the plan (differentiable in the
    points)."""
    x = M.from_numpy(xs).requires_grad_(True)
    y = M.from_numpy(ys)
    C = M.cdist(x, y).pow(2)
    log_a, log_b = M.from_numpy(a_np).log(), M.from_numpy(b_np).log()
    f = M.zeros_like(log_a)
    g = M.zeros_like(log_b)
    for _ in range(iters):
        f = -eps * M.logsumexp((g.unsqueeze(0) - C) / eps + log_b.unsqueeze(0), dim=1)
        g = -eps * M.logsumexp((f.unsqueeze(1) - C) / eps + log_a.unsqueeze(1), dim=0)
    log_plan = (f.unsqueeze(1) + g.unsqueeze(0) - C) / eps + log_a.unsqueeze(1) \
        + log_b.unsqueeze(0)
    plan = log_plan.exp()
    cost = (plan * C).sum()
    cost.backward()
    return {"cost": cost, "plan": plan, "grad_x": x.grad}


def _ot_data():
    rng = np.random.default_rng(9)
    xs = rng.standard_normal((6, 2))
    ys = rng.standard_normal((5, 2)) + np.array([2.0, 0.0])
    a = rng.uniform(0.5, 1.5, 6)
    b = rng.uniform(0.5, 1.5, 5)
    return a / a.sum(), b / b.sum(), xs, ys


def test_sinkhorn_transport_plan():
    M = ferrotorch
    a, b, xs, ys = _ot_data()
    res = sinkhorn(M, a, b, xs, ys)
    plan = _np(res["plan"])
    np.testing.assert_allclose(plan.sum(0), b, atol=1e-8)  # the last update fixes the columns
    np.testing.assert_allclose(plan.sum(1), a, atol=1e-3)
    # moving the source cloud toward the target lowers the cost: the gradient points away
    assert (_np(res["grad_x"])[:, 0] < 0).all()

    def cost_of(x):
        C = M.cdist(x, M.from_numpy(ys)).pow(2)
        f = M.zeros(6, dtype=M.float64)
        g = M.zeros(5, dtype=M.float64)
        la, lb = M.from_numpy(a).log(), M.from_numpy(b).log()
        for _ in range(10):
            f = -0.5 * M.logsumexp((g - C) / 0.5 + lb, dim=1)
            g = -0.5 * M.logsumexp((f.unsqueeze(1) - C) / 0.5 + la.unsqueeze(1), dim=0)
        return ((f.unsqueeze(1) + g - C) / 0.5 + la.unsqueeze(1) + lb).exp().mul(C).sum()

    assert M.autograd.gradcheck(cost_of, (M.from_numpy(xs).requires_grad_(True),))


def test_sinkhorn_matches_torch():
    torch = _torch()
    data = _ot_data()
    _compare(sinkhorn(ferrotorch, *data), sinkhorn(torch, *data), rtol=1e-9, atol=1e-12)


# ---------------------------------------------------------------------------- (k)
def bpr_recommender(M, init=None, epochs=3):
    """Matrix factorisation for implicit feedback with the BPR loss (``logsigmoid`` of score
    differences between an observed and a sampled item), user/item biases as 1-wide
    embeddings, ``max_norm`` renormalising the looked-up item rows in place, Adagrad with
    weight decay, and top-k recommendation that masks the already seen items."""
    nn, F = M.nn, M.nn.functional

    class MF(nn.Module):
        def __init__(self, n_users=8, n_items=12, dim=6):
            super().__init__()
            self.users = nn.Embedding(n_users, dim)
            self.items = nn.Embedding(n_items, dim, max_norm=1.5)
            self.item_bias = nn.Embedding(n_items, 1)
            nn.init.zeros_(self.item_bias.weight)

        def score(self, u, i):
            return (self.users(u) * self.items(i)).sum(-1) + self.item_bias(i).squeeze(-1)

    M.manual_seed(0)
    model = MF()
    res = {"init": _start(model, M, init)}
    rng = np.random.default_rng(10)
    # users u and u + 4 like the items congruent to u mod 4; each has seen two of the three
    seen = np.zeros((8, 12), dtype=bool)
    for u in range(8):
        liked = [i for i in range(12) if i % 4 == u % 4]
        seen[u, liked[:2] if u < 4 else liked[1:]] = True
    pairs = np.argwhere(seen)
    opt = M.optim.Adagrad(model.parameters(), lr=0.1, weight_decay=1e-4,
                          initial_accumulator_value=0.1)
    hist = []
    for epoch in range(epochs):
        order = rng.permutation(len(pairs))
        for batch in np.array_split(order, 2):
            u = M.from_numpy(pairs[batch, 0])
            pos = M.from_numpy(pairs[batch, 1])
            neg = M.from_numpy(np.array([rng.choice(np.flatnonzero(~seen[k])) for k in
                                         pairs[batch, 0]]))
            loss = -F.logsigmoid(model.score(u, pos) - model.score(u, neg)).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            hist.append(loss.item())
    res["hist"] = hist
    res["trained_norms"] = model.items.weight.detach().norm(dim=1)  # steps may exceed max_norm
    with M.no_grad():
        model.items(M.arange(12))  # a lookup renormalises the rows it touches, in place
    res["item_norms"] = model.items.weight.detach().norm(dim=1)
    res["state_sum"] = opt.state[model.users.weight]["sum"]
    with M.no_grad():
        scores = model.users.weight @ model.items.weight.T + model.item_bias.weight.T
        res["seen_margin"] = (scores[M.from_numpy(seen)].view(8, 2).mean(1)
                              - scores[M.from_numpy(~seen)].view(8, 10).mean(1))
        scores = scores.masked_fill(M.from_numpy(seen), float("-inf"))
        res["top2"] = scores.topk(2, dim=1).indices.sort(dim=1).values
    return res


def test_bpr_recommender():
    res = bpr_recommender(ferrotorch, epochs=40)
    hist = res["hist"]
    assert np.mean(hist[-4:]) < 0.5 * np.mean(hist[:4])
    # after a lookup of every row none is above max_norm; those above were scaled to it
    trained, renormed = _np(res["trained_norms"]), _np(res["item_norms"])
    assert trained.max() > 1.5 and renormed.max() <= 1.5 + 1e-4
    big = trained > 1.5
    np.testing.assert_allclose(renormed[big], 1.5, rtol=1e-4)
    np.testing.assert_array_equal(renormed[~big], trained[~big])
    # every user scores its observed items above the others, and is recommended unseen ones
    assert (_np(res["seen_margin"]) > 1.0).all()
    top2 = _np(res["top2"])
    assert all(i % 4 != u % 4 or i == (8 if u < 4 else 0) + u % 4
               for u in range(8) for i in top2[u])


def test_bpr_recommender_matches_torch():
    torch = _torch()
    ft_res = bpr_recommender(ferrotorch)
    pt_res = bpr_recommender(torch, init=ft_res["init"])
    _compare(ft_res, pt_res, rtol=1e-4, atol=1e-6)


# ---------------------------------------------------------------------------- (l)
def multilabel_metrics(M, init=None, steps=30):
    """Multi-label classification: BCEWithLogitsLoss with per-label ``pos_weight``, then the
    metrics computed with tensor ops as in an evaluation loop: per-label precision / recall /
    F1 at a threshold (``torch.where`` guarding 0/0), micro-F1, subset accuracy, and average
    precision from a descending sort and ``cumsum``."""
    nn = M.nn
    M.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.SiLU(), nn.Linear(16, 4))
    res = {"init": _start(model, M, init)}
    rng = np.random.default_rng(11)
    xs = rng.standard_normal((40, 6)).astype(np.float32)
    w = rng.standard_normal((6, 4))
    ys = (xs @ w > np.array([0.0, 0.5, 1.0, 1.5])).astype(np.float32)  # rarer labels
    x, y = M.from_numpy(xs), M.from_numpy(ys)
    pos_weight = (y.shape[0] - y.sum(0)) / y.sum(0).clamp(min=1)
    crit = nn.BCEWithLogitsLoss(pos_weight=pos_weight)
    opt = M.optim.RMSprop(model.parameters(), lr=0.01, alpha=0.9, centered=True)
    losses = []
    for step in range(steps):
        opt.zero_grad()
        loss = crit(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    with M.no_grad():
        probs = M.sigmoid(model(x))
    pred = (probs > 0.5).float()
    tp = (pred * y).sum(0)
    fp = (pred * (1 - y)).sum(0)
    fn = ((1 - pred) * y).sum(0)
    precision = M.where(tp + fp > 0, tp / (tp + fp), M.zeros_like(tp))
    recall = M.where(tp + fn > 0, tp / (tp + fn), M.zeros_like(tp))
    f1 = M.where(precision + recall > 0, 2 * precision * recall / (precision + recall),
                 M.zeros_like(tp))
    micro_f1 = 2 * tp.sum() / (2 * tp.sum() + fp.sum() + fn.sum())
    subset_acc = (pred == y).all(dim=1).float().mean()
    order = probs.argsort(dim=0, descending=True)
    y_sorted = y.gather(0, order)
    hits = y_sorted.cumsum(0)
    ranks = M.arange(1, y.shape[0] + 1, dtype=M.float32).unsqueeze(1)
    ap = (hits / ranks * y_sorted).sum(0) / y.sum(0).clamp(min=1)
    res.update(losses=losses, pos_weight=pos_weight, precision=precision, recall=recall, f1=f1,
               micro_f1=micro_f1, subset_acc=subset_acc, ap=ap, probs=probs)
    return res


def test_multilabel_metrics():
    res = multilabel_metrics(ferrotorch, steps=150)
    assert res["losses"][-1] < 0.5 * res["losses"][0]
    ap = _np(res["ap"])
    assert (ap > 0.8).all() and (ap <= 1.0).all()
    assert float(res["micro_f1"]) > 0.8
    probs, f1 = _np(res["probs"]), _np(res["f1"])
    assert probs.shape == (40, 4) and ((f1 >= 0) & (f1 <= 1)).all()


def test_multilabel_metrics_match_torch():
    torch = _torch()
    ft_res = multilabel_metrics(ferrotorch)
    pt_res = multilabel_metrics(torch, init=ft_res["init"])
    _compare(ft_res, pt_res, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------- (m)
def window_forecaster(M, init=None, epochs=3):
    """Sliding windows cut from one long series with ``Tensor.unfold`` into a TensorDataset,
    batched with ``drop_last``; a causal dilated Conv1d stack (left padding with ``F.pad``)
    predicts the next value; Huber loss and a StepLR schedule."""
    nn, F = M.nn, M.nn.functional
    D = M.utils.data

    class CausalConv(nn.Module):
        def __init__(self, cin, cout, k, dilation):
            super().__init__()
            self.pad = (k - 1) * dilation
            self.conv = nn.Conv1d(cin, cout, k, dilation=dilation)

        def forward(self, x):
            return self.conv(F.pad(x, (self.pad, 0)))

    M.manual_seed(0)
    model = nn.Sequential(CausalConv(1, 8, 3, 1), nn.ReLU(), CausalConv(8, 8, 3, 2), nn.ReLU(),
                          CausalConv(8, 1, 3, 4))
    res = {"init": _start(model, M, init)}
    t = np.arange(220, dtype=np.float32)
    series = M.from_numpy(np.sin(0.3 * t) + 0.5 * np.sin(0.05 * t))
    windows = series.unfold(0, 17, 3)  # (68, 17): stride-3 windows of 17 samples
    res["windows_shape"] = list(windows.shape)
    ds = D.TensorDataset(windows[:, :-1].unsqueeze(1), windows[:, 1:].unsqueeze(1))
    loader = D.DataLoader(ds, batch_size=16, shuffle=False, drop_last=True)
    opt = M.optim.Adam(model.parameters(), lr=0.01)
    sched = M.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    hist = []
    for epoch in range(epochs):
        total, n = 0.0, 0
        for xb, yb in loader:
            opt.zero_grad()
            loss = F.huber_loss(model(xb), yb, delta=0.5)
            loss.backward()
            opt.step()
            total += loss.item()
            n += 1
        sched.step()
        hist.append(total / n)
    res["hist"] = hist
    res["n_batches"] = n
    res["lr"] = sched.get_last_lr()
    # causality: changing the future does not change past predictions
    with M.no_grad():
        x = windows[:1, :-1].unsqueeze(1).clone()
        a = model(x)
        x[..., 10:] += 5
        b = model(x)
    res["causal_gap"] = (a[..., :10] - b[..., :10]).abs().max()
    return res


def test_window_forecaster():
    res = window_forecaster(ferrotorch, epochs=8)
    assert res["windows_shape"] == [68, 17]
    assert res["n_batches"] == 4  # 68 windows, batches of 16, the last 4 dropped
    assert res["hist"][-1] < 0.5 * res["hist"][0]
    assert res["lr"] == [0.01 * 0.5 ** 4]
    assert float(res["causal_gap"]) == 0.0


def test_window_forecaster_matches_torch():
    torch = _torch()
    ft_res = window_forecaster(ferrotorch)
    pt_res = window_forecaster(torch, init=ft_res["init"])
    _compare(ft_res, pt_res, rtol=1e-4, atol=1e-6)


# ---------------------------------------------------------------------------- (n)
def evolution_strategies(M, init=None, generations=4, pop=8, sigma=0.1):
    """OpenAI-style evolution strategies on a small policy without backprop: the parameters
    flattened with ``parameters_to_vector``, antithetic perturbations (from NumPy) written back
    with ``vector_to_parameters``, fitness shaped into centred ranks, and the update applied
    through an optimizer by filling ``p.grad`` from the estimate (``vector_to_parameters`` on
    the gradients), as ES code built on torch.optim does."""
    nn = M.nn
    M.manual_seed(0)
    policy = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
    res = {"init": _start(policy, M, init)}
    rng = np.random.default_rng(12)
    states = M.from_numpy(rng.standard_normal((32, 3)).astype(np.float32))
    target = states[:, :1] * 0.5 - states[:, 2:] * 0.25

    @M.no_grad()
    def fitness():
        return -(policy(states) - target).pow(2).mean().item()

    opt = M.optim.SGD(policy.parameters(), lr=0.05, momentum=0.5)
    theta = nn.utils.parameters_to_vector(policy.parameters()).detach().clone()
    n = theta.numel()
    hist = []
    for gen in range(generations):
        eps = M.from_numpy(rng.standard_normal((pop, n)).astype(np.float32))
        eps = M.cat([eps, -eps])  # antithetic pairs
        scores = []
        for e in eps:
            nn.utils.vector_to_parameters(theta + sigma * e, policy.parameters())
            scores.append(fitness())
        scores = M.tensor(scores)
        ranks = M.empty_like(scores)
        ranks[scores.argsort()] = M.arange(len(scores), dtype=M.float32)
        shaped = ranks / (len(scores) - 1) - 0.5
        grad = -(shaped.unsqueeze(1) * eps).sum(0) / (len(scores) * sigma)
        nn.utils.vector_to_parameters(theta, policy.parameters())
        for p in policy.parameters():
            p.grad = M.zeros_like(p)
        nn.utils.vector_to_parameters(grad, [p.grad for p in policy.parameters()])
        opt.step()
        theta = nn.utils.parameters_to_vector(policy.parameters()).detach().clone()
        hist.append(fitness())
    res["hist"] = hist
    res["theta"] = theta
    res["n"] = n
    return res


def test_evolution_strategies_improve_fitness():
    res = evolution_strategies(ferrotorch, generations=25)
    assert res["n"] == 3 * 8 + 8 + 8 + 1
    assert res["hist"][-1] > res["hist"][0]
    assert res["hist"][-1] > 0.5 * res["hist"][0]  # fitness is -MSE: halved error at least


def test_evolution_strategies_match_torch():
    torch = _torch()
    ft_res = evolution_strategies(ferrotorch)
    pt_res = evolution_strategies(torch, init=ft_res["init"])
    _compare(ft_res, pt_res, rtol=1e-4, atol=1e-6)


# ---------------------------------------------------------------------------- (o)
def neural_ode(M, init=None, steps=5):
    """A neural ODE dz/dt = f(t, z) integrated with a fixed-step RK4 written out by hand
    (time fed to the field by concatenation), fitted by backpropagating through the solver to
    a spiral trajectory observed at a few times."""
    nn, F = M.nn, M.nn.functional

    class Field(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(3, 32), nn.Softplus(), nn.Linear(32, 2))

        def forward(self, t, z):
            return self.net(M.cat([z, t.expand(z.shape[0], 1)], dim=1))

    def odeint(f, z0, ts, substeps=4):
        zs, z = [z0], z0
        for t0, t1 in zip(ts[:-1], ts[1:]):
            h = (t1 - t0) / substeps
            t = t0
            for _ in range(substeps):
                k1 = f(t, z)
                k2 = f(t + h / 2, z + h / 2 * k1)
                k3 = f(t + h / 2, z + h / 2 * k2)
                k4 = f(t + h, z + h * k3)
                z = z + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
                t = t + h
            zs.append(z)
        return M.stack(zs)

    M.manual_seed(0)
    field = Field()
    res = {"init": _start(field, M, init)}
    ts = M.linspace(0, 2, 6).unsqueeze(1)
    true_A = M.tensor([[-0.1, 2.0], [-2.0, -0.1]])
    z0 = M.tensor([[2.0, 0.0], [0.0, 1.0]])
    with M.no_grad():  # the observations: the linear spiral, integrated by the same solver
        true = odeint(lambda t, z: z @ true_A.T, z0, ts, substeps=20)
    opt = M.optim.Adam(field.parameters(), lr=0.02)
    losses = []
    for step in range(steps):
        opt.zero_grad()
        pred = odeint(field, z0, ts)
        loss = F.l1_loss(pred, true)
        loss.backward()
        if step == 0:
            res.update(_flat(_grads(field), "grad0"))
        opt.step()
        losses.append(loss.item())
    res["losses"] = losses
    res["true"] = true
    return res


def test_neural_ode_fits_spiral():
    res = neural_ode(ferrotorch, steps=80)
    assert res["losses"][-1] < 0.5 * res["losses"][0]
    true = _np(res["true"])
    # the reference spiral: z(t) = expm(A t) z0, which RK4 with 20 substeps matches closely
    A = np.array([[-0.1, 2.0], [-2.0, -0.1]])
    t = 2.0
    w, V = np.linalg.eig(A * t)
    expm = (V @ np.diag(np.exp(w)) @ np.linalg.inv(V)).real
    np.testing.assert_allclose(true[-1], np.array([[2.0, 0.0], [0.0, 1.0]]) @ expm.T,
                               rtol=1e-3, atol=1e-4)


def test_neural_ode_matches_torch():
    torch = _torch()
    ft_res = neural_ode(ferrotorch)
    pt_res = neural_ode(torch, init=ft_res["init"])
    _compare(ft_res, pt_res, rtol=2e-4, atol=2e-6)


# ---------------------------------------------------------------------------- (p)
def augmentation_pipeline(M, img_np):
    """A hand-written augmentation pipeline on a batch of images, as done before torchvision
    transforms v2: padding in each mode (reflect, replicate, circular, constant), random-crop
    offsets by slicing, horizontal flips of a subset via ``torch.where``, ``torch.roll``
    translations, resizing with ``interpolate`` (bilinear with and without align_corners,
    nearest, area), and cutout-style patch masking through ``F.unfold``/``F.fold``."""
    F = M.nn.functional
    img = M.from_numpy(img_np).requires_grad_(True)
    out = {}
    for mode in ("reflect", "replicate", "circular"):
        out[f"pad_{mode}"] = F.pad(img, (2, 1, 1, 2), mode=mode)
    out["pad_constant"] = F.pad(img, (1, 1, 1, 1), value=-1.0)
    padded = F.pad(img, (2, 2, 2, 2), mode="reflect")
    crops = M.stack([padded[i, :, dy:dy + 8, dx:dx + 8]
                     for i, (dy, dx) in enumerate([(0, 4), (3, 1), (2, 2)])])
    flip_mask = M.tensor([True, False, True]).view(3, 1, 1, 1)
    flipped = M.where(flip_mask, crops.flip(-1), crops)
    rolled = M.roll(flipped, shifts=(1, -2), dims=(2, 3))
    out["rolled"] = rolled
    out["bilinear"] = F.interpolate(rolled, size=(12, 10), mode="bilinear", align_corners=False)
    out["bilinear_ac"] = F.interpolate(rolled, scale_factor=1.5, mode="bilinear",
                                       align_corners=True)
    out["nearest"] = F.interpolate(rolled, size=(5, 5), mode="nearest")
    out["area"] = F.interpolate(rolled, size=(4, 4), mode="area")
    patches = F.unfold(rolled, kernel_size=2, stride=2)  # (3, C*4, 16)
    keep = M.ones(1, 1, 16)
    keep[..., 5] = 0.0
    keep[..., 10] = 0.0
    cut = F.fold(patches * keep, output_size=(8, 8), kernel_size=2, stride=2)
    out["cutout"] = cut
    weights = M.from_numpy(np.linspace(-1, 1, 5 * 5).reshape(5, 5).astype(np.float32))
    loss = (out["bilinear"].square().mean() + out["bilinear_ac"].abs().mean()
            + (out["nearest"] * weights).sum() + out["area"].std() + cut.pow(3).mean()
            + sum(out[f"pad_{m}"].sin().sum() for m in ("reflect", "replicate", "circular")))
    loss.backward()
    out["grad"] = img.grad
    return out


def _aug_images():
    return np.random.default_rng(13).standard_normal((3, 2, 8, 8)).astype(np.float32)


def test_augmentation_pipeline():
    img = _aug_images()
    out = augmentation_pipeline(ferrotorch, img)
    np.testing.assert_array_equal(_np(out["pad_reflect"])[..., 1:9, 2:10], img)
    np.testing.assert_array_equal(_np(out["pad_reflect"])[..., 0, 2:10], img[..., 1, :])
    np.testing.assert_array_equal(_np(out["pad_replicate"])[..., 1:9, 0], img[..., :, 0])
    np.testing.assert_array_equal(_np(out["pad_circular"])[..., 1:9, 0], img[..., :, -2])
    assert _np(out["pad_constant"])[..., 0, :].tolist() == [[[-1.0] * 10] * 2] * 3
    assert out["bilinear_ac"].shape == (3, 2, 12, 12)
    cut = _np(out["cutout"])
    assert (cut[..., 2:4, 2:4] == 0).all() and (cut[..., 4:6, 4:6] == 0).all()  # patches 5, 10
    padded = np.pad(img, ((0, 0), (0, 0), (2, 2), (2, 2)), mode="reflect")
    crops = np.stack([padded[i, :, dy:dy + 8, dx:dx + 8]
                      for i, (dy, dx) in enumerate([(0, 4), (3, 1), (2, 2)])])
    crops[[0, 2]] = crops[[0, 2], ..., ::-1]
    rolled = np.roll(crops, (1, -2), axis=(2, 3))
    np.testing.assert_array_equal(_np(out["rolled"]), rolled)
    np.testing.assert_allclose(_np(out["area"]), rolled.reshape(3, 2, 4, 2, 4, 2).mean((3, 5)),
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(_np(out["nearest"]),  # floor(i * 8 / 5)
                                  rolled[..., [0, 1, 3, 4, 6], :][..., [0, 1, 3, 4, 6]])
    kept = rolled.copy()
    kept[..., 2:4, 2:4] = 0
    kept[..., 4:6, 4:6] = 0
    np.testing.assert_array_equal(cut, kept)  # fold(unfold) is the identity without overlap
    g = _np(out["grad"])
    assert g.shape == img.shape and np.isfinite(g).all() and np.abs(g).sum() > 0


def test_augmentation_pipeline_matches_torch():
    torch = _torch()
    img = _aug_images()
    _compare(augmentation_pipeline(ferrotorch, img), augmentation_pipeline(torch, img),
             rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------- (q)
def pca_whitening_lora(M, init=None, steps=8):
    """Linear algebra a data scientist writes: PCA by ``linalg.svd`` of centred data checked
    against ``linalg.eigh`` of the covariance, ZCA whitening, a least-squares fit with
    ``linalg.lstsq`` / ``pinv``, then a LoRA adapter (frozen base weight plus a trainable
    low-rank product) fine-tuned toward the least-squares solution."""
    nn, F = M.nn, M.nn.functional
    rng = np.random.default_rng(14)
    mix = rng.standard_normal((4, 4))
    X = M.from_numpy((rng.standard_normal((50, 4)) @ mix).astype(np.float64))
    Xc = X - X.mean(0, keepdim=True)
    U, S, Vh = M.linalg.svd(Xc, full_matrices=False)
    cov = Xc.T @ Xc / (X.shape[0] - 1)
    evals, evecs = M.linalg.eigh(cov)
    res = {"S2": S.pow(2) / (X.shape[0] - 1), "evals_desc": evals.flip(0)}
    # the principal axes agree up to sign
    res["axes_align"] = (Vh @ evecs.flip(1)).abs().diagonal()
    zca = evecs @ M.diag(evals.rsqrt()) @ evecs.T
    res["white_cov"] = (Xc @ zca).T @ (Xc @ zca) / (X.shape[0] - 1)
    true_w = M.from_numpy(rng.standard_normal((4, 3)))
    Y = X @ true_w + 0.01 * M.from_numpy(rng.standard_normal((50, 3)))
    res["lstsq"] = M.linalg.lstsq(X, Y).solution
    res["pinv"] = M.linalg.pinv(X) @ Y

    class LoRALinear(nn.Module):
        def __init__(self, base, rank=2, alpha=4.0):
            super().__init__()
            self.base = base
            for p in self.base.parameters():
                p.requires_grad_(False)
            self.A = nn.Parameter(M.randn(rank, base.in_features, dtype=M.float64) * 0.1)
            self.B = nn.Parameter(M.zeros(base.out_features, rank, dtype=M.float64))
            self.scale = alpha / rank

        def forward(self, x):
            return self.base(x) + F.linear(F.linear(x, self.A), self.B) * self.scale

    M.manual_seed(0)
    layer = LoRALinear(nn.Linear(4, 3, bias=False).double())
    res["init"] = _start(layer, M, init)
    opt = M.optim.Adam([p for p in layer.parameters() if p.requires_grad], lr=0.05)
    losses = []
    for step in range(steps):
        opt.zero_grad()
        loss = F.mse_loss(layer(X), Y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    res["losses"] = losses
    res["trainable"] = sum(p.numel() for p in layer.parameters() if p.requires_grad)
    res["base_grad_none"] = float(layer.base.weight.grad is None)
    res["merged"] = layer.base.weight + layer.B @ layer.A * layer.scale
    return res


def test_pca_whitening_lstsq_lora():
    res = pca_whitening_lora(ferrotorch, steps=150)
    np.testing.assert_allclose(_np(res["S2"]), _np(res["evals_desc"]), rtol=1e-10)
    np.testing.assert_allclose(_np(res["axes_align"]), np.ones(4), rtol=1e-8)
    np.testing.assert_allclose(_np(res["white_cov"]), np.eye(4), atol=1e-10)
    np.testing.assert_allclose(_np(res["lstsq"]), _np(res["pinv"]), rtol=1e-8, atol=1e-10)
    assert res["trainable"] == 2 * 4 + 3 * 2 and res["base_grad_none"] == 1.0
    assert res["losses"][-1] < 0.05 * res["losses"][0]
    # the merged weight approaches the least-squares solution (rank 2 of 3: partly)
    merged = _np(res["merged"]).T
    assert np.linalg.norm(merged - _np(res["lstsq"])) < np.linalg.norm(_np(res["lstsq"]))


def test_pca_whitening_lora_matches_torch():
    torch = _torch()
    ft_res = pca_whitening_lora(ferrotorch)
    pt_res = pca_whitening_lora(torch, init=ft_res["init"])
    _compare(ft_res, pt_res, rtol=1e-8, atol=1e-10)


# ---------------------------------------------------------------------------- (r)
def lstm_cells_and_projection(M, init=None, steps=4):
    """An encoder ``nn.LSTM`` with ``proj_size`` (projected hidden state) feeding a decoder
    unrolled by hand with ``nn.LSTMCell`` and ``nn.GRUCell`` stacked, with scheduled sampling
    (teacher forcing on a fixed NumPy coin sequence); checks that an ``nn.LSTM`` equals the
    same weights driven step by step through ``nn.LSTMCell``."""
    nn, F = M.nn, M.nn.functional

    class Seq2Seq(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.LSTM(2, 8, batch_first=True, proj_size=4)
            self.cell1 = nn.LSTMCell(2, 4)
            self.cell2 = nn.GRUCell(4, 4)
            self.out = nn.Linear(4, 2)

        def forward(self, src, tgt, coins):
            _, (h, c) = self.enc(src)  # h: (1, B, 4) projected, c: (1, B, 8)
            h1, c1 = h[0], c[0][:, :4]  # the cell state is cut to the decoder's size
            h2 = h[0]
            inp = src[:, -1]
            outs = []
            for t in range(tgt.shape[1]):
                h1, c1 = self.cell1(inp, (h1, c1))
                h2 = self.cell2(h1, h2)
                y = self.out(h2)
                outs.append(y)
                inp = tgt[:, t] if coins[t] else y.detach()
            return M.stack(outs, 1)

    M.manual_seed(0)
    model = Seq2Seq()
    res = {"init": _start(model, M, init)}
    rng = np.random.default_rng(15)
    t = np.linspace(0, 4 * np.pi, 14)
    phase = rng.uniform(0, np.pi, (6, 1))
    wave = np.stack([np.sin(t + phase), np.cos(t + phase)], -1).astype(np.float32)
    src, tgt = M.from_numpy(wave[:, :8]), M.from_numpy(wave[:, 8:])
    coins = rng.random(6) < 0.5
    opt = M.optim.Adam(model.parameters(), lr=0.02)
    losses = []
    for step in range(steps):
        opt.zero_grad()
        loss = F.mse_loss(model(src, tgt, coins), tgt)
        loss.backward()
        if step == 0:
            res.update(_flat(_grads(model), "grad0"))
        opt.step()
        losses.append(loss.item())
    res["losses"] = losses
    res["weight_hr_shape"] = list(model.enc.weight_hr_l0.shape)
    # nn.LSTM == nn.LSTMCell with the same weights
    lstm = nn.LSTM(2, 5, batch_first=True)
    cell = nn.LSTMCell(2, 5)
    with M.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(cell, name).copy_(getattr(lstm, name + "_l0"))
        seq, (hn, cn) = lstm(src)
        h = c = M.zeros(6, 5)
        steps_out = []
        for k in range(src.shape[1]):
            h, c = cell(src[:, k], (h, c))
            steps_out.append(h)
    res["cell_gap"] = (M.stack(steps_out, 1) - seq).abs().max() + (c - cn[0]).abs().max()
    return res


def test_lstm_projection_and_cells():
    res = lstm_cells_and_projection(ferrotorch, steps=60)
    assert res["weight_hr_shape"] == [4, 8]
    assert res["losses"][-1] < 0.3 * res["losses"][0]
    assert float(res["cell_gap"]) < 1e-6


@pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")
def test_lstm_projection_and_cells_match_torch():
    torch = _torch()
    ft_res = lstm_cells_and_projection(ferrotorch)
    pt_res = lstm_cells_and_projection(torch, init=ft_res["init"])
    _compare(ft_res, pt_res, rtol=2e-4, atol=2e-6, skip=("init", "cell_gap"))


# ---------------------------------------------------------------------------- (s)
def calibration_and_robust_stats(M, probs_np, labels_np, prices_np):
    """Evaluation statistics computed with tensor ops: expected calibration error with
    ``bucketize`` bins and per-bin means by ``index_reduce`` / ``index_add``, a reliability
    histogram with ``histc``, temperature scaling fitted by LBFGS on the logits, robust
    statistics (``kthvalue`` median, ``nanmedian``, ``quantile`` IQR, ``nanmean`` with gaps),
    and the maximum drawdown of a price series from ``cummax``."""
    F = M.nn.functional
    probs = M.from_numpy(probs_np)
    labels = M.from_numpy(labels_np)
    conf, pred = probs.max(dim=1)
    correct = (pred == labels).float()
    edges = M.linspace(0, 1, 6)[1:-1]  # 5 bins
    bins = M.bucketize(conf, edges)
    counts = M.zeros(5).index_add_(0, bins, M.ones_like(conf))
    mean_conf = M.zeros(5).index_reduce_(0, bins, conf, "mean", include_self=False)
    mean_acc = M.zeros(5).index_reduce_(0, bins, correct, "mean", include_self=False)
    ece = ((counts / len(conf)) * (mean_conf - mean_acc).abs()).sum()
    out = {"bins": bins, "counts": counts, "mean_conf": mean_conf, "mean_acc": mean_acc,
           "ece": ece, "hist": M.histc(conf, bins=5, min=0, max=1)}
    logits = probs.log()
    log_t = M.zeros(1, requires_grad=True)
    opt = M.optim.LBFGS([log_t], lr=0.5, max_iter=30, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = F.cross_entropy(logits / log_t.exp(), labels)
        loss.backward()
        return loss

    opt.step(closure)
    out["temperature"] = log_t.exp()
    out["nll_after"] = F.cross_entropy(logits / log_t.exp(), labels)
    out["nll_before"] = F.cross_entropy(logits, labels)
    prices = M.from_numpy(prices_np)
    peak = prices.cummax(0).values
    out["drawdown"] = ((peak - prices) / peak).max()
    returns = prices[1:] / prices[:-1] - 1
    gappy = returns.clone()
    gappy[::4] = float("nan")
    out["median_k"] = returns.kthvalue((len(returns) + 1) // 2).values
    out["median"] = returns.median()
    out["nanmedian"] = gappy.nanmedian()
    out["nanmean"] = gappy.nanmean()
    q = M.quantile(returns, M.tensor([0.25, 0.75], dtype=returns.dtype))
    out["iqr"] = q[1] - q[0]
    return out


def _calibration_data():
    rng = np.random.default_rng(16)
    logits = rng.standard_normal((200, 3)) * 3
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    # labels drawn from a softened version of the probabilities: the model is overconfident
    soft = np.exp(logits / 3) / np.exp(logits / 3).sum(1, keepdims=True)
    labels = np.array([rng.choice(3, p=p) for p in soft])
    prices = 100 * np.exp(np.cumsum(rng.standard_normal(41) * 0.02))
    return probs.astype(np.float32), labels, prices


def test_calibration_and_robust_stats():
    probs, labels, prices = _calibration_data()
    out = calibration_and_robust_stats(ferrotorch, probs, labels, prices)
    conf, pred = probs.max(1), probs.argmax(1)
    bins = np.minimum((conf * 5).astype(int), 4)  # bucketize on interior edges: right=False
    np.testing.assert_array_equal(_np(out["bins"]), np.searchsorted([0.2, 0.4, 0.6, 0.8], conf))
    np.testing.assert_array_equal(_np(out["counts"]), np.bincount(bins, minlength=5))
    np.testing.assert_array_equal(_np(out["hist"]), np.histogram(conf, 5, (0, 1))[0])
    ece = sum((bins == b).mean() * abs(conf[bins == b].mean() - (pred == labels)[bins == b].mean())
              for b in range(5) if (bins == b).any())
    assert float(out["ece"]) == pytest.approx(ece, rel=1e-5)
    assert float(out["temperature"]) > 1.5  # overconfident logits get softened
    assert float(out["nll_after"]) < float(out["nll_before"])
    peak = np.maximum.accumulate(prices)
    assert float(out["drawdown"]) == pytest.approx(((peak - prices) / peak).max(), rel=1e-12)
    r = prices[1:] / prices[:-1] - 1
    assert float(out["median_k"]) == float(out["median"]) == np.sort(r)[19]
    g = r.copy()
    g[::4] = np.nan
    assert float(out["nanmedian"]) == np.sort(g[~np.isnan(g)])[(np.sum(~np.isnan(g)) - 1) // 2]
    assert float(out["nanmean"]) == pytest.approx(np.nanmean(g), rel=1e-12)
    q = np.quantile(r, [0.25, 0.75])
    assert float(out["iqr"]) == pytest.approx(q[1] - q[0], rel=1e-12)


@pytest.mark.filterwarnings("ignore:index_reduce\\(\\) is in beta")
def test_calibration_and_robust_stats_match_torch():
    torch = _torch()
    data = _calibration_data()
    _compare(calibration_and_robust_stats(ferrotorch, *data),
             calibration_and_robust_stats(torch, *data), rtol=1e-5, atol=1e-7)


# ---------------------------------------------------------------------------- (t)
def padded_transformer_classifier(M, init=None, steps=5):
    """A sentence classifier on ``nn.TransformerEncoder`` (batch_first, pre-norm, GELU) with a
    learned [CLS] token and positional embeddings, ``src_key_padding_mask`` for the padding,
    the [CLS] output and a masked mean pooled together; in eval mode under no_grad (PyTorch's
    fast path) the outputs at the real tokens must not depend on what the padding holds."""
    nn, F = M.nn, M.nn.functional

    class Classifier(nn.Module):
        def __init__(self, vocab=20, d=16, max_len=12):
            super().__init__()
            self.embed = nn.Embedding(vocab, d, padding_idx=0)
            self.cls = nn.Parameter(M.zeros(1, 1, d))
            self.pos = nn.Parameter(M.randn(1, max_len, d) * 0.02)
            layer = nn.TransformerEncoderLayer(d, 2, dim_feedforward=32, dropout=0.0,
                                               activation="gelu", batch_first=True,
                                               norm_first=True)
            self.encoder = nn.TransformerEncoder(layer, num_layers=2, norm=nn.LayerNorm(d),
                                                 enable_nested_tensor=False)
            self.head = nn.Linear(2 * d, 2)

        def forward(self, tokens):
            pad = tokens == 0
            x = self.embed(tokens)
            x = M.cat([self.cls.expand(len(tokens), -1, -1), x], dim=1)
            x = x + self.pos[:, :x.shape[1]]
            mask = M.cat([M.zeros(len(tokens), 1, dtype=M.bool), pad], dim=1)
            h = self.encoder(x, src_key_padding_mask=mask)
            keep = (~mask).unsqueeze(-1).float()
            mean = (h * keep).sum(1) / keep.sum(1)
            return self.head(M.cat([h[:, 0], mean], dim=-1)), h

    M.manual_seed(0)
    model = Classifier()
    res = {"init": _start(model, M, init)}
    rng = np.random.default_rng(17)
    lengths = rng.integers(3, 11, 16)
    tokens = np.zeros((16, 10), dtype=np.int64)
    for i, n in enumerate(lengths):
        tokens[i, :n] = rng.integers(1, 20, n)
    labels = (tokens == 7).any(1).astype(np.int64)  # does the sentence contain token 7?
    x, y = M.from_numpy(tokens), M.from_numpy(labels)
    opt = M.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for step in range(steps):
        opt.zero_grad()
        logits, _ = model(x)
        loss = F.cross_entropy(logits, y)
        loss.backward()
        if step == 0:
            res.update(_flat(_grads(model), "grad0"))
        opt.step()
        losses.append(loss.item())
    res["losses"] = losses
    model.eval()
    with M.no_grad():
        logits_a, h_a = model(x)
        model.embed.weight[0] += 3.0  # what the padding positions hold changes
        logits_b, h_b = model(x)
        model.embed.weight[0] -= 3.0
    res["eval_logits"] = logits_a
    valid = M.cat([M.ones(16, 1, dtype=M.bool), x != 0], 1).unsqueeze(-1)
    res["pad_leak"] = ((h_a - h_b).abs() * valid).max()
    res["logit_leak"] = (logits_a - logits_b).abs().max()
    return res


def test_padded_transformer_classifier():
    res = padded_transformer_classifier(ferrotorch, steps=40)
    assert res["losses"][-1] < 0.5 * res["losses"][0]
    assert float(res["pad_leak"]) < 1e-5 and float(res["logit_leak"]) < 1e-5
    assert res["grad0.embed.weight"][0].tolist() == [0.0] * 16


def test_padded_transformer_classifier_matches_torch():
    torch = _torch()
    ft_res = padded_transformer_classifier(ferrotorch)
    pt_res = padded_transformer_classifier(torch, init=ft_res["init"])
    _compare(ft_res, pt_res, rtol=5e-4, atol=5e-6, skip=("init", "pad_leak", "logit_leak"))


# ---------------------------------------------------------------------------- (u)
def deploy_surgery(M, init=None):
    """Preparing a trained conv net for inference: ``fuse_conv_bn_eval`` folds each BatchNorm
    into the preceding conv (found by walking ``named_modules``), ``set_submodule`` swaps the
    fused conv in and the BatchNorm for ``Identity``, ReLU6 becomes Hardtanh(0, 6) by the same
    route, the weights go channels_last, and the fused net must compute what the original did
    in eval mode (outputs and input gradients)."""
    nn = M.nn
    from importlib import import_module

    fusion = import_module(M.__name__ + ".nn.utils.fusion")
    M.manual_seed(0)
    net = nn.Sequential(
        nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU6(),
        nn.Sequential(nn.Conv2d(6, 6, 3, padding=1, groups=3, bias=False), nn.BatchNorm2d(6),
                      nn.ReLU6()),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(6, 3))
    res = {"init": _start(net, M, init)}
    rng = np.random.default_rng(18)
    x = M.from_numpy(rng.standard_normal((4, 3, 6, 6)).astype(np.float32))
    opt = M.optim.SGD(net.parameters(), lr=0.1)
    for _ in range(3):  # a little training, so that the running statistics are not trivial
        opt.zero_grad()
        net(x).pow(2).mean().backward()
        opt.step()
    net.eval()
    xg = x.clone().requires_grad_(True)
    ref = net(xg)
    ref.sum().backward()
    res["ref"] = ref
    res["ref_grad"] = xg.grad
    names = [n for n, _ in net.named_modules()]
    fused_count = 0
    for name, mod in list(net.named_modules()):
        if isinstance(mod, nn.Conv2d):
            parent, _, idx = name.rpartition(".")
            bn_name = f"{parent}.{int(idx) + 1}" if parent else str(int(idx) + 1)
            bn = net.get_submodule(bn_name)
            if isinstance(bn, nn.BatchNorm2d):
                net.set_submodule(name, fusion.fuse_conv_bn_eval(mod, bn))
                net.set_submodule(bn_name, nn.Identity())
                fused_count += 1
        elif isinstance(mod, nn.ReLU6):
            net.set_submodule(name, nn.Hardtanh(0.0, 6.0))
    net = net.to(memory_format=M.channels_last)
    xg = x.clone().to(memory_format=M.channels_last).requires_grad_(True)
    out = net(xg)
    out.sum().backward()
    res["fused"] = out
    res["fused_grad"] = xg.grad
    res["fused_count"] = fused_count
    res["n_modules"] = len(names)
    res["has_bn"] = float(any(isinstance(m, nn.BatchNorm2d) for m in net.modules()))
    res["grouped_bias"] = net[3][0].bias  # the fused depthwise conv gained a bias
    return res


def test_deploy_surgery_fuses_conv_bn():
    res = deploy_surgery(ferrotorch)
    assert res["fused_count"] == 2 and res["has_bn"] == 0.0
    np.testing.assert_allclose(_np(res["fused"]), _np(res["ref"]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(res["fused_grad"]), _np(res["ref_grad"]), rtol=1e-4,
                               atol=1e-7)
    assert res["grouped_bias"].shape == (6,)


def test_deploy_surgery_matches_torch():
    torch = _torch()
    ft_res = deploy_surgery(ferrotorch)
    pt_res = deploy_surgery(torch, init=ft_res["init"])
    _compare(ft_res, pt_res, rtol=1e-4, atol=1e-6)


# ---------------------------------------------------------------------------- (v)
def optimizer_in_backward(M, init=None, steps=4):
    """The "optimizer step fused into backward" pattern: one optimizer per parameter, stepped
    from ``register_post_accumulate_grad_hook`` as soon as that parameter's gradient is ready
    (and the gradient freed), next to the ordinary loop with a single optimizer; both must
    follow the same trajectory."""
    nn, F = M.nn, M.nn.functional

    def make():
        M.manual_seed(0)
        return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))

    fused, plain = make(), make()
    res = {"init": _start(fused, M, init)}
    _start(plain, M, res["init"])
    opts = {p: M.optim.AdamW([p], lr=0.02, weight_decay=0.01) for p in fused.parameters()}
    calls = []

    def hook(p):
        opts[p].step()
        opts[p].zero_grad(set_to_none=True)
        calls.append(1)

    handles = [p.register_post_accumulate_grad_hook(hook) for p in fused.parameters()]
    plain_opt = M.optim.AdamW(plain.parameters(), lr=0.02, weight_decay=0.01)
    rng = np.random.default_rng(19)
    hist = []
    for step in range(steps):
        x = M.from_numpy(rng.standard_normal((8, 4)).astype(np.float32))
        y = M.from_numpy(rng.standard_normal((8, 1)).astype(np.float32))
        F.mse_loss(fused(x), y).backward()  # the parameters are updated during this call
        plain_opt.zero_grad()
        loss = F.mse_loss(plain(x), y)
        loss.backward()
        plain_opt.step()
        hist.append(loss.item())
    for h in handles:
        h.remove()
    res["hist"] = hist
    res["calls"] = len(calls)
    res["grads_freed"] = float(all(p.grad is None for p in fused.parameters()))
    res["fused_params"] = nn.utils.parameters_to_vector(fused.parameters())
    res["plain_params"] = nn.utils.parameters_to_vector(plain.parameters())
    return res


def test_optimizer_in_backward_hooks():
    res = optimizer_in_backward(ferrotorch)
    assert res["calls"] == 4 * 4  # four parameters, four steps
    assert res["grads_freed"] == 1.0
    np.testing.assert_allclose(_np(res["fused_params"]), _np(res["plain_params"]), rtol=1e-6,
                               atol=1e-7)


def test_optimizer_in_backward_matches_torch():
    torch = _torch()
    ft_res = optimizer_in_backward(ferrotorch)
    pt_res = optimizer_in_backward(torch, init=ft_res["init"])
    _compare(ft_res, pt_res, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------- (w)
def test_rng_state_replay_for_recomputation():
    """Hand-written activation recomputation with dropout: the forward saves the RNG state
    (``get_rng_state``), the recomputation restores it (``set_rng_state``) under ``fork_rng``
    so that the global stream is left where it was, and regenerates the same dropout mask; the
    gradients equal those of a plain forward that kept its activations. A private
    ``Generator`` with ``get_state``/``set_state`` replays a data-augmentation draw."""
    M = ferrotorch
    nn = M.nn
    M.manual_seed(0)
    block = nn.Sequential(nn.Linear(6, 12), nn.GELU(), nn.Dropout(0.3), nn.Linear(12, 6))
    x = M.randn(5, 6)

    class Recompute(M.autograd.Function):
        @staticmethod
        def forward(ctx, inp, *params):
            ctx.rng = M.get_rng_state()
            ctx.save_for_backward(inp)
            with M.no_grad():
                return block(inp)

        @staticmethod
        def backward(ctx, grad_out):
            (inp,) = ctx.saved_tensors
            with M.random.fork_rng():
                M.set_rng_state(ctx.rng)
                with M.enable_grad():
                    inp = inp.detach().requires_grad_(True)
                    out = block(inp)
            params = list(block.parameters())
            grads = M.autograd.grad(out, [inp] + params, grad_out)
            return tuple(grads)

    params = list(block.parameters())
    M.manual_seed(1)
    xr = x.clone().requires_grad_(True)
    out_r = Recompute.apply(xr, *params)
    after_r = M.rand(3)  # where the global stream is after the recomputing forward
    out_r.pow(2).sum().backward()
    grads_r = [p.grad.clone() for p in params] + [xr.grad.clone()]
    block.zero_grad()
    M.manual_seed(1)
    xp = x.clone().requires_grad_(True)
    out_p = block(xp)
    after_p = M.rand(3)
    out_p.pow(2).sum().backward()
    grads_p = [p.grad.clone() for p in params] + [xp.grad.clone()]
    assert M.equal(out_r, out_p) and M.equal(after_r, after_p)
    assert (out_p != 0).any()
    for a, b in zip(grads_r, grads_p):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-6, atol=1e-7)
    # the dropout really was active: its mask zeroed some hidden units
    M.manual_seed(1)
    h = block[2](block[1](block[0](x)))
    assert (h == 0).any()
    g = M.Generator().manual_seed(123)
    state = g.get_state()
    crop1 = M.randint(0, 4, (2,), generator=g)
    g.set_state(state)
    crop2 = M.randint(0, 4, (2,), generator=g)
    assert M.equal(crop1, crop2)


# ---------------------------------------------------------------------------- (x)
def label_cleaning_with_apply(M, init=None, steps=5):
    """Data preparation the quick way, with per-element Python callbacks: raw label ids are
    remapped to contiguous classes through a dict with ``Tensor.apply_``, outlier features
    winsorised against per-column bounds with ``map_`` (a broadcast row), and a validity mask
    computed from two tensors with ``map2_``; then a softmax classifier is trained on the
    cleaned batch, where NaN-free inputs and in-range labels are what make the loss finite."""
    nn, F = M.nn, M.nn.functional
    rng = np.random.default_rng(20)
    raw_labels = M.from_numpy(rng.choice([3, 17, 42, 99], 30))
    remap = {3: 0, 17: 1, 42: 2, 99: 3}
    labels = raw_labels.clone().apply_(lambda c: remap[c])
    feats = M.from_numpy((rng.standard_normal((30, 4)) * np.array([1, 5, 1, 20])).astype(
        np.float32))
    bounds = M.tensor([2.0, 6.0, 2.0, 15.0])
    clipped = feats.clone().map_(bounds, lambda v, b: max(-b, min(b, v)))
    weights = M.ones(30)
    weights.map2_(raw_labels.float(), feats[:, 0].contiguous(),
                  lambda w, lab, f0: 0.5 if lab == 99.0 and f0 > 0 else w)
    M.manual_seed(0)
    model = nn.Linear(4, 4)
    res = {"init": _start(model, M, init), "labels": labels, "clipped": clipped,
           "weights": weights}
    opt = M.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for step in range(steps):
        opt.zero_grad()
        per = F.cross_entropy(model(clipped / bounds), labels, reduction="none")
        loss = (per * weights).sum() / weights.sum()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    res["losses"] = losses
    return res


def test_label_cleaning_with_apply():
    res = label_cleaning_with_apply(ferrotorch, steps=60)
    rng = np.random.default_rng(20)
    raw = rng.choice([3, 17, 42, 99], 30)
    feats = (rng.standard_normal((30, 4)) * np.array([1, 5, 1, 20])).astype(np.float32)
    assert res["labels"].dtype == ferrotorch.int64
    assert res["labels"].tolist() == [{3: 0, 17: 1, 42: 2, 99: 3}[c] for c in raw]
    np.testing.assert_array_equal(_np(res["clipped"]),
                                  np.clip(feats, -np.array([2, 6, 2, 15], np.float32),
                                          np.array([2, 6, 2, 15], np.float32)))
    np.testing.assert_array_equal(_np(res["weights"]),
                                  np.where((raw == 99) & (feats[:, 0] > 0), 0.5, 1.0))
    assert res["losses"][-1] < res["losses"][0]


def test_label_cleaning_with_apply_matches_torch():
    torch = _torch()
    ft_res = label_cleaning_with_apply(ferrotorch)
    pt_res = label_cleaning_with_apply(torch, init=ft_res["init"])
    _compare(ft_res, pt_res, rtol=1e-6, atol=1e-7)
