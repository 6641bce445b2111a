"""BenchOptions: what a measurement is asked for, checked once.

Every front end builds one and nothing re-checks its values: `bench()` from
its keywords, the CLI from its flags (it only turns text into values), a sweep
candidate from its "bench" object, `pyhipbench.triton.autotune` from its
keywords. So a value is accepted or refused the same way, with the same
message, wherever it comes from. Choices that need the device (the timer
"auto" resolves to) are made by bench(); the C++ core's `StopRule::validate`
checks the rule again for C++ callers, who do not come through here.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from .. import _core
from .._values import integer, real, show
from ..errors import BenchError
from .cache import CACHE_STATES, DEFAULT_CACHE_STATE
from .rotation import checked_rotate
from .timers import PER_KERNEL_TIMERS, TIMERS

# Every launch of a chunk holds its driver events until the chunk's one
# synchronisation, so a chunk, and a fixed count, is bounded.
MAX_LAUNCHES = 1_000_000

# Racing's runs start short: with 6 samples the median's 95 % CI is the sample range (its exact coverage
# 1 - 2 / 2**6 = 96.9 %; 5 would cover only 93.8 %), so a candidate surely slower than the bound (its
# fastest sample above it) stops after a 3-sample warm-up chunk and 6 timed samples, one run, and one near
# the bound goes on to the precision as any other.
RACING_CHUNKS = {"warmup_chunk": 3, "first_chunk": 6, "min_samples": 6}

# A fixed count is taken whatever the time: the time cap (which counts the
# warm-up sharing the first run) must never cut it short.
_FIXED_COUNT_TIME_CAP_S = 1e9


@dataclass(frozen=True)
class BenchOptions:
    """A measurement's options, each checked on construction (BenchError naming the value).

    `timer`: "cupti", "rocprofiler", "events", "graph", "batched", or "auto"
    (cupti on NVIDIA, rocprofiler on AMD, where it traces; else events). `cache`: "warm", "dirty-cold", "clean-cold", or
    "auto" (warm when rotate=1, dirty-cold when rotate > 1, else clean-cold).
    `precision`: target relative half-width of the median's 95 % CI, in (0, 1).
    `max_time_s`: wall-time cap of the measurement (warm-up included), seconds.
    `iterations`: take exactly this many samples instead (no precision target).
    `warmup`: untimed samples first; None warms up until the times settle.
    `rotate`: dirty-cold's set count R ("auto": from the last-level cache and
    free memory; 1 = warm). `slower_than_us`: racing, for tuners: stop
    (stop_reason "slower") as soon as the median's 95 % CI lies wholly above
    this time, µs. `throttle_threshold`: a run of samples whose SM clock is
    below this fraction of the device's rated clock is discarded and taken
    again after a pause (`Result.throttled_samples` counts them); 0 = off.
    `hold_s`: untimed runs back to back for at least this long before the
    warm-up, seconds (0 = none): the measurement then reads the clock the
    GPU's power and thermal limits sustain under this work rather than its
    boost clock; `max_time_s` counts from the hold's end.
    """
    timer: str = "auto"
    cache: str = "auto"
    precision: float = 0.01
    max_time_s: float = 1.0
    iterations: int | None = None
    warmup: int | None = None
    rotate: int | str = "auto"
    slower_than_us: float | None = None
    throttle_threshold: float = 0.75
    energy: bool = False
    hold_s: float = 0.0

    def __post_init__(self) -> None:
        if not (isinstance(self.timer, str) and self.timer in TIMERS + ("auto",)):
            raise BenchError(f"timer={show(self.timer)}: expected one of {', '.join(TIMERS)} or 'auto'")
        if not (isinstance(self.cache, str) and self.cache in CACHE_STATES + ("auto",)):
            raise BenchError(f"cache={show(self.cache)}: expected one of {', '.join(CACHE_STATES)} or 'auto' "
                             f"(default {DEFAULT_CACHE_STATE})")
        self._set("precision", real("precision", self.precision, above=0, below=1))
        self._set("max_time_s", real("max_time_s", self.max_time_s, above=0))
        if self.iterations is not None:
            self._set("iterations", integer("iterations", self.iterations, 1, MAX_LAUNCHES))
        if self.warmup is not None:
            self._set("warmup", integer("warmup", self.warmup, 0, MAX_LAUNCHES))
        self._set("rotate", checked_rotate(self.rotate))
        self._set("throttle_threshold", real("throttle_threshold", self.throttle_threshold, minimum=0, below=1))
        if self.slower_than_us is not None:
            self._set("slower_than_us", real("slower_than_us", self.slower_than_us, above=0))
            if self.iterations is not None:
                raise BenchError(f"slower_than_us={show(self.slower_than_us)} with iterations={self.iterations}: "
                                 "racing stops a run early, a fixed count never does; expected one of them")
        self._set("hold_s", real("hold_s", self.hold_s, minimum=0))
        if not isinstance(self.energy, bool):
            raise BenchError(f"energy={show(self.energy)}: expected True or False")
        if self.energy and self.cache_state == "clean-cold":
            raise BenchError("energy=True with cache='clean-cold'" + (" (the default)" if self.cache == "auto" else "")
                             + ": each sample's clean step would count in its energy; expected cache='warm' or "
                             "'dirty-cold' with energy=True")
        if isinstance(self.rotate, int) and self.cache != "auto" and (self.cache == "dirty-cold") != (self.rotate > 1):
            raise BenchError(f"rotate={self.rotate} with cache={self.cache!r}: only dirty-cold rotates argument "
                             "sets (rotate > 1); rotate=1 is warm")
        if self.cache_state == "clean-cold" and self.timer not in PER_KERNEL_TIMERS + ("auto",):
            raise BenchError(f"cache='clean-cold' with timer={self.timer!r}: a {self.timer} sample spans several "
                             "launches, so it would time the clean step too; use timer='cupti' or 'events'")

    def _set(self, name: str, value: object) -> None:
        object.__setattr__(self, name, value)  # the checked value, as a plain Python number

    @property
    def cache_state(self) -> str:
        """The cache state asked for, "auto" resolved: clean-cold, or warm with rotate=1, dirty-cold with
        rotate > 1."""
        if self.cache != "auto":
            return self.cache
        if self.rotate == "auto":
            return DEFAULT_CACHE_STATE
        return "warm" if self.rotate == 1 else "dirty-cold"

    def stop_rule(self) -> _core.StopRule:
        """The stopping rule these options ask for (the core applies it, csrc/include/pyhipbench/stopping.hpp)."""
        if self.iterations is None:
            if self.slower_than_us is None:
                return _core.StopRule(precision=self.precision, max_time_s=self.max_time_s,
                                      throttle_threshold=self.throttle_threshold, hold_s=self.hold_s)
            return _core.StopRule(precision=self.precision, max_time_s=self.max_time_s,
                                  slower_than_us=self.slower_than_us, throttle_threshold=self.throttle_threshold,
                                  hold_s=self.hold_s, **RACING_CHUNKS)
        return fixed_count(self.iterations, self.throttle_threshold, self.hold_s)

    def replace(self, **changes: Any) -> BenchOptions:
        """A copy with `changes` applied (and checked)."""
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_json(cls, data: object) -> BenchOptions:
        """Options from a JSON object of bench() keywords; unknown keys refused, naming them."""
        if not isinstance(data, dict):
            raise BenchError(f"bench={show(data)}: expected an object of bench() options")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names, key=str)
        if unknown:
            raise BenchError(f"bench option(s) {', '.join(map(repr, unknown))} unknown; expected "
                             f"{', '.join(sorted(names))}")
        return cls(**data)

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))


def fixed_count(samples: int, throttle_threshold: float, hold_s: float = 0.0) -> _core.StopRule:
    """The rule that takes exactly `samples` timed samples, in one run (after a hold of `hold_s`, s)."""
    return _core.StopRule(precision=0, min_samples=samples, max_samples=samples, first_chunk=samples,
                          max_time_s=_FIXED_COUNT_TIME_CAP_S, throttle_threshold=throttle_threshold, hold_s=hold_s)
