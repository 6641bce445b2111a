"""R argument sets for one kernel: the caller's arrays plus R - 1 device copies.

Set 0 is the caller's own arrays; set s > 0 replaces every rotated array with
its own copy, filled from the original once, before timing. Shared arrays,
scalars and raw pointers are the same in every set.
"""
from __future__ import annotations

from .args import Argument, pack_args
from .memory import DeviceArray


class ArgumentSets:
    def __init__(self, device, params, args: list[Argument], sets: int) -> None:
        self._params, self._args = params, args
        self.rotated = list({id(a): a for a in args if isinstance(a, DeviceArray)}.values())
        self._copies: list[dict[int, DeviceArray]] = [{id(a): a for a in self.rotated}]
        try:
            for _ in range(sets - 1):
                copy: dict[int, DeviceArray] = {}
                self._copies.append(copy)
                for array in self.rotated:
                    copy[id(array)] = device.empty(array.shape, array.dtype)
                    device.backend.copy_device(copy[id(array)].address, array.address, array.nbytes)
        except BaseException:
            self.free()
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
        """Frees the copies (set 0, the caller's, stays)."""
        for copy in self._copies[1:]:
            for array in copy.values():
                array.free()
        del self._copies[1:]

    def __enter__(self) -> "ArgumentSets":
        return self

    def __exit__(self, *exc) -> None:
        self.free()
