"""The rocprofiler timer against the fake librocprofiler-sdk over the fake HIP runtime, each test in a fresh process.

rocprofiler-sdk's configuration is once per process and must come before HIP
initialises, so each case runs in a child Python: attach (or not), then a
Device over the fake HIP runtime, then bench(). No AMD GPU runs anything here.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fakes.build import ROCPROFILER_LIBRARY_NAME, build_fake

TESTS = Path(__file__).parents[1]


@pytest.fixture(scope="module")
def fakes(tmp_path_factory):
    """The fake HIP runtime and the fake rocprofiler-sdk linked to it, side by side."""
    folder = tmp_path_factory.mktemp("fake-rocprofiler")
    hip = build_fake(folder, "libamdhip64.so")
    return hip, build_fake(folder, ROCPROFILER_LIBRARY_NAME)


def child(fakes, body: str, attach: bool = True, hip_first: bool = False) -> dict:
    """Runs `body` in a fresh Python: (optionally hipInit on the fake, then) attach the fake SDK, then a
    Device `device` over the fake HIP runtime with the fake's `copy` kernel; the JSON of its last print."""
    hip, sdk = fakes
    script = f"""
import ctypes, json, sys
sys.path.insert(0, {str(TESTS)!r})
from pyhipbench import _core
hip = ctypes.CDLL({str(hip)!r})
if {hip_first}:
    assert hip.hipInit(0) == 0
attached = _core.attach_rocprofiler({str(sdk) if attach else "/no/librocprofiler-sdk.so"!r})
import numpy as np
import pyhipbench as hb
from importlib import resources
from fakes.driver import FakeDriver
from fakes.host_backend import HostBackend
from pyhipbench._measure.timers import default_timer
device = hb.Device.from_backend(HostBackend(backend="hip", arch="gfx942"), _core.load_driver("hip", {str(hip)!r}))
fake = FakeDriver({str(hip)!r})
sdk = ctypes.CDLL({str(sdk)!r})
sdk.fake_rocprofiler_dispatches.restype = ctypes.c_uint64
copy = device.load_module((resources.files("pyhipbench") / "kernels" / "copy.ptx").read_bytes()).kernel("copy")
n = 1 << 12
args = [device.empty(n), device.empty(n), hb.int64(n)]
""" + textwrap.dedent(body)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_each_kernel_times_from_its_dispatch_record(fakes):
    out = child(fakes, """
fake.lib.fake_set_launch_ms(0.004)
res = hb.bench(copy, 4, 256, args, timer="rocprofiler", cache="warm", iterations=5, warmup=0)
print(json.dumps({"attached": attached, "default": default_timer(device), "timer": res.timer,
                  "times": list(res.times_us), "dispatches": sdk.fake_rocprofiler_dispatches()}))
""")
    assert out["attached"] == "" and out["timer"] == "rocprofiler" and out["default"] == "rocprofiler"
    assert out["times"] == [4.0] * 5
    assert out["dispatches"] == 1 + 5  # the default probe's launch, then the run's


def test_the_default_on_amd_is_rocprofiler_and_the_clean_step_is_not_a_sample(fakes):
    out = child(fakes, """
fake.lib.fake_set_launch_ms(0.002)
res = hb.bench(copy, 4, 256, args, cache="clean-cold", iterations=4, warmup=0)
chain = hb.bench_chain([hb.Launch(copy, 4, 256, args), hb.Launch(copy, 4, 256, args)], cache="warm",
                       iterations=3, warmup=0)
print(json.dumps({"timer": res.timer, "times": list(res.times_us), "chain": list(chain.times_us),
                  "kernels": [k.median_us for k in chain.kernels], "span": list(chain.span_us)}))
""")
    assert out["timer"] == "rocprofiler"
    assert out["times"] == [2.0] * 4  # the clean step's dispatch before each is recorded, and left out
    assert out["chain"] == [4.0] * 3 and out["kernels"] == [2.0, 2.0] and out["span"] == [4.0] * 3


def test_a_lost_record_fails_the_run_naming_the_sample(fakes):
    out = child(fakes, """
sdk.fake_rocprofiler_drop(ctypes.c_uint64(1))
try:
    _core.make_timer("rocprofiler", device.driver, 0).run(
        _core.LaunchPlan(copy.handle, "copy", (4, 1, 1), (256, 1, 1), 0, 0, [b"\\0" * 24], []), 3, 0)
except hb.MeasurementError as e:
    print(json.dumps({"error": str(e)}))
""")
    assert out["error"] == ("rocprofiler-sdk returned 0 dispatch record(s) for sample 0 of 'copy'; expected 1 "
                            "(none at all: the SDK was attached after HIP had initialised, so it sees no dispatch; "
                            "use timer='events')")


def test_attached_after_hip_initialised_it_sees_nothing_and_the_default_is_events(fakes):
    out = child(fakes, """
res = hb.bench(copy, 4, 256, args, cache="warm", iterations=3, warmup=0)
try:
    hb.bench(copy, 4, 256, args, timer="rocprofiler", cache="warm", iterations=3, warmup=0)
except hb.MeasurementError as e:
    error = str(e)
print(json.dumps({"attached": attached, "timer": res.timer, "error": error}))
""", hip_first=True)
    assert out["attached"] == "" and out["timer"] == "events"
    assert out["error"].startswith("rocprofiler-sdk returned 0 dispatch record(s) for sample 0 of 'copy'")


def test_without_the_sdk_the_default_is_events_and_the_timer_says_why(fakes):
    out = child(fakes, """
res = hb.bench(copy, 4, 256, args, cache="warm", iterations=3, warmup=0)
try:
    hb.bench(copy, 4, 256, args, timer="rocprofiler", cache="warm", iterations=3, warmup=0)
except hb.LibraryError as e:
    error = str(e)
print(json.dumps({"attached": attached, "again": _core.attach_rocprofiler(), "timer": res.timer,
                  "error": error, "loads": len(fake.records("hipModuleLoadData"))}))
""", attach=False)
    assert out["attached"].startswith("rocprofiler-sdk not loaded: cannot load the rocprofiler-sdk library "
                                      "'/no/librocprofiler-sdk.so'")
    assert out["again"] == out["attached"]  # once per process
    assert out["timer"] == "events"
    assert out["error"].startswith("the rocprofiler timer cannot trace: rocprofiler-sdk not loaded")
    assert "PYHIPBENCH_ROCPROFILER_LIBRARY" in out["error"]


def test_the_rocprofiler_timer_is_amds(fakes):
    out = child(fakes, """
cuda = _core.load_driver("cuda", {cuda!r})
try:
    _core.make_timer("rocprofiler", cuda, 0)
except hb.BenchError as e:
    print(json.dumps({"error": str(e)}))
""".replace("{cuda!r}", repr(str(fakes[0]))))
    assert "the rocprofiler timer reads AMD's rocprofiler-sdk: the cuda backend has no rocprofiler timer" in out["error"]
