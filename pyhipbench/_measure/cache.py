"""Cache states: what the last-level cache holds when a timed kernel starts.

    warm         the kernel's own data, from the launch before (one argument set)
    dirty-cold   none of the kernel's data, but earlier launches' outputs, still
                 dirty: R rotated argument sets spanning twice the last-level
                 cache (rotation.py); the timed kernel pays for their write-backs
    clean-cold   none of the kernel's data and nothing dirty, as Nsight Compute's
                 `--cache-control all` gives: before each timed launch, outside
                 its timing, a clean step reads a zero-filled buffer of 1.25x the
                 last-level cache (CLEAN_BYTES_PER_LLC; kernels/clean.ptx,
                 kernels/amdgpu.ll `clean`);
                 one argument set

Measured on the H200 (docs/measurement.md): rotation is cold only once the
sets between two uses of one span the cache, so a small set needs thousands
of sets; and dirty-cold reads up to 1.5x clean-cold on a 16 MiB copy. So both
are offered and every result names the one it was measured in.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .._launch.args import pack_args, uint64
from .._values import integer

if TYPE_CHECKING:
    from .. import _core
    from .._device.device import Device

CACHE_STATES = ("warm", "dirty-cold", "clean-cold")
DEFAULT_CACHE_STATE = "clean-cold"  # chosen from the H200 study: docs/measurement.md
# The clean step reads this many times the last-level cache. On the H200 the
# clean-cold medians of the 1-64 MiB copies are the same (within their CIs)
# for reads of 1x, 1.25x, 1.5x and 2x the LLC (bench/throughput.py,
# docs/measurement.md); 1.25x keeps a margin over the smallest and costs
# ~40 % less per sample than 2x.
CLEAN_BYTES_PER_LLC = 1.25
CLEAN_BLOCK = 256
CLEAN_BLOCKS_PER_UNIT = 8           # blocks per compute unit: enough to keep every unit reading


class CleanStep:
    """The device side of clean-cold: the zero-filled buffer and the loaded `clean` kernel.

    Made once per device (`clean_step(device)`), reused by every clean-cold run.
    `read_bytes`: how much the clean step reads, bytes (None: CLEAN_BYTES_PER_LLC
    times the last-level cache); rounded down to whole 16-byte loads.
    bench/throughput.py sweeps it to find the smallest read that leaves the
    clean-cold median unchanged.
    """

    def __init__(self, device: Device, read_bytes: int | None = None) -> None:
        if read_bytes is None:
            read_bytes = int(CLEAN_BYTES_PER_LLC * device.properties.llc_bytes)
        self.nbytes = integer("read_bytes", read_bytes, 16, unit="bytes") // 16 * 16  # whole 16-byte loads
        self.buffer = device.array(np.zeros(self.nbytes // 4, np.float32))
        self.sink = device.empty(1, np.float32)
        self.kernel = device.bundled_kernel("clean")
        self.grid = device.properties.compute_units * CLEAN_BLOCKS_PER_UNIT
        # The same launch for every plan: its arguments packed once.
        args = [self.buffer, uint64(self.buffer.nbytes // 4), self.sink]
        self._packed = pack_args(self.kernel.params, args, lambda array: array.address)
        self._offsets = [p.offset for p in self.kernel.params]

    def attach(self, plan: _core.LaunchPlan) -> None:
        """Makes `plan` launch the clean step before each timed launch."""
        plan.set_clean_step(self.kernel.handle, "clean step", (self.grid, 1, 1), (CLEAN_BLOCK, 1, 1),
                            self._packed, self._offsets)

    def free(self) -> None:
        self.buffer.free()
        self.sink.free()


def clean_step(device: Device) -> CleanStep:
    """`device`'s clean step: its buffer (CLEAN_BYTES_PER_LLC times the last-level cache, bytes) is
    allocated on first use and kept while the device lives."""
    return device.keep(clean_step, lambda: CleanStep(device))
