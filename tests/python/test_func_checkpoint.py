"""ferrotorch.func (grad, vjp, jvp, jacrev, jacfwd, hessian, vmap, functional_call) and
ferrotorch.utils.checkpoint: values against NumPy / analytic derivatives."""

import warnings

import numpy as np
import pytest

import ferrotorch as ft
import ferrotorch.func as F
import ferrotorch.nn as nn
from ferrotorch.utils.checkpoint import checkpoint, checkpoint_sequential


def T(a, requires_grad=False):
    t = ft.tensor(np.asarray(a, dtype=np.float64))
    if requires_grad:
        t.requires_grad_()
    return t


def N(t):
    return np.asarray(t.detach().numpy())


def close(t, a, tol=1e-10):
    np.testing.assert_allclose(N(t), np.asarray(a, dtype=np.float64), rtol=tol, atol=tol)


RNG = np.random.default_rng(0)
X3 = RNG.standard_normal(3)
A33 = RNG.standard_normal((3, 3))
B34 = RNG.standard_normal((3, 4))


# ------------------------------------------------------------------------------------------
# grad / grad_and_value
# ------------------------------------------------------------------------------------------


def test_grad_polynomial_and_no_leak():
    x = T(X3)
    g = F.grad(lambda x: (x ** 3 + 2 * x ** 2 - x).sum())(x)
    close(g, 3 * X3 ** 2 + 4 * X3 - 1)
    assert not x.requires_grad and x.grad is None and x.grad_fn is None
    assert not g.requires_grad and g.grad_fn is None


def test_grad_sin_matrix_quadratic():
    x = T(X3)
    close(F.grad(lambda x: ft.sin(x).sum())(x), np.cos(X3))
    a = T(A33)
    # d/dx x^T A x = (A + A^T) x
    close(F.grad(lambda x: x @ (a @ x))(x), (A33 + A33.T) @ X3)
    # d/dA trace(A B B^T) = (B B^T)^T
    b = T(B34)
    close(F.grad(lambda m: ft.trace(m @ b @ b.T))(a), (B34 @ B34.T).T)


def test_grad_argnums_tuple_and_negative():
    x, y = T(X3), T(X3[::-1].copy())

    def f(x, y):
        return (x * y ** 2).sum()

    gx, gy = F.grad(f, argnums=(0, 1))(x, y)
    close(gx, X3[::-1] ** 2)
    close(gy, 2 * X3 * X3[::-1])
    close(F.grad(f, argnums=-1)(x, y), 2 * X3 * X3[::-1])
    (gy2,) = F.grad(f, argnums=(1,))(x, y)
    close(gy2, 2 * X3 * X3[::-1])


def test_grad_argnums_errors():
    x = T(X3)
    with pytest.raises(RuntimeError, match="argnum"):
        F.grad(lambda x: x.sum(), argnums=1)(x)
    with pytest.raises(RuntimeError, match="argnums"):
        F.grad(lambda x, y: x.sum(), argnums=(0, 0))(x, x)
    with pytest.raises(RuntimeError, match="scalar"):
        F.grad(lambda x: x * 2)(x)


def test_grad_has_aux_and_grad_and_value():
    x = T(X3)

    def f(x):
        y = ft.sin(x)
        return y.sum(), {"y": y, "n": 3}

    g, aux = F.grad(f, has_aux=True)(x)
    close(g, np.cos(X3))
    close(aux["y"], np.sin(X3))
    assert aux["n"] == 3 and not aux["y"].requires_grad
    g, (v, aux) = F.grad_and_value(f, has_aux=True)(x)
    close(g, np.cos(X3))
    close(v, np.sin(X3).sum())
    g, v = F.grad_and_value(lambda x: (x ** 2).sum())(x)
    close(g, 2 * X3)
    close(v, (X3 ** 2).sum())
    with pytest.raises(RuntimeError, match="tuple"):
        F.grad(lambda x: x.sum(), has_aux=True)(x)


def test_grad_pytree_argument():
    params = {"w": T(A33), "b": T(X3)}
    x = T(X3[::-1].copy())

    def loss(p, x):
        return ((p["w"] @ x + p["b"]) ** 2).sum()

    g = F.grad(loss)(params, x)
    r = A33 @ X3[::-1] + X3
    close(g["w"], 2 * np.outer(r, X3[::-1]))
    close(g["b"], 2 * r)
    assert set(g) == {"w", "b"}
    # tuple pytree in a tuple of argnums
    gs = F.grad(lambda ab, x: (ab[0] * ab[1] * x).sum(), argnums=(0, 1))((x, x), x)
    close(gs[0][0], X3[::-1] ** 2)
    close(gs[1], X3[::-1] ** 2)


def test_grad_of_grad():
    x = T(2.0)
    close(F.grad(F.grad(lambda x: x ** 4))(x), 12 * 2.0 ** 2)
    close(F.grad(F.grad(F.grad(ft.sin)))(x), -np.cos(2.0))
    xs = T(X3)
    # d/dx sum(grad(sum x^3)) = 6x
    close(F.grad(lambda x: F.grad(lambda y: (y ** 3).sum())(x).sum())(xs), 6 * X3)
    assert not xs.requires_grad


def test_grad_closure_nested():
    # d/dx [ d/dy (x * y^2) at y=3 ] = 2*3
    y0 = T(3.0)
    out = F.grad(lambda x: F.grad(lambda y: x * y ** 2)(y0))(T(5.0))
    close(out, 6.0)


def test_grad_input_requiring_grad_keeps_graph():
    x = T(X3, requires_grad=True)
    g = F.grad(lambda x: (x ** 3).sum())(x)
    close(g, 3 * X3 ** 2)
    assert g.requires_grad
    g.sum().backward()
    close(x.grad, 6 * X3)
    # an undifferentiated argument that requires grad: d/dw of grad_x (w * x^2).sum() = 2x
    w = T(X3 + 1, requires_grad=True)
    g = F.grad(lambda x, w: (w * x ** 2).sum())(T(X3), w)
    close(g, 2 * (X3 + 1) * X3)
    g.sum().backward()
    close(w.grad, 2 * X3)


# ------------------------------------------------------------------------------------------
# vjp / jvp
# ------------------------------------------------------------------------------------------


def test_vjp_values_and_reuse():
    x = T(X3)
    a = T(A33)
    out, fn = F.vjp(lambda x: ft.sin(a @ x), x)
    close(out, np.sin(A33 @ X3))
    v = RNG.standard_normal(3)
    (g,) = fn(T(v))
    close(g, A33.T @ (np.cos(A33 @ X3) * v))
    (g2,) = fn(T(2 * v))  # can be called again
    close(g2, 2 * A33.T @ (np.cos(A33 @ X3) * v))
    assert not out.requires_grad and not x.requires_grad


def test_vjp_multiple_primals_outputs_aux():
    x, y = T(X3), T(X3 + 1)

    def f(x, y):
        return (x * y, x + y ** 2), "aux"

    (o1, o2), fn, aux = F.vjp(f, x, y, has_aux=True)
    assert aux == "aux"
    close(o1, X3 * (X3 + 1))
    close(o2, X3 + (X3 + 1) ** 2)
    u, w = RNG.standard_normal(3), RNG.standard_normal(3)
    gx, gy = fn((T(u), T(w)))
    close(gx, u * (X3 + 1) + w)
    close(gy, u * X3 + 2 * (X3 + 1) * w)
    with pytest.raises(RuntimeError):
        fn(T(u))


def test_jvp_values():
    x = T(X3)
    v = RNG.standard_normal(3)
    out, jv = F.jvp(lambda x: ft.sin(x) * x, (x,), (T(v),))
    close(out, np.sin(X3) * X3)
    close(jv, (np.cos(X3) * X3 + np.sin(X3)) * v)
    a = T(A33)
    # two primals, matrix function: f(A, x) = A @ x ; J (dA, dx) = dA @ x + A @ dx
    dA, dx = RNG.standard_normal((3, 3)), RNG.standard_normal(3)
    out, jv = F.jvp(lambda m, x: m @ x, (a, x), (T(dA), T(dx)))
    close(out, A33 @ X3)
    close(jv, dA @ X3 + A33 @ dx)
    out, jv, aux = F.jvp(lambda x: (x ** 2, 7), (x,), (T(v),), has_aux=True)
    close(jv, 2 * X3 * v)
    assert aux == 7
    with pytest.raises(RuntimeError, match="different size"):
        F.jvp(lambda x: x, (x,), (T(np.ones(2)),))


# ------------------------------------------------------------------------------------------
# jacrev / jacfwd / hessian
# ------------------------------------------------------------------------------------------


def test_jacrev_jacfwd_values():
    x = T(X3)
    a = T(A33)
    f = lambda x: ft.tanh(a @ x)  # noqa: E731
    expected = np.diag(1 - np.tanh(A33 @ X3) ** 2) @ A33
    close(F.jacrev(f)(x), expected)
    close(F.jacfwd(f)(x), expected)
    assert not x.requires_grad


def test_jacrev_argnums_and_shapes():
    m, x = T(B34.T.copy()), T(X3)  # (4, 3) @ (3,)
    jm, jx = F.jacrev(lambda m, x: m @ x, argnums=(0, 1))(m, x)
    assert tuple(jm.shape) == (4, 4, 3) and tuple(jx.shape) == (4, 3)
    exp_m = np.zeros((4, 4, 3))
    for i in range(4):
        exp_m[i, i, :] = X3
    close(jm, exp_m)
    close(jx, B34.T)
    # matrix function: d(A^2)/dA
    a = T(A33)
    j = F.jacrev(lambda a: a @ a)(a)
    # d(A @ A)[i, j] / dA[k, l] = [i == k] A[l, j] + A[i, k] [l == j]
    exp = np.zeros((3, 3, 3, 3))
    for i in range(3):
        for jj in range(3):
            for k in range(3):
                for ll in range(3):
                    exp[i, jj, k, ll] = (i == k) * A33[ll, jj] + A33[i, k] * (ll == jj)
    close(j, exp)


def test_jacrev_pytree_output_and_aux():
    x = T(X3)
    out, aux = F.jacrev(lambda x: ({"s": ft.sin(x), "c": (x ** 2).sum()}, x.sum()),
                        has_aux=True)(x)
    close(out["s"], np.diag(np.cos(X3)))
    close(out["c"], 2 * X3)
    close(aux, X3.sum())


def test_hessian_values():
    x = T(X3)
    a = T(A33)
    close(F.hessian(lambda x: x @ (a @ x))(x), A33 + A33.T)
    close(F.hessian(lambda x: (ft.sin(x) * x).sum())(x),
          np.diag(2 * np.cos(X3) - X3 * np.sin(X3)))
    # f(x) = (sum x)^3 -> H = 6 sum(x) * ones
    close(F.hessian(lambda x: x.sum() ** 3)(x), 6 * X3.sum() * np.ones((3, 3)))
    # jacrev of jacrev equals hessian
    close(F.jacrev(F.jacrev(lambda x: (x ** 4).sum()))(x), np.diag(12 * X3 ** 2))
    h = F.hessian(lambda x, y: (x * y ** 2).sum(), argnums=1)(x, x)
    close(h, np.diag(2 * X3))


# ------------------------------------------------------------------------------------------
# vmap
# ------------------------------------------------------------------------------------------


def test_vmap_basic_in_out_dims():
    xb = RNG.standard_normal((5, 3))
    w = RNG.standard_normal(3)
    out = F.vmap(lambda x, w: (x * w).sum())(T(xb), T(np.tile(w, (5, 1))))
    close(out, xb @ w)
    out = F.vmap(lambda x, w: x @ w, in_dims=(0, None))(T(xb), T(w))
    close(out, xb @ w)
    # batch along dim 1 of the first arg, output batch dim last
    xt = xb.T.copy()  # (3, 5)
    out = F.vmap(lambda x, m: m @ x, in_dims=(1, None), out_dims=1)(T(xt), T(A33))
    close(out, np.stack([A33 @ xt[:, i] for i in range(5)], axis=1))
    out = F.vmap(lambda x: ft.outer(x, x), in_dims=-1, out_dims=-1)(T(xt))
    close(out, np.stack([np.outer(xt[:, i], xt[:, i]) for i in range(5)], axis=-1))
    assert ft.vmap is F.vmap


def test_vmap_pytrees_and_multiple_outputs():
    xb = RNG.standard_normal((4, 3))
    yb = RNG.standard_normal((3, 4))
    z = RNG.standard_normal(3)

    def f(d, s):
        return {"sum": d["x"] + d["y"] * s}, (d["x"] * s).sum()

    out, tot = F.vmap(f, in_dims=({"x": 0, "y": 1}, None), out_dims=({"sum": 1}, 0))(
        {"x": T(xb), "y": T(yb)}, T(z))
    exp = np.stack([xb[i] + yb[:, i] * z for i in range(4)], axis=1)
    close(out["sum"], exp)
    close(tot, np.array([(xb[i] * z).sum() for i in range(4)]))
    # list input with a single in_dim for all leaves, out_dims None for an unbatched output
    res = F.vmap(lambda xs: (xs[0] - xs[1], 5), out_dims=(0, None))([T(xb), T(xb * 2)])
    close(res[0], -xb)
    assert res[1] == 5


def test_vmap_nested_and_grad():
    a = RNG.standard_normal((2, 3))
    b = RNG.standard_normal((4, 3))
    # pairwise dot products via nested vmap
    out = F.vmap(F.vmap(lambda x, y: (x * y).sum(), in_dims=(None, 0)), in_dims=(0, None))(
        T(a), T(b))
    close(out, a @ b.T)
    # per-sample gradients
    w = RNG.standard_normal(3)
    g = F.vmap(F.grad(lambda w, x: ft.sin(w @ x)), in_dims=(None, 0))(T(w), T(b))
    close(g, np.cos(b @ w)[:, None] * b)
    # per-sample jacobians
    jac = F.vmap(F.jacrev(ft.sin))(T(a))
    close(jac, np.stack([np.diag(np.cos(r)) for r in a]))


def test_vmap_errors_and_randomness():
    xb = T(RNG.standard_normal((4, 3)))
    with pytest.raises(ValueError, match="same size"):
        F.vmap(lambda x, y: x + y)(xb, T(np.ones((3, 3))))
    with pytest.raises(ValueError, match="non-Tensor"):
        F.vmap(lambda x, n: x * n, in_dims=(0, 0))(xb, 3)
    with pytest.raises(ValueError):
        F.vmap(lambda x: x, in_dims=(0, 0))(xb)
    with pytest.raises(ValueError):
        F.vmap(lambda x: x, in_dims=None)(xb)
    with pytest.raises(RuntimeError, match="random"):
        F.vmap(lambda x: x + ft.rand(3, dtype=ft.float64))(xb)
    ft.manual_seed(3)
    same = F.vmap(lambda x: x * 0 + ft.rand(3, dtype=ft.float64), randomness="same")(xb)
    close(same, np.tile(N(same[0]), (4, 1)))
    ft.manual_seed(3)
    diff = F.vmap(lambda x: x * 0 + ft.rand(3, dtype=ft.float64), randomness="different")(xb)
    assert not np.allclose(N(diff[0]), N(diff[1]))
    close(diff[0], N(same[0]))
    with pytest.raises(RuntimeError, match="randomness"):
        F.vmap(lambda x: x, randomness="bad")
    with pytest.raises(ValueError):
        F.vmap(lambda x: x, chunk_size=0)


# ------------------------------------------------------------------------------------------
# functional_call
# ------------------------------------------------------------------------------------------


def test_functional_call_linear_replaced_params_and_grad():
    lin = nn.Linear(3, 2).double()
    w = RNG.standard_normal((2, 3))
    b = RNG.standard_normal(2)
    x = RNG.standard_normal((5, 3))
    out = F.functional_call(lin, {"weight": T(w), "bias": T(b)}, (T(x),))
    close(out, x @ w.T + b)
    # the module keeps its own parameters
    close(lin(T(x)), x @ N(lin.weight).T + N(lin.bias))

    def loss(params, x):
        return (F.functional_call(lin, params, (x,)) ** 2).sum()

    g = F.grad(loss)({"weight": T(w), "bias": T(b)}, T(x))
    r = x @ w.T + b
    close(g["weight"], 2 * r.T @ x)
    close(g["bias"], 2 * r.sum(0))
    assert lin.weight.grad is None


# ------------------------------------------------------------------------------------------
# checkpoint
# ------------------------------------------------------------------------------------------


def _mlp():
    ft.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Dropout(0.5), nn.Linear(16, 8),
                         nn.ReLU(), nn.Dropout(0.3), nn.Linear(8, 3)).double()


def _grads(m):
    return [N(p.grad).copy() for p in m.parameters()]


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_matches_plain_with_dropout(use_reentrant):
    m = _mlp()
    xv = RNG.standard_normal((6, 4))
    x = T(xv, requires_grad=True)
    ft.manual_seed(42)
    y = m(x)
    (y ** 2).sum().backward()
    g_ref, gx_ref, y_ref = _grads(m), N(x.grad).copy(), N(y).copy()

    m.zero_grad()
    x2 = T(xv, requires_grad=True)
    ft.manual_seed(42)
    y2 = checkpoint(m, x2, use_reentrant=use_reentrant)
    close(y2, y_ref)
    assert y2.grad_fn is not None
    if use_reentrant:  # the non-reentrant form leaves the last op's node, as in torch
        assert "Checkpoint" in repr(y2.grad_fn)
    # the RNG stream after the checkpointed forward is where the plain forward left it
    ft.manual_seed(42)
    m(T(xv))
    after_plain = ft.rand(4, dtype=ft.float64)
    ft.manual_seed(42)
    checkpoint(m, T(xv, requires_grad=True), use_reentrant=use_reentrant)
    close(ft.rand(4, dtype=ft.float64), N(after_plain))
    (y2 ** 2).sum().backward()
    for a, b in zip(_grads(m), g_ref):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    close(x2.grad, gx_ref, 1e-12)


def test_checkpoint_without_rng_preservation_differs():
    m = _mlp()
    xv = RNG.standard_normal((6, 4))
    x = T(xv, requires_grad=True)
    ft.manual_seed(42)
    m(x).sum().backward()
    gx_ref = N(x.grad).copy()
    x2 = T(xv, requires_grad=True)
    ft.manual_seed(42)
    checkpoint(m, x2, use_reentrant=True, preserve_rng_state=False).sum().backward()
    assert not np.allclose(N(x2.grad), gx_ref)


def test_checkpoint_forward_records_no_graph_and_recomputes():
    calls = []
    inner = {}

    def fn(x, scale, flag):
        calls.append(ft.is_grad_enabled())
        h = ft.sin(x) * scale
        inner["h"] = h
        return h * h, flag

    xv = RNG.standard_normal(5)
    x = T(xv, requires_grad=True)
    out, flag = checkpoint(fn, x, 3.0, "keep", use_reentrant=True)
    assert flag == "keep"
    assert calls == [False]
    assert inner["h"].grad_fn is None and not inner["h"].requires_grad
    out.sum().backward()
    assert calls == [False, True]
    assert inner["h"].grad_fn is not None  # the recomputation records a graph
    close(x.grad, 2 * 9 * np.sin(xv) * np.cos(xv))


def test_checkpoint_inputs_not_requiring_grad_get_none():
    def fn(a, b):
        return a * b

    a = T(X3, requires_grad=True)
    b = T(X3 + 1)
    checkpoint(fn, a, b, use_reentrant=False).sum().backward()
    close(a.grad, X3 + 1)
    assert b.grad is None
    gs = ft.autograd.grad(checkpoint(fn, a, b, use_reentrant=True).sum(), [a])
    close(gs[0], X3 + 1)


def test_checkpoint_non_reentrant_params_only():
    m = _mlp().eval()
    xv = RNG.standard_normal((3, 4))
    m(T(xv)).sum().backward()
    g_ref = _grads(m)
    m.zero_grad()
    out = checkpoint(m, T(xv), use_reentrant=False)
    assert out.requires_grad
    out.sum().backward()
    for a, b in zip(_grads(m), g_ref):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_checkpoint_kwargs_and_warnings():
    def fn(x, *, p):
        return x ** p

    x = T(X3, requires_grad=True)
    checkpoint(fn, x, p=3, use_reentrant=False).sum().backward()
    close(x.grad, 3 * X3 ** 2)
    with pytest.raises(ValueError, match="Unexpected keyword"):
        checkpoint(fn, x, p=3, use_reentrant=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        checkpoint(lambda x: x * 2, x)
    assert any("use_reentrant parameter should be passed explicitly" in str(i.message)
               for i in w)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = checkpoint(lambda x: x * 2, T(X3), use_reentrant=True)
    assert any("None of the inputs have requires_grad=True" in str(i.message) for i in w)
    assert not out.requires_grad
    with ft.no_grad():
        out = checkpoint(lambda x: x * 2, x, use_reentrant=True)
    assert not out.requires_grad


@pytest.mark.parametrize("segments", [1, 2, 3])
@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_sequential_matches_plain(segments, use_reentrant):
    m = _mlp()
    xv = RNG.standard_normal((5, 4))
    x = T(xv, requires_grad=True)
    ft.manual_seed(7)
    y = m(x)
    y.pow(2).sum().backward()
    g_ref, gx_ref, y_ref = _grads(m), N(x.grad).copy(), N(y).copy()
    m.zero_grad()
    x2 = T(xv, requires_grad=True)
    ft.manual_seed(7)
    y2 = checkpoint_sequential(m, segments, x2, use_reentrant=use_reentrant)
    close(y2, y_ref)
    y2.pow(2).sum().backward()
    for a, b in zip(_grads(m), g_ref):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    close(x2.grad, gx_ref, 1e-12)
    # a plain list of modules works too
    m.zero_grad()
    x3 = T(xv, requires_grad=True)
    ft.manual_seed(7)
    checkpoint_sequential(list(m), segments, x3, use_reentrant=use_reentrant).pow(2).sum(
    ).backward()
    close(x3.grad, gx_ref, 1e-12)


def test_checkpoint_context_fn_runs_forward_and_recompute_in_their_contexts():
    import contextlib

    from ferrotorch.utils.checkpoint import noop_context_fn

    events = []

    @contextlib.contextmanager
    def tag(name):
        events.append(f"enter {name}")
        yield
        events.append(f"exit {name}")

    def fn(a):
        events.append("run")
        return (a * a).sin()

    x = ft.tensor([0.5, 1.0, -2.0], requires_grad=True)
    y = checkpoint(fn, x, use_reentrant=False,
                   context_fn=lambda: (tag("forward"), tag("recompute")))
    assert events == ["enter forward", "run", "exit forward"]
    y.sum().backward()
    # (PyTorch stops the recomputation early by raising inside the context, so whether the
    # context's exit code runs is not part of the contract)
    assert events[3:5] == ["enter recompute", "run"]
    np.testing.assert_allclose(x.grad.numpy(), (2 * x * (x * x).cos()).detach().numpy(),
                               rtol=1e-6)
    a, b = noop_context_fn()
    with a, b:
        pass
    with pytest.raises(ValueError, match="Passing `context_fn`, `debug`, or "
                                         "`respect_saved_tensors_hooks` is only supported "
                                         "when use_reentrant=False."):
        checkpoint(fn, x, use_reentrant=True, context_fn=lambda: (tag("f"), tag("r")))
    with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
        checkpoint(fn, x, use_reentrant=True, debug=True)
