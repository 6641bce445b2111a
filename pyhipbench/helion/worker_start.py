"""WorkerStart: Helion's check worker started at a search's setup, not at its first check.

Helion starts its check worker when the first check needs it. The start (a
spawned Python importing torch and Helion, then CUDA's context at its first
job) takes about 10 s on an H100 machine beside Helion's precompile
processes (docs/helion.md), and the first batch's checks wait for all of
it. Started at setup instead, it comes up while Helion compiles and
precompiles the first batch: the process is spawned there, on the search's
thread (the worker asks for SIGTERM when the thread that started it ends),
and a thread of its own runs torch.cuda.synchronize in it (CUDA's context,
made once in the worker), which the search waits for before its first use
of the worker.
"""
from __future__ import annotations

import threading
from typing import Any

__all__ = ["WorkerStart"]


class WorkerStart:
    """Helion's BenchmarkWorker `worker` started now and readied on a thread; `wait()` before using it."""

    def __init__(self, worker: Any, timeout_s: float) -> None:
        worker._start()  # Helion's own start, on this thread (its death signal follows the starting thread)
        self._thread = threading.Thread(target=self._ready, args=(worker, timeout_s), daemon=True,
                                        name="pyhipbench-helion-worker-start")
        self._thread.start()

    @staticmethod
    def _ready(worker: Any, timeout_s: float) -> None:
        """CUDA's context made in `worker` (at most `timeout_s` s)."""
        import torch

        try:
            worker.run(torch.cuda.synchronize, timeout_s)
        except Exception:  # the first check meets what failed here, and Helion handles it there: a dead or
            pass  # timed-out worker is started again, one that cannot be killed ends the search

    def wait(self) -> None:
        """Returns once the readying job has ended (at most its timeout)."""
        self._thread.join()
