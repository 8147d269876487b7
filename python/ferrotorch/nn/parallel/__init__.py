"""``torch.nn.parallel``: ``DataParallel``.

Without a CUDA device ``DataParallel`` calls the wrapped module directly, and with one device
it moves the inputs there first, exactly as PyTorch. Splitting a batch across several GPUs
(replicate/scatter/gather) is not implemented: pass ``device_ids=[i]`` for one device."""

import ferrotorch
from ferrotorch.nn.modules.module import Module

__all__ = ["DataParallel"]


def _device_index(d):
    if isinstance(d, int):
        return d
    d = ferrotorch.device(d)
    return 0 if d.index is None else d.index


def _to_device(obj, device):
    if isinstance(obj, ferrotorch.Tensor):
        return obj.to(device)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_to_device(o, device) for o in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_device(o, device) for o in obj)
    if isinstance(obj, dict):
        return type(obj)((k, _to_device(v, device)) for k, v in obj.items())
    return obj


class DataParallel(Module):
    """Run ``module`` data-parallel over ``device_ids`` (see the module docstring for what is
    supported); the wrapped module is ``self.module``."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if not ferrotorch.cuda.is_available():
            self.module = module
            self.device_ids = []
            return
        if device_ids is None:
            device_ids = list(range(ferrotorch.cuda.device_count()))
        if not device_ids:
            raise RuntimeError("no available devices were found")
        if output_device is None:
            output_device = device_ids[0]
        self.dim = dim
        self.module = module
        self.device_ids = [_device_index(x) for x in device_ids]
        self.output_device = _device_index(output_device)
        self.src_device_obj = ferrotorch.device("cuda", self.device_ids[0])
        if len(self.device_ids) == 1:
            self.module.to(self.src_device_obj)

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        for t in list(self.module.parameters()) + list(self.module.buffers()):
            if t.device != self.src_device_obj:
                raise RuntimeError(
                    f"module must have its parameters and buffers on device "
                    f"{self.src_device_obj} (device_ids[0]) but found one of them on device: "
                    f"{t.device}")
        if len(self.device_ids) > 1:
            raise NotImplementedError(
                "DataParallel over several devices (replicate/scatter/gather) is not "
                "implemented in ferrotorch; pass device_ids=[i] to use one device")
        inputs = _to_device(inputs, self.src_device_obj)
        kwargs = _to_device(kwargs, self.src_device_obj)
        return self.module(*inputs, **kwargs)
