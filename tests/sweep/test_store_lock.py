"""The writer's lock: one sweep at a time writes a results database, any number read it meanwhile, and the
lock ends with its process however that ends."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import pyhipbench as hb
from pyhipbench import BenchError, Store, candidates_from_json, sweep
from pyhipbench._results.lock import WriterLock, lock_path
from pyhipbench._results.store import Row, now

from codegen_helpers import require_toolchain
from fakes.conftest_fixtures import fake_hip_library, require_hip_python  # noqa: F401 (fixture)
from sweep_helpers import space, sweep_environment

require_hip_python()


@pytest.fixture
def fake_gpus(fake_hip_library, monkeypatch):  # noqa: F811 (the fixture imported above)
    require_toolchain("gfx942")
    for name, value in sweep_environment(fake_hip_library).items():
        monkeypatch.setenv(name, value)
    return fake_hip_library


def _refusal(db: Path, pid: int) -> str:
    return (f"{db}: another sweep is writing this database (pid {pid}); wait for it to end, or write to another "
            "database (--out, db=)")


def _cli(*args: str, env: dict[str, str], **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "pyhipbench.cli", *args], env={**os.environ, **env},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def _rows(db: Path) -> int:
    try:
        with sqlite3.connect(db) as raw:
            return raw.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def test_a_second_sweep_on_a_database_being_written_is_refused_and_readers_go_on(fake_gpus, tmp_path):
    path, db = tmp_path / "space.json", tmp_path / "r.db"
    # Three quick candidates, then one that hangs: the first sweep is still writing for a minute.
    path.write_text(json.dumps(space(3, bad=("hang",))))
    env = sweep_environment(fake_gpus)
    first = _cli("sweep", str(path), "--out", str(db), "--timeout-floor", "60", env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not (db.exists() and _rows(db) >= 3):
            assert time.monotonic() < deadline, "the first sweep recorded nothing"
            time.sleep(0.02)
        for resume in ([], ["--resume"]):  # refused before anything else: not "already holds 3 results"
            second = _cli("sweep", str(path), "--out", str(db), *resume, env=env)
            out, err = second.communicate(timeout=60)
            assert (second.returncode, out, err) == (2, "", f"pyhipbench sweep: {_refusal(db, first.pid)}\n")
        # Reading while the first writes: compare, load_results, export_best over a Store opened to read.
        compared = _cli("compare", str(db), str(db), env=env)
        out, err = compared.communicate(timeout=60)
        assert compared.returncode == 0 and out.splitlines()[2].endswith("(from the CIs: no samples)"), err
        assert len(hb.load_results(db)) == 3
        reader = Store(db, resume=True)
        try:
            assert hb.export_best(reader, tmp_path / "best.md", 2).count("\n| copy |") == 2
        finally:
            reader.close()
        assert first.poll() is None  # all of it while the first was writing
    finally:
        os.killpg(first.pid, signal.SIGKILL)  # the OS drops the lock with its process
        first.communicate(timeout=30)
    more = tmp_path / "more.json"
    more.write_text(json.dumps(space(6, bad=())))  # three more copies (grids 4-6) into the same database
    resumed = _cli("sweep", str(more), "--out", str(db), "--resume", env=env)
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    assert out.startswith(f"3 measured, 0 failed, 3 already in {db}") and _rows(db) == 6


def test_the_lock_is_held_from_open_to_close_and_names_its_holder(tmp_path):
    db = tmp_path / "r.db"
    writer = Store(db, lock=True)
    assert lock_path(db).read_text() == f"{os.getpid()}\n"
    with pytest.raises(BenchError) as refused:
        Store(db, resume=True, lock=True)  # even in the same process: one writer
    assert str(refused.value) == _refusal(db, os.getpid())
    writer.record(Row("c1", {"kernel": "copy"}, "failed", 1, now(), reason="invalid", error="BenchError: x"))
    reader = Store(db, resume=True)  # readers take no lock
    assert reader.done_ids() == {"c1"}
    reader.close()
    writer.close()
    again = Store(db, resume=True, lock=True)  # released by close
    again.close()


def test_a_sweep_refuses_a_locked_database_before_opening_it_or_a_worker(tmp_path):
    db = tmp_path / "r.db"
    held = WriterLock(db)
    try:
        with pytest.raises(BenchError, match="another sweep is writing this database"):
            sweep(candidates_from_json(space(1, bad=())), db)
        assert not db.exists()  # not even created
    finally:
        held.release()


def test_the_lock_ends_with_its_process_however_it_ends(tmp_path):
    db = tmp_path / "r.db"
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        from pyhipbench._results.lock import WriterLock
        lock = WriterLock(__import__("pathlib").Path({str(db)!r}))
        print("locked", flush=True)
        time.sleep(600)
        """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "locked\n"
        with pytest.raises(BenchError, match=rf"\(pid {holder.pid}\)"):
            WriterLock(db)
    finally:
        holder.kill()  # kill -9: no code of the holder's runs
        holder.wait()
    WriterLock(db).release()
    assert lock_path(db).exists()  # a file with nothing to clean up: unlocked, it means nothing


def test_a_database_in_a_missing_folder_is_the_databases_error_not_the_locks(tmp_path):
    with pytest.raises(BenchError, match=r"missing/r.db: cannot open it as a results database"):
        Store(tmp_path / "missing" / "r.db", lock=True)
