"""On an NVIDIA GPU: torch and CuPy tensors as arguments, pyhipbench arrays into torch and CuPy, verification."""
from __future__ import annotations

import gc
from importlib import resources

import numpy as np
import pytest

import pyhipbench as hb

KERNELS = resources.files("pyhipbench") / "kernels"
N = 1 << 20


def _library(name: str):
    """The module, or a skip saying why it cannot be used here."""
    try:
        module = __import__(name)
    except ImportError:
        pytest.skip(f"needs {name} (with CUDA) installed")
    return module


@pytest.fixture(scope="module")
def copy(cuda_device):
    return cuda_device.load_module(KERNELS / "copy.ptx").kernel("copy")


@pytest.fixture
def torch():
    torch = _library("torch")
    if not torch.cuda.is_available():
        pytest.skip(f"torch {torch.__version__} has no CUDA device here")
    return torch


@pytest.fixture
def cupy():
    return _library("cupy")


def test_torch_tensors_not_rotated_are_written_in_place(cuda_device, copy, torch):
    src = torch.arange(N, dtype=torch.float32, device="cuda")
    dst = torch.zeros_like(src)
    res = hb.bench(copy, N // 256, 256, [src, dst, hb.int64(N)], iterations=20, rotate=1,
                   expect={1: src.cpu().numpy()})
    assert res.verified and res.cache_state == "warm"
    assert torch.equal(dst, src)  # the kernel got dst's own memory


def test_torch_tensors_rotated_on_the_device_and_every_set_verified(cuda_device, copy, torch):
    src = torch.rand(N, device="cuda")
    dst = torch.zeros_like(src)
    res = hb.bench(copy, N // 256, 256, [src, dst, hb.int64(N)], iterations=50, cache="dirty-cold",
                   expect=[None, src.cpu().numpy(), None])
    assert res.verified and res.rotation.sets > 2
    with pytest.raises(hb.OutputMismatch, match=r"kernel 'copy', argument 1, set 0: element \[0\] is "):
        hb.bench(copy, N // 256, 256, [src, dst, hb.int64(N)], iterations=50, cache="dirty-cold",
                 expect={1: src.cpu().numpy() + 1})


def test_torch_tensors_the_kernel_cannot_take(cuda_device, copy, torch):
    dst = torch.zeros(N, device="cuda")
    for bad, message in [
        (torch.zeros(N), r"a torch.Tensor on kDLCPU \(1\) device 0; expected memory on CUDA device 0"),
        (torch.zeros(N, 2, device="cuda")[:, 0], r"a torch.Tensor of shape \(1048576,\) with strides \(2,\) "
                                                 r"\(elements\) is not C-contiguous"),
        (torch.zeros(N, dtype=torch.bfloat16, device="cuda"), r"a torch.Tensor of bfloat16 has no numpy dtype"),
        (torch.zeros(N, device="cuda", requires_grad=True), r"a torch.Tensor refused to export itself through "
                                                            r"DLPack: Can't export tensors that require gradient"),
    ]:
        with pytest.raises(hb.BenchError, match=r"argument 0 \(copy_param_src\) of kernel 'copy': " + message):
            hb.bench(copy, 1, 256, [bad, dst, hb.int64(256)], iterations=1, rotate=1)
    bits = torch.ones(2 * N, dtype=torch.bfloat16, device="cuda").view(torch.int16)  # the same memory
    hb.bench(copy, 1, 256, [bits, dst, hb.int64(256)], iterations=1, rotate=1)
    assert torch.equal(dst[:256].view(torch.int16), bits[:512])


def test_a_device_array_into_torch_and_back(cuda_device, torch):
    array = cuda_device.array(np.arange(8, dtype=np.float32))
    tensor = torch.from_dlpack(array)
    assert tensor.device.type == "cuda" and tensor.data_ptr() == array.address and tensor.dtype == torch.float32
    tensor += 1
    torch.cuda.synchronize()
    assert np.array_equal(array.to_numpy(), np.arange(1, 9, dtype=np.float32))
    with pytest.raises(hb.BenchError, match=r"free\(\): 1 DLPack consumer\(s\)"):
        array.free()
    del tensor
    gc.collect()
    array.free()


def test_a_device_array_into_cupy_by_dlpack_and_by_the_cuda_array_interface(cuda_device, cupy):
    array = cuda_device.array(np.arange(8, dtype=np.int32))
    by_dlpack, by_interface = cupy.from_dlpack(array), cupy.asarray(array)
    assert by_dlpack.data.ptr == by_interface.data.ptr == array.address
    assert cupy.asnumpy(by_interface).tolist() == list(range(8))
    del by_dlpack
    gc.collect()


def test_cupy_arrays_as_arguments(cuda_device, copy, cupy):
    src = cupy.arange(N, dtype=cupy.float32)
    dst = cupy.zeros(N, dtype=cupy.float32)
    res = hb.bench(copy, N // 256, 256, [hb.shared(src), dst, hb.int64(N)], iterations=20, rotate=3,
                   expect={1: cupy.asnumpy(src)})
    assert res.verified and res.rotation.sets == 3
    assert bool((dst == src).all())
