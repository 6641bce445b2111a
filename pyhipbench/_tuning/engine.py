"""The engine: trials compiled ahead, screened back to back (each prepared ahead and raced), the tie round, the pick.

0. Compile (`compile_trials`). Every trial's compile is started (the compile
   pool compiles them in parallel), then each is waited for, in order. The
   screen starts once all have compiled, so the GPU measures them back to
   back rather than idling (its clock dropping) between compiles.
1. Screen. Each trial is measured in order with the policy's options, racing
   the lowest CI upper bound so far (racing.py). Where host work stays out of
   the timer's samples (Resolved.host_work_hidden, for every trial's timer), PREPARE_THREADS threads
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

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any

from .._device.device import Device
from .._measure.options import BenchOptions
from .._measure.resolved import resolve
from .._progress import Progress
from .._values import real, show
from ..errors import BenchError, Error
from .ahead import PreparedAhead
from .contenders import CallContender
from .racing import RaceBound
from .ranking import ranked_indices
from .ties import TIE_HOLD_S, hold_ties
from .trial import Contender, Trial

__all__ = ["PREPARE_THREADS", "Policy", "compile_trials", "run_trials"]

PREPARE_THREADS = 2  # a prepare's driver call overlaps the next one's Python


@dataclass(frozen=True)
class Policy:
    """How trials are measured: `options` for every screen measurement; `race`: stop a trial once it is
    surely slower than the best so far; `tie_hold_s`: the tie round's first hold, s (None or 0: no round)."""
    options: BenchOptions
    race: bool = True
    tie_hold_s: float | None = TIE_HOLD_S

    @classmethod
    def checked(cls, options: BenchOptions, race: object, tie_hold_s: object) -> Policy:
        """The policy with `race` and `tie_hold_s` checked (BenchError naming the value); a hold of 0 is None."""
        if not isinstance(race, bool):
            raise BenchError(f"race={show(race)}: expected True (the default) or False")
        hold_s = None if tie_hold_s is None else real("tie_hold_s", tie_hold_s, minimum=0) or None
        return cls(options, race, hold_s)

    @classmethod
    def from_keywords(cls, where: str, bench_options: dict[str, Any], race: object, tie_hold_s: object, *,
                      own_buffers: bool = False, leave_out: tuple[str, ...] = ()) -> Policy:
        """The policy of the tuner `where` (for messages) from bench()'s options as keywords, checked once:
        `slower_than_us` refused (racing sets it), and with `own_buffers` (candidates that own their
        buffers, which pyhipbench cannot rotate) cache='dirty-cold' refused. `leave_out`: options the tuner
        does not take."""
        if "slower_than_us" in bench_options:
            raise BenchError(f"{where} option slower_than_us={show(bench_options['slower_than_us'])}: racing sets it "
                             "to the best candidate's CI so far; expected race=True (the default) or race=False")
        options = BenchOptions.from_keywords(where, bench_options, leave_out=leave_out)
        if own_buffers and options.cache_state == "dirty-cold":
            raise BenchError(f"{where} cache='dirty-cold': its candidates' buffers are their own, so pyhipbench "
                             "cannot rotate them; expected 'clean-cold' or 'warm'")
        return cls.checked(options, race, tie_hold_s)


def compile_trials(trials: Sequence[Trial], progress: Progress) -> None:
    """Every trial's compile started, then each waited for in order; a failure becomes the trial's error, a
    note on where it compiled its note. One progress step per trial."""
    for trial in trials:
        _attempt(trial, lambda contender: contender.start_compile())
    for trial in trials:
        note = _attempt(trial, lambda contender: contender.finish_compile())
        if note:
            trial.noted(note)
        progress.done()


def _attempt(trial: Trial, step: Callable[[Contender], str | None]) -> str | None:
    """`step` of `trial`'s contender unless it failed already; an Error becomes its error."""
    if trial.error is not None or trial.contender is None:
        return None
    try:
        return step(trial.contender)
    except Error as e:
        trial.failed(f"{type(e).__name__}: {e}")
        return None


def run_trials(trials: Sequence[Trial], policy: Policy, device: Device, progress: Progress,
               bound: RaceBound | None = None) -> list[int]:
    """Every trial measured (screen, tie round) and released; the indices of those that ran, the winner
    first (ranking.py; empty when none ran). `bound`: the race's bound, carried over from earlier calls (a
    search's generations race the best of all before them) and lowered by this one's results; None: a
    bound of this call's own."""
    try:
        _screen(trials, policy, device, progress, RaceBound(policy.race) if bound is None else bound)
        hold_ties(trials, policy.options, policy.tie_hold_s, policy.race)
    finally:
        for trial in trials:  # the prepare threads have ended: nothing is loading
            if trial.contender is not None:
                trial.contender.release()
    return ranked_indices(trials)


def _screen(trials: Sequence[Trial], policy: Policy, device: Device, progress: Progress, bound: RaceBound) -> None:
    ahead: PreparedAhead[None] = PreparedAhead()
    with ThreadPoolExecutor(PREPARE_THREADS, thread_name_prefix="pyhipbench prepare-ahead") as preparing:
        if _host_work_hidden(trials, policy.options, device):
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


def _host_work_hidden(trials: Sequence[Trial], options: BenchOptions, device: Device) -> bool:
    """Whether host work beside any trial's samples stays out of them, with each trial's timer: a
    callable's (CallContender) is the one that times calls (events on AMD), a launch's the kernel timer."""
    calls = {isinstance(t.contender, CallContender) for t in trials}
    return all(resolve(options, device, calls=c).host_work_hidden for c in calls)


def _prepared(trial: Trial) -> None:
    """`trial`'s contender prepared unless it failed already; a failure becomes its error."""
    _attempt(trial, lambda _: trial.timed_prepare())
