"""Factory functions (zeros/ones/full/empty, _like, arange, linspace, logspace, eye,
empty_strided, scalar_tensor) and Tensor.new_* against NumPy."""

import math

import numpy as np
import pytest

import ferrotorch as torch

ALL_DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
              torch.float16, torch.bfloat16, torch.float32, torch.float64]
NP = {torch.bool: np.bool_, torch.uint8: np.uint8, torch.int8: np.int8, torch.int16: np.int16,
      torch.int32: np.int32, torch.int64: np.int64, torch.float16: np.float16,
      torch.bfloat16: np.float32, torch.float32: np.float32, torch.float64: np.float64}


def as_np(t):
    if t.dtype == torch.bfloat16:
        t = t.float()
    return t.numpy()


# ----------------------------------------------------------------------------- zeros/ones/full

@pytest.mark.parametrize("fn,npfn", [(torch.zeros, np.zeros), (torch.ones, np.ones)])
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 3), (2, 0, 4), (1, 1, 1, 2)])
def test_zeros_ones_shapes(fn, npfn, shape):
    a = fn(*shape) if shape else fn(())
    b = fn(shape)
    c = fn(list(shape))
    d = fn(size=shape)
    for t in (a, b, c, d):
        assert tuple(t.shape) == shape
        assert t.dtype == torch.float32
        assert t.is_contiguous()
        np.testing.assert_array_equal(t.numpy(), npfn(shape, dtype=np.float32))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_zeros_ones_every_dtype(dtype):
    z = torch.zeros(2, 3, dtype=dtype)
    o = torch.ones((2, 3), dtype=dtype)
    assert z.dtype == dtype and o.dtype == dtype
    np.testing.assert_array_equal(as_np(z), np.zeros((2, 3), NP[dtype]))
    np.testing.assert_array_equal(as_np(o), np.ones((2, 3), NP[dtype]))


def test_default_dtype_is_respected():
    torch.set_default_dtype(torch.float64)
    try:
        assert torch.zeros(2).dtype == torch.float64
        assert torch.full((2,), 1.5).dtype == torch.float64
        assert torch.arange(0.0, 1.0, 0.5).dtype == torch.float64
        assert torch.linspace(0, 1, 3).dtype == torch.float64
    finally:
        torch.set_default_dtype(torch.float32)
    assert torch.zeros(2).dtype == torch.float32


def test_empty_is_zero_filled_and_shaped():
    e = torch.empty(3, 4, dtype=torch.int16)
    assert tuple(e.shape) == (3, 4) and e.dtype == torch.int16
    np.testing.assert_array_equal(e.numpy(), np.zeros((3, 4), np.int16))
    assert tuple(torch.empty(0).shape) == (0,)


@pytest.mark.parametrize("value,dtype", [(True, torch.bool), (3, torch.int64),
                                         (2.5, torch.float32), (np.float64(1.5), torch.float32),
                                         (np.int32(7), torch.int64)])
def test_full_infers_dtype_from_fill_value(value, dtype):
    t = torch.full((2, 2), value)
    assert t.dtype == dtype
    np.testing.assert_array_equal(as_np(t), np.full((2, 2), value, dtype=NP[dtype]))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_full_explicit_dtype(dtype):
    t = torch.full([3], 1, dtype=dtype)
    assert t.dtype == dtype
    np.testing.assert_array_equal(as_np(t), np.full(3, 1, NP[dtype]))


def test_full_casts_fill_value_like_pytorch():
    np.testing.assert_array_equal(torch.full((2,), 2.7, dtype=torch.int32).numpy(), [2, 2])
    np.testing.assert_array_equal(torch.full((2,), -2.7, dtype=torch.int64).numpy(), [-2, -2])
    np.testing.assert_array_equal(torch.full((2,), 0.5, dtype=torch.bool).numpy(), [True, True])
    assert torch.full((), 4.0).item() == 4.0 and torch.full((), 4.0).dim() == 0


def test_full_with_tensor_fill_value():
    t = torch.full((2,), torch.tensor(3.5))
    np.testing.assert_array_equal(t.numpy(), [3.5, 3.5])


def test_out_argument():
    out = torch.ones(2, 3)
    r = torch.zeros(2, 3, out=out)
    np.testing.assert_array_equal(out.numpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(r.numpy(), np.zeros((2, 3)))
    with pytest.warns(UserWarning, match="was resized"):  # resized, as PyTorch
        assert torch.zeros(4, out=out) is out
    assert tuple(out.shape) == (4,)


# ----------------------------------------------------------------------------- _like

@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_like_functions_keep_shape_and_dtype(dtype):
    base = np.ones((4, 6), np.float32)[::2].T  # non-contiguous input, shape (6, 2)
    src = torch.from_numpy(base) if dtype == torch.float32 else torch.from_numpy(base).to(dtype)
    if dtype == torch.float32:
        assert not src.is_contiguous()
    for fn, val in [(torch.zeros_like, 0), (torch.ones_like, 1), (torch.empty_like, 0)]:
        t = fn(src)
        assert t.dtype == dtype and tuple(t.shape) == (6, 2)
        np.testing.assert_array_equal(as_np(t), np.full((6, 2), val, NP[dtype]))
    f = torch.full_like(src, 1)
    assert f.dtype == dtype
    np.testing.assert_array_equal(as_np(f), np.full((6, 2), 1, NP[dtype]))


def test_like_dtype_override_and_0d():
    x = torch.tensor(3)
    assert torch.zeros_like(x).dim() == 0
    t = torch.ones_like(x, dtype=torch.float64)
    assert t.dtype == torch.float64 and t.item() == 1.0
    f = torch.full_like(torch.zeros(2, dtype=torch.int32), 2.9)
    assert f.dtype == torch.int32
    np.testing.assert_array_equal(f.numpy(), [2, 2])
    f = torch.full_like(torch.zeros(2, dtype=torch.int32), 2.5, dtype=torch.float32)
    np.testing.assert_array_equal(f.numpy(), [2.5, 2.5])


def test_like_requires_grad():
    x = torch.zeros(2)
    assert torch.ones_like(x, requires_grad=True).requires_grad
    assert not torch.ones_like(x).requires_grad


# ----------------------------------------------------------------------------- arange

@pytest.mark.parametrize("args", [(5,), (0,), (2, 9), (2, 9, 3), (10, 0, -3), (-5, 5, 2),
                                  (0, 10, 10), (0, 10, 11), (3, 3), (-4, -1)])
def test_arange_int(args):
    t = torch.arange(*args)
    assert t.dtype == torch.int64
    np.testing.assert_array_equal(t.numpy(), np.arange(*args, dtype=np.int64))


@pytest.mark.parametrize("args", [(0.0, 1.0, 0.1), (1, 2.5), (2.5,), (0, 1, 0.3),
                                  (1.0, -1.0, -0.25),
                                  (-3.2, 4.4, 0.7), (0, 5, 1.0), (0.5, 0.5)])
def test_arange_float(args):
    t = torch.arange(*args)
    assert t.dtype == torch.float32
    ref = np.arange(*args, dtype=np.float64)
    assert t.shape[0] == ref.shape[0]
    # PyTorch's length rule: ceil((end - start) / step).
    start, end, step = (0, args[0], 1) if len(args) == 1 else (
        args[0], args[1], args[2] if len(args) > 2 else 1)
    assert t.shape[0] == max(0, math.ceil((end - start) / step))
    np.testing.assert_allclose(t.numpy(), ref.astype(np.float32), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d != torch.bool])
def test_arange_dtype(dtype):
    t = torch.arange(0, 6, 2, dtype=dtype)
    assert t.dtype == dtype
    np.testing.assert_array_equal(as_np(t), np.array([0, 2, 4], NP[dtype]))


def test_arange_float64_and_keywords():
    t = torch.arange(start=1, end=4, step=0.5, dtype=torch.float64)
    np.testing.assert_array_equal(t.numpy(), np.arange(1, 4, 0.5))
    t = torch.arange(torch.tensor(4))
    np.testing.assert_array_equal(t.numpy(), [0, 1, 2, 3])
    t = torch.arange(np.int32(3))
    assert t.dtype == torch.int64


def test_arange_int64_with_float_args():
    # PyTorch 2.15: the length from the arguments as given (ceil(5.5) = 6), the values from
    # the truncated start and step
    np.testing.assert_array_equal(torch.arange(0, 5.5, dtype=torch.int64).numpy(),
                                  [0, 1, 2, 3, 4, 5])


def test_arange_integer_dtype_with_fractional_arguments():
    # PyTorch 2.15: the length comes from the arguments as given, the values from the
    # truncated start and step (values taken from torch 2.15)
    got = torch.arange(-1.5, 1.5, 0.5, dtype=torch.int64)
    assert got.tolist() == [-1] * 6
    assert torch.arange(0, 1, 0.3, dtype=torch.int32).tolist() == [0, 0, 0, 0]
    assert torch.arange(0.5, 7, 2.5, dtype=torch.int64).tolist() == [0, 2, 4]
    assert torch.arange(2**60, 2**60 + 3).tolist() == [2**60, 2**60 + 1, 2**60 + 2]


def test_arange_errors():
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        torch.arange(0, 5, 0)
    with pytest.raises(RuntimeError, match="inconsistent with step sign"):
        torch.arange(0, 5, -1)
    with pytest.raises(RuntimeError, match="inconsistent with step sign"):
        torch.arange(5, 0)
    with pytest.raises(RuntimeError, match="unsupported range"):
        torch.arange(0, float("inf"))
    with pytest.raises(RuntimeError, match="Bool"):
        torch.arange(3, dtype=torch.bool)
    with pytest.raises(TypeError):
        torch.arange("a")


# ----------------------------------------------------------------------------- linspace/logspace

@pytest.mark.parametrize("start,end,steps", [(0, 1, 5), (-2.5, 7.1, 11), (3, -3, 7), (1, 1, 4),
                                             (0, 10, 1), (0, 10, 0), (0, 1, 100), (5, 6, 2)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_linspace(start, end, steps, dtype):
    t = torch.linspace(start, end, steps, dtype=dtype)
    assert t.dtype == dtype and tuple(t.shape) == (steps,)
    ref = np.linspace(start, end, steps)
    np.testing.assert_allclose(t.numpy(), ref, rtol=1e-6, atol=1e-6)
    if steps > 1:
        vals = t.tolist()
        cast = np.float32 if dtype == torch.float32 else np.float64
        assert vals[-1] == float(cast(end))  # the last value is exactly `end`
        assert vals[0] == float(cast(start))


def test_linspace_int_and_half_dtypes():
    t = torch.linspace(0, 10, 5, dtype=torch.int64)
    assert t.dtype == torch.int64
    np.testing.assert_array_equal(t.numpy(), [0, 2, 5, 7, 10])
    t = torch.linspace(0, 1, 5, dtype=torch.float16)
    np.testing.assert_allclose(t.numpy(), np.linspace(0, 1, 5), rtol=1e-3)
    t = torch.linspace(0, 1, 3, dtype=torch.bfloat16)
    np.testing.assert_allclose(t.float().numpy(), [0, 0.5, 1])
    with pytest.raises(RuntimeError, match="non-negative"):
        torch.linspace(0, 1, -1)


@pytest.mark.parametrize("start,end,steps,base", [(0, 2, 3, 10.0), (-1, 1, 5, 2.0),
                                                  (0, 3, 4, 2.718281828), (2, 0, 3, 10),
                                                  (0, 1, 1, 10), (0, 1, 0, 10)])
def test_logspace(start, end, steps, base):
    t = torch.logspace(start, end, steps, base=base, dtype=torch.float64)
    np.testing.assert_allclose(t.numpy(), np.logspace(start, end, steps, base=base), rtol=1e-12)
    t32 = torch.logspace(start, end, steps, base)
    assert t32.dtype == torch.float32
    np.testing.assert_allclose(t32.numpy(), np.logspace(start, end, steps, base=base), rtol=1e-5)


def test_logspace_int_dtype():
    t = torch.logspace(0, 3, 4, dtype=torch.int64)
    np.testing.assert_array_equal(t.numpy(), [1, 10, 100, 1000])


# ----------------------------------------------------------------------------- eye

@pytest.mark.parametrize("n,m", [(0, None), (1, None), (3, None), (2, 5), (5, 2), (3, 0)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool, torch.float16])
def test_eye(n, m, dtype):
    t = torch.eye(n, m, dtype=dtype) if m is not None else torch.eye(n, dtype=dtype)
    assert t.dtype == dtype
    np.testing.assert_array_equal(as_np(t), np.eye(n, m, dtype=NP[dtype]))


def test_eye_default_and_errors():
    assert torch.eye(2).dtype == torch.float32
    with pytest.raises(RuntimeError, match="n must be greater or equal to 0"):
        torch.eye(-1)
    with pytest.raises(RuntimeError, match="m must be greater or equal to 0"):
        torch.eye(2, -3)


# ----------------------------------------------------------------------------- empty_strided

@pytest.mark.parametrize("size,stride", [((2, 3), (3, 1)), ((2, 3), (1, 2)), ((4,), (2,)),
                                         ((), ()), ((2, 0), (1, 1)), ((3, 2), (0, 1))])
def test_empty_strided(size, stride):
    t = torch.empty_strided(size, stride)
    assert tuple(t.shape) == size
    assert t.stride() == stride
    np.testing.assert_array_equal(t.numpy(), np.zeros(size, np.float32))
    # The storage is usable: writes land where the strides say.
    if t.numel():
        t.fill_(2.0)
        np.testing.assert_array_equal(t.numpy(), np.full(size, 2, np.float32))


def test_empty_strided_errors_and_dtype():
    t = torch.empty_strided((2, 2), (2, 1), dtype=torch.int32)
    assert t.dtype == torch.int32
    with pytest.raises(RuntimeError, match="mismatch in length of strides and shape"):
        torch.empty_strided((2, 2), (1,))
    with pytest.raises(RuntimeError, match="negative"):
        torch.empty_strided((2,), (-1,))
    with pytest.raises(RuntimeError, match="negative dimension"):
        torch.empty_strided((-2,), (1,))


# ----------------------------------------------------------------------------- scalar_tensor

def test_scalar_tensor():
    t = torch.scalar_tensor(3)
    assert t.dim() == 0 and t.dtype == torch.float32 and t.item() == 3.0
    t = torch.scalar_tensor(True, dtype=torch.bool)
    assert t.dtype == torch.bool and t.item() is True
    t = torch.scalar_tensor(2.5, dtype=torch.float64, requires_grad=True)
    assert t.requires_grad and t.dtype == torch.float64


# ----------------------------------------------------------------------------- new_*

@pytest.mark.parametrize("dtype", [torch.int32, torch.float64, torch.bool, torch.float16])
def test_new_methods_inherit_dtype(dtype):
    x = torch.ones(3, dtype=dtype)
    for t, val in [(x.new_zeros(2, 3), 0), (x.new_ones((2, 3)), 1), (x.new_empty([2, 3]), 0),
                   (x.new_full((2, 3), 1), 1)]:
        assert t.dtype == dtype and tuple(t.shape) == (2, 3)
        np.testing.assert_array_equal(as_np(t), np.full((2, 3), val, NP[dtype]))
    t = x.new_tensor([[1, 0], [0, 1]])
    assert t.dtype == dtype
    np.testing.assert_array_equal(as_np(t), np.eye(2, dtype=NP[dtype]))
    t = x.new_zeros(2, dtype=torch.int8)
    assert t.dtype == torch.int8
    e = x.new_empty_strided((2, 2), (1, 2))
    assert e.stride() == (1, 2) and e.dtype == dtype


def test_new_tensor_copies():
    x = torch.zeros(2)
    src = torch.tensor([1.0, 2.0])
    t = x.new_tensor(src)
    t.add_(1)
    np.testing.assert_array_equal(src.numpy(), [1.0, 2.0])
    t = x.new_tensor(np.array([1, 2], dtype=np.int64))
    assert t.dtype == torch.float32
    assert x.new_tensor(3).dim() == 0
    assert x.new_zeros(()).dim() == 0
    assert x.new_ones(size=(2,)).shape == (2,)


def test_new_methods_requires_grad():
    x = torch.zeros(2)
    assert x.new_zeros(2, requires_grad=True).requires_grad
    assert x.new_tensor([1.0], requires_grad=True).requires_grad


# ----------------------------------------------------------------------------- errors

@pytest.mark.parametrize("make", [
    lambda: torch.zeros(2, device="cuda"),
    lambda: torch.ones(2, device="cuda:0"),
    lambda: torch.full((2,), 1, device="cuda"),
    lambda: torch.arange(3, device="cuda"),
    lambda: torch.linspace(0, 1, 3, device="cuda"),
    lambda: torch.eye(2, device=torch.device("cuda")),
    lambda: torch.zeros_like(torch.zeros(2), device="cuda"),
    lambda: torch.zeros(2).new_zeros(2, device="cuda"),
    lambda: torch.empty_strided((2,), (1,), device="cuda"),
])
@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is available")
def test_cuda_device_unavailable(make):
    with pytest.raises(RuntimeError, match="not available"):
        make()


def test_cpu_device_accepted():
    assert torch.zeros(2, device="cpu").device.type == "cpu"
    assert torch.ones(2, device=torch.device("cpu")).device.type == "cpu"


def test_shape_errors():
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        torch.zeros(2, -1)
    with pytest.raises(RuntimeError, match="negative dimension"):
        torch.ones((-3,))
    with pytest.raises(RuntimeError, match="negative dimension"):
        torch.full((-1,), 2.0)
    with pytest.raises(RuntimeError):
        torch.zeros(2**40, 2**40)
    with pytest.raises(TypeError):
        torch.zeros(2.5)
    with pytest.raises(TypeError):
        torch.zeros("a")
    with pytest.raises(RuntimeError, match="floating point"):
        torch.zeros(2, dtype=torch.int64, requires_grad=True)
    with pytest.raises(TypeError):
        torch.zeros(2, layout="sparse_coo")


def test_requires_grad_flag():
    assert torch.zeros(2, requires_grad=True).requires_grad
    assert torch.arange(0.0, 2.0, requires_grad=True).requires_grad
    assert not torch.ones(2).requires_grad


def test_linspace_bits_match_pytorch_fma():
    """PyTorch's kernel computes start + i * step (first half) and end - (n-1-i) * step
    (second half) with fused multiply-adds; the values agree to the last bit."""
    a = torch.linspace(-1, 1, 7)
    assert a.tolist() == [-1.0, -0.6666666269302368, -0.3333333134651184,
                          -2.9802322387695312e-08, 0.3333333134651184, 0.6666666269302368, 1.0]
    b = torch.linspace(-3, 5, 11, dtype=torch.float64)
    assert b.tolist() == [-3.0, -2.2, -1.4, -0.5999999999999999, 0.20000000000000018,
                          0.9999999999999998, 1.7999999999999998, 2.5999999999999996, 3.4,
                          4.2, 5.0]


def test_linspace_bits_vs_torch():
    pt = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    for _ in range(50):
        s, e = rng.uniform(-10, 10, 2)
        n = int(rng.integers(2, 300))
        for dt in ("float32", "float64"):
            ours = torch.linspace(s, e, n, dtype=getattr(torch, dt)).numpy()
            ref = pt.linspace(s, e, n, dtype=getattr(pt, dt)).numpy()
            np.testing.assert_array_equal(ours, ref)
