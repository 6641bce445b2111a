"""What AMD code generation refuses in a prologue and in the IR, each with one message naming the value.

A prologue runs before the kernel's code (amdgpu.py moves it there), so one
that writes a register the hardware preloads at entry (the kernarg segment
pointer, the other user and system SGPRs, the work-item IDs, exec) or a
hardware register the descriptor sets (s_setreg) is a CodegenError naming the
instruction, the register and what it holds. IR whose own inline asm holds
the marker the injected block is found by, and IR whose datalayout is another
target's, are IRErrors naming the text and the datalayout.
"""
from __future__ import annotations

import pytest

from pyhipbench import cli
from pyhipbench.codegen import CodegenError, compile_ir, ir
from pyhipbench.codegen.amdgpu import _MARKER
from pyhipbench.codegen.prologue import entry_registers, written_registers

from codegen_helpers import IR_DATA, require_toolchain

GFX942_COPY = """
    .amdhsa_user_sgpr_count 2
    .amdhsa_user_sgpr_dispatch_ptr 0
    .amdhsa_user_sgpr_kernarg_segment_ptr 1
    .amdhsa_user_sgpr_kernarg_preload_length 0
    .amdhsa_system_sgpr_workgroup_id_x 1
    .amdhsa_system_sgpr_workgroup_id_y 0
    .amdhsa_system_vgpr_workitem_id 0
"""


@pytest.mark.parametrize("statement, written", [
    ("s_mov_b64 s[0:1], 0", ["s[0:1]"]),
    ("S_MOV_B32 S2, 0", ["s2"]),
    ("s_load_dwordx2 s[4:5], s[0:1], 0x0", ["s[4:5]"]),
    ("v_mov_b32_e32 v0, 0", ["v0"]),
    ("v_add_co_u32 v4, vcc, v0, v1", ["v4", "vcc"]),
    ("v_add_co_u32_e64 v4, s[8:9], v0, v1", ["v4", "s[8:9]"]),
    ("v_add_u32 v4, s0, v1", ["v4"]),  # gfx9: no carry-out, s0 is read
    ("v_mad_u64_u32 v[2:3], s[4:5], v0, v1, v[6:7]", ["v[2:3]", "s[4:5]"]),
    ("s_and_saveexec_b64 s[2:3], vcc", ["s[2:3]", "exec"]),
    ("v_cmpx_eq_u32_e32 v0, v1", ["exec"]),  # gfx10+: the first operand is read
    ("v_cmp_eq_u32_e64 s[0:1], v0, v1", ["s[0:1]"]),
    ("v_swap_b32 v1, v2", ["v1", "v2"]),
    ("s_cmp_eq_u32 s0, s1", []),
    ("global_store_dword v[4:5], v0, off", []),
    ("ds_write_b32 v0, v1", []),
    ("ds_add_u32 v0, v1", []),  # an LDS atomic without a return reads its address
    ("ds_add_rtn_u32 v0, v1, v2", ["v0"]),
    ("global_atomic_add v[1:2], v3, off", []),
    ("global_atomic_add v0, v[1:2], v3, off glc", ["v0"]),
    ("global_atomic_add_f32 v0, v[1:2], v3, off sc0", ["v0"]),
    ("buffer_load_dword v1, off, s[0:3], 0", ["v1"]),
    ("s_waitcnt lgkmcnt(0)", []),
    ("s_waitcnt_vscnt null, 0x0", []),
    ("s_nop 0", []),
    ("s_icache_inv", []),
    ("s_setpc_b64 s[0:1]", []),
    ("s_mov_b32 m0, -1", ["m0"]),
    ("s_mov_b64 [s0, s1], 0", ["[s0, s1]"]),
    ("s_getreg_b32 s3, hwreg(HW_REG_MODE)", ["s3"]),
])
def test_written_registers(statement, written):
    assert written_registers(statement) == written


def test_entry_registers_follow_the_descriptor():
    gfx942 = entry_registers("copy", GFX942_COPY)
    assert gfx942.summary() == ("s[0:1] kernarg segment pointer, s2 work-group ID x, v[0:2] work-item IDs, exec "
                                "execution mask")
    gfx90a = entry_registers("copy", GFX942_COPY.replace("user_sgpr_count 2", "user_sgpr_count 6") +
                             "    .amdhsa_user_sgpr_private_segment_buffer 1\n")
    assert gfx90a.roles["s3"] == "private segment buffer" and gfx90a.roles["s5"] == "kernarg segment pointer"
    assert gfx90a.roles["s6"] == "work-group ID x"
    preloading = entry_registers("copy", GFX942_COPY.replace("user_sgpr_count 2", "user_sgpr_count 4").replace(
        "kernarg_preload_length 0", "kernarg_preload_length 2"))
    assert [preloading.roles[f"s{i}"] for i in range(5)] == ["kernarg segment pointer"] * 2 + [
        "preloaded kernel arguments"] * 2 + ["work-group ID x"]
    padded = entry_registers("copy", GFX942_COPY.replace("user_sgpr_count 2", "user_sgpr_count 15"))  # gfx11
    assert padded.roles["s15"] == "work-group ID x" and padded.roles["s5"] == "user SGPR data"
    assert "s[2:14] user SGPR data" in padded.summary() and "s16" not in padded.roles
    unknown = entry_registers("k", "    .amdhsa_user_sgpr_count 1\n    .amdhsa_user_sgpr_kernarg_segment_ptr 1\n")
    assert unknown.roles["s0"] == unknown.roles["s1"] == "user SGPR data"  # more roles than the count: all kept
    for workitem_id in (0, 2):  # v0-v2 either way
        ids = entry_registers("k", GFX942_COPY.replace("workitem_id 0", f"workitem_id {workitem_id}"))
        assert [ids.roles[v] for v in ("v0", "v1", "v2")] == ["work-item IDs"] * 3 and "v3" not in ids.roles


@pytest.mark.parametrize("mcpu, prologue, register, role", [
    ("gfx942", "s_mov_b64 s[0:1], 0", "s[0:1]", "kernarg segment pointer"),
    ("gfx942", "s_load_dwordx2 s[0:1], s[0:1], 0x0", "s[0:1]", "kernarg segment pointer"),
    ("gfx942", "s_mov_b32 s2, 0", "s2", "work-group ID x"),
    ("gfx942", "v_mov_b32 v0, 0", "v0", "work-item IDs"),
    ("gfx942", "v_mov_b32 v2, 0", "v2", "work-item IDs"),
    ("gfx942", "s_mov_b64 exec, 0", "exec", "execution mask"),
    ("gfx942", "s_and_saveexec_b64 s[8:9], vcc", "exec", "execution mask"),
    ("gfx90a", "s_mov_b64 s[4:5], 0", "s[4:5]", "kernarg segment pointer"),
    ("gfx90a", "s_mov_b32 s0, 0", "s0", "private segment buffer"),
    ("gfx1100", "s_mov_b32 s15, 0", "s15", "work-group ID x"),
    ("gfx1100", "s_mov_b32 s7, 0", "s7", "user SGPR data"),
])
def test_a_prologue_writing_a_preloaded_register_is_refused(mcpu, prologue, register, role):
    require_toolchain(mcpu)
    with pytest.raises(CodegenError, match=rf"^prologue instruction '{prologue.replace('[', '.').replace(']', '.')}' "
                       rf"writes {register.replace('[', '.').replace(']', '.')}, which holds the {role} of kernel "
                       rf"'copy' \({mcpu}\) at entry: the prologue runs before the kernel's code, so it must not write "
                       r"what the hardware preloads \(here .*kernarg segment pointer.*\); expected a prologue that "
                       r"writes other registers$"):
        compile_ir(IR_DATA / f"kernels_{mcpu}.ll", mcpu, prologue=prologue)


def test_a_prologue_writing_preloaded_kernel_arguments_is_refused():
    require_toolchain("gfx942")
    text = (IR_DATA / "kernels_gfx942.ll").read_text()
    text = text.replace("ptr addrspace(1) noalias noundef readonly captures(none) %src.coerce",
                        "ptr addrspace(1) inreg noalias noundef readonly captures(none) %src.coerce")
    with pytest.raises(CodegenError, match=r"writes s2, which holds the preloaded kernel arguments of kernel 'copy'"):
        compile_ir(text, "gfx942", prologue="s_mov_b32 s2, 0")


def test_a_prologue_setting_a_hardware_register_is_refused():
    require_toolchain("gfx942")
    with pytest.raises(CodegenError, match=r"^prologue instruction 's_setreg_imm32_b32 hwreg\(HW_REG_MODE\), 0' writes "
                       r"a hardware register \(s_setreg_imm32_b32\): the float modes"):
        compile_ir(IR_DATA / "kernels_gfx942.ll", "gfx942", prologue="s_setreg_imm32_b32 hwreg(HW_REG_MODE), 0")


@pytest.mark.parametrize("prologue", ["s_mov_b32 s20, 0\nv_mov_b32 v5, 0", "s_getpc_b64 s[20:21] ; a comment",
                                      "global_store_dword v[4:5], v0, off\ns_waitcnt vmcnt(0)",
                                      "v_add_co_u32 v4, vcc, v0, v1", "s_mov_b32 s3, 0"])
def test_a_prologue_writing_free_registers_is_compiled_and_proven(prologue):
    require_toolchain("gfx942")
    code = compile_ir(IR_DATA / "kernels_gfx942.ll", "gfx942", prologue=prologue)
    assert code.verification.ok


def test_an_unknown_instruction_is_the_assemblers_to_refuse():
    require_toolchain("gfx942")
    with pytest.raises(CodegenError, match=r"the assembler rejected the code of kernels 'copy', 'scale'"):
        compile_ir(IR_DATA / "kernels_gfx942.ll", "gfx942", prologue="s_bogus v0")


def test_compile_refuses_the_prologue_in_one_line(tmp_path, capsys):
    require_toolchain("gfx942")
    assert cli.main(["compile", str(IR_DATA / "kernels_gfx942.ll"), "--target", "gfx942", "--prologue",
                     "s_mov_b64 s[0:1], 0", "-o", str(tmp_path / "k.hsaco")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("pyhipbench compile: prologue instruction 's_mov_b64 s[0:1], 0' writes s[0:1], which "
                          "holds the kernarg segment pointer of kernel 'copy' (gfx942)")
    assert err.count("\n") == 1 and not (tmp_path / "k.hsaco").exists()


# ---- the IR's own inline asm holding the marker ----

def marked_ir() -> str:
    text = (IR_DATA / "kernels_gfx942.ll").read_text()
    head, _, rest = text.partition("define protected amdgpu_kernel void @copy(")
    assert rest, "kernels_gfx942.ll defines copy"
    body_start = rest.index("{\nentry:\n") + len("{\nentry:\n")
    asm = f'  call void asm sideeffect "{_MARKER}\\0As_nop 0", ""()\n'
    return head + "define protected amdgpu_kernel void @copy(" + rest[:body_start] + asm + rest[body_start:]


def test_ir_whose_own_asm_holds_the_marker_is_refused_saying_why():
    require_toolchain("gfx942")
    with pytest.raises(ir.IRError, match=r"^the IR's own inline asm holds the text '; pyhipbench prologue' \(in "
                       r"copy\), the marker pyhipbench finds its injected prologue by"):
        compile_ir(marked_ir(), "gfx942")


def test_ir_printed_after_an_injection_is_refused_and_compiles_without_a_prologue():
    require_toolchain("gfx942")
    injected = str(ir.inject_prologue(ir.parse(IR_DATA / "kernels_gfx942.ll"), f"{_MARKER}\ns_nop 0"))
    with pytest.raises(ir.IRError, match=r"\(in copy, scale\)"):
        compile_ir(injected, "gfx942")
    assert compile_ir(injected, "gfx942", icache_flush=False).verification is None  # nothing injected: no marker


def test_ir_holding_other_inline_asm_compiles():
    require_toolchain("gfx942")
    text = marked_ir().replace(f"{_MARKER}\\0A", "")
    assert compile_ir(text, "gfx942").verification.ok


# ---- datalayouts of other targets ----

X86_LAYOUT = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
KERNEL = 'target datalayout = "{}"\ndefine amdgpu_kernel void @f() {{\n  ret void\n}}\n'
PTX_KERNEL = 'target datalayout = "{}"\ndefine ptx_kernel void @f() {{\n  ret void\n}}\n'


@pytest.mark.parametrize("layout, said", [
    (X86_LAYOUT, r"A0 \(alloca address space\) and n8:16:32:64 \(native integer widths\) where the target has A5 "
                 r"and n32:64"),
    ("e-p:32:32-A5-n32:64", r"p:32 \(pointer size\) where the target has p:64"),
    ("E-p:64:64-A5-n32:64", r"E \(byte order\) where the target has e"),
])
def test_ir_with_another_targets_datalayout_is_refused(layout, said):
    require_toolchain("gfx942")
    with pytest.raises(ir.IRError, match=rf"^the IR's datalayout '{layout}' is not one for amdgcn-amd-amdhsa "
                       rf"\(gfx942\): it says {said}, so the IR was generated for another target; expected IR "
                       r"generated for gfx942, or with no datalayout line$"):
        compile_ir(KERNEL.format(layout), "gfx942")


def test_an_x86_datalayout_is_refused_for_nvidia_too():
    with pytest.raises(ir.IRError, match=r"it says n8:16:32:64 \(native integer widths\) where the target has "
                       r"n16:32:64"):
        compile_ir(PTX_KERNEL.format(X86_LAYOUT), "sm_90")


def test_this_and_older_llvm_layouts_of_the_target_compile():
    require_toolchain("gfx942")
    older = ("e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-i64:64-v16:16-v24:32-v32:32-v48:64-"
             "v96:128-v192:256-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7")  # LLVM 12's
    assert compile_ir(KERNEL.format(older), "gfx942").kernels == ("f",)
    assert compile_ir("define amdgpu_kernel void @f() {\n  ret void\n}\n", "gfx942").kernels == ("f",)
    assert compile_ir(PTX_KERNEL.format("e-i64:64-i128:128-v16:16-v32:32-n16:32:64"), "sm_90").kernels == ("f",)


def test_compile_refuses_the_datalayout_in_one_line(tmp_path, capsys):
    source = tmp_path / "x86_layout.ll"
    source.write_text(KERNEL.format(X86_LAYOUT))
    assert cli.main(["compile", str(source), "--target", "gfx942", "-o", str(tmp_path / "x")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"pyhipbench compile: the IR's datalayout '{X86_LAYOUT}' is not one for amdgcn-amd-amdhsa")
    assert err.count("\n") == 1
