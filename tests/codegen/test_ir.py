"""The IR pass: parse and verify, find kernels, inject a prologue, verify again."""

from __future__ import annotations

import re

import llvmlite.binding as llvm
import pytest

from pyhipbench.codegen import ir

from codegen_helpers import IR_DATA

PROLOGUE = "s_icache_inv\ns_nop 0"

TWO_KERNELS_AND_A_HELPER = """
target triple = "amdgcn-amd-amdhsa"

define void @helper(ptr addrspace(1) %p) {
  store i32 1, ptr addrspace(1) %p
  ret void
}

define amdgpu_kernel void @first(ptr addrspace(1) %p) {
entry:
  call void @helper(ptr addrspace(1) %p)
  ret void
}

define amdgpu_kernel void @"my kernel"(ptr addrspace(1) %p) {
  store i32 2, ptr addrspace(1) %p
  ret void
}

define amdgpu_kernel void @"quote\\22d\\5Cx"() {
"my entry":
  br label %next
next:
  ret void
}
"""


def first_instruction(module: ir.Module, function: str) -> str:
    fn = module.ref.get_function(function)
    return str(next(next(iter(fn.blocks)).instructions)).strip()


def entry_label(module: ir.Module, function: str) -> str:
    return next(iter(module.ref.get_function(function).blocks)).name


def test_parses_clang_text_and_finds_only_kernels():
    module = ir.parse(IR_DATA / "kernels_gfx942.ll")
    assert module.triple == "amdgcn-amd-amdhsa"
    assert ir.find_kernels(module) == ["copy", "scale"]
    assert "twice" in module.functions


def test_parses_clang_bitcode_file():
    module = ir.parse(IR_DATA / "kernels_gfx90a.bc")
    assert ir.find_kernels(module) == ["copy", "scale"]


def test_parses_bytes_text_and_bitcode():
    text = (IR_DATA / "kernels_gfx90a.ll").read_bytes()
    bitcode = ir.parse(text).ref.as_bitcode()
    assert bitcode[:4] == b"BC\xc0\xde"
    assert ir.find_kernels(ir.parse(text)) == ir.find_kernels(ir.parse(bitcode)) == ["copy", "scale"]


def test_finds_ptx_kernels_and_legacy_nvvm_annotations():
    module = ir.parse("""
target triple = "nvptx64-nvidia-cuda"
define ptx_kernel void @modern() { ret void }
define void @legacy() { ret void }
define void @device_function() { ret void }
!nvvm.annotations = !{!0}
!0 = !{ptr @legacy, !"kernel", i32 1}
""")
    assert ir.find_kernels(module) == ["modern", "legacy"]


def test_quoted_names_are_kernels():
    module = ir.parse(TWO_KERNELS_AND_A_HELPER)
    assert ir.find_kernels(module) == ["first", "my kernel", 'quote"d\\x']


def test_injects_first_in_every_kernel_and_leaves_other_functions_alone():
    module = ir.parse(TWO_KERNELS_AND_A_HELPER)
    injected = ir.inject_prologue(module, PROLOGUE)
    for kernel in ["first", "my kernel", 'quote"d\\x']:
        assert first_instruction(injected, kernel) == (
            'call void asm sideeffect "s_icache_inv\\0As_nop 0", ""()'
        )
    assert "asm" not in str(injected.ref.get_function("helper"))
    assert str(injected).count("asm sideeffect") == 3


def test_explicit_entry_labels_stay_first():
    injected = ir.inject_prologue(ir.parse(TWO_KERNELS_AND_A_HELPER), PROLOGUE)
    assert entry_label(injected, "first") == "entry"
    assert entry_label(injected, 'quote"d\\x') == "my entry"
    assert first_instruction(injected, 'quote"d\\x').startswith("call void asm sideeffect")


def test_injects_only_the_kernels_asked_for():
    injected = ir.inject_prologue(ir.parse(TWO_KERNELS_AND_A_HELPER), PROLOGUE, ["my kernel"])
    assert str(injected).count("asm sideeffect") == 1
    assert "asm" in first_instruction(injected, "my kernel")


def test_prologue_text_is_escaped():
    asm = 's_nop 0 ; "quoted" back\\slash'
    injected = ir.inject_prologue(ir.parse(TWO_KERNELS_AND_A_HELPER), asm, ["first"])
    # LLVM prints the string back with its own escapes: \22 for '"', \\ for '\'.
    assert '"s_nop 0 ; \\22quoted\\22 back\\\\slash"' in first_instruction(injected, "first")


def test_injection_keeps_the_input_module_unchanged():
    module = ir.parse(IR_DATA / "kernels_gfx942.ll")
    before = str(module)
    ir.inject_prologue(module, PROLOGUE)
    assert str(module) == before


def test_invalid_ir_names_the_line():
    with pytest.raises(ir.IRError) as e:
        ir.parse("target triple = \"amdgcn-amd-amdhsa\"\n\ndefine void @f() {\n  bogus\n}\n")
    assert re.search(r":4:\d+: error", str(e.value)), str(e.value)


def test_ir_that_parses_but_does_not_verify_is_an_error():
    with pytest.raises(ir.IRError, match="does not dominate"):
        ir.parse("define i32 @f() {\n  %a = add i32 %b, 1\n  %b = add i32 %a, 1\n  ret i32 %a\n}\n")


def test_invalid_file_is_named(tmp_path):
    path = tmp_path / "broken.ll"
    path.write_text("define void @f( {\n")
    with pytest.raises(ir.IRError, match=re.escape(str(path))):
        ir.parse(path)


def test_no_kernel_names_the_functions_found():
    module = ir.parse("define void @alpha() { ret void }\ndefine void @beta() { ret void }\n"
                      "declare void @gamma()\n")
    with pytest.raises(ir.IRError, match=r"no kernel.*functions defined: alpha, beta$"):
        ir.find_kernels(module)


def test_no_kernel_names_the_file(tmp_path):
    path = tmp_path / "empty.ll"
    path.write_text("")  # an empty file parses as an empty module
    with pytest.raises(ir.IRError, match=re.escape(f"no kernel in {path}: expected a function") + r".*defined: none$"):
        ir.find_kernels(ir.parse(path))


def test_prologue_for_an_unknown_kernel_is_an_error():
    with pytest.raises(ir.IRError, match="nope"):
        ir.inject_prologue(ir.parse(TWO_KERNELS_AND_A_HELPER), PROLOGUE, ["nope"])


def test_target_attributes_are_read():
    module = ir.parse(IR_DATA / "copy_sm_90.ll")
    assert module.target_cpus == {"sm_90"}
    assert "+ptx88" in module.target_features


def test_module_clone_is_independent():
    module = ir.parse(IR_DATA / "kernels_gfx942.ll")
    before = str(module)
    clone = module.clone()
    assert isinstance(clone, llvm.ModuleRef) and clone is not module.ref
    assert str(clone) == before
    # Change the clone every way codegen could: triple, linkage, a new function.
    clone.triple = "nvptx64-nvidia-cuda"
    clone.get_function("copy").linkage = "internal"
    clone.link_in(llvm.parse_assembly('define void @added() { ret void }'))
    assert str(module) == before and module.triple == "amdgcn-amd-amdhsa"
    assert module.ref.get_function("copy").linkage == llvm.Linkage.external
    assert "added" not in module.functions and "added" in [f.name for f in clone.functions]
    # ... and the other way round.
    module.ref.get_function("scale").linkage = "internal"
    assert clone.get_function("scale").linkage == llvm.Linkage.external
