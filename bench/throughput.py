"""Throughput: wall time per candidate with bench()'s defaults, and the clean step's read size.

1. For the copy kernel at 1, 4, 16 and 64 MiB per buffer and the empty kernel:
   the wall time of one `bench()` call with its defaults (clean-cold, the
   default timer, adaptive stopping to a ±1 % median CI; argument checks,
   plan and clean step included, the module already loaded), median over
   `--candidates` calls, with the samples, warm-up, stop reasons and CI it
   reached; then the same in each other cache state of `--caches`; beside
   them, in the same run, the wall time of one `triton.testing.do_bench`
   with its defaults on the same kernel (bench/fidelity.py's reading; skipped
   without torch, triton and CuPy) and the ratio. The target: <= 5 ms per
   candidate for kernels up to 50 µs, >= 20x less than do_bench.
2. The clean step's read size: clean-cold medians of the copy kernels with
   the clean step reading 1x, 1.25x (the default), 1.5x and 2x the
   last-level cache (`CleanStep(device, read_bytes)`), each measured
   `--repeats` times by the core's `measure` with the default stopping rule.
   The smallest read whose median matches 2x's (within both CIs) is the
   cheapest honest clean step; its wall time per measurement is printed too.

    python bench/throughput.py [--candidates 20] [--repeats 5] [--caches auto,warm] [--out DIR]

Prints two markdown tables; with --out writes throughput.json there.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from fidelity import MiB, run_do_bench, setup  # bench/fidelity.py: the same kernels, grids and arguments

from pyhipbench._measure.cache import CACHE_STATES

COPY_MIB = (1, 4, 16, 64)
CLEAN_READ_PER_LLC = (1.0, 1.25, 1.5, 2.0)


def cases() -> list[dict]:
    return [{"name": f"copy {s} MiB", "kernel": "copy", "bytes": s * MiB} for s in COPY_MIB] + \
           [{"name": "empty", "kernel": "empty"}]


def per_candidate(case: dict, candidates: int, cache: str) -> dict:
    """bench() with its defaults but `cache`, `candidates` times: the median wall ms and what the runs reached."""
    import pyhipbench as hb
    device, kernel, grid, block, args, arrays = setup(case)
    hb.bench(kernel, grid, block, args, cache=cache)  # first use: event pools, libcupti, the clean step's buffer
    walls, results = [], []
    for _ in range(candidates):
        start = time.perf_counter()
        results.append(hb.bench(kernel, grid, block, args, cache=cache))
        walls.append(time.perf_counter() - start)
    for a in arrays:
        a.free()
    last = results[-1]
    return {"case": case["name"], "timer": last.timer, "cache": last.cache_state,
            "wall_ms": 1e3 * float(np.median(walls)), "wall_ms_max": 1e3 * float(np.max(walls)),
            "median_us": float(np.median([r.median_us for r in results])),
            "rel_ci": float(np.median([r.stats.rel_ci for r in results])),
            "samples": int(np.median([r.samples for r in results])),
            "warmup": int(np.median([r.warmup for r in results])),
            "stop_reasons": sorted({r.stop_reason for r in results})}


def clean_read_sweep(case: dict, repeats: int) -> list[dict]:
    """Clean-cold medians of `case` with the clean step reading each of CLEAN_READ_PER_LLC x the LLC."""
    from pyhipbench import _core
    from pyhipbench._launch.argument_sets import ArgumentSets
    from pyhipbench._launch.launch_config import LaunchConfig
    from pyhipbench._measure.bench import make_plan
    from pyhipbench._measure.cache import CleanStep
    from pyhipbench._measure.stats import summarize
    from pyhipbench._measure.timers import core_timer, default_timer
    device, kernel, grid, block, args, arrays = setup(case)
    config = LaunchConfig.checked(grid, block, 0, device.properties)
    timer = core_timer(device, default_timer(device))
    llc = device.properties.llc_bytes
    rows = []
    with ArgumentSets(device, [(kernel.params, args)], 1) as sets:
        for factor in CLEAN_READ_PER_LLC:
            clean = CleanStep(device, int(factor * llc))
            plan = make_plan([(kernel, config)], sets)
            clean.attach(plan)
            _core.measure(timer, plan, _core.StopRule())  # the clean kernel's first launch, clocks up
            medians, lows, highs, walls = [], [], [], []
            for _ in range(repeats):
                start = time.perf_counter()
                taken = _core.measure(timer, plan, _core.StopRule())
                walls.append(time.perf_counter() - start)
                s = summarize(taken.times_us)
                medians.append(s.median), lows.append(s.ci_low), highs.append(s.ci_high)
            clean.free()
            rows.append({"case": case["name"], "timer": timer.name, "clean_read_per_llc": factor,
                         "clean_read_bytes": clean.nbytes, "median_us": float(np.median(medians)),
                         "ci_us": [float(np.median(lows)), float(np.median(highs))],
                         "medians_us": medians, "wall_ms": 1e3 * float(np.median(walls))})
    for a in arrays:
        a.free()
    return rows


def do_bench_wall_ms(case: dict) -> float | None:
    """Wall ms of one triton.testing.do_bench with its defaults on `case`; None without torch, triton, CuPy."""
    try:
        return 1e3 * run_do_bench(case)[0]["wall_s"]
    except ImportError as e:
        print(f"do_bench skipped: {e}")
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=20, help="bench() calls per case (default 20)")
    parser.add_argument("--repeats", type=int, default=5, help="measurements per clean read size (default 5)")
    parser.add_argument("--caches", default="auto,warm",
                        help="cache states to measure, comma-separated (default auto,warm; auto is clean-cold)")
    parser.add_argument("--out", type=Path, help="folder for throughput.json")
    options = parser.parse_args()
    if options.candidates < 1 or options.repeats < 1:
        parser.error(f"--candidates {options.candidates} --repeats {options.repeats}: expected counts >= 1")
    caches = options.caches.split(",")
    if any(c not in CACHE_STATES + ("auto",) for c in caches) or len(set(caches)) != len(caches):
        parser.error(f"--caches {options.caches!r}: expected cache states among auto, {', '.join(CACHE_STATES)}, "
                     "comma-separated, each once")

    throughput = []
    for case in cases():
        do_bench_ms = do_bench_wall_ms(case)
        for cache in caches:
            throughput.append(dict(per_candidate(case, options.candidates, cache), do_bench_wall_ms=do_bench_ms))
    print("| case | timer | cache | wall ms / candidate (max) | median µs | ±CI | samples | warm-up | stopped "
          "| do_bench wall ms | do_bench / pyhipbench |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in throughput:
        theirs = r["do_bench_wall_ms"]
        versus = f"{theirs:.1f} | {theirs / r['wall_ms']:.1f}x" if theirs else "n/a | n/a"
        print(f"| {r['case']} | {r['timer']} | {r['cache']} | {r['wall_ms']:.2f} ({r['wall_ms_max']:.2f}) | "
              f"{r['median_us']:.3f} | ±{100 * r['rel_ci']:.2f} % | {r['samples']} | {r['warmup']} | "
              f"{', '.join(r['stop_reasons'])} | {versus} |", flush=True)

    sweep = [row for case in cases() if case["kernel"] == "copy" for row in clean_read_sweep(case, options.repeats)]
    print("\n| case | clean read (x LLC) | bytes | clean-cold median µs | CI µs | wall ms / measurement |")
    print("|---|---|---|---|---|---|")
    for r in sweep:
        print(f"| {r['case']} | {r['clean_read_per_llc']:g} | {r['clean_read_bytes']} | {r['median_us']:.3f} | "
              f"{r['ci_us'][0]:.3f}–{r['ci_us'][1]:.3f} | {r['wall_ms']:.2f} |", flush=True)
    if options.out:
        options.out.mkdir(parents=True, exist_ok=True)
        (options.out / "throughput.json").write_text(json.dumps({"throughput": throughput, "clean_read": sweep},
                                                                indent=1))


if __name__ == "__main__":
    main()
