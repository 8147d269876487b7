"""``torch.utils.data.distributed``: ``DistributedSampler``."""

from ferrotorch.utils.data.sampler import DistributedSampler  # noqa: F401

__all__ = ["DistributedSampler"]
