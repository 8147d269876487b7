"""The ``out=`` keyword (ferrotorch/_out.py): values against NumPy, the returned object is
``out`` itself, resizing (and PyTorch's warning), dtype-cast rules and errors, the autograd
error, and the same calls against PyTorch when it is importable."""

import warnings

import numpy as np
import pytest

import ferrotorch as torch
from ferrotorch import _out

rng = np.random.default_rng(0)
A_NP = rng.standard_normal((3, 3)).astype(np.float32)
A_NP = A_NP @ A_NP.T + 3 * np.eye(3, dtype=np.float32)
M_NP = (rng.random((3, 4)) + 0.5).astype(np.float32)
V_NP = (rng.random(3) + 0.5).astype(np.float32)


def t(a):
    return torch.tensor(a)


def close(x, want, tol=1e-5):
    np.testing.assert_allclose(np.asarray(x.tolist(), dtype=np.float64),
                               np.asarray(want, dtype=np.float64), rtol=tol, atol=tol)


def test_returns_out_itself_and_writes_values():
    a, b = t(V_NP), t(V_NP[::-1].copy())
    out = torch.empty(3)
    assert torch.add(a, b, out=out) is out
    close(out, V_NP + V_NP[::-1])
    assert torch.mul(a, b, out=out) is out
    close(out, V_NP * V_NP[::-1])
    assert torch.exp(a, out=out) is out
    close(out, np.exp(V_NP))
    assert torch.clamp(a, 0.7, 1.0, out=out) is out
    close(out, np.clip(V_NP, 0.7, 1.0))
    assert torch.where(a > 1, a, b, out=out) is out
    close(out, np.where(V_NP > 1, V_NP, V_NP[::-1]))


def test_out_none_is_the_plain_call():
    a = t(V_NP)
    close(torch.add(a, a, out=None), 2 * V_NP)
    assert torch.add.__name__ == "add" and torch.add._ft_out_wrapped
    assert torch.linalg.solve._ft_out_wrapped and torch.special.erf._ft_out_wrapped


@pytest.mark.filterwarnings("ignore:An output with one or more elements")
def test_reductions():
    m = t(M_NP)
    out = torch.empty(0)
    assert torch.sum(m, 0, out=out) is out
    close(out, M_NP.sum(0))
    assert torch.mean(m, 1, out=out) is out
    close(out, M_NP.mean(1))
    assert torch.cumsum(m, 1, out=out) is out
    close(out, np.cumsum(M_NP, 1))
    # sum's out dtype is the accumulation dtype, as PyTorch's
    lout = torch.empty(0, dtype=torch.int64)
    torch.sum(t(np.array([1.5, 2.5])), 0, out=lout)
    assert lout.dtype == torch.int64 and lout.item() == 3


@pytest.mark.filterwarnings("ignore:An output with one or more elements")
def test_tuple_outputs():
    m = t(M_NP)
    v, i = torch.empty(0), torch.empty(0, dtype=torch.int64)
    r = torch.max(m, 1, out=(v, i))
    assert r[0] is v and r[1] is i and r.values is v and r.indices is i
    close(v, M_NP.max(1))
    close(i, M_NP.argmax(1))
    r = torch.sort(m, out=(v, i))
    assert r.values is v and r.indices is i
    close(v, np.sort(M_NP, 1))
    close(i, np.argsort(M_NP, 1))
    r = torch.topk(m, 2, out=(v, i))
    close(v, -np.sort(-M_NP, 1)[:, :2])
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float, but got "
                                           "double instead"):
        torch.sort(m, out=(torch.empty(0, dtype=torch.float64), i))
    with pytest.raises(RuntimeError, match="dtype long int, but got int instead"):
        torch.sort(m, out=(v, torch.empty(0, dtype=torch.int32)))
    with pytest.raises(TypeError):
        torch.sort(m, out=v)


@pytest.mark.filterwarnings("ignore:An output with one or more elements")
def test_matmul_cat_stack():
    a, m = t(A_NP), t(M_NP)
    out = torch.empty(0)
    assert torch.matmul(a, m, out=out) is out
    close(out, A_NP @ M_NP, 1e-4)
    assert torch.mm(a, a, out=out) is out
    close(out, A_NP @ A_NP, 1e-4)
    assert torch.cat([m, m], out=out) is out
    close(out, np.concatenate([M_NP, M_NP]))
    assert torch.stack([m, m], 1, out=out) is out
    close(out, np.stack([M_NP, M_NP], 1))
    b = torch.tensor(np.ones((2, 3, 3), np.float32))
    assert torch.bmm(b, b, out=out) is out
    close(out, np.ones((2, 3, 3)) * 3)


@pytest.mark.filterwarnings("ignore:An output with one or more elements")
def test_creation_functions():
    out = torch.empty(0)
    assert torch.arange(5, out=out) is out
    assert out.dtype == torch.float32
    close(out, np.arange(5))
    lout = torch.empty(0, dtype=torch.int64)
    assert torch.zeros(2, 3, out=lout) is lout
    assert lout.dtype == torch.int64 and tuple(lout.shape) == (2, 3)
    assert torch.ones((4,), out=out) is out
    close(out, np.ones(4))
    assert torch.full((2,), 1.5, out=out) is out
    close(out, [1.5, 1.5])
    assert torch.eye(3, out=out) is out
    close(out, np.eye(3))
    assert torch.linspace(0, 1, 5, out=out) is out
    close(out, np.linspace(0, 1, 5))
    assert torch.randn(7, out=out) is out and tuple(out.shape) == (7,)
    assert torch.rand(2, 2, out=out) is out and tuple(out.shape) == (2, 2)
    assert torch.randint(0, 5, (6,), out=lout) is lout
    assert lout.dtype == torch.int64 and 0 <= lout.min().item() <= lout.max().item() < 5
    assert torch.randperm(5, out=lout) is lout
    assert sorted(lout.tolist()) == list(range(5))
    with pytest.raises(RuntimeError, match=r"dtype Double does not match dtype of out "
                                           r"parameter \(Long\)"):
        torch.zeros(5, dtype=torch.float64, out=lout)


@pytest.mark.filterwarnings("ignore:An output with one or more elements")
def test_linalg_and_special():
    a, v = t(A_NP), t(V_NP)
    out = torch.empty(0)
    assert torch.linalg.solve(a, v, out=out) is out
    close(out, np.linalg.solve(A_NP, V_NP), 1e-4)
    assert torch.linalg.inv(a, out=out) is out
    close(out, np.linalg.inv(A_NP), 1e-4)
    assert torch.linalg.det(a, out=out) is out
    close(out, np.linalg.det(A_NP), 1e-3)
    w, q = torch.empty(0), torch.empty(0)
    r = torch.linalg.eigh(a, out=(w, q))
    assert r.eigenvalues is w and r.eigenvectors is q
    close(w, np.linalg.eigvalsh(A_NP), 1e-4)
    assert torch.special.expit(v, out=out) is out
    close(out, 1 / (1 + np.exp(-V_NP)))
    assert torch.special.logit(out, out=out) is out  # the input may be out itself
    close(out, V_NP)


def test_resize_empty_is_silent_and_nonempty_warns():
    a = t(V_NP)
    out = torch.empty(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.add(a, a, out=out)
    assert tuple(out.shape) == (3,)
    big = torch.zeros(2, 5)
    with pytest.warns(UserWarning, match=r"had shape \[2, 5\], which does not match the "
                                         r"required output shape \[3\]"):
        assert torch.add(a, a, out=big) is big
    assert tuple(big.shape) == (3,)
    close(big, 2 * V_NP)
    small = torch.zeros(1)  # grows past its storage
    with pytest.warns(UserWarning, match="was resized"):
        torch.cat([a, a, a], out=small)
    close(small, np.concatenate([V_NP] * 3))


def test_dtype_cast_rules():
    a = t(V_NP)
    d = torch.empty(3, dtype=torch.float64)
    torch.add(a, a, out=d)  # Float -> Double: fine
    assert d.dtype == torch.float64
    close(d, 2 * V_NP)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        torch.add(a, a, out=torch.empty(3, dtype=torch.int64))
    with pytest.raises(RuntimeError, match="result type Long can't be cast to the desired "
                                           "output type Bool"):
        torch.add(a.long(), a.long(), out=torch.empty(3, dtype=torch.bool))
    e = torch.empty(3, dtype=torch.int64)
    torch.eq(a, a, out=e)  # Bool -> Long: fine
    assert e.tolist() == [1, 1, 1]
    h = torch.empty(3, dtype=torch.float16)
    torch.add(a.long(), a.long(), out=h)  # Long -> Half: fine
    assert h.dtype == torch.float16
    with pytest.raises(TypeError, match="argument 'out' must be Tensor"):
        torch.add(a, a, out=3)


def test_autograd_error():
    x = torch.tensor(V_NP, requires_grad=True)
    msg = ("add\\(\\): functions with out=... arguments don't support automatic "
           "differentiation, but one of the arguments requires grad.")
    out = torch.empty(3)
    with pytest.raises(RuntimeError, match=msg):
        torch.add(x, x, out=out)
    with pytest.raises(RuntimeError, match="sort\\(\\): functions with out="):
        torch.sort(x, out=(torch.empty(0), torch.empty(0, dtype=torch.int64)))
    with pytest.raises(RuntimeError, match=msg):
        torch.add(t(V_NP), t(V_NP), out=torch.empty(3, requires_grad=True))
    with torch.no_grad():
        assert torch.add(x, x, out=out) is out
    close(out, 2 * V_NP)
    b = torch.empty(3, dtype=torch.bool)
    assert torch.eq(x, x, out=b) is b  # not differentiable: allowed, as PyTorch


def test_all_listed_names_are_wrapped():
    for name in _out.TOP_LEVEL:
        fn = getattr(torch, name, None)
        assert fn is None or fn._ft_out_wrapped, name
    for name in _out.LINALG:
        fn = getattr(torch.linalg, name, None)
        assert fn is None or fn._ft_out_wrapped, name


# ---- against PyTorch ---------------------------------------------------------------------

CASES = [
    ("add", lambda L: (L.tensor(V_NP), L.tensor(V_NP)), {}),
    ("sub", lambda L: (L.tensor(V_NP), 2.0), {}),
    ("exp", lambda L: (L.tensor(V_NP),), {}),
    ("matmul", lambda L: (L.tensor(A_NP), L.tensor(M_NP)), {}),
    ("mm", lambda L: (L.tensor(A_NP), L.tensor(A_NP)), {}),
    ("sum", lambda L: (L.tensor(M_NP), 0), {}),
    ("mean", lambda L: (L.tensor(M_NP), 1), {}),
    ("cumsum", lambda L: (L.tensor(M_NP), 1), {}),
    ("cat", lambda L: ([L.tensor(M_NP), L.tensor(M_NP)],), {}),
    ("stack", lambda L: ([L.tensor(V_NP), L.tensor(V_NP)],), {}),
    ("max", lambda L: (L.tensor(M_NP), 1), {}),
    ("sort", lambda L: (L.tensor(M_NP),), {}),
    ("topk", lambda L: (L.tensor(M_NP), 2), {}),
    ("arange", lambda L: (5,), {}),
    ("linspace", lambda L: (0, 1, 4), {}),
    ("zeros", lambda L: (2, 3), {}),
    ("eq", lambda L: (L.tensor(V_NP), L.tensor(V_NP)), {}),
    ("linalg.solve", lambda L: (L.tensor(A_NP), L.tensor(V_NP)), {}),
    ("linalg.inv", lambda L: (L.tensor(A_NP),), {}),
    ("linalg.eigh", lambda L: (L.tensor(A_NP),), {}),
    ("special.expit", lambda L: (L.tensor(V_NP),), {}),
]


def _fn(lib, name):
    obj = lib
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def _outs(lib, result, dtype=None):
    if isinstance(result, tuple):
        return tuple(lib.empty(0, dtype=r.dtype) for r in result)
    return lib.empty(0, dtype=dtype or result.dtype)


def _run(lib, name, make, mode):
    fn = _fn(lib, name)
    args = make(lib)
    if mode == "grad":
        args = tuple(a.requires_grad_() if isinstance(a, lib.Tensor) and a.is_floating_point()
                     else a for a in args)
    plain = fn(*make(lib))
    if mode == "long":
        if isinstance(plain, tuple) or not plain.is_floating_point():
            return "skip"
        out = _outs(lib, plain, lib.int64)
    elif mode == "double":
        if isinstance(plain, tuple):
            out = tuple(lib.empty(0, dtype=lib.float64 if r.is_floating_point() else r.dtype)
                        for r in plain)
        else:
            out = _outs(lib, plain, lib.float64)
    else:
        out = _outs(lib, plain)
    try:
        r = fn(*args, out=out)
    except Exception as e:  # noqa: BLE001 - compared between the libraries
        return ("error", type(e).__name__, str(e).split("\n")[0].split(" (Triggered")[0])
    outs = out if isinstance(out, tuple) else (out,)
    rs = r if isinstance(r, tuple) else (r,)
    assert all(x is y for x, y in zip(outs, rs))
    return ("ok", [(tuple(o.shape), str(o.dtype).rsplit(".", 1)[-1]) for o in outs],
            [np.asarray(o.tolist(), dtype=np.float64) for o in outs])


@pytest.mark.parametrize("mode", ["empty", "long", "double", "grad"])
@pytest.mark.parametrize("name,make,kw", CASES, ids=[c[0] for c in CASES])
def test_against_pytorch(name, make, kw, mode):
    real = pytest.importorskip("torch")
    want = _run(real, name, make, mode)
    got = _run(torch, name, make, mode)
    if want == "skip":
        assert got == "skip"
        return
    assert got[0] == want[0], (got, want)
    if want[0] == "error":
        assert got[1] == want[1]
        if name in ("add", "sub", "exp", "eq", "sum", "zeros") or mode == "grad":
            assert got[2] == want[2]
        return
    assert got[1] == want[1]
    if name not in ("linalg.eigh",):  # eigenvectors' signs may differ
        for g, w in zip(got[2], want[2]):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_resize_warning_against_pytorch():
    real = pytest.importorskip("torch")
    msgs = []
    for lib in (real, torch):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out = lib.zeros(2)
            lib.add(lib.tensor(V_NP), 1.0, out=out)
        msgs.append([str(x.message).split(" (Triggered")[0] for x in w])
        assert tuple(out.shape) == (3,)
    assert msgs[0] == msgs[1]


def test_out_may_be_a_strided_view_or_an_input():
    base = torch.zeros(3, 4)
    view = base[:, ::2]
    a = t(M_NP[:, :2].copy())
    assert torch.mul(a, 2.0, out=view) is view
    close(base[:, ::2], 2 * M_NP[:, :2])
    close(base[:, 1::2], np.zeros((3, 2)))
    x = t(V_NP)
    assert torch.add(x, x, out=x) is x  # in place through out=
    close(x, 2 * V_NP)


def test_scalar_and_grown_results():
    out = torch.empty(0)
    assert torch.dot(t(V_NP), t(V_NP), out=out) is out
    assert tuple(out.shape) == ()
    close(out, float(V_NP @ V_NP), 1e-5)
    out = torch.empty(0, dtype=torch.int64)
    assert torch.argmax(t(M_NP), 1, out=out) is out
    assert out.tolist() == M_NP.argmax(1).tolist()
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype long int, but "
                                           "got int instead"):
        torch.argmax(t(M_NP), 1, out=torch.empty(0, dtype=torch.int32))


def test_out_survives_autocast_regions():
    m = t(M_NP)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = torch.empty(0)
        assert torch.sum(m, 0, out=out) is out
    out = torch.empty(0)
    assert torch.sum(m, 0, out=out) is out  # the out= wrapper is back after the region
    close(out, M_NP.sum(0), 1e-4)
    assert torch.sum._ft_out_wrapped and torch.matmul._ft_out_wrapped
