"""Which timer measures a run, and how many launches one of its samples spans.

    events   an event pair around each launch: launch time (the kernel plus
             1.5-4 µs of launch and event overhead on the H200)
    cupti    NVIDIA: the kernel's own start and end from CUPTI activity records
    batched  one event pair over N back-to-back launches queued behind a spin
             kernel; a sample is their mean
    graph    a graph of N launches (the rotation unrolled inside), one event
             pair per replay; a sample is their mean

The default ("auto") is cupti where libcupti loads (NVIDIA), else events
(on AMD the events hipExtModuleLaunchKernel records bracket the dispatch
itself): the most faithful timer each machine offers, chosen from the H200
study in docs/measurement.md.
"""
from __future__ import annotations

from importlib import resources
from typing import TYPE_CHECKING

from .. import _core
from ..errors import BenchError, Error

if TYPE_CHECKING:
    from .._device.device import Device

TIMERS = ("events", "cupti", "batched", "graph")
PER_KERNEL_TIMERS = ("events", "cupti")   # one sample per launch; the only ones a clean step suits
MIN_LAUNCHES_PER_SAMPLE = 16              # graph / batched: enough launches to amortise the event pair
MAX_LAUNCHES_PER_SAMPLE = 512             # batched queues them all behind the spin kernel: stay well
                                          # under the driver's queue depth, or the host blocks


def default_timer(device: Device) -> str:
    """cupti where it works on this device, else events: on NVIDIA, libcupti must
    load and trace one launch of the bundled empty kernel (it cannot while
    another profiler holds CUPTI). Probed once per device."""
    if device.backend.name != "cuda":
        return "events"
    if device.cupti_works is None:
        empty = device.load_module(resources.files("pyhipbench") / "kernels" / "empty.ptx").kernel("empty")
        plan = _core.LaunchPlan(empty.handle, "empty", (1, 1, 1), (1, 1, 1), 0, 0, [b""], [])
        try:
            device.timer("cupti").run(plan, 1, 0)
            device.cupti_works = True
        except Error:
            device.cupti_works = False
        empty.module.unload()
    return "cupti" if device.cupti_works else "events"


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
    return device.timer(timer, 0 if timer in PER_KERNEL_TIMERS else launches_per_sample(timer, sets))
