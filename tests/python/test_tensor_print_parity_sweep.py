"""Regression tests from a differential parity sweep of tensor printing, ``torch.Size``,
storages, pickling and ``copy`` of tensors against PyTorch.

The expected strings are hard-coded (taken from PyTorch 2.15, with ``torch`` spelled
``ferrotorch`` in dtype names), so the tests run without torch; the ``*_vs_torch`` tests
compare directly when torch is installed.
"""

import copy
import pickle
import warnings

import numpy as np
import pytest

import ferrotorch as ft
from ferrotorch import _tensor_str


def _norm(s):
    return s.replace("ferrotorch", "torch")


@pytest.fixture
def default_printoptions():
    yield
    ft.set_printoptions(profile="default")


def _storage(t):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return t.storage()


# --------------------------------------------------------------------------- printing

def test_edgeitems_zero_prints_bare_ellipsis_and_size(default_printoptions):
    ft.set_printoptions(edgeitems=0, threshold=3)
    assert repr(ft.arange(30)) == "tensor([...], size=(30,))"
    assert repr(ft.arange(50.0).reshape(5, 10)) == "tensor([...], size=(5, 10))"
    # Not summarised (numel <= threshold): all values, but the size is still spelled out.
    assert repr(ft.tensor([1.0, 2.0, 300.0])) == "tensor([  1.,   2., 300.], size=(3,))"


def test_printoptions_context_and_get(default_printoptions):
    opts = _tensor_str.get_printoptions()
    assert opts == dict(precision=4, threshold=1000, edgeitems=3, linewidth=80, sci_mode=None)
    with _tensor_str.printoptions(precision=2):
        assert repr(ft.tensor([1 / 3])) == "tensor([0.33])"
    assert repr(ft.tensor([1 / 3])) == "tensor([0.3333])"
    assert _tensor_str.get_printoptions() == opts


def test_printing_unchanged_cases():
    # Cases that already matched PyTorch: keep them so.
    assert repr(ft.tensor([1e-5, 1.0, 100.0])) == "tensor([1.0000e-05, 1.0000e+00, 1.0000e+02])"
    assert repr(ft.tensor([float("nan"), float("inf"), -0.0, 2.0])) == (
        "tensor([nan, inf, -0., 2.])")
    assert _norm(repr(ft.zeros(2, 0, dtype=ft.int32))) == (
        "tensor([], size=(2, 0), dtype=torch.int32)")
    assert repr(ft.ones(2, requires_grad=True) * 2) == (
        "tensor([2., 2.], grad_fn=<MulBackward0>)")
    assert repr(ft.arange(2000)) == "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"


def test_suffixes_wrap_at_linewidth(default_printoptions):
    t = ft.tensor([[-100.5, 159.1], [-125.6, -310.6]]).reshape(1, 1, 2, 2).expand(1, 1, 2, 2)
    assert repr(t * ft.ones(1, requires_grad=True)) == (
        "tensor([[[[-100.5000,  159.1000],\n"
        "          [-125.6000, -310.6000]]]], grad_fn=<MulBackward0>)")
    wide = ft.arange(10.0).reshape(2, 5) * 1e3 + 0.5
    assert repr(wide * ft.ones(1, requires_grad=True)) == (
        "tensor([[5.0000e-01, 1.0005e+03, 2.0005e+03, 3.0005e+03, 4.0005e+03],\n"
        "        [5.0005e+03, 6.0005e+03, 7.0005e+03, 8.0005e+03, 9.0005e+03]],\n"
        "       grad_fn=<MulBackward0>)")
    ft.set_printoptions(linewidth=55)
    x = ft.tensor(float("-inf"), dtype=ft.float64, requires_grad=True) * 1
    assert _norm(repr(x)) == (
        "tensor(-inf, dtype=torch.float64,\n       grad_fn=<MulBackward0>)")


def test_printing_vs_torch(default_printoptions):
    torch = pytest.importorskip("torch")
    for opts in (dict(edgeitems=0, threshold=3), dict(edgeitems=1, threshold=5), {}):
        for m in (torch, ft):
            m.set_printoptions(**opts)
        for mk in (lambda m: m.arange(40.0) / 3, lambda m: m.arange(24).reshape(2, 3, 4),
                   lambda m: m.tensor([1e-6, 1.0])):
            assert _norm(repr(mk(ft))) == repr(mk(torch))
        for m in (torch, ft):
            m.set_printoptions(profile="default")


# --------------------------------------------------------------------------- torch.Size

def test_size_pickles_as_size():
    s = pickle.loads(pickle.dumps(ft.Size([2, 3])))
    assert type(s) is ft.Size and s == (2, 3)
    assert ft.Size.__reduce__(ft.Size([2, 3]))[0] is ft.Size


# --------------------------------------------------------------------------- pickle / copy

def test_pickle_keeps_strides_offset_and_requires_grad():
    t = ft.arange(6.0).reshape(2, 3).t()
    u = pickle.loads(pickle.dumps(t))
    assert u.stride() == (1, 3) and not u.is_contiguous()
    np.testing.assert_array_equal(u.numpy(), [[0, 3], [1, 4], [2, 5]])
    v = pickle.loads(pickle.dumps(ft.arange(6.0)[2:]))
    np.testing.assert_array_equal(v.numpy(), [2, 3, 4, 5])
    e = pickle.loads(pickle.dumps(ft.arange(3.0).expand(4, 3)))
    assert e.stride() == (0, 1) and e.tolist() == [[0.0, 1.0, 2.0]] * 4
    # One element of a large tensor does not carry the whole storage along.
    assert len(pickle.dumps(ft.arange(100000.0)[5])) < 1000
    # A non-leaf keeps requires_grad (it comes back as a leaf), as in PyTorch.
    w = pickle.loads(pickle.dumps(ft.ones(2, requires_grad=True) * 2))
    assert w.requires_grad and w.is_leaf
    b = pickle.loads(pickle.dumps(ft.tensor([1.5, 2.25], dtype=ft.bfloat16)))
    assert b.dtype == ft.bfloat16 and b.tolist() == [1.5, 2.25]


def test_pickle_does_not_share_but_deepcopy_does():
    a = ft.arange(6.0)
    a2, v2 = pickle.loads(pickle.dumps((a, a[2:])))
    a2[3] = 100.0
    assert v2.tolist() == [2.0, 3.0, 4.0, 5.0]  # plain pickle: separate copies (as torch)
    a3, v3 = copy.deepcopy((a, a[2:]))
    a3[3] = 100.0
    assert v3.tolist() == [2.0, 100.0, 4.0, 5.0] and v3.storage_offset() == 2
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_deepcopy_copies_grad_and_refuses_non_leaf():
    a = ft.ones(2, requires_grad=True)
    a.grad = ft.tensor([1.0, 2.0])
    b = copy.deepcopy(a)
    assert b is not a and b.requires_grad and b.is_leaf
    assert b.grad.tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="Only Tensors created explicitly by the user"):
        copy.deepcopy(a * 2)


def test_copy_copy_shares_memory():
    a = ft.ones(2, requires_grad=True)
    b = copy.copy(a)
    assert b.requires_grad and b.is_leaf and b.data_ptr() == a.data_ptr()
    c = ft.ones(3)
    copy.copy(c)[0] = 5.0
    assert c.tolist() == [5.0, 1.0, 1.0]


def test_pickle_and_deepcopy_vs_torch():
    torch = pytest.importorskip("torch")
    res = []
    for m in (torch, ft):
        a = m.arange(6.0)
        out = copy.deepcopy((a, a[2:].view(2, 2).t()))
        out[0][3] = 100.0
        res.append((out[1].tolist(), out[1].stride(), out[1].storage_offset()))
    assert res[0] == res[1]


# --------------------------------------------------------------------------- storages

def test_typed_storage_elements():
    a = ft.arange(4.0)
    s = _storage(a)
    assert s.tolist() == [0.0, 1.0, 2.0, 3.0] and list(s) == s.tolist()
    assert s[-1] == 3.0 and s[1] == 1.0
    with pytest.raises(IndexError, match="index 10 out of range for storage of size 4"):
        s[10]
    with pytest.raises(RuntimeError, match="slices are only supported in UntypedStorage"):
        s[1:2]
    s[0] = 9.0  # writes through to the tensor
    assert a.tolist() == [9.0, 1.0, 2.0, 3.0]
    g = ft.ones(2, requires_grad=True)
    _storage(g)[1] = 3.0
    assert g.tolist() == [1.0, 3.0]


def test_untyped_storage_bytes():
    u = ft.arange(4.0).untyped_storage()
    assert u[0] == 0 and u[-1] == 64  # little-endian float32 3.0 = 00 00 40 40
    assert list(u)[:8] == [0, 0, 0, 0, 0, 0, 128, 63]
    with pytest.raises(IndexError, match="index 100 out of range for storage of size 16"):
        u[100]


def test_storage_repr():
    assert _norm(repr(_storage(ft.tensor([True, False])))) == (
        " True\n False\n[torch.storage.TypedStorage(dtype=torch.bool, device=cpu) of size 2]")
    assert _norm(repr(_storage(ft.zeros(0)))) == (
        " \n[torch.storage.TypedStorage(dtype=torch.float32, device=cpu) of size 0]")
    assert _norm(repr(ft.arange(3, dtype=ft.uint8).untyped_storage())) == (
        " 0\n 1\n 2\n[torch.storage.UntypedStorage(device=cpu) of size 3]")


def test_storage_vs_torch():
    torch = pytest.importorskip("torch")
    for mk in (lambda m: m.arange(3.0), lambda m: m.tensor([1.5, 2.25], dtype=m.bfloat16),
               lambda m: m.arange(6)[2:]):
        assert _norm(repr(_storage(mk(ft)))) == repr(_storage(mk(torch)))
        assert _norm(repr(mk(ft).untyped_storage())) == repr(mk(torch).untyped_storage())


# --------------------------------------------------------------------------- return_types

def test_return_type_from_one_sequence():
    r = ft.return_types.max((ft.tensor(1.0), ft.tensor(0)))
    assert _norm(repr(r)) == "torch.return_types.max(\nvalues=tensor(1.),\nindices=tensor(0))"
    assert r.values.item() == 1.0 and r.indices.item() == 0
    v = ft.return_types.sort(ft.tensor([4, 5]))  # a tensor is a sequence too
    assert v.values.item() == 4 and v.indices.item() == 5
    with pytest.raises(TypeError, match=r"max\(\) takes a 2-sequence \(3-sequence given\)"):
        ft.return_types.max((1, 2, 3))
    with pytest.raises(TypeError, match="constructor requires a sequence"):
        ft.return_types.max(1)
    # What the reductions return still pickles and copies.
    m = ft.tensor([3.0, 1.0]).max(0)
    assert repr(pickle.loads(pickle.dumps(m))) == repr(copy.deepcopy(m)) == repr(m)


def test_memory_format_and_layout_classes_are_public_names():
    assert _norm(repr(ft.memory_format)) == "<class 'torch.memory_format'>"
    assert _norm(repr(ft.layout)) == "<class 'torch.layout'>"
    assert pickle.loads(pickle.dumps(ft.memory_format)) is ft.memory_format
    assert pickle.loads(pickle.dumps(ft.channels_last)) is ft.channels_last


def test_storage_methods():
    a = ft.arange(3.0)
    s, u = _storage(a), a.untyped_storage()
    assert _norm(s.type()) == "torch.FloatStorage"
    assert _norm(u.type()) == "torch.storage.UntypedStorage"
    assert not s.is_shared() and not s.is_pinned() and not s.is_sparse and u.untyped() is u
    c = s.clone()
    c[0] = 7.0  # new memory
    assert a.tolist() == [0.0, 1.0, 2.0] and c.tolist() == [7.0, 1.0, 2.0]
    assert u.clone().tolist()[4:8] == [0, 0, 128, 63]
    assert s.fill_(2.0) is s and a.tolist() == [2.0, 2.0, 2.0]
    s.copy_(_storage(ft.arange(3.0)))
    assert a.tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(RuntimeError, match="size does not match, self was 12 bytes but src "
                                           "was 16 bytes"):
        s.copy_(_storage(ft.arange(4.0)))
    assert u.fill_(0) is u and a.tolist() == [0.0, 0.0, 0.0]
    assert u.cpu() is u and s.cpu().data_ptr() == s.data_ptr()
