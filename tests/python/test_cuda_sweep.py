"""Differential CPU-vs-CUDA sweep over a broad list of ops.

Every case builds the same inputs on the CPU and on the GPU (with the views — transposed,
stepped slices, broadcast/expanded, 0-d, empty — taken on each device's own storage), runs the
op on both and compares the results: exactly for integer and bool results, with tolerances that
fit the dtype for floats. Cases marked for autograd run again in float64 with .backward() on
both devices and the gradients of every leaf are compared. The CPU side is tested against NumPy
elsewhere, so it serves as the reference.

Needs an NVIDIA GPU (`pytest -m cuda`), or the CPU emulator of the driver (tools/cuda_emu/run).
"""

import math

import numpy as np
import pytest

import ferrotorch as torch
import ferrotorch.nn.functional as F
from ferrotorch import nn

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(),
                       reason="no CUDA device: " + str(torch._C._cuda_unavailable_reason())),
]

F32, F64, F16, BF16 = torch.float32, torch.float64, torch.float16, torch.bfloat16
I64, I32, U8, BOOL = torch.int64, torch.int32, torch.uint8, torch.bool
FLOATS = [F32, F64, F16, BF16]
INTS = [I64, I32, U8]
ALL = FLOATS + INTS + [BOOL]
RTOL = {F16: 2e-3, BF16: 1e-2, F32: 1e-5, F64: 1e-10}


# ============================================================================ harness

class Ctx:
    """Builds inputs on one device. The data depends only on (seed, shape, dtype, domain), so
    the CPU and the CUDA contexts produce the same values; views are taken after the move."""

    def __init__(self, dev, dtype, grad=False):
        self.dev, self.dtype, self.grad = dev, dtype, grad
        self.leaves = []
        self.seed = 0

    def data(self, shape, dtype, domain):
        self.seed += 1
        rng = np.random.default_rng(self.seed)
        if dtype == BOOL:
            return rng.random(shape) > 0.5
        if not dtype.is_floating_point:
            lo = 0 if dtype == U8 else -9
            if domain == "pos":
                lo = 1
            return rng.integers(lo, 10, size=shape)
        if domain == "pos":
            return rng.uniform(0.5, 2.5, shape)
        if domain == "unit":
            return rng.uniform(-0.9, 0.9, shape)
        if domain == "ge1":
            return rng.uniform(1.1, 3.0, shape)
        if domain == "prob":
            return rng.uniform(0.05, 0.95, shape)
        if domain == "int":  # floats with integral and half-integral values
            return np.round(rng.standard_normal(shape) * 4) / 2
        return rng.standard_normal(shape)

    def t(self, shape, dtype=None, layout="c", domain=None, grad=True):
        """A tensor of `shape` in `layout`: c (contiguous), t (transposed last two dims),
        s (stepped slice of dim 0), e (expanded from size 1 in dim 0)."""
        dtype = dtype or self.dtype
        shape = tuple(shape)
        if layout == "t":
            base_shape = shape[:-2] + (shape[-1], shape[-2])
        elif layout == "s":
            base_shape = (shape[0] * 2,) + shape[1:]
        elif layout == "e":
            base_shape = (1,) + shape[1:]
        else:
            base_shape = shape
        a = self.data(base_shape, dtype, domain)
        base = torch.from_numpy(np.asarray(a)).to(dtype).to(self.dev)
        if self.grad and grad and dtype.is_floating_point:
            base.requires_grad_(True)
            self.leaves.append(base)
        if layout == "t":
            return base.transpose(-1, -2)
        if layout == "s":
            return base[::2]
        if layout == "e":
            return base.expand(*shape)
        return base

    def idx(self, shape, high, dtype=I64):
        self.seed += 1
        rng = np.random.default_rng(self.seed)
        a = rng.integers(0, high, size=shape)
        return torch.from_numpy(np.asarray(a)).to(dtype).to(self.dev)

    def mask(self, shape):
        self.seed += 1
        rng = np.random.default_rng(self.seed)
        return torch.from_numpy(rng.random(shape) > 0.5).to(self.dev)


def flat(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [x for o in out for x in flat(o)]
    return [out]


def npy(t):
    t = t.detach().cpu()
    if t.dtype in (F16, BF16):
        t = t.float()
    return t.numpy()


def compare(got, want, rtol=None, what="value"):
    g, w = flat(got), flat(want)
    assert len(g) == len(w), (what, len(g), len(w))
    for i, (a, b) in enumerate(zip(g, w)):
        if not isinstance(b, torch.Tensor):
            assert not isinstance(a, torch.Tensor), (what, i, type(a))
            if isinstance(b, float):
                assert math.isclose(a, b, rel_tol=rtol or 1e-6, abs_tol=rtol or 1e-6) or (
                    math.isnan(a) and math.isnan(b)), (what, i, a, b)
            else:
                assert a == b, (what, i, a, b)
            continue
        assert isinstance(a, torch.Tensor), (what, i, type(a))
        assert a.device.type == "cuda", (what, i, a.device)
        assert a.dtype == b.dtype, (what, i, a.dtype, b.dtype)
        assert tuple(a.shape) == tuple(b.shape), (what, i, tuple(a.shape), tuple(b.shape))
        an, bn = npy(a), npy(b)
        if b.dtype.is_floating_point:
            r = rtol if rtol is not None else RTOL.get(b.dtype, 1e-5)
            np.testing.assert_allclose(an, bn, rtol=r, atol=r, equal_nan=True,
                                       err_msg=f"{what} #{i} {b.dtype}")
        else:
            np.testing.assert_array_equal(an, bn, err_msg=f"{what} #{i} {b.dtype}")


def run_both(fn, dtype, grad=False):
    outs = []
    ctxs = []
    for dev in ("cpu", "cuda"):
        ctx = Ctx(dev, dtype, grad)
        out = fn(ctx)
        outs.append(out)
        ctxs.append(ctx)
    return outs, ctxs


def check_values(fn, dtype, rtol=None):
    (want, got), _ = run_both(fn, dtype)
    compare(got, want, rtol)


def check_grads(fn, rtol=1e-10):
    (want, got), (cc, gc) = run_both(fn, F64, grad=True)
    compare(got, want, rtol)
    for out in (want, got):
        loss = 0
        for k, o in enumerate(flat(out)):
            if isinstance(o, torch.Tensor) and o.requires_grad:
                w = torch.from_numpy(np.linspace(0.5, 1.5, max(o.numel(), 1))[:o.numel()])
                w = w.reshape(tuple(o.shape)).to(o.device)
                loss = loss + (o * w).sum() * (k + 1)
        assert isinstance(loss, torch.Tensor), "no differentiable output"
        loss.backward()
    assert len(cc.leaves) == len(gc.leaves)
    for i, (a, b) in enumerate(zip(gc.leaves, cc.leaves)):
        if b.grad is None:
            assert a.grad is None, f"grad #{i}"
            continue
        assert a.grad is not None, f"grad #{i} missing on cuda"
        compare(a.grad, b.grad, rtol, what=f"grad #{i}")


class Case:
    def __init__(self, name, fn, dtypes=(F32, F64), grad=False, rtol=None, xfail=None):
        self.name, self.fn, self.dtypes, self.grad = name, fn, list(dtypes), grad
        self.rtol, self.xfail = rtol, xfail or {}


def params(cases):
    out = []
    for c in cases:
        for dt in c.dtypes:
            reason = c.xfail.get(dt, c.xfail.get("all"))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(c, dt, id=f"{c.name}-{str(dt).split('.')[-1]}", marks=marks))
    return out


def grad_params(cases):
    out = []
    for c in cases:
        if not c.grad:
            continue
        reason = c.xfail.get("grad")
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        out.append(pytest.param(c, id=c.name, marks=marks))
    return out


def rtol_for(case, dt):
    if case.rtol is None:
        return None
    if isinstance(case.rtol, dict):
        return case.rtol.get(dt)
    return case.rtol if dt in (F16, BF16, F32) else None


CASES = []


def case(*a, **k):
    CASES.append(Case(*a, **k))


LAYOUTS = ["c", "t", "s", "e"]


def all_layouts(op, domain=None):
    """op applied to the same values in every layout, plus 0-d and empty tensors."""
    def fn(c):
        outs = [op(c.t((3, 4), layout=lay, domain=domain)) for lay in LAYOUTS]
        outs.append(op(c.t((), domain=domain)))
        outs.append(op(c.t((0, 3), domain=domain)))
        return outs
    return fn


# ============================================================================ unary math

UNARY = {
    # name: (callable, domain, accepts ints)
    "abs": (torch.abs, None, True), "neg": (torch.neg, None, True),
    "sign": (torch.sign, None, True), "sgn": (torch.sgn, None, False),
    "exp": (torch.exp, None, True), "exp2": (torch.exp2, None, False),
    "expm1": (torch.expm1, None, False), "log": (torch.log, "pos", True),
    "log2": (torch.log2, "pos", False), "log10": (torch.log10, "pos", False),
    "log1p": (torch.log1p, "pos", False), "sqrt": (torch.sqrt, "pos", True),
    "rsqrt": (torch.rsqrt, "pos", False), "sin": (torch.sin, None, True),
    "cos": (torch.cos, None, False), "tan": (torch.tan, "unit", False),
    "asin": (torch.asin, "unit", False), "acos": (torch.acos, "unit", False),
    "atan": (torch.atan, None, False), "sinh": (torch.sinh, None, False),
    "cosh": (torch.cosh, None, False), "tanh": (torch.tanh, None, False),
    "asinh": (torch.asinh, None, False), "acosh": (torch.acosh, "ge1", False),
    "atanh": (torch.atanh, "unit", False), "sigmoid": (torch.sigmoid, None, True),
    "erf": (torch.erf, None, False), "erfc": (torch.erfc, None, False),
    "erfinv": (torch.erfinv, "unit", False), "lgamma": (torch.lgamma, "pos", False),
    "digamma": (torch.digamma, "pos", False), "floor": (torch.floor, "int", True),
    "ceil": (torch.ceil, "int", True), "round": (torch.round, "int", True),
    "trunc": (torch.trunc, "int", True), "frac": (torch.frac, None, False),
    "reciprocal": (torch.reciprocal, "pos", False), "square": (torch.square, None, True),
    "relu": (torch.relu, None, True), "isnan": (torch.isnan, None, True),
    "isinf": (torch.isinf, None, True), "isfinite": (torch.isfinite, None, True),
    "signbit": (torch.signbit, None, True), "logit": (torch.logit, "prob", False),
    "i0": (torch.i0, None, False), "sinc": (torch.sinc, None, False),
    "deg2rad": (torch.deg2rad, None, False), "rad2deg": (torch.rad2deg, None, False),
    "positive": (torch.positive, None, True), "logical_not": (torch.logical_not, None, True),
    "nan_to_num": (torch.nan_to_num, None, False),
    "round_decimals": (lambda x: torch.round(x, decimals=1), None, False),
    "gelu": (F.gelu, None, False), "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"),
                                                 None, False),
    "silu": (F.silu, None, False), "softplus": (lambda x: F.softplus(x, beta=2, threshold=1),
                                                None, False),
    "elu": (lambda x: F.elu(x, alpha=0.7), None, False), "selu": (F.selu, None, False),
    "celu": (lambda x: F.celu(x, alpha=1.5), None, False),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.2), None, False),
    "hardtanh": (lambda x: F.hardtanh(x, -0.5, 0.7), None, False),
    "hardswish": (F.hardswish, None, False), "hardsigmoid": (F.hardsigmoid, None, False),
    "mish": (F.mish, None, False), "logsigmoid": (F.logsigmoid, None, False),
    "softsign": (F.softsign, None, False), "tanhshrink": (F.tanhshrink, None, False),
    "relu6": (F.relu6, None, False), "softshrink": (lambda x: F.softshrink(x, 0.3), None, False),
    "hardshrink": (lambda x: F.hardshrink(x, 0.3), None, False),
    "threshold": (lambda x: F.threshold(x, 0.1, -2.0), None, False),
    "rrelu_eval": (lambda x: F.rrelu(x, training=False), None, False),
    "pow_scalar": (lambda x: x ** 3, None, True), "pow_frac": (lambda x: x ** 0.5, "pos", False),
    "rpow": (lambda x: 2.0 ** x, None, False), "mul_scalar": (lambda x: x * 3, None, True),
    "rsub": (lambda x: 1 - x, None, True), "div_scalar": (lambda x: x / 4, None, True),
    "clamp_scalar": (lambda x: torch.clamp(x, -0.5, 0.5), None, True),
    "clamp_min": (lambda x: x.clamp(min=0.1), None, True),
    "special_expit": (torch.special.expit, None, False),
    "special_ndtr": (torch.special.ndtr, None, False),
    "special_ndtri": (torch.special.ndtri, "prob", False),
    "special_log_ndtr": (torch.special.log_ndtr, None, False),
    "special_i0e": (torch.special.i0e, None, False),
    "special_i1": (torch.special.i1, None, False),
    "special_entr": (torch.special.entr, "pos", False),
    "special_erfcx": (torch.special.erfcx, None, False),
    "polygamma1": (lambda x: torch.polygamma(1, x), "pos", False),
    "mvlgamma": (lambda x: torch.mvlgamma(x, 2), "ge1", False),
}
NO_GRAD_UNARY = {"sign", "sgn", "floor", "ceil", "round", "trunc", "isnan", "isinf", "isfinite",
                 "signbit", "logical_not", "round_decimals", "special_i0e", "special_i1",
                 "special_erfcx", "special_ndtri", "polygamma1", "mvlgamma", "i0",
                 "special_log_ndtr"}

GRAD_XFAIL: dict = {}  # (all fixed: pow and copysign backward on CUDA)
# torch 2.15 has no float16/bfloat16 kernels for these (NotImplementedError on every device)
NO_HALF_UNARY = {"special_ndtri", "special_log_ndtr", "special_erfcx"}

for _name, (_op, _dom, _ints) in UNARY.items():
    case(f"unary_{_name}", all_layouts(_op, _dom),
         dtypes=([F32, F64] if _name in NO_HALF_UNARY else FLOATS)
         + ([I64, I32, U8] if _ints else []),
         grad=_name not in NO_GRAD_UNARY, xfail={"grad": GRAD_XFAIL.get(f"unary_{_name}")})


def _specials(op):
    def fn(c):
        a = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 0.5, -2.5, 3.5, 1e-3])
        x = torch.from_numpy(a).to(c.dtype).to(c.dev)
        return op(x)
    return fn


for _name in ["abs", "sign", "exp", "log", "sqrt", "tanh", "sigmoid", "floor", "round", "frac",
              "isnan", "isinf", "isfinite", "signbit", "nan_to_num", "reciprocal", "relu",
              "erf", "atan", "expm1", "log1p", "gelu", "silu", "softplus", "square", "trunc"]:
    case(f"special_{_name}", _specials(UNARY[_name][0]), dtypes=FLOATS)

for _name, (_op, _dom, _ints) in UNARY.items():
    if not _name.startswith(("special", "logical", "is")) and _name not in (
            "abs", "sign", "exp", "log", "sqrt", "tanh", "sigmoid", "floor", "round", "frac",
            "nan_to_num", "reciprocal", "relu", "erf", "atan", "expm1", "log1p", "gelu", "silu",
            "softplus", "square", "trunc", "signbit", "mvlgamma"):
        case(f"special_{_name}", _specials(_op), dtypes=FLOATS)

case("nan_to_num_opts", _specials(lambda x: torch.nan_to_num(x, nan=1.5, posinf=9.0,
                                                             neginf=-9.0)), dtypes=FLOATS)
case("bitwise_not", lambda c: [torch.bitwise_not(c.t((3, 4), layout=lay)) for lay in LAYOUTS],
     dtypes=[I64, I32, U8, BOOL])
case("logical_not_bool", lambda c: [c.t((3, 4), layout=lay).logical_not() for lay in LAYOUTS],
     dtypes=[BOOL])

# ============================================================================ binary ops


def binary(op, da=None, db=None, ints=True):
    def fn(c):
        outs = []
        outs.append(op(c.t((3, 4), domain=da), c.t((3, 4), domain=db)))
        outs.append(op(c.t((3, 4), layout="t", domain=da), c.t((3, 4), layout="s", domain=db)))
        outs.append(op(c.t((3, 4), layout="e", domain=da), c.t((4,), domain=db)))
        outs.append(op(c.t((2, 1, 4), domain=da), c.t((3, 1), domain=db)))
        outs.append(op(c.t((), domain=da), c.t((2, 3), domain=db)))
        outs.append(op(c.t((0, 4), domain=da), c.t((4,), domain=db)))
        return outs
    return fn


BINARY = {
    "add": (torch.add, None, None, True), "sub": (torch.sub, None, None, True),
    "mul": (torch.mul, None, None, True), "div": (torch.div, None, "pos", True),
    "add_alpha": (lambda a, b: torch.add(a, b, alpha=2), None, None, True),
    "sub_alpha": (lambda a, b: torch.sub(a, b, alpha=3), None, None, True),
    "div_floor": (lambda a, b: torch.div(a, b, rounding_mode="floor"), None, "pos", True),
    "div_trunc": (lambda a, b: torch.div(a, b, rounding_mode="trunc"), None, "pos", True),
    "floor_divide": (torch.floor_divide, None, "pos", True),
    "remainder": (torch.remainder, None, "pos", True), "fmod": (torch.fmod, None, "pos", True),
    "pow": (torch.pow, "pos", None, False), "atan2": (torch.atan2, None, None, False),
    "maximum": (torch.maximum, None, None, True), "minimum": (torch.minimum, None, None, True),
    "fmax": (torch.fmax, None, None, True), "fmin": (torch.fmin, None, None, True),
    "hypot": (torch.hypot, None, None, False), "copysign": (torch.copysign, None, None, False),
    "logaddexp": (torch.logaddexp, None, None, False),
    "logaddexp2": (torch.logaddexp2, None, None, False),
    "xlogy": (torch.xlogy, None, "pos", False),
    "eq": (torch.eq, "int", "int", True), "ne": (torch.ne, "int", "int", True),
    "lt": (torch.lt, "int", "int", True), "le": (torch.le, "int", "int", True),
    "gt": (torch.gt, "int", "int", True), "ge": (torch.ge, "int", "int", True),
    "logical_and": (torch.logical_and, "int", "int", True),
    "logical_or": (torch.logical_or, "int", "int", True),
    "logical_xor": (torch.logical_xor, "int", "int", True),
    "heaviside": (torch.heaviside, "int", None, False),
    "isclose": (lambda a, b: torch.isclose(a, b, rtol=0.1, atol=0.5), None, None, False),
    "squared_diff": (lambda a, b: (a - b) ** 2, None, None, True),
    "where_cmp": (lambda a, b: torch.where(a > b, a, b), None, None, True),
}
NO_GRAD_BINARY = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
                  "heaviside", "isclose", "div_floor", "div_trunc", "floor_divide"}

for _name, (_op, _da, _db, _ints) in BINARY.items():
    case(f"binary_{_name}", binary(_op, _da, _db),
         dtypes=FLOATS + ([I64, I32, U8] if _ints else []),
         grad=_name not in NO_GRAD_BINARY, xfail={"grad": GRAD_XFAIL.get(f"binary_{_name}")})

for _name in ["bitwise_and", "bitwise_or", "bitwise_xor"]:
    case(f"binary_{_name}", binary(getattr(torch, _name)), dtypes=[I64, I32, U8, BOOL])
case("binary_shifts", lambda c: [torch.bitwise_left_shift(c.t((3, 4), domain="pos"), 2),
                                 torch.bitwise_right_shift(c.t((3, 4), domain="pos"), 1)],
     dtypes=[I64, I32])
case("binary_logical_bool", binary(lambda a, b: [a & b, a | b, a ^ b, a == b, a < b]),
     dtypes=[BOOL])


def _nan_cmp(c):
    a = torch.from_numpy(np.array([np.nan, 1.0, np.nan, -np.inf, 2.0, 0.0])).to(c.dtype)
    b = torch.from_numpy(np.array([np.nan, np.nan, 1.0, -np.inf, np.inf, -0.0])).to(c.dtype)
    a, b = a.to(c.dev), b.to(c.dev)
    return [a == b, a != b, a < b, a <= b, a > b, a >= b, torch.maximum(a, b),
            torch.minimum(a, b), torch.fmax(a, b), torch.fmin(a, b), a.eq(1.0), a.ne(1.0),
            torch.isclose(a, b, equal_nan=True), a.clamp(-1, 1), torch.where(a > 0, a, b),
            a.max(), a.min(), a.amax(), a.sum(), torch.nansum(a), a.argmax()]


case("nan_comparisons", _nan_cmp, dtypes=FLOATS)


def _mixed_dtypes(c):
    f = c.t((3, 4), dtype=c.dtype)
    i = c.t((3, 4), dtype=I64, domain="pos")
    u = c.t((4,), dtype=U8, domain="pos")
    b = c.t((3, 4), dtype=BOOL)
    i32 = c.t((3, 4), dtype=I32, domain="pos")
    return [f + i, i * f, f / i, u + i, u * b, b + b, i / i32, i32 + u, f * b, f > i, i32 // u,
            i + 2.5, u * 300, b * 2, i32 * 2.5, torch.true_divide(i, 2), f + u]


case("mixed_promotion", _mixed_dtypes, dtypes=FLOATS)


def _clamp_tensor(c):
    x = c.t((3, 4))
    lo = c.t((3, 4)) - 0.5
    hi = c.t((4,)) + 0.5
    return [torch.clamp(x, lo, hi), torch.clamp(x, min=lo), torch.clamp(x, max=hi),
            x.clamp(lo.t().t(), None), torch.clip(c.t((3, 4), layout="t"), -0.3, 0.3),
            torch.clamp(c.t((3, 4), layout="s"), min=hi.detach())]


case("clamp_tensor_bounds", _clamp_tensor, dtypes=FLOATS, grad=True)
case("clamp_ints", lambda c: [torch.clamp(c.t((3, 4)), c.t((3, 4)) - 3, c.t((4,)) + 3),
                              c.t((3, 4)).clamp(min=2), c.t((3, 4), layout="t").clamp(max=4)],
     dtypes=INTS)


def _where(c):
    cond = c.mask((3, 4))
    x, y = c.t((3, 4)), c.t((3, 4), layout="t")
    return [torch.where(cond, x, y), torch.where(cond, x, 0.5), torch.where(cond, -1.0, y),
            torch.where(cond, c.t((4,)), c.t((3, 1))), torch.where(c.mask((4,)), x, y),
            x.where(cond, y), torch.where(cond[:, :1], x, 2)]


case("where_scalars", _where, dtypes=FLOATS, grad=True)
case("where_ints", lambda c: [torch.where(c.mask((3, 4)), c.t((3, 4)), c.t((4,))),
                              torch.where(c.mask((3, 4)), c.t((3, 4)), 1)],
     dtypes=INTS + [BOOL])
case("where_scalar_scalar", lambda c: [torch.where(c.mask((3, 4)), 1.0, 0.0),
                                       torch.where(c.mask((2,)), 3, 4)], dtypes=[F32])
case("where_single_arg", lambda c: torch.where(c.t((3, 4), domain="int") > 0), dtypes=[F32])


def _ternary(c):
    x, a, b = c.t((3, 4)), c.t((3, 4), layout="t"), c.t((4,), domain="pos")
    return [torch.lerp(x, a, 0.3), torch.lerp(x, a, c.t((3, 4), domain="prob")),
            torch.addcmul(x, a, b, value=0.5), torch.addcdiv(x, a, b, value=-2),
            torch.addcmul(c.t((3, 4), layout="s"), a, b)]


case("ternary_lerp_addcmul", _ternary, dtypes=FLOATS, grad=True)

# ============================================================================ reductions


def _red(op, shape=(3, 4, 5), layouts=("c", "t", "s"), domain=None):
    def fn(c):
        return [op(c.t(shape, layout=lay, domain=domain)) for lay in layouts]
    return fn


RED = {
    "sum_all": lambda x: x.sum(), "sum_dim": lambda x: x.sum(1),
    "sum_dims_keep": lambda x: x.sum((0, 2), keepdim=True), "sum_neg": lambda x: x.sum(-1),
    "prod_all": lambda x: x.prod(), "prod_dim": lambda x: x.prod(2, keepdim=True),
    "mean_all": lambda x: x.mean(), "mean_dims": lambda x: x.mean((0, -1)),
    "amax": lambda x: x.amax(1), "amin_keep": lambda x: x.amin((0, 2), keepdim=True),
    "amax_all": lambda x: x.amax(), "max_dim": lambda x: x.max(1),
    "min_dim_keep": lambda x: x.min(-1, keepdim=True), "max_all": lambda x: x.max(),
    "min_all": lambda x: x.min(), "argmax_dim": lambda x: x.argmax(2),
    "argmin_keep": lambda x: x.argmin(0, keepdim=True), "argmax_all": lambda x: x.argmax(),
"median_dim": lambda x: x.median(1),
    "median_all": lambda x: x.median(), "nansum": lambda x: torch.nansum(x, 1),
    "count_nonzero": lambda x: torch.count_nonzero(x, dim=1),
    "all_dim": lambda x: x.all(1), "any_dim": lambda x: x.any(-1), "all": lambda x: x.all(),
    "any_keep": lambda x: x.any(0, keepdim=True),
}
NO_GRAD_RED = {"argmax_dim", "argmin_keep", "argmax_all", "count_nonzero", "all_dim", "any_dim",
               "all", "any_keep", "median_all", "median_dim"}
RED_XFAIL: dict = {}  # (bfloat16 sums over several dims: fixed)
for _name, _op in RED.items():
    _dts = ALL if _name in ("all_dim", "any_dim", "all", "any_keep", "count_nonzero") else (
        FLOATS if _name.startswith("mean") else FLOATS + INTS)
    _dom = "int" if _name.startswith(("arg", "max", "min", "amax", "amin", "median")) else None
    case(f"red_{_name}", _red(_op, domain=_dom), dtypes=_dts, grad=_name not in NO_GRAD_RED,
         xfail=RED_XFAIL.get(_name))
case("red_aminmax", _red(lambda x: [torch.aminmax(x, dim=1), torch.aminmax(x)], domain="int"),
     dtypes=FLOATS + INTS)

case("red_float_only", _red(lambda x: [x.var(1), x.std((0, 2), keepdim=True), x.var(correction=0),
                                       x.norm(), x.norm(p=1, dim=1), torch.norm(x, 3, dim=(0, 2)),
                                       x.logsumexp(1), torch.nanmean(x, 2), x.std(unbiased=False),
                                       torch.var_mean(x, 1), torch.std_mean(x, (0, 1)),
                                       torch.linalg.vector_norm(x, ord=float("inf"), dim=1)]),
     dtypes=FLOATS, grad=True)
case("red_dtype_arg", lambda c: [c.t((3, 4)).sum(dtype=F64), c.t((3, 4)).sum(1, dtype=F32),
                                 c.t((3, 4)).prod(0, dtype=I64), c.t((3, 4)).mean(dtype=F64),
                                 torch.cumsum(c.t((3, 4)), 1, dtype=F64),
                                 c.t((3, 4), layout="t").sum(0, dtype=I64)],
     dtypes=[F32, F16, I32, U8, BOOL])
case("red_int_sum_promotes", lambda c: [c.t((3, 4)).sum(), c.t((3, 4)).sum(0), torch.sum(
    c.t((3, 4), layout="t"), 1, keepdim=True), c.t((3, 4)).prod(1), c.t((3, 4)).cumsum(0)],
    dtypes=[I32, U8, BOOL])
case("red_empty", lambda c: [c.t((0, 3)).sum(0), c.t((0, 3)).sum(), c.t((0, 3)).prod(0),
                             c.t((0, 3)).amax(1), c.t((2, 0)).sum(1, keepdim=True),
                             c.t((0, 3)).float().mean(0), c.t((0, 3)).any(0), c.t((0, 3)).all()],
     dtypes=[F32, F64, I64])
case("red_0d", lambda c: [c.t(()).sum(), c.t(()).sum(0), c.t(()).amax(0), c.t(()).argmax(),
                          c.t(()).max(0), c.t(()).mean(), c.t(()).prod(), c.t(()).cumsum(0)],
     dtypes=[F32, F64])
case("red_expanded", lambda c: [c.t((4, 5), layout="e").sum(0), c.t((4, 5), layout="e").prod(1),
                                c.t((4, 5), layout="e").amax(0), c.t((4, 5), layout="e").mean(),
                                c.t((4, 5), layout="e").argmax(1)], dtypes=FLOATS)
case("scans_misc", lambda c: [torch.cumsum(c.t((3, 4), layout="t"), 0),
                              torch.cumprod(c.t((3, 4), layout="s"), 1),
                              torch.cummax(c.t((3, 4)), 1), torch.cummin(c.t((3, 4)), 0),
                              torch.logcumsumexp(c.t((3, 4)), 1)],
     dtypes=FLOATS, grad=True, rtol={F16: 5e-3, BF16: 3e-2})
case("scans_int", lambda c: [torch.cumsum(c.t((3, 4), layout="t"), 0),
                             torch.cumprod(c.t((3, 4), layout="s"), 1),
                             torch.cummax(c.t((3, 4)), 1), torch.cummin(c.t((3, 4), layout="e"), 0),
                             torch.cumsum(c.t((3, 4)), 1, dtype=F32)], dtypes=INTS + [BOOL])
case("sort_topk_misc", lambda c: [torch.sort(c.t((3, 5), layout="t"), 0, descending=True),
                                  torch.topk(c.t((3, 5), layout="s"), 2, dim=1, largest=False),
                                  torch.kthvalue(c.t((3, 5)), 2, 1, keepdim=True),
                                  torch.argsort(c.t((3, 5)), 1),
                                  torch.msort(c.t((3, 5), layout="t"))],
     dtypes=FLOATS + INTS, grad=True)
case("unique_misc", lambda c: [torch.unique(c.t((3, 5), domain="pos")),
                               torch.unique(c.t((3, 5), domain="pos"), return_inverse=True,
                                            return_counts=True),
                               torch.unique_consecutive(c.t((6,), domain="pos")),
                               torch.bincount(c.idx((7,), 4)), torch.nonzero(c.t((3, 4)) > 0),
                               torch.argwhere(c.t((3, 4), layout="t") > 0)],
     dtypes=[I64, F32])

# ============================================================================ indexing


def _getitem(c):
    x = c.t((4, 5, 6))
    xt = c.t((4, 5, 6), layout="t")
    i = c.idx((3,), 4)
    j = c.idx((2, 3), 5)
    m = c.mask((4, 5))
    return [x[1], x[-1, 2], x[1:3], x[:, ::2], x[..., 1], x[None, 1, ..., None], x[:, -3:],
            x.flip(0), x[i], x[:, j], x[i, :, 1], x[m], xt[m], x[x > 0],
            xt[1:, ::3, 2:5], x[[0, 2]], x[[0, 2], [1, 3]], x[i, 0, 2], x[1, ..., 1::2],
            x[:, None, 2], x[torch.tensor(1).to(c.dev)], x[True], x[i[:, None], j[:1]],
            xt[:, 1:4][i], x[0][x[0] > 0.5]]


case("getitem", _getitem, dtypes=ALL, grad=True)


def _setitem(c):
    outs = []
    x = c.t((4, 5), grad=False).clone()
    x[1] = 7
    x[:, 2] = c.t((4,), grad=False)
    x[::2, 1:3] = c.t((2, 2), grad=False)
    x[-1, -1] = 3
    outs.append(x.clone())
    x[c.mask((4, 5))] = 0
    outs.append(x.clone())
    x[c.idx((3,), 4)] = c.t((5,), grad=False)
    outs.append(x.clone())
    x[c.idx((3,), 4), c.idx((3,), 5)] = 9
    outs.append(x.clone())
    y = c.t((4, 5), grad=False, layout="t").clone()
    xt = c.t((5, 4), grad=False).t()
    xt[1:3] = y[1:3]
    xt[..., 0] = 1
    outs.append(xt)
    z = c.t((3, 4), grad=False).clone()
    z[z > 0] = c.t((1,), grad=False)
    z[None] = z + 1
    outs.append(z)
    return outs


case("setitem", _setitem, dtypes=[F32, F64, F16, BF16, I64, I32, U8])


def _setitem_grad(c):
    x = c.t((4, 5)) * 1
    v = c.t((2, 5))
    x[1:3] = v
    y = c.t((3, 4)) * 1
    y[c.mask((3, 4))] = 0.0
    z = c.t((5, 3)) * 1
    z[c.idx((2,), 5)] = c.t((2, 3))
    return [x, y, z]


case("setitem_grad", _setitem_grad, dtypes=FLOATS, grad=True)


def _gather_family(c):
    x = c.t((4, 5))
    xt = c.t((4, 5), layout="t")
    return [torch.gather(x, 1, c.idx((4, 3), 5)), torch.gather(xt, 0, c.idx((2, 5), 4)),
            torch.index_select(x, 0, c.idx((6,), 4)), torch.index_select(xt, 1, c.idx((3,), 5)),
            torch.masked_select(x, c.mask((4, 5))), torch.masked_select(xt, c.mask((5,))),
            x.masked_fill(c.mask((4, 5)), 3), xt.masked_fill(c.mask((5,)), 2),
            torch.take(x, c.idx((7,), 20)), torch.take_along_dim(x, c.idx((4, 2), 5), 1),
            x.index_fill(1, c.idx((2,), 5), 0.25), torch.narrow(xt, 1, 1, 3),
            x.unfold(1, 2, 1), torch.diagonal(x, 1), torch.diag(x), torch.tril(xt, -1),
            torch.triu(x, 1)]


case("gather_select_family", _gather_family, dtypes=ALL, grad=True)


def _scatter_family(c):
    x = c.t((4, 5))
    src = c.t((4, 5))
    return [x.scatter(1, c.idx((4, 2), 5), src), x.scatter(0, c.idx((2, 5), 4), 1.5),
            x.index_add(0, c.idx((3,), 4), c.t((3, 5)), alpha=2),
            x.index_copy(0, torch.tensor([3, 0]).to(c.dev), c.t((2, 5))),
            x.masked_scatter(c.mask((4, 5)), c.t((20,))),
            torch.scatter_reduce(x, 1, c.idx((4, 3), 5), c.t((4, 3)), "amax"),
            torch.scatter_reduce(x, 0, c.idx((3, 5), 4), c.t((3, 5)), "mean",
                                 include_self=False),
            torch.index_reduce(x, 0, c.idx((3,), 4), c.t((3, 5)), "prod"),
            x.index_put((c.idx((3,), 4), c.idx((3,), 5)), c.t((3,)), accumulate=True)]


case("scatter_family", _scatter_family, dtypes=[F32, F64, F16, BF16, I64, I32], grad=True)
case("scatter_add_dups", lambda c: [
    torch.zeros(6, dtype=c.dtype, device=c.dev).scatter_add(0, c.idx((20,), 6), c.t((20,))),
    torch.zeros(3, 4, dtype=c.dtype, device=c.dev).index_add(
        1, c.idx((9,), 4), c.t((3, 9), layout="t"))], dtypes=[F32, F64, I64], grad=True)

# ============================================================================ joins & shapes


def _shapes(c):
    x = c.t((3, 4))
    xt = c.t((3, 4), layout="t")
    xs = c.t((3, 4), layout="s")
    xe = c.t((3, 4), layout="e")
    return [torch.cat([x, xt, xs], 0), torch.cat([x, xe], 1), torch.cat([x, c.t((0, 4))]),
            torch.stack([x, xt]), torch.stack([xs, xe], -1), torch.hstack([x, xt]),
            torch.vstack([x, xs]), torch.dstack([x, xe]), x.split(2, 1), xt.split([1, 2], 0),
            xs.chunk(3, 1), torch.tensor_split(x, 3, dim=1), x.flip(0, 1), xt.flip(-1),
            torch.fliplr(xs), torch.roll(x, 2, 1), torch.roll(xt, (1, -1), (0, 1)),
            torch.roll(xs, 5), x.repeat(2, 1, 3), xt.tile((2,)), xe.expand(2, 3, 4),
            x.permute(1, 0), c.t((2, 3, 4)).permute(2, 0, 1).contiguous(), xt.contiguous(),
            xt.reshape(12), xs.reshape(2, 6), xt.flatten(), x.unsqueeze(1).squeeze(),
            x.view(4, 3), xt.unbind(1), x.movedim(0, 1), torch.rot90(xt, 1, (0, 1)),
            x.repeat_interleave(2, 0), torch.broadcast_to(c.t((4,)), (2, 4)),
            torch.atleast_3d(c.t(())), torch.column_stack([x, xs]), x.T, xe.clone(),
            torch.meshgrid(c.t((3,)), c.t((2,)), indexing="ij"), torch.kron(x[:2, :2], xt[:2])]


case("joins_shapes", _shapes, dtypes=ALL, grad=True)
case("repeat_interleave_tensor", lambda c: [
    torch.repeat_interleave(c.t((4, 2)), torch.tensor([1, 0, 2, 3]).to(c.dev), 0)],
    dtypes=[F32, I64])
case("repeat_interleave_repeats_only", lambda c: torch.repeat_interleave(
    torch.tensor([2, 1, 3]).to(c.dev)), dtypes=[I64])
case("diag_of_vector", lambda c: [torch.diag(c.t((4,))), torch.diag(c.t((3,)), -1)],
     dtypes=[F32, I64])
case("diag_embed", lambda c: torch.diag_embed(c.t((2, 3))), dtypes=[F32, I64])

# ============================================================================ matmul & friends

MM_RTOL = {F16: 1e-2, BF16: 3e-2, F32: 1e-4}


def _matmul(c):
    a, b = c.t((3, 4)), c.t((4, 5), layout="t")
    v = c.t((4,))
    return [a @ b, torch.mm(c.t((3, 4), layout="s"), b), torch.matmul(a, v), v @ b,
            v @ c.t((4,)), torch.bmm(c.t((2, 3, 4)), c.t((2, 4, 5), layout="t")),
            torch.matmul(c.t((2, 1, 3, 4)), c.t((3, 4, 2))), torch.matmul(c.t((3, 4), layout="e"),
                                                                      c.t((2, 4, 5))),
            torch.einsum("ij,jk->ik", a, b), torch.einsum("bij,bkj->bik", c.t((2, 3, 4)),
                                                          c.t((2, 5, 4))),
            torch.einsum("ii->i", c.t((3, 3))), torch.einsum("i,j->ij", v, c.t((2,))),
            F.linear(a, c.t((5, 4)), c.t((5,))), F.linear(c.t((2, 3, 4), layout="t"), c.t((5, 4))),
            torch.addmm(c.t((3, 5)), a, b, beta=0.5, alpha=2), torch.outer(v, c.t((3,))),
            torch.dot(v, c.t((4,))), torch.mv(a, v), torch.baddbmm(c.t((2, 3, 5)), c.t((2, 3, 4)),
                                                               c.t((2, 4, 5))),
            torch.tensordot(c.t((2, 3, 4)), c.t((4, 3)), dims=([1, 2], [1, 0])),
            torch.matmul(c.t((0, 4)), c.t((4, 3))), torch.matmul(c.t((3, 0)), c.t((0, 2))),
            F.bilinear(c.t((2, 3)), c.t((2, 4)), c.t((5, 3, 4)), c.t((5,))),
            torch.cross(c.t((4, 3)), c.t((4, 3)), dim=1), torch.trace(c.t((3, 3)))]


case("matmul_family", _matmul, dtypes=FLOATS, grad=True, rtol=MM_RTOL)
case("einsum_ellipsis", lambda c: [torch.einsum("...ij->...j", c.t((2, 3, 4))),
                                  torch.einsum("b...,b...->b", c.t((2, 3)), c.t((2, 3)))],
     dtypes=[F32, F64])


@pytest.mark.parametrize("dtype", [I64, I32], ids=str)
def test_integer_matmul_is_cpu_only_like_pytorch(dtype):
    a = torch.ones(2, 3, dtype=dtype)
    b = torch.ones(3, 2, dtype=dtype)
    assert (a @ b).tolist() == [[3, 3], [3, 3]]
    with pytest.raises(RuntimeError, match="not implemented for"):
        a.cuda() @ b.cuda()

# ============================================================================ casts


@pytest.mark.parametrize("src", ALL, ids=str)
def test_casts_between_all_dtypes(src):
    def fn(c):
        if src.is_floating_point:
            a = np.array([0.0, -0.0, 1.5, -2.5, 3.7, -3.7, 200.4, 0.1, 1.0, 65.0, 7.0, -1.0])
        elif src == BOOL:
            a = np.array([0, 1, 1, 0, 1, 0])
        elif src == U8:
            a = np.array([0, 1, 7, 200, 255, 3])
        else:
            a = np.array([0, 1, -1, 7, 100, -100, 200, -7])
        x = torch.from_numpy(a).to(src).to(c.dev)
        outs = [x.to(d) for d in ALL]
        outs += [x[::2].to(d) for d in ALL]
        outs += [x.reshape(2, -1).t().to(d) for d in ALL]
        outs += [x.float(), x.double(), x.half(), x.bfloat16(), x.long(), x.int(), x.bool(),
                 x.byte(), x.type(torch.float64)]
        return outs
    check_values(fn, src)


def test_cast_copy_across_devices():
    x = torch.from_numpy(np.arange(12.0).reshape(3, 4)).to(F32)
    for d in ALL:
        got = x.t().to("cuda", d)
        compare(got, x.t().to(d))
        back = got[::2].cpu()
        assert back.device.type == "cpu"
        np.testing.assert_array_equal(npy(back), npy(x.t().to(d)[::2]))
        y = torch.empty((4, 3), dtype=F64, device="cuda")
        y.copy_(x.t().to(d))
        compare(y, x.t().to(d).double())


# ============================================================================ nn.functional


def _softmaxes(c):
    x = c.t((3, 4, 5))
    xt = c.t((3, 4, 5), layout="t")
    return [F.softmax(x, 1), F.softmax(xt, -1), F.log_softmax(x, 0), F.log_softmax(xt, 1),
            F.softmin(x, 2), F.softmax(c.t((3, 4), layout="s"), 0),
            F.softmax(x, 1, dtype=F64), torch.softmax(c.t(()), 0),
            F.normalize(x, dim=1), F.glu(c.t((3, 4)), -1),
            F.cosine_similarity(x, xt, dim=1), F.pairwise_distance(c.t((3, 4)), c.t((3, 4))),
            torch.cdist(c.t((3, 4)), c.t((2, 4)))]


case("softmax_family", _softmaxes, dtypes=FLOATS, grad=True, rtol={F16: 5e-3, BF16: 2e-2})


def _losses(c):
    logits = c.t((4, 5))
    tgt = c.idx((4,), 5)
    prob = c.t((4, 5), domain="prob")
    y = c.t((4, 5))
    w = c.t((5,), domain="pos", grad=False)
    return [F.cross_entropy(logits, tgt), F.cross_entropy(logits, tgt, weight=w,
                                                          reduction="sum"),
            F.cross_entropy(logits, tgt, label_smoothing=0.2, reduction="none"),
            F.cross_entropy(c.t((4, 5), layout="t"), tgt, ignore_index=2),
            F.cross_entropy(logits, F.softmax(c.t((4, 5)), 1)),
            F.nll_loss(F.log_softmax(logits, 1), tgt), F.mse_loss(logits, y),
            F.l1_loss(logits, y, reduction="sum"), F.smooth_l1_loss(logits, y, beta=0.5),
            F.huber_loss(logits, y, delta=0.7), F.binary_cross_entropy(prob, c.t(
                (4, 5), domain="prob", grad=False)),
            F.binary_cross_entropy_with_logits(logits, c.t((4, 5), domain="prob"),
                                               pos_weight=w),
            F.kl_div(F.log_softmax(logits, 1), F.softmax(y, 1), reduction="batchmean"),
            F.soft_margin_loss(logits, y.sign()), F.cosine_embedding_loss(
                logits, y, torch.tensor([1, -1, 1, -1]).to(c.dev)),
            F.margin_ranking_loss(logits[:, 0], y[:, 0], torch.tensor([1, -1, 1, 1]).to(c.dev)),
            F.poisson_nll_loss(logits, c.t((4, 5), domain="pos")),
            F.gaussian_nll_loss(logits, y, c.t((4, 5), domain="pos")),
            F.multi_margin_loss(logits, tgt), F.hinge_embedding_loss(logits, y.sign()),
            F.triplet_margin_loss(logits, y, c.t((4, 5)))]


case("losses", _losses, dtypes=FLOATS, grad=True, rtol={F16: 5e-3, BF16: 3e-2, F32: 1e-5})


def _convs(c):
    x1 = c.t((2, 3, 9))
    w1 = c.t((4, 3, 3))
    x2 = c.t((2, 2, 6, 7))
    w2 = c.t((4, 2, 3, 2))
    return [F.conv1d(x1, w1, c.t((4,)), stride=2, padding=1),
            F.conv1d(c.t((2, 3, 9), layout="s"), c.t((6, 1, 3)), groups=3, dilation=2),
            F.conv1d(x1, w1, padding="same"),
            F.conv2d(x2, w2, c.t((4,)), stride=(2, 1), padding=(1, 0), dilation=(1, 2)),
            F.conv2d(c.t((2, 2, 6, 7), layout="t"), c.t((4, 1, 3, 3)), groups=2,
                     padding="same"),
            F.conv2d(c.t((2, 6, 7)), w2),
            F.conv_transpose1d(x1, c.t((3, 2, 3)), stride=2, padding=1, output_padding=1),
            F.conv_transpose2d(x2, c.t((2, 3, 2, 2)), c.t((3,)), stride=2, dilation=1),
            F.conv2d(x2, c.t((4, 2, 1, 1)), padding=1)]


case("convolutions", _convs, dtypes=FLOATS, grad=True, rtol={F16: 1e-2, BF16: 3e-2, F32: 1e-4})


def _pools(c):
    x = c.t((2, 3, 7, 6))
    x1 = c.t((2, 3, 9))
    xt = c.t((2, 3, 7, 6), layout="t")
    return [F.max_pool1d(x1, 3, 2, 1), F.avg_pool1d(x1, 2, ceil_mode=True),
            F.max_pool2d(xt, (3, 2), stride=2, padding=1, dilation=1, ceil_mode=True),
            F.max_pool2d(x, 2, return_indices=True), F.avg_pool2d(xt, 3, 2, 1,
                                                                  count_include_pad=False),
            F.avg_pool2d(x, 2, divisor_override=3), F.adaptive_avg_pool2d(xt, (3, 4)),
            F.adaptive_max_pool2d(x, 2), F.adaptive_avg_pool1d(x1, 4),
            F.adaptive_max_pool1d(x1, 5), F.lp_pool2d(x.abs() + 0.1, 2, 2),
            F.pixel_shuffle(c.t((1, 4, 2, 3)), 2), F.pixel_unshuffle(c.t((1, 1, 4, 6)), 2),
            F.max_pool2d(c.t((3, 6, 6)), 3, 1)]


case("pools", _pools, dtypes=FLOATS, grad=True)


def _norms(c):
    x = c.t((4, 3, 5))
    w, b = c.t((3,)), c.t((3,))
    rm = c.t((3,), grad=False)
    rv = c.t((3,), domain="pos", grad=False)
    return [F.batch_norm(x, rm.clone(), rv.clone(), w, b, training=True, momentum=0.3),
            F.batch_norm(c.t((4, 3, 5), layout="t"), rm, rv, w, b, training=False),
            F.batch_norm(c.t((4, 3, 2, 2)), None, None, training=True),
            F.layer_norm(x, (5,), c.t((5,)), c.t((5,)), eps=1e-3),
            F.layer_norm(c.t((4, 3, 5), layout="s"), (3, 5)),
            F.group_norm(c.t((2, 4, 5)), 2, c.t((4,)), c.t((4,))),
            F.instance_norm(x, weight=w, bias=b), F.rms_norm(x, (5,), c.t((5,))),
            F.local_response_norm(c.t((2, 4, 5)), 3)]


case("normalizations", _norms, dtypes=FLOATS, grad=True,
     rtol={F16: 1e-2, BF16: 5e-2, F32: 1e-4})


def _bn_running(c):
    rm = c.t((3,), grad=False).clone()
    rv = c.t((3,), domain="pos", grad=False).clone()
    y = F.batch_norm(c.t((4, 3, 5), layout="t"), rm, rv, training=True, momentum=0.2)
    return [y, rm, rv]


case("batch_norm_running_stats", _bn_running, dtypes=FLOATS, rtol={F16: 1e-2, BF16: 5e-2})


def _misc_nn(c):
    emb = c.t((6, 3))
    ids = c.idx((2, 4), 6)
    x = c.t((1, 2, 3, 4))
    return [F.embedding(ids, emb), F.embedding(ids, emb, padding_idx=1),
            F.embedding_bag(c.idx((8,), 6), emb, torch.tensor([0, 3, 3]).to(c.dev), mode="mean"),
            F.dropout(c.t((3, 4)), p=0.0), F.dropout(c.t((3, 4)), 0.5, training=False),
            F.alpha_dropout(c.t((3, 4)), 0.0), F.dropout2d(x, 0.0),
            F.interpolate(x, scale_factor=2, mode="nearest"),
            F.interpolate(x, size=(5, 7), mode="bilinear", align_corners=False),
            F.interpolate(x, size=(5, 7), mode="bilinear", align_corners=True),
            F.interpolate(x, scale_factor=1.5, mode="bicubic"),
            F.interpolate(c.t((1, 2, 5)), size=8, mode="linear"),
            F.interpolate(x, size=(2, 3), mode="area"),
            F.interpolate(x, size=(6, 5), mode="nearest-exact"),
            F.pad(x, (1, 2), value=0.5), F.pad(x, (1, 2, 2, 1), mode="reflect"),
            F.pad(x, (2, 1, 1, 0), mode="replicate"), F.pad(x, (1, 1, 2, 2), mode="circular"),
            F.pad(c.t((2, 3, 4), layout="t"), (1, -1)),
            F.one_hot(ids, 6), F.unfold(x, 2), F.fold(c.t((1, 8, 6)), (3, 4), 2),
            F.grid_sample(x, c.t((1, 2, 3, 2), domain="unit"), align_corners=False),
            F.affine_grid(c.t((1, 2, 3)), (1, 1, 2, 3), align_corners=False)]


case("misc_nn", _misc_nn, dtypes=FLOATS, grad=True, rtol={F16: 5e-3, BF16: 2e-2})

# ============================================================================ in-place on views


def _inplace_views(c):
    x = c.t((3, 4), grad=False).clone()
    x[:, 1].add_(c.t((3,), grad=False))
    x[0].mul_(2)
    x.t()[1:3].sub_(1)
    x[::2, ::2].clamp_(-0.5, 0.5)
    x.diagonal().zero_()
    x[1:].neg_()
    x.narrow(1, 2, 2).abs_()
    y = c.t((4, 3), grad=False).t().clone()  # contiguous clone of a transposed view
    z = c.t((3, 4), grad=False, layout="t")
    z.mul_(3).add_(1, alpha=2)
    w = c.t((2, 3, 4), grad=False).clone()
    w.select(1, 2).fill_(5)
    w[..., 0].copy_(c.t((2, 3), grad=False))
    w.transpose(0, 2)[1].div_(2)
    w[:, :, 3].masked_fill_(c.mask((2, 3)), -1)
    w.view(6, 4)[2].exp_()
    w.unsqueeze(0)[0, 1].sigmoid_()
    return [x, y, z, w]


case("inplace_on_views", _inplace_views, dtypes=[F32, F64, F16, BF16])
case("inplace_int_views", lambda c: [c.t((3, 4)).clone()[:, 1].add_(2), (lambda t: (
    t[1:].mul_(3), t.t()[0].sub_(1), t)[-1])(c.t((3, 4)).clone())], dtypes=[I64, I32, U8])


def _inplace_grad(c):
    a = c.t((3, 4))
    x = a * 1
    x[:, 1].mul_(c.t((3,)))
    x.t()[0].add_(c.t((3,)))
    x[1:].tanh_()
    y = c.t((3, 4), layout="t").clone()
    y.sin_().mul_(2)
    y[0, 0].pow_(2)
    return [x, y]


case("inplace_autograd", _inplace_grad, dtypes=FLOATS, grad=True)


def _inplace_ops_list(c):
    outs = []
    for op in ["abs_", "neg_", "exp_", "sqrt_", "log_", "sigmoid_", "tanh_", "floor_", "ceil_",
               "round_", "trunc_", "reciprocal_", "sin_", "cos_", "relu_", "square_",
               "frac_", "rsqrt_", "erf_", "sign_"]:
        x = c.t((4, 3), domain="pos")
        getattr(x.t(), op)()  # in place through a transposed view
        outs.append(x)
    x = c.t((3, 4))
    x.add_(c.t((4,))).mul_(c.t((3, 1))).sub_(0.5).div_(c.t((4,), domain="pos"))
    x.clamp_(min=-1).pow_(2).addcmul_(c.t((3, 4)), c.t((3, 4)), value=0.1).lerp_(c.t((3, 4)), 0.3)
    x.fmod_(0.7).remainder_(0.6).copysign_(c.t((3, 4))).maximum(c.t((3, 4)))
    outs.append(x)
    return outs


case("inplace_ops_list", _inplace_ops_list, dtypes=FLOATS)

# ============================================================================ creation / misc


def _creation(c):
    d, dt = c.dev, c.dtype
    return [torch.zeros(2, 3, dtype=dt, device=d), torch.ones(3, dtype=dt, device=d),
            torch.full((2, 2), 3, dtype=dt, device=d), c.t((2,)).new_full((3,), 1),
            c.t((2,)).new_zeros(2, 2), c.t((2,)).new_ones(3), c.t((2,)).new_tensor([1, 0]),
            torch.arange(1, 7, 2, device=d).to(dt), torch.arange(4, device=d), torch.eye(3, 4, dtype=dt, device=d),
            torch.zeros_like(c.t((2, 3))), torch.ones_like(c.t((2, 3), layout="t")),
            torch.empty(0, 3, dtype=dt, device=d),
            torch.tensor([1, 2, 3], dtype=dt, device=d), torch.tril_indices(3, 3, device=d),
            torch.triu_indices(3, 4, 1, device=d), torch.tensor(5, dtype=dt, device=d)]


case("creation", _creation, dtypes=ALL)
case("full_like", lambda c: [torch.full_like(c.t((3,)), 1), torch.full_like(c.t((2, 2)), 0.5,
                                                                            dtype=F64)],
     dtypes=[F32, I64])
case("creation_float", lambda c: [
    torch.linspace(0, 1, 7, dtype=c.dtype, device=c.dev),
    torch.logspace(0, 2, 5, dtype=c.dtype, device=c.dev),
    torch.arange(0, 1, 0.25, dtype=c.dtype, device=c.dev)], dtypes=FLOATS)


def _misc_math(c):
    x = c.t((3, 4))
    return [torch.diff(x, dim=1), torch.diff(c.t((5,)), n=2), torch.cumsum(x.flip(1), 1),
            torch.trapezoid(x, dim=1), torch.histc(x, 5, -2, 2), torch.bucketize(x, c.t((3,)).sort()
                                                                                [0]),
            torch.searchsorted(c.t((2, 5)).sort(1)[0], c.t((2, 3))), torch.renorm(x, 2, 0, 1.0),
            torch.logdet(c.t((3, 3)) @ c.t((3, 3)).t() + torch.eye(3, dtype=c.dtype,
                                                                     device=c.dev)),
            torch.cov(x), torch.corrcoef(x), torch.vander(c.t((3,)), 3), torch.cummax(x, 0),
            torch.frexp(x)[0], torch.ldexp(x, c.idx((3, 4), 3)), torch.float_power(x.abs(), 2),
            torch.sgn(x), torch.logical_and(x > 0, x < 1).sum(),
            torch.std(x, 1, keepdim=True), torch.addmv(c.t((3,)), x, c.t((4,))),
            torch.clamp_max(x, 0.2), torch.clamp_min(x, -0.2), torch.sign(x) * x.abs().sqrt()]


case("misc_math", _misc_math, dtypes=[F32, F64])


def _multinomial_free(c):
    x = c.t((3, 4))
    return [x.argsort(1, descending=True), torch.sort(x.flatten(), stable=True),
            x.max(0).indices, x.t().contiguous().is_contiguous(), x.t().is_contiguous(),
            x.stride(), x.t().stride(), x[::2].stride(), x.numel(), x.dim(), x.element_size(),
            x.sum().item(), x.tolist()]


case("metadata", _multinomial_free, dtypes=[F32, F64, I64])

# ============================================================================ tests


# ============================================================================ optimisers


def _train(opt_fn, dev, steps=8):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2)).double().to(dev)
    opt = opt_fn(model.parameters())
    x = torch.from_numpy(np.random.default_rng(1).standard_normal((5, 4))).to(dev)
    y = torch.from_numpy(np.random.default_rng(2).standard_normal((5, 2))).to(dev)
    for _ in range(steps):
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
    return [p.detach() for p in model.parameters()]


OPTS = {
    "adagrad": lambda ps: torch.optim.Adagrad(ps, lr=0.1, lr_decay=0.01, weight_decay=0.1),
    "adadelta": lambda ps: torch.optim.Adadelta(ps, lr=1.0, rho=0.8),
    "adamax": lambda ps: torch.optim.Adamax(ps, lr=0.05),
    "nadam": lambda ps: torch.optim.NAdam(ps, lr=0.05),
    "radam": lambda ps: torch.optim.RAdam(ps, lr=0.05),
    "asgd": lambda ps: torch.optim.ASGD(ps, lr=0.05),
    "rprop": lambda ps: torch.optim.Rprop(ps, lr=0.05),
    "rmsprop_centered": lambda ps: torch.optim.RMSprop(ps, lr=0.01, momentum=0.5, centered=True),
    "adam_amsgrad": lambda ps: torch.optim.Adam(ps, lr=0.05, amsgrad=True, weight_decay=0.1),
    "adamw_maximize": lambda ps: torch.optim.AdamW(ps, lr=0.05, maximize=True),
    "sgd_dampening": lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, dampening=0.5),
}


@pytest.mark.parametrize("make", list(OPTS.values()), ids=list(OPTS))
def test_optimizers_match_cpu(make):
    want = _train(make, "cpu")
    got = _train(make, "cuda")
    for a, b in zip(got, want):
        compare(a, b, 1e-9)


def test_lbfgs_and_schedulers_match_cpu():
    def run(dev):
        torch.manual_seed(0)
        w = torch.from_numpy(np.array([1.5, -0.5, 2.0])).to(dev).requires_grad_(True)
        opt = torch.optim.LBFGS([w], lr=0.5, max_iter=5)
        target = torch.from_numpy(np.array([0.1, 0.2, 0.3])).to(dev)

        def closure():
            opt.zero_grad()
            loss = ((w - target) ** 4).sum()
            loss.backward()
            return loss
        for _ in range(3):
            opt.step(closure)
        v = torch.from_numpy(np.array([1.0, 2.0])).to(dev).requires_grad_(True)
        sgd = torch.optim.SGD([v], lr=0.1)
        sched = torch.optim.lr_scheduler.StepLR(sgd, 2, gamma=0.5)
        for _ in range(5):
            sgd.zero_grad()
            (v ** 2).sum().backward()
            sgd.step()
            sched.step()
        return [w.detach(), v.detach()]
    for a, b in zip(run("cuda"), run("cpu")):
        compare(a, b, 1e-9)


# ============================================================================ larger shapes
# (more elements than one block / than one warp per row, so the kernels' grid-stride loops and
# multi-block reductions run; still small enough for the emulator)


def _large_elementwise(c):
    x = c.t((130, 70), layout="t")
    y = c.t((130, 70), layout="s")
    z = c.t((130, 70), layout="e")
    return [x.exp() * 0.5 + y.sin(), torch.where(x > 0, y, z), x.sigmoid().clamp(0.2, 0.8),
            (x + z).tanh(), x.t().contiguous(), torch.maximum(x, z), x.double().sum(0)]


case("large_elementwise", _large_elementwise, dtypes=FLOATS, grad=True,
     rtol={F16: 3e-3, BF16: 1.6e-2, F32: 2e-5})


def _large_reductions(c):
    x = c.t((6, 3000))
    xt = c.t((3000, 6), layout="t")
    xs = c.t((40, 70, 5), layout="s")
    return [x.sum(1), xt.sum(1), x.amax(1), xt.argmax(1), x.mean(1), xs.sum((0, 1)),
            xs.amin(0), xs.prod(2), xt.max(0), x.var(1), xt.std(1), x.logsumexp(1),
            x.norm(dim=1), x.abs().sum(), xs.mean()]


case("large_reductions", _large_reductions, dtypes=[F32, F64], grad=True,
     rtol={F32: 1e-4})
case("large_reductions_half", lambda c: [c.t((4, 2000)).float().sum(1),
                                         c.t((4, 2000)).amax(1), c.t((2000, 4)).argmax(0),
                                         c.t((4, 2000), layout="t").amin(0)],
     dtypes=[F16, BF16])
case("large_reductions_sum_half", lambda c: [c.t((4, 300)).sum(1), c.t((300, 4), layout="t").sum(1),
                                             c.t((4, 300), layout="s").mean(1)],
     dtypes=[F16, BF16], rtol={F16: 1e-2, BF16: 3e-2})
case("large_int_reductions", lambda c: [c.t((5, 3000)).sum(1), c.t((3000, 5), layout="t").sum(1),
                                        c.t((5, 3000)).amax(1), c.t((5, 3000)).argmin(1),
                                        c.t((5, 3000)).sum(), (c.t((5, 3000)) > 3).sum(1),
                                        (c.t((5, 3000)) > 3).any(1), (c.t((5, 3000)) > 3).all()],
     dtypes=[I64, I32, U8])


def _large_softmax_norm(c):
    x = c.t((3, 2500))
    m = c.mask((3, 2500))
    return [F.softmax(x, 1), F.log_softmax(c.t((2500, 3), layout="t"), 1),
            F.softmax(x.masked_fill(m, float("-inf")), 1), F.layer_norm(x, (2500,)),
            F.cross_entropy(c.t((5, 1100)), c.idx((5,), 1100)), F.normalize(x, dim=1)]


case("large_softmax_norm", _large_softmax_norm, dtypes=[F32, F64], grad=True, rtol={F32: 1e-4})
case("large_softmax_half", lambda c: [F.softmax(c.t((3, 1500)), 1),
                                      F.log_softmax(c.t((3, 1500), layout="s"), -1)],
     dtypes=[F16, BF16])


def _large_matmul(c):
    a = c.t((70, 130), layout="t")
    b = c.t((130, 90))
    return [a @ b, torch.bmm(c.t((3, 40, 50)), c.t((3, 50, 30), layout="t")),
            torch.matmul(c.t((2, 3, 20, 40)).permute(1, 0, 2, 3), c.t((40, 10))),
            F.linear(c.t((33, 65), layout="s"), c.t((17, 65)), c.t((17,)))]


case("large_matmul", _large_matmul, dtypes=FLOATS, grad=True,
     rtol={F16: 1e-2, BF16: 3e-2, F32: 1e-4})


def _large_index(c):
    x = c.t((300, 40))
    i = c.idx((500,), 300)
    return [x[i], x.index_select(1, c.idx((90,), 40)), x[c.mask((300, 40))],
            torch.gather(x, 0, c.idx((200, 40), 300)), x.sort(0)[0], x.topk(5, 0)[0],
            x.cumsum(0), torch.zeros(300, 40, dtype=x.dtype, device=c.dev).index_add(
                0, i, c.t((500, 40))), F.embedding(c.idx((7, 60), 300), x)]


case("large_index", _large_index, dtypes=FLOATS, grad=True, rtol={F32: 1e-4, F16: 1e-2, BF16: 5e-2})

# ============================================================================ edge cases


def _edges_float(c):
    d, dt = c.dev, c.dtype

    def t(v):
        return torch.tensor(v, dtype=dt, device=d)
    a = t([[1.0, float("nan"), 3.0], [float("-inf"), 2.0, float("nan")]])
    z = t([0.0, -0.0, 1.0, -1.0])
    return [a.amax(1), a.amin(0), a.max(1), a.min(0), a.argmax(1), a.argmin(0),
            a.sum(1), a.nansum(1), a.nanmean(1), a.prod(0), a.logsumexp(1), a.cumsum(1),
            a.sort(1)[0], a.clamp(0, 2), torch.nan_to_num(a), z / 0.0, z // 0.0, z.reciprocal(),
            torch.fmod(z, 0.0), torch.remainder(z, t(2.0)), torch.atan2(z, -z), z.sign(),
            t(5.0).var(), t([2.0]).std(), t([]).sum(), t([]).mean(),
            t([]).prod(), t([1.0, 2.0]).clamp(3.0, 1.0),
            torch.remainder(t([-3.5, 3.5, -1.0]), t([2.0, -2.0, -0.75])),
            torch.fmod(t([-3.5, 3.5, -1.0]), t([2.0, -2.0, -0.75])),
            torch.floor_divide(t([-3.5, 3.5, -1.0]), t([2.0, -2.0, -0.75])),
            torch.div(t([-3.5, 3.5, -1.0]), t([2.0, -2.0, -0.75]), rounding_mode="trunc")]


case("edge_float_values", _edges_float, dtypes=FLOATS)


def _edges_int(c):
    d, dt = c.dev, c.dtype

    def t(v):
        return torch.tensor(v, dtype=dt, device=d)
    a = t([7, 3, 0, 5, 9]) if dt == U8 else t([-7, 7, -3, 3, 0])
    b = t([2, 5, 3, 1, 4]) if dt == U8 else t([2, -2, -5, 5, 3])
    return [a // b, a % b, torch.fmod(a, b), torch.remainder(a, b), a / b,
            torch.div(a, b, rounding_mode="floor"), torch.div(a, b, rounding_mode="trunc"),
            a * b, a - b, a + 250, a * 100, a.abs(), -a if dt != U8 else a, a.sign(), a ** 2,
            a.pow(t([0, 1, 2, 3, 0]).abs()), a.prod(), a.cumprod(0), a.clamp(-2, 4)
            if dt != U8 else a.clamp(2, 4), a.float() / 3, a.bitwise_and(b), a ^ b, a | b,
            a << 2 if dt != U8 else a, torch.bitwise_right_shift(a, 1), a.max(), a.argmax()]


case("edge_int_values", _edges_int, dtypes=[I64, I32, U8])


def _zero_d_promotion(c):
    d = c.dev
    f32 = c.t((3,), dtype=F32)
    i64 = c.t((3,), dtype=I64)
    s64 = torch.tensor(2.5, dtype=F64, device=d)
    si = torch.tensor(3, dtype=I64, device=d)
    h = c.t((3,), dtype=F16)
    return [f32 + s64, i64 + s64, i64 * si, h * s64, h + i64, f32 > s64, i64 + 1.5, h + 1,
            s64 * si, f32 + torch.tensor(1, dtype=I32, device=d), torch.tensor(True, device=d) + i64,
            c.t((3,), dtype=U8) + torch.tensor(-1, dtype=I64, device=d),
            c.t((3,), dtype=BOOL) + c.t((3,), dtype=BOOL), h * c.t((3,), dtype=BF16)]


case("zero_d_promotion", _zero_d_promotion, dtypes=[F32])


def _inplace_promotion(c):
    x = c.t((3, 4), dtype=F32).clone()
    x.add_(c.t((3, 4), dtype=I64))
    x.mul_(c.t((4,), dtype=BOOL))
    x.sub_(c.t((3, 1), dtype=F64))
    y = c.t((3, 4), dtype=F16).clone()
    y.add_(c.t((3, 4), dtype=F32))
    y.copy_(c.t((4, 3), dtype=I64).t())
    z = c.t((3, 4), dtype=I64).clone()
    z.add_(c.t((3, 4), dtype=I32))
    z.copy_(c.t((3, 4), dtype=F32, domain="int"))
    return [x, y, z]


case("inplace_promotion", _inplace_promotion, dtypes=[F32])


def _prod_zeros(c):
    x = c.t((3, 4)) * c.t((3, 4), dtype=BOOL, grad=False)
    return [x.prod(1), x.prod(), x.cumprod(1), c.t((4,)).prod()]


case("prod_with_zeros", _prod_zeros, dtypes=FLOATS, grad=True)


def _dup_index_grad(c):
    x = c.t((5, 3))
    i = torch.tensor([0, 2, 0, 4, 2, 2]).to(c.dev)
    return [x[i], x.index_select(0, i), torch.gather(x, 0, i[:4, None].expand(4, 3)),
            F.embedding(i, x), x[i, torch.tensor([1, 1, 0, 2, 1, 1]).to(c.dev)],
            torch.take(x, i), x.t()[:, i]]


case("duplicate_index_grads", _dup_index_grad, dtypes=ALL, grad=True)


def _view_chain_grads(c):
    x = c.t((4, 6))
    y = x.t()[1:5:2].unsqueeze(0).expand(3, 2, 4).reshape(6, 4)
    z = x.view(2, 12)[:, ::3].flip(1).roll(1, 0)
    w = x.unfold(1, 3, 2).permute(2, 0, 1).contiguous().narrow(0, 1, 2)
    v = torch.cat([x, x.flip(0)], 1).split(5, 1)
    return [y * 2, z.exp(), w.sum(0), v, x.as_strided((3, 3), (6, 2), 1)]


case("view_chain_grads", _view_chain_grads, dtypes=ALL, grad=True)


def _nn_more(c):
    x = c.t((2, 3, 8))
    return [F.pdist(c.t((4, 3))), F.max_pool1d(x, 2, return_indices=True),
            F.max_unpool1d(*F.max_pool1d(x, 2, return_indices=True), 2),
            F.lp_pool1d(x.abs() + 0.1, 2, 2), F.prelu(x, c.t((3,))), F.rrelu(x, training=False),
            F.hardtanh(x, -0.2, 0.4), F.softmax(x, 1, dtype=F64), F.log_softmax(x, 2, dtype=F64),
            F.cosine_similarity(c.t((3, 4)), c.t((4,)), dim=-1),
            F.conv1d(x, c.t((2, 3, 1)), padding=2, stride=3),
            F.conv2d(c.t((1, 2, 5, 5), layout="s"), c.t((2, 2, 3, 3)), padding=(2, 1),
                     stride=(1, 2), dilation=(2, 1)),
            F.conv_transpose2d(c.t((1, 2, 3, 3)), c.t((2, 4, 3, 3)), groups=2, stride=2,
                               padding=1, output_padding=1),
            F.avg_pool1d(x, 3, 2, 1, count_include_pad=True),
            F.adaptive_avg_pool2d(c.t((1, 2, 7, 5)), (None, 3)),
            F.interpolate(c.t((1, 2, 4, 4)), scale_factor=0.5, mode="bilinear",
                          antialias=c.dtype in (F32, F64)),
            F.interpolate(c.t((1, 1, 3, 3, 3)), size=(4, 5, 2), mode="trilinear"),
            F.channel_shuffle(c.t((1, 4, 2, 2)), 2) if hasattr(F, "channel_shuffle") else x,
            F.smooth_l1_loss(x, c.t((2, 3, 8)), reduction="none", beta=0.0),
            F.nll_loss(F.log_softmax(c.t((2, 5, 3)), 1), c.idx((2, 3), 5), reduction="none"),
            F.cross_entropy(c.t((2, 5, 3, 2), layout="t"), c.idx((2, 3, 2), 5), ignore_index=1),
            F.embedding(c.idx((5,), 6), c.t((6, 3)), max_norm=None, scale_grad_by_freq=True)]


case("nn_more", _nn_more, dtypes=FLOATS, grad=True, rtol={F16: 1e-2, BF16: 5e-2, F32: 1e-4})


def test_modules_and_state_dict_roundtrip_match_cpu():
    def run(dev):
        torch.manual_seed(0)
        m = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.GELU(),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Dropout(0.0), nn.Linear(16, 3),
                          nn.LayerNorm(3)).double().to(dev)
        x = torch.from_numpy(np.random.default_rng(3).standard_normal((5, 2, 4, 4))).to(dev)
        opt = torch.optim.Adam(m.parameters(), lr=0.01)
        for _ in range(3):
            opt.zero_grad()
            m(x).pow(2).mean().backward()
            opt.step()
        m.eval()
        out = m(x)
        sd = {k: v.cpu() for k, v in m.state_dict().items()}
        return out, sd
    got, gsd = run("cuda")
    want, wsd = run("cpu")
    compare(got, want, 1e-9)
    assert list(gsd) == list(wsd)
    for k in wsd:
        np.testing.assert_allclose(npy(gsd[k]), npy(wsd[k]), rtol=1e-9, atol=1e-9, err_msg=k)


# ============================================================================ out=, mixed devices


def _out_args(c):
    d, dt = c.dev, c.dtype
    a, b = c.t((3, 4)), c.t((3, 4), layout="t")
    o1 = torch.empty(3, 4, dtype=dt, device=d)
    torch.add(a, b, out=o1)
    o2 = torch.zeros(4, 3, dtype=dt, device=d).t()  # non-contiguous out
    torch.mul(a, b, out=o2)
    o3 = torch.empty(0, dtype=dt, device=d)  # resized
    torch.sum(a, 1, out=o3)
    o4 = torch.empty(3, 4, dtype=F64, device=d)  # wider dtype
    torch.exp(a, out=o4)
    o5 = (torch.empty(3, dtype=dt, device=d), torch.empty(3, dtype=I64, device=d))
    torch.max(a, 1, out=o5)
    o6 = torch.zeros(6, 4, dtype=dt, device=d)
    torch.cat([a, b], 0, out=o6)
    o7 = torch.empty(3, 4, dtype=BOOL, device=d)
    torch.gt(a, b, out=o7)
    o8 = torch.empty(3, 5, dtype=dt, device=d)
    torch.mm(a, c.t((4, 5)), out=o8)
    o9 = torch.empty(2, 3, 4, dtype=dt, device=d)
    torch.stack([a, b], out=o9)
    o10 = torch.empty(3, 4, dtype=dt, device=d)
    torch.where(a > 0, a, b, out=o10)
    o11 = torch.empty(3, 4, dtype=dt, device=d)
    torch.clamp(a, -0.5, 0.5, out=o11)
    # exp runs in the input's dtype and is then widened: compare o4 at that dtype's tolerance
    # (the GPU's expf and the CPU's vectorised exp may differ by an ulp), and its dtype exactly.
    return [o1, o2, o3, o4.to(dt), o4.dtype, o5, o6, o7, o8, o9, o10, o11]


case("out_arguments", _out_args, dtypes=FLOATS)


def test_cpu_index_and_scalar_tensors_into_cuda():
    rng = np.random.default_rng(0)
    a = torch.from_numpy(rng.standard_normal((4, 5)))
    g = a.cuda()
    i = torch.tensor([3, 0, 3])
    m = torch.from_numpy(rng.random((4, 5)) > 0.5)
    compare(g[i], a[i])
    compare(g[:, i], a[:, i])
    compare(g[m], a[m])
    compare(g[m[:, 0]], a[m[:, 0]])
    compare(g.index_select(0, i.cuda()), a.index_select(0, i))
    g2, a2 = g.clone(), a.clone()
    g2[i] = torch.tensor(1.5, dtype=F64)  # a CPU 0-d value (same dtype, as PyTorch needs)
    a2[i] = torch.tensor(1.5, dtype=F64)
    g2[m] = 0.25
    a2[m] = 0.25
    compare(g2, a2)
    compare(g * torch.tensor(2.0), a * torch.tensor(2.0))  # CPU 0-d operand
    compare(g.masked_fill(m.cuda(), torch.tensor(-1.0)), a.masked_fill(m, torch.tensor(-1.0)))
    compare(torch.where(g > 0, g, torch.tensor(0.0)), torch.where(a > 0, a, torch.tensor(0.0)))
    compare(g.clamp(torch.tensor(-0.5), torch.tensor(0.5)),
            a.clamp(torch.tensor(-0.5), torch.tensor(0.5)))


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_scalar_conversions_and_repr(dtype):
    a = torch.from_numpy(np.array([[1, 0, 2], [3, 1, 0]])).to(dtype)
    g = a.cuda()
    assert g.tolist() == a.tolist()
    assert g[1, 0].item() == a[1, 0].item()
    assert bool(g[0, 0]) == bool(a[0, 0]) and int(g[1, 0]) == int(a[1, 0])
    assert float(g[0, 2]) == float(a[0, 2])
    assert repr(g).replace(", device='cuda:0'", "") == repr(a)
    assert str(g[0]).replace(", device='cuda:0'", "") == str(a[0])
    with pytest.raises(TypeError):
        g.numpy()


# ============================================================================ higher-order grads


def _double_backward(dev):
    rng = np.random.default_rng(5)
    x = torch.from_numpy(rng.standard_normal((3, 4))).to(dev).requires_grad_(True)
    w = torch.from_numpy(rng.standard_normal((4, 2))).to(dev).requires_grad_(True)
    outs = []
    for f in [lambda: (x.tanh() ** 3).sum(), lambda: F.softmax(x, 1)[:, 0].pow(2).sum(),
              lambda: (x @ w).sigmoid().sum(), lambda: F.mse_loss(x @ w, x[:, :2]),
              lambda: F.log_softmax(x, 1).exp().mul(x).sum(), lambda: x.exp().prod(1).sum(),
              lambda: F.gelu(x).mul(x).sum(), lambda: (x.abs() + 1).log().norm(),
              lambda: F.layer_norm(x, (4,)).pow(2).mul(x).sum()]:
        (gx, gw) = torch.autograd.grad(f(), (x, w), create_graph=True, allow_unused=True)
        gw = gw if gw is not None else torch.zeros_like(w)
        ggx = torch.autograd.grad((gx ** 2).sum() + gw.sum() * 0 + gx.sum(), x,
                                  allow_unused=True)[0]
        outs += [gx.detach(), ggx]
    return outs


def test_double_backward_matches_cpu():
    compare(_double_backward("cuda"), _double_backward("cpu"), 1e-10)


def test_autograd_functional_matches_cpu():
    def run(dev):
        x = torch.from_numpy(np.array([0.3, -0.7, 1.1])).to(dev)

        def f(v):
            return (v.sin() * v.exp()).sum()

        def g(v):
            return torch.stack([v[0] * v[1], v[2].tanh(), v.sum() ** 2])
        return [torch.autograd.functional.jacobian(g, x),
                torch.autograd.functional.hessian(f, x),
                torch.autograd.functional.vjp(g, x, torch.ones(3, dtype=F64).to(dev))[1]]
    compare(run("cuda"), run("cpu"), 1e-10)


def test_grad_accumulation_retain_graph_and_hooks():
    def run(dev):
        x = torch.from_numpy(np.array([[0.5, -1.0], [2.0, 0.1]])).to(dev).requires_grad_(True)
        seen = []
        y = (x.t() @ x).sin()
        y.register_hook(lambda gr: seen.append(gr.clone()) or gr * 2)
        loss = y.sum()
        loss.backward(retain_graph=True)
        loss.backward()
        z = x[:, 0] * 3
        z.backward(torch.tensor([1.0, -1.0], dtype=F64).to(dev))
        return [x.grad, seen[0], seen[1]]
    compare(run("cuda"), run("cpu"), 1e-10)


# ============================================================================ memory formats, autocast


def _channels_last(c):
    x = c.t((2, 3, 5, 4)).contiguous(memory_format=torch.channels_last)
    w = c.t((4, 3, 3, 3))
    y = F.conv2d(x, w, padding=1)
    return [y, F.max_pool2d(x, 2), F.batch_norm(x, None, None, training=True),
            F.interpolate(x, scale_factor=2, mode="bilinear"), x + 1, x.sum((2, 3)),
            x.permute(0, 2, 3, 1), torch.empty_like(x).fill_(1).stride(),
            x.clone().stride(), x.is_contiguous(memory_format=torch.channels_last)]


case("channels_last", _channels_last, dtypes=FLOATS, grad=True,
     rtol={F16: 1e-2, BF16: 5e-2, F32: 1e-4})


@pytest.mark.parametrize("dtype", [F16, BF16], ids=str)
def test_autocast_cuda_matches_manual_casts(dtype):
    rng = np.random.default_rng(0)
    a = torch.from_numpy(rng.standard_normal((4, 5))).float().cuda()
    b = torch.from_numpy(rng.standard_normal((5, 3))).float().cuda()
    w = torch.from_numpy(rng.standard_normal((2, 3, 3))).float().cuda()
    with torch.autocast("cuda", dtype=dtype):
        mm = a @ b
        lin = F.linear(a, b.t())
        conv = F.conv1d(a[None, :3], w)
        sm = F.softmax(mm, 1)
        s = mm.sum()
    assert mm.dtype == dtype and lin.dtype == dtype and conv.dtype == dtype
    assert sm.dtype == F32 and mm.device.type == "cuda"
    compare(mm, (a.to(dtype) @ b.to(dtype)))
    compare(conv, F.conv1d(a[None, :3].to(dtype), w.to(dtype)), 3e-2)
    compare(sm, F.softmax(mm.float(), 1))
    assert s.device.type == "cuda"


# ============================================================================ many dims, odd strides


def _high_dim(c):
    x = c.t((2, 1, 3, 1, 2, 2, 1, 3))
    y = c.t((3, 1, 2, 1, 2, 3, 1), layout="t")
    z = c.t((2, 2, 1, 2, 2, 1, 2, 2, 1, 2)).permute(9, 3, 0, 8, 1, 7, 2, 6, 5, 4)
    return [x + y, x * y.exp(), torch.where(x > y, x, y), (x - y).sum((0, 2, 4)),
            z + 1, z.sum(), z.sum((1, 3, 5), keepdim=True), z.amax(7), z.contiguous(),
            z.transpose(0, 9)[1], z.reshape(-1, 4).t() @ z.reshape(-1, 4),
            z.softmax(2), z.argmax(5), z.to(F64 if c.dtype != F64 else F32),
            torch.cat([z, z], 6), z[:, :, None, ..., 0]]


case("flip_10d", lambda c: [c.t((2, 2, 1, 2, 2, 1, 2, 2, 1, 2)).flip(0, 4, 9),
                            c.t((2,) * 9).flip(8)], dtypes=[F32, I64], grad=True)
case("cumsum_10d_grad", lambda c: c.t((2, 2, 1, 2, 2, 1, 2, 2, 1, 2)).cumsum(3), dtypes=[F32],
     grad=True)
case("high_dim", _high_dim, dtypes=FLOATS, grad=True, rtol={F16: 5e-3, BF16: 3e-2, F32: 1e-5})
case("high_dim_int", lambda c: [c.t((2, 1, 3, 1, 2, 2, 1, 3)) + c.t((3, 1, 2, 1, 2, 3, 1),
                                                                  layout="t"),
                                c.t((2, 2, 1, 2, 2, 1, 2, 2, 1, 2)).permute(
                                    9, 3, 0, 8, 1, 7, 2, 6, 5, 4).sum((0, 9)),
                                c.t((2, 2, 2, 2, 2, 2, 2, 2, 2)).transpose(0, 8).contiguous()],
     dtypes=INTS)


def _odd_strides(c):
    base = c.t((6, 7, 5))
    a = base[1:5:2, ::3, 1::2]          # offset + steps in every dim
    b = base.as_strided((3, 4), (5, 7), 3)  # strides that are not a permutation of a layout
    d = base[:, 2]                      # a select in the middle dim
    e = base.unsqueeze(2).expand(6, 7, 3, 5)[:, 1:3, :, ::2]
    return [a * 2, a.sum(1), b + b, b.exp(), b @ b.t(), d.amax(0), d.t() @ d, e.sum(2), e.mean((0, 3)),
            e.contiguous(), torch.cat([a.reshape(-1), b.reshape(-1)]), a.to(F64).to(c.dtype),
            F.softmax(d, 0), d.cumsum(1), b.sort(1)[0], e.transpose(1, 3).reshape(-1)[:10]]


case("odd_strides", _odd_strides, dtypes=FLOATS, grad=True,
     rtol={F16: 5e-3, BF16: 3e-2, F32: 1e-5})


def test_device_copies_keep_values_and_strides():
    rng = np.random.default_rng(0)
    a = torch.from_numpy(rng.standard_normal((4, 6)))
    for dt in ALL:
        x = a.to(dt)
        for view in (lambda t: t, lambda t: t.t(), lambda t: t[::2, 1::3],
                     lambda t: t[:1].expand(3, 6), lambda t: t[1]):
            v = view(x)
            g = v.cuda()
            compare(g, v.contiguous())
            back = g.cpu()
            np.testing.assert_array_equal(npy(back), npy(v))
            # copy_ into a non-contiguous destination on the other device
            dst = torch.zeros(tuple(v.shape)[::-1], dtype=dt).t() if v.dim() == 2 else \
                torch.zeros(tuple(v.shape), dtype=dt)
            dst.copy_(g)
            np.testing.assert_array_equal(npy(dst), npy(v))
            gd = torch.zeros(tuple(v.shape)[::-1], dtype=F64, device="cuda").t() \
                if v.dim() == 2 else torch.zeros(tuple(v.shape), dtype=F64, device="cuda")
            gd.copy_(v)
            np.testing.assert_array_equal(npy(gd), npy(v.double()))
        # .cuda()/.cpu() keep dense strides (preserve_format), as .to() does
        assert x.t().cuda().stride() == x.t().stride() == x.t().cuda().cpu().stride()
        cl = x.reshape(1, 2, 3, 4).contiguous(memory_format=torch.channels_last)
        assert cl.cuda().stride() == cl.stride() == cl.cuda().cpu().stride()
        assert x.t().cuda(memory_format=torch.contiguous_format).is_contiguous()
    # the permuted copy of a tensor with size-1 dims (ambiguous strides) stays differentiable
    z = torch.zeros(2, 1, 3, 1, 2, dtype=F64, requires_grad=True)
    for move in (lambda t: t.cuda(), lambda t: t.to("cuda", F32), lambda t: t.float()):
        p = z.permute(4, 1, 2, 0, 3)
        out = move(p)
        assert out.stride() == p.stride()
        (out.double() * 2).sum().backward()
    assert z.grad.tolist() == (torch.ones(2, 1, 3, 1, 2, dtype=F64) * 6).tolist()


# ============================================================================ more indexing


def _augmented_setitem(c):
    x = c.t((4, 5), grad=False).clone()
    x[:, 1] += c.t((4,), grad=False)
    x[c.mask((4, 5))] *= 2
    x[torch.tensor([0, 2, 0]).to(c.dev)] += 1  # duplicates: the last write wins, not a sum
    x[1:3, ::2] -= x[:2, 1:4].clone()[:, ::1][:, :3]
    x[..., -1] = x[..., 0]
    x[x < 0] = x[x < 0] / 2 if c.dtype.is_floating_point else 0
    y = c.t((3, 4, 2), grad=False).clone()
    y[:, [0, 2]] = c.t((3, 2, 2), grad=False)
    y[1, :, 0] = 5
    y[[0, 1], [1, 2], [0, 1]] = c.t((2,), grad=False)
    y.index_put_((c.idx((6,), 3), c.idx((6,), 4)), c.t((6, 2), grad=False), accumulate=True)
    return [x, y]


case("augmented_setitem", _augmented_setitem, dtypes=FLOATS + [I64, I32])


def _int32_indices(c):
    x = c.t((5, 4))
    i32 = c.idx((6,), 5, I32)
    return [x[i32], x[:, i32[:3] % 4], x.index_select(0, i32), torch.index_select(x, 1,
                                                                               i32[:2] % 4),
            x.index_add(0, i32[:3], c.t((3, 4))), x.index_fill(0, i32[:2], -1)]


case("int32_indices", _int32_indices, dtypes=[F32, F64, I64], grad=True)


def _bool_ops(c):
    b = c.t((4, 5), dtype=BOOL)
    bt = c.t((5, 4), dtype=BOOL).t()
    return [b.sum(), b.sum(1), bt.sum(0, keepdim=True), b.any(), bt.all(1), b.cumsum(1), b.float().mean(0), b & bt, b | bt,
            b ^ bt, ~b, b == bt, b != bt, b < bt, b.int() - bt.int(), torch.where(b, bt, False),
            b.sort(1)[0], b.flip(0), b[b], b.to(U8) * 3, b.count_nonzero(0),
            torch.logical_and(b, c.t((5,), dtype=F32)), torch.max(b, bt), b.unique(),
            torch.stack([b, bt]).any(0), b.nonzero()]


case("bool_ops", _bool_ops, dtypes=[BOOL])
case("bool_minmax_reductions", lambda c: [c.t((4, 5)).amax(1), c.t((4, 5), layout="t").amin(0),
                                          c.t((4, 5)).max(), c.t((4, 5)).min(1)],
     dtypes=[BOOL])


def _minmax_forms(c):
    a, b = c.t((3, 4), domain="int"), c.t((3, 4), layout="t", domain="int")
    r = torch.max(a, 1)
    q = torch.min(b, dim=0, keepdim=True)
    return [torch.max(a, b), torch.min(a, b), r.values, r.indices, q.values, q.indices,
            torch.max(a), a.max(dim=-1)[1], torch.sort(a, 1, stable=True).indices,
            torch.topk(b, 2, 0, sorted=True).indices]


case("minmax_forms", _minmax_forms, dtypes=FLOATS + INTS, grad=True)


def test_errors_match_cpu():
    """Ops that PyTorch rejects must raise on the GPU too (and not crash or return garbage)."""
    a = torch.arange(6.0).reshape(2, 3)
    g = a.cuda()
    for f in [lambda t: t.long().mean(), lambda t: t.long().var(), lambda t: t[torch.tensor([5])],
              lambda t: t.gather(1, torch.tensor([[3]]).to(t.device)),
              lambda t: t.view(4, 2), lambda t: t.t().view(6), lambda t: t @ t,
              lambda t: t.argmax(0)[torch.tensor([], dtype=I64).to(t.device)].max(),
              lambda t: torch.cat([t, t.long()[:, :2]], 0), lambda t: t.expand(3, 2),
              lambda t: t.reshape(7), lambda t: t.index_select(0, torch.tensor([2]).to(t.device)),
              lambda t: t.long().pow(-1), lambda t: t.softmax(2),
              lambda t: t.masked_fill(torch.ones(3, 2, dtype=BOOL).to(t.device), 0)]:
        errors = []
        for x in (a, g):
            try:
                f(x)
            except (RuntimeError, IndexError, ValueError, TypeError) as e:
                errors.append(type(e))
            else:
                errors.append(None)
        assert errors[0] is not None and errors[1] is not None, errors


# ============================================================================ linalg (non-contiguous, f32)


def _linalg(c):
    la = torch.linalg
    a = c.t((2, 4, 4), layout="t")
    eye = torch.eye(4, dtype=c.dtype, device=c.dev)
    spd = a @ a.transpose(-1, -2) + eye
    b = c.t((2, 4, 3), layout="s")
    low = torch.tril(c.t((4, 4))) + 3 * eye
    lu, piv = la.lu_factor(spd)
    return [la.inv(spd), la.det(a), la.slogdet(a), la.solve(spd, b), la.cholesky(spd),
            la.matrix_power(a, 3), la.matrix_power(spd, -1), la.matrix_norm(a),
            la.matrix_norm(a, "nuc"), la.matrix_norm(a, 1), la.norm(a, dim=(-2, -1)),
            la.multi_dot([a[0], b[0], c.t((3, 2))]), la.solve_triangular(low, b[0], upper=False),
            la.lu_solve(lu, piv, b), la.matrix_exp(a * 0.3), la.eigvalsh(spd), la.svdvals(a),
            la.vector_norm(b, 3, dim=1), la.vecdot(b, b), torch.inverse(spd), torch.det(spd),
            torch.cholesky_solve(b, la.cholesky(spd)), la.cond(spd), torch.trace(a[0]),
            la.diagonal(a), la.tensorsolve(spd[0], b[0, :, 0])]


case("linalg", _linalg, dtypes=[F32, F64], grad=True, rtol={F32: 2e-4})


# ============================================================================ raise parity sweep


def attempt(f, *args):
    """f(*args), or "raised" when it raises (both devices must agree)."""
    try:
        return f(*args)
    except (RuntimeError, TypeError, ValueError, IndexError):
        return "raised"


def _unary_any_dtype(c):
    x = c.t((3, 4), layout="t", domain="pos")
    return [attempt(op, x) for op, _, _ in UNARY.values()]


case("unary_all_ops_any_dtype", _unary_any_dtype, dtypes=[I64, I32, U8, BOOL])
case("sign_of_bool", lambda c: [torch.sign(c.t((3, 4))), torch.sgn(c.t((3, 4), layout="t"))],
     dtypes=[BOOL])
case("square_of_bool", lambda c: torch.square(c.t((3, 4))), dtypes=[BOOL])


def _binary_any_dtype(c):
    x = c.t((3, 4), layout="t", domain="pos")
    y = c.t((4,), domain="pos")
    outs = [attempt(op, x, y) for op, _, _, _ in BINARY.values()]
    outs += [attempt(op, x, 2) for op, _, _, _ in BINARY.values()]
    outs += [attempt(op, x, 1.5) for op, _, _, _ in BINARY.values()]
    return outs


case("binary_all_ops_any_dtype_and_scalars", _binary_any_dtype, dtypes=ALL)


def _binary_mixed_pairs(c):
    outs = []
    for other in ALL:
        x = c.t((3, 4), domain="pos")
        y = c.t((3, 4), dtype=other, layout="t", domain="pos")
        for op in (torch.add, torch.mul, torch.sub, torch.div, torch.maximum, torch.eq,
                   torch.lt, torch.fmod, torch.remainder, torch.floor_divide, torch.atan2, torch.logical_xor,
                   torch.bitwise_and):
            if other == BOOL and op in (torch.fmod, torch.remainder, torch.floor_divide) and \
                    not c.dtype.is_floating_point:
                continue  # integer division by zero: an error on the CPU, undefined on CUDA
            outs.append(attempt(op, x, y))
    return outs


case("binary_all_dtype_pairs", _binary_mixed_pairs, dtypes=ALL)


METHODS = [("sum", ()), ("sum", (1,)), ("prod", (0,)), ("mean", ()), ("amax", (1,)),
           ("amin", ()), ("argmax", (1,)), ("argmin", ()), ("cumsum", (1,)), ("cumprod", (0,)),
           ("sort", (1,)), ("topk", (2,)), ("kthvalue", (2, 1)), ("median", (1,)),
           ("median", ()), ("mode", (1,)), ("var", (1,)), ("std", ()), ("norm", ()),
           ("logsumexp", (1,)), ("all", (1,)), ("any", ()), ("max", (1,)), ("min", ()),
           ("nansum", ()), ("nanmean", ()), ("count_nonzero", ()), ("unique", ()),
           ("flip", (0,)), ("roll", (1, 1)), ("cummax", (1,)), ("cummin", (0,)), ("msort", ()),
           ("argsort", (1,)), ("nonzero", ()), ("clamp", (1, 3)), ("tril", ()), ("triu", (1,)),
           ("diff", ()), ("trace", ()), ("diagonal", ()), ("repeat", (2, 1)), ("abs", ()),
           ("neg", ()), ("reciprocal", ()), ("exp", ()), ("sqrt", ()), ("sigmoid", ()),
           ("nan_to_num", ()), ("isnan", ()), ("isinf", ()), ("round", ()), ("frac", ()),
           ("logical_not", ()), ("bitwise_not", ()), ("float", ()), ("half", ()), ("bool", ()),
           ("long", ()), ("byte", ()), ("contiguous", ()), ("clone", ()), ("t", ()),
           ("softmax", (1,)), ("log_softmax", (0,)), ("aminmax", ()), ("nanmedian", ()),
           ("logcumsumexp", (1,)), ("histc", (4,)), ("renorm", (2, 0, 1.0)),
           ("square", ()), ("rsqrt", ()), ("lerp", (None, 0.5)), ("fmod", (2,)),
           ("remainder", (3,)), ("pow", (2,)), ("pow", (0.5,)), ("mul", (True,)),
           ("div", (2,)), ("floor_divide", (2,)), ("true_divide", (4,)), ("__rpow__", (2,)),
           ("__rsub__", (1,)), ("__rtruediv__", (1,)), ("__lshift__", (1,)),
           ("__and__", (True,)), ("__or__", (1,)), ("__xor__", (3,)), ("__invert__", ()),
           ("__mod__", (-3,)), ("__floordiv__", (-2,))]
PARITY_SKIP = {"aminmax", "logcumsumexp", "mode", "histc"}  # CPU-only on purpose / elsewhere


def _methods_any_dtype(c, shape=(3, 4), layout="t"):
    x = c.t(shape, layout=layout, domain="pos")
    outs = []
    for name, args in METHODS:
        if name in PARITY_SKIP:
            continue
        args = tuple(x if a is None else a for a in args)
        outs.append(attempt(lambda n=name, a=args: getattr(x, n)(*a)))
    return outs


case("methods_any_dtype", _methods_any_dtype, dtypes=ALL)
for _shape, _lay in [((3, 4), "e"), ((4, 3), "s"), ((), "c"), ((0, 4), "c"), ((1, 1), "c"),
                     ((2, 3, 2), "t")]:
    case(f"methods_any_dtype_{'x'.join(map(str, _shape)) or '0d'}_{_lay}",
         lambda c, sh=_shape, la=_lay: _methods_any_dtype(c, sh, la), dtypes=ALL)


# ============================================================================ more nn


def _nn_extra(c):
    emb = c.t((7, 3))
    x = c.t((1, 2, 5, 6))
    return [F.embedding_bag(c.idx((9,), 7), emb, torch.tensor([0, 2, 5]).to(c.dev), mode="sum",
                            per_sample_weights=c.t((9,))),
            F.embedding_bag(c.idx((3, 4), 7), emb, mode="max"),
            F.interpolate(x, scale_factor=1.7, mode="nearest"),
            F.interpolate(x, size=(3, 9), mode="bicubic", align_corners=True),
            F.interpolate(c.t((1, 2, 3, 4, 3)), scale_factor=2, mode="nearest"),
            F.pad(c.t((2, 3, 6)), (2, 3), mode="reflect"),
            F.pad(c.t((1, 2, 3, 4, 4)), (1, 1, 2, 0, 1, 1), mode="replicate"),
            F.pad(c.t((1, 2, 3, 4, 4)), (1, 2, 1, 0, 2, 1), mode="reflect"),
            F.pad(c.t((2, 5)), (3, 1), mode="circular"),
            F.unfold(x, (2, 3), dilation=(2, 1), padding=1, stride=(1, 2)),
            F.multilabel_soft_margin_loss(c.t((3, 4)), c.mask((3, 4)).to(c.dtype)),
            F.multilabel_margin_loss(c.t((2, 4)), torch.tensor([[3, 0, -1, 1], [1, 2, 3, -1]])
                                     .to(c.dev)),
            F.ctc_loss(F.log_softmax(c.t((6, 2, 4)), 2), torch.tensor([[1, 2, 2], [3, 1, 0]])
                       .to(c.dev), torch.tensor([6, 5]).to(c.dev), torch.tensor([3, 2])
                       .to(c.dev)),
            F.max_pool2d(x, 3, stride=1, dilation=2, padding=1),
            F.avg_pool3d(c.t((1, 2, 4, 4, 4)), 2),
            F.max_pool3d(c.t((1, 1, 4, 5, 4), layout="t"), (2, 3, 2), stride=1),
            F.adaptive_max_pool3d(c.t((1, 2, 4, 5, 3)), (2, 2, 2)),
            F.conv3d(c.t((1, 2, 4, 4, 3)), c.t((3, 2, 2, 2, 2)), padding=(1, 0, 1)),
            F.pixel_shuffle(c.t((2, 9, 2, 2), layout="s"), 3), F.logsigmoid(x),
            F.softplus(x, beta=0.5, threshold=2), F.glu(x, 1), F.silu(x), F.mish(x)]


case("nn_extra", _nn_extra, dtypes=FLOATS, grad=True, rtol={F16: 1e-2, BF16: 5e-2, F32: 1e-4})


@pytest.mark.parametrize("make", [OPTS["adam_amsgrad"], OPTS["sgd_dampening"], OPTS["nadam"],
                                  OPTS["rmsprop_centered"], OPTS["adagrad"]],
                         ids=["adam_amsgrad", "sgd_dampening", "nadam", "rmsprop_centered",
                              "adagrad"])
def test_optimizers_float32_param_groups_match_cpu(make):
    def run(dev):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 2)).to(dev)
        opt = make([{"params": model[0].parameters()},
                    {"params": model[2].parameters(), "lr": 0.01, "weight_decay": 0.05}])
        x = torch.from_numpy(np.random.default_rng(1).standard_normal((5, 4))).float().to(dev)
        for _ in range(6):
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            opt.step()
        return [p.detach() for p in model.parameters()] + [
            v for st in opt.state.values() for v in st.values()
            if isinstance(v, torch.Tensor) and v.dim() > 0]
    got, want = run("cuda"), run("cpu")
    assert len(got) == len(want)
    for a, b in zip(got, want):
        compare(a, b, 2e-5)


# ============================================================================ the case tests
# (last, so that every case() above is collected)


@pytest.mark.parametrize("case,dtype", params(CASES))
def test_values(case, dtype):
    check_values(case.fn, dtype, rtol_for(case, dtype))


@pytest.mark.parametrize("case", grad_params(CASES))
def test_grads(case):
    check_grads(case.fn)
