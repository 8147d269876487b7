"""Inference tensors: what ``inference_mode`` creates (``Tensor.is_inference()``) and the
rules PyTorch enforces on them outside the mode (no saving for backward, no in-place update,
no ``requires_grad``). Each program runs under ferrotorch and, when importable, PyTorch, and
the observations must agree; the plain tests assert the expected values without PyTorch."""

import numpy as np
import pytest

import ferrotorch

SAVE_MSG = "Inference tensors cannot be saved for backward"
INPLACE_MSG = "Inplace update to inference tensor outside InferenceMode is not allowed"
RG_MSG = "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed."


def _torch():
    return pytest.importorskip("torch")


def outcome(f):
    """('ok', value) or ('err', exception type, message head) for comparing libraries."""
    try:
        return ("ok", f())
    except Exception as e:  # noqa: BLE001 - every outcome is compared
        return ("err", type(e).__name__, str(e)[:70])


def creation_program(M):
    """Which tensors are inference tensors, under nested modes, views and copies."""
    obs = {}
    x = M.ones(3)
    obs["outside"] = x.is_inference()
    with M.no_grad():
        obs["no_grad"] = M.ones(2).is_inference()
    with M.inference_mode():
        a = M.ones(3)
        obs["inside"] = a.is_inference()
        obs["op_inside"] = (x + 1).is_inference()
        obs["view_of_normal"] = x[1:].is_inference()
        obs["view_of_inference"] = a[1:].is_inference()
        obs["detach_of_normal"] = x.detach().is_inference()
        obs["grad_inside"] = M.is_grad_enabled()
        with M.inference_mode(False):
            obs["nested_false"] = (x + 1).is_inference()
            obs["nested_false_from_inference"] = (a * 2).is_inference()
            obs["nested_false_modes"] = (M.is_inference_mode_enabled(), M.is_grad_enabled())
            with M.inference_mode():
                obs["nested_true_again"] = M.zeros(1).is_inference()
        obs["restored"] = (M.is_inference_mode_enabled(), M.is_grad_enabled())
        with M.no_grad():
            obs["no_grad_inside"] = M.ones(1).is_inference()
        x.add_(1)  # a normal tensor may be updated in place in inference mode
        a.mul_(2)  # and so may an inference tensor
        obs["inplace_inside"] = (x.is_inference(), a.tolist())
    obs["after"] = (M.is_inference_mode_enabled(), M.is_grad_enabled())
    v = a[:2]
    obs["view_outside"] = v.is_inference()
    obs["detach_outside"] = a.detach().is_inference()
    obs["clone_outside"] = a.clone().is_inference()
    obs["op_outside"] = (a + 1).is_inference()
    obs["reshape_outside"] = a.reshape(3, 1).is_inference()
    with M.inference_mode(mode=False):
        obs["mode_false"] = (M.ones(2).is_inference(), M.is_grad_enabled())
    with M.no_grad():
        with M.inference_mode(False):
            obs["false_inside_no_grad"] = M.is_grad_enabled()

    @M.inference_mode()
    def decorated(t):
        return t * 3

    obs["decorated"] = decorated(x).is_inference()
    return obs


def rules_program(M):
    """What may and may not be done with inference tensors outside the mode."""
    obs = {}
    with M.inference_mode():
        a = M.tensor([1.0, 2.0, 3.0])  # the in-place attempts go to this one
        b = M.tensor([1.0, 2.0, 3.0])
        inside_leaf = M.ones(3)
        inside_leaf.requires_grad_()
        obs["requires_grad_inside"] = (inside_leaf.requires_grad, inside_leaf.is_leaf)
    w = M.tensor([0.5, -1.0, 2.0], requires_grad=True)
    obs["inplace"] = outcome(lambda: a.add_(1))
    obs["inplace_view"] = outcome(lambda: a[1:].mul_(2))

    def setitem():
        a[0] = 5.0

    obs["setitem"] = outcome(setitem)
    obs["fill"] = outcome(lambda: a.fill_(0))
    obs["zero"] = outcome(lambda: a.zero_())
    obs["copy"] = outcome(lambda: a.copy_(M.zeros(3)))
    obs["requires_grad_"] = outcome(lambda: a.requires_grad_())

    def set_attr():
        a.requires_grad = True

    obs["requires_grad_attr"] = outcome(set_attr)
    obs["requires_grad_false"] = outcome(lambda: a.requires_grad_(False).requires_grad)
    obs["mul_saves"] = outcome(lambda: (w * b).sum().item())
    obs["mul_saves_left"] = outcome(lambda: (b * w).sum().item())
    obs["matmul_saves"] = outcome(lambda: (w @ b).item())
    obs["div_saves"] = outcome(lambda: (w / b).sum().item())
    obs["leaf_from_inside_saved"] = outcome(lambda: (inside_leaf * w).sum().item())

    def add_then_backward():
        y = (w + b).exp().sum()  # add saves no operand, exp saves its (normal) output
        y.backward()
        return [round(v, 10) for v in w.grad.tolist()]

    obs["add_is_fine"] = outcome(add_then_backward)

    def clone_workaround():
        w.grad = None
        (w * b.clone()).sum().backward()
        return w.grad.tolist()

    obs["clone_workaround"] = outcome(clone_workaround)
    obs["no_grad_use"] = outcome(lambda: (w.detach() * b).tolist())
    lin = M.nn.Linear(3, 2)
    with M.inference_mode():
        feats = M.ones(4, 3)
        cached = lin(feats)
    obs["cached"] = (cached.is_inference(), cached.requires_grad)
    obs["linear_saves_input"] = outcome(lambda: lin(feats).sum().item())
    obs["sum_of_cached"] = outcome(lambda: (lin.weight * cached.sum()).sum().requires_grad)
    return obs


def _norm(obs):
    """Outcomes with floats rounded so the two libraries compare exactly."""
    def fix(v):
        if isinstance(v, float):
            return round(v, 5)
        if isinstance(v, (list, tuple)):
            return type(v)(fix(x) for x in v)
        return v
    return {k: fix(v) for k, v in obs.items()}


def test_creation_matches_torch():
    torch = _torch()
    assert _norm(creation_program(ferrotorch)) == _norm(creation_program(torch))


def test_rules_match_torch():
    torch = _torch()
    ft, pt = _norm(rules_program(ferrotorch)), _norm(rules_program(torch))
    assert ft.keys() == pt.keys()
    for k in pt:
        assert ft[k] == pt[k], k


def test_creation_values():
    obs = creation_program(ferrotorch)
    assert obs["inside"] and obs["view_of_inference"] and obs["view_outside"]
    assert obs["op_inside"] and obs["nested_true_again"] and obs["no_grad_inside"]
    assert obs["detach_outside"] and obs["decorated"]
    assert not obs["outside"] and not obs["no_grad"] and not obs["view_of_normal"]
    assert not obs["detach_of_normal"] and not obs["nested_false"]
    assert not obs["nested_false_from_inference"] and not obs["clone_outside"]
    assert not obs["op_outside"]
    assert obs["reshape_outside"]  # a view
    assert obs["grad_inside"] is False
    assert obs["nested_false_modes"] == (False, True)
    assert obs["restored"] == (True, False)
    assert obs["after"] == (False, True)
    assert obs["mode_false"] == (False, True)
    assert obs["false_inside_no_grad"] is True  # as c10::InferenceMode(false)
    assert obs["inplace_inside"] == (False, [2.0, 2.0, 2.0])


def test_rule_values():
    obs = rules_program(ferrotorch)
    for k in ("inplace", "inplace_view", "setitem", "fill", "zero", "copy"):
        assert obs[k] == ("err", "RuntimeError", INPLACE_MSG[:70]), k
    for k in ("requires_grad_", "requires_grad_attr"):
        assert obs[k] == ("err", "RuntimeError", RG_MSG[:70]), k
    assert obs["requires_grad_false"] == ("ok", False)
    assert obs["requires_grad_inside"] == (True, True)
    for k in ("mul_saves", "mul_saves_left", "matmul_saves", "div_saves",
              "leaf_from_inside_saved", "linear_saves_input"):
        assert obs[k][:2] == ("err", "RuntimeError") and obs[k][2].startswith(SAVE_MSG), k
    w = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(obs["add_is_fine"][1], np.exp(w + [1.0, 2.0, 3.0]), rtol=1e-6)
    assert obs["clone_workaround"] == ("ok", [1.0, 2.0, 3.0])
    assert obs["no_grad_use"] == ("ok", [0.5, -2.0, 6.0])
    assert obs["cached"] == (True, False)
    # the sum of an inference tensor made outside the mode is a normal tensor: no error
    assert obs["sum_of_cached"] == ("ok", True)


def test_failed_save_leaves_no_pending_error():
    """The refused op raises once; the next ops run normally."""
    with ferrotorch.inference_mode():
        a = ferrotorch.ones(2)
    w = ferrotorch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=SAVE_MSG):
        w * a
    y = (w * 3).sum()
    y.backward()
    assert w.grad.tolist() == [3.0, 3.0]


def test_inference_tensor_in_a_training_step_is_refused_until_cloned():
    """A feature cache computed under inference_mode fed to a trainable head."""
    M = ferrotorch
    M.manual_seed(0)
    backbone, head = M.nn.Linear(4, 8), M.nn.Linear(8, 1)
    x = M.randn(16, 4)
    with M.inference_mode():
        feats = backbone(x).relu()
    with pytest.raises(RuntimeError, match=SAVE_MSG):
        head(feats)
    loss = head(feats.clone()).pow(2).mean()
    loss.backward()
    ref = (feats.clone() @ head.weight.detach().T + head.bias.detach())
    np.testing.assert_allclose(head.bias.grad.numpy(), [2 * ref.mean().item()], rtol=1e-5)
