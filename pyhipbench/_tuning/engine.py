"""The engine: trials screened back to back, each prepared ahead and raced, then the tie round, then the pick.

1. Screen. Each trial is measured in order with the policy's options, racing
   the lowest CI upper bound so far (racing.py). Where host work stays out of
   the timer's samples (Resolved.host_work_hidden), PREPARE_THREADS threads
   prepare the trials in order ahead of the one measuring (a load is part
   Python, part driver call, and the measurement releases the GIL); under
   events each is prepared just before its measurement.
2. The tie round (ties.py): the trials tied with the fastest, measured again
   under sustained load.
3. Every contender released; the winner is the fastest by ranking.py.

A trial that fails anywhere keeps its error (a failed tie keeps its screen
result and says why); the others go on.
"""
from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial

from .._device.device import Device
from .._measure.options import BenchOptions
from .._measure.resolved import resolve
from .._progress import Progress
from .._values import real, show
from ..errors import BenchError, Error
from .ahead import PreparedAhead
from .racing import RaceBound
from .ranking import ranked_indices
from .ties import hold_ties
from .trial import Trial

__all__ = ["PREPARE_THREADS", "Policy", "run_trials"]

PREPARE_THREADS = 2  # a prepare's driver call overlaps the next one's Python


@dataclass(frozen=True)
class Policy:
    """How trials are measured: `options` for every screen measurement; `race`: stop a trial once it is
    surely slower than the best so far; `tie_hold_s`: the tie round's first hold, s (None or 0: no round)."""
    options: BenchOptions
    race: bool = True
    tie_hold_s: float | None = 0.1

    @classmethod
    def checked(cls, options: BenchOptions, race: object, tie_hold_s: object) -> Policy:
        """The policy with `race` and `tie_hold_s` checked (BenchError naming the value); a hold of 0 is None."""
        if not isinstance(race, bool):
            raise BenchError(f"race={show(race)}: expected True (the default) or False")
        hold_s = None if tie_hold_s is None else real("tie_hold_s", tie_hold_s, minimum=0) or None
        return cls(options, race, hold_s)


def run_trials(trials: Sequence[Trial], policy: Policy, device: Device, progress: Progress) -> list[int]:
    """Every trial measured (screen, tie round) and released; the indices of those that ran, the winner
    first (ranking.py; empty when none ran)."""
    try:
        _screen(trials, policy, device, progress)
        hold_ties(trials, policy.options, policy.tie_hold_s, policy.race)
    finally:
        for trial in trials:  # the prepare threads have ended: nothing is loading
            if trial.contender is not None:
                trial.contender.release()
    return ranked_indices(trials)


def _screen(trials: Sequence[Trial], policy: Policy, device: Device, progress: Progress) -> None:
    bound = RaceBound(policy.race)
    ahead: PreparedAhead[None] = PreparedAhead()
    with ThreadPoolExecutor(PREPARE_THREADS, thread_name_prefix="pyhipbench prepare-ahead") as preparing:
        if resolve(policy.options, device).host_work_hidden:
            for i, trial in enumerate(trials):
                ahead.start(i, preparing, partial(_prepared, trial))
        for i, trial in enumerate(trials):
            ahead.take(i, partial(_prepared, trial))
            if trial.error is None:
                try:
                    trial.result = trial.timed_measure(bound.options_for(policy.options))
                except Error as e:
                    trial.failed(f"{type(e).__name__}: {e}")
            if trial.result is None:
                progress.failure()
            else:
                bound.lower(trial.result.ci_us[1])
                progress.measured(trial.result.median_us, trial.label)


def _prepared(trial: Trial) -> None:
    """`trial`'s contender prepared unless it failed already; a failure becomes its error."""
    if trial.error is not None or trial.contender is None:
        return
    try:
        trial.timed_prepare()
    except Error as e:
        trial.failed(f"{type(e).__name__}: {e}")
