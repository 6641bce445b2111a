"""A sweep's host work per candidate, on the CPU: many fast candidates on the fake HIP runtime.

    python bench/sweep_host_overhead.py [--candidates 500] [--gpus 2] [--profile DIR]

The fake runtime (tests/fakes/) launches nothing, so a candidate's measurement
costs only bench()'s own host work and the sweep's rate (candidates per second)
is what the scheduler, the IPC, the SQLite commit and the worker's Python
allow. Each candidate is the same tiny LLVM IR copy kernel (compiled once, by
ld.lld for gfx942) on a different grid, measured for a fixed count of launches
(--iterations). Then it replaces a worker --replacements times, with and
without the standby process, and times each until the new one is ready.
`--profile DIR` writes cProfile statistics of the scheduler
process (scheduler.prof, the whole sweep) and of a worker's own loop
(worker.prof: Worker.run on the same tasks in this process, no IPC), and prints
the top entries of each by cumulative time.
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the fakes and the sweep tests' kernels

from fakes.build import HIP_LIBRARY_NAME, build_fake  # noqa: E402
from sweep_helpers import ARGS, IR, sweep_environment  # noqa: E402


def space(count: int, iterations: int) -> list:
    from pyhipbench import BenchOptions, Candidate, IRSource
    source, options = IRSource(IR.encode()), BenchOptions(cache="warm", iterations=iterations)
    return [Candidate(source, "copy", g + 1, 64, ARGS, bench=options, tags={"g": g}) for g in range(count)]


def profile_worker(candidates: list, out: Path) -> None:
    """cProfile of Worker.run over `candidates` on fake device 0, in this process."""
    from pyhipbench import CompileTarget
    from pyhipbench._sweep.worker import Task, Worker
    worker = Worker.open("hip", 0)
    code = candidates[0].source.compile(CompileTarget(worker.device.arch))
    tasks = [Task(c.id, c.kernel, c.grid, c.block, c.args, c.shared_bytes, c.bench, c.source.digest,
                  code.data) for c in candidates]
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    for task in tasks:
        worker.run(task)
    profiler.disable()
    elapsed = time.perf_counter() - started
    print(f"worker alone: {len(tasks)} tasks in {elapsed:.2f} s = {len(tasks) / elapsed:.0f} candidates/s")
    profiler.dump_stats(out / "worker.prof")
    pstats.Stats(str(out / "worker.prof")).sort_stats("cumulative").print_stats(25)


def replacement_latency(replacements: int, standby: bool) -> list[float]:
    """Seconds from replacing fake GPU 0's worker (kill, start) until the new one is ready and the old one
    has exited (tasks may go), each time after its spare (if any) had opened the device."""
    from pyhipbench._sweep.local import LocalPool
    pool = LocalPool("hip", [0], standby=standby)
    latencies = []
    try:
        for _ in range(replacements + 1):
            started = time.perf_counter()
            pool.start(0)
            while not any(kind == "ready" for _slot, kind, _value in pool.events(1.0)):
                pass
            if pool.workers[0].after is not None:
                pool.workers[0].after.wait()  # and the old process has exited: tasks may go
            latencies.append(time.perf_counter() - started)
            while standby and (0 not in pool.spares or pool.spares[0].facts is None):
                pool.events(0.05)  # the spare opens the device meanwhile, as during a sweep's candidates
    finally:
        pool.close()
    return latencies[1:]  # the first start has no spare to take


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--candidates", type=int, default=500, help="candidates in the sweep (default 500)")
    parser.add_argument("--gpus", type=int, default=2, help="fake GPUs, one worker each (default 2)")
    parser.add_argument("--iterations", type=int, default=20, help="launches per candidate (default 20)")
    parser.add_argument("--profile", type=Path, help="write scheduler.prof and worker.prof here")
    parser.add_argument("--replacements", type=int, default=5,
                        help="worker replacements timed with and without the standby process (default 5)")
    args = parser.parse_args()
    if min(args.candidates, args.gpus, args.iterations, args.replacements) < 1:
        parser.error(f"--candidates {args.candidates}, --gpus {args.gpus}, --iterations {args.iterations}, "
                     f"--replacements {args.replacements}: expected positive counts")
    scratch = Path(tempfile.mkdtemp(prefix="sweep-overhead-"))
    os.environ.update(sweep_environment(build_fake(scratch / "fake", HIP_LIBRARY_NAME), args.gpus))
    from pyhipbench import sweep
    candidates = space(args.candidates, args.iterations)
    profiler = cProfile.Profile() if args.profile else None
    if profiler:
        profiler.enable()
    summary = sweep(candidates, scratch / "r.db", gpus=list(range(args.gpus)), backend="hip", progress=False)
    if profiler:
        profiler.disable()
    print(f"{summary.measured} measured, {summary.failed} failed on {summary.gpus} fake GPU(s) in "
          f"{summary.wall_s:.2f} s: {summary.measured / summary.wall_s:.0f} candidates/s, "
          f"busy {summary.busy_s:.2f} s")
    for standby in (False, True):
        latencies = replacement_latency(args.replacements, standby)
        print(f"replacing a worker, standby {'on' if standby else 'off'}: median "
              f"{1e3 * sorted(latencies)[len(latencies) // 2]:.1f} ms until the new one can be sent a task "
              f"({', '.join(f'{1e3 * t:.1f}' for t in latencies)} ms)")
    if profiler:
        args.profile.mkdir(parents=True, exist_ok=True)
        profiler.dump_stats(args.profile / "scheduler.prof")
        pstats.Stats(str(args.profile / "scheduler.prof")).sort_stats("tottime").print_stats(25)
        profile_worker(candidates, args.profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
