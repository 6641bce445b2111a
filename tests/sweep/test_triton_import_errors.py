"""A Triton candidate's module that fails to import, however it fails: a BenchError quoting the exception.

Importing "module:function" runs the user's module: a SyntaxError, an
exception of its own, SystemExit, an ImportError inside it, a module
__getattr__ that raises are each one BenchError naming the function and
quoting the exception's type and message: the space's error when the space
is read (the CLI's exit 2, one line, nothing written), the candidate's
`invalid` failure when only the worker's import fails, the sweep going on.
KeyboardInterrupt is the user's, and is not caught.
"""
from __future__ import annotations

import importlib
import json
import re
import sqlite3
import sys
import uuid
from importlib import resources

import pytest

pytest.importorskip("triton", reason="Triton is not installed (pip install triton): Triton sources need it")

import pyhipbench as hb
from pyhipbench import cli
from pyhipbench._results.store import Store
from pyhipbench._sweep.scheduler import run
from pyhipbench._sweep.worker import INVALID

from fakes.host_backend import HostBackend
from sweep_helpers import InProcess

COPY_PTX = str(resources.files("pyhipbench") / "kernels" / "copy.ptx")
GOOD = ("import triton\n\n\n@triton.jit\ndef add(x, y, out, n):\n    pass\n")
BROKEN = [  # (the module's text, what the message quotes after "function='M:add': ")
    ("import triton\n@triton.jit\ndef add(x:\n    pass\n",
     r"importing 'M' raised SyntaxError: '\(' was never closed \(M.py, line 3\)"),
    ("raise RuntimeError('the module refuses to load')\n", "importing 'M' raised RuntimeError: the module refuses to load"),
    ("import sys\nsys.exit(3)\n", "importing 'M' raised SystemExit: 3"),
    ("raise SystemExit\n", "importing 'M' raised SystemExit$"),
    ("x = 1 / 0\n", "importing 'M' raised ZeroDivisionError: division by zero"),
    ("raise ValueError('line one\\n  line two')\n", "importing 'M' raised ValueError: line one line two$"),
    ("class Odd(Exception):\n    def __str__(self):\n        raise TypeError\nraise Odd()\n",
     r"importing 'M' raised Odd: \(its message cannot be shown\)"),
    ("import no_such_module_of_anyone\n", r"cannot import 'M' \(No module named 'no_such_module_of_anyone'\)"),
    ("def __getattr__(name):\n    raise KeyError(name)\n", "looking up 'add' in M raised KeyError: 'add'"),
    ("add = 42\n", r"M has no @triton.jit function 'add' \(found 42\)"),
]
IDS = ["syntax", "raises", "exit-3", "exit", "zero-division", "multi-line", "unprintable", "inner-import",
       "module-getattr", "not-jit"]


@pytest.fixture
def module_folder(tmp_path, monkeypatch):
    """A folder on sys.path for the test's modules; each module's name is new, so none is imported yet."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    names: list[str] = []

    def write(text: str) -> str:
        name = f"tmod_{uuid.uuid4().hex[:12]}"
        (tmp_path / f"{name}.py").write_text(text)
        names.append(name)
        return name

    yield write
    for name in names:
        sys.modules.pop(name, None)


def expected(message: str, module: str) -> str:
    return f"function='{module}:add': " + message.replace("M", module)


@pytest.mark.parametrize("text, message", BROKEN, ids=IDS)
def test_triton_source_refuses_a_module_that_fails_to_import(module_folder, text, message):
    module = module_folder(text)
    with pytest.raises(hb.BenchError, match="^" + expected(message, module)) as raised:
        hb.TritonSource(function=f"{module}:add")
    assert type(raised.value) is hb.BenchError and "\n" not in str(raised.value)


@pytest.mark.parametrize("text, message", BROKEN, ids=IDS)
def test_a_space_naming_it_is_refused_with_one_line_and_nothing_written(module_folder, tmp_path, capsys, text,
                                                                        message):
    module = module_folder(text)
    space, out = tmp_path / "space.json", tmp_path / "r.db"
    space.write_text(json.dumps([{"source": {"kind": "triton", "function": f"{module}:add"}, "grid": [1],
                                  "args": ["array:float32:64"] * 3 + ["int32:64"]}]))
    with pytest.raises(hb.BenchError, match=f"^{space}: candidate 0: " + expected(message, module)):
        hb.load_space(space)
    assert cli.main(["sweep", str(space), "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert captured.err.startswith(f"pyhipbench sweep: {space}: candidate 0: function='{module}:add': ")
    assert not out.exists()


def test_keyboard_interrupt_while_importing_is_not_caught(module_folder):
    module = module_folder("raise KeyboardInterrupt\n")
    with pytest.raises(KeyboardInterrupt):
        hb.TritonSource(function=f"{module}:add")


@pytest.mark.parametrize("text, message", BROKEN[:5], ids=IDS[:5])
def test_a_module_failing_in_the_worker_fails_that_candidate_and_the_sweep_goes_on(
        module_folder, tmp_path, fake_libraries, fake_driver_cuda, text, message):
    module = module_folder(GOOD)
    bench = {"cache": "warm", "max_time_s": 0.05, "timer": "events"}
    candidates = hb.candidates_from_json([
        {"source": {"kind": "triton", "function": f"{module}:add"}, "grid": [1], "bench": bench,
         "args": ["array:float32:64"] * 3 + ["int32:64"]},
        {"source": {"kind": "code-object", "path": COPY_PTX}, "kernel": "copy", "grid": [1], "block": [64],
         "bench": bench, "args": ["array:float32:64", "array:float32:64", "int64:64"]}])
    # The space was read; the module breaks before the worker imports it (a worker is a fresh process).
    (tmp_path / f"{module}.py").write_text(text)
    sys.modules.pop(module)
    importlib.invalidate_caches()
    device = hb.Device.from_backend(HostBackend(backend="cuda", arch="sm_90"),
                                    hb._core.load_driver("cuda", str(fake_libraries["cuda"])))
    summary = run(candidates, Store(tmp_path / "r.db"), InProcess(device), compile_workers=1)
    assert (summary.measured, summary.failed) == (1, 1)
    rows = {cid: (status, reason, error) for cid, status, reason, error in sqlite3.connect(tmp_path / "r.db").execute(
        "SELECT candidate_id, status, reason, error FROM results")}
    triton, copy = (rows[c.id] for c in candidates)
    assert triton[:2] == ("failed", INVALID)
    assert re.match("BenchError: " + expected(message, module), triton[2]), triton[2]
    assert copy[:2] == ("ok", None)
