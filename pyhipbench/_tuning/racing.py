"""Racing's bound: the lowest upper bound of a measured median's 95 % CI so far, which the next candidates race.

With racing, a candidate's measurement stops (stop_reason "slower") as soon
as its median's CI lies wholly above the bound (bench's `slower_than_us`):
the winner is measured to the precision, a candidate surely slower only until
that is sure. Autotune, `tune()` and the sweep's scheduler each keep one
RaceBound and ask it for the options of every measurement they start.
"""
from __future__ import annotations

from .._measure.options import BenchOptions

__all__ = ["RaceBound"]


class RaceBound:
    """`bound_us`: the lowest CI upper bound seen, µs (None before the first, and always when not
    `enabled`); `start_us`: a bound known before (a resumed sweep's results)."""

    def __init__(self, enabled: bool, start_us: float | None = None) -> None:
        self.enabled = enabled
        self.bound_us: float | None = start_us if enabled else None

    def lower(self, ci_high_us: float) -> None:
        """After a measured result: its CI upper bound (µs), if lower than the bound."""
        if self.enabled and ci_high_us > 0 and (self.bound_us is None or ci_high_us < self.bound_us):
            self.bound_us = ci_high_us  # bench takes a bound > 0 only

    def options_for(self, options: BenchOptions) -> BenchOptions:
        """`options` as the next measurement takes them: with a bound known, `slower_than_us` set to it (or
        kept, if the options' own is lower); a fixed `iterations` never races (BenchOptions refuses both).
        A measurement started with a bound that a later result lowered only races less: still valid."""
        if self.bound_us is None or options.iterations is not None:
            return options
        own_us = options.slower_than_us
        return options.replace(slower_than_us=self.bound_us if own_us is None else min(own_us, self.bound_us))
