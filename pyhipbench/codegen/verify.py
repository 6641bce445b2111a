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

from ..errors import CodegenError, VerificationError

__all__ = ["KernelEntry", "Verification", "VerificationError", "verify_entries"]

_DESCRIPTOR_SIZE = 64
_ENTRY_OFFSET_AT = 16  # kernel_code_entry_byte_offset: int64, bytes 16..23
_PRELOAD_AT = 58  # kernarg_preload: uint16, bits 6:0 = SGPRs preloaded
# Firmware that preloads kernel arguments starts this far past the entry.
_PRELOAD_ENTRY_OFFSET = 256
_SHT_SYMTAB, _SHT_DYNSYM, _STT_OBJECT = 2, 11, 1
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


def _descriptors(elf: bytes) -> dict[str, tuple[int, bytes]]:
    """Kernel descriptors of an ELF64 little-endian object: name -> (address, bytes)."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", elf, 0x3A)
    sections = [
        struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)
    ]
    by_type = {s[1]: s for s in sections}
    symtab = by_type.get(_SHT_SYMTAB) or by_type.get(_SHT_DYNSYM)
    if symtab is None:
        raise ValueError("the code object has no symbol table")
    _, _, _, _, sym_off, sym_size, strtab_index, _, _, sym_entsize = symtab
    strtab_off = sections[strtab_index][4]
    found = {}
    for at in range(sym_off, sym_off + sym_size, sym_entsize):
        st_name, st_info, _, st_shndx, st_value, _ = struct.unpack_from("<IBBHQQ", elf, at)
        name = elf[strtab_off + st_name : elf.index(b"\0", strtab_off + st_name)].decode()
        if (st_info & 0xF) != _STT_OBJECT or not name.endswith(".kd") or st_shndx >= shnum:
            continue
        _, _, _, sh_addr, sh_offset, _, _, _, _, _ = sections[st_shndx]
        start = sh_offset + (st_value - sh_addr)
        found[name[: -len(".kd")]] = (st_value, elf[start : start + _DESCRIPTOR_SIZE])
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
    except (ValueError, struct.error, IndexError) as e:
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
