"""Realistic programs that lean on linear algebra, run end to end on ``cpu`` and on ``cuda``
from the same seeded inputs: Gaussian-process regression, PCA, ridge regression, whitening,
multivariate normal densities, Newton's method, a Kalman filter, orthogonal weights, spectral
norms, rotations, ensemble votes, a linear normalising flow, Bayesian linear regression and an
implicit heat-equation solver. Values, losses per step, gradients and final parameters are
compared between the devices (float64 to 1e-8, float32 to 1e-4), results stay on the device,
and no op of the program goes through the host fallback (``_C._cuda_host_fallback_ops()``).
Quantities only defined up to sign (singular / eigen vectors) are compared in sign-invariant
form. Needs CUDA (`pytest -m cuda`; the CPU emulator of tools/cuda_emu counts)."""

import math

import numpy as np
import pytest

import ferrotorch as torch

HAS_CUDA = torch.cuda.is_available()
pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device: "
                       + str(torch._C._cuda_unavailable_reason())),
]

la = torch.linalg
F64 = {"rtol": 1e-8, "atol": 1e-8}
F32 = {"rtol": 1e-4, "atol": 1e-4}
DTYPES = [torch.float32, torch.float64]


def tol_for(dtype):
    return F32 if dtype == torch.float32 else F64


def to_np(x):
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def assert_same(cpu, gpu, path="", **tol):
    """Compare nested results (dicts / lists / tensors / numbers) of the two devices; every
    tensor of the CUDA run must live on the device."""
    if isinstance(cpu, dict):
        assert cpu.keys() == gpu.keys(), path
        for k in cpu:
            assert_same(cpu[k], gpu[k], f"{path}.{k}", **tol)
    elif isinstance(cpu, (list, tuple)):
        assert len(cpu) == len(gpu), path
        for i, (a, b) in enumerate(zip(cpu, gpu)):
            assert_same(a, b, f"{path}[{i}]", **tol)
    else:
        if isinstance(cpu, torch.Tensor):
            assert isinstance(gpu, torch.Tensor), path
            assert cpu.device.type == "cpu", (path, cpu.device)
            assert gpu.device.type == "cuda", (path, gpu.device)
            assert cpu.dtype == gpu.dtype, (path, cpu.dtype, gpu.dtype)
        a, b = to_np(cpu), to_np(gpu)
        assert a.shape == b.shape, (path, a.shape, b.shape)
        if a.dtype.kind in "iub":
            np.testing.assert_array_equal(b, a, err_msg=path)
        else:
            np.testing.assert_allclose(b, a, err_msg=path, **tol)


def run_both(program, tol=F64):
    """``program(device)`` returns a nested result; run it on cpu and on cuda, compare, and
    check that the CUDA run sent no op through the host fallback."""
    before = set(torch._C._cuda_host_fallback_ops())
    cpu = program("cpu")
    gpu = program("cuda")
    via_host = set(torch._C._cuda_host_fallback_ops()) - before
    assert not via_host, f"went through the host: {sorted(via_host)}"
    assert_same(cpu, gpu, **tol)
    return cpu, gpu


def data(shape, seed, dtype=torch.float64, scale=1.0):
    rng = np.random.default_rng(seed)
    return torch.from_numpy(rng.standard_normal(shape) * scale).to(dtype)


def leaf(t, device):
    return t.detach().to(device).clone().requires_grad_(True)


def eye(n, like):
    return torch.eye(n, dtype=like.dtype, device=like.device)


# ------------------------------------------------------------------------- Gaussian processes


def rbf(x1, x2, log_ls, log_sf):
    d2 = ((x1.unsqueeze(-2) - x2.unsqueeze(-3)) ** 2).sum(-1)
    return torch.exp(2 * log_sf) * torch.exp(-0.5 * d2 / torch.exp(2 * log_ls))


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
def test_gp_regression_marginal_likelihood_with_adam(dtype):
    # Batch of 2 independent 1-d GPs; the inputs are a non-contiguous (transposed) view.
    xs = torch.linspace(-3, 3, 14, dtype=torch.float64)
    x_all = torch.stack([xs, xs * 0.7 + 0.2]).to(dtype)             # (2, 14)
    y_all = (torch.sin(x_all * 1.3) + 0.1 * data((2, 14), 1)).to(dtype)
    x_test = torch.linspace(-3.5, 3.5, 9, dtype=dtype).expand(2, 9)
    n = 14

    def program(device):
        x = x_all.to(device).t().unsqueeze(-1).transpose(0, 1)      # (2, 14, 1), view
        xt = x_test.to(device).unsqueeze(-1)
        y = y_all.to(device).unsqueeze(-1)
        log_ls = leaf(torch.tensor([0.3, -0.2], dtype=dtype), device)
        log_sf = leaf(torch.tensor([0.0, 0.1], dtype=dtype), device)
        log_sn = leaf(torch.tensor([-1.5, -1.0], dtype=dtype), device)
        opt = torch.optim.Adam([log_ls, log_sf, log_sn], lr=0.05)
        losses, grads = [], []
        for _ in range(5):
            opt.zero_grad()
            K = rbf(x, x, log_ls[:, None, None], log_sf[:, None, None])
            K = K + torch.exp(2 * log_sn)[:, None, None] * eye(n, K)
            L = la.cholesky(K)
            alpha = torch.cholesky_solve(y, L)
            nll = (0.5 * (y * alpha).sum((-2, -1)) + torch.log(torch.diagonal(L, 0, -2, -1)).sum(-1)
                   + 0.5 * n * math.log(2 * math.pi))
            loss = nll.sum()
            loss.backward()
            losses.append(loss.detach())
            grads.append(torch.stack([log_ls.grad, log_sf.grad, log_sn.grad]).clone())
            opt.step()
        with torch.no_grad():
            K = rbf(x, x, log_ls[:, None, None], log_sf[:, None, None])
            K = K + torch.exp(2 * log_sn)[:, None, None] * eye(n, K)
            L = la.cholesky(K)
            Ks = rbf(xt, x, log_ls[:, None, None], log_sf[:, None, None])   # (2, 9, 14)
            mean = Ks @ torch.cholesky_solve(y, L)
            v = la.solve_triangular(L, Ks.transpose(-2, -1), upper=False)
            var = torch.exp(2 * log_sf)[:, None] - (v ** 2).sum(-2)
            # Three ways to the log-determinant agree with 2 * sum(log diag L).
            ld_chol = 2 * torch.log(torch.diagonal(L, 0, -2, -1)).sum(-1)
            sign, ld = la.slogdet(K)
            assert np.allclose(to_np(sign), 1.0)
            assert np.allclose(to_np(ld), to_np(ld_chol), **tol_for(dtype))
            assert np.allclose(to_np(torch.logdet(K)), to_np(ld_chol), **tol_for(dtype))
        return {"losses": losses, "grads": grads, "mean": mean, "var": var, "logdet": ld,
                "params": [log_ls, log_sf, log_sn]}

    cpu, _ = run_both(program, tol_for(dtype))
    assert to_np(cpu["losses"][-1]) < to_np(cpu["losses"][0])  # Adam improves the fit
    assert (to_np(cpu["var"]) > 0).all()


# ------------------------------------------------------------------------------------ PCA


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
def test_pca_via_svd_and_eigh(dtype):
    rng = np.random.default_rng(2)
    latent = rng.standard_normal((40, 3)) * np.array([3.0, 1.5, 0.5])
    mix = rng.standard_normal((3, 6))
    x_np = latent @ mix + 0.05 * rng.standard_normal((40, 6))
    x_all = torch.from_numpy(x_np).to(dtype)

    def program(device):
        x = x_all.to(device)
        xc = x - x.mean(0, keepdim=True)
        U, S, Vh = la.svd(xc, full_matrices=False)
        explained = S ** 2 / (x.shape[0] - 1)
        ratio = explained / explained.sum()
        k = 3
        comps = Vh[:k]                                  # (3, 6)
        scores = xc @ comps.t()
        recon = scores @ comps + x.mean(0, keepdim=True)
        # The same spectrum from the covariance matrix.
        cov = xc.t() @ xc / (x.shape[0] - 1)
        evals, evecs = la.eigh(cov)
        top = evecs.flip(-1)[:, :k]                     # descending order
        proj_eigh = top @ top.t()                       # projector: sign invariant
        proj_svd = comps.t() @ comps
        assert np.allclose(to_np(proj_eigh), to_np(proj_svd), atol=1e-3)
        assert np.allclose(to_np(evals.flip(-1)), to_np(explained), **tol_for(dtype))
        return {"S": S, "ratio": ratio, "abs_comps": comps.abs(), "abs_scores": scores.abs(),
                "recon": recon, "evals": evals, "proj": proj_eigh, "svdvals": la.svdvals(xc),
                "US_abs": (U[:, :k] * S[:k]).abs()}

    cpu, _ = run_both(program, tol_for(dtype))
    assert to_np(cpu["ratio"])[:3].sum() > 0.99
    np.testing.assert_allclose(to_np(cpu["recon"]), x_np, atol=0.2)


# ---------------------------------------------------------------------- ridge / least squares


def test_ridge_regression_closed_form_vs_gradient_descent():
    x_all = data((30, 4), 3)
    w_true = torch.tensor([[1.5], [-2.0], [0.5], [0.0]], dtype=torch.float64)
    y_all = x_all @ w_true + 0.1 * data((30, 1), 4)
    lam = 0.3

    def program(device):
        X = torch.cat([x_all.to(device), torch.ones(30, 1, dtype=torch.float64,
                                                     device=device)], 1)   # bias column
        y = y_all.to(device)
        n_feat = X.shape[1]
        # Ridge through the normal equations and through an augmented least-squares system.
        A = X.t() @ X + lam * eye(n_feat, X)
        w_solve = la.solve(A, X.t() @ y)
        X_aug = torch.cat([X, math.sqrt(lam) * eye(n_feat, X)], 0)
        y_aug = torch.cat([y, torch.zeros(n_feat, 1, dtype=y.dtype, device=device)], 0)
        fit = la.lstsq(X_aug, y_aug, driver="gels")  # CUDA's driver, residuals too
        w_pinv = la.pinv(X_aug) @ y_aug
        # Plain least squares three ways.
        ols = la.lstsq(X, y).solution
        ols_pinv = la.pinv(X) @ y
        ols_chol = torch.cholesky_solve(X.t() @ y, la.cholesky(X.t() @ X))
        # Gradient descent on the same ridge objective converges to the closed form.
        w = torch.zeros(n_feat, 1, dtype=torch.float64, device=device, requires_grad=True)
        opt = torch.optim.SGD([w], lr=0.01, momentum=0.9)
        losses = []
        for _ in range(150):
            opt.zero_grad()
            loss = ((X @ w - y) ** 2).sum() + lam * (w ** 2).sum()
            loss.backward()
            opt.step()
            losses.append(loss.detach())
        for other in (fit.solution, w_pinv):
            assert np.allclose(to_np(other), to_np(w_solve), atol=1e-9)
        for other in (ols_pinv, ols_chol):
            assert np.allclose(to_np(other), to_np(ols), atol=1e-9)
        assert np.allclose(to_np(w), to_np(w_solve), atol=1e-3)
        return {"w_solve": w_solve, "w_lstsq": fit.solution, "residuals": fit.residuals,
                "w_pinv": w_pinv, "ols": ols, "w_gd": w, "losses": losses[::10]}

    cpu, _ = run_both(program)
    np.testing.assert_allclose(to_np(cpu["ols"])[:4], to_np(w_true), atol=0.1)


# -------------------------------------------------------- whitening, Mahalanobis, MVN density


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
def test_zca_whitening_mahalanobis_and_mvn_log_density(dtype):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((4, 4))
    cov_true = a @ a.T + 0.5 * np.eye(4)
    x_np = rng.standard_normal((50, 4)) @ np.linalg.cholesky(cov_true).T + 1.0
    x_all = torch.from_numpy(x_np).to(dtype)
    # Batched densities: 3 Gaussians, 5 query points each.
    covs = torch.from_numpy(np.stack([cov_true, np.eye(4) * 2.0, cov_true + np.eye(4)])).to(dtype)
    mus = data((3, 4), 6, dtype)
    q_all = data((5, 3, 4), 7, dtype)

    def program(device):
        x = x_all.to(device)
        mu = x.mean(0)
        xc = x - mu
        cov = xc.t() @ xc / (x.shape[0] - 1)
        evals, evecs = la.eigh(cov)
        W = evecs @ torch.diag(evals.rsqrt()) @ evecs.t()     # ZCA: sign invariant
        white = xc @ W
        wcov = white.t() @ white / (x.shape[0] - 1)
        assert np.allclose(to_np(wcov), np.eye(4), **tol_for(dtype))
        # Mahalanobis distance through a Cholesky factor vs an explicit inverse.
        L = la.cholesky(cov)
        z = la.solve_triangular(L, xc.t(), upper=False)
        maha = (z ** 2).sum(0)
        maha_inv = ((xc @ la.inv(cov)) * xc).sum(1)
        assert np.allclose(to_np(maha), to_np(maha_inv), **tol_for(dtype))
        # Batched multivariate normal log-density, by hand and through distributions.
        S = covs.to(device)
        m = mus.to(device)
        q = q_all.to(device).transpose(0, 1)                 # (3, 5, 4): non-contiguous
        Ls = la.cholesky(S)
        diff = (q - m.unsqueeze(1)).transpose(-2, -1)        # (3, 4, 5)
        sol = la.solve_triangular(Ls, diff, upper=False)
        half_logdet = torch.log(torch.diagonal(Ls, 0, -2, -1)).sum(-1)
        logp = (-0.5 * (sol ** 2).sum(-2) - half_logdet[:, None]
                - 0.5 * 4 * math.log(2 * math.pi))
        mvn = torch.distributions.MultivariateNormal(m.unsqueeze(1),
                                                     covariance_matrix=S.unsqueeze(1))
        logp_d = mvn.log_prob(q)
        assert np.allclose(to_np(logp_d), to_np(logp), **tol_for(dtype))
        return {"W": W, "white": white, "maha": maha, "logp": logp, "logp_d": logp_d,
                "logdet": torch.logdet(S)}

    run_both(program, {"rtol": 1e-3, "atol": 1e-3} if dtype == torch.float32 else F64)


# --------------------------------------------------------------------------- Newton's method


def test_logistic_regression_newton_steps_with_hessian_solve():
    x_all = data((60, 3), 8)
    w_true = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    noise = data((60,), 9)
    y_all = ((x_all @ w_true + noise) > 0).to(torch.float64)

    def program(device):
        X = x_all.to(device)
        y = y_all.to(device)
        w = torch.zeros(3, dtype=torch.float64, device=device)
        hist, nll = [], []
        for _ in range(8):
            wv = w.clone().requires_grad_(True)
            logits = X @ wv
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, y,
                                                                        reduction="sum")
            loss = loss + 0.5 * 1e-2 * (wv ** 2).sum()
            (g,) = torch.autograd.grad(loss, wv)
            p = torch.sigmoid(X @ w)
            H = X.t() @ (X * (p * (1 - p)).unsqueeze(1)) + 1e-2 * eye(3, X)
            w = w - la.solve(H, g)
            hist.append(w.clone())
            nll.append(loss.detach())
        # Newton converged: the gradient vanishes.
        wv = w.clone().requires_grad_(True)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(X @ wv, y, reduction="sum")
        (g,) = torch.autograd.grad(loss + 0.5 * 1e-2 * (wv ** 2).sum(), wv)
        assert np.abs(to_np(g)).max() < 1e-9
        cov = la.inv(H)                  # Laplace approximation of the posterior
        return {"w": hist, "nll": nll, "cov": cov, "grad": g}

    run_both(program, {"rtol": 1e-8, "atol": 1e-10})


# ------------------------------------------------------------------------------ Kalman filter


def test_kalman_filter_predict_update_batched():
    dt = 0.1
    F_np = np.array([[1, 0, dt, 0], [0, 1, 0, dt], [0, 0, 1, 0], [0, 0, 0, 1]])
    H_np = np.array([[1.0, 0, 0, 0], [0, 1.0, 0, 0]])
    rng = np.random.default_rng(10)
    truth = np.zeros((2, 12, 4))
    state = np.array([[0, 0, 1, 0.5], [1, -1, -0.5, 1.0]])
    for t in range(12):
        state = state @ F_np.T
        truth[:, t] = state
    meas = torch.from_numpy(truth[..., :2] + 0.05 * rng.standard_normal((2, 12, 2)))

    def program(device):
        kw = {"dtype": torch.float64, "device": device}
        Fm = torch.tensor(F_np, **kw)
        Hm = torch.tensor(H_np, **kw)
        Q = 1e-3 * torch.eye(4, **kw)
        R = 0.05 ** 2 * torch.eye(2, **kw)
        z_all = meas.to(device)
        x = torch.zeros(2, 4, 1, **kw)
        P = torch.eye(4, **kw).expand(2, 4, 4).clone()
        xs, Ps, nis = [], [], []
        for t in range(12):
            x = Fm @ x
            P = Fm @ P @ Fm.t() + Q
            z = z_all[:, t].unsqueeze(-1)
            innov = z - Hm @ x
            Sm = Hm @ P @ Hm.t() + R
            # Gain two ways: K = P H^T S^-1 through solve (S symmetric) and through inv.
            K = la.solve(Sm, Hm @ P).transpose(-2, -1)
            K_inv = P @ Hm.t() @ la.inv(Sm)
            assert np.allclose(to_np(K), to_np(K_inv), rtol=1e-9, atol=1e-9)
            x = x + K @ innov
            IKH = torch.eye(4, **kw) - K @ Hm
            P = IKH @ P @ IKH.transpose(-2, -1) + K @ R @ K.transpose(-2, -1)   # Joseph form
            nis.append((innov.transpose(-2, -1) @ la.solve(Sm, innov)).squeeze())
            xs.append(x.squeeze(-1))
            Ps.append(P)
        return {"x": xs, "P": Ps[::3], "nis": nis, "det_P": la.det(P)}

    cpu, _ = run_both(program)
    np.testing.assert_allclose(to_np(cpu["x"][-1])[:, :2], truth[:, -1, :2], atol=0.1)


# ------------------------------------------------------------------- orthogonal weights, QR


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
def test_orthogonal_init_and_orthogonality_regularised_training(dtype):
    w0 = data((8, 5), 11, dtype)
    x_all = data((20, 5), 12, dtype)
    y_all = data((20, 8), 13, dtype)

    def program(device):
        # Orthogonal init (as nn.init.orthogonal_): Q of a QR with R's diagonal made positive.
        q, r = la.qr(w0.to(device))
        W = leaf(q * torch.sign(torch.diagonal(r)).unsqueeze(0), device)   # (8, 5)
        x, y = x_all.to(device), y_all.to(device)
        gram0 = W.t() @ W
        opt = torch.optim.SGD([W], lr=0.02)
        losses, grads = [], []
        for _ in range(4):
            opt.zero_grad()
            fit = ((x @ W.t() - y) ** 2).mean()
            ortho = ((W.t() @ W - eye(5, W)) ** 2).sum()
            # Also differentiate through the R factor of a QR of the weight.
            Qw, Rw = la.qr(W)
            loss = fit + 0.1 * ortho + 0.01 * (Rw.diagonal() ** 2).sum()
            loss.backward()
            losses.append(loss.detach())
            grads.append(W.grad.clone())
            opt.step()
        # Gram-Schmidt of a non-contiguous block through QR: orthonormal columns.
        block = W.detach().t()[:, :4]                     # (5, 4) view
        Qb, Rb = la.qr(block)
        assert np.allclose(to_np(Qb.t() @ Qb), np.eye(4), **tol_for(dtype))
        return {"gram0": gram0, "losses": losses, "grads": grads, "W": W, "Qb": Qb, "Rb": Rb,
                "Rw": Rw, "Qw": Qw}

    cpu, _ = run_both(program, tol_for(dtype))
    np.testing.assert_allclose(to_np(cpu["gram0"]), np.eye(5), atol=1e-5)


# --------------------------------------------------------- spectral norm, cond, matrix_rank


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
def test_spectral_norm_power_iteration_cond_and_rank(dtype):
    mats = data((3, 6, 4), 14, dtype)
    u0 = data((3, 6), 15, dtype)
    lr_a = data((2, 7, 2), 16, dtype)
    lr_b = data((2, 2, 5), 17, dtype)

    def program(device):
        A = mats.to(device).transpose(-2, -1)                  # (3, 4, 6), non-contiguous
        v = u0.to(device)
        v = v / la.vector_norm(v, dim=-1, keepdim=True)
        for _ in range(60):                                    # power iteration on A^T A
            u = (A @ v.unsqueeze(-1)).squeeze(-1)
            u = u / la.vector_norm(u, dim=-1, keepdim=True)
            v = (A.transpose(-2, -1) @ u.unsqueeze(-1)).squeeze(-1)
            sigma = la.vector_norm(v, dim=-1)
            v = v / sigma.unsqueeze(-1)
        sv = la.svdvals(A)
        norm2 = la.matrix_norm(A, ord=2)
        assert np.allclose(to_np(sigma), to_np(sv[:, 0]), rtol=1e-3)
        assert np.allclose(to_np(norm2), to_np(sv[:, 0]), **tol_for(dtype))
        sq = A @ A.transpose(-2, -1) + 0.1 * eye(4, A)
        cond = la.cond(sq)
        ev = la.eigvalsh(sq)
        assert np.allclose(to_np(cond), to_np(ev[:, -1] / ev[:, 0]), rtol=1e-3)
        low = lr_a.to(device) @ lr_b.to(device)                # rank 2, (2, 7, 5)
        ranks = la.matrix_rank(low)
        full = la.matrix_rank(A)
        assert to_np(ranks).tolist() == [2, 2] and to_np(full).tolist() == [4, 4, 4]
        return {"sigma": sigma, "svdvals": sv, "norm2": norm2, "nuc": la.matrix_norm(A, "nuc"),
                "fro": la.matrix_norm(A), "cond": cond, "cond_fro": la.cond(sq, "fro"),
                "rank": ranks, "rank_tol": la.matrix_rank(low, atol=1e-3, rtol=0.0),
                "neg2": la.matrix_norm(A, ord=-2)}

    run_both(program, tol_for(dtype))


# ----------------------------------------------------- rotations, reflections, matrix_power


def test_det_of_rotations_reflections_and_inverse_powers():
    angles = torch.tensor([0.3, 1.2, -2.0, 2.9], dtype=torch.float64)
    vs = data((4, 3), 18)

    def program(device):
        th = angles.to(device)
        c, s = torch.cos(th), torch.sin(th)
        z, o = torch.zeros_like(th), torch.ones_like(th)
        Rz = torch.stack([torch.stack([c, -s, z], -1), torch.stack([s, c, z], -1),
                          torch.stack([z, z, o], -1)], -2)                   # (4, 3, 3)
        v = vs.to(device)
        v = v / la.vector_norm(v, dim=-1, keepdim=True)
        Hh = eye(3, v) - 2 * v.unsqueeze(-1) * v.unsqueeze(-2)               # reflections
        both = torch.cat([Rz, Hh, Rz @ Hh])
        det = la.det(both)
        sign, logabs = la.slogdet(both)
        inv = la.inv(both)
        # Orthogonal: the inverse is the transpose; negative powers are powers of the transpose.
        assert np.allclose(to_np(inv), to_np(both.transpose(-2, -1)), atol=1e-12)
        p3 = la.matrix_power(Rz, -3)
        assert np.allclose(to_np(p3), to_np(la.matrix_power(Rz.transpose(-2, -1), 3)),
                           atol=1e-12)
        # The LU factors and pivots of the orthogonal matrices agree too.
        lu, piv = la.lu_factor(both)
        return {"det": det, "sign": sign, "logabs": logabs, "inv": inv, "p3": p3,
                "p_neg1": la.matrix_power(both, -1), "lu": lu, "piv": piv}

    cpu, _ = run_both(program)
    np.testing.assert_allclose(to_np(cpu["det"]), [1] * 4 + [-1] * 4 + [-1] * 4, atol=1e-12)
    np.testing.assert_allclose(to_np(cpu["logabs"]), 0, atol=1e-12)


# --------------------------------------------------------------------- ensemble votes: mode


def test_ensemble_majority_vote_with_mode():
    x_all = data((25, 4), 19)
    ws = data((7, 4, 3), 20)
    bs = data((7, 3), 21, scale=0.5)

    def program(device):
        x = x_all.to(device)
        logits = torch.einsum("nd,mdk->mnk", x, ws.to(device)) + bs.to(device).unsqueeze(1)
        votes = logits.argmax(-1)                              # (7 models, 25 samples)
        maj = torch.mode(votes, dim=0)
        maj_t = torch.mode(votes.t(), dim=1)                   # non-contiguous input
        agree = (votes == maj.values.unsqueeze(0)).sum(0)
        # Per-sample class histogram and the most frequent class over everything.
        overall = torch.mode(votes.flatten())
        return {"votes": votes, "values": maj.values, "values_t": maj_t.values,
                "agree": agree, "overall": overall.values,
                "counts": torch.stack([(votes == k).sum(1) for k in range(3)], 1)}

    cpu, gpu = run_both(program)
    v = to_np(cpu["votes"])
    counts = np.stack([(v == k).sum(0) for k in range(3)], 1)
    np.testing.assert_array_equal(counts[np.arange(25), to_np(cpu["values"])], counts.max(1))
    np.testing.assert_array_equal(to_np(gpu["values"]), to_np(gpu["values_t"]))


# ------------------------------------------------------------- linear normalising flow


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
def test_linear_flow_log_det_training(dtype):
    rng = np.random.default_rng(22)
    mix = np.array([[2.0, 0.3, 0.0], [0.5, 1.0, 0.2], [0.0, -0.4, 0.7]])
    x_all = torch.from_numpy(rng.standard_normal((64, 3)) @ mix.T).to(dtype)
    w0 = (torch.eye(3, dtype=torch.float64) + 0.2 * data((3, 3), 23)).to(dtype)

    def program(device):
        x = x_all.to(device)
        W = leaf(w0, device)
        b = torch.zeros(3, dtype=dtype, device=device, requires_grad=True)
        opt = torch.optim.Adam([W, b], lr=0.05)
        losses, gW = [], []
        for _ in range(6):
            opt.zero_grad()
            z = x @ W.t() + b
            log_pz = -0.5 * (z ** 2).sum(-1) - 1.5 * math.log(2 * math.pi)
            _, logabsdet = la.slogdet(W)
            loss = -(log_pz + logabsdet).mean()
            loss.backward()
            losses.append(loss.detach())
            gW.append(W.grad.clone())
            opt.step()
        # Inverse pass: x = W^-1 (z - b), through inv and through solve; gradients of both.
        z = x @ W.t() + b
        x_back = (z - b) @ la.inv(W).t()
        x_solve = la.solve(W, (z - b).t()).t()
        g_inv, = torch.autograd.grad((x_back ** 2).sum() + la.det(W), W)
        assert np.allclose(to_np(x_back), to_np(x), **tol_for(dtype))
        assert np.allclose(to_np(x_solve), to_np(x), **tol_for(dtype))
        return {"losses": losses, "gW": gW, "W": W, "b": b, "g_inv": g_inv}

    cpu, _ = run_both(program, tol_for(dtype))
    assert to_np(cpu["losses"][-1]) < to_np(cpu["losses"][0])


# ------------------------------------------------------- spectral losses: eigh / svd backward


def test_spectrum_matching_training_through_eigh_and_svd():
    a0 = data((2, 4, 4), 24)
    m0 = data((2, 5, 3), 25)
    target_eig = torch.tensor([0.5, 1.0, 2.0, 4.0], dtype=torch.float64)
    target_sv = torch.tensor([3.0, 1.0, 0.5], dtype=torch.float64)

    def program(device):
        A = leaf(a0, device)
        M = leaf(m0, device)
        te, ts = target_eig.to(device), target_sv.to(device)
        opt = torch.optim.Adam([A, M], lr=0.05)
        losses, grads = [], []
        for _ in range(5):
            opt.zero_grad()
            sym = A @ A.transpose(-2, -1) + 0.1 * eye(4, A)
            evals, evecs = la.eigh(sym)
            U, S, Vh = la.svd(M, full_matrices=False)
            # Sign-invariant use of the vectors: squared entries of the first eigenvector and
            # the rank-1 reconstruction of M.
            rank1 = S[..., :1, None] * U[..., :, :1] @ Vh[..., :1, :]
            loss = (((evals - te) ** 2).sum() + ((S - ts) ** 2).sum()
                    + 0.1 * (evecs[..., :, -1] ** 2 * torch.arange(4.0, dtype=A.dtype,
                                                                     device=device)).sum()
                    + 0.01 * (rank1 ** 2).sum() + 0.1 * la.svdvals(M).sum())
            loss.backward()
            losses.append(loss.detach())
            grads.append([A.grad.clone(), M.grad.clone()])
            opt.step()
        return {"losses": losses, "grads": grads, "A": A, "M": M}

    cpu, _ = run_both(program, {"rtol": 1e-7, "atol": 1e-8})
    assert to_np(cpu["losses"][-1]) < to_np(cpu["losses"][0])


# --------------------------------------------------------- Bayesian linear regression


def test_bayesian_linear_regression_posterior_and_evidence_gradients():
    x_all = data((25, 3), 26)
    y_all = x_all @ torch.tensor([[0.7], [-1.2], [2.0]], dtype=torch.float64) \
        + 0.2 * data((25, 1), 27)
    x_new = data((4, 3), 28)

    def program(device):
        X, y = x_all.to(device), y_all.to(device)
        log_alpha = leaf(torch.tensor(0.0, dtype=torch.float64), device)
        log_beta = leaf(torch.tensor(1.0, dtype=torch.float64), device)
        alpha, beta = torch.exp(log_alpha), torch.exp(log_beta)
        A = alpha * eye(3, X) + beta * X.t() @ X                 # posterior precision
        L = la.cholesky(A)
        mean = beta * torch.cholesky_solve(X.t() @ y, L)
        cov = torch.cholesky_inverse(L)
        n, d = X.shape
        err = ((y - X @ mean) ** 2).sum()
        evidence = (0.5 * d * log_alpha + 0.5 * n * log_beta - 0.5 * beta * err
                    - 0.5 * alpha * (mean ** 2).sum() - 0.5 * torch.logdet(A)
                    - 0.5 * n * math.log(2 * math.pi))
        evidence.backward()
        xn = x_new.to(device)
        pred_var = 1 / beta + ((xn @ cov) * xn).sum(1)
        assert np.allclose(to_np(cov), to_np(la.inv(A)), rtol=1e-9, atol=1e-12)
        assert np.allclose(to_np(cov @ A), np.eye(3), atol=1e-10)
        return {"mean": mean, "cov": cov, "evidence": evidence, "g_alpha": log_alpha.grad,
                "g_beta": log_beta.grad, "pred_mean": xn @ mean, "pred_var": pred_var}

    run_both(program)


# -------------------------------------------------- implicit heat equation with LU reuse


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
def test_implicit_heat_equation_lu_factor_reuse(dtype):
    n, steps = 12, 8
    xs = np.linspace(0, 1, n)
    u0_np = np.stack([np.sin(np.pi * xs), np.exp(-40 * (xs - 0.3) ** 2)], 1)   # 2 columns

    def program(device):
        kw = {"dtype": dtype, "device": device}
        r = 0.4
        lap = (torch.diag(torch.full((n,), -2.0, **kw)) + torch.diag(torch.ones(n - 1, **kw), 1)
               + torch.diag(torch.ones(n - 1, **kw), -1))
        A = torch.eye(n, **kw) - r * lap                        # backward Euler
        lu, piv = la.lu_factor(A)
        u = torch.tensor(u0_np, **kw)
        us = []
        for _ in range(steps):
            u = la.lu_solve(lu, piv, u)
            us.append(u)
        # Crank-Nicolson for one step through plain solve, and matrix_power(-k) shortcut.
        B = torch.eye(n, **kw) + 0.5 * r * lap
        C = torch.eye(n, **kw) - 0.5 * r * lap
        u_cn = la.solve(C, B @ torch.tensor(u0_np, **kw))
        u_pow = la.matrix_power(A, -steps) @ torch.tensor(u0_np, **kw)
        assert np.allclose(to_np(u_pow), to_np(u), **tol_for(dtype))
        P, Lf, Uf = la.lu(A)
        return {"us": us, "u_cn": u_cn, "u_pow": u_pow, "lu": lu, "piv": piv, "L": Lf,
                "U": Uf, "P": P}

    cpu, _ = run_both(program, tol_for(dtype))
    # Diffusion with zero boundaries: the peak of each profile decays step by step.
    peaks = np.stack([to_np(u).max(0) for u in cpu["us"]])
    assert (np.diff(peaks, axis=0) < 0).all()


# ------------------------------------------------------- rigid bodies: cross products, fits


def test_rigid_body_torques_and_plane_fit():
    pts = data((3, 10, 3), 29)
    forces = data((3, 10, 3), 30)
    rng = np.random.default_rng(31)
    plane_np = rng.standard_normal((40, 2)) @ np.array([[1.0, 0.0, 0.3], [0.0, 1.0, -0.2]])
    plane_np = plane_np + 0.01 * rng.standard_normal((40, 3))
    plane = torch.from_numpy(plane_np)

    def program(device):
        r = leaf(pts, device)
        f = forces.to(device).transpose(0, 1).transpose(0, 1)     # same values, a view
        torque = la.cross(r, f, dim=-1)
        total = torque.sum(1)
        energy = (total ** 2).sum()
        (g_r,) = torch.autograd.grad(energy, r)
        # Plane fit: normal = right singular vector of the smallest singular value; the plane
        # z = a x + b y + c also through lstsq.
        p = plane.to(device)
        pc = p - p.mean(0)
        _, S, Vh = la.svd(pc, full_matrices=False)
        normal = Vh[-1]
        normal = normal * torch.sign(normal[2])                  # fix the sign
        design = torch.cat([p[:, :2], torch.ones(40, 1, dtype=p.dtype, device=device)], 1)
        coef = la.lstsq(design, p[:, 2:]).solution
        from_normal = -normal[:2] / normal[2]
        assert np.allclose(to_np(from_normal), to_np(coef[:2, 0]), atol=5e-3)
        return {"torque": torque, "total": total, "g_r": g_r, "S": S, "normal": normal,
                "coef": coef}

    cpu, _ = run_both(program)
    np.testing.assert_allclose(to_np(cpu["coef"])[:2, 0], [0.3, -0.2], atol=0.01)


# ------------------------------------------------------------------- absorbing Markov chain


def test_absorbing_markov_chain_fundamental_matrix_and_n_step_transitions():
    # Gambler's-ruin-like chain on 0..5 with a lazy step; 0 and 5 absorb.
    n = 6
    P_np = np.zeros((n, n))
    P_np[0, 0] = P_np[n - 1, n - 1] = 1.0
    for i in range(1, n - 1):
        P_np[i, i - 1], P_np[i, i], P_np[i, i + 1] = 0.35, 0.2, 0.45
    start = torch.tensor([0.0, 0.1, 0.2, 0.4, 0.3, 0.0], dtype=torch.float64)

    def program(device):
        P = torch.tensor(P_np, dtype=torch.float64, device=device)
        Q = P[1:-1, 1:-1]                                # transient block: a view
        R = P[1:-1][:, [0, n - 1]]
        N = la.inv(torch.eye(n - 2, dtype=P.dtype, device=device) - Q)
        steps = N.sum(1)                                 # expected steps to absorption
        B = la.solve(torch.eye(n - 2, dtype=P.dtype, device=device) - Q, R)
        assert np.allclose(to_np(B.sum(1)), 1.0, atol=1e-12)
        assert np.allclose(to_np(N @ R), to_np(B), atol=1e-12)
        p0 = start.to(device)
        dist = [p0 @ la.matrix_power(P, k) for k in (1, 2, 5, 20)]
        # Variance of the absorption time: (2N - I) t - t * t.
        t = steps.unsqueeze(1)
        var = (2 * N - torch.eye(n - 2, dtype=P.dtype, device=device)) @ t - t * t
        return {"N": N, "steps": steps, "B": B, "dist": dist, "var": var,
                "det": la.det(torch.eye(n - 2, dtype=P.dtype, device=device) - Q)}

    cpu, _ = run_both(program)
    d = to_np(cpu["dist"][-1])
    np.testing.assert_allclose(d.sum(), 1.0, atol=1e-12)
    assert d[0] + d[-1] > 0.9                             # nearly all mass absorbed


def test_neumann_series_inverse_with_matrix_powers():
    a0 = 0.15 * data((2, 4, 4), 32)

    def program(device):
        E = a0.to(device)                                 # A = I - E, spectral radius < 1
        A = torch.eye(4, dtype=E.dtype, device=device) - E
        approx = sum(la.matrix_power(E, k) for k in range(0, 40))
        exact = la.inv(A)
        assert np.allclose(to_np(approx), to_np(exact), atol=1e-10)
        return {"approx": approx, "exact": exact}

    run_both(program)


# ---------------------------------------------- GP with jitter, posterior samples, upper factors


def test_gp_jitter_retry_posterior_samples_and_upper_factor():
    # Duplicate inputs make the noise-free kernel singular: retry with growing jitter as
    # GPyTorch's psd_safe_cholesky does, using cholesky_ex's info on the device.
    x_np = np.concatenate([np.linspace(0, 1, 8), np.linspace(0, 1, 8)[:4]])
    x_all = torch.from_numpy(x_np).unsqueeze(-1)
    y_all = torch.sin(6 * x_all)
    xt_all = torch.linspace(0, 1, 6, dtype=torch.float64).unsqueeze(-1)
    eps_all = data((6, 3), 33)

    def program(device):
        x, y, xt = x_all.to(device), y_all.to(device), xt_all.to(device)
        ls = torch.tensor(0.3, dtype=torch.float64, device=device)
        sf = torch.tensor(0.0, dtype=torch.float64, device=device)
        K = rbf(x, x, torch.log(ls), sf)
        jitter, infos = 0.0, []
        while True:
            L, info = la.cholesky_ex(K + jitter * eye(K.shape[0], K))
            assert info.device.type == device
            infos.append(int(info))
            if int(info) == 0:
                break
            jitter = max(jitter * 10, 1e-12)
        U = la.cholesky(K + jitter * eye(K.shape[0], K), upper=True)
        assert np.allclose(to_np(U), to_np(L.t()), atol=1e-12)
        # The regression itself has observation noise.
        U = la.cholesky(K + 1e-2 * eye(K.shape[0], K), upper=True)
        Ks = rbf(xt, x, torch.log(ls), sf)
        # alpha = K^-1 y with the upper factor: U^T U alpha = y.
        z = la.solve_triangular(U.t(), y, upper=False)
        alpha = la.solve_triangular(U, z, upper=True)
        alpha2 = torch.cholesky_solve(y, U, upper=True)
        assert np.allclose(to_np(alpha), to_np(alpha2), rtol=1e-10, atol=1e-10)
        mean = Ks @ alpha2
        # V = Ks U^-1 through a right-side triangular solve.
        V = la.solve_triangular(U, Ks, upper=True, left=False)
        cov = rbf(xt, xt, torch.log(ls), sf) - V @ V.t() + 1e-8 * eye(6, V)
        Lc = la.cholesky(cov)
        samples = mean + Lc @ eps_all.to(device)
        return {"infos": infos, "jitter": jitter, "U": U, "mean": mean, "cov": cov,
                "samples": samples, "Kinv": torch.cholesky_inverse(U, upper=True)}

    cpu, _ = run_both(program)
    assert cpu["infos"][0] > 0 and cpu["infos"][-1] == 0     # the retry actually happened


# --------------------------------------------- differentiable closed-form heads (lstsq / solve)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
def test_meta_learning_closed_form_ridge_head_gradients(dtype):
    # R2-D2-style few-shot learning: a feature extractor trained through a closed-form
    # least-squares head fitted per task (a batch of tasks).
    xs = data((3, 12, 5), 34, dtype)                    # 3 tasks, 12 support points
    ys = data((3, 12, 2), 35, dtype)
    xq = data((3, 6, 5), 36, dtype)
    yq = data((3, 6, 2), 37, dtype)
    w0 = 0.3 * data((5, 4), 38, dtype)

    def program(device):
        W = leaf(w0, device)
        opt = torch.optim.Adam([W], lr=0.02)
        sx, sy, qx, qy = (t.to(device) for t in (xs, ys, xq, yq))
        losses, grads = [], []
        for step in range(4):
            opt.zero_grad()
            fs = torch.tanh(sx @ W)                         # (3, 12, 4)
            fq = torch.tanh(qx @ W)
            head = la.lstsq(fs, sy).solution                # (3, 4, 2)
            ridge = la.solve(fs.mT @ fs + 0.1 * eye(4, fs), fs.mT @ sy)
            h = head if step % 2 == 0 else ridge
            loss = ((fq @ h - qy) ** 2).mean() + 0.01 * la.matrix_norm(W, "nuc")
            loss.backward()
            losses.append(loss.detach())
            grads.append(W.grad.clone())
            opt.step()
        return {"losses": losses, "grads": grads, "W": W}

    run_both(program, tol_for(dtype))


# -------------------------------------------------- signed areas of (degenerate) triangles


def cofactor(m):
    """Cofactor matrix (the gradient of det) of each 3x3 matrix, from 2x2 minors."""
    out = np.empty_like(m)
    for i in range(3):
        for j in range(3):
            minor = np.delete(np.delete(m, i, -2), j, -1)
            out[..., i, j] = (-1) ** (i + j) * np.linalg.det(minor)
    return out


def test_triangle_area_gradients_with_a_degenerate_triangle():
    # Signed area of triangles = det([[x, y, 1], ...]) / 2; the last one is collinear.
    tri = torch.tensor([[[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]],
                        [[0.5, 0.2], [2.0, 1.0], [-1.0, 3.0]],
                        [[0.0, 0.0], [1.0, 1.0], [3.0, 3.0]]], dtype=torch.float64)

    def program(device):
        pts = leaf(tri, device)
        m = torch.cat([pts, torch.ones(3, 3, 1, dtype=pts.dtype, device=device)], -1)
        area = la.det(m) / 2
        area.sum().backward()
        return {"area": area, "grad": pts.grad}

    cpu, _ = run_both(program)
    m = np.concatenate([tri.numpy(), np.ones((3, 3, 1))], -1)
    np.testing.assert_allclose(to_np(cpu["area"]), np.linalg.det(m) / 2, atol=1e-12)
    np.testing.assert_allclose(to_np(cpu["grad"]), cofactor(m)[..., :2] / 2, atol=1e-12)
