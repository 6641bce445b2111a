"""Grid, block and shared memory of a launch, checked against the device's limits."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._device.backends.base import DeviceProperties, FunctionLimits
from .._values import integer, show
from ..errors import BenchError

Dims = int | tuple[int, ...]

MAX_DIM = (1 << 32) - 1  # the launch calls and the core's LaunchConfig take each grid and block dimension as 32 bits


def dims(name: str, value: Dims) -> tuple[int, int, int]:
    """`value` as three grid or block dimensions: one integer, or 1 to 3 of them (tuple, list or
    1-D array; numpy integers included), each in [1, MAX_DIM], padded with 1s. BenchError naming
    `name` and the value otherwise: the one check of dimensions, for bench(), sweep candidates and the CLI."""
    if isinstance(value, (tuple, list)) or (isinstance(value, np.ndarray) and value.ndim == 1):
        if not 1 <= len(value) <= 3:
            raise BenchError(f"{name}={show(value)}: expected 1 to 3 integers, got {len(value)}")
        checked = [integer(f"{name}[{i}]", d, 1, MAX_DIM) for i, d in enumerate(value)]
    else:
        checked = [integer(name, value, 1, MAX_DIM)]
    x, y, z = checked + [1] * (3 - len(checked))
    return x, y, z


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
        config = cls(dims("grid", grid), dims("block", block),
                     integer("shared_bytes", shared_bytes, 0, props.max_shared_bytes_optin,
                             unit="bytes; the device's opt-in maximum per block"))
        for axis, (g, b, max_g, max_b) in enumerate(zip(config.grid, config.block, props.max_grid, props.max_block)):
            xyz = "xyz"[axis]
            if b > max_b:
                raise BenchError(f"block {xyz} = {b} exceeds the device's limit {max_b}")
            if g > max_g:
                raise BenchError(f"grid {xyz} = {g} exceeds the device's limit {max_g}")
        props.launch_limits.check(config.grid, config.block)  # BenchError, worded by the core
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
