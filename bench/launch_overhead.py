"""Host time per timed iteration, side by side in one run, on an empty kernel:

  (a) pyhipbench's C++ loop (host µs measured inside the core)
  (b) a plain C++ loop over the same libcuda calls (bench/plain_loop.cpp,
      a shared library called in this process on the same context and function)
  (c) a Python loop over cuda-bindings making the same calls

Rounds of (a), (b), (c) alternate so drift hits all three alike. Target:
(a)/(b) <= 1.05. Writes the figures as JSON to --out.

    python bench/launch_overhead.py --iterations 500 --rounds 30 --out overhead.json
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
from pyhipbench.argument_sets import ArgumentSets
from pyhipbench.bench import make_plan
from pyhipbench.launch_config import LaunchConfig

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


def python_loop(iterations: int, function: int) -> float:
    from cuda.bindings import driver as cu
    events = [cu.cuEventCreate(0)[1] for _ in range(2 * iterations)]
    start = time.perf_counter()
    for i in range(iterations):
        cu.cuEventRecord(events[2 * i], 0)
        cu.cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0)
        cu.cuEventRecord(events[2 * i + 1], 0)
    issued = time.perf_counter()
    cu.cuEventSynchronize(events[-1])
    for e in events:
        cu.cuEventDestroy(e)
    return (issued - start) * 1e6 / iterations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    device = hb.Device("cuda")
    ptx = resources.files("pyhipbench") / "kernels" / "empty.ptx"
    empty = device.load_module(ptx).kernel("empty")
    config = LaunchConfig.checked(1, 1, 0, device.properties)
    sets = ArgumentSets(device, empty.params, [], 1)
    plan = make_plan(empty, config, sets)
    device.runtime.run(plan, args.iterations, 0)  # warm the event pool and the JIT

    with tempfile.TemporaryDirectory() as tmp:
        plain_loop = PlainLoop(Path(tmp), args.iterations)
        plain_loop.host_us(empty.handle)  # warm, like (a)
        core, plain, python = [], [], []
        for _ in range(args.rounds):
            _, host_us = device.runtime.run(plan, args.iterations, 0)
            core.append(host_us / args.iterations)
            plain.append(plain_loop.host_us(empty.handle))
            python.append(python_loop(args.iterations, empty.handle))

    a, b, c = (float(np.median(x)) for x in (core, plain, python))
    figures = {"device": device.name, "iterations": args.iterations, "rounds": args.rounds,
               "median_host_us_per_iteration": {"pyhipbench": a, "plain_cpp": b, "python_cuda_bindings": c},
               "ratio_pyhipbench_over_plain": a / b, "ratio_python_over_pyhipbench": c / a}
    print(f"{device.name}: host µs per timed iteration (median of {args.rounds} rounds x {args.iterations})")
    print(f"  (a) pyhipbench C++ loop   {a:8.3f}")
    print(f"  (b) plain C++ loop        {b:8.3f}")
    print(f"  (c) Python cuda-bindings  {c:8.3f}")
    print(f"  (a)/(b) = {a / b:.3f}  (target <= 1.05)    (c)/(a) = {c / a:.2f}")
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
