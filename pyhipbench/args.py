"""Kernel arguments: explicitly typed scalars, raw device pointers, shared arrays.

A kernel's parameters have sizes but no types a driver can check, so scalars
are typed by the caller (`int64(n)`, not a bare `n`) and packed little-endian
to exactly that size.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .backends.base import KernelParam
from .errors import BenchError
from .memory import DeviceArray


@dataclass(frozen=True)
class Scalar:
    """A by-value kernel argument of a fixed numpy dtype."""
    value: int | float
    dtype: np.dtype

    @property
    def nbytes(self) -> int:
        return self.dtype.itemsize

    def pack(self) -> bytes:
        return np.array(self.value, dtype=self.dtype.newbyteorder("<")).tobytes()


def _scalar(dtype: str) -> Callable[[int | float], Scalar]:
    dt = np.dtype(dtype)

    def make(value: int | float) -> Scalar:
        if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
            raise BenchError(f"{dt.name}({value!r}): expected a number")
        if dt.kind in "iu":
            info = np.iinfo(dt)
            if not isinstance(value, (int, np.integer)):
                raise BenchError(f"{dt.name}({value!r}): expected an integer")
            if not info.min <= value <= info.max:
                raise BenchError(f"{dt.name}({value}): out of range [{info.min}, {info.max}]")
        elif np.isfinite(value) and abs(float(value)) > float(np.finfo(dt).max):
            raise BenchError(f"{dt.name}({value!r}): out of range, the largest {dt.name} is "
                             f"{float(np.finfo(dt).max)!r}")
        return Scalar(value, dt)

    make.__name__ = make.__qualname__ = dt.name
    make.__doc__ = f"A {dt.itemsize}-byte {dt.name} kernel argument."
    return make


int8 = _scalar("int8")
int16 = _scalar("int16")
int32 = _scalar("int32")
int64 = _scalar("int64")
uint8 = _scalar("uint8")
uint16 = _scalar("uint16")
uint32 = _scalar("uint32")
uint64 = _scalar("uint64")
float16 = _scalar("float16")
float32 = _scalar("float32")
float64 = _scalar("float64")


@dataclass(frozen=True)
class Pointer:
    """A raw device address passed as is: never rotated, never freed by pyhipbench."""
    address: int
    nbytes = 8

    def __post_init__(self) -> None:
        if isinstance(self.address, bool) or not isinstance(self.address, (int, np.integer)) \
                or not 0 <= self.address < 1 << 64:
            raise BenchError(f"Pointer({self.address!r}): expected an address, an integer in [0, 2**64)")

    def pack(self) -> bytes:
        return self.address.to_bytes(8, "little")


@dataclass(frozen=True)
class Shared:
    """A device array every rotated set uses as is (not copied)."""
    array: DeviceArray


def shared(array: DeviceArray) -> Shared:
    """Marks `array` as not rotated: all sets see this one buffer."""
    if not isinstance(array, DeviceArray):
        raise BenchError(f"shared() takes a device array, got {type(array).__name__}")
    return Shared(array)


Argument = DeviceArray | Shared | Scalar | Pointer


def check_args(kernel_name: str, params: tuple[KernelParam, ...], args: list[Argument]) -> None:
    """Count, kind and size of each argument against the kernel's parameters."""
    if len(args) != len(params):
        names = ", ".join(f"{p.name} ({p.size} B)" for p in params) or "none"
        raise BenchError(f"kernel {kernel_name!r} takes {len(params)} arguments ({names}), "
                         f"got {len(args)}")
    for i, (param, arg) in enumerate(zip(params, args)):
        array = arg.array if isinstance(arg, Shared) else arg
        if isinstance(array, DeviceArray) and not array.address:
            raise BenchError(f"argument {i} ({param.name}) of kernel {kernel_name!r} is a freed "
                             "device array; expected a live one")
        if isinstance(arg, (DeviceArray, Shared, Pointer)):
            size, what = 8, "a device pointer (8 B)"
        elif isinstance(arg, Scalar):
            size, what = arg.nbytes, f"{arg.dtype.name} ({arg.nbytes} B)"
        else:
            raise BenchError(
                f"argument {i} ({param.name}) of kernel {kernel_name!r} is of type {type(arg).__name__}; "
                "expected a device array, shared(array), a typed scalar such as "
                "pyhipbench.int64(n), or pyhipbench.Pointer(address)")
        if size != param.size:
            raise BenchError(f"argument {i} ({param.name}) of kernel {kernel_name!r} is {what}, "
                             f"but the parameter is {param.size} bytes")


def pack_args(params: tuple[KernelParam, ...], args: list[Argument],
              address_of: Callable[[DeviceArray], int]) -> bytes:
    """The argument buffer of one set: each value at its parameter's offset.
    `address_of(array)` gives the device address this set uses for a rotated array."""
    buffer = bytearray(max((p.offset + p.size for p in params), default=0))
    for param, arg in zip(params, args):
        if isinstance(arg, DeviceArray):
            value = address_of(arg).to_bytes(8, "little")
        elif isinstance(arg, Shared):
            value = arg.array.address.to_bytes(8, "little")
        else:
            value = arg.pack()
        buffer[param.offset:param.offset + param.size] = value
    return bytes(buffer)
