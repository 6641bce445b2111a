"""Interrupts and the store: Ctrl-C and a failing database write stop a sweep with one line, its processes
ended and every committed result kept, and a resumed sweep continues from there."""
from __future__ import annotations

import errno
import json
import multiprocessing
import os
import re
import shlex
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pyhipbench import (
    Candidate,
    CodeObjectSource,
    CompileTarget,
    Store,
    SweepInterrupted,
    SweepSummary,
    candidates_from_json,
    sweep,
)
from pyhipbench._sweep import recorder, scheduler
from pyhipbench._sweep.interrupts import InterruptGuard
from pyhipbench._sweep.worker import DeviceFacts, Outcome

from codegen_helpers import require_toolchain
from fakes.conftest_fixtures import fake_hip_library, require_hip_python  # noqa: F401 (fixture)
from sweep_helpers import ARGS, space, sweep_environment

require_hip_python()
REPO = Path(__file__).resolve().parents[2]
COPY_PTX = REPO / "pyhipbench" / "kernels" / "copy.ptx"
SLOW = {"cache": "warm", "iterations": 20000}  # each candidate ~20000 fake launches: a sweep lasts seconds


@pytest.fixture
def fake_gpus(fake_hip_library, monkeypatch):  # noqa: F811 (the fixture imported above)
    require_toolchain("gfx942")
    for name, value in sweep_environment(fake_hip_library).items():
        monkeypatch.setenv(name, value)
    return fake_hip_library


def _cli(*args: str, env: dict[str, str], python: tuple[str, ...] = ("-m", "pyhipbench.cli")) -> subprocess.Popen:
    """`pyhipbench ARGS` in a session of its own: its process group is the sweep and what it starts."""
    return subprocess.Popen([sys.executable, *python, *args], env={**os.environ, **env}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def _rows(db: Path) -> int:
    try:
        with sqlite3.connect(db) as raw:
            return raw.execute("SELECT COUNT(DISTINCT candidate_id) FROM results").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return 0


def _wait_for_rows(db: Path, count: int, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not (db.exists() and _rows(db) >= count):
        assert time.monotonic() < deadline, f"{db} never held {count} results"
        time.sleep(0.02)


def _group(pgid: int) -> set[int]:
    """The live (not zombie) processes of process group `pgid`."""
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            found.add(int(entry.name))
    return found


def _wait_gone(pgid: int, timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while _group(pgid):
        assert time.monotonic() < deadline, f"processes left running: {sorted(_group(pgid))}"
        time.sleep(0.05)


def _resumed(command: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """Runs the command a message printed (`pyhipbench ...`) as this checkout's `python -m pyhipbench.cli`."""
    words = shlex.split(command)
    assert words[0] == "pyhipbench"
    return subprocess.run([sys.executable, "-m", "pyhipbench.cli", *words[1:]], env={**os.environ, **env},
                          capture_output=True, text=True, timeout=120)


# -- Ctrl-C ------------------------------------------------------------------------------------
def test_ctrl_c_stops_a_cli_sweep_with_one_line_saying_what_is_kept_and_how_to_resume(fake_gpus, tmp_path):
    path, db = tmp_path / "space.json", tmp_path / "r.db"
    path.write_text(json.dumps(space(200, bad=(), bench=SLOW)))
    env = sweep_environment(fake_gpus)
    running = _cli("sweep", str(path), "--out", str(db), "--gpus", "0,1", "--export", str(tmp_path / "best.md"),
                   env=env)
    _wait_for_rows(db, 5)
    assert len(_group(running.pid)) >= 4  # the sweep, a worker and a spare per GPU, the compilers
    os.killpg(running.pid, signal.SIGINT)  # a terminal's Ctrl-C: every process of the group gets it
    out, err = running.communicate(timeout=60)
    held = _rows(db)
    assert (running.returncode, out) == (130, "")
    command = (f"pyhipbench sweep {path} --out {db} --resume --gpus 0,1 --export {tmp_path / 'best.md'}")
    assert err == (f"pyhipbench sweep: interrupted; {db} holds {held} results, each committed as it finished "
                   f"(none is lost); resume with: {command}\n")  # no worker printed a traceback either
    assert 5 <= held < 200
    _wait_gone(running.pid)  # no worker, spare or compiler outlives the sweep
    resumed = _resumed(err.split("resume with: ")[1].strip(), env)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.startswith(f"{200 - held} measured, 0 failed, {held} already in {db};")
    assert _rows(db) == 200 and (tmp_path / "best.md").exists()


def test_sweep_raises_sweep_interrupted_once_its_processes_are_ended(fake_gpus, tmp_path, monkeypatch):
    measured = recorder.Recorder.measured

    def measured_then_ctrl_c(self, done, outcome, device):  # Ctrl-C at a known point of the sweep
        measured(self, done, outcome, device)
        if self.summary.measured == 3:
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(recorder.Recorder, "measured", measured_then_ctrl_c)
    candidates, db = candidates_from_json(space(30, bad=())), tmp_path / "r.db"
    with pytest.raises(SweepInterrupted) as caught:
        sweep(candidates, db, progress=False)
    interrupted = caught.value
    # A KeyboardInterrupt: `except Exception` and `except hb.Error` in a tuner let it through.
    assert isinstance(interrupted, KeyboardInterrupt) and not isinstance(interrupted, Exception)
    held = _rows(db)
    assert interrupted.recorded == held >= 3 and interrupted.database == str(db)
    assert isinstance(interrupted.summary, SweepSummary) and interrupted.summary.measured == held
    assert str(interrupted) == (f"interrupted: {db} holds {held} results, each committed as it finished (none is "
                                "lost); sweep(..., resume=True) continues from there")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the caller's handler is back
    deadline = time.monotonic() + 10
    while multiprocessing.active_children():  # workers, spares and compilers: killed, their exits awaited
        assert time.monotonic() < deadline, multiprocessing.active_children()
        time.sleep(0.05)
    monkeypatch.setattr(recorder.Recorder, "measured", measured)
    summary = sweep(candidates, db, resume=True, progress=False)
    assert (summary.measured, summary.already_recorded, _rows(db)) == (30 - held, held, 30)


class _InstantExecutor:
    """One slot whose worker measures each task at once, in this process (no processes to end)."""

    def __init__(self) -> None:
        self.due: list = []
        self.closed = False

    def initial_slots(self):
        return [0]

    def more_slots(self, facts):
        return []

    def start(self, slot):
        self.due.append((slot, "ready", DeviceFacts("hip", slot, "Instant", CompileTarget("gfx942"), 1)))

    def submit(self, slot, task):
        result = {"kernel": task.kernel, "stats_us": {"median": 1.0, "ci_low": 1.0, "ci_high": 1.0}}
        self.due.append((slot, "outcome", Outcome(task.candidate_id, result, modules_held=frozenset({task.code_key}))))

    def kill(self, slot):
        pass

    def events(self, timeout_s):
        due, self.due = self.due, []
        return due

    def close(self):
        self.closed = True


def _candidates(count: int) -> list[Candidate]:
    copy = CodeObjectSource.from_file(COPY_PTX)
    return [Candidate(copy, "copy", 1, 64, ARGS, tags={"i": i}) for i in range(count)]


def test_a_sigint_handler_of_the_callers_own_stays_and_what_it_raises_ends_the_sweep(tmp_path, monkeypatch):
    calls = []

    def handler(signum, frame):
        calls.append(signum)
        raise KeyboardInterrupt

    measured = recorder.Recorder.measured

    def measured_then_ctrl_c(self, done, outcome, device):
        measured(self, done, outcome, device)
        if self.summary.measured == 2:
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(recorder.Recorder, "measured", measured_then_ctrl_c)
    previous = signal.signal(signal.SIGINT, handler)
    try:
        executor, store = _InstantExecutor(), Store(tmp_path / "r.db")
        with pytest.raises(SweepInterrupted) as caught:
            scheduler.run(_candidates(10), store, executor)
        assert signal.getsignal(signal.SIGINT) is handler and calls == [signal.SIGINT]
    finally:
        signal.signal(signal.SIGINT, previous)
    assert executor.closed and caught.value.recorded == store.count() == 2


def test_the_first_ctrl_c_is_a_request_and_a_second_one_raises_at_once():
    with InterruptGuard() as guard:
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(100):  # the handler runs between bytecodes
            if guard.requested:
                break
            time.sleep(0.01)
        assert guard.requested  # nothing raised: the scheduler looks at its next step
        with pytest.raises(KeyboardInterrupt):
            guard.check()
        with pytest.raises(KeyboardInterrupt):  # the user insists
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(100):
                time.sleep(0.01)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_ctrl_c_in_any_command_is_one_line_and_exit_130(tmp_path, monkeypatch, capsys):
    from pyhipbench import cli
    from pyhipbench.cli import sweep as sweep_command

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_open_device", interrupted)
    assert cli.main(["info"]) == 130
    assert capsys.readouterr().err == "pyhipbench info: interrupted\n"
    path = tmp_path / "space.json"
    path.write_text(json.dumps(space(1, bad=())))
    monkeypatch.setattr(sweep_command, "load_space", interrupted)  # before the sweep starts
    assert cli.main(["sweep", str(path), "--out", str(tmp_path / "r.db"), "--race"]) == 130
    assert capsys.readouterr().err == (f"pyhipbench sweep: interrupted before the sweep started (nothing was "
                                       f"measured); run it with: pyhipbench sweep {path} --out {tmp_path / 'r.db'} "
                                       "--race\n")


# -- a database write that fails --------------------------------------------------------------------
class _FailingConnection:
    """The store's connection, failing each INSERT into results after the first `ok` as SQLite does."""

    def __init__(self, db: sqlite3.Connection, ok: int, message: str, code: int) -> None:
        self.db, self.ok, self.message, self.code = db, ok, message, code

    def execute(self, sql, *args):
        if sql.startswith("INSERT INTO results"):
            if self.ok == 0:
                error = sqlite3.OperationalError(self.message)
                error.sqlite_errorcode = self.code
                raise error
            self.ok -= 1
        return self.db.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self.db, name)


@pytest.mark.parametrize("message, code, number", [
    ("database or disk is full", 13, errno.ENOSPC),
    ("attempt to write a readonly database", 8, errno.EACCES),
    ("disk I/O error", 10, errno.EIO),
])
def test_a_failing_database_write_names_the_file_and_keeps_what_was_committed(tmp_path, message, code, number):
    db = tmp_path / "r.db"
    store, executor = Store(db), _InstantExecutor()
    store.db = _FailingConnection(store.db, 4, message, code)
    candidates = _candidates(10)
    with pytest.raises(OSError) as caught:
        scheduler.run(candidates, store, executor)
    error = caught.value
    assert (error.errno, error.filename) == (number, str(db)) and executor.closed  # the workers shut down
    assert re.fullmatch(rf"could not record candidate [0-9a-f]{{12}} \(copy\): {message}; the 4 results committed "
                        r"before are intact, and a resumed sweep \(--resume, resume=True\) continues from there",
                        error.strerror)
    store.close()
    assert _rows(db) == 4
    summary = scheduler.run(candidates, Store(db, resume=True), _InstantExecutor())
    assert (summary.measured, summary.already_recorded, _rows(db)) == (6, 4, 10)


def test_a_full_file_system_stops_the_cli_sweep_with_one_line_and_resume_finishes_it(fake_gpus, tmp_path):
    path, db = tmp_path / "space.json", tmp_path / "r.db"
    path.write_text(json.dumps(space(60, bad=())))
    env = sweep_environment(fake_gpus)
    # The sweep's files may not grow past 150 kB (RLIMIT_FSIZE; SIGXFSZ ignored, so a write fails with EFBIG):
    # the database's WAL fills after a few results.
    limited = ("-c", "import resource, runpy, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
               "resource.setrlimit(resource.RLIMIT_FSIZE, (150_000, 150_000)); sys.argv[0] = 'pyhipbench'; "
               "runpy.run_module('pyhipbench.cli', run_name='__main__')")
    full = _cli("sweep", str(path), "--out", str(db), env=env, python=limited)
    out, err = full.communicate(timeout=120)
    held = _rows(db)
    assert (full.returncode, out) == (1, ""), err
    assert re.fullmatch(rf"pyhipbench sweep: {re.escape(str(db))}: could not record candidate [0-9a-f]{{12}} "
                        rf"\(copy\): (database or disk is full|disk I/O error); the {held} results? committed before "
                        r"(are|is) intact, and a resumed sweep \(--resume, resume=True\) continues from there\n", err)
    assert 0 < held < 60
    _wait_gone(full.pid)
    resumed = _resumed(f"pyhipbench sweep {path} --out {db} --resume", env)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.startswith(f"{60 - held} measured, 0 failed, {held} already in {db};")
    assert _rows(db) == 60
