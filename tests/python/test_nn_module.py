"""nn.Module machinery, Parameter, containers, state_dict, hooks, conversions."""

import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest

import ferrotorch as ft
from ferrotorch import nn

needs_matmul = pytest.mark.skipif(not hasattr(ft.Tensor, "matmul"),
                                  reason="needs Tensor.matmul (linalg branch)")
needs_sum = pytest.mark.skipif(not hasattr(ft.Tensor, "sum"),
                               reason="needs Tensor.sum (reductions branch)")
needs_init = pytest.mark.skipif(not hasattr(ft.Tensor, "uniform_") or
                                not hasattr(ft, "empty"),
                                reason="needs uniform_/empty (creation branch)")


def t(a, dtype=np.float32):
    return ft.from_numpy(np.array(a, dtype=dtype, order="C"))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(t([[1.0, 2.0], [3.0, 4.0]]))
        self.register_buffer("running", t([0.5, 0.5]))
        self.register_buffer("tmp", t([9.0]), persistent=False)
        self.act = nn.Tanh()
        self.seq = nn.Sequential(nn.ReLU(), nn.Identity())
        self.plain = 3

    def forward(self, x):
        return self.seq(self.act(x * self.w))


# ---------------------------------------------------------------------------- Parameter
def test_parameter_shares_data_and_is_leaf():
    x = t([1.0, 2.0])
    p = nn.Parameter(x)
    assert isinstance(p, ft.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf
    assert p.data_ptr() == x.data_ptr()
    p.data.mul_(2)
    np.testing.assert_array_equal(x.numpy(), [2.0, 4.0])
    assert repr(p).startswith("Parameter containing:\ntensor([2., 4.]")
    q = nn.Parameter(t([1, 2], np.int64), requires_grad=False)
    assert not q.requires_grad and q.dtype == ft.int64
    assert nn.Parameter().numel() == 0
    with pytest.raises(TypeError):
        nn.Parameter([1.0])


def test_parameter_pickle_and_deepcopy():
    p = nn.Parameter(t([[1.0, 2.0]]))
    q = pickle.loads(pickle.dumps(p))
    assert type(q) is nn.Parameter and q.requires_grad
    np.testing.assert_array_equal(q.detach().numpy(), p.detach().numpy())
    r = copy.deepcopy(p)
    assert type(r) is nn.Parameter and r.data_ptr() != p.data_ptr()


def test_tensor_pickle_roundtrip_dtypes():
    for dt in (np.float32, np.float64, np.int64, np.int32, np.bool_, np.uint8):
        a = (np.arange(6).reshape(2, 3) % 2).astype(dt)
        x = ft.from_numpy(a)
        y = pickle.loads(pickle.dumps(x))
        assert y.dtype == x.dtype
        np.testing.assert_array_equal(y.numpy(), a)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(t(2.5))).numpy(), 2.5)  # 0-d
    assert pickle.loads(pickle.dumps(t(2.5))).shape == ()
    x = t(np.arange(6).reshape(2, 3)).t()  # non-contiguous
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(x)).numpy(), x.numpy())
    g = t([1.0]).requires_grad_()
    assert pickle.loads(pickle.dumps(g)).requires_grad
    for dt in (ft.float16, ft.bfloat16):  # bfloat16 travels as float32
        h = t([1.5, -2.25]).to(dt)
        r = pickle.loads(pickle.dumps(h))
        assert r.dtype == dt and r.to(ft.float32).tolist() == [1.5, -2.25]


# ---------------------------------------------------------------------------- registration
def test_registration_and_iteration():
    m = Net()
    assert [n for n, _ in m.named_parameters()] == ["w"]
    assert [n for n, _ in m.named_buffers()] == ["running", "tmp"]
    assert [n for n, _ in m.named_children()] == ["act", "seq"]
    assert [n for n, _ in m.named_modules()] == ["", "act", "seq", "seq.0", "seq.1"]
    assert [n for n, _ in m.named_modules(prefix="m")][:2] == ["m", "m.act"]
    assert len(list(m.modules())) == 5 and len(list(m.children())) == 2
    assert m.plain == 3 and "plain" not in m._parameters
    outer = nn.Sequential(m)
    assert [n for n, _ in outer.named_parameters(prefix="net")] == ["net.0.w"]
    assert list(outer.named_parameters(recurse=False)) == []
    assert [n for n, _ in outer.named_buffers()] == ["0.running", "0.tmp"]
    assert len(list(outer.buffers(recurse=False))) == 0
    assert m.get_submodule("seq.0").__class__ is nn.ReLU
    assert m.get_parameter("w") is m.w
    assert m.get_buffer("running") is m.running
    with pytest.raises(AttributeError):
        m.get_submodule("seq.5")
    with pytest.raises(AttributeError):
        m.get_parameter("running")
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = m.nothing
    # set_submodule: replace, add under an existing parent, strict refuses to add
    m.set_submodule("seq.0", nn.Tanh())
    assert isinstance(m.seq[0], nn.Tanh)
    outer.set_submodule("0.extra", nn.Identity())
    assert m.extra.__class__ is nn.Identity and "extra" in dict(m.named_children())
    with pytest.raises(AttributeError, match="has no attribute `fresh`"):
        m.set_submodule("fresh", nn.ReLU(), strict=True)
    with pytest.raises(AttributeError, match="`w` is not an nn.Module"):
        m.set_submodule("w", nn.ReLU())
    with pytest.raises(ValueError, match="Cannot set the submodule without a target name"):
        m.set_submodule("", nn.ReLU())
    with pytest.raises(ValueError, match="`module` is not an nn.Module"):
        m.set_submodule("seq.0", 3)


def test_setattr_delattr_rules():
    m = Net()
    with pytest.raises(TypeError):
        m.w = t([1.0])  # plain tensor into a parameter slot
    m.w = None
    assert m.w is None and list(m.parameters()) == []
    m.running = t([1.0, 1.0])  # plain tensor into a buffer slot keeps it a buffer
    assert "running" in m._buffers
    m.new = nn.Parameter(t([1.0]))
    assert "new" in m._parameters
    del m.new
    assert "new" not in m._parameters
    del m.seq
    assert "seq" not in m._modules
    m.act = nn.ReLU()
    m.add_module("extra", nn.Identity())
    m.register_module("extra2", nn.Identity())
    assert list(m._modules) == ["act", "extra", "extra2"]
    with pytest.raises(KeyError):
        m.register_buffer("a.b", t([1.0]))
    with pytest.raises(KeyError):
        m.add_module("", nn.ReLU())
    with pytest.raises(TypeError):
        m.add_module("x", 3)
    with pytest.raises(KeyError, match="already exists"):
        m.register_parameter("plain", nn.Parameter(t([1.0])))
    nonleaf = nn.Parameter(t([1.0])) * 2
    with pytest.raises(TypeError):
        m.register_parameter("bad", nonleaf)

    class Early(nn.Module):
        def __init__(self):
            self.p = nn.Parameter(t([1.0]))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()


def test_shared_parameters_deduplicated():
    m = nn.Module()
    m.a = nn.Identity()
    p = nn.Parameter(t([1.0]))
    m.a.p = p
    m.b = nn.Identity()
    m.b.p = p
    assert len(list(m.parameters())) == 1
    assert len(list(m.named_parameters(remove_duplicate=False))) == 2
    m.c = m.a
    assert len(list(m.modules())) == 3


# ---------------------------------------------------------------------------- state dict
def test_state_dict_roundtrip_and_keep_vars():
    m = Net()
    sd = m.state_dict()
    assert isinstance(sd, OrderedDict)
    assert list(sd) == ["w", "running"]  # non-persistent buffer excluded
    assert not sd["w"].requires_grad and sd["w"].data_ptr() == m.w.data_ptr()
    assert m.state_dict(keep_vars=True)["w"] is m.w
    m2 = Net()
    with ft.no_grad():
        m2.w.mul_(0)
    res = m2.load_state_dict(sd)
    assert res.missing_keys == [] and res.unexpected_keys == []
    assert str(res) == "<All keys matched successfully>"
    np.testing.assert_array_equal(m2.w.detach().numpy(), m.w.detach().numpy())
    assert m2.w.requires_grad  # still the same Parameter object
    nested = nn.Sequential(nn.Sequential(Net()), Net())
    assert "0.0.w" in nested.state_dict() and "1.running" in nested.state_dict()
    nested2 = nn.Sequential(nn.Sequential(Net()), Net())
    nested2.load_state_dict(nested.state_dict())
    m3 = Net()
    src = {"w": t([[5.0, 6.0], [7.0, 8.0]]), "running": t([1.0, 2.0])}
    m3.load_state_dict(src, assign=True)
    assert isinstance(m3.w, nn.Parameter) and m3.w.requires_grad
    assert m3.w.data_ptr() == src["w"].data_ptr() and m3.running is src["running"]


def test_load_state_dict_strict_errors():
    m = Net()
    sd = m.state_dict()
    del sd["running"]
    sd["bogus"] = t([1.0])
    with pytest.raises(RuntimeError) as ei:
        m.load_state_dict(sd)
    msg = str(ei.value)
    assert 'Missing key(s) in state_dict: "running"' in msg
    assert 'Unexpected key(s) in state_dict: "bogus"' in msg
    res = m.load_state_dict(sd, strict=False)
    assert res.missing_keys == ["running"] and res.unexpected_keys == ["bogus"]
    bad = m.state_dict()
    bad["w"] = t([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="size mismatch for w"):
        m.load_state_dict(bad, strict=False)


# ---------------------------------------------------------------------------- modes
def test_train_eval_requires_grad_zero_grad():
    m = Net()
    assert m.training and m.seq[0].training
    m.eval()
    assert not m.training and not m.seq[0].training
    m.train()
    assert m.seq[1].training
    m.requires_grad_(False)
    assert not m.w.requires_grad
    m.requires_grad_()
    m.w.grad = t([[1.0, 1.0], [1.0, 1.0]])
    m.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(m.w.grad.numpy(), np.zeros((2, 2)))
    m.zero_grad()
    assert m.w.grad is None


def test_to_and_dtype_conversions():
    m = Net()
    w = m.w
    m.double()
    assert m.w is w and m.w.dtype == ft.float64 and m.running.dtype == ft.float64
    assert m.w.requires_grad and m.w.is_leaf
    m.float()
    assert m.w.dtype == ft.float32
    m.to(ft.float64)
    assert m.w.dtype == ft.float64
    m.to("cpu", dtype=ft.float32)
    assert m.w.dtype == ft.float32
    m.type(ft.float64)
    assert m.running.dtype == ft.float64
    m.cpu()
    with pytest.raises(TypeError, match="floating point"):
        m.to(ft.int64)
    m.half()
    assert m.w.dtype == ft.float16
    m.to(t([1.0]))
    assert m.w.dtype == ft.float32


def test_apply_and_repr():
    seen = []
    m = Net()
    m.apply(lambda mod: seen.append(type(mod).__name__))
    assert seen == ["Tanh", "ReLU", "Identity", "Sequential", "Net"]
    assert repr(m) == (
        "Net(\n  (act): Tanh()\n  (seq): Sequential(\n    (0): ReLU()\n"
        "    (1): Identity()\n  )\n)"
    )
    assert repr(nn.LeakyReLU(0.2)) == "LeakyReLU(negative_slope=0.2)"
    assert repr(nn.Dropout(0.3)) == "Dropout(p=0.3, inplace=False)"
    assert repr(nn.Flatten()) == "Flatten(start_dim=1, end_dim=-1)"
    assert "Mod" in dir(nn) or "Module" in dir(nn)
    assert "w" in dir(m) and "seq" in dir(m)


def test_forward_hooks_and_call():
    m = Net()
    calls = []

    def pre(mod, args):
        calls.append("pre")
        return (args[0] * 0 + 1,)

    def post(mod, args, out):
        calls.append("post")
        return out * 2

    h1 = m.register_forward_pre_hook(pre)
    h2 = m.register_forward_hook(post)
    out = m(t([[-5.0, -5.0], [-5.0, -5.0]]))
    expected = 2 * np.maximum(np.tanh(np.array([[1.0, 2.0], [3.0, 4.0]])), 0)
    np.testing.assert_allclose(out.detach().numpy(), expected, rtol=1e-6)
    assert calls == ["pre", "post"]
    h1.remove()
    h2.remove()
    out = m(t([[-5.0, 1.0], [1.0, 1.0]]))
    assert out.detach().numpy()[0, 0] == 0.0

    def kw_hook(mod, args, kwargs, out):
        calls.append(("kw", tuple(kwargs)))

    m.register_forward_hook(kw_hook, with_kwargs=True)
    m(t([[1.0, 1.0], [1.0, 1.0]]))
    assert calls[-1] == ("kw", ())
    with pytest.raises(NotImplementedError, match="forward"):
        nn.Module()(t([1.0]))


def test_full_backward_hook():
    m = nn.Tanh()
    record = {}

    def hook(mod, grad_input, grad_output):
        record["gi"] = grad_input[0].numpy().copy()
        record["go"] = grad_output[0].numpy().copy()
        return (grad_input[0] * 10,)

    m.register_full_backward_hook(hook)
    x = t([0.5, -1.0]).requires_grad_()
    y = m(x)
    y.backward(t([1.0, 2.0]))
    dt = 1 - np.tanh([0.5, -1.0]) ** 2
    np.testing.assert_allclose(record["go"], [1.0, 2.0])
    np.testing.assert_allclose(record["gi"], dt * [1.0, 2.0], rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), 10 * dt * [1.0, 2.0], rtol=1e-6)


# ---------------------------------------------------------------------------- containers
def test_sequential_ops():
    a, b, c = nn.ReLU(), nn.Tanh(), nn.Sigmoid()
    s = nn.Sequential(a, b, c)
    assert len(s) == 3 and s[0] is a and s[-1] is c
    assert list(s) == [a, b, c]
    sl = s[1:]
    assert isinstance(sl, nn.Sequential) and list(sl) == [b, c]
    s.append(nn.Identity())
    assert len(s) == 4
    del s[0]
    assert s[0] is b and list(s._modules) == ["0", "1", "2"]
    s[0] = a
    assert s[0] is a
    s.insert(0, nn.Identity())
    assert type(s[0]) is nn.Identity and len(s) == 4
    with pytest.raises(IndexError):
        s[10]
    od = nn.Sequential(OrderedDict([("first", nn.ReLU()), ("second", nn.Tanh())]))
    assert [n for n, _ in od.named_children()] == ["first", "second"]
    assert type(od.second) is nn.Tanh
    x = t([-1.0, 0.5])
    np.testing.assert_allclose(od(x).numpy(), np.tanh(np.maximum([-1.0, 0.5], 0)), rtol=1e-6)
    assert len(nn.Sequential(nn.ReLU()) + nn.Sequential(nn.Tanh())) == 2


def test_module_list_and_dict():
    ml = nn.ModuleList([nn.ReLU(), nn.Tanh()])
    ml.append(nn.Sigmoid())
    ml.extend([nn.Identity()])
    ml += [nn.ReLU()]
    assert len(ml) == 5 and type(ml[-1]) is nn.ReLU
    assert isinstance(ml[1:3], nn.ModuleList) and len(ml[1:3]) == 2
    del ml[0]
    assert type(ml[0]) is nn.Tanh and list(ml._modules) == ["0", "1", "2", "3"]
    ml.insert(1, nn.Identity())
    assert type(ml[1]) is nn.Identity
    holder = nn.Module()
    holder.layers = nn.ModuleList([Net(), Net()])
    assert [n for n, _ in holder.named_parameters()] == ["layers.0.w", "layers.1.w"]

    md = nn.ModuleDict({"a": nn.ReLU()})
    md["b"] = nn.Tanh()
    md.update([("c", nn.Sigmoid())])
    assert list(md.keys()) == ["a", "b", "c"] and "b" in md and len(md) == 3
    assert type(md.pop("a")) is nn.ReLU and list(md) == ["b", "c"]


def test_parameter_list_and_dict():
    pl = nn.ParameterList([t([1.0]), nn.Parameter(t([2.0]))])
    assert all(isinstance(p, nn.Parameter) for p in pl)
    pl.append(t([3.0]))
    assert len(pl) == 3 and len(list(pl.parameters())) == 3
    assert [n for n, _ in pl.named_parameters()] == ["0", "1", "2"]
    assert pl[-1].item() == 3.0
    pd = nn.ParameterDict({"x": t([1.0])})
    pd["y"] = nn.Parameter(t([2.0]))
    assert isinstance(pd["x"], nn.Parameter) and list(pd.keys()) == ["x", "y"]
    assert [n for n, _ in pd.named_parameters()] == ["x", "y"]
    assert "x" in pd and len(pd) == 2
    del pd["x"]
    assert list(pd) == ["y"]


def test_subclassing_custom_module_with_buffers_in_state_dict():
    class Counter(nn.Module):
        def __init__(self):
            super().__init__()
            self.count = nn.Buffer(t([0.0]))
            self.scale = nn.Parameter(t([2.0]))

        def forward(self, x):
            with ft.no_grad():
                self.count.add_(1)
            return x * self.scale

    c = Counter()
    c(t([1.0]))
    c(t([1.0]))
    assert c.state_dict()["count"].item() == 2.0
    assert list(c.state_dict()) == ["scale", "count"]  # parameters first, as PyTorch


# ---------------------------------------------------------------------------- Linear
@needs_matmul
@needs_init
def test_linear_forward_matches_numpy_and_init_bounds():
    ft.manual_seed(0)
    lin = nn.Linear(5, 3)
    assert lin.weight.shape == (3, 5) and lin.bias.shape == (3,)
    bound = 1 / np.sqrt(5)
    w = lin.weight.detach().numpy()
    b = lin.bias.detach().numpy()
    assert np.all(np.abs(w) <= bound + 1e-7) and np.all(np.abs(b) <= bound + 1e-7)
    assert w.std() > 0.1 * bound
    x = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    np.testing.assert_allclose(lin(t(x)).detach().numpy(), x @ w.T + b, rtol=1e-5,
                               atol=1e-6)
    x3 = np.random.default_rng(1).standard_normal((2, 4, 5)).astype(np.float32)
    np.testing.assert_allclose(lin(t(x3)).detach().numpy(), x3 @ w.T + b, rtol=1e-5,
                               atol=1e-6)
    assert repr(lin) == "Linear(in_features=5, out_features=3, bias=True)"
    nb = nn.Linear(5, 3, bias=False, dtype=ft.float64)
    assert nb.bias is None and nb.weight.dtype == ft.float64
    assert [n for n, _ in nb.named_parameters()] == ["weight"]


@needs_matmul
@needs_init
@needs_sum
def test_linear_backward_matches_numpy():
    lin = nn.Linear(3, 2).double()
    x = np.random.default_rng(2).standard_normal((4, 3))
    xt = t(x, np.float64).requires_grad_()
    out = lin(xt)
    g = np.random.default_rng(3).standard_normal((4, 2))
    out.backward(t(g, np.float64))
    w = lin.weight.detach().numpy()
    np.testing.assert_allclose(lin.weight.grad.numpy(), g.T @ x, rtol=1e-10)
    np.testing.assert_allclose(lin.bias.grad.numpy(), g.sum(0), rtol=1e-10)
    np.testing.assert_allclose(xt.grad.numpy(), g @ w, rtol=1e-10)


@needs_matmul
@needs_init
def test_bilinear_forward():
    m = nn.Bilinear(3, 4, 2).double()
    rng = np.random.default_rng(4)
    x1, x2 = rng.standard_normal((5, 3)), rng.standard_normal((5, 4))
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    ref = np.einsum("ni,kij,nj->nk", x1, w, x2) + b
    np.testing.assert_allclose(m(t(x1, np.float64), t(x2, np.float64)).detach().numpy(), ref,
                               rtol=1e-10)


def test_module_deepcopy_and_pickle():
    m = Net()
    c = copy.deepcopy(m)
    assert c.w is not m.w and isinstance(c.w, nn.Parameter)
    np.testing.assert_array_equal(c.w.detach().numpy(), m.w.detach().numpy())
    with ft.no_grad():
        c.w.mul_(0)
    assert m.w.detach().numpy()[0, 0] == 1.0
    p = pickle.loads(pickle.dumps(m))
    assert [n for n, _ in p.named_parameters()] == ["w"]
    assert list(p.state_dict()) == ["w", "running"] and p.tmp.item() == 9.0


def test_forward_pre_hook_with_kwargs_and_prepend():
    class Scale(nn.Module):
        def forward(self, x, scale=1.0):
            return x * scale

    m = Scale()
    order = []

    def hook_kw(mod, args, kwargs):
        order.append("kw")
        return args, {"scale": 3.0}

    m.register_forward_pre_hook(hook_kw, with_kwargs=True)
    m.register_forward_pre_hook(lambda mod, args: order.append("first"), prepend=True)
    out = m(t([2.0]), scale=5.0)
    assert out.item() == 6.0 and order == ["first", "kw"]
    with m.register_forward_hook(lambda mod, a, o: o + 1):
        assert m(t([1.0])).item() == 4.0
    assert m(t([1.0])).item() == 3.0  # removed by the context manager


def test_global_module_hooks():
    from ferrotorch.nn.modules.module import register_module_forward_hook

    seen = []
    h = register_module_forward_hook(lambda mod, args, out: seen.append(type(mod).__name__))
    try:
        nn.Sequential(nn.ReLU(), nn.Tanh())(t([1.0]))
    finally:
        h.remove()
    assert seen == ["ReLU", "Tanh", "Sequential"]
    nn.ReLU()(t([1.0]))
    assert len(seen) == 3


class _Vocab(nn.Module):
    """A module with non-tensor state saved through get_extra_state / set_extra_state."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Linear(2, 2)
        self.vocab = {"<pad>": 0}

    def get_extra_state(self):
        return {"vocab": dict(self.vocab)}

    def set_extra_state(self, state):
        self.vocab = dict(state["vocab"])


def test_extra_state_saved_and_loaded_under_extra_state_key():
    src = nn.Sequential(_Vocab())
    src[0].vocab["cat"] = 1
    sd = src.state_dict()
    assert list(sd) == ["0._extra_state", "0.emb.weight", "0.emb.bias"]
    dst = nn.Sequential(_Vocab())
    assert dst.load_state_dict(sd).missing_keys == []
    assert dst[0].vocab == {"<pad>": 0, "cat": 1}
    del sd["0._extra_state"]
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "0._extra_state"'):
        dst.load_state_dict(sd)
    assert dst.load_state_dict(sd, strict=False).missing_keys == ["0._extra_state"]


def test_extra_state_key_is_unexpected_for_a_module_without_set_extra_state():
    m = nn.Linear(2, 2)
    sd = m.state_dict()
    sd["_extra_state"] = 3
    with pytest.raises(RuntimeError, match=r'Unexpected key\(s\) in state_dict: "_extra_state"'):
        m.load_state_dict(sd)
    with pytest.raises(RuntimeError, match="get_extra_state"):
        m.get_extra_state()


def test_modulelist_repr_compresses_runs_to_empty_and_assignment_errors():
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)] + [nn.ReLU(), nn.ReLU(),
                                                               nn.Linear(2, 3)])
    assert repr(ml) == (
        "ModuleList(\n"
        "  (0-2): 3 x Linear(in_features=2, out_features=2, bias=True)\n"
        "  (3-4): 2 x ReLU()\n"
        "  (5): Linear(in_features=2, out_features=3, bias=True)\n"
        ")")
    assert repr(nn.ModuleList()) == "ModuleList()"
    outer = nn.Sequential(nn.ModuleList([nn.Tanh(), nn.Tanh()]))
    assert repr(outer) == "Sequential(\n  (0): ModuleList(\n    (0-1): 2 x Tanh()\n  )\n)"
    lin = nn.Linear(3, 2)
    before = lin.weight
    assert lin.to_empty(device="cpu") is lin
    assert lin.weight is before and lin.weight.shape == (2, 3) and lin.bias.shape == (2,)
    with pytest.raises(TypeError, match=r"cannot assign 'ferrotorch.LongTensor' as parameter "
                                        r"'weight' \(torch.nn.Parameter or None expected\)"):
        lin.weight = ft.ones(2, 3, dtype=ft.int64)
    with pytest.raises(TypeError, match="cannot assign 'int' as parameter 'weight'"):
        lin.weight = 3
    with pytest.raises(TypeError, match=r"cannot assign 'ferrotorch.FloatTensor' object to "
                                        r"parameter 'extra'"):
        lin.register_parameter("extra", ft.ones(1))
