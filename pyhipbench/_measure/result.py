"""A benchmark's result: the samples and everything needed to read them."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from .._launch.launch_config import LaunchConfig
from .rotation import Rotation
from .stats import Summary, summarize


@dataclass(frozen=True)
class Result:
    """One benchmark: samples (µs per kernel), with the timer, cache state, rotation,
    device and launch that made them, and why the run stopped.

    Statistics (`stats`, `median_us`, ...) are over `times_us`, the timed
    samples (warm-up excluded). With the graph and batched timers a sample is
    the mean of `launches_per_sample` launches.
    """

    kernel: str
    device: dict[str, Any]        # backend, index, name, arch, l2_bytes, llc_bytes
    config: LaunchConfig
    rotation: Rotation
    times_us: np.ndarray = field(repr=False)  # per sample, µs per kernel
    timer: str                    # "cupti", "events", "graph" or "batched"
    cache_state: str              # "warm", "dirty-cold" or "clean-cold"
    stop_reason: str              # "precision", "slower" (racing), "max-time", "max-samples" or "iterations"
    precision: float              # the target: relative half-width of the median's 95 % CI (0: none)
    warmup: int                   # untimed samples run first
    launches_per_sample: int
    host_us_per_kernel: float     # host time to issue one timed launch, µs
    wall_s: float                 # the whole measurement, argument copies included, seconds
    target: str | None            # the processor the kernel's code was built for ("sm_90a"); None: not known
    verified: bool = False        # the outputs of one launch on every set were checked (bench's expect)
    slower_than_us: float | None = None  # racing: the bound it ran against, µs (None: no racing)

    @cached_property
    def stats(self) -> Summary:
        """Median and its 95 % confidence interval, spread and outliers, µs."""
        return summarize(self.times_us)

    @property
    def median_us(self) -> float:
        return self.stats.median

    @property
    def ci_us(self) -> tuple[float, float]:
        """The median's 95 % confidence interval, µs."""
        return self.stats.ci_low, self.stats.ci_high

    @property
    def samples(self) -> int:
        return len(self.times_us)

    def summary(self) -> str:
        """One line: median and CI (µs), timer, cache state, rotation, why it stopped, cost."""
        s = self.stats
        built = f", code for {self.target}" if self.target else ""
        raced = f", racing {self.slower_than_us:.3f} µs" if self.slower_than_us is not None else ""
        return (f"{self.kernel} on {self.device['name']} ({self.device['arch']}{built}): "
                f"median {s.median:.3f} µs (95 % CI {s.ci_low:.3f}–{s.ci_high:.3f}, ±{100 * s.rel_ci:.2f} %), "
                f"p10–p90 {s.p10:.3f}–{s.p90:.3f}, {s.outliers} outliers, {s.count} samples "
                f"(stopped: {self.stop_reason}{raced}); timer {self.timer}, cache {self.cache_state}, "
                f"{self.rotation.sets} set(s): {self.rotation.reason}; host {self.host_us_per_kernel:.2f} "
                f"µs/launch, {1e3 * self.wall_s:.1f} ms wall" + ("; outputs verified" if self.verified else ""))

    def to_dict(self) -> dict[str, Any]:
        """Plain, JSON-serialisable data."""
        r, s = self.rotation, self.stats
        return {
            "kernel": self.kernel,
            "device": dict(self.device),
            "grid": list(self.config.grid),
            "block": list(self.config.block),
            "shared_bytes": self.config.shared_bytes,
            "target": self.target,
            "timer": self.timer,
            "cache_state": self.cache_state,
            "stop_reason": self.stop_reason,
            "slower_than_us": self.slower_than_us,
            "precision": self.precision,
            "rotation": {"sets": r.sets, "wanted": r.wanted, "set_bytes": r.set_bytes,
                         "llc_bytes": r.llc_bytes, "reason": r.reason},
            "samples": s.count,
            "warmup": self.warmup,
            "launches_per_sample": self.launches_per_sample,
            "host_us_per_kernel": self.host_us_per_kernel,
            "wall_s": self.wall_s,
            "verified": self.verified,
            "stats_us": {"median": s.median, "ci_low": s.ci_low, "ci_high": s.ci_high, "rel_ci": s.rel_ci,
                         "mean": s.mean, "stdev": s.stdev, "min": s.min, "max": s.max, "p10": s.p10,
                         "p90": s.p90, "outliers": s.outliers},
            "times_us": [float(t) for t in self.times_us],
        }
