"""The contenders `tune()` measures: a kernel launch or a chain (bench_chain's), a launch of a kernel compiled from
a source (SourceLaunch: compiled ahead in the compile pool), and a callable (bench_callable's; what it raises
fails only it, Helion's candidates too)."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._compile.pool import TaskOutcome, shared_pool
from .._device.device import Device
from .._device.module import Module
from .._launch.args import Argument
from .._launch.launch import Launch
from .._launch.launch_config import Dims
from .._measure.bench import PreparedBench, prepare_bench
from .._measure.callable import bench_callable_with
from .._measure.options import BenchOptions
from .._measure.result import Result
from .._values import show
from ..errors import BenchError, CodegenError, Error

if TYPE_CHECKING:  # the source kinds (and the code generator they import) load on a SourceLaunch's first use
    from .._sources.code import Code
    from .._sources.source import Source

__all__ = ["ChainContender", "CallContender", "SourceLaunch", "SourceContender"]


class ChainContender:
    """One launch or a chain of them, measured as bench_chain() measures it; `extra`: bench_chain()'s keywords
    beyond the options (stream, expect, atol, rtol, reset_to_zero, restore_value)."""

    def __init__(self, launches: Sequence[Launch], options: BenchOptions, extra: dict[str, Any]) -> None:
        self.launches, self.options, self.extra = list(launches), options, extra
        self.prepared: PreparedBench | None = None

    def start_compile(self) -> None:
        """Nothing: its kernels are loaded already."""

    def finish_compile(self) -> str | None:
        return None

    def prepare(self) -> None:
        """bench_chain()'s checks: the kernels, launches, arguments and resets."""
        self.prepared = prepare_bench(self.launches, self.options, **self.extra)

    def measure(self, options: BenchOptions) -> Result:
        assert self.prepared is not None
        # The engine changes only racing's bound, the hold and the clock check: nothing prepare checked.
        return dataclasses.replace(self.prepared, options=options).run()

    def release(self) -> None:
        self.prepared = None  # the launches, kernels and arrays are the caller's


def _first_line(error: BaseException) -> str:
    """': ' and the first line of `error`'s text ('' for none, or where even str() fails)."""
    try:
        lines = str(error).strip().splitlines()
    except Exception:
        return ""
    return f": {lines[0].strip()}" if lines else ""


class CallContender:
    """A callable, measured as bench_callable() measures it, on `device`. What it raises fails only it: an
    Exception that escapes the measurement becomes a BenchError of one line naming it (`<label> raised
    RuntimeError: <its first line>`), which the engine keeps as this candidate's error while the others go
    on; the exception itself stays in `raised` (Helion tells a fault that poisons the GPU context by it). A
    BaseException that is not an Exception (KeyboardInterrupt) propagates as it is."""

    def __init__(self, fn: Callable[[], object], device: Device, label: str) -> None:
        self.fn, self.device, self.label = fn, device, label
        self.raised: BaseException | None = None

    def start_compile(self) -> None:
        """Nothing: what it launches is its own."""

    def finish_compile(self) -> str | None:
        return None

    def prepare(self) -> None:
        """Nothing ahead: a callable's first call (which may compile) is part of its measurement."""

    def measure(self, options: BenchOptions) -> Result:
        try:
            return bench_callable_with(self.fn, options, device=self.device, name=self.label)
        except Error:
            raise  # pyhipbench's own refusal or failure: the engine keeps it as it is
        except Exception as e:  # bench_callable lets what the callable raises through
            self.raised = e
            raise BenchError(f"{self.label} raised {type(e).__name__}{_first_line(e)}") from e

    def release(self) -> None:
        """The callable's buffers are its own."""


@dataclass(frozen=True)
class SourceLaunch:
    """A launch of kernel `kernel` of the code `source` compiles to (a `CodeObjectSource`, `IRSource`,
    `CudaSource` or `HipSource`): `tune()` compiles it ahead, in the compile pool, then loads and measures
    it as bench() measures a Launch. `grid`, `block`, `args`, `shared_bytes` (bytes): as Launch's."""
    source: Source
    kernel: str
    grid: Dims
    block: Dims
    args: Sequence[Argument]
    shared_bytes: int = 0

    def checked(self) -> SourceLaunch:
        """BenchError for a source tune() cannot compile without launch arguments' specs (Triton's, which
        specialises on them: a pyhipbench.triton.TritonLaunch carries its arguments)."""
        from .._sources.source import Source
        if not isinstance(self.source, Source):
            raise BenchError(f"SourceLaunch source={show(self.source)}: expected a pyhipbench source "
                             "(CodeObjectSource, IRSource, CudaSource, HipSource)")
        if self.source.specialises:
            raise BenchError(f"SourceLaunch of a {self.source.kind} source: it compiles for its arguments' specs; "
                             "expected pyhipbench.triton.TritonLaunch(fn, grid, args, **meta) for a Triton kernel")
        if not isinstance(self.kernel, str) or not self.kernel:
            raise BenchError(f"SourceLaunch kernel={show(self.kernel)}: expected the kernel's name")
        return self


class SourceContender:
    """A SourceLaunch (checked: SourceLaunch.checked): compiled in the compile pool (at once, here, for a code
    object), loaded on `device`, measured as bench_chain() measures one launch."""

    def __init__(self, launch: SourceLaunch, device: Device, options: BenchOptions, extra: dict[str, Any],
                 compile_workers: int) -> None:
        self.launch, self.device, self.options, self.extra = launch, device, options, extra
        self.compile_workers = compile_workers
        self.compiling: Future[TaskOutcome] | None = None
        self.code: Code | None = None
        self.module: Module | None = None
        self.prepared: PreparedBench | None = None

    def start_compile(self) -> None:
        from .._sources.code import CompileTarget
        source, backend = self.launch.source, self.device.backend
        target = CompileTarget(self.device.arch, backend.compile_driver_version() if source.needs_compiler else None)
        if source.needs_compiler:
            self.compiling = shared_pool(self.compile_workers).submit(source.compile, target, ())
        else:
            self.code = source.compile(target, ())

    def finish_compile(self) -> str | None:
        if self.compiling is not None:
            outcome = self.compiling.result()
            if not outcome.ok:
                raise CodegenError(f"{self.launch.source.kind} source of {self.launch.kernel!r} did not compile: "
                                   f"{outcome.error}")
            self.code = outcome.value
        return None

    def prepare(self) -> None:
        """The code loaded, its kernel found, bench_chain()'s checks made."""
        assert self.code is not None
        launch = self.launch
        self.module = self.device.load_module(self.code.code_object or self.code.data)
        kernel = self.module.kernel(self.code.kernel_name(launch.kernel))
        self.prepared = prepare_bench([Launch(kernel, launch.grid, launch.block, list(launch.args),
                                              launch.shared_bytes)], self.options, **self.extra)

    def measure(self, options: BenchOptions) -> Result:
        assert self.prepared is not None
        return dataclasses.replace(self.prepared, options=options).run()

    def release(self) -> None:
        self.prepared = None
        if self.module is not None:
            self.module.unload()
