"""``ferrotorch.utils.data``: datasets, samplers and the ``DataLoader`` (as
``torch.utils.data``)."""

from ferrotorch.utils.data.dataset import (  # noqa: F401
    ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset, TensorDataset,
    random_split,
)
from ferrotorch.utils.data.sampler import (  # noqa: F401
    BatchSampler, DistributedSampler, RandomSampler, Sampler, SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)
from ferrotorch.utils.data._utils.collate import default_collate, default_convert  # noqa: F401
from ferrotorch.utils.data._utils.worker import WorkerInfo, get_worker_info  # noqa: F401
from ferrotorch.utils.data.dataloader import DataLoader  # noqa: F401
from ferrotorch.utils.data import distributed  # noqa: F401,E402
