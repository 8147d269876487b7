"""``nn.utils.memory_format``: lay out the weights of every 2-D (3-D) convolution in a module
tree in a memory format (``channels_last``...)."""

import ferrotorch

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert(module, memory_format, types):
    if isinstance(module, types):
        weight_data = module.weight.detach().clone(memory_format=memory_format)
        module.weight.data = weight_data
    for child in module.children():
        _convert(child, memory_format, types)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """Convert the weight of each ``Conv2d``/``ConvTranspose2d`` in ``module`` (recursively)
    to ``memory_format``; returns ``module``."""
    nn = ferrotorch.nn
    return _convert(module, memory_format, (nn.Conv2d, nn.ConvTranspose2d))


def convert_conv3d_weight_memory_format(module, memory_format):
    """Convert the weight of each ``Conv3d``/``ConvTranspose3d`` in ``module`` (recursively)
    to ``memory_format``; returns ``module``."""
    nn = ferrotorch.nn
    return _convert(module, memory_format, (nn.Conv3d, nn.ConvTranspose3d))
