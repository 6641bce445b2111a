"""A benchmark's result: the samples and everything needed to read them."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from .._launch.launch_config import LaunchConfig
from .energy import Energy
from .rotation import Rotation
from .stats import Summary, summarize


@dataclass(frozen=True)
class KernelTime:
    """One kernel of a chain, or one kernel, memcpy or memset of a call, with its own median (µs)."""

    name: str
    kind: str                     # "kernel", "memcpy" or "memset"
    median_us: float | None       # None where the timer gives no per-kernel time (events, graph, batched)
    grid: tuple[int, int, int] | None = None    # a chain's kernels: their launch
    block: tuple[int, int, int] | None = None
    bytes: int = 0                # memcpy, memset: bytes per call

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "median_us": self.median_us,
                "grid": None if self.grid is None else list(self.grid),
                "block": None if self.block is None else list(self.block), "bytes": self.bytes}


@dataclass(frozen=True)
class Clock:
    """The SM clock the timed samples ran at, MHz: over their runs (each run's clock from the clock
    probe's stamps around it), the mean weighted by samples, the lowest and the highest run; and the
    device's rated SM clock. docs/measurement.md#the-clock says how it is read."""

    mean_mhz: float
    min_mhz: float
    max_mhz: float
    rated_mhz: float

    @classmethod
    def of(cls, taken: Any) -> "Clock | None":
        """From a core Measurement; None where no run reported a clock (AMD, or no stamp)."""
        clocks, counts = np.asarray(taken.clock_mhz), np.asarray(taken.clock_samples, dtype=np.float64)
        if not len(clocks) or not counts.sum():
            return None
        return cls(float(np.average(clocks, weights=counts)), float(clocks.min()), float(clocks.max()),
                   float(taken.default_clock_mhz))

    def to_dict(self) -> dict[str, float]:
        return {"mean": self.mean_mhz, "min": self.min_mhz, "max": self.max_mhz, "rated": self.rated_mhz}


@dataclass(frozen=True)
class Result:
    """One benchmark: samples (µs per sample), with the timer, cache state, rotation,
    device and launch that made them, and why the run stopped.

    A sample is what `ran` says: one kernel's launch, a chain's launches in
    order, one call of a callable, or one replay of the graph captured from it.
    Statistics (`stats`, `median_us`, ...) are over `times_us`, the timed
    samples (warm-up excluded). With the graph and batched timers a sample is
    the mean of `launches_per_sample` launches.
    """

    kernel: str                   # the kernel's name; a chain's names joined by " -> "; a callable's name
    device: dict[str, Any]        # backend, index, name, arch, l2_bytes, llc_bytes
    config: LaunchConfig | None   # the (first) kernel's launch; None for a callable
    rotation: Rotation
    times_us: np.ndarray = field(repr=False)  # per sample, µs per kernel
    timer: str                    # "cupti", "rocprofiler", "events", "graph" or "batched"
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
    ran: str = "kernel"           # "kernel", "chain", "call" or "graph" (a callable's captured graph, replayed)
    kernels: tuple[KernelTime, ...] = ()  # a chain's kernels; a call's kernels, memcpys and memsets
    span_us: np.ndarray | None = field(default=None, repr=False)  # per sample, first kernel start to last end
    call_note: str | None = None  # a callable: why it was called rather than replayed as a graph, or None
    timer_note: str | None = None  # why the auto timer was not the kernel timer (a profiler recording), or None
    first_call_s: float | None = None  # a callable: wall time of its first, untimed call (which may compile), s
    clock: Clock | None = None    # the SM clock the samples ran at; None where not read (AMD)
    throttled_samples: int = 0    # samples taken below the throttle threshold, discarded and taken again
    energy: Energy | None = None  # energy=True: mJ per sample and mean W from NVML's counter (or why none); else None

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
        ran = "" if self.ran == "kernel" else f"{self.ran} "
        return (f"{ran}{self.kernel} on {self.device['name']} ({self.device['arch']}{built}): "
                f"median {s.median:.3f} µs (95 % CI {s.ci_low:.3f}–{s.ci_high:.3f}, ±{100 * s.rel_ci:.2f} %), "
                f"p10–p90 {s.p10:.3f}–{s.p90:.3f}, {s.outliers} outliers, {s.count} samples "
                f"(stopped: {self.stop_reason}{raced}); timer {self.timer}, cache {self.cache_state}, "
                f"{self.rotation.sets} set(s): {self.rotation.reason}; host {self.host_us_per_kernel:.2f} "
                f"µs/launch, {1e3 * self.wall_s:.1f} ms wall" + self._clock_text()
                + self._energy_text() + ("; outputs verified" if self.verified else "") + self._parts())

    def _energy_text(self) -> str:
        return "" if self.energy is None else f"; {self.energy.describe()}"

    def _clock_text(self) -> str:
        if self.clock is None:
            return "; SM clock not read"
        c = self.clock
        spread = f" ({c.min_mhz:.0f}–{c.max_mhz:.0f})" if c.max_mhz - c.min_mhz >= 1 else ""
        text = f"; SM clock {c.mean_mhz:.0f} MHz{spread} of {c.rated_mhz:.0f} rated"
        if self.throttled_samples:
            text += f", {self.throttled_samples} throttled samples taken again"
        return text

    def _parts(self) -> str:
        """The chain's or call's kernels and span, and how a callable ran, for summary()."""
        parts = [f"{k.name} {k.median_us:.3f}" for k in self.kernels if k.median_us is not None]
        text = f"; kernels (median µs): {', '.join(parts)}" if parts else ""
        if self.span_us is not None and len(self.span_us):
            text += f"; span median {float(np.median(self.span_us)):.3f} µs"
        if self.call_note:
            text += f"; {self.call_note}"
        if self.timer_note:
            text += f"; {self.timer_note}"
        return text

    def to_dict(self) -> dict[str, Any]:
        """Plain, JSON-serialisable data."""
        r, s = self.rotation, self.stats
        return {
            "kernel": self.kernel,
            "device": dict(self.device),
            "ran": self.ran,
            "grid": None if self.config is None else list(self.config.grid),
            "block": None if self.config is None else list(self.config.block),
            "shared_bytes": None if self.config is None else self.config.shared_bytes,
            "kernels": [k.to_dict() for k in self.kernels],
            "span_us": None if self.span_us is None else [float(t) for t in self.span_us],
            "call_note": self.call_note,
            "timer_note": self.timer_note,
            "first_call_s": self.first_call_s,
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
            "clock_mhz": None if self.clock is None else self.clock.to_dict(),
            "throttled_samples": self.throttled_samples,
            "energy": None if self.energy is None else self.energy.to_dict(),
            "stats_us": {"median": s.median, "ci_low": s.ci_low, "ci_high": s.ci_high, "rel_ci": s.rel_ci,
                         "mean": s.mean, "stdev": s.stdev, "min": s.min, "max": s.max, "p10": s.p10,
                         "p90": s.p90, "outliers": s.outliers},
            "times_us": np.asarray(self.times_us, dtype=np.float64).tolist(),
        }
