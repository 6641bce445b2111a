"""compare's verdicts (faster, slower, same, can't tell) from samples and from intervals, and its threshold."""
from __future__ import annotations

import io
import json
import re
import sys
import time

import numpy as np
import pytest

import pyhipbench as hb
from pyhipbench import _core, cli
from pyhipbench._measure.stats import summarize
from pyhipbench._results import comparison, report
from pyhipbench._results.comparison import DEFAULT_THRESHOLD, compare


def result(times_us, kernel: str = "k", samples: bool = True) -> dict:
    """A report's entry for `times_us` (µs); without its samples, as a sweep database keeps it."""
    s = summarize(np.asarray(times_us))
    entry = {"kernel": kernel, "grid": [64, 1, 1], "block": [256, 1, 1], "timer": "cupti", "cache_state": "warm",
             "stats_us": {"median": s.median, "ci_low": s.ci_low, "ci_high": s.ci_high, "rel_ci": s.rel_ci,
                          "p10": s.p10, "p90": s.p90, "outliers": s.outliers},
             "samples": s.count, "stop_reason": "precision", "rotation": {"sets": 1}, "host_us_per_kernel": 1.0,
             "wall_s": 0.01, "device": {"name": "GPU"}}
    if samples:
        entry["times_us"] = [float(t) for t in times_us]
    return entry


def run_of(rng, median_us: float, n: int = 200, noise: float = 0.01) -> list[float]:
    return list(rng.lognormal(np.log(median_us), noise, n))


@pytest.mark.parametrize("difference, low, high, verdict", [
    (0.0, -0.01, 0.01, "same"),
    (0.019, 0.018, 0.02, "same"),         # surely different, but by less than the threshold
    (0.05, 0.03, 0.07, "slower"),
    (0.05, 0.001, 0.1, "slower"),         # surely slower, by more than the threshold as estimated
    (-0.05, -0.07, -0.03, "faster"),
    (0.05, -0.01, 0.11, "can't tell"),    # the interval holds 0: not sure of the sign
    (0.01, 0.001, 0.03, "can't tell"),    # surely slower, but maybe by less than the threshold or maybe more
])
def test_judge_rule(difference, low, high, verdict):
    assert _core.judge(difference, low, high, 0.02) == verdict


def test_judge_at_threshold_zero_calls_any_sure_difference():
    assert _core.judge(0.001, 0.0005, 0.0015, 0.0) == "slower"
    assert _core.judge(0.0, -0.001, 0.001, 0.0) == "can't tell"
    assert DEFAULT_THRESHOLD == 0.02


def test_runs_of_one_kernel_are_the_same_and_a_5_percent_slower_one_slower():
    rng = np.random.default_rng(0)
    verdicts = [compare([result(run_of(rng, 100.0))], [result(run_of(rng, 100.0))])[0].verdict for _ in range(20)]
    assert verdicts == ["same"] * 20
    slower = [compare([result(run_of(rng, 100.0))], [result(run_of(rng, 105.0))])[0] for _ in range(20)]
    assert [c.verdict for c in slower] == ["slower"] * 20
    assert all(c.method == "bootstrap" and c.ratio_low < c.ratio < c.ratio_high for c in slower)
    [faster] = compare([result(run_of(rng, 105.0))], [result(run_of(rng, 100.0))])
    assert faster.verdict == "faster" and faster.ratio == pytest.approx(100 / 105, rel=0.01)


def test_too_few_noisy_samples_cannot_tell():
    rng = np.random.default_rng(1)
    [c] = compare([result(run_of(rng, 100.0, n=8, noise=0.1))], [result(run_of(rng, 105.0, n=8, noise=0.1))])
    assert c.verdict == "can't tell" and c.ratio_low < 1 < c.ratio_high


def test_the_threshold_decides_what_counts():
    rng = np.random.default_rng(2)
    a, b = [result(run_of(rng, 100.0, noise=0.002))], [result(run_of(rng, 103.0, noise=0.002))]
    assert compare(a, b)[0].verdict == "slower"
    assert compare(a, b, threshold=0.05)[0].verdict == "same"


def test_the_same_samples_give_the_same_verdicts():
    rng = np.random.default_rng(3)
    a, b = [result(run_of(rng, 100.0, n=30, noise=0.03))], [result(run_of(rng, 101.5, n=30, noise=0.03))]
    assert compare(a, b) == compare(a, b)


def test_without_samples_the_intervals_decide():
    rng = np.random.default_rng(4)
    a, b = result(run_of(rng, 100.0, n=400), samples=False), result(run_of(rng, 110.0, n=400), samples=False)
    [c] = compare([a], [b])
    assert c.method == "intervals" and c.verdict == "slower"
    assert c.ratio_low < c.ratio < c.ratio_high
    # Each end combines the two CIs' half-widths as independent errors: narrower than their plain sum.
    assert b["stats_us"]["ci_low"] / a["stats_us"]["ci_high"] < c.ratio_low
    same = compare([a], [result(run_of(rng, 100.0, n=400), samples=False)])[0]
    assert same.verdict == "same"
    # One side with samples and one without: the intervals.
    assert compare([result(run_of(rng, 100.0, n=400))], [b])[0].method == "intervals"


def test_a_median_ci_reaching_zero_cannot_tell():
    a = result([1.0, 2.0, 3.0], samples=False)
    a["stats_us"]["ci_low"] = 0.0
    [c] = compare([a], [result([2.0, 2.0, 2.0], samples=False)])
    assert c.verdict == "can't tell" and c.ratio_high == float("inf")


def test_samples_of_zero_still_compare():
    [c] = compare([result([0.0, 0.0, 1.0, 1.0, 1.0])], [result([1.0, 1.0, 1.0, 1.0, 1.0])])
    assert c.verdict in ("can't tell", "same") and np.isfinite(c.ratio_low)


@pytest.mark.parametrize("times_us", [[1.0, 2.0, 2.0, 5.0], [3.0, 1.0, 4.0, 1.0, 5.0]])
def test_the_bootstrap_medians_follow_the_law_of_resampling(monkeypatch, times_us):
    # Every resample of n samples (n ** n of them, equally likely): the exact law of a resample's median.
    data = np.asarray(times_us)
    n = len(data)
    every = np.indices((n,) * n).reshape(n, -1).T
    values, counts = np.unique(np.median(data[every], axis=1), return_counts=True)
    monkeypatch.setattr(comparison, "RESAMPLES", 200_000)
    drawn = comparison._bootstrap_medians(data, np.random.default_rng(0))
    assert set(np.unique(drawn)) <= set(values)
    frequencies = np.array([np.mean(drawn == v) for v in values])
    assert frequencies == pytest.approx(counts / counts.sum(), abs=0.006)


def test_comparing_a_million_samples_a_side_takes_a_moment():
    rng = np.random.default_rng(8)
    a, b = result(run_of(rng, 100.0, n=1_000_000)), result(run_of(rng, 100.0, n=1_000_000))
    started = time.perf_counter()
    [c] = compare([a], [b])
    assert time.perf_counter() - started < 5  # 0.2 s; resampling 2000 times over, 80 s
    assert c.method == "bootstrap" and c.verdict == "same"
    assert c.ratio_low < c.ratio < c.ratio_high and c.ratio_high - c.ratio_low < 1e-3  # 1 % noise, 10**6 samples


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_compare_command_shows_its_seconds_on_a_terminal(tmp_path, monkeypatch):
    import pyhipbench._progress
    from pyhipbench.cli import compare as compare_command
    monkeypatch.setattr(pyhipbench._progress, "DELAY_S", 0.1)
    monkeypatch.setattr(compare_command, "compare", lambda *args: (time.sleep(0.5), compare(*args))[1])
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    a = tmp_path / "a.json"
    a.write_text(json.dumps([result([1.0, 1.1, 1.2])]))
    assert cli.main(["compare", str(a), str(a)]) == 0
    assert re.search(r"reading and comparing: 0\.[1-6] s", terminal.getvalue())


@pytest.mark.parametrize("threshold", [-0.01, 1.0, float("nan"), "2%", True])
def test_bad_thresholds_are_refused(threshold):
    with pytest.raises(hb.BenchError, match=r"^threshold=.*expected a finite number >= 0 and < 1"):
        compare([result([1.0])], [result([1.0])], threshold=threshold)


def test_compare_command_threshold(tmp_path, capsys):
    rng = np.random.default_rng(5)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps([result(run_of(rng, 100.0, noise=0.002))]))
    b.write_text(json.dumps([result(run_of(rng, 103.0, noise=0.002))]))
    assert cli.main(["compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("B against A: 'same' within ±2 %") and out[2].endswith("  slower")
    assert cli.main(["compare", str(a), str(b), "--threshold", "5%"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("B against A: 'same' within ±5 %") and out[2].endswith("  same")
    assert cli.main(["compare", str(a), str(b), "--threshold", "0.05"]) == 0
    assert capsys.readouterr().out.splitlines()[2].endswith("  same")


@pytest.mark.parametrize("text, message", [
    ("150%", "pyhipbench compare: --threshold 150%: out of range, expected a finite number >= 0 and < 1"),
    ("-1%", "pyhipbench compare: --threshold -1%: out of range"),
])
def test_compare_command_refuses_bad_thresholds(tmp_path, capsys, text, message):
    a = tmp_path / "a.json"
    a.write_text(json.dumps([result([1.0, 1.1, 1.2])]))
    code = cli.main(["compare", str(a), str(a), f"--threshold={text}"])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1, err


def test_compare_command_refuses_a_threshold_that_is_not_a_number(tmp_path, capsys):
    a = tmp_path / "a.json"
    a.write_text(json.dumps([result([1.0, 1.1, 1.2])]))
    with pytest.raises(SystemExit) as exited:
        cli.main(["compare", str(a), str(a), "--threshold", "two"])
    assert exited.value.code == 2
    assert capsys.readouterr().err == ("pyhipbench compare: --threshold two: expected a number such as 0.01 or a "
                                       "percentage such as 1% (pyhipbench compare -h for help)\n")


@pytest.mark.parametrize("times, message", [
    ([1.0, 2.0], "times_us=[1.0, 2.0]: expected a list of 3 sample times"),
    ("1,2,3", "times_us='1,2,3': expected a list of 3 sample times"),
    ([1.0, -2.0, 3.0], "times_us[1]=-2.0: out of range, expected a finite number >= 0"),
    ([1.0, "2", 3.0], "times_us[1]='2': expected a finite number >= 0, got str"),
    ([1.0, 2.0, float("inf")], "times_us[2]=inf: out of range"),
])
def test_a_report_with_bad_samples_is_refused(tmp_path, times, message):
    entry = result([1.0, 2.0, 3.0])
    entry["times_us"] = times
    path = tmp_path / "r.json"
    path.write_text(json.dumps([entry]))
    with pytest.raises(hb.BenchError, match=r"r\.json: entry 0: ") as e:
        report.load(path)
    assert message in str(e.value)


def test_compare_across_cache_states_when_asked_and_says_why_nothing_matched(tmp_path, capsys):
    rng = np.random.default_rng(6)
    warm = result(run_of(rng, 100.0))
    cold = {**result(run_of(rng, 110.0)), "cache_state": "clean-cold"}
    assert compare([warm], [cold]) == []
    [c] = compare([warm], [cold], across=("cache",))
    assert c.key == "k grid 64x1x1 block 256x1x1 (cupti)" and c.verdict == "slower"
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps([warm]))
    b.write_text(json.dumps([cold]))
    assert cli.main(["compare", str(a), str(b)]) == 2
    assert capsys.readouterr().err == (
        f"pyhipbench compare: {a} and {b} have no kernel and launch in common (matched by kernel name, grid, block, "
        "cache state and timer): the nearest pair differs in cache state: A k grid 64x1x1 block 256x1x1 (warm, "
        "cupti), B k grid 64x1x1 block 256x1x1 (clean-cold, cupti); pass --across cache to compare across cache "
        "state\n")
    assert cli.main(["compare", str(a), str(b), "--across", "cache"]) == 0
    assert capsys.readouterr().out.splitlines()[2].endswith("  slower")
    b.write_text(json.dumps([{**cold, "kernel": "other"}]))
    assert cli.main(["compare", str(a), str(b)]) == 2
    assert capsys.readouterr().err.endswith("A times k, B other: no kernel in common\n")


def test_across_refuses_a_side_with_two_results_for_one_pairing_and_unknown_names():
    rng = np.random.default_rng(7)
    warm, cold = result(run_of(rng, 100.0)), {**result(run_of(rng, 100.0)), "cache_state": "clean-cold"}
    with pytest.raises(hb.BenchError, match=r"^A holds two results for k grid 64x1x1 block 256x1x1 \(cupti\) across "
                                            r"cache: .*\(warm, cupti\) and .*\(clean-cold, cupti\); expected one each"):
        compare([warm, cold], [warm], across=("cache",))
    with pytest.raises(hb.BenchError, match=r"^across=\('clock',\): 'clock' unknown; expected any of cache, timer"):
        compare([warm], [warm], across=("clock",))
