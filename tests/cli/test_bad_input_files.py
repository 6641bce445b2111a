"""Input files that are not UTF-8, nest too deep or hold what is not JSON data: one BenchError naming the file.

Search spaces (JSON and YAML), reports and sweep databases for `compare`, C++
sources a space names, and LLVM IR text for `run`/`compile`: each refusal is
the package's own error with one line naming the file and what was expected,
the CLI's exit 2 (1 for IR, as every IRError), and nothing is written.
"""
from __future__ import annotations

import json
import sqlite3
import time
from importlib import resources
from pathlib import Path

import pytest

import pyhipbench as hb
from pyhipbench import cli
from pyhipbench._results import report
from pyhipbench._results.store import Row, Store, load_results, now
from pyhipbench._textfile import MAX_DEPTH, MAX_IR_DEPTH, check_data
from pyhipbench.cli.files import read_input

COPY_PTX = str(resources.files("pyhipbench") / "kernels" / "copy.ptx")
CANDIDATE = {"source": {"kind": "code-object", "path": COPY_PTX}, "kernel": "copy", "grid": [1], "block": [64],
             "args": ["array:float32:64", "array:float32:64", "int64:64"]}
SPACE = json.dumps([CANDIDATE])
STATS = {"median": 4.0, "ci_low": 3.9, "ci_high": 4.1, "rel_ci": 0.01, "p10": 3.95, "p90": 4.05, "outliers": 0}
ENTRY = {"kernel": "copy", "grid": [1024, 1, 1], "block": [256, 1, 1], "timer": "events", "cache_state": "warm",
         "stats_us": STATS, "samples": 16, "stop_reason": "precision", "rotation": {"sets": 1},
         "host_us_per_kernel": 1.0, "wall_s": 0.01, "device": {"name": "Fake GPU"}}
DEEP = 100_000


def _nested(levels: int) -> list:
    """Lists `levels` deep: [[[...]]]."""
    value: list = []
    for _ in range(levels - 1):
        value = [value]
    return value


def one_line_refusal(argv: list[str], capsys, code: int = 2) -> str:
    """The one stderr line `pyhipbench ARGV` refuses with (exit `code`, nothing on stdout)."""
    assert cli.main(argv) == code
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and "Traceback" not in captured.err
    return captured.err.rstrip("\n")


# -- search spaces ---------------------------------------------------------------------------------
SPACE_FILES = [  # (name, content, what the message says after the file's name)
    ("ff.json", SPACE[:20].encode() + b"\xff\xfe" + SPACE[20:].encode(), r"byte 20 \(0xff, line 1\) is not UTF-8; "
     "expected a sweep space as UTF-8 text"),
    ("latin1.json", SPACE.replace('"copy"', '"c\u00e9"').encode("latin-1"), r"byte \d+ \(0xe9, line 1\) is not UTF-8"),
    ("utf16.json", SPACE.encode("utf-16"), r"byte 0 \(0xff, line 1\) is not UTF-8"),
    ("ff.yaml", b"candidates:\n  - kernel: copy\xff\n", r"byte 28 \(0xff, line 2\) is not UTF-8"),
    ("deep.json", b"[" * DEEP + b"]" * DEEP, f"lists and objects nest more than {MAX_DEPTH} levels deep; expected a "
     "sweep space"),
    ("deep_objects.json", b'{"a": ' * DEEP + b"1" + b"}" * DEEP, "lists and objects nest more than 100 levels deep"),
    ("deep.yaml", b"a: " + b"[" * DEEP + b"]" * DEEP + b"\n", "lists and objects nest more than 100 levels deep"),
    ("deep_block.yaml", "".join("  " * i + "- \n" for i in range(1500)).encode(), "lists and objects nest more than 100 levels deep"),
    ("deep_mapping.yaml", "".join("  " * i + "a:\n" for i in range(1500)).encode(), "lists and objects nest more than 100 levels deep"),
    ("deep_tags.json", json.dumps([dict(CANDIDATE, tags={"t": _nested(150)})]).encode(),
     "lists and objects nest more than 100 levels deep"),
    ("cycle.yaml", b"candidates: &a [*a]\n", r"candidates\[0\] holds itself \(a YAML alias inside its own anchor\)"),
    ("laughs.yaml", ("l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
        f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 9)) + "candidates: [*l8]\n").encode(),
     r"l6\[0\]: YAML aliases repeat more than 1000000 values in all; expected a sweep space that they do not multiply"),
    ("timestamp.yaml", b"candidates: [{tags: {when: 2024-01-01}}]\n",
     r"candidates\[0\].tags.when=datetime.date\(2024, 1, 1\): a YAML timestamp, not JSON data"),
    ("binary.yaml", b"candidates: [{tags: {b: !!binary aGk=}}]\n", r"candidates\[0\].tags.b=b'hi': a bytes, not JSON"),
    ("set.yaml", b"candidates: [{tags: !!set {a, b}}]\n", r"candidates\[0\].tags=.*: a set, not JSON data"),
    ("int_key.yaml", b"candidates: [{1: 2}]\n", r"candidates\[0\]: key 1 \(int\) is not a string"),
    ("bad_date.yaml", b"candidates: [2024-02-30]\n", r"not YAML \(ValueError: day is out of range for month\)"),
    ("digits.yaml", b"candidates: [" + b"9" * 5000 + b"]\n", r"not YAML \(ValueError: Exceeds the limit"),
    ("nul.yaml", b"candidates: [a\x00]\n", r"not YAML \(unacceptable character #x0000 at offset 14"),
    ("two.yaml", b"a: 1\n---\nb: 2\n", r"not YAML \(expected a single document in the stream, but found another "
     r"document at line 2, column 1\)"),
    ("surrogate.json", SPACE.replace('"copy"', '"\\ud800"').encode(),
     r"\[0\].kernel: the string '\\ud800' holds a lone surrogate \(\\ud800 at index 0\), which is not text"),
    ("surrogate_key.json", b'[{"\\udfff": 1}]', r"\[0\] key '\\udfff': the string .* holds a lone surrogate"),
    ("huge_int.json", SPACE.replace('"grid": [1]', '"grid": [' + "9" * 400 + "]").encode(),
     r"\[0\].grid\[0\]: an integer of 1329 bits, beyond a float's range"),
    ("digits.json", b"[" + b"9" * 5000 + b"]", r"not JSON \(Exceeds the limit \(4300 digits\)"),
    # lists of floats alone (a report's samples) are counted whole, not walked: their aliases count all the same
    ("laughs_floats.yaml", ("l0: &l0 [1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5]\n" + "".join(
        f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 9)) + "candidates: [*l8]\n").encode(),
     r"l6\[0\]: YAML aliases repeat more than 1000000 values in all"),
    ("deep_floats.json", b"[" * MAX_DEPTH + b"[1.5, 2.5]" + b"]" * MAX_DEPTH,
     "lists and objects nest more than 100 levels deep"),
]


@pytest.mark.parametrize("name, content, message", SPACE_FILES, ids=[f[0] for f in SPACE_FILES])
def test_a_space_file_that_cannot_be_read_as_data_is_one_bench_error(tmp_path, name, content, message):
    if name.endswith(".yaml"):
        pytest.importorskip("yaml", reason="YAML spaces need pyyaml")
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(hb.BenchError, match=f"^{path}: {message}") as raised:
        hb.load_space(path)
    assert type(raised.value) is hb.BenchError and "\n" not in str(raised.value)


@pytest.mark.parametrize("name, content, message", SPACE_FILES[:6] + SPACE_FILES[10:13],
                         ids=[f[0] for f in SPACE_FILES[:6] + SPACE_FILES[10:13]])
def test_sweep_refuses_the_space_file_with_one_line_and_writes_nothing(tmp_path, capsys, name, content, message):
    if name.endswith(".yaml"):
        pytest.importorskip("yaml", reason="YAML spaces need pyyaml")
    path, out = tmp_path / name, tmp_path / "r.db"
    path.write_bytes(content)
    line = one_line_refusal(["sweep", str(path), "--out", str(out)], capsys)
    assert line.startswith(f"pyhipbench sweep: {path}: ")
    assert not out.exists()


def test_a_bad_space_leaves_the_database_it_would_resume_as_it_was(tmp_path, capsys):
    db = tmp_path / "r.db"
    store = Store(db)
    store.record(Row("c1", {"kernel": "copy"}, "ok", 1, now(), result=ENTRY))
    store.close()
    before = db.read_bytes()
    (tmp_path / "space.json").write_bytes(b"[" * DEEP)
    line = one_line_refusal(["sweep", str(tmp_path / "space.json"), "--out", str(db), "--resume"], capsys)
    assert "nest more than 100 levels deep" in line
    assert db.read_bytes() == before and load_results(db) == [{**ENTRY, "candidate_id": "c1", "tags": None}]


def test_a_list_of_floats_is_checked_in_one_pass():
    samples = [float(i) for i in range(1_000_000)]  # a report's times_us
    started = time.perf_counter()
    check_data({"results": [{"times_us": samples}]}, "r.json", "a report")
    assert time.perf_counter() - started < 0.5  # 0.05 s; value by value, 1 s


def test_yaml_aliases_within_bounds_are_read(tmp_path):
    pytest.importorskip("yaml", reason="YAML spaces need pyyaml")
    rows = [f"  - {{source: {{kind: code-object, path: {COPY_PTX}}}, kernel: copy, grid: [{g}], block: [64], "
            f"args: {'&args ' + json.dumps(CANDIDATE['args']) if g == 1 else '*args'}}}\n" for g in range(1, 2001)]
    path = tmp_path / "space.yaml"
    path.write_text("candidates:\n" + "".join(rows))
    loaded = hb.load_space(path)
    assert len(loaded) == 2000 and all(c.args == loaded[0].args for c in loaded)


def test_a_utf8_byte_order_mark_is_read_past(tmp_path):
    path = tmp_path / "space.json"
    path.write_bytes(b"\xef\xbb\xbf" + SPACE.encode())
    [candidate] = hb.load_space(str(path))  # a path as a string too
    assert candidate.kernel == "copy"


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_the_depth_limit_counts_every_list_and_object(tmp_path, suffix):
    if suffix == ".yaml":
        yaml = pytest.importorskip("yaml", reason="YAML spaces need pyyaml")
    # The top-level list, the candidate, its tags: 3 levels before the tags' own.
    for levels, ok in ((MAX_DEPTH - 3, True), (MAX_DEPTH - 2, False)):
        space = [dict(CANDIDATE, tags={"t": _nested(levels)})]
        path = tmp_path / f"space{suffix}"
        path.write_text(json.dumps(space) if suffix == ".json" else yaml.safe_dump(space))
        if ok:
            assert hb.load_space(path)[0].tags == {"t": _nested(levels)}
        else:
            with pytest.raises(hb.BenchError, match="nest more than 100 levels deep"):
                hb.load_space(path)


def test_a_space_given_as_python_data_is_checked_for_depth_cycles_and_keys():
    cycle: list = []
    cycle.append(cycle)
    with pytest.raises(hb.BenchError, match=r"^the space: \[0\].tags.t\[0\] holds itself; expected a sweep space "
                                            "without cycles"):
        hb.candidates_from_json([dict(CANDIDATE, tags={"t": cycle})])
    with pytest.raises(hb.BenchError, match="^the space: lists and objects nest more than 100 levels deep"):
        hb.candidates_from_json([dict(CANDIDATE, tags={"t": _nested(200)})])
    with pytest.raises(hb.BenchError, match=r"^the space: \[0\].source: key 1 \(int\) is not a string"):
        hb.candidates_from_json([dict(CANDIDATE, source={**CANDIDATE["source"], 1: "x"})])
    with pytest.raises(hb.BenchError, match=r"^the space: \[0\].source.text: the string '\\udc80' holds a lone "
                                            "surrogate"):
        hb.candidates_from_json([dict(CANDIDATE, source={"kind": "llvm-ir", "text": "\udc80"})])
    with pytest.raises(hb.BenchError, match=r"^the space: \[0\].bench.max_time_s: an integer of 1329 bits, beyond a "
                                            "float's range"):
        hb.candidates_from_json([dict(CANDIDATE, bench={"max_time_s": 10 ** 400})])
    # A tuner's own values still go: tuples, numpy integers.
    np = pytest.importorskip("numpy")
    [candidate] = hb.candidates_from_json([dict(CANDIDATE, grid=(np.int64(4),), tags={"t": (1, 2)})])
    assert candidate.grid == (4, 1, 1)


@pytest.mark.parametrize("kind, language", [("cuda-source", "CUDA"), ("hip-source", "HIP")])
def test_a_cpp_source_file_a_space_names_must_be_utf8(tmp_path, kind, language):
    (tmp_path / "k.cu").write_bytes(b'extern "C" __global__ void k() {} // caf\xe9\n')
    (tmp_path / "space.json").write_text(json.dumps([{"source": {"kind": kind, "path": "k.cu"}, "kernel": "k",
                                                      "grid": [1], "block": [1]}]))
    with pytest.raises(hb.BenchError, match=rf"^{tmp_path / 'space.json'}: candidate 0: {tmp_path / 'k.cu'}: byte 40 "
                                            rf"\(0xe9, line 1\) is not UTF-8; expected {language} C\+\+ source as "
                                            "UTF-8 text"):
        hb.load_space(tmp_path / "space.json")
    source_class = hb.CudaSource if kind == "cuda-source" else hb.HipSource
    with pytest.raises(hb.BenchError, match=rf"^{tmp_path / 'k.cu'}: byte 40 \(0xe9, line 1\) is not UTF-8"):
        source_class.from_file(tmp_path / "k.cu")


# -- reports and sweep databases for compare ---------------------------------------------------------
REPORT_FILES = [
    ("binary.json", b'[{"kernel": "co\x80\xffpy"}]', r"byte 15 \(0x80, line 1\) is not UTF-8; expected the JSON "
     "`pyhipbench run --out FILE.json` writes as UTF-8 text"),
    ("gzip.json", b"\x1f\x8b\x08\x00" + bytes(range(256)), r"byte 1 \(0x8b, line 1\) is not UTF-8"),
    ("deep.json", b"[" * DEEP + b"]" * DEEP, "lists and objects nest more than 100 levels deep; expected the JSON "
     "`pyhipbench run --out FILE.json` writes"),
    ("deep_stats.json", json.dumps([dict(ENTRY, stats_us=dict(STATS, extra=_nested(120)))]).encode(),
     "lists and objects nest more than 100 levels deep"),
    ("surrogate.json", json.dumps([dict(ENTRY, kernel="\ud83d")]).encode(),
     r"\[0\].kernel: the string '\\ud83d' holds a lone surrogate"),
    ("huge.json", json.dumps([ENTRY]).replace('"samples": 16', '"samples": ' + "1" * 330).encode(),
     r"\[0\].samples: an integer of \d+ bits, beyond a float's range"),
    ("not_json.json", b"median: 4\n", r"not a JSON report \(Expecting value at line 1\)"),
]


@pytest.mark.parametrize("name, content, message", REPORT_FILES, ids=[f[0] for f in REPORT_FILES])
def test_a_report_that_cannot_be_read_as_data_is_one_bench_error(tmp_path, capsys, name, content, message):
    path, good = tmp_path / name, tmp_path / "good.json"
    path.write_bytes(content)
    good.write_text(json.dumps([ENTRY]))
    with pytest.raises(hb.BenchError, match=f"^{path}: {message}"):
        report.load(path)
    for argv in (["compare", str(path), str(good)], ["compare", str(good), str(path)]):
        assert one_line_refusal(argv, capsys).startswith(f"pyhipbench compare: {path}: ")


def _database(path: Path, result: object) -> Path:
    """A sweep database with one measured candidate, c1, whose stored result is `result` as is."""
    store = Store(path)
    store.record(Row("c1", {"kernel": "copy"}, "ok", 1, now(), result=ENTRY))
    store.close()
    db = sqlite3.connect(path)
    db.execute("UPDATE results SET result = ?", (result,))
    db.commit()
    db.close()
    return path


@pytest.mark.parametrize("stored, message", [
    (b"\xff\xfe{", r"the result of candidate c1: byte 0 \(0xff, line 1\) is not UTF-8; expected the JSON of a result"),
    ("not json", r"the result of candidate c1: not JSON \(Expecting value at line 1\)"),
    ("[" * DEEP, "the result of candidate c1: lists and objects nest more than 100 levels deep"),
    (None, "the result of candidate c1 is NULL; expected the JSON of a result"),
    ('{"kernel": "\\udc00"}', r"the result of candidate c1: kernel: the string '\\udc00' holds a lone surrogate"),
], ids=["binary", "not-json", "deep", "null", "surrogate"])
def test_a_sweep_database_result_that_cannot_be_read_is_named_by_its_candidate(tmp_path, capsys, stored, message):
    db = _database(tmp_path / "r.db", stored)
    (tmp_path / "good.json").write_text(json.dumps([ENTRY]))
    with pytest.raises(hb.BenchError, match=f"^{db}: {message}"):
        load_results(db)
    line = one_line_refusal(["compare", str(db), str(tmp_path / "good.json")], capsys)
    assert line.startswith(f"pyhipbench compare: {db}: the result of candidate c1")


# -- LLVM IR text ----------------------------------------------------------------------------------
@pytest.mark.parametrize("ir", [
    "@g = global " + "[1 x " * 5000 + "i32" + "]" * 5000 + " zeroinitializer\n",
    "define i32 @f() {\n  ret i32 " + "add (i32 " * 20000 + "1, i32 1)" + ", i32 1)" * 19999 + "\n}\n",
    "!0 = !{" * 3000 + "}" * 3000 + "\n",
], ids=["types", "constant-expressions", "metadata"])
def test_ir_nested_deeper_than_llvm_parses_is_an_ir_error_not_a_crash(tmp_path, capsys, ir):
    path = tmp_path / "deep.ll"
    path.write_text(ir)
    with pytest.raises(hb.IRError, match=rf"^{path}: brackets nest \d+ levels deep; expected LLVM IR text nested at "
                                         rf"most {MAX_IR_DEPTH} levels"):
        read_input(path)
    for argv in (["compile", str(path), "--target", "sm_90", "-o", str(tmp_path / "k.ptx")],
                 ["run", str(path), "--kernel", "f", "--grid", "1", "--block", "1"]):
        line = one_line_refusal(argv, capsys, code=1)
        assert line.startswith(f"pyhipbench {argv[0]}: {path}: brackets nest ")
    assert not (tmp_path / "k.ptx").exists()


def test_brackets_in_ir_strings_and_comments_do_not_count(tmp_path):
    path = tmp_path / "k.ll"
    text = ('; ' + "(" * 5000 + "\n" + '@s = constant [5000 x i8] c"' + "[" * 5000 + '"\n'
            + "define void @f() {\n  ret void\n}\n")
    path.write_text(text)
    assert read_input(path) == ("ir", text)
