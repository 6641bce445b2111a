"""DLPack producers that lie, fail, or point at memory that is not the device's: one BenchError each.

A producer's `__dlpack_device__` may return anything; its `__dlpack__` or a
user's `expect=` check may raise anything. Each becomes a BenchError naming
the argument (or the set) and the value, chained to the producer's own
exception, so `except pyhipbench.Error` around a candidate holds everything
it can cause; KeyboardInterrupt and SystemExit pass through. A capsule whose
memory the driver does not know as the bench's device's (host memory,
another device's, a shape past its allocation) is refused before anything is
launched: the backends ask the driver (`pointer_memory`), which the fakes
answer from their allocation tables.
"""
from __future__ import annotations

import ctypes
import gc
from importlib import resources

import numpy as np
import pytest

import pyhipbench as hb
from pyhipbench._device import dlpack
from pyhipbench._device.backends.base import PointerMemory
from pyhipbench._device.backends.cuda import CudaBackend
from pyhipbench._device.memory import DeviceArray

from fakes import host_backend
from fakes.conftest_fixtures import fake_hip_library, require_hip_python, run_with_fake  # noqa: F401 (fixture)
from fakes.host_backend import HostBackend
from fakes.tensors import FakeTensor

COPY_PTX = (resources.files("pyhipbench") / "kernels" / "copy.ptx").read_bytes()
OWN_DEVICE = {"cuda": (dlpack.CUDA, 0), "hip": (dlpack.ROCM, 0)}
LAUNCH = {"cuda": "cuLaunchKernel", "hip": "hipExtModuleLaunchKernel"}
AS_THE_TENSOR = object()  # Producer's default: what the tensor itself says
ARGUMENT_0 = r"argument 0 \(copy_param_src\) of kernel 'copy': "
PAIR = r"expected a \(device_type, device_id\) pair of ints"


@pytest.fixture
def copy(device):
    return device.load_module(COPY_PTX).kernel("copy")


class Producer:
    """A producer over a FakeTensor whose `__dlpack_device__` returns `device` or raises `device_raises`, and
    whose `__dlpack__` raises `export_raises` (by default each as the tensor does)."""

    def __init__(self, tensor: FakeTensor, device: object = AS_THE_TENSOR, device_raises: BaseException | None = None,
                 export_raises: BaseException | None = None) -> None:
        self.tensor, self.device = tensor, device
        self.device_raises, self.export_raises = device_raises, export_raises

    def __dlpack_device__(self):
        if self.device_raises is not None:
            raise self.device_raises
        return self.tensor.__dlpack_device__() if self.device is AS_THE_TENSOR else self.device

    def __dlpack__(self, **keywords):
        if self.export_raises is not None:
            raise self.export_raises
        return self.tensor.__dlpack__(**keywords)


def own_tensor(device, backend_name, n=256):
    """A tensor in the device's memory (the host backend's allocations), as a GPU library's would be."""
    return FakeTensor(np.zeros(n, np.float32), OWN_DEVICE[backend_name], memory=device.backend)


def refused(device, copy, fake_driver, first, message, expect=None):
    dst = own_tensor(device, device.backend.name)
    with pytest.raises(hb.BenchError, match=message) as caught:
        hb.bench(copy, 1, 64, [first, dst, hb.int64(4)], iterations=1, warmup=0, rotate=1, timer="events",
                 expect=expect)
    assert fake_driver.work() == []  # nothing launched, nothing copied
    return caught.value


@pytest.mark.parametrize("returned, shown", [
    ("rocm:0", r"'rocm:0'; "),
    ((2, 0, 0), r"\(2, 0, 0\); "),
    ([2, 0], r"\[2, 0\]; "),
    (None, r"None; "),
    ((None, 0), r"\(None, 0\), whose device_type is None, a NoneType, not an integer; "),
    ((2.5, 0), r"\(2.5, 0\), whose device_type is 2.5, a float, not an integer; "),
    ((2, 0.0), r"\(2, 0.0\), whose device id is 0.0, a float, not an integer; "),
    ((True, 0), r"\(True, 0\), whose device_type is True, a bool, not an integer; "),
    ((2, -1), r"\(2, -1\), whose device id is -1, out of range; "),
    ((0, 0), r"\(0, 0\), whose device_type is 0, out of range; "),
    ((2, 2**70), r"\(2, 1180591620717411303424\), whose device id is 1180591620717411303424, out of range; "),
    ((2**31, 0), r"\(2147483648, 0\), whose device_type is 2147483648, out of range; "),
], ids=["str", "3-tuple", "list", "None", "None-type", "float-type", "float-id", "bool", "negative-id", "type-0",
        "huge-id", "int32-overflow"])
def test_a_device_that_is_not_a_pair_of_ints_is_named(device, copy, fake_driver, backend_name, returned, shown):
    liar = Producer(own_tensor(device, backend_name), device=returned)
    error = refused(device, copy, fake_driver, liar, ARGUMENT_0 + r"a test_dlpack_producers.Producer: its "
                    r"__dlpack_device__\(\) returned " + shown + PAIR)
    assert error.__cause__ is None and liar.tensor.exported == 0  # refused before any capsule was asked for


def test_numpy_integers_and_int_enums_are_device_fields(device, copy, fake_driver, backend_name):
    import enum

    class DeviceType(enum.IntEnum):  # as torch's __dlpack_device__ returns its DLDeviceType
        kDLCUDA, kDLROCM = 2, 10
    fake_driver.read_args(1)
    kind = DeviceType(OWN_DEVICE[backend_name][0])
    for returned in ((np.int64(kind), np.int32(0)), (kind, 0)):
        producer = Producer(own_tensor(device, backend_name), device=returned)
        hb.bench(copy, 1, 64, [producer, producer, hb.int64(4)], iterations=1, warmup=0, rotate=1, timer="events")


@pytest.mark.parametrize("where", ["__dlpack_device__", "__dlpack__"])
@pytest.mark.parametrize("exception", [RuntimeError("the producer broke"), ValueError("no export"),
                                       TypeError("wrong call"), hb.BenchError("its own error")],
                         ids=lambda e: type(e).__name__)
def test_a_producers_own_exception_is_wrapped_and_chained(device, copy, fake_driver, backend_name, where,
                                                          exception):
    keyword = "device_raises" if where == "__dlpack_device__" else "export_raises"
    liar = Producer(own_tensor(device, backend_name), **{keyword: exception})
    said = r"its __dlpack_device__\(\)" if where == "__dlpack_device__" else r"Producer.__dlpack__\(\)"
    error = refused(device, copy, fake_driver, liar, ARGUMENT_0 + r"a test_dlpack_producers.Producer: " + said +
                    rf" raised {type(exception).__name__}: {exception}")
    assert error.__cause__ is exception


@pytest.mark.parametrize("where", ["__dlpack_device__", "__dlpack__"])
@pytest.mark.parametrize("exception", [KeyboardInterrupt, SystemExit])
def test_interrupts_and_exits_are_not_wrapped(device, copy, fake_driver, backend_name, where, exception):
    keyword = "device_raises" if where == "__dlpack_device__" else "export_raises"
    liar = Producer(own_tensor(device, backend_name), **{keyword: exception()})
    with pytest.raises(exception):
        hb.bench(copy, 1, 64, [liar, liar, hb.int64(4)], iterations=1, warmup=0, rotate=1, timer="events")


def test_a_shared_tensor_names_its_argument_too(device, copy, fake_driver, backend_name):
    liar = Producer(own_tensor(device, backend_name), device="cuda:0")
    dst = own_tensor(device, backend_name)
    with pytest.raises(hb.BenchError, match=r"argument 1 \(copy_param_dst\) of kernel 'copy': a "
                       r"test_dlpack_producers.Producer: its __dlpack_device__\(\) returned 'cuda:0'; "):
        hb.bench(copy, 1, 64, [dst, hb.shared(liar), hb.int64(4)], iterations=1, warmup=0, rotate=2, timer="events")


# ---- memory the driver does not know as the device's ----

def test_a_capsule_over_host_memory_is_refused(device, copy, fake_driver, backend_name):
    host = FakeTensor(np.zeros(256, np.float32), OWN_DEVICE[backend_name])  # numpy's memory, claimed on the GPU
    vendor = backend_name.upper()
    refused(device, copy, fake_driver, host, ARGUMENT_0 + rf"a fakes.FakeTensor: its memory at 0x{host.address:x} "
            rf"is not device memory: the {vendor} driver does not know it \(host memory, such as a numpy array's, "
            rf"or no memory at all\); expected memory on {vendor} device 0")
    gc.collect()
    assert host.exported == host.deleted == 1  # taken, refused, given back


def test_a_capsule_over_another_devices_memory_is_refused(device, copy, fake_driver, backend_name):
    other = HostBackend(backend=backend_name, index=1)  # its allocations are device 1's
    liar = FakeTensor(np.zeros(256, np.float32), OWN_DEVICE[backend_name], memory=other)
    vendor = backend_name.upper()
    refused(device, copy, fake_driver, liar, ARGUMENT_0 + rf"a fakes.FakeTensor: its memory at 0x{liar.address:x} "
            rf"is device memory of {vendor} device 1, not memory of device 0 \(the capsule says device 0\); "
            rf"expected memory on {vendor} device 0")


def test_a_shape_past_the_end_of_its_allocation_is_refused(device, copy, fake_driver, backend_name):
    small = FakeTensor(np.zeros(64, np.float32), OWN_DEVICE[backend_name], memory=device.backend)
    liar = FakeTensor(np.zeros(256, np.float32), OWN_DEVICE[backend_name])
    liar.host = np.frombuffer((ctypes.c_float * 256).from_address(small.address), np.float32)  # 768 B too long
    refused(device, copy, fake_driver, liar, ARGUMENT_0 + rf"a fakes.FakeTensor of shape \(256,\) needs 1024 bytes "
            rf"from 0x{small.address:x}, but its allocation \(0x{small.address:x}, 256 bytes\) holds 256 from there; "
            r"expected a tensor that fits in its memory")


def test_a_view_inside_its_allocation_is_taken(device, copy, fake_driver, backend_name):
    fake_driver.read_args(1)
    whole = FakeTensor(np.zeros(256, np.float32), OWN_DEVICE[backend_name], memory=device.backend)
    tail = FakeTensor(np.zeros(64, np.float32), OWN_DEVICE[backend_name])
    tail.host = whole.host[192:]  # the last 64 elements: inside the allocation, ending at its end
    hb.bench(copy, 1, 64, [tail, tail, hb.int64(4)], iterations=1, warmup=0, rotate=1, timer="events")
    assert fake_driver.records(LAUNCH[backend_name])[0].arg_values[0] == whole.address + 192 * 4


def test_host_backend_answers_from_every_host_backends_allocations():
    zero, one = HostBackend(), HostBackend(index=1)
    a, b = zero.allocate(100), one.allocate(8)
    assert zero.pointer_memory(a + 99) == PointerMemory("device", 0, a, 100)
    assert zero.pointer_memory(b) == one.pointer_memory(b) == PointerMemory("device", 1, b, 8)
    assert zero.pointer_memory(np.zeros(4).ctypes.data) == PointerMemory("unknown")
    zero.free(a)
    assert a not in host_backend.ALLOCATIONS  # freed memory is no device's


# ---- expect= checks that raise ----

def test_an_expect_check_that_raises_is_a_bench_error_chained_to_it(device, copy, fake_driver):
    src = device.array(np.zeros(64, np.float32))
    bug = ValueError("the checker broke")

    def check(outputs):
        raise bug
    with pytest.raises(hb.BenchError, match=r"kernel 'copy', set 0: the expect check test_an_expect_check_that_"
                       r"raises_is_a_bench_error_chained_to_it.<locals>.check\(\) raised ValueError: the checker "
                       r"broke; expected it to return True or False \(or raise AssertionError for a mismatch\)") as e:
        hb.bench(copy, 1, 64, [src, device.empty_like(src), hb.int64(4)], iterations=1, warmup=0, rotate=1,
                 expect=check)
    assert e.value.__cause__ is bug


@pytest.mark.parametrize("exception", [KeyboardInterrupt, SystemExit])
def test_an_expect_check_interrupted_is_not_wrapped(device, copy, fake_driver, exception):
    src = device.array(np.zeros(64, np.float32))

    def check(outputs):
        raise exception()
    with pytest.raises(exception):
        hb.bench(copy, 1, 64, [src, device.empty_like(src), hb.int64(4)], iterations=1, warmup=0, rotate=1,
                 expect=check)


def test_a_reference_whose_conversion_raises_is_a_bench_error(device, copy, fake_driver):
    class Unconvertible:
        def __array__(self, *args, **kwargs):
            raise KeyError("no host copy")
    src = device.array(np.zeros(64, np.float32))
    with pytest.raises(hb.BenchError, match=r"expect\[1\]: a Unconvertible is not a host array \('no host "
                       r"copy'\); expected one") as e:
        hb.bench(copy, 1, 64, [src, device.empty_like(src), hb.int64(4)], iterations=1, warmup=0, rotate=1,
                 expect={1: Unconvertible()})
    assert isinstance(e.value.__cause__, KeyError)


# ---- the backends ask their driver: CUDA through cuda-bindings' types, over the fake libcuda ----

class PointerDriver:
    """The calls CudaBackend.pointer_memory makes, with cuda-bindings' enums and return types, forwarded to
    the fake libcuda's cuPointerGetAttributes through ctypes (cuda-bindings cannot load the fake itself)."""

    def __init__(self, lib) -> None:
        from cuda.bindings import driver as cu
        self.cu, self.lib = cu, lib
        self.CUresult, self.CUpointer_attribute = cu.CUresult, cu.CUpointer_attribute

    def cuCtxSetCurrent(self, context):
        return (self.cu.CUresult.CUDA_SUCCESS,)

    def cuPointerGetAttributes(self, count, attributes, address):
        cu = self.cu
        assert all(isinstance(a, cu.CUpointer_attribute) for a in attributes) and count == len(attributes)
        kinds = {cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: ctypes.c_uint64,
                 cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_RANGE_SIZE: ctypes.c_size_t,
                 cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: ctypes.c_int}
        values = [kinds.get(a, ctypes.c_uint)() for a in attributes]
        data = (ctypes.c_void_p * count)(*[ctypes.addressof(v) for v in values])
        codes = (ctypes.c_int * count)(*[int(a) for a in attributes])
        error = self.lib.cuPointerGetAttributes(count, codes, data, ctypes.c_uint64(address))
        as_bindings = {cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: cu.CUdeviceptr,
                       cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_IS_MANAGED: bool}
        return cu.CUresult(error), [as_bindings.get(a, int)(v.value) for a, v in zip(attributes, values)]

    def cuGetErrorName(self, error):
        return self.cu.CUresult.CUDA_SUCCESS, error.name.encode()

    def cuGetErrorString(self, error):
        return self.cu.CUresult.CUDA_SUCCESS, b"invalid argument"


def cuda_backend(lib) -> CudaBackend:
    pytest.importorskip("cuda.bindings.driver", reason='needs cuda-bindings (pip install -r requirements/test.txt)')
    backend = CudaBackend.__new__(CudaBackend)
    backend._cu, backend._context, backend._device, backend._index = PointerDriver(lib), 0xC00000, 0, 0
    return backend


def test_cuda_asks_cuPointerGetAttributes(fake_driver_cuda, monkeypatch):
    monkeypatch.setenv("FAKE_CUDA_DEVICE_COUNT", "2")
    lib = fake_driver_cuda.lib
    backend = cuda_backend(lib)
    allocations = []
    for context in (0xC00000, 0xC00001):  # one allocation made on each device
        address = ctypes.c_uint64()
        assert lib.cuCtxPushCurrent_v2(ctypes.c_void_p(context)) == 0
        assert lib.cuMemAlloc_v2(ctypes.byref(address), ctypes.c_size_t(4096)) == 0
        assert lib.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p())) == 0
        allocations.append(address.value)
    pinned = ctypes.c_void_p()
    assert lib.cuMemHostAlloc(ctypes.byref(pinned), ctypes.c_size_t(64), 0) == 0
    try:
        assert backend.pointer_memory(allocations[0] + 4095) == PointerMemory("device", 0, allocations[0], 4096)
        assert backend.pointer_memory(allocations[1]) == PointerMemory("device", 1, allocations[1], 4096)
        assert backend.pointer_memory(pinned.value) == PointerMemory("host", None, pinned.value, 64)
        assert backend.pointer_memory(np.zeros(4).ctypes.data) == PointerMemory("unknown")
        fake_driver_cuda.fail("cuPointerGetAttributes", 201)
        with pytest.raises(hb.DriverError, match="cuPointerGetAttributes failed"):
            backend.pointer_memory(allocations[0])
    finally:
        assert lib.cuMemFreeHost(pinned) == 0
        for context, address in zip((0xC00000, 0xC00001), allocations):
            lib.cuCtxPushCurrent_v2(ctypes.c_void_p(context))
            lib.cuMemFree_v2(ctypes.c_uint64(address))
            lib.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))


# ---- HIP through hip-python over the fake HIP runtime ----

def test_hip_asks_hipPointerGetAttributes(fake_hip_library):
    require_hip_python()
    report = run_with_fake(fake_hip_library, """
import sys
sys.path.insert(0, TESTS)
from hip import hip
from pyhipbench._device.memory import DeviceArray
from fakes.tensors import FakeTensor
zero, one = HipBackend(0), HipBackend(1)
mine, theirs = zero.allocate(4096), one.allocate(4096)
error, pinned = hip.hipHostMalloc(64, 0)
facts = [list(zero.pointer_memory(a).__dict__.values()) for a in (mine + 100, theirs, int(pinned),
                                                                    np.zeros(4).ctypes.data)]
refusals = []
for memory in (None, one):
    try:
        DeviceArray.from_dlpack(zero, FakeTensor(np.zeros(16, np.float32), (10, 0), memory=memory), "argument 0")
    except Exception as e:
        refusals.append(failure(e))
taken = DeviceArray.from_dlpack(zero, FakeTensor(np.ones(16, np.float32), (10, 0), memory=zero), "argument 0")
report(mine=mine, theirs=theirs, pinned=int(pinned), facts=facts, refusals=refusals,
       taken=taken.to_numpy().tolist())
""".replace("TESTS", repr(str(__import__("pathlib").Path(__file__).parents[1]))), {"FAKE_HIP_DEVICE_COUNT": "2"})
    mine, theirs = report["mine"], report["theirs"]
    assert report["facts"] == [["device", 0, mine, 4096], ["device", 1, theirs, 4096], ["host", None, None, None],
                               ["unknown", None, None, None]]
    host, other = report["refusals"]
    assert host["type"] == other["type"] == "BenchError"
    assert "is not device memory: the HIP driver does not know it" in host["message"]
    assert "is device memory of HIP device 1, not memory of device 0" in other["message"]
    assert report["taken"] == [1.0] * 16


def test_a_device_array_is_taken_back_through_dlpack():
    backend = HostBackend()
    array = DeviceArray(backend, 8, np.int32)
    array.copy_from(np.arange(8, dtype=np.int32))
    view = DeviceArray.from_dlpack(backend, array, "argument 0")
    assert view.address == array.address and view.to_numpy().tolist() == list(range(8))
