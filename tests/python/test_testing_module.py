"""ferrotorch.testing: assert_close (tolerances, checks, messages, containers) and
make_tensor."""

import numpy as np
import pytest

import ferrotorch as ft
from ferrotorch.testing import assert_allclose, assert_close, make_tensor


def test_assert_close_passes_within_default_tolerances():
    a = ft.tensor([1.0, 2.0, 3.0])
    assert_close(a, a + 1e-6)
    assert_close(a.double(), a.double() + 1e-8)
    assert_close(ft.tensor([1, 2]), ft.tensor([1, 2]))
    assert_close(ft.tensor(float("nan")), ft.tensor(float("nan")), equal_nan=True)
    assert_close(1.0, 1.0 + 1e-7)
    assert_close([a, {"x": a}], [a.clone(), {"x": a.clone()}])
    assert_close(np.ones(3), np.ones(3))
    assert_close(a.half(), (a + 1e-4).half())


def test_assert_close_reports_mismatch_like_torch():
    with pytest.raises(AssertionError) as e:
        assert_close(ft.tensor([1.0, 2.0, 3.0]), ft.tensor([1.0, 2.5, 3.0]))
    text = str(e.value)
    assert "Tensor-likes are not close!" in text
    assert "Mismatched elements: 1 / 3 (33.3%)" in text
    assert "Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)" in text
    assert "Greatest relative difference: 0.20000000298023224 at index (1,) (up to 1.3e-06 allowed)" in text
    with pytest.raises(AssertionError, match="Scalars are not equal"):
        assert_close(ft.tensor(1), ft.tensor(2))
    with pytest.raises(AssertionError, match="not close"):
        assert_close(ft.tensor(float("nan")), ft.tensor(float("nan")))


def test_assert_close_attribute_checks_and_options():
    a = ft.tensor([1.0, 2.0])
    with pytest.raises(AssertionError, match="'dtype' do not match"):
        assert_close(a, a.double())
    assert_close(a, a.double(), check_dtype=False)
    with pytest.raises(AssertionError, match="'shape' do not match"):
        assert_close(a, a.reshape(2, 1))
    with pytest.raises(AssertionError, match="custom"):
        assert_close(a, a + 1, msg="custom")
    with pytest.raises(AssertionError, match="^wrapped: Tensor-likes"):
        assert_close(a, a + 1, msg=lambda m: "wrapped: " + m)
    assert_close(a, a + 0.5, rtol=0.0, atol=0.5)
    with pytest.raises(ValueError, match="Both 'rtol' and 'atol'"):
        assert_close(a, a, rtol=1e-3)
    with pytest.raises(TypeError, match="No comparison pair"):
        assert_close(a, [1.0, 2.0])
    with pytest.raises(AssertionError, match="length of the sequences"):
        assert_close([a], [a, a])
    with pytest.raises(AssertionError, match=r"item \['k'\]"):
        assert_close({"k": a}, {"k": a + 1})
    b = ft.ones(2, 4)[:, ::2]
    with pytest.raises(AssertionError, match="stride"):
        assert_close(b, b.contiguous(), check_stride=True)
    with pytest.warns(FutureWarning, match="assert_allclose"):
        assert_allclose(a, [1.0, 2.0])


@pytest.mark.parametrize("dtype", [ft.float32, ft.float64, ft.int64, ft.uint8, ft.bool])
def test_make_tensor(dtype):
    ft.manual_seed(0)
    t = make_tensor(3, 4, dtype=dtype, low=-2, high=3)
    assert t.shape == (3, 4) and t.dtype == dtype
    v = t.double().numpy()
    if dtype == ft.bool:
        assert set(np.unique(v)) <= {0.0, 1.0}
    elif dtype == ft.uint8:
        assert v.min() >= 0 and v.max() < 3
    else:
        assert v.min() >= -2 and v.max() <= 3
    nc = make_tensor((2, 5), dtype=dtype, noncontiguous=True)
    assert not nc.is_contiguous() and nc.shape == (2, 5)
    if dtype.is_floating_point:
        g = make_tensor(2, dtype=dtype, requires_grad=True, exclude_zero=True)
        assert g.requires_grad and bool((g != 0).all())
