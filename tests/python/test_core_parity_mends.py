"""Rust-core behaviours brought in line with PyTorch 2.15 after the parity sweeps: gradients
(xlogy at 0, undefined derivatives), error types and messages, integer clamp bounds, bool
inputs, 1-d nearest interpolation, and the fused backward of relu/softplus.

Expected values are hard-coded from torch 2.15 so the tests run without torch."""

import math

import numpy as np
import pytest

import ferrotorch as ft
import ferrotorch.nn.functional as F


def _grad(f, x):
    x = ft.tensor(x, dtype=ft.float64, requires_grad=True)
    (g,) = ft.autograd.grad(f(x).sum(), [x])
    return g.numpy()


# ------------------------------------------------------------------------------ gradients

def test_xlogy_gradient_at_zero_is_log_y_unless_y_nonpositive():
    y = ft.tensor([0.2, 0.3, 0.0, -1.0, 2.0], dtype=ft.float64)
    got = _grad(lambda x: ft.xlogy(x, y), [0.0, 1.0, 0.0, 0.0, 3.0])
    want = [math.log(0.2), math.log(0.3), 0.0, 0.0, math.log(2.0)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # a number `other` follows the same rule
    np.testing.assert_allclose(_grad(lambda x: ft.xlogy(x, 0.5), [0.0, 2.0]),
                               [math.log(0.5)] * 2, rtol=1e-12)
    np.testing.assert_allclose(_grad(lambda x: ft.xlogy(x, -0.5), [0.0]), [0.0])


def test_xlogy_gradient_broadcasts_and_double_backward():
    x = ft.tensor([[0.0], [2.0]], dtype=ft.float64, requires_grad=True)
    y = ft.tensor([0.5, 3.0], dtype=ft.float64, requires_grad=True)
    gx, gy = ft.autograd.grad(ft.xlogy(x, y).sum(), [x, y], create_graph=True)
    np.testing.assert_allclose(gx.detach().numpy(), [[math.log(1.5)]] * 2, rtol=1e-12)
    np.testing.assert_allclose(gy.detach().numpy(), [2 / 0.5, 2 / 3.0], rtol=1e-12)
    (ggy,) = ft.autograd.grad(gx.sum(), [y])
    np.testing.assert_allclose(ggy.numpy(), [2 / 0.5, 2 / 3.0], rtol=1e-12)


@pytest.mark.parametrize("fn, msg", [
    (lambda a, b: ft.special.zeta(a, b), "the derivative for 'zeta' is not implemented"),
    (lambda a, b: ft.igamma(a, b), "the derivative for 'igamma: input' is not implemented."),
    (lambda a, b: ft.igammac(a, b), "the derivative for 'igammac: input' is not implemented."),
])
def test_undefined_derivatives_raise_not_implemented(fn, msg):
    a = ft.tensor(2.0, requires_grad=True)
    with pytest.raises(NotImplementedError, match=msg):
        fn(a, ft.tensor(0.7)).backward()


# ------------------------------------------------------------------------- error types

@pytest.mark.parametrize("fn, msg", [
    (lambda: ft.tensor([1, 2]).mean(), "mean\\(\\): could not infer output dtype"),
    (lambda: ft.ones(2).mean(dtype=ft.int64), "Optional dtype must be either a floating"),
    (lambda: ft.std(ft.tensor([1, 2])), "std and var only support floating point"),
    (lambda: ft.var(ft.tensor([True])), "std and var only support floating point"),
    (lambda: ft.std_mean(ft.tensor([1, 2])), "std_mean only support floating point"),
    (lambda: ft.var_mean(ft.tensor([1, 2])), "var_mean only support floating point"),
    (lambda: ft.nanmean(ft.tensor([1, 2])), "nanmean\\(\\): expected input to have floating"),
    (lambda: ft.tensor([True]) - ft.tensor([False]), "with two bool tensors is not supported"),
    (lambda: ft.tensor([True]) - 1, "with a bool tensor is not supported"),
])
def test_unsupported_dtype_errors_are_not_implemented_error(fn, msg):
    with pytest.raises(NotImplementedError, match=msg):
        fn()


@pytest.mark.parametrize("fn, msg", [
    (lambda: ft.topk(ft.tensor([True, False]), 1), "topk does not support bool dtypes on CPU"),
    (lambda: ft.median(ft.tensor([True, False])), "\"median_cpu\" not implemented for 'Bool'"),
    (lambda: ft.nanmedian(ft.tensor([True, False])), "\"median_cpu\" not implemented for 'Bool'"),
    (lambda: ft.median(ft.tensor([True, False]), 0), "\"median_out\" not implemented for 'Bool'"),
    (lambda: ft.nanmedian(ft.tensor([True]), 0), "\"median_out\" not implemented for 'Bool'"),
    (lambda: ft.kthvalue(ft.tensor([True]), 1), "\"kthvalue_cpu\" not implemented for 'Bool'"),
    (lambda: ft.trace(ft.ones(2, 2, dtype=ft.bool)), "\"trace\" not implemented for 'Bool'"),
    (lambda: ft.cumsum(ft.tensor([1, 2]), 0, dtype=ft.bool),
     "\"cumsum_out_cpu\" not implemented for 'Bool'"),
    (lambda: F.relu(ft.tensor([True, False])), "Boolean inputs not supported for relu"),
])
def test_bool_inputs_without_kernels_are_refused(fn, msg):
    with pytest.raises(NotImplementedError, match=msg):
        fn()


def test_bool_ops_that_torch_supports_still_work():
    b = ft.tensor([True, False, True])
    assert ft.cumsum(b, 0).tolist() == [1, 1, 2]
    assert ft.sort(b).values.tolist() == [False, True, True]
    assert ft.argsort(b).tolist()[0] == 1


def test_reduction_messages():
    with pytest.raises(RuntimeError, match=r"kthvalue\(\): selected number k out of range for "
                                           r"dimension 1"):
        ft.kthvalue(ft.ones(3, 4), 5)
    with pytest.raises(RuntimeError, match="selected number k out of range for dimension 1"):
        ft.kthvalue(ft.ones(3, 4), 0)
    with pytest.raises(IndexError, match=r"kthvalue\(\): Expected reduction dim 1 to have "
                                         r"non-zero size."):
        ft.kthvalue(ft.ones(3, 0), 1)
    with pytest.raises(IndexError, match=r"median\(\): Expected reduction dim 0 to have non-zero"):
        ft.median(ft.zeros(0, 3), 0)
    with pytest.raises(IndexError, match=r"median\(\): Expected reduction dim 0 to have non-zero"):
        ft.nanmedian(ft.zeros(0, 3), 0)
    # no dim named: a RuntimeError; an empty named dim: an IndexError (as torch)
    for f in (ft.amax, ft.amin):
        with pytest.raises(RuntimeError, match="Expected reduction dim to be specified") as e:
            f(ft.zeros(0, 3))
        assert not isinstance(e.value, IndexError)
    with pytest.raises(IndexError, match=r"amax\(\): Expected reduction dim 0 to have non-zero"):
        ft.amax(ft.zeros(0, 3), 0)


@pytest.mark.parametrize("fn, msg", [
    (lambda: ft.ones(2, 3, 5) @ ft.ones(4, 3), r"^mm: mat1 and mat2 shapes cannot be multiplied "
                                                r"\(6x5 and 4x3\)$"),
    (lambda: ft.ones(2, 3) @ ft.ones(4, 5), r"^mm: mat1 and mat2 shapes cannot be multiplied "
                                            r"\(2x3 and 4x5\)$"),
    (lambda: ft.ones(4) @ ft.ones(2, 3), r"^mm: .*\(1x4 and 2x3\)$"),
    (lambda: F.linear(ft.ones(2, 3, 5), ft.ones(3, 4)), r"^mm: .*\(6x5 and 4x3\)$"),
    (lambda: F.linear(ft.ones(2, 3, 5), ft.ones(3, 4), ft.ones(3)), r"^addmm: .*\(6x5 and 4x3\)$"),
    (lambda: ft.nn.Linear(4, 3)(ft.ones(2, 5)), r"^addmm: .*\(2x5 and 4x3\)$"),
    (lambda: ft.bmm(ft.ones(2, 3, 5), ft.ones(2, 4, 3)),
     r"Expected size for first two dimensions of batch2 tensor to be: \[2, 5\] but got: \[2, 4\]"),
])
def test_matmul_shape_messages(fn, msg):
    with pytest.raises(RuntimeError, match=msg):
        fn()


# ---------------------------------------------------------------------- integer clamp

def test_integer_clamp_number_bounds_beyond_the_dtype():
    u8 = ft.tensor([1, 5, 9], dtype=ft.uint8)
    assert ft.clamp(u8, -1, 300).tolist() == [1, 5, 9]
    assert ft.clamp(u8, 10, 300).tolist() == [10, 10, 10]
    assert ft.clamp(u8, -300, 3).tolist() == [1, 3, 3]
    assert ft.clamp(u8, -300, 3).dtype == ft.uint8
    out = ft.clamp(u8, -1, 300)
    out[0] = 7  # a new tensor, not the input
    assert u8.tolist() == [1, 5, 9]
    assert ft.clamp(ft.tensor([1, 5, 9], dtype=ft.int8), min=-1000).tolist() == [1, 5, 9]
    with pytest.raises(RuntimeError, match="Clamp min value 300 is outside the representable "
                                           "range of Byte"):
        ft.clamp(u8, 300, 400)
    with pytest.raises(RuntimeError, match="Clamp max value -1 is outside the representable "
                                           "range of Byte"):
        ft.clamp(u8, None, -1)
    # a float bound promotes instead
    np.testing.assert_allclose(ft.clamp(u8, 2.5, 300).numpy(), [2.5, 5.0, 9.0])


# ------------------------------------------------------------------ 1-d nearest resize

def test_nearest_1d_applies_the_scale_without_size_shortcuts():
    x = ft.arange(3.0).reshape(1, 1, 3)
    # torch 2.15's 1-d kernel: a same-size or double-size output still samples floor(o / s)
    assert F.interpolate(x, scale_factor=1.3).flatten().tolist() == [0.0, 0.0, 1.0]
    assert F.interpolate(x, scale_factor=2.1).flatten().tolist() == [0, 0, 0, 1, 1, 2]
    got = F.interpolate(x, scale_factor=1.3, recompute_scale_factor=True)
    assert got.flatten().tolist() == [0.0, 1.0, 2.0]
    # the 2-d kernel keeps its shortcuts
    x2 = ft.arange(9.0).reshape(1, 1, 3, 3)
    assert F.interpolate(x2, scale_factor=1.3).flatten().tolist() == list(range(9))
    # gradients route to the sampled inputs
    xg = ft.arange(3.0).reshape(1, 1, 3).requires_grad_()
    F.interpolate(xg, scale_factor=2.1).sum().backward()
    assert xg.grad.flatten().tolist() == [3.0, 2.0, 1.0]


# ----------------------------------------------------------- fused relu/softplus backward

@pytest.mark.parametrize("dtype", [ft.float32, ft.float64])
def test_fused_softplus_and_relu_backward_match_the_differentiable_formula(dtype):
    rng = np.random.default_rng(0)
    xs = np.concatenate([rng.normal(0, 12, 200), [0.0, 20.0, 20.5, -40.0, 40.0, np.nan]])
    for beta, threshold in [(1.0, 20.0), (2.0, 5.0), (0.5, 1.0)]:
        fused = ft.tensor(xs, dtype=dtype, requires_grad=True)
        F.softplus(fused, beta, threshold).sum().backward()
        graph = ft.tensor(xs, dtype=dtype, requires_grad=True)
        (g,) = ft.autograd.grad(F.softplus(graph, beta, threshold).sum(), [graph],
                                create_graph=True)
        np.testing.assert_allclose(fused.grad.numpy(), g.detach().numpy(), rtol=1e-6,
                                   atol=1e-30)
        bx = beta * xs
        with np.errstate(over="ignore"):
            want = np.where(bx > threshold, 1.0, 1 / (1 + np.exp(-bx)))
        np.testing.assert_allclose(fused.grad.numpy(), want, rtol=2e-6)
    fused = ft.tensor(xs, dtype=dtype, requires_grad=True)
    F.relu(fused).sum().backward()
    np.testing.assert_array_equal(fused.grad.numpy(), (xs > 0).astype(np.float64))
    # an expanded (stride-0) upstream gradient and a strided input
    x = ft.tensor(rng.normal(size=(6, 4)), dtype=dtype, requires_grad=True)
    F.softplus(x.t()).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 1 / (1 + np.exp(-x.detach().numpy())),
                               rtol=2e-6)


def test_softplus_gradgradcheck():
    x = ft.tensor(np.linspace(-3, 3, 7), dtype=ft.float64, requires_grad=True)
    # (threshold 5: no point sits on the switch, where finite differences straddle it)
    assert ft.autograd.gradgradcheck(lambda t: F.softplus(t, 2.0, 5.0), (x,))


# ---------------------------------------------------- engine callbacks and multi-grad hooks

def test_queue_callback_runs_at_the_end_of_the_pass():
    from ferrotorch.autograd import Variable

    log = []
    x = ft.ones(3, requires_grad=True)
    y = x * 2

    def hook(g):
        log.append("hook")
        Variable._execution_engine.queue_callback(lambda: log.append("final"))

    y.register_hook(hook)
    x.register_hook(lambda g: log.append("leaf"))
    y.sum().backward()
    assert log == ["hook", "leaf", "final"]
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(RuntimeError, match="Final callbacks can only be installed during "
                                           "backward pass."):
        Variable._execution_engine.queue_callback(lambda: None)


def test_queue_callback_errors_propagate_out_of_backward():
    from ferrotorch.autograd import Variable

    x = ft.ones(2, requires_grad=True)

    def boom():
        raise KeyError("from the final callback")

    x.register_hook(lambda g: Variable._execution_engine.queue_callback(boom))
    with pytest.raises(KeyError, match="from the final callback"):
        (x * 3).sum().backward()


def test_multi_grad_hook_all_mode_passes_that_skip_a_tensor():
    from ferrotorch.autograd import graph

    a = ft.ones(2, requires_grad=True)
    b = ft.ones(2, requires_grad=True)
    calls = []
    graph.register_multi_grad_hook(
        (a, b), lambda gs: calls.append([None if g is None else g.tolist() for g in gs]))
    (a * 2 + b * 3).sum().backward()
    assert calls == [[[2.0, 2.0], [3.0, 3.0]]]
    (a * 5).sum().backward()  # b takes no part: fn runs at the end of this pass, b's is None
    assert calls[1] == [[5.0, 5.0], None]
    (b * 7).sum().backward()
    assert calls[2] == [None, [7.0, 7.0]]
    assert len(calls) == 3


def test_multi_grad_hook_any_mode_fires_once_per_pass():
    from ferrotorch.autograd import graph

    a = ft.ones(2, requires_grad=True)
    b = ft.ones(2, requires_grad=True)
    firsts = []
    handle = graph.register_multi_grad_hook((a, b), lambda g: firsts.append(g.tolist()),
                                            mode="any")
    (a * 2 + b * 3).sum().backward()
    assert len(firsts) == 1
    (b * 4).sum().backward()
    (b * 5).sum().backward()  # the same tensor first in two passes: two calls
    assert firsts[1:] == [[4.0, 4.0], [5.0, 5.0]]
    handle.remove()
    (a * 2).sum().backward()
    assert len(firsts) == 3


# ------------------------------------------------------------- in-place view ops on leaves

@pytest.mark.parametrize("op", [lambda a: a.squeeze_(), lambda a: a.unsqueeze_(0),
                                lambda a: a.t_(), lambda a: a.transpose_(0, 1),
                                lambda a: a.swapdims_(0, 1),
                                lambda a: a.as_strided_((2,), (1,))])
def test_inplace_view_ops_on_a_leaf_that_requires_grad(op):
    a = ft.ones(2, 1, requires_grad=True)
    with ft.no_grad():
        assert op(a) is a
    assert a.requires_grad and a.is_leaf  # still a trainable leaf, with the new shape
    (a * 3).sum().backward()
    assert a.grad.tolist() == (a * 0 + 3).tolist()
    b = ft.ones(2, 1, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in "
                                           "an in-place operation"):
        op(b)
    c = ft.ones(2, 1, requires_grad=True) * 2  # a non-leaf is rebased onto the view
    op(c)
    assert c.grad_fn is not None


# ------------------------------------------------------------------- wide lstsq gradients

def test_lstsq_of_a_wide_matrix_is_differentiable():
    rng = np.random.default_rng(3)
    A = ft.tensor(rng.normal(size=(2, 3, 5)), requires_grad=True)
    B = ft.tensor(rng.normal(size=(2, 3, 2)), requires_grad=True)
    assert ft.autograd.gradcheck(lambda a, b: ft.linalg.lstsq(a, b).solution, (A, B))
    b = ft.tensor(rng.normal(size=(2, 3)), requires_grad=True)  # the vector form
    assert ft.autograd.gradcheck(lambda a, v: ft.linalg.lstsq(a, v).solution, (A, b))
    # the minimum-norm solution and its gradient, as torch 2.15 (pinv(A) @ B)
    x = ft.linalg.lstsq(A, B).solution
    np.testing.assert_allclose(x.detach().numpy(),
                               np.linalg.pinv(A.detach().numpy()) @ B.detach().numpy(),
                               rtol=1e-10, atol=1e-12)


def test_size_and_stride_of_a_0d_tensor_raise_index_error():
    t = ft.tensor(1.0)
    for f in (lambda: t.size(0), lambda: t.stride(0), lambda: t.size(-1)):
        with pytest.raises(IndexError, match="Dimension specified as -?[01] but tensor has no "
                                             "dimensions"):
            f()
    assert t.size() == () and t.stride() == ()
    assert ft.ones(2, 3).stride(-2) == 3 and ft.ones(2, 3).size(-1) == 3


def test_dtype_and_device_pickle():
    import copy
    import pickle

    for dt in (ft.float64, ft.float16, ft.bfloat16, ft.int8, ft.bool, ft.ones(1).dtype):
        assert pickle.loads(pickle.dumps(dt)) is dt
        assert copy.deepcopy(dt) is dt
    for d in (ft.device("cpu"), ft.device("cuda:1"), ft.device("cuda", 0)):
        back = pickle.loads(pickle.dumps(d))
        assert back == d and str(back) == str(d)
