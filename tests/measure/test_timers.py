"""The graph and batched timers against the fake drivers: launch sequences, rotation, faults, resources."""
from __future__ import annotations

import ctypes
import struct

import numpy as np
import pytest

from pyhipbench import _core
from pyhipbench.errors import BenchError

from fakes.driver import FakeDriver
from fakes.host_backend import FAKE_CUDA_CONTEXT

CONTEXT = {"cuda": FAKE_CUDA_CONTEXT, "hip": 0}
CALLS = {
    "cuda": {"launch": "cuLaunchKernel", "record": "cuEventRecord", "sync": "cuEventSynchronize",
             "graph_launch": "cuGraphLaunch", "instantiate": "cuGraphInstantiateWithFlags",
             "begin_capture": "cuStreamBeginCapture_v2", "end_capture": "cuStreamEndCapture",
             "current": "cuCtxPushCurrent_v2"},
    "hip": {"launch": "hipExtModuleLaunchKernel", "record": "hipEventRecord", "sync": "hipEventSynchronize",
            "graph_launch": "hipGraphLaunch", "instantiate": "hipGraphInstantiate",
            "begin_capture": "hipStreamBeginCapture", "end_capture": "hipStreamEndCapture",
            "current": "hipSetDevice"},
}
STREAM = 0x77


def make_plan(sets: int, name: str = "kern"):
    # Two arguments: a per-set value (0xA000 + set), then an int32.
    arg_sets = [struct.pack("<QiI", 0xA000 + s, 7, 0) for s in range(sets)]
    return _core.LaunchPlan(0xF00, name, (4, 2, 1), (64, 2, 1), 128, STREAM, arg_sets, [0, 8])


def names(records) -> list[str]:
    return [r.call.decode() for r in records]


def live(fake_driver) -> dict[str, int]:
    lib = fake_driver.lib
    return {"events": lib.fake_live_events(), "streams": lib.fake_live_streams(),
            "graphs": lib.fake_live_graphs(), "graph_execs": lib.fake_live_graph_execs()}


# ---- graph ----

@pytest.fixture
def graph_timer(driver, backend_name):
    return _core.make_timer("graph", driver, CONTEXT[backend_name], launches_per_sample=4)


def test_graph_nodes_each_launch_their_own_set_and_continue_the_rotation(graph_timer, fake_driver, backend_name):
    fake_driver.read_args(2)
    plan = make_plan(3)
    times, launches_per_sample, host_us = graph_timer.run(plan, 5, 2)
    assert graph_timer.name == "graph" and launches_per_sample == 4
    nodes = fake_driver.records("graph node")
    assert len(nodes) == 20                                   # 5 samples x 4 nodes
    expected_sets = [(2 + k) % 3 for k in range(20)]          # launch k on set (first_set + k) mod R
    assert [n.arg_values[0] - 0xA000 for n in nodes] == expected_sets
    assert [n.params for n in nodes] == [plan.params_address(s) for s in expected_sets]
    assert all(n.function == 0xF00 and n.shared_bytes == 128 and n.stream == STREAM for n in nodes)
    assert all(n.arg_values[1] & 0xFFFFFFFF == 7 for n in nodes)
    # Samples start on sets 2, 0, 1, 2, 0: three graphs, each instantiated once, reused.
    assert len(fake_driver.records(CALLS[backend_name]["instantiate"])) == 3
    launches = fake_driver.records(CALLS[backend_name]["graph_launch"])
    assert len(launches) == 5 and launches[0].value == launches[3].value and launches[1].value == launches[4].value
    assert len({launches[j].value for j in range(3)}) == 3
    assert times.dtype == np.float64 and times.shape == (5,)
    assert np.allclose(times, 4.0)  # 4 nodes of 4 µs between one event pair: 4 µs per kernel
    assert host_us > 0


def test_graph_launches_are_captured_not_run_and_on_a_stream_of_the_timers_own(graph_timer, fake_driver, backend_name):
    graph_timer.run(make_plan(2), 1, 0)
    calls = CALLS[backend_name]
    captured = fake_driver.records("captured " + calls["launch"])
    assert len(captured) == 4 and not fake_driver.records(calls["launch"])  # nothing launched outside the graph
    capture_stream = fake_driver.records(calls["begin_capture"])[0].value
    assert capture_stream not in (0, STREAM) and {r.value for r in captured} == {capture_stream}
    assert [n.stream for n in fake_driver.records("graph node")] == [STREAM] * 4


def test_graph_launch_is_bracketed_by_one_event_pair(graph_timer, fake_driver, backend_name):
    graph_timer.run(make_plan(4), 3, 0)  # N = R = 4: one graph serves every sample
    calls = CALLS[backend_name]
    timed = [c for c in names(fake_driver.records()) if c in (calls["record"], calls["graph_launch"])]
    assert timed == [calls["record"], calls["graph_launch"], calls["record"]] * 3
    launches = fake_driver.records(calls["graph_launch"])
    assert all(r.stream == STREAM for r in launches) and len({r.value for r in launches}) == 1
    assert len(fake_driver.records(calls["instantiate"])) == 1
    assert fake_driver.records(calls["instantiate"])[0].value == 4   # nodes in the graph


def test_graphs_are_cached_per_plan_and_freed_when_the_plan_changes(graph_timer, fake_driver, backend_name):
    instantiate = CALLS[backend_name]["instantiate"]
    before = live(fake_driver)  # graphs of earlier tests' timers not yet collected count too
    plan = make_plan(4)
    graph_timer.run(plan, 2, 0)
    graph_timer.run(plan, 3, 1)         # starts 1, 1, 1: one more graph, then cached
    graph_timer.run(plan, 5, 0)         # all cached
    assert len(fake_driver.records(instantiate)) == 2
    assert live(fake_driver)["graph_execs"] == before["graph_execs"] + 2
    assert live(fake_driver)["graphs"] == before["graphs"]
    other = make_plan(4, "other")
    graph_timer.run(other, 1, 0)
    assert len(fake_driver.records(instantiate)) == 3
    assert live(fake_driver)["graph_execs"] == before["graph_execs"] + 1  # the first plan's graphs were freed


def test_graph_timer_frees_everything_in_its_context(driver, fake_driver, backend_name):
    before = live(fake_driver)
    timer = _core.make_timer("graph", driver, CONTEXT[backend_name], launches_per_sample=3)
    timer.run(make_plan(2), 4, 0)
    timer.run(make_plan(2), 4, 1)
    assert live(fake_driver) != before
    fake_driver.lib.fake_reset()
    del timer
    assert live(fake_driver) == before
    current = CALLS[backend_name]["current"]
    assert [r.value for r in fake_driver.records(current)][:1] == [CONTEXT[backend_name]]


def test_graph_run_makes_its_context_current(graph_timer, fake_driver, backend_name):
    graph_timer.run(make_plan(2), 2, 0)
    calls = names(fake_driver.records())
    current = CALLS[backend_name]["current"]
    assert calls[0] == current and calls[-1] == ("cuCtxPopCurrent_v2" if backend_name == "cuda" else current)
    assert fake_driver.lib.fake_context_depth() == 0


@pytest.mark.parametrize("sticky", [True, False])
def test_graph_kernel_fault(graph_timer, fake_driver, backend_name, sticky):
    fake_driver.fail(CALLS[backend_name]["sync"], 700, sticky=sticky)
    with pytest.raises(_core.KernelFault, match="kernel 'kern' faulted while running") as info:
        graph_timer.run(make_plan(2), 2, 0)
    assert info.value.context_usable is (not sticky) and info.value.code == 700


def test_a_launch_failing_in_capture_ends_the_capture_and_names_the_kernel(graph_timer, fake_driver, backend_name):
    calls = CALLS[backend_name]
    fake_driver.fail(calls["launch"], 1, after=2)
    with pytest.raises(_core.DriverError, match=f"{calls['launch']} failed: .*INVALID_VALUE.*kernel 'kern'") as info:
        graph_timer.run(make_plan(2), 2, 0)
    assert not isinstance(info.value, _core.KernelFault) and info.value.call == calls["launch"]
    assert len(fake_driver.records(calls["end_capture"])) == 1   # the stream is not left capturing
    assert live(fake_driver)["graphs"] == 0                       # the partial graph was freed
    assert not fake_driver.records(calls["graph_launch"])
    times, _, _ = graph_timer.run(make_plan(2), 2, 0)            # and the timer still works
    assert np.allclose(times, 4.0)


def test_failed_capture_end_and_graph_launch_are_driver_errors(graph_timer, fake_driver, backend_name):
    calls = CALLS[backend_name]
    fake_driver.fail(calls["end_capture"], 1)
    with pytest.raises(_core.DriverError, match=f"{calls['end_capture']} failed"):
        graph_timer.run(make_plan(2), 1, 0)
    assert live(fake_driver)["graphs"] == 0
    fake_driver.fail(calls["graph_launch"], 1, after=1)
    with pytest.raises(_core.DriverError, match=f"{calls['graph_launch']} failed: .*kernel 'kern'"):
        graph_timer.run(make_plan(2), 3, 0)
    assert len(fake_driver.records(calls["graph_launch"])) == 1


def test_graph_default_length_and_zero_samples(driver, fake_driver, backend_name):
    timer = _core.make_timer("graph", driver, CONTEXT[backend_name])
    times, launches_per_sample, _ = timer.run(make_plan(1), 0, 0)
    assert launches_per_sample == 100 and times.shape == (0,) and fake_driver.work() == []
    timer.run(make_plan(1), 1, 0)
    assert len(fake_driver.records("graph node")) == 100


def test_events_timer_refuses_more_than_one_launch_per_sample(driver, backend_name):
    with pytest.raises(BenchError, match="launches_per_sample=5: the events timer times each launch on its own"):
        _core.make_timer("events", driver, CONTEXT[backend_name], launches_per_sample=5)


# ---- batched ----

HIP_SPIN = 0x5917_0000  # a made-up hipFunction_t the fake treats as the spin kernel


def batched(driver, fake_driver, backend_name, **options):
    if backend_name == "hip":
        fake_driver.lib.fake_set_spin_function.argtypes = [ctypes.c_size_t]
        fake_driver.lib.fake_set_spin_function(HIP_SPIN)
        options.setdefault("spin_function", HIP_SPIN)
    return _core.make_timer("batched", driver, CONTEXT[backend_name], **options)


@pytest.fixture
def batched_timer(driver, fake_driver, backend_name):
    return batched(driver, fake_driver, backend_name, launches_per_sample=3)


def test_batched_queues_each_batch_behind_a_held_spin_and_releases_it_after(batched_timer, fake_driver, backend_name):
    calls = CALLS[backend_name]
    fake_driver.lib.fake_reset()
    times, launches_per_sample, host_us = batched_timer.run(make_plan(2), 2, 0)
    assert batched_timer.name == "batched" and launches_per_sample == 3
    timed = [r for r in fake_driver.records() if r.call.decode() in
             ("spin", "spin released", "spin timed out", calls["record"], calls["launch"], calls["sync"])]
    sample = ["spin", calls["record"]] + [calls["launch"]] * 3 + [calls["record"]]
    assert names(timed) == sample + ["spin released"] + sample + ["spin released", calls["sync"]]
    first, second = timed[0].value, timed[7].value
    assert second == first + 1                                   # one release word, counting up
    # Everything of a sample was queued while its spin still held the stream...
    assert [r.blocked_by for r in timed[1:6]] == [first] * 5
    assert [r.blocked_by for r in timed[8:13]] == [second] * 5
    # ...and each spin was released by the host, not by its timeout.
    assert [r.value for r in fake_driver.records("spin released")] == [first, second]
    assert not fake_driver.records("spin timed out")
    assert np.allclose(times, 4.0) and times.shape == (2,)       # 3 launches of 4 µs per pair, per kernel
    assert host_us > 0


def test_batched_launches_rotate_through_the_sets_across_batches(batched_timer, fake_driver, backend_name):
    fake_driver.read_args(2)
    plan = make_plan(4)
    batched_timer.run(plan, 3, 1)
    launches = fake_driver.records(CALLS[backend_name]["launch"])
    expected_sets = [(1 + k) % 4 for k in range(9)]
    assert [r.arg_values[0] - 0xA000 for r in launches] == expected_sets
    assert [r.params for r in launches] == [plan.params_address(s) for s in expected_sets]
    assert all(r.stream == STREAM for r in launches)
    assert [r.stream for r in fake_driver.records("spin")] == [STREAM] * 3   # one spin per batch, same stream


def test_the_spin_kernel_gets_device_addresses_of_mapped_memory_and_its_timeout(driver, fake_driver, backend_name):
    timer = batched(driver, fake_driver, backend_name, launches_per_sample=2, spin_timeout_ms=250)
    alloc = {"cuda": "cuMemHostAlloc", "hip": "hipHostMalloc"}[backend_name]
    assert len(fake_driver.records(alloc)) == 1
    timer.run(make_plan(1), 1, 0)
    spin = fake_driver.records("spin")[0]
    flag, target, timeout_ns, timed_out = spin.arg_values[:4]
    assert flag >> 44 and timed_out >> 44       # the device's view (the fake refuses host addresses)
    assert timed_out - flag == 64               # two words on separate lines
    assert timeout_ns == 250_000_000


def test_a_full_launch_queue_times_the_spin_out_and_names_the_batch(driver, fake_driver, backend_name):
    timer = batched(driver, fake_driver, backend_name, launches_per_sample=5, spin_timeout_ms=40)
    fake_driver.lib.fake_set_spin_queue_limit(3)  # the 4th launch would block the host
    with pytest.raises(_core.DriverError, match="waiting for the host to queue a batch of 5 launches of kernel "
                                                "'kern'.*Use a smaller launches_per_sample") as info:
        timer.run(make_plan(2), 2, 0)
    error = info.value
    assert not isinstance(error, _core.KernelFault) and error.call == "batched timer"
    assert "spin_timeout_ms=40 waiting" in str(error)
    assert len(fake_driver.records("spin timed out")) == 2
    fake_driver.lib.fake_set_spin_queue_limit(0)
    times, _, _ = timer.run(make_plan(2), 2, 0)   # the timed-out word is cleared per run
    assert np.allclose(times, 4.0)


def test_a_failed_launch_releases_the_spin_at_once(batched_timer, fake_driver, backend_name):
    launch = CALLS[backend_name]["launch"]
    fake_driver.fail(launch, 1, after=1)
    with pytest.raises(_core.DriverError, match=f"{launch} failed: .*INVALID_VALUE.*kernel 'kern'"):
        batched_timer.run(make_plan(2), 2, 0)
    batched_timer.run(make_plan(2), 1, 0)  # its spin finds the failed run's spin released, not held
    assert len(fake_driver.records("spin released")) == 2 and not fake_driver.records("spin timed out")


def test_the_fake_forgets_a_spin_an_earlier_test_left_pending(driver, fake_driver, backend_name):
    # A run whose final synchronize fails leaves its last spin pending in the fake, as a test ending there does.
    timer = batched(driver, fake_driver, backend_name, launches_per_sample=2)
    sync = CALLS[backend_name]["sync"]
    fake_driver.fail(sync, 1)
    with pytest.raises(_core.DriverError, match=f"{sync} failed"):
        timer.run(make_plan(2), 1, 0)
    FakeDriver(fake_driver.path)   # the next test's reset
    timer.run(make_plan(2), 1, 0)
    assert names(r for r in fake_driver.records() if r.call.decode().startswith("spin")) == ["spin", "spin released"]


@pytest.mark.parametrize("sticky", [True, False])
def test_batched_kernel_fault(batched_timer, fake_driver, backend_name, sticky):
    fake_driver.fail(CALLS[backend_name]["sync"], 700, sticky=sticky)
    with pytest.raises(_core.KernelFault, match="kernel 'kern' faulted while running") as info:
        batched_timer.run(make_plan(2), 2, 0)
    assert info.value.context_usable is (not sticky)


def test_batched_timer_frees_its_memory_module_and_events_in_its_context(driver, fake_driver, backend_name):
    lib = fake_driver.lib
    before = (lib.fake_live_host_allocations(), lib.fake_live_modules(), lib.fake_live_events())
    fake_driver.lib.fake_reset()
    timer = batched(driver, fake_driver, backend_name, launches_per_sample=2)
    made = names(fake_driver.records())
    if backend_name == "cuda":  # the embedded PTX, loaded in the timer's context
        assert made == ["cuCtxPushCurrent_v2", "cuModuleLoadData", "cuModuleGetFunction", "cuMemHostAlloc",
                        "cuCtxPopCurrent_v2"]
        assert lib.fake_live_modules() == before[1] + 1
    else:
        assert made == ["hipSetDevice", "hipHostMalloc", "hipSetDevice"] and lib.fake_live_modules() == before[1]
    timer.run(make_plan(2), 3, 0)
    probe = backend_name == "cuda"  # the clock probe's words, made on the first run (CUDA only)
    assert lib.fake_live_host_allocations() == before[0] + 1 + probe
    fake_driver.lib.fake_reset()
    del timer
    assert (lib.fake_live_host_allocations(), lib.fake_live_modules(), lib.fake_live_events()) == before
    freed = names(fake_driver.work())
    assert freed[0] == {"cuda": "cuMemFreeHost", "hip": "hipHostFree"}[backend_name]
    assert names(fake_driver.records())[0] == CALLS[backend_name]["current"]


def test_a_failed_setup_frees_what_it_made(driver, fake_driver, backend_name):
    lib = fake_driver.lib
    before = (lib.fake_live_host_allocations(), lib.fake_live_modules())
    call = {"cuda": "cuMemHostGetDevicePointer_v2", "hip": "hipHostGetDevicePointer"}[backend_name]
    fake_driver.fail(call, 1)
    with pytest.raises(_core.DriverError, match=f"{call} failed"):
        batched(driver, fake_driver, backend_name)
    assert (lib.fake_live_host_allocations(), lib.fake_live_modules()) == before


def test_batched_options_are_checked(driver, fake_driver, backend_name):
    context = CONTEXT[backend_name]
    with pytest.raises(BenchError, match="spin_timeout_ms=0: expected a time in ms above 0"):
        batched(driver, fake_driver, backend_name, spin_timeout_ms=0)
    with pytest.raises(BenchError, match="spin_function=7: only the batched timer takes a spin kernel, not 'graph'"):
        _core.make_timer("graph", driver, context, spin_function=7)
    if backend_name == "cuda":
        with pytest.raises(BenchError, match="spin_function=7: the cuda batched timer embeds its own spin kernel"):
            _core.make_timer("batched", driver, context, spin_function=7)
    else:
        with pytest.raises(BenchError, match="the hip batched timer needs spin_function: .*amdgpu.ll"):
            _core.make_timer("batched", driver, context)
    assert fake_driver.work() == []


# ---- every timer ----

@pytest.mark.parametrize("name", ["events", "graph", "batched"])
def test_every_timer_runs_in_its_context_and_restores_the_callers(name, driver, fake_driver, backend_name, monkeypatch):
    monkeypatch.setenv("FAKE_HIP_DEVICE_COUNT", "2")
    context = {"cuda": FAKE_CUDA_CONTEXT + 0x100, "hip": 1}[backend_name]
    options = {"spin_function": HIP_SPIN} if name == "batched" and backend_name == "hip" else {}
    if name == "batched":
        fake_driver.lib.fake_set_spin_function.argtypes = [ctypes.c_size_t]
        fake_driver.lib.fake_set_spin_function(HIP_SPIN)
    timer = _core.make_timer(name, driver, context, launches_per_sample=0 if name == "events" else 2, **options)
    fake_driver.lib.fake_reset()
    timer.run(make_plan(2), 2, 0)
    records = fake_driver.records()
    if backend_name == "cuda":
        assert [(r.call.decode(), r.value) for r in (records[0], records[-1])] == [
            ("cuCtxPushCurrent_v2", context), ("cuCtxPopCurrent_v2", context)]
        assert fake_driver.lib.fake_context_depth() == 0
    else:
        assert [(r.call.decode(), r.value) for r in (records[0], records[-1])] == [("hipSetDevice", 1), ("hipSetDevice", 0)]
        assert fake_driver.lib.fake_current_device() == 0
    assert len(names(records)) > 2   # the run's work lies in between


# ---- the AMD spin kernel (pyhipbench/kernels/amdgpu.ll) ----

SPIN_DISASSEMBLY = {  # the real-time counter read, the release-word load (system scope), per target
    "gfx90a": ("s_memrealtime", "global_load_dword .* glc"),
    "gfx942": ("s_memrealtime", "global_load_dword .* sc0 sc1"),
    "gfx950": ("s_memrealtime", "global_load_dword .* sc0 sc1"),
    "gfx1100": ("s_sendmsg_rtn_b64 .*MSG_RTN_GET_REALTIME", "global_load_b32 .* glc"),
}


@pytest.mark.parametrize("arch", sorted(SPIN_DISASSEMBLY))
def test_the_amd_spin_kernel_reads_the_real_time_counter_and_rereads_the_host_word(arch, tmp_path):
    import re
    import subprocess
    from importlib import resources
    from pathlib import Path

    from pyhipbench._codeobject.image import kernels
    from pyhipbench.codegen import compile_ir

    from codegen_helpers import require_toolchain

    toolchain = require_toolchain(arch)
    code = compile_ir(Path(resources.files("pyhipbench") / "kernels" / "amdgpu.ll"), arch)
    assert code.verification.ok
    # The batched timer passes (flag, target, timeout_ns, timed_out) in this layout.
    assert [(p.offset, p.size) for p in kernels(code.data)["spin"]] == [(0, 8), (8, 4), (16, 8), (24, 8)]
    hsaco = tmp_path / "kernels.hsaco"
    hsaco.write_bytes(code.data)
    listing = subprocess.run([str(toolchain.disassembler), "-d", f"--mcpu={arch}", str(hsaco)],
                             capture_output=True, text=True, check=True).stdout
    spin = listing[listing.index("<spin>:"):]
    spin = spin[:spin.index("s_endpgm")]
    counter, load = SPIN_DISASSEMBLY[arch]
    assert len(re.findall(counter, spin)) == 2        # at the start and in the loop
    assert re.search(load, spin), spin


# ---- the clean step (clean-cold) ----

def with_clean_step(plan):
    plan.set_clean_step(0xC1EA, "clean step", (16, 1, 1), (256, 1, 1), struct.pack("<Q", 0xB0FF), [0])
    return plan


def test_events_launch_the_clean_step_before_each_start_event(driver, fake_driver, backend_name):
    fake_driver.read_args(1)
    timer = _core.make_timer("events", driver, CONTEXT[backend_name])
    plan = with_clean_step(make_plan(2))
    times, _, _ = timer.run(plan, 3, 0)
    calls = CALLS[backend_name]
    launches = fake_driver.records(calls["launch"])
    assert [r.function for r in launches] == [0xC1EA, 0xF00] * 3          # clean, then the kernel, each time
    assert [r.arg_values[0] for r in launches[::2]] == [0xB0FF] * 3
    assert all(r.stream == STREAM for r in launches)
    if backend_name == "hip":  # the events hipExtModuleLaunchKernel records bracket the kernel alone
        assert all(r.start_event == 0 and r.stop_event == 0 for r in launches[::2])
        assert all(r.start_event and r.stop_event for r in launches[1::2])
    else:  # cuEventRecord(start) comes after the clean launch, right before the kernel
        sequence = [n for n in names(fake_driver.records()) if n in (calls["launch"], calls["record"])]
        assert sequence[:4] == [calls["launch"], calls["record"], calls["launch"], calls["record"]]
    assert len(times) == 3


@pytest.mark.parametrize("name", ["graph", "batched"])
def test_timers_of_several_launches_refuse_a_clean_step(driver, backend_name, name):
    if name == "batched" and backend_name == "hip":
        pytest.skip("the HIP batched timer needs a spin kernel handle; the refusal is the same code path")
    timer = _core.make_timer(name, driver, CONTEXT[backend_name], launches_per_sample=4)
    with pytest.raises(BenchError, match=f"the {name} timer times several launches together, so it would "
                                         "time the clean step too: the clean-cold cache state needs the "
                                         "'events' or 'cupti' timer"):
        timer.run(with_clean_step(make_plan(2)), 2, 0)

