# ruff: noqa: B007  (loop variables named as in the tutorials)
"""More end-to-end programs written the way PyTorch tutorials and everyday scripts write them,
run with ``import ferrotorch as torch`` (see test_e2e_programs.py for the first set): a small
ResNet with checkpointing, a VAE, gradient accumulation with hooks and parameter groups, a
GPT-style causal transformer, data pipelines with worker processes, and common tensor idioms.
Each checks that learning happened or that values match a hand / NumPy computation."""

import math
import os

import numpy as np
import pytest

import ferrotorch as torch
import ferrotorch.nn as nn
import ferrotorch.nn.functional as F
from ferrotorch.utils.data import (
    DataLoader,
    Dataset,
    IterableDataset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    get_worker_info,
    random_split,
)


# ---------------------------------------------------------------------------- (a)
class BasicBlock(nn.Module):
    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=3, stride=stride, padding=1,
                               bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, planes, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(planes),
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += self.shortcut(x)
        return F.relu(out)


class TinyResNet(nn.Module):
    def __init__(self, num_classes=3):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8),
                                  nn.ReLU(inplace=True))
        self.layer1 = BasicBlock(8, 8)
        self.layer2 = BasicBlock(8, 16, stride=2)
        self.pool = nn.AdaptiveAvgPool2d((1, 1))
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(16, num_classes)

    def forward(self, x):
        x = self.layer2(self.layer1(self.stem(x)))
        return self.fc(self.flatten(self.pool(x)))


def _bars(n):
    """8x8 images of three classes: a horizontal bar, a vertical bar, the diagonal."""
    xs, ys = [], []
    for i in range(n):
        c = i % 3
        img = torch.zeros(1, 8, 8)
        p = (i * 7) % 6 + 1
        if c == 0:
            img[0, p, :] = 1.0
        elif c == 1:
            img[0, :, p] = 1.0
        else:
            img[0] = torch.eye(8)
        xs.append(img + 0.1 * torch.randn_like(img))
        ys.append(c)
    return torch.stack(xs), torch.tensor(ys)


def test_resnet_sgd_nesterov_onecycle_checkpoint(tmp_path):
    torch.manual_seed(0)
    X, Y = _bars(48)
    model = TinyResNet()
    assert sum(p.numel() for p in model.parameters() if p.requires_grad) == 5003
    criterion = nn.CrossEntropyLoss(label_smoothing=0.05)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True,
                                weight_decay=5e-4)
    epochs, steps = 6, 4
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.1, epochs=epochs,
                                                    steps_per_epoch=steps)
    lrs, losses = [], []
    for epoch in range(epochs):
        model.train()
        perm = torch.randperm(48)
        running = 0.0
        for b in range(steps):
            idx = perm[b * 12:(b + 1) * 12]
            inputs, targets = X[idx], Y[idx]
            optimizer.zero_grad()
            outputs = model(inputs)
            loss = criterion(outputs, targets)
            loss.backward()
            optimizer.step()
            scheduler.step()
            lrs.append(scheduler.get_last_lr()[0])
            running += loss.item()
        losses.append(running / steps)
    assert losses[-1] < 0.4 * losses[0], losses
    # OneCycleLR (cos): warm up from max_lr/25 over 30% of 24 steps, anneal to max_lr/25e4.
    total, up = 24, 0.3 * 24 - 1

    def one_cycle(step):
        if step <= up:
            start, end, pct = 0.004, 0.1, step / up
        else:
            start, end, pct = 0.1, 0.004 / 1e4, (step - up) / (total - 1 - up)
        return end + (start - end) / 2 * (math.cos(math.pi * pct) + 1)

    assert lrs == pytest.approx([one_cycle(s) for s in range(1, total + 1)], rel=1e-9)
    assert optimizer.param_groups[0]["momentum"] != 0.9  # cycle_momentum moved it

    model.eval()
    with torch.no_grad():
        out = model(X)
        acc = (out.argmax(dim=1) == Y).float().mean().item()
    assert acc == 1.0
    assert model.stem[1].num_batches_tracked.item() == epochs * steps

    path = os.path.join(tmp_path, "model.pt")
    torch.save(model.state_dict(), path)
    fresh = TinyResNet()
    result = fresh.load_state_dict(torch.load(path))
    assert not result.missing_keys and not result.unexpected_keys
    fresh.eval()
    with torch.no_grad():
        assert torch.equal(fresh(X), out)

    # A training checkpoint: model + optimizer + scheduler state, resumed elsewhere.
    torch.save({"epoch": epochs, "model_state_dict": model.state_dict(),
                "optimizer_state_dict": optimizer.state_dict(),
                "scheduler_state_dict": scheduler.state_dict(), "loss": loss}, path)
    ckpt = torch.load(path, weights_only=False)
    resumed = TinyResNet()
    resumed.load_state_dict(ckpt["model_state_dict"])
    opt2 = torch.optim.SGD(resumed.parameters(), lr=0.05, momentum=0.9, nesterov=True,
                           weight_decay=5e-4)
    opt2.load_state_dict(ckpt["optimizer_state_dict"])
    assert ckpt["epoch"] == epochs and ckpt["loss"].item() == pytest.approx(loss.item())
    assert opt2.param_groups[0]["lr"] == optimizer.param_groups[0]["lr"]
    buf = optimizer.state[model.fc.weight]["momentum_buffer"]
    assert torch.equal(opt2.state[resumed.fc.weight]["momentum_buffer"], buf)


# ---------------------------------------------------------------------------- (b)
class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc21 = nn.Linear(32, 2)
        self.fc22 = nn.Linear(32, 2)
        self.fc3 = nn.Linear(2, 32)
        self.fc4 = nn.Linear(32, 16)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        return torch.sigmoid(self.fc4(F.relu(self.fc3(z))))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 16))
        return self.decode(self.reparameterize(mu, logvar)), mu, logvar


def test_vae_bce_sum_plus_kl():
    # The "VAE" example: BCE(reduction='sum') + KL, on four 16-pixel binary prototypes with
    # a little flip noise. The sigmoid saturates to exactly 0/1 on some pixels within a few
    # steps; BCE's gradient must stay finite there (PyTorch: (x - y) / max(x (1 - x), 1e-12)).
    torch.manual_seed(1)
    protos = (torch.rand(4, 16) > 0.5).float()
    data = protos[torch.randint(0, 4, (64,))]
    data = (data - (torch.rand(64, 16) < 0.05).float()).abs()

    model = VAE()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    hist = []
    for epoch in range(150):
        model.train()
        optimizer.zero_grad()
        recon, mu, logvar = model(data)
        bce = F.binary_cross_entropy(recon, data.view(-1, 16), reduction="sum")
        kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        loss = bce + kld
        loss.backward()
        optimizer.step()
        hist.append(loss.item() / len(data))
    assert all(math.isfinite(v) for v in hist)
    assert hist[-1] < 0.6 * hist[0], (hist[0], hist[-1])

    r = recon.detach().numpy().astype(np.float64)
    x = data.numpy().astype(np.float64)
    m, lv = mu.detach().numpy().astype(np.float64), logvar.detach().numpy().astype(np.float64)
    with np.errstate(divide="ignore"):
        bce_np = -(x * np.maximum(np.log(r), -100) + (1 - x) * np.maximum(np.log1p(-r), -100))
    assert bce.item() == pytest.approx(bce_np.sum(), rel=1e-4)
    assert kld.item() == pytest.approx(-0.5 * np.sum(1 + lv - m ** 2 - np.exp(lv)), rel=1e-4)

    model.eval()
    with torch.no_grad():
        mu, _ = model.encode(protos)
        assert torch.equal((model.decode(mu) > 0.5).float(), protos)
        assert model.decode(torch.randn(8, 2)).shape == (8, 16)


# ---------------------------------------------------------------------------- (c)
def test_grad_accumulation_hooks_param_groups():
    torch.manual_seed(0)
    X = torch.randn(32, 6)
    Y = X @ torch.randn(6, 1) + 0.01 * torch.randn(32, 1)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 1))

    activation = {}

    def get_activation(name):
        def hook(model, input, output):
            activation[name] = output.detach()
        return hook

    grads = {}

    def backward_hook(module, grad_input, grad_output):
        grads["in"], grads["out"] = grad_input, grad_output

    shapes = []
    handles = [model[1].register_forward_hook(get_activation("tanh")),
               model[2].register_full_backward_hook(backward_hook),
               model.register_forward_pre_hook(lambda m, inp: shapes.append(inp[0].shape))]

    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if name.endswith("bias") else decay).append(p)
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                                   {"params": no_decay, "weight_decay": 0.0, "lr": 5e-3}],
                                  lr=1e-2)
    assert [g["lr"] for g in optimizer.param_groups] == [1e-2, 5e-3]
    criterion = nn.MSELoss()
    accum, first = 4, None
    for epoch in range(40):
        optimizer.zero_grad(set_to_none=True)
        for i in range(accum):
            loss = criterion(model(X[i * 8:(i + 1) * 8]), Y[i * 8:(i + 1) * 8]) / accum
            loss.backward()
        total_norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        if first is None:
            first = loss.item()
    assert loss.item() < 0.05 * first, (first, loss.item())
    assert total_norm.ndim == 0 and total_norm.item() > 0
    assert activation["tanh"].shape == (8, 16) and activation["tanh"].abs().max() <= 1
    assert len(shapes) == 160 and shapes[0] == (8, 6)
    # grad_output of the last Linear is dLoss/dOutput = 2 (out - y) / (8 * accum); its
    # grad_input is that times the weight.
    xb, yb = X[24:32], Y[24:32]
    out = model(xb)
    (criterion(out, yb) / accum).backward()
    expected = 2 * (out.detach() - yb) / (8 * accum)
    assert torch.allclose(grads["out"][0], expected, atol=1e-7)
    assert isinstance(grads["in"], tuple) and grads["in"][0].shape == (8, 16)
    assert torch.allclose(grads["in"][0], expected @ model[2].weight.detach(), atol=1e-7)
    for h in handles:
        h.remove()
    model(X)
    assert len(shapes) == 161

    optimizer.zero_grad(set_to_none=True)
    assert all(p.grad is None for p in model.parameters())

    # Accumulating four quarter-batch losses equals the full-batch gradient.
    lin = nn.Linear(6, 1)
    for i in range(4):
        (criterion(lin(X[i * 8:(i + 1) * 8]), Y[i * 8:(i + 1) * 8]) / 4).backward()
    g_acc = lin.weight.grad.clone()
    lin.zero_grad()
    criterion(lin(X), Y).backward()
    assert torch.allclose(g_acc, lin.weight.grad, atol=1e-6)

    # Freezing the first layer: only the head trains, the frozen grads stay None.
    for p in model[0].parameters():
        p.requires_grad = False
    head_opt = torch.optim.SGD(filter(lambda p: p.requires_grad, model.parameters()), lr=0.1)
    assert sum(p.numel() for p in model.parameters() if p.requires_grad) == 17
    frozen = model[0].weight.clone()
    criterion(model(X), Y).backward()
    head_opt.step()
    assert model[0].weight.grad is None and torch.equal(model[0].weight, frozen)
    for g in head_opt.param_groups:
        g["lr"] *= 0.1
    assert head_opt.param_groups[0]["lr"] == pytest.approx(0.01)


# ---------------------------------------------------------------------------- (d)
class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head, self.n_embd = n_head, n_embd
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size))
                             .view(1, 1, block_size, block_size))

    def forward(self, x, flash=True):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if flash:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            y = F.softmax(att, dim=-1) @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, block_size)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * n_embd, n_embd), nn.Dropout(0.0))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab, n_embd=16, n_head=2, block_size=8):
        super().__init__()
        self.block_size = block_size
        self.wte = nn.Embedding(vocab, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.blocks = nn.ModuleList([Block(n_embd, n_head, block_size) for _ in range(2)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab, bias=False)
        self.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                   ignore_index=-1)
        return logits, loss

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= self.block_size else idx[:, -self.block_size:]
            logits, _ = self(idx_cond)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float("Inf")
            probs = F.softmax(logits, dim=-1)
            idx_next = torch.multinomial(probs, num_samples=1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


def test_gpt_causal_attention_learns_cycle():
    torch.manual_seed(0)
    model = TinyGPT(5)
    assert model.wte.weight is model.lm_head.weight
    assert sum(p.numel() for p in model.parameters()) == 6800  # the tied matrix counted once
    attn = model.blocks[0].attn
    xx = torch.randn(2, 8, 16)
    assert torch.allclose(attn(xx), attn(xx, flash=False), atol=1e-6)

    seq = torch.tensor([0, 1, 2, 3, 4] * 4)
    data_x = torch.stack([seq[i:i + 8] for i in range(10)])
    data_y = torch.stack([seq[i + 1:i + 9] for i in range(10)])
    data_y[0, 0] = -1  # ignored target
    opt = torch.optim.AdamW(model.parameters(), lr=3e-2, betas=(0.9, 0.95), weight_decay=0.1)
    for it in range(60):
        logits, loss = model(data_x, data_y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    assert loss.item() < 0.01, loss.item()
    model.eval()
    out = model.generate(torch.tensor([[0, 1]]), 10, temperature=0.01, top_k=2)
    assert out.tolist() == [[0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1]]


def test_multihead_attention_masks_and_sdpa():
    torch.manual_seed(0)
    B, T, E, H = 2, 5, 8, 2
    x = torch.randn(B, T, E)
    mha = nn.MultiheadAttention(E, H, batch_first=True)
    kpm = torch.tensor([[False] * 5, [False, False, False, True, True]])
    out, w = mha(x, x, x, key_padding_mask=kpm)
    assert out.shape == (B, T, E) and w.shape == (B, T, T)
    assert w[1, :, 3:].abs().max().item() == 0.0
    assert torch.allclose(w.sum(-1), torch.ones(B, T))
    # Padding the second sequence's last keys is the same as cutting them off.
    out_cut, _ = mha(x[1:, :3], x[1:, :3], x[1:, :3])
    assert torch.allclose(out[1, :3], out_cut[0], atol=1e-6)
    _, w_heads = mha(x, x, x, key_padding_mask=kpm, average_attn_weights=False)
    assert w_heads.shape == (B, H, T, T)
    assert torch.allclose(w_heads.mean(1), w, atol=1e-6)

    causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    out_b, w_b = mha(x, x, x, attn_mask=causal)
    assert w_b[0].triu(1).abs().max().item() == 0.0
    out_f, _ = mha(x, x, x, attn_mask=torch.zeros(T, T).masked_fill(causal, float("-inf")))
    assert torch.allclose(out_b, out_f, atol=1e-6)
    assert torch.equal(nn.Transformer.generate_square_subsequent_mask(T),
                       torch.zeros(T, T).masked_fill(causal, float("-inf")))

    q = torch.randn(B, H, T, 4, requires_grad=True)
    k, v = torch.randn(B, H, T, 4), torch.randn(B, H, T, 4)
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(4)
    scores = scores.masked_fill(torch.triu(torch.ones(T, T), diagonal=1).bool(), float("-inf"))
    ref = torch.einsum("bhqk,bhkd->bhqd", scores.softmax(dim=-1), v)
    assert torch.allclose(o, ref, atol=1e-6)
    (g_sdpa,) = torch.autograd.grad(o.sum(), q)
    (g_ref,) = torch.autograd.grad(ref.sum(), q)
    assert torch.allclose(g_sdpa, g_ref, atol=1e-5)
    # The first query attends only to the first key.
    assert torch.allclose(o[:, :, 0], v[:, :, 0], atol=1e-6)


# ---------------------------------------------------------------------------- (e)
class RangeStream(IterableDataset):
    """The ``IterableDataset`` docs example: each worker yields its own slice."""

    def __init__(self, start, end):
        super().__init__()
        self.start, self.end = start, end

    def __iter__(self):
        worker_info = get_worker_info()
        if worker_info is None:
            iter_start, iter_end = self.start, self.end
        else:
            per_worker = int(math.ceil((self.end - self.start) / float(worker_info.num_workers)))
            iter_start = self.start + worker_info.id * per_worker
            iter_end = min(iter_start + per_worker, self.end)
        return iter(range(iter_start, iter_end))


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"x": torch.tensor([float(i)]), "y": i * i, "name": f"item{i}"}


def collate_squares(batch):
    xs = torch.stack([b["x"] for b in batch])
    ys = torch.tensor([b["y"] for b in batch], dtype=torch.float32)
    return xs, ys, [b["name"] for b in batch]


def test_data_pipelines():
    assert [t.tolist() for t in DataLoader(RangeStream(3, 7), num_workers=0)] == \
        [[3], [4], [5], [6]]
    # Two workers, one item each in turn (as PyTorch's loader interleaves them).
    assert [t.tolist() for t in DataLoader(RangeStream(3, 7), num_workers=2)] == \
        [[3], [5], [4], [6]]
    assert [t.tolist() for t in DataLoader(RangeStream(3, 7), batch_size=2, num_workers=2)] \
        == [[3, 4], [5, 6]]

    dl = DataLoader(Squares(10), batch_size=4, shuffle=True, num_workers=2,
                    collate_fn=collate_squares, drop_last=True,
                    generator=torch.Generator().manual_seed(0))
    batches = list(dl)
    assert len(dl) == 2 and len(batches) == 2
    for xs, ys, names in batches:
        assert xs.shape == (4, 1) and ys.dtype == torch.float32
        assert torch.equal(xs.view(-1) ** 2, ys)
        assert names == [f"item{int(v)}" for v in xs.view(-1).tolist()]
    seen = torch.cat([b[0] for b in batches]).view(-1).tolist()
    assert len(set(seen)) == 8  # drop_last: 8 distinct of the 10

    b = next(iter(DataLoader(Squares(5), batch_size=2)))  # default collate of dicts
    assert b["x"].shape == (2, 1) and b["y"].tolist() == [0, 1] and b["name"] == ["item0",
                                                                                   "item1"]

    full = TensorDataset(torch.arange(10).float().unsqueeze(1), torch.arange(10))
    train, val = random_split(full, [8, 2], generator=torch.Generator().manual_seed(42))
    train2, val2 = random_split(full, [8, 2], generator=torch.Generator().manual_seed(42))
    assert train.indices == train2.indices and val.indices == val2.indices
    assert sorted(train.indices + val.indices) == list(range(10))
    assert [len(s) for s in random_split(full, [0.5, 0.3, 0.2])] == [5, 3, 2]

    labels = torch.tensor([0] * 90 + [1] * 10)
    class_counts = torch.bincount(labels)
    sample_weights = (1.0 / class_counts.float())[labels]
    sampler = WeightedRandomSampler(sample_weights, num_samples=len(sample_weights),
                                    replacement=True,
                                    generator=torch.Generator().manual_seed(0))
    ys = torch.cat([y for _, y in DataLoader(TensorDataset(torch.arange(100), labels),
                                             batch_size=20, sampler=sampler)])
    assert len(ys) == 100 and 0.35 < ys.float().mean().item() < 0.65  # rebalanced from 0.1

    dl4 = DataLoader(full, batch_size=2, sampler=SubsetRandomSampler(list(range(4))))
    assert sorted(torch.cat([y for _, y in dl4]).tolist()) == [0, 1, 2, 3]


# ---------------------------------------------------------------------------- (f)
def test_everyday_tensor_idioms(capsys):
    torch.manual_seed(0)
    logits = torch.tensor([[2.0, 0.5, 0.1], [0.1, 0.2, 3.0], [1.0, 4.0, 0.0], [0.3, 0.2, 0.1]])
    y = torch.tensor([0, 2, 0, 1])
    assert (logits.argmax(dim=1) == y).float().mean().item() == 0.5
    correct = (logits.argmax(1) == y).sum().item()
    assert isinstance(correct, int) and correct == 2
    assert f"{torch.tensor(3.14159):.2f}" == "3.14"
    loss = F.cross_entropy(logits, y)
    assert f"loss: {loss:>7f}" == f"loss: {loss.item():>7f}"

    assert torch.where(logits > 1, logits, torch.zeros_like(logits)).sum().item() == 9.0
    assert torch.where(logits > 1, 1.0, 0.0).sum().item() == 3
    values, indices = torch.topk(logits, 2, dim=1)
    assert indices.tolist() == [[0, 1], [2, 1], [1, 0], [0, 1]]
    assert torch.equal(values, logits.gather(1, indices))
    picked = logits.gather(1, y.view(-1, 1)).squeeze(1)
    assert picked.tolist() == pytest.approx([2.0, 3.0, 1.0, 0.2])
    one_hot = torch.zeros(4, 3).scatter_(1, y.unsqueeze(1), 1.0)
    assert torch.equal(one_hot, F.one_hot(y, num_classes=3).float())
    assert torch.equal(one_hot.type_as(y), F.one_hot(y, 3)) and one_hot.type_as(y).dtype == \
        torch.int64
    # cross entropy by hand: -log softmax at the target
    lsm = logits - logits.exp().sum(1, keepdim=True).log()
    assert torch.allclose(loss, -(lsm * one_hot).sum(1).mean())
    assert torch.isclose(loss, torch.tensor(loss.item() + 1e-7)).item()
    assert not torch.allclose(loss, loss + 1e-3)

    x = torch.arange(24.0)
    assert x.view(-1, 4, 3).shape == (2, 4, 3) and x.view(2, -1).shape == (2, 12)
    a, b = x.view(4, 6).chunk(2, dim=1)
    assert torch.equal(torch.cat([a, b], dim=1), x.view(4, 6))
    assert torch.cat((a, b), 0).shape == (8, 3) and torch.stack([a, b]).shape == (2, 4, 3)
    z = x.new_zeros((2, 3))
    assert z.dtype == x.dtype and z.shape == (2, 3) and z.sum().item() == 0
    assert y.new_ones(2).dtype == torch.int64
    arr = (x.view(4, 6) * 2).detach().cpu().numpy()
    assert isinstance(arr, np.ndarray) and arr.shape == (4, 6) and arr[1, 2] == 16.0
    assert torch.from_numpy(arr).tolist() == arr.tolist()
    assert torch.diff(torch.tensor([1, 4, 9, 16])).tolist() == [3, 5, 7]

    @torch.no_grad()
    def evaluate(t):
        return t * 2

    w = torch.ones(3, requires_grad=True)
    assert not evaluate(w).requires_grad and (w * 2).requires_grad
    with torch.inference_mode():
        assert not (w * 2).requires_grad and torch.is_inference_mode_enabled()
    assert not torch.is_inference_mode_enabled()

    torch.manual_seed(123)
    r1 = (torch.randn(3), torch.rand(2), torch.randint(0, 10, (3,)), torch.randperm(5))
    torch.manual_seed(123)
    r2 = (torch.randn(3), torch.rand(2), torch.randint(0, 10, (3,)), torch.randperm(5))
    assert all(torch.equal(p, q) for p, q in zip(r1, r2))

    m = torch.tensor([[1.0, -2.0], [3.0, -4.0]])
    m[m < 0] = 0
    assert m.tolist() == [[1.0, 0.0], [3.0, 0.0]]
    print(torch.tensor([[1.5, 2.0], [3.0, 4.0]]))
    print(torch.tensor([1, 2, 3]), torch.tensor([True, False]))
    assert capsys.readouterr().out == (
        "tensor([[1.5000, 2.0000],\n        [3.0000, 4.0000]])\n"
        "tensor([1, 2, 3]) tensor([ True, False])\n"
    )
    assert torch.finfo(torch.float32).eps == 2.0 ** -23
    assert torch.iinfo(torch.int64).max == 2 ** 63 - 1
    assert torch.is_tensor(x) and not torch.is_tensor(arr) and torch.numel(x) == 24
