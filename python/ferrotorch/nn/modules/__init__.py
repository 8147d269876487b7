from ferrotorch.nn.modules.module import Module  # noqa: F401
from ferrotorch.nn.modules.container import (  # noqa: F401
    ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential,
)
from ferrotorch.nn.modules.linear import Bilinear, Identity, Linear  # noqa: F401
from ferrotorch.nn.modules.activation import *  # noqa: F401,F403
from ferrotorch.nn.modules.dropout import Dropout  # noqa: F401
from ferrotorch.nn.modules.flatten import Flatten, Unflatten  # noqa: F401
from ferrotorch.nn.modules.sparse import Embedding, EmbeddingBag  # noqa: F401
from ferrotorch.nn.modules.loss import *  # noqa: F401,F403
from ferrotorch.nn.modules.rnn import *  # noqa: F401,F403
from ferrotorch.nn.modules.transformer import *  # noqa: F401,F403
from ferrotorch.nn.modules.dropout import (  # noqa: F401
    AlphaDropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout,
)
from ferrotorch.nn.modules.pooling import *  # noqa: F401,F403
from ferrotorch.nn.modules.upsampling import *  # noqa: F401,F403
from ferrotorch.nn.modules.pixelshuffle import *  # noqa: F401,F403
from ferrotorch.nn.modules.batchnorm import (  # noqa: F401
    BatchNorm1d, BatchNorm2d, BatchNorm3d, SyncBatchNorm,
)
from ferrotorch.nn.modules.instancenorm import (  # noqa: F401
    InstanceNorm1d, InstanceNorm2d, InstanceNorm3d,
)
from ferrotorch.nn.modules.normalization import (  # noqa: F401
    GroupNorm, LayerNorm, LocalResponseNorm, RMSNorm,
)
from ferrotorch.nn.modules.conv import *  # noqa: F401,F403
from ferrotorch.nn.modules.padding import *  # noqa: F401,F403
from ferrotorch.nn.modules.distance import *  # noqa: F401,F403
from ferrotorch.nn.modules.adaptive import AdaptiveLogSoftmaxWithLoss  # noqa: F401
from ferrotorch.nn.modules.lazy import LazyModuleMixin  # noqa: F401
from ferrotorch.nn.modules.linear import LazyLinear  # noqa: F401
from ferrotorch.nn.modules.batchnorm import (  # noqa: F401
    LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d,
)
from ferrotorch.nn.modules.instancenorm import (  # noqa: F401
    LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d,
)
