"""Compile time linear in the kernel count. Not timed:
the work is counted. The AMD assembly is scanned for labels and descriptors
once per compile, and each kernel's prologue move reads only that kernel's
own body, so the text handled adds up to the assembly once, not once per
kernel (which is what made 2000 kernels take 6 times as long as 500 x 4)."""

from __future__ import annotations

from pyhipbench.codegen import amdgpu, compile_ir, ir

from codegen_helpers import many_kernels, require_toolchain

KERNELS = 200



def counting(monkeypatch, module, name: str, calls: list):
    original = getattr(module, name)

    def wrapper(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapper)


def test_each_kernel_rewrite_reads_only_its_own_body(monkeypatch):
    require_toolchain("gfx942")
    whole, labels, descriptors, bodies = [], [], [], []
    counting(monkeypatch, amdgpu, "_prologue_first", whole)
    counting(monkeypatch, amdgpu, "_entry_labels", labels)
    counting(monkeypatch, amdgpu, "_descriptors_quoted", descriptors)
    counting(monkeypatch, amdgpu, "_kernel_prologue_first", bodies)
    code = compile_ir(many_kernels(KERNELS), "gfx942")
    assert len(code.kernels) == KERNELS and code.verification.ok
    assert len(whole) == len(labels) == len(descriptors) == 1  # one pass each over the assembly
    assert [kernel for kernel, _, _ in bodies] == list(code.kernels)  # one rewrite per kernel
    asm_size = len(whole[0][0])
    read = sum(len(body) for _, body, _ in bodies)
    assert read < asm_size, (read, asm_size)
    # and each body is small: a kernel's share, not the rest of the assembly
    assert max(len(body) for _, body, _ in bodies) < 4 * asm_size / KERNELS


def test_prologue_injection_parses_the_module_once(monkeypatch):
    source = ir.parse(many_kernels(KERNELS))
    parses = []
    counting(monkeypatch, ir, "parse", parses)
    injected = ir.inject_prologue(source, "s_nop 0")
    assert len(parses) == 1  # the whole edited text, once; not once per kernel
    assert str(injected).count("asm sideeffect") == KERNELS
