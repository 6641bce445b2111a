"""The compile pool: CPU processes that compile ahead of the GPU (and emit LLVM code for codegen), started once
and reused.

Each worker is a Python process (worker.py), forked from its environment's
fork server (forkserver.py: Python, pyhipbench and what `warm` imported are
loaded there once), that opens no GPU (it compiles for a target it is
handed) and runs one task at a time: a picklable function and its arguments.
A worker takes only tasks submitted in the environment (os.environ) it
started in: a library path or a compiler's variable set since gets fresh
workers, from a server of their own. Every task ends in a `TaskOutcome`,
never an exception: its value, or why it failed. What the function raises is
that task's failure; a task that runs past its timeout has its worker killed,
and a task whose worker dies (an LLVM abort, a segfault, the OOM killer)
fails with the exit status. Either way only that task is lost: a new worker
takes the next one. Workers start when there is work for them and stay until
the process exits (or `close()`), so a tuner pays their start-up once per
process, not once per tuning. A forked child starts its own workers: its
parent's are the parent's.

One dispatcher thread moves tasks to idle workers and replies to futures, so
results stream in while the caller measures.
"""
from __future__ import annotations

import atexit
import ctypes
import os
import pickle
import signal
import sys
import threading
import time
import traceback
import weakref
from collections import Counter, deque
from concurrent.futures import Future
from dataclasses import dataclass, field
from multiprocessing import Pipe
from multiprocessing.connection import Connection, wait
from typing import Any, Callable

from .forkserver import ForkedProcess, ForkServer

_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

__all__ = ["CompilePool", "TaskOutcome", "shared_pool", "default_workers", "die_with_parent", "unexpected"]


def default_workers() -> int:
    """The CPUs this process may run on, less one for the process that measures (at least 1)."""
    return max(1, len(os.sched_getaffinity(0)) - 1)


def unexpected(error: BaseException) -> str:
    """An exception pyhipbench did not expect (a bug, a library's own), in words: its type, message and where
    it was raised."""
    where = traceback.extract_tb(error.__traceback__)[-1]
    return f"{type(error).__name__}: {error} (at {where.filename}:{where.lineno})"


def die_with_parent() -> None:
    """Linux: the kernel sends this process SIGKILL when its parent dies (kill -9 of the tuner)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


# A worker not ready this long after it was asked for: its fork server is stuck (a warm-up's import hangs).
_START_LIMIT_S = 60.0

ENDINGS = ("ok", "raised", "timeout", "died", "unsent", "closed")


@dataclass(frozen=True)
class TaskOutcome:
    """How a task ended (`ended`, one of ENDINGS: it returned, it raised, it ran past its timeout, its worker
    died, it could not be sent, the pool closed first): `value` (what the function returned) or `error` (one
    line saying what happened); `queue_s`: seconds from submit to a worker taking it; `run_s`: seconds in the
    worker (to the timeout or the death, for those); `exit_code`: for a task whose worker died running it, the
    worker's exit status (negative: the signal that killed it), for a caller that words the death itself."""
    value: Any = None
    error: str | None = None
    queue_s: float = 0.0
    run_s: float = 0.0
    ended: str = "ok"
    exit_code: int | None = None

    @property
    def ok(self) -> bool:
        return self.ended == "ok"


@dataclass(eq=False)
class _Task:
    function: Callable[..., Any]
    args: tuple[Any, ...]
    timeout_s: float | None
    env: tuple[tuple[str, str], ...]  # the environment at submit: a worker started in another one does not take it
    future: Future = field(default_factory=Future)
    submitted: float = field(default_factory=time.perf_counter)
    started: float = 0.0


@dataclass(eq=False)
class _Worker:
    process: ForkedProcess
    requests: Connection
    replies: Connection  # also how its death shows: the pipe's end
    env: tuple[tuple[str, str], ...]
    spawned: float
    ready: bool = False
    task: _Task | None = None


class CompilePool:
    """Up to `workers` compile processes. `submit` returns a Future of a TaskOutcome. `startup_s`: the seconds
    each worker took from spawn to ready, in start order (what the pool's start-up cost)."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._closed = False
        self._start_afresh()
        _pools.add(self)

    def _start_afresh(self) -> None:
        """No workers, no tasks: a new pool's state, and a forked child's (whose parent's workers, pipes and
        dispatcher thread are not its own; the parent still owns and ends those workers)."""
        self.startup_s: list[float] = []
        self._lock = threading.RLock()  # a future's callback may submit again
        self._pending: deque[_Task] = deque()
        self._live: list[_Worker] = []
        self._servers: dict[tuple[tuple[str, str], ...], ForkServer] = {}  # by environment
        self._wake_read, self._wake_write = Pipe(duplex=False)
        self._thread: threading.Thread | None = None

    def _forget_parents_workers(self) -> None:
        for worker in self._live:
            worker.requests.close()
            worker.replies.close()
        for server in self._servers.values():
            server.socket.close()
        self._wake_read.close()
        self._wake_write.close()
        self._start_afresh()

    def submit(self, function: Callable[..., Any], *args: Any, timeout_s: float | None = None) -> Future:
        """Runs `function(*args)` in a worker; `timeout_s`: its limit once a worker has it (None: none)."""
        task = _Task(function, args, timeout_s, _environment())
        with self._lock:
            if self._closed:
                raise RuntimeError("the compile pool is closed")
            self._pending.append(task)
            if self._thread is None:
                self._thread = threading.Thread(target=self._dispatch, name="pyhipbench-compile-pool", daemon=True)
                self._thread.start()
        self._wake_write.send_bytes(b"")
        return task.future

    def warm(self, function: Callable[..., Any], *args: Any) -> None:
        """Runs `function(*args)` (an import the tasks to come will need) once, in the fork server of this
        environment, started now if need be: every worker forked after it starts with that done. Returns at
        once; a warm-up that fails or cannot be sent is only no head start."""
        with self._lock:
            if self._closed:
                return
            try:
                self._server(_environment()).warm(function, *args)
            except (OSError, pickle.PicklingError, AttributeError, TypeError):
                pass

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Kills the workers; tasks not finished end with an error saying so."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            tasks = list(self._pending) + [w.task for w in self._live if w.task is not None]
            self._pending.clear()
            workers, self._live = self._live, []
            servers, self._servers = list(self._servers.values()), {}
        for worker in workers:
            self._kill(worker)
        for server in servers:
            server.close()
        for task in tasks:
            self._finish(task, TaskOutcome(error="the compile pool closed before it ran",
                                           queue_s=time.perf_counter() - task.submitted, ended="closed"))
        self._wake_write.send_bytes(b"")

    # The dispatcher thread from here on.

    def _dispatch(self) -> None:
        while True:
            with self._lock:
                if self._closed:
                    return
                self._assign()
                servers = [server for server in self._servers.values() if not server.ended]
                waitables = [self._wake_read, *servers] + [w.replies for w in self._live]
                deadlines = [w.task.started + w.task.timeout_s for w in self._live
                             if w.task is not None and w.task.timeout_s is not None]
                deadlines += [w.spawned + _START_LIMIT_S for w in self._live if not w.ready]
            timeout = None if not deadlines else max(0.0, min(deadlines) - time.perf_counter())
            ready = wait(waitables, timeout)
            if self._wake_read in ready:
                while self._wake_read.poll():
                    self._wake_read.recv_bytes()
            with self._lock:
                if self._closed:
                    return
                for server in servers:
                    if server in ready:
                        server.read()
                for worker in list(self._live):
                    self._service(worker)
                self._end_stuck_servers()

    def _assign(self) -> None:
        """Pending tasks to idle workers started in their environment (an idle worker of an environment no
        longer asked for, or beyond the pool's size, is ended); new workers for what waits beyond them."""
        for worker in list(self._live):
            if not worker.ready or worker.task is not None:
                continue
            task = next((t for t in self._pending if t.env == worker.env), None)
            if task is None:
                if self._pending or len(self._live) > self.workers:
                    self._kill(worker)
                    self._live.remove(worker)
                continue
            self._pending.remove(task)
            started = time.perf_counter()
            try:
                request = pickle.dumps((task.function, task.args))
            except Exception as e:  # a task that does not pickle: its failure, the worker is fine
                self._finish(task, TaskOutcome(error=f"it cannot be sent to a compile worker: "
                                               f"{type(e).__name__}: {e}", queue_s=started - task.submitted,
                                               ended="unsent"))
                continue
            try:
                worker.requests.send_bytes(request)
            except OSError:  # the worker died idle, found only now: the task waits for another
                self._pending.appendleft(task)
                self._kill(worker)
                self._live.remove(worker)
                continue
            task.started = started
            worker.task = task
        waiting = Counter(t.env for t in self._pending)
        newest = next(reversed(self._servers), None)
        for env in [e for e in self._servers if e != newest and e not in waiting]:
            if not any(w.env == env for w in self._live):  # an environment no longer asked for
                self._servers.pop(env).close()
        for env, count in waiting.items():
            free = sum(1 for w in self._live if w.env == env and w.task is None)  # starting, or idle
            for _ in range(count - free):
                if len(self._live) >= self.workers or not self._spawn(env):
                    return

    def _spawn(self, env: tuple[tuple[str, str], ...]) -> bool:
        """A worker forked from `env`'s fork server (started first if need be). False when it cannot start
        (what waits has failed)."""
        try:
            requests, replies, process = self._server(env).fork()
        except OSError as e:  # no interpreter there, or no process to be had
            self._servers.pop(env, None)
            self._fail_pending(f"cannot start a compile worker ({sys.executable}): {e}")
            return False
        worker = _Worker(process, requests, replies, env, time.perf_counter())
        worker.requests.send(list(sys.path))  # the worker imports kernels' modules as this process does
        self._live.append(worker)
        return True

    def _server(self, env: tuple[tuple[str, str], ...]) -> ForkServer:
        """`env`'s fork server, started if there is none or it ended: a fresh interpreter running
        forkserver.py, not multiprocessing's spawn, which would run the caller's __main__ script again in
        it. OSError when it cannot start."""
        server = self._servers.get(env)
        if server is None or server.ended or not server.alive:
            if server is not None:
                server.close()
                del self._servers[env]
            server = self._servers[env] = ForkServer(dict(env), _PACKAGE_ROOT)  # the newest: kept while idle
        return server

    def _end_stuck_servers(self) -> None:
        """A worker not ready long after it was asked for: its server is stuck (a warm-up hangs). The server
        and its workers end, and what waits in that environment fails; a later task gets a fresh server."""
        now = time.perf_counter()
        for worker in list(self._live):
            if worker.ready or now < worker.spawned + _START_LIMIT_S or worker not in self._live:
                continue
            stuck = worker.env
            server = self._servers.pop(stuck, None)
            if server is not None:
                server.close()  # first: its workers die with it, and none waits for a status it cannot send
            for other in [w for w in self._live if w.env == stuck]:
                self._kill(other)
                self._live.remove(other)
            waiting = [t for t in self._pending if t.env == stuck]
            for task in waiting:
                self._pending.remove(task)
                self._finish(task, TaskOutcome(error=f"no compile worker started within {_START_LIMIT_S:g} s "
                                               "(an import made ahead for the workers hangs?)",
                                               queue_s=now - task.submitted, ended="died"))

    @staticmethod
    def _kill(worker: _Worker) -> None:
        worker.process.kill()
        worker.process.wait()
        worker.requests.close()
        worker.replies.close()

    def _service(self, worker: _Worker) -> None:
        """The worker's news: ready, a reply, its death, or its task's timeout."""
        now = time.perf_counter()
        try:
            has_reply = worker.replies.poll()
            reply = worker.replies.recv() if has_reply else None
        except (EOFError, OSError):
            has_reply, reply = False, None
            dead = True
        else:
            dead = False
        if reply == ("ready",):
            worker.ready = True
            self.startup_s.append(now - worker.spawned)
            return
        task = worker.task
        if has_reply and task is not None:
            worker.task = None
            status, value = reply
            timing = {"queue_s": task.started - task.submitted, "run_s": now - task.started}
            self._finish(task, TaskOutcome(value=value, **timing) if status == "ok"
                         else TaskOutcome(error=value, **timing, ended="raised"))
            return
        if dead:
            self._kill(worker)
            self._live.remove(worker)
            status = _exit_status(worker.process.returncode)
            if task is not None:
                self._finish(task, TaskOutcome(error=f"its compile worker died ({status})",
                                               queue_s=task.started - task.submitted, run_s=now - task.started,
                                               ended="died", exit_code=worker.process.returncode))
            elif not worker.ready:
                self._fail_pending(f"a compile worker died starting ({status}; its error is on stderr)")
            return
        if task is not None and task.timeout_s is not None and now >= task.started + task.timeout_s:
            self._kill(worker)
            self._live.remove(worker)
            self._finish(task, TaskOutcome(error=f"it ran past the compile timeout of {task.timeout_s:g} s; its "
                                           "worker was killed", queue_s=task.started - task.submitted,
                                           run_s=now - task.started, ended="timeout"))

    def _fail_pending(self, why: str) -> None:
        """A worker that cannot start fails what waits (starting another would fail the same way)."""
        while self._pending:
            task = self._pending.popleft()
            self._finish(task, TaskOutcome(error=why, queue_s=time.perf_counter() - task.submitted, ended="died"))

    @staticmethod
    def _finish(task: _Task, outcome: TaskOutcome) -> None:
        if not task.future.done():
            task.future.set_result(outcome)


def _environment() -> tuple[tuple[str, str], ...]:
    """This process's environment as a task is keyed by: a worker serves only tasks of its own."""
    return tuple(sorted(os.environ.items()))


def _exit_status(code: int | None) -> str:
    if code is None:  # its fork server ended before it could say
        return "exit status unknown"
    if code < 0:
        try:
            return f"signal {-code}, {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit status {code}"


_pools: weakref.WeakSet[CompilePool] = weakref.WeakSet()
_shared: dict[str, CompilePool] = {}
_shared_lock = threading.Lock()


def _start_afresh_in_child() -> None:
    global _shared_lock
    _shared_lock = threading.Lock()  # another thread may have held it at the fork
    for pool in list(_pools):
        pool._forget_parents_workers()


os.register_at_fork(after_in_child=_start_afresh_in_child)


def shared_pool(workers: int, use: str = "compile") -> CompilePool:
    """The process's pool for `use`, reused by all its tasks; `workers` is its size from now on. "compile":
    every tuning's and sweep's compiles ahead of the GPU; codegen's LLVM emission has a pool of its own, so
    that a compile_ir never waits behind a tuning's queue."""
    with _shared_lock:
        pool = _shared.get(use)
        if pool is None or pool.closed:
            pool = _shared[use] = CompilePool(workers)
            atexit.register(pool.close)
        pool.workers = workers
        return pool
