"""Does the SM clock drop while the GPU idles, and what does bench() make of a kernel measured right after?

  idle      after 1 s of load, the GPU left idle for --idle-s seconds with a context open, NVML's SM clock
            read every 100 ms: the clock against the time since the load ended
  measured  then, for each idle gap in --gaps (s): 1 s of load, the gap, and bench() of a ~5 µs kernel with
            the defaults: Result.clock (mean, min, max), throttled samples taken again, warm-up samples

Writes idle_ramp.json in --out and prints a summary.

    python bench/idle_ramp.py [--out DIR] [--idle-s 30] [--gaps 0.5 2 10 30]

Needs an NVIDIA GPU and libnvidia-ml.so.1.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import time
from pathlib import Path

import pyhipbench as hb

HERE = Path(__file__).resolve().parent


class SmClock:
    def __init__(self) -> None:
        self.nvml = ctypes.CDLL("libnvidia-ml.so.1")
        self.nvml.nvmlInit_v2()
        self.handle = ctypes.c_void_p()
        self.nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(self.handle))

    def mhz(self) -> int:
        value = ctypes.c_uint()
        self.nvml.nvmlDeviceGetClockInfo(self.handle, 1, ctypes.byref(value))  # NVML_CLOCK_SM
        return value.value


def load(fma: hb.Kernel, out: hb.DeviceArray, seconds: float) -> None:
    hb.bench(fma, 1056, 256, [out, hb.uint32(20000)], cache="warm", iterations=max(1, round(seconds / 314e-6)),
             warmup=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("."))
    parser.add_argument("--idle-s", type=float, default=30.0)
    parser.add_argument("--gaps", type=float, nargs="+", default=[0.5, 2.0, 10.0, 30.0])
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    clock = SmClock()
    device = hb.Device("cuda")
    fma = device.load_module(HERE / "kernels" / "fma.ptx").kernel("fma")
    out = device.empty(1056 * 256)
    load(fma, out, 1.0)
    ended = time.perf_counter()
    idle = []
    while time.perf_counter() - ended < args.idle_s:
        idle.append((round(time.perf_counter() - ended, 2), clock.mhz()))
        time.sleep(0.1)
    measured = []
    for gap in args.gaps:
        load(fma, out, 1.0)
        time.sleep(gap)
        before = clock.mhz()
        res = hb.bench(fma, 1056, 256, [out, hb.uint32(200)])
        c = res.clock
        measured.append({"gap_s": gap, "nvml_mhz_before": before, "median_us": res.median_us,
                         "clock_mhz": None if c is None else c.to_dict(), "throttled_samples": res.throttled_samples,
                         "warmup": res.warmup, "samples": res.samples})
    (args.out / "idle_ramp.json").write_text(json.dumps({"idle": idle, "measured": measured}, indent=2))
    lowest = min(mhz for _, mhz in idle)
    first_low = next((t for t, mhz in idle if mhz < 0.75 * 1980), None)
    print(f"idle {args.idle_s:.0f} s: lowest SM clock {lowest} MHz; first below 75 % of 1980 at "
          f"{first_low} s; samples {idle[::max(1, len(idle) // 12)]}")
    for m in measured:
        c = m["clock_mhz"] or {}
        print(f"gap {m['gap_s']} s: NVML before {m['nvml_mhz_before']} MHz; median {m['median_us']:.3f} µs, clock "
              f"{c.get('mean', 0):.0f} ({c.get('min', 0):.0f}–{c.get('max', 0):.0f}) MHz, throttled "
              f"{m['throttled_samples']}, warm-up {m['warmup']}, samples {m['samples']}")


if __name__ == "__main__":
    main()
