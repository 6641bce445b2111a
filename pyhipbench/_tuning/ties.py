"""The tie round: the candidates tied with the fastest, measured again under sustained load.

A few ms from a cool start run at the boost clock, where such candidates tie;
over a sustained run a power-capped GPU lowers the clock more for a candidate
that draws more power. So each tie is measured again after a hold (its own
launches back to back, untimed), with no run discarded for its clock
(throttle_threshold 0: the sustained clock is what is read), and the fastest
there wins (ranking.py). Each tie is held and measured twice, in two passes:
fastest first, then in the reverse order, its sustained reading the two runs'
samples together, so a clock that drifts over the round (the GPU warming,
the cap settling) falls on every tie alike. The fastest holds `tie_hold_s`,
the time a limit takes to bite from a cool start, or half as long after a
screen whose kernels loaded the GPU that long (`loaded_s`), as every other
run, which follows a held candidate with the limit already on
(`switch_hold_s`, the second pass's runs too), but the second pass's first:
the tie held last runs again at once, under its own load; the second pass
races the sustained medians before it.
When the fastest's first hold leaves its median within the precision,
nothing limits the clock under this load and the others are not held. When
the first pass's fastest would still be the fastest at each other tie's
clock (its median scaled by its clock over theirs, where theirs was lower:
a kernel slows at most in proportion to its clock), no drift can have
favoured it and there is no second pass.
docs/measurement.md#ties-under-sustained-load has the figures.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from .._core import judge
from .._measure.options import BenchOptions
from .._measure.result import Result
from ..errors import Error
from .racing import RaceBound
from .trial import Trial

__all__ = ["TIE_HOLD_S", "TIE_LIMIT", "verdict", "tied", "loaded_s", "switch_hold_s", "hold_ties"]

TIE_HOLD_S = 0.1  # every tuner's default first hold, s: about the time a power limit takes to bite from a cool start
TIE_LIMIT = 4  # the most candidates measured again: each costs two holds and two runs at most


def verdict(result: Result, against_us: float) -> str:
    """Compare's rule (judge, at its default 2 % threshold) on `result` against a median of `against_us` µs:
    "faster", "slower", "same" or "can't tell"."""
    return judge(result.median_us / against_us - 1, result.ci_us[0] / against_us - 1,
                 result.ci_us[1] / against_us - 1)


def tied(trials: Sequence[Trial]) -> list[int]:
    """The trials tied with the fastest: those compare's rule does not call slower than its median (by more
    than 2 %, the whole CI above it), the TIE_LIMIT fastest; their indices, fastest first; none when only
    the fastest is."""
    ran = sorted(((i, t.result) for i, t in enumerate(trials) if t.result is not None),
                 key=lambda pair: pair[1].median_us)
    if not ran:
        return []
    best_us = ran[0][1].median_us
    tie = [i for i, r in ran if verdict(r, best_us) != "slower"]
    tie = tie[:TIE_LIMIT]
    return tie if len(tie) > 1 else []


def loaded_s(trials: Sequence[Trial]) -> float:
    """Seconds the trials' screen measurements kept the GPU running their kernels (each warm-up and timed
    launch at its median), back to back."""
    return sum((t.result.warmup + t.result.samples) * t.result.launches_per_sample * t.result.median_us
               for t in trials if t.result is not None) * 1e-6


def switch_hold_s(tie_hold_s: float) -> float:
    """The hold of a tie after the first, s. It follows a held candidate, so the power limit is on already and
    only its own clock has to settle: on the H200 a switch to the lower-power config settles in 40-60 ms; a
    switch to a higher-power one overshoots before it settles, which reads that one slower, on the side it
    loses on anyway."""
    return tie_hold_s / 2


def hold_ties(trials: Sequence[Trial], options: BenchOptions, tie_hold_s: float | None, race: bool) -> None:
    """The tie round over `trials` (screened with `options`): each tie's `sustained` set, or a note saying
    why not. Not when `tie_hold_s` is None or 0, or the screen held already (a hold_s option)."""
    if not tie_hold_s or options.hold_s > 0:
        return
    first_hold_s = tie_hold_s if loaded_s(trials) < tie_hold_s else switch_hold_s(tie_hold_s)
    first_pass: dict[int, Result] = {}
    ties = tied(trials)
    for n, i in enumerate(ties):  # fastest first
        hold_s = first_hold_s if n == 0 else switch_hold_s(tie_hold_s)
        sustained = _held(trials[i], options.replace(hold_s=hold_s, throttle_threshold=0))
        if sustained is None:
            continue
        screened = trials[i].result
        assert screened is not None
        if n == 0 and sustained.median_us <= screened.median_us * (1 + options.precision):
            # The load did not slow the fastest: no power or thermal limit bites, the first order stands.
            trials[i].noted(f"held {first_hold_s} s: {sustained.median_us:.3f} µs, within the precision of its "
                            "first median, so the ties were not held further")
            return
        first_pass[i] = sustained
    fastest = _fastest_at_every_clock(first_pass)
    if fastest is not None:
        for i, sustained in first_pass.items():
            trials[i].sustained = sustained
        trials[fastest].noted("the fastest of the first pass at every other tie's clock, so no second pass")
        return
    # The second pass, in the reverse order: a clock drifting over the round falls on each tie alike. Each run
    # holds again first, as a switch does, but the turn: the tie held last runs again at once, its own load still
    # on (a run sooner or later for every tie after it, the sums of each tie's two run times stay equal).
    bound = RaceBound(race)
    for i in reversed(first_pass):
        hold_s = 0 if i == ties[-1] else switch_hold_s(tie_hold_s)
        held = options.replace(hold_s=hold_s, throttle_threshold=0)
        second = _held(trials[i], bound.options_for(held))
        sustained = first_pass[i] if second is None else _together(first_pass[i], second)
        trials[i].sustained = sustained
        bound.lower(sustained.ci_us[1])


def _fastest_at_every_clock(readings: dict[int, Result]) -> int | None:
    """The first pass's fastest where it beats each other tie even at that tie's clock: its median times its
    clock over the tie's, where the tie's was lower (a kernel slows at most in proportion to its SM clock), under
    the tie's median. A clock that drifted over the pass then cannot have made it the fastest. None where it
    does not, fewer than two were held, or a clock is unread (AMD)."""
    if len(readings) < 2:
        return None
    fastest = min(readings, key=lambda i: readings[i].median_us)
    clock = readings[fastest].clock
    if clock is None:
        return None
    for i, reading in readings.items():
        if i == fastest:
            continue
        if reading.clock is None or readings[fastest].median_us * max(
                1.0, clock.mean_mhz / reading.clock.mean_mhz) >= reading.median_us:
            return None
    return fastest


def _held(trial: Trial, options: BenchOptions) -> Result | None:
    """`trial` measured with `options` (a hold), or None with a note saying why it failed (it ran before: the
    screen's result stays)."""
    try:
        return trial.timed_measure(options)
    except Error as e:
        trial.noted(f"sustained measurement failed: {type(e).__name__}: {e}")
        return None


def _together(first: Result, second: Result) -> Result:
    """One tie's two sustained runs as one result: their samples (and spans) together, their costs added; the
    second's stop reason and bound (a race stops that run early: a tie surely slower than one measured in
    both passes, whose reading then holds its first run's samples and the few of its second), the first's
    clock, per-kernel medians and energy."""
    span_us = None if first.span_us is None or second.span_us is None else \
        np.concatenate([first.span_us, second.span_us])
    return dataclasses.replace(first, times_us=np.concatenate([first.times_us, second.times_us]), span_us=span_us,
                               stop_reason=second.stop_reason, slower_than_us=second.slower_than_us,
                               warmup=first.warmup + second.warmup, wall_s=first.wall_s + second.wall_s,
                               throttled_samples=first.throttled_samples + second.throttled_samples)
