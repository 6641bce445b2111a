"""A fused bias add and GELU (erf form, as torch.nn.functional.gelu) in Triton over an fp16 [rows, cols]
activation, and a 16-config space over its block size and warps. A module of its own, so the compile pool's
workers import it."""
import itertools

import triton
import triton.language as tl


@triton.jit
def bias_gelu_kernel(x_ptr, bias_ptr, out_ptr, n_elements, n_cols, BLOCK: tl.constexpr):
    """out = gelu(x + bias[col]) for one BLOCK of a contiguous row-major x; fp16 in and out, fp32 inside."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    bias = tl.load(bias_ptr + offs % n_cols, mask=mask, other=0.0).to(tl.float32)
    y = x + bias
    tl.store(out_ptr + offs, (0.5 * y * (1.0 + tl.erf(y * 0.7071067811865476))).to(tl.float16), mask=mask)


def grid(meta: dict) -> tuple[int]:
    return (triton.cdiv(meta["n_elements"], meta["BLOCK"]),)


def configs() -> list[triton.Config]:
    """16 configs: BLOCK x num_warps."""
    return [triton.Config({"BLOCK": block}, num_warps=warps)
            for block, warps in itertools.product((512, 1024, 2048, 4096), (1, 2, 4, 8))]
