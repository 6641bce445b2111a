"""pyhipbench/_core.pyi against the compiled module: every binding typed, nothing typed that is not bound."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from codegen_helpers import require

ALLOWLIST = Path(__file__).parents[1] / "data" / "core_stubtest_allowlist.txt"


def test_the_stub_states_exactly_what_the_bindings_expose(tmp_path):
    if importlib.util.find_spec("mypy") is None:
        require("mypy", "its stubtest compares the stub with the module (pip install -r requirements/test.txt)")
    result = subprocess.run([sys.executable, "-m", "mypy.stubtest", "pyhipbench._core", "--allowlist", str(ALLOWLIST)],
                            capture_output=True, text=True, timeout=600, cwd=tmp_path,
                            env={**os.environ, "MYPY_CACHE_DIR": str(tmp_path / "mypy-cache")})
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_package_says_it_is_typed():
    assert (Path(importlib.util.find_spec("pyhipbench").origin).parent / "py.typed").is_file()
