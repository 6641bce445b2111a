"""Physical bounds the GPU tests hold measured times to."""
from __future__ import annotations

import pyhipbench as hb

# Peak device-memory bandwidth, bytes/s (vendors' figures): nothing moves data
# between HBM and the chip faster, so no kernel can beat bytes / peak.
HBM_PEAK_BYTES_PER_S = {"H200": 4.8e12, "H100": 3.35e12}
FASTEST_HBM_BYTES_PER_S = 8.0e12  # B200: the bound for a GPU not in the table
L1_BYTES_PER_SM = 256 << 10


def hbm_peak_bytes_per_s(device: hb.Device) -> float:
    return next((v for k, v in HBM_PEAK_BYTES_PER_S.items() if k in device.name), FASTEST_HBM_BYTES_PER_S)


def peak_time_us(device: hb.Device, moved_bytes: int) -> float:
    """How long (µs) moving `moved_bytes` through HBM takes at the device's peak bandwidth."""
    return moved_bytes / hbm_peak_bytes_per_s(device) * 1e6


def on_chip_bytes(device: hb.Device) -> int:
    """The most data the chip can hold when a kernel starts: the last-level cache plus every
    SM's L1 (256 KiB of L1/shared memory per SM on Hopper and Blackwell, the most of any)."""
    return device.properties.llc_bytes + device.properties.compute_units * L1_BYTES_PER_SM


def hbm_floor_us(device: hb.Device, read_bytes: int) -> float:
    """The least time (µs) a kernel that reads `read_bytes` bytes can take on `device`:
    whatever of them is not on chip must cross the HBM interface at no more than peak."""
    return peak_time_us(device, max(read_bytes - on_chip_bytes(device), 0))
