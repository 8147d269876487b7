"""``ExponentialFamily``: the base class of distributions with densities
``exp(<t(x), theta> - F(theta) + k(x))``, whose entropy (and KL divergence within one
family) follow from the log normalizer ``F`` by Bregman divergences, differentiated with
autograd (``torch.distributions.exp_family``)."""

from ferrotorch.distributions.distribution import Distribution

__all__ = ["ExponentialFamily"]


def _natural_leaves(params):
    return [p.detach().requires_grad_() for p in params]


class ExponentialFamily(Distribution):
    """Subclasses define ``_natural_params`` (a tuple of tensors), ``_log_normalizer(*params)``
    and ``_mean_carrier_measure`` (``E[k(x)]``)."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        """``F(theta) - <theta, grad F(theta)> - E[k(x)]``."""
        from ferrotorch.autograd import enable_grad, grad

        result = -self._mean_carrier_measure
        with enable_grad():
            nparams = _natural_leaves(self._natural_params)
            lg_normal = self._log_normalizer(*nparams)
            gradients = grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for p, g in zip(nparams, gradients):
            result = result - (p * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
