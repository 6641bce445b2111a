"""AMD code generation: IR -> HSACO with the flush first in every kernel,
checked by an independent disassembly as well as by the built-in proof."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pyhipbench.codegen import CodegenError, VerificationError, amdgpu, compile_ir, ir
from pyhipbench.codegen.toolchain import ENV_VAR, ToolchainError
from pyhipbench.codegen.verify import verify_entries

from codegen_helpers import AMD_TARGETS, FLUSH, IR_DATA, disassemble, require, require_toolchain

EI_ABIVERSION = 8  # ELFABIVERSION_AMDGPU_HSA_V4 = 2, V5 = 3, V6 = 4

HAND_WRITTEN = """
target triple = "amdgcn-amd-amdhsa"

define void @helper(ptr addrspace(1) %p) {
  store i32 7, ptr addrspace(1) %p
  ret void
}

define amdgpu_kernel void @"my kernel"(ptr addrspace(1) %p, i32 %v) {
entry:
  store i32 %v, ptr addrspace(1) %p
  ret void
}

define amdgpu_kernel void @calls_helper(ptr addrspace(1) %p) {
  call void @helper(ptr addrspace(1) %p)
  ret void
}
"""


@pytest.mark.parametrize("mcpu", AMD_TARGETS)
def test_flush_is_first_in_every_kernel_from_clang_ir(mcpu, tmp_path):
    require_toolchain(mcpu)
    code = compile_ir(IR_DATA / f"kernels_{mcpu}.ll", mcpu)
    assert code.format == "hsaco" and code.target == mcpu and code.data[:4] == b"\x7fELF"
    assert code.kernels == ("copy", "scale")
    assert code.verification.ok and code.verification.expected == "s_icache_inv"
    assert [e.kernel for e in code.verification.kernels] == ["copy", "scale"]
    functions = disassemble(code.data, mcpu, tmp_path)
    for kernel in ("copy", "scale"):
        assert functions[kernel][:17] == FLUSH, functions[kernel][:20]
    # The non-kernel function is left alone.
    assert "s_icache_inv" not in functions["twice"]


def test_ir_level_injection_alone_is_not_first_on_gfx942(tmp_path):
    """The measured fact that makes the assembly edit necessary, and the proof
    catching it: without the edit, LLVM puts kernel-argument loads first."""
    require_toolchain("gfx942")
    module = ir.inject_prologue(ir.parse(IR_DATA / "kernels_gfx942.ll"),
                                f"{amdgpu._MARKER}\n{amdgpu.FLUSH}")
    asm = amdgpu._emit_assembly(module, "gfx942")
    copy_body = asm[asm.index("\ncopy:\n"):asm.index(";;#ASMSTART")]
    assert "s_load_dword" in copy_body


def test_failed_proof_is_an_error(monkeypatch):
    require_toolchain("gfx942")
    monkeypatch.setattr(amdgpu, "_prologue_first", lambda asm, kernels, preload: asm)
    with pytest.raises(VerificationError) as e:
        compile_ir(IR_DATA / "kernels_gfx942.ll", "gfx942")
    verification = e.value.verification
    assert not verification.ok
    assert all(not k.ok and k.first_instruction.startswith("s_load") for k in verification.kernels)
    assert "FAILED" in str(e.value) and "copy: entry 0x" in str(e.value)


def test_kernel_without_descriptor_fails_the_proof(tmp_path):
    tools = require_toolchain("gfx942")
    code = compile_ir(IR_DATA / "kernels_gfx942.ll", "gfx942")
    path = code.save(tmp_path / "k.hsaco")
    result = verify_entries(path, "gfx942", ["copy", "ghost"], "s_icache_inv", tools.disassembler)
    assert not result.ok and result.missing == ("ghost",)
    assert "ghost: no kernel descriptor ghost.kd [FAILED]" in str(result)


def test_hazard_filler_keeps_the_moved_block_s_wait_state(tmp_path):
    require_toolchain("gfx942")
    code = compile_ir(IR_DATA / "kernels_gfx942.ll", "gfx942")
    body = disassemble(code.data, "gfx942", tmp_path)["copy"]
    # 16 nops of the prologue, plus one where the block was emitted.
    assert body.count("s_nop 0") == 17 and body.count("s_icache_inv") == 1


def test_quoted_name_explicit_entry_label_and_helper(tmp_path):
    require_toolchain("gfx90a")
    code = compile_ir(HAND_WRITTEN, "gfx90a")
    assert code.kernels == ("my kernel", "calls_helper") and code.verification.ok
    functions = disassemble(code.data, "gfx90a", tmp_path)
    assert functions["my kernel"][:17] == FLUSH
    assert functions["calls_helper"][:17] == FLUSH
    assert "s_icache_inv" not in functions["helper"]


def test_bitcode_input():
    require_toolchain("gfx90a")
    code = compile_ir(IR_DATA / "kernels_gfx90a.bc", "gfx90a")
    assert code.kernels == ("copy", "scale") and code.verification.ok


def test_preloaded_arguments_get_the_flush_at_both_entries(tmp_path):
    """gfx942 kernels with `inreg` arguments have a second entry 256 bytes in,
    used by firmware that preloads arguments; it must flush too."""
    require_toolchain("gfx942")
    text = (IR_DATA / "kernels_gfx942.ll").read_text()
    text = text.replace("ptr addrspace(1) noalias noundef readonly captures(none) %src.coerce",
                        "ptr addrspace(1) inreg noalias noundef readonly captures(none) %src.coerce")
    code = compile_ir(text, "gfx942")
    copy_entries = [e for e in code.verification.kernels if e.kernel == "copy"]
    assert [e.preload for e in copy_entries] == [False, True]
    assert copy_entries[1].entry == copy_entries[0].entry + 256
    assert all(e.first_instruction == "s_icache_inv" for e in copy_entries)


@pytest.mark.parametrize("version,abi", [(4, 2), (5, 3), (6, 4)])
def test_code_object_version(version, abi):
    require_toolchain("gfx942")
    code = compile_ir(IR_DATA / "kernels_gfx942.ll", "gfx942", code_object_version=version)
    assert code.data[EI_ABIVERSION] == abi


def test_code_object_version_5_by_default_also_without_the_module_flag():
    require_toolchain("gfx90a")
    assert "amdhsa_code_object_version" not in HAND_WRITTEN
    assert compile_ir(HAND_WRITTEN, "gfx90a").data[EI_ABIVERSION] == 3


def test_bad_code_object_version():
    with pytest.raises(CodegenError, match="code object version 7 is not one of 4, 5, 6"):
        compile_ir(HAND_WRITTEN, "gfx90a", code_object_version=7)


def test_no_icache_flush(tmp_path):
    require_toolchain("gfx942")
    code = compile_ir(IR_DATA / "kernels_gfx942.ll", "gfx942", icache_flush=False)
    assert code.verification is None
    functions = disassemble(code.data, "gfx942", tmp_path)
    assert not any("s_icache_inv" in i for f in functions.values() for i in f)


def test_user_prologue_after_the_flush(tmp_path):
    require_toolchain("gfx942")
    code = compile_ir(IR_DATA / "kernels_gfx942.ll", "gfx942", prologue="s_sleep 1")
    assert disassemble(code.data, "gfx942", tmp_path)["copy"][:18] == FLUSH + ["s_sleep 1"]


def test_user_prologue_alone_is_proven_first(tmp_path):
    require_toolchain("gfx942")
    code = compile_ir(IR_DATA / "kernels_gfx942.ll", "gfx942", icache_flush=False,
                      prologue="; my prologue\ns_sleep 1")
    assert code.verification.ok and code.verification.expected == "s_sleep"
    assert disassemble(code.data, "gfx942", tmp_path)["scale"][0] == "s_sleep 1"


def test_target_id_with_features_compiles_for_the_processor():
    require_toolchain("gfx942")
    assert compile_ir(IR_DATA / "kernels_gfx942.ll", "gfx942:sramecc+:xnack-").target == "gfx942"


def test_save(tmp_path):
    require_toolchain("gfx942")
    code = compile_ir(IR_DATA / "kernels_gfx942.ll", "gfx942")
    assert code.save(tmp_path / "out.hsaco").read_bytes() == code.data


# ---- errors ---------------------------------------------------------------

def test_ir_for_another_processor():
    with pytest.raises(ir.IRError, match='generated for gfx90a .*"target-cpu".*not gfx942'):
        compile_ir(IR_DATA / "kernels_gfx90a.ll", "gfx942")


def test_ir_for_nvptx_names_its_triple():
    with pytest.raises(ir.IRError, match="'nvptx64-nvidia-cuda', but target gfx942 needs 'amdgcn-amd-amdhsa'"):
        compile_ir(IR_DATA / "copy_sm_90.ll", "gfx942")


def test_unknown_triple_is_named():
    with pytest.raises(ir.IRError, match="'x86_64-pc-linux-gnu'"):
        compile_ir('target triple = "x86_64-pc-linux-gnu"\ndefine void @f() { ret void }\n', "gfx942")


def test_unknown_target_name():
    with pytest.raises(CodegenError, match="unknown target 'mi300'.*gfxNNN.*sm_NN"):
        compile_ir(HAND_WRITTEN, "mi300")


def test_no_kernel_names_functions():
    with pytest.raises(ir.IRError, match="functions defined: lonely"):
        compile_ir('target triple = "amdgcn-amd-amdhsa"\ndefine void @lonely() { ret void }\n', "gfx942")


def test_invalid_ir_names_the_line():
    with pytest.raises(ir.IRError, match=r":2:\d+: error"):
        compile_ir('target triple = "amdgcn-amd-amdhsa"\nthis is not IR\n', "gfx942")


def test_ptx_version_on_amd():
    with pytest.raises(CodegenError, match="ptx_version=80 applies to NVIDIA targets, not gfx942"):
        compile_ir(HAND_WRITTEN, "gfx942", ptx_version=80)


def test_missing_toolchain_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    with pytest.raises(ToolchainError, match=f"{tmp_path} \\(\\${ENV_VAR}\\): none of the tools"):
        compile_ir(HAND_WRITTEN, "gfx942")


def test_bad_prologue_is_an_assembler_error():
    require_toolchain("gfx942")
    with pytest.raises(CodegenError, match="(?s)the assembler rejected the code of kernels 'my kernel', 'calls_helper' for gfx942.*llvm-mc.*invalid instruction.*not_an_instruction"):
        compile_ir(HAND_WRITTEN, "gfx942", prologue="not_an_instruction v0")


# ---- an assembler older than llvmlite's LLVM ------------------------------

LLVM19 = Path("/usr/lib/llvm-19/bin")


def require_llvm19() -> None:
    if not all(shutil.which(t, path=str(LLVM19)) for t in ("llvm-mc", "ld.lld", "llvm-objdump")):
        require("LLVM 19 (apt-get install llvm-19 lld-19)", f"no llvm-mc/ld.lld/llvm-objdump in {LLVM19}")


def test_llvm19_assembler_reads_llvm22_metadata(monkeypatch):
    """LLVM 22 writes an argument named `n` unquoted in the kernel metadata;
    LLVM 19 reads `n` as a YAML boolean ("invalid HSA metadata")."""
    require_llvm19()
    monkeypatch.setenv(ENV_VAR, str(LLVM19))
    code = compile_ir(IR_DATA / "kernels_gfx942.ll", "gfx942")
    assert code.verification.ok
    assert b"\xa1n" in code.data  # msgpack string "n", not a boolean


def test_llvm19_rejects_the_unfixed_metadata(tmp_path):
    require_llvm19()
    module = ir.parse(IR_DATA / "kernels_gfx942.ll")
    asm = amdgpu._emit_assembly(amdgpu._with_code_object_version(module, 5), "gfx942")
    assert re.search(r"^\s*- \.name:\s+n$", asm, re.MULTILINE)
    (tmp_path / "k.s").write_text(asm)
    r = subprocess.run([LLVM19 / "llvm-mc", "--triple=amdgcn-amd-amdhsa", "--mcpu=gfx942",
                        "-filetype=obj", tmp_path / "k.s", "-o", tmp_path / "k.o"],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "invalid HSA metadata" in r.stderr


def test_llvm19_on_gfx1100_points_to_a_newer_assembler(monkeypatch):
    """LLVM 22 writes .amdhsa_inst_pref_size for gfx11, which LLVM 19 does not
    know; the error says why and what to install."""
    require_llvm19()
    monkeypatch.setenv(ENV_VAR, str(LLVM19))
    with pytest.raises(CodegenError, match="(?s)inst_pref_size.*older than the LLVM 22 in llvmlite"):
        compile_ir(IR_DATA / "kernels_gfx1100.ll", "gfx1100")
