"""From a kernel's LLVM IR to a loadable code object.

``compile_ir`` parses and verifies the IR, finds its kernels, injects the
prologue (on AMD by default the instruction-cache flush), and generates an
HSACO (AMD, proven by disassembly to start every kernel with the prologue)
or PTX (NVIDIA). See docs/codegen.md.
"""

from __future__ import annotations

import os
import re

import llvmlite.binding as llvm
import numpy as np

from .._codeobject.code_object import CodeObject
from ..errors import CodegenError, VerificationError
from . import amdgpu, emit, ir, nvptx
from .verify import KernelEntry, Verification

__all__ = [
    "CodeObject",
    "CodegenError",
    "KernelEntry",
    "Verification",
    "VerificationError",
    "compile_for_device",
    "compile_for_target",
    "compile_ir",
    "device_target",
    "processor_of",
    "triple_of",
]

# A HIP target ID: processor, then optional `:feature+`/`:feature-` settings.
_TARGET_FEATURES = ("sramecc", "xnack")
_NO_FLUSH_ON_NVIDIA = (
    "NVIDIA GPUs have no instruction-cache invalidation: neither PTX nor the CUDA "
    "driver API exposes one, so icache_flush=True cannot be honoured for {target}; "
    "pass icache_flush=False or leave it unset."
)


def _triple_family(processor: str) -> str:
    if processor.startswith("gfx"):
        return amdgpu.TRIPLE
    if processor.startswith("sm_"):
        return nvptx.TRIPLE
    raise CodegenError(
        f"unknown target {processor!r}: expected an AMD processor gfxNNN (e.g. gfx90a, "
        "gfx942, gfx950, gfx1100) or an NVIDIA one sm_NN (e.g. sm_90, sm_90a, sm_100a)"
    )


def processor_of(target: str) -> str:
    """The processor of a target or HIP target ID ("gfx942:sramecc+:xnack-" ->
    "gfx942"), checked against what llvmlite's LLVM knows; CodegenError names
    the bad part and lists the processors LLVM knows.
    """
    if not isinstance(target, str):
        raise CodegenError(f"target {target!r}: expected a processor name (str) such as gfx942 or sm_90")
    processor, *features = target.split(":")
    triple = _triple_family(processor)
    if features:
        if triple != amdgpu.TRIPLE:
            raise CodegenError(f"target {target!r}: only AMD targets take :feature+/- settings")
        names = [f[:-1] for f in features]
        for feature in features:
            if feature[:-1] not in _TARGET_FEATURES or feature[-1:] not in ("+", "-"):
                raise CodegenError(
                    f"target {target!r}: {feature!r} is not a target feature setting; "
                    f"expected {' or '.join(_TARGET_FEATURES)} followed by + or - (gfx942:sramecc+:xnack-)"
                )
        if len(set(names)) != len(names):
            raise CodegenError(f"target {target!r}: a feature is set twice")
    if emit.check_target(triple, processor):
        known = emit.known_processors(triple)
        family = "gfx" if triple == amdgpu.TRIPLE else "sm_"
        listed = ", ".join(p for p in known if p.startswith(family))
        raise CodegenError(
            f"unknown target {processor!r}: llvmlite's LLVM {llvm.llvm_version_info[0]} "
            f"does not know this processor; expected one it knows: {listed}"
        )
    return processor


def triple_of(target: str) -> str:
    """The LLVM target triple for a target: gfx* or sm_* (checked as processor_of does)."""
    return _triple_family(processor_of(target))


# What a target's datalayout says about the code's ABI: byte order, the size of a pointer in address space 0,
# the alloca address space and the native integer widths. IR whose datalayout says otherwise was generated for
# another target (an x86 layout has n8:16:32:64 and allocas in address space 0); LLVM would compile it with the
# target's layout in its place, silently. Older LLVM versions' layouts for these targets differ in other parts
# (vector alignments, non-integral address spaces), which are not compared.
_LAYOUT_FACTS = {
    amdgpu.TRIPLE: {"byte order": "e", "pointer size": "64", "alloca address space": "5",
                    "native integer widths": "32:64"},
    nvptx.TRIPLE: {"byte order": "e", "pointer size": "64", "alloca address space": "0",
                   "native integer widths": "16:32:64"},
}
_LAYOUT_SPELLING = {"byte order": "{}", "pointer size": "p:{}", "alloca address space": "A{}",
                    "native integer widths": "n{}"}


def _layout_facts(layout: str) -> dict[str, str]:
    """The parts of a datalayout string that _LAYOUT_FACTS compares, as it writes them (LLVM's defaults where
    the layout leaves one out: little-endian, 64-bit pointers, allocas in address space 0)."""
    facts = {"byte order": "e", "pointer size": "64", "alloca address space": "0"}
    for part in layout.split("-"):
        pointer = re.fullmatch(r"p(\d*):(\d+)(?::.*)?", part)
        if part in ("e", "E"):
            facts["byte order"] = part
        elif pointer and int(pointer[1] or 0) == 0:
            facts["pointer size"] = pointer[2]
        elif re.fullmatch(r"A\d+", part):
            facts["alloca address space"] = part[1:]
        elif re.fullmatch(r"n\d+(?::\d+)*", part):
            facts["native integer widths"] = part[1:]
    return facts


def _check_datalayout(module: ir.Module, target: str, triple: str) -> None:
    """IRError naming the IR's datalayout when it says another target's ABI than `triple`'s."""
    layout = module.ref.data_layout
    if not layout:
        return
    facts, wanted = _layout_facts(layout), _LAYOUT_FACTS[triple]
    wrong = [k for k, v in wanted.items() if facts.get(k, v) != v]
    if not wrong:
        return
    said = " and ".join(f"{_LAYOUT_SPELLING[k].format(facts[k])} ({k})" for k in wrong)
    needed = " and ".join(_LAYOUT_SPELLING[k].format(wanted[k]) for k in wrong)
    raise ir.IRError(
        f"the IR's datalayout {layout!r} is not one for {triple} ({target}): it says {said} where the target "
        f"has {needed}, so the IR was generated for another target; expected IR generated for {target}, or "
        "with no datalayout line"
    )


def _for_target(module: ir.Module, target: str, triple: str) -> ir.Module:
    """`module`, checked against the target; one without a triple gets the target's
    (on a copy: the caller's module is left as it was)."""
    if module.triple and module.triple != triple:
        raise ir.IRError(
            f"the IR's target triple is {module.triple!r}, but target {target} "
            f"needs {triple!r}"
        )
    _check_datalayout(module, target, triple)
    if not module.triple:
        module = ir.Module(module.clone(), module.name)
        module.ref.triple = triple
    others = sorted(module.target_cpus - {target})
    if others:
        # Functions carry the processor they were compiled for; codegen honours
        # it over the target machine and would mix two ISAs in one object.
        raise ir.IRError(
            f'the IR was generated for {", ".join(others)} (function attribute "target-cpu"), '
            f"not {target}: regenerate it for {target} or compile for {others[0]}"
        )
    return module


def compile_ir(
    source: str | bytes | os.PathLike | ir.Module,
    target: str,
    *,
    icache_flush: bool | None = None,
    prologue: str | None = None,
    code_object_version: int = 5,
    ptx_version: int | None = None,
) -> CodeObject:
    """Compile a module's kernels for ``target`` ("gfx942", "sm_90", ...).

    A HIP target ID with features ("gfx942:sramecc+:xnack-", as devices
    report it) compiles for its processor ("gfx942"): a code object that
    names no xnack/sramecc setting loads under either.

    ``source``: IR text (``str``), IR text or bitcode (``bytes``), a path to
    either (``os.PathLike``), or a parsed ``ir.Module``.
    ``icache_flush``: inject ``s_icache_inv`` + 16 ``s_nop`` first in every
    kernel; default True on AMD; True on NVIDIA is an error (no such flush).
    ``prologue``: assembly for the target (AMDGPU asm, or PTX) injected at
    each kernel's entry, after the flush when both are asked for. On AMD it
    is moved above the kernel-argument loads and register setup, so it must
    write no register or memory the kernel uses: a write to a register the
    hardware preloads at entry (the kernarg segment pointer, the other user
    and system SGPRs, the work-item IDs, exec) is a CodegenError. PTX is
    checked first.
    ``code_object_version``: AMD HSACO version, 5 by default (ROCm < 6.3
    rejects LLVM 22's default, 6).
    ``ptx_version``: PTX ISA version times ten (e.g. 80); None for LLVM's
    minimum for the sm.

    Raises IRError (the IR or the input file: also a datalayout of another
    target, or inline asm holding the prologue's marker), CodegenError (target, options,
    prologue, an LLVM abort, a failing tool), VerificationError, ToolchainError:
    all ``pyhipbench.Error``.
    """
    if not (icache_flush is None or isinstance(icache_flush, (bool, np.bool_))):
        raise CodegenError(f"icache_flush={icache_flush!r}: expected True, False or None (the default)")
    if prologue is not None and not isinstance(prologue, str):
        raise CodegenError(f"prologue {prologue!r}: expected assembly text (str), got {type(prologue).__name__}")
    target = processor_of(target)
    triple = _triple_family(target)
    if triple == amdgpu.TRIPLE:
        amdgpu.check_code_object_version(code_object_version)
        if ptx_version is not None:
            raise CodegenError(f"ptx_version={ptx_version!r} applies to NVIDIA targets, not {target}")
    elif icache_flush:
        raise CodegenError(_NO_FLUSH_ON_NVIDIA.format(target=target))
    elif ptx_version is not None:
        nvptx.check_ptx_version(ptx_version, target)
    module = _for_target(source if isinstance(source, ir.Module) else ir.parse(source), target, triple)
    kernels = ir.find_kernels(module)
    if triple == nvptx.TRIPLE:
        data = nvptx.compile_module(
            module, kernels, target, prologue=prologue, ptx_version=ptx_version
        )
        return CodeObject(data, "ptx", target, tuple(kernels))
    injected = [amdgpu.FLUSH] if icache_flush is None or icache_flush else []
    injected += [prologue] if prologue is not None else []
    data, verification = amdgpu.compile_module(
        module,
        kernels,
        target,
        prologue="\n".join(injected) if injected else None,
        code_object_version=code_object_version,
    )
    return CodeObject(data, "hsaco", target, tuple(kernels), verification)


def device_target(module: ir.Module, arch: str) -> str:
    """The processor ``compile_for_device`` compiles ``module`` for on a device of ``arch``.

    On NVIDIA from compute capability 9.0 it is the arch-specific target
    (``sm_90`` -> ``sm_90a``, see ``nvptx.arch_specific``): it loses nothing on
    that device, and IR that uses wgmma or setmaxnreg (Triton's Hopper kernels)
    needs it, LLVM aborting on ``sm_90``. IR whose functions name the plain
    processor ("target-cpu"="sm_90") was generated for it and is compiled for it.
    """
    specific = nvptx.arch_specific(arch)
    if specific is None or module.target_cpus == {arch}:
        return arch
    return specific


def compile_for_device(source: str | bytes | os.PathLike | ir.Module, device, **options) -> CodeObject:
    """``compile_ir`` for ``device`` (a ``pyhipbench.Device``): its processor, or on NVIDIA from
    compute capability 9.0 its arch-specific target (``device_target``); ``CodeObject.target``
    says which.

    On NVIDIA, PTX newer than the installed driver loads is compiled again at
    the newest version it does load, unless ``ptx_version`` was given.
    """
    return compile_for_target(source, device.arch, device.backend.compile_driver_version(), **options)


def compile_for_target(source: str | bytes | os.PathLike | ir.Module, arch: str, driver_version: int | None,
                       **options) -> CodeObject:
    """``compile_ir`` for a device known by its processor ``arch`` and, on NVIDIA, its CUDA
    ``driver_version`` (as ``cuDriverGetVersion`` gives it): what ``compile_for_device`` does,
    without the device, so it runs in a process that has none (a sweep's compiler pool)."""
    module = source if isinstance(source, ir.Module) else ir.parse(source)
    target = device_target(module, arch)
    code = compile_ir(module, target, **options)
    if code.format == "ptx" and options.get("ptx_version") is None and driver_version is not None:
        limit = nvptx.max_ptx_version(driver_version)
        if nvptx.ptx_version_of(code.data) > limit:
            code = compile_ir(module, target, **{**options, "ptx_version": limit})
    return code
