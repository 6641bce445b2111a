"""Dynamic shared memory above the default limit, and each kernel's own limits, checked before launch.

On the CPU: host memory for the device (HostBackend records the per-kernel opt-in calls and reports
the kernel limits a test sets), the fake driver for the launches.
"""
from __future__ import annotations

from importlib import resources

import numpy as np
import pytest

import pyhipbench as hb
from pyhipbench._device.backends.base import FunctionLimits

COPY_PTX = (resources.files("pyhipbench") / "kernels" / "copy.ptx").read_bytes()
LAUNCH = {"cuda": "cuLaunchKernel", "hip": "hipExtModuleLaunchKernel"}
DEFAULT, OPTIN = 48 * 1024, 232448  # HostBackend's limits: the H200's


@pytest.fixture
def copy(device):
    return device.load_module(COPY_PTX).kernel("copy")


def run(kernel, shared_bytes, block=256):
    device = kernel.device
    src = device.array(np.arange(1024, dtype=np.float32))
    return hb.bench(kernel, 4, block, [src, device.empty_like(src), hb.int64(1024)], iterations=2, warmup=0,
                    cache="warm", timer="events", shared_bytes=shared_bytes)


def test_shared_memory_above_the_default_opts_the_kernel_in_once(device, copy, fake_driver, backend_name):
    result = run(copy, 73728)  # a Triton GEMM's 72 KiB: refused before the opt-in
    assert device.backend.dynamic_shared_calls == [(copy.handle, 73728)]
    assert {r.shared_bytes for r in fake_driver.records(LAUNCH[backend_name])} == {73728}
    assert result.config.shared_bytes == 73728 and result.to_dict()["shared_bytes"] == 73728
    run(copy, 73728)
    run(copy, 65536)  # already allowed
    assert device.backend.dynamic_shared_calls == [(copy.handle, 73728)]
    run(copy, OPTIN)
    assert device.backend.dynamic_shared_calls == [(copy.handle, 73728), (copy.handle, OPTIN)]


def test_shared_memory_within_the_default_needs_no_opt_in(device, copy):
    run(copy, DEFAULT)
    run(copy, 0)
    assert device.backend.dynamic_shared_calls == []


def test_static_shared_memory_counts_towards_the_default(device, copy):
    device.backend.function_limit = FunctionLimits(max_threads_per_block=1024, static_shared_bytes=40000)
    run(copy, 8000)  # 48000 bytes in all: within 49152
    assert device.backend.dynamic_shared_calls == []
    run(copy, 10000)  # 50000
    assert device.backend.dynamic_shared_calls == [(copy.handle, 10000)]


def test_static_plus_dynamic_above_the_opt_in_names_both_numbers(device, copy, fake_driver):
    device.backend.function_limit = FunctionLimits(max_threads_per_block=1024, static_shared_bytes=16384)
    with pytest.raises(hb.BenchError, match="kernel 'copy': 16384 bytes of static shared memory \\+ "
                       "shared_bytes=220000 = 236384 bytes exceeds the device's opt-in maximum of 232448 bytes"):
        run(copy, 220000)
    assert fake_driver.work() == [] and device.backend.dynamic_shared_calls == []


def test_dynamic_shared_memory_above_the_opt_in_is_refused(device, copy, fake_driver):
    with pytest.raises(hb.BenchError, match="shared_bytes=232449: out of range, expected an integer in "
                       "\\[0, 232448\\] \\(bytes; the device's opt-in maximum per block\\)"):
        run(copy, OPTIN + 1)
    assert fake_driver.work() == []


def test_block_above_the_kernels_thread_limit_names_both_numbers(device, copy, fake_driver):
    device.backend.function_limit = FunctionLimits(max_threads_per_block=384, static_shared_bytes=0)
    run(copy, 0, block=384)
    with pytest.raises(hb.BenchError, match="block \\(512, 1, 1\\) has 512 threads; kernel 'copy' allows at "
                       "most 384 per block \\(its register use and launch bounds\\)"):
        run(copy, 0, block=512)
    assert {r.block[0] for r in fake_driver.records(LAUNCH[device.backend.name])} == {384}  # the first run only


def test_kernel_limits_are_asked_once_per_kernel(device, copy):
    asked = []
    limits = device.backend.function_limits
    device.backend.function_limits = lambda function: asked.append(function) or limits(function)
    run(copy, 0)
    run(copy, 1024)
    assert asked == [copy.handle]
