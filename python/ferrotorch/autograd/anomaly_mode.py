"""Anomaly detection, as ``torch.autograd.anomaly_mode``: while enabled, the Rust engine
checks every gradient a backward formula returns for NaN (``RuntimeError: Function
'DivBackward0' returned nan values in its 0th output.``) and each recorded op remembers the
Python stack of its forward call, shown as a UserWarning when its backward fails."""

import functools
import warnings

from ferrotorch import _C

is_anomaly_enabled = _C.is_anomaly_enabled
is_anomaly_check_nan_enabled = _C.is_anomaly_check_nan_enabled


class detect_anomaly:
    """Context manager / decorator that enables anomaly detection inside its block."""

    def __init__(self, check_nan=True):
        self.prev = is_anomaly_enabled()
        self.check_nan = check_nan
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", stacklevel=2)

    def __enter__(self):
        _C._set_detect_anomaly(True, self.check_nan)
        return self

    def __exit__(self, *args):
        _C._set_detect_anomaly(self.prev, self.prev_check_nan)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(self.check_nan):
                return fn(*args, **kwargs)
        return wrapper


class set_detect_anomaly:
    """Turn anomaly detection on or off; as a function call it stays set, as a context
    manager the previous setting comes back on exit."""

    def __init__(self, mode, check_nan=True):
        from ferrotorch.autograd.grad_mode import _check_bool

        _check_bool("set_anomaly_enabled", mode)
        self.prev = is_anomaly_enabled()
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        _C._set_detect_anomaly(bool(mode), bool(check_nan))

    def __enter__(self):
        return self

    def __exit__(self, *args):
        _C._set_detect_anomaly(self.prev, self.prev_check_nan)
        return False


def set_anomaly_enabled(enabled, check_nan=True):
    """``torch.set_anomaly_enabled``: the plain switch behind the two classes above."""
    _C._set_detect_anomaly(bool(enabled), bool(check_nan))
