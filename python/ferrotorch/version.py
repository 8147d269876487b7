"""``torch.version``: the package version and the toolkits this build targets."""

from ferrotorch import __version__  # set in ferrotorch/__init__.py before this loads
from ferrotorch import _C

__all__ = ["__version__", "debug", "cuda", "git_version", "hip", "rocm", "xpu"]

debug = False
# The CUDA backend binds the CUDA 12.9 driver API (cudarc's ``cuda-12090``), loaded at run
# time; a build without the ``cuda`` feature has none.
cuda = "12.9" if _C._cuda_built else None
git_version = "Unknown"  # not recorded at build time
hip = None
rocm = None
xpu = None
