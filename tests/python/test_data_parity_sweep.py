"""utils.data parity sweep against torch.utils.data: generic subscripting, StackDataset /
ChainDataset checks, collate keeping container types and autograd, DataLoader argument
validation and warnings, worker NumPy seeding. Expectations are hard-coded (no torch
needed); a few tests also compare with torch when it is installed."""

import collections
import multiprocessing
import warnings

import numpy as np
import pytest

import ferrotorch as ft
from ferrotorch.utils.data import (
    ChainDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    Sampler,
    StackDataset,
    default_collate,
    default_convert,
    get_worker_info,
)


class Upto(IterableDataset):
    def __init__(self, n, reported=None):
        self.n = n
        self.reported = n if reported is None else reported

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.reported


class Batched(Dataset):
    """Has ``__getitems__`` (batched fetch), like some PyTorch datasets."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return i

    def __getitems__(self, indices):
        return [10 * i for i in indices]


def test_generic_subscripting_and_abstract_iterable():
    assert Dataset[int] is not None and IterableDataset[int] is not None
    assert Sampler[int] is not None

    class Typed(Dataset[tuple]):
        def __getitem__(self, i):
            return (i,)

    assert Typed()[3] == (3,)
    with pytest.raises(TypeError):  # __iter__ is abstract, as in torch
        IterableDataset()


def test_stack_dataset_errors_and_getitems():
    with pytest.raises(ValueError, match="At least one dataset should be passed"):
        StackDataset()
    ds = StackDataset([1, 2, 3], "abc")
    assert ds.__getitems__([0, 2]) == [(1, "a"), (3, "c")]
    kw = StackDataset(a=[1, 2, 3, 4], b=Batched())
    assert kw.__getitems__([0, 2]) == [{"a": 1, "b": 0}, {"a": 3, "b": 20}]
    batches = list(DataLoader(StackDataset(Batched(), [5, 6, 7, 8]), batch_size=3))
    assert [[t.tolist() for t in b] for b in batches] == [[[0, 10, 20], [5, 6, 7]], [[30], [8]]]


def test_chain_dataset_rejects_map_style():
    ch = ChainDataset([Upto(2), [7, 8]])
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        list(ch)
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        len(ch)
    assert list(ChainDataset([Upto(2), Upto(3)])) == [0, 1, 0, 1, 2]
    assert len(Upto(2) + Upto(3)) == 5


def test_collate_keeps_autograd_in_main_process():
    a = ft.ones(2, requires_grad=True)
    out = default_collate([a, ft.zeros(2)])
    assert out.requires_grad and out.tolist() == [[1.0, 1.0], [0.0, 0.0]]
    out.sum().backward()
    assert a.grad.tolist() == [1.0, 1.0]


def test_collate_and_convert_keep_mapping_and_sequence_types():
    d = collections.defaultdict(list)
    d["x"] = 1
    out = default_collate([d, d])
    assert type(out) is collections.defaultdict and out.default_factory is list
    assert out["x"].tolist() == [1, 1]
    od = default_collate([collections.OrderedDict(b=1.5, a=2)] * 2)
    assert type(od) is collections.OrderedDict and list(od) == ["b", "a"]
    assert od["b"].dtype == ft.float64

    class Tagged(list):
        tag = None

    t = Tagged([np.array([1]), 2])
    t.tag = "keep"
    conv = default_convert(t)
    assert type(conv) is Tagged and conv.tag == "keep"
    assert conv[0].tolist() == [1] and conv[1] == 2
    cd = default_convert(d)
    assert type(cd) is collections.defaultdict and cd.default_factory is list
    # tuples still become lists (PyTorch's backward-compatible behaviour)
    assert default_collate([(1, "a"), (2, "b")])[1] == ("a", "b")  # zip output, as torch
    assert isinstance(default_collate([(1, "a"), (2, "b")]), list)


def test_dataloader_attributes_frozen_after_init():
    dl = DataLoader(range(4), batch_size=2)
    for attr in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                 "persistent_workers"):
        with pytest.raises(ValueError, match=f"{attr} attribute should not be set after "
                                             "DataLoader is initialized"):
            setattr(dl, attr, None)
    dl.collate_fn = lambda b: b  # other attributes stay writable
    assert list(dl) == [[0, 1], [2, 3]]


def test_dataloader_multiprocessing_context_validation():
    with pytest.raises(ValueError, match="can only be used with multi-process loading "
                                         r"\(num_workers > 0\), but got num_workers=0"):
        DataLoader(range(3), multiprocessing_context="spawn")
    with pytest.raises(ValueError, match="should specify a valid start method in"):
        DataLoader(range(3), num_workers=1, multiprocessing_context="bogus")
    with pytest.raises(TypeError, match="valid context object or a string"):
        DataLoader(range(3), num_workers=1, multiprocessing_context=3)
    dl = DataLoader(range(3), num_workers=1, multiprocessing_context="spawn")
    assert isinstance(dl.multiprocessing_context, multiprocessing.context.BaseContext)
    assert dl.multiprocessing_context.get_start_method() == "spawn"
    assert DataLoader(range(3), num_workers=1).multiprocessing_context is None


def test_iterable_len_warning_only_after_len_called():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert [b.tolist() for b in DataLoader(Upto(3, reported=2))] == [[0], [1], [2]]
    assert not [x for x in w if "Length of IterableDataset" in str(x.message)]
    dl = DataLoader(Upto(3, reported=2))
    assert len(dl) == 2
    with pytest.warns(UserWarning, match=r"was reported to be 2\(when accessing "
                                         r"len\(dataloader\)\), but 3 samples have been"):
        assert len(list(dl)) == 3


def test_dataloader_worker_number_and_pin_memory_warnings():
    import os

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    with pytest.warns(UserWarning, match=f"This DataLoader will create {cpus + 1} worker "
                                         "processes in total"):
        DataLoader(range(3), num_workers=cpus + 1)
    if not ft.cuda.is_available():
        with pytest.warns(UserWarning, match="'pin_memory' argument is set as true but no "
                                             "accelerator is found"):
            assert [b.tolist() for b in DataLoader(range(3), batch_size=2, pin_memory=True)] \
                == [[0, 1], [2]]


class NumpyDraw(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = get_worker_info()
        return {"id": info.id, "np": float(np.random.rand()), "method": info.worker_method,
                "rng": info.rng}


def test_workers_seed_numpy_per_worker_and_deterministically():
    def draws():
        g = ft.Generator()
        g.manual_seed(5)
        return list(DataLoader(NumpyDraw(), batch_size=None, num_workers=2, generator=g))

    a, b = draws(), draws()
    assert [x["id"] for x in a] == [0, 1, 0, 1]
    assert [x["method"] for x in a] == ["multiprocessing"] * 4
    assert all(x["rng"] is None for x in a)
    assert a[0]["np"] != a[1]["np"]  # the two workers' NumPy streams differ
    assert [x["np"] for x in a] == [x["np"] for x in b]  # and follow the generator


def test_matches_torch_error_messages():
    torch = pytest.importorskip("torch")
    TD = torch.utils.data

    def msg(mod, fn):
        try:
            fn(mod)
        except Exception as e:  # noqa: BLE001
            return type(e).__name__, str(e)
        return None

    cases = [
        lambda m: m.StackDataset(),
        lambda m: m.DataLoader(range(3), multiprocessing_context="fork"),
        lambda m: m.DataLoader(range(3), num_workers=1, multiprocessing_context="bogus"),
        lambda m: setattr(m.DataLoader(range(3)), "sampler", None),
        lambda m: list(m.ChainDataset([[1]])),
        lambda m: m.DataLoader(range(3), batch_size=None, drop_last=True),
        lambda m: m.DataLoader(range(3), prefetch_factor=2),
    ]
    for case in cases:
        assert msg(ft.utils.data, case) == msg(TD, case)
    d = collections.defaultdict(int, x=1.5)
    ours, theirs = default_collate([d, d]), TD.default_collate([d, d])
    assert type(ours) is type(theirs) and ours.default_factory is theirs.default_factory
    assert ours["x"].tolist() == theirs["x"].tolist()
