"""The compile pool: CPU processes that compile ahead of the GPU (and emit LLVM code for codegen), started once
and reused.

Each worker is a fresh Python process (worker.py) that opens no GPU (it
compiles for a target it is handed) and runs one task at a time: a picklable
function and its arguments. A worker takes only tasks submitted in the
environment (os.environ) it started in: a library path or a compiler's
variable set since gets fresh workers. Every task ends in a `TaskOutcome`, never an exception: its value,
or why it failed. What the function raises is that task's failure; a task that
runs past its timeout has its worker killed, and a task whose worker dies (an
LLVM abort, a segfault, the OOM killer) fails with the exit status. Either way
only that task is lost: a new worker takes the next one. Workers start when
there is work for them and stay until the process exits (or `close()`), so a
tuner pays their start-up (Python, Triton, the kernel's module) once per
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
import subprocess
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
    process: subprocess.Popen
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
        self._wake_read, self._wake_write = Pipe(duplex=False)
        self._thread: threading.Thread | None = None

    def _forget_parents_workers(self) -> None:
        for worker in self._live:
            worker.requests.close()
            worker.replies.close()
        self._wake_read.close()
        self._wake_write.close()
        self._start_afresh()

    def submit(self, function: Callable[..., Any], *args: Any, timeout_s: float | None = None) -> Future:
        """Runs `function(*args)` in a worker; `timeout_s`: its limit once a worker has it (None: none)."""
        task = _Task(function, args, timeout_s, tuple(sorted(os.environ.items())))
        with self._lock:
            if self._closed:
                raise RuntimeError("the compile pool is closed")
            self._pending.append(task)
            if self._thread is None:
                self._thread = threading.Thread(target=self._dispatch, name="pyhipbench-compile-pool", daemon=True)
                self._thread.start()
        self._wake_write.send_bytes(b"")
        return task.future

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
        for worker in workers:
            self._kill(worker)
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
                waitables = [self._wake_read] + [w.replies for w in self._live]
                deadlines = [w.task.started + w.task.timeout_s for w in self._live
                             if w.task is not None and w.task.timeout_s is not None]
            timeout = None if not deadlines else max(0.0, min(deadlines) - time.perf_counter())
            ready = wait(waitables, timeout)
            if self._wake_read in ready:
                while self._wake_read.poll():
                    self._wake_read.recv_bytes()
            with self._lock:
                if self._closed:
                    return
                for worker in list(self._live):
                    self._service(worker)

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
        for env, count in waiting.items():
            free = sum(1 for w in self._live if w.env == env and w.task is None)  # starting, or idle
            for _ in range(count - free):
                if len(self._live) >= self.workers or not self._spawn(env):
                    return

    def _spawn(self, env: tuple[tuple[str, str], ...]) -> bool:
        """A fresh interpreter running worker.py: not multiprocessing's spawn, which would run the caller's
        __main__ script again in it. In a session of its own, so a terminal's Ctrl-C reaches only the parent,
        which decides (close() kills the workers; they die with the parent too). False when it cannot start
        (what waits has failed)."""
        requests_read, requests_write = os.pipe()
        replies_read, replies_write = os.pipe()
        # This process's pyhipbench, whatever the working directory holds (-P: no directory put first).
        start = (f"import sys; sys.path.insert(0, {_PACKAGE_ROOT!r}); "
                 "from pyhipbench._compile.worker import main; main()")
        try:
            process = subprocess.Popen([sys.executable, "-P", "-c", start, str(requests_read), str(replies_write)],
                                       pass_fds=(requests_read, replies_write),
                                       stdin=subprocess.DEVNULL, start_new_session=True, env=dict(env))
        except OSError as e:  # no interpreter there, or no process to be had
            for fd in (requests_read, requests_write, replies_read, replies_write):
                os.close(fd)
            self._fail_pending(f"cannot start a compile worker ({sys.executable}): {e}")
            return False
        os.close(requests_read)
        os.close(replies_write)
        worker = _Worker(process, Connection(requests_write, readable=False), Connection(replies_read, writable=False),
                         env, time.perf_counter())
        worker.requests.send(list(sys.path))  # the worker imports kernels' modules as this process does
        self._live.append(worker)
        return True

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


def _exit_status(code: int | None) -> str:
    if code is not None and code < 0:
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
