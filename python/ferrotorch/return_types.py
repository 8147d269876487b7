"""Named result tuples of reductions, like ``torch.return_types``.

Both styles work::

    values, indices = x.max(dim=0)
    x.max(dim=0).indices
"""

from collections import namedtuple

__all__ = []


def _make(name, fields):
    base = namedtuple(name, fields)

    class _ReturnType(base):
        __slots__ = ()

        def __new__(cls, *args, **kwargs):
            # PyTorch's structseq form: one sequence, ``max((values, indices))``; the
            # per-field form (used by the native module and ``_make``) still works.
            if len(args) == 1 and not kwargs and len(fields) > 1:
                try:
                    seq = tuple(args[0])
                except TypeError:
                    raise TypeError("constructor requires a sequence") from None
                if len(seq) != len(fields):
                    raise TypeError(f"torch.return_types.{name}() takes a "
                                    f"{len(fields)}-sequence ({len(seq)}-sequence given)")
                args = seq
            return base.__new__(cls, *args, **kwargs)

        def __repr__(self):
            inner = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
            return f"ferrotorch.return_types.{name}(\n{inner})"

    _ReturnType.__name__ = _ReturnType.__qualname__ = name
    _ReturnType.__module__ = __name__
    globals()[name] = _ReturnType
    __all__.append(name)


for _name in (
    "max min sort topk kthvalue median nanmedian mode cummax cummin".split()
):
    _make(_name, ["values", "indices"])
_make("aminmax", ["min", "max"])
