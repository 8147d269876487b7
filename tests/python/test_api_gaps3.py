"""API gaps: torch.* spellings of functional ops, torch.<op>_, *_copy, unravel_index, rsub,
float32 matmul precision, typename/is_storage/is_same_size, Tensor.new/to_dense/flags/in-place
cumsum_..., autograd.Variable, linalg.LinAlgError, nn.utils fusion and memory-format
conversion, clip_grads_with_norm_, DistributedSampler, SyncBatchNorm, DataParallel,
LazyConvTranspose3d."""

import copy

import numpy as np
import pytest

import ferrotorch as torch
import ferrotorch.nn.functional as F


def arr(t):
    return t.detach().numpy()


# ------------------------------------------------------------------ functional spellings
def test_functional_spellings_match_nn_functional():
    torch.manual_seed(0)
    x = torch.randn(4, 5)
    y = torch.randn(4, 5)
    np.testing.assert_allclose(arr(torch.cosine_similarity(x, y)),
                               arr(F.cosine_similarity(x, y)), rtol=1e-6)
    np.testing.assert_allclose(arr(torch.pairwise_distance(x, y)),
                               arr(F.pairwise_distance(x, y)), rtol=1e-6)
    np.testing.assert_allclose(arr(torch.pdist(x)), arr(F.pdist(x)), rtol=1e-6)
    np.testing.assert_allclose(arr(torch.selu(x)), arr(F.selu(x)), rtol=1e-6)
    np.testing.assert_allclose(arr(torch.celu(x, 0.5)), arr(F.celu(x, 0.5)), rtol=1e-6)
    np.testing.assert_allclose(arr(torch.threshold(x, 0.1, -3.0)),
                               np.where(arr(x) > 0.1, arr(x), -3.0))
    np.testing.assert_allclose(arr(torch.hardshrink(x, 0.5)),
                               np.where(np.abs(arr(x)) > 0.5, arr(x), 0.0))
    np.testing.assert_allclose(arr(x.hardshrink()), arr(torch.hardshrink(x)))
    w = torch.tensor([0.25])
    np.testing.assert_allclose(arr(torch.prelu(x, w)), np.where(arr(x) > 0, arr(x),
                                                                0.25 * arr(x)), rtol=1e-6)
    np.testing.assert_allclose(arr(x.prelu(w)), arr(torch.prelu(x, w)))
    np.testing.assert_allclose(arr(torch.rrelu(x)), np.where(arr(x) >= 0, arr(x),
                                                             arr(x) * (1 / 8 + 1 / 3) / 2),
                               rtol=1e-6)
    z = x.clone()
    assert torch.relu_(z) is z and (arr(z) >= 0).all()
    np.testing.assert_array_equal(arr(torch.dropout(x, 0.5, False)), arr(x))
    d = torch.dropout(torch.ones(1000), 0.5, True)
    assert set(np.unique(arr(d))) <= {0.0, 2.0}
    np.testing.assert_array_equal(arr(torch.alpha_dropout(x, 0.5, False)), arr(x))
    f = torch.feature_dropout(torch.ones(8, 50, 3), 0.5, True)
    per_channel = arr(f)[..., 0]
    assert set(np.unique(per_channel)) <= {0.0, 2.0}
    np.testing.assert_array_equal(arr(f), np.repeat(per_channel[..., None], 3, -1))
    with pytest.raises(RuntimeError):
        torch.feature_dropout(torch.ones(3), 0.5, True)
    np.testing.assert_array_equal(arr(torch.constant_pad_nd(torch.ones(1, 2), [1, 1], 5.0)),
                                  [[5.0, 1.0, 1.0, 5.0]])
    e = torch.embedding(torch.eye(3), torch.tensor([0, 2]))
    np.testing.assert_array_equal(arr(e), [[1, 0, 0], [0, 0, 1]])
    g = torch.channel_shuffle(torch.arange(4.0).reshape(1, 4, 1, 1), 2)
    np.testing.assert_array_equal(arr(g).ravel(), [0, 2, 1, 3])


def test_functional_spellings_autograd():
    x = torch.randn(3, 4, requires_grad=True)
    torch.selu(x).sum().backward()
    assert x.grad is not None and x.grad.shape == (3, 4)
    w = torch.eye(3, requires_grad=True)
    torch.embedding(w, torch.tensor([0, 0, 2])).sum().backward()
    np.testing.assert_array_equal(arr(w.grad), [[2, 2, 2], [0, 0, 0], [1, 1, 1]])


def test_inplace_functions():
    x = torch.tensor([0.25, 1.0, 4.0])
    assert torch.sqrt_(x) is x
    np.testing.assert_allclose(arr(x), [0.5, 1.0, 2.0])
    y = torch.tensor([-1.5, 2.5])
    torch.abs_(y)
    torch.clamp_(y, max=2.0)
    np.testing.assert_allclose(arr(y), [1.5, 2.0])
    z = torch.ones(3)
    assert torch.zero_(z) is z and arr(z).sum() == 0
    torch.fill_(z, 7.0)
    np.testing.assert_array_equal(arr(z), [7, 7, 7])
    np.testing.assert_array_equal(arr(torch.fill(z, 2.0)), [2, 2, 2])
    assert arr(z)[0] == 7  # out of place
    assert torch.fill(torch.ones(2, dtype=torch.int64), 2.5).dtype == torch.int64


def test_copy_functions_are_contiguous_copies():
    x = torch.randn(2, 3)
    p = torch.permute_copy(x, (1, 0))
    assert p.is_contiguous() and p.stride() == (2, 1)
    np.testing.assert_array_equal(arr(p), arr(x).T)
    t = torch.t_copy(x)
    t.add_(1)
    np.testing.assert_array_equal(arr(x).T + 1, arr(t))
    np.testing.assert_array_equal(arr(torch.view_copy(torch.arange(6), 2, 3)),
                                  np.arange(6).reshape(2, 3))
    parts = torch.split_copy(torch.arange(5), 2)
    assert [arr(q).tolist() for q in parts] == [[0, 1], [2, 3], [4]]
    np.testing.assert_array_equal(arr(torch.slice_copy(torch.arange(10), 0, 2, 8, 3)), [2, 5])
    np.testing.assert_array_equal(arr(torch.diagonal_copy(torch.eye(3))), [1, 1, 1])
    np.testing.assert_array_equal(arr(torch.expand_copy(torch.ones(1, 2), (3, 2))),
                                  np.ones((3, 2)))
    assert torch.unsqueeze_copy(x, 0).shape == (1, 2, 3)


def test_unravel_index():
    r = torch.unravel_index(torch.tensor([4, 7, 0]), (2, 4))
    np.testing.assert_array_equal([arr(a) for a in r],
                                  np.unravel_index([4, 7, 0], (2, 4)))
    r = torch.unravel_index(torch.tensor(5), (2, 3))
    assert [a.item() for a in r] == [1, 2] and r[0].dim() == 0
    assert [a.item() for a in torch.unravel_index(torch.tensor(-1), (2, 4))] == [1, 3]
    r = torch.unravel_index(torch.tensor([[1, 2], [3, 4]]), (5,))
    assert len(r) == 1 and r[0].shape == (2, 2)
    with pytest.raises(TypeError):
        torch.unravel_index(torch.tensor(1.0), (2, 4))


def test_rsub_and_small_functions():
    x = torch.tensor([1.0, 2.0])
    np.testing.assert_allclose(arr(torch.rsub(x, 3)), [2.0, 1.0])
    np.testing.assert_allclose(arr(torch.rsub(x, 3, alpha=2)), [1.0, -1.0])
    np.testing.assert_allclose(arr(torch.rsub(x, torch.tensor([5.0, 5.0]), alpha=2)),
                               [3.0, 1.0])
    assert torch.is_same_size(x, torch.zeros(2)) and not torch.is_same_size(x, torch.zeros(3))
    assert x.is_same_size(torch.zeros(2))
    assert torch.typename(3) == "int"
    assert torch.typename(torch.nn.Linear(1, 1)).endswith("nn.modules.linear.Linear")
    assert torch.typename(x) == x.type()
    assert torch.is_storage(x.untyped_storage()) and not torch.is_storage(x)
    assert torch.get_device(x) == -1
    assert torch.detach(x.requires_grad_()).requires_grad is False
    a, b = torch.unsafe_chunk(torch.arange(4), 2)
    assert arr(b).tolist() == [2, 3]
    assert len(torch.arange(5).unsafe_split(2)) == 3


def test_float32_matmul_precision():
    old = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.set_float32_matmul_precision("highest")
        assert torch.get_float32_matmul_precision() == "highest"
        assert torch.backends.cuda.matmul.allow_tf32 is False
        torch.set_float32_matmul_precision("medium")
        assert torch.get_float32_matmul_precision() == "medium"
        assert torch.backends.cuda.matmul.allow_tf32 is True
        with pytest.warns(UserWarning):
            torch.set_float32_matmul_precision("bogus")
        assert torch.get_float32_matmul_precision() == "medium"
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old


# ------------------------------------------------------------------ Tensor members
def test_tensor_new():
    x = torch.ones(2, dtype=torch.float64)
    assert x.new().shape == (0,) and x.new().dtype == torch.float64
    assert x.new(2, 3).shape == (2, 3) and x.new(2, 3).dtype == torch.float64
    assert x.new(torch.Size([4])).shape == (4,)
    d = x.new([1, 2])
    assert d.dtype == torch.float64 and arr(d).tolist() == [1.0, 2.0]
    assert x.new((2, 3)).tolist() == [2.0, 3.0]
    src = torch.zeros(3, dtype=torch.float64)
    alias = x.new(src)
    alias.add_(1)
    assert src.tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(TypeError):
        x.new(torch.ones(2, dtype=torch.int64))


def test_tensor_flags_and_misc():
    x = torch.randn(2, 3)
    for name in ("is_sparse", "is_sparse_csr", "is_quantized", "is_meta", "is_mkldnn",
                 "is_nested", "is_mps", "is_xpu"):
        assert getattr(x, name) is False, name
    assert x.to_dense() is x
    assert x.to_dense(torch.float64).dtype == torch.float64
    assert x.const_data_ptr() == x.data_ptr()


def test_tensor_inplace_cum_and_special():
    a = np.array([1.0, 2.0, 3.0, 4.0])
    x = torch.tensor(a)
    assert x.cumsum_(0) is x
    np.testing.assert_allclose(arr(x), np.cumsum(a))
    y = torch.tensor(a)
    y.cumprod_(0)
    np.testing.assert_allclose(arr(y), np.cumprod(a))
    p = torch.tensor([0.2, 0.5])
    p.logit_()
    np.testing.assert_allclose(arr(p), np.log(np.array([0.2, 0.5]) / (1 - np.array([0.2, 0.5]))),
                               rtol=1e-6)
    q = torch.tensor([0.0, 1.0])
    q.i0_()
    np.testing.assert_allclose(arr(q), np.i0([0.0, 1.0]), rtol=1e-6)
    w = torch.tensor([[2.0, 3.0], [1.0, 0.0]])
    spd = w @ w.T + torch.eye(2)
    c = torch.linalg.cholesky(spd)
    np.testing.assert_allclose(arr(c.cholesky_inverse()), np.linalg.inv(arr(spd)), rtol=1e-5)
    # Only the factor's triangle is read, as in PyTorch (the other one may hold anything).
    junk = c + c.mT.triu(1) * 5
    np.testing.assert_allclose(arr(torch.cholesky_inverse(junk)), np.linalg.inv(arr(spd)),
                               rtol=1e-5)
    np.testing.assert_allclose(arr(torch.cholesky_inverse(junk.mT, upper=True)),
                               np.linalg.inv(arr(spd)), rtol=1e-5)


def test_cumsum_inplace_autograd():
    x = torch.randn(4, requires_grad=True)
    y = x * 1
    y.cumsum_(0)
    y.sum().backward()
    np.testing.assert_allclose(arr(x.grad), [4, 3, 2, 1])


# ------------------------------------------------------------------ autograd.Variable
def test_variable():
    from ferrotorch.autograd import Variable
    from ferrotorch.autograd.variable import Variable as V2
    assert V2 is Variable
    base = torch.ones(3)
    v = Variable(base, requires_grad=True)
    assert type(v) is torch.Tensor and v.requires_grad and v.is_leaf
    assert isinstance(torch.ones(1), Variable)
    assert not isinstance(3, Variable)
    (v * 2).sum().backward()
    np.testing.assert_array_equal(arr(v.grad), [2, 2, 2])
    assert v.data_ptr() == base.data_ptr()
    assert Variable().shape == (0,)
    w = torch.ones(2, requires_grad=True)
    assert Variable(w).requires_grad is False and Variable(w).grad_fn is None
    with pytest.raises(TypeError, match="Variable data has to be a tensor"):
        Variable([1, 2])


# ------------------------------------------------------------------ linalg.LinAlgError
def test_linalg_error():
    assert issubclass(torch.linalg.LinAlgError, RuntimeError)
    with pytest.raises(torch.linalg.LinAlgError, match="positive-definite"):
        torch.linalg.cholesky(-torch.eye(2))
    with pytest.raises(torch.linalg.LinAlgError, match="singular"):
        torch.linalg.inv(torch.zeros(2, 2))
    with pytest.raises(torch.linalg.LinAlgError):
        torch.inverse(torch.zeros(2, 2))
    with pytest.raises(torch.linalg.LinAlgError):
        torch.zeros(3, 3).inverse()
    with pytest.raises(torch.linalg.LinAlgError):
        torch.linalg.solve(torch.zeros(2, 2), torch.ones(2))
    with pytest.raises(RuntimeError) as info:  # a shape error is not a LinAlgError
        torch.linalg.inv(torch.zeros(2, 3))
    assert not isinstance(info.value, torch.linalg.LinAlgError)
    np.testing.assert_allclose(arr(torch.linalg.inv(torch.eye(2) * 2)), np.eye(2) / 2)


# ------------------------------------------------------------------ nn.utils
def _bn_eval(n):
    bn = torch.nn.BatchNorm2d(n)
    with torch.no_grad():
        bn.running_mean.copy_(torch.randn(n))
        bn.running_var.copy_(torch.rand(n) + 0.5)
        bn.weight.copy_(torch.randn(n))
        bn.bias.copy_(torch.randn(n))
    return bn.eval()


def test_fuse_conv_bn_eval():
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(3, 4, 3).eval()
    bn = _bn_eval(4)
    x = torch.randn(2, 3, 6, 6)
    fused = torch.nn.utils.fuse_conv_bn_eval(conv, bn)
    assert fused is not conv and isinstance(fused.weight, torch.nn.Parameter)
    np.testing.assert_allclose(arr(fused(x)), arr(bn(conv(x))), rtol=1e-4, atol=1e-5)
    convt = torch.nn.ConvTranspose2d(3, 4, 3).eval()
    fused_t = torch.nn.utils.fuse_conv_bn_eval(convt, bn, transpose=True)
    np.testing.assert_allclose(arr(fused_t(x)), arr(bn(convt(x))), rtol=1e-4, atol=1e-5)
    nobias = torch.nn.Conv2d(3, 4, 3, bias=False).eval()
    fb = torch.nn.utils.fuse_conv_bn_eval(nobias, bn)
    np.testing.assert_allclose(arr(fb(x)), arr(bn(nobias(x))), rtol=1e-4, atol=1e-5)
    with pytest.raises(AssertionError):
        torch.nn.utils.fuse_conv_bn_eval(torch.nn.Conv2d(3, 4, 3), bn)


def test_fuse_linear_bn_eval():
    torch.manual_seed(1)
    lin = torch.nn.Linear(5, 4).eval()
    bn = torch.nn.BatchNorm1d(4)
    with torch.no_grad():
        bn.running_mean.copy_(torch.randn(4))
        bn.running_var.copy_(torch.rand(4) + 0.5)
    bn.eval()
    x = torch.randn(3, 5)
    fused = torch.nn.utils.fuse_linear_bn_eval(lin, bn)
    np.testing.assert_allclose(arr(fused(x)), arr(bn(lin(x))), rtol=1e-4, atol=1e-5)
    w, b = torch.nn.utils.fuse_linear_bn_weights(lin.weight, None, bn.running_mean,
                                                 bn.running_var, bn.eps, bn.weight, bn.bias)
    assert w.shape == (4, 5) and b.shape == (4,)


def test_convert_conv_weight_memory_format():
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Sequential(
        torch.nn.ConvTranspose2d(4, 2, 3)), torch.nn.Linear(2, 2))
    ref = arr(m[0].weight).copy()
    out = torch.nn.utils.convert_conv2d_weight_memory_format(m, torch.channels_last)
    assert out is m
    assert m[0].weight.is_contiguous(memory_format=torch.channels_last)
    assert m[1][0].weight.is_contiguous(memory_format=torch.channels_last)
    assert isinstance(m[0].weight, torch.nn.Parameter)
    np.testing.assert_array_equal(arr(m[0].weight), ref)
    m3 = torch.nn.Conv3d(2, 3, 3)
    torch.nn.utils.convert_conv3d_weight_memory_format(m3, torch.channels_last_3d)
    assert m3.weight.is_contiguous(memory_format=torch.channels_last_3d)


def test_clip_grads_with_norm_():
    p = torch.nn.Parameter(torch.ones(4))
    p.grad = torch.full((4,), 3.0)
    total = torch.nn.utils.get_total_norm([p.grad])
    torch.nn.utils.clip_grads_with_norm_([p], 1.0, total)
    np.testing.assert_allclose(np.linalg.norm(arr(p.grad)), 1.0, rtol=1e-5)
    q = torch.nn.Parameter(torch.ones(2))
    q.grad = torch.full((2,), 0.1)
    torch.nn.utils.clip_grads_with_norm_(q, 10.0, torch.nn.utils.get_total_norm([q.grad]))
    np.testing.assert_allclose(arr(q.grad), [0.1, 0.1], rtol=1e-6)


# ------------------------------------------------------------------ data / nn modules
def test_distributed_sampler():
    from ferrotorch.utils.data import DistributedSampler
    from ferrotorch.utils.data.distributed import DistributedSampler as DS2
    assert DS2 is DistributedSampler
    data = list(range(10))
    shards = [list(DistributedSampler(data, num_replicas=3, rank=r, shuffle=False))
              for r in range(3)]
    assert shards == [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]
    s = DistributedSampler(data, num_replicas=3, rank=0, shuffle=False, drop_last=True)
    assert len(s) == 3 and list(s) == [0, 3, 6]
    s0 = DistributedSampler(data, num_replicas=2, rank=0, seed=5)
    s1 = DistributedSampler(data, num_replicas=2, rank=1, seed=5)
    assert sorted(list(s0) + list(s1)) == data
    e0 = list(s0)
    s0.set_epoch(1)
    assert list(s0) != e0 or True  # reshuffled per epoch (may coincide)
    s0.set_epoch(0)
    assert list(s0) == e0
    with pytest.raises(ValueError, match="Invalid rank"):
        DistributedSampler(data, num_replicas=2, rank=2)
    with pytest.raises(RuntimeError):
        DistributedSampler(data)  # no process group
    loader = torch.utils.data.DataLoader(data, batch_size=2, sampler=s1)
    assert sum(len(b) for b in loader) == 5


def test_sync_batchnorm_single_process():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4),
                              torch.nn.Sequential(torch.nn.BatchNorm2d(4)))
    ref = copy.deepcopy(net)
    conv = torch.nn.SyncBatchNorm.convert_sync_batchnorm(net)
    assert isinstance(conv[1], torch.nn.SyncBatchNorm)
    assert isinstance(conv[2][0], torch.nn.SyncBatchNorm)
    assert conv[1].weight is ref[1].weight or conv[1].weight.shape == (4,)
    x = torch.randn(2, 3, 5, 5)
    np.testing.assert_allclose(arr(conv(x)), arr(ref(x)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(arr(conv[1].running_mean), arr(ref[1].running_mean), rtol=1e-6)
    s = torch.nn.SyncBatchNorm(3)
    assert s(torch.randn(4, 3)).shape == (4, 3)  # any rank >= 2
    with pytest.raises(ValueError):
        s(torch.randn(3))
    assert "SyncBatchNorm(3, eps=1e-05" in repr(s)


def test_data_parallel_cpu_passthrough():
    m = torch.nn.Linear(3, 2)
    dp = torch.nn.DataParallel(m)
    assert dp.module is m
    x = torch.randn(4, 3)
    np.testing.assert_array_equal(arr(dp(x)), arr(m(x)))
    assert list(dp.state_dict()) == ["module.weight", "module.bias"]
    from ferrotorch.nn.parallel import DataParallel
    assert DataParallel is torch.nn.DataParallel


def test_lazy_conv_transpose3d():
    with pytest.warns(UserWarning):
        m = torch.nn.LazyConvTranspose3d(4, 3)
    y = m(torch.randn(1, 2, 4, 4, 4))
    assert y.shape == (1, 4, 6, 6, 6)
    assert type(m) is torch.nn.ConvTranspose3d and m.weight.shape == (2, 4, 3, 3, 3)


# ------------------------------------------------------------------ against PyTorch
def test_against_torch():
    pt = pytest.importorskip("torch")
    a = np.random.randn(4, 5).astype(np.float32)
    b = np.random.randn(4, 5).astype(np.float32)
    x, y, tx, ty = torch.tensor(a), torch.tensor(b), pt.tensor(a), pt.tensor(b)
    for name, args in (("cosine_similarity", ()), ("pairwise_distance", ())):
        np.testing.assert_allclose(arr(getattr(torch, name)(x, y, *args)),
                                   getattr(pt, name)(tx, ty, *args).numpy(), rtol=1e-5)
    for name in ("selu", "celu", "hardshrink", "pdist"):
        np.testing.assert_allclose(arr(getattr(torch, name)(x)), getattr(pt, name)(tx).numpy(),
                                   rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(arr(torch.rsub(x, 2.0, alpha=3)),
                               pt.rsub(tx, 2.0, alpha=3).numpy(), rtol=1e-6, atol=1e-6)
    idx = [4, 7, 0, -1, 9]
    for r, tr in zip(torch.unravel_index(torch.tensor(idx), (2, 4)),
                     pt.unravel_index(pt.tensor(idx), (2, 4))):
        np.testing.assert_array_equal(arr(r), tr.numpy())
    w = np.random.randn(6, 3).astype(np.float32)
    ids = [[0, 5], [2, 2]]
    np.testing.assert_array_equal(arr(torch.embedding(torch.tensor(w), torch.tensor(ids))),
                                  pt.embedding(pt.tensor(w), pt.tensor(ids)).numpy())
    assert torch.typename(3) == pt.typename(3)
    np.testing.assert_array_equal(arr(torch.permute_copy(x, (1, 0))),
                                  pt.permute_copy(tx, (1, 0)).numpy())
    for dl in (False, True):
        for r in range(3):
            mine = list(torch.utils.data.DistributedSampler(range(10), 3, r, shuffle=False,
                                                            drop_last=dl))
            theirs = list(pt.utils.data.DistributedSampler(range(10), 3, r, shuffle=False,
                                                           drop_last=dl))
            assert mine == theirs
    assert repr(torch.nn.SyncBatchNorm(4)) == repr(pt.nn.SyncBatchNorm(4))
    # fusion: same fused parameters as PyTorch's
    conv, bn = pt.nn.Conv2d(3, 4, 3).eval(), pt.nn.BatchNorm2d(4).eval()
    with pt.no_grad():
        bn.running_mean.copy_(pt.randn(4))
        bn.running_var.copy_(pt.rand(4) + 0.5)
    fconv = torch.nn.Conv2d(3, 4, 3).eval()
    fbn = torch.nn.BatchNorm2d(4).eval()
    fconv.load_state_dict({k: torch.tensor(v.numpy()) for k, v in conv.state_dict().items()})
    fbn.load_state_dict({k: torch.tensor(v.numpy()) for k, v in bn.state_dict().items()})
    ours = torch.nn.utils.fuse_conv_bn_eval(fconv, fbn)
    theirs = pt.nn.utils.fuse_conv_bn_eval(conv, bn)
    np.testing.assert_allclose(arr(ours.weight), theirs.weight.detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(arr(ours.bias), theirs.bias.detach().numpy(), rtol=1e-5)


def test_accelerator_module():
    acc = torch.accelerator
    assert acc.is_available() == torch.cuda.is_available()
    assert acc.device_count() == torch.cuda.device_count()
    cur = acc.current_accelerator()
    assert cur is None or cur.type == "cuda"
    if not torch.cuda.is_available():
        assert acc.current_accelerator(check_available=True) is None
        with pytest.raises(RuntimeError):
            acc.current_device_index()
    else:
        assert acc.current_accelerator(check_available=True).type == "cuda"
        with acc.device_index(0):
            assert acc.current_device_index() == 0
        acc.synchronize()


def test_set_default_tensor_type():
    old = torch.get_default_dtype()
    try:
        with pytest.warns(UserWarning, match="deprecated"):
            torch.set_default_tensor_type(torch.DoubleTensor)
        assert torch.ones(1).dtype == torch.float64
        with pytest.warns(UserWarning):
            torch.set_default_tensor_type("torch.FloatTensor")
        assert torch.ones(1).dtype == torch.float32
        with pytest.warns(UserWarning), pytest.raises(TypeError, match="floating-point"):
            torch.set_default_tensor_type(torch.LongTensor)
        with pytest.warns(UserWarning), pytest.raises(TypeError, match="floating-point"):
            torch.set_default_tensor_type(3)
        assert torch.get_default_device().type == "cpu"
    finally:
        torch.set_default_dtype(old)


def test_cpu_module():
    assert torch.cpu.is_available() and torch.cpu.device_count() == 1
    assert torch.cpu.current_device() == "cpu"
    assert torch.cpu.synchronize() is None
    with pytest.warns(FutureWarning):
        ctx = torch.cpu.amp.autocast()
    with ctx:
        y = torch.nn.functional.linear(torch.randn(2, 3), torch.randn(4, 3))
    assert y.dtype == torch.bfloat16


@pytest.mark.filterwarnings("ignore:The given buffer is not writable")
def test_frombuffer():
    import array
    b = bytearray(10)
    x = torch.frombuffer(b, dtype=torch.int16, count=2, offset=2)
    assert x.dtype == torch.int16 and x.shape == (2,)
    b[2] = 1
    assert x.tolist() == [1, 0]  # shares memory with the buffer
    x[1] = 3
    assert b[4] == 3
    a = array.array("f", [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(arr(torch.frombuffer(a, dtype=torch.float32)), [1, 2, 3])
    np.testing.assert_array_equal(
        arr(torch.frombuffer(np.arange(4, dtype=np.int64).tobytes(), dtype=torch.int64)),
        np.arange(4))
    for kw, msg in ((dict(dtype=torch.float32), "multiple of element size"),
                    (dict(dtype=torch.uint8, offset=10), "offset"),
                    (dict(dtype=torch.float32, count=3), "must not be greater"),
                    (dict(dtype=torch.uint8, count=0), "must not be 0")):
        with pytest.raises(ValueError, match=msg):
            torch.frombuffer(b, **kw)
    with pytest.raises(ValueError, match="buffer protocol"):
        torch.frombuffer([1, 2], dtype=torch.uint8)


def test_frombuffer_against_torch():
    pt = pytest.importorskip("torch")
    data = np.random.randn(6).astype(np.float32).tobytes()
    for kw in (dict(), dict(count=2, offset=8)):
        np.testing.assert_array_equal(
            arr(torch.frombuffer(bytearray(data), dtype=torch.float32, **kw)),
            pt.frombuffer(bytearray(data), dtype=pt.float32, **kw).numpy())


def _np_index_reduce(x, dim, index, src, reduce, include_self):
    out = x.copy()
    xm, sm, om = (np.moveaxis(a, dim, 0) for a in (x, src, out))
    for row in set(index.tolist()):
        vals = [sm[j] for j, i in enumerate(index) if i == row]
        if include_self:
            vals = [xm[row]] + vals
        stack = np.stack(vals)
        om[row] = {"prod": np.prod, "mean": np.mean, "amax": np.max,
                   "amin": np.min}[reduce](stack, axis=0)
    return out


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce(reduce, include_self):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    src = rng.standard_normal((5, 3)).astype(np.float32)
    index = np.array([0, 2, 0, 3, 2])
    got = torch.tensor(x).index_reduce(0, torch.tensor(index), torch.tensor(src), reduce,
                                       include_self=include_self)
    np.testing.assert_allclose(arr(got), _np_index_reduce(x, 0, index, src, reduce,
                                                          include_self), rtol=1e-5)
    src1 = rng.standard_normal((4, 2)).astype(np.float32)
    got1 = torch.index_reduce(torch.tensor(x), 1, torch.tensor([2, 2]), torch.tensor(src1),
                              reduce, include_self=include_self)
    np.testing.assert_allclose(arr(got1), _np_index_reduce(x, 1, np.array([2, 2]), src1, reduce,
                                                           include_self), rtol=1e-5)
    t = torch.tensor(x)
    assert t.index_reduce_(0, torch.tensor(index), torch.tensor(src), reduce,
                           include_self=include_self) is t


def test_index_reduce_errors_and_torch():
    x = torch.ones(3, 2)
    with pytest.raises(RuntimeError, match="Expected reduce to be one of"):
        x.index_reduce(0, torch.tensor([0]), torch.ones(1, 2), "sum")
    pt = pytest.importorskip("torch")
    a = np.random.randn(3, 2).astype(np.float32)
    s = np.random.randn(3, 2).astype(np.float32)
    for r in ("prod", "mean", "amax", "amin"):
        for inc in (True, False):
            np.testing.assert_allclose(
                arr(torch.tensor(a).index_reduce(0, torch.tensor([0, 2, 0]), torch.tensor(s), r,
                                                 include_self=inc)),
                pt.tensor(a).index_reduce(0, pt.tensor([0, 2, 0]), pt.tensor(s), r,
                                          include_self=inc).numpy(), rtol=1e-5)


def test_svd_pca_lowrank():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((20, 3)) @ rng.standard_normal((3, 12))).astype(np.float64)
    A = torch.tensor(a)
    U, S, V = torch.svd_lowrank(A, q=4)
    assert U.shape == (20, 4) and S.shape == (4,) and V.shape == (12, 4)
    np.testing.assert_allclose(arr(S)[:3], np.linalg.svd(a, compute_uv=False)[:3], rtol=1e-8)
    np.testing.assert_allclose(arr(U @ torch.diag(S) @ V.mT), a, atol=1e-8)
    Ut, St, Vt = torch.svd_lowrank(A.mT, q=3)  # m < n path
    np.testing.assert_allclose(arr(Ut @ torch.diag(St) @ Vt.mT), a.T, atol=1e-8)
    U, S, V = torch.pca_lowrank(A, q=3)
    centred = a - a.mean(0, keepdims=True)
    np.testing.assert_allclose(arr(S), np.linalg.svd(centred, compute_uv=False)[:3], rtol=1e-8)
    np.testing.assert_allclose(arr(U @ torch.diag(S) @ V.mT), centred, atol=1e-8)
    _, S_nc, _ = torch.pca_lowrank(A, q=3, center=False)
    np.testing.assert_allclose(arr(S_nc), np.linalg.svd(a, compute_uv=False)[:3], rtol=1e-8)
    with pytest.raises(ValueError, match="must be non-negative integer"):
        torch.pca_lowrank(A, q=13)
    x = torch.tensor(a, requires_grad=True)
    torch.svd_lowrank(x, q=3)[1].sum().backward()
    assert x.grad.shape == (20, 12)


def test_compiler_module_and_aliases():
    assert torch.compiler.is_compiling() is False
    assert torch.compiler.is_dynamo_compiling() is False

    @torch.compiler.disable
    def f(x):
        return x + 1

    @torch.compiler.disable(recursive=False)
    def g(x):
        return x * 2

    assert f(1) == 2 and g(3) == 6
    assert torch.compiler.allow_in_graph(f) is f
    assert torch.compiler.reset() is None
    assert torch.compiler.compile is torch.compile
    assert torch.GradScaler is torch.amp.GradScaler
    x = torch.tensor([0.0, 1.0])
    assert torch.i0_(x) is x
    np.testing.assert_allclose(arr(x), np.i0([0.0, 1.0]), rtol=1e-6)
    y = torch.tensor([0.25])
    torch.logit_(y)
    np.testing.assert_allclose(arr(y), [np.log(1 / 3)], rtol=1e-6)
    assert torch.utils.data.distributed.DistributedSampler is torch.utils.data.DistributedSampler
