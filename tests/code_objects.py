"""Code objects for the parsing tests: real ones from the toolchain and the
package, and small hand-built ELF, fatbin and msgpack bytes with the layout
the drivers expect."""
from __future__ import annotations

import struct
from importlib import resources
from pathlib import Path

KERNELS = resources.files("pyhipbench") / "kernels"
IR_DATA = Path(__file__).parent / "data" / "ir"
EM_CUDA, EM_AMDGPU = 190, 224
SHT_PROGBITS, SHT_STRTAB, SHT_NOTE = 1, 3, 7


def bundled_ptx() -> dict[str, bytes]:
    """The package's hand-written PTX."""
    return {name: (KERNELS / f"{name}.ptx").read_bytes() for name in ("copy", "empty")}


def elf64(machine: int, sections: list[tuple[str, int, bytes]]) -> bytes:
    """An ELF64 little-endian shared object: (name, type, contents) sections after a
    null one, a section name table last but one, the section header table at the end."""
    names = b"\0"
    offsets = []
    for name, _, _ in sections + [(".shstrtab", SHT_STRTAB, b"")]:
        offsets.append(len(names))
        names += name.encode() + b"\0"
    sections = sections + [(".shstrtab", SHT_STRTAB, names)]
    body, placed = b"", []
    for _, _, contents in sections:
        body += b"\0" * (-len(body) % 8)
        placed.append(64 + len(body))
        body += contents
    body += b"\0" * (-len(body) % 8)
    shoff = 64 + len(body)
    header = (b"\x7fELF\x02\x01\x01" + b"\0" * 9
              + struct.pack("<HHIQQQIHHHHHH", 3, machine, 1, 0, 0, shoff, 0, 64, 56, 0, 64,
                            len(sections) + 1, len(sections)))
    table = b"\0" * 64
    for (_, kind, contents), name_at, at in zip(sections, offsets, placed):
        table += struct.pack("<IIQQQQIIQQ", name_at, kind, 0, 0, at, len(contents), 0, 0, 1, 0)
    return header + body + table


def note(name: bytes, note_type: int, desc: bytes) -> bytes:
    """One ELF note: header, NUL-terminated name and description, each padded to 4 bytes."""
    name += b"\0"
    return (struct.pack("<III", len(name), len(desc), note_type) + name + b"\0" * (-len(name) % 4)
            + desc + b"\0" * (-len(desc) % 4))


def msgpack(value) -> bytes:
    """The msgpack encoding of maps, lists, strings, bools and ints (the AMDGPU metadata subset)."""
    if isinstance(value, bool):
        return b"\xc3" if value else b"\xc2"
    if isinstance(value, int):
        return bytes([value]) if 0 <= value < 128 else b"\xcf" + struct.pack(">Q", value)
    if isinstance(value, str):
        raw = value.encode()
        return (bytes([0xA0 | len(raw)]) if len(raw) < 32 else b"\xd9" + bytes([len(raw)])) + raw
    if isinstance(value, list):
        return b"\xdc" + struct.pack(">H", len(value)) + b"".join(msgpack(v) for v in value)
    if isinstance(value, dict):
        return b"\xde" + struct.pack(">H", len(value)) + b"".join(msgpack(k) + msgpack(v) for k, v in value.items())
    raise TypeError(value)


def hsaco_with_metadata(document: bytes) -> bytes:
    """An AMDGPU ELF whose only content is an AMDGPU metadata note holding `document` (msgpack bytes)."""
    return elf64(EM_AMDGPU, [(".note", SHT_NOTE, note(b"AMDGPU", 32, document))])


COPY_METADATA = {"amdhsa.version": [1, 2], "amdhsa.kernels": [{
    ".name": "copy", ".symbol": "copy.kd", ".kernarg_segment_size": 24, ".args": [
        {".name": "src", ".offset": 0, ".size": 8, ".value_kind": "global_buffer"},
        {".name": "dst", ".offset": 8, ".size": 8, ".value_kind": "global_buffer"},
        {".name": "n", ".offset": 16, ".size": 8, ".value_kind": "by_value"},
        {".offset": 24, ".size": 8, ".value_kind": "hidden_block_count_x"}]}]}


def minimal_cubin() -> bytes:
    """An NVIDIA ELF (machine 190) with a code section and its name table: the layout a driver reads."""
    return elf64(EM_CUDA, [(".text.copy", SHT_PROGBITS, bytes(range(256)) * 2)])


def fatbin(payloads: list[bytes]) -> bytes:
    """A fatbin container: 16-byte header, then per payload a 64-byte entry header and
    the payload padded to 8 bytes (kind 1, PTX)."""
    entries = b""
    for payload in payloads:
        padded = payload + b"\0" * (-len(payload) % 8)
        entries += struct.pack("<HHIQ", 1, 0x0101, 64, len(padded)) + b"\0" * 48 + padded
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(entries)) + entries
