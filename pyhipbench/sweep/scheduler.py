"""The scheduler: candidates to idle workers, code compiled ahead of them, faults contained.

It drives an executor (local.py: a process per GPU; ray_cluster.py: an actor
per GPU) through five calls: `initial_slots`, `more_slots`, `start(slot)`,
`submit(slot, task)`, `kill(slot)`, and `events(timeout)`, which reports
("ready", DeviceFacts), ("error", message) when a worker cannot open its
device, ("outcome", Outcome) and ("died", reason).

- Code: candidates whose source needs compiling (LLVM IR, CUDA/HIP C++) are
  compiled in a CPU process pool as soon as the first worker says what the
  GPUs are, each source once; code objects are ready at once; a source
  compiled in the worker (Triton) travels with each of its tasks. Workers
  take ready candidates in the space's order (whatever order their code
  became ready in: a tuner may list its likeliest candidates first, and a
  slow or hanging one it placed early is not left to the end, where it would
  run alone while the other GPUs idle); a code object travels to a worker once,
  and again only after the worker unloaded it (it keeps the 64 it used last;
  the scheduler mirrors that LRU, so it knows before the worker's outcome).
- Pipelining: a busy worker is sent its next task ahead (one), so it starts
  it as soon as it sends an outcome, without waiting for the scheduler to
  record that outcome; only while more candidates are ready than there are
  workers (at a sweep's end no candidate waits behind one that may hang), and
  never behind a candidate that failed once. A task sent ahead starts, for
  the watchdog and its attempt count, when the outcome before it arrives; if
  its worker is replaced first it goes back into the ready queue at its place,
  not counted as an attempt. After an outcome the next task goes out before
  the result is committed.
- Watchdog: a candidate may run for `timeout_s` if it set one, else
  max(`timeout_floor_s`, WATCHDOG_FACTOR x 2 x bench's max_time_s) (the
  timed phase is capped at max_time_s and the warm-up stops sooner; module
  load, argument set-up and the first use of a timer fit in the floor).
  Past it the worker is killed and replaced. bench() takes at least about 40
  launches (warm-up and a first chunk) whatever max_time_s says, so a
  candidate whose launches take longer than floor / 40 needs its own timeout_s.
- Faults cost one candidate: a fault, a driver error, a timeout or a death is
  retried once, on a fresh worker (one that has run nothing yet), then
  recorded as failed with its reason. Bad input (the kernel, launch,
  arguments or IR cannot work) is recorded at once: retrying cannot help.
- Racing (opt-in, `race`): each task's bench options carry `slower_than_us`,
  the lowest CI upper bound (µs) of the results measured so far in the
  database (on resume, those already stored; none before the first result,
  nor for a candidate with a fixed `iterations`), so a candidate surely
  slower than the best stops early with stop_reason "slower". The bound is
  added to the options sent, not to the candidate: its id does not change.
- Every candidate is recorded in the store as soon as it is known.
"""
from __future__ import annotations

import heapq
import time
from collections import OrderedDict, deque
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing import get_context
from typing import Any, Protocol

from ..errors import Error, NoDeviceError
from .candidate import Candidate
from .progress import Progress
from .sources import Code, CompileTarget, Source
from .store import FAILED, OK, Row, Store, now
from .worker import DIED, INVALID, TIMEOUT, DeviceFacts, Outcome, Task, die_with_parent, unexpected

__all__ = ["Executor", "SweepSummary", "run", "watchdog_s", "MAX_ATTEMPTS", "WATCHDOG_FACTOR",
           "TIMEOUT_FLOOR_S", "STARTUP_TIMEOUT_S"]

MAX_ATTEMPTS = 2            # a candidate that faults, hangs or kills its worker runs once more, then fails
WATCHDOG_FACTOR = 5
TIMEOUT_FLOOR_S = 10.0      # seconds: module load, argument set-up, first use of a timer
STARTUP_TIMEOUT_S = 120.0   # seconds a worker may take to open its device
POLL_S = 0.05               # how often compiled code is collected while compiles are outstanding


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
    def events(self, timeout: float) -> list[tuple[int, str, Any]]: ...
    def close(self) -> None: ...


def watchdog_s(candidate: Candidate, floor_s: float = TIMEOUT_FLOOR_S) -> float:
    """How long `candidate` may run before its worker is killed, seconds (see the module docstring)."""
    if candidate.timeout_s is not None:
        return candidate.timeout_s
    return max(floor_s, WATCHDOG_FACTOR * 2 * candidate.bench.max_time_s)


@dataclass
class SweepSummary:
    """What one call of `sweep` did: counts, wall time and GPU busy time (s), the database."""
    database: str
    total: int          # candidates in the space
    skipped: int        # already recorded (resume), or listed twice
    measured: int = 0
    failed: int = 0
    wall_s: float = 0.0
    busy_s: float = 0.0  # sum over candidates of their measurement's wall time on a GPU
    gpus: int = 0

    @property
    def utilisation(self) -> float:
        """GPU busy time over (wall time x GPUs)."""
        return self.busy_s / (self.wall_s * self.gpus) if self.wall_s and self.gpus else 0.0


def _compile(source: Source, target: CompileTarget) -> tuple[str, Any]:
    """In the CPU pool: ("ok", Code) or ("error", message) (exceptions may not unpickle)."""
    try:
        return "ok", source.compile(target)
    except Error as e:
        return "error", f"{type(e).__name__}: {e}"
    except Exception as e:  # a compiler's own exception, or a bug: its candidates fail, not the sweep
        return "error", unexpected(e)


@dataclass
class _Running:
    """A candidate a worker is running: its watchdog deadline (monotonic, s) and when it started (ISO 8601)."""
    candidate: Candidate
    deadline: float
    started_at: str


@dataclass
class _Slot:
    facts: DeviceFacts | None = None
    fresh: bool = True                      # has run no task yet: where retries go
    # The code objects the worker holds, least recently used first, as its own LRU will have them once it has
    # read every task sent: digest -> whether an outcome confirmed the load (until then its code goes again).
    modules: OrderedDict[str, bool] = field(default_factory=OrderedDict)
    running: _Running | None = None
    queued: Candidate | None = None         # sent ahead: starts when `running`'s outcome arrives
    startup_deadline: float = 0.0


class _ReadyQueue:
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

    def __iter__(self):
        """The candidates in the order they will be handed out."""
        return iter([c for _, c in sorted(self.heap, key=lambda entry: entry[0])])


class _Run:
    def __init__(self, candidates: list[Candidate], store: Store, executor: Executor, progress: Progress,
                 summary: SweepSummary, timeout_floor_s: float, compile_workers: int, race: bool = False) -> None:
        self.store, self.executor, self.progress, self.summary = store, executor, progress, summary
        self.timeout_floor_s, self.compile_workers = timeout_floor_s, compile_workers
        self.race = race
        # Racing's bound: the lowest CI upper bound measured in the database so far, µs (None: none yet).
        self.race_bound: float | None = store.lowest_ci_high() if race else None
        self.remaining = len(candidates)
        self.ready = _ReadyQueue(candidates)
        self.retries: deque[Candidate] = deque()
        self.uncompiled: dict[str, list[Candidate]] = {}   # digest -> candidates waiting for its code
        self.sources: dict[str, Source] = {}
        self.code: dict[str, Code] = {}
        self.compiles: dict[Future, str] = {}
        self.compile_tries: dict[str, int] = {}
        self.pool: ProcessPoolExecutor | None = None
        self.attempts: dict[str, int] = {}
        self.first_failures: dict[str, tuple[str, str]] = {}  # id -> (reason, error) of a failure being retried
        self.target: CompileTarget | None = None
        self.slots: dict[int, _Slot] = {}
        self.replaced: set[int] = set()  # slots whose worker was replaced while handling this batch of events
        for c in candidates:
            self.uncompiled.setdefault(c.source.digest, []).append(c)
            self.sources[c.source.digest] = c.source

    # -- recording ------------------------------------------------------------
    def _record(self, candidate: Candidate, started_at: str, *, outcome: Outcome | None = None,
                reason: str | None = None, error: str | None = None, device: str | None = None) -> None:
        result = outcome.result if outcome else None
        self.store.record(Row(candidate.id, candidate.to_json(), OK if result else FAILED,
                              self.attempts.get(candidate.id, 0), started_at, device, result,
                              reason if not result else None, error if not result else None,
                              outcome.busy_s if outcome else None))
        self.remaining -= 1
        if result:
            self.summary.measured += 1
            tags = f" {candidate.tags}" if candidate.tags else ""
            self.progress.measured(result["stats_us"]["median"], f"{candidate.kernel}{tags}")
        else:
            self.summary.failed += 1
            self.progress.failure()

    def _failed(self, candidate: Candidate, started_at: str, reason: str, error: str, device: str | None) -> None:
        """A fault, error, timeout or death: once more on a fresh worker, else recorded as failed."""
        if reason != INVALID and self.attempts[candidate.id] < MAX_ATTEMPTS:
            self.first_failures[candidate.id] = (reason, error)
            self.retries.append(candidate)
            return
        first = self.first_failures.pop(candidate.id, None)
        if first is not None and first != (reason, error):
            error = f"{error} (attempt 1: {first[0]}: {first[1]})"
        self._record(candidate, started_at, reason=reason, error=error, device=device)

    def _lower_race_bound(self, result: dict[str, Any]) -> None:
        """Racing's bound after a measured result: its CI upper bound, µs, if lower."""
        ci_high = result["stats_us"]["ci_high"]
        if ci_high > 0 and (self.race_bound is None or ci_high < self.race_bound):  # bench takes a bound > 0 only
            self.race_bound = ci_high

    def _bench_options(self, candidate: Candidate) -> dict[str, Any]:
        """The candidate's bench() options as its task carries them: with racing, and a bound known, plus
        `slower_than_us` (a fixed `iterations` cannot race: bench refuses both). A task sent ahead carries
        the bound of when it was sent; a result that arrives before it starts may have lowered the bound
        since, but a looser bound is still valid: the candidate only races less."""
        options = candidate.bench.to_json()
        if self.race_bound is not None and candidate.bench.iterations is None:
            options["slower_than_us"] = self.race_bound
        return options

    # -- compiling ------------------------------------------------------------
    def _code_for_target(self, digest: str) -> None:
        """The code of a source, now that the target is known: in the CPU pool, here if it needs no
        compiler, or none for a source the worker compiles."""
        if self.sources[digest].compiled_in_worker:
            self.ready.add(self.uncompiled.pop(digest))
            return
        if self.sources[digest].needs_compiler:
            self._submit_compile(digest)
            return
        try:
            self._compiled(digest, "ok", self.sources[digest].compile(self.target))
        except Error as e:
            self._compiled(digest, "error", f"{type(e).__name__}: {e}")

    def _compiled(self, digest: str, status: str, value: Any) -> None:
        waiting = self.uncompiled.pop(digest)
        if status == "ok":
            self.code[digest] = value
            self.ready.add(waiting)
        else:
            for c in waiting:
                self._record(c, now(), reason=INVALID, error=value)

    def _submit_compile(self, digest: str) -> None:
        if self.pool is None:
            self.pool = ProcessPoolExecutor(self.compile_workers, mp_context=get_context("spawn"),
                                            initializer=die_with_parent)
        self.compile_tries[digest] = self.compile_tries.get(digest, 0) + 1
        self.compiles[self.pool.submit(_compile, self.sources[digest], self.target)] = digest

    def _collect_compiles(self) -> None:
        broken = []
        for future in [f for f in self.compiles if f.done()]:
            digest = self.compiles.pop(future)
            try:
                status, value = future.result()
            except BrokenProcessPool:
                broken.append(digest)
                continue
            self._compiled(digest, status, value)
        if broken:  # a compiler process died (compile_ir survives LLVM aborts; this is rarer): try once more
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = None
            # The dead pool's other compiles fail (or are cancelled) too, some only after this look: all are
            # resubmitted now, so no future of the dead pool is left to break the new one or raise here later.
            broken += self.compiles.values()
            self.compiles.clear()
            for digest in broken:
                if self.compile_tries[digest] < MAX_ATTEMPTS:
                    self._submit_compile(digest)
                else:
                    for c in self.uncompiled.pop(digest):
                        self._record(c, now(), reason=DIED, error="the compiler process died compiling it, twice")

    # -- workers --------------------------------------------------------------
    def _start(self, slot: int) -> None:
        self.slots[slot] = _Slot(startup_deadline=time.monotonic() + STARTUP_TIMEOUT_S)
        self.executor.start(slot)

    def _ready(self, slot: int, facts: DeviceFacts) -> None:
        self.slots[slot].facts = facts
        if self.target is None:
            self.target = facts.target
            for digest in list(self.uncompiled):
                self._code_for_target(digest)
            for extra in self.executor.more_slots(facts):
                self._start(extra)
        elif facts.target != self.target:
            raise NoDeviceError(f"the sweep's GPUs differ: {facts.label} is {facts.target}, another is "
                                f"{self.target}; run one sweep per kind of GPU and driver")
        self.summary.gpus = len(self.slots)

    def _dispatch(self) -> None:
        """Idle workers first (a fresh one takes a retry first), then one task ahead per busy worker while
        more candidates are ready than there are workers."""
        for slot, state in self.slots.items():
            if state.facts is None or state.running is not None:
                continue
            if state.fresh and self.retries:
                candidate = self.retries.popleft()
            elif self.ready:
                candidate = self.ready.pop()
            else:
                continue
            self._send(slot, state, candidate)
            self._begin(state, candidate)
        for slot, state in self.slots.items():
            if len(self.ready) <= len(self.slots):
                return
            if (state.running is not None and state.queued is None
                    and self.attempts[state.running.candidate.id] == 1):  # not behind one that failed once
                state.queued = self.ready.pop()
                self._send(slot, state, state.queued)

    def _send(self, slot: int, state: _Slot, candidate: Candidate) -> None:
        digest = candidate.source.digest
        if candidate.source.compiled_in_worker:
            task = Task(candidate.id, candidate.kernel, candidate.grid, candidate.block, candidate.args,
                        candidate.shared_bytes, self._bench_options(candidate), digest, None, candidate.source)
        else:
            code = self.code[digest]
            if state.modules.get(digest):  # held, and confirmed by an outcome
                state.modules.move_to_end(digest)
                data = None
            else:
                if digest not in state.modules:  # the worker will unload its least recently used to load it
                    while len(state.modules) >= state.facts.modules_kept:
                        state.modules.popitem(last=False)
                    state.modules[digest] = False
                state.modules.move_to_end(digest)
                data = code.data
            task = Task(candidate.id, code.kernel_name(candidate.kernel), candidate.grid, candidate.block,
                        candidate.args, candidate.shared_bytes, self._bench_options(candidate), digest, data)
        state.fresh = False
        self.executor.submit(slot, task)

    def _begin(self, state: _Slot, candidate: Candidate) -> None:
        """`candidate` starts on the slot's worker now: an attempt, and the watchdog's clock."""
        self.attempts[candidate.id] = self.attempts.get(candidate.id, 0) + 1
        state.running = _Running(candidate, time.monotonic() + watchdog_s(candidate, self.timeout_floor_s), now())

    def _replace(self, slot: int) -> None:
        """Kills the slot's worker and starts another; a task sent ahead, never started, goes back first in
        line without counting as an attempt."""
        queued = self.slots[slot].queued
        if queued is not None:
            self.ready.add([queued])
        self.executor.kill(slot)
        self._start(slot)
        self.replaced.add(slot)

    def _watchdog(self) -> None:
        clock = time.monotonic()
        for slot, state in list(self.slots.items()):
            if state.running is not None and clock > state.running.deadline:
                candidate, started_at = state.running.candidate, state.running.started_at
                limit = watchdog_s(candidate, self.timeout_floor_s)
                self._replace(slot)
                self._failed(candidate, started_at, TIMEOUT, f"no result after {limit:.1f} s (the watchdog's "
                             "limit); the worker was killed", state.facts.label)
            elif state.facts is None and clock > state.startup_deadline:
                raise NoDeviceError(f"a worker (slot {slot}) did not open its GPU within {STARTUP_TIMEOUT_S:.0f} s")

    def _handle(self, slot: int, kind: str, value: Any) -> None:
        state = self.slots[slot]
        if kind == "ready":
            self._ready(slot, value)
        elif kind == "error":
            raise NoDeviceError(f"a worker could not open its GPU (slot {slot}): {value}")
        elif kind == "outcome":
            done, state.running = state.running, None
            # The worker's unloads are mirrored as tasks are sent (_send); only a failed load is news.
            digest = done.candidate.source.digest
            if value.load_failed:
                state.modules.pop(digest, None)
            elif digest in state.modules:
                state.modules[digest] = True
            self.summary.busy_s += value.busy_s
            if self.race and value.result is not None:  # before the next tasks go out, so they race against it
                self._lower_race_bound(value.result)
            if value.replace_worker:
                self._replace(slot)
            elif state.queued is not None:
                self._begin(state, state.queued)
                state.queued = None
            self._dispatch()  # the workers' next tasks go out before this result is committed
            if value.result is not None:
                self._record(done.candidate, done.started_at, outcome=value, device=state.facts.label)
            else:
                self._failed(done.candidate, done.started_at, value.reason, value.error, state.facts.label)
        elif kind == "died":
            if state.running is None and state.facts is None:
                raise NoDeviceError(f"a worker died opening its GPU (slot {slot}): {value}")
            running = state.running
            self._replace(slot)
            if running is not None:
                self._failed(running.candidate, running.started_at, DIED, value, state.facts.label)

    def _timeout(self) -> float:
        deadlines = [s.running.deadline for s in self.slots.values() if s.running is not None]
        deadlines += [s.startup_deadline for s in self.slots.values() if s.facts is None]
        wait = max(0.0, min(deadlines) - time.monotonic()) if deadlines else 1.0
        return min(wait, POLL_S) if self.compiles else wait

    def loop(self) -> None:
        for slot in self.executor.initial_slots():
            self._start(slot)
        try:
            while self.remaining:
                self._collect_compiles()
                self._dispatch()
                self.replaced.clear()
                for slot, kind, value in self.executor.events(self._timeout()):
                    if slot not in self.replaced:  # else it is the replaced worker's (a Ray actor's second call)
                        self._handle(slot, kind, value)
                self._watchdog()
        finally:
            if self.pool is not None:
                self.pool.shutdown(wait=False, cancel_futures=True)


def run(candidates: list[Candidate], store: Store, executor: Executor, *, progress: Progress | None = None,
        timeout_floor_s: float = TIMEOUT_FLOOR_S, compile_workers: int = 2, race: bool = False) -> SweepSummary:
    """Runs every candidate not yet in `store` on `executor`'s workers; returns what it did. `race`: each
    candidate races the lowest CI upper bound so far (see the module docstring)."""
    started = time.perf_counter()
    done = store.done_ids()
    todo = list({c.id: c for c in candidates if c.id not in done}.values())  # a candidate listed twice runs once
    summary = SweepSummary(str(store.path), len(candidates), len(candidates) - len(todo))
    progress = progress or Progress(len(todo), show=False)
    try:
        if todo:
            _Run(todo, store, executor, progress, summary, timeout_floor_s, compile_workers, race).loop()
    finally:
        executor.close()
        progress.close()
    summary.wall_s = time.perf_counter() - started
    return summary
