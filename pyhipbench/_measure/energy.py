"""Energy per sample (opt-in, `energy=True`): NVML's energy counter around a window of samples.

After the measurement, the same plan runs again for at least WINDOW_S of
samples back to back, while a thread polls NVML's total-energy counter (mJ
since the driver loaded; Volta and later) every POLL_S. The counter does not
advance with every joule: it steps when the driver samples the power, every
few milliseconds. So the figures come from its steps inside the window, not
from its ends: the slope of the steps (least squares, energy against the
time each was seen) is the mean power, and the mean power times the
window's wall time per sample is the energy per sample. What limits them is stated with
them: the counter's unit (1 mJ) and how often it stepped. Kernel Tuner's NVML
observer (a continuous 1 s run, its power read by NVML) is the anchor.

A window that gives no figure (the counter stepped fewer than MIN_STEPS times,
or stopped reading) takes nothing from the measurement before it: the Energy
says why (`unreadable`), its figures None, as an environment's unreadable
field does.

A device without the counter (AMD here: no amdsmi; an NVIDIA GPU or driver
that does not support it) is refused before anything runs.
"""
from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .._device.nvml import NvmlDevice, Unreadable, nvml
from ..errors import BenchError

if TYPE_CHECKING:
    from .._device.device import Device

WINDOW_S = 1.0      # samples run back to back for at least this long, s
POLL_S = 0.0005     # how often the counter is read during the window, s
MIN_STEPS = 3       # counter steps the window must hold to give a figure
MAX_SAMPLES = 1_000_000  # a window of kernels quicker than 1 µs each is cut to this many (shorter than WINDOW_S)


@dataclass(frozen=True)
class Energy:
    """The energy a sample took and the GPU's mean power while samples ran back to back; where the counter
    gave no figure, why (`unreadable`), and the figures None."""

    mj_per_sample: float | None    # mJ per sample (one kernel, a chain's kernels, one call)
    mean_w: float | None           # the GPU's mean power over the window, W
    window_s: float | None         # the time between the counter's first and last step in the window, s
    samples: int                   # samples run in the window
    counter_step_ms: float | None  # the median time between the counter's steps, ms
    counter_unit_mj: float         # the counter's unit, mJ
    unreadable: str | None = None  # why the window gave no figure; None when it did

    def to_dict(self) -> dict[str, Any]:
        return {"mj_per_sample": self.mj_per_sample, "mean_w": self.mean_w, "window_s": self.window_s,
                "samples": self.samples, "counter_step_ms": self.counter_step_ms,
                "counter_unit_mj": self.counter_unit_mj, "source": "NVML total energy counter",
                "unreadable": self.unreadable}

    def describe(self) -> str:
        """The figures and what limits them, or why there are none: a phrase of `Result.summary()`."""
        if self.unreadable is not None:
            return f"energy not read: {self.unreadable}"
        return (f"energy {self.mj_per_sample:.4g} mJ per sample, {self.mean_w:.1f} W mean over {self.samples} "
                f"samples (NVML counter, {self.counter_unit_mj:g} mJ unit, stepping every "
                f"{self.counter_step_ms:.1f} ms)")


def energy_counter(device: Device) -> NvmlDevice:
    """The device's energy counter, read once to prove it reads; BenchError saying why where it cannot."""
    if device.backend.device_monitor != "nvml":
        raise BenchError("energy=True: AMD GPUs have no energy counter in this version (it reads no amdsmi); "
                         "expected energy=False on AMD")
    try:
        counter = nvml().device(str(device.backend.facts()["pci_bus_id"]))
        counter.energy_mj()
    except Unreadable as e:
        raise BenchError(f"energy=True: {device.name} has no readable energy counter ({e}); expected a GPU and "
                         "driver whose NVML reads total energy (Volta or later), or energy=False") from None
    return counter


def sample_s(taken: Any) -> float:
    """The wall time of one sample run back to back (a core Measurement's), s: its GPU time or, for a
    kernel quicker than its launch, the host's time to issue it."""
    gpu_s = float(np.median(taken.times_us)) * taken.launches_per_sample * 1e-6
    return max(gpu_s, taken.host_us * 1e-6 / len(taken.times_us))


def measure_energy(counter: NvmlDevice, run: Callable[[int], object], seconds_per_sample: float) -> Energy:
    """Runs `run(n)` (n samples back to back) for at least WINDOW_S, given `seconds_per_sample` of wall
    time each, and reads the energy from the counter's steps in between (or says why it could not)."""
    samples = min(MAX_SAMPLES, max(1, math.ceil(WINDOW_S / seconds_per_sample)))
    steps: list[tuple[float, int]] = []
    stopped: list[Unreadable] = []  # the counter's error, where it stopped reading
    running = threading.Event()
    running.set()

    def poll() -> None:
        last = None
        while running.is_set():
            try:
                value = counter.energy_mj()
            except Unreadable as e:  # NVML lost the GPU, or its driver went away, inside the window
                stopped.append(e)
                return
            if value != last:
                steps.append((time.perf_counter(), value))
                last = value
            time.sleep(POLL_S)

    poller = threading.Thread(target=poll, name="pyhipbench energy counter", daemon=True)
    poller.start()
    try:
        time.sleep(2 * POLL_S)  # the counter's value before the window: the first entry
        started = time.perf_counter()
        run(samples)
        ended = time.perf_counter()
    finally:
        running.clear()
        poller.join()
    inside = [(t, e) for t, e in steps[1:] if started <= t <= ended]  # steps the window's samples made
    if stopped:
        return _unread(f"the NVML counter stopped reading during the {ended - started:.3f} s of samples "
                       f"({stopped[0]})", samples)
    if len(inside) < MIN_STEPS:
        return _unread(f"the NVML counter stepped {len(inside)} times in {ended - started:.3f} s of samples; "
                       f"expected at least {MIN_STEPS} to give a figure", samples)
    times, values = np.array([t for t, _ in inside]), np.array([e for _, e in inside], dtype=np.float64)
    # The slope of the steps, fitted: each step is seen up to a poll late, and the fit spreads that
    # lateness over all of them rather than taking it whole from the first and the last.
    mean_w = float(np.polyfit(times - times[0], values, 1)[0]) / 1e3
    per_sample_s = (ended - started) / samples
    return Energy(mj_per_sample=mean_w * per_sample_s * 1e3, mean_w=mean_w, window_s=float(times[-1] - times[0]),
                  samples=samples, counter_step_ms=float(np.median(np.diff(times))) * 1e3, counter_unit_mj=1.0)


def _unread(why: str, samples: int) -> Energy:
    """The Energy of a window of `samples` that gave no figure, saying `why`."""
    return Energy(mj_per_sample=None, mean_w=None, window_s=None, samples=samples, counter_step_ms=None,
                  counter_unit_mj=1.0, unreadable=why)
