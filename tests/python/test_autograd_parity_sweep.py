"""Regression tests from a differential parity sweep of ``ferrotorch.autograd``, ``ferrotorch.func``
and ``ferrotorch.utils.checkpoint`` against PyTorch.

The expected values are hard-coded (taken from PyTorch 2.15) or computed with NumPy, so the
tests run without torch; the ``*_vs_torch`` tests compare directly when torch is installed.
"""

import itertools
import warnings

import numpy as np
import pytest

import ferrotorch as ft
from ferrotorch.autograd import graph
from ferrotorch.utils import checkpoint as ckpt


def _x(*vals, rg=True, dtype=ft.float64):
    return ft.tensor(np.array(vals or [1.0, 2.0, 3.0]), dtype=dtype, requires_grad=rg)


def _fn(forward, backward, **extra):
    """A custom autograd.Function class from two plain functions."""
    ns = {"forward": staticmethod(forward), "backward": staticmethod(backward)}
    ns.update(extra)
    return type("MyFn", (ft.autograd.Function,), ns)


# --------------------------------------------------------------------------- autograd.grad


def test_grad_unused_input_message_and_materialize():
    a, b = _x(), _x()
    with pytest.raises(RuntimeError, match=r"^The differentiated Tensor at index 1 appears to "
                                           r"not have been used in the graph. Set "
                                           r"allow_unused=True"):
        ft.autograd.grad((a * a).sum(), [a, b])
    with pytest.raises(ValueError, match="^Expected allow_unused to be True or not passed when "
                                         "materialize_grads=True, but got: allow_unused=False.$"):
        ft.autograd.grad((a * a).sum(), [a, b], allow_unused=False, materialize_grads=True)
    ga, gb = ft.autograd.grad((a * a).sum(), [a, b], materialize_grads=True, create_graph=True)
    np.testing.assert_allclose(ga.detach().numpy(), [2.0, 4.0, 6.0])
    np.testing.assert_allclose(gb.detach().numpy(), [0.0, 0.0, 0.0])
    assert gb.requires_grad  # zeros_like(input, requires_grad=create_graph)


def test_grad_argument_errors():
    a = _x()
    with pytest.raises(RuntimeError, match="^`inputs` argument to `grad\\(\\)` cannot be empty.$"):
        ft.autograd.grad((a * 2).sum(), [])
    with pytest.raises(RuntimeError, match=r"^Mismatch in shape: grad_output\[0\] has a shape of "
                                           r".*Size\(\[2\]\) and output\[0\] has a shape of "
                                           r".*Size\(\[3\]\).$"):
        ft.autograd.grad(a * 2, a, ft.ones(2))
    with pytest.raises(RuntimeError, match="^grad can be implicitly created only for scalar "
                                           "outputs$"):
        ft.autograd.grad(a * 2, a)
    with pytest.raises(RuntimeError, match="^element 1 of tensors does not require grad and does "
                                           "not have a grad_fn$"):
        ft.autograd.grad([(a * 2).sum(), a.detach().sum()], [a])
    with pytest.raises(RuntimeError, match="^One of the differentiated Tensors does not require "
                                           "grad$"):
        ft.autograd.grad((a * 2).sum(), [a, _x(rg=False)], allow_unused=True)
    with pytest.raises(RuntimeError, match="^all inputs have to be Tensors or GradientEdges, but "
                                           "got int$"):
        ft.autograd.grad((a * 2).sum(), [a, 3])
    with pytest.raises(RuntimeError, match="^got 2 tensors and 1 gradients$"):
        ft.autograd.grad([a.sum(), a.sum()], [a], [ft.tensor(3.0, dtype=ft.float64)])
    with pytest.raises(TypeError, match="^gradients can be either Tensors or None, but got "
                                        "float$"):
        ft.autograd.grad([a.sum()], [a], [3.0])
    with pytest.warns(FutureWarning, match="only_inputs argument is deprecated"):
        (g,) = ft.autograd.grad((a * 2).sum(), a, only_inputs=False)
    np.testing.assert_allclose(g.numpy(), [2.0, 2.0, 2.0])


def test_grad_batched_checks():
    a = _x()
    with pytest.raises(RuntimeError, match=r"^If `is_grads_batched=True`, we interpret the first "
                                           r"dimension .* grad_output\[0\] has a shape of "
                                           r".*Size\(\[4\]\) and output\[0\] has a shape of "
                                           r".*Size\(\[3\]\). If you only want"):
        ft.autograd.grad(a * 2, a, ft.ones(2, 4, dtype=ft.float64), is_grads_batched=True)
    (g,) = ft.autograd.grad(a ** 2, a, ft.eye(3, dtype=ft.float64), is_grads_batched=True)
    np.testing.assert_allclose(g.numpy(), np.diag([2.0, 4.0, 6.0]))


def test_grad_and_backward_dict_inputs():
    a, b = _x(), _x(4.0, 5.0, 6.0)
    res = ft.autograd.grad((a * b).sum(), {"a": a, "b": b})
    assert list(res) == ["a", "b"]
    np.testing.assert_allclose(res["a"].numpy(), [4.0, 5.0, 6.0])
    np.testing.assert_allclose(res["b"].numpy(), [1.0, 2.0, 3.0])
    ft.autograd.backward((a * b).sum(), inputs={"a": a})
    np.testing.assert_allclose(a.grad.numpy(), [4.0, 5.0, 6.0])
    assert b.grad is None


def test_backward_arguments():
    a = _x()
    with pytest.raises(RuntimeError, match="^`inputs` argument to `backward\\(\\)` cannot be "
                                           "empty.$"):
        ft.autograd.backward((a * 2).sum(), inputs=[])
    with pytest.raises(RuntimeError, match="^can't retain_grad on Tensor that has "
                                           "requires_grad=False$"):
        ft.autograd.backward((a * 2).sum(), inputs=a.detach())
    with pytest.warns(FutureWarning, match="`grad_variables` is deprecated"):
        ft.autograd.backward((a * a).sum(), grad_variables=ft.tensor(2.0, dtype=ft.float64))
    np.testing.assert_allclose(a.grad.numpy(), [4.0, 8.0, 12.0])
    with pytest.raises(RuntimeError, match="^got 2 tensors and 1 gradients$"):
        ft.autograd.backward([a.sum(), a.sum()], [ft.tensor(1.0, dtype=ft.float64)])
    # Several tensors sharing a graph: it is freed after the last one (retain_graph=None).
    h = a * a
    y1, y2 = h.sum(), (h * 2).sum()
    ft.autograd.backward([y1, y2])
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y1.backward()


# --------------------------------------------------------------------------- autograd.Function


def _sq_forward(ctx, a):
    ctx.save_for_backward(a)
    return a * a


def _sq_backward(ctx, g):
    (a,) = ctx.saved_tensors
    return 2 * a * g


def test_function_saved_tensors_freed_after_backward():
    store = {}

    def forward(ctx, a):
        store["ctx"] = ctx
        return _sq_forward(ctx, a)

    fn = _fn(forward, _sq_backward)
    a = _x()
    y = fn.apply(a)
    y.sum().backward(retain_graph=True)
    np.testing.assert_allclose(store["ctx"].saved_tensors[0].detach().numpy(), [1.0, 2.0, 3.0])
    y.sum().backward()
    with pytest.raises(RuntimeError, match=r"^Trying to backward through the graph a second time "
                                           r"\(or directly access saved tensors after they have "
                                           r"already been freed\). Saved intermediate values"):
        _ = store["ctx"].saved_tensors
    with pytest.raises(RuntimeError, match="saved tensors after they have already been freed"):
        _ = y.grad_fn.saved_tensors
    np.testing.assert_allclose(a.grad.numpy(), [4.0, 8.0, 12.0])


def test_function_grad_fn_reads_the_ctx():
    def forward(ctx, a, k):
        ctx.k = k
        return _sq_forward(ctx, a)

    fn = _fn(forward, lambda ctx, g: (_sq_backward(ctx, g) * ctx.k, None))
    a = _x()
    y = fn.apply(a, 3.0)
    node = y.grad_fn
    assert type(node).__name__ == "MyFnBackward"
    assert isinstance(node, ft.autograd.function.BackwardCFunction)
    assert isinstance(node, graph.Node)
    assert node.k == 3.0 and node.needs_input_grad == (True, False)
    np.testing.assert_allclose(node.saved_tensors[0].detach().numpy(), [1.0, 2.0, 3.0])
    with pytest.raises(AttributeError):
        _ = node.not_there


def test_function_returned_gradient_checks():
    def fwd2(ctx, a):
        return a * 2

    a = _x()
    fn = _fn(fwd2, lambda ctx, g: (g * 2, g))
    with pytest.raises(RuntimeError, match=r"^function MyFnBackward returned an incorrect number "
                                           r"of gradients \(expected 1, got 2\)$"):
        fn.apply(a).sum().backward()
    _fn(fwd2, lambda ctx, g: (g * 2, None, None)).apply(a).sum().backward()  # extra Nones: fine
    np.testing.assert_allclose(a.grad.numpy(), [2.0, 2.0, 2.0])
    fn = _fn(lambda ctx, a, k: a * k, lambda ctx, g: (g, 1.0))
    with pytest.raises(RuntimeError, match="^function MyFnBackward returned a gradient different "
                                           "than None at position 2, but the corresponding "
                                           "forward input was not a Variable$"):
        fn.apply(_x(), 2.0).sum().backward()
    with pytest.raises(RuntimeError, match=r"^expected Variable or None \(got int\)$"):
        _fn(fwd2, lambda ctx, g: 3).apply(_x()).sum().backward()
    with pytest.raises(RuntimeError, match=r"^Function MyFnBackward returned an invalid gradient "
                                           r"at index 0 - got \[\] but expected shape compatible "
                                           r"with \[3\]$"):
        _fn(fwd2, lambda ctx, g: g.sum()).apply(_x()).sum().backward()
    # a broadcast gradient is summed to the input's shape; the dtype is cast to the input's
    a = _x(dtype=ft.float32)
    _fn(fwd2, lambda ctx, g: ft.ones(2, 3, dtype=ft.float64)).apply(a).sum().backward()
    assert a.grad.dtype == ft.float32
    np.testing.assert_allclose(a.grad.numpy(), [2.0, 2.0, 2.0])


def test_function_misuse_messages():
    def fwd(ctx, a):
        ctx.save_for_backward(a, 3)
        return a

    with pytest.raises(TypeError, match="^save_for_backward can only save variables, but "
                                        "argument 1 is of type int$"):
        _fn(fwd, lambda ctx, g: g).apply(_x())
    fn = _fn(_sq_forward, _sq_backward)
    with pytest.warns(DeprecationWarning, match="should not be instantiated"):
        obj = fn()
    with pytest.raises(RuntimeError, match="^Legacy autograd function with non-static forward "
                                           "method is deprecated"):
        obj(_x())


def test_function_vjp_alias_and_mark_dirty():
    a = _x(1.0, 2.0)
    fn = type("H", (ft.autograd.Function,), {"forward": staticmethod(lambda ctx, t: t * 2),
                                              "vjp": staticmethod(lambda ctx, g: g * 5)})
    fn.apply(a).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [5.0, 5.0])
    both = type("B", (fn,), {"backward": staticmethod(lambda ctx, g: g)})
    with pytest.raises(RuntimeError, match="^Implementing both 'backward' and 'vjp' for a custom "
                                           "Function is not allowed."):
        both.apply(a).sum().backward()
    with pytest.raises(NotImplementedError, match="^You must implement either the backward or "
                                                  "vjp method"):
        type("N", (ft.autograd.Function,),
             {"forward": staticmethod(lambda ctx, t: t * 2)}).apply(a).sum().backward()

    def dirty_forward(ctx, t):
        ctx.mark_dirty(t)
        t.mul_(2)
        ctx.save_for_backward(t)  # saved after the in-place change: no version error
        return t

    def dirty_backward(ctx, g):
        with pytest.warns(DeprecationWarning, match="'saved_variables' is deprecated"):
            (t,) = ctx.saved_variables
        return g * t

    x = _x()
    b = x * 1
    y = _fn(dirty_forward, dirty_backward).apply(b)
    assert y is b and b._version == 2  # mul_ and mark_dirty each bump the version
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])
    with pytest.raises(RuntimeError, match="^Some elements marked as dirty during the forward "
                                           "method were not returned as output."):
        _fn(lambda ctx, t: (ctx.mark_dirty(t), t * 2)[1], lambda ctx, g: g).apply(x * 1)


# --------------------------------------------------------------------------- autograd.graph


def test_register_multi_grad_hook_all_and_any():
    a, b = _x(), _x()
    seen = []
    handle = graph.register_multi_grad_hook(
        (a, b), lambda grads: seen.append([g.tolist() for g in grads]))
    (a * 2 + b * 3).sum().backward()
    assert seen == [[[2.0] * 3, [3.0] * 3]]
    handle.remove()
    (a * 2 + b * 3).sum().backward()
    assert len(seen) == 1
    first = []
    graph.register_multi_grad_hook((a, b), lambda g: first.append(g.tolist()), mode="any")
    (a * 2 + b * 3).sum().backward()
    (a * 5 + b * 7).sum().backward()
    assert len(first) == 2 and first[0] in ([2.0] * 3, [3.0] * 3)
    with pytest.raises(ValueError, match=r"^Expects mode to be one of \('all', 'any'\) but got "
                                         r"foo$"):
        graph.register_multi_grad_hook((a, b), lambda g: None, mode="foo")


def test_allow_mutation_on_saved_tensors():
    a = _x()
    with graph.allow_mutation_on_saved_tensors():
        b = a * 1
        z = b.sin()
        b.mul_(2)  # b was saved by sin: backward still sees the old values
        z.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.cos([1.0, 2.0, 3.0]))
    with pytest.raises(RuntimeError, match="contexts cannot be nested"):
        with graph.allow_mutation_on_saved_tensors():
            with graph.allow_mutation_on_saved_tensors():
                pass
    with graph.allow_mutation_on_saved_tensors():
        y = a.exp()
    with pytest.raises(AssertionError, match="Trying to backward outside of the "
                                             "'allow_mutation_on_saved_tensors' context"):
        y.sum().backward()


def test_disable_saved_tensors_hooks_refuses_saving_under_outer_hooks():
    a = _x()
    with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        with graph.disable_saved_tensors_hooks("no hooks here"):
            with pytest.raises(RuntimeError, match="^no hooks here$"):
                a.exp()
        y = a.exp()  # the outer hooks work again
    with graph.disable_saved_tensors_hooks("no hooks here"):
        z = a.exp()  # no outer hooks: saving is fine
        with pytest.raises(RuntimeError, match="^no hooks here$"):
            with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
    (y + z).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 2 * np.exp([1.0, 2.0, 3.0]))


def test_increment_version():
    a = _x()
    graph.increment_version(a)
    graph.increment_version([a, a])
    assert a._version == 3
    np.testing.assert_allclose(a.detach().numpy(), [1.0, 2.0, 3.0])


# --------------------------------------------------------------------------- grad modes


def test_set_grad_enabled_as_decorator_and_type_checks():
    @ft.set_grad_enabled(False)
    def f():
        return ft.is_grad_enabled()

    assert ft.is_grad_enabled()  # the decorator leaves the current mode alone
    assert f() is False and ft.is_grad_enabled()
    for bad, name in [(1, "int"), ("a", "str"), (np.True_, "numpy.bool")]:
        with pytest.raises(TypeError, match=f"^set_grad_enabled\\(\\): argument 'enabled' "
                                            f"\\(position 1\\) must be bool, not {name}$"):
            ft.set_grad_enabled(bad)
    with pytest.raises(TypeError, match="^set_anomaly_enabled\\(\\): argument 'enabled' "):
        ft.autograd.set_detect_anomaly(1)
    assert ft.is_grad_enabled() and not ft.is_anomaly_enabled()


def test_set_multithreading_enabled():
    assert ft.autograd.is_multithreading_enabled()
    with ft.autograd.set_multithreading_enabled(False):
        assert not ft.autograd.is_multithreading_enabled()
    assert ft.autograd.is_multithreading_enabled()
    ft.autograd.grad_mode.set_multithreading_enabled(False)
    assert not ft.autograd.is_multithreading_enabled()
    ft.autograd.set_multithreading_enabled(True)
    with pytest.raises(TypeError, match="must be bool, not int"):
        ft.autograd.set_multithreading_enabled(1)


# --------------------------------------------------------------------------- gradcheck


def _wrong_grad_fn(scale=3.0, offset=0.0):
    return _fn(lambda ctx, a: a * 2, lambda ctx, g: g * scale + offset)


def test_gradcheck_input_checks():
    with pytest.raises(ValueError, match="^gradcheck expects at least one input tensor to require "
                                         "gradient, but none of them have requires_grad=True.$"):
        ft.autograd.gradcheck(lambda a: a.exp(), (_x(rg=False),))
    with pytest.raises(RuntimeError, match="^The 0th input has a dimension with stride 0"):
        ft.autograd.gradcheck(lambda a: a.exp(), (_x(1.0, rg=False).expand(3).requires_grad_(),))
    with pytest.warns(UserWarning, match="^Input #0 requires gradient and is not a double "
                                         "precision floating point or complex."):
        ft.autograd.gradcheck(lambda a: a * 2, (_x(dtype=ft.float32),), eps=1e-3, atol=1e-2)
    # non-contiguous inputs are perturbed element by element
    xt = ft.tensor(np.arange(6.0).reshape(3, 2), dtype=ft.float64).t().requires_grad_()
    assert not xt.is_contiguous()
    assert ft.autograd.gradcheck(lambda a: (a * a).sin(), (xt,))
    np.testing.assert_allclose(xt.detach().numpy(), np.arange(6.0).reshape(3, 2).T)


def test_gradcheck_checks_and_options():
    assert ft.autograd.gradcheck(lambda a: a.detach() * 0, (_x(),))
    with pytest.raises(ft.autograd.GradcheckError, match="^Numerical gradient for function "
                                                         "expected to be zero$"):
        ft.autograd.gradcheck(lambda a: a.detach() * 2, (_x(),))
    assert ft.autograd.gradcheck(_wrong_grad_fn().apply, (_x(),), raise_exception=False) is False
    assert ft.autograd.gradcheck(_wrong_grad_fn().apply, (_x(),), fast_mode=True,
                                 raise_exception=False) is False
    with pytest.raises(ft.autograd.GradcheckError, match="^backward not multiplied by "
                                                         "grad_output$"):
        ft.autograd.gradcheck(_wrong_grad_fn(2.0, 1e-9).apply, (_x(),))
    counter = itertools.count()
    nondet = _fn(lambda ctx, a: a * 2, lambda ctx, g: g * (2 + next(counter) * 1e-9))
    with pytest.raises(ft.autograd.GradcheckError, match="^Backward is not reentrant"):
        ft.autograd.gradcheck(nondet.apply, (_x(),))
    assert ft.autograd.gradcheck(nondet.apply, (_x(),), nondet_tol=1e-6)
    f = _fn(lambda ctx, a: a * 2, lambda ctx, g: g * 2)
    assert ft.autograd.gradcheck(f.apply, (_x(),), check_grad_dtypes=True)
    assert ft.autograd.gradcheck(lambda a, b: a * b.sin(), (_x(), _x()), check_batched_grad=True,
                                 check_forward_ad=True, masked=False)
    assert ft.autograd.gradcheck(lambda a: a.exp(), (_x(),), check_forward_ad=True,
                                 check_backward_ad=False)
    with pytest.raises(AssertionError, match="^Expected at least one of check_forward_ad or "
                                             "check_backward_ad to be True$"):
        ft.autograd.gradcheck(lambda a: a.exp(), (_x(),), check_backward_ad=False)
    assert ft.autograd.gradgradcheck(lambda a: a.exp(), (_x(),), fast_mode=True)


# --------------------------------------------------------------------------- torch.func


def test_func_argnums_messages():
    f = ft.func.grad(lambda a, b: (a * b).sum(), argnums=2)
    with pytest.raises(RuntimeError, match="^Got argnum=2, but only 2 positional inputs$"):
        f(_x(rg=False), _x(rg=False))
    for argnums, msg in [((0, -2), r"^argnums elements must be unique, got \(0, 0\)$"),
                         ((), "^argnums must be non-empty$"),
                         ([0], r"^argnums must be int or Tuple\[int, \.\.\.\], got: "
                               r"<class 'list'>$"),
                         ((0, "a"), "^argnum must be int, got: <class 'str'>$")]:
        with pytest.raises(RuntimeError, match=msg):
            ft.func.grad(lambda a, b: (a * b).sum(), argnums=argnums)(_x(rg=False), _x(rg=False))
    with pytest.raises(RuntimeError, match="^grad_and_value\\(f\\)\\(\\*args\\): Expected "
                                           "f\\(\\*args\\) to return a scalar Tensor, got tensor "
                                           "with 1 dims."):
        ft.func.grad(lambda a: a * 2)(_x(2.0, rg=False))
    with pytest.raises(RuntimeError, match="^grad_and_value\\(f\\)\\(\\*args\\): output of "
                                           "function f should be a tuple"):
        ft.func.grad(lambda a: a.sum(), has_aux=True)(_x(rg=False))


def test_func_vjp_and_jvp_messages():
    out, fn = ft.func.vjp(lambda a: a.exp(), _x(rg=False))
    with pytest.raises(RuntimeError, match=r"^Expected pytree structure of cotangents to be the "
                                           r"same as pytree structure of outputs to the "
                                           r"function. cotangents: \(\*,\), primal output: \*$"):
        fn((ft.ones(3, dtype=ft.float64),))
    with pytest.raises(RuntimeError, match=r"^Mismatch in shape: grad_output\[0\] has a shape of "
                                           r".*Size\(\[2\]\) and output\[0\] has"):
        fn(ft.ones(2, dtype=ft.float64))
    with pytest.raises(RuntimeError, match="^vjp\\(f, \\*primals\\): expected f\\(\\*primals\\) "
                                           "to return only tensors, got unsupported type "
                                           "<class 'int'>$"):
        ft.func.vjp(lambda a: 3, _x(rg=False))
    with pytest.raises(RuntimeError, match="^vjp\\(f, ...\\): All outputs of f must be "
                                           "floating-point or complex Tensors"):
        ft.func.vjp(lambda a: a.long(), _x(rg=False))
    with pytest.raises(RuntimeError, match="^vjp\\(f, \\*primals\\): expected f\\(\\*primals\\) "
                                           "to return only tensors"):
        ft.func.jacrev(lambda a: 3)(_x(rg=False))
    with pytest.raises(RuntimeError, match="^jvp\\(f, primals, tangents\\): output of "
                                           "function f should be a tuple"):
        ft.func.jacfwd(lambda a: a.exp(), has_aux=True)(_x(rg=False))
    out, fn = ft.func.vjp(lambda: ft.ones(1))  # no primals: allowed, as in PyTorch
    assert fn(ft.ones(1)) == ()
    t = ft.ones(3, dtype=ft.float64)
    with pytest.raises(RuntimeError, match="^jvp\\(f, primals, tangents\\): Expected primals to "
                                           "be a tuple. E.g. it should be valid to call "
                                           "f\\(\\*primals\\).$"):
        ft.func.jvp(lambda a: a, [_x(rg=False)], [t])
    with pytest.raises(RuntimeError, match="^jvp\\(f, primals, tangents\\): Expected primals and "
                                           "tangents to have the same python structure."):
        ft.func.jvp(lambda a: a, (_x(rg=False),), t)
    with pytest.raises(RuntimeError, match=r"^Trying to set a forward gradient that has a "
                                           r"different size .* Tensor is of size \[3\] while the "
                                           r"given forward gradient is of size \[2\].$"):
        ft.func.jvp(lambda a: a, (_x(rg=False),), (ft.ones(2, dtype=ft.float64),))
    with pytest.raises(RuntimeError, match="^jvp\\(f, primals, tangents\\): expected "
                                           "f\\(\\*primals\\) to return only tensors"):
        ft.func.jvp(lambda a: 3, (_x(rg=False),), (t,))


def test_vmap_messages_and_empty_batch():
    x = ft.tensor(np.arange(6.0).reshape(3, 2))
    with pytest.raises(ValueError, match="^vmap\\(<lambda>, in_dims=None, ...\\)\\(<inputs>\\): "
                                         "expected `in_dims` to be int or a \\(potentially "
                                         "nested\\) tuple matching the structure of inputs, got: "
                                         "<class 'NoneType'>.$"):
        ft.vmap(lambda a: a, in_dims=None)(x)
    with pytest.raises(ValueError, match="^vmap\\(<lambda>\\)\\(<inputs>\\): got no inputs."):
        ft.vmap(lambda: ft.ones(2))()
    with pytest.raises(ValueError, match="^vmap: Expected at least one Tensor to vmap over$"):
        ft.vmap(lambda a: a, in_dims=(None,))(x)
    with pytest.raises(ValueError, match=r"^vmap: Expected all tensors to have the same size in "
                                         r"the mapped dimension, got sizes \[3, 2\] for the "
                                         r"mapped dimension$"):
        ft.vmap(lambda a, b: a)(x, ft.ones(2, 2))
    with pytest.raises(IndexError, match=r"^Dimension out of range \(expected to be in range of "
                                         r"\[-2, 1\], but got 3\)$"):
        ft.vmap(lambda a: a, out_dims=3)(x)
    with pytest.raises(ValueError, match="out_dims is not compatible with the structure of "
                                         "`outputs`"):
        ft.vmap(lambda a: (a, a), out_dims=(0, 0, 0))(x)
    with pytest.raises(ValueError, match="Got in_dim=1.5 for an input but in_dim must be either "
                                         "an integer dimension or None."):
        ft.vmap(lambda a: a, in_dims=(1.5,))(x)
    out = ft.vmap(lambda a: a * 2, out_dims=1)(ft.zeros(0, 3))
    assert tuple(out.shape) == (3, 0)


# --------------------------------------------------------------------------- checkpoint


def _ckpt_model():
    lin = ft.nn.Linear(3, 3).double()
    with ft.no_grad():
        lin.weight.copy_(ft.tensor(np.arange(9.0).reshape(3, 3) / 10, dtype=ft.float64))
        lin.bias.fill_(0.1)
    return lin


def _np_ckpt_reference():
    """y = 2 sin(tanh(W x + b)) and d(sum y)/dW, in NumPy."""
    w, x = np.arange(9.0).reshape(3, 3) / 10, np.array([1.0, 2.0, 3.0])
    t = np.tanh(w @ x + 0.1)
    y = 2 * np.sin(t)
    dy_dpre = 2 * np.cos(t) * (1 - t * t)
    return y, np.outer(dy_dpre, x)


def test_checkpoint_non_reentrant_grad_wrt_params_and_double_backward():
    lin = _ckpt_model()
    x = ft.tensor(np.array([[1.0, 2.0, 3.0]]), dtype=ft.float64)

    def inner(t):
        return lin(t).tanh()

    def outer(t):
        return ckpt.checkpoint(inner, t, use_reentrant=False).sin() * 2

    y = ckpt.checkpoint(outer, x, use_reentrant=False)
    assert "Checkpoint" not in type(y.grad_fn).__name__  # the graph of the ops themselves
    gw, = ft.autograd.grad(y.sum(), lin.weight, create_graph=True)
    y_ref, gw_ref = _np_ckpt_reference()
    np.testing.assert_allclose(y.detach().numpy()[0], y_ref, rtol=1e-12)
    np.testing.assert_allclose(gw.detach().numpy(), gw_ref, rtol=1e-12)
    gg, = ft.autograd.grad(gw.sum(), lin.weight)
    np.testing.assert_allclose(gg.numpy()[0], [-8.18156645, -16.3631329, -24.5446994], rtol=1e-8)


def test_checkpoint_recompute_mismatch_and_argument_errors():
    calls = itertools.count()

    def changing(t):  # saves one more tensor on the recomputation
        return t.exp() if next(calls) == 0 else t.exp().sin()

    y = ckpt.checkpoint(changing, _x(), use_reentrant=False)
    with pytest.raises(ckpt.CheckpointError, match="trying to save more tensors during "
                                                   "recomputation"):
        y.sum().backward()
    assert issubclass(ckpt.CheckpointError, RuntimeError)
    with pytest.raises(ValueError, match="^determinism_check should be one of \\['default', "
                                         "'none'\\], but got x$"):
        ckpt.checkpoint(lambda t: t, _x(), use_reentrant=False, determinism_check="x")
    with pytest.raises(ValueError, match="^Passing `context_fn`, `debug`, or "
                                         "`respect_saved_tensors_hooks` is only supported when "
                                         "use_reentrant=False.$"):
        ckpt.checkpoint(lambda t: t, _x(), use_reentrant=True, debug=True)
    a, k = ckpt.detach_variable((_x(), 3))
    assert a.requires_grad and a.grad_fn is None and k == 3
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ckpt.check_backward_validity([_x(rg=False)])
    assert "None of the inputs have requires_grad=True" in str(w[0].message)


# --------------------------------------------------------------------------- vs torch


def test_messages_vs_torch():
    torch = pytest.importorskip("torch")

    def err(case, mod):
        with pytest.raises(Exception) as info:
            case(mod)
        return type(info.value).__name__, str(info.value).replace("ferrotorch", "torch")

    cases = [
        lambda m: m.autograd.grad((m.ones(3, requires_grad=True) * 2).sum(),
                                  [m.ones(3, requires_grad=True)]),
        lambda m: m.autograd.grad(m.ones(3, requires_grad=True) * 2, m.ones(3, requires_grad=True),
                                  m.ones(2)),
        lambda m: m.func.vjp(lambda a: 3, m.ones(3)),
        lambda m: m.vmap(lambda a, b: a)(m.ones(3, 2), m.ones(2, 2)),
        lambda m: m.autograd.gradcheck(lambda a: a.exp(), (m.ones(3, dtype=m.float64),)),
    ]
    for case in cases:
        assert err(case, ft) == err(case, torch)
