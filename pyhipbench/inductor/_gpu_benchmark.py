"""GpuBenchmark: what Inductor's `benchmark_gpu` does once pyhipbench takes it over, measured by bench_callable.

Inductor hands over a callable that launches one or several kernels (a GEMM
template, an extern cuBLAS call, a fused Triton kernel, a subgraph). Each is
measured as bench_callable() measures a callable: the kernel time the call
launched (CUPTI on NVIDIA), a clean cold cache before each sample, adaptive
stopping. It is called each sample, as Inductor calls it: its launches name
the stream they go to, often the legacy default stream, which a graph capture
refuses, and the kernel time does not depend on how it was launched.
Inside a list of choices (choice_race.py) it races the best choice so far,
or holds a finalist with the tie round's options. A call with no kernel to
time (only a copy or a fill: the cupti timer refuses it) reads 0 ms of
kernel time on its own (Inductor subtracts such a call, a fused kernel's
argument clone, from the kernel's benchmark, which has no copy time in it
either); as a choice, it is timed by torch's own benchmark_gpu instead, with
a warning.

What a process's first measurement sets up once (the device, the kernel
timer's probe, the clean step's buffer and kernel, CUPTI's tracing of calls:
0.1-0.3 s on the H100) would fall on the first choice Inductor benchmarks;
`ready` does it beforehand, by measuring one fill.
"""
from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._core import MeasurementError
from .._measure.callable import bench_callable_with
from .._measure.result import Result
from .._values import real, show
from ..errors import BenchError
from ._choice_race import ChoiceRace
from ._ledger import Ledger
from ._settings import Settings

__all__ = ["GpuBenchmark", "RETURN_MODES", "IGNORED_KEYWORDS", "ready"]

log = logging.getLogger(__name__)

RETURN_MODES = ("min", "max", "mean", "median", "all")
DO_BENCH_WARMUP_MS, DO_BENCH_REP_MS = 25, 100  # triton.testing.do_bench's, for a budget given in part
# Counts and caps of Inductor's own loop (InductorBenchmarker's estimation, memory warm-up and iteration counts,
# its 25 ms cap; Triton do_bench's flush choice): adaptive stopping replaces them.
IGNORED_KEYWORDS = ("estimation_iters", "memory_warmup_iters", "benchmark_iters", "max_benchmark_duration",
                    "fast_flush", "device_type")


class GpuBenchmark:
    """Inductor's benchmark_gpu(_callable, **kwargs) -> ms, measured with `settings`, counted into `ledger`."""

    def __init__(self, settings: Settings, ledger: Ledger) -> None:
        self.settings, self.ledger = settings, ledger

    def __call__(self, benchmarker: object, _callable: Callable[[], object], *, warmup: float | None = None,
                 rep: float | None = None, return_mode: str | None = None,
                 quantiles: Sequence[float] | None = None, grad_to_none: Sequence[Any] | None = None,
                 is_vetted_benchmarking: bool = False, **kwargs: Any) -> float | list[float]:
        """The callable's time in ms as Inductor asks for it: the `quantiles` (the first, as torch's
        benchmarkers return it), else `return_mode` ("min", "max", "mean", "median"; "all": every sample), else
        the median. `warmup` + `rep` (ms): the most wall time the measurement may take, as do_bench's.
        Deterministic mode refuses a benchmark that is not `is_vetted_benchmarking`, as torch's does."""
        unknown = sorted(set(kwargs) - set(IGNORED_KEYWORDS))
        if unknown:
            raise BenchError(f"benchmark_gpu keyword {unknown[0]}={show(kwargs[unknown[0]])}: pyhipbench does not "
                             f"know it; expected {', '.join(('warmup', 'rep', 'return_mode', 'quantiles'))}, "
                             "grad_to_none, is_vetted_benchmarking or Inductor's loop counts")
        if return_mode is not None and return_mode not in RETURN_MODES:
            raise BenchError(f"return_mode={show(return_mode)}: expected one of {', '.join(RETURN_MODES)}")
        if quantiles is not None and not (isinstance(quantiles, (list, tuple)) and quantiles):
            raise BenchError(f"quantiles={show(quantiles)}: expected a non-empty list of numbers in [0, 1]")
        if not is_vetted_benchmarking:
            _may_ban_benchmarking()
        options = self.settings.policy.options
        if warmup is not None or rep is not None:  # do_bench's budget; a value left out is do_bench's default
            budget_s = (real("warmup", DO_BENCH_WARMUP_MS if warmup is None else warmup, minimum=0)
                        + real("rep", DO_BENCH_REP_MS if rep is None else rep, minimum=0)) / 1000
            if budget_s > 0:
                options = options.replace(max_time_s=min(options.max_time_s, budget_s))
        call = _clearing_grads(_callable, grad_to_none) if grad_to_none else _callable
        race = ChoiceRace.current()
        if race is not None:
            options = race.holding if race.holding is not None else race.bound.options_for(options)
        name = race.label if race is not None else _name(_callable)
        held = race is not None and race.holding is not None
        started = time.perf_counter()
        try:
            result = bench_callable_with(call, options, graph=False, device=self.settings.device, name=name)
        except MeasurementError as e:
            self.ledger.torch_timed += 1
            if race is None and not ChoiceRace.in_whole_list():
                # A copy or fill alone (a fused kernel's argument clone): it runs no kernel.
                log.debug("%s: %s; its kernel time is 0 ms", name, e)
                return 0.0 if return_mode != "all" else [0.0]
            # A choice that runs no kernel: torch's own clock times it (choice_race.py warns of the mix).
            log.warning("%s: %s; timed by torch's benchmarker instead", name, e)
            return type(benchmarker).benchmark_gpu(  # type: ignore[no-any-return]
                benchmarker, _callable, is_vetted_benchmarking=is_vetted_benchmarking,
                **_given(warmup=warmup, rep=rep, return_mode=return_mode, quantiles=quantiles,
                         grad_to_none=grad_to_none), **kwargs)
        self.ledger.add(result, time.perf_counter() - started, held)
        if race is not None:
            if held:
                race.record_hold(result)
            else:
                race.record(call, result)
        return _in_ms(result, return_mode, quantiles)


def ready(settings: Settings, call: Callable[[], object]) -> None:
    """Everything a measurement with `settings` sets up once per process, set up: `call` (one kernel on the
    device the benchmarks will use) measured once, its result dropped; the seconds it took logged."""
    started = time.perf_counter()
    once = settings.policy.options.replace(iterations=1, warmup=0, hold_s=0.0, energy=False)
    bench_callable_with(call, once, graph=False, device=settings.device, name="pyhipbench.inductor ready")
    log.info("measuring made ready in %.3f s", time.perf_counter() - started)


def _given(**keywords: Any) -> dict[str, Any]:
    """The keywords Inductor passed (those it left out stay out, for torch's defaults)."""
    return {k: v for k, v in keywords.items() if v is not None}


def _may_ban_benchmarking() -> None:
    """torch's own refusal of unvetted benchmarking in Inductor's deterministic mode (a RuntimeError)."""
    benchmarking = sys.modules.get("torch._inductor.runtime.benchmarking")
    ban = getattr(benchmarking, "may_ban_benchmarking", None)
    if ban is not None:
        ban()


def _clearing_grads(fn: Callable[[], object], tensors: Sequence[Any]) -> Callable[[], object]:
    held = list(tensors)

    def call() -> object:
        for tensor in held:  # as torch's benchmarkers and do_bench do before each sample
            tensor.grad = None
        return fn()
    return call


def _name(fn: Callable[[], object]) -> str:
    inner = getattr(fn, "func", fn)  # functools.partial, as Inductor's BenchmarkRequest makes them
    return str(getattr(inner, "__qualname__", None) or type(inner).__name__)


def _in_ms(result: Result, return_mode: str | None, quantiles: Sequence[float] | None) -> float | list[float]:
    times_ms = np.asarray(result.times_us, dtype=np.float64) / 1000
    if quantiles is not None:  # a list, checked before the measurement; its first number checked here
        return float(np.quantile(times_ms, real("quantiles", quantiles[0], minimum=0, maximum=1)))
    if return_mode == "all":
        return [float(t) for t in times_ms]
    return float(getattr(np, return_mode or "median")(times_ms))
