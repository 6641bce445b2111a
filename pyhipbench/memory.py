"""Device arrays: a typed, shaped block of device memory owned by a backend."""
from __future__ import annotations

import numpy as np

from .backends.base import Backend
from .errors import BenchError

# Kinds the kernels can read as plain numbers: bool, signed, unsigned, float, complex.
SUPPORTED_KINDS = "biufc"


def check_dtype(dtype: np.dtype) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype.kind not in SUPPORTED_KINDS or dtype.fields is not None:
        raise BenchError(f"unsupported array dtype {dtype}; expected a bool, integer, "
                         "float or complex dtype")
    return dtype


class DeviceArray:
    """`nbytes` bytes of device memory at `address`, viewed as `shape` x `dtype`."""

    def __init__(self, backend: Backend, shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.shape = tuple(int(n) for n in shape)
        self.dtype = check_dtype(dtype)
        if any(n < 0 for n in self.shape):
            raise BenchError(f"array shape {self.shape} has a negative size")
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        self._backend = backend
        self.address = backend.allocate(max(self.nbytes, 1))

    def copy_from(self, host: np.ndarray) -> None:
        """Copies a host array of the same shape and dtype to the device."""
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
            self._backend.free(address)

    def __del__(self) -> None:
        try:
            self.free()
        except Exception:  # interpreter shutdown or a dead context: nothing to release into
            pass

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, address=0x{self.address:x})"
