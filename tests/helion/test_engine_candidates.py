"""Helion-shaped candidates (callables, each one config's kernel call) through FirstPass and Rebenchmark, on the
fake CUDA driver: the race against the best of the whole search, the tie round, a failing candidate costing only
itself. These parts import no Helion; the parts that do are tested where Helion and torch are installed."""
from __future__ import annotations

import logging
import math

import pytest

from pyhipbench.errors import BenchError
from pyhipbench.helion.first_pass import FirstPass
from pyhipbench.helion.ledger import Ledger
from pyhipbench.helion.rebenchmark import Rebenchmark


def test_each_generation_races_the_best_of_the_whole_search(device, call, policy):
    ledger = Ledger()
    first = FirstPass(policy(), device, ledger)
    best_ms, error, _ = first.measure_ms(call(3.0), "generation 0, config a")
    assert error is None and best_ms == pytest.approx(0.003)
    # A later generation's candidate meets the bound the first set: surely slower, it stops early.
    slow_ms, _, _ = first.measure_ms(call(9.0, step_us=0.05), "generation 1, config b")
    assert slow_ms > best_ms and ledger.stopped_slower == 1 and ledger.configs_measured == 2
    assert first.bound.bound_us is not None and first.bound.bound_us < 3.1
    # Without racing the same candidate is measured to the precision (or the time cap), never "slower".
    unraced = FirstPass(policy(race=False, max_time_s=0.05), device, Ledger())
    unraced.measure_ms(call(3.0), "a")
    unraced.measure_ms(call(9.0, step_us=0.05), "b")
    assert unraced.ledger.stopped_slower == 0 and unraced.bound.bound_us is None


def test_a_reading_below_the_best_counts_only_when_faster_by_compares_rule(device, call, policy):
    ledger = Ledger()
    first = FirstPass(policy(race=False, iterations=20), device, ledger)
    best_ms, _, _ = first.measure_ms(call(3.0), "the best so far")
    # Samples from 2.85 µs up by 0.01 µs a call: a median below the best's, its CI reaching above it.
    tie_ms, _, _ = first.measure_ms(call(2.85, step_us=0.01), "a tie")
    assert tie_ms == best_ms and ledger.read_as_best == 1
    # 1.3 % below the best, its CI wholly below it: surely lower, but by less than compare's 2 % threshold.
    close_ms, _, _ = first.measure_ms(call(2.96), "surely lower by 1.3 %")
    assert close_ms == best_ms and ledger.read_as_best == 2
    slower_ms, _, _ = first.measure_ms(call(3.2), "slower")
    assert slower_ms == pytest.approx(0.0032)
    faster_ms, _, _ = first.measure_ms(call(2.5), "faster")
    assert faster_ms == pytest.approx(0.0025) and first.best.median_us == pytest.approx(2.5)
    assert first.measure_ms(call(2.7), "slower than the new best")[0] == pytest.approx(0.0027)
    assert ledger.read_as_best == 2 and ledger.configs_measured == 6


def test_a_candidate_that_raises_costs_only_itself(device, call, policy):
    ledger = Ledger()
    first = FirstPass(policy(), device, ledger)

    def faulting() -> None:
        raise RuntimeError("CUDA error: an illegal memory access was encountered")
    ms, error, candidate = first.measure_ms(faulting, "config bad")
    assert math.isinf(ms) and isinstance(candidate.raised, RuntimeError)
    assert error.startswith("BenchError: config bad raised RuntimeError: CUDA error: an illegal memory access")
    good_ms, _, _ = first.measure_ms(call(2.0), "config good")
    assert good_ms == pytest.approx(0.002) and ledger.configs_failed == 1 and ledger.configs_measured == 1


def test_rebenchmark_returns_ms_in_order_and_holds_the_ties(device, call, policy):
    ledger = Ledger()
    rebenchmark = Rebenchmark(policy(tie_hold_s=0.002, iterations=4), device, ledger)
    times_ms = rebenchmark([call(5.0), call(5.0), call(9.0)], repeat=100, desc="finalists")
    assert times_ms == [pytest.approx(0.005, rel=1e-3), pytest.approx(0.005, rel=1e-3), pytest.approx(0.009, rel=1e-3)]
    assert ledger.rebenchmarks == 1 and ledger.rebenchmark_candidates == 3 and ledger.tie_rounds == 1
    assert ledger.rebenchmark_s > 0


def test_rebenchmark_keeps_every_time_but_a_failed_candidates(device, call, caplog, policy):
    def broken() -> None:
        raise ValueError("out of resources: shared memory")
    rebenchmark = Rebenchmark(policy(), device, Ledger())
    with caplog.at_level(logging.WARNING, logger="pyhipbench.helion"):
        times_ms = rebenchmark([call(4.0), broken, call(6.0)], repeat=10)
    assert times_ms[0] == pytest.approx(0.004) and math.isinf(times_ms[1]) and times_ms[2] > times_ms[0]
    [line] = [r.getMessage() for r in caplog.records]
    assert line == ("pyhipbench.helion: rebenchmark #1 failed: BenchError: rebenchmark #1 raised ValueError: "
                    "out of resources: shared memory")


@pytest.mark.parametrize(("fns", "repeat", "message"), [
    ([], 10, r"^autotune_benchmark_fn fns=\[\]: expected a non-empty list of callables$"),
    ([1], 10, r"^autotune_benchmark_fn fns=\[1\]: expected a non-empty list of callables$"),
    ([print], 0, r"^autotune_benchmark_fn repeat=0: expected an int >= 1$"),
    ([print], "10", r"^autotune_benchmark_fn repeat='10': expected an int >= 1$"),
])
def test_rebenchmark_refuses_bad_input_in_one_line(fns, repeat, message, policy):
    with pytest.raises(BenchError, match=message):
        Rebenchmark(policy(), None, Ledger())(fns, repeat=repeat)
