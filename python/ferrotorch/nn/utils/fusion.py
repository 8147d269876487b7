"""``nn.utils.fusion``: fold an eval-mode BatchNorm into the preceding convolution or linear
layer (``fuse_conv_bn_eval``, ``fuse_linear_bn_eval`` and their ``*_weights`` forms)."""

import copy

import ferrotorch

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A copy of ``conv`` whose weight and bias include ``bn``'s eval-mode affine map."""
    assert not (conv.training or bn.training), "Fusion only for eval!"
    fused_conv = copy.deepcopy(conv)
    assert bn.running_mean is not None and bn.running_var is not None
    fused_conv.weight, fused_conv.bias = fuse_conv_bn_weights(
        fused_conv.weight, fused_conv.bias, bn.running_mean, bn.running_var, bn.eps,
        bn.weight, bn.bias, transpose)
    return fused_conv


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """``(weight, bias)`` Parameters of the convolution followed by the batch norm."""
    conv_weight_dtype = conv_w.dtype
    conv_bias_dtype = conv_b.dtype if conv_b is not None else conv_weight_dtype
    if conv_b is None:
        conv_b = ferrotorch.zeros_like(bn_rm)
    if bn_w is None:
        bn_w = ferrotorch.ones_like(bn_rm)
    if bn_b is None:
        bn_b = ferrotorch.zeros_like(bn_rm)
    bn_var_rsqrt = ferrotorch.rsqrt(bn_rv + bn_eps)
    if transpose:
        shape = [1, -1] + [1] * (len(conv_w.shape) - 2)
    else:
        shape = [-1, 1] + [1] * (len(conv_w.shape) - 2)
    fused_w = (conv_w * (bn_w * bn_var_rsqrt).reshape(shape)).to(dtype=conv_weight_dtype)
    fused_b = ((conv_b - bn_rm) * bn_var_rsqrt * bn_w + bn_b).to(dtype=conv_bias_dtype)
    return (ferrotorch.nn.Parameter(fused_w, conv_w.requires_grad),
            ferrotorch.nn.Parameter(fused_b, conv_b.requires_grad))


def fuse_linear_bn_eval(linear, bn):
    """A copy of ``linear`` whose weight and bias include ``bn``'s eval-mode affine map."""
    assert not (linear.training or bn.training), "Fusion only for eval!"
    fused_linear = copy.deepcopy(linear)
    assert linear.out_features == bn.num_features or bn.num_features == 1, (
        "To fuse, linear.out_features == bn.num_features or bn.num_features == 1, "
        f"got linear.out_features={linear.out_features} and bn.num_features={bn.num_features}")
    assert bn.running_mean is not None and bn.running_var is not None
    fused_linear.weight, fused_linear.bias = fuse_linear_bn_weights(
        fused_linear.weight, fused_linear.bias, bn.running_mean, bn.running_var, bn.eps,
        bn.weight, bn.bias)
    return fused_linear


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """``(weight, bias)`` Parameters of the linear layer followed by the batch norm."""
    linear_weight_dtype = linear_w.dtype
    linear_bias_dtype = linear_b.dtype if linear_b is not None else linear_weight_dtype
    if linear_b is None:
        linear_b = ferrotorch.zeros_like(bn_rm)
    bn_scale = bn_w * ferrotorch.rsqrt(bn_rv + bn_eps)
    fused_w = linear_w * bn_scale.unsqueeze(-1).to(dtype=linear_weight_dtype)
    fused_b = ((linear_b - bn_rm) * bn_scale + bn_b).to(dtype=linear_bias_dtype)
    return (ferrotorch.nn.Parameter(fused_w, linear_w.requires_grad),
            ferrotorch.nn.Parameter(fused_b, linear_b.requires_grad))
