"""Adadelta (Zeiler, 2012)."""

from ferrotorch import _C
from ferrotorch.optim.optimizer import (
    _check_tensor_lr,
    _closure_loss,
    _fused_inputs,
    Optimizer,
    _to_scalar,
    _use_grad_for_differentiable,
    _zeros_like,
)

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    r"""Adadelta as in PyTorch:

    .. code-block:: text

        v = rho v + (1 - rho) g^2
        d = sqrt(u + eps) / sqrt(v + eps) * g
        u = rho u + (1 - rho) d^2
        p = p - lr d
    """

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        _check_tensor_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                        maximize=maximize, capturable=capturable, foreach=foreach,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    @_use_grad_for_differentiable
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            fused = _fused_inputs(group)
            if fused is not None:
                self._fused_step(group, *fused)
                continue
            lr, rho, eps = _to_scalar(group["lr"]), group["rho"], group["eps"]
            wd = group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = -p.grad if group["maximize"] else p.grad
                state = self._init_state(p)
                state["step"].add_(1)
                if wd != 0:
                    grad = grad + p * wd
                square_avg, acc_delta = state["square_avg"], state["acc_delta"]
                square_avg.mul_(rho).add_(grad * grad * (1 - rho))
                std = (square_avg + eps).sqrt()
                delta = (acc_delta + eps).sqrt() / std * grad
                acc_delta.mul_(rho).add_(delta * delta * (1 - rho))
                p.sub_(delta * lr)
        return loss

    def _init_state(self, p):
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _C.tensor(0.0)
            state["square_avg"] = _zeros_like(p)
            state["acc_delta"] = _zeros_like(p)
        return state

    def _fused_step(self, group, params, grads):
        states = [self._init_state(p) for p in params]
        _C._fused_adadelta_(
            params, grads, [s["square_avg"] for s in states], [s["acc_delta"] for s in states],
            [s["step"] for s in states], lr=_to_scalar(group["lr"]), rho=group["rho"],
            eps=group["eps"], weight_decay=group["weight_decay"], maximize=group["maximize"])
