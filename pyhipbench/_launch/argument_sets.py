"""R argument sets for a chain of kernels: the caller's arrays plus R - 1 device copies.

Set 0 is the caller's own arrays; set s > 0 replaces every rotated array with
its own copy. Shared arrays, scalars and raw pointers are the same in every set.
An array passed to several kernels of a chain (a split-K workspace written by
the first and read by the second) is copied once per set: within a set, every
kernel sees the same copy.

The copies are the C++ core's `RotatedBuffers` (csrc/rotated_buffers.cpp), what
C++ embedders use too: all R - 1 copy sets in one device allocation, each array
256-byte aligned in its set, filled in one copy per array and then about
log2(R) doubling copies. This module chooses what rotates and packs each
kernel's argument buffer of each set.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .. import _core
from .._device.backends.base import KernelParam
from .._device.memory import DeviceArray
from .args import Argument, pack_args

if TYPE_CHECKING:
    from .._device.device import Device

KernelArgs = tuple[tuple[KernelParam, ...], list[Argument]]  # one kernel's parameters and arguments


def rotated_arrays(args: Sequence[Argument]) -> list[DeviceArray]:
    """The device arrays that rotate, each once however often it is passed."""
    return list({id(a): a for a in args if isinstance(a, DeviceArray)}.values())


class ArgumentSets:
    """The R sets of a chain's kernels (`kernels`: each one's parameters and arguments, in order), as a
    context manager that frees the copies on exit."""

    def __init__(self, device: Device, kernels: Sequence[KernelArgs], sets: int) -> None:
        self._kernels, self._sets = list(kernels), sets
        self.rotated = rotated_arrays([a for _, args in self._kernels for a in args])
        # An empty array has no bytes to copy: it is the same (empty) array in every set.
        copied = [a for a in self.rotated if a.nbytes > 0]
        self._index = {id(a): i for i, a in enumerate(copied)}
        self._copies: _core.RotatedBuffers | None = None
        if sets > 1 and copied:
            self._copies = _core.RotatedBuffers(device.driver, device.backend.context,
                                                [(a.address, a.nbytes) for a in copied], sets)

    def __len__(self) -> int:
        return self._sets if self._copies is None else self._copies.sets

    def address(self, s: int, original: DeviceArray) -> int:
        """The device address that stands for `original` in set `s`."""
        index = self._index.get(id(original))
        if s == 0 or index is None or self._copies is None:  # set 0, an empty array, or one set only
            return original.address
        return self._copies.address(s, index)

    def array(self, s: int, original: DeviceArray) -> DeviceArray:
        """The array that stands for `original` in set `s` (a view into the copies for s > 0)."""
        if s == 0:
            return original
        return DeviceArray.view(original._backend, self.address(s, original), original.shape, original.dtype)

    def packed(self, kernel: int = 0) -> list[bytes]:
        """Kernel `kernel`'s argument buffer of each set."""
        params, args = self._kernels[kernel]
        return [pack_args(params, args, lambda a, s=s: self.address(s, a)) for s in range(len(self))]

    def free(self) -> None:
        """Frees the copies (set 0, the caller's, stays). Never raises: the core frees quietly, since a
        driver that fails a free has lost the context (a fault), and the memory with it."""
        if self._copies is not None:
            self._copies.free()

    def __enter__(self) -> ArgumentSets:
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        self.free()
