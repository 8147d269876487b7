"""``torch.autograd.graph.saved_tensors_hooks`` / ``save_on_cpu`` /
``disable_saved_tensors_hooks``: every tensor an op saves for backward goes through the pack
hook and comes back through the unpack hook, for the native ops and for custom
``autograd.Function``s; gradients (first and second order) stay right; errors are PyTorch's."""

import threading

import numpy as np
import pytest

import ferrotorch
from ferrotorch.autograd.graph import (disable_saved_tensors_hooks, save_on_cpu,
                                       saved_tensors_hooks)


def _torch():
    return pytest.importorskip("torch")


def counting_hooks(M, log):
    def pack(t):
        log.append(("pack", tuple(t.shape)))
        return t

    def unpack(t):
        log.append(("unpack", tuple(t.shape)))
        return t

    return M.autograd.graph.saved_tensors_hooks(pack, unpack)


def pack_counts(M):
    """How many tensors simple ops save (PyTorch saves what each formula needs)."""
    counts = {}
    x = M.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = M.tensor([1.5, 2.0, -0.5], requires_grad=True)
    c = M.tensor([1.0, 2.0, 3.0])
    cases = {
        "mul_both": lambda: x * y,
        "mul_one": lambda: x * c,
        "exp": lambda: x.exp(),
        "sin": lambda: x.sin(),
        "add": lambda: x + y,
        "sum": lambda: x.sum(),
        "matmul": lambda: x.reshape(1, 3) @ y.reshape(3, 1),
        "softmax": lambda: x.softmax(0),  # only the result, as PyTorch
        "log_softmax": lambda: x.log_softmax(0),
    }
    for name, f in cases.items():
        log = []
        with counting_hooks(M, log):
            out = f()
        out.sum().backward()
        counts[name] = (sum(1 for k, _ in log if k == "pack"),
                        sum(1 for k, _ in log if k == "unpack"))
    return counts


def test_pack_and_unpack_counts_of_simple_ops():
    assert pack_counts(ferrotorch) == {
        "mul_both": (2, 2), "mul_one": (1, 1), "exp": (1, 1), "sin": (1, 1),
        "add": (0, 0), "sum": (0, 0), "matmul": (2, 2), "softmax": (1, 1), "log_softmax": (1, 1),
    }


def test_pack_and_unpack_counts_match_torch():
    assert pack_counts(ferrotorch) == pack_counts(_torch())


def offload_program(M, hooks):
    """The 'hooks for saved tensors' tutorial: a small MLP trained one step with its saved
    activations packed by ``hooks`` (None: no hooks)."""
    M.manual_seed(0)
    model = M.nn.Sequential(M.nn.Linear(8, 16), M.nn.Tanh(), M.nn.Linear(16, 8),
                            M.nn.LayerNorm(8), M.nn.Sigmoid(), M.nn.Linear(8, 3))
    x = M.randn(5, 8)
    target = M.tensor([0, 2, 1, 1, 0])
    if hooks is None:
        loss = M.nn.functional.cross_entropy(model(x), target)
    else:
        with hooks:
            loss = M.nn.functional.cross_entropy(model(x), target)
    loss.backward()
    return loss.item(), [p.grad.clone() for p in model.parameters()]


@pytest.mark.parametrize("kind", ["identity", "half", "cpu", "numpy"])
def test_training_step_gradients_with_hooks(kind):
    M = ferrotorch
    log = []
    if kind == "identity":
        hooks = counting_hooks(M, log)
        tol = 0
    elif kind == "half":
        def pack(t):
            log.append(t.dtype)
            return t.to(M.float16)

        hooks = saved_tensors_hooks(pack, lambda t: t.to(M.float32))
        tol = 5e-3
    elif kind == "cpu":
        hooks = save_on_cpu()
        tol = 0
    else:  # parked as NumPy arrays, as a disk-offload hook would
        hooks = saved_tensors_hooks(lambda t: t.detach().numpy().copy(),
                                    lambda a: M.from_numpy(a))
        tol = 0
    loss0, grads0 = offload_program(M, None)
    loss1, grads1 = offload_program(M, hooks)
    assert loss0 == loss1
    for g0, g1 in zip(grads0, grads1):
        np.testing.assert_allclose(g1.numpy(), g0.numpy(), rtol=tol, atol=tol)
    if kind == "identity":
        packs = [s for k, s in log if k == "pack"]
        unpacks = [s for k, s in log if k == "unpack"]
        assert (5, 8) in packs and (5, 16) in packs and len(packs) >= 6
        assert sorted(unpacks) == sorted(packs)
    if kind == "half":
        assert log and all(d == M.float32 for d in log)


def test_second_order_gradients_through_unpacked_tensors():
    M = ferrotorch
    x = M.tensor([0.5, -1.0, 2.0], dtype=M.float64, requires_grad=True)
    w = M.tensor([1.5, 2.0, -0.5], dtype=M.float64, requires_grad=True)
    log = []
    with counting_hooks(M, log):
        y = (x * x * w).sum() + x.tanh().sum()
    (gx,) = M.autograd.grad(y, x, create_graph=True)
    xs, ws = x.detach().numpy(), w.detach().numpy()
    t = np.tanh(xs)
    np.testing.assert_allclose(gx.detach().numpy(), 2 * xs * ws + 1 - t * t, rtol=1e-12)
    gx.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * ws - 2 * t * (1 - t * t), rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), 2 * xs, rtol=1e-12)
    assert any(k == "unpack" for k, _ in log)


def test_innermost_hooks_win_and_nothing_is_left_behind():
    M = ferrotorch
    outer, inner = [], []
    x = M.ones(3, requires_grad=True)
    with counting_hooks(M, outer):
        a = x.exp()
        with counting_hooks(M, inner):
            b = x.sin()
        c = x.cos()
    d = x.tanh()  # no hooks any more
    (a + b + c + d).sum().backward()
    assert [k for k, _ in outer] == ["pack", "pack", "unpack", "unpack"]
    assert [k for k, _ in inner] == ["pack", "unpack"]


def test_hooks_are_per_thread():
    M = ferrotorch
    log, other = [], []
    x = M.ones(4, requires_grad=True)

    def work():
        other.append(x.exp().sum())

    with counting_hooks(M, log):
        th = threading.Thread(target=work)
        th.start()
        th.join()
    other[0].backward()
    assert log == []


def test_custom_function_saved_tensors_go_through_hooks():
    M = ferrotorch

    class Cube(M.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x * g

    log = []
    x = M.tensor([1.0, -2.0], requires_grad=True)
    with counting_hooks(M, log):
        y = Cube.apply(x)
    assert log == [("pack", (2,))]
    y.sum().backward()
    assert log == [("pack", (2,)), ("unpack", (2,))]
    assert x.grad.tolist() == [3.0, 12.0]


def test_unpack_must_return_a_tensor():
    M = ferrotorch
    x = M.ones(3, requires_grad=True)
    with saved_tensors_hooks(lambda t: t, lambda t: 1):
        y = x.exp().sum()
    with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor.*int"):
        y.backward()


def test_errors_of_the_hooks_reach_the_caller():
    M = ferrotorch
    x = M.ones(3, requires_grad=True)

    def bad_pack(t):
        raise ValueError("cannot pack this one")

    with saved_tensors_hooks(bad_pack, lambda t: t):
        with pytest.raises(Exception, match="cannot pack this one"):
            x.exp()
    y = x.exp()  # later ops are unaffected
    assert y.requires_grad

    def bad_unpack(t):
        raise ValueError("cannot unpack")

    with saved_tensors_hooks(lambda t: t, bad_unpack):
        z = x.sin().sum()
    with pytest.raises(Exception, match="cannot unpack"):
        z.backward()


def test_disable_saved_tensors_hooks():
    M = ferrotorch
    with disable_saved_tensors_hooks("no hooks in here"):
        with pytest.raises(RuntimeError, match="no hooks in here"):
            with saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
    with saved_tensors_hooks(lambda t: t, lambda t: t):  # allowed again
        pass

    @disable_saved_tensors_hooks("decorated")
    def f():
        with save_on_cpu():
            pass

    with pytest.raises(RuntimeError, match="decorated"):
        f()
    assert M.autograd.graph.saved_tensors_hooks is saved_tensors_hooks


def test_no_grad_saves_nothing():
    M = ferrotorch
    log = []
    x = M.ones(3, requires_grad=True)
    with counting_hooks(M, log), M.no_grad():
        x.exp()
    assert log == []


@pytest.mark.cuda
def test_save_on_cpu_moves_cuda_activations():
    M = ferrotorch
    if not M.cuda.is_available():
        pytest.skip("no CUDA device")
    devices = []

    def pack(t):
        devices.append(t.device.type)
        return t.device, t.cpu()

    def unpack(p):
        return p[1].to(p[0])

    M.manual_seed(0)
    model = M.nn.Sequential(M.nn.Linear(4, 6), M.nn.Tanh(), M.nn.Linear(6, 1)).cuda()
    x = M.randn(3, 4, device="cuda")
    with saved_tensors_hooks(pack, unpack):
        model(x).sum().backward()
    g1 = [p.grad.cpu().clone() for p in model.parameters()]
    model.zero_grad()
    with save_on_cpu(pin_memory=True):
        model(x).sum().backward()
    g2 = [p.grad.cpu() for p in model.parameters()]
    model.zero_grad()
    model(x).sum().backward()
    g0 = [p.grad.cpu() for p in model.parameters()]
    assert devices and set(devices) == {"cuda"}
    for a, b, c in zip(g0, g1, g2):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)
        np.testing.assert_allclose(a.numpy(), c.numpy(), rtol=1e-6)
