"""How many rotated sets does a small argument set need to be cold? Measured, not assumed.

For copy kernels whose set (source + destination) is far below the last-level
cache, the rotation rule asks for 2·⌈LLC / set⌉ sets (thousands for a few KB).
This times the copy with R = 1, 2, 4, … up to the rule's R and reports the
kernel's own duration (CUPTI through torch.profiler, independent of
pyhipbench's timers) beside pyhipbench's event time, so the smallest R that
reads like the full rotation can be chosen as the cap.

    python bench/rotation_cap.py [--sizes 4K,64K,1M,4M] [--iterations 400] [--out cap.json]

Needs an NVIDIA GPU and torch (for the profiler).
"""
from __future__ import annotations

import argparse
import json
from importlib import resources

import numpy as np

import pyhipbench as hb
from pyhipbench._device.archs import MiB

KERNELS = resources.files("pyhipbench") / "kernels"


def kernel_durations_us(run, name: str) -> np.ndarray:
    """Durations (µs) of every kernel called `name` launched by `run()`, from CUPTI via torch.profiler."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        run()
        torch.cuda.synchronize()
    return np.array([e.time_range.elapsed_us() for e in prof.events()
                     if e.name == name and e.device_type == torch.autograd.DeviceType.CUDA])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4K,64K,1M,4M", help="bytes per buffer")
    parser.add_argument("--iterations", type=int, default=400)
    parser.add_argument("--out")
    options = parser.parse_args()
    import torch
    torch.cuda.init()
    device = hb.Device("cuda")
    copy = device.load_module(KERNELS / "copy.ptx").kernel("copy")
    llc = device.properties.llc_bytes
    rows = []
    print(f"{device.name}: last-level cache {llc / MiB:.0f} MiB; medians in µs over "
          f"{options.iterations} launches")
    print(f"{'buffer':>8} {'sets':>6} {'sets x set':>11} {'kernel (CUPTI)':>15} {'events':>8}")
    for text in options.sizes.split(","):
        size = int(float(text[:-1]) * {"K": 1 << 10, "M": 1 << 20}[text[-1]]) if text[-1] in "KM" \
            else int(text)
        n = size // 4
        src = device.array(np.arange(n, dtype=np.float32))
        dst = device.empty_like(src)
        full = 2 * -(-llc // (2 * size))
        counts = sorted({1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, full})
        grid = max(1, min(-(-n // 256), device.properties.compute_units * 8))
        for sets in [c for c in counts if c <= full]:
            iterations = max(options.iterations, sets)
            result = {}

            def run():
                result["r"] = hb.bench(copy, grid, 256, [src, dst, hb.int64(n)], iterations=iterations,
                                       warmup=max(10, sets), rotate=sets)
            durations = kernel_durations_us(run, "copy")[-iterations:]
            r = result["r"]
            row = {"buffer_bytes": size, "sets": sets, "span_bytes": sets * 2 * size,
                   "kernel_median_us": float(np.median(durations)), "events_median_us": r.median_us}
            rows.append(row)
            print(f"{size:>8} {sets:>6} {sets * 2 * size / MiB:>9.1f}Mi {row['kernel_median_us']:>15.3f} "
                  f"{r.median_us:>8.2f}")
        src.free()
        dst.free()
    if options.out:
        with open(options.out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
