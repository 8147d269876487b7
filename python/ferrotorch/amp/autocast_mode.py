"""``autocast``: mixed precision by op, as ``torch.autocast``, and ``torch``'s autocast state
functions (``get/set_autocast_dtype``, ``is/set_autocast_enabled``, the cache flag, the
nesting counter and the deprecated ``*_cpu_*``/``*_gpu_*`` spellings).

Inside an enabled region, the ops that profit from low precision (matrix products,
``linear``, convolutions, attention) cast their floating-point tensor arguments to the region's
dtype (bfloat16 on the CPU, float16 on CUDA by default), and the ops that need range or
accuracy (the losses; on CUDA also softmax, log-softmax, norms, reductions) cast them up to
float32, following PyTorch's per-device op lists. Casts are
ordinary differentiable ``.to()`` calls, so gradients reach float32 parameters in float32.
The state is thread-local and kept as PyTorch's: per device type an enabled flag and an
autocast dtype (what ``autocast(dtype=None)`` uses and ``set_autocast_dtype`` changes). Regions
nest (``enabled=False`` inside an enabled region turns it off) and restore the state on exit.
The wrappers are swapped in when the first region (in any thread) is entered, or while
``set_autocast_enabled`` has autocast on outside a region, and swapped out after the last, so
code outside autocast runs the unwrapped ops.

Autocast on ferrotorch casts per call and keeps no cast cache: the cache flag is recorded and
reported, and ``clear_autocast_cache`` has nothing to drop.
"""

import functools
import threading
import warnings

from ferrotorch import _C

__all__ = ["autocast", "is_autocast_available", "get_autocast_dtype", "is_autocast_enabled",
           "custom_fwd", "custom_bwd"]

Tensor = _C.Tensor

# PyTorch's device types (the error for any other name lists them); the default autocast dtype
# is bfloat16 on cpu/xla/hpu and float16 elsewhere.
_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip",
                 "ve", "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
                 "privateuseone")
_BF16_DEVICES = ("cpu", "xla", "hpu")
_NATIVE = ("cpu", "cuda")  # the device types whose ops autocast rewrites (others: state only)
_SUPPORTED = {"cpu": (_C.bfloat16, _C.float16), "cuda": (_C.float16, _C.bfloat16)}
# Holders (regions, and threads with autocast set on outside one) in any thread; the wrappers
# are installed while > 0.
_active_regions = 0
_active_lock = threading.Lock()
# (namespace, name, original, wrapper) for every op autocast handles.
_SWAPS = []


class _ThreadState(threading.local):
    """This thread's autocast state (``__init__`` runs once per thread)."""

    def __init__(self):
        self.dtypes = {}  # device type -> set dtype (absent: the default)
        self.enabled = {}  # device type -> bool (absent: off)
        self.cache = True
        self.nesting = 0  # autocast_increment/decrement_nesting's counter (regions bump it too)
        self.depth = 0  # open regions
        self.holds = False  # this thread holds the wrappers for set_autocast_enabled


_STATE = _ThreadState()


def _check_device(device_type):
    if not isinstance(device_type, str):
        raise TypeError(f"expected a device type string, got {type(device_type).__name__}")
    if device_type not in _DEVICE_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start of "
                           f"device string: {device_type}")
    return device_type


def _default_dtype(device_type):
    return _C.bfloat16 if device_type in _BF16_DEVICES else _C.float16


def _active_dtype(device_type):
    """The dtype ops on ``device_type`` are cast to (None where autocast is off or the device
    has no autocast op lists)."""
    if device_type in _NATIVE and _STATE.enabled.get(device_type):
        return _STATE.dtypes.get(device_type) or _default_dtype(device_type)
    return None


def _retain(delta):
    """Count a holder of the op wrappers in (+1) or out (-1), swapping them at zero."""
    global _active_regions
    with _active_lock:
        if delta > 0 and _active_regions == 0:
            _swap(install=True)
        _active_regions += delta
        if delta < 0 and _active_regions == 0:
            _swap(install=False)


def _hold_wrappers():
    """Keep the op wrappers installed while this thread has autocast switched on by
    ``set_autocast_enabled`` outside any region (open regions hold them themselves)."""
    want = any(_STATE.enabled.get(d) for d in _NATIVE)
    if want == _STATE.holds or (want and _STATE.depth > 0):
        return
    _retain(1 if want else -1)
    _STATE.holds = want


def _deprecated(old, new):
    warnings.warn(f"torch.{old} is deprecated. Please use torch.{new} instead.",
                  DeprecationWarning, stacklevel=3)


def is_autocast_available(device_type):
    """Whether autocast supports ``device_type`` ('cpu' and 'cuda')."""
    return device_type in _SUPPORTED


# ------------------------------------------------------------------ dtype
def get_autocast_dtype(device_type):
    """The dtype autocast uses on ``device_type``: the region's, or the one set by
    ``set_autocast_dtype`` (bfloat16 on the CPU, float16 on CUDA by default)."""
    _check_device(device_type)
    return _STATE.dtypes.get(device_type) or _default_dtype(device_type)


def set_autocast_dtype(device_type, dtype):
    """Set the dtype autocast uses on ``device_type`` (also inside an open region, until it
    ends)."""
    _check_device(device_type)
    if not isinstance(dtype, _C.dtype):
        raise TypeError(f"set_autocast_dtype(): argument 'dtype' (position 2) must be "
                        f"torch.dtype, not {type(dtype).__name__}")
    _STATE.dtypes[device_type] = dtype


# ------------------------------------------------------------------ enabled
def is_autocast_enabled(device_type=None):
    """Whether autocast is on for ``device_type`` (no argument: CUDA, PyTorch's legacy
    form)."""
    return _STATE.enabled.get(_check_device("cuda" if device_type is None else device_type),
                              False)


def set_autocast_enabled(device_type, enabled=None):
    """``set_autocast_enabled(device_type, enabled)``, or the legacy
    ``set_autocast_enabled(enabled)`` for CUDA."""
    if enabled is None and isinstance(device_type, bool):
        device_type, enabled = "cuda", device_type
    _check_device(device_type)
    if not isinstance(enabled, bool):
        raise TypeError(f"set_autocast_enabled(): argument 'enabled' (position 2) must be bool, "
                        f"not {type(enabled).__name__}")
    _STATE.enabled[device_type] = enabled
    if device_type in _NATIVE:
        _hold_wrappers()


# ------------------------------------------------------------------ cache and nesting
def is_autocast_cache_enabled():
    return _STATE.cache


def set_autocast_cache_enabled(enabled):
    if not isinstance(enabled, bool):
        raise TypeError(f"set_autocast_cache_enabled(): argument 'enabled' (position 1) must be "
                        f"bool, not {type(enabled).__name__}")
    _STATE.cache = enabled


def clear_autocast_cache():
    """Nothing to clear: ferrotorch's autocast casts per call and caches no casts."""


def autocast_increment_nesting():
    _STATE.nesting += 1
    return _STATE.nesting


def autocast_decrement_nesting():
    _STATE.nesting -= 1
    return _STATE.nesting


# ------------------------------------------------------------------ deprecated spellings
def get_autocast_cpu_dtype():
    _deprecated("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype):
    _deprecated("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def is_autocast_cpu_enabled():
    _deprecated("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled):
    _deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


def get_autocast_gpu_dtype():
    _deprecated("get_autocast_gpu_dtype()", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype):
    _deprecated("set_autocast_gpu_dtype(dtype)", "set_autocast_dtype('cuda', dtype)")
    set_autocast_dtype("cuda", dtype)


# ------------------------------------------------------------------ regions
class autocast:  # noqa: N801 (PyTorch's name)
    """Context manager and decorator: run the enclosed ops in mixed precision on
    ``device_type``. As ``torch.autocast``, entry sets the device's dtype and enabled flag and
    the cache flag and bumps the nesting counter; exit restores them."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if not is_autocast_available(device_type):
            raise RuntimeError(
                f"User specified an unsupported autocast device_type '{device_type}'")
        self.device = device_type
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self._cache_enabled = cache_enabled
        if enabled and device_type == "cuda":
            from ferrotorch import cuda

            if not cuda.is_available():
                warnings.warn("User provided device_type of 'cuda', but CUDA is not available. "
                              "Disabling", stacklevel=2)
                enabled = False
        if enabled and self.fast_dtype not in _SUPPORTED[device_type]:
            if device_type == "cpu":
                warnings.warn("In CPU autocast, but the target dtype is not supported. "
                              "Disabling autocast.\nCPU Autocast only supports dtype of "
                              "torch.bfloat16, torch.float16 currently.", stacklevel=2)
            else:
                warnings.warn("In CUDA autocast, but the target dtype is not supported. "
                              "Disabling autocast.\nCUDA Autocast only supports dtype of "
                              "torch.float16 or torch.bfloat16 currently.", stacklevel=2)
            enabled = False
        self._enabled = enabled
        self._saved = []

    def __enter__(self):
        state = _STATE
        self._saved.append((state.dtypes.get(self.device), state.enabled.get(self.device, False),
                            state.cache))
        state.dtypes[self.device] = self.fast_dtype
        state.enabled[self.device] = self._enabled
        if self._cache_enabled is not None:
            state.cache = bool(self._cache_enabled)
        state.nesting += 1
        state.depth += 1
        _retain(1)
        return self

    def __exit__(self, exc_type, exc, tb):
        state = _STATE
        dtype, state.enabled[self.device], state.cache = self._saved.pop()
        if dtype is None:
            state.dtypes.pop(self.device, None)
        else:
            state.dtypes[self.device] = dtype
        state.nesting -= 1
        state.depth -= 1
        _hold_wrappers()  # set_autocast_enabled may have turned autocast on inside the region
        _retain(-1)
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def decorated(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return decorated


def _region_dtype(args, kwargs, devices=("cpu", "cuda")):
    """The autocast dtype for the device of the first floating-point tensor argument (None
    outside a region, or where that device is not in ``devices``)."""
    for a in (*args, *kwargs.values()):
        if isinstance(a, (list, tuple)):
            a = next((t for t in a if isinstance(t, Tensor)), None)
        if isinstance(a, Tensor) and a.dtype.is_floating_point:
            device = a.device.type
            return _active_dtype(device) if device in devices else None
    return None


def _cast(x, dtype, only_from=None):
    if isinstance(x, Tensor):
        if x.dtype.is_floating_point and x.dtype != dtype and (
                only_from is None or x.dtype in only_from):
            return x.to(dtype)
        return x
    if isinstance(x, (list, tuple)):
        return type(x)(_cast(v, dtype, only_from) for v in x)
    return x


def _wrap(fn, to_float32, devices):
    @functools.wraps(fn)
    def autocast_op(*args, **kwargs):
        dtype = _region_dtype(args, kwargs, devices)
        if dtype is not None:
            if to_float32:
                dtype, only = _C.float32, (_C.float16, _C.bfloat16)
            else:
                only = None
            args = tuple(_cast(a, dtype, only) for a in args)
            kwargs = {k: v if k == "out" else _cast(v, dtype, only)  # out= is written into
                      for k, v in kwargs.items()}
        return fn(*args, **kwargs)

    autocast_op.__wrapped_by_autocast__ = fn
    return autocast_op


def _install(namespace, names, to_float32, devices=("cpu", "cuda")):
    """Prepare wrappers for ``namespace.<name>`` (applied by ``_swap``), casting only for
    tensors on ``devices``."""
    for name in names:
        fn = getattr(namespace, name, None)
        if fn is not None:
            _SWAPS.append((namespace, name, fn, _wrap(fn, to_float32, devices)))


def _swap(install):
    for namespace, name, original, wrapper in _SWAPS:
        setattr(namespace, name, wrapper if install else original)


def _install_op_lists():
    """Wrap PyTorch's autocast op lists where ferrotorch has them."""
    import ferrotorch
    from ferrotorch.nn import functional as F

    # PyTorch's lists differ by device: CPU autocast leaves mv/addmv/addr in float32 and
    # keeps softmax, the norms, the pointwise and reduction ops in the input dtype.
    lower = ("matmul", "mm", "bmm", "addmm", "addbmm", "baddbmm", "chain_matmul", "conv1d",
             "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "prelu")
    _install(ferrotorch, lower, False)
    _install(ferrotorch, ("mv", "addmv", "addr"), False, ("cuda",))
    _install(Tensor, ("__matmul__", "__rmatmul__", "matmul", "mm", "bmm", "addmm", "baddbmm"),
             False)
    _install(Tensor, ("mv", "addmv"), False, ("cuda",))
    _install(F, ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                 "prelu", "scaled_dot_product_attention"), False)
    _install(F, ("bilinear",), False, ("cuda",))
    losses = ("nll_loss", "cross_entropy", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
              "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss",
              "cosine_embedding_loss", "hinge_embedding_loss", "margin_ranking_loss",
              "triplet_margin_loss", "multi_margin_loss", "soft_margin_loss")
    _install(F, losses, True)
    _install(F, ("binary_cross_entropy",), True, ("cpu",))  # on CUDA PyTorch refuses it
    _install(F, ("softmax", "log_softmax", "layer_norm", "group_norm", "batch_norm",
                 "cosine_similarity", "normalize", "softplus", "gelu", "gaussian_nll_loss"),
             True, ("cuda",))
    _install(ferrotorch, ("prod", "cdist"), True)
    _install(ferrotorch, ("softmax", "log_softmax", "logsumexp", "cumsum", "cumprod", "exp",
                          "log", "pow", "sum", "norm", "dist"), True, ("cuda",))


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorator for a custom ``autograd.Function.forward``: with ``cast_inputs``, run the
    forward with autocast off on ``device_type`` and its floating inputs cast to that dtype
    (when called inside an enabled region); the backward then runs as the forward did."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        region = _active_dtype(device_type)
        args[0]._fwd_used_autocast = region is not None
        args[0]._dtype = region
        if cast_inputs is None or region is None:
            return fwd(*args, **kwargs)
        with autocast(device_type=device_type, enabled=False):
            return fwd(*_cast(args, cast_inputs),
                       **{k: _cast(v, cast_inputs) for k, v in kwargs.items()})

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """Decorator for a custom ``autograd.Function.backward``: run it with the autocast state
    its forward had."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        enabled = getattr(ctx, "_fwd_used_autocast", False)
        with autocast(device_type=device_type, enabled=enabled,
                      dtype=getattr(ctx, "_dtype", None)):
            return bwd(*args, **kwargs)

    return decorate_bwd
