"""R argument sets for one kernel: the caller's arrays plus R - 1 device copies.

Set 0 is the caller's own arrays; set s > 0 replaces every rotated array with
its own copy, filled from the original once, before timing. Shared arrays,
scalars and raw pointers are the same in every set.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .args import Argument, pack_args
from .backends.base import KernelParam
from .memory import DeviceArray

if TYPE_CHECKING:
    from .device import Device


def rotated_arrays(args: list[Argument]) -> list[DeviceArray]:
    """The device arrays that rotate, each once however often it is passed."""
    return list({id(a): a for a in args if isinstance(a, DeviceArray)}.values())


class ArgumentSets:
    """The R sets, as a context manager that frees the copies on exit."""

    def __init__(self, device: Device, params: tuple[KernelParam, ...], args: list[Argument],
                 sets: int) -> None:
        self._params, self._args = params, args
        self.rotated = rotated_arrays(args)
        self._copies: list[dict[int, DeviceArray]] = [{id(a): a for a in self.rotated}]
        try:
            for _ in range(sets - 1):
                copy: dict[int, DeviceArray] = {}
                self._copies.append(copy)
                for array in self.rotated:
                    copy[id(array)] = device.empty(array.shape, array.dtype)
                    device.backend.copy_device(copy[id(array)].address, array.address, array.nbytes)
        except BaseException:
            self._free_quietly()
            raise

    def __len__(self) -> int:
        return len(self._copies)

    def array(self, s: int, original: DeviceArray) -> DeviceArray:
        """The array that stands for `original` in set `s`."""
        return self._copies[s][id(original)]

    def packed(self) -> list[bytes]:
        """Each set's kernel argument buffer."""
        return [pack_args(self._params, self._args, lambda a, s=s: self.array(s, a).address)
                for s in range(len(self))]

    def free(self) -> None:
        """Frees every copy (set 0, the caller's, stays); raises the first failure after trying all."""
        errors = []
        for copy in self._copies[1:]:
            for array in copy.values():
                try:
                    array.free()
                except Exception as error:
                    errors.append(error)
        del self._copies[1:]
        if errors:
            raise errors[0]

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
