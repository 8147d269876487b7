"""Which ops run on CUDA? Runs a broad list of ops (forward, and backward where it applies) on CPU
and CUDA copies of the same inputs and prints, per op: ok, a mismatch, or the error raised.
A survey for planning, not a test: the GPU test suite (`pytest -m cuda`) asserts values.

    python tools/cuda_coverage.py        # on a machine with an NVIDIA GPU
"""

import traceback

import numpy as np

import ferrotorch as torch
import ferrotorch.nn.functional as F

rng = np.random.default_rng(0)


def t(*shape, grad=False, dtype=np.float32, positive=False):
    a = rng.standard_normal(shape).astype(dtype)
    if positive:
        a = np.abs(a) + 0.5
    x = torch.from_numpy(a.copy())
    return x.requires_grad_(True) if grad else x


def ints(*shape, high=5):
    return torch.from_numpy(rng.integers(0, high, shape).astype(np.int64))


# name -> (function of the inputs, inputs); inputs that require grad get a backward check.
CASES = {
    "sort": (lambda x: torch.sort(x, dim=1)[0], [t(4, 7, grad=True)]),
    "argsort": (lambda x: torch.argsort(x, dim=0), [t(5, 3)]),
    "topk": (lambda x: torch.topk(x, 3, dim=1)[0], [t(4, 9, grad=True)]),
    "kthvalue": (lambda x: torch.kthvalue(x, 2, dim=1)[0], [t(4, 9, grad=True)]),
    "median_dim": (lambda x: torch.median(x, dim=1)[0], [t(4, 9, grad=True)]),
    "median": (lambda x: torch.median(x), [t(4, 9, grad=True)]),
    "msort": (lambda x: torch.msort(x), [t(4, 3)]),
    "unique": (lambda x: torch.unique(x), [ints(20)]),
    "cumsum": (lambda x: torch.cumsum(x, 1), [t(4, 9, grad=True)]),
    "cumprod": (lambda x: torch.cumprod(x, 1), [t(4, 9, grad=True)]),
    "cummax": (lambda x: torch.cummax(x, 1)[0], [t(4, 9, grad=True)]),
    "logcumsumexp": (lambda x: torch.logcumsumexp(x, 1), [t(4, 9, grad=True)]),
    "prod": (lambda x: x.prod(1), [t(4, 9, grad=True)]),
    "amax": (lambda x: x.amax(1), [t(4, 9, grad=True)]),
    "min_dim": (lambda x: x.min(1)[0], [t(4, 9, grad=True)]),
    "argmin": (lambda x: x.argmin(1), [t(4, 9)]),
    "std": (lambda x: x.std(1), [t(4, 9, grad=True)]),
    "norm": (lambda x: x.norm(dim=1), [t(4, 9, grad=True)]),
    "vector_norm_inf": (
        lambda x: torch.linalg.vector_norm(x, float("inf"), dim=1),
        [t(4, 9, grad=True)],
    ),
    "all": (lambda x: (x > 0).all(1), [t(4, 9)]),
    "any": (lambda x: (x > 0).any(1), [t(4, 9)]),
    "count_nonzero": (lambda x: torch.count_nonzero(x > 0, 1), [t(4, 9)]),
    "nonzero": (lambda x: torch.nonzero(x > 0), [t(4, 9)]),
    "masked_select": (lambda x: torch.masked_select(x, x > 0), [t(4, 9, grad=True)]),
    "bool_index": (lambda x: x[x > 0], [t(4, 9, grad=True)]),
    "bincount": (lambda x: torch.bincount(x), [ints(30)]),
    "histc": (lambda x: torch.histc(x, 5), [t(30)]),
    "searchsorted": (lambda x, v: torch.searchsorted(torch.sort(x)[0], v), [t(10), t(4)]),
    "bucketize": (lambda v, b: torch.bucketize(v, torch.sort(b)[0]), [t(10), t(4)]),
    "flip": (lambda x: torch.flip(x, [1]), [t(4, 9, grad=True)]),
    "roll": (lambda x: torch.roll(x, 2, 1), [t(4, 9, grad=True)]),
    "tril": (lambda x: torch.tril(x), [t(5, 5, grad=True)]),
    "diag": (lambda x: torch.diag(x), [t(5, 5, grad=True)]),
    "diagonal": (lambda x: torch.diagonal(x), [t(5, 5, grad=True)]),
    "trace": (lambda x: torch.trace(x), [t(5, 5, grad=True)]),
    "repeat": (lambda x: x.repeat(2, 3), [t(2, 3, grad=True)]),
    "repeat_interleave": (lambda x: x.repeat_interleave(2, 0), [t(2, 3, grad=True)]),
    "stack": (lambda x, y: torch.stack([x, y]), [t(2, 3, grad=True), t(2, 3, grad=True)]),
    "pad_reflect": (lambda x: F.pad(x, (1, 1), mode="reflect"), [t(2, 3, 5, grad=True)]),
    "pad_replicate": (lambda x: F.pad(x, (1, 2), mode="replicate"), [t(2, 3, 5, grad=True)]),
    "pad_circular": (lambda x: F.pad(x, (1, 2), mode="circular"), [t(2, 3, 5, grad=True)]),
    "index_add": (
        lambda x, s: x.index_add(0, torch.tensor([0, 2], device=x.device), s),
        [t(4, 3, grad=True), t(2, 3, grad=True)],
    ),
    "index_copy": (
        lambda x, s: x.index_copy(0, torch.tensor([0, 2], device=x.device), s),
        [t(4, 3, grad=True), t(2, 3, grad=True)],
    ),
    "index_fill": (
        lambda x: x.index_fill(0, torch.tensor([1], device=x.device), 2.0),
        [t(4, 3, grad=True)],
    ),
    "masked_fill": (lambda x: x.masked_fill(x > 0, 1.0), [t(4, 3, grad=True)]),
    "masked_scatter": (
        lambda x, s: x.masked_scatter(x > 0, s),
        [t(4, 3, grad=True), t(4, 3, grad=True)],
    ),
    "scatter_add": (
        lambda x, s: x.scatter_add(1, torch.tensor([[0, 1], [2, 0]], device=x.device), s),
        [t(2, 3, grad=True), t(2, 2, grad=True)],
    ),
    "scatter_reduce": (
        lambda x, s: x.scatter_reduce(
            1, torch.tensor([[0, 1], [2, 0]], device=x.device), s, "amax"
        ),
        [t(2, 3, grad=True), t(2, 2, grad=True)],
    ),
    "take": (
        lambda x: torch.take(x, torch.tensor([0, 5, 7], device=x.device)),
        [t(3, 4, grad=True)],
    ),
    "take_along_dim": (
        lambda x: torch.take_along_dim(x, torch.tensor([[0], [2], [1]], device=x.device), 1),
        [t(3, 4, grad=True)],
    ),
    "put_": (
        lambda x: x.clone().put_(
            torch.tensor([0, 5], device=x.device), torch.tensor([1.0, 2.0], device=x.device)
        ),
        [t(3, 4)],
    ),
    "matmul_f64": (
        lambda x, y: x @ y,
        [t(3, 4, grad=True, dtype=np.float64), t(4, 2, grad=True, dtype=np.float64)],
    ),
    "bmm": (lambda x, y: torch.bmm(x, y), [t(2, 3, 4, grad=True), t(2, 4, 5, grad=True)]),
    "einsum": (
        lambda x, y: torch.einsum("ij,jk->ik", x, y),
        [t(3, 4, grad=True), t(4, 2, grad=True)],
    ),
    "outer": (lambda x, y: torch.outer(x, y), [t(3, grad=True), t(4, grad=True)]),
    "kron": (lambda x, y: torch.kron(x, y), [t(2, 2, grad=True), t(2, 3, grad=True)]),
    "inv": (lambda x: torch.linalg.inv(x), [t(4, 4, grad=True, dtype=np.float64)]),
    "det": (lambda x: torch.linalg.det(x), [t(4, 4, grad=True, dtype=np.float64)]),
    "solve": (
        lambda a, b: torch.linalg.solve(a, b),
        [t(4, 4, grad=True, dtype=np.float64), t(4, 2, grad=True, dtype=np.float64)],
    ),
    "cholesky": (
        lambda a: torch.linalg.cholesky(a @ a.mT + torch.eye(4, dtype=a.dtype, device=a.device)),
        [t(4, 4, grad=True, dtype=np.float64)],
    ),
    "qr": (lambda a: torch.linalg.qr(a)[1].abs(), [t(5, 4, dtype=np.float64)]),
    "svdvals": (lambda a: torch.linalg.svdvals(a), [t(5, 4, dtype=np.float64)]),
    "eigvalsh": (lambda a: torch.linalg.eigvalsh(a + a.mT), [t(4, 4, dtype=np.float64)]),
    "lstsq": (
        lambda a, b: torch.linalg.lstsq(a, b).solution,
        [t(6, 3, dtype=np.float64), t(6, 2, dtype=np.float64)],
    ),
    "pinv": (lambda a: torch.linalg.pinv(a), [t(5, 3, dtype=np.float64)]),
    "matrix_norm": (lambda a: torch.linalg.matrix_norm(a), [t(5, 3, grad=True)]),
    "cross": (lambda a, b: torch.linalg.cross(a, b), [t(4, 3, grad=True), t(4, 3, grad=True)]),
    "asinh": (lambda x: torch.asinh(x), [t(4, 5, grad=True)]),
    "erfc": (lambda x: torch.erfc(x), [t(4, 5, grad=True)]),
    "square": (lambda x: torch.square(x), [t(4, 5, grad=True)]),
    "lgamma": (lambda x: torch.lgamma(x), [t(4, 5, grad=True, positive=True)]),
    "digamma": (lambda x: torch.digamma(x), [t(4, 5, grad=True, positive=True)]),
    "polygamma1": (lambda x: torch.polygamma(1, x), [t(4, 5, grad=True, positive=True)]),
    "erfinv": (lambda x: torch.erfinv(x.tanh()), [t(4, 5, grad=True)]),
    "i0": (lambda x: torch.i0(x), [t(4, 5, grad=True)]),
    "isposinf": (lambda x: torch.isposinf(x), [t(4, 5)]),
    "nan_to_num": (lambda x: torch.nan_to_num(x), [t(4, 5)]),
    "clamp_tensor": (lambda x, lo: torch.clamp(x, min=lo), [t(4, 5, grad=True), t(5)]),
    "lerp": (lambda a, b: torch.lerp(a, b, 0.3), [t(4, 5, grad=True), t(4, 5, grad=True)]),
    "atan2": (lambda a, b: torch.atan2(a, b), [t(4, 5, grad=True), t(4, 5, grad=True)]),
    "hypot": (lambda a, b: torch.hypot(a, b), [t(4, 5, grad=True), t(4, 5, grad=True)]),
    "fmod": (lambda a, b: torch.fmod(a, b), [t(4, 5), t(4, 5, positive=True)]),
    "remainder": (lambda a, b: torch.remainder(a, b), [t(4, 5), t(4, 5, positive=True)]),
    "bitwise_and": (lambda a, b: a & b, [ints(4, 5, high=100), ints(4, 5, high=100)]),
    "int_div": (
        lambda a, b: torch.div(a, b + 1, rounding_mode="floor"),
        [ints(4, 5, high=100), ints(4, 5, high=9)],
    ),
    "logaddexp": (lambda a, b: torch.logaddexp(a, b), [t(4, 5, grad=True), t(4, 5, grad=True)]),
    "var_mean": (lambda x: torch.var_mean(x, 1)[0], [t(4, 5, grad=True)]),
    "nanmean": (lambda x: torch.nanmean(x, 1), [t(4, 5, grad=True)]),
    "nansum": (lambda x: torch.nansum(x, 1), [t(4, 5, grad=True)]),
    "quantile": (lambda x: torch.quantile(x, 0.3, dim=1), [t(4, 5, grad=True)]),
    "cdist": (lambda a, b: torch.cdist(a, b), [t(4, 3, grad=True), t(5, 3, grad=True)]),
    "cov": (lambda x: torch.cov(x), [t(3, 6, grad=True)]),
    "diff": (lambda x: torch.diff(x, dim=1), [t(3, 6, grad=True)]),
    "multinomial": (
        lambda p: torch.multinomial(p.softmax(-1), 3, replacement=True).shape,
        [t(2, 5)],
    ),
    "randperm": (lambda x: torch.randperm(7, device=x.device).sort()[0], [t(1)]),
    "group_norm": (lambda x: F.group_norm(x, 2), [t(2, 4, 3, 3, grad=True)]),
    "instance_norm": (lambda x: F.instance_norm(x), [t(2, 4, 5, grad=True)]),
    "rms_norm": (lambda x: F.rms_norm(x, (5,)), [t(2, 4, 5, grad=True)]),
    "layer_norm": (lambda x: F.layer_norm(x, (5,)), [t(2, 4, 5, grad=True)]),
    "batch_norm_eval": (
        lambda x: F.batch_norm(x, torch.zeros(4, device=x.device), torch.ones(4, device=x.device)),
        [t(2, 4, 5, grad=True)],
    ),
    "local_response_norm": (lambda x: F.local_response_norm(x, 3), [t(2, 4, 5, grad=True)]),
    "conv1d": (
        lambda x, w: F.conv1d(x, w, padding=1),
        [t(2, 3, 8, grad=True), t(4, 3, 3, grad=True)],
    ),
    "conv2d_groups": (
        lambda x, w: F.conv2d(x, w, groups=2),
        [t(2, 4, 6, 6, grad=True), t(4, 2, 3, 3, grad=True)],
    ),
    "conv3d": (
        lambda x, w: F.conv3d(x, w),
        [t(1, 2, 4, 4, 4, grad=True), t(3, 2, 2, 2, 2, grad=True)],
    ),
    "conv_transpose2d": (
        lambda x, w: F.conv_transpose2d(x, w, stride=2),
        [t(2, 3, 4, 4, grad=True), t(3, 2, 3, 3, grad=True)],
    ),
    "conv_transpose1d": (
        lambda x, w: F.conv_transpose1d(x, w, stride=2),
        [t(2, 3, 5, grad=True), t(3, 2, 3, grad=True)],
    ),
    "max_pool1d": (lambda x: F.max_pool1d(x, 2), [t(2, 3, 8, grad=True)]),
    "max_pool3d": (lambda x: F.max_pool3d(x, 2), [t(1, 2, 4, 4, 4, grad=True)]),
    "avg_pool3d": (lambda x: F.avg_pool3d(x, 2), [t(1, 2, 4, 4, 4, grad=True)]),
    "adaptive_avg_pool2d": (lambda x: F.adaptive_avg_pool2d(x, 3), [t(2, 3, 7, 7, grad=True)]),
    "adaptive_max_pool2d": (lambda x: F.adaptive_max_pool2d(x, 3), [t(2, 3, 7, 7, grad=True)]),
    "lp_pool2d": (lambda x: F.lp_pool2d(x, 2, 2), [t(2, 3, 4, 4, grad=True)]),
    "interpolate_nearest": (lambda x: F.interpolate(x, scale_factor=2), [t(2, 3, 4, 4, grad=True)]),
    "interpolate_bilinear": (
        lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"),
        [t(2, 3, 4, 4, grad=True)],
    ),
    "unfold": (lambda x: F.unfold(x, 2), [t(2, 3, 4, 4, grad=True)]),
    "fold": (lambda x: F.fold(x, (3, 3), 2), [t(2, 12, 4, grad=True)]),
    "pixel_shuffle": (lambda x: F.pixel_shuffle(x, 2), [t(1, 8, 3, 3, grad=True)]),
    "one_hot": (lambda i: F.one_hot(i, 5), [ints(6)]),
    "nll_loss": (
        lambda x: F.nll_loss(x.log_softmax(1), torch.tensor([0, 2, 1], device=x.device)),
        [t(3, 4, grad=True)],
    ),
    "ce_label_smooth": (
        lambda x: F.cross_entropy(x, torch.tensor([0, 2, 1], device=x.device), label_smoothing=0.1),
        [t(3, 4, grad=True)],
    ),
    "ce_probs": (lambda x, p: F.cross_entropy(x, p.softmax(1)), [t(3, 4, grad=True), t(3, 4)]),
    "bce_logits": (
        lambda x, y: F.binary_cross_entropy_with_logits(x, y.sigmoid()),
        [t(3, 4, grad=True), t(3, 4)],
    ),
    "kl_div": (
        lambda x, y: F.kl_div(x.log_softmax(1), y.softmax(1), reduction="batchmean"),
        [t(3, 4, grad=True), t(3, 4)],
    ),
    "smooth_l1": (lambda x, y: F.smooth_l1_loss(x, y), [t(3, 4, grad=True), t(3, 4)]),
    "huber": (lambda x, y: F.huber_loss(x, y), [t(3, 4, grad=True), t(3, 4)]),
    "cosine_similarity": (
        lambda a, b: F.cosine_similarity(a, b),
        [t(3, 4, grad=True), t(3, 4, grad=True)],
    ),
    "sdpa": (
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        [t(2, 3, 5, 4, grad=True), t(2, 3, 5, 4, grad=True), t(2, 3, 5, 4, grad=True)],
    ),
    "dropout_eval": (lambda x: F.dropout(x, 0.5, training=False), [t(3, 4, grad=True)]),
    "gelu": (lambda x: F.gelu(x), [t(3, 4, grad=True)]),
    "silu": (lambda x: F.silu(x), [t(3, 4, grad=True)]),
    "mish": (lambda x: F.mish(x), [t(3, 4, grad=True)]),
    "softplus": (lambda x: F.softplus(x), [t(3, 4, grad=True)]),
    "hardswish": (lambda x: F.hardswish(x), [t(3, 4, grad=True)]),
    "elu": (lambda x: F.elu(x), [t(3, 4, grad=True)]),
    "glu": (lambda x: F.glu(x), [t(3, 4, grad=True)]),
    "prelu": (lambda x, w: F.prelu(x, w), [t(3, 4, grad=True), t(4, grad=True)]),
    "softmin": (lambda x: F.softmin(x, 1), [t(3, 4, grad=True)]),
    "normalize": (lambda x: F.normalize(x), [t(3, 4, grad=True)]),
    "lstm": (lambda x: _lstm(x), [t(5, 2, 3, grad=True)]),
    "gru": (lambda x: _gru(x), [t(5, 2, 3, grad=True)]),
    "f16_sum": (lambda x: x.half().sum(1).float(), [t(4, 9)]),
    "bf16_matmul": (lambda x, y: (x.bfloat16() @ y.bfloat16()).float(), [t(4, 9), t(9, 3)]),
    "f64_softmax": (lambda x: x.softmax(1), [t(4, 9, grad=True, dtype=np.float64)]),
    "int_sum": (lambda x: x.sum(1), [ints(4, 9)]),
    "int_cumsum": (lambda x: x.cumsum(1), [ints(4, 9)]),
    "int_max": (lambda x: x.max(1)[0], [ints(4, 9)]),
    "complex_like_view_as": (lambda x: x.view(9, 4).t().contiguous(), [t(4, 9)]),
}

_rnn_cache = {}


def _rnn(kind, x):
    if kind not in _rnn_cache:
        torch.manual_seed(0)
        _rnn_cache[kind] = getattr(torch.nn, kind)(3, 4)
    m = _rnn_cache[kind].to(x.device)
    return m(x)[0]


def _lstm(x):
    return _rnn("LSTM", x)


def _gru(x):
    return _rnn("GRU", x)


def to_np(v):
    if isinstance(v, torch.Tensor):
        return v.detach().cpu().float().numpy() if v.dtype.is_floating_point else v.cpu().numpy()
    return np.asarray(v)


def run_case(name, fn, inputs):
    cpu_in = [x.detach().clone().requires_grad_(x.requires_grad) for x in inputs]
    gpu_in = [x.detach().cuda().requires_grad_(x.requires_grad) for x in inputs]
    ref = fn(*cpu_in)
    try:
        got = fn(*gpu_in)
    except Exception as e:  # noqa: BLE001 - a survey: report every kind of failure
        return f"FORWARD {type(e).__name__}: {str(e).splitlines()[0][:150]}"
    if isinstance(got, torch.Tensor) and got.device.type != "cuda":
        return f"FORWARD result on {got.device}"
    a, b = to_np(ref), to_np(got)
    if a.shape != b.shape or not np.allclose(a, b, rtol=1e-3, atol=1e-4, equal_nan=True):
        diff = np.max(np.abs(a - b)) if a.shape == b.shape else "shape"
        return f"MISMATCH forward (max diff {diff})"
    if isinstance(ref, torch.Tensor) and ref.requires_grad:
        w = torch.from_numpy(rng.standard_normal(a.shape).astype(np.float32)).to(ref.dtype)
        (ref * w).sum().backward()
        try:
            (got * w.cuda()).sum().backward()
        except Exception as e:  # noqa: BLE001
            return f"BACKWARD {type(e).__name__}: {str(e).splitlines()[0][:150]}"
        for i, (c, g) in enumerate(zip(cpu_in, gpu_in)):
            if c.requires_grad:
                if g.grad is None:
                    return f"BACKWARD input {i} has no grad"
                if not np.allclose(to_np(c.grad), to_np(g.grad), rtol=1e-3, atol=1e-3):
                    return f"MISMATCH grad of input {i}"
    return "ok"


def main():
    if not torch.cuda.is_available():
        print("no CUDA device:", torch._C._cuda_unavailable_reason())
        return
    bad = 0
    for name, (fn, inputs) in CASES.items():
        try:
            res = run_case(name, fn, inputs)
        except Exception:  # noqa: BLE001
            res = "CPU REFERENCE FAILED " + traceback.format_exc().splitlines()[-1][:150]
        bad += res != "ok"
        print(f"{name:24s} {res}")
    print(f"{len(CASES) - bad}/{len(CASES)} ok")
    print("ran through the host fallback:", ", ".join(torch._C._cuda_host_fallback_ops()))


if __name__ == "__main__":
    main()
