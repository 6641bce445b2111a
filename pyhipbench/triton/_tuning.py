"""ConfigResult and Tuning: what autotune found for one key, each config's result or error, and the pick."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .._measure.result import Result

__all__ = ["ConfigResult", "Tuning"]


@dataclass(frozen=True)
class ConfigResult:
    """One autotune candidate: its pyhipbench Result, or why it could not run.

    `compiled`: where its compile came from ("cache": Triton's cache had it;
    "pool": a compile worker; "here": this process, `note` says why).
    `compile_s`: seconds compiling (the worker's, or this process's);
    `queue_s`: seconds it waited for a compile worker; `measure_s`: seconds
    measuring (its load, which may overlap the bench of the config before,
    and its bench). `note`: how it was timed when that differs from the C++
    loop (hooks), or where it compiled. `sustained`: for a config tied with
    the fastest, its measurement again after the tie hold (None otherwise).
    `stored`: for a tuning read back from `cache_results`' file, what was
    stored (`result` is None).
    """
    config: Any              # the triton.Config
    result: Result | None    # None when it failed, or when it was read back from the tuning cache
    error: str | None = None  # the failure: a compile error, a limit it exceeds, a fault
    compiled: str | None = None
    compile_s: float | None = None
    queue_s: float | None = None
    measure_s: float | None = None
    note: str | None = None
    sustained: Result | None = None
    stored: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def median_us(self) -> float | None:
        if self.result is not None:
            return self.result.median_us
        return None if self.stored is None else self.stored.get("median_us")

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable: the config, and the median, CI (µs), timer, cache state, samples, why it
        stopped and the race's bound (µs; None: not raced), or the error; where it compiled and the
        seconds compiling, queued and measuring; for a tied config, its sustained median and CI (µs) and
        SM clock (MHz, None where not read)."""
        if self.stored is not None:
            return dict(self.stored)
        out: dict[str, Any] = {"config": self.config.all_kwargs(), "compiled": self.compiled,
                               "compile_s": self.compile_s, "queue_s": self.queue_s, "measure_s": self.measure_s,
                               "note": self.note}
        if self.result is None:
            return {**out, "error": self.error}
        r = self.result
        out |= {"median_us": r.median_us, "ci_us": list(r.ci_us), "timer": r.timer, "cache_state": r.cache_state,
                "samples": r.samples, "stop_reason": r.stop_reason, "slower_than_us": r.slower_than_us}
        if self.sustained is not None:
            clock = self.sustained.clock
            out |= {"sustained_median_us": self.sustained.median_us, "sustained_ci_us": list(self.sustained.ci_us),
                    "sustained_clock_mhz": None if clock is None else clock.mean_mhz}
        return out


@dataclass(frozen=True)
class Tuning:
    """The outcome of tuning one key: every config's result, and the fastest (by median; among the
    configs tied with the fastest, by their sustained median).
    `wall_s`: seconds the tuning took (pruning to the last measurement; reading the file, for a tuning
    read back); `compile_wall_s`: of those, seconds until every config had compiled;
    `from_cache`: read back from cache_results' file rather than measured."""
    key: tuple
    results: tuple[ConfigResult, ...]
    best: Any  # the winning triton.Config
    wall_s: float = 0.0
    compile_wall_s: float = 0.0
    from_cache: bool = False

    @property
    def failed(self) -> tuple[ConfigResult, ...]:
        return tuple(r for r in self.results if r.error is not None)
