"""The local executor: one worker process per GPU of this machine, and a standby beside each.

Processes are spawned (multiprocessing's spawn context: a fresh interpreter,
no driver state inherited from a fork); each opens its own device by index
(worker.serve). A worker that faulted exits after its outcome; one that hangs
is killed by the scheduler's watchdog; one that dies (an abort, a segfault)
is seen through its process sentinel. Each is replaced on the same GPU.
Workers die with the sweep (PR_SET_PDEATHSIG), even on kill -9, and ignore
SIGINT (a terminal's Ctrl-C reaches the whole process group): the sweep
handles it and ends them (interrupts.py), `close()` killing each and awaiting
its exit.

Standby: once a GPU's worker has opened its device, a spare process is
started for that GPU, which opens the device too and waits. A replacement
takes the spare and a new spare starts in the background, so a fault, hang
or death does not wait on a process start, imports and a device open (~2.6 s
a replacement on an H200 without it). The old process is killed at once and
its exit awaited by a thread; the new worker is sent no task before that
exit, which releases the old context, so nothing of it runs while the new
one measures (the wait counts toward the task's watchdog limit). The cost:
one more process and device context per GPU, idle. A spare that cannot open
its device, or dies waiting, turns the standby off for that GPU: replacements
are then started afresh, as without it. A spare promoted before it has opened
its device (two replacements within its start-up) is from then on a worker
like a freshly started one: if it cannot open the device, that is the
sweep's error, as it would be for any worker. A candidate that faults twice in a
row uses the spare for its first replacement; the second waits for the rest
of the new spare's start.

Tasks go to a worker through a sender thread of its own: the scheduler sends
a task ahead to a busy worker, and a large code object must not make it wait
until that worker reads its pipe.
"""
from __future__ import annotations

import signal
import threading
from dataclasses import dataclass, field
from multiprocessing import get_context
from multiprocessing.connection import wait
from queue import SimpleQueue
from typing import Any

from .interrupts import children_ignore_sigint, ignore_sigint
from .worker import DeviceFacts, Task, serve

__all__ = ["LocalPool"]


def _serve(connection: Any, backend: str | None, index: int) -> None:
    """A worker process's main: worker.serve, deaf to SIGINT (the sweep stops it)."""
    ignore_sigint()
    serve(connection, backend, index)


def death_reason(exitcode: int | None) -> str:
    """Why a worker process ended, in words."""
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"the worker process was killed by {name}"
    return f"the worker process exited with status {exitcode}"


@dataclass
class _Process:
    """A worker process, its end of the pipe and the thread that sends it tasks."""
    process: Any
    connection: Any
    tasks: SimpleQueue = field(default_factory=SimpleQueue)  # Task, or None: the sender ends
    sender: threading.Thread | None = None
    facts: DeviceFacts | None = None  # a spare's, once it opened its device
    after: threading.Event | None = None  # set when the GPU's previous worker has exited: no task goes before
    gone: threading.Event = field(default_factory=threading.Event)  # set when this one has exited

    def __post_init__(self) -> None:
        self.sender = threading.Thread(target=self._send, name=f"{self.process.name}-sender", daemon=True)
        self.sender.start()

    def _send(self) -> None:
        while (task := self.tasks.get()) is not None:
            if self.after is not None:
                self.after.wait()  # the process before it on this GPU, and its device context, are gone
            try:
                self.connection.send(task)
            except (BrokenPipeError, ConnectionResetError, OSError):
                return  # the process died: its sentinel reports it

    def end(self) -> None:
        """Kills the process and waits for it to exit (its device context goes with it), then for the sender."""
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        self.tasks.put(None)
        self.sender.join()  # a send in progress fails: the reader is gone
        self.connection.close()
        self.gone.set()


class LocalPool:
    """Workers for the GPUs `gpus` (device indices) of `backend` (None: HIP, else CUDA);
    `gpus` None: every GPU the first worker's backend sees. `standby`: keep a spare process per GPU."""

    def __init__(self, backend: str | None = None, gpus: list[int] | None = None, *, standby: bool = True) -> None:
        self.backend = backend
        self.auto = gpus is None
        self.indices = list(gpus) if gpus is not None else [0]
        self.context = get_context("spawn")
        self.workers: dict[int, _Process] = {}
        self.spares: dict[int, _Process] = {}
        self.standby: dict[int, bool] = {}   # slot -> whether it may have a spare (False once one failed)
        self.default_standby = standby
        self.due: list[tuple[int, str, Any]] = []  # events to report at once (a promoted spare's "ready")
        self.exits: dict[int, threading.Event] = {}  # slot -> its killed worker's exit, until the next one starts
        self.reapers: list[threading.Thread] = []    # threads awaiting killed workers' exits

    def initial_slots(self) -> list[int]:
        return list(range(len(self.indices)))

    def more_slots(self, facts: DeviceFacts) -> list[int]:
        if not self.auto or facts.device_count <= 1:
            return []
        self.auto = False
        self.indices = list(range(facts.device_count))
        return list(range(1, facts.device_count))

    def _spawn(self, slot: int, role: str) -> _Process:
        ours, theirs = self.context.Pipe()
        process = self.context.Process(target=_serve, args=(theirs, self.backend, self.indices[slot]),
                                       name=f"pyhipbench-sweep-gpu{self.indices[slot]}-{role}", daemon=True)
        with children_ignore_sigint():  # from its first instruction, before _serve ignores it
            process.start()
        theirs.close()
        return _Process(process, ours)

    def start(self, slot: int) -> None:
        """The slot's worker: its spare if one is waiting (started afresh otherwise); it is sent no task before
        the one it replaces has exited."""
        self.kill(slot)
        spare = self.spares.pop(slot, None)
        if spare is not None and spare.process.is_alive():
            self.workers[slot] = spare
            if spare.facts is not None:
                self.due.append((slot, "ready", spare.facts))
            self._start_spare(slot)  # in the background: the promoted spare is already open
        else:
            if spare is not None:
                spare.end()
            self.workers[slot] = self._spawn(slot, "worker")
        self.workers[slot].after = self.exits.pop(slot, None)

    def _start_spare(self, slot: int) -> None:
        if self.standby.setdefault(slot, self.default_standby) and slot not in self.spares:
            self.spares[slot] = self._spawn(slot, "spare")

    def submit(self, slot: int, task: Task) -> None:
        self.workers[slot].tasks.put(task)

    def kill(self, slot: int) -> None:
        """SIGKILL at once; the exit (a hung kernel's context torn down) is awaited in a thread of its own, so
        the other GPUs' workers are not kept waiting, and the slot's next worker is sent tasks after it."""
        if slot not in self.workers:
            return
        old = self.workers.pop(slot)
        old.process.kill()
        self.exits[slot] = old.gone
        self.reapers = [r for r in self.reapers if r.is_alive()]
        self.reapers.append(threading.Thread(target=old.end, name=f"{old.process.name}-reaper", daemon=True))
        self.reapers[-1].start()

    def _spare_event(self, slot: int) -> None:
        """A spare opened its device (kept for its promotion), or failed to: no standby for that GPU."""
        spare = self.spares[slot]
        try:
            while spare.connection.poll():
                kind, value = spare.connection.recv()
                if kind != "ready":
                    break  # "error": it cannot open the device
                spare.facts = value
            else:
                if spare.process.is_alive():
                    return
        except (EOFError, OSError):  # it died
            pass
        self.standby[slot] = False
        del self.spares[slot]
        spare.end()

    def events(self, timeout_s: float) -> list[tuple[int, str, Any]]:
        if self.due:
            due, self.due = self.due, []
            return due
        waitables = {}
        for role, group in (("worker", self.workers), ("spare", self.spares)):
            for slot, member in group.items():
                waitables[member.connection] = waitables[member.process.sentinel] = (role, slot)
        out = []
        ready = set(wait(list(waitables), timeout_s))
        for role, slot in sorted({waitables[w] for w in ready}):
            if role == "spare":
                self._spare_event(slot)
                continue
            member = self.workers[slot]
            sent = []
            try:
                while member.connection.poll():
                    sent.append((slot, *member.connection.recv()))
            except (EOFError, OSError):
                pass
            out += sent
            if sent:
                if any(kind == "ready" for _slot, kind, _value in sent):
                    self._start_spare(slot)
                continue  # what it sent comes first; a worker that exits after an outcome is replaced for it
            if member.process.sentinel in ready or not member.process.is_alive():
                member.process.join()
                out.append((slot, "died", death_reason(member.process.exitcode)))
        return out

    def close(self) -> None:
        for group in (self.workers, self.spares):
            for slot in list(group):
                group.pop(slot).end()
        for reaper in self.reapers:
            reaper.join()
