"""``torch.storage``: the storage classes (``UntypedStorage``, ``TypedStorage``)."""

from ferrotorch._storage import TypedStorage, UntypedStorage

__all__ = ["TypedStorage", "UntypedStorage"]
