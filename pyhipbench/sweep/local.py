"""The local executor: one worker process per GPU of this machine.

Processes are spawned (multiprocessing's spawn context: a fresh interpreter,
no driver state inherited from a fork); each opens its own device by index
(worker.serve). A worker that faulted exits after its outcome; one that hangs
is killed by the scheduler's watchdog; one that dies (an abort, a segfault)
is seen through its process sentinel. Each is replaced by a fresh process on
the same GPU. Workers die with the sweep (PR_SET_PDEATHSIG), even on kill -9.
"""
from __future__ import annotations

import signal
from multiprocessing import get_context
from multiprocessing.connection import wait
from typing import Any

from .worker import DeviceFacts, Task, serve

__all__ = ["LocalPool"]


def death_reason(exitcode: int | None) -> str:
    """Why a worker process ended, in words."""
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"the worker process was killed by {name}"
    return f"the worker process exited with status {exitcode}"


class LocalPool:
    """Workers for the GPUs `gpus` (device indices) of `backend` (None: HIP, else CUDA);
    `gpus` None: every GPU the first worker's backend sees."""

    def __init__(self, backend: str | None = None, gpus: list[int] | None = None) -> None:
        self.backend = backend
        self.auto = gpus is None
        self.indices = list(gpus) if gpus is not None else [0]
        self.context = get_context("spawn")
        self.workers: dict[int, tuple[Any, Any]] = {}  # slot -> (process, connection)

    def initial_slots(self) -> list[int]:
        return list(range(len(self.indices)))

    def more_slots(self, facts: DeviceFacts) -> list[int]:
        if not self.auto or facts.device_count <= 1:
            return []
        self.auto = False
        self.indices = list(range(facts.device_count))
        return list(range(1, facts.device_count))

    def start(self, slot: int) -> None:
        self.kill(slot)
        ours, theirs = self.context.Pipe()
        process = self.context.Process(target=serve, args=(theirs, self.backend, self.indices[slot]),
                                       name=f"pyhipbench-sweep-gpu{self.indices[slot]}", daemon=True)
        process.start()
        theirs.close()
        self.workers[slot] = (process, ours)

    def submit(self, slot: int, task: Task) -> None:
        try:
            self.workers[slot][1].send(task)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the process died: its sentinel reports it

    def kill(self, slot: int) -> None:
        if slot not in self.workers:
            return
        process, connection = self.workers.pop(slot)
        if process.is_alive():
            process.kill()
        process.join()
        connection.close()

    def events(self, timeout: float) -> list[tuple[int, str, Any]]:
        waitables = {}
        for slot, (process, connection) in self.workers.items():
            waitables[connection] = slot
            waitables[process.sentinel] = slot
        out = []
        ready = set(wait(list(waitables), timeout))
        for slot in sorted({waitables[w] for w in ready}):
            process, connection = self.workers[slot]
            try:
                while connection.poll():
                    out.append((slot, *connection.recv()))
            except (EOFError, OSError):
                pass
            if out and out[-1][0] == slot:
                continue  # what it sent comes first; a worker that exits after an outcome is replaced for it
            if process.sentinel in ready or not process.is_alive():
                process.join()
                out.append((slot, "died", death_reason(process.exitcode)))
        return out

    def close(self) -> None:
        for slot in list(self.workers):
            self.kill(slot)
