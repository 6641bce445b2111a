"""Sweep databases of another layout or version, and damaged records, refused in one line naming the file."""
from __future__ import annotations

import sqlite3

import pytest

from pyhipbench._results.store import Store, read_database
from pyhipbench.errors import BenchError


def old_layout(path, version="1", environment='{"devices": []}'):
    """A results table lacking the result column, as an earlier layout had it."""
    db = sqlite3.connect(path)
    db.executescript("CREATE TABLE results (candidate_id TEXT NOT NULL UNIQUE, candidate TEXT NOT NULL, "
                     "kernel TEXT NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL, "
                     "started_at TEXT NOT NULL, finished_at TEXT NOT NULL);"
                     "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);")
    db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (version,))
    db.execute("INSERT INTO meta VALUES ('environment', ?)", (environment,))
    db.commit()
    db.close()
    return path


def test_an_older_layout_is_refused_by_resume_and_by_readers(tmp_path):
    path = old_layout(tmp_path / "old.db")
    message = r"old.db: a results database of an older layout \(its results table lacks .*result\)"
    with pytest.raises(BenchError, match=message):
        Store(path, resume=True)
    with pytest.raises(BenchError, match=message):
        read_database(path)


def with_meta(path, key: str, value: str):
    """A new sweep database at `path` whose meta entry `key` is then set to `value`."""
    Store(path).close()
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value = ? WHERE key = ?", (value, key))
    db.commit()
    db.close()
    return path


def test_a_newer_schema_version_is_refused_by_readers_too(tmp_path):
    path = with_meta(tmp_path / "new.db", "schema_version", "2")
    with pytest.raises(BenchError, match=r"new.db: results schema version 2; this pyhipbench reads version 1"):
        read_database(path)
    with pytest.raises(BenchError, match=r"results schema version 2"):
        Store(path, resume=True)


def test_a_recorded_environment_that_is_not_json_is_named(tmp_path):
    path = with_meta(tmp_path / "r.db", "environment", "{not json")
    with pytest.raises(BenchError, match=r"r.db: its recorded environment is '\{not json', not JSON"):
        Store(path, resume=True)
