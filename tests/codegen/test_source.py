"""Kernels from CUDA C++ source through NVRTC (the real libnvrtc, on the CPU: compiling needs no GPU),
and compile_source's input checks."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

import pyhipbench as hb
from pyhipbench import cli
from pyhipbench._codeobject import elf
from pyhipbench._codeobject import image as codeobject
from pyhipbench.codegen import source
from pyhipbench.codegen.source import CompiledSource, compile_source
from pyhipbench.errors import CodegenError, ToolchainError

from codegen_helpers import require_nvrtc
from fakes.host_backend import HostBackend

SOURCE = """
#include "scale.h"
extern "C" __global__ void copy(const float* src, float* dst, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i] * SCALE;
}
template <typename T, int N> __global__ void fill(T* out) { out[threadIdx.x] = T(N); }
"""


@pytest.fixture
def include(tmp_path):
    (tmp_path / "scale.h").write_text("#define SCALE 2.0f\n")
    return f"-I{tmp_path}"


def test_cuda_source_compiles_to_a_cubin_with_lowered_names(include):
    require_nvrtc()
    code = compile_source("sm_90a", SOURCE, name_expressions=["copy", "fill<float, 4>"],
                          options=[include, "-std=c++17"])
    assert isinstance(code, CompiledSource) and code.format == "cubin" and code.target == "sm_90a"
    assert code.lowered_names == {"copy": "copy", "fill<float, 4>": "_Z4fillIfLi4EEvPT_"}
    assert code.kernels == ("_Z4fillIfLi4EEvPT_", "copy")
    assert codeobject.detect_format(code.data) == "cubin" and elf.machine(code.data) == codeobject.EM_CUDA
    assert code.log == ""


def test_defines_reach_the_compiler(include):
    require_nvrtc()
    with pytest.raises(CodegenError, match="SCALE"):  # no header, no define: SCALE is undefined
        compile_source("sm_90", SOURCE.replace('#include "scale.h"', ""))
    code = compile_source("sm_90", SOURCE.replace('#include "scale.h"', ""), options=["-DSCALE=3.0f"])
    assert code.kernels == ("copy",)


def test_a_compile_error_carries_the_compilers_log():
    require_nvrtc()
    with pytest.raises(CodegenError, match=r"(?s)NVRTC could not compile k\.cu for sm_90a \(NVRTC_ERROR_COMPILATION; "
                       r"options: --gpu-architecture=sm_90a -DN=1\):\nk\.cu\(2\): error: identifier \"undefined_name\" "
                       r"is undefined"):
        compile_source("sm_90a", 'extern "C" __global__ void k(int* x) {\n  *x = undefined_name; }\n',
                       options=["-DN=1"], name="k.cu")


def test_a_failing_program_destroy_does_not_hide_the_compile_error(monkeypatch):
    require_nvrtc()
    destroyed = []

    def destroy(self, program):
        destroyed.append(program)
        raise CodegenError("NVRTC DestroyProgram failed: NVRTC_ERROR_INVALID_PROGRAM (5)")
    monkeypatch.setattr(source._Nvrtc, "destroy", destroy)
    with pytest.raises(CodegenError, match=r"(?s)NVRTC could not compile k\.cu for sm_90a .*\"undefined_name\""):
        compile_source("sm_90a", 'extern "C" __global__ void k(int* x) {\n  *x = undefined_name; }\n', name="k.cu")
    assert len(destroyed) == 1  # still freed, once


def test_a_name_expression_that_names_no_kernel_is_a_codegen_error():
    require_nvrtc()
    with pytest.raises(CodegenError, match="no_such_kernel"):
        compile_source("sm_90", 'extern "C" __global__ void k() {}', name_expressions=["no_such_kernel<int>"])


def test_warnings_are_kept_in_the_log():
    require_nvrtc()
    code = compile_source("sm_90", '#warning tile size not tuned\nextern "C" __global__ void k() {}')
    assert "source.cu(1): warning" in code.log and "tile size not tuned" in code.log and code.kernels == ("k",)


def test_compiling_leaves_the_interpreters_shared_bytes_intact():
    """An empty log is one NUL byte. Handed `b" " * 1`, the interpreter's shared one-byte b" ", NVRTC
    overwrote it with b"\\0" for the whole process: every later 1-byte slice of 0x20 read as 0, so an HSACO
    argument at kernarg offset 32 (0x20) was parsed at offset 0 and its launch overwrote the first argument."""
    require_nvrtc()
    code = compile_source("sm_90", 'extern "C" __global__ void k() {}')
    assert code.log == "" and code.kernels == ("k",)
    assert [bytes([value])[0] for value in range(256)] == list(range(256))
    assert b"\x00\x20"[1:][0] == 0x20


def test_a_device_compiles_for_its_arch_specific_target():
    require_nvrtc()
    hopper = SimpleNamespace(properties=SimpleNamespace(arch="sm_90"))
    assert compile_source(hopper, 'extern "C" __global__ void k() {}').target == "sm_90a"
    ampere = SimpleNamespace(properties=SimpleNamespace(arch="sm_80"))
    assert compile_source(ampere, 'extern "C" __global__ void k() {}').target == "sm_80"


@pytest.mark.parametrize("call, message", [
    (dict(text=b"bytes"), "source b'bytes': expected C\\+\\+ source text \\(str\\), got bytes"),
    (dict(options="-DN=1"), "options='-DN=1': expected a list of strings"),
    (dict(options=["-DN=1", 4]), "options: 4 is not a non-empty string without NUL bytes"),
    (dict(name_expressions=[""]), "name_expressions: '' is not a non-empty string"),
    (dict(options=["--gpu-architecture=sm_80"]), "option '--gpu-architecture=sm_80': the processor comes from "
                                                 "the target \\(sm_90\\); leave the architecture option out"),
    (dict(target="sm_1"), "unknown target 'sm_1'"),
    (dict(target=42), "target 42: expected a pyhipbench.Device or a processor name such as sm_90a or gfx942"),
])
def test_bad_input_names_the_value(call, message):
    arguments = dict(target="sm_90", text='extern "C" __global__ void k() {}') | call
    with pytest.raises(CodegenError, match=message):
        compile_source(arguments.pop("target"), arguments.pop("text"), **arguments)


def test_without_nvrtc_says_what_to_install(monkeypatch):
    from cuda.bindings import nvrtc

    def missing():
        raise RuntimeError("Failure finding libnvrtc.so")
    monkeypatch.setattr(nvrtc, "nvrtcVersion", missing)
    with pytest.raises(ToolchainError, match="cannot load libnvrtc \\(Failure finding libnvrtc.so\\): "
                       "pip install nvidia-cuda-nvrtc"):
        compile_source("sm_90", 'extern "C" __global__ void k() {}')


# ---- pyhipbench run with a .cu file (devices from the fakes) ----

def open_fake(monkeypatch, fake_libraries, backend: str):
    """`pyhipbench run`'s device: host memory, the fake driver, the arch of an H200 or an MI300X."""
    device = hb.Device.from_backend(HostBackend(backend=backend, arch="sm_90" if backend == "cuda" else "gfx942"),
                                    hb._core.load_driver(backend, str(fake_libraries[backend])))
    monkeypatch.setattr(cli, "_open_device", lambda name, index=0: device)
    return device


def test_run_shows_the_compilers_log_without_a_traceback(monkeypatch, fake_libraries, tmp_path, capsys):
    require_nvrtc()
    open_fake(monkeypatch, fake_libraries, "cuda")
    source = tmp_path / "k.cu"
    source.write_text('extern "C" __global__ void k(int* x) {\n  *x = undefined_name; }\n')
    assert cli.main(["run", str(source), "--kernel", "k", "--grid", "1", "--block", "1",
                     "--compile-option=-DN=1"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("pyhipbench run: NVRTC could not compile k.cu for sm_90a")
    assert f"--gpu-architecture=sm_90a -I{tmp_path} -DN=1" in err and 'identifier "undefined_name" is undefined' in err


@pytest.mark.parametrize("suffix, backend", [(".cu", "hip"), (".hip", "cuda")])
def test_run_refuses_source_for_the_other_vendor(monkeypatch, fake_libraries, tmp_path, capsys, suffix, backend):
    open_fake(monkeypatch, fake_libraries, backend)
    source = tmp_path / f"k{suffix}"
    source.write_text('extern "C" __global__ void k() {}')
    assert cli.main(["run", str(source), "--kernel", "k", "--grid", "1", "--block", "1"]) == 2
    language = "CUDA" if suffix == ".cu" else "HIP"
    assert capsys.readouterr().err == (f"pyhipbench run: {source} is {language} C++ (by its suffix), but the device "
                                       f"is a {backend} one; expected a {'.cu' if backend == 'cuda' else '.hip'} file\n")


def test_source_only_options_are_refused_for_other_input(tmp_path, capsys):
    ptx = tmp_path / "k.ptx"
    ptx.write_text(".version 7.8\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n ret;\n}\n")
    assert cli.main(["run", str(ptx), "--kernel", "k", "--grid", "1", "--block", "1",
                     "--compile-option=-DN=1"]) == 2
    assert "--compile-option applies to CUDA/HIP C++ source (.cu, .hip) only" in capsys.readouterr().err
    source = tmp_path / "k.cu"
    source.write_text('extern "C" __global__ void k() {}')
    assert cli.main(["run", str(source), "--kernel", "k", "--grid", "1", "--block", "1", "--no-icache-flush"]) == 2
    assert f"--no-icache-flush applies to LLVM IR input only; {source} is a C++ source file" in capsys.readouterr().err
    assert cli.main(["compile", str(source), "--target", "sm_90a", "-o", str(tmp_path / "k.ptx")]) == 2
    assert f"{source} is C++ source; compile takes LLVM IR" in capsys.readouterr().err
