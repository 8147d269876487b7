"""nn.Module machinery and nn.utils against PyTorch 2.15: state_dict metadata, load hooks,
forward/backward hooks (always_call, global hooks, full backward hook argument layout, legacy
backward hooks), container operations and errors, clip_grad_norm_ norm types, nn.init errors.
Expected values are hard-coded (taken from PyTorch) or computed with NumPy; the optional
``torch`` tests compare directly when PyTorch is installed."""

import math
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import ferrotorch as ft
from ferrotorch import nn
from ferrotorch.nn.modules import module as module_mod


def _np(t):
    return t.detach().numpy()


def _lin(w, b):
    m = nn.Linear(len(w[0]), len(w))
    with ft.no_grad():
        m.weight.copy_(ft.tensor(w))
        m.bias.copy_(ft.tensor(b))
    return m


# ------------------------------------------------------------------ Module.__init__
def test_module_init_argument_errors():
    with pytest.raises(TypeError, match=r"^Module.__init__\(\) takes 1 positional argument but 2 "
                                        r"were given$"):
        nn.Module(3)
    with pytest.raises(TypeError, match=r"^Module.__init__\(\) got an unexpected keyword "
                                        r"argument 'x'$"):
        nn.Module(x=1)


def test_call_super_init_forwards_arguments():
    class Mixin:
        def __init__(self, x=1, **kwargs):
            super().__init__(**kwargs)
            self.x = x

    class M(nn.Module, Mixin):
        call_super_init = True

        def __init__(self):
            super().__init__(x=5)

    m = M()
    assert m.x == 5
    assert m.training is True


def test_share_memory_and_compile_return_values():
    m = nn.Linear(2, 2)
    assert m.share_memory() is m
    assert m.compile() is None
    assert m(ft.ones(1, 2)).shape == (1, 2)


# ------------------------------------------------------------------ state_dict metadata
def test_state_dict_metadata_versions():
    m = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    sd = m.state_dict()
    assert sd._metadata == OrderedDict([("", {"version": 1}), ("0", {"version": 1}),
                                        ("1", {"version": 2})])
    sd = m.state_dict(prefix="p.")
    assert list(sd._metadata) == ["p", "p.0", "p.1"]


def test_state_dict_post_hook_sees_local_metadata():
    m = nn.Sequential(nn.Linear(1, 1))
    seen = []
    m[0].register_state_dict_post_hook(lambda mod, sd, prefix, lm: seen.append((prefix, dict(lm))))
    m.state_dict()
    assert seen == [("0.", {"version": 1})]


def test_load_state_dict_passes_metadata_to_hooks():
    m = nn.Sequential(nn.Linear(1, 1), nn.BatchNorm1d(1))
    seen = []
    m[1]._register_load_state_dict_pre_hook(
        lambda sd, prefix, lm, *rest: seen.append((prefix, lm.get("version"))))
    m.load_state_dict(m.state_dict())
    m.load_state_dict(dict(m.state_dict()))  # a plain dict has no metadata
    assert seen == [("1.", 2), ("1.", None)]


def test_load_old_batchnorm_checkpoint_without_num_batches_tracked():
    m = nn.Sequential(nn.BatchNorm1d(2))
    sd = m.state_dict()
    del sd["0.num_batches_tracked"]
    sd._metadata["0"]["version"] = 1
    assert repr(m.load_state_dict(sd)) == "<All keys matched successfully>"
    # the version-2 metadata says the key should be there: a missing key
    sd._metadata["0"]["version"] = 2
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: '
                                           '"0.num_batches_tracked"'):
        m.load_state_dict(sd)


def test_load_state_dict_post_hook_must_not_return():
    m = nn.Linear(1, 1)
    m.register_load_state_dict_post_hook(lambda mod, keys: 1)
    with pytest.raises(AssertionError, match="^Hooks registered with "
                       "``register_load_state_dict_post_hook`` are not expected to return new "
                       "values, if incompatible_keys need to be modified, it should be done "
                       "inplace.$"):
        m.load_state_dict(m.state_dict())


# ------------------------------------------------------------------ forward hooks
def test_forward_hook_always_call_runs_when_forward_raises():
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    m = Boom()
    calls = []
    m.register_forward_hook(lambda mod, a, o: calls.append(("always", o)), always_call=True)
    m.register_forward_hook(lambda mod, a, o: calls.append("normal"))
    with pytest.raises(ValueError, match="boom"):
        m(ft.ones(1))
    assert calls == [("always", None)]
    calls.clear()
    m.forward = lambda x: x  # a successful call runs each hook once
    m(ft.ones(1))
    assert [c[0] if isinstance(c, tuple) else c for c in calls] == ["always", "normal"]


def test_global_forward_hooks_with_kwargs_and_always_call():
    rec = []

    class K(nn.Module):
        def forward(self, x, s=1.0):
            return x * s

    h1 = module_mod.register_module_forward_pre_hook(lambda mod, a: rec.append("gpre"))
    h2 = module_mod.register_module_forward_hook(
        lambda mod, a, k, o: rec.append(("gpost", sorted(k), o.tolist())), with_kwargs=True)
    h3 = module_mod.register_module_forward_hook(
        lambda mod, a, o: rec.append(("always", None if o is None else o.tolist())),
        always_call=True)
    try:
        K()(ft.ones(1), s=2.0)
        assert rec == ["gpre", ("gpost", ["s"], [2.0]), ("always", [2.0])]
        rec.clear()

        class E(nn.Module):
            def forward(self, x):
                raise KeyError("k")

        with pytest.raises(KeyError):
            E()(1)
        assert rec == ["gpre", ("always", None)]
    finally:
        h1.remove()
        h2.remove()
        h3.remove()
    rec.clear()
    K()(ft.ones(1))
    assert rec == []


def test_global_registration_hooks():
    calls = []
    hb = module_mod.register_module_buffer_registration_hook(
        lambda mod, name, b: calls.append("b:" + name))
    hp = module_mod.register_module_parameter_registration_hook(
        lambda mod, name, p: calls.append("p:" + name))
    hm = module_mod.register_module_module_registration_hook(
        lambda mod, name, s: calls.append("m:" + name))
    try:
        nn.BatchNorm1d(2)
        nn.Sequential(nn.ReLU())
    finally:
        hb.remove()
        hp.remove()
        hm.remove()
    assert calls == ["p:weight", "p:bias", "b:running_mean", "b:running_var",
                     "b:num_batches_tracked", "m:0"]
    # a returned value is registered instead
    h = module_mod.register_module_buffer_registration_hook(
        lambda mod, name, b: b * 0 + 7 if name == "x" else None)
    try:
        m = nn.Module()
        m.register_buffer("x", ft.ones(2))
    finally:
        h.remove()
    assert m.x.tolist() == [7.0, 7.0]


# ------------------------------------------------------------------ backward hooks
def test_full_backward_hook_grad_input_layout():
    """One grad_input entry per positional argument: None for non-tensors, zeros for tensors
    that do not require grad (PyTorch's BackwardHook)."""

    class B(nn.Module):
        def forward(self, a, k, b, c):
            return a * b * k + c

    m = B()
    rec = []
    m.register_full_backward_hook(lambda mod, gi, go: rec.append((gi, go)))
    a = ft.tensor([1.0, 2.0], requires_grad=True)
    b = ft.tensor([3.0, 4.0])
    c = ft.tensor([5.0, 6.0], requires_grad=True)
    m(a, 2.0, b, c).sum().backward()
    (gi, go), = rec
    assert len(gi) == 4
    assert gi[0].tolist() == [6.0, 8.0]
    assert gi[1] is None
    assert gi[2].tolist() == [0.0, 0.0]
    assert gi[3].tolist() == [1.0, 1.0]
    assert [g.tolist() for g in go] == [[1.0, 1.0]]
    assert a.grad.tolist() == [6.0, 8.0] and c.grad.tolist() == [1.0, 1.0]


def test_full_backward_hooks_unused_output_is_none():
    class D(nn.Module):
        def forward(self, a):
            return a * 2, a * 3

    m = D()
    rec = []
    m.register_full_backward_pre_hook(lambda mod, go: rec.append(("pre", go)))
    m.register_full_backward_hook(lambda mod, gi, go: rec.append(("full", gi, go)))
    a = ft.tensor([1.0, 2.0], requires_grad=True)
    o1, _ = m(a)
    o1.sum().backward()
    assert rec[0][0] == "pre" and rec[0][1][1] is None
    assert rec[0][1][0].tolist() == [1.0, 1.0]
    assert rec[1][0] == "full" and rec[1][2][1] is None
    assert rec[1][1][0].tolist() == [2.0, 2.0]
    assert a.grad.tolist() == [2.0, 2.0]


def test_full_backward_hook_non_tensor_outputs_and_replacement():
    class M(nn.Module):
        def forward(self, x):
            return x * 2, 5

    m = M()
    rec = []
    m.register_full_backward_hook(lambda mod, gi, go: rec.append(go))
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 0 + 3,))
    x = ft.ones(2, requires_grad=True)
    out = m(x)
    assert out[1] == 5
    out[0].sum().backward()
    assert rec[0][1] is None and rec[0][0].tolist() == [1.0, 1.0]
    assert x.grad.tolist() == [3.0, 3.0]


def test_full_backward_hook_wrong_number_of_values():
    m = _lin([[1.0, 2.0], [3.0, 4.0]], [0.0, 0.0])
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
    x = ft.ones(1, 2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Backward hook returned an invalid number of "
                                           "grad_input, got 2, but expected 1"):
        m(x).sum().backward()
    m = _lin([[1.0, 2.0], [3.0, 4.0]], [0.0, 0.0])
    m.register_full_backward_pre_hook(lambda mod, go: (go[0], go[0]))
    with pytest.raises(RuntimeError, match="Backward pre hook returned an invalid number of "
                                           "grad_output, got 2, but expected 1"):
        m(x).sum().backward()


def test_global_full_backward_hooks_run_before_module_hooks():
    rec = []
    h = module_mod.register_module_full_backward_hook(
        lambda mod, gi, go: rec.append(("g", type(mod).__name__, [tuple(g.shape) for g in go])))
    h2 = module_mod.register_module_full_backward_pre_hook(
        lambda mod, go: rec.append(("gpre", type(mod).__name__)))
    try:
        lin = _lin([[1.0, 2.0], [3.0, 4.0]], [0.5, -0.5])
        lin.register_full_backward_hook(lambda mod, gi, go: rec.append(("l", "Linear")))
        x = ft.ones(1, 2, requires_grad=True)
        lin(x).sum().backward()
    finally:
        h.remove()
        h2.remove()
    assert rec == [("gpre", "Linear"), ("g", "Linear", [(1, 2)]), ("l", "Linear")]
    assert x.grad.tolist() == [[4.0, 6.0]]


def test_legacy_backward_hook():
    class M(nn.Module):
        def forward(self, x):
            return x * 3

    m = M()
    rec = []
    # registered on the output's grad_fn (MulBackward0): grad_input are that node's input
    # gradients, None for the scalar operand (as PyTorch)
    m.register_backward_hook(lambda mod, gi, go: rec.append((
        [None if g is None else g.tolist() for g in gi], [g.tolist() for g in go])))
    x = ft.tensor([1.0, 2.0], requires_grad=True)
    m(x).sum().backward()
    assert rec == [([[3.0, 3.0], None], [[1.0, 1.0]])]
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full "
                                           "backward hooks on a single Module"):
        m.register_full_backward_hook(lambda *a: None)
    m2 = nn.Linear(1, 1)
    m2.register_full_backward_hook(lambda *a: None)
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks"):
        m2.register_backward_hook(lambda *a: None)


# ------------------------------------------------------------------ reprs
def test_embedding_repr_lists_all_options():
    e = nn.Embedding(10, 3, padding_idx=0, max_norm=1.0, scale_grad_by_freq=True, sparse=True)
    assert repr(e) == ("Embedding(10, 3, padding_idx=0, max_norm=1.0, scale_grad_by_freq=True, "
                       "sparse=True)")
    assert repr(nn.Embedding(10, 3, norm_type=1.0, max_norm=2)) == \
        "Embedding(10, 3, max_norm=2, norm_type=1.0)"
    assert repr(nn.Embedding(10, 3)) == "Embedding(10, 3)"


# ------------------------------------------------------------------ containers
def _names(m):
    return [(k, type(v).__name__) for k, v in m._modules.items()]


def test_sequential_del_renumbers_named_children():
    s = nn.Sequential(OrderedDict(a=nn.ReLU(), b=nn.Tanh(), c=nn.Sigmoid()))
    del s[1]
    assert _names(s) == [("0", "ReLU"), ("1", "Sigmoid")]


def test_sequential_iadd_mul():
    s = nn.Sequential(nn.ReLU(), nn.Tanh())
    s0 = s
    s += nn.Sequential(nn.GELU())
    assert s is s0 and _names(s) == [("0", "ReLU"), ("1", "Tanh"), ("2", "GELU")]
    with pytest.raises(ValueError, match="add operator supports only objects of Sequential"):
        s += nn.ReLU()
    d = nn.Sequential(nn.ReLU(), nn.Tanh()) * 2
    assert [n for n, _ in _names(d)] == ["0", "1", "2", "3"] and d[0] is d[2]
    assert len(3 * nn.Sequential(nn.ReLU())) == 3
    s = nn.Sequential(nn.ReLU())
    s0 = s
    s *= 3
    assert s is s0 and len(s) == 3 and s[0] is s[2]
    with pytest.raises(ValueError, match="^Non-positive multiplication factor 0 for <class "):
        nn.Sequential(nn.ReLU()) * 0
    with pytest.raises(TypeError, match="^unsupported operand type\\(s\\) for \\*: <class "):
        nn.Sequential(nn.ReLU()) * 1.5


def test_container_extend_update_errors():
    with pytest.raises(TypeError, match="^ModuleList.extend should be called with an iterable, "
                                        "but got ReLU$"):
        nn.ModuleList().extend(nn.ReLU())
    with pytest.raises(TypeError, match="^ModuleDict.update should be called with an iterable "
                                        "of key/value pairs, but got int$"):
        nn.ModuleDict().update(3)
    with pytest.raises(TypeError, match="^ModuleDict update sequence element #0 should be "
                                        "Iterable; isELU$"):
        nn.ModuleDict().update([nn.ELU()])
    with pytest.raises(TypeError, match="^ParameterList.extend should be called with an "
                                        "iterable, but got int$"):
        nn.ParameterList().extend(3)
    with pytest.raises(TypeError, match="^ParameterList.extend should be called with an "
                                        "iterable, but got Tensor$"):
        nn.ParameterList().extend(ft.ones(2))
    with pytest.raises(TypeError, match="^ParametersDict.update should be called with an "
                                        "iterable of key/value pairs, but got int$"):
        nn.ParameterDict().update(3)


def test_parameter_containers_cannot_be_called():
    with pytest.raises(RuntimeError, match="^ParameterList should not be called.$"):
        nn.ParameterList([ft.ones(1)])(1)
    with pytest.raises(RuntimeError, match="^ParameterDict should not be called.$"):
        nn.ParameterDict({"a": ft.ones(1)})(1)


def test_parameter_dict_dict_api():
    d = nn.ParameterDict({"w": nn.Parameter(ft.ones(2)), "b": ft.zeros(1)})
    # a plain dict is added in sorted key order
    assert list(d) == ["b", "w"]
    assert [n for n, _ in d.named_parameters()] == ["b", "w"]
    assert list(reversed(d)) == ["w", "b"]
    v = d.setdefault("q", ft.ones(3))
    assert type(v) is nn.Parameter and list(d) == ["b", "w", "q"]
    assert d.setdefault("q", ft.ones(5)).shape == (3,)
    k, v = d.popitem()
    assert k == "q" and list(d) == ["b", "w"]
    c = d.copy()
    assert type(c) is nn.ParameterDict and list(c) == ["b", "w"] and c["w"] is d["w"]
    f = d.fromkeys(["x", "y"], ft.ones(1))
    assert list(f) == ["x", "y"] and type(f["x"]) is nn.Parameter
    o = d | nn.ParameterDict({"z": ft.ones(1)})
    assert type(o) is nn.ParameterDict and list(o) == ["b", "w", "z"] and list(d) == ["b", "w"]
    d0 = d
    d |= {"z": ft.ones(1)}
    assert d is d0 and list(d) == ["b", "w", "z"]
    od = nn.ParameterDict(OrderedDict([("z", ft.ones(1)), ("a", ft.ones(1))]))
    assert list(od) == ["z", "a"]
    with pytest.raises(TypeError, match="^Index given to ParameterDict cannot be used as a key as "
                                        "it is not a string \\(type is 'int'\\)"):
        d[1] = ft.ones(1)


# ------------------------------------------------------------------ clip_grad_norm_
def _grads_np():
    return [np.array([[0.5, -1.5], [2.0, 3.0]], np.float32), np.array([-4.0, 0.1], np.float32)]


def _params_with_grads():
    ps = []
    for g in _grads_np():
        p = nn.Parameter(ft.zeros(*g.shape))
        p.grad = ft.from_numpy(g.copy())
        ps.append(p)
    ps.append(nn.Parameter(ft.ones(1)))  # no grad: skipped
    return ps


def _np_total_norm(grads, p):
    per = [np.linalg.norm(g.ravel().astype(np.float64), p) for g in grads]
    return np.linalg.norm(np.array(per), p)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.5, math.inf, -math.inf, 0.0, 0.5])
def test_clip_grad_norm_norm_types(norm_type):
    ps = _params_with_grads()
    total = nn.utils.clip_grad_norm_(ps, 1.0, norm_type=norm_type)
    expect = _np_total_norm(_grads_np(), norm_type)
    np.testing.assert_allclose(total.item(), expect, rtol=1e-5)
    coef = min(1.0 / (expect + 1e-6), 1.0)
    for p, g in zip(ps, _grads_np()):
        np.testing.assert_allclose(_np(p.grad), g * coef, rtol=1e-5, atol=1e-7)
    assert ps[2].grad is None


def test_clip_grad_norm_known_values():
    # PyTorch: -inf -> the smallest per-tensor norm (0.1); 0 -> the number of nonzero grads.
    assert nn.utils.clip_grad_norm_(_params_with_grads(), 1.0, -math.inf).item() == \
        pytest.approx(0.1)
    ps = _params_with_grads()
    assert nn.utils.clip_grad_norm_(ps, 1.0, 0).item() == 2.0
    np.testing.assert_allclose(_np(ps[1].grad), [-2.0, 0.05], rtol=1e-5)


def test_clip_grad_norm_nan_total_scales_to_nan():
    ps = _params_with_grads()
    with ft.no_grad():
        ps[1].grad[0] = float("nan")
    total = nn.utils.clip_grad_norm_(ps, 1.0)
    assert math.isnan(total.item())
    assert np.isnan(_np(ps[0].grad)).all()
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from "
                                           "`parameters` is non-finite"):
        nn.utils.clip_grad_norm_(_params_with_grads() + [ps[1]], 1.0, error_if_nonfinite=True)


def test_clip_grad_norm_accepts_generator():
    ps = _params_with_grads()
    total = nn.utils.clip_grad_norm_((p for p in ps), 1.0)
    expect = _np_total_norm(_grads_np(), 2)
    assert total.item() == pytest.approx(expect, rel=1e-6)
    np.testing.assert_allclose(_np(ps[0].grad), _grads_np()[0] / (expect + 1e-6), rtol=1e-5)


# ------------------------------------------------------------------ rnn utils / init errors
def test_pad_sequence_bad_padding_side_error():
    with pytest.raises(RuntimeError, match="^Expected padding_side to be one of left or right, "
                                           "but got middle.$"):
        nn.utils.rnn.pad_sequence([ft.ones(2)], padding_side="middle")


def test_init_bad_fan_mode_message():
    with pytest.raises(ValueError, match=r"^Mode fan_avg not supported, please use one of "
                                         r"\['fan_in', 'fan_out'\]$"):
        nn.init.kaiming_uniform_(ft.empty(3, 4), mode="fan_avg")


# ------------------------------------------------------------------ against PyTorch
def _both():
    torch = pytest.importorskip("torch")
    return torch, ft


def test_torch_state_dict_metadata_and_containers_match():
    torch, _ = _both()
    out = []
    for t in (torch, ft):
        m = t.nn.Sequential(t.nn.Linear(2, 3), t.nn.BatchNorm2d(3),
                            t.nn.Sequential(t.nn.LayerNorm(3)))
        sd = m.state_dict()
        s = t.nn.Sequential(OrderedDict(a=t.nn.ReLU(), b=t.nn.Tanh(), c=t.nn.Sigmoid()))
        del s[0]
        s *= 2
        d = t.nn.ParameterDict({"z": t.ones(1), "a": t.ones(2)})
        d |= {"m": t.ones(3)}
        out.append((repr(sd._metadata), list(sd), list(s._modules), list(d),
                    repr(d).replace("ferrotorch.", "torch.")))
    assert out[0] == out[1]


def test_torch_backward_hook_arguments_match():
    torch, _ = _both()
    res = []
    for t in (torch, ft):
        class B(t.nn.Module):
            def forward(self, a, k, b):
                return a * b * k, a.sum()

        m = B()
        rec = []
        m.register_full_backward_pre_hook(
            lambda mod, go, rec=rec: rec.append(["pre"] + [None if g is None else g.tolist()
                                                           for g in go]))
        m.register_full_backward_hook(
            lambda mod, gi, go, rec=rec: rec.append([None if g is None else g.tolist()
                                                     for g in gi]))
        a = t.tensor([1.0, 2.0], requires_grad=True)
        o, _ = m(a, 3.0, t.tensor([2.0, 5.0]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            o.sum().backward()
        res.append((rec, a.grad.tolist()))
    assert res[0] == res[1]


@pytest.mark.parametrize("norm_type", [2.0, math.inf, -math.inf, 0.0, 1.5])
def test_torch_clip_grad_norm_matches(norm_type):
    torch, _ = _both()
    res = []
    for t in (torch, ft):
        ps = []
        for g in _grads_np():
            p = t.nn.Parameter(t.zeros(*g.shape))
            p.grad = t.tensor(g.tolist())
            ps.append(p)
        total = t.nn.utils.clip_grad_norm_(ps, 0.5, norm_type=norm_type)
        res.append((total.item(), [p.grad.numpy().copy() for p in ps]))
    assert res[0][0] == pytest.approx(res[1][0], rel=1e-5)
    for a, b in zip(res[0][1], res[1][1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_utils_hooks_removable_handle_is_the_module_handle():
    import ferrotorch.utils.hooks as hooks

    m = ft.nn.Linear(2, 2)
    calls = []
    h = m.register_forward_hook(lambda *a: calls.append(1))
    assert isinstance(h, hooks.RemovableHandle)
    m(ft.ones(1, 2))
    h.remove()
    m(ft.ones(1, 2))
    assert calls == [1]

    @hooks.unserializable_hook
    def f(grad):
        return grad

    assert f.__torch_unserializable__ is True
