"""``ferrotorch.save`` / ``ferrotorch.load``: tensors, state_dicts and nested containers stored
as a safetensors file. The tensors are the file's tensors; the container structure (dicts,
lists, tuples, numbers, strings, None, dtype tags) is a small JSON document kept in the
safetensors metadata under ``"ferrotorch"``. Loading parses JSON and raw tensor bytes only:
it never executes code (unlike pickle). Other objects (a whole ``nn.Module``, an argparse
namespace in a checkpoint dict) are pickled into a byte tensor, and, as with PyTorch's default
``weights_only=True``, only ``load(..., weights_only=False)`` unpickles them.

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


def _flatten(obj, tensors, path):
    """Structure description of ``obj``; tensors are moved into ``tensors``."""
    if isinstance(obj, Tensor):
        name = f"t{len(tensors)}"
        t = obj.detach().cpu()  # (a CUDA tensor is stored from a host copy, with its device)
        dtype = str(t.dtype).split(".")[-1]
        if t.dtype == _C.bfloat16:
            arr = t.float().numpy()  # NumPy has no bfloat16; re-narrowed on load
        else:
            arr = t.contiguous().numpy()
        tensors[name] = np.require(arr, requirements="C")  # (ascontiguousarray makes 0-d 1-d)
        desc = {"T": name, "dtype": dtype, "requires_grad": bool(obj.requires_grad)}
        if obj.device.type != "cpu":
            desc["device"] = str(obj.device)
        return desc
    if obj is None or isinstance(obj, (bool, int, float, str)):
        if isinstance(obj, float) and not np.isfinite(obj):
            return {"F": repr(obj)}
        return {"V": obj}
    if isinstance(obj, dict):
        keys = list(obj.keys())
        if not all(isinstance(k, (str, int)) for k in keys):
            raise TypeError(f"ferrotorch.save: dict keys must be str or int at {path}")
        return {"D": [[k, _flatten(obj[k], tensors, f"{path}.{k}")] for k in keys],
                "ordered": type(obj).__name__ == "OrderedDict"}
    if isinstance(obj, (list, tuple)):
        tag = "L" if isinstance(obj, list) else "U"
        return {tag: [_flatten(v, tensors, f"{path}[{i}]") for i, v in enumerate(obj)]}
    if isinstance(obj, _C.dtype):
        return {"dtype_obj": str(obj).split(".")[-1]}
    try:
        data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as e:  # pickling raises many types (PicklingError, AttributeError, ...)
        raise TypeError(
            f"ferrotorch.save: cannot store an object of type {type(obj).__name__} at {path} "
            f"(it is not a tensor, container or plain value, and pickling it failed: {e})"
        ) from None
    name = f"t{len(tensors)}"
    tensors[name] = np.frombuffer(data, dtype=np.uint8).copy()
    return {"P": name, "type": f"{type(obj).__module__}.{type(obj).__qualname__}"}


def _unflatten(desc, tensors, weights_only, map_location=None):
    if not isinstance(desc, dict) or len(desc) == 0:
        raise RuntimeError("ferrotorch.load: malformed structure description")
    if "T" in desc:
        name = desc["T"]
        if name not in tensors:
            raise RuntimeError(f"ferrotorch.load: tensor {name!r} missing from the file")
        arr = tensors[name]
        dtype = getattr(_C, desc.get("dtype", ""), None)
        t = _C.from_numpy(arr)
        if dtype is not None and t.dtype != dtype:
            t = t.to(dtype)
        t = _relocate(t, str(desc.get("device", "cpu")), map_location)
        if desc.get("requires_grad"):
            t.requires_grad_()
        return t
    if "V" in desc:
        return desc["V"]
    if "F" in desc:
        return float(desc["F"])
    if "D" in desc:
        from collections import OrderedDict

        d = OrderedDict() if desc.get("ordered") else {}
        for k, v in desc["D"]:
            d[k] = _unflatten(v, tensors, weights_only, map_location)
        return d
    if "L" in desc:
        return [_unflatten(v, tensors, weights_only, map_location) for v in desc["L"]]
    if "U" in desc:
        return tuple(_unflatten(v, tensors, weights_only, map_location) for v in desc["U"])
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
    desc = _flatten(obj, tensors, "obj")
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

