"""Adafactor (Shazeer & Stern, 2018) as ``torch.optim.Adafactor``: factored second moments
(row / column statistics) for parameters of two or more dims."""

from ferrotorch import _C
from ferrotorch.optim.optimizer import (
    _closure_loss,
    Optimizer,
    _to_scalar,
    _use_grad_for_differentiable,
    _zeros_like,
)

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    r"""Adafactor as in PyTorch (step ``t``, ``beta2_decay = c``, ``eps = (eps1, eps2)``):

    .. code-block:: text

        g = grad (-grad when maximize);   beta2_t' = 1 - beta2_t = t^c
        rho = min(lr, 1 / sqrt(t));   alpha = max(eps2, RMS(p)) * rho
        p *= 1 - lr * weight_decay
        dim >= 2:  R = lerp(R, mean of g^2 over the last dim, t^c)    (row_var, [..., m, 1])
                   C = lerp(C, mean of g^2 over dim -2, t^c)          (col_var, [..., 1, n])
                   v = (R @ C) / max(mean of R over dim -2, eps1)
        else:      v = lerp(v, g^2, t^c)                                (variance)
        u = g / sqrt(max(v, eps1^2));   p -= alpha / max(1, RMS(u) / d) * u

    ``eps1`` of ``None`` is the machine epsilon of the group's first stepped parameter (as
    PyTorch's single-tensor loop, which keeps it for the rest of the group)."""

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                 weight_decay=0.0, *, foreach=None, maximize=False):
        if isinstance(lr, _C.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d,
                        weight_decay=weight_decay, foreach=foreach, maximize=maximize)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            for p in group["params"]:
                p_state = self.state.get(p, [])
                if len(p_state) != 0 and not isinstance(p_state["step"], _C.Tensor):
                    p_state["step"] = _C.tensor(float(p_state["step"]))

    def _init_state(self, p):
        if p.is_complex():
            raise RuntimeError("Adafactor does not support complex parameters")
        if getattr(p.grad, "is_sparse", False):
            raise RuntimeError("Adafactor does not support sparse gradients")
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _C.tensor(0.0)
            if p.grad.dim() > 1:
                row_shape = list(p.grad.shape)
                row_shape[-1] = 1
                state["row_var"] = p.grad.new_zeros(row_shape)
                col_shape = list(p.grad.shape)
                col_shape[-2] = 1
                state["col_var"] = p.grad.new_zeros(col_shape)
            else:
                state["variance"] = _zeros_like(p.grad)
        return state

    @_use_grad_for_differentiable
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            eps1, eps2 = group["eps"]
            lr, d, wd = _to_scalar(group["lr"]), group["d"], group["weight_decay"]
            beta2_decay = group["beta2_decay"]
            stepped = [p for p in group["params"] if p.grad is not None]
            states = [self._init_state(p) for p in stepped]
            for p, state in zip(stepped, states):
                grad = -p.grad if group["maximize"] else p.grad
                if eps1 is None:
                    from ferrotorch._compare import finfo

                    eps1 = finfo(p.dtype).eps
                state["step"].add_(1)
                step = state["step"].item()
                one_minus_beta2_t = step ** beta2_decay
                rho_t = min(lr, 1 / (step ** 0.5))
                alpha = max(eps2, p.norm(2).item() / (p.numel() ** 0.5)) * rho_t
                if wd != 0:
                    p.mul_(1 - lr * wd)
                if grad.dim() > 1:
                    row_var, col_var = state["row_var"], state["col_var"]
                    row_mean = grad.norm(dim=-1, keepdim=True).square() / grad.size(-1)
                    row_var.lerp_(row_mean, one_minus_beta2_t)
                    col_mean = grad.norm(dim=-2, keepdim=True).square() / grad.size(-2)
                    col_var.lerp_(col_mean, one_minus_beta2_t)
                    var_estimate = (row_var @ col_var) / \
                        row_var.mean(dim=-2, keepdim=True).clamp(min=eps1)
                else:
                    variance = state["variance"]
                    variance.lerp_(grad * grad, one_minus_beta2_t)
                    var_estimate = variance.clone()
                update = var_estimate.clamp(min=eps1 * eps1).rsqrt() * grad
                denom = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * d))
                p.add_(update, alpha=-alpha / denom)
        return loss
