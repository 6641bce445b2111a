"""Proof that each kernel starts with the prologue: read each kernel
descriptor from the code object, follow its entry offset, and disassemble
the instruction there.

The descriptor, not the function symbol, is what the GPU's dispatcher
follows (``kernel_code_entry_byte_offset``, bytes 16..23 of the 64-byte
descriptor, relative to the descriptor's own address), so that is what is
checked.
"""

from __future__ import annotations

import re
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .._codeobject.elf import ElfFile
from ..errors import BenchError, CodegenError, VerificationError

__all__ = ["KernelEntry", "Verification", "VerificationError", "verify_entries"]

_DESCRIPTOR_SIZE = 64
_ENTRY_OFFSET_AT = 16  # kernel_code_entry_byte_offset: int64, bytes 16..23
_PRELOAD_AT = 58  # kernarg_preload: uint16, bits 6:0 = SGPRs preloaded
# Firmware that preloads kernel arguments starts this far past the entry.
_PRELOAD_ENTRY_OFFSET = 256
_STT_OBJECT = 1
# llvm-objdump prints AMDGPU instructions as "\t<insn>   // <ADDR>: <bytes>".
_DISASSEMBLY_LINE = re.compile(r"^\s+(\S.*?)\s*//\s*([0-9A-Fa-f]+):")


@dataclass(frozen=True)
class KernelEntry:
    """Where one kernel's descriptor says it starts, and what is there.

    A kernel that preloads arguments has a second row, ``preload=True``: the
    entry used by firmware that preloads, 256 bytes past the first.
    """

    kernel: str
    descriptor: int  # address of <kernel>.kd in the code object
    entry: int  # address the descriptor's entry offset points at
    first_instruction: str  # disassembly at `entry` ("" when none decodes)
    ok: bool
    preload: bool = False

    def __str__(self) -> str:
        status = "ok" if self.ok else "FAILED"
        which = "preload entry" if self.preload else "entry"
        return (
            f"{self.kernel}: {which} 0x{self.entry:x} (descriptor 0x{self.descriptor:x}) "
            f"first instruction `{self.first_instruction or '<none>'}` [{status}]"
        )


@dataclass(frozen=True)
class Verification:
    """The result of checking every kernel's first instruction."""

    expected: str  # the mnemonic every kernel must execute first
    kernels: tuple[KernelEntry, ...]
    missing: tuple[str, ...]  # kernels without a descriptor in the code object
    disassembler: str  # the llvm-objdump command that produced the listing

    @property
    def ok(self) -> bool:
        return not self.missing and all(k.ok for k in self.kernels)

    def __str__(self) -> str:
        lines = [f"first instruction must be {self.expected}: {'PASSED' if self.ok else 'FAILED'}"]
        lines += [f"  {k}" for k in self.kernels]
        lines += [f"  {name}: no kernel descriptor {name}.kd [FAILED]" for name in self.missing]
        return "\n".join(lines)


def _descriptors(image: bytes) -> dict[str, tuple[int, bytes]]:
    """Kernel descriptors of an HSACO: name -> (address, its 64 bytes).

    Read through pyhipbench._codeobject.elf, so a truncated or corrupt code object is a
    BenchError naming what is wrong and where, and every descriptor returned
    is whole.
    """
    code_object = ElfFile(image, "HSACO")
    symbols = code_object.symbols()
    if symbols is None:
        raise BenchError("HSACO has no symbol table, so no kernel descriptor (<kernel>.kd) can be found")
    found = {}
    for symbol in symbols:
        if symbol.type != _STT_OBJECT or not symbol.name.endswith(".kd"):
            continue
        section = code_object.section_of(symbol)
        if section is None:
            continue
        descriptor = code_object.at_address(section, symbol.value, _DESCRIPTOR_SIZE,
                                            f"kernel descriptor {symbol.name}")
        found[symbol.name[: -len(".kd")]] = (symbol.value, descriptor)
    return found


def _disassemble(disassembler: Path, mcpu: str, code_object: Path) -> tuple[str, dict[int, str]]:
    cmd = [str(disassembler), "-d", f"--mcpu={mcpu}", str(code_object)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, errors="replace", check=False)
    except OSError as e:
        raise CodegenError(f"cannot run `{cmd[0]}`: {e}") from None
    if r.returncode != 0 or "not a recognized processor" in r.stderr:
        raise CodegenError(f"`{' '.join(cmd)}` failed: {r.stderr.strip()}")
    listing = {}
    for line in r.stdout.splitlines():
        m = _DISASSEMBLY_LINE.match(line)
        if m:
            listing[int(m.group(2), 16)] = " ".join(m.group(1).split())
    return " ".join(cmd), listing


def verify_entries(
    code_object: Path, mcpu: str, kernels: list[str], expected: str, disassembler: Path
) -> Verification:
    """Check that every kernel's descriptor entry holds mnemonic ``expected``.

    ``code_object`` is an HSACO file for processor ``mcpu``; ``disassembler``
    is llvm-objdump. Returns the record; the caller decides to raise.
    """
    try:
        descriptors = _descriptors(code_object.read_bytes())
    except BenchError as e:  # the object the linker just wrote does not parse
        raise CodegenError(f"cannot read the kernel descriptors of {code_object}: {e}") from None
    command, listing = _disassemble(disassembler, mcpu, code_object)
    entries = []
    for name in kernels:
        if name not in descriptors:
            continue
        address, descriptor = descriptors[name]
        offset, = struct.unpack_from("<q", descriptor, _ENTRY_OFFSET_AT)
        preload, = struct.unpack_from("<H", descriptor, _PRELOAD_AT)
        starts = [(address + offset, False)]
        if preload & 0x7F:
            starts.append((address + offset + _PRELOAD_ENTRY_OFFSET, True))
        for entry, is_preload in starts:
            first = listing.get(entry, "")
            ok = first.split(" ")[0] == expected
            entries.append(KernelEntry(name, address, entry, first, ok, is_preload))
    missing = tuple(k for k in kernels if k not in descriptors)
    return Verification(expected, tuple(entries), missing, command)
