"""Does the clean step isolate clean-cold samples from each other?

For the copy kernel at 64 and 16 MiB per buffer (bench/fidelity.py's kernels,
grids and arguments), `--samples` clean-cold samples in one run (16 warm-up),
with the clean step reading 1.25x (the default), 2x and 3x the last-level
cache, then 1.25x again. Per run: the median, p10-p90, the histogram of
sample / median in 12 bins over [0.94, 1.06), the lag-1 autocorrelation, and
how often a slow sample (> 1.2 % above the median) follows a slow one and a
fast one. If the clean step left state behind, a larger read would change the
distribution; if slow samples come from something in time (the memory, the
clocks), the histogram stays and the correlation follows the sample period.

    python bench/clean_isolation.py [--samples 600] [--sizes 64,16] [--reads 1.25,2,3,1.25]
"""
from __future__ import annotations

import argparse

import numpy as np
from fidelity import MiB, setup  # bench/fidelity.py: the same kernels, grids and arguments

from pyhipbench._measure.options import MAX_LAUNCHES

SLOW = 1.012  # a sample this far above the median counts as slow


def describe(times_us: np.ndarray) -> dict:
    median = float(np.median(times_us))
    slow = (times_us > SLOW * median).astype(int)
    return {"median": median, "p10": float(np.quantile(times_us, 0.1)), "p90": float(np.quantile(times_us, 0.9)),
            "hist": np.histogram(times_us / median, bins=12, range=(0.94, 1.06))[0].tolist(),
            "lag1": float(np.corrcoef(times_us[:-1], times_us[1:])[0, 1]),
            "slow_after_slow": float(slow[1:][slow[:-1] == 1].mean()),
            "slow_after_fast": float(slow[1:][slow[:-1] == 0].mean())}


def numbers(text: str, kind: type) -> list:
    """Comma-separated positive numbers of `kind`, or ValueError."""
    values = [kind(part) for part in text.split(",")]
    if not values or any(v <= 0 for v in values):
        raise ValueError(text)
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=600, help="clean-cold samples per run (default 600)")
    parser.add_argument("--sizes", default="64,16", help="MiB per buffer, comma-separated (default 64,16)")
    parser.add_argument("--reads", default="1.25,2,3,1.25", help="clean reads, x LLC (default 1.25,2,3,1.25)")
    options = parser.parse_args()
    try:
        sizes, reads = numbers(options.sizes, int), numbers(options.reads, float)
    except ValueError:
        parser.error(f"--sizes {options.sizes!r} --reads {options.reads!r}: expected comma-separated numbers > 0 "
                     "(MiB per buffer, integers; reads in x LLC)")
    if not 2 <= options.samples <= MAX_LAUNCHES:
        parser.error(f"--samples {options.samples}: expected 2 (a lag-1 correlation needs two) to {MAX_LAUNCHES} "
                     "(one run holds every launch's events)")

    from pyhipbench import _core
    from pyhipbench._launch.argument_sets import ArgumentSets
    from pyhipbench._launch.launch_config import LaunchConfig
    from pyhipbench._measure.bench import make_plan
    from pyhipbench._measure.cache import CleanStep
    from pyhipbench._measure.options import BenchOptions
    from pyhipbench._measure.timers import core_timer, default_timer
    n = options.samples
    fixed_count = BenchOptions(iterations=n).stop_rule()
    print("| copy | clean read (x LLC) | median µs | p10–p90 µs | histogram of sample / median, 0.94–1.06 "
          "| lag-1 | P(slow after slow) | P(slow after fast) |")
    print("|---|---|---|---|---|---|---|---|")
    for mib in sizes:
        device, kernel, grid, block, args, arrays = setup({"name": "copy", "kernel": "copy", "bytes": mib * MiB})
        config = LaunchConfig.checked(grid, block, 0, device.properties)
        timer = core_timer(device, default_timer(device))
        with ArgumentSets(device, [(kernel.params, args)], 1) as sets:
            for read in reads:
                clean = CleanStep(device, int(read * device.properties.llc_bytes))
                plan = make_plan([(kernel, config)], sets)
                clean.attach(plan)
                taken = _core.measure(timer, plan, fixed_count, 16)
                clean.free()
                d = describe(np.asarray(taken.times_us))
                print(f"| {mib} MiB | {read:g} | {d['median']:.3f} | {d['p10']:.2f}–{d['p90']:.2f} | "
                      f"{' '.join(map(str, d['hist']))} | {d['lag1']:+.2f} | {d['slow_after_slow']:.2f} | "
                      f"{d['slow_after_fast']:.2f} |", flush=True)
        for a in arrays:
            a.free()


if __name__ == "__main__":
    main()
