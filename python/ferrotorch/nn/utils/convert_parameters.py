"""``parameters_to_vector`` / ``vector_to_parameters``."""

from ferrotorch import _C
from ferrotorch.autograd.grad_mode import no_grad

Tensor = _C.Tensor


def parameters_to_vector(parameters):
    r"""Flatten and concatenate ``parameters`` into one 1-d tensor."""
    return _C.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    r"""Copy consecutive slices of the 1-d tensor ``vec`` into ``parameters`` (in place).

    PyTorch instead points each ``param.data`` at its slice (sharing memory with ``vec``).
    Assigning ``.data`` here replaces only that Python object's data, so a tensor reached
    through another handle (``[p.grad for p in ...]``, a common ES idiom) would not change;
    copying gives the same values for every handle."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    pointer = 0
    with no_grad():
        for param in parameters:
            num_param = param.numel()
            param.copy_(vec[pointer:pointer + num_param].view_as(param))
            pointer += num_param
