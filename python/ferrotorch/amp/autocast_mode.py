"""``autocast``: mixed precision by op, as ``torch.autocast``.

Inside an enabled region, the ops that profit from low precision (matrix products,
``linear``, convolutions, attention) cast their floating-point tensor arguments to the region's
dtype (bfloat16 on the CPU, float16 on CUDA by default), and the ops that need range or
accuracy (the losses; on CUDA also softmax, log-softmax, norms, reductions) cast them up to
float32, following PyTorch's per-device op lists. Casts are
ordinary differentiable ``.to()`` calls, so gradients reach float32 parameters in float32.
The state is thread-local, and regions nest (``enabled=False`` inside an enabled region turns
it off). The wrappers are swapped in when the first region (in any thread) is entered and
swapped out when the last one is left, so code outside autocast runs the unwrapped ops.
"""

import functools
import threading
import warnings

from ferrotorch import _C

__all__ = ["autocast", "is_autocast_available", "get_autocast_dtype", "is_autocast_enabled",
           "custom_fwd", "custom_bwd"]

Tensor = _C.Tensor

_LOCAL = threading.local()
_DEFAULT_DTYPES = {"cpu": _C.bfloat16, "cuda": _C.float16}
_SUPPORTED = {"cpu": (_C.bfloat16, _C.float16), "cuda": (_C.float16, _C.bfloat16)}
# Regions entered in any thread and not yet left; the wrappers are installed while > 0.
_active_regions = 0
_active_lock = threading.Lock()
# (namespace, name, original, wrapper) for every op autocast handles.
_SWAPS = []


def _states():
    """This thread's autocast dtype per device type (None where autocast is off)."""
    states = getattr(_LOCAL, "states", None)
    if states is None:
        states = _LOCAL.states = {"cpu": None, "cuda": None}
    return states


def is_autocast_available(device_type):
    """Whether autocast supports ``device_type`` ('cpu' and 'cuda')."""
    return device_type in _DEFAULT_DTYPES


def get_autocast_dtype(device_type):
    """The dtype autocast uses on ``device_type`` (the enclosing region's, else the
    default)."""
    return _states().get(device_type) or _DEFAULT_DTYPES[device_type]


def is_autocast_enabled(device_type=None):
    """Whether an enabled autocast region for ``device_type`` (default 'cuda', as PyTorch's
    legacy form) surrounds this call."""
    return _states().get(device_type or "cuda") is not None


class autocast:  # noqa: N801 (PyTorch's name)
    """Context manager and decorator: run the enclosed ops in mixed precision on
    ``device_type``."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if not is_autocast_available(device_type):
            raise RuntimeError(
                f"User specified an unsupported autocast device_type '{device_type}'")
        self.device = device_type
        self.fast_dtype = _DEFAULT_DTYPES[device_type] if dtype is None else dtype
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
        global _active_regions
        states = _states()
        self._saved.append(states[self.device])
        states[self.device] = self.fast_dtype if self._enabled else None
        with _active_lock:
            if _active_regions == 0:
                _swap(install=True)
            _active_regions += 1
        return self

    def __exit__(self, exc_type, exc, tb):
        global _active_regions
        _states()[self.device] = self._saved.pop()
        with _active_lock:
            _active_regions -= 1
            if _active_regions == 0:
                _swap(install=False)
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
            return _states().get(device) if device in devices else None
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
        region = _states().get(device_type)
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
