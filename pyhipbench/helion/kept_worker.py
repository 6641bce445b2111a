"""KeptWorker: Helion's check worker handed from one search to the next, instead of one started per search.

Helion checks each candidate against its baseline in a spawned benchmark
worker that it starts at a search's first check and stops when the search
ends. A check takes about 5 ms; the start (a new Python importing torch and
Helion beside Helion's precompile processes) about 10 s on an H100 machine
(docs/helion.md), so a program that autotunes several kernels pays it once
per kernel. The searches one Measuring makes share a worker instead: a
search holds it from its setup to its cleanup (the first one's worker is
the one Helion starts at its first check), and gives it back still running.
A search that starts while another holds it starts its own, as Helion
does. A worker that is no longer running when given back (Helion stopped
it: a wrapper it cannot load) is not kept.
"""
from __future__ import annotations

import threading
from typing import Any

__all__ = ["KeptWorker"]


class KeptWorker:
    """One check worker (Helion's BenchmarkWorker, once a search made one) and who holds it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._worker: Any = None
        self._held = False

    def hold(self) -> tuple[bool, Any]:
        """(whether the caller now holds the kept worker, the worker: None until a search made one); (False,
        None) while another search holds it."""
        with self._lock:
            if self._held:
                return False, None
            self._held = True
            return True, self._worker

    def give_back(self, worker: Any) -> None:
        """The holder's worker (None: it has none), kept for the next search if it is running."""
        with self._lock:
            self._worker = worker if worker is not None and worker.alive() else None
            self._held = False
