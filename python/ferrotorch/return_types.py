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
