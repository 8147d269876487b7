"""Pickling, ``copy.copy`` and ``copy.deepcopy`` of tensors.

A CPU tensor is reduced, as in PyTorch, to its storage plus ``(storage_offset, size, stride)``,
so a transposed or expanded tensor keeps its strides, and tensors that share memory in one
``copy.deepcopy`` call share it again afterwards (see ``_storage_snapshot``); the elements
travel as a NumPy array. bfloat16 (which NumPy lacks) travels as float32. A
tensor on another device travels contiguous and comes back on its device (``copy.deepcopy``
of a CUDA module keeps it there). Registered with :mod:`copyreg` on import.
"""

import copy
import copyreg

import numpy as np

from ferrotorch import _C
from ferrotorch._storage import _extent_bytes

Tensor = _C.Tensor


def _dtype_name(t):
    return str(t.dtype).rsplit(".", 1)[-1]


def _to_numpy(t, dtype_name):
    src = t.detach()
    if str(t.device) != "cpu":
        src = src.cpu()
    if dtype_name == "bfloat16":
        src = src.to(_C.float32)
    return np.array(src.numpy(), order="C", copy=True)


def _from_numpy(array, dtype_name, device="cpu"):
    t = _C.from_numpy(np.array(array, order="C"))  # 0-d stays 0-d
    dtype = getattr(_C, dtype_name)
    if t.dtype != dtype:
        t = t.to(dtype)
    if device != "cpu":
        t = t.to(device)
    return t


def _rebuild_tensor(array, dtype_name, requires_grad, device="cpu"):
    """Contiguous form (non-CPU tensors; also what older pickles hold)."""
    t = _from_numpy(array, dtype_name, device)
    if requires_grad:
        t.requires_grad_(True)
    return t


class _StorageSnapshot:
    """Elements ``[start, start + n)`` of one storage, as a flat array, rebuilt as one flat
    tensor that the tensor (and, in ``copy.deepcopy``, every other view of the same storage)
    is a view of."""

    __slots__ = ("array", "dtype_name", "start")

    def __init__(self, t, dtype_name, start, n):
        flat = t.detach().as_strided((n,), (1,), start)
        self.array = _to_numpy(flat, dtype_name)
        self.dtype_name = dtype_name
        self.start = start

    def __reduce__(self):
        return _rebuild_storage, (self.array, self.dtype_name)


def _rebuild_storage(array, dtype_name):
    return _from_numpy(array, dtype_name)


def _own_end(t):
    """One past the last storage element ``t`` reaches."""
    if t.numel() == 0:
        return t.storage_offset()
    return t.storage_offset() + 1 + sum((s - 1) * st for s, st in zip(t.shape, t.stride()))


def _storage_snapshot(t, dtype_name, memo):
    """In ``copy.deepcopy``: one snapshot of the whole storage per call, so views that share
    memory share it again (PyTorch shares storages there, through the memo). In a plain
    ``pickle.dumps`` every tensor gets its own, as in PyTorch, holding only the elements it
    reaches, so pickling one row of a large tensor (a DataLoader worker sending a sample)
    does not send the whole storage; its ``storage_offset`` then comes back as 0."""
    if memo is None:
        start = t.storage_offset()
        return _StorageSnapshot(t, dtype_name, start, _own_end(t) - start)
    n = _extent_bytes(t) // t.element_size()
    key = ("ferrotorch.storage", t.untyped_storage_ptr(), dtype_name)
    snap = memo.get(key)
    if snap is None or snap.array.size < n:
        snap = memo[key] = _StorageSnapshot(t, dtype_name, 0, n)
    return snap


def _rebuild_tensor_v2(storage, offset, size, stride, requires_grad):
    t = storage.as_strided(tuple(size), tuple(stride), offset)  # storage never needs grad
    if requires_grad:
        t.requires_grad_(True)
    return t


def _reduce_tensor(t, memo=None):
    dtype_name = _dtype_name(t)
    # PyTorch keeps the flag even for a non-leaf: the copy is a new leaf that requires grad.
    requires_grad = bool(t.requires_grad)
    if str(t.device) != "cpu":
        return _rebuild_tensor, (_to_numpy(t, dtype_name), dtype_name, requires_grad,
                                 str(t.device))
    snap = _storage_snapshot(t, dtype_name, memo)
    return _rebuild_tensor_v2, (snap, t.storage_offset() - snap.start, tuple(t.shape),
                                tuple(t.stride()), requires_grad)


def _tensor_copy(self):
    # copy.copy of a tensor shares its memory in PyTorch (its reduction shares the storage).
    out = self.detach().view(self.shape)
    if self.requires_grad:
        out.requires_grad_(True)
    return out


def _tensor_deepcopy(self, memo):
    if not self.is_leaf:
        raise RuntimeError(
            "Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
            "protocol at the moment.  If you were attempting to deepcopy a module, this may be "
            "because of a torch.nn.utils.weight_norm usage, see "
            "https://github.com/pytorch/pytorch/pull/103001")
    if id(self) in memo:
        return memo[id(self)]
    if type(self) is not Tensor:
        # Subclasses without their own __deepcopy__ keep their own reduction, as before.
        rv = self.__reduce_ex__(4)
        new = copy._reconstruct(self, memo, *rv)
        memo[id(self)] = new
        return new
    fn, args = _reduce_tensor(self, memo)
    new = fn(*copy.deepcopy(args, memo))  # the memo makes views share one new storage
    if self.grad is not None:
        new.grad = _tensor_deepcopy(self.grad, memo)
    memo[id(self)] = new
    return new


copyreg.pickle(Tensor, _reduce_tensor)
Tensor.__copy__ = _tensor_copy
Tensor.__deepcopy__ = _tensor_deepcopy
