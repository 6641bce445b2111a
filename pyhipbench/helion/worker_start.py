"""WorkerStart: Helion's benchmark worker started in the background when the search starts.

Helion checks each candidate against its baseline in a spawned worker, which
it starts at the first check. The start, a new Python importing torch and
Helion, takes about 10 s on a 16-core H100 machine busy compiling; a check
itself takes about 5 ms (docs/helion.md). Started with the search, the spawn
overlaps Helion's baseline and its first compiles. The provider takes the
worker as Helion's own (`_benchmark_worker`) at its first check, waiting
there for the start to end; a start that failed or ran out of time leaves
the worker stopped, and Helion's first job starts it again as it would have.
"""
from __future__ import annotations

import threading

from helion.autotuner.benchmark_worker import BenchmarkWorker

__all__ = ["WorkerStart"]


class WorkerStart:
    """One BenchmarkWorker, its start (a job that does nothing) running in a thread from construction on."""

    def __init__(self, timeout_s: float) -> None:
        self._worker = BenchmarkWorker(device=None)
        # Spawned from this thread, not the one that waits: the worker asks for SIGTERM when the thread that
        # spawned it ends (PR_SET_PDEATHSIG follows threads), and that one ends with the start.
        self._worker._start()
        self._thread = threading.Thread(target=self._start, args=(timeout_s,), name="pyhipbench-helion-worker",
                                        daemon=True)
        self._thread.start()

    def take(self) -> BenchmarkWorker:
        """The worker, once its start ended (started, or stopped where the start failed)."""
        self._thread.join()
        return self._worker

    def stop(self) -> None:
        """The worker stopped now, mid-start or not: for a search that checks without it."""
        with self._worker._lock:  # as BenchmarkWorker's own timeout kills: the start's run then sees it gone
            self._worker._kill()
        self._thread.join()
        self._worker.shutdown()  # one whose spawn began just after the kill

    def _start(self, timeout_s: float) -> None:
        try:
            self._worker.run(int, timeout_s)  # int(): the job that does nothing, answered once the worker is up
        except Exception:  # noqa: S110  # the start's only outcome that matters is the worker's state, kept
            pass
