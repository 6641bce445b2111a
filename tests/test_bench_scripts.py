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
