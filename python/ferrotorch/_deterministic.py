"""``torch.use_deterministic_algorithms`` and its queries.

The flags are recorded so that code which sets and reads them runs unchanged. ferrotorch's
CPU kernels are deterministic already (reductions and scatters accumulate in a fixed order),
so turning the mode on changes no result and no kernel raises for being nondeterministic.
``backends.cudnn.deterministic`` is a separate flag, as in PyTorch.
"""

import builtins

__all__ = ["use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
           "get_deterministic_debug_mode"]

_enabled = False
_warn_only = False


def _check_bool(fn, name, value, position=None):
    if not isinstance(value, builtins.bool):
        where = f" (position {position})" if position is not None else ""
        raise TypeError(f"{fn}(): argument '{name}'{where} must be bool, not "
                        f"{type(value).__name__}")


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Record whether operations must use deterministic algorithms (``warn_only``: warn
    instead of raising for ops that have none). ferrotorch's CPU kernels are deterministic,
    so this changes no result."""
    global _enabled, _warn_only
    _check_bool("use_deterministic_algorithms", "mode", mode, 1)
    _check_bool("use_deterministic_algorithms", "warn_only", warn_only)
    _enabled = mode
    _warn_only = warn_only


def are_deterministic_algorithms_enabled():
    """Whether ``use_deterministic_algorithms(True)`` is in effect."""
    return _enabled


def is_deterministic_algorithms_warn_only_enabled():
    """Whether ``use_deterministic_algorithms`` was turned on with ``warn_only=True``."""
    return _warn_only


def set_deterministic_debug_mode(debug_mode):
    """``'default'``/0: off; ``'warn'``/1: on, warn only; ``'error'``/2: on."""
    if isinstance(debug_mode, str):
        modes = {"default": 0, "warn": 1, "error": 2}
        if debug_mode not in modes:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, "
                               f"`warn`, `error`, but got {debug_mode}")
        debug_mode = modes[debug_mode]
    if debug_mode == 0:
        use_deterministic_algorithms(False)
    elif debug_mode == 1:
        use_deterministic_algorithms(True, warn_only=True)
    elif debug_mode == 2:
        use_deterministic_algorithms(True)
    else:
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got "
                           f"{debug_mode}")


def get_deterministic_debug_mode():
    """0 (off), 1 (warn only) or 2 (on)."""
    if not _enabled:
        return 0
    return 1 if _warn_only else 2
