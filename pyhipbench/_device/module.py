"""A loaded code object and the kernels in it."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from .._values import show
from ..errors import BenchError
from .backends.base import Backend, FunctionLimits, KernelParam

if TYPE_CHECKING:
    from .._launch.launch_config import LaunchConfig
    from .device import Device


@dataclass(frozen=True)
class Kernel:
    """One kernel: its function handle and its parameter list (offsets and sizes, bytes)."""
    name: str
    handle: int
    params: tuple[KernelParam, ...]
    module: "Module" = field(repr=False)

    @property
    def device(self) -> Device:
        return self.module.device

    @cached_property
    def limits(self) -> FunctionLimits:
        """Threads per block this kernel's register use allows, and its static shared memory (bytes)."""
        return self.module.device.backend.function_limits(self.handle)

    def prepare(self, config: LaunchConfig) -> None:
        """Checks `config` against this kernel's own limits (BenchError naming both numbers) and, where
        its static + dynamic shared memory exceeds the device's default limit, raises the kernel's maximum
        dynamic shared memory to `config.shared_bytes` (the driver's per-kernel opt-in). Nothing is launched."""
        if config.needs_shared_optin(self.name, self.limits, self.device.properties) \
                and self.module.dynamic_shared_limit.get(self.name, 0) < config.shared_bytes:
            self.module.device.backend.set_max_dynamic_shared(self.handle, config.shared_bytes)
            self.module.dynamic_shared_limit[self.name] = config.shared_bytes


class Module:
    """A code object loaded on a device. `params_by_kernel` is what the code object says,
    or None when only the driver can tell (cubin, fatbin); `target` the processor it was built
    for ("sm_90a", "gfx942:sramecc+:xnack-"), None where the code object does not say.

    A tuner loading thousands of candidates unloads each when done: `unload()`,
    or `with device.load_module(...) as module:`.
    """

    def __init__(self, device: Device, handle: int, image_format: str,
                 params_by_kernel: dict[str, list[KernelParam]] | None, target: str | None) -> None:
        self.device = device
        self.handle = handle
        self.format = image_format
        self.target = target
        self._params = params_by_kernel
        self._kernels: dict[str, Kernel] = {}
        # Each kernel's maximum dynamic shared memory raised so far (bytes), so it is set once per size.
        self.dynamic_shared_limit: dict[str, int] = {}

    @property
    def _backend(self) -> Backend:
        return self.device.backend

    def kernel_names(self) -> list[str]:
        if self._params is not None:
            return sorted(self._params)
        return self._backend.kernel_names(self.handle) or []

    def unload(self) -> None:
        """Releases the module's code from the device; its kernels can no longer be launched."""
        if self.handle:
            handle, self.handle = self.handle, 0
            self._kernels.clear()
            self.dynamic_shared_limit.clear()
            self._backend.unload_module(handle)

    def __enter__(self) -> Module:
        return self

    def __exit__(self, *exc: object) -> None:
        self.unload()

    def kernel(self, name: str) -> Kernel:
        """The kernel called `name`; BenchError listing the module's kernels if none is."""
        if not isinstance(name, str):
            raise BenchError(f"kernel name {show(name)}: expected a string, got {type(name).__name__}")
        if not self.handle:
            raise BenchError(f"kernel {name!r}: this {self.format} module has been unloaded")
        if name in self._kernels:
            return self._kernels[name]
        names = self.kernel_names()
        if name not in names:
            listed = ", ".join(names) or "none"
            raise BenchError(f"no kernel {name!r} in this {self.format} module; its kernels: {listed}")
        handle = self._backend.function(self.handle, name)
        params = self._params[name] if self._params is not None else self._backend.kernel_params(self.handle, handle)
        if params is None:
            raise BenchError(f"cannot read the parameters of kernel {name!r} from this {self.format} module")
        kernel = self._kernels[name] = Kernel(name, handle, tuple(params), self)
        return kernel
