# ruff: noqa: B007  (loop variables named as in the tutorials)
"""End-to-end programs written the way PyTorch tutorials write them, run with
``import ferrotorch as torch``. Each trains a small model deterministically and checks that it
learned (loss below a threshold, or a task-level check). See test_nn_train.py for the MLP and
``Linear(3, 1)`` polynomial-fit programs."""

import math
import random

import ferrotorch as torch
import ferrotorch.nn.functional as F


# ---------------------------------------------------------------------------- (a)
def test_dynamic_net_polynomial():
    # "Learning PyTorch with examples: PyTorch: Control Flow + Weight Sharing". A third-fifth
    # order polynomial whose degree is chosen at random on every forward pass, reusing the
    # same parameter ``e`` for the 4th and 5th order terms.
    random.seed(0)
    torch.manual_seed(0)

    class DynamicNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Parameter(torch.randn(()))
            self.b = torch.nn.Parameter(torch.randn(()))
            self.c = torch.nn.Parameter(torch.randn(()))
            self.d = torch.nn.Parameter(torch.randn(()))
            self.e = torch.nn.Parameter(torch.randn(()))

        def forward(self, x):
            y = self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3
            for exp in range(4, random.randint(4, 6)):
                y = y + self.e * x ** exp
            return y

        def string(self):
            return (f"y = {self.a.item()} + {self.b.item()} x + {self.c.item()} x^2 + "
                    f"{self.d.item()} x^3 + {self.e.item()} x^4 ? + {self.e.item()} x^5 ?")

    x = torch.linspace(-math.pi, math.pi, 2000)
    y = torch.sin(x)

    model = DynamicNet()
    criterion = torch.nn.MSELoss(reduction="sum")
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-8, momentum=0.9)
    first = None
    for t in range(2000):  # the tutorial runs 30000 steps
        y_pred = model(x)
        loss = criterion(y_pred, y)
        if first is None:
            first = loss.item()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert "x^3" in model.string()
    with torch.no_grad():
        final = criterion(model.a + model.b * x + model.c * x ** 2 + model.d * x ** 3, y).item()
    assert final < 0.01 * first, (first, final)
    assert final < 1500.0  # summed over 2000 points; still falling (tutorial: 30000 steps)


# ---------------------------------------------------------------------------- (b)
def test_char_lstm_language_model_memorises_text():
    torch.manual_seed(0)
    text = "the quick brown fox jumps over the lazy dog. "
    chars = sorted(set(text))
    stoi = {ch: i for i, ch in enumerate(chars)}
    itos = {i: ch for ch, i in stoi.items()}
    data = torch.tensor([stoi[c] for c in text * 2], dtype=torch.long)

    class CharLSTM(torch.nn.Module):
        def __init__(self, vocab_size, embed_dim=16, hidden_dim=48):
            super().__init__()
            self.embed = torch.nn.Embedding(vocab_size, embed_dim)
            # hidden_dim=48 would make weight_hh 256x64 = 16384 elements, where main's
            # in-place ops under no_grad (the optimizer step) currently fail: grad mode is
            # not carried to the kernel thread pool. Kept below that until it is fixed.
            self.lstm = torch.nn.LSTM(embed_dim, hidden_dim, batch_first=True)
            self.fc = torch.nn.Linear(hidden_dim, vocab_size)

        def forward(self, x, hidden=None):
            out, hidden = self.lstm(self.embed(x), hidden)
            return self.fc(out), hidden

    model = CharLSTM(len(chars))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    criterion = torch.nn.CrossEntropyLoss()
    seq_len = 20
    starts = list(range(0, len(text), 3))
    inputs = torch.stack([data[s:s + seq_len] for s in starts])
    targets = torch.stack([data[s + 1:s + seq_len + 1] for s in starts])
    for epoch in range(120):
        model.train()
        optimizer.zero_grad()
        logits, _ = model(inputs)
        loss = criterion(logits.reshape(-1, len(chars)), targets.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
    assert loss.item() < 0.1, loss.item()

    # Greedy generation from a prompt, carrying the hidden state.
    model.eval()
    prompt = "the quick"
    with torch.no_grad():
        x = torch.tensor([[stoi[c] for c in prompt]])
        logits, hidden = model(x)
        out = prompt
        nxt = logits[0, -1].argmax().item()
        for _ in range(len(text) - len(prompt)):
            out += itos[nxt]
            logits, hidden = model(torch.tensor([[nxt]]), hidden)
            nxt = logits[0, -1].argmax().item()
    assert out == text[:len(out)], out


# ---------------------------------------------------------------------------- (c)
def test_transformer_encoder_learns_sequence_reversal():
    torch.manual_seed(0)
    vocab, seq_len, d_model = 6, 6, 32

    class Reverser(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(vocab, d_model)
            self.pos = torch.nn.Parameter(torch.randn(1, seq_len, d_model))
            layer = torch.nn.TransformerEncoderLayer(d_model, nhead=4, dim_feedforward=64,
                                                     dropout=0.0, batch_first=True)
            self.encoder = torch.nn.TransformerEncoder(layer, num_layers=2)
            self.head = torch.nn.Linear(d_model, vocab)

        def forward(self, src):
            h = self.embed(src) + self.pos
            return self.head(self.encoder(h))

    model = Reverser()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(0)
    for step in range(120):
        src = torch.randint(0, vocab, (32, seq_len), generator=gen)
        tgt = src.flip(1)
        logits = model(src)
        loss = loss_fn(logits.reshape(-1, vocab), tgt.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        src = torch.randint(0, vocab, (256, seq_len), generator=gen)
        acc = (model(src).argmax(-1) == src.flip(1)).float().mean().item()
    assert loss.item() < 0.05, loss.item()
    assert acc > 0.99, acc


# ---------------------------------------------------------------------------- (d)
def test_gan_on_1d_gaussian():
    torch.manual_seed(0)
    latent_dim, real_mean, real_std = 4, 3.0, 0.5

    generator = torch.nn.Sequential(
        torch.nn.Linear(latent_dim, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    discriminator = torch.nn.Sequential(
        torch.nn.Linear(1, 16), torch.nn.LeakyReLU(0.2), torch.nn.Linear(16, 1))
    criterion = torch.nn.BCEWithLogitsLoss()
    opt_g = torch.optim.Adam(generator.parameters(), lr=2e-3, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(discriminator.parameters(), lr=2e-3, betas=(0.5, 0.999))
    batch = 64
    ones = torch.ones(batch, 1)
    zeros = torch.zeros(batch, 1)
    for step in range(800):
        # Discriminator: real -> 1, fake -> 0 (fake detached: no generator gradient).
        real = torch.randn(batch, 1) * real_std + real_mean
        fake = generator(torch.randn(batch, latent_dim))
        opt_d.zero_grad()
        loss_d = criterion(discriminator(real), ones) + \
            criterion(discriminator(fake.detach()), zeros)
        loss_d.backward()
        opt_d.step()
        # Generator: make the discriminator call fakes real.
        opt_g.zero_grad()
        loss_g = criterion(discriminator(fake), ones)
        loss_g.backward()
        opt_g.step()
    with torch.no_grad():
        samples = generator(torch.randn(2000, latent_dim))
    mean, std = samples.mean().item(), samples.std().item()
    assert abs(mean - real_mean) < 0.3, (mean, std)
    assert 0.2 < std < 1.0, (mean, std)
    # The discriminator is near chance on converged fakes: neither loss has collapsed.
    assert 0.3 < loss_g.item() < 3.0 and loss_d.item() > 0.5


# ---------------------------------------------------------------------------- (e)
def test_custom_autograd_function_legendre():
    # "Learning PyTorch with examples: PyTorch: Defining new autograd Functions".
    class LegendrePolynomial3(torch.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            ctx.save_for_backward(input)
            return 0.5 * (5 * input ** 3 - 3 * input)

        @staticmethod
        def backward(ctx, grad_output):
            input, = ctx.saved_tensors
            return grad_output * 1.5 * (5 * input ** 2 - 1)

    dtype = torch.float
    device = torch.device("cpu")
    x = torch.linspace(-math.pi, math.pi, 2000, device=device, dtype=dtype)
    y = torch.sin(x)
    a = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
    b = torch.full((), -1.0, device=device, dtype=dtype, requires_grad=True)
    c = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
    d = torch.full((), 0.3, device=device, dtype=dtype, requires_grad=True)

    learning_rate = 5e-6
    losses = []
    for t in range(2000):
        P3 = LegendrePolynomial3.apply
        y_pred = a + b * P3(c + d * x)
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            a -= learning_rate * a.grad
            b -= learning_rate * b.grad
            c -= learning_rate * c.grad
            d -= learning_rate * d.grad
            a.grad = None
            b.grad = None
            c.grad = None
            d.grad = None
    # The tutorial prints ~9 at the end of its 2000 iterations.
    assert losses[-1] < 15.0 and losses[-1] < 0.05 * losses[0], (losses[0], losses[-1])
    # The custom backward agrees with autograd through the same formula.
    z = torch.randn(5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(LegendrePolynomial3.apply, (z,))


# ---------------------------------------------------------------------------- (f)
def test_gru_sequence_classifier_with_dataloader():
    # A "classify a sequence" program: does the sequence's running sum ever exceed 2?
    from ferrotorch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(0)
    n, seq_len = 512, 8
    x = torch.randn(n, seq_len, 1)
    y = (x.cumsum(1).amax(1).squeeze(1) > 2.0).long()

    class Classifier(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = torch.nn.GRU(1, 32, batch_first=True)
            self.out = torch.nn.Linear(32, 2)

        def forward(self, x):
            _, h_n = self.rnn(x)
            return self.out(h_n[-1])

    model = Classifier()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True,
                        generator=torch.Generator().manual_seed(0))
    for epoch in range(12):
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            optimizer.step()
    with torch.no_grad():
        acc = (model(x).argmax(1) == y).float().mean().item()
    baseline = max(y.float().mean().item(), 1 - y.float().mean().item())
    assert acc > 0.9 and acc > baseline + 0.1, (acc, baseline)


# ---------------------------------------------------------------------------- (g)
def test_transformer_seq2seq_with_masks_and_greedy_decoding():
    # The structure of the "language translation with nn.Transformer" tutorial on a toy
    # task: translate a padded token sequence into its reverse, BOS ... EOS, with padding
    # masks, a causal target mask and greedy decoding.
    torch.manual_seed(0)
    PAD, BOS, EOS = 0, 1, 2
    vocab, d_model, max_len = 8, 32, 7

    class Seq2Seq(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.src_embed = torch.nn.Embedding(vocab, d_model)
            self.tgt_embed = torch.nn.Embedding(vocab, d_model)
            self.pos = torch.nn.Parameter(torch.randn(max_len + 2, d_model))
            self.transformer = torch.nn.Transformer(
                d_model=d_model, nhead=4, num_encoder_layers=1, num_decoder_layers=1,
                dim_feedforward=64, dropout=0.0, batch_first=True)
            self.generator = torch.nn.Linear(d_model, vocab)

        def encode(self, src, src_padding_mask):
            x = self.src_embed(src) + self.pos[:src.size(1)]
            return self.transformer.encoder(x, src_key_padding_mask=src_padding_mask)

        def decode(self, tgt, memory, tgt_mask, memory_padding_mask):
            y = self.tgt_embed(tgt) + self.pos[:tgt.size(1)]
            return self.transformer.decoder(y, memory, tgt_mask=tgt_mask,
                                            memory_key_padding_mask=memory_padding_mask)

        def forward(self, src, tgt, src_padding_mask, tgt_mask):
            memory = self.encode(src, src_padding_mask)
            return self.generator(self.decode(tgt, memory, tgt_mask, src_padding_mask))

    def make_batch(gen, n):
        lengths = torch.randint(2, max_len - 1, (n,), generator=gen)
        toks = torch.randint(3, vocab, (n, max_len), generator=gen)
        pos = torch.arange(max_len).unsqueeze(0)
        src = torch.where(pos < lengths.unsqueeze(1), toks, torch.tensor(PAD))
        tgt = torch.full((n, max_len + 1), PAD, dtype=torch.long)
        for i in range(n):
            L = int(lengths[i])
            seq = [BOS] + src[i, :L].flip(0).tolist() + [EOS]
            tgt[i, :len(seq)] = torch.tensor(seq)
        return src, tgt

    model = Seq2Seq()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    loss_fn = torch.nn.CrossEntropyLoss(ignore_index=PAD)
    gen = torch.Generator().manual_seed(0)
    losses = []
    for step in range(150):
        src, tgt = make_batch(gen, 32)
        tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
        tgt_mask = torch.nn.Transformer.generate_square_subsequent_mask(tgt_in.size(1))
        logits = model(src, tgt_in, src == PAD, tgt_mask)
        loss = loss_fn(logits.reshape(-1, vocab), tgt_out.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert sum(losses[-10:]) / 10 < 0.1, losses[-10:]

    model.eval()
    src, tgt = make_batch(gen, 50)
    with torch.no_grad():
        memory = model.encode(src, src == PAD)
        ys = torch.full((50, 1), BOS, dtype=torch.long)
        for _ in range(max_len):
            mask = torch.nn.Transformer.generate_square_subsequent_mask(ys.size(1))
            out = model.generator(model.decode(ys, memory, mask, src == PAD))
            ys = torch.cat([ys, out[:, -1].argmax(-1, keepdim=True)], 1)
    correct = 0
    for i in range(50):
        expected = tgt[i].tolist()
        n = expected.index(EOS) + 1
        correct += ys[i, :n].tolist() == expected[:n]
    assert correct >= 48, correct
