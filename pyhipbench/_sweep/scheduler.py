"""The scheduler: candidates to idle workers, code compiled ahead of them, faults contained.

It drives an executor (local.py: a process per GPU; ray_cluster.py: an actor
per GPU) through `initial_slots`, `more_slots`, `start(slot)`,
`submit(slot, task)`, `kill(slot)`, and `events(timeout_s)`, which reports
("ready", DeviceFacts), ("error", message) when a worker cannot open its
device, ("outcome", Outcome) and ("died", reason). Its parts, one job each:

    compile_queue.py  each source's code, compiled ahead of the GPUs once they are known
    dispatch.py       which worker runs what next, in the space's order; tasks sent ahead
    worker_slot.py    one worker's state: its attempt, the one sent ahead, its watchdog
    recorder.py       each candidate's end, in the store, the summary and the progress bar

and here what ties them together:

- Code: a code object travels with a task unless the worker will hold it when
  it reaches the task (WorkerSlot.holds): each outcome says which code objects
  the worker holds after its task. A task names its kernels (a chain's, each
  launch's) as the module knows them (a C++ name expression's lowered name);
  where the compile fixed the launch (Triton), the task carries its block,
  shared memory and the arguments the kernel keeps, so the worker runs it as
  any other launch.
- After an outcome the next tasks go out before the result is committed, so
  the worker does not wait on the database.
- Faults cost one candidate: a fault, a driver error, a timeout or a death is
  retried once, on a fresh worker (one that has run nothing yet), then
  recorded as failed with its reason. Bad input (the kernel, launch,
  arguments or IR cannot work) is recorded at once: retrying cannot help.
- Stopping: Ctrl-C is seen between events (interrupts.py), each result that
  arrived committed first; it, a database write that fails (an OSError from
  the store) or the sweep's own error ends the loop, and the workers and the
  compiler processes are ended before it goes on up (`run` raises
  SweepInterrupted for Ctrl-C). What is committed stays: a resumed sweep
  continues from it.
- A candidate the space lists more than once runs once; the summary names
  it, apart from those already in the database (resume).
"""
from __future__ import annotations

import dataclasses
import time
from collections import Counter
from typing import Any, Protocol

from .._progress import Progress
from .._results.store import Store
from .._tuning.racing import RaceBound
from ..errors import NoDeviceError
from .candidate import Candidate
from .compile_queue import Compiled, CompileQueue
from .dispatch import Dispatcher
from .gate import MeasureGate
from .interrupts import POLL_S as INTERRUPT_POLL_S
from .interrupts import InterruptGuard, SweepInterrupted
from .recorder import Recorder, SweepSummary
from .worker import DIED, INVALID, TIMEOUT, DeviceFacts, Outcome, Task
from .worker_slot import STARTUP_TIMEOUT_S, TIMEOUT_FLOOR_S, Attempt, Running, WorkerSlot, watchdog_s

__all__ = ["Executor", "SweepSummary", "run", "watchdog_s", "MAX_ATTEMPTS", "TIMEOUT_FLOOR_S"]

MAX_ATTEMPTS = 2  # a candidate that faults, hangs or kills its worker runs once more, then fails
POLL_S = 0.05     # how often compiled code is collected while compiles are outstanding, seconds


class Executor(Protocol):
    def initial_slots(self) -> list[int]: ...
    def more_slots(self, facts: DeviceFacts) -> list[int]:
        """Slots to add once the first worker is up (a local pool learns the GPU count from it)."""
    def start(self, slot: int) -> None:
        """Starts the slot's worker, killing the one before if still there; it reports "ready"."""
    def submit(self, slot: int, task: Task) -> None:
        """Sends `task` to the slot's worker, which may be busy: it runs its tasks in the order sent."""
    def kill(self, slot: int) -> None:
        """Ends the slot's worker; the next one started on the slot measures nothing before it is gone."""
    def events(self, timeout_s: float) -> list[tuple[int, str, Any]]:
        """What the workers reported, as (slot, kind, value), waiting up to `timeout_s` seconds for any."""
    def close(self) -> None: ...


class _Scheduler:
    """One sweep of `candidates` (none recorded yet) on `executor`'s workers."""

    def __init__(self, candidates: list[Candidate], store: Store, executor: Executor, progress: Progress,
                 summary: SweepSummary, timeout_floor_s: float, compile_workers: int, race: bool = False,
                 interrupts: InterruptGuard | None = None) -> None:
        self.executor, self.summary, self.timeout_floor_s = executor, summary, timeout_floor_s
        self.interrupts = interrupts or InterruptGuard()  # not entered: it never reports one
        self.slots: dict[int, WorkerSlot] = {}
        self.compiles = CompileQueue(candidates, compile_workers)
        self.dispatcher = Dispatcher(candidates)
        self.gate = MeasureGate()
        self.racing = RaceBound(race, store.lowest_ci_high() if race else None)
        self.recorder = Recorder(store, progress, summary, len(candidates))

    def loop(self) -> None:
        """Runs until every candidate is recorded; on an exception (Ctrl-C included) the compiler processes
        are ended first (the executor's workers are `run`'s to close)."""
        try:
            for index in self.executor.initial_slots():
                self._start_slot(index)
            while self.recorder.remaining:
                self.interrupts.check()
                self._compiled(self.compiles.collect())
                self._dispatch()
                # A slot whose worker is replaced while this batch is handled: the rest of the batch's events
                # for it are the old worker's (a Ray actor's second call).
                started = {index: slot.workers_started for index, slot in self.slots.items()}
                for index, kind, value in self.executor.events(self._wait_s()):
                    if self.slots[index].workers_started == started[index]:
                        self._handle(index, kind, value)
                self._watchdog()
        except BaseException:
            self.compiles.close()  # the compile pool's processes killed: a compile in progress is not
            raise
        self.compiles.close()

    def _start_slot(self, index: int) -> None:
        self.slots[index] = WorkerSlot(self.executor, index, self.timeout_floor_s)
        self.slots[index].start()

    def _compiled(self, news: Compiled) -> None:
        if self.compiles.compiling:
            self.gate.compiling()
        self.gate.compiled(news.compiles_ended)
        self.dispatcher.add(news.ready)
        for candidate, reason, error in news.failed:
            self.recorder.not_compiled(candidate, reason, error)

    def _dispatch(self) -> None:
        """The next tasks out, unless the ready candidates are held for the compiles still running (gate.py)."""
        if self.gate.open(len(self.dispatcher.ready), len(self.compiles.compiling), len(self.slots)):
            self.dispatcher.dispatch(list(self.slots.values()), self._send)

    def _send(self, slot: WorkerSlot, attempt: Attempt) -> None:
        """Sends `attempt` to `slot`'s worker with the code object only if the worker will not hold it."""
        c, options = attempt.candidate, self.racing.options_for(attempt.candidate.bench)
        code = self.compiles.code[c.code_key]
        data = None if slot.holds(c.code_key) else code.data
        if code.launch is not None:  # the compile fixed the kernel, block, shared memory and the arguments kept
            fixed = code.launch
            task = Task(c.id, fixed.kernel, c.grid, fixed.block, fixed.args(c.args, c.grid), fixed.shared_bytes,
                        options, c.code_key, data)
        else:
            launches = c.launches  # a chain's kernels by the names the module knows them by, as one launch's
            if isinstance(launches, tuple):
                launches = tuple(dataclasses.replace(launch, kernel=code.kernel_name(launch.kernel))
                                 for launch in launches)
            kernel = c.name if c.launches is not None else code.kernel_name(c.kernel)
            task = Task(c.id, kernel, c.grid, c.block, c.args, c.shared_bytes, options, c.code_key, data,
                        launches=launches)
        slot.send(task, attempt)

    def _handle(self, index: int, kind: str, value: Any) -> None:
        slot = self.slots[index]
        if kind == "ready":
            self._ready(slot, value)
        elif kind == "error":
            raise NoDeviceError(f"a worker could not open its GPU (slot {index}): {value}")
        elif kind == "outcome":
            self._outcome(slot, value)
        elif kind == "died":
            if slot.running is None and slot.facts is None:
                raise NoDeviceError(f"a worker died opening its GPU (slot {index}): {value}")
            running, device = slot.running, slot.facts.label
            self._replace(slot)
            if running is not None:
                self._failed(running, DIED, value, device)

    def _ready(self, slot: WorkerSlot, facts: DeviceFacts) -> None:
        slot.facts = facts
        self.recorder.opened(facts.record)
        if self.compiles.target is None:
            self._compiled(self.compiles.start(facts.target))
            for extra in self.executor.more_slots(facts):
                self._start_slot(extra)
        elif facts.target != self.compiles.target:
            raise NoDeviceError(f"the sweep's GPUs differ: {facts.label} is {facts.target}, another is "
                                f"{self.compiles.target}; run one sweep per kind of GPU and driver")
        self.summary.gpus = len(self.slots)

    def _outcome(self, slot: WorkerSlot, outcome: Outcome) -> None:
        device = slot.facts.label
        done = slot.finished(outcome)
        self.summary.busy_s += outcome.busy_s
        self.gate.measured_one(outcome.busy_s)
        if outcome.result is not None and self.racing.enabled:  # before the next tasks go out, to race it
            self.racing.lower(outcome.result["stats_us"]["ci_high"])
        if outcome.replace_worker:
            self._replace(slot)
        self._dispatch()  # the workers' next tasks go out before this result is committed
        if outcome.result is not None:
            self.recorder.measured(done, outcome, device)
        else:
            self._failed(done, outcome.reason, outcome.error, device)

    def _failed(self, done: Running, reason: str, error: str, device: str) -> None:
        """A fault, error, timeout or death: once more on a fresh worker, else recorded as failed."""
        if reason != INVALID and done.attempt.number < MAX_ATTEMPTS:
            self.dispatcher.retry(done.attempt.retry(reason, error))
        else:
            self.recorder.failed(done, reason, error, device)

    def _replace(self, slot: WorkerSlot) -> None:
        """A new worker on the slot; what was sent ahead to the old one goes back in line, at its place."""
        ahead = slot.replace()
        if ahead is not None:
            self.dispatcher.add([ahead.candidate])

    def _watchdog(self) -> None:
        clock = time.monotonic()
        for slot in list(self.slots.values()):
            if slot.running is not None and clock > slot.running.deadline:
                running, device = slot.running, slot.facts.label
                self._replace(slot)
                self._failed(running, TIMEOUT, f"no result after {running.limit_s:.1f} s (the watchdog's limit); "
                             "the worker was killed", device)
            elif slot.facts is None and clock > slot.startup_deadline:
                raise NoDeviceError(f"a worker (slot {slot.index}) did not open its GPU within "
                                    f"{STARTUP_TIMEOUT_S:.0f} s")

    def _wait_s(self) -> float:
        """How long to wait for events, seconds: until the next deadline, and no longer than POLL_S while
        code is compiling."""
        deadlines = [slot.deadline for slot in self.slots.values() if slot.deadline is not None]
        wait = max(0.0, min(deadlines) - time.monotonic()) if deadlines else 1.0
        wait = min(wait, INTERRUPT_POLL_S)  # a Ctrl-C is seen within this
        return min(wait, POLL_S) if self.compiles.compiling else wait


def run(candidates: list[Candidate], store: Store, executor: Executor, *, progress: Progress | None = None,
        timeout_floor_s: float = TIMEOUT_FLOOR_S, compile_workers: int = 2, race: bool = False) -> SweepSummary:
    """Runs every candidate not yet in `store` on `executor`'s workers; returns what it did.
    `timeout_floor_s`: the watchdog's least limit, seconds (worker_slot.py). `race`: each candidate races
    the lowest CI upper bound so far (the tuning engine's RaceBound). The executor is closed (its workers
    ended) however this ends; Ctrl-C raises SweepInterrupted once it is (interrupts.py)."""
    started = time.perf_counter()
    done = store.done_ids()
    listed = Counter(c.id for c in candidates)
    unique: dict[str, Candidate] = {}
    for c in candidates:
        unique.setdefault(c.id, c)
    todo = [c for i, c in unique.items() if i not in done]  # a candidate listed twice runs once
    summary = SweepSummary(str(store.path), len(candidates), len(candidates) - len(todo),
                           already_recorded=len(unique) - len(todo),
                           duplicates=[(c, listed[i]) for i, c in unique.items() if listed[i] > 1])
    progress = progress or Progress(len(todo), show=False)
    try:
        with InterruptGuard() as interrupts:
            try:
                if todo:
                    _Scheduler(todo, store, executor, progress, summary, timeout_floor_s, compile_workers, race,
                               interrupts).loop()
            finally:
                executor.close()
                progress.close()
                summary.wall_s = time.perf_counter() - started
    except KeyboardInterrupt:
        raise interrupted(store, summary) from None
    return summary


def interrupted(store: Store, summary: SweepSummary | None = None) -> SweepInterrupted:
    """What a sweep on `store` raises for Ctrl-C, once its workers are shut down."""
    held = f"{store.committed} result{'' if store.committed == 1 else 's'}"
    return SweepInterrupted(f"interrupted: {store.path} holds {held}, each committed as it finished (none is "
                            "lost); sweep(..., resume=True) continues from there", str(store.path), store.committed,
                            summary)
