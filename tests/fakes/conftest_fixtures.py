"""Fixtures for tests of the HIP backend against the fake HIP runtime.

hip-python opens `libamdhip64.so` by name, once per process, so each test runs
its HIP calls in a fresh Python process whose loader path holds the fake: the
same route the real library takes, and nothing left loaded between tests.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from .build import HIP_LIBRARY_NAME, build_fake


def require_hip_python() -> Any:
    """hip-python's `hip` package; skips the module without it, or fails in CI, where requirements/test.txt installs it."""
    try:
        import hip
    except ImportError:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI must provide hip-python (requirements/test.txt pins it; .ci/run also runs hip-python 10.x)",
                        pytrace=False)
        pytest.skip('needs hip-python (pip install -r requirements/test.txt)', allow_module_level=True)
    return hip


@pytest.fixture(scope="session")
def fake_hip_library(tmp_path_factory) -> Path:
    """The fake HIP runtime, built once per session, named libamdhip64.so in a folder of its own."""
    return build_fake(tmp_path_factory.mktemp("fake-hip"), HIP_LIBRARY_NAME)


# Runs first in every child: reports an exception as data instead of a traceback.
_PRELUDE = """
import json, sys
import numpy as np
from pyhipbench._device.backends.hip import HipBackend

def report(**values):
    print(json.dumps(values))

def failure(error):
    return {"type": type(error).__name__, "message": str(error),
            "call": getattr(error, "call", None), "code": getattr(error, "code", None)}
"""


def run_with_fake(library: Path | None, script: str, env: dict[str, str] | None = None) -> dict:
    """Runs `script` in a child Python whose loader path holds `library`; the JSON its last `report()` printed.

    `library` None leaves it off the path. `env` adds or overrides environment
    variables (the fake reads FAKE_HIP_DEVICE_COUNT and FAKE_HIP_RUNTIME_VERSION).
    """
    child_env = {k: v for k, v in os.environ.items() if k not in ("PYHIPBENCH_HIP_LIBRARY", "LD_LIBRARY_PATH")}
    if library is not None:
        child_env["LD_LIBRARY_PATH"] = str(Path(library).parent)
    child_env.update(env or {})
    code = _PRELUDE + textwrap.dedent(script)
    result = subprocess.run([sys.executable, "-c", code], env=child_env, capture_output=True, text=True,
                            timeout=120)
    if result.returncode != 0:
        raise AssertionError(f"child exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    lines = result.stdout.strip().splitlines()
    if not lines:
        raise AssertionError(f"child printed no report:\n{result.stderr}")
    return json.loads(lines[-1])
