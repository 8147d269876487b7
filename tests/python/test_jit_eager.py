"""The eager-mode ``torch.jit`` helpers: a module written to be TorchScript-friendly (the
torchvision / timm style) runs unchanged, with the same results as under PyTorch."""

import typing
import warnings
from typing import Optional

import numpy as np
import pytest

import ferrotorch


def scriptable_block(M):
    """A residual block as TorchScript-friendly libraries write it."""
    nn, F = M.nn, M.nn.functional

    class Block(nn.Module):
        scale: typing.Final[float] = 0.5

        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.calls = 0
            self.meta = M.jit.Attribute({"version": 2}, typing.Dict[str, int])

        @M.jit.unused
        def debug_path(self, x):
            return x * 1000  # never taken: not scripting

        @M.jit.ignore
        def log(self, x):
            self.calls += 1
            return x

        @M.jit.export
        def features(self, x):
            return F.relu(self.fc(x))

        @M.jit.ignore(drop=False)
        def helper(self, x):
            return x + 1

        def forward(self, x, extra: Optional[typing.List[M.Tensor]] = None):
            if M.jit.is_scripting() or M.jit.is_tracing():
                y = self.debug_path(x)
            else:
                y = self.log(x + self.scale * self.features(x))
            y = M.jit.annotate(M.Tensor, y)
            if M.jit.isinstance(extra, typing.List[M.Tensor]):
                for e in extra:
                    y = y + e
            return self.helper(y)

    return Block


def test_scriptable_module_runs_eagerly():
    M = ferrotorch
    M.manual_seed(0)
    block = scriptable_block(M)()
    x = M.ones(2, 4)
    out = block(x, [M.ones(2, 4)])
    want = x + 0.5 * M.relu(block.fc(x)) + 1 + 1
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-6)
    assert block.calls == 1
    assert block.meta.value == {"version": 2}
    assert not M.jit.is_scripting() and not M.jit.is_tracing()
    mods = M.jit.FunctionModifiers
    assert type(block).debug_path._torchscript_modifier == mods.UNUSED
    assert type(block).log._torchscript_modifier == mods.IGNORE
    assert type(block).features._torchscript_modifier == mods.EXPORT
    assert M.jit.Final is typing.Final
    assert M.jit.script_if_tracing(len) is len


def test_jit_isinstance_refines_containers():
    J, T = ferrotorch.jit, ferrotorch.Tensor
    t = ferrotorch.ones(2)
    assert J.isinstance([t, t], typing.List[T])
    assert not J.isinstance([t, 1], typing.List[T])
    assert J.isinstance({"a": [1, 2]}, typing.Dict[str, typing.List[int]])
    assert not J.isinstance({"a": [1, "x"]}, typing.Dict[str, typing.List[int]])
    assert J.isinstance((1, "s"), typing.Tuple[int, str])
    assert not J.isinstance((1, "s", 2), typing.Tuple[int, str])
    assert J.isinstance(None, Optional[typing.List[int]])
    assert J.isinstance([3], Optional[typing.List[int]])
    assert J.isinstance(3, (str, int)) and not J.isinstance(3.0, (str, int))
    assert J.isinstance([1], list[int]) and J.isinstance(2, int | str)
    with pytest.raises(RuntimeError, match=r"Attempted to use List without a contained type. "
                                           r"Please add a contained type, e.g. List\[int\]"):
        J.isinstance([1], typing.List)
    with pytest.raises(RuntimeError, match=r"e.g. Dict\[int, int\]"):
        J.isinstance({}, typing.Dict)
    with pytest.raises(RuntimeError, match="must be a type or a tuple of types"):
        J.isinstance(1, [int])
    with pytest.warns(UserWarning, match="The inner type of a container is lost"):
        assert J.isinstance([], typing.List[str])


def test_jit_ignore_arguments():
    J = ferrotorch.jit
    with pytest.raises(RuntimeError, match="Argument to @torch.jit.ignore must be a bool or a "
                                           "function but got 3"):
        J.ignore(3)
    with pytest.warns(FutureWarning, match=r"ignore\(True\) has been deprecated"):
        dropped = J.ignore(True)(lambda: 1)
    assert dropped._torchscript_modifier == J.FunctionModifiers.UNUSED
    prop = J.unused(property(lambda self: 1))
    assert prop.fget._torchscript_modifier == J.FunctionModifiers.UNUSED
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert J.annotate(int, 5) == 5
    attr = J.Attribute([1], list)
    assert attr.value == [1] and attr.type is list and tuple(attr) == ([1], list)


def test_scriptable_module_matches_torch():
    torch = pytest.importorskip("torch")
    ferrotorch.manual_seed(0)
    ours = scriptable_block(ferrotorch)()
    theirs = scriptable_block(torch)()
    theirs.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy())
                            for k, v in ours.state_dict().items()})
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    a = ours(ferrotorch.from_numpy(x), [ferrotorch.ones(2, 4)])
    b = theirs(torch.from_numpy(x), [torch.ones(2, 4)])
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6)
    assert ours.calls == theirs.calls == 1
    for name in ("debug_path", "log", "features"):
        assert (getattr(type(ours), name)._torchscript_modifier
                == getattr(type(theirs), name)._torchscript_modifier)
    for obj, typ in (([1, "a"], typing.List[int]), ({"k": (1, "x")}, typing.Dict[str, typing.Tuple[int, str]]),
                     (None, Optional[int]), ([[1.0]], typing.List[typing.List[float]])):
        assert ferrotorch.jit.isinstance(obj, typ) == torch.jit.isinstance(obj, typ)
