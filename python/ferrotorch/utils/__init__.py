"""``ferrotorch.utils``: helpers outside the tensor core (as ``torch.utils``)."""

from ferrotorch.utils import dlpack  # noqa: F401
