"""``Tensor.untyped_storage()`` and ``Tensor.storage()``: a small view of the memory a tensor
lives in, enough for the common idioms (``a.untyped_storage().data_ptr() ==
b.untyped_storage().data_ptr()`` tells whether two tensors share memory; ``nbytes()``,
``size()``, ``element_size()``, ``device``, ``len()``).

The native module exposes the storage's base address (``Tensor.untyped_storage_ptr``), not
its length: the size is the extent reached by the tensor's view root (the tensor it is a view
of, followed back through ``_base``), which is the whole allocation for a tensor made by a
factory or an op, and a lower bound for memory reached only through ``detach``-style aliases
of a larger tensor."""

import operator
import warnings

from ferrotorch import _C

Tensor = _C.Tensor

__all__ = ["UntypedStorage", "TypedStorage"]


def _extent_bytes(t):
    """Bytes from the storage start to the end of the furthest element ``t`` reaches."""
    root = t
    while getattr(root, "_base", None) is not None:
        root = root._base
    best = 0
    for x in (t, root):
        if x.numel() == 0:
            end = x.storage_offset()
        else:
            end = x.storage_offset() + 1 + sum((s - 1) * st for s, st in
                                               zip(x.shape, x.stride()))
        best = max(best, end * x.element_size())
    return best


def _flat(tensor, n):
    """The first ``n`` elements of ``tensor``'s storage, as a 1-d tensor sharing its memory."""
    return tensor.detach().as_strided((n,), (1,), 0)


def _check_index(idx, size):
    i = operator.index(idx)
    if not -size <= i < size:
        raise IndexError(f"index {i} out of range for storage of size {size}")
    return i % size if size else i


def _storage_str(storage, info):
    # PyTorch prints one element per line, each after a space, then the info line.
    return " " + "\n ".join(str(v) for v in storage.tolist()) + "\n" + info


class _PlainMemory:
    """What both storage classes answer about their memory: never shared between processes,
    pinned or sparse here."""

    is_sparse = False

    def is_shared(self):
        return False

    def is_pinned(self, device="cuda"):
        return False


class UntypedStorage(_PlainMemory):
    """The bytes behind a tensor (PyTorch's ``torch.UntypedStorage``, read-only here)."""

    def __init__(self, tensor):
        self._tensor = tensor
        self._ptr = tensor.untyped_storage_ptr()
        self._nbytes = _extent_bytes(tensor)

    @property
    def device(self):
        return self._tensor.device

    @property
    def is_cuda(self):
        return self._tensor.is_cuda

    def data_ptr(self):
        """Address of the first byte of the storage."""
        return self._ptr

    def nbytes(self):
        return self._nbytes

    def size(self):
        """Number of bytes (an untyped storage's elements are bytes)."""
        return self._nbytes

    def element_size(self):
        return 1

    def __len__(self):
        return self._nbytes

    def _bytes(self):
        n = self._nbytes // self._tensor.element_size()
        return _flat(self._tensor, n).view(_C.uint8)

    def tolist(self):
        return self._bytes().tolist()

    def __iter__(self):
        return iter(self.tolist())

    def __getitem__(self, idx):
        return self._bytes()[_check_index(idx, self._nbytes)].item()

    def type(self):
        return "ferrotorch.storage.UntypedStorage"

    def untyped(self):
        return self

    def clone(self):
        """A copy in new memory."""
        return UntypedStorage(self._bytes().clone())

    def cpu(self):
        return self if self.device.type == "cpu" else UntypedStorage(self._bytes().cpu())

    def fill_(self, value):
        self._bytes().fill_(value)  # writes through to the tensor's memory
        return self

    def copy_(self, source, non_blocking=None):
        src = source.untyped() if isinstance(source, TypedStorage) else source
        if src.nbytes() != self.nbytes():
            raise RuntimeError(f"size does not match, self was {self.nbytes()} bytes but src "
                               f"was {src.nbytes()} bytes")
        self._bytes().copy_(src._bytes())
        return self

    def __eq__(self, other):
        return isinstance(other, UntypedStorage) and other._ptr == self._ptr and (
            other.device == self.device)

    def __hash__(self):
        return hash((self._ptr, str(self.device)))

    def __repr__(self):
        return _storage_str(
            self, f"[ferrotorch.storage.UntypedStorage(device={self.device}) of size {len(self)}]")


class TypedStorage(_PlainMemory):
    """The elements behind a tensor, in its dtype (PyTorch's deprecated ``TypedStorage``)."""

    def __init__(self, tensor):
        self._tensor = tensor
        self._untyped = UntypedStorage(tensor)
        self.dtype = tensor.dtype
        self._element_size = tensor.element_size()

    @property
    def device(self):
        return self._untyped.device

    @property
    def is_cuda(self):
        return self._untyped.is_cuda

    def untyped(self):
        return self._untyped

    def _untyped_storage(self):
        return self._untyped

    def data_ptr(self):
        return self._untyped.data_ptr()

    def nbytes(self):
        return self._untyped.nbytes()

    def element_size(self):
        return self._element_size

    def size(self):
        """Number of elements."""
        return self._untyped.nbytes() // self._element_size

    def __len__(self):
        return self.size()

    def tolist(self):
        return _flat(self._tensor, self.size()).tolist()

    def __iter__(self):
        return iter(self.tolist())

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            raise RuntimeError("slices are only supported in UntypedStorage.__getitem__")
        return _flat(self._tensor, self.size())[_check_index(idx, self.size())].item()

    def type(self):
        """The legacy class name, e.g. ``'ferrotorch.FloatStorage'``."""
        from ferrotorch._legacy_tensor import _NAMES

        name = next(k for k, v in _NAMES.items() if getattr(_C, v) == self.dtype)
        return "ferrotorch." + name.replace("Tensor", "Storage")  # as Tensor.type()

    def clone(self):
        """A copy in new memory."""
        return TypedStorage(_flat(self._tensor, self.size()).clone())

    def cpu(self):
        flat = _flat(self._tensor, self.size())
        return TypedStorage(flat if self.device.type == "cpu" else flat.cpu())

    def fill_(self, value):
        _flat(self._tensor, self.size()).fill_(value)  # writes through to the tensor
        return self

    def copy_(self, source, non_blocking=None):
        self._untyped.copy_(source)
        return self

    def __setitem__(self, idx, value):
        # Writes go to the tensor's memory, as in PyTorch.
        flat = _flat(self._tensor, self.size())
        if not isinstance(idx, slice):
            idx = _check_index(idx, self.size())
        flat[idx] = value  # ``flat`` is detached, so a leaf that requires grad is fine

    def __repr__(self):
        return _storage_str(
            self, f"[ferrotorch.storage.TypedStorage(dtype={self.dtype}, device={self.device}) "
                  f"of size {len(self)}]")


_typed_storage_warned = False


def _untyped_storage(self):
    return UntypedStorage(self)


def _storage(self):
    global _typed_storage_warned
    if not _typed_storage_warned:
        _typed_storage_warned = True
        warnings.warn(
            "TypedStorage is deprecated. It will be removed in the future and UntypedStorage "
            "will be the only storage class. This should only matter to you if you are using "
            "storages directly.  To access UntypedStorage directly, use "
            "tensor.untyped_storage() instead of tensor.storage()", UserWarning, stacklevel=2)
    return TypedStorage(self)


for _name, _fn in (("untyped_storage", _untyped_storage), ("storage", _storage)):
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, _fn)
