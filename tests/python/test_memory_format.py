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


# Elementwise results are laid out like their inputs (PyTorch's TensorIterator order: dims by
# the inputs' strides, the first input deciding first). Expected strides from PyTorch 2.x.
_A = np.arange(6.0).reshape(2, 3)
_B = np.arange(6.0).reshape(3, 2)
_C4 = np.arange(120.0).reshape(2, 3, 4, 5)
_LAYOUT_CASES = {
    "t_mul_scalar": (lambda m, d: m(_A, d).t() * 1.5, (1, 3)),
    "exp_t": (lambda m, d: torch.exp(m(_A, d).t()), (1, 3)),
    "contig_plus_t": (lambda m, d: m(_B, d) + m(_A, d).t(), (2, 1)),
    "t_plus_contig": (lambda m, d: m(_A, d).t() + m(_B, d), (1, 3)),
    "perm4_plus1": (lambda m, d: m(_C4, d).permute(0, 2, 3, 1) + 1, (60, 5, 1, 20)),
    "perm4_plus_bcast": (lambda m, d: m(_C4, d).permute(0, 2, 3, 1) + m(np.ones(3), d),
                         (60, 5, 1, 20)),
    "contig4_plus_perm4": (lambda m, d: m(np.ones((2, 4, 5, 3)), d)
                           + m(_C4, d).permute(0, 2, 3, 1), (60, 15, 3, 1)),
    "bcast_col_t": (lambda m, d: m(_A, d).t() * m(np.ones((3, 1)), d), (1, 3)),
    "sliced_t": (lambda m, d: m(_A, d).t()[::2] * 2, (1, 2)),
    "expanded": (lambda m, d: m(np.ones((3, 1)), d).expand(3, 4) * 2, (4, 1)),
    "neg_t": (lambda m, d: -m(_A, d).t(), (1, 3)),
    "cmp_t": (lambda m, d: m(_A, d).t() > 2, (1, 3)),
    "t_0d": (lambda m, d: m(_A, d).t() * torch.tensor(2.0), (1, 3)),
    "sub3d": (lambda m, d: m(np.arange(24.0).reshape(2, 3, 4), d).transpose(0, 2) - 1,
              (1, 4, 12)),
    "abs_channels_last": (lambda m, d: m(np.ones((2, 3, 4, 4)), d)
                          .to(memory_format=torch.channels_last).abs(), (48, 1, 12, 3)),
}


def _numpy_result(name):
    # the same expression on NumPy arrays (values only)
    def m(a, d):
        return _NpT(np.asarray(a))
    out = _LAYOUT_CASES[name][0](m, "cpu")
    return out.a


class _NpT:
    """Just enough of a tensor over NumPy to evaluate the cases' expressions for values."""

    def __init__(self, a):
        self.a = a

    def t(self):
        return _NpT(self.a.T)

    def permute(self, *p):
        return _NpT(self.a.transpose(p))

    def transpose(self, i, j):
        return _NpT(np.swapaxes(self.a, i, j))

    def expand(self, *s):
        return _NpT(np.broadcast_to(self.a, s))

    def to(self, memory_format=None):
        return self

    def abs(self):
        return _NpT(np.abs(self.a))

    def __getitem__(self, k):
        return _NpT(self.a[k])

    def _v(self, o):
        return o.a if isinstance(o, _NpT) else (o.item() if hasattr(o, "item") else o)

    def __mul__(self, o):
        return _NpT(self.a * self._v(o))

    def __add__(self, o):
        return _NpT(self.a + self._v(o))

    def __sub__(self, o):
        return _NpT(self.a - self._v(o))

    def __gt__(self, o):
        return _NpT(self.a > self._v(o))

    def __neg__(self):
        return _NpT(-self.a)

    def __array__(self, dtype=None, copy=None):
        return self.a


def _layout_devices():
    cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")
    return ["cpu", pytest.param("cuda", marks=[pytest.mark.cuda, cuda])]


@pytest.mark.parametrize("device", _layout_devices())
@pytest.mark.parametrize("name", list(_LAYOUT_CASES))
def test_elementwise_result_keeps_the_inputs_layout(name, device):
    fn, strides = _LAYOUT_CASES[name]

    def make(a, d):
        return torch.tensor(np.asarray(a), device=d)

    if name == "exp_t":
        expected = np.exp(_A.T)
    else:
        expected = _numpy_result(name)
    out = fn(make, device)
    assert out.device.type == device
    assert out.stride() == strides, (out.stride(), strides)
    np.testing.assert_allclose(out.cpu().numpy(), expected)
    # the data really is in that order: a view that needs it works, and so does reshape
    assert out.reshape(-1).tolist() == expected.reshape(-1).tolist()


# The other elementwise ops keep the layout too (ternary ones, ones with extra arguments).
_T = np.arange(6.0).reshape(2, 3)
_MORE_LAYOUT_OPS = {
    "where": (lambda m, x: m.where(x > 2, x, 0.0), lambda a: np.where(a > 2, a, 0.0)),
    "where_t": (lambda m, x: m.where(x > 2, x, m.zeros(3, 2, dtype=x.dtype, device=x.device)),
                lambda a: np.where(a > 2, a, 0.0)),
    "clamp": (lambda m, x: x.clamp(1, 3), lambda a: np.clip(a, 1, 3)),
    "clamp_t": (lambda m, x: x.clamp(min=m.full((3, 2), 2.0, dtype=x.dtype, device=x.device)),
                lambda a: np.maximum(a, 2.0)),
    "lerp": (lambda m, x: m.lerp(x, m.ones(3, 2, dtype=x.dtype, device=x.device), 0.5),
             lambda a: a + 0.5 * (1 - a)),
    "addcmul": (lambda m, x: m.addcmul(x, x, x, value=2), lambda a: a + 2 * a * a),
    "addcdiv": (lambda m, x: m.addcdiv(x, x, x + 1), lambda a: a + a / (a + 1)),
    "nan_to_num": (lambda m, x: x.nan_to_num(), lambda a: a),
    "fmod": (lambda m, x: m.fmod(x, 2), lambda a: np.fmod(a, 2)),
    "add_alpha": (lambda m, x: m.add(x, x, alpha=2), lambda a: 3 * a),
    "sub_alpha": (lambda m, x: m.sub(x, x * 2, alpha=0.5), lambda a: 0 * a),
    "div_floor": (lambda m, x: m.div(x, 4, rounding_mode="floor"), lambda a: np.floor(a / 4)),
    "hardtanh": (lambda m, x: m.nn.functional.hardtanh(x - 2), lambda a: np.clip(a - 2, -1, 1)),
}


@pytest.mark.parametrize("device", _layout_devices())
@pytest.mark.parametrize("name", list(_MORE_LAYOUT_OPS))
def test_more_elementwise_ops_keep_the_inputs_layout(name, device):
    fn, ref = _MORE_LAYOUT_OPS[name]
    x = torch.tensor(_T, device=device).t()  # strides (1, 3)
    out = fn(torch, x)
    assert out.stride() == (1, 3), out.stride()
    np.testing.assert_allclose(out.cpu().numpy(), ref(_T.T))
