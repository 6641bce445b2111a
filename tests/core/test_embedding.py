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

import pyhipbench
from pyhipbench._core import StopRule
from pyhipbench._device.archs import MiB, last_level_cache_bytes
from pyhipbench._measure.rotation import RotationCapped, plan_rotation
from pyhipbench.codegen import compile_ir

from codegen_helpers import require, require_toolchain

ROOT = Path(__file__).parents[2]
KERNELS = ROOT / "pyhipbench" / "kernels"
COPY_PTX = KERNELS / "copy.ptx"
BLOCKS = (64, 128, 256, 512, 1024)


def find_cmake() -> str:
    """cmake beside this Python (requirements/test.txt installs it), else on PATH; skips without one, fails in CI."""
    cmake = shutil.which("cmake", path=str(Path(sys.executable).parent)) or shutil.which("cmake")
    if cmake is None:
        require("cmake", 'requirements/test.txt installs it: pip install -r requirements/test.txt')
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


def run_tuner(tuner: Path, fake_libraries, *args: str, cupti: bool = True, launch_us: str = "",
              total_bytes: int | None = None) -> subprocess.CompletedProcess:
    """Runs the tuner on the fake CUDA driver; `launch_us` is FAKE_LAUNCH_US_BY_BLOCK (default: 4 µs each),
    `total_bytes` the fake device's memory (FAKE_CUDA_TOTAL_BYTES; default 141 GB)."""
    env = {**os.environ, "FAKE_LAUNCH_US_BY_BLOCK": launch_us,
           "PYHIPBENCH_CUDA_LIBRARY": str(fake_libraries["cuda"]),
           "PYHIPBENCH_CUPTI_LIBRARY": str(fake_libraries["cupti"]) if cupti else "/nonexistent/libcupti.so"}
    if total_bytes is not None:
        env["FAKE_CUDA_TOTAL_BYTES"] = str(total_bytes)
    return subprocess.run([str(tuner), *args], capture_output=True, text=True, timeout=120, env=env)


# block, grid, timer, median µs, [CI low, CI high], samples, stop reason, GB/s
ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\w+)\s+([\d.]+)\s+\[\s*([\d.]+),\s+([\d.]+)\]\s+(\d+)\s+([\w-]+)\s+([\d.]+)$",
                 re.M)
FAKE_H200_L2_BYTES = 60 * MiB  # the fake libcuda's device (tests/fakes/fake_driver.c)
FAKE_H200_TOTAL_BYTES = 141 * 10**9
FAKE_MI300X_L2_BYTES = 4 * MiB  # the fake HIP runtime's (tests/fakes/fake_hip_runtime.c)
FAKE_MI300X_TOTAL_BYTES = 192 * 10**9
STOP = StopRule()  # the tuner's rule: the core's defaults
LAUNCHES = STOP.max_warmup_samples + STOP.max_samples


def rows_of(stdout: str) -> list[tuple]:
    return [(int(b), int(g), timer, float(us), (float(lo), float(hi)), int(n), stop, float(gbs))
            for b, g, timer, us, lo, hi, n, stop, gbs in ROW.findall(stdout)]


def python_rotation(elements: int, llc_bytes: int, total_bytes: int):
    """What Python's bench() plans for the tuner's arrays (src and dst, float32) with the tuner's originals live."""
    set_bytes = 2 * 4 * elements
    return plan_rotation(set_bytes, llc_bytes, total_bytes - set_bytes, total_bytes, "auto", LAUNCHES)


def test_tuner_measures_every_candidate_with_each_timer_until_the_stopping_rule_says_so(tuner, fake_libraries):
    result = run_tuner(tuner, fake_libraries, "cuda", str(COPY_PTX), "100000", "3")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "copy of 100000 floats (400000 bytes), last-level cache 62914560 bytes (the driver's L2)\n" \
           "rotation: R = 3 (set by the caller (rotate=3))\n" \
           "stopping: the median's 95 % CI within ±1 %, 10 to 10000 samples, at most 1 s each; racing: a candidate " \
           "stops once its CI lies above the best one's so far\n" in result.stdout
    rows = rows_of(result.stdout)
    assert [(b, timer) for b, _, timer, *_ in rows] == [(b, t) for b in BLOCKS for t in ("cupti", "events")]
    assert all(grid == -(-100000 // block) for block, grid, *_ in rows)
    # Each fake launch takes 4 µs on its clock: the CI closes at once, so the rule stops at its first timed
    # chunk (warm-up settled after two chunks).
    assert {(us, ci, n, stop) for _, _, _, us, ci, n, stop, _ in rows} == {(4.0, (4.0, 4.0), STOP.first_chunk,
                                                                             "precision")}
    assert "winner: block 64 (grid 1563), 4.000 µs by the cupti timer" in result.stdout


def test_tuner_rotates_as_many_sets_as_python_would(tuner, fake_libraries):
    result = run_tuner(tuner, fake_libraries, "cuda", str(COPY_PTX), "65536")
    assert result.returncode == 0, result.stdout + result.stderr
    expected = python_rotation(65536, FAKE_H200_L2_BYTES, FAKE_H200_TOTAL_BYTES)
    assert expected.sets == 240  # 2 x ceil(60 MiB / 0.5 MiB)
    assert f"rotation: R = 240 ({expected.reason})\n" in result.stdout
    assert "winner: block 64 (grid 1024), 4.000 µs by the cupti timer\n" in result.stdout  # what .ci/run greps


def test_tuner_sizes_rotation_against_the_last_level_cache_given(tuner, fake_libraries):
    result = run_tuner(tuner, fake_libraries, "cuda", str(COPY_PTX), "65536", "auto", "1048576")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "last-level cache 1048576 bytes (given)" in result.stdout
    assert "rotation: R = 4 (2 x ceil(last-level cache 1.0 MiB / set 0.5 MiB) = 4 sets)" in result.stdout


def test_tuner_warns_when_free_memory_caps_the_rotation(tuner, fake_libraries):
    total = 300 * MiB  # 256 MiB of it headroom, 8 MiB the originals: four more 8 MiB sets fit of the 16 wanted
    result = run_tuner(tuner, fake_libraries, "cuda", str(COPY_PTX), str(MiB), total_bytes=total)
    assert result.returncode == 0, result.stdout + result.stderr
    with pytest.warns(RotationCapped):
        expected = python_rotation(MiB, FAKE_H200_L2_BYTES, total)
    assert (expected.sets, expected.wanted) == (5, 16)
    assert f"rotation: R = 5 ({expected.reason})" in result.stdout
    assert result.stderr == ("cpp_tuner: warning: 5 of the 16 rotated sets fit in free memory: the cache is less "
                             "cold than asked\n")
    result = run_tuner(tuner, fake_libraries, "cuda", str(COPY_PTX), str(MiB), total_bytes=260 * MiB)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("cpp_tuner: rotated sets cannot fit in device memory: a second set of "
                                    "8388608 bytes needs more than the 0.25 GiB free")


def test_tuner_picks_the_fastest_candidate(tuner, fake_libraries):
    launch_us = {64: 9.0, 128: 7.0, 256: 3.0, 512: 5.0, 1024: 8.0}
    result = run_tuner(tuner, fake_libraries, "cuda", str(COPY_PTX), "100000",
                       launch_us=",".join(f"{b}:{us}" for b, us in launch_us.items()))
    assert result.returncode == 0, result.stdout + result.stderr
    rows = rows_of(result.stdout)
    assert len(rows) == 10
    for block, _, timer, us, ci, _, _, gbs in rows:
        assert us == launch_us[block] and ci == (us, us), (block, timer, us, ci)
        assert gbs == pytest.approx(2 * 400000 / (us * 1e3), abs=0.05)
    assert "winner: block 256 (grid 391), 3.000 µs by the cupti timer" in result.stdout


def test_tuner_races_each_candidate_against_the_best_interval_so_far(tuner, fake_libraries):
    # Blocks 128 and 512 take 7 and 5 µs ± 0.5, launch after launch: their median's CI never narrows to
    # ±1 %, but it lies wholly above the 4 µs block 64 set first (per timer), so each stops at its first
    # check ("slower"); without racing they would run to the sample or time cap. Blocks 128 (7 µs against
    # 4) and 1024 (8 µs against 256's 3) are clear losers, every sample of their warm-up chunk over 1.5 times
    # the bound: they stop after that chunk.
    launch_us = "64:4,128:7~0.5,256:3,512:5~0.5,1024:8"
    result = run_tuner(tuner, fake_libraries, "cuda", str(COPY_PTX), "100000", launch_us=launch_us)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = rows_of(result.stdout)
    assert [(b, timer, n, stop) for b, _, timer, _, _, n, stop, _ in rows] == [
        (b, t, STOP.warmup_chunk if b in (128, 1024) else STOP.first_chunk, "precision" if b in (64, 256) else
         "slower") for b in BLOCKS for t in ("cupti", "events")]
    assert {(b, ci) for b, _, _, _, ci, _, _, _ in rows if b in (128, 512)} == {(128, (6.5, 7.5)), (512, (4.5, 5.5))}
    assert "winner: block 256 (grid 391), 3.000 µs by the cupti timer" in result.stdout


def test_tuner_without_cupti_uses_the_events_timer(tuner, fake_libraries):
    result = run_tuner(tuner, fake_libraries, "cuda", str(COPY_PTX), "4096", cupti=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "(no cupti timer: cannot load the CUPTI library '/nonexistent/libcupti.so'" in result.stdout
    assert {timer for _, _, timer, *_ in rows_of(result.stdout)} == {"events"}
    assert "by the events timer" in result.stdout


def test_tuner_names_a_kernel_the_code_object_lacks(tuner, fake_libraries):
    result = run_tuner(tuner, fake_libraries, "cuda", str(KERNELS / "empty.ptx"))
    assert result.returncode == 1
    assert result.stderr.startswith("cpp_tuner: cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND (500)")
    assert "(kernel 'copy') (call cuModuleGetFunction, code 500)" in result.stderr


@pytest.mark.parametrize("args, message", [
    (("0",), "ELEMENTS '0': expected a positive integer"),
    (("99999999999999999999999",), "ELEMENTS '99999999999999999999999': expected a positive integer"),
    # Both were refused only by the host vector's allocation ("cannot create std::vector larger than
    # max_size()"), naming neither the argument nor its value.
    (("4611686018427387905",), "ELEMENTS '4611686018427387905': expected at most 2305843009213693951"),
    (("4096", "x"), "SETS 'x': expected 'auto' or a positive integer"),
    (("4096", "0"), "SETS '0': expected 'auto' or a positive integer"),
    (("4096", "auto", "-5"), "LLC_BYTES '-5': expected a positive integer"),
    (("4096", "10000000"), "rotate=10000000 sets of 32768 bytes cannot fit in device memory"),
])
def test_tuner_names_a_bad_argument(tuner, fake_libraries, args, message):
    result = run_tuner(tuner, fake_libraries, "cuda", str(COPY_PTX), *args)
    assert result.returncode == 1 and result.stderr.startswith(f"cpp_tuner: {message}"), result.stderr


def test_tuner_names_a_bad_backend_or_argument_count(tuner, fake_libraries):
    result = run_tuner(tuner, fake_libraries, "opencl", str(COPY_PTX))
    assert result.returncode == 1
    assert result.stderr == "cpp_tuner: unknown backend 'opencl'; expected 'cuda' or 'hip'\n"
    result = run_tuner(tuner, fake_libraries, "cuda", str(COPY_PTX), "1", "2", "3", "4")
    assert result.returncode == 2 and "[ELEMENTS [SETS|auto [LLC_BYTES]]]" in result.stderr


def run_hip_tuner(tuner: Path, fake_libraries, hsaco: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYHIPBENCH_HIP_LIBRARY": str(fake_libraries["hip"]), "FAKE_LAUNCH_US_BY_BLOCK": "512:2"}
    return subprocess.run([str(tuner), "hip", str(hsaco), *args], capture_output=True, text=True, timeout=120,
                          env=env)


@pytest.fixture
def hsaco(tmp_path) -> Path:
    require_toolchain("gfx942")
    path = tmp_path / "kernels.hsaco"
    path.write_bytes(compile_ir(KERNELS / "amdgpu.ll", "gfx942").data)  # holds copy(src, dst, n)
    return path


def test_tuner_on_hip_loads_an_hsaco_and_times_with_events(tuner, fake_libraries, hsaco):
    result = run_hip_tuner(tuner, fake_libraries, hsaco, "8192", "2")
    assert result.returncode == 0, result.stdout + result.stderr
    rows = rows_of(result.stdout)
    # Block 1024 (4 µs, the fake's default) races 512's 2 µs: a clear loser.
    assert [(b, timer, stop) for b, _, timer, _, _, _, stop, _ in rows] == [
        (b, "events", "slower" if b == 1024 else "precision") for b in BLOCKS]
    assert "rotation: R = 2 (set by the caller (rotate=2))" in result.stdout
    assert "winner: block 512 (grid 16), 2.000 µs by the events timer" in result.stdout


def test_tuner_on_hip_sizes_rotation_against_the_reported_l2_or_the_infinity_cache_given(tuner, fake_libraries,
                                                                                        hsaco):
    result = run_hip_tuner(tuner, fake_libraries, hsaco, "8192")
    assert result.returncode == 0, result.stdout + result.stderr
    expected = python_rotation(8192, FAKE_MI300X_L2_BYTES, FAKE_MI300X_TOTAL_BYTES)
    assert "last-level cache 4194304 bytes (the driver's L2)" in result.stdout
    assert f"rotation: R = {expected.sets} ({expected.reason})" in result.stdout and expected.sets == 128
    infinity_cache = last_level_cache_bytes("gfx942", FAKE_MI300X_L2_BYTES)  # what Python sizes against
    result = run_hip_tuner(tuner, fake_libraries, hsaco, "8192", "auto", str(infinity_cache))
    assert result.returncode == 0, result.stdout + result.stderr
    expected = python_rotation(8192, infinity_cache, FAKE_MI300X_TOTAL_BYTES)
    assert f"rotation: R = {expected.sets} ({expected.reason})" in result.stdout and expected.sets == 8192
