"""ferrotorch: a PyTorch-style tensor engine with a Rust core.

>>> import ferrotorch as torch
>>> x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
>>> (x + 1).tolist()
[[2.0, 3.0], [4.0, 5.0]]
"""

from ferrotorch import _C
from ferrotorch._C import *  # the native API
from ferrotorch._C import Tensor, device, dtype  # noqa: F401
from ferrotorch._size import Size  # noqa: F401
from ferrotorch import _tensor_str  # noqa: F401  (installs Tensor.__repr__/__str__)
from ferrotorch._functions import *
from ferrotorch import autograd, viz
from ferrotorch.autograd.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)

from ferrotorch._indexing import *

# PyTorch's dtype aliases.
float = _C.float32  # noqa: A001
double = _C.float64
half = _C.float16
long = _C.int64
int = _C.int32  # noqa: A001
short = _C.int16

__version__ = "0.1.0"

from ferrotorch import random  # noqa: E402,F401  (torch.random: seeding helpers, fork_rng)
from ferrotorch import utils  # noqa: E402,F401  (torch.utils.dlpack)
# Linear algebra: the `ferrotorch.linalg` submodule and the top-level functions it provides.
from ferrotorch import linalg  # noqa: F401
from ferrotorch.linalg import _chain_matmul as chain_matmul  # noqa: F401
from ferrotorch.linalg import _cholesky_inverse as cholesky_inverse  # noqa: F401
from ferrotorch.linalg import _einsum as einsum  # noqa: F401
from ferrotorch.linalg import _tensordot as tensordot  # noqa: F401
from ferrotorch.linalg import _torch_norm as norm  # noqa: F401
from ferrotorch.linalg import _torch_qr as qr  # noqa: F401
from ferrotorch.linalg import _torch_slogdet as slogdet  # noqa: F401
from ferrotorch.linalg import _torch_svd as svd  # noqa: F401
