"""Racing's bound: the lowest CI upper bound measured so far, which the next candidates race.

With racing (`sweep(..., race=True)`), a candidate's measurement stops early
(stop_reason "slower") once its median is surely above the bound. The bound
joins the options a task carries, not the candidate: its id does not change.
"""
from __future__ import annotations

from typing import Any

from .._measure.options import BenchOptions
from .candidate import Candidate
from .store import Store

__all__ = ["RacingBound"]


class RacingBound:
    """`bound_us`: the lowest upper bound of a measured median's 95 % CI, µs: the results already in
    `store` (a resumed sweep's), lowered by each result since; None before the first, and always
    when not `enabled`."""

    def __init__(self, store: Store, enabled: bool) -> None:
        self.enabled = enabled
        self.bound_us: float | None = store.lowest_ci_high() if enabled else None

    def lower(self, result: dict[str, Any]) -> None:
        """After a measured result (Result.to_dict()): its CI upper bound, if lower."""
        if not self.enabled:
            return
        ci_high_us = result["stats_us"]["ci_high"]
        if ci_high_us > 0 and (self.bound_us is None or ci_high_us < self.bound_us):  # bench takes a bound > 0 only
            self.bound_us = ci_high_us

    def options_for(self, candidate: Candidate) -> BenchOptions:
        """The candidate's options as its task carries them: with a bound known, `slower_than_us` set to
        it (or kept, if the candidate's own is lower); a fixed `iterations` cannot race (BenchOptions
        refuses both). A task sent ahead carries the bound of when it was sent; a result that arrives
        before it starts may have lowered the bound since, but a looser bound is still valid: the
        candidate only races less."""
        options = candidate.bench
        if self.bound_us is None or options.iterations is not None:
            return options
        own_us = options.slower_than_us
        return options.replace(slower_than_us=self.bound_us if own_us is None else min(own_us, self.bound_us))
