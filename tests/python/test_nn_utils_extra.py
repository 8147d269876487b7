"""nn.utils.parametrize / parametrizations (weight_norm, spectral_norm, orthogonal), the legacy
weight_norm / spectral_norm hooks, skip_init, stateless.functional_call and the Lazy modules:
values against NumPy, float64 gradchecks, PyTorch's state_dict names and errors."""

import warnings

import numpy as np
import pytest

import ferrotorch as ft
import ferrotorch.nn.functional as F
from ferrotorch import nn
from ferrotorch.autograd import gradcheck
from ferrotorch.nn.utils import parametrizations as PZ
from ferrotorch.nn.utils import parametrize as P
from ferrotorch.nn.utils.stateless import functional_call


def _np(t):
    return t.detach().numpy()


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", UserWarning)
        yield


def _np_norm_except_dim(w, dim):
    if dim is None:
        return np.sqrt((w ** 2).sum())
    axes = tuple(a for a in range(w.ndim) if a != dim)
    return np.sqrt((w ** 2).sum(axis=axes, keepdims=True))


# ------------------------------------------------------------------ parametrizations.weight_norm
@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_parametrization_values_and_names(dim):
    ft.manual_seed(0)
    m = nn.Conv2d(3, 4, 3).double()
    w0 = _np(m.weight).copy()
    PZ.weight_norm(m, dim=dim)
    assert type(m).__name__ == "ParametrizedConv2d"
    assert P.type_before_parametrizations(m) is nn.Conv2d
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original0",
                                    "parametrizations.weight.original1"]
    g = _np(m.parametrizations.weight.original0)
    v = _np(m.parametrizations.weight.original1)
    np.testing.assert_allclose(g, _np_norm_except_dim(w0, dim), rtol=1e-12)
    np.testing.assert_allclose(v, w0, rtol=0)
    # the parametrized weight is the original one
    np.testing.assert_allclose(_np(m.weight), w0, rtol=1e-12, atol=1e-14)
    # new g: weight = g * v / ||v||
    g2 = np.random.default_rng(1).uniform(0.5, 2.0, size=g.shape)
    with ft.no_grad():
        m.parametrizations.weight.original0.copy_(ft.tensor(g2))
    np.testing.assert_allclose(_np(m.weight), g2 * v / _np_norm_except_dim(v, dim),
                               rtol=1e-12)
    x = ft.randn(2, 3, 5, 5, dtype=ft.float64)
    ref = F.conv2d(x, ft.tensor(g2 * v / _np_norm_except_dim(v, dim)), m.bias)
    np.testing.assert_allclose(_np(m(x)), _np(ref), rtol=1e-10, atol=1e-12)


def test_weight_norm_parametrization_gradients():
    ft.manual_seed(1)
    m = PZ.weight_norm(nn.Linear(4, 3).double())
    wn = m.parametrizations.weight[0]
    g = ft.rand(3, 1, dtype=ft.float64).add(0.5).requires_grad_()
    v = ft.randn(3, 4, dtype=ft.float64, requires_grad=True)
    assert gradcheck(lambda g, v: wn(g, v), (g, v))
    # gradients reach original0 and original1 through the module
    x = ft.randn(5, 4, dtype=ft.float64)
    m(x).pow(2).sum().backward()
    g_, v_ = m.parametrizations.weight.original0, m.parametrizations.weight.original1
    assert g_.grad is not None and v_.grad is not None
    # analytic: W = g v/|v| per row; dL/dg = sum(dL/dW * v/|v|)
    W = _np(m.weight)
    y = _np(x) @ W.T + _np(m.bias)
    dW = 2 * y.T @ _np(x)
    vn = _np(v_) / np.linalg.norm(_np(v_), axis=1, keepdims=True)
    np.testing.assert_allclose(_np(g_.grad), (dW * vn).sum(1, keepdims=True), rtol=1e-10)


def test_weight_norm_loads_legacy_state_dict_and_remove():
    ft.manual_seed(2)
    old = nn.utils.weight_norm(nn.Linear(4, 3))
    sd = old.state_dict()
    assert sorted(sd) == ["bias", "weight_g", "weight_v"]
    new = PZ.weight_norm(nn.Linear(4, 3))
    new.load_state_dict(sd)
    np.testing.assert_allclose(_np(new.parametrizations.weight.original0), _np(sd["weight_g"]))
    np.testing.assert_allclose(_np(new.weight), _np(old.weight), rtol=1e-6)
    w = _np(new.weight).copy()
    P.remove_parametrizations(new, "weight")
    assert type(new) is nn.Linear and isinstance(new.weight, nn.Parameter)
    assert sorted(new.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(_np(new.weight), w, rtol=1e-6)
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        P.remove_parametrizations(new, "weight")


def test_remove_parametrizations_sequence_requires_leave_parametrized():
    m = PZ.weight_norm(nn.Linear(2, 2))
    with pytest.raises(ValueError, match="parametrized in terms of a sequence of tensors"):
        P.remove_parametrizations(m, "weight", leave_parametrized=False)


# ------------------------------------------------------------------ legacy weight_norm
def test_legacy_weight_norm_hook_and_remove():
    ft.manual_seed(3)
    m = nn.Linear(5, 3).double()
    w0 = _np(m.weight).copy()
    with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
        nn.utils.weight_norm(m)
    assert isinstance(m.weight_g, nn.Parameter) and tuple(m.weight_g.shape) == (3, 1)
    np.testing.assert_allclose(_np(m.weight_g), _np_norm_except_dim(w0, 0), rtol=1e-12)
    np.testing.assert_allclose(_np(m.weight_v), w0)
    assert "weight" not in dict(m.named_parameters())
    with ft.no_grad():
        m.weight_g.mul_(2.0)
    x = ft.randn(4, 5, dtype=ft.float64)
    out = m(x)  # the pre-hook recomputes weight
    np.testing.assert_allclose(_np(out), _np(x) @ (2 * w0).T + _np(m.bias), rtol=1e-10)
    out.sum().backward()
    assert m.weight_g.grad is not None and m.weight_v.grad is not None
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"):
        nn.utils.weight_norm(m)
    nn.utils.remove_weight_norm(m)
    assert sorted(m.state_dict()) == ["bias", "weight"]
    assert isinstance(m.weight, nn.Parameter)
    np.testing.assert_allclose(_np(m.weight), 2 * w0, rtol=1e-12)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found in"):
        nn.utils.remove_weight_norm(m)


def test_legacy_weight_norm_dim_none():
    m = nn.Linear(3, 2).double()
    w0 = _np(m.weight).copy()
    nn.utils.weight_norm(m, dim=None)
    assert tuple(m.weight_g.shape) == ()
    np.testing.assert_allclose(_np(m.weight_g), np.linalg.norm(w0), rtol=1e-12)


# ------------------------------------------------------------------ spectral norm
def _sigma_max(w, dim=0):
    w = np.moveaxis(w, dim, 0).reshape(w.shape[dim], -1)
    return np.linalg.svd(w, compute_uv=False)[0]


def test_spectral_norm_parametrization_matches_svd():
    ft.manual_seed(4)
    m = nn.Linear(6, 5).double()
    w0 = _np(m.weight).copy()
    PZ.spectral_norm(m, n_power_iterations=3)
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original",
                                    "parametrizations.weight.0._u",
                                    "parametrizations.weight.0._v"]
    for _ in range(100):  # power iterations in training mode
        _ = m.weight
    sigma = _sigma_max(w0)
    np.testing.assert_allclose(_np(m.weight), w0 / sigma, rtol=1e-8)
    np.testing.assert_allclose(np.linalg.svd(_np(m.weight), compute_uv=False)[0], 1.0,
                               rtol=1e-8)
    # u/v are the top singular vectors (up to sign)
    U, S, Vt = np.linalg.svd(w0)
    sn = m.parametrizations.weight[0]
    np.testing.assert_allclose(abs(_np(sn._u) @ U[:, 0]), 1.0, rtol=1e-8)
    np.testing.assert_allclose(abs(_np(sn._v) @ Vt[0]), 1.0, rtol=1e-8)


def test_spectral_norm_buffers_update_only_in_training():
    ft.manual_seed(5)
    m = PZ.spectral_norm(nn.Linear(4, 4))
    sn = m.parametrizations.weight[0]
    with ft.no_grad():  # fresh random u, v far from converged
        sn._u.copy_(F.normalize(ft.randn(4), dim=0))
        sn._v.copy_(F.normalize(ft.randn(4), dim=0))
    m.eval()
    u0 = _np(sn._u).copy()
    m(ft.randn(2, 4))
    _ = m.weight
    np.testing.assert_array_equal(_np(sn._u), u0)
    m.train()
    m(ft.randn(2, 4))
    assert np.abs(_np(sn._u) - u0).max() > 1e-6


def test_spectral_norm_gradcheck_and_dims():
    ft.manual_seed(6)
    m = PZ.spectral_norm(nn.Linear(4, 3).double()).eval()
    sn = m.parametrizations.weight[0]
    w = ft.randn(3, 4, dtype=ft.float64, requires_grad=True)
    assert gradcheck(lambda w: sn(w), (w,))
    # conv transpose: dim 1 by default (the output-channel dimension)
    ct = nn.ConvTranspose2d(3, 5, 2).double()
    w0 = _np(ct.weight).copy()
    PZ.spectral_norm(ct, n_power_iterations=200)
    assert ct.parametrizations.weight[0].dim == 1
    np.testing.assert_allclose(_np(ct.weight), w0 / _sigma_max(w0, 1), rtol=1e-7)
    # 1-d weights: exact normalisation
    b = nn.Linear(3, 4).double()
    bias0 = _np(b.bias).copy()
    PZ.spectral_norm(b, name="bias")
    np.testing.assert_allclose(_np(b.bias), bias0 / np.linalg.norm(bias0), rtol=1e-12)
    with pytest.raises(IndexError, match="Dimension out of range"):
        PZ.spectral_norm(nn.Linear(2, 2), dim=2)
    with pytest.raises(ValueError, match="has no parameter or buffer with name 'nope'"):
        PZ.spectral_norm(nn.Linear(2, 2), name="nope")


def test_legacy_spectral_norm():
    ft.manual_seed(7)
    m = nn.Linear(6, 4).double()
    w0 = _np(m.weight).copy()
    nn.utils.spectral_norm(m, n_power_iterations=1)
    assert sorted(m.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    assert sorted(n for n, _ in m.named_parameters()) == ["bias", "weight_orig"]
    x = ft.randn(3, 6, dtype=ft.float64)
    for _ in range(100):
        out = m(x)
    sigma = _sigma_max(w0)
    np.testing.assert_allclose(_np(m.weight), w0 / sigma, rtol=1e-8)
    np.testing.assert_allclose(_np(out), _np(x) @ (w0 / sigma).T + _np(m.bias), rtol=1e-8)
    out.sum().backward()
    assert m.weight_orig.grad is not None
    # eval: u, v frozen
    m.eval()
    u0 = _np(m.weight_u).copy()
    m(x)
    np.testing.assert_array_equal(_np(m.weight_u), u0)
    # round trip through state_dict
    m2 = nn.utils.spectral_norm(nn.Linear(6, 4).double())
    m2.load_state_dict(m.state_dict())
    m2.eval()
    np.testing.assert_allclose(_np(m2(x)), _np(m(x)), rtol=1e-12)
    nn.utils.remove_spectral_norm(m)
    assert sorted(m.state_dict()) == ["bias", "weight"]
    assert isinstance(m.weight, nn.Parameter)
    np.testing.assert_allclose(_np(m.weight), w0 / sigma, rtol=1e-8)
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found in"):
        nn.utils.remove_spectral_norm(m)
    with pytest.raises(ValueError, match="Expected n_power_iterations to be positive"):
        nn.utils.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)


# ------------------------------------------------------------------ orthogonal
@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder"])
@pytest.mark.parametrize("shape", [(4, 4), (6, 3), (3, 6)])
@pytest.mark.parametrize("triv", [True, False])
def test_orthogonal(orthogonal_map, shape, triv):
    ft.manual_seed(8)
    m = nn.Linear(shape[1], shape[0]).double()
    PZ.orthogonal(m, orthogonal_map=orthogonal_map, use_trivialization=triv)
    Q = _np(m.weight)
    G = Q.T @ Q if shape[0] >= shape[1] else Q @ Q.T
    np.testing.assert_allclose(G, np.eye(min(shape)), atol=1e-12)
    # gradients reach the original and keep the constraint after a step
    x = ft.randn(5, shape[1], dtype=ft.float64)
    m(x).pow(3).sum().backward()
    orig = m.parametrizations.weight.original
    assert orig.grad is not None and float(orig.grad.abs().sum()) > 0
    with ft.no_grad():
        orig.sub_(0.1 * orig.grad)
    Q = _np(m.weight)
    G = Q.T @ Q if shape[0] >= shape[1] else Q @ Q.T
    np.testing.assert_allclose(G, np.eye(min(shape)), atol=1e-10)
    # assigning an orthogonal matrix (householder, or trivialization) sets it exactly
    if triv or orthogonal_map == "householder":
        n, k = max(shape), min(shape)
        Q0 = np.linalg.qr(np.random.default_rng(0).standard_normal((n, k)))[0]
        Q0 = Q0 if shape[0] >= shape[1] else Q0.T
        m.weight = ft.tensor(Q0)
        np.testing.assert_allclose(_np(m.weight), Q0, atol=1e-12)


def test_orthogonal_gradcheck_and_errors():
    ft.manual_seed(9)
    for name in ["matrix_exp", "cayley", "householder"]:
        m = PZ.orthogonal(nn.Linear(3, 4).double(), orthogonal_map=name,
                          use_trivialization=False)
        orth = m.parametrizations.weight[0]
        X = ft.randn(4, 3, dtype=ft.float64, requires_grad=True)
        if name == "householder":
            def f(X, orth=orth):
                return orth(X + ft.eye(4, 3, dtype=ft.float64) * 2.0)
        else:
            f = orth
        assert gradcheck(f, (X,))
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices"):
        PZ.orthogonal(nn.Linear(2, 2), name="bias")
    with pytest.raises(ValueError, match='orthogonal_map has to be one of "matrix_exp"'):
        PZ.orthogonal(nn.Linear(2, 2), orthogonal_map="qr")
    m = PZ.orthogonal(nn.Linear(2, 2), orthogonal_map="cayley", use_trivialization=False)
    with pytest.raises(NotImplementedError, match="use_trivialization=False"):
        m.weight = ft.eye(2)


def test_matrix_exp_matches_eigendecomposition():
    rng = np.random.default_rng(0)
    S = rng.standard_normal((5, 5)) * 3
    A = S - S.T  # skew: exp(A) = V exp(i w) V^H
    w, V = np.linalg.eig(A)
    ref = (V @ np.diag(np.exp(w)) @ np.linalg.inv(V)).real
    np.testing.assert_allclose(_np(ft.linalg.matrix_exp(ft.tensor(A))), ref, atol=1e-11)


# ------------------------------------------------------------------ parametrize core
class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).mT

    def right_inverse(self, A):
        return A.triu()


class Scale(nn.Module):
    def __init__(self, s):
        super().__init__()
        self.s = s

    def forward(self, X):
        return X * self.s

    def right_inverse(self, X):
        return X / self.s


def test_register_parametrization_right_inverse_chain_and_remove():
    ft.manual_seed(10)
    m = nn.Linear(3, 3).double()
    w_param = m.weight
    w0 = _np(m.weight).copy()
    P.register_parametrization(m, "weight", Symmetric())
    assert P.is_parametrized(m) and P.is_parametrized(m, "weight")
    assert not P.is_parametrized(m, "bias")
    assert isinstance(m.parametrizations.weight, P.ParametrizationList)
    # the same Parameter object holds right_inverse(w0) = triu(w0)
    assert m.parametrizations.weight.original is w_param
    np.testing.assert_allclose(_np(w_param), np.triu(w0))
    sym = np.triu(w0) + np.triu(w0, 1).T
    np.testing.assert_allclose(_np(m.weight), sym)
    # chaining
    P.register_parametrization(m, "weight", Scale(2.0))
    np.testing.assert_allclose(_np(m.weight), 2 * sym)
    # assignment goes through the right inverses (Scale then Symmetric)
    A = np.arange(9.0).reshape(3, 3)
    A = A + A.T
    m.weight = ft.tensor(A)
    np.testing.assert_allclose(_np(m.weight), A)
    np.testing.assert_allclose(_np(m.parametrizations.weight.original), np.triu(A / 2))
    # cached: one evaluation per context
    calls = []
    m.parametrizations.weight[1].register_forward_hook(lambda *a: calls.append(1))
    with P.cached():
        w1 = m.weight
        w2 = m.weight
    assert w1 is w2 and len(calls) == 1
    _ = m.weight
    assert len(calls) == 2
    # remove, leave_parametrized=False: back to the original (same object)
    P.remove_parametrizations(m, "weight", leave_parametrized=False)
    assert type(m) is nn.Linear and not hasattr(m, "parametrizations")
    assert m.weight is w_param
    np.testing.assert_allclose(_np(m.weight), np.triu(A / 2))


def test_register_parametrization_errors():
    class Bad(nn.Module):
        def forward(self, X):
            return X[0]

    with pytest.raises(ValueError, match="may not change the shape of the tensor"):
        P.register_parametrization(nn.Linear(2, 2), "weight", Bad())
    m = P.register_parametrization(nn.Linear(2, 2), "weight", Bad(), unsafe=True)
    assert tuple(m.weight.shape) == (2,)
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a "
                                         "parametrized element with name 'nope'"):
        P.register_parametrization(nn.Linear(2, 2), "nope", Symmetric())

    class NoInverse(nn.Module):
        def forward(self, X):
            return X * 2

    m = P.register_parametrization(nn.Linear(2, 2), "weight", NoInverse())
    with pytest.raises(RuntimeError, match="does not implement right_inverse"):
        m.weight = ft.zeros(2, 2)
    with pytest.raises(RuntimeError, match="Serialization of parametrized modules"):
        m.__getstate__()


def test_parametrized_buffer_and_deepcopy():
    import copy
    bn = nn.BatchNorm1d(3)
    P.register_parametrization(bn, "running_var", Scale(3.0))
    assert "parametrizations.running_var.original" in bn.state_dict()
    # right_inverse sets original so that the parametrized value is unchanged
    np.testing.assert_allclose(_np(bn.running_var), np.ones(3), rtol=1e-6)
    np.testing.assert_allclose(_np(bn.parametrizations.running_var.original),
                               np.full(3, 1 / 3), rtol=1e-6)
    m = P.register_parametrization(nn.Linear(2, 2), "weight", Scale(2.0))
    c = copy.deepcopy(m)
    np.testing.assert_allclose(_np(c.weight), _np(m.weight))
    assert c.parametrizations.weight.original is not m.parametrizations.weight.original


def test_training_with_parametrization_reduces_loss():
    ft.manual_seed(11)
    rng = np.random.default_rng(0)
    X = ft.tensor(rng.standard_normal((64, 4)).astype(np.float32))
    Wt = rng.standard_normal((4, 4)).astype(np.float32)
    Y = X @ ft.tensor(Wt + Wt.T).T
    model = nn.Linear(4, 4, bias=False)
    P.register_parametrization(model, "weight", Symmetric())
    PZ.weight_norm(nn.Linear(1, 1))  # smoke: independent module
    opt = ft.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for _ in range(200):
        opt.zero_grad()
        loss = F.mse_loss(model(X), Y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 1e-3 * losses[0]
    W = _np(model.weight)
    np.testing.assert_allclose(W, W.T)
    np.testing.assert_allclose(W, Wt + Wt.T, atol=5e-2)

    # weight_norm + spectral_norm models train too
    for wrap in (PZ.weight_norm, PZ.spectral_norm, nn.utils.weight_norm):
        ft.manual_seed(12)
        net = nn.Sequential(wrap(nn.Linear(4, 16)), nn.Tanh(), nn.Linear(16, 4))
        opt = ft.optim.Adam(net.parameters(), lr=1e-2)
        first = None
        for _ in range(150):
            opt.zero_grad()
            loss = F.mse_loss(net(X), Y)
            loss.backward()
            opt.step()
            first = loss.item() if first is None else first
        assert loss.item() < 0.3 * first


# ------------------------------------------------------------------ skip_init / functional_call
def test_skip_init():
    m = nn.utils.skip_init(nn.Linear, 5, 3, bias=True, dtype=ft.float64)
    assert type(m) is nn.Linear and tuple(m.weight.shape) == (3, 5)
    assert m.weight.dtype == ft.float64
    assert isinstance(m.bias, nn.Parameter)
    # init functions are restored afterwards
    assert float(nn.init.ones_(ft.zeros(2)).sum()) == 2.0
    with pytest.raises(RuntimeError, match="Expected a Module"):
        nn.utils.skip_init(int)

    class NoDevice(nn.Module):
        def __init__(self):
            super().__init__()

    with pytest.raises(RuntimeError, match="Module must support a 'device' arg"):
        nn.utils.skip_init(NoDevice)


def test_functional_call():
    ft.manual_seed(13)
    m = nn.Sequential(nn.Linear(3, 2), nn.ReLU(), nn.Linear(2, 1)).double()
    w_before = _np(m[0].weight).copy()
    params = {k: v.detach().clone().requires_grad_() for k, v in m.named_parameters()}
    params["0.weight"] = ft.ones(2, 3, dtype=ft.float64, requires_grad=True)
    x = ft.randn(4, 3, dtype=ft.float64)
    out = functional_call(m, params, (x,))
    h = np.maximum(_np(x) @ np.ones((3, 2)) + _np(params["0.bias"]), 0)
    ref = h @ _np(params["2.weight"]).T + _np(params["2.bias"])
    np.testing.assert_allclose(_np(out), ref, rtol=1e-12)
    out.sum().backward()
    assert params["0.weight"].grad is not None and m[0].weight.grad is None
    np.testing.assert_array_equal(_np(m[0].weight), w_before)  # restored
    assert isinstance(m[0].weight, nn.Parameter)
    # a sequence of dicts, args not a tuple
    out2 = functional_call(m, ({"0.weight": params["0.weight"]}, {"2.bias": params["2.bias"]}),
                           x)
    assert tuple(out2.shape) == (4, 1)
    with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
        functional_call(m, ({"0.weight": x}, {"0.weight": x}), x)
    with pytest.raises(RuntimeError, match="Missing key\\(s\\): '0.bias'"):
        functional_call(m, {k: v for k, v in params.items() if k != "0.bias"}, x,
                        strict=True)
    # tied weights
    tied = nn.Module()
    tied.a = nn.Linear(2, 2, bias=False)
    tied.b = nn.Linear(2, 2, bias=False)
    tied.b.weight = tied.a.weight
    tied.forward = lambda x: tied.b(tied.a(x))
    eye = ft.eye(2)
    y = functional_call(tied, {"a.weight": 2 * eye}, (ft.ones(1, 2),))
    np.testing.assert_allclose(_np(y), [[4.0, 4.0]])
    with pytest.raises(ValueError, match="which are tied"):
        functional_call(tied, {"a.weight": eye, "b.weight": 2 * eye}, (ft.ones(1, 2),))


# ------------------------------------------------------------------ lazy modules
def test_uninitialized_parameter():
    p = nn.UninitializedParameter(dtype=ft.float64)
    assert repr(p) == "<UninitializedParameter>"
    assert nn.parameter.is_lazy(p)
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
        _ = p.shape
    ident = id(p)
    p.materialize((2, 3))
    assert type(p) is nn.Parameter and id(p) == ident
    assert tuple(p.shape) == (2, 3) and p.dtype == ft.float64 and p.requires_grad
    b = nn.UninitializedBuffer()
    b.materialize(4)
    assert tuple(b.shape) == (4,) and not nn.parameter.is_lazy(b)


@pytest.mark.parametrize("lazy,eager,args,x_shape", [
    ("LazyLinear", "Linear", (3,), (2, 7, 5)),
    ("LazyConv1d", "Conv1d", (4, 3), (2, 3, 9)),
    ("LazyConv2d", "Conv2d", (4, 3), (2, 3, 6, 6)),
    ("LazyConv3d", "Conv3d", (4, 2), (1, 2, 4, 4, 4)),
    ("LazyConvTranspose1d", "ConvTranspose1d", (4, 3), (2, 3, 5)),
    ("LazyConvTranspose2d", "ConvTranspose2d", (4, 3), (2, 3, 4, 4)),
    ("LazyConv2d", "Conv2d", (4, 3), (3, 6, 6)),  # unbatched
])
def test_lazy_layers_infer_and_match_eager(lazy, eager, args, x_shape):
    ft.manual_seed(14)
    m = getattr(nn, lazy)(*args, dtype=ft.float64)
    assert m.has_uninitialized_params()
    x = ft.randn(*x_shape, dtype=ft.float64)
    y = m(x)
    assert type(m) is getattr(nn, eager)
    assert not hasattr(m, "_initialize_hook")
    if eager == "Linear":
        assert m.in_features == x_shape[-1]
    else:
        batched = len(x_shape) == len(m.kernel_size) + 2
        assert m.in_channels == x_shape[1 if batched else 0]
    e = getattr(nn, eager)(*((m.in_features,) if eager == "Linear" else (m.in_channels,)),
                           *args, dtype=ft.float64)
    e.load_state_dict(m.state_dict())
    np.testing.assert_allclose(_np(e(x)), _np(y), rtol=1e-12)
    # PyTorch's default init bound: 1/sqrt(fan_in)
    fan_in = m.weight[0].numel() if not eager.startswith("ConvT") else \
        m.weight.shape[1] * int(np.prod(m.kernel_size))
    bound = 1 / np.sqrt(fan_in)
    assert np.abs(_np(m.weight)).max() <= bound + 1e-12
    assert np.abs(_np(m.bias)).max() <= bound + 1e-12
    assert np.abs(_np(m.weight)).max() > 0.2 * bound


def test_lazy_linear_optimizer_after_dry_run():
    ft.manual_seed(15)
    net = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(1))
    X = ft.randn(32, 5)
    Y = X.sum(1, keepdim=True)
    net(X)  # dry run
    shapes = [tuple(p.shape) for p in net.parameters()]
    assert shapes == [(8, 5), (8,), (1, 8), (1,)]
    opt = ft.optim.Adam(net.parameters(), lr=1e-2)
    w_before = _np(net[0].weight).copy()
    first = None
    for _ in range(100):
        opt.zero_grad()
        loss = F.mse_loss(net(X), Y)
        loss.backward()
        opt.step()
        first = loss.item() if first is None else first
    assert loss.item() < 0.2 * first
    assert np.abs(_np(net[0].weight) - w_before).max() > 1e-3


def test_lazy_load_state_dict_materializes():
    src = nn.Linear(4, 2)
    m = nn.LazyLinear(2)
    m.load_state_dict(src.state_dict())
    assert tuple(m.weight.shape) == (2, 4)
    np.testing.assert_array_equal(_np(m.weight), _np(src.weight))
    x = ft.randn(3, 4)
    np.testing.assert_allclose(_np(m(x)), _np(src(x)), rtol=1e-6)
    assert type(m) is nn.Linear
    # state_dict of an uninitialised module holds the placeholders
    sd = nn.LazyLinear(2).state_dict()
    assert all(nn.parameter.is_lazy(v) for v in sd.values())


@pytest.mark.parametrize("lazy,eager,x_shape", [
    ("LazyBatchNorm1d", "BatchNorm1d", (8, 3)),
    ("LazyBatchNorm2d", "BatchNorm2d", (4, 3, 2, 2)),
    ("LazyBatchNorm3d", "BatchNorm3d", (2, 3, 2, 2, 2)),
    ("LazyInstanceNorm1d", "InstanceNorm1d", (2, 3, 5)),
    ("LazyInstanceNorm2d", "InstanceNorm2d", (2, 3, 4, 4)),
    ("LazyInstanceNorm3d", "InstanceNorm3d", (2, 3, 2, 2, 2)),
])
def test_lazy_norms(lazy, eager, x_shape):
    ft.manual_seed(16)
    m = getattr(nn, lazy)(dtype=ft.float64)
    x = ft.randn(*x_shape, dtype=ft.float64) * 2 + 1
    y = m(x)
    assert type(m) is getattr(nn, eager) and m.num_features == 3
    assert type(m.running_mean) is ft.Tensor
    np.testing.assert_array_equal(_np(m.weight), np.ones(3))
    np.testing.assert_array_equal(_np(m.bias), np.zeros(3))
    # instance norm never counts batches (as PyTorch)
    assert int(m.num_batches_tracked) == (1 if "Batch" in lazy else 0)
    axes = (0,) + tuple(range(2, len(x_shape))) if "Batch" in lazy else None
    xn = _np(x)
    if axes is not None:
        mean = xn.mean(axis=axes)
        np.testing.assert_allclose(_np(m.running_mean), 0.1 * mean, rtol=1e-10)
        ref = (xn - mean.reshape(1, 3, *[1] * (len(x_shape) - 2))) / np.sqrt(
            xn.var(axis=axes).reshape(1, 3, *[1] * (len(x_shape) - 2)) + 1e-5)
    else:
        ax = tuple(range(2, len(x_shape)))
        ref = (xn - xn.mean(axis=ax, keepdims=True)) / np.sqrt(
            xn.var(axis=ax, keepdims=True) + 1e-5)
    np.testing.assert_allclose(_np(y), ref, rtol=1e-8, atol=1e-10)
    e = getattr(nn, eager)(3, affine=True, track_running_stats=True, dtype=ft.float64)
    e.load_state_dict(m.state_dict())
    m.eval()
    e.eval()
    np.testing.assert_allclose(_np(e(x)), _np(m(x)), rtol=1e-12)


def test_lazy_errors():
    with pytest.raises(ValueError, match="can't have uninitialized parameters"):
        nn.utils.weight_norm(nn.LazyLinear(2))
    with pytest.raises(ValueError, match="can't have uninitialized parameters"):
        nn.utils.spectral_norm(nn.LazyLinear(2))
    with pytest.raises(RuntimeError, match="Expected 3D \\(unbatched\\) or 4D \\(batched\\)"):
        nn.LazyConv2d(2, 3)(ft.randn(2, 3))
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.LazyConv1d(4, 3, groups=2)(ft.randn(1, 3, 8))
    with pytest.warns(UserWarning, match="Lazy modules are a new feature"):
        nn.LazyLinear(2)
