"""``ferrotorch.nn.utils.prune`` (PyTorch's pruning utilities) and
``ferrotorch.func.stack_module_state``; see test_e2e_programs3.py for the tutorial programs."""

import pytest

import ferrotorch as torch
import ferrotorch.nn as nn
import ferrotorch.nn.utils.prune as prune


def test_random_unstructured_and_identity():
    torch.manual_seed(0)
    m = nn.Linear(5, 4)
    prune.random_unstructured(m, "weight", amount=0.25)
    assert int((m.weight_mask == 0).sum()) == 5
    assert torch.equal(m.weight, m.weight_orig * m.weight_mask)
    prune.identity(m, "bias")
    assert torch.equal(m.bias_mask, torch.ones(4)) and torch.equal(m.bias, m.bias_orig)
    # the pre-hook recomputes ``weight`` from ``weight_orig`` on every forward
    with torch.no_grad():
        m.weight_orig.add_(1.0)
    m(torch.randn(2, 5))
    assert torch.equal(m.weight, m.weight_orig * m.weight_mask)


def test_custom_from_mask_and_container():
    m = nn.Linear(3, 2)
    mask = torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    prune.custom_from_mask(m, "weight", mask)
    prune.l1_unstructured(m, "weight", amount=1)
    hooks = [h for h in m._forward_pre_hooks.values() if isinstance(h, prune.BasePruningMethod)]
    assert len(hooks) == 1 and isinstance(hooks[0], prune.PruningContainer) and len(hooks[0]) == 2
    # the second pass only prunes among the entries still kept
    assert int(m.weight_mask.sum()) == 3
    assert (m.weight_mask <= mask).all()
    prune.remove(m, "weight")
    assert set(dict(m.named_parameters())) == {"weight", "bias"}
    assert int((m.weight == 0).sum()) == 3


def test_random_structured_prunes_whole_channels():
    torch.manual_seed(0)
    conv = nn.Conv2d(2, 6, 3)
    prune.random_structured(conv, "weight", amount=0.5, dim=0)
    per_channel = conv.weight_mask.sum(dim=(1, 2, 3))
    assert sorted(per_channel.tolist()) == [0.0] * 3 + [18.0] * 3


def test_prune_method_and_validation():
    t = torch.tensor([[0.1, -3.0], [2.0, -0.5]])
    out = prune.L1Unstructured(amount=2).prune(t)
    assert torch.equal(out, torch.tensor([[0.0, -3.0], [2.0, 0.0]]))
    with pytest.raises(ValueError, match="should either be a float"):
        prune.L1Unstructured(amount=1.5)
    with pytest.raises(TypeError, match="Invalid type for amount"):
        prune.L1Unstructured(amount="a")
    m = nn.Linear(2, 2)
    with pytest.raises(ValueError, match="should be smaller than"):
        prune.l1_unstructured(m, "weight", amount=5)
    # a failed pruning leaves the module as it was
    assert set(dict(m.named_parameters())) == {"weight", "bias"}
    with pytest.raises(ValueError, match="multidimensional"):
        prune.ln_structured(m, "bias", amount=1, n=2, dim=0)
    with pytest.raises(TypeError, match="unstructured"):
        prune.global_unstructured([(m, "weight")], pruning_method=prune.RandomStructured,
                                  amount=1)


def test_stack_module_state_requires_grad_mismatch():
    a, b = nn.Linear(2, 2), nn.Linear(2, 2)
    b.weight.requires_grad_(False)
    with pytest.raises(RuntimeError, match="same .requires_grad"):
        torch.func.stack_module_state([a, b])
    with pytest.raises(RuntimeError, match="same class"):
        torch.func.stack_module_state([a, nn.Sequential()])
