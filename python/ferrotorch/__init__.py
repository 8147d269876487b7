"""ferrotorch: a PyTorch-style tensor engine with a Rust core.

>>> import ferrotorch as torch
>>> x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
>>> (x + 1).tolist()
[[2.0, 3.0], [4.0, 5.0]]
"""

from ferrotorch import _C
from ferrotorch._C import *  # noqa: F401,F403  (the native API)
from ferrotorch._C import Tensor, device, dtype  # noqa: F401
from ferrotorch._size import Size  # noqa: F401
from ferrotorch import _tensor_str  # noqa: F401  (installs Tensor.__repr__/__str__)
from ferrotorch._functions import *  # noqa: F401,F403
from ferrotorch import return_types  # noqa: F401
from ferrotorch._reduce import *  # noqa: F401,F403

# PyTorch's dtype aliases.
float = _C.float32  # noqa: A001
double = _C.float64
half = _C.float16
long = _C.int64
int = _C.int32  # noqa: A001
short = _C.int16

__version__ = "0.1.0"
