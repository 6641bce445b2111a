"""Sweeps against the fake HIP runtime: candidates, the store, faults isolated, kill -9 and resume, the CLI."""
from __future__ import annotations

import dataclasses
import io
import json
import os
import pickle
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

import pyhipbench as hb
import pyhipbench._progress
from pyhipbench import (
    BenchError,
    BenchOptions,
    Candidate,
    Code,
    CodeObjectSource,
    CompileTarget,
    IRSource,
    NoDeviceError,
    Source,
    Store,
    candidates_from_json,
    export_best,
    load_results,
    load_space,
    sweep,
    watchdog_s,
)
from pyhipbench._launch.arg_spec import parse_arg
from pyhipbench._progress import Progress
from pyhipbench._results.store import Row, now, read_database

from codegen_helpers import require_toolchain
from fakes.conftest_fixtures import fake_hip_library, require_hip_python  # noqa: F401 (fixture)
from sweep_helpers import ARGS, FAST, IR, space, sweep_environment

require_hip_python()
REPO = Path(__file__).resolve().parents[2]
COPY_PTX = REPO / "pyhipbench" / "kernels" / "copy.ptx"
EMPTY_PTX = REPO / "pyhipbench" / "kernels" / "empty.ptx"


@pytest.fixture
def fake_gpus(fake_hip_library, monkeypatch):  # noqa: F811 (the fixture imported above)
    """Two fake MI300X GPUs for the worker processes this test spawns."""
    require_toolchain("gfx942")
    for name, value in sweep_environment(fake_hip_library).items():
        monkeypatch.setenv(name, value)
    return fake_hip_library


def copy_candidate(**fields) -> Candidate:
    return Candidate(**{"source": IRSource(IR.encode()), "kernel": "copy", "grid": (4,), "block": (64,),
                        "args": ARGS, "bench": BenchOptions(**FAST), **fields})


# -- candidates ---------------------------------------------------------------------
def test_candidate_is_plain_data_with_a_stable_content_id():
    a = copy_candidate(tags={"tile": 4})
    assert a.grid == (4, 1, 1) and a.args == tuple(parse_arg(t) for t in ARGS)
    assert pickle.loads(pickle.dumps(a)) == a
    assert copy_candidate(tags={"tile": 4}).id == a.id            # same content, same id, in any run
    assert copy_candidate(tags={"tile": 8}).id != a.id
    assert copy_candidate(grid=(5,)).id != a.id
    assert Candidate(IRSource(IR.encode() + b"\n"), "copy", 4, 64, ARGS).id != Candidate(
        IRSource(IR.encode()), "copy", 4, 64, ARGS).id               # the source's content, not its name
    assert a.to_json()["source"] == {"kind": "llvm-ir", "sha256": IRSource(IR.encode()).identity()["sha256"],
                                     "icache_flush": None, "path": None}


@pytest.mark.parametrize("fields, message", [
    ({"grid": (0,)}, "grid[0]=0: out of range"),
    ({"block": (1, 2, 3, 4)}, "block=(1, 2, 3, 4): expected 1 to 3 integers"),
    ({"kernel": ""}, "kernel='': expected a kernel name"),
    ({"args": ["array:float33:4"]}, "dtype 'float33' is not one of"),
    ({"args": [3]}, "args[0]=3: expected an ArgSpec"),
    ({"shared_bytes": -1}, "shared_bytes=-1: out of range"),
    ({"tags": {"f": object}}, "not JSON-serialisable"),
    ({"timeout_s": 0}, "timeout_s=0: out of range"),
    ({"source": "k.ll"}, "source='k.ll': expected a sweep source"),
])
def test_bad_candidate_names_the_field(fields, message):
    with pytest.raises(BenchError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        copy_candidate(**fields)


@pytest.mark.parametrize("options, message", [
    ({"timer": "clock"}, "timer='clock': expected one of events, cupti, rocprofiler, batched, graph or 'auto'"),
    ({"cache": "cold"}, "cache='cold': expected one of"),
    ({"precision": 1.5}, "precision=1.5: out of range"),
    ({"iterations": 0}, "iterations=0: out of range"),
    ({"rotate": "many"}, "rotate='many': expected 'auto' or a set count >= 1"),
    ({"iters": 5}, r"bench option\(s\) 'iters' unknown; expected cache, energy, hold_s, iterations"),
])
def test_a_candidates_bad_bench_options_name_the_option(options, message):
    with pytest.raises(BenchError, match=message):
        copy_candidate(bench=options)


def test_candidate_ids_hash_the_bench_options_without_an_unset_race_bound():
    """The ids results databases hold: a candidate's bench options are hashed without slower_than_us
    unless it sets one."""
    plain = copy_candidate(bench=BenchOptions(cache="warm", max_time_s=0.05), tags={"tile": 4})
    counted = Candidate(IRSource(IR.encode()), "copy", (8, 2), (64,), ARGS, timeout_s=2.5,
                        bench=BenchOptions(iterations=100, warmup=3, rotate=4, timer="events"))
    assert (plain.id, counted.id) == ("353968036c52e1e4499b5a191a8b0086", "6cc5c66ea154c84e99eb49b825e3a304")
    assert "slower_than_us" not in plain.to_json()["bench"]
    raced = copy_candidate(bench=BenchOptions(cache="warm", max_time_s=0.05, slower_than_us=3.0), tags={"tile": 4})
    assert raced.id != plain.id and raced.to_json()["bench"]["slower_than_us"] == 3.0


def test_space_file_defaults_paths_and_errors(tmp_path):
    (tmp_path / "k").mkdir()
    (tmp_path / "k" / "copy.ptx").write_bytes(COPY_PTX.read_bytes())
    path = tmp_path / "space.json"
    path.write_text(json.dumps({
        "defaults": {"source": {"kind": "code-object", "path": "k/copy.ptx"}, "kernel": "copy", "block": [256],
                     "args": ARGS, "bench": {"cache": "warm", "max_time_s": 0.5}},
        "candidates": [{"grid": [8]}, {"grid": [16], "bench": {"timer": "events"}}]}))
    a, b = load_space(path)
    assert isinstance(a.source, CodeObjectSource) and a.source is b.source  # the file is read once
    assert a.source.path == str(tmp_path / "k" / "copy.ptx") and a.source.data == COPY_PTX.read_bytes()
    assert b.bench == BenchOptions(cache="warm", max_time_s=0.5, timer="events")  # "bench" merged key by key
    path.write_text('{"candidates": [{"kernel": "copy"}]}')
    with pytest.raises(BenchError, match=r"space.json: candidate 0: missing source, grid, block"):
        load_space(path)
    path.write_text('[{"source": {"kind": "spirv"}, "kernel": "k", "grid": 1, "block": 1}]')
    with pytest.raises(BenchError, match=r"candidate 0: source kind 'spirv' is not one of code-object, llvm-ir, "
                                         r"cuda-source, hip-source, triton"):
        load_space(path)
    path.write_text('[{"source": {"kind": "code-object", "path": "k/none.ptx"}, "kernel": "k", "grid": 1, '
                    '"block": 1}]')
    with pytest.raises(BenchError, match=r"candidate 0: code object '.*none.ptx' is not a file"):
        load_space(path)
    path.write_text('{"candidates": [], "extra": 1}')
    with pytest.raises(BenchError, match=r"unknown top-level field\(s\) 'extra'"):
        load_space(path)
    path.write_text("[{")
    with pytest.raises(BenchError, match=r"space.json: not JSON \(.* at line 1\)"):
        load_space(path)
    with pytest.raises(BenchError, match=r"candidate 0: unknown field\(s\) 'gird'"):
        candidates_from_json([{"source": {"kind": "llvm-ir", "text": IR}, "kernel": "copy", "gird": 1,
                               "grid": 1, "block": 1}])


def test_watchdog_limit_from_the_expected_time():
    assert watchdog_s(copy_candidate(bench=BenchOptions(max_time_s=0.05)), floor_s=10) == 10   # the floor
    assert watchdog_s(copy_candidate(bench=BenchOptions(max_time_s=3)), floor_s=10) == 30      # 5 x (2 x 3 s)
    assert watchdog_s(copy_candidate(timeout_s=2.5), floor_s=10) == 2.5                         # its own
    assert watchdog_s(copy_candidate(bench=BenchOptions(hold_s=60)), floor_s=10) == 70           # and its hold


# -- the store ------------------------------------------------------------------------
def _row(candidate_id: str = "c1", status: str = "failed") -> Row:
    return Row(candidate_id, {"kernel": "copy"}, status, 1, now(), reason="invalid", error="BenchError: x")


def test_store_records_each_candidate_once_and_refuses_to_overwrite(tmp_path):
    db = tmp_path / "r.db"
    store = Store(db)
    store.record(_row())
    with pytest.raises(BenchError, match=r"candidate c1 is already recorded in .*r.db"):
        store.record(_row())
    assert store.done_ids() == {"c1"}
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    store.close()
    with pytest.raises(BenchError, match=r"r.db already holds 1 results; pass --resume"):
        Store(db)
    assert Store(db, resume=True).done_ids() == {"c1"}
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    with pytest.raises(BenchError, match=r"notes.txt exists and is not an SQLite database"):
        Store(other)
    with sqlite3.connect(db) as raw, pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
        raw.execute("INSERT INTO results (candidate_id, candidate, kernel, status, attempts, started_at, "
                    "finished_at) VALUES ('c1', '{}', 'k', 'ok', 1, 'now', 'now')")


def test_store_refuses_a_damaged_or_foreign_database_naming_it(tmp_path):
    from pyhipbench._results.store import SQLITE_MAGIC
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(SQLITE_MAGIC + b"x" * 200)  # the magic, then no database
    with pytest.raises(BenchError, match=r"damaged.db: not a usable sweep results database \(file is not a "
                                         r"database\)"):
        Store(damaged)
    foreign = tmp_path / "app.db"
    with sqlite3.connect(foreign) as raw:
        raw.execute("CREATE TABLE users (name TEXT)")
    with pytest.raises(BenchError, match=r"app.db is an SQLite database of something else \(tables users\)"):
        Store(foreign)
    with sqlite3.connect(foreign) as raw:  # left as it was
        assert raw.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall() == [("users",)]
    with pytest.raises(BenchError, match=r"missing/r.db: cannot open it as a results database"):
        Store(tmp_path / "missing" / "r.db")


def test_cli_sweep_damaged_database_exits_2_naming_it(tmp_path, capsys):
    from pyhipbench._results.store import SQLITE_MAGIC
    from pyhipbench.cli import main
    (tmp_path / "space.json").write_text(json.dumps(space(1, bad=())))
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(SQLITE_MAGIC + b"x" * 200)
    assert main(["sweep", str(tmp_path / "space.json"), "--out", str(damaged), "--resume"]) == 2
    assert "damaged.db: not a usable sweep results database" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["run#1.db", "run?x.db", "run%41.db"])
def test_load_results_reads_the_file_named_whatever_its_characters(tmp_path, name):
    db = tmp_path / name
    store = Store(db)
    store.record(Row("c1", {"kernel": "copy"}, "ok", 1, now(), result={"kernel": "copy", "stats_us": {"median": 2.0}}))
    store.close()
    assert load_results(db) == [{"kernel": "copy", "stats_us": {"median": 2.0}, "candidate_id": "c1", "tags": None}]
    assert all(p.name.startswith(name) for p in tmp_path.iterdir())  # no other file opened or made (WAL's own)
    with pytest.raises(BenchError, match=r"missing#1.db: not a sweep results database \(unable to open"):
        load_results(tmp_path / "missing#1.db")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_long_measurement_shows_its_seconds_against_the_time_limit_on_a_terminal_only(monkeypatch):
    monkeypatch.setattr(pyhipbench._progress, "DELAY_S", 0.2)
    screen, log, short = Terminal(), io.StringIO(), Terminal()
    for stream, seconds in ((screen, 0.6), (log, 0.6), (short, 0.05)):
        with pyhipbench._progress.elapsed(2.0, "measuring", stream=stream):
            time.sleep(seconds)
    assert re.search(r"measuring: 0\.[2-6]/2\.0 s", screen.getvalue())
    assert log.getvalue() == short.getvalue() == ""  # not a terminal; over before the delay
    unlimited = Terminal()
    with pyhipbench._progress.elapsed(None, "measuring", stream=unlimited):  # a fixed count: no limit to show
        time.sleep(0.4)
    assert re.search(r"measuring: 0\.[2-4] s", unlimited.getvalue()) and "/" not in unlimited.getvalue()
    capped = Terminal()
    with pyhipbench._progress.elapsed(0.2, "measuring", stream=capped):  # limited to the delay: never a bar
        assert not any(t.name == "pyhipbench elapsed" for t in threading.enumerate())
        time.sleep(0.4)
    assert capped.getvalue() == ""


def test_progress_shows_failures_and_best_on_a_terminal_only(monkeypatch):
    monkeypatch.setattr(pyhipbench._progress, "DELAY_S", 0)
    screen = Terminal()
    bar = Progress(3, show=None, stream=screen)
    bar.measured(5.0, "copy {'g': 1}")
    bar.measured(4.0, "copy {'g': 2}")
    bar.failure()
    bar.close()
    last = screen.getvalue().split("\r")[-1]
    assert "3/3" in last and "failed=1" in last and "best=4.000 µs copy {'g': 2}" in last
    quiet = io.StringIO()  # not a terminal: nothing drawn
    bar = Progress(3, stream=quiet)
    bar.measured(5.0, "copy")
    bar.close()
    assert quiet.getvalue() == "" and bar.bar is None


def test_progress_of_work_shorter_than_the_delay_draws_nothing():
    screen = Terminal()
    bar = Progress(3, stream=screen)
    bar.measured(5.0, "copy")
    bar.close()
    assert screen.getvalue() == "" and bar.bar is not None


# -- sweeps on the fake GPUs ------------------------------------------------------------
def test_faults_cost_one_candidate_each(fake_gpus, tmp_path):
    candidates = candidates_from_json(space(44))
    candidates = candidates[:20] + candidates[44:] + candidates[20:44]  # the bad ones among the good: sent ahead
    candidates.append(copy_candidate(args=ARGS[:2]))  # bad input: the kernel takes three arguments
    candidates.append(Candidate(CodeObjectSource.from_file(COPY_PTX), "copy", 1, 64, ARGS))  # PTX on AMD
    candidates.append(Candidate(IRSource(b"define void @copy("), "copy", 1, 64, ARGS))  # IR that does not parse
    db = tmp_path / "r.db"
    summary = hb.sweep(candidates, db=db, timeout_floor_s=1.5, progress=False)
    assert (summary.total, summary.measured, summary.failed, summary.gpus) == (50, 44, 6, 2)
    rows = {r[0]: r[1:] for r in sqlite3.connect(db).execute(
        "SELECT kernel || ':' || json_extract(candidate, '$.args[1]') || ':' || json_extract(candidate, "
        "'$.source.kind'), status, reason, error, attempts, device, median_us FROM results "
        "WHERE status = 'failed' AND json_extract(candidate, '$.source.sha256') = ?",
        (IRSource(IR.encode()).identity()["sha256"],))}
    assert len(rows) == 4
    assert rows["fault:array:float32:4096:zeros:llvm-ir"][:2] == ("failed", "fault")
    assert "KernelFault: kernel 'fault' faulted" in rows["fault:array:float32:4096:zeros:llvm-ir"][2]
    assert rows["fault:array:float32:4096:zeros:llvm-ir"][3] == 2                       # retried once
    assert rows["hang:array:float32:4096:zeros:llvm-ir"][1:4] == (
        "timeout", "no result after 1.5 s (the watchdog's limit); the worker was killed", 2)
    assert rows["crash:array:float32:4096:zeros:llvm-ir"][1:4] == (
        "died", "the worker process was killed by SIGABRT", 2)
    invalid = rows["copy:array:float32:4096:zeros:llvm-ir"]
    assert invalid[1] == "invalid" and invalid[3] == 1 and "kernel 'copy' takes 3 argument" in invalid[2]
    others = sqlite3.connect(db).execute(
        "SELECT json_extract(candidate, '$.source.kind'), reason, attempts, error FROM results WHERE status = "
        "'failed' AND json_extract(candidate, '$.source.sha256') != ? ORDER BY 1",
        (IRSource(IR.encode()).identity()["sha256"],)).fetchall()
    (ptx_kind, *ptx), (ir_kind, *broken) = others
    assert ptx_kind == "code-object" and ptx[:2] == ["invalid", 1]
    assert "a ptx code object cannot load on the hip backend" in ptx[2]
    assert ir_kind == "llvm-ir" and broken[:2] == ["invalid", 0] and broken[2].startswith("IRError: ")  # never ran
    measured = sqlite3.connect(db).execute(
        "SELECT json_extract(candidate, '$.tags.g'), device, median_us, timer, cache_state, attempts "
        "FROM results WHERE status = 'ok'").fetchall()
    # Every good candidate measured, at its first attempt (no fault cost it one), on one of the GPUs: which
    # one is whichever was idle first.
    assert sorted(m[0] for m in measured) == list(range(44))
    assert {m[1] for m in measured} <= {"hip:0 AMD Instinct MI300X (fake)", "hip:1 AMD Instinct MI300X (fake)"}
    assert {(round(m[2], 3), m[3], m[4], m[5]) for m in measured} == {(4.0, "events", "warm", 1)}
    assert summary.busy_s > 0 and summary.wall_s > 0


def test_the_database_and_its_exports_record_each_device_the_workers_opened(fake_gpus, tmp_path):
    db = tmp_path / "r.db"
    summary = sweep(candidates_from_json(space(6, bad=())), db, progress=False)
    assert summary.gpus == 2
    results, env = read_database(db)
    assert len(results) == 6 and env["schema_version"] == 2 and env["pyhipbench_version"] == hb.__version__
    # Each worker that opened its GPU before the sweep ended, once (a quick sweep may end before the second).
    devices = env["devices"]
    assert sorted(d["index"] for d in devices) in ([0], [1], [0, 1])
    assert {(d["name"], d["pci_bus_id"]) for d in devices} == {("AMD Instinct MI300X (fake)", "0000:1b:00.0")}
    for d in devices:
        assert d["api_version"].startswith("HIP ") and d["rated_sm_clock_mhz"] == 2100 and d["ecc_enabled"]
        assert d["uuid"] is None and "through HIP only" in d["unreadable"]["uuid"]
        assert "through HIP only" in d["unreadable"]["temperature_end_c"]  # the end read too: AMD has no NVML here
    store = Store(db, resume=True)
    try:
        exported = json.loads(export_best(store, tmp_path / "best.json", 3))
        assert [r["candidate_id"] for r in exported["results"]] == [r["candidate_id"] for r in store.best(3)]
    finally:
        store.close()
    assert exported["devices"] == env["devices"] and exported["schema_version"] == 2


def test_without_standby_a_fault_still_costs_one_candidate(fake_gpus, tmp_path):
    summary = sweep(candidates_from_json(space(4, bad=("fault",))), tmp_path / "r.db", timeout_floor_s=1.5,
                    progress=False, standby=False)
    assert (summary.measured, summary.failed) == (4, 1)
    rows = sqlite3.connect(tmp_path / "r.db").execute(
        "SELECT kernel, reason, attempts FROM results WHERE status = 'failed'").fetchall()
    assert rows == [("fault", "fault", 2)]


def _cli(*args: str, env: dict[str, str], **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "pyhipbench.cli", "sweep", *args], env={**os.environ, **env},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def _recorded(db: Path) -> set[tuple[str, str, str | None]]:
    with sqlite3.connect(db) as raw:
        return set(raw.execute("SELECT candidate_id, status, reason FROM results").fetchall())


def test_kill_9_halfway_and_resume_equals_an_uninterrupted_run(fake_gpus, tmp_path):
    # Each good candidate takes 20000 fake launches, so the sweep lasts long enough to be killed halfway.
    path = tmp_path / "space.json"
    path.write_text(json.dumps(space(40, bad=("fault",), bench={"cache": "warm", "iterations": 20000})))
    env = sweep_environment(fake_gpus)
    whole = _cli(str(path), "--out", str(tmp_path / "whole.db"), "--export", str(tmp_path / "best.md"),
                 "--export", str(tmp_path / "best.csv"), "--best", "3", env=env)
    out, err = whole.communicate(timeout=120)
    assert whole.returncode == 0, err
    assert out.startswith("40 measured, 1 failed, 0 already in") and "failed " in out and "fault (after a retry)" in out
    expected = _recorded(tmp_path / "whole.db")
    assert len(expected) == 41
    assert (tmp_path / "best.md").read_text().count("\n| copy |") == 3
    assert (tmp_path / "best.csv").read_text().splitlines()[0].startswith("kernel,grid,block")

    db = tmp_path / "killed.db"
    killed = _cli(str(path), "--out", str(db), env=env, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if db.exists():
            try:
                if len(_recorded(db)) >= 15:
                    break
            except sqlite3.OperationalError:  # the schema is being created
                pass
        time.sleep(0.02)
    os.killpg(killed.pid, signal.SIGKILL)  # the whole sweep: driver and workers
    killed.communicate(timeout=30)
    halfway = _recorded(db)
    assert 15 <= len(halfway) < 41 and halfway <= expected

    again = _cli(str(path), "--out", str(db), env=env)
    out, err = again.communicate(timeout=120)
    assert again.returncode == 2 and "pass --resume" in err  # a database with results is not overwritten
    resumed = _cli(str(path), "--out", str(db), "--resume", env=env)
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    assert f"already in {db}" in out.splitlines()[0]
    assert _recorded(db) == expected

    compared = subprocess.run([sys.executable, "-m", "pyhipbench.cli", "compare", str(tmp_path / "whole.db"),
                               str(db)], capture_output=True, text=True, env={**os.environ, **env})
    assert compared.returncode == 0, compared.stderr
    rows = compared.stdout.splitlines()[2:]  # after the rule and the header
    assert len(rows) == 40 and all(r.endswith("same (from the CIs: no samples)") for r in rows)
    assert len(load_results(db)) == 40


def test_cli_sweep_bad_input_exits_2_naming_it(tmp_path):
    path = tmp_path / "space.json"
    path.write_text('[{"source": {"kind": "llvm-ir", "text": "x"}, "kernel": "k", "grid": 0, "block": 1}]')
    result = subprocess.run([sys.executable, "-m", "pyhipbench.cli", "sweep", str(path), "--out",
                             str(tmp_path / "r.db")], capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.strip() == f"pyhipbench sweep: {path}: candidate 0: grid=0: out of range, expected " \
                                    "an integer in [1, 4294967295]"
    result = subprocess.run([sys.executable, "-m", "pyhipbench.cli", "sweep", str(path), "--out", str(path)],
                            capture_output=True, text=True)
    assert result.returncode == 2 and "is the input file" in result.stderr
    good = tmp_path / "good.json"  # the options are sweep()'s to check, after the space is read
    good.write_text(json.dumps(space(1, bad=())))
    result = subprocess.run([sys.executable, "-m", "pyhipbench.cli", "sweep", str(good), "--out",
                             str(tmp_path / "r.db"), "--gpus", "0,0"], capture_output=True, text=True)
    assert result.returncode == 2 and result.stderr == "pyhipbench sweep: --gpus 0,0: a device is listed twice\n"


def test_cli_sweep_export_never_overwrites_the_space_or_the_database(tmp_path, capsys):
    from pyhipbench.cli import main
    path = tmp_path / "space.json"
    text = json.dumps(space(1, bad=()))
    path.write_text(text)
    assert main(["sweep", str(path), "--out", str(tmp_path / "r.db"), "--export", str(path)]) == 2
    assert f"--export {path}: is the input file" in capsys.readouterr().err
    assert main(["sweep", str(path), "--out", str(tmp_path / "r.json"), "--export", str(tmp_path / "r.json")]) == 2
    assert f"--export {tmp_path / 'r.json'}: is the --out database" in capsys.readouterr().err
    assert path.read_text() == text and not (tmp_path / "r.db").exists() and not (tmp_path / "r.json").exists()


def test_sweep_api_refuses_bad_arguments(tmp_path):
    with pytest.raises(BenchError, match=r"candidates\[0\]='copy': expected a pyhipbench.Candidate"):
        sweep(["copy"], tmp_path / "r.db")
    with pytest.raises(BenchError, match=r"gpus=\[0, 0\]: a device is listed twice"):
        sweep([copy_candidate()], tmp_path / "r.db", gpus=[0, 0])
    with pytest.raises(BenchError, match=r"sweep\(\) needs at least one candidate"):
        sweep([], tmp_path / "r.db")
    with pytest.raises(BenchError, match=r"backend='rocm': expected one of hip, cuda, or None"):
        sweep([copy_candidate()], tmp_path / "r.db", backend="rocm")
    with pytest.raises(BenchError, match=r"standby='yes': expected True or False"):
        sweep([copy_candidate()], tmp_path / "r.db", standby="yes")
    assert not (tmp_path / "r.db").exists()  # refused before the database or a worker


def test_no_gpu_is_one_clear_error(fake_hip_library, monkeypatch, tmp_path):  # noqa: F811 (the fixture imported above)
    for name, value in sweep_environment(fake_hip_library, devices=0).items():
        monkeypatch.setenv(name, value)
    with pytest.raises(NoDeviceError, match=r"a worker could not open its GPU \(slot 0\): NoDeviceError: HIP found "
                                            r"no GPU"):
        sweep([copy_candidate()], tmp_path / "r.db", backend="hip", progress=False)


def test_ray_missing_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails
    with pytest.raises(NoDeviceError, match=r"needs ray, which is not installed \(pip install 'ray\[default\]'\)"):
        sweep([copy_candidate()], tmp_path / "r.db", cluster="auto")


def test_ray_cluster_without_gpus_leaves_no_connection(monkeypatch, tmp_path):
    import types
    calls = []
    fake_ray = types.SimpleNamespace(is_initialized=lambda: False, init=lambda **kw: calls.append("init"),
                                     cluster_resources=lambda: {"CPU": 2.0}, shutdown=lambda: calls.append("shutdown"))
    monkeypatch.setitem(sys.modules, "ray", fake_ray)
    with pytest.raises(NoDeviceError, match=r"the Ray cluster at 'auto' has no GPUs \(cluster resources: "
                                            r"\{'CPU': 2.0\}\)"):
        sweep([copy_candidate()], tmp_path / "r.db", cluster="auto")
    assert calls == ["init", "shutdown"]  # the connection it opened is closed


def test_a_ray_actor_raising_opening_its_gpu_is_one_clear_error(monkeypatch, tmp_path):
    import types
    exceptions = pytest.importorskip("ray.exceptions", reason="the error classes are Ray's")

    class Actor:
        def __init__(self) -> None:
            self.facts = types.SimpleNamespace(remote=lambda: "facts-ref")

    # The actor's Worker.open raised something other than a pyhipbench error (made before ray is faked).
    raised = exceptions.RayTaskError("RayWorker.facts", "Traceback ...", OSError("libamdhip64.so: cannot open"))

    def get(ref):
        raise raised

    fake_ray = types.SimpleNamespace(
        is_initialized=lambda: True, cluster_resources=lambda: {"GPU": 1.0}, exceptions=exceptions,
        remote=lambda **options: lambda cls: types.SimpleNamespace(remote=lambda backend: Actor()),
        wait=lambda refs, num_returns, timeout: (refs, []), get=get, kill=lambda actor, no_restart: None)
    monkeypatch.setitem(sys.modules, "ray", fake_ray)
    with pytest.raises(NoDeviceError, match=r"a worker died opening its GPU \(slot 0\): the Ray actor raised "
                                            r"OSError: libamdhip64.so: cannot open"):
        sweep([copy_candidate()], tmp_path / "r.db", cluster="auto")


def test_space_in_yaml(tmp_path, monkeypatch):
    yaml = pytest.importorskip("yaml", reason="YAML spaces need pyyaml")
    path = tmp_path / "space.yaml"
    path.write_text(yaml.safe_dump(space(2, bad=())))
    assert [(c.kernel, c.grid, c.tags) for c in load_space(path)] == [("copy", (1, 1, 1), {"g": 0}),
                                                                      ("copy", (2, 1, 1), {"g": 1})]
    path.write_text("candidates: [")
    with pytest.raises(BenchError, match=r"space.yaml: not YAML"):
        load_space(path)
    monkeypatch.setitem(sys.modules, "yaml", None)
    with pytest.raises(BenchError, match=r"space.yaml: reading YAML needs pyyaml \(pip install pyyaml\)"):
        load_space(path)


@pytest.fixture
def sweep_scaling(monkeypatch):
    """bench/sweep_scaling.py, imported as its own directory's script."""
    monkeypatch.syspath_prepend(str(REPO / "bench"))
    import sweep_scaling
    return sweep_scaling


def test_scaling_benchmark_space(sweep_scaling):
    space = sweep_scaling.candidates(max_time_s=0.1, hang_timeout_s=5)
    assert len(space) >= 500 and len({c.id for c in space}) == len(space)
    assert [c.tags for c in space if "fault" in c.tags] == [{"fault": 0}, {"fault": 1}, {"fault": 2}]
    assert [(c.kernel, c.timeout_s) for c in space if c.kernel == "spin"] == [("spin", 5)]
    assert {c.kernel for c in space} == {"copy", "fma", "spin"}


def test_scaling_benchmark_orders_and_report(sweep_scaling, fake_gpus, tmp_path, capsys):
    listed = sweep_scaling.candidates(max_time_s=0.1, hang_timeout_s=5)
    shuffled = sweep_scaling.ordered(listed, "shuffled")
    assert shuffled == sweep_scaling.ordered(listed, "shuffled") and sorted(c.id for c in shuffled) == sorted(
        c.id for c in listed)
    bad = [i for i, c in enumerate(shuffled) if c.kernel == "spin" or "fault" in c.tags]
    assert len(bad) == 4 and max(bad) < len(listed) - 4  # not the last four, as listed
    assert [c for c in shuffled if c.kernel != "spin" and "fault" not in c.tags] == listed[:-4]  # in order
    assert sweep_scaling.ordered(listed, "listed") == listed
    small = candidates_from_json(space(6, bad=("fault",)))
    report = sweep_scaling.run(small, tmp_path / "r.db", [0, 1], 1.5)
    assert (report["measured"], report["failed"]) == (6, 1)
    assert sum(g["candidates"] for g in report["per_gpu"]) == 7 and len(report["per_gpu"]) <= 2
    assert 0 < sum(g["busy_s"] for g in report["per_gpu"]) <= report["busy_s"]  # the latter has first attempts too
    assert 0 <= report["serial_tail_s"] < report["wall_s"]
    assert "serial tail" in capsys.readouterr().out


@pytest.mark.parametrize("option, value, message", [
    ("--orders", "", "expected listed and/or shuffled"),
    ("--orders", "listed,listed", "expected listed and/or shuffled"),
    ("--orders", "random", "expected listed and/or shuffled"),
    ("--gpus", "0", "expected two or more device indices, each once"),
    ("--gpus", "0,x", "expected two or more device indices, each once"),
    ("--gpus", "1,1", "expected two or more device indices, each once"),
])
def test_scaling_benchmark_refuses_what_it_cannot_compare(sweep_scaling, option, value, message, monkeypatch,
                                                          capsys, tmp_path):
    monkeypatch.setattr(sys, "argv", ["sweep_scaling.py", "--out", str(tmp_path / "out"), option, value])
    with pytest.raises(SystemExit) as exit_:
        sweep_scaling.main()
    assert exit_.value.code == 2 and not (tmp_path / "out").exists()
    assert f"{option} {value!r}: {message}" in capsys.readouterr().err


class ScriptedExecutor:
    """Two fake GPUs whose workers answer from a script: kernel name -> the outcome of each attempt."""

    def __init__(self, script: dict[str, list[tuple[str | None, str | None]]]) -> None:
        self.script, self.events_due, self.starts, self.ran_on = script, [], [], []
        self.runs: dict[str, int] = {}

    def initial_slots(self):
        return [0, 1]

    def more_slots(self, facts):
        return []

    def start(self, slot):
        from pyhipbench._sweep.worker import DeviceFacts
        self.starts.append(slot)
        self.events_due.append((slot, "ready", DeviceFacts("hip", slot, "Scripted", CompileTarget("gfx942"), 2)))

    def submit(self, slot, task):
        from pyhipbench._sweep.worker import Outcome
        attempt = self.runs.get(task.kernel, 0)
        self.runs[task.kernel] = attempt + 1
        self.ran_on.append((task.kernel, slot, self.starts.count(slot)))
        reason, error = self.script[task.kernel][attempt]
        result = {"stats_us": {"median": 1.0, "ci_low": 1.0, "ci_high": 1.0}} if reason is None else None
        self.events_due.append((slot, "outcome", Outcome(task.candidate_id, result, reason, error,
                                                         replace_worker=reason is not None)))

    def kill(self, slot):
        pass

    def events(self, timeout):
        due, self.events_due = self.events_due, []
        return due

    def close(self):
        pass


def test_a_failure_is_retried_once_on_a_fresh_worker(tmp_path):
    from pyhipbench._sweep.scheduler import run
    script = {"flaky": [("fault", "KernelFault: once"), (None, None)],
              "broken": [("fault", "KernelFault: first"), ("error", "DriverError: second")],
              "wrong": [("invalid", "BenchError: bad arguments")]}
    executor = ScriptedExecutor(script)
    copy = CodeObjectSource.from_file(COPY_PTX)  # needs no compiler; the scripted workers load nothing
    candidates = [Candidate(copy, kernel, 1, 64, ARGS) for kernel in script]
    store = Store(tmp_path / "r.db")
    summary = run(candidates, store, executor)
    rows = {r[0]: r[1:] for r in store.db.execute("SELECT kernel, status, reason, attempts, error FROM results")}
    assert rows == {"flaky": ("ok", None, 2, None),
                    "broken": ("failed", "error", 2, "DriverError: second (attempt 1: fault: KernelFault: first)"),
                    "wrong": ("failed", "invalid", 1, "BenchError: bad arguments")}
    assert (summary.measured, summary.failed) == (1, 2)
    # Each retry ran on a worker started after the failure, which had run nothing before it.
    retries = [(kernel, slot, generation) for kernel, slot, generation in executor.ran_on
               if kernel in ("flaky", "broken")][2:]
    assert all(generation == 2 for _kernel, _slot, generation in retries) and len(retries) == 2


def test_a_compile_that_kills_its_process_fails_only_its_candidates():
    """The compile pool attributes a dead compile process to the compile it ran: the other source compiles."""
    import time

    from pyhipbench._sweep import compile_queue

    import pool_tasks
    crashing = Candidate(pool_tasks.CrashingSource(), "copy", 1, 64, ARGS)
    fine = Candidate(IRSource(IR.encode()), "copy", 1, 64, ARGS)
    queue = compile_queue.CompileQueue([crashing, fine], 2)
    news = [queue.start(CompileTarget("gfx942"))]
    deadline = time.monotonic() + 120
    while queue.compiling and time.monotonic() < deadline:
        time.sleep(0.05)
        news.append(queue.collect())
    ready = [c for n in news for c in n.ready]
    failed = [f for n in news for f in n.failed]
    assert ready == [fine] and failed == [(crashing, "died", "its compile worker died (signal 11, SIGSEGV)")]
    assert fine.source.digest in queue.code


class _StubSource(Source):
    """Code that needs no compiler: its bytes as they are."""
    kind, needs_compiler = "stub", False

    def __init__(self, data: bytes) -> None:
        self.data = data

    def identity(self):
        return {"kind": self.kind, "data": self.data.decode()}

    def to_json(self):
        return self.identity()

    def compile(self, target, args=()):
        return Code(self.data)


class _StubDevice:
    """Loads any code but b"bad" (refused as the driver's format check refuses PTX on AMD); counts modules."""

    backend = SimpleNamespace(kernel_timer=None)  # no kernel timer: "auto" times with events

    def __init__(self) -> None:
        self.loaded: list[bytes] = []
        self.held = 0

    def load_module(self, code: bytes):
        if code == b"bad":
            raise BenchError("a ptx code object cannot load on the hip backend; expected hsaco")
        self.loaded.append(code)
        self.held += 1
        device = self

        class Module:
            def kernel(self, name):
                return name

            def unload(self):
                device.held -= 1
        return Module()


class _InProcessExecutor(ScriptedExecutor):
    """One slot whose worker is a real pyhipbench._sweep.worker.Worker on a stub device, run in this process."""

    def __init__(self, worker) -> None:
        super().__init__({})
        self.worker = worker
        self.sent: list = []

    def initial_slots(self):
        return [0]

    def start(self, slot):
        from pyhipbench._sweep.worker import DeviceFacts
        self.events_due.append((slot, "ready", DeviceFacts("hip", slot, "InProcess", CompileTarget("gfx942"), 1)))

    def submit(self, slot, task):
        self.sent.append(task)
        self.events_due.append((slot, "outcome", self.worker.run(task)))


def test_a_worker_unloads_old_modules_and_the_scheduler_sends_their_code_again(tmp_path, monkeypatch):

    from pyhipbench._sweep import scheduler, worker
    monkeypatch.setattr(worker, "MODULES_KEPT", 2)
    _stub_measurement(monkeypatch, lambda launches: {"kernel": launches[0].kernel, "stats_us": {"median": 1.0},
                                                     "times_us": []})
    device = _StubDevice()
    executor = _InProcessExecutor(worker.Worker(device))
    sources = {name: _StubSource(name.encode()) for name in ("bad", "a", "b", "c")}
    # The worker holds two modules: loading c unloads a, and the second run of a must carry its code again.
    order = ["bad", "bad", "a", "b", "c", "a"]
    candidates = [Candidate(sources[name], "k", 1, 64, tags={"i": i}) for i, name in enumerate(order)]
    store = Store(tmp_path / "r.db")
    run = scheduler._Scheduler(candidates, store, executor, Progress(6, show=False),
                               scheduler.SweepSummary(str(tmp_path / "r.db"), 6, 0), 10.0, 1)
    run.loop()
    rows = store.db.execute("SELECT json_extract(candidate, '$.tags.i'), status, error FROM results "
                            "ORDER BY 1").fetchall()
    refused = "BenchError: a ptx code object cannot load on the hip backend; expected hsaco"
    assert rows == [(0, "failed", refused), (1, "failed", refused)] + [(i, "ok", None) for i in range(2, 6)]
    assert device.loaded == [b"a", b"b", b"c", b"a"] and device.held == 2
    assert all(task.code is not None for task in executor.sent)  # none was held when it was sent
    assert run.slots[0].modules_held == set(executor.worker.modules) == {sources["c"].digest, sources["a"].digest}


class _PipelinedInProcessExecutor(_InProcessExecutor):
    """Like _InProcessExecutor, but the worker runs what it was sent one task per events() call, in order,
    so the scheduler sends a task ahead while the one before it has not yet reported."""

    def __init__(self, worker) -> None:
        super().__init__(worker)
        self.queue: list = []

    def submit(self, slot, task):
        self.sent.append(task)
        self.queue.append(task)

    def events(self, timeout):
        due = super().events(timeout)
        if not due and self.queue:
            due = [(0, "outcome", self.worker.run(self.queue.pop(0)))]
        return due


def test_with_tasks_sent_ahead_the_scheduler_still_knows_which_code_the_worker_holds(tmp_path, monkeypatch):

    from pyhipbench._sweep import scheduler, worker
    monkeypatch.setattr(worker, "MODULES_KEPT", 2)
    _stub_measurement(monkeypatch, lambda launches: {"kernel": launches[0].kernel, "stats_us": {"median": 1.0},
                                                     "times_us": []})
    executor = _PipelinedInProcessExecutor(worker.Worker(_StubDevice()))
    sources = {name: _StubSource(name.encode()) for name in "abcd"}
    # The worker holds two modules and each outcome says which: a task sent ahead of one that loads a module
    # carries its code even if the worker held it at its last outcome, since that load may unload it (the
    # worker unloads a while running c, after which the a sent ahead needs its code). Four a's at the end: the
    # first two go with their code (the worker holds c and d; then the first a's load), the last two without.
    order = "abcadcabcdabcd" + "aaaa"
    candidates = [Candidate(sources[name], "k", 1, 64, tags={"i": i}) for i, name in enumerate(order)]
    store = Store(tmp_path / "r.db")
    run = scheduler._Scheduler(candidates, store, executor, Progress(len(order), show=False),
                               scheduler.SweepSummary(str(tmp_path / "r.db"), len(order), 0), 10.0, 1)
    run.loop()
    statuses = store.db.execute("SELECT status, error FROM results").fetchall()
    assert statuses == [("ok", None)] * len(order)
    assert run.slots[0].modules_held == set(executor.worker.modules)
    assert [task.code is None for task in executor.sent][-4:] == [False, False, True, True]


def _task(name: bytes, code: bytes | None, timer: str = "auto", code_key: str | None = None):
    from pyhipbench._sweep.worker import Task
    return Task(name.decode(), "k", (1, 1, 1), (64, 1, 1), (), 0, BenchOptions(timer=timer),
                code_key or name.decode(), code)


def _stub_measurement(monkeypatch, record):
    """The worker's measurement stubbed: each task prepared as `record(launches)`, its result's to_dict."""
    from pyhipbench._sweep import worker
    monkeypatch.setattr(worker, "prepare_bench", lambda launches, options: SimpleNamespace(
        run=lambda: SimpleNamespace(to_dict=lambda: record(launches), wall_s=0.0)))


def test_a_worker_prepares_the_next_task_while_the_gpu_measures_but_not_under_the_events_timer(monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    from pyhipbench._measure import resolved
    from pyhipbench._sweep import worker
    prepared = []
    _stub_measurement(monkeypatch, lambda launches: prepared.append(launches[0].kernel) or {"times_us": []})
    device = _StubDevice()
    hb_worker = worker.Worker(device)
    monkeypatch.setattr(resolved, "default_timer", lambda d: "cupti")  # "auto" as on a GPU that CUPTI traces
    with ThreadPoolExecutor(1) as preparing:
        hb_worker.prepare_ahead(_task(b"a", b"a"), preparing)
        assert set(hb_worker.ahead) == {"a"}
        hb_worker.ahead["a"].result()
        assert device.loaded == [b"a"]  # loaded ahead, before its run
        assert hb_worker.run(_task(b"a", b"a")).result is not None
        assert device.loaded == [b"a"] and not hb_worker.ahead  # the run took what was prepared ahead
        held = _task(b"a again", None, code_key="a")
        hb_worker.prepare_ahead(held, preparing)  # its module held: prepared, nothing loaded
        assert hb_worker.run(held).result is not None and device.loaded == [b"a"]
        hb_worker.run(_task(b"b", b"b", timer="events"))  # now measuring with events ...
        hb_worker.prepare_ahead(_task(b"c", b"c"), preparing)  # ... so the next is prepared in its turn
        assert not hb_worker.ahead and device.loaded == [b"a", b"b"]
        bad = _task(b"bad", b"bad")
        hb_worker.run(_task(b"a", b"a"))
        hb_worker.prepare_ahead(bad, preparing)
        outcome = hb_worker.run(bad)  # what fails ahead is the task's outcome
        assert outcome.reason == worker.INVALID and "cannot load on the hip backend" in outcome.error
        assert not hb_worker.ahead and len(prepared) == 4


class _RaisingSource(_StubSource):
    needs_compiler = True

    def compile(self, target, args=()):
        raise RuntimeError(f"the compiler broke on {self.data.decode()}")


def test_a_compiler_raising_a_foreign_exception_fails_its_candidates_only():
    from pyhipbench._sweep.compile_queue import _compile
    status, message = _compile(_RaisingSource(b"k.ll"), CompileTarget("gfx942"), ())
    assert status == "error" and message.startswith("RuntimeError: the compiler broke on k.ll (at ")
    assert "test_sweep.py:" in message


def test_gpus_differing_only_in_driver_say_so(tmp_path):
    from pyhipbench._sweep.scheduler import run
    from pyhipbench._sweep.worker import DeviceFacts

    class TwoDrivers(ScriptedExecutor):
        def start(self, slot):
            target = CompileTarget("sm_90", 12080 + slot)
            self.events_due.append((slot, "ready", DeviceFacts("cuda", slot, "H200", target, 2)))

    with pytest.raises(NoDeviceError, match=r"the sweep's GPUs differ: cuda:1 H200 is sm_90 \(CUDA driver 12081\), "
                                            r"another is sm_90 \(CUDA driver 12080\); run one sweep per kind"):
        run([copy_candidate()], Store(tmp_path / "r.db"), TwoDrivers({}))


# -- pipelining: a task sent ahead ------------------------------------------------------
class _HeldExecutor(ScriptedExecutor):
    """Workers that keep what they are sent; the test hands the scheduler their events."""

    def __init__(self, slots: int = 2) -> None:
        super().__init__({})
        self.slot_count, self.sent, self.kills = slots, [], []

    def initial_slots(self):
        return list(range(self.slot_count))

    def submit(self, slot, task):
        self.sent.append((slot, task))

    def kill(self, slot):
        self.kills.append(slot)


def _held_run(tmp_path, count: int, slots: int = 2, **candidate_fields):
    from pyhipbench._sweep import scheduler
    from pyhipbench._sweep.worker import DeviceFacts
    copy = CodeObjectSource.from_file(COPY_PTX)
    candidates = [Candidate(copy, "copy", 1, 64, ARGS, tags={"i": i}, **candidate_fields) for i in range(count)]
    executor = _HeldExecutor(slots)
    run = scheduler._Scheduler(candidates, Store(tmp_path / "r.db"), executor, Progress(count, show=False),
                               scheduler.SweepSummary(str(tmp_path / "r.db"), count, 0), 10.0, 1)
    for slot in executor.initial_slots():
        run._start_slot(slot)
        run._handle(slot, "ready", DeviceFacts("hip", slot, "Held", CompileTarget("gfx942"), slots))
    run._dispatch()
    return run, executor, candidates


def _ok(task):
    """The task measured; the worker holds its code object now."""
    from pyhipbench._sweep.worker import Outcome
    return Outcome(task.candidate_id, {"stats_us": {"median": 1.0, "ci_low": 1.0, "ci_high": 1.0}}, busy_s=0.01,
                   modules_held=frozenset({task.code_key}))


def _fault(candidate):
    from pyhipbench._sweep.worker import FAULT, Outcome
    return Outcome(candidate.id, reason=FAULT, error="KernelFault: boom", replace_worker=True)


def test_a_busy_worker_gets_one_task_ahead_only_while_more_are_ready_than_workers(tmp_path):
    run, executor, candidates = _held_run(tmp_path, 5)
    ids = [c.id for c in candidates]
    # Two started, one each; then one ahead each, while 3 and then 2 are left (> 2 workers): the last one waits.
    assert [(slot, task.candidate_id) for slot, task in executor.sent] == [
        (0, ids[0]), (1, ids[1]), (0, ids[2])]
    assert executor.sent[0][1].code is not None and executor.sent[2][1].code is not None  # not held yet
    assert run.slots[0].queued.candidate is candidates[2] and run.slots[1].queued is None
    assert list(run.dispatcher.ready) == candidates[3:]
    assert [run.slots[i].running.attempt.number for i in (0, 1)] == [1, 1]
    run._handle(0, "outcome", _ok(executor.sent[0][1]))
    assert run.slots[0].running.attempt.candidate is candidates[2] and run.slots[0].queued is None
    assert run.recorder.store.count() == 1
    # Two candidates left for two workers: none goes ahead, and the idle workers get them as they finish.
    assert len(executor.sent) == 3
    run._handle(1, "outcome", _ok(executor.sent[1][1]))
    assert [task.candidate_id for _slot, task in executor.sent[3:]] == [ids[3]]
    assert executor.sent[3][1].code is None  # slot 1's outcome said it holds the code: not sent again


def test_workers_take_candidates_in_the_spaces_order_whatever_source_they_come_from(tmp_path):
    from pyhipbench._sweep import scheduler
    from pyhipbench._sweep.worker import DeviceFacts
    copy, empty = CodeObjectSource.from_file(COPY_PTX), CodeObjectSource.from_file(EMPTY_PTX)
    # Ready at once, source by source (copy's, then empty's); handed out as listed, interleaved.
    candidates = [Candidate(source, kernel, 1, 64, args, tags={"i": i}) for i, (source, kernel, args) in
                  enumerate([(copy, "copy", ARGS), (empty, "empty", ()), (copy, "copy", ARGS), (empty, "empty", ())])]
    executor = _HeldExecutor(1)
    store = Store(tmp_path / "r.db")
    run = scheduler._Scheduler(candidates, store, executor, Progress(4, show=False),
                               scheduler.SweepSummary(str(tmp_path / "r.db"), 4, 0), 10.0, 1)
    run._start_slot(0)
    run._handle(0, "ready", DeviceFacts("hip", 0, "Held", CompileTarget("gfx942"), 1))
    run._dispatch()
    for _ in range(3):
        run._handle(0, "outcome", _ok(executor.sent[len(store.done_ids())][1]))
        run._dispatch()
    assert [task.candidate_id for _slot, task in executor.sent] == [c.id for c in candidates]


def test_a_task_sent_ahead_goes_back_in_line_without_an_attempt_when_its_worker_is_replaced(tmp_path):
    from pyhipbench._sweep.worker import DeviceFacts
    from pyhipbench._sweep.worker_slot import Attempt
    run, executor, candidates = _held_run(tmp_path, 6)
    assert run.slots[0].queued.candidate is candidates[2]
    run._handle(0, "outcome", _fault(candidates[0]))
    assert executor.kills == [0] and run.slots[0].facts is None  # replaced: the new worker has not said ready
    assert run.slots[0].queued is None and next(iter(run.dispatcher.ready)) is candidates[2]
    assert list(run.dispatcher.retries) == [Attempt(candidates[0], 2, ("fault", "KernelFault: boom"))]
    # A death and a timeout give back what was sent ahead just the same.
    assert run.slots[1].queued.candidate is candidates[3]
    run._handle(1, "died", "the worker process was killed by SIGSEGV")
    assert list(run.dispatcher.ready)[:2] == candidates[2:4]  # in the space's order
    assert executor.kills == [0, 1]
    # The new workers take the retries; the candidates given back run later as their first attempts.
    for slot in (0, 1):
        run._handle(slot, "ready", DeviceFacts("hip", slot, "Held", CompileTarget("gfx942"), 2))
    run._dispatch()
    assert [run.slots[i].running.attempt.number for i in (0, 1)] == [2, 2]
    run._handle(0, "outcome", _ok(executor.sent[-2][1]))
    assert run.slots[0].running.attempt == Attempt(candidates[2])


def test_the_watchdog_of_a_task_sent_ahead_starts_when_the_one_before_it_ends(tmp_path):
    run, executor, candidates = _held_run(tmp_path, 8, timeout_s=2.0)
    first_deadline = run.slots[0].running.deadline
    time.sleep(0.2)  # the first candidate runs a while; the one sent ahead waits behind it
    before = time.monotonic()
    run._handle(0, "outcome", _ok(executor.sent[0][1]))
    started = run.slots[0].running
    assert started.attempt.candidate is candidates[2]
    assert before + 2.0 <= started.deadline <= time.monotonic() + 2.0
    assert started.deadline >= first_deadline + 0.2  # not from when it was sent
    # It hangs: killed at its own deadline, once; what its worker then held ahead goes back unattempted.
    assert run.slots[0].queued.candidate is candidates[4]
    run.slots[0].running = dataclasses.replace(started, deadline=time.monotonic() - 0.001)
    run._watchdog()
    assert executor.kills == [0] and next(iter(run.dispatcher.ready)) is candidates[4]
    assert [(a.candidate, a.number) for a in run.dispatcher.retries] == [(candidates[2], 2)]
    assert run.dispatcher.retries[0].first_failure == (
        "timeout", "no result after 2.0 s (the watchdog's limit); the worker was killed")


def test_no_task_goes_ahead_behind_a_retry(tmp_path):
    from pyhipbench._sweep.worker import DeviceFacts
    run, executor, candidates = _held_run(tmp_path, 8)
    run._handle(0, "outcome", _fault(candidates[0]))
    sent = len(executor.sent)
    run._handle(0, "ready", DeviceFacts("hip", 0, "Held", CompileTarget("gfx942"), 2))
    run._dispatch()
    assert [task.candidate_id for _slot, task in executor.sent[sent:]] == [candidates[0].id]  # the retry, alone
    assert run.slots[0].queued is None and run.slots[0].running.attempt.number == 2


def test_code_goes_to_a_worker_unless_it_will_hold_it_when_it_reaches_the_task(tmp_path):
    from pyhipbench._sweep.worker import DeviceFacts, Task
    from pyhipbench._sweep.worker_slot import Attempt, WorkerSlot
    copy, empty = CodeObjectSource.from_file(COPY_PTX), CodeObjectSource.from_file(EMPTY_PTX)
    first = Candidate(copy, "copy", 1, 64, ARGS)
    slot = WorkerSlot(_HeldExecutor(1), 0, 10.0)
    slot.start()
    slot.facts = DeviceFacts("hip", 0, "Held", CompileTarget("gfx942"), 1)
    assert not slot.holds(copy.digest)  # a new worker holds nothing
    slot.modules_held = frozenset({copy.digest, empty.digest})  # as its last outcome said
    assert slot.holds(copy.digest)
    slot.send(Task(first.id, "copy", first.grid, first.block, first.args, 0, first.bench, copy.digest, None),
              Attempt(first))
    assert slot.holds(copy.digest) and slot.holds(empty.digest)  # the task before loads nothing
    slot.modules_held = frozenset({empty.digest})
    assert not slot.holds(empty.digest)  # the task before loads copy's, which may unload empty's


# -- the standby process per GPU ------------------------------------------------------------
def _events_until(pool, done, timeout_s: float = 60.0) -> list:
    seen, deadline = [], time.monotonic() + timeout_s
    while not done(seen):
        assert time.monotonic() < deadline, f"nothing more after {seen}"
        seen += pool.events(0.05)
    return seen


def test_a_replacement_takes_the_standby_process_and_a_new_spare_starts(fake_gpus):
    from pyhipbench._sweep.local import LocalPool
    pool = LocalPool("hip", [1])
    processes = []
    try:
        pool.start(0)
        (slot, kind, facts), = _events_until(pool, lambda seen: seen)
        assert (slot, kind, facts.index) == (0, "ready", 1)
        _events_until(pool, lambda seen: 0 in pool.spares and pool.spares[0].facts is not None)  # it opened GPU 1
        old, spare = pool.workers[0].process, pool.spares[0].process
        processes += [old, spare]
        pool.start(0)  # as after a fault: the old worker is killed, its exit awaited in the background
        assert pool.workers[0].process is spare
        assert pool.events(0) == [(0, "ready", facts)]  # at once: the spare had opened its device
        assert pool.workers[0].after.wait(30) and old.exitcode == -signal.SIGKILL  # before any task is sent
        assert pool.spares[0].process is not spare  # a new spare, started in the background
        processes.append(pool.spares[0].process)
    finally:
        pool.close()
    assert all(p.exitcode is not None for p in processes) and not pool.workers and not pool.spares


def test_a_new_worker_is_sent_nothing_before_the_one_it_replaces_has_exited():
    from types import SimpleNamespace

    from pyhipbench._sweep.local import _Process

    class Connection:
        def __init__(self):
            self.sent = []

        def send(self, task):
            self.sent.append(task)

    old_exit = threading.Event()
    new = _Process(SimpleNamespace(name="new"), Connection(), after=old_exit)
    new.tasks.put("task 1")
    time.sleep(0.2)
    assert new.connection.sent == []  # held while the old process (and its device context) may still be there
    old_exit.set()
    new.tasks.put(None)
    new.sender.join(5)
    assert new.connection.sent == ["task 1"]


def test_a_spare_that_cannot_open_its_gpu_turns_the_standby_off(fake_gpus, monkeypatch):
    from pyhipbench._sweep.local import LocalPool
    pool = LocalPool("hip", [0])
    try:
        pool.start(0)
        assert _events_until(pool, lambda seen: seen)[0][1] == "ready"  # and its spare is starting
        pool.spares.pop(0).end()
        monkeypatch.setenv("FAKE_HIP_DEVICE_COUNT", "0")  # a process spawned from now on finds no GPU
        pool._start_spare(0)
        spare = pool.spares[0].process
        assert _events_until(pool, lambda seen: pool.standby[0] is False) == []  # not the sweep's error
        assert 0 not in pool.spares and spare.exitcode is not None
        pool.start(0)  # no spare: a process started afresh, whose failure the scheduler hears of
        (slot, kind, message), = _events_until(pool, lambda seen: seen)
        assert (slot, kind) == (0, "error") and "NoDeviceError" in message
        assert 0 not in pool.spares
    finally:
        pool.close()


def test_tags_read_as_a_person_reads_them():
    from pyhipbench._results.tags import tags_text
    assert tags_text({"BLOCK_M": 64, "num_warps": 4, "kind": "tma"}) == " BLOCK_M=64 num_warps=4 kind=tma"
    assert tags_text([1, 2]) == " [1, 2]" and tags_text({}) == "" and tags_text(None) == ""


def test_a_csv_export_carries_the_candidate_id_and_tags(tmp_path):
    from pyhipbench._results import report
    rows = [{"kernel": "k", "grid": [1, 1, 1], "block": [32, 1, 1], "timer": "cupti", "cache_state": "warm",
             "stats_us": {"median": 2.0, "ci_low": 1.9, "ci_high": 2.1, "rel_ci": 0.05, "p10": 1.9, "p90": 2.1,
                          "outliers": 0},
             "samples": 3, "stop_reason": "precision", "rotation": {"sets": 1}, "host_us_per_kernel": 1.0,
             "wall_s": 0.01, "device": {"name": "GPU"}, "candidate_id": "ab" * 32, "tags": {"g": 64}}]
    header, row = report.render(tmp_path / "best.csv", rows, {}).splitlines()
    assert header.endswith(",candidate_id,tags") and row.endswith(f',{"ab" * 32},"{{""g"": 64}}"')
