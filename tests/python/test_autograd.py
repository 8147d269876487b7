"""Autograd: graph recording, the backward engine, grad modes, safety checks, custom
Functions, gradchecks (float64 finite differences) and graph pictures."""

import math
import shutil
import threading

import numpy as np
import pytest

import ferrotorch as ft
from ferrotorch.autograd import Function, gradcheck, gradgradcheck


def leaf(a, dtype=ft.float64):
    return ft.tensor(np.asarray(a), dtype=dtype, requires_grad=True)


def rand(rng, *shape):
    return leaf(rng.standard_normal(shape))


# ---------------------------------------------------------------------------- basics


def test_leaf_flags_and_grad_fn_names():
    x = leaf([1.0, 2.0])
    assert x.is_leaf and x.requires_grad and x.grad_fn is None
    y = x * 2
    assert not y.is_leaf and y.requires_grad
    assert y.grad_fn.name() == "MulBackward0"
    z = y.exp()
    assert z.grad_fn.name() == "ExpBackward0"
    (nxt, nr), = z.grad_fn.next_functions
    assert nxt.name() == "MulBackward0" and nr == 0
    acc = y.grad_fn.next_functions[0][0]
    assert acc.name() == "AccumulateGrad" and acc.variable is not None
    assert y.grad_fn.next_functions[1][0] is None  # the scalar 2 needs no grad
    c = ft.tensor([1.0, 2.0])
    assert not (c * 2).requires_grad and (c * 2).grad_fn is None


def test_only_float_tensors_require_grad():
    with pytest.raises(RuntimeError, match="floating point"):
        ft.tensor([1, 2]).requires_grad_()
    t = ft.tensor([1.0])
    assert t.requires_grad_() is t and t.requires_grad


def test_accumulation_and_broadcast_reduction():
    x = leaf([[1.0, 2.0, 3.0]])  # (1, 3)
    b = leaf([[1.0], [2.0]])  # (2, 1)
    y = x * b  # (2, 3)
    y.backward(ft.tensor(np.ones((2, 3))))
    np.testing.assert_allclose(x.grad.numpy(), [[3.0, 3.0, 3.0]])
    np.testing.assert_allclose(b.grad.numpy(), [[6.0], [6.0]])
    (x * b).backward(ft.tensor(np.ones((2, 3))))
    np.testing.assert_allclose(x.grad.numpy(), [[6.0, 6.0, 6.0]])


def test_backward_needs_scalar_or_gradient():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="scalar outputs"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match="does not require grad"):
        ft.tensor([1.0]).backward()


def test_grad_function_and_higher_order():
    x = leaf([0.5, 1.5, -2.0])
    y = (x * x * x).sin()
    (g,) = ft.autograd.grad(y, x, ft.ones_like(y), create_graph=True)
    xv = np.array([0.5, 1.5, -2.0])
    np.testing.assert_allclose(g.detach().numpy(), np.cos(xv**3) * 3 * xv**2)
    assert x.grad is None  # grad() doesn't touch .grad
    (g2,) = ft.autograd.grad(g, x, ft.ones_like(g))
    expected = -np.sin(xv**3) * 9 * xv**4 + np.cos(xv**3) * 6 * xv
    np.testing.assert_allclose(g2.numpy(), expected, rtol=1e-10)


def test_grad_allow_unused_and_inputs_argument():
    x, z = leaf([1.0]), leaf([2.0])
    y = x * 3
    with pytest.raises(RuntimeError, match="allow_unused"):
        ft.autograd.grad(y, [x, z], ft.ones_like(y), retain_graph=True)
    gx, gz = ft.autograd.grad(y, [x, z], ft.ones_like(y), allow_unused=True)
    assert gz is None and gx.tolist() == [3.0]
    a, b = leaf([1.0]), leaf([2.0])
    (a * b).backward(ft.ones(1, dtype=ft.float64), inputs=[a])
    assert a.grad.tolist() == [2.0] and b.grad is None


def test_retain_grad_and_detach():
    x = leaf([1.0, 2.0])
    y = x * 3
    y.retain_grad()
    z = y * y
    z.backward(ft.ones_like(z))
    np.testing.assert_allclose(y.grad.numpy(), [6.0, 12.0])
    np.testing.assert_allclose(x.grad.numpy(), [18.0, 36.0])
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None
    assert d.data_ptr() == y.data_ptr()


def test_second_backward_raises_and_retain_graph_allows_it():
    x = leaf([1.0, 2.0])
    y = (x * x).exp()
    y.backward(ft.ones_like(y), retain_graph=True)
    y.backward(ft.ones_like(y))
    np.testing.assert_allclose(x.grad.numpy(), 2 * 2 * np.array([1.0, 2.0]) * np.exp([1.0, 4.0]))
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward(ft.ones_like(y))


# A node whose formula saved no tensor keeps it after backward, so such a graph can run
# backward again without retain_graph (the gradient accumulates); a node that saved one
# refuses. Which ops save what follows PyTorch 2.x (checked case by case against it).
_TWICE_OK = {
    "sum": lambda x: x.sum(),
    "mean_dim": lambda x: x.mean(0).sum(),
    "add_scalar": lambda x: (x + 1).sum(),
    "rsub_scalar": lambda x: (1 - x).sum(),
    "neg": lambda x: (-x).sum(),
    "add_tensors": lambda x: (x + x).sum(),
    "views": lambda x: x.reshape(3, 2).t().expand(2, 2, 3)[:, 1:, ::2].sum(),
    "cat_split": lambda x: ft.cat(x.split(1, 0), 1).sum(),
    "unbind_stack": lambda x: ft.stack(x.unbind(1), 0).sum(),
    "cast": lambda x: x.to(ft.float64).sum(),
    "cumsum": lambda x: x.cumsum(1).sum(),
    "clone": lambda x: x.clone().sum(),
    "select_int": lambda x: x[1].sum(),
}
_TWICE_GRAD = {
    "rsub_scalar": -2.0, "neg": -2.0, "add_tensors": 4.0, "mean_dim": 1.0,
    "views": [0, 4, 0, 0, 0, 4], "cumsum": [6, 4, 2, 6, 4, 2], "select_int": [0, 0, 0, 2, 2, 2],
}
_TWICE_RAISES = {
    "mul_scalar": lambda x: (x * 2).sum(),
    "rdiv_scalar": lambda x: (2 / x).sum(),
    "mul_tensors": lambda x: (x * x).sum(),
    "exp": lambda x: x.exp().sum(),
    "pow_half": lambda x: (x**0.5).sum(),
    "max": lambda x: x.max(),
    "index_tensor": lambda x: x[ft.tensor([1, 0])].sum(),
    "add_then_mul": lambda x: ((x + 1) * x).sum(),
}


@pytest.mark.parametrize("name", list(_TWICE_OK))
def test_second_backward_through_nodes_that_saved_nothing(name):
    x = ft.tensor(np.arange(1.0, 7.0).reshape(2, 3), requires_grad=True)
    y = _TWICE_OK[name](x)
    y.backward()
    y.backward()
    expected = np.broadcast_to(np.asarray(_TWICE_GRAD.get(name, 2.0), dtype=np.float64), (6,))
    np.testing.assert_allclose(x.grad.numpy().ravel(), expected)


@pytest.mark.parametrize("name", list(_TWICE_RAISES))
def test_second_backward_through_a_node_that_saved_a_tensor_raises(name):
    x = ft.tensor(np.arange(1.0, 7.0).reshape(2, 3), requires_grad=True)
    y = _TWICE_RAISES[name](x)
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


# Ops whose derivative is a function of their output save only the output (as PyTorch), so
# writing into their input afterwards breaks neither backward nor double backward: the
# second-order graph runs through the saved output. Values from PyTorch 2.x at x = [0.3, 0.6].
_OUTPUT_ONLY_GRADS = {
    "exp": ([1.349859, 1.822119], [1.349859, 1.822119]),
    "tanh": ([0.915137, 0.711578], [-0.533182, -0.764305]),
    "sigmoid": ([0.244458, 0.228784], [-0.036396, -0.066648]),
    "sqrt": ([0.912871, 0.645497], [-1.521452, -0.537914]),
    "rsqrt": ([-3.042903, -1.075829], [15.214515, 2.689572]),
    "reciprocal": ([-11.111111, -2.777778], [74.074074, 9.259259]),
    "expm1": ([1.349859, 1.822119], [1.349859, 1.822119]),
    "exp2": ([0.853364, 1.050615], [0.591507, 0.728231]),
    "tan": ([1.095689, 1.468043], [0.677873, 2.008685]),
}


@pytest.mark.parametrize("op", list(_OUTPUT_ONLY_GRADS))
def test_double_backward_of_output_only_ops_survives_inplace_on_input(op):
    x = ft.tensor([0.3, 0.6], dtype=ft.float64, requires_grad=True)
    a = x * 1
    y = getattr(a, op)()
    a.add_(1)
    (g,) = ft.autograd.grad(y.sum(), x, create_graph=True)
    (gg,) = ft.autograd.grad(g.sum(), x)
    g1, g2 = _OUTPUT_ONLY_GRADS[op]
    np.testing.assert_allclose(g.detach().numpy(), g1, rtol=1e-5)
    np.testing.assert_allclose(gg.numpy(), g2, rtol=1e-5)


def test_erfinv_saves_its_input():
    # PyTorch's erfinv backward reads x, so writing into x afterwards is an error
    x = ft.tensor([0.3, 0.6], dtype=ft.float64, requires_grad=True)
    a = x * 1
    y = a.erfinv()
    a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_output_saved_for_backward_modified_inplace_raises():
    x = ft.tensor([0.3, 0.6], dtype=ft.float64, requires_grad=True)
    y = x.exp()
    y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_inplace_on_leaf_requiring_grad_raises():
    x = leaf([1.0])
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.add_(1)
    with ft.no_grad():
        x.add_(1)  # allowed without recording
    assert x.tolist() == [2.0]


def test_modified_saved_tensor_raises():
    x = leaf([1.0, 2.0])
    y = x * 2
    z = y * y  # saves y
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward(ft.ones_like(z))


def test_inplace_on_non_leaf_rebases_history():
    x = leaf([1.0, 2.0])
    y = x * 2
    y.mul_(x)  # y = 2x * x
    assert y.grad_fn.name() == "MulBackward0"
    y.backward(ft.ones_like(y))
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 8.0])


def test_setitem_on_non_leaf_flows_to_base_and_value():
    x = leaf([1.0, 2.0, 3.0])
    v = leaf([10.0])
    y = x * 1
    y[1:2] = v * 2
    y.backward(ft.tensor([1.0, 1.0, 1.0], dtype=ft.float64))
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 0.0, 1.0])
    np.testing.assert_allclose(v.grad.numpy(), [2.0])


def test_hooks_replace_gradient_and_remove():
    x = leaf([1.0, 2.0])
    h = x.register_hook(lambda g: g * 10)
    (x * 1).backward(ft.ones_like(x))
    assert x.grad.tolist() == [10.0, 10.0]
    h.remove()
    x.grad = None
    (x * 1).backward(ft.ones_like(x))
    assert x.grad.tolist() == [1.0, 1.0]
    seen = []
    y = x * 3
    y.register_hook(lambda g: seen.append(g.tolist()))
    (y * 2).backward(ft.ones_like(y))
    assert seen == [[2.0, 2.0]]


# ---------------------------------------------------------------------------- grad modes


def test_no_grad_enable_grad_set_grad_enabled():
    x = leaf([1.0])
    with ft.no_grad():
        assert not (x * 2).requires_grad
        with ft.enable_grad():
            assert (x * 2).requires_grad
    assert (x * 2).requires_grad
    with ft.set_grad_enabled(False):
        assert not ft.is_grad_enabled()
    assert ft.is_grad_enabled()

    @ft.no_grad()
    def f(t):
        return t * 2

    @ft.no_grad
    def f2(t):
        return t * 2

    assert not f(x).requires_grad and not f2(x).requires_grad
    with ft.inference_mode():
        assert not (x * 2).requires_grad
        assert ft.autograd.is_inference_mode_enabled()
    assert not ft.autograd.is_inference_mode_enabled()


def test_grad_mode_is_thread_local():
    results = []
    with ft.no_grad():
        th = threading.Thread(target=lambda: results.append(ft.is_grad_enabled()))
        th.start()
        th.join()
        assert not ft.is_grad_enabled()
    assert results == [True]


# ---------------------------------------------------------------------------- gradchecks

UNARY = ["exp", "exp2", "expm1", "sin", "cos", "tan", "tanh", "sinh", "cosh", "sigmoid",
         "atan", "asinh", "erf", "erfc", "neg", "abs", "square", "silu", "relu", "frac"]
POSITIVE = ["log", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal", "acosh"]
UNIT = ["asin", "acos", "atanh", "erfinv"]


@pytest.mark.parametrize("name", UNARY + POSITIVE + UNIT)
def test_gradcheck_unary(rng, name):
    a = rng.standard_normal((3, 4))
    if name in POSITIVE:
        a = np.abs(a) + 1.1
    if name in UNIT:
        a = np.clip(a, -0.9, 0.9) * 0.9
    if name in ("abs", "relu", "frac"):
        a = np.where(np.abs(a - np.round(a)) < 0.1, a + 0.3, a)
    x = leaf(a)
    assert gradcheck(lambda t: getattr(t, name)(), (x,))
    # Non-contiguous input: the transpose of a contiguous leaf.
    xt = leaf(np.ascontiguousarray(a.T))
    assert gradcheck(lambda t: getattr(t.transpose(0, 1), name)(), (xt,))


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "pow", "atan2", "maximum",
                                "minimum", "remainder"])
def test_gradcheck_binary_broadcast(rng, op):
    a = np.abs(rng.standard_normal((3, 1, 4))) + 0.5
    b = np.abs(rng.standard_normal((2, 1))) + 0.5
    x, y = leaf(a), leaf(b)
    assert gradcheck(lambda u, v: getattr(u, op)(v), (x, y))


def test_gradcheck_scalar_operands_and_reflected(rng):
    x = leaf(np.abs(rng.standard_normal((2, 3))) + 0.5)
    assert gradcheck(lambda t: 2.0 / t + 3 - t ** 2.5 + 2 ** t, (x,))


def test_gradgradcheck_elementwise(rng):
    x = leaf(rng.standard_normal((2, 3)))
    y = leaf(np.abs(rng.standard_normal((2, 3))) + 0.5)
    assert gradgradcheck(lambda a, b: (a * b).sin() / b + a.exp(), (x, y))


def test_gradcheck_views(rng):
    x = rand(rng, 2, 3, 4)
    assert gradcheck(lambda t: t.transpose(0, 2).reshape(4, 6) * 2, (x,))
    assert gradcheck(lambda t: t.permute(2, 0, 1).unsqueeze(1).squeeze(1).exp(), (x,))
    assert gradcheck(lambda t: t.narrow(1, 1, 2).select(0, 1) * 3, (x,))
    assert gradcheck(lambda t: t[:, ::2, 1:].sin(), (x,))
    assert gradcheck(lambda t: t[0:1].expand(3, 3, 4) * 2, (x,))
    assert gradcheck(lambda t: t.flatten().view(4, 6).t(), (x,))


def test_gradcheck_casts(rng):
    x = rand(rng, 3)
    # float32 rounding inside the function limits finite-difference accuracy.
    assert gradcheck(lambda t: t.float().double() * t, (x,), eps=1e-3, atol=1e-3, rtol=1e-2)


# ---------------------------------------------------------------------------- Function


class Exp(Function):
    @staticmethod
    def forward(ctx, x):
        r = x.exp()
        ctx.save_for_backward(r)
        return r

    @staticmethod
    def backward(ctx, g):
        (r,) = ctx.saved_tensors
        return g * r


class MulConst(Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.k = k
        assert ctx.needs_input_grad == (True, False)
        return x * k

    @staticmethod
    def backward(ctx, g):
        return g * ctx.k, None


class SplitTwo(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(True)
        idx = (x > 0).long()
        ctx.mark_non_differentiable(idx)
        return x * 2, x * 3, idx

    @staticmethod
    def backward(ctx, g1, g2, gidx):
        return g1 * 2 + g2 * 3


def test_custom_function_forward_backward():
    x = leaf([0.5, -1.0])
    y = Exp.apply(x)
    assert y.grad_fn.name() == "ExpBackward"
    y.backward(ft.ones_like(y))
    np.testing.assert_allclose(x.grad.numpy(), np.exp([0.5, -1.0]))
    x.grad = None
    z = MulConst.apply(x, 4.0)
    z.backward(ft.ones_like(z))
    assert x.grad.tolist() == [4.0, 4.0]


def test_custom_function_multiple_outputs_and_materialize():
    x = leaf([1.0, -2.0])
    a, b, idx = SplitTwo.apply(x)
    assert not idx.requires_grad
    a.backward(ft.ones_like(a))  # b's gradient is materialized as zeros
    assert x.grad.tolist() == [2.0, 2.0]


def test_custom_function_gradcheck_and_no_grad_path():
    x = leaf([0.3, 0.7])
    assert gradcheck(Exp.apply, (x,))
    with ft.no_grad():
        assert not Exp.apply(x).requires_grad


def test_custom_function_graph_is_freed_without_backward():
    """Dropping a custom Function's output frees its node, ctx and saved tensors even when no
    backward ran and the output was saved for backward (no cycle through the Rust graph)."""
    import gc
    import weakref

    class Sentinel:
        pass

    refs = []

    class SavesOutput(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.sentinel = Sentinel()
            refs.append(weakref.ref(ctx.sentinel))
            r = x.exp()
            ctx.save_for_backward(r, x)
            return r

        @staticmethod
        def backward(ctx, g):
            r, _ = ctx.saved_tensors
            return g * r

    x = leaf([0.5, -1.0])
    y = SavesOutput.apply(x)
    z = SavesOutput.apply(y * 2)  # a chain of two custom nodes
    del y, z
    gc.collect()
    assert [r() for r in refs] == [None, None]
    # Mark-dirty outputs (the input itself, returned) are handled the same way.
    class AddOneInPlace(Function):
        @staticmethod
        def forward(ctx, t):
            ctx.sentinel = Sentinel()
            refs.append(weakref.ref(ctx.sentinel))
            t.add_(1)
            ctx.mark_dirty(t)
            ctx.save_for_backward(t)
            return t

        @staticmethod
        def backward(ctx, g):
            (t,) = ctx.saved_tensors
            return g

    w = AddOneInPlace.apply(x * 1)
    w.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]
    del w
    gc.collect()
    assert refs[-1]() is None


def test_custom_function_saved_output_keeps_its_history_for_double_backward():
    x = leaf([0.3, -0.8, 1.1])
    # d2/dx2 exp(x) = exp(x): needs the saved output's own history under create_graph.
    (g,) = ft.autograd.grad(Exp.apply(x).sum(), x, create_graph=True)
    (h,) = ft.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h.numpy(), np.exp(x.detach().numpy()), rtol=1e-14)
    assert gradgradcheck(Exp.apply, (x,))


def test_custom_function_error_from_backward_propagates():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom")

    y = Bad.apply(leaf([1.0]))
    # The original exception comes out unchanged (type and message), as in PyTorch.
    with pytest.raises(ValueError, match="^boom$"):
        y.backward(ft.ones_like(y))


def test_errors_raised_by_hooks_keep_their_type():
    x = leaf([1.0, 2.0])

    def bad_hook(g):
        raise KeyError("from hook")

    h = x.register_hook(bad_hook)
    with pytest.raises(KeyError, match="from hook"):
        (x * 2).sum().backward()
    h.remove()
    with ft.autograd.graph.saved_tensors_hooks(lambda t: t, lambda p: 1 / 0):
        y = (x * x).sum()
    with pytest.raises(ZeroDivisionError):
        y.backward()
    # The graph and the engine are still usable afterwards.
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


# ---------------------------------------------------------------------------- functional


def test_custom_function_with_separate_setup_context():
    # The "Extending PyTorch" style: forward(*args) without ctx, plus setup_context(ctx, inputs,
    # output); ``inputs`` holds every argument of forward, the defaults filled in.
    seen = []

    class LinearFunction(Function):
        @staticmethod
        def forward(input, weight, bias=None, scale=1.0):
            output = input.mm(weight.t()) * scale
            if bias is not None:
                output += bias.unsqueeze(0).expand_as(output)
            return output

        @staticmethod
        def setup_context(ctx, inputs, output):
            input, weight, bias, scale = inputs
            seen.append((len(inputs), scale, ft.is_grad_enabled()))
            ctx.scale = scale
            ctx.save_for_backward(input, weight, bias)

        @staticmethod
        def backward(ctx, grad_output):
            input, weight, bias = ctx.saved_tensors
            grad_input = grad_weight = grad_bias = None
            if ctx.needs_input_grad[0]:
                grad_input = grad_output.mm(weight) * ctx.scale
            if ctx.needs_input_grad[1]:
                grad_weight = grad_output.t().mm(input) * ctx.scale
            if bias is not None and ctx.needs_input_grad[2]:
                grad_bias = grad_output.sum(0)
            return grad_input, grad_weight, grad_bias, None

    x = ft.randn(3, 4, dtype=ft.float64, requires_grad=True)
    w = ft.randn(2, 4, dtype=ft.float64, requires_grad=True)
    b = ft.randn(2, dtype=ft.float64, requires_grad=True)
    assert gradcheck(LinearFunction.apply, (x, w, b), eps=1e-6, atol=1e-4)
    out = LinearFunction.apply(x, w)  # bias and scale default
    assert seen[-1] == (4, 1.0, False)
    out.sum().backward()
    assert ft.allclose(w.grad, ft.ones(3, 2, dtype=ft.float64).t().mm(x))
    out = LinearFunction.apply(x, w, scale=2.0)
    assert seen[-1][1] == 2.0
    assert ft.allclose(out, x.detach().mm(w.detach().t()) * 2.0)


def test_functional_jacobian_hessian_vjp_hvp():
    def f(x):
        return (x * x).sum() if hasattr(x, "sum") else None

    x = ft.tensor([1.0, 2.0, 3.0], dtype=ft.float64)
    j = ft.autograd.functional.jacobian(lambda t: t * t, x)
    np.testing.assert_allclose(j.numpy(), np.diag([2.0, 4.0, 6.0]))
    h = ft.autograd.functional.hessian(lambda t: (t * t * t).sum(), x)
    np.testing.assert_allclose(h.numpy(), np.diag([6.0, 12.0, 18.0]))
    out, v = ft.autograd.functional.vjp(lambda t: t.exp(), x, ft.ones_like(x))
    np.testing.assert_allclose(v.numpy(), np.exp([1.0, 2.0, 3.0]))
    _, hv = ft.autograd.functional.hvp(lambda t: (t * t * t).sum(), x, ft.ones_like(x))
    np.testing.assert_allclose(hv.numpy(), [6.0, 12.0, 18.0])


# ---------------------------------------------------------------------------- engine limits


def test_long_chain_backward_and_drop_do_not_overflow():
    x = leaf([1.0])
    y = x
    for _ in range(100_000):
        y = y * 1.0
    y.backward(ft.ones_like(y))
    assert x.grad.tolist() == [1.0]
    z = x
    for _ in range(100_000):
        z = z + 1.0
    del z  # dropping the graph is iterative too


def _rss_kb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4


def test_training_like_loop_memory_is_flat(rng):
    w = rand(rng, 32, 16)
    x = ft.tensor(rng.standard_normal((8, 32)))
    def step():
        y = (x @ w).tanh() if hasattr(x, "__matmul__") else (x.sum() * w).tanh()
        loss = (y * y).mean()
        loss.backward()
        with ft.no_grad():
            w.sub_(w.grad * 0.01)
        w.grad = None
    for _ in range(500):
        step()
    before = _rss_kb()
    for _ in range(10_000):
        step()
    after = _rss_kb()
    assert after - before < 20_000, f"RSS grew by {after - before} kB"


def test_graph_freed_when_output_dropped():
    import weakref

    x = leaf([1.0])
    y = (x * 2).exp()
    node = y.grad_fn
    r = weakref.ref(y)
    del y
    assert r() is None
    assert node.name() == "ExpBackward0"  # the wrapper keeps the node alive, no crash


# ---------------------------------------------------------------------------- viz


def test_make_dot_renders_png(tmp_path):
    graphviz = pytest.importorskip("graphviz")
    if shutil.which("dot") is None:
        pytest.skip("Graphviz 'dot' binary not installed")
    w = leaf(np.ones((2, 2)))
    b = leaf(np.ones(2))
    x = ft.tensor(np.ones(2), dtype=ft.float64)
    y = (w * x + b).tanh()
    dot = ft.viz.make_dot(y, params={"w": w, "b": b})
    src = dot.source
    assert "TanhBackward0" in src and "AddBackward0" in src and "w\n(2, 2)" in src
    out = dot.render(str(tmp_path / "graph"), format="png")
    with open(out, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert isinstance(dot, graphviz.Digraph)


def test_math_sanity():
    assert math.isclose(float(ft.tensor(2.0).exp()), math.exp(2.0), rel_tol=1e-6)


def test_retain_grad_runs_after_the_other_hooks_whenever_registered():
    h = ft.ones(3, requires_grad=True)
    y = h * 2
    y.retain_grad()
    y.register_hook(lambda g: g * 3)  # registered after retain_grad, still runs before it
    y.sum().backward()
    assert y.grad.tolist() == [3.0, 3.0, 3.0]
    assert h.grad.tolist() == [6.0, 6.0, 6.0]


def test_relu_second_order_reaches_parameters_behind_the_mask_with_zeros():
    # PyTorch's relu backward (threshold_backward) is differentiable in its input with a zero
    # gradient: a gradient penalty gives the bias a zero gradient, not None.
    ft.manual_seed(0)
    x = ft.randn(4, 3, requires_grad=True)
    w = ft.randn(3, 3, requires_grad=True)
    b = ft.randn(3, requires_grad=True)
    (g,) = ft.autograd.grad(ft.relu(x @ w.T + b).sum(), x, create_graph=True)
    g.pow(2).sum().backward()
    assert b.grad is not None and b.grad.tolist() == [0.0, 0.0, 0.0]
    assert w.grad is not None and float(w.grad.abs().sum()) > 0
    (g,) = ft.autograd.grad(ft.nn.functional.leaky_relu(x @ w.T + b, 0.1).sum(), x,
                            create_graph=True)
    assert g.grad_fn is not None


class _CubeOnce(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    @ft.autograd.function.once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x ** 2


def test_once_differentiable_backward_runs_without_grad_and_refuses_double_backward():
    x = ft.tensor([2.0], requires_grad=True)
    _CubeOnce.apply(x).sum().backward()
    assert x.grad.tolist() == [12.0]
    # create_graph with a constant grad output: the result is a plain tensor, as in PyTorch
    (g,) = ft.autograd.grad(_CubeOnce.apply(x), x, create_graph=True)
    assert g.tolist() == [12.0] and not g.requires_grad
    # a grad output that requires grad: differentiating the result again raises
    go = ft.ones(1, requires_grad=True)
    (g,) = ft.autograd.grad(_CubeOnce.apply(x), x, grad_outputs=go, create_graph=True)
    assert g.requires_grad and g.tolist() == [12.0]
    with pytest.raises(RuntimeError, match="differentiate twice a function that was marked "
                                           "with @once_differentiable"):
        ft.autograd.grad(g, x)


def test_grad_mode_decorated_generator_functions_set_the_mode_only_inside_the_body():
    x = ft.ones(1, requires_grad=True)

    @ft.no_grad
    def bare():
        yield x * 2
        assert not ft.is_grad_enabled()
        yield x * 3

    @ft.inference_mode()
    def echo():
        received = yield x * 2
        yield received

    seen = []
    for t in bare():
        seen.append((t.requires_grad, ft.is_grad_enabled()))
    assert seen == [(False, True), (False, True)]
    gen = echo()
    assert not next(gen).requires_grad and not ft.is_inference_mode_enabled()
    assert gen.send(7) == 7

    @ft.enable_grad()
    def inside_no_grad():
        yield x * 2

    with ft.no_grad():
        assert next(inside_no_grad()).requires_grad
