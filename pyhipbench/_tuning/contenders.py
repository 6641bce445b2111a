"""The contenders `tune()` measures: a kernel launch or a chain (bench_chain's), and a callable (bench_callable's)."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from .._device.device import Device
from .._launch.launch import Launch
from .._measure.bench import PreparedBench, prepare_bench
from .._measure.callable import bench_callable_with
from .._measure.options import BenchOptions
from .._measure.result import Result

__all__ = ["ChainContender", "CallContender"]


class ChainContender:
    """One launch or a chain of them, measured as bench_chain() measures it; `extra`: bench_chain()'s keywords
    beyond the options (stream, expect, atol, rtol, reset_to_zero, restore_value)."""

    def __init__(self, launches: Sequence[Launch], options: BenchOptions, extra: dict[str, Any]) -> None:
        self.launches, self.options, self.extra = list(launches), options, extra
        self.prepared: PreparedBench | None = None

    def prepare(self) -> None:
        """bench_chain()'s checks: the kernels, launches, arguments and resets."""
        self.prepared = prepare_bench(self.launches, self.options, **self.extra)

    def measure(self, options: BenchOptions) -> Result:
        assert self.prepared is not None
        # The engine changes only racing's bound, the hold and the clock check: nothing prepare checked.
        return dataclasses.replace(self.prepared, options=options).run()

    def release(self) -> None:
        self.prepared = None  # the launches, kernels and arrays are the caller's


class CallContender:
    """A callable, measured as bench_callable() measures it, on `device`."""

    def __init__(self, fn: Callable[[], object], device: Device, label: str) -> None:
        self.fn, self.device, self.label = fn, device, label

    def prepare(self) -> None:
        """Nothing ahead: a callable's first call (which may compile) is part of its measurement."""

    def measure(self, options: BenchOptions) -> Result:
        return bench_callable_with(self.fn, options, device=self.device, name=self.label)

    def release(self) -> None:
        """The callable's buffers are its own."""
