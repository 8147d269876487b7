"""Tensor.apply_ / map_ / map2_: PyTorch's per-element Python callbacks on CPU tensors.

Checked on their own (values, strided write-back, visiting order, conversions, errors) and,
when PyTorch is importable, case by case against it: the same program runs under both and
must give the same values, or the same exception type and message."""

import math

import numpy as np
import pytest

import ferrotorch as ft
from conftest import DTYPES, layouts

HAS_CUDA = ft.cuda.is_available()


# ------------------------------------------------------------------ plain (no torch needed)
@pytest.mark.parametrize("ft_dtype,np_dtype", DTYPES, ids=[str(d) for d, _ in DTYPES])
def test_apply_every_layout_writes_back(rng, ft_dtype, np_dtype):
    if np_dtype == np.bool_:
        fn, np_fn = (lambda v: not v), np.logical_not
    elif np.issubdtype(np_dtype, np.integer):
        fn, np_fn = (lambda v: v // 2 + 1), (lambda a: a // 2 + 1)
    else:
        fn, np_fn = (lambda v: v * 0.5 - 1.0), (lambda a: a * np_dtype(0.5) - np_dtype(1.0))
    for name, a, t in layouts(rng, (3, 4), np_dtype):
        out = t.apply_(fn)
        assert out is t, name
        np.testing.assert_array_equal(t.numpy(), np_fn(a).astype(np_dtype), err_msg=name)


def test_apply_writes_into_the_base_through_views():
    base = ft.zeros(3, 4)
    base[:, 1:3].apply_(lambda v: 7.0)
    np.testing.assert_array_equal(base.numpy(), [[0, 7, 7, 0]] * 3)
    t = ft.arange(12.0).reshape(3, 4)
    t.t().apply_(lambda v: -v)
    np.testing.assert_array_equal(t.numpy(), -np.arange(12.0).reshape(3, 4))
    e = ft.ones(3)
    e.expand(2, 3).apply_(lambda v: v + 1)  # stride 0: each element is visited twice
    np.testing.assert_array_equal(e.numpy(), [3.0, 3.0, 3.0])
    s = ft.tensor(5.0)
    assert s.apply_(lambda v: v * v).item() == 25.0
    assert ft.ones(0, 3).apply_(lambda v: 1 / 0).shape == (0, 3)  # never called


def test_visiting_order_scalar_types_and_partial_failure():
    order = []
    ft.arange(6.0).reshape(2, 3).t().apply_(lambda v: order.append(v) or v)
    assert order == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]  # logical row-major order of self
    kinds = []
    for t in (ft.tensor([1.5]), ft.tensor([2]), ft.tensor([True]), ft.tensor([1.0]).half(),
              ft.tensor([1.0]).bfloat16()):
        t.apply_(lambda v: kinds.append(type(v)) or v)
    assert kinds == [float, int, bool, float, float]
    t = ft.arange(4.0)

    def boom(v):
        if v == 2:
            raise ValueError("boom")
        return v + 100

    with pytest.raises(ValueError, match="boom"):
        t.apply_(boom)
    np.testing.assert_array_equal(t.numpy(), [100, 101, 2, 3])  # the elements before stay written


def test_map_and_map2_broadcast_and_read_live():
    b = ft.ones(2, 3)
    assert b.map_(ft.tensor([1.0, 2.0, 3.0]), lambda x, y: x + 10 * y) is b
    np.testing.assert_array_equal(b.numpy(), [[11, 21, 31]] * 2)
    c = ft.ones(2, 3)
    c.map2_(ft.tensor([1.0, 2.0, 3.0]), ft.tensor([[5.0], [7.0]]), lambda x, y, z: x + y * z)
    np.testing.assert_array_equal(c.numpy(), [[6, 11, 16], [8, 15, 22]])
    d = ft.ones(2, 2).map_(ft.tensor(3.0), lambda x, y: x + y)
    np.testing.assert_array_equal(d.numpy(), np.full((2, 2), 4.0))
    t = ft.arange(3.0)
    t.map_(t, lambda x, y: x + y)
    np.testing.assert_array_equal(t.numpy(), [0, 2, 4])
    t = ft.arange(4.0)
    t[1:].map_(t[:3], lambda x, y: x + y)  # reads see the values already written: a prefix sum
    np.testing.assert_array_equal(t.numpy(), [0, 1, 3, 6])
    pairs = []
    ft.arange(6.0).reshape(2, 3).t().map_(ft.arange(6.0).reshape(3, 2) * 10,
                                          lambda x, y: pairs.append((x, y)) or x)
    assert pairs == [(0, 0), (3, 10), (1, 20), (4, 30), (2, 40), (5, 50)]
    k = ft.zeros(3).map2_(y=ft.ones(3), x=ft.ones(3) * 2, callable=lambda a, x, y: a + x - y)
    np.testing.assert_array_equal(k.numpy(), [1, 1, 1])
    i = ft.tensor([[1, 2], [3, 4]]).t()
    i.map_(ft.tensor([10, 20]), lambda x, y: x * y)
    np.testing.assert_array_equal(i.numpy(), [[10, 60], [20, 80]])


def test_store_conversions_follow_pytorch():
    assert ft.arange(5).apply_(lambda v: v * 1.5).tolist() == [0, 1, 3, 4, 6]  # truncation
    assert ft.ones(3, dtype=ft.uint8).apply_(lambda v: -1).tolist() == [255] * 3  # wraps
    assert ft.ones(2, dtype=ft.uint8).apply_(lambda v: -255).tolist() == [1, 1]
    assert ft.ones(2, dtype=ft.bool).apply_(lambda v: 0.0).tolist() == [False, False]
    assert ft.ones(2, dtype=ft.bool).apply_(lambda v: 5).tolist() == [True, True]
    assert ft.ones(2).apply_(lambda v: True).tolist() == [1.0, 1.0]
    assert ft.ones(2).apply_(lambda v: np.float32(2.5)).tolist() == [2.5, 2.5]
    assert ft.ones(2).apply_(lambda v: ft.tensor(4.0)).tolist() == [4.0, 4.0]  # __float__
    assert ft.ones(2, dtype=ft.int64).apply_(lambda v: np.int64(7)).tolist() == [7, 7]
    assert ft.ones(2).apply_(lambda v: 1e300).tolist() == [math.inf, math.inf]  # float32 cast
    h = ft.zeros(2, dtype=ft.bfloat16).apply_(lambda v: 1 / 3)
    assert h.float().tolist() == [0.333984375, 0.333984375]  # round to nearest even
    bf = ft.arange(6.0).bfloat16().reshape(2, 3).t()
    bf.apply_(lambda v: v + 0.5)
    assert bf.float().tolist() == [[0.5, 3.5], [1.5, 4.5], [2.5, 5.5]]
    nan = ft.zeros(1, dtype=ft.bfloat16).apply_(lambda v: math.nan)
    assert math.isnan(nan.float().item())
    for dtype, value, name in ((ft.uint8, 300, "uint8"), (ft.uint8, -256, "uint8"),
                               (ft.int8, 200.0, "int8"), (ft.int8, -129, "int8"),
                               (ft.int32, 2**40, "int32"), (ft.int64, math.nan, "int64"),
                               (ft.int64, 1e30, "int64")):
        with pytest.raises(RuntimeError,
                           match=f"value cannot be converted to type {name} without overflow"):
            ft.ones(2, dtype=dtype).apply_(lambda v, value=value: value)
    cases = [(ft.float32, "a", TypeError, "must be real number, not str"),
             (ft.float32, None, TypeError, "must be real number, not NoneType"),
             (ft.float32, 1 + 2j, TypeError, "must be real number, not complex"),
             (ft.float32, 10**400, OverflowError, "int too large to convert to float"),
             (ft.int64, 2**70, ValueError, "Overflow when unpacking long long"),
             (ft.int64, "3", TypeError, "'str' object cannot be interpreted as an integer"),
             (ft.int64, 1 + 2j, TypeError, "'complex' object cannot be interpreted as an integer"),
             (ft.bool, "a", TypeError, "'str' object cannot be interpreted as an integer")]
    for dtype, value, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            ft.ones(2, dtype=dtype).apply_(lambda v, value=value: value)


def test_refuses_tensors_that_require_grad_whatever_the_grad_mode():
    leaf = ft.ones(3, requires_grad=True)
    msg = r"Can't call apply_\(\) on Variable that requires grad. Use var.detach\(\).apply_\(\)"
    with pytest.raises(RuntimeError, match=msg):
        leaf.apply_(lambda v: v)
    with ft.no_grad(), pytest.raises(RuntimeError, match=msg):
        leaf.apply_(lambda v: v)
    with pytest.raises(RuntimeError, match=msg):
        (leaf * 2).apply_(lambda v: v)
    with pytest.raises(RuntimeError, match=r"Can't call map_\(\) on Variable"):
        ft.ones(3).map_(leaf, lambda a, b: a)
    with pytest.raises(RuntimeError, match=r"Can't call map2_\(\) on Variable"):
        ft.ones(3).map2_(ft.ones(3), leaf, lambda a, b, c: a)
    d = leaf.detach().apply_(lambda v: 2.0)  # the documented way out: shares leaf's memory
    assert d.tolist() == [2.0] * 3 and leaf.tolist() == [2.0] * 3
    assert leaf.grad is None and d.grad_fn is None


def test_argument_and_shape_errors():
    cases = [
        (lambda: ft.ones(3).apply_(), TypeError,
         r"TensorBase.apply_\(\) takes exactly one argument \(0 given\)"),
        (lambda: ft.ones(3).apply_(callable=abs), TypeError,
         r"TensorBase.apply_\(\) takes no keyword arguments"),
        (lambda: ft.ones(3).apply_(1), TypeError, "'int' object is not callable"),
        (lambda: ft.ones(3).map_(2.0, abs), TypeError,
         r"map_\(\): argument 'other' \(position 1\) must be Tensor, not float"),
        (lambda: ft.ones(3).map_(ft.ones(3)), TypeError,
         r'map_\(\) missing 1 required positional arguments: "callable"'),
        (lambda: ft.ones(3).map2_(ft.ones(3), 1.0, abs), TypeError,
         r"map2_\(\): argument 'y' \(position 2\) must be Tensor, not float"),
        (lambda: ft.ones(3).map_(ft.ones(3, dtype=ft.float64), abs), TypeError,
         r"map_: expected ferrotorch.FloatTensor for 'other' \(got ferrotorch.DoubleTensor\)"),
        (lambda: ft.ones(3).map2_(ft.ones(3, dtype=ft.int64), ft.ones(3), abs), TypeError,
         r"map2_: expected ferrotorch.FloatTensor for argument 'x' \(got "
         r"ferrotorch.LongTensor\)"),
        (lambda: ft.ones(2, 3).map_(ft.ones(3, 2), abs), RuntimeError,
         r"The expanded size of the tensor \(3\) must match the existing size \(2\) at "
         r"non-singleton dimension 1.  Target sizes: \[2, 3\].  Tensor sizes: \[3, 2\]"),
        (lambda: ft.ones(3).map_(ft.ones(2, 3), abs), RuntimeError,
         r"expand\(ferrotorch.FloatTensor\{\[2, 3\]\}, size=\[3\]\): the number of sizes "
         r"provided \(1\) must be greater or equal to the number of dimensions in the tensor "
         r"\(2\)"),
        (lambda: ft.ones(3).map_(ft.ones(3), lambda a: a), TypeError,
         "takes 1 positional argument but 2 were given"),
    ]
    for fn, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            fn()


@pytest.mark.cuda
@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")
def test_cuda_tensors_are_refused():
    g = ft.ones(3, device="cuda")
    with pytest.raises(TypeError, match="apply_ is only implemented on CPU tensors"):
        g.apply_(lambda v: v)
    with pytest.raises(TypeError, match="map_ is only implemented on CPU tensors"):
        g.map_(ft.ones(3, device="cuda"), lambda a, b: a)
    with pytest.raises(TypeError, match="map2_ is only implemented on CPU tensors"):
        g.map2_(ft.ones(3, device="cuda"), ft.ones(3, device="cuda"), lambda a, b, c: a)
    with pytest.raises(TypeError, match="map_: expected"):
        ft.ones(3).map_(g, lambda a, b: a)


# ------------------------------------------------------------------ against PyTorch
def _cases(M):
    """(label, thunk) pairs; each thunk returns a tensor or raises."""

    def strided(dtype):
        return M.arange(24).to(dtype).reshape(4, 6)[::2, 1::2].t()

    def boom(v):
        if v > 2:
            raise KeyError("stop")
        return -v

    cases = []
    for dtype in (M.float32, M.float64, M.float16, M.bfloat16, M.int64, M.int32, M.int16,
                  M.int8, M.uint8, M.bool):
        cases += [
            (f"apply {dtype}", lambda d=dtype: strided(d).apply_(lambda v: v * 3 - 1)),
            (f"apply half-step {dtype}", lambda d=dtype: strided(d).apply_(lambda v: v / 4)),
            (f"apply neg {dtype}", lambda d=dtype: strided(d).apply_(lambda v: -v - 0.5)),
            (f"map {dtype}", lambda d=dtype: strided(d).map_(
                M.arange(2).to(d), lambda a, b: a * 2 + b)),
            (f"map2 {dtype}", lambda d=dtype: strided(d).map2_(
                M.ones(3, 1).to(d), M.arange(2).to(d), lambda a, b, c: a - b + c)),
            (f"big {dtype}", lambda d=dtype: strided(d).apply_(lambda v: 1e20)),
            (f"nan {dtype}", lambda d=dtype: strided(d).apply_(lambda v: math.nan)),
            (f"str {dtype}", lambda d=dtype: strided(d).apply_(lambda v: "x")),
            (f"tensor {dtype}", lambda d=dtype: strided(d).apply_(lambda v: M.tensor(2))),
            (f"raise {dtype}", lambda d=dtype: strided(d).apply_(boom)),
            (f"type {dtype}", lambda d=dtype: strided(d).apply_(
                lambda v: {float: 1, int: 2, bool: True}[type(v)])),
        ]
    cases += [
        ("map other f64", lambda: M.ones(2).map_(M.ones(2, dtype=M.float64), abs)),
        ("map2 y i64", lambda: M.ones(2).map2_(M.ones(2), M.ones(2, dtype=M.int64), abs)),
        ("map bad shape", lambda: M.ones(2, 3).map_(M.ones(2), abs)),
        ("map2 bad rank", lambda: M.ones(3).map2_(M.ones(3), M.ones(1, 2, 3), abs)),
        ("map kw", lambda: M.ones(2).map_(callable=lambda a, b: a + b, other=M.ones(2))),
        ("map extra", lambda: M.ones(2).map_(M.ones(2), abs, 3)),
        ("map unknown kw", lambda: M.ones(2).map_(M.ones(2), abs, fn=3)),
        ("apply grad", lambda: M.ones(2, requires_grad=True).apply_(abs)),
        ("map2 grad", lambda: M.ones(2).map2_(M.ones(2, requires_grad=True), M.ones(2), abs)),
        ("apply no args", lambda: M.ones(2).apply_()),
        ("overlap", lambda: _overlap(M)),
    ]
    return cases


def _overlap(M):
    t = M.arange(6.0)
    t[2:].map2_(t[:4], t[1:5], lambda a, b, c: a + b * c)
    return t


def _outcome(thunk):
    try:
        r = thunk()
    except Exception as e:  # noqa: BLE001 compared with PyTorch's
        return ("raise", type(e).__name__, str(e).replace("ferrotorch.", "torch."))
    return ("ok", str(r.dtype).replace("ferrotorch.", "torch."), r.float().tolist())


def test_apply_map_map2_match_torch():
    torch = pytest.importorskip("torch")
    ours, theirs = _cases(ft), _cases(torch)
    assert len(ours) == len(theirs)
    for (label, a), (_, b) in zip(ours, theirs):
        got, want = _outcome(a), _outcome(b)
        if got[0] == "ok" and want[0] == "ok":
            assert got[1] == want[1], label
            np.testing.assert_array_equal(np.array(got[2]), np.array(want[2]), err_msg=label)
        else:
            assert got == want, label
