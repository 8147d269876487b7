"""Adamax (Kingma & Ba, 2014, section 7): Adam with the infinity norm."""

from ferrotorch import _C
from ferrotorch.optim.optimizer import (
    _check_adam_hyperparameters,
    _closure_loss,
    Optimizer,
    _to_scalar,
    _use_grad_for_differentiable,
    _zeros_like,
)

__all__ = ["Adamax"]


class Adamax(Optimizer):
    r"""Adamax as in PyTorch:

    .. code-block:: text

        g = grad (+ weight_decay * p)          (-grad with maximize=True)
        m = beta1 m + (1 - beta1) g
        u = max(beta2 u, |g| + eps)
        p = p - lr / (1 - beta1^t) * m / u
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        lr = _check_adam_hyperparameters(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)

    def _init_state(self, p):
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _C.tensor(0.0)
            state["exp_avg"] = _zeros_like(p)
            state["exp_inf"] = _zeros_like(p)
        return state

    @_use_grad_for_differentiable
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, wd = _to_scalar(group["lr"]), group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = -p.grad if group["maximize"] else p.grad
                state = self._init_state(p)
                state["step"].add_(1)
                step = state["step"].item()
                if wd != 0:
                    grad = grad + p * wd
                exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
                exp_avg.lerp_(grad, 1 - beta1)
                exp_inf.mul_(beta2)
                exp_inf.copy_(exp_inf.maximum(grad.abs() + eps))
                clr = lr / (1 - beta1 ** step)
                p.sub_(exp_avg / exp_inf * clr)
        return loss
