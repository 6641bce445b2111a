"""R argument sets for one kernel: the caller's arrays plus R - 1 device copies.

Set 0 is the caller's own arrays; set s > 0 replaces every rotated array with
its own copy. Shared arrays, scalars and raw pointers are the same in every set.

All R - 1 copies live in one device allocation: copy set s occupies
[(s - 1) * stride, s * stride), each rotated array at its own 256-byte-aligned
offset inside it. They are filled before timing in about log2(R) device copies:
the originals into copy set 1, then the filled sets into the next as many, and
so on. So a tiny set that needs thousands of copies to span the last-level
cache costs one allocation and a dozen copies, not thousands of each.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .args import Argument, pack_args
from .._device.backends.base import KernelParam
from .._device.memory import DeviceArray

if TYPE_CHECKING:
    from .._device.device import Device

ALIGNMENT = 256  # bytes: what cuMemAlloc and hipMalloc guarantee, enough for any vector access


def rotated_arrays(args: list[Argument]) -> list[DeviceArray]:
    """The device arrays that rotate, each once however often it is passed."""
    return list({id(a): a for a in args if isinstance(a, DeviceArray)}.values())


def set_layout(arrays: list[DeviceArray]) -> tuple[list[int], int]:
    """(offset of each array in a copy set, the set's stride), bytes, each offset aligned."""
    offsets, end = [], 0
    for array in arrays:
        offsets.append(end)
        end += -(-max(array.nbytes, 1) // ALIGNMENT) * ALIGNMENT
    return offsets, end


class ArgumentSets:
    """The R sets, as a context manager that frees the copies on exit."""

    def __init__(self, device: Device, params: tuple[KernelParam, ...], args: list[Argument],
                 sets: int) -> None:
        self._params, self._args, self._sets = params, args, sets
        self.rotated = rotated_arrays(args)
        self._offsets, self.stride = set_layout(self.rotated)
        self._block: DeviceArray | None = None
        if sets > 1 and self.rotated:
            self._block = device.empty((sets - 1) * self.stride, "uint8")
            try:
                self._fill(device)
            except BaseException:
                self._free_quietly()
                raise

    def _fill(self, device: Device) -> None:
        copy = device.backend.copy_device
        base = self._block.address
        for array, offset in zip(self.rotated, self._offsets):
            copy(base + offset, array.address, array.nbytes)
        filled = 1
        while filled < self._sets - 1:
            count = min(filled, self._sets - 1 - filled)
            copy(base + filled * self.stride, base, count * self.stride)
            filled += count

    def __len__(self) -> int:
        return self._sets if self._block is not None or not self.rotated else 1

    def address(self, s: int, original: DeviceArray) -> int:
        """The device address that stands for `original` in set `s`."""
        if s == 0:
            return original.address
        index = next(i for i, a in enumerate(self.rotated) if a is original)
        return self._block.address + (s - 1) * self.stride + self._offsets[index]

    def array(self, s: int, original: DeviceArray) -> DeviceArray:
        """The array that stands for `original` in set `s` (a view into the copies for s > 0)."""
        if s == 0:
            return original
        return DeviceArray.view(original._backend, self.address(s, original), original.shape, original.dtype)

    def packed(self) -> list[bytes]:
        """Each set's kernel argument buffer."""
        return [pack_args(self._params, self._args, lambda a, s=s: self.address(s, a))
                for s in range(len(self))]

    def free(self) -> None:
        """Frees the copies (set 0, the caller's, stays)."""
        block, self._block = self._block, None
        if block is not None:
            block.free()

    def _free_quietly(self) -> None:
        # An error is already on its way out (often a kernel fault, after which
        # the driver fails every call): it, not a failed free, is what to report.
        try:
            self.free()
        except Exception:
            pass

    def __enter__(self) -> ArgumentSets:
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        if exc_type is None:
            self.free()
        else:
            self._free_quietly()
