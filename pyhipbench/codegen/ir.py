"""The LLVM IR pass: parse and verify a module, find its kernels, inject a
prologue (inline assembly) at each kernel's entry, verify again.

llvmlite's binding layer can read but not edit instructions, so the prologue
is injected into the module's printed text, which LLVM prints in one
canonical form (one ``define`` line per function, labels in column 0), and
the edited text is parsed and verified again.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

import llvmlite.binding as llvm

from ..errors import IRError

__all__ = [
    "IRError",
    "Module",
    "parse",
    "find_kernels",
    "inject_prologue",
    "KERNEL_CALLING_CONVENTIONS",
]

# The calling conventions that mark a kernel (a host-launchable entry point).
# Legacy NVVM kernels (`!nvvm.annotations` with "kernel") are upgraded to
# `ptx_kernel` by LLVM's IR reader (LLVM >= 20), so they are found the same way.
KERNEL_CALLING_CONVENTIONS = ("amdgpu_kernel", "ptx_kernel")

BITCODE_MAGIC = (b"BC\xc0\xde", b"\xde\xc0\x17\x0b")  # raw, and the wrapper
# An LLVM identifier: a bare name or a quoted one with \XX escapes.
_NAME = r'(?:"(?:[^"\\]|\\[0-9A-Fa-f]{2}|\\\\)*"|[-a-zA-Z$._0-9]+)'
DEFINE = re.compile(rf"^define\b[^\n]*?@({_NAME})\(", re.MULTILINE)
_LABEL = re.compile(rf"^{_NAME}:")
_ESCAPE = re.compile(rb"\\(\\|[0-9A-Fa-f]{2})")
_TARGET_CPU = re.compile(r'"target-cpu"="([^"]*)"')
_TARGET_FEATURES = re.compile(r'"target-features"="([^"]*)"')


@dataclass(frozen=True)
class Module:
    """A parsed and verified LLVM module.

    ``ref`` is the llvmlite module; code generation mutates a module, so
    callers emit from ``clone()``, never from ``ref`` itself.
    """

    ref: llvm.ModuleRef
    name: str | None = None  # the file or name it was parsed from, for errors

    @property
    def triple(self) -> str:
        return self.ref.triple

    @property
    def functions(self) -> list[str]:
        """Names of the functions defined (not only declared) in the module."""
        return [f.name for f in self.ref.functions if not f.is_declaration]

    @property
    def target_cpus(self) -> set[str]:
        """Processors named by the functions' "target-cpu" attributes."""
        return set(_TARGET_CPU.findall(str(self.ref)))

    @property
    def target_features(self) -> set[str]:
        """Features named by the functions' "target-features" attributes ("+ptx88", ...)."""
        found = _TARGET_FEATURES.findall(str(self.ref))
        return {f for features in found for f in features.split(",") if f}

    def clone(self) -> llvm.ModuleRef:
        return self.ref.clone()

    def __str__(self) -> str:
        return str(self.ref)


def _init_llvm() -> None:
    # Idempotent; every target is needed because the IR decides which one.
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()


def parse(ir: str | bytes | os.PathLike, *, name: str | None = None) -> Module:
    """Parse IR text or bitcode and verify it.

    ``ir`` is a path (``os.PathLike``) to a ``.ll``/``.bc`` file, IR text
    (``str``), or IR text or bitcode (``bytes``; bitcode is recognised by its
    magic number). Errors carry LLVM's diagnostic, which names the line.
    """
    _init_llvm()
    if isinstance(ir, os.PathLike):
        name = name or os.fspath(ir)
        try:
            with open(ir, "rb") as f:
                ir = f.read()
        except OSError as e:
            raise IRError(f"cannot read the IR file {name}: {e.strerror or e}") from None
    elif not isinstance(ir, (str, bytes)):
        raise IRError(
            f"expected LLVM IR text (str), text or bitcode (bytes) or a path (os.PathLike), "
            f"got {type(ir).__name__}"
        )
    given_name, name = name, name or "<ir>"
    try:
        if isinstance(ir, bytes) and ir[:4] in BITCODE_MAGIC:
            module = llvm.parse_bitcode(ir)
        else:
            text = ir.decode() if isinstance(ir, bytes) else ir
            if "\0" in text:
                raise IRError(f"{name} holds a NUL character at offset {text.index(chr(0))}: "
                              "it is neither LLVM IR text nor bitcode")
            module = llvm.parse_assembly(text)
        module.verify()
    except UnicodeDecodeError as e:
        raise IRError(
            f"{name} is neither LLVM bitcode (no BC magic number) nor UTF-8 IR text "
            f"(byte 0x{ir[e.start]:02x} at offset {e.start})"
        ) from None
    except RuntimeError as e:
        # llvmlite's message holds LLVM's "<string>:LINE:COL: error: ..." text.
        raise IRError(f"invalid LLVM IR in {name}: {e}{_path_hint(ir)}") from None
    return Module(module, given_name)


def _path_hint(ir: str | bytes) -> str:
    """A hint when IR text that failed to parse looks like a file name."""
    if isinstance(ir, str) and "\n" not in ir and ir.strip().endswith((".ll", ".bc")):
        return f"\n(a str is IR text; to read the file {ir.strip()!r} pass pathlib.Path({ir.strip()!r}))"
    return ""


def _calling_convention_of(function: llvm.ValueRef) -> str | None:
    header = next(line for line in str(function).splitlines() if line.startswith("define"))
    head = header[: header.index("@")].split()
    return next((cc for cc in KERNEL_CALLING_CONVENTIONS if cc in head), None)


def find_kernels(module: Module) -> list[str]:
    """Names of the module's kernels, in definition order.

    Raises IRError naming the functions found when there is no kernel.
    """
    kernels = [
        f.name
        for f in module.ref.functions
        if not f.is_declaration and _calling_convention_of(f) is not None
    ]
    if not kernels:
        found = ", ".join(module.functions) or "none"
        raise IRError(
            f"no kernel in {module.name or 'the module'}: expected a function with calling convention "
            f"{' or '.join(KERNEL_CALLING_CONVENTIONS)} (or an nvvm.annotations kernel); "
            f"functions defined: {found}"
        )
    return kernels


def _ir_string(text: str) -> str:
    """``text`` as the body of an LLVM IR string constant."""
    out = []
    for ch in text:
        if ch == '"' or ch == "\\" or not (" " <= ch <= "~"):
            out.extend(f"\\{b:02X}" for b in ch.encode())
        else:
            out.append(ch)
    return "".join(out)


def _unquote(name: str) -> str:
    """A printed IR name (``"my\\22kernel"``) as the function's name."""
    if not name.startswith('"'):
        return name

    def unescape(m: re.Match) -> bytes:
        return b"\\" if m.group(1) == b"\\" else bytes([int(m.group(1), 16)])

    return _ESCAPE.sub(unescape, name[1:-1].encode()).decode()


def inject_prologue(module: Module, asm: str, kernels: list[str] | None = None) -> Module:
    """A new module whose kernels start with ``asm`` as side-effecting inline asm.

    ``asm`` is assembly text for the module's target (lines separated by
    newlines). The call is placed first in each kernel's entry block; nothing
    else is changed. ``kernels`` defaults to all kernels of the module.
    """
    kernels = set(find_kernels(module) if kernels is None else kernels)
    call = f'  call void asm sideeffect "{_ir_string(asm)}", ""()\n'
    text = str(module)
    pieces, pos, done = [], 0, set()
    for define in DEFINE.finditer(text):
        fname = _unquote(define.group(1))
        if fname not in kernels:
            continue
        # The body starts on the line after the `define ... {` line; an
        # explicit entry label, if any, must stay the block's first line.
        body = text.index("\n", define.end()) + 1
        first_line = text[body : text.index("\n", body) + 1]
        at = body + len(first_line) if _LABEL.match(first_line) else body
        pieces.append(text[pos:at] + call)
        pos = at
        done.add(fname)
    pieces.append(text[pos:])
    missing = sorted(kernels - done)
    if missing:
        raise IRError(f"cannot inject a prologue: no definition found for {missing}")
    try:
        return parse("".join(pieces), name="the IR after prologue injection")
    except IRError as e:
        raise IRError(f"prologue {asm!r} does not fit the module: {e}") from None
