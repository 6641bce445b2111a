"""Grid, block and shared memory of a launch, checked against the device's limits."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._device.backends.base import DeviceProperties, FunctionLimits
from ..errors import BenchError
from .._values import integer, show

Dims = int | tuple[int, ...]


def _dims(name: str, value: Dims) -> tuple[int, int, int]:
    """One integer, or 1 to 3 of them (tuple, list or 1-D array; numpy integers included),
    each >= 1, padded with 1s to three."""
    if isinstance(value, (tuple, list)) or (isinstance(value, np.ndarray) and value.ndim == 1):
        if not 1 <= len(value) <= 3:
            raise BenchError(f"{name}={show(value)}: expected 1 to 3 integers, got {len(value)}")
        dims = tuple(integer(f"{name}[{i}]", d, 1) for i, d in enumerate(value))
    else:
        dims = (integer(name, value, 1),)
    return dims + (1,) * (3 - len(dims))


@dataclass(frozen=True)
class LaunchConfig:
    grid: tuple[int, int, int]   # blocks per dimension
    block: tuple[int, int, int]  # threads per block per dimension
    shared_bytes: int = 0        # dynamic shared memory, bytes

    @property
    def threads(self) -> int:
        """Threads per block."""
        return self.block[0] * self.block[1] * self.block[2]

    @classmethod
    def checked(cls, grid: Dims, block: Dims, shared_bytes: int, props: DeviceProperties) -> "LaunchConfig":
        config = cls(_dims("grid", grid), _dims("block", block),
                     integer("shared_bytes", shared_bytes, 0, props.max_shared_bytes_optin,
                             unit="bytes; the device's opt-in maximum per block"))
        for axis, (g, b, max_g, max_b) in enumerate(zip(config.grid, config.block, props.max_grid, props.max_block)):
            xyz = "xyz"[axis]
            if b > max_b:
                raise BenchError(f"block {xyz} = {b} exceeds the device's limit {max_b}")
            if g > max_g:
                raise BenchError(f"grid {xyz} = {g} exceeds the device's limit {max_g}")
            # hipExtModuleLaunchKernel takes global sizes (grid x block) as 32-bit values.
            if props.backend == "hip" and g * b >= 1 << 32:
                raise BenchError(f"grid {xyz} x block {xyz} = {g * b} threads exceeds HIP's 32-bit global size")
        if config.threads > props.max_threads_per_block:
            raise BenchError(f"block {config.block} has {config.threads} threads; the device allows "
                             f"{props.max_threads_per_block} per block")
        return config

    def needs_shared_optin(self, kernel: str, limits: FunctionLimits, props: DeviceProperties) -> bool:
        """Checks this launch against `kernel`'s own limits (BenchError naming both numbers); whether its
        static + dynamic shared memory exceeds the device's default limit, so the kernel must opt in."""
        if self.threads > limits.max_threads_per_block:
            raise BenchError(f"block {self.block} has {self.threads} threads; kernel {kernel!r} allows at most "
                             f"{limits.max_threads_per_block} per block (its register use and launch bounds)")
        total = limits.static_shared_bytes + self.shared_bytes
        if total > props.max_shared_bytes_optin:
            raise BenchError(f"kernel {kernel!r}: {limits.static_shared_bytes} bytes of static shared memory + "
                             f"shared_bytes={self.shared_bytes} = {total} bytes exceeds the device's opt-in "
                             f"maximum of {props.max_shared_bytes_optin} bytes per block")
        return total > props.max_shared_bytes
