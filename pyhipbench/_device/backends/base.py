"""What a backend provides: the thin, explicit layer over one driver API.

A backend wraps one vendor's Python bindings (hip-python, cuda-bindings) for
one device. Handles and device pointers cross this boundary as plain ints, the
form the C++ core takes them in. Every failing driver call raises
`pyhipbench.errors.DriverError` naming the call and the driver's message.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ... import _core
from ...errors import NoDeviceError


class BindingsMissing(NoDeviceError):
    """The backend's Python bindings are not installed: `package` names them, the message says how to
    install them."""

    def __init__(self, package: str, message: str) -> None:
        super().__init__(message)
        self.package = package


@dataclass(frozen=True)
class DeviceProperties:
    backend: str               # "cuda" or "hip"
    index: int                 # device ordinal
    name: str                  # marketing name, e.g. "NVIDIA H200"
    arch: str                  # "sm_90", "gfx942"
    compute_units: int         # SMs (NVIDIA) or CUs (AMD)
    l2_bytes: int              # L2 size the runtime reports, bytes
    llc_bytes: int             # last-level cache, bytes (see archs.last_level_cache_bytes)
    total_bytes: int           # device memory, bytes
    max_threads_per_block: int       # threads
    max_block: tuple[int, int, int]  # per-dimension block limits, threads
    max_grid: tuple[int, int, int]   # per-dimension grid limits, blocks
    max_shared_bytes: int      # static + dynamic shared memory per block without opting in, bytes
    max_shared_bytes_optin: int  # static + dynamic shared memory per block a kernel may opt in to, bytes

    @property
    def launch_limits(self) -> _core.LaunchLimits:
        """What the backend's launch call can express beyond the limits above (HIP: grid x block per
        axis below 2**32, hipExtModuleLaunchKernel taking global work sizes): the C++ core's, which
        its timers check every plan against, so Python refuses the same launches before any launch."""
        return _core.launch_limits(self.backend)


@dataclass(frozen=True)
class FunctionLimits:
    """What one loaded kernel's code allows, as the driver reports it."""
    max_threads_per_block: int  # threads: its register (and shared memory) use allows no more
    static_shared_bytes: int    # shared memory its code declares statically, bytes


@dataclass(frozen=True)
class PointerMemory:
    """What the driver says an address is (`Backend.pointer_memory`).

    `kind`: "device" (device memory), "managed" (managed / unified memory),
    "host" (host memory the driver knows: pinned, mapped or registered), or
    "unknown" (memory the driver does not know: plain host memory, or nothing).
    `device`: the ordinal of the device the memory belongs to, for "device"
    and "managed"; None otherwise. `start`, `size`: the driver's allocation
    holding the address (its first byte and its length, bytes), where the
    driver reports it; None where it does not.
    """
    kind: str
    device: int | None = None
    start: int | None = None
    size: int | None = None


@dataclass(frozen=True)
class KernelParam:
    """One kernel parameter as the code object (or driver) describes it."""
    name: str
    offset: int  # byte offset in the kernel's argument buffer
    size: int    # bytes


class Backend(Protocol):
    """One vendor's driver for one device. Every vendor difference the rest of the package needs is
    one of these attributes or methods, so nothing outside backends/ tests which vendor it runs on."""
    name: str                 # "cuda" or "hip"
    formats: tuple[str, ...]  # code object formats its driver loads (see codeobject.FORMATS)
    context: int              # what the C++ timers run in: CUDA, a CUcontext handle; HIP, the device ordinal
    device_count: int         # devices this backend sees (a sweep starts one worker per device)
    # The timer that reads each kernel's own start and end, which timer="auto" tries first
    # ("cupti" on NVIDIA); None where there is none (AMD: events bracket the dispatch).
    kernel_timer: str | None
    # The bundled kernel the batched timer queues its launches behind; None where the C++ core
    # brings its own (CUDA: a PTX spin kernel compiled into the core).
    spin_kernel: str | None
    # The library a report reads the device's facts, temperature and energy from ("nvml"); None where
    # this version reads none (AMD: no amdsmi).
    device_monitor: str | None
    icache_invalidation: bool    # the code can invalidate its instruction cache (AMD's s_icache_inv)
    cuda_array_interface: bool   # device arrays can export __cuda_array_interface__ (CUDA only)

    def bundled_code(self, kernel: str, arch: str) -> bytes:
        """The code object holding the bundled kernel `kernel` ("copy", "clean", "empty", "spin",
        pyhipbench/kernels/) for `arch`: PTX on NVIDIA, AMD's amdgpu.ll compiled for `arch`."""
    def triton_target(self, arch: str) -> tuple[str, int | str, int]:
        """Triton's GPUTarget fields for `arch`: (backend, capability or processor, warp size)."""
    def facts(self) -> dict[str, Any]:
        """What a report records of the device beyond DeviceProperties: pci_bus_id ("0000:3b:00.0"),
        rated_sm_clock_mhz, memory_clock_mhz, ecc_enabled, api_version ("CUDA 13.0", "HIP 6.2.41134"),
        bindings (the Python binding and its version); HIP also driver_version."""
        ...

    def check_same_driver(self) -> None:
        """After the C++ core loaded its driver library: LibraryError if it is not the one the Python
        bindings use (one process must use one driver)."""
        ...

    def compile_driver_version(self) -> int | None:
        """The driver version that limits what a compiler may emit for this device (CUDA: the newest
        PTX the driver loads follows from it), or None where the driver limits nothing (AMD)."""

    def make_current(self) -> None:
        """Makes this device the calling thread's current one (context / device)."""
    def properties(self) -> DeviceProperties: ...
    def memory_info(self) -> tuple[int, int]:
        """(free, total) device memory, bytes."""
    def allocate(self, nbytes: int) -> int: ...
    def pointer_memory(self, address: int) -> PointerMemory:
        """What memory `address` is in, as the driver knows it (CUDA: cuPointerGetAttributes;
        HIP: hipPointerGetAttributes and hipMemGetAddressRange)."""
    def free(self, address: int) -> None: ...
    def copy_to_device(self, address: int, host: np.ndarray) -> None: ...
    def copy_to_host(self, host: np.ndarray, address: int) -> None: ...
    def load_module(self, image: bytes) -> int: ...
    def unload_module(self, module: int) -> None: ...
    def function(self, module: int, name: str) -> int:
        """The kernel's function handle; raises DriverError if absent."""
    def kernel_params(self, module: int, function: int) -> list[KernelParam] | None:
        """The parameters as the driver reports them, or None where it cannot."""
    def kernel_names(self, module: int) -> list[str] | None:
        """The module's kernels as the driver reports them, or None where it cannot."""
    def function_limits(self, function: int) -> FunctionLimits:
        """The kernel's own limits: threads per block and static shared memory."""
    def set_max_dynamic_shared(self, function: int, nbytes: int) -> None:
        """Lets the kernel launch with up to `nbytes` of dynamic shared memory, bytes (the opt-in
        above the default limit, `DeviceProperties.max_shared_bytes`)."""
    def create_stream(self) -> int: ...
    def destroy_stream(self, stream: int) -> None: ...
    def synchronize_stream(self, stream: int) -> None: ...
    def synchronize(self) -> None: ...
