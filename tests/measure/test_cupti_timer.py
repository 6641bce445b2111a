"""The cupti timer against the fake libcuda and the fake libcupti it drives (tests/fakes/fake_cupti.c)."""
from __future__ import annotations

import ctypes.util
import json
import os
import struct
import subprocess
import sys
import threading

import numpy as np
import pytest

from pyhipbench import _core
from pyhipbench.errors import BenchError, DriverError, Error, KernelFault, LibraryError, MeasurementError

from fakes.host_backend import FAKE_CUDA_CONTEXT

# Each fake kernel record lives at 1 s + the fake clock's launch time; the
# first launch of a test starts at fake time 0.
KERNEL_US = 4.0  # the fake driver's default launch duration


def make_plan(sets: int = 2, grid=(4, 2, 1), block=(64, 2, 1), function=0xF00):
    arg_sets = [struct.pack("<QiI", 0xA000 + s, 7, 0) for s in range(sets)]
    return _core.LaunchPlan(function, "kern", grid, block, 0, 0x77, arg_sets, [0, 8])


@pytest.fixture
def cuda_driver(fake_libraries, fake_driver_cuda):
    return _core.load_driver("cuda", str(fake_libraries["cuda"]))


@pytest.fixture
def cupti_timer(cuda_driver, fake_cupti):
    return _core.make_timer("cupti", cuda_driver, FAKE_CUDA_CONTEXT)


def trace_calls(fake_cupti) -> list[str]:
    """The calls that turn tracing on and off, in order (without the dropped-record queries)."""
    return [c for c in fake_cupti.calls() if c not in ("cuptiGetVersion", "cuptiActivityGetNumDroppedRecords")]


ONE_TRACE = ["cuptiActivityRegisterCallbacks", "cuptiSubscribe", "cuptiEnableCallback", "cuptiActivityEnable",
             "cuptiActivityFlushAll", "cuptiActivityDisable", "cuptiUnsubscribe"]


def test_each_sample_is_its_kernels_gpu_duration_in_launch_order(cupti_timer, fake_driver_cuda, fake_cupti):
    fake_driver_cuda.lib.fake_set_launch_ms_step(0.0005)  # launch k runs 4 + 0.5 k µs
    fake_driver_cuda.read_args(1)
    plan = make_plan(sets=3)
    times, launches_per_sample, host_us = cupti_timer.run(plan, 7, 2)
    assert cupti_timer.name == "cupti" and launches_per_sample == 1 and host_us > 0
    assert isinstance(times, np.ndarray) and times.dtype == np.float64
    np.testing.assert_allclose(times, [KERNEL_US + 0.5 * k for k in range(7)], atol=1e-9)
    launches = fake_driver_cuda.records("cuLaunchKernel")
    assert [r.arg_values[0] - 0xA000 for r in launches] == [(2 + k) % 3 for k in range(7)]  # rotation continues
    assert trace_calls(fake_cupti) == ONE_TRACE and not fake_cupti.tracing


def test_no_event_around_a_launch_one_after_the_last(cupti_timer, fake_driver_cuda, fake_cupti):
    cupti_timer.run(make_plan(), 3, 0)
    calls = [r.call.decode() for r in fake_driver_cuda.work() if r.call != b"cuEventSynchronize"]
    assert calls == ["cuLaunchKernel"] * 3 + ["cuEventRecord"]
    assert fake_driver_cuda.lib.fake_context_depth() == 0  # the context pushed for the run was popped


def test_other_launches_records_in_the_buffers_are_not_taken(cupti_timer, fake_cupti):
    # Before each record of ours: a kernel record of another launch (0.123 µs) and a non-kernel record.
    fake_cupti.lib.fake_cupti_set_foreign_records(2)
    times, _, _ = cupti_timer.run(make_plan(), 50, 0)
    np.testing.assert_allclose(times, KERNEL_US, atol=1e-9)


def test_records_spanning_several_buffers(cupti_timer, fake_cupti):
    fake_cupti.lib.fake_cupti_set_foreign_records(2)
    times, _, _ = cupti_timer.run(make_plan(), 12000, 0)  # about 3 MB of records, in 1 MiB buffers
    assert fake_cupti.buffers_completed >= 3
    assert times.shape == (12000,)
    np.testing.assert_allclose(times, KERNEL_US, atol=1e-9)


def test_cupti_12_records_are_read_by_the_same_offsets(cupti_timer, fake_cupti):
    fake_cupti.fake_version(28, 208)  # CUPTI 12.9: CUpti_ActivityKernel9, 208 bytes
    times, _, _ = cupti_timer.run(make_plan(), 9, 0)
    np.testing.assert_allclose(times, KERNEL_US, atol=1e-9)


def test_libcupti_older_than_cuda_12_is_refused(cuda_driver, fake_cupti):
    fake_cupti.fake_version(18, 200)
    with pytest.raises(LibraryError, match="has API version 18, older than 19 \\(CUDA 12.0\\)"):
        _core.make_timer("cupti", cuda_driver, FAKE_CUDA_CONTEXT)


def test_dropped_records_are_an_error_not_missing_samples(cupti_timer, fake_cupti):
    fake_cupti.lib.fake_cupti_drop_records(2)
    with pytest.raises(MeasurementError, match="CUPTI dropped 2 activity records while timing kernel 'kern'"):
        cupti_timer.run(make_plan(), 10, 0)
    assert not fake_cupti.tracing
    times, _, _ = cupti_timer.run(make_plan(), 10, 0)  # the next run is whole again
    np.testing.assert_allclose(times, KERNEL_US, atol=1e-9)


def test_timestamps_in_another_clients_ticks_are_read_in_ns(cupti_timer, fake_driver_cuda, fake_cupti):
    """Kineto registers a timestamp callback of TSC ticks and leaves it after torch.profiler's session: CUPTI
    writes every record in those ticks, and the timer measures the ns per tick against the host's clock."""
    fake_driver_cuda.lib.fake_set_launch_ms_step(0.0005)
    fake_cupti.lib.fake_cupti_set_ticks_per_ns(2.1)  # a 2.1 GHz TSC
    times, _, _ = cupti_timer.run(make_plan(), 5, 0)
    np.testing.assert_allclose(times, [KERNEL_US + 0.5 * k for k in range(5)], rtol=1e-3)


def test_a_record_delivered_twice_counts_once(cupti_timer, fake_cupti):
    fake_cupti.lib.fake_cupti_records_twice(100)
    times, _, _ = cupti_timer.run(make_plan(), 6, 0)
    np.testing.assert_allclose(times, KERNEL_US, atol=1e-9)


def test_a_record_without_timestamps_is_an_error(cupti_timer, fake_cupti):
    fake_cupti.lib.fake_cupti_records_without_time(1)
    with pytest.raises(MeasurementError, match="no valid time for launch 0 of kernel 'kern' \\(start 0 ns"):
        cupti_timer.run(make_plan(), 4, 0)


def test_a_record_that_is_not_the_launch_is_caught(cupti_timer, fake_cupti):
    fake_cupti.lib.fake_cupti_records_with_wrong_grid(1)
    with pytest.raises(MeasurementError, match=r"launch 0 of kernel 'kern' has grid \(5, 2, 1\).*"
                                               r"the launch had grid \(4, 2, 1\).*correlation is wrong"):
        cupti_timer.run(make_plan(), 4, 0)


EXTERNAL_KIND_CUSTOM2 = 5  # the external correlation kind the timer marks its launches with


@pytest.mark.parametrize("clean_step", [False, True])
def test_with_another_cupti_subscriber_launches_are_told_apart_by_external_ids(
        cupti_timer, cuda_driver, fake_cupti, fake_driver_cuda, clean_step):
    """torch.profiler (Kineto) keeps CUPTI's one subscription once it has profiled: the timer reads the same
    times by marking its launches with an external id, and leaves nothing pushed or enabled."""
    fake_cupti.lib.fake_cupti_set_other_subscriber(1)
    fake_driver_cuda.lib.fake_set_launch_ms_step(0.0005)  # launch k runs 4 + 0.5 k µs
    plan = make_plan(sets=3)
    if clean_step:  # a launch of its own before each sample, on the same thread: not a sample
        plan.set_clean_step(0xC1EA, "clean step", (16, 1, 1), (256, 1, 1), struct.pack("<Q", 0), [0])
    times, _, _ = cupti_timer.run(plan, 7, 2)
    step = 2 if clean_step else 1  # with the clean step, every other launch is a sample
    np.testing.assert_allclose(times, [KERNEL_US + 0.5 * (step * k + step - 1) for k in range(7)], atol=1e-9)
    calls = trace_calls(fake_cupti)
    assert "cuptiEnableCallback" not in calls and "cuptiUnsubscribe" not in calls
    assert calls.count("cuptiActivityPushExternalCorrelationId") == calls.count(
        "cuptiActivityPopExternalCorrelationId") == 1
    assert "cuptiActivityFlushAll(forced)" in calls and "cuptiActivityFlushAll" not in calls  # API records too
    # The API kinds record every API call of the process: on while the run's work is issued, off for its wait.
    popped = calls.index("cuptiActivityPopExternalCorrelationId")
    assert calls[popped + 1:popped + 4] == ["cuptiActivityDisable"] * 3 and calls[popped + 4].startswith(
        "cuptiActivityFlushAll")
    assert fake_cupti.lib.fake_cupti_external_depth(EXTERNAL_KIND_CUSTOM2) == 0 and not fake_cupti.tracing


def test_a_failed_enable_undoes_the_subscription(cupti_timer, fake_cupti):
    fake_cupti.fail("cuptiActivityEnable", 1)
    with pytest.raises(DriverError, match="cuptiActivityEnable failed: CUPTI_ERROR_INVALID_PARAMETER \\(1\\): "
                                          "Invalid parameter"):
        cupti_timer.run(make_plan(), 4, 0)
    assert not fake_cupti.tracing


def test_records_a_default_flush_holds_back_come_with_a_forced_flush(cupti_timer, fake_driver_cuda, fake_cupti):
    fake_driver_cuda.lib.fake_set_launch_ms_step(0.0005)  # launch k runs 4 + 0.5 k µs
    fake_cupti.hold_default_flushes(1)  # as if a record were still incomplete
    times, _, _ = cupti_timer.run(make_plan(), 5, 0)
    np.testing.assert_allclose(times, [KERNEL_US + 0.5 * k for k in range(5)], atol=1e-9)
    assert trace_calls(fake_cupti)[4:6] == ["cuptiActivityFlushAll", "cuptiActivityFlushAll(forced)"]


def test_a_cupti_result_without_a_message_uses_its_name(cupti_timer, fake_cupti):
    fake_cupti.fail("cuptiActivityFlushAll", 12)  # the fake has a name but no message for 12
    with pytest.raises(DriverError, match="cuptiActivityFlushAll failed: CUPTI_ERROR_MAX_LIMIT_REACHED \\(12\\): "
                                          "CUPTI_ERROR_MAX_LIMIT_REACHED"):
        cupti_timer.run(make_plan(), 4, 0)
    assert not fake_cupti.tracing


def test_a_failed_launch_stops_tracing(cupti_timer, fake_cupti, fake_driver_cuda):
    fake_driver_cuda.fail("cuLaunchKernel", 1, after=2)
    with pytest.raises(DriverError, match="cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE .*kernel 'kern'"):
        cupti_timer.run(make_plan(), 5, 0)
    assert not fake_cupti.tracing and fake_driver_cuda.lib.fake_context_depth() == 0


def test_a_kernel_fault_stops_tracing(cupti_timer, fake_cupti, fake_driver_cuda):
    fake_driver_cuda.fail("cuEventSynchronize", 700, sticky=True)
    with pytest.raises(KernelFault, match="kernel 'kern' faulted while running.*no longer usable"):
        cupti_timer.run(make_plan(), 3, 0)
    assert not fake_cupti.tracing


def test_tracing_is_on_only_while_a_run_launches(cuda_driver, cupti_timer, fake_cupti):
    events = _core.make_timer("events", cuda_driver, FAKE_CUDA_CONTEXT)
    cupti_timer.run(make_plan(), 3, 0)
    calls_after_cupti = len(fake_cupti.calls())
    events.run(make_plan(), 3, 0)
    assert len(fake_cupti.calls()) == calls_after_cupti and not fake_cupti.tracing
    assert fake_cupti.lib.fake_cupti_buffers_requested() == 1  # the events run wrote no record


def test_zero_samples_touch_nothing(cupti_timer, fake_cupti, fake_driver_cuda):
    times, _, _ = cupti_timer.run(make_plan(), 0, 0)
    assert times.shape == (0,) and fake_driver_cuda.work() == [] and trace_calls(fake_cupti) == []


def test_two_timers_on_two_threads_trace_one_at_a_time(cuda_driver, fake_cupti, fake_driver_cuda):
    timers = [_core.make_timer("cupti", cuda_driver, FAKE_CUDA_CONTEXT) for _ in range(2)]
    results = []
    threads = [threading.Thread(target=lambda t=t: results.append(t.run(make_plan(), 400, 0)[0])) for t in timers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 2 and all(r.shape == (400,) and np.allclose(r, KERNEL_US) for r in results)
    assert trace_calls(fake_cupti) == ONE_TRACE * 2


def test_cupti_is_cuda_only_and_named_among_the_timers(fake_libraries, cuda_driver):
    hip = _core.load_driver("hip", str(fake_libraries["hip"]))
    with pytest.raises(BenchError, match="the cupti timer reads NVIDIA's CUPTI: the hip backend has no cupti timer; "
                                         "expected one of 'events', 'graph', 'batched', 'rocprofiler'$"):
        _core.make_timer("cupti", hip, 0)
    with pytest.raises(BenchError, match="unknown timer 'cuptii' for the cuda backend; "
                                         "expected one of 'events', 'graph', 'batched', 'cupti'$"):
        _core.make_timer("cuptii", cuda_driver, FAKE_CUDA_CONTEXT)


def test_cupti_times_each_launch_on_its_own(cuda_driver, fake_cupti):
    with pytest.raises(BenchError, match="launches_per_sample=5: the cupti timer times each launch on its own"):
        _core.make_timer("cupti", cuda_driver, FAKE_CUDA_CONTEXT, launches_per_sample=5)
    assert _core.make_timer("cupti", cuda_driver, FAKE_CUDA_CONTEXT, launches_per_sample=1).name == "cupti"


def test_missing_libcupti_names_the_path_and_the_variable(cuda_driver, tmp_path, monkeypatch):
    missing = tmp_path / "libcupti.so.13"
    monkeypatch.setenv("PYHIPBENCH_CUPTI_LIBRARY", str(missing))
    with pytest.raises(LibraryError, match=f"cannot load the CUPTI library '{missing}'.*PYHIPBENCH_CUPTI_LIBRARY"):
        _core.make_timer("cupti", cuda_driver, FAKE_CUDA_CONTEXT)


def test_measurement_error_is_a_pyhipbench_error():
    assert issubclass(MeasurementError, Error) and issubclass(MeasurementError, RuntimeError)


def test_the_installed_libcupti_has_every_entry_point_the_core_resolves(fake_libraries):
    # In a child process (libcupti is never unloaded once loaded): the default search, then
    # which libcupti the process mapped.
    if ctypes.util.find_library("cupti") is None and not any(
            os.path.exists(f"/usr/local/cuda/lib64/libcupti.so{suffix}") for suffix in (".13", ".12", "")):
        pytest.skip("no libcupti installed here")
    script = (
        "from pyhipbench import _core\n"
        f"driver = _core.load_driver('cuda', {str(fake_libraries['cuda'])!r})\n"
        f"assert _core.make_timer('cupti', driver, {FAKE_CUDA_CONTEXT}).name == 'cupti'\n"
        "import json\n"
        "print(json.dumps(sorted({line.split()[-1] for line in open('/proc/self/maps') if 'libcupti' in line})))\n")
    env = {k: v for k, v in os.environ.items() if k != "PYHIPBENCH_CUPTI_LIBRARY"}
    child = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert child.returncode == 0, child.stderr
    mapped = json.loads(child.stdout.strip().splitlines()[-1])
    assert len(mapped) == 1 and "libcupti.so" in mapped[0] and "fake" not in mapped[0], mapped


def test_the_clean_step_runs_before_each_launch_and_is_not_a_sample(cupti_timer, fake_driver_cuda, fake_cupti):
    # The fake gives every launch, the clean step's too, its own record; only the plan's are samples.
    fake_driver_cuda.lib.fake_set_launch_ms_step(0.0005)   # launch k (counting clean steps) runs 4 + 0.5 k µs
    plan = make_plan()
    plan.set_clean_step(0xC1EA, "clean step", (16, 1, 1), (256, 1, 1), struct.pack("<Q", 0), [0])
    times, _, _ = cupti_timer.run(plan, 4, 0)
    launches = fake_driver_cuda.records("cuLaunchKernel")
    assert [r.function for r in launches] == [0xC1EA, 0xF00] * 4
    np.testing.assert_allclose(times, [KERNEL_US + 0.5 * (2 * k + 1) for k in range(4)], atol=1e-9)
