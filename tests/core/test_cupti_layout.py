"""The CUPTI types and record offsets the core declares (csrc/cupti.hpp) against CUPTI's own headers."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


def cupti_include_dir() -> Path | None:
    roots = [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH")] + ["/usr/local/cuda"]
    for root in filter(None, roots):
        if (Path(root) / "include" / "cupti_activity.h").is_file():
            return Path(root) / "include"
    return None


def test_declared_layout_matches_cupti_headers():
    include = cupti_include_dir()
    compiler = shutil.which("g++") or shutil.which("c++")
    if include is None or compiler is None:
        pytest.skip("needs a CUDA toolkit's CUPTI headers (cupti_activity.h) and g++")
    result = subprocess.run([compiler, "-std=c++17", "-fsyntax-only", "-I", str(include), "-I", str(ROOT / "csrc"),
                             "-I", str(ROOT / "csrc" / "include"), str(ROOT / "tests" / "cpp" / "cupti_layout.cpp")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
