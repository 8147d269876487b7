"""Elementwise dtype rules and gradient edge cases, with the values PyTorch 2.13 gives
(checked against it; these run without PyTorch):

- clamp of bool tensors by bool bounds (max/min are logical or/and), clamp_ of an integer
  tensor by a wider integer bound (computed in the promoted dtype, then cast back);
- bool ** True / False stays bool; lerp with a 0-d weight of another dtype;
- the gradients of vector norms at zeros and NaNs (every kind of p), atan2 at the origin,
  maximum/minimum at NaN, and max()/min()/median()/amax/aminmax over NaNs.

The gradient cases run on CUDA too (`pytest -m cuda`), against the same values.
"""

import math

import numpy as np
import pytest

import ferrotorch as ft
from ferrotorch.autograd import gradcheck

NAN, INF = math.nan, math.inf
HAS_CUDA = ft.cuda.is_available()


def same(got, want, zero_signs=True):
    """Equal values, NaN where NaN, and (with ``zero_signs``) the same sign of zero."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, (got, want)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=0, equal_nan=True)
    zeros = (want == 0) & zero_signs
    assert (np.signbit(got[zeros]) == np.signbit(want[zeros])).all(), (got, want)


def grads(f, *values, device="cpu"):
    """The gradients of ``f(*leaves).sum()`` (None where PyTorch leaves .grad None)."""
    leaves = [ft.tensor(v, device=device, requires_grad=True) for v in values]
    f(*leaves).sum().backward()
    return [None if t.grad is None else t.grad.cpu().tolist() for t in leaves]


# ----------------------------------------------------------------------------------------------
# dtype rules


def test_clamp_bool_by_bool_bounds():
    x = ft.tensor([True, False])
    assert ft.clamp(x, max=ft.tensor(True)).tolist() == [True, False]
    assert ft.clamp(x, min=ft.tensor(True)).tolist() == [True, True]
    r = ft.clamp(x, min=ft.tensor([False, True]))
    assert r.dtype == ft.bool and r.tolist() == [True, True]
    assert ft.clamp(x, max=ft.tensor([False, True])).tolist() == [False, False]
    assert ft.clamp_min(x, ft.tensor([True, False])).tolist() == [True, False]
    assert ft.clamp_max(x, ft.tensor([True, False])).tolist() == [True, False]
    # scalar bounds, or two tensor bounds, have no bool kernel in PyTorch
    for kw in ({"min": True}, {"min": ft.tensor(True), "max": ft.tensor(True)}):
        with pytest.raises(NotImplementedError, match="Bool"):
            ft.clamp(x, **kw)
    y = x.clone()
    assert y.clamp_(min=ft.tensor([True, False])) is y
    assert y.tolist() == [True, False]
    # a bound of a higher category promotes (and can't be written into a bool tensor)
    assert ft.clamp(x, min=ft.tensor([1, 0])).tolist() == [1, 0]
    with pytest.raises(RuntimeError, match="result type Long can't be cast to the desired "
                                           "output type Bool"):
        x.clone().clamp_(min=ft.tensor([1, 0]))


@pytest.mark.parametrize("bound_dtype", [ft.int64, ft.int16, ft.uint8])
def test_clamp_inplace_by_wider_int_bound(bound_dtype):
    a = ft.tensor([1, 2, 3], dtype=ft.int8)
    b = ft.tensor([2, 1, 5], dtype=bound_dtype)
    for r in (a.clone().clamp_(min=b), a.clone().clamp_min_(b)):
        assert r.dtype == ft.int8 and r.tolist() == [2, 2, 5]
    assert a.clone().clamp_(max=b).tolist() == [1, 1, 3]
    assert a.clone().clamp_(min=b, max=ft.tensor([3, 3, 3], dtype=bound_dtype)).tolist() == [2, 2, 3]


def test_clamp_inplace_computes_in_the_promoted_dtype():
    # computed in int64, then wrapped to the tensor's dtype (PyTorch's values)
    assert ft.tensor([1, 2, 3], dtype=ft.int8).clamp_(min=ft.tensor([300, -1000, 5])).tolist() \
        == [44, 2, 5]
    u = ft.tensor([1, 2, 3], dtype=ft.uint8)
    assert u.clone().clamp_(min=ft.tensor([-1, 2, 300])).tolist() == [1, 2, 44]
    assert u.clone().clamp_(max=ft.tensor([-1, 2, 300])).tolist() == [255, 2, 3]
    # a transposed view is written through
    base = ft.tensor([[1, 2], [3, 4]], dtype=ft.int16)
    base.t().clamp_(min=ft.tensor([0, 5]))
    assert base.tolist() == [[1, 2], [5, 5]]


@pytest.mark.parametrize("bound_dtype,name", [(ft.float32, "Float"), (ft.float64, "Double"),
                                              (ft.bfloat16, "BFloat16")])
def test_clamp_inplace_int_by_float_bound_raises(bound_dtype, name):
    a = ft.tensor([1, 2, 3], dtype=ft.int8)
    for bound in (ft.tensor([2, 1, 5], dtype=bound_dtype), ft.tensor(2, dtype=bound_dtype)):
        with pytest.raises(RuntimeError, match=f"result type {name} can't be cast to the "
                                               "desired output type Char"):
            a.clone().clamp_(min=bound)
    assert a.tolist() == [1, 2, 3]


def test_bool_pow_bool_scalar():
    x = ft.tensor([True, False])
    for r, want in [(x**True, [True, False]), (x**False, [True, True]),
                    (x.pow(False), [True, True]), (x.pow(True), [True, False])]:
        assert r.dtype == ft.bool and r.tolist() == want
    y = x.clone()
    assert y.pow_(True) is y and y.tolist() == [True, False]
    assert y.pow_(False).tolist() == [True, True]
    r = x**True
    r[1] = True  # a copy, not a view of x
    assert x.tolist() == [True, False]
    # an int exponent promotes to int64; a bool tensor exponent has no kernel
    assert (x**1).dtype == ft.int64 and (x**2).tolist() == [1, 0]
    with pytest.raises(RuntimeError):
        x**x
    with pytest.raises(RuntimeError, match="result type Long can't be cast"):
        x.clone().pow_(2)


def test_lerp_0d_weight_of_another_dtype():
    a = ft.tensor([1.0, 2.0, 3.0], dtype=ft.float64)
    r = ft.lerp(a, a * 2, ft.tensor(0.3))
    assert r.dtype == ft.float64
    np.testing.assert_allclose(r.numpy(), [1.3, 2.6, 3.9], rtol=1e-7)
    # the weight is the float16 value 0.30004883
    r = ft.lerp(a, a * 2, ft.tensor(0.3, dtype=ft.float16))
    np.testing.assert_allclose(r.numpy(), [1.30004883, 2.60009766, 3.90014648], rtol=1e-7)
    f = a.float()
    assert ft.lerp(f, f * 2, ft.tensor(1)).tolist() == [2.0, 4.0, 6.0]  # an int64 weight
    assert ft.lerp(f, f * 2, ft.tensor(True)).tolist() == [2.0, 4.0, 6.0]
    assert ft.lerp(f, f * 2, ft.tensor(0.3, dtype=ft.float64)).dtype == ft.float32
    # all 0-d: the weight's dtype counts
    r = ft.lerp(f[0], f[1], ft.tensor(0.5, dtype=ft.float64))
    assert r.dtype == ft.float64 and r.item() == 1.5
    with pytest.raises(RuntimeError, match="for `weight`"):
        ft.lerp(a, a * 2, ft.tensor([0.3]))
    with pytest.raises(RuntimeError, match="for `weight`"):
        ft.lerp(f[0], f[1], ft.tensor([0.3, 0.4], dtype=ft.float64))
    with pytest.raises(RuntimeError, match="for `end`"):
        ft.lerp(f, a[0], ft.tensor(0.3))
    y = f.clone()
    y.lerp_(f * 2, ft.tensor(0.25, dtype=ft.float64))
    assert y.dtype == ft.float32 and y.tolist() == [1.25, 2.5, 3.75]
    # gradients come back in each input's dtype
    w = ft.tensor(0.3, dtype=ft.float64, requires_grad=True)
    s = f.clone().requires_grad_()
    ft.lerp(s, f * 2, w).sum().backward()
    assert w.grad.dtype == ft.float64 and w.grad.item() == 6.0
    assert s.grad.dtype == ft.float32
    np.testing.assert_allclose(s.grad.numpy(), [0.7] * 3, rtol=1e-6)


# ----------------------------------------------------------------------------------------------
# gradients (values from PyTorch 2.13)

VNORM = [
    (0.5, [0.0, 1.0], [0.0, 1.0]),
    (0.5, [0.0, 0.0], [0.0, 0.0]),
    (0.5, [0.0, -2.0, 1.0], [0.0, -1.7071067811865475, 2.414213562373095]),
    (0.5, [-0.0, 0.0, 1.0], [0.0, 0.0, 1.0]),
    (0.5, [NAN, 1.0, 0.0], [NAN, NAN, NAN]),
    (1, [0.0, -2.0, 1.0], [0.0, -1.0, 1.0]),
    (1.5, [0.0, 0.0], [0.0, 0.0]),
    (1.5, [-0.0, 0.0], [0.0, 0.0]),
    (1.5, [3.0, -4.0], [0.7329564, -0.8463452]),
    (2, [0.0, 0.0], [0.0, 0.0]),
    (2, [-0.0, 0.0], [0.0, 0.0]),
    (2, [0.0, -2.0, 1.0], [0.0, -0.894427190999916, 0.447213595499958]),
    (3, [0.0, 0.0], [0.0, 0.0]),
    (3, [-0.0, 0.0], [-0.0, 0.0]),
    (3, [0.0, -2.0, 1.0], [0.0, -0.9244817, 0.2311204]),
    (-1, [0.0, 1.0], [0.0, 0.0]),
    (-1, [0.0, -2.0, 1.0], [0.0, -0.0, 0.0]),
    (-1, [3.0, -4.0], [0.32653061, -0.18367347]),
    (-0.5, [0.0, 0.0], [0.0, 0.0]),
    (INF, [0.0, 0.0], [0.0, 0.0]),
    (INF, [0.0, -2.0, 1.0], [0.0, -1.0, 0.0]),
    (INF, [2.0, -2.0, 1.0], [0.5, -0.5, 0.0]),
    (INF, [NAN, 1.0, -2.0], [0.0, 0.0, -0.0]),
    (-INF, [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]),
    (-INF, [3.0, -4.0], [1.0, -0.0]),
    (-INF, [1.0, -1.0, -2.0], [0.5, -0.5, -0.0]),
    (-INF, [NAN, 1.0, -2.0], [0.0, 0.0, -0.0]),
]

EDGE_GRADS = {
    "atan2_origin": (ft.atan2, [0.0], [0.0]),
    "atan2_signed_zeros": (ft.atan2, [0.0, 0.0, -0.0, 0.0], [0.0, -0.0, 0.0, 1.0]),
    "atan2_underflow": (ft.atan2, [1e-30], [0.0]),
    "maximum_nan": (ft.maximum, [NAN, 1.0, NAN, 2.0, 1.0], [1.0, NAN, NAN, 2.0, 3.0]),
    "minimum_nan": (ft.minimum, [NAN, 1.0, NAN, 2.0, 1.0], [1.0, NAN, NAN, 2.0, 3.0]),
    "maximum_nan_broadcast": (ft.maximum, [NAN, 1.0], [NAN]),
    "fmax_nan": (ft.fmax, [NAN, 1.0, NAN, 2.0, 1.0], [1.0, NAN, NAN, 2.0, 3.0]),
    "fmin_nan": (ft.fmin, [NAN, 1.0, NAN, 2.0, 1.0], [1.0, NAN, NAN, 2.0, 3.0]),
    "max_one_nan": (lambda a: a.max(), [1.0, NAN, 2.0]),
    "max_two_nans": (lambda a: a.max(), [NAN, 2.0, NAN]),
    "max_ties": (lambda a: a.max(), [1.0, 2.0, 2.0]),
    "max_0d_nan": (lambda a: a.max(), NAN),
    "min_two_nans": (lambda a: a.min(), [NAN, NAN, 2.0]),
    "median_nan": (lambda a: a.median(), [1.0, NAN, 2.0, NAN]),
    "nanmedian_all_nan": (lambda a: a.nanmedian(), [NAN, NAN]),
    "amax_nan": (lambda a: a.amax(), [1.0, NAN, 2.0]),
    "amin_dim_nan": (lambda a: a.amin(1), [[1.0, NAN, 2.0], [2.0, 1.0, 2.0]]),
    "amax_dim0_nan": (lambda a: a.amax(0), [[1.0, NAN, 2.0], [2.0, 1.0, 2.0]]),
    "aminmax_nan": (lambda a: ft.stack(list(ft.aminmax(a))), [1.0, NAN, NAN]),
    "aminmax_dim_nan": (lambda a: ft.aminmax(a, dim=1).max, [[1.0, NAN, 2.0], [1.0, 2.0, 2.0]]),
    "max_dim_nan": (lambda a: a.max(1).values, [[1.0, NAN, 2.0], [NAN, NAN, 2.0]]),
}
EDGE_WANT = {
    "atan2_origin": [[0.0], [-0.0]],
    "atan2_signed_zeros": [[0.0, -0.0, 0.0, 1.0], [-0.0, -0.0, 0.0, -0.0]],
    "atan2_underflow": [[0.0], [-0.0]],
    "maximum_nan": [[1.0, 1.0, 1.0, 0.5, 0.0], [1.0, 1.0, 1.0, 0.5, 1.0]],
    "minimum_nan": [[1.0, 1.0, 1.0, 0.5, 1.0], [1.0, 1.0, 1.0, 0.5, 0.0]],
    "maximum_nan_broadcast": [[1.0, 1.0], [2.0]],
    # (ties split evenly since PyTorch 2.15)
    "fmax_nan": [[0.0, 1.0, 1.0, 0.5, 0.0], [1.0, 0.0, 0.0, 0.5, 1.0]],
    "fmin_nan": [[0.0, 1.0, 1.0, 0.5, 1.0], [1.0, 0.0, 0.0, 0.5, 0.0]],
    "max_one_nan": [[0.0, 1.0, 0.0]],
    "max_two_nans": [[0.5, 0.0, 0.5]],
    "max_ties": [[0.0, 0.5, 0.5]],
    "max_0d_nan": [1.0],
    "min_two_nans": [[0.5, 0.5, 0.0]],
    "median_nan": [[0.0, 0.5, 0.0, 0.5]],
    "nanmedian_all_nan": [[0.5, 0.5]],
    "amax_nan": [[NAN, NAN, NAN]],
    "amin_dim_nan": [[[NAN, NAN, NAN], [0.0, 1.0, 0.0]]],
    "amax_dim0_nan": [[[0.0, NAN, 0.5], [1.0, NAN, 0.5]]],
    "aminmax_nan": [[NAN, NAN, NAN]],
    "aminmax_dim_nan": [[[NAN, NAN, NAN], [0.0, 0.5, 0.5]]],
    "max_dim_nan": [[[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]],
}


def _devices():
    cuda = pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")
    return ["cpu", pytest.param("cuda", marks=[pytest.mark.cuda, cuda])]


@pytest.mark.parametrize("device", _devices())
@pytest.mark.parametrize("p,x,want", VNORM, ids=[f"p{p}-{x}" for p, x, _ in VNORM])
def test_vector_norm_grad_at_zeros_and_nans(p, x, want, device):
    cuda = device == "cuda"
    if cuda and math.isinf(p) and any(map(math.isnan, x)):
        pytest.skip("CUDA vector_norm is composed in Python (linalg._composed_vector_norm) for "
                    "p >= 1 and +-inf: amax's gradient there is NaN at a NaN norm, where "
                    "PyTorch's norm_backward gives 0")
    (g,) = grads(lambda a: ft.linalg.vector_norm(a, p), x, device=device)
    same(g, want, zero_signs=not cuda)  # (the composed CUDA path may give +0 for -0)
    (g,) = grads(lambda a: a.norm(p), x, device=device)
    same(g, want, zero_signs=not cuda)


@pytest.mark.parametrize("device", _devices())
def test_vector_norm_grad_p0_is_none(device):
    # PyTorch's norm_backward gives no gradient for p = 0 (the count of non-zeros)
    for f in (lambda a: ft.linalg.vector_norm(a, 0), lambda a: a.norm(0),
              lambda a: ft.linalg.vector_norm(a, 0, dim=1)):
        y = f(ft.tensor([[0.0, 1.0], [2.0, 0.0]], device=device, requires_grad=True))
        assert y.requires_grad
        assert grads(f, [[0.0, 1.0], [2.0, 0.0]], device=device) == [None]


@pytest.mark.parametrize("device", _devices())
def test_vector_norm_grad_dims(device):
    x = [[0.0, 4.0], [0.0, -9.0]]
    (g,) = grads(lambda a: ft.linalg.vector_norm(a, 0.5, dim=1), x, device=device)
    same(g, [[0.0, 1.0], [0.0, -1.0]])
    (g,) = grads(lambda a: ft.linalg.vector_norm(a, 2.5, dim=0, keepdim=True), x, device=device)
    same(g, [[0.0, 0.27509984], [0.0, -0.92846197]])
    (g,) = grads(lambda a: ft.linalg.vector_norm(a, 0.5, dtype=ft.float64), [0.0, 4.0, -9.0],
                 device=device)
    same(g, [0.0, 2.5, -5 / 3])


def test_vector_norm_gradcheck_away_from_zero():
    rng = np.random.default_rng(5)
    for p in (0.5, 1.5, 2, 3, -1, INF):
        x = ft.tensor(rng.uniform(0.5, 2.0, (3, 4)) * rng.choice([-1, 1], (3, 4)),
                      requires_grad=True)
        if p == INF:  # distinct magnitudes: no ties
            x = ft.tensor(np.arange(1.0, 13.0).reshape(3, 4) * rng.choice([-1, 1], (3, 4)),
                          requires_grad=True)
        assert gradcheck(lambda a, p=p: ft.linalg.vector_norm(a, p, dim=1), (x,))
        assert gradcheck(lambda a, p=p: ft.linalg.vector_norm(a.t(), p, dim=(0, 1)), (x,))


@pytest.mark.parametrize("device", _devices())
@pytest.mark.parametrize("name", list(EDGE_GRADS))
def test_edge_gradients(name, device):
    f, *values = EDGE_GRADS[name]
    got = grads(f, *values, device=device)
    for g, w in zip(got, EDGE_WANT[name], strict=True):
        same(g, w)


def test_atan2_and_maximum_gradcheck():
    rng = np.random.default_rng(6)
    a = ft.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    b = ft.tensor(rng.standard_normal((4,)), requires_grad=True)
    assert gradcheck(ft.atan2, (a, b))
    assert gradcheck(ft.maximum, (a, b))
    assert gradcheck(ft.minimum, (a, b))
