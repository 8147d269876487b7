"""ferrotorch.multiprocessing: Python's ``multiprocessing``, re-exported (PyTorch's
``torch.multiprocessing`` is a drop-in replacement for it), plus the sharing-strategy queries
and ``spawn``. Tensors cross process boundaries by pickling (copied, not shared)."""

import multiprocessing
import sys
from multiprocessing import *  # noqa: F403 (the re-exported API)

__all__ = list(multiprocessing.__all__) + [
    "get_sharing_strategy", "set_sharing_strategy", "get_all_sharing_strategies", "spawn",
    "start_processes", "ProcessContext", "ProcessRaisedException", "ProcessExitedException",
]

_all_sharing_strategies = ({"file_descriptor", "file_system"} if sys.platform != "darwin"
                           else {"file_system"})
_sharing_strategy = "file_descriptor" if sys.platform != "darwin" else "file_system"


def set_sharing_strategy(new_strategy):
    """Set the strategy for sharing CPU tensors (one of ``get_all_sharing_strategies()``)."""
    global _sharing_strategy
    assert new_strategy in _all_sharing_strategies
    _sharing_strategy = new_strategy


def get_sharing_strategy():
    """The current strategy for sharing CPU tensors."""
    return _sharing_strategy


def get_all_sharing_strategies():
    """The set of sharing strategies supported on this platform."""
    return _all_sharing_strategies


class ProcessException(Exception):
    def __init__(self, msg, error_index, pid):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.pid = pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A spawned process raised an exception."""


class ProcessExitedException(ProcessException):
    """A spawned process exited with a nonzero code."""

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return (type(self),
                (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name))


def _wrap(fn, i, args, error_queue):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:
        import traceback

        error_queue.put(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes started by ``spawn(..., join=False)``; ``join()`` waits for them."""

    def __init__(self, processes, error_queues):
        self.processes = processes
        self.error_queues = error_queues

    def pids(self):
        return [p.pid for p in self.processes]

    def join(self, timeout=None):
        """Wait for every process; raise if one failed. True when all have finished."""
        for p in self.processes:
            p.join(timeout)
        for i, (p, q) in enumerate(zip(self.processes, self.error_queues)):
            if p.exitcode is None:
                return False
            if p.exitcode != 0:
                for other in self.processes:
                    if other.is_alive():
                        other.terminate()
                if not q.empty():
                    tb = q.get()
                    raise ProcessRaisedException(
                        f"\n\n-- Process {i} terminated with the following error:\n{tb}", i,
                        p.pid)
                raise ProcessExitedException(
                    f"process {i} terminated with exit code {p.exitcode}", i, p.pid,
                    p.exitcode)
        return True


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Run ``fn(i, *args)`` for ``i`` in ``range(nprocs)``, each in its own process."""
    ctx = multiprocessing.get_context(start_method)
    processes, queues = [], []
    for i in range(nprocs):
        q = ctx.SimpleQueue()
        p = ctx.Process(target=_wrap, args=(fn, i, args, q), daemon=daemon)
        p.start()
        processes.append(p)
        queues.append(q)
    context = ProcessContext(processes, queues)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """``start_processes`` with the 'spawn' start method, as PyTorch's."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
