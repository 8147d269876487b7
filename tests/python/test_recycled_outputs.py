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


# (lhs shape, rhs shape) per matmul path: plain gemm, matrix-vector both ways, the wide-short
# column-major route, small batched products run in parallel, and an empty inner dim.
MATMUL_CASES = [
    ((256, 40), (40, 300)),
    ((76800, 3), (3,)),  # matrix @ vector
    ((3,), (3, 76800)),  # vector @ matrix
    ((8, 256), (256, 9600)),  # wide-short (transposed into the output)
    ((32, 8, 20), (32, 20, 300)),  # batched, small per-matrix work
    ((256, 0), (0, 300)),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.float16])
@pytest.mark.parametrize("case", range(len(MATMUL_CASES)))
def test_matmul_overwrites_its_recycled_output(dtype, case):
    sa, sb = MATMUL_CASES[case]
    a = rng.integers(-3, 4, sa).astype(np.float64)
    b = rng.integers(-3, 4, sb).astype(np.float64)
    want = a @ b
    at, bt = torch.tensor(a, dtype=dtype), torch.tensor(b, dtype=dtype)
    for _ in range(3):
        t = torch.full(want.shape, float("nan") if dtype.is_floating_point else 7, dtype=dtype)
        del t
        np.testing.assert_array_equal((at @ bt).double().numpy(), want)
        t = torch.full(want.shape, float("nan") if dtype.is_floating_point else 7, dtype=dtype)
        del t
        got = torch.addmm(torch.ones(want.shape[-1], dtype=dtype), at, bt, beta=0) if (
            at.dim() == 2 and bt.dim() == 2) else at @ bt
        np.testing.assert_array_equal(got.double().numpy(), want)
