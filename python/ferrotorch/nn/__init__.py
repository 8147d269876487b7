"""``ferrotorch.nn``: modules, parameters, functional API, initialisers (as ``torch.nn``)."""

from ferrotorch.nn.parameter import (  # noqa: F401
    Buffer, Parameter, UninitializedBuffer, UninitializedParameter,
)
from ferrotorch.nn import functional, init  # noqa: F401
from ferrotorch.nn.modules import *  # noqa: F401,F403
from ferrotorch.nn.modules import Module  # noqa: F401
from ferrotorch.nn import utils  # noqa: F401
from ferrotorch.nn import parallel  # noqa: F401,E402
from ferrotorch.nn.parallel import DataParallel  # noqa: F401,E402
