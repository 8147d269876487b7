"""Rprop (Riedmiller & Braun, 1993): resilient backpropagation (sign-based steps)."""

from ferrotorch import _C
from ferrotorch.optim.optimizer import (
    _check_tensor_lr,
    _closure_loss,
    Optimizer,
    _to_scalar,
    _use_grad_for_differentiable,
    _zeros_like,
)

__all__ = ["Rprop"]


class Rprop(Optimizer):
    r"""Rprop as in PyTorch:

    .. code-block:: text

        s = sign(g * g_prev)
        s > 0:  eta = min(eta * eta_plus, step_size_max)
        s < 0:  eta = max(eta * eta_minus, step_size_min);  g = 0
        s = 0:  eta unchanged
        p = p - sign(g) * eta;   g_prev = g

    (the step sizes start at ``lr``; ``-grad`` with maximize=True.)
    """

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check_tensor_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach,
                        maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)

    def _init_state(self, p, grad, lr):
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _C.tensor(0.0)
            state["prev"] = _zeros_like(p)
            state["step_size"] = _C.full_like(grad, lr).detach()
        return state

    @_use_grad_for_differentiable
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            lr = _to_scalar(group["lr"])
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = -p.grad if group["maximize"] else p.grad
                state = self._init_state(p, grad, lr)
                state["step"].add_(1)
                prev, step_size = state["prev"], state["step_size"]
                # The sign of g * g_prev becomes the step-size factor (in the parameter's dtype).
                sign = (grad * prev).sign()
                decrease = sign < 0
                sign.masked_fill_(sign > 0, etaplus)
                sign.masked_fill_(decrease, etaminus)
                sign.masked_fill_(sign == 0, 1.0)
                step_size.mul_(sign).clamp_(step_size_min, step_size_max)
                # Where the gradient changed sign, skip the update and forget the gradient.
                grad = grad.masked_fill(decrease, 0.0)
                p.addcmul_(grad.sign(), step_size, value=-1)
                prev.copy_(grad)
        return loss
