"""Self-check of the cupti timer on an NVIDIA GPU: its medians beside torch.profiler's.

For the copy kernel (pyhipbench/kernels/copy.ptx; grid = 8 x SMs, 256 threads,
warm: one argument set) at each size per buffer, prints

  cupti     the cupti timer's median kernel µs (p10-p90), and its host µs per launch
  events    the events timer's median µs and host µs per launch, for scale (and its
            host cost before CUPTI was first used in the process)
  torch     torch.profiler's median for the same kernel, config and launch count,
            read from its trace (CUPTI through kineto) in a separate process
  ratio     cupti / torch, and whether it is within ±2 % or ±0.1 µs (the larger)
  run cost  wall µs of one whole run() of 1 and of 101 launches, cupti and events: the
            fixed cost a run pays (CUPTI's set-up and flush) beside its cost per launch

torch.profiler runs in a child process: CUPTI takes one client per process,
and torch loads its own libcupti. Without torch the torch column is skipped,
with a message. The cupti timer loads libcupti from $PYHIPBENCH_CUPTI_LIBRARY,
else by name, else under $CUDA_HOME or /usr/local/cuda.

    python bench/cupti_check.py --sizes-mb 1 4 16 64 --iterations 200 --out cupti_check.json
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path

import numpy as np

import pyhipbench as hb
from pyhipbench import _core
from pyhipbench._launch.argument_sets import ArgumentSets
from pyhipbench._launch.launch_config import LaunchConfig
from pyhipbench._measure.bench import make_plan
from pyhipbench._measure.timers import core_timer

WARMUP = 20


class CopyRuns:
    """Launches of copy at `size_mb` per buffer, warm (one argument set), timed by a given timer."""

    def __init__(self, device: hb.Device, size_mb: float) -> None:
        copy = device.load_module(resources.files("pyhipbench") / "kernels" / "copy.ptx").kernel("copy")
        n = int(size_mb * (1 << 20)) // 4
        src = device.array(np.ones(n, np.float32))
        dst = device.empty_like(src)
        config = LaunchConfig.checked(device.properties.compute_units * 8, 256, 0, device.properties)
        self.sets = ArgumentSets(device, [(copy.params, [src, dst, hb.int64(n)])], 1)
        self.plan = make_plan([(copy, config)], self.sets)

    def times(self, timer, launches: int) -> tuple[np.ndarray, float]:
        """(µs per kernel, host µs per launch) of `launches` launches, after WARMUP untimed ones."""
        timer.run(self.plan, WARMUP, 0)
        times, _, host_us = timer.run(self.plan, launches, 0)
        return np.asarray(times), host_us / launches

    def run_wall_us(self, timer, launches: int, repeats: int = 20) -> float:
        """Median wall µs of one whole `run` of `launches` launches: set-up, launches, wait, read-out."""
        walls = []
        for _ in range(repeats):
            start = time.perf_counter()
            timer.run(self.plan, launches, 0)
            walls.append((time.perf_counter() - start) * 1e6)
        return float(np.median(walls))

    def close(self) -> None:
        self.sets.free()


def torch_child(sizes_mb: list[float], iterations: int) -> None:
    """In the child: each size's copy launches under torch.profiler; prints {size: [µs per kernel]} as JSON."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.init()
    device = hb.Device("cuda")
    durations = {}
    for size in sizes_mb:
        runs = CopyRuns(device, size)
        runs.times(core_timer(device, "events"), iterations)  # load, JIT and warm outside the trace
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            runs.times(core_timer(device, "events"), iterations)
            torch.cuda.synchronize()
        with tempfile.TemporaryDirectory() as tmp:
            trace = Path(tmp) / "trace.json"
            prof.export_chrome_trace(str(trace))
            events = json.loads(trace.read_text())["traceEvents"]
        kernels = [e["dur"] for e in events if e.get("cat") == "kernel" and e.get("name") == "copy"]
        if len(kernels) < iterations:
            raise SystemExit(f"torch.profiler traced {len(kernels)} copy kernels at {size} MB, expected "
                             f">= {iterations}")
        durations[str(size)] = kernels[-iterations:]  # the timed launches follow the warm-up ones
        runs.close()
    print(json.dumps(durations))


def torch_durations(sizes_mb: list[float], iterations: int) -> dict[str, list[float]] | str:
    """torch.profiler's kernel µs per size from a child process, or why there are none."""
    if importlib.util.find_spec("torch") is None:  # not imported here: torch brings its own libcupti
        return "torch is not importable here: no independent reading (pip install torch to get one)"
    command = [sys.executable, __file__, "--torch-child", "--iterations", str(iterations),
               "--sizes-mb", *map(str, sizes_mb)]
    child = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ))
    if child.returncode != 0:
        return f"the torch.profiler child failed ({child.returncode}):\n{child.stderr[-2000:]}"
    return json.loads(child.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes-mb", type=float, nargs="+", default=[1, 4, 16, 64])
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--torch-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.torch_child:
        torch_child(args.sizes_mb, args.iterations)
        return

    device = hb.Device("cuda")
    # The events timer's host cost before CUPTI is first attached to the process, to see whether
    # CUPTI left attached (disabled, unsubscribed) still costs later launches anything.
    runs = CopyRuns(device, args.sizes_mb[0])
    _, events_host_before_cupti = runs.times(core_timer(device, "events"), args.iterations)
    runs.close()
    cupti = _core.make_timer("cupti", device.driver, device.backend.context)
    rows = []
    for size in args.sizes_mb:
        runs = CopyRuns(device, size)
        cupti_us, cupti_host = runs.times(cupti, args.iterations)
        events_us, events_host = runs.times(core_timer(device, "events"), args.iterations)
        if size == args.sizes_mb[0]:
            # A run's fixed cost (CUPTI: callbacks, subscription, enable, flush, disable) beside its
            # cost per launch: what chunked adaptive stopping pays per chunk.
            run_wall_us = {name: {launches: runs.run_wall_us(timer, launches) for launches in (1, 101)}
                           for name, timer in (("cupti", cupti), ("events", core_timer(device, "events")))}
        runs.close()
        rows.append({"size_mb": size, "cupti_median_us": float(np.median(cupti_us)),
                     "cupti_p10_us": float(np.percentile(cupti_us, 10)),
                     "cupti_p90_us": float(np.percentile(cupti_us, 90)),
                     "cupti_host_us_per_launch": cupti_host,
                     "events_median_us": float(np.median(events_us)), "events_host_us_per_launch": events_host})

    torch = torch_durations(args.sizes_mb, args.iterations)
    print(f"{device.name}: copy kernel, warm, {args.iterations} launches per size, medians in µs")
    print(f"  {'MB':>6} {'cupti (p10-p90)':>22} {'host/launch':>11} {'events':>8} {'host/launch':>11} "
          f"{'torch':>8} {'cupti/torch':>11} {'within':>6}")
    for row in rows:
        line = (f"  {row['size_mb']:>6g} {row['cupti_median_us']:>8.3f} ({row['cupti_p10_us']:.3f}-"
                f"{row['cupti_p90_us']:.3f}) {row['cupti_host_us_per_launch']:>11.2f} "
                f"{row['events_median_us']:>8.3f} {row['events_host_us_per_launch']:>11.2f}")
        if isinstance(torch, dict):
            reference = float(np.median(torch[str(row["size_mb"])]))
            tolerance = max(0.02 * reference, 0.1)
            row.update(torch_median_us=reference, ratio=row["cupti_median_us"] / reference,
                       within_target=abs(row["cupti_median_us"] - reference) <= tolerance)
            line += f" {reference:>8.3f} {row['ratio']:>11.4f} {'yes' if row['within_target'] else 'NO':>6}"
        print(line)
    if not isinstance(torch, dict):
        print(f"  torch column skipped: {torch}")
    for name, walls in run_wall_us.items():
        print(f"  {name}: one run() of 1 launch {walls[1]:.1f} µs wall, of 101 launches {walls[101]:.1f} µs: "
              f"fixed {walls[1] - (walls[101] - walls[1]) / 100:.1f} µs + {(walls[101] - walls[1]) / 100:.2f} µs "
              f"per launch")
    print(f"  events host µs per launch at {args.sizes_mb[0]:g} MB before CUPTI was first used: "
          f"{events_host_before_cupti:.2f} (after: {rows[0]['events_host_us_per_launch']:.2f})")
    print("  target: |cupti - torch| <= max(2 %, 0.1 µs)")
    if args.out:
        args.out.write_text(json.dumps({"device": device.name, "iterations": args.iterations, "rows": rows,
                                        "events_host_us_per_launch_before_cupti": events_host_before_cupti,
                                        "run_wall_us": run_wall_us,
                                        "torch": torch if isinstance(torch, str) else "read"}, indent=2))


if __name__ == "__main__":
    main()
