"""Memory formats: torch.channels_last & co., memory_format= on contiguous/is_contiguous/to/
clone/*_like/empty, Module.to(memory_format=), torch.layout/strided, empty_permuted."""

import pickle

import numpy as np
import pytest

import ferrotorch as torch


def cl_strides(n, c, h, w):
    c1, h1, w1 = max(c, 1), max(h, 1), max(w, 1)
    return (h1 * w1 * c1, 1, w1 * c1, c1)


def test_constants_and_repr():
    assert repr(torch.channels_last) == "torch.channels_last"
    assert repr(torch.contiguous_format) == "torch.contiguous_format"
    assert repr(torch.preserve_format) == "torch.preserve_format"
    assert repr(torch.channels_last_3d) == "torch.channels_last_3d"
    assert isinstance(torch.channels_last, torch.memory_format)
    assert repr(torch.strided) == "torch.strided"
    assert isinstance(torch.strided, torch.layout)
    assert torch.randn(2).layout is torch.strided
    assert pickle.loads(pickle.dumps(torch.channels_last)) is torch.channels_last
    assert pickle.loads(pickle.dumps(torch.strided)) is torch.strided


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 1, 4, 4), (1, 3, 1, 1), (0, 3, 2, 2)])
def test_contiguous_channels_last_strides(shape):
    x = torch.randn(*shape)
    y = x.contiguous(memory_format=torch.channels_last)
    assert y.is_contiguous(memory_format=torch.channels_last)
    if shape in ((2, 1, 4, 4), (1, 3, 1, 1)):  # already channels-last contiguous: kept
        assert y is x
    else:
        assert y.stride() == cl_strides(*shape)
    assert x.clone(memory_format=torch.channels_last).stride() == cl_strides(*shape)
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    assert y.contiguous(memory_format=torch.channels_last) is y
    z = y.contiguous()
    assert z.is_contiguous() and (z.stride() == x.stride() or x.numel() == 0)
    np.testing.assert_array_equal(z.numpy(), x.numpy())


def test_is_contiguous_channels_last_generic():
    x = torch.randn(2, 3, 4, 5)
    assert x.is_contiguous() and not x.is_contiguous(memory_format=torch.channels_last)
    assert not torch.randn(2, 3).is_contiguous(memory_format=torch.channels_last)
    assert x.is_contiguous(memory_format=torch.preserve_format)
    y = x.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)
    assert y.is_contiguous(memory_format=torch.channels_last) and not y.is_contiguous()


def test_channels_last_3d():
    x = torch.randn(2, 3, 4, 5, 6)
    y = x.contiguous(memory_format=torch.channels_last_3d)
    assert y.stride() == (360, 1, 90, 18, 3)
    assert y.is_contiguous(memory_format=torch.channels_last_3d)
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    with pytest.raises(RuntimeError, match="required rank 5 tensor"):
        torch.randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last_3d)


def test_rank_errors():
    x = torch.randn(2, 3)
    for f in (lambda: x.contiguous(memory_format=torch.channels_last),
              lambda: x.to(memory_format=torch.channels_last),
              lambda: x.clone(memory_format=torch.channels_last),
              lambda: torch.empty_like(x, memory_format=torch.channels_last)):
        with pytest.raises(RuntimeError, match="required rank 4 tensor"):
            f()
    with pytest.raises(TypeError):
        x.contiguous(memory_format="channels_last")


def test_to_memory_format_and_values_through_ops():
    x = torch.randn(2, 3, 5, 5)
    y = x.to(memory_format=torch.channels_last)
    assert y.stride() == cl_strides(2, 3, 5, 5)
    assert x.to(torch.float64, memory_format=torch.channels_last).stride() == y.stride()
    assert y.to(memory_format=torch.channels_last) is y
    assert y.to(memory_format=torch.contiguous_format).is_contiguous()
    w = torch.randn(4, 3, 3, 3)
    np.testing.assert_allclose(torch.nn.functional.conv2d(y, w).numpy(),
                               torch.nn.functional.conv2d(x, w).numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose((y * 2 + x).numpy(), x.numpy() * 3, rtol=1e-6)
    np.testing.assert_allclose(y.sum((2, 3)).numpy(), x.numpy().sum((2, 3)), rtol=1e-5)
    np.testing.assert_array_equal(y.reshape(2, -1).numpy(), x.numpy().reshape(2, -1))
    # to(dtype) of a channels-last tensor keeps the format (preserve_format)
    assert y.to(torch.float64).stride() == y.stride()


def test_autograd_through_channels_last():
    x = torch.randn(2, 3, 4, 4, requires_grad=True)
    y = x.contiguous(memory_format=torch.channels_last)
    (y * torch.arange(96.0).reshape(2, 3, 4, 4)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.arange(96.0).reshape(2, 3, 4, 4))
    x.grad = None
    y = x.contiguous(memory_format=torch.channels_last)
    y.clone().pow(2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy(), rtol=1e-6)


def test_clone_preserve_format():
    x = torch.randn(2, 3, 4, 5)
    y = x.contiguous(memory_format=torch.channels_last)
    c = y.clone()
    assert c.stride() == y.stride()
    np.testing.assert_array_equal(c.numpy(), x.numpy())
    assert torch.clone(y).stride() == y.stride()
    assert y.clone(memory_format=torch.contiguous_format).stride() == x.stride()
    assert x.clone(memory_format=torch.channels_last).stride() == y.stride()
    t = torch.randn(3, 4).t()
    assert t.clone().stride() == (1, 4)  # dense transposed: strides kept
    s = torch.randn(3, 8)[:, ::2]  # not dense: row-major
    assert s.clone().stride() == (4, 1)
    np.testing.assert_array_equal(s.clone().numpy(), s.numpy())
    # sliced channels-last (not dense) -> suggested format channels_last
    sl = y[:, :, :, :3]
    assert sl.clone().stride() == cl_strides(2, 3, 4, 3)
    cc = y.clone()
    cc.add_(1)
    np.testing.assert_allclose(cc.numpy(), x.numpy() + 1, rtol=1e-6)
    np.testing.assert_array_equal(y.numpy(), x.numpy())  # the clone is a copy


def test_like_factories():
    x = torch.randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    for f in (torch.empty_like, torch.zeros_like, torch.ones_like, torch.rand_like,
              torch.randn_like):
        assert f(x).stride() == x.stride(), f
        assert f(x, memory_format=torch.contiguous_format).is_contiguous()
        assert f(x, dtype=torch.float64).stride() == x.stride()
    assert torch.full_like(x, 7.0).stride() == x.stride()
    assert torch.randint_like(x, 5).stride() == x.stride()
    np.testing.assert_array_equal(torch.ones_like(x).numpy(), np.ones((2, 3, 4, 5)))
    c = torch.randn(2, 3, 4, 5)
    assert torch.zeros_like(c, memory_format=torch.channels_last).stride() == x.stride()
    assert torch.zeros_like(c).stride() == c.stride()


def test_empty_memory_format_and_empty_permuted():
    e = torch.empty(2, 3, 4, 5, memory_format=torch.channels_last)
    assert e.shape == (2, 3, 4, 5) and e.stride() == cl_strides(2, 3, 4, 5)
    assert torch.empty((2, 3), memory_format=torch.contiguous_format).stride() == (3, 1)
    p = torch.empty_permuted((2, 3, 4, 5), (0, 2, 3, 1))
    assert p.shape == (2, 3, 4, 5) and p.stride() == cl_strides(2, 3, 4, 5)
    assert torch.empty_permuted((2, 3), (1, 0), dtype=torch.float64).dtype == torch.float64
    with pytest.raises(RuntimeError):
        torch.empty_permuted((2, 3), (0, 0))


def test_dim_order():
    x = torch.randn(2, 3, 4, 5)
    assert x.dim_order() == (0, 1, 2, 3)
    assert x.contiguous(memory_format=torch.channels_last).dim_order() == (0, 2, 3, 1)


def test_module_to_memory_format_and_training():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4),
                            torch.nn.Flatten(), torch.nn.Linear(4 * 4 * 4, 2))
    ref = [p.detach().clone(memory_format=torch.contiguous_format) for p in m.parameters()]
    m.to(memory_format=torch.channels_last)
    assert m[0].weight.is_contiguous(memory_format=torch.channels_last)
    assert m[0].weight.stride() == cl_strides(4, 3, 3, 3)
    assert m[3].weight.is_contiguous()  # 2-D: untouched
    for p, r in zip(m.parameters(), ref):
        np.testing.assert_array_equal(p.detach().numpy(), r.numpy())
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    x = torch.randn(2, 3, 6, 6).to(memory_format=torch.channels_last)
    loss = m(x).sum()
    loss.backward()
    assert m[0].weight.grad.shape == (4, 3, 3, 3)
    opt.step()
    with pytest.raises(RuntimeError, match="required rank 5"):
        torch.nn.Conv2d(3, 4, 3).to(memory_format=torch.channels_last_3d)


def test_against_torch():
    pt = pytest.importorskip("torch")
    for shape in [(2, 3, 4, 5), (2, 1, 4, 4), (1, 3, 1, 1), (0, 3, 2, 2), (3, 1, 1, 2)]:
        a = np.random.randn(*shape).astype(np.float32)
        x, tx = torch.tensor(a), pt.tensor(a)
        y = x.contiguous(memory_format=torch.channels_last)
        ty = tx.contiguous(memory_format=pt.channels_last)
        assert y.stride() == ty.stride()
        assert y.is_contiguous() == ty.is_contiguous()
        assert y.clone().stride() == ty.clone().stride()
        assert torch.empty_like(y).stride() == pt.empty_like(ty).stride()
        assert (y[:, :, :, :1].clone().stride() == ty[:, :, :, :1].clone().stride())
        assert x.clone(memory_format=torch.channels_last).stride() == (
            tx.clone(memory_format=pt.channels_last).stride())
        if x.numel():
            assert x.transpose(1, 3).clone().stride() == tx.transpose(1, 3).clone().stride()
        assert (y.is_contiguous(memory_format=torch.channels_last)
                == ty.is_contiguous(memory_format=pt.channels_last))
    a = np.random.randn(2, 3, 4, 5, 6).astype(np.float32)
    assert (torch.tensor(a).contiguous(memory_format=torch.channels_last_3d).stride()
            == pt.tensor(a).contiguous(memory_format=pt.channels_last_3d).stride())
    m, tm = pt.nn.Conv2d(3, 4, 3), None
    m.to(memory_format=pt.channels_last)
    tm = torch.nn.Conv2d(3, 4, 3).to(memory_format=torch.channels_last)
    assert tm.weight.stride() == m.weight.stride()
    assert (torch.empty_permuted((2, 3, 4), (2, 0, 1)).stride()
            == pt.empty_permuted((2, 3, 4), (2, 0, 1)).stride())
