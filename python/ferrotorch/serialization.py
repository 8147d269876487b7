"""``ferrotorch.save`` / ``ferrotorch.load``: tensors, state_dicts and nested containers stored
as a safetensors file. The tensors are the file's tensors; the container structure (dicts,
lists, tuples, numbers, strings, None, dtype tags) is a small JSON document kept in the
safetensors metadata under ``"ferrotorch"``. Loading parses JSON and raw tensor bytes only:
it never executes code (unlike pickle). Other objects (a whole ``nn.Module``, an argparse
namespace in a checkpoint dict) are pickled into a byte tensor, and, as with PyTorch's default
``weights_only=True``, only ``load(..., weights_only=False)`` unpickles them.

As in PyTorch, tensors that share memory (views of one another, tied weights) are stored once,
as their storage plus each one's offset / size / stride, and share memory again after loading;
the same tensor object met twice loads as one object.

A ferrotorch checkpoint opens with the ``safetensors`` package; a safetensors file written
elsewhere (e.g. by PyTorch) loads as a flat ``{name: tensor}`` state_dict.
"""


import json
import os
import pickle
import struct

import numpy as np

from ferrotorch import _C

Tensor = _C.Tensor
_META_KEY = "ferrotorch"
_FORMAT_VERSION = 1
# Header JSON larger than this is refused (corrupted or hostile files).
_MAX_HEADER = 100 * 1024 * 1024


def _host_array(t):
    """``t`` (detached) as a C-contiguous NumPy array on the host."""
    t = t.cpu()  # (a CUDA tensor is stored from a host copy, with its device)
    if t.dtype == _C.bfloat16:
        arr = t.float().numpy()  # NumPy has no bfloat16; re-narrowed on load
    else:
        arr = t.contiguous().numpy()
    return np.require(arr, requirements="C")  # (ascontiguousarray makes 0-d 1-d)


def _reach(t):
    """Elements from the start of ``t``'s storage to one past the furthest it reaches."""
    if t.numel() == 0:
        return t.storage_offset()
    return t.storage_offset() + 1 + sum((n - 1) * st for n, st in zip(t.shape, t.stride()))


def _store_tensors(entries, tensors):
    """Write the tensors met by ``_flatten`` into ``tensors``. Tensors that share memory (views
    of one another, as in PyTorch's serialization) are stored as one storage array plus each
    one's offset / size / stride, so that they share memory again after ``load``."""
    groups = {}
    for k, (t, _desc) in enumerate(entries):
        key = None
        if t.dtype != _C.bfloat16 and t.numel() > 0:
            key = (t.untyped_storage().data_ptr(), str(t.dtype), str(t.device))
        groups.setdefault(key if key is not None else ("single", k), []).append(k)
    for members in groups.values():
        if len(members) == 1:
            t, desc = entries[members[0]]
            name = f"t{len(tensors)}"
            tensors[name] = _host_array(t.detach())
            desc["T"] = name
            continue
        extent = max(_reach(entries[k][0]) for k in members)
        first = entries[members[0]][0].detach()
        name = f"t{len(tensors)}"
        tensors[name] = _host_array(first.as_strided((extent,), (1,), 0))
        for k in members:
            t, desc = entries[k]
            desc.update({"S": name, "offset": t.storage_offset(), "size": list(t.shape),
                         "stride": list(t.stride())})


def _flatten(obj, tensors, path, entries=None):
    """Structure description of ``obj``; its tensors are collected in ``entries`` (in the
    order met, the same tensor object only once) for :func:`_store_tensors`."""
    if entries is None:
        entries = {"list": [], "ids": {}}
    if isinstance(obj, Tensor):
        if id(obj) in entries["ids"]:
            return {"R": entries["ids"][id(obj)]}
        entries["ids"][id(obj)] = len(entries["list"])
        from ferrotorch.nn.parameter import Parameter

        desc = {"dtype": str(obj.dtype).split(".")[-1],
                "requires_grad": bool(obj.requires_grad)}
        if isinstance(obj, Parameter):
            desc["parameter"] = True  # loads as a Parameter again, as with torch.load
        if obj.device.type != "cpu":
            desc["device"] = str(obj.device)
        entries["list"].append((obj, desc))
        return desc
    if obj is None or isinstance(obj, (bool, int, float, str)):
        if isinstance(obj, float) and not np.isfinite(obj):
            return {"F": repr(obj)}
        return {"V": obj}
    if isinstance(obj, dict):
        keys = list(obj.keys())
        if not all(isinstance(k, (str, int)) for k in keys):
            raise TypeError(f"ferrotorch.save: dict keys must be str or int at {path}")
        desc = {"D": [[k, _flatten(obj[k], tensors, f"{path}.{k}", entries)] for k in keys],
                "ordered": type(obj).__name__ == "OrderedDict"}
        # a state_dict's per-module versions, kept as pickling an OrderedDict keeps them
        metadata = getattr(obj, "_metadata", None)
        if isinstance(metadata, dict):
            desc["meta"] = _flatten(metadata, tensors, f"{path}._metadata", entries)
        return desc
    if isinstance(obj, (list, tuple)):
        tag = "L" if isinstance(obj, list) else "U"
        return {tag: [_flatten(v, tensors, f"{path}[{i}]", entries)
                      for i, v in enumerate(obj)]}
    if isinstance(obj, _C.dtype):
        return {"dtype_obj": str(obj).split(".")[-1]}
    try:
        data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as e:  # pickling raises many types (PicklingError, AttributeError, ...)
        raise TypeError(
            f"ferrotorch.save: cannot store an object of type {type(obj).__name__} at {path} "
            f"(it is not a tensor, container or plain value, and pickling it failed: {e})"
        ) from None
    name = f"p{len(tensors)}"
    tensors[name] = np.frombuffer(data, dtype=np.uint8).copy()
    return {"P": name, "type": f"{type(obj).__module__}.{type(obj).__qualname__}"}


def _load_array(tensors, name, desc, map_location):
    if name not in tensors:
        raise RuntimeError(f"ferrotorch.load: tensor {name!r} missing from the file")
    dtype = getattr(_C, desc.get("dtype", ""), None)
    t = _C.from_numpy(tensors[name])
    if dtype is not None and t.dtype != dtype:
        t = t.to(dtype)
    return _relocate(t, str(desc.get("device", "cpu")), map_location)


def _unflatten(desc, tensors, weights_only, map_location=None, loaded=None):
    if not isinstance(desc, dict) or len(desc) == 0:
        raise RuntimeError("ferrotorch.load: malformed structure description")
    if loaded is None:
        loaded = {"list": [], "storages": {}}

    def rec(d):
        return _unflatten(d, tensors, weights_only, map_location, loaded)

    if "T" in desc or "S" in desc:
        if "T" in desc:
            t = _load_array(tensors, desc["T"], desc, map_location)
        else:  # a view into a storage shared with other tensors of the file
            name = desc["S"]
            if name not in loaded["storages"]:
                loaded["storages"][name] = _load_array(tensors, name, desc, map_location)
            base = loaded["storages"][name]
            size, stride, offset = desc.get("size"), desc.get("stride"), desc.get("offset")
            if (not isinstance(size, list) or not isinstance(stride, list)
                    or not isinstance(offset, int) or len(size) != len(stride)
                    or _reach_of(size, stride, offset) > base.numel()):
                raise RuntimeError(f"ferrotorch.load: malformed view of storage {name!r}")
            t = base.as_strided(size, stride, offset)
        if desc.get("parameter"):
            from ferrotorch.nn.parameter import Parameter

            t = Parameter(t, requires_grad=bool(desc.get("requires_grad")))
        elif desc.get("requires_grad"):
            t.requires_grad_()
        loaded["list"].append(t)
        return t
    if "R" in desc:  # the same tensor object again
        k = desc["R"]
        if not isinstance(k, int) or not 0 <= k < len(loaded["list"]):
            raise RuntimeError("ferrotorch.load: malformed tensor reference")
        return loaded["list"][k]
    if "V" in desc:
        return desc["V"]
    if "F" in desc:
        return float(desc["F"])
    if "D" in desc:
        from collections import OrderedDict

        d = OrderedDict() if desc.get("ordered") else {}
        for k, v in desc["D"]:
            d[k] = rec(v)
        if "meta" in desc and isinstance(d, OrderedDict):
            d._metadata = rec(desc["meta"])
        return d
    if "L" in desc:
        return [rec(v) for v in desc["L"]]
    if "U" in desc:
        return tuple(rec(v) for v in desc["U"])
    if "dtype_obj" in desc:
        return getattr(_C, desc["dtype_obj"])
    if "P" in desc:
        if weights_only:
            raise pickle.UnpicklingError(
                f"Weights only load failed: the file holds a pickled {desc.get('type')} object. "
                "Re-run ferrotorch.load with weights_only=False if (and only if) you trust the "
                "source of the file: unpickling can execute arbitrary code."
            )
        name = desc["P"]
        if name not in tensors:
            raise RuntimeError(f"ferrotorch.load: tensor {name!r} missing from the file")
        return pickle.loads(tensors[name].tobytes())
    raise RuntimeError(f"ferrotorch.load: unknown entry {sorted(desc)}")


def _reach_of(size, stride, offset):
    if any(not isinstance(n, int) or n < 0 for n in size) or \
            any(not isinstance(st, int) or st < 0 for st in stride) or offset < 0:
        return float("inf")
    if 0 in size:
        return offset
    return offset + 1 + sum((n - 1) * st for n, st in zip(size, stride))


def _relocate(t, location, map_location):
    """Move a loaded (CPU) tensor saved from ``location`` as ``map_location`` says, as
    ``torch.load``: None keeps the saved device; a device (or its name) takes every tensor
    there; a dict maps saved location names; a callable ``(tensor, location)`` returns the
    tensor to use (or None for the default)."""
    if callable(map_location) and not isinstance(map_location, (str, _C.device)):
        out = map_location(t, location)
        if out is not None:
            return out
        map_location = None
    if isinstance(map_location, dict):
        location = str(map_location.get(location, location))
        map_location = None
    target = location if map_location is None else str(map_location)
    if target == "cpu":
        return t
    if target.startswith("cuda") and not _cuda_available():
        raise RuntimeError(
            "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is "
            "False. If you are running on a CPU-only machine, please use torch.load with "
            "map_location=torch.device('cpu') to map your storages to the CPU."
        )
    return t.to(target)


def _cuda_available():
    import ferrotorch

    return ferrotorch.cuda.is_available()


def save(obj, f):
    """Save ``obj`` (a tensor, a state_dict, an optimizer state_dict, nested containers) to
    ``f``, a path or a writable binary file object."""
    from safetensors.numpy import save as st_save

    tensors = {}
    entries = {"list": [], "ids": {}}
    desc = _flatten(obj, tensors, "obj", entries)
    _store_tensors(entries["list"], tensors)
    meta = {_META_KEY: json.dumps({"version": _FORMAT_VERSION, "root": desc})}
    data = st_save(tensors, metadata=meta)
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            fh.write(data)
    else:
        f.write(data)


def _read_header(data):
    if len(data) < 8:
        raise RuntimeError("ferrotorch.load: file is truncated (no safetensors header)")
    (n,) = struct.unpack("<Q", data[:8])
    if n > _MAX_HEADER or 8 + n > len(data):
        raise RuntimeError(
            f"ferrotorch.load: invalid or truncated file (header claims {n} bytes, file has "
            f"{len(data)})"
        )
    try:
        return json.loads(data[8:8 + n])
    except ValueError as e:
        raise RuntimeError(f"ferrotorch.load: corrupted header: {e}") from None


def load(f, map_location=None, weights_only=None):
    """Load what :func:`save` wrote (or any safetensors file, as a state_dict). Pickled objects
    load only with ``weights_only=False`` (the default, None, means True, as in PyTorch)."""
    from safetensors.numpy import load as st_load

    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            data = fh.read()
    elif isinstance(f, (bytes, bytearray)):
        data = bytes(f)
    else:
        data = f.read()
    header = _read_header(data)
    try:
        arrays = st_load(data)
    except Exception as e:  # safetensors raises its own error types
        raise RuntimeError(f"ferrotorch.load: corrupted safetensors data: {e}") from None
    # Own copies: the tensors must not pin (or alias) the file buffer.
    arrays = {k: np.array(v, copy=True) for k, v in arrays.items()}
    meta = header.get("__metadata__") or {}
    if _META_KEY not in meta:
        return {k: _relocate(_C.from_numpy(v), "cpu", map_location) for k, v in arrays.items()}
    try:
        doc = json.loads(meta[_META_KEY])
    except ValueError as e:
        raise RuntimeError(f"ferrotorch.load: corrupted structure description: {e}") from None
    if not isinstance(doc, dict) or doc.get("version") != _FORMAT_VERSION:
        raise RuntimeError("ferrotorch.load: unsupported checkpoint version")
    return _unflatten(doc["root"], arrays, weights_only is not False, map_location)


__all__ = ["save", "load"]

