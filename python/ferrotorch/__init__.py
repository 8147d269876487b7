"""ferrotorch: a PyTorch-style tensor engine with a Rust core.

>>> import ferrotorch as torch
>>> x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
>>> (x + 1).tolist()
[[2.0, 3.0], [4.0, 5.0]]
"""

from ferrotorch import _C
from ferrotorch._C import *  # the native API
from ferrotorch._C import Tensor, device, dtype
from ferrotorch._size import Size
from ferrotorch import _tensor_str  # installs Tensor.__repr__/__str__
from ferrotorch._tensor_str import set_printoptions
from ferrotorch._functions import *
from ferrotorch._indexing import *
from ferrotorch._reduce import *
from ferrotorch._compare import *
from ferrotorch._stats import *  # quantile, cov, trapezoid, combinations, logcumsumexp...
from ferrotorch._api_extra import *  # aliases, fmax, block_diag, histogram, windows...
from ferrotorch import return_types
from ferrotorch import autograd, viz
from ferrotorch import special  # torch.special
from ferrotorch.special import i0  # torch.i0
from ferrotorch.special import polygamma  # torch.polygamma
from ferrotorch.special import gammainc as igamma  # torch.igamma
from ferrotorch.special import gammaincc as igammac  # torch.igammac
from ferrotorch.special import multigammaln as mvlgamma  # torch.mvlgamma
from ferrotorch.autograd.anomaly_mode import (  # torch.is_anomaly_enabled, ...
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_anomaly_enabled,
)
from ferrotorch.autograd.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from ferrotorch import random  # torch.random: seeding helpers, fork_rng
from ferrotorch import backends, cuda  # devices; backend switches
from ferrotorch import utils  # torch.utils.dlpack
# Linear algebra: the `ferrotorch.linalg` submodule and the top-level functions it provides.
from ferrotorch import linalg
from ferrotorch.linalg import _chain_matmul as chain_matmul
from ferrotorch.linalg import _cholesky_inverse as cholesky_inverse
from ferrotorch.linalg import _lu_unpack as lu_unpack
from ferrotorch.linalg import _torch_lu as lu
from ferrotorch.linalg import _torch_lu_solve as lu_solve
from ferrotorch.linalg import matrix_exp
from ferrotorch.linalg import _einsum as einsum
from ferrotorch.linalg import _tensordot as tensordot
from ferrotorch.linalg import _torch_norm as norm
from ferrotorch.linalg import _torch_qr as qr
from ferrotorch.linalg import _torch_slogdet as slogdet
from ferrotorch.linalg import _torch_svd as svd

# PyTorch's dtype aliases.
float = _C.float32
double = _C.float64
half = _C.float16
long = _C.int64
int = _C.int32
short = _C.int16

# PyTorch's math constants (torch.nan, torch.inf, torch.pi, torch.e) and torch.newaxis.
import math as _math

nan = _math.nan
inf = _math.inf
pi = _math.pi
e = _math.e
newaxis = None

__version__ = "0.1.0"

# Python layer: tensor pickling (copyreg), nn, optim (utils.data comes with utils).
from ferrotorch import _tensor_pickle
from ferrotorch import _legacy_tensor  # torch.FloatTensor & co.; Tensor.type(name)

globals().update(_legacy_tensor.CPU_TYPES)
from ferrotorch import nn, optim
from ferrotorch.serialization import load, save
from ferrotorch.nn.functional import pixel_shuffle, pixel_unshuffle  # torch.pixel_shuffle
from ferrotorch.nn.functional import conv3d, max_pool3d  # torch.conv3d, torch.max_pool3d
from ferrotorch import distributions, testing  # noqa: E402 (needs nn)
from ferrotorch import func  # torch.func: grad, vjp, jvp, jacrev, jacfwd, hessian, vmap (needs nn)
from ferrotorch.func import vmap  # torch.vmap
from ferrotorch.distributions.gamma import _standard_gamma  # noqa: E402
from ferrotorch import amp  # noqa: E402 (wraps nn.functional ops: needs nn)
from ferrotorch.amp import autocast  # noqa: E402 torch.autocast
from ferrotorch.cuda import amp as _cuda_amp  # noqa: E402,F401 torch.cuda.amp
from ferrotorch.amp import is_autocast_enabled  # noqa: E402 torch.is_autocast_enabled
from ferrotorch._compile import compile  # noqa: E402,A004 torch.compile (runs eagerly)
from ferrotorch._complex import *  # noqa: E402,F403 real, imag, conj, angle, isreal... on real tensors
from ferrotorch._gradient import gradient  # noqa: E402 torch.gradient
from ferrotorch._deterministic import *  # noqa: E402,F403 use_deterministic_algorithms...
from ferrotorch._storage import TypedStorage, UntypedStorage  # noqa: E402 Tensor.untyped_storage
from ferrotorch._default_device import get_default_device, set_default_device  # noqa: E402
from ferrotorch import distributed, multiprocessing  # noqa: E402
from ferrotorch import _memory_format  # noqa: E402 memory formats, layouts, memory_format=
_memory_format._install()
from ferrotorch._memory_format import (  # noqa: E402
    channels_last, channels_last_3d, contiguous_format, layout, memory_format, preserve_format,
    strided,
)
from ferrotorch import _api_gaps3  # noqa: E402 torch.dropout & co., torch.<op>_, *_copy, new...
_api_gaps3._install()
linalg._install_linalg_errors()  # noqa: E402 torch.linalg.LinAlgError from the solvers
from ferrotorch import accelerator  # noqa: E402 torch.accelerator (CUDA)
from ferrotorch import _tensor_apply  # noqa: E402 Tensor.apply_ / map_ / map2_
_tensor_apply._install()
from ferrotorch._legacy_tensor import set_default_tensor_type  # noqa: E402
from ferrotorch import cpu  # noqa: E402,F811 torch.cpu (device module, cpu.amp)
from ferrotorch import compiler  # noqa: E402 torch.compiler (is_compiling, disable...)
from ferrotorch import jit  # noqa: E402 torch.jit's eager-mode helpers (is_scripting, unused...)
from ferrotorch.amp import GradScaler  # noqa: E402 torch.GradScaler
from ferrotorch import _torch_functional  # noqa: E402,F401 torch.kl_div, torch.convolution...
from ferrotorch.amp.autocast_mode import (  # noqa: E402 torch.get/set_autocast_dtype & co.
    autocast_decrement_nesting, autocast_increment_nesting, clear_autocast_cache,
    get_autocast_cpu_dtype, get_autocast_dtype, get_autocast_gpu_dtype, is_autocast_cache_enabled,
    is_autocast_cpu_enabled, set_autocast_cache_enabled, set_autocast_cpu_dtype,
    set_autocast_cpu_enabled, set_autocast_dtype, set_autocast_enabled, set_autocast_gpu_dtype,
)
from ferrotorch import _runtime_flags  # noqa: E402,F401 is_inference, has_lapack, get_device_module
from ferrotorch import _tensor_members  # noqa: E402,F401 Tensor.set_/output_nr/..., nonzero_static
from ferrotorch import storage, version  # noqa: E402 torch.storage, torch.version
from ferrotorch import quasirandom  # noqa: E402 torch.quasirandom (SobolEngine)
from ferrotorch._binomial import binomial  # noqa: E402 torch.binomial
from ferrotorch._linalg_householder import geqrf, orgqr, ormqr  # noqa: E402 torch.geqrf & co.
from ferrotorch import _out  # noqa: E402 the out= keyword of torch.add & co. (wraps the above)
_out._install()
