"""tune() over Triton launches on an NVIDIA GPU: compiled ahead in the pool, raced, the pick as fast as a long
reading of each, outputs right, the tuning recorded and read back."""
from __future__ import annotations

import numpy as np
import pytest

triton = pytest.importorskip("triton", reason="Triton is not installed (pip install triton)")

import pyhipbench as hb
import pyhipbench.triton as ht

import triton_kernels as tk

N = 1 << 24  # 64 MiB per vector


def grid(meta):
    return (triton.cdiv(meta["n"], meta["BLOCK"]),)


def test_triton_configs_through_tune_pick_one_as_fast_as_a_long_reading_and_are_recorded(cuda_device, tmp_path):
    rng = np.random.default_rng(0)
    x = cuda_device.array(rng.random(N, dtype=np.float32))
    y = cuda_device.array(rng.random(N, dtype=np.float32))
    out = cuda_device.array(np.zeros(N, np.float32))
    configs = [triton.Config({"BLOCK": b}, num_warps=w) for b in (128, 1024, 4096) for w in (1, 4, 8)]
    launches = [ht.TritonLaunch(tk.add, grid, [x, y, out, N], **c.all_kwargs()) for c in configs]
    db = tmp_path / "tuning.db"
    tuning = hb.tune(launches, device=cuda_device, cache="warm", record=db)
    assert not tuning.failed and tuning.best.result.timer == "cupti", tuning.summary()
    compiled_here = [r.label for r in tuning.results if r.note and "compiled in this process" in r.note]
    assert not compiled_here, tuning.summary()  # each compiled in the pool or found cached
    np.testing.assert_array_equal(out.to_numpy(), x.to_numpy() + y.to_numpy())
    long = {launch.label: ht.bench(tk.add, grid, [x, y, out, N], device=cuda_device, cache="warm", precision=0.005,
                                   **c.all_kwargs()).median_us for launch, c in zip(launches, configs)}
    assert long[tuning.best.label] <= min(long.values()) * 1.03, (tuning.summary(), long)
    recorded = hb.load_results(db)
    assert len(recorded) == len(configs) and {r["kernel"] for r in recorded} == {"add"}
    best = next(r for r in recorded if r["tags"]["label"] == tuning.best.label)
    assert best["stats_us"]["median"] == pytest.approx(tuning.best.result.median_us)
