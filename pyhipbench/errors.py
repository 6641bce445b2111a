"""Every error pyhipbench raises, in one hierarchy.

Everything a user can cause derives from `Error`, so a tuner can catch one
class around a candidate and nothing else escapes:

    Error
    ├── BenchError        bad input, found before anything is launched (also a ValueError)
    ├── IRError           the LLVM IR is invalid, has no kernel, or cannot take the prologue
    ├── CodegenError      LLVM or a tool failed to turn IR into a code object
    │   └── VerificationError   a kernel does not start with the injected prologue
    ├── ToolchainError    no usable assembler / linker / disassembler, or NVRTC / hiprtc
    ├── NoDeviceError     no usable GPU, driver or Python bindings
    ├── LibraryError      a driver library could not be loaded (C++ core; also an OSError)
    ├── MeasurementError  the launches ran but a timer could not time each (C++ core; e.g. CUPTI dropped records)
    ├── OutputMismatch    bench(expect=...): a kernel's outputs differ from the expected ones
    └── DriverError       a driver call failed (`call`, `code`, `driver_message`)
        └── KernelFault   a kernel faulted while running (`context_usable`)

`DriverError`, `KernelFault`, `LibraryError` and `MeasurementError` are raised by the C++ core
(pyhipbench._core) and, through `driver_error`, by the Python backends. `driver_error` is the
core's: a failed driver call is worded in one place (csrc/errors.cpp), whichever layer made it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ._core import DriverError, Error, KernelFault, LibraryError, MeasurementError, driver_error

if TYPE_CHECKING:
    from .codegen.verify import Verification

__all__ = ["Error", "BenchError", "IRError", "CodegenError", "VerificationError", "ToolchainError",
           "NoDeviceError", "LibraryError", "MeasurementError", "OutputMismatch", "DriverError", "KernelFault",
           "driver_error"]


class BenchError(Error, ValueError):
    """Bad input to a benchmark: names the bad value and what was expected. Nothing was launched."""


class IRError(Error, ValueError):
    """The IR is invalid, has no kernel, or cannot take the prologue."""


class CodegenError(Error, RuntimeError):
    """Code generation or one of its tools failed; the message quotes the tool."""


class VerificationError(CodegenError):
    """A kernel does not start with the prologue (`verification` holds the proof that failed)."""

    def __init__(self, verification: Verification) -> None:
        super().__init__(f"code object verification failed\n{verification}")
        self.verification = verification


class ToolchainError(Error, RuntimeError):
    """No usable llvm-mc / ld.lld / llvm-objdump, or runtime compiler (NVRTC, hiprtc), was found."""


class NoDeviceError(Error, RuntimeError):
    """No usable GPU (or no driver, or no Python bindings for it)."""


class OutputMismatch(Error, RuntimeError):
    """The outputs of a verification launch are wrong (bench's `expect`): `argument` (its position),
    `set_index` (the argument set), `index` (the first differing element), `got` and `expected`;
    all but `set_index` are None when a check callable said no."""

    def __init__(self, message: str, *, set_index: int, argument: int | None = None,
                 index: tuple[int, ...] | None = None, got: object = None, expected: object = None) -> None:
        super().__init__(message)
        self.argument, self.set_index, self.index, self.got, self.expected = argument, set_index, index, got, expected

