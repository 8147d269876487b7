"""Kernels that write into recycled output buffers (softmax, scans, cat, where): the pool
hands back memory that still holds an earlier tensor's values, so every element of the result
must be written. Each case first frees a NaN-filled tensor of the same size and dtype."""

import numpy as np
import pytest

import ferrotorch as torch

rng = np.random.default_rng(5)
SHAPE = (256, 300)  # 76,800 elements: above the 128 KiB recycling threshold in float32


def poison(dtype):
    """Allocate and drop a NaN-filled tensor so the pool holds a dirty buffer of this size."""
    t = torch.full(SHAPE, float("nan"), dtype=dtype)
    del t


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("dim", [0, 1])
def test_softmax_and_log_softmax(dtype, dim):
    x = rng.standard_normal(SHAPE)
    xt = torch.tensor(x, dtype=dtype)
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    want = e / e.sum(axis=dim, keepdims=True)
    for _ in range(3):
        poison(dtype)
        np.testing.assert_allclose(xt.softmax(dim).double().numpy(), want, rtol=1e-5, atol=1e-7)
        poison(dtype)
        np.testing.assert_allclose(xt.log_softmax(dim).double().numpy(), np.log(want),
                                   rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dim", [0, 1])
def test_cumsum_cumprod(dim):
    x = rng.uniform(0.9, 1.1, SHAPE)
    xt = torch.tensor(x)
    for _ in range(3):
        poison(torch.float64)
        np.testing.assert_allclose(xt.cumsum(dim).numpy(), np.cumsum(x, axis=dim), rtol=1e-12)
        poison(torch.float64)
        np.testing.assert_allclose(xt.cumprod(dim).numpy(), np.cumprod(x, axis=dim), rtol=1e-12)


def test_cat_and_where():
    a = rng.standard_normal((128, 300)).astype(np.float32)
    b = rng.standard_normal((128, 300)).astype(np.float32)
    cond = rng.random(SHAPE) < 0.5
    big_a = rng.standard_normal(SHAPE).astype(np.float32)
    big_b = rng.standard_normal(SHAPE).astype(np.float32)
    for _ in range(3):
        poison(torch.float32)
        np.testing.assert_array_equal(torch.cat([torch.tensor(a), torch.tensor(b)]).numpy(),
                                      np.concatenate([a, b]))
        poison(torch.float32)
        got = torch.where(torch.tensor(cond), torch.tensor(big_a), torch.tensor(big_b))
        np.testing.assert_array_equal(got.numpy(), np.where(cond, big_a, big_b))
