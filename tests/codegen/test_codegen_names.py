"""Kernel names. Names the tools can carry work end to end
(AMD: assembler, linker, descriptor found for the proof); names they cannot
are refused before any work with an IRError naming the kernel and the rule."""

from __future__ import annotations

import pytest

from pyhipbench.codegen import compile_ir
from pyhipbench.errors import IRError

from codegen_helpers import require_toolchain


def ir_name(name: str) -> str:
    """``name`` as a quoted LLVM IR identifier."""
    escaped = "".join(c if " " <= c <= "~" and c not in '"\\' else "".join(f"\\{b:02X}" for b in c.encode())
                      for c in name)
    return f'@"{escaped}"'


def module(names: list[str], nvidia: bool = False) -> str:
    triple, cc = ("nvptx64-nvidia-cuda", "ptx_kernel") if nvidia else ("amdgcn-amd-amdhsa", "amdgpu_kernel")
    kernels = "".join(f"define {cc} void {ir_name(n)}(ptr addrspace(1) %p, i32 %v) {{\n"
                      "  store i32 %v, ptr addrspace(1) %p\n  ret void\n}\n" for n in names)
    return f'target triple = "{triple}"\n{kernels}'


AMD_ACCEPTED = ["my kernel", "a.b", "a$b", "x: y", "- x", "&x", "!x", "a'b", "a#b", "%x", "[x]",
                "a{b}", "a,b", "a;b", "ünï", "_9", "k1"]


def test_amd_compiles_and_proves_every_name_the_tools_can_carry():
    require_toolchain("gfx942")
    code = compile_ir(module(AMD_ACCEPTED), "gfx942")
    assert code.kernels == tuple(AMD_ACCEPTED)
    # The proof found each kernel's descriptor (<name>.kd) in the linked object.
    assert code.verification.ok and code.verification.missing == ()
    assert [e.kernel for e in code.verification.kernels] == AMD_ACCEPTED
    assert all(e.first_instruction == "s_icache_inv" for e in code.verification.kernels)


@pytest.mark.parametrize("name,why", [
    ('my"kernel', 'contains `"` or `\\\\`'),
    ("a\\b", 'contains `"` or `\\\\`'),
    ("1kernel", "starts with a digit"),
    ("9", "starts with a digit"),
    ("a@b", "contains `@`, which the linker reads as a symbol version"),
    (".Lk", "starting with `.L` are assembler-local"),
    ("a\nb", "control character"),
])
def test_amd_refuses_names_the_tools_cannot_carry(name, why):
    with pytest.raises(IRError) as e:
        compile_ir(module(["fine", name]), "gfx942")
    message = str(e.value)
    assert message.startswith(f"kernel name {name!r} cannot be compiled for AMD: ")
    assert why.replace("\\\\", "\\") in message and "AMD kernel names may hold" in message


NVIDIA_ACCEPTED = ["copy", "a$b", "_x", "$x", "Kernel_9"]


def test_nvidia_compiles_ptx_identifiers_unchanged():
    code = compile_ir(module(NVIDIA_ACCEPTED, nvidia=True), "sm_90")
    ptx = code.data.decode()
    assert code.kernels == tuple(NVIDIA_ACCEPTED)
    for name in NVIDIA_ACCEPTED:
        assert f".visible .entry {name}(" in ptx


@pytest.mark.parametrize("name", ["1kernel", "a.b", "my kernel", "%x", "_", "ünï", 'my"k', "a-b"])
def test_nvidia_refuses_what_ptx_cannot_name(name):
    with pytest.raises(IRError, match=rf"^kernel name {name!r} cannot be compiled for NVIDIA: NVIDIA kernel "
                       r"names must be PTX identifiers"):
        compile_ir(module(["fine", name], nvidia=True), "sm_90")
