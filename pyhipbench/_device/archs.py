"""Per-architecture facts the runtimes do not report, and named device profiles.

HIP reports one XCD's L2 on MI300 (4 MB on gfx942), but the last-level cache is
the 256 MB Infinity Cache; rotation sized from L2 would leave data warm in it.
So the last-level cache comes from this table where the arch has a cache past
L2, and is the reported L2 elsewhere (NVIDIA's LLC is its L2).
"""
from __future__ import annotations

from dataclasses import dataclass

MiB = 1 << 20
GiB = 1 << 30

# Caches past L2 (AMD Infinity Cache / MALL), bytes, from AMD's product specs.
INFINITY_CACHE_BYTES: dict[str, int] = {
    "gfx942": 256 * MiB,   # MI300X / MI300A / MI325X
    "gfx950": 256 * MiB,   # MI350X / MI355X
    "gfx1100": 96 * MiB,   # RX 7900 XTX
}


def base_arch(arch: str) -> str:
    """'gfx942:sramecc+:xnack-' -> 'gfx942' (HIP appends target features)."""
    return arch.split(":", 1)[0]


def last_level_cache_bytes(arch: str, l2_bytes: int) -> int:
    """The last-level cache for `arch`, bytes: the table's entry, else the L2."""
    return INFINITY_CACHE_BYTES.get(base_arch(arch), l2_bytes)


@dataclass(frozen=True)
class DeviceProfile:
    """A device described without one present: for planning runs on a CPU-only machine."""
    name: str
    backend: str
    arch: str
    l2_bytes: int
    total_bytes: int

    @property
    def llc_bytes(self) -> int:
        return last_level_cache_bytes(self.arch, self.l2_bytes)


# Keyed by the short names the CLI takes (--profile).
PROFILES: dict[str, DeviceProfile] = {
    # total_bytes: the H200's as its driver reports it (cuDeviceTotalMem); the others, the vendor's nominal size
    "h200": DeviceProfile("NVIDIA H200", "cuda", "sm_90", 60 * MiB, 150_109_880_320),
    "h100": DeviceProfile("NVIDIA H100 80GB HBM3", "cuda", "sm_90", 50 * MiB, 80 * 10**9),
    "mi300x": DeviceProfile("AMD Instinct MI300X", "hip", "gfx942", 4 * MiB, 192 * 10**9),
    "mi355x": DeviceProfile("AMD Instinct MI355X", "hip", "gfx950", 4 * MiB, 288 * 10**9),
    "mi250x": DeviceProfile("AMD Instinct MI250X", "hip", "gfx90a", 8 * MiB, 64 * 10**9),
    "rx7900xtx": DeviceProfile("AMD Radeon RX 7900 XTX", "hip", "gfx1100", 6 * MiB, 24 * 10**9),
}
