"""What a code object is and which kernels, with which parameters, it holds.

Read before anything is loaded or launched, so that bad arguments are caught
on the CPU: PTX from its `.entry` declarations, HSACO from its AMDGPU metadata
note (msgpack). Cubin and fatbin parameter lists come from the CUDA driver
once the module is loaded (`cuFuncGetParamInfo`); `kernels()` returns None for
them.
"""
from __future__ import annotations

import os
import re
import struct
from pathlib import Path
from typing import Any

from .backends.base import KernelParam
from .errors import BenchError

EM_CUDA = 190
EM_AMDGPU = 224
FATBIN_MAGIC = 0xBA55ED50
NT_AMDGPU_METADATA = 32

FORMATS = ("ptx", "cubin", "fatbin", "hsaco")


def read_image(source: bytes | str | os.PathLike) -> bytes:
    """The code object's bytes, from bytes or a path."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source)
    path = Path(source)
    if not path.is_file():
        raise BenchError(f"code object {str(path)!r} is not a file")
    return path.read_bytes()


def detect_format(image: bytes) -> str:
    """One of FORMATS; raises BenchError for anything else."""
    if image[:4] == b"\x7fELF" and len(image) >= 20:
        machine = struct.unpack_from("<H", image, 18)[0]
        if machine == EM_CUDA:
            return "cubin"
        if machine == EM_AMDGPU:
            return "hsaco"
        raise BenchError(f"an ELF file for machine {machine} is not a GPU code object; "
                         f"expected a cubin (machine {EM_CUDA}) or an HSACO (machine {EM_AMDGPU})")
    if len(image) >= 4 and struct.unpack_from("<I", image)[0] == FATBIN_MAGIC:
        return "fatbin"
    if re.search(rb"^\s*\.version\s+\d+\.\d+", image[:4096], re.MULTILINE) and b".target" in image:
        return "ptx"
    raise BenchError(f"not a code object (starts with {image[:16]!r}); expected PTX text, "
                     "a cubin, a fatbin or an HSACO")


def kernels(image: bytes) -> dict[str, list[KernelParam]] | None:
    """Kernel name -> parameters, or None where only the driver can tell (cubin, fatbin)."""
    kind = detect_format(image)
    if kind == "ptx":
        return ptx_kernels(image.decode("utf-8", errors="replace"))
    if kind == "hsaco":
        return hsaco_kernels(image)
    return None


# ---- PTX -------------------------------------------------------------------

_ENTRY = re.compile(r"\.entry\s+([\w$.]+)\s*\(([^)]*)\)", re.DOTALL)
_PARAM = re.compile(r"\.param\s+(.*?)\s*([\w$]+)\s*(\[\s*(\d+)\s*\])?\s*$", re.DOTALL)
_TYPE_BITS = re.compile(r"\.[bsuf](8|16|32|64)\b")


def ptx_kernels(ptx: str) -> dict[str, list[KernelParam]]:
    """Parameters of every `.entry` in PTX text, with offsets laid out as the ABI does."""
    ptx = re.sub(r"//[^\n]*|/\*.*?\*/", "", ptx, flags=re.DOTALL)
    result = {}
    for name, body in _ENTRY.findall(ptx):
        params, offset = [], 0
        for declaration in filter(None, (d.strip() for d in body.split(","))):
            match = _PARAM.match(declaration)
            bits = _TYPE_BITS.search(declaration) if match else None
            if not bits:
                raise BenchError(f"cannot read PTX parameter {declaration!r} of kernel {name!r}")
            element = int(bits.group(1)) // 8
            size = element * int(match.group(4) or 1)
            # `.align` before the type aligns the parameter; after `.ptr` it is
            # the pointee's alignment, which does not move the parameter.
            align = re.search(r"\.align\s+(\d+)", match.group(1)[:bits.start() - match.start(1)])
            alignment = int(align.group(1)) if align else element
            offset = -(-offset // alignment) * alignment
            params.append(KernelParam(match.group(2), offset, size))
            offset += size
        result[name] = params
    return result


# ---- HSACO -----------------------------------------------------------------

def hsaco_kernels(image: bytes) -> dict[str, list[KernelParam]]:
    """Explicit (non-hidden) arguments of each kernel in an HSACO's metadata."""
    metadata = hsaco_metadata(image)
    result = {}
    for kernel in metadata.get("amdhsa.kernels", []):
        args = [a for a in kernel.get(".args", []) if not a[".value_kind"].startswith("hidden_")]
        result[kernel[".name"]] = [
            KernelParam(a.get(".name", f"arg_{i}"), a[".offset"], a[".size"]) for i, a in enumerate(args)]
    return result


def hsaco_metadata(image: bytes) -> dict[str, Any]:
    """The msgpack AMDGPU metadata note of an HSACO (code object v3 and later)."""
    if image[4] != 2 or image[5] != 1:
        raise BenchError(f"HSACO has ELF class {image[4]} and data encoding {image[5]}; "
                         "expected a 64-bit (2) little-endian (1) ELF")
    shoff, = struct.unpack_from("<Q", image, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", image, 0x3A)
    for i in range(shnum):
        sh_type, = struct.unpack_from("<I", image, shoff + i * shentsize + 4)
        if sh_type != 7:  # SHT_NOTE
            continue
        offset, size = struct.unpack_from("<QQ", image, shoff + i * shentsize + 0x18)
        for note_type, name, desc in _notes(image[offset:offset + size]):
            if name == b"AMDGPU" and note_type == NT_AMDGPU_METADATA:
                return _Msgpack(desc).read()
    raise BenchError("HSACO has no AMDGPU metadata note (code object v2 is not supported)")


def _notes(section: bytes):
    position = 0
    while position + 12 <= len(section):
        namesz, descsz, note_type = struct.unpack_from("<III", section, position)
        position += 12
        name = section[position:position + namesz].rstrip(b"\0")
        position += -(-namesz // 4) * 4
        desc = section[position:position + descsz]
        position += -(-descsz // 4) * 4
        yield note_type, name, desc


class _Msgpack:
    """The msgpack subset AMDGPU metadata uses: maps, arrays, strings, ints, bools, floats."""

    def __init__(self, data: bytes) -> None:
        self.data, self.position = data, 0

    def _take(self, fmt: str) -> Any:
        value = struct.unpack_from(">" + fmt, self.data, self.position)
        self.position += struct.calcsize(">" + fmt)
        return value[0]

    def _bytes(self, n: int) -> bytes:
        self.position += n
        return self.data[self.position - n:self.position]

    def read(self) -> Any:
        b = self._take("B")
        if b <= 0x7F:
            return b
        if b >= 0xE0:
            return b - 0x100
        if 0x80 <= b <= 0x8F:
            return self._map(b & 0x0F)
        if 0x90 <= b <= 0x9F:
            return [self.read() for _ in range(b & 0x0F)]
        if 0xA0 <= b <= 0xBF:
            return self._bytes(b & 0x1F).decode()
        simple = {0xC0: None, 0xC2: False, 0xC3: True}
        if b in simple:
            return simple[b]
        numbers = {0xCA: "f", 0xCB: "d", 0xCC: "B", 0xCD: "H", 0xCE: "I", 0xCF: "Q",
                   0xD0: "b", 0xD1: "h", 0xD2: "i", 0xD3: "q"}
        if b in numbers:
            return self._take(numbers[b])
        lengths = {0xD9: "B", 0xDA: "H", 0xDB: "I", 0xC4: "B", 0xC5: "H", 0xC6: "I"}
        if b in lengths:
            raw = self._bytes(self._take(lengths[b]))
            return raw.decode() if b >= 0xD9 else raw
        if b in (0xDC, 0xDD):
            return [self.read() for _ in range(self._take("H" if b == 0xDC else "I"))]
        if b in (0xDE, 0xDF):
            return self._map(self._take("H" if b == 0xDE else "I"))
        raise BenchError(f"unsupported msgpack byte 0x{b:02x} in HSACO metadata")

    def _map(self, n: int) -> dict:
        return {self.read(): self.read() for _ in range(n)}
