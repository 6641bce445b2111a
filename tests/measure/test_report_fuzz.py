"""Fuzzing compare's report reader: whatever a report file holds, only the package's own errors escape.

Hypothesis writes JSON values shaped like a report (a real entry with fields
replaced by arbitrary JSON-ish values or dropped, NaN, infinities, integers
beyond a float, lone surrogates, nesting) and raw or mutated bytes to a file.
`report.load` either refuses it with a pyhipbench.Error or gives results that
compare, the CSV and markdown rows all take; `pyhipbench compare` exits 0 or 2
with one line. The example count is bounded (PYHIPBENCH_FUZZ_EXAMPLES,
default 150 per target) so CI stays fast.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path

import pytest

pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import pyhipbench as hb
from pyhipbench import cli
from pyhipbench._results import report
from pyhipbench._results.comparison import compare

EXAMPLES = int(os.environ.get("PYHIPBENCH_FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
STATS = {"median": 4.0, "ci_low": 3.9, "ci_high": 4.1, "rel_ci": 0.025, "p10": 3.95, "p90": 4.05, "outliers": 0}
ENTRY = {"kernel": "copy", "grid": [1024, 1, 1], "block": [256, 1, 1], "timer": "events", "cache_state": "warm",
         "stats_us": STATS, "samples": 16, "stop_reason": "precision", "rotation": {"sets": 1},
         "host_us_per_kernel": 1.0, "wall_s": 0.01, "device": {"name": "Fake GPU"}, "verified": False,
         "target": "sm_90"}

text = st.text(alphabet=st.one_of(st.characters(), st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)),
               max_size=8)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2 ** 70), 2 ** 70), st.integers(1, 9).map(lambda d: d * 10 ** 400),
                    st.floats(allow_nan=True, allow_infinity=True), text,
                    st.sampled_from([0, 1, -1, 0.0, -0.0, 1e-300, 1e308, 2 ** 32, "", "copy", "4.0", [], {}]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(text, inner, max_size=4)), max_leaves=12)
fields = st.sampled_from(sorted(set(ENTRY) | {f"stats_us.{s}" for s in STATS} | {"rotation.sets", "device.name"}))


@st.composite
def entries(draw) -> object:
    """ENTRY with a few fields replaced by arbitrary values or dropped."""
    entry = json.loads(json.dumps(ENTRY))
    for field in draw(st.lists(fields, max_size=4)):
        holder, name = entry, field
        if "." in field:
            outer, name = field.split(".")
            holder = entry[outer] if isinstance(entry.get(outer), dict) else {}
        if draw(st.booleans()):
            holder.pop(name, None)
        else:
            holder[name] = draw(values)
    return entry


reports = st.one_of(values, entries(), st.lists(st.one_of(entries(), values), max_size=4),
                    st.tuples(entries(), st.integers(1, 300)).map(lambda e: json.loads("[" * e[1] + json.dumps(e[0])
                                                                                       + "]" * e[1])))


def _mutated(data: bytes, draw) -> bytes:
    data = bytearray(data[:draw(st.integers(0, len(data)))])
    for _ in range(draw(st.integers(0, 6))):
        if data:
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    return bytes(data)


def check_file(path: Path, capsys) -> None:
    """The reader's verdict on `path`: the package's own error, or results everything downstream takes."""
    try:
        results = report.load(path)
    except hb.Error as e:
        assert "\n" not in str(e) and str(e).startswith(str(path))
        verdict = None
    else:
        # A result against itself: never faster or slower (wide intervals cannot say "same" either).
        assert all(c.verdict in ("same", "can't tell") and c.ratio == 1.0 for c in compare(results, results))
        report.render(path.with_suffix(".csv"), results, {})
        report.render(path.with_suffix(".md"), results, {})
        verdict = 0
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli.main(["compare", str(path), str(path)])
    err = capsys.readouterr().err
    assert code == (2 if verdict is None else 0), err
    assert "Traceback" not in err
    if code == 2:
        assert err.count("\n") == 1
    else:  # a report without an environment is compared, with a warning that says so
        assert all(line.startswith("pyhipbench compare: warning: ") for line in err.splitlines()), err
    if code == 0:
        assert len(out.getvalue().splitlines()) == 2 + len(results)  # the rule, the header, a row each


@FUZZ
@given(data=reports)
@example(data=[ENTRY])
@example(data=ENTRY)
@example(data=[dict(ENTRY, stats_us=dict(STATS, median=float("nan")))])
@example(data=[ENTRY, dict(ENTRY, grid=[1024])])
def test_report_values(tmp_path, capsys, data):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    check_file(path, capsys)


@FUZZ
@given(st.data())
def test_report_bytes(tmp_path, capsys, data):
    valid = json.dumps([ENTRY, dict(ENTRY, kernel="scale")]).encode()
    content = data.draw(st.one_of(st.binary(max_size=300), st.just(valid).map(lambda b: _mutated(b, data.draw)),
                                  st.sampled_from([b"", b"\xef\xbb\xbf", b"\xff" + valid, valid + b"\x00",
                                                   b"[" * 100_000, b"{\"a\":" * 50_000])))
    path = tmp_path / "r.json"
    path.write_bytes(content)
    check_file(path, capsys)
