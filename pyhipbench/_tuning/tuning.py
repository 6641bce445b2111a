"""Tuning: what `pyhipbench.tune()` found, each candidate's result or error, and the winner."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._measure.result import Result
from .trial import Trial

__all__ = ["CandidateResult", "Tuning"]


@dataclass(frozen=True)
class CandidateResult:
    """One candidate of a tuning: its screen `result` (None when it failed: `error` says why), its
    `sustained` result where it was tied with the fastest and measured again after a hold (None
    otherwise), a `note` on how it ran, and `measure_s`, the seconds spent preparing and measuring it."""
    label: str
    candidate: Any = None  # the candidate as it was given (a Launch, a list of Launch, a callable)
    result: Result | None = None
    error: str | None = None
    sustained: Result | None = None
    note: str | None = None
    measure_s: float = 0.0

    @classmethod
    def of(cls, trial: Trial, candidate: Any) -> CandidateResult:
        """What the engine left in `trial`, for `candidate`."""
        return cls(trial.label, candidate, trial.result, trial.error, trial.sustained, trial.note, trial.measure_s)

    @property
    def median_us(self) -> float | None:
        """The median the ranking used, µs: the sustained one for a tie, else the screen's (None: failed)."""
        if self.sustained is not None:
            return self.sustained.median_us
        return None if self.result is None else self.result.median_us

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable: the label, the screen and sustained results (Result.to_dict() without the
        samples), or the error; the note and the seconds measuring."""
        out: dict[str, Any] = {"label": self.label, "note": self.note, "measure_s": self.measure_s}
        for name in ("result", "sustained"):
            result = getattr(self, name)
            if result is not None:
                record = result.to_dict()
                del record["times_us"]
                out[name] = record
        if self.error is not None:
            out["error"] = self.error
        return out


@dataclass(frozen=True)
class Tuning:
    """Every candidate's CandidateResult in the order given; `order`: the indices of those that ran, the
    winner first (the ties by their sustained median, then the rest by their median); the seconds the
    tuning took (`wall_s`)."""
    results: tuple[CandidateResult, ...]
    order: tuple[int, ...]
    wall_s: float

    @property
    def best(self) -> CandidateResult:
        """The winner."""
        return self.results[self.order[0]]

    @property
    def failed(self) -> tuple[CandidateResult, ...]:
        return tuple(r for r in self.results if r.error is not None)

    def ranked(self) -> list[CandidateResult]:
        """The candidates that ran, fastest first (the ties by their sustained median ahead of the rest), then
        the failed ones in the order given."""
        return [self.results[i] for i in self.order] + [r for r in self.results if r.result is None]

    def summary(self) -> str:
        """A table, fastest first: each candidate's median and CI (µs), why it stopped, and the sustained
        median of a tie; a failed one's error."""
        width = max(len("candidate"), *(len(r.label) for r in self.results))  # the header's, at least
        lines = [f"{'candidate':<{width}}  {'median µs':>10}  {'CI ± %':>6}  {'stopped':<10}  sustained µs"]
        for r in self.ranked():
            if r.result is None:
                lines.append(f"{r.label:<{width}}  failed: {r.error}")
                continue
            s = r.result.stats
            held = "" if r.sustained is None else f"{r.sustained.median_us:.3f}"
            mark = " <- best" if r is self.best else ""
            lines.append(f"{r.label:<{width}}  {s.median:>10.3f}  {100 * s.rel_ci:>6.2f}  "
                         f"{r.result.stop_reason:<10}  {held}{mark}")
        return "\n".join(lines)
