"""``ferrotorch.nn.init``: in-place parameter initialisers (PyTorch's ``torch.nn.init``).

Every function fills its argument in place under ``no_grad`` and returns it.

>>> import ferrotorch as torch
>>> w = torch.nn.init.constant_(torch.zeros(2, 3), 0.5)
>>> w.tolist()
[[0.5, 0.5, 0.5], [0.5, 0.5, 0.5]]
"""

import math
import warnings

import numpy as np

from ferrotorch import _C
from ferrotorch.autograd.grad_mode import no_grad

Tensor = _C.Tensor

__all__ = [
    "calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_",
    "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
    "kaiming_normal_", "orthogonal_", "sparse_",
]


def calculate_gain(nonlinearity, param=None):
    r"""The recommended gain for a nonlinearity (linear/conv: 1, sigmoid: 1, tanh: 5/3,
    relu: sqrt(2), leaky_relu: sqrt(2 / (1 + slope^2)), selu: 3/4)."""
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                  "conv_transpose2d", "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    dimensions = tensor.dim()
    if dimensions < 2:
        raise ValueError(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"
        )
    num_input_fmaps = tensor.size(1)
    num_output_fmaps = tensor.size(0)
    receptive_field_size = 1
    for s in tensor.shape[2:]:
        receptive_field_size *= s
    return num_input_fmaps * receptive_field_size, num_output_fmaps * receptive_field_size


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _fill_from_numpy(tensor, array):
    """Copy a NumPy array into ``tensor`` in place (no autograd record)."""
    with no_grad():
        tensor.copy_(_C.from_numpy(np.array(array, order="C")))
    return tensor


def _rng(generator):
    """A NumPy generator seeded from ``generator`` (or the global ferrotorch generator), for
    the few initialisers computed in NumPy (orthogonal_, sparse_)."""
    if not hasattr(_C, "randint"):
        return np.random.default_rng()
    if generator is None:
        seed = int(_C.randint(0, 2 ** 62, (1,)).item())
    else:
        seed = int(_C.randint(0, 2 ** 62, (1,), generator=generator).item())
    return np.random.default_rng(seed)


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    r"""Fill ``tensor`` with U(a, b)."""
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    r"""Fill ``tensor`` with N(mean, std^2)."""
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    r"""Fill with N(mean, std^2) truncated to ``[a, b]`` (inverse-CDF method, as PyTorch)."""
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
                      "The distribution of values may be incorrect.", stacklevel=2)

    def norm_cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    with no_grad():
        lo, up = norm_cdf((a - mean) / std), norm_cdf((b - mean) / std)
        uniform_(tensor, 2 * lo - 1, 2 * up - 1, generator=generator)
        tensor.erfinv_()
        tensor.mul_(std * math.sqrt(2.0))
        tensor.add_(mean)
        lo = _C.tensor(a, dtype=tensor.dtype, device=tensor.device)
        hi = _C.tensor(b, dtype=tensor.dtype, device=tensor.device)
        out = tensor.maximum(lo).minimum(hi)
        tensor.copy_(out)
    return tensor


def constant_(tensor, val):
    r"""Fill ``tensor`` with ``val``."""
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    return constant_(tensor, 1.0)


def zeros_(tensor):
    with no_grad():
        return tensor.zero_()


def eye_(tensor):
    r"""Fill a 2-D tensor with the identity matrix."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill_from_numpy(tensor, np.eye(*tensor.shape))


def dirac_(tensor, groups=1):
    dims = tensor.ndim
    if dims not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tuple(tensor.shape)
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_chans_per_grp = sizes[0] // groups
    min_dim = min(out_chans_per_grp, sizes[1])
    arr = np.zeros(sizes)
    for g in range(groups):
        for d in range(min_dim):
            idx = (g * out_chans_per_grp + d, d) + tuple(s // 2 for s in sizes[2:])
            arr[idx] = 1
    return _fill_from_numpy(tensor, arr)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    r"""U(-a, a) with ``a = gain * sqrt(6 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    r"""N(0, std^2) with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    r"""U(-bound, bound) with ``bound = gain * sqrt(3 / fan)`` (He et al., 2015)."""
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    r"""N(0, std^2) with ``std = gain / sqrt(fan)``."""
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    return normal_(tensor, 0, std, generator)


def orthogonal_(tensor, gain=1, generator=None):
    r"""Fill with a (semi-)orthogonal matrix from the QR decomposition of a Gaussian matrix
    (trailing dimensions are flattened)."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = _rng(generator).normal(0.0, 1.0, size=(rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _fill_from_numpy(tensor, (q * gain).reshape(tuple(tensor.shape)))


def sparse_(tensor, sparsity, std=0.01, generator=None):
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    rng = _rng(generator)
    arr = rng.normal(0, std, size=(rows, cols))
    for col in range(cols):
        arr[rng.permutation(rows)[:num_zeros], col] = 0
    return _fill_from_numpy(tensor, arr)


# Deprecated aliases without the trailing underscore.
def _deprecated(fn):
    def wrapper(*args, **kwargs):
        warnings.warn(f"`nn.init.{fn.__name__[:-1]}` is now deprecated in favor of "
                      f"`nn.init.{fn.__name__}`.", FutureWarning, stacklevel=2)
        return fn(*args, **kwargs)
    wrapper.__name__ = fn.__name__[:-1]
    return wrapper


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
sparse = _deprecated(sparse_)
