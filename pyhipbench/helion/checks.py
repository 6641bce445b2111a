"""CheckPool: a batch's accuracy checks run in several of Helion's killable workers at once.

Helion checks a candidate against its baseline in one spawn worker, one job
after another, each job loading the candidate's code and reading the
arguments and the baseline from disk: about 0.3 s a candidate on an H100,
half of a search's wall once pyhipbench measures (docs/helion.md). The jobs
are independent of each other, so the pool runs a whole batch's jobs in
`workers` of Helion's `BenchmarkWorker`s at once, one thread driving each,
and the provider measures none of the batch before they are all done: no
check's kernels run beside a measurement. A job's outcome is what the
worker's `run` returned or raised, as for Helion's own worker: a hang costs
its worker the timeout and that job, a fault that job (the worker is
started again for its next one).
"""
from __future__ import annotations

import queue
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from helion.autotuner.benchmark_worker import BenchmarkWorker

__all__ = ["CheckOutcome", "CheckPool"]


@dataclass(frozen=True)
class CheckOutcome:
    """One job's end: `result`, what the job returned, or `error`, what its run raised (the other None)."""
    result: object = None
    error: Exception | None = None


class CheckPool:
    """`workers` BenchmarkWorkers (one GPU context each) and a thread driving each, for one provider's life:
    made at its setup, shut down at its cleanup."""

    def __init__(self, workers: int) -> None:
        self._idle: queue.SimpleQueue[BenchmarkWorker] = queue.SimpleQueue()
        self._workers = [BenchmarkWorker(device=None) for _ in range(workers)]
        for worker in self._workers:
            self._idle.put(worker)
        self._threads = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="pyhipbench-check")

    def start(self, timeout_s: float) -> None:
        """Start every worker now, in the background (a worker's spawn imports torch and Helion: seconds), so
        the start overlaps what the caller does next instead of the first batch's checks."""
        for _ in self._workers:
            self._threads.submit(self._run, int, timeout_s)  # int(): the job that does nothing

    def run(self, jobs: Mapping[int, Callable[[], object]], timeout_s: float) -> dict[int, CheckOutcome]:
        """Each job run in a worker, as many at once as there are workers; every job's outcome, by its key.
        `timeout_s`: seconds one job may take, its worker's start included. An interrupt kills the workers
        (their jobs end at once) and propagates."""
        running = {key: self._threads.submit(self._run, job, timeout_s) for key, job in jobs.items()}
        try:
            return {key: future.result() for key, future in running.items()}
        except BaseException:
            self.shutdown()
            raise

    def shutdown(self) -> None:
        """Every worker killed (a busy one would finish its job before reading a goodbye) and the threads
        joined; again is a no-op."""
        self._threads.shutdown(wait=False, cancel_futures=True)
        for worker in self._workers:
            with worker._lock:  # as BenchmarkWorker's own timeout kills: a thread's run then sees it gone
                worker._kill()
        self._threads.shutdown(wait=True)

    def _run(self, job: Callable[[], object], timeout_s: float) -> CheckOutcome:
        """`job` in the next idle worker."""
        worker = self._idle.get()
        try:
            return CheckOutcome(result=worker.run(job, timeout_s))
        except Exception as e:  # the job's own error, a timeout, a dead or unkillable worker: this job's outcome
            return CheckOutcome(error=e)
        finally:
            self._idle.put(worker)
