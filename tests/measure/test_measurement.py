"""bench()'s measurement policy on the fakes: cache states, timers, warm-up and stopping, reports."""
from __future__ import annotations

import json
from importlib import resources

import numpy as np
import pytest

import pyhipbench as hb
from pyhipbench import _core, cli
from pyhipbench._measure.cache import clean_step
from pyhipbench._measure.timers import core_timer, default_timer
from pyhipbench._results import report
from pyhipbench._results.comparison import compare
from pyhipbench._results.environment import environment

from codegen_helpers import require_toolchain
from fakes.driver import mapped_libraries

COPY_PTX = (resources.files("pyhipbench") / "kernels" / "copy.ptx").read_bytes()
LAUNCH = {"cuda": "cuLaunchKernel", "hip": "hipExtModuleLaunchKernel"}
MiB = 1 << 20


@pytest.fixture
def copy(device):
    return device.load_module(COPY_PTX).kernel("copy")


def copy_args(device, n=1 << 18):
    src = device.array(np.arange(n, dtype=np.float32))
    return [src, device.empty_like(src), hb.int64(n)]


@pytest.fixture
def clean_step_compiles(backend_name):
    """The clean step's kernel: bundled PTX on CUDA; on HIP compiled from IR, which needs the LLVM toolchain."""
    if backend_name == "hip":
        require_toolchain("gfx942")


def kernel_launches(fake_driver, backend_name, kernel):
    return [r for r in fake_driver.records(LAUNCH[backend_name]) if r.function == kernel.handle]


# ---- cache states -------------------------------------------------------------

def test_clean_cold_runs_the_clean_step_before_every_launch_with_one_set(device, copy, fake_driver, backend_name,
                                                                          clean_step_compiles):
    fake_driver.read_args(2)
    args = copy_args(device)
    res = hb.bench(copy, 4, 256, args, cache="clean-cold", timer="events", iterations=5, warmup=2)
    launches = fake_driver.records(LAUNCH[backend_name])
    clean = clean_step(device)
    assert [r.function for r in launches] == [clean.kernel.handle, copy.handle] * 7   # warm-up included
    assert {r.arg_values[0] for r in launches[::2]} == {clean.buffer.address}
    assert clean.nbytes == int(1.25 * device.properties.llc_bytes) // 16 * 16
    assert {r.arg_values[0] for r in launches[1::2]} == {args[0].address}            # one argument set
    assert res.cache_state == "clean-cold" and res.rotation.sets == 1 and res.samples == 5


def test_the_clean_reads_size_is_a_parameter(device, fake_driver, clean_step_compiles):
    from pyhipbench._measure.cache import CleanStep
    llc = device.properties.llc_bytes
    step = CleanStep(device, int(1.25 * llc) + 7)
    assert step.nbytes == (int(1.25 * llc) + 7) // 16 * 16 and step.buffer.nbytes == step.nbytes
    step.free()
    with pytest.raises(hb.BenchError, match=r"read_bytes=8: out of range, expected an integer >= 16 \(bytes\)"):
        CleanStep(device, 8)


def test_warm_and_dirty_cold_launch_no_clean_step(device, copy, fake_driver, backend_name):
    args = copy_args(device)
    for cache, sets in (("warm", 1), ("dirty-cold", 4)):   # 2 MiB sets against the fake's 4 MiB LLC: 2 x 2
        res = hb.bench(copy, 4, 256, args, cache=cache, timer="events", iterations=8, warmup=0)
        assert res.cache_state == cache and res.rotation.sets == sets
    assert {r.function for r in fake_driver.records(LAUNCH[backend_name])} == {copy.handle}


@pytest.mark.parametrize("rotate, cache", [("auto", "clean-cold"), (1, "warm"), (3, "dirty-cold")])
def test_auto_cache_follows_rotate(device, copy, rotate, cache, backend_name):
    if cache == "clean-cold" and backend_name == "hip":
        require_toolchain("gfx942")   # the clean step's kernel is compiled from IR
    res = hb.bench(copy, 4, 256, copy_args(device), rotate=rotate, timer="events", iterations=3, warmup=0)
    assert res.cache_state == cache


def test_dirty_cold_with_nothing_to_rotate_is_named_warm(device, copy):
    src = device.empty(64, np.float32)
    res = hb.bench(copy, 1, 64, [hb.shared(src), hb.Pointer(src.address), hb.int64(64)], cache="dirty-cold",
                   timer="events", iterations=3, warmup=0)
    assert res.cache_state == "warm" and "nothing to rotate" in res.rotation.reason


def test_the_clean_step_is_made_once_per_device(device, copy, clean_step_compiles):
    args = copy_args(device)
    hb.bench(copy, 4, 256, args, cache="clean-cold", timer="events", iterations=2, warmup=0)
    first = clean_step(device)
    hb.bench(copy, 4, 256, args, cache="clean-cold", timer="events", iterations=2, warmup=0)
    assert clean_step(device) is first


# ---- timers -------------------------------------------------------------------

@pytest.mark.parametrize("timer", ["graph", "batched"])
def test_graph_and_batched_span_whole_rotations(device, copy, backend_name, timer):
    if timer == "batched" and backend_name == "hip":
        pytest.skip("the fake HIP runtime cannot run the AMD spin kernel the HIP batched timer needs")
    res = hb.bench(copy, 4, 256, copy_args(device), cache="dirty-cold", rotate=3, timer=timer, iterations=4,
                   warmup=0)
    assert res.timer == timer and res.launches_per_sample == 18   # 3 sets x 6: the first multiple >= 16
    assert res.median_us == pytest.approx(4.0, rel=1e-3)          # the fake's 4 µs per launch, per kernel


def test_the_default_timer_on_the_fake_driver_is_events(device, copy, fake_libraries):
    # No libcupti loads here (no_real_cupti): the probe falls back, whatever CUPTI the machine has.
    before = mapped_libraries("libcupti")
    res = hb.bench(copy, 4, 256, copy_args(device), cache="warm", iterations=3, warmup=0)
    assert res.timer == "events"
    assert default_timer(device) == "events"    # the probe's answer, kept for the device
    assert mapped_libraries("libcupti") == before   # the probe loaded no libcupti of the machine


def test_set_up_makes_what_a_first_measurement_would(device, copy, fake_driver):
    from pyhipbench._measure.bench import set_up
    set_up(device, hb.BenchOptions(timer="events", cache="warm"))
    assert clean_step not in device.kept and (default_timer, device.backend.kernel_timer) not in device.kept
    set_up(device, hb.BenchOptions())   # auto timer, clean-cold
    made = dict(device.kept)
    assert clean_step in made and made[(default_timer, device.backend.kernel_timer)] is False  # no CUPTI here
    launches = len(fake_driver.records(LAUNCH[device.backend.name]))
    res = hb.bench(copy, 4, 256, copy_args(device), iterations=3, warmup=0)
    assert res.timer == "events" and res.cache_state == "clean-cold"
    assert device.kept[clean_step] is made[clean_step]   # the measurement made neither again
    assert len(fake_driver.records(LAUNCH[device.backend.name])) == launches + 6   # 3 samples, 3 clean steps


def test_the_default_timer_is_cupti_where_cupti_traces(device, copy, fake_cupti, backend_name):
    if backend_name == "hip":
        pytest.skip("CUPTI is NVIDIA's")
    res = hb.bench(copy, 4, 256, copy_args(device), iterations=3, warmup=0)
    assert res.timer == "cupti" and default_timer(device) == "cupti"


def test_cupti_clean_cold_keeps_the_clean_steps_out_of_the_samples(device, copy, fake_driver, fake_cupti,
                                                                  backend_name):
    if backend_name == "hip":
        pytest.skip("CUPTI is NVIDIA's")
    fake_driver.lib.fake_set_launch_ms_step(0.001)   # launch k takes 4 + k µs: clean steps are the even k
    res = hb.bench(copy, 4, 256, copy_args(device), timer="cupti", cache="clean-cold", iterations=3, warmup=0)
    np.testing.assert_allclose(res.times_us, [5.0, 7.0, 9.0], atol=1e-6)


# ---- warm-up and stopping -------------------------------------------------------

def test_constant_times_stop_on_precision_after_a_settled_warm_up(device, copy):
    res = hb.bench(copy, 4, 256, copy_args(device), timer="events", cache="warm")
    assert res.stop_reason == "precision" and res.warmup == 8  # the second 8-sample chunk agrees: it is timed
    assert res.samples == 16 and res.stats.rel_ci == 0.0


def test_racing_stops_a_far_loser_after_one_sample_where_its_run_read_the_clock(device, copy, fake_driver,
                                                                              fake_cupti, backend_name):
    # 250 µs against a bound of 60: over twice it in the first sample, which runs alone. The clock probe (CUDA)
    # read that run's clock: the far loser stops there. HIP reads no clock yet: the rest of the warm-up chunk
    # runs, a clear loser after 3 samples.
    fake_driver.lib.fake_set_launch_ms(0.25)
    for timer in ("cupti", "events") if backend_name == "cuda" else ("events",):
        res = hb.bench(copy, 4, 256, copy_args(device), timer=timer, cache="warm", slower_than_us=60.0)
        assert res.stop_reason == "slower" and res.warmup == 0, timer
        assert res.samples == (1 if backend_name == "cuda" else 3), timer
        assert (res.clock is not None) == (backend_name == "cuda")


def test_drifting_times_keep_warming_up(device, copy, fake_driver):
    # Every launch 0.1 µs slower than the last (from 4 µs): consecutive 8-sample chunks' medians are
    # 0.8 µs apart, within the 2 % settle band only once the earlier passes 40 µs: the chunk from launch
    # 368 on is the first to agree with the one before, and the first timed.
    fake_driver.lib.fake_set_launch_ms_step(0.0001)
    res = hb.bench(copy, 4, 256, copy_args(device), timer="events", cache="warm", max_time_s=0.05)
    assert res.warmup == 368


class Alternating(_core.Timer):
    """A timer whose first 1000 samples alternate 1 µs and 2 µs every 8 (every warm-up chunk), then read 1 µs."""

    def __init__(self) -> None:
        super().__init__("alternating")
        self.runs, self.taken = 0, 0

    def run(self, plan, samples, first_set):
        self.runs += 1
        index = np.arange(self.taken, self.taken + samples)
        self.taken += samples
        return np.where(index < 1000, 1.0 + (index // 8) % 2, 1.0), 1, 0.0


def test_warm_up_is_capped():
    from pyhipbench._core import StopRule
    timer = Alternating()
    plan = _core.LaunchPlan(0xF00, "kern", (1, 1, 1), (1, 1, 1), 0, 0, [bytes(8)], [0])
    taken = _core.measure(timer, plan, StopRule())
    assert taken.warmup_samples == 1000   # max_warmup_samples, in 8-sample chunks that never agree
    # The first run (3 warm-up chunks), runs as long as the warm-up so far (24, 48, ..., 384 samples) and the
    # 232 the cap leaves, then one timed run of constant times: 8 synchronisations, where runs of one chunk
    # would take 124.
    assert timer.runs == 1 + 6 + 1 and len(taken.times_us) == 16


def test_a_noisy_kernel_is_stopped_by_the_time_cap(device, copy, fake_driver):
    fake_driver.lib.fake_set_launch_ms_step(0.0001)
    res = hb.bench(copy, 4, 256, copy_args(device), timer="events", cache="warm", warmup=0, max_time_s=0.02,
                   precision=0.0001)
    assert res.stop_reason in ("max-time", "max-samples") and res.samples >= 16
    assert res.precision == 0.0001


def test_host_cost_counts_timed_launches_only(device, copy):
    res = hb.bench(copy, 4, 256, copy_args(device), timer="events", cache="warm", iterations=10, warmup=50)
    assert 0 < res.host_us_per_kernel < 1e4 and res.wall_s > 0


# ---- reports and compare ------------------------------------------------------------

def results(device, copy, launch_ms: float, fake_driver) -> list[dict]:
    fake_driver.lib.fake_set_launch_ms(launch_ms)
    return [hb.bench(copy, 4, 256, copy_args(device), timer="events", cache="warm", iterations=20,
                     warmup=0).to_dict()]


def test_reports_in_every_format(device, copy, fake_driver, tmp_path):
    data = results(device, copy, 0.004, fake_driver)
    env = environment([device])
    written = json.loads(report.render(tmp_path / "r.json", data, env))
    assert written == {**env, "results": data} and written["schema_version"] == 2
    csv_lines = report.render(tmp_path / "r.csv", data, env).splitlines()
    assert csv_lines[0].split(",") == list(report.COLUMNS) and csv_lines[1].startswith("copy,4x1x1,256x1x1,events,warm,4.0")
    markdown = report.render(tmp_path / "r.md", data, env).splitlines()
    assert markdown[0].startswith("| kernel |") and markdown[2].startswith("| copy | 4x1x1 | 256x1x1 | events | warm | 4.000")
    with pytest.raises(hb.BenchError, match="r.txt: unknown report format '.txt'; expected one of .json, .csv, .md"):
        report.render(tmp_path / "r.txt", data, env)


def test_compare_calls_faster_slower_same_from_the_intervals(device, copy, fake_driver, tmp_path):
    slow, fast = results(device, copy, 0.008, fake_driver), results(device, copy, 0.004, fake_driver)
    [faster] = compare(slow, fast)
    assert faster.verdict == "faster" and faster.ratio == pytest.approx(0.5, rel=1e-3)
    assert compare(fast, slow)[0].verdict == "slower"
    assert compare(fast, fast)[0].verdict == "same"


def test_compare_command(device, copy, fake_driver, tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(results(device, copy, 0.008, fake_driver)))
    b.write_text(json.dumps(results(device, copy, 0.004, fake_driver)))
    assert cli.main(["compare", str(a), str(b)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].startswith("copy grid 4x1x1 block 256x1x1 (warm, events)") and lines[2].endswith("faster")
    (tmp_path / "bad.json").write_text("{")
    assert cli.main(["compare", str(a), str(tmp_path / "bad.json")]) == 2
    assert "bad.json: not a JSON report" in capsys.readouterr().err
    (tmp_path / "other.json").write_text(json.dumps([{"kernel": "x"}]))
    assert cli.main(["compare", str(a), str(tmp_path / "other.json")]) == 2
    assert "entry 0 is not a pyhipbench result" in capsys.readouterr().err


def test_run_writes_every_format_asked_for(device, fake_driver, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cli, "_open_device", lambda backend, index=0: device)
    ptx = tmp_path / "k.ptx"
    ptx.write_bytes(COPY_PTX)
    outs = [tmp_path / f"r.{suffix}" for suffix in ("json", "csv", "md")]
    argv = ["run", str(ptx), "--kernel", "copy", "--grid", "4", "--block", "256", "--arg", "array:float32:256",
            "--arg", "array:float32:256", "--arg", "int64:256", "--timer", "events", "--cache", "warm",
            "--precision", "2%", "--max-time", "0.5"]
    for out in outs:
        argv += ["--out", str(out)]
    assert cli.main(argv) == 0
    [result] = json.loads(outs[0].read_text())["results"]
    assert result["timer"] == "events" and result["cache_state"] == "warm" and result["precision"] == 0.02
    assert outs[1].read_text().startswith("kernel,grid") and outs[2].read_text().startswith("| kernel |")
    assert cli.main(argv[:-2] + ["--out", str(tmp_path / "r.txt")]) == 2
    assert "unknown report format '.txt'" in capsys.readouterr().err


def test_tiny_sets_on_a_large_cache_need_no_more_sets_than_launches(fake_libraries, fake_driver_cuda):
    # 2 KiB sets against a 256 MiB last-level cache: the rule asks 262144 sets; a 20-launch run gets 20.
    from fakes.host_backend import HostBackend
    driver = hb._core.load_driver("cuda", str(fake_libraries["cuda"]))
    device = hb.Device.from_backend(HostBackend(l2_bytes=4 * MiB, llc_bytes=256 * MiB), driver)
    copy = device.load_module(COPY_PTX).kernel("copy")
    res = hb.bench(copy, 1, 256, copy_args(device, 256), cache="dirty-cold", timer="events", iterations=16,
                   warmup=4)
    assert res.rotation.sets == 20 and "capped to 20: the run makes no more launches" in res.rotation.reason
    launches = fake_driver_cuda.records("cuLaunchKernel")
    assert len({r.params for r in launches}) == 20                   # every launch on its own set


@pytest.mark.parametrize("name, launches, message", [
    ("clock", 0, "timer 'clock': expected one of events, cupti, rocprofiler, batched, graph"),
    (None, 0, "timer None: expected one of events, cupti, rocprofiler, batched, graph"),
    ("graph", -1, r"launches_per_sample=-1: out of range, expected an integer in \[0, 512\]"),
    ("graph", 4.0, r"launches_per_sample=4.0: expected an integer in \[0, 512\], got float"),
    ("events", 5, "launches_per_sample=5: the events timer times each launch on its own"),
])
def test_bad_timer_requests_are_named(device, name, launches, message):
    with pytest.raises(hb.BenchError, match=message):
        core_timer(device, name, launches)


def test_compare_of_files_that_do_not_match_or_exist(device, copy, fake_driver, tmp_path, capsys):
    a = tmp_path / "a.json"
    a.write_text(json.dumps(results(device, copy, 0.004, fake_driver)))
    other = [dict(json.loads(a.read_text())[0], kernel="other")]
    (tmp_path / "b.json").write_text(json.dumps(other))
    assert cli.main(["compare", str(a), str(tmp_path / "b.json")]) == 2
    assert "have no kernel and launch in common" in capsys.readouterr().err
    assert cli.main(["compare", str(a), str(tmp_path / "missing.json")]) == 1
    assert capsys.readouterr().err == f"pyhipbench compare: {tmp_path / 'missing.json'}: No such file or directory\n"
