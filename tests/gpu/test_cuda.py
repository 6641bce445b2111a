"""On an NVIDIA GPU: correct output in every rotated set, plausible times, driver agreement."""
from __future__ import annotations

import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

import pyhipbench as hb
from pyhipbench._launch.argument_sets import ArgumentSets
from pyhipbench._launch.launch_config import LaunchConfig
from pyhipbench._measure.bench import make_plan
from pyhipbench._measure.timers import core_timer

from gpu_bounds import hbm_floor_us, peak_time_us

DATA = Path(__file__).parent / "data"
KERNELS = resources.files("pyhipbench") / "kernels"
MiB = 1 << 20


@pytest.fixture(scope="module")
def copy(cuda_device):
    return cuda_device.load_module(KERNELS / "copy.ptx").kernel("copy")


def test_copy_is_right_in_every_rotated_set(cuda_device, copy):
    n = 64 * MiB  # 256 MiB per buffer: far more than the last-level cache holds
    src = cuda_device.array(np.random.default_rng(0).random(n, dtype=np.float32))
    dst = cuda_device.array(np.zeros(n, np.float32))
    config = LaunchConfig.checked(n // 256, 256, 0, cuda_device.properties)
    with ArgumentSets(cuda_device, [(copy.params, [src, dst, hb.int64(n)])], 5) as sets:
        times, _, _ = core_timer(cuda_device, "events").run(make_plan([(copy, config)], sets), 5, 0)
        for s in range(5):
            assert sets.array(s, dst).address != dst.address or s == 0
            np.testing.assert_array_equal(sets.array(s, dst).to_numpy(), src.to_numpy())
    # One time per launch, each long enough to have read its set's source from HBM.
    floor = hbm_floor_us(cuda_device, 4 * n)
    assert times.shape == (5,) and (times >= floor).all(), (times, floor)


def test_bench_times_are_plausible(cuda_device, copy):
    n = 64 * MiB // 4
    src = cuda_device.array(np.ones(n, np.float32))
    dst = cuda_device.empty_like(src)
    grid = cuda_device.properties.compute_units * 8
    warm = hb.bench(copy, grid, 256, [src, dst, hb.int64(n)], iterations=50, rotate=1)
    cold = hb.bench(copy, grid, 256, [src, dst, hb.int64(n)], iterations=50, cache="dirty-cold")
    np.testing.assert_array_equal(dst.to_numpy(), np.ones(n, np.float32))
    for res in (warm, cold):
        tb_per_s = 2 * n * 4 / (res.median_us * 1e-6) / 1e12
        assert 0.3 < tb_per_s < 6.0, res.summary()  # H200 HBM3e peaks at 4.8 TB/s
        assert res.stats.min > 1.0 and res.host_us_per_kernel < res.median_us * 10
    assert warm.rotation.sets == 1 and cold.rotation.sets == 2  # 128 MiB set > 60 MiB L2
    print(warm.summary())
    print(cold.summary())


def test_bench_on_a_stream(cuda_device, copy):
    n = 64 * MiB  # 256 MiB per buffer, so each launch must read from HBM
    src = cuda_device.array(np.arange(n, dtype=np.float32))
    dst = cuda_device.array(np.zeros(n, np.float32))
    stream = cuda_device.stream()
    res = hb.bench(copy, n // 256, 256, [src, dst, hb.int64(n)], iterations=20, rotate=1, stream=stream)
    stream.synchronize()
    np.testing.assert_array_equal(dst.to_numpy(), src.to_numpy())
    # The events on the stream bracket the copy: no time below what reading the source from
    # HBM takes, and the median within 5x of the peak-bandwidth time for both buffers.
    floor = hbm_floor_us(cuda_device, 4 * n)
    assert res.stats.min >= floor, (res.summary(), floor)
    assert res.median_us < 5 * peak_time_us(cuda_device, 2 * 4 * n), res.summary()
    stream.close()


def test_empty_kernel_overhead(cuda_device):
    empty = cuda_device.load_module(KERNELS / "empty.ptx").kernel("empty")
    res = hb.bench(empty, 1, 1, [], iterations=200, rotate=1, timer="events")
    # An event pair around a real launch: never under 1 µs (the H200 read 3.9-6.3 µs,
    # README), and the median under 20 µs, 3x the largest of those.
    assert res.stats.min >= 1.0 and res.median_us < 20, res.summary()
    print(res.summary())


def test_ptx_parameters_match_the_driver(cuda_device, copy):
    assert list(copy.params) == [
        hb._device.backends.KernelParam(f"copy_param_{n}", 8 * i, 8) for i, n in enumerate(("src", "dst", "n"))]
    reported = cuda_device.backend.kernel_params(copy.module.handle, copy.handle)
    assert [(p.offset, p.size) for p in reported] == [(p.offset, p.size) for p in copy.params]


@pytest.mark.parametrize("kind", ["cubin", "fatbin"])
def test_cubin_and_fatbin_parameters_come_from_the_driver(cuda_device, tmp_path, kind):
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if not Path(nvcc).exists():
        pytest.skip("needs nvcc to build a cubin")
    out = tmp_path / f"axpy.{kind}"
    subprocess.run([nvcc, f"--{kind}", "-arch=sm_90", "-o", str(out), str(DATA / "axpy.cu")], check=True)
    module = cuda_device.load_module(out)
    assert module.format == kind and module.kernel_names() == ["axpy"]
    axpy = module.kernel("axpy")
    assert [(p.offset, p.size) for p in axpy.params] == [(0, 4), (8, 8), (16, 8), (24, 4), (28, 1)]
    n = 4096
    x = cuda_device.array(np.full(n, 2, np.float32))
    y = cuda_device.array(np.ones(n, np.float32))
    hb.bench(axpy, n // 256, 256, [hb.float32(3.0), hb.shared(x), hb.shared(y), hb.int32(n), hb.int8(1)],
             iterations=2, warmup=0)
    np.testing.assert_array_equal(y.to_numpy(), np.full(n, 13, np.float32))  # 1 + 2 x (3 x 2)
    with pytest.raises(hb.BenchError, match="argument 4 \\(param_4\\) of kernel 'axpy' is int32 \\(4 B\\), but the parameter is 1 bytes"):
        hb.bench(axpy, 1, 1, [hb.float32(3.0), x, y, hb.int32(n), hb.int32(1)], iterations=2)


def test_a_faulting_kernel_names_itself_and_the_context_state(cuda_device):
    # In a child process: the fault poisons the CUDA context for the rest of its life.
    # The rotated copy of q cannot be freed after it (the driver fails every call):
    # the fault, not that, is what must surface.
    script = f"""
import pyhipbench as hb
dev = hb.Device("cuda")
fault = dev.load_module({str(DATA / 'fault.ptx')!r}).kernel("fault")
q = dev.empty(1024, "float32")
try:
    hb.bench(fault, 1, 1, [hb.Pointer(0), q], iterations=2, warmup=0, rotate=2)
except hb.KernelFault as e:
    print("FAULT", e.code, e.context_usable, e)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert "FAULT 700 False kernel 'fault' faulted while running" in out.stdout, out.stdout + out.stderr
    assert "illegal memory access" in out.stdout and "no longer usable" in out.stdout


def test_dynamic_shared_memory_up_to_the_opt_in_maximum(cuda_device):
    props = cuda_device.properties
    assert props.max_shared_bytes_optin > props.max_shared_bytes  # H200: 232448 against 49152
    kernel = cuda_device.load_module(DATA / "fill_shared.ptx").kernel("fill_shared")
    out = cuda_device.array(np.zeros(1, np.uint32))
    for shared_bytes in (props.max_shared_bytes, 73728, props.max_shared_bytes_optin):
        words = shared_bytes // 4
        res = hb.bench(kernel, 1, 256, [out, hb.uint32(words)], iterations=3, warmup=0, cache="warm",
                       shared_bytes=shared_bytes)
        assert out.to_numpy()[0] == words - 1 and res.config.shared_bytes == shared_bytes
    with pytest.raises(hb.BenchError, match=f"expected an integer in \\[0, {props.max_shared_bytes_optin}\\]"):
        hb.bench(kernel, 1, 256, [out, hb.uint32(1)], iterations=1, shared_bytes=props.max_shared_bytes_optin + 1)


def test_cuda_source_through_nvrtc_runs_as_sm_90a(cuda_device):
    from pyhipbench.codegen.source import compile_source
    try:
        code = compile_source(cuda_device, (DATA / "scale.cu").read_text(), name_expressions=["scale<float>"],
                              options=["-DFACTOR=3", "-std=c++17"], name="scale.cu")
    except hb.ToolchainError as e:
        pytest.skip(f"needs NVRTC (pip install nvidia-cuda-nvrtc): {e}")
    assert code.format == "cubin" and code.target == "sm_90a"
    kernel = cuda_device.load_module(code).kernel(code.lowered_names["scale<float>"])
    n = 1 << 20
    x = cuda_device.array(np.arange(n, dtype=np.float32))
    y = cuda_device.empty_like(x)
    res = hb.bench(kernel, n // 256, 256, [x, y, hb.int64(n)], iterations=3, rotate=1)
    np.testing.assert_array_equal(y.to_numpy(), 3 * np.arange(n, dtype=np.float32))
    assert res.target == "sm_90a"
