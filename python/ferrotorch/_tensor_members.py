"""Tensor members PyTorch has and the native ``Tensor`` lacks: ``output_nr``, ``name``,
``set_`` / ``is_set_to`` (storage sharing), the deprecated out-of-place ``resize`` /
``resize_as``, ``nonzero_static``, ``as_strided_scatter``, ``record_stream``, and the removed
``volatile`` / ``reinforce``; plus ``torch.nonzero_static``, ``torch.as_strided_scatter``
and ``torch.as_strided_``."""

import math
import threading
import warnings
import weakref

import ferrotorch as _ft
from ferrotorch import _C
from ferrotorch._api_extra import _contiguous_strides
from ferrotorch._export import exporter
from ferrotorch._storage import TypedStorage, UntypedStorage

Tensor = _C.Tensor

__all__ = []


_export = exporter(__all__)


def _output_nr(self):
    """Which output of the op that made it this tensor is (0 for leaves and single-output
    ops). The native graph records it but exposes it only through a consumer's
    ``next_functions``, so read it there from a throwaway view."""
    if self.grad_fn is None:
        return 0
    with _ft.enable_grad():
        return self.view_as(self).grad_fn.next_functions[0][1]


def _storage_tensor(storage, dtype):
    """A 1-D tensor over the whole of ``storage`` (from its first byte), in ``dtype``."""
    typed = storage if isinstance(storage, TypedStorage) else None
    untyped = storage.untyped() if typed is not None else storage
    src = untyped._tensor
    if src.dtype != dtype:
        raise RuntimeError(f"Could not set tensor of type {str(src.dtype).split('.')[-1]} to a "
                           f"tensor of type {str(dtype).split('.')[-1]} (storages are viewed "
                           "in the dtype of the tensor they came from)")
    return src.as_strided((untyped.nbytes() // src.element_size(),), (1,), 0)


def _set_(self, source=None, storage_offset=None, size=None, stride=None):
    """Make ``self`` share ``source``'s memory: ``set_(tensor)`` takes its geometry too,
    ``set_(tensor_or_storage, storage_offset, size, stride=())`` views its storage anew,
    ``set_(storage)`` views the whole storage as 1-D, and ``set_()`` makes ``self`` empty."""
    if self.requires_grad and self.is_leaf and _C.is_grad_enabled():
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    if source is None:
        new = _C.empty(0, dtype=self.dtype, device=self.device)
    elif isinstance(source, Tensor):
        if source.dtype != self.dtype:
            from ferrotorch._api_extra import _ctype  # PyTorch names the C++ types
            raise RuntimeError(f"Could not set tensor of type {_ctype(source.dtype)} to a "
                               f"tensor of type {_ctype(self.dtype)}")
        new = source
    elif isinstance(source, (UntypedStorage, TypedStorage)):
        new = _storage_tensor(source, self.dtype)
    else:
        raise TypeError(f"set_(): expected a Tensor or a storage, got {type(source).__name__}")
    if storage_offset is not None or size is not None:
        if size is None:
            raise TypeError("set_() missing required argument 'size'")
        size = tuple(size)
        stride = _contiguous_strides(size) if not stride else tuple(stride)
        new = new.as_strided(size, stride, 0 if storage_offset is None else storage_offset)
    if new.device != self.device:
        raise RuntimeError(f"Expected a storage on {self.device}, but got one on {new.device}")
    self.data = new
    return self


def _is_set_to(self, tensor):
    """Whether ``self`` views the same memory as ``tensor`` with the same offset, sizes and
    strides."""
    return (self.untyped_storage_ptr() == tensor.untyped_storage_ptr()
            and self.storage_offset() == tensor.storage_offset()
            and tuple(self.shape) == tuple(tensor.shape)
            and tuple(self.stride()) == tuple(tensor.stride()))


def _resize_to(self, sizes, what):
    warnings.warn(f"non-inplace {what} is deprecated", UserWarning, stacklevel=3)
    numel = math.prod(sizes)
    if numel != self.numel():
        raise RuntimeError(f"requested resize to {'x'.join(map(str, sizes))} ({numel} elements "
                           f"in total), but the given tensor has a size of "
                           f"{'x'.join(map(str, self.shape))} ({self.numel()} elements). "
                           "autograd's resize can only change the shape of a given tensor, "
                           "while preserving the number of elements. ")
    return self.reshape(sizes)


def _resize(self, *sizes):
    """Out-of-place, differentiable ``resize`` (deprecated): a reshape keeping the element
    count."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    return _resize_to(self, tuple(int(s) for s in sizes), "resize")


def _resize_as(self, tensor):
    return _resize_to(self, tuple(tensor.shape), "resize_as")


@_export
def nonzero_static(input, *, size, fill_value=-1):
    """``nonzero()`` padded with ``fill_value`` rows (or truncated) to exactly ``size`` rows:
    an ``(size, input.dim())`` int64 tensor."""
    if not isinstance(size, int) or size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    nz = input.nonzero()
    n = nz.shape[0]
    if n >= size:
        return nz[:size]
    pad = _C.full((size - n, input.dim()), fill_value, dtype=_C.int64, device=input.device)
    return _C.cat([nz, pad], 0)


def _dense_strides(t):
    """``t``'s strides when its elements fill a block of memory without gaps or overlap
    (a permuted contiguous layout, which ``clone`` keeps), else the contiguous strides."""
    dims = sorted((st, n) for n, st in zip(t.shape, t.stride()) if n != 1)
    expect = 1
    for st, n in dims:
        if st != expect:
            return _contiguous_strides(tuple(t.shape))
        expect *= n
    return tuple(t.stride())


@_export
def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """A copy of ``input`` with the elements that ``as_strided(size, stride, storage_offset)``
    views in the copy's memory replaced by ``src``. As PyTorch, the copy keeps ``input``'s
    layout when it is dense (e.g. transposed) and is contiguous otherwise, and the offset
    counts from the copy's first element. Differentiable w.r.t. both."""
    size = tuple(size)
    if tuple(src.shape) != size:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(size)}")
    shape, dev = tuple(input.shape), input.device
    positions = _C.arange(input.numel(), device=dev).as_strided(
        size, tuple(stride), 0 if storage_offset is None else storage_offset).reshape(-1)
    src = src.reshape(-1).to(input.dtype)
    layout = _dense_strides(input)
    if layout == _contiguous_strides(shape):
        return input.reshape(-1).scatter(0, positions, src).reshape(shape)
    # Lay the elements out in memory order, scatter there, and read them back.
    where = _C.arange(input.numel(), device=dev).as_strided(shape, layout, 0).reshape(-1)
    memory = input.new_zeros(input.numel()).scatter(0, where, input.reshape(-1))
    return memory.scatter(0, positions, src).gather(0, where).reshape(shape)


@_export
def as_strided_(input, size, stride, storage_offset=None):
    return input.as_strided_(size, stride, storage_offset)


# ------------------------------------------------------------------ record_stream
# The CUDA allocator reuses a freed block at once, which is safe for work on the tensor's own
# stream; memory used on a side stream must outlive that stream's queued work. record_stream
# keeps an alias of the storage until the tensor object dies, then until an event recorded
# on ``stream`` at that point has completed (the alias is dropped by a later record_stream
# call once the event has fired).
_pending = []  # (event, alias) pairs whose event has not been seen completed
_pending_lock = threading.Lock()


def _reap():
    with _pending_lock:
        _pending[:] = [(e, a) for e, a in _pending if not e.query()]


def _release_after(stream, alias):
    event = stream.record_event()
    with _pending_lock:
        _pending.append((event, alias))


def _record_stream(self, stream):
    """Mark this CUDA tensor's memory as used by ``stream`` so it is not reused before the
    work queued there when the tensor is freed has finished."""
    if not self.is_cuda:
        raise NotImplementedError(f"Could not run 'aten::record_stream' with arguments from the "
                                  f"'{self.device.type.upper()}' backend.")
    if not isinstance(stream, _ft.cuda.Stream):
        raise TypeError(f"record_stream(): argument 's' (position 1) must be Stream, not "
                        f"{type(stream).__name__}")
    _reap()
    weakref.finalize(self, _release_after, stream, self.detach())


def _volatile(self):
    warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning,
                  stacklevel=2)
    return False


def _reinforce(self, reward):
    raise RuntimeError("reinforce() was removed.\nUse torch.distributions instead.\nSee "
                       "https://pytorch.org/docs/main/distributions.html\n\nInstead of:\n\n"
                       "probs = policy_network(state)\naction = probs.multinomial()\n"
                       "next_state, reward = env.step(action)\naction.reinforce(reward)\n"
                       "action.backward()\n\nUse:\n\nprobs = policy_network(state)\n"
                       "# NOTE: categorical is equivalent to what used to be called "
                       "multinomial\nm = torch.distributions.Categorical(probs)\n"
                       "action = m.sample()\nnext_state, reward = env.step(action)\n"
                       "loss = -m.log_prob(action) * reward\nloss.backward()")


def _install():
    members = {
        "output_nr": property(_output_nr),
        "name": property(lambda self: None),  # tensors have no name (jit's tracer sets none)
        "volatile": property(_volatile),
        "set_": _set_,
        "is_set_to": _is_set_to,
        "resize": _resize,
        "resize_as": _resize_as,
        "nonzero_static": lambda self, *, size, fill_value=-1:
            nonzero_static(self, size=size, fill_value=fill_value),
        "as_strided_scatter": lambda self, src, size, stride, storage_offset=None:
            as_strided_scatter(self, src, size, stride, storage_offset),
        "record_stream": _record_stream,
        "reinforce": _reinforce,
    }
    for name, member in members.items():
        if not hasattr(Tensor, name):
            setattr(Tensor, name, member)


_install()
