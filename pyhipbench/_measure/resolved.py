"""Resolved: BenchOptions resolved against a device, the one step every measurement and tuner asks.

The options say what is asked ("auto" timer, "auto" cache); a measurement on
a device needs what that comes to there: the timer that runs (auto: the
backend's kernel timer where it traces a probe launch, else events), the
cache state, the argument sets asked for, whether a clean step runs before
each sample, whether host work beside the samples stays out of them (a tuner
prepares the next candidate then), and the most seconds it may run.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .options import BenchOptions
from .timers import default_timer

if TYPE_CHECKING:
    from .._device.device import Device

__all__ = ["Resolved", "resolve"]


@dataclass(frozen=True)
class Resolved:
    """`timer`: the timer that runs; `cache_state`; `sets_asked`: dirty-cold's rotate ("auto" or R), 1
    otherwise; `clean_step`: a clean step runs before each sample (clean-cold); `host_work_hidden`: host
    work beside the samples stays out of them: the kernel timers (cupti, rocprofiler) read each kernel's
    GPU time, a batched or graph sample is queued before it is timed, while an events sample spans the
    host's launch calls; `limit_s`: the most seconds the measurement may run (the hold and max_time_s;
    None for a fixed count, which has no limit)."""
    timer: str
    cache_state: str
    sets_asked: int | str
    clean_step: bool
    host_work_hidden: bool
    limit_s: float | None


def resolve(options: BenchOptions, device: Device) -> Resolved:
    """`options` on `device` (the auto timer's probe runs once per device, on first use)."""
    timer = default_timer(device) if options.timer == "auto" else options.timer
    cache = options.cache_state
    return Resolved(timer, cache, options.rotate if cache == "dirty-cold" else 1, cache == "clean-cold",
                    timer != "events", options.limit_s)
