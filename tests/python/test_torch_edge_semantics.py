"""Edge behaviours where ferrotorch follows PyTorch 2.13 rather than NumPy/IEEE, found by the
differential sweeps against PyTorch (tests/python/test_vs_torch_*.py, which need torch). The
expected values here are PyTorch's, written out so that these run without it."""

import math

import numpy as np
import pytest

import ferrotorch as torch


def test_sign_of_nan_and_negative_zero_is_positive_zero():
    x = torch.tensor([float("nan"), -0.0, 0.0, 2.5, -3.0, float("inf"), -float("inf")])
    for f in (torch.sign, torch.sgn):
        got = f(x).numpy()
        np.testing.assert_array_equal(got, [0.0, 0.0, 0.0, 1.0, -1.0, 1.0, -1.0])
        assert not np.signbit(got[:3]).any()
    for dt in (torch.float16, torch.float64):
        assert torch.sign(x.to(dt)).tolist()[:2] == [0.0, 0.0]


def test_bool_sign_square_neg():
    b = torch.tensor([True, False])
    s = torch.sign(b)
    assert s.dtype == torch.bool and s.tolist() == [True, False]
    sq = torch.square(b)
    assert sq.dtype == torch.int64 and sq.tolist() == [1, 0]
    with pytest.raises(RuntimeError, match="Negation, the `-` operator, on a bool tensor"):
        torch.neg(b)


def test_bool_subtraction_is_refused():
    b, i = torch.tensor([True, False]), torch.tensor([1, 2])
    with pytest.raises(RuntimeError, match="with two bool tensors is not supported"):
        b - b
    with pytest.raises(RuntimeError, match="with two bool tensors is not supported"):
        torch.sub(b, b)
    for f in (lambda: i - b, lambda: b - i, lambda: i - True, lambda: b - 1, lambda: 1 - b):
        with pytest.raises(RuntimeError, match="with a bool tensor is not supported"):
            f()
    # Other arithmetic on bools is fine.
    assert (b + b).tolist() == [True, False]
    assert (i + True).tolist() == [2, 3]


def test_integer_to_negative_integer_power():
    i = torch.tensor([1, 2, 4])
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        i ** -1
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        i.pow_(-2)
    np.testing.assert_allclose((i ** -1.0).numpy(), [1.0, 0.5, 0.25])
    # A tensor exponent or a scalar base is not checked (integer results, as PyTorch).
    assert torch.pow(i, torch.tensor(-1)).tolist() == [1, 0, 0]
    assert (2 ** torch.tensor([-1, 2])).tolist() == [0, 4]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_pow_one_half_is_sqrt(dtype):
    x = torch.tensor([-float("inf"), -0.0, 0.0, 4.0, -1.0], dtype=dtype)
    got = (x ** 0.5).numpy()
    assert math.isnan(got[0]) and math.isnan(got[4])
    assert got[1] == 0.0 and np.signbit(got[1])  # sqrt(-0.) is -0.
    assert got[2] == 0.0 and not np.signbit(got[2])
    assert got[3] == 2.0
    # Still a pow node (not SqrtBackward0), with pow's gradient 0.5 x^-0.5.
    y = torch.tensor([4.0, 9.0], dtype=torch.float64, requires_grad=True)
    z = y ** 0.5
    assert z.grad_fn.name().startswith("PowBackward")
    z.sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), [0.25, 1.0 / 6.0])


def test_tensor_of_numpy_scalar_keeps_its_dtype():
    cases = [(np.float64(1.5), torch.float64), (np.float32(1.5), torch.float32),
             (np.float16(1.5), torch.float16), (np.int16(3), torch.int16),
             (np.int64(3), torch.int64), (np.uint8(7), torch.uint8), (np.bool_(True), torch.bool)]
    for value, dtype in cases:
        for make in (torch.tensor, torch.as_tensor):
            t = make(value)
            assert t.dtype == dtype and t.ndim == 0 and t.item() == value.item(), (value, make)
    assert torch.tensor(np.float64(1.5), dtype=torch.float32).dtype == torch.float32
    # Python numbers keep the default dtypes.
    assert torch.tensor(1.5).dtype == torch.float32 and torch.tensor(3).dtype == torch.int64


def test_advanced_index_assignment_needs_matching_dtypes():
    x = torch.zeros(4)
    msg = "Index put requires the source and destination dtypes match, got Float for the "
    with pytest.raises(RuntimeError, match=msg + "destination and Long for the source"):
        x[torch.tensor([0, 1])] = torch.tensor([1, 2])
    with pytest.raises(RuntimeError, match=msg + "destination and Long for the source"):
        x[torch.tensor([0, 1])] = torch.tensor(3)
    with pytest.raises(RuntimeError, match=msg + "destination and Double for the source"):
        x[[0, 1]] = torch.tensor([1.0, 2.0], dtype=torch.float64)
    with pytest.raises(RuntimeError, match=msg + "destination and Long for the source"):
        x[x > -1] = torch.tensor([1, 2, 3, 4])
    with pytest.raises(RuntimeError, match=msg + "destination and Long for the source"):
        x.index_put_((torch.tensor([0]),), torch.tensor([1]))
    # Casting cases PyTorch accepts: basic indexing, a lone mask with a 0-d value, Python
    # numbers.
    x[0:2] = torch.tensor([1, 2])
    x[x > 1.5] = torch.tensor(7)
    x[torch.tensor([3])] = 5
    x[[2]] = 6.0
    assert x.tolist() == [1.0, 7.0, 6.0, 5.0]


def test_masked_fill_refuses_values_that_overflow():
    mask = torch.tensor([True, False])
    for dtype, value, name in [(torch.uint8, 300, "uint8_t"), (torch.uint8, -1.5, "uint8_t"),
                               (torch.int8, -200, "int8_t"), (torch.int32, 2 ** 40, "int"),
                               (torch.uint8, float("nan"), "uint8_t"),
                               (torch.float16, 1e6, "c10::Half")]:
        with pytest.raises(RuntimeError,
                           match=f"value cannot be converted to type {name} without overflow"):
            torch.zeros(2, dtype=dtype).masked_fill_(mask, value)
        with pytest.raises(RuntimeError, match="without overflow"):
            torch.zeros(2, dtype=dtype).masked_fill(mask, value)
    assert torch.zeros(2, dtype=torch.int64).masked_fill(mask, 1.5).tolist() == [1, 0]
    assert torch.zeros(2, dtype=torch.bool).masked_fill(mask, 2).tolist() == [True, False]
    h = torch.zeros(2, dtype=torch.float16).masked_fill(mask, float("-inf"))
    assert h.tolist()[0] == -float("inf")
    assert torch.zeros(2, dtype=torch.uint8).masked_fill(mask, 255).tolist() == [255, 0]


@pytest.mark.parametrize("op", ["add_", "sub_", "mul_", "div_", "pow_", "remainder_"])
@pytest.mark.parametrize("dst,src", [(torch.float32, torch.int64), (torch.float64, torch.float32),
                                     (torch.float32, torch.bool)])
def test_inplace_with_strided_operand_of_another_dtype(op, dst, src):
    # The operand is cast before the in-place update; its strides must be the cast copy's
    # (this used to read past the end of the copy and raise an internal error).
    rng = np.random.default_rng(3)
    base = rng.uniform(1.0, 2.0, (5, 8))
    if src == torch.bool:
        if op in ("div_", "remainder_", "sub_"):
            pytest.skip("bool divisors are zero where False; bool subtraction is refused")
        other = rng.uniform(1.0, 3.0, (8, 10)) > 2.0
    elif src == torch.int64:
        other = rng.integers(1, 4, (8, 10))
    else:
        other = rng.uniform(1.0, 3.0, (8, 10)).astype(np.float32)
    x = torch.tensor(base, dtype=dst)
    y = torch.from_numpy(other).t()[::2]  # (5, 8), non-contiguous
    assert y.dtype == src and not y.is_contiguous()
    ufunc = {"add_": np.add, "sub_": np.subtract, "mul_": np.multiply, "div_": np.divide,
             "pow_": np.power, "remainder_": np.mod}[op]
    want = ufunc(x.double().numpy(), other.T[::2].astype(np.float64))
    getattr(x, op)(y)
    np.testing.assert_allclose(x.double().numpy(), want, rtol=1e-5)


def test_python_number_that_overflows_the_dtype_is_refused():
    # fill_/full/new_full/pow's exponent/where's scalar convert a Python number with
    # PyTorch's overflow check; a 0-d tensor value and the arithmetic ops wrap instead.
    a = torch.tensor([1, 2, 3], dtype=torch.int8)
    for f, name in [(lambda: a.clone().fill_(300), "int8_t"),
                    (lambda: a.new_full((2,), -129), "int8_t"),
                    (lambda: torch.full((2,), 1e10, dtype=torch.float16), "c10::Half"),
                    (lambda: torch.zeros(2).fill_(1e300), "float"),
                    (lambda: torch.zeros(2, dtype=torch.int64).fill_(float("inf")), "int64_t"),
                    (lambda: torch.zeros(2, dtype=torch.int16).pow(70000), "int16_t"),
                    (lambda: a.pow(300), "int8_t"),
                    (lambda: torch.where(a > 2, a, 300), "int8_t"),
                    (lambda: torch.where(a > 2, a.float(), 1e300), "float"),
                    (lambda: a.index_fill(0, torch.tensor([0]), 300), "int8_t"),
                    (lambda: torch.scalar_tensor(300, dtype=torch.int8), "int8_t")]:
        with pytest.raises(RuntimeError,
                           match=f"value cannot be converted to type {name} without overflow"):
            f()
    u = torch.tensor([1, 2], dtype=torch.uint8)
    assert u.clone().fill_(-255).tolist() == [1, 1]  # a negative int wraps down to -max
    with pytest.raises(RuntimeError, match="uint8_t"):
        u.clone().fill_(-256)
    assert u.masked_fill(u > 1, -2).tolist() == [1, 254]
    assert torch.where(u > 1, u, -1).tolist() == [255, 2]
    assert a.clone().fill_(torch.tensor(300)).tolist() == [44, 44, 44]
    assert (a + 300).tolist() == [45, 46, 47]
    assert (300 ** a).tolist() == [44, -112, -64]
    assert torch.zeros(2, dtype=torch.bool).fill_(300).tolist() == [True, True]
    # a one-element CPU half tensor is filled unchecked (inf), as in PyTorch; so is where's
    # scalar for half
    assert torch.zeros(1, dtype=torch.float16).fill_(1e10).tolist() == [float("inf")]
    assert torch.where(a > 2, a.half(), 1e10).tolist() == [float("inf")] * 2 + [3.0]
    with pytest.raises(RuntimeError, match="fill_ only supports 0-dimension value tensor"):
        a.clone().fill_(torch.tensor([2]))


def test_scalar_arguments_that_overflow_are_refused():
    """alpha / value / bounds / fill numbers go through PyTorch's overflow check too."""
    F = torch.nn.functional
    i8 = torch.ones(2, dtype=torch.int8)
    half = torch.ones(2, dtype=torch.float16)
    # (hardtanh/clamp bounds beyond an integer dtype on their own side bound nothing, as in
    # torch 2.15: test_core_parity_mends.py)
    for f, name in [(lambda: i8.add(i8, alpha=300), "int8_t"),
                    (lambda: i8.add(1, alpha=300), "int8_t"),
                    (lambda: i8.sub(i8, alpha=-200), "int8_t"),
                    (lambda: half.add(half, alpha=1e6), "c10::Half"),
                    (lambda: torch.addcmul(i8, i8, i8, value=1000), "int8_t"),
                    (lambda: torch.addcdiv(torch.ones(2), torch.ones(2), torch.ones(2),
                                           value=1e300), "float"),
                    (lambda: F.threshold(i8, 1000, 0), "int8_t"),
                    (lambda: F.threshold(i8, 0, -1000), "int8_t"),
                    (lambda: half.clamp(max=1e6), "c10::Half"),
                    (lambda: torch.zeros(3, dtype=torch.int8).scatter(0, torch.tensor([0]), 1000),
                     "int8_t"),
                    (lambda: torch.zeros(3, dtype=torch.int8).__setitem__(0, 1000), "int8_t"),
                    (lambda: torch.zeros(3, dtype=torch.uint8).__setitem__(0, 256), "uint8_t"),
                    (lambda: torch.zeros(3).__setitem__(0, 1e300), "float")]:
        with pytest.raises(RuntimeError,
                           match=f"^value cannot be converted to type {name} without overflow"):
            f()
    # in range (uint8 takes -1 as PyTorch does: it wraps), and half setitem stays unchecked
    u = torch.zeros(3, dtype=torch.uint8)
    u[0] = -1
    assert u.tolist() == [255, 0, 0]
    h = torch.zeros(3, dtype=torch.float16)
    h[0] = 1e6
    assert h.tolist() == [float("inf"), 0.0, 0.0]
    assert i8.add(i8, alpha=100).tolist() == [101, 101]
    assert torch.addcmul(i8, i8, i8, value=-128).tolist() == [-127, -127]
    # half/bfloat16 addcmul/addcdiv compute in float: the value is checked against float
    assert torch.addcdiv(half, half, half, value=1e6).tolist() == [float("inf")] * 2
    assert F.threshold(torch.tensor([1, 2, 3], dtype=torch.int8), 1, -5).tolist() == [-5, 2, 3]


def test_tensor_data_dtype_inference_and_overflow():
    assert torch.tensor([np.float16(1.5), 2]).dtype == torch.float16
    assert torch.tensor([np.uint8(1), np.int8(2)]).dtype == torch.int16
    assert torch.tensor([torch.tensor(1.5, dtype=torch.float64), torch.tensor(1.0)]).dtype \
        == torch.float64
    assert torch.tensor([torch.tensor(1, dtype=torch.int8), 2]).dtype == torch.int64
    t = torch.tensor([np.array([1, 2], dtype=np.float32), np.array([3, 4.5])])
    assert t.dtype == torch.float64 and t.tolist() == [[1.0, 2.0], [3.0, 4.5]]
    assert torch.tensor([[1, 2], torch.tensor([3, 4])]).tolist() == [[1, 2], [3, 4]]
    with pytest.raises(ValueError, match="only one element tensors"):
        torch.tensor([torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0])])
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        torch.tensor([1, 2**63])
    assert torch.tensor([2**70], dtype=torch.float64).tolist() == [2.0**70]
    assert torch.tensor([-1, -255], dtype=torch.uint8).tolist() == [255, 1]
    for data, dtype, name in [([256], torch.uint8, "uint8"), ([-129], torch.int8, "int8"),
                              ([float("inf")], torch.int64, "int64"),
                              ([float("nan")], torch.int32, "int32"), (200, torch.int8, "int8")]:
        with pytest.raises(RuntimeError,
                           match=f"value cannot be converted to type {name} without overflow"):
            torch.tensor(data, dtype=dtype)
    assert torch.tensor([1e6], dtype=torch.float16).tolist() == [float("inf")]
    for data, kind in [(None, "NoneType"), ({1, 2}, "set"), ((x for x in range(2)), "generator")]:
        with pytest.raises(RuntimeError, match=f"Could not infer dtype of {kind}"):
            torch.tensor(data)
    with pytest.raises(TypeError, match="invalid data type 'bytes'"):
        torch.tensor(b"ab")
    assert torch.zeros(torch.tensor(2)).shape == (2,)
    assert torch.ones(torch.tensor(2), torch.tensor(3)).shape == (2, 3)
    assert torch.empty(np.array(2)).shape == (2,)
