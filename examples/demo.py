"""ferrotorch showcase (the README's `make demo`): tensors, views, broadcasting, NumPy sharing.

The training demo arrives with the nn/optim issue; until then this shows the tensor core.
"""

import time

import numpy as np

import ferrotorch as torch


def main():
    print("ferrotorch", torch.__version__)
    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    print("x =", x)
    print("x.shape =", x.shape, " x.stride() =", x.stride(), " dtype =", x.dtype)
    print("x * 2 + 1 =", x * 2 + 1)
    print("broadcast x + [10, 20, 30] =", x + torch.tensor([10.0, 20.0, 30.0]))
    ints = torch.tensor([1, 2], dtype=torch.int32)
    print("int32 tensor + 2.5 (weak scalar promotion) ->", ints + 2.5)
    print("exp(x) =", torch.exp(x))

    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    t = torch.from_numpy(a)
    t.mul_(10)
    print("NumPy array after an in-place op on the tensor that shares it:\n", a)

    n = 10_000_000
    big = torch.from_numpy(np.random.default_rng(0).standard_normal(n).astype(np.float32))
    t0 = time.perf_counter()
    y = big * big + big
    dt = time.perf_counter() - t0
    print(f"a*a+a on {n:,} float32 elements: {dt * 1e3:.1f} ms (parallel Rust kernels)")
    assert np.allclose(y.numpy()[:5], (big.numpy()[:5] ** 2 + big.numpy()[:5]))
    print("demo finished OK")


if __name__ == "__main__":
    main()
