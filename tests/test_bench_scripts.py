"""bench/ scripts refuse bad options with one line naming the value, before touching a GPU."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


@pytest.mark.parametrize("argv, message", [
    (["--caches", "cold"], "--caches 'cold': expected cache states among auto, warm, dirty-cold, clean-cold"),
    (["--caches", "warm,warm"], "--caches 'warm,warm': expected cache states among"),
    (["--caches", ""], "--caches '': expected cache states among"),
    (["--candidates", "0"], "--candidates 0 --repeats 5: expected counts >= 1"),
])
def test_throughput_refuses_bad_options(argv, message, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(BENCH))
    import throughput
    monkeypatch.setattr(sys, "argv", ["throughput.py", *argv])
    with pytest.raises(SystemExit) as exit_:
        throughput.main()
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and message in err and "Traceback" not in err


@pytest.mark.parametrize("argv, message", [
    (["--sizes", "64,x"], "--sizes '64,x' --reads '1.25,2,3,1.25': expected comma-separated numbers > 0"),
    (["--reads", "1.25,0"], "--sizes '64,16' --reads '1.25,0': expected comma-separated numbers > 0"),
    (["--samples", "1"], "--samples 1: expected at least 2"),
])
def test_clean_isolation_refuses_bad_options(argv, message, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(BENCH))
    import clean_isolation
    monkeypatch.setattr(sys, "argv", ["clean_isolation.py", *argv])
    with pytest.raises(SystemExit) as exit_:
        clean_isolation.main()
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and message in err and "Traceback" not in err
