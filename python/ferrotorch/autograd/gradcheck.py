"""Finite-difference gradient checks (float64), as ``torch.autograd.gradcheck``."""

import numpy as np

from ferrotorch import _C

Tensor = _C.Tensor


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _flat_outputs(func, inputs):
    outs = _as_tuple(func(*inputs))
    return [o for o in outs if isinstance(o, Tensor) and o.is_floating_point()]


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
        if not flat.is_contiguous():
            raise ValueError("gradcheck needs contiguous inputs (call .contiguous())")
        # A NumPy view on the CPU; on a device, element assignment through a flat view.
        view = flat.numpy().reshape(-1) if flat.device.type == "cpu" else flat.view(-1)
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


def _analytical_jacobian(func, inputs):
    from ferrotorch.autograd import grad

    outs = _flat_outputs(func, inputs)
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
                    jac[id(x)][j][:, k] = g.detach().double().cpu().numpy().ravel()
    return [jac.get(id(x)) if isinstance(x, Tensor) and x.requires_grad else None
            for x in inputs]


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, fast_mode=False):
    """Compare analytical gradients with central finite differences. Inputs that require
    grad should be float64."""
    inputs = _as_tuple(inputs)
    for x in inputs:
        if isinstance(x, Tensor) and x.requires_grad and x.dtype != _C.float64:
            import warnings

            warnings.warn("Input to gradcheck is not double precision floating point; the "
                          "check may fail because of precision.", stacklevel=2)
    numerical = _numerical_jacobian(func, inputs, eps)
    analytical = _analytical_jacobian(func, inputs)
    for i, (num, ana) in enumerate(zip(numerical, analytical)):
        if num is None:
            continue
        for j, (n, a) in enumerate(zip(num, ana)):
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                if raise_exception:
                    raise GradcheckError(
                        f"Jacobian mismatch for output {j} with respect to input {i},\n"
                        f"numerical:{n}\nanalytical:{a}\n"
                    )
                return False
    return True


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
