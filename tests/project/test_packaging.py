"""What the installed package gives a C++ embedder and an index: the CMake package, the symbols, the license."""
from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from importlib.metadata import metadata
from pathlib import Path

import pytest

import pyhipbench
from pyhipbench import _cpp as cpp

ROOT = Path(__file__).parents[2]
PUBLIC_HEADERS = ROOT / "csrc" / "include" / "pyhipbench"
CORE_MODULE = Path(importlib.util.find_spec("pyhipbench._core").origin)
# Internal classes of the core, none of which may be visible outside it.
INTERNAL_NAMES = {"CudaDriver", "HipDriver", "DynamicLibrary", "CuptiKernelTrace", "CuptiTimer", "EventTimer",
                  "GraphTimer", "BatchedTimer", "TimerBase", "CudaModule", "HipModule", "Status"}


def api_names() -> set[str]:
    """Every class, struct and function the public headers declare."""
    names = set()
    for header in PUBLIC_HEADERS.glob("*.hpp"):
        text = header.read_text()
        names.update(re.findall(r"^(?:enum )?(?:class|struct) (?:PYHIPBENCH_API )?(\w+)", text, re.M))
        names.update(re.findall(r"^PYHIPBENCH_API [^(;]*?\b(\w+)\(", text, re.M))
    return names


def pyhipbench_names(symbols: list[str]) -> set[str]:
    """The names directly inside namespace pyhipbench that the demangled `symbols` mention."""
    return {name for symbol in symbols for name in re.findall(r"\bpyhipbench::(\w+)", symbol)}


def test_the_api_names_are_read_from_the_headers():
    names = api_names()
    assert {"Driver", "Module", "DeviceBuffer", "LaunchPlan", "Timer", "DriverError", "RotatedBuffers",
            "load_driver", "make_timer"} <= names
    assert not names & INTERNAL_NAMES


def exported_symbols_of_core() -> list[str]:
    result = subprocess.run(["nm", "-DC", "--defined-only", str(CORE_MODULE)], capture_output=True, text=True,
                            check=True)
    return [line.split(" ", 2)[2] for line in result.stdout.splitlines() if line.count(" ") >= 2]


@pytest.mark.skipif(shutil.which("nm") is None, reason="needs nm (binutils)")
def test_core_module_exports_only_the_api():
    names = pyhipbench_names(exported_symbols_of_core())
    assert {"make_timer", "load_driver", "DriverError"} <= names  # the check sees the API at all
    assert names <= api_names(), f"_core exports the core's insides: {sorted(names - api_names())}"


# One symbol of `readelf -sW -C`: number, value, size, type, bind, visibility, section, name.
READELF_SYMBOL = re.compile(r"^\s*\d+: \S+\s+\d+\s+\w+\s+(\w+)\s+(\w+)\s+(\w+)\s+(.+)$")


@pytest.mark.skipif(shutil.which("readelf") is None, reason="needs readelf (binutils)")
def test_static_library_hides_everything_but_the_api():
    library = cpp.cmake_dir().parents[2] / "lib" / "libpyhipbench_core.a"
    result = subprocess.run(["readelf", "-sW", "-C", str(library)], capture_output=True, text=True, check=True)
    visible, hidden = [], []
    for line in result.stdout.splitlines():
        match = READELF_SYMBOL.match(line)
        if match is None or match[1] not in ("GLOBAL", "WEAK") or match[3] == "UND":
            continue
        (visible if match[2] == "DEFAULT" else hidden).append(match[4])
    assert {"CudaDriver", "HipDriver", "DynamicLibrary"} <= pyhipbench_names(hidden)
    names = pyhipbench_names(visible)
    assert {"make_timer", "RotatedBuffers"} <= names
    assert names <= api_names(), f"the static library shows the core's insides: {sorted(names - api_names())}"


def test_cmake_dir_holds_the_package_config_of_this_version():
    directory = cpp.cmake_dir()
    assert directory == pyhipbench.cmake_dir()
    assert {"pyhipbenchConfig.cmake", "pyhipbenchConfigVersion.cmake", "pyhipbenchTargets.cmake"} <= {
        p.name for p in directory.iterdir()}
    version = (directory / "pyhipbenchConfigVersion.cmake").read_text()
    assert f'set(PACKAGE_VERSION "{pyhipbench.__version__}")' in version
    targets = (directory / "pyhipbenchTargets.cmake").read_text()
    assert "add_library(pyhipbench::core STATIC IMPORTED)" in targets
    assert 'INTERFACE_LINK_LIBRARIES "dl"' in targets and "Python" not in targets


def test_include_dir_holds_every_public_header():
    installed = {p.name for p in (cpp.include_dir() / "pyhipbench").glob("*.hpp")}
    assert installed == {p.name for p in PUBLIC_HEADERS.glob("*.hpp")}


@pytest.mark.parametrize("option, locate", [("--cmake-dir", cpp.cmake_dir), ("--include-dir", cpp.include_dir)])
def test_python_m_pyhipbench_prints_the_folder(option, locate):
    result = subprocess.run([sys.executable, "-m", "pyhipbench", option], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0 and result.stdout == f"{locate()}\n", result.stderr


def test_a_missing_install_folder_is_a_library_error_naming_it():
    with pytest.raises(pyhipbench.LibraryError, match=r"share/cmake/absent does not exist"):
        cpp._installed("share/cmake/absent")


def test_the_cli_reports_a_missing_install_folder_in_one_line(monkeypatch, capsys):
    from pyhipbench import cli

    installed = cpp._installed
    monkeypatch.setattr(cpp, "_installed", lambda relative: installed(relative + "-absent"))
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--cmake-dir"])
    assert exit_.value.code == 1
    assert re.fullmatch(r"pyhipbench: .*share/cmake/pyhipbench-absent does not exist .*\n", capsys.readouterr().err)


def test_the_distribution_is_apache_2_licensed():
    info = metadata("pyhipbench")
    assert info["License-Expression"] == "Apache-2.0"
    assert info.get_all("License-File") == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().split()[:4] == ["Apache", "License", "Version", "2.0,"]


def test_the_metadata_an_index_shows():
    info = metadata("pyhipbench")
    assert info["Author"] == "The pyhipbench developers"
    assert {"gpu", "benchmark", "autotuning", "cuda", "hip"} <= set(info["Keywords"].split(","))
    classifiers = info.get_all("Classifier")
    assert "Topic :: System :: Benchmark" in classifiers and "Environment :: GPU :: NVIDIA CUDA" in classifiers
    assert "Programming Language :: Python :: 3.10" in classifiers and "Operating System :: POSIX :: Linux" in classifiers
    # What users install: no test extra (it pins a hip-python); tqdm always, for the sweep's progress bar.
    assert "test" not in info.get_all("Provides-Extra")
    assert any(r.startswith("tqdm") and "extra" not in r for r in info.get_all("Requires-Dist"))
    assert (ROOT / "requirements" / "test.txt").read_text().count("hip-python==") == 1


def test_a_cmake_project_finds_the_package_from_the_prefix_the_entry_point_adds(tmp_path):
    """scikit-build-core puts a dependency's `cmake.prefix` entry point folder (the installed package) on
    CMAKE_PREFIX_PATH; find_package(pyhipbench) must find share/cmake/pyhipbench under it with nothing else."""
    from importlib.metadata import entry_points
    [entry] = [e for e in entry_points(group="cmake.prefix") if e.name == "pyhipbench"]
    assert entry.value == "pyhipbench"
    cmake = shutil.which("cmake", path=str(Path(sys.executable).parent)) or shutil.which("cmake")
    if cmake is None:
        pytest.skip("needs cmake (requirements/test.txt installs it)")
    # The installed package folder: where _core is (an editable install keeps the Python sources apart).
    prefix = cpp.cmake_dir().parents[2]
    (tmp_path / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.18)\nproject(probe CXX)\n"
                                             "find_package(pyhipbench CONFIG REQUIRED)\n"
                                             "message(STATUS \"found ${pyhipbench_DIR}\")\n")
    configured = subprocess.run([cmake, "-S", str(tmp_path), "-B", str(tmp_path / "build"),
                                 f"-DCMAKE_PREFIX_PATH={prefix}"], capture_output=True, text=True, timeout=120)
    assert configured.returncode == 0, configured.stderr
    assert f"found {cpp.cmake_dir()}" in configured.stdout
