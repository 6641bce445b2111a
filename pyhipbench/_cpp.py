"""Where the C++ core is installed for embedders: headers, the static library and its CMake package.

The wheel installs them inside the package, beside the compiled `_core`
(`pyhipbench/include`, `pyhipbench/lib`, `pyhipbench/share/cmake/pyhipbench`),
so a C++ project finds them as it finds pybind11's:

    cmake -Dpyhipbench_DIR="$(python -m pyhipbench --cmake-dir)" ...
    find_package(pyhipbench CONFIG REQUIRED)
    target_link_libraries(tuner PRIVATE pyhipbench::core)
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

from .errors import LibraryError

__all__ = ["cmake_dir", "include_dir"]


def _installed(relative: str) -> Path:
    # Found from _core's location, not this file's: in an editable install the
    # Python sources stay in the checkout while the build's files (the core,
    # headers, library, CMake package) are installed in site-packages.
    spec = importlib.util.find_spec("pyhipbench._core")
    if spec is None or spec.origin is None:
        raise LibraryError("pyhipbench's C++ core (pyhipbench._core) is not installed; reinstall pyhipbench")
    path = Path(spec.origin).parent / relative
    if not path.is_dir():
        raise LibraryError(f"pyhipbench's C++ core is not installed where expected: {path} does not exist "
                           "(expected with the wheel or `pip install .`; reinstall pyhipbench)")
    return path


def cmake_dir() -> Path:
    """The folder holding pyhipbenchConfig.cmake: what CMake's `pyhipbench_DIR` takes."""
    return _installed("share/cmake/pyhipbench")


def include_dir() -> Path:
    """The folder holding the public C++ headers (`#include "pyhipbench/timer.hpp"`)."""
    return _installed("include")
