"""Where Inductor's benchmarking is reached, by torch version, and how each reach is undone.

- torch with `register_benchmarker(device_type, fn, *, override=False)` in
  torch._inductor.runtime.benchmarking (2.14.1 read and tested): pyhipbench
  registers for "cuda", overriding the default registration, and puts the
  one it replaced back. `Benchmarker.benchmark` dispatches through it: every
  choice of select_algorithm, fused-kernel and kernel benchmarks, subgraphs,
  the autotune subprocess. Callers of `benchmarker.benchmark_gpu` itself
  (pad_mm's padding decision, overlap scheduling, and
  `benchmark_gpu_with_cuda_graph`, which autotune_cudagraph_benchmarking
  uses) do not go through it and stay with torch's benchmarker.
- torch without it, from 2.11 (2.11.0 tested): the module-level `benchmarker`
  instance is the one object every caller reaches (modules that import the
  name bind that same instance), and each GPU benchmark ends in its
  `benchmark_gpu`. pyhipbench sets `benchmark_gpu` on that instance only, so
  its class and any other instance are untouched; undoing deletes it.
- Older torch (no such module, or before 2.11): refused in one line.

On every version the list of choices is raced by wrapping the classmethod
`AlgorithmSelectorCache.benchmark_choices` (no hook reaches a whole list).
"""
from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from functools import partial
from types import ModuleType
from typing import Any

from ..errors import BenchError

__all__ = ["BENCHMARKING", "SELECT_ALGORITHM", "MIN_TORCH", "hook_benchmarker", "wrap_benchmark_choices", "path_of"]

BENCHMARKING = "torch._inductor.runtime.benchmarking"
SELECT_ALGORITHM = "torch._inductor.select_algorithm"
MIN_TORCH = (2, 11)  # the oldest torch whose benchmarker pyhipbench is tested against
CHOICES_PARAMETERS = ["cls", "choices", "autotune_args", "is_collective"]


def path_of(benchmarking: ModuleType, torch_version: str) -> str:
    """'register_benchmarker' or 'benchmarker instance': how this torch is reached; BenchError in one line
    where neither applies."""
    if callable(getattr(benchmarking, "register_benchmarker", None)):
        if not isinstance(getattr(benchmarking, "_BENCHMARK_DISPATCH", None), dict):
            raise BenchError(f"torch {torch_version}: register_benchmarker without its _BENCHMARK_DISPATCH "
                             "registry, whose previous entry pyhipbench puts back; expected torch 2.14's shape")
        return "register_benchmarker"
    if _release(torch_version) < MIN_TORCH:
        raise BenchError(f"torch {torch_version}: pyhipbench reaches Inductor's benchmarker from torch "
                         f"{MIN_TORCH[0]}.{MIN_TORCH[1]} on; expected torch >= {MIN_TORCH[0]}.{MIN_TORCH[1]}")
    instance = getattr(benchmarking, "benchmarker", None)
    if instance is None or not callable(getattr(instance, "benchmark_gpu", None)) \
            or "self.benchmark_gpu(" not in inspect.getsource(type(instance).benchmark):
        raise BenchError(f"torch {torch_version}: {BENCHMARKING} has neither register_benchmarker nor a "
                         "module-level benchmarker whose benchmark() calls its benchmark_gpu; expected torch "
                         f">= {MIN_TORCH[0]}.{MIN_TORCH[1]} with one of them")
    return "benchmarker instance"


def hook_benchmarker(benchmarking: ModuleType, torch_version: str,
                     benchmark: Callable[..., Any]) -> Callable[[], None]:
    """`benchmark(benchmarker, _callable, **kwargs) -> ms` made what Inductor's CUDA benchmarks call; returns
    the undo."""
    if path_of(benchmarking, torch_version) == "register_benchmarker":
        registry: dict[str, Callable[..., Any]] = benchmarking._BENCHMARK_DISPATCH
        previous = registry.get("cuda")
        benchmarking.register_benchmarker("cuda", benchmark, override=True)

        def unregister() -> None:
            if registry.get("cuda") is benchmark:
                if previous is None:
                    del registry["cuda"]
                else:
                    benchmarking.register_benchmarker("cuda", previous, override=True)
        return unregister
    instance = benchmarking.benchmarker
    bound = partial(benchmark, instance)
    instance.benchmark_gpu = bound

    def unset() -> None:
        if vars(instance).get("benchmark_gpu") is bound:
            del instance.benchmark_gpu
    return unset


def wrap_benchmark_choices(select_algorithm: ModuleType, torch_version: str,
                           wrap: Callable[[Callable[..., Any]], Callable[..., Any]]) -> Callable[[], None]:
    """AlgorithmSelectorCache.benchmark_choices replaced by `wrap(the original function)`, a classmethod as
    the original is; returns the undo. BenchError in one line where its shape differs."""
    cache = getattr(select_algorithm, "AlgorithmSelectorCache", None)
    original = None if cache is None else vars(cache).get("benchmark_choices")
    if cache is None or not isinstance(original, classmethod) or \
            list(inspect.signature(original.__func__).parameters) != CHOICES_PARAMETERS:
        raise BenchError(f"torch {torch_version}: AlgorithmSelectorCache.benchmark_choices is not the classmethod "
                         f"({', '.join(CHOICES_PARAMETERS)}) pyhipbench races; expected torch 2.11 to 2.14's shape")
    replacement = classmethod(wrap(original.__func__))
    cache.benchmark_choices = replacement

    def restore() -> None:
        if vars(cache).get("benchmark_choices") is replacement:
            cache.benchmark_choices = original
    return restore


def _release(version: str) -> tuple[int, int]:
    found = re.match(r"(\d+)\.(\d+)", version)
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)
