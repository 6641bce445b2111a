"""Chains, callables and Triton's autotuner with pyhipbench.do_bench, beside independent readings, in one run.

  chains      a two-kernel split-K GEMM (partial products into a workspace, then a
              reduction) and a zero-init + atomic GEMM pair, CUDA C++ (NVRTC), 512 x 512 x
              4096 fp32: bench_chain's cupti chain time (the sum of its kernels) against
              torch.profiler's kernel records of the same chain's launches (the events
              timer's), in every cache state
  callables   torch ops that launch several kernels (addmm + gelu; scaled_dot_product_attention
              on the math path), warm: bench_callable (graph replay where it captures, and
              called) against torch.profiler's per-call sum of their kernels over plain calls;
              the host cost per sample of the replay
  replay-host the host µs per sample of a one-kernel op's graph replayed from the core's loop
              (cupti and events timers), called, and torch's CUDAGraph.replay() in a Python loop
  autotune    a 24-config Triton matmul (bench/triton_matmul.py's kernel and space), compile
              cache warm: triton.autotune with Triton's default do_bench, with
              do_bench=pyhipbench.do_bench, and a long reference (do_bench, rep=400 ms, per
              config): tuning wall times and picks, and whether pyhipbench's pick is the
              reference's winner or within its noise (its reference median at most the
              winner's p80)

Each reading runs in a process of its own (CUPTI takes one subscriber). Writes
chains_callables.json and prints markdown tables.

    python bench/chains_callables.py [--out DIR] [--parts chains,callables,replay-host,autotune]

Needs an NVIDIA GPU, torch, triton 3.x, cuda-bindings and NVRTC.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

M = N = 512
K = 4096
SPLITS = 8
TILE = 16
CACHES = ("warm", "dirty-cold", "clean-cold")
ITERATIONS = 300

SOURCE = r"""
#define TILE 16
// A[m, slice s of K] @ B[slice s of K, n] for this thread's (m, n): slice s is blockIdx.z, of K / S.
__device__ float slice_product(const float* A, const float* B, int M, int N, int K, int S) {
  __shared__ float a[TILE][TILE], b[TILE][TILE];
  const int n = blockIdx.x * TILE + threadIdx.x, m = blockIdx.y * TILE + threadIdx.y;
  const int per = K / S, k0 = blockIdx.z * per;
  float acc = 0.f;
  for (int k = k0; k < k0 + per; k += TILE) {
    a[threadIdx.y][threadIdx.x] = A[m * K + k + threadIdx.x];
    b[threadIdx.y][threadIdx.x] = B[(k + threadIdx.y) * N + n];
    __syncthreads();
    for (int i = 0; i < TILE; ++i) acc += a[threadIdx.y][i] * b[i][threadIdx.x];
    __syncthreads();
  }
  return acc;
}
// Workspace[s] = the slice-s product.
extern "C" __global__ void splitk_partial(const float* A, const float* B, float* W, int M, int N, int K, int S) {
  const int n = blockIdx.x * TILE + threadIdx.x, m = blockIdx.y * TILE + threadIdx.y;
  W[((size_t)blockIdx.z * M + m) * N + n] = slice_product(A, B, M, N, K, S);
}
extern "C" __global__ void splitk_reduce(const float* W, float* C, int M, int N, int S) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= M * N) return;
  float sum = 0.f;
  for (int s = 0; s < S; ++s) sum += W[(size_t)s * M * N + i];
  C[i] = sum;
}
extern "C" __global__ void zero(float* C, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) C[i] = 0.f;
}
// C += the slice-s product, by atomics: C must start at zero.
extern "C" __global__ void atomic_gemm(const float* A, const float* B, float* C, int M, int N, int K, int S) {
  const int n = blockIdx.x * TILE + threadIdx.x, m = blockIdx.y * TILE + threadIdx.y;
  atomicAdd(&C[m * N + n], slice_product(A, B, M, N, K, S));
}
"""


def chains_setup():
    import pyhipbench as hb
    from pyhipbench.codegen.source import compile_source
    device = hb.Device("cuda")
    module = device.load_module(compile_source(device, SOURCE).data)
    rng = np.random.default_rng(0)
    a = device.array(rng.standard_normal((M, K), dtype=np.float32))
    b = device.array(rng.standard_normal((K, N), dtype=np.float32))
    work, c = device.empty((SPLITS, M, N), np.float32), device.empty((M, N), np.float32)
    tiles = (N // TILE, M // TILE, SPLITS)
    sizes = [hb.int32(M), hb.int32(N), hb.int32(K), hb.int32(SPLITS)]
    splitk = [hb.Launch(module.kernel("splitk_partial"), tiles, (TILE, TILE), [a, b, work, *sizes]),
              hb.Launch(module.kernel("splitk_reduce"), (M * N // 256,), (256,),
                        [work, c, hb.int32(M), hb.int32(N), hb.int32(SPLITS)])]
    atomic = [hb.Launch(module.kernel("zero"), (M * N // 256,), (256,), [c, hb.int32(M * N)]),
              hb.Launch(module.kernel("atomic_gemm"), tiles, (TILE, TILE), [a, b, c, *sizes])]
    reference = a.to_numpy() @ b.to_numpy()
    return {"split-K": splitk, "zero + atomic": atomic}, reference


def work_chains_pyhipbench() -> list[dict]:
    import pyhipbench as hb
    chains, reference = chains_setup()
    rows = []
    for name, chain in chains.items():
        for cache in CACHES:
            res = hb.bench_chain(chain, timer="cupti", cache=cache, expect={1: reference} if name == "split-K" else
                                 {2: reference}, atol=1e-2, rtol=1e-3)
            rows.append({"part": "chains", "case": name, "cache": cache, "reading": "pyhipbench cupti",
                         "median_us": res.median_us, "ci_us": list(res.ci_us), "samples": res.samples,
                         "kernels_us": [k.median_us for k in res.kernels],
                         "span_us": float(np.median(res.span_us)), "wall_s": res.wall_s})
    return rows


def work_chains_profiler() -> list[dict]:
    import torch
    from torch.profiler import ProfilerActivity, profile

    import pyhipbench as hb
    torch.cuda.init()
    chains, _ = chains_setup()
    rows = []
    for name, chain in chains.items():
        names = [launch.kernel.name for launch in chain]
        for cache in CACHES:
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                hb.bench_chain(chain, timer="events", cache=cache, iterations=ITERATIONS, warmup=20)
                torch.cuda.synchronize()
            kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
            per_kernel = [np.array([e.time_range.elapsed_us() for e in kernels if e.name == n][-ITERATIONS:])
                          for n in names]
            sums = np.sum(per_kernel, axis=0)
            rows.append({"part": "chains", "case": name, "cache": cache, "reading": "torch.profiler (CUPTI)",
                         "median_us": float(np.median(sums)), "kernels_us": [float(np.median(k)) for k in per_kernel],
                         "samples": len(sums)})
    return rows


def torch_ops():
    import torch
    import torch.nn.functional as F
    torch.manual_seed(0)
    x = torch.randn(2048, 4096, device="cuda", dtype=torch.float16)
    w = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    bias = torch.randn(4096, device="cuda", dtype=torch.float16)
    q, k, v = (torch.randn(8, 16, 1024, 64, device="cuda", dtype=torch.float16) for _ in range(3))

    def addmm_gelu():
        F.gelu(torch.addmm(bias, x, w))

    def sdpa_math():
        with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
            F.scaled_dot_product_attention(q, k, v)
    return {"addmm + gelu": addmm_gelu, "sdpa (math)": sdpa_math}


def work_callables_pyhipbench() -> list[dict]:
    import torch

    import pyhipbench as hb
    torch.cuda.init()
    rows = []
    for name, fn in torch_ops().items():
        for graph in ("auto", False):
            res = hb.bench_callable(fn, cache="warm", graph=graph)
            rows.append({"part": "callables", "case": name, "reading": f"bench_callable ({res.ran})",
                         "median_us": res.median_us, "mean_us": res.stats.mean, "ci_us": list(res.ci_us),
                         "samples": res.samples,
                         "host_us_per_sample": res.host_us_per_kernel, "call_note": res.call_note,
                         "kernels": [[k.kind, k.name[:60], k.median_us] for k in res.kernels],
                         "wall_s": res.wall_s})
    return rows


def work_callables_profiler() -> list[dict]:
    import torch
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.init()
    rows = []
    for name, fn in torch_ops().items():
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(ITERATIONS):
                fn()
            torch.cuda.synchronize()
        kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        per_call = len(kernels) / ITERATIONS
        rows.append({"part": "callables", "case": name, "reading": "torch.profiler (CUPTI)",
                     "mean_us": sum(e.time_range.elapsed_us() for e in kernels) / ITERATIONS,
                     "median_us": float("nan"), "kernels_per_call": per_call, "samples": ITERATIONS})
    return rows


def work_replay_host() -> list[dict]:
    """Host µs per sample of a one-kernel torch op (a 4 KiB add): its graph replayed by the core's loop
    (cupti and events timers), called by it, and torch's own CUDAGraph.replay() in a Python loop."""
    import torch

    import pyhipbench as hb
    torch.cuda.init()
    x = torch.zeros(1024, device="cuda")

    def op():
        x.add_(1)
    rows = []
    for timer in ("cupti", "events"):
        for graph in ("auto", False):
            res = hb.bench_callable(op, cache="warm", graph=graph, timer=timer, iterations=2000, warmup=100)
            rows.append({"part": "replay-host", "case": "x.add_(1)", "reading": f"{timer}, {res.ran}",
                         "median_us": res.median_us, "host_us_per_sample": res.host_us_per_kernel,
                         "samples": res.samples})
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        op()
    for _ in range(100):
        g.replay()
    torch.cuda.synchronize()
    started = time.perf_counter()
    for _ in range(2000):
        g.replay()
    host_us = (time.perf_counter() - started) * 1e6 / 2000
    torch.cuda.synchronize()
    rows.append({"part": "replay-host", "case": "x.add_(1)", "reading": "torch CUDAGraph.replay() loop",
                 "median_us": float("nan"), "host_us_per_sample": host_us, "samples": 2000})
    return rows


def work_autotune() -> list[dict]:
    import torch
    import triton
    import triton.testing

    import pyhipbench as hb
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from triton_matmul import configs, matmul_kernel  # the 24-config space and Triton's tutorial kernel
    torch.cuda.init()
    size = 2048
    a = torch.randn(size, size, device="cuda", dtype=torch.float16)
    b = torch.randn(size, size, device="cuda", dtype=torch.float16)
    c = torch.empty(size, size, device="cuda", dtype=torch.float16)
    space = configs()

    def grid(meta):
        return (triton.cdiv(size, meta["BLOCK_M"]) * triton.cdiv(size, meta["BLOCK_N"]),)

    def launch(kernel, **meta):
        kernel[grid](a, b, c, size, size, size, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                     c.stride(1), **meta)

    def tune(do_bench) -> tuple[float, object]:
        kernel = triton.autotune(space, key=["M", "N", "K"], do_bench=do_bench)(matmul_kernel)
        started = time.perf_counter()
        launch(kernel)
        torch.cuda.synchronize()
        return time.perf_counter() - started, kernel.best_config

    tune(None)  # compile every config once: the cache is warm from here on
    rows = []
    wall_triton, best_triton = tune(None)
    wall_ours, best_ours = tune(hb.do_bench)
    reference = {}
    for config in space:  # the long reference: do_bench with rep=400 ms on each config's launch
        median, p80 = triton.testing.do_bench(lambda m=config.all_kwargs(): launch(matmul_kernel, **m), rep=400,
                                              quantiles=(0.5, 0.8))
        reference[str(config)] = (median, p80)
    winner = min(reference, key=lambda key: reference[key][0])
    ours_median = reference[str(best_ours)][0]
    rows.append({"part": "autotune", "configs": len(space), "wall_s_triton_do_bench": wall_triton,
                 "wall_s_pyhipbench_do_bench": wall_ours, "speedup": wall_triton / wall_ours,
                 "pick_triton": str(best_triton), "pick_pyhipbench": str(best_ours), "reference_winner": winner,
                 "reference_ms": {k: v[0] for k, v in reference.items()},
                 "pyhipbench_pick_within_noise": ours_median <= reference[winner][1],
                 "pyhipbench_pick_over_winner": ours_median / reference[winner][0]})
    return rows


WORKERS = {"chains-pyhipbench": work_chains_pyhipbench, "chains-profiler": work_chains_profiler,
           "callables-pyhipbench": work_callables_pyhipbench, "callables-profiler": work_callables_profiler,
           "replay-host": work_replay_host, "autotune": work_autotune}
PARTS = {"chains": ["chains-pyhipbench", "chains-profiler"],
         "callables": ["callables-pyhipbench", "callables-profiler"], "replay-host": ["replay-host"],
         "autotune": ["autotune"]}


def in_child(kind: str) -> list[dict]:
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", kind], capture_output=True,
                          text=True, timeout=900)
    if done.returncode != 0:
        return [{"part": kind, "error": done.stderr.strip()[-3000:]}]
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(rows: list[dict]) -> str:
    lines = ["| part | case | cache | reading | median µs | detail |", "|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['part']} | error | | | | {r['error'][-300:]!r} |")
            continue
        if r["part"] == "autotune":
            lines.append(f"| autotune | {r['configs']} configs | | "
                         f"triton do_bench {r['wall_s_triton_do_bench']:.2f} s, "
                         f"pyhipbench.do_bench {r['wall_s_pyhipbench_do_bench']:.2f} s ({r['speedup']:.1f}x) | | "
                         f"pick {r['pick_pyhipbench']} ({r['pyhipbench_pick_over_winner']:.3f}x the reference "
                         f"winner, within noise: {r['pyhipbench_pick_within_noise']}); Triton's pick "
                         f"{r['pick_triton']}; reference winner {r['reference_winner']} |")
            continue
        detail = {k: r[k] for k in ("mean_us", "kernels_us", "span_us", "host_us_per_sample", "kernels_per_call",
                                    "call_note", "samples") if k in r}
        lines.append(f"| {r['part']} | {r['case']} | {r.get('cache', 'warm')} | {r['reading']} | "
                     f"{r['median_us']:.3f} | {json.dumps(detail)} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=Path("."))
    parser.add_argument("--parts", default="chains,callables,replay-host,autotune")
    options = parser.parse_args()
    if options.worker:
        print(json.dumps(WORKERS[options.worker]()))
        return
    rows = []
    for part in options.parts.split(","):
        for kind in PARTS[part]:
            rows += in_child(kind)
    options.out.mkdir(parents=True, exist_ok=True)
    (options.out / "chains_callables.json").write_text(json.dumps(rows, indent=1))
    print(table(rows))


if __name__ == "__main__":
    main()
