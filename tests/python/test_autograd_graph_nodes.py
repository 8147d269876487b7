"""grad_fn objects as PyTorch has them: one class per node name (subclasses of
``torch.autograd.graph.Node``), ``variable`` only on AccumulateGrad and equal to the leaf's
own Python object, a per-node ``metadata`` dict, and graph walks like torchviz's make_dot
that name parameters through ``id(fn.variable)``."""

import pytest

import ferrotorch


def _torch():
    return pytest.importorskip("torch")


def make_dot_like(M, outputs, params):
    """torchviz.make_dot's walk: node labels (op names, leaves by parameter name and shape)
    and edges between labels, starting from every output."""
    param_map = {id(v): k for k, v in params.items()}
    labels, edges, seen = {}, [], set()

    def label(fn):
        if hasattr(fn, "variable"):
            v = fn.variable
            return f"{param_map.get(id(v), '')}{tuple(v.shape)}"
        return type(fn).__name__

    stack = [o.grad_fn for o in outputs]
    while stack:
        fn = stack.pop()
        if fn in seen:
            continue
        seen.add(fn)
        labels[fn] = label(fn)
        for nxt, _ in fn.next_functions:
            if nxt is not None:
                edges.append((nxt, fn))
                stack.append(nxt)
    return sorted(labels.values()), sorted((labels[a], labels[b]) for a, b in edges)


def mlp_graph(M):
    """A two-layer perceptron written with tensor ops."""
    M.manual_seed(0)
    params = {"w1": M.nn.Parameter(M.randn(4, 3)), "b1": M.nn.Parameter(M.zeros(4)),
              "w2": M.nn.Parameter(M.randn(2, 4)), "b2": M.nn.Parameter(M.zeros(2))}
    x = M.ones(5, 3)
    h = (x @ params["w1"].t() + params["b1"]).tanh()
    h = h @ params["w2"].t() + params["b2"]
    out = (h * h.sigmoid()).sum()
    return make_dot_like(M, [out], params)


def shared_weight_graph(M):
    """A weight used twice and a leaf made with requires_grad_(): the walk reaches the same
    AccumulateGrad node along two edges and names both leaves."""
    w = M.nn.Parameter(M.ones(3, 3))
    s = M.zeros(3).requires_grad_()
    x = M.ones(2, 3)
    y = (x @ w + s).relu() @ w
    z = y.exp().mean() + y.max()
    return make_dot_like(M, [z, y], {"w": w, "s": s})


def test_make_dot_walk_names():
    labels, edges = mlp_graph(ferrotorch)
    assert labels == ["AddBackward0", "AddBackward0", "MmBackward0", "MmBackward0",
                      "MulBackward0", "SigmoidBackward0", "SumBackward0", "TBackward0",
                      "TBackward0", "TanhBackward0", "b1(4,)", "b2(2,)", "w1(4, 3)", "w2(2, 4)"]
    assert ("w1(4, 3)", "TBackward0") in edges and ("b2(2,)", "AddBackward0") in edges
    assert len(edges) == 14


def linear_module_graph(M):
    """nn.Linear layers (with and without bias) as torchviz draws them: AddmmBackward0 /
    MmBackward0 reach the weight through a TBackward0 node."""
    M.manual_seed(0)
    model = M.nn.Sequential(M.nn.Linear(3, 4), M.nn.ReLU(), M.nn.Linear(4, 2, bias=False))
    out = model(M.ones(5, 3)).sum() + model(M.ones(2, 3)).mean()
    return make_dot_like(M, [out], dict(model.named_parameters()))


def test_linear_module_graph():
    labels, edges = linear_module_graph(ferrotorch)
    assert labels.count("TBackward0") == 4 and labels.count("AddmmBackward0") == 2
    assert labels.count("MmBackward0") == 2
    assert ("0.weight(4, 3)", "TBackward0") in edges
    assert ("0.bias(4,)", "AddmmBackward0") in edges
    assert ("TBackward0", "MmBackward0") in edges


def test_linear_module_graph_matches_torch():
    torch = _torch()
    assert linear_module_graph(ferrotorch) == linear_module_graph(torch)


def test_make_dot_walk_matches_torch():
    torch = _torch()
    assert mlp_graph(ferrotorch) == mlp_graph(torch)
    assert shared_weight_graph(ferrotorch) == shared_weight_graph(torch)


def node_facts(M):
    w = M.nn.Parameter(M.ones(2, 2))
    t = M.tensor([1.0, 2.0], requires_grad=True)
    u = M.ones(2)
    u.requires_grad = True
    y = (w @ t).tanh() * u
    z = (w * 2).tanh()
    fn = y.grad_fn
    tanh1 = fn.next_functions[0][0]
    tanh2 = z.grad_fn
    acc_w = tanh2.next_functions[0][0].next_functions[0][0]
    acc_t = tanh1.next_functions[0][0].next_functions[1][0]
    acc_u = fn.next_functions[1][0]
    Node = M.autograd.graph.Node
    return {
        "names": (type(fn).__name__, fn.name(), type(tanh1).__name__, type(acc_w).__name__),
        "same_class": type(tanh1) is type(tanh2),
        "distinct_classes": type(fn) is not type(tanh1),
        "isinstance": all(isinstance(f, Node) for f in (fn, tanh1, acc_w)),
        "subclass": issubclass(type(fn), Node) and type(fn) is not Node,
        "variable_only_on_accumulate": (hasattr(fn, "variable"), hasattr(tanh1, "variable"),
                                        hasattr(acc_w, "variable")),
        "param_identity": acc_w.variable is w,
        "param_type": type(acc_w.variable).__name__,
        "tensor_identity": acc_t.variable is t,
        "setter_identity": acc_u.variable is u,
        "variable_stable": acc_w.variable is acc_w.variable,
        "eq": (y.grad_fn == y.grad_fn, y.grad_fn != z.grad_fn, len({y.grad_fn, y.grad_fn})),
        "leaf_grad_fn": w.grad_fn is None,
        "identity": (y.grad_fn is y.grad_fn, fn.next_functions[0][0] is tanh1,
                     z.grad_fn is tanh2, acc_w is (w * 3).grad_fn.next_functions[0][0]),
    }


def test_node_classes_and_variable():
    facts = node_facts(ferrotorch)
    assert facts == {
        "names": ("MulBackward0", "MulBackward0", "TanhBackward0", "AccumulateGrad"),
        "same_class": True,
        "distinct_classes": True,
        "isinstance": True,
        "subclass": True,
        "variable_only_on_accumulate": (False, False, True),
        "param_identity": True,
        "param_type": "Parameter",
        "tensor_identity": True,
        "setter_identity": True,
        "variable_stable": True,
        "eq": (True, True, 1),
        "leaf_grad_fn": True,
        "identity": (True, True, True, True),
    }


def test_node_facts_match_torch():
    torch = _torch()
    assert node_facts(ferrotorch) == node_facts(torch)


def test_metadata_is_kept_per_node():
    M = ferrotorch
    x = M.ones(3, requires_grad=True)
    y = (x * 2).sum()
    y.grad_fn.metadata["tag"] = "loss"
    # a fresh grad_fn object of the same node sees the same dict
    assert y.grad_fn.metadata == {"tag": "loss"}
    assert y.grad_fn.metadata is y.grad_fn.metadata
    mul = y.grad_fn.next_functions[0][0]
    assert mul.metadata == {}
    # a node reached through next_functions is the same node as the tensor's grad_fn
    z = x * 3
    assert z.grad_fn.next_functions[0][0] == mul.next_functions[0][0]


def test_variable_of_a_factory_leaf_and_after_data_swap():
    M = ferrotorch
    x = M.ones(2, requires_grad=True)  # made requires_grad inside the factory
    acc = (x * 1).grad_fn.next_functions[0][0]
    v = acc.variable
    assert v.tolist() == [1.0, 1.0] and v.requires_grad and v.is_leaf
    assert acc.variable is v  # the same object while it is alive
    p = M.nn.Parameter(M.zeros(2))
    p.data = M.full((2,), 3.0)  # swaps the tensor the Parameter holds
    acc = (p * 1).grad_fn.next_functions[0][0]
    assert acc.variable is p


def test_graph_module_exports():
    M = ferrotorch
    assert M.autograd.graph.Node is type(M.ones(1, requires_grad=True).exp().grad_fn).__mro__[1]
    import importlib
    assert importlib.import_module("ferrotorch.autograd.graph").Node is M.autograd.graph.Node


def node_hooks_program(M):
    """register_prehook / register_hook on grad_fn nodes (and on AccumulateGrad): what they
    see, replacing gradients, removal, and the errors for malformed return values."""
    seen = []

    def show(ts):
        return tuple(None if t is None else [round(v, 6) for v in t.tolist()] for t in ts)

    x = M.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    z = (y * y).sum()
    h_pre = y.grad_fn.register_prehook(lambda go: (go[0] * 10,))
    y.grad_fn.register_hook(lambda gi, go: seen.append(("post", show(gi), show(go))))
    acc = y.grad_fn.next_functions[0][0]
    acc.register_prehook(lambda go: seen.append(("acc pre", show(go))))
    acc.register_hook(lambda gi, go: seen.append(("acc post", show(gi), show(go))))
    z.backward(retain_graph=True)
    first = x.grad.tolist()
    h_pre.remove()
    x.grad = None
    z.backward(retain_graph=True)
    second = x.grad.tolist()

    def bad_count(go):
        return (go[0], go[0])

    y.grad_fn.register_prehook(bad_count)
    x.grad = None
    errors = []
    try:
        z.backward()
    except RuntimeError as e:
        errors.append(str(e))
    y2 = x * 3
    y2.grad_fn.register_hook(lambda gi, go: 5)
    try:
        y2.sum().backward()
    except TypeError as e:
        errors.append(("TypeError", str(e)))
    except RuntimeError as e:  # ferrotorch reports it through the engine
        errors.append(("RuntimeError", str(e)))
    return seen, first, second, errors


def test_node_hooks():
    seen, first, second, errors = node_hooks_program(ferrotorch)
    # dz/dy = 2y = [4, 8], times 10 by the prehook, then dy/dx = 2
    assert first == [80.0, 160.0] and second == [8.0, 16.0]
    assert seen[:3] == [("post", ([80.0, 160.0], None), ([40.0, 80.0],)),
                        ("acc pre", ([80.0, 160.0],)),
                        ("acc post", (), ([80.0, 160.0],))]
    assert errors[0] == ("hook 'bad_count' has returned an incorrect number of values "
                         "(got 2, but expected 1)")
    assert "expected tuple, but hook returned 'int'" in errors[1][1]


def test_node_hooks_match_torch():
    torch = _torch()
    ft, pt = node_hooks_program(ferrotorch), node_hooks_program(torch)
    assert ft[:3] == pt[:3]
    assert ft[3][0] == pt[3][0]
