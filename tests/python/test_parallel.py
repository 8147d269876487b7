"""set_num_threads / get_num_threads: the setting sticks and results do not depend on it."""

import os
import subprocess
import sys

import numpy as np
import pytest

import ferrotorch as torch


@pytest.fixture(autouse=True)
def _restore_threads():
    n = torch.get_num_threads()
    yield
    torch.set_num_threads(n)


def test_default_is_positive():
    assert isinstance(torch.get_num_threads(), int)
    assert torch.get_num_threads() >= 1


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_set_then_get(n):
    torch.set_num_threads(n)
    assert torch.get_num_threads() == n


def test_invalid_counts():
    with pytest.raises(RuntimeError, match="positive integer"):
        torch.set_num_threads(0)
    with pytest.raises(RuntimeError, match="positive integer"):
        torch.set_num_threads(-2)
    with pytest.raises(TypeError):
        torch.set_num_threads("2")


def _workload():
    torch.manual_seed(7)
    # Sizes above the parallel thresholds (32768 elements), so work is really split.
    a = torch.randn(70_000)
    b = torch.rand(70_000, dtype=torch.float64)
    x = torch.from_numpy(np.arange(160_000, dtype=np.float32).reshape(400, 400)[:, ::2])
    return [a, b, (a * 2 + 1).exp(), a.sin(), x + 1, torch.randint(0, 100, (70_000,)),
            torch.zeros(70_000).normal_(), torch.arange(70_000) * 3]


def test_results_do_not_depend_on_thread_count():
    torch.set_num_threads(1)
    ref = [t.numpy().copy() for t in _workload()]
    for n in (2, 3):
        torch.set_num_threads(n)
        got = _workload()
        for r, g in zip(ref, got):
            np.testing.assert_array_equal(r, g.numpy())


_THREAD_PROBE = r"""
import os, sys
import ferrotorch as torch
import ferrotorch.nn as nn
import ferrotorch.nn.functional as F

def others():
    names = [open(f"/proc/self/task/{t}/comm").read().strip() for t in os.listdir("/proc/self/task")]
    return sorted(n for n in names if not n.startswith("ferrotorch-"))

before = others()
torch.manual_seed(0)
mlp = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
cnn = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.Flatten(), nn.Linear(16 * 32 * 32, 10))
opt = torch.optim.Adam(list(mlp.parameters()) + list(cnn.parameters()))
for _ in range(2):
    opt.zero_grad()
    loss = F.cross_entropy(mlp(torch.randn(256, 784)), torch.randint(0, 10, (256,)))
    loss = loss + F.cross_entropy(cnn(torch.randn(16, 3, 32, 32)), torch.randint(0, 10, (16,)))
    loss.backward()
    opt.step()
x = torch.randn(400, 300, requires_grad=True)
(g,) = torch.autograd.grad((x @ x.t()).softmax(-1).sum(), x)
after = others()
print(before, after)
sys.exit(0 if before == after else 1)
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux /proc")
def test_kernels_use_one_pool_forward_and_backward():
    # Every parallel kernel, forward or backward, runs on ferrotorch's pool: a second pool
    # (rayon's global one) on the same cores would spin against it.
    r = subprocess.run([sys.executable, "-c", _THREAD_PROBE], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
