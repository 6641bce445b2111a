"""The core as a C++ tuner embeds it: no Python, built with sanitizers, on the fake drivers."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
# The core library's sources, as CMakeLists.txt's add_library(pyhipbench_core ...) lists them.
_LIBRARY = (ROOT / "CMakeLists.txt").read_text().split("add_library(pyhipbench_core STATIC", 1)[1].split(")", 1)[0]
CORE_SOURCES = [line.strip().removeprefix("csrc/") for line in _LIBRARY.split() if line.strip().endswith(".cpp")]


@pytest.fixture(scope="module")
def embed_core(tmp_path_factory):
    compiler = shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        pytest.skip("needs a C++ compiler (g++) to build the embedding test")
    binary = tmp_path_factory.mktemp("embed") / "embed_core"
    subprocess.run([compiler, "-std=c++17", "-g", "-O1", "-fsanitize=address,undefined",
                    "-fno-sanitize-recover=all", "-I", str(ROOT / "csrc" / "include"), "-I", str(ROOT / "csrc"),
                    "-o", str(binary), str(Path(__file__).parents[1] / "cpp" / "embed_core.cpp"),
                    *(str(ROOT / "csrc" / s) for s in CORE_SOURCES), "-ldl"], check=True)
    return binary


def test_core_embeds_without_python_and_is_memory_clean(embed_core, fake_libraries, backend_name):
    env = {**os.environ, "PYHIPBENCH_CUPTI_LIBRARY": str(fake_libraries["cupti"])}
    result = subprocess.run([str(embed_core), backend_name, str(fake_libraries[backend_name])],
                            capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stdout + result.stderr
