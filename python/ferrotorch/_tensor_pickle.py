"""Pickling (and therefore ``copy.deepcopy`` and multiprocessing transfer) of tensors.

A tensor is reduced to a NumPy array plus its dtype name, ``requires_grad`` flag and device
(a CUDA tensor comes back on its device, as in PyTorch: ``copy.deepcopy`` of a CUDA module
keeps it there); bfloat16 (which NumPy lacks) travels as float32. Registered with
:mod:`copyreg` on import.
"""

import copyreg

import numpy as np

from ferrotorch import _C

Tensor = _C.Tensor


def _rebuild_tensor(array, dtype_name, requires_grad, device="cpu"):
    t = _C.from_numpy(np.array(array, order="C"))  # 0-d stays 0-d
    dtype = getattr(_C, dtype_name)
    if t.dtype != dtype:
        t = t.to(dtype)
    if device != "cpu":
        t = t.to(device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _reduce_tensor(t):
    dtype_name = str(t.dtype).rsplit(".", 1)[-1]
    src = t.detach()
    if str(t.device) != "cpu":
        src = src.cpu()
    if dtype_name == "bfloat16":
        src = src.to(_C.float32)
    array = np.array(src.numpy(), order="C", copy=True)
    requires_grad = bool(t.requires_grad and t.is_leaf)
    return _rebuild_tensor, (array, dtype_name, requires_grad, str(t.device))


copyreg.pickle(Tensor, _reduce_tensor)
