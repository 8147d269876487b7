"""``Identity``, ``Linear``, ``Bilinear``."""

import math

from ferrotorch import _C
from ferrotorch.nn import functional as F
from ferrotorch.nn import init
from ferrotorch.autograd.grad_mode import no_grad
from ferrotorch.nn.modules.lazy import LazyModuleMixin
from ferrotorch.nn.modules.module import Module
from ferrotorch.nn.parameter import Parameter, UninitializedParameter

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


class LazyLinear(LazyModuleMixin, Linear):
    r"""A :class:`Linear` whose ``in_features`` is inferred from the last dimension of the
    first input; it then becomes a ``Linear`` (initialised like one).

    >>> import ferrotorch as torch
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     m = torch.nn.LazyLinear(3)
    >>> m(torch.randn(2, 5)).shape, type(m).__name__, m.in_features
    (ferrotorch.Size([2, 3]), 'Linear', 5)
    """

    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        # bias=False so no tensor is created just to be replaced.
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()


__all__ += ["LazyLinear"]
