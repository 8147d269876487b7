# ruff: noqa: B007  (loop variables named as in the tutorials)
"""A fourth set of end-to-end programs in the style of the PyTorch tutorials (see
test_e2e_programs.py, test_e2e_programs2.py and test_e2e_programs3.py for the others): LSTM
forecasting over a sliding window, a char-level RNN classifier, REINFORCE, fine-tuning with frozen
layers and parameter groups, skip-gram with negative sampling, a Siamese network, a small U-Net,
a TransformerDecoder language model, knowledge distillation, CPU autocast with GradScaler, weight
tying, gradient checkpointing, resuming from a checkpoint in memory, a padded sequence tagger,
torch.func, container modules, hooks, Gaussian NLL regression and SimCLR's NT-Xent loss.

Each program is written once as a function of the module ``M`` (``ferrotorch`` or ``torch``), so
the very same code runs under both; the tests run it under ferrotorch and check real outcomes,
and where it is cheap a second test runs it under PyTorch (when importable) and compares with the
weights copied across through NumPy."""

import collections
import copy
import io
import math
import pickle
import random

import numpy as np
import pytest

import ferrotorch


def _torch():
    return pytest.importorskip("torch")


def _copy_weights(src_model, dst_model, M):
    """Copy a state dict from one library's model into the other's through NumPy."""
    sd = {k: M.from_numpy(np.array(v.detach().cpu().numpy(), copy=True))
          for k, v in src_model.state_dict().items()}
    dst_model.load_state_dict(sd)


def _np(t):
    return t.detach().cpu().numpy()


def _close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(_np(a), _np(b), rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------- (a)
def lstm_forecaster(M):
    nn = M.nn

    class WindowDataset(M.utils.data.Dataset):
        """Sliding windows over a 1-D series: ``window`` inputs, the next value as target."""

        def __init__(self, series, window):
            self.series = series
            self.window = window

        def __len__(self):
            return len(self.series) - self.window

        def __getitem__(self, idx):
            x = self.series[idx:idx + self.window].unsqueeze(-1)
            y = self.series[idx + self.window]
            return x, y

    class Forecaster(nn.Module):
        def __init__(self, hidden_size=16, num_layers=1):
            super().__init__()
            self.lstm = nn.LSTM(input_size=1, hidden_size=hidden_size, num_layers=num_layers,
                                batch_first=True)
            self.fc = nn.Linear(hidden_size, 1)

        def forward(self, x):
            out, (h_n, c_n) = self.lstm(x)
            return self.fc(out[:, -1, :]).squeeze(-1)

    return WindowDataset, Forecaster


def test_lstm_time_series_forecasting():
    torch = ferrotorch
    torch.manual_seed(0)
    WindowDataset, Forecaster = lstm_forecaster(torch)
    t = torch.linspace(0, 8 * math.pi, 160)
    series = torch.sin(t) + 0.5 * torch.sin(0.5 * t)
    train = WindowDataset(series[:128], window=12)
    loader = torch.utils.data.DataLoader(train, batch_size=16, shuffle=True,
                                         generator=torch.Generator().manual_seed(1))
    model = Forecaster()
    criterion = torch.nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-2)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=15, gamma=0.3)
    history = []
    for epoch in range(30):
        model.train()
        epoch_loss = 0.0
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
            epoch_loss += loss.item() * xb.size(0)
        scheduler.step()
        history.append(epoch_loss / len(train))
    assert history[-1] < 0.01 < history[0]
    assert optimizer.param_groups[0]["lr"] == pytest.approx(2e-2 * 0.3 ** 2)
    # autoregressive roll-out on the held-out tail
    model.eval()
    window = series[128 - 12:128].clone()
    preds = []
    with torch.no_grad():
        for _ in range(8):
            nxt = model(window.view(1, -1, 1))
            preds.append(nxt.item())
            window = torch.cat([window[1:], nxt])
    err = (torch.tensor(preds) - series[128:136]).abs().max().item()
    assert err < 0.25


def test_lstm_forecaster_matches_torch():
    torch = _torch()
    torch.manual_seed(0)
    _, ref_cls = lstm_forecaster(torch)
    _, our_cls = lstm_forecaster(ferrotorch)
    ref, ours = ref_cls(num_layers=2), our_cls(num_layers=2)
    _copy_weights(ref, ours, ferrotorch)
    x = torch.randn(4, 9, 1)
    xf = ferrotorch.from_numpy(x.numpy()).requires_grad_()
    x.requires_grad_()
    out_ref, out = ref(x), ours(xf)
    _close(out, out_ref)
    (out_ref ** 2).sum().backward()
    (out ** 2).sum().backward()
    _close(xf.grad, x.grad, atol=1e-5)
    for (n, p), (nr, pr) in zip(ours.named_parameters(), ref.named_parameters()):
        assert n == nr
        _close(p.grad, pr.grad, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------- (b)
ALL_LETTERS = "abcdefghijklmnopqrstuvwxyz"
N_LETTERS = len(ALL_LETTERS)


def _names(seed):
    """Three made-up 'languages', each with its own alphabet."""
    rng = random.Random(seed)
    alphabets = {"Vowelish": "aeiouy", "Klingon": "kqxzgh", "Liquid": "lmnrw"}
    data = []
    for lang, letters in alphabets.items():
        for _ in range(8):
            n = rng.randint(3, 7)
            name = "".join(rng.choice(letters) for _ in range(n))
            data.append((name, lang))
    return list(alphabets), data


def char_rnn(M):
    nn = M.nn
    F = M.nn.functional

    def line_to_tensor(line):
        idx = M.tensor([ALL_LETTERS.find(c) for c in line])
        return F.one_hot(idx, num_classes=N_LETTERS).float().unsqueeze(1)  # (seq, 1, letters)

    class CharRNN(nn.Module):
        def __init__(self, input_size, hidden_size, output_size):
            super().__init__()
            self.rnn = nn.RNN(input_size, hidden_size, nonlinearity="tanh")
            self.h2o = nn.Linear(hidden_size, output_size)

        def forward(self, line_tensor):
            rnn_out, hidden = self.rnn(line_tensor)
            return F.log_softmax(self.h2o(hidden[0]), dim=1)

    return line_to_tensor, CharRNN


def test_char_rnn_name_classifier():
    torch = ferrotorch
    torch.manual_seed(0)
    random.seed(0)
    categories, data = _names(0)
    line_to_tensor, CharRNN = char_rnn(torch)
    rnn = CharRNN(N_LETTERS, 24, len(categories))
    criterion = torch.nn.NLLLoss()
    optimizer = torch.optim.SGD(rnn.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(6):
        random.shuffle(data)
        for name, lang in data:
            line_tensor = line_to_tensor(name)
            category_tensor = torch.tensor([categories.index(lang)], dtype=torch.long)
            rnn.zero_grad()
            output = rnn(line_tensor)
            loss = criterion(output, category_tensor)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(rnn.parameters(), 3)
            optimizer.step()

    def evaluate(name):
        with torch.no_grad():
            output = rnn(line_to_tensor(name))
        top_n, top_i = output.topk(1)
        return categories[top_i[0].item()]

    correct = sum(evaluate(name) == lang for name, lang in data)
    assert correct == len(data)
    _, test = _names(1)
    assert sum(evaluate(name) == lang for name, lang in test) >= len(test) - 1
    assert evaluate("kzxq") == "Klingon" and evaluate("lmnw") == "Liquid"


def test_char_rnn_matches_torch():
    torch = _torch()
    torch.manual_seed(0)
    ref_l2t, ref_cls = char_rnn(torch)
    our_l2t, our_cls = char_rnn(ferrotorch)
    ref, ours = ref_cls(N_LETTERS, 10, 3), our_cls(N_LETTERS, 10, 3)
    _copy_weights(ref, ours, ferrotorch)
    loss_ref = torch.nn.NLLLoss()(ref(ref_l2t("hello")), torch.tensor([2]))
    loss = ferrotorch.nn.NLLLoss()(ours(our_l2t("hello")), ferrotorch.tensor([2]))
    assert loss.item() == pytest.approx(loss_ref.item(), rel=1e-5)
    loss_ref.backward()
    loss.backward()
    for p, pr in zip(ours.parameters(), ref.parameters()):
        _close(p.grad, pr.grad, atol=1e-6)


# ---------------------------------------------------------------------------- (c)
class Corridor:
    """A 1-D corridor of ``n`` cells; start in cell 0, reward 1 for reaching the last cell,
    -0.05 per step otherwise, at most 12 steps."""

    def __init__(self, n=5):
        self.n = n

    def reset(self):
        self.pos = 0
        self.t = 0
        return self.pos

    def step(self, action):  # 0 = left, 1 = right
        self.pos = max(0, min(self.n - 1, self.pos + (1 if action == 1 else -1)))
        self.t += 1
        done = self.pos == self.n - 1 or self.t >= 12
        reward = 1.0 if self.pos == self.n - 1 else -0.05
        return self.pos, reward, done


def test_reinforce_policy_gradient():
    torch = ferrotorch
    nn = torch.nn
    F = torch.nn.functional
    from ferrotorch.distributions import Categorical

    torch.manual_seed(0)
    env = Corridor()

    class Policy(nn.Module):
        def __init__(self):
            super().__init__()
            self.affine1 = nn.Linear(env.n, 32)
            self.affine2 = nn.Linear(32, 2)

        def forward(self, x):
            return F.softmax(self.affine2(F.relu(self.affine1(x))), dim=-1)

    policy = Policy()
    optimizer = torch.optim.Adam(policy.parameters(), lr=2e-2)
    eps = np.finfo(np.float32).eps.item()
    gamma = 0.95
    lengths = []
    for episode in range(60):
        state = env.reset()
        log_probs, entropies, rewards = [], [], []
        done = False
        while not done:
            probs = policy(F.one_hot(torch.tensor(state), env.n).float())
            m = Categorical(probs)
            action = m.sample()
            log_probs.append(m.log_prob(action))
            entropies.append(m.entropy())
            state, reward, done = env.step(action.item())
            rewards.append(reward)
        lengths.append(len(rewards))
        R = 0.0
        returns = collections.deque()
        for r in rewards[::-1]:
            R = r + gamma * R
            returns.appendleft(R)
        returns = torch.tensor(list(returns))
        if len(returns) > 1:
            returns = (returns - returns.mean()) / (returns.std() + eps)
        policy_loss = -(torch.stack(log_probs) * returns).sum()
        loss = policy_loss - 0.01 * torch.stack(entropies).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert np.mean(lengths[:10]) > 6
    assert np.mean(lengths[-10:]) < 5
    with torch.no_grad():
        p_right = policy(torch.eye(env.n))[:, 1]
    assert (p_right[:-1] > 0.8).all()


# ---------------------------------------------------------------------------- (d)
def pretrained_net(M):
    nn = M.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 16),
                                          nn.ReLU())
            self.fc = nn.Linear(16, 3)

        def forward(self, x):
            return self.fc(self.features(x))

    return Net


def finetune(M, model, x, y, steps):
    """Replace the head, freeze the first layer, and train with two learning rates."""
    nn = M.nn
    model.fc = nn.Linear(model.fc.in_features, 2)
    for param in model.features[0].parameters():
        param.requires_grad_(False)
    backbone = [p for n, p in model.named_parameters() if p.requires_grad and
                not n.startswith("fc.")]
    optimizer = M.optim.SGD([
        {"params": backbone, "lr": 1e-2},
        {"params": model.fc.parameters()},
    ], lr=1e-1, momentum=0.9, weight_decay=1e-4)
    criterion = nn.CrossEntropyLoss()
    losses = []
    for step in range(steps):
        optimizer.zero_grad(set_to_none=True)
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return optimizer, losses


def _finetune_data(M):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 4)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] * x[:, 2] > 0).astype(np.int64)
    return M.from_numpy(x), M.from_numpy(y)


def test_finetune_frozen_layers_param_groups():
    torch = ferrotorch
    torch.manual_seed(0)
    model = pretrained_net(torch)()
    frozen_before = model.features[0].weight.clone()
    trainable_before = model.features[2].weight.clone()
    x, y = _finetune_data(torch)
    optimizer, losses = finetune(torch, model, x, y, 150)
    assert [g["lr"] for g in optimizer.param_groups] == [1e-2, 1e-1]
    assert len(optimizer.param_groups[0]["params"]) == 2
    assert model.features[0].weight.grad is None
    assert torch.equal(model.features[0].weight, frozen_before)
    assert not torch.equal(model.features[2].weight, trainable_before)
    n_trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert n_trainable == 16 * 16 + 16 + 16 * 2 + 2
    assert losses[-1] < 0.3 * losses[0]
    with torch.no_grad():
        acc = (model(x).argmax(1) == y).float().mean().item()
    assert acc > 0.9


def test_finetune_matches_torch():
    torch = _torch()
    torch.manual_seed(0)
    ref = pretrained_net(torch)()
    ours = pretrained_net(ferrotorch)()
    _copy_weights(ref, ours, ferrotorch)
    x, y = _finetune_data(torch)
    xf, yf = _finetune_data(ferrotorch)
    # replace the head and freeze in both, then give both the same new head
    finetune(torch, ref, x, y, 0)
    finetune(ferrotorch, ours, xf, yf, 0)
    _copy_weights(ref, ours, ferrotorch)
    assert [p.requires_grad for p in ours.parameters()] == [
        p.requires_grad for p in ref.parameters()]
    ref_opt, ref_losses = _finetune_fixed_head(torch, ref, x, y)
    our_opt, our_losses = _finetune_fixed_head(ferrotorch, ours, xf, yf)
    np.testing.assert_allclose(our_losses, ref_losses, rtol=1e-4, atol=1e-6)
    for (n, p), (nr, pr) in zip(ours.named_parameters(), ref.named_parameters()):
        assert n == nr
        _close(p, pr, rtol=1e-4, atol=1e-5)


def _finetune_fixed_head(M, model, x, y):
    backbone = [p for n, p in model.named_parameters() if p.requires_grad and
                not n.startswith("fc.")]
    optimizer = M.optim.SGD([{"params": backbone, "lr": 1e-2},
                             {"params": model.fc.parameters()}],
                            lr=1e-1, momentum=0.9, weight_decay=1e-4, nesterov=True)
    losses = []
    for _ in range(10):
        optimizer.zero_grad()
        loss = M.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return optimizer, losses


# ---------------------------------------------------------------------------- (e)
def skipgram(M, vocab_size, embed_dim):
    nn = M.nn
    F = M.nn.functional

    class SkipGramNeg(nn.Module):
        def __init__(self):
            super().__init__()
            self.in_embed = nn.Embedding(vocab_size, embed_dim)
            self.out_embed = nn.Embedding(vocab_size, embed_dim)
            self.in_embed.weight.data.uniform_(-0.5 / embed_dim, 0.5 / embed_dim)
            self.out_embed.weight.data.uniform_(-0.5 / embed_dim, 0.5 / embed_dim)

        def forward(self, center, context, negatives):
            v = self.in_embed(center)                          # (B, D)
            u = self.out_embed(context)                        # (B, D)
            n = self.out_embed(negatives)                      # (B, K, D)
            pos = F.logsigmoid(M.sum(v * u, dim=1))
            neg = F.logsigmoid(-M.bmm(n, v.unsqueeze(2)).squeeze(2)).sum(1)
            return -(pos + neg).mean()

    return SkipGramNeg()


def _skipgram_corpus(seed):
    """Two topics that never share a sentence: words 0-5 and words 6-11."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(200):
        topic = rng.randrange(2)
        sent = [rng.randrange(6) + 6 * topic for _ in range(6)]
        for i, w in enumerate(sent):
            for j in range(max(0, i - 2), min(len(sent), i + 3)):
                if j != i:
                    pairs.append((w, sent[j]))
    return pairs


def test_skipgram_negative_sampling():
    torch = ferrotorch
    torch.manual_seed(0)
    pairs = _skipgram_corpus(0)
    vocab = 12
    counts = torch.bincount(torch.tensor([c for _, c in pairs]), minlength=vocab).float()
    noise_dist = counts ** 0.75
    noise_dist = noise_dist / noise_dist.sum()
    model = torch.nn.Embedding  # noqa: F841  (the name a tutorial would shadow)
    model = skipgram(torch, vocab, 8)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    data = torch.tensor(pairs)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(data[:, 0], data[:, 1]),
                                         batch_size=256, shuffle=True)
    first = last = None
    for epoch in range(5):
        for center, context in loader:
            negatives = torch.multinomial(noise_dist, center.numel() * 5, replacement=True)
            loss = model(center, context, negatives.view(-1, 5))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            first = loss.item() if first is None else first
            last = loss.item()
    assert last < first - 0.5
    emb = torch.nn.functional.normalize(model.in_embed.weight.detach(), dim=1)
    sim = emb @ emb.T
    same = torch.cat([sim[:6, :6].flatten(), sim[6:, 6:].flatten()])
    across = sim[:6, 6:].flatten()
    assert same.mean().item() > across.mean().item() + 0.3
    # nearest neighbour (excluding itself) is in the same topic for every word
    sim.fill_diagonal_(-2)
    nn_idx = sim.argmax(dim=1)
    assert ((nn_idx < 6) == (torch.arange(vocab) < 6)).all()


def test_skipgram_matches_torch():
    torch = _torch()
    torch.manual_seed(0)
    ref = skipgram(torch, 12, 6)
    ours = skipgram(ferrotorch, 12, 6)
    _copy_weights(ref, ours, ferrotorch)
    c, o, n = torch.tensor([1, 3, 3, 7]), torch.tensor([2, 2, 0, 9]), torch.randint(12, (4, 3))
    loss_ref = ref(c, o, n)
    loss = ours(*[ferrotorch.from_numpy(t.numpy()) for t in (c, o, n)])
    assert loss.item() == pytest.approx(loss_ref.item(), rel=1e-5)
    loss_ref.backward()
    loss.backward()
    _close(ours.in_embed.weight.grad, ref.in_embed.weight.grad)
    _close(ours.out_embed.weight.grad, ref.out_embed.weight.grad)


# ---------------------------------------------------------------------------- (f)
def siamese(M):
    nn = M.nn
    F = M.nn.functional

    class EmbeddingNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(6, 32), nn.PReLU(), nn.Linear(32, 4))

        def forward(self, x):
            return F.normalize(self.net(x), p=2, dim=1)

    return EmbeddingNet


def _clusters(M, n_per, seed):
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((4, 6)) * 2
    x = np.concatenate([c + 0.6 * rng.standard_normal((n_per, 6)) for c in centers])
    y = np.repeat(np.arange(4), n_per)
    return M.from_numpy(x.astype(np.float32)), M.from_numpy(y)


def _triplets(M, y, gen):
    n = len(y)
    anchor = M.randint(0, n, (n,), generator=gen)
    pos, neg = [], []
    for a in anchor.tolist():
        same = (y == y[a]).nonzero(as_tuple=True)[0]
        diff = (y != y[a]).nonzero(as_tuple=True)[0]
        pos.append(same[M.randint(0, len(same), (1,), generator=gen)])
        neg.append(diff[M.randint(0, len(diff), (1,), generator=gen)])
    return anchor, M.cat(pos), M.cat(neg)


def test_siamese_triplet_and_cosine_embedding():
    torch = ferrotorch
    torch.manual_seed(0)
    x, y = _clusters(torch, 20, 0)
    model = siamese(torch)()
    triplet = torch.nn.TripletMarginLoss(margin=0.5, p=2)
    cosine = torch.nn.CosineEmbeddingLoss(margin=0.2)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    gen = torch.Generator().manual_seed(0)
    losses = []
    for epoch in range(25):
        a, p, n = _triplets(torch, y, gen)
        ea, ep, en = model(x[a]), model(x[p]), model(x[n])
        target = torch.cat([torch.ones(len(a)), -torch.ones(len(a))])
        loss = triplet(ea, ep, en) + cosine(torch.cat([ea, ea]), torch.cat([ep, en]), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.25 * losses[0]
    # nearest-centroid classification of fresh points in embedding space
    with torch.no_grad():
        emb = model(x)
        centroids = torch.stack([emb[y == k].mean(0) for k in range(4)])
        xt, yt = _clusters(torch, 10, 0)
        pred = torch.cdist(model(xt), centroids).argmin(dim=1)
    assert (pred == yt).float().mean().item() > 0.95


def test_metric_losses_match_torch():
    torch = _torch()
    torch.manual_seed(0)
    a, p, n = torch.randn(5, 4), torch.randn(5, 4), torch.randn(5, 4)
    target = torch.tensor([1.0, -1.0, 1.0, -1.0, -1.0])

    def losses(M, a, p, n, target):
        nn, F = M.nn, M.nn.functional
        return [
            nn.TripletMarginLoss(margin=1.0, p=2)(a, p, n),
            nn.TripletMarginLoss(margin=0.3, p=1, swap=True, reduction="sum")(a, p, n),
            nn.TripletMarginWithDistanceLoss(
                distance_function=lambda u, v: 1.0 - F.cosine_similarity(u, v),
                margin=0.5)(a, p, n),
            nn.CosineEmbeddingLoss(margin=0.1)(a, p, target),
            nn.MarginRankingLoss(margin=0.2)(a[:, 0], p[:, 0], target),
            nn.HingeEmbeddingLoss(margin=1.5)(F.pairwise_distance(a, n), target),
        ]

    ref_in = [t.clone().requires_grad_() for t in (a, p, n)]
    our_in = [ferrotorch.from_numpy(t.numpy()).requires_grad_() for t in (a, p, n)]
    ref_l = losses(torch, *ref_in, target)
    our_l = losses(ferrotorch, *our_in, ferrotorch.from_numpy(target.numpy()))
    for lo, lr in zip(our_l, ref_l):
        assert lo.item() == pytest.approx(lr.item(), rel=1e-5, abs=1e-6)
    sum(ref_l).backward()
    sum(our_l).backward()
    for t, r in zip(our_in, ref_in):
        _close(t.grad, r.grad, atol=1e-5)


# ---------------------------------------------------------------------------- (g)
def unet(M):
    nn = M.nn

    def double_conv(cin, cout):
        return nn.Sequential(
            nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
            nn.ReLU(inplace=True),
            nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
            nn.ReLU(inplace=True),
        )

    class UNet(nn.Module):
        def __init__(self, c=8):
            super().__init__()
            self.inc = double_conv(1, c)
            self.down = nn.Sequential(nn.MaxPool2d(2), double_conv(c, 2 * c))
            self.up = nn.ConvTranspose2d(2 * c, c, kernel_size=2, stride=2)
            self.dec = double_conv(2 * c, c)
            self.outc = nn.Conv2d(c, 1, kernel_size=1)

        def forward(self, x):
            x1 = self.inc(x)
            x2 = self.down(x1)
            x = self.dec(M.cat([x1, self.up(x2)], dim=1))
            return self.outc(x)

    return UNet


def dice_loss(M, logits, target, smooth=1.0):
    probs = M.sigmoid(logits)
    num = 2 * (probs * target).sum(dim=(1, 2, 3)) + smooth
    den = probs.sum(dim=(1, 2, 3)) + target.sum(dim=(1, 2, 3)) + smooth
    return 1 - (num / den).mean()


def _rectangles(M, n, seed):
    """Noisy 12x12 images with a brighter rectangle; the mask marks the rectangle."""
    g = M.Generator().manual_seed(seed)
    imgs = 0.3 * M.randn(n, 1, 12, 12, generator=g)
    masks = M.zeros(n, 1, 12, 12)
    for i in range(n):
        r, c, h, w = M.randint(0, 6, (4,), generator=g).tolist()
        masks[i, :, r:r + h + 3, c:c + w + 3] = 1
    return imgs + masks, masks


def test_unet_segmentation_dice_bce():
    torch = ferrotorch
    torch.manual_seed(0)
    model = unet(torch)()
    x, mask = _rectangles(torch, 16, 0)
    bce = torch.nn.BCEWithLogitsLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(40):
        model.train()
        logits = model(x)
        loss = bce(logits, mask) + dice_loss(torch, logits, mask)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    xt, mt = _rectangles(torch, 8, 1)
    with torch.no_grad():
        pred = (torch.sigmoid(model(xt)) > 0.5).float()
    inter = (pred * mt).sum()
    iou = (inter / (pred.sum() + mt.sum() - inter)).item()
    assert iou > 0.8
    assert model.inc[1].num_batches_tracked.item() == 40


def test_unet_matches_torch():
    torch = _torch()
    torch.manual_seed(0)
    ref, ours = unet(torch)(c=4), unet(ferrotorch)(c=4)
    _copy_weights(ref, ours, ferrotorch)
    x, mask = _rectangles(torch, 3, 0)
    xf, mf = ferrotorch.from_numpy(x.numpy()), ferrotorch.from_numpy(mask.numpy())
    loss_ref = torch.nn.functional.binary_cross_entropy_with_logits(ref(x), mask) + \
        dice_loss(torch, ref(x), mask)
    loss = ferrotorch.nn.functional.binary_cross_entropy_with_logits(ours(xf), mf) + \
        dice_loss(ferrotorch, ours(xf), mf)
    assert loss.item() == pytest.approx(loss_ref.item(), rel=1e-5)
    loss_ref.backward()
    loss.backward()
    for (n, p), (nr, pr) in zip(ours.named_parameters(), ref.named_parameters()):
        _close(p.grad, pr.grad, rtol=1e-3, atol=1e-5)
    for (n, b), (nr, br) in zip(ours.named_buffers(), ref.named_buffers()):
        assert n == nr
        _close(b, br, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------- (h)
def decoder_lm(M, vocab, d_model=32, nhead=4, max_len=16):
    nn = M.nn

    class DecoderLM(nn.Module):
        """A decoder-only language model conditioned on a 'style' token through memory."""

        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(vocab, d_model)
            self.pos = nn.Parameter(M.zeros(1, max_len, d_model))
            self.style = nn.Embedding(2, d_model)
            layer = nn.TransformerDecoderLayer(d_model, nhead, dim_feedforward=64, dropout=0.0,
                                               batch_first=True, norm_first=True,
                                               activation="gelu")
            self.decoder = nn.TransformerDecoder(layer, num_layers=2, norm=nn.LayerNorm(d_model))
            self.lm_head = nn.Linear(d_model, vocab)

        def forward(self, idx, style):
            T = idx.size(1)
            h = self.tok(idx) * math.sqrt(d_model) + self.pos[:, :T]
            memory = self.style(style).unsqueeze(1)
            mask = nn.Transformer.generate_square_subsequent_mask(T)
            h = self.decoder(h, memory, tgt_mask=mask, tgt_is_causal=True)
            return self.lm_head(h)

    return DecoderLM()


def _counting(M, n, vocab, length, gen):
    """Style 0 counts up, style 1 counts down (mod vocab) from a random start."""
    start = M.randint(0, vocab, (n, 1), generator=gen)
    style = M.randint(0, 2, (n,), generator=gen)
    step = (1 - 2 * style).unsqueeze(1)
    seq = (start + step * M.arange(length)) % vocab
    return seq, style


def test_transformer_decoder_lm_label_smoothing_warmup():
    torch = ferrotorch
    torch.manual_seed(0)
    vocab, length = 10, 8
    model = decoder_lm(torch, vocab)
    criterion = torch.nn.CrossEntropyLoss(label_smoothing=0.1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, betas=(0.9, 0.98),
                                  weight_decay=0.01)
    warmup = 10
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / warmup))
    gen = torch.Generator().manual_seed(0)
    lrs = []
    for step in range(80):
        seq, style = _counting(torch, 32, vocab, length, gen)
        logits = model(seq[:, :-1], style)
        loss = criterion(logits.reshape(-1, vocab), seq[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        lrs.append(scheduler.get_last_lr()[0])
    assert lrs[0] == pytest.approx(3e-3 * 2 / warmup) and lrs[-1] == pytest.approx(3e-3)
    # label smoothing keeps the loss above the smoothing floor
    assert 0.35 < loss.item() < 0.8
    # greedy generation continues both styles
    model.eval()
    idx = torch.tensor([[3], [3]])
    style = torch.tensor([0, 1])
    with torch.no_grad():
        for _ in range(length - 1):
            nxt = model(idx, style)[:, -1].argmax(-1, keepdim=True)
            idx = torch.cat([idx, nxt], dim=1)
    assert idx[0].tolist() == [3, 4, 5, 6, 7, 8, 9, 0]
    assert idx[1].tolist() == [3, 2, 1, 0, 9, 8, 7, 6]


def test_transformer_decoder_lm_matches_torch():
    torch = _torch()
    torch.manual_seed(0)
    ref, ours = decoder_lm(torch, 7, d_model=16), decoder_lm(ferrotorch, 7, d_model=16)
    _copy_weights(ref, ours, ferrotorch)
    ref.eval()
    ours.eval()
    idx, style = torch.tensor([[1, 2, 3, 4, 0], [6, 5, 4, 3, 2]]), torch.tensor([0, 1])
    ls = torch.nn.CrossEntropyLoss(label_smoothing=0.2)
    out_ref = ref(idx, style)
    loss_ref = ls(out_ref[:, :-1].reshape(-1, 7), idx[:, 1:].reshape(-1))
    out = ours(ferrotorch.from_numpy(idx.numpy()), ferrotorch.from_numpy(style.numpy()))
    loss = ferrotorch.nn.CrossEntropyLoss(label_smoothing=0.2)(
        out[:, :-1].reshape(-1, 7), ferrotorch.from_numpy(idx[:, 1:].reshape(-1).numpy()))
    _close(out, out_ref, rtol=1e-4, atol=1e-5)
    assert loss.item() == pytest.approx(loss_ref.item(), rel=1e-5)
    loss_ref.backward()
    loss.backward()
    for (n, p), (nr, pr) in zip(ours.named_parameters(), ref.named_parameters()):
        assert n == nr
        _close(p.grad, pr.grad, rtol=1e-3, atol=1e-5)


# ---------------------------------------------------------------------------- (i)
def distillation_loss(M, student_logits, teacher_logits, labels, T=4.0, alpha=0.7):
    F = M.nn.functional
    soft = M.nn.KLDivLoss(reduction="batchmean")(
        F.log_softmax(student_logits / T, dim=-1), F.softmax(teacher_logits / T, dim=-1))
    return alpha * soft * T * T + (1 - alpha) * F.cross_entropy(student_logits, labels)


def test_knowledge_distillation():
    torch = ferrotorch
    nn = torch.nn
    torch.manual_seed(0)
    x, y = _clusters(torch, 25, 3)
    teacher = nn.Sequential(nn.Linear(6, 64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 4))
    opt_t = torch.optim.Adam(teacher.parameters(), lr=1e-2)
    for step in range(60):
        opt_t.zero_grad()
        nn.functional.cross_entropy(teacher(x), y).backward()
        opt_t.step()
    student = nn.Sequential(nn.Linear(6, 4))
    optimizer = torch.optim.SGD(student.parameters(), lr=0.1)
    teacher.eval()
    kd = []
    for step in range(80):
        with torch.no_grad():
            teacher_logits = teacher(x)
        assert not teacher_logits.requires_grad
        student_logits = student(x)
        loss = distillation_loss(torch, student_logits, teacher_logits, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        kd.append(loss.item())
    assert kd[-1] < 0.5 * kd[0]
    with torch.no_grad():
        acc = (student(x).argmax(1) == y).float().mean().item()
        agree = (student(x).argmax(1) == teacher(x).argmax(1)).float().mean().item()
    assert acc > 0.9 and agree > 0.9


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides")
def test_distillation_losses_match_torch():
    torch = _torch()
    torch.manual_seed(0)
    s, t, y = torch.randn(6, 5), torch.randn(6, 5), torch.randint(5, (6,))
    sf = ferrotorch.from_numpy(s.numpy()).requires_grad_()
    s.requires_grad_()
    tf, yf = ferrotorch.from_numpy(t.numpy()), ferrotorch.from_numpy(y.numpy())
    for T in (1.0, 3.0):
        ref = distillation_loss(torch, s, t, y, T=T)
        got = distillation_loss(ferrotorch, sf, tf, yf, T=T)
        assert got.item() == pytest.approx(ref.item(), rel=1e-5)
    ref.backward()
    got.backward()
    _close(sf.grad, s.grad)
    F, Ff = torch.nn.functional, ferrotorch.nn.functional
    for red in ("batchmean", "sum", "mean", "none"):
        ref = F.kl_div(F.log_softmax(s, 1), F.log_softmax(t, 1), reduction=red, log_target=True)
        got = Ff.kl_div(Ff.log_softmax(sf, 1), Ff.log_softmax(tf, 1), reduction=red,
                        log_target=True)
        _close(got, ref)


# ---------------------------------------------------------------------------- (j)
def test_cpu_autocast_bfloat16_with_grad_scaler():
    torch = ferrotorch
    nn = torch.nn
    torch.manual_seed(0)
    x, y = _clusters(torch, 20, 4)
    model = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.LayerNorm(32), nn.Linear(32, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 8)
    criterion = nn.CrossEntropyLoss()
    for step in range(40):
        optimizer.zero_grad()
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            logits = model(x)
            assert logits.dtype == torch.bfloat16
            assert torch.is_autocast_enabled("cpu")
            loss = criterion(logits, y)
        assert loss.dtype == torch.float32
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        scaler.step(optimizer)
        scaler.update()
    assert not torch.is_autocast_enabled("cpu")
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert all(p.grad.dtype == torch.float32 for p in model.parameters())
    assert scaler.get_scale() == 2.0 ** 8
    with torch.no_grad():
        acc = (model(x).argmax(1) == y).float().mean().item()
    assert acc > 0.95
    # the scaler state round-trips like the optimizer's
    state = scaler.state_dict()
    fresh = torch.amp.GradScaler("cpu")
    fresh.load_state_dict(state)
    assert fresh.get_scale() == scaler.get_scale()


def test_cpu_autocast_dtypes_match_torch():
    torch = _torch()

    def dtypes(M):
        nn = M.nn
        lin, x = nn.Linear(4, 3), M.randn(2, 4)
        with M.autocast("cpu", dtype=M.bfloat16):
            out = lin(x)
            mm = x @ x.T
            s = M.softmax(out, dim=-1)
            loss = nn.functional.cross_entropy(out, M.tensor([0, 1]))
            mse = nn.functional.mse_loss(out, M.zeros(2, 3))
            added = out + x[:, :3]
            with M.autocast("cpu", enabled=False):
                inner = lin(x)
        return [str(t.dtype).split(".")[-1] for t in (out, mm, s, loss, mse, added, inner)]

    assert dtypes(ferrotorch) == dtypes(torch)


# ---------------------------------------------------------------------------- (k)
def tied_lm(M, vocab, dim):
    nn = M.nn

    class TiedLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Embedding(vocab, dim)
            self.rnn = nn.GRU(dim, dim, batch_first=True)
            self.decoder = nn.Linear(dim, vocab)
            self.decoder.weight = self.encoder.weight   # weight tying

        def forward(self, idx):
            out, _ = self.rnn(self.encoder(idx))
            return self.decoder(out)

    return TiedLM()


def test_weight_tying():
    torch = ferrotorch
    torch.manual_seed(0)
    vocab, dim = 8, 16
    model = tied_lm(torch, vocab, dim)
    assert model.decoder.weight is model.encoder.weight
    names = [n for n, _ in model.named_parameters()]
    assert "decoder.weight" not in names and "encoder.weight" in names
    assert len(list(model.parameters())) == 1 + 4 + 1
    assert "decoder.weight" in model.state_dict()
    data = torch.tensor([[i % vocab for i in range(s, s + 9)] for s in range(vocab)])
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(60):
        logits = model(data[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.transpose(1, 2), data[:, 1:])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.1
    assert model.decoder.weight is model.encoder.weight
    # a state dict round trip keeps the tie (both keys load into the one tensor)
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    buf.seek(0)
    clone = tied_lm(torch, vocab, dim)
    clone.load_state_dict(torch.load(buf))
    assert clone.decoder.weight is clone.encoder.weight
    assert torch.equal(clone.decoder.weight, model.encoder.weight)
    # deepcopy keeps it too
    dup = copy.deepcopy(model)
    assert dup.decoder.weight is dup.encoder.weight
    with torch.no_grad():
        assert torch.equal(dup(data), model(data))


def test_weight_tying_gradients_match_torch():
    torch = _torch()
    torch.manual_seed(0)
    ref, ours = tied_lm(torch, 6, 4), tied_lm(ferrotorch, 6, 4)
    _copy_weights(ref, ours, ferrotorch)
    idx = torch.tensor([[0, 1, 2, 3], [5, 4, 3, 2]])
    ref(idx).square().sum().backward()
    ours(ferrotorch.from_numpy(idx.numpy())).square().sum().backward()
    _close(ours.encoder.weight.grad, ref.encoder.weight.grad, rtol=1e-4, atol=1e-5)
    assert list(ours.state_dict()) == list(ref.state_dict())


# ---------------------------------------------------------------------------- (l)
def checkpointed_net(M, use_checkpoint):
    nn = M.nn
    from_checkpoint = M.utils.checkpoint

    class Block(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.ff = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, 2 * dim), nn.GELU(),
                                    nn.Dropout(0.2), nn.Linear(2 * dim, dim))

        def forward(self, x):
            return x + self.ff(x)

    class Net(nn.Module):
        def __init__(self, dim=8, depth=4):
            super().__init__()
            self.blocks = nn.ModuleList(Block(dim) for _ in range(depth))
            self.tail = nn.Sequential(nn.Linear(dim, dim), nn.Tanh(), nn.Linear(dim, dim))
            self.head = nn.Linear(dim, 1)

        def forward(self, x):
            for block in self.blocks:
                if use_checkpoint and self.training:
                    x = from_checkpoint.checkpoint(block, x, use_reentrant=False)
                else:
                    x = block(x)
            if use_checkpoint:
                x = from_checkpoint.checkpoint_sequential(self.tail, 2, x, use_reentrant=False)
            else:
                x = self.tail(x)
            return self.head(x)

    return Net


def test_gradient_checkpointing_matches_plain_backward():
    torch = ferrotorch
    torch.manual_seed(0)
    plain = checkpointed_net(torch, False)()
    ckpt = checkpointed_net(torch, True)()
    ckpt.load_state_dict(plain.state_dict())
    x = torch.randn(6, 8, requires_grad=True)
    x2 = x.detach().clone().requires_grad_()
    # dropout is active: the recomputation must replay the same RNG stream
    torch.manual_seed(123)
    plain(x).pow(2).mean().backward()
    torch.manual_seed(123)
    ckpt(x2).pow(2).mean().backward()
    assert torch.allclose(x.grad, x2.grad, atol=1e-6)
    for (n, p), (_, q) in zip(plain.named_parameters(), ckpt.named_parameters()):
        assert torch.allclose(p.grad, q.grad, atol=1e-6), n
    # and it trains
    opt = torch.optim.Adam(ckpt.parameters(), lr=1e-2)
    xs = torch.randn(64, 8)
    ys = xs[:, :1] * xs[:, 1:2]
    for step in range(80):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(ckpt(xs), ys)
        loss.backward()
        opt.step()
    assert loss.item() < 0.2


# ---------------------------------------------------------------------------- (m)
def _resumable_setup(M):
    nn = M.nn
    model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Dropout(0.1), nn.Linear(16, 1))
    optimizer = M.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.05, amsgrad=True)
    scheduler = M.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=20, eta_min=1e-4)
    return model, optimizer, scheduler


def _train_epochs(M, model, optimizer, scheduler, loader, epochs):
    for epoch in epochs:
        model.train()
        for xb, yb in loader:
            optimizer.zero_grad()
            M.nn.functional.mse_loss(model(xb).squeeze(1), yb).backward()
            optimizer.step()
        scheduler.step()


def test_checkpoint_resume_in_memory_is_exact():
    torch = ferrotorch
    torch.manual_seed(0)
    x = torch.randn(48, 5)
    y = x.sum(1)
    dataset = torch.utils.data.TensorDataset(x, y)

    def loader():
        return torch.utils.data.DataLoader(dataset, batch_size=16, shuffle=True)

    # one uninterrupted run of 10 epochs
    torch.manual_seed(1)
    model, optimizer, scheduler = _resumable_setup(torch)
    init = copy.deepcopy(model.state_dict())
    _train_epochs(torch, model, optimizer, scheduler, loader(), range(10))
    # the same run interrupted after 4 epochs and resumed from a checkpoint in memory
    torch.manual_seed(1)
    m1, o1, s1 = _resumable_setup(torch)
    m1.load_state_dict(init)
    _train_epochs(torch, m1, o1, s1, loader(), range(4))
    buffer = io.BytesIO()
    torch.save({"epoch": 4, "model_state_dict": m1.state_dict(),
                "optimizer_state_dict": o1.state_dict(), "scheduler": s1.state_dict(),
                "rng": torch.get_rng_state()}, buffer)
    del m1, o1, s1
    torch.manual_seed(999)  # anything may happen in between
    buffer.seek(0)
    checkpoint = torch.load(buffer, weights_only=True)
    m2, o2, s2 = _resumable_setup(torch)
    m2.load_state_dict(checkpoint["model_state_dict"])
    o2.load_state_dict(checkpoint["optimizer_state_dict"])
    s2.load_state_dict(checkpoint["scheduler"])
    torch.set_rng_state(checkpoint["rng"])
    assert s2.last_epoch == 4 and o2.state_dict()["state"][0]["step"].item() == 4 * 3
    _train_epochs(torch, m2, o2, s2, loader(), range(checkpoint["epoch"], 10))
    for k, v in model.state_dict().items():
        assert torch.equal(v, m2.state_dict()[k]), k
    assert o2.param_groups[0]["lr"] == optimizer.param_groups[0]["lr"]
    for s_full, s_res in zip(optimizer.state.values(), o2.state.values()):
        assert torch.equal(s_full["max_exp_avg_sq"], s_res["max_exp_avg_sq"])


def test_checkpoint_loads_across_libraries():
    # a checkpoint written by PyTorch resumes in ferrotorch and vice versa
    torch = _torch()
    torch.manual_seed(0)
    model, opt, sched = _resumable_setup(torch)
    x, y = torch.randn(16, 5), torch.randn(16)
    for _ in range(3):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model.eval()(x).squeeze(1), y).backward()
        opt.step()
        sched.step()
    ours, o2, s2 = _resumable_setup(ferrotorch)
    _copy_weights(model, ours, ferrotorch)
    osd = opt.state_dict()
    o2.load_state_dict({
        "state": {k: {n: ferrotorch.from_numpy(v.numpy().copy()) for n, v in st.items()}
                  for k, st in osd["state"].items()},
        "param_groups": osd["param_groups"]})
    s2.load_state_dict(sched.state_dict())
    xf, yf = ferrotorch.from_numpy(x.numpy()), ferrotorch.from_numpy(y.numpy())
    for _ in range(3):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x).squeeze(1), y).backward()
        opt.step()
        sched.step()
        o2.zero_grad()
        ferrotorch.nn.functional.mse_loss(ours.eval()(xf).squeeze(1), yf).backward()
        o2.step()
        s2.step()
    assert o2.param_groups[0]["lr"] == pytest.approx(opt.param_groups[0]["lr"])
    for p, q in zip(ours.parameters(), model.parameters()):
        _close(p, q, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------- (n)
def tagger(M, vocab, tags, pad_idx=0):
    nn = M.nn
    rnn_utils = M.nn.utils.rnn

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(vocab, 12, padding_idx=pad_idx)
            self.lstm = nn.LSTM(12, 16, batch_first=True, bidirectional=True)
            self.out = nn.Linear(32, tags)

        def forward(self, padded, lengths):
            packed = rnn_utils.pack_padded_sequence(self.embedding(padded), lengths,
                                                    batch_first=True, enforce_sorted=False)
            packed_out, _ = self.lstm(packed)
            out, out_lens = rnn_utils.pad_packed_sequence(packed_out, batch_first=True,
                                                          total_length=padded.size(1))
            return self.out(out)

    def collate_fn(batch):
        tokens, labels = zip(*batch)
        lengths = M.tensor([len(t) for t in tokens])
        tokens = rnn_utils.pad_sequence(tokens, batch_first=True, padding_value=pad_idx)
        labels = rnn_utils.pad_sequence(labels, batch_first=True, padding_value=-100)
        return tokens, labels, lengths

    return Tagger(), collate_fn


def _tag_data(M, n, seed):
    """Tag each token 1 if it is larger than the token before it (the first token: 0)."""
    rng = random.Random(seed)
    data = []
    for _ in range(n):
        seq = [rng.randint(1, 9) for _ in range(rng.randint(2, 9))]
        tags = [0] + [int(b > a) for a, b in zip(seq, seq[1:])]
        data.append((M.tensor(seq), M.tensor(tags)))
    return data


def test_padded_sequence_tagger_with_collate_fn():
    torch = ferrotorch
    torch.manual_seed(0)
    model, collate_fn = tagger(torch, 10, 2)
    loader = torch.utils.data.DataLoader(_tag_data(torch, 96, 0), batch_size=16, shuffle=True,
                                         collate_fn=collate_fn)
    criterion = torch.nn.CrossEntropyLoss(ignore_index=-100)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(15):
        for tokens, labels, lengths in loader:
            logits = model(tokens, lengths)
            loss = criterion(logits.view(-1, logits.size(-1)), labels.view(-1))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    assert model.embedding.weight.grad[0].abs().sum().item() == 0  # padding_idx gets none
    tokens, labels, lengths = collate_fn(_tag_data(torch, 40, 1))
    with torch.no_grad():
        pred = model(tokens, lengths).argmax(-1)
    mask = labels != -100
    acc = (pred[mask] == labels[mask]).float().mean().item()
    assert acc > 0.95
    assert mask.sum().item() == lengths.sum().item()


def test_padded_sequence_tagger_matches_torch():
    torch = _torch()
    torch.manual_seed(0)
    ref, ref_collate = tagger(torch, 10, 3)
    ours, our_collate = tagger(ferrotorch, 10, 3)
    _copy_weights(ref, ours, ferrotorch)
    tokens, labels, lengths = ref_collate(_tag_data(torch, 5, 2))
    t2, l2, n2 = our_collate(_tag_data(ferrotorch, 5, 2))
    assert np.array_equal(t2.numpy(), tokens.numpy()) and np.array_equal(l2.numpy(),
                                                                         labels.numpy())
    out_ref, out = ref(tokens, lengths), ours(t2, n2)
    _close(out, out_ref, atol=1e-5)
    loss_ref = torch.nn.functional.cross_entropy(out_ref.transpose(1, 2), labels)
    loss = ferrotorch.nn.functional.cross_entropy(out.transpose(1, 2), l2)
    assert loss.item() == pytest.approx(loss_ref.item(), rel=1e-5)
    loss_ref.backward()
    loss.backward()
    for (n, p), (nr, pr) in zip(ours.named_parameters(), ref.named_parameters()):
        _close(p.grad, pr.grad, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------- (o)
def func_program(M, model, x, t):
    """The per-sample-gradients and jacobians/hessians tutorials."""
    from_func = M.func
    F = M.nn.functional
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def compute_loss(params, buffers, sample, target):
        batch, targets = sample.unsqueeze(0), target.unsqueeze(0)
        predictions = from_func.functional_call(model, (params, buffers), (batch,))
        return F.cross_entropy(predictions, targets)

    ft_compute_grad = from_func.grad(compute_loss)
    per_sample = from_func.vmap(ft_compute_grad, in_dims=(None, None, 0, 0))(params, buffers,
                                                                             x, t)

    def f(inp):
        return from_func.functional_call(model, params, (inp,))

    jac = from_func.jacrev(f)(x[0])
    jac_fwd = from_func.jacfwd(f)(x[0])
    batched_jac = from_func.vmap(from_func.jacrev(f))(x)

    def energy(inp):
        return f(inp).logsumexp(-1)

    hess = from_func.hessian(energy)(x[0])
    value, grad_x = from_func.grad_and_value(energy)(x[0])[::-1]
    return per_sample, jac, jac_fwd, batched_jac, hess, grad_x, value


def _func_model(M):
    nn = M.nn
    return nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2))


def test_torch_func_per_sample_grads_jacobians_hessian():
    torch = ferrotorch
    torch.manual_seed(0)
    model = _func_model(torch)
    x, t = torch.randn(4, 3), torch.tensor([0, 1, 1, 0])
    per_sample, jac, jac_fwd, batched_jac, hess, grad_x, value = func_program(torch, model, x, t)
    for i in range(4):  # the same as one backward per sample
        model.zero_grad()
        torch.nn.functional.cross_entropy(model(x[i:i + 1]), t[i:i + 1]).backward()
        for name, p in model.named_parameters():
            assert torch.allclose(per_sample[name][i], p.grad, atol=1e-6), name
    assert jac.shape == (2, 3) and batched_jac.shape == (4, 2, 3)
    assert torch.allclose(jac, jac_fwd, atol=1e-6)
    assert torch.allclose(batched_jac[0], jac, atol=1e-6)
    full_jac = torch.autograd.functional.jacobian(model, x[0])
    assert torch.allclose(jac, full_jac, atol=1e-6)
    assert hess.shape == (3, 3) and torch.allclose(hess, hess.T, atol=1e-6)
    ref_h = torch.autograd.functional.hessian(lambda v: model(v).logsumexp(-1), x[0])
    assert torch.allclose(hess, ref_h, atol=1e-5)
    assert value.item() == pytest.approx(model(x[0]).logsumexp(-1).item(), rel=1e-6)
    assert grad_x.shape == (3,)


def test_torch_func_matches_torch():
    torch = _torch()
    torch.manual_seed(0)
    ref, ours = _func_model(torch), _func_model(ferrotorch)
    _copy_weights(ref, ours, ferrotorch)
    x, t = torch.randn(4, 3), torch.tensor([1, 1, 0, 1])
    ref_out = func_program(torch, ref, x, t)
    out = func_program(ferrotorch, ours, ferrotorch.from_numpy(x.numpy()),
                       ferrotorch.from_numpy(t.numpy()))
    for k in ref_out[0]:
        _close(out[0][k], ref_out[0][k])
    for a, b in zip(out[1:], ref_out[1:]):
        _close(a, b, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------- (p)
def container_model(M):
    nn = M.nn

    class MultiTask(nn.Module):
        def __init__(self):
            super().__init__()
            self.trunk = nn.Sequential(collections.OrderedDict([
                ("fc1", nn.Linear(4, 16)),
                ("act1", nn.SiLU()),
                ("fc2", nn.Linear(16, 16)),
                ("act2", nn.SiLU()),
            ]))
            self.heads = nn.ModuleDict({"cls": nn.Linear(16, 3), "reg": nn.Linear(16, 1)})
            self.task_scales = nn.ParameterList([nn.Parameter(M.ones(1)) for _ in range(2)])
            self.biases = nn.ParameterDict({"cls": nn.Parameter(M.zeros(3)),
                                            "reg": nn.Parameter(M.zeros(1))})
            self.register_buffer("steps", M.zeros((), dtype=M.long))
            self.register_buffer("scratch", M.zeros(2), persistent=False)

        def forward(self, x):
            if self.training:
                self.steps += 1
            h = self.trunk(x)
            return {name: head(h) * self.task_scales[i] + self.biases[name]
                    for i, (name, head) in enumerate(self.heads.items())}

    return MultiTask()


def test_container_modules_multitask():
    torch = ferrotorch
    torch.manual_seed(0)
    model = container_model(torch)
    assert isinstance(model.trunk.fc1, torch.nn.Linear) and model.trunk[0] is model.trunk.fc1
    assert list(model.heads.keys()) == ["cls", "reg"] and "reg" in model.heads
    names = [n for n, _ in model.named_parameters()]
    assert names[:4] == ["trunk.fc1.weight", "trunk.fc1.bias", "trunk.fc2.weight",
                         "trunk.fc2.bias"]
    assert "task_scales.1" in names and "biases.reg" in names
    assert "steps" in model.state_dict() and "scratch" not in model.state_dict()
    x = torch.randn(64, 4)
    y_cls = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
    y_reg = x.sum(1, keepdim=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(100):
        out = model(x)
        loss = torch.nn.functional.cross_entropy(out["cls"], y_cls) + \
            torch.nn.functional.mse_loss(out["reg"], y_reg)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert model.steps.item() == 100
    assert loss.item() < 0.3
    # modules can be added and removed like in a dict / list
    model.heads["aux"] = torch.nn.Linear(16, 2)
    model.heads.update({"aux2": torch.nn.Identity()})
    del model.heads["aux2"]
    model.task_scales.append(torch.nn.Parameter(torch.ones(1)))
    assert len(model.heads) == 3 and len(model.task_scales) == 3
    assert model.trunk[:2](x).shape == (64, 16)
    model.trunk.insert(4, torch.nn.Dropout(0.0))
    assert len(model.trunk) == 5 and isinstance(model.trunk[-1], torch.nn.Dropout)
    children = dict(model.named_children())
    assert list(children) == ["trunk", "heads", "task_scales", "biases"]


def test_container_model_matches_torch():
    torch = _torch()
    torch.manual_seed(0)
    ref, ours = container_model(torch), container_model(ferrotorch)
    assert str(ours) == str(ref).replace("torch.", "ferrotorch.")
    assert list(ours.state_dict()) == list(ref.state_dict())
    _copy_weights(ref, ours, ferrotorch)
    x = torch.randn(3, 4)
    out_ref = ref(x)
    out = ours(ferrotorch.from_numpy(x.numpy()))
    for k in out_ref:
        _close(out[k], out_ref[k])
    assert ours.steps.item() == ref.steps.item() == 1


# ---------------------------------------------------------------------------- (q)
def hooked_cnn(M):
    nn = M.nn
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(4, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Linear(8, 3),
    )


def grad_cam(M, model, x, target_class, layer_idx=3):
    """Feature extraction with forward / full backward hooks, then a Grad-CAM map."""
    activations, gradients, seen_inputs = {}, {}, []

    def forward_hook(module, inputs, output):
        activations["value"] = output.detach()

    def backward_hook(module, grad_input, grad_output):
        gradients["value"] = grad_output[0].detach()

    def pre_hook(module, args):
        seen_inputs.append(args[0].shape)

    layer = model[layer_idx]
    handles = [layer.register_forward_hook(forward_hook),
               layer.register_full_backward_hook(backward_hook),
               model[0].register_forward_pre_hook(pre_hook)]
    logits = model(x)
    model.zero_grad()
    logits[:, target_class].sum().backward()
    for h in handles:
        h.remove()
    weights = gradients["value"].mean(dim=(2, 3), keepdim=True)
    cam = M.relu((weights * activations["value"]).sum(dim=1))
    return activations["value"], gradients["value"], cam, seen_inputs


def test_hooks_feature_extraction_grad_cam():
    torch = ferrotorch
    torch.manual_seed(0)
    model = hooked_cnn(torch)
    x = torch.randn(2, 1, 8, 8, requires_grad=True)
    act, grad, cam, seen = grad_cam(torch, model, x, 1)
    assert act.shape == (2, 8, 4, 4) and grad.shape == (2, 8, 4, 4) and cam.shape == (2, 4, 4)
    assert seen == [(2, 1, 8, 8)]
    assert (cam >= 0).all()
    # removed hooks no longer fire
    _, _, _, seen2 = grad_cam(torch, model, x, 0)
    assert seen2 == [(2, 1, 8, 8)]
    model(x)
    assert len(model[0]._forward_pre_hooks) == 0 and len(model[3]._forward_hooks) == 0
    # a forward hook that returns a value replaces the output; a pre-hook can rewrite the input
    h1 = model[7].register_forward_hook(lambda m, i, o: o * 0)
    assert torch.equal(model(x), torch.zeros(2, 3))
    h1.remove()
    h2 = model[0].register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    with torch.no_grad():
        zero_in = model(x)
        assert torch.allclose(zero_in, model[1:](model[0](torch.zeros_like(x)))[:0].sum() +
                              zero_in)
    h2.remove()
    # a full backward hook can rescale the gradient flowing to earlier layers
    h3 = model[3].register_full_backward_hook(lambda m, gi, go: (gi[0] * 2,))
    x.grad = None
    model(x).sum().backward()
    doubled = x.grad.clone()
    h3.remove()
    x.grad = None
    model(x).sum().backward()
    assert torch.allclose(doubled, 2 * x.grad, atol=1e-6)


def test_hooks_grad_cam_matches_torch():
    torch = _torch()
    torch.manual_seed(0)
    ref, ours = hooked_cnn(torch), hooked_cnn(ferrotorch)
    _copy_weights(ref, ours, ferrotorch)
    x = torch.randn(2, 1, 8, 8, requires_grad=True)
    xf = ferrotorch.from_numpy(x.detach().numpy()).requires_grad_()
    ref_out = grad_cam(torch, ref, x, 2)
    out = grad_cam(ferrotorch, ours, xf, 2)
    for a, b in zip(out[:3], ref_out[:3]):
        _close(a, b, atol=1e-6)
    _close(xf.grad, x.grad, atol=1e-6)


# ---------------------------------------------------------------------------- (r)
def test_gaussian_nll_and_mixture_density_regression():
    torch = ferrotorch
    nn = torch.nn
    D = torch.distributions
    torch.manual_seed(0)
    # heteroscedastic data: noise grows with |x|
    x = torch.linspace(-2, 2, 256).unsqueeze(1)
    noise_std = 0.05 + 0.3 * x.abs()
    y = torch.sin(2 * x) + noise_std * torch.randn_like(x)

    class MeanVar(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh())
            self.mean = nn.Linear(32, 1)
            self.var = nn.Sequential(nn.Linear(32, 1), nn.Softplus())

        def forward(self, x):
            h = self.body(x)
            return self.mean(h), self.var(h) + 1e-4

    model = MeanVar()
    criterion = nn.GaussianNLLLoss(eps=1e-6)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(300):
        mean, var = model(x)
        loss = criterion(mean, y, var)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        mean, var = model(torch.tensor([[0.0], [1.8]]))
    std = var.sqrt().squeeze(1)
    assert std[0].item() < 0.2 and 0.35 < std[1].item() < 0.9
    # equals -Normal.log_prob up to the constant
    nll = -D.Normal(mean, var.sqrt()).log_prob(torch.zeros(2, 1)).mean()
    full = nn.GaussianNLLLoss(full=True)(mean, torch.zeros(2, 1), var)
    assert full.item() == pytest.approx(nll.item(), rel=1e-5)

    # a mixture density network on a two-branch target: y = +-sqrt(x) + noise
    xs = torch.rand(400, 1) * 3 + 0.5
    branch = torch.randint(0, 2, (400, 1)).float() * 2 - 1
    ys = branch * xs.sqrt() + 0.05 * torch.randn(400, 1)

    class MDN(nn.Module):
        def __init__(self, k=2):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(1, 32), nn.Tanh())
            self.pi, self.mu, self.log_sigma = nn.Linear(32, k), nn.Linear(32, k), \
                nn.Linear(32, k)

        def forward(self, x):
            h = self.body(x)
            mix = D.Categorical(logits=self.pi(h))
            comp = D.Normal(self.mu(h), self.log_sigma(h).exp())
            return D.MixtureSameFamily(mix, comp)

    mdn = MDN()
    opt = torch.optim.Adam(mdn.parameters(), lr=2e-2)
    for step in range(250):
        loss = -mdn(xs).log_prob(ys.squeeze(1)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < -0.5
    with torch.no_grad():
        dist = mdn(torch.tensor([[2.0]]))
        mus = dist.component_distribution.mean.sort().values[0]
        probs = dist.mixture_distribution.probs[0]
        samples = dist.sample((200,))
    assert mus[0].item() == pytest.approx(-math.sqrt(2), abs=0.15)
    assert mus[1].item() == pytest.approx(math.sqrt(2), abs=0.15)
    assert (probs > 0.3).all()
    assert samples.shape == (200, 1) and (samples.abs() > 1).float().mean().item() > 0.9


def test_gaussian_nll_matches_torch():
    torch = _torch()
    torch.manual_seed(0)
    mu, target = torch.randn(5, 3), torch.randn(5, 3)
    var_full, var_1 = torch.rand(5, 3) + 0.1, torch.rand(5, 1) + 0.1
    for var in (var_full, var_1, torch.rand(5) + 0.1):
        for kw in ({}, {"full": True}, {"reduction": "sum"}, {"reduction": "none", "eps": 0.2}):
            args = [t.clone().requires_grad_() for t in (mu, target, var)]
            ours = [ferrotorch.from_numpy(t.detach().numpy()).requires_grad_() for t in args]
            ref = torch.nn.functional.gaussian_nll_loss(*args, **kw)
            got = ferrotorch.nn.functional.gaussian_nll_loss(*ours, **kw)
            _close(got, ref, atol=1e-6)
            ref.sum().backward()
            got.sum().backward()
            for a, b in zip(ours, args):
                _close(a.grad, b.grad, atol=1e-6)


# ---------------------------------------------------------------------------- (s)
def nt_xent(M, z1, z2, temperature=0.5):
    F = M.nn.functional
    n = z1.size(0)
    z = F.normalize(M.cat([z1, z2], dim=0), dim=1)
    sim = z @ z.T / temperature
    sim = sim.masked_fill(M.eye(2 * n, dtype=M.bool), float("-inf"))
    labels = (M.arange(2 * n) + n) % (2 * n)
    return F.cross_entropy(sim, labels), sim, labels


def simclr_encoder(M):
    nn = M.nn
    return nn.Sequential(nn.Linear(8, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 16))


def test_simclr_nt_xent_contrastive():
    torch = ferrotorch
    torch.manual_seed(0)
    encoder = simclr_encoder(torch)
    optimizer = torch.optim.SGD(encoder.parameters(), lr=0.1, momentum=0.9)
    base = torch.randn(32, 8)

    def augment(x):
        return x * (1 + 0.1 * torch.randn_like(x)) + 0.1 * torch.randn_like(x)

    losses = []
    for step in range(60):
        loss, _, _ = nt_xent(torch, encoder(augment(base)), encoder(augment(base)), 0.1)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.6 * losses[0]
    encoder.eval()
    with torch.no_grad():
        _, sim, labels = nt_xent(torch, encoder(augment(base)), encoder(augment(base)), 0.1)
    top1 = (sim.argmax(dim=1) == labels).float().mean().item()
    assert top1 > 0.95
    assert torch.isinf(sim.diagonal()).all()


def test_nt_xent_matches_torch():
    torch = _torch()
    torch.manual_seed(0)
    ref, ours = simclr_encoder(torch), simclr_encoder(ferrotorch)
    _copy_weights(ref, ours, ferrotorch)
    a, b = torch.randn(6, 8), torch.randn(6, 8)
    loss_ref, _, _ = nt_xent(torch, ref(a), ref(b), 0.2)
    loss, _, _ = nt_xent(ferrotorch, ours(ferrotorch.from_numpy(a.numpy())),
                         ours(ferrotorch.from_numpy(b.numpy())), 0.2)
    assert loss.item() == pytest.approx(loss_ref.item(), rel=1e-5)
    loss_ref.backward()
    loss.backward()
    for p, q in zip(ours.parameters(), ref.parameters()):
        _close(p.grad, q.grad, rtol=1e-4, atol=1e-5)
    for n, b in ours.named_buffers():
        _close(b, ref.state_dict()[n])


def test_mixture_same_family_matches_torch():
    torch = _torch()
    torch.manual_seed(0)
    logits, loc, scale = torch.randn(3, 4), torch.randn(3, 4, 2), torch.rand(3, 4, 2) + 0.5
    x = torch.randn(5, 3, 2)

    def build(M, logits, loc, scale):
        D = M.distributions
        return [
            D.MixtureSameFamily(D.Categorical(logits=logits), D.Normal(loc[..., 0],
                                                                       scale[..., 0])),
            D.MixtureSameFamily(D.Categorical(logits=logits),
                                D.Independent(D.Normal(loc, scale), 1)),
            D.MixtureSameFamily(D.Categorical(logits=logits[0]),
                                D.MultivariateNormal(loc, scale_tril=M.diag_embed(scale))),
        ]

    args = [t.clone().requires_grad_() for t in (logits, loc, scale)]
    ours_args = [ferrotorch.from_numpy(t.detach().numpy()).requires_grad_() for t in args]
    refs, ours = build(torch, *args), build(ferrotorch, *ours_args)
    xf = ferrotorch.from_numpy(x.numpy())
    total_ref, total = 0, 0
    for d, r in zip(ours, refs):
        assert d.batch_shape == r.batch_shape and d.event_shape == r.event_shape
        value, value_ref = (xf[..., 0], x[..., 0]) if r.event_shape == () else (xf, x)
        lp, lp_ref = d.log_prob(value), r.log_prob(value_ref)
        _close(lp, lp_ref, atol=1e-5)
        total, total_ref = total + lp.sum(), total_ref + lp_ref.sum()
        _close(d.mean, r.mean, atol=1e-6)
        _close(d.variance, r.variance, rtol=1e-5, atol=1e-5)
        if r.mixture_distribution.batch_shape == r.batch_shape:  # PyTorch samples only then
            assert d.sample((7,)).shape == r.sample((7,)).shape
        assert d.expand((2, 3)).log_prob(value[:2]).shape == (2, 3)
    _close(ours[0].cdf(xf[..., 0]), refs[0].cdf(x[..., 0]), atol=1e-6)
    total_ref.backward()
    total.backward()
    for a, b in zip(ours_args, args):
        _close(a.grad, b.grad, rtol=1e-4, atol=1e-5)
    assert repr(ours[0]).startswith("MixtureSameFamily(\n  Categorical(")
    with pytest.raises(ValueError, match="does not equal"):
        ferrotorch.distributions.MixtureSameFamily(
            ferrotorch.distributions.Categorical(logits=ferrotorch.zeros(3)),
            ferrotorch.distributions.Normal(ferrotorch.zeros(4), ferrotorch.ones(4)))


# ---------------------------------------------------------------------------- (t)
def test_dqn_replay_memory_target_network():
    """The DQN tutorial on the corridor: replay memory, a target network updated softly,
    SmoothL1Loss on Q(s, a) gathered from the policy network, epsilon-greedy exploration."""
    torch = ferrotorch
    nn = torch.nn
    torch.manual_seed(0)
    rng = random.Random(0)
    env = Corridor(6)
    Transition = collections.namedtuple("Transition", ("state", "action", "next_state",
                                                       "reward", "done"))

    class ReplayMemory:
        def __init__(self, capacity):
            self.memory = collections.deque([], maxlen=capacity)

        def push(self, *args):
            self.memory.append(Transition(*args))

        def sample(self, batch_size):
            return rng.sample(self.memory, batch_size)

        def __len__(self):
            return len(self.memory)

    def dqn():
        return nn.Sequential(nn.Linear(env.n, 32), nn.ReLU(), nn.Linear(32, 2))

    policy_net, target_net = dqn(), dqn()
    target_net.load_state_dict(policy_net.state_dict())
    optimizer = torch.optim.AdamW(policy_net.parameters(), lr=5e-3, amsgrad=True)
    memory = ReplayMemory(1000)
    GAMMA, TAU, BATCH = 0.9, 0.05, 32

    def one_hot(s):
        return nn.functional.one_hot(torch.tensor([s]), env.n).float()

    def optimize_model():
        if len(memory) < BATCH:
            return
        batch = Transition(*zip(*memory.sample(BATCH)))
        state_batch = torch.cat(batch.state)
        action_batch = torch.cat(batch.action)
        reward_batch = torch.cat(batch.reward)
        non_final_mask = torch.tensor([not d for d in batch.done], dtype=torch.bool)
        non_final_next = torch.cat([s for s, d in zip(batch.next_state, batch.done) if not d])
        state_action_values = policy_net(state_batch).gather(1, action_batch)
        next_state_values = torch.zeros(BATCH)
        with torch.no_grad():
            next_state_values[non_final_mask] = target_net(non_final_next).max(1).values
        expected = (next_state_values * GAMMA) + reward_batch
        loss = nn.SmoothL1Loss()(state_action_values, expected.unsqueeze(1))
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_value_(policy_net.parameters(), 100)
        optimizer.step()

    steps_done = 0
    for episode in range(40):
        state, done = one_hot(env.reset()), False
        while not done:
            eps = 0.05 + 0.9 * math.exp(-steps_done / 100)
            steps_done += 1
            if rng.random() > eps:
                with torch.no_grad():
                    action = policy_net(state).max(1).indices.view(1, 1)
            else:
                action = torch.tensor([[rng.randrange(2)]], dtype=torch.long)
            obs, reward, done = env.step(action.item())
            next_state = one_hot(obs)
            memory.push(state, action, next_state, torch.tensor([reward]), done)
            state = next_state
            optimize_model()
            target_sd, policy_sd = target_net.state_dict(), policy_net.state_dict()
            for key in policy_sd:
                target_sd[key] = policy_sd[key] * TAU + target_sd[key] * (1 - TAU)
            target_net.load_state_dict(target_sd)
    with torch.no_grad():
        q = policy_net(torch.eye(env.n))
    assert (q[:-1].argmax(1) == 1).all()  # always go right
    assert q[env.n - 2, 1].item() > q[0, 1].item()  # values grow toward the goal


# ---------------------------------------------------------------------------- (u)
def gradient_penalty(M, critic, real, fake):
    alpha = M.rand(real.size(0), 1)
    interpolates = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    d_interpolates = critic(interpolates)
    gradients = M.autograd.grad(outputs=d_interpolates, inputs=interpolates,
                                grad_outputs=M.ones_like(d_interpolates), create_graph=True,
                                retain_graph=True, only_inputs=True)[0]
    return ((gradients.norm(2, dim=1) - 1) ** 2).mean()


def wgan_nets(M):
    nn = M.nn
    generator = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Linear(32, 2))
    critic = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Linear(32, 32),
                           nn.LeakyReLU(0.2), nn.Linear(32, 1))
    return generator, critic


def test_wgan_gp_on_shifted_gaussian():
    torch = ferrotorch
    torch.manual_seed(0)
    generator, critic = wgan_nets(torch)
    opt_g = torch.optim.Adam(generator.parameters(), lr=2e-3, betas=(0.5, 0.9))
    opt_c = torch.optim.Adam(critic.parameters(), lr=2e-3, betas=(0.5, 0.9))
    target_mean = torch.tensor([2.0, -1.0])
    late_means = []
    for it in range(200):
        for _ in range(3):
            real = target_mean + 0.3 * torch.randn(64, 2)
            fake = generator(torch.randn(64, 2)).detach()
            loss_c = critic(fake).mean() - critic(real).mean() + \
                10 * gradient_penalty(torch, critic, real, fake)
            opt_c.zero_grad()
            loss_c.backward()
            opt_c.step()
        loss_g = -critic(generator(torch.randn(64, 2))).mean()
        opt_g.zero_grad()
        loss_g.backward()
        opt_g.step()
        if it >= 100:  # the adversarial game oscillates: average the late generators
            with torch.no_grad():
                late_means.append(generator(torch.randn(256, 2)).mean(0))
    assert torch.allclose(torch.stack(late_means).mean(0), target_mean, atol=0.3)


def test_gradient_penalty_matches_torch():
    torch = _torch()
    torch.manual_seed(0)
    ref_g, ref_c = wgan_nets(torch)
    our_g, our_c = wgan_nets(ferrotorch)
    _copy_weights(ref_c, our_c, ferrotorch)
    real, fake = torch.randn(8, 2), torch.randn(8, 2)
    torch.manual_seed(5)
    alpha = torch.rand(8, 1)
    torch.manual_seed(5)
    gp_ref = gradient_penalty(torch, ref_c, real, fake)
    ferrotorch_rand = ferrotorch.rand
    ferrotorch.rand = lambda *shape: ferrotorch.from_numpy(alpha.numpy())
    try:
        gp = gradient_penalty(ferrotorch, our_c, ferrotorch.from_numpy(real.numpy()),
                              ferrotorch.from_numpy(fake.numpy()))
    finally:
        ferrotorch.rand = ferrotorch_rand
    assert gp.item() == pytest.approx(gp_ref.item(), rel=1e-5)
    gp_ref.backward()
    gp.backward()
    for p, q in zip(our_c.parameters(), ref_c.parameters()):
        # the hidden biases reach the penalty only through LeakyReLU's (piecewise constant)
        # derivative: zero gradients, as in PyTorch (not None)
        if q.grad is None:  # the output bias does not reach it at all
            assert p.grad is None
            continue
        _close(p.grad, q.grad, rtol=1e-4, atol=1e-6)


def test_double_backward_through_relu_gives_zero_not_none():
    torch = ferrotorch
    x = torch.randn(4, 2, requires_grad=True)
    b = torch.zeros(3, requires_grad=True)
    w = torch.randn(3, 2, requires_grad=True)
    for act in (torch.relu, torch.nn.functional.leaky_relu):
        b.grad = None
        (g,) = torch.autograd.grad(act(x @ w.T + b).sum(), x, create_graph=True)
        g.pow(2).sum().backward()
        assert b.grad is not None and torch.equal(b.grad, torch.zeros(3))


# ---------------------------------------------------------------------------- (v)
def test_swa_averaged_model_and_ema():
    torch = ferrotorch
    nn = torch.nn
    from ferrotorch.optim.swa_utils import SWALR, AveragedModel, get_ema_multi_avg_fn, update_bn

    torch.manual_seed(0)
    x = torch.randn(128, 4)
    y = (x @ torch.tensor([1.0, -2.0, 0.5, 0.0])).unsqueeze(1)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=32,
                                         shuffle=True)
    model = nn.Sequential(nn.Linear(4, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    swa_model = AveragedModel(model)
    ema_model = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=20)
    swa_start = 10
    swa_scheduler = SWALR(optimizer, swa_lr=0.01, anneal_epochs=3)
    snapshots = []
    for epoch in range(20):
        for xb, yb in loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(xb), yb).backward()
            optimizer.step()
            ema_model.update_parameters(model)
        if epoch >= swa_start:
            swa_model.update_parameters(model)
            snapshots.append([p.detach().clone() for p in model.parameters()])
            swa_scheduler.step()
        else:
            scheduler.step()
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.01)
    assert swa_model.n_averaged.item() == 10
    for avg, *snaps in zip(swa_model.module.parameters(), *snapshots):
        assert torch.allclose(avg, torch.stack(snaps).mean(0), atol=1e-5)
    update_bn(loader, swa_model)
    bn = swa_model.module[1]
    assert bn.num_batches_tracked.item() == 4 and bn.momentum == 0.1
    swa_model.eval()
    ema_model.eval()
    with torch.no_grad():
        assert nn.functional.mse_loss(swa_model(x), y).item() < 0.05
        assert nn.functional.mse_loss(ema_model(x), y).item() < 0.5
    assert "n_averaged" in swa_model.state_dict()


# ---------------------------------------------------------------------------- (w)
def espcn(M, upscale=2):
    nn = M.nn

    class SuperResolutionNet(nn.Module):
        """The super-resolution tutorial's ESPCN: sub-pixel convolution via PixelShuffle."""

        def __init__(self):
            super().__init__()
            self.relu = nn.ReLU()
            self.conv1 = nn.Conv2d(1, 16, 5, 1, 2)
            self.conv2 = nn.Conv2d(16, 16, 3, 1, 1)
            self.conv3 = nn.Conv2d(16, upscale ** 2, 3, 1, 1)
            self.pixel_shuffle = nn.PixelShuffle(upscale)
            self._initialize_weights()

        def forward(self, x):
            x = self.relu(self.conv1(x))
            x = self.relu(self.conv2(x))
            return self.pixel_shuffle(self.conv3(x))

        def _initialize_weights(self):
            init = nn.init
            init.orthogonal_(self.conv1.weight, init.calculate_gain("relu"))
            init.orthogonal_(self.conv2.weight, init.calculate_gain("relu"))
            init.orthogonal_(self.conv3.weight)

    return SuperResolutionNet()


def _smooth_images(M, n, size, seed):
    g = M.Generator().manual_seed(seed)
    coarse = M.rand(n, 1, 4, 4, generator=g)
    return M.nn.functional.interpolate(coarse, size=(size, size), mode="bicubic",
                                       align_corners=False).clamp(0, 1)


def test_super_resolution_pixel_shuffle():
    torch = ferrotorch
    F = torch.nn.functional
    torch.manual_seed(0)
    model = espcn(torch)
    hr = _smooth_images(torch, 16, 16, 0)
    lr = F.avg_pool2d(hr, 2)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for step in range(300):
        optimizer.zero_grad()
        loss = F.mse_loss(model(lr), hr)
        loss.backward()
        optimizer.step()
    hr_t = _smooth_images(torch, 8, 16, 1)
    lr_t = F.avg_pool2d(hr_t, 2)
    with torch.no_grad():
        mse = F.mse_loss(model(lr_t), hr_t).item()
        baseline = F.mse_loss(F.interpolate(lr_t, scale_factor=2, mode="nearest"), hr_t).item()
    psnr = 10 * math.log10(1 / mse)
    assert mse < baseline and psnr > 25
    assert torch.equal(F.pixel_unshuffle(F.pixel_shuffle(lr_t.repeat(1, 4, 1, 1), 2), 2),
                       lr_t.repeat(1, 4, 1, 1))


def test_super_resolution_matches_torch():
    torch = _torch()
    torch.manual_seed(0)
    ref, ours = espcn(torch, 3), espcn(ferrotorch, 3)
    _copy_weights(ref, ours, ferrotorch)
    x = torch.rand(2, 1, 5, 5)
    _close(ours(ferrotorch.from_numpy(x.numpy())), ref(x), atol=1e-5)
    # the data pipeline (bicubic upsampling) and the init helpers agree too
    coarse = torch.rand(2, 1, 4, 4)
    for kw in ({"size": (12, 12), "mode": "bicubic", "align_corners": False},
               {"scale_factor": 2.5, "mode": "bicubic", "align_corners": True},
               {"scale_factor": 2, "mode": "bilinear", "antialias": False}):
        _close(ferrotorch.nn.functional.interpolate(ferrotorch.from_numpy(coarse.numpy()), **kw),
               torch.nn.functional.interpolate(coarse, **kw), atol=1e-5)
    assert ferrotorch.nn.init.calculate_gain("leaky_relu", 0.2) == pytest.approx(
        torch.nn.init.calculate_gain("leaky_relu", 0.2))
    q = ferrotorch.nn.init.orthogonal_(ferrotorch.empty(6, 4), 2.0)
    np.testing.assert_allclose(_np(q.T @ q), 4 * np.eye(4), atol=1e-5)


# ---------------------------------------------------------------------------- (x)
def tiny_vit(M, image=8, patch=4, dim=16, classes=3):
    nn = M.nn
    F = M.nn.functional

    class PatchAttention(nn.Module):
        def __init__(self, heads=2):
            super().__init__()
            self.heads = heads
            self.qkv = nn.Linear(dim, 3 * dim, bias=False)
            self.proj = nn.Linear(dim, dim)

        def forward(self, x):
            B, N, C = x.shape
            q, k, v = self.qkv(x).reshape(B, N, 3, self.heads, C // self.heads) \
                .permute(2, 0, 3, 1, 4).unbind(0)
            attn = M.einsum("bhnd,bhmd->bhnm", q, k) * (C // self.heads) ** -0.5
            out = M.einsum("bhnm,bhmd->bhnd", attn.softmax(dim=-1), v)
            return self.proj(out.transpose(1, 2).reshape(B, N, C))

    class ViT(nn.Module):
        def __init__(self):
            super().__init__()
            n = (image // patch) ** 2
            self.to_patch = nn.Linear(patch * patch, dim)
            self.cls_token = nn.Parameter(M.zeros(1, 1, dim))
            self.pos_embed = nn.Parameter(M.randn(1, n + 1, dim) * 0.02)
            self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.attn = PatchAttention()
            self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(approximate="tanh"),
                                     nn.Linear(2 * dim, dim))
            self.head = nn.Linear(dim, classes)

        def forward(self, img):
            patches = F.unfold(img, kernel_size=patch, stride=patch).transpose(1, 2)
            x = self.to_patch(patches)
            x = M.cat([self.cls_token.expand(x.size(0), -1, -1), x], dim=1) + self.pos_embed
            x = x + self.attn(self.norm1(x))
            x = x + self.mlp(self.norm2(x))
            return self.head(x[:, 0])

    return ViT()


def _stripes(M, n, seed):
    """Class 0: horizontal stripes, 1: vertical, 2: checkerboard; random phase and noise."""
    g = M.Generator().manual_seed(seed)
    labels = M.arange(n) % 3
    r = M.arange(8).view(8, 1).expand(8, 8)
    c = M.arange(8).view(1, 8).expand(8, 8)
    imgs = []
    for i, lab in enumerate(labels.tolist()):
        phase = int(M.randint(0, 2, (1,), generator=g).item())
        pattern = [(r + phase) % 2, (c + phase) % 2, (r + c + phase) % 2][lab]
        imgs.append(pattern.float() + 0.3 * M.randn(8, 8, generator=g))
    return M.stack(imgs).unsqueeze(1), labels


def test_vision_transformer_patches_einsum():
    torch = ferrotorch
    torch.manual_seed(0)
    model = tiny_vit(torch)
    x, y = _stripes(torch, 48, 0)
    no_decay = ["bias", "norm", "cls_token", "pos_embed"]
    groups = [
        {"params": [p for n, p in model.named_parameters()
                    if not any(nd in n for nd in no_decay)], "weight_decay": 0.05},
        {"params": [p for n, p in model.named_parameters()
                    if any(nd in n for nd in no_decay)], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(groups, lr=5e-3)
    for step in range(60):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
    xt, yt = _stripes(torch, 24, 1)
    with torch.no_grad():
        acc = (model(xt).argmax(1) == yt).float().mean().item()
    assert acc > 0.9
    assert model.cls_token.grad is not None


def test_vision_transformer_matches_torch():
    torch = _torch()
    torch.manual_seed(0)
    ref, ours = tiny_vit(torch), tiny_vit(ferrotorch)
    _copy_weights(ref, ours, ferrotorch)
    x, y = _stripes(torch, 4, 0)
    loss_ref = torch.nn.functional.cross_entropy(ref(x), y)
    loss = ferrotorch.nn.functional.cross_entropy(ours(ferrotorch.from_numpy(x.numpy())),
                                                  ferrotorch.from_numpy(y.numpy()))
    assert loss.item() == pytest.approx(loss_ref.item(), rel=1e-5)
    loss_ref.backward()
    loss.backward()
    for (n, p), (nr, pr) in zip(ours.named_parameters(), ref.named_parameters()):
        assert n == nr
        _close(p.grad, pr.grad, rtol=1e-4, atol=1e-6)


# ---------------------------------------------------------------------------- (y)
def test_ctc_speech_recognizer():
    """A tiny 'speech' model: frames are noisy one-hot symbols repeated a random number of
    times; a bidirectional GRU with CTC loss learns to transcribe them (greedy decoding)."""
    torch = ferrotorch
    nn = torch.nn
    torch.manual_seed(0)
    rng = random.Random(0)
    n_sym = 4  # symbols 1..4, blank 0

    def utterance():
        labels = [rng.randint(1, n_sym) for _ in range(rng.randint(2, 4))]
        frames = []
        prev = None
        for lab in labels:
            if lab == prev:
                frames.append(0)  # a silence frame between repeated symbols
            frames.extend([lab] * rng.randint(1, 3))
            prev = lab
        feats = nn.functional.one_hot(torch.tensor(frames), n_sym + 1).float()
        return feats + 0.1 * torch.randn_like(feats), torch.tensor(labels)

    class Recognizer(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.GRU(n_sym + 1, 24, bidirectional=True)
            self.fc = nn.Linear(48, n_sym + 1)

        def forward(self, x):  # (T, N, C)
            return self.fc(self.rnn(x)[0]).log_softmax(2)

    model = Recognizer()
    ctc = nn.CTCLoss(blank=0, zero_infinity=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    data = [utterance() for _ in range(48)]
    for epoch in range(12):
        for i in range(0, len(data), 16):
            batch = data[i:i + 16]
            feats = nn.utils.rnn.pad_sequence([f for f, _ in batch])  # (T, N, C)
            input_lengths = torch.tensor([len(f) for f, _ in batch])
            targets = torch.cat([t for _, t in batch])
            target_lengths = torch.tensor([len(t) for _, t in batch])
            loss = ctc(model(feats), targets, input_lengths, target_lengths)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    assert loss.item() < 0.5

    def greedy(feats):
        with torch.no_grad():
            best = model(feats.unsqueeze(1)).argmax(2).squeeze(1).tolist()
        out = [b for j, b in enumerate(best) if b != 0 and (j == 0 or b != best[j - 1])]
        return out

    test = [utterance() for _ in range(10)]
    correct = sum(greedy(f) == t.tolist() for f, t in test)
    assert correct >= 9


# ---------------------------------------------------------------------------- (z)
def test_neural_style_transfer_module_surgery():
    """The neural-style tutorial: loss modules inserted into a copy of a feature network
    (add_module / isinstance surgery), Gram matrices, optimizing the input image with LBFGS
    and clamping it in place under no_grad."""
    torch = ferrotorch
    nn = torch.nn
    F = torch.nn.functional
    torch.manual_seed(0)
    cnn = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(inplace=True),
                        nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2),
                        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(inplace=True)).eval()
    for p in cnn.parameters():
        p.requires_grad_(False)

    def gram_matrix(x):
        a, b, c, d = x.size()
        features = x.view(a * b, c * d)
        return torch.mm(features, features.t()).div(a * b * c * d)

    class ContentLoss(nn.Module):
        def __init__(self, target):
            super().__init__()
            self.target = target.detach()

        def forward(self, x):
            self.loss = F.mse_loss(x, self.target)
            return x

    class StyleLoss(nn.Module):
        def __init__(self, target_feature):
            super().__init__()
            self.target = gram_matrix(target_feature).detach()

        def forward(self, x):
            self.loss = F.mse_loss(gram_matrix(x), self.target)
            return x

    class Normalization(nn.Module):
        def __init__(self, mean, std):
            super().__init__()
            self.mean = torch.tensor(mean).view(-1, 1, 1)
            self.std = torch.tensor(std).view(-1, 1, 1)

        def forward(self, img):
            return (img - self.mean) / self.std

    style_img = torch.rand(1, 3, 16, 16)
    content_img = torch.rand(1, 3, 16, 16)
    content_layers, style_layers = ["conv_2"], ["conv_1", "conv_2", "conv_3"]
    model = nn.Sequential(Normalization([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]))
    content_losses, style_losses = [], []
    i = 0
    for layer in cnn.children():
        if isinstance(layer, nn.Conv2d):
            i += 1
            name = f"conv_{i}"
        elif isinstance(layer, nn.ReLU):
            name = f"relu_{i}"
            layer = nn.ReLU(inplace=False)
        elif isinstance(layer, nn.MaxPool2d):
            name = f"pool_{i}"
        else:
            raise RuntimeError(f"Unrecognized layer: {layer.__class__.__name__}")
        model.add_module(name, layer)
        if name in content_layers:
            content_loss = ContentLoss(model(content_img).detach())
            model.add_module(f"content_loss_{i}", content_loss)
            content_losses.append(content_loss)
        if name in style_layers:
            style_loss = StyleLoss(model(style_img).detach())
            model.add_module(f"style_loss_{i}", style_loss)
            style_losses.append(style_loss)
    for i in range(len(model) - 1, -1, -1):
        if isinstance(model[i], (ContentLoss, StyleLoss)):
            break
    model = model[:(i + 1)]
    assert [type(m).__name__ for m in model][-2:] == ["Conv2d", "StyleLoss"]
    assert list(dict(model.named_children()))[:3] == ["0", "conv_1", "style_loss_1"]

    input_img = content_img.clone()
    input_img.requires_grad_(True)
    model.eval()
    model.requires_grad_(False)
    optimizer = torch.optim.LBFGS([input_img])
    history = []
    for run in range(4):
        def closure():
            with torch.no_grad():
                input_img.clamp_(0, 1)
            optimizer.zero_grad()
            model(input_img)
            style_score = 1e4 * sum(sl.loss for sl in style_losses)
            content_score = sum(cl.loss for cl in content_losses)
            loss = style_score + content_score
            loss.backward()
            history.append((style_score.item(), content_score.item()))
            return style_score + content_score

        optimizer.step(closure)
    with torch.no_grad():
        input_img.clamp_(0, 1)
    assert history[-1][0] < 0.2 * history[0][0]
    assert history[0][1] == 0.0 and history[-1][1] > 0
    assert input_img.min().item() >= 0 and input_img.max().item() <= 1
    assert all(p.grad is None for p in cnn.parameters())


# ---------------------------------------------------------------------------- (aa)
def gcn(M, in_dim, hidden, classes):
    nn = M.nn
    F = M.nn.functional

    class GCNLayer(nn.Module):
        """Message passing with index_add_: h'_i = W * sum_j norm_ij h_j over edges j -> i."""

        def __init__(self, cin, cout):
            super().__init__()
            self.lin = nn.Linear(cin, cout, bias=False)
            self.bias = nn.Parameter(M.zeros(cout))

        def forward(self, x, edge_index):
            num_nodes = x.size(0)
            loops = M.arange(num_nodes).unsqueeze(0).repeat(2, 1)
            edge_index = M.cat([edge_index, loops], dim=1)
            src, dst = edge_index
            deg = M.zeros(num_nodes).scatter_add_(0, dst, M.ones(dst.size(0)))
            norm = deg[src].rsqrt() * deg[dst].rsqrt()
            h = self.lin(x)
            out = M.zeros_like(h).index_add_(0, dst, h[src] * norm.unsqueeze(1))
            return out + self.bias

    class GCN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = GCNLayer(in_dim, hidden)
            self.conv2 = GCNLayer(hidden, classes)

        def forward(self, x, edge_index):
            x = F.dropout(F.relu(self.conv1(x, edge_index)), p=0.5, training=self.training)
            return F.log_softmax(self.conv2(x, edge_index), dim=1)

    return GCN()


def _two_communities(M, seed):
    """Two 12-node communities, dense inside, one bridge; only 2 nodes per class labelled."""
    rng = random.Random(seed)
    edges = []
    for base in (0, 12):
        for i in range(12):
            for j in range(i + 1, 12):
                if rng.random() < 0.4:
                    edges += [(base + i, base + j), (base + j, base + i)]
    edges += [(0, 12), (12, 0)]
    edge_index = M.tensor(edges).t().contiguous()
    y = M.tensor([0] * 12 + [1] * 12)
    x = M.eye(24)  # featureless nodes
    train_mask = M.zeros(24, dtype=M.bool)
    train_mask[[1, 2, 13, 14]] = True
    return x, edge_index, y, train_mask


def test_gcn_node_classification_message_passing():
    torch = ferrotorch
    torch.manual_seed(0)
    x, edge_index, y, train_mask = _two_communities(torch, 0)
    model = gcn(torch, 24, 16, 2)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    model.train()
    for epoch in range(100):
        optimizer.zero_grad()
        out = model(x, edge_index)
        loss = torch.nn.functional.nll_loss(out[train_mask], y[train_mask])
        loss.backward()
        optimizer.step()
    model.eval()
    pred = model(x, edge_index).argmax(dim=1)
    acc = int((pred[~train_mask] == y[~train_mask]).sum()) / int((~train_mask).sum())
    assert acc > 0.9


def test_gcn_matches_torch():
    torch = _torch()
    torch.manual_seed(0)
    ref, ours = gcn(torch, 24, 8, 2), gcn(ferrotorch, 24, 8, 2)
    _copy_weights(ref, ours, ferrotorch)
    ref.eval()
    ours.eval()
    x, edge_index, y, mask = _two_communities(torch, 1)
    args = [ferrotorch.from_numpy(t.numpy()) for t in (x, edge_index, y, mask)]
    out_ref, out = ref(x, edge_index), ours(args[0], args[1])
    _close(out, out_ref, atol=1e-6)
    torch.nn.functional.nll_loss(out_ref[mask], y[mask]).backward()
    ferrotorch.nn.functional.nll_loss(out[args[3]], args[2][args[3]]).backward()
    for p, q in zip(ours.parameters(), ref.parameters()):
        _close(p.grad, q.grad, atol=1e-6)


# ---------------------------------------------------------------------------- (bb)
def realnvp(M, dim=2, hidden=32, n_layers=4):
    nn = M.nn

    class Coupling(nn.Module):
        def __init__(self, mask):
            super().__init__()
            self.register_buffer("mask", mask)
            self.s = nn.Sequential(nn.Linear(dim, hidden), nn.Tanh(), nn.Linear(hidden, dim),
                                   nn.Tanh())
            self.t = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, dim))

        def forward(self, x):  # data -> latent
            xm = x * self.mask
            s = self.s(xm) * (1 - self.mask)
            t = self.t(xm) * (1 - self.mask)
            z = xm + (1 - self.mask) * (x * M.exp(s) + t)
            return z, s.sum(dim=1)

        def inverse(self, z):
            zm = z * self.mask
            s = self.s(zm) * (1 - self.mask)
            t = self.t(zm) * (1 - self.mask)
            return zm + (1 - self.mask) * ((z - t) * M.exp(-s))

    class RealNVP(nn.Module):
        def __init__(self):
            super().__init__()
            masks = [M.tensor([1.0, 0.0]) if i % 2 == 0 else M.tensor([0.0, 1.0])
                     for i in range(n_layers)]
            self.layers = nn.ModuleList(Coupling(m) for m in masks)
            self.register_buffer("loc", M.zeros(dim))
            self.register_buffer("cov", M.eye(dim))

        @property
        def prior(self):
            return M.distributions.MultivariateNormal(self.loc, self.cov)

        def forward(self, x):
            log_det = M.zeros(x.size(0))
            for layer in self.layers:
                x, ld = layer(x)
                log_det = log_det + ld
            return x, log_det

        def log_prob(self, x):
            z, log_det = self(x)
            return self.prior.log_prob(z) + log_det

        def sample(self, n):
            z = self.prior.sample((n,))
            for layer in reversed(self.layers):
                z = layer.inverse(z)
            return z

    return RealNVP()


def _two_moons(M, n, seed):
    rng = np.random.default_rng(seed)
    t = rng.uniform(0, np.pi, n)
    upper = rng.random(n) < 0.5
    x = np.where(upper, np.cos(t), 1 - np.cos(t))
    y = np.where(upper, np.sin(t), 0.5 - np.sin(t))
    pts = np.stack([x, y], 1) + 0.05 * rng.standard_normal((n, 2))
    return M.from_numpy(pts.astype(np.float32))


def test_realnvp_normalizing_flow():
    torch = ferrotorch
    torch.manual_seed(0)
    flow = realnvp(torch)
    data = _two_moons(torch, 512, 0)
    optimizer = torch.optim.Adam(flow.parameters(), lr=5e-3)
    for step in range(300):
        idx = torch.randint(0, 512, (128,))
        loss = -flow.log_prob(data[idx]).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        nll = -flow.log_prob(data).mean().item()
        z, _ = flow(data[:10])
        x_rec = z
        for layer in reversed(flow.layers):
            x_rec = layer.inverse(x_rec)
        samples = flow.sample(500)
    assert nll < 1.2  # a standard normal fit of the moons scores about 2.1
    assert torch.allclose(x_rec, data[:10], atol=1e-5)
    assert samples.shape == (500, 2)
    assert abs(samples[:, 0].mean().item() - data[:, 0].mean().item()) < 0.2


def test_realnvp_log_prob_matches_torch():
    torch = _torch()
    torch.manual_seed(0)
    ref, ours = realnvp(torch), realnvp(ferrotorch)
    _copy_weights(ref, ours, ferrotorch)
    x = _two_moons(torch, 16, 1)
    lp_ref = ref.log_prob(x)
    lp = ours.log_prob(ferrotorch.from_numpy(x.numpy()))
    _close(lp, lp_ref, atol=1e-5)
    lp_ref.mean().backward()
    lp.mean().backward()
    for p, q in zip(ours.parameters(), ref.parameters()):
        _close(p.grad, q.grad, rtol=1e-4, atol=1e-6)


# ---------------------------------------------------------------------------- (cc)
def tcn(M, channels=8, levels=3, kernel_size=3):
    nn = M.nn
    F = M.nn.functional
    weight_norm = M.nn.utils.parametrizations.weight_norm

    class CausalBlock(nn.Module):
        def __init__(self, cin, cout, dilation):
            super().__init__()
            self.pad = (kernel_size - 1) * dilation
            self.conv1 = weight_norm(nn.Conv1d(cin, cout, kernel_size, dilation=dilation))
            self.conv2 = weight_norm(nn.Conv1d(cout, cout, kernel_size, dilation=dilation))
            self.downsample = nn.Conv1d(cin, cout, 1) if cin != cout else None

        def forward(self, x):
            out = F.relu(self.conv1(F.pad(x, (self.pad, 0))))
            out = F.relu(self.conv2(F.pad(out, (self.pad, 0))))
            res = x if self.downsample is None else self.downsample(x)
            return F.relu(out + res)

    class TCN(nn.Module):
        def __init__(self):
            super().__init__()
            self.network = nn.Sequential(*[
                CausalBlock(1 if i == 0 else channels, channels, 2 ** i) for i in range(levels)])
            self.linear = nn.Linear(channels, 1)

        def forward(self, x):  # (N, 1, L) -> (N, L)
            return self.linear(self.network(x).transpose(1, 2)).squeeze(-1)

    return TCN()


def test_temporal_conv_net_copy_memory():
    """A dilated causal TCN learns to output the input delayed by 5 steps; causality means
    no output may depend on later inputs."""
    torch = ferrotorch
    torch.manual_seed(0)
    model = tcn(torch)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    delay = 5
    for step in range(120):
        x = torch.randn(16, 1, 24)
        target = torch.nn.functional.pad(x[:, 0, :-delay], (delay, 0))
        loss = torch.nn.functional.mse_loss(model(x), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.1
    x = torch.randn(1, 1, 24, requires_grad=True)
    model(x)[0, 10].backward()
    assert (x.grad[0, 0, 11:] == 0).all() and x.grad[0, 0, 10 - delay].abs().item() > 0.1
    assert "network.0.conv1.parametrizations.weight.original0" in model.state_dict()


def test_temporal_conv_net_matches_torch():
    torch = _torch()
    torch.manual_seed(0)
    ref, ours = tcn(torch), tcn(ferrotorch)
    assert list(ours.state_dict()) == list(ref.state_dict())
    _copy_weights(ref, ours, ferrotorch)
    x = torch.randn(2, 1, 16)
    out_ref, out = ref(x), ours(ferrotorch.from_numpy(x.numpy()))
    _close(out, out_ref, atol=1e-5)
    out_ref.square().mean().backward()
    out.square().mean().backward()
    for (n, p), (nr, q) in zip(ours.named_parameters(), ref.named_parameters()):
        assert n == nr
        _close(p.grad, q.grad, rtol=1e-4, atol=1e-6)


# ---------------------------------------------------------------------------- (dd)
def focal_loss(M, logits, target, alpha, gamma=2.0):
    log_p = M.nn.functional.log_softmax(logits, dim=1)
    log_pt = log_p.gather(1, target.unsqueeze(1)).squeeze(1)
    pt = log_pt.exp()
    return (-alpha[target] * (1 - pt) ** gamma * log_pt).mean()


def test_imbalanced_classification_focal_loss_and_metrics():
    torch = ferrotorch
    nn = torch.nn
    torch.manual_seed(0)
    # 3 classes with 80/15/5 % of the samples
    n = 400
    y = torch.multinomial(torch.tensor([0.8, 0.15, 0.05]), n, replacement=True)
    centers = torch.tensor([[0.0, 0.0], [2.5, 0.0], [0.0, 2.5]])
    x = centers[y] + 0.7 * torch.randn(n, 2)
    counts = torch.bincount(y, minlength=3)
    class_weights = counts.sum() / (3 * counts.float())
    model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 3))
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-2)
    weighted_ce = nn.CrossEntropyLoss(weight=class_weights)
    for step in range(150):
        logits = model(x)
        loss = focal_loss(torch, logits, y, class_weights) + 0.5 * weighted_ce(logits, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.inference_mode():
        pred = model(x).argmax(1)
    assert not pred.requires_grad and torch.is_grad_enabled()
    confusion = torch.zeros(3, 3, dtype=torch.long)
    confusion.index_put_((y, pred), torch.ones(n, dtype=torch.long), accumulate=True)
    assert confusion.sum().item() == n
    assert torch.equal(confusion, torch.bincount(y * 3 + pred, minlength=9).view(3, 3))
    tp = confusion.diag().float()
    recall = tp / confusion.sum(1).float()
    precision = tp / confusion.sum(0).float().clamp(min=1)
    f1 = 2 * precision * recall / (precision + recall).clamp(min=1e-8)
    assert recall.min().item() > 0.75  # the rare class is found too
    assert f1.mean().item() > 0.75
    # BCEWithLogits with pos_weight for the one-vs-rest view of the rarest class
    binary = (y == 2).float()
    head = nn.Linear(2, 1)
    opt = torch.optim.SGD(head.parameters(), lr=0.5)
    bce = nn.BCEWithLogitsLoss(pos_weight=(1 - binary).sum() / binary.sum())
    for step in range(100):
        opt.zero_grad()
        bce(head(x).squeeze(1), binary).backward()
        opt.step()
    with torch.no_grad():
        hits = (head(x).squeeze(1) > 0)[binary.bool()].float().mean().item()
    assert hits > 0.8


def test_focal_and_weighted_losses_match_torch():
    torch = _torch()
    torch.manual_seed(0)
    logits, y = torch.randn(10, 4), torch.randint(0, 4, (10,))
    w = torch.rand(4) + 0.5
    pos_w = torch.tensor([3.0])
    t = torch.rand(10)

    def losses(M, logits, y, w, pos_w, t):
        nn, F = M.nn, M.nn.functional
        return [focal_loss(M, logits, y, w),
                nn.CrossEntropyLoss(weight=w)(logits, y),
                nn.CrossEntropyLoss(weight=w, label_smoothing=0.1)(logits, y),
                nn.NLLLoss(weight=w, reduction="sum")(F.log_softmax(logits, 1), y),
                nn.BCEWithLogitsLoss(pos_weight=pos_w)(logits[:, 0], t),
                nn.BCEWithLogitsLoss(weight=t)(logits[:, 1], (t > 0.5).float()),
                nn.MultiLabelSoftMarginLoss(weight=w)(logits, (logits > 0).float())]

    lr = logits.clone().requires_grad_()
    lf = ferrotorch.from_numpy(logits.numpy()).requires_grad_()
    ref = losses(torch, lr, y, w, pos_w, t)
    got = losses(ferrotorch, lf, *[ferrotorch.from_numpy(a.numpy()) for a in (y, w, pos_w, t)])
    for a, b in zip(got, ref):
        assert a.item() == pytest.approx(b.item(), rel=1e-5)
    sum(ref).backward()
    sum(got).backward()
    _close(lf.grad, lr.grad, atol=1e-6)


# ---------------------------------------------------------------------------- (ee)
def test_beam_search_decoding():
    """Beam search over a fixed bigram 'language model' with topk / gather / index_select /
    repeat_interleave, checked against exhaustive search."""
    torch = ferrotorch
    torch.manual_seed(0)
    vocab, steps, beam = 5, 4, 3
    log_probs = torch.log_softmax(torch.randn(vocab, vocab) * 2, dim=1)  # next | prev
    start = torch.tensor([0, 3])  # a batch of two prompts

    batch = start.size(0)
    seqs = start.repeat_interleave(beam).view(batch * beam, 1)
    scores = torch.tensor([0.0] + [float("-inf")] * (beam - 1)).repeat(batch)
    for _ in range(steps):
        step_lp = log_probs.index_select(0, seqs[:, -1])                 # (B*beam, V)
        cand = (scores.unsqueeze(1) + step_lp).view(batch, beam * vocab)
        top_scores, top_idx = cand.topk(beam, dim=1)                    # (B, beam)
        origin = torch.div(top_idx, vocab, rounding_mode="floor")
        token = top_idx % vocab
        base = (torch.arange(batch) * beam).unsqueeze(1)
        seqs = torch.cat([seqs[(base + origin).view(-1)], token.view(-1, 1)], dim=1)
        scores = top_scores.view(-1)
    best = scores.view(batch, beam).argmax(1)
    best_seqs = seqs.view(batch, beam, -1)[torch.arange(batch), best]
    # exhaustive search over all vocab**steps continuations
    for b in range(batch):
        grid = torch.cartesian_prod(*[torch.arange(vocab)] * steps)     # (V**steps, steps)
        full = torch.cat([start[b].expand(grid.size(0), 1), grid], dim=1)
        total = log_probs[full[:, :-1], full[:, 1:]].sum(1)
        assert torch.equal(best_seqs[b], full[total.argmax()])
        assert scores.view(batch, beam)[b].max().item() == pytest.approx(total.max().item(),
                                                                         rel=1e-5)
        # gather picks the same per-step scores
        picked = log_probs[best_seqs[b][:-1]].gather(1, best_seqs[b][1:].unsqueeze(1))
        assert picked.sum().item() == pytest.approx(total.max().item(), rel=1e-5)


# ---------------------------------------------------------------------------- (ff)
def grad_reverse_fn(M):
    class GradReverse(M.autograd.Function):
        """Identity forward, gradient times -lambda backward (domain-adversarial training)."""

        @staticmethod
        def forward(ctx, x, lambd):
            ctx.lambd = lambd
            return x.view_as(x)

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output.neg() * ctx.lambd, None

    return GradReverse


def test_domain_adversarial_gradient_reversal():
    torch = ferrotorch
    nn = torch.nn
    F = torch.nn.functional
    torch.manual_seed(0)
    GradReverse = grad_reverse_fn(torch)
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    y = GradReverse.apply(x, 2.0)
    (y * x).sum().backward()  # d/dx = x (through the product) - 2 x (reversed)
    assert torch.allclose(x.grad, -x.detach())
    assert y.grad_fn.name() == "GradReverseBackward" and torch.equal(y, x)

    # source domain: labelled; target domain: shifted, unlabelled
    xs = torch.randn(200, 2)
    ys = (xs[:, 0] > 0).long()
    xt = torch.randn(200, 2) + torch.tensor([0.0, 3.0])
    yt = (xt[:, 0] > 0).long()
    features = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 8), nn.ReLU())
    label_clf = nn.Linear(8, 2)
    domain_clf = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1))
    params = [*features.parameters(), *label_clf.parameters(), *domain_clf.parameters()]
    optimizer = torch.optim.Adam(params, lr=1e-2)
    for step in range(150):
        p = step / 150
        lambd = 2.0 / (1.0 + math.exp(-10 * p)) - 1
        fs, ft = features(xs), features(xt)
        cls_loss = F.cross_entropy(label_clf(fs), ys)
        dom_logits = domain_clf(GradReverse.apply(torch.cat([fs, ft]), lambd)).squeeze(1)
        dom_labels = torch.cat([torch.zeros(200), torch.ones(200)])
        dom_loss = F.binary_cross_entropy_with_logits(dom_logits, dom_labels)
        optimizer.zero_grad()
        (cls_loss + dom_loss).backward()
        optimizer.step()
    with torch.no_grad():
        acc_t = (label_clf(features(xt)).argmax(1) == yt).float().mean().item()
    assert acc_t > 0.9
    assert dom_loss.item() > 0.4  # the domains got hard to tell apart


# ---------------------------------------------------------------------------- (gg)
def test_tabular_dict_batches_bucket_sampler():
    """A tabular model over categorical embeddings + continuous features, fed dict samples
    (default_collate) through a custom BatchSampler; a ConcatDataset/Subset split."""
    torch = ferrotorch
    nn = torch.nn
    data_utils = torch.utils.data
    torch.manual_seed(0)

    class Table(data_utils.Dataset):
        def __init__(self, n, seed):
            g = torch.Generator().manual_seed(seed)
            self.city = torch.randint(0, 5, (n,), generator=g)
            self.kind = torch.randint(0, 3, (n,), generator=g)
            self.num = torch.randn(n, 2, generator=g)
            effect = torch.tensor([0.0, 1.0, -1.0, 2.0, 0.5])
            self.y = effect[self.city] + 0.5 * self.kind.float() + self.num[:, 0] - \
                0.3 * self.num[:, 1]

        def __len__(self):
            return len(self.y)

        def __getitem__(self, i):
            return {"cat": {"city": self.city[i], "kind": self.kind[i]}, "num": self.num[i],
                    "target": self.y[i]}

    class ByCityBatchSampler(data_utils.Sampler):
        """Batches that each hold one city (e.g. to share a cache)."""

        def __init__(self, cities, batch_size):
            self.groups = [(cities == c).nonzero().flatten().tolist() for c in range(5)]
            self.batch_size = batch_size

        def __iter__(self):
            for group in self.groups:
                for i in range(0, len(group), self.batch_size):
                    yield group[i:i + self.batch_size]

        def __len__(self):
            return sum(math.ceil(len(g) / self.batch_size) for g in self.groups)

    class TabularNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.embeds = nn.ModuleDict({"city": nn.Embedding(5, 3), "kind": nn.Embedding(3, 2)})
            self.bn = nn.BatchNorm1d(2)
            self.mlp = nn.Sequential(nn.Linear(3 + 2 + 2, 32), nn.ReLU(), nn.Linear(32, 1))

        def forward(self, cat, num):
            emb = [self.embeds[k](v) for k, v in cat.items()]
            return self.mlp(torch.cat([*emb, self.bn(num)], dim=1)).squeeze(1)

    a, b = Table(150, 0), Table(150, 1)
    full = data_utils.ConcatDataset([a, b])
    assert len(full) == 300 and full[160]["target"] == b[10]["target"]
    train = data_utils.Subset(full, range(0, 240))
    test = data_utils.Subset(full, range(240, 300))
    cities = torch.cat([a.city, b.city])[:240]
    sampler = ByCityBatchSampler(cities, 16)
    loader = data_utils.DataLoader(train, batch_sampler=sampler)
    first = next(iter(loader))
    assert set(first) == {"cat", "num", "target"} and set(first["cat"]) == {"city", "kind"}
    assert first["num"].shape[1] == 2 and len(set(first["cat"]["city"].tolist())) == 1
    assert len(loader) == len(sampler)
    model = TabularNet()
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-2)
    for epoch in range(25):
        model.train()
        for batch in loader:
            pred = model(batch["cat"], batch["num"])
            loss = nn.functional.mse_loss(pred, batch["target"])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    model.eval()
    test_batch = data_utils.default_collate([test[i] for i in range(len(test))])
    with torch.no_grad():
        mse = nn.functional.mse_loss(model(test_batch["cat"], test_batch["num"]),
                                     test_batch["target"]).item()
    assert mse < 0.15


# ---------------------------------------------------------------------------- (hh)
def top_k_top_p_filter(M, logits, top_k=0, top_p=1.0):
    """The usual sampling filter from text-generation scripts."""
    if top_k > 0:
        kth = M.topk(logits, top_k)[0][..., -1, None]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p < 1.0:
        sorted_logits, sorted_indices = M.sort(logits, descending=True)
        cumulative_probs = M.cumsum(M.softmax(sorted_logits, dim=-1), dim=-1)
        sorted_remove = cumulative_probs > top_p
        sorted_remove[..., 1:] = sorted_remove[..., :-1].clone()
        sorted_remove[..., 0] = False
        remove = sorted_remove.scatter(-1, sorted_indices, sorted_remove)
        logits = logits.masked_fill(remove, float("-inf"))
    return logits


def test_sampling_filters_and_multinomial():
    torch = ferrotorch
    torch.manual_seed(0)
    logits = torch.tensor([[2.0, 1.0, 0.5, 0.1, -1.0], [0.0, 3.0, 0.0, 0.0, 2.9]])
    k2 = top_k_top_p_filter(torch, logits, top_k=2)
    assert torch.isinf(k2).sum(1).tolist() == [3, 3]
    p = top_k_top_p_filter(torch, logits, top_p=0.7)
    kept = ~torch.isinf(p)
    assert kept.tolist() == [[True, True, False, False, False],
                             [False, True, False, False, True]]
    probs = torch.softmax(p / 0.8, dim=-1)
    draws = torch.multinomial(probs, 2000, replacement=True)
    assert kept.gather(1, draws).all()
    freq = torch.stack([torch.bincount(d, minlength=5) for d in draws]).float() / 2000
    assert torch.allclose(freq, probs, atol=0.04)
    g = torch.Generator().manual_seed(3)
    a = torch.multinomial(probs, 5, replacement=True, generator=g)
    g.manual_seed(3)
    assert torch.equal(a, torch.multinomial(probs, 5, replacement=True, generator=g))


def test_sampling_filters_match_torch():
    torch = _torch()
    torch.manual_seed(0)
    logits = torch.randn(4, 12)
    lf = ferrotorch.from_numpy(logits.numpy())
    for kw in ({"top_k": 3}, {"top_p": 0.5}, {"top_k": 6, "top_p": 0.8}):
        ref = top_k_top_p_filter(torch, logits, **kw)
        got = top_k_top_p_filter(ferrotorch, lf, **kw)
        assert np.array_equal(np.isinf(_np(got)), np.isinf(_np(ref)))


# ---------------------------------------------------------------------------- (ii)
def test_float64_model_and_default_dtype():
    torch = ferrotorch
    nn = torch.nn
    torch.manual_seed(0)
    prev = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
        assert all(p.dtype == torch.float64 for p in model.parameters())
        x = torch.randn(32, 3)
        assert x.dtype == torch.float64 and torch.tensor([1.5]).dtype == torch.float64
        y = (x ** 2).sum(1, keepdim=True)
        opt = torch.optim.LBFGS(model.parameters(), lr=1, max_iter=50,
                                line_search_fn="strong_wolfe")

        def closure():
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            return loss

        for _ in range(5):
            loss = opt.step(closure)
        assert loss.item() < 1e-2
        # gradcheck needs double precision: the whole model passes it
        inp = torch.randn(2, 3, requires_grad=True)
        assert torch.autograd.gradcheck(model, (inp,))
        assert torch.autograd.gradgradcheck(model, (inp,))
    finally:
        torch.set_default_dtype(prev)
    half = copy.deepcopy(model).float()
    assert half[0].weight.dtype == torch.float32
    with torch.no_grad():
        assert torch.allclose(half(x.float()), model(x).float(), atol=1e-4)
    assert torch.get_default_dtype() == torch.float32


def test_retain_grad_sees_the_gradient_after_tensor_hooks():
    torch = ferrotorch
    h = torch.randn(2, 3, requires_grad=True)
    y = h * 2
    y.retain_grad()
    y.register_hook(lambda g: g * 3)
    y.sum().backward()
    assert torch.equal(h.grad, torch.full((2, 3), 6.0))
    assert torch.equal(y.grad, torch.full((2, 3), 3.0))


# ---------------------------------------------------------------------------- (jj)
class TheModelClass(ferrotorch.nn.Module):
    """The 'Saving and loading models' tutorial's model (module level, so it pickles)."""

    def __init__(self):
        super().__init__()
        self.conv1 = ferrotorch.nn.Conv2d(1, 4, 3)
        self.pool = ferrotorch.nn.MaxPool2d(2, 2)
        self.bn = ferrotorch.nn.BatchNorm1d(4)
        self.fc = ferrotorch.nn.Linear(4, 3)

    def forward(self, x):
        x = self.pool(ferrotorch.relu(self.conv1(x))).mean(dim=(2, 3))
        return self.fc(self.bn(x))


def test_save_load_entire_model_and_general_checkpoint(tmp_path):
    import argparse

    torch = ferrotorch
    torch.manual_seed(0)
    model = TheModelClass()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
    x = torch.randn(4, 1, 6, 6)
    for _ in range(3):
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()
    model.eval()
    # the entire model
    PATH = tmp_path / "model.pt"
    torch.save(model, PATH)
    with pytest.raises(pickle.UnpicklingError, match="weights_only=False"):
        torch.load(PATH)
    loaded = torch.load(PATH, weights_only=False)
    loaded.eval()
    assert type(loaded) is TheModelClass and loaded is not model
    with torch.no_grad():
        assert torch.equal(loaded(x), model(x))
    assert torch.equal(loaded.bn.running_mean, model.bn.running_mean)
    # a general checkpoint with the run's arguments alongside the state dicts
    args = argparse.Namespace(lr=0.001, epochs=3, arch="TheModelClass")
    buf = io.BytesIO()
    torch.save({"epoch": 3, "model_state_dict": model.state_dict(),
                "optimizer_state_dict": optimizer.state_dict(), "args": args}, buf)
    buf.seek(0)
    checkpoint = torch.load(buf, weights_only=False)
    assert checkpoint["args"] == args and checkpoint["epoch"] == 3
    fresh = TheModelClass()
    fresh.load_state_dict(checkpoint["model_state_dict"])
    fresh_opt = torch.optim.SGD(fresh.parameters(), lr=0.1)
    fresh_opt.load_state_dict(checkpoint["optimizer_state_dict"])
    assert fresh_opt.param_groups[0]["lr"] == 0.001
    # the weights alone still load with the safe default
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    buf.seek(0)
    assert list(torch.load(buf)) == list(model.state_dict())
    with pytest.raises(TypeError, match="cannot store"):
        torch.save({"f": lambda v: v}, io.BytesIO())


def _batched_vjp_program(M, x, w):
    """Jacobian rows of a small network in one call (``is_grads_batched``), then a second
    derivative through them."""
    y = M.tanh(x @ w).sum(0)                                   # (3,)
    (jac,) = M.autograd.grad(y, x, M.eye(3), is_grads_batched=True, create_graph=True)
    (jac_w,) = M.autograd.grad(y, w, M.eye(3) * 2, is_grads_batched=True, retain_graph=True)
    jac.square().sum().backward()
    return jac, jac_w


def test_is_grads_batched_jacobian():
    torch = ferrotorch
    torch.manual_seed(0)
    x = torch.randn(2, 4, requires_grad=True)
    w = torch.randn(4, 3, requires_grad=True)
    jac, jac_w = _batched_vjp_program(torch, x, w)
    assert jac.shape == (3, 2, 4) and jac_w.shape == (3, 4, 3)
    full = torch.autograd.functional.jacobian(lambda v: torch.tanh(v @ w).sum(0), x)
    assert torch.allclose(jac, full, atol=1e-6)
    assert w.grad is not None and x.grad is not None
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar "
                                           "outputs"):
        torch.autograd.grad(torch.tanh(x @ w).sum(0), x, is_grads_batched=True)


def test_is_grads_batched_matches_torch():
    torch = _torch()
    torch.manual_seed(0)
    x, w = torch.randn(2, 4, requires_grad=True), torch.randn(4, 3, requires_grad=True)
    xf = ferrotorch.from_numpy(x.detach().numpy()).requires_grad_()
    wf = ferrotorch.from_numpy(w.detach().numpy()).requires_grad_()
    ref = _batched_vjp_program(torch, x, w)
    got = _batched_vjp_program(ferrotorch, xf, wf)
    for a, b in zip(got, ref):
        _close(a, b, atol=1e-6)
    _close(xf.grad, x.grad, atol=1e-5)
    _close(wf.grad, w.grad, atol=1e-5)


# ---------------------------------------------------------------------------- (kk)
def test_ppo_continuous_control():
    """PPO by hand on a 1-D point mass that must move to a target: a Gaussian policy
    (Normal, log_prob summed over action dims, entropy), GAE advantages, the clipped surrogate
    objective, a value loss, minibatches from randperm."""
    torch = ferrotorch
    nn = torch.nn
    Normal = torch.distributions.Normal
    torch.manual_seed(0)

    class ActorCritic(nn.Module):
        def __init__(self):
            super().__init__()
            self.actor = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 1))
            self.critic = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 1))
            self.log_std = nn.Parameter(torch.full((1,), -0.5))

        def dist(self, obs):
            return Normal(self.actor(obs), self.log_std.exp().expand(obs.size(0), 1))

    def rollout(model, n_envs=16, horizon=10):
        pos = torch.rand(n_envs, 1) * 4 - 2
        target = torch.rand(n_envs, 1) * 4 - 2
        obs_l, act_l, logp_l, rew_l, val_l = [], [], [], [], []
        with torch.no_grad():
            for t in range(horizon):
                obs = torch.cat([pos, target - pos], dim=1)
                d = model.dist(obs)
                action = d.sample()
                obs_l.append(obs)
                act_l.append(action)
                logp_l.append(d.log_prob(action).sum(-1))
                val_l.append(model.critic(obs).squeeze(-1))
                pos = pos + action.clamp(-1, 1) * 0.5
                rew_l.append(-(target - pos).abs().squeeze(-1))
            last_val = model.critic(torch.cat([pos, target - pos], dim=1)).squeeze(-1)
        return (torch.stack(obs_l), torch.stack(act_l), torch.stack(logp_l),
                torch.stack(rew_l), torch.stack(val_l), last_val)

    def gae(rewards, values, last_val, gamma=0.95, lam=0.9):
        adv = torch.zeros_like(rewards)
        next_adv = torch.zeros_like(last_val)
        next_val = last_val
        for t in reversed(range(rewards.size(0))):
            delta = rewards[t] + gamma * next_val - values[t]
            next_adv = delta + gamma * lam * next_adv
            adv[t] = next_adv
            next_val = values[t]
        return adv, adv + values

    model = ActorCritic()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    clip = 0.2
    mean_rewards = []
    for iteration in range(25):
        obs, act, old_logp, rew, val, last_val = rollout(model)
        mean_rewards.append(rew.mean().item())
        adv, returns = gae(rew, val, last_val)
        obs, act, old_logp = obs.flatten(0, 1), act.flatten(0, 1), old_logp.flatten()
        adv, returns = adv.flatten(), returns.flatten()
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        for epoch in range(4):
            for idx in torch.randperm(obs.size(0)).split(40):
                d = model.dist(obs[idx])
                logp = d.log_prob(act[idx]).sum(-1)
                ratio = (logp - old_logp[idx]).exp()
                surr = torch.min(ratio * adv[idx],
                                 torch.clamp(ratio, 1 - clip, 1 + clip) * adv[idx])
                value_loss = (model.critic(obs[idx]).squeeze(-1) - returns[idx]).pow(2).mean()
                loss = -surr.mean() + 0.5 * value_loss - 0.001 * d.entropy().sum(-1).mean()
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(model.parameters(), 0.5)
                optimizer.step()
    assert np.mean(mean_rewards[-5:]) > np.mean(mean_rewards[:5]) + 0.25
    with torch.no_grad():  # the mean action points toward the target
        obs = torch.tensor([[0.0, 1.5], [0.0, -1.5]])
        mu = model.actor(obs).squeeze(-1)
    assert mu[0].item() > 0.3 and mu[1].item() < -0.3


# ---------------------------------------------------------------------------- (ll)
def bayes_linear(M):
    nn = M.nn
    F = M.nn.functional
    D = M.distributions

    class BayesLinear(nn.Module):
        """Bayes by backprop: a factorised Gaussian posterior over the weights, sampled with
        the reparameterisation trick; ``kl`` against a N(0, 1) prior."""

        def __init__(self, n_in, n_out):
            super().__init__()
            self.w_mu = nn.Parameter(M.zeros(n_out, n_in).uniform_(-0.2, 0.2))
            self.w_rho = nn.Parameter(M.full((n_out, n_in), -4.0))
            self.b_mu = nn.Parameter(M.zeros(n_out))
            self.b_rho = nn.Parameter(M.full((n_out,), -4.0))

        def forward(self, x):
            w_sigma, b_sigma = F.softplus(self.w_rho), M.log1p(M.exp(self.b_rho))
            w = self.w_mu + w_sigma * M.randn_like(w_sigma)
            b = self.b_mu + b_sigma * M.randn_like(b_sigma)
            self.kl = D.kl_divergence(D.Normal(self.w_mu, w_sigma), D.Normal(0.0, 1.0)).sum() \
                + D.kl_divergence(D.Normal(self.b_mu, b_sigma), D.Normal(0.0, 1.0)).sum()
            return F.linear(x, w, b)

    return BayesLinear


def test_bayes_by_backprop_uncertainty():
    torch = ferrotorch
    nn = torch.nn
    torch.manual_seed(0)
    BayesLinear = bayes_linear(torch)
    x = torch.cat([torch.linspace(-2, -0.5, 40), torch.linspace(0.5, 2, 40)]).unsqueeze(1)
    y = x ** 3 / 4 + 0.05 * torch.randn_like(x)
    model = nn.Sequential(BayesLinear(1, 32), nn.ReLU(), BayesLinear(32, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-2)
    for step in range(400):
        pred = model(x)
        kl = sum(m.kl for m in model.modules() if isinstance(m, BayesLinear))
        loss = nn.functional.gaussian_nll_loss(pred, y, torch.full_like(y, 0.05 ** 2),
                                               reduction="sum") + kl / 10
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        grid = torch.tensor([[-1.5], [1.5], [5.0]])
        samples = torch.stack([model(grid) for _ in range(50)])
    mean, std = samples.mean(0).squeeze(1), samples.std(0).squeeze(1)
    assert abs(mean[0].item() - (-1.5) ** 3 / 4) < 0.25 and abs(mean[1].item() - 1.5 ** 3 / 4) < 0.25
    assert std[2].item() > 2 * max(std[0].item(), std[1].item())  # unsure far from the data


# ---------------------------------------------------------------------------- (mm)
def test_gumbel_softmax_categorical_vae():
    """A VAE with a categorical latent: F.gumbel_softmax(hard=True) with its straight-through
    gradient, a temperature anneal, and a KL to the uniform prior."""
    torch = ferrotorch
    nn = torch.nn
    F = torch.nn.functional
    torch.manual_seed(0)
    K = 4
    prototypes = torch.eye(8)[[0, 2, 4, 6]] + torch.eye(8)[[1, 3, 5, 7]]
    labels = torch.randint(0, K, (256,))
    data = (prototypes[labels] + 0.1 * torch.randn(256, 8)).clamp(0, 1)
    encoder = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, K))
    decoder = nn.Sequential(nn.Linear(K, 32), nn.ReLU(), nn.Linear(32, 8))
    optimizer = torch.optim.Adam([*encoder.parameters(), *decoder.parameters()], lr=1e-2)
    for step in range(200):
        tau = max(0.5, math.exp(-0.01 * step))
        logits = encoder(data)
        z = F.gumbel_softmax(logits, tau=tau, hard=True)
        assert torch.equal(z.sum(-1), torch.ones(256)) and ((z == 0) | (z == 1)).all()
        recon = F.binary_cross_entropy_with_logits(decoder(z), data, reduction="sum") / 256
        q = F.softmax(logits, dim=-1)
        kl = (q * (F.log_softmax(logits, -1) + math.log(K))).sum(-1).mean()
        loss = recon + kl
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert encoder[0].weight.grad.abs().sum().item() > 0  # the straight-through path
    with torch.no_grad():
        codes = encoder(data).argmax(-1)
    # each prototype maps to a single code, and different prototypes to different codes
    mapping = {}
    for lab, code in zip(labels.tolist(), codes.tolist()):
        mapping.setdefault(lab, collections.Counter())[code] += 1
    majority = {lab: c.most_common(1)[0] for lab, c in mapping.items()}
    assert len({code for code, _ in majority.values()}) == K
    purity = sum(n for _, n in majority.values()) / 256
    assert purity > 0.95


def test_gumbel_softmax_straight_through_matches_torch():
    torch = _torch()
    torch.manual_seed(0)
    logits = torch.randn(5, 4)
    w = torch.randn(4, 3)
    lf = ferrotorch.from_numpy(logits.numpy()).requires_grad_()
    logits.requires_grad_()
    # the same Gumbel noise in both: compute the soft sample by hand and apply the
    # straight-through estimator the way F.gumbel_softmax does
    u = torch.rand(5, 4).clamp(1e-6, 1 - 1e-6)
    g = -torch.log(-torch.log(u))
    gf = ferrotorch.from_numpy(g.numpy())

    def st(M, logits, g, tau=0.7):
        y_soft = ((logits + g) / tau).softmax(-1)
        index = y_soft.max(-1, keepdim=True)[1]
        y_hard = M.zeros_like(logits).scatter_(-1, index, 1.0)
        return y_hard - y_soft.detach() + y_soft

    ref, got = st(torch, logits, g), st(ferrotorch, lf, gf)
    _close(got, ref)
    (ref @ w).square().sum().backward()
    (got @ ferrotorch.from_numpy(w.numpy())).square().sum().backward()
    _close(lf.grad, logits.grad, atol=1e-5)
    # gumbel_softmax itself: one-hot rows, soft rows that sum to one
    hard = ferrotorch.nn.functional.gumbel_softmax(lf, tau=0.5, hard=True)
    soft = ferrotorch.nn.functional.gumbel_softmax(lf, tau=0.5)
    assert ferrotorch.equal(hard.sum(-1), ferrotorch.ones(5))
    assert ferrotorch.allclose(soft.sum(-1), ferrotorch.ones(5))


# ---------------------------------------------------------------------------- (nn)
def volume_render(M, sigma, rgb, t_vals):
    """NeRF's quadrature: alpha compositing with an exclusive cumprod of transmittance."""
    deltas = M.cat([t_vals[..., 1:] - t_vals[..., :-1],
                    M.full_like(t_vals[..., :1], 1e10)], dim=-1)
    alpha = 1.0 - M.exp(-M.relu(sigma) * deltas)
    trans = M.cumprod(M.cat([M.ones_like(alpha[..., :1]), 1.0 - alpha + 1e-10], dim=-1),
                      dim=-1)[..., :-1]
    weights = alpha * trans
    return (weights.unsqueeze(-1) * rgb).sum(dim=-2), weights


def sample_pdf(M, bins, weights, n_samples):
    """Inverse-transform sampling of the coarse weights (hierarchical sampling), with
    searchsorted, deterministic (evenly spaced u); ``bins`` holds one more edge than
    ``weights`` has entries."""
    pdf = (weights + 1e-5) / (weights + 1e-5).sum(-1, keepdim=True)
    cdf = M.cat([M.zeros_like(pdf[..., :1]), M.cumsum(pdf, -1)], -1)
    u = M.linspace(0.0, 1.0, n_samples).expand(*cdf.shape[:-1], n_samples).contiguous()
    inds = M.searchsorted(cdf, u, right=True)
    below = M.clamp(inds - 1, min=0)
    above = M.clamp(inds, max=cdf.shape[-1] - 1)
    cdf_g0, cdf_g1 = M.gather(cdf, -1, below), M.gather(cdf, -1, above)
    bins_g0, bins_g1 = M.gather(bins, -1, below), M.gather(bins, -1, above)
    denom = M.where(cdf_g1 - cdf_g0 < 1e-5, M.ones_like(cdf_g0), cdf_g1 - cdf_g0)
    return bins_g0 + (u - cdf_g0) / denom * (bins_g1 - bins_g0)


def positional_encoding(M, x, n_freqs=4):
    freqs = 2.0 ** M.arange(n_freqs) * math.pi
    angles = x.unsqueeze(-1) * freqs
    return M.cat([x, M.sin(angles).flatten(-2), M.cos(angles).flatten(-2)], dim=-1)


def test_tiny_nerf_fits_a_1d_scene():
    """Rays along z through a 2-D plane: the density field must put an opaque red slab at
    depth ~ 2 + x (x the ray's position), learned from rendered colours only."""
    torch = ferrotorch
    nn = torch.nn
    torch.manual_seed(0)
    xs = torch.linspace(-0.5, 0.5, 16)
    t_vals = torch.linspace(0.0, 4.0, 32).expand(16, 32)
    depth = 2.0 + xs
    # the true scene: an opaque slab, red in front of a blue background
    pts_x = xs.unsqueeze(1).expand(16, 32)
    true_sigma = torch.where((t_vals > depth.unsqueeze(1)) & (t_vals < depth.unsqueeze(1) + 0.5),
                             torch.full_like(t_vals, 20.0), torch.zeros_like(t_vals))
    colours = torch.tensor([1.0, 0.0, 0.0]).expand(16, 32, 3)
    target, true_w = volume_render(torch, true_sigma, colours, t_vals)
    mlp = nn.Sequential(nn.Linear(2 + 2 * 2 * 4, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                        nn.Linear(64, 1))
    with torch.no_grad():  # start with some density everywhere: relu(sigma) <= 0 at every
        mlp[-1].bias.fill_(1.0)  # sample has no gradient (an init that is dead stays dead)
    optimizer = torch.optim.Adam(mlp.parameters(), lr=5e-3)
    inp = positional_encoding(torch, torch.stack([pts_x, t_vals / 4], dim=-1))
    target_depth = (true_w * t_vals).sum(-1)
    for step in range(300):
        sigma = mlp(inp).squeeze(-1)
        _, w = volume_render(torch, sigma, colours, t_vals)
        pred_depth = (w * t_vals).sum(-1)
        loss = nn.functional.mse_loss(pred_depth, target_depth) + \
            nn.functional.mse_loss(w.sum(-1), torch.ones(16))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.02
    with torch.no_grad():
        _, w = volume_render(torch, mlp(inp).squeeze(-1), colours, t_vals)
        edges = torch.cat([t_vals, t_vals[:, -1:] + 4.0 / 31], dim=-1) - 2.0 / 31
        fine = sample_pdf(torch, edges, w, 8)
    assert fine.shape == (16, 8)
    # the rendered depth is the scene's; fine samples are sorted along each ray, inside it
    assert ((w * t_vals).sum(-1) - target_depth).abs().max().item() < 0.05
    assert (fine[:, 1:] >= fine[:, :-1]).all()
    assert fine.min().item() >= edges.min().item() and fine.max().item() <= edges.max().item()
    assert target.shape == (16, 3)


def test_reverse_cumulative_sums_in_cumsum_and_cumprod_backward():
    torch = ferrotorch
    y = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    torch.cumsum(y, 0).backward(torch.tensor([1e8, 1.0, 1.0]))
    cumsum_ok = y.grad.tolist() == [1e8, 2.0, 1.0]
    # a row of NeRF's 1 - alpha: the last entry (1e-10) does not reach the kept outputs
    x = torch.tensor([1.0, 0.6065306663513184, 1.0, 0.3678794503211975, 0.1353352665901184,
                      1e-10], requires_grad=True)
    torch.cumprod(x, 0).backward(torch.tensor([0.0, 0.0, 1.264241099357605, 2.593994140625,
                                               4.0, 0.0]))
    assert cumsum_ok and x.grad[-1].item() == 0.0  # ferrotorch: 1192.09


def test_volume_rendering_and_pdf_sampling_match_torch():
    torch = _torch()
    torch.manual_seed(0)
    sigma, rgb = torch.randn(3, 10) * 3, torch.rand(3, 10, 3)
    t = torch.sort(torch.rand(3, 10) * 4, dim=-1).values
    sigma.requires_grad_()
    sf = ferrotorch.from_numpy(sigma.detach().numpy()).requires_grad_()
    rf, tf = ferrotorch.from_numpy(rgb.numpy()), ferrotorch.from_numpy(t.numpy())
    (c_ref, w_ref), (c, w) = volume_render(torch, sigma, rgb, t), volume_render(ferrotorch, sf,
                                                                                   rf, tf)
    _close(c, c_ref, atol=1e-6)
    _close(w, w_ref, atol=1e-6)
    c_ref.sum().backward()
    c.sum().backward()
    _close(sf.grad, sigma.grad, atol=1e-5)
    edges = torch.cat([torch.zeros(3, 1), t], dim=-1)
    ef = ferrotorch.from_numpy(edges.numpy())
    _close(sample_pdf(ferrotorch, ef, w.detach(), 7), sample_pdf(torch, edges, w_ref.detach(), 7),
           atol=1e-5)
    x = torch.rand(4, 3)
    _close(positional_encoding(ferrotorch, ferrotorch.from_numpy(x.numpy())),
           positional_encoding(torch, x), atol=1e-6)


# ---------------------------------------------------------------------------- (oo)
def migrating_model(M, log):
    nn = M.nn

    class Encoder(nn.Module):
        """Version 2 of a model: ``proj`` was called ``fc`` in version-1 checkpoints, and a new
        ``head`` is not in them at all. State-dict hooks migrate old checkpoints."""

        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(3, 4)
            self.head = nn.Linear(4, 2)
            self.register_buffer("cache", M.zeros(4))
            self.register_load_state_dict_pre_hook(self._rename_v1_keys)
            self.register_load_state_dict_post_hook(self._allow_missing_head)
            self.register_state_dict_pre_hook(lambda mod, prefix, keep_vars:
                                              log.append(("pre", prefix, keep_vars)))
            self.register_state_dict_post_hook(self._drop_cache)

        @staticmethod
        def _rename_v1_keys(module, state_dict, prefix, local_metadata, strict, missing_keys,
                            unexpected_keys, error_msgs):
            for name in ("weight", "bias"):
                old = f"{prefix}fc.{name}"
                if old in state_dict:
                    state_dict[f"{prefix}proj.{name}"] = state_dict.pop(old)

        @staticmethod
        def _allow_missing_head(module, incompatible_keys):
            for key in list(incompatible_keys.missing_keys):
                if ".head." in "." + key or key.endswith("cache"):
                    incompatible_keys.missing_keys.remove(key)

        @staticmethod
        def _drop_cache(module, state_dict, prefix, local_metadata):
            state_dict.pop(prefix + "cache", None)

        def forward(self, x):
            return self.head(self.proj(x).relu())

    return nn.Sequential(Encoder())


def test_state_dict_hooks_migrate_old_checkpoints():
    torch = ferrotorch
    torch.manual_seed(0)
    log = []
    model = migrating_model(torch, log)
    sd = model.state_dict()
    assert list(sd) == ["0.proj.weight", "0.proj.bias", "0.head.weight", "0.head.bias"]
    assert log == [("pre", "0.", False)]
    v1 = {"0.fc.weight": torch.ones(4, 3), "0.fc.bias": torch.zeros(4)}
    result = model.load_state_dict(v1)  # strict, but the post hook forgave the head
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert torch.equal(model[0].proj.weight, torch.ones(4, 3))
    with pytest.raises(RuntimeError, match="post-hook must return None"):
        model[0].register_state_dict_post_hook(lambda *a: {})
        model.state_dict()


def test_state_dict_hooks_match_torch():
    torch = _torch()
    logs = [], []
    ref, ours = migrating_model(torch, logs[0]), migrating_model(ferrotorch, logs[1])
    assert list(ours.state_dict(keep_vars=True)) == list(ref.state_dict(keep_vars=True))
    assert logs[0] == logs[1]
    v1 = {"0.fc.weight": np.ones((4, 3), np.float32), "0.fc.bias": np.zeros(4, np.float32),
          "0.extra": np.zeros(1, np.float32)}
    with pytest.raises(RuntimeError) as e_ref:
        ref.load_state_dict({k: torch.from_numpy(v) for k, v in v1.items()})
    with pytest.raises(RuntimeError) as e_ours:
        ours.load_state_dict({k: ferrotorch.from_numpy(v) for k, v in v1.items()})
    assert str(e_ours.value) == str(e_ref.value)
    r_ref = ref.load_state_dict({k: torch.from_numpy(v) for k, v in v1.items()}, strict=False)
    r = ours.load_state_dict({k: ferrotorch.from_numpy(v) for k, v in v1.items()}, strict=False)
    assert (r.missing_keys, r.unexpected_keys) == (r_ref.missing_keys, r_ref.unexpected_keys)
