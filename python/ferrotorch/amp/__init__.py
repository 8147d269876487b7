"""``ferrotorch.amp``: automatic mixed precision (``autocast``, ``GradScaler``), as
``torch.amp``."""

from ferrotorch.amp.autocast_mode import (
    _install_op_lists,
    autocast,
    custom_bwd,
    custom_fwd,
    get_autocast_dtype,
    is_autocast_available,
    is_autocast_enabled,
)
from ferrotorch.amp.grad_scaler import GradScaler

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd", "get_autocast_dtype",
           "is_autocast_available", "is_autocast_enabled"]

_install_op_lists()
