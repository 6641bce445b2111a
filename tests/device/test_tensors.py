"""Tensors (anything with __dlpack__) as bench() arguments, on the CPU: a fake GPU library and the fake driver."""
from __future__ import annotations

import ctypes
import gc
from importlib import resources

import numpy as np
import pytest

import pyhipbench as hb
from pyhipbench._device import dlpack

from fakes.tensors import FakeTensor

COPY_PTX = (resources.files("pyhipbench") / "kernels" / "copy.ptx").read_bytes()
LAUNCH = {"cuda": "cuLaunchKernel", "hip": "hipExtModuleLaunchKernel"}
OWN_DEVICE = {"cuda": (dlpack.CUDA, 0), "hip": (dlpack.ROCM, 0)}
DEFAULT_STREAM = {"cuda": 1, "hip": 0}  # DLPack's spelling of the legacy default stream


@pytest.fixture
def copy(device):
    return device.load_module(COPY_PTX).kernel("copy")


def tensors(device, backend_name, n=1024, **options):
    """Two tensors in the device's memory (the host backend's allocations), as a GPU library's would be."""
    own, memory = OWN_DEVICE[backend_name], device.backend
    src = FakeTensor(np.arange(n, dtype=np.float32), own, memory=memory, **options)
    return src, FakeTensor(np.zeros(n, np.float32), own, memory=memory)


@pytest.mark.parametrize("version", [(1, 0), None], ids=["dlpack-1.0", "dlpack-0.8"])
def test_a_tensor_not_rotated_is_passed_as_itself_and_released_after(device, copy, fake_driver, backend_name,
                                                                     version):
    fake_driver.read_args(2)
    src, dst = tensors(device, backend_name, version=version)
    res = hb.bench(copy, 4, 256, [src, dst, hb.int64(1024)], iterations=5, warmup=1, rotate=1, timer="events")
    assert res.cache_state == "warm" and res.rotation.set_bytes == 2 * 4096
    assert {(r.arg_values[0], r.arg_values[1]) for r in fake_driver.records(LAUNCH[backend_name])} == {
        (src.address, dst.address)}
    assert src.streams == [DEFAULT_STREAM[backend_name]]
    gc.collect()
    assert (src.exported, src.deleted, dst.exported, dst.deleted) == (1, 1, 1, 1)


def test_rotated_copies_of_a_tensor_are_made_on_the_device_from_its_contents(device, copy, fake_driver,
                                                                              backend_name):
    fake_driver.read_args(2)
    src, dst = tensors(device, backend_name, 1 << 18)  # 2 MiB a set against the fake's 4 MiB LLC: 4 sets
    seen = []  # what each launch found in its source

    def read_source(params):
        source = ctypes.cast(params[0], ctypes.POINTER(ctypes.c_uint64)).contents.value
        seen.append(np.frombuffer((ctypes.c_float * (1 << 18)).from_address(source), np.float32).copy())
    fake_driver.run_kernel(read_source, copy.handle)
    try:
        res = hb.bench(copy, 4, 256, [src, dst, hb.int64(1 << 18)], iterations=4, warmup=0, cache="dirty-cold",
                       timer="events")
    finally:
        fake_driver.lib.fake_set_kernel_body(None)
    assert res.rotation.sets == 4
    sources = [r.arg_values[0] for r in fake_driver.records(LAUNCH[backend_name])]
    assert sources[0] == src.address and len(set(sources)) == 4
    assert all(np.array_equal(s, src.host) for s in seen)  # every set's copy starts as the tensor
    assert len(device.backend.live) == 2  # the copies are freed; the tensors' own memory is theirs


def test_a_shared_tensor_and_a_tensor_passed_twice(device, copy, fake_driver, backend_name):
    fake_driver.read_args(2)
    src, dst = tensors(device, backend_name, 1 << 18)
    res = hb.bench(copy, 4, 256, [hb.shared(src), dst, hb.int64(8)], iterations=4, warmup=0, rotate=3,
                   timer="events")
    launches = fake_driver.records(LAUNCH[backend_name])
    assert {r.arg_values[0] for r in launches} == {src.address} and len({r.arg_values[1] for r in launches}) == 3
    assert res.rotation.set_bytes == 1 << 20
    res = hb.bench(copy, 4, 256, [dst, dst, hb.int64(8)], iterations=4, warmup=0, rotate=2, timer="events")
    assert res.rotation.set_bytes == 1 << 20 and dst.exported == 2  # one view per bench, rotated once


def refused(device, copy, fake_driver, args, message):
    with pytest.raises(hb.BenchError, match=message):
        hb.bench(copy, 1, 64, args, iterations=1, warmup=0, timer="events")
    assert fake_driver.work() == []  # nothing launched, nothing copied


def test_a_cpu_array_is_refused_naming_its_device(device, copy, fake_driver, backend_name):
    wanted = {"cuda": r"memory on CUDA device 0 \(DLPack kDLCUDA or kDLCUDAManaged, device id 0\), the bench's "
                      r"device", "hip": r"memory on HIP device 0 \(DLPack kDLROCM, device id 0\)"}[backend_name]
    refused(device, copy, fake_driver, [np.zeros(4, np.float32), np.zeros(4, np.float32), hb.int64(4)],
            r"argument 0 \(copy_param_src\) of kernel 'copy': a numpy.ndarray on kDLCPU \(1\) device 0; expected " + wanted)


OTHER_VENDOR = {"cuda": (dlpack.ROCM, 0), "hip": (dlpack.CUDA, 0)}


@pytest.mark.parametrize("where", ["another ordinal", "another vendor", "pinned host", "unknown"])
def test_a_tensor_on_another_device_is_refused(device, copy, fake_driver, backend_name, where):
    place = {"another ordinal": (OWN_DEVICE[backend_name][0], 1), "another vendor": OTHER_VENDOR[backend_name],
             "pinned host": (dlpack.CUDA_HOST, 0), "unknown": (99, 0)}[where]
    name = dlpack.DEVICE_TYPE_NAMES.get(place[0], "unknown device type")
    _, dst = tensors(device, backend_name)
    refused(device, copy, fake_driver, [FakeTensor(np.zeros(4, np.float32), place), dst, hb.int64(4)],
            rf"argument 0 \(copy_param_src\) of kernel 'copy': a fakes.FakeTensor on {name} \({place[0]}\) device "
            rf"{place[1]}; expected memory on {backend_name.upper()} device 0")


def test_an_empty_tensor_without_memory_is_refused(device, copy, fake_driver, backend_name):
    _, dst = tensors(device, backend_name)
    empty = FakeTensor(np.zeros((0, 4), np.float32), OWN_DEVICE[backend_name])
    refused(device, copy, fake_driver, [dst, empty, hb.int64(4)], r"argument 1 \(copy_param_dst\) of kernel 'copy': "
            r"a fakes.FakeTensor of shape \(0, 4\) has no memory \(its data pointer is NULL\); expected a tensor "
            r"with at least one element")


def test_managed_memory_is_device_memory_on_cuda(device, copy, fake_driver, backend_name):
    if backend_name != "cuda":
        pytest.skip("kDLCUDAManaged is CUDA's")
    fake_driver.read_args(1)
    src = FakeTensor(np.zeros(4, np.float32), (dlpack.CUDA_MANAGED, 0), memory=device.backend)
    hb.bench(copy, 1, 64, [src, src, hb.int64(4)], iterations=1, warmup=0, rotate=1, timer="events")
    assert fake_driver.records(LAUNCH[backend_name])[0].arg_values[0] == src.address


@pytest.mark.parametrize("options,message", [
    ({"strides": (1, 4)}, r"a fakes.FakeTensor of shape \(4, 4\) with strides \(1, 4\) \(elements\) is not "
                          r"C-contiguous; expected a dense row-major tensor \(torch: tensor.contiguous\(\)\)"),
    ({"dtype": (4, 16, 1)}, r"a fakes.FakeTensor of bfloat16 has no numpy dtype; pass it reinterpreted as an integer "
                            r"type of the same width \(torch: tensor.view\(torch.int16\)\)"),
    ({"flags": dlpack.READ_ONLY}, r"a fakes.FakeTensor is read-only \(DLPack flag READ_ONLY\) and a kernel may write "
                                  r"to its arguments; expected a writable tensor"),
    ({"refusal": "Can't export tensors that require gradient, use tensor.detach()"},
     r"a fakes.FakeTensor refused to export itself through DLPack: Can't export tensors that require gradient, "
     r"use tensor.detach\(\)"),
    ({"flags": dlpack.IS_COPIED}, r"a fakes.FakeTensor: its producer exported a copy \(DLPack flag IS_COPIED\); expected its own memory"),
])
def test_tensors_the_kernel_cannot_take_as_they_are(device, copy, fake_driver, backend_name, options, message):
    bad = FakeTensor(np.zeros((4, 4), np.float32), OWN_DEVICE[backend_name], **options)
    _, dst = tensors(device, backend_name)
    refused(device, copy, fake_driver, [dst, bad, hb.int64(4)], r"argument 1 \(copy_param_dst\) of kernel 'copy': " + message)
    gc.collect()
    assert bad.exported == bad.deleted == (0 if "refusal" in options else 1)  # taken, refused, given back
