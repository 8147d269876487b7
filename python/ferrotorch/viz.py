"""Graph pictures of recorded autograd graphs, like torchviz's ``make_dot``.

Needs the optional ``graphviz`` Python package (and Graphviz's ``dot`` to render).
"""

from ferrotorch import _C

Tensor = _C.Tensor


def _size_str(shape):
    return "(" + ", ".join(str(s) for s in shape) + ")"


def make_dot(var, params=None, show_attrs=False, show_saved=False, max_attr_chars=50):
    """Return a ``graphviz.Digraph`` of the ops that produced ``var`` (a tensor or a
    tuple of tensors). ``params`` maps names to parameters (e.g.
    ``dict(model.named_parameters())``) so leaves are labelled by name."""
    try:
        from graphviz import Digraph
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("make_dot needs the 'graphviz' package: pip install graphviz") from e

    param_names = {}
    if params is not None:
        for name, p in params.items():
            param_names[id(p)] = name
            param_names[p.data_ptr()] = param_names.get(p.data_ptr(), name)

    node_attr = dict(style="filled", shape="box", align="left", fontsize="10", ranksep="0.1",
                     height="0.2", fontname="monospace")
    dot = Digraph(node_attr=node_attr, graph_attr=dict(size="12,12"))
    seen = set()

    def leaf_label(t):
        name = param_names.get(id(t)) or param_names.get(t.data_ptr()) or ""
        return f"{name}\n{_size_str(t.shape)}" if name else _size_str(t.shape)

    def node_id(fn):
        return str(hash(fn))

    outputs = var if isinstance(var, tuple) else (var,)
    stack = []
    for out in outputs:
        oid = f"out{id(out)}"
        dot.node(oid, _size_str(out.shape), fillcolor="darkolivegreen1")
        if out.grad_fn is not None:
            stack.append(out.grad_fn)
            dot.edge(node_id(out.grad_fn), oid)
    # Iterative walk (graphs can be deep).
    while stack:
        fn = stack.pop()
        if fn in seen:
            continue
        seen.add(fn)
        if fn.name() == "AccumulateGrad":
            dot.node(node_id(fn), leaf_label(fn.variable), fillcolor="lightblue")
        else:
            dot.node(node_id(fn), fn.name(), fillcolor="lightgrey")
        for nxt, _ in fn.next_functions:
            if nxt is None:
                continue
            dot.edge(node_id(nxt), node_id(fn))
            if nxt not in seen:
                stack.append(nxt)
    return dot
