"""The C++ core's measurement loop, statistics and rotation rule, through the binding.

`_core.measure` on synthetic samples (timers written in Python), its statistics
against numpy, its rotation rule against the formula, and the events and cupti
timers measuring on the fakes: one CUPTI session per measurement.
"""
from __future__ import annotations

import math
import struct
import threading
import time
from statistics import NormalDist

import numpy as np
import pytest

from pyhipbench import _core
from pyhipbench._core import StopRule
from pyhipbench.errors import BenchError, DriverError, KernelFault, MeasurementError

from fakes.host_backend import FAKE_CUDA_CONTEXT

KERNEL_US = 4.0  # the fake driver's default launch duration


def plan(sets: int = 1) -> _core.LaunchPlan:
    arg_sets = [struct.pack("<QiI", 0xA000 + s, 7, 0) for s in range(sets)]
    return _core.LaunchPlan(0xF00, "kern", (4, 2, 1), (64, 2, 1), 0, 0x77, arg_sets, [0, 8])


class Synthetic(_core.Timer):
    """A timer written in Python: samples from `draw(n)`, each run taking `seconds` of wall time."""

    def __init__(self, draw, seconds: float = 0.0, launches_per_sample: int = 1) -> None:
        super().__init__("synthetic")
        self.draw, self.seconds, self.launches_per_sample = draw, seconds, launches_per_sample
        self.runs: list[tuple[int, int]] = []  # (samples, first_set) of each run

    def run(self, plan, samples, first_set):
        self.runs.append((samples, first_set))
        if self.seconds:
            time.sleep(self.seconds)
        return np.asarray(self.draw(samples), dtype=np.float64), self.launches_per_sample, 2.0 * samples


# ---- the stopping rule, on synthetic samples (tests/measure/test_stopping.py's cases, through measure) ----

def test_a_precise_kernel_stops_early_on_precision():
    rng = np.random.default_rng(0)
    taken = _core.measure(Synthetic(lambda n: rng.normal(10.0, 0.05, n)), plan(), StopRule(), 0)
    assert taken.stop_reason == "precision" and len(taken.times_us) <= 32
    assert taken.precision_reached <= 0.01
    assert taken.precision_reached == _core.summarize(taken.times_us).rel_ci


def test_racing_stops_a_surely_slower_kernel_at_its_first_check():
    # ±5 % noise, 10 % above the bound: one run of the first chunk, then "slower".
    rng = np.random.default_rng(7)
    timer = Synthetic(lambda n: rng.normal(10.0, 0.5, n))
    taken = _core.measure(timer, plan(), StopRule(slower_than_us=9.0), 0)
    assert taken.stop_reason == "slower" and len(timer.runs) == 1 and len(taken.times_us) == 16
    assert _core.summarize(taken.times_us).ci_low > 9.0


def test_racing_stops_a_clear_loser_after_its_warm_up_chunk():
    # Every warm-up sample over 1.5 times the bound: those samples, timed, and "slower"; no settling run.
    rng = np.random.default_rng(9)
    rule = StopRule(slower_than_us=6.0, warmup_chunk=3, first_chunk=6, min_samples=6)
    timer = Synthetic(lambda n: rng.normal(10.0, 0.5, n))
    taken = _core.measure(timer, plan(), rule, None)
    assert taken.stop_reason == "slower" and [n for n, _ in timer.runs] == [3]
    assert len(taken.times_us) == 3 and taken.warmup_samples == 0 and min(taken.times_us) > 9.0
    # One warm-up sample at or under 1.5 times the bound: no clear loser; the warm-up chunk settles against the
    # first timed run, and the race's check follows as before.
    draws = iter([np.array([10.0, 8.9, 10.0]), np.array([10.0, 9.5, 10.5, 10.2, 9.8, 10.1])])
    timer = Synthetic(lambda n: next(draws))
    taken = _core.measure(timer, plan(), rule, None)
    assert taken.stop_reason == "slower" and [n for n, _ in timer.runs] == [3, 6]
    assert len(taken.times_us) == 6 and taken.warmup_samples == 3
    # A fixed warm-up keeps one run: the clear-loser check is for the settling warm-up only.
    timer = Synthetic(lambda n: rng.normal(10.0, 0.5, n))
    _core.measure(timer, plan(), rule, 3)
    assert [n for n, _ in timer.runs] == [9]


def test_racing_a_long_bound_probes_one_sample_first_and_a_run_without_a_clock_stops_no_far_loser():
    # A bound of 60 µs (a long kernel): the warm-up chunk's first sample runs alone. This timer reads no clock
    # (as on AMD), so even 200 µs, over twice the bound, is no far loser: the rest of the chunk follows, every
    # sample over 1.5 times the bound, a clear loser. (test_measurement.py has the far loser, on the fake driver's
    # clock.)
    rule = StopRule(slower_than_us=60.0, warmup_chunk=3, first_chunk=6, min_samples=6)
    timer = Synthetic(lambda n: np.full(n, 200.0))
    taken = _core.measure(timer, plan(), rule, None)
    assert taken.stop_reason == "slower" and [n for n, _ in timer.runs] == [1, 2] and len(taken.times_us) == 3
    # Near the bound, the chunk's three samples are its warm-up: the median of all three (the probe's 70.0, the
    # rest's 61.0 and 52.0: 61.0) is what the first timed run settles against, within 2 % of its 62.0, so that
    # run is timed whole (against the probe's 70.0 alone it would not settle).
    draws = iter([np.array([70.0]), np.array([61.0, 52.0]), np.full(6, 62.0), np.full(16, 62.0)])
    timer = Synthetic(lambda n: next(draws))
    taken = _core.measure(timer, plan(), rule, None)
    assert [n for n, _ in timer.runs][:3] == [1, 2, 6] and taken.warmup_samples == 3
    # Without the throttle threshold's retakes, or with a short bound, the chunk is one run.
    for short in (StopRule(slower_than_us=60.0, warmup_chunk=3, first_chunk=6, min_samples=6, throttle_threshold=0),
                  StopRule(slower_than_us=4.0, warmup_chunk=3, first_chunk=6, min_samples=6)):
        timer = Synthetic(lambda n: np.full(n, 200.0))
        _core.measure(timer, plan(), short, None)
        assert [n for n, _ in timer.runs] == [3]


def test_a_sub_microsecond_kernel_whose_chunk_medians_are_a_clock_tick_apart_is_warm():
    # Chunk medians alternating between 0.512 and 0.544 µs, a 32 ns tick apart (6 %): settled at the first
    # comparison, not warmed up to max_warmup_samples.
    ticks = iter(np.tile(np.r_[np.full(8, 0.512), np.full(8, 0.544)], 100))
    timer = Synthetic(lambda n: [next(ticks) for _ in range(n)])
    taken = _core.measure(timer, plan(), StopRule(tick_us=0.032), None)
    assert taken.warmup_samples == 8 and taken.stop_reason == "precision"


def test_a_noisy_kernel_takes_more_chunks_and_still_reaches_the_target():
    rng = np.random.default_rng(1)
    timer = Synthetic(lambda n: rng.lognormal(np.log(10.0), 0.2, n))
    taken = _core.measure(timer, plan(), StopRule(), 0)
    assert taken.stop_reason == "precision" and len(taken.times_us) > 64
    # ±20 % noise needs thousands of samples: each run asks for what the CI so far says, at most doubling
    assert [n for n, _ in timer.runs][:4] == [16, 16, 32, 64]
    assert _core.summarize(taken.times_us).rel_ci <= 0.01


def test_max_samples_caps_a_kernel_that_never_settles():
    rng = np.random.default_rng(2)
    taken = _core.measure(Synthetic(lambda n: rng.uniform(1.0, 100.0, n)), plan(),
                          StopRule(precision=0.001, max_samples=200), 0)
    assert taken.stop_reason == "max-samples" and len(taken.times_us) == 200


def test_max_time_caps_the_timed_chunks():
    rng = np.random.default_rng(3)
    timer = Synthetic(lambda n: rng.uniform(1.0, 2.0, n), seconds=0.01)
    taken = _core.measure(timer, plan(), StopRule(precision=0.0001, max_time_s=0.025), 0)
    # At least 10 ms per chunk: over 25 ms after the third (the second, if a sleep overran by 5 ms).
    assert taken.stop_reason == "max-time" and len(timer.runs) in (2, 3)


def test_precision_zero_runs_to_max_samples():
    taken = _core.measure(Synthetic(lambda n: np.full(n, 3.0)), plan(), StopRule(precision=0, max_samples=50), 0)
    assert taken.stop_reason == "max-samples" and len(taken.times_us) == 50


def test_min_samples_hold_even_when_the_first_chunk_is_precise():
    timer = Synthetic(lambda n: np.full(n, 5.0))
    taken = _core.measure(timer, plan(), StopRule(min_samples=40, first_chunk=8), 0)
    assert taken.stop_reason == "precision" and len(taken.times_us) == 40
    assert [n for n, _ in timer.runs] == [8, 32]  # precise at once: the next run brings exactly the missing 32


def test_one_tick_wide_interval_is_precise_enough():
    rng = np.random.default_rng(4)
    taken = _core.measure(Synthetic(lambda n: rng.choice([0.544, 0.576], n)), plan(), StopRule(), 0)
    assert taken.stop_reason == "precision" and len(taken.times_us) <= 32 and taken.precision_reached > 0.01


def sample_stream(values):
    """A draw(n) giving the next n values of `values`, then its last value for ever."""
    values = list(values)
    taken = [0]

    def draw(n):
        out = [values[min(i, len(values) - 1)] for i in range(taken[0], taken[0] + n)]
        taken[0] += n
        return out
    return draw


def test_warm_up_runs_until_a_chunk_agrees_with_the_one_before_and_is_not_timed():
    # Chunks of 8 with medians 20, 12, 10.1, 10.0 (10.1 -> 10.0 is within 2 %): three in the first run of
    # 8 + 16 samples; the fourth opens a run as long as the warm-up so far, which is steady from its start and
    # so timed whole.
    timer = Synthetic(sample_stream([20.0] * 8 + [12.0] * 8 + [10.1] * 8 + [10.0]))
    taken = _core.measure(timer, plan(), StopRule())
    assert taken.warmup_samples == 24 and [n for n, _ in timer.runs] == [24, 24]
    assert taken.host_us == 2.0 * 24  # the timed samples' host cost only
    np.testing.assert_array_equal(taken.times_us, np.full(24, 10.0))


def test_a_kernel_that_settles_at_once_costs_one_run_before_its_first_check():
    # Medians 10.1 then 10.0: the second chunk agrees with the first, so it and the rest of the run are timed.
    timer = Synthetic(sample_stream([10.1] * 8 + [10.0]))
    taken = _core.measure(timer, plan(), StopRule(precision=0, max_samples=16))
    assert [n for n, _ in timer.runs] == [24] and taken.warmup_samples == 8
    np.testing.assert_array_equal(taken.times_us, np.full(16, 10.0))


def test_a_fixed_count_smaller_than_a_chunk_takes_exactly_that_many_samples():
    # iterations=3: the first run still holds two chunks to compare; the second settles and is timed, but
    # only 3 of its samples are kept.
    timer = Synthetic(sample_stream([5.0]))
    taken = _core.measure(timer, plan(), StopRule(precision=0, min_samples=3, max_samples=3, first_chunk=3))
    assert len(taken.times_us) == 3 and taken.stop_reason == "max-samples" and taken.warmup_samples == 8
    assert [n for n, _ in timer.runs] == [16] and taken.host_us == 2.0 * 3


def test_iterations_take_exactly_that_many_samples_whatever_the_time():
    from pyhipbench._measure.options import BenchOptions
    rule = BenchOptions(precision=0.01, max_time_s=0.001, iterations=40).stop_rule()  # max_time_s is the precision target's cap, not a fixed count's
    assert (rule.precision, rule.min_samples, rule.max_samples) == (0, 40, 40) and rule.max_time_s >= 1e9
    timer = Synthetic(sample_stream([20.0] * 8 + [12.0] * 8 + [10.0]), seconds=0.002)
    taken = _core.measure(timer, plan(), rule)
    assert len(taken.times_us) == 40 and taken.stop_reason == "max-samples" and taken.warmup_samples == 24


def test_a_long_fixed_warm_up_runs_alone():
    timer = Synthetic(lambda n: np.full(n, 1.0))
    taken = _core.measure(timer, plan(), StopRule(precision=0, max_samples=16, first_chunk=16), 100)
    assert [n for n, _ in timer.runs] == [100, 16] and taken.warmup_samples == 100 and len(taken.times_us) == 16


def test_a_kernel_settling_late_warms_up_in_runs_as_long_as_its_warm_up_so_far():
    # Chunk medians 40, 39, ..., 35 never agree within 2 %, then 1.0, 1.0 do: chunks 1-3 come in the first
    # run, 4-6 in a run of 24 samples (the warm-up so far), 7 on in one of 48; the eighth is the first timed.
    timer = Synthetic(sample_stream([float(v) for v in range(40, 34, -1) for _ in range(8)] + [1.0]))
    taken = _core.measure(timer, plan(), StopRule(precision=0, max_samples=16))
    assert [n for n, _ in timer.runs] == [24, 24, 48] and taken.warmup_samples == 56
    np.testing.assert_array_equal(taken.times_us, np.full(16, 1.0))


def test_a_run_tail_past_the_warm_up_cap_leaves_one_chunk_to_warm_up():
    # 8 + 10 samples in the first run: chunk medians 40 then 30 disagree, so 16 are warm-up and the 2-sample
    # tail makes 18, past a cap of 17: the next warm-up run is the least, one chunk (its median, 1.0, still
    # disagrees, and the cap ends the warm-up there); then the first timed run.
    timer = Synthetic(sample_stream([40.0] * 8 + [30.0] * 10 + [1.0]))
    rule = StopRule(precision=0, max_samples=10, first_chunk=10, max_warmup_samples=17)
    taken = _core.measure(timer, plan(), rule)
    assert [n for n, _ in timer.runs] == [18, 8, 10] and taken.warmup_samples == 26
    np.testing.assert_array_equal(taken.times_us, np.full(10, 1.0))


def test_a_long_kernel_settling_late_warms_up_one_chunk_a_run():
    # 5 ms samples whose chunk medians never agree: a chunk (40 ms) is already longer than a warm-up run's
    # 10 ms, so each later run is one chunk, however much has warmed up.
    timer = Synthetic(sample_stream([5000.0 + 500.0 * (i // 8) for i in range(80)] + [9999.0]))
    _core.measure(timer, plan(), StopRule(precision=0, max_samples=16, max_warmup_samples=64))
    assert [n for n, _ in timer.runs][:5] == [24, 8, 8, 8, 8]


def test_a_fixed_warm_up_and_the_rotation_continuing_across_chunks():
    timer = Synthetic(lambda n: np.full(n, 1.0), launches_per_sample=5)
    taken = _core.measure(timer, plan(sets=7), StopRule(precision=0, max_samples=40, first_chunk=16), 3)
    # The first run holds the 3 warm-up samples and the first chunk; the sets continue after 19 and 35 samples of 5.
    assert timer.runs == [(19, 0), (16, 95 % 7), (8, 175 % 7)]
    assert taken.warmup_samples == 3 and taken.launches_per_sample == 5 and taken.stop_reason == "max-samples"


def test_a_timer_that_returns_the_wrong_sample_count_is_a_measurement_error():
    timer = Synthetic(lambda n: np.ones(n - 1))
    with pytest.raises(MeasurementError, match="the synthetic timer returned 15 samples of kernel 'kern' where 16"):
        _core.measure(timer, plan(), StopRule(), 0)


def test_an_error_inside_a_chunk_keeps_its_class():
    def fail(n):
        raise KeyError("draw failed")
    with pytest.raises(KeyError, match="draw failed"):
        _core.measure(Synthetic(fail), plan(), StopRule(), 0)


@pytest.mark.parametrize("options, message", [
    ({"precision": 1.5}, "precision=1.5: out of range, expected a finite number >= 0 and < 1"),
    ({"max_time_s": 0.0}, "max_time_s=0: out of range, expected a finite number > 0"),
    ({"settle": float("nan")}, "settle=nan: out of range, expected a finite number > 0 and < 1"),
    ({"min_samples": 0}, "min_samples=0: out of range, expected an integer >= 1"),
    ({"min_samples": 20, "max_samples": 10}, "max_samples=10: out of range, expected an integer >= 20"),
    ({"warmup_chunk": 0}, "warmup_chunk=0: out of range, expected an integer >= 1"),
    ({"slower_than_us": -2.0}, "slower_than_us=-2: out of range, expected a finite number >= 0 (µs; 0 = no racing)"),
])
def test_the_core_refuses_a_bad_rule_naming_the_field(options, message):
    with pytest.raises(BenchError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _core.StopRule(**options)


def test_every_field_of_the_rule_is_a_keyword_a_property_and_in_the_repr():
    rule = StopRule(precision=0.02, max_samples=500, tick_us=0.0, slower_than_us=3.5)
    assert (rule.precision, rule.max_samples, rule.tick_us, rule.slower_than_us) == (0.02, 500, 0.0, 3.5)
    fields = ("precision", "min_samples", "max_samples", "max_time_s", "settle", "max_warmup_samples", "warmup_chunk",
              "first_chunk", "tick_us", "slower_than_us", "race_threshold", "throttle_threshold", "hold_s")
    assert repr(rule) == f"StopRule({', '.join(f'{f}={getattr(rule, f)!r}' for f in fields)})"
    assert repr(eval(repr(rule), {"StopRule": StopRule})) == repr(rule)


def test_bench_options_default_to_the_core_rule():
    from pyhipbench._measure.options import BenchOptions
    assert repr(BenchOptions().stop_rule()) == repr(StopRule())
    assert StopRule().max_time_s == 1.0


# ---- statistics: the core against numpy and the order-statistics formula ----

def reference_ci(sorted_times: np.ndarray, confidence: float) -> tuple[float, float]:
    n = len(sorted_times)
    half = NormalDist().inv_cdf(0.5 + confidence / 2) * math.sqrt(n) / 2
    return float(sorted_times[max(math.floor(n / 2 - half), 0)]), float(sorted_times[min(math.ceil(n / 2 + half), n - 1)])


@pytest.mark.parametrize("seed", range(8))
def test_summary_matches_numpy_on_random_samples(seed):
    rng = np.random.default_rng(seed)
    for n in [1, 2, 3, 4, 5, 7, 10, 16, 31, 100, 257, 1000, 4099]:
        times = rng.lognormal(1.0, 0.6, n)
        if seed % 2:
            times = np.round(times, 1)  # ties, as a coarse clock gives
        confidence = [0.95, 0.9, 0.99, 0.5][seed % 4]
        s = _core.summarize(times, confidence)
        ordered = np.sort(times)
        q1, median, q3, p10, p90 = np.percentile(times, [25, 50, 75, 10, 90])
        assert (s.count, s.median, s.p10, s.p90, s.min, s.max) == (n, median, p10, p90, ordered[0], ordered[-1])
        assert (s.ci_low, s.ci_high) == reference_ci(ordered, confidence)
        fence = 1.5 * (q3 - q1)
        assert s.outliers == np.count_nonzero((times < q1 - fence) | (times > q3 + fence))
        assert s.mean == pytest.approx(np.mean(times), rel=1e-12)
        assert s.stdev == pytest.approx(np.std(times, ddof=1) if n > 1 else 0.0, rel=1e-9, abs=1e-12)
        assert s.confidence == confidence


def test_median_ci_of_the_core_is_the_formulas():
    rng = np.random.default_rng(9)
    for n in range(1, 300):
        ordered = np.sort(rng.normal(5, 1, n))
        assert _core.median_ci(ordered, 0.95) == reference_ci(ordered, 0.95)


@pytest.mark.parametrize("times, confidence, message", [
    ([], 0.95, "no samples to summarize"),
    ([1.0, float("inf")], 0.95, "sample 1 is inf: expected finite times"),
    ([1.0], 1.0, "confidence=1.000000: expected a number in \\(0, 1\\)"),
])
def test_bad_samples_are_refused(times, confidence, message):
    with pytest.raises(BenchError, match=message):
        _core.summarize(np.array(times), confidence)


# ---- rotation: the core against the rule's formula ----

def reference_rotation(set_bytes, llc, free, total, launches):
    headroom = max(256 << 20, int(total * 0.05))
    fits = 1 + max(free - headroom, 0) // set_bytes
    wanted = 2 if set_bytes >= llc else 2 * -(-llc // set_bytes)
    wanted = min(wanted, launches)
    return (wanted, wanted) if wanted <= fits else (fits, wanted)


def test_rotation_matches_the_formula_on_random_inputs():
    rng = np.random.default_rng(5)
    for _ in range(2000):
        set_bytes = int(rng.integers(1, 1 << int(rng.integers(2, 34))))
        llc, total = int(rng.integers(1 << 20, 1 << 29)), int(rng.integers(1 << 30, 1 << 38))
        free, launches = int(rng.integers(0, total)), int(rng.integers(2, 20000))
        expected = reference_rotation(set_bytes, llc, free, total, launches)
        if expected[0] < 2 and expected[1] > 1:
            with pytest.raises(BenchError, match="rotated sets cannot fit in device memory"):
                _core.plan_rotation(set_bytes, llc, free, total, None, launches)
            continue
        sets, wanted, reason = _core.plan_rotation(set_bytes, llc, free, total, None, launches)
        assert (sets, wanted) == expected
        assert ("sets short" in reason) == (sets < wanted)


@pytest.mark.parametrize("call, message", [
    (dict(set_bytes=-1), r"set_bytes=-1: out of range, expected an integer in \[0, 18446744073709551615\] \(bytes\)"),
    (dict(free_bytes=1.5), "free_bytes=1.5: expected an integer"),
    (dict(launches=0), "launches=0: out of range, expected an integer >= 1"),
])
def test_python_rotation_names_a_bad_size(call, message):
    from pyhipbench import plan_rotation
    args = dict(set_bytes=1 << 20, llc_bytes=60 << 20, free_bytes=100 << 30, total_bytes=140 << 30) | call
    with pytest.raises(BenchError, match=message):
        plan_rotation(**args)


def test_rotation_headroom_is_the_documented_one():
    assert _core.headroom_bytes(4 << 30) == 256 << 20 and _core.headroom_bytes(140 << 30) == int((140 << 30) * 0.05)


def test_the_core_refuses_zero_sets_and_zero_launches():
    with pytest.raises(BenchError, match="rotate=0: expected 'auto' or a set count >= 1"):
        _core.plan_rotation(1 << 20, 60 << 20, 100 << 30, 140 << 30, 0)
    with pytest.raises(BenchError, match="launches=0: expected a launch count >= 1"):
        _core.plan_rotation(1 << 20, 60 << 20, 100 << 30, 140 << 30, None, 0)


# ---- the core's own timers, measuring on the fakes ----

def test_events_timer_measures_continuing_the_rotation(driver, fake_driver, backend_name):
    fake_driver.read_args(1)
    context = FAKE_CUDA_CONTEXT if backend_name == "cuda" else 0
    timer = _core.make_timer("events", driver, context)
    taken = _core.measure(timer, plan(sets=3), StopRule(precision=0, max_samples=40), 5)
    launches = [r for r in fake_driver.records() if r.call.decode() in ("cuLaunchKernel", "hipExtModuleLaunchKernel")]
    assert len(launches) == 5 + 40 and taken.warmup_samples == 5 and taken.stop_reason == "max-samples"
    assert [r.arg_values[0] - 0xA000 for r in launches] == [k % 3 for k in range(45)]
    np.testing.assert_allclose(taken.times_us, KERNEL_US, rtol=1e-6)
    assert taken.host_us > 0 and taken.launches_per_sample == 1


def trace_calls(fake_cupti) -> list[str]:
    return [c for c in fake_cupti.calls() if c not in ("cuptiGetVersion", "cuptiActivityGetNumDroppedRecords")]


@pytest.fixture
def cupti_timer(fake_libraries, fake_driver_cuda, fake_cupti):
    return _core.make_timer("cupti", _core.load_driver("cuda", str(fake_libraries["cuda"])), FAKE_CUDA_CONTEXT)


def test_one_cupti_session_for_a_whole_measurement(cupti_timer, fake_driver_cuda, fake_cupti):
    fake_driver_cuda.lib.fake_set_launch_ms_step(0.0005)  # launch k runs 4 + 0.5 k µs: each sample names its launch
    rule = StopRule(precision=0, max_samples=48, first_chunk=16)
    taken = _core.measure(cupti_timer, plan(sets=2), rule, 8)
    # Runs of 8 + 16 (warm-up and the first chunk), 16, 16: subscribed and enabled once, one default flush per
    # run (each brought all its records), one tear-down.
    assert trace_calls(fake_cupti) == (["cuptiActivityRegisterCallbacks", "cuptiSubscribe", "cuptiEnableCallback",
                                        "cuptiActivityEnable"] + ["cuptiActivityFlushAll"] * 3 +
                                       ["cuptiActivityDisable", "cuptiUnsubscribe"])
    np.testing.assert_allclose(taken.times_us, [KERNEL_US + 0.5 * k for k in range(8, 56)], atol=1e-9)
    assert not fake_cupti.tracing


def test_another_threads_run_waits_for_the_whole_cupti_session(cupti_timer, fake_driver_cuda):
    # B calls run() on the timer while A's measure() holds a session: B must wait for the session's end, not
    # slip in between two chunks (while A sorts 200000 samples), where it ran inside A's trace, which counts
    # A's thread's launches only, and failed with "CUPTI saw 0 launches".
    outcome = {}

    def run_b():
        try:
            outcome["b"] = cupti_timer.run(plan(), 3, 0)[0]
        except Exception as e:  # noqa: BLE001 - the assertion below names it
            outcome["b"] = e

    b = threading.Thread(target=run_b)

    def body(params):  # A's first launch: B starts and waits for the timer
        fake_driver_cuda.lib.fake_set_kernel_body(None)
        b.start()
        time.sleep(0.05)
    fake_driver_cuda.run_kernel(body, 0xF00)
    rule = StopRule(precision=0, max_samples=400_000, first_chunk=200_000)
    a = threading.Thread(target=lambda: outcome.setdefault("a", _core.measure(cupti_timer, plan(), rule, 8)))
    a.start()
    a.join()
    b.join()
    assert isinstance(outcome["b"], np.ndarray) and outcome["b"].shape == (3,), outcome["b"]
    assert len(outcome["a"].times_us) == 400_000


def test_each_chunk_takes_only_its_own_records(cupti_timer, fake_cupti):
    fake_cupti.lib.fake_cupti_set_foreign_records(2)  # other launches' kernel records between ours
    taken = _core.measure(cupti_timer, plan(), StopRule(precision=0, max_samples=100), None)
    assert len(taken.times_us) == 100 and taken.warmup_samples == 8
    np.testing.assert_allclose(taken.times_us, KERNEL_US, atol=1e-9)


def test_a_failure_mid_session_leaves_cupti_off(cupti_timer, fake_cupti, fake_driver_cuda):
    fake_driver_cuda.fail("cuLaunchKernel", 1, after=30)  # in the second timed chunk
    with pytest.raises(DriverError, match="cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE .*kernel 'kern'"):
        _core.measure(cupti_timer, plan(), StopRule(precision=0, max_samples=64), 8)
    assert not fake_cupti.tracing
    assert trace_calls(fake_cupti)[-3:] == ["cuptiActivityFlushAll", "cuptiActivityDisable", "cuptiUnsubscribe"]


def test_a_kernel_fault_inside_measure_is_a_kernel_fault_and_cupti_is_off(cupti_timer, fake_cupti, fake_driver_cuda):
    fake_driver_cuda.fail("cuEventSynchronize", 700, sticky=True)  # CUDA_ERROR_ILLEGAL_ADDRESS
    with pytest.raises(KernelFault, match="kernel 'kern' faulted while running") as caught:
        _core.measure(cupti_timer, plan(), StopRule())
    assert caught.value.code == 700 and not caught.value.context_usable
    assert not fake_cupti.tracing


def test_dropped_records_in_a_later_chunk_are_a_measurement_error(cupti_timer, fake_cupti):
    taken = _core.measure(cupti_timer, plan(), StopRule(precision=0, max_samples=16), 8)
    assert len(taken.times_us) == 16
    fake_cupti.lib.fake_cupti_drop_records(1)
    with pytest.raises(MeasurementError, match="CUPTI dropped 1 activity records"):
        _core.measure(cupti_timer, plan(), StopRule(precision=0, max_samples=16), 8)
    assert not fake_cupti.tracing


def test_a_failed_tear_down_is_reported_and_tracing_is_off(cupti_timer, fake_cupti):
    fake_cupti.fail("cuptiActivityDisable", 1)
    with pytest.raises(DriverError, match="cuptiActivityDisable failed"):
        _core.measure(cupti_timer, plan(), StopRule(precision=0, max_samples=16), 0)
    assert not fake_cupti.lib.fake_cupti_subscribed()


def test_plain_runs_after_a_measurement_still_trace_themselves(cupti_timer, fake_cupti):
    _core.measure(cupti_timer, plan(), StopRule(precision=0, max_samples=16), 0)
    times, _, _ = cupti_timer.run(plan(), 3, 0)
    np.testing.assert_allclose(times, KERNEL_US, atol=1e-9)
    assert trace_calls(fake_cupti)[-7:] == ["cuptiActivityRegisterCallbacks", "cuptiSubscribe", "cuptiEnableCallback",
                                            "cuptiActivityEnable", "cuptiActivityFlushAll",
                                            "cuptiActivityDisable", "cuptiUnsubscribe"]
