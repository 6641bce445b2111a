"""The C++ core against the fake drivers, through its real dlopen path."""
from __future__ import annotations

import struct

import numpy as np
import pytest

from pyhipbench import _core

LAUNCH = {"cuda": "cuLaunchKernel", "hip": "hipExtModuleLaunchKernel"}


def make_plan(sets: int, grid=(4, 2, 1), block=(64, 2, 1), shared=128, stream=0x77):
    # Two arguments: a per-set pointer-sized value, then an int32.
    arg_sets = [struct.pack("<QiI", 0xA000 + s, 7, 0) for s in range(sets)]
    return _core.LaunchPlan(0xF00, "kern", grid, block, shared, stream, arg_sets, [0, 8])


def test_launch_plan_points_each_set_at_its_own_buffer():
    plan = make_plan(3)
    assert plan.sets == 3 and plan.arg_count == 2
    pointers = [plan.arg_pointers(s) for s in range(3)]
    assert len({p[0] for p in pointers}) == 3               # a buffer per set
    assert all(p[1] - p[0] == 8 for p in pointers)          # offsets as given
    with pytest.raises(IndexError, match="no argument set 3"):
        plan.arg_pointers(3)


def test_launch_plan_rejects_inconsistent_sets():
    with pytest.raises(ValueError, match="argument set 1 has 4 bytes, set 0 has 8"):
        _core.LaunchPlan(1, "k", (1, 1, 1), (1, 1, 1), 0, 0, [b"\0" * 8, b"\0" * 4], [0])
    with pytest.raises(ValueError, match="offset 8 is outside the 8-byte argument set"):
        _core.LaunchPlan(1, "k", (1, 1, 1), (1, 1, 1), 0, 0, [b"\0" * 8], [8])
    with pytest.raises(ValueError, match="at least one argument set"):
        _core.LaunchPlan(1, "k", (1, 1, 1), (1, 1, 1), 0, 0, [], [])


def test_rotation_order_and_per_set_pointer_arrays(runtime, fake_driver, backend_name):
    fake_driver.read_args(2)
    plan = make_plan(3)
    times, host_us = runtime.run(plan, 7, 2)  # starts at set 2
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
    runtime = _core.load_runtime("hip", str(fake_libraries["hip"]))
    runtime.run(make_plan(1, grid=(4, 3, 2), block=(64, 2, 1)), 3, 0)
    launches = fake_driver_hip.records("hipExtModuleLaunchKernel")
    assert [list(r.grid) for r in launches] == [[256, 6, 2]] * 3   # grid x block
    assert [list(r.block) for r in launches] == [[64, 2, 1]] * 3
    events = [(r.start_event, r.stop_event) for r in launches]
    assert all(start and stop and start != stop for start, stop in events)
    assert len({e for pair in events for e in pair}) == 6          # its own pair per launch
    assert not fake_driver_hip.records("hipEventRecord")            # the launch records them


def test_cuda_records_events_around_each_launch(fake_libraries, fake_driver_cuda):
    runtime = _core.load_runtime("cuda", str(fake_libraries["cuda"]))
    runtime.run(make_plan(2), 3, 0)
    calls = [r.call.decode() for r in fake_driver_cuda.records() if r.call != b"cuEventSynchronize"]
    assert calls == ["cuEventRecord", "cuLaunchKernel", "cuEventRecord"] * 3
    launches = fake_driver_cuda.records("cuLaunchKernel")
    assert [list(r.grid) for r in launches] == [[4, 2, 1]] * 3     # blocks, not threads


def test_injected_launch_error_names_the_call(runtime, fake_driver, backend_name):
    fake_driver.fail(LAUNCH[backend_name], 1, after=2)
    with pytest.raises(_core.DriverError) as info:
        runtime.run(make_plan(2), 5, 0)
    error = info.value
    assert not isinstance(error, _core.KernelFault)
    assert error.call == LAUNCH[backend_name] and error.code == 1
    assert error.driver_message == "invalid argument"
    assert f"{LAUNCH[backend_name]} failed" in str(error) and "INVALID_VALUE" in str(error)
    assert "kernel 'kern'" in str(error)
    assert len(fake_driver.records(LAUNCH[backend_name])) == 2


@pytest.mark.parametrize("sticky", [True, False])
def test_kernel_fault_says_whether_the_context_survives(runtime, fake_driver, backend_name, sticky):
    sync = {"cuda": "cuEventSynchronize", "hip": "hipEventSynchronize"}[backend_name]
    fake_driver.fail(sync, 700, sticky=sticky)
    with pytest.raises(_core.KernelFault) as info:
        runtime.run(make_plan(1), 2, 0)
    error = info.value
    assert error.code == 700 and error.call == sync
    assert error.context_usable is (not sticky)
    assert "kernel 'kern' faulted while running" in str(error)
    assert "illegal memory access" in str(error)
    assert ("no longer usable" in str(error)) is sticky


def test_events_are_pooled_not_made_per_run(fake_libraries, fake_driver, backend_name):
    before = fake_driver.lib.fake_live_events()
    runtime = _core.load_runtime(backend_name, str(fake_libraries[backend_name]))
    runtime.run(make_plan(1), 10, 0)
    runtime.run(make_plan(1), 10, 0)
    runtime.run(make_plan(1), 4, 0)
    assert fake_driver.lib.fake_live_events() - before == 20  # 2 per iteration of the longest run
    del runtime
    assert fake_driver.lib.fake_live_events() == before       # all destroyed with the runtime


def test_zero_iterations_launch_nothing(runtime, fake_driver):
    times, host_us = runtime.run(make_plan(1), 0, 0)
    assert times.shape == (0,) and fake_driver.records() == []


def test_missing_library_is_a_clear_error(tmp_path):
    with pytest.raises(_core.LibraryError, match="cannot load the CUDA driver library .*PYHIPBENCH_CUDA_LIBRARY"):
        _core.load_runtime("cuda", str(tmp_path / "libcuda.so.1"))
    with pytest.raises(_core.LibraryError, match="cannot load the HIP runtime library .*PYHIPBENCH_HIP_LIBRARY"):
        _core.load_runtime("hip", str(tmp_path / "libamdhip64.so"))


def test_library_without_the_symbols_is_named(tmp_path):
    import ctypes.util
    libm = ctypes.util.find_library("m")
    with pytest.raises(_core.LibraryError, match="has no symbol 'cuLaunchKernel'"):
        _core.load_runtime("cuda", libm)


def test_library_path_from_environment(fake_libraries, monkeypatch):
    monkeypatch.setenv("PYHIPBENCH_HIP_LIBRARY", str(fake_libraries["hip"]))
    assert _core.load_runtime("hip").library_path == str(fake_libraries["hip"])


def test_unknown_backend():
    with pytest.raises(ValueError, match="unknown backend 'opencl'"):
        _core.load_runtime("opencl")


def test_hip_rejects_global_sizes_over_32_bits_before_launching(fake_libraries, fake_driver_hip):
    runtime = _core.load_runtime("hip", str(fake_libraries["hip"]))
    plan = _core.LaunchPlan(1, "k", (1 << 24, 1, 1), (256, 1, 1), 0, 0, [b""], [])
    with pytest.raises(ValueError, match="grid x block = 4294967296 threads on axis x exceeds"):
        runtime.run(plan, 1, 0)
    assert fake_driver_hip.records() == []


def test_concurrent_runs_on_one_runtime_are_serialised(runtime, fake_driver, backend_name):
    import threading
    plans = [make_plan(2) for _ in range(4)]
    results = []
    threads = [threading.Thread(target=lambda p=p: results.append(runtime.run(p, 300, 0)[0])) for p in plans]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4 and all(len(r) == 300 and np.allclose(r, 4.0) for r in results)
    assert len(fake_driver.records(LAUNCH[backend_name])) == 1200
