"""Which timer measures a run, and how many launches one of its samples spans.

    events   an event pair around each launch: launch time (the kernel plus
             1.5-4 µs of launch and event overhead on the H200)
    cupti    NVIDIA: the kernel's own start and end from CUPTI activity records
    rocprofiler  AMD: the kernel's own start and end from rocprofiler-sdk's
             kernel-dispatch records (not run on AMD hardware yet)
    batched  one event pair over N back-to-back launches queued behind a spin
             kernel; a sample is their mean
    graph    a graph of N launches (the rotation unrolled inside), one event
             pair per replay; a sample is their mean

The default ("auto") is the backend's kernel timer where it traces a probe
launch: cupti where libcupti loads (NVIDIA), rocprofiler where
librocprofiler-sdk loads and was attached before HIP initialised (AMD);
else events (on AMD the events hipExtModuleLaunchKernel records bracket the
dispatch itself): the most faithful timer each machine offers, chosen from
the H200 study in docs/measurement.md.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from .. import _core
from .._values import integer, show
from ..errors import BenchError, Error

if TYPE_CHECKING:
    from .._device.device import Device

log = logging.getLogger(__name__)

TIMERS = ("events", "cupti", "rocprofiler", "batched", "graph")
PER_KERNEL_TIMERS = ("events", "cupti", "rocprofiler")  # one sample per launch; the only ones a clean step suits
CALL_TIMERS = ("cupti", "events")  # those that time a callable's calls (rocprofiler times launches it issues)
MIN_LAUNCHES_PER_SAMPLE = 16              # graph / batched: enough launches to amortise the event pair
MAX_LAUNCHES_PER_SAMPLE = 512             # batched queues them all behind the spin kernel: stay well
                                          # under the driver's queue depth, or the host blocks


def core_timer(device: Device, name: str, launches_per_sample: int = 0) -> _core.Timer:
    """The core's timer `name` on `device`, made once per device and then reused.

    `launches_per_sample`: graph nodes / batch length for "graph" and
    "batched" (0: the core's default); 1 (or 0) for "events" and "cupti".
    """
    if not (isinstance(name, str) and name in TIMERS):
        raise BenchError(f"timer {show(name)}: expected one of {', '.join(TIMERS)}")
    launches = integer("launches_per_sample", launches_per_sample, 0, MAX_LAUNCHES_PER_SAMPLE)

    def make() -> _core.Timer:
        spin = device.backend.spin_kernel
        spin_function = device.bundled_kernel(spin).handle if name == "batched" and spin else 0
        return _core.make_timer(name, device.driver, device.backend.context, launches_per_sample=launches,
                                spin_function=spin_function)
    return device.keep((core_timer, name, launches), make)


def default_timer(device: Device) -> str:
    """The backend's kernel timer (cupti on NVIDIA, rocprofiler on AMD) where it works on this device,
    else events: it must trace one launch of the bundled empty kernel (CUPTI cannot while another
    profiler holds it; rocprofiler-sdk sees nothing if HIP initialised before it). Probed once per device."""
    timer = device.backend.kernel_timer
    if timer is None:
        return "events"

    def probe() -> bool:
        try:
            tracing = core_timer(device, timer)  # a library that does not load fails here, before any launch
            empty = device.bundled_kernel("empty")
            tracing.run(_core.LaunchPlan(empty.handle, "empty", (1, 1, 1), (1, 1, 1), 0, 0, [b""], []), 1, 0)
        except Error as e:
            log.info("timer auto on %s: events (%s could not trace a probe launch: %s)", device.name, timer, e)
            return False
        log.info("timer auto on %s: %s (it traced a probe launch)", device.name, timer)
        return True
    return timer if device.keep((default_timer, timer), probe) else "events"


def min_launches_per_sample(timer: str) -> int:
    """The fewest launches one sample of `timer` spans, whatever the set count."""
    return 1 if timer in PER_KERNEL_TIMERS else MIN_LAUNCHES_PER_SAMPLE


def launches_per_sample(timer: str, sets: int) -> int:
    """Launches one sample spans: 1 for per-kernel timers; for graph and batched, a whole
    number of rotations (so every sample starts on the same set) of at least
    MIN_LAUNCHES_PER_SAMPLE, at most MAX_LAUNCHES_PER_SAMPLE."""
    if timer in PER_KERNEL_TIMERS:
        return 1
    launches = sets * -(-MIN_LAUNCHES_PER_SAMPLE // sets)
    if launches > MAX_LAUNCHES_PER_SAMPLE:
        raise BenchError(f"timer={timer!r} with {sets} rotated argument sets: one sample would span "
                         f"{launches} launches, over the {MAX_LAUNCHES_PER_SAMPLE} it can hold; use "
                         "timer='cupti' or 'events', fewer sets (rotate=N), or cache='clean-cold'")
    return launches


def timer_for(device: Device, timer: str, sets: int) -> _core.Timer:
    """The core timer for a run of `sets` argument sets."""
    return core_timer(device, timer, 0 if timer in PER_KERNEL_TIMERS else launches_per_sample(timer, sets))
