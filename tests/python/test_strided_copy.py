"""Copies of strided tensors into contiguous ones (``contiguous``, ``clone``, casts) against
NumPy, with emphasis on the tiled path for transposed layouts: sizes that are and are not
multiples of the tile, a leading batch, storage offsets, stepped slices, dtype casts, and
outputs large enough to split across threads."""

import numpy as np
import pytest

import ferrotorch as torch

rng = np.random.default_rng(11)


def check(t, want):
    got = t.contiguous()
    assert got.is_contiguous()
    assert tuple(got.shape) == want.shape
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("shape", [(16, 16), (17, 33), (100, 20), (5, 40), (40, 5), (300, 200),
                                   (1, 64), (64, 1)])
def test_transposed_matrix(shape):
    a = rng.standard_normal(shape).astype(np.float32)
    check(torch.from_numpy(a).t(), np.ascontiguousarray(a.T))


@pytest.mark.parametrize("perm", [(0, 2, 1), (2, 0, 1), (1, 2, 0), (2, 1, 0)])
@pytest.mark.parametrize("shape", [(3, 20, 17), (200, 16, 20), (2, 70, 300)])
def test_permuted_batches(shape, perm):
    a = rng.standard_normal(shape)
    check(torch.from_numpy(a).permute(*perm), np.ascontiguousarray(a.transpose(perm)))


def test_offsets_and_steps():
    a = rng.standard_normal((70, 90)).astype(np.float32)
    t = torch.from_numpy(a)
    check(t[3:, 2:].t(), np.ascontiguousarray(a[3:, 2:].T))
    check(t[::2, :].t(), np.ascontiguousarray(a[::2, :].T))
    check(t[5:60:3, 1::2].t(), np.ascontiguousarray(a[5:60:3, 1::2].T))
    check(t.t()[4:, 7:], np.ascontiguousarray(a.T[4:, 7:]))


@pytest.mark.parametrize("src,dst", [(np.int64, torch.float64), (np.float32, torch.float16),
                                     (np.float64, torch.int32), (np.bool_, torch.float32),
                                     (np.uint8, torch.int64)])
def test_transposed_casts(src, dst):
    a = (rng.standard_normal((48, 37)) * 50).astype(src)
    got = torch.from_numpy(a).t().to(dst)
    want = np.ascontiguousarray(a.T).astype(torch.empty(0, dtype=dst).numpy().dtype)
    np.testing.assert_array_equal(got.numpy(), want)


def test_clone_of_transpose_is_independent():
    a = rng.standard_normal((33, 19)).astype(np.float32)
    t = torch.from_numpy(a.copy())
    c = t.t().clone(memory_format=torch.contiguous_format)
    t.zero_()
    assert c.is_contiguous()
    np.testing.assert_array_equal(c.numpy(), a.T)
