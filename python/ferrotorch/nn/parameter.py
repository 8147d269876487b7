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


class UninitializedTensorMixin:
    """Shared behaviour of :class:`UninitializedParameter` and :class:`UninitializedBuffer`:
    a placeholder without a shape until :meth:`materialize` gives it storage."""

    def materialize(self, shape, device=None, dtype=None):
        r"""Give the tensor storage of ``shape`` (uninitialised values) on the same device and
        with the same dtype as the placeholder unless given, and turn it into
        ``cls_to_become`` in place (the object, and so any reference to it, is kept)."""
        if device is None:
            device = self.data.device
        if dtype is None:
            dtype = self.data.dtype
        if isinstance(shape, int):
            shape = (shape,)
        self.data = _C.empty(*tuple(shape), dtype=dtype, device=device)
        try:
            self.__class__ = self.cls_to_become
        except TypeError:
            # The native Tensor type has another layout than its Python subclasses, so a
            # buffer cannot become exactly ``Tensor`` in place; the lazy modules swap in
            # ``self.data`` (same storage) right after materialising.
            self.__class__ = _MaterializedTensor

    @property
    def shape(self):
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. "
            "This error usually happens in `load_state_dict` when trying to load "
            "an uninitialized parameter into an initialized one. "
            "Call `forward` to initialize the parameters before accessing their attributes."
        )

    def share_memory_(self):
        raise RuntimeError(
            "Can't share memory on an uninitialized parameter or buffer. "
            "Call `forward` to initialize the parameters before calling "
            "`module.share_memory()`."
        )

    def __repr__(self):
        return f"<{self.__class__.__name__}>"

    __str__ = __repr__

    def __reduce_ex__(self, proto):
        return (self.__class__, (self.requires_grad,))


class _MaterializedTensor(Tensor):
    """What a materialised :class:`UninitializedBuffer` becomes (see ``materialize``)."""


def is_lazy(param):
    """Whether ``param`` is an uninitialised (lazy) parameter or buffer."""
    return isinstance(param, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    r"""A parameter without a shape yet (used by the ``Lazy*`` modules); ``materialize(shape)``
    turns it into an ordinary :class:`Parameter` in place."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        data = _C.empty(0, dtype=dtype, device=device)
        self = Tensor.__new__(cls)
        self.data = data
        self.requires_grad_(requires_grad)
        return self

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.requires_grad, self.data.device, self.data.dtype)
        memo[id(self)] = result
        return result


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    r"""A buffer without a shape yet (used by the ``Lazy*`` norm modules); ``materialize(shape)``
    gives it storage."""

    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None):
        data = _C.empty(0, dtype=dtype, device=device)
        self = Tensor.__new__(cls)
        self.data = data
        self.requires_grad_(requires_grad)
        return self

    def __init__(self, requires_grad=False, device=None, dtype=None):
        pass
