"""The fidelity study: every timer x cache state beside independent readings, on one GPU, in one run.

For each case (the copy kernel at 1 MiB .. 1 GiB per buffer, a compute-bound
FMA chain, an empty kernel) it prints the median kernel time (µs) of:

  pyhipbench   each timer (events, cupti, batched, graph) x cache state
               (warm, dirty-cold, clean-cold), fixed iterations
  profiler     an independent CUPTI reading: torch.profiler's kernel records
               of the same launches (pyhipbench's events timer), per cache state
  ncu          Nsight Compute's gpu__time_duration, --cache-control none
               (warm and dirty-cold launches) and all (flushed: clean), with
               --clock-control none so clocks are left as they run
  do_bench     triton.testing.do_bench with its defaults on the same PTX
               launched through CuPy (its own L2 flush: a 256 MB memset)

and then the throughput: wall time per candidate for pyhipbench's defaults
(adaptive stopping to a ±1 % median CI, argument copies included) against
do_bench's defaults.

Each reading runs in its own process (CUPTI allows one subscriber; ncu
profiles a child). Writes fidelity.json and fidelity.md to --out.

    python bench/fidelity.py --out DIR [--quick] [--readings pyhipbench,profiler,do_bench,throughput,ncu]
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
MiB = 1 << 20
TIMERS = ("events", "cupti", "batched", "graph")
CACHES = ("warm", "dirty-cold", "clean-cold")
PER_KERNEL_ONLY = ("events", "cupti")  # clean-cold needs a timer that leaves the clean step out


def cases(quick: bool) -> list[dict]:
    sizes = [1, 4, 16, 64] if quick else [1, 4, 16, 64, 256, 1024]
    out = [{"name": f"copy {s} MiB", "kernel": "copy", "bytes": s * MiB} for s in sizes]
    out.append({"name": "fma 20k", "kernel": "fma", "fma_iterations": 20000})
    out.append({"name": "empty", "kernel": "empty"})
    return out


# ---- what each process runs ------------------------------------------------------------

def setup(case: dict):
    """(device, kernel, grid, block, args, free) for a case, in this process."""
    import pyhipbench as hb
    device = hb.Device("cuda")
    kernels = resources.files("pyhipbench") / "kernels"
    sms = device.properties.compute_units
    if case["kernel"] == "copy":
        n = case["bytes"] // 4
        kernel = device.load_module(kernels / "copy.ptx").kernel("copy")
        src = device.array(np.ones(n, np.float32))
        dst = device.empty_like(src)
        return device, kernel, min(-(-n // 256), sms * 8), 256, [src, dst, hb.int64(n)], [src, dst]
    if case["kernel"] == "fma":
        kernel = device.load_module(HERE / "kernels" / "fma.ptx").kernel("fma")
        out = device.empty(sms * 4 * 256, np.float32)
        return device, kernel, sms * 4, 256, [out, hb.uint32(case["fma_iterations"])], [out]
    kernel = device.load_module(kernels / "empty.ptx").kernel("empty")
    return device, kernel, 1, 1, [], []


def run_pyhipbench(case: dict, iterations: int) -> list[dict]:
    import pyhipbench as hb
    device, kernel, grid, block, args, arrays = setup(case)
    rows = []
    for timer in TIMERS:
        for cache in CACHES:
            if cache == "clean-cold" and timer not in PER_KERNEL_ONLY:
                continue
            start = time.perf_counter()
            try:
                r = hb.bench(kernel, grid, block, args, timer=timer, cache=cache, iterations=iterations)
            except hb.Error as e:
                rows.append({"case": case["name"], "reading": f"pyhipbench {timer}", "cache": cache,
                             "error": str(e)})
                continue
            rows.append({"case": case["name"], "reading": f"pyhipbench {timer}", "cache": cache,
                         "median_us": r.median_us, "ci_us": [r.stats.ci_low, r.stats.ci_high],
                         "p10_us": r.stats.p10, "p90_us": r.stats.p90, "sets": r.rotation.sets,
                         "host_us_per_kernel": r.host_us_per_kernel, "wall_s": time.perf_counter() - start})
    for a in arrays:
        a.free()
    return rows


def run_profiler(case: dict, iterations: int) -> list[dict]:
    """Kernel durations of pyhipbench's events-timer launches, read by torch.profiler (CUPTI)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    import pyhipbench as hb
    torch.cuda.init()
    device, kernel, grid, block, args, arrays = setup(case)
    rows = []
    for cache in CACHES:
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            hb.bench(kernel, grid, block, args, timer="events", cache=cache, iterations=iterations)
            torch.cuda.synchronize()
        times = [e.time_range.elapsed_us() for e in prof.events()
                 if e.name == kernel.name and e.device_type == torch.autograd.DeviceType.CUDA]
        times = np.array(times[-iterations:])  # the timed launches, after warm-up
        rows.append({"case": case["name"], "reading": "profiler (CUPTI)", "cache": cache,
                     "median_us": float(np.median(times)), "p10_us": float(np.percentile(times, 10)),
                     "p90_us": float(np.percentile(times, 90)), "launches": len(times)})
    return rows


def run_ncu_target(case: dict, launches: int) -> None:
    """What ncu profiles: `launches` warm launches, then `launches` dirty-cold ones."""
    import pyhipbench as hb
    device, kernel, grid, block, args, arrays = setup(case)
    for cache in ("warm", "dirty-cold"):
        hb.bench(kernel, grid, block, args, timer="events", cache=cache, iterations=launches, warmup=0)


def run_do_bench(case: dict) -> list[dict]:
    """do_bench with its defaults on the same PTX, launched through CuPy; its wall time too."""
    import cupy
    import torch
    import triton.testing
    torch.cuda.init()
    kernels = resources.files("pyhipbench") / "kernels"
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    if case["kernel"] == "copy":
        n = case["bytes"] // 4
        fn = cupy.RawModule(path=str(kernels / "copy.ptx")).get_function("copy")
        src, dst = cupy.ones(n, cupy.float32), cupy.empty(n, cupy.float32)
        launch = lambda: fn((min(-(-n // 256), sms * 8),), (256,), (src, dst, np.int64(n)))  # noqa: E731
    elif case["kernel"] == "fma":
        fn = cupy.RawModule(path=str(HERE / "kernels" / "fma.ptx")).get_function("fma")
        out = cupy.empty(sms * 4 * 256, cupy.float32)
        launch = lambda: fn((sms * 4,), (256,), (out, np.uint32(case["fma_iterations"])))  # noqa: E731
    else:
        fn = cupy.RawModule(path=str(kernels / "empty.ptx")).get_function("empty")
        launch = lambda: fn((1,), (1,), ())  # noqa: E731
    launch()
    cupy.cuda.Device().synchronize()
    # do_bench sizes its runs from a first estimate that, on its first call in a process, includes one-time
    # costs and so runs too few iterations (~25 ms instead of the ~125 ms its 25 + 100 ms defaults take):
    # the call timed is a second one, as every call but the first of a tuning run is.
    triton.testing.do_bench(launch, return_mode="median")
    start = time.perf_counter()
    median = triton.testing.do_bench(launch, return_mode="median")
    wall = time.perf_counter() - start
    return [{"case": case["name"], "reading": "do_bench", "cache": "memset-flushed",
             "median_us": median * 1e3, "wall_s": wall}]


def run_throughput(case: dict, candidates: int) -> list[dict]:
    """Wall time per candidate with pyhipbench's defaults (setup included: argument copies)."""
    import pyhipbench as hb
    device, kernel, grid, block, args, arrays = setup(case)
    hb.bench(kernel, grid, block, args)  # first use: module load, event pools, libcupti
    walls, results = [], []
    for _ in range(candidates):
        start = time.perf_counter()
        r = hb.bench(kernel, grid, block, args)
        walls.append(time.perf_counter() - start)
        results.append(r)
    last = results[-1]
    return [{"case": case["name"], "reading": "pyhipbench defaults", "cache": last.cache_state,
             "timer": last.timer, "median_us": float(np.median([r.median_us for r in results])),
             "rel_ci": float(np.median([r.stats.rel_ci for r in results])),
             "samples": int(np.median([r.stats.count for r in results])),
             "stop_reasons": sorted({r.stop_reason for r in results}),
             "wall_s": float(np.median(walls))}]


READINGS = ("pyhipbench", "profiler", "do_bench", "throughput", "ncu")


def reading_names(text: str) -> list[str]:
    """--readings: names from READINGS, comma-separated."""
    names = [name.strip() for name in text.split(",")]
    unknown = [name for name in names if name not in READINGS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"{text!r}: expected names from {', '.join(READINGS)}, comma-separated")
    return names


WORKERS = {"pyhipbench": run_pyhipbench, "profiler": run_profiler, "do_bench": run_do_bench,
           "throughput": run_throughput}


# ---- the driver --------------------------------------------------------------------------

def in_child(kind: str, case: dict, *extra: str, wrapper: list[str] | None = None) -> list[dict]:
    command = (wrapper or []) + [sys.executable, str(Path(__file__).resolve()), "--worker", kind,
                                 "--case", json.dumps(case), *extra]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    if wrapper:
        return done  # ncu: the caller parses its CSV
    if done.returncode != 0:
        return [{"case": case["name"], "reading": kind, "error": done.stderr.strip()[-2000:]}]
    return json.loads(done.stdout.strip().splitlines()[-1])


def ncu_rows(case: dict, launches: int) -> list[dict]:
    rows = []
    ncu = shutil.which("ncu")
    if not ncu:
        return [{"case": case["name"], "reading": "ncu", "error": "ncu is not on PATH"}]
    kernel = case["kernel"]
    for control in ("none", "all"):
        done = in_child("ncu-target", case, "--launches", str(launches), wrapper=[
            ncu, "--metrics", "gpu__time_duration.sum", "--cache-control", control,
            "--clock-control", "none", "--csv", "--print-units", "base", "-k", f"regex:^{kernel}$"])
        values = []
        for line in done.stdout.splitlines():
            cells = [c.strip('"') for c in line.split('","')]
            if len(cells) > 3 and cells[-3] == "gpu__time_duration.sum":
                values.append(float(cells[-1].replace(",", "")) / 1e3)  # ns -> µs
        if len(values) < 2 * launches:
            rows.append({"case": case["name"], "reading": f"ncu cache-control {control}",
                         "error": (done.stderr or done.stdout).strip()[-1500:]})
            continue
        halves = {"warm": values[:launches], "dirty-cold": values[launches:2 * launches]}
        for cache, v in halves.items():
            rows.append({"case": case["name"], "reading": f"ncu cache-control {control}",
                         "cache": cache if control == "none" else f"flushed ({cache} launches)",
                         "median_us": float(np.median(v)), "launches": len(v)})
    return rows


def table(rows: list[dict]) -> str:
    lines = ["| case | reading | cache | median µs | p10–p90 / CI | host µs/kernel | wall s | note |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        spread = (f"{r['p10_us']:.2f}–{r['p90_us']:.2f}" if "p10_us" in r else
                  f"±{100 * r['rel_ci']:.2f} %" if "rel_ci" in r else "")
        note = r.get("error", "").splitlines()[-1][:120] if "error" in r else \
            ", ".join(f"{k}={r[k]}" for k in ("sets", "timer", "samples", "stop_reasons") if k in r)
        lines.append(f"| {r['case']} | {r['reading']} | {r.get('cache', '')} | "
                     f"{r['median_us']:.3f} | {spread} | "
                     f"{r.get('host_us_per_kernel', float('nan')):.2f} | {r.get('wall_s', float('nan')):.4f} | "
                     f"{note} |" if "median_us" in r else
                     f"| {r['case']} | {r['reading']} | {r.get('cache', '')} | | | | | {note} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("."))
    parser.add_argument("--quick", action="store_true", help="copy up to 64 MiB only")
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--worker", choices=sorted(WORKERS) + ["ncu-target"])
    parser.add_argument("--case")
    parser.add_argument("--launches", type=int, default=20)
    parser.add_argument("--readings", type=reading_names, default=",".join(READINGS),
                        help=f"which readings to take, comma-separated, of {', '.join(READINGS)} (default: all)")
    options = parser.parse_args()
    if options.worker:
        case = json.loads(options.case)
        if options.worker == "ncu-target":
            run_ncu_target(case, options.launches)
            return
        arg = {"pyhipbench": options.iterations, "profiler": options.iterations,
               "throughput": 20}.get(options.worker)
        rows = WORKERS[options.worker](case, arg) if arg is not None else WORKERS[options.worker](case)
        print(json.dumps(rows))
        return
    options.out.mkdir(parents=True, exist_ok=True)
    rows = []
    readings = options.readings
    for case in cases(options.quick):
        for kind in ("pyhipbench", "profiler", "do_bench", "throughput"):
            if kind not in readings or kind == "throughput" and case.get("bytes", 0) > 64 * MiB:
                continue  # the throughput target is for kernels up to 50 µs
            rows += in_child(kind, case, "--iterations", str(options.iterations))
        if "ncu" in readings:
            rows += ncu_rows(case, options.launches)
        print(table([r for r in rows if r["case"] == case["name"]]).split("\n", 2)[-1], flush=True)
    (options.out / "fidelity.json").write_text(json.dumps(rows, indent=1))
    (options.out / "fidelity.md").write_text(table(rows) + "\n")


if __name__ == "__main__":
    main()
