"""Ways of reading an NVIDIA GPU's SM clock while it runs kernels, side by side, and how it ramps after idle.

  resolution  the steps of %globaltimer a kernel reading it back to back sees (ns)
  probes      under load (a ~200 µs FMA kernel back to back for 3 s), every 50 ms:
              - bracket: a probe kernel (one thread per SM, SM 0 writes %globaltimer and %clock64) before
                and after a run of 10 load kernels, clock = Δclock64 / Δglobaltimer (as nvbench does);
              - spin: one probe kernel that spins 20 µs on SM 0 and reads both at its ends;
              - NVML: nvmlDeviceGetClockInfo(SM), read right after the run, and its cost (µs per call);
              and nvidia-smi --query-gpu=clocks.sm once in the middle
  ramp        the GPU left idle 2 s, then 4000 launches of a ~5 µs kernel, bracket-probed every 20 launches
              and read by NVML: the clock against the time since the first launch
  cost        a bracket probe pair's GPU time and host time per run
  pyhipbench  Result.clock of bench_callable on the load kernel (600 calls), with nvidia-smi's clocks.sm
              polled every 0.2 s meanwhile; then, after 2 s idle, bench_callable of the ~5 µs kernel with
              the defaults: its clock, throttled samples and warm-up

Writes clock_reading.json in --out and prints a summary.

    python bench/clock_reading.py [--out DIR]

Needs an NVIDIA GPU, cupy and libnvidia-ml.so.1.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import subprocess
import time
from pathlib import Path

import cupy as cp

SOURCE = r"""
extern "C" __global__ void stamp(unsigned long long* out) {
  unsigned int smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  if (smid == 0 && threadIdx.x == 0) {
    unsigned long long t, c;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(c));
    out[0] = t; out[1] = c;
  }
}
extern "C" __global__ void spin(unsigned long long* out, unsigned long long ns) {
  unsigned long long t0, c0, t, c;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(c0));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(c));
  out[0] = t - t0; out[1] = c - c0;
}
extern "C" __global__ void steps(unsigned long long* out, int n) {
  unsigned long long last, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(last));
  int k = 0;
  while (k < n) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (t != last) { out[k++] = t - last; last = t; }
  }
}
extern "C" __global__ void load(float* x, int iters) {
  float a = x[threadIdx.x], b = 1.0001f;
  for (int i = 0; i < iters; ++i) { a = a * b + 0.5f; b = b * a - 0.25f; }
  if (a == 12345.f) x[threadIdx.x] = b;
}
"""


class Nvml:
    def __init__(self) -> None:
        self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        assert self.lib.nvmlInit_v2() == 0
        self.handle = ctypes.c_void_p()
        assert self.lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(self.handle)) == 0

    def sm_mhz(self) -> int:
        value = ctypes.c_uint()
        assert self.lib.nvmlDeviceGetClockInfo(self.handle, 1, ctypes.byref(value)) == 0  # NVML_CLOCK_SM
        return value.value

    def default_mhz(self) -> int:
        value = ctypes.c_uint()
        status = self.lib.nvmlDeviceGetDefaultApplicationsClock(self.handle, 1, ctypes.byref(value))
        return value.value if status == 0 else -status

    def max_mhz(self) -> int:
        value = ctypes.c_uint()
        assert self.lib.nvmlDeviceGetMaxClockInfo(self.handle, 1, ctypes.byref(value)) == 0
        return value.value

    def reasons(self) -> int:
        value = ctypes.c_ulonglong()
        self.lib.nvmlDeviceGetCurrentClocksEventReasons(self.handle, ctypes.byref(value))
        return value.value


def through_pyhipbench(heavy, small) -> dict:
    import threading

    import pyhipbench as hb
    polled, done = [], threading.Event()

    def poll() -> None:
        while not done.is_set():
            text = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm", "--format=csv,noheader,nounits"],
                                  capture_output=True, text=True).stdout.strip()
            polled.append(int(text) if text.isdigit() else text)
            time.sleep(0.2)
    watcher = threading.Thread(target=poll)
    watcher.start()
    loaded = hb.bench_callable(heavy, iterations=600, warmup=10, cache="warm", graph=False)
    done.set()
    watcher.join()
    time.sleep(2.0)
    idle = hb.bench_callable(small, cache="warm", graph=False)
    describe = lambda r: {"clock_mhz": None if r.clock is None else r.clock.to_dict(),  # noqa: E731
                          "throttled_samples": r.throttled_samples, "warmup": r.warmup, "samples": r.samples,
                          "median_us": r.median_us, "timer": r.timer}
    return {"under_load": {**describe(loaded), "nvidia_smi_mhz": polled}, "after_idle": describe(idle)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("."))
    options = parser.parse_args()
    module = cp.RawModule(code=SOURCE)
    stamp, spin, steps, load = (module.get_function(n) for n in ("stamp", "spin", "steps", "load"))
    sms = cp.cuda.Device(0).attributes["MultiProcessorCount"]
    nvml = Nvml()
    out: dict = {"sms": sms, "nvml_default_mhz": nvml.default_mhz(), "nvml_max_mhz": nvml.max_mhz()}

    buf = cp.zeros(4096, cp.uint64)
    steps((1,), (1,), (buf, cp.int32(1000)))
    cp.cuda.Device().synchronize()
    deltas = buf[:1000].get()
    out["globaltimer_step_ns"] = {"min": int(deltas.min()), "median": float(statistics.median(deltas.tolist()))}

    x = cp.ones(1024, cp.float32)
    a, b = cp.zeros(2, cp.uint64), cp.zeros(2, cp.uint64)
    s = cp.zeros(2, cp.uint64)

    def bracket(launch, n) -> tuple[float, float]:
        stamp((sms,), (32,), (a,))
        for _ in range(n):
            launch()
        stamp((sms,), (32,), (b,))
        cp.cuda.Device().synchronize()
        ta, ca = a.get().tolist()
        tb, cb = b.get().tolist()
        return (cb - ca) / (tb - ta) * 1e3, (tb - ta) / 1e3  # MHz, µs

    heavy = lambda: load((sms * 4,), (256,), (x, cp.int32(200000)))  # noqa: E731
    heavy()
    cp.cuda.Device().synchronize()
    started = time.perf_counter()
    heavy_us = None
    readings = []
    smi = None
    while time.perf_counter() - started < 3.0:
        mhz, span_us = bracket(heavy, 10)
        heavy_us = span_us / 10
        t0 = time.perf_counter()
        nvml_mhz = nvml.sm_mhz()
        nvml_cost_us = (time.perf_counter() - t0) * 1e6
        spin((1,), (1,), (s, cp.uint64(20000)))
        cp.cuda.Device().synchronize()
        dt, dc = s.get().tolist()
        readings.append({"t_s": time.perf_counter() - started, "bracket_mhz": mhz, "spin_mhz": dc / dt * 1e3,
                         "nvml_mhz": nvml_mhz, "nvml_call_us": nvml_cost_us, "reasons": nvml.reasons()})
        if smi is None and time.perf_counter() - started > 1.5:
            for _ in range(3):
                heavy()
            smi = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.max.sm",
                                  "--format=csv,noheader,nounits"], capture_output=True, text=True).stdout.strip()
            cp.cuda.Device().synchronize()
    out["load_kernel_us"] = heavy_us
    out["probes"] = readings
    out["nvidia_smi_under_load"] = smi
    keys = ("bracket_mhz", "spin_mhz", "nvml_mhz", "nvml_call_us")
    out["probes_summary"] = {k: {"median": statistics.median(r[k] for r in readings),
                                 "min": min(r[k] for r in readings), "max": max(r[k] for r in readings)}
                             for k in keys}

    time.sleep(2.0)
    small = lambda: load((sms,), (128,), (x, cp.int32(2000)))  # noqa: E731
    ramp = []
    started = time.perf_counter()
    for i in range(200):
        mhz, span_us = bracket(small, 20)
        ramp.append({"t_ms": (time.perf_counter() - started) * 1e3, "bracket_mhz": mhz, "span_us": span_us,
                     "nvml_mhz": nvml.sm_mhz()})
    out["ramp"] = ramp

    host = []
    for _ in range(200):
        t0 = time.perf_counter()
        stamp((sms,), (32,), (a,))
        stamp((sms,), (32,), (b,))
        cp.cuda.Device().synchronize()
        host.append((time.perf_counter() - t0) * 1e6)
    _, probe_span_us = bracket(lambda: None, 0)
    out["probe_pair"] = {"host_us_with_sync": statistics.median(host), "gpu_span_us": probe_span_us}

    out["pyhipbench"] = through_pyhipbench(heavy, small)

    options.out.mkdir(parents=True, exist_ok=True)
    (options.out / "clock_reading.json").write_text(json.dumps(out, indent=1))
    print(json.dumps({k: v for k, v in out.items() if k not in ("probes", "ramp")}, indent=1))
    print("ramp (ms, bracket MHz, NVML MHz):",
          [(round(r["t_ms"], 1), round(r["bracket_mhz"]), r["nvml_mhz"]) for r in ramp[:12]],
          "...", [(round(r["t_ms"], 1), round(r["bracket_mhz"]), r["nvml_mhz"]) for r in ramp[-3:]])


if __name__ == "__main__":
    main()
