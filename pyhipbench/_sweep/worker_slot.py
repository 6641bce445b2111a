"""A worker slot: one GPU's place in a sweep, and what the scheduler knows of the worker on it.

A slot's worker runs its tasks in the order sent. The slot holds the attempt
it runs, with its watchdog deadline, and at most one task sent ahead, which
starts (for the watchdog and its attempt) when the outcome before it arrives.
Replacing the worker (after a fault, a hang or a death) starts another on the
same GPU; the task sent ahead never ran, so it goes back to the dispatcher.

Watchdog: a candidate may run for its `timeout_s` if it set one, else
max(`timeout_floor_s`, WATCHDOG_FACTOR x 2 x bench's max_time_s) plus its
hold_s (the hold runs for hold_s, the timed phase is capped at max_time_s and
the warm-up stops sooner; module load, argument set-up and the first use of a
timer fit in the floor). bench() takes
at least about 40 launches (warm-up and a first chunk) whatever max_time_s
says, so a candidate whose launches take longer than floor / 40 needs its own
timeout_s.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._results.store import now
from .candidate import Candidate
from .worker import DeviceFacts, Outcome, Task

if TYPE_CHECKING:
    from .scheduler import Executor

__all__ = ["WorkerSlot", "Attempt", "Running", "watchdog_s", "WATCHDOG_FACTOR", "TIMEOUT_FLOOR_S",
           "STARTUP_TIMEOUT_S"]

WATCHDOG_FACTOR = 5
TIMEOUT_FLOOR_S = 10.0      # seconds: module load, argument set-up, first use of a timer
STARTUP_TIMEOUT_S = 120.0   # seconds a worker may take to open its device


def watchdog_s(candidate: Candidate, floor_s: float = TIMEOUT_FLOOR_S) -> float:
    """How long `candidate` may run before its worker is killed, seconds (see the module docstring)."""
    if candidate.timeout_s is not None:
        return candidate.timeout_s
    return max(floor_s, WATCHDOG_FACTOR * 2 * candidate.bench.max_time_s) + candidate.bench.hold_s


@dataclass(frozen=True)
class Attempt:
    """A run of `candidate` on a worker: its `number` (1: the first), and the first attempt's failure
    (reason, error) when this one is a retry."""
    candidate: Candidate
    number: int = 1
    first_failure: tuple[str, str] | None = None

    def retry(self, reason: str, error: str) -> Attempt:
        """The next attempt, after this one failed with `reason` and `error`."""
        return Attempt(self.candidate, self.number + 1, self.first_failure or (reason, error))


@dataclass(frozen=True)
class Running:
    """An attempt a worker is running: its watchdog's limit (s) and deadline (monotonic s), and when it
    started (ISO 8601)."""
    attempt: Attempt
    limit_s: float
    deadline: float
    started_at: str


class WorkerSlot:
    """Slot `index` of `executor`: its worker's device facts (None until it has opened its device), the
    code objects it held after its last outcome, the attempt it runs, the one sent ahead, and whether
    it has run nothing yet (`fresh`: where a retry goes)."""

    def __init__(self, executor: Executor, index: int, timeout_floor_s: float) -> None:
        self.executor, self.index, self.timeout_floor_s = executor, index, timeout_floor_s
        self.workers_started = 0  # a worker replaced counts one more: its events are the old one's
        self.facts: DeviceFacts | None = None
        self.fresh = True
        self.modules_held: frozenset[str] = frozenset()
        self.running: Running | None = None
        self.queued: Attempt | None = None
        self.startup_deadline = 0.0  # monotonic s by which the worker must have opened its device

    def start(self) -> None:
        """Starts a worker on the slot (the executor kills one still there); it knows nothing yet."""
        self.workers_started += 1
        self.facts, self.fresh, self.modules_held, self.running, self.queued = None, True, frozenset(), None, None
        self.startup_deadline = time.monotonic() + STARTUP_TIMEOUT_S
        self.executor.start(self.index)

    def replace(self) -> Attempt | None:
        """Kills the worker and starts another; returns the attempt sent ahead, which never started."""
        queued = self.queued
        self.executor.kill(self.index)
        self.start()
        return queued

    @property
    def idle(self) -> bool:
        """Up, and running nothing."""
        return self.facts is not None and self.running is None

    def holds(self, code_key: str) -> bool:
        """Whether the worker will still hold `code_key`'s code object when it reaches a task sent now: it
        held it after its last outcome, and none of the tasks before loads a module (which may unload it)."""
        before = [self.running.attempt] if self.running is not None else []
        before += [self.queued] if self.queued is not None else []
        return code_key in self.modules_held and all(a.candidate.code_key in self.modules_held for a in before)

    def send(self, task: Task, attempt: Attempt) -> None:
        """Sends `task`, which runs `attempt`: it starts now on an idle worker, else after the running one."""
        self.executor.submit(self.index, task)
        self.fresh = False
        if self.running is None:
            self._begin(attempt)
        else:
            self.queued = attempt

    def _begin(self, attempt: Attempt) -> None:
        limit_s = watchdog_s(attempt.candidate, self.timeout_floor_s)
        self.running = Running(attempt, limit_s, time.monotonic() + limit_s, now())

    def finished(self, outcome: Outcome) -> Running:
        """The running attempt's outcome arrived: the code objects the worker holds now; the attempt sent
        ahead starts, unless the worker asked to be replaced (it exits after its outcome)."""
        done, self.running = self.running, None
        self.modules_held = outcome.modules_held
        if self.queued is not None and not outcome.replace_worker:
            self._begin(self.queued)
            self.queued = None
        return done

    @property
    def deadline(self) -> float | None:
        """When the scheduler must look at this slot again, monotonic s: the running attempt's watchdog
        deadline, or the start-up deadline of a worker that has not opened its device; None: neither."""
        if self.running is not None:
            return self.running.deadline
        return self.startup_deadline if self.facts is None else None
