"""Adagrad (Duchi et al., 2011)."""

from ferrotorch import _C
from ferrotorch.optim.optimizer import (
    _check_fused,
    _check_tensor_lr,
    _closure_loss,
    _fused_inputs,
    Optimizer,
    _to_scalar,
    _use_grad_for_differentiable,
)

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    r"""Adagrad as in PyTorch:

    .. code-block:: text

        clr = lr / (1 + (t - 1) lr_decay);   s = s + g^2;   p = p - clr g / (sqrt(s) + eps)
    """

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0,
                 initial_accumulator_value=0, eps=1e-10, foreach=None, *, maximize=False,
                 differentiable=False, fused=None):
        _check_tensor_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(
                f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        _check_fused(fused, foreach, differentiable)
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = _C.tensor(0.0)
                init_value = group["initial_accumulator_value"]
                state["sum"] = (p.detach() * 0 + init_value).contiguous()

    @_use_grad_for_differentiable
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            fused = _fused_inputs(group)
            if fused is not None:
                self._fused_step(group, *fused)
                continue
            lr, lr_decay, eps, wd = (_to_scalar(group["lr"]), group["lr_decay"], group["eps"],
                                     group["weight_decay"])
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = -p.grad if group["maximize"] else p.grad
                state = self.state[p]
                state["step"].add_(1)
                step = state["step"].item()
                if wd != 0:
                    grad = grad + p * wd
                clr = lr / (1 + (step - 1) * lr_decay)
                state["sum"].add_(grad * grad)
                std = state["sum"].sqrt() + eps
                p.sub_(grad / std * clr)
        return loss

    def _fused_step(self, group, params, grads):
        states = [self.state[p] for p in params]
        _C._fused_adagrad_(
            params, grads, [s["sum"] for s in states], [s["step"] for s in states],
            lr=_to_scalar(group["lr"]), lr_decay=group["lr_decay"],
            weight_decay=group["weight_decay"], eps=group["eps"], maximize=group["maximize"])
