"""utils.data: datasets, samplers, collation, DataLoader (single and multi-process)."""

from collections import namedtuple

import numpy as np
import pytest

import ferrotorch as ft
from ferrotorch.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    get_worker_info,
    random_split,
)

needs_random = pytest.mark.skipif(not hasattr(ft, "randperm") or not hasattr(ft, "Generator"),
                                  reason="needs randperm/Generator (creation branch)")
needs_multinomial = pytest.mark.skipif(not hasattr(ft, "multinomial"),
                                       reason="needs multinomial (creation branch)")


def arange_ds(n=10):
    x = ft.from_numpy(np.arange(n * 2, dtype=np.float32).reshape(n, 2))
    y = ft.from_numpy(np.arange(n, dtype=np.int64))
    return TensorDataset(x, y)


class DictDataset(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"x": np.full(3, i, dtype=np.float32), "y": i, "w": float(i) / 2,
                "name": f"s{i}", "pair": (i, ft.tensor([i, -i]))}


class Counting(IterableDataset):
    """Yields 0..n-1, split between workers by get_worker_info()."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))


def batches_as_lists(loader):
    return [[b.tolist() if isinstance(b, ft.Tensor) else b for b in batch] for batch in loader]


# ---------------------------------------------------------------------------- datasets
def test_tensor_dataset_concat_subset():
    ds = arange_ds(5)
    assert len(ds) == 5
    x, y = ds[3]
    assert x.tolist() == [6.0, 7.0] and y.item() == 3
    with pytest.raises(AssertionError):
        TensorDataset(ft.tensor([1, 2]), ft.tensor([1]))
    cat = ConcatDataset([ds, arange_ds(3)])
    assert len(cat) == 8 and cat[5][1].item() == 0 and cat[-1][1].item() == 2
    assert len(ds + ds) == 10
    sub = Subset(ds, [4, 0])
    assert len(sub) == 2 and sub[0][1].item() == 4


@needs_random
def test_random_split_lengths_fractions_and_generator():
    ds = arange_ds(10)
    a, b = random_split(ds, [3, 7], generator=ft.Generator().manual_seed(42))
    assert len(a) == 3 and len(b) == 7
    assert sorted(a.indices + b.indices) == list(range(10))
    a2, _ = random_split(ds, [3, 7], generator=ft.Generator().manual_seed(42))
    assert a.indices == a2.indices
    parts = random_split(range(10), [0.5, 0.3, 0.2], generator=ft.Generator().manual_seed(1))
    assert [len(p) for p in parts] == [5, 3, 2]
    parts = random_split(range(11), [0.5, 0.5])
    assert [len(p) for p in parts] == [6, 5]
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(ds, [3, 3])


# ---------------------------------------------------------------------------- samplers
def test_sequential_and_batch_sampler():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    bs = BatchSampler(SequentialSampler(range(7)), batch_size=3, drop_last=False)
    assert list(bs) == [[0, 1, 2], [3, 4, 5], [6]] and len(bs) == 3
    bs = BatchSampler(SequentialSampler(range(7)), batch_size=3, drop_last=True)
    assert list(bs) == [[0, 1, 2], [3, 4, 5]] and len(bs) == 2
    with pytest.raises(ValueError):
        BatchSampler(range(3), batch_size=0, drop_last=False)


@needs_random
def test_random_samplers():
    g = ft.Generator().manual_seed(0)
    perm = list(RandomSampler(range(20), generator=g))
    assert sorted(perm) == list(range(20)) and perm != list(range(20))
    g1, g2 = ft.Generator().manual_seed(5), ft.Generator().manual_seed(5)
    assert list(RandomSampler(range(20), generator=g1)) == \
        list(RandomSampler(range(20), generator=g2))
    rs = RandomSampler(range(5), replacement=True, num_samples=50,
                       generator=ft.Generator().manual_seed(3))
    draws = list(rs)
    assert len(draws) == 50 == len(rs) and set(draws) <= set(range(5))
    more = list(RandomSampler(range(4), num_samples=10, generator=g))
    assert len(more) == 10 and sorted(more[:4]) == [0, 1, 2, 3]
    sub = list(SubsetRandomSampler([10, 20, 30], generator=g))
    assert sorted(sub) == [10, 20, 30]
    with pytest.raises(ValueError):
        RandomSampler(range(3), num_samples=0)


@needs_multinomial
def test_weighted_random_sampler():
    g = ft.Generator().manual_seed(0)
    s = WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], num_samples=400, generator=g)
    draws = np.array(list(s))
    assert set(draws.tolist()) <= {1, 3}
    assert 0.65 < (draws == 3).mean() < 0.85
    s = WeightedRandomSampler([1.0, 1.0, 1.0], num_samples=3, replacement=False, generator=g)
    assert sorted(s) == [0, 1, 2]


# ---------------------------------------------------------------------------- collation
def test_default_collate_structures():
    b = default_collate([DictDataset(5)[i] for i in range(3)])
    assert b["x"].dtype == ft.float32 and b["x"].tolist() == [[0.0] * 3, [1.0] * 3, [2.0] * 3]
    assert b["y"].dtype == ft.int64 and b["y"].tolist() == [0, 1, 2]
    assert b["w"].dtype == ft.float64 and b["w"].tolist() == [0.0, 0.5, 1.0]
    assert b["name"] == ["s0", "s1", "s2"]
    assert b["pair"][0].tolist() == [0, 1, 2]
    assert b["pair"][1].tolist() == [[0, 0], [1, -1], [2, -2]]
    pt = namedtuple("Point", ["a", "b"])
    nb = default_collate([pt(1, 2.0), pt(3, 4.0)])
    assert type(nb) is pt and nb.a.tolist() == [1, 3]
    assert default_collate([np.float64(1.5), np.float64(2.5)]).tolist() == [1.5, 2.5]
    assert default_collate([True, False]).dtype == ft.bool
    lb = default_collate([[1, 2], [3, 4]])
    assert isinstance(lb, list) and lb[0].tolist() == [1, 3]
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(RuntimeError, match="stack expects"):
        default_collate([ft.tensor([1.0]), ft.tensor([1.0, 2.0])])
    with pytest.raises(RuntimeError, match=r"but got \[2\] at entry 0 and \[3\] at entry 2$"):
        default_collate([ft.zeros(2), ft.zeros(2), ft.zeros(3)])  # names the entry, as torch
    with pytest.raises(TypeError):
        default_collate([object(), object()])


# ---------------------------------------------------------------------------- DataLoader
def test_dataloader_batching_drop_last_len():
    ds = arange_ds(10)
    dl = DataLoader(ds, batch_size=4)
    batches = list(dl)
    assert len(dl) == 3 and len(batches) == 3
    assert batches[0][0].shape == (4, 2) and batches[2][1].tolist() == [8, 9]
    dl = DataLoader(ds, batch_size=4, drop_last=True)
    assert len(dl) == 2 and [b[1].tolist() for b in dl] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    single = list(DataLoader(ds, batch_size=None))
    assert len(single) == 10 and single[3][1].item() == 3
    dl = DataLoader(DictDataset(5), batch_size=2, collate_fn=lambda b: [s["y"] for s in b])
    assert list(dl) == [[0, 1], [2, 3], [4]]
    dl = DataLoader(ds, batch_sampler=[[9, 0], [5]])
    assert [b[1].tolist() for b in dl] == [[9, 0], [5]]
    with pytest.raises(ValueError, match="mutually exclusive"):
        DataLoader(ds, batch_sampler=[[0]], batch_size=3)
    with pytest.raises(ValueError, match="mutually exclusive"):
        DataLoader(ds, sampler=SequentialSampler(ds), shuffle=True)


@needs_random
def test_dataloader_shuffle_reproducible_with_generator():
    ds = arange_ds(16)

    def order(seed):
        dl = DataLoader(ds, batch_size=5, shuffle=True,
                        generator=ft.Generator().manual_seed(seed))
        return [i for _, y in dl for i in y.tolist()]

    a, b, c = order(7), order(7), order(8)
    assert a == b and a != c and sorted(a) == list(range(16))
    g = ft.Generator().manual_seed(7)
    dl = DataLoader(ds, batch_size=16, shuffle=True, generator=g)
    e1 = next(iter(dl))[1].tolist()
    e2 = next(iter(dl))[1].tolist()
    assert e1 != e2  # the generator advances between epochs


def test_dataloader_iterable_dataset():
    dl = DataLoader(Counting(7), batch_size=3)
    assert [b.tolist() for b in dl] == [[0, 1, 2], [3, 4, 5], [6]]
    dl = DataLoader(Counting(7), batch_size=3, drop_last=True)
    assert [b.tolist() for b in dl] == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(ValueError, match="shuffle"):
        DataLoader(Counting(3), shuffle=True)


class SquareDataset(Dataset):
    def __len__(self):
        return 13

    def __getitem__(self, i):
        info = get_worker_info()
        return {"x": np.array([i, i * i], dtype=np.float64),
                "t": ft.tensor([float(i)]),
                "worker": -1 if info is None else info.id}


def _init_fn(worker_id):
    import random

    random.seed(worker_id)


def test_dataloader_workers_match_single_process():
    ds = SquareDataset()
    ref = list(DataLoader(ds, batch_size=3))
    got = list(DataLoader(ds, batch_size=3, num_workers=2, worker_init_fn=_init_fn))
    assert len(got) == len(ref) == 5
    for r, g in zip(ref, got):
        np.testing.assert_array_equal(g["x"].numpy(), r["x"].numpy())
        np.testing.assert_array_equal(g["t"].numpy(), r["t"].numpy())
        assert g["x"].dtype == ft.float64
    # batches alternate between the two workers, in order
    assert [b["worker"].tolist()[0] for b in got] == [0, 1, 0, 1, 0]
    assert all(w == -1 for b in ref for w in b["worker"].tolist())


def test_dataloader_workers_iterable_and_persistent():
    got = list(DataLoader(Counting(10), batch_size=2, num_workers=2))
    values = sorted(v for b in got for v in b.tolist())
    assert values == list(range(10))
    dl = DataLoader(arange_ds(6), batch_size=2, num_workers=2, persistent_workers=True)
    first = [b[1].tolist() for b in dl]
    second = [b[1].tolist() for b in dl]
    assert first == second == [[0, 1], [2, 3], [4, 5]]


class Failing(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 2:
            raise KeyError("boom")
        return i


def test_dataloader_worker_exception_is_reraised():
    with pytest.raises(KeyError, match="boom"):
        list(DataLoader(Failing(), batch_size=1, num_workers=1))
    with pytest.raises(KeyError, match="boom"):
        list(DataLoader(Failing(), batch_size=1))
    with pytest.raises(ValueError):
        DataLoader(Failing(), num_workers=-1)
    with pytest.raises(ValueError):
        DataLoader(Failing(), persistent_workers=True)


def test_dataloader_unpicklable_collate_fn_message():
    dl = DataLoader(arange_ds(4), batch_size=2, num_workers=1, collate_fn=lambda b: b)
    with pytest.raises(RuntimeError, match="could not be pickled"):
        iter(dl)
