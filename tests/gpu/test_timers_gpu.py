"""The graph and batched timers on an NVIDIA GPU: every set really used, kernel times below the
event pair's, the spin kernel's timeout, and a run from a thread with no current context."""
from __future__ import annotations

import threading
from importlib import resources

import numpy as np
import pytest

import pyhipbench as hb
from pyhipbench import _core
from pyhipbench._launch.argument_sets import ArgumentSets
from pyhipbench._launch.launch_config import LaunchConfig
from pyhipbench._measure.bench import make_plan

KERNELS = resources.files("pyhipbench") / "kernels"


@pytest.fixture(scope="module")
def copy(cuda_device):
    return cuda_device.load_module(KERNELS / "copy.ptx").kernel("copy")


def timer(device, name, **options):
    return _core.make_timer(name, device.driver, device.backend.context, **options)


@pytest.mark.parametrize("name", ["graph", "batched"])
def test_each_launch_of_a_sample_writes_its_own_set(cuda_device, copy, name):
    n = 1 << 20
    src = cuda_device.array(np.random.default_rng(1).random(n, dtype=np.float32))
    dst = cuda_device.array(np.zeros(n, np.float32))
    config = LaunchConfig.checked(n // 256, 256, 0, cuda_device.properties)
    with ArgumentSets(cuda_device, [(copy.params, [src, dst, hb.int64(n)])], 5) as sets:
        for s in range(5):
            sets.array(s, dst).copy_from(np.zeros(n, np.float32))
        times, launches, _ = timer(cuda_device, name, launches_per_sample=5).run(make_plan([(copy, config)], sets), 1, 0)
        for s in range(5):  # one sample of 5 launches on 5 sets: every set's output written
            np.testing.assert_array_equal(sets.array(s, dst).to_numpy(), src.to_numpy())
    assert launches == 5 and times.shape == (1,) and times[0] > 0


def test_graph_and_batched_read_below_the_event_pair(cuda_device, copy):
    n = 4 * (1 << 20) // 4  # a 4 MiB copy
    src = cuda_device.array(np.ones(n, np.float32))
    dst = cuda_device.empty_like(src)
    config = LaunchConfig.checked(cuda_device.properties.compute_units * 8, 256, 0, cuda_device.properties)
    with ArgumentSets(cuda_device, [(copy.params, [src, dst, hb.int64(n)])], 1) as sets:
        plan = make_plan([(copy, config)], sets)
        medians, host = {}, {}
        for name, samples in (("events", 400), ("graph", 4), ("batched", 4)):
            t = timer(cuda_device, name) if name == "events" else timer(cuda_device, name, launches_per_sample=100)
            t.run(plan, samples, 0)  # warm: JIT, graphs, pools
            times, launches, host_us = t.run(plan, samples, 0)
            medians[name], host[name] = float(np.median(times)), host_us / (samples * launches)
    print("median µs per kernel", medians, "host µs per kernel", host)
    for name in ("graph", "batched"):
        assert 0.5 < medians[name] < medians["events"], (name, medians)
    assert host["graph"] < host["events"]


def test_the_spin_kernel_gives_up_and_names_the_batch(cuda_device):
    empty = cuda_device.load_module(KERNELS / "empty.ptx").kernel("empty")
    config = LaunchConfig.checked(1, 1, 0, cuda_device.properties)
    with ArgumentSets(cuda_device, [(empty.params, [])], 1) as sets:
        plan = make_plan([(empty, config)], sets)
        # 1 µs cannot be enough to queue 200 launches: the guard must fire, not hang.
        impatient = timer(cuda_device, "batched", launches_per_sample=200, spin_timeout_ms=0.001)
        with pytest.raises(hb.DriverError, match="queue a batch of 200 launches of kernel 'empty'") as info:
            impatient.run(plan, 2, 0)
        assert info.value.call == "batched timer"
        times, _, _ = timer(cuda_device, "batched", launches_per_sample=200).run(plan, 2, 0)
        assert (times > 0).all()


def test_timers_run_from_a_thread_with_no_current_context(cuda_device, copy):
    from cuda.bindings import driver as cu
    n = 1 << 16
    src = cuda_device.array(np.arange(n, dtype=np.float32))
    dst = cuda_device.array(np.zeros(n, np.float32))
    config = LaunchConfig.checked(n // 256, 256, 0, cuda_device.properties)
    timers = [timer(cuda_device, "events"), timer(cuda_device, "graph", launches_per_sample=4),
              timer(cuda_device, "batched", launches_per_sample=4)]
    results, contexts = [], []

    def run_all(plan):  # a new thread: CUDA has made no context current on it
        contexts.append(int(cu.cuCtxGetCurrent()[1]))
        try:
            results.extend(t.run(plan, 3, 0)[0] for t in timers)
        except Exception as e:  # reported in the main thread
            results.append(e)
        contexts.append(int(cu.cuCtxGetCurrent()[1]))

    with ArgumentSets(cuda_device, [(copy.params, [src, dst, hb.int64(n)])], 1) as sets:
        plan = make_plan([(copy, config)], sets)
        worker = threading.Thread(target=run_all, args=(plan,))
        worker.start()
        worker.join()
    assert contexts == [0, 0]                      # none before, and none left behind
    assert len(results) == 3 and all(isinstance(r, np.ndarray) and (r > 0).all() for r in results), results
    np.testing.assert_array_equal(dst.to_numpy(), src.to_numpy())
