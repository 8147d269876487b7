"""In-place ops on contiguous float tensors that autograd need not see are computed straight
into the tensor's memory (no temporary, no copy back). These tests pin that path to NumPy on
broadcast, strided, scalar, aliasing and view operands, and check that the cases it must not
take (aliasing, dtype changes, autograd) still behave as PyTorch."""

import numpy as np
import pytest

import ferrotorch as torch

RNG = np.random.default_rng(7)

BINARY = [
    ("add_", np.add),
    ("sub_", np.subtract),
    ("mul_", np.multiply),
    ("div_", np.divide),
    ("maximum", np.maximum),
]


def _rand(shape, dtype):
    return np.asarray(RNG.standard_normal(shape) + 0.1).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,ref", BINARY[:4])
@pytest.mark.parametrize(
    "shape,other_shape",
    [((5, 7), (5, 7)), ((5, 7), (7,)), ((4, 3, 6), (3, 1)), ((300, 200), (200,)), ((0, 3), (3,)), ((), ())],
)
def test_binary_inplace_matches_numpy(dtype, name, ref, shape, other_shape):
    a = _rand(shape, dtype)
    b = _rand(other_shape, dtype)
    if np.broadcast_shapes(shape, other_shape) != shape:
        pytest.skip("result does not fit the destination")
    t = torch.from_numpy(a.copy())
    ptr = t.data_ptr()
    out = getattr(t, name)(torch.from_numpy(b))
    assert out is t and t.data_ptr() == ptr
    np.testing.assert_allclose(t.numpy(), ref(a, b), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_binary_inplace_strided_and_scalar_operands(dtype):
    a = _rand((64, 600), dtype)  # large enough for the parallel path
    b = _rand((600, 64), dtype)
    t = torch.from_numpy(a.copy())
    t.add_(torch.from_numpy(b).t())  # transposed operand
    np.testing.assert_allclose(t.numpy(), a + b.T, rtol=1e-6)
    t.mul_(2.5)
    np.testing.assert_allclose(t.numpy(), (a + b.T) * dtype(2.5), rtol=1e-6)
    step = torch.from_numpy(b)[:, ::4]  # stepped columns, shape (600, 16)
    u = torch.from_numpy(a[:16, :].T.copy())  # (600, 16)
    u.sub_(step)
    np.testing.assert_allclose(u.numpy(), a[:16, :].T - b[:, ::4], rtol=1e-6)
    t.div_(4)
    t.sub_(1)
    np.testing.assert_allclose(t.numpy(), (a + b.T) * dtype(2.5) / 4 - 1, rtol=1e-6)


def test_inplace_on_contiguous_view_writes_into_base():
    a = _rand((6, 5), np.float32)
    base = torch.from_numpy(a.copy())
    v = base[2:4]  # contiguous view with a storage offset
    v.mul_(torch.from_numpy(a[0]))
    v.neg_()
    expect = a.copy()
    expect[2:4] = -(a[2:4] * a[0])
    np.testing.assert_allclose(base.numpy(), expect, rtol=1e-6)


def test_inplace_into_numpy_memory_is_seen_by_numpy():
    a = _rand((1000,), np.float64)
    orig = a.copy()
    t = torch.from_numpy(a)
    t.add_(1.0)
    np.testing.assert_allclose(a, orig + 1.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_aliasing_operands(dtype):
    a = _rand((40, 40), dtype)
    t = torch.from_numpy(a.copy())
    t.add_(t)  # same memory, same layout
    np.testing.assert_allclose(t.numpy(), 2 * a, rtol=1e-6)
    t = torch.from_numpy(a.copy())
    t.add_(t.t())  # same memory, transposed: reads must see the old values
    np.testing.assert_allclose(t.numpy(), a + a.T, rtol=1e-6)
    t = torch.from_numpy(a.copy())
    t[1:].sub_(t[:-1])
    expect = a.copy()
    expect[1:] = a[1:] - a[:-1]
    np.testing.assert_allclose(t.numpy(), expect, rtol=1e-6)


def test_dtype_rules_still_apply():
    t = torch.ones(3, dtype=torch.float32)
    t.add_(torch.ones(3, dtype=torch.float64))  # computed in f64, stored as f32
    assert t.dtype == torch.float32 and t.tolist() == [2.0, 2.0, 2.0]
    t.mul_(torch.tensor([2, 3, 4]))
    assert t.tolist() == [4.0, 6.0, 8.0]
    i = torch.ones(3, dtype=torch.int64)
    with pytest.raises(RuntimeError, match="can't be cast"):
        i.mul_(1.5)
    with pytest.raises(RuntimeError, match="shape"):
        torch.ones(3).add_(torch.ones(2, 3))


def test_version_counter_and_autograd_errors():
    x = torch.randn(5, requires_grad=True)
    y = x.sigmoid()  # saves its output
    with torch.no_grad():
        y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x.add_(1)
    z = x * 1  # non-leaf: in-place goes through autograd and gets a grad_fn
    z.mul_(3)
    z.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(5, 3.0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "name,ref",
    [
        ("neg_", np.negative),
        ("abs_", np.abs),
        ("sqrt_", lambda v: np.sqrt(np.abs(v))),
        ("reciprocal_", np.reciprocal),
        ("floor_", np.floor),
        ("ceil_", np.ceil),
        ("trunc_", np.trunc),
        ("round_", np.round),
        ("exp_", np.exp),
        ("relu_", lambda v: np.maximum(v, 0)),
        ("sign_", np.sign),
        ("frac_", lambda v: v - np.trunc(v)),
    ],
)
@pytest.mark.parametrize("n", [0, 7, 70_000])
def test_unary_inplace_matches_numpy(dtype, name, ref, n):
    a = (RNG.standard_normal(n) * 3).astype(dtype)
    if name == "sqrt_":
        a = np.abs(a)
    t = torch.from_numpy(a.copy())
    getattr(t, name)()
    np.testing.assert_allclose(t.numpy(), ref(a), rtol=1e-6)


@pytest.mark.parametrize("name", ["sqrt", "floor", "ceil", "trunc", "round", "neg", "abs", "rsqrt", "frac"])
def test_unary_out_of_place_strided_matches_numpy(name):
    a = np.abs(RNG.standard_normal((300, 250)) * 4).astype(np.float32) + 0.5
    t = torch.from_numpy(a).t()[::2]
    special = {"rsqrt": lambda v: 1 / np.sqrt(v), "frac": lambda v: v - np.trunc(v), "neg": np.negative}
    ref = special.get(name) or getattr(np, name)
    np.testing.assert_allclose(getattr(t, name)().numpy(), ref(a.T[::2]), rtol=1e-6)


def test_copy_into_contiguous_with_broadcast_and_cast():
    t = torch.zeros(500, 300)
    src = torch.arange(300, dtype=torch.float64)
    t.copy_(src)
    np.testing.assert_array_equal(t.numpy(), np.broadcast_to(np.arange(300, dtype=np.float32), (500, 300)))
    t.copy_(t.t().contiguous().t())
    assert t[7, 299].item() == 299.0


def test_inplace_on_empty_views_past_their_storage():
    # t[1] of a (2, 0) tensor has storage offset 1 into an empty storage.
    t = torch.zeros(2, 0)
    t[1] = 7
    t[1].add_(1)
    t[1].neg_()
    t[1].copy_(torch.ones(0))
    t[-1].mul_(torch.ones(0))
    assert t.shape == (2, 0)
