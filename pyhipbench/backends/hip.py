"""The HIP backend: one AMD GPU through hip-python.

Version pairing. hip-python is generated from one ROCm release's headers and
binds to `libamdhip64.so` by name at its first call, so the hip-python
release must match the installed ROCm: its struct layouts and versioned symbols
(`hipGetDevicePropertiesR0600`, `hipDeviceProp_tR0600`) are those of the
release it was built for, and its API changed at 10.x (hipGetDeviceProperties).
pyhipbench therefore checks, when a HipBackend is opened, that hip-python's
major.minor equals the HIP runtime's (`hipRuntimeGetVersion`, which encodes
major * 10000000 + minor * 100000 + patch). On a mismatch it raises
NoDeviceError naming both versions and the fix:

    pip install "hip-python~=MAJOR.MINOR.0"    # MAJOR.MINOR of your ROCm

Set PYHIPBENCH_SKIP_HIP_VERSION_CHECK=1 to proceed anyway (at your own risk:
a wrong struct layout reads garbage device properties rather than failing).

Which library. hip-python opens `libamdhip64.so` through the loader's search
path (LD_LIBRARY_PATH, then the system's; ROCm installs it in /opt/rocm/lib).
If PYHIPBENCH_HIP_LIBRARY names a library, the C++ core loads that one, and so
does this backend (it points hip-python at the same path): one process must
use one HIP runtime, since handles and pointers from one mean nothing to
another. Set it before the first HIP call in the process.
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..archs import last_level_cache_bytes
from ..errors import BenchError, NoDeviceError, driver_error
from .base import DeviceProperties, KernelParam

HIP_LIBRARY_ENV = "PYHIPBENCH_HIP_LIBRARY"
SKIP_VERSION_CHECK_ENV = "PYHIPBENCH_SKIP_HIP_VERSION_CHECK"
DEFAULT_HIP_LIBRARY = "libamdhip64.so"


def _import_hip() -> tuple[Any, Any]:
    """hip-python's `hip` module and its `hip.hip` bindings, or NoDeviceError saying how to install them."""
    try:
        import hip as package
        from hip import hip as bindings
    except ImportError:
        raise NoDeviceError(
            'hip-python is not installed (pip install "hip-python~=MAJOR.MINOR.0", '
            "MAJOR.MINOR of your ROCm, see /opt/rocm/.info/version)"
        ) from None
    return package, bindings


def _use_library_from_env(package: Any) -> None:
    """Points hip-python at PYHIPBENCH_HIP_LIBRARY, the library the C++ core loads, if it is set."""
    path = os.environ.get(HIP_LIBRARY_ENV)
    if path:
        # hip.chip reads its module global DLL when it first opens the library.
        import hip.chip
        hip.chip.DLL = path.encode()


def hip_python_version(package: Any) -> tuple[int, int]:
    """hip-python's (major, minor), from its version string, e.g. '7.2.2.562.43' -> (7, 2)."""
    try:
        version = package._version.__version__
    except AttributeError:  # not every release has hip._version: ask the installed distribution
        from importlib.metadata import version as distribution_version
        version = distribution_version("hip-python")
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def decode_hip_version(version: int) -> tuple[int, int, int]:
    """HIP's encoded version (major*10000000 + minor*100000 + patch) -> (major, minor, patch)."""
    return version // 10_000_000, version // 100_000 % 100, version % 100_000


class HipBackend:
    """Device `index` through hip-python; handles and device pointers are ints."""

    name = "hip"
    formats = ("hsaco",)

    def __init__(self, index: int) -> None:
        package, self._hip = _import_hip()
        _use_library_from_env(package)
        self.index = index
        runtime_version = self._runtime_version()
        if os.environ.get(SKIP_VERSION_CHECK_ENV) != "1":
            check_versions(hip_python_version(package), runtime_version)
        self._check_device_call("hipInit", self._hip.hipInit(0))
        count = self._check_device_call("hipGetDeviceCount", self._hip.hipGetDeviceCount())
        if not 0 <= index < count:
            raise NoDeviceError(
                f"HIP device index {index} is out of range: expected 0..{count - 1} ({count} device(s))")
        self.make_current()
        self._properties = self._read_properties()

    # ---- setup ----

    def _runtime_version(self) -> int:
        """hipRuntimeGetVersion; the first call, so the one that finds out whether the library loads."""
        try:
            result = self._hip.hipRuntimeGetVersion()
        except RuntimeError:  # hip-python raises RuntimeError when dlopen fails
            library = os.environ.get(HIP_LIBRARY_ENV) or DEFAULT_HIP_LIBRARY
            raise NoDeviceError(
                f"cannot load the HIP runtime {library!r}. Install ROCm (it provides "
                f"{DEFAULT_HIP_LIBRARY}), and put its lib folder on the loader path, e.g. "
                f"export LD_LIBRARY_PATH=/opt/rocm/lib:$LD_LIBRARY_PATH, or set {HIP_LIBRARY_ENV} "
                "to the library's full path"
            ) from None
        return self._check("hipRuntimeGetVersion", result)

    def _check_device_call(self, call: str, result: tuple) -> Any:
        """As _check, but "no device" (from hipInit or hipGetDeviceCount) is a NoDeviceError that says what to check."""
        err = int(result[0])
        no_device = err == int(self._hip.hipError_t.hipErrorNoDevice)
        if no_device or (call == "hipGetDeviceCount" and err == 0 and result[1] == 0):
            raise NoDeviceError(
                f"HIP found no GPU ({call}: no device). Check that an AMD GPU is present and visible: "
                "rocm-smi lists it; the user may open /dev/kfd and /dev/dri (groups 'render' and "
                "'video'); HIP_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES do not hide it"
            )
        return self._check(call, result)

    @property
    def context(self) -> int:
        """The device ordinal: the C++ timers make it current (hipSetDevice) while running."""
        return self.index

    def make_current(self) -> None:
        """Makes this backend's device current for the calling thread (HIP's current device is per thread)."""
        self._check("hipSetDevice", self._hip.hipSetDevice(self.index))

    def _read_properties(self) -> DeviceProperties:
        prop = self._hip.hipDeviceProp_t()
        self._check("hipGetDeviceProperties", self._hip.hipGetDeviceProperties(prop, self.index))
        arch = prop.gcnArchName.decode()  # e.g. "gfx942:sramecc+:xnack-"; archs.base_arch strips the features
        l2_bytes = prop.l2CacheSize
        return DeviceProperties(
            backend=self.name,
            index=self.index,
            name=prop.name.decode(),
            arch=arch,
            compute_units=prop.multiProcessorCount,
            l2_bytes=l2_bytes,
            llc_bytes=last_level_cache_bytes(arch, l2_bytes),
            total_bytes=prop.totalGlobalMem,
            max_threads_per_block=prop.maxThreadsPerBlock,
            max_block=tuple(prop.maxThreadsDim),
            max_grid=tuple(prop.maxGridSize),
            max_shared_bytes=prop.sharedMemPerBlock,
        )

    def _check(self, call: str, result: tuple, context: str = "") -> Any:
        """The values after the error code in hip-python's `result`; raises DriverError if the code is an error.

        `context` names what the call was about (a kernel name), appended to the driver's message.
        """
        err = int(result[0])
        if err != 0:
            code = result[0]
            name = self._hip.hipGetErrorName(code)[1]
            message = self._hip.hipGetErrorString(code)[1]
            name = name.decode() if name is not None else f"hipError {err}"
            message = message.decode() if message is not None else "no message"
            raise driver_error(call, err, name, f"{message}{context}")
        values = result[1:]
        return values[0] if len(values) == 1 else values

    # ---- the Backend protocol ----

    def properties(self) -> DeviceProperties:
        return self._properties

    def memory_info(self) -> tuple[int, int]:
        """(free, total) device memory, bytes."""
        self.make_current()
        free, total = self._check("hipMemGetInfo", self._hip.hipMemGetInfo())
        return int(free), int(total)

    def allocate(self, nbytes: int) -> int:
        """A device allocation of `nbytes` bytes (> 0); its address."""
        if nbytes <= 0:
            raise BenchError(f"allocation size must be a positive number of bytes, got {nbytes}")
        self.make_current()
        return int(self._check("hipMalloc", self._hip.hipMalloc(nbytes)))

    def free(self, address: int) -> None:
        self._check("hipFree", self._hip.hipFree(address))

    def copy_to_device(self, address: int, host: np.ndarray) -> None:
        """Copies all of `host` (a contiguous numpy array) to device memory at `address`."""
        _require_contiguous(host, "copy_to_device")
        self._check("hipMemcpyHtoD", self._hip.hipMemcpyHtoD(address, host.ctypes.data, host.nbytes))

    def copy_to_host(self, host: np.ndarray, address: int) -> None:
        """Fills all of `host` (a contiguous, writable numpy array) from device memory at `address`."""
        _require_contiguous(host, "copy_to_host")
        if not host.flags.writeable:
            raise BenchError("copy_to_host needs a writable numpy array, got a read-only one")
        self._check("hipMemcpyDtoH", self._hip.hipMemcpyDtoH(host.ctypes.data, address, host.nbytes))

    def copy_device(self, destination: int, source: int, nbytes: int) -> None:
        self._check("hipMemcpyDtoD", self._hip.hipMemcpyDtoD(destination, source, nbytes))

    def load_module(self, image: bytes) -> int:
        """Loads a code object (HSACO) onto the device; the module handle."""
        self.make_current()
        # hip-python takes the image as an address; the bytes stay alive for the call.
        buffer = np.frombuffer(image, dtype=np.uint8)
        return int(self._check("hipModuleLoadData", self._hip.hipModuleLoadData(buffer.ctypes.data)))

    def unload_module(self, module: int) -> None:
        self._check("hipModuleUnload", self._hip.hipModuleUnload(module))

    def function(self, module: int, name: str) -> int:
        """The kernel's function handle; raises DriverError if the module has no kernel `name`."""
        result = self._hip.hipModuleGetFunction(module, name.encode())
        return int(self._check("hipModuleGetFunction", result, f" (kernel {name!r})"))

    def kernel_params(self, module: int, function: int) -> list[KernelParam] | None:
        """None: HIP has no portable parameter query (pyhipbench reads the HSACO's metadata instead)."""
        return None

    def kernel_names(self, module: int) -> list[str] | None:
        """None: HIP has no portable kernel listing (pyhipbench reads the HSACO's metadata instead)."""
        return None

    def create_stream(self) -> int:
        """A new stream (blocking: ordered with the null stream, where copies run)."""
        self.make_current()
        return int(self._check("hipStreamCreate", self._hip.hipStreamCreate()))

    def destroy_stream(self, stream: int) -> None:
        self._check("hipStreamDestroy", self._hip.hipStreamDestroy(stream))

    def synchronize_stream(self, stream: int) -> None:
        self._check("hipStreamSynchronize", self._hip.hipStreamSynchronize(stream))

    def synchronize(self) -> None:
        self.make_current()
        self._check("hipDeviceSynchronize", self._hip.hipDeviceSynchronize())


def check_versions(hip_python: tuple[int, int], runtime_version: int) -> None:
    """Raises NoDeviceError unless hip-python's (major, minor) equals the HIP runtime's."""
    major, minor, patch = decode_hip_version(runtime_version)
    if (major, minor) != hip_python:
        raise NoDeviceError(
            f"hip-python {hip_python[0]}.{hip_python[1]} does not match the HIP runtime "
            f"{major}.{minor}.{patch} (hipRuntimeGetVersion {runtime_version}): hip-python must be "
            f'built for the same ROCm major.minor. Fix: pip install "hip-python~={major}.{minor}.0", '
            f"or set {SKIP_VERSION_CHECK_ENV}=1 to proceed anyway"
        )


def _require_contiguous(host: Any, call: str) -> None:
    if not isinstance(host, np.ndarray):
        raise BenchError(f"{call} needs a numpy array, got {type(host).__name__}")
    if not (host.flags.c_contiguous or host.flags.f_contiguous):
        raise BenchError(f"{call} needs a contiguous numpy array (np.ascontiguousarray), got strides {host.strides}")
