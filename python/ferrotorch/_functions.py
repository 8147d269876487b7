"""Module-level functions (``ferrotorch.exp(x)``, ``ferrotorch.add(a, b)``...) that forward to
the Tensor method of the same name, as in PyTorch. The maths is in Rust; this is routing only.
"""

from ferrotorch import _C

Tensor = _C.Tensor

# Functions whose first argument is the input tensor and which behave exactly like the method.
_METHOD_FUNCTIONS = """
add sub mul div true_divide floor_divide remainder pow atan2 maximum minimum
eq ne lt le gt ge logical_and logical_or logical_xor logical_not
bitwise_and bitwise_or bitwise_xor bitwise_not
neg negative abs sign exp exp2 expm1 log log2 log10 log1p sqrt rsqrt sin cos tan asin acos atan
sinh cosh tanh asinh acosh atanh sigmoid relu silu erf erfc erfinv lgamma digamma floor ceil
trunc frac
reciprocal square
matmul mm bmm mv dot vdot inner outer ger addmm baddbmm addmv kron trace cross
inverse det logdet cholesky matrix_power pinverse
clamp clip clamp_min clamp_max lerp nan_to_num round isnan isinf isfinite isposinf isneginf
hypot copysign fmod xlogy addcmul addcdiv true_divide divide multiply subtract float_power
logaddexp logaddexp2 sinc deg2rad rad2deg heaviside signbit positive negative
""".split()

__all__ = []


def _forward(name):
    def fn(input, *args, out=None, **kwargs):
        # The functions that take ``out=`` in PyTorch get it from ``_out._install`` (which
        # resizes and checks ``out``); the others refuse it, as PyTorch does.
        if out is not None:
            raise TypeError(f"{name}() got an unexpected keyword argument 'out'")
        if not isinstance(input, Tensor):
            input = _C.tensor(input)
        return getattr(input, name)(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Same as :meth:`Tensor.{name}` (see PyTorch's ``torch.{name}``)."
    return fn


for _name in _METHOD_FUNCTIONS:
    if hasattr(Tensor, _name) and _name not in globals():
        globals()[_name] = _forward(_name)
        __all__.append(_name)
