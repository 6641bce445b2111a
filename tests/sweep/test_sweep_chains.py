"""Chain candidates: several launches of one source run in order as one sample, arrays shared by reference
(ref:LAUNCH.ARG) or the module's every kernel; their ids, their space-file form, the worker and the scheduler
running them on the fake drivers in this process; and single-launch candidates' ids as they always were."""
from __future__ import annotations

import dataclasses
import json
import pickle
import sqlite3
from pathlib import Path

import pytest

from pyhipbench import (
    BenchError,
    BenchOptions,
    Candidate,
    Code,
    CodeObjectSource,
    CompileTarget,
    IRSource,
    Source,
    Store,
    candidates_from_json,
    load_space,
)
from pyhipbench._launch.arg_spec import RefSpec, parse_arg
from pyhipbench._sources.chain import MODULE, LaunchSpec
from pyhipbench._sweep.scheduler import run
from pyhipbench._sweep.worker import INVALID, Task, Worker

from sweep_helpers import ARGS, FAST, IR, InProcess

REPO = Path(__file__).resolve().parents[2]
COPY_PTX = REPO / "pyhipbench" / "kernels" / "copy.ptx"
LAUNCH = {"cuda": "cuLaunchKernel", "hip": "hipExtModuleLaunchKernel"}
N = 1 << 18  # 1 MiB float32 arrays: three of them span the fake's 4 MiB last-level cache in a few sets
BIG = [f"array:float32:{N}:arange", f"array:float32:{N}", f"int64:{N}"]
# src -> work, then work -> dst: the second launch reads the buffer the first writes (a split-K workspace's shape).
SPLIT = [{"kernel": "copy", "grid": [4], "block": [256], "args": BIG},
         {"kernel": "copy", "grid": [8], "block": [128], "args": ["ref:0.1", f"array:float32:{N}", "ref:0.2"]}]


def two_kernel_ptx() -> bytes:
    """copy.ptx with its kernel twice, as `part_1` and `part_0` (listed out of name order)."""
    text = COPY_PTX.read_text()
    body = text[text.index(".visible .entry copy("):]
    head = text[:text.index(".visible .entry copy(")]
    return (head + body.replace("copy", "part_1") + "\n" + body.replace("copy", "part_0")).encode()


def copy_source() -> CodeObjectSource:
    return CodeObjectSource.from_file(COPY_PTX)


def chain(launches=SPLIT, **fields) -> Candidate:
    return Candidate(copy_source(), launches=launches, bench=BenchOptions(**FAST), **fields)


# -- single-launch candidates: their ids are what results databases hold ---------------------------------------
def test_single_launch_candidates_hash_as_they_always_have():
    """Ids computed by the code before chains existed: --resume skips by them."""
    ptx = Candidate(copy_source(), "copy", (8,), (256,), ARGS, shared_bytes=128, bench=BenchOptions(**FAST),
                    tags={"t": [1, "x"]})
    ir = Candidate(IRSource(IR.encode()), "copy", (4, 2), (64,), ARGS, bench=BenchOptions(**FAST))
    loaded, = candidates_from_json([{"source": {"kind": "llvm-ir", "text": IR}, "kernel": "copy", "grid": [4],
                                     "block": [64], "args": ARGS, "bench": FAST}])
    assert (ptx.id, ir.id, loaded.id) == ("c15c06719a01117b3acffa7bfe4c4797", "a8f9be4a6c89797bea0584eb1c375412",
                                          "c05324888a89429487d28eeaceb5ad79")
    assert ptx.launches is None and "launches" not in ptx.to_json() and ptx.name == "copy"
    assert ptx.describe() == 'c15c06719a01 (copy grid 8x1x1 block 256x1x1 tags {"t": [1, "x"]})'


# -- chain candidates ------------------------------------------------------------------------------------------
def test_a_chain_candidate_holds_its_launches_and_its_id_covers_them():
    a = chain()
    first, second = a.launches
    assert first == LaunchSpec("copy", (4, 1, 1), (256, 1, 1), tuple(parse_arg(t) for t in BIG))
    assert second.args == (RefSpec(0, 1), parse_arg(f"array:float32:{N}"), RefSpec(0, 2))
    assert (a.kernel, a.grid, a.block, a.args) == (None, None, None, ())  # the launches hold them
    assert a.name == "copy -> copy"
    assert a.describe() == f"{a.id[:12]} (copy grid 4x1x1 block 256x1x1 -> copy grid 8x1x1 block 128x1x1)"
    assert chain().id == a.id and pickle.loads(pickle.dumps(a)) == a
    other_grid = [SPLIT[0], {**SPLIT[1], "grid": [16]}]
    unshared = [SPLIT[0], {**SPLIT[1], "args": [f"array:float32:{N}", f"array:float32:{N}", f"int64:{N}"]}]
    ids = {a.id, chain(other_grid).id, chain(unshared).id, chain(SPLIT[:1]).id, chain([SPLIT[0], SPLIT[0]]).id}
    assert len(ids) == 5  # every launch's every field is part of the id
    single = Candidate(copy_source(), "copy", (4,), (256,), BIG, bench=BenchOptions(**FAST))
    assert chain(SPLIT[:1]).id != single.id  # a chain of one launch is not the launch
    assert dataclasses.replace(a, tags={"t": 1}).launches == a.launches


def test_a_chain_candidates_json_reads_back_as_the_same_candidate():
    a = chain(tags={"split": 2})
    data = a.to_json()
    assert data["launches"][1] == {"kernel": "copy", "grid": [8, 1, 1], "block": [128, 1, 1], "shared_bytes": 0,
                                   "args": ["ref:0.1", f"array:float32:{N}:zeros", "ref:0.2"]}
    assert not {"kernel", "grid", "block", "args", "shared_bytes"} & set(data)
    del data["id"]
    data["source"] = {"kind": "code-object", "path": str(COPY_PTX)}
    again, = candidates_from_json([data])
    assert again.id == a.id and again == a


def test_launches_take_what_they_leave_out_from_the_candidate_and_share_its_arguments():
    """A launch without grid, block, shared_bytes or args takes the candidate's; the launches that leave args out
    share the candidate's arguments (references to the first of them), as every kernel of a module does."""
    c = Candidate(copy_source(), launches=[{"kernel": "copy"}, {"kernel": "copy", "grid": 2, "shared_bytes": 64},
                                           {"kernel": "copy", "args": ARGS}],
                  grid=4, block=64, shared_bytes=32, args=ARGS)
    first, second, third = c.launches
    assert (first.grid, first.block, first.shared_bytes) == ((4, 1, 1), (64, 1, 1), 32)
    assert (second.grid, second.shared_bytes) == ((2, 1, 1), 64)
    assert first.args == tuple(parse_arg(t) for t in ARGS)
    assert second.args == (RefSpec(0, 0), RefSpec(0, 1), RefSpec(0, 2))     # the same arrays as the first's
    assert third.args == first.args and RefSpec(0, 0) not in third.args      # its own: new arrays
    # A reference to a reference is the argument it names in the end: one id for one meaning.
    c = chain([SPLIT[0], {**SPLIT[1], "args": ["ref:0.1", "ref:0.1", "ref:0.2"]},
               {"kernel": "copy", "grid": 1, "block": 32, "args": ["ref:1.0", "ref:1.1", "ref:0.2"]}])
    assert c.launches[2].args == (RefSpec(0, 1), RefSpec(0, 1), RefSpec(0, 2))


def test_a_module_candidate_runs_every_kernel_with_the_candidates_launch():
    m = Candidate(copy_source(), launches=MODULE, grid=4, block=64, args=ARGS, bench=BenchOptions(**FAST))
    assert m.launches == MODULE and (m.grid, m.block) == ((4, 1, 1), (64, 1, 1)) and m.name == "module"
    assert m.describe() == f"{m.id[:12]} (every kernel of the module, grid 4x1x1 block 64x1x1)"
    data = m.to_json()
    assert data["launches"] == "module" and data["args"] == [str(parse_arg(t)) for t in ARGS]
    single = Candidate(copy_source(), "copy", 4, 64, ARGS, bench=BenchOptions(**FAST))
    assert m.id != single.id


@pytest.mark.parametrize("launches, message", [
    ([SPLIT[0], {**SPLIT[1], "args": ["ref:1.0"]}],
     r"launches\[1\]\.args\[0\]='ref:1\.0': launch 1 is not before launch 1; expected LAUNCH one of 0 to 0 "
     r"\(the launches before it\)"),
    ([SPLIT[0], {**SPLIT[1], "args": ["ref:2.1"]}], r"launches\[1\]\.args\[0\]='ref:2\.1': launch 2 is not before"),
    ([{**SPLIT[0], "args": ["ref:0.0"]}],
     r"launches\[0\]\.args\[0\]='ref:0\.0': the first launch has no earlier launch to refer to; expected TYPE:VALUE"),
    ([SPLIT[0], {**SPLIT[1], "args": ["array:float32:4", "ref:0.3"]}],
     r"launches\[1\]\.args\[1\]='ref:0\.3': launch 0 \(copy\) has 3 arguments; expected ARG one of 0 to 2"),
    ([{**SPLIT[0], "args": []}, {**SPLIT[1], "args": ["ref:0.0"]}],
     r"launch 0 \(copy\) has 0 arguments; expected a launch that has arguments"),
    ([SPLIT[0], {**SPLIT[1], "args": ["ref:first.1"]}],
     r"launches\[1\]\.args\[0\]='ref:first\.1': expected ref:LAUNCH\.ARG, LAUNCH and ARG whole numbers from 0"),
    ([SPLIT[0], {**SPLIT[1], "args": ["ref:0.-1"]}], r"'ref:0\.-1': expected ref:LAUNCH\.ARG"),
    ([SPLIT[0], {**SPLIT[1], "args": ["ref:0"]}], r"'ref:0': expected ref:LAUNCH\.ARG"),
    ([SPLIT[0], {**SPLIT[1], "args": [7]}], r"launches\[1\]\.args\[0\]=7: expected an argument spec's text"),
    ([SPLIT[0], {**SPLIT[1], "args": ["array:float33:4"]}],
     r"launches\[1\]\.args\[0\]='array:float33:4': dtype 'float33' is not one of"),
    ([SPLIT[0], {"kernel": "copy", "grid": [0], "block": [1]}], r"launches\[1\]\.grid\[0\]=0: out of range"),
    ([{"grid": [1], "block": [1]}], r"launches\[0\]: missing kernel; expected it in the launch"),
    ([{"kernel": "copy", "grid": [1]}], r"launches\[0\]: missing block; expected it in the launch or the candidate"),
    ([{"kernel": "copy", "grid": [1], "block": [1], "gird": 2}],
     r"launches\[0\]: unknown field\(s\) 'gird'; expected kernel, grid, block, shared_bytes, args"),
    ([], r"launches=\[\]: expected a non-empty list of launches"),
    ("all", r"launches='all': expected a non-empty list of launches .* or 'module'"),
    (["copy"], r"launches\[0\]='copy': expected an object with kernel"),
])
def test_a_bad_chain_names_the_launch_the_value_and_what_was_expected(launches, message):
    with pytest.raises(BenchError, match=message):
        chain(launches)


@pytest.mark.parametrize("fields, message", [
    ({"kernel": "copy", "launches": SPLIT}, r"kernel='copy' with launches: a chain's kernels are its launches'"),
    ({"launches": MODULE, "grid": 4}, r"launches='module': missing block; expected the chain's grid and block"),
    ({"launches": MODULE, "grid": 4, "block": 64, "args": ["ref:0.1"]},
     r"args\[0\]='ref:0\.1': ref:LAUNCH\.ARG names an argument of an earlier launch of a chain, so it belongs in "
     r"a launch's args"),
    ({"kernel": "copy", "grid": 4, "block": 64, "args": ["ref:0.1"]}, r"args\[0\]='ref:0\.1': ref:LAUNCH\.ARG"),
    ({"grid": 4, "block": 64}, r"kernel=None: expected a kernel name \(or launches, for a chain\)"),
])
def test_chain_fields_that_cannot_apply_are_refused(fields, message):
    with pytest.raises(BenchError, match=message):
        Candidate(copy_source(), **fields)


def test_a_triton_source_takes_no_chain():
    pytest.importorskip("triton", reason="Triton is not installed: a Triton source needs it")
    from pyhipbench import TritonSource
    with pytest.raises(BenchError, match=r"^launches: a triton source is one kernel, compiled for its "
                                         r"arguments; expected a code-object, llvm-ir, cuda-source, hip-source "
                                         r"source for a chain$"):
        Candidate(TritonSource("triton_kernels:add"), launches=SPLIT)
    with pytest.raises(BenchError, match=r"candidate 0: launches: a triton source is one kernel"):
        candidates_from_json([{"source": {"kind": "triton", "function": "triton_kernels:add"}, "launches": SPLIT}])


def test_a_space_file_of_chains_and_single_launches(tmp_path):
    """`launches` and `kernel` are alternatives: a candidate's own one drops the other from the defaults."""
    (tmp_path / "copy.ptx").write_bytes(COPY_PTX.read_bytes())
    path = tmp_path / "space.json"
    path.write_text(json.dumps({
        "defaults": {"source": {"kind": "code-object", "path": "copy.ptx"}, "kernel": "copy", "grid": [4],
                     "block": [256], "args": ARGS, "bench": FAST},
        "candidates": [{}, {"launches": SPLIT}, {"launches": [{"kernel": "copy"}, {"kernel": "copy", "grid": [8]}]},
                       {"launches": "module"}]}))
    single, split, inherited, module = load_space(path)
    assert single.kernel == "copy" and single.id == Candidate(single.source, "copy", 4, 256, ARGS,
                                                              bench=BenchOptions(**FAST)).id
    assert split.id == Candidate(split.source, launches=SPLIT, bench=BenchOptions(**FAST)).id
    assert [launch.grid for launch in inherited.launches] == [(4, 1, 1), (8, 1, 1)]
    assert inherited.launches[1].args == (RefSpec(0, 0), RefSpec(0, 1), RefSpec(0, 2))
    assert module.launches == MODULE and module.grid == (4, 1, 1)
    path.write_text(json.dumps({"defaults": {"source": {"kind": "code-object", "path": "copy.ptx"},
                                             "launches": SPLIT, "bench": FAST},
                                "candidates": [{}, {"kernel": "copy", "grid": [1], "block": [64], "args": ARGS}]}))
    from_defaults, own_kernel = load_space(path)
    assert from_defaults.launches == split.launches and own_kernel.launches is None
    path.write_text(json.dumps([{"source": {"kind": "code-object", "path": "copy.ptx"},
                                 "launches": [SPLIT[0], {**SPLIT[1], "args": ["ref:3.0"]}]}]))
    with pytest.raises(BenchError, match=r"space.json: candidate 0: launches\[1\]\.args\[0\]='ref:3\.0': launch 3 "
                                         r"is not before launch 1"):
        load_space(path)
    path.write_text(json.dumps([{"launches": SPLIT}]))
    with pytest.raises(BenchError, match=r"space.json: candidate 0: missing source$"):
        load_space(path)


# -- running chains --------------------------------------------------------------------------------------------
def launch_records(fake_driver, backend_name):
    return fake_driver.records(LAUNCH[backend_name])


def test_a_sweep_runs_a_chain_whose_second_launch_reads_the_first_ones_output(
        tmp_path, device, fake_driver, backend_name):
    """The real scheduler and worker: a chain of two launches, the second reading the array the first writes,
    measured dirty-cold, each set's shared array one buffer; beside it a single launch, as ever."""
    fake_driver.read_args(2)
    bench = {"cache": "dirty-cold", "timer": "events", "iterations": 6, "warmup": 0}
    split = Candidate(copy_source(), launches=SPLIT, bench=bench)
    single = Candidate(copy_source(), "copy", 2, 64, ARGS, bench={"cache": "warm", "iterations": 3, "warmup": 0})
    summary = run([split, single], Store(tmp_path / "r.db"), InProcess(device), compile_workers=1)
    assert (summary.measured, summary.failed) == (2, 0)
    made = launch_records(fake_driver, backend_name)
    chained = [r for r in made if r.block[0] in (256, 128)]
    firsts, seconds = chained[0::2], chained[1::2]
    assert [r.block[0] for r in firsts] == [256] * 6 and [r.block[0] for r in seconds] == [128] * 6
    # Within each sample the second kernel reads the very buffer the first wrote, in that sample's set.
    assert all(a.arg_values[1] == b.arg_values[0] for a, b in zip(firsts, seconds))
    assert len({r.arg_values[1] for r in firsts}) > 1  # the sets rotate: the shared array has a copy per set
    rows = {cid: (kernel, status, json.loads(result)) for cid, kernel, status, result in sqlite3.connect(
        tmp_path / "r.db").execute("SELECT candidate_id, kernel, status, result FROM results")}
    kernel, status, result = rows[split.id]
    assert (kernel, status, result["ran"], result["kernel"]) == ("copy -> copy", "ok", "chain", "copy -> copy")
    assert result["rotation"]["sets"] > 1 and result["grid"] == [4, 1, 1]
    assert [(k["name"], k["grid"], k["block"]) for k in result["kernels"]] == [
        ("copy", [4, 1, 1], [256, 1, 1]), ("copy", [8, 1, 1], [128, 1, 1])]
    kernel, status, result = rows[single.id]
    assert (kernel, status, result["ran"], result["kernels"]) == ("copy", "ok", "kernel", [])
    stored = json.loads(sqlite3.connect(tmp_path / "r.db").execute(
        "SELECT candidate FROM results WHERE candidate_id = ?", (split.id,)).fetchone()[0])
    assert stored["launches"] == split.to_json()["launches"]


def test_a_module_candidate_runs_every_kernel_in_name_order_on_one_argument_list(
        tmp_path, device, fake_driver, backend_name):
    fake_driver.read_args(2)
    module = Candidate(CodeObjectSource(two_kernel_ptx()), launches=MODULE, grid=4, block=64, args=ARGS,
                       bench={"cache": "warm", "timer": "events", "iterations": 3, "warmup": 0})
    summary = run([module], Store(tmp_path / "r.db"), InProcess(device), compile_workers=1)
    assert (summary.measured, summary.failed) == (1, 0)
    kernel, result = sqlite3.connect(tmp_path / "r.db").execute("SELECT kernel, result FROM results").fetchone()
    assert kernel == "part_0 -> part_1" and json.loads(result)["kernel"] == "part_0 -> part_1"
    made = launch_records(fake_driver, backend_name)
    assert len(made) == 6 and len({r.function for r in made}) == 2
    assert all(r.arg_values[:2] == made[0].arg_values[:2] for r in made)  # the same arrays for every kernel


def test_a_chain_naming_a_kernel_the_module_lacks_is_invalid(device):
    task = Task("c", "copy -> nope", None, None, (), 0, BenchOptions(**FAST), "digest", COPY_PTX.read_bytes(),
                launches=Candidate(copy_source(), launches=[SPLIT[0], {**SPLIT[1], "kernel": "nope"}]).launches)
    outcome = Worker(device).run(task)
    assert outcome.reason == INVALID and not outcome.replace_worker
    assert outcome.error == "BenchError: no kernel 'nope' in this ptx module; its kernels: copy"


class _LoweringSource(Source):
    """Code whose kernels a C++ compiler names: name expression -> lowered name."""
    kind, needs_compiler = "lowering", False

    def identity(self):
        return {"kind": self.kind}

    def to_json(self):
        return self.identity()

    def compile(self, target, args=()):
        return Code(b"code", {"scale<2>": "_Z5scaleILi2EEvPKfPfl"})


class _Recording(InProcess):
    """Runs nothing: records the tasks sent, and answers each with a result."""

    def __init__(self) -> None:
        super().__init__(None)
        self.tasks = []

    def start(self, slot):
        from pyhipbench._sweep.worker import DeviceFacts
        self.pending.append((slot, "ready", DeviceFacts("cuda", 0, "Recording", CompileTarget("sm_90"), 1)))

    def submit(self, slot, task):
        from pyhipbench._sweep.worker import Outcome
        self.tasks.append(task)
        result = {"kernel": task.kernel, "stats_us": {"median": 1.0, "ci_low": 1.0, "ci_high": 1.0}}
        self.pending.append((slot, "outcome", Outcome(task.candidate_id, result)))


def test_the_scheduler_sends_a_chains_kernels_by_the_names_the_module_knows(tmp_path):
    launches = [{"kernel": "copy", "grid": 1, "block": 64, "args": ARGS},
                {"kernel": "scale<2>", "grid": 1, "block": 64, "args": ["ref:0.1", "ref:0.0", "ref:0.2"]}]
    candidate = Candidate(_LoweringSource(), launches=launches)
    executor = _Recording()
    run([candidate], Store(tmp_path / "r.db"), executor)
    task, = executor.tasks
    assert [launch.kernel for launch in task.launches] == ["copy", "_Z5scaleILi2EEvPKfPfl"]
    assert task.kernel == "copy -> scale<2>" and candidate.launches[1].kernel == "scale<2>"
    kernel, = sqlite3.connect(tmp_path / "r.db").execute("SELECT kernel FROM results").fetchone()
    assert kernel == "copy -> scale<2>"


def test_a_worker_keeps_a_chains_arguments_for_the_next_and_frees_each_array_once(device, monkeypatch):
    from pyhipbench._sweep import worker as worker_module
    monkeypatch.setattr(worker_module, "ARGUMENT_SETS_KEPT", 1)
    worker, code = Worker(device), COPY_PTX.read_bytes()
    quick = BenchOptions(cache="warm", timer="events", iterations=2, warmup=0)

    def task(launches, i):
        return Task(f"c{i}", "copy -> copy", None, None, (), 0, quick, "digest", code,
                    launches=Candidate(copy_source(), launches=launches).launches)
    small = [{**SPLIT[0], "args": ARGS}, {**SPLIT[1], "args": ["ref:0.1", "array:float32:4096", "ref:0.2"]}]
    assert worker.run(task(small, 0)).result is not None
    (key, (made, owned)), = worker.arguments.items()
    assert made[1][0] is made[0][1] and len(owned) == 4  # src, work, n, dst: the shared ones once
    assert worker.run(task(small, 1)).result is not None and worker.arguments[key][0] is made  # reused
    assert worker.run(task(SPLIT, 2)).result is not None  # another chain's arguments: the first's are freed
    assert all(a.address == 0 for a in owned if hasattr(a, "address")) and len(worker.arguments) == 1
