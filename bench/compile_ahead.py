"""Tuning at the speed of compilation: autotune and a Triton sweep with the compile pool, side by side.

  attention  bench/attention_kernel.py's flash-attention forward (fp16, 4 x 32 heads x 2048 x 64) over
             its 36 configs, each reading in a process of its own: Triton's own autotuner with a fresh
             Triton cache; pyhipbench.triton.autotune with a fresh cache (the wall of tune(), its compile
             wall, the pool's start-up, each config's compile / queue / measure seconds); the same kernel
             defined in the script being run (its __main__, as tutorials and notebooks define kernels),
             with a fresh cache of its own; the module's with
             the cache now warm, in --warm-runs new processes (each one's wall; the tied configs'
             sustained medians); and a reference (triton.testing.do_bench, rep=300 ms, of every config,
             in a process of its own: once in the configs' order, once in reverse) naming the winner.
             Each decorates the kernel before making its tensors, as a decorator at import does. A pick
             is "within noise" of one pass when its median there is at most the winner's p80; of both
             passes together, when its mean of the two is above the winner's by no more than the two
             configs' half differences between the passes added (the order alone moves a reading by
             that much).
  sweep      a sweep of 500 Triton matmul configs (bench/triton_matmul.py's kernel, 1024^3 fp16) on
             one GPU with a fresh cache: the wall until the first result, the wall after it, and the GPU
             busy fraction after it (the candidates' measuring walls over the wall after the first).

Writes compile_ahead.json in --out and prints a summary.

    python bench/compile_ahead.py [--out DIR] [--parts attention,sweep] [--compile-workers N] [--warm-runs N]

Needs an NVIDIA GPU, torch and triton 3.x.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
Z, H, N_CTX, HEAD_DIM = 4, 32, 2048, 64
SWEEP_SIZE, SWEEP_CANDIDATES = 1024, 500


def attention_tensors():
    import torch
    torch.manual_seed(0)
    q, k, v = (torch.randn((Z, H, N_CTX, HEAD_DIM), device="cuda", dtype=torch.float16) for _ in range(3))
    return q, k, v, torch.empty_like(q)


def attention_args(q, k, v, o) -> list:
    return [q, k, v, o, HEAD_DIM ** -0.5, q.stride(0), q.stride(1), q.stride(2), H, N_CTX]


def attention_grid(meta: dict) -> tuple[int, int]:
    import triton
    return (triton.cdiv(N_CTX, meta["BLOCK_M"]), Z * H)


def work_triton() -> dict:
    import torch
    import triton
    from attention_kernel import attention_forward, configs
    tuned = triton.autotune(configs(), key=["N_CTX"])(attention_forward)  # as a decorator, at import
    tensors = attention_tensors()
    torch.cuda.synchronize()
    started = time.perf_counter()
    tuned[attention_grid](*attention_args(*tensors), HEAD_DIM=HEAD_DIM)
    torch.cuda.synchronize()
    return {"wall_s": time.perf_counter() - started, "best": str(tuned.best_config)}


def work_pyhipbench(cache: str) -> dict:
    from attention_kernel import attention_forward, configs
    return tune_with_pyhipbench(attention_forward, configs(), cache)


# The attention kernel's module as the script being run: the same source, then a __main__ block that tunes it.
MAIN_BLOCK = """

if __name__ == "__main__":
    import json
    import sys
    sys.path.insert(0, {here!r})
    import compile_ahead
    print(json.dumps(compile_ahead.tune_with_pyhipbench(attention_forward, configs(), "auto")))
"""


def work_pyhipbench_main() -> dict:
    """pyhipbench.triton.autotune of the attention kernel defined in the script being run (its __main__)."""
    script = Path(tempfile.mkdtemp()) / "attention_script.py"
    script.write_text((HERE / "attention_kernel.py").read_text() + MAIN_BLOCK.format(here=str(HERE)))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"the __main__ script failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def tune_with_pyhipbench(attention_forward, configs: list, cache: str) -> dict:
    """pyhipbench.triton.autotune over `configs` of `attention_forward`, decorated before its tensors are made
    (as a decorator at import): the wall of tune() and what each config cost."""
    import torch

    import pyhipbench as hb
    import pyhipbench.triton as ht
    from pyhipbench._compile.pool import shared_pool
    device = hb.Device()
    tuned = ht.autotune(configs, key=["N_CTX"], device=device, cache=cache)(attention_forward)  # at import
    tensors = attention_tensors()
    torch.cuda.synchronize()
    started = time.perf_counter()
    tuning = tuned.tune(attention_grid, *attention_args(*tensors), HEAD_DIM=HEAD_DIM)
    wall_s = time.perf_counter() - started
    pool = shared_pool(1)
    return {"wall_s": wall_s, "compile_wall_s": tuning.compile_wall_s, "best": str(tuning.best),
            "pool_startup_s": pool.startup_s, "failed": [r.to_dict() for r in tuning.failed],
            "configs": [{"config": str(r.config), "compiled": r.compiled, "compile_s": r.compile_s,
                         "queue_s": r.queue_s, "measure_s": r.measure_s, "median_us": r.median_us,
                         "stop_reason": None if r.result is None else r.result.stop_reason,
                         "sustained_median_us": None if r.sustained is None else r.sustained.median_us,
                         "sustained_clock_mhz": None if r.sustained is None or r.sustained.clock is None
                         else r.sustained.clock.mean_mhz}
                        for r in tuning.results]}


def work_reference(order: str) -> dict:
    import triton
    import triton.testing
    from attention_kernel import attention_forward, configs
    tensors = attention_tensors()
    args = attention_args(*tensors)
    readings = {}
    for config in configs() if order == "forward" else configs()[::-1]:
        def launch(meta=config.all_kwargs()):
            attention_forward[attention_grid](*args, HEAD_DIM=HEAD_DIM, **meta)
        try:
            median, p80 = triton.testing.do_bench(launch, rep=300, quantiles=(0.5, 0.8))
        except triton.runtime.errors.OutOfResources as e:
            readings[str(config)] = {"error": str(e)}
            continue
        readings[str(config)] = {"median_ms": median, "p80_ms": p80}
    return readings


def sweep_space() -> list:
    import pyhipbench as hb
    n = SWEEP_SIZE
    space = itertools.product((32, 64, 128), (32, 64, 128), (32, 64, 128), (1, 4, 8), (2, 4, 8), (2, 3, 4))
    candidates = []
    for bm, bn, bk, group, warps, stages in itertools.islice(space, SWEEP_CANDIDATES):
        candidates.append({
            "source": {"kind": "triton", "function": "triton_matmul:matmul_kernel",
                       "constexprs": {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_SIZE_M": group},
                       "num_warps": warps, "num_stages": stages},
            "grid": [-(-n // bm) * -(-n // bn)],
            "args": [f"array:float16:{n * n}"] * 3 + [f"int32:{n}"] * 3 + [f"int32:{n}", "int32:1"] * 3,
            "tags": {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_SIZE_M": group, "num_warps": warps,
                     "num_stages": stages}})
    return hb.candidates_from_json({"candidates": candidates})


def work_sweep(compile_workers: int) -> dict:
    import sqlite3
    from datetime import datetime

    import pyhipbench as hb
    candidates = sweep_space()
    db = Path(tempfile.mkdtemp()) / "sweep.db"
    started = time.time()
    summary = hb.sweep(candidates, db=db, progress=False, gpus=[0], compile_workers=compile_workers)
    rows = sqlite3.connect(db).execute("SELECT finished_at, result, status FROM results").fetchall()
    finished = sorted((datetime.fromisoformat(at).timestamp(), json.loads(result)["wall_s"] if result else 0.0)
                      for at, result, _ in rows)
    after_s = finished[-1][0] - finished[0][0]
    busy_after_s = sum(wall for _, wall in finished[1:])
    return {"candidates": len(candidates), "measured": summary.measured, "failed": summary.failed,
            "wall_s": summary.wall_s, "until_first_result_s": finished[0][0] - started,
            "wall_after_first_s": after_s, "busy_after_first_s": busy_after_s,
            "busy_after_first": busy_after_s / after_s if after_s else None,
            "utilisation": summary.utilisation}


def in_child(kind: str, cache_dir: Path, *extra: str) -> dict:
    env = {**os.environ, "TRITON_CACHE_DIR": str(cache_dir)}
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", kind, *extra],
                          capture_output=True, text=True, timeout=900, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{kind} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def judged_by(readings: dict, pick: str) -> dict:
    """`pick` against one reference pass's winner."""
    reference = {k: v for k, v in readings.items() if "median_ms" in v}
    winner = min(reference, key=lambda k: reference[k]["median_ms"])
    if pick not in reference:
        return {"winner": winner, "within_noise": False}
    return {"winner": winner, "over_winner": reference[pick]["median_ms"] / reference[winner]["median_ms"],
            "within_noise": reference[pick]["median_ms"] <= reference[winner]["p80_ms"]}


def judged_by_both(forward: dict, reverse: dict, pick: str) -> dict:
    """`pick` against both passes together. Each config reads its mean of the two passes' medians, give
    or take half their difference (how far the order alone moves it); the winner has the lowest mean, and
    a pick is within noise when its mean is above the winner's by no more than the two configs' half
    differences added."""
    both = {k: (forward[k]["median_ms"], reverse[k]["median_ms"]) for k in forward
            if "median_ms" in forward[k] and "median_ms" in reverse.get(k, {})}
    mean = {k: (f + r) / 2 for k, (f, r) in both.items()}
    half = {k: abs(f - r) / 2 for k, (f, r) in both.items()}
    winner = min(mean, key=mean.__getitem__)
    if pick not in mean:
        return {"winner": winner, "within_noise": False}
    return {"winner": winner, "over_winner": mean[pick] / mean[winner],
            "within_noise": mean[pick] - mean[winner] <= half[pick] + half[winner]}


def summarize_attention(out: dict) -> dict:
    picks = {"triton": out["triton_fresh"]["best"], "pyhipbench": out["pyhipbench_fresh"]["best"],
             "pyhipbench_main": out["pyhipbench_main_fresh"]["best"], "pyhipbench_warm": out["pyhipbench_warm"]["best"]}
    forward, reverse = out["reference_forward"], out["reference_reverse"]
    return {**{who: {"pick": pick, "forward": judged_by(forward, pick), "reverse": judged_by(reverse, pick),
                     "both": judged_by_both(forward, reverse, pick)}
               for who, pick in picks.items()},
            "fresh_speedup": out["triton_fresh"]["wall_s"] / out["pyhipbench_fresh"]["wall_s"],
            "main_over_module": out["pyhipbench_main_fresh"]["wall_s"] / out["pyhipbench_fresh"]["wall_s"],
            "main_fresh_speedup": out["triton_fresh"]["wall_s"] / out["pyhipbench_main_fresh"]["wall_s"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("."))
    parser.add_argument("--parts", default="attention,sweep")
    parser.add_argument("--compile-workers", type=int, default=None)
    parser.add_argument("--warm-runs", type=int, default=3)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    options, rest = parser.parse_known_args()
    if options.warm_runs < 1:
        parser.error(f"--warm-runs {options.warm_runs}: expected at least 1 new process with the cache warm")
    sys.path.insert(0, str(HERE))
    if options.worker:
        work = {"triton": work_triton, "pyhipbench": lambda: work_pyhipbench(rest[0]),
                "pyhipbench-main": work_pyhipbench_main,
                "reference": lambda: work_reference(rest[0]),
                "sweep": lambda: work_sweep(int(rest[0]))}[options.worker]
        print(json.dumps(work()))
        return
    from pyhipbench._compile.pool import default_workers
    workers = options.compile_workers or default_workers()
    results: dict = {"compile_workers": workers}
    parts = options.parts.split(",")
    if "attention" in parts:
        fresh_triton, fresh_ours = Path(tempfile.mkdtemp()), Path(tempfile.mkdtemp())
        results["attention"] = out = {
            "triton_fresh": in_child("triton", fresh_triton),
            "pyhipbench_fresh": in_child("pyhipbench", fresh_ours, "auto"),
            "pyhipbench_main_fresh": in_child("pyhipbench-main", Path(tempfile.mkdtemp())),
            "pyhipbench_warm": in_child("pyhipbench", fresh_ours, "auto"),
            "pyhipbench_warm_walls_s": [in_child("pyhipbench", fresh_ours, "auto")["wall_s"]
                                        for _ in range(options.warm_runs - 1)],
            "pyhipbench_warm_l2": in_child("pyhipbench", fresh_ours, "warm"),
            "triton_warm": in_child("triton", fresh_triton),
            "reference_forward": in_child("reference", fresh_ours, "forward"),
            "reference_reverse": in_child("reference", fresh_ours, "reverse")}
        out["summary"] = summarize_attention(out)
        print(json.dumps({k: out[k] for k in ("summary",)}, indent=1))
        for name in ("triton_fresh", "pyhipbench_fresh", "pyhipbench_main_fresh", "pyhipbench_warm",
                     "pyhipbench_warm_l2", "triton_warm"):
            print(f"{name}: {out[name]['wall_s']:.2f} s, pick {out[name]['best']}")
        out["pyhipbench_warm_walls_s"].insert(0, out["pyhipbench_warm"]["wall_s"])
        print("pyhipbench_warm, every new process: " + ", ".join(f"{w:.3f}" for w in out["pyhipbench_warm_walls_s"])
              + " s")
        print(f"pool start-up (s per worker): {out['pyhipbench_fresh']['pool_startup_s']}")
        print("config | reference ms (p80), forward / reverse | fresh µs, compiled, compile / queue / measure s | "
              "warm-cache µs, compiled, measure s, sustained µs @ MHz | cache=warm µs")
        rows = zip(out["pyhipbench_fresh"]["configs"], out["pyhipbench_warm"]["configs"],
                   out["pyhipbench_warm_l2"]["configs"])
        for fresh, warm, l2 in rows:
            refs = [out[f"reference_{order}"].get(fresh["config"], {}) for order in ("forward", "reverse")]
            held = "" if warm["sustained_median_us"] is None else \
                f" {warm['sustained_median_us']:.1f} @ {warm['sustained_clock_mhz'] or 0:.0f}"
            print(f"{fresh['config'][:40]} | "
                  + " / ".join(f"{ref.get('median_ms', 0):.4f} ({ref.get('p80_ms', 0):.4f})" for ref in refs) + " | "
                  f"{fresh['median_us'] or 0:.1f} {fresh['compiled']} {fresh['compile_s'] or 0:.2f} / "
                  f"{fresh['queue_s'] or 0:.2f} / {fresh['measure_s'] or 0:.3f} {fresh['stop_reason']} | "
                  f"{warm['median_us'] or 0:.1f} {warm['compiled']} {warm['measure_s'] or 0:.3f}{held} | "
                  f"{l2['median_us'] or 0:.1f}")
    options.out.mkdir(parents=True, exist_ok=True)
    (options.out / "compile_ahead.json").write_text(json.dumps(results, indent=1))
    if "sweep" in parts:
        results["sweep"] = in_child("sweep", Path(tempfile.mkdtemp()), str(workers))
        print(json.dumps(results["sweep"], indent=1))
    options.out.mkdir(parents=True, exist_ok=True)
    (options.out / "compile_ahead.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
