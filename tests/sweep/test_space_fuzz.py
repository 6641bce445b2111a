"""Fuzzing the search-space reader, JSON and YAML: whatever a space file holds, only the package's own errors
escape `load_space`.

Hypothesis writes spaces built from real pieces (sources of every kind,
candidate fields, defaults) with arbitrary JSON-ish values put in or fields
dropped, serialised as JSON and as YAML; YAML texts assembled from its syntax
(anchors, aliases, tags, flow and block collections, timestamps, merge keys);
and raw or mutated bytes. `load_space` either refuses the file with one line
of a pyhipbench.Error naming it, or gives candidates whose id and JSON form
can be taken. The example count is bounded (PYHIPBENCH_FUZZ_EXAMPLES,
default 150 per target) so CI stays fast.
"""
from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path

import pytest

pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import pyhipbench as hb
from pyhipbench._sweep.candidate import CANDIDATE_FIELDS

EXAMPLES = int(os.environ.get("PYHIPBENCH_FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
COPY_PTX = str(resources.files("pyhipbench") / "kernels" / "copy.ptx")
IR = 'target triple = "amdgcn-amd-amdhsa"\ndefine amdgpu_kernel void @copy(ptr addrspace(1) %p) {\n  ret void\n}\n'
SOURCES = [{"kind": "code-object", "path": COPY_PTX}, {"kind": "code-object", "path": "missing.ptx"},
           {"kind": "llvm-ir", "text": IR}, {"kind": "llvm-ir", "path": COPY_PTX},
           {"kind": "cuda-source", "text": "__global__ void k() {}"}, {"kind": "hip-source", "path": COPY_PTX},
           {"kind": "triton", "function": "no_such_module_anywhere:add"}, {"kind": "triton", "function": "json:dumps"},
           {"kind": "unknown"}]
CANDIDATE = {"source": SOURCES[0], "kernel": "copy", "grid": [1], "block": [64],
             "args": ["array:float32:64", "array:float32:64", "int64:64"], "bench": {"cache": "warm"},
             "tags": {"tile": 1}}
CHAIN = {"source": SOURCES[0], "bench": {"cache": "warm"}, "launches": [
    {"kernel": "copy", "grid": [1], "block": [64], "args": ["array:float32:64", "array:float32:64", "int64:64"]},
    {"kernel": "copy", "grid": [2], "block": [32], "args": ["ref:0.1", "array:float32:64", "ref:0.2"]}]}

text = st.text(alphabet=st.one_of(st.characters(), st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)),
               max_size=8)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2 ** 70), 2 ** 70), st.integers(1, 9).map(lambda d: d * 10 ** 400),
                    st.floats(allow_nan=True, allow_infinity=True), text,
                    st.sampled_from([0, 1, -1, 0.5, 2 ** 32, "", "copy", "int64:1", "array:float32:1", "auto"]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(text, inner, max_size=4)), max_leaves=12)
field_names = st.one_of(st.sampled_from(CANDIDATE_FIELDS), text)


@st.composite
def candidates(draw) -> object:
    """A real candidate with a few fields replaced (by other sources or arbitrary values) or dropped."""
    candidate = json.loads(json.dumps(dict(CANDIDATE, source=draw(st.sampled_from(SOURCES)))))
    for name in draw(st.lists(field_names, max_size=3)):
        if draw(st.booleans()):
            candidate.pop(name, None)
        else:
            candidate[name] = draw(values)
    return candidate


spaces = st.one_of(
    values,
    st.lists(st.one_of(candidates(), values), max_size=3),
    st.fixed_dictionaries({"candidates": st.lists(candidates(), max_size=3)},
                          optional={"defaults": st.one_of(candidates(), values), "extra": values}),
    st.tuples(candidates(), st.integers(1, 300)).map(lambda c: {"candidates": [dict(c[0], tags={"t": json.loads(
        "[" * c[1] + "]" * c[1])})]}),
)
YAML_PIECES = st.sampled_from(["candidates:", "defaults:", "\n", "\n  ", "- ", "[", "]", "{", "}", ",", ": ", "&a ",
                               "*a", "*b", "!!binary aGk=", "!!set", "!!python/object:os.system", "!!int", "!!float",
                               "? ", "<<: ", "2024-02-30", "2024-01-01 10:00:00", ".nan", ".inf", "0x1F", "0o17",
                               "1:20:30", "~", "yes", "'q'", '"\\ud800"', '"\\x00"', "\t", "---\n", "...\n", "%YAML 1.1\n",
                               "kernel: copy", "grid: [1]", "block: [64]", "9" * 5000, "\x00", "\ufeff", "|\n  text"])


def check(path: Path) -> None:
    """The reader's verdict on `path`: the package's own error on one line naming it, or candidates."""
    try:
        loaded = hb.load_space(path)
    except hb.Error as e:
        assert "\n" not in str(e) and str(e).startswith(str(path)), str(e)
        return
    for candidate in loaded:
        assert isinstance(candidate, hb.Candidate) and len(candidate.id) == 32
        json.dumps(candidate.to_json(), allow_nan=False)


@FUZZ
@given(space=spaces)
@example(space=[CANDIDATE])
@example(space={"defaults": CANDIDATE, "candidates": [{"grid": [2]}, {"grid": [3], "tags": {}}]})
@example(space=[dict(CANDIDATE, kernel="\ud800")])
@example(space=[dict(CANDIDATE, bench={"max_time_s": 10 ** 400})])
@example(space=[CHAIN, {**CHAIN, "launches": "module", "grid": [1], "block": [64]}])
@example(space=[{**CHAIN, "launches": [CHAIN["launches"][0], {"kernel": "copy", "args": ["ref:9.9", None]}]}])
@example(space={"defaults": CANDIDATE, "candidates": [CHAIN, {"launches": [{"kernel": 7}]}, {"launches": {}}]})
def test_space_values_as_json(tmp_path, space):
    path = tmp_path / "space.json"
    path.write_text(json.dumps(space))
    check(path)


@FUZZ
@given(space=spaces)
@example(space=[CANDIDATE])
@example(space=[CHAIN])
def test_space_values_as_yaml(tmp_path, space):
    yaml = pytest.importorskip("yaml", reason="YAML spaces need pyyaml")
    try:
        written = yaml.safe_dump(space, allow_unicode=False)
    except yaml.YAMLError:  # what pyyaml cannot write (some surrogates) is not a file a user has
        return
    path = tmp_path / "space.yaml"
    path.write_text(written)
    check(path)


@FUZZ
@given(pieces=st.lists(YAML_PIECES, max_size=25))
@example(pieces=["candidates: ", "&a ", "[", "*a", "]"])
@example(pieces=["candidates: "] + ["["] * 2000)
@example(pieces=["a: &a [1]\n", "candidates: ", "[", "*a", ",", "*a", "]"])
def test_yaml_syntax(tmp_path, pieces):
    pytest.importorskip("yaml", reason="YAML spaces need pyyaml")
    path = tmp_path / "space.yaml"
    path.write_text("".join(pieces), encoding="utf-8", errors="surrogatepass")
    check(path)


@FUZZ
@given(suffix=st.sampled_from([".json", ".yaml"]), data=st.data())
def test_space_bytes(tmp_path, suffix, data):
    if suffix == ".yaml":
        pytest.importorskip("yaml", reason="YAML spaces need pyyaml")
    valid = json.dumps([CANDIDATE, dict(CANDIDATE, grid=[2])]).encode()
    content = data.draw(st.one_of(
        st.binary(max_size=300),
        st.tuples(st.integers(0, len(valid)), st.lists(st.tuples(st.integers(0, len(valid) - 1),
                                                                st.integers(0, 255)), max_size=6))
        .map(lambda cut_flips: _mutated(valid, *cut_flips)),
        st.sampled_from([b"", b"\xef\xbb\xbf", b"\xff" + valid, valid + b"\x00", b"[" * 100_000,
                         b"- " * 5000, b"a:\n" + b" " * 10000 + b"b", "é".encode("latin-1") + valid])))
    path = tmp_path / f"space{suffix}"
    path.write_bytes(content)
    check(path)


def _mutated(data: bytes, cut: int, flips: list[tuple[int, int]]) -> bytes:
    out = bytearray(data)
    for at, byte in flips:
        out[at] = byte
    return bytes(out[:cut])
