"""RMSprop (Hinton), optionally centered and with momentum."""

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

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    r"""RMSprop as in PyTorch:

    .. code-block:: text

        v = alpha v + (1 - alpha) g^2;   centered: ga = alpha ga + (1 - alpha) g, v~ = v - ga^2
        avg = sqrt(v~) + eps
        momentum: b = momentum b + g / avg; p -= lr b       else: p -= lr g / avg
    """

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        _check_tensor_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    @_use_grad_for_differentiable
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            fused = _fused_inputs(group)
            if fused is not None:
                self._fused_step(group, *fused)
                continue
            lr, alpha, eps = _to_scalar(group["lr"]), group["alpha"], group["eps"]
            wd, momentum = group["weight_decay"], group["momentum"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = -p.grad if group["maximize"] else p.grad
                state = self._init_state(p, group)
                state["step"].add_(1)
                if wd != 0:
                    grad = grad + p * wd
                square_avg = state["square_avg"]
                square_avg.mul_(alpha).add_(grad * grad * (1 - alpha))
                if group["centered"]:
                    grad_avg = state["grad_avg"]
                    grad_avg.mul_(alpha).add_(grad * (1 - alpha))
                    avg = (square_avg - grad_avg * grad_avg).sqrt() + eps
                else:
                    avg = square_avg.sqrt() + eps
                if momentum > 0:
                    buf = state["momentum_buffer"]
                    buf.mul_(momentum).add_(grad / avg)
                    p.sub_(buf * lr)
                else:
                    p.sub_(grad / avg * lr)
        return loss

    def _init_state(self, p, group):
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _C.tensor(0.0)
            state["square_avg"] = _zeros_like(p)
            if group["momentum"] > 0:
                state["momentum_buffer"] = _zeros_like(p)
            if group["centered"]:
                state["grad_avg"] = _zeros_like(p)
        return state

    def _fused_step(self, group, params, grads):
        states = [self._init_state(p, group) for p in params]
        momentum, centered = group["momentum"], group["centered"]
        _C._fused_rmsprop_(
            params, grads, [s["square_avg"] for s in states],
            [s["momentum_buffer"] for s in states] if momentum > 0 else [],
            [s["grad_avg"] for s in states] if centered else [],
            [s["step"] for s in states], lr=_to_scalar(group["lr"]), alpha=group["alpha"],
            eps=group["eps"], weight_decay=group["weight_decay"], momentum=momentum,
            centered=centered, maximize=group["maximize"])
