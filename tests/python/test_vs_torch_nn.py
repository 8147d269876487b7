"""Differential tests against PyTorch: the same computation, inputs and weights in
ferrotorch and in torch; outputs and gradients (inputs and parameters) must agree.

Skipped when PyTorch is not installed (CI has no torch)."""

import contextlib
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ferrotorch as ft  # noqa: E402

torch.set_num_threads(1)

F64 = dict(rtol=1e-7, atol=1e-9)
F32 = dict(rtol=2e-4, atol=2e-5)


# ----------------------------------------------------------------------------- helpers


def _np(t):
    if isinstance(t, torch.Tensor):
        return t.detach().cpu().numpy()
    return np.asarray(t.detach().numpy())


def _mk(M, a, grad):
    if isinstance(a, np.ndarray):
        t = M.from_numpy(a.copy())
        if grad and np.issubdtype(a.dtype, np.floating):
            t.requires_grad_(True)
        return t
    return a


def _flat(out):
    if _is_t(out):
        return [out]
    if isinstance(out, (tuple, list)):
        res = []
        for o in out:
            res.extend(_flat(o))
        return res
    if hasattr(out, "values") and hasattr(out, "indices"):
        return _flat((out.values, out.indices))
    return [out]


def _is_t(o):
    return isinstance(o, (torch.Tensor, ft.Tensor))


def _is_float(o):
    return o.dtype in (torch.float32, torch.float64, ft.float32, ft.float64)


def run_both(fn, arrays, *, grad=True, tol=F64, seed=0, check_grad=True, nograd_idx=()):
    """Run fn(M, *tensors) with M = torch and M = ft, compare outputs and input gradients."""
    results = {}
    for M in (torch, ft):
        ins = [_mk(M, a, grad and i not in nograd_idx) for i, a in enumerate(arrays)]
        out = fn(M, *ins)
        outs = [o for o in _flat(out) if _is_t(o)]
        results[M] = (ins, outs)
    (t_ins, t_outs), (f_ins, f_outs) = results[torch], results[ft]
    assert len(t_outs) == len(f_outs)
    for to, fo in zip(t_outs, f_outs):
        assert tuple(to.shape) == tuple(fo.shape), (to.shape, fo.shape)
        np.testing.assert_allclose(_np(fo), _np(to), **tol)
    if not (grad and check_grad):
        return
    rng = np.random.default_rng(seed + 1234)
    ws = [rng.standard_normal(tuple(o.shape)) for o in t_outs]
    for M, outs in ((torch, t_outs), (ft, f_outs)):
        loss = None
        for o, w in zip(outs, ws):
            if not _is_float(o) or not o.requires_grad:
                continue
            term = (o * M.from_numpy(w.astype(_np(o).dtype))).sum()
            loss = term if loss is None else loss + term
        if loss is not None:
            loss.backward()
    for ti, fi in zip(t_ins, f_ins):
        if _is_t(ti) and ti.requires_grad:
            if ti.grad is None:
                assert fi.grad is None or np.allclose(_np(fi.grad), 0)
                continue
            assert fi.grad is not None, "ferrotorch produced no gradient"
            np.testing.assert_allclose(_np(fi.grad), _np(ti.grad), **tol)


def R(*shape, seed=0, dtype=np.float64, pos=False, lo=None, hi=None):
    rng = np.random.default_rng(seed)
    if lo is not None:
        a = rng.uniform(lo, hi, size=shape)
    else:
        a = rng.standard_normal(shape)
        if pos:
            a = np.abs(a) + 0.5
    return a.astype(dtype)


def RI(*shape, high, seed=0):
    return np.random.default_rng(seed).integers(0, high, size=shape).astype(np.int64)


def spd(n, seed=0):
    a = R(n, n, seed=seed)
    return a @ a.T + n * np.eye(n)


def xf(case, reason):
    return pytest.param(*case, marks=pytest.mark.xfail(strict=True, reason=reason),
                        id=case[0])


# ----------------------------------------------------------------------------- core ops

UNARY = [
    "sin", "cos", "tan", "tanh", "sigmoid", "exp", "expm1", "neg", "abs", "atan", "sinh",
    "cosh", "asinh", "erf", "square", "relu", "sign", "floor", "trunc", "frac",
]
UNARY_POS = ["log", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal", "lgamma",
             "digamma", "acosh_p1"]
UNARY_UNIT = ["asin", "acos", "atanh", "erfinv", "logit"]


@pytest.mark.parametrize("name", UNARY + UNARY_POS + UNARY_UNIT)
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_unary(name, dt):
    if name in UNARY_POS:
        a = R(3, 5, pos=True, dtype=dt)
    elif name in UNARY_UNIT:
        a = R(3, 5, lo=0.05, hi=0.9, dtype=dt)
    else:
        a = R(3, 5, dtype=dt)
    tol = F64 if dt == np.float64 else F32
    if name == "acosh_p1":
        run_both(lambda M, x: M.acosh(x + 1.0), [a], tol=tol)
        return
    run_both(lambda M, x: getattr(M, name)(x), [a], tol=tol)


BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "atan2", "hypot", "pow",
          "fmod", "remainder", "copysign", "xlogy", "fmax", "fmin"]


@pytest.mark.parametrize("name", BINARY)
def test_binary_broadcast(name):
    a = R(3, 1, 4, seed=1)
    b = R(5, 1, seed=2)
    if name in ("pow", "xlogy"):
        a = np.abs(a) + 0.5
        b = np.abs(b) + 0.5
    if name in ("fmod", "remainder", "div"):
        b = np.abs(b) + 0.5
    run_both(lambda M, x, y: getattr(M, name)(x, y), [a, b])


def test_pow_tensor_exponent_and_scalar_base():
    a, b = R(4, 3, pos=True, seed=1), R(4, 3, seed=2)
    run_both(lambda M, x, y: x ** y + 2.0 ** y + x ** 2.5 + M.pow(x, -1.5), [a, b])


def test_misc_elementwise():
    a, b, c = R(4, 5, seed=1), R(4, 5, seed=2), R(1, 5, seed=3)
    run_both(lambda M, x, y, z: M.where(x > 0, y, z) + M.clamp(x, -0.5, 0.7)
             + M.clamp(y, min=z) + M.lerp(x, y, 0.3) + M.addcmul(x, y, z, value=0.5)
             + M.addcdiv(x, y, z.abs() + 1, value=2.0) + x.clamp_min(0.1) * y.clamp_max(0.2)
             + M.nn.functional.softplus(x) + M.nan_to_num(x),
             [a, b, c])


REDUCTIONS = [
    ("sum", dict(dim=1)), ("sum", dict(dim=(0, 2), keepdim=True)), ("mean", dict(dim=-1)),
    ("prod", dict(dim=1)), ("var", dict(dim=1)), ("var", dict(dim=(0, 2), unbiased=False)),
    ("std", dict(dim=2, keepdim=True)), ("logsumexp", dict(dim=1)), ("norm", dict(dim=1)),
    ("amax", dict(dim=(1, 2))), ("amin", dict(dim=0)), ("max", dict(dim=1)),
    ("min", dict(dim=2, keepdim=True)), ("median", dict(dim=1)), ("cumsum", dict(dim=1)),
    ("cumprod", dict(dim=2)), ("softmax", dict(dim=1)), ("log_softmax", dict(dim=0)),
    ("sum", {}), ("mean", {}), ("prod", {}), ("std", {}), ("max", {}), ("min", {}),
    ("logcumsumexp", dict(dim=1)), ("cummax", dict(dim=1)), ("cummin", dict(dim=2)),
    ("mode", dict(dim=1)), ("nansum", dict(dim=1)), ("var_mean", dict(dim=1)),
    ("std_mean", dict(dim=0)), ("aminmax", dict(dim=1)),
]


@pytest.mark.parametrize("name,kw", REDUCTIONS, ids=[f"{n}-{k}" for n, k in REDUCTIONS])
def test_reductions(name, kw):
    a = R(3, 4, 5, seed=7)
    if name == "mode":
        a = np.round(a)
    run_both(lambda M, x: getattr(M, name)(x, **kw), [a])


def test_norms():
    a = R(3, 4, 5, seed=3)
    run_both(lambda M, x: (M.linalg.vector_norm(x, ord=3, dim=(1, 2)),
                           M.linalg.vector_norm(x, ord=float("inf"), dim=1),
                           M.linalg.matrix_norm(x, ord="fro"),
                           M.linalg.matrix_norm(x, ord="nuc"),
                           M.linalg.norm(x[0], ord=2),
                           x.norm(p=1, dim=-1), M.dist(x[0], x[1], p=2.5)), [a])


def test_sort_topk_kthvalue():
    a = R(4, 7, seed=3)
    run_both(lambda M, x: (M.sort(x, dim=1, descending=True), M.topk(x, 3, dim=1),
                           M.topk(x, 2, dim=0, largest=False), M.kthvalue(x, 2, dim=1),
                           M.argsort(x, dim=0), M.msort(x)), [a])


def test_indexing_getitem():
    a = R(5, 6, 4, seed=3)
    idx = np.array([0, 2, 2, 4])
    run_both(lambda M, x: (x[1:4, ::2], x[:, [1, 3, 3]], x[M.from_numpy(idx)],
                           x[..., -1], x[x > 0.5], x[None, 2, :, 1:3],
                           x[M.from_numpy(idx), M.from_numpy(idx)]), [a])


def test_setitem():
    a, v = R(5, 4, seed=1), R(2, 4, seed=2)

    def f(M, x, v):
        y = x * 1.0
        y[1:3] = v
        y[:, 0] = 7.0
        y[y > 1.5] = 0.0
        return y * x
    run_both(f, [a, v])


def test_gather_scatter_index_ops():
    a = R(4, 5, seed=1)
    src = R(4, 5, seed=2)
    gi = RI(4, 3, high=5, seed=3)
    si = np.stack([np.random.default_rng(s).permutation(5) for s in range(4)])
    ii = np.array([0, 2, 2, 3])
    mask = R(4, 5, seed=9) > 0

    def f(M, x, s):
        g = M.gather(x, 1, M.from_numpy(gi))
        sc = x.scatter(1, M.from_numpy(si), s)
        sa = x.scatter_add(1, M.from_numpy(gi), s[:, :3])
        ia = x.index_add(0, M.from_numpy(ii), s)
        isel = M.index_select(x, 1, M.from_numpy(ii))
        mf = x.masked_fill(M.from_numpy(mask), 2.0)
        ms = M.masked_select(x, M.from_numpy(mask))
        msc = x.masked_scatter(M.from_numpy(mask), s)
        ic = x.index_copy(0, M.from_numpy(np.array([3, 1])), s[:2])
        return g, sc, sa, ia, isel, mf, ms, msc, ic, M.take(x, M.from_numpy(gi))
    run_both(f, [a, src])


def test_scatter_reduce():
    a, s = R(3, 5, seed=1), R(3, 4, seed=2)
    idx = RI(3, 4, high=5, seed=4)
    for red in ("sum", "prod", "mean", "amax", "amin"):
        run_both(lambda M, x, y, red=red: x.scatter_reduce(1, M.from_numpy(idx), y, reduce=red,
                                                  include_self=True), [a, s])
    run_both(lambda M, x, y: x.scatter_reduce(1, M.from_numpy(idx), y, reduce="mean",
                                              include_self=False), [a, s])


def test_shape_ops():
    a, b = R(2, 3, 4, seed=1), R(2, 3, 4, seed=2)

    def f(M, x, y):
        return (M.cat([x, y], 1), M.stack([x, y], -1), *M.split(x, [1, 3], dim=2),
                *M.chunk(y, 2, dim=0), x.permute(2, 0, 1).reshape(4, 6), x.flip(1),
                M.roll(x, 2, 2), x.unsqueeze(1).expand(2, 5, 3, 4), x.repeat(1, 2, 1),
                M.tril(x[0]), M.triu(y[1], 1), M.diagonal(x, 0, 1, 2), x.unfold(2, 2, 1),
                M.movedim(x, 0, -1), x.narrow(2, 1, 2), M.diag_embed(x[0]),
                M.tile(x, (2, 1, 1)), M.flatten(x, 1), *M.unbind(x, 1),
                M.repeat_interleave(x, 2, dim=1), M.trace(x[0, :, :3]), M.kron(x[0], y[0]))
    run_both(f, [a, b])


def test_matmul_einsum():
    a, b, c = R(2, 3, 4, seed=1), R(4, 5, seed=2), R(2, 5, 3, seed=3)
    v = R(4, seed=4)
    run_both(lambda M, x, y, z, v: (
        M.matmul(x, y), x @ v, M.bmm(x @ y, z), M.einsum("bij,jk,bkl->bil", x, y, z),
        M.einsum("bij->j", x), M.einsum("i,i->", v, v), M.outer(v, v), M.mv(y.T, v),
        M.addmm(z[0].T, x[0], y), M.baddbmm(x @ y @ z, x, y @ z), M.tensordot(x, y, dims=1),
        M.cross(x[:, :3, :3], x[:, :3, 1:], dim=-1), M.cdist(x[0], x[1]),
        M.linalg.multi_dot([x[0], y, z[0]]), M.chain_matmul(x[1], y, z[1])), [a, b, c, v])


def test_linalg():
    A = spd(4, seed=1)
    G = R(4, 4, seed=2) + 3 * np.eye(4)
    B = R(4, 2, seed=3)
    W = R(5, 3, seed=4)

    def f(M, A, G, B, W):
        L = M.linalg.cholesky(A)
        q, r = M.linalg.qr(W)
        ev, evec = M.linalg.eigh(A)
        s = M.linalg.svdvals(W)
        u, s2, vh = M.linalg.svd(W, full_matrices=False)
        sign, logdet = M.linalg.slogdet(G)
        proj = evec @ M.diag(ev) @ evec.T
        return (M.linalg.solve(G, B), M.linalg.inv(G), M.linalg.det(G), logdet, sign, L,
                q @ r, ev, proj, s, u @ M.diag(s2) @ vh, (u @ u.T), M.linalg.pinv(W),
                M.linalg.matrix_exp(G * 0.1), M.cholesky_solve(B, L),
                M.linalg.solve_triangular(L, B, upper=False), M.logdet(A),
                M.linalg.lstsq(W, W[:, :2]).solution, M.linalg.matrix_power(G, 3),
                M.linalg.eigvalsh(A))
    run_both(f, [A, G, B, W])


# ----------------------------------------------------------------------------- functional

def _F(M):
    return M.nn.functional


CONV_CASES = [
    ("conv1d", (2, 4, 11), (6, 2, 3), dict(stride=2, padding=1, groups=2)),
    ("conv1d", (2, 3, 10), (4, 3, 3), dict(padding="same", dilation=2)),
    ("conv1d", (1, 3, 10), (4, 3, 4), dict(padding="same")),
    ("conv2d", (2, 3, 9, 8), (4, 3, 3, 3), dict(stride=(2, 1), padding=(1, 2))),
    ("conv2d", (2, 4, 7, 7), (4, 1, 3, 3), dict(groups=4, dilation=2, padding=2)),
    ("conv2d", (1, 2, 6, 7), (3, 2, 2, 3), dict(padding="same")),
    ("conv2d", (1, 2, 6, 7), (3, 2, 3, 3), dict(padding="valid", stride=2)),
    ("conv3d", (1, 2, 5, 6, 5), (3, 2, 3, 2, 3), dict(stride=(1, 2, 1), padding=1)),
    ("conv3d", (1, 4, 4, 4, 4), (2, 2, 2, 2, 2), dict(groups=2, dilation=(2, 1, 1))),
    ("conv_transpose1d", (2, 4, 7), (4, 3, 3), dict(stride=2, padding=1, output_padding=1)),
    ("conv_transpose1d", (1, 4, 6), (4, 1, 3), dict(groups=2, dilation=2)),
    ("conv_transpose2d", (2, 3, 5, 4), (3, 2, 3, 3),
     dict(stride=2, padding=1, output_padding=1)),
    ("conv_transpose2d", (1, 4, 4, 5), (4, 2, 2, 3),
     dict(stride=(2, 3), groups=2, dilation=(1, 2), output_padding=(1, 0))),
]


@pytest.mark.parametrize("case", CONV_CASES, ids=[f"{c[0]}-{i}" for i, c in
                                                  enumerate(CONV_CASES)])
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_conv(case, dt):
    name, xs, ws, kw = case
    x, w = R(*xs, seed=1, dtype=dt), R(*ws, seed=2, dtype=dt)
    bias_len = ws[1] * kw.get("groups", 1) if "transpose" in name else ws[0]
    b = R(bias_len, seed=3, dtype=dt)
    run_both(lambda M, x, w, b: getattr(_F(M), name)(x, w, b, **kw), [x, w, b],
             tol=F64 if dt == np.float64 else F32)


def test_linear_bilinear():
    x, w, b = R(3, 2, 5, seed=1), R(4, 5, seed=2), R(4, seed=3)
    x2, wb = R(3, 2, 6, seed=4), R(4, 5, 6, seed=5)
    run_both(lambda M, x, w, b, x2, wb: (_F(M).linear(x, w, b), _F(M).linear(x, w),
                                         _F(M).bilinear(x, x2, wb, b)), [x, w, b, x2, wb])


POOL_CASES = [
    ("max_pool1d", (2, 3, 11), dict(kernel_size=3, stride=2, padding=1)),
    ("max_pool1d", (2, 3, 10), dict(kernel_size=3, stride=2, ceil_mode=True,
                                    return_indices=True)),
    ("max_pool2d", (2, 3, 9, 8), dict(kernel_size=3, stride=2, padding=1,
                                      return_indices=True)),
    ("max_pool2d", (1, 2, 7, 7), dict(kernel_size=2, ceil_mode=True)),
    ("max_pool2d", (1, 2, 8, 8), dict(kernel_size=3, dilation=2, stride=1)),
    ("avg_pool1d", (2, 3, 10), dict(kernel_size=3, stride=2, padding=1)),
    ("avg_pool2d", (2, 3, 9, 8), dict(kernel_size=3, stride=2, padding=1)),
    ("avg_pool2d", (2, 3, 9, 8), dict(kernel_size=3, stride=2, padding=1,
                                      count_include_pad=False)),
    ("avg_pool2d", (1, 2, 7, 7), dict(kernel_size=2, ceil_mode=True)),
    ("avg_pool2d", (1, 2, 7, 7), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                      count_include_pad=False)),
    ("avg_pool2d", (1, 2, 6, 6), dict(kernel_size=2, divisor_override=3)),
    ("max_pool3d", (1, 2, 5, 6, 5), dict(kernel_size=2, stride=2, ceil_mode=True)),
    ("avg_pool3d", (1, 2, 5, 6, 5), dict(kernel_size=3, stride=2, padding=1)),
    ("adaptive_avg_pool1d", (2, 3, 10), dict(output_size=4)),
    ("adaptive_avg_pool2d", (2, 3, 9, 7), dict(output_size=(4, 3))),
    ("adaptive_avg_pool2d", (2, 3, 9, 7), dict(output_size=(None, 2))),
    ("adaptive_max_pool2d", (2, 3, 9, 7), dict(output_size=(4, 3), return_indices=True)),
    ("adaptive_max_pool1d", (2, 3, 10), dict(output_size=3)),
    ("adaptive_avg_pool3d", (1, 2, 5, 6, 4), dict(output_size=(2, 3, 3))),
    ("lp_pool2d", (1, 2, 6, 6), dict(norm_type=2, kernel_size=2)),
]


@pytest.mark.parametrize("case", POOL_CASES, ids=[f"{c[0]}-{i}" for i, c in
                                                  enumerate(POOL_CASES)])
def test_pool(case):
    name, xs, kw = case
    x = R(*xs, seed=5)
    run_both(lambda M, x: getattr(_F(M), name)(x, **kw), [x])


def test_max_unpool():
    x = R(1, 2, 6, 6, seed=2)

    def f(M, x):
        y, i = _F(M).max_pool2d(x, 2, return_indices=True)
        return _F(M).max_unpool2d(y, i, 2)
    run_both(f, [x])


def test_batch_norm_functional():
    x = R(4, 3, 5, 2, seed=1)
    w, b = R(3, seed=2), R(3, seed=3)
    rm, rv = R(3, seed=4), R(3, pos=True, seed=5)

    for training in (True, False):
        def f(M, x, w, b, rm, rv, training=training):
            rm2, rv2 = rm.detach().clone(), rv.detach().clone()
            y = _F(M).batch_norm(x, rm2, rv2, w, b, training=training, momentum=0.2,
                                 eps=1e-4)
            return y, rm2, rv2
        run_both(f, [x, w, b, rm, rv], nograd_idx=(3, 4))


def test_norm_functionals():
    x = R(2, 6, 5, 3, seed=1)
    w6, b6 = R(6, seed=2), R(6, seed=3)
    w53, b53 = R(5, 3, seed=4), R(5, 3, seed=5)
    run_both(lambda M, x, w6, b6, w53, b53: (
        _F(M).layer_norm(x, (5, 3), w53, b53, eps=1e-3), _F(M).layer_norm(x, (3,)),
        _F(M).group_norm(x, 3, w6, b6), _F(M).group_norm(x, 2),
        _F(M).instance_norm(x, weight=w6, bias=b6), _F(M).rms_norm(x, (5, 3), w53),
        _F(M).rms_norm(x, (3,), eps=1e-2), _F(M).local_response_norm(x, 3),
        _F(M).normalize(x, dim=1), _F(M).normalize(x, p=1, dim=-1)),
        [x, w6, b6, w53, b53])


def test_instance_norm_running_stats():
    x = R(3, 4, 6, seed=1)
    rm, rv = R(4, seed=2), R(4, pos=True, seed=3)

    def f(M, x, rm, rv):
        rm2, rv2 = rm.detach().clone(), rv.detach().clone()
        return _F(M).instance_norm(x, rm2, rv2, use_input_stats=True, momentum=0.3), rm2, rv2
    run_both(f, [x, rm, rv], nograd_idx=(1, 2))


def test_embedding_functional():
    w = R(10, 4, seed=1)
    idx = RI(3, 5, high=10, seed=2)
    idx[0, 0] = 2
    run_both(lambda M, w: (_F(M).embedding(M.from_numpy(idx), w, padding_idx=2),
                           _F(M).embedding(M.from_numpy(idx), w)), [w])


def test_dropout_eval_and_p0():
    x = R(3, 4, seed=1)
    run_both(lambda M, x: (_F(M).dropout(x, 0.5, training=False),
                           _F(M).dropout(x, 0.0, training=True),
                           _F(M).dropout2d(x[None], 0.3, training=False),
                           _F(M).alpha_dropout(x, 0.3, training=False)), [x])


INTERP = [
    dict(scale_factor=2, mode="nearest"),
    dict(size=(7, 5), mode="nearest"),
    dict(size=(7, 5), mode="nearest-exact"),
    dict(size=(7, 9), mode="bilinear", align_corners=False),
    dict(size=(7, 9), mode="bilinear", align_corners=True),
    dict(scale_factor=1.5, mode="bilinear", align_corners=False),
    dict(size=(3, 2), mode="bilinear", align_corners=False),
    dict(size=(7, 9), mode="bicubic", align_corners=False),
    dict(size=(7, 9), mode="bicubic", align_corners=True),
    dict(size=(3, 4), mode="area"),
    dict(scale_factor=0.5, mode="bilinear", antialias=True),
    dict(size=(3, 4), mode="bicubic", antialias=True, align_corners=True),
]


@pytest.mark.parametrize("kw", INTERP, ids=[str(i) for i in range(len(INTERP))])
def test_interpolate_2d(kw):
    x = R(2, 3, 5, 6, seed=1)
    run_both(lambda M, x: _F(M).interpolate(x, **kw), [x])


@pytest.mark.parametrize("kw", [dict(size=7, mode="linear", align_corners=False),
                                dict(size=7, mode="linear", align_corners=True),
                                dict(scale_factor=2, mode="nearest")])
def test_interpolate_1d(kw):
    run_both(lambda M, x: _F(M).interpolate(x, **kw), [R(2, 3, 5, seed=1)])


def test_interpolate_3d():
    x = R(1, 2, 3, 4, 3, seed=1)
    run_both(lambda M, x: (_F(M).interpolate(x, size=(5, 6, 4), mode="trilinear",
                                             align_corners=False),
                           _F(M).interpolate(x, scale_factor=2, mode="nearest")), [x])


PADS = [((1, 2), "constant"), ((1, 2, 2, 0), "constant"), ((2, 1, 1, 2), "reflect"),
        ((2, 1, 1, 2), "replicate"), ((2, 1, 1, 2), "circular"),
        ((-1, 2, 1, -1), "constant"), ((1, 1, 1, 1, 1, 1), "constant")]


@pytest.mark.parametrize("pad,mode", PADS, ids=[f"{m}{p}" for p, m in PADS])
def test_pad(pad, mode):
    x = R(2, 3, 4, 5, seed=1)
    kw = dict(value=1.5) if mode == "constant" else {}
    run_both(lambda M, x: _F(M).pad(x, pad, mode=mode, **kw), [x])


def test_pad_1d_modes():
    x = R(2, 3, 6, seed=1)
    run_both(lambda M, x: (_F(M).pad(x, (2, 1), mode="reflect"),
                           _F(M).pad(x, (2, 3), mode="replicate"),
                           _F(M).pad(x, (1, 2), mode="circular"),
                           _F(M).pad(x[0], (1, 1), mode="reflect")), [x])


def test_pad_3d_modes():
    x = R(1, 2, 3, 4, 5, seed=1)
    run_both(lambda M, x: (_F(M).pad(x, (1, 1, 2, 0, 1, 2), mode="replicate"),
                           _F(M).pad(x, (1, 1, 2, 0, 1, 2), mode="circular"),
                           _F(M).pad(x, (1, 1, 2, 0, 1, 2), mode="reflect")), [x])


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample(mode, padding_mode, align_corners):
    x = R(2, 3, 5, 6, seed=1)
    theta = R(2, 2, 3, seed=2) * 0.3 + np.array([[1.0, 0, 0], [0, 1.0, 0]])
    grid_only = R(2, 4, 3, 2, lo=-1.2, hi=1.2, seed=3)

    def f(M, x, theta, g):
        grid = _F(M).affine_grid(theta, [2, 3, 4, 5], align_corners=align_corners)
        return (grid, _F(M).grid_sample(x, grid, mode=mode, padding_mode=padding_mode,
                                        align_corners=align_corners),
                _F(M).grid_sample(x, g, mode=mode, padding_mode=padding_mode,
                                  align_corners=align_corners))
    run_both(f, [x, theta, grid_only], check_grad=mode != "nearest")


def test_pixel_shuffle_fold():
    x = R(2, 8, 3, 4, seed=1)
    run_both(lambda M, x: (_F(M).pixel_shuffle(x, 2), _F(M).pixel_unshuffle(x, (1, 2)[1]
                                                                           if False else 1),
                           _F(M).pixel_unshuffle(_F(M).pixel_shuffle(x, 2), 2),
                           _F(M).unfold(x, (2, 3), padding=1, stride=(1, 2)),
                           _F(M).fold(_F(M).unfold(x, 2), (3, 4), 2),
                           _F(M).channel_shuffle(x, 2)), [x])


def test_one_hot():
    idx = RI(3, 4, high=5, seed=1)
    t = torch.nn.functional.one_hot(torch.from_numpy(idx), 6).numpy()
    f = ft.nn.functional.one_hot(ft.from_numpy(idx), 6).numpy()
    np.testing.assert_array_equal(f, t)
    t = torch.nn.functional.one_hot(torch.from_numpy(idx)).numpy()
    f = ft.nn.functional.one_hot(ft.from_numpy(idx)).numpy()
    np.testing.assert_array_equal(f, t)


ACTS = ["relu", "relu6", "elu", "selu", "celu", "gelu", "silu", "mish", "softplus",
        "softsign", "tanhshrink", "hardtanh", "hardswish", "hardsigmoid", "leaky_relu",
        "logsigmoid", "softshrink", "hardshrink", "glu", "sigmoid", "tanh"]


@pytest.mark.parametrize("name", ACTS)
def test_activations(name):
    x = R(4, 6, seed=3) * 2
    run_both(lambda M, x: getattr(_F(M), name)(x), [x])


def test_activations_kwargs():
    x, w = R(2, 3, 4, seed=3) * 2, R(3, seed=4)
    run_both(lambda M, x, w: (_F(M).gelu(x, approximate="tanh"),
                              _F(M).leaky_relu(x, 0.2), _F(M).elu(x, alpha=0.7),
                              _F(M).softplus(x, beta=2, threshold=1),
                              _F(M).prelu(x, w), _F(M).softmin(x, 1),
                              _F(M).threshold(x, 0.1, -2.0), _F(M).hardtanh(x, -0.5, 0.3),
                              _F(M).rrelu(x, training=False), _F(M).celu(x, 1.5),
                              _F(M).glu(x, dim=1 - 2)), [x, w])


SDPA = [
    dict(),
    dict(is_causal=True),
    dict(mask="bool"),
    dict(mask="float"),
    dict(scale=0.3),
    dict(mask="bool_bcast"),
]


@pytest.mark.parametrize("kw", SDPA, ids=[str(i) for i in range(len(SDPA))])
def test_sdpa(kw):
    q, k, v = R(2, 3, 4, 8, seed=1), R(2, 3, 6, 8, seed=2), R(2, 3, 6, 5, seed=3)
    if kw.get("is_causal"):
        k, v = k[:, :, :4], v[:, :, :4]
    kw = dict(kw)
    mask = kw.pop("mask", None)
    m = None
    if mask == "bool":
        m = R(2, 3, 4, 6, seed=5) > -0.5
        m[..., 0] = True
    elif mask == "bool_bcast":
        m = R(4, 6, seed=5) > -0.5
        m[..., 0] = True
    elif mask == "float":
        m = R(2, 1, 4, 6, seed=6)

    def f(M, q, k, v):
        am = None if m is None else M.from_numpy(m.copy())
        return _F(M).scaled_dot_product_attention(q, k, v, attn_mask=am, **kw)
    run_both(f, [q, k, v])


# ----------------------------------------------------------------------------- losses

REDS = ["mean", "sum", "none"]


@pytest.mark.parametrize("red", REDS)
def test_cross_entropy_variants(red):
    x = R(5, 4, seed=1)
    y = RI(5, high=4, seed=2)
    y[1] = 3
    yprob = np.abs(R(5, 4, seed=3))
    yprob /= yprob.sum(1, keepdims=True)
    w = R(4, pos=True, seed=4)
    x3 = R(3, 4, 2, 3, seed=5)
    y3 = RI(3, 2, 3, high=4, seed=6)

    def f(M, x, w, yprob, x3):
        F = _F(M)
        yi = M.from_numpy(y)
        return (F.cross_entropy(x, yi, reduction=red),
                F.cross_entropy(x, yi, weight=w, reduction=red),
                F.cross_entropy(x, yi, ignore_index=3, reduction=red),
                F.cross_entropy(x, yi, weight=w, ignore_index=3, reduction=red),
                F.cross_entropy(x, yi, label_smoothing=0.2, reduction=red),
                F.cross_entropy(x, yi, weight=w, label_smoothing=0.1, reduction=red),
                F.cross_entropy(x, yi, weight=w, label_smoothing=0.1, ignore_index=3,
                                reduction=red),
                F.cross_entropy(x, yprob, reduction=red),
                F.cross_entropy(x, yprob, weight=w, label_smoothing=0.3, reduction=red),
                F.cross_entropy(x3, M.from_numpy(y3), weight=w, reduction=red),
                F.nll_loss(F.log_softmax(x, 1), yi, weight=w, ignore_index=0, reduction=red),
                F.nll_loss(F.log_softmax(x3, 1), M.from_numpy(y3), reduction=red))
    run_both(f, [x, w, yprob, x3], nograd_idx=(1, 2))


@pytest.mark.parametrize("red", REDS)
def test_pointwise_losses(red):
    x, y = R(4, 5, seed=1), R(4, 5, seed=2)
    p = R(4, 5, lo=0.05, hi=0.95, seed=3)
    t = R(4, 5, lo=0.0, hi=1.0, seed=4)
    pw, bw = R(5, pos=True, seed=5), R(4, 5, pos=True, seed=6)
    var = R(4, 5, pos=True, seed=7)

    def f(M, x, y, p, t, pw, bw, var):
        F = _F(M)
        return (F.mse_loss(x, y, reduction=red), F.l1_loss(x, y, reduction=red),
                F.smooth_l1_loss(x, y, beta=0.5, reduction=red),
                F.smooth_l1_loss(x, y, reduction=red),
                F.huber_loss(x, y, delta=0.7, reduction=red),
                F.binary_cross_entropy(p, t, reduction=red),
                F.binary_cross_entropy(p, t, weight=bw, reduction=red),
                F.binary_cross_entropy_with_logits(x, t, reduction=red),
                F.binary_cross_entropy_with_logits(x, t, weight=bw, pos_weight=pw,
                                                   reduction=red),
                F.kl_div(F.log_softmax(x, 1), F.softmax(y, 1), reduction=red),
                F.kl_div(F.log_softmax(x, 1), F.log_softmax(y, 1), reduction=red,
                         log_target=True),
                F.poisson_nll_loss(x, p * 3, reduction=red),
                F.poisson_nll_loss(p, t * 3, log_input=False, full=True, reduction=red),
                F.gaussian_nll_loss(x, y, var, reduction=red),
                F.gaussian_nll_loss(x, y, var[:, :1], full=True, reduction=red),
                F.soft_margin_loss(x, M.sign(y.detach()), reduction=red))
    run_both(f, [x, y, p, t, pw, bw, var], nograd_idx=(3, 4, 5))


@pytest.mark.parametrize("red", REDS)
def test_margin_losses(red):
    x1, x2 = R(5, 4, seed=1), R(5, 4, seed=2)
    s = R(5, 3, seed=3)
    ypm = np.where(R(5, seed=4) > 0, 1.0, -1.0)
    yc = RI(5, high=3, seed=5)
    ml = np.array([[0, 2, -1], [1, -1, 0], [2, 1, 0], [0, -1, 1], [1, 2, -1]])
    mlab = (R(5, 3, seed=6) > 0).astype(np.float64)
    w3 = R(3, pos=True, seed=7)
    x3 = R(5, 4, seed=8)

    def f(M, x1, x2, s, x3, w3):
        F = _F(M)
        y = M.from_numpy(ypm)
        return (F.margin_ranking_loss(x1[:, 0], x2[:, 0], y, margin=0.3, reduction=red),
                F.hinge_embedding_loss(x1, M.from_numpy(np.sign(x2.detach().numpy()
                                                                if M is ft else
                                                                x2.detach().numpy())),
                                       margin=0.8, reduction=red),
                F.cosine_embedding_loss(x1, x2, y, margin=0.2, reduction=red),
                F.multi_margin_loss(s, M.from_numpy(yc), reduction=red),
                F.multi_margin_loss(s, M.from_numpy(yc), p=2, margin=0.7, weight=w3,
                                    reduction=red),
                F.multilabel_margin_loss(s, M.from_numpy(ml), reduction=red),
                F.multilabel_soft_margin_loss(s, M.from_numpy(mlab), reduction=red),
                F.multilabel_soft_margin_loss(s, M.from_numpy(mlab), weight=w3, reduction=red),
                F.triplet_margin_loss(x1, x2, x3, margin=0.5, reduction=red),
                F.triplet_margin_loss(x1, x2, x3, p=1, swap=True, reduction=red),
                F.triplet_margin_with_distance_loss(x1, x2, x3, reduction=red))
    run_both(f, [x1, x2, s, x3, w3], nograd_idx=(4,))


@pytest.mark.parametrize("red", REDS)
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_loss(red, zero_infinity):
    T, N, C, S = 12, 3, 5, 4
    logits = R(T, N, C, seed=1)
    targets = RI(N, S, high=C - 1, seed=2) + 1
    il = np.array([12, 10, 9])
    tl = np.array([4, 3, 2])
    if zero_infinity:
        il = np.array([12, 10, 2])  # the last sample is infeasible

    def f(M, x):
        F = _F(M)
        lp = F.log_softmax(x, 2)
        return F.ctc_loss(lp, M.from_numpy(targets), M.from_numpy(il), M.from_numpy(tl),
                          reduction=red, zero_infinity=zero_infinity)
    run_both(f, [logits])


# ----------------------------------------------------------------------------- modules

def copy_weights(tm, fm):
    sd = {k: ft.from_numpy(v.detach().numpy().copy()) for k, v in tm.state_dict().items()}
    fm.load_state_dict(sd)


def compare_params_grads(tm, fm, tol):
    tp = dict(tm.named_parameters())
    fp = dict(fm.named_parameters())
    assert sorted(tp) == sorted(fp)
    for k in tp:
        if tp[k].grad is None:
            assert fp[k].grad is None or np.allclose(_np(fp[k].grad), 0), k
            continue
        assert fp[k].grad is not None, k
        np.testing.assert_allclose(_np(fp[k].grad), _np(tp[k].grad), err_msg=k, **tol)


def module_both(make, inputs_fn, dtype=np.float64, tol=F64, seed=0, nograd=()):
    """make(M) -> module; inputs_fn(M) -> list of inputs; compares outputs,
    input grads and parameter grads."""
    torch.manual_seed(seed)
    tm = make(torch)
    fm = make(ft)
    if dtype == np.float64:
        tm = tm.double()
        fm = fm.double()
    copy_weights(tm, fm)
    holder = {}

    def fn(M, *ins):
        m = tm if M is torch else fm
        holder[M] = m
        return m(*ins)
    run_both(fn, inputs_fn(), tol=tol, seed=seed, nograd_idx=nograd)
    compare_params_grads(tm, fm, tol)
    return tm, fm


RNN_CASES = [
    ("RNN", dict(num_layers=1), False, False),
    ("RNN", dict(num_layers=2, nonlinearity="relu", batch_first=True), True, False),
    ("RNN", dict(num_layers=2, bidirectional=True), True, False),
    ("LSTM", dict(num_layers=1), False, False),
    ("LSTM", dict(num_layers=2, batch_first=True), True, False),
    ("LSTM", dict(num_layers=2, bidirectional=True, batch_first=True), True, False),
    ("LSTM", dict(num_layers=1, proj_size=3), True, False),
    ("LSTM", dict(num_layers=1, bias=False), False, True),
    ("GRU", dict(num_layers=1), False, False),
    ("GRU", dict(num_layers=2, bidirectional=True), True, False),
    ("GRU", dict(num_layers=3, batch_first=True, dropout=0.0), True, True),
]


@pytest.mark.parametrize("case", RNN_CASES, ids=[f"{c[0]}-{i}" for i, c in
                                                 enumerate(RNN_CASES)])
def test_rnn_modules(case):
    kind, kw, with_h0, unbatched = case
    I_, H, T, N = 4, 5, 6, 3
    L = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    bf = kw.get("batch_first", False)
    if unbatched:
        x = R(T, I_, seed=1)
    else:
        x = R(N, T, I_, seed=1) if bf else R(T, N, I_, seed=1)
    hout = kw.get("proj_size", 0) or H
    hshape = (L, hout) if unbatched else (L, N, hout)
    cshape = (L, H) if unbatched else (L, N, H)
    h0, c0 = R(*hshape, seed=2), R(*cshape, seed=3)

    def make(M):
        return getattr(M.nn, kind)(I_, H, **kw)

    torch.manual_seed(0)
    tm, fm = make(torch).double(), make(ft).double()
    copy_weights(tm, fm)

    def fn(M, x, h0, c0):
        m = tm if M is torch else fm
        if not with_h0:
            return m(x)
        if kind == "LSTM":
            return m(x, (h0, c0))
        return m(x, h0)
    run_both(fn, [x, h0, c0])
    compare_params_grads(tm, fm, F64)


def test_rnn_cells():
    x, h, c = R(3, 4, seed=1), R(3, 5, seed=2), R(3, 5, seed=3)
    for kind in ("RNNCell", "LSTMCell", "GRUCell"):
        torch.manual_seed(0)
        tm = getattr(torch.nn, kind)(4, 5).double()
        fm = getattr(ft.nn, kind)(4, 5).double()
        copy_weights(tm, fm)

        def fn(M, x, h, c, tm=tm, fm=fm, kind=kind):
            m = tm if M is torch else fm
            return m(x, (h, c)) if kind == "LSTMCell" else m(x, h)
        run_both(fn, [x, h, c])
        compare_params_grads(tm, fm, F64)


MHA_CASES = [
    dict(),
    dict(batch_first=True),
    dict(kpm=True),
    dict(attn_mask="bool", batch_first=True),
    dict(attn_mask="float", kpm=True),
    dict(need_weights=False),
    dict(average=False),
    dict(kdim=3, vdim=2),
    dict(bias=False, add_bias_kv=True, add_zero_attn=True),
    dict(is_causal=True),
]


@pytest.mark.parametrize("cfg", MHA_CASES, ids=[str(i) for i in range(len(MHA_CASES))])
def test_multihead_attention(cfg):
    cfg = dict(cfg)
    E, nh, L, S, N = 8, 2, 4, 5, 3
    bf = cfg.pop("batch_first", False)
    kpm = cfg.pop("kpm", False)
    am = cfg.pop("attn_mask", None)
    need_weights = cfg.pop("need_weights", True)
    average = cfg.pop("average", True)
    is_causal = cfg.pop("is_causal", False)
    kdim, vdim = cfg.get("kdim", E), cfg.get("vdim", E)
    if is_causal:
        S = L
    q = R(N, L, E, seed=1) if bf else R(L, N, E, seed=1)
    k = R(N, S, kdim, seed=2) if bf else R(S, N, kdim, seed=2)
    v = R(N, S, vdim, seed=3) if bf else R(S, N, vdim, seed=3)
    kpm_a = None
    if kpm:
        kpm_a = R(N, S, seed=4) > 0.8
        kpm_a[:, 0] = False
    am_a = None
    if am == "bool":
        am_a = R(L, S, seed=5) > 0.7
        am_a[:, 0] = False
    elif am == "float":
        am_a = R(L, S, seed=5)
    if is_causal:
        am_a = np.triu(np.ones((L, S), dtype=bool), 1)

    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(E, nh, batch_first=bf, **cfg).double()
    fm = ft.nn.MultiheadAttention(E, nh, batch_first=bf, **cfg).double()
    copy_weights(tm, fm)

    def fn(M, q, k, v):
        m = tm if M is torch else fm
        out = m(q, k, v, key_padding_mask=None if kpm_a is None else M.from_numpy(kpm_a),
                attn_mask=None if am_a is None else M.from_numpy(am_a),
                need_weights=need_weights, average_attn_weights=average,
                is_causal=is_causal)
        return out
    run_both(fn, [q, k, v])
    compare_params_grads(tm, fm, F64)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_transformer_encoder_layer(norm_first, activation):
    E, N, L = 8, 2, 5
    x = R(N, L, E, seed=1)
    kpm = np.zeros((N, L), dtype=bool)
    kpm[1, -2:] = True

    def make(M):
        return M.nn.TransformerEncoderLayer(E, 2, dim_feedforward=16, dropout=0.0,
                                            activation=activation, batch_first=True,
                                            norm_first=norm_first)
    torch.manual_seed(0)
    tm, fm = make(torch).double(), make(ft).double()
    copy_weights(tm, fm)
    tm.train()
    fm.train()

    def fn(M, x):
        m = tm if M is torch else fm
        return m(x, src_key_padding_mask=M.from_numpy(kpm))
    run_both(fn, [x])
    compare_params_grads(tm, fm, F64)


def test_transformer_decoder_layer():
    E = 8
    x, mem = R(2, 4, E, seed=1), R(2, 6, E, seed=2)

    def make(M):
        return M.nn.TransformerDecoderLayer(E, 2, dim_feedforward=16, dropout=0.0,
                                            batch_first=True)
    torch.manual_seed(0)
    tm, fm = make(torch).double(), make(ft).double()
    copy_weights(tm, fm)

    def fn(M, x, mem):
        m = tm if M is torch else fm
        mask = M.nn.Transformer.generate_square_subsequent_mask(4).to(M.float64)
        return m(x, mem, tgt_mask=mask)
    run_both(fn, [x, mem])
    compare_params_grads(tm, fm, F64)


def test_embedding_module_and_bag():
    idx = RI(3, 4, high=10, seed=1)
    idx[0, 1] = 0
    torch.manual_seed(0)
    tm = torch.nn.Embedding(10, 3, padding_idx=0).double()
    fm = ft.nn.Embedding(10, 3, padding_idx=0).double()
    copy_weights(tm, fm)
    run_both(lambda M, d: (tm if M is torch else fm)(M.from_numpy(idx)) * d, [R(3, 4, 3)])
    compare_params_grads(tm, fm, F64)
    for mode in ("sum", "mean", "max"):
        tm = torch.nn.EmbeddingBag(10, 3, mode=mode).double()
        fm = ft.nn.EmbeddingBag(10, 3, mode=mode).double()
        copy_weights(tm, fm)
        run_both(lambda M, d, tm=tm, fm=fm: (tm if M is torch else fm)(M.from_numpy(idx)) * d,
                 [R(3, 3)])
        compare_params_grads(tm, fm, F64)


@pytest.mark.parametrize("kind,shape", [("BatchNorm1d", (6, 3)), ("BatchNorm1d", (6, 3, 4)),
                                        ("BatchNorm2d", (4, 3, 3, 2)),
                                        ("BatchNorm3d", (2, 3, 2, 3, 2))])
def test_batchnorm_running_stats(kind, shape):
    torch.manual_seed(0)
    tm = getattr(torch.nn, kind)(3, momentum=0.3).double()
    fm = getattr(ft.nn, kind)(3, momentum=0.3).double()
    with torch.no_grad():
        tm.weight.copy_(torch.from_numpy(R(3, seed=9)))
        tm.bias.copy_(torch.from_numpy(R(3, seed=8)))
    copy_weights(tm, fm)
    for step in range(3):
        x = R(*shape, seed=step)
        run_both(lambda M, x: (tm if M is torch else fm)(x), [x], seed=step)
    for k in ("running_mean", "running_var", "num_batches_tracked"):
        np.testing.assert_allclose(_np(getattr(fm, k)), _np(getattr(tm, k)), err_msg=k, **F64)
    compare_params_grads(tm, fm, F64)
    tm.eval()
    fm.eval()
    run_both(lambda M, x: (tm if M is torch else fm)(x), [R(*shape, seed=11)])
    # momentum=None: cumulative moving average
    tm = getattr(torch.nn, kind)(3, momentum=None).double()
    fm = getattr(ft.nn, kind)(3, momentum=None).double()
    for step in range(3):
        run_both(lambda M, x: (tm if M is torch else fm)(x), [R(*shape, seed=step)],
                 check_grad=False)
    np.testing.assert_allclose(_np(fm.running_var), _np(tm.running_var), **F64)


def test_norm_modules():
    x = R(3, 4, 5, 2, seed=1)
    for make in (lambda M: M.nn.LayerNorm((5, 2)), lambda M: M.nn.GroupNorm(2, 4),
                 lambda M: M.nn.InstanceNorm2d(4, affine=True, track_running_stats=True),
                 lambda M: M.nn.RMSNorm([2]), lambda M: M.nn.LocalResponseNorm(2)):
        torch.manual_seed(0)
        tm, fm = make(torch).double(), make(ft).double()
        for p in tm.parameters():
            with torch.no_grad():
                p.copy_(torch.from_numpy(R(*p.shape, seed=5)))
        copy_weights(tm, fm)
        run_both(lambda M, x, tm=tm, fm=fm: (tm if M is torch else fm)(x), [x])
        compare_params_grads(tm, fm, F64)


def test_conv_modules_float32():
    x = R(2, 3, 8, 8, seed=1, dtype=np.float32)
    for make in (lambda M: M.nn.Conv2d(3, 4, 3, padding=1, padding_mode="reflect"),
                 lambda M: M.nn.Conv2d(3, 4, 3, padding=2, padding_mode="circular"),
                 lambda M: M.nn.Conv2d(3, 4, 3, padding="same", padding_mode="replicate",
                                       bias=False),
                 lambda M: M.nn.ConvTranspose2d(3, 2, 3, stride=2, output_padding=1),
                 lambda M: M.nn.Sequential(M.nn.Conv2d(3, 4, 3), M.nn.BatchNorm2d(4),
                                           M.nn.ReLU(), M.nn.MaxPool2d(2), M.nn.Flatten(),
                                           M.nn.Linear(36, 5))):
        torch.manual_seed(0)
        tm, fm = make(torch), make(ft)
        copy_weights(tm, fm)
        run_both(lambda M, x, tm=tm, fm=fm: (tm if M is torch else fm)(x), [x], tol=F32)
        compare_params_grads(tm, fm, dict(rtol=1e-3, atol=1e-4))


def test_conv_transpose_output_size():
    x = R(1, 3, 4, 4, seed=1)
    torch.manual_seed(0)
    tm = torch.nn.ConvTranspose2d(3, 2, 3, stride=2).double()
    fm = ft.nn.ConvTranspose2d(3, 2, 3, stride=2).double()
    copy_weights(tm, fm)
    run_both(lambda M, x: (tm if M is torch else fm)(x, output_size=[10, 9]), [x])


# ----------------------------------------------------------------------------- optimizers

def _mlp(M):
    return M.nn.Sequential(M.nn.Linear(4, 6), M.nn.Tanh(), M.nn.Linear(6, 2))


OPTS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.3, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.1)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, amsgrad=True, betas=(0.8, 0.9))),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.1)),
    ("Adadelta", dict(lr=1.0, rho=0.8, weight_decay=0.1)),
    ("Adamax", dict(lr=0.02, weight_decay=0.1)),
    ("NAdam", dict(lr=0.02)),
    ("NAdam", dict(lr=0.02, decoupled_weight_decay=True, weight_decay=0.1)),
    ("RAdam", dict(lr=0.02)),
    ("RAdam", dict(lr=0.02, decoupled_weight_decay=True, weight_decay=0.1)),
    ("Rprop", dict(lr=0.01)),
    ("Rprop", dict(lr=0.01, etas=(0.3, 1.5), step_sizes=(1e-3, 0.1))),
    ("ASGD", dict(lr=0.05, t0=2, weight_decay=0.01)),
]


@pytest.mark.parametrize("name,kw", OPTS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(OPTS)])
def test_optimizers(name, kw, steps=6):
    torch.manual_seed(0)
    tm, fm = _mlp(torch).double(), _mlp(ft).double()
    copy_weights(tm, fm)
    to = getattr(torch.optim, name)(tm.parameters(), **kw)
    fo = getattr(ft.optim, name)(fm.parameters(), **kw)
    x, y = R(8, 4, seed=1), R(8, 2, seed=2)
    for step in range(steps):
        for M, m, o in ((torch, tm, to), (ft, fm, fo)):
            o.zero_grad()
            loss = ((m(M.from_numpy(x)) - M.from_numpy(y)) ** 2).mean()
            loss.backward()
            o.step()
        for (k, tp), (_, fp) in zip(tm.named_parameters(), fm.named_parameters()):
            np.testing.assert_allclose(_np(fp), _np(tp), rtol=1e-9, atol=1e-11,
                                       err_msg=f"step {step} {k}")


@pytest.mark.parametrize("kw", [dict(lr=0.5), dict(lr=0.5, line_search_fn="strong_wolfe"),
                                dict(lr=1, history_size=3, max_iter=5)])
def test_lbfgs(kw):
    torch.manual_seed(0)
    tm, fm = _mlp(torch).double(), _mlp(ft).double()
    copy_weights(tm, fm)
    to = torch.optim.LBFGS(tm.parameters(), **kw)
    fo = ft.optim.LBFGS(fm.parameters(), **kw)
    x, y = R(8, 4, seed=1), R(8, 2, seed=2)
    for step in range(5):
        losses = []
        for M, m, o in ((torch, tm, to), (ft, fm, fo)):
            def closure(M=M, m=m, o=o):
                o.zero_grad()
                loss = ((m(M.from_numpy(x)) - M.from_numpy(y)) ** 2).mean()
                loss.backward()
                return loss
            losses.append(float(o.step(closure)))
        np.testing.assert_allclose(losses[1], losses[0], rtol=1e-7)
        for (k, tp), (_, fp) in zip(tm.named_parameters(), fm.named_parameters()):
            np.testing.assert_allclose(_np(fp), _np(tp), rtol=1e-6, atol=1e-9,
                                       err_msg=f"step {step} {k}")


SCHED = [
    ("StepLR", dict(step_size=4, gamma=0.5)),
    ("MultiStepLR", dict(milestones=[3, 7, 20], gamma=0.3)),
    ("ExponentialLR", dict(gamma=0.9)),
    ("CosineAnnealingLR", dict(T_max=10, eta_min=0.01)),
    ("OneCycleLR", dict(max_lr=1.0, total_steps=31)),
    ("OneCycleLR", dict(max_lr=1.0, total_steps=31, anneal_strategy="linear",
                        three_phase=True, cycle_momentum=False)),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=4)),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=3, step_size_down=5,
                      mode="triangular2")),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=3, mode="exp_range",
                      gamma=0.9)),
    ("CosineAnnealingWarmRestarts", dict(T_0=5, T_mult=2, eta_min=0.001)),
    ("LinearLR", dict(start_factor=0.2, total_iters=6)),
    ("ConstantLR", dict(factor=0.3, total_iters=4)),
    ("PolynomialLR", dict(total_iters=12, power=2.0)),
    ("LambdaLR", dict(lr_lambda=lambda e: 0.9 ** e)),
    ("MultiplicativeLR", dict(lr_lambda=lambda e: 0.95)),
]


def _opt_for_sched(M, name):
    p = M.nn.Parameter(M.zeros(2))
    if name in ("CyclicLR", "OneCycleLR"):
        return M.optim.SGD([p], lr=0.1, momentum=0.9)
    return M.optim.SGD([p], lr=0.1)


@pytest.mark.parametrize("name,kw", SCHED, ids=[f"{n}-{i}" for i, (n, _) in enumerate(SCHED)])
def test_lr_schedulers(name, kw):
    seqs = []
    for M in (torch, ft):
        o = _opt_for_sched(M, name)
        s = getattr(M.optim.lr_scheduler, name)(o, **kw)
        seq = []
        for _ in range(30):
            o.step()
            s.step()
            seq.append((o.param_groups[0]["lr"], o.param_groups[0].get("momentum"),
                        s.get_last_lr()[0]))
        seqs.append(seq)
    np.testing.assert_allclose(np.array(seqs[1], dtype=float), np.array(seqs[0], dtype=float),
                               rtol=1e-10, atol=1e-12)


def test_reduce_lr_on_plateau_and_sequential():
    metrics = [1.0, 0.9, 0.95, 0.96, 0.97, 0.8, 0.85, 0.86, 0.87, 0.88, 0.89] * 3
    seqs = []
    for M in (torch, ft):
        o = _opt_for_sched(M, "")
        s = M.optim.lr_scheduler.ReduceLROnPlateau(o, factor=0.5, patience=2, cooldown=1,
                                                   threshold=0.01, min_lr=0.001)
        seq = []
        for m in metrics:
            o.step()
            s.step(m)
            seq.append(o.param_groups[0]["lr"])
        o = _opt_for_sched(M, "")
        s1 = M.optim.lr_scheduler.LinearLR(o, start_factor=0.1, total_iters=5)
        s2 = M.optim.lr_scheduler.CosineAnnealingLR(o, T_max=10)
        s = M.optim.lr_scheduler.SequentialLR(o, [s1, s2], milestones=[5])
        for _ in range(30):
            o.step()
            s.step()
            seq.append(o.param_groups[0]["lr"])
        o = _opt_for_sched(M, "")
        s = M.optim.lr_scheduler.ChainedScheduler(
            [M.optim.lr_scheduler.ExponentialLR(o, 0.9),
             M.optim.lr_scheduler.StepLR(o, 3, 0.5)])
        for _ in range(15):
            o.step()
            s.step()
            seq.append(o.param_groups[0]["lr"])
        seqs.append(seq)
    np.testing.assert_allclose(seqs[1], seqs[0], rtol=1e-10, atol=1e-12)


# ----------------------------------------------------------------------------- nn.utils

def test_clip_grad_and_vectors():
    torch.manual_seed(0)
    tm, fm = _mlp(torch).double(), _mlp(ft).double()
    copy_weights(tm, fm)
    x = R(5, 4, seed=1)
    for M, m in ((torch, tm), (ft, fm)):
        (m(M.from_numpy(x)) ** 2).sum().backward()
    for norm_type in (2.0, 1.0, float("inf")):
        tn = torch.nn.utils.clip_grad_norm_(tm.parameters(), 0.5, norm_type=norm_type)
        fn = ft.nn.utils.clip_grad_norm_(fm.parameters(), 0.5, norm_type=norm_type)
        np.testing.assert_allclose(float(fn), float(tn), rtol=1e-10)
        compare_params_grads(tm, fm, F64)
    torch.nn.utils.clip_grad_value_(tm.parameters(), 0.01)
    ft.nn.utils.clip_grad_value_(fm.parameters(), 0.01)
    compare_params_grads(tm, fm, F64)
    tv = torch.nn.utils.parameters_to_vector(tm.parameters())
    fv = ft.nn.utils.parameters_to_vector(fm.parameters())
    np.testing.assert_allclose(_np(fv), _np(tv))
    new = R(tv.shape[0], seed=3)
    torch.nn.utils.vector_to_parameters(torch.from_numpy(new), tm.parameters())
    ft.nn.utils.vector_to_parameters(ft.from_numpy(new), fm.parameters())
    for (k, tp), (_, fp) in zip(tm.named_parameters(), fm.named_parameters()):
        np.testing.assert_allclose(_np(fp), _np(tp), err_msg=k)
    tg = torch.nn.utils.get_total_norm([p.grad for p in tm.parameters()], 3.0)
    fg = ft.nn.utils.get_total_norm([p.grad for p in fm.parameters()], 3.0)
    np.testing.assert_allclose(float(fg), float(tg), rtol=1e-10)


def test_training_loop_float32():
    """A few SGD steps of a small conv net in float32: parameters stay close."""
    def make(M):
        return M.nn.Sequential(M.nn.Conv2d(1, 3, 3), M.nn.GroupNorm(1, 3), M.nn.GELU(),
                               M.nn.AdaptiveAvgPool2d(2), M.nn.Flatten(), M.nn.Linear(12, 3))
    torch.manual_seed(0)
    tm, fm = make(torch), make(ft)
    copy_weights(tm, fm)
    to = torch.optim.Adam(tm.parameters(), lr=1e-2)
    fo = ft.optim.Adam(fm.parameters(), lr=1e-2)
    x = R(4, 1, 6, 6, seed=1, dtype=np.float32)
    y = RI(4, high=3, seed=2)
    for _ in range(4):
        for M, m, o in ((torch, tm, to), (ft, fm, fo)):
            o.zero_grad()
            M.nn.functional.cross_entropy(m(M.from_numpy(x)), M.from_numpy(y)).backward()
            o.step()
    for (k, tp), (_, fp) in zip(tm.named_parameters(), fm.named_parameters()):
        np.testing.assert_allclose(_np(fp), _np(tp), rtol=1e-4, atol=1e-5, err_msg=k)


_ = math


# ----------------------------------------------------------------------------- edge cases

def test_gradient_ties_and_kinks():
    """Subgradient conventions at ties and kinks: maximum/minimum split ties, amax/amin
    spread evenly, max(dim) picks one index, clamp stops at the bounds (PyTorch 2.15), abs/relu
    at 0."""
    a = np.array([[1.0, 3.0, 3.0, -2.0], [0.0, 0.0, -1.0, 0.5], [2.0, 2.0, 2.0, 2.0]])
    b = np.array([[1.0, 2.0, 3.0, -2.0], [0.0, 1.0, -1.0, 0.5], [2.0, 0.0, 2.0, 3.0]])
    run_both(lambda M, x, y: (M.maximum(x, y), M.minimum(x, y), M.fmax(x, y),
                              x.amax(1), x.amin(0), x.max(), x.min(), M.max(x, 1).values,
                              M.clamp(x, 0.0, 2.0), x.abs(), M.relu(x), x.sign(),
                              M.nn.functional.hardtanh(x, 0.0, 2.0),
                              M.nn.functional.relu6(x * 3), M.median(x), x.median(1).values,
                              M.nn.functional.leaky_relu(x), x.sqrt().nan_to_num(0.0) * 0,
                              M.linalg.vector_norm(x * 0, dim=1), x.norm(dim=1),
                              M.nn.functional.normalize(x * 0 + (x > 5), dim=1)), [a, b])


def test_prod_cumprod_with_zeros():
    a = np.array([[1.5, 0.0, 2.0, -1.0], [0.0, 0.0, 3.0, 1.0], [1.0, 2.0, 3.0, 4.0]])
    run_both(lambda M, x: (x.prod(1), x.prod(), x.prod(0, keepdim=True), x.cumprod(1),
                           x.cumprod(0)), [a])


def test_max_pool_ties():
    x = np.zeros((1, 1, 4, 4))
    x[0, 0, 1, 1] = x[0, 0, 1, 2] = 1.0
    run_both(lambda M, x: (M.nn.functional.max_pool2d(x, 2, 1),
                           M.nn.functional.adaptive_max_pool2d(x, 3)), [x])


def test_inplace_ops_in_graph():
    a, b = R(4, 5, seed=1), R(4, 5, seed=2)
    idx = np.array([0, 2])

    def f(M, x, y):
        z = x * 2
        z.add_(y, alpha=0.5)
        z.mul_(y)
        z.clamp_(-1.0, 1.5)
        z[:, 1].sigmoid_()
        w = y.clone()
        w.index_add_(0, M.from_numpy(idx), x[:2])
        w.masked_fill_(x > 1.0, 0.0)
        v = x.exp() * 1.0
        v.div_(y.abs() + 1).sub_(1).tanh_()
        u = y * 1
        u.transpose(0, 1)[2:4].mul_(3)
        return z, w, v, u
    run_both(f, [a, b])


def test_noncontiguous_inputs():
    a = np.ascontiguousarray(R(6, 5, seed=1).T)  # values; transpose inside
    w = R(3, 2, 3, 3, seed=2)
    x = R(2, 5, 2, 7, seed=3)

    def f(M, a, w, x):
        at = a.T
        xs = x.transpose(1, 2)[:, :, ::2]
        return (at.sin() * at[:, ::2].sum(1, keepdim=True), at.softmax(0), at @ a,
                M.nn.functional.conv2d(xs, w, padding=1), xs.cumsum(3), xs.max(2).values)
    run_both(f, [a, w, x])


SECOND_ORDER = [
    ("tanh_softmax_lse", lambda M, x, w: (M.softmax(x, 1) * x.sigmoid()).sum()
     + (x.logsumexp(0) ** 3).sum() + x.tanh().prod()),
    ("linear_gelu", lambda M, x, w: _F(M).gelu(_F(M).linear(x, w[:, :5]))),
    ("pool_interp", lambda M, x, w: _F(M).interpolate(_F(M).max_pool1d(x[None], 2) ** 2,
                                                      scale_factor=2, mode="linear")),
    ("sdpa", lambda M, x, w: _F(M).scaled_dot_product_attention(x[None], x[None], x[None])),
    ("linalg", lambda M, x, w: M.linalg.inv(w[:, :4] @ w[:, :4].T + 4 * M.eye(4,
                                                                            dtype=w.dtype))
     + M.linalg.det(w[:, :4])),
    ("conv1d", lambda M, x, w: _F(M).conv1d(x[None], w[:, :4, None].expand(4, 4, 2)) ** 2),
    ("conv2d_groups", lambda M, x, w: _F(M).conv2d(
        x[None, :4, None], w[:, :2, None, None].expand(4, 2, 1, 2), stride=(1, 2), groups=2,
        padding=(0, 1)) ** 2),
    ("conv_transpose1d", lambda M, x, w: _F(M).conv_transpose1d(
        x[None], w[:, :2, None].expand(4, 2, 3), stride=2) ** 2),
    ("layer_norm", lambda M, x, w: _F(M).layer_norm(x, (5,), w[0, :5], w[1, :5]) ** 3),
    ("batch_norm", lambda M, x, w: _F(M).batch_norm(x, None, None, w[0, :5], w[1, :5],
                                                    training=True) ** 3),
    ("group_norm", lambda M, x, w: _F(M).group_norm(x[None], 2, w[0, :4], w[1, :4]) ** 3),
    ("cross_entropy", lambda M, x, w: _F(M).cross_entropy(
        x, M.from_numpy(np.array([0, 1, 4, 2]))) ** 2),
    ("cross_entropy_weighted", lambda M, x, w: _F(M).cross_entropy(
        x, M.from_numpy(np.array([0, 1, 4, 2])), weight=w[0, :5].detach().abs() + 0.5,
        label_smoothing=0.2, ignore_index=1) ** 2),
]


@pytest.mark.parametrize("name,fn", SECOND_ORDER,
                         ids=[c[0] if isinstance(c, tuple) else c.id for c in SECOND_ORDER])
def test_second_order(name, fn):
    x, w = R(4, 5, seed=1), R(4, 6, seed=2)
    res = []
    for M in (torch, ft):
        # PyTorch's CPU flash-attention kernel has no double backward: compare with its
        # math formula (what ferrotorch differentiates)
        math_sdpa = M is torch and name == "sdpa" and hasattr(torch.nn, "attention")
        with (torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH) if math_sdpa
              else contextlib.nullcontext()):
            xi, wi = (M.from_numpy(t.copy()).requires_grad_() for t in (x, w))
            y = fn(M, xi, wi)
            y = (y * M.from_numpy(R(*y.shape, seed=3))).sum()
            g = M.autograd.grad(y, [xi, wi], create_graph=True, allow_unused=True,
                                materialize_grads=True)
            s = sum((gi ** 2).sum() for gi in g)
            h = M.autograd.grad(s, [xi, wi], allow_unused=True, materialize_grads=True)
        res.append([_np(t) for t in (*g, *h)])
    for fr, tr in zip(res[1], res[0]):
        np.testing.assert_allclose(fr, tr, rtol=1e-6, atol=1e-8)


def test_special_functions():
    a = R(3, 4, pos=True, seed=1)
    b = R(3, 4, seed=2)
    run_both(lambda M, x, y: (M.special.xlog1py(y, x), M.special.i0(y), M.special.i0e(y),
                              M.polygamma(1, x), \
                              M.sinc(y), M.logaddexp(x, y), M.logaddexp2(x, y), M.erfc(y),
                              M.special.log_ndtr(y), M.special.ndtr(y), M.mvlgamma(x + 2, 2),
                              M.special.entr(x), M.special.logit(x / 3, eps=0.1),
                              M.deg2rad(y), M.special.expit(y), M.float_power(x, y)),
             [a, b])


def test_variance_corrections():
    a = R(3, 4, 5, seed=1)
    run_both(lambda M, x: (x.var(1, correction=0), x.std((0, 2), correction=2, keepdim=True),
                           M.var_mean(x, 2, correction=0), x.var(), x.std(unbiased=False),
                           M.cov(x[0]), M.corrcoef(x[1]), M.cov(x[0], correction=0)), [a])


def test_loss_edge_cases():
    x = R(3, 4, seed=1)

    def f(M, x):
        F = _F(M)
        y_all_ignored = M.from_numpy(np.array([1, 1, 1]))
        return (F.cross_entropy(x, y_all_ignored, ignore_index=1, reduction="sum"),
                F.nll_loss(F.log_softmax(x, 1), M.from_numpy(np.array([2, 0, 3])),
                           weight=M.from_numpy(np.array([0.5, 1.0, 2.0, 0.0]))),
                F.cross_entropy(x[0], M.from_numpy(np.array(2))),
                F.cross_entropy(x[0], F.softmax(x[1].detach(), 0)),
                F.binary_cross_entropy(F.sigmoid(x), (x.detach() > 0).to(x.dtype)),
                F.l1_loss(x, x.detach() * 0 + 1), F.huber_loss(x, x.detach() + 1, delta=1.0))
    run_both(f, [x])


def test_cross_entropy_all_ignored_mean_is_nan():
    for M in (torch, ft):
        x = M.from_numpy(R(3, 4, seed=1))
        y = M.from_numpy(np.array([1, 1, 1]))
        assert math.isnan(float(M.nn.functional.cross_entropy(x, y, ignore_index=1)))


def test_ctc_concatenated_targets_float32():
    T, N, C = 10, 2, 4
    logits = R(T, N, C, seed=1, dtype=np.float32)
    targets = np.array([1, 2, 2, 3, 1], dtype=np.int64)
    il, tl = np.array([10, 8]), np.array([3, 2])
    run_both(lambda M, x: _F(M).ctc_loss(_F(M).log_softmax(x, 2), M.from_numpy(targets),
                                         M.from_numpy(il), M.from_numpy(tl), blank=0),
             [logits], tol=F32)
    run_both(lambda M, x: _F(M).ctc_loss(_F(M).log_softmax(x, 2), M.from_numpy(targets),
                                         (10, 8), (3, 2), blank=0, reduction="sum"),
             [logits], tol=F32)


def test_distance_functions():
    a, b = R(5, 4, seed=1), R(5, 4, seed=2)
    run_both(lambda M, x, y: (_F(M).cosine_similarity(x, y), _F(M).cosine_similarity(x, y, 0),
                              _F(M).pairwise_distance(x, y), _F(M).pairwise_distance(x, y, p=1,
                                                                                     eps=1e-3),
                              _F(M).pdist(x), _F(M).pdist(x, p=3), M.cdist(x, y, p=1)),
             [a, b])


def test_embedding_max_norm():
    w = R(8, 3, seed=1) * 3
    idx = np.array([[0, 2, 2], [5, 1, 7]])
    res = []
    for M in (torch, ft):
        wt = M.from_numpy(w.copy())
        out = _F(M).embedding(M.from_numpy(idx), wt, max_norm=1.5, norm_type=2)
        res.append((_np(out), _np(wt)))
    np.testing.assert_allclose(res[1][0], res[0][0], **F64)
    np.testing.assert_allclose(res[1][1], res[0][1], **F64)


def test_packed_sequence_lstm():
    lengths = [5, 3, 2]
    x = R(5, 3, 4, seed=1)
    torch.manual_seed(0)
    tm = torch.nn.LSTM(4, 3, num_layers=2, bidirectional=True).double()
    fm = ft.nn.LSTM(4, 3, num_layers=2, bidirectional=True).double()
    copy_weights(tm, fm)

    def fn(M, x):
        m = tm if M is torch else fm
        rnn = M.nn.utils.rnn
        packed = rnn.pack_padded_sequence(x, lengths)
        out, (h, c) = m(packed)
        pad, lens = rnn.pad_packed_sequence(out)
        return pad, h, c
    run_both(fn, [x])
    compare_params_grads(tm, fm, F64)


def test_packed_sequence_gru_unsorted_batch_first():
    lengths = [2, 5, 3]
    x = R(3, 5, 4, seed=1)
    torch.manual_seed(0)
    tm = torch.nn.GRU(4, 3, batch_first=True).double()
    fm = ft.nn.GRU(4, 3, batch_first=True).double()
    copy_weights(tm, fm)

    def fn(M, x):
        m = tm if M is torch else fm
        rnn = M.nn.utils.rnn
        packed = rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, h = m(packed)
        pad, _ = rnn.pad_packed_sequence(out, batch_first=True, total_length=6)
        return pad, h
    run_both(fn, [x])
    compare_params_grads(tm, fm, F64)


def test_transformer_full_and_encoder_stack():
    E = 8
    src, tgt = R(2, 5, E, seed=1), R(2, 4, E, seed=2)

    def make(M):
        return M.nn.Transformer(E, 2, num_encoder_layers=2, num_decoder_layers=1,
                                dim_feedforward=12, dropout=0.0, batch_first=True)
    torch.manual_seed(0)
    tm, fm = make(torch).double(), make(ft).double()
    copy_weights(tm, fm)

    def fn(M, s, t):
        m = tm if M is torch else fm
        mask = m.generate_square_subsequent_mask(4, dtype=M.float64)
        return m(s, t, tgt_mask=mask, tgt_is_causal=True)
    run_both(fn, [src, tgt])
    compare_params_grads(tm, fm, F64)

    layer_t = torch.nn.TransformerEncoderLayer(E, 4, 16, dropout=0.0, norm_first=True)
    layer_f = ft.nn.TransformerEncoderLayer(E, 4, 16, dropout=0.0, norm_first=True)
    tm = torch.nn.TransformerEncoder(layer_t, 2, norm=torch.nn.LayerNorm(E),
                                     enable_nested_tensor=False).double()
    fm = ft.nn.TransformerEncoder(layer_f, 2, norm=ft.nn.LayerNorm(E),
                                  enable_nested_tensor=False).double()
    copy_weights(tm, fm)
    run_both(lambda M, s: (tm if M is torch else fm)(s, is_causal=False), [src[:, :, :]])
    compare_params_grads(tm, fm, F64)


def test_optimizer_param_groups_and_state_dict():
    torch.manual_seed(0)
    tm, fm = _mlp(torch).double(), _mlp(ft).double()
    copy_weights(tm, fm)

    def groups(m):
        return [{"params": m[0].parameters(), "lr": 0.05, "weight_decay": 0.1},
                {"params": m[2].parameters()}]
    to = torch.optim.Adam(groups(tm), lr=0.01, betas=(0.8, 0.95), maximize=False)
    fo = ft.optim.Adam(groups(fm), lr=0.01, betas=(0.8, 0.95), maximize=False)
    x, y = R(8, 4, seed=1), R(8, 2, seed=2)
    for step in range(6):
        for M, m, o in ((torch, tm, to), (ft, fm, fo)):
            o.zero_grad()
            ((m(M.from_numpy(x)) - M.from_numpy(y)) ** 2).mean().backward()
            o.step()
        if step == 2:  # round-trip the optimizer state
            fo2 = ft.optim.Adam(groups(fm), lr=0.01)
            fo2.load_state_dict(fo.state_dict())
            fo = fo2
    for (k, tp), (_, fp) in zip(tm.named_parameters(), fm.named_parameters()):
        np.testing.assert_allclose(_np(fp), _np(tp), rtol=1e-9, atol=1e-11, err_msg=k)


SCHED2 = [
    ("CosineAnnealingLR", dict(T_max=7, eta_min=0.0)),
    ("OneCycleLR", dict(max_lr=0.5, epochs=3, steps_per_epoch=10, pct_start=0.4,
                        div_factor=10, final_div_factor=100)),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=4, cycle_momentum=False,
                      scale_fn=lambda x: 0.5 ** x, scale_mode="cycle")),
    ("StepLR", dict(step_size=1, gamma=0.95)),
    ("CosineAnnealingWarmRestarts", dict(T_0=3, T_mult=1)),
]


@pytest.mark.parametrize("name,kw", SCHED2, ids=[f"{n}-{i}" for i, (n, _) in
                                                 enumerate(SCHED2)])
def test_lr_schedulers_adam_two_groups(name, kw):
    seqs = []
    for M in (torch, ft):
        p1, p2 = M.nn.Parameter(M.zeros(2)), M.nn.Parameter(M.zeros(2))
        o = M.optim.Adam([{"params": [p1]}, {"params": [p2], "lr": 0.02}], lr=0.1)
        s = getattr(M.optim.lr_scheduler, name)(o, **kw)
        seq = []
        for _ in range(30):
            o.step()
            s.step()
            for g in o.param_groups:
                seq.append([g["lr"], *g["betas"]])
        seqs.append(seq)
    np.testing.assert_allclose(np.array(seqs[1]), np.array(seqs[0]), rtol=1e-10, atol=1e-12)


def test_reduce_on_plateau_max_abs():
    metrics = [0.1, 0.2, 0.21, 0.2, 0.19, 0.3, 0.3, 0.3, 0.3, 0.31, 0.29, 0.28] * 2
    seqs = []
    for M in (torch, ft):
        o = _opt_for_sched(M, "")
        s = M.optim.lr_scheduler.ReduceLROnPlateau(o, mode="max", factor=0.3, patience=1,
                                                   threshold=0.05, threshold_mode="abs")
        seq = []
        for m in metrics:
            o.step()
            s.step(m)
            seq.append(o.param_groups[0]["lr"])
        seqs.append(seq)
    np.testing.assert_allclose(seqs[1], seqs[0], rtol=1e-12)


def test_float32_core_ops():
    a, b = R(6, 7, seed=1, dtype=np.float32), R(7, 5, seed=2, dtype=np.float32)
    run_both(lambda M, x, y: (x @ y, x.softmax(1), x.log_softmax(0), x.logsumexp(1),
                              x.var(1), x.norm(dim=0), M.sort(x, 1), x.cumsum(1),
                              _F(M).layer_norm(x, (7,)), _F(M).gelu(x), x.tanh().prod(1),
                              M.einsum("ij,jk->ik", x, y), M.linalg.inv(y @ y.T + 5 * M.eye(7))),
             [a, b], tol=dict(rtol=5e-4, atol=5e-5))


# ----------------------------------------------------------------------------- more ops

def test_more_core_ops():
    a, b = R(4, 5, seed=1), R(4, 5, seed=2)
    idx = np.array([3, 0, 0])

    def f(M, x, y):
        return (M.diff(x, dim=1), M.diff(x, n=2, dim=0, prepend=y[:1]), M.trapezoid(x, dim=1),
                M.cumulative_trapezoid(y, dim=0), M.renorm(x, 2, 0, 1.0),
                M.lerp(x, y, y.sigmoid()), M.clamp(x, min=y - 1, max=y + 0.5),
                M.where(x > 0, x, 0.5), M.nanmean(x), M.quantile(x, 0.3, dim=1),
                M.quantile(x, M.from_numpy(np.array([0.1, 0.75])), dim=0, keepdim=True,
                           interpolation="midpoint"),
                M.quantile(x, 0.4, interpolation="nearest"), M.nanquantile(y, 0.6),
                M.rot90(x, 1, (0, 1)), M.diag(x[0]), M.diagflat(y[1]), M.diag(x, 1),
                x.index_fill(1, M.from_numpy(idx), -1.0),
                x.index_put((M.from_numpy(idx), M.from_numpy(idx)), y[0, :3], accumulate=True),
                M.take_along_dim(x, M.from_numpy(np.argsort(b, 1)), 1),
                M.cartesian_prod(x[0, :2], y[0, :3]), M.combinations(x[1], 2),
                M.logcumsumexp(y, 0), M.nanmedian(x, 1).values, x.T.contiguous().view(-1),
                M.heaviside(x.detach(), y.detach()) * y, M.sgn(x) * x, M.frexp(x).mantissa, M.ldexp(x, y.round()),
                M.addr(x, y[:, 0], x[0]), M.frexp(x * 300)[0], M.vdot(x[0], y[0]), M.inner(x, y),
                M.linalg.vecdot(x, y), M.linalg.cross(x[:, :3], y[:, :3]))
    run_both(f, [a, b])


def test_more_linalg():
    A = spd(4, seed=3)
    G = R(2, 4, 4, seed=2) + 3 * np.eye(4)
    B = R(4, 3, seed=3)
    W = R(3, 5, seed=4)

    def f(M, A, G, B, W):
        LU, piv = M.linalg.lu_factor(G)
        P, L, U = M.linalg.lu(G)
        q, r = M.linalg.qr(W.T.detach(), mode="complete")
        U2, S2, Vh2 = M.linalg.svd(W, full_matrices=False)
        return (M.linalg.solve(G, B), M.linalg.solve(G[0], B[:, 0]), M.linalg.lu_solve(LU, piv, B),
                L @ U, P, M.linalg.cholesky(A, upper=True), q @ r, M.linalg.qr(W.T.detach(), mode="r")[1]
                .abs(), (U2 * S2) @ Vh2[:3], M.linalg.cond(G), M.linalg.tensorsolve(
                    G[0], B[:, 0]), M.linalg.eigvalsh(A, UPLO="U"), M.linalg.matrix_norm(G, 2),
                M.linalg.norm(G, "nuc", dim=(1, 2)), M.linalg.inv_ex(G).inverse,
                M.linalg.cholesky_ex(A).L, M.linalg.solve_ex(G, B).result,
                M.linalg.pinv(A, hermitian=True), M.linalg.det(G), M.linalg.slogdet(G)[1],
                M.linalg.svd(G)[1], M.linalg.matrix_exp(G[1] * 0.2))
    run_both(f, [A, G, B, W])


MORE_POOLS = [
    ("max_pool2d", (1, 2, 9, 9), dict(kernel_size=3, stride=2, padding=1, dilation=2,
                                      ceil_mode=True, return_indices=True)),
    ("max_pool3d", (1, 2, 5, 6, 7), dict(kernel_size=(2, 3, 2), stride=(1, 2, 2), padding=1,
                                         return_indices=True)),
    ("avg_pool1d", (2, 3, 10), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                    count_include_pad=False)),
    ("avg_pool3d", (1, 2, 5, 6, 7), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("avg_pool3d", (1, 2, 4, 4, 4), dict(kernel_size=2, divisor_override=5)),
    ("adaptive_max_pool3d", (1, 2, 5, 7, 6), dict(output_size=(3, 4, 5))),
    ("adaptive_max_pool3d", (2, 5, 7, 6), dict(output_size=(2, None, 4), return_indices=True)),
    ("adaptive_max_pool2d", (1, 2, 5, 7), dict(output_size=(3, 5))),
    ("adaptive_avg_pool2d", (1, 2, 5, 7), dict(output_size=(10, 9))),
    ("lp_pool1d", (1, 2, 9), dict(norm_type=3, kernel_size=3, stride=2)),
    ("lp_pool2d", (1, 2, 7, 7), dict(norm_type=1, kernel_size=3, stride=2, ceil_mode=True)),
    ("lp_pool3d", (1, 2, 4, 4, 4), dict(norm_type=2, kernel_size=2)),
]


@pytest.mark.parametrize("case", MORE_POOLS, ids=[f"{c[0]}-{i}" for i, c in
                                                  enumerate(MORE_POOLS)])
def test_more_pools(case):
    name, xs, kw = case
    x = R(*xs, seed=5)
    if name.startswith("lp_pool") and kw["norm_type"] != 2:
        x = np.abs(x) + 0.1
    run_both(lambda M, x: getattr(_F(M), name)(x, **kw), [x])


def test_max_unpool_1d_3d():
    def f(M, x, y):
        a, i = _F(M).max_pool1d(x, 2, return_indices=True)
        b, j = _F(M).max_pool3d(y, 2, return_indices=True)
        return (_F(M).max_unpool1d(a, i, 2, output_size=[9]), _F(M).max_unpool3d(b, j, 2),
                _F(M).max_unpool1d(a, i, 2))
    run_both(f, [R(2, 3, 9, seed=1), R(1, 2, 4, 4, 4, seed=2)])


def test_conv3d_transpose_and_same_even():
    x, w = R(1, 2, 4, 5, 4, seed=1), R(2, 3, 3, 2, 3, seed=2)
    x2, w2 = R(1, 2, 6, 7, seed=3), R(3, 2, 4, 2, seed=4)
    run_both(lambda M, x, w, x2, w2: (
        _F(M).conv_transpose3d(x, w, stride=(2, 1, 2), padding=1, output_padding=(1, 0, 0)),
        _F(M).conv2d(x2, w2, padding="same", dilation=(1, 2)),
        _F(M).conv1d(x2[:, :, 0], w2[:, :, :, 0], padding="same"),
        _F(M).conv3d(x, w.transpose(0, 1), padding="same")), [x, w, x2, w2])


def test_grid_sample_3d():
    x = R(1, 2, 4, 5, 3, seed=1)
    theta = R(1, 3, 4, seed=2) * 0.2 + np.eye(3, 4)
    for ac in (False, True):
        for pm in ("zeros", "border", "reflection"):
            run_both(lambda M, x, t, ac=ac, pm=pm: _F(M).grid_sample(
                x, _F(M).affine_grid(t, [1, 2, 3, 4, 2], align_corners=ac),
                padding_mode=pm, align_corners=ac), [x, theta])


def test_interpolate_more():
    x = R(1, 2, 5, 7, seed=1)
    run_both(lambda M, x: (
        _F(M).interpolate(x, scale_factor=(1.7, 0.6), mode="nearest"),
        _F(M).interpolate(x, scale_factor=(1.7, 0.6), mode="bilinear",
                          recompute_scale_factor=True),
        _F(M).interpolate(x, scale_factor=1.3, mode="bicubic"),
        _F(M).interpolate(x, size=(3, 4), mode="bicubic", align_corners=True),
        _F(M).interpolate(x, scale_factor=0.6, mode="nearest-exact"),
        _F(M).interpolate(x, size=(1, 1), mode="bilinear", align_corners=True),
        _F(M).interpolate(x[:, :, 0], scale_factor=0.5, mode="linear"),
        _F(M).interpolate(x[..., None], size=(7, 5, 2), mode="area"),
        _F(M).upsample_bilinear(x, scale_factor=2), _F(M).upsample_nearest(x, size=(6, 6))),
        [x])


def test_embedding_bag_functional():
    w = R(10, 3, seed=1)
    inp = np.array([1, 2, 4, 5, 4, 3, 2, 9])
    offs = np.array([0, 2, 2, 5])
    psw = R(8, seed=2)

    def f(M, w, psw):
        i, o = M.from_numpy(inp), M.from_numpy(offs)
        F = _F(M)
        return (F.embedding_bag(i, w, o, mode="sum"), F.embedding_bag(i, w, o, mode="mean"),
                F.embedding_bag(i, w, o, mode="max"),
                F.embedding_bag(i, w, o, mode="sum", per_sample_weights=psw),
                F.embedding_bag(i, w, o, mode="mean", padding_idx=4),
                F.embedding_bag(i, w, o, mode="sum", include_last_offset=True),
                F.embedding_bag(i.view(2, 4), w, mode="mean"))
    run_both(f, [w, psw])


def test_more_losses():
    x = R(3, 4, 2, 2, seed=1)
    y = RI(3, 2, 2, high=4, seed=2)
    p = np.abs(R(3, 4, 2, 2, seed=3))
    p /= p.sum(1, keepdims=True)
    w = R(4, pos=True, seed=4)
    lx = R(3, 5, seed=5)

    def f(M, x, p, w, lx):
        F = _F(M)
        yi = M.from_numpy(y)
        return (F.cross_entropy(x, p, label_smoothing=0.25),
                F.cross_entropy(x, yi, weight=w, label_smoothing=0.2, reduction="sum"),
                F.nll_loss(F.log_softmax(x, 1), yi, weight=w, reduction="none"),
                F.kl_div(F.log_softmax(lx, 1), F.softmax(lx.detach() * 2, 1),
                         reduction="batchmean"),
                F.kl_div(F.log_softmax(lx, 1), F.log_softmax(lx.detach() * 2, 1),
                         reduction="batchmean", log_target=True),
                F.binary_cross_entropy_with_logits(lx, (lx.detach() > 0).to(lx.dtype),
                                                   pos_weight=w[:1].detach() * 3),
                F.poisson_nll_loss(lx, lx.detach().abs(), eps=1e-2),
                F.gaussian_nll_loss(lx, lx.detach() * 0.5, lx.detach().abs() + 0.1,
                                    eps=0.2),
                F.gaussian_nll_loss(lx[0], lx[1].detach(), lx[2].detach().abs()))
    run_both(f, [x, p, w, lx], nograd_idx=(1, 2))


@pytest.mark.parametrize("cls,args,target", [
    ("CrossEntropyLoss", dict(label_smoothing=0.1), "cls"),
    ("NLLLoss", dict(ignore_index=1), "cls"),
    ("MultiMarginLoss", dict(margin=0.5), "cls"),
    ("BCEWithLogitsLoss", dict(reduction="sum"), "bin"),
    ("HuberLoss", dict(delta=0.3), "real"),
    ("SmoothL1Loss", dict(beta=2.0), "real"),
    ("KLDivLoss", dict(reduction="batchmean"), "real"),
    ("SoftMarginLoss", {}, "sign"),
    ("MultiLabelSoftMarginLoss", {}, "bin"),
    ("L1Loss", dict(reduction="none"), "real"),
])
def test_loss_modules(cls, args, target):
    x = R(4, 3, seed=1)
    t = {"cls": RI(4, high=3, seed=2), "bin": (R(4, 3, seed=3) > 0).astype(np.float64),
         "real": R(4, 3, seed=4), "sign": np.sign(R(4, 3, seed=5))}[target]
    run_both(lambda M, x: getattr(M.nn, cls)(**args)(x, M.from_numpy(t)), [x])


def test_modules_misc():
    x = R(2, 4, 6, 6, seed=1)
    makes = [
        lambda M: M.nn.PReLU(4), lambda M: M.nn.Upsample(scale_factor=2, mode="bilinear"),
        lambda M: M.nn.Unfold(3, padding=1, stride=2), lambda M: M.nn.PixelShuffle(2),
        lambda M: M.nn.Sequential(M.nn.Conv2d(4, 6, 3, groups=2, bias=False),
                                  M.nn.InstanceNorm2d(6, affine=True), M.nn.SiLU(),
                                  M.nn.ZeroPad2d((1, 0, 2, 1)), M.nn.AvgPool2d(2, ceil_mode=True),
                                  M.nn.Dropout(0.3)).eval(),
        lambda M: M.nn.Sequential(M.nn.Flatten(), M.nn.Linear(144, 8), M.nn.LayerNorm(8),
                                  M.nn.Mish(), M.nn.Linear(8, 3), M.nn.LogSoftmax(1)),
        lambda M: M.nn.Sequential(M.nn.Conv2d(4, 3, 1), M.nn.GroupNorm(3, 3),
                                  M.nn.Hardswish(), M.nn.ReflectionPad2d(1),
                                  M.nn.ConvTranspose2d(3, 2, 2, stride=2), M.nn.ELU(),
                                  M.nn.AdaptiveMaxPool2d(3)),
    ]
    for make in makes:
        torch.manual_seed(0)
        tm, fm = make(torch).double(), make(ft).double()
        copy_weights(tm, fm)
        run_both(lambda M, x, tm=tm, fm=fm: (tm if M is torch else fm)(x), [x])
        compare_params_grads(tm, fm, F64)


def test_bilinear_module_and_weight_norm():
    x1, x2 = R(3, 4, seed=1), R(3, 5, seed=2)
    torch.manual_seed(0)
    tm, fm = torch.nn.Bilinear(4, 5, 2).double(), ft.nn.Bilinear(4, 5, 2).double()
    copy_weights(tm, fm)
    run_both(lambda M, a, b: (tm if M is torch else fm)(a, b), [x1, x2])
    compare_params_grads(tm, fm, F64)
    tl = torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(4, 3).double())
    fl = ft.nn.utils.parametrizations.weight_norm(ft.nn.Linear(4, 3).double())
    copy_weights(tl, fl)
    run_both(lambda M, a: (tl if M is torch else fl)(a), [x1])
    compare_params_grads(tl, fl, F64)


def test_swa_utils():
    torch.manual_seed(0)
    tm, fm = _mlp(torch).double(), _mlp(ft).double()
    copy_weights(tm, fm)
    res = []
    for M, m in ((torch, tm), (ft, fm)):
        swa = M.optim.swa_utils.AveragedModel(m)
        ema = M.optim.swa_utils.AveragedModel(
            m, multi_avg_fn=M.optim.swa_utils.get_ema_multi_avg_fn(0.9))
        opt = M.optim.SGD(m.parameters(), lr=0.1)
        sched = M.optim.swa_utils.SWALR(opt, swa_lr=0.05, anneal_epochs=3,
                                        anneal_strategy="cos")
        lrs = []
        for step in range(5):
            opt.zero_grad()
            (m(M.from_numpy(R(6, 4, seed=step))) ** 2).mean().backward()
            opt.step()
            sched.step()
            lrs.append(opt.param_groups[0]["lr"])
            swa.update_parameters(m)
            ema.update_parameters(m)
        res.append((lrs, [_np(p) for p in swa.parameters()], [_np(p) for p in ema.parameters()]))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-12)
    for a, b in zip(res[1][1] + res[1][2], res[0][1] + res[0][2]):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


OPTS2 = [
    ("Adagrad", dict(lr=0.1, maximize=True)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, eps=1e-6, maximize=True)),
    ("Rprop", dict(lr=0.01, maximize=True)),
    ("Adam", dict(lr=0.01, maximize=True, eps=1e-3)),
    ("Adamax", dict(lr=0.02, maximize=True)),
    ("NAdam", dict(lr=0.02, momentum_decay=0.01, weight_decay=0.1)),
    ("SGD", dict(lr=0.1, weight_decay=0.1)),
    ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=0)),
    ("Adadelta", dict(lr=0.5, maximize=True)),
]


@pytest.mark.parametrize("name,kw", OPTS2, ids=[f"{n}-{i}" for i, (n, _) in
                                                enumerate(OPTS2)])
def test_optimizers_more(name, kw):
    test_optimizers(name, kw)


def test_cosine_warm_restarts_fractional_epochs():
    seqs = []
    for M in (torch, ft):
        o = _opt_for_sched(M, "")
        s = M.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.01)
        seq = []
        for epoch in range(8):
            for i in range(4):
                o.step()
                s.step(epoch + i / 4)
                seq.append(o.param_groups[0]["lr"])
        seqs.append(seq)
    np.testing.assert_allclose(seqs[1], seqs[0], rtol=1e-12)


def test_scheduler_state_dict_resume():
    seqs = []
    for M in (torch, ft):
        o = _opt_for_sched(M, "CyclicLR")
        s = M.optim.lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=20)
        seq = []
        for _ in range(7):
            o.step()
            s.step()
        sd = s.state_dict()
        s2 = M.optim.lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=20)
        s2.load_state_dict(sd)
        for _ in range(10):
            o.step()
            s2.step()
            seq.append((o.param_groups[0]["lr"], o.param_groups[0]["momentum"]))
        seqs.append(seq)
    np.testing.assert_allclose(np.array(seqs[1]), np.array(seqs[0]), rtol=1e-12)


@pytest.mark.parametrize("kw", [dict(stride=2, padding=1, output_padding=1),
                                dict(stride=(1, 2, 3), padding=(0, 1, 2), dilation=(2, 1, 1),
                                     groups=2),
                                dict(stride=3, dilation=2, output_padding=(2, 1, 0))])
def test_conv_transpose3d(kw):
    g = kw.get("groups", 1)
    x, w, b = R(2, 4, 3, 4, 5, seed=1), R(4, 3, 2, 3, 3, seed=2), R(3 * g, seed=3)
    run_both(lambda M, x, w, b: (_F(M).conv_transpose3d(x, w, b, **kw),
                                 _F(M).conv_transpose3d(x[0], w, **kw)), [x, w, b])


def test_conv_transpose3d_and_adaptive_max3d_modules():
    x = R(2, 3, 4, 5, 4, seed=1)
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.ConvTranspose3d(3, 2, 3, stride=2, padding=1),
                             torch.nn.AdaptiveMaxPool3d((3, None, 2))).double()
    fm = ft.nn.Sequential(ft.nn.ConvTranspose3d(3, 2, 3, stride=2, padding=1),
                          ft.nn.AdaptiveMaxPool3d((3, None, 2))).double()
    copy_weights(tm, fm)
    run_both(lambda M, x: (tm if M is torch else fm)(x), [x])
    compare_params_grads(tm, fm, F64)
    run_both(lambda M, x: (tm if M is torch else fm)[0](x, output_size=[8, 10, 8]), [x])


# ----------------------------------------------------------------------------- autograd API

def test_autograd_api_hooks_accumulation():
    a = R(3, 4, seed=1)
    res = []
    for M in (torch, ft):
        x = M.from_numpy(a.copy()).requires_grad_()
        y = x.tanh() * 2
        y.register_hook(lambda g: g * 3)
        z = (y ** 2).sum(1)
        z.backward(M.from_numpy(np.array([1.0, -2.0, 0.5])), retain_graph=True)
        z.sum().backward()
        g1 = _np(x.grad).copy()
        x.grad = None
        w = x.exp()
        w.retain_grad()
        (w * x).sum().backward()
        res.append((g1, _np(x.grad), _np(w.grad)))
    for f, t in zip(res[1], res[0]):
        np.testing.assert_allclose(f, t, **F64)


def test_autograd_functional_jacobian_hessian():
    a = R(4, seed=1)

    def fn(x):
        return (x.sin() * x.roll(1)).cumsum(0)

    def scalar(x):
        return (x.exp() * x.roll(1) ** 2).sum() + x.prod()
    tj = torch.autograd.functional.jacobian(fn, torch.from_numpy(a))
    fj = ft.autograd.functional.jacobian(fn, ft.from_numpy(a))
    np.testing.assert_allclose(_np(fj), _np(tj), **F64)
    th = torch.autograd.functional.hessian(scalar, torch.from_numpy(a))
    fh = ft.autograd.functional.hessian(scalar, ft.from_numpy(a))
    np.testing.assert_allclose(_np(fh), _np(th), **F64)
    tv = torch.autograd.functional.vjp(fn, torch.from_numpy(a), torch.from_numpy(a * 2))[1]
    fv = ft.autograd.functional.vjp(fn, ft.from_numpy(a), ft.from_numpy(a * 2))[1]
    np.testing.assert_allclose(_np(fv), _np(tv), **F64)
    tv = torch.autograd.functional.jvp(fn, torch.from_numpy(a), torch.from_numpy(a * 2))[1]
    fv = ft.autograd.functional.jvp(fn, ft.from_numpy(a), ft.from_numpy(a * 2))[1]
    np.testing.assert_allclose(_np(fv), _np(tv), **F64)


def test_func_transforms():
    a, b = R(5, 3, seed=1), R(3, seed=2)

    def f(x, w):
        return ((x * w).sum(-1).tanh() ** 2).sum()
    res = []
    for M in (torch, ft):
        x, w = M.from_numpy(a.copy()), M.from_numpy(b.copy())
        g = M.func.grad(f, argnums=(0, 1))(x, w)
        per = M.func.vmap(M.func.grad(f, argnums=1), in_dims=(0, None))(x[:, None], w)
        jr = M.func.jacrev(lambda v, w=w: (v.sin() * w).cumsum(0))(w)
        h = M.func.hessian(lambda v, w=w: (v.exp() * w).sum() ** 2)(w)
        res.append([_np(t) for t in (*g, per, jr, h)])
    for f_, t in zip(res[1], res[0]):
        np.testing.assert_allclose(f_, t, **F64)


# ----------------------------------------------------------------------------- more modules

def test_mha_3d_mask_and_eval_fastpath():
    E, nh, L, N = 8, 2, 5, 3
    x = R(N, L, E, seed=1)
    m3 = R(N * nh, L, L, seed=2)
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(E, nh, batch_first=True).double()
    fm = ft.nn.MultiheadAttention(E, nh, batch_first=True).double()
    copy_weights(tm, fm)
    run_both(lambda M, x: (tm if M is torch else fm)(x, x, x, attn_mask=M.from_numpy(m3),
                                                     average_attn_weights=False), [x])
    compare_params_grads(tm, fm, F64)
    tm.eval()
    fm.eval()
    kpm = np.zeros((N, L), dtype=bool)
    kpm[0, -1] = True
    with torch.no_grad(), ft.no_grad():
        to = tm(*(torch.from_numpy(x),) * 3, key_padding_mask=torch.from_numpy(kpm))
        fo = fm(*(ft.from_numpy(x),) * 3, key_padding_mask=ft.from_numpy(kpm))
    np.testing.assert_allclose(_np(fo[0]), _np(to[0]), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(_np(fo[1]), _np(to[1]), rtol=1e-6, atol=1e-8)


def test_transformer_encoder_eval_no_grad():
    E = 8
    x = R(2, 5, E, seed=1)
    kpm = np.zeros((2, 5), dtype=bool)
    kpm[1, 3:] = True

    def make(M):
        layer = M.nn.TransformerEncoderLayer(E, 2, 16, dropout=0.1, batch_first=True)
        return M.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    torch.manual_seed(0)
    tm, fm = make(torch).double().eval(), make(ft).double().eval()
    copy_weights(tm, fm)
    with torch.no_grad(), ft.no_grad():
        to = tm(torch.from_numpy(x), src_key_padding_mask=torch.from_numpy(kpm))
        fo = fm(ft.from_numpy(x), src_key_padding_mask=ft.from_numpy(kpm))
    np.testing.assert_allclose(_np(fo)[0], _np(to)[0], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(_np(fo)[1, :3], _np(to)[1, :3], rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("kind,kw", [
    ("LSTM", dict(num_layers=2, bidirectional=True, proj_size=2)),
    ("GRU", dict(num_layers=2, dropout=0.5)),
    ("RNN", dict(nonlinearity="tanh", bias=False, bidirectional=True)),
])
def test_rnn_more(kind, kw):
    x = R(4, 3, seed=1)  # unbatched (L, H_in)
    torch.manual_seed(0)
    tm = getattr(torch.nn, kind)(3, 4, **kw).double().eval()
    fm = getattr(ft.nn, kind)(3, 4, **kw).double().eval()
    copy_weights(tm, fm)
    run_both(lambda M, x: (tm if M is torch else fm)(x), [x])
    compare_params_grads(tm, fm, F64)


def test_sdpa_gqa_and_3d():
    q, k, v = R(2, 4, 3, 6, seed=1), R(2, 2, 5, 6, seed=2), R(2, 2, 5, 4, seed=3)
    run_both(lambda M, q, k, v: (
        _F(M).scaled_dot_product_attention(q, k, v, enable_gqa=True),
        _F(M).scaled_dot_product_attention(q[0], k[0, :1].expand(4, 5, 6), v[0, :1]
                                           .expand(4, 5, 4), is_causal=True)), [q, k, v])


def test_loss_more_edges():
    x = R(5, seed=1)
    p = np.array([0.0, 1.0, 0.3, 1.0, 0.0])
    t = np.array([0.0, 1.0, 1.0, 0.0, 1.0])

    def f(M, x, p):
        F = _F(M)
        return (F.nll_loss(F.log_softmax(x, 0), M.from_numpy(np.array(3))),
                F.binary_cross_entropy(p, M.from_numpy(t), reduction="none"),
                F.kl_div(F.log_softmax(x, 0), M.from_numpy(np.array([0.0, 0.2, 0.3, 0.5, 0.0])),
                         reduction="sum"),
                F.poisson_nll_loss(x, M.from_numpy(np.array([0.0, 1.0, 2.0, 3.5, 0.5])),
                                   full=True, reduction="none"),
                F.cross_entropy(x[None, :, None].expand(2, 5, 3),
                                M.from_numpy(np.abs(R(2, 5, 3, seed=3))),
                                weight=M.from_numpy(np.arange(1.0, 6.0)),
                                label_smoothing=0.1),
                F.ctc_loss(F.log_softmax(x[None, None].expand(6, 1, 5), 2),
                           M.from_numpy(np.array([[2, 2]])), [6], [2], blank=4))
    run_both(f, [x, p], nograd_idx=(1,))


def test_optimizer_flags_zero_grad_add_group():
    torch.manual_seed(0)
    tm, fm = _mlp(torch).double(), _mlp(ft).double()
    copy_weights(tm, fm)
    to = torch.optim.Adam(tm[0].parameters(), lr=0.01, foreach=False)
    fo = ft.optim.Adam(fm[0].parameters(), lr=0.01, foreach=False)
    x, y = R(8, 4, seed=1), R(8, 2, seed=2)
    for step in range(5):
        if step == 2:
            to.add_param_group({"params": tm[2].parameters(), "lr": 0.05})
            fo.add_param_group({"params": fm[2].parameters(), "lr": 0.05})
        for M, m, o in ((torch, tm, to), (ft, fm, fo)):
            o.zero_grad(set_to_none=(step % 2 == 0))
            ((m(M.from_numpy(x)) - M.from_numpy(y)) ** 2).mean().backward()
            o.step()
    for (k, tp), (_, fp) in zip(tm.named_parameters(), fm.named_parameters()):
        np.testing.assert_allclose(_np(fp), _np(tp), rtol=1e-9, atol=1e-11, err_msg=k)


def test_clip_grad_norm_partial_and_float32():
    torch.manual_seed(0)
    tm, fm = _mlp(torch), _mlp(ft)
    copy_weights(tm, fm)
    x = R(5, 4, seed=1, dtype=np.float32)
    for M, m in ((torch, tm), (ft, fm)):
        (m(M.from_numpy(x))[:, 0] ** 2).sum().backward()
        m[2].bias.grad = None
    tn = torch.nn.utils.clip_grad_norm_(tm.parameters(), 0.1)
    fn = ft.nn.utils.clip_grad_norm_(fm.parameters(), 0.1)
    np.testing.assert_allclose(float(fn), float(tn), rtol=1e-6)
    compare_params_grads(tm, fm, F32)
    tn = torch.nn.utils.clip_grad_norm_(tm.parameters(), 1e3, norm_type=3)
    fn = ft.nn.utils.clip_grad_norm_(fm.parameters(), 1e3, norm_type=3)
    np.testing.assert_allclose(float(fn), float(tn), rtol=1e-6)
    compare_params_grads(tm, fm, F32)


# ----------------------------------------------------------------------------- batch 5

def test_inplace_functional_variants():
    a = R(4, 5, seed=1) * 2

    def f(M, x):
        F = _F(M)
        y = x * 1.0
        outs = []
        for fn in (lambda t: F.relu(t, inplace=True), lambda t: F.leaky_relu(t, 0.1, True),
                   lambda t: F.elu(t, inplace=True), lambda t: F.hardtanh(t, -0.5, 0.5, True),
                   lambda t: F.silu(t, inplace=True), lambda t: F.relu6(t, inplace=True),
                   lambda t: F.threshold(t, 0.2, -1.0, inplace=True),
                   lambda t: F.hardsigmoid(t, inplace=True), lambda t: F.selu(t, True),
                   lambda t: F.celu(t, 0.5, True), lambda t: F.hardswish(t, True),
                   lambda t: F.dropout(t, 0.0, True, True)):
            z = y * 1.0
            outs.append(fn(z) * z)
        return outs
    run_both(f, [a])


def test_embedding_scale_grad_by_freq_and_ignore_default():
    w = R(6, 3, seed=1)
    idx = np.array([[1, 1, 2, 5], [1, 0, 2, 2]])
    x = R(4, 3, seed=2)
    y = np.array([0, -100, 2, -100])

    def f(M, w, x):
        F = _F(M)
        return (F.embedding(M.from_numpy(idx), w, scale_grad_by_freq=True),
                F.embedding(M.from_numpy(idx), w, padding_idx=2, scale_grad_by_freq=True),
                F.cross_entropy(x, M.from_numpy(y)), F.nll_loss(x, M.from_numpy(y)),
                F.softmax(x, 1, dtype=M.float32), F.log_softmax(x.float(), 0, dtype=M.float64))
    run_both(f, [w, x], tol=dict(rtol=1e-6, atol=1e-7))


def test_norm_module_variants():
    x2 = R(6, 4, seed=1)
    x4 = R(3, 4, 2, 3, seed=2)
    makes = [
        (lambda M: M.nn.GroupNorm(2, 4, eps=1e-3), x2),
        (lambda M: M.nn.LayerNorm(4, elementwise_affine=False), x2),
        (lambda M: M.nn.LayerNorm([2, 3], bias=False), x4),
        (lambda M: M.nn.BatchNorm1d(4, affine=False, track_running_stats=False).eval(), x2),
        (lambda M: M.nn.BatchNorm2d(4, track_running_stats=False), x4),
        (lambda M: M.nn.InstanceNorm2d(4, track_running_stats=True).eval(), x4),
        (lambda M: M.nn.InstanceNorm1d(4, affine=True), x4[:, :, 0]),
        (lambda M: M.nn.Softmax2d(), x4), (lambda M: M.nn.Threshold(0.1, 20.0), x4),
        (lambda M: M.nn.Fold((3, 4), 2), R(2, 12, 6, seed=3)),
    ]
    for make, x in makes:
        torch.manual_seed(0)
        tm, fm = make(torch).double(), make(ft).double()
        for p in tm.parameters():
            with torch.no_grad():
                p.copy_(torch.from_numpy(R(*p.shape, seed=5)))
        for b in tm.buffers():
            if b.dtype == torch.float64:
                b.copy_(torch.from_numpy(np.abs(R(*b.shape, seed=6)) + 0.5))
        copy_weights(tm, fm)
        run_both(lambda M, x, tm=tm, fm=fm: (tm if M is torch else fm)(x), [x])
        compare_params_grads(tm, fm, F64)


def test_adaptive_log_softmax():
    x = R(6, 8, seed=1)
    y = np.array([0, 3, 7, 11, 14, 2])
    torch.manual_seed(0)
    tm = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 15, [4, 10], div_value=2.0).double()
    fm = ft.nn.AdaptiveLogSoftmaxWithLoss(8, 15, [4, 10], div_value=2.0).double()
    copy_weights(tm, fm)

    def fn(M, x):
        m = tm if M is torch else fm
        out = m(x, M.from_numpy(y))
        return out.output, out.loss, m.log_prob(x), m.predict(x)
    run_both(fn, [x])
    compare_params_grads(tm, fm, F64)
    run_both(lambda M, x: (tm if M is torch else fm)(x[2], M.tensor(11)), [x])
    for M in (torch, ft):
        with pytest.raises(ValueError):
            M.nn.AdaptiveLogSoftmaxWithLoss(8, 15, [10, 4])


def test_rnn_utils_sequences():
    seqs = [R(4, 2, seed=1), R(2, 2, seed=2), R(3, 2, seed=3)]

    def f(M, a, b, c):
        rnn = M.nn.utils.rnn
        padded = rnn.pad_sequence([a, b, c], batch_first=True, padding_value=-1.0)
        padded2 = rnn.pad_sequence([a, b, c], padding_side="left")
        packed = rnn.pack_sequence([a, c, b])
        un = rnn.unpad_sequence(padded, M.tensor([4, 2, 3]), batch_first=True)
        return padded, padded2, packed.data, packed.batch_sizes, *un
    run_both(f, seqs)


def test_spectral_norm_parametrization():
    x = R(3, 5, seed=1)
    torch.manual_seed(0)
    tm = torch.nn.utils.parametrizations.spectral_norm(torch.nn.Linear(5, 4).double(),
                                                       n_power_iterations=2)
    fm = ft.nn.utils.parametrizations.spectral_norm(ft.nn.Linear(5, 4).double(),
                                                    n_power_iterations=2)
    copy_weights(tm, fm)
    for _ in range(2):
        run_both(lambda M, x: (tm if M is torch else fm)(x), [x])
    compare_params_grads(tm, fm, dict(rtol=1e-6, atol=1e-9))
    tm.eval()
    fm.eval()
    run_both(lambda M, x: (tm if M is torch else fm)(x), [x], tol=dict(rtol=1e-6, atol=1e-9))


def test_init_helpers_deterministic():
    for shape in [(3, 4), (5, 2, 3, 3), (4, 6, 2)]:
        t = torch.empty(shape)
        f = ft.empty(shape)
        assert torch.nn.init._calculate_fan_in_and_fan_out(t) == \
            ft.nn.init._calculate_fan_in_and_fan_out(f)
    for nl, p in [("relu", None), ("leaky_relu", 0.2), ("tanh", None), ("selu", None),
                  ("sigmoid", None), ("conv2d", None)]:
        assert torch.nn.init.calculate_gain(nl, p) == pytest.approx(
            ft.nn.init.calculate_gain(nl, p))
    for init, kw in [("eye_", {}), ("dirac_", {}), ("constant_", dict(val=0.3)),
                     ("zeros_", {}), ("ones_", {})]:
        shape = (3, 3) if init == "eye_" else (4, 2, 3, 3)
        t, f = torch.empty(shape), ft.empty(shape)
        getattr(torch.nn.init, init)(t, **kw)
        getattr(ft.nn.init, init)(f, **kw)
        np.testing.assert_array_equal(_np(f), _np(t))


# ----------------------------------------------------------------------------- batch 6

@pytest.mark.parametrize("case", [
    ("conv2d", (1, 4, 7, 7), (8, 1, 3, 3), dict(groups=4, stride=3)),
    ("conv2d", (2, 3, 5, 5), (2, 3, 1, 1), dict(stride=2, padding=3)),
    ("conv2d", (1, 2, 4, 4), (3, 2, 2, 2), dict(padding=(3, 0), dilation=3)),
    ("conv1d", (2, 6, 9), (6, 1, 4), dict(groups=6, stride=4, padding=2)),
    ("conv_transpose2d", (1, 2, 3, 3), (2, 3, 3, 3), dict(stride=2, padding=2,
                                                           output_padding=1, dilation=2)),
    ("conv_transpose2d", (1, 4, 3, 2), (4, 1, 1, 1), dict(stride=3, groups=4)),
    ("conv_transpose1d", (2, 3, 5), (3, 2, 4), dict(stride=3, padding=3, output_padding=2)),
], ids=lambda c: c[0])
def test_conv_odd_shapes_float32(case):
    name, xs, ws, kw = case
    run_both(lambda M, x, w: getattr(_F(M), name)(x, w, **kw),
             [R(*xs, seed=1, dtype=np.float32), R(*ws, seed=2, dtype=np.float32)], tol=F32)


def test_unfold_fold_dilation():
    x = R(2, 3, 7, 6, seed=1)
    run_both(lambda M, x: (
        _F(M).unfold(x, (2, 3), dilation=(2, 1), padding=(1, 2), stride=(2, 1)),
        _F(M).fold(_F(M).unfold(x, 3, dilation=2, padding=1, stride=2), (7, 6), 3, dilation=2,
                   padding=1, stride=2)), [x])


def test_pool_padding_edges():
    x = R(1, 2, 6, 7, seed=1)
    run_both(lambda M, x: (
        _F(M).max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True),
        _F(M).avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True),
        _F(M).avg_pool2d(x, (2, 3), stride=(3, 2), padding=(1, 1), ceil_mode=True,
                         count_include_pad=True),
        _F(M).max_pool2d(x, (1, 3), stride=(1, 1), padding=(0, 1)),
        _F(M).avg_pool1d(x[0], 4, stride=3, padding=2, ceil_mode=True)), [x])


def test_grid_sample_far_outside():
    x = R(1, 2, 4, 5, seed=1)
    g = R(1, 3, 4, 2, lo=-3.5, hi=3.5, seed=2)
    for mode in ("bilinear", "bicubic"):
        for pm in ("border", "reflection", "zeros"):
            for ac in (True, False):
                run_both(lambda M, x, g, mode=mode, pm=pm, ac=ac: _F(M).grid_sample(
                    x, g, mode=mode, padding_mode=pm, align_corners=ac), [x, g])


def test_masked_softmax_and_stability():
    x = R(3, 5, seed=1)
    mask = np.array([[0, 1, 1, 0, 1], [1, 1, 1, 1, 0], [0, 0, 0, 0, 1]], dtype=bool)
    big = R(4, 6, seed=2, dtype=np.float32) * 1e4
    y = RI(4, high=6, seed=3)

    def f(M, x, big):
        xm = x.masked_fill(M.from_numpy(mask), float("-inf"))
        return (M.softmax(xm, 1), M.log_softmax(xm, 1).masked_fill(M.from_numpy(mask), 0.0),
                _F(M).cross_entropy(big, M.from_numpy(y)), M.logsumexp(big, 1),
                _F(M).softplus(big), _F(M).binary_cross_entropy_with_logits(
                    big, (big.detach() > 0).float()), _F(M).log_softmax(big, 0))
    run_both(f, [x, big], tol=dict(rtol=1e-5, atol=1e-5))


SCHED3 = [
    ("MultiStepLR", dict(milestones=[3, 3, 7], gamma=0.5)),
    ("PolynomialLR", dict(total_iters=8, power=0.5)),
    ("LinearLR", dict(start_factor=1.0, end_factor=0.1, total_iters=9)),
    ("CosineAnnealingLR", dict(T_max=1)),
    ("OneCycleLR", dict(max_lr=0.3, total_steps=31, three_phase=True)),
    ("LambdaLR", dict(lr_lambda=lambda e: 1.0 / (e + 1))),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=3, cycle_momentum=True,
                      base_momentum=0.8, max_momentum=0.95)),
]


@pytest.mark.parametrize("name,kw", SCHED3, ids=[f"{n}-{i}" for i, (n, _) in
                                                 enumerate(SCHED3)])
def test_lr_schedulers_adam_betas(name, kw):
    seqs = []
    for M in (torch, ft):
        p = M.nn.Parameter(M.zeros(2))
        o = M.optim.Adam([p], lr=0.1, betas=(0.9, 0.99))
        s = getattr(M.optim.lr_scheduler, name)(o, **kw)
        seq = [[s.get_last_lr()[0], *o.param_groups[0]["betas"]]]
        for _ in range(30):
            o.step()
            s.step()
            seq.append([s.get_last_lr()[0], *o.param_groups[0]["betas"]])
        seqs.append(seq)
    np.testing.assert_allclose(np.array(seqs[1]), np.array(seqs[0]), rtol=1e-10, atol=1e-12)


def test_optimizer_argument_errors():
    for M in (torch, ft):
        p = [M.nn.Parameter(M.zeros(2))]
        with pytest.raises(ValueError):
            M.optim.SGD(p, lr=0.1, nesterov=True)
        with pytest.raises(ValueError):
            M.optim.Adam(p, lr=-1.0)
        with pytest.raises(ValueError):
            M.optim.Adam(p, lr=0.1, betas=(1.0, 0.9))
        with pytest.raises(ValueError):
            M.optim.RMSprop(p, lr=0.1, alpha=-0.1)


# ----------------------------------------------------------------------------- batch 7

def test_index_ops_ties_and_non_grad():
    a = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, -1.0, 2.0], [0.0, 5.0, 1.0, 5.0]])
    s = np.array([0.5, 1.0, 2.0, 4.0, 9.0])

    def f(M, x):
        t = M.from_numpy(s)
        return (M.sort(x, dim=1, stable=True), M.sort(x, dim=0, descending=True, stable=True),
                M.argmax(x, 1), M.argmin(x, 0), M.argmax(x), M.searchsorted(t, x),
                M.searchsorted(t, x, right=True), M.bucketize(x, t),
                M.unique(x, return_inverse=True, return_counts=True),
                M.unique_consecutive(x.reshape(-1), return_counts=True),
                M.histc(x, bins=4, min=-1, max=5), M.bincount(M.from_numpy(np.array([0, 2, 2, 5]))),
                M.count_nonzero(x, 1), M.cummax(x, 0), M.msort(x))
    run_both(f, [a], grad=False)


def test_ctc_zero_length_targets_and_module():
    T, N, C = 8, 3, 5
    logits = R(T, N, C, seed=1)
    targets = np.array([[1, 3, 0], [2, 0, 0], [4, 4, 1]])
    il, tl = np.array([8, 6, 5]), np.array([2, 0, 3])

    def f(M, x):
        lp = _F(M).log_softmax(x, 2)
        return (_F(M).ctc_loss(lp, M.from_numpy(targets), M.from_numpy(il), M.from_numpy(tl)),
                _F(M).ctc_loss(lp, M.from_numpy(targets), M.from_numpy(il), M.from_numpy(tl),
                               reduction="none"),
                M.nn.CTCLoss(blank=2, zero_infinity=True, reduction="sum")(
                    lp, M.from_numpy(np.where(targets == 2, 3, targets)), M.from_numpy(il),
                    M.from_numpy(tl)),
                _F(M).ctc_loss(lp[:, 0], M.from_numpy(targets[2]), [8], [3]))
    run_both(f, [logits])


def test_loss_modules_with_callables():
    a, p, n = R(4, 3, seed=1), R(4, 3, seed=2), R(4, 3, seed=3)
    y = np.array([1.0, -1.0, 1.0, -1.0])

    def f(M, a, p, n):
        dist = M.nn.PairwiseDistance(p=1.5)
        return (M.nn.TripletMarginWithDistanceLoss(distance_function=dist, margin=0.3,
                                                   swap=True)(a, p, n),
                M.nn.TripletMarginWithDistanceLoss(
                    distance_function=lambda u, v: 1 - M.nn.functional.cosine_similarity(u, v),
                    reduction="none")(a, p, n),
                M.nn.MarginRankingLoss(margin=0.1)(a[:, 0], p[:, 0], M.from_numpy(y)),
                M.nn.CosineEmbeddingLoss(margin=-0.2, reduction="sum")(a, p, M.from_numpy(y)),
                M.nn.HingeEmbeddingLoss(margin=0.5)(a, M.from_numpy(np.sign(R(4, 3, seed=9)))),
                M.nn.PoissonNLLLoss(log_input=True, full=True)(a, p.detach().abs() * 3),
                M.nn.GaussianNLLLoss(full=True, eps=1e-3)(a, p, n.detach().abs()),
                M.nn.BCELoss(weight=M.from_numpy(np.array([1.0, 2.0, 0.5])))(
                    a.sigmoid(), (p.detach() > 0).to(a.dtype)),
                M.nn.MultiLabelMarginLoss()(a, M.from_numpy(np.array(
                    [[2, -1, 0], [0, 1, 2], [1, -1, 2], [-1, 0, 0]]))),
                M.nn.KLDivLoss(reduction="sum", log_target=True)(a.log_softmax(1),
                                                                 p.log_softmax(1)))
    run_both(f, [a, p, n])


def test_embedding_bag_max_padding_and_module_weights():
    w = R(7, 3, seed=1)
    inp = np.array([[1, 3, 3], [6, 6, 0], [3, 3, 3]])
    psw = R(3, 3, seed=2)

    def f(M, w, psw, w2):
        F = _F(M)
        i = M.from_numpy(inp)
        return (F.embedding_bag(i, w, mode="max", padding_idx=6),
                F.embedding_bag(i, w, mode="sum", padding_idx=3, per_sample_weights=psw),
                F.embedding_bag(i, w2, mode="mean", max_norm=0.8), w2)
    run_both(f, [w, psw, w.copy()], nograd_idx=(2,))


def test_cosine_similarity_zero_and_tiny_vectors():
    a = np.array([[0.0, 0, 0], [1, 2, 3], [1, 2, 3], [1e-9, 0, 0], [0.3, -2, 1]])
    b = np.array([[1.0, 2, 3], [1, 2, 3], [0, 0, 0], [1e-9, 0, 0], [5, 1, -2]])
    run_both(lambda M, x, y: (_F(M).cosine_similarity(x, y),
                              _F(M).cosine_similarity(x, y[:1], 0),
                              _F(M).cosine_similarity(x[:, None], y[None], -1, eps=1e-3),
                              _F(M).cosine_embedding_loss(x, y, M.ones(5, dtype=M.float64)),
                              _F(M).normalize(x, dim=1), _F(M).normalize(y, p=1, dim=0)),
             [a, b])


@pytest.mark.parametrize("kind,kw", [("GRU", dict(bidirectional=True, num_layers=2)),
                                     ("LSTM", dict(proj_size=2)),
                                     ("RNN", dict(batch_first=True, nonlinearity="relu"))])
def test_packed_unsorted_with_h0(kind, kw):
    lengths = [2, 5, 3]
    bf = kw.get("batch_first", False)
    x = R(3, 5, 4, seed=1) if bf else R(5, 3, 4, seed=1)
    L = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    hout = kw.get("proj_size", 0) or 3
    h0, c0 = R(L, 3, hout, seed=2), R(L, 3, 3, seed=3)
    torch.manual_seed(0)
    tm = getattr(torch.nn, kind)(4, 3, **kw).double()
    fm = getattr(ft.nn, kind)(4, 3, **kw).double()
    copy_weights(tm, fm)

    def fn(M, x, h0, c0):
        m = tm if M is torch else fm
        rnn = M.nn.utils.rnn
        packed = rnn.pack_padded_sequence(x, lengths, batch_first=bf, enforce_sorted=False)
        out, h = m(packed, (h0, c0) if kind == "LSTM" else h0)
        pad, lens = rnn.pad_packed_sequence(out, batch_first=bf)
        return pad, h, lens, packed.sorted_indices, packed.unsorted_indices
    run_both(fn, [x, h0, c0])
    compare_params_grads(tm, fm, F64)


@pytest.mark.parametrize("name,kw", [("RAdam", dict(lr=0.05, betas=(0.9, 0.9))),
                                     ("NAdam", dict(lr=0.05)), ("Rprop", dict(lr=0.05)),
                                     ("ASGD", dict(lr=0.05, t0=5)),
                                     ("Adagrad", dict(lr=0.3, lr_decay=0.1))],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_optimizers_long(name, kw):
    test_optimizers(name, kw, steps=15)


@pytest.mark.parametrize("make", [
    lambda M: M.nn.LSTM(3, 4, 2, bidirectional=True, proj_size=2),
    lambda M: M.nn.MultiheadAttention(8, 2, kdim=3, vdim=5, add_bias_kv=True),
    lambda M: M.nn.Transformer(8, 2, 1, 1, 16, batch_first=True),
    lambda M: M.nn.GRU(3, 4, 2), lambda M: M.nn.BatchNorm2d(3),
    lambda M: M.nn.AdaptiveLogSoftmaxWithLoss(8, 15, [4, 10]),
    lambda M: M.nn.TransformerDecoderLayer(8, 2, 16),
    lambda M: M.nn.utils.parametrizations.weight_norm(M.nn.Linear(3, 2)),
    lambda M: M.nn.ConvTranspose3d(2, 4, 3, groups=2),
], ids=lambda f: "")
def test_parameter_and_state_dict_names(make):
    t, f = make(torch), make(ft)
    assert [k for k, _ in f.named_parameters()] == [k for k, _ in t.named_parameters()]
    assert list(f.state_dict()) == list(t.state_dict())
    for (k, tp), (_, fp) in zip(t.state_dict().items(), f.state_dict().items()):
        assert tuple(fp.shape) == tuple(tp.shape), k


MISC_F = {
    "rms_norm_f32_default_eps": (lambda M, x: _F(M).rms_norm(x.float() * 1e-4, (5,)).double(),
                                 [R(3, 5)], F32),
    "lrn_3d": (lambda M, x: _F(M).local_response_norm(x, 2, alpha=0.1, beta=0.5, k=2.0),
               [R(2, 5, 7)], F64),
    "lrn_5d": (lambda M, x: _F(M).local_response_norm(x, 3), [R(1, 4, 3, 3, 2)], F64),
    "bicubic_down": (lambda M, x: _F(M).interpolate(x, scale_factor=0.45, mode="bicubic"),
                     [R(1, 2, 9, 7)], F64),
    "bilinear_ac_up": (lambda M, x: _F(M).interpolate(x, size=(13, 2), mode="bilinear",
                                                      align_corners=True), [R(1, 2, 4, 5)], F64),
    "trilinear_ac": (lambda M, x: _F(M).interpolate(x, scale_factor=(1.5, 2, 0.5),
                                                    mode="trilinear", align_corners=True),
                     [R(1, 2, 3, 4, 6)], F64),
    "glu_softmin_dim0": (lambda M, x: (_F(M).glu(x, 0), _F(M).softmin(x, dim=0)), [R(4, 3)],
                         F64),
    "saturating_acts": (lambda M, x: (_F(M).logsigmoid(x * 100),
                                      _F(M).softplus(x * 30, beta=0.5, threshold=5),
                                      _F(M).gelu(x * 10, approximate="tanh"),
                                      _F(M).mish(x * 30), _F(M).elu(x, alpha=-0.5),
                                      _F(M).hardshrink(x, 0.7) + _F(M).softshrink(x, 0.2),
                                      _F(M).rrelu(x, 0.1, 0.3)), [R(4, 3)], F64),
    "prelu_single": (lambda M, x, w: _F(M).prelu(x, w[:1]), [R(2, 3, 4), R(3)], F64),
    "nll_2d_weight_ignore": (lambda M, x: _F(M).nll_loss(
        x.log_softmax(1), M.tensor([[0, 2], [1, -100]]),
        weight=M.tensor([1.0, 2.0, 3.0], dtype=M.float64)), [R(2, 3, 2)], F64),
    "huber_small_delta": (lambda M, x: _F(M).huber_loss(x, x.detach() * 0.5, delta=0.01,
                                                        reduction="none"), [R(3, 3)], F64),
}


@pytest.mark.parametrize("name", sorted(MISC_F))
def test_misc_functional(name):
    fn, arrays, tol = MISC_F[name]
    run_both(fn, arrays, tol=tol)
