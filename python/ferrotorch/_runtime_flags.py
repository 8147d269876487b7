"""Build and runtime flags of the ``torch`` namespace: ``is_inference``, ``set_warn_always`` /
``is_warn_always_enabled``, ``set_flush_denormal``, ``init_num_threads``,
``get_device_module``, ``is_vulkan_available``, ``compiled_with_cxx11_abi`` and the
``has_lapack``/``has_mkl``/``has_openmp``/``has_spectral`` build flags, with values that
describe ferrotorch (not a PyTorch build)."""

import ferrotorch as _ft
from ferrotorch import _C
from ferrotorch._export import exporter

__all__ = []

# The linear-algebra routines LAPACK provides to PyTorch are implemented natively, so code
# gated on ``has_lapack`` (torch.linalg on the CPU) works. No MKL, no OpenMP (the CPU kernels
# run on a Rust thread pool), and no FFT module (``torch.fft``) yet.
_FLAGS = {"has_lapack": True, "has_mkl": False, "has_openmp": False, "has_spectral": False}

# The device types PyTorch's device-string parser knows (its error lists them).
_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip",
                 "ve", "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
                 "privateuseone")
_warn_always = [False]


_export = exporter(__all__)


@_export
def is_inference(input):
    """Whether ``input`` was created in ``inference_mode`` (``Tensor.is_inference``)."""
    if not isinstance(input, _C.Tensor):
        raise TypeError("is_inference(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return input.is_inference()


@_export
def set_warn_always(b, /):
    """Ask warnings PyTorch issues once per process to be issued every time (the flag is
    recorded; ferrotorch's warnings go through Python's ``warnings`` filters)."""
    if not isinstance(b, bool):
        raise TypeError(f"set_warn_always(): argument 'b' must be bool, not {type(b).__name__}")
    _warn_always[0] = b


@_export
def is_warn_always_enabled():
    return _warn_always[0]


@_export
def set_flush_denormal(mode):
    """Flush-to-zero of subnormal floats is not configurable in ferrotorch: returns False, as
    PyTorch does on CPUs without the feature, and changes nothing."""
    if not isinstance(mode, bool):
        raise TypeError(f"set_flush_denormal(): argument 'mode' (position 1) must be bool, not "
                        f"{type(mode).__name__}")
    return False


@_export
def init_num_threads():
    """PyTorch initialises OpenMP's per-thread pool here; ferrotorch's kernel pool needs no
    per-thread set-up (the ``set_num_threads`` setting applies process-wide)."""


@_export
def is_vulkan_available():
    return False


@_export
def compiled_with_cxx11_abi():
    """True, as every PyTorch build since 2.6: ferrotorch is Rust and links no C++ ABI, so
    C++ extensions built against it would use the default (new) libstdc++ ABI anyway."""
    return True


def _device_type(device):
    if isinstance(device, _C.device):
        return device.type
    if not isinstance(device, str):
        raise TypeError(f"get_device_module(): expected a torch.device or str, got "
                        f"{type(device).__name__}")
    name = device.split(":", 1)[0]
    if name not in _DEVICE_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start of "
                           f"device string: {device}")
    return name


@_export
def get_device_module(device=None):
    """The ``torch.<device type>`` module for ``device`` (``ferrotorch.cpu`` /
    ``ferrotorch.cuda``); with no argument, that of the current accelerator (CUDA in a
    CUDA-enabled build, else the CPU)."""
    if device is None:
        acc = _ft.accelerator.current_accelerator()
        name = "cpu" if acc is None else acc.type
    else:
        name = _device_type(device)
    module = getattr(_ft, name, None) if name in ("cpu", "cuda") else None
    if module is None:
        raise RuntimeError(f"Device '{name}' does not have a corresponding module registered "
                           f"as 'torch.{name}'.")
    return module


for _name, _value in _FLAGS.items():
    if not hasattr(_ft, _name):
        setattr(_ft, _name, _value)
        __all__.append(_name)
