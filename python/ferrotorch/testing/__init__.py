"""``ferrotorch.testing``: ``assert_close`` and ``make_tensor``, as ``torch.testing``.

>>> import ferrotorch as torch
>>> torch.testing.assert_close(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0 + 1e-7]))
"""

import builtins
import collections.abc
import math

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


class _Mismatch(AssertionError):
    pass


def _default_tolerances(*dtypes):
    rtols, atols = zip(*(_DEFAULT_TOLERANCES.get(d, (0.0, 0.0)) for d in dtypes))
    return builtins.max(rtols), builtins.max(atols)


def _is_tensor_like(x):
    return isinstance(x, (Tensor, np.ndarray, np.generic, bool, int, float))


def _kind(x):
    if isinstance(x, Tensor):
        return "tensor"
    return "number" if isinstance(x, (bool, int, float)) else "array"


def _as_tensor(x):
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (np.ndarray, np.generic)):
        return _C.from_numpy(np.ascontiguousarray(x))
    return _C.tensor(x)


def _fmt_index(flat_index, shape):
    if not shape:
        return "()"
    idx = np.unravel_index(flat_index, tuple(shape))
    return "(" + ", ".join(str(int(i)) for i in idx) + ("," if len(idx) == 1 else "") + ")"


def _compare_tensors(actual, expected, *, rtol, atol, equal_nan, check_device, check_dtype,
                     check_stride, path):
    where = f" at {path}" if path else ""
    if actual.shape != expected.shape:
        raise _Mismatch(f"The values for attribute 'shape' do not match{where}: "
                        f"{actual.shape} != {expected.shape}.")
    if check_device and actual.device != expected.device:
        raise _Mismatch(f"The values for attribute 'device' do not match{where}: "
                        f"{actual.device} != {expected.device}.")
    if check_dtype and actual.dtype != expected.dtype:
        raise _Mismatch(f"The values for attribute 'dtype' do not match{where}: "
                        f"{actual.dtype} != {expected.dtype}.")
    if check_stride and actual.stride() != expected.stride():
        raise _Mismatch(f"The values for attribute 'stride()' do not match{where}: "
                        f"{actual.stride()} != {expected.stride()}.")
    default_rtol, default_atol = _default_tolerances(actual.dtype, expected.dtype)
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    a = actual.detach().cpu()
    e = expected.detach().cpu()
    exact = not (a.dtype.is_floating_point or e.dtype.is_floating_point)
    if a.dtype in (_C.float16, _C.bfloat16):
        a = a.float()
    if e.dtype in (_C.float16, _C.bfloat16):
        e = e.float()
    an, en = a.numpy(), e.numpy()
    if exact and rtol == 0 and atol == 0:
        ok = an == en
        kind = "Scalars" if not an.shape else "Tensor-likes"
        title = f"{kind} are not equal!"
    else:
        an64, en64 = an.astype(np.float64), en.astype(np.float64)
        ok = np.isclose(an64, en64, rtol=rtol, atol=atol, equal_nan=equal_nan)
        kind = "Scalars" if not an.shape else "Tensor-likes"
        title = f"{kind} are not close!"
    if np.all(ok):
        return
    an64, en64 = an.astype(np.float64), en.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        abs_diff = np.abs(an64 - en64)
        rel_diff = abs_diff / np.abs(en64)
    abs_diff = np.where(ok, 0.0, np.nan_to_num(abs_diff, nan=np.inf))
    rel_diff = np.where(ok, 0.0, np.nan_to_num(rel_diff, nan=np.inf))
    total = an.size
    bad = builtins.int((~ok).sum())
    lines = [title + where, ""]
    if an.shape:
        lines.append(f"Mismatched elements: {bad} / {total} ({100.0 * bad / total:.1f}%)")
        ia, ir = builtins.int(abs_diff.argmax()), builtins.int(rel_diff.argmax())
        lines.append(f"Greatest absolute difference: {abs_diff.flat[ia]} at index "
                     f"{_fmt_index(ia, an.shape)} (up to {atol} allowed)")
        lines.append(f"Greatest relative difference: {rel_diff.flat[ir]} at index "
                     f"{_fmt_index(ir, an.shape)} (up to {rtol} allowed)")
    else:
        lines.append(f"Expected {en.item()} but got {an.item()}.")
        lines.append(f"Absolute difference: {abs_diff.item()} (up to {atol} allowed)")
        lines.append(f"Relative difference: {rel_diff.item()} (up to {rtol} allowed)")
    raise _Mismatch("\n".join(lines))


def _compare(actual, expected, path, opts):
    if isinstance(actual, (str, bytes)) or isinstance(expected, (str, bytes)):
        if actual != expected:
            raise _Mismatch(f"Values are not equal at {path or 'top level'}: "
                            f"{actual!r} != {expected!r}.")
        return
    if isinstance(actual, collections.abc.Mapping) and isinstance(
            expected, collections.abc.Mapping):
        if set(actual.keys()) != set(expected.keys()):
            raise _Mismatch(f"The keys of the mappings do not match{' at ' + path if path else ''}"
                            f": {sorted(map(str, actual.keys()))} != "
                            f"{sorted(map(str, expected.keys()))}")
        for k in actual:
            _compare(actual[k], expected[k], f"{path}[{k!r}]" if path else f"item [{k!r}]", opts)
        return
    if (isinstance(actual, collections.abc.Sequence)
            and isinstance(expected, collections.abc.Sequence)):
        if len(actual) != len(expected):
            raise _Mismatch(f"The length of the sequences mismatch: {len(actual)} != "
                            f"{len(expected)}")
        for i, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, f"{path}[{i}]" if path else f"item [{i}]", opts)
        return
    if not (_is_tensor_like(actual) and _is_tensor_like(expected)):
        raise TypeError(
            f"No comparison pair was able to handle inputs of type {type(actual)} and "
            f"{type(expected)}."
        )
    if opts["allow_subclasses"] is False and type(actual) is not type(expected):
        raise TypeError(f"Expected both inputs to have the same type, but got "
                        f"{type(actual)} and {type(expected)}.")
    if _kind(actual) != _kind(expected):
        # As torch.testing: a tensor compares with a tensor, an array with an array.
        raise TypeError(
            f"No comparison pair was able to handle inputs of type {type(actual)} and "
            f"{type(expected)}."
        )
    if isinstance(actual, (bool, int, float)) and isinstance(expected, (bool, int, float)):
        if opts["check_dtype"] and type(actual) is not type(expected):
            raise _Mismatch(f"The values for attribute 'type' do not match: {type(actual)} != "
                            f"{type(expected)}.")
        _compare_numbers(actual, expected, path, opts)
        return
    _compare_tensors(_as_tensor(actual), _as_tensor(expected), rtol=opts["rtol"],
                     atol=opts["atol"], equal_nan=opts["equal_nan"],
                     check_device=opts["check_device"], check_dtype=opts["check_dtype"],
                     check_stride=opts["check_stride"], path=path)


def _compare_numbers(actual, expected, path, opts):
    where = f" at {path}" if path else ""
    if isinstance(actual, float) or isinstance(expected, float):
        rtol = 1.3e-6 if opts["rtol"] is None else opts["rtol"]
        atol = 1e-5 if opts["atol"] is None else opts["atol"]
        if opts["equal_nan"] and math.isnan(actual) and math.isnan(expected):
            return
        if actual == expected or math.isclose(actual, expected, rel_tol=rtol, abs_tol=atol) or \
                abs(actual - expected) <= atol + rtol * abs(expected):
            return
        rel = abs(actual - expected) / abs(expected) if expected else math.inf
        raise _Mismatch(
            f"Scalars are not close{where}!\n\nExpected {expected} but got {actual}.\n"
            f"Absolute difference: {abs(actual - expected)} (up to {atol} allowed)\n"
            f"Relative difference: {rel} (up to {rtol} allowed)"
        )
    if actual != expected:
        raise _Mismatch(f"Scalars are not equal{where}!\n\nExpected {expected} but got {actual}.")


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, msg=None):
    """Assert that ``actual`` and ``expected`` are close: ``|actual - expected| <= atol + rtol
    * |expected|`` elementwise, with PyTorch's per-dtype default tolerances, after checking
    shape, device and dtype. Tensors, NumPy arrays, Python numbers and (nested) sequences and
    mappings of them are accepted. ``msg`` (a string, or a callable taking the generated
    message) replaces the message."""
    if (rtol is None) != (atol is None):
        raise ValueError(
            f"Both 'rtol' and 'atol' must be either specified or omitted, but got no "
            f"{'rtol' if rtol is None else 'atol'}."
        )
    opts = dict(rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=check_device,
                check_dtype=check_dtype, check_stride=check_stride,
                allow_subclasses=allow_subclasses)
    try:
        _compare(actual, expected, "", opts)
    except _Mismatch as e:
        text = str(e)
        if callable(msg):
            text = msg(text)
        elif msg is not None:
            text = msg
        raise AssertionError(text) from None


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """Deprecated ``torch.testing.assert_allclose``: ``assert_close`` without the dtype and
    device checks, NaNs equal by default."""
    if not isinstance(actual, Tensor):
        actual = _as_tensor(actual)
    if not isinstance(expected, Tensor):
        expected = _as_tensor(expected).to(actual.dtype)
    if rtol is None and atol is None:
        rtol, atol = _default_tolerances(actual.dtype, expected.dtype)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan,
                 check_device=True, check_dtype=False, msg=msg or None)


def make_tensor(*shape, dtype, device=None, low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False, memory_format=None):
    """A tensor of ``shape`` filled with uniform random values in ``[low, high)`` (PyTorch's
    defaults: [-9, 9] for floats, [-9, 10) for signed ints, [0, 10) for uint8, random bools),
    drawn from ferrotorch's seeded generator."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    if dtype == _C.bool:
        t = _C.randint(0, 2, shape, device=device).bool()
    elif dtype.is_floating_point:
        lo = -9.0 if low is None else builtins.float(low)
        hi = 9.0 if high is None else builtins.float(high)
        if lo > hi:
            raise ValueError(f"low={lo} must not be greater than high={hi}")
        t = (_C.rand(shape, dtype=_C.float64, device=device) * (hi - lo) + lo).to(dtype)
        if exclude_zero:
            tiny = finfo(dtype).tiny
            t = _C.where(t == 0, _C.full((), tiny, dtype=dtype, device=t.device), t)
    else:
        lo = (0 if dtype == _C.uint8 else -9) if low is None else math.ceil(low)
        hi = 10 if high is None else math.ceil(high)
        info = iinfo(dtype)  # PyTorch clamps the range to the dtype's
        lo, hi = builtins.max(lo, info.min), builtins.min(hi, info.max + 1)
        if hi <= lo:
            hi = lo + 1
        t = _C.randint(lo, hi, shape, dtype=dtype, device=device)
        if exclude_zero:
            t = _C.where(t == 0, _C.ones((), dtype=dtype, device=t.device), t)
    if noncontiguous and t.numel() > 1:
        wide = _C.empty(tuple(shape[:-1]) + (shape[-1] * 2,), dtype=dtype, device=t.device)
        view = wide[..., ::2]
        view.copy_(t)
        t = view
    if requires_grad:
        t.requires_grad_(True)
    return t
