"""Host time per timed iteration, side by side in one run, on an empty kernel:

  (a) pyhipbench's C++ loop (host µs measured inside the core)
  (b) a plain C++ loop over the same libcuda calls (bench/plain_loop.cpp,
      a shared library called in this process on the same context and function)
  (c) a Python loop over cuda-bindings making the same calls

Two settings, each with rounds of (a), (b), (c) alternating so drift hits all
three alike:

  queued   each loop starts behind a spin kernel (bench/spin.ptx) that holds
           the GPU longer than the loop takes to issue, so the host never
           waits on the GPU: the time is host cost alone;
  running  the GPU executes as the loop issues (steady state; the host may be
           held back by the GPU when launches outpace it).

Target: (a)/(b) <= 1.05. Then the `graph` and `batched` timers on the same
kernel: host µs per kernel issued, and the µs per kernel they read. Writes
the figures as JSON to --out.

    python bench/launch_overhead.py --iterations 200 --rounds 30 --out overhead.json
"""
from __future__ import annotations

import argparse
import ctypes
import json
import shutil
import subprocess
import tempfile
import time
from importlib import resources
from pathlib import Path

import numpy as np

import pyhipbench as hb
from pyhipbench._launch.argument_sets import ArgumentSets
from pyhipbench._launch.launch_config import LaunchConfig
from pyhipbench._measure.bench import make_plan
from pyhipbench._measure.timers import core_timer

HERE = Path(__file__).parent


class PlainLoop:
    """bench/plain_loop.cpp, compiled and loaded, with its own events."""

    def __init__(self, directory: Path, iterations: int) -> None:
        nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
        library = directory / "libplain_loop.so"
        subprocess.run([nvcc, "-O2", "-shared", "-Xcompiler", "-fPIC", "-o", str(library),
                        str(HERE / "plain_loop.cpp"), "-lcuda"], check=True)
        self.lib = ctypes.CDLL(str(library))
        self.lib.plain_loop.restype = ctypes.c_double
        self.lib.plain_loop.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
        self.events = (ctypes.c_void_p * (2 * iterations))()
        if self.lib.create_events(self.events, 2 * iterations):
            raise RuntimeError("cuEventCreate failed in the plain loop")
        self.iterations = iterations

    def host_us(self, function: int) -> float:
        total = self.lib.plain_loop(function, self.events, self.iterations)
        if total < 0:
            raise RuntimeError(f"plain loop: CUDA error {-total:.0f}")
        return total / self.iterations


class Spin:
    """Holds the GPU for `us` µs (bench/spin.ptx), launched asynchronously."""

    def __init__(self, device: hb.Device, us: float) -> None:
        from cuda.bindings import driver as cu
        self._cu = cu
        self._function = device.load_module(HERE / "spin.ptx").kernel("spin").handle
        self._ns = int(us * 1000)

    def __call__(self) -> None:
        (error,) = self._cu.cuLaunchKernel(self._function, 1, 1, 1, 1, 1, 1, 0, 0,
                                           ((self._ns,), (ctypes.c_uint64,)), 0)
        if error != self._cu.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"spin launch failed: {error}")


def python_loop(iterations: int, function: int) -> float:
    """The same calls from Python; each call's status is checked, as a real loop must."""
    from cuda.bindings import driver as cu
    ok = cu.CUresult.CUDA_SUCCESS
    events = [cu.cuEventCreate(0)[1] for _ in range(2 * iterations)]
    start = time.perf_counter()
    for i in range(iterations):
        if (cu.cuEventRecord(events[2 * i], 0)[0] != ok
                or cu.cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0)[0] != ok
                or cu.cuEventRecord(events[2 * i + 1], 0)[0] != ok):
            raise RuntimeError(f"Python loop: a driver call failed at iteration {i}")
    issued = time.perf_counter()
    cu.cuEventSynchronize(events[-1])
    for e in events:
        cu.cuEventDestroy(e)
    return (issued - start) * 1e6 / iterations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--spin-us", type=float, default=5000,
                        help="how long the spin kernel holds the GPU before each queued loop, µs")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--launches-per-sample", type=int, default=100,
                        help="graph nodes / batch length for the graph and batched timers")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    device = hb.Device("cuda")
    ptx = resources.files("pyhipbench") / "kernels" / "empty.ptx"
    empty = device.load_module(ptx).kernel("empty")
    config = LaunchConfig.checked(1, 1, 0, device.properties)
    sets = ArgumentSets(device, [(empty.params, [])], 1)
    plan = make_plan([(empty, config)], sets)
    core_timer(device, "events").run(plan, args.iterations, 0)  # warm the event pool and the JIT

    with tempfile.TemporaryDirectory() as tmp:
        plain_loop = PlainLoop(Path(tmp), args.iterations)
        plain_loop.host_us(empty.handle)  # warm, like (a)
        spin = Spin(device, args.spin_us)
        figures = {"device": device.name, "iterations": args.iterations, "rounds": args.rounds,
                   "spin_us": args.spin_us}
        print(f"{device.name}: host µs per timed iteration, empty kernel "
              f"(median of {args.rounds} rounds x {args.iterations} iterations)")
        print(f"  {'setting':<8} {'(a) pyhipbench':>15} {'(b) plain C++':>14} {'(c) Python':>11} "
              f"{'(a)/(b)':>8} {'(c)/(a)':>8}")
        for setting, before in (("queued", spin), ("running", lambda: None)):
            core, plain, python = [], [], []
            for _ in range(args.rounds):
                before()
                core.append(core_timer(device, "events").run(plan, args.iterations, 0)[2] / args.iterations)
                before()
                plain.append(plain_loop.host_us(empty.handle))
                before()
                python.append(python_loop(args.iterations, empty.handle))
            a, b, c = (float(np.median(x)) for x in (core, plain, python))
            figures[setting] = {"median_host_us_per_iteration": {
                "pyhipbench": a, "plain_cpp": b, "python_cuda_bindings": c},
                "ratio_pyhipbench_over_plain": a / b, "ratio_python_over_pyhipbench": c / a}
            print(f"  {setting:<8} {a:>15.3f} {b:>14.3f} {c:>11.3f} {a / b:>8.3f} {c / a:>8.2f}")
        print("  target (a)/(b) <= 1.05")
        print(f"  {'timer':<8} {'host µs/kernel':>15} {'µs/kernel':>10}  "
              f"({args.rounds} rounds x {args.iterations} kernels, {args.launches_per_sample} per sample)")
        for name in ("graph", "batched"):
            timer = hb._core.make_timer(name, device.driver, device.backend.context,
                                        launches_per_sample=args.launches_per_sample)
            samples = max(1, args.iterations // args.launches_per_sample)
            timer.run(plan, samples, 0)  # build the graphs before timing
            host, kernel = [], []
            for _ in range(args.rounds):
                times, launches, host_us = timer.run(plan, samples, 0)
                host.append(host_us / (samples * launches))
                kernel.extend(times)
            h, k = float(np.median(host)), float(np.median(kernel))
            figures[name] = {"median_host_us_per_kernel": h, "median_us_per_kernel": k,
                             "launches_per_sample": args.launches_per_sample}
            print(f"  {name:<8} {h:>15.3f} {k:>10.3f}")
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
