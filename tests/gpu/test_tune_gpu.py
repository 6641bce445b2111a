"""tune() on an NVIDIA GPU: kernel variants, a chain and a callable raced, the ties held, the fastest picked."""
from __future__ import annotations

from importlib import resources

import numpy as np
import pytest

import pyhipbench as hb

KERNELS = resources.files("pyhipbench") / "kernels"
N = 1 << 24  # 64 MiB per buffer


@pytest.fixture(scope="module")
def copy(cuda_device):
    return cuda_device.load_module(KERNELS / "copy.ptx").kernel("copy")


def test_tune_races_copy_variants_and_picks_one_as_fast_as_a_long_reading_of_each(cuda_device, copy):
    src = cuda_device.array(np.random.default_rng(0).random(N, dtype=np.float32))
    dst = cuda_device.array(np.zeros(N, np.float32))
    args = [src, dst, hb.int64(N)]
    # One block per 256 elements at 256 threads; fewer blocks make each thread loop (a slower copy).
    variants = {f"grid {g}": hb.Launch(copy, g, 256, args) for g in (N // 256, 1024, 64, 16)}
    tuning = hb.tune(variants, cache="warm")
    assert not tuning.failed and tuning.best.result.timer == "cupti", tuning.summary()
    # Each after the first races the best so far; the 64- and 16-block copies, 7x and 25x slower, are clear
    # losers: every sample of their 3-sample warm-up chunk over 1.5 times the bound, they stop there.
    first, *later = tuning.results
    assert first.result.slower_than_us is None and all(r.result.slower_than_us for r in later), tuning.summary()
    assert [(r.result.samples, r.result.warmup, r.result.stop_reason) for r in later[-2:]] == [(3, 0, "slower")] * 2, \
        tuning.summary()
    long = {label: hb.bench(copy, launch.grid, 256, args, cache="warm", precision=0.005).median_us
            for label, launch in variants.items()}
    assert long[tuning.best.label] <= min(long.values()) * 1.03, (tuning.summary(), long)
    np.testing.assert_array_equal(dst.to_numpy(), src.to_numpy())


def test_tune_takes_a_callable_beside_launches(cuda_device, copy):
    torch = pytest.importorskip("torch")
    src = cuda_device.array(np.ones(N, np.float32))
    args = [src, cuda_device.empty_like(src), hb.int64(N)]
    x = torch.ones(N, device="cuda")
    y = torch.empty_like(x)

    def three_copies() -> None:  # three kernels, each as much work as the launch's one
        for _ in range(3):
            y.copy_(x)

    # events: a callable's cupti trace cannot subscribe after torch.profiler ran in this process (as other GPU
    # tests here do).
    tuning = hb.tune({"kernel": hb.Launch(copy, N // 256, 256, args), "three copies": three_copies},
                     device=cuda_device, cache="warm", timer="events")
    assert not tuning.failed and tuning.best.label == "kernel", tuning.summary()
    assert tuning.results[1].result.ran == "graph", tuning.summary()  # torch's graph of the three copies
