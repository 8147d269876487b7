"""Regression tests from a differential parity sweep of the ``torch.*`` namespace helpers
(histograms, diff, tri-indices, isclose, ``torch.testing``) against PyTorch.

The expected values are hard-coded (taken from PyTorch 2.15) or computed with NumPy, so the
tests run without torch; the ``*_vs_torch`` tests compare directly when torch is installed.
"""

import re
import warnings

import numpy as np
import pytest

import ferrotorch as ft

F32 = ft.float32


def _t(a, dtype=None):
    return ft.tensor(np.asarray(a), dtype=dtype)


# --------------------------------------------------------------------------- histogram(dd)

def test_histogram_of_empty_input_spans_zero_to_one():
    hist, edges = ft.histogram(ft.zeros(0), 3)
    assert hist.tolist() == [0.0, 0.0, 0.0]
    np.testing.assert_allclose(edges.numpy(), np.linspace(0.0, 1.0, 4), rtol=1e-6)


def test_histogram_error_messages():
    x = ft.tensor([1.0, 2.0, 1.0])
    with pytest.raises(RuntimeError, match=re.escape(
            "torch.histogram(): bins must be > 0, but got 0 for dimension 0")):
        ft.histogram(x, bins=0)
    with pytest.raises(RuntimeError, match="^torch.histogramdd: min should not exceed max, but "
                                           "got min 3 max 0 for dimension 0$"):
        ft.histogram(x, bins=4, range=(3.0, 0.0))
    with pytest.raises(RuntimeError, match=re.escape(
            "torch.histogramdd: dimension 0's range [0.1, inf] is not finite")):
        ft.histogram(x, 2, range=(0.1, float("inf")))
    with pytest.raises(RuntimeError, match="^torch.histogramdd: for a 1-dimensional histogram "
                                           "range should have 2 elements, but got 3$"):
        ft.histogram(x, 2, range=(0, 1, 2))
    with pytest.raises(NotImplementedError, match="\"histogramdd\" not implemented for 'Long'"):
        ft.histogram(ft.tensor([1, 2]), 3)
    with pytest.raises(RuntimeError, match=re.escape(
            "should have the same dtype, but got input(double), and weight(long int)")):
        ft.histogram(ft.tensor([1.0, 2.0], dtype=ft.float64), 2, weight=ft.tensor([1, 2]))
    with pytest.raises(RuntimeError, match=re.escape(
            "but got input with shape [2, 1] and weight with shape [3]")):
        ft.histogram(ft.tensor([1.0, 2.0]), 2, weight=ft.tensor([1.0, 2.0, 3.0]))


def test_histogram_weight_only_needs_the_same_number_of_elements():
    # PyTorch flattens input and weight: a (4,) weight goes with a (2, 2) input.
    hist, _ = ft.histogram(ft.ones(2, 2), 2, weight=ft.tensor([1.0, 2.0, 3.0, 4.0]))
    assert hist.tolist() == [0.0, 10.0]


def test_histogramdd_matches_numpy():
    rng = np.random.default_rng(0)
    data = rng.standard_normal((50, 3))
    w = rng.random(50)
    for bins, kw in [([3, 2, 4], {}), (5, {}), ([3, 2, 4], {"density": True}),
                     (2, {"range": [-1.0, 1.0, -2.0, 2.0, 0.0, 1.0]})]:
        got = ft.histogramdd(ft.tensor(data), bins, weight=ft.tensor(w), **kw)
        np_range = None if "range" not in kw else np.reshape(kw["range"], (3, 2))
        want, want_edges = np.histogramdd(data, bins, range=np_range, weights=w,
                                          density=kw.get("density", False))
        np.testing.assert_allclose(got.hist.numpy(), want, rtol=1e-10)
        assert isinstance(got.bin_edges, tuple) and len(got.bin_edges) == 3
        for g, e in zip(got.bin_edges, want_edges):
            np.testing.assert_allclose(g.numpy(), e, rtol=1e-12)


def test_histogramdd_bins_tensors_shapes_and_dtypes():
    x = _t([[1.0, 2.0], [1.0, 5.0], [3.0, 3.0]], F32)
    r = ft.histogramdd(x, bins=[_t([0.0, 2, 4], F32), _t([0.0, 3, 6], F32)],
                       weight=_t([1.0, 2, 3], F32))
    assert type(r).__name__ == "histogramdd" and r._fields == ("hist", "bin_edges")
    assert r.hist.dtype == F32 and r.hist.tolist() == [[1.0, 2.0], [0.0, 3.0]]
    # Leading dims are flattened; an int applies to every dimension.
    r = ft.histogramdd(x.reshape(1, 3, 2), bins=(2, 3))
    assert r.hist.tolist() == [[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]
    assert [e.tolist() for e in r.bin_edges] == [[1.0, 2.0, 3.0], [2.0, 3.0, 4.0, 5.0]]
    r = ft.histogramdd(x, bins=[2, 3], density=True)
    np.testing.assert_allclose(r.hist.numpy(), [[1 / 3, 0, 1 / 3], [0, 1 / 3, 0]], rtol=1e-6)
    r = ft.histogramdd(ft.zeros(0, 2), 2)
    assert r.hist.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert r.bin_edges[0].tolist() == [0.0, 0.5, 1.0]


def test_histogramdd_errors():
    x = _t([[1.0, 2.0], [1.0, 5.0], [3.0, 3.0]], F32)
    cases = [
        (lambda: ft.histogramdd(ft.tensor([1.0, 2.0]), 2), RuntimeError,
         "torch.histogramdd: input tensor should have at least 2 dimensions"),
        (lambda: ft.histogramdd(x, bins=[2]), RuntimeError,
         "histogramdd: The size of bins must be equal to the innermost dimension of the input."),
        (lambda: ft.histogramdd(x, 2, range=[0.0, 1.0]), RuntimeError,
         "torch.histogramdd: for a 2-dimensional histogram range should have 4 elements, "
         "but got 2"),
        (lambda: ft.histogramdd(x, [_t([0.0, 2, 4], F32)]), RuntimeError,
         "torch.histogramdd: expected 2 sequences of bin edges for a 2-dimensional histogram "
         "but got 1"),
        (lambda: ft.histogramdd(x, [0, 2]), RuntimeError,
         "torch.histogram(): bins must be > 0, but got 0 for dimension 0"),
        (lambda: ft.histogramdd(x.double(), [_t([0.0, 2], F32), _t([0.0, 3], F32)]),
         RuntimeError, "torch.histogramdd: input tensor and bins tensors should have the same "
         "dtype, but got input with dtype double and bins for dimension 0 with dtype float"),
        (lambda: ft.histogramdd(x, 2, weight=ft.ones(3, 1)), RuntimeError,
         "torch.histogramdd: if weight tensor is provided it should have the same shape as the "
         "input tensor excluding its innermost dimension, but got input with shape [3, 2] and "
         "weight with shape [3, 1]"),
        (lambda: ft.histogramdd(x, 2, range=[4, 0, 0, 6]), RuntimeError,
         "torch.histogramdd: min should not exceed max, but got min 4 max 0 for dimension 0"),
        (lambda: ft.histogramdd(x.int(), 2), NotImplementedError,
         "\"histogramdd\" not implemented for 'Int'"),
    ]
    for fn, exc, msg in cases:
        with pytest.raises(exc, match="^" + re.escape(msg) + "$"):
            fn()


def test_histogramdd_vs_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    data = rng.standard_normal((40, 2)).astype(np.float32)
    for bins in (4, [3, 5]):
        got = ft.histogramdd(ft.tensor(data), bins, density=True)
        want = torch.histogramdd(torch.tensor(data), bins, density=True)
        np.testing.assert_allclose(got.hist.numpy(), want.hist.numpy(), rtol=1e-5)
        for g, w in zip(got.bin_edges, want.bin_edges):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)


# --------------------------------------------------------------------------- diff

def test_diff_argument_checks():
    x = ft.tensor([1, 3, 6])
    with pytest.raises(RuntimeError, match="^order must be non-negative but got -1$"):
        ft.diff(x, n=-1)
    with pytest.raises(IndexError, match=re.escape(
            "Dimension out of range (expected to be in range of [-1, 0], but got 2)")):
        ft.diff(x, dim=2)
    m = ft.tensor([[1, 3], [6, 10]])
    with pytest.raises(RuntimeError, match="^diff expects prepend or append to be the same "
                                           "dimension as input$"):
        ft.diff(m, prepend=ft.tensor([0]))
    with pytest.raises(RuntimeError, match=re.escape(
            "input.size(1) = 2, but got tensor.size(1) = 3")):
        ft.diff(m, dim=0, prepend=ft.tensor([[0, 1, 2]]))
    assert ft.diff(m, prepend=ft.tensor([[0], [1]])).tolist() == [[1, 2], [5, 4]]


def test_diff_order_zero_is_a_copy():
    x = ft.tensor([1.0, 3.0])
    y = ft.diff(x, n=0, dim=5)  # PyTorch checks no dim when there is nothing to do
    assert y.tolist() == [1.0, 3.0]
    y[0] = 7.0
    assert x.tolist() == [1.0, 3.0]


# --------------------------------------------------------------------------- tri indices

def test_tri_indices_checks():
    with pytest.raises(RuntimeError, match="^row must be non-negative, got-1$"):
        ft.tril_indices(-1, 3)
    with pytest.raises(RuntimeError, match="^col must be non-negative, got-2$"):
        ft.triu_indices(3, -2)
    with pytest.raises(NotImplementedError, match="\"tril_indices\" not implemented for 'Float'"):
        ft.tril_indices(3, 3, dtype=ft.float32)
    t = ft.tril_indices(3, 3, dtype=ft.int32)
    assert t.dtype == ft.int32 and t.tolist() == [[0, 1, 1, 2, 2, 2], [0, 0, 1, 0, 1, 2]]


# --------------------------------------------------------------------------- isclose

def test_isclose_dtype_message_and_bools():
    with pytest.raises(RuntimeError, match="^Long did not match Double$"):
        ft.isclose(ft.tensor([1, 2]), ft.tensor([1.0, 3.0], dtype=ft.float64))
    with pytest.raises(RuntimeError, match="^Float did not match Double$"):
        ft.isclose(ft.tensor([1.0]), ft.tensor([1.0], dtype=ft.float64))
    # PyTorch compares bools as numbers when a tolerance is given.
    assert ft.isclose(ft.tensor([True]), ft.tensor([False]), atol=1).tolist() == [True]
    assert ft.isclose(ft.tensor([True]), ft.tensor([False])).tolist() == [False]


# --------------------------------------------------------------------------- torch.testing

def _msg(fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 (we compare the type and message)
        return type(e).__name__, str(e)
    return "OK", ""


AC = ft.testing.assert_close

# (call, exception type, message) taken from PyTorch 2.15.
ASSERT_CLOSE_CASES = [
    (lambda: AC(_t([1.0, 2.0], F32), _t([1.0, 2.5], F32)), "AssertionError",
     "Tensor-likes are not close!\n\nMismatched elements: 1 / 2 (50.0%)\n"
     "Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)\n"
     "Greatest relative difference: 0.20000000298023224 at index (1,) (up to 1.3e-06 allowed)"),
    (lambda: AC(ft.tensor([1, 2]), ft.tensor([1, 3])), "AssertionError",
     "Tensor-likes are not equal!\n\nMismatched elements: 1 / 2 (50.0%)\n"
     "Greatest absolute difference: 1 at index (1,)\n"
     "Greatest relative difference: 0.3333333432674408 at index (1,)"),
    (lambda: AC(ft.tensor(1), ft.tensor(2)), "AssertionError",
     "Scalars are not equal!\n\nExpected 2 but got 1.\nAbsolute difference: 1\n"
     "Relative difference: 0.5"),
    (lambda: AC(1.0, 2.0), "AssertionError",
     "Scalars are not close!\n\nExpected 2.0 but got 1.0.\n"
     "Absolute difference: 1.0 (up to 1e-07 allowed)\n"
     "Relative difference: 0.5 (up to 1e-07 allowed)"),
    (lambda: AC(1, 2), "AssertionError",
     "Scalars are not equal!\n\nExpected 2 but got 1.\nAbsolute difference: 1\n"
     "Relative difference: 0.5"),
    (lambda: AC(1, 1.0), "AssertionError",
     "The (d)types do not match: <class 'int'> != <class 'float'>."),
    (lambda: AC(_t([1.0, np.nan]), _t([1.0, np.nan])), "AssertionError",
     "Tensor-likes are not close!\n\nMismatched elements: 1 / 2 (50.0%)\n"
     "Greatest absolute difference: nan at index (1,) (up to 1e-07 allowed)\n"
     "Greatest relative difference: nan at index (1,) (up to 1e-07 allowed)"),
    (lambda: AC(_t([np.inf]), _t([-np.inf])), "AssertionError",
     "Tensor-likes are not close!\n\nMismatched elements: 1 / 1 (100.0%)\n"
     "Greatest absolute difference: inf at index (0,) (up to 1e-07 allowed)\n"
     "Greatest relative difference: nan at index (0,) (up to 1e-07 allowed)"),
    (lambda: AC([_t([1.0]), _t([2.0])], [_t([1.0]), _t([3.0])]), "AssertionError",
     "Tensor-likes are not close!\n\nMismatched elements: 1 / 1 (100.0%)\n"
     "Greatest absolute difference: 1.0 at index (0,) (up to 1e-07 allowed)\n"
     "Greatest relative difference: 0.3333333333333333 at index (0,) (up to 1e-07 allowed)"
     "\n\nThe failure occurred for item [1]"),
    (lambda: AC({"a": 1}, {"b": 2}), "AssertionError",
     "The keys of the mappings do not match:\nMissing keys in the actual mapping: ['b']\n"
     "Additional keys in the actual mapping: ['a']"),
    (lambda: AC({"a": [1, 2]}, {"a": [1, 3]}, msg=lambda m: m.upper()), "AssertionError",
     "SCALARS ARE NOT EQUAL!\n\nEXPECTED 3 BUT GOT 2.\nABSOLUTE DIFFERENCE: 1\n"
     "RELATIVE DIFFERENCE: 0.3333333333333333\n\nTHE FAILURE OCCURRED FOR ITEM ['A'][1]"),
    (lambda: AC({"a": [1, 2]}, {"a": [1, 2, 3]}, msg="zz"), "AssertionError",
     "The length of the sequences mismatch: 2 != 3\n\nThe failure occurred for item ['a']"),
    (lambda: AC(_t([True, False]), _t([True, True])), "AssertionError",
     "Tensor-likes are not equal!\n\nMismatched elements: 1 / 2 (50.0%)\n"
     "Greatest absolute difference: 1 at index (1,)\n"
     "Greatest relative difference: 1.0 at index (1,)"),
    (lambda: AC(_t([1.0, 2.0], ft.float16), _t([1.0, 2.01], ft.float16)), "AssertionError",
     "Tensor-likes are not close!\n\nMismatched elements: 1 / 2 (50.0%)\n"
     "Greatest absolute difference: 0.009765625 at index (1,) (up to 1e-05 allowed)\n"
     "Greatest relative difference: 0.00485992431640625 at index (1,) (up to 0.001 allowed)"),
    (lambda: AC(np.array(1.0), np.array(2.0)), "AssertionError",
     "Scalars are not close!\n\nExpected 2.0 but got 1.0.\n"
     "Absolute difference: 1.0 (up to 1e-07 allowed)\n"
     "Relative difference: 0.5 (up to 1e-07 allowed)"),
    (lambda: AC(_t([1.0, 2.0]), _t([1.0, 2.5]), msg="custom"), "AssertionError", "custom"),
    (lambda: AC(True, False), "AssertionError", "Booleans mismatch: True is not False"),
    (lambda: AC(None, 1), "AssertionError", "None mismatch: None is not 1"),
    (lambda: AC(None, None), "OK", ""),
    (lambda: AC("a", "a"), "TypeError",
     "No comparison pair was able to handle inputs of type <class 'str'> and <class 'str'>."),
    (lambda: AC(_t([1.0]), _t([1.0]), rtol=0.1), "ValueError",
     "Both 'rtol' and 'atol' must be either specified or omitted, but got no atol."),
    (lambda: AC(_t([1.0, 2.0]), _t([1, 3]), check_dtype=False), "AssertionError",
     "Tensor-likes are not close!\n\nMismatched elements: 1 / 2 (50.0%)\n"
     "Greatest absolute difference: 1.0 at index (1,) (up to 1e-07 allowed)\n"
     "Greatest relative difference: 0.3333333333333333 at index (1,) (up to 1e-07 allowed)"),
    (lambda: AC(float("nan"), float("nan"), equal_nan=True), "OK", ""),
]


@pytest.mark.parametrize("case", range(len(ASSERT_CLOSE_CASES)))
def test_assert_close_messages(case):
    fn, exc, msg = ASSERT_CLOSE_CASES[case]
    assert _msg(fn) == (exc, msg)


def test_assert_allclose_is_deprecated_with_its_own_tolerances():
    with pytest.warns(FutureWarning, match="assert_allclose\\(\\)` is deprecated"):
        # 1e-5 relative: beyond assert_close's float32 tolerance, within assert_allclose's.
        ft.testing.assert_allclose(_t([1.0, 2.0], F32), _t([1.0, 2.00002], F32))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with pytest.raises(AssertionError, match="^boom$"):
            ft.testing.assert_allclose(_t([1.0, 2.0]), _t([1.0, 3.0]), msg="boom")
        ft.testing.assert_allclose(_t([1.0, np.nan]), [1.0, np.nan])  # NaNs equal by default


def test_assert_close_messages_vs_torch():
    torch = pytest.importorskip("torch")

    def run(lib, mk):
        try:
            mk(lib)
        except Exception as e:  # noqa: BLE001
            return type(e).__name__, str(e).replace("ferrotorch.", "torch.")
        return "OK", ""

    cases = [
        lambda L: L.testing.assert_close(L.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=L.bfloat16),
                                         L.tensor([[1.0, 2.0], [3.0, 4.1]], dtype=L.bfloat16)),
        lambda L: L.testing.assert_close(L.tensor([200], dtype=L.uint8),
                                         L.tensor([3], dtype=L.uint8)),
        lambda L: L.testing.assert_close(L.tensor(np.arange(10.0)),
                                         L.tensor(np.arange(10.0) + 0.5)),
        lambda L: L.testing.assert_close([[1, L.tensor([1.0])]], [[1, L.tensor([2.0])]]),
        lambda L: L.testing.assert_close(L.tensor([0.0, 0.0]), L.tensor([0.0, 1e-3])),
        lambda L: L.testing.assert_close(np.float32(1.0), np.float32(2.0)),
    ]
    for mk in cases:
        assert run(ft, mk) == run(torch, mk)


# --------------------------------------------------------------------------- misc messages

def test_fill_and_index_reduce_messages():
    with pytest.raises(RuntimeError, match="^fill_ only supports 0-dimension value tensor but "
                                           "got tensor with 1 dimensions.$"):
        ft.fill(ft.tensor([1.0, 2.0]), ft.tensor([3.0]))
    assert ft.fill(ft.tensor([1, 2]), ft.tensor(3.7)).tolist() == [3, 3]
    x = ft.zeros(2, 3, dtype=ft.float64)
    with pytest.raises(RuntimeError, match=re.escape(
            "index_reduce_(): self (Double) and source (Long) must have the same scalar type")):
        ft.index_reduce(x, 1, ft.tensor([0, 0]), ft.tensor([[1, 2], [3, 4]]), "mean")


def test_renorm_check_order_and_number_format():
    with pytest.raises(RuntimeError, match="^renorm: expected maxnorm to be >= 0 but got -1$"):
        ft.renorm(ft.ones(2, 2), 2, 0, -1.0)
    with pytest.raises(RuntimeError, match="but got -1e\\+10$"):
        ft.renorm(ft.ones(2, 2), 2, 0, -1e10)
    # The dimension check comes before the dtype check, as in PyTorch.
    with pytest.raises(RuntimeError, match="^renorm: input needs at least 2 dimensions, got 1 "
                                           "dimensions$"):
        ft.renorm(ft.tensor([1, 2]), 2, 0, 1.0)
    with pytest.raises(NotImplementedError, match="^linalg.vector_norm: Expected a floating "
                                                  "point or complex tensor as input. Got Long$"):
        ft.renorm(ft.ones(2, 2, dtype=ft.int64), 2, 0, 1.0)
    got = ft.renorm(ft.tensor([[3.0, 4.0], [0.3, 0.4]]), 2, 0, 1.0)
    np.testing.assert_allclose(got.numpy(), [[0.6, 0.8], [0.3, 0.4]], rtol=1e-6)


def test_dist_cdist_integer_inputs():
    with pytest.raises(NotImplementedError, match="^norm\\(\\): input dtype should be either "
                                                  "floating point or complex. Got Long instead.$"):
        ft.dist(ft.tensor([1, 2]), ft.tensor([3, 5]))
    with pytest.raises(RuntimeError, match="^cdist only supports floating-point dtypes, X1 got: "
                                           "Long$"):
        ft.cdist(ft.tensor([[0, 0]]), ft.tensor([[1, 0]]))
    with pytest.raises(RuntimeError, match="X2 got: Long$"):
        ft.cdist(ft.ones(1, 2), ft.ones(1, 2, dtype=ft.int64))
    assert ft.dist(ft.tensor([1.0, 2.0]), ft.tensor([3.0, 5.0]), 1).item() == 5.0


def test_finfo_iinfo_errors_and_equality():
    with pytest.raises(TypeError, match="^torch.finfo\\(\\) requires a floating point input "
                                        "type. Use torch.iinfo to handle 'torch.finfo'$"):
        ft.finfo(ft.int32)
    with pytest.raises(TypeError, match="^torch.iinfo\\(\\) requires an integer input type. Use "
                                        "torch.finfo to handle 'torch.iinfo'$"):
        ft.iinfo(ft.float32)
    with pytest.raises(TypeError, match="bool is not supported by torch.iinfo$"):
        ft.iinfo(ft.bool)
    assert ft.finfo(ft.float32) == ft.finfo(ft.float32) != ft.finfo(ft.float64)
    assert ft.iinfo(ft.int32) == ft.iinfo(ft.int32) != ft.iinfo(ft.int64)
    assert len({ft.finfo(ft.float32), ft.finfo(ft.float32)}) == 1


def test_set_dtype_mismatch_message():
    with pytest.raises(RuntimeError, match="^Could not set tensor of type double to a tensor of "
                                           "type float$"):
        ft.zeros(0).set_(ft.tensor([4.0, 5.0], dtype=ft.float64))


def test_gradient_of_uint8_is_not_implemented():
    with pytest.raises(NotImplementedError, match="^torch.gradient does not support uint8 "
                                                  "input.$"):
        ft.gradient(ft.tensor([1, 2, 4], dtype=ft.uint8))


# --------------------------------------------------------------------------- make_tensor

MT = ft.testing.make_tensor


def test_make_tensor_range_checks():
    with pytest.raises(ValueError, match="^`low` must be less than `high`, but got 5 >= 1$"):
        MT(2, dtype=ft.float32, device="cpu", low=5, high=1)
    with pytest.raises(ValueError, match="^`low` and `high` cannot be NaN, but got low=nan and "
                                         "high=9$"):
        MT(2, dtype=ft.float32, device="cpu", low=float("nan"))
    with pytest.raises(ValueError, match=re.escape(
            "The value interval specified by `low` and `high` is [300, 400), but "
            "ferrotorch.uint8 only supports [0, 256)")):
        MT(2, dtype=ft.uint8, device="cpu", low=300, high=400)
    with pytest.raises(ValueError, match="^`requires_grad=True` is not supported for boolean "
                                         "and integral dtypes, but got dtype=ferrotorch.int64$"):
        MT(3, dtype=ft.int64, device="cpu", requires_grad=True)
    with pytest.raises(ValueError, match="`noncontiguous` and `memory_format` are mutually "
                                         "exclusive"):
        MT(2, 3, dtype=ft.float32, noncontiguous=True, memory_format=ft.channels_last)
    with pytest.warns(FutureWarning, match="low==high"):
        assert MT(2, dtype=ft.float32, low=1, high=1).tolist() == [1.0, 1.0]


def test_make_tensor_clamps_and_rounds_the_range():
    ft.manual_seed(0)
    t = MT(200, dtype=ft.int8, low=-1000, high=1000)  # clamped to int8's range
    assert t.dtype == ft.int8 and int(t.min()) >= -128
    t = MT(200, dtype=ft.int64, low=3.5, high=5.5)  # integer bounds round up: [4, 6)
    assert set(t.tolist()) <= {4, 5}
    t = MT(100, dtype=ft.float32, low=-float("inf"), high=float("inf"))
    assert bool(t.isfinite().all())
    assert MT(50, dtype=ft.bool, low=1).all()
    assert int(MT(50, dtype=ft.int32, low=0, high=2, exclude_zero=True).min()) == 1


def test_make_tensor_layouts():
    t = MT(3, 4, dtype=ft.float32, noncontiguous=True)
    assert t.shape == (3, 4) and t.stride() == (8, 2) and t.storage_offset() == 1
    assert MT(1, dtype=ft.float32, noncontiguous=True).is_contiguous()  # one element: ignored
    t = MT(2, 3, 4, 5, dtype=ft.float32, memory_format=ft.channels_last)
    assert t.stride() == (60, 1, 15, 3)
    assert MT((2, 3), dtype=ft.float64).shape == (2, 3) and MT([], dtype=ft.float64).shape == ()


# --------------------------------------------------------------------------- out=

def _empty(dtype=F32):
    return ft.empty(0, dtype=dtype)


def test_out_for_index_and_scatter_functions():
    x = ft.ones(3, 3)
    got = ft.index_add(x, 0, ft.tensor([0]), ft.ones(1, 3), alpha=2, out=_empty())
    assert got.tolist() == [[3.0] * 3, [1.0] * 3, [1.0] * 3]
    out = _empty()
    assert ft.scatter_add(x, 0, ft.tensor([[0]]), ft.ones(1, 1), out=out) is out
    assert out.tolist() == [[2.0, 1.0, 1.0], [1.0] * 3, [1.0] * 3]
    got = ft.index_copy(x, 0, ft.tensor([1]), ft.zeros(1, 3), out=_empty())
    assert got.tolist() == [[1.0] * 3, [0.0] * 3, [1.0] * 3]
    got = ft.scatter_reduce(x, 0, ft.tensor([[0]]), ft.full((1, 1), 5.0), "amax", out=_empty())
    assert got[0, 0].item() == 5.0
    for fn in (lambda o: ft.index_add(x, 0, ft.tensor([0]), ft.ones(1, 3), out=o),
               lambda o: ft.scatter(x, 0, ft.tensor([[0]]), ft.ones(1, 1), out=o)):
        with pytest.raises(RuntimeError, match="^Expected out tensor to have dtype float, but "
                                               "got double instead$"):
            fn(_empty(ft.float64))


def test_out_dtype_rules_of_clamp_cummax_histc_searchsorted():
    x = ft.ones(3, 3)
    with pytest.raises(RuntimeError, match="^Found dtype Double but expected Float$"):
        ft.clamp(x, 1, 2, out=_empty(ft.float64))
    with pytest.raises(RuntimeError, match="^Found dtype Double but expected Long$"):
        ft.clamp(x.long(), 1, 2, out=_empty(ft.float64))
    # With a tensor bound the result is cast into out, as in PyTorch.
    assert ft.clamp_max(x, ft.ones(3), out=_empty(ft.float64)).dtype == ft.float64
    with pytest.raises(RuntimeError, match="^expected scalar_type Float but found Double$"):
        ft.cummax(x, 0, out=(_empty(ft.float64), _empty(ft.int64)))
    with pytest.raises(RuntimeError, match="^torch.histogram: input tensor and hist tensor "
                                           "should have the same dtype, but got input float "
                                           "and hist double$"):
        ft.histc(x, 3, out=_empty(ft.float64))
    with pytest.raises(RuntimeError, match="bin_edges tensor should have the same dtype, but got "
                                           "input float and bin_edges double for dimension 0$"):
        ft.histogram(x, 3, out=(_empty(), _empty(ft.float64)))
    msg = ("torch.searchsorted(): output tensor's dtype is wrong, it can only be Int(int32) or "
           "Long(int64) depending on whether out_int32 flag is True, but we got output tensor's "
           "dtype {} and out_int32 flag is {}")
    with pytest.raises(RuntimeError, match="^" + re.escape(msg.format("Int", False)) + "$"):
        ft.bucketize(ft.tensor([2.5]), ft.tensor([1.0, 2, 3]), out=_empty(ft.int32))
    with pytest.raises(RuntimeError, match="^" + re.escape(msg.format("Long", True)) + "$"):
        ft.searchsorted(ft.tensor([1.0, 2, 3]), ft.tensor([2.5]), out_int32=True,
                        out=_empty(ft.int64))
    got = ft.searchsorted(ft.tensor([1.0, 2, 3]), ft.tensor([2.5]), out_int32=True,
                          out=_empty(ft.int32))
    assert got.dtype == ft.int32 and got.tolist() == [2]


@pytest.mark.parametrize("call", [
    lambda o: ft.count_nonzero(ft.ones(3, 3), out=o),
    lambda o: ft.trace(ft.ones(3, 3), out=o),
    lambda o: ft.flip(ft.ones(3, 3), (0,), out=o),
    lambda o: ft.argsort(ft.ones(3, 3), out=o),
    lambda o: ft.std_mean(ft.ones(3, 3), 1, out=(o, _empty())),
    lambda o: ft.var_mean(ft.ones(3, 3), out=(o, _empty())),
])
def test_out_refused_where_pytorch_has_none(call):
    # These used to copy into out without resizing it (an empty out stayed empty).
    with pytest.raises(TypeError, match="unexpected keyword argument 'out'"):
        call(_empty())


# --------------------------------------------------------------------------- windows

def test_blackman_window_rounds_as_pytorch_in_bfloat16():
    got = ft.blackman_window(6, dtype=ft.bfloat16).float().tolist()
    assert got == [0.0, 0.130859375, 0.62890625, 1.0, 0.62890625, 0.126953125]
    np.testing.assert_allclose(ft.blackman_window(7, periodic=False, dtype=ft.float64).numpy(),
                               np.blackman(7), atol=1e-15)


def test_windows_vs_torch_in_half_precision():
    torch = pytest.importorskip("torch")
    for name in ("blackman_window", "hann_window", "hamming_window", "bartlett_window"):
        for dtype in ("bfloat16", "float16"):
            for n, periodic in ((7, True), (12, False)):
                got = getattr(ft, name)(n, periodic, dtype=getattr(ft, dtype)).float().numpy()
                want = getattr(torch, name)(n, periodic, dtype=getattr(torch, dtype)).float()
                np.testing.assert_array_equal(got, want.numpy())
