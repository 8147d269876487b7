"""The compositions that stand in for CPU-only native kernels on CUDA tensors (vector norms,
nearest / linear resampling, adaptive max pooling with uneven bins, clamp / all / any from
where and sums, the CPU round trip), run here on CPU tensors against the native kernels they
replace: same values (bit for bit where the arithmetic is the same) and same gradients.
test_cuda_python_ops.py runs the public functions on a GPU."""


import numpy as np
import pytest

import ferrotorch as torch
import ferrotorch.nn.functional as F
from ferrotorch import _cuda_fallback as cf
from ferrotorch.linalg import _composed_vector_norm
from ferrotorch.nn.utils.rnn import invert_permutation

RNG = np.random.default_rng(2024)
INF = float("inf")


def npy(t):
    t = t.detach()
    return (t.float() if t.dtype in (torch.float16, torch.bfloat16) else t).numpy()


def leaf(a, dtype):
    return torch.from_numpy(np.array(a)).to(dtype).requires_grad_(True)


def grads_match(f_native, f_composed, a, dtype, tol, exact=False):
    """Values and gradients (of sum(out * g)) of the two functions agree on ``a``."""
    x1, x2 = leaf(a, dtype), leaf(a, dtype)
    y1, y2 = f_native(x1), f_composed(x2)
    assert y1.shape == y2.shape and y1.dtype == y2.dtype
    if exact:
        np.testing.assert_array_equal(npy(y2), npy(y1))
    else:
        np.testing.assert_allclose(npy(y2), npy(y1), **tol)
    g = torch.from_numpy(RNG.standard_normal(tuple(y1.shape))).to(y1.dtype)
    (g1,) = torch.autograd.grad((y1 * g).sum(), [x1])
    (g2,) = torch.autograd.grad((y2 * g).sum(), [x2])
    np.testing.assert_allclose(npy(g2), npy(g1), **tol)


def tol(dtype):
    if dtype in (torch.float16, torch.bfloat16):
        return {"rtol": 2e-2, "atol": 2e-2}
    return (
        {"rtol": 1e-5, "atol": 1e-6} if dtype == torch.float32 else {"rtol": 1e-12, "atol": 1e-12}
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16], ids=str)
@pytest.mark.parametrize("ord", [1.0, 2.0, 3.0, 1.5, INF, -INF])
@pytest.mark.parametrize(
    "dims,keepdim", [(None, False), ([1], False), ([0, 2], True), ([-1], True)]
)
def test_composed_vector_norm(dtype, ord, dims, keepdim):
    a = RNG.standard_normal((3, 4, 5))
    a[0] = 0.0  # a zero slice: gradient 0 (not nan) for the orders >= 1
    a[1, 2, 3] = 0.0

    def native(x):
        return torch._C._linalg_vector_norm(x, ord, dims, keepdim)

    def composed(x):
        return _composed_vector_norm(x, ord, dims, keepdim)

    grads_match(native, composed, a, dtype, tol(dtype))


def test_composed_vector_norm_declines_what_it_does_not_cover():
    x = torch.randn(3, 4)
    assert _composed_vector_norm(x, 0.0, None, False) is None
    assert _composed_vector_norm(x, -2.0, None, False) is None
    assert _composed_vector_norm(x, 0.5, None, False) is None  # the Rust node's gradient
    assert _composed_vector_norm(x, 2.0, [], False) is None
    assert _composed_vector_norm(x, 2.0, [1, -1], False) is None  # repeated dim
    assert _composed_vector_norm(x, 2.0, [2], False) is None  # out of range
    assert _composed_vector_norm(torch.zeros(0, 3), 2.0, None, False) is None
    s = torch.tensor(-2.5, requires_grad=True)
    np.testing.assert_allclose(npy(_composed_vector_norm(s, 2.0, None, True)), 2.5)


RESAMPLE_CASES = [
    ((2, 3, 5), [9], [None], "nearest"),
    ((2, 3, 5), [10], [2.0], "nearest"),
    ((2, 3, 8), [3], [None], "nearest"),
    ((2, 3, 5), [9], [None], "nearest-exact"),
    ((2, 3, 5, 7), [9, 4], [None, None], "nearest"),
    ((2, 3, 5, 7), [8, 11], [1.7, 1.7], "nearest"),
    ((2, 3, 5, 7), [3, 16], [0.6, 2.3], "nearest-exact"),
    ((2, 3, 5), [9], [None], "linear"),
    ((2, 3, 5), [7], [1.5], "linear"),
    ((2, 3, 5, 7), [9, 4], [None, None], "bilinear"),
    ((2, 3, 5, 7), [8, 11], [1.7, 1.7], "bilinear"),
    ((2, 3, 5, 7), [5, 7], [None, None], "bilinear"),
    ((1, 1, 6, 3), [1, 1], [None, None], "bilinear"),
]


@pytest.mark.parametrize("case", RESAMPLE_CASES, ids=[str(i) for i in range(len(RESAMPLE_CASES))])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16], ids=str)
def test_composed_resampling_matches_native(case, align_corners, dtype):
    shape, size, scales, mode = case
    if "nearest" in mode and align_corners:
        pytest.skip("align_corners is for the interpolating modes")
    native = {
        ("nearest", 1): lambda x: torch._C._upsample_nearest1d(x, size, scales[0]),
        ("nearest", 2): lambda x: torch._C._upsample_nearest2d(x, size, *scales),
        ("nearest-exact", 1): lambda x: torch._C._upsample_nearest_exact1d(x, size, scales[0]),
        ("nearest-exact", 2): lambda x: torch._C._upsample_nearest_exact2d(x, size, *scales),
        ("linear", 1): lambda x: torch._C._upsample_linear1d(x, size, align_corners, scales[0]),
        ("bilinear", 2): lambda x: torch._C._upsample_bilinear2d(x, size, align_corners, *scales),
    }[(mode, len(size))]
    x = RNG.standard_normal(shape)
    assert F._resample_composable(torch.from_numpy(x), size, mode)
    grads_match(
        native,
        lambda t: F._resample_composed(t, size, scales, mode, align_corners),
        x,
        dtype,
        tol(dtype),
        exact=dtype != torch.float16,
    )


def test_resample_composable_leaves_errors_and_other_modes_to_the_native_kernels():
    x = torch.randn(1, 2, 4, 4)
    assert not F._resample_composable(x, [0, 3], "bilinear")
    assert not F._resample_composable(x, [3, 3], "bicubic")
    assert not F._resample_composable(x, [3], "linear")
    assert not F._resample_composable(torch.zeros(1, 2, 0, 4), [3, 3], "nearest")
    assert not F._resample_composable(x.long(), [3, 3], "nearest")


@pytest.mark.parametrize(
    "shape,out",
    [
        ((2, 3, 7, 9), (3, 4)),
        ((3, 5, 5), (2, 3)),
        ((1, 1, 4, 4), (3, 3)),
        ((2, 2, 6, 6), (4, 5)),
        ((1, 2, 3, 10), (3, 7)),
        ((1, 2, 5, 5), (5, 5)),
    ],
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_composed_adaptive_max_pool2d(shape, out, dtype):
    x = RNG.standard_normal(shape)
    grads_match(
        lambda t: torch._C._adaptive_max_pool2d(t, list(out))[0],
        lambda t: F._adaptive_max_pool2d_composed(t, list(out))[0],
        x,
        dtype,
        tol(dtype),
        exact=True,
    )
    t = torch.from_numpy(x)
    np.testing.assert_array_equal(
        F._adaptive_max_pool2d_composed(t, list(out))[1].numpy(),
        torch._C._adaptive_max_pool2d(t, list(out))[1].numpy(),
    )
    # ties: the first maximum in scan order wins, as in the native kernel
    ti = torch.from_numpy(RNG.integers(0, 3, shape).astype(np.float64))
    np.testing.assert_array_equal(
        F._adaptive_max_pool2d_composed(ti, list(out))[1].numpy(),
        torch._C._adaptive_max_pool2d(ti, list(out))[1].numpy(),
    )


def test_adaptive_bins():
    assert F._adaptive_bins(7, 3) == ([[0, 1, 2], [2, 3, 4], [4, 5, 6]], 3)
    assert F._adaptive_bins(5, 2) == ([[0, 1, 2], [2, 3, 4]], 3)
    assert F._adaptive_bins(3, 5) == ([[0, 0], [0, 1], [1, 1], [1, 2], [2, 2]], 2)
    assert F._adaptive_bins(4, 3) == ([[0, 1], [1, 2], [2, 3]], 2)


def test_via_cpu_and_to_device():
    from ferrotorch.return_types import sort as sort_result  # a named tuple type

    x = torch.randn(3, 2)
    r = cf.via_cpu(lambda a, k: (a * k, [a]), x, 2.0)
    np.testing.assert_array_equal(r[0].numpy(), (x * 2.0).numpy())
    assert cf.cuda_device(x, 1.0, None) is None
    nt = sort_result(x, x.long())
    moved = cf.to_device(nt, torch.device("cpu"))
    assert type(moved) is type(nt) and moved.values is not None
    assert cf.to_device(None, "cpu") is None


def test_invert_permutation():
    p = torch.from_numpy(RNG.permutation(9))
    np.testing.assert_array_equal(invert_permutation(p).numpy(), p.argsort().numpy())
    assert invert_permutation(None) is None
    assert invert_permutation(torch.zeros(0, dtype=torch.int64)).shape == (0,)
