"""GPU benchmarks: ferrotorch's CUDA backend beside PyTorch CUDA in one run, with ratios.

    python benches/cuda_compare.py [--repeat 20] [--only TEXT]

Cases (issue "CUDA backend", targets in brackets): elementwise a*b+c bandwidth on 64M f32
(>= 90% of PyTorch's GB/s), f32 and bf16 matmul at 4096 and 8192 (>= 95% of PyTorch's
TFLOP/s), per-op launch overhead of a+b on 4 elements (<= PyTorch's time), and a training step
of a 784-256-10 MLP (batch 64, Adam) and of a small MNIST-style CNN (batch 64, SGD); sort,
topk, cumsum, and linalg (batches of small matrices and single large ones).
Times are the best of --repeat runs, each bracketed by
device synchronisation. Exits 0 with a message when no GPU is available.
"""

import argparse
import time

import ferrotorch as ft

try:
    import torch
except ImportError:
    torch = None


def sync(lib):
    lib.cuda.synchronize()


def best(lib, fn, repeat, inner=1):
    fn()
    sync(lib)
    t_best = float("inf")
    for _ in range(repeat):
        sync(lib)
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        sync(lib)
        t_best = min(t_best, (time.perf_counter() - t0) / inner)
    return t_best


def case_fma(lib, n=64 << 20):
    a, b, c = (lib.rand(n, device="cuda") for _ in range(3))
    # Two kernels (a*b, then +c): 5 arrays of n floats move through memory.
    return (lambda: a * b + c), 5 * 4 * n, "bytes"


def case_matmul(lib, n, dtype_name):
    dt = getattr(lib, dtype_name)
    a = lib.randn(n, n, device="cuda").to(dt)
    b = lib.randn(n, n, device="cuda").to(dt)
    return (lambda: a @ b), 2 * n**3, "flop"


def case_small_add(lib):
    a = lib.ones(4, device="cuda")
    b = lib.ones(4, device="cuda")
    return (lambda: a + b), None, None


def case_mlp_step(lib):
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(784, 256), lib.nn.ReLU(), lib.nn.Linear(256, 10))
    model = model.to("cuda")
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    x = lib.randn(64, 784, device="cuda")
    y = lib.randint(0, 10, (64,), device="cuda")
    loss_fn = lib.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    return step, None, None


def case_cnn_step(lib):
    lib.manual_seed(0)
    nn = lib.nn
    model = nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 10),
    ).to("cuda")
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = lib.randn(64, 1, 28, 28, device="cuda")
    y = lib.randint(0, 10, (64,), device="cuda")
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    return step, None, None


def case_sort(lib, rows, n):
    x = lib.randn(rows, n, device="cuda")
    return (lambda: lib.sort(x, dim=1)), None, None


def case_topk(lib, rows, n, k):
    x = lib.randn(rows, n, device="cuda")
    return (lambda: x.topk(k, 1)), None, None


def case_cumsum(lib, rows, n):
    x = lib.randn(rows, n, device="cuda")
    return (lambda: x.cumsum(1)), None, None


def case_linalg(lib, op, shape, flops=None):
    """A linalg op on a (batch of) well-conditioned float32 matrices: many small ones take the
    batched paths (one-thread-per-matrix kernels, cuSOLVER's batched Jacobi), large ones
    cuSOLVER's dense routines. `flops`: a nominal count for the rate column (else times)."""
    lib.manual_seed(0)
    n = shape[-1]
    a = lib.randn(*shape, device="cuda")
    if op in ("cholesky", "eigh"):
        a = a @ a.transpose(-2, -1)
    a = a + n * lib.eye(n, device="cuda")
    la = lib.linalg
    fns = {
        "inv": lambda: la.inv(a),
        "solve": lambda: la.solve(a, a[..., :16]),
        "cholesky": lambda: la.cholesky(a),
        "eigh": lambda: la.eigh(a),
        "svd": lambda: la.svd(a, full_matrices=False),
        "qr": lambda: la.qr(a),
        "det": lambda: la.det(a),
    }
    return fns[op], flops, "flop" if flops else None


CASES = [
    ("a*b+c 64M f32 (bandwidth)", case_fma, ()),
    ("matmul f32 4096", case_matmul, (4096, "float32")),
    ("matmul f32 8192", case_matmul, (8192, "float32")),
    ("matmul bf16 4096", case_matmul, (4096, "bfloat16")),
    ("matmul bf16 8192", case_matmul, (8192, "bfloat16")),
    ("a+b 4 elements (launch overhead)", case_small_add, ()),
    ("MLP 784-256-10 Adam step, batch 64", case_mlp_step, ()),
    ("CNN 2 conv + linear SGD step, batch 64", case_cnn_step, ()),
    ("sort 4096 rows x 1000 f32", case_sort, (4096, 1000)),
    ("sort 1 row x 1M f32", case_sort, (1, 1 << 20)),
    ("topk 10 of 4096 rows x 1000", case_topk, (4096, 1000, 10)),
    ("cumsum 4096 x 4096 along rows", case_cumsum, (4096, 4096)),
    ("linalg.inv 10000 x 3x3 f32", case_linalg, ("inv", (10000, 3, 3))),
    ("linalg.det 10000 x 3x3 f32", case_linalg, ("det", (10000, 3, 3))),
    ("linalg.eigh 1000 x 8x8 f32", case_linalg, ("eigh", (1000, 8, 8))),
    ("linalg.svd 256 x 16x16 f32", case_linalg, ("svd", (256, 16, 16))),
    ("linalg.solve 64 x 256x256 f32, 16 rhs", case_linalg,
     ("solve", (64, 256, 256), 64 * (2 / 3 * 256**3 + 2 * 256**2 * 16))),
    ("linalg.cholesky 4096 f32", case_linalg, ("cholesky", (4096, 4096), 4096**3 / 3)),
    ("linalg.qr 2048 f32", case_linalg, ("qr", (2048, 2048), 4 / 3 * 2048**3)),
    ("linalg.eigh 2048 f32", case_linalg, ("eigh", (2048, 2048), 9 * 2048**3)),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--only", default=None)
    args = ap.parse_args()
    if not ft.cuda.is_available():
        print(f"no CUDA device: {ft._C._cuda_unavailable_reason()}")
        return
    print(f"device: {ft.cuda.get_device_name()}")
    if torch is not None:
        torch.backends.cuda.matmul.allow_tf32 = False
        print(f"torch {torch.__version__}, cuda {torch.version.cuda}")
    print(f"{'case':40} {'ferrotorch':>14} {'torch':>14} {'ft/torch time':>14}")
    for name, make, extra in CASES:
        if args.only and args.only.lower() not in name.lower():
            continue
        row = {}
        for lib in [ft] + ([torch] if torch is not None else []):
            try:
                fn, work, unit = make(lib, *extra)
                inner = 100 if work is None else 1
                row[lib.__name__] = (best(lib, fn, args.repeat, inner), work, unit)
            except Exception as e:  # report and go on: one failing op must not hide the rest
                row[lib.__name__] = (None, None, f"{type(e).__name__}: {e}"[:60])

        def cell(v):
            t, work, unit = v
            if t is None:
                return "error"
            if unit == "flop":
                return f"{work / t / 1e12:8.1f} TFLOP/s"
            if unit == "bytes":
                return f"{work / t / 1e9:8.0f} GB/s"
            return f"{t * 1e6:9.1f} us"

        f = row.get("ferrotorch")
        t = row.get("torch")
        ratio = f"{f[0] / t[0]:14.2f}" if f and t and f[0] and t[0] else f"{'n/a':>14}"
        print(f"{name:40} {cell(f):>14} {cell(t) if t else 'n/a':>14} {ratio}")
        for lib_name, v in row.items():
            if v[0] is None:
                print(f"    {lib_name}: {v[2]}")


if __name__ == "__main__":
    main()
