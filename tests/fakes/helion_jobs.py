"""Jobs for Helion's BenchmarkWorker in tests: picklable callables the worker's spawned process runs."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Pid:
    """The worker's process id, after `sleep_s` (so jobs given together overlap and take different workers)."""
    sleep_s: float = 0.0

    def __call__(self) -> int:
        time.sleep(self.sleep_s)
        return os.getpid()


@dataclass(frozen=True)
class Raises:
    """A job that raises RuntimeError(`message`), as a kernel's launch that fails in the worker does."""
    message: str

    def __call__(self) -> None:
        raise RuntimeError(self.message)


@dataclass(frozen=True)
class Returns:
    """A job that returns `value` (an AccuracyCheckResult, say), as Helion's check job does."""
    value: object

    def __call__(self) -> object:
        return self.value
