"""Device arrays: a typed, shaped block of device memory owned by a backend."""
from __future__ import annotations

import math

import numpy as np

from .backends.base import Backend
from .errors import BenchError
from .values import integer, show

# Kinds the kernels can read as plain numbers: bool, signed, unsigned, float, complex.
SUPPORTED_KINDS = "biufc"


def check_dtype(dtype: np.dtype | str | type) -> np.dtype:
    """`dtype` as a numpy dtype of a SUPPORTED_KINDS kind; BenchError naming it otherwise."""
    try:  # np.dtype(None) is float64: a missing dtype must not become one
        checked = None if dtype is None else np.dtype(dtype)
    except (TypeError, ValueError):
        checked = None
    if checked is None:
        raise BenchError(f"dtype {show(dtype)} is not a numpy dtype; expected a bool, integer, "
                         "float or complex dtype such as 'float32'")
    if checked.kind not in SUPPORTED_KINDS or checked.fields is not None:
        raise BenchError(f"unsupported array dtype {checked}; expected a bool, integer, "
                         "float or complex dtype")
    return checked


def check_shape(shape: object) -> tuple[int, ...]:
    """`shape` (one integer, or a tuple, list or 1-D array of them; numpy integers
    included) as a tuple of Python ints >= 0."""
    if isinstance(shape, (tuple, list)) or (isinstance(shape, np.ndarray) and shape.ndim == 1):
        return tuple(integer(f"shape[{i}]", n, 0) for i, n in enumerate(shape))
    return (integer("shape", shape, 0),)


class DeviceArray:
    """`nbytes` bytes of device memory at `address`, viewed as `shape` x `dtype`.

    The size is computed with Python ints (no overflow) and checked against
    the device's free memory before anything is allocated.
    """

    def __init__(self, backend: Backend, shape: int | tuple[int, ...], dtype: np.dtype | str) -> None:
        self.address = 0  # until allocated: __del__ then frees nothing
        self.shape = check_shape(shape)
        self.dtype = check_dtype(dtype)
        self.nbytes = math.prod(self.shape) * self.dtype.itemsize
        free, _ = backend.memory_info()
        if self.nbytes > free:
            raise BenchError(f"an array of shape {self.shape} {self.dtype} needs {self.nbytes} bytes; "
                             f"the device has {free} bytes free")
        self._backend = backend
        self._owner = True
        self.address = backend.allocate(max(self.nbytes, 1))

    @classmethod
    def view(cls, backend: Backend, address: int, shape: tuple[int, ...], dtype: np.dtype) -> "DeviceArray":
        """An array over memory something else owns (a slice of a larger block): `free()` releases nothing."""
        array = cls.__new__(cls)
        array.shape, array.dtype = tuple(shape), np.dtype(dtype)
        array.nbytes = math.prod(array.shape) * array.dtype.itemsize
        array._backend, array._owner, array.address = backend, False, address
        return array

    def copy_from(self, host: np.ndarray) -> None:
        """Copies a host array of the same shape and dtype to the device."""
        if not isinstance(host, np.ndarray):
            raise BenchError(f"copy_from takes a numpy array, got {type(host).__name__}")
        if host.shape != self.shape or host.dtype != self.dtype:
            raise BenchError(f"host array {host.shape} {host.dtype} does not match "
                             f"device array {self.shape} {self.dtype}")
        self._backend.copy_to_device(self.address, np.ascontiguousarray(host))

    def to_numpy(self) -> np.ndarray:
        """A host copy of the contents."""
        host = np.empty(self.shape, self.dtype)
        self._backend.copy_to_host(host, self.address)
        return host

    def free(self) -> None:
        """Releases the memory now rather than when the array is collected."""
        if self.address:
            address, self.address = self.address, 0  # freed at most once, even if the driver fails
            if self._owner:
                self._backend.free(address)

    def __del__(self) -> None:
        try:
            self.free()
        except Exception:  # interpreter shutdown or a dead context: nothing to release into
            pass

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, address=0x{self.address:x})"
