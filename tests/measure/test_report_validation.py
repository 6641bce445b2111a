"""`compare` checks a report wholly before comparing: every field it and the rows read, their types and
ranges, and no kernel and launch twice; a sweep database's results alike. One BenchError naming the file,
the entry's index and the field; the CLI's exit 2 with one line, nothing compared or printed."""
from __future__ import annotations

import copy
import json

import pytest

import pyhipbench as hb
from pyhipbench import cli
from pyhipbench._results import report
from pyhipbench._results.store import Row, Store, now

STATS = {"median": 4.0, "ci_low": 3.9, "ci_high": 4.1, "rel_ci": 0.025, "p10": 3.95, "p90": 4.05, "outliers": 0,
         "mean": 4.0, "stdev": 0.05, "min": 3.9, "max": 4.2}
ENTRY = {"kernel": "copy", "device": {"name": "Fake GPU"}, "grid": [1024, 1, 1], "block": [256, 1, 1],
         "shared_bytes": 0, "target": "sm_90", "timer": "events", "cache_state": "warm", "stop_reason": "precision",
         "slower_than_us": None, "precision": 0.01, "rotation": {"sets": 1, "wanted": 1, "set_bytes": 0,
                                                                  "llc_bytes": 0, "reason": ""},
         "samples": 16, "warmup": 2, "launches_per_sample": 1, "host_us_per_kernel": 1.0, "wall_s": 0.01,
         "verified": False, "stats_us": STATS, "times_us": [4.0] * 16}
MISSING = object()


def entry(**changes) -> dict:
    """ENTRY with `changes`: "stats_us.median" and "device.name" reach inside; MISSING drops a field."""
    result = copy.deepcopy(ENTRY)
    for key, value in changes.items():
        holder, name = result, key
        if "." in key:
            outer, name = key.split(".")
            holder = result[outer]
        if value is MISSING:
            del holder[name]
        else:
            holder[name] = value
    return result


def write(path, data) -> str:
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def refusal(argv: list[str], capsys) -> str:
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and "Traceback" not in captured.err
    return captured.err.rstrip("\n")


BAD_ENTRIES = [  # (changes to the entry, what the message says after "entry 0: ")
    (dict(kernel=7), r"kernel=7: expected the kernel's name \(a non-empty string\)"),
    (dict(kernel=""), "kernel='': expected the kernel's name"),
    (dict(kernel=None), "kernel=None: expected the kernel's name"),
    (dict(grid=1024), r"grid=1024: expected a list of 1 to 3 positive integers \(as `run --out` writes it"),
    (dict(grid="1024"), "grid='1024': expected a list of 1 to 3 positive integers"),
    (dict(grid=[]), r"grid=\[\]: expected 1 to 3 integers, got 0"),
    (dict(grid=[1, 1, 1, 1]), r"grid=\[1, 1, 1, 1\]: expected 1 to 3 integers, got 4"),
    (dict(grid=[0, 1, 1]), r"grid\[0\]=0: out of range, expected an integer in \[1, 4294967295\]"),
    (dict(grid=[2 ** 32]), r"grid\[0\]=4294967296: out of range"),
    (dict(grid=[1.5]), r"grid\[0\]=1.5: expected an integer in \[1, 4294967295\], got float"),
    (dict(grid=[True]), r"grid\[0\]=True: expected an integer .*, got a bool"),
    (dict(block=[-256, 1, 1]), r"block\[0\]=-256: out of range"),
    (dict(block={"x": 1}), r"block=\{'x': 1\}: expected a list of 1 to 3 positive integers"),
    (dict(timer=None), r"timer=None: expected the timer \(a non-empty string\)"),
    (dict(timer=3), "timer=3: expected the timer"),
    (dict(cache_state=[]), r"cache_state=\[\]: expected the cache state"),
    (dict(stop_reason=False), "stop_reason=False: expected the stop reason"),
    (dict(stats_us=[4.0]), r"stats_us=\[4.0\]: expected an object with median, ci_low, ci_high, rel_ci, p10, p90, "
                           "outliers"),
    (dict(stats_us="4.0"), "stats_us='4.0': expected an object"),
    ({"stats_us.p10": MISSING}, "stats_us: missing p10; expected an object with median"),
    ({"stats_us.median": "4.0"}, r"stats_us.median='4.0': expected a finite number > 0, got str"),
    ({"stats_us.median": None}, r"stats_us.median=None: expected a finite number > 0, got NoneType"),
    ({"stats_us.median": True}, r"stats_us.median=True: expected a finite number > 0, got bool"),
    ({"stats_us.median": 0.0, "stats_us.ci_low": 0.0, "stats_us.ci_high": 0.0}, r"stats_us.median=0.0: out of range, "
                                                                                 "expected a finite number > 0"),
    ({"stats_us.median": -4.0, "stats_us.ci_low": -4.1, "stats_us.ci_high": -3.9}, "stats_us.median=-4.0: out of "
                                                                                   "range"),
    ({"stats_us.median": float("nan")}, "stats_us.median=nan: out of range, expected a finite number > 0"),
    ({"stats_us.median": float("inf")}, "stats_us.median=inf: out of range"),
    ({"stats_us.ci_low": float("-inf")}, "stats_us.ci_low=-inf: out of range, expected a finite number >= 0"),
    ({"stats_us.ci_high": float("nan")}, "stats_us.ci_high=nan: out of range"),
    ({"stats_us.ci_low": 4.5, "stats_us.ci_high": 3.5}, r"stats_us: ci_low=4.5, median=4.0, ci_high=3.5: expected "
                                                        "ci_low <= median <= ci_high"),
    ({"stats_us.ci_low": 4.01}, "stats_us: ci_low=4.01, median=4.0, ci_high=4.1: expected ci_low <= median"),
    ({"stats_us.ci_high": 3.99}, "stats_us: ci_low=3.9, median=4.0, ci_high=3.99: expected ci_low <= median <= "
                                 "ci_high"),
    ({"stats_us.rel_ci": -0.1}, "stats_us.rel_ci=-0.1: out of range, expected a finite number >= 0"),
    ({"stats_us.p90": "x"}, "stats_us.p90='x': expected a finite number >= 0, got str"),
    ({"stats_us.outliers": -1}, r"stats_us.outliers=-1: out of range, expected an integer >= 0"),
    ({"stats_us.outliers": 1.0}, r"stats_us.outliers=1.0: expected an integer >= 0, got float"),
    (dict(samples=0), r"samples=0: out of range, expected an integer >= 1"),
    (dict(samples="16"), r"samples='16': expected an integer >= 1, got str"),
    (dict(rotation=None), "rotation=None: expected an object with sets"),
    (dict(rotation={}), "rotation: missing sets"),
    ({"rotation.sets": 0}, r"rotation.sets=0: out of range, expected an integer >= 1"),
    (dict(host_us_per_kernel=float("nan")), "host_us_per_kernel=nan: out of range"),
    (dict(wall_s=-1), "wall_s=-1: out of range, expected a finite number >= 0"),
    (dict(device="Fake GPU"), "device='Fake GPU': expected an object with name"),
    ({"device.name": 0}, "device.name=0: expected the device's name"),
    (dict(verified="yes"), "verified='yes': expected true or false"),
    (dict(target=90), "target=90: expected the code object's target"),
]


@pytest.mark.parametrize("changes, message", BAD_ENTRIES, ids=[m.split(":")[0].split("=")[0] + f"-{i}"
                                                               for i, (_, m) in enumerate(BAD_ENTRIES)])
def test_each_field_is_checked_naming_file_entry_and_field(tmp_path, capsys, changes, message):
    bad = write(tmp_path / "bad.json", [entry(kernel="other"), entry(**changes)])
    good = write(tmp_path / "good.json", [entry()])
    with pytest.raises(hb.BenchError, match=f"^{bad}: entry 1: {message}") as raised:
        report.load(tmp_path / "bad.json")
    assert type(raised.value) is hb.BenchError
    for argv in (["compare", bad, good], ["compare", good, bad]):
        assert refusal(argv, capsys) == f"pyhipbench compare: {raised.value}"


@pytest.mark.parametrize("field", report.FIELDS)
def test_a_missing_field_is_named(tmp_path, capsys, field):
    bad = write(tmp_path / "bad.json", [entry(**{field: MISSING})])
    line = refusal(["compare", bad, write(tmp_path / "good.json", [entry()])], capsys)
    assert line.startswith(f"pyhipbench compare: {bad}: entry 0 is not a pyhipbench result: missing {field}; "
                           "expected kernel, grid, block")


@pytest.mark.parametrize("data, message", [
    ('"copy"', r"entry 0 is not a pyhipbench result \('copy'\); expected an object with kernel, grid"),
    ("[1, 2]", r"entry 0 is not a pyhipbench result \(1\)"),
    ("[null]", r"entry 0 is not a pyhipbench result \(None\)"),
    ("[]", "holds no results; expected the JSON `pyhipbench run --out FILE.json` writes"),
    ("{}", "entry 0 is not a pyhipbench result: missing kernel, grid, block"),
])
def test_a_report_of_something_else_is_refused(tmp_path, data, message):
    path = tmp_path / "r.json"
    write(path, data)
    with pytest.raises(hb.BenchError, match=f"^{path}: {message}"):
        report.load(path)


def test_the_same_kernel_and_launch_twice_is_refused_naming_both_entries(tmp_path, capsys):
    bad = write(tmp_path / "twice.json", [entry(), entry(kernel="other"),
                                          entry(grid=[1024], **{"stats_us.median": 4.05}, times_us=[4.05] * 16)])
    good = write(tmp_path / "good.json", [entry()])
    line = refusal(["compare", good, bad], capsys)
    assert line == (f"pyhipbench compare: {bad}: entries 0 and 2 are both copy grid 1024x1x1 block 256x1x1 (warm, "
                    "events); expected each kernel and launch once (compare matches results by kernel name, grid, "
                    "block, cache state and timer, so it cannot tell them apart)")
    # Another timer or cache state is another launch.
    assert report.load(write(tmp_path / "ok.json", [entry(), entry(timer="cupti"), entry(cache_state="clean-cold")]))


def test_a_nan_median_is_never_compared(tmp_path, capsys):
    nan = tmp_path / "nan.json"
    nan.write_text("[" + json.dumps(entry()).replace('"median": 4.0', '"median": NaN') + "]")
    good = write(tmp_path / "good.json", [entry()])
    for argv in (["compare", str(nan), good], ["compare", good, str(nan)]):
        line = refusal(argv, capsys)
        assert line.endswith("entry 0: stats_us.median=nan: out of range, expected a finite number > 0")


def test_what_a_result_may_leave_out_and_how_launches_match(tmp_path, capsys):
    """verified and target may be missing (older reports); extra fields go; one result object is a report;
    [1024] is the launch [1024, 1, 1]; integers are numbers."""
    a = write(tmp_path / "a.json", entry(verified=MISSING, target=MISSING, extra={"any": [1]}))
    b = write(tmp_path / "b.json", [entry(grid=[1024], block=[256], target=None, times_us=[8] * 16,
                                          stats_us={**STATS, "median": 8, "ci_low": 7, "ci_high": 9})])
    assert cli.main(["compare", a, b]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and lines[2].startswith("copy grid 1024x1x1 block 256x1x1 (warm, events)")
    assert lines[2].split()[-3:] == ["2.000", "2.000–2.000", "slower"]


def test_a_kernel_name_with_a_line_break_stays_on_one_line(tmp_path, capsys):
    a = write(tmp_path / "a.json", [entry(kernel="co\npy")])
    assert cli.main(["compare", a, a]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and lines[2].startswith("'co\\npy' grid 1024x1x1")


def _database(path, results: list[dict]):
    store = Store(path)
    for i, result in enumerate(results):
        store.record(Row(f"c{i}", {"kernel": result["kernel"]}, "ok", 1, now(), result=result))
    store.close()
    return str(path)


@pytest.mark.parametrize("results, message", [
    ([entry(**{"stats_us.median": float("nan")})], "entry 0: stats_us.median=nan: out of range"),
    ([entry(grid=5)], "entry 0: grid=5: expected a list of 1 to 3 positive integers"),
    ([entry(stats_us={"median": 4.0})], "entry 0: stats_us: missing ci_low, ci_high, rel_ci, p10, p90, outliers"),
    ([{"kernel": "copy", "stats_us": {"median": 2.0}}], "entry 0 is not a pyhipbench result: missing grid, block"),
    ([entry(), entry(tags_differ=True)], "entries 0 and 1 are both copy grid 1024x1x1 block 256x1x1 (warm, events)"),
    ([], "holds no results"),
], ids=["nan", "bare-grid", "stats", "partial", "twice", "empty"])
def test_a_sweep_database_goes_through_the_same_checks(tmp_path, capsys, results, message):
    db = _database(tmp_path / "r.db", results)
    good = write(tmp_path / "good.json", [entry()])
    for argv in (["compare", db, good], ["compare", good, db]):
        assert refusal(argv, capsys).startswith(f"pyhipbench compare: {db}: {message}")
