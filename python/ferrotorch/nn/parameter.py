"""``nn.Parameter`` and ``nn.Buffer``: tensors that a :class:`~ferrotorch.nn.Module` registers
automatically when assigned as attributes."""

from ferrotorch import _C

Tensor = _C.Tensor


class Parameter(Tensor):
    r"""A tensor that is a module parameter.

    ``Parameter(data)`` shares storage with ``data`` (no copy) and is a leaf that requires grad
    unless ``requires_grad=False``.

    >>> import ferrotorch as torch
    >>> p = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    >>> p.requires_grad, p.is_leaf
    (True, True)
    """

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _C.tensor([])
        elif not isinstance(data, Tensor):
            raise TypeError(
                f"Parameter(): argument 'data' must be Tensor, not {type(data).__name__}"
            )
        # Tensor.__new__(cls) makes a 0-d placeholder; assigning ``.data`` then swaps in a
        # detached alias of ``data`` (same storage, no copy).
        self = Tensor.__new__(cls)
        self.data = data
        self.requires_grad_(requires_grad)
        return self

    def __init__(self, data=None, requires_grad=True):
        pass

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.data.clone(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __reduce_ex__(self, proto):
        return (_rebuild_parameter, (self.data, self.requires_grad))


def _rebuild_parameter(data, requires_grad):
    return Parameter(data, requires_grad)


class Buffer(Tensor):
    r"""A tensor that a module registers as a buffer when assigned as an attribute
    (``persistent`` controls whether it goes into ``state_dict``). Assigning a ``Buffer`` stores
    the plain tensor it wraps, as in PyTorch."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = _C.tensor([])
        self = Tensor.__new__(cls)
        self.data = data
        self.persistent = persistent
        return self

    def __init__(self, data=None, *, persistent=True):
        pass


def is_lazy(param):
    return False
