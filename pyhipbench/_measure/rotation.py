"""How many argument sets to rotate through: the whole policy, in one place.

Rotating R copies of the argument buffers means no iteration finds the previous
one's data in cache. With one set of S bytes and a last-level cache of C bytes:

    R = 2                  if S >= C   (the other set has been evicted)
    R = 2 * ceil(C / S)    otherwise   (2x the sets needed to overflow the cache)

then capped so the R - 1 extra copies fit in free device memory minus a
headroom. R = 1 is warm (the same set every time). This yields a *dirty* cold
cache (earlier iterations' outputs are still being written back), which is why
every result names its cache state.

The C++ core owns the rule (csrc/include/pyhipbench/rotation.hpp), so a C++
tuner gets the same R; this module checks Python's input, warns when free
memory cut R, and returns a `Rotation`.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

from .. import _core
from .._values import integer
from ..errors import BenchError

MIN_HEADROOM_BYTES: int = _core.MIN_HEADROOM_BYTES  # left free for the driver, code and the kernel's scratch
HEADROOM_FRACTION: float = _core.HEADROOM_FRACTION  # of total device memory, when larger than the minimum
MAX_BYTES = (1 << 64) - 1                           # the core counts bytes in 64 bits


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


def checked_rotate(rotate: object) -> int | str:
    """`rotate` if it is "auto" or a set count >= 1 (as a Python int), else BenchError naming it."""
    if isinstance(rotate, str):
        if rotate != "auto":
            raise BenchError(f"rotate={rotate!r}: expected 'auto' or a set count >= 1")
        return rotate
    return integer("rotate", rotate, 1, unit="argument sets, or 'auto'")


def headroom_bytes(total_bytes: int) -> int:
    """Device memory left free, bytes: HEADROOM_FRACTION of `total_bytes`, at least MIN_HEADROOM_BYTES."""
    return _core.headroom_bytes(total_bytes)


def plan_rotation(set_bytes: int, llc_bytes: int, free_bytes: int, total_bytes: int,
                  rotate: int | str = "auto", launches: int | None = None) -> Rotation:
    """R for one set of `set_bytes` (bytes). `rotate` is "auto", or R itself (1 = warm).

    `launches`: the most launches the run can make (warm-up included); "auto"
    makes no more sets than that, since a set no launch reaches costs memory
    and copying and changes nothing: each launch still finds its set untouched
    since it was copied, R - 1 sets ago at the least. Warns RotationCapped when
    free memory cut R below what the cache asks for.
    """
    rotate = checked_rotate(rotate)
    set_bytes, llc_bytes, free_bytes, total_bytes = (
        integer(name, value, 0, MAX_BYTES, unit="bytes") for name, value in (
            ("set_bytes", set_bytes), ("llc_bytes", llc_bytes), ("free_bytes", free_bytes),
            ("total_bytes", total_bytes)))
    launches = None if launches is None else integer("launches", launches, 1)
    sets, wanted, reason = _core.plan_rotation(set_bytes, llc_bytes, free_bytes, total_bytes,
                                               None if isinstance(rotate, str) else rotate, launches)
    if sets < wanted:
        warnings.warn(RotationCapped(f"rotation capped from {wanted} to {sets} sets ({reason})"), stacklevel=3)
    return Rotation(sets, set_bytes, llc_bytes, reason, wanted)
