"""A sweep's or tunings' results in SQLite (the standard library's sqlite3), one row per candidate.

WAL mode, each result its own committed transaction: `kill -9` of the sweep
at any moment loses only the candidates still running. `synchronous=NORMAL`:
a commit is in the WAL file before `record` returns, so it survives the
process; only a crash of the machine itself can lose the last few (FULL would
fsync each, 6 ms a candidate here, which a fast sweep's one writer cannot afford).
`candidate_id` is UNIQUE: recording a candidate twice is an error, and a
resumed sweep skips the ids already here (`done_ids`). A sweep opens its
store with `lock=True`: one sweep at a time writes a database (lock.py),
while any number read it.

A write that fails (a full disk, a file made read-only, an I/O error) is an
OSError naming the database (its errno ENOSPC, EACCES, EIO, ...): the rows
committed before it are intact, and a resumed sweep continues from them.

Rows hold the candidate (JSON), status ("ok" or "failed"), the reason and
error of a failure, the device, timer, cache state, median and its 95 % CI
(µs), stop reason, attempts (how many times a worker ran it: 0 for code that
did not compile), timestamps (UTC, ISO 8601), the GPU busy time
(s) and the whole result (Result.to_dict() without the samples, JSON), which
`load_results` gives back in the form report.py renders and compares.

A tuning's database (`pyhipbench.tune(..., record=PATH)`, opened with
`appending=True`) holds the same rows, a tuning's all committed in one
transaction with its entry in meta "tunings" (`record_tuning`): each tuning
adds its candidates (none is measured again: a tuning's pick comes from its
own measurements), so the database holds every tuning recorded into it,
whole. A tuning takes no writer's lock: SQLite orders the transactions of
two writers. A sweep's database and a tuning's are told apart by that
entry, and each writer refuses the other's.
"""
from __future__ import annotations

import errno
import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .._textfile import decode, parse_json
from .._values import show
from ..errors import BenchError
from .environment import environment, finish
from .lock import WriterLock
from .report import render

__all__ = ["Store", "SCHEMA_VERSION", "SQLITE_MAGIC", "is_results_db", "refuse_non_database", "load_results",
           "read_database", "load_failures", "export_best"]

SCHEMA_VERSION = 1
SQLITE_MAGIC = b"SQLite format 3\x00"
OK, FAILED = "ok", "failed"

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS results (
    candidate_id TEXT NOT NULL UNIQUE,
    candidate    TEXT NOT NULL,
    kernel       TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('{OK}', '{FAILED}')),
    reason       TEXT,
    error        TEXT,
    device       TEXT,
    timer        TEXT,
    cache_state  TEXT,
    median_us    REAL,
    ci_low_us    REAL,
    ci_high_us   REAL,
    stop_reason  TEXT,
    attempts     INTEGER NOT NULL,
    started_at   TEXT NOT NULL,
    finished_at  TEXT NOT NULL,
    busy_s       REAL,
    result       TEXT
);
CREATE INDEX IF NOT EXISTS results_by_median ON results (status, median_us);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def now() -> str:
    """The time, UTC, ISO 8601 with microseconds."""
    return datetime.now(timezone.utc).isoformat()


def is_results_db(path: Path) -> bool:
    """Whether `path` is an SQLite file (by its first 16 bytes)."""
    try:
        with open(path, "rb") as f:
            return f.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


def refuse_non_database(path: Path, option: str = "") -> None:
    """BenchError if `path` holds something other than an SQLite database (an empty file is new)."""
    if path.exists() and path.stat().st_size > 0 and not is_results_db(path):
        raise BenchError(f"{option}{path} exists and is not an SQLite database; expected a sweep's results "
                         "database or a new file")


@dataclass(frozen=True)
class Row:
    """One recorded candidate, as the scheduler hands it to the store."""
    candidate_id: str
    candidate: dict[str, Any]
    status: str
    attempts: int
    started_at: str
    device: str | None = None
    result: dict[str, Any] | None = None
    reason: str | None = None
    error: str | None = None
    busy_s: float | None = None
    kernel: str | None = None  # the kernel column (a chain's kernels, "a -> b"); None: the candidate's kernel

    @property
    def kernel_name(self) -> str:
        return self.kernel if self.kernel is not None else self.candidate["kernel"]


# SQLite's primary result codes for a write that failed, as the errno of the OSError raised.
_ERRNO = {13: errno.ENOSPC, 8: errno.EACCES, 10: errno.EIO, 14: errno.EIO, 5: errno.EBUSY, 6: errno.EBUSY,
          11: errno.EIO, 26: errno.EIO}  # FULL, READONLY, IOERR, CANTOPEN, BUSY, LOCKED, CORRUPT, NOTADB
_STORAGE_FAILURES = {13, 10}  # FULL, IOERR: the disk's, not the file's; at open too an OSError, not bad input


def _code(error: sqlite3.Error) -> int | None:
    """SQLite's primary result code of `error` (Python 3.11 names it; None before)."""
    code = getattr(error, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF


class Store:
    """The results database at `path`. `resume=False` refuses one that already holds results.
    `lock`: hold the writer's lock (lock.py) until `close()`, refusing a database another sweep writes.
    `appending`: tunings' (record_tuning), each adding to what the database holds; a sweep's database
    refused. Without it a tuning's database is refused."""

    def __init__(self, path: Path, *, resume: bool = False, lock: bool = False, appending: bool = False) -> None:
        self.path = Path(path)
        self.appending = appending
        refuse_non_database(self.path)
        self.lock = WriterLock(self.path) if lock else None  # before the database: a sweep writing it is named
        try:
            try:
                self.db = sqlite3.connect(self.path, isolation_level=None)  # autocommit; each insert commits
            except sqlite3.Error as e:
                raise BenchError(f"{self.path}: cannot open it as a results database ({e})") from None
            try:
                self._open(resume)
            except BaseException:
                self.db.close()
                raise
        except BaseException:
            self._unlock()
            raise

    def _failure(self, what: str, error: sqlite3.Error) -> OSError:
        """The OSError for a database operation that failed (`what`: "could not record ..."), naming the file
        and saying what is intact."""
        held = f"the {self.committed} results committed before are" if self.committed != 1 else \
            "the 1 result committed before is"
        then = "" if self.appending else ", and a resumed sweep (--resume, resume=True) continues from there"
        return OSError(_ERRNO.get(_code(error) or 0, errno.EIO), f"{what}: {error}; {held} intact{then}",
                       str(self.path))

    def _open(self, resume: bool) -> None:
        try:
            tables = {row[0] for row in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            # Another program's database: adding tables to it would spoil it. (Either of ours marks a sweep's:
            # a kill -9 can fall between the creation of the two.)
            if tables and not tables & {"results", "meta"}:
                raise BenchError(f"{self.path} is an SQLite database of something else (tables "
                                 f"{', '.join(sorted(tables))}); expected a sweep's results database or a new file")
            version = self.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() \
                if "meta" in tables else None
            _check_layout(self.db, self.path, None if version is None else version[0])  # before adding to it
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(_SCHEMA)
            if version is None:
                self.db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            if self._meta("environment") is None:  # a new database, or one written before it was recorded
                self._set_meta("environment", environment([]))
            held = self.count()
            tunings = self._meta("tunings")
        except sqlite3.Error as e:  # a damaged file behind the SQLite magic, a locked or read-only one
            if _code(e) in _STORAGE_FAILURES:  # a full disk or an I/O error: not the file's fault
                raise OSError(_ERRNO[_code(e) or 0], f"could not open it as a results database: {e}",
                              str(self.path)) from None
            raise BenchError(f"{self.path}: not a usable sweep results database ({e}); expected a sweep's "
                             "results database or a new file") from None
        if tunings is not None and not isinstance(tunings, list):
            raise BenchError(f"{self.path}: its recorded tunings are {show(tunings)}; expected a list, as tune's "
                             "record= writes it")
        if self.appending and held and tunings is None:
            counted = f"{held} candidate{'' if held == 1 else 's'}"
            raise BenchError(f"{self.path} holds the results of a sweep ({counted}); expected a tuning's database "
                             "(written by tune's record=) or a new file")
        if not self.appending and tunings is not None:
            raise BenchError(f"{self.path} holds {len(tunings)} tuning{'' if len(tunings) == 1 else 's'} (written by "
                             "tune's record=); expected a sweep's results database or a new file")
        if held and not resume and not self.appending:
            raise BenchError(f"{self.path} already holds {held} results; pass --resume (resume=True) to "
                             "continue that sweep, or write to a new file")
        self.committed = held  # rows in the database: those it held, then each one recorded

    def _meta(self, key: str) -> Any:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            return json.loads(row[0])
        except (ValueError, TypeError):
            raise BenchError(f"{self.path}: its recorded {key} is {show(row[0])}, not JSON; expected a sweep's "
                             "results database (or a new file)") from None

    def _set_meta(self, key: str, value: Any) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value)))
        self.db.commit()

    def environment(self) -> dict[str, Any]:
        """Where the sweep ran (environment.py): its start's package, host and time, and each device a
        worker opened, as the worker read it; a resumed sweep's devices added."""
        return self._meta("environment")

    def add_device(self, record: dict[str, Any]) -> None:
        """A worker's device (environment.device_record), unless already recorded (by backend, index, bus)."""
        env = self.environment()
        same = ("backend", "index", "pci_bus_id")
        if any(all(d.get(k) == record.get(k) for k in same) for d in env["devices"]):
            return
        env["devices"].append(record)
        try:
            self._set_meta("environment", env)
        except sqlite3.Error as e:
            raise self._failure("could not record a device", e) from None

    def finish_environment(self, read_here: bool) -> None:
        """The devices' temperatures as the sweep ends: read here by NVML when `read_here` (the workers'
        GPUs are this machine's), else recorded as not read (a Ray cluster's are on other hosts)."""
        env = self.environment()
        if read_here:
            env = finish(env)
        else:
            for record in env["devices"]:
                record["unreadable"]["temperature_end_c"] = "not read: the GPU is on a Ray cluster's host"
        try:
            self._set_meta("environment", env)
        except sqlite3.Error as e:
            raise self._failure("could not record the devices' end temperatures", e) from None

    def count(self, status: str | None = None) -> int:
        if status is None:
            return self.db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
        return self.db.execute("SELECT COUNT(*) FROM results WHERE status = ?", (status,)).fetchone()[0]

    def done_ids(self) -> set[str]:
        """Ids of the candidates recorded, ok or failed: a resumed sweep runs the others."""
        return {row[0] for row in self.db.execute("SELECT candidate_id FROM results")}

    def lowest_ci_high(self) -> float | None:
        """The lowest upper bound of a measured median's 95 % CI, µs (racing's bound; None: no result yet)."""
        return self.db.execute("SELECT MIN(ci_high_us) FROM results WHERE status = ? AND ci_high_us > 0",
                               (OK,)).fetchone()[0]

    def record(self, row: Row) -> None:
        """Commits one candidate; BenchError if it is already recorded (the UNIQUE id), OSError naming the
        database if the write fails (see the module docstring)."""
        try:
            self._insert(row)
        except sqlite3.IntegrityError:
            raise BenchError(f"candidate {row.candidate_id} is already recorded in {self.path}") from None
        except sqlite3.Error as e:
            raise self._failure(f"could not record candidate {row.candidate_id[:12]} ({row.kernel_name})",
                              e) from None
        self.committed += 1

    def _insert(self, row: Row) -> None:
        r = row.result or {}
        stats = r.get("stats_us", {})
        self.db.execute(
            "INSERT INTO results (candidate_id, candidate, kernel, status, reason, error, device, timer, "
            "cache_state, median_us, ci_low_us, ci_high_us, stop_reason, attempts, started_at, finished_at, "
            "busy_s, result) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (row.candidate_id, json.dumps(row.candidate, sort_keys=True), row.kernel_name, row.status,
             row.reason, row.error, row.device, r.get("timer"), r.get("cache_state"), stats.get("median"),
             stats.get("ci_low"), stats.get("ci_high"), r.get("stop_reason"), row.attempts, row.started_at,
             now(), row.busy_s, json.dumps(r) if row.result is not None else None))

    def tunings(self) -> list[dict[str, Any]]:
        """The tunings recorded (record_tuning's entries), in the order recorded; none in a sweep's database."""
        return self._meta("tunings") or []

    def record_tuning(self, rows_of: Callable[[int], list[Row]], entry: dict[str, Any]) -> int:
        """Commits a tuning, numbered after those recorded: `rows_of(number)`, its candidates' rows, and
        `entry` (with "tuning": the number) added to meta "tunings", in one transaction (all or nothing; a
        writer recording meanwhile waits, or takes the number before). Returns the number. BenchError if the
        database has come to hold a sweep's results meanwhile, or a row's id is recorded already; OSError
        naming the database if the write fails."""
        rows: list[Row] = []
        try:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                tunings = self.tunings()
                if not tunings and self.count():
                    raise BenchError(f"{self.path}: a sweep has recorded results there meanwhile; expected a "
                                     "tuning's database (written by tune's record=) or a new file")
                number = len(tunings) + 1
                rows = rows_of(number)
                for row in rows:
                    self._insert(row)
                self.db.execute("INSERT OR REPLACE INTO meta VALUES ('tunings', ?)",
                                (json.dumps([*tunings, {"tuning": number, **entry}]),))
                self.db.execute("COMMIT")
            except BaseException:
                if self.db.in_transaction:  # SQLite ends it itself on some errors (a full disk)
                    self.db.execute("ROLLBACK")
                raise
        except sqlite3.IntegrityError:
            raise BenchError(f"{self.path}: a candidate of this tuning is already recorded there") from None
        except sqlite3.Error as e:
            raise self._failure(f"could not record a tuning of {len(rows)} candidates", e) from None
        self.committed += len(rows)
        return number

    def best(self, count: int | None = None) -> list[dict[str, Any]]:
        """The measured candidates, fastest median first (`count` of them, or all): result dicts
        with the candidate's id and tags added."""
        query = "SELECT candidate_id, candidate, result FROM results WHERE status = ? ORDER BY median_us, candidate_id"
        rows = self.db.execute(query + (" LIMIT ?" if count is not None else ""),
                               (OK,) if count is None else (OK, count)).fetchall()
        return [{**json.loads(result), "candidate_id": cid, "tags": json.loads(candidate)["tags"]}
                for cid, candidate, result in rows]

    def failures(self) -> list[tuple[str, str, str, str]]:
        """(candidate id, kernel, reason, error) of each failed candidate."""
        return self.db.execute("SELECT candidate_id, kernel, reason, error FROM results WHERE status = ? "
                               "ORDER BY finished_at", (FAILED,)).fetchall()

    def close(self) -> None:
        try:
            self.db.close()
        finally:
            self._unlock()

    def _unlock(self) -> None:
        if self.lock is not None:
            self.lock.release()


_COLUMNS = tuple(line.split()[0] for line in _SCHEMA.split("CREATE TABLE IF NOT EXISTS results (")[1]
                 .split(");")[0].strip().splitlines())


def _check_layout(db: sqlite3.Connection, path: Path, version: object) -> None:
    """BenchError for a database of another schema version (a newer pyhipbench's), or of an older layout
    whose results table lacks columns this version reads."""
    if isinstance(version, bytes):
        version = version.decode("utf-8", "replace")
    if version is not None and version != str(SCHEMA_VERSION):
        raise BenchError(f"{path}: results schema version {version}; this pyhipbench reads version "
                         f"{SCHEMA_VERSION}")
    columns = {row[1].decode() if isinstance(row[1], bytes) else row[1]
               for row in db.execute("PRAGMA table_info(results)")}
    missing = [c for c in _COLUMNS if c not in columns]
    if columns and missing:
        raise BenchError(f"{path}: a results database of an older layout (its results table lacks "
                         f"{', '.join(missing)}); this pyhipbench reads schema version {SCHEMA_VERSION}: "
                         "sweep into a new file")


def load_results(path: Path) -> list[dict[str, Any]]:
    """The measured results of a sweep database, fastest first, as report.py reads them; BenchError
    naming the candidate whose result is not UTF-8 JSON (report.check_results checks the fields)."""
    return read_database(path)[0]


def read_database(path: Path) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """`load_results`, and the environment the sweep recorded (None in a database written before it was)."""
    try:
        # As a URI, percent-encoded: a '#' or '?' in the name would end the path (and drop mode=ro).
        db = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
        db.text_factory = bytes  # decoded here, so text that is not UTF-8 is named like a file's
        try:
            version = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            _check_layout(db, path, None if version is None else version[0])
            rows = db.execute("SELECT candidate_id, candidate, result FROM results WHERE status = ? "
                              "ORDER BY median_us", (OK,)).fetchall()
            env = db.execute("SELECT value FROM meta WHERE key = 'environment'").fetchone()
        finally:
            db.close()
    except sqlite3.Error as e:
        raise BenchError(f"{path}: not a sweep results database ({e})") from None
    results = [_with_candidate(path, candidate_id, candidate, _result(path, candidate_id, result))
               for candidate_id, candidate, result in rows]
    if env is None:
        return results, None
    name, expected = f"{path}: the sweep's environment", "the JSON of an environment"
    recorded = parse_json(decode(env[0], name, expected), name, expected)
    if not isinstance(recorded, dict) or not isinstance(recorded.get("devices"), list):
        raise BenchError(f"{name} is {show(recorded)}; expected {expected} (an object with devices)")
    return results, recorded


def _with_candidate(path: Path, candidate_id: bytes, candidate: bytes, result: Any) -> Any:
    """`result` with its candidate's id and tags, as export_best gives them, and in a tuning's database its
    `tuning` and `rank` (1: the winner, by the tie round where there was one)."""
    if not isinstance(result, dict):
        return result  # report.check_results names what it is
    name = f"{path}: candidate {candidate_id.decode('utf-8', 'replace')}"
    fields = parse_json(decode(candidate, name, "the JSON of a candidate"), name, "the JSON of a candidate")
    fields = fields if isinstance(fields, dict) else {}
    tuned = {key: fields.get(key) for key in ("tuning", "rank")} if "tuning" in fields else {}
    return {**result, "candidate_id": candidate_id.decode("utf-8", "replace"), "tags": fields.get("tags"), **tuned}


def load_failures(path: Path) -> list[dict[str, Any]]:
    """The failed candidates of a sweep database, in the order they failed: candidate_id, kernel, reason,
    error and tags."""
    try:
        db = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
        try:
            rows = db.execute("SELECT candidate_id, candidate, kernel, reason, error FROM results WHERE status = ? "
                              "ORDER BY finished_at", (FAILED,)).fetchall()
        finally:
            db.close()
    except sqlite3.Error as e:
        raise BenchError(f"{path}: not a sweep results database ({e})") from None
    failures = []
    for candidate_id, candidate, kernel, reason, error in rows:
        try:
            tags = json.loads(candidate).get("tags")
        except (ValueError, AttributeError):
            tags = None
        failures.append({"candidate_id": candidate_id, "kernel": kernel, "reason": reason, "error": error,
                         "tags": tags})
    return failures


def _result(path: Path, candidate_id: object, result: object) -> Any:
    """One row's result, parsed (read_text's and parse_json's checks, naming the candidate)."""
    shown = candidate_id.decode("utf-8", "replace") if isinstance(candidate_id, bytes) else candidate_id
    name, expected = f"{path}: the result of candidate {shown}", "the JSON of a result"
    if not isinstance(result, bytes):  # NULL, or a number or blob SQLite kept as such
        raise BenchError(f"{name} is {'NULL' if result is None else show(result)}; expected {expected}")
    return parse_json(decode(result, name, expected), name, expected)


def export_best(store: Store, path: Path, count: int | None = None) -> str:
    """The `count` fastest candidates (all when None) as JSON, CSV or markdown by `path`'s suffix
    (report.render's formats); writes nothing, returns the text."""
    return render(path, store.best(count), store.environment())
