"""``ferrotorch.nn.utils``: gradient clipping and parameter/vector conversion."""

from ferrotorch.nn.utils.clip_grad import (  # noqa: F401
    clip_grad_norm, clip_grad_norm_, clip_grad_value_, get_total_norm,
)
from ferrotorch.nn.utils.convert_parameters import (  # noqa: F401
    parameters_to_vector, vector_to_parameters,
)
from ferrotorch.nn.utils import rnn  # noqa: F401,E402
