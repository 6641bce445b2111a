"""On an NVIDIA GPU: clang's NVPTX IR -> PTX (pyhipbench.codegen) -> load ->
benchmark through the core -> the copy is correct.

Skipped, with the reason, where no CUDA device can be opened.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import pyhipbench as hb
from pyhipbench.codegen import compile_ir

from gpu_bounds import hbm_floor_us

IR = Path(__file__).parent.parent / "data" / "ir" / "copy_sm_90.ll"


@pytest.fixture(scope="module")
def device() -> hb.Device:
    if "cuda" not in hb.available_backends():
        pytest.skip("no CUDA GPU: pyhipbench.available_backends() has no 'cuda'")
    device = hb.Device("cuda", 0)
    if device.arch != "sm_90":
        pytest.skip(f"the test IR is compiled for sm_90; this GPU is {device.arch}")
    return device


def test_compiled_nvptx_copy_runs_and_is_correct(device):
    code = compile_ir(IR, device.arch)
    assert code.format == "ptx" and code.kernels == ("copy",)
    kernel = device.load_module(code.data).kernel("copy")

    n = 64 << 20  # 256 MiB per buffer: every launch reads most of `src` from HBM
    src = device.array(np.arange(n, dtype=np.float32))
    dst = device.array(np.zeros(n, dtype=np.float32))
    # Warm (one argument set): the launches write `dst` itself.
    warm = hb.bench(kernel, grid=(n // 256,), block=(256,), args=[src, dst, hb.int64(n)],
                    iterations=20, warmup=2, rotate=1)
    np.testing.assert_array_equal(dst.to_numpy(), np.arange(n, dtype=np.float32))
    floor = hbm_floor_us(device, 4 * n)  # what reading `src` past the cache takes at peak bandwidth
    assert warm.samples == 20 and warm.stats.min >= floor, (warm.summary(), floor)

    rotated = hb.bench(kernel, grid=(n // 256,), block=(256,), args=[src, dst, hb.int64(n)],
                       iterations=20, warmup=2, cache="dirty-cold")
    assert rotated.rotation.sets >= 2 and rotated.stats.min >= floor, (rotated.summary(), floor)


def test_ptx_version_the_driver_loads(device):
    """PTX 8.8 (clang-22's, the default here) and an explicit lower version both load."""
    for ptx_version in (None, 80):
        code = compile_ir(IR, "sm_90", ptx_version=ptx_version)
        assert device.load_module(code.data).kernel("copy") is not None


def test_ir_without_a_processor_runs_as_sm_90a_and_wgmma_ir_loads(device):
    """compile_for_device picks sm_90a on the H200: the copy runs right and the result records it;
    Triton-style wgmma IR, which aborts LLVM for sm_90, compiles and loads."""
    from pyhipbench.codegen import compile_for_device
    module_text = IR.read_text().replace('"target-cpu"="sm_90"', "")
    code = compile_for_device(module_text, device)
    assert code.target == "sm_90a"
    kernel = device.load_module(code.data).kernel("copy")
    n = 1 << 20
    src = device.array(np.arange(n, dtype=np.float32))
    dst = device.array(np.zeros(n, dtype=np.float32))
    result = hb.bench(kernel, grid=(n // 256,), block=(256,), args=[src, dst, hb.int64(n)], iterations=5,
                      rotate=1)
    np.testing.assert_array_equal(dst.to_numpy(), src.to_numpy())
    assert result.target == "sm_90a"
    wgmma = compile_for_device(IR.parent / "wgmma.ll", device)
    assert wgmma.target == "sm_90a"
    assert device.load_module(wgmma.data).kernel("matmul_kernel").module.target == "sm_90a"
