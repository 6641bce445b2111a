"""The exceptions pyhipbench raises.

`BenchError` is bad input, found before anything is launched. `DriverError`
and `KernelFault` come from the GPU driver (raised by the C++ core, or by a
Python backend through `driver_error`); they carry `call`, `code` and
`driver_message`, and a `KernelFault` also `context_usable`.
"""
from __future__ import annotations

from ._core import DriverError, KernelFault, LibraryError

__all__ = ["BenchError", "DriverError", "KernelFault", "LibraryError", "NoDeviceError", "driver_error"]


class BenchError(ValueError):
    """Bad input to a benchmark: names the bad value and what was expected. Nothing was launched."""


class NoDeviceError(RuntimeError):
    """No usable GPU (or no driver, or no Python bindings for it)."""


def driver_error(call: str, code: int, name: str, message: str) -> DriverError:
    """A DriverError for a failed driver call made from Python."""
    error = DriverError(f"{call} failed: {name} ({code}): {message}")
    error.call, error.code, error.driver_message = call, code, message
    return error
