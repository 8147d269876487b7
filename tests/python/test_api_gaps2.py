"""API gaps, second batch: the default device (set_default_device / get_default_device /
``with device(...)``), deterministic-algorithm flags, the complex-number API on real tensors,
``gradient`` against ``numpy.gradient``, ``distributed``/``multiprocessing`` and
``Tensor.untyped_storage()``/``storage()``."""

import math
import warnings

import numpy as np
import pytest

import ferrotorch as torch
from ferrotorch.autograd import gradcheck

F64 = torch.float64


# ------------------------------------------------------------------ default device

@pytest.fixture
def reset_default_device():
    yield
    torch.set_default_device(None)


def test_default_device_starts_cpu_and_unwrapped():
    assert torch.get_default_device() == torch.device("cpu")
    # no default-device wrapper while the default is the CPU (only the out= one, _out.py)
    assert torch.zeros.__wrapped__ is torch._C.zeros
    assert torch.zeros(2).device == torch.device("cpu")


def test_set_default_cpu_keeps_factories_unwrapped(reset_default_device):
    torch.set_default_device("cpu")
    assert torch.get_default_device() == torch.device("cpu")
    assert torch.ones.__wrapped__ is torch._C.ones
    assert torch.ones(3).tolist() == [1.0, 1.0, 1.0]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU error path")
def test_set_default_cuda_without_gpu(reset_default_device):
    torch.set_default_device("cuda")  # no error at set time
    assert torch.get_default_device() == torch.device("cuda", 0)
    for make in (lambda: torch.zeros(2), lambda: torch.tensor([1.0]),
                 lambda: torch.arange(3), lambda: torch.randn(2), lambda: torch.eye(2),
                 lambda: torch.full((2,), 1.0), lambda: torch.linspace(0, 1, 3),
                 lambda: torch.zeros(2, device=None), lambda: torch._C.empty(2),
                 lambda: torch.nn.Linear(2, 3)):
        with pytest.raises(RuntimeError, match="not available"):
            make()
    # An explicit device wins; the *_like functions keep their input's device.
    assert torch.zeros(2, device="cpu").tolist() == [0.0, 0.0]
    assert torch.tensor([1, 2], device="cpu").tolist() == [1, 2]
    x = torch.ones(2, device="cpu")
    assert torch.zeros_like(x).device == torch.device("cpu")
    assert x.new_zeros(3).device == torch.device("cpu")
    torch.set_default_device(None)
    assert torch.zeros.__wrapped__ is torch._C.zeros
    assert torch.zeros(2).device == torch.device("cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU error path")
def test_device_context_manager_nests_and_restores(reset_default_device):
    with torch.device("cuda") as d:
        assert d == torch.device("cuda")
        assert torch.get_default_device().type == "cuda"
        with pytest.raises(RuntimeError, match="not available"):
            torch.ones(1)
        with torch.device("cpu"):
            assert torch.get_default_device() == torch.device("cpu")
            assert torch.ones(1).tolist() == [1.0]
        assert torch.get_default_device().type == "cuda"
    assert torch.get_default_device() == torch.device("cpu")
    assert torch.ones.__wrapped__ is torch._C.ones


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU error path")
def test_default_device_is_per_thread(reset_default_device):
    import threading

    torch.set_default_device("cuda")
    seen = {}

    def other():
        seen["device"] = torch.get_default_device()
        seen["zeros"] = torch.zeros(2).tolist()  # this thread's default is still the CPU

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen == {"device": torch.device("cpu"), "zeros": [0.0, 0.0]}
    with pytest.raises(RuntimeError, match="not available"):
        torch.zeros(2)


def test_default_device_index_and_types(reset_default_device):
    torch.set_default_device(torch.device("cuda", 1))
    assert torch.get_default_device() == torch.device("cuda", 1)
    torch.set_default_device(0)  # a bare index is a CUDA device, as in PyTorch
    assert torch.get_default_device() == torch.device("cuda", 0)
    torch.set_default_device(None)
    assert torch.get_default_device() == torch.device("cpu")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_default_device_cuda_creates_on_gpu(reset_default_device):
    torch.set_default_device("cuda")
    assert torch.zeros(2).device.type == "cuda"
    assert torch.nn.Linear(2, 3).weight.device.type == "cuda"
    assert torch.zeros(2, device="cpu").device.type == "cpu"


# ------------------------------------------------------------------ deterministic flags

def test_deterministic_flags():
    assert torch.are_deterministic_algorithms_enabled() is False
    try:
        torch.use_deterministic_algorithms(True)
        assert torch.are_deterministic_algorithms_enabled() is True
        assert torch.is_deterministic_algorithms_warn_only_enabled() is False
        assert torch.get_deterministic_debug_mode() == 2
        torch.use_deterministic_algorithms(True, warn_only=True)
        assert torch.is_deterministic_algorithms_warn_only_enabled() is True
        assert torch.get_deterministic_debug_mode() == 1
        torch.set_deterministic_debug_mode("default")
        assert torch.are_deterministic_algorithms_enabled() is False
        torch.set_deterministic_debug_mode(2)
        assert torch.are_deterministic_algorithms_enabled() is True
        with pytest.raises(RuntimeError, match="expected one of `default`, `warn`, `error`"):
            torch.set_deterministic_debug_mode("loud")
        with pytest.raises(RuntimeError, match="expected 0, 1, or 2, but got 3"):
            torch.set_deterministic_debug_mode(3)
        with pytest.raises(TypeError, match="argument 'mode' \\(position 1\\) must be bool"):
            torch.use_deterministic_algorithms(1)
    finally:
        torch.use_deterministic_algorithms(False)
    assert torch.are_deterministic_algorithms_enabled() is False
    assert torch.is_deterministic_algorithms_warn_only_enabled() is False
    # backends.cudnn.deterministic is its own flag, as in PyTorch.
    assert torch.backends.cudnn.deterministic is False


# ------------------------------------------------------------------ complex API on real tensors

def test_real_conj_resolve_return_input_itself():
    x = torch.tensor([1.0, -2.0, 3.0])
    for fn in (torch.real, torch.conj, torch.conj_physical, torch.resolve_conj,
               torch.resolve_neg, torch.conj_physical_):
        assert fn(x) is x
    assert x.real is x
    assert x.conj() is x and x.conj_physical() is x and x.conj_physical_() is x
    assert x.resolve_conj() is x and x.resolve_neg() is x
    assert x.is_conj() is False and x.is_neg() is False
    assert torch.is_conj(x) is False and torch.is_neg(x) is False
    out = torch.empty(3)
    assert torch.conj_physical(x, out=out) is out and out.tolist() == [1.0, -2.0, 3.0]


def test_real_setter_copies():
    x = torch.zeros(3)
    x.real = torch.tensor([1.0, 2.0, 3.0])
    assert x.tolist() == [1.0, 2.0, 3.0]


def test_imag_raises():
    x = torch.tensor([1.0, 2.0])
    msg = "imag is not implemented for tensors with non-complex dtypes."
    with pytest.raises(RuntimeError, match=msg):
        torch.imag(x)
    with pytest.raises(RuntimeError, match=msg):
        _ = x.imag
    with pytest.raises(RuntimeError, match=msg):
        x.imag = torch.zeros(2)


def test_isreal_all_true():
    for x in (torch.tensor([1.0, float("nan"), -float("inf")]), torch.tensor([[1, 2]]),
              torch.tensor([True, False])):
        r = torch.isreal(x)
        assert r.dtype == torch.bool and r.shape == x.shape and bool(r.all())
        assert x.isreal().tolist() == r.tolist()


def test_angle_values_match_numpy():
    a = np.array([1.5, -2.0, 0.0, np.inf, -np.inf, np.nan, -1e-30], dtype=np.float32)
    got = torch.angle(torch.tensor(a)).numpy()
    np.testing.assert_array_equal(got, np.angle(a).astype(np.float32))
    # PyTorch's real angle is `x < 0 ? pi : 0`, so -0.0 gives 0 (NumPy's atan2 gives pi).
    assert torch.angle(torch.tensor([-0.0])).tolist() == [0.0]
    d = torch.angle(torch.tensor([-1.0, 2.0], dtype=F64))
    assert d.dtype == F64 and d.tolist() == [math.pi, 0.0]
    i = torch.tensor([-3, 0, 4])
    assert torch.angle(i).dtype == torch.float32
    np.testing.assert_allclose(i.angle().numpy(), np.angle(np.array([-3, 0, 4])), rtol=1e-6)
    out = torch.empty(2)
    assert torch.angle(torch.tensor([-1.0, 1.0]), out=out) is out
    np.testing.assert_allclose(out.numpy(), [math.pi, 0.0], rtol=1e-6)


def test_angle_gradient_is_zero():
    x = torch.tensor([1.0, -2.0, 3.0], dtype=F64, requires_grad=True)
    y = torch.angle(x)
    assert y.requires_grad
    (y * torch.tensor([1.0, 2.0, 3.0], dtype=F64)).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]
    assert gradcheck(torch.angle, (x,))


# ------------------------------------------------------------------ gradient

@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_unit_spacing_all_dims(edge_order):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 5, 3))
    got = torch.gradient(torch.tensor(a), edge_order=edge_order)
    want = np.gradient(a, edge_order=edge_order)
    assert isinstance(got, tuple) and len(got) == 3
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_scalar_and_list_spacing(edge_order):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((5, 6))
    t = torch.tensor(a)
    (g,) = torch.gradient(t, spacing=0.5, dim=1, edge_order=edge_order)
    np.testing.assert_allclose(g.numpy(), np.gradient(a, 0.5, axis=1, edge_order=edge_order))
    got = torch.gradient(t, spacing=[2.0, 3.0], edge_order=edge_order)
    want = np.gradient(a, 2.0, 3.0, edge_order=edge_order)
    for x, w in zip(got, want):
        np.testing.assert_allclose(x.numpy(), w, rtol=1e-12)
    got = torch.gradient(t, spacing=[3.0, 2.0], dim=[1, 0], edge_order=edge_order)
    np.testing.assert_allclose(got[0].numpy(), np.gradient(a, 3.0, axis=1,
                                                           edge_order=edge_order))
    np.testing.assert_allclose(got[1].numpy(), np.gradient(a, 2.0, axis=0,
                                                           edge_order=edge_order))
    (g,) = torch.gradient(t, dim=-1, edge_order=edge_order)
    np.testing.assert_allclose(g.numpy(), np.gradient(a, axis=-1, edge_order=edge_order))


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_coordinates(edge_order):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((5, 7))
    x0 = np.cumsum(rng.uniform(0.5, 2.0, 5))
    x1 = np.cumsum(rng.uniform(0.5, 2.0, 7))
    got = torch.gradient(torch.tensor(a), spacing=(torch.tensor(x0), torch.tensor(x1)),
                         edge_order=edge_order)
    want = np.gradient(a, x0, x1, edge_order=edge_order)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-10, atol=1e-12)
    (g,) = torch.gradient(torch.tensor(a), spacing=[torch.tensor(x1)], dim=1,
                          edge_order=edge_order)
    np.testing.assert_allclose(g.numpy(), np.gradient(a, x1, axis=1, edge_order=edge_order),
                               rtol=1e-10, atol=1e-12)


def test_gradient_integer_input_and_dtype():
    a = np.array([1, 2, 4, 7, 11, 16])
    (g,) = torch.gradient(torch.tensor(a))
    assert g.dtype.is_floating_point
    np.testing.assert_allclose(g.numpy(), np.gradient(a))
    (g,) = torch.gradient(torch.tensor(a, dtype=torch.float32))
    assert g.dtype == torch.float32


def test_gradient_autograd():
    x = torch.tensor(np.random.default_rng(3).standard_normal((4, 5)), requires_grad=True)
    c = torch.tensor([0.0, 1.0, 2.5, 3.0, 5.0], dtype=F64)
    assert gradcheck(lambda t: torch.gradient(t, edge_order=2), (x,))
    assert gradcheck(lambda t: torch.gradient(t, spacing=[c], dim=1), (x,))


def test_gradient_errors():
    t = torch.zeros(3, 4)
    with pytest.raises(RuntimeError, match="only supports edge_order=1 and edge_order=2"):
        torch.gradient(t, edge_order=3)
    with pytest.raises(RuntimeError, match="at least edge_order\\+1"):
        torch.gradient(torch.zeros(2, 4), edge_order=2)
    with pytest.raises(RuntimeError, match="a list of length equal to 'self.dim\\(\\) = 2'"):
        torch.gradient(t, spacing=[1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="spacing argument of length 2 and a dim argument "
                                           "of length 1"):
        torch.gradient(t, spacing=[1.0, 2.0], dim=[0])
    with pytest.raises(RuntimeError, match="does not support uint8"):
        torch.gradient(torch.zeros(3, dtype=torch.uint8))
    with pytest.raises(RuntimeError, match="to have one dimension, but got an element with 2"):
        torch.gradient(t, spacing=[torch.zeros(3, 1)], dim=0)
    with pytest.raises(RuntimeError, match="appears multiple times"):
        torch.gradient(t, dim=[0, -2])


# ------------------------------------------------------------------ distributed, multiprocessing

def test_distributed_probe():
    import ferrotorch.distributed as dist

    assert torch.distributed is dist
    assert dist.is_available() is False
    assert dist.is_initialized() is False


def _child(i, queue):
    queue.put(i * 10)


def test_multiprocessing_reexports_and_spawn():
    import multiprocessing

    import ferrotorch.multiprocessing as mp

    assert torch.multiprocessing is mp
    for name in ("Process", "Queue", "Pool", "get_context", "cpu_count", "Manager"):
        assert hasattr(mp, name)
    assert mp.cpu_count() == multiprocessing.cpu_count()
    assert mp.get_sharing_strategy() in mp.get_all_sharing_strategies()
    ctx = mp.get_context("fork")
    q = ctx.SimpleQueue()
    mp.start_processes(_child, args=(q,), nprocs=2, start_method="fork")
    assert sorted([q.get(), q.get()]) == [0, 10]


def _failing_child(i):
    raise ValueError(f"boom {i}")


def test_multiprocessing_spawn_reports_child_error():
    import ferrotorch.multiprocessing as mp

    with pytest.raises(mp.ProcessRaisedException, match="boom 0"):
        mp.start_processes(_failing_child, nprocs=1, start_method="fork")


# ------------------------------------------------------------------ storage

def test_untyped_storage_sharing():
    x = torch.arange(12.0).reshape(3, 4)
    views = (x[1], x.t(), x.view(12), x[:, 1:3], x.detach(), x.narrow(1, 2, 2))
    base = x.untyped_storage().data_ptr()
    for v in views:
        assert v.untyped_storage().data_ptr() == base
        assert v.data_ptr() == base + v.storage_offset() * v.element_size()
    for other in (x.clone(), x.contiguous().clone(), x + 0, torch.arange(12.0)):
        assert other.untyped_storage().data_ptr() != base


def test_untyped_storage_sizes():
    x = torch.zeros(3, 4, dtype=F64)
    s = x.untyped_storage()
    assert s.nbytes() == 96 and s.size() == 96 and len(s) == 96 and s.element_size() == 1
    assert s.device == torch.device("cpu")
    assert x[1].untyped_storage().nbytes() == 96  # the view's storage is the whole buffer
    i = torch.zeros(5, dtype=torch.int16)
    assert i.untyped_storage().nbytes() == 10


def test_typed_storage():
    x = torch.zeros(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = x[1].storage()
    assert s.size() == 6 and len(s) == 6 and s.element_size() == 4 and s.nbytes() == 24
    assert s.dtype == torch.float32 and s.device == torch.device("cpu")
    assert s.data_ptr() == x.untyped_storage().data_ptr()
    assert s.untyped().nbytes() == 24
