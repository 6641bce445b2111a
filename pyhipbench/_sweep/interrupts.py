"""Ctrl-C in a sweep: noticed between the scheduler's events, the workers shut down, then raised.

A terminal's Ctrl-C sends SIGINT to the sweep and to every process it
started (they share its process group). The sweep's own processes ignore it
(`children_ignore_sigint` around their start, `ignore_sigint` first thing in
them): the sweep alone decides what stops, and none of them prints a
traceback of its own. In the sweep, `InterruptGuard` turns the first SIGINT
into a request the scheduler sees at its next look (within POLL_S), once what
it is handling is done and each result that arrived committed; it then shuts
the workers and compilers down and raises `SweepInterrupted`. A second SIGINT
raises KeyboardInterrupt at once (the user insists: the processes still die
with the sweep, PR_SET_PDEATHSIG). A SIGINT handler of the caller's own is
left in place, and what it raises goes through the same shutdown.
"""
from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

__all__ = ["SweepInterrupted", "InterruptGuard", "children_ignore_sigint", "ignore_sigint", "POLL_S"]

POLL_S = 0.2  # the scheduler looks for an interrupt at least this often, seconds


class SweepInterrupted(KeyboardInterrupt):
    """A sweep stopped by Ctrl-C (SIGINT), after its workers and compilers were shut down.

    A KeyboardInterrupt, so that `except KeyboardInterrupt` (and nothing catching `Exception` or
    `pyhipbench.Error`) stops a tuner as it would have stopped anyway. `database`: the results database;
    `recorded`: the results it holds, each committed as it finished (none is lost); `summary`: what
    this call did before it was interrupted (a SweepSummary), or None if it was interrupted before the
    scheduler started. `sweep(..., resume=True)` continues from the results recorded."""

    def __init__(self, message: str, database: str, recorded: int, summary: Any = None) -> None:
        super().__init__(message)
        self.database, self.recorded, self.summary = database, recorded, summary

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.args[0], self.database, self.recorded, self.summary)


class InterruptGuard:
    """While entered (in the main thread, over Python's default SIGINT handler): the first SIGINT sets
    `requested`, the second raises KeyboardInterrupt. Elsewhere it changes nothing."""

    def __init__(self) -> None:
        self.requested = False
        self._previous: Any = None
        self._installed = False

    def __enter__(self) -> InterruptGuard:
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            self._previous = signal.signal(signal.SIGINT, self._handle)
            self._installed = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)
            self._installed = False

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def check(self) -> None:
        """KeyboardInterrupt if a SIGINT came."""
        if self.requested:
            raise KeyboardInterrupt


@contextmanager
def children_ignore_sigint() -> Iterator[None]:
    """SIGINT blocked in this thread while the block runs. A process started in it (spawned: fork and exec)
    inherits the mask: SIGINT stays blocked there until `ignore_sigint` runs in it, or for good in one that
    never calls it (a compiler pool's). A SIGINT meanwhile goes to another thread of this process, or
    waits for the block's end."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def ignore_sigint() -> None:
    """In a sweep's worker process: SIGINT ignored (the sweep ends it) and unblocked."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
