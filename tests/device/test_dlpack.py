"""DLPack both ways on the CPU: numpy and a fake GPU library as producers, pyhipbench's arrays as producer."""
from __future__ import annotations

import gc
import sys

import numpy as np
import pytest

import pyhipbench as hb
from pyhipbench._device import dlpack
from pyhipbench._device.memory import DeviceArray

from fakes.host_backend import HostBackend
from fakes.tensors import FakeTensor, legacy


@pytest.mark.parametrize("producer", [lambda a: a, legacy], ids=["dlpack-1.0", "dlpack-0.8"])
def test_read_takes_numpys_capsule_and_gives_it_back(producer):
    memory = np.arange(24, dtype=np.int16)  # the base every view of it holds
    host = memory.reshape(4, 6)
    before = sys.getrefcount(memory)
    managed = dlpack.read(producer(host[:, 1::2]), None)
    assert managed.version == ((1, 0) if producer is not legacy else (0, 8))
    assert managed.address == host.ctypes.data + 2 and managed.shape == (4, 3) and managed.strides == (6, 2)
    assert managed.dtype() == np.int16 and not managed.contiguous()
    assert (managed.device_type, managed.device_id) == (dlpack.CPU, 0)
    assert sys.getrefcount(memory) == before + 1  # the exported view holds it until the deleter runs
    del managed
    gc.collect()
    assert sys.getrefcount(memory) == before


def test_read_refuses_a_major_version_it_does_not_know_and_leaves_the_capsule_to_its_owner():
    tensor = FakeTensor(np.zeros(4, np.float32), version=(2, 0))
    with pytest.raises(hb.BenchError, match=r"FakeTensor exported DLPack 2.0; expected DLPack 1.x or 0.8"):
        dlpack.read(tensor, 1)
    assert tensor.exported == 1 and tensor.deleted == 0  # not ours: not deleted by us


def test_read_refuses_something_that_is_not_a_capsule():
    class NotAProducer:
        def __dlpack__(self, **keywords):
            return "a string"
    with pytest.raises(hb.BenchError, match=r"NotAProducer.__dlpack__\(\) returned str, not an unused DLPack capsule"):
        dlpack.read(NotAProducer(), 1)


def test_contiguity_ignores_size_one_dimensions():
    def managed(shape, strides):
        return dlpack.Managed(0, 2, 0, shape, strides, 2, 32, 1, 0, (1, 0), lambda: None)
    assert managed((4, 1, 3), (3, 99, 1)).contiguous() and managed((2, 3), None).contiguous()
    assert managed((0, 3), (7, 7)).contiguous() and not managed((2, 3), (1, 2)).contiguous()


@pytest.mark.parametrize("code,bits,lanes,name", [(4, 16, 1, "bfloat16"), (2, 32, 4, "float32x4"),
                                                  (3, 64, 1, "opaque handle64"), (2, 12, 1, "float12")])
def test_element_types_without_a_numpy_dtype_are_named(code, bits, lanes, name):
    managed = dlpack.Managed(0, 2, 0, (1,), None, code, bits, lanes, 0, (1, 0), lambda: None)
    assert managed.dtype() is None and managed.type_name() == name


@pytest.fixture
def host_array():
    backend = HostBackend()
    array = DeviceArray(backend, (2, 3), np.float32)
    array.copy_from(np.arange(6, dtype=np.float32).reshape(2, 3))
    return array


@pytest.mark.parametrize("max_version,version", [(None, (0, 8)), ((0, 8), (0, 8)), ((1, 0), (1, 0)),
                                                 ((1, 3), (1, 0))])
def test_a_device_array_exports_its_own_memory(host_array, max_version, version):
    capsule = host_array.__dlpack__(max_version=max_version)
    assert dlpack._is_valid(capsule, b"dltensor_versioned" if version == (1, 0) else b"dltensor")

    class Holder:  # a consumer reading the capsule pyhipbench made
        def __dlpack__(self, made=capsule, **keywords):
            return made
    managed = dlpack.read(Holder(), None)
    assert managed.version == version and managed.address == host_array.address
    assert managed.shape == (2, 3) and managed.strides is None and managed.dtype() == np.float32
    assert (managed.device_type, managed.device_id) == host_array.__dlpack_device__() == (dlpack.CUDA, 0)
    with pytest.raises(hb.BenchError, match=r"free\(\): 1 DLPack consumer\(s\) \(torch, CuPy, ...\) still use "
                                            r"this array"):
        host_array.free()
    del managed, capsule
    gc.collect()
    host_array.free()  # the consumer let go
    assert host_array.address == 0


def test_an_unconsumed_capsule_gives_the_array_back(host_array):
    capsule = host_array.__dlpack__(max_version=(1, 0))
    assert host_array._exports == 1
    del capsule
    gc.collect()
    assert host_array._exports == 0


def test_a_rocm_array_says_rocm_and_has_no_cuda_array_interface():
    array = DeviceArray(HostBackend(backend="hip", arch="gfx942", index=1), 4, np.uint8)
    assert array.__dlpack_device__() == (dlpack.ROCM, 1)
    assert not hasattr(array, "__cuda_array_interface__")


def test_cuda_array_interface(host_array):
    assert host_array.__cuda_array_interface__ == {
        "shape": (2, 3), "typestr": "<f4", "data": (host_array.address, False), "strides": None,
        "stream": None, "version": 3}


@pytest.mark.parametrize("keywords,message", [
    ({"copy": True}, r"__dlpack__\(copy=True\): pyhipbench exports its own memory, it does not copy"),
    ({"dl_device": (1, 0)}, r"__dlpack__\(dl_device=\(1, 0\)\): this array is on \(2, 0\); expected that or None"),
    ({"stream": 1.5}, r"__dlpack__\(stream=1.5\): expected an integer stream or None"),
])
def test_export_refusals_name_the_value(host_array, keywords, message):
    with pytest.raises(hb.BenchError, match=message):
        host_array.__dlpack__(**keywords)
    assert host_array._exports == 0


def test_a_freed_array_exports_nothing(host_array):
    host_array.free()
    with pytest.raises(hb.BenchError, match=r"__dlpack__: this device array has been freed; expected a live one"):
        host_array.__dlpack__()
    with pytest.raises(hb.BenchError, match=r"__cuda_array_interface__: this device array has been freed"):
        host_array.__cuda_array_interface__
