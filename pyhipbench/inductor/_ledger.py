"""Ledger: what pyhipbench measured for Inductor since install(), counted, with the seconds it took."""
from __future__ import annotations

from dataclasses import asdict, dataclass

from .._measure.result import Result

__all__ = ["Ledger"]


@dataclass
class Ledger:
    """Counts and seconds of this process's measurements for Inductor (an autotune subprocess keeps its own).

    `measurements`: callables measured (each choice's screen, each tie-round hold, each single benchmark);
    `samples`, `warmup_samples`: their timed and untimed samples; `throttled_samples`: samples discarded as
    taken below the throttle threshold and taken again (after a 50 ms pause each run); `stopped_slower`:
    measurements the race stopped as surely slower than the best choice so far; `choice_lists`: lists of
    choices raced; `holds`: tie-round measurements of finalists; `torch_timed`: calls that launched no kernel,
    read 0 ms alone or timed by torch's benchmarker as a choice; `measure_s`: seconds inside the
    measurements, the calls' first runs included; `holds_s`: the part of them in tie-round measurements.
    """
    measurements: int = 0
    samples: int = 0
    warmup_samples: int = 0
    throttled_samples: int = 0
    stopped_slower: int = 0
    choice_lists: int = 0
    holds: int = 0
    torch_timed: int = 0
    measure_s: float = 0.0
    holds_s: float = 0.0

    def add(self, result: Result, seconds: float, held: bool) -> None:
        """One measurement that took `seconds` (`held`: a tie-round hold)."""
        self.measurements += 1
        self.samples += len(result.times_us)
        self.warmup_samples += result.warmup
        self.throttled_samples += result.throttled_samples
        self.stopped_slower += result.stop_reason == "slower"
        self.holds += held
        self.measure_s += seconds
        self.holds_s += seconds if held else 0.0

    def to_dict(self) -> dict[str, float]:
        """JSON-serialisable: every field."""
        return asdict(self)
