"""Triton kernels the Triton tests compile (a @triton.jit function must live in a file)."""
import triton
import triton.language as tl


@triton.jit
def add(x, y, out, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out + offsets, tl.load(x + offsets, mask=mask) + tl.load(y + offsets, mask=mask), mask=mask)


@triton.jit
def scale(x, out, n, factor, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out + offsets, tl.load(x + offsets, mask=mask) * factor, mask=mask)


@triton.jit
def matmul(a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        x = tl.load(a + rm[:, None] * stride_am + (k * BK + rk)[None, :] * stride_ak)
        y = tl.load(b + (k * BK + rk)[:, None] * stride_bk + rn[None, :] * stride_bn)
        acc += tl.dot(x, y)
    tl.store(c + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc.to(tl.float16))


@triton.jit
def descriptor_copy(x, y, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """Device-side tensor descriptors: on sm_90 Triton asks for global scratch to build them in."""
    source = tl.make_tensor_descriptor(x, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    target = tl.make_tensor_descriptor(y, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    row = tl.program_id(0) * BM
    target.store([row, 0], source.load([row, 0]))


@triton.jit
def unrolled(x, out, STEPS: tl.constexpr):
    """Its compile time grows with STEPS (the loop is unrolled while Triton builds the IR)."""
    offsets = tl.arange(0, 16)
    acc = tl.load(x + offsets)
    for i in tl.static_range(STEPS):
        acc = acc * 1.0001 + i
    tl.store(out + offsets, acc)


@triton.jit
def scale_by_default(x, out, n, factor=2.0, BLOCK: tl.constexpr = 64):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out + offsets, tl.load(x + offsets, mask=mask) * factor, mask=mask)


def add_defined_in_a_function():
    """`add` defined inside a function (its qualified name holds <locals>): a compile worker cannot import it."""
    @triton.jit
    def local_add(x, y, out, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(out + offsets, tl.load(x + offsets, mask=mask) + tl.load(y + offsets, mask=mask), mask=mask)
    return local_add
