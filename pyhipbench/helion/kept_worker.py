"""KeptWorker: Helion's check worker handed from one search to the next, instead of one started per search.

Helion checks each candidate against its baseline in a spawned benchmark
worker that it starts at a search's first check and stops when the search
ends. Most checks take about 5 ms; the start (a new Python importing torch
and Helion beside Helion's precompile processes) about 10 s on an H100
machine (docs/helion.md), so a program that autotunes several kernels pays
it once per kernel. pyhipbench.helion's searches in one process share a
worker instead (KEPT_WORKER): a search holds it from its setup to its
cleanup (the first search's worker is the one Helion starts at its first
check) and gives it back still running, with what Helion's jobs cached for
that search (its arguments and baseline, loaded once per file) dropped in
it. A worker serves only searches on the thread that started it (it asks
for SIGTERM when that thread ends). A search that cannot hold it (another
holds it, or it is another thread's) starts its own, as Helion does, and a
worker that stopped, cannot be killed or cannot forget is not kept: Helion
stops it as it would. The kept worker, idle between searches, holds its
CUDA context until the process ends.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

__all__ = ["KEPT_WORKER", "KeptWorker", "forget_search_jobs"]


def forget_search_jobs() -> tuple[Callable[[], object], ...]:
    """The worker's jobs that drop what Helion's jobs cached for a search (its arguments and baseline, cached
    by file: they would pile up over the searches a kept worker serves), then give back the GPU memory torch
    cached for them. Helion's and torch's own functions: the worker imports nothing more to run them."""
    import torch
    from helion.autotuner.benchmark_job import _load_trusted_baseline_output
    from helion.autotuner.kernel_args import load_trusted_kernel_args

    return load_trusted_kernel_args.cache_clear, _load_trusted_baseline_output.cache_clear, torch.cuda.empty_cache


class KeptWorker:
    """One check worker (Helion's BenchmarkWorker, once a search made one), who holds it and the thread it
    serves."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._worker: Any = None
        self._thread: int | None = None
        self._held = False

    def hold(self) -> tuple[bool, Any]:
        """(whether the caller now holds the kept worker, the worker: None until a search made one); (False,
        None) while another search holds it, or where it serves another thread."""
        with self._lock:
            if self._held or (self._worker is not None and self._thread != threading.get_ident()):
                return False, None
            self._held = True
            return True, self._worker

    def give_back(self, worker: Any, timeout_s: float) -> bool:
        """The hold released, and the holder's `worker` (None: it made none) kept for the next search where it
        runs, can be killed and forgot its search (a job of at most `timeout_s` s); whether it was kept (if
        not, the caller stops it as Helion would)."""
        usable = worker is not None and worker.alive() and worker._fatal_error is None
        if usable:
            try:
                for job in forget_search_jobs():
                    worker.run(job, timeout_s)
            except Exception:  # the job's own error or a dead worker: then it is not kept, nothing more
                usable = False
        with self._lock:
            self._worker = worker if usable else None
            self._thread = threading.get_ident() if usable else None
            self._held = False
        return usable


KEPT_WORKER = KeptWorker()  # every RacingProvider's in this process
