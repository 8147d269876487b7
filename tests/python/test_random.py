"""Random sampling: reproducibility (manual_seed, Generator, get/set state), ranges, dtypes
and statistics of every sampler."""

import numpy as np
import pytest

import ferrotorch as torch

FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
INTS = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
N = 60_000


@pytest.fixture(autouse=True)
def _seeded():
    # Every test starts from a known state, so the statistical checks are deterministic.
    torch.manual_seed(20240601)


def vals(t):
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy().astype(np.float64)


def same(a, b):
    np.testing.assert_array_equal(vals(a), vals(b))


# ----------------------------------------------------------------------------- seeding

SAMPLERS = {
    "rand": lambda g: torch.rand(5, 3, generator=g),
    "randn": lambda g: torch.randn(7, generator=g),
    "randint": lambda g: torch.randint(-5, 5, (9,), generator=g),
    "randperm": lambda g: torch.randperm(20, generator=g),
    "normal_scalar": lambda g: torch.normal(2.0, 3.0, (6,), generator=g),
    "normal_tensor": lambda g: torch.normal(torch.arange(4.0), torch.ones(4), generator=g),
    "bernoulli": lambda g: torch.bernoulli(torch.full((50,), 0.3), generator=g),
    "multinomial": lambda g: torch.multinomial(torch.tensor([1.0, 2.0, 3.0, 4.0]), 3,
                                               generator=g),
    "uniform_": lambda g: torch.empty(8).uniform_(-2, 2, generator=g),
    "normal_": lambda g: torch.empty(8).normal_(1, 2, generator=g),
    "random_": lambda g: torch.empty(8, dtype=torch.int32).random_(0, 100, generator=g),
    "exponential_": lambda g: torch.empty(8).exponential_(2.0, generator=g),
    "bernoulli_": lambda g: torch.empty(8).bernoulli_(0.5, generator=g),
    "rand_like": lambda g: torch.rand_like(torch.empty(3, 2), generator=g),
    "randn_like": lambda g: torch.randn_like(torch.empty(3, 2), generator=g),
    "randint_like": lambda g: torch.randint_like(torch.empty(6), 3, 9, generator=g),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_manual_seed_reproduces(name):
    f = SAMPLERS[name]
    torch.manual_seed(1234)
    a, b = f(None), f(None)
    torch.manual_seed(1234)
    same(a, f(None))
    same(b, f(None))
    # Successive calls differ (the generator advances).
    if name not in ("multinomial",):
        assert not np.array_equal(vals(a), vals(b))


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_generator_object_reproduces_and_is_independent(name):
    f = SAMPLERS[name]
    g = torch.Generator()
    g.manual_seed(99)
    torch.manual_seed(0)
    a = f(g)
    default_next = torch.rand(4)
    torch.manual_seed(0)
    g.manual_seed(99)
    same(a, f(g))
    # Using `g` does not advance the default generator.
    same(default_next, torch.rand(4))


def test_different_seeds_differ():
    torch.manual_seed(1)
    a = torch.rand(100)
    torch.manual_seed(2)
    b = torch.rand(100)
    assert not np.array_equal(a.numpy(), b.numpy())
    g1 = torch.Generator().manual_seed(1)
    same(a, torch.rand(100, generator=g1))


def test_manual_seed_returns_default_generator():
    g = torch.manual_seed(5)
    assert g is torch.default_generator
    assert isinstance(g, torch.Generator)
    assert torch.initial_seed() == 5
    assert g.initial_seed() == 5
    g2 = torch.Generator()
    assert g2.manual_seed(7) is g2
    assert g2.initial_seed() == 7
    assert g2.device.type == "cpu"


def test_seed_values():
    torch.manual_seed(-1)  # negative seeds wrap like PyTorch's
    assert torch.initial_seed() == 2**64 - 1
    torch.manual_seed(2**64 - 1)
    a = torch.rand(3)
    torch.manual_seed(-1)
    same(a, torch.rand(3))
    torch.manual_seed(np.int64(3))
    assert torch.initial_seed() == 3
    with pytest.raises(RuntimeError, match="Overflow"):
        torch.manual_seed(2**64)
    with pytest.raises(TypeError):
        torch.Generator().manual_seed("a")


def test_nondeterministic_seed():
    s = torch.seed()
    assert isinstance(s, int) and s == torch.initial_seed()
    g = torch.Generator()
    s2 = g.seed()
    assert g.initial_seed() == s2
    assert torch.seed() != torch.seed()


def test_rng_state_round_trip():
    torch.manual_seed(42)
    torch.rand(10)
    state = torch.get_rng_state()
    assert state.dtype == torch.uint8 and state.dim() == 1
    a = torch.randn(5)
    b = torch.randint(0, 100, (5,))
    torch.set_rng_state(state)
    same(a, torch.randn(5))
    same(b, torch.randint(0, 100, (5,)))
    # The state is a copy: mutating the tensor does not touch the generator.
    state.zero_()
    torch.set_rng_state(torch.get_rng_state())


def test_generator_state_round_trip_and_errors():
    g = torch.Generator().manual_seed(3)
    torch.rand(4, generator=g)
    st = g.get_state()
    a = torch.rand(4, generator=g)
    assert g.set_state(st) is g
    same(a, torch.rand(4, generator=g))
    # A state from one generator restores another.
    h = torch.Generator()
    h.set_state(st)
    same(a, torch.rand(4, generator=h))
    with pytest.raises(RuntimeError, match="wrong size"):
        g.set_state(torch.zeros(3, dtype=torch.uint8))
    with pytest.raises(TypeError, match="ByteTensor"):
        g.set_state(torch.zeros(16))
    with pytest.raises(TypeError):
        torch.set_rng_state([1, 2, 3])


def test_fork_rng():
    torch.manual_seed(10)
    with torch.random.fork_rng():
        inside = torch.rand(3)
    same(inside, torch.rand(3))
    assert torch.random.manual_seed is torch.manual_seed
    assert torch.random.initial_seed() == 10


def test_generator_device():
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="not available"):
            torch.Generator(device="cuda")
    assert torch.Generator("cpu").device.type == "cpu"


# ----------------------------------------------------------------------------- shapes & dtypes

def test_shape_forms():
    for t in (torch.rand(2, 3), torch.rand((2, 3)), torch.rand([2, 3]), torch.rand(size=(2, 3)),
              torch.randn(2, 3), torch.randn(size=[2, 3])):
        assert tuple(t.shape) == (2, 3) and t.dtype == torch.float32
    assert torch.rand(()).dim() == 0
    assert tuple(torch.randn(0, 4).shape) == (0, 4)
    assert tuple(torch.randint(3, (2, 0)).shape) == (2, 0)
    assert tuple(torch.randint(3, size=(4,)).shape) == (4,)
    assert tuple(torch.randint(low=1, high=3, size=(4,)).shape) == (4,)
    assert tuple(torch.randperm(0).shape) == (0,)


@pytest.mark.parametrize("dtype", FLOATS)
def test_rand_range_per_dtype(dtype):
    torch.manual_seed(0)
    t = torch.rand(50_000, dtype=dtype)
    assert t.dtype == dtype
    v = vals(t)
    assert v.min() >= 0.0 and v.max() < 1.0
    assert abs(v.mean() - 0.5) < 0.01
    n = torch.randn(50_000, dtype=dtype)
    assert n.dtype == dtype
    assert abs(vals(n).mean()) < 0.02 and abs(vals(n).std() - 1) < 0.02


@pytest.mark.parametrize("dtype", INTS)
def test_rand_rejects_integer_dtypes(dtype):
    with pytest.raises(RuntimeError, match="not implemented"):
        torch.rand(3, dtype=dtype)
    with pytest.raises(RuntimeError, match="not implemented"):
        torch.randn(3, dtype=dtype)
    with pytest.raises(RuntimeError, match="not implemented"):
        torch.empty(3, dtype=dtype).uniform_()
    with pytest.raises(RuntimeError, match="not implemented"):
        torch.empty(3, dtype=dtype).normal_()


@pytest.mark.parametrize("dtype", INTS + [torch.float32, torch.float64, torch.float16])
def test_randint_range_and_dtype(dtype):
    lo = 0 if dtype == torch.uint8 else -7
    t = torch.randint(lo, 9, (20_000,), dtype=dtype)
    assert t.dtype == dtype
    v = vals(t)
    assert v.min() == lo and v.max() == 8
    assert np.all(v == np.round(v))
    counts = np.bincount((v - lo).astype(np.int64))
    expected = len(v) / (9 - lo)
    assert np.all(np.abs(counts - expected) < 6 * np.sqrt(expected))


def test_randint_defaults_and_errors():
    t = torch.randint(10, (1000,))
    assert t.dtype == torch.int64
    assert t.numpy().min() >= 0 and t.numpy().max() < 10
    big = torch.randint(-2**62, 2**62, (1000,))
    assert np.abs(big.numpy()).max() > 2**55
    with pytest.raises(RuntimeError, match="from.*less than.*to"):
        torch.randint(5, 5, (3,))
    with pytest.raises(RuntimeError, match="'to' - 1"):
        torch.randint(0, 300, (3,), dtype=torch.uint8)
    with pytest.raises(RuntimeError, match="'from'"):
        torch.randint(-1, 3, (3,), dtype=torch.uint8)
    with pytest.raises(TypeError):
        torch.randint(3)


@pytest.mark.parametrize("n", [0, 1, 2, 17, 1000])
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float32])
def test_randperm_is_a_permutation(n, dtype):
    p = torch.randperm(n, dtype=dtype)
    assert p.dtype == dtype
    np.testing.assert_array_equal(np.sort(vals(p)), np.arange(n))


def test_randperm_is_uniform_and_errors():
    torch.manual_seed(0)
    first = np.array([torch.randperm(4).tolist()[0] for _ in range(4000)])
    counts = np.bincount(first, minlength=4)
    assert np.all(np.abs(counts - 1000) < 150)
    with pytest.raises(RuntimeError, match="non-negative"):
        torch.randperm(-1)
    with pytest.raises(RuntimeError, match="too large"):
        torch.randperm(300, dtype=torch.uint8)


# ----------------------------------------------------------------------------- statistics

def test_rand_statistics():
    torch.manual_seed(3)
    v = torch.rand(N, dtype=torch.float64).numpy()
    assert abs(v.mean() - 0.5) < 0.005
    assert abs(v.var() - 1 / 12) < 0.002
    hist, _ = np.histogram(v, bins=10, range=(0, 1))
    assert np.all(np.abs(hist - N / 10) < 6 * np.sqrt(N / 10))


def test_randn_statistics():
    torch.manual_seed(4)
    v = torch.randn(N, dtype=torch.float64).numpy()
    assert abs(v.mean()) < 0.02
    assert abs(v.std() - 1) < 0.015
    assert abs(np.mean(np.abs(v) < 1) - 0.6827) < 0.01
    skew = np.mean(v**3)
    assert abs(skew) < 0.08


@pytest.mark.parametrize("mean,std", [(0.0, 1.0), (5.0, 0.5), (-3.0, 4.0), (2.0, 0.0)])
def test_normal_scalar_statistics(mean, std):
    v = torch.normal(mean, std, size=(N,)).numpy()
    assert v.dtype == np.float32
    assert abs(v.mean() - mean) < 0.02 * max(std, 0.1) * 5
    assert abs(v.std() - std) < 0.02 * max(std, 0.1) + 1e-6
    w = torch.empty(N, dtype=torch.float64).normal_(mean, std).numpy()
    assert abs(w.mean() - mean) < 0.1 * max(std, 0.1)
    assert abs(w.std() - std) < 0.02 * max(std, 0.1) + 1e-9


def test_normal_tensor_forms():
    mean = torch.tensor([[0.0], [10.0]])
    std = torch.tensor([1.0, 0.1, 3.0])
    t = torch.normal(mean, std)  # broadcast (2, 1) with (3,)
    assert tuple(t.shape) == (2, 3)
    many_mean = torch.full((N,), 3.0)
    v = torch.normal(many_mean, 2.0).numpy()
    assert abs(v.mean() - 3) < 0.05 and abs(v.std() - 2) < 0.05
    v = torch.normal(1.0, torch.full((N,), 0.5, dtype=torch.float64))
    assert v.dtype == torch.float64
    v = v.numpy()
    assert abs(v.mean() - 1) < 0.02 and abs(v.std() - 0.5) < 0.02
    v = torch.normal(torch.zeros(N), torch.full((N,), 2.0)).numpy()
    assert abs(v.std() - 2) < 0.05
    # Elementwise means are respected.
    m = torch.arange(0.0, 5.0)
    out = torch.normal(m, torch.full((5,), 1e-6)).numpy()
    np.testing.assert_allclose(out, np.arange(5.0), atol=1e-4)


def test_normal_errors():
    with pytest.raises(RuntimeError, match="std >= 0"):
        torch.normal(0.0, -1.0, (3,))
    with pytest.raises(RuntimeError, match="std >= 0"):
        torch.empty(3).normal_(0, -1)
    with pytest.raises(RuntimeError, match="std >= 0"):
        torch.normal(torch.zeros(3), torch.tensor([1.0, -1.0, 1.0]))
    with pytest.raises(TypeError):
        torch.normal(0.0, 1.0)
    with pytest.raises(RuntimeError, match="not implemented"):
        torch.normal(torch.zeros(3, dtype=torch.int64), torch.ones(3, dtype=torch.int64))


@pytest.mark.parametrize("dtype", FLOATS)
def test_uniform_(dtype):
    t = torch.empty(50_000, dtype=dtype).uniform_(-3, 5)
    v = vals(t)
    assert v.min() >= -3 and v.max() <= 5
    assert abs(v.mean() - 1) < 0.1
    assert abs(v.var() - 64 / 12) < 0.3
    with pytest.raises(RuntimeError, match="from.*to"):
        torch.empty(3, dtype=dtype).uniform_(2, 1)


def test_exponential_log_normal_cauchy_geometric():
    v = torch.empty(N, dtype=torch.float64).exponential_(4.0).numpy()
    assert v.min() >= 0 and abs(v.mean() - 0.25) < 0.005 and abs(v.std() - 0.25) < 0.01
    v = torch.empty(N, dtype=torch.float64).log_normal_(0.5, 0.25).numpy()
    assert abs(np.log(v).mean() - 0.5) < 0.005 and abs(np.log(v).std() - 0.25) < 0.005
    v = torch.empty(N, dtype=torch.float64).cauchy_(2.0, 1.0).numpy()
    assert abs(np.median(v) - 2.0) < 0.04
    assert abs(np.mean(np.abs(v - 2) < 1) - 0.5) < 0.01
    v = torch.empty(N, dtype=torch.int64).geometric_(0.25).numpy()
    assert v.min() >= 1 and abs(v.mean() - 4) < 0.08
    with pytest.raises(RuntimeError, match="lambda"):
        torch.empty(2).exponential_(0)
    with pytest.raises(RuntimeError, match="geometric_ expects p"):
        torch.empty(2).geometric_(1.5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_bernoulli_from_probabilities(dtype):
    p = torch.tensor([0.0, 0.2, 0.5, 0.9, 1.0], dtype=dtype)
    probs = torch.from_numpy(np.tile(vals(p), (N // 5, 1))).to(dtype)
    out = torch.bernoulli(probs)
    assert out.dtype == dtype and tuple(out.shape) == (N // 5, 5)
    v = vals(out)
    assert set(np.unique(v)) <= {0.0, 1.0}
    np.testing.assert_allclose(v.mean(0), vals(p), atol=0.025)
    assert v[:, 0].max() == 0 and v[:, 4].min() == 1
    m = probs.bernoulli()
    np.testing.assert_allclose(vals(m).mean(0), vals(p), atol=0.025)


def test_bernoulli_scalar_p_and_inplace():
    x = torch.zeros(N, dtype=torch.int64)
    out = torch.bernoulli(x, 0.3)
    assert out.dtype == torch.int64
    assert abs(out.numpy().mean() - 0.3) < 0.01
    y = torch.zeros(N, dtype=torch.bool).bernoulli_(0.7)
    assert y.dtype == torch.bool and abs(y.numpy().mean() - 0.7) < 0.01
    z = torch.zeros(N // 4, 4).bernoulli_(torch.tensor([0.0, 0.25, 0.75, 1.0]))
    np.testing.assert_allclose(z.numpy().mean(0), [0, 0.25, 0.75, 1], atol=0.02)
    assert abs(torch.zeros(N).bernoulli_().numpy().mean() - 0.5) < 0.01
    with pytest.raises(RuntimeError):
        torch.zeros(3).bernoulli_(1.5)
    with pytest.raises(RuntimeError, match="p_in"):
        torch.bernoulli(torch.tensor([0.5, 2.0]))
    with pytest.raises(RuntimeError, match="not implemented"):
        torch.bernoulli(torch.tensor([0, 1]))


def test_multinomial_with_replacement():
    w = torch.tensor([1.0, 0.0, 3.0, 6.0])
    s = torch.multinomial(w, 50_000, replacement=True)
    assert s.dtype == torch.int64 and tuple(s.shape) == (50_000,)
    counts = np.bincount(s.numpy(), minlength=4) / 50_000
    np.testing.assert_allclose(counts, [0.1, 0.0, 0.3, 0.6], atol=0.01)
    assert counts[1] == 0
    rows = torch.tensor([[1.0, 1.0], [0.0, 1.0], [5.0, 0.0]], dtype=torch.float64)
    s = rows.multinomial(1000, True)
    assert tuple(s.shape) == (3, 1000)
    v = s.numpy()
    assert 400 < v[0].sum() < 600 and v[1].min() == 1 and v[2].max() == 0


def test_multinomial_without_replacement():
    w = torch.tensor([1.0, 2.0, 0.0, 4.0, 8.0])
    for _ in range(50):
        s = torch.multinomial(w, 4).numpy()
        assert len(set(s.tolist())) == 4 and 2 not in s
    firsts = np.array([torch.multinomial(w, 2).tolist()[0] for _ in range(3000)])
    freq = np.bincount(firsts, minlength=5) / 3000
    np.testing.assert_allclose(freq, np.array([1, 2, 0, 4, 8]) / 15, atol=0.03)
    s = torch.multinomial(torch.ones(3, 6), 6)
    for row in s.numpy():
        assert sorted(row.tolist()) == list(range(6))


def test_multinomial_errors():
    with pytest.raises(RuntimeError, match="n_sample > prob_dist"):
        torch.multinomial(torch.ones(3), 4)
    with pytest.raises(RuntimeError, match="not enough non-negative category"):
        torch.multinomial(torch.tensor([1.0, 0.0, 0.0]), 2)
    with pytest.raises(RuntimeError, match="sum of probabilities"):
        torch.multinomial(torch.zeros(3), 1, True)
    with pytest.raises(RuntimeError, match="element < 0"):
        torch.multinomial(torch.tensor([1.0, -1.0]), 1)
    with pytest.raises(RuntimeError, match="element < 0"):
        torch.multinomial(torch.tensor([1.0, float("nan")]), 1)
    with pytest.raises(RuntimeError, match="1 or 2 dim"):
        torch.multinomial(torch.ones(2, 2, 2), 1)
    with pytest.raises(RuntimeError, match="n_sample <= 0"):
        torch.multinomial(torch.ones(2), 0)
    with pytest.raises(RuntimeError, match="floating-point"):
        torch.multinomial(torch.ones(2, dtype=torch.int64), 1)


@pytest.mark.parametrize("dtype,hi", [(torch.uint8, 255), (torch.int8, 127), (torch.int16, 32767),
                                      (torch.bool, 1), (torch.float16, 2048),
                                      (torch.bfloat16, 256)])
def test_random_default_range(dtype, hi):
    v = vals(torch.empty(20_000, dtype=dtype).random_())
    assert v.min() >= 0 and v.max() <= hi
    assert v.max() > hi * 0.9
    assert np.all(v == np.round(v))


def test_random_bounds_forms():
    v = torch.empty(10_000, dtype=torch.int64).random_(7).numpy()
    assert v.min() == 0 and v.max() == 6
    v = torch.empty(10_000, dtype=torch.int32).random_(-3, 3).numpy()
    assert v.min() == -3 and v.max() == 2
    v = torch.empty(10_000).random_(2, 5).numpy()
    assert set(np.unique(v)) == {2.0, 3.0, 4.0}
    v = torch.empty(10_000, dtype=torch.int64).random_(to=4).numpy()
    assert v.max() == 3
    big = torch.empty(10_000, dtype=torch.int64).random_().numpy()
    assert big.min() >= 0 and big.max() > 2**60
    with pytest.raises(RuntimeError, match="less than"):
        torch.empty(3).random_(5, 5)
    with pytest.raises(RuntimeError, match="'to' - 1"):
        torch.empty(3, dtype=torch.int8).random_(0, 1000)


def test_inplace_on_noncontiguous_view():
    base = np.full((6, 4), -10.0, dtype=np.float32)
    view = torch.from_numpy(base[::2].T)  # shape (4, 3), strided
    assert not view.is_contiguous()
    r = view.uniform_(0, 1)
    assert r is view
    assert np.all((base[::2] >= 0) & (base[::2] < 1))
    assert np.all(base[1::2] == -10)  # rows between the view's rows untouched
    view.normal_()
    assert np.all(base[1::2] == -10)


def test_like_functions():
    x = torch.zeros(3, 4, dtype=torch.float64)
    for t in (torch.rand_like(x), torch.randn_like(x)):
        assert t.dtype == torch.float64 and tuple(t.shape) == (3, 4)
    t = torch.rand_like(x, dtype=torch.float16)
    assert t.dtype == torch.float16
    t = torch.randint_like(x, 10)
    assert t.dtype == torch.float64 and vals(t).max() < 10 and vals(t).min() >= 0
    t = torch.randint_like(torch.zeros(1000, dtype=torch.int32), 5, 8)
    assert t.dtype == torch.int32 and set(np.unique(t.numpy())) == {5, 6, 7}
    with pytest.raises(RuntimeError, match="not implemented"):
        torch.rand_like(torch.zeros(2, dtype=torch.int64))


def test_requires_grad_and_device():
    assert torch.rand(2, requires_grad=True).requires_grad
    assert torch.randn(2, requires_grad=True).requires_grad
    assert torch.normal(0.0, 1.0, (2,), requires_grad=True).requires_grad
    if torch.cuda.is_available():
        assert torch.rand(2, device="cuda").is_cuda
        return
    with pytest.raises(RuntimeError, match="not available"):
        torch.rand(2, device="cuda")
    with pytest.raises(RuntimeError, match="not available"):
        torch.randint(0, 3, (2,), device="cuda")
    with pytest.raises(RuntimeError, match="not available"):
        torch.randperm(3, device="cuda")
    assert torch.randn(2, device="cpu").device.type == "cpu"


def test_out_argument():
    out = torch.zeros(3)
    torch.manual_seed(0)
    r = torch.rand(3, out=out)
    torch.manual_seed(0)
    same(out, torch.rand(3))
    same(r, out)
