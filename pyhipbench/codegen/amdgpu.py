"""AMDGPU: IR with the prologue -> assembly -> object -> HSACO, then proof
by disassembly that every kernel executes the prologue first.

Why the assembly is edited: an inline-asm call placed first in the IR is not
first in the machine code. The scheduler and frame lowering put instructions
above it (LLVM 22 on gfx90a, gfx942, gfx950, gfx1100: kernel-argument
``s_load``s, register setup, in some kernels ``s_waitcnt``, ``v_cmp`` and the
scratch setup). The prologue block is
therefore moved, in the emitted assembly, to directly after the kernel's
entry label. That move is sound only because the prologue writes no register
and no memory the kernel uses: a user prologue that writes a register the
hardware preloads at entry (the kernel-argument pointer s[0:1], ...) would run
before the argument loads and break the kernel, so it is refused
(``prologue.py`` reads the registers from each kernel's descriptor); its
memory writes no check can see. Where the block was, one ``s_nop 0``
is left: LLVM's hazard recognizer counted the inline asm as one wait state
between its neighbours (SIInstrInfo::getNumWaitStates: 1 for any
non-meta instruction), and the nop keeps that count.
"""

from __future__ import annotations

import numbers
import re
import subprocess
import tempfile
from pathlib import Path

import llvmlite.binding as llvm

from ..errors import CodegenError, IRError, VerificationError
from . import emit, ir
from . import prologue as prologue_rules
from .toolchain import Toolchain, find_toolchain
from .verify import Verification, verify_entries

__all__ = ["TRIPLE", "FLUSH", "CODE_OBJECT_VERSIONS", "CodegenError", "check_kernel_names", "compile_module"]

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
# A label in column 0 (quoted, or LLVM's unquoted symbol characters), and a
# kernel descriptor block; both are found in one pass over the assembly.
_LABEL = re.compile(r'^("(?:[^"\\\n]|\\.)*"|[A-Za-z0-9_.$@]+):\n', re.MULTILINE)
_DESCRIPTOR = re.compile(r"^\t\.amdhsa_kernel ([^\n]+)\n(.*?)^\t\.end_amdhsa_kernel\n", re.MULTILINE | re.DOTALL)
_PRELOAD_LENGTH = re.compile(r"\.amdhsa_user_sgpr_kernarg_preload_length (\d+)")
_ASSEMBLER_LINE = re.compile(r"^\S*kernels\.s:(\d+):\d+: error", re.MULTILINE)
_HAZARD_FILLER = "\ts_nop 0 ; pyhipbench: the wait state the moved prologue was counted as\n"
_CO_FLAG = re.compile(r'(!"amdhsa_code_object_version", i32 )(\d+)')
# String-valued metadata keys. LLVM <= 19 infers a YAML scalar's type from its
# text, so an argument named `n` (or y, no, on, off, true ...) reads as a
# boolean and the assembler rejects the metadata ("invalid HSA metadata").
# An explicit !str tag is read as a string by old and new assemblers alike and
# gives the same binary note.
_METADATA_STRING = re.compile(r"^(\s*(?:- )?\.(?:name|type_name):\s+)(?!!str )(\S.*)$", re.MULTILINE)


# Kernel names the AMD tools cannot carry through. The assembler reads the
# name in `.amdhsa_kernel` without unescaping it, so `"` and `\` cannot be
# spelled there; ld.lld reads `name@x` as symbol versioning; LLVM writes a
# name starting with a digit unquoted, which its assembler rejects; `.L`
# names are assembler-local; control characters break the line-based
# assembly. Everything else LLVM allows in a quoted name works end to end.
_AMD_NAME_RULES = (
    (lambda n: not n, "an unnamed kernel has no symbol to launch it by"),
    (lambda n: any(ord(c) < 0x20 or ord(c) == 0x7F for c in n), "it contains a control character"),
    (lambda n: '"' in n or "\\" in n, 'it contains `"` or `\\`, which the assembler cannot spell in .amdhsa_kernel'),
    (lambda n: "@" in n, "it contains `@`, which the linker reads as a symbol version"),
    (lambda n: "0" <= n[:1] <= "9", "it starts with a digit, which LLVM writes unquoted and its assembler rejects"),
    (lambda n: n.startswith(".L"), "names starting with `.L` are assembler-local symbols"),
)
AMD_NAME_RULE = (
    "AMD kernel names may hold any printable character except `\"`, `\\` and `@`, "
    "and may not start with a digit or `.L`"
)


def check_kernel_names(kernels: list[str]) -> None:
    """Raise IRError for the first kernel whose name cannot become an AMD symbol."""
    for kernel in kernels:
        for broken, why in _AMD_NAME_RULES:
            if broken(kernel):
                raise IRError(f"kernel name {kernel!r} cannot be compiled for AMD: {why}. {AMD_NAME_RULE}")


def _asm_symbol(name: str) -> str:
    """``name`` as LLVM spells a label (quoted unless every character is plain)."""
    if re.fullmatch(r"[A-Za-z0-9_.$@]+", name):
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


def _emit_assembly(module: ir.Module, mcpu: str, kernels: list[str] | None = None) -> str:
    """The module's AMDGPU assembly, emitted in the code generator's process."""
    kernels = ir.find_kernels(module) if kernels is None else kernels
    return emit.assembly(module, TRIPLE, mcpu, "", kernels)


def _descriptors_quoted(asm: str, kernels: list[str]) -> tuple[str, dict[str, int], dict[str, str]]:
    """Quote names in ``.amdhsa_kernel`` where the assembler needs it, and
    read each kernel's ``.amdhsa_user_sgpr_kernarg_preload_length`` and its
    descriptor block (the registers preloaded at entry): one pass.

    LLVM 22 writes ``.amdhsa_kernel my kernel`` unquoted (labels and other
    directives are quoted), which no assembler reads.
    """
    preload: dict[str, int] = {}
    descriptors: dict[str, str] = {}

    def quoted(m: re.Match) -> str:
        name = m.group(1)
        length = _PRELOAD_LENGTH.search(m.group(2))
        preload[name] = int(length.group(1)) if length else 0
        descriptors[name] = m.group(2)
        return f"\t.amdhsa_kernel {_asm_symbol(name)}\n{m.group(2)}\t.end_amdhsa_kernel\n"

    return _DESCRIPTOR.sub(quoted, asm), preload, descriptors


def _entry_labels(asm: str, kernels: list[str]) -> list[tuple[int, str]]:
    """(offset just past the entry label, kernel) for every kernel, in order; one pass."""
    wanted = {_asm_symbol(k): k for k in kernels}
    found = {}
    for m in _LABEL.finditer(asm):
        kernel = wanted.get(m.group(1))
        if kernel is not None and kernel not in found:
            found[kernel] = m.end()
    missing = [k for k in kernels if k not in found]
    if missing:
        raise CodegenError(f"kernel {missing[0]!r}: entry label {_asm_symbol(missing[0])}: not in the assembly")
    return sorted((at, kernel) for kernel, at in found.items())


def _kernel_prologue_first(kernel: str, body: str, preloads: bool) -> str:
    """One kernel's body (the text after its entry label, up to its
    ``.Lfunc_end`` label) with the prologue block moved to its start."""
    blocks = list(_BLOCK.finditer(body))
    if len(blocks) != 1:
        why = (f"inline asm that starts with the marker {_MARKER!r} is pyhipbench's own, and the kernel's IR "
               "(its own inline asm, or a function inlined into it) holds that text too"
               if blocks else "LLVM dropped or split the injected inline asm")
        raise CodegenError(
            f"kernel {kernel!r}: expected one prologue block in its assembly, found {len(blocks)}: {why}"
        )
    block = blocks[0]
    rest = body[: block.start()] + _HAZARD_FILLER + body[block.end() :]
    if preloads:
        second = _PRELOAD_ENTRY.search(rest)
        if second is None:
            raise CodegenError(f"kernel {kernel!r}: preloads arguments but has no 256-byte entry")
        rest = rest[: second.end()] + block.group(0) + rest[second.end() :]
    return block.group(0) + rest


def _prologue_first(asm: str, kernels: list[str], preload: dict[str, int]) -> str:
    """Move each kernel's prologue block to directly after its entry label.

    A kernel with kernel arguments preloaded into SGPRs (gfx940+) has two
    entries: firmware that preloads starts 256 bytes after the descriptor's
    entry, skipping a compatibility header that loads the arguments itself.
    Such a kernel gets the prologue at both entries.

    Linear in the assembly's size: the labels are found in one pass and each
    kernel's rewrite reads only its own body.
    """
    pieces, pos = [], 0
    for start, kernel in _entry_labels(asm, kernels):
        end = asm.find(".Lfunc_end", start)
        if end < 0:
            raise CodegenError(f"kernel {kernel!r}: no .Lfunc_end label after its entry")
        pieces.append(asm[pos:start])
        pieces.append(_kernel_prologue_first(kernel, asm[start:end], preload.get(kernel, 0) > 0))
        pos = end
    pieces.append(asm[pos:])
    return "".join(pieces)


def _run(cmd: list[str], hint: str = "") -> None:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, errors="replace", check=False)
    except OSError as e:
        raise CodegenError(f"cannot run `{cmd[0]}`: {e}") from None
    if r.returncode != 0:
        raise CodegenError(
            f"`{' '.join(cmd)}` failed (exit {r.returncode}):\n{r.stderr.strip()}{hint}"
        )


def _kernels_at_lines(asm: str, kernels: list[str], lines: list[int]) -> list[str]:
    """The kernels whose assembly holds the given 1-based line numbers."""
    starts, line, pos = [], 1, 0
    for at, kernel in _entry_labels(asm, kernels):
        line += asm.count("\n", pos, at)
        pos = at
        starts.append((line, kernel))
    named = []
    for wanted in sorted(set(lines)):
        owners = [kernel for first, kernel in starts if first <= wanted]
        if owners and owners[-1] not in named:
            named.append(owners[-1])
    return named


def _assemble(tools: Toolchain, mcpu: str, asm: str, kernels: list[str], source: Path, obj: Path) -> None:
    """llvm-mc; its errors become a CodegenError naming the kernels they are in."""
    cmd = [str(tools.assembler), f"--triple={TRIPLE}", f"--mcpu={mcpu}", "-filetype=obj",
           str(source), "-o", str(obj)]
    try:
        _run(cmd, _older_assembler_hint(tools))
    except CodegenError as e:
        lines = [int(n) for n in _ASSEMBLER_LINE.findall(str(e))]
        where = _kernels_at_lines(asm, kernels, lines)
        if not where:
            raise
        # The temporary directory is gone when the user reads this.
        quoted = str(e).replace(f"{source.parent}/", "")
        raise CodegenError(
            f"the assembler rejected the code of kernel{'s' if len(where) > 1 else ''} "
            f"{', '.join(repr(k) for k in where)} for {mcpu} (in a prologue, the line it quotes "
            f"is the prologue's): {quoted}"
        ) from None


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


def _first_mnemonic(prologue: str) -> str:
    """The prologue's first instruction's mnemonic; CodegenError if it has none,
    or if it holds the inline-asm markers its block is found by."""
    if ";;#ASMSTART" in prologue or ";;#ASMEND" in prologue:
        raise CodegenError(f"prologue {prologue!r} holds LLVM's inline-asm markers ;;#ASMSTART/;;#ASMEND")
    for line in prologue.splitlines():
        code = line.split(";")[0].split("//")[0].strip()
        if code:
            return code.split()[0]
    raise CodegenError(f"prologue {prologue!r} holds no instruction (only comments or blank lines)")


def _check_no_marker(module: ir.Module) -> None:
    """IRError when the IR's own text holds the marker the injected prologue is found by (IR printed after
    an injection, or inline asm quoting it): its block could not be told from the prologue's."""
    text = str(module)
    if _MARKER not in text:
        return
    defines = [(m.start(), text.find("\n}\n", m.end()), m.group(1)) for m in ir.DEFINE.finditer(text)]
    holders: list[str] = []
    at = text.find(_MARKER)
    while at >= 0:
        name = next((n for first, last, n in defines if first <= at < last), "module-level asm")
        if name not in holders:
            holders.append(name)
        at = text.find(_MARKER, at + 1)
    raise IRError(
        f"the IR's own inline asm holds the text {_MARKER!r} (in {', '.join(holders)}), the marker pyhipbench "
        "finds its injected prologue by, so that asm could not be told from the prologue: IR printed after "
        "a prologue was injected (ir.inject_prologue), or asm quoting the marker; expected IR without that "
        "text (compile the IR as it was before the injection, or remove or reword that asm)"
    )


def check_code_object_version(version: object) -> int:
    """``version`` as an int if it is one of CODE_OBJECT_VERSIONS, else CodegenError."""
    if isinstance(version, numbers.Integral) and not isinstance(version, bool) and int(version) in CODE_OBJECT_VERSIONS:
        return int(version)
    raise CodegenError(
        f"code object version {version!r} is not one of {', '.join(map(str, CODE_OBJECT_VERSIONS))}"
    )


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
    code_object_version = check_code_object_version(code_object_version)
    check_kernel_names(kernels)
    expected = _first_mnemonic(prologue) if prologue is not None else None
    tools = find_toolchain(mcpu)
    module = _with_code_object_version(module, code_object_version)
    if prologue is not None:
        _check_no_marker(module)
        module = ir.inject_prologue(module, f"{_MARKER}\n{prologue}", kernels)
    asm, preload, descriptors = _descriptors_quoted(_emit_assembly(module, mcpu, kernels), kernels)
    if prologue is not None:
        asm = _prologue_first(asm, kernels, preload)
    asm = _METADATA_STRING.sub(r"\1!str \2", asm)
    try:
        with tempfile.TemporaryDirectory(prefix="pyhipbench-") as tmp:
            source, obj, hsaco = (Path(tmp) / n for n in ("kernels.s", "kernels.o", "kernels.hsaco"))
            source.write_text(asm)
            _assemble(tools, mcpu, asm, kernels, source, obj)
            if prologue is not None:  # the assembler has read it: each statement is an instruction it knows
                entries = [prologue_rules.entry_registers(k, descriptors[k]) for k in kernels if k in descriptors]
                prologue_rules.check_writes(prologue, entries, mcpu)
            _run([str(tools.linker), "-shared", "--no-undefined", str(obj), "-o", str(hsaco)])
            verification = None
            if prologue is not None:
                verification = verify_entries(hsaco, mcpu, kernels, expected, tools.disassembler)
                if not verification.ok:
                    raise VerificationError(verification)
            return hsaco.read_bytes(), verification
    except OSError as e:  # the temporary directory: full disk, no $TMPDIR
        raise CodegenError(f"cannot write the assembler's temporary files: {e}") from None
