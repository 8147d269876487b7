"""``torch.func.linearize``: the output and a reusable JVP function at the primals, with
PyTorch's tangent checks; values against closed forms, ``func.jvp``, and PyTorch."""

import numpy as np
import pytest

import ferrotorch


def _program(M):
    from importlib import import_module

    linearize = import_module(M.__name__ + ".func").linearize
    x = M.tensor([0.5, 1.0, -2.0], dtype=M.float64)
    w = M.tensor([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0]], dtype=M.float64)

    def f(a, b):
        return (b @ a.sin(), (a * a).sum() * b)

    out, jvp_fn = linearize(f, x, w)
    t1 = jvp_fn(M.ones(3, dtype=M.float64), M.zeros(2, 3, dtype=M.float64))
    t2 = jvp_fn(M.zeros(3, dtype=M.float64), M.ones(2, 3, dtype=M.float64))
    return out, t1, t2, jvp_fn


def test_linearize_values_and_reuse():
    out, t1, t2, _ = _program(ferrotorch)
    x = np.array([0.5, 1.0, -2.0])
    w = np.array([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0]])
    np.testing.assert_allclose(out[0].numpy(), w @ np.sin(x), rtol=1e-12)
    np.testing.assert_allclose(t1[0].numpy(), w @ np.cos(x), rtol=1e-12)  # d/dx along ones
    np.testing.assert_allclose(t1[1].numpy(), 2 * x.sum() * w, rtol=1e-12)
    np.testing.assert_allclose(t2[0].numpy(), np.ones((2, 3)) @ np.sin(x), rtol=1e-12)
    np.testing.assert_allclose(t2[1].numpy(), (x * x).sum() * np.ones((2, 3)), rtol=1e-12)
    # the same as func.jvp at the same point
    _, ref = ferrotorch.func.jvp(lambda a: (ferrotorch.tensor(w) @ a.sin()),
                                 (ferrotorch.tensor(x),), (ferrotorch.ones(3, dtype=ferrotorch.float64),))
    np.testing.assert_allclose(t1[0].numpy(), ref.numpy(), rtol=1e-12)


def test_linearize_tangent_checks():
    *_, jvp_fn = _program(ferrotorch)
    d = ferrotorch.float64
    with pytest.raises(RuntimeError, match=r"tangent:0 with shape ferrotorch.Size\(\[2\]\) in "
                                           r"flattened pytree doesn't match the shape "
                                           r"ferrotorch.Size\(\[3\]\) of the corresponding "
                                           r"primal."):
        jvp_fn(ferrotorch.ones(2, dtype=d), ferrotorch.zeros(2, 3, dtype=d))
    with pytest.raises(RuntimeError, match="tangent:1 with dtype ferrotorch.float32 in flattened "
                                           "pytree doesn't match the dtype ferrotorch.float64"):
        jvp_fn(ferrotorch.ones(3, dtype=d), ferrotorch.zeros(2, 3))
    with pytest.raises(RuntimeError, match="Expected the tangents .* to have the same argspec as "
                                           "the primals"):
        jvp_fn(ferrotorch.ones(3, dtype=d))


@pytest.mark.filterwarnings("ignore")  # torch's own make_fx / const_fold chatter
def test_linearize_matches_torch():
    torch = pytest.importorskip("torch")
    ours, theirs = _program(ferrotorch), _program(torch)
    for a, b in zip(ours[:3], theirs[:3]):
        for u, v in zip(a, b):
            np.testing.assert_allclose(u.detach().numpy(), v.detach().numpy(), rtol=1e-12)
