"""The files the commands read and write: the input (source, IR or code object), output paths, reports."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TextIO

from .._codeobject import image as codeobject
from .._textfile import MAX_IR_DEPTH, ir_nesting
from ..codegen import ir
from ..codegen.source import SOURCE_LANGUAGES
from ..errors import BenchError, IRError


def read_input(path: Path) -> tuple[str, bytes | str]:
    """("source", C++ text) for a .cu or .hip file; else ("code object", bytes) or ("ir", bitcode
    bytes or IR text), decided by content.

    Code objects are recognised by their magic (codeobject.detect_format); an
    ELF or fatbin that is not a GPU code object is refused as such; anything
    else is LLVM IR, bitcode by its magic or else UTF-8 text.
    """
    data = path.read_bytes()  # a missing file or a directory: OSError naming it, reported by main()
    if path.suffix in SOURCE_LANGUAGES:
        try:
            return "source", data.decode()
        except UnicodeDecodeError as e:
            raise BenchError(f"{path}: byte {e.start} (0x{data[e.start]:02x}) is not UTF-8; expected "
                             f"{SOURCE_LANGUAGES[path.suffix].upper()} C++ source text") from None
    if data[:4] in ir.BITCODE_MAGIC:
        return "ir", data
    try:
        codeobject.detect_format(data)
        return "code object", data
    except BenchError:
        if data[:4] == b"\x7fELF" or data[:4] == codeobject.FATBIN_MAGIC.to_bytes(4, "little"):
            raise
    try:
        text = data.decode()
    except UnicodeDecodeError as e:
        raise IRError(f"{path}: byte {e.start} (0x{data[e.start]:02x}) is not UTF-8; expected LLVM IR text, "
                      "LLVM bitcode or a code object (PTX, cubin, fatbin, HSACO)") from None
    depth = ir_nesting(text)
    if depth > MAX_IR_DEPTH:  # LLVM's parser would overflow the stack: a segfault, not an error
        raise IRError(f"{path}: brackets nest {depth} levels deep; expected LLVM IR text nested at most "
                      f"{MAX_IR_DEPTH} levels (LLVM's parser recurses per level)")
    return "ir", text


def check_output(option: str, path: Path, input_path: Path | None = None) -> None:
    """Refuses, before any work, an output path that cannot be written or would overwrite the input."""
    def refuse(why: str) -> BenchError:
        return BenchError(f"{option} {path}: {why}")

    if path.is_dir():
        raise refuse("is a directory; expected a file path")
    parent = path.parent
    if not parent.exists():
        raise refuse(f"directory {parent} does not exist")
    if not parent.is_dir():
        raise refuse(f"{parent} is not a directory")
    if path.exists():
        if input_path is not None and input_path.exists() and os.path.samefile(path, input_path):
            raise refuse("is the input file; writing it would overwrite the source")
        if not os.access(path, os.W_OK):
            raise refuse("is not writable")
    elif not os.access(parent, os.W_OK | os.X_OK):
        raise refuse(f"directory {parent} is not writable")


def write_or_print(command: str, path: Path, text: str, said: TextIO | None = None) -> bool:
    """Writes a report and says so on `said` (None: stdout); one that cannot be written is printed on
    stdout instead, so the results are not lost. Whether it was written."""
    try:
        path.write_text(text)
    except OSError as e:
        print(text)
        print(f"pyhipbench {command}: could not write {path}: {e.strerror or e}; the report is printed "
              "on stdout instead", file=sys.stderr)
        return False
    print(f"wrote {path}", file=said or sys.stdout)
    return True
