"""``ferrotorch.utils``: helpers outside the tensor core (as ``torch.utils``)."""

from ferrotorch.utils import dlpack  # noqa: F401
from ferrotorch.utils import data  # noqa: F401
from ferrotorch.utils import checkpoint  # noqa: F401
from ferrotorch.utils import hooks  # noqa: F401
