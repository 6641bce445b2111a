"""WorkerStart: Helion's check worker started at a search's setup, not at its first check.

Helion starts its check worker when the first check needs it. The start (a
spawned Python importing torch and Helion, then CUDA's context at its first
job) takes about 10 s on an H100 machine beside Helion's precompile
processes (docs/helion.md), and the first batch's checks wait for all of
it. Started at setup instead, it comes up while Helion compiles and
precompiles the first batch: the process is spawned there, on the search's
thread (the worker asks for SIGTERM when the thread that started it ends),
and a thread of its own runs torch.cuda.synchronize on the arguments' device
in it (CUDA's context there, made once in the worker), which the search
waits for before its first use of the worker. A start that fails here is
left to Helion's first check, which starts the worker again and handles
what fails there as it would. A search that checks nothing (every config
failed to compile) pays the start all the same, its cleanup waiting for
the readying.
"""
from __future__ import annotations

import functools
import threading
from typing import Any

__all__ = ["WorkerStart", "cuda_device_index"]


def cuda_device_index(args: Any) -> int | None:
    """The device index of the first CUDA tensor among `args` (a kernel's arguments), None where there is none."""
    for arg in args:
        if getattr(arg, "is_cuda", False):
            return int(arg.device.index)
    return None


class WorkerStart:
    """Helion's BenchmarkWorker `worker` started now and readied on `device_index` (None: not readied) on a
    thread; `wait()` before using it."""

    def __init__(self, worker: Any, timeout_s: float, device_index: int | None) -> None:
        self._thread: threading.Thread | None = None
        try:
            worker._start()  # Helion's own start, on this thread (its death signal follows the starting thread)
        except Exception:  # noqa: BLE001 - Helion's first check starts it again and says what fails
            return
        if device_index is not None:
            self._thread = threading.Thread(target=self._ready, args=(worker, timeout_s, device_index),
                                            daemon=True, name="pyhipbench-helion-worker-start")
            self._thread.start()

    @staticmethod
    def _ready(worker: Any, timeout_s: float, device_index: int) -> None:
        """CUDA's context made on `device_index` in `worker` (at most `timeout_s` s). A worker that died since
        its start is not started again here: one started on this thread would end with it."""
        import torch

        worker._start = _refuse_start  # only this thread uses the worker until wait() returns
        try:
            worker.run(functools.partial(torch.cuda.synchronize, device_index), timeout_s)
        except Exception:  # noqa: BLE001 - the first check meets what failed here, and Helion handles it there:
            pass  # a dead or timed-out worker is started again, one that cannot be killed ends the search
        finally:
            del worker._start  # Helion's own again

    def wait(self) -> None:
        """Returns once the readying job has ended (at most its timeout), at once where none runs."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None


def _refuse_start() -> None:
    raise RuntimeError("the check worker ended before it was readied; the search's first check starts it again")
