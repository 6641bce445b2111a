"""A benchmark's result: per-iteration times and everything needed to read them."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .launch_config import LaunchConfig
from .rotation import Rotation


@dataclass(frozen=True)
class Result:
    """One benchmark: per-iteration times (µs), with the rotation, device and launch that made them.

    Statistics are over `times_us`, the timed iterations (warm-up excluded),
    all in µs.
    """

    kernel: str
    device: dict[str, Any]        # backend, index, name, arch, l2_bytes, llc_bytes
    config: LaunchConfig
    rotation: Rotation
    times_us: np.ndarray = field(repr=False)  # per timed iteration, µs (driver events)
    warmup: int
    host_us_per_iteration: float  # host time to issue one timed iteration, µs
    timer: str = "events"         # how each iteration was timed

    @property
    def cache_state(self) -> str:
        return self.rotation.cache_state

    @property
    def iterations(self) -> int:
        return len(self.times_us)

    @property
    def median_us(self) -> float:
        return float(np.median(self.times_us))

    @property
    def mean_us(self) -> float:
        return float(np.mean(self.times_us))

    @property
    def min_us(self) -> float:
        return float(np.min(self.times_us))

    @property
    def max_us(self) -> float:
        return float(np.max(self.times_us))

    @property
    def stdev_us(self) -> float:
        """Sample standard deviation, µs (0 for one iteration)."""
        return float(np.std(self.times_us, ddof=1)) if self.iterations > 1 else 0.0

    def percentile_us(self, q: float) -> float:
        """The q-th percentile (0..100), µs."""
        return float(np.percentile(self.times_us, q))

    def summary(self) -> str:
        """One line: statistics (µs), cache state, rotation and why, host cost."""
        return (f"{self.kernel} on {self.device['name']} ({self.device['arch']}): "
                f"median {self.median_us:.2f} µs, mean {self.mean_us:.2f}, min {self.min_us:.2f}, "
                f"max {self.max_us:.2f}, stdev {self.stdev_us:.2f} over {self.iterations} iterations "
                f"({self.warmup} warm-up); cache {self.cache_state}, {self.rotation.sets} set(s): "
                f"{self.rotation.reason}; host {self.host_us_per_iteration:.2f} µs/iteration")

    def to_dict(self) -> dict[str, Any]:
        """Plain, JSON-serialisable data."""
        r = self.rotation
        return {
            "kernel": self.kernel,
            "device": dict(self.device),
            "grid": list(self.config.grid),
            "block": list(self.config.block),
            "shared_bytes": self.config.shared_bytes,
            "timer": self.timer,
            "cache_state": self.cache_state,
            "rotation": {"sets": r.sets, "wanted": r.wanted, "set_bytes": r.set_bytes,
                         "llc_bytes": r.llc_bytes, "reason": r.reason},
            "iterations": self.iterations,
            "warmup": self.warmup,
            "host_us_per_iteration": self.host_us_per_iteration,
            "stats_us": {"median": self.median_us, "mean": self.mean_us, "min": self.min_us,
                         "max": self.max_us, "stdev": self.stdev_us,
                         "p10": self.percentile_us(10), "p90": self.percentile_us(90)},
            "times_us": [float(t) for t in self.times_us],
        }
