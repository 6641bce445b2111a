"""bench/ scripts refuse bad options with one line naming the value, before touching a GPU; clean_isolation.py
runs end to end on the fake driver."""
from __future__ import annotations

import importlib
import sys
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

import pyhipbench as hb

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.mark.parametrize("script, argv, message", [
    ("throughput", ["--caches", "cold"], "--caches 'cold': expected cache states among auto, warm, dirty-cold, "
     "clean-cold"),
    ("throughput", ["--caches", "warm,warm"], "--caches 'warm,warm': expected cache states among"),
    ("throughput", ["--caches", ""], "--caches '': expected cache states among"),
    ("throughput", ["--candidates", "0"], "--candidates 0 --repeats 5: expected counts >= 1"),
    ("clean_isolation", ["--sizes", "64,x"], "--sizes '64,x' --reads '1.25,2,3,1.25': expected comma-separated "
     "numbers > 0"),
    ("clean_isolation", ["--reads", "1.25,0"], "--sizes '64,16' --reads '1.25,0': expected comma-separated "
     "numbers > 0"),
    ("clean_isolation", ["--samples", "1"], "--samples 1: expected 2 (a lag-1 correlation needs two) to 1000000"),
    ("sweep_host_overhead", ["--gpus", "0"], "--candidates 500, --gpus 0, --iterations 20, --replacements 5: "
     "expected positive counts"),
    ("sweep_host_overhead", ["--replacements", "-1"], "--replacements -1: expected positive counts"),
    ("autotune_ties", ["--sizes", "8,x"], "argument --sizes: '8,x': expected comma-separated sizes >= 16"),
    ("compile_ahead", ["--warm-runs", "0"], "--warm-runs 0: expected at least 1 new process with the cache warm"),
    ("helion_autotune", ["--kernels", "matmul,gemm"], "--kernels 'matmul,gemm': expected distinct names among "
     "matmul, softmax, rowsum"),
    ("helion_autotune", ["--kernels", "softmax,softmax"], "--kernels 'softmax,softmax': expected distinct names"),
    ("helion_autotune", ["--seed", "x"], "argument --seed: invalid int value: 'x'"),
    ("helion_autotune", ["--one-process=yes"], "argument --one-process: ignored explicit argument 'yes'"),
    ("inductor_autotune", [], "the following arguments are required: --out"),
    ("inductor_autotune", ["--out", "x.json", "--models", "mlp,resnet"], "--models 'mlp,resnet': expected distinct "
     "names among mlp, attention, gemms"),
    ("inductor_autotune", ["--out", "x.json", "--install", "[1]"], "--install '[1]': expected a JSON object of "
     "pyhipbench.inductor.install()'s keywords"),
    ("inductor_autotune", ["--out", "x.json", "--install", '{"precision": 5}'], "--install '{\"precision\": 5}': "
     "precision=5: out of range, expected a finite number > 0 and < 1"),
    ("inductor_autotune", ["--out", "x.json", "--install", '{"colour": 1}'], "--install '{\"colour\": 1}': "
     "pyhipbench.inductor.install option(s) 'colour' unknown; expected cache,"),
    ("inductor_autotune", ["--out", "x.json", "--install", '{"tie_hold_s": "long"}'], "--install "
     "'{\"tie_hold_s\": \"long\"}': tie_hold_s='long': expected"),
    ("inductor_autotune", ["--out", "x.json", "--dtypes", "float32"], "--dtypes 'float32': expected distinct names "
     "among bfloat16, float16"),
    ("clean_isolation", ["--samples", "1000001"], "--samples 1000001: expected 2 (a lag-1 correlation needs two) "
     "to 1000000"),
])
def test_scripts_refuse_bad_options(script, argv, message, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(BENCH))
    module = importlib.import_module(script)
    monkeypatch.setattr(sys, "argv", [f"{script}.py", *argv])
    with pytest.raises(SystemExit) as exit_:
        module.main()
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and message in err and "Traceback" not in err


@pytest.mark.parametrize("backend_name", ["cuda"])
def test_clean_isolation_times_each_read_size_on_the_fake(device, fake_driver, monkeypatch, capsys):
    """clean_isolation.py end to end on the fake driver (its setup swapped for a small copy on the fake
    device): per size and read, `--samples` timed clean-cold samples after 16 warm-up, the clean step
    reading the asked multiple of the LLC before every launch, and one table row each."""
    monkeypatch.syspath_prepend(str(BENCH))
    import clean_isolation
    copy = device.load_module((resources.files("pyhipbench") / "kernels" / "copy.ptx").read_bytes()).kernel("copy")

    def setup(case):
        n = case["bytes"] // (4 << 10)  # 1/1024 of the case: the fake's memory is the host's
        src = device.array(np.ones(n, np.float32))
        return device, copy, 4, 256, [src, device.empty_like(src), hb.int64(n)], [src]

    monkeypatch.setattr(clean_isolation, "setup", setup)
    monkeypatch.setattr(sys, "argv", ["clean_isolation.py", "--samples", "40", "--sizes", "64,16", "--reads", "1.25,2"])
    fake_driver.read_args(2)
    fake_driver.lib.fake_set_launch_ms_step(2e-6)  # each launch 2 ns longer: a rising series
    clean_isolation.main()
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ") and "MiB" in line]
    assert [row.split(" | ")[:2] for row in rows] == [["| 64 MiB", "1.25"], ["| 64 MiB", "2"],
                                                      ["| 16 MiB", "1.25"], ["| 16 MiB", "2"]]
    # A rising series: lag-1 correlation 1, a slow sample always followed by a slow one.
    assert all(row.split(" | ")[5:7] == ["+1.00", "1.00"] for row in rows)
    launches = fake_driver.records("cuLaunchKernel")
    timed = [r for r in launches if r.function == copy.handle]
    clean = [r for r in launches if r.function != copy.handle]
    assert len(timed) == len(clean) == 4 * (16 + 40) and len(launches) == 2 * len(timed)
    assert all(a.function != copy.handle and b.function == copy.handle for a, b in zip(launches[::2], launches[1::2]))
    llc = device.properties.llc_bytes
    read_floats = [int(read * llc) // 16 * 16 // 4 for read in (1.25, 2)]
    assert [clean[i * 56].arg_values[1] for i in range(4)] == read_floats * 2


def test_compile_ahead_judges_a_pick_against_both_reference_passes(monkeypatch):
    """The two do_bench passes (configs in order, then reversed) each name a winner; together, each config
    reads the mean of its two medians, give or take half their difference."""
    monkeypatch.syspath_prepend(str(BENCH))
    import compile_ahead
    forward = {"a": {"median_ms": 0.361, "p80_ms": 0.364}, "b": {"median_ms": 0.3655, "p80_ms": 0.3666},
               "c": {"median_ms": 0.3676, "p80_ms": 0.3682}, "d": {"error": "out of resources"},
               "e": {"median_ms": 0.380, "p80_ms": 0.381}}
    reverse = {"a": {"median_ms": 0.3828, "p80_ms": 0.3895}, "b": {"median_ms": 0.3624, "p80_ms": 0.3654},
               "c": {"median_ms": 0.3591, "p80_ms": 0.3602}, "d": {"error": "out of resources"},
               "e": {"median_ms": 0.381, "p80_ms": 0.382}}
    assert compile_ahead.judged_by(forward, "b") == pytest.approx(
        {"winner": "a", "over_winner": 0.3655 / 0.361, "within_noise": False})
    both = compile_ahead.judged_by_both(forward, reverse, "b")
    assert both["winner"] == "c" and both["over_winner"] == pytest.approx(0.36395 / 0.36335)
    assert both["within_noise"]    # 0.6 µs above c, within b's 1.55 and c's 4.25 µs
    assert compile_ahead.judged_by_both(forward, reverse, "a")["within_noise"]  # 8.6 µs above; a moves 10.9 µs
    assert not compile_ahead.judged_by_both(forward, reverse, "e")["within_noise"]  # 17.2 µs above, 4.75 allowed
    assert compile_ahead.judged_by_both(forward, reverse, "d") == {"winner": "c", "within_noise": False}
