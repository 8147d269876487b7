"""Finite-difference gradient checks (float64), as ``torch.autograd.gradcheck``."""

import numpy as np

from ferrotorch import _C

Tensor = _C.Tensor


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _flat_outputs(func, inputs):
    outs = _as_tuple(func(*inputs))
    return [o for o in outs if isinstance(o, Tensor) and o.is_floating_point()]


def _differentiable_outputs(func, inputs):
    """The outputs autograd can differentiate (PyTorch's ``_differentiable_outputs``)."""
    return [o for o in _flat_outputs(func, inputs) if o.requires_grad]


def _host(t):
    """Flattened float64 NumPy copy of an output, from whatever device."""
    return t.detach().cpu().numpy().astype(np.float64).ravel().copy()


def _numerical_jacobian(func, inputs, eps):
    """J[i][j]: d(output j, flattened) / d(input i, flattened), by central differences."""
    base = [o.detach() for o in _flat_outputs(func, inputs)]
    jac = []
    for x in inputs:
        if not (isinstance(x, Tensor) and x.requires_grad):
            jac.append(None)
            continue
        n = x.numel()
        cols = [np.zeros((n, o.numel())) for o in base]
        flat = x.detach()  # shares memory with x: perturb in place
        if flat.is_contiguous():
            # A NumPy view on the CPU; on a device, element assignment through a flat view.
            view = flat.numpy().reshape(-1) if flat.device.type == "cpu" else flat.view(-1)
        else:
            view = _StridedElements(flat)
        for k in range(n):
            orig = float(view[k])
            # Grad mode stays on: func may itself differentiate (gradgradcheck).
            view[k] = orig + eps
            plus = [_host(o) for o in _flat_outputs(func, inputs)]
            view[k] = orig - eps
            minus = [_host(o) for o in _flat_outputs(func, inputs)]
            view[k] = orig
            for c, p, m in zip(cols, plus, minus):
                c[k] = (p - m) / (2 * eps)
        jac.append(cols)
    return jac


class _StridedElements:
    """Row-major element access (``view[k]``) to a non-contiguous tensor, in place."""

    def __init__(self, t):
        self.t = t
        self.shape = tuple(t.shape)

    def __getitem__(self, k):
        return self.t[np.unravel_index(k, self.shape)].item()

    def __setitem__(self, k, value):
        self.t[np.unravel_index(k, self.shape)] = value


def _analytical_jacobian(func, inputs, check_grad_dtypes=False):
    from ferrotorch.autograd import grad

    outs = _differentiable_outputs(func, inputs)
    diff_inputs = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    jac = {id(x): [np.zeros((x.numel(), o.numel())) for o in outs] for x in diff_inputs}
    for j, o in enumerate(outs):
        for k in range(o.numel()):
            seed = np.zeros(o.numel(), dtype=np.float64)
            seed[k] = 1.0
            g_out = _C.tensor(seed.reshape(tuple(o.shape)), dtype=o.dtype, device=o.device)
            grads = grad([o], diff_inputs, [g_out], retain_graph=True, allow_unused=True)
            for x, g in zip(diff_inputs, grads):
                if g is not None:
                    if check_grad_dtypes and g.dtype != x.dtype:
                        raise GradcheckError("Gradient has dtype mismatch")
                    if tuple(g.shape) != tuple(x.shape):
                        raise GradcheckError("Analytical gradient has incorrect size")
                    jac[id(x)][j][:, k] = g.detach().double().cpu().numpy().ravel()
    return [jac.get(id(x)) if isinstance(x, Tensor) and x.requires_grad else None
            for x in inputs]


def _check_inputs(inputs):
    """PyTorch's ``_check_inputs``: at least one input requires grad, a warning for inputs that
    are not float64, and no stride-0 dimension (numerical perturbation would hit several
    elements at once)."""
    import warnings

    any_requiring_grad = False
    for idx, inp in enumerate(inputs):
        if isinstance(inp, Tensor) and inp.requires_grad:
            if inp.dtype != _C.float64:
                warnings.warn(f"Input #{idx} requires gradient and is not a double precision "
                              "floating point or complex. This check will likely fail if all "
                              "the inputs are not of double precision floating point or "
                              "complex. ", stacklevel=3)
            if not all(st > 0 or sz <= 1 for st, sz in zip(inp.stride(), inp.shape)):
                raise RuntimeError(
                    f"The {idx}th input has a dimension with stride 0. gradcheck only supports "
                    "inputs that are non-overlapping to be able to compute the numerical "
                    "gradients correctly. You should call .contiguous on the input before "
                    "passing it to gradcheck.")
            any_requiring_grad = True
    if not any_requiring_grad:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, "
                         "but none of them have requires_grad=True.")


def _test_backward_mul_by_grad_output(func, inputs):
    """Zero grad_outputs must give zero gradients of the inputs' dtype and size."""
    from ferrotorch.autograd import grad

    outputs = _differentiable_outputs(func, inputs)
    diff_inputs = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    grads = grad(outputs, diff_inputs, [_C.zeros_like(o) for o in outputs], allow_unused=True)
    for gi, di in zip(grads, diff_inputs):
        if gi is None:
            continue
        if np.any(_host(gi) != 0):
            raise GradcheckError("backward not multiplied by grad_output")
        if gi.dtype != di.dtype:
            raise GradcheckError("grad is incorrect type")
        if gi.device != di.device:
            raise GradcheckError("grad is incorrect device")
        if tuple(gi.shape) != tuple(di.shape):
            raise GradcheckError("grad is incorrect size")


def _test_batched_grad(func, inputs):
    """``check_batched_grad``: ``vmap`` over ``autograd.grad`` (``func.vmap``) must give what
    one ``autograd.grad`` call per grad_output gives (PyTorch's ``_test_batched_grad``)."""
    from ferrotorch import func as _func
    from ferrotorch.autograd import grad

    diff_inputs = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    for output_idx, output in enumerate(_differentiable_outputs(func, inputs)):
        def vjp(v, output=output):
            res = grad(output, diff_inputs, v, retain_graph=True, allow_unused=True)
            return tuple(_C.zeros_like(x) if g is None else g for g, x in zip(res, diff_inputs))

        grad_outputs = [_C.randn_like(output) for _ in range(2)]
        expected = [_C.stack(shards) for shards in zip(*[vjp(g) for g in grad_outputs])]
        try:
            result = _func.vmap(vjp)(_C.stack(grad_outputs))
        except RuntimeError as ex:
            raise GradcheckError(f"While computing batched gradients, got: {ex}") from ex
        for input_idx, (res, exp) in enumerate(zip(result, expected)):
            if not np.allclose(_host(res), _host(exp), rtol=1e-5, atol=1e-8):
                raise GradcheckError(f"For output {output_idx} and input {input_idx}:\n\n"
                                     f"Batched grads check failed.\n\nGot:\n{res}\n\n"
                                     f"Expected:\n{exp}")


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False,
              check_forward_ad=False, check_backward_ad=True, fast_mode=False, masked=None):
    """Compare analytical gradients with central finite differences (PyTorch's checks and
    messages). Inputs that require grad should be float64. ``fast_mode`` runs the full check
    (same verdict, more work); ``check_forward_ad`` checks the Jacobian-vector products of
    ``autograd.functional.jvp``, which come from reverse mode here."""
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError("Expected at least one of check_forward_ad or check_backward_ad "
                             "to be True")
    if check_batched_grad and not check_backward_ad:
        raise AssertionError("Setting check_batched_grad=True requires check_backward_ad to be "
                             "True")
    if check_batched_forward_grad and not check_forward_ad:
        raise AssertionError("Setting check_batched_forward_grad=True requires "
                             "check_forward_ad to be True")
    try:
        _gradcheck(func, _as_tuple(inputs), eps, atol, rtol, nondet_tol, check_grad_dtypes,
                   check_batched_grad, check_forward_ad, check_backward_ad)
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def _gradcheck(func, inputs, eps, atol, rtol, nondet_tol, check_grad_dtypes,
               check_batched_grad, check_forward_ad, check_backward_ad):
    _check_inputs(inputs)
    numerical = _numerical_jacobian(func, inputs, eps)
    outs = _flat_outputs(func, inputs)
    diff = [o.requires_grad for o in outs]
    if not any(diff):
        # No differentiable output: the function must not depend on its inputs.
        for num in numerical:
            if num is not None and any(np.any(n != 0) for n in num):
                raise GradcheckError("Numerical gradient for function expected to be zero")
        return
    numerical = [None if num is None else [n for n, d in zip(num, diff) if d]
                 for num in numerical]
    if check_backward_ad:
        analytical = _analytical_jacobian(func, inputs, check_grad_dtypes)
        _check_against_numerical(numerical, analytical, rtol, atol, "Jacobian mismatch")
        again = _analytical_jacobian(func, inputs)
        for ana, ana2 in zip(analytical, again):
            if ana is not None and any(np.max(np.abs(a - b), initial=0.0) > nondet_tol
                                       for a, b in zip(ana, ana2)):
                raise GradcheckError(
                    "Backward is not reentrant, i.e., running backward with same input and "
                    "grad_output multiple times gives different values, although analytical "
                    "gradient matches numerical gradient."
                    f"The tolerance for nondeterminism was {nondet_tol}.")
        _test_backward_mul_by_grad_output(func, inputs)
        if check_batched_grad:
            _test_batched_grad(func, inputs)
    if check_forward_ad:
        forward = _forward_jacobian(func, inputs)
        _check_against_numerical(numerical, forward, rtol, atol,
                                 "Jacobian computed with forward mode mismatch")


def _check_against_numerical(numerical, computed, rtol, atol, what):
    """Raise PyTorch's GradcheckError (``what`` for output j with respect to input i) where a
    computed Jacobian block differs from the finite-difference one."""
    for i, (num, comp) in enumerate(zip(numerical, computed)):
        if num is None:
            continue
        for j, (n, a) in enumerate(zip(num, comp)):
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                raise GradcheckError(f"{what} for output {j} with respect to input {i},\n"
                                     f"numerical:{n}\nanalytical:{a}\n")


def _forward_jacobian(func, inputs):
    """J[i][j] column by column from ``autograd.functional.jvp`` with unit tangents."""
    from ferrotorch.autograd.functional import jvp

    res = []
    for i, x in enumerate(inputs):
        if not (isinstance(x, Tensor) and x.requires_grad):
            res.append(None)
            continue

        def f_i(xi, i=i):
            args = list(inputs)
            args[i] = xi
            return tuple(_differentiable_outputs(func, args))

        cols = None
        for k in range(x.numel()):
            seed = np.zeros(x.numel(), dtype=np.float64)
            seed[k] = 1.0
            v = _C.tensor(seed.reshape(tuple(x.shape)), dtype=x.dtype, device=x.device)
            _, jv = jvp(f_i, x.detach(), v)
            if cols is None:
                cols = [np.zeros((x.numel(), t.numel())) for t in jv]
            for c, t in zip(cols, jv):
                c[k] = t.detach().double().cpu().numpy().ravel()
        res.append(cols or [])
    return res


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  raise_exception=True, **kwargs):
    """Check second derivatives: gradcheck of the function (inputs, grad_outputs) ->
    autograd.grad(func(inputs), inputs, grad_outputs, create_graph=True)."""
    from ferrotorch.autograd import grad

    inputs = _as_tuple(inputs)
    outs = _flat_outputs(func, inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(
            _C.tensor(
                rng.standard_normal(tuple(o.shape)),
                dtype=o.dtype,
                device=o.device,
                requires_grad=True,
            )
            for o in outs
        )
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]

    def first_grads(*args):
        ins, gos = args[:n_in], args[n_in:]
        o = _flat_outputs(func, ins)
        gs = grad(o, [ins[i] for i in diff_idx], list(gos), create_graph=True,
                  allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first_grads, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)


class GradcheckError(RuntimeError):
    pass
