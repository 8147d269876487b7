"""``DataLoader``: batches from a dataset, in the main process or in worker processes
(``torch.utils.data.dataloader``).

With ``num_workers > 0`` each worker process receives lists of indices, builds and collates
the batch, and sends it back pickled (tensors travel as NumPy arrays); the main process
reorders results so batches come out in sampler order, exactly as with ``num_workers=0``.
"""

import itertools
import multiprocessing
import os
import pickle
import queue
import warnings

from ferrotorch import _C
from ferrotorch.utils.data import _utils
from ferrotorch.utils.data._utils.collate import default_collate, default_convert
from ferrotorch.utils.data._utils.worker import (
    _ExceptionWrapper,
    _IterableDatasetStopIteration,
    _ResumeIteration,
    _worker_loop,
)
from ferrotorch.utils.data.dataset import IterableDataset
from ferrotorch.utils.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    _new_seed,
)

__all__ = ["DataLoader", "default_collate", "default_convert"]


def _default_context():
    """Workers start from a fork server that has imported ferrotorch (fast start, and no
    fork of a process whose kernel thread pool may be running); ``spawn`` where fork servers
    are unavailable."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["ferrotorch"])
        return ctx
    return multiprocessing.get_context("spawn")


def _accelerator_available():
    """Whether an accelerator (CUDA) is usable, for the ``pin_memory`` warning."""
    try:
        import ferrotorch

        return bool(ferrotorch.cuda.is_available())
    except Exception:  # noqa: BLE001 (no CUDA support built)
        return False


class _InfiniteConstantSampler(Sampler):
    """Yields ``None`` forever: the sampler used for iterable-style datasets."""

    def __iter__(self):
        while True:
            yield None


class DataLoader:
    r"""Iterate over ``dataset`` in batches.

    Arguments follow PyTorch: ``batch_size`` (``None`` disables automatic batching),
    ``shuffle`` (a :class:`RandomSampler`, reproducible with ``generator``), ``sampler`` /
    ``batch_sampler``, ``num_workers`` (worker processes), ``collate_fn`` (default:
    :func:`default_collate`), ``drop_last``, ``timeout``, ``worker_init_fn``,
    ``multiprocessing_context`` (default: a ``"forkserver"`` that preloads ferrotorch, since
    forking a process whose kernel thread pool is running is unsafe), ``generator``,
    ``prefetch_factor``, ``persistent_workers``.
    ``pin_memory`` is accepted and has no effect.

    >>> import ferrotorch as torch
    >>> ds = torch.utils.data.TensorDataset(torch.arange(5))
    >>> [b[0].tolist() for b in torch.utils.data.DataLoader(ds, batch_size=2)]
    [[0, 1], [2, 3], [4]]
    """

    _DataLoader__initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                             "disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in "
                             "multiprocessing.let num_workers > 0 to enable multiprocessing, "
                             "otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = "iterable"
            if shuffle not in {False, None}:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"shuffle option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"sampler option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = "map"

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")

        if sampler is None:
            if self._dataset_kind == "iterable":
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self.__initialized = True
        self._IterableDataset_len_called = None
        self._iterator = None
        self.check_worker_number_rationality()

    @property
    def multiprocessing_context(self):
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, multiprocessing_context):
        if multiprocessing_context is not None:
            if self.num_workers > 0:
                if isinstance(multiprocessing_context, str):
                    valid_start_methods = multiprocessing.get_all_start_methods()
                    if multiprocessing_context not in valid_start_methods:
                        raise ValueError(
                            "multiprocessing_context option should specify a valid start "
                            f"method in {valid_start_methods!r}, but got "
                            f"multiprocessing_context={multiprocessing_context!r}")
                    multiprocessing_context = multiprocessing.get_context(
                        multiprocessing_context)
                if not isinstance(multiprocessing_context, multiprocessing.context.BaseContext):
                    raise TypeError(
                        "multiprocessing_context option should be a valid context object or a "
                        "string specifying the start method, but got "
                        f"multiprocessing_context={multiprocessing_context}")
            else:
                raise ValueError(
                    "multiprocessing_context can only be used with multi-process loading "
                    f"(num_workers > 0), but got num_workers={self.num_workers}")
        self.__multiprocessing_context = multiprocessing_context

    def __setattr__(self, attr, val):
        if self.__initialized and attr in ("batch_size", "batch_sampler", "sampler",
                                           "drop_last", "dataset", "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after "
                             f"{self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    def check_worker_number_rationality(self):
        """Warn (as PyTorch does) when more workers are requested than CPUs are usable."""
        if not self.num_workers:
            return
        cpuset_checked = hasattr(os, "sched_getaffinity")
        max_num_worker_suggest = len(os.sched_getaffinity(0)) if cpuset_checked \
            else os.cpu_count()
        if max_num_worker_suggest is None or self.num_workers > max_num_worker_suggest:
            if max_num_worker_suggest is None:
                suggested = ("DataLoader is not able to compute a suggested max number of "
                             "worker in current system.")
            else:
                suggested = (f"Our suggested max number of worker in current system is "
                             f"{max_num_worker_suggest}"
                             f"{'' if cpuset_checked else ' (`cpuset` is not taken into account)'}"
                             ", which is smaller than what this DataLoader is going to create.")
            warnings.warn(
                f"This DataLoader will create {self.num_workers} worker processes in total. "
                f"{suggested} Please be aware that excessive worker creation might get "
                "DataLoader running slow or even freeze, lower the worker number to avoid "
                "potential slowness/freeze if necessary.", stacklevel=2)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        return _MultiProcessingDataLoaderIter(self)

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def __len__(self):
        if self._dataset_kind == "iterable":
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                from math import ceil

                length = length // self.batch_size if self.drop_last \
                    else ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)


class _BaseDataLoaderIter:
    def __init__(self, loader):
        self._dataset = loader.dataset
        self._dataset_kind = loader._dataset_kind
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        if loader.pin_memory and not _accelerator_available():
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, "
                          "then device pinned memory won't be used.", stacklevel=2)
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = _new_seed() if loader.generator is None else int(
            _C.randint(0, 2 ** 62, (1,), generator=loader.generator).item())
        self._num_yielded = 0

    def __iter__(self):
        return self

    def _reset(self, loader, first_iter=False):
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0

    def _next_index(self):
        return next(self._sampler_iter)

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        if self._dataset_kind == "iterable" and self._IterableDataset_len_called is not None \
                and self._num_yielded > self._IterableDataset_len_called:
            warn_msg = (f"Length of IterableDataset {self._dataset} was reported to be "
                        f"{self._IterableDataset_len_called}(when accessing len(dataloader)), "
                        f"but {self._num_yielded} samples have been fetched. ")
            if self._num_workers > 0:
                warn_msg += (
                    "For multiprocessing data-loading, this could be caused by not properly "
                    "configuring the IterableDataset replica at each worker. Please see "
                    "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset"
                    " for examples.")
            warnings.warn(warn_msg, stacklevel=2)
        return data

    def __len__(self):
        return len(self._index_sampler)


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._dataset_fetcher = _utils.worker._create_fetcher(
            self._dataset_kind, self._dataset, self._auto_collation, self._collate_fn,
            self._drop_last)

    def _next_data(self):
        index = self._next_index()
        return self._dataset_fetcher.fetch(index)


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Worker processes fed through one index queue each; results come back on one shared
    queue tagged with their send index and are yielded in order."""

    def __init__(self, loader):
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        self._persistent_workers = loader.persistent_workers
        ctx = loader.multiprocessing_context
        if ctx is None:
            ctx = _default_context()
        if isinstance(ctx, str):
            ctx = multiprocessing.get_context(ctx)
        self._start_method = ctx.get_start_method()
        self._worker_init_fn = loader.worker_init_fn
        self._worker_result_queue = ctx.Queue()
        self._workers_done_event = ctx.Event()
        self._index_queues = []
        self._workers = []
        for i in range(self._num_workers):
            index_queue = ctx.Queue()
            index_queue.cancel_join_thread()
            w = ctx.Process(
                target=_worker_loop,
                args=(self._dataset_kind, self._dataset, index_queue,
                      self._worker_result_queue, self._workers_done_event,
                      self._auto_collation, self._collate_fn, self._drop_last,
                      self._base_seed, self._worker_init_fn, i, self._num_workers),
            )
            w.daemon = True
            try:
                w.start()
            except (pickle.PicklingError, AttributeError, TypeError) as e:
                self._index_queues.append(index_queue)
                self._shutdown = False
                self._shutdown_workers()
                raise RuntimeError(
                    "DataLoader workers are started with the "
                    f"'{ctx.get_start_method()}' method, which pickles the dataset, "
                    "collate_fn and worker_init_fn; one of them could not be pickled "
                    f"({e}). Define them at module level, or pass "
                    "multiprocessing_context='fork' (only safe if no parallel kernel has "
                    "run in this process)."
                ) from e
            self._index_queues.append(index_queue)
            self._workers.append(w)
        self._shutdown = False
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter=False):
        super()._reset(loader, first_iter)
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info = {}
        self._tasks_outstanding = 0
        self._workers_status = [True for _ in range(self._num_workers)]
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            for idx in range(self._num_workers):
                self._index_queues[idx].put(_ResumeIteration())
            resume_iteration_cnt = self._num_workers
            while resume_iteration_cnt > 0:
                return_idx, _ = self._get_data()
                if isinstance(return_idx, _ResumeIteration):
                    resume_iteration_cnt -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_get_data(self, timeout):
        try:
            return True, self._worker_result_queue.get(timeout=timeout)
        except queue.Empty:
            failed = [w for w in self._workers if not w.is_alive()]
            if failed:
                pids = ", ".join(str(w.pid) for w in failed)
                msg = f"DataLoader worker (pid(s) {pids}) exited unexpectedly"
                method = self._start_method
                if method != "fork":
                    msg += (
                        f" (exit code(s) {', '.join(str(w.exitcode) for w in failed)}). "
                        f"Workers are started with the '{method}' method, which re-imports "
                        "the main script in each worker: a script that iterates a DataLoader "
                        "with num_workers > 0 at module level must put that code under "
                        "`if __name__ == '__main__':`. The worker's own traceback, if any, "
                        "is printed above."
                    )
                raise RuntimeError(msg) from None
            return False, None

    def _get_data(self):
        if self._timeout > 0:
            success, data = self._try_get_data(self._timeout)
            if success:
                return data
            raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
        while True:
            success, data = self._try_get_data(5.0)
            if success:
                return data

    def _next_data(self):
        while True:
            # Skip tasks of workers that have finished (iterable datasets).
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is None:
                    self._rcvd_idx += 1
                    continue
                worker_id = info[0]
                if len(info) == 2 or self._workers_status[worker_id]:
                    break
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration

            if len(self._task_info[self._rcvd_idx]) == 2:
                data = self._task_info.pop(self._rcvd_idx)[1]
                self._rcvd_idx += 1
                return self._process_data(data)

            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if isinstance(idx, _ResumeIteration):
                continue
            if self._dataset_kind == "iterable" and \
                    isinstance(data, _IterableDatasetStopIteration):
                if self._persistent_workers:
                    self._workers_status[data.worker_id] = False
                else:
                    self._mark_worker_as_unavailable(data.worker_id)
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                self._task_info[idx] += (data,)
            else:
                del self._task_info[idx]
                self._rcvd_idx += 1
                return self._process_data(data)

    def _try_put_index(self):
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):
            worker_queue_idx = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker_queue_idx]:
                break
        else:
            return
        self._index_queues[worker_queue_idx].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_queue_idx,)
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _process_data(self, data):
        self._try_put_index()
        if isinstance(data, _ExceptionWrapper):
            data.reraise()
        return data

    def _mark_worker_as_unavailable(self, worker_id):
        q = self._index_queues[worker_id]
        q.put(None)
        self._workers_status[worker_id] = False

    def _shutdown_workers(self):
        if self._shutdown:
            return
        self._shutdown = True
        try:
            self._workers_done_event.set()
            for worker_id in range(len(self._workers)):
                try:
                    self._index_queues[worker_id].put(None)
                except (ValueError, OSError):
                    pass
            for w in self._workers:
                w.join(timeout=10)
            for q in self._index_queues:
                q.cancel_join_thread()
                q.close()
            self._worker_result_queue.cancel_join_thread()
            self._worker_result_queue.close()
        finally:
            for w in self._workers:
                if w.is_alive():
                    w.terminate()

    def __del__(self):
        try:
            self._shutdown_workers()
        except Exception:  # noqa: BLE001 (interpreter shutdown)
            pass


