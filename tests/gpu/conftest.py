"""GPU tests: run on a machine with an NVIDIA GPU, skipped elsewhere with the reason."""
from __future__ import annotations

import pytest

import pyhipbench as hb


def _cuda_reason() -> str | None:
    try:
        hb.Device("cuda")
    except (hb.NoDeviceError, hb.LibraryError) as e:
        return f"needs an NVIDIA GPU with its driver and cuda-bindings: {e}"
    return None


CUDA_SKIP = _cuda_reason()


@pytest.fixture(scope="session")
def torch_gpu(cuda_device):
    """The NVIDIA GPU, where torch sees it too: for the tests that time torch ops."""
    torch = pytest.importorskip("torch", reason="the test times torch ops")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    return cuda_device


@pytest.fixture(scope="session")
def cuda_device():
    if CUDA_SKIP:
        pytest.skip(CUDA_SKIP)
    return hb.Device("cuda")
