"""The elementwise family against NumPy: arithmetic, comparisons, logical/bitwise ops, unary
maths, and the misc ops (clamp, lerp, nan_to_num, round(decimals), isnan..., hypot, copysign,
fmod, xlogy, addcmul/addcdiv, alpha, rounding modes, float_power, logaddexp, sinc,
deg2rad/rad2deg, heaviside, signbit, positive/negative, gelu, softplus).

Every check runs over random shapes with 0-d, empty, non-contiguous (transposed and stepped
NumPy views shared zero-copy) and broadcast operands, over every dtype an op accepts, and
checks PyTorch's result dtype (promotion with weak Python scalars) besides the values.
"""

import math
import operator
import zlib

import numpy as np
import pytest

import ferrotorch as torch

B, U8, I8, I16, I32, I64 = (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32,
                            torch.int64)
F16, BF16, F32, F64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
ALL = [B, U8, I8, I16, I32, I64, F16, BF16, F32, F64]
INTS = [U8, I8, I16, I32, I64]
FLOATS = [F16, BF16, F32, F64]
NPD = {B: np.bool_, U8: np.uint8, I8: np.int8, I16: np.int16, I32: np.int32, I64: np.int64,
       F16: np.float16, BF16: np.float32, F32: np.float32, F64: np.float64}
RTOL = {F16: 2e-3, BF16: 1.6e-2, F32: 3e-6, F64: 1e-12}
ATOL = {F16: 1e-3, BF16: 1e-2, F32: 1e-6, F64: 1e-12}


# ----------------------------------------------------------------------------- helpers

def is_float(d):
    return d in FLOATS


def category(d):
    return 0 if d == B else (2 if is_float(d) else 1)


def promote(a, b):
    """PyTorch's promote_types, written independently of the library."""
    if a == b:
        return a
    ca, cb = category(a), category(b)
    if ca != cb:
        return a if ca > cb else b
    if ca == 2:
        if {a, b} == {F16, BF16}:
            return F32
        order = [F16, BF16, F32, F64]
        return max(a, b, key=order.index)
    if {a, b} == {U8, I8}:
        return I16
    if U8 in (a, b):
        return b if a == U8 else a
    order = [I8, I16, I32, I64]
    return max(a, b, key=order.index)


def result_type(da, shape_a, db, shape_b):
    """PyTorch's result_type for two tensors: a 0-d tensor only counts when its category is
    higher than that of the dimensioned operand."""
    za, zb = len(shape_a) == 0, len(shape_b) == 0
    if za == zb:
        return promote(da, db)
    dim, zero = (db, da) if za else (da, db)
    return promote(dim, zero) if category(zero) > category(dim) else dim


def bf16_round(x):
    """Round float32 values to bfloat16 (round to nearest even), returned as float32."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    bits = x.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    out = rounded.view(np.float32).copy()
    out[np.isnan(x)] = np.nan
    return out


def values(shape, dtype, rng, lo=-20, hi=20, positive=False, nonzero=False):
    """Random NumPy data that `dtype` represents exactly (bf16 data as float32)."""
    if dtype == B:
        return np.ones(shape, bool) if nonzero else np.asarray(rng.random(shape) > 0.5)
    if not is_float(dtype):
        info = np.iinfo(NPD[dtype])
        a = np.asarray(rng.integers(max(lo, info.min, 1 if positive else info.min),
                                    min(hi, info.max) + 1, shape))
        if nonzero:
            a[a == 0] = 1
        return np.asarray(a).astype(NPD[dtype])
    a = np.asarray(rng.uniform(lo, hi, shape) / 4)
    if positive:
        a = np.asarray(np.abs(a) + 0.25)
    if nonzero:
        a[np.abs(a) < 0.25] = 0.5
    a = np.asarray(a).astype(NPD[dtype])
    if dtype == BF16:
        a = bf16_round(a)
    return np.asarray(a)


def to_ft(a, dtype, layout="contig"):
    """A ferrotorch tensor equal to `a` with the given memory layout."""
    if dtype == BF16:
        return torch.tensor(np.asarray(a, np.float32)).to(BF16)
    a = np.asarray(a, NPD[dtype])
    if layout == "T" and a.ndim >= 2:
        base = np.ascontiguousarray(np.swapaxes(a, -1, -2))
        t = torch.from_numpy(np.swapaxes(base, -1, -2))
        assert not t.is_contiguous() or 1 in a.shape[-2:] or a.size == 0
        return t
    if layout == "step" and a.ndim >= 1:
        big = np.zeros(a.shape[:-1] + (a.shape[-1] * 2,), a.dtype)
        big[..., ::2] = a
        return torch.from_numpy(big[..., ::2])
    return torch.tensor(a) if a.ndim else torch.tensor(a.item(), dtype=dtype)


def to_np(t):
    if t.dtype == BF16:
        return t.float().numpy()
    return t.numpy()


def np_compute(dtype):
    return np.float32 if dtype in (F16, BF16) else NPD[dtype]


def finish(ref, dtype):
    """Round a reference computed in the compute dtype to `dtype` as PyTorch's CPU does."""
    if dtype == BF16:
        return bf16_round(ref)
    return np.asarray(ref).astype(NPD[dtype])


def check(got, ref, dtype, rtol=None, atol=None):
    assert got.dtype == dtype, (got.dtype, dtype)
    g = to_np(got)
    ref = np.asarray(ref)
    assert g.shape == ref.shape, (g.shape, ref.shape)
    if is_float(dtype):
        np.testing.assert_allclose(g.astype(np.float64), ref.astype(np.float64),
                                   rtol=rtol or RTOL[dtype], atol=atol or ATOL[dtype],
                                   equal_nan=True)
    else:
        np.testing.assert_array_equal(g, ref.astype(g.dtype))


SHAPE_CASES = [  # (shape of a, shape of b): equal, broadcast both ways, 0-d, empty
    ((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((4, 1), (1, 5)), ((), (3, 2)), ((2, 3), ()),
    ((), ()), ((0, 3), (3,)), ((2, 0), (2, 1)), ((5,), (5,)),
]
LAYOUTS = ["contig", "T", "step"]


# ----------------------------------------------------------------------------- binary family

NP_BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    "floor_divide": np.floor_divide, "remainder": np.remainder, "pow": np.power,
    "atan2": np.arctan2, "maximum": np.maximum, "minimum": np.minimum,
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal, "logical_and": np.logical_and,
    "logical_or": np.logical_or, "logical_xor": np.logical_xor, "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
}
CMP = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"}
BITWISE = {"bitwise_and", "bitwise_or", "bitwise_xor"}
TO_FLOAT = {"div", "atan2"}


def result_dtype(op, common):
    if op in CMP:
        return B
    if op in TO_FLOAT and not is_float(common):
        return F32
    return common


def supported(op, common):
    if op in BITWISE:
        return not is_float(common)
    if common == B and op in ("sub", "floor_divide", "remainder", "pow"):
        return False
    return True


def binary_inputs(op, da, db, sa, sb, rng):
    common = result_type(da, sa, db, sb)
    kw = {}
    if op == "pow":
        if is_float(common):
            a = values(sa, da, rng, positive=True, lo=-8, hi=8)
            b = values(sb, db, rng, lo=-8, hi=8)
            return a, b
        a = values(sa, da, rng, lo=-3, hi=3)
        b = values(sb, db, rng, lo=0, hi=3)
        return a, b
    if op in ("floor_divide", "remainder") and not is_float(common):
        kw = dict(nonzero=True)
    a = values(sa, da, rng)
    b = values(sb, db, rng, **kw)
    return a, b


def binary_ref(op, a, b, da, db):
    common = result_type(da, np.shape(a), db, np.shape(b))
    out = result_dtype(op, common)
    compute = np_compute(F32 if (op in TO_FLOAT and not is_float(common)) else common)
    with np.errstate(all="ignore"):
        r = NP_BINARY[op](np.asarray(a).astype(compute), np.asarray(b).astype(compute))
    return finish(r, out), out


SAME = [(d, d) for d in ALL]
CROSS = [(U8, I8), (B, I32), (I32, F32), (F16, F32), (BF16, F16), (I64, F16), (U8, BF16),
         (I16, I64), (B, F64), (F32, F64), (I8, B), (BF16, F64)]


@pytest.mark.parametrize("op", sorted(NP_BINARY))
@pytest.mark.parametrize("da,db", SAME + CROSS, ids=lambda d: str(d).split(".")[-1])
def test_binary_against_numpy(op, da, db):
    rng = np.random.default_rng(zlib.crc32(f'{op}{da}{db}'.encode()))
    for i, (sa, sb) in enumerate(SHAPE_CASES):
        common = result_type(da, sa, db, sb)
        a, b = binary_inputs(op, da, db, sa, sb, rng)
        la, lb = LAYOUTS[i % 3], LAYOUTS[(i + 1) % 3]
        ta, tb = to_ft(a, da, la), to_ft(b, db, lb)
        if not supported(op, common) or (op == "sub" and B in (da, db)):
            # PyTorch refuses `-` with any bool operand (not only bool - bool)
            with pytest.raises(RuntimeError):
                getattr(ta, op)(tb)
            continue
        ref, out = binary_ref(op, a, b, da, db)
        got = getattr(ta, op)(tb)
        check(got, ref, out)
        # The module function agrees with the method.
        check(getattr(torch, op)(ta, tb), ref, out)


PY_OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
          "div": operator.truediv, "floor_divide": operator.floordiv,
          "remainder": operator.mod, "pow": operator.pow, "bitwise_and": operator.and_,
          "bitwise_or": operator.or_, "bitwise_xor": operator.xor, "lt": operator.lt,
          "eq": operator.eq, "ge": operator.ge}


@pytest.mark.parametrize("op", sorted(PY_OPS))
@pytest.mark.parametrize("dtype", [B, U8, I32, I64, F16, BF16, F32, F64])
@pytest.mark.parametrize("scalar", [2, 2.5, True, -3])
def test_operators_with_python_scalars(op, dtype, scalar):
    """Forward and reflected operators with weak scalars: the tensor's dtype wins unless the
    scalar is of a higher category (then the default float dtype / int64)."""
    rng = np.random.default_rng(7)
    a = values((3, 4), dtype, rng, nonzero=True, positive=op == "pow")
    t = to_ft(a, dtype, "T")
    sdt = B if isinstance(scalar, bool) else (I64 if isinstance(scalar, int) else F32)
    # A weak scalar only matters when its category is higher than the tensor's.
    common = dtype if category(dtype) >= category(sdt) else sdt
    if op in BITWISE and (is_float(common)):
        with pytest.raises((RuntimeError, TypeError)):
            PY_OPS[op](t, scalar)
        return
    if op == "sub" and (dtype == B or isinstance(scalar, bool)):
        for x, y in ((t, scalar), (scalar, t)):
            with pytest.raises(RuntimeError, match="Subtraction, the `-` operator"):
                PY_OPS[op](x, y)
        return
    for reflected in (False, True):
        x, y = (scalar, t) if reflected else (t, scalar)
        if not supported(op, common) or (op in ("floor_divide", "remainder") and reflected
                                          and not is_float(common)) or (
                op == "pow" and reflected and not is_float(common)) or (
                op == "pow" and not reflected and not is_float(common) and scalar < 0):
            continue
        out = result_dtype(op, common)
        compute = np_compute(F32 if (op in TO_FLOAT and not is_float(common)) else common)
        av = np.asarray(a).astype(compute)
        sv = np.asarray(scalar).astype(compute)
        with np.errstate(all="ignore"):
            ref = PY_OPS[op](sv, av) if reflected else PY_OPS[op](av, sv)
        got = PY_OPS[op](x, y)
        check(got, finish(ref, out), out)


@pytest.mark.parametrize("case,expected", [
    (lambda: torch.ones(2, dtype=I32) + 2.5, F32),
    (lambda: torch.ones(2, dtype=U8) + torch.ones(2, dtype=I8), I16),
    (lambda: torch.ones(2, dtype=F16) * 2.0, F16),
    (lambda: torch.ones(2, dtype=BF16) * 2, BF16),
    (lambda: torch.ones(2, dtype=I64) / torch.ones(2, dtype=I64), F32),
    (lambda: torch.ones(2, dtype=I32) / 2, F32),
    (lambda: torch.ones(2, dtype=B) + torch.ones(2, dtype=B), B),
    (lambda: torch.ones(2, dtype=B) + 1, I64),
    (lambda: torch.ones(2, dtype=B) * 2.5, F32),
    (lambda: torch.ones(2, dtype=I64) + True, I64),
    (lambda: torch.ones(2, dtype=U8) - 1, U8),
    (lambda: torch.ones(2, dtype=I8) * 1000, I8),
    (lambda: torch.ones(2, dtype=F16) + torch.ones(2, dtype=F32), F32),
    (lambda: torch.ones(2, dtype=F16) + torch.ones(2, dtype=BF16), F32),
    (lambda: torch.ones(2, dtype=F32) + torch.tensor(1.0, dtype=F64), F32),
    (lambda: torch.ones(2, dtype=I32) + torch.tensor(1, dtype=I64), I32),
    (lambda: torch.ones(2, dtype=I32) + torch.tensor(1.0, dtype=F64), F64),
    (lambda: torch.ones(2, dtype=F16) + torch.tensor(1.0, dtype=F64), F16),
    (lambda: torch.tensor(1, dtype=I32) + torch.tensor(1, dtype=I64), I64),
    (lambda: torch.tensor(1, dtype=U8) + 5, U8),
    (lambda: 2.5 * torch.ones(2, dtype=I16), F32),
    (lambda: torch.ones(2, dtype=I32) ** 2.0, F32),
    (lambda: torch.ones(2, dtype=I32) // 2, I32),
    (lambda: torch.ones(2, dtype=I32) < 2.5, B),
    (lambda: torch.ones(2, dtype=U8) & 3, U8),
    (lambda: torch.ones(2, dtype=B) & True, B),
    (lambda: torch.ones(2, dtype=I32).true_divide(2), F32),
    (lambda: torch.ones(2, dtype=I32).div(2, rounding_mode="floor"), I32),
    (lambda: torch.ones(2, dtype=I32).mul(True), I32),
    (lambda: torch.ones(2, dtype=F32).mul(torch.ones(2, dtype=B)), F32),
])
def test_pytorch_promotion_table(case, expected):
    assert case().dtype == expected


def test_weak_scalar_values_wrap_like_pytorch():
    np.testing.assert_array_equal((torch.zeros(2, dtype=U8) - 1).numpy(), [255, 255])
    np.testing.assert_array_equal((torch.ones(2, dtype=I8) * 200).numpy(), [-56, -56])
    t = torch.tensor([1.0, 2.0], dtype=F16) * 2.0
    np.testing.assert_array_equal(t.numpy(), np.array([2, 4], np.float16))
    np.testing.assert_array_equal((torch.tensor([True, False]) * 3).numpy(), [3, 0])
    np.testing.assert_array_equal((torch.tensor([True, False]) * True).numpy(), [True, False])
    np.testing.assert_array_equal(torch.tensor([2.0, 3.0]).mul(torch.tensor([True, False]))
                                  .numpy(), [2.0, 0.0])


@pytest.mark.parametrize("dtype", INTS + [B])
@pytest.mark.parametrize("other", [1.5, torch.ones(3, dtype=F32)])
def test_inplace_downcast_is_an_error(dtype, other):
    t = torch.ones(3, dtype=dtype)
    with pytest.raises(RuntimeError, match="can't be cast"):
        t += other
    with pytest.raises(RuntimeError, match="can't be cast"):
        t.mul_(other)
    np.testing.assert_array_equal(to_np(t), np.ones(3, NPD[dtype]))


def test_inplace_rules():
    t = torch.ones(3, dtype=I32)
    with pytest.raises(RuntimeError, match="can't be cast"):
        t /= 2  # true division gives float
    t //= 2
    assert t.dtype == I32
    t += torch.ones(3, dtype=I64)  # same category: allowed, result cast back
    assert t.dtype == I32
    f = torch.ones(3, dtype=F16)
    f += torch.ones(3, dtype=F64)
    assert f.dtype == F16
    b = torch.ones(2, dtype=B)
    with pytest.raises(RuntimeError, match="can't be cast"):
        b += 1
    b |= torch.tensor([False, True])
    assert b.dtype == B
    with pytest.raises(RuntimeError):
        torch.ones(3).add_(torch.ones(2, 3))  # the output can't broadcast


@pytest.mark.parametrize("dtype", INTS)
def test_integer_floor_divide_and_remainder_signs(dtype):
    signed = dtype != U8
    a = np.array([-7, -6, -1, 0, 1, 5, 7, 9] if signed else [0, 1, 5, 7, 9, 200], NPD[dtype])
    b = np.array([2, -3, 3, -2, 4, -5, 7, 10] if signed else [2, 3, 4, 7, 10, 13], NPD[dtype])
    ta, tb = torch.tensor(a), torch.tensor(b)
    np.testing.assert_array_equal((ta // tb).numpy(), a // b)
    np.testing.assert_array_equal((ta % tb).numpy(), a % b)
    np.testing.assert_array_equal(torch.floor_divide(ta, tb).numpy(), np.floor_divide(a, b))
    np.testing.assert_array_equal(torch.remainder(ta, tb).numpy(), np.remainder(a, b))
    np.testing.assert_array_equal(torch.fmod(ta, tb).numpy(), np.fmod(a, b))
    np.testing.assert_array_equal(ta.div(tb, rounding_mode="trunc").numpy(),
                                  np.trunc(a / b).astype(a.dtype))
    np.testing.assert_array_equal(ta.div(tb, rounding_mode="floor").numpy(), a // b)
    if signed:
        np.testing.assert_array_equal((ta % 3).numpy(), a % 3)
        np.testing.assert_array_equal((ta % -3).numpy(), a % np.array(-3, a.dtype))
        np.testing.assert_array_equal((-7 // tb).numpy(), np.array(-7, a.dtype) // b)


def test_float_floor_divide_remainder_match_numpy():
    rng = np.random.default_rng(1)
    a = rng.uniform(-10, 10, 500)
    b = rng.uniform(-3, 3, 500)
    a = np.concatenate([a, [1.0, -1.0, 7.5, -7.5, 0.3, 1.0]])
    b = np.concatenate([b, [0.1, 0.1, 2.5, 2.5, 0.1, -0.1]])
    for dtype in (F32, F64):
        x, y = a.astype(NPD[dtype]), b.astype(NPD[dtype])
        tx, ty = torch.tensor(x), torch.tensor(y)
        np.testing.assert_array_equal(tx.div(ty, rounding_mode="floor").numpy(),
                                      np.floor_divide(x, y))
        np.testing.assert_array_equal(torch.floor_divide(tx, ty).numpy(),
                                      np.floor_divide(x, y))
        np.testing.assert_allclose(torch.remainder(tx, ty).numpy(), np.remainder(x, y),
                                   rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(torch.fmod(tx, ty).numpy(), np.fmod(x, y),
                                   rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(tx.div(ty, rounding_mode="trunc").numpy(),
                                      np.trunc(x / y))


def test_division_by_zero():
    f = torch.tensor([1.0, -1.0, 0.0])
    z = torch.zeros(3)
    with np.errstate(all="ignore"):
        ref = np.array([1.0, -1.0, 0.0], np.float32) / np.zeros(3, np.float32)
        np.testing.assert_array_equal((f / z).numpy(), ref)
        np.testing.assert_array_equal(torch.floor_divide(f, z).numpy(),
                                      np.floor_divide(np.array([1.0, -1.0, 0.0]), 0.0))
        np.testing.assert_array_equal(f.div(z, rounding_mode="floor").numpy(),
                                      np.floor_divide(np.array([1.0, -1.0, 0.0]), 0.0))
        np.testing.assert_array_equal(f.div(0, rounding_mode="trunc").numpy(), ref)
    assert np.isnan(torch.remainder(f, z).numpy()).all()
    assert np.isnan(torch.fmod(f, z).numpy()).all()
    i = torch.tensor([1, -1, 0])
    # int / int is true division: IEEE results.
    np.testing.assert_array_equal((i / torch.zeros(3, dtype=I64)).numpy(), ref)
    for fn in (lambda: i // torch.zeros(3, dtype=I64), lambda: i % 0, lambda: torch.fmod(i, 0),
               lambda: i.div(0, rounding_mode="trunc"),
               lambda: i.div(torch.tensor([1, 0, 1]), rounding_mode="floor")):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            fn()


# ----------------------------------------------------------------------------- unary family

def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _erfinv_check(x):  # NumPy has no erfinv: invert erf instead
    return None


NP_UNARY = {
    "neg": (np.negative, "any"), "abs": (np.abs, "any"), "sign": (np.sign, "any"),
    "exp": (np.exp, "small"), "exp2": (np.exp2, "small"), "expm1": (np.expm1, "small"),
    "log": (np.log, "pos"), "log2": (np.log2, "pos"), "log10": (np.log10, "pos"),
    "log1p": (np.log1p, "pos"), "sqrt": (np.sqrt, "pos"), "rsqrt": (lambda x: 1 / np.sqrt(x),
                                                                   "pos"),
    "sin": (np.sin, "any"), "cos": (np.cos, "any"), "tan": (np.tan, "small"),
    "asin": (np.arcsin, "unit"), "acos": (np.arccos, "unit"), "atan": (np.arctan, "any"),
    "sinh": (np.sinh, "small"), "cosh": (np.cosh, "small"), "tanh": (np.tanh, "any"),
    "asinh": (np.arcsinh, "any"), "acosh": (np.arccosh, "ge1"), "atanh": (np.arctanh, "unit"),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), "any"), "relu": (lambda x: np.maximum(x, 0),
                                                                 "any"),
    "silu": (lambda x: x / (1 + np.exp(-x)), "any"), "erf": (_erf, "any"),
    "erfc": (lambda x: 1 - _erf(x), "small"), "floor": (np.floor, "any"),
    "ceil": (np.ceil, "any"), "trunc": (np.trunc, "any"), "round": (np.round, "any"),
    "frac": (lambda x: x - np.trunc(x), "any"), "reciprocal": (np.reciprocal, "nonzero"),
    "square": (np.square, "any"), "sinc": (np.sinc, "any"), "deg2rad": (np.deg2rad, "any"),
    "rad2deg": (np.rad2deg, "any"), "negative": (np.negative, "any"),
    "positive": (np.positive, "any"),
}
KEEPS_INT = {"neg", "abs", "sign", "floor", "ceil", "trunc", "round", "square", "relu",
             "negative", "positive"}


def unary_input(domain, shape, dtype, rng):
    if not is_float(dtype):
        lo, hi = {"pos": (1, 20), "ge1": (1, 20), "unit": (0, 1), "small": (-5, 5),
                  "nonzero": (1, 20)}.get(domain, (-20, 20))
        return values(shape, dtype, rng, lo=lo, hi=hi)
    x = rng.uniform(-1, 1, shape)
    x = {"any": x * 6, "small": x * 3, "pos": np.abs(x) * 6 + 0.05, "unit": x * 0.95,
         "ge1": np.abs(x) * 6 + 1.0, "nonzero": np.where(np.abs(x) < 0.1, 0.5, x) * 6}[domain]
    x = x.astype(NPD[dtype])
    return bf16_round(x) if dtype == BF16 else x


@pytest.mark.parametrize("op", sorted(NP_UNARY))
@pytest.mark.parametrize("dtype", ALL)
def test_unary_against_numpy(op, dtype):
    fn, domain = NP_UNARY[op]
    rng = np.random.default_rng(zlib.crc32(f'{op}{dtype}'.encode()))
    shapes = [(3, 5), (), (0, 4), (2, 3, 4), (7,)]
    bool_ok = op in ("abs", "floor", "ceil", "trunc", "round", "positive") or (
        op not in KEEPS_INT)
    for i, shape in enumerate(shapes):
        a = unary_input(domain, shape, dtype, rng)
        t = to_ft(a, dtype, LAYOUTS[i % 3])
        if dtype == B and op == "relu":
            with pytest.raises(NotImplementedError, match="Boolean inputs not supported for relu"):
                t.relu()
            return
        if dtype == B and op in ("neg", "negative", "positive"):
            with pytest.raises(RuntimeError):
                getattr(t, op)()
            return
        if dtype == B and op in ("sign", "square"):
            # PyTorch: sign keeps the bools, square gives int64
            got = getattr(t, op)()
            want_dtype = B if op == "sign" else I64
            np.testing.assert_array_equal(got.numpy(), np.asarray(a).astype(NPD[want_dtype]))
            assert got.dtype == want_dtype
            continue
        if dtype == B and not bool_ok:
            return
        if op == "silu" and not is_float(dtype):
            # PyTorch has no integer silu (sigmoid and the rest promote to float)
            with pytest.raises(NotImplementedError, match="silu_cpu"):
                t.silu()
            return
        if op in KEEPS_INT and not is_float(dtype):
            out, compute = dtype, NPD[dtype]
        else:
            out = dtype if is_float(dtype) else F32
            compute = np_compute(out)
        if dtype == B and op in KEEPS_INT:
            ref = a.copy()
        else:
            with np.errstate(all="ignore"):
                ref = fn(np.asarray(a).astype(compute))
        got = getattr(t, op)()
        rtol = {F32: 2e-5 if op in ("sinc", "erfc", "tan") else 3e-6}.get(out)
        atol = 1e-6 if op == "sinc" and out == F32 else None
        check(got, finish(ref, out), out, rtol=rtol, atol=atol)
        if hasattr(torch, op):
            check(getattr(torch, op)(t), finish(ref, out), out, rtol=rtol, atol=atol)


def test_erfinv_inverts_erf():
    x = np.linspace(-0.99, 0.99, 101)
    for dtype in (F32, F64):
        y = torch.tensor(x, dtype=dtype).erfinv()
        np.testing.assert_allclose(_erf(y.numpy().astype(np.float64)), x, atol=1e-6)


@pytest.mark.parametrize("dtype", FLOATS)
def test_unary_special_values(dtype):
    a = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], np.float32)
    t = to_ft(a, dtype)
    for op, fn in [("exp", np.exp), ("log", np.log), ("sqrt", np.sqrt), ("abs", np.abs),
                   ("sign", np.sign), ("reciprocal", np.reciprocal), ("floor", np.floor),
                   ("tanh", np.tanh), ("sigmoid", lambda x: 1 / (1 + np.exp(-x)))]:
        with np.errstate(all="ignore"):
            ref = fn(a)
        if op == "sign":
            ref = np.where(np.isnan(a) | (a == 0), np.float32(0.0), ref)  # PyTorch: +0 there
        check(getattr(t, op)(), finish(ref, dtype), dtype)


def test_round_half_to_even():
    a = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4999, -2.6])
    np.testing.assert_array_equal(torch.tensor(a).round().numpy(), np.round(a))


# ----------------------------------------------------------------------------- predicates

@pytest.mark.parametrize("op", ["isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit"])
@pytest.mark.parametrize("dtype", ALL)
def test_predicates(op, dtype):
    if is_float(dtype):
        a = np.array([[np.nan, np.inf, -np.inf], [0.0, -0.0, -1.5], [2.0, 1e30, -1e-30]],
                     np.float32)
        if dtype == F16:
            a[2, 1] = 60000.0
            a[2, 2] = -1e-5
    else:
        a = values((3, 3), dtype, np.random.default_rng(0))
    t = to_ft(a, dtype, "T")
    ref = getattr(np, op)(np.asarray(a).astype(np_compute(dtype)) if is_float(dtype) else a)
    got = getattr(t, op)()
    assert got.dtype == B
    np.testing.assert_array_equal(got.numpy(), ref)
    np.testing.assert_array_equal(getattr(torch, op)(t).numpy(), ref)
    assert getattr(torch.zeros(0, 2, dtype=dtype), op)().shape == (0, 2)
    assert getattr(to_ft(np.array(1), dtype), op)().dim() == 0


# ----------------------------------------------------------------------------- clamp

@pytest.mark.parametrize("dtype", [U8, I8, I16, I32, I64, F16, BF16, F32, F64])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_clamp_scalar_bounds(dtype, layout):
    rng = np.random.default_rng(3)
    a = values((4, 6), dtype, rng)
    t = to_ft(a, dtype, layout)
    c = np_compute(dtype)
    for lo, hi in [(2, 10), (None, 5), (3, None), (10, 2)]:
        ref = np.asarray(a).astype(c)
        if lo is not None:
            ref = np.maximum(ref, lo)
        if hi is not None:
            ref = np.minimum(ref, hi)
        check(t.clamp(lo, hi), finish(ref, dtype), dtype)
        check(torch.clamp(t, min=lo, max=hi), finish(ref, dtype), dtype)
        check(t.clip(lo, hi), finish(ref, dtype), dtype)
        check(torch.clip(t, lo, hi), finish(ref, dtype), dtype)
    check(t.clamp_min(3), finish(np.maximum(np.asarray(a).astype(c), 3), dtype), dtype)
    check(t.clamp_max(3), finish(np.minimum(np.asarray(a).astype(c), 3), dtype), dtype)
    u = to_ft(a, dtype, layout)
    assert u.clamp_(0, 5) is u
    check(u, finish(np.clip(np.asarray(a).astype(c), 0, 5), dtype), dtype)
    if layout != "contig" and dtype != BF16:
        assert not u.is_contiguous()


@pytest.mark.parametrize("dtype", [I32, I64, U8])
def test_clamp_promotes_with_float_bounds(dtype):
    t = torch.tensor([1, 5, 9], dtype=dtype)
    r = t.clamp(2.5, 7.5)
    assert r.dtype == F32
    np.testing.assert_array_equal(r.numpy(), [2.5, 5.0, 7.5])
    with pytest.raises(RuntimeError, match="can't be cast"):
        t.clamp_(2.5)
    np.testing.assert_array_equal(t.numpy(), [1, 5, 9])
    # a bound beyond the dtype on its own side bounds nothing (PyTorch 2.15)
    assert torch.ones(2, dtype=I8).clamp(max=1000).tolist() == [1, 1]
    with pytest.raises(RuntimeError, match="Clamp max value -1000 is outside the representable"):
        torch.ones(2, dtype=I8).clamp(max=-1000)


def test_clamp_tensor_bounds_broadcast_and_nan():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    lo = rng.standard_normal((4,)).astype(np.float32) - 1
    hi = rng.standard_normal((3, 1)).astype(np.float32) + 1
    t = to_ft(a, F32, "T")
    r = t.clamp(torch.tensor(lo), torch.tensor(hi))
    np.testing.assert_array_equal(r.numpy(), np.minimum(np.maximum(a, lo), hi))
    r = torch.clamp(t, min=torch.tensor(lo))
    np.testing.assert_array_equal(r.numpy(), np.maximum(a, lo))
    r = t.clamp(max=torch.tensor(hi, dtype=F64))  # dimensioned f64 bound promotes
    assert r.dtype == F64
    n = torch.tensor([np.nan, 1.0, -5.0]).clamp(-1, 1).numpy()
    assert np.isnan(n[0]) and n[1] == 1 and n[2] == -1
    i = torch.tensor([1, 5, 9]).clamp(torch.tensor([2, 2, 2]), torch.tensor([4, 6, 8]))
    np.testing.assert_array_equal(i.numpy(), [2, 5, 8])
    assert torch.tensor(3.0).clamp(0, 1).dim() == 0
    assert torch.zeros(0, 3).clamp(0, 1).shape == (0, 3)


def test_clamp_errors():
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max'"):
        torch.ones(2).clamp()
    with pytest.raises(RuntimeError, match="Bool"):
        torch.ones(2, dtype=B).clamp(True, True)
    with pytest.raises(RuntimeError):
        torch.ones(2, 3).clamp(torch.ones(4))


# ----------------------------------------------------------------------------- lerp, addc*

def np_lerp(s, e, w):
    return np.where(np.abs(w) < 0.5, s + w * (e - s), e - (e - s) * (1 - w))


@pytest.mark.parametrize("dtype", FLOATS)
def test_lerp(dtype):
    rng = np.random.default_rng(2)
    s, e = values((3, 4), dtype, rng), values((4,), dtype, rng)
    w = values((3, 1), dtype, rng, lo=-4, hi=8) / 2
    c = np_compute(dtype)
    ts, te, tw = to_ft(s, dtype, "T"), to_ft(e, dtype), to_ft(w, dtype, "step")
    ref = np_lerp(s.astype(c), e.astype(c), w.astype(c))
    check(ts.lerp(te, tw), finish(ref, dtype), dtype)
    check(torch.lerp(ts, te, tw), finish(ref, dtype), dtype)
    ref = np_lerp(s.astype(c), e.astype(c), np.asarray(0.75, c))
    check(ts.lerp(te, 0.75), finish(ref, dtype), dtype)
    u = to_ft(s, dtype)
    u.lerp_(te, 0.25)
    check(u, finish(np_lerp(s.astype(c), e.astype(c), np.asarray(0.25, c)), dtype), dtype)


def test_lerp_errors():
    with pytest.raises(RuntimeError, match="expected dtype"):
        torch.ones(2).lerp(torch.ones(2, dtype=F64), 0.5)
    with pytest.raises(RuntimeError, match="expected dtype"):
        torch.ones(2).lerp(torch.ones(2), torch.ones(2, dtype=F64))
    with pytest.raises(RuntimeError, match="not implemented"):
        torch.ones(2, dtype=I64).lerp(torch.ones(2, dtype=I64), 0.5)


@pytest.mark.parametrize("da,d1,d2", [(F32, F32, F32), (F64, F32, F32), (F16, F16, F16),
                                      (BF16, BF16, BF16), (I32, I32, I32), (F32, I64, F32),
                                      (I64, U8, I8)])
def test_addcmul_addcdiv(da, d1, d2):
    rng = np.random.default_rng(9)
    s = values((3, 4), da, rng)
    x = values((4,), d1, rng)
    y = values((3, 1), d2, rng, nonzero=True)
    out = promote(promote(da, d1), d2)
    c = np_compute(out)
    ts, tx, ty = to_ft(s, da, "T"), to_ft(x, d1), to_ft(y, d2, "step")
    val = 2 if not is_float(out) else 0.5
    ref = s.astype(c) + np.asarray(val, c) * x.astype(c) * y.astype(c)
    check(ts.addcmul(tx, ty, value=val), finish(ref, out), out)
    check(torch.addcmul(ts, tx, ty, value=val), finish(ref, out), out)
    check(ts.addcmul(tx, ty), finish(s.astype(c) + x.astype(c) * y.astype(c), out), out)
    if is_float(d1) or is_float(d2):
        ref = s.astype(c) + np.asarray(val, c) * x.astype(c) / y.astype(c)
        check(torch.addcdiv(ts, tx, ty, value=val), finish(ref, out), out)
    else:
        with pytest.raises(RuntimeError, match="Integer division with addcdiv"):
            ts.addcdiv(tx, ty)
    if out == da:
        u = to_ft(s, da)
        u.addcmul_(tx, ty, value=val)
        check(u, finish(s.astype(c) + np.asarray(val, c) * x.astype(c) * y.astype(c), out),
              out)
    if not is_float(out):
        with pytest.raises(RuntimeError, match="floating point"):
            ts.addcmul(tx, ty, value=0.5)


# ----------------------------------------------------------------------------- alpha, div modes

@pytest.mark.parametrize("dtype", [U8, I8, I32, I64, F16, BF16, F32, F64])
def test_add_sub_alpha(dtype):
    rng = np.random.default_rng(11)
    a, b = values((3, 4), dtype, rng, lo=-5, hi=5), values((4,), dtype, rng, lo=-5, hi=5)
    ta, tb = to_ft(a, dtype, "T"), to_ft(b, dtype)
    c = np_compute(dtype)
    alpha = 3 if not is_float(dtype) else 0.5
    with np.errstate(all="ignore"):
        ref_add = a.astype(c) + np.asarray(alpha, c) * b.astype(c)
        ref_sub = a.astype(c) - np.asarray(alpha, c) * b.astype(c)
    check(ta.add(tb, alpha=alpha), finish(ref_add, dtype), dtype)
    check(torch.add(ta, tb, alpha=alpha), finish(ref_add, dtype), dtype)
    check(ta.sub(tb, alpha=alpha), finish(ref_sub, dtype), dtype)
    check(torch.sub(ta, tb, alpha=alpha), finish(ref_sub, dtype), dtype)
    check(torch.subtract(ta, tb, alpha=alpha), finish(ref_sub, dtype), dtype)
    check(ta.add(tb), finish(a.astype(c) + b.astype(c), dtype), dtype)
    u = to_ft(a, dtype)
    u.add_(tb, alpha=alpha)
    check(u, finish(ref_add, dtype), dtype)
    u = to_ft(a, dtype)
    u.sub_(tb, alpha=alpha)
    check(u, finish(ref_sub, dtype), dtype)
    # A scalar `other` works too.
    with np.errstate(all="ignore"):
        check(ta.add(2, alpha=alpha), finish(a.astype(c) + np.asarray(2 * alpha, c), dtype),
              dtype)


def test_alpha_errors():
    with pytest.raises(RuntimeError, match="alpha must not be a floating point"):
        torch.ones(2, dtype=I64).add(torch.ones(2, dtype=I64), alpha=0.5)
    with pytest.raises(RuntimeError, match="Boolean alpha"):
        torch.ones(2).add(torch.ones(2), alpha=True)
    with pytest.raises(RuntimeError, match="Subtraction"):
        torch.ones(2, dtype=B).sub(torch.ones(2, dtype=B), alpha=True)
    with pytest.raises(TypeError, match="alpha"):
        torch.ones(2).mul(torch.ones(2), alpha=2)
    with pytest.raises(TypeError, match="rounding_mode"):
        torch.ones(2).add(torch.ones(2), rounding_mode="floor")
    r = torch.ones(2, dtype=B).add(torch.ones(2, dtype=B), alpha=True)
    assert r.dtype == B
    r = torch.ones(2, dtype=I32).add(1.5, alpha=2)  # float scalar other -> float result
    assert r.dtype == F32 and r.tolist() == [4.0, 4.0]


@pytest.mark.parametrize("dtype", [I8, I32, I64, F16, BF16, F32, F64])
def test_div_rounding_modes(dtype):
    rng = np.random.default_rng(13)
    a = values((4, 5), dtype, rng)
    b = values((5,), dtype, rng, nonzero=True)
    ta, tb = to_ft(a, dtype, "step"), to_ft(b, dtype)
    c = np_compute(dtype)
    x, y = a.astype(c), b.astype(c)
    with np.errstate(all="ignore"):
        if is_float(dtype):
            trunc, floor = np.trunc(x / y), np.floor_divide(x, y)
        else:
            trunc, floor = np.trunc(x / y).astype(c), x // y
    check(ta.div(tb, rounding_mode="trunc"), finish(trunc, dtype), dtype)
    check(torch.div(ta, tb, rounding_mode="floor"), finish(floor, dtype), dtype)
    check(torch.divide(ta, tb, rounding_mode="floor"), finish(floor, dtype), dtype)
    true = F32 if not is_float(dtype) else dtype
    cc = np_compute(true)
    check(ta.div(tb, rounding_mode=None), finish(a.astype(cc) / b.astype(cc), true), true)
    check(torch.true_divide(ta, tb), finish(a.astype(cc) / b.astype(cc), true), true)
    u = to_ft(a, dtype)
    u.div_(tb, rounding_mode="floor")
    check(u, finish(floor, dtype), dtype)
    with pytest.raises(RuntimeError, match="rounding_mode"):
        ta.div(tb, rounding_mode="round")


# ----------------------------------------------------------------------------- misc binary

MISC_BINARY = {
    "hypot": (np.hypot, "float"), "copysign": (np.copysign, "to_float"),
    "fmod": (np.fmod, "keep"), "logaddexp": (np.logaddexp, "float"),
    "logaddexp2": (np.logaddexp2, "float"),
    "xlogy": (lambda x, y: np.where(np.isnan(y), np.nan, np.where(x == 0, 0.0, x * np.log(y))),
              "to_float"),
}


@pytest.mark.parametrize("op", sorted(MISC_BINARY))
@pytest.mark.parametrize("da,db", [(F32, F32), (F64, F64), (F16, F16), (BF16, BF16),
                                   (I32, I32), (I64, F32), (U8, I8), (F16, F64), (B, F32)])
def test_misc_binary(op, da, db):
    fn, kind = MISC_BINARY[op]
    rng = np.random.default_rng(17)
    for i, (sa, sb) in enumerate(SHAPE_CASES[:7]):
        common = result_type(da, sa, db, sb)
        a = values(sa, da, rng)
        b = values(sb, db, rng, nonzero=True, positive=op == "xlogy")
        if op == "xlogy" and a.size:
            a.flat[0] = 0
        ta, tb = to_ft(a, da, LAYOUTS[i % 3]), to_ft(b, db, LAYOUTS[(i + 2) % 3])
        if kind == "float" and not is_float(common):
            with pytest.raises(RuntimeError, match="not implemented"):
                getattr(ta, op)(tb)
            continue
        if op == "fmod" and common == B:
            continue
        out = (F32 if not is_float(common) else common) if kind != "keep" else common
        c = np_compute(out)
        with np.errstate(all="ignore"):
            ref = fn(a.astype(c), b.astype(c))
        check(getattr(ta, op)(tb), finish(ref, out), out)
        check(getattr(torch, op)(ta, tb), finish(ref, out), out)


def test_misc_binary_scalars_and_inplace():
    t = torch.tensor([-2.0, 0.0, 3.0])
    np.testing.assert_allclose(t.hypot(4.0).numpy(), np.hypot([-2, 0, 3], 4), rtol=1e-6)
    np.testing.assert_array_equal(torch.copysign(t, -1).numpy(), [-2, -0.0, -3])
    assert torch.copysign(torch.tensor([1, 2]), -1).dtype == F32
    np.testing.assert_array_equal(torch.fmod(torch.tensor([-5, 5]), 3).numpy(), [-2, 2])
    assert torch.fmod(torch.tensor([-5, 5]), 2.5).dtype == F32
    np.testing.assert_allclose(torch.xlogy(t, 2.0).numpy(), [-2 * np.log(2), 0, 3 * np.log(2)],
                               rtol=1e-6)
    x = torch.tensor([-5.0, 5.0])
    x.fmod_(3)
    np.testing.assert_array_equal(x.numpy(), [-2, 2])
    x.copysign_(torch.tensor([1.0, -1.0]))
    np.testing.assert_array_equal(x.numpy(), [2, -2])
    x.hypot_(torch.zeros(2))
    np.testing.assert_array_equal(x.numpy(), [2, 2])
    x.xlogy_(4.0)
    np.testing.assert_allclose(x.numpy(), 2 * np.log([4.0, 4.0]), rtol=1e-6)
    assert np.isnan(torch.xlogy(torch.tensor([0.0]), torch.tensor([np.nan])).numpy()[0])
    assert torch.xlogy(torch.tensor([0.0]), torch.tensor([0.0])).tolist() == [0.0]
    inf = torch.tensor([np.inf, -np.inf])
    np.testing.assert_array_equal(torch.logaddexp(inf, inf).numpy(), [np.inf, -np.inf])
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch.ones(2, dtype=I32).copysign_(torch.ones(2))


@pytest.mark.parametrize("da,db", [(F32, F32), (I32, I32), (F16, I64), (B, F64), (U8, F32)])
def test_float_power(da, db):
    rng = np.random.default_rng(19)
    a = values((3, 4), da, rng, positive=True, lo=0, hi=8)
    b = values((4,), db, rng, lo=-3, hi=3)
    ta, tb = to_ft(a, da, "T"), to_ft(b, db)
    with np.errstate(all="ignore"):
        ref = np.float_power(a.astype(np.float64), b.astype(np.float64))
    check(ta.float_power(tb), ref, F64)
    check(torch.float_power(ta, tb), ref, F64)
    check(ta.float_power(2), np.float_power(a.astype(np.float64), 2), F64)
    with pytest.raises(RuntimeError, match="float_power_"):
        torch.ones(2, dtype=F32).float_power_(2)
    u = torch.tensor([2.0, 3.0], dtype=F64)
    u.float_power_(2)
    assert u.tolist() == [4.0, 9.0]


@pytest.mark.parametrize("dtype", [F32, F64, F16, BF16, I32, U8, B])
def test_heaviside(dtype):
    a = np.array([[-1.5, 0.0, 2.0], [0.0, -0.0, 7.0]]) if is_float(dtype) else (
        np.array([[0, 1, 0], [1, 1, 0]]) if dtype in (U8, B) else np.array([[-1, 0, 2],
                                                                             [0, 3, -4]]))
    v = np.array([0.5, 9, 0.25]) if is_float(dtype) else np.array([1, 0, 1])
    if dtype == B:
        a, v = a.astype(bool), v.astype(bool)
    t = to_ft(a, dtype, "T")
    ref = np.heaviside(a.astype(np.float64), v.astype(np.float64))
    check(t.heaviside(to_ft(v, dtype)), finish(ref, dtype), dtype)
    check(torch.heaviside(t, to_ft(v, dtype)), finish(ref, dtype), dtype)
    with pytest.raises(RuntimeError, match="different dtypes"):
        t.heaviside(torch.ones(3, dtype=F64 if dtype != F64 else F32))


# ----------------------------------------------------------------------------- misc unary

@pytest.mark.parametrize("dtype", FLOATS)
def test_nan_to_num(dtype):
    a = np.array([[np.nan, np.inf, -np.inf], [1.5, -2.0, 0.0]], np.float32)
    t = to_ft(a, dtype, "T")
    finfo = {F16: np.finfo(np.float16), F32: np.finfo(np.float32), F64: np.finfo(np.float64)}
    if dtype == BF16:
        big = 3.3895313892515355e38
        ref = np.array([[0, big, -big], [1.5, -2, 0]])
    else:
        ref = np.nan_to_num(a.astype(NPD[dtype]), posinf=finfo[dtype].max,
                            neginf=finfo[dtype].min)
    check(t.nan_to_num(), ref, dtype, rtol=1e-7, atol=0)
    check(torch.nan_to_num(t, nan=1.0, posinf=2.0, neginf=-3.0),
          np.array([[1, 2, -3], [1.5, -2, 0]]), dtype)
    u = to_ft(a, dtype)
    u.nan_to_num_(nan=7.0)
    assert to_np(u)[0, 0] == 7
    i = torch.tensor([1, 2])
    np.testing.assert_array_equal(i.nan_to_num().numpy(), [1, 2])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("decimals", [0, 1, 2, -1, -2])
def test_round_decimals(dtype, decimals):
    rng = np.random.default_rng(23)
    a = (rng.standard_normal((4, 5)) * 300).astype(NPD[dtype])
    if dtype == BF16:
        a = bf16_round(a)
    t = to_ft(a, dtype, "step")
    c = np_compute(dtype)
    x = a.astype(c)
    p = c(10.0 ** abs(decimals))
    ref = np.round(x / p) * p if decimals < 0 else np.round(x * p) / p
    check(t.round(decimals=decimals), finish(ref, dtype), dtype)
    check(torch.round(t, decimals=decimals), finish(ref, dtype), dtype)
    u = to_ft(a, dtype)
    u.round_(decimals=decimals)
    check(u, finish(ref, dtype), dtype)


def test_round_decimals_int_errors():
    np.testing.assert_array_equal(torch.tensor([1, 2]).round().numpy(), [1, 2])
    with pytest.raises(RuntimeError, match="not implemented"):
        torch.tensor([1, 2]).round(decimals=1)


def np_gelu(x, approximate):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + _erf(x / np.sqrt(2)))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(dtype, approximate):
    rng = np.random.default_rng(29)
    a = values((3, 7), dtype, rng)
    t = to_ft(a, dtype, "T")
    ref = np_gelu(a.astype(np.float64), approximate)
    check(torch.gelu(t, approximate=approximate), finish(ref.astype(np_compute(dtype)), dtype),
          dtype, rtol=max(RTOL[dtype], 1e-5), atol=max(ATOL[dtype], 1e-6))
    with pytest.raises(RuntimeError, match="approximate"):
        torch.gelu(t, approximate="fast")
    with pytest.raises(RuntimeError, match="not implemented"):
        torch.gelu(torch.ones(2, dtype=I64))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("beta,threshold", [(1.0, 20.0), (2.0, 5.0), (0.5, 1.0)])
def test_softplus(dtype, beta, threshold):
    rng = np.random.default_rng(31)
    a = values((4, 6), dtype, rng, lo=-40, hi=40)
    t = to_ft(a, dtype, "step")
    x = a.astype(np.float64)
    ref = np.where(x * beta > threshold, x, np.log1p(np.exp(x * beta)) / beta)
    check(torch.softplus(t, beta=beta, threshold=threshold),
          finish(ref.astype(np_compute(dtype)), dtype), dtype, rtol=max(RTOL[dtype], 1e-5))
    with pytest.raises(RuntimeError, match="not implemented"):
        torch.softplus(torch.ones(2, dtype=I32))


def test_positive_negative():
    t = torch.tensor([1.0, -2.0])
    assert torch.positive(t).data_ptr() == t.data_ptr()
    np.testing.assert_array_equal(torch.negative(t).numpy(), [-1.0, 2.0])
    u = torch.tensor([1, -2])
    u.negative_()
    np.testing.assert_array_equal(u.numpy(), [-1, 2])
    with pytest.raises(RuntimeError, match="bool"):
        torch.positive(torch.ones(2, dtype=B))


@pytest.mark.parametrize("op", ["sinc", "deg2rad", "rad2deg"])
def test_misc_unary_inplace_and_int_promotion(op):
    i = torch.tensor([0, 90, 180])
    r = getattr(i, op)()
    assert r.dtype == F32
    ref = {"sinc": np.sinc, "deg2rad": np.deg2rad, "rad2deg": np.rad2deg}[op](
        np.array([0, 90, 180], np.float32))
    np.testing.assert_allclose(r.numpy(), ref, rtol=1e-6, atol=1e-6)
    f = torch.tensor([0.0, 90.0, 180.0])
    getattr(f, op + "_")()
    np.testing.assert_allclose(f.numpy(), ref, rtol=1e-6, atol=1e-6)
    with pytest.raises(RuntimeError, match="can't be cast"):
        getattr(torch.tensor([1, 2]), op + "_")()


def test_large_tensors_take_the_parallel_path():
    rng = np.random.default_rng(37)
    a = rng.standard_normal((300, 301)).astype(np.float32)
    b = rng.standard_normal((301,)).astype(np.float32)
    ta, tb = to_ft(a, F32, "T"), torch.tensor(b)
    np.testing.assert_allclose(ta.clamp(-0.5, 0.5).numpy(), np.clip(a, -0.5, 0.5))
    np.testing.assert_allclose(ta.lerp(torch.zeros(301), 0.3).numpy(),
                               np_lerp(a, np.zeros(301, np.float32), np.float32(0.3)),
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ta.addcmul(tb, tb, value=2).numpy(), a + 2 * b * b, rtol=1e-6)
    np.testing.assert_allclose(torch.hypot(ta, tb).numpy(), np.hypot(a, b), rtol=1e-6)
    np.testing.assert_allclose((ta + tb).numpy(), a + b)


# ----------------------------------------------------------------------------- autograd

def _leaf(a):
    return torch.tensor(np.asarray(a, np.float64), requires_grad=True)


GRAD_RNG = np.random.default_rng(41)
X = GRAD_RNG.uniform(-2, 2, (3, 4))
Y = GRAD_RNG.uniform(0.5, 2, (4,))
W = GRAD_RNG.uniform(-1, 1, (3, 1))


@pytest.mark.parametrize("name,fn,args", [
    ("clamp scalars", lambda x: x.clamp(-1, 1), (X,)),
    ("clamp_min", lambda x: torch.clamp_min(x, 0.3), (X,)),
    ("clamp tensors", lambda x, lo, hi: x.clamp(lo, hi), (X, Y - 2.5, W + 1.5)),
    ("lerp scalar", lambda s, e: s.lerp(e, 0.3), (X, Y)),
    ("lerp tensor", lambda s, e, w: torch.lerp(s, e, w), (X, Y, W)),
    ("addcmul", lambda s, a, b: s.addcmul(a, b, value=0.5), (X, Y, W)),
    ("addcdiv", lambda s, a, b: torch.addcdiv(s, a, b, value=2), (X, W, Y)),
    ("add alpha", lambda a, b: a.add(b, alpha=3), (X, Y)),
    ("sub alpha", lambda a, b: torch.sub(a, b, alpha=0.5), (X, W)),
    ("softplus", lambda x: torch.softplus(x, beta=2, threshold=1), (X,)),
    ("hypot", lambda a, b: a.hypot(b), (X, Y)),
    ("hypot scalar", lambda a: a.hypot(1.5), (X,)),
    ("copysign", lambda a, b: a.copysign(b), (X, W)),
    ("xlogy", lambda a, b: a.xlogy(b), (X, Y)),
    ("logaddexp", lambda a, b: torch.logaddexp(a, b), (X, W)),
    ("logaddexp2", lambda a, b: torch.logaddexp2(a, b), (X, Y)),
    ("float_power", lambda a, b: a.float_power(b), (np.abs(X) + 0.5, W)),
    ("fmod", lambda a, b: torch.fmod(a, b), (X, Y)),
    ("nan_to_num", lambda x: x.nan_to_num(), (X,)),
    ("sinc", lambda x: x.sinc(), (X,)),
    ("deg2rad", lambda x: x.deg2rad(), (X,)),
    ("rad2deg", lambda x: torch.rad2deg(x), (X,)),
    ("gelu", lambda x: torch.gelu(x), (X,)),
    ("gelu tanh", lambda x: torch.gelu(x, approximate="tanh"), (X,)),
    ("round decimals", lambda x: x.round(decimals=1) + x, (X,)),
    ("div floor", lambda a, b: a.div(b, rounding_mode="floor") + a * b, (X, Y)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_gradcheck_misc_ops(name, fn, args):
    from ferrotorch.autograd import gradcheck

    inputs = tuple(_leaf(a) for a in args)
    assert gradcheck(fn, inputs)
    out = fn(*inputs)
    assert out.requires_grad and out.grad_fn is not None


def test_misc_grad_values_and_no_grad():
    x = _leaf([-2.0, 0.5, 3.0])
    x.clamp(-1, 1).backward(torch.ones(3, dtype=torch.float64))
    np.testing.assert_array_equal(x.grad.numpy(), [0, 1, 0])
    with torch.no_grad():
        assert not x.clamp(0, 1).requires_grad
    y = torch.tensor([1.0, 2.0])
    assert torch.hypot(y, y).grad_fn is None
    assert not x.heaviside(torch.tensor([0.5], dtype=torch.float64)).requires_grad
    assert not x.signbit().requires_grad


def test_misc_inplace_under_autograd():
    x = _leaf([-2.0, 0.5, 3.0])
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x.clamp_(0, 1)
    y = x * 1
    y.clamp_(-1, 1)
    y.addcmul_(x, x, value=2)
    y.backward(torch.ones(3, dtype=torch.float64))
    np.testing.assert_allclose(x.grad.numpy(), np.array([0, 1, 0]) + 4 * x.detach().numpy())
    z = x * 1
    z.lerp_(torch.zeros(3, dtype=torch.float64), 0.25)
    z.backward(torch.ones(3, dtype=torch.float64))
    np.testing.assert_allclose(x.grad.numpy(), np.array([0, 1, 0]) + 4 * x.detach().numpy()
                               + 0.75)
