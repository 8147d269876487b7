"""NAdam (Dozat, 2016): Adam with Nesterov momentum and a momentum-decay schedule."""

from ferrotorch import _C
from ferrotorch.optim.optimizer import (
    _check_adam_hyperparameters,
    _closure_loss,
    Optimizer,
    _to_scalar,
    _use_grad_for_differentiable,
    _zeros_like,
)

__all__ = ["NAdam"]


class NAdam(Optimizer):
    r"""NAdam as in PyTorch:

    .. code-block:: text

        g = grad (+ weight_decay * p, or p *= 1 - lr * weight_decay when decoupled)
        mu_t = beta1 (1 - 0.5 * 0.96^(t psi));   mu_{t+1} = beta1 (1 - 0.5 * 0.96^((t+1) psi))
        m = beta1 m + (1 - beta1) g;   v = beta2 v + (1 - beta2) g^2
        denom = sqrt(v / (1 - beta2^t)) + eps
        p = p - lr (1 - mu_t) / (1 - prod_{i<=t} mu_i) * g / denom
              - lr mu_{t+1} / (1 - prod_{i<=t+1} mu_i) * m / denom

    (``psi`` is ``momentum_decay``; the running product of the ``mu`` is the ``mu_product``
    state, a scalar tensor of the default dtype as in PyTorch.)
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        lr = _check_adam_hyperparameters(lr, eps, betas, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)

    def _init_state(self, p):
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _C.tensor(0.0)
            state["mu_product"] = _C.tensor(1.0)
            state["exp_avg"] = _zeros_like(p)
            state["exp_avg_sq"] = _zeros_like(p)
        return state

    @_use_grad_for_differentiable
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, wd = _to_scalar(group["lr"]), group["eps"], group["weight_decay"]
            momentum_decay = group["momentum_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = -p.grad if group["maximize"] else p.grad
                state = self._init_state(p)
                state["step"].add_(1)
                step = state["step"].item()
                bias_correction2 = 1 - beta2 ** step
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * wd)
                    else:
                        grad = grad + p * wd
                mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
                mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
                mu_product = state["mu_product"]
                mu_product.mul_(mu)
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                denom = (exp_avg_sq / bias_correction2).sqrt() + eps
                mu_product_value = mu_product.item()
                mu_product_next = mu_product_value * mu_next
                p.sub_(grad / denom * (lr * (1.0 - mu) / (1.0 - mu_product_value)))
                p.sub_(exp_avg / denom * (lr * mu_next / (1.0 - mu_product_next)))
        return loss
