"""examples/cpp_tuner built with CMake against the INSTALLED package (find_package), run on the fake driver."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from codegen_helpers import require, require_toolchain

import pyhipbench
from pyhipbench.codegen import compile_ir

ROOT = Path(__file__).parent.parent
KERNELS = ROOT / "pyhipbench" / "kernels"
COPY_PTX = KERNELS / "copy.ptx"
BLOCKS = (64, 128, 256, 512, 1024)


def find_cmake() -> str:
    """cmake beside this Python (the test extra installs it), else on PATH; skips without one, fails in CI."""
    cmake = shutil.which("cmake", path=str(Path(sys.executable).parent)) or shutil.which("cmake")
    if cmake is None:
        require("cmake", 'the test extra installs it: pip install -e ".[test]"')
    return cmake


@pytest.fixture(scope="module")
def tuner(tmp_path_factory) -> Path:
    cmake = find_cmake()
    package_dir = pyhipbench.cmake_dir()
    # The installed package, not the source tree: the wheel's files in site-packages.
    assert package_dir.is_relative_to(sysconfig.get_paths()["platlib"]), package_dir
    build = tmp_path_factory.mktemp("cpp-tuner")
    configure = subprocess.run([cmake, "-S", str(ROOT / "examples" / "cpp_tuner"), "-B", str(build),
                                "-DCMAKE_BUILD_TYPE=Release", f"-Dpyhipbench_DIR={package_dir}"],
                               capture_output=True, text=True, timeout=300)
    assert configure.returncode == 0, configure.stdout + configure.stderr
    # The headers come from the installed package (an imported target's are -isystem), never the checkout.
    flags = (build / "CMakeFiles" / "cpp_tuner.dir" / "flags.make").read_text()
    assert f"-isystem {pyhipbench.include_dir()}" in flags and str(ROOT / "csrc") not in flags, flags
    assert not re.search(r"include/python3|cuda|hip|rocm", flags.replace(str(package_dir.parents[2]), "")), flags
    link = (build / "CMakeFiles" / "cpp_tuner.dir" / "link.txt").read_text()
    assert f"{package_dir.parents[2] / 'lib' / 'libpyhipbench_core.a'} -ldl" in link, link
    compiled = subprocess.run([cmake, "--build", str(build)], capture_output=True, text=True, timeout=300)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    return build / "cpp_tuner"


def run_tuner(tuner: Path, fake_libraries, *args: str, cupti: bool = True,
              launch_us: str = "") -> subprocess.CompletedProcess:
    """Runs the tuner on the fake CUDA driver; `launch_us` is FAKE_LAUNCH_US_BY_BLOCK (default: 4 µs each)."""
    env = {**os.environ, "FAKE_LAUNCH_US_BY_BLOCK": launch_us,
           "PYHIPBENCH_CUDA_LIBRARY": str(fake_libraries["cuda"]),
           "PYHIPBENCH_CUPTI_LIBRARY": str(fake_libraries["cupti"]) if cupti else "/nonexistent/libcupti.so"}
    return subprocess.run([str(tuner), *args], capture_output=True, text=True, timeout=120, env=env)


ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\w+)\s+([\d.]+)\s+([\d.]+)$", re.M)


def test_tuner_times_every_candidate_with_each_timer_and_names_the_winner(tuner, fake_libraries):
    result = run_tuner(tuner, fake_libraries, "cuda", str(COPY_PTX), "100000", "3")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "copy of 100000 floats (400000 bytes), 3 rotated sets, 64 samples each" in result.stdout
    rows = [(int(b), int(g), timer, float(us)) for b, g, timer, us, _ in ROW.findall(result.stdout)]
    assert [(b, timer) for b, _, timer, _ in rows] == [(b, t) for b in BLOCKS for t in ("cupti", "events")]
    assert all(grid == -(-100000 // block) for block, grid, _, _ in rows)
    assert all(us == 4.0 for *_, us in rows)  # each fake launch takes 4 µs on its clock
    assert "winner: block 64 (grid 1563), 4.000 µs by the cupti timer" in result.stdout


def test_tuner_picks_the_fastest_candidate(tuner, fake_libraries):
    launch_us = {64: 9.0, 128: 7.0, 256: 3.0, 512: 5.0, 1024: 8.0}
    result = run_tuner(tuner, fake_libraries, "cuda", str(COPY_PTX), "100000",
                       launch_us=",".join(f"{b}:{us}" for b, us in launch_us.items()))
    assert result.returncode == 0, result.stdout + result.stderr
    rows = [(int(b), timer, float(us), float(gbs)) for b, _, timer, us, gbs in ROW.findall(result.stdout)]
    assert len(rows) == 10
    for block, timer, us, gbs in rows:
        assert us == launch_us[block], (block, timer, us)
        assert gbs == pytest.approx(2 * 400000 / (us * 1e3), abs=0.05)
    assert "winner: block 256 (grid 391), 3.000 µs by the cupti timer" in result.stdout


def test_tuner_without_cupti_uses_the_events_timer(tuner, fake_libraries):
    result = run_tuner(tuner, fake_libraries, "cuda", str(COPY_PTX), "4096", cupti=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "(no cupti timer: cannot load the CUPTI library '/nonexistent/libcupti.so'" in result.stdout
    assert {timer for *_, timer, _, _ in ROW.findall(result.stdout)} == {"events"}
    assert "by the events timer" in result.stdout


def test_tuner_names_a_kernel_the_code_object_lacks(tuner, fake_libraries):
    result = run_tuner(tuner, fake_libraries, "cuda", str(KERNELS / "empty.ptx"))
    assert result.returncode == 1
    assert result.stderr.startswith("cpp_tuner: cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND (500)")
    assert "(kernel 'copy') (call cuModuleGetFunction, code 500)" in result.stderr


def test_tuner_names_a_bad_argument(tuner, fake_libraries):
    result = run_tuner(tuner, fake_libraries, "cuda", str(COPY_PTX), "0")
    assert result.returncode == 1 and result.stderr == "cpp_tuner: ELEMENTS '0': expected a positive integer\n"
    result = run_tuner(tuner, fake_libraries, "opencl", str(COPY_PTX))
    assert result.returncode == 1
    assert result.stderr == "cpp_tuner: unknown backend 'opencl'; expected 'cuda' or 'hip'\n"


def test_tuner_on_hip_loads_an_hsaco_and_times_with_events(tuner, fake_libraries, tmp_path):
    require_toolchain("gfx942")
    hsaco = tmp_path / "kernels.hsaco"
    hsaco.write_bytes(compile_ir(KERNELS / "amdgpu.ll", "gfx942").data)  # holds copy(src, dst, n)
    env = {**os.environ, "PYHIPBENCH_HIP_LIBRARY": str(fake_libraries["hip"]), "FAKE_LAUNCH_US_BY_BLOCK": "512:2"}
    result = subprocess.run([str(tuner), "hip", str(hsaco), "8192", "2"], capture_output=True, text=True,
                            timeout=120, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = [(int(b), int(g), timer, float(us)) for b, g, timer, us, _ in ROW.findall(result.stdout)]
    assert [(b, timer) for b, _, timer, _ in rows] == [(b, "events") for b in BLOCKS]
    assert "2 rotated sets" in result.stdout
    assert "winner: block 512 (grid 16), 2.000 µs by the events timer" in result.stdout
