"""Tune a Triton fp16 matmul with pyhipbench.triton.autotune, torch tensors as its arguments.

Five configs (tile M x N x K, warps, pipeline stages), three of them asking for more than
48 KB of shared memory (pyhipbench raises the kernel's limit before launching them), are each
compiled by Triton and timed by pyhipbench's C++ loop; the torch tensors go to the kernel
through DLPack, nothing copied. It prints, per config: the shared memory Triton compiled it
for, the median and its 95 % CI (µs), the timer, the cache state and the samples taken (or the
error of a config that could not run), then the winner. The autotuned kernel then launches the
winner through Triton, and its output is checked against torch.matmul (atol = rtol = 1e-2).

    python examples/triton_matmul_tune.py [--size 2048] [--cache clean-cold|dirty-cold|warm]

Needs an NVIDIA GPU, torch with CUDA, triton 3.x and cuda-bindings (pip install ".[cuda,triton]"
torch). Without torch or a GPU it says so and exits with status 1.
"""
from __future__ import annotations

import argparse
import sys

try:
    import triton
    import triton.language as tl
except ImportError as error:
    sys.exit(f"triton_matmul_tune.py needs triton ({error}): pip install triton")

import pyhipbench as hb
import pyhipbench.triton as ht

ATOL = RTOL = 1e-2  # fp16 output, fp32 accumulation in a different order than cuBLAS

# BLOCK_M, BLOCK_N, BLOCK_K, warps, stages. Triton's shared memory on sm_90 is
# stages x (BLOCK_M + BLOCK_N) x BLOCK_K x 2 bytes: 24, 48, 64, 96 and 144 KB.
CONFIGS = [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk}, num_warps=warps, num_stages=stages)
           for bm, bn, bk, warps, stages in [(64, 64, 32, 4, 3), (128, 64, 32, 4, 4), (128, 128, 32, 4, 4),
                                             (128, 128, 64, 8, 3), (128, 256, 64, 8, 3)]]


@triton.jit
def matmul_kernel(a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """C = A @ B, fp16 in and out, fp32 accumulation; one BLOCK_M x BLOCK_N tile of C per program."""
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_tile = a + (rm % M)[:, None] * stride_am + rk[None, :] * stride_ak
    b_tile = b + rk[:, None] * stride_bk + (rn % N)[None, :] * stride_bn
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        left = K - k * BLOCK_K
        accumulator = tl.dot(tl.load(a_tile, mask=rk[None, :] < left, other=0.0),
                             tl.load(b_tile, mask=rk[:, None] < left, other=0.0), accumulator)
        a_tile += BLOCK_K * stride_ak
        b_tile += BLOCK_K * stride_bk
    tl.store(c + rm[:, None] * stride_cm + rn[None, :] * stride_cn, accumulator.to(tl.float16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def grid(meta: dict) -> tuple[int, int]:
    return triton.cdiv(meta["M"], meta["BLOCK_M"]), triton.cdiv(meta["N"], meta["BLOCK_N"])


def matmul_args(a, b, c) -> list:
    """The kernel's arguments for C-contiguous a (M x K), b (K x N), c (M x N): torch tensors or pyhipbench arrays."""
    (m, k), n = a.shape, b.shape[1]
    return [a, b, c, m, n, k, k, 1, n, 1, n, 1]


def label(config: triton.Config) -> str:
    meta = config.kwargs
    return f"{meta['BLOCK_M']}x{meta['BLOCK_N']}x{meta['BLOCK_K']} w{config.num_warps} s{config.num_stages}"


def tune(device: hb.Device, a, b, c, *, check_output: bool, **bench_options) -> tuple[ht.Tuning, bool | None]:
    """Times every config for c = a @ b on `device` (pyhipbench._measure.bench's `bench_options` for each).

    `check_output`: launch the winner through Triton and compare c with torch.matmul(a, b)
    (a, b, c torch tensors on the GPU); False where kernels do not run (the tests' fake driver).
    Returns the Tuning and whether the winner's output matched (None: not checked).
    """
    tuner = ht.autotune(CONFIGS, key=["M", "N", "K"], device=device, **bench_options)(matmul_kernel)
    args = matmul_args(a, b, c)
    tuning = tuner.tune(grid, *args)
    if not check_output:
        return tuning, None
    import torch
    c.zero_()
    tuner[grid](*args)  # the tuned key: Triton launches the winner, no tuning again
    torch.cuda.synchronize()
    return tuning, bool(torch.allclose(c, torch.matmul(a, b), atol=ATOL, rtol=RTOL))


def report(tuning: ht.Tuning) -> list[str]:
    """One line per config (shared KB, median and CI in µs, timer, cache, samples; or its error), then the winner."""
    lines = []
    for row in tuning.results:
        if row.result is None:
            lines.append(f"{label(row.config):18} failed: {row.error}")
            continue
        r = row.result
        low, high = r.ci_us
        lines.append(f"{label(row.config):18} {r.config.shared_bytes / 1024:5.0f} KB shared  "
                     f"median {r.median_us:9.2f} µs (95 % CI {low:.2f}-{high:.2f})  "
                     f"timer {r.timer}, cache {r.cache_state}, {r.samples} samples")
    best = next(row.result for row in tuning.results if row.config is tuning.best)
    lines.append(f"winner: {label(tuning.best)}, {best.median_us:.2f} µs")
    return lines


def positive(text: str) -> int:
    """An argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected an integer >= 1")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=positive, default=2048, help="M = N = K (default 2048)")
    parser.add_argument("--cache", default="clean-cold", choices=["clean-cold", "dirty-cold", "warm"])
    options = parser.parse_args(argv)
    try:
        import torch
    except ImportError as error:
        sys.exit(f"triton_matmul_tune.py needs torch with CUDA ({error}): pip install torch")
    if not torch.cuda.is_available():
        sys.exit(f"triton_matmul_tune.py needs an NVIDIA GPU: torch {torch.__version__} sees no CUDA device")
    size = options.size
    a = torch.randn(size, size, dtype=torch.float16, device="cuda") * 0.1
    b = torch.randn(size, size, dtype=torch.float16, device="cuda") * 0.1
    c = torch.empty(size, size, dtype=torch.float16, device="cuda")
    try:  # no usable GPU for pyhipbench, or no config that ran (each one's error is in the message)
        device = hb.Device("cuda", torch.cuda.current_device())
        print(f"{size}^3 fp16 matmul on {device.properties.name}, {len(CONFIGS)} configs, cache {options.cache}")
        tuning, matches = tune(device, a, b, c, check_output=True, cache=options.cache)
    except hb.Error as error:
        sys.exit(f"triton_matmul_tune.py: {type(error).__name__}: {error}")
    print("\n".join(report(tuning)))
    print(f"winner launched through Triton: output {'matches' if matches else 'DIFFERS FROM'} torch.matmul "
          f"(atol = rtol = {ATOL})")
    return 0 if matches else 1


if __name__ == "__main__":
    sys.exit(main())
