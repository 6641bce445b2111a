"""TritonLaunch: a launch of a Triton kernel as a `pyhipbench.tune()` candidate, compiled ahead in the compile pool.

A candidate kind of the tuning engine (pyhipbench/_tuning/kind.py): tune()
specialises it for its arguments as Triton's launcher would
(_kernel.specialize), starts its compile as autotune starts a config's
(_ahead.compile_ahead: Triton's cache, else the compile pool, else this
process, its note saying why) with every other candidate's before the first
measurement, then loads it (_kernel.build) and measures it as bench_chain()
measures one launch, with Triton's block, shared memory and scratch.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .._device.device import Device
from .._device.memory import DeviceArray
from .._launch.launch_config import dims
from .._measure.bench import PreparedBench, prepare_bench
from .._measure.options import BenchOptions
from .._measure.result import Result
from .._tuning.kind import CandidateKind
from .._values import icache_flush as checked_icache_flush
from .._values import show
from ..errors import BenchError
from . import _kernel
from ._ahead import PLAIN_VALUES, Ahead, compile_ahead
from ._bench import kernel_launch
from ._kernel import Specialized, TritonKernel, checked_flush, specialize, target_of

if TYPE_CHECKING:
    from triton.runtime.jit import JITFunction

__all__ = ["TritonLaunch"]



class TritonLaunch(CandidateKind):
    """A launch of the @triton.jit kernel `fn` with `args` and `meta`, as `pyhipbench.tune()` measures it.

    `grid`: programs per axis, or a callable of the meta-parameters (the arguments and meta-parameters by
    name), as Triton's grid lambdas. `args`: the kernel's arguments in order, as for `fn[grid](*args)`
    (pyhipbench arrays, tensors, numbers). `meta`: arguments by name, constexpr meta-parameters (BLOCK=128)
    and Triton's compile options (num_warps, num_stages), as `pyhipbench.triton.compile` takes them; a
    triton.Config's are `**config.all_kwargs()`. `icache_flush`: as for `compile` (AMD).
    tune() compiles it in its compile pool, with the other candidates, before the first measurement; a
    compile that fails, or arguments Triton's binder refuses, fail this candidate alone. Its label: the
    kernel's name and the meta-parameters given ("add(BLOCK=128, num_warps=4)")."""

    def __init__(self, fn: "JITFunction", grid: int | Sequence[int] | Callable[[dict[str, Any]], Any],
                 args: Sequence[Any], *, icache_flush: bool | None = None, **meta: Any) -> None:
        _kernel._require_triton()
        if not isinstance(fn, _kernel.JITFunction):
            raise BenchError(f"TritonLaunch fn={show(fn)}: expected a @triton.jit function")
        if not isinstance(args, (list, tuple)):
            raise BenchError(f"TritonLaunch args={show(args)}: expected a list of the kernel's arguments")
        if not callable(grid):
            dims("grid", grid)
        if "shared_bytes" in meta and "shared_bytes" not in fn.arg_names:
            raise BenchError(f"TritonLaunch shared_bytes={show(meta['shared_bytes'])}: a Triton kernel's dynamic "
                             "shared memory is what Triton compiled it for (metadata.shared); leave it out")
        self.fn, self.grid, self.args, self.meta = fn, grid, list(args), dict(meta)
        self.icache_flush = checked_icache_flush(icache_flush)

    @property
    def label(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.tags.items())
        return f"{self.fn.__name__}({shown})" if shown else self.fn.__name__

    @property
    def tags(self) -> dict[str, Any]:
        """The meta-parameters and compile options given as plain values (arrays given by name left out)."""
        return {k: v for k, v in self.meta.items() if isinstance(v, PLAIN_VALUES)}

    def contender(self, device: Device, options: BenchOptions, launch_keywords: dict[str, Any],
                  compile_workers: int) -> "TritonContender":
        return TritonContender(self, device, options, launch_keywords, compile_workers,
                               checked_flush(device, self.icache_flush))

    def __repr__(self) -> str:
        return f"TritonLaunch({self.label}, grid={self.grid!r})"


class TritonContender:
    """A TritonLaunch on its way through the engine: specialised, compiling, loaded on `device`, measured."""

    def __init__(self, launch: TritonLaunch, device: Device, options: BenchOptions,
                 launch_keywords: dict[str, Any], compile_workers: int, icache_flush: bool | None) -> None:
        self.launch, self.device, self.options, self.launch_keywords = launch, device, options, launch_keywords
        self.compile_workers, self.icache_flush = compile_workers, icache_flush
        self.spec: Specialized | None = None
        self.ahead: Ahead | None = None
        self.kernel: TritonKernel | None = None
        self.scratch: list[DeviceArray] = []
        self.prepared: PreparedBench | None = None

    def start_compile(self) -> None:
        """Specialised for its arguments; Triton's cache looked up, else the compile sent to the compile pool
        where a worker can import the kernel (else it compiles here, in finish_compile)."""
        launch = self.launch
        self.spec = specialize(launch.fn, launch.args, target_of(self.device), **launch.meta)
        # No time limit, as a SourceLaunch's compile: tune() has no compile_timeout_s.
        [self.ahead] = compile_ahead([self.spec], self.device.arch, self.compile_workers, None)

    def finish_compile(self) -> str | None:
        """The pool's compile waited for, or the compile made here; the note on why it compiled here."""
        assert self.spec is not None and self.ahead is not None
        return self.ahead.finish(self.spec, self.device.arch)

    def prepare(self) -> None:
        """The kernel loaded (Triton's cache read, for a compile ahead), its launch made with Triton's scratch,
        bench_chain()'s checks made."""
        assert self.spec is not None and self.ahead is not None
        self.kernel = self.ahead.load(self.spec, self.device, self.icache_flush)
        made, self.scratch = kernel_launch(self.kernel, dims("grid", self.kernel.grid(self.launch.grid)),
                                           self.kernel.arguments())
        self.prepared = prepare_bench([made], self.options, **self.launch_keywords)

    def measure(self, options: BenchOptions) -> Result:
        assert self.prepared is not None
        # The engine changes only racing's bound, the hold and the clock check: nothing prepare checked.
        return dataclasses.replace(self.prepared, options=options).run()

    def release(self) -> None:
        self.prepared = None
        for buffer in self.scratch:
            buffer.free()
        self.scratch = []
        if self.kernel is not None:
            self.kernel.unload()
