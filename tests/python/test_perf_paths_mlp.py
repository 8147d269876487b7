"""Fast paths of a small training step: the fused ``F.linear`` (one ``AddmmBackward0``
node), gradient adoption without a copy in AccumulateGrad, the one-pass ReLU backward and
the fused optimizers' one-call input gathering."""

import numpy as np
import pytest

import ferrotorch as ft
from ferrotorch import nn, optim
from ferrotorch.autograd import gradcheck, gradgradcheck
from ferrotorch.nn import functional as F

DTYPES = [(ft.float32, 1e-5), (ft.float64, 1e-12)]


def _np(t):
    return t.detach().to(ft.float64).numpy()


def _linear_case(rng, lead, k, n, dtype, bias=True, x_t=False, w_t=False):
    xs = rng.standard_normal(lead + (k,))
    ws = rng.standard_normal((n, k))
    bs = rng.standard_normal(n)
    if x_t:  # a transposed (non-contiguous) 2-d input
        x = ft.tensor(np.ascontiguousarray(xs.T), dtype=dtype).t()
    else:
        x = ft.tensor(xs, dtype=dtype)
    if w_t:
        w = ft.tensor(np.ascontiguousarray(ws.T), dtype=dtype).t()
    else:
        w = ft.tensor(ws, dtype=dtype)
    b = ft.tensor(bs, dtype=dtype) if bias else None
    for t in (x, w, b):
        if t is not None:
            t.requires_grad_(True)
    return (xs, ws, bs if bias else None), (x, w, b)


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("lead,k,n", [((5,), 7, 3), ((0,), 4, 2), ((2, 3), 4, 6),
                                      ((2, 0, 3), 3, 2), ((64,), 784, 10)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_matches_numpy_forward_and_backward(dtype, tol, lead, k, n, bias):
    rng = np.random.default_rng(len(lead) * 100 + k + n)
    (xs, ws, bs), (x, w, b) = _linear_case(rng, lead, k, n, dtype, bias)
    y = F.linear(x, w, b)
    ref = xs @ ws.T + (bs if bias else 0)
    assert tuple(y.shape) == ref.shape and y.dtype == dtype
    np.testing.assert_allclose(_np(y), ref, rtol=tol * 10, atol=tol * 10)
    gs = rng.standard_normal(ref.shape)
    y.backward(ft.tensor(gs, dtype=dtype))
    g2 = gs.reshape(-1, n)
    x2 = xs.reshape(-1, k)
    np.testing.assert_allclose(_np(x.grad), (g2 @ ws).reshape(xs.shape), rtol=tol * 10,
                               atol=tol * 10)
    np.testing.assert_allclose(_np(w.grad), g2.T @ x2, rtol=tol * 10, atol=tol * 10)
    assert w.grad.is_contiguous() and w.grad.dtype == dtype
    if bias:
        np.testing.assert_allclose(_np(b.grad), g2.sum(0), rtol=tol * 10, atol=tol * 10)


@pytest.mark.parametrize("x_t,w_t", [(True, False), (False, True), (True, True)])
def test_linear_non_contiguous_operands(x_t, w_t):
    rng = np.random.default_rng(3)
    (xs, ws, bs), (x, w, b) = _linear_case(rng, (6,), 5, 4, ft.float64, True, x_t, w_t)
    y = F.linear(x, w, b)
    np.testing.assert_allclose(_np(y), xs @ ws.T + bs, rtol=1e-12)
    y.sum().backward()  # the incoming gradient is an expanded (stride-0) tensor
    ones = np.ones((6, 4))
    np.testing.assert_allclose(_np(x.grad), ones @ ws, rtol=1e-12)
    np.testing.assert_allclose(_np(w.grad), ones.T @ xs, rtol=1e-12)
    np.testing.assert_allclose(_np(b.grad), ones.sum(0), rtol=1e-12)
    # A stepped-slice input.
    xl = ft.tensor(rng.standard_normal((12, 5)), requires_grad=True)
    y = F.linear(xl[::2], w.detach(), b.detach())
    np.testing.assert_allclose(_np(y), _np(xl)[::2] @ ws.T + bs, rtol=1e-12)


def test_linear_graph_and_requires_grad_handling():
    x = ft.randn(3, 4)
    lin = nn.Linear(4, 2)
    y = lin(x)
    assert y.grad_fn.name() == "AddmmBackward0"
    assert F.linear(x, lin.weight).grad_fn.name() == "MmBackward0"
    y.sum().backward()
    assert x.grad is None  # input did not require grad
    assert lin.weight.grad is not None and lin.bias.grad is not None
    with ft.no_grad():
        z = lin(x)
    assert z.grad_fn is None and not z.requires_grad
    # only the bias requires grad
    w = ft.randn(2, 4)
    b = ft.zeros(2, requires_grad=True)
    F.linear(x, w, b).sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), [3.0, 3.0])


def test_linear_grad_accumulates_and_hooks_run():
    x = ft.randn(5, 3, dtype=ft.float64)
    lin = nn.Linear(3, 2, dtype=ft.float64)
    seen = []
    lin.weight.register_hook(lambda g: seen.append(g.shape) or g * 2)
    lin(x).sum().backward()
    first = lin.weight.grad.clone()
    lin(x).sum().backward()
    np.testing.assert_allclose(lin.weight.grad.numpy(), 2 * first.numpy(), rtol=1e-12)
    np.testing.assert_allclose(first.numpy(), 2 * np.ones((2, 5)) @ x.numpy(), rtol=1e-12)
    assert seen == [(2, 3), (2, 3)]


def test_linear_gradcheck_and_double_backward():
    rng = np.random.default_rng(5)
    _, (x, w, b) = _linear_case(rng, (3,), 4, 2, ft.float64)
    assert gradcheck(F.linear, (x, w, b))
    assert gradgradcheck(F.linear, (x, w, b))
    _, (x3, w3, b3) = _linear_case(rng, (2, 2), 3, 2, ft.float64)
    assert gradcheck(F.linear, (x3, w3, b3))
    x1 = ft.randn(4, dtype=ft.float64, requires_grad=True)
    assert gradcheck(F.linear, (x1, w, b))


def test_linear_other_inputs_and_errors():
    # 1-d input, integer dtype: the composite path.
    w = ft.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    np.testing.assert_allclose(F.linear(ft.tensor([1.0, 1.0]), w).numpy(), [3.0, 7.0, 11.0])
    wi = ft.tensor([[1, 2], [3, 4]])
    np.testing.assert_array_equal(F.linear(ft.tensor([[1, 1]]), wi, ft.tensor([1, 1])).numpy(),
                                  [[4, 8]])
    with pytest.raises(RuntimeError):
        F.linear(ft.randn(2, 3), ft.randn(4, 5))
    with pytest.raises(RuntimeError):
        F.linear(ft.randn(2, 3), ft.randn(4, 3, dtype=ft.float64))
    with pytest.raises(RuntimeError):
        F.linear(ft.randn(2, 3), ft.randn(4, 3), ft.randn(5))
    with pytest.raises(TypeError):
        F.linear([[1.0]], ft.randn(1, 1))


def test_linear_saved_weight_modified_in_place_raises():
    lin = nn.Linear(3, 2)
    y = lin(ft.randn(4, 3, requires_grad=True))
    with ft.no_grad():
        lin.weight.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


# ------------------------------------------------------------------ gradient adoption
def test_adopted_gradients_never_alias_user_or_shared_tensors():
    a = ft.ones(3, requires_grad=True)
    b = ft.ones(3, requires_grad=True)
    (a + b).sum().backward()  # one gradient tensor flows to both leaves
    a.grad.add_(1)
    np.testing.assert_allclose(b.grad.numpy(), [1.0, 1.0, 1.0])
    x = ft.ones(4, requires_grad=True)
    g = ft.full((4,), 3.0)
    (x * 1).backward(g)
    g.add_(1)
    np.testing.assert_allclose(x.grad.numpy(), [3.0] * 4)
    leaf = ft.ones(2, requires_grad=True)
    user = ft.full((2,), 5.0)
    leaf.backward(user)  # the root gradient itself reaches the leaf
    user.add_(1)
    np.testing.assert_allclose(leaf.grad.numpy(), [5.0, 5.0])


def test_hook_returning_numpy_backed_gradient_is_copied():
    arr = np.full(3, 2.0, dtype=np.float32)
    x = ft.ones(3, requires_grad=True)
    x.register_hook(lambda g: ft.from_numpy(arr))
    (x * 1).sum().backward()
    arr[:] = 7.0
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0, 2.0])
    x.grad.add_(1)
    np.testing.assert_allclose(arr, [7.0] * 3)


def test_adopted_gradient_accumulates_in_place_and_keeps_identity_semantics():
    x = ft.randn(4, 3, requires_grad=True)
    w = ft.randn(3, 2)
    (x @ w).sum().backward()
    g1 = x.grad
    (x @ w).sum().backward()
    assert x.grad.data_ptr() == g1.data_ptr()  # accumulated in place, like PyTorch
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.ones((4, 2)) @ w.numpy().T, rtol=1e-5)


# ------------------------------------------------------------------ relu backward
@pytest.mark.parametrize("dtype", [ft.float32, ft.float64, ft.float16])
def test_relu_backward_matches_numpy(dtype):
    rng = np.random.default_rng(1)
    xs = rng.standard_normal((6, 5))
    xs[0, 0] = 0.0
    for make in (lambda a: ft.tensor(a, dtype=dtype),
                 lambda a: ft.tensor(np.ascontiguousarray(a.T), dtype=dtype).t()):
        x = make(xs).requires_grad_(True)
        gs = rng.standard_normal((6, 5))
        x.relu().backward(ft.tensor(gs, dtype=dtype))
        xr = _np(x)
        ref = np.where(xr > 0, _np(ft.tensor(gs, dtype=dtype)), 0.0)
        np.testing.assert_allclose(_np(x.grad), ref, rtol=1e-3)
        assert x.grad.dtype == dtype
    e = ft.zeros(0, 3, requires_grad=True)
    e.relu().sum().backward()
    assert tuple(e.grad.shape) == (0, 3)


def test_relu_double_backward_and_gradcheck():
    x = ft.tensor([[-1.0, 0.5, 2.0], [0.3, -0.2, 1.5]], dtype=ft.float64, requires_grad=True)
    assert gradcheck(lambda t: t.relu(), (x,))
    assert gradgradcheck(lambda t: (t.relu() * t).relu(), (x,))


# ------------------------------------------------------------------ optimizer gathering
def test_fused_grads_gathering():
    from ferrotorch import _C

    p1 = nn.Parameter(ft.ones(2, 3))
    p2 = nn.Parameter(ft.ones(4))
    p3 = nn.Parameter(ft.ones(5))
    p1.grad = ft.ones(3, 2).t()  # non-contiguous gradient: made contiguous
    p3.grad = ft.full((5,), 2.0)
    ps, gs = _C._fused_grads([p1, p2, p3])
    assert ps[0] is p1 and ps[1] is p3 and len(gs) == 2
    assert gs[0].is_contiguous() and gs[1].data_ptr() == p3.grad.data_ptr()
    p2.grad = ft.ones(4, dtype=ft.float64)  # dtype mismatch -> generic path
    assert _C._fused_grads([p1, p2]) is None
    h = nn.Parameter(ft.ones(2, dtype=ft.float16))
    h.grad = ft.ones(2, dtype=ft.float16)
    assert _C._fused_grads([h]) is None
    q = nn.Parameter(ft.ones(3, 2).t())  # non-contiguous parameter
    q.grad = ft.ones(2, 3)
    assert _C._fused_grads([q]) is None
    assert _C._fused_grads([]) == ([], [])
    assert _C._fused_grads([p2.detach()[:1] * 0]) == ([], [])
    assert _C._fused_grads([1.0]) is None


def test_mlp_adam_training_step_matches_numpy():
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((8, 6)).astype(np.float32)
    ys = rng.integers(0, 3, 8)
    model = nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3))
    ws = [_np(p) for p in model.parameters()]
    opt = optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = nn.CrossEntropyLoss()
    x, y = ft.from_numpy(xs), ft.from_numpy(ys)
    m = [np.zeros_like(w) for w in ws]
    v = [np.zeros_like(w) for w in ws]
    for step in range(1, 4):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        # NumPy reference of the same step.
        w1, b1, w2, b2 = ws
        h = xs @ w1.T + b1
        a = np.maximum(h, 0)
        z = a @ w2.T + b2
        zz = z - z.max(1, keepdims=True)
        p = np.exp(zz) / np.exp(zz).sum(1, keepdims=True)
        ref_loss = -np.log(p[np.arange(8), ys]).mean()
        np.testing.assert_allclose(loss.item(), ref_loss, rtol=1e-5)
        dz = p.copy()
        dz[np.arange(8), ys] -= 1
        dz /= 8
        dw2, db2 = dz.T @ a, dz.sum(0)
        dh = (dz @ w2) * (h > 0)
        dw1, db1 = dh.T @ xs, dh.sum(0)
        for i, g in enumerate([dw1, db1, dw2, db2]):
            m[i] = 0.9 * m[i] + 0.1 * g
            v[i] = 0.999 * v[i] + 0.001 * g * g
            denom = np.sqrt(v[i]) / np.sqrt(1 - 0.999 ** step) + 1e-8
            ws[i] = ws[i] - 1e-2 / (1 - 0.9 ** step) * m[i] / denom
        for p_, w_ in zip(model.parameters(), ws):
            np.testing.assert_allclose(_np(p_), w_, rtol=1e-4, atol=1e-5)
