# ruff: noqa: B007  (loop variables named as in the tutorials)
"""Tutorial-style programs run end to end on ``cuda`` and on ``cpu`` from the same weights and
data, comparing losses per step, final parameters, gradients and predictions. The weights come
from one initialisation (``state_dict``), the data is made on the CPU and moved. Without a GPU
(or the emulator of tools/cuda_emu) they skip. Small sizes: the emulator runs kernels on the
CPU."""

import io

import numpy as np
import pytest

import ferrotorch as torch
import ferrotorch.nn as nn
import ferrotorch.nn.functional as F

HAS_CUDA = torch.cuda.is_available()
pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device: "
                       + str(torch._C._cuda_unavailable_reason())),
]

F64 = {"rtol": 1e-8, "atol": 1e-10}
F32 = {"rtol": 1e-4, "atol": 1e-5}


def to_np(x):
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu()
        if x.dtype in (torch.float16, torch.bfloat16):
            x = x.float()
        return x.numpy()
    return np.asarray(x)


def assert_same(a, b, path="", **tol):
    """Compare nested results (dicts / lists / tensors / floats) from the two devices."""
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            assert_same(a[k], b[k], f"{path}.{k}", **tol)
    elif isinstance(a, (list, tuple)) and not (a and isinstance(a[0], (int, float))):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{path}[{i}]", **tol)
    else:
        xa, xb = to_np(a), to_np(b)
        assert xa.shape == xb.shape, (path, xa.shape, xb.shape)
        np.testing.assert_allclose(xa, xb, err_msg=path, **tol)


def run_both(program, tol=F64):
    """``program(device)`` returns a nested result; run it on cpu and cuda and compare."""
    cpu = program("cpu")
    gpu = program("cuda")
    assert_same(cpu, gpu, **tol)
    return cpu, gpu


def leaf(t, device):
    """A fresh leaf on ``device`` (``t.to("cpu")`` is ``t`` itself, as in PyTorch)."""
    return t.detach().to(device).clone().requires_grad_(True)


def make_model(factory, seed=0, dtype=torch.float64):
    """One initialisation: returns a function building a copy of it on a device."""
    torch.manual_seed(seed)
    state = {k: v.detach().clone() for k, v in factory().to(dtype).state_dict().items()}

    def build(device):
        m = factory().to(dtype)
        m.load_state_dict(state)
        m = m.to(device)
        assert all(t.device.type == device for t in m.state_dict().values())
        return m

    return build


def params(model):
    return {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}


def grads(model):
    return {k: p.grad.detach().cpu().clone() for k, p in model.named_parameters()
            if p.grad is not None}


def blobs(n=48, d=6, classes=3, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, classes, (n,), generator=g)
    centers = torch.randn(classes, d, generator=g, dtype=dtype) * 2
    x = centers[y] + torch.randn(n, d, generator=g, dtype=dtype)
    return x, y


# ---------------------------------------------------------------------------- optimizers
def mlp():
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh(),
                         nn.Linear(16, 3))


@pytest.mark.parametrize("opt_name", ["sgd_momentum", "adam", "adamw", "rmsprop"])
def test_mlp_classifier_optimizers_with_scheduler(opt_name):
    build = make_model(mlp)
    x_cpu, y_cpu = blobs()

    def program(device):
        model = build(device)
        x, y = x_cpu.to(device), y_cpu.to(device)
        ps = model.parameters()
        if opt_name == "sgd_momentum":
            opt = torch.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3)
            sched = torch.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
        elif opt_name == "adam":
            opt = torch.optim.Adam(ps, lr=0.01, amsgrad=True)
            sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=8)
        elif opt_name == "adamw":
            opt = torch.optim.AdamW(ps, lr=0.01, weight_decay=0.1)
            sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)
        else:
            opt = torch.optim.RMSprop(ps, lr=0.01, momentum=0.5, centered=True)
            sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda e: 1.0 / (1 + e))
        crit = nn.CrossEntropyLoss(label_smoothing=0.1)
        losses = []
        for epoch in range(8):
            opt.zero_grad()
            loss = crit(model(x), y)
            loss.backward()
            opt.step()
            sched.step()
            losses.append(loss.item())
        with torch.no_grad():
            acc = (model(x).argmax(1) == y).double().mean().item()
        return {"losses": losses, "params": params(model), "acc": acc}

    cpu, _ = run_both(program)
    assert cpu["losses"][-1] < cpu["losses"][0]


# ---------------------------------------------------------------------------- CNN
class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(4)
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(4, 6, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(6)
        self.drop = nn.Dropout(p=0.0)
        self.fc = nn.Linear(6 * 2 * 2, 3)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = self.pool(F.relu(self.bn2(self.conv2(x))))
        x = self.drop(torch.flatten(x, 1))
        return self.fc(x)


def test_small_cnn_batchnorm_training_and_eval():
    build = make_model(SmallCNN)
    g = torch.Generator().manual_seed(1)
    x_cpu = torch.randn(8, 1, 8, 8, generator=g, dtype=torch.float64)
    y_cpu = torch.randint(0, 3, (8,), generator=g)

    def program(device):
        model = build(device)
        x, y = x_cpu.to(device), y_cpu.to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        losses = []
        for step in range(4):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            losses.append(loss.item())
            g = grads(model)
            opt.step()
        model.eval()
        with torch.no_grad():
            pred = model(x)
        return {"losses": losses, "grads": g, "params": params(model), "pred": pred}

    run_both(program)


# ---------------------------------------------------------------------------- RNNs
class SeqModel(nn.Module):
    def __init__(self, kind):
        super().__init__()
        rnn = nn.LSTM if kind == "lstm" else nn.GRU
        self.emb = nn.Embedding(10, 5)
        self.rnn = rnn(5, 8, num_layers=2, batch_first=True)
        self.head = nn.Linear(8, 10)

    def forward(self, tokens):
        out, _ = self.rnn(self.emb(tokens))
        return self.head(out)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_rnn_next_token_model(kind):
    build = make_model(lambda: SeqModel(kind))
    g = torch.Generator().manual_seed(2)
    seq = torch.randint(0, 10, (3, 7), generator=g)

    def program(device):
        model = build(device)
        s = seq.to(device)
        inp, tgt = s[:, :-1], s[:, 1:]
        opt = torch.optim.Adam(model.parameters(), lr=0.02)
        losses = []
        for step in range(3):
            opt.zero_grad()
            logits = model(inp)
            loss = F.cross_entropy(logits.reshape(-1, 10), tgt.reshape(-1))
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)
            opt.step()
            losses.append(loss.item())
        return {"losses": losses, "params": params(model)}

    run_both(program)


# ---------------------------------------------------------------------------- transformer
class TinyLM(nn.Module):
    def __init__(self, vocab=11, d=8, heads=2, ctx=6):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(ctx, d) * 0.1)
        self.layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=16, dropout=0.0,
                                                batch_first=True)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.tok.weight  # weight tying

    def forward(self, idx):
        t = idx.shape[1]
        mask = torch.triu(torch.full((t, t), float("-inf"), device=idx.device,
                                     dtype=self.pos.dtype), diagonal=1)
        h = self.tok(idx) + self.pos[:t]
        h = self.layer(h, src_mask=mask)
        return self.lm_head(h)


def test_transformer_encoder_causal_lm_weight_tying():
    build = make_model(TinyLM)
    g = torch.Generator().manual_seed(3)
    data = torch.randint(0, 11, (2, 7), generator=g)

    def program(device):
        model = build(device)
        assert model.lm_head.weight is model.tok.weight
        d = data.to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=0.01)
        losses = []
        for step in range(3):
            opt.zero_grad()
            logits = model(d[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, 11), d[:, 1:].reshape(-1))
            loss.backward()
            opt.step()
            losses.append(loss.item())
        model.eval()
        with torch.no_grad():
            logits = model(d[:, :4])
        return {"losses": losses, "params": params(model), "logits": logits}

    run_both(program)


def test_multihead_attention_with_tril_mask_and_padding():
    def factory():
        return nn.MultiheadAttention(8, 2, batch_first=True)

    build = make_model(factory)
    g = torch.Generator().manual_seed(4)
    x_cpu = torch.randn(2, 5, 8, generator=g, dtype=torch.float64)

    def program(device):
        mha = build(device)
        x = leaf(x_cpu, device)
        causal = ~torch.tril(torch.ones(5, 5, dtype=torch.bool, device=device))
        pad = torch.tensor([[False] * 5, [False] * 3 + [True] * 2], device=device)
        out, w = mha(x, x, x, attn_mask=causal, key_padding_mask=pad)
        (out.pow(2).sum() + w.sum()).backward()
        return {"out": out, "w": w, "xgrad": x.grad, "grads": grads(mha)}

    run_both(program)


def test_manual_masked_fill_softmax_attention():
    g = torch.Generator().manual_seed(5)
    q0, k0, v0 = (torch.randn(2, 4, 6, generator=g, dtype=torch.float64) for _ in range(3))
    lens = torch.tensor([4, 2])

    def program(device):
        q, k, v = (leaf(t, device) for t in (q0, k0, v0))
        scores = q @ k.transpose(-2, -1) / 6 ** 0.5
        mask = torch.arange(4, device=device)[None, None, :] >= lens.to(device)[:, None, None]
        scores = scores.masked_fill(mask, float("-inf"))
        att = torch.softmax(scores, dim=-1)
        out = att @ v
        out.sum().backward()
        return {"out": out, "att": att, "g": [q.grad, k.grad, v.grad]}

    run_both(program)


# ---------------------------------------------------------------------------- embeddings
def test_embedding_bag_of_words_classifier():
    class BoW(nn.Module):
        def __init__(self):
            super().__init__()
            self.bag = nn.EmbeddingBag(20, 6, mode="mean")
            self.fc = nn.Linear(6, 2)

        def forward(self, text, offsets):
            return self.fc(self.bag(text, offsets))

    build = make_model(BoW)
    text = torch.tensor([1, 4, 5, 2, 19, 7, 7, 3, 0, 11])
    offsets = torch.tensor([0, 3, 4, 8])
    labels = torch.tensor([0, 1, 1, 0])

    def program(device):
        model = build(device)
        t, o, y = text.to(device), offsets.to(device), labels.to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
        losses = []
        for step in range(5):
            opt.zero_grad()
            loss = F.cross_entropy(model(t, o), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return {"losses": losses, "params": params(model)}

    run_both(program)


# ---------------------------------------------------------------------------- autoencoder
def test_autoencoder_mse_float32():
    def factory():
        return nn.Sequential(nn.Linear(12, 6), nn.GELU(), nn.Linear(6, 3), nn.Sigmoid(),
                             nn.Linear(3, 6), nn.LeakyReLU(0.1), nn.Linear(6, 12))

    build = make_model(factory, dtype=torch.float32)
    x_cpu = torch.rand(16, 12, generator=torch.Generator().manual_seed(6))

    def program(device):
        model = build(device)
        x = x_cpu.to(device)
        opt = torch.optim.Adam(model.parameters(), lr=0.01)
        crit = nn.MSELoss()
        losses = []
        for step in range(10):
            opt.zero_grad()
            loss = crit(model(x), x)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return {"losses": losses, "params": params(model)}

    cpu, _ = run_both(program, tol=F32)
    assert cpu["losses"][-1] < cpu["losses"][0]


# ---------------------------------------------------------------------------- GAN + penalty
def test_gan_step_bce_with_logits_and_gradient_penalty():
    build_g = make_model(lambda: nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 2)), 1)
    build_d = make_model(lambda: nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1)), 2)
    gen = torch.Generator().manual_seed(7)
    real_cpu = torch.randn(8, 2, generator=gen, dtype=torch.float64) + 1
    z_cpu = torch.randn(2, 8, 3, generator=gen, dtype=torch.float64)
    eps_cpu = torch.rand(2, 8, 1, generator=gen, dtype=torch.float64)

    def program(device):
        G, D = build_g(device), build_d(device)
        opt_g = torch.optim.Adam(G.parameters(), lr=1e-2, betas=(0.5, 0.9))
        opt_d = torch.optim.Adam(D.parameters(), lr=1e-2, betas=(0.5, 0.9))
        crit = nn.BCEWithLogitsLoss()
        real = real_cpu.to(device)
        ones = torch.ones(8, 1, dtype=torch.float64, device=device)
        zeros = torch.zeros_like(ones)
        log = []
        for step in range(2):
            z = z_cpu[step].to(device)
            fake = G(z)
            opt_d.zero_grad()
            eps = eps_cpu[step].to(device)
            interp = (eps * real + (1 - eps) * fake.detach()).requires_grad_(True)
            d_interp = D(interp)
            (gi,) = torch.autograd.grad(d_interp.sum(), interp, create_graph=True)
            gp = ((gi.norm(2, dim=1) - 1) ** 2).mean()
            d_loss = crit(D(real), ones) + crit(D(fake.detach()), zeros) + 10 * gp
            d_loss.backward()
            opt_d.step()
            opt_g.zero_grad()
            g_loss = crit(D(fake), ones)
            g_loss.backward()
            opt_g.step()
            log.append([d_loss.item(), g_loss.item(), gp.item()])
        return {"log": log, "G": params(G), "D": params(D)}

    run_both(program)


# ---------------------------------------------------------------------------- AMP
def test_autocast_and_grad_scaler_float32_master_weights():
    build = make_model(mlp, dtype=torch.float32)
    x_cpu, y_cpu = blobs(n=16, dtype=torch.float32)

    def run(device, dtype):
        model = build(device)
        x, y = x_cpu.to(device), y_cpu.to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = torch.amp.GradScaler(device, init_scale=2.0 ** 10)
        losses = []
        for step in range(3):
            opt.zero_grad()
            with torch.autocast(device_type=device, dtype=dtype):
                out = model(x)
                assert out.dtype == dtype
                loss = F.cross_entropy(out, y)
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            losses.append(loss.float().item())
        assert all(p.dtype == torch.float32 for p in model.parameters())
        return {"losses": losses, "params": params(model), "scale": scaler.get_scale()}

    cpu = run("cpu", torch.bfloat16)
    gpu = run("cuda", torch.bfloat16)
    assert_same(cpu, gpu, rtol=3e-2, atol=3e-2)
    gpu16 = run("cuda", torch.float16)
    assert_same(cpu, gpu16, rtol=3e-2, atol=3e-2)


# ---------------------------------------------------------------------------- custom Function
class Swish(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, beta):
        ctx.save_for_backward(x)
        ctx.beta = beta
        return x * torch.sigmoid(beta * x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(ctx.beta * x)
        return grad * (s + ctx.beta * x * s * (1 - s)), None


def test_custom_autograd_function_in_model():
    build = make_model(lambda: nn.Sequential(nn.Linear(4, 6), nn.Linear(6, 1)))
    x_cpu = torch.randn(10, 4, generator=torch.Generator().manual_seed(8), dtype=torch.float64)
    y_cpu = x_cpu.sum(1, keepdim=True).sin()

    def program(device):
        model = build(device)
        x, y = x_cpu.to(device), y_cpu.to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        losses = []
        for step in range(4):
            opt.zero_grad()
            h = Swish.apply(model[0](x), 1.5)
            loss = F.mse_loss(model[1](h), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        xx = x.clone().requires_grad_(True)
        ok = torch.autograd.gradcheck(lambda t: Swish.apply(t, 0.7), (xx[:2, :2].detach()
                                      .clone().requires_grad_(True),))
        return {"losses": losses, "params": params(model), "ok": float(ok)}

    run_both(program)


# ---------------------------------------------------------------------------- DataLoader
def test_dataloader_feeding_device_batches():
    build = make_model(mlp)
    x_all, y_all = blobs(n=40)
    ds = torch.utils.data.TensorDataset(x_all, y_all)

    def program(device):
        model = build(device)
        opt = torch.optim.Adam(model.parameters(), lr=0.01)
        loader = torch.utils.data.DataLoader(ds, batch_size=12, shuffle=True,
                                             generator=torch.Generator().manual_seed(9))
        losses = []
        for epoch in range(2):
            for xb, yb in loader:
                xb, yb = xb.to(device, non_blocking=True), yb.to(device)
                assert xb.device.type == device
                opt.zero_grad()
                loss = F.cross_entropy(model(xb), yb)
                loss.backward()
                opt.step()
                losses.append(loss.item())
        return {"losses": losses, "params": params(model)}

    cpu, _ = run_both(program)
    assert len(cpu["losses"]) == 8


# ---------------------------------------------------------------------------- save / load
def test_state_dict_save_load_roundtrip_on_cuda():
    build = make_model(SmallCNN)
    x = torch.randn(2, 1, 8, 8, generator=torch.Generator().manual_seed(10),
                    dtype=torch.float64)
    model = build("cuda")
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    F.cross_entropy(model(x.cuda()), torch.tensor([0, 2]).cuda()).backward()
    opt.step()
    buf = io.BytesIO()
    torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, buf)

    buf.seek(0)
    ck = torch.load(buf)
    assert ck["model"]["conv1.weight"].device.type == "cuda"
    buf.seek(0)
    ck_cpu = torch.load(buf, map_location="cpu")
    assert all(v.device.type == "cpu" for v in ck_cpu["model"].values())
    for loc in ({"cuda:0": "cpu"}, lambda storage, location: storage):
        buf.seek(0)
        w = torch.load(buf, map_location=loc)["model"]["fc.weight"]
        assert w.device.type == "cpu", loc
    buf2 = io.BytesIO()
    torch.save(ck_cpu["model"], buf2)
    buf2.seek(0)
    assert torch.load(buf2, map_location=torch.device("cuda"))["fc.bias"].is_cuda

    model_cpu = build("cpu")
    model_cpu.load_state_dict(ck_cpu["model"])
    model2 = build("cuda")
    model2.load_state_dict(ck["model"])
    opt2 = torch.optim.Adam(model2.parameters(), lr=0.01)
    opt2.load_state_dict(ck["opt"])
    assert_same(params(model2), params(model), **F64)
    for m in (model, model2, model_cpu):
        m.eval()
    with torch.no_grad():
        a, b, c = model(x.cuda()), model2(x.cuda()), model_cpu(x)
    assert_same(a, b, rtol=0, atol=0)
    assert_same(a, c, **F64)
    # one more identical step from the restored optimizer
    for m, o in ((model, opt), (model2, opt2)):
        m.train()
        o.zero_grad()
        F.cross_entropy(m(x.cuda()), torch.tensor([1, 2]).cuda()).backward()
        o.step()
    assert_same(params(model2), params(model), **F64)


# ---------------------------------------------------------------------------- GNN
def test_scatter_add_index_add_gnn_layer():
    edges = torch.tensor([[0, 1, 1, 2, 3, 4, 4, 5, 0, 2],
                          [1, 0, 2, 1, 4, 3, 5, 4, 2, 0]])
    x_cpu = torch.randn(6, 4, generator=torch.Generator().manual_seed(11), dtype=torch.float64)
    build = make_model(lambda: nn.ModuleList([nn.Linear(4, 5), nn.Linear(5, 2)]))

    def program(device):
        lins = build(device)
        x = x_cpu.to(device)
        src, dst = edges.to(device)
        deg = torch.zeros(6, dtype=torch.float64, device=device).index_add_(
            0, dst, torch.ones(10, dtype=torch.float64, device=device))
        h = x
        for lin in lins:
            m = lin(h)[src]
            agg = torch.zeros(6, m.shape[1], dtype=m.dtype, device=device)
            agg = agg.scatter_add(0, dst[:, None].expand_as(m), m)
            h = torch.relu(agg / deg[:, None] + lin(h))
        graph = torch.zeros(2, 2, dtype=h.dtype, device=device).index_add(
            0, torch.tensor([0, 0, 0, 1, 1, 1], device=device), h)
        loss = graph.pow(2).sum()
        loss.backward()
        return {"h": h, "graph": graph, "grads": grads(lins)}

    run_both(program)


# ---------------------------------------------------------------------------- NeRF-like
def test_nerf_volume_rendering_cumprod_cumsum():
    build = make_model(lambda: nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 4)))
    g = torch.Generator().manual_seed(12)
    origins = torch.randn(5, 3, generator=g, dtype=torch.float64)
    dirs = F.normalize(torch.randn(5, 3, generator=g, dtype=torch.float64), dim=-1)
    target = torch.rand(5, 3, generator=g, dtype=torch.float64)

    def program(device):
        model = build(device)
        opt = torch.optim.Adam(model.parameters(), lr=5e-3)
        o, d = origins.to(device), dirs.to(device)
        t_vals = torch.linspace(0.1, 2.0, 8, dtype=torch.float64, device=device)
        losses = []
        for step in range(3):
            pts = o[:, None, :] + d[:, None, :] * t_vals[None, :, None]
            raw = model(pts)
            rgb, sigma = torch.sigmoid(raw[..., :3]), F.softplus(raw[..., 3])
            delta = torch.cat([t_vals[1:] - t_vals[:-1],
                               torch.full((1,), 1e10, dtype=torch.float64, device=device)])
            alpha = 1 - torch.exp(-sigma * delta)
            trans = torch.cumprod(torch.cat([torch.ones_like(alpha[:, :1]),
                                             1 - alpha + 1e-10], -1), -1)[:, :-1]
            weights = alpha * trans
            color = (weights[..., None] * rgb).sum(1)
            depth = (weights * t_vals).sum(-1)
            # cumsum-based transmittance, the log-space form
            trans2 = torch.exp(-torch.cumsum(sigma * delta, -1) + sigma * delta)
            loss = F.mse_loss(color, target.to(device)) + 1e-3 * depth.mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return {"losses": losses, "params": params(model), "trans": trans.detach(),
                "trans2": trans2.detach()[:, :-1]}

    run_both(program)


# ---------------------------------------------------------------------------- sampling
def test_top_k_sampling_statistics():
    logits_cpu = torch.tensor([2.0, 1.0, 0.5, 0.0, -1.0, 3.0], dtype=torch.float64)

    def program(device):
        torch.manual_seed(13)
        logits = logits_cpu.to(device)
        v, idx = torch.topk(logits, 3)
        probs = torch.softmax(v, -1)
        draws = torch.multinomial(probs.expand(50, 3).contiguous(), 40, replacement=True)
        tokens = idx[draws]
        counts = torch.bincount(tokens.flatten(), minlength=6).double() / tokens.numel()
        return {"idx": idx, "probs": probs, "counts": counts}

    cpu = program("cpu")
    gpu = program("cuda")
    assert_same(cpu["idx"], gpu["idx"], rtol=0, atol=0)
    assert_same(cpu["probs"], gpu["probs"], **F64)
    expected = np.zeros(6)
    expected[to_np(cpu["idx"])] = to_np(cpu["probs"])
    for r in (cpu, gpu):
        np.testing.assert_allclose(to_np(r["counts"]), expected, atol=0.03)
    # the same seed gives the same draws on the same device
    again = program("cuda")
    assert_same(gpu["counts"], again["counts"], rtol=0, atol=0)


# ---------------------------------------------------------------------------- distillation
def test_knowledge_distillation_kldiv():
    teacher_b = make_model(lambda: nn.Sequential(nn.Linear(6, 24), nn.ReLU(),
                                                 nn.Linear(24, 3)), 3)
    student_b = make_model(lambda: nn.Sequential(nn.Linear(6, 4), nn.ReLU(),
                                                 nn.Linear(4, 3)), 4)
    x_cpu, y_cpu = blobs(n=20, seed=3)

    def program(device):
        teacher, student = teacher_b(device).eval(), student_b(device)
        x, y = x_cpu.to(device), y_cpu.to(device)
        opt = torch.optim.SGD(student.parameters(), lr=0.1)
        kl = nn.KLDivLoss(reduction="batchmean")
        T = 2.0
        losses = []
        for step in range(4):
            with torch.no_grad():
                soft = F.softmax(teacher(x) / T, dim=-1)
            s = student(x)
            loss = (kl(F.log_softmax(s / T, dim=-1), soft) * T * T * 0.7
                    + 0.3 * F.cross_entropy(s, y))
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return {"losses": losses, "params": params(student)}

    run_both(program)


# ---------------------------------------------------------------------------- focal loss
def test_focal_loss_with_gather():
    build = make_model(mlp)
    x_cpu, y_cpu = blobs(n=24, seed=5)

    def focal(logits, target, gamma=2.0, alpha=None):
        logp = F.log_softmax(logits, dim=1).gather(1, target[:, None]).squeeze(1)
        p = logp.exp()
        loss = -((1 - p) ** gamma) * logp
        if alpha is not None:
            loss = loss * alpha.gather(0, target)
        return loss.mean()

    def program(device):
        model = build(device)
        x, y = x_cpu.to(device), y_cpu.to(device)
        alpha = torch.tensor([0.25, 0.5, 0.25], dtype=torch.float64, device=device)
        opt = torch.optim.Adagrad(model.parameters(), lr=0.1)
        losses = []
        for step in range(4):
            opt.zero_grad()
            loss = focal(model(x), y, alpha=alpha)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return {"losses": losses, "params": params(model)}

    run_both(program)


# ---------------------------------------------------------------------------- inference
def test_eval_no_grad_inference_and_layernorm_regressor():
    def factory():
        return nn.Sequential(nn.Linear(6, 10), nn.LayerNorm(10), nn.SiLU(), nn.Dropout(0.0),
                             nn.Linear(10, 1))

    build = make_model(factory)
    x_cpu, _ = blobs(n=30, seed=6)
    y_cpu = (x_cpu[:, :2].sum(1) - x_cpu[:, 2]).unsqueeze(1)

    def program(device):
        model = build(device)
        x, y = x_cpu.to(device), y_cpu.to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, dampening=0.1)
        sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, factor=0.5)
        losses = []
        for step in range(6):
            opt.zero_grad()
            loss = F.smooth_l1_loss(model(x), y)
            loss.backward()
            opt.step()
            sched.step(loss.item())
            losses.append(loss.item())
        model.eval()
        with torch.no_grad():
            pred = model(x)
            assert not pred.requires_grad
        with torch.inference_mode():
            pred2 = model(x[:5])
        return {"losses": losses, "pred": pred, "pred2": pred2,
                "lr": opt.param_groups[0]["lr"]}

    run_both(program)


# ---------------------------------------------------------------------------- VAE
def test_vae_reparameterisation_float32():
    class VAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Linear(10, 8)
            self.mu = nn.Linear(8, 2)
            self.logvar = nn.Linear(8, 2)
            self.dec = nn.Sequential(nn.Linear(2, 8), nn.ELU(), nn.Linear(8, 10))

        def forward(self, x, eps):
            h = F.relu(self.enc(x))
            mu, logvar = self.mu(h), self.logvar(h)
            z = mu + eps * torch.exp(0.5 * logvar)
            return self.dec(z), mu, logvar

    build = make_model(VAE, dtype=torch.float32)
    g = torch.Generator().manual_seed(14)
    x_cpu = torch.rand(12, 10, generator=g)
    eps_cpu = torch.randn(5, 12, 2, generator=g)  # the noise is drawn on the CPU, then moved

    def program(device):
        model = build(device)
        x = x_cpu.to(device)
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        losses = []
        for step in range(5):
            recon, mu, logvar = model(x, eps_cpu[step].to(device))
            bce = F.binary_cross_entropy_with_logits(recon, x, reduction="sum")
            kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
            loss = (bce + kld) / x.shape[0]
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return {"losses": losses, "params": params(model)}

    run_both(program, tol=F32)


# ---------------------------------------------------------------------------- seq2seq
def test_transformer_seq2seq_teacher_forcing():
    def factory():
        return nn.ModuleDict({
            "emb": nn.Embedding(9, 8, padding_idx=0),
            "tf": nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1,
                                 num_decoder_layers=1, dim_feedforward=16, dropout=0.0,
                                 batch_first=True),
            "out": nn.Linear(8, 9),
        })

    build = make_model(factory)
    g = torch.Generator().manual_seed(15)
    src_cpu = torch.randint(1, 9, (2, 5), generator=g)
    src_cpu[1, 3:] = 0
    tgt_cpu = torch.randint(1, 9, (2, 5), generator=g)

    def program(device):
        m = build(device)
        src, tgt = src_cpu.to(device), tgt_cpu.to(device)
        opt = torch.optim.Adam(m.parameters(), lr=5e-3)
        tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
        mask = nn.Transformer.generate_square_subsequent_mask(4, device=device,
                                                              dtype=torch.float64)
        losses = []
        for step in range(3):
            h = m["tf"](m["emb"](src), m["emb"](tgt_in), tgt_mask=mask,
                        src_key_padding_mask=src == 0, memory_key_padding_mask=src == 0)
            loss = F.cross_entropy(m["out"](h).transpose(1, 2), tgt_out)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return {"losses": losses, "params": params(m)}

    run_both(program)


# ---------------------------------------------------------------------------- contrastive
def test_simclr_nt_xent_contrastive_loss():
    build = make_model(lambda: nn.Sequential(nn.Linear(6, 12), nn.BatchNorm1d(12), nn.ReLU(),
                                             nn.Linear(12, 4)))
    g = torch.Generator().manual_seed(16)
    base = torch.randn(6, 6, generator=g, dtype=torch.float64)
    v1 = base + 0.1 * torch.randn(6, 6, generator=g, dtype=torch.float64)
    v2 = base + 0.1 * torch.randn(6, 6, generator=g, dtype=torch.float64)

    def program(device):
        model = build(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        losses = []
        for step in range(3):
            z = F.normalize(model(torch.cat([v1, v2]).to(device)), dim=1)
            sim = z @ z.T / 0.5
            sim = sim.masked_fill(torch.eye(12, dtype=torch.bool, device=device), -1e9)
            targets = torch.arange(12, device=device).roll(6)
            loss = F.cross_entropy(sim, targets)
            cos = F.cosine_similarity(z[:6], z[6:], dim=1)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return {"losses": losses, "params": params(model), "cos": cos.detach(),
                "lse": torch.logsumexp(sim, 1).detach()}

    run_both(program)


# ---------------------------------------------------------------------------- accumulation
def test_gradient_accumulation_checkpoint_and_ema():
    build = make_model(lambda: nn.Sequential(nn.Linear(6, 8), nn.Softplus(), nn.Linear(8, 8),
                                             nn.Mish(), nn.Linear(8, 3)))
    x_all, y_all = blobs(n=24, seed=17)

    def program(device):
        model = build(device)
        ema = build(device)
        for p in ema.parameters():
            p.requires_grad_(False)
        opt = torch.optim.Adamax(model.parameters(), lr=0.02)
        losses = []
        for step in range(3):
            opt.zero_grad()
            for xb, yb in zip(x_all.chunk(3), y_all.chunk(3)):
                xb, yb = xb.to(device), yb.to(device)
                h = torch.utils.checkpoint.checkpoint(model[:2], xb, use_reentrant=False)
                loss = F.cross_entropy(model[2:](h), yb) / 3
                loss.backward()
                losses.append(loss.item())
            g = grads(model)
            opt.step()
            with torch.no_grad():
                for pe, pm in zip(ema.parameters(), model.parameters()):
                    pe.lerp_(pm, 0.1)
        return {"losses": losses, "grads": g, "params": params(model), "ema": params(ema)}

    run_both(program)


# ---------------------------------------------------------------------------- UNet-ish
def test_conv_encoder_decoder_float32():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.down = nn.Conv2d(2, 4, 3, stride=2, padding=1)
            self.gn = nn.GroupNorm(2, 4)
            self.mid = nn.Conv2d(4, 4, 3, padding=2, dilation=2)
            self.up = nn.ConvTranspose2d(4, 2, 4, stride=2, padding=1)
            self.head = nn.Conv1d(2, 2, 3, padding=1)

        def forward(self, x):
            h = F.silu(self.gn(self.down(x)))
            h = h + F.avg_pool2d(F.relu(self.mid(h)), 3, stride=1, padding=1)
            y = self.up(h) + x
            b, c, hh, ww = y.shape
            y = self.head(y.reshape(b, c, hh * ww)).reshape(b, c, hh, ww)
            return F.interpolate(y, scale_factor=0.5, mode="bilinear", align_corners=False)

    build = make_model(Net, dtype=torch.float32)
    g = torch.Generator().manual_seed(18)
    x_cpu = torch.randn(3, 2, 8, 8, generator=g)
    t_cpu = torch.randn(3, 2, 4, 4, generator=g)

    def program(device):
        model = build(device)
        x, t = x_cpu.to(device), t_cpu.to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=5e-3)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, total_steps=4)
        losses = []
        for step in range(4):
            loss = F.l1_loss(model(x), t) + 0.1 * F.huber_loss(model(x), t, delta=0.5)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            losses.append(loss.item())
        return {"losses": losses, "params": params(model)}

    run_both(program, tol=F32)


# ---------------------------------------------------------------------------- bi-LSTM tagger
def test_bidirectional_lstm_tagger_packed():
    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(12, 6, padding_idx=0)
            self.lstm = nn.LSTM(6, 5, batch_first=True, bidirectional=True)
            self.out = nn.Linear(10, 4)

        def forward(self, x, lengths):
            packed = nn.utils.rnn.pack_padded_sequence(self.emb(x), lengths, batch_first=True,
                                                       enforce_sorted=False)
            out, (h, c) = self.lstm(packed)
            out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True,
                                                      total_length=x.shape[1])
            return self.out(out), h

    build = make_model(Tagger)
    g = torch.Generator().manual_seed(19)
    lengths = torch.tensor([5, 3, 4])
    x_cpu = torch.randint(1, 12, (3, 5), generator=g)
    tags_cpu = torch.randint(0, 4, (3, 5), generator=g)
    for i, n in enumerate(lengths.tolist()):
        x_cpu[i, n:] = 0
        tags_cpu[i, n:] = -100

    def program(device):
        model = build(device)
        x, tags = x_cpu.to(device), tags_cpu.to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.3)
        losses = []
        for step in range(3):
            logits, h = model(x, lengths)
            loss = F.cross_entropy(logits.reshape(-1, 4), tags.reshape(-1), ignore_index=-100)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return {"losses": losses, "params": params(model), "h": h.detach()}

    run_both(program)


# ---------------------------------------------------------------------------- MAML
def test_maml_inner_loop_second_order():
    build = make_model(lambda: nn.Sequential(nn.Linear(1, 10), nn.Tanh(), nn.Linear(10, 1)))
    g = torch.Generator().manual_seed(20)
    xs = torch.rand(3, 2, 6, 1, generator=g, dtype=torch.float64) * 4 - 2
    amp_phase = torch.rand(3, 2, generator=g, dtype=torch.float64)

    def program(device):
        model = build(device)
        meta_opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        losses = []
        for task in range(3):
            a, ph = amp_phase[task].tolist()
            xtr, xte = xs[task].to(device)
            ytr, yte = (1 + a) * torch.sin(xtr + ph), (1 + a) * torch.sin(xte + ph)
            ws = list(model.parameters())

            def fwd(x, w):
                return F.linear(torch.tanh(F.linear(x, w[0], w[1])), w[2], w[3])

            inner = F.mse_loss(fwd(xtr, ws), ytr)
            gs = torch.autograd.grad(inner, ws, create_graph=True)
            fast = [w - 0.1 * gw for w, gw in zip(ws, gs)]
            outer = F.mse_loss(fwd(xte, fast), yte)
            meta_opt.zero_grad()
            outer.backward()
            g = grads(model)
            meta_opt.step()
            losses.append([inner.item(), outer.item()])
        return {"losses": losses, "grads": g, "params": params(model)}

    run_both(program)


# ---------------------------------------------------------------------------- per-sample grads
def test_per_sample_gradients_with_func_vmap():
    build = make_model(lambda: nn.Linear(4, 2))
    g = torch.Generator().manual_seed(21)
    x_cpu = torch.randn(5, 4, generator=g, dtype=torch.float64)
    y_cpu = torch.randint(0, 2, (5,), generator=g)

    def program(device):
        model = build(device)
        ps = {k: v.detach() for k, v in model.named_parameters()}

        def loss_fn(p, x, y):
            out = torch.func.functional_call(model, p, (x[None],))
            return F.cross_entropy(out, y[None])

        per = torch.func.vmap(torch.func.grad(loss_fn), in_dims=(None, 0, 0))(
            ps, x_cpu.to(device), y_cpu.to(device))
        model.zero_grad()
        F.cross_entropy(model(x_cpu.to(device)), y_cpu.to(device), reduction="sum").backward()
        return {"per": per, "sum": grads(model)}

    cpu, _ = run_both(program)
    for k in cpu["per"]:
        np.testing.assert_allclose(to_np(cpu["per"][k]).sum(0), to_np(cpu["sum"][k]),
                                   rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------------- REINFORCE
def test_reinforce_policy_gradient_with_distributions():
    build = make_model(lambda: nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3)))
    g = torch.Generator().manual_seed(22)
    states = torch.randn(4, 10, 4, generator=g, dtype=torch.float64)
    actions = torch.randint(0, 3, (4, 10), generator=g)  # the "sampled" actions, fixed
    rewards = torch.rand(4, 10, generator=g, dtype=torch.float64)

    def program(device):
        policy = build(device)
        opt = torch.optim.RMSprop(policy.parameters(), lr=1e-2)
        losses = []
        for ep in range(4):
            s, a, r = states[ep].to(device), actions[ep].to(device), rewards[ep].to(device)
            dist = torch.distributions.Categorical(logits=policy(s))
            disc = 0.9 ** torch.arange(10, dtype=torch.float64, device=device)
            ret = torch.flip(torch.cumsum(torch.flip(r * disc, [0]), 0), [0]) / disc
            ret = (ret - ret.mean()) / (ret.std() + 1e-8)
            loss = -(dist.log_prob(a) * ret).sum() - 0.01 * dist.entropy().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return {"losses": losses, "params": params(policy)}

    run_both(program)


# ---------------------------------------------------------------------------- spatial transformer
def test_spatial_transformer_affine_grid_sample():
    class STN(nn.Module):
        def __init__(self):
            super().__init__()
            self.loc = nn.Sequential(nn.Flatten(), nn.Linear(2 * 6 * 6, 6))
            self.up = nn.Sequential(nn.Conv2d(2, 8, 3, padding=1), nn.PixelShuffle(2),
                                    nn.Upsample(scale_factor=0.5, mode="nearest"))

        def forward(self, x):
            theta = self.loc(x).view(-1, 2, 3) + torch.tensor(
                [[1.0, 0, 0], [0, 1.0, 0]], dtype=x.dtype, device=x.device)
            grid = F.affine_grid(theta, list(x.shape), align_corners=False)
            return self.up(F.grid_sample(x, grid, mode="bilinear", padding_mode="border",
                                         align_corners=False))

    build = make_model(STN)
    g = torch.Generator().manual_seed(23)
    x_cpu = torch.randn(2, 2, 6, 6, generator=g, dtype=torch.float64)

    def program(device):
        model = build(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        losses = []
        x = x_cpu.to(device)
        for step in range(3):
            loss = (model(x) - x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return {"losses": losses, "params": params(model)}

    run_both(program)


# ---------------------------------------------------------------------------- LBFGS
def test_lbfgs_logistic_regression():
    x_cpu, y_cpu = blobs(n=30, d=4, classes=2, seed=24)
    build = make_model(lambda: nn.Linear(4, 1))

    def program(device):
        model = build(device)
        x, y = x_cpu.to(device), y_cpu.to(device).double()[:, None]
        opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=5,
                                line_search_fn="strong_wolfe")
        losses = []

        def closure():
            opt.zero_grad()
            loss = F.binary_cross_entropy(torch.sigmoid(model(x)), y) + 1e-2 * sum(
                p.pow(2).sum() for p in model.parameters())
            loss.backward()
            return loss

        for step in range(3):
            losses.append(opt.step(closure).item())
        return {"losses": losses, "params": params(model)}

    run_both(program)


# ---------------------------------------------------------------------------- half model
def test_half_precision_model_on_cuda_matches_float_cpu():
    build = make_model(mlp, dtype=torch.float32)
    x_cpu, y_cpu = blobs(n=16, dtype=torch.float32, seed=25)
    model_c = build("cpu")
    model_g = build("cuda").half()
    with torch.no_grad():
        out_c = model_c(x_cpu)
        out_g = model_g(x_cpu.cuda().half())
    assert out_g.dtype == torch.float16
    assert_same(out_c, out_g, rtol=2e-2, atol=2e-2)
    assert (out_c.argmax(1) == out_g.argmax(1).cpu()).float().mean().item() >= 0.9
    loss = F.cross_entropy(model_g(x_cpu.cuda().half()).float(), y_cpu.cuda())
    loss.backward()
    F.cross_entropy(model_c(x_cpu), y_cpu).backward()
    assert_same(grads(model_c), grads(model_g), rtol=5e-2, atol=5e-2)


# ---------------------------------------------------------------------------- CTC
def test_ctc_speech_model():
    build = make_model(lambda: nn.ModuleDict({"conv": nn.Conv1d(3, 6, 3, padding=1),
                                              "gru": nn.GRU(6, 6, batch_first=True),
                                              "out": nn.Linear(6, 5)}))
    g = torch.Generator().manual_seed(26)
    feats = torch.randn(2, 3, 10, generator=g, dtype=torch.float64)
    targets = torch.tensor([[1, 2, 2], [3, 4, 0]])
    in_lens, tgt_lens = torch.tensor([10, 8]), torch.tensor([3, 2])

    def program(device):
        m = build(device)
        opt = torch.optim.Adam(m.parameters(), lr=1e-2)
        losses = []
        for step in range(3):
            h = F.relu(m["conv"](feats.to(device))).transpose(1, 2)
            h, _ = m["gru"](h)
            logp = F.log_softmax(m["out"](h), -1).transpose(0, 1)
            loss = F.ctc_loss(logp, targets.to(device), in_lens.to(device), tgt_lens.to(device),
                              blank=0, zero_infinity=True)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return {"losses": losses, "params": params(m)}

    run_both(program)


# ---------------------------------------------------------------------------- SDPA GPT block
def test_sdpa_causal_gpt_block_with_sinusoidal_positions():
    class Block(nn.Module):
        def __init__(self, d=8, h=2):
            super().__init__()
            self.h = h
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"),
                                     nn.Linear(4 * d, d))

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q, k, v = (z.view(b, t, self.h, d // self.h).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, d))
            return x + self.mlp(self.ln2(x))

    build = make_model(Block)
    g = torch.Generator().manual_seed(27)
    x_cpu = torch.randn(2, 6, 8, generator=g, dtype=torch.float64)

    def program(device):
        blk = build(device)
        pos = torch.arange(6, dtype=torch.float64, device=device)[:, None]
        div = torch.exp(torch.arange(0, 8, 2, dtype=torch.float64, device=device)
                        * (-np.log(10000.0) / 8))
        pe = torch.zeros(6, 8, dtype=torch.float64, device=device)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        x = leaf(x_cpu, device)
        out = blk(x + pe)
        out.pow(2).mean().backward()
        return {"out": out, "xgrad": x.grad, "grads": grads(blk), "pe": pe}

    run_both(program)


# ---------------------------------------------------------------------------- beam search
def test_greedy_and_beam_search_decoding():
    build = make_model(lambda: nn.ModuleDict({"emb": nn.Embedding(7, 6),
                                              "cell": nn.GRUCell(6, 6),
                                              "out": nn.Linear(6, 7)}))

    def program(device):
        m = build(device).eval()
        beams = torch.zeros(1, 0, dtype=torch.long, device=device)
        scores = torch.zeros(1, dtype=torch.float64, device=device)
        h = torch.zeros(1, 6, dtype=torch.float64, device=device)
        tok = torch.tensor([1], device=device)
        with torch.no_grad():
            for step in range(4):
                h = m["cell"](m["emb"](tok), h)
                logp = F.log_softmax(m["out"](h), -1)
                cand = (scores[:, None] + logp).flatten()
                scores, flat = cand.topk(3)
                src = torch.div(flat, 7, rounding_mode="floor")
                tok = flat % 7
                beams = torch.cat([beams[src], tok[:, None]], 1)
                h = h.index_select(0, src)
        best = beams[scores.argmax()]
        onehot = F.one_hot(beams, 7).sum((0, 1))
        return {"beams": beams, "scores": scores, "best": best, "onehot": onehot}

    run_both(program)


# ---------------------------------------------------------------------------- parametrizations
def test_weight_norm_spectral_norm_and_clip_grad_value():
    def factory():
        net = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
        nn.utils.parametrizations.weight_norm(net[0])
        return net

    build = make_model(factory)
    x_cpu, y_cpu = blobs(n=20, seed=28)

    def program(device):
        model = build(device)
        opt = torch.optim.NAdam(model.parameters(), lr=1e-2)
        losses = []
        x, y = x_cpu.to(device), y_cpu.to(device)
        for step in range(4):
            loss = F.multi_margin_loss(model(x), y) + F.nll_loss(
                F.log_softmax(model(x), 1), y, weight=torch.tensor(
                    [1.0, 2.0, 0.5], dtype=torch.float64, device=device))
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_value_(model.parameters(), 0.05)
            opt.step()
            losses.append(loss.item())
        return {"losses": losses, "params": params(model), "w": model[0].weight.detach()}

    run_both(program)


# ---------------------------------------------------------------------------- GradScaler overflow
def test_grad_scaler_skips_overflowing_steps_float16():
    build = make_model(SmallCNN, dtype=torch.float32)
    g = torch.Generator().manual_seed(29)
    x_cpu = torch.randn(4, 1, 8, 8, generator=g)
    y_cpu = torch.tensor([0, 1, 2, 1])
    model = build("cuda")
    before = params(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cuda", init_scale=2.0 ** 40, growth_interval=1)
    scales, stepped = [], []
    for step in range(4):
        opt.zero_grad()
        with torch.autocast("cuda", dtype=torch.float16):
            loss = F.cross_entropy(model(x_cpu.cuda()), y_cpu.cuda())
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
        stepped.append(any(not torch.equal(v, before[k]) for k, v in params(model).items()
                           if "running" not in k and "num_batches" not in k))
    # 2**40 * loss overflows float16 gradients: the first steps are skipped, halving the scale
    assert scales[0] == 2.0 ** 39
    assert not stepped[0]
    assert all(torch.isfinite(p).all().item() for p in model.parameters())


# ---------------------------------------------------------------------------- GAT-like layer
def test_graph_attention_scatter_reduce_softmax():
    edges = torch.tensor([[0, 1, 2, 3, 4, 0, 2, 4, 1, 3, 0],
                          [1, 2, 3, 4, 0, 2, 4, 1, 3, 0, 0]])
    x_cpu = torch.randn(5, 3, generator=torch.Generator().manual_seed(30), dtype=torch.float64)
    build = make_model(lambda: nn.ModuleDict({"lin": nn.Linear(3, 4, bias=False),
                                              "att": nn.Linear(8, 1, bias=False)}))

    def program(device):
        m = build(device)
        src, dst = edges.to(device)
        x = leaf(x_cpu, device)
        h = m["lin"](x)
        e = F.leaky_relu(m["att"](torch.cat([h[src], h[dst]], -1)).squeeze(-1), 0.2)
        emax = torch.full((5,), -1e30, dtype=e.dtype, device=device).scatter_reduce(
            0, dst, e, reduce="amax", include_self=True)
        a = torch.exp(e - emax[dst])
        denom = torch.zeros(5, dtype=e.dtype, device=device).index_add(0, dst, a)
        alpha = a / denom[dst]
        out = torch.zeros_like(h).index_put((dst,), alpha[:, None] * h[src], accumulate=True)
        out = torch.where(out > 0, out, 0.1 * out)
        out.sum().backward()
        return {"alpha": alpha, "out": out, "xgrad": x.grad, "grads": grads(m)}

    run_both(program)


# ---------------------------------------------------------------------------- in-place on views
def test_inplace_view_updates_in_forward_and_pinned_loader():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(6, 6)

        def forward(self, x):
            z = self.fc(x)
            h = z.clone()
            h[:, :3] += 1.0
            h[:, 3:].mul_(torch.sigmoid(z[:, :3] + 1.0))  # (of h[:, :3]: xfail below)
            h.clamp_(min=-2.0, max=2.0)
            return h.sum(1, keepdim=True)

    build = make_model(Net)
    x_all, _ = blobs(n=16, seed=31)
    y_all = x_all.sin().sum(1, keepdim=True)
    ds = torch.utils.data.TensorDataset(x_all, y_all)

    def program(device):
        model = build(device)
        opt = torch.optim.Adadelta(model.parameters(), lr=1.0)
        loader = torch.utils.data.DataLoader(ds, batch_size=8, pin_memory=(device == "cuda"))
        losses = []
        for epoch in range(2):
            for xb, yb in loader:
                loss = F.mse_loss(model(xb.to(device)), yb.to(device))
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.item())
        return {"losses": losses, "params": params(model)}

    run_both(program)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_inplace_after_sigmoid_gating(device):
    # PyTorch saves only the result of sigmoid/exp/tanh/..., so changing their input in place
    # afterwards does not break backward.
    x = leaf(torch.randn(4, 6, dtype=torch.float64), device)
    h = (x * 2).clone()
    s = torch.sigmoid(h[:, :3])
    h.mul_(0.5)  # bumps the version of h[:, :3], saved by SigmoidBackward0
    s.sum().backward()
    np.testing.assert_allclose(to_np(x.grad[:, :3]), to_np(2 * s * (1 - s)), rtol=1e-12)


@pytest.mark.parametrize("op", ["mul_scalar", "add_tensor"])
@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_overwrite_slice_with_computed_copy(device, op):
    x = leaf(torch.randn(4, 6, dtype=torch.float64), device)
    h = (x * 2).clone()
    if op == "mul_scalar":
        h[:, 0] = h[:, 0] * 2  # YOLO-style box decoding
    else:
        h[:, 0] = h[:, 0] + h[:, 1]
    h.sum().backward()
    assert x.grad[0, 0].item() == (4.0 if op == "mul_scalar" else 2.0)
