"""torch.isclose / allclose / equal and the small everyday helpers (type_as, finfo, iinfo,
diff, dist, cdist, isin, triu_indices, logit, rot90, formatting a 0-d tensor) vs NumPy."""

import math

import numpy as np
import pytest

import ferrotorch as torch


def test_isclose_allclose_equal():
    a = torch.tensor([1.0, 2.0, float("inf"), float("nan"), 0.0])
    b = torch.tensor([1.0 + 1e-6, 2.1, float("inf"), float("nan"), 1e-9])
    assert torch.isclose(a, b).tolist() == [True, False, True, False, True]
    assert torch.isclose(a, b, equal_nan=True).tolist() == [True, False, True, True, True]
    assert a.isclose(b, rtol=0.1).tolist() == [True, True, True, False, True]
    np.testing.assert_array_equal(
        torch.isclose(a, b, rtol=1e-3, atol=0).numpy(),
        np.isclose(a.numpy(), b.numpy(), rtol=1e-3, atol=0))
    assert torch.isclose(torch.tensor([1, 5]), torch.tensor([1, 6]), atol=1).tolist() == [True,
                                                                                          True]
    assert torch.isclose(torch.tensor([1.0]), 1.0 + 1e-9).item()
    assert torch.allclose(a[:2], b[:2], rtol=0.1) is True
    assert torch.allclose(a, a) is False and torch.allclose(a, a, equal_nan=True) is True
    with pytest.raises(RuntimeError, match="did not match"):
        torch.allclose(torch.ones(2), torch.ones(2, dtype=torch.float64))
    assert torch.equal(torch.arange(3), torch.tensor([0, 1, 2])) is True
    assert torch.equal(torch.ones(2), torch.ones(3)) is False
    assert torch.ones(2, 1).equal(torch.ones(2, 1)) and not torch.ones(2).equal(torch.ones(1, 2))
    assert not torch.equal(a, a)  # NaN != NaN
    w = torch.ones(2, requires_grad=True)
    assert torch.allclose(w * 2, torch.full((2,), 2.0))


def test_type_as_info_and_predicates():
    x = torch.tensor([1.7, -2.2])
    assert x.type_as(torch.tensor([1])).tolist() == [1, -2]
    assert torch.tensor([1, 2]).type_as(x).dtype == torch.float32
    assert torch.finfo(torch.float32).eps == np.finfo(np.float32).eps
    assert torch.finfo(torch.float64).max == np.finfo(np.float64).max
    assert torch.finfo(torch.float16).tiny == np.finfo(np.float16).tiny
    assert torch.finfo().bits == 32
    assert torch.iinfo(torch.int32).min == -2 ** 31 and torch.iinfo(torch.uint8).max == 255
    with pytest.raises(TypeError):
        torch.finfo(torch.int64)
    with pytest.raises(TypeError):
        torch.iinfo(torch.float32)
    assert torch.is_tensor(x) and not torch.is_tensor([1.0])
    assert torch.numel(torch.zeros(2, 3)) == 6 and torch.is_floating_point(x)
    c = torch.clone(x)
    c[0] = 0
    assert x[0].item() == pytest.approx(1.7)
    assert x.get_device() == -1 and not x.is_pinned()
    assert f"{torch.tensor(2.0 / 3):.3f}" == "0.667" and f"{torch.tensor(7):>3}" == "  7"
    assert format(torch.tensor([1.0, 2.0])) == str(torch.tensor([1.0, 2.0]))
    with pytest.raises(TypeError):
        f"{torch.tensor([1.0, 2.0]):.2f}"


def test_diff_dist_cdist_isin_tri_logit_rot90():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 5))
    np.testing.assert_allclose(torch.diff(torch.tensor(a)).numpy(), np.diff(a))
    np.testing.assert_allclose(torch.tensor(a).diff(n=2, dim=0).numpy(), np.diff(a, 2, axis=0))
    np.testing.assert_allclose(
        torch.diff(torch.tensor(a), prepend=torch.zeros(3, 1), append=torch.ones(3, 2)).numpy(),
        np.diff(a, prepend=np.zeros((3, 1)), append=np.ones((3, 2))))
    assert torch.diff(torch.tensor([1, 3]), prepend=0).tolist() == [1, 2]
    assert torch.diff(torch.tensor([True, True, False])).tolist() == [False, True]

    b = rng.standard_normal((3, 5))
    assert torch.dist(torch.tensor(a), torch.tensor(b)).item() == pytest.approx(
        np.linalg.norm((a - b).ravel()))
    assert torch.dist(torch.tensor(a), torch.tensor(b), 1).item() == pytest.approx(
        np.abs(a - b).sum())

    x1 = rng.standard_normal((2, 4, 3))
    x2 = rng.standard_normal((2, 5, 3))
    ref = np.sqrt(((x1[:, :, None] - x2[:, None]) ** 2).sum(-1))
    np.testing.assert_allclose(torch.cdist(torch.tensor(x1), torch.tensor(x2)).numpy(), ref)
    ref1 = np.abs(x1[:, :, None] - x2[:, None]).sum(-1)
    np.testing.assert_allclose(torch.cdist(torch.tensor(x1), torch.tensor(x2), p=1).numpy(),
                               ref1)
    # coinciding rows: distance 0 and gradient 0 (not nan)
    p = torch.tensor([[0.0, 0.0], [3.0, 4.0]], requires_grad=True)
    d = torch.cdist(p, p)
    assert d.tolist() == [[0.0, 5.0], [5.0, 0.0]]
    d.sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), [[-1.2, -1.6], [1.2, 1.6]], rtol=1e-6)

    assert torch.isin(torch.tensor([[1, 2], [3, 4]]), torch.tensor([2, 3])).tolist() == [
        [False, True], [True, False]]
    assert torch.isin(torch.tensor([1, 2]), torch.tensor([2]), invert=True).tolist() == [True,
                                                                                         False]
    for off in (-1, 0, 2):
        np.testing.assert_array_equal(torch.triu_indices(3, 4, off).numpy(),
                                      np.stack(np.triu_indices(3, off, 4)))
        np.testing.assert_array_equal(torch.tril_indices(4, 3, off).numpy(),
                                      np.stack(np.tril_indices(4, off, 3)))
    assert torch.triu_indices(3, 3).dtype == torch.int64
    assert torch.logit(torch.tensor([0.5, 0.75])).tolist() == pytest.approx([0.0, math.log(3)])
    assert torch.logit(torch.tensor([0.0]), eps=1e-6).item() == pytest.approx(
        math.log(1e-6 / (1 - 1e-6)), rel=1e-4)
    m = np.arange(6.0).reshape(2, 3)
    for k in range(-1, 5):
        np.testing.assert_array_equal(torch.rot90(torch.tensor(m), k).numpy(), np.rot90(m, k))
    np.testing.assert_array_equal(torch.tensor(m).rot90(1, [1, 0]).numpy(),
                                  np.rot90(m, 1, (1, 0)))
