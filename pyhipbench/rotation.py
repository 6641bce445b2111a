"""How many argument sets to rotate through: the whole policy, in one place.

Rotating R copies of the argument buffers means no iteration finds the previous
one's data in cache. With one set of S bytes and a last-level cache of C bytes:

    R = 2                  if S >= C   (the other set has been evicted)
    R = 2 * ceil(C / S)    otherwise   (2x the sets needed to overflow the cache)

then capped so the R - 1 extra copies fit in free device memory minus a
headroom. R = 1 is warm (the same set every time). This yields a *dirty* cold
cache (earlier iterations' outputs are still being written back), which is why
every result names its cache state.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

from .archs import GiB, MiB
from .errors import BenchError

MIN_HEADROOM_BYTES = 256 * MiB  # left free for the driver, code and the kernel's scratch
HEADROOM_FRACTION = 0.05        # of total device memory, when larger than the minimum


class RotationCapped(UserWarning):
    """Free memory cut the rotation below what the cache size asks for."""


@dataclass(frozen=True)
class Rotation:
    sets: int              # R: argument sets used in turn
    set_bytes: int         # bytes of one rotated set (the arrays that rotate)
    llc_bytes: int         # last-level cache it was sized against, bytes
    reason: str            # why R is what it is, in words
    wanted: int            # R before the memory cap (== sets unless capped)

    @property
    def extra_bytes(self) -> int:
        """Device memory the R - 1 copies take, bytes."""
        return (self.sets - 1) * self.set_bytes


def headroom_bytes(total_bytes: int) -> int:
    return max(MIN_HEADROOM_BYTES, int(total_bytes * HEADROOM_FRACTION))


def plan_rotation(set_bytes: int, llc_bytes: int, free_bytes: int, total_bytes: int,
                  rotate: int | str = "auto", launches: int | None = None) -> Rotation:
    """R for one set of `set_bytes` (bytes). `rotate` is "auto", or R itself (1 = warm).

    `launches`: the most launches the run can make (warm-up included); "auto"
    makes no more sets than that, since a set no launch reaches costs memory
    and copying and changes nothing: each launch still finds its set untouched
    since it was copied, R - 1 sets ago at the least.
    """
    available = max(free_bytes - headroom_bytes(total_bytes), 0)
    fits = 1 + (available // set_bytes if set_bytes else 0)  # sets that fit, the original included
    if rotate != "auto":
        if isinstance(rotate, bool) or not isinstance(rotate, int) or rotate < 1:
            raise BenchError(f"rotate={rotate!r}: expected 'auto' or a set count >= 1")
        if set_bytes == 0 and rotate > 1:
            raise BenchError(f"rotate={rotate}: no argument is a rotated device array, so there is "
                             "nothing to rotate; use rotate=1 or pass device arrays")
        if rotate > fits:
            raise BenchError(
                f"rotate={rotate} sets of {set_bytes} bytes cannot fit in device memory: "
                f"{_gib(free_bytes)} free less {_gib(headroom_bytes(total_bytes))} headroom "
                f"holds {fits} (the original included)")
        return Rotation(rotate, set_bytes, llc_bytes, f"set by the caller (rotate={rotate})", rotate)
    if set_bytes == 0:
        return Rotation(1, 0, llc_bytes, "no rotated device array: nothing to rotate", 1)
    if set_bytes >= llc_bytes:
        wanted = 2
        reason = f"one set ({_mib(set_bytes)}) >= last-level cache ({_mib(llc_bytes)}): 2 sets"
    else:
        wanted = 2 * math.ceil(llc_bytes / set_bytes)
        reason = (f"2 x ceil(last-level cache {_mib(llc_bytes)} / set {_mib(set_bytes)}) "
                  f"= {wanted} sets")
    if launches is not None and wanted > launches:
        wanted, reason = launches, f"{reason}, capped to {launches}: the run makes no more launches"
    if wanted <= fits:
        return Rotation(wanted, set_bytes, llc_bytes, reason, wanted)
    if fits < 2:
        raise BenchError(
            f"rotated sets cannot fit in device memory: a second set of {set_bytes} bytes needs "
            f"more than the {_gib(free_bytes)} free less {_gib(headroom_bytes(total_bytes))} headroom; "
            "pass rotate=1 for a warm run, or use smaller arrays")
    note = (f"{reason}, capped to {fits} by free memory ({_gib(free_bytes)} free, "
            f"{_gib(headroom_bytes(total_bytes))} headroom): {wanted - fits} sets short")
    warnings.warn(RotationCapped(f"rotation capped from {wanted} to {fits} sets ({note})"), stacklevel=3)
    return Rotation(fits, set_bytes, llc_bytes, note, wanted)


def _mib(n: int) -> str:
    return f"{n / MiB:.1f} MiB"


def _gib(n: int) -> str:
    return f"{n / GiB:.2f} GiB"
