"""set_num_threads / get_num_threads: the setting sticks and results do not depend on it."""

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
