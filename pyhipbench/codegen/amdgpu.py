"""AMDGPU: IR with the prologue -> assembly -> object -> HSACO, then proof
by disassembly that every kernel executes the prologue first.

Why the assembly is edited: an inline-asm call placed first in the IR is not
first in the machine code. The scheduler and frame lowering put instructions
above it (LLVM 22 on gfx90a, gfx942, gfx950, gfx1100: kernel-argument
``s_load``s, register setup, in some kernels ``s_waitcnt``, ``v_cmp`` and the
scratch setup). The prologue block is
therefore moved, in the emitted assembly, to directly after the kernel's
entry label. That move is sound because the prologue reads and writes no
register and no memory the kernel uses. Where the block was, one ``s_nop 0``
is left: LLVM's hazard recognizer counted the inline asm as one wait state
between its neighbours (SIInstrInfo::getNumWaitStates: 1 for any
non-meta instruction), and the nop keeps that count.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

import llvmlite.binding as llvm

from .. import ir
from ..toolchain import Toolchain, find_toolchain
from ..errors import CodegenError, VerificationError
from .verify import Verification, verify_entries

__all__ = ["TRIPLE", "FLUSH", "CODE_OBJECT_VERSIONS", "CodegenError", "compile_module"]

TRIPLE = "amdgcn-amd-amdhsa"
# The ISA asks for 16 s_nop or a branch after the invalidate before
# instructions are fetched again; 16 nops keep the prologue straight-line
# code touching no register, so it can be moved anywhere.
FLUSH = "\n".join(["s_icache_inv"] + ["s_nop 0"] * 16)
CODE_OBJECT_VERSIONS = (4, 5, 6)

# The first line of the injected asm; finds the block in the emitted assembly.
_MARKER = "; pyhipbench prologue"
_BLOCK = re.compile(
    r"^[ \t]*;;#ASMSTART\n[ \t]*" + re.escape(_MARKER) + r"\n.*?^[ \t]*;;#ASMEND\n",
    re.MULTILINE | re.DOTALL,
)
# The entry for firmware that preloads kernel arguments: the label after the
# compatibility header, aligned to 256 bytes.
_PRELOAD_ENTRY = re.compile(r"^\s*\.p2align\s+8\n[^\s:]+:\n", re.MULTILINE)
_HAZARD_FILLER = "\ts_nop 0 ; pyhipbench: the wait state the moved prologue was counted as\n"
_CO_FLAG = re.compile(r'(!"amdhsa_code_object_version", i32 )(\d+)')
# String-valued metadata keys. LLVM <= 19 infers a YAML scalar's type from its
# text, so an argument named `n` (or y, no, on, off, true ...) reads as a
# boolean and the assembler rejects the metadata ("invalid HSA metadata").
# An explicit !str tag is read as a string by old and new assemblers alike and
# gives the same binary note.
_METADATA_STRING = re.compile(r"^(\s*(?:- )?\.(?:name|type_name):\s+)(?!!str )(\S.*)$", re.MULTILINE)


def _asm_symbol(name: str) -> str:
    """``name`` as the assembler spells a label."""
    if re.fullmatch(r"[A-Za-z_.$][A-Za-z0-9_.$]*", name):
        return name
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _with_code_object_version(module: ir.Module, version: int) -> ir.Module:
    """The module with its ``amdhsa_code_object_version`` flag set (v5 -> 500)."""
    text = str(module)
    value = version * 100
    if _CO_FLAG.search(text):
        text = _CO_FLAG.sub(lambda m: f"{m.group(1)}{value}", text)
    else:
        ids = [int(i) for i in re.findall(r"^!(\d+) = ", text, re.MULTILINE)]
        node = max(ids, default=-1) + 1
        flag = f'!{node} = !{{i32 1, !"amdhsa_code_object_version", i32 {value}}}\n'
        flags = re.search(r"^!llvm\.module\.flags = !\{(.*)\}$", text, re.MULTILINE)
        if flags:
            listed = f"{flags.group(1)}, !{node}" if flags.group(1) else f"!{node}"
            text = f"{text[: flags.start(1)]}{listed}{text[flags.end(1):]}"
        else:
            text += f"\n!llvm.module.flags = !{{!{node}}}\n"
        text += flag
    return ir.parse(text, name="the IR with the code object version set")


def _emit_assembly(module: ir.Module, mcpu: str) -> str:
    machine = llvm.Target.from_triple(TRIPLE).create_target_machine(cpu=mcpu)
    return machine.emit_assembly(module.clone())


def _quote_descriptor_names(asm: str, kernels: list[str]) -> str:
    """Quote names in ``.amdhsa_kernel`` where the assembler needs it.

    LLVM 22 writes ``.amdhsa_kernel my kernel`` unquoted (labels and other
    directives are quoted), which no assembler reads.
    """
    for kernel in kernels:
        symbol = _asm_symbol(kernel)
        if symbol != kernel:
            asm = asm.replace(f"\t.amdhsa_kernel {kernel}\n", f"\t.amdhsa_kernel {symbol}\n")
    return asm


def _preload_length(asm: str, symbol: str) -> int:
    """The kernel's ``.amdhsa_user_sgpr_kernarg_preload_length`` (0 if none)."""
    start = asm.find(f".amdhsa_kernel {symbol}\n")
    end = asm.find(".end_amdhsa_kernel", start)
    m = re.search(r"\.amdhsa_user_sgpr_kernarg_preload_length (\d+)", asm[start:end])
    return int(m.group(1)) if start >= 0 and m else 0


def _prologue_first(asm: str, kernels: list[str]) -> str:
    """Move each kernel's prologue block to directly after its entry label.

    A kernel with kernel arguments preloaded into SGPRs (gfx940+) has two
    entries: firmware that preloads starts 256 bytes after the descriptor's
    entry, skipping a compatibility header that loads the arguments itself.
    Such a kernel gets the prologue at both entries.
    """
    for kernel in kernels:
        symbol = _asm_symbol(kernel)
        label = f"\n{symbol}:\n"
        start = asm.find(label)
        if start < 0:
            raise CodegenError(f"kernel {kernel!r}: entry label {symbol}: not in the assembly")
        start += len(label)
        end = asm.find(".Lfunc_end", start)
        if end < 0:
            raise CodegenError(f"kernel {kernel!r}: no .Lfunc_end label after its entry")
        blocks = list(_BLOCK.finditer(asm, start, end))
        if len(blocks) != 1:
            raise CodegenError(
                f"kernel {kernel!r}: expected one prologue block in its assembly, found {len(blocks)}"
            )
        block = blocks[0]
        body = asm[start : block.start()] + _HAZARD_FILLER + asm[block.end() : end]
        if _preload_length(asm, symbol):
            second = _PRELOAD_ENTRY.search(body)
            if second is None:
                raise CodegenError(f"kernel {kernel!r}: preloads arguments but has no 256-byte entry")
            body = body[: second.end()] + block.group(0) + body[second.end() :]
        asm = asm[:start] + block.group(0) + body + asm[end:]
    return asm


def _run(cmd: list[str], hint: str = "") -> None:
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise CodegenError(
            f"`{' '.join(cmd)}` failed (exit {r.returncode}):\n{r.stderr.strip()}{hint}"
        )


def _older_assembler_hint(tools: Toolchain) -> str:
    emitter = llvm.llvm_version_info[0]
    if tools.version[0] >= emitter:
        return ""
    # Known and handled: LLVM <= 19 reading unquoted names as YAML booleans.
    # Not handled: directives newer than the assembler (LLVM 19 does not know
    # gfx11's .amdhsa_inst_pref_size); dropping them would change the kernel
    # descriptor, so the user is sent to a newer assembler instead.
    return (
        f"\n(the assembler is {tools}, older than the LLVM {emitter} in llvmlite that wrote "
        f"this assembly: use LLVM >= {emitter} tools, e.g. `apt-get install llvm-{emitter} "
        f"lld-{emitter}` or set $PYHIPBENCH_LLVM_BIN)"
    )


def _first_mnemonic(asm: str) -> str:
    for line in asm.splitlines():
        code = line.split(";")[0].split("//")[0].strip()
        if code:
            return code.split()[0]
    raise ValueError(f"prologue {asm!r} holds no instruction")


def compile_module(
    module: ir.Module,
    kernels: list[str],
    mcpu: str,
    *,
    prologue: str | None,
    code_object_version: int = 5,
) -> tuple[bytes, Verification | None]:
    """An HSACO for ``mcpu`` from a verified amdgcn module.

    ``prologue`` (AMDGPU assembly, or None for none) is injected into every
    kernel and made its first instruction, and that is verified by
    disassembly: a failed check raises VerificationError. Returns the HSACO
    bytes and the verification record (None when there is no prologue).
    """
    if code_object_version not in CODE_OBJECT_VERSIONS:
        raise ValueError(
            f"code object version {code_object_version} is not one of {CODE_OBJECT_VERSIONS}"
        )
    tools = find_toolchain(mcpu)
    module = _with_code_object_version(module, code_object_version)
    if prologue is not None:
        expected = _first_mnemonic(prologue)
        module = ir.inject_prologue(module, f"{_MARKER}\n{prologue}", kernels)
    asm = _quote_descriptor_names(_emit_assembly(module, mcpu), kernels)
    if prologue is not None:
        asm = _prologue_first(asm, kernels)
    asm = _METADATA_STRING.sub(r"\1!str \2", asm)
    with tempfile.TemporaryDirectory(prefix="pyhipbench-") as tmp:
        source, obj, hsaco = (Path(tmp) / n for n in ("kernels.s", "kernels.o", "kernels.hsaco"))
        source.write_text(asm)
        _run([str(tools.assembler), f"--triple={TRIPLE}", f"--mcpu={mcpu}", "-filetype=obj",
              str(source), "-o", str(obj)], _older_assembler_hint(tools))
        _run([str(tools.linker), "-shared", "--no-undefined", str(obj), "-o", str(hsaco)])
        verification = None
        if prologue is not None:
            verification = verify_entries(hsaco, mcpu, kernels, expected, tools.disassembler)
            if not verification.ok:
                raise VerificationError(verification)
        return hsaco.read_bytes(), verification
