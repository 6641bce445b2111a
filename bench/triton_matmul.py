"""A 24-config Triton fp16 GEMM autotune space through pyhipbench and through triton.testing.do_bench, in one run.

A 2048^3 fp16 matmul (Triton's tutorial kernel, written below), 24 configs:
BM, BN in {64, 128}, BK in {32, 64}, (warps, stages) in {(4, 2), (4, 3), (8, 3)}.
For each config, in this order:

  compile     pyhipbench.triton.compile (Triton compiles; its cubin loaded), wall ms
  pyhipbench  pyhipbench.triton.bench_compiled with pyhipbench's defaults (or --timer / --cache):
              median, 95 % CI, timer, cache state, samples, wall ms; its output checked
  do_bench    triton.testing.do_bench with its defaults (warmup=25 ms, rep=100 ms, a 256 MB L2
              clear before each launch) on the kernel launched by Triton, all samples kept:
              median, mean, p20-p80, wall ms; its output checked

Outputs are checked against torch.matmul (atol = rtol = 1e-2, fp16). Then: the Spearman rank
agreement of the medians over the configs both ran, the config each picks, whether pyhipbench's
pick is do_bench's winner or within do_bench's noise (its do_bench median at most the winner's
p80), the wall time per candidate of both; then the space again as a racing tuner runs it
(each config freshly loaded, timed with slower_than_us = the lowest CI upper bound so far: its
wall per candidate against do_bench's, and whether it picks what the full pass picked); and
pyhipbench.triton.autotune over the same space (racing, its default: its pick, the winner
launched through Triton, the output checked). Prints a markdown table; --out FILE.json keeps
everything.

    python bench/triton_matmul.py [--size 2048] [--timer auto] [--cache auto] [--out FILE.json]

Needs an NVIDIA GPU, torch, triton 3.x and cuda-bindings.
"""
from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time

import numpy as np

try:
    import torch
    import triton
    import triton.language as tl
except ImportError as error:
    sys.exit(f"triton_matmul.py needs torch and triton ({error}): pip install torch triton")

import pyhipbench as hb
import pyhipbench.triton as ht

GROUP_M = 8
ATOL = RTOL = 1e-2


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr):
    """C = A @ B, fp16 in and out, fp32 accumulation; programs grouped along M for L2 reuse."""
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    first_pid_m = (pid // num_pid_in_group) * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, accumulator.to(tl.float16), mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def grid(meta: dict) -> tuple[int]:
    return (triton.cdiv(meta["M"], meta["BLOCK_M"]) * triton.cdiv(meta["N"], meta["BLOCK_N"]),)


def configs() -> list[triton.Config]:
    """The 24 configurations."""
    return [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_SIZE_M": GROUP_M},
                          num_warps=warps, num_stages=stages)
            for bm, bn, bk, (warps, stages) in itertools.product((64, 128), (64, 128), (32, 64),
                                                                 ((4, 2), (4, 3), (8, 3)))]


def label(config: triton.Config) -> str:
    k = config.kwargs
    return f"{k['BLOCK_M']}x{k['BLOCK_N']}x{k['BLOCK_K']} w{config.num_warps} s{config.num_stages}"


def view(device: hb.Device, tensor: torch.Tensor) -> hb.DeviceArray:
    """A pyhipbench array over a torch tensor's memory (torch keeps owning it)."""
    return hb.DeviceArray.view(device.backend, tensor.data_ptr(), tuple(tensor.shape), np.float16)


def check(c: torch.Tensor, reference: torch.Tensor) -> dict:
    """Whether c matches the reference within ATOL/RTOL, and the largest difference."""
    difference = (c.float() - reference.float()).abs()
    return {"ok": bool(torch.allclose(c, reference, atol=ATOL, rtol=RTOL)), "max_abs_diff": float(difference.max())}


def spearman(x: list[float], y: list[float]) -> float:
    """Spearman's rank correlation (average ranks for ties)."""
    def ranks(values: list[float]) -> np.ndarray:
        values = np.asarray(values)
        order = values.argsort(kind="stable")
        ranked = np.empty(len(values))
        ranked[order] = np.arange(len(values), dtype=float)
        for value in np.unique(values):  # ties share their mean rank
            ranked[values == value] = ranked[values == value].mean()
        return ranked
    rx, ry = ranks(x), ranks(y)
    return float(np.corrcoef(rx, ry)[0, 1])


def matmul_args(tensors: dict) -> list:
    a, b, c = tensors["a"], tensors["b"], tensors["c"]
    size = a.shape[0]
    return [a, b, c, size, size, size, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1)]


def meta_of(config: triton.Config) -> dict:
    return {**config.kwargs, "num_warps": config.num_warps, "num_stages": config.num_stages}


def compile_config(config: triton.Config, device: hb.Device, args: list) -> ht.TritonKernel:
    return ht.compile(matmul_kernel, [view(device, t) if isinstance(t, torch.Tensor) else t for t in args],
                      device, **meta_of(config))


def run_config(config: triton.Config, device: hb.Device, tensors: dict, reference: torch.Tensor,
               bench_options: dict) -> dict:
    c = tensors["c"]
    args = matmul_args(tensors)
    meta = meta_of(config)
    row: dict = {"config": label(config), "meta": meta}

    # pyhipbench: Triton compiles, the core times.
    c.zero_()
    started = time.perf_counter()
    try:
        kernel = compile_config(config, device, args)
    except hb.Error as e:
        row["pyhipbench"] = {"error": f"{type(e).__name__}: {e}"}
    else:
        row["compile_ms"] = (time.perf_counter() - started) * 1e3
        row["shared_bytes"] = kernel.shared_bytes
        started = time.perf_counter()
        try:
            result = ht.bench_compiled(kernel, grid, **bench_options)
            torch.cuda.synchronize()
            row["pyhipbench"] = {"median_us": result.median_us, "ci_us": list(result.ci_us),
                                 "timer": result.timer, "cache_state": result.cache_state,
                                 "samples": result.samples, "stop_reason": result.stop_reason,
                                 "wall_ms": (time.perf_counter() - started) * 1e3, "output": check(c, reference)}
        except hb.Error as e:
            row["pyhipbench"] = {"error": f"{type(e).__name__}: {e}"}
        finally:
            kernel.unload()

    # do_bench: Triton launches, with its defaults; the first call (JIT compile) is not timed.
    c.zero_()
    launch = lambda: matmul_kernel[grid](*args, **meta)  # noqa: E731
    try:
        launch()
        torch.cuda.synchronize()
        output = check(c, reference)
        started = time.perf_counter()
        times_ms = triton.testing.do_bench(launch, return_mode="all")
        wall_ms = (time.perf_counter() - started) * 1e3
    except Exception as e:  # Triton's own refusals (out of resources) are results here, not crashes
        row["do_bench"] = {"error": f"{type(e).__name__}: {e}"}
    else:
        times_us = np.asarray(times_ms) * 1e3
        row["do_bench"] = {"median_us": float(np.median(times_us)), "mean_us": float(times_us.mean()),
                           "p20_us": float(np.quantile(times_us, 0.2)), "p80_us": float(np.quantile(times_us, 0.8)),
                           "samples": len(times_us), "wall_ms": wall_ms, "output": output}
    return row


def run_raced(device: hb.Device, tensors: dict, bench_options: dict) -> list[dict]:
    """The space again as a racing tuner runs it: each config compiled (Triton's cache: fast) and
    freshly loaded, then timed with slower_than_us = the lowest CI upper bound so far; the wall
    of each bench call, ms."""
    args = matmul_args(tensors)
    raced: list[dict] = []
    for config in configs():
        row: dict = {"config": label(config)}
        bounds = [r["ci_us"][1] for r in raced if "ci_us" in r]
        race = {"slower_than_us": min(bounds)} if bounds else {}
        try:
            kernel = compile_config(config, device, args)
        except hb.Error as e:
            raced.append({**row, "error": f"{type(e).__name__}: {e}"})
            continue
        started = time.perf_counter()
        try:
            result = ht.bench_compiled(kernel, grid, **bench_options, **race)
            torch.cuda.synchronize()
            row.update(median_us=result.median_us, ci_us=list(result.ci_us), samples=result.samples,
                       stop_reason=result.stop_reason, bound_us=race.get("slower_than_us"),
                       wall_ms=(time.perf_counter() - started) * 1e3)
        except hb.Error as e:
            row["error"] = f"{type(e).__name__}: {e}"
        finally:
            kernel.unload()
        raced.append(row)
    return raced


def summarize_raced(raced: list[dict], rows: list[dict]) -> dict:
    """The raced pass against do_bench's walls of the same configs, and its pick against the full pass's."""
    ran = [r for r in raced if "median_us" in r]
    db_walls = [r["do_bench"]["wall_ms"] for r in rows if "wall_ms" in r.get("do_bench", {})]
    full = [r for r in rows if "median_us" in r.get("pyhipbench", {})]
    if not (ran and db_walls and full):
        return {}
    walls = [r["wall_ms"] for r in ran]
    return {"raced_wall_ms_per_candidate": statistics.mean(walls),
            "raced_wall_ms_median": statistics.median(walls),
            "raced_wall_ratio_do_bench_over_raced_means": statistics.mean(db_walls) / statistics.mean(walls),
            "raced_wall_ratio_of_medians": statistics.median(db_walls) / statistics.median(walls),
            "raced_stopped_slower": sum(r["stop_reason"] == "slower" for r in ran),
            "raced_pick": min(ran, key=lambda r: r["median_us"])["config"],
            "raced_pick_is_full_pick": min(ran, key=lambda r: r["median_us"])["config"]
            == min(full, key=lambda r: r["pyhipbench"]["median_us"])["config"]}


def run_autotune(device: hb.Device, tensors: dict, reference: torch.Tensor, bench_options: dict) -> dict:
    """pyhipbench.triton.autotune over the same space: its pick, and the winner launched through Triton."""
    a, b, c = tensors["a"], tensors["b"], tensors["c"]
    size = a.shape[0]
    tuned = ht.autotune(configs(), key=["M", "N", "K"], device=device, **bench_options)(matmul_kernel)
    c.zero_()
    started = time.perf_counter()
    tuned[grid](view(device, a), view(device, b), view(device, c), size, size, size,
                a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    torch.cuda.synchronize()
    (tuning,) = tuned.tunings.values()
    return {"pick": label(tuning.best), "wall_s": time.perf_counter() - started, "output": check(c, reference),
            "failed": {label(r.config): r.error for r in tuning.failed},
            "results": [{"label": label(r.config), **r.to_dict()} for r in tuning.results]}


def summarize(rows: list[dict]) -> dict:
    both = [r for r in rows if "median_us" in r.get("pyhipbench", {}) and "median_us" in r.get("do_bench", {})]
    ran_hb = [r for r in rows if "median_us" in r.get("pyhipbench", {})]
    ran_db = [r for r in rows if "median_us" in r.get("do_bench", {})]
    summary: dict = {"configs": len(rows), "pyhipbench_ran": len(ran_hb), "do_bench_ran": len(ran_db),
                     "pyhipbench_outputs_ok": sum(r["pyhipbench"]["output"]["ok"] for r in ran_hb),
                     "do_bench_outputs_ok": sum(r["do_bench"]["output"]["ok"] for r in ran_db)}
    if len(both) >= 2:
        summary["spearman"] = spearman([r["pyhipbench"]["median_us"] for r in both],
                                       [r["do_bench"]["median_us"] for r in both])
        summary["median_ratio_pyhipbench_over_do_bench"] = statistics.median(
            r["pyhipbench"]["median_us"] / r["do_bench"]["median_us"] for r in both)
    if ran_hb and ran_db:
        pick = min(ran_hb, key=lambda r: r["pyhipbench"]["median_us"])
        winner = min(ran_db, key=lambda r: r["do_bench"]["median_us"])
        summary["pyhipbench_pick"], summary["do_bench_winner"] = pick["config"], winner["config"]
        if "median_us" in pick.get("do_bench", {}):
            gap = pick["do_bench"]["median_us"] / winner["do_bench"]["median_us"] - 1
            summary["pick_slower_than_winner_by_do_bench"] = gap
            summary["pick_is_winner_or_within_noise"] = (
                pick is winner or pick["do_bench"]["median_us"] <= winner["do_bench"]["p80_us"])
        hb_walls = [r["pyhipbench"]["wall_ms"] for r in ran_hb]
        db_walls = [r["do_bench"]["wall_ms"] for r in ran_db]
        hb_wall, db_wall = statistics.mean(hb_walls), statistics.mean(db_walls)
        summary.update(pyhipbench_wall_ms_per_candidate=hb_wall, do_bench_wall_ms_per_candidate=db_wall,
                       wall_ratio_do_bench_over_pyhipbench=db_wall / hb_wall,
                       pyhipbench_wall_ms_median=statistics.median(hb_walls),
                       do_bench_wall_ms_median=statistics.median(db_walls),
                       wall_ratio_of_medians=statistics.median(db_walls) / statistics.median(hb_walls))
        if len(hb_walls) >= 2 and len(db_walls) >= 2:
            # The first candidate also pays the process's one-time set-up (libcupti, CUPTI, the clean
            # step's buffer): the mean a long tuning run converges to leaves it out.
            summary["wall_ratio_of_means_after_the_first"] = (statistics.mean(db_walls[1:])
                                                               / statistics.mean(hb_walls[1:]))
    return summary


def markdown(rows: list[dict], summary: dict, autotune: dict) -> str:
    lines = ["| config | shared B | pyhipbench µs (95 % CI) | timer / cache | wall ms | ok | "
             "do_bench median µs (p20-p80) | mean µs | wall ms | ok |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        p, d = r.get("pyhipbench", {}), r.get("do_bench", {})
        hb_cells = (f"{p['median_us']:.2f} ({p['ci_us'][0]:.2f}-{p['ci_us'][1]:.2f}) | {p['timer']} / "
                    f"{p['cache_state']} | {p['wall_ms']:.1f} | {'yes' if p['output']['ok'] else 'NO'}"
                    if "median_us" in p else f"{p.get('error', '-')[:60]} | | |")
        db_cells = (f"{d['median_us']:.2f} ({d['p20_us']:.2f}-{d['p80_us']:.2f}) | {d['mean_us']:.2f} | "
                    f"{d['wall_ms']:.1f} | {'yes' if d['output']['ok'] else 'NO'}"
                    if "median_us" in d else f"{d.get('error', '-')[:60]} | | |")
        lines.append(f"| {r['config']} | {r.get('shared_bytes', '-')} | {hb_cells} | {db_cells} |")
    lines += ["", *(f"- {k}: {v:.4g}" if isinstance(v, float) else f"- {k}: {v}" for k, v in summary.items())]
    lines += [f"- autotune (pyhipbench.triton.autotune): pick {autotune.get('pick')}, "
              f"output ok {autotune.get('output', {}).get('ok')}, {len(autotune.get('failed', {}))} failed, "
              f"wall {autotune.get('wall_s', float('nan')):.2f} s" if "pick" in autotune
              else f"- autotune: {autotune.get('error')}"]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=2048, help="M = N = K (default 2048)")
    parser.add_argument("--timer", default="auto", help="pyhipbench timer (default auto: cupti where it loads)")
    parser.add_argument("--cache", default="auto", help="pyhipbench cache state (default auto: clean-cold)")
    parser.add_argument("--out", help="write everything as JSON here")
    options = parser.parse_args()

    device = hb.Device("cuda")
    torch.manual_seed(0)
    a = torch.randn((options.size, options.size), device="cuda", dtype=torch.float16)
    b = torch.randn((options.size, options.size), device="cuda", dtype=torch.float16)
    tensors = {"a": a, "b": b, "c": torch.empty_like(a)}
    reference = torch.matmul(a, b)
    bench_options = {"timer": options.timer, "cache": options.cache}

    rows = []
    for config in configs():
        rows.append(run_config(config, device, tensors, reference, bench_options))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    summary = summarize(rows)
    raced = run_raced(device, tensors, bench_options)
    summary.update(summarize_raced(raced, rows))
    try:
        autotune = run_autotune(device, tensors, reference, bench_options)
    except hb.Error as e:
        autotune = {"error": f"{type(e).__name__}: {e}"}
    print(markdown(rows, summary, autotune))
    if options.out:
        with open(options.out, "w") as out:
            json.dump({"device": device.name, "size": options.size, "triton": triton.__version__,
                       "torch": torch.__version__, "pyhipbench": hb.__version__, "bench_options": bench_options,
                       "rows": rows, "raced": raced, "summary": summary, "autotune": autotune}, out, indent=1)


if __name__ == "__main__":
    main()
