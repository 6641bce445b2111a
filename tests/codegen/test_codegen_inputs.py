"""The codegen layer's bad inputs: each
gives one package error naming the bad value and what was expected; nothing
is accepted silently (icache_flush="yes", sm_1, a garbage PTX prologue) and
no ValueError / OSError / struct.error escapes compile_ir."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from pyhipbench import Error
from pyhipbench.codegen import CodegenError, compile_for_device, compile_ir, triple_of
from pyhipbench.errors import IRError

from codegen_helpers import IR_DATA, require_toolchain

AMD = """
target triple = "amdgcn-amd-amdhsa"
define amdgpu_kernel void @copy(ptr addrspace(1) %p, i32 %v) {
  store i32 %v, ptr addrspace(1) %p
  ret void
}
"""
NVIDIA = AMD.replace("amdgcn-amd-amdhsa", "nvptx64-nvidia-cuda").replace("amdgpu_kernel", "ptx_kernel")


def test_every_codegen_error_is_a_package_error():
    assert issubclass(CodegenError, Error) and issubclass(IRError, Error)


# ---- icache_flush ----------------------------------------------------------

@pytest.mark.parametrize("value", ["yes", "no", 1, 0, "", [], 1.0])
def test_icache_flush_takes_only_true_false_or_none(value):
    with pytest.raises(CodegenError, match=rf"^icache_flush={re.escape(repr(value))}: expected True, False or None"):
        compile_ir(AMD, "gfx942", icache_flush=value)


def test_icache_flush_numpy_bool_is_a_bool():
    require_toolchain("gfx942")
    assert compile_ir(AMD, "gfx942", icache_flush=np.bool_(False)).verification is None
    assert compile_ir(AMD, "gfx942", icache_flush=np.bool_(True)).verification.expected == "s_icache_inv"


# ---- targets ---------------------------------------------------------------

@pytest.mark.parametrize("target", ["sm_1", "sm_91", "sm_90b", "gfx9999", "gfx"])
def test_unknown_processor_lists_what_llvm_knows(target):
    with pytest.raises(CodegenError, match=rf"^unknown target {target!r}: llvmlite's LLVM \d+ does not know "
                       r"this processor; expected one it knows: .*"):
        compile_ir(NVIDIA if target.startswith("sm") else AMD, target)


def test_unknown_processor_message_lists_the_family():
    with pytest.raises(CodegenError) as e:
        compile_ir(NVIDIA, "sm_1")
    known = str(e.value).split("expected one it knows: ")[1].split(", ")
    assert {"sm_90", "sm_90a", "sm_100a", "sm_120f"} <= set(known)
    assert not any(k.startswith("gfx") for k in known)


@pytest.mark.parametrize("target", ["sm_90a", "sm_100a", "sm_120f", "sm_80"])
def test_arch_specific_nvidia_targets(target):
    code = compile_ir(NVIDIA, target)
    assert code.target == target and f".target {target}" in code.data.decode()


@pytest.mark.parametrize("target", ["gfx942:sramecc+:xnack-", "gfx90a:xnack+", "gfx942:sramecc-"])
def test_hip_target_ids_compile_for_the_processor(target):
    require_toolchain("gfx942")
    assert compile_ir(AMD, target).target == target.split(":")[0]


@pytest.mark.parametrize("target,message", [
    ("gfx942:xnack", "'xnack' is not a target feature setting; expected sramecc or xnack followed by + or -"),
    ("gfx942:fast+", "'fast+' is not a target feature setting"),
    ("gfx942:xnack+:xnack-", "a feature is set twice"),
    ("sm_90:xnack+", "only AMD targets take :feature+/- settings"),
])
def test_bad_target_features(target, message):
    with pytest.raises(CodegenError, match=rf"^target {re.escape(repr(target))}: {re.escape(message)}"):
        compile_ir(AMD, target)


@pytest.mark.parametrize("target", [942, None, b"gfx942"])
def test_target_must_be_a_string(target):
    with pytest.raises(CodegenError, match=rf"^target {re.escape(repr(target))}: expected a processor name"):
        compile_ir(AMD, target)


def test_triple_of_checks_the_processor():
    assert triple_of("sm_90a") == "nvptx64-nvidia-cuda"
    assert triple_of("gfx942:xnack-") == "amdgcn-amd-amdhsa"
    with pytest.raises(CodegenError, match="^unknown target 'sm_1'"):
        triple_of("sm_1")


# ---- ptx_version / code_object_version -------------------------------------

@pytest.mark.parametrize("value", ["80", 8.0, True, -80, 0])
def test_ptx_version_must_be_a_positive_integer(value):
    with pytest.raises(CodegenError, match=rf"^ptx_version {re.escape(repr(value))}: expected the PTX ISA "
                       r"version times ten as a positive integer"):
        compile_ir(NVIDIA, "sm_90", ptx_version=value)


def test_ptx_version_llvm_does_not_know():
    with pytest.raises(CodegenError, match=r"^ptx_version 79: LLVM \d+ knows no PTX ISA version 7\.9"):
        compile_ir(NVIDIA, "sm_90", ptx_version=79)


def test_ptx_version_below_what_the_sm_needs():
    # LLVM aborts creating such a target machine: contained, and quoted.
    with pytest.raises(CodegenError, match=r"^LLVM aborted creating a target machine for sm_90 with \+ptx70: "
                       r"LLVM ERROR: PTX version 7\.0 does not support target 'sm_90'\. Minimum required "
                       r"PTX version is 7\.8"):
        compile_ir(NVIDIA, "sm_90", ptx_version=70)


def test_ptx_version_numpy_integer():
    assert b".version 8.0" in compile_ir(NVIDIA, "sm_90", ptx_version=np.int64(80)).data


@pytest.mark.parametrize("value", ["5", 5.0, True, 7, 3, None])
def test_code_object_version_must_be_4_5_or_6(value):
    with pytest.raises(CodegenError, match=rf"^code object version {re.escape(repr(value))} is not one of 4, 5, 6"):
        compile_ir(AMD, "gfx942", code_object_version=value)


def test_code_object_version_numpy_integer():
    require_toolchain("gfx942")
    assert compile_ir(AMD, "gfx942", code_object_version=np.int64(4)).data[8] == 2


# ---- prologues -------------------------------------------------------------

@pytest.mark.parametrize("prologue,message", [
    ("garbage", "PTX prologue statement 'garbage' does not end in ';'"),
    ("membar.gl", "PTX prologue statement 'membar.gl' does not end in ';'"),
    ("hello world;", "PTX prologue statement 'hello world;': 'hello' is not a PTX instruction"),
    ("}", "PTX prologue '}': '}' closes a brace it did not open \\(it would end the kernel\\)"),
    ("membar.gl; }\n.entry evil() {", "'}' closes a brace it did not open"),
    (".entry evil();", "'.entry' is not a directive a kernel body may hold"),
    (".version 8.0;", "'.version' is not a directive a kernel body may hold"),
    ("{ membar.gl;", "1 '\\{' not closed"),
    ("{ mov.u32 %r1, 1 }", "'mov.u32 %r1, 1' before '}' does not end in ';'"),
    ("/* open", "a /\\* comment is not closed"),
    ("// only a comment", "holds no statement"),
])
def test_bad_ptx_prologue(prologue, message):
    """(Registers: see test_ptx_prologue_registers.)"""
    with pytest.raises(CodegenError, match=message):
        compile_ir(NVIDIA, "sm_90", prologue=prologue)


@pytest.mark.parametrize("prologue", [
    "membar.gl;",
    "{ .reg .b32 r; mov.b32 r, 1; }",
    "// a comment\n/* block */ .reg .pred %p0; nanosleep.u32 10;\n@%p0 bra.uni done;\n@!%p0 membar.cta;",
    "fence.proxy.async; wgmma.fence.sync.aligned;",
    "{ .reg .b32 %r<2>; .reg .u64 %t; mov.u32 %r1, %tid.x; mov.u64 %t, %globaltimer; }",
])
def test_good_ptx_prologue_is_placed_in_the_kernel(prologue):
    ptx = compile_ir(NVIDIA, "sm_90a", prologue=prologue).data.decode()
    assert prologue.splitlines()[-1].strip() in ptx


def test_amd_prologue_without_an_instruction():
    with pytest.raises(CodegenError, match=r"^prologue '; nothing here' holds no instruction"):
        compile_ir(AMD, "gfx942", icache_flush=False, prologue="; nothing here")


def test_amd_prologue_holding_the_inline_asm_markers():
    with pytest.raises(CodegenError, match="holds LLVM's inline-asm markers"):
        compile_ir(AMD, "gfx942", prologue="s_nop 0\n;;#ASMEND")


@pytest.mark.parametrize("target", ["gfx942", "sm_90"])
def test_prologue_must_be_text(target):
    with pytest.raises(CodegenError, match=r"^prologue 42: expected assembly text \(str\), got int"):
        compile_ir(AMD if target.startswith("gfx") else NVIDIA, target, prologue=42)


def test_amd_assembler_error_names_the_kernel_and_quotes_the_assembler():
    require_toolchain("gfx942")
    with pytest.raises(CodegenError, match=r"(?s)^the assembler rejected the code of kernel 'copy' for gfx942 "
                       r".*llvm-mc.*error: invalid instruction.*s_bogus v0"):
        compile_ir(AMD, "gfx942", prologue="s_bogus v0")


# ---- the input -------------------------------------------------------------

def test_missing_file(tmp_path):
    path = tmp_path / "missing.ll"
    with pytest.raises(IRError, match=rf"^cannot read the IR file {re.escape(str(path))}: No such file"):
        compile_ir(path, "gfx942")


def test_directory(tmp_path):
    with pytest.raises(IRError, match=rf"^cannot read the IR file {re.escape(str(tmp_path))}: Is a directory"):
        compile_ir(tmp_path, "gfx942")


def test_not_utf8_and_not_bitcode(tmp_path):
    path = tmp_path / "latin1.ll"
    path.write_bytes(b"; caf\xe9\n" + AMD.encode())
    with pytest.raises(IRError, match=rf"^{re.escape(str(path))} is neither LLVM bitcode \(no BC magic number\) "
                       r"nor UTF-8 IR text \(byte 0xe9 at offset 5\)"):
        compile_ir(path, "gfx942")


def test_truncated_bitcode(tmp_path):
    path = tmp_path / "cut.bc"
    path.write_bytes((IR_DATA / "kernels_gfx90a.bc").read_bytes()[:300])
    with pytest.raises(IRError, match=rf"^invalid LLVM IR in {re.escape(str(path))}: "):
        compile_ir(path, "gfx90a")


def test_nul_in_ir_text():
    with pytest.raises(IRError, match=r"^<ir> holds a NUL character at offset 3"):
        compile_ir("; a\0b\n" + AMD, "gfx942")


def test_source_of_the_wrong_type():
    with pytest.raises(IRError, match="^expected LLVM IR text .* got int"):
        compile_ir(42, "gfx942")


def test_a_str_that_looks_like_a_path_gets_a_hint():
    with pytest.raises(IRError, match=r"(?s)invalid LLVM IR in <ir>.*a str is IR text; to read the file "
                       r"'kernels\.ll' pass pathlib\.Path\('kernels\.ll'\)"):
        compile_ir("kernels.ll", "gfx942")


def test_compile_for_device_with_a_driver_older_than_cuda_11():
    device = SimpleNamespace(arch="sm_90", backend=SimpleNamespace(compile_driver_version=lambda: 10020))
    with pytest.raises(CodegenError, match="^CUDA driver 10.2 predates PTX ISA 7.0"):
        compile_for_device(NVIDIA, device)


def test_path_given_as_pathlib_is_read():
    assert compile_ir(Path(IR_DATA / "copy_sm_90.ll"), "sm_90").kernels == ("copy",)


@pytest.mark.parametrize("prologue, register", [
    ("mov.u32 %nope, 1;", "%nope"),                          # never declared
    ("mov.u32 %r1, 1;", "%r1"),                              # the kernel's own registers are LLVM's
    (".reg .b32 %r<2>; mov.u32 %r2, 1;", "%r2"),             # %r<2> declares %r0 and %r1 only
    ("@%p bra.uni done;", "%p"),                             # a guard predicate is a register too
])
def test_ptx_prologue_registers_must_be_its_own_or_special(prologue, register):
    with pytest.raises(CodegenError, match=f"register {register} is neither declared by the prologue's own "
                                           r"\.reg nor a PTX special register"):
        compile_ir(NVIDIA, "sm_90", prologue=prologue)
