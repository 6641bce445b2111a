"""What a code object is and which kernels, with which parameters, it holds.

Read before anything is loaded or launched, so that bad arguments are caught
on the CPU: PTX from its `.entry` declarations, HSACO from its AMDGPU metadata
note (msgpack). Cubin and fatbin parameter lists come from the CUDA driver
once the module is loaded (`cuFuncGetParamInfo`); `kernels()` returns None for
them.
"""
from __future__ import annotations

import functools
import os
import re
import struct
from pathlib import Path
from typing import Any

from .._device.backends.base import KernelParam
from .._values import show
from ..errors import BenchError
from . import elf

EM_CUDA = 190
EM_AMDGPU = 224
FATBIN_MAGIC = 0xBA55ED50
NT_AMDGPU_METADATA = 32

FORMATS = ("ptx", "cubin", "fatbin", "hsaco")


# A str is a path: one that holds code rather than names a file gets told so. PTX's directives, an ELF's
# magic, a line break or more characters than a path can hold mark it.
_CODE_MARKS = (".version", ".target", ".entry", ".visible", "//", "\x7fELF")
_PATH_MAX = 4096
_STR_IS_A_PATH = "a str names a code object file; pass the code itself as bytes (text.encode())"


def read_image(source: bytes | str | os.PathLike) -> bytes:
    """The code object's bytes, from bytes or a path (a `str` is a path, never the code itself)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source)
    if not isinstance(source, (str, os.PathLike)):
        raise BenchError(f"code object {show(source)}: expected bytes, a path or a CodeObject, "
                         f"got {type(source).__name__}")
    name = os.fspath(source)
    if isinstance(name, bytes):  # a PathLike whose path is bytes
        name = os.fsdecode(name)
    if isinstance(source, str):
        held = _code_held(source)
        if held:
            raise BenchError(f"code object {show(source)}: a str is a path, and this one holds {held}, not a file "
                             "name; pass the code itself as bytes (text.encode()), or the path of a file holding it")
    shown = repr(name) if len(name) <= 160 else show(name)
    hint = f"; {_STR_IS_A_PATH}" if isinstance(source, str) else ""
    path = Path(name)
    try:
        is_file = path.is_file()
    except (OSError, ValueError) as e:  # a name too long for the system, or holding a NUL
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise BenchError(f"code object {shown} is not a file ({why}){hint}") from None
    if not is_file:
        why = "a directory" if path.is_dir() else "no such file"
        raise BenchError(f"code object {shown} is not a file ({why}){hint}")
    try:
        return path.read_bytes()
    except OSError as e:
        raise BenchError(f"code object {shown} cannot be read: {e.strerror or e}") from None


def _code_held(text: str) -> str:
    """What code `text` holds ('PTX text (1052 characters)'), or '' if it may be a file name."""
    stripped = text.lstrip()
    if stripped.startswith("\x7fELF"):
        return f"an ELF image ({len(text)} characters)"
    if any(mark in text for mark in (".version", ".target", ".entry")):
        return f"PTX text ({len(text)} characters)"
    if "\0" in text and "\n" not in text:
        return "a NUL character, which no file name can"
    if "\n" in text or len(text) > _PATH_MAX or stripped.startswith(_CODE_MARKS):
        return f"text of {len(text)} characters" + (" over several lines" if "\n" in text else "")
    return ""


def detect_format(image: bytes) -> str:
    """One of FORMATS; raises BenchError for anything else."""
    if image[:4] == elf.ELF_MAGIC:
        machine = elf.machine(image)
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
    """Kernel name -> parameters, or None where only the driver can tell (cubin, fatbin).

    Every format's layout is checked here, before any driver sees the bytes
    (their loaders take no size): a truncated or corrupt code object is a
    BenchError naming what is wrong and where.
    """
    kind = detect_format(image)
    if kind == "ptx":
        return ptx_kernels(ptx_text(image))
    if kind == "hsaco":
        return hsaco_kernels(image)
    if kind == "cubin":
        elf.ElfFile(image, "cubin")
    else:
        check_fatbin(image)
    return None


def target(image: bytes) -> str | None:
    """The processor a code object was built for: PTX's `.target` ("sm_90a"), an HSACO's
    `amdhsa.target` processor with its feature settings ("gfx942:sramecc+:xnack-"); None for a
    cubin or fatbin (not read) or a code object that does not say."""
    kind = detect_format(image)
    if kind == "ptx":
        found = _PTX_TARGET.search(_without_comments(ptx_text(image)))
        return found.group(1) if found else None
    if kind == "hsaco":
        value = hsaco_metadata(image).get("amdhsa.target")  # "amdgcn-amd-amdhsa--gfx942:xnack-"
        if isinstance(value, str) and value.rpartition("--")[2]:
            return value.rpartition("--")[2]
    return None


# ---- PTX -------------------------------------------------------------------

# The parameter space a kernel may declare: CUDA 12.1+ on sm_70 and later.
MAX_PTX_PARAM_BYTES = 32764

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)  # a line comment, or a closed block comment
_ENTRY = re.compile(r"\.entry\s+([A-Za-z_$%][\w$]*)", re.ASCII)
_TOKEN = re.compile(r"\.?[A-Za-z_$%][\w$]*|\d+|\S", re.ASCII)
_IDENTIFIER = re.compile(r"[A-Za-z_$%][\w$]*", re.ASCII)
_TYPE_BITS = re.compile(r"\.[bsuf](8|16|32|64)", re.ASCII)
_POINTER_SPACES = (".global", ".const", ".local", ".shared")
_PTX_TARGET = re.compile(r"^\s*\.target\s+(\w+)", re.MULTILINE | re.ASCII)


def ptx_text(image: bytes) -> str:
    """PTX bytes as text: UTF-8, trailing NULs allowed (a C string), none inside (the driver
    would stop reading there)."""
    text = image.rstrip(b"\0")
    if b"\0" in text:
        at = text.index(b"\0")
        raise BenchError(f"PTX is corrupt: a NUL byte at offset {at} (line {_line(text, at)}); "
                         "the driver would ignore everything after it")
    try:
        return text.decode()
    except UnicodeDecodeError as e:
        raise BenchError(f"PTX is not UTF-8 text: byte 0x{text[e.start]:02x} at offset {e.start} "
                         f"(line {_line(text, e.start)})") from None


def ptx_kernels(ptx: str) -> dict[str, list[KernelParam]]:
    """Parameters of every `.entry` in PTX text, with offsets laid out as the ABI does.

    Truncated PTX (an unclosed comment, parameter list or body) is a BenchError
    naming the line."""
    ptx = _without_comments(ptx)
    _check_braces(ptx)
    result = {}
    for entry in _ENTRY.finditer(ptx):
        name, position = entry.group(1), entry.end()
        while position < len(ptx) and ptx[position].isspace():
            position += 1
        declarations = ""
        if ptx.startswith("(", position):
            close = ptx.find(")", position)
            declarations = ptx[position + 1:close]
            if close < 0 or "{" in declarations or ";" in declarations:
                raise BenchError(f"PTX truncated or corrupt: the parameter list of kernel {name!r} "
                                 f"(line {_line(ptx, position)}) is never closed")
            position = close
        if ptx.find("{", position) < 0:
            raise BenchError(f"PTX truncated or corrupt: kernel {name!r} (line {_line(ptx, entry.start())}) "
                             "has no body")
        result[name] = _ptx_params(name, declarations)
    return result


def _ptx_params(kernel: str, declarations: str) -> list[KernelParam]:
    params, offset = [], 0
    for declaration in filter(None, (d.strip() for d in declarations.split(","))):
        name, size, alignment = _ptx_param(kernel, declaration)
        offset = -(-offset // alignment) * alignment
        params.append(KernelParam(name, offset, size))
        offset += size
    if offset > MAX_PTX_PARAM_BYTES:
        raise BenchError(f"PTX kernel {kernel!r} declares {offset} bytes of parameters; "
                         f"CUDA allows at most {MAX_PTX_PARAM_BYTES}")
    return params


def _ptx_param(kernel: str, declaration: str) -> tuple[str, int, int]:
    """(name, size, alignment) of one `.param [.align A] .TYPE [.ptr .SPACE [.align A]] NAME[[N]]`."""
    def cannot(why: str) -> BenchError:
        return BenchError(f"cannot read PTX parameter {declaration!r} of kernel {kernel!r}: {why}")

    tokens = _TOKEN.findall(declaration)
    if not tokens or tokens[0] != ".param":
        raise cannot("expected .param TYPE NAME")
    count = 1
    if tokens[-1] == "]":
        if len(tokens) < 4 or tokens[-3] != "[" or not tokens[-2].isdigit():
            raise cannot("expected an array size such as [16]")
        count, tokens = int(tokens[-2]), tokens[:-3]
    if len(tokens) < 3 or not _IDENTIFIER.fullmatch(tokens[-1]):
        raise cannot("expected .param TYPE NAME")
    element = alignment = None
    qualifiers = iter(tokens[1:-1])
    for qualifier in qualifiers:
        if bits := _TYPE_BITS.fullmatch(qualifier):
            if element is not None:
                raise cannot("two types")
            element = int(bits.group(1)) // 8
        elif qualifier == ".align":
            value = next(qualifiers, "")
            if not value.isdigit() or int(value) & (int(value) - 1) or int(value) == 0:
                raise cannot(f".align takes a power of two, got {value!r}")
            # Before the type `.align` aligns the parameter; after `.ptr` it is
            # the pointee's alignment, which does not move the parameter.
            if element is None:
                alignment = int(value)
        elif qualifier not in (".ptr",) + _POINTER_SPACES:
            raise cannot(f"unknown qualifier {qualifier!r}")
    if element is None:
        raise cannot("no type such as .u64 or .b8")
    return tokens[-1], element * count, alignment or element


@functools.lru_cache(maxsize=8)  # loading a module reads its parameters and its target from the same PTX
def _without_comments(ptx: str) -> str:
    """`ptx` with each comment replaced by the newlines it held (line numbers stay right), in one pass."""
    stripped = _COMMENT.sub(_newlines_held, ptx)
    unclosed = stripped.find("/*")
    if unclosed >= 0:
        raise BenchError(f"PTX truncated or corrupt: the /* comment at line {_line(stripped, unclosed)} "
                         "is never closed")
    return stripped


def _newlines_held(comment: re.Match) -> str:
    return "\n" * comment.group().count("\n") if comment.group().startswith("/*") else ""


def _check_braces(ptx: str) -> None:
    opened = []
    for match in re.finditer(r"[{}]", ptx):
        if match.group() == "{":
            opened.append(match.start())
        elif not opened:
            raise BenchError(f"PTX is corrupt: the '}}' at line {_line(ptx, match.start())} closes nothing")
        else:
            opened.pop()
    if opened:
        raise BenchError(f"PTX truncated or corrupt: {len(opened)} '{{' never closed, the last at line "
                         f"{_line(ptx, opened[-1])}")


def _line(text: str | bytes, position: int) -> int:
    return text.count("\n" if isinstance(text, str) else b"\n", 0, position) + 1


# ---- fatbin ----------------------------------------------------------------

_FATBIN_HEADER = struct.Struct("<IHHQ")  # magic, version, header size, bytes of entries after it
_FATBIN_ENTRY = struct.Struct("<HHIQ")   # kind, version, entry header size, payload bytes (padded)


def check_fatbin(image: bytes) -> None:
    """That a fatbin's container and each entry lie inside the file (the driver follows their sizes)."""
    if len(image) < _FATBIN_HEADER.size:
        raise BenchError(f"fatbin truncated: {len(image)} bytes, shorter than its {_FATBIN_HEADER.size}-byte header")
    _, _, header_bytes, entry_bytes = _FATBIN_HEADER.unpack_from(image)
    if header_bytes < _FATBIN_HEADER.size:
        raise BenchError(f"fatbin is corrupt: its header says it is {header_bytes} bytes; "
                         f"it is at least {_FATBIN_HEADER.size}")
    end = header_bytes + entry_bytes
    if end > len(image):
        raise BenchError(f"fatbin truncated or corrupt: its header declares entries up to 0x{end:x}, "
                         f"past the end of the {len(image)}-byte file")
    position, index = header_bytes, 0
    while position < end:
        if position + _FATBIN_ENTRY.size > end:
            raise BenchError(f"fatbin is corrupt: entry {index} at 0x{position:x} is cut off by the "
                             f"container's end at 0x{end:x}")
        _, _, entry_header, payload = _FATBIN_ENTRY.unpack_from(image, position)
        if entry_header < _FATBIN_ENTRY.size or position + entry_header + payload > end:
            raise BenchError(f"fatbin truncated or corrupt: entry {index} at 0x{position:x} "
                             f"({entry_header}-byte header, {payload}-byte payload) runs past the "
                             f"container's end at 0x{end:x}")
        position, index = position + entry_header + payload, index + 1


# ---- HSACO -----------------------------------------------------------------

def hsaco_kernels(image: bytes) -> dict[str, list[KernelParam]]:
    """Explicit (non-hidden) arguments of each kernel in an HSACO's metadata."""
    metadata = hsaco_metadata(image)
    kernel_list = metadata.get("amdhsa.kernels", [])
    if not isinstance(kernel_list, list):
        raise _bad_metadata("amdhsa.kernels", kernel_list, "a list of kernel maps")
    result = {}
    for i, kernel in enumerate(kernel_list):
        where = f"amdhsa.kernels[{i}]"
        if not isinstance(kernel, dict):
            raise _bad_metadata(where, kernel, "a map")
        name = _field(kernel, ".name", where, str)
        where = f"kernel {name!r}"
        segment_bytes = _field(kernel, ".kernarg_segment_size", where, int)
        args = kernel.get(".args", [])
        if not isinstance(args, list):
            raise _bad_metadata(f"{where} .args", args, "a list of argument maps")
        params = []
        for j, arg in enumerate(args):
            arg_where = f"{where} argument {j}"
            if not isinstance(arg, dict):
                raise _bad_metadata(arg_where, arg, "a map")
            kind = _field(arg, ".value_kind", arg_where, str)
            offset, size = _field(arg, ".offset", arg_where, int), _field(arg, ".size", arg_where, int)
            if kind.startswith("hidden_"):
                continue
            if offset + size > segment_bytes:
                raise BenchError(f"HSACO metadata is corrupt: {arg_where} ({size} bytes at offset {offset}) "
                                 f"lies beyond the kernel's {segment_bytes}-byte .kernarg_segment_size")
            arg_name = arg.get(".name", f"arg_{len(params)}")
            if not isinstance(arg_name, str):
                raise _bad_metadata(f"{arg_where} .name", arg_name, "a string")
            params.append(KernelParam(arg_name, offset, size))
        result[name] = params
    return result


def _field(record: dict, key: str, where: str, kind: type) -> Any:
    """record[key], which must be a `kind` (a str that is not empty, or an int in [0, 2**32))."""
    if key not in record:
        raise BenchError(f"HSACO metadata is corrupt: {where} has no {key}")
    value = record[key]
    if kind is str and isinstance(value, str) and value:
        return value
    if kind is int and isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 32:
        return value
    raise _bad_metadata(f"{where} {key}", value,
                        "a non-empty string" if kind is str else "an integer in [0, 2**32)")


def _bad_metadata(where: str, value: Any, expected: str) -> BenchError:
    return BenchError(f"HSACO metadata is corrupt: {where} is {show(value)}; expected {expected}")


def hsaco_metadata(image: bytes) -> dict[str, Any]:
    """The msgpack AMDGPU metadata note of an HSACO (code object v3 and later)."""
    for note in elf.ElfFile(image, "HSACO").notes():
        if note.name == b"AMDGPU" and note.type == NT_AMDGPU_METADATA:
            return _Msgpack(note.desc).document()
    raise BenchError("HSACO has no AMDGPU metadata note (code object v2 is not supported)")


class _Msgpack:
    """The msgpack subset AMDGPU metadata uses: maps with string keys, arrays, strings, ints,
    bools, floats. Every length is checked against the bytes left, and nesting is bounded."""

    MAX_DEPTH = 32  # AMDGPU metadata nests 5 deep (map, kernels, kernel, args, arg)
    _SIMPLE = {0xC0: None, 0xC2: False, 0xC3: True}
    _NUMBERS = {0xCA: "f", 0xCB: "d", 0xCC: "B", 0xCD: "H", 0xCE: "I", 0xCF: "Q",
                0xD0: "b", 0xD1: "h", 0xD2: "i", 0xD3: "q"}
    _LENGTHS = {0xD9: "B", 0xDA: "H", 0xDB: "I", 0xC4: "B", 0xC5: "H", 0xC6: "I"}

    def __init__(self, data: bytes) -> None:
        self.data, self.position = data, 0

    def document(self) -> dict[str, Any]:
        """The note's root value, which must be a map."""
        root = self._value(0)
        if not isinstance(root, dict):
            raise self._corrupt(0, f"the root is {show(root)}, not a map")
        return root

    def _corrupt(self, at: int, message: str) -> BenchError:
        return BenchError(f"HSACO metadata is corrupt: {message} (at byte {at} of the "
                          f"{len(self.data)}-byte msgpack note)")

    def _bytes(self, n: int, what: str) -> bytes:
        at = self.position
        if at + n > len(self.data):
            raise BenchError(f"HSACO metadata truncated or corrupt: {what} at byte {at} needs {n} bytes, "
                             f"{len(self.data) - at} remain in the {len(self.data)}-byte msgpack note")
        self.position += n
        return self.data[at:self.position]

    def _number(self, fmt: str, what: str) -> Any:
        return struct.unpack(">" + fmt, self._bytes(struct.calcsize(fmt), what))[0]

    def _count(self, n: int, at: int, bytes_each: int, what: str) -> int:
        # Each element takes at least `bytes_each` bytes: a count the rest cannot hold is corrupt.
        if n * bytes_each > len(self.data) - self.position:
            raise self._corrupt(at, f"{what} of {n} elements, but only {len(self.data) - self.position} "
                                    "bytes remain")
        return n

    def _value(self, depth: int) -> Any:
        at = self.position
        if depth > self.MAX_DEPTH:
            raise self._corrupt(at, f"values nested deeper than {self.MAX_DEPTH} levels")
        b = self._bytes(1, "a value")[0]
        if b <= 0x7F:
            return b
        if b >= 0xE0:
            return b - 0x100
        if b in self._SIMPLE:
            return self._SIMPLE[b]
        if b in self._NUMBERS:
            return self._number(self._NUMBERS[b], "a number")
        if 0x80 <= b <= 0x8F or b in (0xDE, 0xDF):
            n = b & 0x0F if b <= 0x8F else self._number("H" if b == 0xDE else "I", "a map size")
            return self._map(self._count(n, at, 2, "a map"), depth)
        if 0x90 <= b <= 0x9F or b in (0xDC, 0xDD):
            n = b & 0x0F if b <= 0x9F else self._number("H" if b == 0xDC else "I", "an array size")
            return [self._value(depth + 1) for _ in range(self._count(n, at, 1, "an array"))]
        if 0xA0 <= b <= 0xBF or b in self._LENGTHS:
            n = b & 0x1F if b <= 0xBF else self._number(self._LENGTHS[b], "a length")
            raw = self._bytes(n, f"a {n}-byte string")
            if b in (0xC4, 0xC5, 0xC6):
                return raw
            try:
                return raw.decode()
            except UnicodeDecodeError:
                raise self._corrupt(at, f"the string {raw[:40]!r} is not UTF-8") from None
        raise self._corrupt(at, f"unsupported msgpack byte 0x{b:02x}")

    def _map(self, n: int, depth: int) -> dict[str, Any]:
        result = {}
        for _ in range(n):
            at = self.position
            key = self._value(depth + 1)
            if not isinstance(key, str):
                raise self._corrupt(at, f"a map key is {show(key)}; AMDGPU metadata keys are strings")
            result[key] = self._value(depth + 1)
        return result
