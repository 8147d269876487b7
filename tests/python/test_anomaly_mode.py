"""autograd.detect_anomaly / set_detect_anomaly: NaN checks of every gradient in backward and
the forward traceback of the failing op."""

import warnings

import pytest

import ferrotorch as ft


def nan_grad_graph():
    x = ft.tensor([0.0, 1.0], requires_grad=True)
    y = x.sqrt()  # d sqrt at 0 is inf; times 0 below gives NaN
    return x, (y * ft.tensor([0.0, 1.0])).sum()


def test_off_by_default_and_nan_passes_silently():
    assert not ft.autograd.is_anomaly_enabled()
    x, loss = nan_grad_graph()
    loss.backward()
    assert x.grad.isnan().any().item()


def test_detect_anomaly_names_the_node_and_forward_line():
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        mode = ft.autograd.detect_anomaly()
    with mode:
        assert ft.autograd.is_anomaly_enabled() and ft.is_anomaly_enabled()
        x, loss = nan_grad_graph()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(RuntimeError,
                               match=r"Function 'SqrtBackward0' returned nan values in its "
                                     r"0th output\."):
                loss.backward()
        msgs = [str(w.message) for w in caught]
        trace = [m for m in msgs if m.startswith("Error detected in SqrtBackward0")]
        assert trace, msgs
        assert "y = x.sqrt()" in trace[0] and "nan_grad_graph" in trace[0]
    assert not ft.autograd.is_anomaly_enabled()


def test_set_detect_anomaly_function_context_and_check_nan_flag():
    ft.autograd.set_detect_anomaly(True)
    try:
        assert ft.autograd.is_anomaly_enabled()
        with ft.autograd.set_detect_anomaly(True, check_nan=False):
            assert not ft.autograd.is_anomaly_check_nan_enabled()
            x, loss = nan_grad_graph()
            loss.backward()  # NaN checks off: passes
        assert ft.autograd.is_anomaly_check_nan_enabled()
    finally:
        ft.autograd.set_detect_anomaly(False)
    assert not ft.autograd.is_anomaly_enabled()


def test_decorator_and_errors_in_custom_function_backward():
    class Bad(ft.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom in backward")

    with pytest.warns(UserWarning):
        deco = ft.autograd.detect_anomaly()

    @deco
    def run():
        x = ft.ones(2, requires_grad=True)
        Bad.apply(x).sum().backward()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(Exception, match="boom in backward"):
            run()
    assert any("Error detected in" in str(w.message) and "Bad.apply(x)" in str(w.message)
               for w in caught)
    assert not ft.autograd.is_anomaly_enabled()


def test_clean_backward_unchanged_in_anomaly_mode():
    with ft.autograd.set_detect_anomaly(True):
        x = ft.tensor([1.0, 2.0], requires_grad=True)
        (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]


def test_matches_torch_message():
    torch = pytest.importorskip("torch")
    msgs = []
    for M in (torch, ft):
        with M.autograd.set_detect_anomaly(True):
            x = M.tensor([0.0, 1.0], requires_grad=True)
            loss = (x.sqrt() * M.tensor([0.0, 1.0])).sum()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with pytest.raises(RuntimeError) as e:
                    loss.backward()
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]
