"""Core tensor model: construction, attributes, conversions, NumPy memory sharing, printing,
error types. Op families have their own test files."""

import gc
import sys

import numpy as np
import pytest

import ferrotorch as ft
from conftest import DTYPES


@pytest.mark.parametrize("ft_dtype,np_dtype", DTYPES)
def test_tensor_from_numpy_values_and_dtype(rng, ft_dtype, np_dtype):
    from conftest import random_array

    for shape in [(), (0,), (3,), (2, 3), (2, 0, 4), (2, 3, 4)]:
        a = random_array(rng, shape, np_dtype)
        t = ft.tensor(a)
        assert t.dtype == ft_dtype
        assert t.shape == shape
        assert t.dim() == len(shape) and t.ndim == len(shape)
        assert t.numel() == a.size
        np.testing.assert_array_equal(t.numpy(), a)
        assert t.is_contiguous()


def test_tensor_from_nested_lists_infers_dtype():
    assert ft.tensor([1, 2, 3]).dtype == ft.int64
    assert ft.tensor([1, 2.5]).dtype == ft.float32
    assert ft.tensor([True, False]).dtype == ft.bool
    assert ft.tensor(3.0).dtype == ft.float32 and ft.tensor(3.0).shape == ()
    assert ft.tensor([]).dtype == ft.float32 and ft.tensor([]).shape == (0,)
    assert ft.tensor([[1, 2], [3, 4]], dtype=ft.float64).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    with pytest.raises(ValueError):
        ft.tensor([[1, 2], [3]])
    with pytest.raises(TypeError):
        ft.tensor("abc")


def test_dtype_objects_are_interned_and_named():
    t = ft.ones(2) if hasattr(ft, "ones") else ft.tensor([1.0, 1.0])
    assert t.dtype is ft.float32
    assert repr(ft.float64) == "ferrotorch.float64"
    assert ft.float is ft.float32 and ft.long is ft.int64 and ft.double is ft.float64
    assert ft.float16.is_floating_point and not ft.int8.is_floating_point
    assert ft.promote_types(ft.uint8, ft.int8) == ft.int16
    assert ft.promote_types(ft.float16, ft.bfloat16) == ft.float32


def test_size_and_strides():
    t = ft.tensor(np.zeros((2, 3, 4), dtype=np.float32))
    assert isinstance(t.shape, ft.Size) and isinstance(t.shape, tuple)
    assert repr(t.shape) == "ferrotorch.Size([2, 3, 4])"
    assert t.size() == (2, 3, 4) and t.size(1) == 3 and t.size(-1) == 4
    assert t.shape.numel() == 24
    assert t.stride() == (12, 4, 1) and t.stride(0) == 12
    assert t.storage_offset() == 0
    assert len(t) == 2
    with pytest.raises(IndexError):
        t.size(3)
    with pytest.raises(TypeError):
        len(ft.tensor(1.0))


def test_item_and_python_conversions():
    assert ft.tensor(2.5).item() == 2.5
    assert isinstance(ft.tensor(7).item(), int)
    assert ft.tensor(True).item() is True
    assert float(ft.tensor([1.5])) == 1.5
    assert int(ft.tensor(3)) == 3
    assert [10, 20, 30][ft.tensor(1)] == 20  # __index__
    assert bool(ft.tensor([0.0])) is False
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(ft.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
        ft.tensor([1, 2]).item()


def test_from_numpy_shares_memory_both_ways():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = ft.from_numpy(a)
    a[0, 0] = 100.0
    assert t.tolist()[0][0] == 100.0
    t.add_(1.0)
    assert a[0, 0] == 101.0 and a[2, 3] == 12.0
    n = t.numpy()
    assert np.shares_memory(n, a)
    n[1, 1] = -7
    assert a[1, 1] == -7


def test_from_numpy_keeps_array_alive():
    a = np.arange(1000, dtype=np.float64)
    t = ft.from_numpy(a)
    ref = sys.getrefcount(a)
    del a
    gc.collect()
    assert t.tolist()[999] == 999.0
    assert ref >= 3  # the tensor's storage holds a reference


def test_numpy_out_keeps_storage_alive():
    t = ft.tensor(np.arange(5, dtype=np.int64))
    n = t.numpy()
    del t
    gc.collect()
    np.testing.assert_array_equal(n, np.arange(5))


def test_from_numpy_non_contiguous_and_errors():
    a = np.arange(24, dtype=np.int32).reshape(4, 6)
    v = a[::2, 1::2]
    t = ft.from_numpy(v)
    assert t.stride() == (12, 2)
    np.testing.assert_array_equal(t.numpy(), v)
    assert np.shares_memory(t.numpy(), a)
    with pytest.raises(ValueError, match="negative"):
        ft.from_numpy(a[::-1])
    with pytest.raises(TypeError, match="uint16"):
        ft.from_numpy(np.zeros(3, dtype=np.uint16))
    with pytest.raises(TypeError):
        ft.from_numpy([1, 2, 3])


def test_read_only_array_is_shared_but_not_writable():
    a = np.arange(4, dtype=np.float32)
    a.setflags(write=False)
    t = ft.from_numpy(a)
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(RuntimeError, match="read-only"):
        t.add_(1)


def test_bfloat16_numpy_is_a_clear_error():
    t = ft.tensor([1.0, 2.0], dtype=ft.bfloat16)
    with pytest.raises(TypeError, match="BFloat16"):
        t.numpy()
    assert t.float().tolist() == [1.0, 2.0]


def test_array_protocol():
    t = ft.tensor([[1, 2], [3, 4]], dtype=ft.int16)
    a = np.asarray(t)
    assert a.dtype == np.int16
    np.testing.assert_array_equal(np.array(t, dtype=np.float64), [[1.0, 2.0], [3.0, 4.0]])


@pytest.mark.parametrize("ft_dtype,np_dtype", DTYPES)
def test_casts_match_numpy(rng, ft_dtype, np_dtype):
    a = (rng.standard_normal((5, 7)) * 50).astype(np.float64)
    t = ft.tensor(a)
    got = t.to(ft_dtype)
    assert got.dtype == ft_dtype
    expected = a.astype(np_dtype)
    if np_dtype == np.float16:
        np.testing.assert_allclose(got.numpy().astype(np.float64), expected, rtol=1e-3)
    else:
        np.testing.assert_array_equal(got.numpy(), expected)


def test_to_and_conversion_methods():
    t = ft.tensor([1.7, -2.2])
    assert t.to(ft.float64).dtype == ft.float64
    assert t.to("cpu") is not None and t.to("cpu").device == ft.device("cpu")
    assert t.double().dtype == ft.float64 and t.half().dtype == ft.float16
    assert t.long().tolist() == [1, -2] and t.int().dtype == ft.int32
    assert t.bool().tolist() == [True, True]
    assert t.float().dtype == ft.float32 and t.cpu().dtype == ft.float32
    if not ft.cuda.is_available():
        with pytest.raises(RuntimeError, match="cuda"):
            t.to("cuda")
        with pytest.raises(RuntimeError):
            t.cuda()
    assert str(ft.device("cuda:1")) == "cuda:1" and ft.device("cuda", 2).index == 2


def test_clone_contiguous_copy_fill():
    t = ft.tensor([[1.0, 2.0], [3.0, 4.0]])
    c = t.clone()
    c.fill_(0)
    assert t.tolist() == [[1.0, 2.0], [3.0, 4.0]] and c.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    tt = t.transpose(0, 1)
    assert not tt.is_contiguous()
    cc = tt.contiguous()
    assert cc.is_contiguous() and cc.tolist() == [[1.0, 3.0], [2.0, 4.0]]
    assert t.contiguous().data_ptr() == t.data_ptr()
    z = ft.tensor(np.zeros((2, 2), dtype=np.float32))
    z.copy_(ft.tensor([5, 6]))  # broadcast + cast
    assert z.tolist() == [[5.0, 6.0], [5.0, 6.0]]
    z.zero_()
    assert z.tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_version_counter_bumps_on_inplace():
    t = ft.tensor([1.0, 2.0])
    v0 = t._version
    t.add_(1)
    t.mul_(2)
    assert t._version == v0 + 2


def test_requires_grad_only_for_floats():
    t = ft.tensor([1.0], requires_grad=True)
    assert t.requires_grad
    with pytest.raises(RuntimeError, match="floating point"):
        ft.tensor([1, 2], requires_grad=True)


def test_printing_matches_torch_style():
    assert repr(ft.tensor([1.0, 2.0, 3.0])) == "tensor([1., 2., 3.])"
    assert repr(ft.tensor([1.5, 2.25])) == "tensor([1.5000, 2.2500])"
    assert repr(ft.tensor([1, 2, 3])) == "tensor([1, 2, 3])"
    assert repr(ft.tensor([True, False])) == "tensor([ True, False])"
    assert repr(ft.tensor([[1, 2], [3, 4]])) == "tensor([[1, 2],\n        [3, 4]])"
    assert repr(ft.tensor([1.0], dtype=ft.float64)) == "tensor([1.], dtype=ferrotorch.float64)"
    assert repr(ft.tensor(3)) == "tensor(3)"
    assert repr(ft.tensor([1.0], requires_grad=True)) == "tensor([1.], requires_grad=True)"
    assert repr(ft.tensor(np.zeros((0, 3), np.float32))) == "tensor([], size=(0, 3))"
    assert "1.0000e-05" in repr(ft.tensor([1e-5, 1.0]))
    big = repr(ft.tensor(np.arange(2000, dtype=np.int64)))
    assert "..." in big and big.startswith("tensor([   0,    1,    2,")
    # as PyTorch's _Formatter: only nonzero finite values set the width and the notation
    nan, inf = float("nan"), float("inf")
    assert repr(ft.tensor([nan, inf, 1.0])) == "tensor([nan, inf, 1.])"
    assert repr(ft.tensor([nan, 0.0])) == "tensor([nan, 0.])"
    assert repr(ft.tensor([-1.5, 2.25, nan])) == "tensor([-1.5000,  2.2500,     nan])"
    assert repr(ft.tensor([1.0, 2000.0])) == "tensor([1.0000e+00, 2.0000e+03])"  # int mode too
    assert repr(ft.arange(2000.0)) == (
        "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n"
        "        1.9990e+03])")
    try:
        ft.set_printoptions(sci_mode=False)
        assert repr(ft.tensor([1e-6, 2.5])) == "tensor([0.0000, 2.5000])"
    finally:
        ft.set_printoptions(profile="default")


def test_default_dtype():
    try:
        ft.set_default_dtype(ft.float64)
        assert ft.tensor([1.5]).dtype == ft.float64
        assert ft.get_default_dtype() is ft.float64
    finally:
        ft.set_default_dtype(ft.float32)
    with pytest.raises(TypeError):
        ft.set_default_dtype(ft.int64)


def test_rust_panic_becomes_runtime_error():
    with pytest.raises(RuntimeError, match="internal error"):
        ft._C._test_panic()
    # The interpreter is still healthy afterwards.
    assert (ft.tensor([1]) + 1).tolist() == [2]


def test_tensor_constructor():
    assert ft.Tensor(2, 3).shape == (2, 3) and ft.Tensor(2, 3).dtype == ft.float32
    assert ft.Tensor([1, 2]).dtype == ft.float32


def test_keyword_forms_and_exception_types_as_pytorch():
    assert ft.arange(end=3).tolist() == [0, 1, 2]
    assert ft.arange(1, end=4).tolist() == [1, 2, 3]
    with pytest.raises(TypeError, match="end"):
        ft.arange()
    x = ft.arange(6.0).reshape(2, 3)
    assert [p.tolist() for p in x.split(split_size=2, dim=1)] == [[[0.0, 1.0], [3.0, 4.0]],
                                                                   [[2.0], [5.0]]]
    assert [p.shape[1] for p in x.split(split_size_or_sections=[1, 2], dim=1)] == [1, 2]
    assert ft.max(x, other=x * 0 + 2).tolist() == [[2.0, 2.0, 2.0], [3.0, 4.0, 5.0]]
    assert ft.min(x, other=x * 0 + 2).tolist() == [[0.0, 1.0, 2.0], [2.0, 2.0, 2.0]]
    with pytest.raises(IndexError, match="Expected reduction dim"):
        ft.zeros(0).argmax()
    with pytest.raises(IndexError, match="start out of range"):
        ft.zeros(3).narrow(0, -5, 1)
    assert ft.zeros(3).narrow(0, -3, 2).shape == (2,)
    with pytest.raises(ValueError, match="non-empty list"):
        ft.cat([])
    with pytest.raises(ValueError, match="only one element tensors"):
        int(ft.ones(2))
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        ft.histc(ft.tensor([1, 2]), bins=3)
