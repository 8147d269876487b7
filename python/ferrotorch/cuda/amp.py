"""``ferrotorch.cuda.amp``: the legacy CUDA spellings of ``ferrotorch.amp``."""

import functools
import warnings

from ferrotorch.amp import GradScaler as _GradScaler
from ferrotorch.amp import autocast as _autocast
from ferrotorch.amp import custom_bwd as _custom_bwd
from ferrotorch.amp import custom_fwd as _custom_fwd

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


class autocast(_autocast):  # noqa: N801 (PyTorch's name)
    """``autocast("cuda", ...)`` (deprecated in PyTorch in favour of ``torch.amp``)."""

    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """``GradScaler("cuda", ...)``."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled)


custom_fwd = functools.partial(_custom_fwd, device_type="cuda")
custom_bwd = functools.partial(_custom_bwd, device_type="cuda")
