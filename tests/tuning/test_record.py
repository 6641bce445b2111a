"""tune(..., record=PATH) on the fake drivers: a row per candidate in the sweep's results database, the winner
and the tie round beside them, each tuning added whole; the readers (load_results, compare, plot) read it."""
from __future__ import annotations

import json
import re
import sqlite3

import numpy as np
import pytest
from tuning_helpers import launch_us

import pyhipbench as hb
from pyhipbench._results.store import Store, read_database
from pyhipbench._tuning.contenders import ChainContender
from pyhipbench._tuning.kind import CandidateKind
from pyhipbench.errors import BenchError


class Tagged(CandidateKind):
    """A front end's kind as a test makes one: a launch, labelled `name`, with the tags given."""

    def __init__(self, launch: hb.Launch, name: str, **tags) -> None:
        self.launch, self.name, self.given = launch, name, tags

    @property
    def label(self) -> str:
        return self.name

    @property
    def tags(self) -> dict:
        return self.given

    def contender(self, device, options, launch_keywords, compile_workers):
        return ChainContender([self.launch], options, launch_keywords)


def rows(db) -> list[dict]:
    with sqlite3.connect(db) as connection:
        connection.row_factory = sqlite3.Row
        return [dict(r) for r in connection.execute("SELECT * FROM results ORDER BY rowid")]


def tunings(db) -> list[dict]:
    with sqlite3.connect(db) as connection:
        return json.loads(connection.execute("SELECT value FROM meta WHERE key = 'tunings'").fetchone()[0])


def test_each_candidate_is_a_row_as_a_sweep_records_it_with_its_rank_and_the_winner(device, copy, args, fake_driver,
                                                                                   monkeypatch, tmp_path):
    launch_us(monkeypatch, fake_driver, {64: 5.0, 128: 3.0})
    db = tmp_path / "tuning.db"
    tuning = hb.tune({"block 64": hb.Launch(copy, 4, 64, args), "broken": hb.Launch(copy, 4, 128, args[:2]),
                      "block 128": hb.Launch(copy, 4, 128, args)}, timer="events", cache="warm", tie_hold_s=None,
                     record=db)
    slow, broken, fast = rows(db)
    assert tuning.best.label == "block 128"
    assert [r["status"] for r in (slow, broken, fast)] == ["ok", "failed", "ok"]
    assert fast["median_us"] == pytest.approx(tuning.best.result.median_us) and fast["kernel"] == "copy"
    assert fast["ci_high_us"] == tuning.best.result.ci_us[1] and fast["timer"] == "events"
    assert fast["cache_state"] == "warm" and fast["busy_s"] == tuning.best.result.wall_s
    assert fast["device"] == f"{device.properties.backend}:0 {device.name}" and fast["attempts"] == 1
    recorded = json.loads(fast["result"])
    assert recorded == {k: v for k, v in tuning.best.result.to_dict().items() if k != "times_us"}
    candidate = json.loads(fast["candidate"])
    assert candidate == {"tuning": 1, "label": "block 128", "rank": 1, "note": None,
                         "measure_s": tuning.best.measure_s, "sustained": None, "tags": {"label": "block 128"}}
    assert json.loads(slow["candidate"])["rank"] == 2 and json.loads(broken["candidate"])["rank"] is None
    assert broken["reason"] == "BenchError" and broken["error"] == tuning.results[1].error
    assert broken["kernel"] == "broken" and broken["result"] is None and broken["median_us"] is None
    assert len({r["candidate_id"] for r in (slow, broken, fast)}) == 3
    [entry] = tunings(db)
    assert entry["tuning"] == 1 and entry["best"] == "block 128" and entry["candidates"] == 3
    assert entry["failed"] == 1 and entry["wall_s"] == tuning.wall_s
    assert entry["started_at"] <= entry["finished_at"]
    # The sweep's readers: fastest first, with the tags; the device recorded in the environment.
    results, environment = read_database(db)
    assert [r["tags"]["label"] for r in results] == ["block 128", "block 64"]
    assert [(r["tuning"], r["rank"]) for r in results] == [(1, 1), (1, 2)]  # which won, beside the screen's order
    assert [d["name"] for d in environment["devices"]] == [device.name]
    assert hb.load_results(db) == results


def test_a_tie_keeps_its_sustained_result_beside_its_screen_result(device, copy, args, fake_driver, monkeypatch,
                                                                  tmp_path):
    launch_us(monkeypatch, fake_driver, {64: 5.0, 128: 5.0}, held_us={64: 6.0, 128: 5.5},
              held_mhz={64: 1500.0, 128: 1800.0})  # 128's lead could be its clock's: both passes run
    db = tmp_path / "tuning.db"
    tuning = hb.tune({"block 64": hb.Launch(copy, 4, 64, args), "block 128": hb.Launch(copy, 4, 128, args)},
                     timer="events", cache="warm", iterations=4, warmup=0, tie_hold_s=0.002, record=db)
    first, second = (json.loads(r["candidate"]) for r in rows(db))
    assert tuning.best.label == "block 128" and second["rank"] == 1 and first["rank"] == 2
    assert second["sustained"]["stats_us"]["median"] == pytest.approx(5.5, rel=1e-4)
    assert second["sustained"]["samples"] == 8 and "times_us" not in second["sustained"]
    assert tunings(db)[0]["best"] == "block 128"


def test_each_tuning_is_added_whole_and_numbered(device, copy, args, tmp_path):
    db = tmp_path / "tuning.db"
    for blocks in ((64, 128), (256,)):
        hb.tune({f"block {b}": hb.Launch(copy, 4, b, args) for b in blocks}, timer="events", cache="warm",
                iterations=2, tie_hold_s=None, record=db)
    recorded = rows(db)
    assert [json.loads(r["candidate"])["tuning"] for r in recorded] == [1, 1, 2]
    assert [t["tuning"] for t in tunings(db)] == [1, 2] and len({r["candidate_id"] for r in recorded}) == 3
    assert [json.loads(r["candidate"])["rank"] for r in recorded][2] == 1


def test_when_no_candidate_runs_the_failures_are_recorded_before_the_error(device, copy, args, tmp_path):
    db = tmp_path / "tuning.db"
    with pytest.raises(BenchError, match=r"^tune: no candidate ran; a: BenchError: "):
        hb.tune({"a": hb.Launch(copy, 4, 64, args[:1])}, timer="events", record=db)
    [failed] = rows(db)
    assert failed["status"] == "failed" and failed["reason"] == "BenchError"
    assert tunings(db)[0]["best"] is None and tunings(db)[0]["failed"] == 1


def test_a_write_that_fails_commits_nothing_and_says_what_the_tuning_found(device, copy, args, tmp_path,
                                                                           monkeypatch):
    db = tmp_path / "tuning.db"
    inserted = []
    real = Store._insert

    def insert(self, row):  # the second row's write fails, as on a disk filled meanwhile
        if inserted:
            raise sqlite3.OperationalError("database or disk is full")
        inserted.append(row)
        real(self, row)
    monkeypatch.setattr(Store, "_insert", insert)
    with pytest.raises(OSError) as raised:
        hb.tune({f"block {b}": hb.Launch(copy, 4, b, args) for b in (64, 128)}, timer="events", cache="warm", iterations=2,
                tie_hold_s=None, record=db)
    assert re.fullmatch(r"could not record a tuning of 2 candidates: database or disk is full; the 0 results "
                        r"committed before are intact; the tuning itself finished \(best block \d+ at [\d.]+ µs\)",
                        raised.value.strerror)
    assert raised.value.filename == str(db)
    assert rows(db) == [] and Store(db, appending=True).tunings() == []  # the first row rolled back too


def test_a_sweeps_database_and_a_tunings_refuse_the_other_writer(device, copy, args, tmp_path, fake_driver,
                                                                  monkeypatch):
    from pyhipbench._results.store import Row, now
    swept = tmp_path / "sweep.db"
    store = Store(swept)
    store.record(Row("a" * 64, {"kernel": "copy", "tags": {}}, "ok", 1, now()))
    store.close()
    measured = launch_us(monkeypatch, fake_driver, {64: 1.0})
    with pytest.raises(BenchError, match=r"sweep.db holds the results of a sweep \(1 candidate\); expected a "
                                         r"tuning's database \(written by tune's record=\) or a new file$"):
        hb.tune([hb.Launch(copy, 4, 64, args)], timer="events", record=swept)
    assert measured == []  # refused before anything ran
    tuned = tmp_path / "tuning.db"
    hb.tune([hb.Launch(copy, 4, 64, args)], timer="events", cache="warm", iterations=2, tie_hold_s=None, record=tuned)
    with pytest.raises(BenchError, match=r"tuning.db holds 1 tuning \(written by tune's record=\); expected a "
                                         r"sweep's results database or a new file$"):
        Store(tuned, resume=True, lock=True)


def test_a_kinds_numpy_tags_are_recorded_as_their_python_values(device, copy, args, fake_driver, monkeypatch,
                                                                tmp_path):
    """A grid from np.arange gives np.int64 (and np.float32, np.bool_) meta-parameters."""
    launch_us(monkeypatch, fake_driver, {64: 5.0, 128: 3.0})
    db = tmp_path / "tuning.db"
    tuning = hb.tune([Tagged(hb.Launch(copy, 4, int(b), args), f"block {b}", BLOCK=b, scale=np.float32(0.5),
                             even=np.bool_(True), shape=[np.int64(4), 2]) for b in np.arange(64, 129, 64)],
                     device=device, timer="events", cache="warm", tie_hold_s=None, record=db)
    assert tuning.best.label == "block 128"
    tags = [json.loads(r["candidate"])["tags"] for r in rows(db)]
    assert tags == [{"label": f"block {b}", "BLOCK": b, "scale": 0.5, "even": True, "shape": [4, 2]} for b in (64, 128)]
    assert type(tags[0]["BLOCK"]) is int and type(tags[0]["even"]) is bool


@pytest.mark.parametrize("tags, message", [
    ({"dtype": np.dtype("float32")}, r"^candidate 'k': tag 'dtype'=dtype\('float32'\) is a \w+; expected str, "
                                     r"int, float, bool or None \(or a list or dict of them\)$"),
    ({"x": np.zeros(2)}, r"^candidate 'k': tag 'x'=array\(\[0\., 0\.\]\) is a ndarray; expected str, int,"),
    ({"grid": [1, object]}, r"^candidate 'k': tag 'grid'=<class 'object'> is a type; expected str, int, float"),
    ({"label": "other"}, r"^candidate 'k': tag 'label'='other': 'label' is the candidate's label in a recorded "
                         r"tuning; expected another name$"),
])
def test_a_tag_a_tuning_cannot_record_is_refused_before_anything_runs(device, copy, args, fake_driver, monkeypatch,
                                                                      tmp_path, tags, message):
    measured = launch_us(monkeypatch, fake_driver, {64: 1.0})
    db = tmp_path / "tuning.db"
    with pytest.raises(BenchError, match=message):
        hb.tune([hb.Launch(copy, 4, 64, args), Tagged(hb.Launch(copy, 4, 64, args), "k", **tags)], device=device,
                timer="events", cache="warm", tie_hold_s=None, record=db)
    assert measured == [] and not db.exists()


@pytest.mark.parametrize("record, message", [
    (5, r"^record=5: expected the path of a results database \(a new file, or one tunings were recorded into\)$"),
    ("", r"^record='': expected the path of a results database"),
])
def test_a_record_that_is_not_a_path_is_refused_in_one_line(record, message):
    with pytest.raises(BenchError, match=message):
        hb.tune([print], record=record)


def test_a_file_that_is_not_a_database_is_refused_before_anything_runs(device, copy, args, tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("my notes")
    with pytest.raises(BenchError, match=r"notes.txt exists and is not an SQLite database"):
        hb.tune([hb.Launch(copy, 4, 64, args)], timer="events", record=text)
    assert text.read_text() == "my notes"


def test_compare_and_plot_read_two_tunings_as_they_read_two_sweeps(device, copy, args, tmp_path, capsys):
    from pyhipbench.cli import main
    before, after = tmp_path / "before.db", tmp_path / "after.db"
    for db in (before, after):
        hb.tune({f"block {b}": hb.Launch(copy, 4, b, args) for b in (64, 128)}, timer="events", cache="warm",
                iterations=3, tie_hold_s=None, record=db)
    assert main(["compare", str(before), str(after)]) == 0
    table = capsys.readouterr().out
    assert "copy grid 4x1x1 block 64x1x1 (warm, events)" in table and "block 128x1x1" in table
    pytest.importorskip("matplotlib", reason="pyhipbench plot needs matplotlib (the plot extra)")
    assert main(["plot", str(after), "-o", str(tmp_path / "tuning.html")]) == 0
    page = (tmp_path / "tuning.html").read_text()
    assert "block 128" in page and "copy" in page
