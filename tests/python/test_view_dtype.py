"""Tensor.view(dtype) (the same bytes as another dtype, zero-copy), the refusal of in-place
writes into tensors whose elements overlap (expand), and the index/dim-list checks that go
with them. Checked against NumPy (``ndarray.view``) so it runs without PyTorch; the CUDA
cases need a GPU (``pytest -m cuda``)."""

import numpy as np
import pytest

import ferrotorch as torch

HAS_CUDA = torch.cuda.is_available()

NP = {torch.float32: np.float32, torch.float64: np.float64, torch.float16: np.float16,
      torch.int64: np.int64, torch.int32: np.int32, torch.int16: np.int16,
      torch.int8: np.int8, torch.uint8: np.uint8, torch.bool: np.bool_}
OVERLAP = "more than one element of the written-to tensor refers to a single memory location"


def bits(t):
    """The tensor's values as NumPy (bfloat16 as its raw uint16 bits)."""
    t = t.cpu()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16)
    return t.numpy()


@pytest.fixture
def a():
    return np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)


@pytest.mark.parametrize("dt", [torch.int32, torch.float16, torch.float64, torch.uint8,
                                torch.int16, torch.int64, torch.int8])
def test_view_dtype_matches_numpy_view(a, dt):
    v = torch.tensor(a).view(dt)
    want = a.view(NP[dt])
    assert v.dtype == dt and tuple(v.shape) == want.shape
    np.testing.assert_array_equal(v.numpy().view(np.uint8), want.view(np.uint8))
    # strides in elements of the new dtype, like NumPy's in bytes
    assert v.stride() == tuple(s // want.itemsize for s in want.strides)


def test_view_dtype_bfloat16_bits(a):
    v = torch.tensor(a).view(torch.bfloat16)
    assert tuple(v.shape) == (2, 3, 8)
    np.testing.assert_array_equal(bits(v), a.view(np.uint16))


def test_view_dtype_layouts(a):
    x = torch.tensor(a)
    # same element size: any strides, kept as they are
    t = x.transpose(0, 2).view(torch.int32)
    assert t.stride() == (1, 4, 12)
    np.testing.assert_array_equal(t.numpy(), a.transpose(2, 1, 0).view(np.int32))
    # growing: offset and outer strides divided
    g = x[:, :, 2:].view(torch.float64)
    assert (tuple(g.shape), g.stride(), g.storage_offset()) == ((2, 3, 1), (6, 2, 1), 1)
    np.testing.assert_array_equal(g.numpy(), np.ascontiguousarray(a[:, :, 2:]).view(np.float64))
    # shrinking: offset and outer strides multiplied
    s = x[:, 1:].view(torch.float16)
    assert (tuple(s.shape), s.stride(), s.storage_offset()) == ((2, 2, 8), (24, 8, 1), 8)
    np.testing.assert_array_equal(s.numpy(), np.ascontiguousarray(a[:, 1:]).view(np.float16))
    # an expanded tensor keeps its stride 0
    e = x[:, :1].expand(2, 3, 4).view(torch.float64)
    assert e.stride() == (6, 0, 1)


@pytest.mark.parametrize("make,msg", [
    (lambda x: x.transpose(0, 2).view(torch.float16),
     "self.stride(-1) must be 1 to view Float as Half (different element sizes), but got 12"),
    (lambda x: x[:, :, 1:].view(torch.float64),
     "self.size(-1) must be divisible by 2 to view Float as Double (different element sizes), "
     "but got 3"),
    (lambda x: x[:, :, 1:3].view(torch.float64),
     "self.storage_offset() must be divisible by 2 to view Float as Double"),
    (lambda x: torch.zeros(3, 5)[:, :4].view(torch.float64),
     "self.stride(0) must be divisible by 2 to view Float as Double (different element sizes), "
     "but got 5"),
    (lambda x: torch.tensor(1.0).view(torch.float16),
     "self.dim() cannot be 0 to view Float as Half (different element sizes)"),
])
def test_view_dtype_errors(a, make, msg):
    with pytest.raises(RuntimeError) as e:
        make(torch.tensor(a))
    assert msg in str(e.value)


def test_view_dtype_arguments(a):
    x = torch.tensor(a)
    np.testing.assert_array_equal(x.view(dtype=torch.int32).numpy(), a.view(np.int32))
    assert tuple(torch.tensor(1.0).view(torch.int32).shape) == ()
    with pytest.raises(TypeError):
        x.view(torch.int32, 2)
    with pytest.raises(TypeError):
        x.view(4, 6, dtype=torch.int32)


def test_view_dtype_shares_memory(a):
    y = torch.tensor(a)
    v = y.view(torch.int32)
    assert v.data_ptr() == y.data_ptr()
    v[0, 1].fill_(1065353216)  # the bits of 1.0f
    np.testing.assert_array_equal(y[0, 1].numpy(), np.ones(4, np.float32))
    y.mul_(2)
    now = y.numpy().copy()
    np.testing.assert_array_equal(v.numpy(), now.view(np.int32))
    h = y.view(torch.float16)
    h[1, 0, :2].zero_()  # the first float's two halves
    assert y[1, 0, 0].item() == 0.0
    assert y[1, 0, 1].item() == now[1, 0, 1]


def test_view_dtype_same_dtype_is_an_alias(a):
    x = torch.tensor(a)
    v = x.view(torch.float32)
    assert v is not x and v.data_ptr() == x.data_ptr()
    v.add_(1)
    np.testing.assert_allclose(x.numpy(), a + 1)


def test_view_dtype_is_not_differentiable():
    w = torch.ones(2, 2, requires_grad=True)
    for dt in (torch.float32, torch.float16, torch.int32):
        v = w.view(dt)
        assert not v.requires_grad and v.grad_fn is None and v._base is None


def test_view_dtype_shares_the_version_counter():
    y = (torch.ones(4, requires_grad=True) * 1)
    z = y * y  # saves y
    v = y.view(torch.int32)
    before = y._version
    v.add_(1)
    assert y._version == v._version == before + 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_view_dtype_keeps_memory_alive():
    v = torch.arange(4.0).view(torch.int32)  # the float tensor is gone
    np.testing.assert_array_equal(v.numpy(), np.arange(4.0, dtype=np.float32).view(np.int32))
    w = v.view(torch.float16).view(torch.float32)
    np.testing.assert_array_equal(w.numpy(), np.arange(4.0, dtype=np.float32))


def test_view_dtype_bool():
    b = torch.tensor([1, 0, 1], dtype=torch.uint8).view(torch.bool)
    assert b.tolist() == [True, False, True]
    c = torch.tensor([True, False, True, True]).view(torch.int16)
    np.testing.assert_array_equal(c.numpy(), np.array([1, 0, 1, 1], np.uint8).view(np.int16))
    assert torch.tensor([0, 1], dtype=torch.int8).view(torch.bool).tolist() == [False, True]
    # a bool must be the byte 0 or 1: other bytes are refused (PyTorch reads them as bools
    # holding an invalid value)
    with pytest.raises(RuntimeError, match="not valid bools"):
        torch.tensor([1, 0, 2], dtype=torch.uint8).view(torch.bool)
    with pytest.raises(RuntimeError, match="not valid bools"):
        torch.tensor([1.0]).view(torch.bool)
    # the check covers the whole memory, not only the viewed part
    with pytest.raises(RuntimeError, match="not valid bools"):
        torch.tensor([1, 0, 7], dtype=torch.uint8)[:2].view(torch.bool)


def test_view_dtype_empty():
    assert tuple(torch.zeros(0, 4).view(torch.float64).shape) == (0, 2)
    assert tuple(torch.zeros(0, dtype=torch.uint8).view(torch.float32).shape) == (0,)


# ---------------------------------------------------------------- in-place writes, overlap

def expanded():
    base = torch.arange(8.0).reshape(2, 1, 4)
    return base, base.expand(2, 3, 4)


@pytest.mark.parametrize("op", [
    lambda e: e.add_(1), lambda e: e.mul_(torch.ones(4)), lambda e: e.neg_(),
    lambda e: e.exp_(), lambda e: e.clamp_(0, 1), lambda e: e.copy_(torch.ones(2, 3, 4)),
    lambda e: e.copy_(torch.tensor(1.0)), lambda e: e.uniform_(), lambda e: e.normal_(),
    lambda e: e.transpose(0, 1).sub_(1),
    lambda e: e.__setitem__(0, torch.tensor(1.0)), lambda e: e.__setitem__(0, torch.ones(3, 4)),
    lambda e: e.scatter_(1, torch.zeros(2, 1, 4, dtype=torch.int64), 2.0),
    lambda e: e.scatter_add_(1, torch.zeros(2, 1, 4, dtype=torch.int64), torch.ones(2, 1, 4)),
    lambda e: e.index_add_(1, torch.tensor([0]), torch.ones(2, 1, 4)),
    lambda e: e.index_copy_(1, torch.tensor([0]), torch.ones(2, 1, 4)),
    lambda e: e.put_(torch.tensor([0]), torch.tensor([1.0])),
    lambda e: e.masked_scatter_(torch.ones(2, 3, 4, dtype=torch.bool), torch.ones(24)),
], ids=["add_", "mul_", "neg_", "exp_", "clamp_", "copy_", "copy_0d", "uniform_", "normal_",
        "transposed", "setitem_int_0d_tensor", "setitem_int_tensor", "scatter_",
        "scatter_add_", "index_add_", "index_copy_", "put_", "masked_scatter_"])
def test_inplace_into_overlapping_memory_is_refused(op):
    base, e = expanded()
    with pytest.raises(RuntimeError, match=OVERLAP):
        op(e)
    np.testing.assert_array_equal(base.numpy(), np.arange(8.0).reshape(2, 1, 4))
    # also when autograd records the op
    w = torch.ones(2, 1, 4, requires_grad=True) * 1
    with pytest.raises(RuntimeError, match=OVERLAP):
        w.expand(2, 3, 4).add_(1)


@pytest.mark.parametrize("op,row0", [
    (lambda e: e.fill_(3.0), [3.0] * 4),
    (lambda e: e.zero_(), [0.0] * 4),
    (lambda e: e.masked_fill_(torch.ones(2, 3, 4, dtype=torch.bool), 3.0), [3.0] * 4),
    (lambda e: e.index_fill_(2, torch.tensor([1]), 3.0), [0.0, 3.0, 2.0, 3.0]),
    (lambda e: e.__setitem__(torch.tensor([0]), 5.0), [5.0] * 4),
    (lambda e: e.index_put_((torch.tensor([0]),), torch.tensor(5.0)), [5.0] * 4),
    (lambda e: e.__setitem__((slice(None), 0), 5.0), [5.0] * 4),
    (lambda e: e.__setitem__((0, 1, 2), 5.0), [0.0, 1.0, 5.0, 3.0]),
    (lambda e: e.__setitem__(0, 1.0), [1.0] * 4),
    (lambda e: e.__setitem__(Ellipsis, 1.0), [1.0] * 4),
    (lambda e: e.__setitem__(None, 1.0), [1.0] * 4),
], ids=["fill_", "zero_", "masked_fill_", "index_fill_", "setitem_adv", "index_put_",
        "setitem_column", "setitem_element", "setitem_int", "setitem_ellipsis", "setitem_none"])
def test_inplace_into_overlapping_memory_allowed(op, row0):
    # PyTorch lets these through (the index writes with a deprecation warning; a number
    # written through basic indices is a fill_ since PyTorch 2.15)
    base, e = expanded()
    op(e)
    np.testing.assert_array_equal(base[0, 0].numpy(), np.array(row0, np.float32))


def test_inplace_overlap_edge_cases():
    torch.zeros(1, 4).expand(1, 4).add_(1)  # a size-1 dim with stride 0 is no overlap
    torch.zeros(1, 0).expand(3, 0).add_(1)  # nor is an empty tensor
    # partial overlap: PyTorch does not detect it either (the values are unspecified)
    torch.zeros(6).as_strided((3, 2), (1, 1)).add_(1)


# ---------------------------------------------------------------- index / dim-list checks

@pytest.mark.parametrize("dt", [torch.int8, torch.int16])
def test_small_int_index_tensors_are_refused(dt):
    x = torch.arange(12.0).reshape(4, 3)
    msg = "tensors used as indices must be long, int, byte or bool tensors"
    with pytest.raises(IndexError, match=msg):
        x[torch.tensor([1, 0], dtype=dt)]
    with pytest.raises(IndexError, match=msg):
        x[torch.tensor([1], dtype=dt)] = 0.0
    with pytest.raises(IndexError, match=msg):
        x.index_put_((torch.tensor([1], dtype=dt),), torch.tensor(0.0))
    # 0-d: a Python int
    np.testing.assert_array_equal(x[torch.tensor(2, dtype=dt)].numpy(), [6.0, 7.0, 8.0])
    assert x[1, torch.tensor(-1, dtype=dt)].item() == 5.0
    # int32 stays valid
    np.testing.assert_array_equal(x[torch.tensor([3, 0], dtype=torch.int32), 0].numpy(), [9, 0])


def test_index_select_on_a_0d_tensor():
    s = torch.tensor(3.0)
    assert s.index_select(0, torch.tensor([0])).item() == 3.0
    for idx, n in ((torch.tensor([0, 0]), 2), (torch.zeros(0, dtype=torch.int64), 0)):
        with pytest.raises(RuntimeError,
                           match=f"Index to scalar can have only 1 value, got {n} value"):
            s.index_select(0, idx)


def test_index_add_needs_the_same_dtype():
    x = torch.zeros(3, 2)
    with pytest.raises(RuntimeError, match=r"index_add_\(\): self \(Float\) and source "
                                           r"\(Double\) must have the same scalar type"):
        x.index_add(0, torch.tensor([0]), torch.ones(1, 2, dtype=torch.float64))
    with pytest.raises(RuntimeError, match=r"self \(Float\) and source \(Long\)"):
        x.index_add_(0, torch.tensor([0]), torch.ones(1, 2, dtype=torch.int64))
    r = x.index_add(0, torch.tensor([2, 2]), torch.ones(2, 2))
    np.testing.assert_array_equal(r.numpy(), [[0, 0], [0, 0], [2, 2]])


@pytest.mark.parametrize("f", [
    lambda: torch.ones(1, 2, 1).squeeze((0, 0)), lambda: torch.ones(1, 2, 1).squeeze((2, -1)),
    lambda: torch.ones(1, 2, 1).squeeze([1, 1]), lambda: torch.tensor(1.0).squeeze((0, -1)),
    lambda: torch.tensor(1.0).sum((0, 0)), lambda: torch.tensor(1.0).amax((0, -1)),
    lambda: torch.tensor(1.0).flip((0, 0)), lambda: torch.ones(2, 3).flip((1, -1)),
    lambda: torch.linalg.vector_norm(torch.tensor(1.0), dim=(0, 0)),
])
def test_repeated_dims_are_refused(f):
    with pytest.raises(RuntimeError, match="appears multiple times in the list of dims"):
        f()


def test_squeeze_dims_still_work():
    assert tuple(torch.ones(1, 2, 1).squeeze((0, 2)).shape) == (2,)
    assert tuple(torch.ones(1, 2, 1).squeeze((-1, 1)).shape) == (1, 2)
    assert tuple(torch.tensor(1.0).squeeze((0,)).shape) == ()
    assert torch.tensor(2.0).sum((0,)).item() == 2.0


# ---------------------------------------------------------------- CUDA

@pytest.mark.parametrize("dt", [torch.int32, torch.float16, torch.float64, torch.uint8])
@pytest.mark.cuda
@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")
def test_cuda_view_dtype(a, dt):
    x = torch.tensor(a, device="cuda")
    v = x.view(dt)
    assert v.device.type == "cuda" and v.dtype == dt
    np.testing.assert_array_equal(v.cpu().numpy().view(np.uint8), a.view(np.uint8))
    assert v.data_ptr() == x.data_ptr()
    x.mul_(2)  # written through the float tensor, seen through the view
    np.testing.assert_array_equal(v.cpu().numpy().view(np.uint8), (a * 2).view(np.uint8))
    g = x[:, :, 2:].view(torch.float64)
    assert g.stride() == (6, 2, 1) and g.storage_offset() == 1
    np.testing.assert_array_equal(g.cpu().numpy(),
                                  np.ascontiguousarray(a[:, :, 2:] * 2).view(np.float64))
    with pytest.raises(RuntimeError, match="self.stride.-1. must be 1"):
        x.transpose(0, 2).view(torch.float16)
    with pytest.raises(RuntimeError, match="not valid bools"):
        torch.tensor([2], dtype=torch.uint8, device="cuda").view(torch.bool)
    with pytest.raises(RuntimeError, match=OVERLAP):
        x[:, :1].expand(2, 3, 4).add_(1)

