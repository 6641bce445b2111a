"""bench() end to end on the CPU: host memory for the device, the fake driver for the loop."""
from __future__ import annotations

import json
from importlib import resources

import numpy as np
import pytest

import pyhipbench as hb

MiB = 1 << 20
COPY_PTX = (resources.files("pyhipbench") / "kernels" / "copy.ptx").read_bytes()
LAUNCH = {"cuda": "cuLaunchKernel", "hip": "hipExtModuleLaunchKernel"}


@pytest.fixture
def copy(device):
    return device.load_module(COPY_PTX).kernel("copy")


def cuda_device_and_copy(fake_libraries):
    """A CUDA device over the fake libcuda, whose records count the copies' allocations and copies."""
    from fakes.host_backend import HostBackend
    device = hb.Device.from_backend(HostBackend(), hb._core.load_driver("cuda", str(fake_libraries["cuda"])))
    return device, device.load_module(COPY_PTX).kernel("copy")


def arrays(device, n=1024):
    src = device.array(np.arange(n, dtype=np.float32))
    return src, device.empty_like(src)


def test_each_launch_gets_its_sets_copies_in_turn(device, copy, fake_driver, backend_name):
    fake_driver.read_args(3)
    live = fake_driver.live_allocations()  # a sticky fault of an earlier test may have left some
    src, dst = arrays(device, 1 << 18)  # 1 MiB each: a 2 MiB set against a 4 MiB LLC -> 4 sets
    res = hb.bench(copy, 4, 256, [src, dst, hb.int64(1 << 18)], iterations=9, warmup=3, timer="events",
                   cache="dirty-cold")
    assert res.rotation.sets == 4 and res.cache_state == "dirty-cold" and res.stop_reason == "iterations"
    launches = fake_driver.records(LAUNCH[backend_name])
    assert len(launches) == 12
    sources = [r.arg_values[0] for r in launches]
    assert sources[0] == src.address                       # set 0 is the caller's arrays
    assert len(set(sources[:4])) == 4                      # four different sets...
    assert sources == [sources[i % 4] for i in range(12)]  # ...used in turn, warm-up included
    destinations = [r.arg_values[1] for r in launches]
    assert len(set(zip(sources, destinations))) == 4 and len(set(destinations)) == 4
    assert all(r.arg_values[2] == 1 << 18 for r in launches)
    assert res.samples == 9 and res.warmup == 3
    assert len(device.backend.live) == 2 and fake_driver.live_allocations() == live  # copies freed, originals kept


def test_copies_start_with_the_originals_contents(device, copy, fake_driver):
    live = fake_driver.live_allocations()
    src, dst = arrays(device)
    sets = hb._launch.argument_sets.ArgumentSets(device, [(copy.params, [src, dst, hb.int64(1024)])], 3)
    with sets:
        for s in range(3):
            assert np.array_equal(sets.array(s, src).to_numpy(), src.to_numpy())
        assert sets.array(0, src) is src and sets.array(1, src) is not src
        assert fake_driver.live_allocations() == live + 1  # both copy sets of both arrays
    assert len(device.backend.live) == 2 and fake_driver.live_allocations() == live


@pytest.mark.parametrize("sets, copies", [(2, 2), (3, 3), (4, 4), (5, 4), (9, 5), (240, 10)])
def test_sets_cost_one_allocation_and_doubling_copies(fake_libraries, fake_driver_cuda, sets, copies):
    # The core's RotatedBuffers: two arrays into copy set 1, then ceil(log2(R - 1)) copies of whole sets.
    device, copy = cuda_device_and_copy(fake_libraries)
    src, dst = arrays(device, 100)  # 400 bytes each: 512 per array in a set, each 256-byte aligned
    with hb._launch.argument_sets.ArgumentSets(device, [(copy.params, [src, dst, hb.int64(100)])], sets) as rotated:
        assert [r.value for r in fake_driver_cuda.records("cuMemAlloc_v2")] == [(sets - 1) * 1024]
        assert len(fake_driver_cuda.records("cuMemcpyDtoD_v2")) == copies
        addresses = [(rotated.address(s, src), rotated.address(s, dst)) for s in range(sets)]
        assert all(a % 256 == 0 and b - a == 512 for a, b in addresses[1:])
        assert {b - a for (a, _), (b, _) in zip(addresses[1:], addresses[2:])} <= {1024}
        assert all(np.array_equal(rotated.array(s, src).to_numpy(), src.to_numpy()) for s in range(sets))
    assert [r.value for r in fake_driver_cuda.records("cuMemFree_v2")] == [(sets - 1) * 1024]


def test_an_empty_array_is_the_same_in_every_set(device, copy):
    src, _ = arrays(device)
    empty = device.empty(0, np.float32)
    with hb._launch.argument_sets.ArgumentSets(device, [(copy.params, [src, empty, hb.int64(0)])], 3) as sets:
        assert len(sets) == 3 and {sets.address(s, empty) for s in range(3)} == {empty.address}
        assert len({sets.address(s, src) for s in range(3)}) == 3


def test_shared_arrays_and_pointers_do_not_rotate(device, copy, fake_driver, backend_name):
    fake_driver.read_args(2)
    src, dst = arrays(device)
    res = hb.bench(copy, 1, 64, [hb.shared(src), hb.Pointer(dst.address), hb.int64(8)],
                   iterations=4, warmup=0, cache="dirty-cold", timer="events")
    assert res.rotation.sets == 1 and res.cache_state == "warm"
    assert "nothing to rotate" in res.rotation.reason
    assert {(r.arg_values[0], r.arg_values[1]) for r in fake_driver.records(LAUNCH[backend_name])} == {
        (src.address, dst.address)}


def test_rotation_counts_an_array_passed_twice_once(device, copy):
    src, _ = arrays(device, 1 << 18)
    res = hb.bench(copy, 1, 64, [src, src, hb.int64(4)], iterations=8, warmup=0, cache="dirty-cold")
    assert res.rotation.set_bytes == 1 * MiB and res.rotation.sets == 8


@pytest.mark.parametrize("timer", ["graph", "batched"])
def test_rotation_caps_at_the_launches_not_the_samples_of_a_multi_launch_timer(device, copy, timer):
    # A 1 MiB set against the 4 MiB LLC wants 8 sets; 2 samples of a graph or batched timer are at
    # least 2 x 16 launches, so all 8 are reached and none is cut.
    src, _ = arrays(device, 1 << 18)
    res = hb.bench(copy, 1, 64, [src, src, hb.int64(4)], iterations=2, warmup=0, cache="dirty-cold", timer=timer)
    assert res.rotation.sets == 8 and res.rotation.wanted == 8 and "capped" not in res.rotation.reason


def test_result_statistics_and_json(device, copy, fake_driver):
    fake_driver.lib.fake_set_launch_ms(0.010)
    src, dst = arrays(device)
    res = hb.bench(copy, (2, 1), (128,), [src, dst, hb.int64(1024)], iterations=10, warmup=1, rotate=2,
                   timer="events")
    s = res.stats
    assert res.median_us == pytest.approx(10.0, rel=1e-4) and res.ci_us == pytest.approx((10.0, 10.0), rel=1e-4)
    assert s.min == pytest.approx(10.0, rel=1e-4) and s.max == pytest.approx(10.0, rel=1e-4)
    assert s.stdev == pytest.approx(0.0, abs=1e-3) and s.p90 == pytest.approx(10.0, rel=1e-4)
    data = json.loads(json.dumps(res.to_dict()))
    assert data["rotation"]["sets"] == 2 and "caller" in data["rotation"]["reason"]
    assert data["grid"] == [2, 1, 1] and data["block"] == [128, 1, 1]
    assert data["cache_state"] == "dirty-cold" and data["device"]["arch"] == device.arch
    assert len(data["times_us"]) == 10 and data["timer"] == "events" and data["stop_reason"] == "iterations"
    assert data["samples"] == 10 and data["warmup"] == 1 and data["stats_us"]["median"] == pytest.approx(10.0)
    assert "median 10.000 µs" in res.summary() and "2 set(s)" in res.summary()
    assert data["slower_than_us"] is None and "racing" not in res.summary()


# ---- bad input: one clear error, nothing launched ---------------------------

BAD = [
    (dict(args="count"), "takes 3 arguments \\(copy_param_src \\(8 B\\), copy_param_dst \\(8 B\\), copy_param_n \\(8 B\\)\\), got 2"),
    (dict(args="size"), "argument 2 \\(copy_param_n\\) of kernel 'copy' is int32 \\(4 B\\), but the parameter is 8 bytes"),
    (dict(args="type"), "argument 2 \\(copy_param_n\\) of kernel 'copy' is of type int; expected"),
    (dict(grid=0), "grid=0: out of range, expected an integer in \\[1, 4294967295\\]"),
    (dict(block=(64, 1 << 32)), "block\\[1\\]=4294967296: out of range, expected an integer in \\[1, 4294967295\\]"),
    (dict(block=(2048,)), "block x = 2048 exceeds the device's limit 1024"),
    (dict(block=(32, 32, 2)), "block \\(32, 32, 2\\) has 2048 threads; the device allows 1024"),
    (dict(grid=(1, 70000)), "grid y = 70000 exceeds the device's limit 65535"),
    (dict(grid=(1, 2, 3, 4)), "grid=\\(1, 2, 3, 4\\): expected 1 to 3 integers, got 4"),
    (dict(shared_bytes=1 << 20), "shared_bytes=1048576: out of range, expected an integer in \\[0, 232448\\] "
     "\\(bytes; the device's opt-in maximum per block\\)"),
    (dict(rotate=4, cache="clean-cold"), "rotate=4 with cache='clean-cold': only dirty-cold rotates"),
    (dict(rotate=1, cache="dirty-cold"), "rotate=1 with cache='dirty-cold': only dirty-cold rotates .*rotate=1 is warm"),
    (dict(cache="cold"), "cache='cold': expected one of warm, dirty-cold, clean-cold or 'auto'"),
    (dict(timer="clock"), "timer='clock': expected one of events, cupti, rocprofiler, batched, graph or 'auto'"),
    (dict(timer="graph", cache="clean-cold"), "cache='clean-cold' with timer='graph': a graph sample spans"),
    (dict(iterations=None, precision=1.5), "precision=1.5: out of range, expected a finite number > 0 and < 1"),
    (dict(iterations=None, max_time_s=0), "max_time_s=0: out of range, expected a finite number > 0"),
    (dict(iterations=0), "iterations=0: out of range, expected an integer in \\[1, 1000000\\]"),
    (dict(iterations=None, slower_than_us=0), "slower_than_us=0: out of range, expected a finite number > 0"),
    (dict(iterations=None, slower_than_us="5us"), "slower_than_us='5us': expected a finite number > 0, got str"),
    (dict(slower_than_us=5.0), "slower_than_us=5.0 with iterations=10: racing stops a run early, a fixed count "
     "never does; expected one of them"),
    (dict(warmup=-1), "warmup=-1: out of range, expected an integer in \\[0, 1000000\\]"),
    (dict(rotate=0), "rotate=0: out of range, expected an integer >= 1 \\(argument sets, or 'auto'\\)"),
    (dict(rotate=100_000), "rotate=100000 sets of 8192 bytes cannot fit in device memory"),
]


@pytest.mark.parametrize("change,message", BAD)
def test_bad_input_is_named_and_nothing_launches(device, copy, fake_driver, change, message):
    change = dict(change)
    src, dst = arrays(device)
    args = {"count": [src, dst], "size": [src, dst, hb.int32(1)], "type": [src, dst, 5]}.get(
        change.pop("args", None), [src, dst, hb.int64(1024)])
    call = dict(grid=4, block=256, iterations=10, warmup=0) | change
    before = len(device.backend.live)
    with pytest.raises(hb.BenchError, match=message):
        hb.bench(copy, call.pop("grid"), call.pop("block"), args, **call)
    assert fake_driver.work() == []
    assert len(device.backend.live) == before


def test_sets_that_cannot_fit_are_refused(fake_libraries, fake_driver_cuda):
    from fakes.host_backend import HostBackend
    driver = hb._core.load_driver("cuda", str(fake_libraries["cuda"]))
    device = hb.Device.from_backend(HostBackend(free_bytes=300 * MiB), driver)
    copy = device.load_module(COPY_PTX).kernel("copy")
    src = device.empty(24 * MiB, np.uint8)   # a second 48 MiB set does not fit in 300 - 256 MiB headroom
    dst = device.empty(24 * MiB, np.uint8)
    with pytest.raises(hb.BenchError, match="rotated sets cannot fit in device memory"):
        hb.bench(copy, 1, 1, [src, dst, hb.int64(1)], iterations=10, cache="dirty-cold")
    assert fake_driver_cuda.work() == []


def test_capped_rotation_warns_by_how_much(fake_libraries, fake_driver_cuda):
    from fakes.host_backend import HostBackend
    driver = hb._core.load_driver("cuda", str(fake_libraries["cuda"]))
    device = hb.Device.from_backend(HostBackend(free_bytes=256 * MiB + 3 * MiB), driver)
    copy = device.load_module(COPY_PTX).kernel("copy")
    src, dst = device.empty(256 * 1024, np.uint8), device.empty(256 * 1024, np.uint8)  # 0.5 MiB set
    with pytest.warns(hb.RotationCapped, match="capped from 16 to 7 sets"):
        res = hb.bench(copy, 1, 1, [src, dst, hb.int64(1)], iterations=20, warmup=0, cache="dirty-cold")
    assert res.rotation.sets == 7 and res.rotation.wanted == 16 and "9 sets short" in res.rotation.reason


@pytest.mark.parametrize("cache, reads", [("warm", 0), ("clean-cold", 0), ("dirty-cold", 1)])
def test_free_memory_is_read_only_where_the_rotation_may_copy(device, copy, monkeypatch, cache, reads):
    """A measurement of one argument set makes no copies, so it does not ask the driver for free memory."""
    src, dst = arrays(device, 1 << 18)
    calls = []
    monkeypatch.setattr(type(device), "memory_info", lambda self: calls.append(1) or self.backend.memory_info())
    res = hb.bench(copy, 1, 64, [src, dst, hb.int64(4)], iterations=2, warmup=0, cache=cache, timer="events")
    assert len(calls) == reads and res.cache_state == cache and (res.rotation.sets > 1) == (cache == "dirty-cold")


def test_a_prepared_measurement_is_checked_at_once_and_plans_its_rotation_when_it_runs(device, copy, monkeypatch):
    """prepare_bench checks everything before anything runs; the rotation is planned against the memory free
    when it runs (a measurement before it may still hold its copies), not when it was prepared."""
    from pyhipbench._launch.launch import Launch
    from pyhipbench._measure.bench import prepare_bench
    from pyhipbench._measure.options import BenchOptions
    src, dst = arrays(device, 1 << 18)
    options = BenchOptions(iterations=2, warmup=0, cache="dirty-cold", timer="events")
    with pytest.raises(hb.BenchError, match=r"^kernel 'copy' takes 3 arguments"):
        prepare_bench([Launch(copy, 1, 64, [src, dst])], options)
    calls = []
    monkeypatch.setattr(type(device), "memory_info", lambda self: calls.append(1) or self.backend.memory_info())
    prepared = prepare_bench([Launch(copy, 1, 64, [src, dst, hb.int64(4)])], options)
    assert calls == []
    res = prepared.run()
    assert calls == [1] and res.rotation.sets > 1 and res.cache_state == "dirty-cold"


def test_unknown_kernel_lists_the_modules_kernels(device):
    with pytest.raises(hb.BenchError, match="no kernel 'cpy' in this ptx module; its kernels: copy"):
        device.load_module(COPY_PTX).kernel("cpy")


def test_unsupported_dtype(device):
    with pytest.raises(hb.BenchError, match="unsupported array dtype <U3"):
        device.array(np.array(["abc"]))
    with pytest.raises(hb.BenchError, match="unsupported array dtype object"):
        device.empty(4, object)


def test_not_a_code_object(device, tmp_path):
    junk = tmp_path / "kernel.bin"
    junk.write_bytes(b"hello, not a kernel")
    with pytest.raises(hb.BenchError, match="not a code object .* expected PTX text, a cubin, a fatbin or an HSACO"):
        device.load_module(junk)
    with pytest.raises(hb.BenchError, match="is not a file"):
        device.load_module(tmp_path / "missing.ptx")


def test_a_fault_with_rotated_sets_is_reported_not_the_failed_frees(device, copy, fake_driver, backend_name):
    # After a sticky fault a real driver fails every call, the copies' free included (the fake
    # too): the KernelFault must still be what the caller sees.
    src, dst = arrays(device)
    sync = {"cuda": "cuEventSynchronize", "hip": "hipEventSynchronize"}[backend_name]
    fake_driver.fail(sync, 700, sticky=True)
    with pytest.raises(hb.KernelFault, match="kernel 'copy' faulted while running") as info:
        hb.bench(copy, 1, 64, [src, dst, hb.int64(1024)], iterations=4, warmup=0, rotate=3)
    assert info.value.context_usable is False


def test_free_releases_the_copies_once_and_keeps_the_originals(device, copy, fake_driver):
    live = fake_driver.live_allocations()
    src, dst = arrays(device)
    sets = hb._launch.argument_sets.ArgumentSets(device, [(copy.params, [src, dst, hb.int64(1024)])], 3)
    sets.free()
    sets.free()  # twice is harmless
    assert fake_driver.live_allocations() == live and len(device.backend.live) == 2
    assert [sets.address(0, a) for a in (src, dst)] == [src.address, dst.address] and len(sets) == 1


def test_a_failed_free_of_the_copies_is_quiet(fake_libraries, fake_driver_cuda):
    # Only a driver that has lost the context fails a free of memory it made: nothing to report.
    device, copy = cuda_device_and_copy(fake_libraries)
    src, dst = arrays(device)
    sets = hb._launch.argument_sets.ArgumentSets(device, [(copy.params, [src, dst, hb.int64(1024)])], 3)
    fake_driver_cuda.fail("cuMemFree_v2", 700)
    sets.free()
    assert len(sets) == 1


def test_bench_runs_in_the_devices_context_and_uses_the_stream(device, copy, fake_driver, backend_name):
    src, dst = arrays(device)
    stream = device.stream()
    hb.bench(copy, 1, 64, [src, dst, hb.int64(1024)], iterations=2, warmup=0, rotate=1, stream=stream)
    made_current = {"cuda": "cuCtxPushCurrent_v2", "hip": "hipSetDevice"}[backend_name]
    assert {r.value for r in fake_driver.records(made_current)} == {device.backend.context}
    assert {r.stream for r in fake_driver.records(LAUNCH[backend_name])} == {stream.handle}
    stream.close()
    assert device.backend.streams == set()


def test_hip_global_size_must_fit_in_32_bits(fake_libraries, fake_driver_hip):
    from fakes.host_backend import HostBackend
    driver = hb._core.load_driver("hip", str(fake_libraries["hip"]))
    device = hb.Device.from_backend(HostBackend(backend="hip"), driver)
    empty = device.load_module((resources.files("pyhipbench") / "kernels" / "empty.ptx").read_bytes()).kernel("empty")
    message = ("grid x = 16777216 by block x = 256 is 4294967296 threads; at most 4294967295 per axis: "
               "hipExtModuleLaunchKernel takes global work sizes (grid x block) as 32-bit values")
    with pytest.raises(hb.BenchError) as refused:
        hb.bench(empty, 1 << 24, 256, [], iterations=1)
    assert str(refused.value) == message
    assert fake_driver_hip.work() == []
    # The core's timers refuse the same plan in the same words (an embedder's check).
    plan = hb._core.LaunchPlan(empty.handle, "empty", (1 << 24, 1, 1), (256, 1, 1), 0, 0, [b""], [])
    with pytest.raises(hb.BenchError) as refused_by_core:
        hb._core.make_timer("events", driver, 0).run(plan, 1)
    assert str(refused_by_core.value) == message
    assert fake_driver_hip.work() == []


def test_device_properties_carry_the_backends_launch_limits(device, backend_name):
    limits = device.properties.launch_limits
    assert limits.max_global_threads == {"cuda": 2**64 - 1, "hip": 2**32 - 1}[backend_name]
    if backend_name == "cuda":  # cuLaunchKernel takes block counts: 2**32 threads on x are fine
        config = hb.LaunchConfig.checked((1 << 24, 1, 1), (256,), 0, device.properties)
        assert config.grid == (1 << 24, 1, 1) and config.block == (256, 1, 1)


def test_unloaded_modules_give_no_kernels(device):
    with device.load_module(COPY_PTX) as module:
        module.kernel("copy")
    assert device.backend.modules == {}
    with pytest.raises(hb.BenchError, match="kernel 'copy': this ptx module has been unloaded"):
        module.kernel("copy")
    module.unload()  # twice is harmless


def test_code_object_for_another_backend_is_refused(device):
    device.backend.formats = ("hsaco",)
    with pytest.raises(hb.BenchError, match="a ptx code object cannot load on the .* backend; expected hsaco"):
        device.load_module(COPY_PTX)


def test_a_kernel_of_an_unloaded_module_is_refused(device, fake_driver):
    module = device.load_module(COPY_PTX)
    copy = module.kernel("copy")
    module.unload()
    with pytest.raises(hb.BenchError, match="kernel 'copy': its ptx module has been unloaded"):
        hb.bench(copy, 1, 1, [hb.Pointer(0), hb.Pointer(0), hb.int64(0)])
    assert fake_driver.records() == []


def test_bench_and_bench_chain_show_their_seconds_against_the_time_limit(device, copy, fake_driver, monkeypatch):
    from contextlib import contextmanager

    import pyhipbench._measure.bench as bench_module
    bars = []

    @contextmanager
    def elapsed(limit_s, desc):
        bars.append((limit_s, desc))
        yield
    monkeypatch.setattr(bench_module, "elapsed", elapsed)
    src, dst = arrays(device)
    args = [src, dst, hb.int64(1024)]
    hb.bench(copy, 4, 256, args, max_time_s=5, timer="events", cache="warm")
    hb.bench(copy, 4, 256, args, iterations=3, timer="events", cache="warm")
    hb.bench_chain([hb.Launch(copy, 4, 256, args)], max_time_s=2.5, timer="events", cache="warm")
    assert bars == [(5.0, "measuring copy"), (None, "measuring copy"), (2.5, "measuring a chain")]
