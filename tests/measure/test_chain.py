"""Chains: several launches in order as one sample, rotated together, under every timer and cache state."""
from __future__ import annotations

from importlib import resources

import numpy as np
import pytest

import pyhipbench as hb
from pyhipbench.errors import BenchError

COPY_PTX = (resources.files("pyhipbench") / "kernels" / "copy.ptx").read_bytes()
LAUNCH = {"cuda": "cuLaunchKernel", "hip": "hipExtModuleLaunchKernel"}
RESET = {"cuda": ("cuMemsetD8Async", "cuMemcpyDtoDAsync_v2"), "hip": ("hipMemsetAsync", "hipMemcpyDtoDAsync")}


@pytest.fixture
def copy(device):
    return device.load_module(COPY_PTX).kernel("copy")


def split_chain(device, copy, n=1 << 16):
    """src -> work -> dst: the first launch writes `work`, the second reads it (a split-K workspace's shape)."""
    src = device.array(np.arange(n, dtype=np.float32))
    work, dst = device.empty_like(src), device.empty_like(src)
    first = hb.Launch(copy, 4, 256, [src, work, hb.int64(n)])
    second = hb.Launch(copy, 8, 128, [work, dst, hb.int64(n)])
    return [first, second], (src, work, dst)


def launches(fake_driver, backend_name):
    return fake_driver.records(LAUNCH[backend_name])


def test_a_sample_launches_the_chain_in_order_and_the_shared_array_is_one_buffer_per_set(
        device, copy, fake_driver, backend_name):
    fake_driver.read_args(2)
    chain, (src, work, dst) = split_chain(device, copy, 1 << 18)  # 1 MiB arrays against a 4 MiB LLC: rotation
    res = hb.bench_chain(chain, timer="events", cache="dirty-cold", iterations=6, warmup=2)
    assert res.ran == "chain" and res.kernel == "copy -> copy" and res.rotation.sets > 1
    made = launches(fake_driver, backend_name)
    assert len(made) == 2 * 8
    firsts, seconds = made[0::2], made[1::2]
    assert [r.block[0] for r in firsts] == [256] * 8 and [r.block[0] for r in seconds] == [128] * 8
    # Within a sample, the second kernel reads the very buffer the first wrote, in that sample's set.
    assert all(a.arg_values[1] == b.arg_values[0] for a, b in zip(firsts, seconds))
    sets = res.rotation.sets
    assert firsts[0].arg_values[0] == src.address
    assert len({r.arg_values[0] for r in firsts}) == min(sets, 8)  # the sets rotate, all arrays together


def test_events_bracket_the_whole_chain(device, copy, fake_driver, backend_name):
    chain, _ = split_chain(device, copy)
    res = hb.bench_chain(chain, timer="events", cache="warm", iterations=5, warmup=0)
    # The fake runs each launch for 4 µs: one event pair over both kernels.
    np.testing.assert_allclose(res.times_us, 8.0, atol=1e-3)
    made = launches(fake_driver, backend_name)
    if backend_name == "hip":  # hipExtModuleLaunchKernel: the start event on the first, the stop on the last
        assert all(r.start_event and not r.stop_event for r in made[0::2])
        assert all(r.stop_event and not r.start_event for r in made[1::2])
    else:
        assert len(fake_driver.records("cuEventRecord")) >= 2 * 5


def test_the_clean_step_runs_before_the_chain_never_between_its_kernels(device, copy, fake_driver, backend_name):
    chain, _ = split_chain(device, copy)
    hb.bench_chain(chain, timer="events", cache="clean-cold", iterations=4, warmup=0)
    clean = device.bundled_kernel("clean").handle
    made = [r.function == clean for r in launches(fake_driver, backend_name)]
    assert made == [True, False, False] * 4


def test_graph_and_batched_unroll_chains(device, copy, fake_driver, backend_name):
    chain, _ = split_chain(device, copy)
    res = hb.bench_chain(chain, timer="graph", cache="warm", iterations=2, warmup=0)
    nodes = fake_driver.records("graph node")
    assert res.launches_per_sample >= 16 and len(nodes) == 2 * 2 * res.launches_per_sample
    assert [n.block[0] for n in nodes[:4]] == [256, 128, 256, 128]
    np.testing.assert_allclose(res.times_us, 8.0, atol=1e-3)  # µs per chain


def test_cupti_gives_the_sum_each_kernels_median_and_the_span(fake_libraries, fake_cupti):
    from fakes.driver import FakeDriver
    from fakes.host_backend import HostBackend
    fake = FakeDriver(fake_libraries["cuda"])
    fake.lib.fake_set_launch_ms_step(0.0)
    device = hb.Device.from_backend(HostBackend(), hb._core.load_driver("cuda", str(fake_libraries["cuda"])))
    copy = device.load_module(COPY_PTX).kernel("copy")
    chain, _ = split_chain(device, copy)
    res = hb.bench_chain(chain, timer="cupti", cache="clean-cold", iterations=5, warmup=1)
    np.testing.assert_allclose(res.times_us, 8.0, atol=1e-6)  # 4 µs + 4 µs, the clean step not counted
    assert [(k.name, k.grid, k.block) for k in res.kernels] == [("copy", (4, 1, 1), (256, 1, 1)),
                                                               ("copy", (8, 1, 1), (128, 1, 1))]
    assert [k.median_us for k in res.kernels] == pytest.approx([4.0, 4.0])
    np.testing.assert_allclose(res.span_us, 8.0, atol=1e-6)  # back to back on the fake clock
    assert "kernels (median µs): copy 4.000, copy 4.000" in res.summary() and "span median 8.000" in res.summary()
    record = res.to_dict()
    assert record["ran"] == "chain" and len(record["kernels"]) == 2 and len(record["span_us"]) == 5


def test_reset_steps_run_after_the_clean_step_right_before_the_chain_outside_the_timing(device, copy, fake_driver,
                                                                                         backend_name):
    """As in real code: the cache as earlier work leaves it (the clean step), then the output zeroed (or
    restored) right before the kernel, so what the resets wrote is in the cache when the chain starts."""
    chain, (src, work, dst) = split_chain(device, copy)
    zero, restore = RESET[backend_name]
    res = hb.bench_chain(chain, timer="events", cache="clean-cold", iterations=3, warmup=0,
                         reset_to_zero=[dst], restore_value=[work])
    calls = [r.call.decode() for r in fake_driver.records() if r.call.decode() in (zero, restore, LAUNCH[backend_name])]
    clean, chain_launch = LAUNCH[backend_name], LAUNCH[backend_name]
    assert calls == [clean, zero, restore, chain_launch, chain_launch] * 3
    np.testing.assert_allclose(res.times_us, 8.0, atol=1e-3)


def test_module_launches_chain_every_kernel_in_name_order(device):
    module = device.load_module(COPY_PTX)
    chain = hb.module_launches(module, 4, {"copy": 64}, [])
    assert [(one.kernel.name, one.grid, one.block) for one in chain] == [(n, 4, 64) for n in module.kernel_names()]
    with pytest.raises(BenchError, match="block=.*has no entry for kernel 'copy'"):
        hb.module_launches(module, 4, {"other": 64}, [])


@pytest.mark.parametrize("launches, message", [
    ([], r"launches=\[\]: expected a non-empty list of pyhipbench.Launch"),
    ("copy", "launches='copy': expected a non-empty list"),
    ([42], r"launches\[0\]=42: expected a pyhipbench.Launch"),
])
def test_a_bad_chain_is_named(launches, message):
    with pytest.raises(BenchError, match=message):
        hb.bench_chain(launches)


def test_a_reset_of_an_array_the_chain_does_not_take_is_refused(device, copy, fake_driver):
    chain, _ = split_chain(device, copy)
    stranger = device.empty(16, np.float32)
    before = len(fake_driver.work())
    with pytest.raises(BenchError, match="reset_to_zero: .* is not a device array the kernels take"):
        hb.bench_chain(chain, reset_to_zero=[stranger])
    with pytest.raises(BenchError, match="restore_value=.*: expected a list"):
        hb.bench_chain(chain, restore_value=stranger)
    assert len(fake_driver.work()) == before  # nothing launched


def test_graph_and_batched_refuse_reset_steps(device, copy):
    chain, (_, _, dst) = split_chain(device, copy)
    with pytest.raises(BenchError, match="would time the reset steps"):
        hb.bench_chain(chain, timer="graph", cache="warm", iterations=2, reset_to_zero=[dst])


def test_a_tensor_passed_to_two_launches_is_one_array_and_can_be_reset(device, copy, fake_driver, backend_name):
    """Tensors (DLPack producers) are viewed once per chain: the same buffer in both launches of a set."""
    from pyhipbench._device import dlpack

    from fakes.tensors import FakeTensor
    own = (dlpack.ROCM if backend_name == "hip" else dlpack.CUDA, 0)
    n = 1 << 16
    src = FakeTensor(np.arange(n, dtype=np.float32), own, memory=device.backend)
    work = FakeTensor(np.zeros(n, np.float32), own, memory=device.backend)
    dst = FakeTensor(np.zeros(n, np.float32), own, memory=device.backend)
    fake_driver.read_args(2)
    chain = [hb.Launch(copy, 4, 256, [src, work, hb.int64(n)]), hb.Launch(copy, 8, 128, [work, dst, hb.int64(n)])]
    hb.bench_chain(chain, timer="events", cache="dirty-cold", rotate=3, iterations=3, warmup=0, reset_to_zero=[work])
    made = launches(fake_driver, backend_name)
    assert all(a.arg_values[1] == b.arg_values[0] for a, b in zip(made[0::2], made[1::2]))
    assert len(fake_driver.records(RESET[backend_name][0])) == 3


@pytest.mark.parametrize("call, message", [
    (lambda module: hb.module_launches("copy", 4, 64, []), r"^module_launches: module='copy': expected a pyhipbench.Module"),
    (lambda module: hb.module_launches(module, 4, 64, None), r"^module_launches: args=None: expected a list"),
    (lambda module: hb.module_launches(module, 4, 64, [], names="copy"), r"^module_launches: names='copy': expected a "
     r"non-empty list of the module's kernel names \(copy\)"),
    (lambda module: hb.module_launches(module, 4, 64, [], names=[]), r"^module_launches: names=\[\]: expected"),
])
def test_module_launches_refuses_what_it_cannot_chain_naming_it(device, call, message):
    with pytest.raises(BenchError, match=message):
        call(device.load_module(COPY_PTX))


def test_a_shared_array_can_be_reset(device, copy, fake_driver, backend_name):
    """A shared() array is one buffer in every set: its reset zeroes that buffer before each sample."""
    src = device.array(np.ones(1024, np.float32))
    dst = device.array(np.ones(1024, np.float32))
    zero = RESET[backend_name][0]
    hb.bench_chain([hb.Launch(copy, 4, 256, [src, hb.shared(dst), hb.int64(1024)])], timer="events",
                   cache="dirty-cold", rotate=3, iterations=3, warmup=0, reset_to_zero=[dst])
    assert {r.arg_values[0] for r in fake_driver.records(zero)} == {dst.address}
