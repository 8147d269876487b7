"""``ferrotorch.nn.utils``: gradient clipping, parameter/vector conversion, parametrizations,
weight/spectral normalisation, ``skip_init`` and ``stateless.functional_call``."""

from ferrotorch.nn.utils.clip_grad import (  # noqa: F401
    clip_grad_norm, clip_grad_norm_, clip_grad_value_, get_total_norm,
)
from ferrotorch.nn.utils.convert_parameters import (  # noqa: F401
    parameters_to_vector, vector_to_parameters,
)
from ferrotorch.nn.utils import rnn  # noqa: F401,E402
from ferrotorch.nn.utils import parametrize  # noqa: F401,E402
from ferrotorch.nn.utils import parametrizations  # noqa: F401,E402
from ferrotorch.nn.utils import stateless  # noqa: F401,E402
from ferrotorch.nn.utils.weight_norm import remove_weight_norm, weight_norm  # noqa: F401,E402
from ferrotorch.nn.utils.spectral_norm import (  # noqa: F401,E402
    remove_spectral_norm, spectral_norm,
)
from ferrotorch.nn.utils.init import skip_init  # noqa: F401,E402
from ferrotorch.nn.utils import fusion  # noqa: F401,E402
from ferrotorch.nn.utils.fusion import (  # noqa: F401,E402
    fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights,
)
from ferrotorch.nn.utils import memory_format  # noqa: F401,E402
from ferrotorch.nn.utils.memory_format import (  # noqa: F401,E402
    convert_conv2d_weight_memory_format, convert_conv3d_weight_memory_format,
)
from ferrotorch.nn.utils.clip_grad import clip_grads_with_norm_  # noqa: F401,E402

__all__ = [
    "clip_grad_norm", "clip_grad_norm_", "clip_grads_with_norm_", "clip_grad_value_",
    "convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format",
    "fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights",
    "get_total_norm", "parameters_to_vector", "parametrizations", "parametrize",
    "remove_spectral_norm", "remove_weight_norm", "rnn", "skip_init", "spectral_norm",
    "stateless", "vector_to_parameters", "weight_norm",
]
