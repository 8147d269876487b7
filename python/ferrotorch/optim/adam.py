"""Adam and AdamW (Kingma & Ba, 2014; Loshchilov & Hutter, 2017), optionally AMSGrad."""

import math

from ferrotorch import _C
from ferrotorch.optim.optimizer import (
    _check_adam_hyperparameters,
    _check_fused,
    _closure_loss,
    _fused_inputs,
    Optimizer,
    _to_scalar,
    _use_grad_for_differentiable,
    _zeros_like,
)

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    r"""Adam as in PyTorch:

    .. code-block:: text

        g = grad (+ weight_decay * p, or p *= 1 - lr * weight_decay when decoupled)
        m = beta1 m + (1 - beta1) g;   v = beta2 v + (1 - beta2) g^2
        v_max = max(v_max, v) with amsgrad
        p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        if isinstance(lr, _C.Tensor) and foreach and not capturable:
            raise ValueError(
                "lr as a Tensor is not supported for capturable=False and foreach=True")
        lr = _check_adam_hyperparameters(lr, eps, betas, weight_decay)
        _check_beta_types(betas, foreach, capturable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)
        _check_fused(fused, foreach, differentiable)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("decoupled_weight_decay", False)

    def _init_state(self, p, amsgrad):
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _C.tensor(0.0)
            state["exp_avg"] = _zeros_like(p)
            state["exp_avg_sq"] = _zeros_like(p)
            if amsgrad:
                state["max_exp_avg_sq"] = _zeros_like(p)
        return state

    @_use_grad_for_differentiable
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            fused = _fused_inputs(group, cuda=True)
            if fused is not None:
                self._fused_step(group, *fused)
                continue
            beta1, beta2 = group["betas"]
            lr, eps, wd = _to_scalar(group["lr"]), group["eps"], group["weight_decay"]
            amsgrad = group["amsgrad"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = -p.grad if group["maximize"] else p.grad
                state = self._init_state(p, amsgrad)
                state["step"].add_(1)
                step = state["step"].item()
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * wd)
                    else:
                        grad = grad + p * wd
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.mul_(beta1).add_(grad * (1 - beta1))
                exp_avg_sq.mul_(beta2).add_(grad * grad * (1 - beta2))
                bias_correction1 = 1 - beta1 ** step
                bias_correction2_sqrt = math.sqrt(1 - beta2 ** step)
                if amsgrad:
                    max_sq = state["max_exp_avg_sq"]
                    max_sq.copy_(max_sq.maximum(exp_avg_sq))
                    denom = max_sq.sqrt() / bias_correction2_sqrt + eps
                else:
                    denom = exp_avg_sq.sqrt() / bias_correction2_sqrt + eps
                p.sub_(exp_avg / denom * (lr / bias_correction1))
        return loss

    def _fused_step(self, group, params, grads):
        amsgrad = group["amsgrad"]
        states = [self._init_state(p, amsgrad) for p in params]
        beta1, beta2 = group["betas"]
        _C._fused_adam_(params, grads, [s["exp_avg"] for s in states],
                        [s["exp_avg_sq"] for s in states],
                        [s["max_exp_avg_sq"] for s in states] if amsgrad else [],
                        [s["step"] for s in states], lr=_to_scalar(group["lr"]), beta1=beta1,
                        beta2=beta2, eps=group["eps"], weight_decay=group["weight_decay"],
                        amsgrad=amsgrad, maximize=group["maximize"],
                        decoupled=group["decoupled_weight_decay"])


def _check_beta_types(betas, foreach, capturable):
    """PyTorch's Adam checks: both betas floats or both 1-element tensors (an int is neither)."""
    is_t = [isinstance(b, _C.Tensor) for b in betas[:2]]
    if not (all(is_t) or all(isinstance(b, float) for b in betas[:2])):
        raise ValueError("betas must be either both floats or both Tensors")
    for i, b in enumerate(betas[:2]):
        if is_t[i]:
            if foreach and not capturable:
                raise ValueError(f"betas[{i}] as a Tensor is not supported for "
                                 "capturable=False and foreach=True")
            if b.numel() != 1:
                raise ValueError(f"Tensor betas[{i}] must be 1-element")


class AdamW(Adam):
    r"""Adam with decoupled weight decay: ``p *= 1 - lr * weight_decay`` before the Adam
    update (default ``weight_decay=1e-2``)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
