"""Stochastic gradient descent (optionally with momentum / Nesterov momentum)."""

from ferrotorch import _C
from ferrotorch.optim.optimizer import (
    _check_fused,
    _check_tensor_lr,
    _closure_loss,
    _fused_inputs,
    Optimizer,
    required,
    _to_scalar,
    _use_grad_for_differentiable,
    _zeros_like,
)

__all__ = ["SGD"]


class SGD(Optimizer):
    r"""SGD as in PyTorch:

    .. code-block:: text

        g = grad (+ weight_decay * p);  with momentum:
        b = momentum * b + (1 - dampening) * g   (b = g on the first step)
        g = g + momentum * b if nesterov else b
        p = p - lr * g          (p + lr * g with maximize=True)
    """

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False,
                 fused=None):
        _check_tensor_lr(lr)
        if lr is not required and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                        foreach=foreach, differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)
        _check_fused(fused, foreach, differentiable)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)

    @_use_grad_for_differentiable
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            fused = _fused_inputs(group, cuda=True)
            if fused is not None:
                self._fused_step(group, *fused)
                continue
            lr, momentum = _to_scalar(group["lr"]), group["momentum"]
            dampening, wd = group["dampening"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                d_p = -p.grad if group["maximize"] else p.grad
                if wd != 0:
                    d_p = d_p + p * wd
                if momentum != 0:
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = d_p.detach().clone()
                        state["momentum_buffer"] = buf
                    else:
                        buf.mul_(momentum).add_(d_p * (1 - dampening))
                    d_p = d_p + buf * momentum if group["nesterov"] else buf
                p.sub_(d_p * lr)
        return loss

    def _fused_step(self, group, params, grads):
        bufs, fresh = [], []
        if group["momentum"] != 0:
            for p in params:
                state = self.state[p]
                buf = state.get("momentum_buffer")
                fresh.append(buf is None)
                if buf is None:
                    buf = state["momentum_buffer"] = _zeros_like(p)
                bufs.append(buf)
        _C._fused_sgd_(params, grads, bufs, fresh, lr=_to_scalar(group["lr"]),
                       momentum=group["momentum"], dampening=group["dampening"],
                       weight_decay=group["weight_decay"], nesterov=group["nesterov"],
                       maximize=group["maximize"])
