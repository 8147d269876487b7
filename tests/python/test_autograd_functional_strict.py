"""``torch.autograd.functional`` on the edge cases PyTorch defines: outputs that do not depend
on an input give zeros (not an error), ``strict=True`` turns each of those into PyTorch's
error, a linear function has a zero Hessian, and the argument checks (``v`` shape, ``v=None``,
non-Tensor inputs/outputs, strategy combinations) raise PyTorch's messages. Values are also
checked against closed forms, and against PyTorch when it is importable."""

import numpy as np
import pytest

import ferrotorch


def _cases(M):
    """(label, thunk) pairs, each returning tensors (nested) or raising."""
    AF = M.autograd.functional
    d = M.float64

    def x():
        return M.tensor([0.5, -1.0, 2.0], dtype=d)

    def y():
        return M.tensor([1.0, 2.0], dtype=d)

    def const(v):
        return M.ones(2, dtype=d)

    def ones(n):
        return M.ones(n, dtype=d)

    cases = []
    for strict in (False, True):
        s = f" strict={strict}"
        cases += [
            ("jac const" + s, lambda s=strict: AF.jacobian(const, x(), strict=s)),
            ("jac indep" + s, lambda s=strict: AF.jacobian(lambda a, b: a * 2, (x(), y()),
                                                           strict=s)),
            ("vjp const" + s, lambda s=strict: AF.vjp(const, x(), ones(2), strict=s)),
            ("vjp indep" + s, lambda s=strict: AF.vjp(lambda a, b: a.sum(), (x(), y()),
                                                      strict=s)),
            ("jvp const" + s, lambda s=strict: AF.jvp(const, x(), ones(3), strict=s)),
            ("jvp indep" + s, lambda s=strict: AF.jvp(lambda a, b: a * 2, (x(), y()),
                                                      (ones(3), ones(2)), strict=s)),
            ("hess linear" + s, lambda s=strict: AF.hessian(lambda a: a.sum() * 2, x(),
                                                            strict=s)),
            ("hess const" + s, lambda s=strict: AF.hessian(lambda a: M.tensor(1.0, dtype=d),
                                                           x(), strict=s)),
            ("hvp linear" + s, lambda s=strict: AF.hvp(lambda a: a.sum() * 2, x(), ones(3),
                                                       strict=s)),
            ("vhp linear" + s, lambda s=strict: AF.vhp(lambda a: a.sum() * 2, x(), ones(3),
                                                       strict=s)),
            ("vhp cubic" + s, lambda s=strict: AF.vhp(lambda a: (a ** 3).sum(), x(), ones(3),
                                                      strict=s)),
            ("jac cg" + s, lambda s=strict: AF.jacobian(lambda a: a * 2, x(), create_graph=True,
                                                        strict=s)),
            ("hess cg" + s, lambda s=strict: AF.hessian(lambda a: (a ** 3).sum(), x(),
                                                        create_graph=True, strict=s)),
        ]
    cases += [
        ("vjp v None", lambda: AF.vjp(lambda a: a * 2, x())),
        ("vjp v None scalar", lambda: AF.vjp(lambda a: (a * 2).sum(), x())),
        ("vjp v shape", lambda: AF.vjp(lambda a: a * 2, x(), ones(2))),
        ("vjp v tuple len", lambda: AF.vjp(lambda a: (a, a), x(), (ones(3),))),
        ("vjp v single", lambda: AF.vjp(lambda a: a, x(), (ones(3), ones(3)))),
        ("vjp v entry", lambda: AF.vjp(lambda a: (a, a), x(), (ones(3), ones(2)))),
        ("jvp v None", lambda: AF.jvp(lambda a: a * 2, x())),
        ("jvp v None scalar", lambda: AF.jvp(lambda a: a * 2, M.tensor(1.5, dtype=d))),
        ("hvp nonscalar", lambda: AF.hvp(lambda a: a * 2, x(), ones(3))),
        ("hvp tuple out", lambda: AF.hvp(lambda a: (a.sum(),), x(), ones(3))),
        ("hess nonscalar", lambda: AF.hessian(lambda a: a * 2, x())),
        ("jac non-tensor out", lambda: AF.jacobian(lambda a: 3.0, x())),
        ("jac list input", lambda: AF.jacobian(lambda a, b: a * b.sum(), [x(), y()])),
        ("jac tuple bad", lambda: AF.jacobian(lambda a, b: a, (x(), 2.0))),
        ("jac fwd no vec", lambda: AF.jacobian(lambda a: a * 2, x(), strategy="forward-mode")),
        ("jac fwd cg", lambda: AF.jacobian(lambda a: a * 2, x(), strategy="forward-mode",
                                           vectorize=True, create_graph=True)),
        ("jac fwd strict", lambda: AF.jacobian(lambda a: a * 2, x(), strategy="forward-mode",
                                               vectorize=True, strict=True)),
        ("jac fwd", lambda: AF.jacobian(lambda a: a.exp() * a.sum(), x(),
                                        strategy="forward-mode", vectorize=True)),
        ("jac fwd req", lambda: AF.jacobian(lambda a: a.exp() * a.sum(),
                                            x().requires_grad_(True), strategy="forward-mode",
                                            vectorize=True)),
        ("jac req", lambda: AF.jacobian(lambda a: a.exp() * a.sum(), x().requires_grad_(True))),
        ("jac vec strict", lambda: AF.jacobian(lambda a: a * 2, x(), vectorize=True,
                                               strict=True)),
        ("jac bad strategy", lambda: AF.jacobian(lambda a: a, x(), strategy="sideways")),
        ("hess outer fwd", lambda: AF.hessian(lambda a: (a.sin() * a ** 2).sum(), x(),
                                              vectorize=True,
                                              outer_jacobian_strategy="forward-mode")),
        ("jac multi", lambda: AF.jacobian(lambda a, b: (a * b.sum(), (a ** 2).sum() * b),
                                          (x(), y()))),
        ("hess multi", lambda: AF.hessian(lambda a, b: (a ** 2).sum() * (b ** 3).sum(),
                                          (x(), y()))),
        ("jac empty out", lambda: AF.jacobian(lambda a: a[:0], x())),
    ]
    return cases


def _outcome(thunk):
    try:
        r = thunk()
    except Exception as e:  # noqa: BLE001 compared with PyTorch's
        return ("raise", type(e).__name__, str(e).replace("ferrotorch.", "torch."))

    def conv(v):
        if isinstance(v, (tuple, list)):
            return [conv(e) for e in v]
        return ("T", tuple(v.shape), v.detach().numpy().tolist(), bool(v.requires_grad))

    return ("ok", conv(r))


def test_independent_outputs_give_zeros():
    AF, d = ferrotorch.autograd.functional, ferrotorch.float64
    x = ferrotorch.tensor([0.5, -1.0, 2.0], dtype=d)
    y = ferrotorch.tensor([1.0, 2.0], dtype=d)
    j = AF.jacobian(lambda v: ferrotorch.ones(2, dtype=d), x)
    assert j.shape == (2, 3) and float(j.abs().sum()) == 0.0
    ja, jb = AF.jacobian(lambda a, b: a * 2, (x, y))
    np.testing.assert_array_equal(ja.numpy(), 2 * np.eye(3))
    assert jb.shape == (3, 2) and float(jb.abs().sum()) == 0.0
    out, (va, vb) = AF.vjp(lambda a, b: a.sum(), (x, y))
    assert float(out) == 1.5 and va.tolist() == [1.0] * 3 and vb.tolist() == [0.0, 0.0]
    _, jv = AF.jvp(lambda v: ferrotorch.ones(2, dtype=d), x, ferrotorch.ones(3, dtype=d))
    assert jv.tolist() == [0.0, 0.0]
    h = AF.hessian(lambda a: a.sum() * 2, x)  # linear: zero Hessian
    assert h.shape == (3, 3) and float(h.abs().sum()) == 0.0
    _, hv = AF.hvp(lambda a: a.sum() * 2, x, ferrotorch.ones(3, dtype=d))
    assert hv.tolist() == [0.0] * 3
    # H of a0 * a1^2 is [[0, 2 a1, 0], [2 a1, 2 a0, 0], [0, 0, 0]]; vhp = v^T H, hvp = H v
    f = lambda a: a[0] * a[1] ** 2  # noqa: E731
    e0 = ferrotorch.tensor([1.0, 0.0, 0.0], dtype=d)
    assert AF.vhp(f, x, e0)[1].tolist() == [0.0, -2.0, 0.0]
    assert AF.hvp(f, x, e0)[1].tolist() == [0.0, -2.0, 0.0]
    hm = AF.hessian(lambda a, b: (a ** 2).sum() * (b ** 3).sum(), (x, y))
    np.testing.assert_allclose(hm[0][1].numpy(), np.outer(2 * x.numpy(), 3 * y.numpy() ** 2))
    np.testing.assert_allclose(hm[1][1].numpy(), np.diag(6 * y.numpy()) * 5.25)


def test_strict_mode_errors():
    AF, d = ferrotorch.autograd.functional, ferrotorch.float64
    x = ferrotorch.tensor([0.5, -1.0, 2.0], dtype=d)
    y = ferrotorch.tensor([1.0, 2.0], dtype=d)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not "
                                           "require gradients"):
        AF.jacobian(lambda v: ferrotorch.ones(2, dtype=d), x, strict=True)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function is "
                                           "independent of input 1"):
        AF.jacobian(lambda a, b: a * 2, (x, y), strict=True)
    with pytest.raises(RuntimeError, match="The output of the user-provided function is "
                                           "independent of input 1"):
        AF.vjp(lambda a, b: a.sum(), (x, y), strict=True)
    with pytest.raises(RuntimeError, match="found that the jacobian of the user-provided "
                                           "function with respect to input 0 is independent"):
        AF.hessian(lambda a: a.sum() * 2, x, strict=True)
    with pytest.raises(RuntimeError, match="The jacobian of the user-provided function is "
                                           "independent of input 0. This is not allowed in "
                                           "strict mode when create_graph=True"):
        AF.jacobian(lambda a: a * 2, x, create_graph=True, strict=True)


def test_argument_checks():
    AF, d = ferrotorch.autograd.functional, ferrotorch.float64
    x = ferrotorch.tensor([0.5, -1.0, 2.0], dtype=d)
    with pytest.raises(RuntimeError, match="The vector v can only be None if the user-provided "
                                           "function returns a single Tensor with a single "
                                           "element"):
        AF.vjp(lambda a: a * 2, x)
    with pytest.raises(RuntimeError, match=r"v has invalid size: should be ferrotorch.Size\(\[3\]"
                                           r"\) but got ferrotorch.Size\(\[2\]\)"):
        AF.vjp(lambda a: a * 2, x, ferrotorch.ones(2, dtype=d))
    with pytest.raises(TypeError, match="The inputs given to jacobian must be either a Tensor or "
                                        "a tuple of Tensors but the given inputs has type "
                                        "<class 'list'>"):
        AF.jacobian(lambda a: a, [x])
    with pytest.raises(RuntimeError, match="The Tensor returned by the function given to hvp "
                                           "should contain a single element"):
        AF.hvp(lambda a: a * 2, x, x)
    with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
        AF.jacobian(lambda a: a, x, strategy="forward-mode")
    j = AF.jacobian(lambda a: a.exp() * a.sum(), x, strategy="forward-mode", vectorize=True)
    xs = x.numpy()
    np.testing.assert_allclose(j.numpy(), np.diag(np.exp(xs)) * xs.sum()
                               + np.exp(xs)[:, None] * np.ones(3), rtol=1e-12)


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")  # torch's own vmap
def test_functional_edge_cases_match_torch():
    torch = pytest.importorskip("torch")
    ours, theirs = _cases(ferrotorch), _cases(torch)
    for (label, a), (_, b) in zip(ours, theirs):
        got, want = _outcome(a), _outcome(b)
        if got[0] == want[0] == "ok":
            def walk(g, w, label=label):
                if isinstance(w, list):
                    assert isinstance(g, list) and len(g) == len(w), label
                    for gi, wi in zip(g, w):
                        walk(gi, wi)
                    return
                assert g[0] == "T" and g[1] == w[1] and g[3] == w[3], label
                np.testing.assert_allclose(np.array(g[2]), np.array(w[2]), rtol=1e-12,
                                           atol=1e-14, err_msg=label)

            walk(got[1], want[1])
        else:
            assert got == want, label
