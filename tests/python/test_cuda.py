"""The CUDA backend.

Part 1 runs everywhere: the device model and `ferrotorch.cuda` API without a GPU (clear errors,
no crash), the backend switches, and NVRTC compiling kernel files through the Rust run-time path.
Part 2 (`pytest -m cuda`) needs an NVIDIA GPU: every op, gradient and a short training run on the
GPU compared with the CPU. Without a GPU those tests are skipped with the reason shown.
"""

import os

import numpy as np
import pytest

import ferrotorch as torch

HAS_CUDA = torch.cuda.is_available()
NO_GPU_REASON = "no CUDA device: " + str(torch._C._cuda_unavailable_reason())
needs_gpu = pytest.mark.skipif(not HAS_CUDA, reason=NO_GPU_REASON)
without_gpu = pytest.mark.skipif(HAS_CUDA, reason="a CUDA device is available")


# ----------------------------------------------------------------------------- no GPU needed

def test_api_exists_and_is_consistent():
    assert isinstance(torch.cuda.is_available(), bool)
    assert torch.cuda.device_count() == (torch.cuda.device_count() if HAS_CUDA else 0)
    assert torch.backends.cuda.is_built() is True  # the wheel is built with the backend
    assert torch.backends.mps.is_available() is False
    torch.backends.cudnn.benchmark = True  # accepted (no effect: no cuDNN)


def test_allow_tf32_switch_round_trips():
    m = torch.backends.cuda.matmul
    assert m.allow_tf32 is False
    try:
        m.allow_tf32 = True
        assert m.allow_tf32 is True and torch._C._cuda_allow_tf32() is True
    finally:
        m.allow_tf32 = False
    assert m.allow_tf32 is False


@without_gpu
def test_no_gpu_reports_why():
    assert torch.cuda.device_count() == 0
    reason = torch._C._cuda_unavailable_reason()
    assert reason and ("driver" in reason or "device" in reason)
    assert torch.cuda.memory_allocated() == 0 and torch.cuda.memory_reserved() == 0
    torch.cuda.empty_cache()  # a no-op, not an error


@without_gpu
@pytest.mark.parametrize("make", [
    lambda: torch.zeros(2, device="cuda"),
    lambda: torch.randn(2, 3, device="cuda"),
    lambda: torch.tensor([1.0, 2.0], device="cuda"),
    lambda: torch.ones(3).to("cuda"),
    lambda: torch.ones(3).cuda(),
    lambda: torch.ones(3).to(torch.device("cuda", 0)),
    lambda: torch.nn.Linear(2, 2).to("cuda"),
    lambda: torch.nn.Linear(2, 2).cuda(),
    lambda: torch.cuda.Stream(),
    lambda: torch.cuda.Event(),
    lambda: torch.cuda.synchronize(),
    lambda: torch.cuda.get_device_name(),
    lambda: torch.cuda.current_stream(),
])
def test_no_gpu_is_a_clear_runtime_error(make):
    with pytest.raises(RuntimeError, match="not available|no NVIDIA|driver"):
        make()


def test_cuda_devices_parse():
    assert torch.device("cuda").type == "cuda"
    assert torch.device("cuda:1").index == 1
    assert str(torch.device("cuda", 0)) == "cuda:0"
    with pytest.raises(RuntimeError):
        torch.device("cuda:x")


def _manifest_names(file):
    """Kernel names listed under `# <file>` in cuda_kernels/manifest.txt, brace-expanded."""
    import re
    from pathlib import Path

    def expand(tok):
        m = re.search(r"\{([^{}]*)\}", tok)
        if not m:
            return [tok]
        return [n for alt in m.group(1).split(",")
                for n in expand(tok[:m.start()] + alt + tok[m.end():])]

    manifest = Path(__file__).resolve().parents[2] / "cuda_kernels" / "manifest.txt"
    section, names = None, []
    for raw in manifest.read_text().splitlines():
        header = re.fullmatch(r"#\s*(\w+\.cu)\s*", raw.strip())
        if header:
            section = header.group(1)
            continue
        line = raw.split("#", 1)[0].strip()
        if line and section == file:
            names += [n for tok in line.split() for n in expand(tok)]
    assert names, f"no manifest entries for {file}"
    return names


@pytest.mark.parametrize("file", ["optim.cu", "fill_copy.cu"])
def test_rust_nvrtc_path_compiles_kernels(file):
    """The Rust backend's own compile path (header search, NVRTC through cudarc, the common.cuh
    inlining) builds PTX for an sm_80 device without a GPU."""
    try:
        names = torch._C._cuda_compile_check(file, (8, 0))
    except RuntimeError as e:
        if "NVRTC" in str(e) or "cuda_fp16.h" in str(e):
            pytest.skip(f"NVRTC or the CUDA headers are not installed: {e}")
        raise
    assert set(_manifest_names(file)) <= set(names)


def test_rust_nvrtc_rejects_unknown_file():
    with pytest.raises(ValueError, match="unknown kernel file"):
        torch._C._cuda_compile_check("nope.cu", (8, 0))


# ----------------------------------------------------------------------------- on a GPU

gpu = [pytest.mark.cuda, needs_gpu]
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
          torch.uint8, torch.bool]


def cpu_np(t):
    t = t.detach().cpu()
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()


@pytest.mark.cuda
@needs_gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_round_trip_every_dtype(dtype):
    x = (torch.arange(24) % 7).reshape(2, 3, 4).to(dtype)
    g = x.to("cuda")
    assert g.device == torch.device("cuda", 0) and g.is_cuda and g.dtype == dtype
    np.testing.assert_array_equal(cpu_np(g), cpu_np(x))
    # Non-contiguous views come back right too.
    np.testing.assert_array_equal(cpu_np(g.transpose(0, 2)), cpu_np(x.transpose(0, 2)))
    np.testing.assert_array_equal(cpu_np(g[:, ::2, 1:]), cpu_np(x[:, ::2, 1:]))
    assert g.sum().item() == pytest.approx(x.sum().item())


@pytest.mark.cuda
@needs_gpu
def test_factories_on_device():
    z = torch.zeros(2, 3, device="cuda")
    assert z.is_cuda and z.cpu().tolist() == [[0.0] * 3] * 2
    assert torch.full((2,), 7, device="cuda").cpu().tolist() == [7, 7]
    assert torch.ones_like(z).cpu().sum().item() == 6
    r = torch.randn(100, device="cuda", requires_grad=True)
    assert r.is_leaf and r.requires_grad and r.is_cuda


@pytest.mark.cuda
@needs_gpu
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "maximum", "pow", "eq", "lt"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64])
def test_binary_broadcast_noncontiguous(op, dtype):
    rng = np.random.default_rng(0)
    a = torch.from_numpy(rng.uniform(1, 3, (4, 1, 5))).to(dtype)
    b = torch.from_numpy(rng.uniform(1, 3, (5, 6))).to(dtype).t()  # (6, 5), transposed
    want = getattr(torch, op)(a, b)
    got = getattr(torch, op)(a.cuda(), b.cuda())
    assert got.is_cuda and got.dtype == want.dtype and got.shape == want.shape
    rtol = {torch.float16: 2e-3, torch.bfloat16: 1e-2}.get(dtype, 1e-6)
    np.testing.assert_allclose(cpu_np(got), cpu_np(want), rtol=rtol)
    # Same shapes, both contiguous (the kernels' fast path).
    a2 = a.expand(4, 6, 5).contiguous()
    b2 = b.expand(4, 6, 5).contiguous()
    np.testing.assert_allclose(cpu_np(getattr(torch, op)(a2.cuda(), b2.cuda())),
                               cpu_np(getattr(torch, op)(a2, b2)), rtol=rtol)


@pytest.mark.cuda
@needs_gpu
def test_scalars_and_cpu_0d_mix_with_cuda():
    g = torch.arange(4.0, device="cuda")
    assert (g * 2 + 1).cpu().tolist() == [1.0, 3.0, 5.0, 7.0]
    assert (g + torch.tensor(1.0)).is_cuda  # a 0-d CPU tensor mixes like a scalar


@pytest.mark.cuda
@needs_gpu
def test_mixing_devices_is_a_runtime_error():
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device.*cuda:0.*cpu|cpu.*cuda:0"):
        torch.ones(3, device="cuda") + torch.ones(3)
    with pytest.raises(RuntimeError, match="same device"):
        torch.ones(2, 3, device="cuda") @ torch.ones(3, 2)


@pytest.mark.cuda
@needs_gpu
@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "tanh", "sigmoid", "relu", "neg", "abs",
                                  "floor", "sin", "erf", "lgamma", "digamma", "_trigamma"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_unary(name, dtype):
    x = torch.rand(3, 5, dtype=dtype) + 0.5
    np.testing.assert_allclose(cpu_np(getattr(x.cuda().t(), name)()), cpu_np(getattr(x.t(), name)()),
                               rtol=1e-5)


@pytest.mark.cuda
@needs_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int32])
def test_reductions(dtype):
    x = (torch.randn(4, 5, 6) * 10).to(dtype)
    g = x.cuda()
    for dims in [None, 0, 1, 2, (0, 2)]:
        want = x.sum() if dims is None else x.sum(dims)
        got = g.sum() if dims is None else g.sum(dims)
        assert got.dtype == want.dtype
        # (atol: a float32 sum that cancels to near zero has no relative precision)
        np.testing.assert_allclose(cpu_np(got), cpu_np(want), rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(cpu_np(g.amax(1)), cpu_np(x.amax(1)))
    v, i = g.max(2)
    v0, i0 = x.max(2)
    np.testing.assert_array_equal(cpu_np(v), cpu_np(v0))
    np.testing.assert_array_equal(cpu_np(i), cpu_np(i0))
    if dtype.is_floating_point:
        np.testing.assert_allclose(cpu_np(g.mean((0, 1), keepdim=True)),
                                   cpu_np(x.mean((0, 1), keepdim=True)), rtol=1e-5)
        np.testing.assert_allclose(cpu_np(torch.softmax(g, 1)), cpu_np(torch.softmax(x, 1)),
                                   rtol=1e-5)


@pytest.mark.cuda
@needs_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_matmul_batched_transposed(dtype):
    a = torch.randn(3, 4, 5, dtype=torch.float64)
    b = torch.randn(5, 6, dtype=torch.float64)
    want = (a @ b).numpy()
    tol = 5e-2 if dtype in (torch.float16, torch.bfloat16) else 1e-5
    got = a.to(dtype).cuda() @ b.to(dtype).cuda()
    np.testing.assert_allclose(cpu_np(got), want, rtol=tol, atol=tol)
    got_t = (a.to(dtype).cuda().transpose(1, 2).contiguous().transpose(1, 2)) @ b.to(dtype).cuda().t().contiguous().t()
    np.testing.assert_allclose(cpu_np(got_t), want, rtol=tol, atol=tol)


@pytest.mark.cuda
@needs_gpu
def test_autograd_on_gpu_matches_cpu():
    torch.manual_seed(0)
    w = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    x = torch.randn(4, 5, dtype=torch.float64)
    wg = w.detach().cuda().requires_grad_()
    (torch.relu(x @ w) ** 2).sum().backward()
    (torch.relu(x.cuda() @ wg) ** 2).sum().backward()
    assert wg.grad.is_cuda
    np.testing.assert_allclose(cpu_np(wg.grad), w.grad.numpy(), rtol=1e-10)
    # Gradients flow back across .to(device).
    a = torch.randn(3, dtype=torch.float64, requires_grad=True)
    (a.cuda() * 2).sum().backward()
    assert a.grad.device.type == "cpu" and a.grad.tolist() == [2.0, 2.0, 2.0]


@pytest.mark.cuda
@needs_gpu
def test_short_training_run_matches_cpu():
    def run(device):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
        model = model.double().to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        rng = np.random.default_rng(0)
        x = torch.from_numpy(rng.standard_normal((32, 8))).to(device)
        y = torch.from_numpy(rng.standard_normal((32, 1))).to(device)
        losses = []
        for _ in range(20):
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses

    np.testing.assert_allclose(run("cuda"), run("cpu"), rtol=1e-8)


def _emulator_counters():
    """(cuMemAlloc, cuMemFree, cuLaunchKernel) calls so far, when the CUDA emulator
    (tools/cuda_emu) stands in for the driver; None on a real GPU."""
    import ctypes

    try:
        fn = ctypes.CDLL("libcuda.so").ft_emu_counters
    except (OSError, AttributeError):
        return None
    out = (ctypes.c_ulonglong * 3)()
    fn(out)
    return tuple(out)


@pytest.mark.cuda
@needs_gpu
def test_training_steady_state_allocates_nothing():
    """The caching allocator: after warm-up, a training step reuses blocks and never calls
    cuMemAlloc/cuMemFree (counted by the emulator's driver)."""
    if _emulator_counters() is None:
        pytest.skip("counts driver calls: runs on the CUDA emulator only")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    model = model.to("cuda")
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(8, 16, device="cuda")
    y = torch.randint(0, 4, (8,), device="cuda")

    def step():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(3):
        step()
    allocs, frees, launches = _emulator_counters()
    for _ in range(5):
        step()
    allocs2, frees2, launches2 = _emulator_counters()
    assert (allocs2, frees2) == (allocs, frees)
    assert launches2 > launches  # the steps did run kernels


@pytest.mark.cuda
@needs_gpu
def test_memory_counters_streams_events():
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    x = torch.empty(1 << 20, device="cuda")
    assert torch.cuda.memory_allocated() >= before + 4 * (1 << 20)
    assert torch.cuda.max_memory_allocated() >= torch.cuda.memory_allocated()
    del x
    assert torch.cuda.memory_allocated() == before
    assert torch.cuda.memory_reserved() >= before
    torch.cuda.empty_cache()
    s = torch.cuda.Stream()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(s):
        start.record()
        y = torch.ones(1000, 1000, device="cuda") @ torch.ones(1000, 1000, device="cuda")
        end.record()
    end.synchronize()
    assert start.elapsed_time(end) >= 0
    s.synchronize()
    assert y[0, 0].item() == 1000.0
    assert torch.cuda.get_device_name()
    assert torch.cuda.get_device_capability()[0] >= 3


@pytest.mark.cuda
@needs_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bool])
def test_indexing_and_joins(dtype):
    x = (torch.arange(60) % 5).reshape(3, 4, 5).to(dtype)
    g = x.cuda()
    idx = torch.tensor([2, 0, 3, 0])
    np.testing.assert_array_equal(cpu_np(g.index_select(1, idx)), cpu_np(x.index_select(1, idx)))
    np.testing.assert_array_equal(cpu_np(g.index_select(1, idx.cuda())),
                                  cpu_np(x.index_select(1, idx)))
    gi = torch.tensor([[[0, 4], [1, 3]]]).expand(3, 2, 2)
    np.testing.assert_array_equal(cpu_np(g.gather(2, gi.cuda())), cpu_np(x.gather(2, gi)))
    cond = x.to(torch.float32) > 2
    np.testing.assert_array_equal(cpu_np(torch.where(cond.cuda(), g, g.flip(0))),
                                  cpu_np(torch.where(cond, x, x.flip(0))))
    np.testing.assert_array_equal(cpu_np(torch.cat([g, g[:, :1]], 1)), cpu_np(torch.cat([x, x[:, :1]], 1)))
    for bad in ([7], [-1]):  # index_select takes no negative indices (PyTorch neither)
        with pytest.raises(IndexError, match="out of range"):
            g.index_select(1, torch.tensor(bad))
    with pytest.raises(RuntimeError, match="same device"):
        torch.cat([g, x])


@pytest.mark.cuda
@needs_gpu
def test_embedding_on_gpu():
    torch.manual_seed(0)
    emb = torch.nn.Embedding(10, 4)
    ids = torch.tensor([[1, 2], [9, 1]])
    want = emb(ids)
    got = emb.cuda()(ids.cuda())
    np.testing.assert_allclose(cpu_np(got), cpu_np(want))


@pytest.mark.cuda
@needs_gpu
def test_op_without_kernel_falls_back_or_raises_clearly():
    # An op without a device path runs on a host copy by default and its result comes back to
    # the GPU; with the fallback off it is a clear RuntimeError. (Every real op now has a device
    # path, so the test uses the fallback's probe, -t computed on the host.)
    import subprocess
    import sys

    g = torch.tensor([1.5, -2.0], device="cuda")
    r = torch._C._cuda_host_fallback_probe(g)
    assert r.is_cuda and r.tolist() == [-1.5, 2.0]
    assert "fallback_probe" in torch._C._cuda_host_fallback_ops()
    code = (
        "import ferrotorch as torch\n"
        "try:\n"
        "    torch._C._cuda_host_fallback_probe(torch.ones(2, device='cuda'))\n"
        "except RuntimeError as e:\n"
        "    print('raised:', e)\n"
    )
    env = dict(os.environ, FERROTORCH_CUDA_HOST_FALLBACK="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert "raised: fallback_probe is not implemented for CUDA tensors yet" in out.stdout, out


@pytest.mark.cuda
@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "bool"])
def test_dlpack_exchange_with_torch_cuda_shares_memory(dtype):
    real = pytest.importorskip("torch")
    if not real.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    src = (real.arange(24, device="cuda") % 5).reshape(4, 6).to(getattr(real, dtype))
    view = src.t()[1:, ::2]  # non-contiguous, offset
    ours = torch.from_dlpack(view)
    assert ours.is_cuda and ours.dtype == getattr(torch, dtype) and ours.shape == view.shape
    np.testing.assert_array_equal(cpu_np(ours), view.float().cpu().numpy() if dtype == "bfloat16"
                                  else view.cpu().numpy())
    # Shared memory: our in-place write shows in PyTorch's tensor.
    if dtype != "bool":
        ours.fill_(3)
        torch.cuda.synchronize()
        assert (src.t()[1:, ::2] == 3).all().item() and (src.t()[0] != 3).any().item()
    # And back: PyTorch imports ours without a copy.
    g = torch.arange(12.0, device="cuda").reshape(3, 4)
    t = real.from_dlpack(g)
    assert t.is_cuda and t.data_ptr() == g.data_ptr()
    t.mul_(2)
    real.cuda.synchronize()
    assert g.cpu().tolist() == (torch.arange(12.0).reshape(3, 4) * 2).tolist()
    # The memory stays alive while only our tensor holds it.
    del src, view
    real.cuda.empty_cache()
    assert cpu_np(ours).shape == (5, 2)


@pytest.mark.cuda
@needs_gpu
def test_python_number_overflow_checked_on_the_gpu():
    # the same check as on the CPU (PyTorch's c10::checked_convert), except that a CUDA
    # one-element half tensor is checked too (PyTorch's unchecked path is CPU-only)
    a = torch.tensor([1, 2, 3], dtype=torch.int8, device="cuda")
    for f in (lambda: a.clone().fill_(300), lambda: a.new_full((2,), 300),
              lambda: torch.full((2,), 300, dtype=torch.int8, device="cuda"),
              lambda: a.pow(300), lambda: torch.where(a > 2, a, 300),
              lambda: torch.zeros(1, dtype=torch.float16, device="cuda").fill_(1e10)):
        with pytest.raises(RuntimeError, match="without overflow"):
            f()
    assert a.clone().fill_(torch.tensor(300)).cpu().tolist() == [44, 44, 44]
    assert torch.where(a > 2, a.half(), 1e10).cpu().tolist() == [float("inf")] * 2 + [3.0]
    u = torch.tensor([1, 2], dtype=torch.uint8, device="cuda")
    assert u.clone().fill_(-1).cpu().tolist() == [255, 255]
