"""ASGD: averaged stochastic gradient descent (Polyak & Juditsky, 1992)."""

from ferrotorch import _C
from ferrotorch.optim.optimizer import (
    _check_tensor_lr,
    _closure_loss,
    Optimizer,
    _to_scalar,
    _use_grad_for_differentiable,
    _zeros_like,
)

__all__ = ["ASGD"]


class ASGD(Optimizer):
    r"""ASGD as in PyTorch:

    .. code-block:: text

        g = grad (+ weight_decay * p)          (-grad with maximize=True)
        p = p (1 - lambd eta) - eta g
        ax = ax + mu (p - ax)        (ax = p while mu == 1)
        eta = lr / (1 + lambd lr t)^alpha;    mu = 1 / max(1, t - t0)

    ``eta`` and ``mu`` are scalar-tensor state entries of the default dtype, as in PyTorch;
    ``ax`` holds the averaged parameters.
    """

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        _check_tensor_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
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

    def _init_state(self, p, lr):
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _C.tensor(0.0)
            state["eta"] = _C.tensor(float(lr))
            state["mu"] = _C.tensor(1.0)
            state["ax"] = _zeros_like(p)
        return state

    @_use_grad_for_differentiable
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr, lambd = _to_scalar(group["lr"]), group["lambd"]
            alpha, t0, wd = group["alpha"], group["t0"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = -p.grad if group["maximize"] else p.grad
                state = self._init_state(p, lr)
                state["step"].add_(1)
                if wd != 0:
                    grad = grad + p * wd
                eta_value = state["eta"].item()
                p.mul_(1 - lambd * eta_value)
                p.sub_(grad * eta_value)
                ax, mu_value = state["ax"], state["mu"].item()
                if mu_value != 1:
                    ax.add_((p - ax) * mu_value)
                else:
                    ax.copy_(p)
                step = state["step"].item()
                state["eta"].fill_(lr / ((1 + lambd * lr * step) ** alpha))
                state["mu"].fill_(1 / max(1, step - t0))
        return loss
