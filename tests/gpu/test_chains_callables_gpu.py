"""Chains and callables on a real GPU: CUPTI correlation of torch's and Triton's launches, graph replay."""
from __future__ import annotations

import numpy as np
import pytest

import pyhipbench as hb

torch = pytest.importorskip("torch", reason="the callable tests time torch ops")


@pytest.fixture(scope="module")
def gpu(cuda_device):
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    return cuda_device


def test_a_copy_chain_sums_its_kernels_and_verifies(gpu):
    copy = gpu.bundled_kernel("copy")
    n = 1 << 20
    src = gpu.array(np.arange(n, dtype=np.float32))
    mid, dst = gpu.empty_like(src), gpu.empty_like(src)
    chain = [hb.Launch(copy, n // 256, 256, [src, mid, hb.int64(n)]),
             hb.Launch(copy, n // 256, 256, [mid, dst, hb.int64(n)])]
    res = hb.bench_chain(chain, expect={1: src.to_numpy()})
    assert res.timer == "cupti" and res.verified and res.ran == "chain"
    kernels = [k.median_us for k in res.kernels]
    assert all(k > 0 for k in kernels)
    assert res.median_us == pytest.approx(sum(kernels), rel=0.05)
    assert float(np.median(res.span_us)) >= res.median_us * 0.95  # the span holds both kernels and the gap


def test_a_torch_op_is_attributed_its_kernels_and_replayed_as_a_graph(gpu):
    x = torch.randn(1024, 1024, device="cuda")
    w = torch.randn(1024, 1024, device="cuda")

    def op():
        torch.relu(x @ w)
    replayed = hb.bench_callable(op, cache="warm")
    called = hb.bench_callable(op, cache="warm", graph=False)
    assert replayed.ran == "graph" and called.ran == "call"
    assert len([k for k in replayed.kernels if k.kind == "kernel"]) >= 2
    assert replayed.median_us == pytest.approx(called.median_us, rel=0.1)
    assert replayed.host_us_per_kernel < called.host_us_per_kernel


def test_triton_autotune_takes_pyhipbench_do_bench(gpu):
    triton = pytest.importorskip("triton")
    import triton.language as tl

    @triton.autotune([triton.Config({"BLOCK": b}) for b in (128, 256, 512, 1024)], key=["n"],
                     do_bench=hb.do_bench)
    @triton.jit
    def add(x, y, out, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out + i, tl.load(x + i, mask=i < n) + tl.load(y + i, mask=i < n), mask=i < n)

    n = 1 << 22
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    add[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
    torch.cuda.synchronize()
    assert torch.allclose(out, x + y) and add.best_config is not None
    assert all(np.isfinite(t[0]) for t in add.configs_timings.values())
