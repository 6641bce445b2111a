"""The numbers a tuner that keeps the lowest (Inductor, Helion) is given: the tie round's winner the lowest."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from pyhipbench._tuning.ranking import ranked_indices, reported_us
from pyhipbench._tuning.trial import Trial


def trial(label: str, screen_us: float | None, sustained_us: float | None = None) -> Trial:
    """A trial as the engine leaves it: its screen's median, its tie round's (a tie), or neither (failed)."""
    made = Trial(label, None)
    made.result = None if screen_us is None else SimpleNamespace(median_us=screen_us)
    made.sustained = None if sustained_us is None else SimpleNamespace(median_us=sustained_us)
    return made


def test_the_ties_read_the_fastest_screen_scaled_by_their_sustained_ratio_so_the_lowest_is_the_winner():
    trials = [trial("a", 3.0, 6.0), trial("b", 3.1, 4.0), trial("c", 5.0), trial("failed", None)]
    times_us = reported_us(trials)
    assert times_us[:3] == [pytest.approx(3.0 * 6 / 4), pytest.approx(3.0), 5.0] and math.isinf(times_us[3])
    assert min(range(3), key=times_us.__getitem__) == ranked_indices(trials)[0] == 1


def test_without_a_tie_round_each_reads_its_screen_median():
    assert reported_us([trial("a", 3.0), trial("b", 2.0), trial("failed", None)])[:2] == [3.0, 2.0]


def test_a_tie_whose_hold_failed_never_reads_below_the_held_ones_ranked_ahead_of_it():
    """The fastest screen (a) lost its hold: the engine ranks the held ties first, and so do the numbers."""
    trials = [trial("a", 2.0), trial("b", 3.0, 4.0), trial("c", 3.1, 5.0)]
    times_us = reported_us(trials)
    assert times_us == [pytest.approx(3.0 * 5 / 4), pytest.approx(3.0), pytest.approx(3.0 * 5 / 4)]
    assert min(range(3), key=times_us.__getitem__) == ranked_indices(trials)[0] == 1
