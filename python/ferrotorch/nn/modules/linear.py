"""``Identity``, ``Linear``, ``Bilinear``."""

import math

from ferrotorch import _C
from ferrotorch.nn import functional as F
from ferrotorch.nn import init
from ferrotorch.nn.modules.module import Module
from ferrotorch.nn.parameter import Parameter

__all__ = ["Identity", "Linear", "Bilinear"]


def _empty(*shape, dtype=None, device=None):
    t = _C.empty(*shape, dtype=dtype, device=device)
    if dtype is not None and t.dtype != dtype:
        t = t.to(dtype)
    return t


class Identity(Module):
    r"""Returns its input unchanged (arguments are accepted and ignored)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    r"""``y = x @ weight.T + bias`` with ``weight`` of shape ``(out_features, in_features)``.

    Initialised like PyTorch: ``weight`` by ``kaiming_uniform_(a=sqrt(5))`` (uniform in
    ``+-1/sqrt(in_features)``) and ``bias`` uniform in ``+-1/sqrt(in_features)``.

    >>> import ferrotorch as torch
    >>> m = torch.nn.Linear(20, 30)
    >>> m(torch.randn(128, 20)).shape
    ferrotorch.Size([128, 30])
    """

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(_empty(out_features, in_features, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(_empty(out_features, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Bilinear(Module):
    r"""``y = x1^T A x2 + b`` with ``weight`` of shape ``(out, in1, in2)``."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None,
                 dtype=None):
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(_empty(out_features, in1_features, in2_features, dtype=dtype,
                                       device=device))
        if bias:
            self.bias = Parameter(_empty(out_features, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.weight.size(1))
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class NonDynamicallyQuantizableLinear(Linear):
    """``Linear`` under PyTorch's name for ``MultiheadAttention.out_proj``."""
