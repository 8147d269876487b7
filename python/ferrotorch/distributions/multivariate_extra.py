"""Matrix-parameterised distributions: LowRankMultivariateNormal (covariance
``W W^T + diag(D)``), Wishart (an ExponentialFamily over positive-definite matrices) and
LKJCholesky (Cholesky factors of correlation matrices), following ``torch.distributions``."""

import math
import warnings

from ferrotorch import _C, linalg
from ferrotorch._size import Size
from ferrotorch.distributions import constraints
from ferrotorch.distributions.distribution import (
    _EMPTY_SIZE,
    Distribution,
    _is_number,
    _standard_normal,
    broadcast_all,
    lazy_property,
)
from ferrotorch.distributions.exp_family import ExponentialFamily
from ferrotorch.distributions.gamma import Beta, Chi2
from ferrotorch.distributions.multivariate import _batch_mahalanobis, _precision_to_scale_tril

__all__ = ["LowRankMultivariateNormal", "Wishart", "LKJCholesky"]


def _diag_embed(t):
    return t.diag_embed()


def _mvlgamma(x, p):
    return x.mvlgamma(p=p)


def _batch_mv(bmat, bvec):
    return (bmat @ bvec.unsqueeze(-1)).squeeze(-1)


def _add_identity(K):
    return K + _C.eye(K.shape[-1], dtype=K.dtype, device=K.device)


def _batch_capacitance_tril(W, D):
    """The lower Cholesky factor of ``I + W^T D^{-1} W`` (``m x m``)."""
    Wt_Dinv = W.mT / D.unsqueeze(-2)
    return linalg.cholesky(_add_identity(Wt_Dinv @ W))


def _batch_lowrank_logdet(W, D, capacitance_tril):
    """``log det(W W^T + D)`` by the matrix determinant lemma."""
    return 2 * capacitance_tril.diagonal(0, -2, -1).log().sum(-1) + D.log().sum(-1)


def _batch_lowrank_mahalanobis(W, D, x, capacitance_tril):
    """``x^T (W W^T + D)^{-1} x`` by the Woodbury identity."""
    Wt_Dinv = W.mT / D.unsqueeze(-2)
    Wt_Dinv_x = _batch_mv(Wt_Dinv, x)
    return (x.pow(2) / D).sum(-1) - _batch_mahalanobis(capacitance_tril, Wt_Dinv_x)


def _batch_trace_XXT(bmat):
    """The trace of ``X X^T`` for each matrix of a batch."""
    return bmat.pow(2).reshape(*bmat.shape[:-2], -1).sum(-1)


def _solve_tril(L, B):
    lead = _C.broadcast_shapes(tuple(L.shape[:-2]), tuple(B.shape[:-2]))
    return linalg.solve_triangular(L.expand(tuple(lead) + tuple(L.shape[-2:])),
                                   B.expand(tuple(lead) + tuple(B.shape[-2:])), upper=False)


def _cholesky_solve(B, L):
    """``(L L^T)^{-1} B`` for a lower Cholesky factor ``L`` (``torch.cholesky_solve``)."""
    Y = _solve_tril(L, B)
    return linalg.solve_triangular(L.mT.expand(tuple(Y.shape[:-2]) + tuple(L.shape[-2:])), Y,
                                   upper=True)


class LowRankMultivariateNormal(Distribution):
    """Normal distribution over vectors with mean ``loc`` and covariance
    ``cov_factor @ cov_factor.mT + diag(cov_diag)``; ``log_prob`` and ``entropy`` use the
    Woodbury identity and the determinant lemma, costing ``O(n m^2)`` for rank ``m``."""

    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = Size(loc.shape[-1:])
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, "
                             "with optional leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != tuple(event_shape):
            raise ValueError(
                f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m")
        if tuple(cov_diag.shape[-1:]) != tuple(event_shape):
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        loc_ = loc.unsqueeze(-1)
        cov_diag_ = cov_diag.unsqueeze(-1)
        try:
            shape = _C.broadcast_shapes(tuple(loc_.shape), tuple(cov_factor.shape),
                                        tuple(cov_diag_.shape))
        except RuntimeError as e:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor "
                             f"{cov_factor.shape}, cov_diag {cov_diag.shape}") from e
        shape = tuple(shape)
        self.cov_factor = cov_factor.expand(shape)
        self.loc = loc_.expand(shape)[..., 0]
        self.cov_diag = cov_diag_.expand(shape)[..., 0]
        batch_shape = self.loc.shape[:-1]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = _batch_capacitance_tril(cov_factor, cov_diag)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        batch_shape = Size(batch_shape)
        loc_shape = tuple(batch_shape) + tuple(self.event_shape)
        new.loc = self.loc.expand(loc_shape)
        new.cov_diag = self.cov_diag.expand(loc_shape)
        new.cov_factor = self.cov_factor.expand(loc_shape + tuple(self.cov_factor.shape[-1:]))
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape) * 2

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        return (self._unbroadcasted_cov_factor.pow(2).sum(-1)
                + self._unbroadcasted_cov_diag).expand(
                    tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def scale_tril(self):
        # The Cholesky factor of D^{1/2} (I + D^{-1/2} W W^T D^{-1/2}) D^{1/2}.
        cov_diag_sqrt_unsqueeze = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        Dinvsqrt_W = self._unbroadcasted_cov_factor / cov_diag_sqrt_unsqueeze
        K = _add_identity(Dinvsqrt_W @ Dinvsqrt_W.mT)
        return (cov_diag_sqrt_unsqueeze * linalg.cholesky(K)).expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        W = self._unbroadcasted_cov_factor
        return (W @ W.mT + _diag_embed(self._unbroadcasted_cov_diag)).expand(
            self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        # (W W^T + D)^{-1} = D^{-1} - D^{-1} W C^{-1} W^T D^{-1}  (Woodbury)
        Wt_Dinv = self._unbroadcasted_cov_factor.mT / self._unbroadcasted_cov_diag.unsqueeze(-2)
        A = _solve_tril(self._capacitance_tril, Wt_Dinv)
        return (_diag_embed(self._unbroadcasted_cov_diag.reciprocal()) - A.mT @ A).expand(
            self._matrix_shape())

    def rsample(self, sample_shape=_EMPTY_SIZE):
        shape = tuple(self._extended_shape(sample_shape))
        W_shape = shape[:-1] + tuple(self.cov_factor.shape[-1:])
        eps_W = _standard_normal(W_shape, self.loc.dtype, self.loc.device)
        eps_D = _standard_normal(shape, self.loc.dtype, self.loc.device)
        return (self.loc + _batch_mv(self._unbroadcasted_cov_factor, eps_W)
                + self._unbroadcasted_cov_diag.sqrt() * eps_D)

    def _logdet(self):
        return _batch_lowrank_logdet(self._unbroadcasted_cov_factor,
                                     self._unbroadcasted_cov_diag, self._capacitance_tril)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        M = _batch_lowrank_mahalanobis(self._unbroadcasted_cov_factor,
                                       self._unbroadcasted_cov_diag, diff,
                                       self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + self._logdet() + M)

    def entropy(self):
        H = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._logdet())
        return H.expand(tuple(self._batch_shape)) if len(self._batch_shape) else H


_LOG_2 = math.log(2)


def _mvdigamma(x, p):
    if not bool((x > (p - 1) / 2).all()):
        raise AssertionError("Wrong domain for multivariate digamma function.")
    offsets = _C.arange(p, dtype=x.dtype, device=x.device) / 2
    return (x.unsqueeze(-1) - offsets).digamma().sum(-1)


def _clamp_above_eps(x):
    from ferrotorch._compare import finfo

    return x.clamp(min=finfo(x.dtype).eps)


class Wishart(ExponentialFamily):
    """Wishart distribution over ``p x p`` positive-definite matrices with ``df`` degrees of
    freedom (``> p - 1``) and scale given by exactly one of ``covariance_matrix``,
    ``precision_matrix`` or ``scale_tril``. ``rsample`` uses the Bartlett decomposition."""

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or "
                                 "scale_tril may be specified.")
        param = given[0]
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if _is_number(df):
            batch_shape = Size(param.shape[:-2])
            self.df = _C.tensor(float(df), dtype=param.dtype, device=param.device)
        else:
            batch_shape = Size(_C.broadcast_shapes(tuple(param.shape[:-2]), tuple(df.shape)))
            self.df = df.expand(tuple(batch_shape))
        event_shape = Size(param.shape[-2:])
        if bool((self.df <= event_shape[-1] - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = "
                             f"{event_shape[-1] - 1}.")
        matrix_shape = tuple(batch_shape) + tuple(event_shape)
        if scale_tril is not None:
            self.scale_tril = param.expand(matrix_shape)
        elif covariance_matrix is not None:
            self.covariance_matrix = param.expand(matrix_shape)
        else:
            self.precision_matrix = param.expand(matrix_shape)
        if bool((self.df < event_shape[-1]).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur "
                          "for ndim - 1 < df < ndim.", stacklevel=2)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._batch_dims = [-(x + 1) for x in range(len(self._batch_shape))]
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)
        self._dist_chi2 = self._make_chi2(batch_shape)

    def _make_chi2(self, batch_shape):
        L = self._unbroadcasted_scale_tril
        offsets = _C.arange(self._event_shape[-1], dtype=L.dtype, device=L.device)
        return Chi2(df=self.df.unsqueeze(-1) - offsets.expand(tuple(batch_shape) + (-1,)))

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = Size(batch_shape)
        cov_shape = tuple(batch_shape) + tuple(self.event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(tuple(batch_shape))
        new._batch_dims = [-(x + 1) for x in range(len(batch_shape))]
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(cov_shape))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._dist_chi2 = new._make_chi2(batch_shape)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape)

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        return linalg._cholesky_inverse(self._unbroadcasted_scale_tril).expand(
            self._matrix_shape())

    def _df_matrix(self, df):
        return df.reshape(tuple(self._batch_shape) + (1, 1))

    @property
    def mean(self):
        return self._df_matrix(self.df) * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = _C.where(factor <= 0, math.nan, factor)
        return self._df_matrix(factor) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        diag_V = V.diagonal(0, -2, -1)
        return self._df_matrix(self.df) * (V.pow(2) + diag_V.unsqueeze(-1) * diag_V.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape=_EMPTY_SIZE):
        shape = tuple(self._extended_shape(sample_shape))
        diag = _clamp_above_eps(self._dist_chi2.rsample(sample_shape).sqrt())
        below = _standard_normal(shape, diag.dtype, diag.device).tril(-1)
        chol = self._unbroadcasted_scale_tril @ (_diag_embed(diag) + below)
        return chol @ chol.mT

    def rsample(self, sample_shape=_EMPTY_SIZE, max_try_correction=None):
        """Bartlett-decomposition samples; samples that are numerically singular are redrawn
        (up to ``max_try_correction`` times, 10 by default)."""
        if max_try_correction is None:
            max_try_correction = 10
        if not isinstance(sample_shape, (tuple, list)):
            sample_shape = (sample_shape,)
        sample = self._bartlett_sampling(sample_shape)
        is_singular = self._singular(sample)
        if bool(is_singular.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                mask = is_singular.reshape(tuple(is_singular.shape)
                                           + (1,) * (len(self._batch_shape) + 2))
                sample = _C.where(mask, self._bartlett_sampling(sample_shape), sample)
                is_singular = self._singular(sample)
                if not bool(is_singular.any()):
                    break
        return sample

    def _singular(self, sample):
        """Which samples (over ``sample_shape``) have a batch member off the support."""
        bad = ~self.support.check(sample.detach())
        if self._batch_shape:
            bad = bad.reshape(tuple(bad.shape[:bad.dim() - len(self._batch_shape)]) + (-1,))
            bad = bad.any(-1)
        return bad

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        return (-nu * (p * _LOG_2 / 2 + L.diagonal(0, -2, -1).log().sum(-1))
                - _mvlgamma(nu / 2, p=p)
                + (nu - p - 1) / 2 * linalg.slogdet(value).logabsdet
                - _cholesky_solve(value, L).diagonal(0, -2, -1).sum(-1) / 2)

    def entropy(self):
        nu = self.df
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        return ((p + 1) * (p * _LOG_2 / 2 + L.diagonal(0, -2, -1).log().sum(-1))
                + _mvlgamma(nu / 2, p=p) - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p=p)
                + nu * p / 2)

    @property
    def _natural_params(self):
        nu = self.df
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (nu - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return ((y + (p + 1) / 2) * (-linalg.slogdet(-2 * x).logabsdet + _LOG_2 * p)
                + _mvlgamma(y + (p + 1) / 2, p=p))


class LKJCholesky(Distribution):
    """LKJ distribution over lower Cholesky factors of ``dim x dim`` correlation matrices,
    with density proportional to ``det(L L^T) ** (concentration - 1)``; sampled by the onion
    method."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(
                f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.shape
        event_shape = Size((dim, dim))
        # Marginal concentrations of the Beta distributions of the onion method.
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = _C.arange(self.dim - 1, dtype=self.concentration.dtype,
                           device=self.concentration.device)
        offset = _C.cat([_C.zeros((1,), dtype=offset.dtype, device=offset.device), offset])
        beta_conc1 = offset + 0.5
        beta_conc0 = marginal_conc.unsqueeze(-1) - 0.5 * offset
        self._beta = Beta(beta_conc1, beta_conc0)
        super().__init__(batch_shape, event_shape, validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(tuple(batch_shape))
        new._beta = self._beta.expand(tuple(batch_shape) + (self.dim,))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=_EMPTY_SIZE):
        from ferrotorch._compare import finfo

        from ferrotorch.autograd.grad_mode import no_grad

        with no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            shape = tuple(self._extended_shape(sample_shape))
            u_normal = _standard_normal(shape, y.dtype, y.device).tril(-1)
            u_hypersphere = u_normal / u_normal.norm(dim=-1, keepdim=True)
            # The first row (all zeros, so 0 / 0 above) is zero.
            first_row = (_C.arange(self.dim, device=y.device) == 0).unsqueeze(-1)
            u_hypersphere = _C.where(first_row, 0.0, u_hypersphere)
            w = y.sqrt() * u_hypersphere
            tiny = finfo(w.dtype).tiny
            diag_elems = (1 - w.pow(2).sum(-1)).clamp(min=tiny).sqrt()
            return w + _diag_embed(diag_elems)

    def log_prob(self, value):
        # See Lewandowski, Kurowicka and Joe (2009), and Stan's lkj_corr_cholesky.
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(0, -1, -2)[..., 1:]
        order = _C.arange(2, self.dim + 1, dtype=self.concentration.dtype,
                          device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = (order * diag_elems.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = alpha.lgamma() * dm1
        numerator = _mvlgamma(alpha - 0.5, p=dm1)
        pi_constant = 0.5 * dm1 * math.log(math.pi)
        normalize_term = pi_constant + numerator - denominator
        return unnormalized_log_pdf - normalize_term
