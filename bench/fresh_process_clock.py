"""The SM clock of a fresh process's first measurement: the GPU idle with no context (345 MHz on the H200).

Before anything, NVML's SM clock; then the device is opened and NVML read again; then bench() of the fma
kernel (200 iterations, ~4 µs) with the defaults, at once: its Result.clock, throttled samples and warm-up.
Run it when no other process holds the GPU.

    python bench/fresh_process_clock.py

Needs an NVIDIA GPU and libnvidia-ml.so.1.
"""
from __future__ import annotations

import ctypes
import time
from pathlib import Path

import pyhipbench as hb

HERE = Path(__file__).resolve().parent

nvml = ctypes.CDLL("libnvidia-ml.so.1")
nvml.nvmlInit_v2()
handle = ctypes.c_void_p()
nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(handle))


def sm_mhz() -> int:
    value = ctypes.c_uint()
    nvml.nvmlDeviceGetClockInfo(handle, 1, ctypes.byref(value))
    return value.value


before = sm_mhz()
started = time.perf_counter()
device = hb.Device("cuda")
opened_s = time.perf_counter() - started
after_open = sm_mhz()
fma = device.load_module(HERE / "kernels" / "fma.ptx").kernel("fma")
out = device.empty(1056 * 256)
res = hb.bench(fma, 1056, 256, [out, hb.uint32(200)])
c = res.clock
print(f"NVML SM clock before the context {before} MHz, after opening the device ({opened_s:.2f} s) {after_open} MHz")
print(f"first bench: median {res.median_us:.3f} µs, clock {c.mean_mhz:.0f} ({c.min_mhz:.0f}–{c.max_mhz:.0f}) MHz, "
      f"throttled samples taken again {res.throttled_samples}, warm-up {res.warmup}, samples {res.samples}")
