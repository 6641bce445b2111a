"""A flash-attention forward kernel in Triton (fp16 in and out, fp32 softmax statistics), and a 36-config
space over its tiles, warps and pipeline stages: bench/compile_ahead.py tunes it. A module of its own, so
the compile pool's workers import it."""
import itertools

import triton
import triton.language as tl


@triton.jit
def attention_forward(Q, K, V, Out, sm_scale, stride_z, stride_h, stride_m, H, N_CTX,
                      HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Out = softmax(Q Kᵀ · sm_scale) V for one BLOCK_M block of queries of one (batch, head); the online
    softmax in base 2. Q, K, V and Out share one contiguous [Z, H, N_CTX, HEAD_DIM] layout."""
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    base = (off_hz // H) * stride_z + (off_hz % H) * stride_h
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + base + offs_m[:, None] * stride_m + offs_d[None, :])
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    qk_scale = sm_scale * 1.44269504  # log2(e): exp(x) = exp2(x log2 e)
    for start_n in range(0, N_CTX, BLOCK_N):
        k = tl.load(K + base + (start_n + offs_n)[None, :] * stride_m + offs_d[:, None])
        qk = tl.dot(q, k) * qk_scale
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + base + (start_n + offs_n)[:, None] * stride_m + offs_d[None, :])
        acc = tl.dot(p.to(tl.float16), v, acc * alpha[:, None])
        m_i = m_new
    tl.store(Out + base + offs_m[:, None] * stride_m + offs_d[None, :], (acc / l_i[:, None]).to(tl.float16))


def configs() -> list[triton.Config]:
    """36 configs: BLOCK_M x BLOCK_N x num_warps x num_stages."""
    return [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=warps, num_stages=stages)
            for bm, bn, warps, stages in itertools.product((64, 128), (32, 64, 128), (4, 8), (2, 3, 4))]

