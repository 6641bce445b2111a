"""When the GPUs measure while code is still compiling.

A GPU left idle between candidates drops its clock (an idle H200 falls from
1980 to 345 MHz), and the next candidate starts on the ramp. So ready
candidates are held while compiles are in flight, and measured back to back
once the ones held would keep the GPUs busy until the compiles end:

    ready x (seconds a candidate takes to measure) / GPUs >= compiles in flight / (compiles ended per second)

each side estimated from what the sweep has seen so far. Before a candidate
has been measured its time is unknown, so the first candidates start when the
last compile ends. With nothing compiling, nothing is held.
"""
from __future__ import annotations

import time

__all__ = ["MeasureGate"]


class MeasureGate:
    """The estimates: compiles ended since the first began, candidates measured and their GPU seconds."""

    def __init__(self) -> None:
        self.compiles_began: float | None = None
        self.compiles_ended = 0
        self.measured = 0
        self.busy_s = 0.0

    def compiling(self) -> None:
        """The first compile began (later calls change nothing)."""
        if self.compiles_began is None:
            self.compiles_began = time.monotonic()

    def compiled(self, count: int) -> None:
        self.compiles_ended += count

    def measured_one(self, busy_s: float) -> None:
        self.measured += 1
        self.busy_s += busy_s

    def open(self, ready: int, in_flight: int, gpus: int) -> bool:
        """Whether the `ready` candidates go to the GPUs now, with `in_flight` compiles still running."""
        if not in_flight:
            return True
        if not self.measured or not self.compiles_ended or self.compiles_began is None:
            return False
        per_second = self.compiles_ended / max(time.monotonic() - self.compiles_began, 1e-9)
        return ready * (self.busy_s / self.measured) / max(gpus, 1) >= in_flight / per_second
