"""The CUDA backend: cuda-bindings' driver API for one NVIDIA device.

Every call that needs a context first makes this device's primary context
current on the calling thread (cheap), so several devices and threads can be
used in turn; the C++ core then launches into that context from the same thread.
"""
from __future__ import annotations

import os
import re
from importlib import resources
from typing import Any

import numpy as np

from ...errors import BenchError, LibraryError, NoDeviceError, driver_error
from ..archs import last_level_cache_bytes
from .base import BindingsMissing, DeviceProperties, FunctionLimits, KernelParam, PointerMemory


def _driver() -> Any:
    try:
        from cuda.bindings import driver
    except ImportError as e:
        raise BindingsMissing("cuda-bindings", "cuda-bindings is not installed (pip install 'pyhipbench[cuda]')") from e
    return driver


_BUNDLED_PTX = ("copy", "clean", "empty")  # pyhipbench/kernels/*.ptx; the core brings its own spin kernel


class CudaBackend:
    """One NVIDIA device through cuda-bindings' driver API; handles and addresses are ints."""

    name = "cuda"
    formats = ("ptx", "cubin", "fatbin")
    kernel_timer = "cupti"
    spin_kernel = None            # the core's batched timer brings its own PTX spin kernel
    device_monitor = "nvml"
    icache_invalidation = False   # neither PTX nor the driver API exposes one
    cuda_array_interface = True

    def __init__(self, index: int) -> None:
        self._cu = cu = _driver()
        try:
            error, = cu.cuInit(0)
        except RuntimeError as e:  # cuda-bindings raises this when libcuda is absent
            raise NoDeviceError("no CUDA driver: cuda-bindings could not load libcuda.so.1; install the NVIDIA "
                                "driver") from e  # cuda-bindings' own words are the cause's
        if error == cu.CUresult.CUDA_ERROR_NO_DEVICE:
            raise NoDeviceError("the CUDA driver found no GPU (cuInit: CUDA_ERROR_NO_DEVICE)")
        self._check("cuInit", (error,))
        count = self._check("cuDeviceGetCount", cu.cuDeviceGetCount())
        if not 0 <= index < count:
            raise NoDeviceError(f"CUDA device index {index} is out of range: expected 0..{count - 1} "
                                f"({count} device(s))")
        self._device = self._check("cuDeviceGet", cu.cuDeviceGet(index))
        self._context = self._check("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(self._device))
        self._index = index
        self.device_count = count
        self.make_current()
        self._properties = self._read_properties()  # fixed for the device's life; read by every array view

    def __del__(self) -> None:
        # Arrays, modules and streams hold this backend, so none outlives the context.
        try:
            self._cu.cuDevicePrimaryCtxRelease(self._device)
        except Exception:  # interpreter shutdown, or __init__ failed before retaining it
            pass

    @property
    def context(self) -> int:
        """The device's primary context (a CUcontext handle as an int): the C++ timers push it while running."""
        return int(self._context)

    def make_current(self) -> None:
        """Makes this device's context current on the calling thread."""
        self._check("cuCtxSetCurrent", self._cu.cuCtxSetCurrent(self._context))

    def _check(self, call: str, result: tuple) -> Any:
        """Unpacks cuda-bindings' (error, value...) tuple; raises DriverError on failure."""
        error, *values = result
        if error != self._cu.CUresult.CUDA_SUCCESS:
            _, name = self._cu.cuGetErrorName(error)
            _, message = self._cu.cuGetErrorString(error)
            raise driver_error(call, int(error), _text(name), _text(message))
        return values[0] if len(values) == 1 else tuple(values) or None

    def _attribute(self, name: str) -> int:
        attribute = getattr(self._cu.CUdevice_attribute, "CU_DEVICE_ATTRIBUTE_" + name)
        return int(self._check("cuDeviceGetAttribute", self._cu.cuDeviceGetAttribute(attribute, self._device)))

    def properties(self) -> DeviceProperties:
        return self._properties

    def _read_properties(self) -> DeviceProperties:
        name = _text(self._check("cuDeviceGetName", self._cu.cuDeviceGetName(256, self._device)))
        arch = f"sm_{self._attribute('COMPUTE_CAPABILITY_MAJOR')}{self._attribute('COMPUTE_CAPABILITY_MINOR')}"
        l2 = self._attribute("L2_CACHE_SIZE")
        total = int(self._check("cuDeviceTotalMem", self._cu.cuDeviceTotalMem(self._device)))
        return DeviceProperties(
            backend=self.name, index=self._index, name=name, arch=arch,
            compute_units=self._attribute("MULTIPROCESSOR_COUNT"),
            l2_bytes=l2, llc_bytes=last_level_cache_bytes(arch, l2), total_bytes=total,
            max_threads_per_block=self._attribute("MAX_THREADS_PER_BLOCK"),
            max_block=tuple(self._attribute(f"MAX_BLOCK_DIM_{d}") for d in "XYZ"),
            max_grid=tuple(self._attribute(f"MAX_GRID_DIM_{d}") for d in "XYZ"),
            max_shared_bytes=self._attribute("MAX_SHARED_MEMORY_PER_BLOCK"),
            max_shared_bytes_optin=self._attribute("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
        )

    def driver_version(self) -> int:
        """The driver's CUDA version, as 1000 x major + 10 x minor (13000 = CUDA 13.0)."""
        return int(self._check("cuDriverGetVersion", self._cu.cuDriverGetVersion()))

    def check_same_driver(self) -> None:
        """cuda-bindings loads libcuda.so.1 by the loader's search and ignores $PYHIPBENCH_CUDA_LIBRARY, which
        only the core reads: two different libcudas in one process are refused, naming both."""
        loaded = mapped_files("libcuda.so")
        if len(loaded) <= 1:
            return
        both = f"two CUDA drivers are loaded: {', '.join(loaded)}"
        chosen = os.environ.get(CUDA_LIBRARY_ENV)
        if not chosen:
            raise LibraryError(f"{both}; expected one")
        raise LibraryError(f"{both}; the C++ core loaded {CUDA_LIBRARY_ENV}={chosen!r}, but cuda-bindings (the "
                           f"Python side) ignores {CUDA_LIBRARY_ENV} and loaded its own. Unset it, or put the "
                           "driver's folder on the loader path (LD_LIBRARY_PATH) so both find the same one")

    def facts(self) -> dict[str, Any]:
        """What a report records of the device beyond DeviceProperties (environment.py): from the
        driver's attributes and versions."""
        bus_id = _text(self._check("cuDeviceGetPCIBusId", self._cu.cuDeviceGetPCIBusId(64, self._device)))
        version = self.driver_version()
        return {"pci_bus_id": bus_id, "rated_sm_clock_mhz": self._attribute("CLOCK_RATE") // 1000,
                "memory_clock_mhz": self._attribute("MEMORY_CLOCK_RATE") // 1000,
                "ecc_enabled": bool(self._attribute("ECC_ENABLED")),
                "api_version": f"CUDA {version // 1000}.{version % 1000 // 10}",
                "bindings": f"cuda-bindings {_bindings_version()}"}

    def compile_driver_version(self) -> int:
        """The driver's version: a compiler emits no PTX newer than the driver loads."""
        return self.driver_version()

    def bundled_code(self, kernel: str, arch: str) -> bytes:
        """pyhipbench/kernels/<kernel>.ptx (PTX JIT-compiles for any NVIDIA `arch`)."""
        if kernel not in _BUNDLED_PTX:
            raise BenchError(f"bundled kernel {kernel!r}: expected one of {', '.join(_BUNDLED_PTX)} on NVIDIA")
        return (resources.files("pyhipbench") / "kernels" / f"{kernel}.ptx").read_bytes()

    def triton_target(self, arch: str) -> tuple[str, int, int]:
        match = re.fullmatch(r"sm_(\d+)a?", arch)
        if not match:
            raise BenchError(f"device arch {arch!r}: expected sm_<capability> such as sm_90")
        return "cuda", int(match[1]), 32

    def memory_info(self) -> tuple[int, int]:
        self.make_current()
        free, total = self._check("cuMemGetInfo", self._cu.cuMemGetInfo())
        return int(free), int(total)

    def allocate(self, nbytes: int) -> int:
        self.make_current()
        return int(self._check("cuMemAlloc", self._cu.cuMemAlloc(nbytes)))

    def free(self, address: int) -> None:
        self.make_current()
        self._check("cuMemFree", self._cu.cuMemFree(address))

    def pointer_memory(self, address: int) -> PointerMemory:
        """cuPointerGetAttributes, which answers memory type 0 (not an error) for memory CUDA does
        not know; managed memory reports CU_MEMORYTYPE_DEVICE with IS_MANAGED set."""
        self.make_current()
        names = ("MEMORY_TYPE", "DEVICE_ORDINAL", "IS_MANAGED", "RANGE_START_ADDR", "RANGE_SIZE")
        attributes = [getattr(self._cu.CUpointer_attribute, "CU_POINTER_ATTRIBUTE_" + n) for n in names]
        memory_type, ordinal, managed, start, size = self._check(
            "cuPointerGetAttributes", self._cu.cuPointerGetAttributes(len(attributes), attributes, address))
        # CUmemorytype: 1 host, 2 device, 4 unified; 3 (an array) is no memory a kernel takes a pointer to
        kind = {1: "host", 2: "device", 4: "managed"}.get(int(memory_type), "unknown")
        if kind == "device" and managed:
            kind = "managed"
        on_device = kind in ("device", "managed")
        return PointerMemory(kind, int(ordinal) if on_device else None, int(start) if int(size) else None,
                             int(size) if int(size) else None)

    def copy_to_device(self, address: int, host: np.ndarray) -> None:
        self.make_current()
        self._check("cuMemcpyHtoD", self._cu.cuMemcpyHtoD(address, host.ctypes.data, host.nbytes))

    def copy_to_host(self, host: np.ndarray, address: int) -> None:
        self.make_current()
        self._check("cuMemcpyDtoH", self._cu.cuMemcpyDtoH(host.ctypes.data, address, host.nbytes))

    def load_module(self, image: bytes) -> int:
        self.make_current()
        # PTX must be NUL-terminated; a trailing NUL is harmless for binaries.
        return int(self._check("cuModuleLoadData", self._cu.cuModuleLoadData(image + b"\0")))

    def unload_module(self, module: int) -> None:
        self.make_current()
        self._check("cuModuleUnload", self._cu.cuModuleUnload(module))

    def function(self, module: int, name: str) -> int:
        return int(self._check("cuModuleGetFunction", self._cu.cuModuleGetFunction(module, name.encode())))

    def kernel_names(self, module: int) -> list[str]:
        count = self._check("cuModuleGetFunctionCount", self._cu.cuModuleGetFunctionCount(module))
        functions = self._check("cuModuleEnumerateFunctions", self._cu.cuModuleEnumerateFunctions(count, module))
        return sorted(_text(self._check("cuFuncGetName", self._cu.cuFuncGetName(f))) for f in functions)

    def kernel_params(self, module: int, function: int) -> list[KernelParam]:
        params = []
        while True:
            error, offset, size = self._cu.cuFuncGetParamInfo(function, len(params))
            if error == self._cu.CUresult.CUDA_ERROR_INVALID_VALUE:
                return params  # past the last parameter
            self._check("cuFuncGetParamInfo", (error,))
            params.append(KernelParam(f"param_{len(params)}", int(offset), int(size)))

    def _function_attribute(self, function: int, name: str) -> int:
        attribute = getattr(self._cu.CUfunction_attribute, "CU_FUNC_ATTRIBUTE_" + name)
        return int(self._check("cuFuncGetAttribute", self._cu.cuFuncGetAttribute(attribute, function)))

    def function_limits(self, function: int) -> FunctionLimits:
        self.make_current()
        return FunctionLimits(max_threads_per_block=self._function_attribute(function, "MAX_THREADS_PER_BLOCK"),
                              static_shared_bytes=self._function_attribute(function, "SHARED_SIZE_BYTES"))

    def set_max_dynamic_shared(self, function: int, nbytes: int) -> None:
        self.make_current()
        attribute = self._cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        self._check("cuFuncSetAttribute", self._cu.cuFuncSetAttribute(function, attribute, nbytes))

    def create_stream(self) -> int:
        """A new stream (blocking: ordered with the legacy default stream, where copies run)."""
        self.make_current()
        return int(self._check("cuStreamCreate", self._cu.cuStreamCreate(0)))

    def destroy_stream(self, stream: int) -> None:
        self._check("cuStreamDestroy", self._cu.cuStreamDestroy(stream))

    def synchronize_stream(self, stream: int) -> None:
        self._check("cuStreamSynchronize", self._cu.cuStreamSynchronize(stream))

    def synchronize(self) -> None:
        self.make_current()
        self._check("cuCtxSynchronize", self._cu.cuCtxSynchronize())


CUDA_LIBRARY_ENV = "PYHIPBENCH_CUDA_LIBRARY"  # the core's (csrc/cuda_driver.cpp); cuda-bindings reads none


def mapped_files(name: str, maps: str = "/proc/self/maps") -> list[str]:
    """The distinct files mapped into this process whose name starts with `name` (the same file by two paths
    once: by device and inode)."""
    files: dict[tuple[str, str], str] = {}
    with open(maps) as lines:
        for line in lines:
            fields = line.split()
            if len(fields) >= 6 and fields[5].rsplit("/", 1)[-1].startswith(name):
                files.setdefault((fields[3], fields[4]), fields[5])
    return sorted(files.values())


def _bindings_version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("cuda-bindings")
    except PackageNotFoundError:  # cuda-python before the split into cuda-bindings
        return version("cuda-python")


def _text(value: bytes | str) -> str:
    """A C string from the driver: up to the first NUL (names come in fixed-size buffers)."""
    return (value.decode(errors="replace") if isinstance(value, bytes) else value).split("\0", 1)[0]
