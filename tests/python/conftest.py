"""Shared test helpers: random arrays of every dtype and layout variants."""

import numpy as np
import pytest

import ferrotorch as ft

# (ferrotorch dtype, numpy dtype) pairs for the dtypes NumPy also has.
DTYPES = [
    (ft.float32, np.float32),
    (ft.float64, np.float64),
    (ft.float16, np.float16),
    (ft.int64, np.int64),
    (ft.int32, np.int32),
    (ft.int16, np.int16),
    (ft.int8, np.int8),
    (ft.uint8, np.uint8),
    (ft.bool, np.bool_),
]
FLOAT_DTYPES = DTYPES[:3]


def random_array(rng, shape, np_dtype):
    """Random values that fit the dtype (small ints, so arithmetic stays in range)."""
    if np_dtype == np.bool_:
        return rng.random(shape) > 0.5
    if np.issubdtype(np_dtype, np.integer):
        lo = 0 if np_dtype == np.uint8 else -9
        return rng.integers(lo, 10, size=shape).astype(np_dtype)
    return rng.standard_normal(shape).astype(np_dtype)


def layouts(rng, shape, np_dtype):
    """The same values as (name, numpy array, ferrotorch tensor) in several memory layouts:
    contiguous, transposed (non-contiguous) and stepped-slice views."""
    a = random_array(rng, shape, np_dtype)
    out = [("contiguous", a, ft.tensor(a))]
    if len(shape) >= 2:
        base = np.ascontiguousarray(np.swapaxes(a, -1, -2))
        t = ft.tensor(base).transpose(-1, -2)
        out.append(("transposed", a, t))
    if len(shape) >= 1:
        big = random_array(rng, (shape[0] * 2,) + tuple(shape[1:]), np_dtype)
        big[::2] = a
        t = ft.tensor(big)[::2] if hasattr(ft.Tensor, "__getitem__") else None
        if t is not None:
            out.append(("stepped", a, t))
    return out


@pytest.fixture
def rng():
    return np.random.default_rng(0)
