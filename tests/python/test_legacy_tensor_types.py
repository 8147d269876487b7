"""PyTorch's legacy typed tensor classes (``torch.FloatTensor`` & co.) and ``Tensor.type``
with a type name or class, as older tutorials use them."""

import numpy as np
import pytest

import ferrotorch as torch


def test_constructors():
    a = torch.FloatTensor([1, 2])
    assert a.dtype == torch.float32 and a.tolist() == [1.0, 2.0]
    assert torch.LongTensor([[1, 2]]).dtype == torch.int64
    assert torch.FloatTensor(2, 3).shape == (2, 3)
    assert torch.DoubleTensor(torch.Size([4])).shape == (4,)
    assert torch.ByteTensor().shape == (0,)
    assert torch.BoolTensor([True, False]).dtype == torch.bool
    assert torch.IntTensor(np.array([1, 2])).dtype == torch.int32
    x = torch.ones(2)
    alias = torch.FloatTensor(x)
    alias[0] = 5.0
    assert x[0].item() == 5.0
    with pytest.raises(TypeError, match="expected"):
        torch.LongTensor(x)


def test_isinstance_and_type():
    x = torch.ones(2)
    assert isinstance(x, torch.FloatTensor) and not isinstance(x, torch.LongTensor)
    assert not isinstance(x, torch.cuda.FloatTensor)
    assert not isinstance([1.0], torch.FloatTensor)
    y = x.type(torch.LongTensor)
    assert y.dtype == torch.int64 and isinstance(y, torch.LongTensor)
    assert x.type(torch.FloatTensor) is x
    assert x.type("torch.DoubleTensor").dtype == torch.float64
    assert x.type("ferrotorch.IntTensor").dtype == torch.int32
    assert x.type(torch.float16).dtype == torch.float16
    assert x.type() == "ferrotorch.FloatTensor"
    with pytest.raises(ValueError, match="invalid type"):
        x.type("torch.NotATensor")
    # the DQN tutorial idiom
    use_cuda = torch.cuda.is_available()
    FloatTensor = torch.cuda.FloatTensor if use_cuda else torch.FloatTensor
    assert FloatTensor([[0.5]]).shape == (1, 1)
