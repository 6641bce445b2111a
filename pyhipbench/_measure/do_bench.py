"""do_bench(): triton.testing.do_bench's signature, units and return shapes, measured by pyhipbench.

Swap it in by one name: `triton.autotune(configs, key, do_bench=pyhipbench.do_bench)`,
or `from pyhipbench import do_bench` where code calls `triton.testing.do_bench`.
What differs is how the times are taken: bench_callable's kernel time (cupti
on NVIDIA: the kernels the call launched, not the host's launch gaps), in the
clean-cold cache state, with adaptive stopping at ±1 % (95 % CI of the median),
a captured graph replayed where the callable can be captured. `warmup` and
`rep` (ms) keep their budget meaning: the measurement, warm-up included, ends
after at most `warmup + rep` ms, and most stop far sooner; they set no counts.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from .._values import real, show
from ..errors import BenchError
from .callable import bench_callable

RETURN_MODES = ("min", "max", "mean", "median", "all")


def do_bench(fn: Callable[[], object], warmup: float = 25, rep: float = 100, grad_to_none: Sequence[Any] | None = None,
             quantiles: Sequence[float] | None = None, return_mode: str = "mean") -> float | list[float]:
    """Times `fn` as triton.testing.do_bench does, in ms: the quantiles asked for (a list, or one float for
    one quantile), else the `return_mode` ("min", "max", "mean", "median": a float; "all": every sample).
    `warmup` + `rep`: the most wall time it may take, ms. `grad_to_none`: tensors whose `.grad` is set to
    None before each call (the callable is then called, not replayed as a graph). What `fn` raises
    propagates (Triton's autotuner turns its compile errors into inf)."""
    budget_ms = real("warmup", warmup, minimum=0) + real("rep", rep, minimum=0)
    if not budget_ms > 0:
        raise BenchError(f"warmup={show(warmup)}, rep={show(rep)}: expected a positive time budget in ms")
    if return_mode not in RETURN_MODES:
        raise BenchError(f"return_mode={show(return_mode)}: expected one of {', '.join(RETURN_MODES)}")
    if quantiles is not None:
        if not isinstance(quantiles, (list, tuple)) or not quantiles:
            raise BenchError(f"quantiles={show(quantiles)}: expected a non-empty list of numbers in [0, 1]")
        quantiles = [real("quantiles", q, minimum=0) for q in quantiles]
        if max(quantiles) > 1:
            raise BenchError(f"quantiles={show(quantiles)}: expected numbers in [0, 1]")
    if grad_to_none is not None and (isinstance(grad_to_none, (str, bytes)) or not isinstance(grad_to_none, Iterable)
                                     or not all(hasattr(t, "grad") for t in grad_to_none)):
        raise BenchError(f"grad_to_none={show(grad_to_none)}: expected a list of tensors (each with a .grad) or None")
    call = fn
    if grad_to_none:
        tensors = list(grad_to_none)

        def call() -> None:
            for tensor in tensors:
                tensor.grad = None
            fn()
    result = bench_callable(call, max_time_s=budget_ms / 1000, graph=False if grad_to_none else "auto",
                            name=getattr(fn, "__qualname__", None))
    times_ms = np.asarray(result.times_us, dtype=np.float64) / 1000
    if quantiles is not None:
        values = [float(v) for v in np.quantile(times_ms, quantiles)]
        return values[0] if len(values) == 1 else values
    if return_mode == "all":
        return [float(t) for t in times_ms]
    return float(getattr(np, return_mode)(times_ms))
