"""ferrotorch.save / ferrotorch.load: safetensors-based checkpoints that never run code."""

import io
import struct

import numpy as np
import pytest

import ferrotorch as ft


def roundtrip(obj):
    buf = io.BytesIO()
    ft.save(obj, buf)
    buf.seek(0)
    return ft.load(buf)


@pytest.mark.parametrize("dtype", [ft.float32, ft.float64, ft.float16, ft.bfloat16, ft.int64,
                                   ft.int32, ft.int16, ft.int8, ft.uint8, ft.bool])
def test_tensor_roundtrip_every_dtype(dtype):
    a = ft.tensor(np.arange(12).reshape(3, 4) % 5, dtype=dtype)
    b = roundtrip(a)
    assert b.dtype == dtype and b.shape == (3, 4)
    assert b.float().tolist() == a.float().tolist()


def test_zero_d_empty_and_noncontiguous():
    assert roundtrip(ft.tensor(3.5)).item() == 3.5
    assert roundtrip(ft.tensor(np.zeros((0, 3), np.float32))).shape == (0, 3)
    t = ft.tensor(np.arange(6.0).reshape(2, 3)).transpose(0, 1)
    np.testing.assert_array_equal(roundtrip(t).numpy(), t.numpy())


def test_nested_containers_and_plain_values(tmp_path):
    obj = {"step": 7, "lr": 0.1, "name": "adam", "flag": True, "none": None,
           "inf": float("inf"), "nested": [ft.tensor([1, 2]), (ft.tensor(1.0), 3)],
           5: "int key"}
    p = tmp_path / "ckpt.ft"
    ft.save(obj, p)
    back = ft.load(p)
    assert back["step"] == 7 and back["lr"] == 0.1 and back["name"] == "adam"
    assert back["flag"] is True and back["none"] is None and back["inf"] == float("inf")
    assert back["nested"][0].tolist() == [1, 2]
    assert isinstance(back["nested"][1], tuple) and back["nested"][1][1] == 3
    assert back[5] == "int key"


def test_module_and_optimizer_state_dict_roundtrip():
    model = ft.nn.Sequential(ft.nn.Linear(4, 3), ft.nn.ReLU(), ft.nn.Linear(3, 2))
    opt = ft.optim.Adam(model.parameters(), lr=1e-2)
    x = ft.tensor(np.random.default_rng(0).standard_normal((5, 4)), dtype=ft.float32)
    model(x).sum().backward()
    opt.step()
    sd = roundtrip(model.state_dict())
    assert list(sd.keys()) == list(model.state_dict().keys())
    model2 = ft.nn.Sequential(ft.nn.Linear(4, 3), ft.nn.ReLU(), ft.nn.Linear(3, 2))
    model2.load_state_dict(sd)
    np.testing.assert_array_equal(model2(x).detach().numpy(), model(x).detach().numpy())
    osd = roundtrip(opt.state_dict())
    opt2 = ft.optim.Adam(model2.parameters(), lr=1e-2)
    opt2.load_state_dict(osd)
    assert opt2.state_dict()["param_groups"][0]["lr"] == 1e-2


def test_checkpoint_opens_with_safetensors_package(tmp_path):
    from safetensors.numpy import load_file

    p = tmp_path / "w.safetensors"
    ft.save({"w": ft.tensor([[1.0, 2.0]]), "b": ft.tensor([3.0])}, p)
    arrays = load_file(str(p))
    assert sorted(a.shape for a in arrays.values()) == [(1,), (1, 2)]


def test_foreign_safetensors_file_loads_as_state_dict(tmp_path):
    from safetensors.numpy import save_file

    p = tmp_path / "foreign.safetensors"
    save_file({"layer.weight": np.eye(2, dtype=np.float32),
               "layer.bias": np.zeros(2, np.float32)}, str(p))
    sd = ft.load(p)
    assert set(sd) == {"layer.weight", "layer.bias"}
    assert sd["layer.weight"].tolist() == [[1.0, 0.0], [0.0, 1.0]]


def test_malformed_files_get_clear_errors(tmp_path):
    buf = io.BytesIO()
    ft.save({"a": ft.tensor(np.arange(100.0))}, buf)
    data = buf.getvalue()
    with pytest.raises(RuntimeError, match="truncated"):
        ft.load(io.BytesIO(data[:4]))
    with pytest.raises(RuntimeError):
        ft.load(io.BytesIO(data[: len(data) // 2]))
    huge = struct.pack("<Q", 1 << 40) + data[8:]
    with pytest.raises(RuntimeError, match="invalid or truncated"):
        ft.load(io.BytesIO(huge))
    n = struct.unpack("<Q", data[:8])[0]
    garbled = data[:8] + b"{" * n + data[8 + n:]
    with pytest.raises(RuntimeError, match="corrupted"):
        ft.load(io.BytesIO(garbled))


def test_unsupported_objects_are_refused():
    with pytest.raises(TypeError, match="cannot store"):
        ft.save({"f": lambda x: x}, io.BytesIO())


def test_zero_dim_tensors_keep_their_shape(tmp_path):
    # e.g. BatchNorm's num_batches_tracked buffer: a 0-d int64 tensor
    obj = {"count": ft.tensor(7), "x": ft.tensor(2.5, dtype=ft.float64),
           "bf": ft.tensor(1.5, dtype=ft.bfloat16)}
    path = tmp_path / "scalars.safetensors"
    ft.save(obj, path)
    back = ft.load(path)
    for k, v in obj.items():
        assert tuple(back[k].shape) == ()
        assert back[k].dtype == v.dtype
        assert back[k].item() == v.item()
    bn = ft.nn.BatchNorm2d(3)
    bn(ft.randn(4, 3, 2, 2))
    ft.save(bn.state_dict(), path)
    fresh = ft.nn.BatchNorm2d(3)
    fresh.load_state_dict(ft.load(path))
    assert fresh.num_batches_tracked.item() == 1


def test_views_and_repeated_tensors_share_memory_after_load():
    base = ft.arange(12.0).reshape(3, 4)
    view = base[1:, 1:3]
    w = ft.ones(2, requires_grad=True)
    buf = io.BytesIO()
    ft.save({"base": base, "view": view, "t": base.t(), "w": w, "again": [w]}, buf)
    buf.seek(0)
    d = ft.load(buf)
    assert d["view"].tolist() == [[5.0, 6.0], [9.0, 10.0]] and d["t"].stride() == (1, 4)
    assert d["view"].storage_offset() == 5
    d["view"].fill_(-1.0)  # PyTorch's serialization keeps view relationships
    assert d["base"].tolist() == [[0.0, 1.0, 2.0, 3.0], [4.0, -1.0, -1.0, 7.0],
                                  [8.0, -1.0, -1.0, 11.0]]
    assert d["t"][1].tolist() == [1.0, -1.0, -1.0]
    assert d["again"][0] is d["w"] and d["w"].requires_grad and d["w"].is_leaf
    # a state_dict with tied weights stores the memory once and loads it shared
    tied = {"a.weight": w.detach(), "b.weight": w.detach()}
    buf = io.BytesIO()
    ft.save(tied, buf)
    from safetensors.numpy import load as safetensors_load

    arrays = safetensors_load(buf.getvalue())
    assert [a.shape for a in arrays.values()] == [(2,)]
    buf.seek(0)
    d = ft.load(buf)
    d["a.weight"].zero_()
    assert d["b.weight"].tolist() == [0.0, 0.0]


def test_malformed_shared_storage_views_are_refused():
    buf = io.BytesIO()
    base = ft.arange(4.0)
    ft.save([base, base[1:]], buf)
    raw = buf.getvalue()
    bad = raw.replace(b'\\"offset\\": 1', b'\\"offset\\": 9')
    assert bad != raw
    with pytest.raises(RuntimeError, match="malformed view of storage"):
        ft.load(io.BytesIO(bad))


def test_parameters_load_as_parameters():
    p = ft.nn.Parameter(ft.ones(3))
    frozen = ft.nn.Parameter(ft.zeros(2), requires_grad=False)
    d = roundtrip({"p": p, "head": p[:1], "frozen": frozen})
    assert type(d["p"]) is ft.nn.Parameter and d["p"].requires_grad and d["p"].is_leaf
    assert type(d["frozen"]) is ft.nn.Parameter and not d["frozen"].requires_grad
    assert type(d["head"]) is ft.Tensor  # a view of a parameter is a plain tensor
    with ft.no_grad():
        d["p"][0] = 5.0
    assert d["head"].tolist() == [5.0]  # and still shares its memory


def test_state_dict_metadata_survives_save_and_load():
    # torch.save keeps an OrderedDict's _metadata (the per-module versions that
    # load_state_dict hands to _load_from_state_dict); so does ferrotorch.save
    sd = ft.nn.Sequential(ft.nn.Linear(2, 3), ft.nn.BatchNorm1d(3)).state_dict()
    buf = io.BytesIO()
    ft.save(sd, buf)
    buf.seek(0)
    back = ft.load(buf)
    assert dict(back._metadata) == {"": {"version": 1}, "0": {"version": 1},
                                    "1": {"version": 2}}
    assert list(back) == list(sd)
