"""The worker-process loop and ``get_worker_info`` (``torch.utils.data._utils.worker``)."""

import queue
import random
from dataclasses import dataclass

_worker_info = None


@dataclass(frozen=True)
class WorkerInfo:
    """What :func:`get_worker_info` returns inside a worker process."""

    id: int
    num_workers: int
    seed: int
    dataset: object
    rng: object = None
    worker_method: str = "multiprocessing"


def get_worker_info():
    r"""Inside a DataLoader worker: its :class:`WorkerInfo` (``id``, ``num_workers``, ``seed``,
    ``dataset``, the worker's own copy). In the main process: ``None``."""
    return _worker_info


class _IterableDatasetStopIteration:
    """Sent by a worker whose iterable dataset is exhausted."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


class _ResumeIteration:
    """Sent to persistent workers at the start of a new epoch."""


class _ExceptionWrapper:
    """Carries an exception raised in a worker back to the main process."""

    def __init__(self, exc_info, where):
        import traceback

        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        try:
            exception = self.exc_type(msg)
        except Exception:  # noqa: BLE001 (exception types with unusual constructors)
            raise RuntimeError(msg) from None
        raise exception


class _MapFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn

    def fetch(self, possibly_batched_index):
        if self.auto_collation:
            if hasattr(self.dataset, "__getitems__") and self.dataset.__getitems__:
                data = self.dataset.__getitems__(possibly_batched_index)
            else:
                data = [self.dataset[idx] for idx in possibly_batched_index]
        else:
            data = self.dataset[possibly_batched_index]
        return self.collate_fn(data)


class _IterableFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset = dataset
        self.dataset_iter = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, possibly_batched_index):
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            for _ in possibly_batched_index:
                try:
                    data.append(next(self.dataset_iter))
                except StopIteration:
                    self.ended = True
                    break
            if len(data) == 0 or (self.drop_last and len(data) < len(possibly_batched_index)):
                raise StopIteration
        else:
            data = next(self.dataset_iter)
        return self.collate_fn(data)


def _create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
    cls = _IterableFetcher if kind == "iterable" else _MapFetcher
    return cls(dataset, auto_collation, collate_fn, drop_last)


def _seed_numpy(base_seed, worker_id):
    """Seed NumPy's global RNG per worker (as PyTorch does), so workers forked from one
    process do not draw identical NumPy random numbers."""
    try:
        import numpy as np
    except ImportError:
        return
    entropy = [worker_id, base_seed & 0xFFFFFFFF, base_seed >> 32, 0]
    np.random.seed(np.random.SeedSequence(entropy).generate_state(4))


def _worker_loop(kind, dataset, index_queue, data_queue, done_event, auto_collation,
                 collate_fn, drop_last, base_seed, init_fn, worker_id, num_workers):
    """Runs in a worker process: fetch the batches whose indices arrive on ``index_queue``
    and put ``(send_idx, batch)`` on ``data_queue``. ``None`` on ``index_queue`` stops it."""
    global _worker_info
    import ferrotorch

    try:
        seed = base_seed + worker_id
        random.seed(seed)
        if hasattr(ferrotorch, "manual_seed"):
            ferrotorch.manual_seed(seed)
        _seed_numpy(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                  dataset=dataset)
        init_exception = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = _create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last)
        except Exception:  # noqa: BLE001 (sent to the main process)
            import sys

            init_exception = _ExceptionWrapper(sys.exc_info(),
                                               f"in DataLoader worker process {worker_id}")
        iteration_end = False
        while True:
            try:
                r = index_queue.get(timeout=5.0)
            except queue.Empty:
                if done_event.is_set():
                    break
                continue
            if isinstance(r, _ResumeIteration):
                data_queue.put((r, None))
                iteration_end = False
                fetcher = _create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last)
                continue
            if r is None:
                break
            if done_event.is_set() or iteration_end:
                continue
            idx, index = r
            if init_exception is not None:
                data = init_exception
                init_exception = None
            else:
                try:
                    data = fetcher.fetch(index)
                except Exception as e:  # noqa: BLE001
                    import sys

                    if isinstance(e, StopIteration) and kind == "iterable":
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                    else:
                        data = _ExceptionWrapper(sys.exc_info(),
                                                 f"in DataLoader worker process {worker_id}")
            data_queue.put((idx, data))
    except KeyboardInterrupt:
        pass
    if done_event.is_set():
        data_queue.cancel_join_thread()
        data_queue.close()
