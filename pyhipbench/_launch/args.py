"""Kernel arguments: explicitly typed scalars, raw device pointers, shared arrays, tensors.

A kernel's parameters have sizes but no types a driver can check, so scalars
are typed by the caller (`int64(n)`, not a bare `n`) and packed little-endian
to exactly that size. Tensors (torch, CuPy, JAX: anything with `__dlpack__`)
are taken wherever a DeviceArray is, as views of their own memory
(`adopt_tensors`), so they rotate, or not, as device arrays do.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .._device.backends.base import Backend, KernelParam
from .._device.memory import DeviceArray
from .._values import integer, show
from ..errors import BenchError

SCALAR_DTYPES = tuple(np.dtype(name) for name in (
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64"))
# Each integer dtype's (name, lowest, highest), read once: numpy's iinfo and dtype.name cost microseconds a call.
_INTEGER_RANGES = {d: (d.name, int(np.iinfo(d).min), int(np.iinfo(d).max)) for d in SCALAR_DTYPES if d.kind in "iu"}


@dataclass(frozen=True)
class Scalar:
    """A by-value kernel argument of a fixed numpy dtype (one of SCALAR_DTYPES).

    Integer dtypes take any integral value (Python or numpy) in the dtype's
    range. Float dtypes take any real number; NaN and ±inf are values a kernel
    can be given, but a finite value too large for the dtype (one that would
    round to infinity) is refused. Bools, strings and the like are refused.
    """
    value: int | float
    dtype: np.dtype

    def __post_init__(self) -> None:
        try:  # np.dtype(None) is float64: a missing dtype must not become one
            dtype = None if self.dtype is None else np.dtype(self.dtype)
        except (TypeError, ValueError):
            dtype = None
        if dtype is None or dtype not in SCALAR_DTYPES:
            raise BenchError(f"Scalar dtype {show(self.dtype)} is not one of "
                             f"{', '.join(d.name for d in SCALAR_DTYPES)}")
        value = _integer_value(dtype, self.value) if dtype.kind in "iu" else _float_value(dtype, self.value)
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "value", value)

    @property
    def nbytes(self) -> int:
        return self.dtype.itemsize

    @cached_property
    def _packed(self) -> bytes:  # a frozen value packs the same every time: once, not once per argument set
        return np.array(self.value, dtype=self.dtype.newbyteorder("<")).tobytes()

    def pack(self) -> bytes:
        return self._packed


def _integer_value(dtype: np.dtype, value: object) -> int:
    name, low, high = _INTEGER_RANGES[dtype]
    return integer(name, value, low, high, call=True)


def _float_value(dtype: np.dtype, value: object) -> float:
    label = f"{dtype.name}({show(value)})"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        kind = "a bool" if isinstance(value, (bool, np.bool_)) else type(value).__name__
        raise BenchError(f"{label}: expected a real number (int or float), got {kind}")
    with np.errstate(over="ignore"):
        try:
            as_float = float(value)
        except OverflowError:  # an int or a fraction beyond float64: finite, and too large
            as_float, finite = math.inf, True
        else:  # numpy's own test keeps a long double's range
            finite = bool(np.isfinite(value)) if isinstance(value, np.floating) else math.isfinite(as_float)
        converted = dtype.type(as_float)
    if finite and np.isinf(converted):
        largest = float(np.finfo(dtype).max)
        raise BenchError(f"{label}: out of range, the largest {dtype.name} is {largest!r} "
                         "(a finite value must round to a finite one; nan and inf are passed as they are)")
    return as_float


def _scalar(dtype: str) -> Callable[[int | float], Scalar]:
    dt = np.dtype(dtype)

    def make(value: int | float) -> Scalar:
        return Scalar(value, dt)

    make.__name__ = make.__qualname__ = dt.name
    kind = "integer (any integral type, numpy's included)" if dt.kind in "iu" else \
        "real number (nan and inf allowed; finite values beyond the range are refused)"
    make.__doc__ = f"A {dt.itemsize}-byte {dt.name} kernel argument from a {kind}."
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
    """A raw device address passed as is: never rotated, never freed by pyhipbench.
    Any integral type in [0, 2**64) (numpy's uint64 included) is an address."""
    address: int
    nbytes = 8

    def __post_init__(self) -> None:
        object.__setattr__(self, "address",
                           integer("Pointer", self.address, 0, (1 << 64) - 1, call=True, unit="a device address"))

    def pack(self) -> bytes:
        return self.address.to_bytes(8, "little")


@dataclass(frozen=True)
class Shared:
    """A device array (or a tensor, until bench() views it as one) every rotated set uses as is (not copied)."""
    array: DeviceArray | object

    def shared_address(self) -> int:
        """The shared array's device address (once bench() has made a tensor a DeviceArray view)."""
        if not isinstance(self.array, DeviceArray):
            raise BenchError(f"shared({type(self.array).__name__}): expected a device array or a tensor "
                             "with __dlpack__")
        return self.array.address


def is_tensor(value: object) -> bool:
    """Whether `value` is a foreign array pyhipbench takes through DLPack (torch, CuPy, JAX)."""
    return not isinstance(value, DeviceArray) and hasattr(type(value), "__dlpack__") \
        and hasattr(type(value), "__dlpack_device__")


def shared(array: DeviceArray | object) -> Shared:
    """Marks `array` (a device array or a DLPack tensor) as not rotated: all sets see this one buffer."""
    if not isinstance(array, DeviceArray) and not is_tensor(array):
        raise BenchError(f"shared() takes a device array or a tensor with __dlpack__ (torch, CuPy, JAX), "
                         f"got {type(array).__name__}")
    return Shared(array)


Argument = DeviceArray | Shared | Scalar | Pointer


def adopt_tensors(backend: Backend, kernel_name: str, params: tuple[KernelParam, ...],
                  args: list[object], views: dict[int, DeviceArray] | None = None) -> list[object]:
    """`args` with each tensor (bare or in shared()) replaced by a DeviceArray view of its memory.

    A tensor passed twice becomes one view, so it rotates as one array; `views`
    ({id(tensor): view}, filled here) carries that across the launches of a
    chain. The views hold the tensors (and their DLPack capsules) for as long as
    they live.
    """
    views = {} if views is None else views

    def view(tensor: object, i: int) -> DeviceArray:
        if id(tensor) not in views:
            name = f" ({params[i].name})" if i < len(params) else ""
            views[id(tensor)] = DeviceArray.from_dlpack(
                backend, tensor, f"argument {i}{name} of kernel {kernel_name!r}")
        return views[id(tensor)]

    adopted: list[object] = []
    for i, arg in enumerate(args):
        if is_tensor(arg):
            arg = view(arg, i)
        elif isinstance(arg, Shared) and is_tensor(arg.array):
            arg = Shared(view(arg.array, i))
        adopted.append(arg)
    return adopted


def check_args(kernel_name: str, params: tuple[KernelParam, ...], args: list[object]) -> list[Argument]:
    """`args` once their count, kind and size are checked against the kernel's parameters."""
    if len(args) != len(params):
        names = ", ".join(f"{p.name} ({p.size} B)" for p in params) or "none"
        raise BenchError(f"kernel {kernel_name!r} takes {len(params)} arguments ({names}), "
                         f"got {len(args)}")
    for i, (param, arg) in enumerate(zip(params, args)):
        array = arg.array if isinstance(arg, Shared) else arg
        if isinstance(arg, Shared) and not isinstance(array, DeviceArray):
            raise BenchError(f"argument {i} ({param.name}) of kernel {kernel_name!r} is shared() of a "
                             f"{type(array).__name__}; expected a device array or a tensor with __dlpack__")
        if isinstance(array, DeviceArray) and not array.address:
            raise BenchError(f"argument {i} ({param.name}) of kernel {kernel_name!r} is a freed "
                             "device array; expected a live one")
        if isinstance(arg, (DeviceArray, Shared, Pointer)):
            size = 8
        elif isinstance(arg, Scalar):
            size = arg.nbytes
        else:
            raise BenchError(
                f"argument {i} ({param.name}) of kernel {kernel_name!r} is of type {type(arg).__name__}; "
                "expected a device array, a tensor with __dlpack__ (torch, CuPy, JAX), shared(array), "
                "a typed scalar such as "
                "pyhipbench.int64(n), or pyhipbench.Pointer(address)")
        if size != param.size:
            what = f"{arg.dtype.name} ({size} B)" if isinstance(arg, Scalar) else "a device pointer (8 B)"
            raise BenchError(f"argument {i} ({param.name}) of kernel {kernel_name!r} is {what}, "
                             f"but the parameter is {param.size} bytes")
    return [arg for arg in args if isinstance(arg, (DeviceArray, Shared, Scalar, Pointer))]  # all, by now


def pack_args(params: tuple[KernelParam, ...], args: list[Argument],
              address_of: Callable[[DeviceArray], int]) -> bytes:
    """The argument buffer of one set: each value at its parameter's offset.
    `address_of(array)` gives the device address this set uses for a rotated array."""
    buffer = bytearray(max((p.offset + p.size for p in params), default=0))
    for param, arg in zip(params, args):
        if isinstance(arg, DeviceArray):
            value = address_of(arg).to_bytes(8, "little")
        elif isinstance(arg, Shared):
            value = arg.shared_address().to_bytes(8, "little")
        else:
            value = arg.pack()
        buffer[param.offset:param.offset + param.size] = value
    return bytes(buffer)
