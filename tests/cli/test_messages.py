"""Messages that say what to do: a flag whose value starts with '-', options a runtime compiler refuses, a str
of code where a path is expected.

argparse reads `--compile-option -DN=4` as two options; its "expected one
argument" then says to write `--compile-option=-DN=4`, for every flag that
takes a value. An option NVRTC or hiprtc refuses is bad input: a
CompileOptionError (a BenchError and a CodegenError), exit 2, one line
quoting the compiler. `Device.load_module` of a str holding code says that a
str is a path and bytes are the code, showing the value shortened.
"""
from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import pytest

import pyhipbench as hb
from pyhipbench import cli
from pyhipbench.codegen.source import CompileOptionError, compile_source

from codegen_helpers import IR_DATA, require_nvrtc, require_toolchain
from fakes.build import HIPRTC_LIBRARY_NAME, build_fake
from fakes.conftest_fixtures import fake_hip_library, require_hip_python, run_with_fake  # noqa: F401 (fixture)
from fakes.host_backend import HostBackend

COPY_PTX = Path(str(resources.files("pyhipbench") / "kernels" / "copy.ptx"))
TESTS = Path(__file__).parents[1]
RUN = ["--kernel", "k", "--grid", "1", "--block", "1", "--arg", "array:float32:1"]


def usage_error(capsys, argv) -> str:
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


@pytest.mark.parametrize("argv, option, value, written", [
    (["run", "k.cu", *RUN, "--compile-option", "-DN=4"], "--compile-option", "-DN=4", "--compile-option=-DN=4"),
    (["run", "k.cu", *RUN, "--compile-option", "--std=c++17"], "--compile-option", "--std=c++17",
     "--compile-option=--std=c++17"),
    (["compile", "k.ll", "--target", "gfx942", "-o", "x", "--prologue", "-x"], "--prologue", "-x", "--prologue=-x"),
    (["compile", "k.ll", "--target", "gfx942", "-o", "-k.hsaco"], "-o/--output", "-k.hsaco", "--output=-k.hsaco"),
    (["run", "k.cu", "--kernel", "-k", "--grid", "1", "--block", "1"], "--kernel", "-k", "--kernel=-k"),
])
def test_a_value_starting_with_a_dash_is_written_with_equals(capsys, argv, option, value, written):
    first = option.split("/")[0]
    assert usage_error(capsys, argv) == (
        f"pyhipbench {argv[0]}: {option}: expected one argument; a value that starts with '-' is written with '=': "
        f"{written} (not {first} {value}) (pyhipbench {argv[0]} -h for help)")


def test_a_missing_value_is_argparses_own_message(capsys):
    assert usage_error(capsys, ["run", "k.cu", *RUN, "--compile-option"]) == (
        "pyhipbench run: --compile-option: expected one argument (pyhipbench run -h for help)")


def test_a_value_written_with_equals_is_taken(tmp_path, capsys):
    ptx = tmp_path / "k.ptx"
    ptx.write_bytes(COPY_PTX.read_bytes())
    # Parsed, then refused by run itself for what it is: a code object takes no compile options.
    assert cli.main(["run", str(ptx), *RUN, "--compile-option=-DN=4"]) == 2
    assert "--compile-option applies to CUDA/HIP C++ source (.cu, .hip) only" in capsys.readouterr().err


# ---- options the runtime compiler refuses: exit 2 ----

@pytest.mark.parametrize("options, said", [
    (["-foo"], r"nvrtc: error: unrecognized option -foo found"),
    (["-std=c++99"], r"nvrtc: error: invalid value for --std\(-std\)"),
    (["-maxrregcount=many"], r"nvrtc: error: --maxrregcount \(-maxrregcount\) expects an integer value"),
])
def test_nvrtc_refusing_an_option_is_bad_input(options, said):
    require_nvrtc()
    with pytest.raises(CompileOptionError, match=rf"^NVRTC refused the options of source.cu "
                       rf"\(NVRTC_ERROR_INVALID_OPTION; options: {re.escape(options[0])}\): {said}; expected options NVRTC "
                       r"takes, such as -DN=4, -I<folder>, -std=c\+\+17$") as e:
        compile_source("sm_90", 'extern "C" __global__ void k() {}', options=options)
    assert isinstance(e.value, hb.BenchError) and isinstance(e.value, hb.CodegenError)


@pytest.mark.parametrize("options", [["--gpu-architecture=sm_80"], "-DN=4", [""]])
def test_compile_sources_own_option_refusals_are_bad_input_too(options):
    with pytest.raises(CompileOptionError):
        compile_source("sm_90", 'extern "C" __global__ void k() {}', options=options)


def test_a_source_error_is_still_a_compile_error(tmp_path):
    require_nvrtc()
    with pytest.raises(hb.CodegenError) as e:
        compile_source("sm_90", 'extern "C" __global__ void k(int* x) { *x = y; }', options=["-DN=4"])
    assert not isinstance(e.value, hb.BenchError)


def fake_cuda_device(monkeypatch, fake_libraries):
    device = hb.Device.from_backend(HostBackend(backend="cuda", arch="sm_90"),
                                    hb._core.load_driver("cuda", str(fake_libraries["cuda"])))
    monkeypatch.setattr(cli, "_open_device", lambda name, index=0: device)
    return device


def test_run_exits_2_for_an_option_nvrtc_refuses(monkeypatch, fake_libraries, tmp_path, capsys):
    require_nvrtc()
    fake_cuda_device(monkeypatch, fake_libraries)
    source = tmp_path / "k.cu"
    source.write_text('extern "C" __global__ void k(float* p) { p[0] = N; }\n')
    assert cli.main(["run", str(source), *RUN, "--compile-option=-DN=4", "--compile-option=-foo"]) == 2
    err = capsys.readouterr().err
    assert err == (f"pyhipbench run: NVRTC refused the options of k.cu (NVRTC_ERROR_INVALID_OPTION; options: "
                   f"-I{tmp_path} -DN=4 -foo): nvrtc: error: unrecognized option -foo found; expected options NVRTC "
                   "takes, such as -DN=4, -I<folder>, -std=c++17\n")


@pytest.fixture(scope="module")
def fake_hiprtc(tmp_path_factory) -> Path:
    return build_fake(tmp_path_factory.mktemp("fake-hiprtc"), HIPRTC_LIBRARY_NAME)


def test_hiprtc_refusing_an_option_is_bad_input(fake_hip_library, fake_hiprtc, tmp_path):
    require_hip_python()
    require_toolchain("gfx942")
    hsaco = tmp_path / "k.hsaco"
    hb.codegen.compile_ir(IR_DATA / "kernels_gfx942.ll", "gfx942").save(hsaco)
    out = run_with_fake(fake_hip_library, """
import ctypes
from pyhipbench.codegen.source import compile_source
try:
    compile_source("gfx942", 'extern "C" __global__ void copy() {}', name="k.hip", options=["-DN=4", "-foo"])
except Exception as e:
    report(**failure(e), bench=isinstance(e, __import__("pyhipbench").BenchError),
           live=ctypes.CDLL("libhiprtc.so").fake_hiprtc_live_programs())
""", {"LD_LIBRARY_PATH": f"{fake_hip_library.parent}:{fake_hiprtc.parent}", "FAKE_HIPRTC_CODE_OBJECT": str(hsaco)})
    assert out["type"] == "CompileOptionError" and out["bench"] and out["live"] == 0
    assert out["message"] == ("hiprtc refused the options of k.hip (HIPRTC_ERROR_COMPILATION; options: -DN=4 -foo): "
                              "error: unknown argument: '-foo'; expected options hiprtc takes, such as -DN=4, "
                              "-I<folder>, -std=c++17")


# ---- load_module: a str is a path ----

@pytest.fixture
def device():
    return hb.Device.from_backend(HostBackend(), None)


def test_ptx_text_as_a_str_says_to_pass_bytes(device):
    text = COPY_PTX.read_text()
    with pytest.raises(hb.BenchError) as e:
        device.load_module(text)
    message = str(e.value)
    assert message.startswith("code object '// copy(src, dst,...")
    assert f"a str is a path, and this one holds PTX text ({len(text)} characters), not a file name; pass the " \
           "code itself as bytes (text.encode()), or the path of a file holding it" in message
    assert len(message) < 300 and "\n" not in message
    assert device.load_module(text.encode()).kernel("copy")  # as bytes it is the code


@pytest.mark.parametrize("source, why", [
    ("x" * 5000, "holds text of 5000 characters, not a file name"),
    ("k.ptx\0", "holds a NUL character, which no file name can"),
    ("\x7fELF\x02\x01", "holds an ELF image (6 characters)"),
    ("line one\nline two", "holds text of 17 characters over several lines"),
])
def test_a_str_that_cannot_be_a_file_name_is_refused_saying_so(device, source, why):
    with pytest.raises(hb.BenchError, match=r"^code object .*: a str is a path, and this one " + re.escape(why)):
        device.load_module(source)


def test_a_missing_file_says_what_a_str_is(device, tmp_path):
    missing = tmp_path / "none.ptx"
    with pytest.raises(hb.BenchError, match=rf"^code object '{missing}' is not a file \(no such file\); a str names a "
                       r"code object file; pass the code itself as bytes \(text.encode\(\)\)$"):
        device.load_module(str(missing))
    with pytest.raises(hb.BenchError, match=rf"^code object '{tmp_path}' is not a file \(a directory\)$"):
        device.load_module(tmp_path)
    with pytest.raises(hb.BenchError, match=r"^code object 'y+\.\.\.y+' is not a file \(File name too long\)"):
        device.load_module("y" * 300)
