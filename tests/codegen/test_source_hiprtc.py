"""Kernels from HIP C++ source through hiprtc, against a fake libhiprtc (tests/fakes/fake_hiprtc.c).

ROCm's libhiprtc is not on this machine and no AMD GPU is anywhere, so the fake
stands in for the compiler: it returns a real gfx942 HSACO (compiled from
tests/data/ir by compile_ir), records the options it was given, lowers name
expressions and fails a source holding #error with a log. What is tested is
pyhipbench's side: hip-python's hiprtc calls, options, name expressions, the
log on failure, the program destroyed on every path, and the code object
loading and launching on the fake HIP runtime. Each test runs in a child
process whose loader path holds the fakes (hip-python opens libhiprtc.so by name).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from codegen_helpers import require_toolchain
from fakes.build import HIPRTC_LIBRARY_NAME, build_fake
from fakes.conftest_fixtures import fake_hip_library, require_hip_python, run_with_fake  # noqa: F401 (fixture)

require_hip_python()

TESTS = Path(__file__).parents[1]
SOURCE = """#include "tile.h"
extern "C" __global__ void copy(const float* src, float* dst, long n) { /* ... */ }
template <typename T> __global__ void scale(T* x, T a, long n) { /* ... */ }
"""


@pytest.fixture(scope="module")
def fake_hiprtc(tmp_path_factory) -> Path:
    return build_fake(tmp_path_factory.mktemp("fake-hiprtc"), HIPRTC_LIBRARY_NAME)


@pytest.fixture(scope="module")
def hsaco(tmp_path_factory) -> Path:
    """What the fake hiprtc "compiles" every program to: kernels copy and scale for gfx942."""
    require_toolchain("gfx942")
    from pyhipbench.codegen import compile_ir
    path = tmp_path_factory.mktemp("hiprtc-code") / "kernels.hsaco"
    compile_ir(TESTS / "data" / "ir" / "kernels_gfx942.ll", "gfx942").save(path)
    return path


def run(fake_hip_library: Path, fake_hiprtc: Path | None, hsaco: Path, script: str) -> dict:
    folders = [str(fake_hip_library.parent)] + ([str(fake_hiprtc.parent)] if fake_hiprtc else [])
    return run_with_fake(fake_hip_library, f"import sys\nsys.path.insert(0, {str(TESTS)!r})\n" + script,
                         {"LD_LIBRARY_PATH": ":".join(folders), "FAKE_HIPRTC_CODE_OBJECT": str(hsaco)})


def test_hip_source_compiles_loads_and_launches(fake_hip_library, fake_hiprtc, hsaco, tmp_path):
    (tmp_path / "tile.h").write_text("#define TILE 64\n")
    out = run(fake_hip_library, fake_hiprtc, hsaco, f"""
import ctypes
import pyhipbench as hb
from pyhipbench.codegen.source import compile_source
from fakes.driver import FakeDriver

device = hb.Device("hip")
code = compile_source(device, {SOURCE!r}, name_expressions=["copy", "scale<float>"],
                      options=["-I{tmp_path}", "-DN=4", "-std=c++17"], name="k.hip")
rtc = ctypes.CDLL("libhiprtc.so")
rtc.fake_hiprtc_options.restype = ctypes.c_char_p
kernel = device.load_module(code).kernel(code.lowered_names["copy"])
n = 1 << 12
src = device.array(np.arange(n, dtype=np.float32))
fake = FakeDriver("libamdhip64.so")
result = hb.bench(kernel, n // 256, 256, [src, device.empty_like(src), hb.int64(n)], iterations=3, warmup=0,
                  cache="warm", timer="events")
report(format=code.format, target=code.target, kernels=list(code.kernels), lowered=code.lowered_names,
       log=code.log, options=rtc.fake_hiprtc_options().decode().splitlines(), live=rtc.fake_hiprtc_live_programs(),
       launches=len(fake.records("hipExtModuleLaunchKernel")), result_target=result.target)
""")
    assert out["format"] == "hsaco" and out["target"] == "gfx942:sramecc+:xnack-"  # the device's target ID
    assert out["kernels"] == ["copy", "scale"]
    assert out["lowered"] == {"copy": "copy", "scale<float>": "_Zscale_float_"}  # the fake's stand-in mangling
    assert out["options"] == ["--offload-arch=gfx942:sramecc+:xnack-", f"-I{tmp_path}", "-DN=4", "-std=c++17"]
    assert out["log"] == "" and out["live"] == 0 and out["launches"] == 3
    assert out["result_target"] == "gfx942:sramecc+:xnack-"  # what it was compiled for


def test_a_compile_error_carries_hiprtcs_log_and_frees_the_program(fake_hip_library, fake_hiprtc, hsaco):
    out = run(fake_hip_library, fake_hiprtc, hsaco, """
import ctypes
from pyhipbench.codegen.source import compile_source
try:
    compile_source("gfx942", 'extern "C" __global__ void k() {}\\n#error TILE too large\\n', name="k.hip",
                   name_expressions=["k"])
except Exception as e:
    report(**failure(e), live=ctypes.CDLL("libhiprtc.so").fake_hiprtc_live_programs())
""")
    assert out["type"] == "CodegenError" and out["live"] == 0
    assert out["message"] == ("hiprtc could not compile k.hip for gfx942 (HIPRTC_ERROR_COMPILATION; options: "
                              "--offload-arch=gfx942):\nk.hip:2:2: error: TILE too large\n1 error generated.")


def test_warnings_are_kept_in_the_log(fake_hip_library, fake_hiprtc, hsaco):
    out = run(fake_hip_library, fake_hiprtc, hsaco, """
from pyhipbench.codegen.source import compile_source
report(log=compile_source("gfx942", '#warning untuned\\nextern "C" __global__ void copy() {}').log)
""")
    assert out["log"] == "source.hip:1:2: warning: a warning [-W#warnings]"


def test_without_libhiprtc_says_what_to_install(fake_hip_library, hsaco):
    out = run(fake_hip_library, None, hsaco, """
from pyhipbench.codegen.source import compile_source
try:
    compile_source("gfx942", 'extern "C" __global__ void k() {}')
except Exception as e:
    report(**failure(e))
""")
    assert out["type"] == "ToolchainError"
    assert out["message"].startswith("cannot load ROCm's libhiprtc.so (")
    assert "export LD_LIBRARY_PATH=/opt/rocm/lib" in out["message"]


def test_run_compiles_a_hip_file_and_times_its_kernel(fake_hip_library, fake_hiprtc, hsaco, tmp_path):
    source = tmp_path / "kernels.hip"
    source.write_text(SOURCE)
    (tmp_path / "tile.h").write_text("#define TILE 64\n")
    out = run(fake_hip_library, fake_hiprtc, hsaco, f"""
import contextlib, ctypes, io
from pyhipbench import cli
printed = io.StringIO()
with contextlib.redirect_stdout(printed):
    status = cli.main(["run", {str(source)!r}, "--kernel", "copy", "--grid", "4", "--block", "256",
                       "--arg", "array:float32:1024", "--arg", "array:float32:1024", "--arg", "int64:1024",
                       "--iterations", "2", "--rotate", "1", "--compile-option=-DN=4"])
rtc = ctypes.CDLL("libhiprtc.so")
rtc.fake_hiprtc_options.restype = ctypes.c_char_p
report(status=status, printed=printed.getvalue(), options=rtc.fake_hiprtc_options().decode().splitlines())
""")
    assert out["status"] == 0
    assert out["options"] == ["--offload-arch=gfx942:sramecc+:xnack-", f"-I{tmp_path}", "-DN=4"]
    assert "target: gfx942:sramecc+:xnack- (hsaco," in out["printed"]
    assert "copy on AMD Instinct MI300X (fake) (gfx942:sramecc+:xnack-, code for gfx942:sramecc+:xnack-)" \
        in out["printed"]
