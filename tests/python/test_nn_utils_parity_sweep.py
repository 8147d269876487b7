"""Regression tests from a differential parity sweep of ``ferrotorch.nn.utils`` against PyTorch.

The expected values are hard-coded (taken from PyTorch 2.15) or computed with NumPy, so the
tests run without torch; the ``*_vs_torch`` tests compare directly when torch is installed.
"""

import numpy as np
import pytest

import ferrotorch as ft
from ferrotorch.nn.utils import rnn as R


# --------------------------------------------------------------------------- rnn.pad_sequence


def test_pad_sequence_takes_the_dtype_of_the_first_sequence():
    # PyTorch copies every sequence into a buffer of the first one's dtype (no promotion).
    out = R.pad_sequence([ft.ones(2, dtype=ft.int64), ft.ones(3)], padding_value=1.5)
    assert out.dtype == ft.int64
    np.testing.assert_array_equal(out.numpy(), [[1, 1], [1, 1], [1, 1]])
    out = R.pad_sequence([ft.ones(2), ft.ones(3, dtype=ft.int64)], padding_value=1.5)
    assert out.dtype == ft.float32
    np.testing.assert_array_equal(out.numpy(), [[1.0, 1.0], [1.0, 1.0], [1.5, 1.0]])
    out = R.pad_sequence([ft.ones(1, dtype=ft.float64), ft.ones(2)], batch_first=True)
    assert out.dtype == ft.float64
    np.testing.assert_array_equal(out.numpy(), [[1.0, 0.0], [1.0, 1.0]])


def test_pad_sequence_mixed_dtypes_keep_gradients():
    a = ft.tensor([1.0, 2.0], requires_grad=True)
    b = ft.tensor([3.0], dtype=ft.float64, requires_grad=True)
    out = R.pad_sequence([a, b], padding_side="left")
    assert out.dtype == ft.float32
    np.testing.assert_array_equal(out.detach().numpy(), [[1.0, 0.0], [2.0, 3.0]])
    out.pow(2).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 4.0])
    assert b.grad.dtype == ft.float64
    np.testing.assert_array_equal(b.grad.numpy(), [6.0])


def test_pad_sequence_rejects_non_iterables_and_0d_tensors():
    with pytest.raises(RuntimeError, match="pad_sequence: Expected iterable for input "
                       "sequences, but got arg of type: <class 'int'>"):
        R.pad_sequence(5)
    with pytest.raises(RuntimeError):
        R.pad_sequence([ft.tensor(1.0), ft.ones(3)])


@pytest.mark.parametrize("first,second", [("int64", "float32"), ("float32", "int64"),
                                          ("float64", "float32"), ("float32", "float64")])
def test_pad_sequence_dtypes_vs_torch(first, second):
    torch = pytest.importorskip("torch")
    out = []
    for lib in (torch, ft):
        seqs = [lib.ones(2, dtype=getattr(lib, first)), lib.ones(3, dtype=getattr(lib, second))]
        r = lib.nn.utils.rnn.pad_sequence(seqs, batch_first=True, padding_value=-2.5)
        out.append((str(r.dtype).split(".")[-1], r.numpy().tolist()))
    assert out[0] == out[1]


# --------------------------------------------------------------------------- PackedSequence


def _packed():
    return R.pack_sequence([ft.tensor([[1.0, 1.0]]), ft.tensor([[2.0, 2.0], [3.0, 3.0]])],
                           enforce_sorted=False)


@pytest.mark.parametrize("method,dtype", [
    ("long", ft.int64), ("int", ft.int32), ("short", ft.int16), ("char", ft.int8),
    ("byte", ft.uint8), ("double", ft.float64), ("half", ft.float16), ("float", ft.float32),
])
def test_packed_sequence_dtype_methods(method, dtype):
    p = _packed()
    q = getattr(p, method)()
    assert isinstance(q, R.PackedSequence)
    assert q.data.dtype == dtype
    np.testing.assert_array_equal(q.data.numpy().astype(float), [[2, 2], [1, 1], [3, 3]])
    # batch_sizes and the index tensors stay int64, as PyTorch.
    assert q.batch_sizes.dtype == ft.int64
    np.testing.assert_array_equal(q.batch_sizes.numpy(), [2, 1])
    np.testing.assert_array_equal(q.sorted_indices.numpy(), [1, 0])
    np.testing.assert_array_equal(q.unsorted_indices.numpy(), [1, 0])


def test_packed_sequence_pinning_follows_data():
    p = _packed()
    assert p.is_pinned() is False
    q = p.pin_memory()
    assert isinstance(q, R.PackedSequence)
    np.testing.assert_array_equal(q.data.numpy(), p.data.numpy())
    np.testing.assert_array_equal(q.sorted_indices.numpy(), [1, 0])


def test_packed_sequence_constructor_forms():
    # ``PackedSequence((data, batch_sizes), sorted_indices=...)``
    p = R.PackedSequence((ft.arange(3.0), ft.tensor([2, 1])), sorted_indices=ft.tensor([1, 0]))
    np.testing.assert_array_equal(p.data.numpy(), [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(p.batch_sizes.numpy(), [2, 1])
    np.testing.assert_array_equal(p.unsorted_indices.numpy(), [1, 0])
    with pytest.raises(AssertionError, match="Expected data to be a list or tuple of length 2"):
        R.PackedSequence(ft.arange(3.0))
    # PyTorch does not check the dtype of a hand-built batch_sizes.
    q = R.PackedSequence(ft.arange(3.0), ft.tensor([2, 1], dtype=ft.int32))
    assert q.batch_sizes.dtype == ft.int32
    assert q.sorted_indices is None and q.unsorted_indices is None


def test_pack_padded_sequence_2d_lengths_message():
    with pytest.raises(RuntimeError) as info:
        R.pack_padded_sequence(ft.zeros(4, 3), ft.tensor([[4, 2, 2]]))
    assert str(info.value) == ("'lengths' argument should be a 1D CPU int64 tensor, but got "
                               "2D cpu Long tensor")


def test_pack_sequence_fields_vs_torch():
    torch = pytest.importorskip("torch")
    seqs = [np.array([[1.0]]), np.array([[2.0], [3.0], [4.0]]), np.array([[5.0], [6.0]])]
    got = ft.nn.utils.rnn.pack_sequence([ft.tensor(s) for s in seqs], enforce_sorted=False)
    want = torch.nn.utils.rnn.pack_sequence([torch.tensor(s) for s in seqs], enforce_sorted=False)
    for name in ("data", "batch_sizes", "sorted_indices", "unsorted_indices"):
        g, w = getattr(got, name), getattr(want, name)
        assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1]
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    for method in ("long", "int", "short", "char", "byte"):
        np.testing.assert_array_equal(getattr(got, method)().data.numpy(),
                                      getattr(want, method)().data.numpy())


# --------------------------------------------------------------------------- convert_parameters


def test_vector_to_parameters_copies_into_every_handle():
    # (PyTorch points param.data at views of vec; ferrotorch copies, so that tensors reached
    # through another handle, e.g. [p.grad for p in ...], change too: see its docstring)
    p = ft.nn.Parameter(ft.zeros(2, 2))
    q = ft.nn.Parameter(ft.zeros(3))
    vec = ft.arange(7.0)
    ft.nn.utils.vector_to_parameters(vec, [p, q])
    np.testing.assert_array_equal(p.detach().numpy(), [[0.0, 1.0], [2.0, 3.0]])
    np.testing.assert_array_equal(q.detach().numpy(), [4.0, 5.0, 6.0])
    assert isinstance(p, ft.nn.Parameter) and p.requires_grad and p.is_leaf
    p.grad = ft.zeros(2, 2)
    ft.nn.utils.vector_to_parameters(ft.ones(4), [p.grad])
    np.testing.assert_array_equal(p.grad.numpy(), np.ones((2, 2)))
    with pytest.raises(RuntimeError):
        ft.nn.utils.vector_to_parameters(ft.arange(3.0), [p])
    with pytest.raises(TypeError, match="expected torch.Tensor, but got: list"):
        ft.nn.utils.vector_to_parameters([1.0], [p])


# --------------------------------------------------------------------------- fusion


def test_fuse_linear_bn_eval_mismatch_message():
    lin = ft.nn.Linear(3, 2).eval()
    bn = ft.nn.BatchNorm1d(3).eval()
    with pytest.raises(AssertionError) as info:
        ft.nn.utils.fuse_linear_bn_eval(lin, bn)
    assert str(info.value) == ("To fuse, linear.out_features == bn.num_features or "
                               "bn.num_features == 1, got linear.out_features=2 and "
                               "bn.num_features=3")


# --------------------------------------------------------------------------- exports


def test_nn_utils_all_matches_torch():
    assert ft.nn.utils.__all__ == [
        "clip_grad_norm", "clip_grad_norm_", "clip_grads_with_norm_", "clip_grad_value_",
        "convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format",
        "fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
        "fuse_linear_bn_weights", "get_total_norm", "parameters_to_vector",
        "parametrizations", "parametrize", "remove_spectral_norm", "remove_weight_norm", "rnn",
        "skip_init", "spectral_norm", "stateless", "vector_to_parameters", "weight_norm",
    ]
    for name in ft.nn.utils.__all__:
        assert hasattr(ft.nn.utils, name)
    from ferrotorch.nn.utils import clip_grad
    assert clip_grad.__all__ == ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_"]


# --------------------------------------------------------------------------- prune


def _lin():
    m = ft.nn.Linear(2, 3)
    with ft.no_grad():
        m.weight.copy_(ft.arange(6.0).reshape(3, 2) - 2.5)
        m.bias.copy_(ft.tensor([1.0, -2.0, 3.0]))
    return m


def test_prune_importance_scores_shape_message():
    import ferrotorch.nn.utils.prune as prune
    m = _lin()
    with pytest.raises(AssertionError) as info:
        prune.l1_unstructured(m, "weight", amount=1, importance_scores=ft.ones(6))
    assert str(info.value) == (
        f"importance_scores should have the same shape as parameter weight of {m}, "
        "got ferrotorch.Size([6]) vs ferrotorch.Size([3, 2])")
    # The failed call leaves the module as it was.
    assert [k for k, _ in m.named_parameters()] == ["weight", "bias"]
    with pytest.raises(AssertionError, match=r"importance_scores should have the same shape "
                       r"as tensor t, got"):
        prune.L1Unstructured(1).prune(ft.ones(3, 2), importance_scores=ft.ones(6))


def test_prune_custom_from_mask_shape_message():
    import ferrotorch.nn.utils.prune as prune
    with pytest.raises(AssertionError) as info:
        prune.custom_from_mask(_lin(), "bias", ft.ones(2))
    assert str(info.value) == ("default_mask shape ferrotorch.Size([3]) must match self.mask "
                               "shape ferrotorch.Size([2])")
    m = _lin()
    prune.custom_from_mask(m, "bias", ft.tensor([0.5, 0.0, 2.0]))
    np.testing.assert_array_equal(m.bias.detach().numpy(), [0.5, -0.0, 6.0])


def test_prune_remove_unpruned_method_message():
    import ferrotorch.nn.utils.prune as prune
    m = _lin()
    with pytest.raises(AssertionError, match="has to be pruned before pruning can be removed"):
        prune.L1Unstructured(1).remove(m)
    with pytest.raises(ValueError, match="Parameter 'weight' of module"):
        prune.remove(m, "weight")
