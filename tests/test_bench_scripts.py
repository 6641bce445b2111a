"""bench/ scripts refuse bad options with one line naming the value, before touching a GPU."""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


@pytest.mark.parametrize("script, argv, message", [
    ("throughput", ["--caches", "cold"], "--caches 'cold': expected cache states among auto, warm, dirty-cold, "
     "clean-cold"),
    ("throughput", ["--caches", "warm,warm"], "--caches 'warm,warm': expected cache states among"),
    ("throughput", ["--caches", ""], "--caches '': expected cache states among"),
    ("throughput", ["--candidates", "0"], "--candidates 0 --repeats 5: expected counts >= 1"),
    ("clean_isolation", ["--sizes", "64,x"], "--sizes '64,x' --reads '1.25,2,3,1.25': expected comma-separated "
     "numbers > 0"),
    ("clean_isolation", ["--reads", "1.25,0"], "--sizes '64,16' --reads '1.25,0': expected comma-separated "
     "numbers > 0"),
    ("clean_isolation", ["--samples", "1"], "--samples 1: expected at least 2"),
])
def test_scripts_refuse_bad_options(script, argv, message, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(BENCH))
    module = importlib.import_module(script)
    monkeypatch.setattr(sys, "argv", [f"{script}.py", *argv])
    with pytest.raises(SystemExit) as exit_:
        module.main()
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and message in err and "Traceback" not in err
