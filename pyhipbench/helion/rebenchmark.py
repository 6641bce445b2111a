"""Rebenchmark: Helion's `autotune_benchmark_fn`, the candidates raced and their ties held, by the engine.

Helion re-benchmarks the configs near the best (mid-search, and its
finalists at the end) by calling `autotune_benchmark_fn(fns, *, repeat,
desc=None)` and takes the lowest time it returns. Here the candidates go
through the tuning engine as `tune()` sends callables: raced against the best
so far, the ones tied with the fastest measured again under sustained load.
Each candidate's time is the engine's reading for a tuner that keeps the
lowest (ranking.reported_us: a tie's scaled by its sustained median, so the
lowest is the tie round's winner; any other's its screen median). Helion's
`repeat` (a fixed call count sized for its own timer) is not used: each
measurement stops by pyhipbench's stopping rule.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from .._device.device import Device
from .._measure.callable import callable_device
from .._progress import Progress
from .._tuning.contenders import CallContender
from .._tuning.engine import Policy, run_trials
from .._tuning.ranking import reported_us
from .._tuning.ties import tied
from .._tuning.trial import Trial
from .._values import show
from ..errors import BenchError
from .ledger import Ledger

__all__ = ["Rebenchmark"]

log = logging.getLogger("pyhipbench.helion")


class Rebenchmark:
    """Helion's `autotune_benchmark_fn`: measures with `policy` (race, tie round) on `device` (None:
    bench_callable's default); counts into `ledger`."""

    def __init__(self, policy: Policy, device: Device | None, ledger: Ledger) -> None:
        self.policy, self.device, self.ledger = policy, device, ledger

    def __call__(self, fns: Sequence[Callable[[], object]], *, repeat: int, desc: str | None = None) -> list[float]:
        """Each of `fns`' median kernel time per call, ms, in their order (inf for one that raised or failed
        to measure: a warning line names it, the others keep their times). BenchError for `fns` that are
        not a list of callables or a `repeat` that is not a positive int."""
        if not isinstance(fns, (list, tuple)) or not fns or not all(callable(fn) for fn in fns):
            raise BenchError(f"autotune_benchmark_fn fns={show(fns)}: expected a non-empty list of callables")
        if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
            raise BenchError(f"autotune_benchmark_fn repeat={show(repeat)}: expected an int >= 1")
        what = desc or "rebenchmark"
        device = callable_device(self.device)
        trials = [Trial(f"{what} #{i}", CallContender(fn, device, f"{what} #{i}")) for i, fn in enumerate(fns)]
        started = time.perf_counter()
        try:
            run_trials(trials, self.policy, device, Progress(len(trials), show=False))
        finally:
            self.ledger.rebenchmarks += 1
            self.ledger.rebenchmark_candidates += len(trials)
            self.ledger.rebenchmark_s += time.perf_counter() - started
        for trial in trials:
            if trial.error is not None and trial.result is None:
                log.warning("pyhipbench.helion: %s failed: %s", trial.label, trial.error)
        times_ms = [us / 1000 for us in reported_us(trials)]
        if tied(trials):
            self.ledger.tie_rounds += 1
        return times_ms
