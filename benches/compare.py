#!/usr/bin/env python3
"""Time ferrotorch beside NumPy (and PyTorch when it is importable) in one run.

Usage (after a release build: ``PROFILE=release ./tools/dev_build.sh``)::

    PYTHONPATH=python python benches/compare.py [--repeat N] [--quick]

Every case is timed with ``timeit``: ``autorange`` picks each library's loop count, then
``--repeat`` rounds time the libraries in turn and each one's best round is kept. The table
shows each library's time (matmul: GFLOP/s) and the time ratios ferrotorch/NumPy and
ferrotorch/PyTorch (below 1 means ferrotorch is faster). A case ferrotorch cannot run yet (an
op added by another part of the project) shows ``n/a``.

NumPy's OpenBLAS reads ``OPENBLAS_CORETYPE``/``OPENBLAS_L2_SIZE`` at load time; if either is
set, the script re-runs itself in a subprocess without them so NumPy uses the kernels it would
pick on its own.
"""

import argparse
import os
import subprocess
import sys
import time
import timeit

_OPENBLAS_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
_CHILD_FLAG = "_FERROTORCH_COMPARE_CHILD"


_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS")


def _requested_threads():
    for i, a in enumerate(sys.argv):
        if a == "--threads" and i + 1 < len(sys.argv):
            return sys.argv[i + 1]
        if a.startswith("--threads="):
            return a.split("=", 1)[1]
    return None


def _reexec_with_clean_environment():
    """Re-run in a subprocess without the OpenBLAS overrides (and with the thread-count
    variables set when --threads is given): both are read when the libraries load."""
    if os.environ.get(_CHILD_FLAG) == "1":
        return
    present = [v for v in _OPENBLAS_VARS if v in os.environ]
    threads = _requested_threads()
    if not present and threads is None:
        return
    env = {k: v for k, v in os.environ.items() if k not in _OPENBLAS_VARS}
    if threads is not None:
        env.update(dict.fromkeys(_THREAD_VARS, threads))
    env[_CHILD_FLAG] = "1"
    if present:
        print(f"(re-running in a subprocess without {', '.join(present)})", flush=True)
    sys.exit(subprocess.call([sys.executable, os.path.abspath(__file__), *sys.argv[1:]], env=env))


_reexec_with_clean_environment()

# Imported after the re-exec check: OpenBLAS reads its environment when NumPy loads it.
import ferrotorch as ft
import numpy as np

try:
    import torch
except ImportError:
    torch = None


# Pause before timing a library: OpenBLAS's worker threads busy-wait ~0.1-0.2 s after each
# call (measured: a ferrotorch 2048 matmul started right after NumPy's ran at 110 GFLOP/s, after
# a 0.2 s pause at 165), and PyTorch's OpenMP threads spin too, stealing cores from whichever
# library is timed next.
SETTLE_SECONDS = 0.25


def best_times(fns, repeat):
    """Best per-call time in seconds of each callable in `fns` (name -> callable): autoranged
    loop counts, then `repeat` rounds that time every library in turn (each round starting
    with the next library, after a settling pause), so a burst of load from elsewhere on a
    shared machine slows all of them alike instead of one library's rounds."""
    timers = {name: timeit.Timer(fn) for name, fn in fns.items()}
    numbers = {name: t.autorange()[0] for name, t in timers.items()}
    best = dict.fromkeys(fns, float("inf"))
    names = list(timers)
    for r in range(repeat):
        for name in names[r % len(names):] + names[:r % len(names)]:
            time.sleep(SETTLE_SECONDS)
            best[name] = min(best[name], timers[name].timeit(numbers[name]) / numbers[name])
    return best


class NotAvailable(Exception):
    pass


def need(obj, name):
    if not hasattr(obj, name):
        raise NotAvailable(name)
    return getattr(obj, name)


# --------------------------------------------------------------------------- cases
# Each case maps a library name to a factory returning the zero-argument callable to time
# (setup happens in the factory, outside the timing).


def rand(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def add2(x, y):
    return lambda: x + y


def fma3(x, y, z):
    return lambda: x * y + z


def matmul2(x, y):
    return lambda: x @ y


def call0(method):
    return lambda: method()


def case_add_small():
    a, b = rand(4), rand(4, 1)
    return {
        "numpy": lambda: add2(a, b),
        "ferrotorch": lambda: add2(ft.from_numpy(a), ft.from_numpy(b)),
        "torch": lambda: add2(torch.from_numpy(a), torch.from_numpy(b)),
    }


def case_to_numpy():
    a = rand((1000, 1000))
    return {
        "numpy": lambda: call0(a.view),  # the nearest NumPy analogue
        "ferrotorch": lambda: call0(ft.from_numpy(a.copy()).numpy),
        "torch": lambda: call0(torch.from_numpy(a.copy()).numpy),
    }


def case_from_numpy():
    a = rand((1000, 1000))
    return {
        "numpy": lambda: lambda: np.asarray(a),
        "ferrotorch": lambda: lambda: ft.from_numpy(a),
        "torch": lambda: lambda: torch.from_numpy(a),
    }


def case_matmul(n):
    a, b = rand((n, n), 1), rand((n, n), 2)

    def ferro():
        x, y = ft.from_numpy(a), ft.from_numpy(b)
        np.testing.assert_allclose((x @ y).numpy(), a @ b, rtol=1e-3, atol=1e-3 * n**0.5)
        return matmul2(x, y)

    return {
        "numpy": lambda: matmul2(a, b),
        "ferrotorch": ferro,
        "torch": lambda: matmul2(torch.from_numpy(a), torch.from_numpy(b)),
    }


def case_fma(n):
    a, b, c = rand(n, 1), rand(n, 2), rand(n, 3)
    return {
        "numpy": lambda: fma3(a, b, c),
        "ferrotorch": lambda: fma3(ft.from_numpy(a), ft.from_numpy(b), ft.from_numpy(c)),
        "torch": lambda: fma3(torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(c)),
    }


def case_inplace_mul(n):
    """x.mul_(y) in place (NumPy: np.multiply(x, y, out=x)); y is +-1 so that x neither
    overflows nor sinks into denormals over the repetitions."""
    a, b = rand(n, 1), np.sign(rand(n, 2)).astype(np.float32)

    def lib_fn(lib):
        x, y = lib.from_numpy(a.copy()), lib.from_numpy(b)
        return lambda: x.mul_(y)

    x0 = a.copy()
    return {
        "numpy": lambda: lambda: np.multiply(x0, b, out=x0),
        "ferrotorch": lambda: lib_fn(ft),
        "torch": lambda: lib_fn(torch),
    }


def case_sqrt(n):
    a = np.abs(rand(n, 1))
    return {
        "numpy": lambda: lambda: np.sqrt(a),
        "ferrotorch": lambda: ft.from_numpy(a).sqrt,
        "torch": lambda: torch.from_numpy(a).sqrt,
    }


def case_unary(n, name):
    """A float32 transcendental op (vectorised polynomial kernels in ferrotorch, SLEEF in
    PyTorch, NumPy's own SIMD loops where it has them)."""
    a = rand(n, 3)
    a = np.abs(a) + 0.1 if name == "log" else a
    numpy_fns = {"exp": np.exp, "log": np.log, "tanh": np.tanh,
                 "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x))}

    def lib_fn(lib):
        x = lib.from_numpy(a)
        if name == "gelu":
            gelu = lib.nn.functional.gelu
            return lambda: gelu(x)
        return getattr(x, name)

    return {
        "numpy": (lambda: (lambda: numpy_fns[name](a))) if name in numpy_fns else None,
        "ferrotorch": lambda: lib_fn(ft),
        "torch": lambda: lib_fn(torch),
    }


def case_activation(n, name):
    """An nn.functional activation on float32, forward and backward (fused single-pass
    kernels with one saved tensor in ferrotorch)."""
    a = rand(n, 5)

    def lib_fn(lib, mode):
        x = lib.from_numpy(a.copy())
        fn = getattr(lib.nn.functional, name)
        if mode == "fwd":
            return lambda: fn(x)
        x.requires_grad_(True)
        g = lib.ones_like(x)

        def step():
            x.grad = None
            fn(x).backward(g)
        return step

    return {
        mode: {
            "numpy": None,
            "ferrotorch": (lambda m: lambda: lib_fn(ft, m))(mode),
            "torch": (lambda m: lambda: lib_fn(torch, m))(mode),
        }
        for mode in ("fwd", "fwd+bwd")
    }


def case_scalar_mul(n):
    a = rand(n, 4)
    return {
        "numpy": lambda: lambda: a * 1.5,
        "ferrotorch": lambda: (lambda x: lambda: x * 1.5)(ft.from_numpy(a)),
        "torch": lambda: (lambda x: lambda: x * 1.5)(torch.from_numpy(a)),
    }


def case_sum(n):
    a = rand(n)

    def ferro():
        x = ft.from_numpy(a)
        return call0(need(x, "sum"))

    return {
        "numpy": lambda: call0(a.sum),
        "ferrotorch": ferro,
        "torch": lambda: call0(torch.from_numpy(a).sum),
    }


def case_transpose_contiguous(n):
    a = rand((n, n))

    def ferro():
        x = ft.from_numpy(a)
        if hasattr(x, "transpose"):
            return lambda: x.transpose(0, 1).contiguous()
        # Until the view ops are bound in Python, the same permute view through einsum.
        return lambda: ft.einsum("ij->ji", x).contiguous()

    def torch_fn():
        x = torch.from_numpy(a)
        return lambda: x.transpose(0, 1).contiguous()

    return {
        "numpy": lambda: lambda: np.ascontiguousarray(a.T),
        "ferrotorch": ferro,
        "torch": torch_fn,
    }


def case_softmax(rows, cols):
    a = rand((rows, cols))

    def np_softmax():
        e = np.exp(a - a.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def ferro():
        x = ft.from_numpy(a)
        if hasattr(ft, "softmax"):
            return lambda: ft.softmax(x, dim=1)
        return lambda: need(x, "softmax")(1)

    def torch_fn():
        x = torch.from_numpy(a)
        return lambda: torch.softmax(x, dim=1)

    return {
        "numpy": lambda: np_softmax,
        "ferrotorch": ferro,
        "torch": torch_fn,
    }


# ---- autograd and nn (issues 3 and 4): numpy gets the hand-written equivalent where one exists


def case_lsq_grad(d):
    """Gradient of ||y - A x||^2 w.r.t. x, A of 10d x d, float64."""
    rng = np.random.default_rng(d)
    a, y, x0 = rng.standard_normal((10 * d, d)), rng.standard_normal(10 * d), rng.standard_normal(d)

    def numpy_grad():
        return lambda: -2.0 * (a.T @ (y - a @ x0))

    def autograd(lib):
        at, yt = lib.from_numpy(a), lib.from_numpy(y)
        xt = lib.from_numpy(x0.copy()).requires_grad_()

        def step():
            xt.grad = None
            ((yt - at @ xt) ** 2).sum().backward()
            return xt.grad

        np.testing.assert_allclose(step().numpy(), numpy_grad()(), rtol=1e-8, atol=1e-8)
        return step

    return {
        "numpy": numpy_grad,
        "ferrotorch": lambda: autograd(ft),
        "torch": lambda: autograd(torch),
    }


def case_op_chain(n_ops):
    """Bookkeeping cost: n_ops tiny ops recorded, then backward through all of them."""
    x0 = rand(4)

    def chain(lib):
        x = lib.from_numpy(x0.copy()).requires_grad_()

        def step():
            x.grad = None
            h = x
            for _ in range(n_ops // 2):
                h = (h * 0.999) + 0.001
            h.sum().backward()
            return x.grad

        return step

    return {"ferrotorch": lambda: chain(ft), "torch": lambda: chain(torch)}


def case_mlp_adam_step():
    """One Adam training step of a 784-256-10 MLP, batch 64, CrossEntropyLoss."""
    rng = np.random.default_rng(0)
    xb = rng.standard_normal((64, 784)).astype(np.float32)
    yb = rng.integers(0, 10, 64)

    def step_fn(lib):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(784, 256), lib.nn.ReLU(), lib.nn.Linear(256, 10))
        opt = lib.optim.Adam(model.parameters(), lr=1e-3)
        loss_fn = lib.nn.CrossEntropyLoss()
        x, y = lib.from_numpy(xb), lib.from_numpy(yb)

        def step():
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            return loss

        return step

    return {"ferrotorch": lambda: step_fn(ft), "torch": lambda: step_fn(torch)}


def case_conv2d(backward):
    """Conv2d(3, 32, 3, padding=1) on 16x3x32x32 float32, forward (+ backward)."""
    xb = rand((16, 3, 32, 32))

    def conv_fn(lib):
        lib.manual_seed(0)
        conv = lib.nn.Conv2d(3, 32, 3, padding=1)
        x = lib.from_numpy(xb)
        if not backward:
            def fwd():
                with lib.no_grad():
                    return conv(x)
            return fwd
        x.requires_grad_()

        def fwd_bwd():
            x.grad = None
            conv.zero_grad()
            conv(x).sum().backward()
            return x.grad

        return fwd_bwd

    return {"ferrotorch": lambda: conv_fn(ft), "torch": lambda: conv_fn(torch)}


def case_conv2d_wide(quick):
    """Conv2d(64, 64, 3, padding=1) on 16x64x56x56 float32 (8x64x28x28 quick), forward +
    backward from a random upstream gradient (sum()'s constant gradient takes a shortcut)."""
    shape = (8, 64, 28, 28) if quick else (16, 64, 56, 56)
    xb, gb = rand(shape), rand(shape)

    def conv_fn(lib):
        lib.manual_seed(0)
        conv = lib.nn.Conv2d(64, 64, 3, padding=1)
        x, g = lib.from_numpy(xb).requires_grad_(), lib.from_numpy(gb)

        def fwd_bwd():
            x.grad = None
            conv.zero_grad()
            conv(x).backward(g)
            return x.grad

        return fwd_bwd

    return {"ferrotorch": lambda: conv_fn(ft), "torch": lambda: conv_fn(torch)}


def case_cnn_sgd_step():
    """One SGD step of a 3-block CNN (conv-BN-ReLU-pool x3, linear) on 64x3x32x32."""
    rng = np.random.default_rng(0)
    xb = rng.standard_normal((64, 3, 32, 32)).astype(np.float32)
    yb = rng.integers(0, 10, 64)

    def step_fn(lib):
        lib.manual_seed(0)
        nn = lib.nn

        def block(cin, cout):
            return [nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU()]

        model = nn.Sequential(*block(3, 32), nn.MaxPool2d(2), *block(32, 64), nn.MaxPool2d(2),
                              *block(64, 128), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                              nn.Linear(128, 10))
        opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        x, y = lib.from_numpy(xb), lib.from_numpy(yb)

        def step():
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        return step

    return {"ferrotorch": lambda: step_fn(ft), "torch": lambda: step_fn(torch)}


def cases(quick):
    big = 1_000_000 if quick else 10_000_000
    tn = 1024 if quick else 4096
    sizes = (256, 512) if quick else (256, 512, 1024, 2048)
    out = [
        ("a+b, 4 elements (per-op overhead)", case_add_small(), None),
        (".numpy() of 1000x1000", case_to_numpy(), None),
        ("from_numpy of 1000x1000", case_from_numpy(), None),
    ]
    for n in sizes:
        out.append((f"matmul f32 {n}x{n}", case_matmul(n), 2.0 * n**3))
    out += [
        (f"a*b+c f32, {big // 1_000_000}M", case_fma(big), None),
        (f"x.mul_(y) f32, {big // 1_000_000}M (in place)", case_inplace_mul(big), None),
        (f"sqrt f32, {big // 1_000_000}M", case_sqrt(big), None),
        (f"x * 1.5 f32, {big // 1_000_000}M", case_scalar_mul(big), None),
    ]
    for name in ("exp", "log", "tanh", "sigmoid", "gelu"):
        out.append((f"{name} f32, {big // 1_000_000}M", case_unary(big, name), None))
    for name in ("elu", "leaky_relu", "softplus", "hardswish", "logsigmoid"):
        for mode, case in case_activation(big, name).items():
            out.append((f"F.{name} f32 {mode}, {big // 1_000_000}M", case, None))
    out += [
        (f"sum f32, {big // 1_000_000}M", case_sum(big), None),
        (f"transpose().contiguous() {tn}x{tn}", case_transpose_contiguous(tn), None),
        ("softmax rows 4096x1024", case_softmax(4096, 1024), None),
    ]
    for d in (100, 500) if quick else (100, 500, 1000):
        out.append((f"grad ||y-Ax||^2 f64, d={d}", case_lsq_grad(d), None))
    out += [
        ("100-op chain fwd+bwd (autograd overhead)", case_op_chain(100), None),
        ("MLP 784-256-10 Adam step, batch 64", case_mlp_adam_step(), None),
        ("Conv2d(3,32,3,p=1) fwd 16x3x32x32", case_conv2d(False), None),
        ("Conv2d(3,32,3,p=1) fwd+bwd 16x3x32x32", case_conv2d(True), None),
        ("Conv2d(64,64,3,p=1) fwd+bwd(random grad)", case_conv2d_wide(quick), None),
        ("CNN (3 conv blocks) SGD step, batch 64", case_cnn_sgd_step(), None),
    ]
    return out


# --------------------------------------------------------------------------- report


def fmt_time(t):
    if t < 1e-6:
        return f"{t * 1e9:.0f} ns"
    if t < 1e-3:
        return f"{t * 1e6:.2f} us"
    if t < 1:
        return f"{t * 1e3:.2f} ms"
    return f"{t:.2f} s"


def fmt_cell(t, flops):
    if t is None:
        return "n/a"
    if flops:
        return f"{flops / t / 1e9:.1f} GFLOP/s"
    return fmt_time(t)


def print_environment():
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, "
          f"ferrotorch {getattr(ft, '__version__', '?')}, "
          f"torch {torch.__version__ if torch else 'not installed'}; {os.cpu_count()} CPUs")
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        cfg = np.show_config(mode="dicts") if hasattr(np, "show_config") else None
        blas = (cfg or {}).get("Build Dependencies", {}).get("blas", {})
        extra = blas.get("openblas configuration", "")
        print(f"numpy BLAS (build config; threadpoolctl not installed): "
              f"{blas.get('name', '?')} {blas.get('version', '')} {extra}".rstrip())
    else:
        for info in threadpool_info():
            if info.get("user_api") == "blas":
                print(f"numpy BLAS: {info.get('internal_api')} {info.get('version')} "
                      f"arch={info.get('architecture')} threads={info.get('num_threads')} "
                      f"({info.get('filepath')})")
    for v in _OPENBLAS_VARS + _THREAD_VARS:
        print(f"  {v}={os.environ.get(v, '(unset)')}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5, help="timing rounds per case (best kept)")
    ap.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke test")
    ap.add_argument("--threads", type=int, default=None,
                    help="threads for every library (sets OPENBLAS/OMP/RAYON_NUM_THREADS)")
    ap.add_argument("--only", default=None,
                    help="run only the cases whose name contains this text (case-insensitive)")
    args = ap.parse_args()
    if torch is not None and args.threads:
        torch.set_num_threads(args.threads)
    print_environment()
    libs = ["numpy", "ferrotorch"] + (["torch"] if torch is not None else [])
    rows = []
    for name, factories, flops in cases(args.quick):
        if args.only and args.only.lower() not in name.lower():
            continue
        times = dict.fromkeys(libs)
        fns = {}
        for lib in libs:
            try:
                if lib not in factories:
                    raise NotAvailable(lib)
                fns[lib] = factories[lib]()
            except (NotAvailable, AttributeError, TypeError, NotImplementedError):
                pass
        times.update(best_times(fns, args.repeat))
        rows.append((name, times, flops))
        print(".", end="", flush=True)
    print()

    def ratio(t, other):
        return "n/a" if t.get("ferrotorch") is None or t.get(other) is None else (
            f"{t['ferrotorch'] / t[other]:.2f}"
        )

    header = ["case", "numpy", "ferrotorch", "torch", "ferro/numpy", "ferro/torch"]
    table = [header]
    for name, t, flops in rows:
        table.append([
            name,
            fmt_cell(t.get("numpy"), flops),
            fmt_cell(t.get("ferrotorch"), flops),
            fmt_cell(t.get("torch"), flops) if torch is not None else "-",
            ratio(t, "numpy"),
            ratio(t, "torch") if torch is not None else "-",
        ])
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for i, r in enumerate(table):
        print("  ".join(c.ljust(w) if j == 0 else c.rjust(w) for j, (c, w) in enumerate(zip(r, widths))))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    print("ratios are time ratios (ferrotorch time / other time): below 1 means ferrotorch is faster")


if __name__ == "__main__":
    main()
