"""Helpers for writing distributions (``torch.distributions.utils``), for code that imports
them from here, e.g. ``from torch.distributions.utils import broadcast_all``."""

from ferrotorch.distributions.distribution import (  # noqa: F401 (the private helpers too)
    _standard_normal,
    broadcast_all,
    clamp_probs,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)
from ferrotorch.distributions.transforms import (  # noqa: F401
    _sum_rightmost,
    tril_matrix_to_vec,
    vec_to_tril_matrix,
)

__all__ = [
    "broadcast_all", "logits_to_probs", "clamp_probs", "probs_to_logits", "lazy_property",
    "tril_matrix_to_vec", "vec_to_tril_matrix",
]

euler_constant = 0.57721566490153286060  # Euler-Mascheroni constant
