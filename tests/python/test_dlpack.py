"""DLPack: zero-copy exchange with NumPy (and PyTorch when installed), both directions."""

import ctypes
import gc
import sys

import numpy as np
import pytest

import ferrotorch as torch

NP_DTYPES = [np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16, np.float32,
             np.float64]

_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype = ctypes.c_char_p
_get_name.argtypes = [ctypes.py_object]


def capsule_name(cap):
    return _get_name(cap).decode()


def sample(dtype, shape=(3, 4)):
    rng = np.random.default_rng(0)
    if dtype == np.bool_:
        return rng.random(shape) > 0.5
    if np.issubdtype(dtype, np.integer):
        return rng.integers(0, 100, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


# ----------------------------------------------------------------------------- NumPy -> ferrotorch

@pytest.mark.parametrize("dtype", NP_DTYPES)
def test_from_numpy_array_every_dtype(dtype):
    a = sample(dtype)
    t = torch.from_dlpack(a)
    assert t.dtype == getattr(torch, np.dtype(dtype).name if dtype != np.bool_ else "bool")
    assert tuple(t.shape) == a.shape
    np.testing.assert_array_equal(t.numpy(), a)
    assert t.data_ptr() == a.ctypes.data  # zero-copy


def test_from_numpy_shares_memory_both_ways():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = torch.from_dlpack(a)
    t.add_(10)
    np.testing.assert_array_equal(a, np.arange(6).reshape(2, 3) + 10)
    a[1, 2] = -1
    assert t.tolist()[1][2] == -1


@pytest.mark.parametrize("sl", [np.s_[::2], np.s_[:, ::3], np.s_[1::2, 1::2]])
def test_from_numpy_non_contiguous(sl):
    base = np.arange(48, dtype=np.int64).reshape(6, 8)
    a = base[sl]
    t = torch.from_dlpack(a)
    assert t.stride() == tuple(s // 8 for s in a.strides)
    np.testing.assert_array_equal(t.numpy(), a)
    t.fill_(-5)
    assert np.all(base[sl] == -5)
    t2 = torch.from_dlpack(base.T)
    assert not t2.is_contiguous()
    np.testing.assert_array_equal(t2.numpy(), base.T)


def test_from_numpy_0d_and_empty():
    a = np.array(3.5)
    t = torch.from_dlpack(a)
    assert t.dim() == 0 and t.item() == 3.5
    e = torch.from_dlpack(np.zeros((0, 3), np.float32))
    assert tuple(e.shape) == (0, 3) and e.numel() == 0
    e = torch.from_dlpack(np.zeros((2, 0), np.int8))
    assert tuple(e.shape) == (2, 0)


def test_from_numpy_legacy_capsule():
    a = np.arange(4.0)
    cap = a.__dlpack__()
    assert capsule_name(cap) == "dltensor"
    t = torch.from_dlpack(cap)
    assert capsule_name(cap) == "used_dltensor"
    np.testing.assert_array_equal(t.numpy(), a)
    with pytest.raises(RuntimeError, match="consumed only once"):
        torch.from_dlpack(cap)


def test_from_numpy_versioned_capsule():
    a = np.arange(4.0)
    cap = a.__dlpack__(max_version=(1, 0))
    assert capsule_name(cap) == "dltensor_versioned"
    t = torch.from_dlpack(cap)
    assert capsule_name(cap) == "used_dltensor_versioned"
    t.mul_(2)
    np.testing.assert_array_equal(a, [0, 2, 4, 6])


def test_source_lifetime_numpy_deleted():
    a = np.arange(1000, dtype=np.float64)
    t = torch.from_dlpack(a)
    del a
    gc.collect()
    _ = np.ones(1000) * 7  # reuse freed memory if it had been freed
    np.testing.assert_array_equal(t.numpy(), np.arange(1000))


def test_producer_released_when_tensor_dies():
    a = np.arange(10.0)
    before = sys.getrefcount(a)
    t = torch.from_dlpack(a)
    assert sys.getrefcount(a) > before
    del t
    gc.collect()
    assert sys.getrefcount(a) == before


def test_read_only_numpy_stays_read_only():
    a = np.arange(3.0)
    a.flags.writeable = False
    t = torch.from_dlpack(a)  # versioned protocol carries the read-only flag
    np.testing.assert_array_equal(t.numpy(), a)
    with pytest.raises(RuntimeError, match="read-only"):
        t.add_(1)
    np.testing.assert_array_equal(a, [0, 1, 2])


def test_bool_via_dlpack():
    a = np.array([[True, False], [False, True]])
    t = torch.from_dlpack(a)
    assert t.dtype == torch.bool
    np.testing.assert_array_equal(t.numpy(), a)
    b = np.from_dlpack(torch.tensor([True, False, True]))
    assert b.dtype == np.bool_
    np.testing.assert_array_equal(b, [True, False, True])


# ----------------------------------------------------------------------------- ferrotorch -> NumPy

@pytest.mark.parametrize("dtype", NP_DTYPES)
def test_to_numpy_every_dtype(dtype):
    a = sample(dtype)
    t = torch.tensor(a)
    b = np.from_dlpack(t)
    assert b.dtype == a.dtype and b.shape == a.shape
    np.testing.assert_array_equal(b, a)
    assert b.ctypes.data == t.data_ptr()


def test_to_numpy_shares_memory():
    t = torch.zeros(2, 3)
    a = np.from_dlpack(t)
    a[0, 1] = 5
    assert t.tolist()[0][1] == 5
    t.fill_(2)
    np.testing.assert_array_equal(a, np.full((2, 3), 2))


def test_to_numpy_non_contiguous_and_offset():
    base = np.arange(60, dtype=np.float32).reshape(6, 10)
    t = torch.from_numpy(base[1::2, 2::3])  # strided view with an offset
    a = np.from_dlpack(t)
    np.testing.assert_array_equal(a, base[1::2, 2::3])
    assert a.strides == base[1::2, 2::3].strides
    a[...] = -1
    assert np.all(base[1::2, 2::3] == -1)
    tt = torch.from_numpy(base.T)
    np.testing.assert_array_equal(np.from_dlpack(tt), base.T)


def test_to_numpy_0d_and_empty():
    a = np.from_dlpack(torch.tensor(7))
    assert a.shape == () and a == 7
    e = np.from_dlpack(torch.zeros(0, 4))
    assert e.shape == (0, 4)


def test_tensor_lifetime_after_delete():
    t = torch.arange(1000)
    a = np.from_dlpack(t)
    del t
    gc.collect()
    _ = torch.ones(1000) * 3
    np.testing.assert_array_equal(a, np.arange(1000))


@pytest.mark.parametrize("max_version", [None, (1, 0)])
def test_unconsumed_capsule_is_freed(max_version):
    base = np.arange(5.0)
    before = sys.getrefcount(base)
    t = torch.from_numpy(base)
    cap = t.__dlpack__(max_version=max_version)
    del t
    assert sys.getrefcount(base) > before  # the capsule keeps the storage alive
    del cap
    gc.collect()
    assert sys.getrefcount(base) == before


def test_dlpack_method_options():
    t = torch.arange(4.0)
    assert t.__dlpack_device__() == (1, 0)
    cap = t.__dlpack__()
    assert capsule_name(cap) == "dltensor"
    cap = t.__dlpack__(max_version=(1, 0))
    assert capsule_name(cap) == "dltensor_versioned"
    cap = t.__dlpack__(max_version=(0, 8))
    assert capsule_name(cap) == "dltensor"
    cap = t.__dlpack__(stream=None, dl_device=(1, 0))
    assert capsule_name(cap) == "dltensor"
    with pytest.raises(BufferError):
        t.__dlpack__(dl_device=(2, 0))
    c = torch.from_dlpack(t.__dlpack__(copy=True))
    c.add_(1)
    np.testing.assert_array_equal(t.numpy(), [0, 1, 2, 3])
    with pytest.raises(TypeError):
        t.__dlpack__(stream="x")


def test_read_only_tensor_export():
    a = np.arange(3.0)
    a.flags.writeable = False
    t = torch.from_numpy(a)
    with pytest.raises(BufferError, match="read-only"):
        t.__dlpack__()
    b = np.from_dlpack(t)  # NumPy asks for DLPack 1.0, which can say "read-only"
    assert not b.flags.writeable
    np.testing.assert_array_equal(b, a)


def test_requires_grad_refuses_export():
    t = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="require gradient"):
        t.__dlpack__()


# ----------------------------------------------------------------------------- round trips

@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32,
                                   torch.int64, torch.float16, torch.bfloat16, torch.float32,
                                   torch.float64])
@pytest.mark.parametrize("versioned", [False, True])
def test_round_trip_through_capsule(dtype, versioned):
    t = torch.ones(2, 3, dtype=dtype)
    cap = t.__dlpack__(max_version=(1, 0)) if versioned else t.__dlpack__()
    u = torch.from_dlpack(cap)
    assert u.dtype == dtype and tuple(u.shape) == (2, 3)
    assert u.data_ptr() == t.data_ptr()
    u.zero_()
    assert not t.bool().numpy().any() if dtype == torch.bfloat16 else not t.numpy().any()


def test_from_dlpack_own_tensor_is_a_view():
    t = torch.arange(3)
    u = torch.from_dlpack(t)
    assert u is not t and u.data_ptr() == t.data_ptr()
    u.add_(1)
    assert t.tolist() == [1, 2, 3]


def test_bfloat16_cannot_go_to_numpy():
    t = torch.ones(2).bfloat16()
    with pytest.raises((BufferError, TypeError, RuntimeError)):
        np.from_dlpack(t)


def test_utils_aliases():
    from ferrotorch.utils import dlpack

    t = torch.arange(3.0)
    cap = dlpack.to_dlpack(t)
    assert capsule_name(cap) == "dltensor"
    u = dlpack.from_dlpack(cap)
    assert u.data_ptr() == t.data_ptr()
    assert torch.utils.dlpack.from_dlpack(np.arange(2)).tolist() == [0, 1]
    assert torch.from_dlpack is dlpack.from_dlpack


def test_from_dlpack_errors():
    with pytest.raises(TypeError):
        torch.from_dlpack([1, 2, 3])
    with pytest.raises(TypeError):
        torch.from_dlpack(3)

    class FakeCuda:
        def __dlpack_device__(self):
            return (2, 0)

        def __dlpack__(self, **kw):
            raise AssertionError("must not be called")

    if not torch.cuda.is_available():  # (with a GPU, CUDA capsules import: test_cuda.py)
        with pytest.raises(RuntimeError, match="not available"):
            torch.from_dlpack(FakeCuda())


# ----------------------------------------------------------------------------- PyTorch

def test_pytorch_round_trip():
    real = pytest.importorskip("torch")
    x = torch.arange(6.0)
    r = real.from_dlpack(x)
    r[0] = 100
    assert x.tolist()[0] == 100
    y = real.arange(4, dtype=real.int32)
    f = torch.from_dlpack(y)
    f.add_(1)
    assert y.tolist() == [1, 2, 3, 4]
    for dt in (real.bool, real.bfloat16, real.float16, real.int8, real.float64):
        z = real.ones(3, dtype=dt)
        assert torch.from_dlpack(z).dtype.itemsize == z.element_size()
    nc = real.arange(12.0).reshape(3, 4).t()
    g = torch.from_dlpack(nc)
    np.testing.assert_array_equal(g.numpy(), nc.numpy())
