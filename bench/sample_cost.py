"""What one clean-cold sample costs in wall time, beside the GPU time it is made of.

For the copy kernel at 4 and 64 MiB per buffer and the empty kernel
(bench/fidelity.py's kernels, grids and arguments), with the default timer:

  kernel      the kernel's clean-cold median, µs
  clean step  the clean step's own median (its kernel timed warm on its buffer), µs
  per sample  the wall time a clean-cold sample adds: (wall of bench() with
              288 fixed samples - wall with 32) / 256, each the median of 7 calls, µs
  gaps        per sample - kernel - clean step: the launch gaps between the
              two kernels, and the write-back of the kernel's dirty output,
              which lands in the next clean step
  warm        the same per-sample wall time in the warm state (no clean step), µs
  fixed       the wall of a 32-sample bench() call less its samples, ms

    python bench/sample_cost.py
"""
from __future__ import annotations

import statistics
import time

from fidelity import MiB, setup  # bench/fidelity.py: the same kernels, grids and arguments

from pyhipbench._measure.cache import clean_step

CASES = ({"name": "copy 4 MiB", "kernel": "copy", "bytes": 4 * MiB},
         {"name": "copy 64 MiB", "kernel": "copy", "bytes": 64 * MiB},
         {"name": "empty", "kernel": "empty"})
FEW, MANY, CALLS = 32, 288, 7


def wall_ms(call) -> float:
    """Median wall time of `call()` over CALLS calls, ms."""
    times = []
    for _ in range(CALLS):
        start = time.perf_counter()
        call()
        times.append(1e3 * (time.perf_counter() - start))
    return statistics.median(times)


def main() -> None:
    import pyhipbench as hb
    print("| case | kernel µs | clean step µs | per sample µs | gaps µs | warm per sample µs | fixed ms |")
    print("|---|---|---|---|---|---|---|")
    for case in CASES:
        device, kernel, grid, block, args, arrays = setup(case)
        step = clean_step(device)
        clean_args = [step.buffer, hb.uint64(step.buffer.nbytes // 4), step.sink]
        clean_us = hb.bench(step.kernel, step.grid, 256, clean_args, cache="warm", iterations=64).median_us
        kernel_us = hb.bench(kernel, grid, block, args, cache="clean-cold", iterations=64).median_us

        def per_sample_us(cache: str) -> tuple[float, float]:
            few, many = (wall_ms(lambda n=n: hb.bench(kernel, grid, block, args, cache=cache, iterations=n,
                                                       warmup=0)) for n in (FEW, MANY))
            slope_us = 1e3 * (many - few) / (MANY - FEW)
            return slope_us, few - FEW * slope_us / 1e3
        cold_us, fixed_ms = per_sample_us("clean-cold")
        warm_us, _ = per_sample_us("warm")
        print(f"| {case['name']} | {kernel_us:.3f} | {clean_us:.2f} | {cold_us:.2f} | "
              f"{cold_us - kernel_us - clean_us:.2f} | {warm_us:.2f} | {fixed_ms:.3f} |", flush=True)
        for a in arrays:
            a.free()


if __name__ == "__main__":
    main()
