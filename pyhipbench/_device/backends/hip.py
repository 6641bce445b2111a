"""The HIP backend: one AMD GPU through hip-python.

Two hip-python lines. Up to 7.2, hip-python is one distribution whose `hip`
package holds the bindings (`hip.hip`) and the HIP version they were generated
for (`hip.HIP_VERSION`). From 10.0 (ROCm 10.0), the bindings ship as
`rocm-bindings-core` / `rocm-bindings-hip` (package `rocm`), and hip-python is
a compatibility package whose `hip.hip` *is* `rocm.bindings.hip`; the HIP
version they were generated for is `rocm.version.HIP_VERSION`. The calls this
backend makes are the same in both lines except `hipGetDeviceProperties`:
7.x fills a `hipDeviceProp_t` the caller passes, 10.x returns a new one, and
10.x gives the struct's char arrays (`name`, `gcnArchName`) as str, not bytes.
`HipPython` holds those differences; everything else goes to its `hip` module.

Version pairing. hip-python is generated from one ROCm release's headers, so
its struct layouts and versioned symbols (`hipGetDevicePropertiesR0600`) are
that release's. pyhipbench therefore checks, when a HipBackend is opened, that
the HIP version the bindings were generated for has the runtime's major.minor
(`hipRuntimeGetVersion`: major * 10000000 + minor * 100000 + patch). hip-python's
own version follows ROCm's, not HIP's: the two agreed up to ROCm 7.2, and
ROCm 10.0 ships HIP 7.15. On a mismatch it raises NoDeviceError naming both
versions and the hip-python release that fixes it (HIP_PYTHON_RELEASES). Set
PYHIPBENCH_SKIP_HIP_VERSION_CHECK=1 to proceed anyway (at your own risk: a
wrong struct layout reads garbage device properties rather than failing).

Which library. hip-python and the C++ core must load the same
`libamdhip64.so`: one process must use one HIP runtime, since handles and
pointers from one mean nothing to another. The core loads PYHIPBENCH_HIP_LIBRARY
if set, else `libamdhip64.so` through the loader's search path
(LD_LIBRARY_PATH, then the system's; ROCm installs it in /opt/rocm/lib).
hip-python 7.x opens `libamdhip64.so` the same way; 10.x would look in its own
places first (ROCM_PATH, /opt/rocm/lib, the rocm-sdk wheels), so this backend
points both lines at the core's choice. Set PYHIPBENCH_HIP_LIBRARY before the
first HIP call in the process.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from importlib import resources
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as distribution_version
from typing import Any

import numpy as np

from ... import _core
from ...errors import BenchError, NoDeviceError, driver_error
from ..archs import last_level_cache_bytes
from .base import BindingsMissing, DeviceProperties, FunctionLimits, KernelParam, PointerMemory

HIP_LIBRARY_ENV = "PYHIPBENCH_HIP_LIBRARY"
SKIP_VERSION_CHECK_ENV = "PYHIPBENCH_SKIP_HIP_VERSION_CHECK"
DEFAULT_HIP_LIBRARY = "libamdhip64.so"

# HIP major.minor -> (the newest hip-python release generated for it, its ROCm release). Each was
# installed from PyPI and its generated-for HIP version read (hip.HIP_VERSION; 10.x rocm.version.HIP_VERSION).
HIP_PYTHON_RELEASES: dict[tuple[int, int], tuple[str, str]] = {
    (6, 2): ("6.2.0.499.16", "6.2"),
    (6, 3): ("6.3.3.540.31", "6.3"),
    (6, 4): ("6.4.4.555.40", "6.4"),
    (7, 0): ("7.0.2.555.40", "7.0"),
    (7, 1): ("7.1.1.562.43", "7.1"),
    (7, 2): ("7.2.2.562.43", "7.2"),
    (7, 15): ("10.0.0.0.1.2", "10.0"),
}


@dataclass(frozen=True)
class HipPython:
    """The installed hip-python: its bindings module and what differs between its 7.x and 10.x lines.

    `release` is hip-python's package version (e.g. "10.0.0.0.1.2"); `generated_for`
    the HIP version its bindings were generated from, encoded as hipRuntimeGetVersion
    encodes it; `rocm_bindings` whether it is the 10.x line (bindings in `rocm.bindings`).
    """

    hip: Any
    release: str
    generated_for: int
    rocm_bindings: bool

    def get_device_properties(self, index: int) -> tuple:
        """hipGetDeviceProperties as (hipError_t, hipDeviceProp_t), whichever line this is."""
        if self.rocm_bindings:
            return self.hip.hipGetDeviceProperties(index)
        prop = self.hip.hipDeviceProp_t()
        return (*self.hip.hipGetDeviceProperties(prop, index), prop)

    def get_pointer_attributes(self, address: int) -> tuple:
        """hipPointerGetAttributes as (hipError_t, hipPointerAttribute_t): 7.x fills a struct the
        caller passes; a line that returns a new one (as 10.x does hipDeviceProp_t) is called so."""
        if self.rocm_bindings:
            try:
                return tuple(self.hip.hipPointerGetAttributes(address))
            except TypeError:  # this line takes the struct to fill, as 7.x does
                pass
        attributes = self.hip.hipPointerAttribute_t()
        return (*self.hip.hipPointerGetAttributes(attributes, address), attributes)

    def use_library(self, path: str) -> None:
        """Makes hip-python open the HIP runtime `path` at its first call (a name or a full path)."""
        if self.rocm_bindings:
            # cyhip asks paths.get_library_path for "amdhip64" when it first opens the library.
            from rocm.bindings.util import paths
            resolve = getattr(paths.get_library_path, "__wrapped__", paths.get_library_path)

            @functools.wraps(resolve)
            def get_library_path(shortname: str, bundled_location: Any = None) -> bytes:
                return path.encode() if shortname == "amdhip64" else resolve(shortname, bundled_location)

            paths.get_library_path = get_library_path
        else:
            # hip.chip reads its module global DLL when it first opens the library.
            import hip.chip
            hip.chip.DLL = path.encode()


def import_hip_python() -> HipPython:
    """The installed hip-python, or NoDeviceError saying how to install it."""
    try:
        import hip as package
        from hip import hip as bindings
    except ImportError:
        releases = ", ".join(f"ROCm {rocm}: {release}" for release, rocm in HIP_PYTHON_RELEASES.values())
        raise BindingsMissing(
            "hip-python", f'hip-python is not installed: pip install "hip-python==RELEASE", the release for your '
            f"ROCm (/opt/rocm/.info/version): {releases}") from None
    rocm_bindings = bindings.__name__.startswith("rocm.")
    if rocm_bindings:
        from rocm.version import HIP_VERSION as generated_for
    else:
        generated_for = package.HIP_VERSION
    try:
        release = distribution_version("hip-python")
    except PackageNotFoundError:  # importable from a source tree, not installed
        release = f"(uninstalled, at {os.path.dirname(package.__file__)})"
    return HipPython(bindings, release, int(generated_for), rocm_bindings)


def hip_library() -> str:
    """The HIP runtime the C++ core loads, and so hip-python must: PYHIPBENCH_HIP_LIBRARY, else libamdhip64.so."""
    return os.environ.get(HIP_LIBRARY_ENV) or DEFAULT_HIP_LIBRARY


def decode_hip_version(version: int) -> tuple[int, int, int]:
    """HIP's encoded version (major*10000000 + minor*100000 + patch) -> (major, minor, patch)."""
    return version // 10_000_000, version // 100_000 % 100, version % 100_000


def _text(value: bytes | str) -> str:
    """A char-array field of hipDeviceProp_t: bytes from hip-python 7.x, str from 10.x."""
    return value.decode() if isinstance(value, bytes) else value


@functools.lru_cache(maxsize=None)
def _bundled_code_object(arch: str) -> bytes:
    """pyhipbench/kernels/amdgpu.ll compiled for `arch`, once per process (the code generator,
    and so llvmlite, is imported only here)."""
    from ...codegen import compile_ir
    source = resources.files("pyhipbench") / "kernels" / "amdgpu.ll"
    return compile_ir(source.read_bytes(), arch).data


class HipBackend:
    """Device `index` through hip-python; handles and device pointers are ints."""

    name = "hip"
    formats = ("hsaco",)
    kernel_timer = "rocprofiler"  # where rocprofiler-sdk loads and attached before HIP initialised
    spin_kernel = "spin"          # amdgpu.ll's, launched by the batched timer
    device_monitor = None         # amdsmi is not read in this version
    icache_invalidation = True    # s_icache_inv, injected at each kernel's entry (pyhipbench.codegen)
    cuda_array_interface = False

    def __init__(self, index: int) -> None:
        self._bindings = import_hip_python()
        self._hip = self._bindings.hip
        self._bindings.use_library(hip_library())
        self.index = index
        # rocprofiler-sdk must be configured before HIP initialises (csrc/rocprofiler.hpp): before the
        # process's first HIP call, so here, once per process; why it cannot trace, or "".
        self.tracer_unavailable = _core.attach_rocprofiler()
        runtime_version = self._runtime_version()
        if not skip_version_check():
            check_versions(self._bindings.release, self._bindings.generated_for, runtime_version)
        self._check_device_call("hipInit", self._hip.hipInit(0))
        count = self._check_device_call("hipGetDeviceCount", self._hip.hipGetDeviceCount())
        if not 0 <= index < count:
            raise NoDeviceError(
                f"HIP device index {index} is out of range: expected 0..{count - 1} ({count} device(s))")
        self.device_count = count
        self.make_current()
        self._properties = self._read_properties()

    # ---- setup ----

    def _runtime_version(self) -> int:
        """hipRuntimeGetVersion; the first call, so the one that finds out whether the library loads. A
        library file named by PYHIPBENCH_HIP_LIBRARY is loaded by the core first, which refuses a file that
        is not a whole library (a truncated copy would kill the process with SIGBUS inside hip-python's load)."""
        if os.path.isfile(os.environ.get(HIP_LIBRARY_ENV, "")):
            try:
                _core.load_driver("hip")
            except _core.LibraryError as e:
                raise NoDeviceError(str(e)) from None
        try:
            result = self._hip.hipRuntimeGetVersion()
        except RuntimeError:  # hip-python raises RuntimeError when dlopen fails
            raise NoDeviceError(
                f"cannot load the HIP runtime {hip_library()!r}. Install ROCm (it provides "
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

    def bundled_code(self, kernel: str, arch: str) -> bytes:
        """pyhipbench/kernels/amdgpu.ll (which holds every bundled kernel) compiled for `arch`."""
        return _bundled_code_object(arch)

    def triton_target(self, arch: str) -> tuple[str, str, int]:
        """AMD's wave size is 64 on gfx9 (CDNA) and 32 on gfx10 and later (RDNA), as Triton uses them."""
        processor = arch.split(":")[0]
        return "hip", processor, 64 if processor.startswith("gfx9") else 32

    def compile_driver_version(self) -> None:
        """None: a code object is compiled for its processor, whatever the driver."""
        return None

    @property
    def context(self) -> int:
        """The device ordinal: the C++ timers make it current (hipSetDevice) while running."""
        return self.index

    def make_current(self) -> None:
        """Makes this backend's device current for the calling thread (HIP's current device is per thread)."""
        self._check("hipSetDevice", self._hip.hipSetDevice(self.index))

    def _read_properties(self) -> DeviceProperties:
        prop = self._check("hipGetDeviceProperties", self._bindings.get_device_properties(self.index))
        arch = _text(prop.gcnArchName)  # e.g. "gfx942:sramecc+:xnack-"; archs.base_arch strips the features
        l2_bytes = prop.l2CacheSize
        return DeviceProperties(
            backend=self.name,
            index=self.index,
            name=_text(prop.name),
            arch=arch,
            compute_units=prop.multiProcessorCount,
            l2_bytes=l2_bytes,
            llc_bytes=last_level_cache_bytes(arch, l2_bytes),
            total_bytes=prop.totalGlobalMem,
            max_threads_per_block=prop.maxThreadsPerBlock,
            max_block=tuple(prop.maxThreadsDim),
            max_grid=tuple(prop.maxGridSize),
            max_shared_bytes=prop.sharedMemPerBlock,
            # AMD has no 48 KB default: ROCm reports the whole LDS a workgroup may use in both fields.
            # A runtime that leaves the opt-in field 0 offers no opt-in.
            max_shared_bytes_optin=max(prop.sharedMemPerBlockOptin, prop.sharedMemPerBlock),
        )

    def check_same_driver(self) -> None:
        """hip-python was pointed at the core's library (use_library, $PYHIPBENCH_HIP_LIBRARY): one runtime."""

    def facts(self) -> dict[str, Any]:
        """What a report records of the device beyond DeviceProperties (environment.py): from
        hipGetDeviceProperties and the runtime's versions."""
        prop = self._check("hipGetDeviceProperties", self._bindings.get_device_properties(self.index))
        driver = int(self._check("hipDriverGetVersion", self._hip.hipDriverGetVersion()))
        return {"pci_bus_id": f"{prop.pciDomainID:04x}:{prop.pciBusID:02x}:{prop.pciDeviceID:02x}.0",
                "rated_sm_clock_mhz": prop.clockRate // 1000, "memory_clock_mhz": prop.memoryClockRate // 1000,
                "ecc_enabled": bool(prop.ECCEnabled), "driver_version": "%d.%d.%d" % decode_hip_version(driver),
                "api_version": "HIP %d.%d.%d" % decode_hip_version(self._runtime_version()),
                "bindings": f"hip-python {self._bindings.release}"}

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

    def pointer_memory(self, address: int) -> PointerMemory:
        """hipPointerGetAttributes (hipErrorInvalidValue: memory HIP does not know, such as plain host
        memory) and, for device memory, hipMemGetAddressRange (the allocation holding it)."""
        self.make_current()
        error, *rest = self._bindings.get_pointer_attributes(address)
        if int(error) == int(self._hip.hipError_t.hipErrorInvalidValue):
            return PointerMemory("unknown")
        attributes = self._check("hipPointerGetAttributes", (error, *rest))
        # hipMemoryType: 0 unregistered, 1 host, 2 device, 3 managed, 10 array, 11 unified
        kind = {1: "host", 2: "device", 3: "managed", 11: "managed"}.get(int(attributes.type), "unknown")
        if kind == "device" and attributes.isManaged:
            kind = "managed"
        if kind not in ("device", "managed"):
            return PointerMemory(kind)
        error, base, size = self._hip.hipMemGetAddressRange(address)
        if int(error) != 0:  # no range to report (hipErrorNotFound): the kind and device still stand
            return PointerMemory(kind, int(attributes.device))
        return PointerMemory(kind, int(attributes.device), int(base), int(size))

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

    def function_limits(self, function: int) -> FunctionLimits:
        """The kernel's threads-per-block limit and static shared (LDS) bytes, from hipFuncGetAttribute."""
        def attribute(name: str) -> int:
            which = getattr(self._hip.hipFunction_attribute, "HIP_FUNC_ATTRIBUTE_" + name)
            return int(self._check("hipFuncGetAttribute", self._hip.hipFuncGetAttribute(which, function)))
        self.make_current()
        return FunctionLimits(max_threads_per_block=attribute("MAX_THREADS_PER_BLOCK"),
                              static_shared_bytes=attribute("SHARED_SIZE_BYTES"))

    def set_max_dynamic_shared(self, function: int, nbytes: int) -> None:
        """hipFuncSetAttribute(hipFuncAttributeMaxDynamicSharedMemorySize). Only reached where the
        runtime reports an opt-in limit above the default, which ROCm does not on AMD GPUs."""
        self.make_current()
        attribute = self._hip.hipFuncAttribute.hipFuncAttributeMaxDynamicSharedMemorySize
        self._check("hipFuncSetAttribute", self._hip.hipFuncSetAttribute(function, attribute, nbytes))

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


def check_versions(release: str, generated_for: int, runtime_version: int) -> None:
    """Raises NoDeviceError unless hip-python `release`, generated for HIP `generated_for`, fits the runtime.

    Both versions are HIP's encoded form; major and minor must be equal.
    """
    major, minor, patch = decode_hip_version(runtime_version)
    bindings_major, bindings_minor, _ = decode_hip_version(generated_for)
    if (bindings_major, bindings_minor) == (major, minor):
        return
    if (major, minor) in HIP_PYTHON_RELEASES:
        fitting, rocm = HIP_PYTHON_RELEASES[major, minor]
        fix = f'pip install "hip-python=={fitting}" (the release for ROCm {rocm}, HIP {major}.{minor})'
    else:
        known = ", ".join(f"{hip_major}.{hip_minor}" for hip_major, hip_minor in HIP_PYTHON_RELEASES)
        fix = (f"install the hip-python release generated for HIP {major}.{minor} (pyhipbench knows the ones "
               f"for HIP {known}; pip index versions hip-python lists all)")
    raise NoDeviceError(
        f"hip-python {release} was generated for HIP {bindings_major}.{bindings_minor}, but the HIP runtime is "
        f"{major}.{minor}.{patch} (hipRuntimeGetVersion {runtime_version}); the bindings' struct layouts "
        f"and calls must match the runtime's major.minor. Fix: {fix}, or set {SKIP_VERSION_CHECK_ENV}=1 "
        "to proceed anyway"
    )


def skip_version_check() -> bool:
    """Whether PYHIPBENCH_SKIP_HIP_VERSION_CHECK asks to skip the version check: 1, true, yes or on (any
    case) skip it; unset, empty, 0, false, no or off do not; any other value is refused, naming it."""
    value = os.environ.get(SKIP_VERSION_CHECK_ENV, "").strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("", "0", "false", "no", "off"):
        return False
    raise BenchError(f"{SKIP_VERSION_CHECK_ENV}={os.environ[SKIP_VERSION_CHECK_ENV]!r}: expected 1 (skip the "
                     "hip-python / HIP version check) or 0")


def _require_contiguous(host: Any, call: str) -> None:
    if not isinstance(host, np.ndarray):
        raise BenchError(f"{call} needs a numpy array, got {type(host).__name__}")
    if not (host.flags.c_contiguous or host.flags.f_contiguous):
        raise BenchError(f"{call} needs a contiguous numpy array (np.ascontiguousarray), got strides {host.strides}")
