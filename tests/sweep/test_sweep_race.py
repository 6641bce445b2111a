"""Racing in sweeps (`sweep(..., race=True)`, `pyhipbench sweep --race`): each task's bench options carry the
lowest CI upper bound measured so far in the database as `slower_than_us`; off, nothing changes."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from pyhipbench import BenchError, BenchOptions, Candidate, CodeObjectSource, CompileTarget, IRSource, Store, sweep
from pyhipbench._progress import Progress
from pyhipbench._results.store import Row, now
from pyhipbench._sweep import scheduler
from pyhipbench._sweep.worker import FAULT, DeviceFacts, Outcome

from codegen_helpers import require_toolchain
from fakes.conftest_fixtures import fake_hip_library, require_hip_python  # noqa: F401 (fixture)
from sweep_helpers import ARGS, IR, sweep_environment

require_hip_python()
REPO = Path(__file__).resolve().parents[2]
COPY_PTX = REPO / "pyhipbench" / "kernels" / "copy.ptx"


class _HeldExecutor:
    """One worker that keeps what it is sent; the test hands the scheduler its events."""

    def __init__(self) -> None:
        self.sent = []

    def initial_slots(self):
        return [0]

    def more_slots(self, facts):
        return []

    def start(self, slot):
        pass

    def submit(self, slot, task):
        self.sent.append(task)

    def kill(self, slot):
        pass

    def events(self, timeout):
        return []

    def close(self):
        pass


def _candidates(count: int, **bench) -> list[Candidate]:
    copy = CodeObjectSource.from_file(COPY_PTX)  # needs no compiler
    return [Candidate(copy, "copy", 1, 64, ARGS, bench=BenchOptions(cache="warm", **bench), tags={"i": i})
            for i in range(count)]


def _held_run(store: Store, candidates: list[Candidate], race: bool):
    """A scheduler on one held worker, started: it has sent the first task and one ahead."""
    executor = _HeldExecutor()
    run = scheduler._Scheduler(candidates, store, executor, Progress(len(candidates), show=False),
                               scheduler.SweepSummary(str(store.path), len(candidates), 0), 10.0, 1, race)
    run._start_slot(0)
    run._handle(0, "ready", DeviceFacts("hip", 0, "Held", CompileTarget("gfx942"), 1))
    run._dispatch()
    return run, executor


def _ok(task, ci_high: float) -> Outcome:
    return Outcome(task.candidate_id, {"stats_us": {"median": ci_high - 0.5, "ci_low": ci_high - 1.0,
                                                    "ci_high": ci_high}}, busy_s=0.01)


def _bounds(executor: _HeldExecutor) -> list[float | None]:
    return [task.bench.slower_than_us for task in executor.sent]


def _finish(run, executor, ci_highs: list[float]) -> None:
    """The worker's outcomes, in order: each running task's, with these CI upper bounds (µs)."""
    for ci_high in ci_highs:
        running = run.slots[0].running.attempt.candidate
        task = next(t for t in executor.sent if t.candidate_id == running.id)
        run._handle(0, "outcome", _ok(task, ci_high))


def test_without_race_each_task_carries_the_candidates_own_options(tmp_path):
    candidates = _candidates(5)
    run, executor = _held_run(Store(tmp_path / "r.db"), candidates, race=False)
    _finish(run, executor, [5.0, 3.0, 4.0, 2.0, 6.0])
    assert [t.candidate_id for t in executor.sent] == [c.id for c in candidates]
    assert [t.bench for t in executor.sent] == [c.bench for c in candidates]
    assert run.racing.bound_us is None


def test_racing_tasks_carry_the_lowest_ci_high_so_far_and_no_bound_before_a_result(tmp_path):
    candidates = _candidates(7)
    run, executor = _held_run(Store(tmp_path / "r.db"), candidates, race=True)
    assert _bounds(executor) == [None, None]  # the first, and the one sent ahead: no result yet
    assert executor.sent[0].bench == candidates[0].bench
    # Each outcome lowers the bound (or not) before the next task goes out; the one sent ahead carries the
    # bound of when it was sent (looser, still valid).
    _finish(run, executor, [5.0])
    assert _bounds(executor) == [None, None, 5.0]
    _finish(run, executor, [7.0])
    assert _bounds(executor) == [None, None, 5.0, 5.0]
    run._handle(0, "outcome", Outcome(run.slots[0].running.attempt.candidate.id, reason=FAULT, error="KernelFault: x",
                                      replace_worker=True))  # a failure measures nothing: the bound stays
    run._handle(0, "ready", DeviceFacts("hip", 0, "Held", CompileTarget("gfx942"), 1))
    run._dispatch()
    _finish(run, executor, [3.0])
    assert run.racing.bound_us == 3.0 and _bounds(executor)[-1] == 3.0
    sent = {t.candidate_id: t.bench for t in executor.sent}
    assert set(sent) <= {c.id for c in candidates}  # the bound joins the options sent, not the candidate
    for c in candidates:
        assert c.bench.slower_than_us is None and "slower_than_us" not in c.to_json()["bench"]
        if c.id in sent:
            assert sent[c.id].replace(slower_than_us=None) == c.bench
    stored = run.recorder.store.db.execute("SELECT candidate_id, candidate FROM results WHERE status = 'ok'").fetchall()
    assert len(stored) == 3 and all(json.loads(c)["id"] == cid for cid, c in stored)
    assert all("slower_than_us" not in json.loads(c)["bench"] for _, c in stored)


def test_racing_sends_no_bound_with_a_fixed_iteration_count(tmp_path):
    counted, raced = _candidates(3, iterations=50), _candidates(3)
    candidates = [counted[0], raced[0], counted[1], raced[1], counted[2], raced[2]]
    run, executor = _held_run(Store(tmp_path / "r.db"), candidates, race=True)
    _finish(run, executor, [4.0, 6.0, 5.0, 3.0, 8.0])
    bounds = {t.candidate_id: t.bench.slower_than_us for t in executor.sent}
    assert run.racing.bound_us == 3.0
    assert [bounds[c.id] for c in counted] == [None, None, None]  # bench refuses racing with iterations
    assert [bounds[c.id] for c in raced] == [None, 4.0, 3.0]      # no bound before the first result


def test_racing_keeps_a_candidates_own_bound_where_it_is_lower(tmp_path):
    low, high = _candidates(2, slower_than_us=1.0), _candidates(3, slower_than_us=9.0)
    candidates = [high[0], low[0], high[1], low[1], high[2]]
    run, executor = _held_run(Store(tmp_path / "r.db"), candidates, race=True)
    _finish(run, executor, [5.0, 6.0, 7.0, 8.0])
    assert _bounds(executor) == [9.0, 1.0, 5.0, 1.0, 5.0]  # its own before the first result; then the lower


def _stored(path: Path) -> Store:
    """A database already holding three measured candidates (CI upper bounds 9.0, 2.5 and 0 µs: no bound, as
    bench takes only a bound > 0) and a failure."""
    store = Store(path)
    for i, ci_high in enumerate((9.0, 2.5, 0.0)):
        store.record(Row(f"old{i}", {"kernel": "copy"}, "ok", 1, now(),
                         result={"stats_us": {"median": ci_high - 0.1, "ci_low": ci_high - 0.2, "ci_high": ci_high}}))
    store.record(Row("old-failed", {"kernel": "copy"}, "failed", 2, now(), reason="fault", error="KernelFault: x"))
    return store


def test_a_resumed_racing_sweep_starts_from_the_stored_results(tmp_path):
    store = _stored(tmp_path / "r.db")
    assert store.lowest_ci_high() == 2.5
    run, executor = _held_run(store, _candidates(5), race=True)
    assert _bounds(executor) == [2.5, 2.5]
    _finish(run, executor, [3.0])  # higher than the stored bound: it stays
    assert _bounds(executor)[-1] == 2.5
    _finish(run, executor, [1.5])
    assert _bounds(executor)[-1] == 1.5
    _, unraced = _held_run(_stored(tmp_path / "other.db"), _candidates(4), race=False)
    assert _bounds(unraced) == [None, None]
    assert Store(tmp_path / "empty.db").lowest_ci_high() is None


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_sweep_refuses_a_race_that_is_not_a_bool(tmp_path, value):
    with pytest.raises(BenchError, match=rf"race={value!r}: expected True or False"):
        sweep(_candidates(1), tmp_path / "r.db", race=value)
    assert not (tmp_path / "r.db").exists()  # refused before the database or a worker


def test_cli_race_flag_reaches_sweep(tmp_path, monkeypatch):
    import importlib

    from pyhipbench import cli
    command = importlib.import_module("pyhipbench.cli.sweep")  # the command's module, which calls sweep()
    calls = []

    def fake_sweep(candidates, db, **options):
        calls.append(options["race"])
        return scheduler.SweepSummary(str(db), len(candidates), 0)

    monkeypatch.setattr(command, "sweep", fake_sweep)
    space = tmp_path / "space.json"
    space.write_text(json.dumps([{"source": {"kind": "llvm-ir", "text": IR}, "kernel": "copy", "grid": [1],
                                  "block": [64], "args": ARGS}]))
    assert cli.main(["sweep", str(space), "--out", str(tmp_path / "a.db"), "--race"]) == 0
    assert cli.main(["sweep", str(space), "--out", str(tmp_path / "b.db")]) == 0
    assert calls == [True, False]


# -- on the fake GPUs -------------------------------------------------------------------------
# The fake runtime times a launch of block 64 at 2 µs and of block 128 at 7 ± 0.5 µs, alternating: a median
# whose CI never narrows to ±1 %, so without racing it runs until max_time_s.
LAUNCH_US_BY_BLOCK = "64:2,128:7~0.5"
RACE_BENCH = {"cache": "warm", "max_time_s": 0.5}


@pytest.fixture
def fake_gpu(fake_hip_library, monkeypatch):  # noqa: F811 (the fixture imported above)
    require_toolchain("gfx942")
    for name, value in {**sweep_environment(fake_hip_library), "FAKE_LAUNCH_US_BY_BLOCK": LAUNCH_US_BY_BLOCK}.items():
        monkeypatch.setenv(name, value)
    return fake_hip_library


def _fast_then_slow() -> list[Candidate]:
    source = IRSource(IR.encode())
    return [Candidate(source, "copy", 4, block, ARGS, bench=BenchOptions(**RACE_BENCH), tags={"block": block})
            for block in (64, 128)]


def _rows(db: Path) -> dict[int, tuple]:
    """block -> (stop reason, CI upper bound µs, the race's bound µs or None, samples)."""
    with sqlite3.connect(db) as raw:
        rows = raw.execute("SELECT json_extract(candidate, '$.tags.block'), stop_reason, ci_high_us, result "
                           "FROM results WHERE status = 'ok'").fetchall()
    return {block: (stop, ci_high, json.loads(result)["slower_than_us"], json.loads(result)["samples"])
            for block, stop, ci_high, result in rows}


def test_a_racing_sweep_stops_the_slower_candidate_early_and_the_cli_reads_its_database(fake_gpu, tmp_path):
    # One GPU, two candidates: the fast one runs first, alone (nothing goes ahead), so the slow one races it.
    raced_db, full_db = tmp_path / "raced.db", tmp_path / "full.db"
    summary = sweep(_fast_then_slow(), raced_db, gpus=[0], race=True, progress=False)
    assert (summary.measured, summary.failed) == (2, 0)
    raced = _rows(raced_db)
    fast_ci_high = raced[64][1]
    assert raced[64][:3] == ("precision", fast_ci_high, None) and fast_ci_high == pytest.approx(2.0, abs=0.01)
    assert raced[128][:3] == ("slower", raced[128][1], fast_ci_high)  # raced against the fast one's bound
    sweep(_fast_then_slow(), full_db, gpus=[0], progress=False)  # without racing: the same space, run out
    full = _rows(full_db)
    assert full[64][:3] == ("precision", fast_ci_high, None)
    assert full[128][0] in ("max-time", "max-samples") and full[128][2] is None
    assert raced[128][3] * 10 < full[128][3]  # the race stopped it after a few samples

    env = {**os.environ, **sweep_environment(fake_gpu), "FAKE_LAUNCH_US_BY_BLOCK": LAUNCH_US_BY_BLOCK}
    space = tmp_path / "space.json"
    space.write_text(json.dumps([{"source": {"kind": "llvm-ir", "text": IR}, "kernel": "copy", "grid": [4],
                                  "block": [block], "args": ARGS, "bench": RACE_BENCH, "tags": {"block": block}}
                                 for block in (64, 128)]))
    # Resumed with everything recorded: nothing runs; the best are listed and exported from the database.
    listed = subprocess.run([sys.executable, "-m", "pyhipbench.cli", "sweep", str(space), "--out", str(raced_db),
                             "--resume", "--race", "--gpus", "0", "--export", str(tmp_path / "best.csv")],
                            capture_output=True, text=True, env=env, timeout=120)
    assert listed.returncode == 0, listed.stderr
    best = [line for line in listed.stdout.splitlines() if line.startswith("best ")]
    assert len(best) == 2 and "block 64x1x1 block=64: median 2.000 µs" in best[0] and "raced" not in best[0]
    assert "block=128" in best[1] and best[1].endswith("(raced: stopped as slower, a less precise median)")
    csv = (tmp_path / "best.csv").read_text().splitlines()
    stop_column = csv[0].split(",").index("stop_reason")
    assert [row.split(",")[stop_column] for row in csv[1:]] == ["precision", "slower"]
    compared = subprocess.run([sys.executable, "-m", "pyhipbench.cli", "compare", str(full_db), str(raced_db)],
                              capture_output=True, text=True, env=env, timeout=120)
    assert compared.returncode == 0, compared.stderr
    assert len(compared.stdout.splitlines()) == 4  # the rule, the header, and both launches compared


def test_the_scheduler_races_through_the_tuning_engines_bound(tmp_path, monkeypatch):
    """The sweep keeps no racing rule of its own: every task's options come from the engine's RaceBound."""
    from pyhipbench._tuning.racing import RaceBound
    asked = []
    real = RaceBound.options_for

    def options_for(self, options):
        asked.append(self.bound_us)
        return real(self, options)
    monkeypatch.setattr(RaceBound, "options_for", options_for)
    run, executor = _held_run(Store(tmp_path / "r.db"), _candidates(4), race=True)
    _finish(run, executor, [5.0])
    assert asked == [None, None, 5.0] == _bounds(executor)
