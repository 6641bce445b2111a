"""Dispatch: which worker runs what next.

Workers take ready candidates in the space's order, whatever order their code
became ready in: a tuner may list its likeliest candidates first, and a slow
or hanging one it placed early is not left to the end, where it would run
alone while the other GPUs idle. A retry goes first, to a fresh worker (one
that has run nothing yet).

A busy worker is sent its next task ahead (one), so it starts it as soon as it
sends an outcome, without waiting for the scheduler to record that outcome;
only while more candidates are ready than there are workers (at a sweep's end
no candidate waits behind one that may hang), and never behind a retry (a
candidate that failed once may fail again and take the worker with it).
"""
from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Iterator

from .candidate import Candidate
from .worker_slot import Attempt, WorkerSlot

__all__ = ["Dispatcher", "ReadyQueue"]


class ReadyQueue:
    """Candidates whose code is ready, handed out in the order the space lists them."""

    def __init__(self, space: list[Candidate]) -> None:
        self.position = {c.id: i for i, c in enumerate(space)}
        self.heap: list[tuple[int, Candidate]] = []

    def add(self, candidates: list[Candidate]) -> None:
        for c in candidates:
            heapq.heappush(self.heap, (self.position[c.id], c))

    def pop(self) -> Candidate:
        return heapq.heappop(self.heap)[1]

    def __len__(self) -> int:
        return len(self.heap)

    def __iter__(self) -> Iterator[Candidate]:
        """The candidates in the order they will be handed out."""
        return iter([c for _, c in sorted(self.heap, key=lambda entry: entry[0])])


class Dispatcher:
    """The ready candidates of `space` and the retries waiting for a fresh worker (see the module docstring)."""

    def __init__(self, space: list[Candidate]) -> None:
        self.ready = ReadyQueue(space)
        self.retries: deque[Attempt] = deque()

    def add(self, candidates: list[Candidate]) -> None:
        """Candidates whose code is now ready (or that go back in line: sent ahead to a worker replaced
        before it started them)."""
        self.ready.add(candidates)

    def retry(self, attempt: Attempt) -> None:
        self.retries.append(attempt)

    def dispatch(self, slots: list[WorkerSlot], send: Callable[[WorkerSlot, Attempt], None]) -> None:
        """Calls `send` for each attempt to start now: one per idle worker first (a fresh one takes a retry
        first), then one ahead per busy worker while more candidates are ready than there are workers."""
        for slot in slots:
            if not slot.idle:
                continue
            if slot.fresh and self.retries:
                send(slot, self.retries.popleft())
            elif self.ready:
                send(slot, Attempt(self.ready.pop()))
        for slot in slots:
            if len(self.ready) <= len(slots):
                return
            if slot.running is not None and slot.queued is None and slot.running.attempt.number == 1:
                send(slot, Attempt(self.ready.pop()))
