"""A split-K fp16 GEMM in Triton whose K slices add into an fp32 C by atomics (C must start at zero: the
caller zeroes it, or autotune's reset_to_zero does), and a 24-config space over its tiles, split count, warps
and stages. A module of its own, so the compile pool's workers import it."""
import itertools

import triton
import triton.language as tl


@triton.jit
def splitk_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                         stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                         SPLIT_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr):
    """C += A @ B over this program's K slices (every SPLIT_K-th BLOCK_K block, from program_id(1)); fp16 in,
    fp32 accumulation and output; programs grouped along M for L2 reuse, as triton_matmul.py's kernel."""
    pid = tl.program_id(axis=0)
    pid_k = tl.program_id(axis=1)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    first_pid_m = (pid // num_pid_in_group) * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = pid_k * BLOCK_K + tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K * SPLIT_K)):
        remaining = K - k * BLOCK_K * SPLIT_K
        a = tl.load(a_ptrs, mask=offs_k[None, :] < remaining, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < remaining, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_K * SPLIT_K * stride_ak
        b_ptrs += BLOCK_K * SPLIT_K * stride_bk
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    # relaxed: the slices only add up; nothing reads C until the kernel has ended
    tl.atomic_add(c_ptrs, accumulator, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N), sem="relaxed")


def grid(meta: dict) -> tuple[int, int]:
    return (triton.cdiv(meta["M"], meta["BLOCK_M"]) * triton.cdiv(meta["N"], meta["BLOCK_N"]), meta["SPLIT_K"])


def configs() -> list[triton.Config]:
    """24 configs: (BLOCK_M, BLOCK_N) x SPLIT_K x (num_warps, num_stages), BLOCK_K 64, GROUP_SIZE_M 8."""
    return [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": 64, "SPLIT_K": split, "GROUP_SIZE_M": 8},
                          num_warps=warps, num_stages=stages)
            for (bm, bn), split, (warps, stages) in itertools.product(((64, 64), (64, 128), (128, 64), (128, 128)),
                                                                     (1, 2, 4), ((4, 3), (8, 4)))]
