"""Ledger: what pyhipbench measured for Helion in one search, counted, with the seconds where it went."""
from __future__ import annotations

from dataclasses import asdict, dataclass

__all__ = ["Ledger"]


@dataclass
class Ledger:
    """Counts and seconds of the first pass (Helion's batches of configs) and of the re-benchmarks.

    `configs_given`: configs Helion's search handed to the provider (each compiled, or failed to);
    `configs_measured`: those measured (after passing the checks); `stopped_slower`: of those, the ones the race
    stopped early as surely slower than the best so far; `read_as_best`: of those, the ones that read below the
    best so far without being faster by compare's rule, read as the best's time; `configs_failed`: those that failed a
    check, a compile, or a measurement. `batch_s`: seconds inside the provider's batches (Helion compiling,
    precompiling, checking and pyhipbench measuring); `check_s`: of those, running each candidate and checking
    its output against the baseline, of which `worker_check_s` waiting for the checks in Helion's worker, its
    start included (the rest: each candidate's first call in this process); `measure_s`: of those, measuring.
    What is left of `batch_s` is Helion's compiling and precompiling (and its bookkeeping): the time compiling
    ahead could hide. `rebenchmarks`, `rebenchmark_candidates`, `rebenchmark_s`: the re-benchmark calls, the
    candidates they took, their seconds; `tie_rounds`: those calls with candidates tied with the fastest (the
    tie round held them, or found the fastest's time steady under its hold).
    """
    configs_given: int = 0
    configs_measured: int = 0
    stopped_slower: int = 0
    read_as_best: int = 0
    configs_failed: int = 0
    batch_s: float = 0.0
    check_s: float = 0.0
    worker_check_s: float = 0.0
    measure_s: float = 0.0
    rebenchmarks: int = 0
    rebenchmark_candidates: int = 0
    rebenchmark_s: float = 0.0
    tie_rounds: int = 0

    @property
    def compile_s(self) -> float:
        """Seconds of the batches outside checking and measuring: Helion's compile and precompile."""
        return max(0.0, self.batch_s - self.check_s - self.measure_s)

    def to_dict(self) -> dict[str, float]:
        """JSON-serialisable: every field, and compile_s."""
        return {**asdict(self), "compile_s": self.compile_s}
