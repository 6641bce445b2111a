"""A candidate's identity: immutable once made (its tags to every level), its id the hash of what it is; a
candidate a space lists more than once runs once, and the summary names it apart from those resumed."""
from __future__ import annotations

import copy
import dataclasses
import json
import pickle
from pathlib import Path

import pytest

from pyhipbench import BenchOptions, Candidate, CodeObjectSource, CompileTarget, IRSource, Store, candidates_from_json
from pyhipbench._sweep import scheduler
from pyhipbench._sweep.worker import DeviceFacts, Outcome

from sweep_helpers import ARGS, FAST, IR

REPO = Path(__file__).resolve().parents[2]
COPY_PTX = REPO / "pyhipbench" / "kernels" / "copy.ptx"
TAGS = {"tile": [4, {"unroll": [1, 2]}], "name": "a", "pair": (1, [2])}


def _candidate(tags) -> Candidate:
    return Candidate(IRSource(IR.encode()), "copy", (4,), (64,), ARGS, bench=BenchOptions(**FAST), tags=tags)


def _plain_id(candidate: Candidate, tags) -> str:
    """The id as a candidate's fields hash it, with `tags` as plain JSON data."""
    import hashlib
    fields = {**candidate.to_json(), "tags": tags}
    del fields["id"]
    fields["source"] = candidate.source.identity()
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:32]


CHANGES = ["setitem", "update", "pop", "popitem", "setdefault", "clear", "delitem", "ior", "append", "extend",
           "insert", "list setitem", "iadd", "sort", "reverse", "remove", "nested append", "nested setitem",
           "list in a tuple"]


@pytest.mark.parametrize("change", [
    lambda tags: tags.__setitem__("new", 1),
    lambda tags: tags.update(name="b"),
    lambda tags: tags.pop("name"),
    lambda tags: tags.popitem(),
    lambda tags: tags.setdefault("new", 1),
    lambda tags: tags.clear(),
    lambda tags: tags.__delitem__("name"),
    lambda tags: tags.__ior__({"new": 1}),
    lambda tags: tags["tile"].append(8),
    lambda tags: tags["tile"].extend([8]),
    lambda tags: tags["tile"].insert(0, 8),
    lambda tags: tags["tile"].__setitem__(0, 8),
    lambda tags: tags["tile"].__iadd__([8]),
    lambda tags: tags["tile"].sort(key=str),
    lambda tags: tags["tile"].reverse(),
    lambda tags: tags["tile"].remove(4),
    lambda tags: tags["tile"][1]["unroll"].append(4),        # nested: a list in a dict in a list
    lambda tags: tags["tile"][1].__setitem__("unroll", []),
    lambda tags: tags["pair"][1].append(3),                  # a list inside a tuple
], ids=CHANGES)
def test_a_candidates_tags_refuse_every_change_at_every_level(change):
    candidate = _candidate(TAGS)
    before = (candidate.id, json.dumps(candidate.to_json(), sort_keys=True))
    with pytest.raises(TypeError, match="a candidate's tags are read-only \\(its id hashes them\\); expected a new "
                                        "Candidate for other tags: dataclasses.replace"):
        change(candidate.tags)
    assert (candidate.id, json.dumps(candidate.to_json(), sort_keys=True)) == before


def test_a_candidate_keeps_its_own_copy_of_the_tags_and_hands_out_copies():
    given = {"tile": [4], "inner": {"k": 1}}
    candidate = _candidate(given)
    identity = candidate.id
    given["tile"].append(8)           # the caller's data changes afterwards
    given["inner"]["k"] = 2
    given["new"] = True
    exported = candidate.to_json()
    exported["tags"]["tile"].append(16)  # to_json is the caller's to change
    assert candidate.tags == {"tile": [4], "inner": {"k": 1}} and candidate.to_json()["tags"] == {"tile": [4],
                                                                                                  "inner": {"k": 1}}
    assert candidate.id == identity == _plain_id(candidate, {"tile": [4], "inner": {"k": 1}})
    with pytest.raises(dataclasses.FrozenInstanceError):
        candidate.tags = {}
    with pytest.raises(dataclasses.FrozenInstanceError):
        candidate.id = "0" * 32


def test_frozen_tags_hash_compare_pickle_and_copy_as_the_data_given():
    candidate = _candidate(TAGS)
    # The id is the one plain tags hash to (results databases hold such ids), tuples hashed as lists.
    assert candidate.id == _plain_id(candidate, json.loads(json.dumps(TAGS)))
    assert candidate.tags == TAGS and candidate.tags["tile"] == [4, {"unroll": [1, 2]}]
    assert isinstance(candidate.tags, dict) and isinstance(candidate.tags["tile"], list)
    assert json.dumps(candidate.tags, sort_keys=True) == json.dumps(TAGS, sort_keys=True)
    assert repr(candidate.tags) == repr(TAGS)
    for twin in (pickle.loads(pickle.dumps(candidate)), copy.deepcopy(candidate), copy.copy(candidate)):
        assert twin == candidate and twin.id == candidate.id
        with pytest.raises(TypeError):
            twin.tags["tile"].append(8)
    other = dataclasses.replace(candidate, tags={**candidate.tags, "name": "b"})  # a new candidate, its own id
    assert other.id != candidate.id and other.tags["name"] == "b" and candidate.tags["name"] == "a"
    assert dataclasses.asdict(candidate)["tags"] == TAGS
    mutable = dict(candidate.tags)  # a plain copy to build other tags from
    mutable["name"] = "c"
    assert candidate.tags["name"] == "a"


def test_a_space_files_candidates_are_frozen_and_their_ids_follow_their_json():
    candidate, = candidates_from_json([{"source": {"kind": "llvm-ir", "text": IR}, "kernel": "copy", "grid": [4],
                                        "block": [64], "args": ARGS, "bench": FAST, "tags": {"t": [1]}}])
    with pytest.raises(TypeError):
        candidate.tags["t"].append(2)
    assert candidate.id == _candidate({"t": [1]}).id
    data = candidate.to_json()
    del data["id"]
    data["source"] = {"kind": "llvm-ir", "text": IR}
    again, = candidates_from_json([data])
    assert again.id == candidate.id  # the id follows the JSON it writes


# -- candidates listed more than once ------------------------------------------------------------
class _InstantExecutor:
    """One slot whose worker measures each task at once, in this process; it counts what it ran."""

    def __init__(self) -> None:
        self.due: list = []
        self.ran: list[str] = []

    def initial_slots(self):
        return [0]

    def more_slots(self, facts):
        return []

    def start(self, slot):
        self.due.append((slot, "ready", DeviceFacts("hip", slot, "Instant", CompileTarget("gfx942"), 1)))

    def submit(self, slot, task):
        self.ran.append(task.candidate_id)
        if task.kernel == "broken":  # bad input: recorded failed at once
            outcome = Outcome(task.candidate_id, reason="invalid", error="BenchError: no kernel 'broken'")
        else:
            result = {"kernel": task.kernel, "grid": [1, 1, 1], "block": [64, 1, 1],
                      "stats_us": {"median": 1.0, "ci_low": 1.0, "ci_high": 1.0}}
            outcome = Outcome(task.candidate_id, result, modules_held=frozenset({task.code_key}))
        self.due.append((slot, "outcome", outcome))

    def kill(self, slot):
        pass

    def events(self, timeout_s):
        due, self.due = self.due, []
        return due

    def close(self):
        pass


def _space() -> list[Candidate]:
    copy_ = CodeObjectSource.from_file(COPY_PTX)
    a, b, c = (Candidate(copy_, "copy", grid, 64, ARGS, tags={"g": grid}) for grid in (7, 8, 9))
    return [a, b, a, c, Candidate(copy_, "copy", 7, 64, ARGS, tags={"g": 7}), c]  # a three times, c twice


def test_a_candidate_listed_more_than_once_runs_once_and_the_summary_names_it(tmp_path):
    space = _space()
    a, b, c = space[0], space[1], space[3]
    executor = _InstantExecutor()
    summary = scheduler.run(space, Store(tmp_path / "r.db"), executor)
    assert sorted(executor.ran) == sorted([a.id, b.id, c.id])  # each once
    assert (summary.total, summary.skipped, summary.measured, summary.already_recorded) == (6, 3, 3, 0)
    assert summary.duplicates == [(a, 3), (c, 2)] and summary.repeats == 3
    assert a.describe() == f"{a.id[:12]} (copy grid 7x1x1 block 64x1x1 tags {{\"g\": 7}})"
    resumed = scheduler.run(space + [b], Store(tmp_path / "r.db", resume=True), _InstantExecutor())
    # Resumed: those in the database are counted apart from the repeats within the space.
    assert (resumed.measured, resumed.already_recorded, resumed.skipped) == (0, 3, 7)
    assert resumed.duplicates == [(a, 3), (b, 2), (c, 2)]


def test_the_cli_summary_says_which_candidates_were_listed_twice_and_what_a_resume_found(tmp_path, capsys,
                                                                                        monkeypatch):
    from pyhipbench.cli import main
    from pyhipbench.cli import sweep as sweep_command
    broken = Candidate(CodeObjectSource.from_file(COPY_PTX), "broken", 1, 64, ARGS)
    space = _space() + [broken]

    def instant_sweep(candidates, db, **options):  # sweep() with an executor of this process
        store = Store(db, resume=options["resume"], lock=True)
        try:
            return scheduler.run(candidates, store, _InstantExecutor())
        finally:
            store.close()

    monkeypatch.setattr(sweep_command, "load_space", lambda path: space)
    monkeypatch.setattr(sweep_command, "sweep", instant_sweep)
    (tmp_path / "space.json").write_text("[]")
    db = tmp_path / "r.db"
    assert main(["sweep", str(tmp_path / "space.json"), "--out", str(db)]) == 0
    lines = capsys.readouterr().out.splitlines()
    a, c = space[0], space[3]
    assert lines[0].startswith(f"3 measured, 1 failed, 0 already in {db}, 2 listed more than once in the space; "
                               "0.0 s wall on 1 GPU(s)")
    failed = f"failed {broken.id[:12]} broken: invalid: BenchError: no kernel 'broken'"
    assert lines[1:4] == [f"listed 3 times: {a.describe()}; recorded once",
                          f"listed twice: {c.describe()}; recorded once", failed]
    # Resumed: nothing left; the failure listed is the database's, from the run before, and says so.
    assert main(["sweep", str(tmp_path / "space.json"), "--out", str(db), "--resume"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (f"0 measured, 0 failed, 4 already in {db}, 2 listed more than once in the space; nothing "
                        "left to run")
    assert lines[3:5] == [f"{db} holds 1 failed, 1 of them recorded before this sweep:", failed]
