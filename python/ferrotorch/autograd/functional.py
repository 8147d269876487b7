"""``autograd.functional``: jacobian, hessian, vjp, jvp (via double vjp), hvp, vhp."""

from ferrotorch import _C
from ferrotorch.autograd.grad_mode import enable_grad

Tensor = _C.Tensor


def _tuple(x):
    return (x, False) if isinstance(x, tuple) else ((x,), True)


def _prep(inputs, create_graph):
    return tuple(x if (create_graph and x.requires_grad) else x.detach().requires_grad_()
                 for x in inputs)


def _grad(outputs, inputs, grad_outputs, create_graph):
    from ferrotorch.autograd import grad

    gs = grad(outputs, inputs, grad_outputs, retain_graph=True, create_graph=create_graph,
              allow_unused=True)
    return tuple(_C.zeros_like(x) if g is None else g for g, x in zip(gs, inputs))


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """Returns (func(inputs), v^T J)."""
    inputs, single = _tuple(inputs)
    with enable_grad():
        inputs = _prep(inputs, create_graph)
        out = func(*inputs)
        outs, out_single = _tuple(out)
        vs = (None,) * len(outs) if v is None else _tuple(v)[0]
        g = _grad(list(outs), list(inputs), list(vs), create_graph)
    res_out = out if create_graph else (tuple(o.detach() for o in outs) if not out_single
                                        else outs[0].detach())
    return res_out, (g[0] if single else g)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """Jacobian of func at inputs: for one input and one output, a tensor of shape
    out.shape + in.shape; tuples otherwise (like PyTorch)."""
    inputs, single_in = _tuple(inputs)
    with enable_grad():
        inputs = _prep(inputs, create_graph)
        out = func(*inputs)
        outs, single_out = _tuple(out)
        result = []
        for o in outs:
            rows = [[] for _ in inputs]
            flat = o.reshape(-1)
            for k in range(flat.numel()):
                gs = _grad([flat[k]], list(inputs), [None], create_graph)
                for i, g in enumerate(gs):
                    rows[i].append(g)
            per_in = []
            for i, x in enumerate(inputs):
                if rows[i]:
                    j = _C.stack(rows[i]).reshape(tuple(o.shape) + tuple(x.shape))
                else:
                    j = _C.zeros(tuple(o.shape) + tuple(x.shape), dtype=x.dtype, device=x.device)
                per_in.append(j if create_graph else j.detach())
            result.append(per_in[0] if single_in else tuple(per_in))
    return result[0] if single_out else tuple(result)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """Hessian of a scalar function."""
    inputs_t, single = _tuple(inputs)

    def grad_fn(*xs):
        with enable_grad():
            out = func(*xs)
            gs = _grad([out], list(xs), [None], True)
        return gs[0] if single else gs

    return jacobian(grad_fn, inputs_t[0] if single else inputs_t, create_graph=create_graph)


def hvp(func, inputs, v, create_graph=False, strict=False):
    """Returns (func(inputs), H v) for a scalar function."""
    inputs, single = _tuple(inputs)
    vs, _ = _tuple(v)
    with enable_grad():
        inputs = _prep(inputs, True)
        out = func(*inputs)
        g = _grad([out], list(inputs), [None], True)
        hv = _grad(list(g), list(inputs), list(vs), create_graph)
    return out.detach(), (hv[0] if single else hv)


def vhp(func, inputs, v, create_graph=False, strict=False):
    """v^T H (equal to H v for the symmetric Hessian of a scalar function)."""
    return hvp(func, inputs, v, create_graph, strict)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """Returns (func(inputs), J v), computed with the double-vjp trick."""
    inputs, single = _tuple(inputs)
    vs = _tuple(v)[0] if v is not None else tuple(_C.ones_like(x) for x in inputs)
    with enable_grad():
        inputs = _prep(inputs, True)
        out = func(*inputs)
        outs, out_single = _tuple(out)
        us = [_C.zeros_like(o).requires_grad_() for o in outs]
        g = _grad(list(outs), list(inputs), us, True)
        jv = _grad(list(g), us, list(vs), create_graph)
    res = tuple(o.detach() for o in outs)
    return (res[0] if out_single else res), (jv[0] if out_single else jv)
