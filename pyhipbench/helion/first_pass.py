"""FirstPass: each candidate of Helion's search measured as it comes, racing the best of the whole search.

Helion's provider measures a batch's candidates one by one; each is one
trial through the tuning engine (engine.run_trials) with a RaceBound kept
for the whole search, so a candidate of any generation stops after a few
samples once it is surely slower than the best measured before it (its
median then is a rough one: Helion only needs to know it lost). No tie
round here: the finalists get one in the re-benchmark (rebenchmark.py).

Helion's searches move to any candidate that reads lower than the one they
stand on (by 0.1 %, `min_improvement_delta`) and stop when none does. Among
configs of one kernel many tie within a measurement's precision, and the
lowest of many readings of tied configs is always a little lower: read as
they come, such a search keeps walking on noise (docs/helion.md). So a
candidate reads below the best so far only when compare's rule calls it
faster (its median more than 2 % below the best's, its CI wholly below it:
the rule that decides the tie round's ties, and wider than the 1 % a median
moves between measurements far apart); one that is not reads the best's
time (its own when that is higher), and Helion's search then moves only on
what a measurement can tell apart.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable

from .._device.device import Device
from .._measure.callable import callable_device
from .._measure.result import Result
from .._progress import Progress
from .._tuning.contenders import CallContender
from .._tuning.engine import Policy, run_trials
from .._tuning.racing import RaceBound
from .._tuning.ties import verdict
from .._tuning.trial import Trial
from .ledger import Ledger

__all__ = ["FirstPass"]


class FirstPass:
    """Measures candidates with `policy`'s options, racing (where `policy.race`) the lowest CI upper bound
    of every candidate before; on `device` (None: bench_callable's default); counts into `ledger`."""

    def __init__(self, policy: Policy, device: Device | None, ledger: Ledger) -> None:
        self.policy = Policy(policy.options, policy.race, tie_hold_s=None)
        self.device, self.ledger = device, ledger
        self.bound = RaceBound(policy.race)
        self.best: Result | None = None  # the first reading, or the last that was faster than the best before

    def measure_ms(self, fn: Callable[[], object], label: str) -> tuple[float, str | None, CallContender]:
        """`fn`'s median kernel time per call, ms, as Helion's search reads it (the best so far's where it is
        lower but not faster by compare's rule; inf where it failed), the error that failed it (None when it
        ran), and the CallContender that measured it (`raised`: the exception `fn` raised, if any)."""
        device = callable_device(self.device)
        contender = CallContender(fn, device, label)
        trial = Trial(label, contender)
        started = time.perf_counter()
        try:
            run_trials([trial], self.policy, device, Progress(1, show=False), bound=self.bound)
        finally:
            self.ledger.measure_s += time.perf_counter() - started
        if trial.result is None:
            self.ledger.configs_failed += 1
            return math.inf, trial.error, contender
        self.ledger.configs_measured += 1
        self.ledger.stopped_slower += trial.result.stop_reason == "slower"
        return self._read_us(trial.result) / 1000, None, contender

    def _read_us(self, result: Result) -> float:
        """`result`'s time for Helion's search, µs: its median where it is the first or faster than the best
        so far by compare's rule (it becomes the best), else the higher of its median and the best's."""
        best = self.best
        if best is None or verdict(result, best.median_us) == "faster":
            self.best = result
            return result.median_us
        if result.median_us < best.median_us:
            self.ledger.read_as_best += 1
        return max(result.median_us, best.median_us)
