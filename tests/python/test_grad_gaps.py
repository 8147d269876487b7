"""Autograd gaps closed: zero-safe prod/cumprod, scatter_reduce, pinv, logdet/slogdet,
cummax/cummin, nansum/nanmean, var_mean/std_mean, the non-Frobenius matrix norms, gauge-
invariant functions of svd/eigh vectors, and split/unbind/chunk as one multi-output node.
float64 gradchecks (non-contiguous and keepdim/dim variants) and gradgradchecks."""

import math

import numpy as np
import pytest

import ferrotorch as ft
from ferrotorch.autograd import gradcheck, gradgradcheck


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def leaf(a):
    return ft.tensor(np.asarray(a, dtype=np.float64), requires_grad=True)


def rand(rng, *shape):
    return leaf(rng.standard_normal(shape))


def distinct(rng, *shape):
    """Values far apart (no ties)."""
    n = int(np.prod(shape))
    return leaf((rng.permutation(n) + rng.uniform(0.1, 0.4, n)).reshape(shape))


def grad_of(f, x):
    x.grad = None
    f(x).sum().backward()
    return x.grad.numpy().copy()


# ---------------------------------------------------------------------- prod / cumprod


def _with_zeros(rng):
    """(3, 4) with no zero in row 0, one zero in row 1 and two zeros in row 2."""
    a = rng.uniform(0.5, 1.5, (3, 4)) * rng.choice([-1, 1], (3, 4))
    a[1, 2] = 0.0
    a[2, 0] = 0.0
    a[2, 3] = 0.0
    return a


def _prod_grad_ref(a, axis):
    """d prod / d a_i = product of the other elements (brute force)."""
    g = np.zeros_like(a)
    moved = np.moveaxis(a, axis, -1)
    gm = np.moveaxis(g, axis, -1)
    for idx in np.ndindex(moved.shape[:-1]):
        row = moved[idx]
        for i in range(row.shape[0]):
            gm[idx + (i,)] = np.prod(np.delete(row, i))
    return g


@pytest.mark.parametrize("keepdim", [False, True])
def test_prod_with_zeros(rng, keepdim):
    a = _with_zeros(rng)
    x = leaf(a)
    np.testing.assert_allclose(grad_of(lambda t: t.prod(1, keepdim=keepdim), x),
                               _prod_grad_ref(a, 1))
    np.testing.assert_allclose(grad_of(lambda t: t.prod(0, keepdim=keepdim), x),
                               _prod_grad_ref(a, 0))
    assert gradcheck(lambda t: t.prod(1, keepdim=keepdim), (x,))
    assert gradcheck(lambda t: t.prod(-2, keepdim=keepdim), (x,))
    # non-contiguous input (transposed view of the leaf)
    assert gradcheck(lambda t: t.t().prod(0, keepdim=keepdim), (x,))
    assert gradgradcheck(lambda t: t.prod(1, keepdim=keepdim), (x,))


def test_prod_all_with_zeros(rng):
    one = rng.uniform(0.5, 1.5, (2, 3))
    one[0, 1] = 0.0
    x = leaf(one)
    g = grad_of(lambda t: t.prod(), x)
    np.testing.assert_allclose(g.ravel(), _prod_grad_ref(one.ravel(), 0))
    assert gradcheck(lambda t: t.prod(), (x,))
    assert gradgradcheck(lambda t: t.prod(), (x,))
    two = one.copy()
    two[1, 2] = 0.0
    y = leaf(two)
    np.testing.assert_allclose(grad_of(lambda t: t.prod(), y), np.zeros((2, 3)))
    assert gradcheck(lambda t: t.prod(), (y,))
    assert gradgradcheck(lambda t: t.prod(), (y,))
    # no zeros, 0-d, and a stepped (non-contiguous) view
    z = leaf(rng.uniform(0.5, 1.5, (4, 3)))
    assert gradcheck(lambda t: t[::2].prod(), (z,))
    assert gradcheck(lambda t: t.prod(), (leaf(1.5),))


def test_prod_multiple_dims_with_zeros(rng):
    # the Rust core accepts several dims (used by e.g. prod over a tuple in Python helpers)
    a = rng.uniform(0.5, 1.5, (2, 3, 4))
    a[0, 1, 2] = 0.0
    a[1, 0, 0] = 0.0
    a[1, 2, 3] = 0.0
    x = leaf(a)
    assert gradcheck(lambda t: t.prod(2), (x,))
    assert gradcheck(lambda t: t.permute(2, 0, 1).prod(0, keepdim=True), (x,))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumprod_with_zeros(rng, dim):
    a = _with_zeros(rng)
    x = leaf(a)
    assert gradcheck(lambda t: t.cumprod(dim), (x,))
    assert gradcheck(lambda t: t.t().cumprod(dim), (x,))
    assert gradgradcheck(lambda t: t.cumprod(dim), (x,))


def test_cumprod_values(rng):
    a = np.array([[2.0, 0.0, 3.0, 4.0], [0.0, 0.0, 5.0, 1.5]])
    x = leaf(a)
    g = grad_of(lambda t: t.cumprod(1), x)
    # brute force: d sum_i y_i / d x_k = sum_{i>=k} prod_{j<=i, j!=k} x_j
    ref = np.zeros_like(a)
    for r in range(2):
        for k in range(4):
            ref[r, k] = sum(np.prod(np.delete(a[r, : i + 1], k)) for i in range(k, 4))
    np.testing.assert_allclose(g, ref)
    assert gradcheck(lambda t: t.cumprod(0), (leaf(2.0),))
    assert gradcheck(lambda t: t.cumprod(0), (leaf([0.0]),))


# ---------------------------------------------------------------------- scatter_reduce


def _index():
    return ft.tensor([[0, 1, 0, 2], [2, 0, 0, 1]])


@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "amin", "prod"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(rng, reduce, include_self):
    x = distinct(rng, 3, 4)
    src = leaf(distinct(rng, 2, 4).detach().numpy() * 0.37)
    idx = _index()
    assert gradcheck(lambda a, s: a.scatter_reduce(0, idx, s, reduce, include_self=include_self),
                     (x, src))
    # src larger than index, and a transposed (non-contiguous) self
    big = leaf(distinct(rng, 3, 5).detach().numpy() * 0.29)
    assert gradcheck(
        lambda a, s: a.t().scatter_reduce(1, idx.t(), s, reduce, include_self=include_self),
        (x, big.detach().t().contiguous().requires_grad_()),
    )
    assert gradcheck(lambda a, s: a.scatter_reduce(1, idx, s, reduce, include_self=include_self),
                     (x, big))
    if reduce in ("sum", "mean", "amax", "amin"):
        assert gradgradcheck(
            lambda a, s: a.scatter_reduce(0, idx, s, reduce, include_self=include_self) ** 2,
            (x, src),
        )
    out = x.scatter_reduce(0, idx, src, reduce, include_self=include_self)
    assert out.grad_fn.name() == "ScatterReduceBackward0"


@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_amax_ties_split_evenly(include_self):
    x = leaf([1.0, 5.0, 0.0])
    src = leaf([5.0, 2.0, 5.0, 3.0])
    idx = ft.tensor([1, 0, 1, 2])
    out = x.scatter_reduce(0, idx, src, "amax", include_self=include_self)
    out.backward(ft.tensor([1.0, 1.0, 1.0]))
    if include_self:
        # position 1: self 5 and two src 5s share the gradient
        np.testing.assert_allclose(x.grad.numpy(), [0.0, 1 / 3, 0.0])
        np.testing.assert_allclose(src.grad.numpy(), [1 / 3, 1.0, 1 / 3, 1.0])
    else:
        np.testing.assert_allclose(x.grad.numpy(), [0.0, 0.0, 0.0])
        np.testing.assert_allclose(src.grad.numpy(), [0.5, 1.0, 0.5, 1.0])


def test_scatter_reduce_prod_with_zeros(rng):
    x = leaf([2.0, 0.0, 3.0])
    src = leaf([0.0, 4.0, 0.5, 0.0, 0.0, 1.5])
    idx = ft.tensor([0, 1, 1, 2, 2, 0])
    for inc in (True, False):
        assert gradcheck(lambda a, s, inc=inc: a.scatter_reduce(0, idx, s, "prod", include_self=inc),
                         (x, src))


# ---------------------------------------------------------------------- linalg


def test_pinv(rng):
    for shape in [(3, 3), (4, 2), (2, 4), (2, 3, 2)]:
        a = rand(rng, *shape)
        assert gradcheck(lambda t: ft.linalg.pinv(t), (a,))
    a = rand(rng, 3, 4)
    assert gradcheck(lambda t: ft.linalg.pinv(t.mT), (a,))
    assert gradcheck(lambda t: t.pinverse(), (a,))
    assert gradgradcheck(lambda t: ft.linalg.pinv(t), (rand(rng, 3, 2),))
    assert ft.linalg.pinv(a).grad_fn.name() == "LinalgPinvBackward0"


def test_pinv_hermitian(rng):
    b = rng.standard_normal((3, 3))
    a = leaf(b @ b.T + 3 * np.eye(3))
    assert gradcheck(lambda t: ft.linalg.pinv((t + t.mT) / 2, hermitian=True), (a,))


def _spd(rng, n, batch=()):
    b = rng.standard_normal(batch + (n, n))
    return b @ np.swapaxes(b, -1, -2) + n * np.eye(n)


def test_logdet_slogdet(rng):
    a = leaf(_spd(rng, 3))
    assert gradcheck(lambda t: t.logdet(), (a,))
    assert gradcheck(lambda t: ft.logdet(t.mT), (a,))
    assert gradgradcheck(lambda t: t.logdet(), (a,))
    np.testing.assert_allclose(grad_of(lambda t: t.logdet(), a),
                               np.linalg.inv(a.detach().numpy()).T)
    ab = leaf(_spd(rng, 3, (2,)))
    assert gradcheck(lambda t: t.logdet(), (ab,))
    # logabsdet of a matrix with a negative determinant
    m = rand(rng, 3, 3)
    assert gradcheck(lambda t: ft.linalg.slogdet(t).logabsdet, (m,))
    assert gradcheck(lambda t: ft.slogdet(t)[1], (m,))
    assert gradgradcheck(lambda t: ft.linalg.slogdet(t)[1], (m,))
    assert a.logdet().grad_fn.name() == "LogdetBackward0"


ORDS = ["nuc", 2, -2, 1, -1, math.inf, -math.inf]


@pytest.mark.parametrize("ord", ORDS)
def test_matrix_norm_orders(rng, ord):
    m = distinct(rng, 4, 3)
    assert gradcheck(lambda t: ft.linalg.matrix_norm(t, ord), (m,))
    assert gradcheck(lambda t: ft.linalg.norm(t, ord), (m,))
    assert gradcheck(lambda t: ft.linalg.matrix_norm(t.mT, ord), (m,))
    b = distinct(rng, 2, 3, 4)
    for dim in [(-2, -1), (0, 2), (2, 0)]:
        for keepdim in (False, True):
            got = ft.linalg.matrix_norm(b, ord, dim=dim, keepdim=keepdim)
            ref = ft.linalg.matrix_norm(b.detach(), ord, dim=dim, keepdim=keepdim)
            assert got.shape == ref.shape
            np.testing.assert_allclose(got.detach().numpy(), ref.numpy(), rtol=1e-10)
            assert gradcheck(lambda t, d=dim, k=keepdim: ft.linalg.matrix_norm(t, ord, dim=d, keepdim=k),
                             (b,))
    if ord in ("nuc", 1, math.inf):
        assert gradgradcheck(lambda t: ft.linalg.matrix_norm(t, ord), (m,))


def test_matrix_norm_values_numpy(rng):
    a = rng.standard_normal((4, 3))
    t = leaf(a)
    for ord in ORDS:
        np.testing.assert_allclose(ft.linalg.matrix_norm(t, ord).item(),
                                   np.linalg.norm(a, ord), rtol=1e-10)


def _gauge_funcs():
    return {
        "reconstruct": lambda U, S, Vh: U @ ft.diag_embed(S) @ Vh,
        "uu": lambda U, S, Vh: (U * U).sum(-1),
        "vv": lambda U, S, Vh: (Vh * Vh).sum(-2),
        "proj_u": lambda U, S, Vh: U @ U.mT,
        "proj_v": lambda U, S, Vh: Vh.mT @ Vh,
        "abs_u": lambda U, S, Vh: U.abs(),
        "abs_vh": lambda U, S, Vh: Vh.abs(),
        "mixed": lambda U, S, Vh: (U[..., :1] * Vh[..., :1, :].mT.sum(-2, keepdim=True)) ** 2,
    }


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 5), (2, 4, 3)])
@pytest.mark.parametrize("name", list(_gauge_funcs()))
def test_svd_vectors_gauge_invariant(rng, shape, name):
    f = _gauge_funcs()[name]
    a = rand(rng, *shape)
    assert gradcheck(lambda t: f(*ft.linalg.svd(t, full_matrices=False)), (a,))


def test_svd_vectors_gradgrad(rng):
    a = rand(rng, 3, 2)
    f = _gauge_funcs()
    assert gradgradcheck(lambda t: f["reconstruct"](*ft.linalg.svd(t, full_matrices=False)),
                         (a,))
    assert gradgradcheck(lambda t: f["abs_u"](*ft.linalg.svd(t, full_matrices=False)), (a,))
    # square full_matrices=True is the same factorisation
    b = rand(rng, 3, 3)
    assert gradcheck(lambda t: f["abs_vh"](*ft.linalg.svd(t)), (b,))
    assert gradcheck(lambda t: ft.svd(t)[2].abs(), (b,))


def test_eigh_vectors_gauge_invariant(rng):
    a = rand(rng, 4, 4)

    def sym(t):
        return t + t.mT

    assert gradcheck(lambda t: ft.linalg.eigh(sym(t))[1].abs(), (a,))
    assert gradcheck(lambda t: (lambda w, v: v @ ft.diag_embed(w) @ v.mT)(*ft.linalg.eigh(sym(t))),
                     (a,))
    assert gradcheck(lambda t: (lambda w, v: (v[..., :2] @ v[..., :2].mT))(*ft.linalg.eigh(sym(t))),
                     (a,))
    b = rand(rng, 2, 3, 3)
    assert gradcheck(lambda t: ft.linalg.eigh(sym(t)).eigenvectors.abs(), (b,))
    assert gradgradcheck(lambda t: ft.linalg.eigh(sym(t))[1].abs(), (rand(rng, 3, 3),))


# ---------------------------------------------------------------------- scans / nan reductions


@pytest.mark.parametrize("op", ["cummax", "cummin"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cummax_cummin(rng, op, dim):
    x = distinct(rng, 3, 4)
    assert gradcheck(lambda t: getattr(t, op)(dim)[0], (x,))
    assert gradcheck(lambda t: getattr(ft, op)(t.t(), dim).values, (x,))
    assert gradgradcheck(lambda t: getattr(t, op)(dim)[0] ** 2, (x,))
    v, i = getattr(x, op)(dim)
    assert v.grad_fn.name() == ("CummaxBackward0" if op == "cummax" else "CumminBackward0")
    assert i.grad_fn is None and not i.requires_grad
    # gradient goes to the position of the running extremum
    a = leaf([1.0, 3.0, 2.0, 4.0])
    a.cummax(0)[0].sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [1.0, 2.0, 0.0, 1.0])
    assert gradcheck(lambda t: t.cummax(0)[0], (leaf(2.0),))


@pytest.mark.parametrize("keepdim", [False, True])
def test_nansum_nanmean(rng, keepdim):
    a = rng.standard_normal((3, 4))
    a[0, 1] = np.nan
    a[2, 2] = np.nan
    x = leaf(a)
    g = grad_of(lambda t: t.nansum(1, keepdim=keepdim), x)
    np.testing.assert_array_equal(g, np.where(np.isnan(a), 0.0, 1.0))
    g = grad_of(lambda t: t.nanmean(1, keepdim=keepdim), x)
    cnt = (~np.isnan(a)).sum(1, keepdims=True)
    np.testing.assert_allclose(g, np.where(np.isnan(a), 0.0, 1.0 / cnt))
    g = grad_of(lambda t: ft.nanmean(t), x)
    np.testing.assert_allclose(g, np.where(np.isnan(a), 0.0, 1.0 / 10))
    y = rand(rng, 2, 3, 4)
    for dims in [None, 0, (0, 2), -1]:
        if dims is None:
            assert gradcheck(lambda t: t.nansum(), (y,))
            assert gradcheck(lambda t: t.nanmean(), (y,))
        else:
            assert gradcheck(lambda t, d=dims: t.nansum(d, keepdim=keepdim), (y,))
            assert gradcheck(lambda t, d=dims: t.transpose(0, 2).nanmean(d, keepdim=keepdim), (y,))
    assert gradgradcheck(lambda t: t.nanmean(1) ** 2, (y,))
    assert x.nansum().grad_fn.name() == "NansumBackward0"


@pytest.mark.parametrize("op", ["var_mean", "std_mean"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_var_mean_std_mean(rng, op, keepdim):
    x = rand(rng, 2, 3, 4)
    f = getattr(ft, op)
    assert gradcheck(lambda t: f(t), (x,))
    for dim in [0, (0, 2), -1]:
        for corr in (0, 1):
            assert gradcheck(lambda t, d=dim, c=corr: f(t, d, correction=c, keepdim=keepdim), (x,))
    assert gradcheck(lambda t: f(t.transpose(0, 2), 1, keepdim=keepdim)[0], (x,))
    assert gradcheck(lambda t: f(t, 1, keepdim=keepdim)[1], (x,))
    assert gradgradcheck(lambda t: f(t, 1, keepdim=keepdim), (x,))
    v, m = f(x, 1)
    assert v.grad_fn == m.grad_fn
    assert v.grad_fn.name() == ("VarMeanBackward0" if op == "var_mean" else "StdMeanBackward0")
    # both outputs' gradients are combined in one node
    x.grad = None
    (v.sum() + 2 * m.sum()).backward()
    ref = leaf(x.detach().numpy())
    base = (ref.var(1) if op == "var_mean" else ref.std(1)).sum() + 2 * ref.mean(1).sum()
    base.backward()
    np.testing.assert_allclose(x.grad.numpy(), ref.grad.numpy(), rtol=1e-12)


# ---------------------------------------------------------------------- split / unbind / chunk


def test_split_unbind_chunk_one_node(rng):
    x = rand(rng, 4, 6)
    parts = x.split(2, 1)
    assert len({p.grad_fn for p in parts}) == 1
    assert parts[0].grad_fn.name() == "SplitBackward0"
    (parts[0] * 2).sum().backward(retain_graph=True)
    g = np.zeros((4, 6))
    g[:, :2] = 2
    np.testing.assert_allclose(x.grad.numpy(), g)
    x.grad = None
    (parts[0].sum() + 3 * parts[2].sum()).backward()
    g[:, :2] = 1
    g[:, 4:] = 3
    np.testing.assert_allclose(x.grad.numpy(), g)
    assert x.unbind(0)[1].grad_fn.name() == "UnbindBackward0"
    assert x.chunk(3, 1)[0].grad_fn.name() == "SplitBackward0"
    assert x.split([1, 3], 0)[0].grad_fn.name() == "SplitWithSizesBackward0"


@pytest.mark.parametrize("case", ["split", "split_sizes", "unbind", "chunk", "tensor_split"])
def test_split_family_gradcheck(rng, case):
    x = rand(rng, 3, 5)
    f = {
        "split": lambda t: t.split(2, 1),
        "split_sizes": lambda t: t.split([1, 2], 0),
        "unbind": lambda t: t.unbind(1),
        "chunk": lambda t: t.chunk(2, -1),
        "tensor_split": lambda t: t.tensor_split(3, 1),
    }[case]
    assert gradcheck(f, (x,))
    assert gradcheck(lambda t: f(t.t().contiguous().t()), (x,))
    assert gradcheck(lambda t: f(t.t())[0], (leaf(rng.standard_normal((5, 3))),))
    # only some pieces used, with create_graph
    assert gradgradcheck(lambda t: f(t)[-1] ** 2, (x,))
    assert gradgradcheck(lambda t: tuple(p ** 2 for p in f(t)), (x,))


def test_split_pieces_inplace_and_views(rng):
    # as PyTorch: an output of a multi-view op can't be written in place under autograd
    x = rand(rng, 4, 3)
    y = x * 1.0
    a, b = y.split(2, 0)
    with pytest.raises(RuntimeError, match="Output 0 of Split is a view and is being modified"):
        a.mul_(3.0)
    (y.sum() + b.sum()).backward()
    g = np.ones((4, 3))
    g[2:] = 2.0
    np.testing.assert_allclose(x.grad.numpy(), g)
    # pieces still view the input
    z = ft.zeros(4, 3)
    z.split(2, 0)[1].fill_(1.0)
    np.testing.assert_allclose(z.numpy()[2:], np.ones((2, 3)))


# ---------------------------------------------------------------------- found by the survey


@pytest.mark.parametrize("keepdim", [False, True])
def test_aminmax(rng, keepdim):
    x = distinct(rng, 3, 4)
    assert gradcheck(lambda t: ft.aminmax(t), (x,))
    assert gradcheck(lambda t: t.aminmax(dim=1, keepdim=keepdim), (x,))
    assert gradcheck(lambda t: t.t().aminmax(dim=-1, keepdim=keepdim).max, (x,))
    assert gradgradcheck(lambda t: t.aminmax(dim=0, keepdim=keepdim), (x,))
    lo, hi = x.aminmax(dim=0)
    assert lo.grad_fn == hi.grad_fn and lo.grad_fn.name() == "AminmaxBackward0"
    # ties: split evenly
    y = leaf([[1.0, 3.0, 3.0], [0.0, 0.0, 2.0]])
    lo, hi = y.aminmax(dim=1)
    (lo.sum() + hi.sum()).backward()
    np.testing.assert_allclose(y.grad.numpy(), [[1.0, 0.5, 0.5], [0.5, 0.5, 1.0]])


def test_nanmedian_all(rng):
    a = distinct(rng, 3, 3).detach().numpy()
    a[0, 1] = np.nan
    x = leaf(a)
    out = x.nanmedian()
    assert out.grad_fn.name() == "NanmedianBackward0"
    out.backward()
    vals = np.sort(a[~np.isnan(a)])
    ref = (a == vals[(len(vals) - 1) // 2]).astype(np.float64)
    np.testing.assert_allclose(x.grad.numpy(), ref)
    assert gradcheck(lambda t: t.nanmedian(), (distinct(rng, 2, 3),))


def test_cross(rng):
    a, b = rand(rng, 2, 3), rand(rng, 2, 3)
    assert gradcheck(lambda x, y: ft.linalg.cross(x, y), (a, b))
    assert gradcheck(lambda x, y: ft.cross(x, y, dim=1), (a, b))
    assert gradcheck(lambda x, y: x.t().cross(y.t(), dim=0), (a, b))
    # broadcasting: a (1, 3) against (4, 3)
    c = rand(rng, 1, 3)
    assert gradcheck(lambda x, y: ft.linalg.cross(x, y), (c, rand(rng, 4, 3)))
    assert gradgradcheck(lambda x, y: ft.linalg.cross(x, y), (a, b))
    assert ft.linalg.cross(a, b).grad_fn.name() == "LinalgCrossBackward0"


@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "prod"])
def test_scatter_reduce_inplace_non_leaf(rng, reduce):
    x = distinct(rng, 3, 4)
    src = leaf(distinct(rng, 2, 4).detach().numpy() * 0.37)
    idx = _index()

    def f(a, s):
        y = a * 1.0
        r = y.scatter_reduce_(0, idx, s, reduce, include_self=True)
        assert r is y
        return y

    assert gradcheck(f, (x, src))
    ref = x.detach().scatter_reduce(0, idx, src.detach(), reduce)
    np.testing.assert_allclose(f(x, src).detach().numpy(), ref.numpy())


def test_matrix_power_one_records_clone(rng):
    a = rand(rng, 3, 3)
    r = a.matrix_power(1)
    assert r.grad_fn.name() == "CloneBackward0"
    assert gradcheck(lambda t: ft.linalg.matrix_power(t, 1), (a,))
    assert gradcheck(lambda t: t.matrix_power(3), (a,))
    assert gradcheck(lambda t: t.matrix_power(-2), (leaf(_spd(rng, 3)),))


def test_view_keeps_history_after_inplace_on_it():
    # PyTorch: after an in-place op on a view of a non-leaf, the view still requires grad
    # (AsStridedBackward0 from the base's CopySlices), so it can be used afterwards.
    a = ft.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
    b = a * 2
    v = b[1]
    v.mul_(3)
    assert v.requires_grad and v.grad_fn is not None
    assert b.grad_fn.name() == "CopySlices"
    (v.sum() + b.sum()).backward()
    expected = np.full((3, 4), 2.0)
    expected[1] = 2.0 * 3 * 2  # d(v.sum())/da + d(b.sum())/da on row 1: 6 + 6
    np.testing.assert_allclose(a.grad.numpy(), expected)
    a.grad = None
    c = a * 3
    w = c[:, 1:3]
    w.add_(1.0)
    (w * w).sum().backward()
    ref = np.zeros((3, 4))
    x = np.arange(12.0).reshape(3, 4)
    ref[:, 1:3] = 2 * (3 * x[:, 1:3] + 1) * 3
    np.testing.assert_allclose(a.grad.numpy(), ref, rtol=1e-12)


def test_index_select_with_empty_row_view_index():
    idx = ft.zeros(2, 0, dtype=ft.int64)[1]  # an empty view whose offset is past its storage
    x = ft.randn(3, 4)
    assert x.index_select(0, idx).shape == (0, 4)
    assert idx.tolist() == []


def test_copy_of_constant_into_tensor_with_history_keeps_it_in_graph():
    a = ft.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a * 2
    b.copy_(ft.zeros(3, dtype=ft.float64))
    assert b.requires_grad and b.grad_fn.name() == "CopyBackwards"
    (b + a).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [1.0, 1.0, 1.0])  # nothing through b
    s = ft.tensor([5.0], requires_grad=True)
    c = a * 1
    c.copy_(s.float().double())  # broadcast source: its gradient is summed back
    (c * ft.tensor([1.0, 2.0, 3.0], dtype=ft.float64)).sum().backward()
    assert s.grad.item() == 6.0


def test_binary_ops_save_only_the_operands_their_gradient_reads():
    # add/sub save nothing, mul saves an operand only for the other's gradient, so writing
    # into an operand afterwards (YOLO-style box decoding) leaves backward valid, as in
    # PyTorch. An operand that is needed still raises the in-place error.
    for update in (lambda h: h[:, 0] * 2, lambda h: h[:, 0] + h[:, 1],
                   lambda h: h[:, 0] - 1.5, lambda h: h[:, 0] / 4.0):
        x = ft.randn(4, 6, dtype=ft.float64, requires_grad=True)
        h = (x * 2).clone()
        h[:, 0] = update(h)
        h.sum().backward()
        assert x.grad is not None
    x = ft.randn(3, dtype=ft.float64, requires_grad=True)
    y = ft.randn(3, dtype=ft.float64, requires_grad=True)
    a, b = x * 1, y * 1
    p = a * b  # both saved: each is the other's gradient
    a.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        p.sum().backward()
    a = x * 1
    q = a / y.detach()  # the divisor is saved; a only when the divisor needs a gradient
    r = a * 3
    a.add_(1)  # so neither q's nor r's backward reads a
    (q.sum() + r.sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), 1 / y.detach().numpy() + 3)


OUTPUT_ONLY = {  # op: its derivative as a function of the output y
    "exp": lambda y: y,
    "exp2": lambda y: y * math.log(2),
    "expm1": lambda y: y + 1,
    "sqrt": lambda y: 1 / (2 * y),
    "rsqrt": lambda y: -0.5 * y**3,
    "tan": lambda y: 1 + y**2,
    "tanh": lambda y: 1 - y**2,
    "sigmoid": lambda y: y * (1 - y),
    "reciprocal": lambda y: -(y**2),
}
# (erfinv is not among them: PyTorch's formula reads its input, see test_autograd.py)


@pytest.mark.parametrize("name", list(OUTPUT_ONLY))
def test_unary_ops_whose_gradient_needs_only_the_output(name):
    # As PyTorch, these read only their result in backward, so an in-place write into the
    # input afterwards (gating: h.mul_() after sigmoid(h)) leaves backward valid; writing into
    # the result still raises.
    x = ft.tensor(np.linspace(0.1, 0.9, 6).reshape(2, 3), dtype=ft.float64, requires_grad=True)
    h = (x * 1).clone()
    y = getattr(ft, name)(h)
    h.mul_(0.5)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), OUTPUT_ONLY[name](y.detach().numpy()),
                               rtol=1e-12)
    h = (x * 1).clone()
    y = getattr(ft, name)(h)
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    # Double backward still differentiates through y.
    z = x.detach().clone().requires_grad_()
    assert gradgradcheck(lambda t: getattr(ft, name)(t), (z,))
