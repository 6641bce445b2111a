"""Resolved: BenchOptions resolved against a device, the one step every measurement and tuner asks.

The options say what is asked ("auto" timer, "auto" cache); a measurement on
a device needs what that comes to there: the timer that runs (auto: the
backend's kernel timer where it traces a probe launch, else events; events
while torch.profiler records, with a note saying so), the cache state, the
argument sets asked for, whether a clean step runs before each sample,
whether host work beside the samples stays out of them (a tuner prepares the
next candidate then), and the most seconds it may run.
"""
from __future__ import annotations

import functools
import logging
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import BenchError
from .options import BenchOptions
from .timers import CALL_TIMERS, default_timer

if TYPE_CHECKING:
    from .._device.device import Device

__all__ = ["Resolved", "resolve", "recording_profiler"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Resolved:
    """`timer`: the timer that runs; `cache_state`; `sets_asked`: dirty-cold's rotate ("auto" or R), 1
    otherwise; `clean_step`: a clean step runs before each sample (clean-cold); `host_work_hidden`: host
    work beside the samples stays out of them: the kernel timers (cupti, rocprofiler) read each kernel's
    GPU time, a batched or graph sample is queued before it is timed, while an events sample spans the
    host's launch calls; `limit_s`: the most seconds the measurement may run (the hold and max_time_s;
    None for a fixed count, which has no limit); `timer_note`: why the auto timer is not the kernel
    timer it would be (a profiler recording), for the result; else None."""
    timer: str
    cache_state: str
    sets_asked: int | str
    clean_step: bool
    host_work_hidden: bool
    limit_s: float | None
    timer_note: str | None = None


def resolve(options: BenchOptions, device: Device, *, calls: bool = False) -> Resolved:
    """`options` on `device` (the auto timer's probe runs once per device, on first use), for a kernel's
    launches or (`calls`) a callable's calls, which only the timers that time calls can read (auto on AMD:
    events, the rocprofiler timer timing launches it issues). BenchError for timer='cupti' while
    torch.profiler records."""
    timer, note = _timer(options.timer, device)
    if calls and timer not in CALL_TIMERS:
        timer = "events"
    cache = options.cache_state
    return Resolved(timer, cache, options.rotate if cache == "dirty-cold" else 1, cache == "clean-cold",
                    timer != "events", options.limit_s, note)


def recording_profiler() -> str | None:
    """The profiler recording in this process that CUPTI's activity records belong to while it does
    ("torch.profiler", Kineto), or None. CUPTI has one set of activity buffers per process: a trace of
    ours would take the profiler's records, and its would take ours. Before or after its session, the
    cupti timer shares CUPTI with it (csrc/cupti.hpp). torch says only that its profiler records, not
    whether it records CUDA activity: a session of CPU activities alone counts too."""
    torch = sys.modules.get("torch")  # not imported: nothing of torch's records
    enabled = getattr(getattr(torch, "autograd", None), "_profiler_enabled", None)
    return "torch.profiler" if callable(enabled) and enabled() else None


def _timer(asked: str, device: Device) -> tuple[str, str | None]:
    """The timer that runs for `asked` on `device`, and the note saying why it is not the one asked for."""
    profiler = recording_profiler() if device.backend.kernel_timer == "cupti" else None
    if profiler is None:
        return (default_timer(device) if asked == "auto" else asked), None
    if asked == "cupti":
        raise BenchError(f"timer='cupti' while {profiler} records in this process: CUPTI's activity records "
                         "are the profiler's until its session ends; expected a measurement outside the "
                         "session, or timer='events'")
    if asked != "auto":
        return asked, None
    note = (f"timer events, not cupti: {profiler} was recording (CUPTI's records are its own during its "
            "session); measure outside the session for kernel time")
    _warn_once(note)
    return "events", note


@functools.cache  # once per process for each note
def _warn_once(note: str) -> None:
    log.warning("%s", note)
