"""The environment and energy on a real NVIDIA GPU: NVML's answers against nvidia-smi's."""
from __future__ import annotations

import shutil
import subprocess

import pytest

import pyhipbench as hb
from pyhipbench._results.environment import environment, finish


def smi(field: str) -> str:
    if shutil.which("nvidia-smi") is None:
        pytest.skip("needs nvidia-smi to check NVML's answers against")
    return subprocess.run(["nvidia-smi", "-i", "0", f"--query-gpu={field}", "--format=csv,noheader,nounits"],
                          capture_output=True, text=True, check=True).stdout.strip()


def test_the_devices_record_matches_nvidia_smi(cuda_device):
    [record] = finish(environment([cuda_device]))["devices"]
    assert record["driver_version"] == smi("driver_version")
    assert record["uuid"] == smi("uuid") and record["pci_bus_id"].lower() == smi("pci.bus_id").lower()[4:]
    assert record["max_sm_clock_mhz"] == int(smi("clocks.max.sm"))
    assert record["power_limit_w"] == pytest.approx(float(smi("power.limit")), abs=1)
    assert 0 < record["temperature_start_c"] < 100 and 0 < record["temperature_end_c"] < 100
    assert record["api_version"].startswith("CUDA ") and record["bindings"].startswith("cuda-")


def test_energy_of_a_64_mib_copy(cuda_device):
    kernel = cuda_device.bundled_kernel("copy")
    n = 64 << 18
    a, b = cuda_device.empty(n), cuda_device.empty(n)
    res = hb.bench(kernel, n // 256, 256, [a, b, hb.int64(n)], cache="warm", energy=True)
    e = res.energy
    assert e is not None and 50 < e.mean_w < 1500  # an H200 draws 70 W idle, at most its 700 W limit
    assert e.counter_step_ms > 0 and e.window_s > 0.5
    # Back to back, a sample's wall time is about its GPU time: energy per sample ~ power x median.
    assert e.mj_per_sample == pytest.approx(e.mean_w * res.median_us * 1e-3, rel=0.5)


def test_a_hold_runs_the_gpu_for_its_seconds_before_the_samples(cuda_device):
    kernel = cuda_device.bundled_kernel("copy")
    n = 64 << 18
    a, b = cuda_device.empty(n), cuda_device.empty(n)
    held = hb.bench(kernel, n // 256, 256, [a, b, hb.int64(n)], cache="warm", hold_s=0.2, throttle_threshold=0)
    per_launch_s = held.median_us * 1e-6
    assert held.wall_s >= 0.2 and held.warmup * per_launch_s >= 0.2 * 0.8  # launches back to back, GPU-bound
    assert held.clock is not None and held.clock.mean_mhz > 0 and held.samples >= 10
