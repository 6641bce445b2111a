"""CudaBackend's kernel limits and shared memory opt-in, on cuda-bindings' own enums without a GPU.

cuda-bindings cannot load the fake libcuda (it resolves the driver through cuGetProcAddress), so
the driver module is replaced by one that answers these calls and checks each argument's type
against the real bindings' enums: a misnamed attribute or a wrong argument order fails here.
"""
from __future__ import annotations

import pytest

from pyhipbench import errors as hb_errors
from pyhipbench._device.backends.base import FunctionLimits
from pyhipbench._device.backends.cuda import CudaBackend
from pyhipbench.errors import DriverError

cu = pytest.importorskip("cuda.bindings.driver", reason='needs cuda-bindings (pip install -r requirements/test.txt)')

FUNCTION = 0xF00


class FakeDriverModule:
    """The calls CudaBackend makes for kernel limits, with cuda-bindings' enums and (error, value) tuples."""

    CUresult = cu.CUresult
    CUdevice_attribute = cu.CUdevice_attribute
    CUfunction_attribute = cu.CUfunction_attribute

    def __init__(self, static_shared: int = 0, optin: int = 232448) -> None:
        self.attributes = {cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: 640,
                           cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: static_shared,
                           cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: 49152 - static_shared}
        self.optin = optin
        self.contexts: list[str] = []

    def cuCtxSetCurrent(self, context):
        self.contexts.append(context)
        return (cu.CUresult.CUDA_SUCCESS,)

    def cuFuncGetAttribute(self, attribute, function):
        assert isinstance(attribute, cu.CUfunction_attribute) and function == FUNCTION
        return cu.CUresult.CUDA_SUCCESS, self.attributes[attribute]

    def cuFuncSetAttribute(self, function, attribute, value):
        assert isinstance(attribute, cu.CUfunction_attribute) and function == FUNCTION
        static = self.attributes[cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES]
        if static + value > self.optin:  # as the driver: static + the new maximum within the opt-in limit
            return (cu.CUresult.CUDA_ERROR_INVALID_VALUE,)
        self.attributes[attribute] = value
        return (cu.CUresult.CUDA_SUCCESS,)

    def cuDeviceGetAttribute(self, attribute, device):
        assert isinstance(attribute, cu.CUdevice_attribute) and device == 0
        values = {cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: 49152,
                  cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: self.optin,
                  cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: 9,
                  cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: 0}
        return cu.CUresult.CUDA_SUCCESS, values.get(attribute, 1024)

    def cuDeviceGetName(self, length, device):
        return cu.CUresult.CUDA_SUCCESS, b"NVIDIA H200\0"

    def cuDeviceTotalMem(self, device):
        return cu.CUresult.CUDA_SUCCESS, 141 * 10**9

    def cuGetErrorName(self, error):
        return cu.CUresult.CUDA_SUCCESS, error.name.encode()

    def cuGetErrorString(self, error):
        return cu.CUresult.CUDA_SUCCESS, b"invalid argument"


def backend(driver: FakeDriverModule) -> CudaBackend:
    b = CudaBackend.__new__(CudaBackend)
    b._cu, b._context, b._device, b._index = driver, "primary context", 0, 0
    b._properties = b._read_properties()
    return b


def test_function_limits_come_from_cuFuncGetAttribute():
    driver = FakeDriverModule(static_shared=4096)
    assert backend(driver).function_limits(FUNCTION) == FunctionLimits(max_threads_per_block=640,
                                                                       static_shared_bytes=4096)
    assert driver.contexts == ["primary context"]


def test_dynamic_shared_opt_in_sets_the_kernel_attribute():
    driver = FakeDriverModule()
    backend(driver).set_max_dynamic_shared(FUNCTION, 200000)
    assert driver.attributes[cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES] == 200000


def test_dynamic_shared_opt_in_the_driver_refuses_is_a_driver_error():
    with pytest.raises(DriverError, match="cuFuncSetAttribute failed: CUDA_ERROR_INVALID_VALUE \\(1\\)") as e:
        backend(FakeDriverModule(static_shared=4096)).set_max_dynamic_shared(FUNCTION, 230000)
    assert e.value.call == "cuFuncSetAttribute" and e.value.code == 1


def test_properties_hold_the_default_and_opt_in_shared_memory_limits():
    props = backend(FakeDriverModule()).properties()
    assert (props.max_shared_bytes, props.max_shared_bytes_optin) == (49152, 232448)
    assert props.arch == "sm_90" and props.name == "NVIDIA H200"


def test_two_cuda_drivers_in_one_process_are_refused_naming_both(tmp_path, monkeypatch):
    from pyhipbench._device.backends import cuda as cuda_backend
    maps = tmp_path / "maps"
    maps.write_text("7f00-7f10 r-xp 00000000 08:01 11 /usr/lib/x86_64-linux-gnu/libcuda.so.580.1\n"
                    "7f10-7f20 r--p 00010000 08:01 11 /usr/lib/x86_64-linux-gnu/libcuda.so.1\n"  # the same file
                    "7f20-7f30 r-xp 00000000 08:01 12 /opt/other/libcuda.so.1\n"
                    "7f30-7f40 r-xp 00000000 08:01 13 /usr/lib/libcudart.so.12\n")
    assert cuda_backend.mapped_files("libcuda.so", str(maps)) == ["/opt/other/libcuda.so.1",
                                                                  "/usr/lib/x86_64-linux-gnu/libcuda.so.580.1"]
    read = cuda_backend.mapped_files
    monkeypatch.setattr(cuda_backend, "mapped_files", lambda name: read(name, str(maps)))
    backend = CudaBackend.__new__(CudaBackend)
    monkeypatch.setenv("PYHIPBENCH_CUDA_LIBRARY", "/opt/other/libcuda.so.1")
    with pytest.raises(hb_errors.LibraryError, match=r"^two CUDA drivers are loaded: /opt/other/libcuda.so.1, "
                                                    r"/usr/lib/x86_64-linux-gnu/libcuda.so.580.1; the C\+\+ core loaded "
                                                    r"PYHIPBENCH_CUDA_LIBRARY='/opt/other/libcuda.so.1', but cuda-bindings"):
        backend.check_same_driver()
    monkeypatch.setattr(cuda_backend, "mapped_files", lambda name: ["/usr/lib/libcuda.so.1"])
    backend.check_same_driver()  # one driver: nothing to say
