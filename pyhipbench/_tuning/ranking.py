"""The ranking: the order of the trials that ran, the winner first."""
from __future__ import annotations

from collections.abc import Sequence

from .trial import Trial

__all__ = ["rank_key", "ranked_indices"]


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
