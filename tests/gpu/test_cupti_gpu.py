"""The cupti timer on an NVIDIA GPU: samples in launch order, kernel times below the event pair's,
a tight spread, and a run from a thread with no current context."""
from __future__ import annotations

import struct
import threading
from importlib import resources

import numpy as np
import pytest

import pyhipbench as hb
from pyhipbench import _core
from pyhipbench._launch.argument_sets import ArgumentSets
from pyhipbench._launch.launch_config import LaunchConfig
from pyhipbench._measure.bench import make_plan
from pyhipbench._measure.timers import core_timer

KERNELS = resources.files("pyhipbench") / "kernels"
MiB = 1 << 20


@pytest.fixture(scope="module")
def copy(cuda_device):
    return cuda_device.load_module(KERNELS / "copy.ptx").kernel("copy")


@pytest.fixture(scope="module")
def cupti(cuda_device):
    try:
        return _core.make_timer("cupti", cuda_device.driver, cuda_device.backend.context)
    except hb.LibraryError as e:
        pytest.skip(f"needs libcupti (set PYHIPBENCH_CUPTI_LIBRARY): {e}")


def test_each_sample_is_its_own_launch(cuda_device, copy, cupti):
    # Two argument sets over the same buffers: set 0 copies 64 MB, set 1 copies 1 MB. Alternating
    # launches must give alternating times, in launch order.
    big, small = 64 * MiB // 4, MiB // 4
    src = cuda_device.array(np.ones(big, np.float32))
    dst = cuda_device.empty_like(src)
    grid = cuda_device.properties.compute_units * 8
    sets = [struct.pack("<QQq", src.address, dst.address, n) for n in (big, small)]
    plan = _core.LaunchPlan(copy.handle, "copy", (grid, 1, 1), (256, 1, 1), 0, 0, sets, [0, 8, 16])
    cupti.run(plan, 10, 0)
    times, launches, host_us = cupti.run(plan, 40, 0)
    assert launches == 1 and times.shape == (40,) and host_us > 0
    assert times[0::2].min() > 4 * times[1::2].max(), times  # 64 MB > 4 x 1 MB, every pair
    np.testing.assert_array_equal(dst.to_numpy(), np.ones(big, np.float32))


def test_cupti_reads_below_the_event_pair_with_a_tight_spread(cuda_device, copy, cupti):
    n = 4 * MiB // 4  # a 4 MiB copy
    src = cuda_device.array(np.ones(n, np.float32))
    dst = cuda_device.empty_like(src)
    config = LaunchConfig.checked(cuda_device.properties.compute_units * 8, 256, 0, cuda_device.properties)
    with ArgumentSets(cuda_device, [(copy.params, [src, dst, hb.int64(n)])], 1) as sets:
        plan = make_plan([(copy, config)], sets)
        results = {}
        for name, timer in (("events", core_timer(cuda_device, "events")), ("cupti", cupti)):
            timer.run(plan, 20, 0)
            times, _, host_us = timer.run(plan, 400, 0)
            results[name] = (times, host_us / 400)
    cupti_times, events_times = results["cupti"][0], results["events"][0]
    print("median µs: cupti", np.median(cupti_times), "events", np.median(events_times),
          "| host µs per launch: cupti", results["cupti"][1], "events", results["events"][1])
    assert 0.5 < np.median(cupti_times) < np.median(events_times)
    p10, p90 = np.percentile(cupti_times, [10, 90])
    assert p90 < 1.1 * p10, (p10, p90)  # about ±1 % on the H200


def test_cupti_runs_from_a_thread_with_no_current_context(cuda_device, copy, cupti):
    from cuda.bindings import driver as cu
    n = 1 << 16
    src = cuda_device.array(np.arange(n, dtype=np.float32))
    dst = cuda_device.array(np.zeros(n, np.float32))
    config = LaunchConfig.checked(n // 256, 256, 0, cuda_device.properties)
    results, contexts = [], []

    def run(plan):  # a new thread: CUDA has made no context current on it
        contexts.append(int(cu.cuCtxGetCurrent()[1]))
        try:
            results.append(cupti.run(plan, 3, 0)[0])
        except Exception as e:  # reported in the main thread
            results.append(e)
        contexts.append(int(cu.cuCtxGetCurrent()[1]))

    with ArgumentSets(cuda_device, [(copy.params, [src, dst, hb.int64(n)])], 1) as sets:
        worker = threading.Thread(target=run, args=(make_plan([(copy, config)], sets),))
        worker.start()
        worker.join()
    assert contexts == [0, 0]
    assert len(results) == 1 and isinstance(results[0], np.ndarray) and (results[0] > 0).all(), results
    np.testing.assert_array_equal(dst.to_numpy(), src.to_numpy())
