"""BenchOptions: every measurement option checked once, with one message wherever the value comes from."""
from __future__ import annotations

import math
from importlib import resources

import pytest

import pyhipbench as hb
from pyhipbench._measure.options import MAX_LAUNCHES

# (options, the one line that refuses them)
BAD = [
    (dict(timer="clock"), "timer='clock': expected one of events, cupti, rocprofiler, batched, graph or 'auto'"),
    (dict(cache="cold"), "cache='cold': expected one of warm, dirty-cold, clean-cold or 'auto' (default clean-cold)"),
    (dict(precision=0), "precision=0: out of range, expected a finite number > 0 and < 1"),
    (dict(precision=1), "precision=1: out of range, expected a finite number > 0 and < 1"),
    (dict(precision=math.nan), "precision=nan: out of range"),
    (dict(precision="1%"), "precision='1%': expected a finite number > 0 and < 1, got str"),
    (dict(max_time_s=0), "max_time_s=0: out of range, expected a finite number > 0"),
    (dict(max_time_s=math.inf), "max_time_s=inf: out of range"),
    (dict(iterations=0), f"iterations=0: out of range, expected an integer in [1, {MAX_LAUNCHES}]"),
    (dict(iterations=MAX_LAUNCHES + 1), f"iterations={MAX_LAUNCHES + 1}: out of range"),
    (dict(iterations=2.0), "iterations=2.0: expected an integer in"),
    (dict(warmup=-1), f"warmup=-1: out of range, expected an integer in [0, {MAX_LAUNCHES}]"),
    (dict(rotate=0), "rotate=0: out of range, expected an integer >= 1 (argument sets, or 'auto')"),
    (dict(rotate="many"), "rotate='many': expected 'auto' or a set count >= 1"),
    (dict(slower_than_us=0), "slower_than_us=0: out of range, expected a finite number > 0"),
    (dict(slower_than_us=3.0, iterations=5), "slower_than_us=3.0 with iterations=5: racing stops a run early"),
    (dict(rotate=4, cache="warm"), "rotate=4 with cache='warm': only dirty-cold rotates argument sets"),
    (dict(rotate=1, cache="dirty-cold"), "rotate=1 with cache='dirty-cold': only dirty-cold rotates"),
    (dict(timer="graph", cache="clean-cold"),
     "cache='clean-cold' with timer='graph': a graph sample spans several launches"),
]


@pytest.mark.parametrize("options, message", BAD, ids=[m.split(":")[0] for _, m in BAD])
def test_bad_options_are_refused_in_one_line_naming_the_value(options, message):
    with pytest.raises(hb.BenchError) as refused:
        hb.BenchOptions(**options)
    text = str(refused.value)
    assert text.startswith(message) and "\n" not in text


@pytest.mark.parametrize("options, message", BAD[:6], ids=[m.split(":")[0] for _, m in BAD[:6]])
def test_from_json_refuses_as_the_constructor_does(options, message):
    with pytest.raises(hb.BenchError, match="^" + message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        hb.BenchOptions.from_json(options)


def test_from_json_names_unknown_keys_and_non_objects():
    with pytest.raises(hb.BenchError, match=r"bench option\(s\) 'timers' unknown; expected cache, energy, hold_s, iterations"):
        hb.BenchOptions.from_json({"timers": "events"})
    with pytest.raises(hb.BenchError, match=r"bench=\[1\]: expected an object of bench\(\) options"):
        hb.BenchOptions.from_json([1])


def test_values_are_kept_as_plain_python_numbers_and_round_trip():
    import numpy as np
    options = hb.BenchOptions(iterations=np.int64(7), warmup=np.int32(2), precision=np.float32(0.5))
    assert type(options.iterations) is int and type(options.warmup) is int and type(options.precision) is float
    assert hb.BenchOptions.from_json(options.to_json()) == options


@pytest.mark.parametrize("cache, rotate, timer, state", [
    ("auto", "auto", "auto", "clean-cold"), ("auto", 1, "auto", "warm"), ("auto", 8, "auto", "dirty-cold"),
    ("warm", "auto", "auto", "warm"), ("dirty-cold", "auto", "auto", "dirty-cold"),
    ("auto", "auto", "cupti", "clean-cold"), ("auto", "auto", "graph", "dirty-cold"),
    ("auto", "auto", "batched", "dirty-cold"), ("auto", 1, "graph", "warm")])
def test_auto_cache_state(cache, rotate, timer, state):
    # A sample of several launches has no place for a clean step: auto is cold by rotation there.
    assert hb.BenchOptions(cache=cache, rotate=rotate, timer=timer).cache_state == state


def test_the_stopping_rule_of_a_fixed_count_and_of_racing():
    fixed = hb.BenchOptions(iterations=40, max_time_s=0.001).stop_rule()
    assert (fixed.min_samples, fixed.max_samples, fixed.precision) == (40, 40, 0)
    assert fixed.max_time_s > 1e6  # a fixed count is never cut short by the time cap
    raced = hb.BenchOptions(slower_than_us=2.5, precision=0.02).stop_rule()
    assert (raced.slower_than_us, raced.precision) == (2.5, 0.02)
    # Racing's runs start short; without a bound the rule is the core's default.
    assert (raced.warmup_chunk, raced.first_chunk, raced.min_samples) == (3, 6, 6)
    plain = hb.BenchOptions().stop_rule()
    assert (plain.warmup_chunk, plain.first_chunk, plain.min_samples) == (8, 16, 10)


def test_replace_checks_the_change():
    with pytest.raises(hb.BenchError, match="slower_than_us=-1: out of range"):
        hb.BenchOptions().replace(slower_than_us=-1)


def _refusal(call) -> str:
    with pytest.raises(hb.BenchError) as refused:
        call()
    return str(refused.value)


def _sweep_refusal(options: dict) -> str:
    copy = resources.files("pyhipbench") / "kernels" / "copy.ptx"
    space = [{"source": {"kind": "code-object", "path": str(copy)}, "kernel": "copy", "grid": [1], "block": [1],
              "args": ["array:float32:4", "array:float32:4", "int64:4"], "bench": options}]
    return _refusal(lambda: hb.candidates_from_json(space))


@pytest.mark.parametrize("options, message", BAD, ids=[m.split(":")[0] for _, m in BAD])
def test_bench_and_a_sweep_candidate_refuse_alike(options, message):
    by_options = _refusal(lambda: hb.BenchOptions(**options))
    assert _refusal(lambda: hb.bench(None, 1, 1, [], **options)) == by_options
    assert by_options in _sweep_refusal(options)  # the space reader may say which candidate


@pytest.mark.parametrize("options, message", BAD[:8], ids=[m.split(":")[0] for _, m in BAD[:8]])
def test_autotune_refuses_as_bench_does(options, message):
    triton = pytest.importorskip("triton", reason="Triton is not installed: autotune needs it")
    from pyhipbench import triton as ht
    configs = [triton.Config({"BLOCK": 128})]
    assert _refusal(lambda: ht.autotune(configs, key=["n"], **options)) == _refusal(lambda: hb.BenchOptions(**options))
