"""The SM clock of each run (the clock probe's stamps around it), throttled runs taken again, and hold_s
(untimed runs back to back before the warm-up), on the fake driver: its stamp kernel counts cycles at a
clock a test sets (tests/fakes/fake_driver.c)."""
from __future__ import annotations

import json
from importlib import resources

import numpy as np
import pytest

import pyhipbench as hb
from pyhipbench import _core

COPY_PTX = (resources.files("pyhipbench") / "kernels" / "copy.ptx").read_bytes()
RATED_MHZ = 1980.0  # the fake's CU_DEVICE_ATTRIBUTE_CLOCK_RATE


@pytest.fixture
def backend_name():
    return "cuda"


def bench(device, **options):
    copy = device.load_module(COPY_PTX).kernel("copy")
    src = device.array(np.arange(1024, dtype=np.float32))
    return hb.bench(copy, 4, 256, [src, device.empty_like(src), hb.int64(1024)], timer="events", cache="warm",
                    **options)


def test_a_result_carries_the_clock_its_runs_ran_at(device, fake_driver):
    result = bench(device, iterations=20, warmup=2)
    assert result.clock == hb.Clock(RATED_MHZ, RATED_MHZ, RATED_MHZ, RATED_MHZ) and result.throttled_samples == 0
    assert "SM clock 1980 MHz of 1980 rated" in result.summary()
    data = json.loads(json.dumps(result.to_dict()))
    assert data["clock_mhz"] == {"mean": RATED_MHZ, "min": RATED_MHZ, "max": RATED_MHZ, "rated": RATED_MHZ}
    assert data["throttled_samples"] == 0
    assert len(fake_driver.records("clock stamp")) == 2  # one run: a stamp before it, one after


def test_a_throttled_run_is_discarded_and_taken_again(device, fake_driver):
    fake_driver.lib.fake_throttle_stamps(2, 900.0)  # the first run (two stamps) at 900 MHz, under 75 % of 1980
    result = bench(device, iterations=20, warmup=0)
    assert result.throttled_samples == 20 and result.samples == 20
    assert result.clock.min_mhz == RATED_MHZ  # the samples kept ran at the rated clock
    assert "20 throttled samples taken again" in result.summary()


def test_the_warm_up_settles_only_once_the_clock_is_up(device, fake_driver):
    fake_driver.lib.fake_throttle_stamps(4, 600.0)  # two runs below the threshold
    result = bench(device, max_time_s=1.0)
    assert result.throttled_samples > 0 and result.clock.min_mhz == RATED_MHZ


def test_a_gpu_that_stays_throttled_is_measured_after_three_retakes(device, fake_driver):
    fake_driver.lib.fake_set_sm_clock_mhz(1000.0)
    result = bench(device, iterations=10, warmup=0)
    assert result.throttled_samples == 30 and result.samples == 10  # three retakes, then kept
    assert result.clock.mean_mhz == pytest.approx(1000.0)


def test_threshold_zero_keeps_every_run(device, fake_driver):
    fake_driver.lib.fake_set_sm_clock_mhz(1000.0)
    result = bench(device, iterations=10, warmup=0, throttle_threshold=0)
    assert result.throttled_samples == 0 and result.clock.mean_mhz == pytest.approx(1000.0)


def test_a_lower_threshold_lets_a_slower_clock_pass(device, fake_driver):
    fake_driver.lib.fake_throttle_stamps(2, 900.0)  # 45 % of the rated clock
    assert bench(device, iterations=10, warmup=0, throttle_threshold=0.4).throttled_samples == 0


def test_the_cupti_timer_reads_the_clock_and_skips_the_stamps(device, fake_driver, fake_cupti):
    copy = device.load_module(COPY_PTX).kernel("copy")
    src = device.array(np.arange(1024, dtype=np.float32))
    result = hb.bench(copy, 4, 256, [src, device.empty_like(src), hb.int64(1024)], timer="cupti", cache="warm",
                      iterations=12, warmup=0)
    assert result.samples == 12 and result.clock.mean_mhz == RATED_MHZ


@pytest.mark.parametrize("backend_name", ["hip"])
def test_amd_reads_no_clock(device):
    result = bench(device, iterations=5, warmup=0)
    assert result.clock is None and result.to_dict()["clock_mhz"] is None
    assert "SM clock not read" in result.summary()


@pytest.mark.parametrize("value", [1.0, -0.1, float("nan"), "0.5"])
def test_the_threshold_is_a_fraction_below_one(value):
    with pytest.raises(hb.BenchError, match=r"^throttle_threshold="):
        hb.BenchOptions(throttle_threshold=value)


def test_reports_carry_the_clock(device):
    from pyhipbench._results.report import to_csv, to_markdown
    data = bench(device, iterations=5, warmup=0).to_dict()
    header, row = to_csv([data]).splitlines()
    fields = dict(zip(header.split(","), row.split(",")))
    assert float(fields["clock_mhz"]) == RATED_MHZ and fields["throttled_samples"] == "0"
    assert to_markdown([data]).splitlines()[2].endswith("| 1980 |")


# -- hold_s ---------------------------------------------------------------------

def test_a_hold_runs_untimed_for_its_seconds_before_the_samples(device, fake_driver):
    held = bench(device, iterations=20, warmup=2, hold_s=0.02)
    plain = bench(device, iterations=20, warmup=2)
    assert held.samples == plain.samples == 20
    assert plain.warmup == 2 and held.warmup > 2 + 8  # the hold's samples count as warm-up, its first run a chunk
    assert held.wall_s >= 0.02 > plain.wall_s


@pytest.mark.parametrize("warmup", [2, 12])  # 12: longer than a warm-up chunk, run on its own after the hold
def test_every_launch_of_a_hold_counts_as_warm_up(device, fake_driver, warmup):
    held = bench(device, iterations=20, warmup=warmup, hold_s=0.002)  # short: the fake keeps 65536 records
    assert len(fake_driver.records("cuLaunchKernel")) == held.warmup + 20 and held.warmup > warmup


def test_the_holds_runs_are_not_taken_again_for_their_clock(device, fake_driver):
    """The hold is there to reach the clock the GPU sustains: a low one is what it is for, never retaken.
    The timed runs after it still are."""
    fake_driver.lib.fake_throttle_stamps(2, 900.0)  # the hold's first run at 900 MHz, under 75 % of 1980
    result = bench(device, iterations=20, warmup=0, hold_s=0.01)
    assert result.throttled_samples == 0 and result.clock.min_mhz == pytest.approx(1980.0)


def test_max_time_counts_from_the_end_of_the_hold(device, fake_driver):
    result = bench(device, hold_s=0.2, max_time_s=0.05)
    assert result.samples >= 10 and result.wall_s >= 0.2


@pytest.mark.parametrize("value, message", [(-1, r"hold_s=-1: out of range, expected a finite number >= 0"),
                                            ("long", r"hold_s='long': expected a finite number >= 0 and <= 3600.0, got str"),
                                            (float("inf"), r"hold_s=inf: out of range, expected a finite")])
def test_a_bad_hold_names_the_value(value, message):
    with pytest.raises(hb.BenchError, match=message):
        hb.BenchOptions(hold_s=value)


def test_the_core_checks_the_hold_for_cpp_callers():
    with pytest.raises(hb.BenchError, match=r"hold_s.*a finite number of seconds >= 0"):
        _core.StopRule(hold_s=-0.5)
    assert _core.StopRule(hold_s=0.25).hold_s == 0.25
