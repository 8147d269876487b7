"""``ferrotorch.testing``: ``assert_close`` and ``make_tensor``, as ``torch.testing``.

>>> import ferrotorch as torch
>>> torch.testing.assert_close(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0 + 1e-7]))
"""

import builtins
import collections.abc
import dataclasses
import math
import warnings

import numpy as np

from ferrotorch import _C
from ferrotorch._compare import finfo, iinfo

__all__ = ["assert_close", "make_tensor", "assert_allclose"]

Tensor = _C.Tensor

# PyTorch's default (rtol, atol) per dtype; integer and bool comparisons are exact.
_DEFAULT_TOLERANCES = {
    _C.float16: (1e-3, 1e-5),
    _C.bfloat16: (1.6e-2, 1e-5),
    _C.float32: (1.3e-6, 1e-5),
    _C.float64: (1e-7, 1e-7),
}


# PyTorch's tolerances for the deprecated ``assert_allclose`` (other dtypes compare exactly).
_ALLCLOSE_TOLERANCES = {
    _C.float16: (1e-3, 1e-3),
    _C.float32: (1e-4, 1e-5),
    _C.float64: (1e-5, 1e-8),
}


class _ErrorMeta(Exception):
    """A failed comparison: the exception type to raise, its message and the path (``id``) of
    the failing item inside nested sequences / mappings, as torch.testing's ErrorMeta."""

    def __init__(self, type, msg, id=()):
        super().__init__(msg)
        self.type, self.msg, self.id = type, msg, id

    def to_error(self, msg=None):
        if not isinstance(msg, str):
            generated = self.msg
            if self.id:
                where = "".join(str([item]) for item in self.id)
                generated += f"\n\nThe failure occurred for item {where}"
            msg = msg(generated) if callable(msg) else generated
        return self.type(msg)


class _Unsupported(Exception):
    """This kind of pair cannot compare the inputs: try the next one."""


def _default_tolerances(*dtypes, table=None):
    table = _DEFAULT_TOLERANCES if table is None else table
    rtols, atols = zip(*(table.get(d, (0.0, 0.0)) for d in dtypes))
    return builtins.max(rtols), builtins.max(atols)


def _get_tolerances(*dtypes, rtol, atol, id):
    if (rtol is None) != (atol is None):
        raise _ErrorMeta(ValueError, "Both 'rtol' and 'atol' must be either specified or "
                         f"omitted, but got no {'rtol' if rtol is None else 'atol'}.", id)
    if rtol is not None:
        return rtol, atol
    return _default_tolerances(*dtypes)


def _mismatch_msg(identifier, extra, abs_diff, abs_idx, atol, rel_diff, rel_idx, rtol):
    """PyTorch's mismatch report; the tolerances are left out of an exact comparison."""
    equality = rtol == 0 and atol == 0

    def line(kind, diff, idx, tol):
        text = (f"{kind.title()} difference: {diff}" if idx is None
                else f"Greatest {kind} difference: {diff} at index {idx}")
        return text + ("" if equality else f" (up to {tol} allowed)") + "\n"

    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += f"{extra.strip()}\n"
    msg += line("absolute", abs_diff, abs_idx, atol)
    msg += line("relative", rel_diff, rel_idx, rtol)
    return msg.strip()


def _scalar_mismatch_msg(actual, expected, rtol, atol):
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg("Scalars", f"Expected {expected} but got {actual}.", abs_diff, None,
                         atol, rel_diff, None, rtol)


def _unravel(flat_index, shape):
    return tuple(builtins.int(i) for i in np.unravel_index(flat_index, tuple(shape)))


def _greatest(diff):
    """Value and flat index of the greatest element, NaN counting as the greatest (as
    ``torch.max``)."""
    nan = np.isnan(diff)
    i = builtins.int(nan.argmax()) if nan.any() else builtins.int(diff.argmax())
    return diff[i].item(), i


def _tensor_mismatch_msg(actual, expected, matches, rtol, atol):
    """PyTorch's report for tensors: the differences are computed in the tensors' dtype
    (integers and bools as int64, their relative difference in float32)."""
    ok = matches.numpy().reshape(-1)
    total = ok.size
    bad = total - builtins.int(ok.sum())
    extra = f"Mismatched elements: {bad} / {total} ({bad / total:.1%})"
    if actual.dtype.is_floating_point:
        # The differences in the tensors' own dtype (float16 / bfloat16 rounding included).
        a, e = actual.reshape(-1), expected.reshape(-1)
        abs_t = (a - e).abs()
        rel_t = abs_t / e.abs()
        if abs_t.dtype in (_C.float16, _C.bfloat16):
            abs_t, rel_t = abs_t.float(), rel_t.float()
        abs_diff, rel_diff = abs_t.numpy().copy(), rel_t.numpy().copy()
    else:
        a = actual.reshape(-1).numpy().astype(np.int64)
        e = expected.reshape(-1).numpy().astype(np.int64)
        abs_diff = np.abs(a - e)
        with np.errstate(divide="ignore", invalid="ignore"):
            rel_diff = abs_diff.astype(np.float32) / np.abs(e).astype(np.float32)
    abs_diff[ok] = 0
    rel_diff[ok] = 0
    max_abs, ia = _greatest(abs_diff)
    max_rel, ir = _greatest(rel_diff)
    return _mismatch_msg("Tensor-likes", extra, max_abs, _unravel(ia, actual.shape), atol,
                         max_rel, _unravel(ir, actual.shape), rtol)


# ------------------------------------------------------------------ the pairs of torch.testing

def _none_pair(actual, expected, id, opts):
    if not (actual is None or expected is None):
        raise _Unsupported
    if not (actual is None and expected is None):
        raise _ErrorMeta(AssertionError, f"None mismatch: {actual} is not {expected}", id)


def _boolean_pair(actual, expected, id, opts):
    if not all(isinstance(x, (bool, np.bool_)) for x in (actual, expected)):
        raise _Unsupported
    actual, expected = builtins.bool(actual), builtins.bool(expected)
    if actual is not expected:
        raise _ErrorMeta(AssertionError, f"Booleans mismatch: {actual} is not {expected}", id)


_NUMBER_DTYPES = {int: _C.int64, float: _C.float64}


def _number_pair(actual, expected, id, opts):
    if not all(isinstance(x, (int, float, np.number)) for x in (actual, expected)):
        raise _Unsupported
    actual, expected = (x.item() if isinstance(x, np.number) else x
                        for x in (actual, expected))
    rtol, atol = _get_tolerances(*(_NUMBER_DTYPES.get(type(x), _C.int64)
                                   for x in (actual, expected)),
                                 rtol=opts["rtol"], atol=opts["atol"], id=id)
    if opts["check_dtype"] and type(actual) is not type(expected):
        raise _ErrorMeta(AssertionError, f"The (d)types do not match: {type(actual)} != "
                         f"{type(expected)}.", id)
    if actual == expected:
        return
    if opts["equal_nan"] and math.isnan(actual) and math.isnan(expected):
        return
    abs_diff = abs(actual - expected)
    if math.isfinite(abs_diff) and abs_diff <= atol + rtol * abs(expected):
        return
    raise _ErrorMeta(AssertionError, _scalar_mismatch_msg(actual, expected, rtol, atol), id)


def _to_tensor(x):
    if isinstance(x, Tensor):
        return x
    try:
        if isinstance(x, (np.ndarray, np.generic)):
            x = np.asarray(x)  # (not ascontiguousarray: it makes 0-d arrays 1-d)
            return _C.from_numpy(x if x.flags.c_contiguous else x.copy())
        return _C.as_tensor(x)
    except Exception:
        raise _Unsupported from None


def _tensor_pair(actual, expected, id, opts):
    if not (isinstance(actual, type(expected)) or isinstance(expected, type(actual))):
        raise _Unsupported
    if not opts["allow_subclasses"] and type(actual) is not type(expected):
        raise _Unsupported
    actual, expected = _to_tensor(actual), _to_tensor(expected)
    rtol, atol = _get_tolerances(actual.dtype, expected.dtype, rtol=opts["rtol"],
                                 atol=opts["atol"], id=id)

    def mismatch(name, a, e):
        raise _ErrorMeta(AssertionError,
                         f"The values for attribute '{name}' do not match: {a} != {e}.", id)

    if actual.shape != expected.shape:
        mismatch("shape", actual.shape, expected.shape)
    if opts["check_stride"] and actual.stride() != expected.stride():
        mismatch("stride()", actual.stride(), expected.stride())
    if opts["check_device"] and actual.device != expected.device:
        mismatch("device", actual.device, expected.device)
    if opts["check_dtype"] and actual.dtype != expected.dtype:
        mismatch("dtype", actual.dtype, expected.dtype)
    if actual.device.type == "meta" or expected.device.type == "meta":
        return
    # Compare on one device in one (promoted) dtype.
    actual, expected = actual.detach().cpu(), expected.detach().cpu()
    if actual.dtype != expected.dtype:
        dtype = _C.promote_types(actual.dtype, expected.dtype)
        actual, expected = actual.to(dtype), expected.to(dtype)
    from ferrotorch._compare import isclose

    matches = isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=opts["equal_nan"])
    if builtins.bool(matches.all()):
        return
    if actual.ndim == 0:
        msg = _scalar_mismatch_msg(actual.item(), expected.item(), rtol, atol)
    else:
        msg = _tensor_mismatch_msg(actual, expected, matches, rtol, atol)
    raise _ErrorMeta(AssertionError, msg, id)


_PAIRS = (_none_pair, _boolean_pair, _number_pair, _tensor_pair)


def _originate(actual, expected, id, opts):
    """The comparisons of (nested) ``actual`` and ``expected``, as closures, in torch.testing's
    order; structural mismatches raise at once."""
    seq = collections.abc.Sequence
    if (isinstance(actual, seq) and not isinstance(actual, str)
            and isinstance(expected, seq) and not isinstance(expected, str)):
        if len(actual) != len(expected):
            raise _ErrorMeta(AssertionError, f"The length of the sequences mismatch: "
                             f"{len(actual)} != {len(expected)}", id)
        pairs = []
        for i in range(len(actual)):
            pairs += _originate(actual[i], expected[i], (*id, i), opts)
        return pairs
    if isinstance(actual, collections.abc.Mapping) and isinstance(
            expected, collections.abc.Mapping):
        akeys, ekeys = set(actual.keys()), set(expected.keys())
        if akeys != ekeys:
            raise _ErrorMeta(AssertionError, "The keys of the mappings do not match:\n"
                             f"Missing keys in the actual mapping: {sorted(ekeys - akeys)}\n"
                             f"Additional keys in the actual mapping: {sorted(akeys - ekeys)}",
                             id)
        try:
            keys = sorted(akeys)
        except Exception:
            keys = list(akeys)
        pairs = []
        for k in keys:
            pairs += _originate(actual[k], expected[k], (*id, k), opts)
        return pairs
    if (not isinstance(actual, (type, Tensor, np.ndarray, np.generic))
            and dataclasses.is_dataclass(actual) and type(actual) is type(expected)):
        return _originate_dataclass(actual, expected, id, opts)
    for pair in _PAIRS:
        try:
            pair_check = _checked(pair, actual, expected, id, opts)
        except _Unsupported:
            continue
        return [pair_check]
    raise _ErrorMeta(TypeError, f"No comparison pair was able to handle inputs of type "
                     f"{type(actual)} and {type(expected)}.", id)


def _checked(pair, actual, expected, id, opts):
    """Run ``pair`` up to the point where it accepts or refuses the inputs; the comparison
    itself runs later (in order), as torch.testing's pairs do."""
    try:
        pair(actual, expected, id, opts)
    except _ErrorMeta as error:
        if error.type is ValueError:  # a bad option: raised at origination, as PyTorch
            raise
        return error
    return None


def _originate_dataclass(actual, expected, id, opts):
    # A dataclass compares with its own ``==`` when that gives a bool, else field by field.
    try:
        equal = actual == expected
    except RuntimeError as error:
        if "Boolean value of Tensor" not in str(error):
            raise
    else:
        if type(equal) is bool:
            return [None if equal else
                    _ErrorMeta(AssertionError, f"{actual} != {expected}", id)]
    pairs = []
    for field in dataclasses.fields(actual):
        if field.compare:
            pairs += _originate(getattr(actual, field.name), getattr(expected, field.name),
                                (*id, field.name), opts)
    return pairs


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, msg=None):
    """Assert that ``actual`` and ``expected`` are close: ``|actual - expected| <= atol + rtol
    * |expected|`` elementwise, with PyTorch's per-dtype default tolerances, after checking
    shape, device and dtype. Tensors, NumPy arrays, Python numbers and (nested) sequences and
    mappings of them are accepted. ``msg`` (a string, or a callable taking the generated
    message) replaces the message."""
    __tracebackhide__ = True
    opts = dict(rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=check_device,
                check_dtype=check_dtype, check_stride=check_stride,
                allow_subclasses=allow_subclasses)
    try:
        results = _originate(actual, expected, (), opts)
    except _ErrorMeta as error:  # structural mismatches ignore ``msg``, as in PyTorch
        raise error.to_error() from None
    for error in results:
        if error is not None:
            raise error.to_error(msg) from None


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """Deprecated ``torch.testing.assert_allclose``: ``assert_close`` without the dtype check,
    NaNs equal by default, with its own (looser) default tolerances."""
    warnings.warn(
        "`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed in a "
        "future release. Please use `torch.testing.assert_close()` instead. You can find "
        "detailed upgrade instructions in https://github.com/pytorch/pytorch/issues/61844.",
        FutureWarning, stacklevel=2)
    if not isinstance(actual, Tensor):
        actual = _C.tensor(actual)
    if not isinstance(expected, Tensor):
        expected = _C.tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        rtol, atol = _default_tolerances(actual.dtype, expected.dtype,
                                         table=_ALLCLOSE_TOLERANCES)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan,
                 check_device=True, check_dtype=False, check_stride=False, msg=msg or None)


def _make_tensor_range(low, high, dtype, lowest, highest, default_low, default_high):
    """PyTorch's checks and clamping of ``low`` / ``high`` (integers round up)."""
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and dtype.is_floating_point:
        warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or "
                      "complex types is deprecated since 2.1 and will be removed in 2.3. Use "
                      "`torch.full(...)` instead.", FutureWarning, stacklevel=3)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), "
                         f"but {dtype} only supports [{lowest}, {highest})")
    low = builtins.min(builtins.max(low, lowest), highest)
    high = builtins.min(builtins.max(high, lowest), highest)
    if not dtype.is_floating_point:
        return math.ceil(low), math.ceil(high)
    return low, high


def make_tensor(*shape, dtype, device=None, low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False, memory_format=None):
    """A tensor of ``shape`` filled with uniform random values in ``[low, high)`` (PyTorch's
    defaults: [-9, 9) for floats, [-9, 10) for integers clamped to the dtype's range, random
    bools), drawn from ferrotorch's seeded generator; ``low`` / ``high`` are clamped to the
    dtype's finite range. (``device`` may be omitted: the default device.)"""
    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually "
                         f"exclusive, but got noncontiguous={noncontiguous} and "
                         f"memory_format={memory_format}")
    integral = not dtype.is_floating_point
    if requires_grad and integral:
        raise ValueError("`requires_grad=True` is not supported for boolean and integral "
                         f"dtypes, but got dtype={dtype}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])
    if dtype == _C.bool:
        low, high = _make_tensor_range(low, high, dtype, 0, 2, 0, 2)
        result = _C.randint(low, high, shape, dtype=dtype, device=device)
    elif integral:
        info = iinfo(dtype)
        # randint cannot draw int64's maximum (its bounds are int64): PyTorch's limit too.
        highest = info.max + (1 if dtype != _C.int64 else 0)
        low, high = _make_tensor_range(low, high, dtype, info.min, highest, -9, 10)
        result = _C.randint(low, high, shape, dtype=dtype, device=device)
    else:
        info = finfo(dtype)
        low, high = _make_tensor_range(low, high, dtype, info.min, info.max, -9, 9)
        result = _C.empty(shape, dtype=dtype, device=device)
        if high - low >= info.max:  # uniform_ needs high - low to be finite
            result.uniform_(low / 2, high / 2).mul_(2)
        else:
            result.uniform_(low, high)
    if noncontiguous:
        result = result[..., 1::2]  # (offset by 1, as PyTorch, to catch offset bugs too)
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if integral else finfo(dtype).tiny
    if not integral:
        result.requires_grad_(requires_grad)
    return result
