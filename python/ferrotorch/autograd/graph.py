"""``torch.autograd.graph``: the classes of recorded autograd nodes.

Every ``grad_fn`` is an instance of a class named after its op (``AddmmBackward0``,
``TanhBackward0``, ``AccumulateGrad``...), one class object per name, all subclasses of
:class:`Node`. Only ``AccumulateGrad`` has ``variable``: the leaf's own Python object.
"""

from ferrotorch import _C

__all__ = ["Node"]

#: Base class of every ``grad_fn`` (``isinstance(t.grad_fn, Node)``).
Node = _C.Node

_classes = {}


def _accumulated_variable(self):
    """The leaf tensor this node accumulates gradients into."""
    return self._variable()


def _node_class(name):
    """The class of nodes named ``name`` (made on first use, then the same object)."""
    cls = _classes.get(name)
    if cls is None:
        ns = {"__slots__": (), "__module__": "ferrotorch.autograd.graph", "__qualname__": name}
        if name == "AccumulateGrad":
            ns["variable"] = property(_accumulated_variable)
        cls = type(name, (Node,), ns)
        _classes[name] = cls
    return cls
