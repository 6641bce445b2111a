"""Triton kernels on an NVIDIA GPU: compiled by Triton, timed by pyhipbench, outputs checked;
the autotune decorator picks a config and launches it through Triton."""
from __future__ import annotations

import numpy as np
import pytest

triton = pytest.importorskip("triton", reason="Triton is not installed (pip install triton)")

import pyhipbench.triton as ht

import triton_kernels as tk


def test_vector_add_output_and_time(cuda_device):
    n = 1 << 20
    rng = np.random.default_rng(0)
    x = cuda_device.array(rng.random(n, dtype=np.float32))
    y = cuda_device.array(rng.random(n, dtype=np.float32))
    out = cuda_device.array(np.zeros(n, np.float32))
    res = ht.bench(tk.add, lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),), [x, y, out, n],
                   device=cuda_device, BLOCK=1024, num_warps=4, cache="warm")
    np.testing.assert_array_equal(out.to_numpy(), x.to_numpy() + y.to_numpy())
    assert res.cache_state == "warm" and 0.5 < res.median_us < 1000


def test_matmul_with_96k_of_shared_memory(cuda_device):
    """128 x 128 x 64, 8 warps, 3 stages: 96 KiB of dynamic shared memory, above the 48 KiB
    default, so bench() raises the kernel's limit (the opt-in attribute) before launching."""
    m = n = k = 512
    rng = np.random.default_rng(1)
    a_host = (rng.standard_normal((m, k)) * 0.1).astype(np.float16)
    b_host = (rng.standard_normal((k, n)) * 0.1).astype(np.float16)
    a, b = cuda_device.array(a_host), cuda_device.array(b_host)
    c = cuda_device.array(np.zeros((m, n), np.float16))
    kernel = ht.compile(tk.matmul, [a, b, c, m, n, k, k, 1, n, 1, n, 1], cuda_device,
                        BM=128, BN=128, BK=64, num_warps=8, num_stages=3)
    assert kernel.shared_bytes == 98304 and kernel.block == (256, 1, 1)
    try:
        res = ht.bench_compiled(kernel, (m // 128, n // 128), cache="warm")
    finally:
        kernel.unload()
    expected = a_host.astype(np.float32) @ b_host.astype(np.float32)
    np.testing.assert_allclose(c.to_numpy().astype(np.float32), expected, atol=1e-2, rtol=1e-2)
    assert res.config.shared_bytes == 98304 and res.median_us > 0


def test_autotune_launches_the_winner_through_triton(cuda_device):
    pytest.importorskip("torch", reason="Triton launches on torch's current stream: it needs torch")
    configs = [triton.Config({"BLOCK": block}, num_warps=warps) for block, warps in ((256, 2), (1024, 4), (4096, 8))]
    tuned = ht.autotune(configs, key=["n"], device=cuda_device, max_time_s=0.2)(tk.add)
    n = 1 << 22
    x = cuda_device.array(np.full(n, 2.0, np.float32))
    y = cuda_device.array(np.full(n, 3.0, np.float32))
    out = cuda_device.array(np.zeros(n, np.float32))
    tuned[lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),)](x, y, out, n)
    cuda_device.synchronize()
    np.testing.assert_array_equal(out.to_numpy(), np.full(n, 5.0, np.float32))
    (tuning,) = tuned.tunings.values()
    assert not tuning.failed and tuning.best in configs
    assert tuning.best is min(tuning.results, key=lambda r: r.median_us).config


def test_hooked_configs_are_timed_through_the_callable_path(cuda_device, tmp_path, monkeypatch):
    """Config.pre_hook and autotune's post_hook run around Triton's own launch each sample; the others
    go through the C++ loop; every config compiled ahead in the pool (a fresh Triton cache)."""
    torch = pytest.importorskip("torch", reason="the hooks zero a torch tensor")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    calls = {"pre": 0, "post": 0}

    def pre(args):
        calls["pre"] += 1
        args["out"].zero_()

    def post(args, exception):
        assert exception is None
        calls["post"] += 1
    configs = [triton.Config({"BLOCK": 1024}, num_warps=4, pre_hook=pre), triton.Config({"BLOCK": 256}, num_warps=2)]
    tuned = ht.autotune(configs, key=["n"], device=cuda_device, max_time_s=0.2, post_hook=post)(tk.add)
    n = 1 << 20
    x, y = torch.full((n,), 2.0, device="cuda"), torch.full((n,), 3.0, device="cuda")
    out = torch.zeros(n, device="cuda")
    tuning = tuned.tune(lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),), x, y, out, n)
    assert not tuning.failed and [r.compiled for r in tuning.results] == ["pool", "pool"]
    hooked, plain = tuning.results
    assert hooked.note.startswith("timed through the callable path") and hooked.result.ran == "call"
    # autotune's post_hook makes every config a hooked one, as in triton.autotune
    assert plain.note.startswith("timed through the callable path")
    assert calls["pre"] >= hooked.result.samples and calls["post"] >= hooked.result.samples + plain.result.samples
    torch.cuda.synchronize()
    assert torch.equal(out, torch.full((n,), 5.0, device="cuda"))


def test_cache_results_on_the_gpu(cuda_device, tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    configs = [triton.Config({"BLOCK": block}, num_warps=warps) for block, warps in ((256, 2), (1024, 4))]
    n = 1 << 22
    x = cuda_device.array(np.full(n, 2.0, np.float32))
    y = cuda_device.array(np.full(n, 3.0, np.float32))
    out = cuda_device.array(np.zeros(n, np.float32))
    grid = lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),)  # noqa: E731
    first = ht.autotune(configs, key=["n"], device=cuda_device, max_time_s=0.2, cache_results=True)(tk.add)
    measured = first.tune(grid, x, y, out, n)
    read = ht.autotune(configs, key=["n"], device=cuda_device, max_time_s=0.2, cache_results=True)(tk.add)
    again = read.tune(grid, x, y, out, n)
    assert again.from_cache and again.best == measured.best and again.wall_s < measured.wall_s
