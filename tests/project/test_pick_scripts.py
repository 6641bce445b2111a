"""bench/cache_state_study.py and bench/pick_quality.py: their rank correlations, verdicts and option checks,
on readings given here (the measuring itself needs a GPU)."""
from __future__ import annotations

import importlib
import math
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def bench_modules(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    return (importlib.import_module("rank_agreement"), importlib.import_module("cache_state_study"),
            importlib.import_module("pick_quality"))


def test_rank_correlations_match_their_definitions(bench_modules):
    ranks, _, _ = bench_modules
    assert ranks.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert ranks.kendall([1, 2, 3, 4], [40, 30, 20, 10]) == pytest.approx(-1.0)
    # One swapped pair of 6: (5 - 1) / 6; Spearman 1 - 6 * 2 / (4 * 15) = 0.8.
    assert ranks.kendall([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)
    assert ranks.spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    # Ties: tau-b takes the tied pair out of its side's count (scipy.stats.kendalltau gives 0.9128709).
    assert ranks.kendall([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(5 / math.sqrt(5 * 6))
    assert math.isnan(ranks.kendall([1, 1, 1], [1, 2, 3])) and math.isnan(ranks.spearman([2, 2], [1, 2]))


def test_a_state_is_judged_by_the_in_model_cost_of_its_picks(bench_modules):
    _, study, _ = bench_modules
    in_model = {"a": {"median_us": 100.0}, "b": {"median_us": 100.5}, "c": {"median_us": 110.0},
                "d": {"passes_us": [], "error": "OutOfResources"}}
    isolated = {"median_us": {"a": 51.0, "b": 50.0, "c": 60.0}, "picks": ["b", "a", "c"], "errors": {}}
    row = study.agreement(isolated, in_model)
    assert row["in_model_winner"] == "a" and row["full_winner"] == "b" and not row["full_winner_is_winner"]
    assert row["full_winner_cost"] == pytest.approx(0.005) and row["configs"] == 3
    assert row["pick_costs"] == pytest.approx([0.005, 0.0, 0.1])
    assert (row["picks_winner"], row["picks_within"]) == (1, 2)  # b is within 1 %, c 10 % above
    assert row["kendall"] == pytest.approx(1 / 3) and row["spearman"] == pytest.approx(0.5)
    totals = study.by_state([{**row, "state": "warm"}], ["warm"])
    assert totals[0]["full_winners"] == 0 and totals[0]["full_winners_within"] == 1
    assert totals[0]["picks_within"] == 2 and totals[0]["worst_pick_cost"] == pytest.approx(0.1)


def test_a_pick_meets_the_target_within_1_percent_or_as_fast_as_tritons(bench_modules):
    _, _, picks = bench_modules
    forward = {"a": {"median_ms": 0.100}, "b": {"median_ms": 0.102}, "c": {"median_ms": 0.104}}
    reverse = {"a": {"median_ms": 0.100}, "b": {"median_ms": 0.102}, "c": {"median_ms": 0.104}}
    in_model = {"eager": {"a": {"median_us": 100.0}, "b": {"median_us": 100.8}, "c": {"median_us": 103.0}},
                "compiled": {"a": {"median_us": 100.0}, "b": {"median_us": 102.0}, "c": {"median_us": 101.5}}}
    b = picks.judged("b", forward, reverse, in_model, triton_pick="c")
    assert b["reference"]["winner"] == "a" and b["reference"]["above_winner"] == pytest.approx(0.02)
    assert b["in_model"]["eager"]["meets"]          # 0.8 % above the in-model best
    assert not b["in_model"]["compiled"]["meets"]   # 2 % above it, and slower than Triton's pick (1.5 %)
    assert not b["meets"]
    assert picks.judged("b", forward, reverse, in_model, triton_pick="b")["meets"]  # as fast as Triton's pick
    gone = picks.judged("d", forward, reverse, in_model, triton_pick="a")
    assert not gone["meets"] and gone["reference"]["above_winner"] is None


@pytest.mark.parametrize("script, argv, message", [
    ("cache_state_study", ["--spaces", "gemm,mlp"], "--spaces 'gemm,mlp': expected distinct names among gemm, "
     "split-k, bias-gelu, attention"),
    ("cache_state_study", ["--states", "warm,warm"], "--states 'warm,warm': expected distinct names among"),
    ("cache_state_study", ["--iterations", "5"], "--iterations 5, --repeats 3, --configs None: expected at least "
     "10 forwards, 1 tuning and 2 configs"),
    ("pick_quality", ["--processes", "0"], "--processes 0, --iterations 200, --configs None, --reference-ms 300.0: "
     "expected at least 1 process"),
    ("pick_quality", ["--modes", "jit"], "--modes 'jit': expected distinct names among eager, compiled"),
])
def test_the_scripts_refuse_bad_options_in_one_line(bench_modules, script, argv, message, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [f"{script}.py", *argv])
    with pytest.raises(SystemExit) as exit_:
        importlib.import_module(script).main()
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and message in err and "Traceback" not in err


def test_quick_is_one_space_two_processes_and_eight_configs(bench_modules):
    _, _, picks = bench_modules
    quick = picks.parse(["--quick"])
    assert (quick.spaces, quick.processes, quick.configs) == (["split-k"], 2, 8)
    assert picks.parse(["--quick", "--spaces", "gemm,attention", "--configs", "4"]).spaces == ["gemm"]
    assert picks.parse([]).spaces == ["attention", "split-k", "gemm"]
