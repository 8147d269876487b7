"""The README's main job (`make demo`): train a small CNN on the 1,797 8x8 handwritten digits
shipped in data/ (the copy scikit-learn distributes), written exactly like a PyTorch program.

Shows a tqdm progress bar, prints the test accuracy, saves the model with ferrotorch.save and
writes a PNG plot of loss and accuracy per epoch (out/demo_training.png).
"""

import gzip
import os
import time

import numpy as np
from tqdm import tqdm

import ferrotorch as torch
import ferrotorch.nn as nn
import ferrotorch.nn.functional as F
from ferrotorch.utils.data import DataLoader, TensorDataset

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(ROOT, "out")


def load_digits():
    with gzip.open(os.path.join(ROOT, "data", "digits.csv.gz"), "rt") as f:
        raw = np.loadtxt(f, delimiter=",", dtype=np.float32)
    images, labels = raw[:, :64] / 16.0, raw[:, 64].astype(np.int64)
    return images.reshape(-1, 1, 8, 8), labels  # (N, channels, height, width)


class DigitNet(nn.Module):
    """A small CNN: two conv -> batch-norm -> ReLU -> max-pool blocks, then an MLP head."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, kernel_size=3, padding=1),  # 16 x 8 x 8
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.MaxPool2d(2),  # 16 x 4 x 4
            nn.Conv2d(16, 32, kernel_size=3, padding=1),  # 32 x 4 x 4
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.MaxPool2d(2),  # 32 x 2 x 2
        )
        self.fc = nn.Linear(32 * 2 * 2, 64)
        self.drop = nn.Dropout(0.2)
        self.out = nn.Linear(64, 10)

    def forward(self, x):
        x = torch.flatten(self.features(x), 1)
        x = self.drop(F.relu(self.fc(x)))
        return self.out(x)


def evaluate(model, loader):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for x, y in loader:
            pred = model(x).argmax(dim=1)
            correct += int((pred == y).sum())
            total += y.numel()
    model.train()
    return correct / total


def main(epochs=20):
    torch.manual_seed(0)
    images, labels = load_digits()
    perm = np.random.default_rng(0).permutation(len(labels))
    split = int(0.8 * len(labels))
    train_idx, test_idx = perm[:split], perm[split:]
    train = TensorDataset(torch.from_numpy(images[train_idx]), torch.from_numpy(labels[train_idx]))
    test = TensorDataset(torch.from_numpy(images[test_idx]), torch.from_numpy(labels[test_idx]))
    g = torch.Generator().manual_seed(0)
    train_loader = DataLoader(train, batch_size=64, shuffle=True, generator=g)
    test_loader = DataLoader(test, batch_size=256)

    model = DigitNet()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
    loss_fn = nn.CrossEntropyLoss()
    print(model)

    history = {"loss": [], "acc": []}
    start = time.perf_counter()
    bar = tqdm(range(epochs), desc="training", unit="epoch")
    for _ in bar:
        total, n = 0.0, 0
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            total += loss.item() * y.numel()
            n += y.numel()
        scheduler.step()
        acc = evaluate(model, test_loader)
        history["loss"].append(total / n)
        history["acc"].append(acc)
        bar.set_postfix(loss=f"{total / n:.4f}", test_acc=f"{acc:.3f}")
    elapsed = time.perf_counter() - start

    acc = evaluate(model, test_loader)
    print(f"test accuracy: {acc * 100:.2f}% ({len(test)} held-out digits, {elapsed:.1f} s)")
    os.makedirs(OUT, exist_ok=True)
    ckpt = os.path.join(OUT, "digits_cnn.safetensors")
    torch.save(model.state_dict(), ckpt)
    reloaded = DigitNet()
    reloaded.load_state_dict(torch.load(ckpt))
    assert evaluate(reloaded, test_loader) == acc, "reloaded model must predict the same"
    print(f"saved model to {os.path.relpath(ckpt, ROOT)}")
    plot(history, os.path.join(OUT, "demo_training.png"))
    if acc < 0.95:
        raise SystemExit(f"accuracy {acc:.3f} is below the 95% target")


def plot(history, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    epochs = range(1, len(history["loss"]) + 1)
    fig, ax1 = plt.subplots(figsize=(7, 4))
    ax1.plot(epochs, history["loss"], color="tab:red", label="train loss")
    ax1.set_xlabel("epoch")
    ax1.set_ylabel("cross-entropy loss", color="tab:red")
    ax2 = ax1.twinx()
    ax2.plot(epochs, [a * 100 for a in history["acc"]], color="tab:blue", label="test accuracy")
    ax2.set_ylabel("test accuracy (%)", color="tab:blue")
    ax1.set_title("ferrotorch: CNN on 8x8 handwritten digits")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"wrote {os.path.relpath(path, ROOT)}")


if __name__ == "__main__":
    main()
