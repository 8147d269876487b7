from ferrotorch.nn.modules.module import Module  # noqa: F401
from ferrotorch.nn.modules.container import (  # noqa: F401
    ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential,
)
from ferrotorch.nn.modules.linear import Bilinear, Identity, Linear  # noqa: F401
from ferrotorch.nn.modules.activation import *  # noqa: F401,F403
from ferrotorch.nn.modules.dropout import Dropout  # noqa: F401
from ferrotorch.nn.modules.flatten import Flatten, Unflatten  # noqa: F401
from ferrotorch.nn.modules.sparse import Embedding  # noqa: F401
from ferrotorch.nn.modules.loss import *  # noqa: F401,F403
from ferrotorch.nn.modules.conv import *  # noqa: F401,F403
