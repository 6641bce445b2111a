"""A tuning recorded in a results database (pyhipbench/_results/store.py), a row per candidate as a sweep's.

`tune(..., record=PATH)` opens the database before anything runs (a path that
holds something else, or a sweep's results, is refused then) and, once the
tuning has ranked its candidates, commits a row per candidate and the
tuning's entry in meta "tunings" in one transaction. Each tuning recorded
into a database adds to it, numbered from 1: a tuning's pick comes from its
own measurements (its tie round), so a candidate recorded before is measured
again, not skipped.

A row is a sweep's: the candidate's screen result (`Result.to_dict()`
without the samples) or its error, the device, the GPU busy time. Its
candidate JSON holds the tuning's number, the label, `rank` (1: the winner;
null: failed), the note, `measure_s`, the tie round's `sustained` result
(or null) and the tags (the label, and a front end's kind's own, such as a
Triton launch's meta-parameters), which the readers show beside the kernel.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from .._device.device import Device
from .._results.environment import device_record
from .._results.store import FAILED, OK, Row, Store, now
from .tuning import CandidateResult, Tuning

__all__ = ["TuningRecord"]


class TuningRecord:
    """The results database `path` a tuning is recorded into, opened and checked on construction (BenchError
    naming the path for one that is not a tuning's database or a new file)."""

    def __init__(self, path: Path) -> None:
        self.store = Store(path, appending=True)
        self.started_at = now()

    def write(self, tuning: Tuning, tags: list[dict[str, Any]], device: Device) -> int:
        """Commits `tuning` (its candidates' results in the order given, each with its `tags`) as measured on
        `device`; returns its number in the database. OSError naming the database if the write fails, saying
        what the tuning found."""
        rank = {index: place for place, index in enumerate(tuning.order, 1)}
        props = device.properties
        where = f"{props.backend}:{props.index} {props.name}"
        entry = {"started_at": self.started_at, "finished_at": now(), "wall_s": tuning.wall_s,
                 "candidates": len(tuning.results), "failed": len(tuning.failed),
                 "best": tuning.best.label if tuning.order else None}

        def rows(number: int) -> list[Row]:
            return [self._row(number, i, r, tags[i], rank.get(i), where) for i, r in enumerate(tuning.results)]

        try:
            self.store.add_device(device_record(device))
            number = self.store.record_tuning(rows, entry)
            self.store.finish_environment(read_here=True)
        except OSError as e:  # what was measured, said where it is not recorded
            found = f"best {tuning.best.label} at {tuning.best.median_us:.3f} µs" if tuning.order else \
                "no candidate ran"
            raise OSError(e.errno, f"{e.strerror}; the tuning itself finished ({found})", e.filename) from None
        return number

    def _row(self, number: int, index: int, r: CandidateResult, tags: dict[str, Any], rank: int | None,
             device: str) -> Row:
        candidate = {"tuning": number, "label": r.label, "rank": rank, "note": r.note, "measure_s": r.measure_s,
                     "sustained": _measured(r.sustained), "tags": tags}
        # Unique in the database: a tuning's number and the candidate's place in it.
        candidate_id = hashlib.sha256(json.dumps([number, index, r.label]).encode()).hexdigest()
        if r.result is None:
            return Row(candidate_id, candidate, FAILED, 1, self.started_at, device, reason=_reason(r.error),
                       error=r.error, kernel=r.label)
        busy_s = r.result.wall_s + (0.0 if r.sustained is None else r.sustained.wall_s)
        return Row(candidate_id, candidate, OK, 1, self.started_at, device, _measured(r.result), busy_s=busy_s,
                   kernel=r.result.kernel)

    def close(self) -> None:
        self.store.close()


def _measured(result: Any) -> dict[str, Any] | None:
    """A Result as a sweep records it: to_dict() without the samples (None for none)."""
    if result is None:
        return None
    record = result.to_dict()
    del record["times_us"]
    return record


def _reason(error: str | None) -> str:
    """A failure's reason column: the class of the error that stopped it (the engine writes every error as
    "KernelFault: ..."), else "error"."""
    kind = (error or "").partition(": ")[0]
    return kind if kind.isidentifier() else "error"
