"""RAdam (Liu et al., 2019): Adam with a rectified adaptive learning rate."""

import math

from ferrotorch import _C
from ferrotorch.optim.optimizer import (
    _check_adam_hyperparameters,
    _closure_loss,
    Optimizer,
    _to_scalar,
    _use_grad_for_differentiable,
    _zeros_like,
)

__all__ = ["RAdam"]


class RAdam(Optimizer):
    r"""RAdam as in PyTorch:

    .. code-block:: text

        g = grad (+ weight_decay * p, or p *= 1 - lr * weight_decay when decoupled)
        m = beta1 m + (1 - beta1) g;   v = beta2 v + (1 - beta2) g^2
        m^ = m / (1 - beta1^t)
        rho_inf = 2 / (1 - beta2) - 1;   rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)
        rho_t > 5:  l = sqrt(1 - beta2^t) / (sqrt(v) + eps)
                    r = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
                    p = p - lr m^ l r
        otherwise:  p = p - lr m^
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        lr = _check_adam_hyperparameters(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
            group.setdefault("capturable", False)

    def _init_state(self, p):
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _C.tensor(0.0)
            state["exp_avg"] = _zeros_like(p)
            state["exp_avg_sq"] = _zeros_like(p)
        return state

    @_use_grad_for_differentiable
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, wd = _to_scalar(group["lr"]), group["eps"], group["weight_decay"]
            rho_inf = 2 / (1 - beta2) - 1
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = -p.grad if group["maximize"] else p.grad
                state = self._init_state(p)
                state["step"].add_(1)
                step = state["step"].item()
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * wd)
                    else:
                        grad = grad + p * wd
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                bias_corrected_exp_avg = exp_avg / bias_correction1
                rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
                if rho_t > 5.0:
                    rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf
                                     / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
                    adaptive_lr = (bias_correction2 ** 0.5) / (exp_avg_sq.sqrt() + eps)
                    p.sub_(bias_corrected_exp_avg * lr * adaptive_lr * rect)
                else:
                    p.sub_(bias_corrected_exp_avg * lr)
        return loss
