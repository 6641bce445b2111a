"""NVIDIA code generation: NVPTX IR -> PTX, and why there is no flush."""

from __future__ import annotations

import re

import pytest

from pyhipbench.codegen import CodegenError, compile_ir, ir

from codegen_helpers import IR_DATA

LEGACY = """
target triple = "nvptx64-nvidia-cuda"

define void @copy(ptr addrspace(1) %src, ptr addrspace(1) %dst) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %i = zext i32 %tid to i64
  %p = getelementptr float, ptr addrspace(1) %src, i64 %i
  %v = load float, ptr addrspace(1) %p
  %q = getelementptr float, ptr addrspace(1) %dst, i64 %i
  store float %v, ptr addrspace(1) %q
  ret void
}

define void @helper() {
  ret void
}

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()

!nvvm.annotations = !{!0}
!0 = !{ptr @copy, !"kernel", i32 1}
"""


def version_of(ptx: str) -> str:
    return re.search(r"^\.version (\S+)$", ptx, re.MULTILINE).group(1)


def function_body(ptx: str, name: str) -> str:
    start = re.search(rf"\.(entry|func) {name}\(", ptx).start()
    return ptx[start:ptx.index("\n}\n", start)]


def test_clang_ir_to_ptx_uses_the_ir_ptx_version():
    code = compile_ir(IR_DATA / "copy_sm_90.ll", "sm_90")
    ptx = code.data.decode()
    assert code.format == "ptx" and code.target == "sm_90" and code.kernels == ("copy",)
    assert code.verification is None
    # clang-22 marks the functions "+ptx88"; the header must allow what they use.
    assert version_of(ptx) == "8.8"
    assert ".target sm_90" in ptx and ".visible .entry copy(" in ptx


def test_ptx_version_is_settable():
    code = compile_ir(IR_DATA / "copy_sm_90.ll", "sm_90", ptx_version=80)
    assert version_of(code.data.decode()) == "8.0"


def test_without_ir_features_llvm_picks_the_minimum_for_the_sm():
    assert version_of(compile_ir(LEGACY, "sm_90").data.decode()) == "7.8"
    assert version_of(compile_ir(LEGACY, "sm_100").data.decode()) == "8.6"


def test_unknown_ptx_version_is_an_error():
    with pytest.raises(CodegenError, match=r"ptx_version 99: LLVM \d+ knows no PTX ISA version 9.9 \('\+ptx99' is not a recognized feature"):
        compile_ir(LEGACY, "sm_90", ptx_version=99)


def test_legacy_annotated_kernel_and_helper():
    ptx = compile_ir(LEGACY, "sm_90").data.decode()
    assert ".visible .entry copy(" in ptx
    assert ".entry helper" not in ptx and ".func helper" in ptx


def test_user_prologue_goes_into_kernels_only():
    ptx = compile_ir(LEGACY, "sm_90", prologue="// user prologue\nmembar.gl;").data.decode()
    assert "membar.gl;" in function_body(ptx, "copy")
    assert "membar.gl;" not in function_body(ptx, "helper")


def test_icache_flush_on_nvidia_is_a_clear_error():
    with pytest.raises(CodegenError) as e:
        compile_ir(LEGACY, "sm_90", icache_flush=True)
    message = str(e.value)
    assert "no instruction-cache invalidation" in message and "sm_90" in message
    assert "icache_flush=False" in message and "\n" not in message


def test_icache_flush_false_is_fine_on_nvidia():
    assert compile_ir(LEGACY, "sm_90", icache_flush=False).kernels == ("copy",)


def test_amdgpu_ir_for_an_nvidia_target_names_the_triple():
    with pytest.raises(ir.IRError, match="'amdgcn-amd-amdhsa', but target sm_90 needs 'nvptx64-nvidia-cuda'"):
        compile_ir(IR_DATA / "kernels_gfx942.ll", "sm_90")


def test_ir_for_another_sm():
    with pytest.raises(ir.IRError, match="generated for sm_90 .* not sm_80"):
        compile_ir(IR_DATA / "copy_sm_90.ll", "sm_80")


def test_module_without_triple_takes_the_targets():
    code = compile_ir(LEGACY.replace('target triple = "nvptx64-nvidia-cuda"\n', ""), "sm_90")
    assert ".visible .entry copy(" in code.data.decode()


def test_invalid_ir_names_the_line():
    with pytest.raises(ir.IRError, match=r":3:\d+: error"):
        compile_ir('target triple = "nvptx64-nvidia-cuda"\n\nnonsense\n', "sm_90")


@pytest.mark.parametrize("driver,ptx", [(13000, 90), (13010, 91), (12090, 88), (12060, 85),
                                        (12000, 80), (11080, 78), (14000, 91)])
def test_newest_ptx_a_driver_loads(driver, ptx):
    from pyhipbench.codegen.nvptx import max_ptx_version
    assert max_ptx_version(driver) == ptx


def test_drivers_older_than_cuda_11_are_refused():
    from pyhipbench.codegen.nvptx import max_ptx_version
    with pytest.raises(CodegenError, match="CUDA driver 10.2 predates PTX ISA 7.0"):
        max_ptx_version(10020)


def test_compile_for_device_lowers_ptx_to_what_the_driver_loads():
    from types import SimpleNamespace

    from pyhipbench.codegen import compile_for_device
    from pyhipbench.codegen.nvptx import ptx_version_of
    ir_text = (IR_DATA / "copy_sm_90.ll").read_bytes()
    def device(driver):
        return SimpleNamespace(arch="sm_90", backend=SimpleNamespace(compile_driver_version=lambda: driver))
    assert ptx_version_of(compile_for_device(ir_text, device(13000)).data) == 88   # the IR's own
    assert ptx_version_of(compile_for_device(ir_text, device(12040)).data) == 84   # lowered for CUDA 12.4
