"""Trial: one candidate on its way through the engine, and Contender, what the engine asks of it."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

from .._measure.options import BenchOptions
from .._measure.result import Result

__all__ = ["Contender", "Trial"]


class Contender(Protocol):
    """A candidate as the engine measures it: a kernel launch, a chain, a callable, a source to compile, a
    Triton config."""

    def start_compile(self) -> None:
        """Its compile started ahead (in the compile pool), where it has one; returns at once. Raises
        pyhipbench.Error for what cannot compile."""

    def finish_compile(self) -> str | None:
        """Its compile waited for (or made here, where no worker can); a note on where it compiled, or None.
        Raises pyhipbench.Error for a failed compile."""

    def prepare(self) -> None:
        """Host work before the first measurement (load its code, check its launch); may run on a thread
        while the GPU measures another candidate. Raises pyhipbench.Error for what cannot run."""

    def measure(self, options: BenchOptions) -> Result:
        """One measurement with `options` (racing's bound and the tie round's hold set by the engine)."""

    def release(self) -> None:
        """What `prepare` made, freed (its module unloaded); called once, after the last measurement."""


@dataclass
class Trial:
    """`contender`'s results so far: its screen `result` or the `error` that stopped it, its `sustained`
    measurement in the tie round, a `note` on how it ran, and the seconds it took preparing and measuring
    (`measure_s`)."""
    label: str
    contender: Contender | None  # None: it failed before the engine (a compile, a specialisation)
    error: str | None = None
    note: str | None = None
    result: Result | None = None
    sustained: Result | None = None
    measure_s: float = 0.0

    def failed(self, error: str) -> None:
        """The first failure stands: a later one follows from it."""
        self.error = self.error or error

    def noted(self, note: str) -> None:
        self.note = note if self.note is None else f"{self.note}; {note}"

    def timed_prepare(self) -> None:
        """The contender prepared; its seconds count into `measure_s`. Raises as `prepare` does."""
        assert self.contender is not None
        started = time.perf_counter()
        try:
            self.contender.prepare()
        finally:
            self.measure_s += time.perf_counter() - started

    def timed_measure(self, options: BenchOptions) -> Result:
        """One measurement; its seconds count into `measure_s`. Raises as `measure` does."""
        assert self.contender is not None
        started = time.perf_counter()
        try:
            return self.contender.measure(options)
        finally:
            self.measure_s += time.perf_counter() - started
