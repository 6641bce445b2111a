"""The adaptive stopping rule on synthetic samples: when it stops, why, and its chunk sizes."""
from __future__ import annotations

import numpy as np
import pytest

import pyhipbench as hb
from pyhipbench._core import StopRule
from pyhipbench._measure.stats import summarize


def simulate(rule: StopRule, draw, seconds_per_sample: float = 0.0):
    """Feeds `rule` chunks from `draw(n)` as bench() does; returns (samples, reason)."""
    samples = np.empty(0)
    while True:
        chunk = rule.next_chunk(summarize(samples)) if len(samples) else rule.first_chunk
        samples = np.concatenate([samples, draw(chunk)])
        reason = rule.stop_reason(summarize(samples), len(samples) * seconds_per_sample)
        if reason:
            return samples, reason


def test_precise_kernel_stops_early_on_precision():
    rng = np.random.default_rng(0)
    samples, reason = simulate(StopRule(), lambda n: rng.normal(10.0, 0.05, n))  # ±0.5 % noise
    assert reason == "precision"
    assert len(samples) <= 32                       # two chunks at most
    assert summarize(samples).rel_ci <= 0.01


def test_noisy_kernel_takes_more_samples_and_still_reaches_the_target():
    rng = np.random.default_rng(1)
    samples, reason = simulate(StopRule(), lambda n: rng.lognormal(np.log(10.0), 0.2, n))
    assert reason == "precision" and len(samples) > 64
    assert summarize(samples).rel_ci <= 0.01


def test_max_samples_caps_a_kernel_that_never_settles():
    rng = np.random.default_rng(2)
    rule = StopRule(precision=0.001, max_samples=200)
    samples, reason = simulate(rule, lambda n: rng.uniform(1.0, 100.0, n))
    assert reason == "max-samples" and len(samples) == 200


def test_max_time_caps_the_wall_time():
    rng = np.random.default_rng(3)
    rule = StopRule(precision=0.0001, max_time_s=0.01)
    samples, reason = simulate(rule, lambda n: rng.uniform(1.0, 2.0, n), seconds_per_sample=1e-4)
    # Stopped at the first check past 10 ms (100 samples); a run at most doubles the total.
    assert reason == "max-time" and 100 <= len(samples) < 200


def test_precision_zero_runs_to_max_samples():
    samples, reason = simulate(StopRule(precision=0, max_samples=50), lambda n: np.full(n, 3.0))
    assert reason == "max-samples" and len(samples) == 50


def test_min_samples_holds_even_when_the_first_chunk_is_precise():
    rule = StopRule(min_samples=40, first_chunk=8)
    samples, reason = simulate(rule, lambda n: np.full(n, 5.0))
    assert reason == "precision" and len(samples) >= 40


def test_without_a_precision_target_chunks_double_and_never_pass_max_samples():
    rule = StopRule(precision=0, first_chunk=16, max_samples=100)
    assert [rule.next_chunk(summarize(np.ones(t))) for t in (8, 16, 32, 64, 96)] == [16, 16, 32, 36, 4]


def spread(n: int, width: float) -> np.ndarray:
    """n samples evenly spread over 10 ± width/2 µs."""
    return np.linspace(10 - width / 2, 10 + width / 2, n)


@pytest.mark.parametrize("n, width", [(32, 0.7), (32, 1.0), (64, 1.2), (100, 3.0)])
def test_a_chunk_asks_for_the_samples_the_ci_says_the_precision_needs(n, width):
    # The CI's half-width shrinks as 1/sqrt(n): n (h / target)^2 minus what is taken;
    # at least first_chunk / 2, at most as many as taken (doubling the total).
    rule = StopRule(first_chunk=16)
    s = summarize(spread(n, width))
    ratio = (s.ci_high - s.ci_low) / 2 / (0.01 * s.median)
    assert ratio > 1  # not yet precise
    expected = min(max(int(np.ceil(n * ratio**2)) - n, 8), n)
    assert rule.next_chunk(s) == expected


def test_an_interval_far_wider_than_the_target_at_most_doubles_the_samples():
    rule = StopRule(precision=1e-9, first_chunk=16, tick_us=0.0)  # (h / target)^2 ~ 1e16: past any count
    assert rule.next_chunk(summarize(spread(32, 3.0))) == 32


def test_a_precise_chunk_short_of_min_samples_asks_for_the_rest():
    rule = StopRule(min_samples=100, first_chunk=16)
    assert rule.next_chunk(summarize(np.full(30, 5.0))) == 70
    assert StopRule(first_chunk=16).next_chunk(summarize(np.full(30, 5.0))) == 8  # at least first_chunk / 2


def test_a_tick_limited_kernel_aims_at_a_one_tick_interval():
    # A 0.56 µs kernel: the target half-width is half a tick (16 ns), far wider than 1 % (5.6 ns).
    rule = StopRule(first_chunk=16, tick_us=0.032)
    s = summarize(np.r_[np.full(10, 0.544), np.full(12, 0.576), np.full(10, 0.608)])
    ratio = (s.ci_high - s.ci_low) / 2 / 0.016
    assert rule.next_chunk(s) == min(max(int(np.ceil(32 * ratio**2)) - 32, 8), 32)


def test_settled():
    rule = StopRule(settle=0.02)
    assert rule.settled(10.0, 10.15) and not rule.settled(10.0, 10.3)


def test_chunk_medians_one_clock_tick_apart_are_settled():
    # A 0.5 µs kernel read by a 32 ns clock: medians one tick apart differ by 6 %, as close as the data shows.
    rule = StopRule(settle=0.02, tick_us=0.032)
    assert rule.settled(0.512, 0.544) and rule.settled(0.544, 0.512) and not rule.settled(0.512, 0.576)
    assert not StopRule(settle=0.02, tick_us=0).settled(0.512, 0.544)


def test_racing_stops_a_surely_slower_kernel_after_its_first_chunk():
    # ±5 % noise: ±1 % would take hundreds of samples; 10 % above the bound is sure after one chunk.
    rng = np.random.default_rng(5)
    samples, reason = simulate(StopRule(slower_than_us=9.0), lambda n: rng.normal(10.0, 0.5, n))
    assert reason == "slower" and len(samples) == 16
    assert summarize(samples).ci_low > 9.0 and summarize(samples).rel_ci > 0.01
    full, reason = simulate(StopRule(), lambda n: rng.normal(10.0, 0.5, n))
    assert reason == "precision" and len(full) > 64


def test_a_racing_measurement_stops_a_surely_slower_kernel_after_six_samples():
    # bench()'s racing rule: 6 samples whose fastest is above the bound are a 95 % CI above it.
    rng = np.random.default_rng(7)
    rule = hb.BenchOptions(slower_than_us=9.0).stop_rule()
    samples, reason = simulate(rule, lambda n: rng.normal(10.0, 0.2, n))
    assert reason == "slower" and len(samples) == 6 and samples.min() > 9.0
    assert summarize(samples).ci_low == samples.min()  # 6 samples: the CI is their range


def test_racing_never_stops_a_kernel_whose_interval_reaches_the_bound():
    # The bound inside the spread: not surely slower, so it runs to the precision like any other.
    rng = np.random.default_rng(6)
    samples, reason = simulate(StopRule(slower_than_us=10.0), lambda n: rng.normal(10.0, 0.2, n))
    assert reason == "precision" and summarize(samples).rel_ci <= 0.01


def test_racing_sizes_the_next_run_to_lift_the_interval_above_the_bound():
    # Median 10 µs, CI from 9.645 µs, half-width 0.39 µs: ±1 % needs ~15x the samples (capped at doubling);
    # lifting the CI's lower end over a 9.727 µs bound needs (0.355 / 0.273)^2 ~ 1.7x: the run asks for that.
    s = summarize(np.linspace(9.0, 11.0, 32))
    bound = 9.727
    assert s.ci_low < bound < s.median  # not yet surely slower
    assert StopRule(slower_than_us=bound).stop_reason(s, 0.0) is None
    plain = StopRule(first_chunk=16).next_chunk(s)
    raced = StopRule(first_chunk=16, slower_than_us=bound).next_chunk(s)
    assert raced == int(np.ceil(32 * ((s.median - s.ci_low) / (s.median - bound)) ** 2)) - 32 == 23
    assert 8 < raced < plain == 32


def test_racing_sizes_by_the_lower_end_of_a_lopsided_interval():
    # Two clock states, 9 µs the rarer: median 10, CI 9-10 µs, so the half-width (0.5) is under the
    # median's 0.8 µs above a 9.2 µs bound, but the lower end is 1 µs below the median and must
    # shrink to 0.8: (1 / 0.8)^2 x 32 = 50 samples, 18 more; not first_chunk / 2 run after run.
    s = summarize(np.r_[np.full(14, 9.0), np.full(18, 10.0)])
    assert (s.median, s.ci_low, s.ci_high) == (10.0, 9.0, 10.0)
    assert StopRule(slower_than_us=9.2).next_chunk(s) == 18


@pytest.mark.parametrize("options, message", [
    ({"precision": 1.5}, "precision=1.5: out of range, expected a finite number >= 0 and < 1"),
    ({"max_time_s": -1}, "max_time_s=-1: out of range, expected a finite number > 0"),
    ({"max_time_s": float("nan")}, "max_time_s=nan: out of range"),
    ({"min_samples": 0}, "min_samples=0: out of range, expected an integer >= 1"),
    ({"min_samples": 20, "max_samples": 10}, "max_samples=10: out of range, expected an integer >= 20"),
    ({"slower_than_us": float("inf")}, "slower_than_us=inf: out of range, expected a finite number >= 0"),
])
def test_bad_rules_are_refused_by_the_core(options, message):
    with pytest.raises(hb.BenchError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        StopRule(**options)


def test_samples_one_clock_tick_apart_stop_once_the_interval_is_one_tick():
    # A 0.56 µs kernel read by a 32 ns clock: samples are 0.544 or 0.576 µs, never closer than a tick;
    # ±1 % (5.6 ns) is finer than the data can show, so an interval one tick wide is precise enough.
    rng = np.random.default_rng(4)
    samples, reason = simulate(StopRule(), lambda n: rng.choice([0.544, 0.576], n))
    assert reason == "precision" and len(samples) <= 32
    s = summarize(samples)
    assert s.ci_high - s.ci_low == pytest.approx(0.032) and s.rel_ci > 0.01


def test_racing_measures_a_kernel_within_the_threshold_of_the_bound_to_the_end():
    # 3 % above the bound, ±3 % noise: surely slower by more than the default 2 % after a chunk or two,
    # long before the ±1 % precision; within a 5 % threshold it is compare's "same", so racing lets it run.
    rng = np.random.default_rng(8)
    samples, reason = simulate(StopRule(slower_than_us=9.7), lambda n: rng.normal(10.0, 0.3, n))
    assert reason == "slower" and len(samples) <= 32
    samples, reason = simulate(StopRule(slower_than_us=9.7, race_threshold=0.05), lambda n: rng.normal(10.0, 0.3, n))
    assert reason == "precision" and summarize(samples).ci_low > 9.7


def test_a_bad_race_threshold_is_refused_by_the_core():
    with pytest.raises(hb.BenchError, match="race_threshold=1.5: out of range, expected a fraction >= 0 and < 1"):
        StopRule(race_threshold=1.5)
