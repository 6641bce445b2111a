"""PreparedAhead: host work for the candidates to come, started on threads while the GPU measures another.

A measurement releases the GIL, so a thread can load the next candidate's
code and check its launch meanwhile. Only where that host work stays out of
the timer's samples (`Resolved.host_work_hidden`): the caller decides, and
starts nothing otherwise. The engine prepares its trials in order; a sweep
worker prepares each task as it arrives.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable
from concurrent.futures import Executor, Future
from typing import Generic, TypeVar

__all__ = ["PreparedAhead"]

Prepared = TypeVar("Prepared")


class PreparedAhead(dict[Hashable, "Future[Prepared]"], Generic[Prepared]):
    """The preparations started, by key (a candidate's id, a trial's index)."""

    def start(self, key: Hashable, preparing: Executor, prepare: Callable[[], Prepared]) -> None:
        """`prepare()` started on `preparing`'s threads."""
        self[key] = preparing.submit(prepare)

    def take(self, key: Hashable, prepare: Callable[[], Prepared]) -> Prepared:
        """What was started for `key`, once done (its exception raised here); `prepare()` now when nothing was."""
        started = self.pop(key, None)
        return prepare() if started is None else started.result()
