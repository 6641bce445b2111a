"""The ranking: the order of the trials that ran, the winner first."""
from __future__ import annotations

import math
from collections.abc import Sequence

from .trial import Trial

__all__ = ["rank_key", "ranked_indices", "reported_us"]


def rank_key(trial: Trial) -> tuple[int, float]:
    """A trial's place: those measured sustained (the ties) by that median, ahead of the rest by their
    screen median. Only for trials with a result."""
    assert trial.result is not None
    if trial.sustained is not None:
        return 0, trial.sustained.median_us
    return 1, trial.result.median_us


def ranked_indices(trials: Sequence[Trial]) -> list[int]:
    """The indices of the trials with a result, the winner first (equals in the order given)."""
    return sorted((i for i, t in enumerate(trials) if t.result is not None), key=lambda i: rank_key(trials[i]))


def reported_us(trials: Sequence[Trial]) -> list[float]:
    """Each trial's time, µs, for a tuner that keeps the lowest (Inductor, Helion), such that it keeps the
    engine's winner: a tie measured sustained reads the fastest tie's screen median times its sustained
    median over the winner's (the winner the lowest; the others at their measured ratio to it), any other
    trial its screen median, inf where none ran; then no trial reads below one ranked ahead of it (a tie
    whose hold failed ranks behind the held ones, however fast its screen)."""
    held = [t for t in trials if t.sustained is not None and t.result is not None]
    ranked = ranked_indices(trials)
    winner = trials[ranked[0]] if held else None
    fastest_us = min((t.result.median_us for t in held if t.result is not None), default=math.inf)
    times_us = []
    for trial in trials:
        if trial.result is None:
            times_us.append(math.inf)
        elif trial.sustained is not None and winner is not None and winner.sustained is not None:
            times_us.append(fastest_us * trial.sustained.median_us / winner.sustained.median_us)
        else:
            times_us.append(trial.result.median_us)
    floor_us = 0.0
    for i in ranked:  # the engine's order, kept: each at least the one before it
        times_us[i] = floor_us = max(times_us[i], floor_us)
    return times_us
