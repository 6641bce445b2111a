"""Helion's autotuning with Helion's own benchmarking and through pyhipbench.helion, side by side.

Each kernel is autotuned twice, each time in a fresh process with fresh
Triton and Helion caches (HELION_SKIP_CACHE=1, empty TRITON_CACHE_DIR), at
the same effort and search seed (HELION_AUTOTUNE_RANDOM_SEED): once with
Helion's default benchmarking, once with `pyhipbench.helion.Measuring()`.
Then a third fresh process reads both picks independently: torch.profiler's
CUDA kernel time over many calls of each pick (neither autotuner's numbers),
the two picks in turn, each first in every other round, the median round
reported.

    python bench/helion_autotune.py            # matmul, softmax, row sum at the quick effort
    python bench/helion_autotune.py --quick    # one kernel (softmax), the quick effort: a smoke test
    python bench/helion_autotune.py --effort full --json out.json
    python bench/helion_autotune.py --one-process   # every kernel in turn in one process per mode

`--one-process` autotunes the kernels one after another in one fresh
process per mode, as a program with several kernels does (what a search
leaves, such as pyhipbench.helion's kept check worker, serves the next),
and adds each mode's walls summed.

Reports per kernel and mode: the autotune wall (s), the configs compiled
(given to the benchmark provider) and measured, the picked config, the
pick's kernel time by the independent reading (µs), whether the output
matched torch's, and the ratio of each figure to Helion's default.
Needs a GPU, torch and Helion 1.5.0 (pyhipbench.helion.HELION_VERSION).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

KERNELS = ("matmul", "softmax", "rowsum")
MODES = ("helion", "pyhipbench")


def load_gpu_modules() -> None:
    """torch and Helion, as this module's globals (the kernels' annotations name torch), once the options
    are checked: without them the script says so in one line."""
    global helion, hl, torch
    try:
        import helion
        import helion.language as hl
        import torch
    except ImportError as e:
        raise SystemExit(f"bench/helion_autotune.py needs torch and Helion 1.5.0: {e}") from None


def define(name: str, **settings: Any) -> tuple[Any, tuple[Any, ...], Any]:
    """(the Helion kernel `name` with `settings`, its arguments, torch's reference of its output). The
    kernels use module globals only: Helion refuses closures."""
    if name == "matmul":
        @helion.kernel(static_shapes=True, **settings)
        def matmul(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            m, k = x.size()
            _, n = y.size()
            out = torch.empty([m, n], dtype=x.dtype, device=x.device)
            for tile_m, tile_n in hl.tile([m, n]):
                acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
                for tile_k in hl.tile(k):
                    acc = torch.addmm(acc, x[tile_m, tile_k], y[tile_k, tile_n])
                out[tile_m, tile_n] = acc.to(x.dtype)
            return out
        a, b = (torch.randn(4096, 4096, device="cuda", dtype=torch.float16) for _ in range(2))
        return matmul, (a, b), lambda: a @ b
    if name == "softmax":
        @helion.kernel(static_shapes=True, **settings)
        def softmax(x: torch.Tensor) -> torch.Tensor:
            n, _ = x.size()
            out = torch.empty_like(x)
            for tile_n in hl.tile(n):
                out[tile_n, :] = torch.nn.functional.softmax(x[tile_n, :], dim=1)
            return out
        x = torch.randn(8192, 4096, device="cuda", dtype=torch.float16)
        return softmax, (x,), lambda: torch.nn.functional.softmax(x, dim=1)
    if name == "rowsum":
        @helion.kernel(static_shapes=True, **settings)
        def rowsum(x: torch.Tensor) -> torch.Tensor:
            m, _ = x.size()
            out = torch.empty([m], dtype=torch.float32, device=x.device)
            for tile_m in hl.tile(m):
                out[tile_m] = x[tile_m, :].to(torch.float32).sum(-1)
            return out
        x = torch.randn(16384, 8192, device="cuda", dtype=torch.bfloat16)
        return rowsum, (x,), lambda: x.float().sum(-1)
    raise SystemExit(f"kernel {name!r}: expected one of {', '.join(KERNELS)}")


def autotune(name: str, mode: str, effort: str) -> dict[str, Any]:
    """One autotune (this process is fresh): its wall, counts, pick and whether the output is right."""
    from helion.runtime.settings import default_autotuner_fn

    searches: list[Any] = []
    ledger = None
    if mode == "pyhipbench":
        import pyhipbench.helion as hbh
        measuring = hbh.Measuring()
        settings = measuring.settings()
        ledger = measuring.ledger
        inner = settings["autotuner_fn"]
    else:
        settings, inner = {}, default_autotuner_fn

    def keeping(bound: Any, args: Any, **kwargs: Any) -> Any:  # the search kept, for Helion's own counts
        tuner = inner(bound, args, **kwargs)
        searches.append(tuner.autotuner)
        return tuner
    kernel, args, reference = define(name, autotune_effort=effort, autotuner_fn=keeping,
                                     **{k: v for k, v in settings.items() if k != "autotuner_fn"})
    bound = kernel.bind(args)
    torch.cuda.synchronize()
    started = time.perf_counter()
    config = bound.autotune(args)
    torch.cuda.synchronize()
    wall_s = time.perf_counter() - started
    out = kernel(*args)
    expected = reference()
    correct = bool(torch.allclose(out.float(), expected.float(), atol=2e-2, rtol=2e-2))
    metrics = searches[-1]._autotune_metrics
    record = {"kernel": name, "mode": mode, "wall_s": wall_s, "config": dict(config),
              "configs_tested": metrics.num_configs_tested, "compile_failures": metrics.num_compile_failures,
              "accuracy_failures": metrics.num_accuracy_failures, "correct": correct}
    if ledger is not None:
        record["ledger"] = ledger.to_dict()
    return record


def reference_us(name: str, configs: dict[str, dict[str, Any]], rounds: int, calls: int) -> dict[str, float]:
    """Each pick's CUDA kernel time per call by torch.profiler (µs): `calls` calls a round, after `calls` / 5
    untimed ones, finished before the profiler starts (its code loaded, the clock its own load sustains), the
    picks in turn, each first in every other round (what the one before leaves, the clock and the heat, falls
    on both alike), over `rounds` rounds; the median round."""
    from torch.profiler import ProfilerActivity, profile

    kernels = {mode: define(name, config=helion.Config(**config))[0] for mode, config in configs.items()}
    _, args, _ = define(name, config=helion.Config(**next(iter(configs.values()))))
    per_round: dict[str, list[float]] = {mode: [] for mode in kernels}
    order = list(kernels.items())
    for n in range(rounds):
        for mode, kernel in order if n % 2 == 0 else order[::-1]:
            for _ in range(calls // 5):
                kernel(*args)
            torch.cuda.synchronize()  # none of these in the profiled window
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(calls):
                    kernel(*args)
                torch.cuda.synchronize()
            device_us = sum(e.self_device_time_total for e in prof.key_averages() if e.device_type.name == "CUDA")
            per_round[mode].append(device_us / calls)
    return {mode: statistics.median(times) for mode, times in per_round.items()}


def child(argv: list[str]) -> None:
    task, name, rest = argv[0], argv[1], argv[2:]
    record: Any
    if task == "autotune":  # `name`: the kernels, comma-separated, autotuned in turn in this process
        mode, effort, out = rest
        record = [autotune(kernel, mode, effort) for kernel in name.split(",")]
    else:
        picks, out = rest
        with open(picks) as f:
            record = reference_us(name, json.load(f), rounds=6, calls=500)
    with open(out, "w") as f:
        json.dump(record, f)


def fresh_run(argv: list[str], seed: int) -> Any:
    """This script's child task `argv` in a fresh process with fresh caches; its JSON record."""
    with tempfile.TemporaryDirectory() as scratch:
        env = {**os.environ, "TRITON_CACHE_DIR": os.path.join(scratch, "triton"), "HELION_SKIP_CACHE": "1",
               "HELION_CACHE_DIR": os.path.join(scratch, "helion"), "HELION_AUTOTUNE_RANDOM_SEED": str(seed),
               "TORCHINDUCTOR_CACHE_DIR": os.path.join(scratch, "inductor"), "HELION_AUTOTUNE_PROGRESS_BAR": "0"}
        out = os.path.join(scratch, "record.json")
        done = subprocess.run([sys.executable, __file__, "--child", *argv, out], env=env)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(argv)}: the child exited with {done.returncode}")
        with open(out) as f:
            return json.load(f)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one kernel (softmax) at the quick effort")
    parser.add_argument("--effort", default="quick", choices=("quick", "full"))
    parser.add_argument("--seed", type=int, default=1234, help="Helion's search seed, the same for both modes")
    parser.add_argument("--kernels", default=",".join(KERNELS))
    parser.add_argument("--json", help="write every record here, again after each kernel")
    parser.add_argument("--one-process", action="store_true",
                        help="each mode autotunes every kernel in turn in one process")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    options = parser.parse_args()
    kernels = ["softmax"] if options.quick else options.kernels.split(",")
    if options.child is None and (len(set(kernels)) != len(kernels) or not set(kernels) <= set(KERNELS)):
        parser.error(f"--kernels {options.kernels!r}: expected distinct names among {', '.join(KERNELS)}")
    load_gpu_modules()
    if options.child:
        child(options.child)
        return
    effort = "quick" if options.quick else options.effort
    in_one = {mode: fresh_run(["autotune", ",".join(kernels), mode, effort], options.seed)
              for mode in MODES} if options.one_process else None

    def autotuned(name: str) -> dict[str, dict[str, Any]]:
        """Each mode's record of `name`'s autotune: from the one process per mode, or a fresh one."""
        if in_one is not None:
            return {mode: in_one[mode][kernels.index(name)] for mode in MODES}
        return {mode: fresh_run(["autotune", name, mode, effort], options.seed)[0] for mode in MODES}

    records = []
    for name in kernels:
        runs = autotuned(name)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({mode: run["config"] for mode, run in runs.items()}, f)
        reading = fresh_run(["reference", name, f.name], options.seed)
        os.unlink(f.name)
        for mode, run in runs.items():
            run["reference_us"] = reading[mode]
        base = runs["helion"]
        print(f"\n{name} (effort {effort}, seed {options.seed})")
        print(f"  {'mode':<11} {'wall s':>8} {'x':>6} {'tested':>7} {'kernel µs':>10} {'x':>6}  correct  config")
        for mode, run in runs.items():
            print(f"  {mode:<11} {run['wall_s']:>8.1f} {run['wall_s'] / base['wall_s']:>6.2f} "
                  f"{run['configs_tested']:>7} {run['reference_us']:>10.2f} "
                  f"{run['reference_us'] / base['reference_us']:>6.3f}  {str(run['correct']):<7}  {run['config']}")
        if "ledger" in runs["pyhipbench"]:
            print(f"  pyhipbench ledger: {json.dumps(runs['pyhipbench']['ledger'])}")
        records.extend(runs.values())
        if options.json:  # after each kernel: a later kernel's failure keeps the ones measured
            with open(options.json, "w") as f:
                json.dump(records, f, indent=1)
    if in_one is not None:
        walls = {mode: sum(run["wall_s"] for run in in_one[mode]) for mode in MODES}
        print(f"\none process per mode, {len(kernels)} kernels: " + ", ".join(
            f"{mode} {wall:.1f} s ({wall / walls['helion']:.2f}x)" for mode, wall in walls.items()))


if __name__ == "__main__":
    main()
