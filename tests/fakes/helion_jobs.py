"""Jobs for Helion's BenchmarkWorker in tests: picklable functions its spawned process runs."""
from __future__ import annotations


def cached_arguments() -> int:
    """How many argument files Helion's jobs hold loaded in this worker (load_trusted_kernel_args' cache)."""
    from helion.autotuner.kernel_args import load_trusted_kernel_args

    return load_trusted_kernel_args.cache_info().currsize
