"""The recorder: each candidate's end, recorded once, as soon as it is known.

A measured or failed candidate becomes a row of the store (committed at once:
a kill -9 of the sweep loses only what is still running), a count in the
sweep's summary and a step of the progress bar.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .._progress import Progress
from .._results.store import FAILED, OK, Row, Store, now
from .._results.tags import tags_text
from .candidate import MODULE, Candidate
from .worker import Outcome
from .worker_slot import Running

__all__ = ["Recorder", "SweepSummary"]


@dataclass
class SweepSummary:
    """What one call of `sweep` did: counts, wall time and GPU busy time (s), the database.

    `skipped` counts the candidates of the space not run: `already_recorded` (in the database before:
    resume) and the repeats of a candidate the space lists more than once, which runs once;
    `duplicates` names those, each (candidate, how many times the space lists it), in the space's order."""
    database: str
    total: int          # candidates in the space, as listed
    skipped: int        # not run: already recorded, or a repeat of one listed before
    measured: int = 0
    failed: int = 0
    wall_s: float = 0.0
    busy_s: float = 0.0  # sum over candidates of their measurement's wall time on a GPU
    gpus: int = 0
    already_recorded: int = 0  # distinct candidates of the space the database held before (resume)
    duplicates: list[tuple[Candidate, int]] = field(default_factory=list)

    @property
    def repeats(self) -> int:
        """Listings of a candidate after its first (each runs once)."""
        return sum(times - 1 for _candidate, times in self.duplicates)

    @property
    def utilisation(self) -> float:
        """GPU busy time over (wall time x GPUs)."""
        return self.busy_s / (self.wall_s * self.gpus) if self.wall_s and self.gpus else 0.0


class Recorder:
    """Records `count` candidates in `store`, `summary` and `progress`; `remaining` counts those not yet."""

    def __init__(self, store: Store, progress: Progress, summary: SweepSummary, count: int) -> None:
        self.store, self.progress, self.summary = store, progress, summary
        self.remaining = count

    def opened(self, device: dict[str, Any]) -> None:
        """A worker opened its device: the record a report keeps of it (environment.device_record)."""
        if device:
            self.store.add_device(device)

    def measured(self, done: Running, outcome: Outcome, device: str) -> None:
        candidate = done.attempt.candidate
        # A module's chain is named by the kernels it ran (its result's name); any other by its candidate.
        kernel = outcome.result.get("kernel", candidate.name) if candidate.launches == MODULE else candidate.name
        self.store.record(Row(candidate.id, candidate.to_json(), OK, done.attempt.number, done.started_at, device,
                              outcome.result, busy_s=outcome.busy_s, kernel=kernel))
        self.remaining -= 1
        self.summary.measured += 1
        tags = tags_text(candidate.tags)
        self.progress.measured(outcome.result["stats_us"]["median"], f"{kernel}{tags}")

    def failed(self, done: Running, reason: str, error: str, device: str) -> None:
        """A candidate's last attempt failed; the error says the first attempt's failure too, if different."""
        first = done.attempt.first_failure
        if first is not None and first != (reason, error):
            error = f"{error} (attempt 1: {first[0]}: {first[1]})"
        self._failed(done.attempt.candidate, done.attempt.number, done.started_at, reason, error, device)

    def not_compiled(self, candidate: Candidate, reason: str, error: str) -> None:
        """A candidate that never ran: its source did not compile."""
        self._failed(candidate, 0, now(), reason, error, None)

    def _failed(self, candidate: Candidate, attempts: int, started_at: str, reason: str, error: str,
                device: str | None) -> None:
        self.store.record(Row(candidate.id, candidate.to_json(), FAILED, attempts, started_at, device,
                              reason=reason, error=error, kernel=candidate.name))
        self.remaining -= 1
        self.summary.failed += 1
        self.progress.failure()
