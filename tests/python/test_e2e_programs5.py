# ruff: noqa: B007  (loop variables named as in the tutorials)
"""A fifth set of end-to-end programs written the way experienced PyTorch users write them (see
test_e2e_programs.py .. test_e2e_programs4.py for the others): module surgery with extra state
and partial checkpoints, a zoo of chained LR schedulers resumed from their state dicts, sharded
IterableDatasets with worker_init_fn and a class-balancing sampler, a top-k mixture-of-experts,
a linear-chain CRF with Viterbi decoding, k-means++, GraphSAGE / edge-softmax message passing,
an autoregressive sampler with ``torch.multinomial`` and generators, custom autograd Functions
(sparsemax, once_differentiable, mark_non_differentiable, mark_dirty, setup_context), grad-mode
decorators, in-place updates through views, a CLIP-style contrastive loss, einsum attention with
a relative-position bias, truncated BPTT with foreach clipping, and autograd-graph walking.

Each program is written once as a function of the module ``M`` (``ferrotorch`` or ``torch``), so
the very same code runs under both; the tests run it under ferrotorch and check real outcomes,
and where it is cheap a second test runs it under PyTorch (when importable) and compares with the
weights copied across through NumPy."""

import io
import math

import numpy as np
import pytest

import ferrotorch


def _torch():
    return pytest.importorskip("torch")


def _copy_weights(src_model, dst_model, M):
    """Copy a state dict from one library's model into the other's through NumPy."""
    sd = {k: (M.from_numpy(np.array(v.detach().cpu().numpy(), copy=True))
              if hasattr(v, "detach") else v)
          for k, v in src_model.state_dict().items()}
    dst_model.load_state_dict(sd)


def _np(t):
    return t.detach().cpu().numpy()


def _close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(_np(a), _np(b), rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------- (a)
def tagger_with_vocab(M):
    """A model that carries its vocabulary as extra state, with per-task heads in a ModuleDict,
    learned per-task scales in a ParameterList and a non-persistent cache buffer."""
    nn = M.nn

    class Tagger(nn.Module):
        def __init__(self, vocab, dim=8, tasks=("pos", "ner")):
            super().__init__()
            self.vocab = dict(vocab)
            self.embed = nn.Embedding(len(vocab), dim)
            self.encoder = nn.Sequential(nn.Linear(dim, dim), nn.Tanh())
            self.heads = nn.ModuleDict({t: nn.Linear(dim, 3) for t in tasks})
            self.scales = nn.ParameterList([nn.Parameter(M.ones(1)) for _ in tasks])
            self.register_buffer("steps", M.zeros((), dtype=M.long))
            self.register_buffer("cache", M.zeros(dim), persistent=False)

        def get_extra_state(self):
            return {"vocab": self.vocab}

        def set_extra_state(self, state):
            self.vocab = dict(state["vocab"])

        def extra_repr(self):
            return f"vocab_size={len(self.vocab)}"

        def forward(self, tokens, task):
            h = self.encoder(self.embed(tokens))
            if self.training:
                self.steps += 1
                self.cache = h.detach().mean((0, 1))
            idx = list(self.heads.keys()).index(task)
            return self.heads[task](h) * self.scales[idx]

    return Tagger


def _init_weights(M):
    def init(m):
        if isinstance(m, M.nn.Linear):
            M.nn.init.xavier_uniform_(m.weight)
            M.nn.init.zeros_(m.bias)
        elif isinstance(m, M.nn.Embedding):
            M.nn.init.normal_(m.weight, std=0.5)
    return init


def test_module_surgery_extra_state_partial_checkpoints():
    M = ferrotorch
    nn = M.nn
    Tagger = tagger_with_vocab(M)
    M.manual_seed(0)
    vocab = {w: i for i, w in enumerate("<pad> the cat sat on mat".split())}
    model = Tagger(vocab)
    model.apply(_init_weights(M))
    assert float(model.heads["pos"].bias.abs().sum()) == 0.0

    # tag each token by whether its id is < 2, 2-3 or >= 4 (pos) or its id mod 3 (ner)
    tokens = M.randint(0, 6, (32, 5))
    targets = {"pos": (tokens >= 2).long() + (tokens >= 4).long(), "ner": tokens % 3}
    opt = M.optim.Adam(model.parameters(), lr=0.05)
    for step in range(60):
        for task in ("pos", "ner"):
            opt.zero_grad(set_to_none=True)
            logits = model(tokens, task)
            loss = nn.functional.cross_entropy(logits.reshape(-1, 3), targets[task].reshape(-1))
            loss.backward()
            opt.step()
    model.eval()
    assert not any(m.training for m in model.modules())
    with M.no_grad():
        for task in ("pos", "ner"):
            acc = (model(tokens, task).argmax(-1) == targets[task]).float().mean().item()
            assert acc > 0.95, (task, acc)
    assert int(model.steps) == 120
    assert float(model.cache.abs().sum()) > 0

    sd = model.state_dict()
    assert "_extra_state" in sd and "cache" not in sd and "steps" in sd
    assert [k for k in sd if k.startswith("scales")] == ["scales.0", "scales.1"]

    # the vocabulary comes back through set_extra_state; the checkpoint round trips a buffer
    buf = io.BytesIO()
    M.save(sd, buf)
    buf.seek(0)
    restored = Tagger({w: i for i, w in enumerate("abcdef")})
    restored.load_state_dict(M.load(buf, weights_only=False))
    assert restored.vocab == vocab and int(restored.steps) == 120
    assert float(restored.cache.abs().sum()) == 0.0  # not persistent: left as initialised
    restored.eval()
    with M.no_grad():
        _close(restored(tokens, "ner"), model(tokens, "ner"))

    # a model with a new task head and no "ner" head: load what fits with strict=False
    grown = Tagger(vocab, tasks=("pos", "chunk"))
    result = grown.load_state_dict(sd, strict=False)
    assert sorted(result.missing_keys) == ["heads.chunk.bias", "heads.chunk.weight"]
    assert sorted(result.unexpected_keys) == ["heads.ner.bias", "heads.ner.weight"]
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "heads.chunk'):
        grown.load_state_dict(sd)
    assert M.equal(grown.heads["pos"].weight, model.heads["pos"].weight)

    # freeze the encoder and fine-tune only the new head; assign=True swaps tensors in place
    for name, p in grown.named_parameters():
        p.requires_grad_(name.startswith("heads.chunk"))
    trainable = [n for n, p in grown.named_parameters() if p.requires_grad]
    assert trainable == ["heads.chunk.weight", "heads.chunk.bias"]
    new_w = M.full((3, 8), 0.25)
    grown.load_state_dict({"heads.chunk.weight": new_w}, strict=False, assign=True)
    assert isinstance(grown.heads["chunk"].weight, nn.Parameter)
    assert grown.heads["chunk"].weight.requires_grad
    assert float(grown.heads["chunk"].weight.sum()) == 6.0

    text = repr(model)
    assert text.startswith("Tagger(\n  vocab_size=6\n  (embed): Embedding(6, 8)")
    assert "(heads): ModuleDict(\n    (pos): Linear(in_features=8, out_features=3, bias=True)" \
        in text
    names = [n for n, _ in model.named_modules()]
    assert names == ["", "embed", "encoder", "encoder.0", "encoder.1", "heads", "heads.pos",
                     "heads.ner", "scales"]
    assert [type(c).__name__ for c in model.children()] == ["Embedding", "Sequential",
                                                            "ModuleDict", "ParameterList"]
    assert model.get_submodule("encoder.0") is model.encoder[0]
    assert model.get_parameter("scales.1") is model.scales[1]


def test_module_surgery_repr_and_state_dict_match_torch():
    torch = _torch()
    vocab = {w: i for i, w in enumerate("<pad> the cat sat on mat".split())}
    ft_model = tagger_with_vocab(ferrotorch)(vocab)
    pt_model = tagger_with_vocab(torch)(vocab)
    assert repr(ft_model).replace("ferrotorch.", "torch.") == repr(pt_model)
    assert list(ft_model.state_dict()) == list(pt_model.state_dict())
    _copy_weights(pt_model, ft_model, ferrotorch)
    tokens = np.array([[1, 2, 3, 4, 5], [5, 4, 3, 2, 0]])
    ft_model.eval()
    pt_model.eval()
    for task in ("pos", "ner"):
        _close(ft_model(ferrotorch.from_numpy(tokens), task),
               pt_model(torch.from_numpy(tokens), task))
    ft_missing = ft_model.load_state_dict({"embed.weight": ft_model.embed.weight}, strict=False)
    pt_missing = pt_model.load_state_dict({"embed.weight": pt_model.embed.weight}, strict=False)
    assert ft_missing.missing_keys == pt_missing.missing_keys


# ---------------------------------------------------------------------------- (b)
def scheduler_zoo(M, n_steps=12, resume_at=5):
    """Several schedulers chained the way training scripts chain them; each run is stopped at
    ``resume_at``, saved (optimizer + scheduler state dicts) and resumed in fresh objects."""
    nn = M.nn
    S = M.optim.lr_scheduler

    def make(kind):
        lin = nn.Linear(2, 1)
        groups = [{"params": [lin.weight]}, {"params": [lin.bias], "lr": 0.5}]
        if kind == "onecycle":
            opt = M.optim.Adam(groups, lr=0.1)
            sched = S.OneCycleLR(opt, max_lr=[0.1, 0.5], total_steps=n_steps + 1,
                                 pct_start=0.25, three_phase=True)
        elif kind == "sequential":
            opt = M.optim.SGD(groups, lr=0.1, momentum=0.9)
            sched = S.SequentialLR(opt, [S.LinearLR(opt, start_factor=0.1, total_iters=3),
                                         S.CosineAnnealingLR(opt, T_max=5, eta_min=0.01)],
                                   milestones=[3])
        elif kind == "warm_restarts":
            opt = M.optim.SGD(groups, lr=0.1)
            sched = S.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2, eta_min=0.001)
        elif kind == "lambda":
            opt = M.optim.AdamW(groups, lr=0.1)
            sched = S.LambdaLR(opt, lr_lambda=[lambda e: 0.9 ** e, lambda e: 1.0 / (e + 1)])
        elif kind == "chained":
            opt = M.optim.SGD(groups, lr=0.1)
            sched = S.ChainedScheduler([S.ConstantLR(opt, factor=0.5, total_iters=2),
                                        S.ExponentialLR(opt, gamma=0.9)], optimizer=opt)
        else:  # plateau
            opt = M.optim.SGD(groups, lr=0.1)
            sched = S.ReduceLROnPlateau(opt, mode="max", factor=0.5, patience=1, cooldown=1,
                                        threshold=0.01, threshold_mode="abs",
                                        min_lr=[0.01, 0.2])
        return lin, opt, sched

    metrics = [0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.605, 0.6, 0.6, 0.6, 0.6, 0.6]
    x = M.tensor([[1.0, 2.0], [3.0, -1.0]])
    result = {}
    for kind in ("onecycle", "sequential", "warm_restarts", "lambda", "chained", "plateau"):
        lin, opt, sched = make(kind)
        lrs, momenta = [], []
        for step in range(n_steps):
            if step == resume_at:
                buf = io.BytesIO()
                M.save({"model": lin.state_dict(), "opt": opt.state_dict(),
                        "sched": sched.state_dict()}, buf)
                buf.seek(0)
                ckpt = M.load(buf, weights_only=False)
                lin, opt, sched = make(kind)
                lin.load_state_dict(ckpt["model"])
                opt.load_state_dict(ckpt["opt"])
                sched.load_state_dict(ckpt["sched"])
            opt.zero_grad()
            lin(x).pow(2).mean().backward()
            opt.step()
            if kind == "plateau":
                sched.step(metrics[step])
            elif kind == "warm_restarts":
                sched.step(step * 0.5 + 0.5)  # fractional epochs, as in its docstring
            else:
                sched.step()
            lrs.append([g["lr"] for g in opt.param_groups])
            g0 = opt.param_groups[0]
            momenta.append(g0["betas"][0] if "betas" in g0 else g0.get("momentum", 0.0))
        result[kind] = (np.array(lrs), np.array(momenta))
    return result


def test_scheduler_zoo_trajectories_and_resume():
    res = scheduler_zoo(ferrotorch)
    lrs, betas = res["onecycle"]
    # three phases over 13 steps: up to max_lr (step 2.25), back down to the initial max/25
    # (step 4.5), then annihilated; beta1 cycles inversely between 0.95 and 0.85
    assert lrs[:, 0].argmax() == 1 and 0.09 < lrs[1, 0] < 0.1 and 0.45 < lrs[1, 1] < 0.5
    assert betas.argmin() == 1 and 0.85 < betas[1] < 0.86
    assert 0.0036 < lrs[4, 0] < 0.004 and (betas[4:] == 0.95).all()
    assert (np.diff(lrs[3:, 0]) < 0).all() and lrs[-1, 0] < 1e-5
    lrs, mom = res["sequential"]
    np.testing.assert_allclose(lrs[:3, 1], [0.2, 0.35, 0.5])
    np.testing.assert_allclose(lrs[7], [0.01, 0.01], rtol=1e-6)  # the cosine's floor
    assert (mom == 0.9).all()
    lrs, _ = res["warm_restarts"]
    # T_0=2, T_mult=2: restarts at epochs 2 and 6
    np.testing.assert_allclose(lrs[3, 0], 0.1)
    np.testing.assert_allclose(lrs[11, 0], 0.1)
    np.testing.assert_allclose(lrs[0, 0], 0.001 + 0.099 * (1 + math.cos(math.pi * 0.25)) / 2)
    lrs, _ = res["lambda"]
    np.testing.assert_allclose(lrs[:, 0], 0.1 * 0.9 ** np.arange(1, 13), rtol=1e-6)
    np.testing.assert_allclose(lrs[:, 1], 0.5 / np.arange(2, 14), rtol=1e-6)
    lrs, _ = res["chained"]
    np.testing.assert_allclose(lrs[:3, 0], [0.045, 0.081, 0.0729], rtol=1e-6)
    lrs, _ = res["plateau"]
    np.testing.assert_allclose(lrs[:, 0], [0.1] * 3 + [0.05] * 3 + [0.025] * 3 + [0.0125] * 3)
    np.testing.assert_allclose(lrs[6:, 1], 0.2)  # clipped by this group's min_lr


def test_scheduler_zoo_matches_torch():
    torch = _torch()
    ft_res = scheduler_zoo(ferrotorch)
    pt_res = scheduler_zoo(torch)
    for kind in ft_res:
        for a, b in zip(ft_res[kind], pt_res[kind]):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-10, err_msg=kind)


# ---------------------------------------------------------------------------- (c)
class ShardedRange(ferrotorch.utils.data.IterableDataset):
    """An IterableDataset over [start, end) that shards itself across workers with
    ``get_worker_info`` (the recipe in the ``IterableDataset`` docstring). Module level: the
    workers (forkserver) unpickle it."""

    def __init__(self, start, end):
        super().__init__()
        self.start, self.end = start, end

    def __iter__(self):
        info = ferrotorch.utils.data.get_worker_info()
        if info is None:
            lo, hi = self.start, self.end
        else:
            per = int(math.ceil((self.end - self.start) / float(info.num_workers)))
            lo = self.start + info.id * per
            hi = min(lo + per, self.end)
        for i in range(lo, hi):
            yield ferrotorch.tensor([float(i), float(i % 3)])


class PlainRange(ferrotorch.utils.data.IterableDataset):
    """Does not shard itself: ``worker_init_fn`` below narrows each worker's copy."""

    def __init__(self, start, end):
        super().__init__()
        self.start, self.end = start, end

    def __iter__(self):
        return iter(range(self.start, self.end))


def split_range_worker_init_fn(worker_id):
    info = ferrotorch.utils.data.get_worker_info()
    ds = info.dataset  # this worker's copy
    per = int(math.ceil((ds.end - ds.start) / float(info.num_workers)))
    start = ds.start
    ds.start = start + worker_id * per
    ds.end = min(ds.start + per, ds.end)


def test_iterable_datasets_workers_splits_and_balanced_sampler():
    M = ferrotorch
    D = M.utils.data
    ds = ShardedRange(3, 17)
    one = [b[:, 0].long().tolist() for b in D.DataLoader(ds, batch_size=4)]
    assert one == [[3, 4, 5, 6], [7, 8, 9, 10], [11, 12, 13, 14], [15, 16]]
    two = D.DataLoader(ds, batch_size=3, num_workers=2)
    got = sorted(int(v) for b in two for v in b[:, 0])
    assert got == list(range(3, 17))  # each element exactly once, not once per worker
    narrowed = D.DataLoader(PlainRange(0, 11), batch_size=2, num_workers=2,
                            worker_init_fn=split_range_worker_init_fn)
    assert sorted(int(v) for b in narrowed for v in b) == list(range(11))
    assert D.get_worker_info() is None  # in the main process

    # random_split / Subset / ConcatDataset, reproducible with a generator
    M.manual_seed(0)
    n = 120
    x = M.randn(n, 2)
    y = (x[:, 0] > 1.0).long()  # a rare class (about 16%)
    full = D.TensorDataset(x, y)
    train, val = D.random_split(full, [0.75, 0.25], generator=M.Generator().manual_seed(1))
    train2, _ = D.random_split(full, [0.75, 0.25], generator=M.Generator().manual_seed(1))
    assert len(train) == 90 and len(val) == 30 and train.indices == train2.indices
    assert sorted(train.indices + val.indices) == list(range(n))
    extra = D.Subset(full, [i for i in range(n) if int(y[i]) == 1][:5])
    train = D.ConcatDataset([train, extra])
    assert len(train) == 95 and train.cumulative_sizes == [90, 95]

    # class-balanced sampling: weight each sample by 1 / (its class count)
    labels = M.stack([train[i][1] for i in range(len(train))])
    counts = M.bincount(labels, minlength=2).float()
    weights = (1.0 / counts)[labels]
    sampler = D.WeightedRandomSampler(weights.tolist(), num_samples=400, replacement=True,
                                      generator=M.Generator().manual_seed(2))
    loader = D.DataLoader(train, batch_size=40, sampler=sampler, drop_last=True)
    drawn = M.cat([yb for _, yb in loader])
    frac = drawn.float().mean().item()
    assert len(loader) == 10 and drawn.shape == (400,) and 0.4 < frac < 0.6

    model = M.nn.Linear(2, 2)
    opt = M.optim.SGD(model.parameters(), lr=0.5)
    for epoch in range(8):
        for xb, yb in loader:
            opt.zero_grad()
            M.nn.functional.cross_entropy(model(xb), yb).backward()
            opt.step()
    with M.no_grad():
        xv = M.stack([val[i][0] for i in range(len(val))])
        yv = M.stack([val[i][1] for i in range(len(val))])
        pred = model(xv).argmax(1)
        rare = yv == 1
    assert (pred == yv).float().mean().item() > 0.85
    assert rare.any() and (pred[rare] == 1).float().mean().item() >= 0.5


# ---------------------------------------------------------------------------- (d)
def mixture_of_experts(M):
    nn = M.nn
    F = nn.functional

    class MoE(nn.Module):
        """Top-k gating (Shazeer et al.): each input goes to its k best experts, dispatched with
        index_select and combined back with index_add_; a load-balancing auxiliary loss."""

        def __init__(self, dim=1, hidden=16, n_experts=4, k=2):
            super().__init__()
            self.k = k
            self.n_experts = n_experts
            self.gate = nn.Linear(dim, n_experts)
            self.experts = nn.ModuleList(
                nn.Sequential(nn.Linear(dim, hidden), nn.Tanh(), nn.Linear(hidden, 1))
                for _ in range(n_experts))

        def forward(self, x):
            logits = self.gate(x)
            top_vals, top_idx = logits.topk(self.k, dim=-1)
            weights = F.softmax(top_vals, dim=-1)  # renormalised over the chosen experts
            out = x.new_zeros(x.shape[0], 1)
            for e, expert in enumerate(self.experts):
                rows, slot = (top_idx == e).nonzero(as_tuple=True)
                if rows.numel() == 0:
                    continue
                y = expert(x.index_select(0, rows)) * weights[rows, slot].unsqueeze(-1)
                out.index_add_(0, rows, y)
            probs = F.softmax(logits, dim=-1)
            dispatch = M.zeros_like(probs).scatter_(1, top_idx[:, :1], 1.0)
            aux = self.n_experts * (dispatch.mean(0) * probs.mean(0)).sum()
            return out, aux, top_idx

    return MoE


def _piecewise(M, n=256):
    x = M.linspace(-2, 2, n).unsqueeze(1)
    y = M.where(x < -1, -1.0 - x, M.where(x < 0, x.pow(2), M.where(x < 1, M.sin(3 * x), 1 - x)))
    return x, y


def test_mixture_of_experts_topk_dispatch():
    M = ferrotorch
    M.manual_seed(0)
    model = mixture_of_experts(M)()
    x, y = _piecewise(M)
    opt = M.optim.Adam(model.parameters(), lr=0.02)
    first = None
    for step in range(500):
        out, aux, _ = model(x)
        loss = M.nn.functional.mse_loss(out, y)
        opt.zero_grad()
        (loss + 0.01 * aux).backward()
        opt.step()
        first = loss.item() if first is None else first
    assert loss.item() < 0.02 and loss.item() < first / 10
    _, aux, top_idx = model(x)
    # every expert is used as someone's first choice; the balance loss is near its minimum 1
    assert len(set(top_idx[:, 0].tolist())) >= 3
    assert 1.0 <= aux.item() < 1.6
    assert all(p.grad is not None for p in model.gate.parameters())


def test_mixture_of_experts_matches_torch():
    torch = _torch()
    ferrotorch.manual_seed(1)
    ft_model = mixture_of_experts(ferrotorch)()
    pt_model = mixture_of_experts(torch)()
    _copy_weights(ft_model, pt_model, torch)
    xs = np.linspace(-2, 2, 33, dtype=np.float32)[:, None]
    ft_x = ferrotorch.from_numpy(xs).requires_grad_()
    pt_x = torch.from_numpy(xs).requires_grad_()
    (ft_out, ft_aux, ft_idx), (pt_out, pt_aux, pt_idx) = ft_model(ft_x), pt_model(pt_x)
    assert ft_idx.tolist() == pt_idx.tolist()
    _close(ft_out, pt_out)
    _close(ft_aux, pt_aux)
    (ft_out.pow(2).sum() + ft_aux).backward()
    (pt_out.pow(2).sum() + pt_aux).backward()
    _close(ft_x.grad, pt_x.grad, rtol=1e-4, atol=1e-5)
    _close(ft_model.gate.weight.grad, pt_model.gate.weight.grad, rtol=1e-4, atol=1e-5)
    _close(ft_model.experts[2][0].weight.grad, pt_model.experts[2][0].weight.grad, rtol=1e-4,
           atol=1e-5)


# ---------------------------------------------------------------------------- (e)
def crf_tagger(M):
    nn = M.nn

    class CRF(nn.Module):
        """A linear-chain CRF: the forward algorithm (logsumexp) for the partition function,
        the gold path score with gather, and Viterbi decoding with max + backpointers."""

        def __init__(self, num_tags):
            super().__init__()
            self.start = nn.Parameter(M.zeros(num_tags))
            self.end = nn.Parameter(M.zeros(num_tags))
            self.trans = nn.Parameter(M.zeros(num_tags, num_tags))  # trans[i, j]: i -> j

        def log_partition(self, emissions, mask):
            score = self.start + emissions[:, 0]  # (B, T)
            for t in range(1, emissions.shape[1]):
                nxt = M.logsumexp(score.unsqueeze(2) + self.trans + emissions[:, t].unsqueeze(1),
                                  dim=1)
                score = M.where(mask[:, t].unsqueeze(1), nxt, score)
            return M.logsumexp(score + self.end, dim=1)

        def gold_score(self, emissions, tags, mask):
            B, T = tags.shape
            em = emissions.gather(2, tags.unsqueeze(2)).squeeze(2)  # (B, T)
            tr = self.trans[tags[:, :-1], tags[:, 1:]]  # (B, T-1)
            score = self.start[tags[:, 0]] + (em * mask).sum(1) + (tr * mask[:, 1:]).sum(1)
            last = tags.gather(1, (mask.sum(1).long() - 1).unsqueeze(1)).squeeze(1)
            return score + self.end[last]

        def nll(self, emissions, tags, mask):
            return (self.log_partition(emissions, mask)
                    - self.gold_score(emissions, tags, mask.float())).mean()

        def viterbi(self, emissions, mask):
            score = self.start + emissions[:, 0]
            history = []
            for t in range(1, emissions.shape[1]):
                best, idx = (score.unsqueeze(2) + self.trans).max(dim=1)
                nxt = best + emissions[:, t]
                score = M.where(mask[:, t].unsqueeze(1), nxt, score)
                history.append(idx)
            score = score + self.end
            lengths = mask.sum(1).tolist()
            paths = []
            for b in range(emissions.shape[0]):
                tag = int(score[b].argmax())
                path = [tag]
                for idx in reversed(history[:lengths[b] - 1]):
                    tag = int(idx[b, tag])
                    path.append(tag)
                paths.append(path[::-1])
            return paths

    class Tagger(nn.Module):
        def __init__(self, vocab, num_tags, dim=16):
            super().__init__()
            self.embed = nn.Embedding(vocab, dim, padding_idx=0)
            self.proj = nn.Linear(dim, num_tags)
            self.crf = CRF(num_tags)

        def forward(self, tokens):
            return self.proj(self.embed(tokens))

    return Tagger


def _bio_data(M, n=64, T=7):
    """Tokens 1-3 are 'other' words (tag O=0); token 4 starts an entity (B=1) that goes on
    (I=2) over the following tokens 5; token 5 outside an entity is O. Only the transitions can
    tell an I-token 5 from an O-token 5."""
    g = M.Generator().manual_seed(0)
    tokens = M.randint(1, 4, (n, T), generator=g)
    tags = M.zeros(n, T, dtype=M.long)
    for b in range(n):
        s = int(M.randint(0, T - 2, (1,), generator=g))
        L = int(M.randint(1, 3, (1,), generator=g))
        tokens[b, s] = 4
        tags[b, s] = 1
        tokens[b, s + 1:s + 1 + L] = 5
        tags[b, s + 1:s + 1 + L] = 2
        if b % 2 == 0 and s + 1 + L < T:  # a stray token 5 after the entity: tag O
            tokens[b, T - 1] = 5
            tags[b, T - 1] = 0 if s + 1 + L < T - 1 else tags[b, T - 1]
    lengths = M.randint(T - 2, T + 1, (n,), generator=g)
    mask = M.arange(T).unsqueeze(0) < lengths.unsqueeze(1)
    tokens = tokens.masked_fill(~mask, 0)
    tags = tags.masked_fill(~mask, 0)
    return tokens, tags, mask


def test_bilstm_free_crf_tagger_forward_algorithm_and_viterbi():
    M = ferrotorch
    M.manual_seed(0)
    model = crf_tagger(M)(6, 3)
    tokens, tags, mask = _bio_data(M)
    # the forward algorithm equals brute-force enumeration over all 3^4 paths
    em = M.randn(2, 4, 3)
    short = M.ones(2, 4, dtype=M.bool)
    with M.no_grad():
        model.crf.trans.copy_(M.randn(3, 3))
        model.crf.start.copy_(M.randn(3))
    paths = M.cartesian_prod(*[M.arange(3)] * 4)  # (81, 4)
    scores = M.stack([model.crf.gold_score(em, p.expand(2, 4), short.float()) for p in paths])
    _close(model.crf.log_partition(em, short), M.logsumexp(scores, 0), rtol=1e-5)
    best = paths[scores.argmax(0)].tolist()
    assert model.crf.viterbi(em, short) == best

    opt = M.optim.Adam(model.parameters(), lr=0.05)
    for epoch in range(150):
        opt.zero_grad()
        loss = model.crf.nll(model(tokens), tags, mask)
        loss.backward()
        M.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
    assert loss.item() < 0.1
    with M.no_grad():
        decoded = model.crf.viterbi(model(tokens), mask)
    correct = total = 0
    for b, path in enumerate(decoded):
        gold = tags[b, :len(path)].tolist()
        assert len(path) == int(mask[b].sum())
        correct += sum(p == q for p, q in zip(path, gold))
        total += len(path)
    assert correct / total > 0.97
    # the learned transitions: O -> I is forbidden, B -> I is likely
    assert model.crf.trans[0, 2].item() < model.crf.trans[1, 2].item() - 1.0


def test_crf_nll_and_viterbi_match_torch():
    torch = _torch()
    ferrotorch.manual_seed(3)
    ft_model = crf_tagger(ferrotorch)(6, 3)
    pt_model = crf_tagger(torch)(6, 3)
    with ferrotorch.no_grad():
        ft_model.crf.trans.normal_()
        ft_model.crf.end.normal_()
    _copy_weights(ft_model, pt_model, torch)
    tokens, tags, mask = _bio_data(ferrotorch, n=8)
    pt_tokens, pt_tags, pt_mask = (torch.from_numpy(_np(t).copy()) for t in (tokens, tags, mask))
    ft_loss = ft_model.crf.nll(ft_model(tokens), tags, mask)
    pt_loss = pt_model.crf.nll(pt_model(pt_tokens), pt_tags, pt_mask)
    _close(ft_loss, pt_loss, rtol=1e-5)
    ft_loss.backward()
    pt_loss.backward()
    for (name, a), b in zip(ft_model.named_parameters(), pt_model.parameters()):
        _close(a.grad, b.grad, rtol=1e-4, atol=1e-6)
    with ferrotorch.no_grad(), torch.no_grad():
        assert ft_model.crf.viterbi(ft_model(tokens), mask) == \
            pt_model.crf.viterbi(pt_model(pt_tokens), pt_mask)
