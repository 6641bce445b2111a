"""A Backend whose "device memory" is host memory: for CPU tests of bench().

Addresses are real host addresses, so the fake driver (fake_driver.c) can read
the argument values each launch was given, and tests can read buffers back.
`pointer_memory` answers as a driver would from the allocations of every
HostBackend in the process: one made by a backend of device d is device memory
of device d; any other address (numpy's arrays, a FakeTensor's own host memory)
is memory no driver knows.
"""
from __future__ import annotations

import ctypes
from dataclasses import replace

import numpy as np

from pyhipbench._codeobject.image import kernels
from pyhipbench._device.backends.base import DeviceProperties, FunctionLimits, KernelParam, PointerMemory
from pyhipbench._device.backends.cuda import CudaBackend
from pyhipbench._device.backends.hip import HipBackend

MiB = 1 << 20
FAKE_CUDA_CONTEXT = 0xC0_0000

FAKE_PROPERTIES = DeviceProperties(
    backend="cuda", index=0, name="Fake GPU", arch="sm_90", compute_units=4,
    l2_bytes=4 * MiB, llc_bytes=4 * MiB, total_bytes=1024 * MiB,
    max_threads_per_block=1024, max_block=(1024, 1024, 64), max_grid=(2**31 - 1, 65535, 65535),
    max_shared_bytes=48 * 1024, max_shared_bytes_optin=232448)  # the H200's default and opt-in limits


# Every live allocation of every HostBackend: address -> (its size, bytes; the device it was made on), as a
# driver knows the allocations made on all its devices.
ALLOCATIONS: dict[int, tuple[int, int]] = {}


class HostBackend:
    formats = ("ptx", "cubin", "fatbin", "hsaco")  # loads anything: it only reads parameters
    def __init__(self, free_bytes: int = 900 * MiB, **properties) -> None:
        self._properties = replace(FAKE_PROPERTIES, **properties)
        self.name = self._properties.backend
        # What the timers make current: a made-up CUcontext handle, or device 0.
        self.context = FAKE_CUDA_CONTEXT if self.name == "cuda" else 0
        self.free_bytes = free_bytes
        self.live: dict[int, ctypes.Array] = {}
        self.modules: dict[int, dict[str, list[KernelParam]]] = {}
        self.modules_loaded = 0  # handles are never reused, as a driver's are not while loaded
        self.streams: set[int] = set()
        self.free_error: Exception | None = None  # raised by free(), as a driver after a fault
        # What function_limits reports for every kernel, and each set_max_dynamic_shared call (function, bytes).
        self.function_limit = FunctionLimits(max_threads_per_block=1024, static_shared_bytes=0)
        self.dynamic_shared_calls: list[tuple[int, int]] = []
        self.device_count = 1
        # The vendor's own answers to what differs between vendors (bundled kernels, timers, ...).
        vendor = {"cuda": CudaBackend, "hip": HipBackend}[self.name]
        for fact in ("kernel_timer", "spin_kernel", "device_monitor", "icache_invalidation", "cuda_array_interface"):
            setattr(self, fact, getattr(vendor, fact))
        self.bundled_code = vendor.bundled_code.__get__(self)
        self.triton_target = vendor.triton_target.__get__(self)
        self.compile_driver_version = vendor.compile_driver_version.__get__(self)

    def driver_version(self) -> int:
        """CUDA's driver version as cuDriverGetVersion gives it: the fake's is 12.4 (what a compile target
        holds: the newest PTX it loads)."""
        return 12040

    def make_current(self) -> None:
        pass

    def properties(self) -> DeviceProperties:
        return self._properties

    def memory_info(self) -> tuple[int, int]:
        return self.free_bytes, self._properties.total_bytes

    def check_same_driver(self) -> None:
        pass  # the fake driver is the only one

    def facts(self) -> dict:
        """As a driver reports them; the bus id is the fake NVML's device (fake_nvml.c)."""
        return {"pci_bus_id": "0000:01:00.0", "rated_sm_clock_mhz": 1980, "memory_clock_mhz": 3201,
                "ecc_enabled": True, "api_version": "CUDA 13.0" if self.name == "cuda" else "HIP 6.2.41134",
                "bindings": "fake bindings 1.0"}

    def allocate(self, nbytes: int) -> int:
        buffer = ctypes.create_string_buffer(nbytes)
        self.live[ctypes.addressof(buffer)] = buffer
        ALLOCATIONS[ctypes.addressof(buffer)] = (nbytes, self._properties.index)
        return ctypes.addressof(buffer)

    def free(self, address: int) -> None:
        if self.free_error is not None:
            raise self.free_error
        del self.live[address]
        ALLOCATIONS.pop(address, None)

    def pointer_memory(self, address: int) -> PointerMemory:
        for start, (size, device) in ALLOCATIONS.items():
            if start <= address < start + size:
                return PointerMemory("device", device, start, size)
        return PointerMemory("unknown")

    def __del__(self) -> None:
        for address in getattr(self, "live", {}):
            ALLOCATIONS.pop(address, None)

    def copy_to_device(self, address: int, host: np.ndarray) -> None:
        ctypes.memmove(address, host.ctypes.data, host.nbytes)

    def copy_to_host(self, host: np.ndarray, address: int) -> None:
        ctypes.memmove(host.ctypes.data, address, host.nbytes)

    def load_module(self, image: bytes) -> int:
        handle = 0x1000 + 0x100 * self.modules_loaded
        self.modules_loaded += 1
        self.modules[handle] = kernels(image)
        return handle

    def unload_module(self, module: int) -> None:
        del self.modules[module]

    def function(self, module: int, name: str) -> int:
        names = self.modules[module]  # None for a cubin: only a driver can list its kernels
        return module + 1 + (sorted(names).index(name) if names is not None else 0)

    def kernel_names(self, module: int) -> list[str]:
        return sorted(self.modules[module])

    def kernel_params(self, module: int, function: int) -> list[KernelParam] | None:
        return None

    def function_limits(self, function: int) -> FunctionLimits:
        return self.function_limit

    def set_max_dynamic_shared(self, function: int, nbytes: int) -> None:
        self.dynamic_shared_calls.append((function, nbytes))

    def create_stream(self) -> int:
        stream = 0x5000 + len(self.streams)
        self.streams.add(stream)
        return stream

    def destroy_stream(self, stream: int) -> None:
        self.streams.remove(stream)

    def synchronize_stream(self, stream: int) -> None:
        pass

    def synchronize(self) -> None:
        pass
