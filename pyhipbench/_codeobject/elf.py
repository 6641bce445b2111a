"""A bounds-checked reader for 64-bit little-endian ELF files (HSACO, cubin).

The one place pyhipbench reads ELF: the HSACO metadata notes
(codeobject.py) and the kernel descriptor symbols (codegen/verify.py). Every
offset and size read from the file is checked before it is followed, so a
truncated or corrupt code object is a BenchError naming what is wrong and
where, never a struct.error or IndexError. The whole layout (headers,
section and segment extents) is checked up front because the drivers'
module loaders take no size: a code object whose tables point past its end
would make them read past the end of the buffer.
"""
from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from ..errors import BenchError

ELF_MAGIC = b"\x7fELF"
ELF_HEADER_BYTES = 64
SECTION_HEADER_BYTES = 64
PROGRAM_HEADER_BYTES = 56
SYMBOL_BYTES = 24
NOTE_HEADER_BYTES = 12
SHT_SYMTAB, SHT_STRTAB, SHT_NOTE, SHT_NOBITS, SHT_DYNSYM = 2, 3, 7, 8, 11
SHN_LORESERVE = 0xFF00  # section indices from here up are special (ABS, COMMON, ...)


@dataclass(frozen=True)
class Section:
    index: int
    name: str
    type: int     # SHT_*
    address: int  # sh_addr
    offset: int   # sh_offset, bytes into the file
    size: int     # sh_size, bytes
    link: int     # sh_link
    entry_size: int


@dataclass(frozen=True)
class Symbol:
    name: str
    type: int     # STT_* (low nibble of st_info)
    section: int  # st_shndx
    value: int    # st_value: an address
    size: int     # st_size, bytes


@dataclass(frozen=True)
class Note:
    name: bytes   # without its trailing NULs
    type: int
    desc: bytes


def machine(image: bytes, what: str = "ELF file") -> int:
    """e_machine of an ELF64 image whose header is whole (BenchError if cut short)."""
    if len(image) < ELF_HEADER_BYTES:
        raise BenchError(f"{what} truncated: {len(image)} bytes, shorter than the "
                         f"{ELF_HEADER_BYTES}-byte ELF64 header")
    return struct.unpack_from("<H", image, 18)[0]


class ElfFile:
    """The sections, symbols and notes of one ELF64 little-endian image, all bounds-checked.

    `what` names the file in errors ("HSACO", "cubin").
    """

    def __init__(self, image: bytes, what: str = "ELF file") -> None:
        self.image, self.what = bytes(image), what
        self.machine = machine(self.image, what)
        if self.image[:4] != ELF_MAGIC:
            raise self._corrupt(f"starts with {self.image[:4]!r}, not the ELF magic {ELF_MAGIC!r}")
        elf_class, encoding, version = self.image[4], self.image[5], self.image[6]
        if (elf_class, encoding) != (2, 1):
            raise BenchError(f"{what} has ELF class {elf_class} and data encoding {encoding}; "
                             "expected a 64-bit (2) little-endian (1) ELF")
        if version != 1:
            raise self._corrupt(f"has ELF version {version}; every ELF file has version 1")
        phoff, shoff = struct.unpack_from("<QQ", self.image, 0x20)
        phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from("<HHHHH", self.image, 0x36)
        if shnum == 0 and shoff != 0:
            raise self._corrupt("uses extended section numbering (e_shnum 0 with a section header "
                                "table), which no GPU code object needs")
        self._table("section header table", shoff, shnum, shentsize, SECTION_HEADER_BYTES)
        self._table("program header table", phoff, phnum, phentsize, PROGRAM_HEADER_BYTES)
        for i in range(phnum):
            p_offset, = struct.unpack_from("<Q", self.image, phoff + i * phentsize + 8)
            p_filesz, = struct.unpack_from("<Q", self.image, phoff + i * phentsize + 32)
            self._extent(f"segment {i}", p_offset, p_filesz)
        headers = [struct.unpack_from("<IIQQQQIIQQ", self.image, shoff + i * shentsize) for i in range(shnum)]
        for i, (_, sh_type, _, _, sh_offset, sh_size, *_) in enumerate(headers):
            if sh_type != SHT_NOBITS:
                self._extent(f"section {i}", sh_offset, sh_size)
        if shnum and not shstrndx < shnum:
            raise self._corrupt(f"names its section name table as section {shstrndx}, "
                                f"but it has {shnum} sections")
        names = b""  # index 0: no name table
        if shstrndx:
            h = headers[shstrndx]
            names = self.data(Section(shstrndx, "", h[1], h[3], h[4], h[5], h[6], h[9]))
        self.sections = tuple(
            Section(i, self._string(names, h[0], f"the name of section {i}") if names else "", h[1], h[3], h[4],
                    h[5], h[6], h[9]) for i, h in enumerate(headers))

    # -- reading -------------------------------------------------------------
    def data(self, section: Section) -> bytes:
        """A section's bytes (empty for SHT_NOBITS, which occupies none)."""
        if section.type == SHT_NOBITS:
            return b""
        return self.image[section.offset:section.offset + section.size]

    def at_address(self, section: Section, address: int, size: int, thing: str) -> bytes:
        """`size` bytes at virtual `address`, which must lie inside `section`'s contents."""
        end = section.address + (section.size if section.type != SHT_NOBITS else 0)
        if not (section.address <= address and address + size <= end):
            raise self._corrupt(f"{thing} at address 0x{address:x} ({size} bytes) is not inside "
                                f"section {section.index} {section.name} (0x{section.address:x}..0x{end:x})")
        start = section.offset + address - section.address
        return self.image[start:start + size]

    def symbols(self) -> list[Symbol] | None:
        """The static symbol table (.symtab), else the dynamic one; None if there is neither."""
        tables = {s.type: s for s in reversed(self.sections)}  # the first of each type wins
        table = tables.get(SHT_SYMTAB) or tables.get(SHT_DYNSYM)
        if table is None:
            return None
        label = f"symbol table (section {table.index} {table.name})"
        if table.entry_size != SYMBOL_BYTES:
            raise self._corrupt(f"{label} has {table.entry_size}-byte entries; ELF64 symbols are "
                                f"{SYMBOL_BYTES} bytes")
        if not (0 < table.link < len(self.sections) and self.sections[table.link].type == SHT_STRTAB):
            raise self._corrupt(f"{label} names section {table.link} as its string table, "
                                f"which is not a string table of its {len(self.sections)} sections")
        strings, data = self.data(self.sections[table.link]), self.data(table)
        if len(data) % SYMBOL_BYTES:
            raise self._corrupt(f"{label} is {len(data)} bytes, not a whole number of "
                                f"{SYMBOL_BYTES}-byte symbols")
        symbols = []
        for at in range(0, len(data) - SYMBOL_BYTES + 1, SYMBOL_BYTES):
            st_name, st_info, _, st_shndx, st_value, st_size = struct.unpack_from("<IBBHQQ", data, at)
            name = self._string(strings, st_name, f"the name of symbol {at // SYMBOL_BYTES} in the {label}")
            symbols.append(Symbol(name, st_info & 0xF, st_shndx, st_value, st_size))
        return symbols

    def section_of(self, symbol: Symbol) -> Section | None:
        """The section a symbol is defined in; None for undefined and special (ABS, COMMON) ones."""
        if symbol.section == 0 or symbol.section >= SHN_LORESERVE:
            return None
        if symbol.section >= len(self.sections):
            raise self._corrupt(f"symbol {symbol.name!r} is in section {symbol.section}, "
                                f"but it has {len(self.sections)} sections")
        return self.sections[symbol.section]

    def notes(self) -> Iterator[Note]:
        """Every note of every SHT_NOTE section, in file order."""
        for section in self.sections:
            if section.type != SHT_NOTE:
                continue
            data, position = self.data(section), 0
            while position + NOTE_HEADER_BYTES <= len(data):
                namesz, descsz, note_type = struct.unpack_from("<III", data, position)
                desc_at = position + NOTE_HEADER_BYTES + _align4(namesz)
                if desc_at + descsz > len(data):
                    raise self._corrupt(
                        f"note at 0x{section.offset + position:x} declares a {namesz}-byte name and a "
                        f"{descsz}-byte description, past the end of section {section.index} "
                        f"{section.name} ({section.size} bytes at 0x{section.offset:x})")
                name = data[position + NOTE_HEADER_BYTES:position + NOTE_HEADER_BYTES + namesz]
                yield Note(name.rstrip(b"\0"), note_type, data[desc_at:desc_at + descsz])
                position = desc_at + _align4(descsz)

    # -- checks --------------------------------------------------------------
    def _corrupt(self, message: str) -> BenchError:
        return BenchError(f"{self.what} is corrupt: {message}")

    def _extent(self, thing: str, offset: int, size: int) -> None:
        if offset + size > len(self.image):
            raise BenchError(f"{self.what} truncated or corrupt: {thing} at 0x{offset:x}..0x{offset + size:x} "
                             f"runs past the end of the {len(self.image)}-byte file")

    def _table(self, thing: str, offset: int, count: int, entry_size: int, expected: int) -> None:
        if count == 0:
            return
        if entry_size != expected:
            raise self._corrupt(f"its {thing} has {entry_size}-byte entries; ELF64 has {expected}")
        self._extent(f"{thing} ({count} entries of {entry_size} bytes)", offset, count * entry_size)

    def _string(self, table: bytes, offset: int, thing: str) -> str:
        end = table.find(b"\0", offset)
        if offset >= len(table) or end < 0:
            raise self._corrupt(f"{thing} at offset {offset} of its {len(table)}-byte string table "
                                "is not a NUL-terminated string inside it")
        try:
            return table[offset:end].decode()
        except UnicodeDecodeError as e:
            raise self._corrupt(f"{thing} is not UTF-8 (byte 0x{table[offset + e.start]:02x})") from None


def _align4(n: int) -> int:
    return -(-n // 4) * 4
