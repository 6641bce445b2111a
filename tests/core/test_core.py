"""The C++ core against the fake drivers, through its real dlopen path: the driver tables and the events timer."""
from __future__ import annotations

import struct

import numpy as np
import pytest

from pyhipbench import _core
from pyhipbench.errors import BenchError

from fakes.host_backend import FAKE_CUDA_CONTEXT

LAUNCH = {"cuda": "cuLaunchKernel", "hip": "hipExtModuleLaunchKernel"}
CONTEXT = {"cuda": FAKE_CUDA_CONTEXT, "hip": 0}  # what each backend's timers run in


@pytest.fixture
def timer(driver, backend_name):
    return _core.make_timer("events", driver, CONTEXT[backend_name])


def events_timer(fake_libraries, backend_name: str):
    return _core.make_timer("events", _core.load_driver(backend_name, str(fake_libraries[backend_name])),
                            CONTEXT[backend_name])


def make_plan(sets: int, grid=(4, 2, 1), block=(64, 2, 1), shared=128, stream=0x77):
    # Two arguments: a per-set pointer-sized value, then an int32.
    arg_sets = [struct.pack("<QiI", 0xA000 + s, 7, 0) for s in range(sets)]
    return _core.LaunchPlan(0xF00, "kern", grid, block, shared, stream, arg_sets, [0, 8])


def test_launch_plan_points_each_set_at_its_own_buffer():
    plan = make_plan(3)
    assert plan.sets == 3 and plan.kernels == 1 and len(plan.arg_pointers(0)) == 2
    pointers = [plan.arg_pointers(s) for s in range(3)]
    assert len({p[0] for p in pointers}) == 3               # a buffer per set
    assert all(p[1] - p[0] == 8 for p in pointers)          # offsets as given
    with pytest.raises(IndexError, match="no argument set 3"):
        plan.arg_pointers(3)


def test_launch_plan_rejects_inconsistent_sets():
    with pytest.raises(BenchError, match="argument set 1 of kernel 'k' has 4 bytes, set 0 has 8"):
        _core.LaunchPlan(1, "k", (1, 1, 1), (1, 1, 1), 0, 0, [b"\0" * 8, b"\0" * 4], [0])
    with pytest.raises(BenchError, match="offset 8 of kernel 'k' is outside the 8-byte argument set"):
        _core.LaunchPlan(1, "k", (1, 1, 1), (1, 1, 1), 0, 0, [b"\0" * 8], [8])
    with pytest.raises(BenchError, match="at least one argument set"):
        _core.LaunchPlan(1, "k", (1, 1, 1), (1, 1, 1), 0, 0, [], [])


def test_rotation_order_and_per_set_pointer_arrays(timer, fake_driver, backend_name):
    fake_driver.read_args(2)
    plan = make_plan(3)
    times, launches_per_sample, host_us = timer.run(plan, 7, 2)  # starts at set 2
    assert timer.name == "events" and launches_per_sample == 1
    launches = fake_driver.records(LAUNCH[backend_name])
    assert len(launches) == 7
    expected_sets = [(2 + i) % 3 for i in range(7)]
    assert [r.arg_values[0] - 0xA000 for r in launches] == expected_sets
    assert [r.params for r in launches] == [plan.params_address(s) for s in expected_sets]
    assert all(r.arg_values[1] & 0xFFFFFFFF == 7 for r in launches)
    assert all(r.function == 0xF00 and r.stream == 0x77 and r.shared_bytes == 128 for r in launches)
    assert isinstance(times, np.ndarray) and times.dtype == np.float64 and times.shape == (7,)
    assert np.allclose(times, 4.0)  # the fake clock gives each launch 4 µs
    assert host_us > 0


def test_hip_launch_takes_global_sizes_and_its_events(fake_libraries, fake_driver_hip):
    events_timer(fake_libraries, "hip").run(make_plan(1, grid=(4, 3, 2), block=(64, 2, 1)), 3, 0)
    launches = fake_driver_hip.records("hipExtModuleLaunchKernel")
    assert [list(r.grid) for r in launches] == [[256, 6, 2]] * 3   # grid x block
    assert [list(r.block) for r in launches] == [[64, 2, 1]] * 3
    events = [(r.start_event, r.stop_event) for r in launches]
    assert all(start and stop and start != stop for start, stop in events)
    assert len({e for pair in events for e in pair}) == 6          # its own pair per launch
    assert not fake_driver_hip.records("hipEventRecord")            # the launch records them


def test_cuda_records_events_around_each_launch(fake_libraries, fake_driver_cuda):
    timer = events_timer(fake_libraries, "cuda")
    timer.run(make_plan(2), 3, 0)
    calls = [r.call.decode() for r in fake_driver_cuda.records() if r.call != b"cuEventSynchronize"]
    assert calls == ["cuCtxPushCurrent_v2"] + ["clock probe cuModuleLoadData", "clock probe cuModuleGetFunction",
                                               "clock probe cuMemHostAlloc", "clock stamp"] \
        + ["cuEventRecord", "cuLaunchKernel", "cuEventRecord"] * 3 + ["clock stamp", "cuCtxPopCurrent_v2"]
    launches = fake_driver_cuda.records("cuLaunchKernel")
    assert [list(r.grid) for r in launches] == [[4, 2, 1]] * 3     # blocks, not threads


def test_injected_launch_error_names_the_call(timer, fake_driver, backend_name):
    fake_driver.fail(LAUNCH[backend_name], 1, after=2)
    with pytest.raises(_core.DriverError) as info:
        timer.run(make_plan(2), 5, 0)
    error = info.value
    assert not isinstance(error, _core.KernelFault)
    assert error.call == LAUNCH[backend_name] and error.code == 1
    assert error.driver_message == "invalid argument"
    assert f"{LAUNCH[backend_name]} failed" in str(error) and "INVALID_VALUE" in str(error)
    assert "kernel 'kern'" in str(error)
    assert len(fake_driver.records(LAUNCH[backend_name])) == 2


def test_a_failed_driver_call_reads_the_same_from_python_and_the_core(fake_driver_cuda):
    from pyhipbench.errors import DriverError, driver_error
    buffer = np.zeros(64, np.uint8)  # host memory standing in for an original on the device
    fake_driver_cuda.fail("cuMemcpyDtoD_v2", 1)
    live = fake_driver_cuda.live_allocations()
    with pytest.raises(DriverError) as from_core:
        _core.RotatedBuffers(_core.load_driver("cuda", fake_driver_cuda.path), FAKE_CUDA_CONTEXT,
                             [(buffer.ctypes.data, buffer.nbytes)], 3)
    assert fake_driver_cuda.live_allocations() == live  # the copies' allocation is freed on the way out
    from_python = driver_error("cuMemcpyDtoD_v2", 1, "CUDA_ERROR_INVALID_VALUE", "invalid argument")
    assert str(from_python) == str(from_core.value) == \
        "cuMemcpyDtoD_v2 failed: CUDA_ERROR_INVALID_VALUE (1): invalid argument"
    assert type(from_python) is type(from_core.value) is DriverError
    assert (from_python.call, from_python.code, from_python.driver_message) == \
        (from_core.value.call, from_core.value.code, from_core.value.driver_message)


@pytest.mark.parametrize("sticky", [True, False])
def test_kernel_fault_says_whether_the_context_survives(timer, fake_driver, backend_name, sticky):
    sync = {"cuda": "cuEventSynchronize", "hip": "hipEventSynchronize"}[backend_name]
    fake_driver.fail(sync, 700, sticky=sticky)
    with pytest.raises(_core.KernelFault) as info:
        timer.run(make_plan(1), 2, 0)
    error = info.value
    assert error.code == 700 and error.call == sync
    assert error.context_usable is (not sticky)
    assert "kernel 'kern' faulted while running" in str(error)
    assert "illegal memory access" in str(error)
    assert ("no longer usable" in str(error)) is sticky


def test_events_are_pooled_not_made_per_run(fake_libraries, fake_driver, backend_name):
    before = fake_driver.lib.fake_live_events()
    timer = events_timer(fake_libraries, backend_name)
    timer.run(make_plan(1), 10, 0)
    timer.run(make_plan(1), 10, 0)
    timer.run(make_plan(1), 4, 0)
    assert fake_driver.lib.fake_live_events() - before == 20  # 2 per sample of the longest run
    fake_driver.lib.fake_reset()
    del timer
    assert fake_driver.lib.fake_live_events() == before       # all destroyed with the timer...
    assert current_calls(fake_driver, backend_name) == current_around(backend_name, CONTEXT[backend_name])


def test_zero_samples_launch_nothing(timer, fake_driver):
    times, launches_per_sample, host_us = timer.run(make_plan(1), 0, 0)
    assert times.shape == (0,) and fake_driver.work() == []


# What a run makes current and restores, in order: CUDA pushes the timer's
# context and pops it; HIP sets the timer's device and then the caller's again.
CURRENT_CALLS = {"cuda": ("cuCtxPushCurrent_v2", "cuCtxPopCurrent_v2"), "hip": ("hipSetDevice",)}


def current_around(backend_name: str, context: int) -> list[tuple[str, int]]:
    """The calls that make `context` current and then the caller's (device 0 on HIP) again."""
    if backend_name == "cuda":
        return [("cuCtxPushCurrent_v2", context), ("cuCtxPopCurrent_v2", context)]
    return [("hipSetDevice", context), ("hipSetDevice", 0)]


def current_calls(fake_driver, backend_name):
    return [(r.call.decode(), r.value) for r in fake_driver.records() if r.call.decode() in CURRENT_CALLS[backend_name]]


@pytest.fixture
def two_devices(monkeypatch):
    # HIP: the timer runs on device 1 while the caller's current device is 0.
    monkeypatch.setenv("FAKE_HIP_DEVICE_COUNT", "2")


def test_run_makes_its_context_current_and_restores_the_callers(driver, fake_driver, backend_name, two_devices):
    context = {"cuda": FAKE_CUDA_CONTEXT + 0x100, "hip": 1}[backend_name]
    timer = _core.make_timer("events", driver, context)
    timer.run(make_plan(2), 3, 0)
    records = [r.call.decode() for r in fake_driver.records()]
    assert current_calls(fake_driver, backend_name) == current_around(backend_name, context)
    first_launch = records.index(LAUNCH[backend_name])
    last_sync = len(records) - 1 - records[::-1].index({"cuda": "cuEventSynchronize", "hip": "hipEventSynchronize"}[backend_name])
    current_at = [i for i, call in enumerate(records) if call in CURRENT_CALLS[backend_name]]
    assert current_at[0] < first_launch and current_at[-1] > last_sync   # around everything the run does
    assert fake_driver.lib.fake_context_depth() == 0 and fake_driver.lib.fake_current_device() == 0


def test_a_failed_run_restores_the_callers_context_too(driver, fake_driver, backend_name, two_devices):
    context = {"cuda": FAKE_CUDA_CONTEXT + 0x100, "hip": 1}[backend_name]
    timer = _core.make_timer("events", driver, context)
    fake_driver.fail(LAUNCH[backend_name], 1)
    with pytest.raises(_core.DriverError, match=f"{LAUNCH[backend_name]} failed"):
        timer.run(make_plan(2), 3, 0)
    assert current_calls(fake_driver, backend_name) == current_around(backend_name, context)
    assert fake_driver.lib.fake_context_depth() == 0 and fake_driver.lib.fake_current_device() == 0


def test_a_context_that_cannot_be_made_current_is_a_driver_error(timer, fake_driver, backend_name):
    call = {"cuda": "cuCtxPushCurrent_v2", "hip": "hipSetDevice"}[backend_name]
    fake_driver.fail(call, 201 if backend_name == "cuda" else 101)
    with pytest.raises(_core.DriverError, match=f"{call} failed: .*INVALID_(CONTEXT|DEVICE)") as info:
        timer.run(make_plan(1), 2, 0)
    assert info.value.call == call
    assert fake_driver.records(LAUNCH[backend_name]) == []


def test_bad_contexts_and_timer_names_are_refused(driver, backend_name):
    with pytest.raises(BenchError, match="unknown timer 'cycles' for the .* backend; expected one of 'events', 'graph', 'batched'"):
        _core.make_timer("cycles", driver, CONTEXT[backend_name])
    if backend_name == "cuda":
        with pytest.raises(BenchError, match="CUDA context 0 is not a context: pass a CUcontext handle"):
            _core.make_timer("events", driver, 0)
    else:
        with pytest.raises(BenchError, match="HIP device 4294967296 is not a device ordinal"):
            _core.make_timer("events", driver, 1 << 32)


def test_missing_library_is_a_clear_error(tmp_path):
    with pytest.raises(_core.LibraryError, match="cannot load the CUDA driver library .*PYHIPBENCH_CUDA_LIBRARY"):
        _core.load_driver("cuda", str(tmp_path / "libcuda.so.1"))
    with pytest.raises(_core.LibraryError, match="cannot load the HIP runtime library .*PYHIPBENCH_HIP_LIBRARY"):
        _core.load_driver("hip", str(tmp_path / "libamdhip64.so"))


def test_library_without_the_symbols_is_named(tmp_path):
    import ctypes.util
    libm = ctypes.util.find_library("m")
    with pytest.raises(_core.LibraryError, match="has no symbol 'cuLaunchKernel'"):
        _core.load_driver("cuda", libm)


def test_library_path_from_environment(fake_libraries, monkeypatch):
    monkeypatch.setenv("PYHIPBENCH_HIP_LIBRARY", str(fake_libraries["hip"]))
    driver = _core.load_driver("hip")
    assert driver.library_path == str(fake_libraries["hip"]) and driver.backend == "hip"


def test_unknown_backend():
    with pytest.raises(BenchError, match="unknown backend 'opencl'"):
        _core.load_driver("opencl")


def test_hip_rejects_global_sizes_over_32_bits_before_launching(fake_libraries, fake_driver_hip):
    plan = _core.LaunchPlan(1, "k", (1 << 24, 1, 1), (256, 1, 1), 0, 0, [b""], [])
    with pytest.raises(BenchError, match="grid x = 16777216 by block x = 256 is 4294967296 threads; at most "
                                         "4294967295 per axis: hipExtModuleLaunchKernel takes global work sizes"):
        events_timer(fake_libraries, "hip").run(plan, 1, 0)
    assert fake_driver_hip.work() == []


@pytest.mark.parametrize("axis", range(3))
def test_launch_limits_are_the_backends(axis):
    at_limit, over = [1, 1, 1], [1, 1, 1]
    at_limit[axis], over[axis] = (1 << 32) - 1, 1 << 31
    hip = _core.launch_limits("hip")
    hip.check(at_limit, [1, 1, 1])
    with pytest.raises(BenchError, match=f"grid {'xyz'[axis]} = 2147483648 by block {'xyz'[axis]} = 2 is "
                                         "4294967296 threads; at most 4294967295 per axis"):
        hip.check(over, [2 if a == axis else 1 for a in range(3)])
    cuda = _core.launch_limits("cuda")
    assert cuda.max_global_threads == 2**64 - 1 and cuda.limited_by == ""
    cuda.check([(1 << 32) - 1] * 3, [(1 << 32) - 1] * 3)
    with pytest.raises(BenchError, match="unknown backend 'opencl'; expected 'cuda' or 'hip'"):
        _core.launch_limits("opencl")


def test_concurrent_runs_on_one_timer_are_serialised(timer, fake_driver, backend_name):
    import threading
    plans = [make_plan(2) for _ in range(4)]
    results = []
    threads = [threading.Thread(target=lambda p=p: results.append(timer.run(p, 300, 0)[0])) for p in plans]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4 and all(len(r) == 300 and np.allclose(r, 4.0) for r in results)
    assert len(fake_driver.records(LAUNCH[backend_name])) == 1200


@pytest.mark.parametrize("backend_name", ["cuda", "hip"])
def test_a_truncated_library_is_refused_before_it_is_loaded(fake_libraries, backend_name, tmp_path):
    """dlopen maps a truncated library's segments past the file's end, and the first touch is SIGBUS: the
    core reads the ELF program headers first and names the file and both sizes."""
    whole = fake_libraries[backend_name].read_bytes()
    truncated = tmp_path / fake_libraries[backend_name].name
    truncated.write_bytes(whole[:len(whole) // 2])
    with pytest.raises(_core.LibraryError, match=rf"^cannot load the .* library '{truncated}': the file is truncated "
                                                 rf"or corrupt \({len(whole) // 2} bytes, its segments end at byte "
                                                 r"\d+\): expected a whole library \(set PYHIPBENCH_\w+_LIBRARY"):
        _core.load_driver(backend_name, str(truncated))
    corrupt = tmp_path / "corrupt" / fake_libraries[backend_name].name
    corrupt.parent.mkdir()
    corrupt.write_bytes(whole[:32] + (2**64 - 8).to_bytes(8, "little") + whole[40:])  # e_phoff near 2**64
    with pytest.raises(_core.LibraryError, match=r": the file is truncated or corrupt \(its program headers are "
                                                 r"corrupt\)"):
        _core.load_driver(backend_name, str(corrupt))
