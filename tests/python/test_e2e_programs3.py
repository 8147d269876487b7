# ruff: noqa: B007  (loop variables named as in the tutorials)
"""A third set of end-to-end programs in the style of the PyTorch tutorials (see
test_e2e_programs.py and test_e2e_programs2.py for the others): a convolutional autoencoder, a
DCGAN, an EmbeddingBag text classifier, a GRU seq2seq with attention, LBFGS curve fitting,
packed variable-length sequences, a spatial transformer, a training loop with chained schedulers,
early stopping and checkpoints, and parametrizations (weight_norm / spectral_norm / custom).

Each program is written once as a function of the module ``M`` (``ferrotorch`` or ``torch``), so
the very same code runs under both; the tests run it under ferrotorch and check real outcomes,
and where it is cheap a second test runs it under PyTorch (when importable) and compares a
deterministic forward pass with the weights copied across through NumPy."""

import copy
import math
import os

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


# ---------------------------------------------------------------------------- (a)
def conv_autoencoder(M):
    nn = M.nn

    class ConvAutoencoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Sequential(
                nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(True), nn.MaxPool2d(2, 2),
                nn.Conv2d(8, 4, 3, padding=1), nn.ReLU(True), nn.MaxPool2d(2, 2),
            )
            self.decoder = nn.Sequential(
                nn.ConvTranspose2d(4, 8, 2, stride=2), nn.ReLU(True),
                nn.Upsample(scale_factor=2, mode="nearest"),
                nn.Conv2d(8, 1, 3, padding=1), nn.Sigmoid(),
            )

        def forward(self, x):
            return self.decoder(self.encoder(x))

    return ConvAutoencoder


def _blobs(M, n):
    """8x8 images: a 2x2 bright square at one of 9 positions."""
    imgs = M.zeros(n, 1, 8, 8)
    for i in range(n):
        r, c = 2 * (i % 3) + 1, 2 * ((i // 3) % 3) + 1
        imgs[i, 0, r:r + 2, c:c + 2] = 1.0
    return imgs


def test_conv_autoencoder_reconstructs():
    M = ferrotorch
    M.manual_seed(0)
    model = conv_autoencoder(M)()
    data = _blobs(M, 18)
    criterion = M.nn.BCELoss()
    optimizer = M.optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-5)
    losses = []
    for epoch in range(200):
        optimizer.zero_grad()
        recon = model(data)
        loss = criterion(recon, data)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert recon.shape == (18, 1, 8, 8)
    assert model.encoder(data).shape == (18, 4, 2, 2)
    assert losses[-1] < 0.1 * losses[0], (losses[0], losses[-1])
    assert M.nn.functional.mse_loss(recon, data).item() < 0.02


def test_conv_autoencoder_matches_torch():
    torch = _torch()
    torch.manual_seed(0)
    ref = conv_autoencoder(torch)()
    ours = conv_autoencoder(ferrotorch)()
    _copy_weights(ref, ours, ferrotorch)
    x = torch.rand(3, 1, 8, 8)
    with torch.no_grad():
        expected = ref(x).numpy()
    with ferrotorch.no_grad():
        got = ours(ferrotorch.from_numpy(x.numpy())).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------- (b)
def dcgan(M, nz=4, ngf=8, ndf=8):
    nn = M.nn

    class Generator(nn.Module):
        def __init__(self):
            super().__init__()
            self.main = nn.Sequential(
                nn.ConvTranspose2d(nz, ngf * 2, 4, 1, 0, bias=False),  # 1 -> 4
                nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
                nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False),  # 4 -> 8
                nn.BatchNorm2d(ngf), nn.ReLU(True),
                nn.ConvTranspose2d(ngf, 1, 3, 1, 1, bias=False),  # 8 -> 8
                nn.Tanh(),
            )

        def forward(self, input):
            return self.main(input)

    class Discriminator(nn.Module):
        def __init__(self):
            super().__init__()
            self.main = nn.Sequential(
                nn.Conv2d(1, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 2),
                nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(ndf * 2, 1, 2, 1, 0, bias=False),
            )

        def forward(self, input):
            return self.main(input).view(-1)

    def weights_init(m):
        classname = m.__class__.__name__
        if classname.find("Conv") != -1:
            nn.init.normal_(m.weight.data, 0.0, 0.02)
        elif classname.find("BatchNorm") != -1:
            nn.init.normal_(m.weight.data, 1.0, 0.02)
            nn.init.constant_(m.bias.data, 0)

    netG, netD = Generator(), Discriminator()
    netG.apply(weights_init)
    netD.apply(weights_init)
    return netG, netD


def test_dcgan_trains_discriminator_and_generator():
    M = ferrotorch
    M.manual_seed(0)
    nz = 4
    netG, netD = dcgan(M, nz=nz)
    assert all(abs(p.mean().item()) < 0.05 for n, p in netD.named_parameters()
               if "weight" in n and p.dim() == 4)
    # "real" data: vertical stripes in [-1, 1] plus a little noise.
    real = M.zeros(16, 1, 8, 8) - 1.0
    real[:, :, :, ::2] = 1.0
    real = real + 0.05 * M.randn(16, 1, 8, 8)
    criterion = M.nn.BCEWithLogitsLoss()
    fixed_noise = M.randn(16, nz, 1, 1)
    real_label, fake_label = 1.0, 0.0
    optimizerD = M.optim.Adam(netD.parameters(), lr=2e-3, betas=(0.5, 0.999))
    optimizerG = M.optim.Adam(netG.parameters(), lr=2e-3, betas=(0.5, 0.999))
    G_losses, D_losses = [], []
    for i in range(60):
        # (1) Update D: maximize log(D(x)) + log(1 - D(G(z)))
        netD.zero_grad()
        b_size = real.size(0)
        label = M.full((b_size,), real_label, dtype=M.float)
        output = netD(real)
        errD_real = criterion(output, label)
        errD_real.backward()
        D_x = M.sigmoid(output).mean().item()
        noise = M.randn(b_size, nz, 1, 1)
        fake = netG(noise)
        label.fill_(fake_label)
        output = netD(fake.detach())
        errD_fake = criterion(output, label)
        errD_fake.backward()
        errD = errD_real + errD_fake
        optimizerD.step()
        # (2) Update G: maximize log(D(G(z)))
        netG.zero_grad()
        label.fill_(real_label)
        output = netD(fake)
        errG = criterion(output, label)
        errG.backward()
        optimizerG.step()
        G_losses.append(errG.item())
        D_losses.append(errD.item())
    assert 0.0 < D_x < 1.0
    with M.no_grad():
        netG.eval()
        samples = netG(fixed_noise).detach().cpu()
    assert samples.shape == (16, 1, 8, 8)
    assert samples.min().item() >= -1.0 and samples.max().item() <= 1.0
    assert all(math.isfinite(v) for v in G_losses + D_losses)
    # The generator learned the stripe pattern: even columns brighter than odd ones.
    even, odd = samples[..., ::2].mean().item(), samples[..., 1::2].mean().item()
    assert even - odd > 0.5, (even, odd)


def test_dcgan_forward_matches_torch():
    torch = _torch()
    torch.manual_seed(0)
    refG, refD = dcgan(torch)
    G, D = dcgan(ferrotorch)
    _copy_weights(refG, G, ferrotorch)
    _copy_weights(refD, D, ferrotorch)
    z = torch.randn(5, 4, 1, 1)
    # train mode: batch statistics, and the running stats update identically.
    with torch.no_grad():
        ref_img = refG(z)
        ref_score = refD(ref_img)
    with ferrotorch.no_grad():
        img = G(ferrotorch.from_numpy(z.numpy()))
        score = D(img)
    np.testing.assert_allclose(img.numpy(), ref_img.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(score.numpy(), ref_score.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(G.main[1].running_var.numpy(),
                               refG.main[1].running_var.numpy(), rtol=1e-5)
    assert G.main[1].num_batches_tracked.item() == 1


# ---------------------------------------------------------------------------- (c)
def text_classifier(M, vocab_size, embed_dim, num_class):
    nn = M.nn

    class TextClassificationModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=False)
            self.fc = nn.Linear(embed_dim, num_class)
            self.init_weights()

        def init_weights(self):
            initrange = 0.5
            self.embedding.weight.data.uniform_(-initrange, initrange)
            self.fc.weight.data.uniform_(-initrange, initrange)
            self.fc.bias.data.zero_()

        def forward(self, text, offsets):
            embedded = self.embedding(text, offsets)
            return self.fc(embedded)

    return TextClassificationModel()


_POS = ["good", "great", "fun", "love", "nice"]
_NEG = ["bad", "awful", "boring", "hate", "poor"]
_NEUTRAL = ["the", "movie", "was", "plot", "actors", "a", "very"]


def _sentences(n, seed):
    import random

    rng = random.Random(seed)
    out = []
    for i in range(n):
        label = i % 2
        words = [rng.choice(_NEUTRAL) for _ in range(rng.randint(2, 5))]
        words.insert(rng.randint(0, len(words)), rng.choice(_POS if label else _NEG))
        out.append((label, " ".join(words)))
    return out


def _collate_batch(M, batch, vocab):
    label_list, text_list, offsets = [], [], [0]
    for _label, _text in batch:
        label_list.append(_label)
        processed_text = M.tensor([vocab[w] for w in _text.split()], dtype=M.int64)
        text_list.append(processed_text)
        offsets.append(processed_text.size(0))
    label_list = M.tensor(label_list, dtype=M.int64)
    offsets = M.tensor(offsets[:-1]).cumsum(dim=0)
    text_list = M.cat(text_list)
    return label_list, text_list, offsets


def test_embedding_bag_text_classifier():
    M = ferrotorch
    M.manual_seed(0)
    vocab = {w: i for i, w in enumerate(_POS + _NEG + _NEUTRAL)}
    train_iter, test_iter = _sentences(64, 0), _sentences(32, 1)
    model = text_classifier(M, len(vocab), 8, 2)
    criterion = M.nn.CrossEntropyLoss()
    optimizer = M.optim.SGD(model.parameters(), lr=5.0)
    scheduler = M.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.1)
    train_dataloader = M.utils.data.DataLoader(
        train_iter, batch_size=16, shuffle=True,
        collate_fn=lambda b: _collate_batch(M, b, vocab))

    def evaluate(data):
        model.eval()
        total_acc, total_count = 0, 0
        with M.no_grad():
            label, text, offsets = _collate_batch(M, data, vocab)
            predicted_label = model(text, offsets)
            total_acc += (predicted_label.argmax(1) == label).sum().item()
            total_count += label.size(0)
        return total_acc / total_count

    total_accu = None
    for epoch in range(1, 21):
        model.train()
        for idx, (label, text, offsets) in enumerate(train_dataloader):
            optimizer.zero_grad()
            predicted_label = model(text, offsets)
            loss = criterion(predicted_label, label)
            loss.backward()
            M.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
            optimizer.step()
        accu_val = evaluate(test_iter)
        if total_accu is not None and total_accu > accu_val:
            scheduler.step()
        else:
            total_accu = accu_val
    assert evaluate(test_iter) >= 0.85
    # predict() as in the tutorial
    with M.no_grad():
        text = M.tensor([vocab[w] for w in "the movie was great".split()])
        assert model(text, M.tensor([0])).argmax(1).item() == 1


def test_embedding_bag_modes_match_torch():
    torch = _torch()
    torch.manual_seed(0)
    w = torch.randn(10, 3)
    inp = [1, 2, 4, 5, 4, 3, 2, 9]
    offsets = [0, 4]
    per_sample = [0.5, 1.0, 2.0, 1.5, 1.0, 0.5, 2.0, 1.0]
    for mode in ["sum", "mean", "max"]:
        ref = torch.nn.EmbeddingBag.from_pretrained(w, mode=mode)
        ours = ferrotorch.nn.EmbeddingBag.from_pretrained(ferrotorch.from_numpy(w.numpy()),
                                                          mode=mode)
        np.testing.assert_allclose(
            ours(ferrotorch.tensor(inp), ferrotorch.tensor(offsets)).detach().numpy(),
            ref(torch.tensor(inp), torch.tensor(offsets)).detach().numpy(), rtol=1e-5)
        # 2-D input: each row is a bag.
        np.testing.assert_allclose(
            ours(ferrotorch.tensor([inp[:4], inp[4:]])).detach().numpy(),
            ref(torch.tensor([inp[:4], inp[4:]])).detach().numpy(), rtol=1e-5)
    ref = torch.nn.EmbeddingBag.from_pretrained(w, mode="sum", padding_idx=2)
    ours = ferrotorch.nn.EmbeddingBag.from_pretrained(ferrotorch.from_numpy(w.numpy()),
                                                      mode="sum", padding_idx=2)
    np.testing.assert_allclose(
        ours(ferrotorch.tensor(inp), ferrotorch.tensor(offsets),
             per_sample_weights=ferrotorch.tensor(per_sample)).detach().numpy(),
        ref(torch.tensor(inp), torch.tensor(offsets),
            per_sample_weights=torch.tensor(per_sample)).detach().numpy(), rtol=1e-5)


# ---------------------------------------------------------------------------- (d)
SOS_token, EOS_token = 0, 1


def seq2seq(M, vocab, hidden_size, max_length):
    nn, F = M.nn, M.nn.functional

    class EncoderRNN(nn.Module):
        def __init__(self, input_size, hidden_size):
            super().__init__()
            self.embedding = nn.Embedding(input_size, hidden_size)
            self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)

        def forward(self, input):
            embedded = self.embedding(input)
            return self.gru(embedded)

    class BahdanauAttention(nn.Module):
        def __init__(self, hidden_size):
            super().__init__()
            self.Wa = nn.Linear(hidden_size, hidden_size)
            self.Ua = nn.Linear(hidden_size, hidden_size)
            self.Va = nn.Linear(hidden_size, 1)

        def forward(self, query, keys):
            scores = self.Va(M.tanh(self.Wa(query) + self.Ua(keys)))
            scores = scores.squeeze(2).unsqueeze(1)
            weights = F.softmax(scores, dim=-1)
            context = M.bmm(weights, keys)
            return context, weights

    class AttnDecoderRNN(nn.Module):
        def __init__(self, hidden_size, output_size):
            super().__init__()
            self.embedding = nn.Embedding(output_size, hidden_size)
            self.attention = BahdanauAttention(hidden_size)
            self.gru = nn.GRU(2 * hidden_size, hidden_size, batch_first=True)
            self.out = nn.Linear(hidden_size, output_size)

        def forward(self, encoder_outputs, encoder_hidden, target_tensor=None):
            batch_size = encoder_outputs.size(0)
            decoder_input = M.empty(batch_size, 1, dtype=M.long).fill_(SOS_token)
            decoder_hidden = encoder_hidden
            decoder_outputs, attentions = [], []
            for i in range(max_length):
                decoder_output, decoder_hidden, attn_weights = self.forward_step(
                    decoder_input, decoder_hidden, encoder_outputs)
                decoder_outputs.append(decoder_output)
                attentions.append(attn_weights)
                if target_tensor is not None:
                    decoder_input = target_tensor[:, i].unsqueeze(1)  # teacher forcing
                else:
                    _, topi = decoder_output.topk(1)
                    decoder_input = topi.squeeze(-1).detach()
            decoder_outputs = M.cat(decoder_outputs, dim=1)
            decoder_outputs = F.log_softmax(decoder_outputs, dim=-1)
            attentions = M.cat(attentions, dim=1)
            return decoder_outputs, decoder_hidden, attentions

        def forward_step(self, input, hidden, encoder_outputs):
            embedded = self.embedding(input)
            query = hidden.permute(1, 0, 2)
            context, attn_weights = self.attention(query, encoder_outputs)
            input_gru = M.cat((embedded, context), dim=2)
            output, hidden = self.gru(input_gru, hidden)
            return self.out(output), hidden, attn_weights

    return EncoderRNN(vocab, hidden_size), AttnDecoderRNN(hidden_size, vocab)


def _reverse_pairs(M, n, vocab, length):
    """Source: random tokens in [2, vocab); target: the reverse, then EOS."""
    src = M.randint(2, vocab, (n, length))
    tgt = M.cat([src.flip(1), M.full((n, 1), EOS_token, dtype=M.long)], dim=1)
    return src, tgt


def test_gru_attention_seq2seq_teacher_forcing():
    M = ferrotorch
    M.manual_seed(0)
    vocab, length, hidden = 7, 4, 32
    encoder, decoder = seq2seq(M, vocab, hidden, length + 1)
    src, tgt = _reverse_pairs(M, 64, vocab, length)
    dataset = M.utils.data.TensorDataset(src, tgt)
    loader = M.utils.data.DataLoader(dataset, batch_size=16, shuffle=True)
    encoder_optimizer = M.optim.Adam(encoder.parameters(), lr=0.01)
    decoder_optimizer = M.optim.Adam(decoder.parameters(), lr=0.01)
    criterion = M.nn.NLLLoss()
    first = last = None
    for epoch in range(40):
        total_loss = 0
        for input_tensor, target_tensor in loader:
            encoder_optimizer.zero_grad()
            decoder_optimizer.zero_grad()
            encoder_outputs, encoder_hidden = encoder(input_tensor)
            decoder_outputs, _, _ = decoder(encoder_outputs, encoder_hidden, target_tensor)
            loss = criterion(decoder_outputs.view(-1, decoder_outputs.size(-1)),
                             target_tensor.view(-1))
            loss.backward()
            encoder_optimizer.step()
            decoder_optimizer.step()
            total_loss += loss.item()
        if first is None:
            first = total_loss / len(loader)
        last = total_loss / len(loader)
    assert last < 0.1 * first, (first, last)
    # Greedy decoding without teacher forcing on the training pairs.
    encoder.eval()
    decoder.eval()
    with M.no_grad():
        enc_out, enc_hidden = encoder(src)
        dec_out, _, attn = decoder(enc_out, enc_hidden)
        _, topi = dec_out.topk(1)
        decoded_ids = topi.squeeze()
    assert attn.shape == (64, length + 1, length)
    assert M.allclose(attn.sum(-1), M.ones(64, length + 1))
    acc = (decoded_ids == tgt).all(dim=1).float().mean().item()
    assert acc > 0.8, acc


def test_gru_attention_seq2seq_matches_torch():
    torch = _torch()
    torch.manual_seed(0)
    ref_enc, ref_dec = seq2seq(torch, 7, 8, 5)
    enc, dec = seq2seq(ferrotorch, 7, 8, 5)
    _copy_weights(ref_enc, enc, ferrotorch)
    _copy_weights(ref_dec, dec, ferrotorch)
    src = torch.randint(2, 7, (3, 4))
    tgt = torch.randint(0, 7, (3, 5))
    ref_out, ref_h = ref_enc(src)
    ref_dec_out, _, ref_attn = ref_dec(ref_out, ref_h, tgt)
    ref_loss = torch.nn.functional.nll_loss(ref_dec_out.reshape(-1, 7), tgt.reshape(-1))
    ref_loss.backward()
    out, h = enc(ferrotorch.from_numpy(src.numpy()))
    dec_out, _, attn = dec(out, h, ferrotorch.from_numpy(tgt.numpy()))
    loss = ferrotorch.nn.functional.nll_loss(dec_out.reshape(-1, 7),
                                             ferrotorch.from_numpy(tgt.numpy()).reshape(-1))
    loss.backward()
    np.testing.assert_allclose(loss.item(), ref_loss.item(), rtol=1e-5)
    np.testing.assert_allclose(attn.detach().numpy(), ref_attn.detach().numpy(), rtol=1e-4,
                               atol=1e-6)
    for (n, p), (rn, rp) in zip(enc.named_parameters(), ref_enc.named_parameters()):
        assert n == rn
        np.testing.assert_allclose(p.grad.numpy(), rp.grad.numpy(), rtol=1e-3, atol=1e-5,
                                   err_msg=n)


# ---------------------------------------------------------------------------- (e)
def lbfgs_fit(M, line_search_fn):
    """Fit y = a * exp(-b x) + c with LBFGS and a closure."""
    M.manual_seed(0)
    x = M.linspace(0, 4, 50)
    y = 2.5 * M.exp(-1.3 * x) + 0.5
    params = M.tensor([1.0, 1.0, 0.0], requires_grad=True)
    optimizer = M.optim.LBFGS([params], lr=1, max_iter=50, history_size=10,
                              line_search_fn=line_search_fn)
    calls = []

    def closure():
        optimizer.zero_grad()
        a, b, c = params[0], params[1], params[2]
        loss = ((a * M.exp(-b * x) + c - y) ** 2).mean()
        loss.backward()
        calls.append(loss.item())
        return loss

    for _ in range(3):
        loss = optimizer.step(closure)
    return params.detach().tolist(), loss.item(), calls, optimizer


def test_lbfgs_curve_fit():
    for ls in [None, "strong_wolfe"]:
        (a, b, c), loss, calls, optimizer = lbfgs_fit(ferrotorch, ls)
        assert loss < 1e-8 or calls[-1] < 1e-8, (ls, loss, calls[-1])
        assert a == pytest.approx(2.5, abs=1e-3)
        assert b == pytest.approx(1.3, abs=1e-3)
        assert c == pytest.approx(0.5, abs=1e-3)
        state = optimizer.state_dict()
        assert state["state"][0]["n_iter"] >= 3
        assert len(state["state"][0]["old_dirs"]) <= 10


def test_lbfgs_matches_torch_trajectory():
    torch = _torch()
    for ls in [None, "strong_wolfe"]:
        ours = lbfgs_fit(ferrotorch, ls)
        ref = lbfgs_fit(torch, ls)
        # the first few closure evaluations are deterministic and should agree closely
        np.testing.assert_allclose(ours[2][:6], ref[2][:6], rtol=1e-4)
        np.testing.assert_allclose(ours[0], ref[0], atol=1e-3)


# ---------------------------------------------------------------------------- (f)
def packed_classifier(M):
    nn = M.nn
    rnn_utils = M.nn.utils.rnn

    class LengthClassifier(nn.Module):
        """Embeds variable-length sequences, runs a bidirectional LSTM on the packed batch and
        classifies from the final hidden states (padding never reaches the LSTM)."""

        def __init__(self, vocab=6, emb=8, hidden=16, num_class=2):
            super().__init__()
            self.embedding = nn.Embedding(vocab, emb, padding_idx=0)
            self.lstm = nn.LSTM(emb, hidden, batch_first=True, bidirectional=True)
            self.fc = nn.Linear(2 * hidden, num_class)

        def forward(self, padded, lengths):
            emb = self.embedding(padded)
            packed = rnn_utils.pack_padded_sequence(emb, lengths, batch_first=True,
                                                    enforce_sorted=False)
            packed_out, (h_n, c_n) = self.lstm(packed)
            out, out_lengths = rnn_utils.pad_packed_sequence(packed_out, batch_first=True)
            h = M.cat([h_n[-2], h_n[-1]], dim=1)
            return self.fc(h), out, out_lengths

    return LengthClassifier()


def _count_sequences(M, n, seed):
    """Label 1 iff token 3 appears more often than token 4; lengths vary from 2 to 9."""
    import random

    rng = random.Random(seed)
    seqs, labels = [], []
    for i in range(n):
        length = rng.randint(2, 9)
        s = [rng.choice([2, 3, 4, 5]) for _ in range(length)]
        if s.count(3) == s.count(4):
            s[0] = 3 if i % 2 else 4
        seqs.append(M.tensor(s))
        labels.append(int(s.count(3) > s.count(4)))
    return seqs, M.tensor(labels)


def test_packed_sequence_bilstm_classifier():
    M = ferrotorch
    M.manual_seed(0)
    rnn_utils = M.nn.utils.rnn
    seqs, labels = _count_sequences(M, 96, 0)
    lengths = M.tensor([len(s) for s in seqs])
    padded = rnn_utils.pad_sequence(seqs, batch_first=True, padding_value=0)
    assert padded.shape == (96, int(lengths.max()))
    model = packed_classifier(M)
    optimizer = M.optim.Adam(model.parameters(), lr=0.02)
    criterion = M.nn.CrossEntropyLoss()
    for epoch in range(60):
        optimizer.zero_grad()
        logits, out, out_lengths = model(padded, lengths)
        loss = criterion(logits, labels)
        loss.backward()
        optimizer.step()
    assert M.equal(out_lengths, lengths)
    assert out.shape == (96, int(lengths.max()), 32)
    # padded positions of the unpacked output are zero
    short = int(M.argmin(lengths))
    assert out[short, lengths[short]:].abs().sum().item() == 0.0
    model.eval()
    with M.no_grad():
        acc = (model(padded, lengths)[0].argmax(1) == labels).float().mean().item()
    assert acc > 0.9, (loss.item(), acc)
    # pack_sequence on a sorted list round-trips through pad_packed_sequence
    srt = sorted(seqs[:5], key=len, reverse=True)
    packed = rnn_utils.pack_sequence(srt)
    unpacked, lens = rnn_utils.pad_packed_sequence(packed, batch_first=True)
    for i, s in enumerate(srt):
        assert M.equal(unpacked[i, :len(s)], s)
    assert lens.tolist() == [len(s) for s in srt]


def test_packed_sequence_classifier_matches_torch():
    torch = _torch()
    torch.manual_seed(0)
    ref = packed_classifier(torch)
    ours = packed_classifier(ferrotorch)
    _copy_weights(ref, ours, ferrotorch)
    seqs, _ = _count_sequences(torch, 7, 3)
    lengths = torch.tensor([len(s) for s in seqs])
    padded = torch.nn.utils.rnn.pad_sequence(seqs, batch_first=True)
    ref_logits, ref_out, _ = ref(padded, lengths)
    logits, out, _ = ours(ferrotorch.from_numpy(padded.numpy()),
                          ferrotorch.from_numpy(lengths.numpy()))
    np.testing.assert_allclose(out.detach().numpy(), ref_out.detach().numpy(), rtol=1e-4,
                               atol=1e-6)
    np.testing.assert_allclose(logits.detach().numpy(), ref_logits.detach().numpy(), rtol=1e-4,
                               atol=1e-6)


# ---------------------------------------------------------------------------- (g)
def spatial_transformer(M):
    nn, F = M.nn, M.nn.functional

    class STN(nn.Module):
        def __init__(self):
            super().__init__()
            self.localization = nn.Sequential(
                nn.Conv2d(1, 4, kernel_size=3), nn.MaxPool2d(2, stride=2), nn.ReLU(True))
            self.fc_loc = nn.Sequential(nn.Linear(4 * 3 * 3, 16), nn.ReLU(True),
                                        nn.Linear(16, 3 * 2))
            # Initialize the weights/bias with identity transformation
            self.fc_loc[2].weight.data.zero_()
            self.fc_loc[2].bias.data.copy_(M.tensor([1, 0, 0, 0, 1, 0], dtype=M.float))

        def stn(self, x):
            xs = self.localization(x)
            xs = xs.view(-1, 4 * 3 * 3)
            theta = self.fc_loc(xs)
            theta = theta.view(-1, 2, 3)
            grid = F.affine_grid(theta, x.size(), align_corners=False)
            return F.grid_sample(x, grid, align_corners=False), theta

        def forward(self, x):
            return self.stn(x)

    return STN()


def test_spatial_transformer_learns_to_undo_shift():
    M = ferrotorch
    F = M.nn.functional
    M.manual_seed(0)
    model = spatial_transformer(M)
    target = M.zeros(1, 1, 8, 8)
    target[..., 3:5, 3:5] = 1.0
    target = target.expand(12, 1, 8, 8).contiguous()
    # inputs: the same square shifted by a fixed translation
    theta_shift = M.tensor([[1.0, 0.0, 0.25], [0.0, 1.0, -0.25]]).expand(12, 2, 3)
    grid = F.affine_grid(theta_shift, [12, 1, 8, 8], align_corners=False)
    inputs = F.grid_sample(target, grid, mode="bilinear", padding_mode="zeros",
                           align_corners=False)
    with M.no_grad():
        out0, theta0 = model(inputs)
    # identity initialisation: output == input
    assert M.allclose(out0, inputs, atol=1e-5)
    optimizer = M.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    first = F.mse_loss(out0, target).item()
    for step in range(150):
        optimizer.zero_grad()
        out, theta = model(inputs)
        loss = F.mse_loss(out, target)
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.3 * first, (first, loss.item())
    # the learned translation points the other way from the shift
    t = theta.mean(0)
    assert t[0, 2].item() < -0.05 and t[1, 2].item() > 0.05, t


def test_affine_grid_grid_sample_match_torch():
    torch = _torch()
    torch.manual_seed(0)
    x = torch.rand(2, 3, 5, 6)
    theta = torch.tensor([[[0.9, -0.2, 0.1], [0.3, 1.1, -0.2]],
                          [[1.2, 0.1, -0.3], [-0.1, 0.8, 0.25]]])
    fx, ftheta = ferrotorch.from_numpy(x.numpy()), ferrotorch.from_numpy(theta.numpy())
    for ac in [False, True]:
        for size in [(2, 3, 5, 6), (2, 3, 4, 7)]:
            g = torch.nn.functional.affine_grid(theta, size, align_corners=ac)
            fg = ferrotorch.nn.functional.affine_grid(ftheta, size, align_corners=ac)
            np.testing.assert_allclose(fg.numpy(), g.numpy(), rtol=1e-5, atol=1e-6)
            # sample at PyTorch's grid: affine_grid agrees only to an ulp (ferrotorch's
            # linspace does not round like PyTorch's fused multiply-add), which can flip a
            # 'nearest' tie
            fg = ferrotorch.from_numpy(g.numpy())
            for mode in ["bilinear", "nearest", "bicubic"]:
                for pad in ["zeros", "border", "reflection"]:
                    ref = torch.nn.functional.grid_sample(x, g, mode=mode, padding_mode=pad,
                                                          align_corners=ac)
                    got = ferrotorch.nn.functional.grid_sample(fx, fg, mode=mode,
                                                               padding_mode=pad,
                                                               align_corners=ac)
                    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-4, atol=1e-5,
                                               err_msg=f"{mode} {pad} {ac} {size}")


# ---------------------------------------------------------------------------- (h)
def mlp_regressor(M):
    nn = M.nn
    return nn.Sequential(nn.Linear(3, 32), nn.Tanh(), nn.Dropout(0.1), nn.Linear(32, 1))


def test_training_loop_schedulers_clipping_early_stopping_checkpoint(tmp_path):
    M = ferrotorch
    M.manual_seed(0)
    X = M.randn(200, 3)
    y = M.sin(X[:, :1]) + 0.5 * X[:, 1:2] - 0.3 * X[:, 2:3] + 0.01 * M.randn(200, 1)
    train_set, val_set = M.utils.data.random_split(
        M.utils.data.TensorDataset(X, y), [160, 40], generator=M.Generator().manual_seed(42))
    train_loader = M.utils.data.DataLoader(train_set, batch_size=32, shuffle=True)
    val_loader = M.utils.data.DataLoader(val_set, batch_size=40)
    model = mlp_regressor(M)
    optimizer = M.optim.AdamW(model.parameters(), lr=0.05, weight_decay=1e-4)
    warmup = M.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.1, total_iters=3)
    decay = M.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.95)
    scheduler = M.optim.lr_scheduler.ChainedScheduler([warmup, decay])
    plateau = M.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="min", factor=0.5,
                                                     patience=2)
    loss_fn = M.nn.MSELoss()
    best_val, best_state, bad_epochs, patience = float("inf"), None, 0, 8
    path = os.path.join(tmp_path, "checkpoint.pth")
    history, lrs = [], []
    for epoch in range(60):
        model.train()
        for xb, yb in train_loader:
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(xb), yb)
            loss.backward()
            total_norm = M.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            assert math.isfinite(float(total_norm))
            optimizer.step()
        scheduler.step()
        model.eval()
        with M.no_grad():
            val_loss = sum(loss_fn(model(xb), yb).item() for xb, yb in val_loader)
        plateau.step(val_loss)
        history.append(val_loss)
        lrs.append(optimizer.param_groups[0]["lr"])
        if val_loss < best_val - 1e-4:
            best_val, bad_epochs = val_loss, 0
            best_state = copy.deepcopy(model.state_dict())
            M.save({"epoch": epoch, "model_state_dict": model.state_dict(),
                    "optimizer_state_dict": optimizer.state_dict(),
                    "scheduler_state_dict": scheduler.state_dict(),
                    "val_loss": val_loss}, path)
        else:
            bad_epochs += 1
            if bad_epochs >= patience:
                break
    assert history[0] > 10 * best_val, (history[0], best_val)
    assert best_val < 0.05, best_val
    # warm-up: lr grows from 0.002 then decays
    assert lrs[0] == pytest.approx(0.05 * (0.1 + 0.3) * 0.95, rel=1e-6)
    assert max(lrs) <= 0.05
    # restore the best checkpoint into a fresh model/optimizer and check it reproduces
    ckpt = M.load(path)
    fresh = mlp_regressor(M)
    fresh.load_state_dict(ckpt["model_state_dict"])
    opt2 = M.optim.AdamW(fresh.parameters(), lr=0.05, weight_decay=1e-4)
    opt2.load_state_dict(ckpt["optimizer_state_dict"])
    for k, v in best_state.items():
        assert M.equal(fresh.state_dict()[k], v), k
    fresh.eval()
    with M.no_grad():
        val = sum(loss_fn(fresh(xb), yb).item() for xb, yb in val_loader)
    assert val == pytest.approx(ckpt["val_loss"], rel=1e-6)
    assert opt2.state_dict()["param_groups"][0]["lr"] == \
        ckpt["optimizer_state_dict"]["param_groups"][0]["lr"]
    step = opt2.state_dict()["state"][0]["step"]
    assert float(step) == ckpt["epoch"] * 0 + float(
        ckpt["optimizer_state_dict"]["state"][0]["step"])
    # the chained scheduler's state round-trips too
    warm2 = M.optim.lr_scheduler.LinearLR(opt2, start_factor=0.1, total_iters=3)
    decay2 = M.optim.lr_scheduler.ExponentialLR(opt2, gamma=0.95)
    sched2 = M.optim.lr_scheduler.ChainedScheduler([warm2, decay2])
    sched2.load_state_dict(ckpt["scheduler_state_dict"])
    assert sched2._schedulers[1].last_epoch == ckpt["epoch"] + 1


# ---------------------------------------------------------------------------- (i)
def parametrized_net(M):
    nn = M.nn
    parametrize = M.nn.utils.parametrize

    class Symmetric(nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mean", M.zeros(4))
            self.register_buffer("std", M.ones(4))
            self.register_buffer("scratch", M.zeros(1), persistent=False)
            self.sym = nn.Linear(4, 4)
            parametrize.register_parametrization(self.sym, "weight", Symmetric())
            self.wn = nn.utils.parametrizations.weight_norm(nn.Linear(4, 8))
            self.sn = nn.utils.parametrizations.spectral_norm(nn.Linear(8, 3))

        def forward(self, x):
            x = (x - self.mean) / self.std
            return self.sn(M.relu(self.wn(M.tanh(self.sym(x)))))

    return Net()


def test_parametrizations_and_buffers():
    M = ferrotorch
    parametrize = M.nn.utils.parametrize
    M.manual_seed(0)
    net = parametrized_net(M)
    X = M.randn(64, 4) * 3 + 1
    y = (X[:, 0] > 1).long() + (X[:, 1] > 1).long()
    net.mean.copy_(X.mean(0))
    net.std.copy_(X.std(0))
    keys = set(net.state_dict())
    assert {"mean", "std", "sym.parametrizations.weight.original",
            "wn.parametrizations.weight.original0", "wn.parametrizations.weight.original1",
            "sn.parametrizations.weight.original"} <= keys
    assert "scratch" not in keys
    assert [n for n, _ in net.named_buffers()][:3] == ["mean", "std", "scratch"]
    assert parametrize.is_parametrized(net.sym, "weight")
    assert not parametrize.is_parametrized(net.sym, "bias")
    optimizer = M.optim.Adam(net.parameters(), lr=0.02)
    criterion = M.nn.CrossEntropyLoss()
    for step in range(150):
        optimizer.zero_grad()
        loss = criterion(net(X), y)
        loss.backward()
        optimizer.step()
    net.eval()
    with M.no_grad():
        acc = (net(X).argmax(1) == y).float().mean().item()
        W = net.sym.weight
        assert M.equal(W, W.T)
        # spectral norm keeps the largest singular value at ~1 in eval mode
        sigma = M.linalg.matrix_norm(net.sn.weight, ord=2).item()
        # weight_norm: weight == g * v / ||v|| along dim 0
        g = net.wn.parametrizations.weight.original0
        v = net.wn.parametrizations.weight.original1
        assert M.allclose(net.wn.weight, g * v / v.norm(dim=1, keepdim=True), atol=1e-6)
    assert acc > 0.9, acc
    assert sigma == pytest.approx(1.0, abs=0.05)
    # cached parametrization and removal
    with parametrize.cached():
        w1 = net.sym.weight
        assert net.sym.weight is w1
    before = net.sym.weight.detach().clone()
    parametrize.remove_parametrizations(net.sym, "weight", leave_parametrized=True)
    assert not parametrize.is_parametrized(net.sym)
    assert isinstance(net.sym.weight, M.nn.Parameter)
    assert M.equal(net.sym.weight.detach(), before)
    # a state dict round trip into a freshly parametrized model
    fresh = parametrized_net(M)
    fresh.load_state_dict(net.state_dict(), strict=False)
    assert M.equal(fresh.mean, net.mean)


def test_parametrized_net_state_dict_loads_from_torch():
    torch = _torch()
    torch.manual_seed(0)
    ref = parametrized_net(torch)
    ours = parametrized_net(ferrotorch)
    assert set(ref.state_dict()) == set(ours.state_dict())
    ref.eval()
    ours.eval()
    _copy_weights(ref, ours, ferrotorch)
    x = torch.randn(5, 4)
    with torch.no_grad():
        expected = ref(x).numpy()
    with ferrotorch.no_grad():
        got = ours(ferrotorch.from_numpy(x.numpy())).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------- (j)
def lenet(M):
    nn, F = M.nn, M.nn.functional

    class LeNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 4, 3)
            self.conv2 = nn.Conv2d(4, 8, 3)
            self.fc1 = nn.Linear(8 * 2 * 2, 16)
            self.fc2 = nn.Linear(16, 3)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
            x = F.relu(self.conv2(x))
            x = x.view(-1, int(x.nelement() / x.shape[0]))
            return self.fc2(F.relu(self.fc1(x)))

    return LeNet()


def _prune_lenet(M, prune, model=None):
    """The pruning tutorial's steps on one model; returns the masks in a fixed order."""
    model = lenet(M) if model is None else model
    prune.l1_unstructured(model.conv1, name="weight", amount=0.3)
    prune.l1_unstructured(model.conv1, name="bias", amount=2)
    # iterative pruning: a structured pass on top of the unstructured one (PruningContainer)
    prune.ln_structured(model.conv1, name="weight", amount=0.5, n=2, dim=0)
    parameters_to_prune = ((model.conv2, "weight"), (model.fc1, "weight"), (model.fc2, "weight"))
    prune.global_unstructured(parameters_to_prune, pruning_method=prune.L1Unstructured,
                              amount=0.4)
    masks = [model.conv1.weight_mask, model.conv1.bias_mask, model.conv2.weight_mask,
             model.fc1.weight_mask, model.fc2.weight_mask]
    return model, masks


def test_pruning_tutorial_program(tmp_path):
    M = ferrotorch
    prune = pytest.importorskip("ferrotorch.nn.utils.prune")
    M.manual_seed(0)
    model, masks = _prune_lenet(M, prune)
    conv1 = model.conv1
    assert [n for n, _ in conv1.named_parameters()] == ["weight_orig", "bias_orig"]
    assert [n for n, _ in conv1.named_buffers()] == ["weight_mask", "bias_mask"]
    hook = next(h for h in conv1._forward_pre_hooks.values()
                if isinstance(h, prune.PruningContainer))
    assert [type(m).__name__ for m in hook] == ["L1Unstructured", "LnStructured"]
    # 2 of the 4 output channels are gone entirely, the other 2 keep their L1 pruning
    assert (conv1.weight_mask.sum(dim=(1, 2, 3)) == 0).sum().item() == 2
    assert conv1.bias_mask.sum().item() == 2
    total = sum(m.numel() for m in masks[2:])
    assert sum(int((m == 0).sum()) for m in masks[2:]) == round(0.4 * total)
    assert prune.is_pruned(model)
    # train: the pre-hooks keep the pruned entries at zero, the originals keep their gradients
    y = M.arange(24) % 3
    X = M.randn(24, 1, 10, 10) * 0.5
    X[:, :, :, :4] += (y.float() - 1.0).view(-1, 1, 1, 1)  # the class shows on the left
    optimizer = M.optim.Adam(model.parameters(), lr=0.01)
    first = None
    for step in range(40):
        optimizer.zero_grad()
        loss = M.nn.functional.cross_entropy(model(X), y)
        loss.backward()
        optimizer.step()
        first = first if first is not None else loss.item()
    assert loss.item() < 0.5 * first, (first, loss.item())
    assert M.equal(model.fc1.weight == 0, model.fc1.weight_mask == 0)
    assert (model.fc1.weight_orig.grad[model.fc1.weight_mask == 0] == 0).all()
    # the pruned state dict holds *_orig and *_mask; it loads into a model pruned the same way
    sd = model.state_dict()
    assert {"conv1.weight_orig", "conv1.weight_mask", "fc2.weight_mask"} <= set(sd)
    assert "conv1.weight" not in sd
    path = os.path.join(tmp_path, "pruned.pt")
    M.save(sd, path)
    other, _ = _prune_lenet(M, prune)
    other.load_state_dict(M.load(path))
    with M.no_grad():
        assert M.allclose(other(X), model(X))
    # make it permanent
    for module, name in [(model.conv1, "weight"), (model.conv1, "bias"), (model.conv2, "weight"),
                         (model.fc1, "weight"), (model.fc2, "weight")]:
        prune.remove(module, name)
    assert not prune.is_pruned(model)
    assert set(model.state_dict()) == set(lenet(M).state_dict())
    assert isinstance(model.fc1.weight, M.nn.Parameter)
    assert M.equal(model.fc1.weight == 0, masks[3] == 0)
    with pytest.raises(ValueError, match="has to be pruned"):
        prune.remove(model.fc1, "weight")


def test_pruning_masks_match_torch():
    torch = _torch()
    import torch.nn.utils.prune as torch_prune

    prune = pytest.importorskip("ferrotorch.nn.utils.prune")
    torch.manual_seed(0)
    ref, ref_masks = _prune_lenet(torch, torch_prune)
    # copy the unpruned weights (the *_orig of the pruned model) across, then prune the same way
    ours = lenet(ferrotorch)
    ours.load_state_dict({k.replace("_orig", ""): ferrotorch.from_numpy(v.detach().numpy().copy())
                          for k, v in ref.state_dict().items() if not k.endswith("_mask")})
    ours, masks = _prune_lenet(ferrotorch, prune, ours)
    for m, rm in zip(masks, ref_masks):
        np.testing.assert_array_equal(m.numpy(), rm.numpy())
    x = torch.randn(2, 1, 10, 10)
    with torch.no_grad():
        expected = ref(x).numpy()
    with ferrotorch.no_grad():
        got = ours(ferrotorch.from_numpy(x.numpy())).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------- (k)
def ensemble_predictions(M, models, minibatch):
    """The "model ensembling" tutorial: stack the models' state and vmap a functional call."""
    func = M.func
    params, buffers = func.stack_module_state(models)
    base_model = copy.deepcopy(models[0])

    def fmodel(params, buffers, x):
        return func.functional_call(base_model, (params, buffers), (x,))

    same = func.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)
    minibatches = minibatch.reshape(len(models), -1, minibatch.shape[-1])
    different = func.vmap(fmodel)(params, buffers, minibatches)
    return params, buffers, same, different


def small_mlp(M):
    nn = M.nn
    return nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))


def test_model_ensembling_with_stack_module_state():
    M = ferrotorch
    M.manual_seed(0)
    models = [small_mlp(M).eval() for _ in range(4)]
    minibatch = M.randn(8, 6)
    params, buffers, same, different = ensemble_predictions(M, models, minibatch)
    assert params["0.weight"].shape == (4, 8, 6)
    assert params["0.weight"].requires_grad and params["0.weight"].is_leaf
    assert buffers["1.running_mean"].shape == (4, 8)
    assert not buffers["1.running_mean"].requires_grad
    assert same.shape == (4, 8, 3) and different.shape == (4, 2, 3)
    with M.no_grad():
        expected = M.stack([m(minibatch) for m in models])
        expected_diff = M.stack([m(minibatch[2 * i:2 * i + 2]) for i, m in enumerate(models)])
    assert M.allclose(same, expected, atol=1e-6)
    assert M.allclose(different, expected_diff, atol=1e-6)
    # the stacked parameters are trainable leaves: one backward reaches all four models
    same.sum().backward()
    assert params["3.bias"].grad.shape == (4, 3)
    assert M.allclose(params["3.bias"].grad, M.full((4, 3), 8.0))
    with pytest.raises(RuntimeError, match="same training/eval mode"):
        M.func.stack_module_state([small_mlp(M), small_mlp(M).eval()])
    with pytest.raises(RuntimeError, match="at least one model"):
        M.func.stack_module_state([])


def test_model_ensembling_matches_torch():
    torch = _torch()
    torch.manual_seed(0)
    ref_models = [small_mlp(torch).eval() for _ in range(3)]
    models = []
    for rm in ref_models:
        m = small_mlp(ferrotorch).eval()
        _copy_weights(rm, m, ferrotorch)
        models.append(m)
    x = torch.randn(6, 6)
    _, _, ref_same, ref_diff = ensemble_predictions(torch, ref_models, x)
    _, _, same, diff = ensemble_predictions(ferrotorch, models, ferrotorch.from_numpy(x.numpy()))
    np.testing.assert_allclose(same.detach().numpy(), ref_same.detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(diff.detach().numpy(), ref_diff.detach().numpy(), rtol=1e-5,
                               atol=1e-6)


# ---------------------------------------------------------------------------- (l)
def test_printed_models_match_torch():
    # ``print(model)`` as every tutorial does: the same text as PyTorch's.
    torch = _torch()

    def models(M):
        return [conv_autoencoder(M)(), *dcgan(M), *seq2seq(M, 7, 8, 5), packed_classifier(M),
                spatial_transformer(M), mlp_regressor(M), parametrized_net(M), lenet(M),
                small_mlp(M), text_classifier(M, 10, 4, 2)]

    for ours, ref in zip(models(ferrotorch), models(torch)):
        assert str(ours) == str(ref)
