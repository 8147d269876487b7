"""``ferrotorch.func``: function transforms in the style of ``torch.func`` (functorch).

``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian`` are built on
the reverse-mode engine (``ferrotorch.autograd.grad``): every call makes detached copies of the
differentiated inputs, runs ``func`` with grad recording on, and differentiates the result. They
compose (``grad(grad(f))``, ``jacrev(jacrev(f))``, ``vmap(grad(f))``): a transform called inside
another transform keeps the graph of its results (``create_graph=True``) so the outer one can
differentiate them again. The caller's tensors are never modified (their ``requires_grad`` stays as
it was).

Differences from PyTorch:

* ``jvp`` and ``jacfwd`` use reverse mode (the double-vjp trick and a row-by-row Jacobian); the
  values are the same as forward mode, the cost is not.
* ``vmap`` runs a Python loop over the batch: it slices every batched input along its ``in_dims``,
  calls ``func`` once per slice and stacks the results along ``out_dims``. Values are the ones
  ``torch.vmap`` gives; the speed is that of the loop, not of a batched kernel.
* At the outermost level, results of ``grad``/``vjp``/``jacrev``/... are returned detached unless
  one of the arguments itself requires grad (then they keep their graph so that
  ordinary autograd can go through them). A gradient that depends only on a tensor captured by a
  closure (not passed as an argument) is therefore returned detached at the outermost level.
"""

import functools

from ferrotorch import _C
from ferrotorch.autograd.grad_mode import enable_grad
from ferrotorch.nn.utils.stateless import functional_call  # noqa: F401

Tensor = _C.Tensor

__all__ = ["functional_call", "grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev",
           "jacfwd", "hessian", "vmap", "stack_module_state"]

# How many transforms (grad, vjp, jacrev, ...) are currently running: a transform running inside
# another one must keep the graph of what it returns.
_DEPTH = [0]


# --------------------------------------------------------------------------------------------
# pytrees: tuples, lists, dicts (and namedtuples) of leaves
# --------------------------------------------------------------------------------------------


def _is_node(x):
    return isinstance(x, (tuple, list, dict))


def _tree_flatten(tree):
    """Returns (leaves, spec); spec rebuilds the structure with :func:`_tree_unflatten`."""
    if isinstance(tree, dict):
        keys = list(tree.keys())
        leaves, specs = [], []
        for k in keys:
            lv, sp = _tree_flatten(tree[k])
            leaves.extend(lv)
            specs.append(sp)
        return leaves, ("dict", keys, specs)
    if isinstance(tree, (tuple, list)):
        leaves, specs = [], []
        for v in tree:
            lv, sp = _tree_flatten(v)
            leaves.extend(lv)
            specs.append(sp)
        return leaves, ("seq", type(tree), specs)
    return [tree], ("leaf",)


def _spec_size(spec):
    if spec[0] == "leaf":
        return 1
    return sum(_spec_size(s) for s in spec[-1])


def _tree_unflatten(leaves, spec):
    leaves = list(leaves)
    pos = [0]

    def build(sp):
        if sp[0] == "leaf":
            v = leaves[pos[0]]
            pos[0] += 1
            return v
        if sp[0] == "dict":
            return {k: build(s) for k, s in zip(sp[1], sp[2])}
        typ, children = sp[1], [build(s) for s in sp[2]]
        if typ is list:
            return children
        if typ is tuple:
            return tuple(children)
        if hasattr(typ, "_fields"):  # namedtuple
            return typ(*children)
        return typ(children)

    return build(spec)


def _tree_map(fn, tree):
    leaves, spec = _tree_flatten(tree)
    return _tree_unflatten([fn(x) for x in leaves], spec)


def _broadcast_prefix(prefix, tree, what):
    """Expand ``prefix`` (a pytree that is a prefix of ``tree``) to one entry per leaf of
    ``tree``."""
    if not _is_node(prefix):
        return [prefix] * len(_tree_flatten(tree)[0])
    if isinstance(prefix, dict):
        if not isinstance(tree, dict) or set(prefix) != set(tree):
            raise ValueError(f"{what}: the structure of {what} does not match the inputs")
        out = []
        for k in tree:
            out.extend(_broadcast_prefix(prefix[k], tree[k], what))
        return out
    if (not isinstance(tree, (tuple, list)) or isinstance(tree, dict)
            or len(prefix) != len(tree)):
        raise ValueError(f"{what}: the structure of {what} ({prefix!r}) does not match the "
                         f"structure of the inputs")
    out = []
    for p, t in zip(prefix, tree):
        out.extend(_broadcast_prefix(p, t, what))
    return out


# --------------------------------------------------------------------------------------------
# shared machinery for the autodiff transforms
# --------------------------------------------------------------------------------------------


def _check_argnums(argnums, nargs):
    """``argnums`` wrapped into range, with functorch's checks and messages."""
    if not isinstance(argnums, (int, tuple)):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    nums = (argnums,) if isinstance(argnums, int) else argnums
    norm = []
    for a in nums:
        if not isinstance(a, int):
            raise RuntimeError(f"argnum must be int, got: {type(a)}")
        if not -nargs <= a < nargs:
            raise RuntimeError(f"Got argnum={a}, but only {nargs} positional inputs")
        norm.append(a % nargs)
    if isinstance(argnums, tuple):
        if not norm:
            raise RuntimeError("argnums must be non-empty")
        if len(set(norm)) != len(norm):
            raise RuntimeError(f"argnums elements must be unique, got {tuple(norm)}")
    return tuple(norm)


def _spec_str(spec):
    """A pytree structure as functorch's ``treespec_pprint`` writes it (``*`` for a leaf)."""
    if spec[0] == "leaf":
        return "*"
    if spec[0] == "dict":
        return "{" + ", ".join(f"{k!r}: {_spec_str(s)}" for k, s in zip(spec[1], spec[2])) + "}"
    inner = ", ".join(_spec_str(s) for s in spec[2])
    if spec[1] is list:
        return f"[{inner}]"
    if spec[1] is tuple:
        return f"({inner},)" if len(spec[2]) == 1 else f"({inner})"
    return f"{spec[1].__name__}({inner})"


def _check_tensor_outputs(leaves, api):
    """functorch's ``assert_non_empty_tensor_output``."""
    if (len(leaves) == 1 and leaves[0] is None) or len(leaves) < 1:
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got "
                           f"output = {leaves})")
    for o in leaves:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got "
                               f"unsupported type {type(o)}")


def _make_diff(x):
    """A differentiable stand-in for one input leaf: an alias linked to ``x``'s graph when ``x``
    already requires grad (nested transforms), else a detached copy that requires grad. The
    caller's tensor is left untouched."""
    if not isinstance(x, Tensor):
        raise RuntimeError(f"Expected the differentiated inputs to be Tensors, got {type(x)}")
    if not (x.is_floating_point() or x.is_complex()):
        raise RuntimeError("only Tensors of floating point dtype can require gradients")
    if x.requires_grad:
        return x.view_as(x)
    return x.detach().requires_grad_()


class _Ctx:
    """Prepares the differentiated arguments of one transform call."""

    def __init__(self, args, argnums):
        # argnums None: every positional argument (vjp, jvp), grouped as a tuple.
        nums = tuple(range(len(args))) if argnums is None else _check_argnums(argnums,
                                                                             len(args))
        self.single = isinstance(argnums, int)
        self.nums = nums
        self.args = list(args)
        self.specs = []
        self.leaves = []  # differentiable stand-ins, in order
        # Keep the graph when nested inside another transform, or when any argument already
        # requires grad (so ordinary autograd can differentiate through the result).
        self.outer = _DEPTH[0] > 0 or any(
            isinstance(x, Tensor) and x.requires_grad for x in _tree_flatten(tuple(args))[0])
        for n in nums:
            lv, spec = _tree_flatten(args[n])
            new = [_make_diff(x) for x in lv]
            self.leaves.extend(new)
            self.specs.append((spec, len(new)))
            self.args[n] = _tree_unflatten(new, spec)

    @property
    def create_graph(self):
        return self.outer

    def finish(self, t):
        if isinstance(t, Tensor) and not self.outer:
            return t.detach()
        return t

    def group(self, flat):
        """Per-leaf results -> the structure of the differentiated arguments."""
        out, pos = [], 0
        for spec, n in self.specs:
            out.append(_tree_unflatten(flat[pos:pos + n], spec))
            pos += n
        return out[0] if self.single else tuple(out)


def _grads(outputs, inputs, grad_outputs, create_graph):
    from ferrotorch.autograd import grad as _agrad

    outs = [o for o in outputs]
    pairs = [(o, g) for o, g in zip(outs, grad_outputs) if o.requires_grad]
    if not pairs:
        return [_C.zeros_like(x) for x in inputs]
    gs = _agrad([o for o, _ in pairs], list(inputs), [g for _, g in pairs], retain_graph=True,
                create_graph=create_graph, allow_unused=True)
    return [_C.zeros_like(x) if g is None else g for g, x in zip(gs, inputs)]


class _Depth:
    def __enter__(self):
        _DEPTH[0] += 1

    def __exit__(self, *exc):
        _DEPTH[0] -= 1
        return False


def _split_aux(out, has_aux, api):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if "
                           "has_aux is True")
    return out


# --------------------------------------------------------------------------------------------
# grad, grad_and_value, vjp, jvp
# --------------------------------------------------------------------------------------------


def grad_and_value(func, argnums=0, has_aux=False):
    """Like :func:`grad` but the wrapped function returns ``(grad, value)`` (``((grad, (value,
    aux)))`` with ``has_aux``)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with enable_grad():
            ctx = _Ctx(args, argnums)
            with _Depth():
                out = func(*ctx.args, **kwargs)
            value, aux = _split_aux(out, has_aux, "grad_and_value(f)(*args)")
            if not isinstance(value, Tensor):
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"Tensor, got {type(value)}")
            if value.dim() != 0:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a "
                                   "scalar Tensor, got tensor with "
                                   f"{value.dim()} dims. Maybe you wanted to use the vjp or "
                                   "jacrev APIs instead?")
            gs = _grads([value], ctx.leaves, [None], ctx.create_graph)
        gs = ctx.group([ctx.finish(g) for g in gs])
        value = ctx.finish(value)
        if has_aux:
            return gs, (value, _tree_map(ctx.finish, aux))
        return gs, value

    return wrapper


def grad(func, argnums=0, has_aux=False):
    """``torch.func.grad``: a function computing the gradient of the scalar ``func`` with
    respect to the positional arguments ``argnums`` (an int or a tuple of ints; each argument
    may be a pytree of tensors). With ``has_aux``, ``func`` returns ``(output, aux)`` and the
    wrapped function returns ``(grad, aux)``."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, v = gv(*args, **kwargs)
        if has_aux:
            return g, v[1]
        return g

    return wrapper


def vjp(func, *primals, has_aux=False):
    """``torch.func.vjp``: returns ``(func(*primals), vjp_fn)`` (and ``aux`` with ``has_aux``);
    ``vjp_fn(cotangents)`` returns a tuple with one gradient per primal (same pytree structure).
    ``vjp_fn`` may be called several times."""
    with enable_grad():
        ctx = _Ctx(primals, None)
        with _Depth():
            out = func(*ctx.args)
        out, aux = _split_aux(out, has_aux, "vjp(f, *primals)")
    out_leaves, out_spec = _tree_flatten(out)
    _check_tensor_outputs(out_leaves, "vjp(f, *primals)")
    for o in out_leaves:
        if not (o.is_floating_point() or o.is_complex()):
            raise RuntimeError("vjp(f, ...): All outputs of f must be floating-point or "
                               f"complex Tensors, got Tensor with dtype {o.dtype}")
    create_graph = ctx.create_graph

    def vjp_fn(cotangents, *, retain_graph=True, create_graph=None):
        ct_leaves, ct_spec = _tree_flatten(cotangents)
        if ct_spec != out_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as "
                               "pytree structure of outputs to the function. cotangents: "
                               f"{_spec_str(ct_spec)}, primal output: {_spec_str(out_spec)}")
        for i, (o, c) in enumerate(zip(out_leaves, ct_leaves)):
            if tuple(o.shape) != tuple(c.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                                   f"{c.shape} and output[{i}] has a shape of {o.shape}.")
        cg = create_graph if create_graph is not None else (
            ctx.create_graph or _DEPTH[0] > 0 or any(c.requires_grad for c in ct_leaves))
        with enable_grad():
            gs = _grads(out_leaves, ctx.leaves, ct_leaves, cg)
        if not cg:
            gs = [g.detach() for g in gs]
        res, pos = [], 0
        for spec, n in ctx.specs:
            res.append(_tree_unflatten(gs[pos:pos + n], spec))
            pos += n
        return tuple(res)

    out_ret = out if create_graph else _tree_map(
        lambda t: t.detach() if isinstance(t, Tensor) else t, out)
    if has_aux:
        return out_ret, vjp_fn, _tree_map(ctx.finish, aux)
    return out_ret, vjp_fn


def linearize(func, *primals):
    """``torch.func.linearize``: returns ``(func(*primals), jvp_fn)`` where ``jvp_fn(*tangents)``
    is the Jacobian-vector product at ``primals`` (tangents with the primals' structure,
    shapes, devices and dtypes, checked with PyTorch's messages). PyTorch traces the JVP once;
    here each call recomputes it with :func:`jvp` (same values)."""
    output = func(*primals)
    flat_primals, primals_spec = _tree_flatten(primals)
    info = [(tuple(p.shape), p.device, p.dtype) for p in flat_primals]

    def jvp_fn(*tangents):
        flat_tangents, tangent_spec = _tree_flatten(tangents)
        if tangent_spec != primals_spec:
            raise RuntimeError(f"Expected the tangents {tangent_spec} to have the same argspec "
                               f"as the primals {primals_spec}")
        for idx, (t, (shape, device, dtype)) in enumerate(zip(flat_tangents, info)):
            if tuple(t.shape) != shape:
                raise RuntimeError(f"tangent:{idx} with shape {t.shape} in flattened pytree "
                                   f"doesn't match the shape {_Size(shape)} of the "
                                   "corresponding primal.")
            if t.device != device:
                raise RuntimeError(f"tangent:{idx} with device {t.device} in flattened pytree "
                                   f"doesn't match the device {device} of the corresponding "
                                   "primal.")
            if t.dtype != dtype:
                raise RuntimeError(f"tangent:{idx} with dtype {t.dtype} in flattened pytree "
                                   f"doesn't match the dtype {dtype} of the corresponding "
                                   "primal.")
        return jvp(func, primals, tangents)[1]

    return output, jvp_fn


def _Size(shape):  # noqa: N802 (prints as the tensor's .shape does)
    from ferrotorch._size import Size

    return Size(shape)


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``torch.func.jvp``: returns ``(func(*primals), J @ tangents)`` (plus ``aux`` with
    ``has_aux``). ``primals`` and ``tangents`` are tuples of the same structure. Computed in
    reverse mode with the double-vjp trick (same values as forward mode)."""
    api = "jvp(f, primals, tangents)"
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{api}: Expected primals to be a tuple. E.g. it should be valid to "
                           "call f(*primals).")
    p_leaves, p_spec = _tree_flatten(primals)
    t_leaves, t_spec = _tree_flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError(f"{api}: Expected primals and tangents to have the same python "
                           "structure. For example, if primals is a tuple of 3 tensors, "
                           "tangents also must be. Got primals with structure "
                           f"{_spec_str(p_spec)} and tangents with structure {_spec_str(t_spec)}")
    for name, leaves in (("primals", p_leaves), ("tangents", t_leaves)):
        if not leaves:
            raise RuntimeError(f"{api}: Expected {name} to contain at least one Tensor.")
        for x in leaves:
            if not isinstance(x, Tensor):
                raise RuntimeError(f"{api}: Expected {name} to only contain Tensors, got "
                                   f"{type(x)}")
    for p, t in zip(p_leaves, t_leaves):
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError("Trying to set a forward gradient that has a different size than "
                               "that of the original Tensor, this is not supported. Tensor is of "
                               f"size {list(p.shape)} while the given forward gradient is of size "
                               f"{list(t.shape)}.")
    with enable_grad():
        ctx = _Ctx(primals, None)
        if any(t.requires_grad for t in t_leaves):
            ctx.outer = True
        with _Depth():
            out = func(*ctx.args)
        out, aux = _split_aux(out, has_aux, api)
        out_leaves, out_spec = _tree_flatten(out)
        _check_tensor_outputs(out_leaves, api)
        us = [_C.zeros_like(o).requires_grad_() for o in out_leaves]
        g = _grads(out_leaves, ctx.leaves, us, True)
        g_pairs = [(gi, ti) for gi, ti in zip(g, t_leaves) if gi.requires_grad]
        if g_pairs:
            jv = _grads([a for a, _ in g_pairs], us, [b for _, b in g_pairs], ctx.create_graph)
        else:
            jv = [_C.zeros_like(o) for o in out_leaves]
    out_ret = _tree_unflatten([ctx.finish(o) for o in out_leaves], out_spec)
    jv_ret = _tree_unflatten([ctx.finish(j) for j in jv], out_spec)
    if has_aux:
        return out_ret, jv_ret, _tree_map(ctx.finish, aux)
    return out_ret, jv_ret


# --------------------------------------------------------------------------------------------
# jacrev, jacfwd, hessian
# --------------------------------------------------------------------------------------------


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False,
           _api="vjp(f, *primals)"):
    """``torch.func.jacrev``: the Jacobian of ``func`` with respect to the arguments ``argnums``.
    For an output leaf of shape ``O`` and an input leaf of shape ``I`` the block has shape
    ``O + I``; the result has the output's pytree structure, each leaf holding the structure of
    the differentiated arguments (a tuple when ``argnums`` is a tuple)."""
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with enable_grad():
            ctx = _Ctx(args, argnums)
            with _Depth():
                out = func(*ctx.args, **kwargs)
            out, aux = _split_aux(out, has_aux, _api)
            out_leaves, out_spec = _tree_flatten(out)
            _check_tensor_outputs(out_leaves, _api)
            blocks = []
            for o in out_leaves:
                flat = o.reshape(-1)
                rows = [[] for _ in ctx.leaves]
                for k in range(flat.numel()):
                    gs = _grads([flat[k]], ctx.leaves, [None], ctx.create_graph)
                    for i, g in enumerate(gs):
                        rows[i].append(g)
                per_leaf = []
                for i, x in enumerate(ctx.leaves):
                    shape = tuple(o.shape) + tuple(x.shape)
                    if rows[i]:
                        j = _C.stack(rows[i]).reshape(shape)
                    else:
                        j = _C.zeros(shape, dtype=x.dtype, device=x.device)
                    per_leaf.append(ctx.finish(j))
                blocks.append(ctx.group(per_leaf))
        res = _tree_unflatten(blocks, out_spec)
        if has_aux:
            return res, _tree_map(ctx.finish, aux)
        return res

    return wrapper


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """``torch.func.jacfwd``: same values as :func:`jacrev` (computed here in reverse mode)."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    # (its errors name jvp, as PyTorch's forward-mode jacfwd does)
    return jacrev(func, argnums, has_aux=has_aux, _api="jvp(f, primals, tangents)")


def hessian(func, argnums=0):
    """``torch.func.hessian``: ``jacfwd(jacrev(func, argnums), argnums)``."""
    return jacfwd(jacrev(func, argnums), argnums)


# --------------------------------------------------------------------------------------------
# vmap
# --------------------------------------------------------------------------------------------


def _rng_state():
    return _C.get_rng_state()


def _same_state(a, b):
    return bool((a == b).all())


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """``torch.vmap``: map ``func`` over a batch dimension of its inputs.

    ``in_dims`` is an int, ``None`` (input not batched: passed whole to every call) or a tuple
    with one entry per positional argument, each entry a pytree prefix of that argument (so a
    dict argument can be given a dict of dims). ``out_dims`` (an int, ``None`` or a pytree
    prefix of the output) says where the batch dimension goes in each output. Keyword arguments
    are not batched.

    **Implementation note:** this ``vmap`` runs a Python loop over the batch: every batched
    input is sliced along its ``in_dims`` (``select``), ``func`` is called once per slice and the
    per-slice outputs are stacked along ``out_dims``. The values are those of ``torch.vmap``, the
    speed is that of a loop (no batching rules). ``chunk_size`` is accepted and only checked.

    ``randomness``: ``'error'`` raises if ``func`` draws from the default generator (detected by
    comparing the RNG state before and after each call), ``'different'`` gives each slice its
    own draws, ``'same'`` gives every slice the same draws.
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got "
                         f"{chunk_size})")
    name = getattr(func, "__name__", repr(func))

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        if not isinstance(in_dims, (int, tuple)):
            raise ValueError(f"vmap({name}, in_dims={in_dims!r}, ...)(<inputs>): expected "
                             "`in_dims` to be int or a (potentially nested) tuple matching the "
                             f"structure of inputs, got: {type(in_dims)}.")
        if len(args) == 0:
            raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add "
                             "inputs, or you are trying to vmap over a function with no inputs. "
                             "The latter is unsupported.")
        if isinstance(in_dims, tuple):
            if len(in_dims) != len(args):
                raise ValueError(f"vmap({name}, in_dims={in_dims!r}, ...)(<inputs>): in_dims is "
                                 "not compatible with the structure of `inputs`. in_dims has "
                                 f"structure {_spec_str(_tree_flatten(in_dims)[1])} but inputs "
                                 f"has structure {_spec_str(_tree_flatten(args)[1])}.")
            dims = []
            for d, a in zip(in_dims, args):
                dims.extend(_broadcast_prefix(d, a, "in_dims"))
        else:
            dims = [in_dims] * len(_tree_flatten(tuple(args))[0])
        leaves, spec = _tree_flatten(tuple(args))
        size = None
        norm_dims = []
        for x, d in zip(leaves, dims):
            if d is None:
                norm_dims.append(None)
                continue
            if not isinstance(d, int):
                raise ValueError(f"vmap({name}, in_dims={in_dims!r}, ...)(<inputs>): Got "
                                 f"in_dim={d!r} for an input but in_dim must be either an "
                                 "integer dimension or None.")
            if not isinstance(x, Tensor):
                raise ValueError(f"vmap({name}, in_dims={in_dims!r}, ...)(<inputs>): Got "
                                 f"in_dim={d} for an input but the input is of type "
                                 f"{type(x)}. We cannot vmap over non-Tensor arguments, please "
                                 f"use None as the respective in_dim")
            nd = x.dim()
            if not -nd <= d < nd:
                raise ValueError(f"vmap({name}, in_dims={in_dims!r}, ...)(<inputs>): Got "
                                 f"in_dim={d} for some input, but that input is a Tensor of "
                                 f"dimensionality {nd} so expected in_dim to satisfy "
                                 f"-{nd} <= in_dim < {nd}.")
            norm_dims.append(d % nd)
        sizes = [x.shape[d] for x, d in zip(leaves, norm_dims) if d is not None]
        if not sizes:
            raise ValueError("vmap: Expected at least one Tensor to vmap over")
        if any(n != sizes[0] for n in sizes):
            raise ValueError("vmap: Expected all tensors to have the same size in the mapped "
                             f"dimension, got sizes {sizes} for the mapped dimension")
        size = sizes[0]
        if size == 0:
            return _empty_batch(func, leaves, norm_dims, spec, kwargs, out_dims, name)
        results = []
        start_state = _rng_state() if randomness != "different" else None
        end_state = None
        for i in range(size):
            if randomness == "same":
                _C.set_rng_state(start_state)
            sliced = [x if d is None else x.select(d, i) for x, d in zip(leaves, norm_dims)]
            call_args = _tree_unflatten(sliced, spec)
            results.append(func(*call_args, **kwargs))
            if randomness == "error" and not _same_state(start_state, _rng_state()):
                raise RuntimeError("vmap: called random operation while in randomness error "
                                   "mode. Please either use the 'same' or 'different' "
                                   "randomness flags on vmap or perform the randomness "
                                   "operation out of vmap")
            if randomness == "same":
                end_state = _rng_state()
        if randomness == "same" and end_state is not None:
            _C.set_rng_state(end_state)
        return _stack_outputs(results, out_dims, name)

    return wrapper


def _flat_out_dims(out_dims, output, name):
    """One out_dim per output leaf, with functorch's checks (``_unwrap_batched``)."""
    for d in _tree_flatten(out_dims)[0]:
        if not (d is None or isinstance(d, int)):
            raise ValueError(f"vmap({name}, ..., out_dims={out_dims!r}): `out_dims` must be an "
                             "int, None or a python collection of ints representing where in "
                             "the outputs the vmapped dimension should appear.")
    leaves, out_spec = _tree_flatten(output)

    def incompatible():
        return ValueError(f"vmap({name}, ..., out_dims={out_dims!r})(<inputs>): out_dims is not "
                          "compatible with the structure of `outputs`. out_dims has structure "
                          f"{_spec_str(_tree_flatten(out_dims)[1])} but outputs has structure "
                          f"{_spec_str(out_spec)}.")

    if isinstance(output, Tensor):
        if out_dims is None or isinstance(out_dims, int):
            return [out_dims]
        if isinstance(out_dims, tuple) and len(out_dims) == 1:
            return list(out_dims)
        raise incompatible()
    if not _is_node(out_dims):
        return [out_dims] * len(leaves)
    try:
        return _broadcast_prefix(out_dims, output, "out_dims")
    except ValueError:
        raise incompatible() from None


def _stack_outputs(results, out_dims, name):
    """The per-slice outputs stacked along their out_dims."""
    first_leaves, out_spec = _tree_flatten(results[0])
    per_slice = [_tree_flatten(r)[0] for r in results]
    for pl in per_slice:
        if len(pl) != len(first_leaves):
            raise ValueError(f"vmap({name}, ...): func returned outputs of different "
                             f"structure for different batch elements")
    odims = _flat_out_dims(out_dims, results[0], name)
    outs = []
    for j, od in enumerate(odims):
        col = [pl[j] for pl in per_slice]
        if od is None:
            outs.append(col[0])
            continue
        if not isinstance(col[0], Tensor):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got "
                             f"type {type(col[0])}. Did you mean to set out_dims= to None "
                             f"for output?")
        nd = col[0].dim() + 1
        if not -nd <= od < nd:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, "
                             f"{nd - 1}], but got {od})")
        outs.append(_C.stack(col, dim=od % nd))
    return _tree_unflatten(outs, out_spec)


def _empty_batch(func, leaves, dims, spec, kwargs, out_dims, name):
    """A batch of size 0: ``func`` runs once on zero-filled slices (for the shapes of its
    outputs) and every batched output comes back with 0 entries along its out_dim."""
    sliced = [x if d is None else _C.zeros(tuple(x.shape[:d]) + tuple(x.shape[d + 1:]),
                                           dtype=x.dtype, device=x.device)
              for x, d in zip(leaves, dims)]
    out = _stack_outputs([func(*_tree_unflatten(sliced, spec), **kwargs)], out_dims, name)
    odims = _flat_out_dims(out_dims, out, name)
    leaves_out, out_spec = _tree_flatten(out)
    return _tree_unflatten([o if d is None else o.narrow(d, 0, 0)
                            for o, d in zip(leaves_out, odims)], out_spec)


# --------------------------------------------------------------------------------------------
# model ensembling
# --------------------------------------------------------------------------------------------


def _stacked_leaf(tensors, name):
    all_grad = all(t.requires_grad for t in tensors)
    if not all_grad and any(t.requires_grad for t in tensors):
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    result = _C.stack(tensors)
    if all_grad:
        result = result.detach().requires_grad_()
    return result


def stack_module_state(models):
    """Stacks the parameters and buffers of ``models`` (same class, same train/eval mode) along
    a new leading dimension, for use with :func:`vmap` over :func:`functional_call`. Returns
    ``(params, buffers)``, two dicts keyed by name; stacked parameters are new leaves that
    require grad."""
    models = list(models)
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError(
            "stack_module_state: Expected all models to have the same training/eval mode.")
    if not all(type(m) is type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    params = {k: _stacked_leaf(tuple(p[k] for p in all_params), k) for k in all_params[0]}
    all_buffers = [dict(m.named_buffers()) for m in models]
    buffers = {k: _stacked_leaf(tuple(b[k] for b in all_buffers), k) for k in all_buffers[0]}
    return params, buffers
