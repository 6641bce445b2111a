"""When a measurement has enough samples: the adaptive stopping rule.

Python asks the core for chunks of samples and, after each, asks `StopRule`
whether to go on. A run stops at the first of:

- "precision": the median's 95 % confidence interval is within ±`precision`
  of the median (default ±1 %), or no wider than one tick of the timer's
  clock (`tick_us`), once `min_samples` are in;
- "max-samples": `max_samples` taken;
- "max-time": `max_time_s` of wall time spent (setup excluded).

Warm-up runs chunks until two consecutive chunk medians agree within
`settle` (clocks up, caches and TLBs in their steady state), or until
`max_warmup_samples`.
Chunks grow geometrically from `first_chunk` so the Python between chunks
costs little against the kernels, while a precise kernel stops early.
"""
from __future__ import annotations

from dataclasses import dataclass

from .stats import Summary
from .values import integer, real

STOP_REASONS = ("precision", "max-samples", "max-time")


@dataclass(frozen=True)
class StopRule:
    """Targets and caps of one measurement; see the module docstring."""
    precision: float = 0.01          # relative half-width of the median's 95 % CI; 0 = no target
    min_samples: int = 10
    max_samples: int = 10_000
    max_time_s: float = 2.0          # wall time of the timed chunks, seconds
    settle: float = 0.02             # warm-up: consecutive chunk medians within ±2 %
    max_warmup_samples: int = 1_000
    warmup_chunk: int = 8            # samples per warm-up chunk
    first_chunk: int = 16
    # CUPTI's timestamps tick every 32 ns on the H200 (docs/measurement.md): a
    # sub-µs kernel's samples take a few values one tick apart, and an interval
    # one tick wide is as narrow as such data can show.
    tick_us: float = 0.032

    def __post_init__(self) -> None:
        real("precision", self.precision, minimum=0, below=1)
        real("max_time_s", self.max_time_s, above=0)
        real("settle", self.settle, above=0, below=1)
        real("tick_us", self.tick_us, minimum=0)
        integer("min_samples", self.min_samples, 1)
        integer("max_samples", self.max_samples, self.min_samples)
        integer("max_warmup_samples", self.max_warmup_samples, 0)
        integer("warmup_chunk", self.warmup_chunk, 1)
        integer("first_chunk", self.first_chunk, 1)

    def stop_reason(self, summary: Summary, elapsed_s: float) -> str | None:
        """Why to stop after a chunk (one of STOP_REASONS), or None to go on."""
        half_width = (summary.ci_high - summary.ci_low) / 2
        if self.precision > 0 and summary.count >= self.min_samples and (
                summary.rel_ci <= self.precision or half_width <= self.tick_us / 2):
            return "precision"
        if summary.count >= self.max_samples:
            return "max-samples"
        if elapsed_s >= self.max_time_s:
            return "max-time"
        return None

    def next_chunk(self, taken: int) -> int:
        """Samples to ask for next, having `taken`: doubling, never past `max_samples`."""
        return max(1, min(max(self.first_chunk, taken), self.max_samples - taken))

    def settled(self, previous_median: float, median: float) -> bool:
        """Warm-up is over when two consecutive chunk medians agree within `settle`."""
        return abs(median - previous_median) <= self.settle * previous_median
