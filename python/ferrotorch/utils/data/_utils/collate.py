"""Default collation: a list of samples -> a batch (``torch.utils.data._utils.collate``).

Tensors are stacked along a new dim 0; Python numbers and NumPy arrays/scalars become tensors;
mappings, namedtuples, tuples and lists are collated element by element; strings pass
through as lists.
"""

import collections
import copy
import re

import numpy as np

from ferrotorch import _C

Tensor = _C.Tensor

np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
    "found {}"
)


def default_convert(data):
    r"""Convert NumPy arrays (not of strings/objects) to tensors, recursively; used when
    automatic batching is off."""
    elem_type = type(data)
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray):
        if np_str_obj_array_pattern.search(data.dtype.str) is not None:
            return data
        return _C.as_tensor(data)
    if isinstance(data, np.generic) and not isinstance(data, (np.str_, np.bytes_)):
        return _C.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                # keep the mapping's extra state (e.g. a defaultdict's default_factory)
                clone = copy.copy(data)
                clone.update({key: default_convert(data[key]) for key in data})
                return clone
            return elem_type({key: default_convert(data[key]) for key in data})
        except TypeError:
            return {key: default_convert(data[key]) for key in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return elem_type([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def _collate_tensor(batch):
    elem = batch[0]
    shape = tuple(elem.shape)
    for i, t in enumerate(batch):
        if tuple(t.shape) != shape:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(shape)} at entry 0 "
                f"and {list(t.shape)} at entry {i}"
            )
    from ferrotorch.utils.data._utils.worker import get_worker_info

    if get_worker_info() is not None:  # batches leave the worker pickled: no autograd graph
        batch = [t.detach() if t.requires_grad else t for t in batch]
    return _C.stack(batch, 0)


def default_collate(batch):
    r"""Collate a list of samples into a batch, preserving the sample structure.

    >>> import ferrotorch as torch
    >>> b = default_collate([(torch.tensor([1.0]), 0), (torch.tensor([2.0]), 1)])
    >>> b[0].tolist(), b[1].tolist()
    ([[1.0], [2.0]], [0, 1])
    """
    elem = batch[0]
    elem_type = type(elem)
    if isinstance(elem, Tensor):
        return _collate_tensor(batch)
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_"):
        if elem_type.__name__ in ("ndarray", "memmap"):
            if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
                raise TypeError(default_collate_err_msg_format.format(elem.dtype))
            return _C.as_tensor(np.stack(batch, 0))
        if elem.shape == ():  # NumPy scalars
            return _C.as_tensor(np.array(batch))
    if isinstance(elem, bool):
        return _C.tensor(batch)
    if isinstance(elem, float):
        return _C.tensor(batch, dtype=_C.float64)
    if isinstance(elem, int):
        return _C.tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                # keep the mapping's extra state (e.g. a defaultdict's default_factory)
                clone = copy.copy(elem)
                clone.update({key: default_collate([d[key] for d in batch]) for key in elem})
                return clone
            return elem_type({key: default_collate([d[key] for d in batch]) for key in elem})
        except TypeError:
            return {key: default_collate([d[key] for d in batch]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(samples) for samples in transposed]
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, samples in enumerate(transposed):
                    clone[i] = default_collate(samples)
                return clone
            return elem_type([default_collate(samples) for samples in transposed])
        except TypeError:
            return [default_collate(samples) for samples in transposed]
    raise TypeError(default_collate_err_msg_format.format(elem_type))
