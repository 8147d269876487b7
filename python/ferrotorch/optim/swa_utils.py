"""Stochastic Weight Averaging and exponential moving averages of a model (PyTorch's
``torch/optim/swa_utils.py``): :class:`AveragedModel`, the :class:`SWALR` scheduler and
:func:`update_bn`.

>>> import ferrotorch as torch
>>> model = torch.nn.Linear(2, 1)
>>> swa_model = torch.optim.swa_utils.AveragedModel(model)
>>> swa_model.update_parameters(model)
>>> int(swa_model.n_averaged)
1
"""

import itertools
import math
from copy import deepcopy

import ferrotorch
from ferrotorch import _C
from ferrotorch.autograd.grad_mode import no_grad
from ferrotorch.nn.modules.module import Module
from ferrotorch.optim.lr_scheduler import (
    LRScheduler,
    _format_param,
    _warn_get_lr_called_within_step,
)

Tensor = _C.Tensor

__all__ = [
    "AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn",
    "get_ema_avg_fn", "get_swa_avg_fn",
]


def _scalar(x):
    return x.item() if isinstance(x, Tensor) else x


def get_ema_multi_avg_fn(decay=0.999):
    """An in-place ``multi_avg_fn``: ``ema = decay * ema + (1 - decay) * param`` for each
    tensor of a list."""

    def ema_update(ema_param_list, current_param_list, _):
        with no_grad():
            if ema_param_list[0].is_floating_point():
                for p_ema, p_model in zip(ema_param_list, current_param_list):
                    p_ema.lerp_(p_model, 1 - decay)
            else:
                for p_ema, p_model in zip(ema_param_list, current_param_list):
                    p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """An in-place ``multi_avg_fn``: the running mean
    ``avg = avg + (param - avg) / (num_averaged + 1)`` for each tensor of a list."""

    def swa_update(averaged_param_list, current_param_list, num_averaged):
        with no_grad():
            weight = 1 / (_scalar(num_averaged) + 1)
            if averaged_param_list[0].is_floating_point():
                for p_avg, p_model in zip(averaged_param_list, current_param_list):
                    p_avg.lerp_(p_model, weight)
            else:
                for p_avg, p_model in zip(averaged_param_list, current_param_list):
                    p_avg.copy_(p_avg + (p_model - p_avg) * weight)

    return swa_update


def get_ema_avg_fn(decay=0.999):
    """An ``avg_fn`` returning ``decay * ema + (1 - decay) * param``."""

    def ema_update(ema_param, current_param, num_averaged):
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """An ``avg_fn`` returning ``avg + (param - avg) / (num_averaged + 1)``."""

    def swa_update(averaged_param, current_param, num_averaged):
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


def _group_by_device_and_dtype(avg_list, model_list):
    groups = {}
    for p_avg, p_model in zip(avg_list, model_list):
        key = (str(p_avg.device), p_avg.dtype)
        entry = groups.setdefault(key, (p_avg.device, [], []))
        entry[1].append(p_avg)
        entry[2].append(p_model)
    return list(groups.values())


class AveragedModel(Module):
    r"""A copy of ``model`` whose parameters (and, with ``use_buffers=True``, buffers) are
    averaged over the models passed to :meth:`update_parameters`.

    By default the average is the equal-weight running mean (SWA). ``avg_fn(averaged,
    current, num_averaged)`` returns the new average of one tensor; ``multi_avg_fn(averaged
    list, current list, num_averaged)`` updates lists in place (e.g.
    ``get_ema_multi_avg_fn(0.999)`` for an exponential moving average). The first update
    copies the model's values. ``n_averaged`` (an int64 buffer) counts the updates. Without
    ``use_buffers`` the buffers are copied from the model at every update.
    """

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        assert avg_fn is None or multi_avg_fn is None, (
            "Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged",
                             _C.tensor(0, dtype=ferrotorch.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model):
        """Fold ``model``'s current parameters (and buffers with ``use_buffers``) into the
        average."""
        with no_grad():
            self._update_parameters(model)

    def _update_parameters(self, model):
        self_param = (itertools.chain(self.module.parameters(), self.module.buffers())
                      if self.use_buffers else self.parameters())
        model_param = (itertools.chain(model.parameters(), model.buffers())
                       if self.use_buffers else model.parameters())
        self_param_detached = []
        model_param_detached = []
        copy_param = bool(self.n_averaged == 0)
        for p_averaged, p_model in zip(self_param, model_param):
            p_model_ = p_model.detach()
            if str(p_model_.device) != str(p_averaged.device):
                p_model_ = p_model_.to(p_averaged.device)
            self_param_detached.append(p_averaged.detach())
            model_param_detached.append(p_model_)
            if copy_param:
                p_averaged.detach().copy_(p_model_)

        if self.n_averaged.item() > 0:
            if self.multi_avg_fn is not None or self.avg_fn is None:
                groups = _group_by_device_and_dtype(self_param_detached, model_param_detached)
                for device, self_params, model_params in groups:
                    n_averaged = self.n_averaged.to(device)
                    if self.multi_avg_fn:
                        self.multi_avg_fn(self_params, model_params, n_averaged)
                    elif device.type == "cuda":
                        get_swa_multi_avg_fn()(self_params, model_params, n_averaged)
                    else:
                        avg_fn = get_swa_avg_fn()
                        for p_averaged, p_model in zip(self_params, model_params):
                            p_averaged.copy_(avg_fn(p_averaged, p_model, n_averaged))
            else:
                for p_averaged, p_model in zip(self_param_detached, model_param_detached):
                    n_averaged = self.n_averaged.to(p_averaged.device)
                    p_averaged.detach().copy_(
                        self.avg_fn(p_averaged.detach(), p_model, n_averaged))

        if not self.use_buffers:
            # Without averaging the buffers, keep them in sync with the source model.
            for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                b_swa.detach().copy_(b_model.detach().to(b_swa.device))
        self.n_averaged += 1


def update_bn(loader, model, device=None):
    r"""Recompute the BatchNorm running statistics of ``model`` with one pass over
    ``loader`` (cumulative averages over its batches, ``momentum=None``); a batch that is a
    list or tuple contributes its first element. Each BatchNorm's momentum and the model's
    training mode are restored afterwards."""
    from ferrotorch.nn.modules.batchnorm import _BatchNorm

    with no_grad():
        momenta = {}
        for module in model.modules():
            if isinstance(module, _BatchNorm):
                module.reset_running_stats()
                momenta[module] = module.momentum
        if not momenta:
            return
        was_training = model.training
        model.train()
        for module in momenta:
            module.momentum = None
        for input in loader:
            if isinstance(input, (list, tuple)):
                input = input[0]
            if device is not None:
                input = input.to(device)
            model(input)
        for bn_module in momenta:
            bn_module.momentum = momenta[bn_module]
        model.train(was_training)


class SWALR(LRScheduler):
    r"""Anneal each group's lr to ``swa_lr`` over ``anneal_epochs`` epochs (cosine or
    linear), then hold it:

    .. code-block:: text

        t = min(1, step / anneal_epochs);  alpha = (1 - cos(pi t)) / 2  (cos)  or  t  (linear)
        lr = swa_lr * alpha + lr_0 * (1 - alpha)

    where ``lr_0`` is the lr the annealing started from (recovered from the current lr, so it
    composes with other schedulers as PyTorch's does).
    """

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos",
                 last_epoch=-1):
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for swa_lr_, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = swa_lr_
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got "
                             f"{anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def _set_anneal_func(self, anneal_strategy):
        self._anneal_strategy = anneal_strategy
        if anneal_strategy == "cos":
            self.anneal_func = self._cosine_anneal
        else:
            self.anneal_func = self._linear_anneal

    def state_dict(self):
        """Everything in ``__dict__`` except the optimizer and ``anneal_func`` (rebuilt from
        ``_anneal_strategy`` on load)."""
        return {key: value for key, value in self.__dict__.items()
                if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha)
                for group, lr in zip(self.optimizer.param_groups, prev_lrs)]
